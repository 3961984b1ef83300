/* The cell grid on the device (van Meel et al., sec. 3), shared by the pair loops built on it: the
 * cell loop (cells.c), which visits the neighbouring cells in its pair kernel, and the
 * neighbour-list loop (neighbors.c), which builds Verlet lists from the cells. The build kernels
 * are cl/cells_build.cl (one program per context: they depend on no force law or accumulator), the
 * grid's layout and neighbour rule cl/cells_grid.clh. Not installed.
 *
 * The grid's cells are at least reach = cutoff + skin wide, and the assignment is kept while no
 * particle has moved more than skin / 2 since the build that made it: every pair closer than the
 * cutoff was then closer than cutoff + skin at the build, so it lies in neighbouring cells, and it
 * was within cutoff + skin for a Verlet list built then. fk__cell_grid_update runs that check on
 * the device (one flag read back) and rebuilds only when it fails; for few particles whose
 * positions the host has (eval->host_body_current) it runs the same check on the host, without the
 * round trip to the device (eval->host_check_count: FK__HOST_CHECK_COUNT, src/core/internal.h).
 */
#ifndef FK_CELL_GRID_H
#define FK_CELL_GRID_H

#include "core/loops/loop.h"

/* Work-group size of the build kernels (FK_CELLS_AUX_WG in cl/cells_build.cl and
 * cl/neighbors_build.cl): 64, or the largest power of two the device allows for them when that is
 * less (llvmpipe: 32; fk__cell_grid_create, grid->aux_group). */
enum { FK__CELL_GRID_AUX_WG = 64 };

typedef struct fk__cell_grid {
    const char *owner; /* the loop's name for messages: "cells", "neighbors" */
    int aux_group;     /* work-items per group of the build kernels (FK_CELLS_AUX_WG) */
    cl_program program;
    cl_kernel check, bin, finish;
    double skin;  /* >= 0 */
    double reach; /* cutoff + skin: the smallest cell side before the rounding margin */
    int periodic;
    double box[3];
    /* The current build */
    int grid[3];
    size_t cells;
    float origin[3], inv_size[3];
    double size[3];
    /* The smallest side the last build allowed: reach plus a margin for float rounding, so that a
     * pair closer than reach as any kernel computes it lies in neighbouring cells, and its
     * distance as another program computes it is still below min_side. The Verlet lists' radius. */
    double min_side;
    int capacity;            /* placeholders per cell */
    int max_count;           /* the fullest cell of the build */
    size_t built;            /* particles of the build; 0: none yet */
    int current;             /* the build is valid for the positions on the device */
    uint64_t pairs_examined; /* pairs the cell loop examines over this build */
    size_t rebuilds, resizes;
    double build_seconds; /* device seconds of the last build, the check included */
    cl_mem count, slots, reference, stats;
    size_t count_capacity, slot_capacity, reference_capacity; /* allocated elements */
    /* The positions of the build (float4 per particle) on the host, when the host had them and
     * checks the displacements itself; host_reference_valid says they are those of the build. */
    float *host_reference;
    size_t host_reference_capacity;
    int host_reference_valid;
} fk__cell_grid;

/* What a loop on the grid needs of the force law and configuration: a short-range law with a
 * cutoff and a finite skin; owner names the loop in the reason ("the cells algorithm needs ...").
 */
fk_status fk__cell_grid_supports(const char *owner, const fk_kernel_desc *kernel,
                                 const fk_eval_config *config, const fk__physics *physics,
                                 char *reason, size_t reason_size);

/* Sets up *grid for eval (skin from eval->config.skin: > 0 that distance, 0 the default fraction of
 * the cutoff, < 0 none), builds the build program and its kernels. *seconds gets the build time
 * and *from_cache whether the program came from the cache. fk__cell_grid_release frees what was
 * made, also after a failure. */
fk_status fk__cell_grid_create(fk__eval_state *eval, fk__cell_grid *grid, const char *owner,
                               double *seconds, int *from_cache);
void fk__cell_grid_release(fk__cell_grid *grid);
/* Forgets the build: the next fk__cell_grid_update builds (the loops' invalidate). */
void fk__cell_grid_invalidate(fk__cell_grid *grid);

/* Brings the grid up to date with the positions on the device: one check, and a build when the
 * particles are new or some particle moved more than skin / 2 since the last build. *rebuilt
 * (may be NULL) says whether it built. */
fk_status fk__cell_grid_update(fk__eval_state *eval, fk__cell_grid *grid, int *rebuilt);

/* The grid's part of the variant: cell_grid, cell_size, cell_capacity, cell_skin, cell_rebuilds,
 * cell_resizes, cell_build_seconds (the loop may add its own build time afterwards). */
void fk__cell_grid_report(const fk__cell_grid *grid, fk_variant *variant);

/* Helpers of the loops on the grid. */

/* A device buffer of bytes, replacing *buffer; "<owner>: the <what> need N bytes" when the device
 * cannot hold it in one allocation. */
fk_status fk__cell_grid_buffer(fk__eval_state *eval, const char *owner, cl_mem *buffer,
                               size_t bytes, const char *what);
/* Adds the device time of the events (each command's own, not the host's gaps between them) to
 * *seconds (may be NULL) and releases them. */
void fk__collect_events(cl_event *events, size_t count, double *seconds);
/* clCreateKernel with the failure recorded naming the kernel. */
fk_status fk__create_kernel(fk_context *context, cl_program program, const char *name,
                            cl_kernel *kernel);
/* FK_ERR_UNSUPPORTED when the compiled kernel cannot run group work-items per work-group. */
fk_status fk__check_work_group(fk_context *context, cl_kernel kernel, size_t group,
                               const char *owner, const char *name);

#endif
