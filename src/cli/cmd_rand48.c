/* `forcekit rand48`: the glibc srand48 / lrand48 / drand48 sequence, computed on the device by van
 * Meel et al.'s leapfrog (cl/rand48.cl) or on the host (--host), one value a line in sequence
 * order. The device and host sequences are identical: a seed gives the same initial conditions on
 * every device. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "support/rand48.h"

static const char rand48_synopsis[] =
    "usage: forcekit rand48 --count N [--seed S] [--float] [--host] [--work-items W]\n"
    "                       [--device SEL] [--json]\n\n"
    "Prints the first N values of the rand48 sequence of seed S, one a line: lrand48() values\n"
    "(integers in [0, 2^31)), or drand48() values (in [0, 1), printed %.17g) with --float,\n"
    "identical to glibc's srand48(S) followed by N calls. Computed on the device: W work-items\n"
    "(default 1,024 per compute unit, at most N) each start from a consecutive state and jump W\n"
    "states at a time with A = a^W, C = c (a^(W-1) + ... + 1) mod 2^48 (van Meel et al., sec. "
    "4).\n\n";

/* Values per device call and per printed block: bounds the host memory whatever N is. */
#define RAND48_CHUNK ((size_t)1 << 20)
#define RAND48_JSON_MAX 1000000

int cmd_rand48(int argc, char **argv)
{
    long long count = 0, seed = 0, work_items = 0;
    const char *device = NULL;
    int as_float = 0, host = 0, json = 0, help = 0;
    cli_option table[] = {
        cli_int("count", "N", &count, 0, 281474976710656.0,
                "values, 0 to 2^48 (the period); 0 prints nothing"),
        cli_opt_seed(&seed, -CLI_MAX_SEED, CLI_MAX_SEED,
                     "seed, -2^53 to 2^53 (default 0); as in glibc only its low 32 bits count"),
        cli_flag("float", &as_float, "drand48() values instead of lrand48()"),
        cli_flag("host", &host, "compute on the host instead of the device"),
        cli_int("work-items", "W", &work_items, 1, 4194304,
                "device work-items, 1 to 4194304 (default: automatic)"),
        cli_opt_device(&device),
        cli_explained(cli_opt_json(&json), "{\"seed\", \"count\", \"float\", \"device\", "
                                           "\"work_items\", \"values\"}; at most\n"
                                           "1,000,000 values (write text for more)"),
        cli_opt_help(&help),
    };
    const size_t options = sizeof table / sizeof table[0];
    static const cli_usage usage = {"rand48", rand48_synopsis, 19, NULL};
    int usage_code = CLI_EXIT_OK;
    if (cli_parse_command(&usage, argc, argv, table, options, &usage_code))
        return usage_code;
    if (!cli_option_named(table, options, "count")->given)
        return cli_usage_error("rand48", "--count is required");
    if (host && (cli_option_named(table, options, "device")->given ||
                 cli_option_named(table, options, "work-items")->given))
        return cli_usage_error("rand48", "--host runs no device: --device and --work-items do not "
                                         "apply");
    if (json && count > RAND48_JSON_MAX)
        return cli_usage_error("rand48",
                               "--count %lld: --json holds at most %d values (print text for more)",
                               count, RAND48_JSON_MAX);

    fk_context *context = NULL;
    fkt_rand48_device *generator = NULL;
    if (!host) {
        int code = cli_open_context(device, &context);
        if (code != CLI_EXIT_OK)
            return code;
        fk_status status = fkt_rand48_device_open(context, &generator);
        if (status != FK_OK) {
            code = cli_report_status(status, context);
            fk_context_destroy(context);
            return code;
        }
    }
    const char *device_name = context ? fk_context_device(context)->name : "host";

    long *integers = as_float ? NULL : malloc(RAND48_CHUNK * sizeof *integers);
    double *reals = as_float ? malloc(RAND48_CHUNK * sizeof *reals) : NULL;
    cJSON *document = json ? cJSON_CreateObject() : NULL;
    cJSON *values = NULL;
    if (document) {
        cJSON_AddNumberToObject(document, "seed", (double)seed);
        cJSON_AddNumberToObject(document, "count", (double)count);
        cJSON_AddBoolToObject(document, "float", as_float);
        cJSON_AddStringToObject(document, "device", device_name);
        /* the streams of the first block (each block of 2^20 values is one call) */
        cJSON_AddNumberToObject(
            document, "work_items",
            host ? 1.0
                 : (double)fkt_rand48_device_work_items(
                       generator, (size_t)count < RAND48_CHUNK ? (size_t)count : RAND48_CHUNK,
                       (size_t)work_items));
        values = cJSON_AddArrayToObject(document, "values");
    }
    int code = CLI_EXIT_OK;
    if ((!integers && !reals) || (json && !values))
        code = cli_report_status(FK_ERR_HOST_MEMORY, NULL);

    fkt_rand48 stream;
    fkt_rand48_seed(&stream, (long)seed);
    const uint64_t total = (uint64_t)count;
    for (uint64_t first = 0; code == CLI_EXIT_OK && first < total; first += RAND48_CHUNK) {
        const size_t n = total - first < RAND48_CHUNK ? (size_t)(total - first) : RAND48_CHUNK;
        if (host) {
            for (size_t k = 0; k < n; k++)
                if (as_float)
                    reals[k] = fkt_rand48_drand(&stream);
                else
                    integers[k] = fkt_rand48_lrand(&stream);
        } else {
            fk_status status = fkt_rand48_device_generate(generator, (long)seed, first, n,
                                                          (size_t)work_items, integers, reals);
            if (status != FK_OK) {
                code = cli_report_status(status, context);
                break;
            }
        }
        for (size_t k = 0; k < n; k++) {
            if (json)
                cJSON_AddItemToArray(values,
                                     cJSON_CreateNumber(as_float ? reals[k] : (double)integers[k]));
            else if (as_float)
                printf("%.17g\n", reals[k]);
            else
                printf("%ld\n", integers[k]);
        }
        if (!json && ferror(stdout)) {
            cli_error("rand48", "cannot write to standard output");
            code = CLI_EXIT_RUNTIME;
        }
    }
    if (code == CLI_EXIT_OK && json) {
        code = cli_print_json(document);
        document = NULL;
    }
    if (code == CLI_EXIT_OK && fflush(stdout) != 0) {
        cli_error("rand48", "cannot write to standard output");
        code = CLI_EXIT_RUNTIME;
    }
    cJSON_Delete(document);
    free(integers);
    free(reals);
    fkt_rand48_device_close(generator);
    fk_context_destroy(context);
    return code;
}
