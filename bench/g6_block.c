/*
 * bench_g6_block: targets against sources (fk_sources, the engine of libsapporo; issue #18) as a
 * Hermite code drives it. Prints one JSON document:
 *   - block_steps: the wall time of one block step (fk_sources_start to fk_sources_finish
 *     return, one slot update per target before it, as a block step's corrector writes back)
 *     against ni, at one nj (--block-nj, default 65,536);
 *   - rates: pair interactions per second at ni = npipes (a full block, repeated over all nj
 *     targets as a shared-step code would) against nj, beside forcekit's own gaj all-pairs rate at
 *     the same N (fk_eval_compute, device time of the pair loop) with the same accumulator.
 * Timing: one warm-up, then repetitions filling --seconds (default 0.5) per point; the median is
 * reported. Wall clock, as a client sees it.
 *
 *   bench_g6_block [--device SEL] [--accum NAME] [--positions ds|float] [--npipes 256]
 *                  [--block-nj 65536] [--nj 65536,262144,1048576] [--ni 1,4,16,64,256]
 *                  [--seconds 0.5] [--work-group N] [--splits N] [--unroll N] (the engine's
 *                  fk_sources_config fields, 0: automatic) [--device-timing on|off]
 * --device-timing off runs the engine on a context without event profiling (device_seconds null;
 * libsapporo's own setting, since the GRAPE-6 API reports no device time); gaj's all-pairs rate
 * is then measured on a second, profiled context.
 * On the H200: FORCEKIT_KERNEL_DIR=cl build/bench/bench_g6_block --device gpu > g6_block.json
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/stats.h"
#include "forcekit/forcekit.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t parse_list(const char *text, size_t *values, size_t capacity)
{
    size_t n = 0;
    char *copy = strdup(text), *save = NULL;
    for (char *token = strtok_r(copy, ",", &save); token && n < capacity;
         token = strtok_r(NULL, ",", &save))
        values[n++] = (size_t)strtoull(token, NULL, 10);
    free(copy);
    return n;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double uniform(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1.0p-53;
}

static fk_source random_source(int id)
{
    fk_source s = {.id = id, .t = 0.0, .mass = 1.0 / 65536};
    for (int k = 0; k < 3; ++k) {
        s.x[k] = 2 * uniform() - 1;
        s.v[k] = 0.5 * (2 * uniform() - 1);
        s.a[k] = 2 * uniform() - 1;
        s.jerk[k] = 2 * uniform() - 1;
    }
    return s;
}

static int fail(fk_context *context, const char *what, fk_status status)
{
    fprintf(stderr, "bench_g6_block: %s: %s: %s\n", what, fk_status_string(status),
            context ? fk_context_last_error(context) : "");
    return 1;
}

/* Median wall seconds of one block of ni targets against nj sources (ni slot updates first). */
/* A JSON number, or null for a figure the device did not give (no profiling). */
static const char *json_number(char *text, size_t size, double value)
{
    if (isfinite(value))
        snprintf(text, size, "%.6e", value);
    else
        snprintf(text, size, "null");
    return text;
}

typedef struct block_time {
    double wall, device, pair_loop; /* medians, seconds; device NaN without profiling */
    /* medians on the host: the ni fk_sources_set calls, the fk_sources_start call */
    double host_set, host_start;
    size_t reps;
} block_time;

static int time_block(fk_context *context, fk_sources *engine, size_t ni, size_t nj, double seconds,
                      block_time *result)
{
    int *id = malloc(ni * sizeof(int));
    double *x = malloc(3 * ni * sizeof(double)), *v = malloc(3 * ni * sizeof(double));
    double *acc = malloc(3 * ni * sizeof(double)), *jerk = malloc(3 * ni * sizeof(double));
    double *pot = malloc(ni * sizeof(double));
    int *nearest = malloc(ni * sizeof(int));
    double samples[1000], device[1000], pair_loop[1000], set_time[1000], start_time[1000];
    size_t reps = 0, timed = 0;
    int rc = 0;
    double spent = 0, t = 0.0;
    for (size_t rep = 0; rep < 1001 && (rep < 4 || spent < seconds); ++rep) {
        const size_t first = (rep * ni) % (nj - ni + 1);
        for (size_t i = 0; i < ni; ++i) {
            id[i] = (int)(first + i);
            for (int k = 0; k < 3; ++k) {
                x[3 * i + k] = 2 * uniform() - 1;
                v[3 * i + k] = 0.5 * (2 * uniform() - 1);
            }
        }
        t += 1.0 / 1024;
        const double start = now();
        for (size_t i = 0; i < ni; ++i) {
            fk_source s = random_source(id[i]);
            s.t = t;
            fk_status status = fk_sources_set(engine, first + i, &s);
            if (status != FK_OK) {
                rc = fail(context, "fk_sources_set", status);
                goto done;
            }
        }
        fk_targets targets = {.count = ni,
                              .sources = nj,
                              .time = t,
                              .eps2 = 1e-4,
                              .id = id,
                              .position = x,
                              .velocity = v};
        const double set_done = now();
        fk_status status = fk_sources_start(engine, &targets);
        const double start_done = now();
        if (status == FK_OK)
            status = fk_sources_finish(engine, &(fk_target_results){acc, jerk, pot, nearest});
        if (status != FK_OK) {
            rc = fail(context, "block step", status);
            goto done;
        }
        const double elapsed = now() - start;
        if (rep > 0) { /* rep 0 is the warm-up */
            set_time[reps] = set_done - start;
            start_time[reps] = start_done - set_done;
            samples[reps++] = elapsed;
            spent += elapsed;
            if (fk_sources_device_seconds(engine, &device[timed], &pair_loop[timed]) == FK_OK)
                ++timed;
        }
    }
    result->wall = fk__median(samples, reps);
    result->device = timed ? fk__median(device, timed) : NAN;
    result->pair_loop = timed ? fk__median(pair_loop, timed) : NAN;
    result->reps = reps;
    result->host_set = fk__median(set_time, reps);
    result->host_start = fk__median(start_time, reps);
done:
    free(id);
    free(x);
    free(v);
    free(acc);
    free(jerk);
    free(pot);
    free(nearest);
    return rc;
}

/* fk_sources_config.work_group_size, j_splits and unroll (0: automatic), for tuning sweeps. */
static int engine_work_group = 0, engine_splits = 0, engine_unroll = 0;

static fk_sources *make_engine(fk_context *context, size_t nj, size_t npipes, const char *accum,
                               fk_positions positions)
{
    fk_sources_config config = FK_CONFIG_INIT(fk_sources_config);
    config.capacity = nj;
    config.max_targets = npipes;
    config.accum = accum;
    config.positions = positions;
    config.work_group_size = engine_work_group;
    config.j_splits = engine_splits;
    config.unroll = engine_unroll;
    fk_sources *engine = NULL;
    fk_status status = fk_sources_create(context, &config, &engine);
    if (status != FK_OK) {
        fail(context, "fk_sources_create", status);
        return NULL;
    }
    for (size_t j = 0; j < nj; ++j) {
        fk_source s = random_source((int)j);
        if (fk_sources_set(engine, j, &s) != FK_OK) {
            fk_sources_destroy(engine);
            return NULL;
        }
    }
    return engine;
}

/* forcekit's gaj all-pairs rate at n (median device seconds of the pair loop). */
static double gaj_rate(fk_context *context, size_t n, const char *accum, double seconds)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "gaj";
    config.accum = accum;
    config.potential = 1;
    config.eps = 0.01;
    config.expected_count = n;
    fk_eval *eval = NULL;
    if (fk_eval_create(context, &config, &eval) != FK_OK)
        return NAN;
    double *position = malloc(3 * n * sizeof(double)), *velocity = malloc(3 * n * sizeof(double));
    for (size_t i = 0; i < 3 * n; ++i) {
        position[i] = 2 * uniform() - 1;
        velocity[i] = uniform() - 0.5;
    }
    fk_particles particles = {.count = n, .position = position, .velocity = velocity};
    double rate = NAN, samples[200];
    size_t reps = 0;
    if (fk_eval_set_particles(eval, &particles) == FK_OK) {
        double spent = 0, s = 0;
        fk_eval_compute(eval, &s); /* warm-up */
        while (reps < 200 && (reps < 3 || spent < seconds) && fk_eval_compute(eval, &s) == FK_OK) {
            samples[reps++] = s;
            spent += s;
        }
        if (reps > 0)
            rate = (double)n * (double)n / fk__median(samples, reps);
    }
    free(position);
    free(velocity);
    fk_eval_destroy(eval);
    return rate;
}

/* The engine's context and the profiled one of gaj's comparison: one and the same unless
 * --device-timing off. */
static void close_contexts(fk_context *context, fk_context *timed_context)
{
    if (context != timed_context)
        fk_context_destroy(context);
    fk_context_destroy(timed_context);
}

int main(int argc, char **argv)
{
    const char *device = NULL, *accum = "ref", *positions_name = "ds", *timing = "on";
    size_t npipes = 256, block_nj = 65536, seconds_ms = 500;
    double seconds = 0.5;
    size_t nj_list[16] = {65536, 262144, 1048576}, nj_count = 3;
    size_t ni_list[32] = {1, 2, 4, 8, 16, 32, 64, 128, 256}, ni_count = 9;
    (void)seconds_ms;
    for (int a = 1; a < argc; ++a) {
        const char *value = a + 1 < argc ? argv[a + 1] : NULL;
        if (!value) {
            fprintf(stderr, "bench_g6_block: %s needs a value\n", argv[a]);
            return 2;
        }
        if (strcmp(argv[a], "--device") == 0)
            device = value;
        else if (strcmp(argv[a], "--accum") == 0)
            accum = value;
        else if (strcmp(argv[a], "--positions") == 0)
            positions_name = value;
        else if (strcmp(argv[a], "--npipes") == 0)
            npipes = (size_t)strtoull(value, NULL, 10);
        else if (strcmp(argv[a], "--block-nj") == 0)
            block_nj = (size_t)strtoull(value, NULL, 10);
        else if (strcmp(argv[a], "--nj") == 0)
            nj_count = parse_list(value, nj_list, 16);
        else if (strcmp(argv[a], "--ni") == 0)
            ni_count = parse_list(value, ni_list, 32);
        else if (strcmp(argv[a], "--seconds") == 0)
            seconds = strtod(value, NULL);
        else if (strcmp(argv[a], "--work-group") == 0)
            engine_work_group = atoi(value);
        else if (strcmp(argv[a], "--splits") == 0)
            engine_splits = atoi(value);
        else if (strcmp(argv[a], "--unroll") == 0)
            engine_unroll = atoi(value);
        else if (strcmp(argv[a], "--device-timing") == 0)
            timing = value;
        else {
            fprintf(stderr,
                    "usage: %s [--device SEL] [--accum NAME] [--positions ds|float] "
                    "[--npipes N] [--block-nj N] [--nj A,B,..] [--ni A,B,..] "
                    "[--work-group N] [--splits N] [--unroll N] "
                    "[--seconds S] [--device-timing on|off]\n",
                    argv[0]);
            return 2;
        }
        ++a;
    }
    fk_positions positions;
    if (fk_positions_find(positions_name, &positions) != FK_OK) {
        fprintf(stderr, "bench_g6_block: --positions ds or float\n");
        return 2;
    }
    if (strcmp(timing, "on") != 0 && strcmp(timing, "off") != 0) {
        fprintf(stderr, "bench_g6_block: --device-timing on or off\n");
        return 2;
    }
    fk_context_config context_config = FK_CONFIG_INIT(fk_context_config);
    context_config.device = device;
    fk_context *timed_context = NULL, *context = NULL;
    fk_status status = fk_context_create(&context_config, &timed_context);
    if (status == FK_OK && strcmp(timing, "off") == 0) {
        context_config.device_timing = FK_DEVICE_TIMING_OFF;
        status = fk_context_create(&context_config, &context);
    } else if (status == FK_OK) {
        context = timed_context;
    }
    if (status != FK_OK) {
        fail(context ? context : timed_context, "fk_context_create", status);
        close_contexts(context, timed_context);
        return 1;
    }
    const fk_device_info *info = fk_context_device(context);
    printf("{\n  \"bench\": \"g6_block\",\n  \"device\": \"%s\",\n  \"driver\": \"%s\",\n"
           "  \"device_timing\": \"%s\",\n"
           "  \"accum\": \"%s\",\n  \"positions\": \"%s\",\n  \"npipes\": %zu,\n"
           "  \"work_group_size\": %d,\n  \"j_splits\": %d,\n  \"unroll\": %d,\n",
           info->name, info->driver_version, timing, accum, positions_name, npipes,
           engine_work_group, engine_splits, engine_unroll);

    /* Time per block step against ni. */
    fk_sources *engine = make_engine(context, block_nj, npipes, accum, positions);
    if (!engine) {
        close_contexts(context, timed_context);
        return 1;
    }
    printf("  \"block_nj\": %zu,\n  \"block_steps\": [", block_nj);
    for (size_t k = 0; k < ni_count; ++k) {
        const size_t ni = ni_list[k] > npipes ? npipes : ni_list[k];
        block_time t;
        if (time_block(context, engine, ni, block_nj, seconds, &t) != 0)
            break;
        char device_text[32], loop_text[32];
        printf("%s\n    {\"ni\": %zu, \"seconds\": %.6e, \"device_seconds\": %s, "
               "\"pair_loop_seconds\": %s, \"host_set_seconds\": %.3e, "
               "\"host_start_seconds\": %.3e, \"reps\": %zu, \"interactions_per_second\": %.4e}",
               k ? "," : "", ni, t.wall, json_number(device_text, sizeof device_text, t.device),
               json_number(loop_text, sizeof loop_text, t.pair_loop), t.host_set, t.host_start,
               t.reps, (double)ni * (double)block_nj / t.wall);
        fflush(stdout);
    }
    printf("\n  ],\n");
    fk_sources_destroy(engine);

    /* Rate at ni = npipes against nj, beside gaj all-pairs at the same N. */
    printf("  \"rates\": [");
    for (size_t k = 0; k < nj_count; ++k) {
        const size_t nj = nj_list[k];
        engine = make_engine(context, nj, npipes, accum, positions);
        if (!engine)
            break;
        block_time t;
        const int rc = time_block(context, engine, npipes, nj, seconds, &t);
        fk_sources_destroy(engine);
        if (rc != 0)
            break;
        const double rate = (double)npipes * (double)nj / t.wall;
        const double gaj = gaj_rate(timed_context, nj, accum, seconds);
        char device_text[32], loop_text[32];
        printf("%s\n    {\"nj\": %zu, \"ni\": %zu, \"block_seconds\": %.6e, "
               "\"device_seconds\": %s, \"pair_loop_seconds\": %s, "
               "\"interactions_per_second\": %.4e, \"gaj_all_pairs_interactions_per_second\": "
               "%.4e, \"ratio_to_gaj\": %.3f}",
               k ? "," : "", nj, npipes, t.wall,
               json_number(device_text, sizeof device_text, t.device),
               json_number(loop_text, sizeof loop_text, t.pair_loop), rate, gaj, rate / gaj);
        fflush(stdout);
    }
    printf("\n  ]\n}\n");
    close_contexts(context, timed_context);
    return 0;
}
