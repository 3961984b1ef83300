#include "physics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

const char cli_physics_usage[] =
    "  --cutoff RC    molecular kernels: pair cutoff, force-shifted (lj: default 2.5; ljc_*,\n"
    "                 buck: default none)\n"
    "  --coulomb K    Coulomb constant (default 1)\n"
    "  --dielectric D ljc_constant: D0; ljc_linear: s in D = s r (default 1); ljc_sigmoidal:\n"
    "                 ALPHA,BETA,GAMMA,DELTA in D = exp(a r^3 + b r^2 + c r + d) (default "
    "0,0,0,0)\n"
    "  --box L        periodic box Lx,Ly,Lz (or one L for a cube), minimum image; needs a cutoff\n"
    "                 of at most half the shortest side\n"
    "  --params FILE  pair parameters by type, a line per pair: a b epsilon sigma (lj, ljc_*),\n"
    "                 a b A rho C (buck); default one type, epsilon = sigma = 1\n"
    "  --exclude FILE pairs left out, a line per pair: i j (0-based particle indices)\n"
    "  --exclude-mode M  onthefly (default: the pair loop masks them, correct on every device)\n"
    "                 or afterwards (Narumi's experiment: every pair summed, then the excluded\n"
    "                 ones subtracted by a second kernel; exact only where both kernels compute\n"
    "                 the same bits, as with --reproducible)\n";

/* "a,b,c" into up to max finite numbers; returns how many, 0 on a malformed list. */
static size_t parse_list(const char *text, double *values, size_t max)
{
    char buffer[256];
    if (strlen(text) >= sizeof buffer)
        return 0;
    strcpy(buffer, text);
    size_t count = 0;
    char *start = buffer;
    for (;;) {
        char *comma = strchr(start, ',');
        if (comma)
            *comma = '\0';
        if (count == max || !cli_parse_finite_double(start, &values[count]))
            return 0;
        ++count;
        if (!comma)
            return count;
        start = comma + 1;
    }
}

static int is_molecular(const fk_kernel_info *kernel)
{
    return kernel->pair_parameters > 0;
}

int cli_physics_config(const char *command, const fk_kernel_info *kernel,
                       const cli_physics_options *options, fk_eval_config *config)
{
    const int any = options->params || options->exclude || options->exclude_mode ||
                    options->dielectric || options->box || !isnan(options->cutoff) ||
                    !isnan(options->coulomb);
    if (!is_molecular(kernel)) {
        if (any)
            return cli_usage_error(command,
                                   "--params, --exclude, --exclude-mode, --cutoff, --coulomb, "
                                   "--dielectric and --box apply to the molecular kernels "
                                   "(ljc_*, lj, buck), not to %s",
                                   kernel->name);
        return CLI_EXIT_OK;
    }
    /* The library reads 0 as "default": an explicit 0 would silently mean something else. */
    if (!isnan(options->cutoff)) {
        if (!(options->cutoff > 0))
            return cli_usage_error(command, "--cutoff must be > 0 (leave it out for none)");
        config->cutoff = options->cutoff;
    }
    if (!isnan(options->coulomb)) {
        if (options->coulomb == 0)
            return cli_usage_error(command, "--coulomb must be nonzero (zero charges switch "
                                            "Coulomb off)");
        config->coulomb = options->coulomb;
    }
    if (options->dielectric) {
        const int sigmoidal = strcmp(kernel->name, "ljc_sigmoidal") == 0;
        const int one =
            strcmp(kernel->name, "ljc_constant") == 0 || strcmp(kernel->name, "ljc_linear") == 0;
        size_t count = parse_list(options->dielectric, config->dielectric, 4);
        if (!one && !sigmoidal)
            return cli_usage_error(command, "%s has no dielectric", kernel->name);
        if ((one && (count != 1 || !(config->dielectric[0] > 0))) || (sigmoidal && count != 4))
            return cli_usage_error(command, "--dielectric '%s': expected %s", options->dielectric,
                                   one ? "one number > 0" : "ALPHA,BETA,GAMMA,DELTA");
    }
    if (options->box) {
        double sides[3];
        size_t count = parse_list(options->box, sides, 3);
        if (count == 1)
            sides[1] = sides[2] = sides[0];
        if ((count != 1 && count != 3) || !(sides[0] > 0 && sides[1] > 0 && sides[2] > 0))
            return cli_usage_error(command, "--box '%s': expected Lx,Ly,Lz (or L), each > 0",
                                   options->box);
        memcpy(config->box, sides, sizeof sides);
    }
    if (options->exclude_mode) {
        if (strcmp(options->exclude_mode, "afterwards") == 0)
            config->exclusion_mode = FK_EXCLUDE_AFTERWARDS;
        else if (strcmp(options->exclude_mode, "onthefly") == 0)
            config->exclusion_mode = FK_EXCLUDE_ON_THE_FLY;
        else
            return cli_usage_error(command, "--exclude-mode '%s': expected onthefly or afterwards",
                                   options->exclude_mode);
    }
    return CLI_EXIT_OK;
}

int cli_physics_load(const char *command, const fk_kernel_info *kernel,
                     const cli_physics_options *options, const fk_particle_set *particles,
                     fk_eval_config *config, cli_physics_data *data)
{
    (void)command;
    memset(data, 0, sizeof *data);
    char message[1024] = "";
    if (options->params) {
        /* Particle types the file lacks become missing pairs, which the library names. */
        size_t types = 0;
        for (size_t i = 0; particles->type && i < particles->count; ++i)
            if (particles->type[i] >= 0 && (size_t)particles->type[i] + 1 > types &&
                particles->type[i] < FK_MAX_PAIR_TYPES)
                types = (size_t)particles->type[i] + 1;
        fk_status status =
            fk_io_read_pair_table(options->params, kernel->pair_parameters, kernel->pair_format,
                                  types, &data->table, message, sizeof message);
        if (status != FK_OK) {
            cli_error(fk_status_string(status), "%s", message);
            return cli_exit_code(status);
        }
        data->has_table = 1;
    }
    if (options->exclude) {
        fk_status status =
            fk_io_read_exclusions(options->exclude, particles->count, &data->exclusions,
                                  &data->exclusion_count, message, sizeof message);
        if (status != FK_OK) {
            cli_error(fk_status_string(status), "%s", message);
            cli_physics_data_free(data);
            return cli_exit_code(status);
        }
        const int slots =
            cli_exclusion_slots(data->exclusions, data->exclusion_count, particles->count);
        if (slots < 0) {
            cli_physics_data_free(data);
            return cli_exit_code(FK_ERR_HOST_MEMORY);
        }
        config->max_exclusions = slots;
    }
    return CLI_EXIT_OK;
}

int cli_exclusion_slots(const size_t *exclusions, size_t exclusion_count, size_t particle_count)
{
    size_t *per_particle = calloc(particle_count, sizeof *per_particle);
    if (!per_particle)
        return -1;
    size_t most = 0;
    for (size_t e = 0; e < 2 * exclusion_count; ++e) {
        size_t count = ++per_particle[exclusions[e]];
        most = count > most ? count : most;
    }
    free(per_particle);
    return most > 64 ? 64 : (int)most;
}

fk_status cli_physics_apply(fk_eval *eval, const cli_physics_data *data)
{
    fk_status status = FK_OK;
    if (data->has_table) {
        const fk_pair_table table = fk_pair_table_set_view(&data->table);
        status = fk_eval_set_pair_table(eval, &table);
    }
    if (status == FK_OK && data->exclusion_count)
        status = fk_eval_set_exclusions(eval, data->exclusions, data->exclusion_count);
    return status;
}

void cli_physics_data_free(cli_physics_data *data)
{
    fk_pair_table_set_free(&data->table);
    free(data->exclusions);
    memset(data, 0, sizeof *data);
}
