/* `forcekit`: dispatch to the subcommands, top-level usage and version. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/mpi.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"devices", cmd_devices, "list the OpenCL devices and their selectors"},
    {"forces", cmd_forces, "compute the forces on the particles of a file once"},
    {"bench", cmd_bench, "time force evaluations of a synthetic system"},
    {"accuracy", cmd_accuracy, "compare the accumulators' force error and offset with ref (G)"},
    {"tune", cmd_tune, "autotune a kernel on the device and store the best in the tuning database"},
    {"sumtest", cmd_sumtest, "Taufer et al.'s global summation in five representations"},
    {"doundo", cmd_doundo, "Taufer et al.'s do/undo drift in float, double and composite"},
    {"generate", cmd_generate, "write an initial condition"},
    {"rand48", cmd_rand48, "van Meel's parallel lrand48 on the device, one value a line"},
    {"simulate", cmd_simulate, "NVE molecular dynamics or N-body integration with energy drift"},
    {"selftest", cmd_selftest,
     "check the installation: gravity and LJ on every device against the reference"},
};

static void print_usage(FILE *stream)
{
    fprintf(stream, "usage: forcekit COMMAND [OPTIONS]\n"
                    "       forcekit COMMAND --help\n"
                    "       forcekit --version\n\n"
                    "Pairwise force kernels (N-body gravity, molecular dynamics) on OpenCL "
                    "devices.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; ++i)
        if (commands[i].run == cmd_generate) /* the models from generate's own list */
            fprintf(stream, "  %-10s %s (%s)\n", commands[i].name, commands[i].summary,
                    cmd_generate_models());
        else
            fprintf(stream, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(stream,
            "\noptions every command takes:\n"
            "  --device SEL  P:D, a substring of the device name, cpu or gpu\n"
            "                (default: $FORCEKIT_DEVICE, else the first GPU, else the first CPU)\n"
            "  --json        print one JSON document on standard output (messages go to stderr)\n"
            "\nenvironment: FORCEKIT_DEVICE, FORCEKIT_KERNEL_DIR, FORCEKIT_CACHE_DIR (off "
            "disables the\nprogram cache), FORCEKIT_TUNING_DB (the user's tuning database; off "
            "ignores it)\n"
            "exit codes: 0 success, 1 runtime failure (OpenCL, build, memory), 2 bad usage or "
            "input\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        print_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0) {
        printf("forcekit %s\n", fk_version());
        /* The kernels are found and read when a context is created, on the default device. */
        fk_context *context = NULL;
        const fk_status status = fk_context_create(NULL, &context);
        if (status != FK_OK) {
            printf("kernels: not available: %s\n",
                   context ? fk_context_last_error(context) : fk_status_string(status));
            fk_context_destroy(context);
            return CLI_EXIT_RUNTIME;
        }
        /* "built-in": no kernel directory was found, and the library runs on the copy of the
         * kernel sources compiled into it (src/core/programs/install_paths.c) */
        const char *kernel_dir = fk_context_kernel_dir(context);
        if (strcmp(kernel_dir, "built-in") == 0)
            printf("kernels %s built-in (compiled into the library; no kernel directory found)\n",
                   fk_context_kernel_version(context));
        else
            printf("kernels %s in %s\n", fk_context_kernel_version(context), kernel_dir);
        const char *warnings = fk_context_warnings(context);
        if (warnings && *warnings)
            fprintf(stderr, "forcekit: warning: %s\n", warnings);
        fk_context_destroy(context);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; ++i)
        if (strcmp(name, commands[i].name) == 0) {
            cli_mpi_start(&argc, &argv); /* under mpirun only */
            const int code = commands[i].run(argc - 1, argv + 1);
            cli_mpi_finish(code);
            return code;
        }
    if (name[0] == '-')
        cli_error("usage", "unknown option '%s' (see 'forcekit --help')", name);
    else
        cli_error("usage", "unknown command '%s' (see 'forcekit --help')", name);
    return CLI_EXIT_USAGE;
}
