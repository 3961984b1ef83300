/* `forcekit selftest`: like OpenMM's testInstallation. On every device found, gravity (ga) and a
 * molecular law (lj, periodic, with a cutoff) against the double-precision host reference, and in
 * reproducible mode (fixed64) against each other: a table, and exit 1 on any mismatch. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/splitmix64.h"

static const char selftest_synopsis[] =
    "usage: forcekit selftest [--device SEL] [--all] [--n N] [--json]\n\n"
    "Checks the installation on every OpenCL device: ga (gravity, float) and lj (Lennard-Jones,\n"
    "periodic box, cutoff 2.5, float) against the double-precision host reference (error as in\n"
    "Narumi et al. eq. 10, held to 3e-5), then both in reproducible mode (fixed64), whose\n"
    "results must be the same bits on every device that can run it: their checksums are compared\n"
    "across devices. Exit 0 when every check passed, 1 when one failed.\n\n";

/* Float pair terms and sums: 4e-7 (ga) and 4e-6 (lj, whose net forces cancel more) measured on POCL
 * and Intel's CPU runtime; a broken device is off by far more. */
#define SELFTEST_TOLERANCE 3e-5

typedef struct selftest_system {
    size_t n;
    double *position, *mass;
    int *type;
    double box;
} selftest_system;

/* The same inputs on every machine (splitmix64), so that checksums can be compared. */
static double uniform(uint64_t *seed)
{
    return fk_splitmix64_float_uniform(seed);
}

static void free_system(selftest_system *s)
{
    free(s->position);
    free(s->mass);
    free(s->type);
}

static int alloc_system(selftest_system *s, size_t n)
{
    s->n = n;
    s->position = malloc(3 * n * sizeof *s->position);
    s->mass = malloc(n * sizeof *s->mass);
    s->type = malloc(n * sizeof *s->type);
    return s->position && s->mass && s->type;
}

/* A unit cube of unequal masses. */
static int gravity_system(selftest_system *s, size_t n)
{
    if (!alloc_system(s, n))
        return 0;
    uint64_t seed = 11;
    for (size_t i = 0; i < n; ++i) {
        for (int k = 0; k < 3; ++k)
            s->position[3 * i + (size_t)k] = uniform(&seed);
        s->mass[i] = (0.5 + uniform(&seed)) / (double)n;
    }
    s->box = 0;
    return 1;
}

/* lj's cutoff in the self-test, and the lattice spacing (density ~0.7). */
#define SELFTEST_LJ_CUTOFF 2.5
#define SELFTEST_LJ_SPACING 1.125

/* A jittered simple-cubic lattice at density ~0.7 in a periodic box, at least twice the cutoff
 * across (5^3 particles): the minimum image needs a box of two cutoffs, and the host reference
 * refuses a smaller one (`--n 27` was refused and reported as a memory failure). */
static int lj_system(selftest_system *s, size_t n)
{
    const int smallest = (int)ceil(2 * SELFTEST_LJ_CUTOFF / SELFTEST_LJ_SPACING);
    int side = (int)lround(cbrt((double)n));
    if (side < smallest)
        side = smallest;
    const size_t count = (size_t)side * (size_t)side * (size_t)side;
    if (!alloc_system(s, count))
        return 0;
    const double spacing = SELFTEST_LJ_SPACING;
    s->box = side * spacing;
    uint64_t seed = 12;
    size_t i = 0;
    for (int x = 0; x < side; ++x)
        for (int y = 0; y < side; ++y)
            for (int z = 0; z < side; ++z, ++i) {
                const int cell[3] = {x, y, z};
                for (int k = 0; k < 3; ++k)
                    s->position[3 * i + (size_t)k] =
                        spacing * (cell[k] + 0.5) + 0.4 * (uniform(&seed) - 0.5);
                s->mass[i] = 0;
                s->type[i] = 0;
            }
    return 1;
}

typedef struct check {
    const char *kernel;
    double error;                     /* eq. 10 against the host reference, float accumulator */
    char checksum[CLI_CHECKSUM_SIZE]; /* reproducible fixed64; "" when the device cannot */
    const char *not_reproducible;     /* why not, or NULL */
    int failed;
    char message[256];
} check;

static void configure(const char *kernel, const selftest_system *s, fk_eval_config *config)
{
    memset(config, 0, sizeof *config);
    config->kernel = kernel;
    if (strcmp(kernel, "ga") == 0) {
        config->eps = 0.01;
    } else {
        config->cutoff = SELFTEST_LJ_CUTOFF;
        config->box[0] = config->box[1] = config->box[2] = s->box;
    }
    config->expected_count = s->n;
}

static fk_status evaluate(fk_context *context, const fk_eval_config *config,
                          const selftest_system *s, double *forces, const char **reason)
{
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(context, config, &eval);
    if (status == FK_OK && config->reproducible && fk_eval_reproducible(eval, reason) != 1) {
        fk_eval_destroy(eval);
        return FK_ERR_UNSUPPORTED;
    }
    const int gravity = strcmp(config->kernel, "ga") == 0;
    const fk_particles particles = {.count = s->n,
                                    .position = s->position,
                                    .mass = gravity ? s->mass : NULL,
                                    .type = gravity ? NULL : s->type};
    if (status == FK_OK)
        status = fk_eval_set_particles(eval, &particles);
    if (status == FK_OK)
        status = fk_eval_compute(eval, NULL);
    if (status == FK_OK)
        status = fk_eval_read_forces(eval, forces);
    fk_eval_destroy(eval);
    return status;
}

/* One law on one device: the float evaluation against the reference, then reproducible mode. */
static void run_check(fk_context *context, const char *kernel, const selftest_system *s,
                      const double *reference, check *c)
{
    memset(c, 0, sizeof *c);
    c->kernel = kernel;
    c->error = NAN;
    double *forces = malloc(3 * s->n * sizeof *forces);
    if (!forces) {
        c->failed = 1;
        snprintf(c->message, sizeof c->message, "out of host memory");
        return;
    }
    fk_eval_config config;
    configure(kernel, s, &config);
    fk_status status = evaluate(context, &config, s, forces, NULL);
    if (status != FK_OK) {
        c->failed = 1;
        snprintf(c->message, sizeof c->message, "%s: %s", fk_status_string(status),
                 fk_context_last_error(context));
        free(forces);
        return;
    }
    double difference = 0, magnitude = 0;
    for (size_t i = 0; i < s->n; ++i) {
        double d2 = 0, r2 = 0;
        for (int k = 0; k < 3; ++k) {
            const double d = forces[3 * i + (size_t)k] - reference[3 * i + (size_t)k];
            d2 += d * d;
            r2 += reference[3 * i + (size_t)k] * reference[3 * i + (size_t)k];
        }
        difference += sqrt(d2);
        magnitude += sqrt(r2);
    }
    c->error = difference / magnitude;
    if (!(c->error <= SELFTEST_TOLERANCE)) {
        c->failed = 1;
        snprintf(c->message, sizeof c->message, "error %.3g against the reference exceeds %g",
                 c->error, SELFTEST_TOLERANCE);
    }
    config.reproducible = 1;
    status = evaluate(context, &config, s, forces, &c->not_reproducible);
    if (status == FK_OK) {
        cli_checksum(forces, 3 * s->n, c->checksum);
    } else if (status != FK_ERR_UNSUPPORTED) {
        c->failed = 1;
        snprintf(c->message, sizeof c->message, "reproducible: %s: %s", fk_status_string(status),
                 fk_context_last_error(context));
    }
    free(forces);
}

typedef struct selftest_options {
    const char *device;
    int all, json, help;
    long long n;
} selftest_options;

static const char *const selftest_kernels[2] = {"ga", "lj"};

/* The two systems and their double-precision host reference forces; 0 when out of memory. */
/* The two systems and their host references: FK_ERR_HOST_MEMORY, or the reference's own status
 * (reported by the caller with the kernel's name), or FK_OK. */
static fk_status prepare_references(size_t n, selftest_system systems[2], double *references[2],
                                    const char **refused)
{
    *refused = NULL;
    if (!gravity_system(&systems[0], n) || !lj_system(&systems[1], n))
        return FK_ERR_HOST_MEMORY;
    for (int k = 0; k < 2; ++k) {
        references[k] = malloc(3 * systems[k].n * sizeof(double));
        if (!references[k])
            return FK_ERR_HOST_MEMORY;
        fk_eval_config config;
        configure(selftest_kernels[k], &systems[k], &config);
        fk_physics physics = {.eps = config.eps, .cutoff = config.cutoff};
        memcpy(physics.box, config.box, sizeof physics.box);
        const fk_particles particles = {.count = systems[k].n,
                                        .position = systems[k].position,
                                        .mass = k == 0 ? systems[k].mass : NULL,
                                        .type = k == 0 ? NULL : systems[k].type};
        const fk_status status =
            fk_reference_forces(selftest_kernels[k], &particles, &physics, references[k], NULL);
        if (status != FK_OK) {
            *refused = selftest_kernels[k];
            return status;
        }
    }
    return FK_OK;
}

/* The checks of every device run so far: two a device (ga, lj), and the first reproducible
 * checksum of each kernel, which every other device must equal. */
typedef struct selftest_results {
    check *checks;
    int *ran;
    int failures, tested;
    const char *first_checksum[2];
    size_t first_device[2];
} selftest_results;

/* Both checks on device d. */
static void check_device(const fk_device_info *devices, size_t d, const selftest_system systems[2],
                         double *const references[2], selftest_results *results)
{
    fk_context_config context_config = {.device = devices[d].selector};
    fk_context *context = NULL;
    const fk_status status = fk_context_create(&context_config, &context);
    results->ran[d] = 1;
    ++results->tested;
    for (int k = 0; k < 2; ++k) {
        check *c = &results->checks[2 * d + (size_t)k];
        if (status != FK_OK) {
            memset(c, 0, sizeof *c);
            c->kernel = selftest_kernels[k];
            c->error = NAN;
            c->failed = 1;
            snprintf(c->message, sizeof c->message, "no context: %s: %s", fk_status_string(status),
                     context ? fk_context_last_error(context) : "");
            continue;
        }
        run_check(context, selftest_kernels[k], &systems[k], references[k], c);
        if (!c->failed && c->checksum[0]) {
            if (!results->first_checksum[k]) {
                results->first_checksum[k] = c->checksum;
                results->first_device[k] = d;
            } else if (strcmp(results->first_checksum[k], c->checksum) != 0) {
                c->failed = 1;
                snprintf(c->message, sizeof c->message,
                         "reproducible checksum differs from device %s's",
                         devices[results->first_device[k]].selector);
            }
        }
    }
    fk_context_destroy(context);
    results->failures += results->checks[2 * d].failed + results->checks[2 * d + 1].failed;
}

static int print_json_report(const fk_device_info *devices, size_t device_count,
                             const selftest_results *results)
{
    cJSON *document = cJSON_CreateObject();
    cJSON *list = cJSON_AddArrayToObject(document, "devices");
    for (size_t d = 0; results->checks && results->ran && d < device_count; ++d) {
        if (!results->ran[d])
            continue;
        cJSON *device = cJSON_CreateObject();
        cJSON_AddStringToObject(device, "selector", devices[d].selector);
        cJSON_AddStringToObject(device, "name", devices[d].name);
        cJSON_AddStringToObject(device, "platform", devices[d].platform_name);
        cJSON *items = cJSON_AddArrayToObject(device, "checks");
        for (int k = 0; k < 2; ++k) {
            const check *c = &results->checks[2 * d + (size_t)k];
            cJSON *item = cJSON_CreateObject();
            cJSON_AddStringToObject(item, "kernel", c->kernel);
            cli_json_number(item, "error", c->error);
            cJSON_AddNumberToObject(item, "tolerance", SELFTEST_TOLERANCE);
            if (c->checksum[0])
                cJSON_AddStringToObject(item, "reproducible_checksum", c->checksum);
            else
                cJSON_AddNullToObject(item, "reproducible_checksum");
            if (c->not_reproducible)
                cJSON_AddStringToObject(item, "not_reproducible", c->not_reproducible);
            cJSON_AddBoolToObject(item, "passed", !c->failed);
            if (c->failed)
                cJSON_AddStringToObject(item, "message", c->message);
            cJSON_AddItemToArray(items, item);
        }
        cJSON_AddItemToArray(list, device);
    }
    cJSON_AddNumberToObject(document, "devices_tested", results->tested);
    cJSON_AddBoolToObject(document, "passed", results->failures == 0 && results->tested > 0);
    return cli_print_json(document);
}

static void print_table(const fk_device_info *devices, size_t device_count,
                        const selftest_results *results)
{
    printf("%-5s %-6s %-11s %-17s %-6s %s\n", "SEL", "KERNEL", "ERROR", "REPRODUCIBLE", "RESULT",
           "DEVICE");
    for (size_t d = 0; d < device_count; ++d) {
        if (!results->ran[d])
            continue;
        for (int k = 0; k < 2; ++k) {
            const check *c = &results->checks[2 * d + (size_t)k];
            printf("%-5s %-6s %-11.3e %-17s %-6s %s\n", devices[d].selector, c->kernel, c->error,
                   c->checksum[0] ? c->checksum : "-", c->failed ? "FAIL" : "ok", devices[d].name);
            if (c->failed)
                printf("      %s\n", c->message);
            else if (c->not_reproducible)
                printf("      not reproducible here: %s\n", c->not_reproducible);
        }
    }
    const int tested = results->tested, failures = results->failures;
    printf("%d device%s tested, %d check%s failed\n", tested, tested == 1 ? "" : "s", failures,
           failures == 1 ? "" : "s");
}

/* Every device of the list to run, or the one --device selects (*only: device_count when none is
 * singled out). Reports an unmatched selector and returns 2. */
static int select_device(const selftest_options *options, const fk_device_info *devices,
                         size_t device_count, size_t *only)
{
    *only = device_count;
    if (options->device &&
        fk_device_select(devices, device_count, options->device, only) != FK_OK) {
        cli_error("selftest", "no device matches '%s' (see 'forcekit devices')", options->device);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

int cmd_selftest(int argc, char **argv)
{
    selftest_options options = {.n = 1000};
    cli_option table[] = {
        cli_explained(cli_opt_device(&options.device),
                      "only this device (P:D, a name substring, cpu, gpu)"),
        cli_flag("all", &options.all,
                 "also devices of type 'other' (emulators such as oclgrind: slow)"),
        cli_int("n", "N", &options.n, 27, 100000,
                "particles per system (default 1000; the lattice takes the nearest cube, at\n"
                "least 125 so that its box is twice the cutoff across)"),
        cli_explained(cli_opt_json(&options.json),
                      "the results as one JSON document on standard output"),
        cli_opt_help(&options.help),
    };
    static const cli_usage usage = {"selftest", selftest_synopsis, 16, NULL};
    int code = CLI_EXIT_OK;
    if (cli_parse_command(&usage, argc, argv, table, sizeof table / sizeof table[0], &code))
        return code;
    fk_device_info *devices = NULL;
    size_t device_count = 0, only = 0;
    fk_status status = fk_devices_list(&devices, &device_count);
    if (status != FK_OK)
        return cli_report_status(status, NULL);
    if (select_device(&options, devices, device_count, &only) != CLI_EXIT_OK) {
        fk_devices_free(devices);
        return CLI_EXIT_USAGE;
    }

    selftest_system systems[2] = {{0}, {0}};
    double *references[2] = {NULL, NULL};
    const char *refused = NULL;
    const fk_status prepared = prepare_references((size_t)options.n, systems, references, &refused);
    if (prepared != FK_OK) {
        for (int k = 0; k < 2; ++k) {
            free_system(&systems[k]);
            free(references[k]);
        }
        fk_devices_free(devices);
        if (refused) /* a bug of the self-test's own systems, not the user's input */
            cli_error("selftest", "the host reference refused the %s system: %s", refused,
                      fk_status_string(prepared));
        return refused ? CLI_EXIT_RUNTIME : cli_report_status(prepared, NULL);
    }

    selftest_results results = {
        .checks = calloc(2 * (device_count ? device_count : 1), sizeof *results.checks),
        .ran = calloc(device_count ? device_count : 1, sizeof *results.ran)};
    for (size_t d = 0; results.checks && results.ran && d < device_count; ++d) {
        if ((only < device_count && d != only) ||
            (only == device_count && !options.all && devices[d].type == FK_DEVICE_OTHER)) {
            if (!options.json)
                fprintf(stderr, "selftest: %s %s: skipped (type %s; --all or --device runs it)\n",
                        devices[d].selector, devices[d].name, fk_device_type_name(devices[d].type));
            continue;
        }
        check_device(devices, d, systems, references, &results);
    }
    if (options.json)
        code = print_json_report(devices, device_count, &results);
    else if (results.checks && results.ran)
        print_table(devices, device_count, &results);
    const int out_of_memory = !results.checks || !results.ran;
    free(results.checks);
    free(results.ran);
    for (int k = 0; k < 2; ++k) {
        free_system(&systems[k]);
        free(references[k]);
    }
    fk_devices_free(devices);
    if (out_of_memory)
        return cli_report_status(FK_ERR_HOST_MEMORY, NULL);
    if (code != CLI_EXIT_OK)
        return code;
    if (results.tested == 0) {
        cli_error("selftest", "no device was tested");
        return CLI_EXIT_RUNTIME;
    }
    return results.failures ? CLI_EXIT_RUNTIME : CLI_EXIT_OK;
}
