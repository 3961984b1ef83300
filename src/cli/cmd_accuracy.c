/* `forcekit accuracy`: per accumulator, the force error and offset of Narumi et al. (eqs. 10 and
 * 11) against the device's `ref` accumulator (G; the double-precision host reference where the
 * device has no fp64, and always as a second column), and the time relative to float. On systems
 * with exclusions (the protein) every accumulator runs in both of Narumi's sec. 4.1 modes,
 * "exclude on the fly" and "exclude afterwards". */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/stats.h"
#include "support/generate.h"
#include "forcekit/tools.h"
#include "cli/physics.h"
#include "support/systems.h"

static const char accuracy_synopsis[] =
    "usage: forcekit accuracy (--in FILE --kernel K | --system plummer|protein|lj65536 [--kernel "
    "K])\n"
    "                         [--n N] [--seed S] [--accum A[,B...]|all] [--eps E] [--reps R]\n"
    "                         [--format auto|text|tipsy] [--reproducible] [physics options]\n"
    "                         [--positions float|ds] [--unroll IxJ] [--wg W] [--splits S]\n"
    "                         [--tiling on|off] [--lanes L] [--max-error E] [--device SEL]\n"
    "                         [--json]\n\n"
    "Compares each accumulator's forces with the reference: the device's ref accumulator (G:\n"
    "pair forces and sums in double) where the device has fp64, else the double-precision host\n"
    "reference, which is always reported too (ERR HOST). Both see the positions and masses the\n"
    "device sees, in single precision or with --positions ds as float pairs (so input rounding\n"
    "is not counted). For gravity the force is\n"
    "F_i = m_i a_i.\n"
    "  error  = sum_i |F_i - F_ref,i| / sum_i |F_ref,i|   (Narumi et al., eq. 10)\n"
    "  offset = |sum_i F_i| / sum_i |F_i|                  (eq. 11, the sum taken exactly)\n"
    "REL TIME is the median time per evaluation relative to float's (device event time): with\n"
    "--max-error E the table is followed by the cheapest accumulator whose error (the larger of\n"
    "ERROR and ERR HOST) is at most E.\n"
    "The checksum is XXH3-64 of the forces as doubles: equal checksums, equal bits.\n"
    "With exclusions (the protein, or --exclude) every accumulator runs in both of Narumi's\n"
    "modes, on the fly and afterwards (sec. 4.1; --exclude-mode picks one), against a reference\n"
    "that leaves the pairs out exactly.\n\n"
    "Systems (see forcekit generate --help):\n"
    "  plummer   a Plummer sphere of N bodies (gravity kernels; default ga, N 16384)\n"
    "  protein   Narumi's System 1 analogue, 3,339 atoms with exclusions, kcal/mol and Angstrom\n"
    "            (ljc_* with Coulomb k = 332.0637, default ljc_constant; or lj, LJ only)\n"
    "  lj65536   Narumi's System 2, 65,536 LJ particles of 16 types (default lj; or ljc_*);\n"
    "            --n shrinks it (same recipe, for tests); default --reps 1\n"
    "  With lj the cutoff defaults to beyond the system's diameter: every pair counts, as in\n"
    "  Narumi's runs without cutoff.\n\n";

static void accuracy_usage_after(FILE *out, const cli_option *options, size_t count)
{
    fputs("Physics options (molecular kernels; with --system only --cutoff, --coulomb, "
          "--dielectric\n"
          "and --exclude-mode, the system bringing its parameters and exclusions):\n",
          out);
    cli_print_shape_usage(out, options, count);
    fputs(cli_positions_usage, out);
    cli_physics_print_usage(out, options, count);
    cli_print_kernels(out);
}

enum { ACCURACY_MAX_ACCUMULATORS = 32 };

typedef enum accuracy_system {
    SYSTEM_NONE,
    SYSTEM_PLUMMER,
    SYSTEM_PROTEIN,
    SYSTEM_LJ65536
} accuracy_system;

typedef struct accuracy_options {
    const char *kernel, *in, *system, *accum, *format, *device;
    const char *positions_name; /* --positions: float or ds */
    int positions;              /* fk_positions */
    long long n, seed, reps;
    double eps;
    double max_error; /* --max-error: NAN when not given */
    int json, help, reproducible;
    fkt_file_format file_format; /* parsed from format */
    accuracy_system system_kind;
    cli_physics_options physics;
    cli_shape_options shape;   /* --unroll, --wg, --splits, --tiling, --lanes */
    fk_eval_config shape_eval; /* the shape parsed, for every accumulator's evaluation */
} accuracy_options;

typedef struct accuracy_result {
    const fk_accum_info *accum;
    fk_variant variant;
    double error;      /* Narumi eq. 10, against the reference (ref, or the host) */
    double error_host; /* eq. 10 against the double-precision host reference */
    double offset;     /* Narumi eq. 11 */
    double seconds_per_eval;
    char checksum[CLI_CHECKSUM_SIZE];
    int exclusion_mode; /* fk_exclusion_mode it ran with (molecular kernels) */
} accuracy_result;

typedef struct accuracy_run {
    const fk_kernel_info *kernel;
    fkt_particle_set particles; /* rounded to single precision, as the device stores them */
    fk_context *context;
    double *reference_forces; /* 3 per particle: the host's */
    double *ref_forces;       /* 3 per particle: the device's ref accumulator; NULL without fp64 */
    double *method_values;    /* force_components per particle, as read from the device */
    double *method_forces;    /* 3 per particle */
    double *timings;
    double reference_offset;
    accuracy_result results[ACCURACY_MAX_ACCUMULATORS];
    size_t result_count;
    /* With exclusions and both modes: each accumulator in the other mode, same index. */
    accuracy_result other_mode[ACCURACY_MAX_ACCUMULATORS];
    int compare_exclusions;
    cJSON *skipped;
    fk_eval_config physics; /* the physics fields, exclusion mode and slots for every eval */
    cli_physics_data data;  /* pair table and exclusions */
    const char *units;      /* of a molecular system, NULL otherwise */
} accuracy_run;

static void accuracy_run_free(accuracy_run *run)
{
    free(run->reference_forces);
    free(run->ref_forces);
    free(run->method_values);
    free(run->method_forces);
    free(run->timings);
    cJSON_Delete(run->skipped);
    fk_context_destroy(run->context);
    fkt_particle_set_free(&run->particles);
    cli_physics_data_free(&run->data);
}

/* ---------------------------------------------------------------------------------------------- */
/* The metrics */

/* Force vectors from a kernel's output: the first three components, times the mass for gravity
 * (whose kernels return accelerations). */
static void forces_from_output(const accuracy_run *run, const double *values, double *forces)
{
    const unsigned components = run->kernel->force_components;
    const int gravity = cli_kernel_is_gravity(run->kernel->name);
    for (size_t i = 0; i < run->particles.count; ++i) {
        const double scale = gravity && run->particles.mass ? run->particles.mass[i] : 1.0;
        for (size_t k = 0; k < 3; ++k)
            forces[3 * i + k] = scale * values[components * i + k];
    }
}

static double norm3(const double *v)
{
    return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

/* Narumi et al., eq. 10: sum_i |F_i - F_ref,i| / sum_i |F_ref,i|. */
static double force_error(const double *forces, const double *reference, size_t count)
{
    double difference_sum = 0, reference_sum = 0;
    for (size_t i = 0; i < count; ++i) {
        const double difference[3] = {forces[3 * i] - reference[3 * i],
                                      forces[3 * i + 1] - reference[3 * i + 1],
                                      forces[3 * i + 2] - reference[3 * i + 2]};
        difference_sum += norm3(difference);
        reference_sum += norm3(&reference[3 * i]);
    }
    return difference_sum / reference_sum;
}

/* The exact sum of doubles, rounded once at the end (Shewchuk's non-overlapping expansion, as
 * Python's math.fsum): the offset of fixed-point accumulators is exactly 0, and a metric that
 * rounds its own sum could not show it. */
enum { EXACT_SUM_PARTIALS = 96 };
static double exact_sum(const double *values, size_t count, size_t stride)
{
    double partials[EXACT_SUM_PARTIALS];
    size_t used = 0;
    for (size_t i = 0; i < count; ++i) {
        double x = values[i * stride];
        size_t kept = 0;
        for (size_t p = 0; p < used; ++p) {
            double y = partials[p];
            if (fabs(x) < fabs(y)) {
                const double t = x;
                x = y;
                y = t;
            }
            const double high = x + y, low = y - (high - x);
            if (low != 0.0)
                partials[kept++] = low;
            x = high;
        }
        /* doubles span 2098 binary orders: a full expansion has at most ~40 parts */
        if (kept < EXACT_SUM_PARTIALS)
            partials[kept++] = x;
        used = kept;
    }
    double sum = 0.0;
    for (size_t p = used; p-- > 0;)
        sum += partials[p];
    return sum;
}

/* Narumi et al., eq. 11: |sum_i F_i| / sum_i |F_i|; Newton's third law makes it 0 when exact. */
static double force_offset(const double *forces, size_t count)
{
    double total[3], magnitude_sum = 0;
    for (size_t k = 0; k < 3; ++k)
        total[k] = exact_sum(forces + k, count, 3);
    for (size_t i = 0; i < count; ++i)
        magnitude_sum += norm3(&forces[3 * i]);
    return norm3(total) / magnitude_sum;
}

/* ---------------------------------------------------------------------------------------------- */
/* Input */

/* The protein or lj65536: particles, their pair table and exclusions (moved into run->data),
 * Coulomb constant and, for lj, a cutoff beyond the system's diameter (Narumi runs without one).
 * Options given on the command line win. Returns an exit code. */
static int generate_molecular(accuracy_run *run, const accuracy_options *options, fkt_layout layout)
{
    fkt_system system;
    fk_status status = options->system_kind == SYSTEM_PROTEIN
                           ? fkt_generate_protein((uint64_t)options->seed, &system)
                           : fkt_generate_lj65536((size_t)options->n, FKT_LJ65536_DENSITY,
                                                  (uint64_t)options->seed, layout, &system);
    if (status != FK_OK) {
        cli_error("accuracy", "cannot generate the %s system: %s", options->system,
                  fk_status_string(status));
        return cli_exit_code(status);
    }
    run->particles = system.particles;
    memset(&system.particles, 0, sizeof system.particles);
    if (layout == FKT_LAYOUT_XYZ_TYPE) { /* lj: no charges */
        free(run->particles.mass);
        run->particles.mass = NULL;
    }
    run->data.table = system.params;
    run->data.has_table = 1;
    memset(&system.params, 0, sizeof system.params);
    run->data.exclusions = system.exclusions;
    run->data.exclusion_count = system.exclusion_count;
    system.exclusions = NULL;
    run->units = system.units;
    if (isnan(options->physics.coulomb) && layout == FKT_LAYOUT_XYZQ_TYPE)
        run->physics.coulomb = system.coulomb;
    if (isnan(options->physics.cutoff) && strcmp(run->kernel->name, "lj") == 0) {
        double low[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}, high[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
        for (size_t i = 0; i < run->particles.count; ++i)
            for (int d = 0; d < 3; ++d) {
                low[d] = fmin(low[d], run->particles.position[3 * i + (size_t)d]);
                high[d] = fmax(high[d], run->particles.position[3 * i + (size_t)d]);
            }
        double diameter2 = 0.0;
        for (int d = 0; d < 3; ++d)
            diameter2 += (high[d] - low[d]) * (high[d] - low[d]);
        run->physics.cutoff = 2.0 * sqrt(diameter2) + 1.0;
    }
    fkt_system_free(&system);
    return CLI_EXIT_OK;
}

/* Loads or generates the particles; returns an exit code, having reported any failure. */
/* A value as the device stores it: one float, or with double-single positions the float pair
 * hi + lo (cl/forces/point.clh), exact in double. */
static double as_stored(double x, int ds)
{
    const float hi = (float)x;
    return ds ? (double)hi + (double)(float)(x - (double)hi) : (double)hi;
}

static int load_particles(accuracy_run *run, const accuracy_options *options)
{
    const int layout = fkt_io_layout_for_kernel(run->kernel->name);
    if (layout < 0) {
        cli_error("accuracy", "kernel '%s' has no particle layout", run->kernel->name);
        return CLI_EXIT_RUNTIME;
    }
    fk_status status;
    if (options->in) {
        char message[1024] = "";
        status = fkt_io_read_particles(options->in, options->file_format, (fkt_layout)layout,
                                       &run->particles, message, sizeof message);
        if (status != FK_OK) {
            cli_error(fk_status_string(status), "%s", message);
            return cli_exit_code(status);
        }
    } else if (options->system_kind == SYSTEM_PLUMMER) {
        status = fkt_generate_plummer((size_t)options->n, (uint64_t)options->seed,
                                      (fkt_layout)layout, &run->particles);
        if (status != FK_OK) {
            cli_error("accuracy", "cannot generate %lld particles: %s", options->n,
                      fk_status_string(status));
            return cli_exit_code(status);
        }
    } else {
        int code = generate_molecular(run, options, (fkt_layout)layout);
        if (code != CLI_EXIT_OK)
            return code;
    }
    if (run->particles.count < 2) {
        cli_error("accuracy", "%s: %zu particle; the error needs at least 2",
                  options->in ? options->in : "system", run->particles.count);
        return CLI_EXIT_USAGE;
    }
    /* The device stores single precision (or float pairs): the reference gets the same numbers,
     * so that what is measured is the arithmetic, not the rounding of the input. */
    fkt_particle_set *set = &run->particles;
    for (size_t i = 0; i < set->count; ++i) {
        /* Converting a double beyond the float range is undefined behaviour in C. */
        int representable = 1;
        for (size_t k = 0; k < 3; ++k)
            representable &= fabs(set->position[3 * i + k]) <= FLT_MAX;
        if (set->mass)
            representable &= fabs(set->mass[i]) <= FLT_MAX;
        for (size_t k = 0; set->velocity && k < 3; ++k)
            representable &= fabs(set->velocity[3 * i + k]) <= FLT_MAX;
        if (!representable) {
            cli_error(fk_status_string(FK_ERR_INVALID_INPUT),
                      "particle %zu: a value is beyond the single-precision range", i);
            return CLI_EXIT_USAGE;
        }
    }
    const int ds = options->positions == FK_POSITIONS_DOUBLE_SINGLE;
    for (size_t i = 0; i < 3 * set->count; ++i)
        set->position[i] = as_stored(set->position[i], ds);
    for (size_t i = 0; set->mass && i < set->count; ++i)
        set->mass[i] = as_stored(set->mass[i], ds);
    for (size_t i = 0; set->velocity && i < 3 * set->count; ++i)
        set->velocity[i] = as_stored(set->velocity[i], ds);
    /* Without any mass every gravity force is zero and the relative error (Narumi eq. 10) has
     * nothing to divide by: said now, rather than after a minute of measuring. */
    if (cli_kernel_is_gravity(run->kernel->name) && set->mass) {
        int any_mass = 0;
        for (size_t i = 0; i < set->count && !any_mass; ++i)
            any_mass = set->mass[i] != 0;
        if (!any_mass) {
            cli_error(fk_status_string(FK_ERR_INVALID_INPUT),
                      "%s: every mass is zero (in single precision): all forces vanish and the "
                      "relative error is undefined",
                      options->in ? options->in : "system");
            return CLI_EXIT_USAGE;
        }
    }
    return CLI_EXIT_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Measurement */

static fk_status compute_reference(accuracy_run *run, double eps)
{
    const size_t count = run->particles.count;
    const unsigned components = run->kernel->force_components;
    double *values = malloc(count * components * sizeof *values);
    if (!values)
        return FK_ERR_HOST_MEMORY;
    const fk_particles view = fkt_particle_set_view(&run->particles);
    const fk_pair_table table = fkt_pair_table_set_view(&run->data.table);
    fk_physics physics = {.eps = eps,
                          .cutoff = run->physics.cutoff,
                          .coulomb = run->physics.coulomb,
                          .pair_table = run->data.has_table ? &table : NULL,
                          .exclusions = run->data.exclusions,
                          .exclusion_count = run->data.exclusion_count};
    memcpy(physics.parameters, run->physics.parameters, sizeof physics.parameters);
    memcpy(physics.box, run->physics.box, sizeof physics.box);
    fk_status status = fk_reference_forces(run->kernel->name, &view, &physics, values, NULL);
    if (status == FK_OK) {
        forces_from_output(run, values, run->reference_forces);
        run->reference_offset = force_offset(run->reference_forces, count);
    }
    free(values);
    return status;
}

static fk_status measure_accumulator(accuracy_run *run, const fk_accum_info *accum,
                                     const accuracy_options *options, int exclusion_mode,
                                     accuracy_result *result)
{
    const long long reps = options->reps;
    fk_eval_config config = run->physics;
    config.struct_size = sizeof config; /* fields after 0.2's, positions among them */
    config.kernel = run->kernel->name;
    config.accum = accum->name;
    config.eps = options->eps;
    config.positions = options->positions;
    config.exclusion_mode = exclusion_mode;
    result->exclusion_mode = exclusion_mode;
    config.reproducible = options->reproducible && (strcmp(accum->name, "fixed64") == 0 ||
                                                    strcmp(accum->name, "narumi") == 0);
    config.expected_count = run->particles.count;
    config.unroll_i = options->shape_eval.unroll_i;
    config.unroll_j = options->shape_eval.unroll_j;
    config.work_group_size = options->shape_eval.work_group_size;
    config.local_tiling = options->shape_eval.local_tiling;
    config.j_splits = options->shape_eval.j_splits;
    config.lanes = options->shape_eval.lanes;
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(run->context, &config, &eval);
    if (status == FK_OK)
        cli_note_variant(eval);
    if (status == FK_OK && config.reproducible)
        cli_note_reproducible(eval, fk_context_device(run->context)->name);
    const fk_particles view = fkt_particle_set_view(&run->particles);
    if (status == FK_OK)
        status = cli_physics_apply(eval, &run->data);
    if (status == FK_OK)
        status = fk_eval_set_particles(eval, &view);
    if (status == FK_OK)
        status = fk_eval_compute(eval, NULL); /* warm-up */
    for (long long rep = 0; status == FK_OK && rep < reps; ++rep) {
        double seconds = NAN;
        status = fk_eval_compute(eval, &seconds);
        run->timings[rep] = seconds >= 0 ? seconds : NAN;
    }
    if (status == FK_OK)
        status = fk_eval_read_forces(eval, run->method_values);
    if (status == FK_OK)
        fk_eval_get_variant(eval, &result->variant);
    fk_eval_destroy(eval);
    if (status != FK_OK)
        return status;
    result->accum = accum;
    result->seconds_per_eval = fk__median(run->timings, (size_t)reps);
    for (long long rep = 0; rep < reps; ++rep)
        if (isnan(run->timings[rep]))
            result->seconds_per_eval = NAN; /* no profiling information */
    cli_checksum(run->method_values, run->particles.count * run->kernel->force_components,
                 result->checksum);
    forces_from_output(run, run->method_values, run->method_forces);
    const size_t count = run->particles.count;
    result->error_host = force_error(run->method_forces, run->reference_forces, count);
    result->error = run->ref_forces ? force_error(run->method_forces, run->ref_forces, count)
                                    : result->error_host;
    result->offset = force_offset(run->method_forces, count);
    return FK_OK;
}

static void skip_accumulator(accuracy_run *run, const fk_accum_info *accum, const char *reason)
{
    fprintf(stderr, "forcekit: accuracy: accumulator %s skipped: %s\n", accum->name, reason);
    cJSON *skip = cJSON_CreateObject();
    cJSON_AddStringToObject(skip, "accum", accum->name);
    cJSON_AddStringToObject(skip, "reason", reason);
    cJSON_AddItemToArray(run->skipped, skip);
}

/* "a,b,c": accumulator names into out (at most ACCURACY_MAX_ACCUMULATORS); returns how many, or 0
 * when the list is malformed or names an unknown accumulator (cli_find_accum reports that). */
static size_t parse_accum_list(const char *text, const fk_accum_info **out)
{
    size_t count = 0;
    const char *start = text;
    for (;;) {
        const char *comma = strchr(start, ',');
        size_t length = comma ? (size_t)(comma - start) : strlen(start);
        char name[64];
        if (length == 0 || length >= sizeof name || count == ACCURACY_MAX_ACCUMULATORS)
            return 0;
        memcpy(name, start, length);
        name[length] = '\0';
        const fk_accum_info *accum = NULL;
        if (cli_find_accum("accuracy", name, &accum))
            return 0;
        out[count++] = accum;
        if (!comma)
            return count;
        start = comma + 1;
    }
}

/* Runs every requested accumulator; returns an exit code, having reported any failure. */
static int measure_all(accuracy_run *run, const accuracy_options *options)
{
    const fk_accum_info *requested[ACCURACY_MAX_ACCUMULATORS];
    size_t requested_count = 0;
    const int all = strcmp(options->accum, "all") == 0;
    if (all)
        for (size_t i = 0; fk_accum_at(i) && requested_count < ACCURACY_MAX_ACCUMULATORS; ++i)
            requested[requested_count++] = fk_accum_at(i);
    else
        requested_count = parse_accum_list(options->accum, requested); /* checked by the caller */

    const fk_device_info *device = fk_context_device(run->context);
    /* The reference is G itself where the device can run it (Narumi measures against G). */
    if (device->fp64) {
        accuracy_result reference;
        memset(&reference, 0, sizeof reference);
        /* With exclusions the reference leaves them out on the fly: no large terms subtracted. */
        fk_status status = measure_accumulator(
            run, fk_accum_find("ref"), options,
            run->data.exclusion_count ? FK_EXCLUDE_ON_THE_FLY : run->physics.exclusion_mode,
            &reference);
        if (status != FK_OK)
            return cli_report_status(status, run->context);
        run->ref_forces = malloc(3 * run->particles.count * sizeof *run->ref_forces);
        if (!run->ref_forces)
            return cli_report_status(FK_ERR_HOST_MEMORY, NULL);
        memcpy(run->ref_forces, run->method_forces, 3 * run->particles.count * sizeof(double));
    } else {
        fprintf(stderr,
                "forcekit: accuracy: %s has no fp64: errors are against the host's double "
                "reference\n",
                device->name);
    }
    for (size_t i = 0; i < requested_count; ++i) {
        const fk_accum_info *accum = requested[i];
        /* With "all", what the device cannot do is a note; asked for by name, it is an error. */
        if (all && accum->needs_fp64 && !device->fp64) {
            skip_accumulator(run, accum, "needs double precision, which the device lacks");
            continue;
        }
        accuracy_result *result = &run->results[run->result_count];
        memset(result, 0, sizeof *result);
        fk_status status =
            measure_accumulator(run, accum, options, run->physics.exclusion_mode, result);
        if (status == FK_ERR_UNSUPPORTED && all) {
            skip_accumulator(run, accum, fk_context_last_error(run->context));
            continue;
        }
        if (status == FK_OK && run->compare_exclusions) {
            accuracy_result *other = &run->other_mode[run->result_count];
            memset(other, 0, sizeof *other);
            status = measure_accumulator(run, accum, options,
                                         run->physics.exclusion_mode == FK_EXCLUDE_AFTERWARDS
                                             ? FK_EXCLUDE_ON_THE_FLY
                                             : FK_EXCLUDE_AFTERWARDS,
                                         other);
        }
        if (status != FK_OK)
            return cli_report_status(status, run->context);
        run->result_count++;
    }
    if (run->result_count == 0) {
        cli_error("accuracy", "no accumulator could run on %s", device->name);
        return CLI_EXIT_RUNTIME;
    }
    return CLI_EXIT_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Output */

static double float_seconds(const accuracy_run *run)
{
    for (size_t i = 0; i < run->result_count; ++i)
        if (strcmp(run->results[i].accum->name, "float") == 0)
            return run->results[i].seconds_per_eval;
    return NAN; /* float did not run: there is nothing to be relative to */
}

/* The error an accumulator is chosen by: the larger of the two columns, so that ref (whose error
 * against itself is 0) is judged by the host reference; NaN stays NaN. */
static double selection_error(const accuracy_result *result)
{
    if (isnan(result->error) || isnan(result->error_host))
        return NAN;
    return fmax(result->error, result->error_host);
}

/* --max-error: the accumulator of least time per evaluation whose error is at most max_error; NULL
 * when none meets it, or (*untimed set) when one that does has no time to rank it by. */
static const accuracy_result *cheapest_meeting(const accuracy_run *run, double max_error,
                                               int *untimed)
{
    const accuracy_result *best = NULL;
    *untimed = 0;
    for (size_t i = 0; i < run->result_count; ++i) {
        const accuracy_result *result = &run->results[i];
        if (!(selection_error(result) <= max_error))
            continue;
        if (!isfinite(result->seconds_per_eval)) {
            *untimed = 1;
            return NULL;
        }
        if (!best || result->seconds_per_eval < best->seconds_per_eval)
            best = result;
    }
    return best;
}

static const char *exclusion_mode_name(int mode)
{
    return mode == FK_EXCLUDE_ON_THE_FLY ? "onthefly" : "afterwards";
}

static int print_json(const accuracy_run *run, const accuracy_options *options)
{
    const double baseline = float_seconds(run);
    cJSON *document = cJSON_CreateObject();
    cJSON_AddStringToObject(document, "kernel", run->kernel->name);
    cJSON_AddNumberToObject(document, "n", (double)run->particles.count);
    cJSON_AddStringToObject(document, "device", fk_context_device(run->context)->name);
    if (options->in) {
        cJSON_AddStringToObject(document, "input", options->in);
    } else {
        cJSON_AddStringToObject(document, "system", options->system);
        cJSON_AddNumberToObject(document, "seed", (double)options->seed);
    }
    cli_json_number(document, "eps", options->eps);
    const int molecular = run->kernel->pair_parameters > 0;
    if (molecular) {
        cJSON_AddStringToObject(document, "units", run->units ? run->units : "as given");
        cli_json_number(document, "coulomb", run->physics.coulomb ? run->physics.coulomb : 1.0);
        cli_json_number(document, "cutoff", run->physics.cutoff);
        cJSON_AddNumberToObject(document, "exclusions", (double)run->data.exclusion_count);
        cJSON_AddStringToObject(document, "exclusion_mode",
                                exclusion_mode_name(run->physics.exclusion_mode));
    }
    cJSON_AddNumberToObject(document, "reps", (double)options->reps);
    cli_json_number(document, "reference_offset", run->reference_offset);
    cJSON_AddStringToObject(document, "reference", run->ref_forces ? "ref" : "host");
    cJSON_AddBoolToObject(document, "reproducible", options->reproducible != 0);
    cJSON_AddStringToObject(document, "positions",
                            fk_positions_name((fk_positions)options->positions));
    cJSON *results = cJSON_AddArrayToObject(document, "results");
    for (size_t i = 0; i < run->result_count; ++i) {
        const accuracy_result *result = &run->results[i];
        char unroll[CLI_UNROLL_NAME_SIZE];
        cli_unroll_name(result->variant.unroll_i, result->variant.unroll_j, unroll);
        const char letter[2] = {result->accum->letter, '\0'};
        cJSON *object = cJSON_CreateObject();
        cJSON_AddStringToObject(object, "accum", result->accum->name);
        cJSON_AddStringToObject(object, "letter", letter);
        cli_json_number(object, "error", result->error);
        cli_json_number(object, "error_host", result->error_host);
        cli_json_number(object, "offset", result->offset);
        cli_json_number(object, "seconds_per_eval", result->seconds_per_eval);
        cli_json_number(object, "relative_time", result->seconds_per_eval / baseline);
        cJSON_AddStringToObject(object, "unroll", unroll);
        cJSON_AddStringToObject(object, "checksum", result->checksum);
        if (molecular)
            cJSON_AddStringToObject(object, "exclusion_mode",
                                    exclusion_mode_name(result->exclusion_mode));
        cJSON_AddItemToArray(results, object);
    }
    if (run->compare_exclusions) {
        /* Narumi et al., sec. 4.1 (Figs. 10 and 11): each accumulator in both modes. */
        cJSON *comparison = cJSON_AddArrayToObject(document, "exclusion_comparison");
        for (size_t i = 0; i < run->result_count; ++i) {
            cJSON *object = cJSON_CreateObject();
            cJSON_AddStringToObject(object, "accum", run->results[i].accum->name);
            const accuracy_result *both[2] = {&run->results[i], &run->other_mode[i]};
            for (int k = 0; k < 2; ++k) {
                cJSON *mode =
                    cJSON_AddObjectToObject(object, exclusion_mode_name(both[k]->exclusion_mode));
                cli_json_number(mode, "error", both[k]->error);
                cli_json_number(mode, "error_host", both[k]->error_host);
                cli_json_number(mode, "offset", both[k]->offset);
                cli_json_number(mode, "seconds_per_eval", both[k]->seconds_per_eval);
            }
            cJSON_AddItemToArray(comparison, object);
        }
    }
    if (!isnan(options->max_error)) {
        int untimed = 0;
        const accuracy_result *cheapest = cheapest_meeting(run, options->max_error, &untimed);
        cJSON_AddNumberToObject(document, "max_error", options->max_error);
        if (cheapest)
            cJSON_AddStringToObject(document, "cheapest", cheapest->accum->name);
        else
            cJSON_AddNullToObject(document, "cheapest");
        if (untimed)
            cJSON_AddStringToObject(document, "cheapest_unknown",
                                    "no device times (profiling unavailable)");
    }
    cJSON_AddItemReferenceToObject(document, "skipped", run->skipped);
    return cli_print_json(document);
}

static void print_table(const accuracy_run *run, const accuracy_options *options)
{
    const double baseline = float_seconds(run);
    printf("%s, N = %zu, ", run->kernel->name, run->particles.count);
    if (run->kernel->pair_parameters > 0 && run->data.exclusion_count)
        printf("%zu exclusions (results: %s), ", run->data.exclusion_count,
               exclusion_mode_name(run->physics.exclusion_mode));
    else if (run->kernel->pair_parameters > 0)
        printf("no exclusions, ");
    else
        printf("eps = %g, ", options->eps);
    if (options->in)
        printf("%s", options->in);
    else
        printf("%s (seed %lld)", options->system, options->seed);
    printf(", %s positions, on %s\n",
           options->positions == FK_POSITIONS_DOUBLE_SINGLE ? "double-single" : "float",
           fk_context_device(run->context)->name);
    printf("errors against %s\n",
           run->ref_forces ? "ref (G, on the device)" : "the double-precision host reference");
    printf("%-16s %-6s %12s %12s %12s %12s %9s %16s\n", "ACCUM", "LETTER", "ERROR", "ERR HOST",
           "OFFSET", "S/EVAL", "REL TIME", "CHECKSUM");
    for (size_t i = 0; i < run->result_count; ++i) {
        const accuracy_result *result = &run->results[i];
        const double relative = result->seconds_per_eval / baseline;
        char relative_text[32] = "-"; /* float did not run */
        if (isfinite(relative))
            snprintf(relative_text, sizeof relative_text, "%.3f", relative);
        printf("%-16s %-6c %12.4e %12.4e %12.4e %12.4e %9s %16s\n", result->accum->name,
               result->accum->letter, result->error, result->error_host, result->offset,
               result->seconds_per_eval, relative_text, result->checksum);
    }
    if (run->compare_exclusions) {
        printf(
            "\nexclusions (%zu pairs), Narumi et al. sec. 4.1: exclude on the fly vs afterwards\n",
            run->data.exclusion_count);
        printf("%-16s %12s %12s %12s %12s\n", "ACCUM", "ERR FLY", "ERR AFTER", "OFFSET FLY",
               "OFFSET AFTER");
        for (size_t i = 0; i < run->result_count; ++i) {
            const accuracy_result *fly = run->results[i].exclusion_mode == FK_EXCLUDE_ON_THE_FLY
                                             ? &run->results[i]
                                             : &run->other_mode[i];
            const accuracy_result *after =
                fly == &run->results[i] ? &run->other_mode[i] : &run->results[i];
            printf("%-16s %12.4e %12.4e %12.4e %12.4e\n", run->results[i].accum->name, fly->error,
                   after->error, fly->offset, after->offset);
        }
    }
    printf("reference offset (double host): %.4e\n", run->reference_offset);
    if (!isnan(options->max_error)) {
        int untimed = 0;
        const accuracy_result *cheapest = cheapest_meeting(run, options->max_error, &untimed);
        if (cheapest && isfinite(cheapest->seconds_per_eval / baseline))
            printf("cheapest with error <= %.3g: %s (%.3f times float)\n", options->max_error,
                   cheapest->accum->name, cheapest->seconds_per_eval / baseline);
        else if (cheapest)
            printf("cheapest with error <= %.3g: %s (%.4e s per evaluation)\n", options->max_error,
                   cheapest->accum->name, cheapest->seconds_per_eval);
        else if (untimed)
            printf("cheapest with error <= %.3g: unknown (no device times to rank by)\n",
                   options->max_error);
        else
            printf("cheapest with error <= %.3g: none of those run meets it\n", options->max_error);
    }
    fflush(stdout);
}

/* ---------------------------------------------------------------------------------------------- */

/* Checks the combinations of options; returns an exit code. */
static int check_options(accuracy_run *run, accuracy_options *options, const cli_option *table,
                         size_t count)
{
    if (!options->in == !options->system)
        return cli_usage_error("accuracy", "give exactly one of --in FILE and --system NAME");
    if (options->system) {
        if (strcmp(options->system, "plummer") == 0)
            options->system_kind = SYSTEM_PLUMMER;
        else if (strcmp(options->system, "protein") == 0)
            options->system_kind = SYSTEM_PROTEIN;
        else if (strcmp(options->system, "lj65536") == 0)
            options->system_kind = SYSTEM_LJ65536;
        else
            return cli_usage_error("accuracy",
                                   "--system '%s': unknown; available: plummer, protein, lj65536",
                                   options->system);
    }
    if (!options->kernel) {
        if (!options->system)
            return cli_usage_error("accuracy", "--kernel is required with --in");
        options->kernel = options->system_kind == SYSTEM_PLUMMER   ? "ga"
                          : options->system_kind == SYSTEM_PROTEIN ? "ljc_constant"
                                                                   : "lj";
    }
    if (cli_find_kernel("accuracy", options->kernel, &run->kernel))
        return CLI_EXIT_USAGE;
    const fk_accum_info *accums[ACCURACY_MAX_ACCUMULATORS];
    if (strcmp(options->accum, "all") != 0 && parse_accum_list(options->accum, accums) == 0)
        return cli_usage_error("accuracy",
                               "--accum '%s': expected all, or accumulator names "
                               "separated by commas",
                               options->accum);
    const int gravity = cli_kernel_is_gravity(run->kernel->name);
    const int lj_family =
        strcmp(run->kernel->name, "lj") == 0 || strncmp(run->kernel->name, "ljc_", 4) == 0;
    if (options->system_kind == SYSTEM_PLUMMER && !gravity)
        return cli_usage_error("accuracy", "--system plummer is for the gravity kernels");
    if ((options->system_kind == SYSTEM_PROTEIN || options->system_kind == SYSTEM_LJ65536) &&
        !lj_family)
        return cli_usage_error("accuracy", "--system %s is for the lj and ljc_* kernels, not %s",
                               options->system, run->kernel->name);
    const int n_given = cli_option_named(table, count, "n")->given;
    if (options->in && (n_given || cli_option_named(table, count, "seed")->given))
        return cli_usage_error("accuracy", "--n and --seed apply to --system only");
    if (options->system_kind == SYSTEM_PROTEIN) {
        if (n_given && options->n != FKT_PROTEIN_ATOMS)
            return cli_usage_error("accuracy", "--n %lld: the protein system has %d atoms",
                                   options->n, FKT_PROTEIN_ATOMS);
        options->n = FKT_PROTEIN_ATOMS;
    }
    if (options->system_kind == SYSTEM_LJ65536) {
        if (!n_given)
            options->n = FKT_LJ65536_ATOMS;
        if (!cli_option_named(table, count, "reps")->given)
            options->reps = 1; /* N^2 = 4.3e9 pairs an evaluation */
    }
    if (!gravity) {
        if (cli_option_named(table, count, "eps")->given)
            return cli_usage_error("accuracy", "--eps applies to the gravity kernels");
        options->eps = 0.0;
    }
    if (options->system_kind != SYSTEM_NONE &&
        (options->physics.params || options->physics.exclude || options->physics.box))
        return cli_usage_error("accuracy", "--params, --exclude and --box apply to --in; the "
                                           "systems bring their own");
    if (cli_physics_config("accuracy", run->kernel, &options->physics, &run->physics))
        return CLI_EXIT_USAGE;
    if (!cli_parse_format(options->format, &options->file_format))
        return cli_usage_error("accuracy", "--format '%s': expected auto, text or tipsy",
                               options->format);
    return CLI_EXIT_OK;
}

int cmd_accuracy(int argc, char **argv)
{
    accuracy_options options = {.accum = "all",
                                .n = 16384,
                                .seed = 1,
                                .reps = 5,
                                .eps = 0.01,
                                .max_error = NAN,
                                .physics = CLI_PHYSICS_OPTIONS_INIT,
                                .shape = CLI_SHAPE_OPTIONS_INIT};
    cli_option table[] = {
        cli_explained(cli_opt_kernel(&options.kernel), "force law (required with --in)"),
        cli_string("in", "FILE", &options.in, "particles from a file (text or TIPSY)"),
        cli_string("system", "NAME", &options.system, "a synthetic system, as above"),
        cli_int("n", "N", &options.n, 2, 1 << 30,
                "particles of plummer (default 16384) or lj65536 (default 65536)"),
        cli_opt_seed(&options.seed, 0, CLI_MAX_SEED, "seed of the synthetic system (default 1)"),
        cli_explained(
            cli_opt_accum(&options.accum),
            "accumulators, separated by commas, or all (default) that the device supports"),
        cli_opt_eps(&options.eps, "gravitational softening (gravity only; default 0.01)"),
        cli_int("reps", "R", &options.reps, 1, 1000000,
                "timed evaluations per accumulator, median reported (default 5)"),
        cli_opt_format(&options.format),
        cli_opt_reproducible(
            &options.reproducible,
            "run fixed64 and narumi in reproducible mode (correctly rounded divide and\n"
            "sqrt, no contraction: the same pair terms in every kernel and on every device)"),
        cli_opt_device(&options.device),
        cli_double("max-error", "E", &options.max_error, 0, HUGE_VAL,
                   "name the cheapest accumulator (least time per evaluation) whose error is\n"
                   "at most E (JSON: max_error, cheapest; null when none meets it)"),
        cli_opt_json(&options.json),
        cli_opt_positions(&options.positions_name),
        cli_opt_help(&options.help),
        CLI_PHYSICS_OPTION_ENTRIES(options.physics),
        CLI_SHAPE_OPTION_ENTRIES(options.shape),
    };
    const size_t table_count = sizeof table / sizeof table[0];
    static const cli_usage usage = {"accuracy", accuracy_synopsis, 17, accuracy_usage_after};
    int usage_code = CLI_EXIT_OK;
    if (cli_parse_command(&usage, argc, argv, table, table_count, &usage_code))
        return usage_code;
    accuracy_run run = {0};
    if (strcmp(options.shape.unroll, "all") == 0)
        return cli_usage_error("accuracy", "--unroll all: bench measures every unrolling; "
                                           "accuracy runs one (IxJ or auto)");
    if (cli_shape_config("accuracy", &options.shape, &options.shape_eval))
        return CLI_EXIT_USAGE;
    int code = cli_parse_positions("accuracy", options.positions_name, &options.positions);
    if (code == CLI_EXIT_OK)
        code = check_options(&run, &options, table, table_count);
    if (code == CLI_EXIT_OK)
        code = cli_open_context(options.device, &run.context);
    if (code == CLI_EXIT_OK && options.system)
        code = cli_check_fits_device(run.context, (size_t)options.n);
    if (code == CLI_EXIT_OK)
        code = load_particles(&run, &options);
    if (code == CLI_EXIT_OK && options.in)
        code = cli_physics_load("accuracy", run.kernel, &options.physics, &run.particles,
                                &run.physics, &run.data);
    if (code == CLI_EXIT_OK && run.data.exclusion_count) {
        const int slots =
            cli_exclusion_slots(run.data.exclusions, run.data.exclusion_count, run.particles.count);
        if (slots < 0)
            code = cli_report_status(FK_ERR_HOST_MEMORY, NULL);
        run.physics.max_exclusions = slots;
        /* Narumi's comparison, unless one mode was asked for. */
        run.compare_exclusions = options.physics.exclude_mode == NULL;
    }
    if (code != CLI_EXIT_OK) {
        accuracy_run_free(&run);
        return code;
    }
    const size_t count = run.particles.count;
    run.reference_forces = malloc(3 * count * sizeof *run.reference_forces);
    run.method_forces = malloc(3 * count * sizeof *run.method_forces);
    run.method_values = malloc(count * run.kernel->force_components * sizeof *run.method_values);
    run.timings = malloc((size_t)options.reps * sizeof *run.timings);
    run.skipped = cJSON_CreateArray();
    if (!run.reference_forces || !run.method_forces || !run.method_values || !run.timings ||
        !run.skipped) {
        accuracy_run_free(&run);
        return cli_report_status(FK_ERR_HOST_MEMORY, NULL);
    }
    fk_status status = compute_reference(&run, options.eps);
    if (status != FK_OK) {
        cli_error(fk_status_string(status), "the host reference failed%s",
                  status == FK_ERR_INVALID_INPUT ? ": coincident particles with eps = 0 (use --eps)"
                                                 : "");
        code = cli_exit_code(status);
    }
    if (code == CLI_EXIT_OK)
        code = measure_all(&run, &options);
    if (code == CLI_EXIT_OK) {
        if (options.json)
            code = print_json(&run, &options);
        else
            print_table(&run, &options);
        for (size_t i = 0; i < run.result_count; ++i)
            if (!isfinite(run.results[i].error)) {
                cli_error("accuracy", "accumulator %s: the error is not finite",
                          run.results[i].accum->name);
                code = CLI_EXIT_RUNTIME;
            }
    }
    accuracy_run_free(&run);
    return code;
}
