/* `forcekit bench`: cold and warm start, then the median of R timed evaluations of a synthetic
 * system, for one unrolling variant or all of them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_step.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "common/stats.h"
#include "support/generate.h"
#include "core/internal.h"   /* fk__variant_check: the one place for the variant rules */
#include "core/loops/loop.h" /* what the loop reports */
#include "forcekit/tools.h"
#include "cli/mpi.h"
#include "cli/physics.h"
#ifdef FK_CLI_MPI
#include <mpi.h>

#include "forcekit/forcekit_mpi.h"
#endif

static const char bench_synopsis[] =
    "usage: forcekit bench --kernel K --n N [--accum A] [--unroll IxJ|auto|all] [--reps R]\n"
    "                      [--eps E] [--seed S] [--splits S] [--wg W] [--tiling on|off]\n"
    "                      [--positions float|ds] [--device SEL] [--json]\n\n"
    "Times force evaluations of N synthetic particles (gravity: a Plummer sphere; molecular\n"
    "kernels: a jittered lattice at density 0.8, one type, epsilon = sigma = 1, charges +-0.5).\n"
    "Per variant: cold start (compile from source),\n"
    "warm start (program cache), one warm-up, then the median of R evaluations timed with OpenCL\n"
    "event profiling. Interactions are N^2 per evaluation for all-pairs, the pairs examined\n"
    "(pairs_examined) for cells and neighbors.\n\n";

static const char bench_usage_mpi[] =
    "\n"
    "Under mpirun (mpirun -np P forcekit bench ...) it times R steps of the distributed\n"
    "evaluation (libforcekit_mpi, docs/mpi.md) of one variant: the positions gathered from every\n"
    "rank's slice, each rank's share computed, the results combined, by the wall clock between\n"
    "barriers on rank 0; the JSON has the median step, the pair rate, the checksum of the forces\n"
    "(equal to one device's) and the \"mpi\" object (each rank's pairs, compute, communication\n"
    "and wait seconds over the R steps).\n";

static void bench_usage_after(FILE *out, const cli_option *options, size_t count)
{
    fputs(bench_usage_mpi, out);
    cli_print_options(out, options, count, CLI_GROUP_LOOP, 18);
    fputs(cli_positions_usage, out);
    cli_physics_print_usage(out, options, count);
    cli_print_kernels(out);
}

enum { BENCH_MAX_VARIANTS = 16 };
static const int unroll_factors[] = {1, 2, 4, 8};

typedef struct bench_options {
    const char *kernel, *accum, *device, *algorithm;
    cli_shape_options shape; /* --unroll (also "all" here), --wg, --splits, --tiling, --lanes */
    const char *lists;       /* --lists: auto, half or full */
    const char *positions;   /* --positions: float or ds */
    long long n, reps, seed;
    double eps, density, skin; /* skin: NAN when not given */
    int json, help, reproducible;
    int step, potential;       /* --step, --potential */
    const char *result;        /* --result double|float */
    const char *scale;         /* --scale each|keep */
    const char *device_timing; /* --device-timing on|off (with --step) */
    cli_physics_options physics;
    /* --result, --scale and --device-timing resolved: fk_result_type, fk_scale_policy and
     * fk_device_timing values */
    int result_type, scale_policy, device_timing_mode;
} bench_options;

typedef struct bench_result {
    fk_variant variant; /* what ran, after automatic choices and set_particles */
    double median_seconds, min_seconds, max_seconds;
    double cold_start_seconds, warm_start_seconds;
    int warm_from_cache;
    int forces_finite; /* 0: the variant is broken and its timing must not be reported */
    /* 1: the device's event times were unavailable or implausible (the library's check,
     * src/core/devices/timing.c), and the times are the wall clock's, compute to results on the
     * host */
    int wall_clock;
} bench_result;

typedef struct bench_run {
    const fk_kernel_info *kernel;
    const fk_accum_info *accum;
    fkt_particle_set particles;
    cli_physics_data physics;
    fk_context *context;
    fk_eval_config base; /* everything but the unrolling */
    int requested[BENCH_MAX_VARIANTS][2];
    size_t requested_count;
    bench_result results[BENCH_MAX_VARIANTS];
    size_t result_count;
    cJSON *skipped;
    double *timings;
    double *wall_timings; /* the same evaluations by the wall clock */
    double *forces;
} bench_run;

static void bench_run_free(bench_run *run)
{
    free(run->timings);
    free(run->wall_timings);
    free(run->forces);
    cJSON_Delete(run->skipped);
    fk_context_destroy(run->context);
    fkt_particle_set_free(&run->particles);
    cli_physics_data_free(&run->physics);
}

/* Pair evaluations per evaluation: N^2 for all-pairs, what the loop examined otherwise (cells:
 * every pair of neighbouring cells, including those beyond the cutoff; neighbors: the list
 * entries, each unordered pair once with half lists). */
static double pairs_per_eval(const bench_run *run, const bench_result *result)
{
    const double n = (double)run->particles.count;
    return result->variant.pairs_examined ? (double)result->variant.pairs_examined : n * n;
}

static double interactions_per_second(const bench_run *run, const bench_result *result)
{
    const double seconds = result->median_seconds;
    return seconds > 0 ? pairs_per_eval(run, result) / seconds : NAN;
}

static fk_status check_forces_finite(bench_run *run, fk_eval *eval, int *finite)
{
    fk_status status = fk_eval_read_forces(eval, run->forces);
    *finite = 1;
    const size_t values = run->particles.count * run->kernel->force_components;
    for (size_t i = 0; status == FK_OK && i < values; ++i)
        if (!isfinite(run->forces[i])) {
            *finite = 0;
            break;
        }
    return status;
}

/* Cold start, warm start, warm-up and the timed evaluations of one variant. */
static fk_status measure_variant(bench_run *run, int unroll_i, int unroll_j, long long reps,
                                 bench_result *result)
{
    fk_eval_config config = run->base;
    config.unroll_i = unroll_i;
    config.unroll_j = unroll_j;
    config.refresh_cache = 1;
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(run->context, &config, &eval);
    if (status != FK_OK)
        return status;
    fk_eval_get_variant(eval, &result->variant);
    result->cold_start_seconds = result->variant.build_seconds;
    fk_eval_destroy(eval);
    eval = NULL;

    config.refresh_cache = 0;
    status = fk_eval_create(run->context, &config, &eval);
    if (status == FK_OK)
        status = cli_physics_apply(eval, &run->physics);
    if (status != FK_OK) {
        fk_eval_destroy(eval);
        return status;
    }
    fk_eval_get_variant(eval, &result->variant);
    cli_note_variant(eval);
    result->warm_start_seconds = result->variant.build_seconds;
    result->warm_from_cache = result->variant.program_from_cache;

    const fk_particles view = fkt_particle_set_view(&run->particles);
    status = fk_eval_set_particles(eval, &view);
    if (status == FK_OK)
        status = fk_eval_compute(eval, NULL); /* warm-up: first-launch costs are not measured */
    for (long long rep = 0; status == FK_OK && rep < reps; ++rep) {
        double seconds = NAN;
        const double start = fk__now();
        status = fk_eval_compute(eval, &seconds);
        run->wall_timings[rep] = fk__now() - start;
        /* A negative time means the profiling information was unavailable, or implausible. */
        run->timings[rep] = seconds >= 0 ? seconds : NAN;
    }
    if (status == FK_OK)
        status = check_forces_finite(run, eval, &result->forces_finite);
    if (status == FK_OK)
        fk_eval_get_variant(eval, &result->variant); /* j_splits is set with the particles */
    fk_eval_destroy(eval);
    if (status != FK_OK)
        return status;
    result->median_seconds = result->min_seconds = result->max_seconds = NAN;
    result->wall_clock = 0;
    for (long long rep = 0; rep < reps; ++rep)
        if (isnan(run->timings[rep]))
            result->wall_clock = 1; /* no usable device times: the wall clock's, said so */
    if (result->wall_clock)
        memcpy(run->timings, run->wall_timings, (size_t)reps * sizeof *run->timings);
    result->median_seconds = fk__median(run->timings, (size_t)reps); /* sorts the timings */
    result->min_seconds = run->timings[0];
    result->max_seconds = run->timings[reps - 1];
    return FK_OK;
}

static void print_table_header(const bench_run *run, const bench_options *options)
{
    printf("%s (%s), N = %lld, %lld reps, on %s\n", run->kernel->name, run->accum->name, options->n,
           options->reps, fk_context_device(run->context)->name);
    printf("%-6s %11s %11s %11s %15s %9s %6s %5s %6s %5s %9s %9s %6s  %s\n", "UNROLL", "S/EVAL",
           "MIN", "MAX", "INTERACTIONS/S", "GFLOP/S", "SPLITS", "WG", "TILING", "LANES", "COLD S",
           "WARM S", "CACHED", "VARIANT FROM");
}

static void print_table_row(const bench_run *run, const bench_result *result)
{
    const double rate = interactions_per_second(run, result);
    char unroll[CLI_UNROLL_NAME_SIZE];
    cli_unroll_name(result->variant.unroll_i, result->variant.unroll_j, unroll);
    char lanes[16] = "-";
    if (result->variant.lanes > 0)
        snprintf(lanes, sizeof lanes, "%d", result->variant.lanes);
    printf("%-6s %11.4e %11.4e %11.4e %15.4e %9.2f %6d %5d %6s %5s %9.3f %9.3f %6s  %s\n", unroll,
           result->median_seconds, result->min_seconds, result->max_seconds, rate,
           rate * run->kernel->flops_per_interaction / 1e9, result->variant.j_splits,
           result->variant.work_group_size, result->variant.local_tiling ? "on" : "off", lanes,
           result->cold_start_seconds, result->warm_start_seconds,
           result->warm_from_cache ? "yes" : "no", cli_variant_source_text(result->variant.source));
    if (result->wall_clock)
        printf("       times by the wall clock (compute to results on the host): the device's "
               "event times are not usable\n");
    if (run->base.algorithm == FK_ALGORITHM_AUTO)
        printf("       pair loop: %s (--algorithm auto: %s)\n",
               fk_algorithm_name((fk_algorithm)result->variant.algorithm),
               cli_variant_source_text(result->variant.algorithm_source));
    fflush(stdout);
}

static cJSON *result_json(const bench_run *run, const bench_result *result)
{
    const double rate = interactions_per_second(run, result);
    char unroll[CLI_UNROLL_NAME_SIZE];
    cli_unroll_name(result->variant.unroll_i, result->variant.unroll_j, unroll);
    cJSON *object = cJSON_CreateObject();
    cJSON_AddStringToObject(object, "unroll", unroll);
    cli_json_number(object, "seconds_per_eval", result->median_seconds);
    cli_json_number(object, "interactions_per_second", rate);
    cli_json_number(object, "gflops", rate * run->kernel->flops_per_interaction / 1e9);
    cli_json_number(object, "min_seconds", result->min_seconds);
    cli_json_number(object, "max_seconds", result->max_seconds);
    /* "device": OpenCL event profiling; "wall_clock": the device's event times were unavailable or
     * implausible (fk_context_warnings says why), compute to results on the host */
    cJSON_AddStringToObject(object, "timing", result->wall_clock ? "wall_clock" : "device");
    cJSON_AddNumberToObject(object, "j_splits", result->variant.j_splits);
    cJSON_AddNumberToObject(object, "work_group_size", result->variant.work_group_size);
    cJSON_AddBoolToObject(object, "local_tiling", result->variant.local_tiling != 0);
    /* vector lanes: i-particles per work-item (cl/pairwise_lanes.cl) or list partners per step
     * (cl/neighbors.cl); 0: the scalar template */
    cJSON_AddNumberToObject(object, "lanes", result->variant.lanes);
    cJSON_AddStringToObject(object, "variant_source",
                            cli_variant_source_token(result->variant.source));
    cli_json_number(object, "cold_start_seconds", result->cold_start_seconds);
    cli_json_number(object, "warm_start_seconds", result->warm_start_seconds);
    cJSON_AddBoolToObject(object, "warm_from_cache", result->warm_from_cache != 0);
    /* interactions_per_second and gflops count these pairs; seconds_per_eval compares loops */
    cli_json_number(object, "pairs_examined", pairs_per_eval(run, result));
    /* the loop that ran (--algorithm auto's choice), and where the choice came from */
    cJSON_AddStringToObject(object, "algorithm",
                            fk_algorithm_name((fk_algorithm)result->variant.algorithm));
    cJSON_AddStringToObject(object, "algorithm_source",
                            cli_variant_source_token(result->variant.algorithm_source));
    if (fk__loop_reports_grid(result->variant.algorithm)) {
        /* the grid and one build's device time (neighbors: the grid and the lists) */
        const fk_variant *v = &result->variant;
        cJSON *grid = cJSON_AddArrayToObject(object, "cell_grid");
        for (int d = 0; d < 3; ++d)
            cJSON_AddItemToArray(grid, cJSON_CreateNumber(v->cell_grid[d]));
        cli_json_number(object, "cell_size", v->cell_size[0]);
        cli_json_number(object, "skin", v->cell_skin);
        cJSON_AddNumberToObject(object, "cell_capacity", v->cell_capacity);
        cli_json_number(object, "cell_build_seconds", v->cell_build_seconds);
        cJSON_AddNumberToObject(object, "cell_resizes", (double)v->cell_resizes);
        if (fk__loop_reports_lists(v->algorithm))
            cJSON_AddStringToObject(object, "lists", v->neighbor_half_lists ? "half" : "full");
    }
    return object;
}

static int print_json(const bench_run *run, const bench_options *options)
{
    const fk_device_info *device = fk_context_device(run->context);
    char date[CLI_TIMESTAMP_SIZE];
    cli_utc_timestamp(date);
    cJSON *document = cJSON_CreateObject();
    cJSON_AddStringToObject(document, "kernel", run->kernel->name);
    cJSON_AddStringToObject(document, "accum", run->accum->name);
    cJSON_AddNumberToObject(document, "n", (double)options->n);
    cJSON_AddStringToObject(document, "device", device->name);
    cJSON_AddStringToObject(document, "device_type", fk_device_type_name(device->type));
    cJSON_AddStringToObject(document, "driver_version", device->driver_version);
    cJSON_AddStringToObject(document, "platform", device->platform_name);
    cJSON_AddNumberToObject(document, "reps", (double)options->reps);
    cJSON_AddBoolToObject(document, "reproducible", options->reproducible != 0);
    cJSON_AddStringToObject(document, "positions",
                            fk_positions_name((fk_positions)run->base.positions));
    /* the loop that ran; "algorithm_requested" is what --algorithm said (auto or the same) */
    cJSON_AddStringToObject(
        document, "algorithm",
        fk_algorithm_name((fk_algorithm)(run->result_count ? run->results[0].variant.algorithm
                                                           : run->base.algorithm)));
    cJSON_AddStringToObject(document, "algorithm_requested",
                            fk_algorithm_name((fk_algorithm)run->base.algorithm));
    if (!cli_kernel_is_gravity(run->kernel->name))
        cJSON_AddNumberToObject(document, "density", options->density);
    cJSON_AddStringToObject(document, "date", date);
    cli_json_number(document, "eps", run->base.eps);
    cJSON_AddNumberToObject(document, "seed", (double)options->seed);
    cJSON_AddNumberToObject(document, "flops_per_interaction", run->kernel->flops_per_interaction);
    cJSON *results = cJSON_AddArrayToObject(document, "results");
    for (size_t i = 0; i < run->result_count; ++i)
        cJSON_AddItemToArray(results, result_json(run, &run->results[i]));
    cJSON_AddItemReferenceToObject(document, "skipped", run->skipped);
    return cli_print_json(document);
}

/* Parses the options that are not plain numbers into run; returns an exit code. */
static int prepare(bench_run *run, bench_options *options)
{
    if (!options->kernel)
        return cli_usage_error("bench", "--kernel is required");
    if (!options->n)
        return cli_usage_error("bench", "--n is required");
    if (cli_find_kernel("bench", options->kernel, &run->kernel) ||
        cli_find_accum("bench", options->accum, &run->accum))
        return CLI_EXIT_USAGE;
    /* The shape's options as every command reads them (options.c); --unroll all is bench's. */
    fk_eval_config shape = {0};
    if (cli_shape_config("bench", &options->shape, &shape))
        return CLI_EXIT_USAGE;
    if (strcmp(options->shape.unroll, "all") == 0) {
        for (size_t i = 0; i < 4; ++i)
            for (size_t j = 0; j < 4; ++j) {
                run->requested[run->requested_count][0] = unroll_factors[i];
                run->requested[run->requested_count++][1] = unroll_factors[j];
            }
    } else {
        run->requested[0][0] = shape.unroll_i;
        run->requested[0][1] = shape.unroll_j;
        run->requested_count = 1;
    }
    /* The variant rules (src/core/programs/variant.c) before any device work: --wg 5 with --unroll
     * 4x4 and tiling is refused here as the library would refuse it. */
    for (size_t v = 0; v < run->requested_count; ++v) {
        char reason[256];
        if (!fk__variant_check(run->requested[v][0], run->requested[v][1], shape.work_group_size,
                               shape.local_tiling, reason, sizeof reason))
            return cli_usage_error("bench", "%s", reason);
    }
    const int gravity = cli_kernel_is_gravity(run->kernel->name);
    run->base = (fk_eval_config){.struct_size = sizeof(fk_eval_config),
                                 .kernel = run->kernel->name,
                                 .accum = run->accum->name,
                                 .work_group_size = shape.work_group_size,
                                 .local_tiling = shape.local_tiling,
                                 .j_splits = shape.j_splits,
                                 .eps = gravity ? options->eps : 0.0};
    /* N is known before the eval is created: the tuning database's entry for its bucket applies. */
    run->base.expected_count = (size_t)options->n;
    run->base.reproducible = options->reproducible;
    run->base.lanes = shape.lanes;
    fk_algorithm algorithm;
    if (cli_parse_algorithm("bench", options->algorithm, &algorithm))
        return CLI_EXIT_USAGE;
    run->base.algorithm = (int)algorithm;
    if (cli_parse_positions("bench", options->positions, &run->base.positions))
        return CLI_EXIT_USAGE;
    if (cli_parse_lists("bench", options->lists, &run->base.neighbor_lists))
        return CLI_EXIT_USAGE;
    /* --skin 0 means none, which the config spells negative (its 0 is the default) */
    run->base.skin = isnan(options->skin) ? 0.0 : options->skin > 0 ? options->skin : -1.0;
    return cli_physics_config("bench", run->kernel, &options->physics, &run->base);
}

static fk_status generate_system(bench_run *run, const bench_options *options)
{
    const int layout = fkt_io_layout_for_kernel(run->kernel->name);
    if (layout < 0)
        return FK_ERR_INVALID_ARGUMENT;
    if (cli_kernel_is_gravity(run->kernel->name))
        return fkt_generate_plummer((size_t)options->n, (uint64_t)options->seed, (fkt_layout)layout,
                                    &run->particles);
    return fkt_generate_lattice((size_t)options->n, options->density, 0.1, (uint64_t)options->seed,
                                (fkt_layout)layout, &run->particles);
}

#ifdef FK_CLI_MPI
/* Under mpirun: R timed steps (update, compute, combine) of the distributed evaluation. Every
 * rank generated the same system and passes all of it (the library checks that they agree and
 * takes rank r's slice, an equal split). */
static int bench_distributed(bench_run *run, const bench_options *options)
{
    const int rank = cli_mpi_rank(), ranks = cli_mpi_ranks();
    const size_t n = run->particles.count, fc = run->kernel->force_components;
    fk_eval_config config = run->base;
    config.unroll_i = run->requested[0][0];
    config.unroll_j = run->requested[0][1];
    fk_mpi_eval *m = NULL;
    char message[1200];
    const fk_pair_table table = fkt_pair_table_set_view(&run->physics.table);
    fk_status status = cli_mpi_eval_open(
        run->context, &config, run->physics.has_table ? &table : NULL, run->physics.exclusions,
        run->physics.exclusion_count, &m, message, sizeof message);
    if (status != FK_OK) {
        if (rank == 0)
            cli_error(fk_status_string(status), "%s", message);
        return cli_exit_code(status);
    }
    const fk_particles all = fkt_particle_set_view(&run->particles);
    /* The library checks that every rank generated the same system, then takes this rank's
     * slice; the steps below update that slice with the same positions. */
    status = fk_mpi_eval_set_all_particles(m, &all);
    size_t first = 0;
    fk_mpi_eval_slice(m, &first);
    const fk_particles slice = {.position = all.position + 3 * first,
                                .velocity = all.velocity ? all.velocity + 3 * first : NULL};
    if (status == FK_OK) /* warm-up: first-launch costs are not a step's */
        status = fk_mpi_eval_compute(m, NULL);
    fk_mpi_eval_reset_figures(m);
    double device_total = 0;
    for (long long rep = 0; status == FK_OK && rep < options->reps; ++rep) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        double device = 0;
        status = fk_mpi_eval_update_positions(m, slice.position, slice.velocity);
        if (status == FK_OK)
            status = fk_mpi_eval_compute(m, &device);
        MPI_Barrier(MPI_COMM_WORLD);
        run->timings[rep] = MPI_Wtime() - start;
        device_total += device;
    }
    /* The figures of the R steps alone: taken before the gather of every rank's results for
     * the checksum, which no step does. Collective. */
    cJSON *mpi = cli_mpi_figures_json(m);
    if (status == FK_OK)
        status = fk_mpi_eval_read_all_forces(m, run->forces);
    uint64_t pairs = 0;
    if (status == FK_OK) { /* the pairs of one step, over all ranks */
        const uint64_t mine_pairs = fk_eval_share_pairs(fk_mpi_eval_local(m));
        MPI_Allreduce(&mine_pairs, &pairs, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    }
    fk_variant variant = {0};
    fk_eval_get_variant(fk_mpi_eval_local(m), &variant);
    if (status != FK_OK) {
        if (rank == 0)
            cli_error(fk_status_string(status), "%s", fk_mpi_eval_last_error(m));
        cJSON_Delete(mpi);
        fk_mpi_eval_destroy(m);
        return cli_exit_code(status);
    }
    for (size_t k = 0; k < n * fc; ++k)
        if (!isfinite(run->forces[k])) {
            cli_error("bench", "the distributed evaluation produced non-finite forces");
            cJSON_Delete(mpi);
            fk_mpi_eval_destroy(m);
            return CLI_EXIT_RUNTIME;
        }
    const double median = fk__median(run->timings, (size_t)options->reps);
    char checksum[CLI_CHECKSUM_SIZE];
    cli_checksum(run->forces, n * fc, checksum);
    if (rank == 0) {
        const fk_device_info *device = fk_context_device(run->context);
        char unroll[CLI_UNROLL_NAME_SIZE];
        cli_unroll_name(variant.unroll_i, variant.unroll_j, unroll);
        fprintf(stderr,
                "%s (%s), N = %zu over %d MPI ranks (%s on rank 0), %s: median step %.4g s, "
                "%.4g pairs/s, checksum %s\n",
                run->kernel->name, run->accum->name, n, ranks, device->name,
                fk_algorithm_name((fk_algorithm)variant.algorithm), median,
                median > 0 ? (double)pairs / median : NAN, checksum);
        if (options->json) {
            char date[CLI_TIMESTAMP_SIZE];
            cli_utc_timestamp(date);
            cJSON *document = cJSON_CreateObject();
            cJSON_AddStringToObject(document, "kernel", run->kernel->name);
            cJSON_AddStringToObject(document, "accum", run->accum->name);
            cJSON_AddNumberToObject(document, "n", (double)n);
            cJSON_AddStringToObject(document, "device", device->name);
            cJSON_AddStringToObject(document, "driver_version", device->driver_version);
            cJSON_AddStringToObject(document, "date", date);
            cJSON_AddStringToObject(document, "algorithm",
                                    fk_algorithm_name((fk_algorithm)variant.algorithm));
            cJSON_AddStringToObject(document, "unroll", unroll);
            cJSON_AddNumberToObject(document, "work_group_size", variant.work_group_size);
            cJSON_AddBoolToObject(document, "reproducible", options->reproducible != 0);
            cJSON_AddNumberToObject(document, "reps", (double)options->reps);
            cli_json_number(document, "median_step_seconds", median);
            cli_json_number(document, "min_step_seconds", run->timings[0]);
            cli_json_number(document, "max_step_seconds", run->timings[options->reps - 1]);
            cli_json_number(document, "device_seconds_rank0", device_total / (double)options->reps);
            cJSON_AddNumberToObject(document, "pairs_per_step", (double)pairs);
            cli_json_number(document, "interactions_per_second",
                            median > 0 ? (double)pairs / median : NAN);
            cJSON_AddStringToObject(document, "checksum", checksum);
            if (mpi) {
                cJSON_AddNumberToObject(mpi, "steps", (double)options->reps);
                cJSON_AddItemToObject(document, "mpi", mpi);
                mpi = NULL;
            }
            cJSON_Delete(mpi);
            fk_mpi_eval_destroy(m);
            return cli_print_json(document);
        }
    }
    cJSON_Delete(mpi);
    fk_mpi_eval_destroy(m);
    return CLI_EXIT_OK;
}
#endif

/* Parses and checks the command line; the --step modes resolved into options. Returns 1 when
 * the command is done (*code: 0 after the help, 2 after a usage error). */
static int parse_bench_options(int argc, char **argv, bench_options *options, int *code)
{
    cli_option table[] = {
        cli_opt_kernel(&options->kernel),
        cli_int("n", "N", &options->n, 1, 1 << 30, "number of particles"),
        cli_opt_accum(&options->accum),
        cli_explained_as(cli_opt_unroll(&options->shape.unroll), "V",
                         "IxJ (I, J in 1, 2, 4, 8), auto (default: the tuned choice) or all"),
        cli_int("reps", "R", &options->reps, 1, 1000000,
                "timed evaluations per variant (default 10)"),
        cli_opt_eps(&options->eps, "softening of the gravity kernels (default 0.01)"),
        cli_opt_seed(&options->seed, 0, CLI_MAX_SEED, "seed of the synthetic system (default 1)"),
        cli_explained(cli_opt_splits(&options->shape.splits),
                      "work-groups sharing one i-block's j-range (default: automatic)"),
        cli_explained(cli_opt_wg(&options->shape.work_group_size),
                      "work-group size (default: automatic)"),
        cli_explained(cli_opt_tiling(&options->shape.tiling),
                      "j-tiles staged in local memory (default: automatic)"),
        cli_explained(cli_opt_lanes(&options->shape.lanes),
                      "CPU lane forms, vector lanes of i-particles (all-pairs: ga) or of list\n"
                      "partners (neighbors: lj, ljc_constant): auto (default: the CPU's float\n"
                      "vector width, 8 or 16, for kernels and accumulators that have them, with\n"
                      "automatic unrolling), off, 8 or 16"),
        cli_opt_reproducible(
            &options->reproducible,
            "fixed64 with correctly rounded divide and sqrt (cross-device bit-identity)"),
        cli_double("density", "D", &options->density, 1e-6, 10,
                   "number density of the molecular kernels' lattice (default 0.8)"),
        cli_double("skin", "S", &options->skin, 0, 1e6,
                   "cells, neighbors: Verlet skin (default 0.12 x cutoff; 0: none); cells\n"
                   "are at least cutoff + skin wide, neighbour lists hold the pairs within\n"
                   "cutoff + skin, both rebuilt once a particle moved more than skin / 2"),
        cli_flag("step", &options->step,
                 "time what a time-stepping code does per step instead: update positions,\n"
                 "compute, read the forces, by the wall clock, next to the device time and\n"
                 "the pinned host<->device bandwidth measured in the same run; R steps in\n"
                 "each mode: copy (read into an array), view (the pinned results lent\n"
                 "without a copy), pinned (positions written into the pinned array too)"),
        cli_flag("potential", &options->potential, "with --step: read the potentials too"),
        cli_string("result", "T", &options->result,
                   "with --step: results decoded to double (default) or float"),
        cli_string("scale", "P", &options->scale,
                   "with --step, the data-scaled accumulators' scale on each update: auto\n"
                   "(default: fixed64 keeps it, the others choose it again), each (a new\n"
                   "scale from every update's positions, the bound pre-pass) or keep (fixed64:\n"
                   "the scale of set_particles until a compute overflows);\n"
                   "fk_eval_config.scale_policy"),
        cli_opt_device_timing(
            &options->device_timing,
            "with --step: off (default: the steps run on a queue without OpenCL\n"
            "event profiling, as a production code's would, and the device time comes\n"
            "from one more pass on a profiled queue) or on (both from the same steps)"),
        cli_opt_device(&options->device),
        cli_opt_json(&options->json),
        cli_opt_positions(&options->positions),
        cli_opt_algorithm(&options->algorithm),
        cli_opt_lists(&options->lists),
        CLI_PHYSICS_OPTION_ENTRIES(options->physics),
        cli_opt_help(&options->help),
    };
    static const cli_usage usage = {"bench", bench_synopsis, 18, bench_usage_after};
    if (cli_parse_command(&usage, argc, argv, table, sizeof table / sizeof table[0], code))
        return 1;
    *code = CLI_EXIT_USAGE;
    if (options->reproducible) { /* reproducible mode sums in fixed64 */
        if (!cli_option_named(table, sizeof table / sizeof table[0], "accum")->given)
            options->accum = "fixed64";
        else if (strcmp(options->accum, "fixed64") != 0)
            return cli_usage_error("bench", "--reproducible uses the fixed64 accumulator, not %s",
                                   options->accum);
    }
    options->result_type = FK_RESULT_DOUBLE;
    if (options->result && strcmp(options->result, "float") == 0)
        options->result_type = FK_RESULT_FLOAT;
    else if (options->result && strcmp(options->result, "double") != 0)
        return cli_usage_error("bench", "--result '%s': expected double or float", options->result);
    options->scale_policy = FK_SCALE_AUTO;
    if (options->scale && strcmp(options->scale, "keep") == 0)
        options->scale_policy = FK_SCALE_KEEP;
    else if (options->scale && strcmp(options->scale, "each") == 0)
        options->scale_policy = FK_SCALE_EACH_UPLOAD;
    else if (options->scale && strcmp(options->scale, "auto") != 0)
        return cli_usage_error("bench", "--scale '%s': expected auto, each or keep",
                               options->scale);
    options->device_timing_mode = FK_DEVICE_TIMING_OFF;
    if (cli_parse_device_timing("bench", options->device_timing, FK_DEVICE_TIMING_OFF,
                                &options->device_timing_mode))
        return 1;
    if (!options->step &&
        (options->result || options->potential || options->scale || options->device_timing))
        return cli_usage_error("bench",
                               "--result, --potential, --scale and --device-timing go with --step");
    if (options->step && strcmp(options->shape.unroll, "all") == 0)
        return cli_usage_error("bench", "--step times one variant: --unroll IxJ or auto");
    *code = CLI_EXIT_OK;
    return 0;
}

/* The device, the synthetic system and its physics, the buffers of the timings and forces.
 * Reports a failure and returns its exit code (run is freed by the caller). */
static int set_up_run(bench_run *run, bench_options *options)
{
    int code = prepare(run, options);
    if (code != CLI_EXIT_OK)
        return code;
    char selector[32]; /* under mpirun, a device per rank unless one was named */
    code = cli_open_context(options->device ? options->device : cli_mpi_device(selector),
                            &run->context);
    if (code == CLI_EXIT_OK)
        code = cli_check_fits_device(run->context, (size_t)options->n);
    if (code != CLI_EXIT_OK)
        return code;
    fk_status status = generate_system(run, options);
    if (status == FK_OK) {
        code = cli_physics_load("bench", run->kernel, &options->physics, &run->particles,
                                &run->base, &run->physics);
        if (code != CLI_EXIT_OK)
            return code;
    }
    run->timings = malloc((size_t)options->reps * sizeof *run->timings);
    run->wall_timings = malloc((size_t)options->reps * sizeof *run->wall_timings);
    run->skipped = cJSON_CreateArray();
    if (status == FK_OK && (!run->timings || !run->wall_timings || !run->skipped))
        status = FK_ERR_HOST_MEMORY;
    if (status == FK_OK) {
        run->forces =
            malloc(run->particles.count * run->kernel->force_components * sizeof *run->forces);
        if (!run->forces)
            status = FK_ERR_HOST_MEMORY;
    }
    if (status != FK_OK) {
        cli_error("bench", "cannot generate %lld particles: %s", options->n,
                  fk_status_string(status));
        return cli_exit_code(status);
    }
    return CLI_EXIT_OK;
}

/* bench --step: one variant, timed as a stepping code uses it (bench_step.c). */
static int bench_steps(const bench_run *run, const bench_options *options)
{
    bench_step_input step = {.context = run->context,
                             .base = run->base,
                             .physics = &run->physics,
                             .particles = &run->particles,
                             .kernel = run->kernel,
                             .accum = run->accum,
                             .reps = options->reps,
                             .potential = options->potential,
                             .result_type = options->result_type,
                             .device_timing = options->device_timing_mode,
                             .json = options->json};
    step.base.scale_policy = options->scale_policy;
    step.base.unroll_i = run->requested[0][0];
    step.base.unroll_j = run->requested[0][1];
    return bench_step_run(&step);
}

/* Every requested variant timed, as a table or a JSON document. A variant the device cannot
 * run is skipped with its reason. */
static int bench_variants(bench_run *run, const bench_options *options)
{
    if (!options->json)
        print_table_header(run, options);
    for (size_t v = 0; v < run->requested_count; ++v) {
        const int unroll_i = run->requested[v][0], unroll_j = run->requested[v][1];
        bench_result *result = &run->results[run->result_count];
        memset(result, 0, sizeof *result);
        char name[CLI_UNROLL_NAME_SIZE] = "auto";
        if (unroll_i)
            cli_unroll_name(unroll_i, unroll_j, name);
        const fk_status status = measure_variant(run, unroll_i, unroll_j, options->reps, result);
        if (status == FK_ERR_UNSUPPORTED) {
            /* One variant the device cannot run (registers, local memory) is a finding of the
             * benchmark, not a failure of it. */
            const char *reason = fk_context_last_error(run->context);
            fprintf(stderr, "forcekit: bench: variant %s skipped: %s\n", name, reason);
            cJSON *skip = cJSON_CreateObject();
            cJSON_AddStringToObject(skip, "unroll", name);
            cJSON_AddStringToObject(skip, "reason", reason);
            cJSON_AddItemToArray(run->skipped, skip);
            continue;
        }
        if (status == FK_OK && !result->forces_finite) {
            cli_error("bench", "variant %s produced non-finite forces; not reporting its timing",
                      name);
            return CLI_EXIT_RUNTIME;
        }
        if (status != FK_OK)
            return cli_report_status(status, run->context);
        run->result_count++;
        if (!options->json)
            print_table_row(run, result);
    }
    if (run->result_count == 0) {
        cli_error("bench", "no variant could run on %s", fk_context_device(run->context)->name);
        return CLI_EXIT_RUNTIME;
    }
    return options->json ? print_json(run, options) : CLI_EXIT_OK;
}

int cmd_bench(int argc, char **argv)
{
    bench_options options = {.accum = "float",
                             .shape = CLI_SHAPE_OPTIONS_INIT,
                             .reps = 10,
                             .seed = 1,
                             .eps = 0.01,
                             .density = 0.8,
                             .skin = NAN,
                             .physics = CLI_PHYSICS_OPTIONS_INIT};
    int code = CLI_EXIT_OK;
    if (parse_bench_options(argc, argv, &options, &code))
        return code;
    bench_run run = {0};
    code = set_up_run(&run, &options);
    if (code != CLI_EXIT_OK) {
        bench_run_free(&run);
        return code;
    }
#ifdef FK_CLI_MPI
    if (cli_mpi_active()) {
        if (run.requested_count != 1) {
            bench_run_free(&run);
            return cli_usage_error("bench", "under mpirun, one variant: --unroll IxJ or auto");
        }
        run.base.scale_policy = options.scale_policy;
        code = bench_distributed(&run, &options);
        bench_run_free(&run);
        return code;
    }
#endif
    code = options.step ? bench_steps(&run, &options) : bench_variants(&run, &options);
    bench_run_free(&run);
    return code;
}
