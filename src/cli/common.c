#include "cli/common.h"
#include "support/suite.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

int cli_exit_code(fk_status status)
{
    switch (status) {
    case FK_OK:
        return CLI_EXIT_OK;
    case FK_ERR_INVALID_ARGUMENT:
    case FK_ERR_INVALID_INPUT:
    case FK_ERR_DEVICE_NOT_FOUND:
    case FK_ERR_IO:
    case FK_ERR_PARSE:
        return CLI_EXIT_USAGE;
    case FK_ERR_HOST_MEMORY:
    case FK_ERR_NO_DEVICE:
    case FK_ERR_UNSUPPORTED:
    case FK_ERR_KERNEL_SOURCE: /* an installation problem, not the user's input */
    case FK_ERR_BUILD:
    case FK_ERR_DEVICE_MEMORY:
    case FK_ERR_OPENCL:
    case FK_ERR_STATE:
    case FK_ERR_OVERFLOW: /* the scale chosen from the data was wrong: not the user's to fix */
        return CLI_EXIT_RUNTIME;
    }
    return CLI_EXIT_RUNTIME;
}

int cli_write_exit_code(fk_status status)
{
    return status == FK_ERR_IO ? CLI_EXIT_RUNTIME : cli_exit_code(status);
}

void cli_error(const char *what, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "forcekit: %s: ", what);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
}

int cli_report_status(fk_status status, const fk_context *context)
{
    const char *detail = context ? fk_context_last_error(context) : "";
    if (detail && *detail)
        cli_error(fk_status_string(status), "%s", detail);
    else
        fprintf(stderr, "forcekit: %s\n", fk_status_string(status));
    return cli_exit_code(status);
}

int cli_open_context(const char *device, fk_context **context)
{
    return cli_open_context_timed(device, FK_DEVICE_TIMING_DEFAULT, context);
}

int cli_open_context_timed(const char *device, int device_timing, fk_context **context)
{
    fk_context_config config = FK_CONFIG_INIT(fk_context_config);
    config.device = device;
    config.device_timing = device_timing;
    *context = NULL;
    fk_context *created = NULL;
    fk_status status = fk_context_create(&config, &created);
    if (status != FK_OK) {
        int code = cli_report_status(status, created);
        fk_context_destroy(created);
        return code;
    }
    /* A corrupt tuning database was ignored: say so once, before anything runs. */
    const char *warnings = fk_context_warnings(created);
    for (const char *line = warnings; *line;) {
        size_t length = strcspn(line, "\n");
        fprintf(stderr, "forcekit: warning: %.*s\n", (int)length, line);
        line += length + (line[length] == '\n');
    }
    *context = created;
    return CLI_EXIT_OK;
}

int cli_open_suite(const char *device, fk_context **context, fkt_suite **suite)
{
    *suite = NULL;
    int code = cli_open_context(device, context);
    if (code != CLI_EXIT_OK)
        return code;
    const fk_status status = fkt_suite_open(*context, suite);
    if (status == FK_OK)
        return CLI_EXIT_OK;
    code = cli_report_status(status, *context);
    fk_context_destroy(*context);
    *context = NULL;
    *suite = NULL;
    return code;
}

int cli_close_suite(fk_status status, int json, cJSON *document, fk_context *context,
                    fkt_suite *suite)
{
    int code = CLI_EXIT_OK;
    if (status != FK_OK) {
        code = cli_report_status(status, context);
        cJSON_Delete(document);
    } else if (json) {
        code = cli_print_json(document);
    }
    fkt_suite_close(suite);
    fk_context_destroy(context);
    return code;
}

int cli_check_fits_device(const fk_context *context, size_t count)
{
    const fk_device_info *device = fk_context_device(context);
    const uint64_t bytes = (uint64_t)count * 16u;
    if (bytes <= device->max_allocation_bytes && bytes <= device->global_memory_bytes)
        return CLI_EXIT_OK;
    cli_error(fk_status_string(FK_ERR_DEVICE_MEMORY),
              "N = %zu needs %llu bytes of particle data; %s allows %llu per buffer", count,
              (unsigned long long)bytes, device->name,
              (unsigned long long)device->max_allocation_bytes);
    return CLI_EXIT_RUNTIME;
}

static const char *kernel_name_at(size_t index)
{
    const fk_kernel_info *kernel = fk_kernel_at(index);
    return kernel ? kernel->name : NULL;
}

static const char *accum_name_at(size_t index)
{
    const fk_accum_info *accum = fk_accum_at(index);
    return accum ? accum->name : NULL;
}

/* `forcekit: COMMAND: unknown WHAT 'NAME'; available: ...` from the registry; returns 2. */
static int unknown_name(const char *command, const char *what, const char *name,
                        const char *(*name_at)(size_t))
{
    fprintf(stderr, "forcekit: %s: unknown %s '%s'; available:", command, what, name);
    for (size_t i = 0; name_at(i); ++i)
        fprintf(stderr, " %s", name_at(i));
    fputc('\n', stderr);
    return CLI_EXIT_USAGE;
}

int cli_find_kernel(const char *command, const char *name, const fk_kernel_info **kernel)
{
    *kernel = fk_kernel_find(name);
    return *kernel ? CLI_EXIT_OK : unknown_name(command, "kernel", name, kernel_name_at);
}

int cli_find_accum(const char *command, const char *name, const fk_accum_info **accum)
{
    *accum = fk_accum_find(name);
    return *accum ? CLI_EXIT_OK : unknown_name(command, "accumulator", name, accum_name_at);
}

int cli_kernel_is_gravity(const char *kernel)
{
    int layout = fkt_io_layout_for_kernel(kernel);
    return layout == FKT_LAYOUT_XYZM || layout == FKT_LAYOUT_XYZM_VEL;
}

int cli_parse_format(const char *text, fkt_file_format *format)
{
    if (!text || strcmp(text, "auto") == 0)
        *format = FKT_FORMAT_AUTO;
    else if (strcmp(text, "text") == 0)
        *format = FKT_FORMAT_TEXT;
    else if (strcmp(text, "tipsy") == 0)
        *format = FKT_FORMAT_TIPSY;
    else
        return 0;
    return 1;
}

int cli_parse_algorithm(const char *command, const char *text, fk_algorithm *algorithm)
{
    *algorithm = FK_ALGORITHM_ALL_PAIRS;
    if (!text)
        return CLI_EXIT_OK;
    if (fk_algorithm_find(text, algorithm) != FK_OK)
        return cli_usage_error(
            command, "--algorithm '%s': expected all-pairs, symmetric, cells, neighbors or auto",
            text);
    return CLI_EXIT_OK;
}

int cli_parse_lists(const char *command, const char *text, int *lists)
{
    *lists = FK_NEIGHBOR_LISTS_AUTO;
    if (!text || strcmp(text, "auto") == 0)
        return CLI_EXIT_OK;
    if (strcmp(text, "half") == 0)
        *lists = FK_NEIGHBOR_LISTS_HALF;
    else if (strcmp(text, "full") == 0)
        *lists = FK_NEIGHBOR_LISTS_FULL;
    else
        return cli_usage_error(command, "--lists '%s': expected half, full or auto", text);
    return CLI_EXIT_OK;
}

const char cli_positions_usage[] =
    "\n--positions P: how the device stores coordinates (and masses, charges, velocities) for\n"
    "the pair differences: float (default; relative 6e-8 of each coordinate) or ds\n"
    "(double-single: a float pair each, 48 bits, so ref's double pair arithmetic agrees with\n"
    "double to about 1e-14 and close pairs far from the origin keep their separation; twice the\n"
    "particle memory; all-pairs and symmetric loops, open boundaries; docs/precision.md).\n";

int cli_parse_positions(const char *command, const char *text, int *positions)
{
    *positions = FK_POSITIONS_FLOAT;
    fk_positions found = FK_POSITIONS_FLOAT;
    if (!text)
        return CLI_EXIT_OK;
    if (fk_positions_find(text, &found) != FK_OK)
        return cli_usage_error(command, "--positions '%s': expected float or ds", text);
    *positions = (int)found;
    return CLI_EXIT_OK;
}

int cli_parse_device_timing(const char *command, const char *text, int fallback, int *timing)
{
    *timing = fallback;
    if (!text)
        return CLI_EXIT_OK;
    if (strcmp(text, "on") == 0)
        *timing = FK_DEVICE_TIMING_ON;
    else if (strcmp(text, "off") == 0)
        *timing = FK_DEVICE_TIMING_OFF;
    else
        return cli_usage_error(command, "--device-timing '%s': expected on or off", text);
    return CLI_EXIT_OK;
}

void cli_unroll_name(int unroll_i, int unroll_j, char name[CLI_UNROLL_NAME_SIZE])
{
    snprintf(name, CLI_UNROLL_NAME_SIZE, "%dx%d", unroll_i, unroll_j);
}

const char *cli_variant_source_token(fk_variant_source source)
{
    switch (source) {
    case FK_VARIANT_EXPLICIT:
        return "explicit";
    case FK_VARIANT_DEFAULT:
        return "default";
    case FK_VARIANT_USER_DB:
        return "user_db";
    case FK_VARIANT_SHIPPED_DB:
        return "shipped_db";
    case FK_VARIANT_FITTED:
        return "fitted";
    }
    return "unknown";
}

const char *cli_variant_source_text(fk_variant_source source)
{
    switch (source) {
    case FK_VARIANT_EXPLICIT:
        return "explicit";
    case FK_VARIANT_DEFAULT:
        return "built-in default";
    case FK_VARIANT_USER_DB:
        return "user tuning database";
    case FK_VARIANT_SHIPPED_DB:
        return "shipped tuning database";
    case FK_VARIANT_FITTED:
        return "narrowed to the device's limits";
    }
    return "unknown source";
}

int cli_print_json(cJSON *document)
{
    char *text = document ? cJSON_Print(document) : NULL;
    cJSON_Delete(document);
    if (!text) {
        cli_error("json", "out of memory while building the JSON document");
        return CLI_EXIT_RUNTIME;
    }
    int failed = fputs(text, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) != 0;
    cJSON_free(text);
    if (failed) {
        cli_error("json", "cannot write standard output");
        return CLI_EXIT_RUNTIME;
    }
    return CLI_EXIT_OK;
}

void cli_json_number(cJSON *object, const char *key, double value)
{
    if (isfinite(value))
        cJSON_AddNumberToObject(object, key, value);
    else
        cJSON_AddNullToObject(object, key);
}

void cli_utc_timestamp(char text[CLI_TIMESTAMP_SIZE])
{
    time_t now = time(NULL);
    struct tm utc;
    if (now == (time_t)-1 || !gmtime_r(&now, &utc) ||
        strftime(text, CLI_TIMESTAMP_SIZE, "%Y-%m-%dT%H:%M:%SZ", &utc) == 0)
        snprintf(text, CLI_TIMESTAMP_SIZE, "unknown");
}

void cli_checksum(const double *values, size_t count, char text[CLI_CHECKSUM_SIZE])
{
    const unsigned long long hash = (unsigned long long)XXH3_64bits(values, count * sizeof *values);
    snprintf(text, CLI_CHECKSUM_SIZE, "%016llx", hash);
}

void cli_note_reproducible(const fk_eval *eval, const char *device_name)
{
    const char *reason = NULL;
    const int capable = fk_eval_reproducible(eval, &reason);
    if (capable == 1)
        fprintf(stderr, "reproducible: exact fixed-point sums, correctly rounded divide and sqrt, "
                        "no contraction, denormals kept: bit-identical on every capable device\n");
    else if (capable == 0)
        fprintf(stderr,
                "forcekit: warning: %s cannot give cross-device bit-identical results: %s; they "
                "are still deterministic on this device\n",
                device_name, reason ? reason : "unknown");
}

void cli_note_variant(const fk_eval *eval)
{
    const char *note = fk_eval_variant_note(eval);
    if (note && *note)
        fprintf(stderr, "forcekit: note: %s\n", note);
}

void cli_json_variant_note(cJSON *object, const fk_eval *eval)
{
    const char *note = fk_eval_variant_note(eval);
    if (note && *note)
        cJSON_AddStringToObject(object, "variant_note", note);
}
