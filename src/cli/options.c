#include "cli/options.h"

#include "cli/common.h"
#include "forcekit/forcekit.h"
#include "core/internal.h" /* fk__variant_check: the one place for the variant rules */

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_parse_long(const char *text, long long *value)
{
    /* strtoll skips leading white space and accepts an empty string as 0: reject both. */
    if (!text || !*text || isspace((unsigned char)*text))
        return 0;
    char *end = NULL;
    errno = 0;
    long long parsed = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0')
        return 0;
    *value = parsed;
    return 1;
}

int cli_parse_finite_double(const char *text, double *value)
{
    if (!text || !*text || isspace((unsigned char)*text))
        return 0;
    char *end = NULL;
    errno = 0;
    double parsed = strtod(text, &end);
    /* ERANGE on underflow still gives a usable (tiny) value; only overflow and junk are errors. */
    if (end == text || *end != '\0' || !isfinite(parsed))
        return 0;
    *value = parsed;
    return 1;
}

static cli_option *find_option(cli_option *options, size_t count, const char *name,
                               size_t name_length)
{
    for (size_t i = 0; i < count; ++i)
        if (options[i].kind != CLI_LAW_PARAMETER && options[i].kind != CLI_HELP_LINE &&
            strlen(options[i].name) == name_length &&
            strncmp(options[i].name, name, name_length) == 0)
            return &options[i];
    return NULL;
}

/* The registry's name for a law parameter called name (its storage), or NULL: the names come
 * from the force laws, so a new law's parameter is an option without a change here. */
static const char *law_parameter_name(const char *name, size_t name_length)
{
    for (size_t k = 0; fk_kernel_at(k); ++k) {
        const fk_kernel_info *kernel = fk_kernel_at(k);
        for (unsigned p = 0; p < kernel->parameter_count; ++p) {
            const char *candidate = kernel->parameters[p].name;
            if (strlen(candidate) == name_length && strncmp(candidate, name, name_length) == 0)
                return candidate;
        }
    }
    return NULL;
}

static cli_option *law_parameter_option(cli_option *options, size_t count)
{
    for (size_t i = 0; i < count; ++i)
        if (options[i].kind == CLI_LAW_PARAMETER)
            return &options[i];
    return NULL;
}

const cli_option *cli_option_named(const cli_option *options, size_t count, const char *name)
{
    for (size_t i = 0; i < count; ++i)
        if (options[i].kind != CLI_HELP_LINE && strcmp(options[i].name, name) == 0)
            return &options[i];
    return NULL;
}

static int unroll_factor(char digit)
{
    return digit == '1' || digit == '2' || digit == '4' || digit == '8' ? digit - '0' : 0;
}

int cli_parse_unroll(const char *text, int *unroll_i, int *unroll_j)
{
    if (strcmp(text, "auto") == 0) {
        *unroll_i = *unroll_j = 0;
        return 1;
    }
    /* Exactly "IxJ": each factor a single digit, so "04x4" or "+4x4" are not variant names. */
    if (strlen(text) != 3 || text[1] != 'x' || !unroll_factor(text[0]) || !unroll_factor(text[2]))
        return 0;
    *unroll_i = unroll_factor(text[0]);
    *unroll_j = unroll_factor(text[2]);
    return 1;
}

int cli_usage_error(const char *command, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "forcekit: %s: ", command);
    vfprintf(stderr, format, args);
    fprintf(stderr, " (see 'forcekit %s --help')\n", command);
    va_end(args);
    return 2;
}

static int store_value(const char *command, cli_option *option, const char *text)
{
    switch (option->kind) {
    case CLI_FLAG:
    case CLI_LAW_PARAMETER:
    case CLI_HELP_LINE:
        break;
    case CLI_STRING:
        *(const char **)option->value = text;
        return 0;
    case CLI_INT: {
        long long parsed = 0;
        if (!cli_parse_long(text, &parsed))
            return cli_usage_error(command, "--%s: '%s' is not an integer", option->name, text);
        if ((double)parsed < option->min || (double)parsed > option->max)
            return cli_usage_error(command, "--%s %s: must be from %.0f to %.0f", option->name,
                                   text, option->min, option->max);
        *(long long *)option->value = parsed;
        return 0;
    }
    case CLI_DOUBLE: {
        double parsed = 0;
        if (!cli_parse_finite_double(text, &parsed))
            return cli_usage_error(command, "--%s: '%s' is not a finite number", option->name,
                                   text);
        if (parsed < option->min || parsed > option->max) {
            if (isinf(option->max))
                return cli_usage_error(command, "--%s %s: must be at least %g", option->name, text,
                                       option->min);
            return cli_usage_error(command, "--%s %s: must be from %g to %g", option->name, text,
                                   option->min, option->max);
        }
        *(double *)option->value = parsed;
        return 0;
    }
    }
    return cli_usage_error(command, "--%s: internal error: unknown option kind", option->name);
}

int cli_parse_options(const char *command, int argc, char **argv, cli_option *options, size_t count)
{
    for (int index = 1; index < argc; ++index) {
        const char *argument = argv[index];
        if (strcmp(argument, "-h") == 0 && find_option(options, count, "help", 4))
            argument = "--help";
        if (strncmp(argument, "--", 2) != 0 || argument[2] == '\0')
            return cli_usage_error(command, "unexpected argument '%s'", argument);
        const char *name = argument + 2;
        const char *equals = strchr(name, '=');
        size_t name_length = equals ? (size_t)(equals - name) : strlen(name);
        cli_option *option = find_option(options, count, name, name_length);
        const char *parameter = NULL;
        if (!option && (option = law_parameter_option(options, count)) != NULL &&
            (parameter = law_parameter_name(name, name_length)) == NULL)
            option = NULL;
        if (!option) {
            /* Print only the name part, so a long --name=value stays readable. */
            char shown[64];
            snprintf(shown, sizeof shown, "%.*s", (int)(name_length < 60 ? name_length : 60), name);
            return cli_usage_error(command, "unknown option '--%s'", shown);
        }
        option->given = 1;
        if (option->kind == CLI_FLAG) {
            if (equals)
                return cli_usage_error(command, "option --%s takes no value", option->name);
            *(int *)option->value = 1;
            continue;
        }
        const char *text = NULL;
        if (equals) {
            text = equals + 1;
        } else {
            /* A following "--option" is a forgotten value, not a value: no legitimate value
             * starts with "--" (a file so named can be given as ./--name or --in=--name). */
            if (index + 1 >= argc || strncmp(argv[index + 1], "--", 2) == 0)
                return cli_usage_error(command, "option --%s needs a value", option->name);
            text = argv[++index];
        }
        if (parameter) {
            cli_named_values *values = option->value;
            for (size_t k = 0; k < values->count; ++k)
                if (strcmp(values->name[k], parameter) == 0)
                    return cli_usage_error(command, "--%s given twice", parameter);
            if (values->count == CLI_MAX_NAMED_VALUES)
                return cli_usage_error(command, "too many force-law parameters");
            values->name[values->count] = parameter;
            values->text[values->count++] = text;
            continue;
        }
        if (store_value(command, option, text) != 0)
            return 2;
    }
    return 0;
}

cli_option cli_flag(const char *name, int *value, const char *help)
{
    return (cli_option){.name = name, .kind = CLI_FLAG, .value = value, .help = help};
}

/* An option that takes a value: its kind, storage and the value's name in the help. */
static cli_option with_value(const char *name, cli_option_kind kind, void *value,
                             const char *argument, const char *help)
{
    return (cli_option){
        .name = name, .kind = kind, .value = value, .argument = argument, .help = help};
}

static cli_option in_range(cli_option option, double min, double max)
{
    option.min = min;
    option.max = max;
    return option;
}

cli_option cli_string(const char *name, const char *argument, const char **value, const char *help)
{
    return with_value(name, CLI_STRING, value, argument, help);
}

cli_option cli_int(const char *name, const char *argument, long long *value, double min, double max,
                   const char *help)
{
    return in_range(with_value(name, CLI_INT, value, argument, help), min, max);
}

cli_option cli_double(const char *name, const char *argument, double *value, double min, double max,
                      const char *help)
{
    return in_range(with_value(name, CLI_DOUBLE, value, argument, help), min, max);
}

cli_option cli_help_line(const char *name, const char *argument, const char *help)
{
    return (cli_option){.name = name, .kind = CLI_HELP_LINE, .argument = argument, .help = help};
}

cli_option cli_explained(cli_option option, const char *help)
{
    option.help = help;
    option.group = CLI_GROUP_COMMAND;
    return option;
}

cli_option cli_explained_as(cli_option option, const char *argument, const char *help)
{
    option.argument = argument;
    return cli_explained(option, help);
}

static cli_option in_group(cli_option option, cli_option_group group)
{
    option.group = group;
    return option;
}

cli_option cli_opt_help(int *value)
{
    return in_group(cli_flag("help", value, NULL), CLI_GROUP_HIDDEN);
}

cli_option cli_opt_json(int *value)
{
    return cli_flag("json", value, "print the results as one JSON document on standard output");
}

cli_option cli_opt_device(const char **value)
{
    return cli_string("device", "SEL", value, "P:D, a substring of the device name, cpu or gpu");
}

cli_option cli_opt_kernel(const char **value)
{
    return cli_string("kernel", "K", value, "force law (listed at the end)");
}

cli_option cli_opt_accum(const char **value)
{
    return cli_string("accum", "A", value, "accumulator (default float)");
}

cli_option cli_opt_seed(long long *value, double min, double max, const char *help)
{
    return cli_int("seed", "S", value, min, max, help);
}

cli_option cli_opt_eps(double *value, const char *help)
{
    return cli_double("eps", "E", value, 0, HUGE_VAL, help);
}

cli_option cli_opt_reproducible(int *value, const char *help)
{
    return cli_flag("reproducible", value, help);
}

cli_option cli_opt_format(const char **value)
{
    return cli_string("format", "F", value,
                      "input format: auto (by file name, default), text or tipsy");
}

cli_option cli_opt_algorithm(const char **value)
{
    return in_group(
        cli_string("algorithm", "A", value,
                   "pair loop: all-pairs (default), symmetric (each pair once, Newton's third\n"
                   "law), cells (cell lists) or neighbors (Verlet lists built from the cells;\n"
                   "cells and neighbors: short-range kernels with a cutoff) or auto (one of\n"
                   "all-pairs, cells and neighbors from the tuning database's measurements\n"
                   "for N, else by a rule of N, density, cutoff and device; says its choice)"),
        CLI_GROUP_LOOP);
}

cli_option cli_opt_lists(const char **value)
{
    return in_group(
        cli_string("lists", "L", value,
                   "neighbors: half (each pair once, Newton's third law; float, double and\n"
                   "fixed64), full (every partner in each list) or auto (default: half on\n"
                   "CPUs where the accumulator allows, full on GPUs)"),
        CLI_GROUP_LOOP);
}

cli_option cli_opt_positions(const char **value)
{
    return in_group(cli_string("positions", "P", value, NULL), CLI_GROUP_HIDDEN);
}

cli_option cli_opt_device_timing(const char **value, const char *help)
{
    return cli_string("device-timing", "T", value, help);
}

cli_option cli_opt_unroll(const char **value)
{
    return in_group(
        cli_string("unroll", "IxJ", value, "i and j unrolling, each 1, 2, 4 or 8; auto (default)"),
        CLI_GROUP_SHAPE);
}

cli_option cli_opt_wg(long long *value)
{
    return in_group(
        cli_int("wg", "W", value, 1, 1 << 20, "work-group size (the j-tile of the tiled loops)"),
        CLI_GROUP_SHAPE);
}

cli_option cli_opt_splits(long long *value)
{
    return in_group(cli_int("splits", "S", value, 1, 1 << 20,
                            "work-groups sharing one i-block's j-range (all-pairs)"),
                    CLI_GROUP_SHAPE);
}

cli_option cli_opt_tiling(const char **value)
{
    return in_group(cli_string("tiling", "on|off", value, "j-tiles staged in local memory"),
                    CLI_GROUP_SHAPE);
}

cli_option cli_opt_lanes(const char **value)
{
    return in_group(cli_string("lanes", "L", value, "CPU lane forms: auto (default), off, 8 or 16"),
                    CLI_GROUP_SHAPE);
}

void cli_print_options(FILE *out, const cli_option *options, size_t count, cli_option_group group,
                       int column)
{
    for (size_t i = 0; i < count; ++i) {
        const cli_option *option = &options[i];
        if (option->group != group || !option->help)
            continue;
        char label[96];
        snprintf(label, sizeof label, "  --%s%s%s", option->name, option->argument ? " " : "",
                 option->argument ? option->argument : "");
        const int width = (int)strlen(label);
        /* a label longer than the column keeps two spaces before its help */
        fprintf(out, "%s%*s", label, width < column ? column - width : 2, "");
        for (const char *line = option->help;;) {
            const size_t length = strcspn(line, "\n");
            fprintf(out, "%.*s\n", (int)length, line);
            if (line[length] == '\0')
                break;
            line += length + 1;
            fprintf(out, "%*s", column, "");
        }
    }
}

int cli_parse_command(const cli_usage *usage, int argc, char **argv, cli_option *options,
                      size_t count, int *code)
{
    *code = CLI_EXIT_OK;
    if (cli_parse_options(usage->command, argc, argv, options, count) != 0) {
        *code = CLI_EXIT_USAGE;
        return 1;
    }
    const cli_option *help = cli_option_named(options, count, "help");
    if (!help || !help->given)
        return 0;
    fputs(usage->synopsis, stdout);
    cli_print_options(stdout, options, count, CLI_GROUP_COMMAND, usage->column);
    if (usage->after)
        usage->after(stdout, options, count);
    return 1;
}

void cli_print_shape_usage(FILE *out, const cli_option *options, size_t count)
{
    fputs("\nVariant shape (default: automatic, from the tuning database or the built-in "
          "default, narrowed\n"
          "to what the device allows for the built kernel; an explicit value that does not fit "
          "is an\n"
          "error):\n",
          out);
    cli_print_options(out, options, count, CLI_GROUP_SHAPE, 18);
}

int cli_shape_config(const char *command, const cli_shape_options *shape,
                     struct fk_eval_config *config)
{
    int unroll_i = 0, unroll_j = 0;
    if (shape->unroll && strcmp(shape->unroll, "all") != 0 &&
        !cli_parse_unroll(shape->unroll, &unroll_i, &unroll_j))
        return cli_usage_error(command,
                               "--unroll '%s': expected IxJ with I, J in {1, 2, 4, 8} or auto",
                               shape->unroll);
    int tiling = 0;
    if (shape->tiling && strcmp(shape->tiling, "on") == 0)
        tiling = 1;
    else if (shape->tiling && strcmp(shape->tiling, "off") == 0)
        tiling = -1;
    else if (shape->tiling)
        return cli_usage_error(command, "--tiling '%s': expected on or off", shape->tiling);
    int lanes = 0;
    if (shape->lanes && strcmp(shape->lanes, "off") == 0)
        lanes = -1;
    else if (shape->lanes && (strcmp(shape->lanes, "8") == 0 || strcmp(shape->lanes, "16") == 0))
        lanes = atoi(shape->lanes);
    else if (shape->lanes && strcmp(shape->lanes, "auto") != 0)
        return cli_usage_error(command, "--lanes '%s': expected auto, off, 8 or 16", shape->lanes);
    char reason[256];
    if (!fk__variant_check(unroll_i, unroll_j, (int)shape->work_group_size, tiling, reason,
                           sizeof reason))
        return cli_usage_error(command, "%s", reason);
    config->unroll_i = unroll_i;
    config->unroll_j = unroll_j;
    config->work_group_size = (int)shape->work_group_size;
    config->local_tiling = tiling;
    config->j_splits = (int)shape->splits;
    config->lanes = lanes;
    return 0;
}
