/* `forcekit bench --step`: what a time-stepping code does each step, timed by the wall clock
 * (issue #16): new positions in (fk_eval_update_positions), forces computed (fk_eval_compute),
 * forces (and potentials) out, through
 *   copy  fk_eval_read_forces into the caller's array, and
 *   view  fk_eval_results_view, the evaluation's pinned arrays lent without a copy (devices with
 *         fp64);
 *   pinned  the positions written into fk_eval_positions_buffer's array (converted on the
 *         device) and the results viewed: no pass over the particles on the host at all;
 * next to the device time of the pair loop and the host<->device bandwidth from pinned memory
 * measured in the same run, which give the step's limit: device time + bytes moved / bandwidth.
 * With device timing off (the default) the steps run on a queue without OpenCL event profiling
 * and the device time comes from a separate profiled pass; on, both from the same steps.
 * The positions move a little every step (a fixed oscillation, outside the timed region, as the
 * caller's integrator would), so the bound pre-pass of the data-scaled accumulators and the cell
 * lists' displacement check run as they would in a simulation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_step.h"
#include "cli/common.h"
#include "common/stats.h"
#include "core/internal.h"   /* fk__now, fk__measure_pinned_bandwidth */
#include "core/loops/loop.h" /* what the loop reports */

typedef enum step_mode { STEP_COPY, STEP_VIEW, STEP_PINNED, STEP_MODES } step_mode;
static const char *const step_mode_names[] = {"copy", "view", "pinned"};

typedef struct step_result {
    int ran;
    double wall_median, wall_min, wall_max, device_median;
    /* the wall time of each call: update_positions, compute, the read (or view) */
    double update_median, compute_median, read_median;
    fk_variant variant; /* what ran (the last step's) */
} step_result;

/* Bytes a step moves: the coordinates to the device (float4 per particle, and gaj's velocities;
 * in pinned mode on a device that converts them, the 3 doubles), the decoded results to the host
 * (or, without fp64, the packed 8-byte sums). */
static void step_bytes(const bench_step_input *in, const fk_device_info *device, step_mode mode,
                       double *up, double *down)
{
    const double n = (double)in->particles->count;
    const double components = (double)in->kernel->force_components + (in->potential ? 1 : 0);
    /* gaj (input "x y z m vx vy vz") also sends its velocities */
    const int gaj = strstr(in->kernel->input_format, "vx") != NULL;
    /* the library converts on the device unless the host must see the coordinates (forcekit.h) */
    const int converts = mode == STEP_PINNED && device->fp64 && !gaj &&
                         (!cli_kernel_is_gravity(in->kernel->name) || in->base.eps > 0);
    /* double-single positions: two float4 records per particle (and per velocity) */
    const double record = in->base.positions == FK_POSITIONS_DOUBLE_SINGLE ? 32.0 : 16.0;
    *up = converts ? 24.0 * n : record * n * (gaj ? 2 : 1);
    if (device->fp64) {
        const double value = in->result_type == FK_RESULT_FLOAT ? 4.0 : 8.0;
        *down = ceil(components * n * value / 8) * 8 + 8; /* + the overflow word */
    } else {
        *down = 8.0 * components * n;
    }
}

static fk_status measure_mode(const bench_step_input *in, fk_context *context, step_mode mode,
                              step_result *result, double *timings, double *device_times,
                              double *calls[3])
{
    memset(result, 0, sizeof *result);
    fk_eval_config config = in->base;
    config.potential = in->potential;
    config.result_type = in->result_type;
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(context, &config, &eval);
    if (status == FK_OK)
        status = cli_physics_apply(eval, in->physics);
    const size_t n = in->particles->count;
    const fk_particles particles = fkt_particle_set_view(in->particles);
    double *position = malloc(3 * n * sizeof *position);
    double *swing = malloc(3 * n * sizeof *swing);
    double *forces = malloc(n * in->kernel->force_components * sizeof *forces);
    double *potentials = malloc(n * sizeof *potentials);
    if (status == FK_OK && (!position || !swing || !forces || !potentials))
        status = FK_ERR_HOST_MEMORY;
    double *target = position; /* where the integrator writes the positions */
    if (status == FK_OK) {
        memcpy(position, particles.position, 3 * n * sizeof *position);
        for (size_t v = 0; v < 3 * n; ++v) /* a deterministic +-0.002 oscillation */
            swing[v] = 0.002 * sin(0.618 * (double)v);
        status = fk_eval_set_particles(eval, &particles);
    }
    if (status == FK_OK && mode == STEP_PINNED)
        status = fk_eval_positions_buffer(eval, &target);
    if (status == FK_OK)
        status = fk_eval_compute(eval, NULL); /* first-launch costs are not a step's */
    for (long long rep = -2; status == FK_OK && rep < in->reps; ++rep) {
        const double sign = rep % 2 ? 1.0 : -1.0;
        for (size_t v = 0; v < 3 * n; ++v)
            position[v] += sign * swing[v];
        if (target != position)
            memcpy(target, position, 3 * n * sizeof *position);
        double device = NAN;
        const double start = fk__now();
        status = fk_eval_update_positions(eval, target, particles.velocity);
        const double updated = fk__now();
        if (status == FK_OK)
            status = fk_eval_compute(eval, &device);
        const double computed = fk__now();
        if (status == FK_OK && mode == STEP_COPY) {
            status = fk_eval_read_forces(eval, forces);
            if (status == FK_OK && in->potential)
                status = fk_eval_read_potentials(eval, potentials);
        } else if (status == FK_OK) { /* view and pinned */
            const void *forces_view = NULL, *potentials_view = NULL;
            status =
                fk_eval_results_view(eval, &forces_view, in->potential ? &potentials_view : NULL);
        }
        const double end = fk__now();
        if (rep >= 0) { /* two warm-up steps */
            timings[rep] = end - start;
            device_times[rep] = device >= 0 ? device : NAN;
            calls[0][rep] = updated - start;
            calls[1][rep] = computed - updated;
            calls[2][rep] = end - computed;
        }
    }
    if (status == FK_OK)
        status = fk_eval_get_variant(eval, &result->variant);
    fk_eval_destroy(eval);
    free(position);
    free(swing);
    free(forces);
    free(potentials);
    if (status != FK_OK)
        return status;
    const size_t reps = (size_t)in->reps;
    result->ran = 1;
    result->wall_median = fk__median(timings, reps); /* sorts */
    result->wall_min = timings[0];
    result->wall_max = timings[reps - 1];
    result->device_median = fk__median(device_times, reps);
    result->update_median = fk__median(calls[0], reps);
    result->compute_median = fk__median(calls[1], reps);
    result->read_median = fk__median(calls[2], reps);
    return FK_OK;
}

/* What the run measured: each mode's figures (ran 0: not run), the profiled pass of the copy
 * mode when the steps ran untimed, and the pinned bandwidth. */
typedef struct step_measurements {
    step_result results[STEP_MODES], timed;
    double to_device, to_host;
} step_measurements;

/* The bandwidth, then every mode's steps; reports a failure and returns its exit code. */
static int measure_steps(const bench_step_input *in, step_measurements *m)
{
    const fk_device_info *device = fk_context_device(in->context);
    /* the bandwidth of large transfers (32 MiB): the bus's, not a small copy's latency */
    fk_status status =
        fk__measure_pinned_bandwidth(in->context, (size_t)32 << 20, 7, &m->to_device, &m->to_host);
    if (status != FK_OK)
        return cli_report_status(status, in->context);

    /* With device timing off the steps run on a second context on the same device whose queue
     * records no device times, as a production code's would (event profiling costs NVIDIA's
     * driver host time per command, docs/performance.md); the device time then comes from one
     * more pass of the copy mode on the profiled context (the same pair loop: the device time
     * does not depend on the mode), whose wall time is reported beside for comparison. */
    fk_context *steps = in->context;
    fk_context *untimed = NULL;
    if (in->device_timing == FK_DEVICE_TIMING_OFF) {
        fk_context_config config = FK_CONFIG_INIT(fk_context_config);
        config.device = device->selector;
        config.device_timing = FK_DEVICE_TIMING_OFF;
        status = fk_context_create(&config, &untimed);
        if (status != FK_OK) {
            const int code = cli_report_status(status, untimed);
            fk_context_destroy(untimed);
            return code;
        }
        steps = untimed;
    }
    const size_t reps = (size_t)in->reps;
    double *timings = malloc(6 * reps * sizeof *timings);
    if (!timings) {
        fk_context_destroy(untimed);
        return cli_report_status(FK_ERR_HOST_MEMORY, in->context);
    }
    double *device_times = timings + reps;
    double *calls[3] = {timings + 2 * reps, timings + 3 * reps, timings + 4 * reps};
    step_result *results = m->results;
    for (int mode = STEP_COPY; mode < STEP_MODES; ++mode) {
        if (mode != STEP_COPY && !device->fp64) { /* no view: the host decodes at each read */
            results[mode].ran = 0;
            continue;
        }
        status =
            measure_mode(in, steps, (step_mode)mode, &results[mode], timings, device_times, calls);
        if (status != FK_OK)
            break;
    }
    if (status == FK_OK && untimed) {
        status = measure_mode(in, in->context, STEP_COPY, &m->timed, timings, device_times, calls);
        for (int mode = STEP_COPY; mode < STEP_MODES; ++mode)
            results[mode].device_median = m->timed.device_median;
    }
    free(timings);
    int code = CLI_EXIT_OK;
    if (status != FK_OK)
        code = cli_report_status(status, steps);
    fk_context_destroy(untimed);
    return code;
}

/* The report: a table, or the JSON document with the run's description and a result a mode. */
static int report_steps(const bench_step_input *in, const step_measurements *m)
{
    const fk_device_info *device = fk_context_device(in->context);
    const step_result *results = m->results;
    const step_result timed = m->timed;
    const double to_device = m->to_device, to_host = m->to_host;
    /* the loop that ran (--algorithm auto: the one it chose; every mode's evaluation chooses
     * the same, from the same configuration) */
    const char *requested = fk_algorithm_name((fk_algorithm)in->base.algorithm);
    int ran = in->base.algorithm;
    for (int mode = STEP_COPY; mode < STEP_MODES; ++mode)
        if (results[mode].ran)
            ran = results[mode].variant.algorithm;
    const char *algorithm = fk_algorithm_name((fk_algorithm)ran);
    if (!in->json) {
        printf("step: %s (%s), %s, N = %zu, %lld steps, on %s, device timing %s\n",
               in->kernel->name, in->accum->name, algorithm, in->particles->count, in->reps,
               device->name, in->device_timing == FK_DEVICE_TIMING_OFF ? "off" : "on");
        printf("pinned bandwidth: to device %.3g GB/s, to host %.3g GB/s\n", to_device / 1e9,
               to_host / 1e9);
        printf("%-5s %11s %11s %11s %11s %11s %7s %11s %11s %11s\n", "MODE", "WALL S", "MIN", "MAX",
               "DEVICE S", "LIMIT S", "/LIMIT", "UPDATE S", "COMPUTE S", "READ S");
    }
    cJSON *document = NULL, *list = NULL;
    if (in->json) {
        char date[CLI_TIMESTAMP_SIZE];
        cli_utc_timestamp(date);
        document = cJSON_CreateObject();
        cJSON_AddStringToObject(document, "benchmark", "step");
        cJSON_AddStringToObject(document, "kernel", in->kernel->name);
        cJSON_AddStringToObject(document, "accum", in->accum->name);
        cJSON_AddStringToObject(document, "algorithm", algorithm);
        cJSON_AddStringToObject(document, "algorithm_requested", requested);
        if (fk__loop_reports_lists(ran)) /* what ran, from the last mode's eval */
            for (int mode = STEP_MODES - 1; mode >= STEP_COPY; --mode)
                if (results[mode].ran) {
                    cJSON_AddStringToObject(document, "lists",
                                            results[mode].variant.neighbor_half_lists ? "half"
                                                                                      : "full");
                    break;
                }
        cJSON_AddNumberToObject(document, "n", (double)in->particles->count);
        cJSON_AddNumberToObject(document, "steps", (double)in->reps);
        cJSON_AddBoolToObject(document, "potential", in->potential != 0);
        cJSON_AddStringToObject(document, "scale_policy",
                                in->base.scale_policy == FK_SCALE_KEEP   ? "keep"
                                : in->base.scale_policy == FK_SCALE_AUTO ? "auto"
                                                                         : "each");
        cJSON_AddStringToObject(document, "result_type",
                                in->result_type == FK_RESULT_FLOAT ? "float" : "double");
        cJSON_AddStringToObject(document, "positions",
                                fk_positions_name((fk_positions)in->base.positions));
        cJSON_AddStringToObject(document, "device", device->name);
        cJSON_AddStringToObject(document, "driver_version", device->driver_version);
        cJSON_AddStringToObject(document, "platform", device->platform_name);
        cJSON_AddStringToObject(document, "date", date);
        /* off: the steps on a queue without profiling, the device time from a profiled pass */
        cJSON_AddStringToObject(document, "device_timing",
                                in->device_timing == FK_DEVICE_TIMING_OFF ? "off" : "on");
        if (timed.ran)
            cli_json_number(document, "copy_wall_seconds_median_profiled", timed.wall_median);
        cli_json_number(document, "bandwidth_to_device_bytes_per_second", to_device);
        cli_json_number(document, "bandwidth_to_host_bytes_per_second", to_host);
        list = cJSON_AddArrayToObject(document, "results");
    }
    for (int mode = STEP_COPY; mode < STEP_MODES; ++mode) {
        const step_result *r = &results[mode];
        if (!r->ran)
            continue;
        /* the target of issue #16: device time + bytes moved / pinned bandwidth + 25 us */
        double up = 0, down = 0;
        step_bytes(in, device, (step_mode)mode, &up, &down);
        const double transfer_seconds = up / to_device + down / to_host;
        const double bytes_moved = up + down;
        const double limit = r->device_median + transfer_seconds + 25e-6;
        if (!in->json) {
            printf("%-5s %11.4e %11.4e %11.4e %11.4e %11.4e %7.2f %11.4e %11.4e %11.4e\n",
                   step_mode_names[mode], r->wall_median, r->wall_min, r->wall_max,
                   r->device_median, limit, r->wall_median / limit, r->update_median,
                   r->compute_median, r->read_median);
            continue;
        }
        cJSON *item = cJSON_CreateObject();
        cJSON_AddStringToObject(item, "mode", step_mode_names[mode]);
        cli_json_number(item, "wall_seconds_median", r->wall_median);
        cli_json_number(item, "wall_seconds_min", r->wall_min);
        cli_json_number(item, "wall_seconds_max", r->wall_max);
        cli_json_number(item, "device_seconds_median", r->device_median);
        cJSON_AddNumberToObject(item, "bytes_moved", bytes_moved);
        cJSON_AddNumberToObject(item, "bytes_to_device", up);
        cJSON_AddNumberToObject(item, "bytes_to_host", down);
        cli_json_number(item, "bandwidth_bytes_per_second", bytes_moved / transfer_seconds);
        cli_json_number(item, "update_seconds_median", r->update_median);
        cli_json_number(item, "compute_seconds_median", r->compute_median);
        cli_json_number(item, "read_seconds_median", r->read_median);
        cli_json_number(item, "limit_seconds", limit);
        cli_json_number(item, "wall_over_limit", r->wall_median / limit);
        cJSON_AddItemToArray(list, item);
    }
    return document ? cli_print_json(document) : CLI_EXIT_OK;
}

int bench_step_run(const bench_step_input *in)
{
    step_measurements m = {.timed = {0}};
    const int code = measure_steps(in, &m);
    return code == CLI_EXIT_OK ? report_steps(in, &m) : code;
}
