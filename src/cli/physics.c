#include "cli/physics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/common.h"

cli_option cli_opt_physics(const char *name, cli_physics_options *options)
{
    cli_option option = {0};
    if (strcmp(name, "cutoff") == 0)
        option = cli_double(name, "RC", &options->cutoff, 0, HUGE_VAL,
                            "molecular kernels: pair cutoff, force-shifted (default none, or the "
                            "law's\nown: lj's 2.5, in its description below)");
    else if (strcmp(name, "coulomb") == 0)
        option = cli_double(name, "K", &options->coulomb, -HUGE_VAL, HUGE_VAL,
                            "Coulomb constant (default 1)");
    else if (strcmp(name, "box") == 0)
        option = cli_string(name, "L", &options->box,
                            "periodic box Lx,Ly,Lz (or one L for a cube), minimum image; needs a "
                            "cutoff\nof at most half the shortest side");
    else if (strcmp(name, "params") == 0)
        option = cli_string(name, "FILE", &options->params,
                            "pair parameters by type, a line per pair: a b and the law's pair\n"
                            "parameters (below); default one type, all parameters 1");
    else if (strcmp(name, "exclude") == 0)
        option = cli_string(name, "FILE", &options->exclude,
                            "pairs left out, a line per pair: i j (0-based particle indices)");
    else if (strcmp(name, "exclude-mode") == 0)
        option =
            cli_string(name, "M", &options->exclude_mode,
                       "onthefly (default: the pair loop masks them, correct on every device)\n"
                       "or afterwards (Narumi's experiment: every pair summed, then the excluded\n"
                       "ones subtracted by a second kernel; exact only where both kernels compute\n"
                       "the same bits, as with --reproducible)");
    else /* each law's named parameters, listed from the registry */
        option = (cli_option){.name = name, .kind = CLI_LAW_PARAMETER, .value = &options->law};
    option.group = CLI_GROUP_PHYSICS;
    return option;
}

void cli_physics_print_usage(FILE *out, const cli_option *options, size_t count)
{
    cli_print_options(out, options, count, CLI_GROUP_PHYSICS, 17);
    for (size_t k = 0; fk_kernel_at(k); ++k) {
        const fk_kernel_info *kernel = fk_kernel_at(k);
        for (unsigned p = 0; p < kernel->parameter_count; ++p) {
            const fk_kernel_parameter *parameter = &kernel->parameters[p];
            char option[64];
            snprintf(option, sizeof option, "--%s V", parameter->name);
            fprintf(out, "  %-14s %s: %s\n  %-14s ", option, kernel->name, parameter->description,
                    "");
            if (parameter->count > 1)
                fprintf(out, "%u values V1,V2,..., ", parameter->count);
            fprintf(out, "default %g\n", parameter->default_value);
        }
    }
}

void cli_print_kernels(FILE *out)
{
    fputs("\nForce laws (--kernel): input columns -> output columns\n", out);
    for (size_t k = 0; fk_kernel_at(k); ++k) {
        const fk_kernel_info *kernel = fk_kernel_at(k);
        fprintf(out, "  %-14s %s -> %s\n  %-14s %s\n", kernel->name, kernel->input_format,
                kernel->output_format, "", kernel->description);
        if (kernel->pair_parameters)
            fprintf(out, "  %-14s --params lines: %s\n", "", kernel->pair_format);
    }
}

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

/* One --NAME VALUE of the law's named parameters into config->parameters. */
static int law_parameter_config(const char *command, const fk_kernel_info *kernel, const char *name,
                                const char *text, fk_eval_config *config)
{
    const fk_kernel_parameter *parameter = NULL;
    for (unsigned p = 0; p < kernel->parameter_count; ++p)
        if (strcmp(kernel->parameters[p].name, name) == 0)
            parameter = &kernel->parameters[p];
    if (!parameter)
        return cli_usage_error(command, "--%s does not apply to %s", name, kernel->name);
    double values[FK_LAW_PARAMETERS];
    const size_t count = parse_list(text, values, FK_LAW_PARAMETERS);
    if (count != parameter->count)
        return cli_usage_error(command, "--%s '%s': %s takes %u number%s (%s)", name, text,
                               kernel->name, parameter->count, parameter->count > 1 ? "s" : "",
                               parameter->description);
    for (size_t k = 0; k < count; ++k) {
        const double value = values[k];
        /* The library reads 0 as "default": an explicit 0 would silently mean something else. */
        const int zero_is_default = value == 0 && parameter->default_value != 0;
        if (zero_is_default || value < parameter->minimum ||
            (value == parameter->minimum && !parameter->minimum_inclusive))
            return cli_usage_error(command, "--%s %s: each value must be %s %g", name, text,
                                   parameter->minimum_inclusive ? ">=" : ">", parameter->minimum);
        config->parameters[parameter->first + k] = value;
    }
    return CLI_EXIT_OK;
}

int cli_physics_config(const char *command, const fk_kernel_info *kernel,
                       const cli_physics_options *options, fk_eval_config *config)
{
    const int any = options->params || options->exclude || options->exclude_mode || options->box ||
                    !isnan(options->cutoff) || !isnan(options->coulomb);
    if (!is_molecular(kernel) && any)
        return cli_usage_error(command,
                               "--params, --exclude, --exclude-mode, --cutoff, --coulomb and "
                               "--box apply to the molecular kernels (those with a pair table), "
                               "not to %s",
                               kernel->name);
    for (size_t k = 0; k < options->law.count; ++k) {
        const int code = law_parameter_config(command, kernel, options->law.name[k],
                                              options->law.text[k], config);
        if (code != CLI_EXIT_OK)
            return code;
    }
    if (!is_molecular(kernel))
        return CLI_EXIT_OK;
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
                     const cli_physics_options *options, const fkt_particle_set *particles,
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
            fkt_io_read_pair_table(options->params, kernel->pair_parameters, kernel->pair_format,
                                   types, &data->table, message, sizeof message);
        if (status != FK_OK) {
            cli_error(fk_status_string(status), "%s", message);
            return cli_exit_code(status);
        }
        data->has_table = 1;
    }
    if (options->exclude) {
        fk_status status =
            fkt_io_read_exclusions(options->exclude, particles->count, &data->exclusions,
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
        const fk_pair_table table = fkt_pair_table_set_view(&data->table);
        status = fk_eval_set_pair_table(eval, &table);
    }
    if (status == FK_OK && data->exclusion_count)
        status = fk_eval_set_exclusions(eval, data->exclusions, data->exclusion_count);
    return status;
}

void cli_physics_data_free(cli_physics_data *data)
{
    fkt_pair_table_set_free(&data->table);
    free(data->exclusions);
    memset(data, 0, sizeof *data);
}
