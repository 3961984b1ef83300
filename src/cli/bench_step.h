/* `forcekit bench --step` (bench_step.c): the per-step wall time of update, compute and read. */
#ifndef FK_CLI_BENCH_STEP_H
#define FK_CLI_BENCH_STEP_H

#include "forcekit/forcekit.h"
#include "forcekit/tools.h"
#include "cli/physics.h"

typedef struct bench_step_input {
    fk_context *context;
    fk_eval_config base; /* the bench's configuration (unrolling, algorithm, physics fields) */
    const cli_physics_data *physics;
    const fkt_particle_set *particles;
    const fk_kernel_info *kernel;
    const fk_accum_info *accum;
    long long reps; /* timed steps per mode */
    int potential;
    int result_type;   /* fk_result_type */
    int device_timing; /* fk_device_timing: ON times the steps on the profiled context */
    int json;
} bench_step_input;

/* Measures and prints (a table, or one JSON document); returns the exit code. */
int bench_step_run(const bench_step_input *input);

#endif
