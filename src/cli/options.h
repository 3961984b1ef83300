/* A small command-line option parser: `--name value`, `--name=value` and flags. Every option is
 * long; there are no positional arguments. Numbers are validated in full (no trailing text, no
 * overflow, within the option's range). */
#ifndef FK_CLI_OPTIONS_H
#define FK_CLI_OPTIONS_H

#include <stddef.h>

typedef enum cli_option_kind {
    CLI_FLAG,   /* int *: set to 1 */
    CLI_STRING, /* const char **: points into argv */
    CLI_INT,    /* long long *: an integer within [min, max] */
    CLI_DOUBLE, /* double *: a finite number within [min, max] */
    /* cli_named_values *: any --NAME VALUE whose NAME some force law declares as a named
     * parameter (fk_kernel_info.parameters: --dielectric, --kappa, ...), kept by name for the
     * command to check against its law. The table entry's own name is only for messages. */
    CLI_LAW_PARAMETER
} cli_option_kind;

#define CLI_MAX_NAMED_VALUES 8
typedef struct cli_named_values {
    const char *name[CLI_MAX_NAMED_VALUES]; /* without "--" */
    const char *text[CLI_MAX_NAMED_VALUES];
    size_t count;
} cli_named_values;

typedef struct cli_option {
    const char *name; /* without the leading "--" */
    cli_option_kind kind;
    void *value;
    double min, max; /* range of CLI_INT and CLI_DOUBLE values */
    int given;       /* set by the parser when the option appears */
} cli_option;

/* Parses argv[1..argc-1] (argv[0] is the command name). On a usage error prints
 * `forcekit: COMMAND: ...` on stderr and returns 2; returns 0 otherwise. "-h" is read as "--help"
 * when the table has a "help" flag. */
int cli_parse_options(const char *command, int argc, char **argv, cli_option *options,
                      size_t count);

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
#define CLI_SHAPE_OPTION_ENTRIES(o)                                                                \
    {.name = "unroll", .kind = CLI_STRING, .value = &(o).unroll},                                  \
        {.name = "wg", .kind = CLI_INT, .value = &(o).work_group_size, .min = 1, .max = 1 << 20},  \
        {.name = "splits", .kind = CLI_INT, .value = &(o).splits, .min = 1, .max = 1 << 20},       \
        {.name = "tiling", .kind = CLI_STRING, .value = &(o).tiling},                              \
    {                                                                                              \
        .name = "lanes", .kind = CLI_STRING, .value = &(o).lanes                                   \
    }

/* The shape as fk_eval_config fields (unroll_i, unroll_j, work_group_size, local_tiling, j_splits,
 * lanes), checked by the library's variant rules (src/core/programs/variant.c) before any device
 * work. unroll "all" is left to the caller (unroll 0x0 here). Returns 0, or 2 after a usage error
 * naming command. */
struct fk_eval_config;
int cli_shape_config(const char *command, const cli_shape_options *shape,
                     struct fk_eval_config *config);

/* The help text of the shape options (after a command's own, before the kernel list). */
extern const char cli_shape_usage[];

#endif
