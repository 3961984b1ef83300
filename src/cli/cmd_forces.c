/* `forcekit forces`: read particles, evaluate the forces once on the device, write them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "forcekit/tools.h"
#include "cli/mpi.h"
#include "cli/physics.h"
#include "core/loops/loop.h" /* what the loop reports */
#ifdef FK_CLI_MPI
#include "forcekit/forcekit_mpi.h"
#endif

static const char forces_synopsis[] =
    "usage: forcekit forces --kernel K --in FILE [--out FILE] [--accum A] [--unroll IxJ|auto]\n"
    "                       [--eps E] [--potential] [--format auto|text|tipsy] [--device SEL]\n"
    "                       [--positions float|ds] [--json]\n\n"
    "Computes the forces on the particles of FILE once and writes one line per particle (%.17g),\n"
    "the law's output columns (listed at the end). Without --out they go to standard output.\n"
    "Outputs are written to a temporary file and renamed, so a failure never leaves a partial\n"
    "file.\n\n";

static const char forces_usage_mpi[] =
    "\nUnder mpirun (mpirun -np P forcekit forces ...) the evaluation is spread over the ranks\n"
    "(libforcekit_mpi, docs/mpi.md): each rank computes its share on its own device (cells and\n"
    "lists in a periodic box: a slab of the box and its halo; the rest: a range of particles;\n"
    "without --device, ranks on one node take its GPUs by local rank), the results are\n"
    "the single-device results bit for bit, rank 0 writes the output, and the JSON summary has\n"
    "an \"mpi\" object with each rank's pairs and compute, communication and wait seconds.\n";

static void forces_usage_after(FILE *out, const cli_option *options, size_t count)
{
    fputs(forces_usage_mpi, out);
    cli_print_shape_usage(out, options, count);
    cli_print_options(out, options, count, CLI_GROUP_LOOP, 18);
    fputs(cli_positions_usage, out);
    cli_physics_print_usage(out, options, count);
    cli_print_kernels(out);
}

typedef struct forces_options {
    const char *kernel, *in, *out, *accum, *format, *device, *algorithm;
    cli_shape_options shape; /* --unroll, --wg, --splits, --tiling, --lanes */
    const char *lists;       /* --lists: auto, half or full */
    const char *positions;   /* --positions: float or ds */
    double eps;
    int potential, json, help, reproducible;
    cli_physics_options physics;
} forces_options;

typedef struct forces_run {
    fkt_particle_set particles;
    cli_physics_data physics;
    fk_context *context;
    fk_eval *eval;
    double *forces, *potentials;
} forces_run;

static void forces_run_free(forces_run *run)
{
    free(run->forces);
    free(run->potentials);
    fk_eval_destroy(run->eval);
    fk_context_destroy(run->context);
    fkt_particle_set_free(&run->particles);
    cli_physics_data_free(&run->physics);
}

static void print_json_summary(const forces_options *options, const forces_run *run,
                               const fk_variant *variant, size_t components, double seconds,
                               cJSON *mpi, int *code)
{
    char unroll[CLI_UNROLL_NAME_SIZE];
    cli_unroll_name(variant->unroll_i, variant->unroll_j, unroll);
    cJSON *document = cJSON_CreateObject();
    cJSON_AddStringToObject(document, "kernel", options->kernel);
    cJSON_AddStringToObject(document, "accum", options->accum);
    cJSON_AddNumberToObject(document, "n", (double)run->particles.count);
    cJSON_AddStringToObject(document, "device", fk_context_device(run->context)->name);
    cJSON_AddStringToObject(document, "unroll", unroll);
    cJSON_AddStringToObject(document, "variant_source", cli_variant_source_token(variant->source));
    cli_json_variant_note(document, run->eval);
    cJSON_AddNumberToObject(document, "work_group_size", variant->work_group_size);
    cJSON_AddNumberToObject(document, "j_splits", variant->j_splits);
    cJSON_AddBoolToObject(document, "local_tiling", variant->local_tiling != 0);
    cli_json_number(document, "eps", options->eps);
    cJSON_AddBoolToObject(document, "potential", options->potential != 0);
    cli_json_number(document, "seconds", seconds);
    cJSON_AddStringToObject(document, "out", options->out);
    /* XXH3-64 of the forces as doubles: equal checksums across devices, equal bits */
    char checksum[CLI_CHECKSUM_SIZE];
    cli_checksum(run->forces, run->particles.count * components, checksum);
    cJSON_AddStringToObject(document, "checksum", checksum);
    cJSON_AddBoolToObject(document, "reproducible", options->reproducible != 0);
    /* the loop that ran: --algorithm auto's choice too */
    cJSON_AddStringToObject(document, "algorithm",
                            fk_algorithm_name((fk_algorithm)variant->algorithm));
    cJSON_AddStringToObject(document, "algorithm_requested",
                            options->algorithm ? options->algorithm : "all-pairs");
    if (fk__loop_reports_lists(variant->algorithm))
        cJSON_AddStringToObject(document, "lists", variant->neighbor_half_lists ? "half" : "full");
    cJSON_AddStringToObject(document, "algorithm_source",
                            cli_variant_source_token(variant->algorithm_source));
    if (mpi)
        cJSON_AddItemToObject(document, "mpi", mpi);
    *code = cli_print_json(document);
}

/* Forces finite, or the message and exit code (the pair terms overflowed single precision). */
static int check_finite(const forces_run *run, const fk_kernel_info *kernel)
{
    const size_t count = run->particles.count;
    for (size_t k = 0; k < count * kernel->force_components; ++k)
        if (!isfinite(run->forces[k]) ||
            (run->potentials && k < count && !isfinite(run->potentials[k]))) {
            cli_error("forces",
                      "the evaluation gave non-finite forces (particle %zu): the inputs overflow "
                      "single precision (check --coulomb, the pair parameters and the positions)",
                      k / kernel->force_components);
            return CLI_EXIT_RUNTIME;
        }
    return CLI_EXIT_OK;
}

#ifdef FK_CLI_MPI
/* Under mpirun: every rank has read the file and passes all of it to the distributed evaluation
 * (which checks that every rank read the same and takes rank r's slice, an equal split), every rank
 * gets all the results, rank 0 writes them. Failures are agreed on by all ranks (libforcekit_mpi),
 * which exit with the same code; rank 0 prints why. */
static int forces_distributed(const forces_options *options, const fk_kernel_info *kernel,
                              const fk_accum_info *accum, const fk_eval_config *config,
                              forces_run *run)
{
    const int rank = cli_mpi_rank(), ranks = cli_mpi_ranks();
    const size_t n = run->particles.count, fc = kernel->force_components;
    fk_mpi_eval *m = NULL;
    char message[1200];
    const fk_pair_table table = fkt_pair_table_set_view(&run->physics.table);
    fk_status status = cli_mpi_eval_open(
        run->context, config, run->physics.has_table ? &table : NULL, run->physics.exclusions,
        run->physics.exclusion_count, &m, message, sizeof message);
    if (status != FK_OK) {
        if (rank == 0)
            cli_error(fk_status_string(status), "%s", message);
        forces_run_free(run);
        return cli_exit_code(status);
    }
    const fk_particles all = fkt_particle_set_view(&run->particles);
    double seconds = NAN;
    /* Every rank passes what it read; the library checks that the ranks read the same system
     * (issue #32: a rank with another file made the others' results wrong, or overran rank's
     * buffers of its own N) and takes each rank's slice. */
    status = fk_mpi_eval_set_all_particles(m, &all);
    fk_mpi_eval_reset_figures(m); /* the figures of the compute alone */
    if (status == FK_OK)
        status = fk_mpi_eval_compute(m, &seconds);
    if (status == FK_OK) {
        run->forces = calloc(n, fc * sizeof *run->forces);
        run->potentials = options->potential ? calloc(n, sizeof *run->potentials) : NULL;
        if (!run->forces || (options->potential && !run->potentials))
            status = FK_ERR_HOST_MEMORY; /* MPI_Abort at exit ends the others */
    }
    if (status == FK_OK)
        status = fk_mpi_eval_read_all_forces(m, run->forces);
    if (status == FK_OK && options->potential)
        status = fk_mpi_eval_read_all_potentials(m, run->potentials);
    cJSON *mpi_figures = cli_mpi_figures_json(m); /* collective; rank 0's, NULL elsewhere */
    if (status != FK_OK) {
        if (rank == 0)
            cli_error(fk_status_string(status), "%s",
                      fk_mpi_eval_last_error(m)[0] ? fk_mpi_eval_last_error(m)
                                                   : fk_status_string(status));
        cJSON_Delete(mpi_figures);
        fk_mpi_eval_destroy(m);
        forces_run_free(run);
        return cli_exit_code(status);
    }
    int code = check_finite(run, kernel);
    fk_variant variant = {0};
    fk_eval_get_variant(fk_mpi_eval_local(m), &variant);
    if (code == CLI_EXIT_OK && rank == 0) {
        if (options->reproducible)
            cli_note_reproducible(fk_mpi_eval_local(m), fk_context_device(run->context)->name);
        fprintf(stderr,
                "%s (%s), N = %zu over %d MPI ranks (%s on rank 0): %.3g s on rank 0's "
                "device\n",
                kernel->name, accum->name, n, ranks, fk_context_device(run->context)->name,
                seconds);
        message[0] = '\0';
        status = fkt_io_write_forces(options->out, n, fc, run->forces, run->potentials, message,
                                     sizeof message);
        if (status != FK_OK) {
            cli_error(fk_status_string(status), "%s", message);
            code = cli_write_exit_code(status);
        } else if (options->json) {
            cJSON *mpi = mpi_figures;
            mpi_figures = NULL;
            print_json_summary(options, run, &variant, fc, seconds, mpi, &code);
        }
    }
    cJSON_Delete(mpi_figures);
    fk_mpi_eval_destroy(m);
    forces_run_free(run);
    return code;
}
#endif

/* Parses and checks the command line (the reproducible mode's accumulator applied). Returns 1
 * when the command is done (*code: 0 after the help, 2 after a usage error). */
static int parse_forces_options(int argc, char **argv, forces_options *options, int *code)
{
    cli_option table[] = {
        cli_opt_kernel(&options->kernel),
        cli_string("in", "FILE", &options->in,
                   "particles, text (# comments), a line each in the law's input columns (at\n"
                   "the end); or TIPSY (.bin, .tipsy)"),
        cli_string("out", "FILE", &options->out,
                   "write the forces here instead of standard output"),
        cli_opt_accum(&options->accum),
        cli_help_line("unroll", "IxJ",
                      "i and j unrolling (and --wg, --splits, --tiling, --lanes: the variant\n"
                      "shape, below); auto (default) takes the tuned choice"),
        CLI_SHAPE_OPTION_ENTRIES(options->shape),
        cli_opt_eps(&options->eps, "gravitational softening (default 0)"),
        cli_flag("potential", &options->potential,
                 "append each particle's potential as a last column"),
        cli_opt_reproducible(
            &options->reproducible,
            "bit-identical results across devices: fixed64, correctly rounded divide\n"
            "and sqrt, no contraction, denormals kept (says so where the device cannot)"),
        CLI_PHYSICS_OPTION_ENTRIES(options->physics),
        cli_opt_format(&options->format),
        cli_opt_algorithm(&options->algorithm),
        cli_opt_lists(&options->lists),
        cli_opt_positions(&options->positions),
        cli_opt_device(&options->device),
        cli_explained(cli_opt_json(&options->json),
                      "print a summary as JSON on standard output (needs --out)"),
        cli_opt_help(&options->help),
    };
    static const cli_usage usage = {"forces", forces_synopsis, 17, forces_usage_after};
    if (cli_parse_command(&usage, argc, argv, table, sizeof table / sizeof table[0], code))
        return 1;
    *code = CLI_EXIT_USAGE;
    if (!options->kernel)
        return cli_usage_error("forces", "--kernel is required");
    if (options->reproducible) { /* reproducible mode sums in fixed64 */
        if (!cli_option_named(table, sizeof table / sizeof table[0], "accum")->given)
            options->accum = "fixed64";
        else if (strcmp(options->accum, "fixed64") != 0)
            return cli_usage_error("forces", "--reproducible uses the fixed64 accumulator, not %s",
                                   options->accum);
    }
    if (!options->in)
        return cli_usage_error("forces", "--in is required");
    if (options->out && !*options->out)
        return cli_usage_error("forces", "--out needs a file name");
    if (options->json && (!options->out || strcmp(options->out, "-") == 0))
        return cli_usage_error("forces", "--json needs --out FILE: standard output carries the "
                                         "JSON document");
    *code = CLI_EXIT_OK;
    return 0;
}

/* The evaluation's configuration from the options (the physics fields in physics, to be
 * completed by the files). Reports a usage error and returns its exit code. */
static int forces_config(const forces_options *options, const fk_kernel_info *kernel,
                         const fk_accum_info *accum, fk_eval_config *config,
                         fk_eval_config *physics)
{
    *config = (fk_eval_config){.struct_size = sizeof(fk_eval_config),
                               .kernel = kernel->name,
                               .accum = accum->name,
                               .potential = options->potential,
                               .eps = options->eps};
    if (strcmp(options->shape.unroll, "all") == 0)
        return cli_usage_error("forces", "--unroll all: bench measures every unrolling; forces "
                                         "runs one (IxJ or auto)");
    if (cli_shape_config("forces", &options->shape, config)) /* the variant's shape fields */
        return CLI_EXIT_USAGE;
    fk_algorithm algorithm;
    if (cli_parse_algorithm("forces", options->algorithm, &algorithm))
        return CLI_EXIT_USAGE;
    int lists = FK_NEIGHBOR_LISTS_AUTO;
    if (cli_parse_lists("forces", options->lists, &lists))
        return CLI_EXIT_USAGE;
    int positions = FK_POSITIONS_FLOAT;
    if (cli_parse_positions("forces", options->positions, &positions))
        return CLI_EXIT_USAGE;
    int physics_code = cli_physics_config("forces", kernel, &options->physics, physics);
    if (physics_code != CLI_EXIT_OK)
        return physics_code;
    config->reproducible = options->reproducible;
    config->algorithm = (int)algorithm;
    config->neighbor_lists = lists;
    config->positions = positions;
    return CLI_EXIT_OK;
}

/* The physics read from the files (cli_physics_load) into the evaluation's configuration. */
static void apply_physics(const fk_eval_config *physics, fk_eval_config *config)
{
    config->cutoff = physics->cutoff;
    config->coulomb = physics->coulomb;
    memcpy(config->parameters, physics->parameters, sizeof config->parameters);
    memcpy(config->box, physics->box, sizeof config->box);
    config->exclusion_mode = physics->exclusion_mode;
    config->max_exclusions = physics->max_exclusions;
}

/* On one device: evaluate, check, report and write. Frees run. */
static int forces_local(const forces_options *options, const fk_kernel_info *kernel,
                        const fk_accum_info *accum, const fk_eval_config *config, forces_run *run)
{
    const fk_particles view = fkt_particle_set_view(&run->particles);
    const size_t count = run->particles.count;
    double seconds = NAN;
    fk_status status = fk_eval_create(run->context, config, &run->eval);
    if (status == FK_OK)
        status = cli_physics_apply(run->eval, &run->physics);
    if (status == FK_OK)
        status = fk_eval_set_particles(run->eval, &view);
    if (status == FK_OK)
        status = fk_eval_compute(run->eval, &seconds);
    if (status == FK_OK) {
        run->forces = calloc(count, kernel->force_components * sizeof *run->forces);
        run->potentials = options->potential ? calloc(count, sizeof *run->potentials) : NULL;
        if (!run->forces || (options->potential && !run->potentials))
            status = FK_ERR_HOST_MEMORY;
    }
    if (status == FK_OK)
        status = fk_eval_read_forces(run->eval, run->forces);
    if (status == FK_OK && options->potential)
        status = fk_eval_read_potentials(run->eval, run->potentials);
    if (status != FK_OK) {
        const int code = cli_report_status(status, run->context);
        forces_run_free(run);
        return code;
    }

    /* Float overflow inside the pair terms (an extreme --coulomb or pair table) shows up only
     * here: such forces are never written as a success. */
    int code = check_finite(run, kernel);
    if (code != CLI_EXIT_OK) {
        forces_run_free(run);
        return code;
    }

    fk_variant variant = {0};
    fk_eval_get_variant(run->eval, &variant);
    if (options->reproducible)
        cli_note_reproducible(run->eval, fk_context_device(run->context)->name);
    fprintf(stderr,
            "%s (%s), N = %zu: variant %dx%d (%s), work-group %d, %d j-split%s, on %s: "
            "%.3g s on the device\n",
            kernel->name, accum->name, count, variant.unroll_i, variant.unroll_j,
            cli_variant_source_text(variant.source), variant.work_group_size, variant.j_splits,
            variant.j_splits == 1 ? "" : "s", fk_context_device(run->context)->name, seconds);
    cli_note_variant(run->eval);

    char message[1024] = "";
    status = fkt_io_write_forces(options->out, count, kernel->force_components, run->forces,
                                 run->potentials, message, sizeof message);
    if (status != FK_OK) {
        cli_error(fk_status_string(status), "%s", message);
        code = cli_write_exit_code(status);
    } else if (options->json) {
        print_json_summary(options, run, &variant, kernel->force_components, seconds, NULL, &code);
    }
    forces_run_free(run);
    return code;
}

int cmd_forces(int argc, char **argv)
{
    forces_options options = {
        .accum = "float", .shape = CLI_SHAPE_OPTIONS_INIT, .physics = CLI_PHYSICS_OPTIONS_INIT};
    int code = CLI_EXIT_OK;
    if (parse_forces_options(argc, argv, &options, &code))
        return code;
    const fk_kernel_info *kernel = NULL;
    const fk_accum_info *accum = NULL;
    if (cli_find_kernel("forces", options.kernel, &kernel) ||
        cli_find_accum("forces", options.accum, &accum))
        return CLI_EXIT_USAGE;
    fk_eval_config config, physics = {0}; /* physics: the molecular kernels' options */
    code = forces_config(&options, kernel, accum, &config, &physics);
    if (code != CLI_EXIT_OK)
        return code;
    fkt_file_format format;
    if (!cli_parse_format(options.format, &format))
        return cli_usage_error("forces", "--format '%s': expected auto, text or tipsy",
                               options.format);
    const int layout = fkt_io_layout_for_kernel(kernel->name);
    if (layout < 0) {
        cli_error("forces", "kernel '%s' has no particle file layout", kernel->name);
        return CLI_EXIT_RUNTIME;
    }

    forces_run run = {0};
    char message[1024] = "";
    fk_status status = fkt_io_read_particles(options.in, format, (fkt_layout)layout, &run.particles,
                                             message, sizeof message);
    if (status != FK_OK) {
        cli_error(fk_status_string(status), "%s", message);
        return cli_exit_code(status);
    }
    code = cli_physics_load("forces", kernel, &options.physics, &run.particles, &physics,
                            &run.physics);
    char selector[32];
    if (code == CLI_EXIT_OK) /* under mpirun, a device per rank unless one was named */
        code = cli_open_context(options.device ? options.device : cli_mpi_device(selector),
                                &run.context);
    if (code != CLI_EXIT_OK) {
        forces_run_free(&run);
        return code;
    }
    config.expected_count = run.particles.count; /* picks the tuning database's N bucket */
    apply_physics(&physics, &config);
#ifdef FK_CLI_MPI
    if (cli_mpi_active())
        return forces_distributed(&options, kernel, accum, &config, &run);
#endif
    return forces_local(&options, kernel, accum, &config, &run);
}
