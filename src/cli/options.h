/* The command's options, declared once in tables of descriptors (name, value, help, parser into
 * a field) that each command composes from the shared entries below and its own; the parser and
 * the --help text both read the table, so they cannot drift (curl's option table is the model).
 * `--name value`, `--name=value` and flags; every option is long, there are no positional
 * arguments. Numbers are validated in full (no trailing text, no overflow, within the option's
 * range). */
#ifndef FK_CLI_OPTIONS_H
#define FK_CLI_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

typedef enum cli_option_kind {
    CLI_FLAG,   /* int *: set to 1 */
    CLI_STRING, /* const char **: points into argv */
    CLI_INT,    /* long long *: an integer within [min, max] */
    CLI_DOUBLE, /* double *: a finite number within [min, max] */
    /* cli_named_values *: any --NAME VALUE whose NAME some force law declares as a named
     * parameter (fk_kernel_info.parameters: --dielectric, --kappa, ...), kept by name for the
     * command to check against its law. The table entry's own name is only for messages. */
    CLI_LAW_PARAMETER,
    /* A help line only, for an option whose entry is listed in another group (a command that
     * names --unroll among its own options and lists the shape below): never parsed. */
    CLI_HELP_LINE
} cli_option_kind;

/* Where --help lists an option: the command's own list, or one of the shared sections that
 * several commands print (each lists the entries of its group from the command's table). */
typedef enum cli_option_group {
    CLI_GROUP_COMMAND = 0,
    CLI_GROUP_SHAPE,   /* "Variant shape": --unroll, --wg, --splits, --tiling, --lanes */
    CLI_GROUP_LOOP,    /* the pair loop: --algorithm, --lists */
    CLI_GROUP_PHYSICS, /* the force law's: --cutoff, --coulomb, --box, --params, --exclude... */
    CLI_GROUP_HIDDEN   /* parsed, described in prose (--positions) or not at all (--help) */
} cli_option_group;

#define CLI_MAX_NAMED_VALUES 8
typedef struct cli_named_values {
    const char *name[CLI_MAX_NAMED_VALUES]; /* without "--" */
    const char *text[CLI_MAX_NAMED_VALUES];
    size_t count;
} cli_named_values;

/* One option: how it is parsed and how --help shows it, declared together so that the two
 * cannot drift. A command's table is composed of the shared entries below and its own. */
typedef struct cli_option {
    const char *name; /* without the leading "--" */
    cli_option_kind kind;
    void *value;
    double min, max;      /* range of CLI_INT and CLI_DOUBLE values */
    const char *argument; /* the value in the help ("A", "FILE"); NULL for a flag */
    const char *help;     /* lines separated by '\n'; NULL: not listed */
    cli_option_group group;
    int given; /* set by the parser when the option appears */
} cli_option;

/* Entries of each kind (help in the command's own list; NULL help: not listed). */
cli_option cli_flag(const char *name, int *value, const char *help);
cli_option cli_string(const char *name, const char *argument, const char **value, const char *help);
cli_option cli_int(const char *name, const char *argument, long long *value, double min, double max,
                   const char *help);
cli_option cli_double(const char *name, const char *argument, double *value, double min, double max,
                      const char *help);
cli_option cli_help_line(const char *name, const char *argument, const char *help);
/* The same option with this command's help (and in the command's own list). */
cli_option cli_explained(cli_option option, const char *help);
cli_option cli_explained_as(cli_option option, const char *argument, const char *help);

/* The options several commands take, declared once with their usual help. */
cli_option cli_opt_help(int *value); /* --help (and -h): not listed */
cli_option cli_opt_json(int *value); /* print the results as one JSON document ... */
cli_option cli_opt_device(const char **value);
cli_option cli_opt_kernel(const char **value);
cli_option cli_opt_accum(const char **value);
cli_option cli_opt_seed(long long *value, double min, double max, const char *help);
cli_option cli_opt_eps(double *value, const char *help);
cli_option cli_opt_reproducible(int *value, const char *help);
cli_option cli_opt_format(const char **value); /* --format auto|text|tipsy */
cli_option cli_opt_algorithm(const char **value);
cli_option cli_opt_lists(const char **value);
cli_option cli_opt_positions(const char **value); /* described by cli_positions_usage */
cli_option cli_opt_device_timing(const char **value, const char *help);

/* The command's --help: the usage lines and description, the options of its own list, then
 * what follows them (the shared sections, in the command's order). */
typedef struct cli_usage {
    const char *command;  /* "forces": for messages */
    const char *synopsis; /* the usage lines and the description, up to the options */
    int column;           /* where the help of the command's own options starts */
    void (*after)(FILE *out, const cli_option *options, size_t count); /* NULL: nothing */
} cli_usage;

/* Prints the help lines of the entries of group: "  --name ARG", padded to column, the help
 * (its later lines indented to column). */
void cli_print_options(FILE *out, const cli_option *options, size_t count, cli_option_group group,
                       int column);

/* Parses argv against the table; with --help prints the usage. Returns 1 when the command is
 * done (*code: 2 after a usage error, 0 after the help), else 0. */
int cli_parse_command(const cli_usage *usage, int argc, char **argv, cli_option *options,
                      size_t count, int *code);

/* Parses argv[1..argc-1] (argv[0] is the command name). On a usage error prints
 * `forcekit: COMMAND: ...` on stderr and returns 2; returns 0 otherwise. "-h" is read as "--help"
 * when the table has a "help" flag. */
int cli_parse_options(const char *command, int argc, char **argv, cli_option *options,
                      size_t count);

/* "IxJ" with I, J in {1, 2, 4, 8}, or "auto" (0x0). Returns 1 when valid. A value parser like the
 * table's, here so that the common helpers (src/cli/common.c) call the options and never the
 * reverse. */
int cli_parse_unroll(const char *text, int *unroll_i, int *unroll_j);

/* Prints `forcekit: COMMAND: MESSAGE (see 'forcekit COMMAND --help')` on stderr; returns 2. */
int cli_usage_error(const char *command, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The entry of name in the table, to read `given` after parsing. */
const cli_option *cli_option_named(const cli_option *options, size_t count, const char *name);

/* Full-string number parsers for values that are not simple options (parts of "4x4"). Return 1 on
 * success. */
int cli_parse_long(const char *text, long long *value);
int cli_parse_finite_double(const char *text, double *value);

/* The variant's shape, the options bench, forces, accuracy and simulate share (issue #37): one
 * declaration, one parser, one help text. */
typedef struct cli_shape_options {
    const char *unroll;        /* --unroll IxJ|auto (bench also takes "all", itself) */
    long long work_group_size; /* --wg W (0: automatic) */
    long long splits;          /* --splits S (0: automatic) */
    const char *tiling;        /* --tiling on|off */
    const char *lanes;         /* --lanes auto|off|8|16 */
} cli_shape_options;

#define CLI_SHAPE_OPTIONS_INIT                                                                     \
    {                                                                                              \
        .unroll = "auto"                                                                           \
    }
/* The shape's entries, listed under "Variant shape" (cli_print_shape_usage). */
cli_option cli_opt_unroll(const char **value);
cli_option cli_opt_wg(long long *value);
cli_option cli_opt_splits(long long *value);
cli_option cli_opt_tiling(const char **value);
cli_option cli_opt_lanes(const char **value);
#define CLI_SHAPE_OPTION_ENTRIES(o)                                                                \
    cli_opt_unroll(&(o).unroll), cli_opt_wg(&(o).work_group_size), cli_opt_splits(&(o).splits),    \
        cli_opt_tiling(&(o).tiling), cli_opt_lanes(&(o).lanes)

/* The shape as fk_eval_config fields (unroll_i, unroll_j, work_group_size, local_tiling, j_splits,
 * lanes), checked by the library's variant rules (src/core/programs/variant.c) before any device
 * work. unroll "all" is left to the caller (unroll 0x0 here). Returns 0, or 2 after a usage error
 * naming command. */
struct fk_eval_config;
int cli_shape_config(const char *command, const cli_shape_options *shape,
                     struct fk_eval_config *config);

/* The "Variant shape" section of --help: the table's shape entries (after a command's own
 * options, before the kernel list). */
void cli_print_shape_usage(FILE *out, const cli_option *options, size_t count);

#endif
