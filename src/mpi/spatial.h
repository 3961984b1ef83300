/* The spatial scheme's pieces that the distributed evaluation (forcekit_mpi.c) and the
 * distributed integrator (integrator_mpi.c) share: the evaluation's state, and the slabs along z
 * that rank r owns with the halo around them. Not installed. */
#ifndef FK_MPI_SPATIAL_H
#define FK_MPI_SPATIAL_H

#include "forcekit/forcekit_mpi.h"
#include "mpi/agree.h"

struct fk_mpi_eval {
    fk__mpi_part part; /* communicator, errors, figures (agree.h) */
    fk_context *context;
    fk_eval *eval;
    size_t components; /* force components per particle */
    int molecular;     /* a force law with a pair table (fk_kernel_info.pair_parameters) */
    /* 1 while an fk_mpi_integrator holds the local evaluation's device set (the evaluation's own
     * calls are refused), 2 after it was destroyed (compute needs an update or set first). */
    int lent;
    int potential;
    /* The system: every rank's slice (counts, firsts) and all particles, gathered. */
    size_t n;
    int *counts, *firsts;               /* particles per rank, in MPI's int counts */
    int *scaled_counts, *scaled_firsts; /* the same times 3, for positions and velocities */
    int *result_counts, *result_firsts; /* the same times the force components */
    double *position, *velocity, *mass;
    int *type;
    /* allgather: where an update's gathered positions land: the evaluation's pinned array
     * (fk_eval_positions_buffer), so that they go to the device without another host pass;
     * position until set_particles succeeded. */
    double *gather_to;
    int has_mass, has_velocity, has_type;
    /* The system came from fk_mpi_eval_set_all_particles (every rank holds all of it):
     * fk_mpi_eval_update_all_positions may follow. */
    int replicated;
    /* The results of the last compute, as bits: allgather, all N (OR'ed across the ranks);
     * spatial, this rank's slice, and all N once fk_mpi_eval_read_all_* gathered them. */
    uint64_t *forces, *potentials;
    int computed, gathered;
    /* allgather: each rank's share is its slice (fk_eval_set_share_range); else a part of the
     * cells, whose results are combined by a reduce-scatter. */
    int slice_share;
    /* The scale, chosen together: the bound in use (FK_SCALE_KEEP keeps it across updates). */
    int keep_scale, have_bound;
    double bound[2];
    /* The spatial scheme: the slab axis's box length, the halo width, this rank's slice's
     * charges and types (set_particles), and the particles on this rank's device: global
     * indices (ascending), positions, charges, types, whether this rank owns them, results. */
    int spatial;
    int double_results; /* config.result_type is double: the results view holds doubles */
    double box_length, halo;
    double *slice_mass;
    int *slice_type;
    size_t local_n;
    double *local_index, *local_position, *local_mass;
    int *local_type;
    unsigned char *local_owned;
    double *local_forces, *local_potentials;
    /* The resident sets: the routes of the last rebuild (particles sent to and received from
     * each rank, the slice indices sent, in order) and this rank's slice's z then. */
    double margin;
    int resident;
    size_t rebuilds;
    int *send_counts, *send_displs, *recv_counts, *recv_displs;
    size_t *send_index, send_total;
    double *rebuild_z;
    double *send_positions; /* 3 per route entry, kept: an update allocates nothing */
    /* Where an update's positions land: the evaluation's pinned array (fk_eval_positions_buffer,
     * taken after each build's set_particles), so that they go to the device without another
     * pass on the host; local_position where it has none. */
    double *update_to;
    /* The last compute's results on this rank, in local order: the evaluation's pinned decoded
     * results (fk_eval_results_view) or a copy in local_forces / local_potentials. */
    const double *result_forces, *result_potentials;
};

/* z in [0, length). */
double fk__mpi_wrap(double z, double length);
/* Rank r's slab [*lo, *hi) along z of `ranks` slabs. One formula for every use on every rank, so
 * that each wrapped z lies in exactly one slab: ownership, at builds and at updates, depends on
 * it. */
void fk__mpi_slab(double length, int ranks, int r, double *lo, double *hi);
/* Does rank r need a particle at (wrapped) z: *owned when z lies in its slab, else whether z lies
 * within halo of it, across the periodic boundary too. */
int fk__mpi_slab_needs(double length, int ranks, double halo, int r, double z, int *owned);
/* The rank whose slab holds (wrapped) z, by fk__mpi_slab's formula. */
int fk__mpi_slab_owner(double length, int ranks, double z);

#endif
