/* `forcekit doundo`: Taufer et al.'s do/undo programs (Fig. 7-8, Table VI) on the device: one
 * work-item repeats x = (x * y) / y or x = (x / y) * y with a fresh random y, in float, double and
 * composite precision, and the drift of x from its start and the time are reported. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "support/suite.h"

static const char doundo_synopsis[] =
    "usage: forcekit doundo [--iterations N] [--seed S] [--device SEL] [--json]\n\n"
    "Taufer et al.'s do/undo programs on the device: one work-item sets x to a random start, then\n"
    "N times (default 1000000) draws y and computes x = (x * y) / y (\"mul-div\") or\n"
    "x = (x / y) * y (\"div-mul\"), in float, double (where the device has fp64) and composite\n"
    "precision, for the paper's three ranges: x, y in (1, 100); x in (1e5, 1e6), y in (1e-6,\n"
    "1e-5); x in (1e-6, 1e-5), y in (1e5, 1e6). Exact arithmetic would leave x unchanged: the\n"
    "drift (x_end - x_start) / x_start is the accumulated rounding. Also the device time.\n\n";

typedef struct trial {
    const char *name;
    float x_low, x_high, y_low, y_high;
} trial;

static const trial trials[] = {
    {"x (1, 100), y (1, 100)", 1.0f, 100.0f, 1.0f, 100.0f},
    {"x (1e5, 1e6), y (1e-6, 1e-5)", 1e5f, 1e6f, 1e-6f, 1e-5f},
    {"x (1e-6, 1e-5), y (1e5, 1e6)", 1e-6f, 1e-5f, 1e5f, 1e6f},
};

int cmd_doundo(int argc, char **argv)
{
    long long iterations = 1000000, seed = 1;
    const char *device = NULL;
    int json = 0, help = 0;
    cli_option table[] = {
        cli_int("iterations", "N", &iterations, 1, 1e9, "iterations per run (default 1000000)"),
        cli_opt_seed(&seed, 0, 4294967295.0,
                     "seed of the start values and the y sequence (default 1)"),
        cli_opt_device(&device),
        cli_opt_json(&json),
        cli_opt_help(&help),
    };
    static const cli_usage usage = {"doundo", doundo_synopsis, 18, NULL};
    int usage_code = CLI_EXIT_OK;
    if (cli_parse_command(&usage, argc, argv, table, sizeof table / sizeof table[0], &usage_code))
        return usage_code;
    fk_context *context = NULL;
    fkt_suite *suite = NULL;
    int code = cli_open_suite(device, &context, &suite);
    if (code != CLI_EXIT_OK)
        return code;
    fk_status status = FK_OK;
    cJSON *document = json ? cJSON_CreateObject() : NULL;
    cJSON *results = json ? cJSON_AddArrayToObject(document, "results") : NULL;
    if (json) {
        cJSON_AddStringToObject(document, "device", fk_context_device(context)->name);
        cJSON_AddNumberToObject(document, "iterations", (double)iterations);
        cJSON_AddNumberToObject(document, "seed", (double)seed);
    } else {
        printf("do/undo, %lld iterations, seed %lld, on %s\n%-30s %-8s %-10s %14s %12s\n",
               iterations, seed, fk_context_device(context)->name, "RANGE", "OPS", "REPR", "DRIFT",
               "SECONDS");
    }
    for (size_t t = 0; t < sizeof trials / sizeof trials[0] && status == FK_OK; ++t) {
        /* the start: a fixed fraction of the range from the seed (the y come from the device) */
        const double fraction = fmod((double)seed * 0.6180339887498949 + 0.25, 1.0);
        const float x0 = trials[t].x_low + (float)fraction * (trials[t].x_high - trials[t].x_low);
        for (int divide_first = 0; divide_first < 2 && status == FK_OK; ++divide_first)
            for (int r = 0; r < FKT_DOUNDO_COUNT && status == FK_OK; ++r) {
                if (r == FKT_DOUNDO_DOUBLE && !fkt_suite_has_double(suite))
                    continue;
                double final = NAN, seconds = NAN;
                status = fkt_suite_doundo(suite, (fkt_doundo_representation)r, x0, trials[t].y_low,
                                          trials[t].y_high, (uint32_t)seed + (uint32_t)t,
                                          (int)iterations, divide_first, &final, &seconds);
                if (status != FK_OK)
                    break;
                const double drift = (final - (double)x0) / (double)x0;
                const char *ops = divide_first ? "div-mul" : "mul-div";
                const char *name = fkt_doundo_name((fkt_doundo_representation)r);
                if (json) {
                    cJSON *row = cJSON_CreateObject();
                    cJSON_AddStringToObject(row, "range", trials[t].name);
                    cJSON_AddStringToObject(row, "ops", ops);
                    cJSON_AddStringToObject(row, "representation", name);
                    cli_json_number(row, "x_start", x0);
                    cli_json_number(row, "x_end", final);
                    cli_json_number(row, "drift", drift);
                    cli_json_number(row, "seconds", seconds);
                    cJSON_AddItemToArray(results, row);
                } else {
                    printf("%-30s %-8s %-10s %14.4e %12.4e\n", trials[t].name, ops, name, drift,
                           seconds);
                }
            }
    }
    return cli_close_suite(status, json, document, context, suite);
}
