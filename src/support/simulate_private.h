/* What the simulation driver's files (simulate*.c) share and nobody else needs: the bridge to the
 * evaluation (forces at new positions, a library failure's message), the element-wise loops on
 * OpenMP's threads, the periodic wrap, and the checkpoint's line checksum. */
#ifndef FK_SIMULATE_PRIVATE_H
#define FK_SIMULATE_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#define XXH_INLINE_ALL /* header-only (as src/core/programs/cache.c): the checkpoints' checksum */
#include <xxhash.h>

#include "support/simulate.h"

/* An element-wise loop over `count` values on OpenMP's threads when there are enough of them
 * (sim->parallel_min); each iteration writes only its own elements, so the result is the same
 * bits with any number of threads. Without OpenMP the pragma is not there. */
#ifdef _OPENMP
#define FK_SIM_PARALLEL_FOR _Pragma("omp parallel for schedule(static) if (parallel)")
#else
#define FK_SIM_PARALLEL_FOR
#endif
#define FK_SIM_PARALLEL(sim, count)                                                                \
    const int parallel = (count) >= (sim)->parallel_min;                                           \
    (void)parallel /* unused without OpenMP */

/* simulate_common.c: a monotonic clock; a library failure: what was being done and the
 * context's detail in sim->message (the caller prints the status's name), returns status. */
double fkt_sim__seconds(void);
fk_status fkt_sim__failure(fkt_sim *sim, fk_status status, const char *what);

/* simulate.c: the evaluation of this process or the backend's. */
/* Forces at new positions (and velocities, which gaj's jerk needs); no compute. */
fk_status fkt_sim__update_positions(fkt_sim *sim, const double *position, const double *velocity);
/* One evaluation at the positions already sent, timed and counted. */
fk_status fkt_sim__compute(fkt_sim *sim, const char *what);
/* The last evaluation's accelerations (and jerks), every value checked to be finite. */
fk_status fkt_sim__read_output(fkt_sim *sim, double *acceleration, double *jerk, const char *what);
/* Update, compute and read: the forces at position (and velocity). */
fk_status fkt_sim__evaluate(fkt_sim *sim, const double *position, const double *velocity,
                            double *acceleration, double *jerk, const char *what);

/* simulate_common.c: keeps the positions in the periodic box (nothing when not periodic). */
void fkt_sim__wrap_positions(const fkt_sim *sim, double *position);

/* simulate_loops.c: an evaluation of the configured kernel with the given pair loop, its particles
 * uploaded; and (config->auto_algorithm) the fastest loop of trial runs into sim->eval. */
fk_status fkt_sim__make_eval(fkt_sim *sim, const fkt_sim_config *config, fk_algorithm algorithm,
                             const fk_particles *view, fk_eval **out);
fk_status fkt_sim__choose_algorithm(fkt_sim *sim, const fk_particles *view);

/* simulate_checkpoint.c: a line's canonical form into the checksum, and the checksum line. */
void fkt_sim__hash_line(XXH3_state_t *hash, const char *text, size_t length);
int fkt_sim__parse_checksum_line(const char *line, uint64_t *value);

#endif
