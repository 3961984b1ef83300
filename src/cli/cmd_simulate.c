/* `forcekit simulate`: integration on the device (the library's fk_integrator: velocity Verlet,
 * Langevin, Hermite for gaj) or on the host (src/support/simulate.c's loop, --integrate host), the
 * energy series and its drift, checkpoints and bit-identical restarts. */
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/files.h"
#include "common/stats.h"
#include "support/generate.h"
#include "forcekit/tools.h"
#include "cli/mpi.h"
#include "cli/physics.h"
#include "core/loops/loop.h" /* what the loop reports */
#include "support/simulate.h"
#include "support/systems.h"

static const char simulate_synopsis[] =
    "usage: forcekit simulate --kernel K (--system NAME --n N | --in FILE) --steps S [--dt DT]\n"
    "                         [--accum A] [--integrator verlet|hermite|langevin] [--sample K]\n"
    "                         [--integrate device|host] [--json] [--checkpoint FILE\n"
    "                         [--checkpoint-every K]] [--restart FILE] ...\n\n"
    "Integrates Newton's equations at constant energy (NVE), or Langevin dynamics at a\n"
    "temperature, with positions and velocities in double and the forces from the device with\n"
    "the chosen accumulator, and reports the total energy (kinetic + potential) every K steps,\n"
    "its relative drift and the slope of a linear fit. Progress goes to stderr when it is a\n"
    "terminal.\n\n";

static void simulate_usage_after(FILE *out, const cli_option *options, size_t count)
{
    fputs("\nUnder mpirun (mpirun -np P forcekit simulate ...) the work is spread over the ranks\n"
          "(libforcekit_mpi, docs/mpi.md). The device path (the default): in a periodic box with\n"
          "cells or lists with a skin (--skin S > 0), a molecular kernel, verlet or langevin and\n"
          "no exclusions, each rank keeps the particles of its slab of the box on its own device\n"
          "and steps them there, only halos moving (fk_mpi_integrator). Elsewhere, and with\n"
          "--integrate host, each step's forces are spread over the ranks and every rank\n"
          "integrates all particles on the host the same way (a note says why when the default\n"
          "falls back). With fixed64 the trajectory is the single-device one bit for bit. Rank 0\n"
          "writes the checkpoints, the JSON has the \"mpi\" object, --algorithm auto is the\n"
          "library's built-in choice (no trial runs) and a signal ends the job without a\n"
          "checkpoint.\n\n"
          "molecular options (--box only with --in; lj-fluid's box follows from N and the "
          "density):\n",
          out);
    cli_physics_print_usage(out, options, count);
    cli_print_shape_usage(out, options, count);
    cli_print_kernels(out);
}

typedef struct simulate_options {
    const char *kernel, *accum, *system, *in, *format, *integrator, *algorithm, *device;
    cli_shape_options shape; /* --unroll, --wg, --splits, --tiling, --lanes */
    const char *checkpoint, *restart;
    const char *positions;     /* --positions: float or ds */
    const char *device_timing; /* --device-timing: on or off */
    const char *integrate;     /* --integrate: device or host */
    long long n, steps, seed, sample, checkpoint_every;
    double dt, density, temperature, eps, skin, friction;
    double halo_margin; /* --halo-margin: fk_mpi_integrator_config.margin (0: the library's) */
    int json, help, reproducible;
    cli_physics_options physics;
    struct { /* which options the command line named */
        int steps, accum, n, density, sample, checkpoint_every;
    } given;
} simulate_options;

/* What the options resolve to besides fkt_sim_config: the kind of system and how it runs. */
typedef struct simulate_plan {
    int gravity, fluid, velocities_drawn;
    int auto_algorithm, unroll_given;
    double temperature;
} simulate_plan;

/* SIGINT / SIGTERM: finish the step, write the checkpoint, exit 128 + signal. */
static volatile sig_atomic_t interrupted_by = 0;
static void on_signal(int signal_number)
{
    interrupted_by = signal_number;
    signal(signal_number, SIG_DFL); /* a second one stops at once */
}

typedef struct option_list {
    fkt_sim_option items[FKT_SIM_MAX_OPTIONS];
    size_t count;
} option_list;

static void add_option(option_list *list, const char *key, const char *format, ...)
    CLI_PRINTF(3, 4);
static void add_option(option_list *list, const char *key, const char *format, ...)
{
    if (list->count == FKT_SIM_MAX_OPTIONS)
        return;
    fkt_sim_option *option = &list->items[list->count++];
    snprintf(option->key, sizeof option->key, "%s", key);
    va_list args;
    va_start(args, format);
    vsnprintf(option->value, sizeof option->value, format, args);
    va_end(args);
}

static const char *find_option(const option_list *list, const char *key)
{
    for (size_t o = 0; o < list->count; ++o)
        if (strcmp(list->items[o].key, key) == 0)
            return list->items[o].value;
    return NULL;
}

/* Replaces key's value, or adds the key. */
static void set_option(option_list *list, const char *key, const char *value)
{
    for (size_t o = 0; o < list->count; ++o)
        if (strcmp(list->items[o].key, key) == 0) {
            snprintf(list->items[o].value, sizeof list->items[o].value, "%s", value);
            return;
        }
    add_option(list, key, "%s", value);
}

/* What a checkpoint must share with the run that continues it. */
static const char *const must_match[] = {
    "kernel",  "accum",      "integrator",   "dt",     "system", "n",
    "seed",    "density",    "temperature",  "eps",    "cutoff", "box",
    "coulomb", "dielectric", "exclude_mode", "sample", "skin",   "initial_state"};

typedef struct simulate_run {
    const fk_kernel_info *kernel;
    const fk_accum_info *accum;
    fkt_particle_set particles;
    cli_physics_data physics;
    double box[3];
    fk_context *context;
    int device_timing; /* fk_device_timing, from --device-timing */
    fkt_sim *sim;
    fkt_sim_checkpoint checkpoint;
    int restarting;
    fkt_sim_sample *samples;
    size_t sample_count, sample_capacity;
    /* Wall seconds per step of the steps between two samples (the stepping alone, not the
     * energies): their median is the JSON's seconds_per_step.median_interval. */
    double *intervals;
    size_t interval_count, interval_capacity;
    option_list options;
    int integrate_given;      /* --integrate named: no fallback to the host */
    fk_pair_table pair_table; /* the view of physics.table that config.pair_table points to */
} simulate_run;

static void simulate_run_free(simulate_run *run)
{
    fkt_sim_destroy(run->sim);
    fk_context_destroy(run->context);
    fkt_particle_set_free(&run->particles);
    cli_physics_data_free(&run->physics);
    fkt_sim_checkpoint_free(&run->checkpoint);
    free(run->samples);
    free(run->intervals);
}

/* One interval's seconds per step; a failed allocation only loses the figure. */
static void add_interval(simulate_run *run, double seconds_per_step)
{
    if (run->interval_count == run->interval_capacity) {
        const size_t capacity = run->interval_capacity ? 2 * run->interval_capacity : 64;
        double *grown = realloc(run->intervals, capacity * sizeof *grown);
        if (!grown)
            return;
        run->intervals = grown;
        run->interval_capacity = capacity;
    }
    run->intervals[run->interval_count++] = seconds_per_step;
}

static int add_sample(simulate_run *run, fkt_sim_sample sample)
{
    if (run->sample_count && run->samples[run->sample_count - 1].step == sample.step)
        return 0;
    if (run->sample_count == run->sample_capacity) {
        size_t capacity = run->sample_capacity ? 2 * run->sample_capacity : 1024;
        fkt_sim_sample *grown = realloc(run->samples, capacity * sizeof *grown);
        if (!grown)
            return -1;
        run->samples = grown;
        run->sample_capacity = capacity;
    }
    run->samples[run->sample_count++] = sample;
    return 0;
}

static double monotonic_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

static double total_energy(const fkt_sim_sample *sample)
{
    return sample->kinetic + sample->potential;
}

/* The initial particles with velocities, the periodic box (0 when open). */
static int build_initial(const simulate_options *options, simulate_run *run, double temperature)
{
    char message[1024] = "";
    fk_status status = FK_OK;
    const int layout = fkt_io_layout_for_kernel(run->kernel->name);
    if (options->in) {
        fkt_file_format format;
        if (!cli_parse_format(options->format, &format))
            return cli_usage_error("simulate", "--format '%s': expected auto, text or tipsy",
                                   options->format);
        status = fkt_io_read_particles(options->in, format, (fkt_layout)layout, &run->particles,
                                       message, sizeof message);
        if (status == FK_OK && !run->particles.velocity) {
            status = fkt_generate_velocities(&run->particles, temperature, (uint64_t)options->seed);
            if (status != FK_OK)
                snprintf(message, sizeof message, "cannot draw velocities");
        }
    } else if (strcmp(options->system, "plummer") == 0) {
        status = fkt_generate_plummer((size_t)options->n, (uint64_t)options->seed,
                                      FKT_LAYOUT_XYZM_VEL, &run->particles);
        if (status != FK_OK)
            snprintf(message, sizeof message, "cannot generate a Plummer sphere of %lld bodies",
                     options->n);
    } else {
        status = fkt_generate_lj_fluid((size_t)options->n, options->density, temperature,
                                       (uint64_t)options->seed, (fkt_layout)layout, &run->particles,
                                       run->box);
        if (status != FK_OK)
            snprintf(message, sizeof message,
                     "cannot generate an LJ fluid of %lld particles at density %g", options->n,
                     options->density);
    }
    if (status != FK_OK) {
        cli_error(fk_status_string(status), "%s", message);
        return cli_exit_code(status);
    }
    return CLI_EXIT_OK;
}

/* Compares the checkpoint's options with this run's; pins the variant it ran with. Reports and
 * returns 2 on a mismatch. */
static int check_restart(const simulate_options *options, simulate_run *run, fkt_sim_config *config,
                         int *auto_algorithm, int unroll_given)
{
    const fkt_sim_checkpoint *checkpoint = &run->checkpoint;
    /* Options that checkpoints of earlier versions lack, with the value those runs had. */
    static const struct {
        const char *key, *absent;
    } added_later[] = {
        {"positions", "float"}, {"reproducible", "0"}, {"integrate", "host"}, {"friction", "0"}};
    const size_t must = sizeof must_match / sizeof must_match[0];
    for (size_t k = 0; k < must + sizeof added_later / sizeof added_later[0]; ++k) {
        const char *key = k < must ? must_match[k] : added_later[k - must].key;
        const char *here = find_option(&run->options, key);
        const char *there = fkt_sim_checkpoint_option(checkpoint, key);
        if (!there && k >= must)
            there = added_later[k - must].absent;
        if (!there || !here || strcmp(here, there) != 0) {
            cli_error("simulate",
                      "checkpoint %s does not match this run: %s is '%s' there and '%s' here "
                      "(restart with the options of the run that wrote it)",
                      options->restart, key, there ? there : "(missing)",
                      here ? here : "(missing)");
            return CLI_EXIT_USAGE;
        }
    }
    if (checkpoint->n != run->particles.count ||
        checkpoint->has_jerk != (config->integrator == FKT_INTEGRATOR_HERMITE)) {
        cli_error("simulate", "checkpoint %s holds %zu particles%s; this run has %zu%s",
                  options->restart, checkpoint->n, checkpoint->has_jerk ? " with jerks" : "",
                  run->particles.count,
                  config->integrator == FKT_INTEGRATOR_HERMITE ? " with jerks" : "");
        return CLI_EXIT_USAGE;
    }
    if (checkpoint->step > (uint64_t)options->steps) {
        cli_error("simulate", "checkpoint %s is at step %" PRIu64 ", beyond --steps %lld",
                  options->restart, checkpoint->step, options->steps);
        return CLI_EXIT_USAGE;
    }
    /* The pair loop and the kernel variant change the rounding: run what the checkpoint ran. */
    const char *algorithm = fkt_sim_checkpoint_option(checkpoint, "algorithm");
    fk_algorithm stored;
    if (!algorithm || fk_algorithm_find(algorithm, &stored) != FK_OK) {
        cli_error("simulate", "checkpoint %s names no known algorithm", options->restart);
        return CLI_EXIT_USAGE;
    }
    if (!*auto_algorithm && (fk_algorithm)config->eval.algorithm != stored) {
        cli_error("simulate",
                  "checkpoint %s does not match this run: algorithm is '%s' there and "
                  "'%s' here",
                  options->restart, algorithm, fk_algorithm_name(config->eval.algorithm));
        return CLI_EXIT_USAGE;
    }
    *auto_algorithm = 0;
    config->eval.algorithm = (int)stored;
    const char *unroll = fkt_sim_checkpoint_option(checkpoint, "unroll");
    int unroll_i = 0, unroll_j = 0;
    if (!unroll || !cli_parse_unroll(unroll, &unroll_i, &unroll_j) || !unroll_i) {
        cli_error("simulate", "checkpoint %s names no kernel variant", options->restart);
        return CLI_EXIT_USAGE;
    }
    if (unroll_given && (config->eval.unroll_i != unroll_i || config->eval.unroll_j != unroll_j)) {
        cli_error("simulate",
                  "checkpoint %s does not match this run: unroll is %s there and %dx%d "
                  "here",
                  options->restart, unroll, config->eval.unroll_i, config->eval.unroll_j);
        return CLI_EXIT_USAGE;
    }
    config->eval.unroll_i = unroll_i;
    config->eval.unroll_j = unroll_j;
    long long value = 0;
    const char *text = fkt_sim_checkpoint_option(checkpoint, "work_group_size");
    if (text && cli_parse_long(text, &value) && value > 0 && value <= 4096)
        config->eval.work_group_size = (int)value;
    text = fkt_sim_checkpoint_option(checkpoint, "local_tiling");
    if (text && cli_parse_long(text, &value))
        config->eval.local_tiling = value ? 1 : -1;
    text = fkt_sim_checkpoint_option(checkpoint, "j_splits");
    if (text && cli_parse_long(text, &value) && value > 0 && value <= (1 << 20))
        config->eval.j_splits = (int)value;
    /* The lane form too: the pinned unroll_j above alone asks for the scalar walk (and, on CPUs,
     * the neighbors loop's half lists), a different variant from the one the checkpoint ran:
     * other rounding, and twice the step time on POCL. Checkpoints from before this option keep
     * the old choice (lanes automatic under the pinned unrolling). */
    text = fkt_sim_checkpoint_option(checkpoint, "lanes");
    if (text && cli_parse_long(text, &value) && value >= 0 && value <= 64)
        config->eval.lanes = value > 0 ? (int)value : -1;
    return CLI_EXIT_OK;
}

static void note_device(const simulate_options *options, simulate_run *run)
{
    const char *device = fkt_sim_checkpoint_option(&run->checkpoint, "device");
    const char *here = fk_context_device(run->context)->name;
    if (device && strcmp(device, here) != 0)
        fprintf(stderr,
                "forcekit: warning: checkpoint %s was written on %s; continuing on %s (the "
                "run goes on, but bit-identity with an uninterrupted run holds only on one "
                "device)\n",
                options->restart, device, here);
}

static void progress(const simulate_run *run, uint64_t target, uint64_t first, double started,
                     int final)
{
    const double elapsed = monotonic_seconds() - started;
    const uint64_t step = run->sim->step, done = step - first;
    const double rate = elapsed > 0 ? (double)done / elapsed : 0;
    const double e0 = total_energy(&run->samples[0]);
    const double last = total_energy(&run->samples[run->sample_count - 1]);
    fprintf(stderr,
            "\rsimulate: step %" PRIu64 " of %" PRIu64 " (%3.0f%%), E/E0 - 1 = %+.3e, "
            "%.0f steps/s, %.0f s left   %s",
            step, target, target ? 100.0 * (double)step / (double)target : 100.0,
            e0 != 0 ? last / e0 - 1 : NAN, rate, rate > 0 ? (double)(target - step) / rate : 0.0,
            final ? "\n" : "");
    fflush(stderr);
}

static int write_checkpoint(const simulate_options *options, simulate_run *run)
{
    char message[1024] = "";
    /* The device path: the state comes back now (under mpirun collective: every rank). */
    fk_status status = fkt_sim_sync(run->sim);
    if (status != FK_OK) {
        cli_error(fk_status_string(status), "%s", run->sim->message);
        return cli_exit_code(status);
    }
    if (cli_mpi_rank() != 0) /* under mpirun every rank holds the same state: rank 0 writes it */
        return CLI_EXIT_OK;
    /* The ranks' integrator gives no forces: the accelerations are written as zeros, and a
     * restart computes them again (under mpirun: restore_checkpoint). */
    if (run->sim->backend_integrator)
        set_option(&run->options, "forces", "recomputed");
    double bound[2] = {0, 0};
    if (fkt_sim_on_device(run->sim) &&
        fk_eval_get_bound(run->sim->eval, &bound[0], &bound[1]) == FK_OK) {
        /* fixed64's scale of the device path is kept from its last choice: a restart sets it */
        char text[96];
        snprintf(text, sizeof text, "%a %a", bound[0], bound[1]);
        set_option(&run->options, "accum_bound", text);
    }
    status = fkt_sim_checkpoint_write(options->checkpoint, run->sim, run->options.items,
                                      run->options.count, run->samples, run->sample_count, message,
                                      sizeof message);
    if (status != FK_OK) {
        cli_error(fk_status_string(status), "%s", message);
        return cli_write_exit_code(status);
    }
    return CLI_EXIT_OK;
}

static cJSON *number_array(const fkt_sim_sample *samples, size_t count, int which, double dt)
{
    cJSON *array = cJSON_CreateArray();
    for (size_t s = 0; array && s < count; ++s) {
        double value = which == 0   ? (double)samples[s].step
                       : which == 1 ? (double)samples[s].step * dt
                       : which == 2 ? samples[s].kinetic
                       : which == 3 ? samples[s].potential
                                    : total_energy(&samples[s]);
        cJSON_AddItemToArray(array,
                             isfinite(value) ? cJSON_CreateNumber(value) : cJSON_CreateNull());
    }
    return array;
}

typedef struct loop_stats {
    double seconds, device_seconds;
    uint64_t first_step, steps_run;
    fkt_sim_timing timing;
} loop_stats;

/* Under mpirun: the "mpi" object of the JSON document (rank 0's). */
static cJSON *mpi_figures;

/* timing: wall seconds of the step loop (this invocation), and where they went */
static void add_timing(cJSON *document, const simulate_run *run, const loop_stats *stats)
{
    const fkt_sim *sim = run->sim;
    cli_json_number(document, "seconds", stats->seconds);
    cli_json_number(document, "steps_per_second",
                    stats->seconds > 0 ? (double)stats->steps_run / stats->seconds : NAN);
    const double per_step = stats->steps_run ? 1.0 / (double)stats->steps_run : NAN;
    cJSON *timing = cJSON_AddObjectToObject(document, "seconds_per_step");
    cli_json_number(timing, "total", stats->seconds * per_step);
    /* the median over the intervals between samples of their stepping alone: what a step
     * costs without the energies, the chunks' first-call overheads and a slow interval */
    double *intervals = malloc((run->interval_count + 1) * sizeof *intervals);
    if (intervals && run->interval_count)
        memcpy(intervals, run->intervals, run->interval_count * sizeof *intervals);
    cli_json_number(timing, "median_interval",
                    intervals ? fk__median(intervals, run->interval_count) : NAN);
    free(intervals);
    cJSON_AddNumberToObject(timing, "intervals", (double)run->interval_count);
    cli_json_number(timing, "device", stats->device_seconds * per_step);
    /* the device path has no host phases: null there */
    const double phases = fkt_sim_on_device(sim) ? NAN : per_step;
    cli_json_number(timing, "update", stats->timing.update * phases);
    cli_json_number(timing, "compute", stats->timing.compute * phases);
    cli_json_number(timing, "read", stats->timing.read * phases);
    cli_json_number(timing, "host_overhead", (stats->seconds - stats->device_seconds) * per_step);
}

static int print_json(const simulate_options *options, const simulate_run *run,
                      const fkt_sim_config *config, const loop_stats *stats)
{
    const fkt_sim *sim = run->sim;
    const double dt = config->dt;
    const fkt_sim_sample *first = &run->samples[0], *last = &run->samples[run->sample_count - 1];
    const double e0 = total_energy(first), e_end = total_energy(last);
    const double slope = fkt_sim_energy_slope(run->samples, run->sample_count, dt);
    double deviation = 0;
    for (size_t s = 0; s < run->sample_count; ++s)
        deviation = fmax(deviation, fabs(total_energy(&run->samples[s]) - e0));
    fk_variant variant = {0};
    fk_eval_get_variant(sim->eval, &variant);
    char unroll[CLI_UNROLL_NAME_SIZE];
    cli_unroll_name(variant.unroll_i, variant.unroll_j, unroll);

    cJSON *document = cJSON_CreateObject();
    cJSON_AddStringToObject(document, "kernel", run->kernel->name);
    cJSON_AddStringToObject(document, "accum", run->accum->name);
    cJSON_AddBoolToObject(document, "reproducible", options->reproducible != 0);
    cJSON_AddStringToObject(document, "positions", find_option(&run->options, "positions"));
    cJSON_AddStringToObject(document, "integrator", fkt_integrator_name(config->integrator));
    cJSON_AddStringToObject(document, "integrate", fkt_sim_on_device(sim) ? "device" : "host");
    uint64_t counters[3];
    if (sim->integrator && fk_integrator_counters(sim->integrator, &counters[0], &counters[1],
                                                  &counters[2]) == FK_OK) {
        /* since this invocation's create: the lists' builds and fixed64 scales it asked for,
         * and the host's waits for its flags */
        cJSON *figures = cJSON_AddObjectToObject(document, "device_integrator");
        cJSON_AddNumberToObject(figures, "rebuilds", (double)counters[0]);
        cJSON_AddNumberToObject(figures, "rescales", (double)counters[1]);
        cJSON_AddNumberToObject(figures, "syncs", (double)counters[2]);
    }
    if (config->integrator == FKT_INTEGRATOR_LANGEVIN) {
        cli_json_number(document, "bath_temperature", config->temperature);
        cli_json_number(document, "friction", config->friction);
        /* 2 <K> / (3 N k_B) over the samples after the first (Langevin does not keep the total
         * momentum: 3N degrees of freedom) */
        double kinetic = 0;
        for (size_t s = 1; s < run->sample_count; ++s)
            kinetic += run->samples[s].kinetic;
        cli_json_number(document, "mean_temperature",
                        run->sample_count > 1 ? 2.0 * kinetic / (double)(run->sample_count - 1) /
                                                    (3.0 * (double)sim->n)
                                              : NAN);
    }
    cJSON_AddStringToObject(document, "algorithm", fk_algorithm_name(fkt_sim_algorithm(sim)));
    cJSON_AddStringToObject(document, "system", find_option(&run->options, "system"));
    cJSON_AddNumberToObject(document, "n", (double)sim->n);
    cJSON_AddNumberToObject(document, "steps", (double)sim->step);
    cJSON_AddNumberToObject(document, "steps_run", (double)stats->steps_run);
    if (run->restarting)
        cJSON_AddNumberToObject(document, "restarted_from_step", (double)stats->first_step);
    else
        cJSON_AddNullToObject(document, "restarted_from_step");
    cli_json_number(document, "dt", dt);
    cli_json_number(document, "time", (double)sim->step * dt);
    cJSON_AddStringToObject(document, "device", fk_context_device(run->context)->name);
    cJSON_AddStringToObject(document, "unroll", unroll);
    cJSON_AddStringToObject(document, "variant_source", cli_variant_source_token(variant.source));
    cJSON_AddNumberToObject(document, "work_group_size", variant.work_group_size);
    cJSON_AddNumberToObject(document, "j_splits", variant.j_splits);
    cJSON_AddNumberToObject(document, "lanes", variant.lanes);
    if (fk__loop_reports_grid(variant.algorithm)) {
        /* builds of the cells (and lists), the first included: with a skin, how often the
         * particles moved skin / 2; without, one per evaluation */
        cJSON_AddNumberToObject(document, "rebuilds", (double)variant.cell_rebuilds);
        cli_json_number(document, "skin", variant.cell_skin);
        cJSON_AddNumberToObject(document, "pairs_examined", (double)variant.pairs_examined);
        cli_json_number(document, "last_build_device_seconds", variant.cell_build_seconds);
        if (fk__loop_reports_lists(variant.algorithm))
            cJSON_AddBoolToObject(document, "neighbor_half_lists", variant.neighbor_half_lists);
    }
    cJSON_AddNumberToObject(document, "seed", (double)options->seed);
    if (sim->periodic) {
        cJSON *box = cJSON_AddArrayToObject(document, "box");
        for (int k = 0; k < 3; ++k)
            cJSON_AddItemToArray(box, cJSON_CreateNumber(config->eval.box[k]));
    } else {
        cJSON_AddNullToObject(document, "box");
    }
    if (sim->gravity)
        cli_json_number(document, "eps", config->eval.eps);
    else
        cli_json_number(document, "cutoff", config->eval.cutoff);
    add_timing(document, run, stats);
    /* energy */
    cli_json_number(document, "initial_energy", e0);
    cli_json_number(document, "final_energy", e_end);
    cli_json_number(document, "relative_energy_drift", fabs(e_end - e0) / fabs(e0));
    cli_json_number(document, "max_relative_energy_deviation", deviation / fabs(e0));
    cli_json_number(document, "energy_slope_per_time", slope);
    cli_json_number(document, "energy_slope_per_step", slope * dt);
    cli_json_number(document, "relative_energy_slope_per_time", slope / fabs(e0));
    cJSON_AddStringToObject(document, "energy",
                            sim->gravity ? "kinetic 1/2 sum m v^2 + potential 1/2 sum m phi"
                                         : "kinetic 1/2 sum v^2 (unit masses) + potential "
                                           "sum_i 1/2 sum_j U_ij");
    cJSON_AddNumberToObject(document, "sample_every", (double)options->sample);
    cJSON *samples = cJSON_AddObjectToObject(document, "samples");
    static const char *const names[] = {"step", "time", "kinetic", "potential", "energy"};
    for (int w = 0; w < 5; ++w)
        cJSON_AddItemToObject(samples, names[w],
                              number_array(run->samples, run->sample_count, w, dt));
    /* the final state: equal checksums, equal bits */
    double *state = malloc(6 * sim->n * sizeof *state);
    if (state) {
        memcpy(state, sim->position, 3 * sim->n * sizeof *state);
        memcpy(state + 3 * sim->n, sim->velocity, 3 * sim->n * sizeof *state);
        char checksum[CLI_CHECKSUM_SIZE];
        cli_checksum(state, 6 * sim->n, checksum);
        cJSON_AddStringToObject(document, "state_checksum", checksum);
        free(state);
    }
    if (sim->trial_count) {
        cJSON *trials = cJSON_AddArrayToObject(document, "algorithm_trials");
        for (size_t t = 0; t < sim->trial_count; ++t) {
            cJSON *trial = cJSON_CreateObject();
            cJSON_AddStringToObject(trial, "algorithm",
                                    fk_algorithm_name(sim->trials[t].algorithm));
            cli_json_number(trial, "seconds_per_step", sim->trials[t].seconds_per_step);
            if (sim->trials[t].status != FK_OK)
                cJSON_AddStringToObject(trial, "skipped", sim->trials[t].note);
            cJSON_AddItemToArray(trials, trial);
        }
    }
    if (options->checkpoint)
        cJSON_AddStringToObject(document, "checkpoint", options->checkpoint);
    if (mpi_figures) { /* the document owns it now */
        cJSON_AddItemToObject(document, "mpi", mpi_figures);
        mpi_figures = NULL;
    }
    return cli_print_json(document);
}

/* The options a restart must match (and the fingerprint of the initial state). density: the
 * fluid's, else 0; temperature_used: velocities were drawn at it or it is Langevin's bath. */
static void record_options(const simulate_options *options, simulate_run *run,
                           const fkt_sim_config *config, double temperature, double density,
                           int temperature_used)
{
    option_list *list = &run->options;
    add_option(list, "kernel", "%s", run->kernel->name);
    add_option(list, "accum", "%s", run->accum->name);
    add_option(list, "reproducible", "%d", options->reproducible != 0);
    add_option(list, "positions", "%s", fk_positions_name((fk_positions)config->eval.positions));
    add_option(list, "integrator", "%s", fkt_integrator_name(config->integrator));
    add_option(list, "dt", "%.17g", config->dt);
    add_option(list, "system", "%s", options->in ? "file" : options->system);
    add_option(list, "input", "%s", options->in ? options->in : "-");
    add_option(list, "n", "%zu", run->particles.count);
    add_option(list, "seed", "%lld", options->seed);
    add_option(list, "density", "%.17g", density);
    add_option(list, "temperature", "%.17g", temperature_used ? temperature : 0.0);
    add_option(list, "friction", "%.17g",
               config->integrator == FKT_INTEGRATOR_LANGEVIN ? config->friction : 0.0);
    add_option(list, "integrate", "%s", config->device ? "device" : "host");
    add_option(list, "eps", "%.17g", config->eval.eps);
    add_option(list, "cutoff", "%.17g", config->eval.cutoff);
    add_option(list, "box", "%.17g,%.17g,%.17g", config->eval.box[0], config->eval.box[1],
               config->eval.box[2]);
    add_option(list, "coulomb", "%.17g", config->eval.coulomb);
    add_option(list, "dielectric", "%.17g,%.17g,%.17g,%.17g", config->eval.dielectric[0],
               config->eval.dielectric[1], config->eval.dielectric[2], config->eval.dielectric[3]);
    add_option(list, "exclude_mode", "%d", config->eval.exclusion_mode);
    add_option(list, "sample", "%lld", options->sample);
    add_option(list, "skin", "%.17g", config->eval.skin);
    add_option(list, "initial_state", "%016" PRIx64,
               fkt_sim_fingerprint(&run->particles, config->eval.box, config->pair_table,
                                   run->kernel->pair_parameters, config->exclusions,
                                   config->exclusion_count));
}

/* --integrate and --friction: config.device (the library's integrator; under mpirun
 * fk_mpi_integrator through the backend), the friction and Langevin's seed (--seed). */
static int parse_integrate(const simulate_options *options, simulate_run *run,
                           fkt_sim_config *config, int gravity)
{
    const int langevin = config->integrator == FKT_INTEGRATOR_LANGEVIN;
    run->integrate_given = options->integrate != NULL;
    config->device = 1;
    if (options->integrate && strcmp(options->integrate, "host") == 0)
        config->device = 0;
    else if (options->integrate && strcmp(options->integrate, "device") != 0)
        return cli_usage_error("simulate", "--integrate '%s': expected device or host",
                               options->integrate);
    /* Under mpirun the device path is fk_mpi_integrator (each rank's slab on its device) where
     * it takes the case; create_sim falls back to the host path with replicated data elsewhere. */
    if (langevin && gravity)
        return cli_usage_error("simulate", "--integrator langevin is for the molecular kernels");
    if (langevin && !config->device)
        return cli_usage_error("simulate", "--integrator langevin runs on the device integrator "
                                           "only (--integrate device)");
    if (!isnan(options->friction) && !langevin)
        return cli_usage_error("simulate", "--friction applies to --integrator langevin");
    config->friction = isnan(options->friction) ? 1.0 : options->friction;
    if (langevin && !(config->friction > 0))
        return cli_usage_error("simulate", "--friction must be > 0");
    config->seed = (uint64_t)options->seed;
    return CLI_EXIT_OK;
}

/* The simulation on the opened context. The device path falls back to the host loop when the
 * device cannot run it (no fp64, gravity without softening) unless --integrate device was given
 * or the integrator is Langevin; a restart must then have been written by the host loop too. */
static int create_sim(const simulate_options *options, simulate_run *run, fkt_sim_config *config)
{
    char message[1024] = "";
    fk_status status =
        fkt_sim_create(run->context, config, &run->particles, &run->sim, message, sizeof message);
    if (status == FK_ERR_UNSUPPORTED && config->device && !run->integrate_given &&
        config->integrator != FKT_INTEGRATOR_LANGEVIN) {
        if (cli_mpi_rank() == 0)
            fprintf(stderr, "forcekit: note: simulate: integrating on the host (%s)\n", message);
        config->device = 0;
        set_option(&run->options, "integrate", "host");
        status = fkt_sim_create(run->context, config, &run->particles, &run->sim, message,
                                sizeof message);
    }
    if (status != FK_OK) {
        cli_error(fk_status_string(status), "%s", message);
        return cli_exit_code(status);
    }
    const char *there = fkt_sim_checkpoint_option(&run->checkpoint, "integrate");
    const char *here = config->device ? "device" : "host";
    if (run->restarting && strcmp(there ? there : "host", here) != 0) {
        cli_error("simulate",
                  "checkpoint %s does not match this run: integrate is '%s' there and '%s' "
                  "here (the device cannot run the device path)",
                  options->restart, there ? there : "host", here);
        return CLI_EXIT_USAGE;
    }
    /* A checkpoint of the device path under mpirun holds no forces: only that path, which
     * computes them again, can continue it (the single device's restart writes them back). */
    const char *forces = fkt_sim_checkpoint_option(&run->checkpoint, "forces");
    if (run->restarting && forces && strcmp(forces, "recomputed") == 0 &&
        !run->sim->backend_integrator) {
        cli_error("simulate",
                  "checkpoint %s was written under mpirun by the device path and holds no "
                  "forces: restart it under mpirun with the device path",
                  options->restart);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* A checkpoint's state into the simulation (the device path: with its fixed64 bound). */
static int restore_checkpoint(const simulate_options *options, simulate_run *run)
{
    const fkt_sim_checkpoint *checkpoint = &run->checkpoint;
    double bound[2];
    const char *text = fkt_sim_checkpoint_option(checkpoint, "accum_bound");
    const int has_bound = text && sscanf(text, "%la %la", &bound[0], &bound[1]) == 2;
    fk_status status =
        fkt_sim_restore(run->sim, checkpoint->step, checkpoint->position, checkpoint->velocity,
                        checkpoint->acceleration, checkpoint->jerk, has_bound ? bound : NULL);
    if (status != FK_OK) {
        cli_error(fk_status_string(status), "%s (%s)", run->sim->message, options->restart);
        return cli_exit_code(status);
    }
    return CLI_EXIT_OK;
}

/* The step loop, to the target or a signal. The host path goes one step at a time; the device
 * path in chunks that end at the samples and the checkpoints and are sized to take about a
 * tenth of a second, so that progress lines and signals are seen between them. */
static fk_status step_loop(const simulate_options *options, simulate_run *run, int show_progress,
                           uint64_t first_step, double started)
{
    const uint64_t target = (uint64_t)options->steps;
    const uint64_t sample_every = (uint64_t)options->sample;
    const uint64_t checkpoint_every = (uint64_t)options->checkpoint_every;
    fkt_sim *sim = run->sim;
    uint64_t chunk = 1;
    double shown = started;
    double interval_seconds = 0; /* the stepping since the last sample */
    uint64_t interval_steps = 0;
    fk_status status = FK_OK;
    while (sim->step < target && !interrupted_by) {
        uint64_t stop = (sim->step / sample_every + 1) * sample_every;
        if (options->checkpoint && (sim->step / checkpoint_every + 1) * checkpoint_every < stop)
            stop = (sim->step / checkpoint_every + 1) * checkpoint_every;
        if (stop > target)
            stop = target;
        if (stop > sim->step + chunk)
            stop = sim->step + chunk;
        const double before = monotonic_seconds();
        const uint64_t steps = stop - sim->step;
        status = fkt_sim_advance(sim, steps);
        if (status != FK_OK)
            break;
        const double took = monotonic_seconds() - before;
        interval_seconds += took;
        interval_steps += steps;
        if (fkt_sim_on_device(sim) && took < 0.05 && chunk < ((uint64_t)1 << 20))
            chunk *= 2;
        else if (took > 0.2 && chunk > 1)
            chunk /= 2;
        if (sim->backend_integrator) /* every rank steps the same chunks: rank 0's */
            chunk = cli_mpi_rank0_count(chunk);
        const uint64_t step = sim->step;
        if (step % sample_every == 0) {
            add_interval(run, interval_seconds / (double)interval_steps);
            interval_seconds = 0;
            interval_steps = 0;
            fkt_sim_sample sample = {.step = step};
            status = fkt_sim_energy(sim, &sample.kinetic, &sample.potential);
            if (status != FK_OK)
                break;
            if (add_sample(run, sample) != 0) {
                status = FK_ERR_HOST_MEMORY;
                snprintf(sim->message, sizeof sim->message, "out of memory for samples");
                break;
            }
        }
        /* A periodic checkpoint that cannot be written (a full disk) costs only the restart
         * point: the run goes on, and the final checkpoint is tried again at the end. */
        if (options->checkpoint && step % checkpoint_every == 0 && step != target &&
            write_checkpoint(options, run) != CLI_EXIT_OK)
            fprintf(stderr,
                    "forcekit: warning: simulate: checkpoint at step %" PRIu64
                    " not written; continuing\n",
                    step);
        if (show_progress && monotonic_seconds() - shown > 0.25) {
            progress(run, target, first_step, started, 0);
            shown = monotonic_seconds();
        }
    }
    return status;
}

/* Parses the command line into options (and which of them were given); with --help prints the
 * usage. Returns 1 when the command is done (*code: 0 after the help, 2 after a usage error). */
static int parse_options(int argc, char **argv, simulate_options *options, int *code)
{
    cli_option table[] = {
        cli_explained(cli_opt_kernel(&options->kernel),
                      "lj, ljc_*, buck (velocity Verlet, unit masses), ga (Verlet), gaj (Hermite)"),
        cli_string("system", "NAME", &options->system,
                   "lj-fluid (molecular kernels; fcc start, Maxwell-Boltzmann velocities,\n"
                   "periodic cubic box) or plummer (ga, gaj; N-body units); default lj-fluid\n"
                   "for the molecular kernels, plummer for gravity"),
        cli_int("n", "N", &options->n, 1, 1 << 30, "particles of the system"),
        cli_string("in", "FILE", &options->in,
                   "start from a particle file instead (gaj files carry velocities; for the\n"
                   "others they are drawn at --temperature; add --box for a periodic box)"),
        cli_int("steps", "S", &options->steps, 0, 1e15,
                "the step to integrate to (a restart continues up to S)"),
        cli_double("dt", "DT", &options->dt, 0, HUGE_VAL,
                   "time step (default 0.005 molecular, 0.001 gravity)"),
        cli_explained(cli_opt_accum(&options->accum),
                      "accumulator of the forces and potentials (default float)"),
        cli_opt_reproducible(
            &options->reproducible,
            "fixed64 with correctly rounded divide and sqrt: the forces, and so the\n"
            "trajectory, are the same bits on every device and with every pair loop"),
        cli_explained(cli_opt_positions(&options->positions),
                      "float (default) or ds: the device's coordinates as float pairs (48\n"
                      "bits; with --accum ref the forces agree with double to about 1e-14;\n"
                      "open boundaries, all-pairs and symmetric; docs/precision.md)"),
        cli_string("integrator", "I", &options->integrator,
                   "verlet (default; kick-drift-kick), hermite (4th order, gaj only; the\n"
                   "default for gaj) or langevin (BAOAB at --temperature with --friction;\n"
                   "molecular kernels, --integrate device)"),
        cli_string("integrate", "W", &options->integrate,
                   "device (default: the state stays on the device, which integrates;\n"
                   "needs fp64: without it, or under mpirun where the ranks cannot divide\n"
                   "the case, the run falls back to host with a note) or host (positions\n"
                   "and velocities on the host, forces read every step)"),
        cli_double("friction", "G", &options->friction, 0, HUGE_VAL,
                   "langevin: the friction gamma in 1/time (default 1.0)"),
        cli_double("density", "D", &options->density, 0, HUGE_VAL,
                   "lj-fluid number density (default 0.8)"),
        cli_double("temperature", "T", &options->temperature, 0, HUGE_VAL,
                   "lj-fluid initial temperature (default 1.0); for files without\n"
                   "velocities (default 1.0 molecular, 0 gravity: at rest); langevin:\n"
                   "also the bath's k_B T"),
        cli_opt_seed(&options->seed, 0, CLI_MAX_SEED,
                     "seed of the system, of drawn velocities and of Langevin's noise\n"
                     "(default 1)"),
        cli_opt_eps(&options->eps, "gravitational softening (default 0.01)"),
        cli_int("sample", "K", &options->sample, 1, 1e15,
                "record the energy every K steps (default: steps / 1000, at least 1)"),
        cli_explained(cli_opt_algorithm(&options->algorithm),
                      "auto (default: time a few steps of each pair loop the kernel supports\n"
                      "and keep the fastest: all-pairs, symmetric, cells, neighbors),\n"
                      "all-pairs, symmetric, cells or neighbors"),
        cli_help_line("unroll", "IxJ",
                      "kernel variant (default auto: the tuned choice); --wg, --splits,\n"
                      "--tiling, --lanes: the rest of the shape (below)"),
        CLI_SHAPE_OPTION_ENTRIES(options->shape),
        cli_double("skin", "S", &options->skin, 0, HUGE_VAL,
                   "cells, neighbors: keep the cells (and lists) until a particle moved S/2\n"
                   "(default: rebuild every step, so a restart is bit-identical; with a\n"
                   "skin the rounding depends on when they were built and it is not)"),
        cli_double("halo-margin", "L", &options->halo_margin, 0, HUGE_VAL,
                   "under mpirun on the device: the halo beyond cutoff + skin (default 0: twice\n"
                   "the cutoff); wider means a thicker halo moved every step and fewer\n"
                   "redistributions (docs/mpi.md)"),
        cli_string("checkpoint", "FILE", &options->checkpoint,
                   "write the state here every --checkpoint-every steps (default steps/10),\n"
                   "at the end and on SIGINT/SIGTERM (then exit 130/143), atomically"),
        cli_int("checkpoint-every", "K", &options->checkpoint_every, 1, 1e15,
                NULL), /* described with --checkpoint */
        cli_string("restart", "FILE", &options->restart,
                   "continue from a checkpoint with the same options (bit-identical to an\n"
                   "uninterrupted run on the same device); a mismatch exits 2"),
        cli_opt_device(&options->device),
        cli_opt_device_timing(&options->device_timing,
                              "on (default) or off: off creates the device's queue without OpenCL\n"
                              "event profiling, which costs some drivers host time per command\n"
                              "(NVIDIA's on an H200: 8-29 us a step); the report's device seconds\n"
                              "are then null. The trajectory is the same either way"),
        cli_explained(cli_opt_json(&options->json),
                      "print the result as one JSON document on standard output"),
        cli_string("format", "F", &options->format, NULL), /* the input format: not in the help */
        CLI_PHYSICS_OPTION_ENTRIES(options->physics),
        cli_opt_help(&options->help),
    };
    const size_t table_size = sizeof table / sizeof table[0];
    static const cli_usage usage = {"simulate", simulate_synopsis, 20, simulate_usage_after};
    if (cli_parse_command(&usage, argc, argv, table, table_size, code))
        return 1;
    options->given.steps = cli_option_named(table, table_size, "steps")->given;
    options->given.accum = cli_option_named(table, table_size, "accum")->given;
    options->given.n = cli_option_named(table, table_size, "n")->given;
    options->given.density = cli_option_named(table, table_size, "density")->given;
    options->given.sample = cli_option_named(table, table_size, "sample")->given;
    options->given.checkpoint_every =
        cli_option_named(table, table_size, "checkpoint-every")->given;
    if (!options->kernel)
        *code = cli_usage_error("simulate", "--kernel is required");
    else if (!options->given.steps)
        *code = cli_usage_error("simulate", "--steps is required");
    else if (options->reproducible && !options->given.accum) /* reproducible sums in fixed64 */
        options->accum = "fixed64";
    else if (options->reproducible && strcmp(options->accum, "fixed64") != 0)
        *code = cli_usage_error("simulate", "--reproducible uses the fixed64 accumulator, not %s",
                                options->accum);
    return *code != CLI_EXIT_OK;
}

/* The evaluation's accumulator options, the integrator and where it runs. */
static int configure_integration(const simulate_options *options, simulate_run *run,
                                 fkt_sim_config *config, const simulate_plan *plan)
{
    config->eval.kernel = run->kernel->name;
    config->eval.accum = run->accum->name;
    config->eval.reproducible = options->reproducible;
    if (cli_parse_positions("simulate", options->positions, &config->eval.positions))
        return CLI_EXIT_USAGE;
    if (cli_parse_device_timing("simulate", options->device_timing, FK_DEVICE_TIMING_ON,
                                &run->device_timing))
        return CLI_EXIT_USAGE;
    config->integrator =
        strcmp(run->kernel->name, "gaj") == 0 ? FKT_INTEGRATOR_HERMITE : FKT_INTEGRATOR_VERLET;
    if (options->integrator && !fkt_integrator_find(options->integrator, &config->integrator))
        return cli_usage_error("simulate",
                               "--integrator '%s': expected verlet, hermite or langevin",
                               options->integrator);
    if (config->integrator == FKT_INTEGRATOR_HERMITE && strcmp(run->kernel->name, "gaj") != 0)
        return cli_usage_error("simulate", "--integrator hermite needs the jerk: --kernel gaj");
    return parse_integrate(options, run, config, plan->gravity);
}

/* The system (built in or a file), its temperature, softening, time step and physics. */
static int configure_system(simulate_options *options, const simulate_run *run,
                            fkt_sim_config *config, simulate_plan *plan)
{
    const int gravity = plan->gravity;
    if (options->in && options->system)
        return cli_usage_error("simulate", "--in and --system exclude each other");
    if (!options->in && !options->system)
        options->system = gravity ? "plummer" : "lj-fluid";
    if (options->system && strcmp(options->system, "plummer") != 0 &&
        strcmp(options->system, "lj-fluid") != 0)
        return cli_usage_error("simulate", "--system '%s': expected lj-fluid or plummer",
                               options->system);
    if (options->system && (strcmp(options->system, "plummer") == 0) != gravity)
        return cli_usage_error("simulate", "--system %s is for %s kernels, not %s", options->system,
                               gravity ? "molecular" : "gravity", run->kernel->name);
    plan->fluid = options->system && strcmp(options->system, "lj-fluid") == 0;
    if (options->system && !options->given.n)
        return cli_usage_error("simulate", "--system %s needs --n", options->system);
    if (options->in && options->given.n)
        return cli_usage_error("simulate", "--n applies to --system (a file has its own count)");
    if (options->given.density && !plan->fluid)
        return cli_usage_error("simulate", "--density applies to --system lj-fluid");
    if (plan->fluid && !(options->density > 0))
        return cli_usage_error("simulate", "--density must be > 0");
    plan->velocities_drawn = plan->fluid || (options->in && strcmp(run->kernel->name, "gaj") != 0);
    const int langevin = config->integrator == FKT_INTEGRATOR_LANGEVIN;
    if (!isnan(options->temperature) && !plan->velocities_drawn && !langevin)
        return cli_usage_error("simulate", "--temperature applies to lj-fluid and to files "
                                           "without velocities");
    plan->temperature = !isnan(options->temperature) ? options->temperature : (gravity ? 0.0 : 1.0);
    config->temperature = plan->temperature;
    if (langevin && !(plan->temperature > 0))
        return cli_usage_error("simulate", "--integrator langevin needs --temperature > 0");
    if (!isnan(options->eps) && !gravity)
        return cli_usage_error("simulate", "--eps applies to the gravity kernels");
    config->eval.eps = gravity ? (isnan(options->eps) ? 0.01 : options->eps) : 0.0;
    config->dt = isnan(options->dt) ? (gravity ? 0.001 : 0.005) : options->dt;
    if (!(config->dt > 0))
        return cli_usage_error("simulate", "--dt must be > 0");
    if (options->physics.box && plan->fluid)
        return cli_usage_error("simulate", "--box: the lj-fluid box follows from --n and "
                                           "--density");
    const int code = cli_physics_config("simulate", run->kernel, &options->physics, &config->eval);
    if (code != CLI_EXIT_OK)
        return code;
    if ((plan->fluid || strcmp(run->kernel->name, "lj") == 0) && isnan(options->physics.cutoff))
        config->eval.cutoff = 2.5; /* lj's default cutoff, also for ljc_* and buck in the fluid */
    return CLI_EXIT_OK;
}

/* The pair loop, the variant's shape and the skin. */
static int configure_loop(const simulate_options *options, fkt_sim_config *config,
                          simulate_plan *plan)
{
    plan->auto_algorithm = !options->algorithm || strcmp(options->algorithm, "auto") == 0;
    if (!plan->auto_algorithm) {
        fk_algorithm algorithm;
        if (fk_algorithm_find(options->algorithm, &algorithm) != FK_OK)
            return cli_usage_error(
                "simulate",
                "--algorithm '%s': expected auto, all-pairs, symmetric, cells or "
                "neighbors",
                options->algorithm);
        config->eval.algorithm = (int)algorithm;
    }
    if (strcmp(options->shape.unroll, "all") == 0)
        return cli_usage_error("simulate", "--unroll all: bench measures every unrolling; "
                                           "simulate runs one (IxJ or auto)");
    if (cli_shape_config("simulate", &options->shape, &config->eval))
        return CLI_EXIT_USAGE;
    plan->unroll_given = config->eval.unroll_i != 0;
    /* Cells keep a particle-to-cell assignment while no particle moved more than skin / 2, so with
     * a skin the forces' rounding depends on when the cells were last built: a history a restart
     * cannot reproduce. By default they are rebuilt at every step (a negative skin), so the forces
     * are a function of the positions alone. */
    if (!isnan(options->skin) && plan->gravity)
        return cli_usage_error("simulate", "--skin applies to the cells and neighbors pair loops "
                                           "(molecular kernels)");
    config->eval.skin = isnan(options->skin) ? -1.0 : options->skin;
    return CLI_EXIT_OK;
}

/* --checkpoint (checked writable now, not after the first checkpoint_every steps), --restart
 * (read) and the sampling interval, which a restart takes from its checkpoint unless given. */
static int prepare_checkpoints(simulate_options *options, simulate_run *run)
{
    if (options->checkpoint && !*options->checkpoint)
        return cli_usage_error("simulate", "--checkpoint needs a file name");
    if (options->restart && !*options->restart)
        return cli_usage_error("simulate", "--restart needs a file name");
    if (options->given.checkpoint_every && !options->checkpoint)
        return cli_usage_error("simulate", "--checkpoint-every needs --checkpoint FILE");
    if (!options->checkpoint_every)
        options->checkpoint_every = options->steps / 10 > 0 ? options->steps / 10 : 1;
    char message[1024] = "";
    if (options->checkpoint) {
        fk_status writable = fk__writer_check(options->checkpoint, message, sizeof message);
        if (writable != FK_OK) {
            cli_error("simulate", "--checkpoint: %s", message);
            return cli_write_exit_code(writable);
        }
    }
    if (options->restart) {
        fk_status status =
            fkt_sim_checkpoint_read(options->restart, &run->checkpoint, message, sizeof message);
        if (status != FK_OK) {
            cli_error(fk_status_string(status), "%s", message);
            return CLI_EXIT_USAGE;
        }
        run->restarting = 1;
        /* the sampling interval is the checkpoint's unless given (then it must match) */
        const char *sample = fkt_sim_checkpoint_option(&run->checkpoint, "sample");
        long long value = 0;
        if (!options->given.sample && sample && cli_parse_long(sample, &value) && value > 0)
            options->sample = value;
    }
    if (!options->sample)
        options->sample = options->steps / 1000 > 0 ? options->steps / 1000 : 1;
    return CLI_EXIT_OK;
}

/* The particles and their physics, what a restart must match, the device and the simulation. */
static int create_run(const simulate_options *options, simulate_run *run, fkt_sim_config *config,
                      simulate_plan *plan)
{
    int code = build_initial(options, run, plan->temperature);
    if (code == CLI_EXIT_OK && plan->fluid)
        memcpy(config->eval.box, run->box, sizeof run->box);
    if (code == CLI_EXIT_OK)
        code = cli_physics_load("simulate", run->kernel, &options->physics, &run->particles,
                                &config->eval, &run->physics);
    if (code != CLI_EXIT_OK)
        return code;
    if (run->physics.has_table) {
        run->pair_table = fkt_pair_table_set_view(&run->physics.table);
        config->pair_table = &run->pair_table;
    }
    config->exclusions = run->physics.exclusions;
    config->exclusion_count = run->physics.exclusion_count;

    /* what a restart must match */
    record_options(options, run, config, plan->temperature, plan->fluid ? options->density : 0.0,
                   plan->velocities_drawn || config->integrator == FKT_INTEGRATOR_LANGEVIN);
    if (run->restarting) {
        code = check_restart(options, run, config, &plan->auto_algorithm, plan->unroll_given);
        if (code != CLI_EXIT_OK)
            return code;
    }
    /* Under mpirun the forces come from libforcekit_mpi (the device path: fk_mpi_integrator;
     * the host path: replicated data, every rank integrates every particle); there are no
     * trial runs, auto is the library's built-in choice. */
    config->backend = cli_mpi_sim_backend();
    cli_mpi_set_halo_margin(options->halo_margin);
    if (config->backend && plan->auto_algorithm) {
        config->eval.algorithm = FK_ALGORITHM_AUTO;
        plan->auto_algorithm = 0;
    }
    config->auto_algorithm = plan->auto_algorithm;

    char selector[32];
    code = cli_open_context_timed(options->device ? options->device : cli_mpi_device(selector),
                                  run->device_timing, &run->context);
    if (code == CLI_EXIT_OK && cli_check_fits_device(run->context, run->particles.count))
        code = CLI_EXIT_RUNTIME;
    if (code != CLI_EXIT_OK)
        return code;
    if (run->restarting)
        note_device(options, run);
    return create_sim(options, run, config);
}

/* The variant chosen (recorded for checkpoints) and the first energy sample: step 0's, or a
 * restart's samples on the grid of --sample; then the line that says what runs. */
static int start_run(const simulate_options *options, simulate_run *run,
                     const fkt_sim_config *config, int reports)
{
    if (options->reproducible)
        cli_note_reproducible(run->sim->eval, fk_context_device(run->context)->name);
    fk_variant variant = {0};
    fk_eval_get_variant(run->sim->eval, &variant);
    char unroll[CLI_UNROLL_NAME_SIZE];
    cli_unroll_name(variant.unroll_i, variant.unroll_j, unroll);
    option_list *list = &run->options;
    add_option(list, "algorithm", "%s", fk_algorithm_name(fkt_sim_algorithm(run->sim)));
    add_option(list, "unroll", "%s", unroll);
    add_option(list, "work_group_size", "%d", variant.work_group_size);
    add_option(list, "local_tiling", "%d", variant.local_tiling);
    add_option(list, "j_splits", "%d", variant.j_splits);
    add_option(list, "lanes", "%d", variant.lanes);
    add_option(list, "device", "%s", fk_context_device(run->context)->name);
    add_option(list, "steps", "%lld", options->steps);

    int code = CLI_EXIT_OK;
    if (run->restarting) {
        const fkt_sim_checkpoint *checkpoint = &run->checkpoint;
        code = restore_checkpoint(options, run);
        /* The samples on the grid of --sample; a finished run's last one (at its --steps) is
         * off the grid and would not be in an uninterrupted longer run's series. */
        for (size_t s = 0; code == CLI_EXIT_OK && s < checkpoint->sample_count; ++s)
            if (checkpoint->samples[s].step % (uint64_t)options->sample == 0 &&
                add_sample(run, checkpoint->samples[s]) != 0)
                code = cli_exit_code(FK_ERR_HOST_MEMORY);
        if (code == CLI_EXIT_OK && (run->sample_count == 0 || run->samples[0].step != 0)) {
            cli_error("simulate", "checkpoint %s has no energy sample at step 0", options->restart);
            code = CLI_EXIT_USAGE;
        }
    } else {
        fkt_sim_sample sample = {.step = 0};
        fk_status status = fkt_sim_energy(run->sim, &sample.kinetic, &sample.potential);
        if (status != FK_OK) {
            cli_error(fk_status_string(status), "%s", run->sim->message);
            code = cli_exit_code(status);
        } else if (add_sample(run, sample) != 0) {
            code = cli_exit_code(FK_ERR_HOST_MEMORY);
        }
    }
    if (code != CLI_EXIT_OK)
        return code;
    if (reports)
        fprintf(stderr,
                "simulate: %s (%s), %s on the %s, N = %zu, dt = %g, %s, variant %s (%s), on "
                "%s%s%s\n",
                run->kernel->name, run->accum->name, fkt_integrator_name(config->integrator),
                config->device ? "device" : "host", run->particles.count, config->dt,
                fk_algorithm_name(fkt_sim_algorithm(run->sim)), unroll,
                cli_variant_source_text(variant.source), fk_context_device(run->context)->name,
                run->restarting ? ", restarted" : "",
                cli_mpi_active() ? " (rank 0 of an MPI job)" : "");
    return CLI_EXIT_OK;
}

/* The step loop up to --steps (or a signal), with its wall and device time. */
static fk_status run_steps(const simulate_options *options, simulate_run *run, int reports,
                           loop_stats *stats)
{
    const uint64_t target = (uint64_t)options->steps;
    const int show_progress = reports && isatty(fileno(stderr));
    interrupted_by = 0;
    if (!cli_mpi_active()) { /* under mpirun the ranks would stop at different steps */
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
    }
    *stats = (loop_stats){.first_step = run->sim->step};
    const double device_before = run->sim->device_seconds;
    const fkt_sim_timing timing_before = run->sim->timing;
    const double started = monotonic_seconds();
    fk_status status = step_loop(options, run, show_progress, stats->first_step, started);
    if (status == FK_OK) /* the device path: the state the checksum and checkpoint see */
        status = fkt_sim_sync(run->sim);
    stats->seconds = monotonic_seconds() - started;
    stats->steps_run = run->sim->step - stats->first_step;
    stats->device_seconds =
        run->device_timing == FK_DEVICE_TIMING_OFF || fkt_sim_on_device(run->sim)
            ? NAN /* not recorded (the device path records none) */
            : run->sim->device_seconds - device_before;
    stats->timing.update = run->sim->timing.update - timing_before.update;
    stats->timing.compute = run->sim->timing.compute - timing_before.compute;
    stats->timing.read = run->sim->timing.read - timing_before.read;
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (show_progress)
        progress(run, target, stats->first_step, started, 1);
    return status;
}

/* After an interruption: the checkpoint, when there is one, and exit 128 + the signal. */
static int interrupted(const simulate_options *options, simulate_run *run)
{
    const int signal_number = interrupted_by;
    if (options->checkpoint) {
        if (write_checkpoint(options, run) == CLI_EXIT_OK)
            fprintf(stderr,
                    "forcekit: simulate: interrupted at step %" PRIu64
                    "; checkpoint written to %s (continue with --restart %s)\n",
                    run->sim->step, options->checkpoint, options->checkpoint);
    } else {
        fprintf(stderr, "forcekit: simulate: interrupted at step %" PRIu64 " (no --checkpoint)\n",
                run->sim->step);
    }
    return 128 + signal_number;
}

/* The last step's energy (when off the sampling grid), the checkpoint and the report. */
static int finish_run(const simulate_options *options, simulate_run *run,
                      const fkt_sim_config *config, const loop_stats *stats, int reports)
{
    if (run->samples[run->sample_count - 1].step != run->sim->step) {
        fkt_sim_sample sample = {.step = run->sim->step};
        fk_status status = fkt_sim_energy(run->sim, &sample.kinetic, &sample.potential);
        if (status != FK_OK || add_sample(run, sample) != 0) {
            cli_error(fk_status_string(status ? status : FK_ERR_HOST_MEMORY), "%s",
                      run->sim->message);
            return cli_exit_code(status ? status : FK_ERR_HOST_MEMORY);
        }
    }
    int code = CLI_EXIT_OK;
    if (options->checkpoint) {
        code = write_checkpoint(options, run);
        if (code != CLI_EXIT_OK)
            return code;
    }
    const double e0 = total_energy(&run->samples[0]);
    const double e_end = total_energy(&run->samples[run->sample_count - 1]);
    if (reports) {
        char device_share[64] = "device time not recorded"; /* --device-timing off */
        if (!isnan(stats->device_seconds))
            snprintf(device_share, sizeof device_share, "%.3g s/step on the device",
                     stats->steps_run ? stats->device_seconds / (double)stats->steps_run : 0.0);
        fprintf(stderr,
                "simulate: %" PRIu64 " steps in %.3g s (%.4g steps/s, %s); "
                "E0 = %.10g, E = %.10g, relative drift %.3e\n",
                stats->steps_run, stats->seconds,
                stats->seconds > 0 ? (double)stats->steps_run / stats->seconds : 0.0, device_share,
                e0, e_end, fabs(e_end - e0) / fabs(e0));
    }
    mpi_figures = cli_mpi_sim_figures(); /* collective under mpirun; NULL otherwise */
    if (options->json)
        code = print_json(options, run, config, stats);
    cJSON_Delete(mpi_figures);
    mpi_figures = NULL;
    return code;
}

int cmd_simulate(int argc, char **argv)
{
    simulate_options options = {.accum = "float",
                                .seed = 1,
                                .density = 0.8,
                                .temperature = NAN,
                                .dt = NAN,
                                .eps = NAN,
                                .skin = NAN,
                                .friction = NAN,
                                .shape = CLI_SHAPE_OPTIONS_INIT,
                                .physics = CLI_PHYSICS_OPTIONS_INIT};
    int code = CLI_EXIT_OK;
    if (parse_options(argc, argv, &options, &code))
        return code;
    simulate_run run = {0};
    if (cli_find_kernel("simulate", options.kernel, &run.kernel) ||
        cli_find_accum("simulate", options.accum, &run.accum))
        return CLI_EXIT_USAGE;
    fkt_sim_config config = {0};
    simulate_plan plan = {.gravity = cli_kernel_is_gravity(run.kernel->name)};
    code = configure_integration(&options, &run, &config, &plan);
    if (code == CLI_EXIT_OK)
        code = configure_system(&options, &run, &config, &plan);
    if (code == CLI_EXIT_OK)
        code = configure_loop(&options, &config, &plan);
    if (code != CLI_EXIT_OK)
        return code;
    code = prepare_checkpoints(&options, &run);
    if (code == CLI_EXIT_OK)
        code = create_run(&options, &run, &config, &plan);
    /* Under mpirun every rank holds the same state: rank 0 reports (failures: every rank). */
    const int reports = cli_mpi_rank() == 0;
    if (code == CLI_EXIT_OK)
        code = start_run(&options, &run, &config, reports);
    if (code != CLI_EXIT_OK) {
        simulate_run_free(&run);
        return code;
    }
    loop_stats stats;
    const fk_status status = run_steps(&options, &run, reports, &stats);
    if (status != FK_OK) {
        cli_error(fk_status_string(status), "%s", run.sim->message);
        code = cli_exit_code(status);
    } else if (interrupted_by) {
        code = interrupted(&options, &run);
    } else {
        code = finish_run(&options, &run, &config, &stats, reports);
    }
    simulate_run_free(&run);
    return code;
}
