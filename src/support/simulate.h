/* Time integration on top of the force evaluation (`forcekit simulate`): velocity Verlet for every
 * kernel and a fourth-order Hermite predictor-corrector (Makino & Aarseth 1992) with a shared time
 * step for gaj; energy bookkeeping; checkpoints. Positions, velocities and the integration are
 * double precision on the host (Boyarchenkov sec. 3: single precision is enough for the forces
 * and their sums, not for the integration); the forces come from the device with the chosen
 * accumulator. Internal to the command and the tests. */
#ifndef FK_SIMULATE_H
#define FK_SIMULATE_H

#include <stddef.h>
#include <stdint.h>

#include "forcekit/forcekit.h"
#include "forcekit/tools.h"

typedef enum fkt_integrator {
    FKT_INTEGRATOR_VERLET = 0, /* kick-drift-kick velocity Verlet, second order, symplectic */
    FKT_INTEGRATOR_HERMITE,    /* 4th-order Hermite, needs the jerk: gaj only */
    FKT_INTEGRATOR_LANGEVIN    /* Langevin BAOAB at a temperature: the device integrator only */
} fkt_integrator;

/* "verlet", "hermite", "langevin"; NULL for an unknown value. fkt_integrator_find returns 0 when
 * unknown. */
const char *fkt_integrator_name(fkt_integrator integrator);
int fkt_integrator_find(const char *name, fkt_integrator *integrator);

/* Where the forces come from when not from an fk_eval of this process: the command's MPI layer
 * (src/cli/simulate_mpi.c) spreads each evaluation over the ranks, every rank integrating all the
 * particles the same way (replicated data). The functions take and give all N particles; status
 * codes as the fk_eval calls they stand for, with last_error the detail. create also sets the
 * particles; *local is an evaluation to query (variant), owned by the backend. */
typedef struct fkt_sim_backend {
    void *user;
    fk_status (*create)(void *user, fk_context *context, const fk_eval_config *config,
                        const fk_pair_table *table, const size_t *exclusions,
                        size_t exclusion_count, const fk_particles *all, fk_eval **local);
    fk_status (*update)(void *user, const double *position, const double *velocity);
    fk_status (*compute)(void *user, double *seconds);
    fk_status (*read_forces)(void *user, double *forces);
    fk_status (*read_potentials)(void *user, double *potentials);
    const char *(*last_error)(void *user);
    /* Destroys the integrator (when made) and the evaluation. */
    void (*destroy)(void *user);
    /* Optional (all or none; NULL: the backend has no integrator, and config.device is refused
     * with it): the library's integrator over the backend's evaluation, made after create, which
     * keeps the state where the backend keeps it (MPI: each rank's part on its device). Every
     * call takes and gives all N particles. set_state: bound NULL chooses fixed64's scale from
     * the positions; otherwise {max_term, max_sum} is kept (a restart); the forces are computed
     * again either way. get_state gives no forces. counters: since integrator_create. */
    fk_status (*integrator_create)(void *user, const fk_integrator_config *config);
    fk_status (*set_state)(void *user, const double *position, const double *velocity,
                           uint64_t step, const double *bound);
    fk_status (*step)(void *user, uint64_t steps);
    fk_status (*get_state)(void *user, double *position, double *velocity);
    fk_status (*energies)(void *user, double *kinetic, double *potential);
    fk_status (*counters)(void *user, uint64_t *rebuilds, uint64_t *rescales,
                          uint64_t *redistributions);
} fkt_sim_backend;

typedef struct fkt_sim_config {
    /* The evaluation: kernel, accum, physics (box, cutoff, eps...), variant, algorithm. potential
     * is turned on (the energy needs it) and expected_count set to N. */
    fk_eval_config eval;
    fkt_integrator integrator;
    double dt;
    /* Try every pair loop the library has (fk_algorithm_name names it) that the kernel and device
     * support, time a few evaluations of each on the initial particles and keep the fastest;
     * eval.algorithm is then ignored. */
    int auto_algorithm;
    const fk_pair_table *pair_table; /* NULL: the default single type */
    const size_t *exclusions;        /* 2 indices per pair */
    size_t exclusion_count;
    /* NULL: an fk_eval of this process. Otherwise the backend's evaluation (auto_algorithm must
     * be 0: the algorithm is eval.algorithm, which may be FK_ALGORITHM_AUTO); destroyed with the
     * simulation. */
    const fkt_sim_backend *backend;
    /* 1: the library's integrator (fk_integrator) keeps the state on the device and steps there;
     * sim->position and velocity are then copies, brought up to date by fkt_sim_sync. With a
     * backend, its integrator (the backend must have one). 0: the host loop of this file.
     * Langevin needs it. */
    int device;
    double temperature, friction; /* Langevin: k_B T and gamma */
    uint64_t seed;                /* Langevin: the seed of the noise */
} fkt_sim_config;

/* What auto_algorithm measured, per candidate: room for every pair loop the library has (a loop
 * beyond FKT_SIM_MAX_TRIALS would not be tried). */
#define FKT_SIM_MAX_TRIALS 8
typedef struct fkt_sim_trial {
    fk_algorithm algorithm;
    fk_status status;        /* FK_OK: measured; otherwise why it was skipped */
    double seconds_per_step; /* wall time of update + compute + read, median of the trials */
    char note[256];
} fkt_sim_trial;

/* Wall-clock seconds spent in the library per phase of the evaluations, summed: uploading
 * positions (fk_eval_update_positions, which includes the bound pre-pass of fixed64, narumi and
 * nitadori_large), computing (launch and wait) and reading and decoding the forces. */
typedef struct fkt_sim_timing {
    double update, compute, read;
} fkt_sim_timing;

/* An integration in progress. Units: the kernel's (gravity: G = 1, the forces are
 * accelerations; molecular: unit masses, a = F). Periodic when eval.box is set: positions are kept
 * in [0, L) by wrapping in double after every drift. */
typedef struct fkt_sim {
    fk_eval *eval;
    fk_context *context;
    fkt_sim_config config; /* copy; its pointers are not kept */
    const fk_kernel_info *kernel;
    int gravity; /* ga, gaj: masses from the particles, energy 1/2 sum m phi */
    int periodic;
    size_t n;
    uint64_t step;
    double *position, *velocity, *mass; /* 3n, 3n, n (1 for the molecular kernels) */
    double *acceleration, *jerk;        /* at the current step; jerk for Hermite only */
    double *output;                     /* force_components * n: what the device returned */
    double *potential;                  /* n */
    /* The step being computed; swapped in when it succeeds, so that a failure leaves the state of
     * the last completed step (but for position_pinned's positions, below). */
    double *next_position, *next_velocity, *next_acceleration, *next_jerk;
    /* 1: position is the evaluation's pinned array (fk_eval_positions_buffer: velocity Verlet on an
     * evaluation of this library), which each step writes in place, so the update sends it to the
     * device by DMA and converts it there instead of a host pass over every coordinate (5 ms per
     * step at N = 1M on the H200's host). A failed step then leaves it at the attempted positions
     * (the run stops there). Not freed with the rest. */
    int position_pinned;
    int potential_current; /* the last evaluation was at the current positions */
    /* Element-wise passes over at least this many values run on OpenMP's threads (when built
     * with OpenMP): kick, drift, wrap, prediction, correction and the read of the forces. Each
     * element is computed alone, so the bits do not depend on the threads. FKT_SIM_PARALLEL_MIN
     * by default; tests lower it to run the parallel passes on small systems. */
    size_t parallel_min;
    double device_seconds; /* OpenCL event time of every evaluation so far */
    fkt_sim_timing timing;
    uint64_t evaluations;
    fkt_sim_trial trials[FKT_SIM_MAX_TRIALS]; /* auto_algorithm: what was tried */
    size_t trial_count;
    char message[1024];        /* the detail of the last failure */
    fk_integrator *integrator; /* config.device: the library's integrator on eval */
    /* config.device with a backend: the backend's integrator steps (integrator stays NULL);
     * its state gives no forces, so acceleration stays zero (a checkpoint's restart computes
     * them again). */
    int backend_integrator;
    int state_stale; /* config.device: position, velocity (...) are older than step */
} fkt_sim;

/* Whether the state lives on the device (config.device: this process's integrator or the
 * backend's): stepped in chunks, read back by fkt_sim_sync. */
int fkt_sim_on_device(const fkt_sim *sim);

/* Creates the evaluation (choosing the algorithm when asked), uploads the particles (positions are
 * wrapped into the periodic box first), and evaluates the initial accelerations (and jerks).
 * particles must have velocities. On failure returns the status with *sim NULL and the detail in
 * error. */
fk_status fkt_sim_create(fk_context *context, const fkt_sim_config *config,
                         const fkt_particle_set *particles, fkt_sim **sim, char *error,
                         size_t error_size);
void fkt_sim_destroy(fkt_sim *sim);

/* Advances `steps` steps: the host loop's fkt_sim_step one at a time, or one call of the device
 * integrator (nothing comes back to the host but its rebuild decisions). */
fk_status fkt_sim_advance(fkt_sim *sim, uint64_t steps);

/* config.device: copies the device's state to sim->position, velocity, acceleration (and jerk):
 * before a checkpoint or the final checksum. Nothing to do on the host loop. With a backend's
 * integrator collective (MPI: every rank calls it) and without the accelerations. */
fk_status fkt_sim_sync(fkt_sim *sim);

/* One step of config.integrator (the host loop). On failure (a device error, a force that is not
 * finite) the state is that of the last completed step and sim->message says why. */
fk_status fkt_sim_step(fkt_sim *sim);

/* The default of fkt_sim.parallel_min: below it a thread team's start costs more than the pass. */
#define FKT_SIM_PARALLEL_MIN ((size_t)1 << 16)

/* Kinetic 1/2 sum m v^2 and potential energy at the current step: molecular sum_i 1/2 sum_j U_ij,
 * gravity 1/2 sum_i m_i phi_i. The potential comes from the device with the accumulator of the
 * run; when the last evaluation was not at the current positions (Hermite evaluates at the
 * predicted ones; a restored state) one more evaluation runs there, leaving the trajectory alone.
 */
fk_status fkt_sim_energy(fkt_sim *sim, double *kinetic, double *potential);

/* Replaces the state by a checkpoint's: step, positions, velocities, accelerations (and jerks for
 * Hermite), 3 n each. config.device: the device integrator's state set to it, with bound (NULL:
 * none) the fixed64 bound the run had (fk_eval_get_bound's max_term and max_sum) and the
 * accelerations written back, so that the run goes on with the bits of the uninterrupted one. A
 * backend's integrator takes the bound and computes the forces again (acceleration may then be
 * NULL): with the kept scale, the same bits as the uninterrupted run's forces at these
 * positions for Verlet and Langevin. */
fk_status fkt_sim_restore(fkt_sim *sim, uint64_t step, const double *position,
                          const double *velocity, const double *acceleration, const double *jerk,
                          const double *bound);

/* The pair loop that runs (after auto_algorithm) and the variant. */
fk_algorithm fkt_sim_algorithm(const fkt_sim *sim);

/* A 64-bit fingerprint (FNV-1a over the bytes) of an initial state: positions, velocities,
 * masses or charges, types, box, pair table (pair_parameters values per pair) and exclusions;
 * restarts compare it to find a checkpoint written for other particles. */
uint64_t fkt_sim_fingerprint(const fkt_particle_set *particles, const double box[3],
                             const fk_pair_table *table, unsigned pair_parameters,
                             const size_t *exclusions, size_t exclusion_count);

/* ---------------------------------------------------------------------------------------------- */
/* Energy samples and their analysis */

typedef struct fkt_sim_sample {
    uint64_t step;
    double kinetic, potential; /* total = kinetic + potential */
} fkt_sim_sample;

/* Least-squares slope of total energy against time (t = step * dt) over the samples; NaN with
 * fewer than 2 distinct steps. */
double fkt_sim_energy_slope(const fkt_sim_sample *samples, size_t count, double dt);

/* ---------------------------------------------------------------------------------------------- */
/* Checkpoints: a text file, every floating-point number as a C99 hexadecimal float (%a), so a
 * restart reads back exactly what was written:
 *
 *   forcekit-checkpoint 2
 *   option KEY VALUE          (the options of the run, compared on restart)
 *   step S
 *   n N
 *   columns 9 | 12            (x y z vx vy vz ax ay az [jx jy jz])
 *   samples M                 then M lines: step kinetic potential
 *   particles                 then N lines of `columns` numbers
 *   end
 *   checksum XXH3-64 H        (16 lowercase hex digits)
 *
 * written to a temporary file in the same directory, synced and renamed over FILE. H is XXH3-64
 * (seed 0) of every line before it in canonical form: each line's text without its line end,
 * followed by "\n" (the bytes the writer writes; a copy converted to CRLF line ends has the same
 * checksum and reads the same). The reader checks it before it parses anything else (format 1,
 * without it, is refused). */

#define FKT_SIM_MAX_OPTIONS 64
typedef struct fkt_sim_option {
    char key[32];
    char value[480];
} fkt_sim_option;

typedef struct fkt_sim_checkpoint {
    fkt_sim_option options[FKT_SIM_MAX_OPTIONS];
    size_t option_count;
    uint64_t step;
    size_t n;
    int has_jerk;
    double *position, *velocity, *acceleration, *jerk; /* 3n each; jerk NULL without */
    fkt_sim_sample *samples;
    size_t sample_count;
} fkt_sim_checkpoint;

#define FKT_SIM_CHECKPOINT_VERSION 2

/* Writes sim's state, the options and the samples to path atomically. FK_ERR_IO with the detail in
 * error. */
fk_status fkt_sim_checkpoint_write(const char *path, const fkt_sim *sim,
                                   const fkt_sim_option *options, size_t option_count,
                                   const fkt_sim_sample *samples, size_t sample_count, char *error,
                                   size_t error_size);
/* Reads a checkpoint. FK_ERR_IO (cannot read) or FK_ERR_PARSE (not a checkpoint, another version,
 * damaged: "checkpoint FILE is damaged: checksum mismatch ...", or malformed or truncated: the
 * message names the file and line). */
fk_status fkt_sim_checkpoint_read(const char *path, fkt_sim_checkpoint *checkpoint, char *error,
                                  size_t error_size);
void fkt_sim_checkpoint_free(fkt_sim_checkpoint *checkpoint);
/* The checksum of body (size bytes: every line before the checksum line, line ends "\n" or
 * "\r\n"), as the writer computes it: for tests and the fuzz harness, which append
 * "checksum XXH3-64 %016llx\n" to an edited body. */
uint64_t fkt_sim_checkpoint_checksum(const char *body, size_t size);
/* The value of key, NULL when absent. */
const char *fkt_sim_checkpoint_option(const fkt_sim_checkpoint *checkpoint, const char *key);

#endif
