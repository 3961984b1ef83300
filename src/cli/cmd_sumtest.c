/* `forcekit sumtest`: Taufer et al.'s global summation (Tables II-V) on the device. 1,000 values of
 * O(1e6) and O(1e-6) in +/- pairs (the exact sum is 0), summed in six orders by 1, 10, 100 and
 * 1,000 work-items (each a contiguous slice; the host adds the partial sums in the same
 * representation), in float, double, composite, ti and fixed64. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/splitmix64.h"
#include "support/suite.h"

static const char sumtest_synopsis[] =
    "usage: forcekit sumtest [--count N] [--seed S] [--device SEL] [--json]\n\n"
    "Taufer et al.'s global summation on the device: N values (default 1000), half of them\n"
    "uniform in [1, 1e6), half in [1e-7, 1e-5), each followed by its negative, so the exact sum "
    "is\n"
    "0. Six orders (four shuffles, ascending, descending) are summed by 1, 10, 100 and 1000\n"
    "work-items, each summing a contiguous slice, the host adding the partial sums in the same\n"
    "representation: float, double (where the device has fp64), composite (Taufer's float2), ti\n"
    "(Takahashi-Iitaka pair) and fixed64 (64-bit fixed point at a scale from the data).\n"
    "A printed value is the computed sum; anything but 0 is rounding error.\n\n";

/* The values only need to be reproducible: splitmix64. */
static double next_uniform(uint64_t *state)
{
    return (double)(fk_splitmix64(state) >> 11) * 0x1p-53;
}

static int compare_floats(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

enum { SUMTEST_ORDERS = 6, SUMTEST_THREAD_COUNTS = 4 };
static const char *const order_names[SUMTEST_ORDERS] = {
    "shuffled (1)", "shuffled (2)", "shuffled (3)", "shuffled (4)", "ascending", "descending"};
static const size_t thread_counts[SUMTEST_THREAD_COUNTS] = {1, 10, 100, 1000};

/* values in order `order` of the base set (pairs v, -v). */
static void arrange(const float *base, float *values, size_t count, int order, uint64_t seed)
{
    memcpy(values, base, count * sizeof *values);
    if (order < 4) { /* Fisher-Yates with a seed per shuffle */
        uint64_t state = seed * 1000003u + (uint64_t)order + 1;
        for (size_t i = count - 1; i > 0; --i) {
            const size_t j = (size_t)(next_uniform(&state) * (double)(i + 1));
            const float t = values[i];
            values[i] = values[j];
            values[j] = t;
        }
        return;
    }
    qsort(values, count, sizeof *values, compare_floats);
    if (order == 5)
        for (size_t i = 0; i < count / 2; ++i) {
            const float t = values[i];
            values[i] = values[count - 1 - i];
            values[count - 1 - i] = t;
        }
}

int cmd_sumtest(int argc, char **argv)
{
    long long count = 1000, seed = 1;
    const char *device = NULL;
    int json = 0, help = 0;
    cli_option table[] = {
        cli_int("count", "N", &count, 2, 1000000, "values, even, from 2 to 1000000 (default 1000)"),
        cli_opt_seed(&seed, 0, CLI_MAX_SEED, "seed of the values and shuffles (default 1)"),
        cli_opt_device(&device),
        cli_opt_json(&json),
        cli_opt_help(&help),
    };
    static const cli_usage usage = {"sumtest", sumtest_synopsis, 16, NULL};
    int usage_code = CLI_EXIT_OK;
    if (cli_parse_command(&usage, argc, argv, table, sizeof table / sizeof table[0], &usage_code))
        return usage_code;
    if (count % 2)
        return cli_usage_error("sumtest", "--count %lld: must be even (values come in +/- pairs)",
                               count);
    const size_t n = (size_t)count;
    float *base = malloc(n * sizeof *base), *values = malloc(n * sizeof *values);
    fk_context *context = NULL;
    fkt_suite *suite = NULL;
    int code = base && values ? cli_open_suite(device, &context, &suite)
                              : cli_report_status(FK_ERR_HOST_MEMORY, NULL);
    if (code != CLI_EXIT_OK) {
        free(base);
        free(values);
        return code;
    }
    fk_status status = FK_OK;
    uint64_t state = (uint64_t)seed;
    for (size_t i = 0; i < n; i += 2) {
        const double u = next_uniform(&state);
        const float v =
            (float)(next_uniform(&state) < 0.5 ? 1.0 + u * (1e6 - 1.0) : 1e-7 + u * (1e-5 - 1e-7));
        base[i] = v;
        base[i + 1] = -v;
    }

    cJSON *document = json ? cJSON_CreateObject() : NULL;
    cJSON *results = json ? cJSON_AddArrayToObject(document, "results") : NULL;
    if (json) {
        cJSON_AddStringToObject(document, "device", fk_context_device(context)->name);
        cJSON_AddNumberToObject(document, "count", (double)n);
        cJSON_AddNumberToObject(document, "seed", (double)seed);
        cJSON_AddNumberToObject(document, "exact", 0);
    } else {
        printf("global summation of %zu values (+/- pairs, exact sum 0), seed %lld, on %s\n", n,
               seed, fk_context_device(context)->name);
    }
    for (size_t t = 0; t < SUMTEST_THREAD_COUNTS && status == FK_OK; ++t) {
        const size_t threads = thread_counts[t] < n ? thread_counts[t] : n;
        if (!json)
            printf("\n%zu work-item%s\n%-14s %14s %14s %14s %14s %14s\n", threads,
                   threads == 1 ? "" : "s", "ORDER", "FLOAT", "DOUBLE", "COMPOSITE", "TI",
                   "FIXED64");
        for (int order = 0; order < SUMTEST_ORDERS && status == FK_OK; ++order) {
            arrange(base, values, n, order, (uint64_t)seed);
            double sums[FKT_SUM_COUNT];
            status = fkt_suite_sum(suite, values, n, threads, sums);
            if (status != FK_OK)
                break;
            if (json) {
                cJSON *row = cJSON_CreateObject();
                cJSON_AddNumberToObject(row, "threads", (double)threads);
                cJSON_AddStringToObject(row, "order", order_names[order]);
                for (int r = 0; r < FKT_SUM_COUNT; ++r)
                    cli_json_number(row, fkt_sum_name((fkt_sum_representation)r), sums[r]);
                cJSON_AddItemToArray(results, row);
            } else {
                printf("%-14s", order_names[order]);
                for (int r = 0; r < FKT_SUM_COUNT; ++r)
                    if (isnan(sums[r]))
                        printf(" %14s", "n/a");
                    else
                        printf(" %14.4e", sums[r]);
                printf("\n");
            }
        }
    }
    code = cli_close_suite(status, json, document, context, suite);
    free(base);
    free(values);
    return code;
}
