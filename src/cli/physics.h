/* The force-law options shared by `forces`, `bench`, `accuracy` and `simulate`: --params,
 * --exclude, --exclude-mode, --cutoff, --coulomb, --box, and each law's named parameters
 * (--dielectric, --kappa: whatever the registry declares; docs/force-laws.md,
 * docs/file-formats.md). */
#ifndef FK_CLI_PHYSICS_H
#define FK_CLI_PHYSICS_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "forcekit/forcekit.h"
#include "forcekit/tools.h"
#include "cli/options.h"

typedef struct cli_physics_options {
    const char *params, *exclude, *exclude_mode, *box;
    cli_named_values law;   /* --NAME VALUE of the laws' named parameters */
    double cutoff, coulomb; /* NaN when not given (CLI_PHYSICS_OPTIONS_INIT) */
} cli_physics_options;
#define CLI_PHYSICS_OPTIONS_INIT                                                                   \
    {                                                                                              \
        .cutoff = NAN, .coulomb = NAN                                                              \
    }

/* Entries for a command's option table, listed by cli_physics_print_usage. */
cli_option cli_opt_physics(const char *name, cli_physics_options *options);
#define CLI_PHYSICS_OPTION_ENTRIES(o)                                                              \
    cli_opt_physics("cutoff", &(o)), cli_opt_physics("coulomb", &(o)),                             \
        cli_opt_physics("box", &(o)), cli_opt_physics("params", &(o)),                             \
        cli_opt_physics("exclude", &(o)), cli_opt_physics("exclude-mode", &(o)),                   \
        cli_opt_physics("law parameter", &(o))

/* Usage text of the table's physics entries, for --help, with each force law's named
 * parameters from the registry. */
void cli_physics_print_usage(FILE *out, const cli_option *options, size_t count);
/* The force laws for --help: name, input columns, outputs, description, from the registry. */
void cli_print_kernels(FILE *out);

/* What the files held, to hand to the evaluation. */
typedef struct cli_physics_data {
    fkt_pair_table_set table;
    int has_table;
    size_t *exclusions;
    size_t exclusion_count;
} cli_physics_data;

/* Checks the options against the kernel and fills config's physics fields. Reports usage errors
 * and returns the exit code (0 when fine). */
int cli_physics_config(const char *command, const fk_kernel_info *kernel,
                       const cli_physics_options *options, fk_eval_config *config);

/* The exclusion slots the on-the-fly kernel needs: the most partners any particle has (at most
 * 64, the library's limit, which then names the particle). Set before fk_eval_create, it spares
 * the library's automatic slots a second build at fk_eval_set_exclusions. -1: out of memory. */
int cli_exclusion_slots(const size_t *exclusions, size_t exclusion_count, size_t particle_count);

/* Reads --params and --exclude for these particles; sets config->max_exclusions for exclusions
 * on the fly. Reports errors and returns the exit code. */
int cli_physics_load(const char *command, const fk_kernel_info *kernel,
                     const cli_physics_options *options, const fkt_particle_set *particles,
                     fk_eval_config *config, cli_physics_data *data);

/* Hands the table and exclusions to the evaluation. */
fk_status cli_physics_apply(fk_eval *eval, const cli_physics_data *data);

void cli_physics_data_free(cli_physics_data *data);

#endif
