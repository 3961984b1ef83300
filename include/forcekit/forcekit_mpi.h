/*
 * forcekit over MPI (issue #20): one evaluation spread over the ranks of a communicator, one rank
 * per device. libforcekit_mpi, built when CMake finds MPI (Open MPI or MPICH; FORCEKIT_MPI=OFF
 * leaves it out); it uses only forcekit.h's API and links libforcekit.
 *
 * Two schemes (docs/mpi.md has them, their model and the measurements), chosen by the pair loop
 * the evaluation runs (fk_mpi_eval_scheme):
 *   allgather: all-pairs (and symmetric, which becomes all-pairs), and cells or lists with open
 *     boundaries. The slices are gathered so that every rank's device holds all N particles;
 *     each rank computes its share (fk_eval_set_share) and the results are combined by a
 *     bitwise OR (a reduce-scatter: each rank receives its slice), which is exact (each
 *     particle's are nonzero on one rank).
 *   spatial: cells and neighbour lists in a periodic box. Rank r owns the slab
 *     [Lz r / P, Lz (r + 1) / P); each particle goes to the rank whose slab holds it and to
 *     those whose slab lies within cutoff + skin of it (the evaluation's, fk_eval_get_reach:
 *     from config.physics or the flat fields, defaults applied); each rank evaluates its slab and
 *     halo in the order of the global indices, and the owned particles' results go back to the
 *     ranks whose slices hold them. Exclusions are not supported there (their indices are
 *     global): set them (fk_eval_set_exclusions on fk_mpi_eval_local) only in the allgather
 *     scheme, and exclusions in config.physics keep the allgather scheme; pair tables are fine
 *     in both.
 * Either way every particle's forces are those of the single-device evaluation, bit for bit, on
 * every rank count on one device type (the same j in the same order; the fixed64 scale chosen
 * together from the exact largest term, fk_eval_set_bound); fixed64 with config.reproducible,
 * also on every device mix. The symmetric loop becomes all-pairs and neighbour lists are full
 * lists on every rank count, so P = 1 runs what P = 4 runs. Communication goes through host
 * memory (no OpenCL-aware MPI exists).
 *
 * Every function but destroy and the accessors is collective over the communicator and returns
 * the same status on every rank: when one rank fails (bad input, a device error), all return its
 * status and fk_mpi_eval_last_error gives "rank R: <message>" of the lowest failing rank, so rank 0
 * can report it; no rank is left waiting. MPI errors themselves follow the communicator's error
 * handler (MPI_ERRORS_ARE_FATAL by default: the job ends).
 */
#ifndef FORCEKIT_MPI_H
#define FORCEKIT_MPI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "forcekit/forcekit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fk_mpi_eval fk_mpi_eval;

/* What one rank did since create (or the last fk_mpi_eval_reset_figures): pair evaluations
 * (fk_eval_share_pairs summed over computes), seconds in its own evaluation (upload, compute,
 * read), in communication (gathers, the result reduction) and waiting for the other ranks (the
 * status agreement after each phase, where a fast rank waits for the slowest). */
typedef struct fk_mpi_rank_figures {
    int rank;
    uint64_t pairs;
    double compute_seconds, communication_seconds, wait_seconds;
    size_t particles; /* the rank's slice */
    /* computes redone on a new scale after one left FK_SCALE_KEEP's range (every rank counts
     * the same) */
    size_t rescales;
} fk_mpi_rank_figures;

/* Collective. context: this rank's device (fk_mpi_local_rank helps pick it); config as for
 * fk_eval_create (the same on every rank); comm is duplicated. */
FK_API fk_status fk_mpi_eval_create(fk_context *context, const fk_eval_config *config,
                                    MPI_Comm comm, fk_mpi_eval **eval);
/* Not collective; NULL is a no-op. */
FK_API void fk_mpi_eval_destroy(fk_mpi_eval *eval);

/* Collective: this rank's slice (count may be 0 on some ranks, not on all); the slices in rank
 * order are the system. mass, velocity and type must be given on every rank or on none. */
FK_API fk_status fk_mpi_eval_set_particles(fk_mpi_eval *eval, const fk_particles *local);
/* Collective: new positions (and velocities for gaj, else NULL) of this rank's slice. */
FK_API fk_status fk_mpi_eval_update_positions(fk_mpi_eval *eval, const double *position,
                                              const double *velocity);
/* Replicated data (added in 0.2, issue #32), as when every rank reads the same files (the
 * command under mpirun): every rank passes all N particles, the same on every rank, and takes
 * the equal split's slice [N r / P, N (r + 1) / P) itself. The ranks first check that they hold
 * one system: the same N and the same XXH3-64 digest of the positions, masses, velocities and
 * types (and of which of them are given); otherwise every rank returns FK_ERR_INVALID_ARGUMENT
 * with one message naming the first rank that differs from rank 0 ("set_all_particles: the
 * ranks were given different particles: rank 0 has 500 particles, rank 1 has 400 ..."), and no
 * slice is taken: a caller that sized its buffers for its own N can then trust
 * fk_mpi_eval_read_all_*. The cost: one pass over the arrays and two 16-byte broadcasts.
 * update_all_positions: all N new positions (and velocities for gaj), checked the same way (a
 * rank whose integration drifted is caught), after a successful set_all_particles
 * (FK_ERR_STATE otherwise). fk_mpi_eval_create checks the same way that the ranks' configs
 * agree on the physics (kernel, accumulator, eps, cutoff, Coulomb, the law's parameters, box,
 * exclusion mode, pair loop, skin, result type, scale policy, positions, and config.physics with
 * its pair table and exclusions). */
FK_API fk_status fk_mpi_eval_set_all_particles(fk_mpi_eval *eval, const fk_particles *all);
FK_API fk_status fk_mpi_eval_update_all_positions(fk_mpi_eval *eval, const double *position,
                                                  const double *velocity);
/* Collective: every rank computes its share and the results are combined on every rank.
 * *seconds (may be NULL): this rank's device time. With a kept scale (FK_SCALE_KEEP, and the
 * default FK_SCALE_AUTO's fixed64, as on one device), a rank whose compute
 * overflowed rescales by itself (fk_eval_wait) and the others then rescale too and compute again,
 * so that all stay on one scale, the one a single device would have chosen. */
FK_API fk_status fk_mpi_eval_compute(fk_mpi_eval *eval, double *seconds);
/* After a compute: this rank's slice of the results (components per particle as
 * fk_eval_force_components; not collective), or all N (read_all: collective, the spatial scheme
 * gathers the slices). Potentials need config.potential. */
FK_API fk_status fk_mpi_eval_read_forces(fk_mpi_eval *eval, double *forces);
FK_API fk_status fk_mpi_eval_read_potentials(fk_mpi_eval *eval, double *potentials);
FK_API fk_status fk_mpi_eval_read_all_forces(fk_mpi_eval *eval, double *forces);
FK_API fk_status fk_mpi_eval_read_all_potentials(fk_mpi_eval *eval, double *potentials);

/* Accessors (not collective): this rank's evaluation (its variant, reproducibility; do not set
 * particles on it directly), the system's size, this rank's slice, the error of the last failed
 * call ("rank R: ..."; empty when none; with NULL, why this thread's last fk_mpi_eval_create
 * failed). */
FK_API fk_eval *fk_mpi_eval_local(fk_mpi_eval *eval);
FK_API size_t fk_mpi_eval_count(const fk_mpi_eval *eval);
FK_API size_t fk_mpi_eval_slice(const fk_mpi_eval *eval, size_t *first);
FK_API const char *fk_mpi_eval_last_error(const fk_mpi_eval *eval);
/* "allgather" or "spatial" (the header comment says which runs when). */
FK_API const char *fk_mpi_eval_scheme(const fk_mpi_eval *eval);
/* The spatial scheme's set builds on this rank since create: one per set_particles, and one per
 * update after which some particle had moved more than the margin's half along z since the last
 * build (the other updates send only positions to the ranks that hold the particles); 0 for the
 * allgather scheme. The same on every rank. */
FK_API size_t fk_mpi_eval_rebuilds(const fk_mpi_eval *eval);

/* Collective: every rank's figures, in rank order, into figures[0 .. ranks) on root (others may
 * pass NULL). */
FK_API fk_status fk_mpi_eval_figures(fk_mpi_eval *eval, int root, fk_mpi_rank_figures *figures);
FK_API void fk_mpi_eval_reset_figures(fk_mpi_eval *eval);

/* ---------------------------------------------------------------------------------------------- */
/* The MD step with the state on each rank's device (added in 0.2, issue #33 item 5)             */
/*
 * fk_mpi_integrator runs the library's integrator (fk_integrator) on every rank over the spatial
 * scheme's slabs: rank r integrates the particles in its slab [Lz r / P, Lz (r + 1) / P) on its
 * own device, and holds halo copies of the particles within the halo width of its slab (the
 * cutoff + the skin + a margin). Positions, velocities and forces stay on the devices; each step
 * moves only the halo's positions between the ranks (fk_integrator_part's exchange), and the
 * step's decisions (rebuild the lists, rescale fixed64) are taken by all ranks together. When a
 * particle has moved a quarter of the margin along z since the last distribution, the ranks
 * redistribute: each reads its particles' state, sends every particle to the rank whose slab now
 * holds it and to those whose halo reaches it, and sets its integrator's state again. Particles
 * on each rank are in ascending order of their index in the whole system.
 * With fixed64 (and so --reproducible) the trajectory, the forces and the energies are those of
 * one device's fk_integrator on the whole system, bit for bit, for every rank count; with the
 * other accumulators they agree to rounding. Verlet and Langevin (Langevin's noise is keyed by
 * each particle's index in the whole system). The allgather scheme (all-pairs, gravity, open
 * boundaries), exclusions, Hermite and loops without a skin are FK_ERR_UNSUPPORTED: the caller
 * keeps replicated integration on the host there; so is a rank whose slab and halo hold no
 * particle (fewer ranks). A step after which a particle moved farther than half the margin along
 * z since the last distribution fails on every rank (FK_ERR_INVALID_INPUT: a smaller time step or
 * a wider margin); the state must then be set again.
 */
typedef struct fk_mpi_integrator fk_mpi_integrator;

typedef struct fk_mpi_integrator_config {
    size_t struct_size; /* sizeof(fk_mpi_integrator_config) */
    /* kind, dt, temperature, friction, seed as for fk_integrator_create; masses: all N of the
     * system (NULL: all 1), the same on every rank. */
    fk_integrator_config integrator;
    /* The halo's margin beyond the cutoff + skin (length units); 0: the default (twice the
     * cutoff, at least the skin: on GPUs a redistribution costs seconds at 16M particles, many
     * steps' halo traffic; docs/mpi.md). A wider margin means a thicker halo and
     * rarer redistributions. */
    double margin;
} fk_mpi_integrator_config;

/* Collective. eval: an fk_mpi_eval whose scheme is "spatial", whose particles are set (its
 * set_all_particles or set_particles: masses or charges, types); the integrator takes over its
 * local evaluation: the evaluation's set_particles, update_positions and compute are
 * FK_ERR_STATE while the integrator lives, and its compute after it until an update or
 * set_particles (which build its own sets again); one integrator per evaluation at a time. The
 * state must be set before stepping. */
FK_API fk_status fk_mpi_integrator_create(fk_mpi_eval *eval, const fk_mpi_integrator_config *config,
                                          fk_mpi_integrator **integrator);
/* Not collective; NULL is a no-op. Before the fk_mpi_eval. */
FK_API void fk_mpi_integrator_destroy(fk_mpi_integrator *integrator);
/* Collective: all N positions and velocities (NULL: zero) of the system, the same on every rank
 * (checked as set_all_particles checks), and the step counter. Distributes the particles and
 * computes the forces. */
FK_API fk_status fk_mpi_integrator_set_all_state(fk_mpi_integrator *integrator,
                                                 const double *positions,
                                                 const double *velocities, uint64_t step);
/* Collective: as set_all_state, but fixed64's bound (fk_eval_get_bound's max_term and max_sum
 * of the run that is continued, the same on every rank) is kept instead of chosen from these
 * positions: a restart from a checkpoint then computes the forces again with the scale the
 * uninterrupted run had, and continues its trajectory bit for bit. The other accumulators take
 * what fk_eval_get_bound gave them, as fk_eval_set_bound does. */
FK_API fk_status fk_mpi_integrator_restore_all_state(fk_mpi_integrator *integrator,
                                                     const double *positions,
                                                     const double *velocities, uint64_t step,
                                                     double max_term, double max_sum);
/* Collective: n_steps steps (redistributing whenever needed; a call that follows steps starts
 * with a redistribution, as the last call's last step may have asked for one: call it with many
 * steps). */
FK_API fk_status fk_mpi_integrator_step(fk_mpi_integrator *integrator, uint64_t n_steps);
/* Collective: all N positions and velocities (either may be NULL) in the system's order, on
 * every rank, and the step counter. */
FK_API fk_status fk_mpi_integrator_get_all_state(fk_mpi_integrator *integrator, double *positions,
                                                 double *velocities, uint64_t *step);
/* Collective: the system's kinetic and potential energy (either may be NULL), the bits one
 * device's fk_integrator_energies gives for the same state. */
FK_API fk_status fk_mpi_integrator_energies(fk_mpi_integrator *integrator, double *kinetic,
                                            double *potential);
/* Not collective (the same on every rank): the lists' builds, fixed64's scale choices and the
 * redistributions since create (set_all_state's included). */
FK_API fk_status fk_mpi_integrator_counters(const fk_mpi_integrator *integrator, uint64_t *rebuilds,
                                            uint64_t *rescales, uint64_t *redistributions);
/* Collective: every rank's figures (as fk_mpi_eval_figures: particles is the rank's own
 * particles now, pairs 0) into figures[0 .. ranks) on root. */
FK_API fk_status fk_mpi_integrator_figures(fk_mpi_integrator *integrator, int root,
                                           fk_mpi_rank_figures *figures);
/* The error of the last failed call ("rank R: ..."; empty when none); with NULL, why this
 * thread's last fk_mpi_integrator_create failed. */
FK_API const char *fk_mpi_integrator_last_error(const fk_mpi_integrator *integrator);

/* ---------------------------------------------------------------------------------------------- */
/* Block steps: targets against sources over MPI (fk_sources, the GRAPE-6 engine)                 */
/*
 * Each rank holds its own sources (j-particles: slots 0 .. its sources - 1 of its fk_sources). At a
 * block step every rank passes its active targets; the active sets are gathered, every rank
 * evaluates all of them against its sources, and the partial results are combined: fixed64's sums
 * as 64-bit integers at the targets' scales (fixed by the hints, the same everywhere), exact in
 * any order, so the results are one engine's with all the sources, bit for bit, on every rank
 * count; the other accumulators' partial sums added in rank order (deterministic for a given P);
 * the nearest source as the smallest r^2 over the ranks, ties to the smaller ID. Neighbour lists
 * (targets.h2) are not combined: FK_ERR_UNSUPPORTED. The active targets over all ranks are at
 * most config.max_targets; every rank needs at least one source.
 */
typedef struct fk_mpi_sources fk_mpi_sources;

/* Collective: config as for fk_sources_create, the same on every rank (capacity is this rank's). */
FK_API fk_status fk_mpi_sources_create(fk_context *context, const fk_sources_config *config,
                                       MPI_Comm comm, fk_mpi_sources **sources);
FK_API void fk_mpi_sources_destroy(fk_mpi_sources *sources);
/* Not collective: one of this rank's source slots, as fk_sources_set. */
FK_API fk_status fk_mpi_sources_set(fk_mpi_sources *sources, size_t slot, const fk_source *source);
/* Collective: this rank's active targets (count may be 0; sources: this rank's slots in use;
 * time, eps2 and whether the three hints come must agree across the ranks) and their results,
 * for every accumulator. */
FK_API fk_status fk_mpi_sources_evaluate(fk_mpi_sources *sources, const fk_targets *mine,
                                         const fk_target_results *results);
/* The error of the last failed call ("rank R: ..."); NULL: why this thread's last create
 * failed. */
FK_API const char *fk_mpi_sources_last_error(const fk_mpi_sources *sources);
/* Collective: each rank's pairs (targets times its sources), compute, communication and wait
 * seconds since create, on root. */
FK_API fk_status fk_mpi_sources_figures(fk_mpi_sources *sources, int root,
                                        fk_mpi_rank_figures *figures);

/* The rank within its node (MPI_Comm_split_type shared memory), for choosing a device: ranks on
 * one node take devices local_rank modulo the node's devices. Collective over comm. */
FK_API int fk_mpi_local_rank(MPI_Comm comm);

#ifdef __cplusplus
}
#endif

#endif
