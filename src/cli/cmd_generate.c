/* `forcekit generate`: writes one of the built-in systems (systems.h, generate.h) as text
 * files: the particles, and where the model has them its pair parameters (FILE.params), exclusions
 * (FILE.exclude) and velocities (FILE.vel). Every file goes to a temporary name in the target
 * directory and is renamed only when all of them are written, the particles last. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/files.h"
#include "support/generate.h"
#include "support/systems.h"

static const char generate_synopsis[] =
    "usage: forcekit generate --model M --out FILE [--n N] [--seed S] [--kernel K]\n"
    "                         [--density D] [--temperature T] [--json]\n\n"
    "Writes a built-in system as text files (docs/file-formats.md), each headed by '#' comments "
    "that "
    "say\n"
    "how it was made, its units and the forces command that reads it:\n"
    "  plummer   Plummer sphere, N-body units, equal masses (ga: x y z m; gaj adds vx vy vz)\n"
    "  lj-fluid  LJ fluid: fcc lattice in a periodic cube at --density (default 0.8), Maxwell-\n"
    "            Boltzmann velocities at --temperature (default 1.0) in FILE.vel; reduced units\n"
    "  fcc       the same lattice without velocities\n"
    "  fluorite  UO2, N a multiple of 12 (whole 12-ion cells), Morelon et al. (2003) Buckingham\n"
    "            parameters in FILE.params (eV, Angstrom; use --coulomb 14.399645)\n"
    "  protein   Narumi et al.'s System 1 analogue: 3,339 atoms (2,715 solute + 208 waters),\n"
    "            FILE.params (epsilon sigma, kcal/mol, Angstrom; use --coulomb 332.0637) and\n"
    "            FILE.exclude (the 1-2 and 1-3 pairs)\n"
    "  lj65536   Narumi et al.'s System 2: 65,536 LJ particles of 16 random types at --density\n"
    "            (default 0.5), FILE.params; reduced units\n\n";

typedef enum model {
    MODEL_PLUMMER,
    MODEL_LJ_FLUID,
    MODEL_FCC,
    MODEL_FLUORITE,
    MODEL_PROTEIN,
    MODEL_LJ65536
} model;

/* Which laws a model's files fit is a property of what it writes, not a list of law names: the
 * gravity models write masses (and velocities), the molecular ones charges and types and, where
 * they write a --params file, parameters in one pair format. */
#define MODEL_GRAVITY NULL /* pair_format: fits the laws without a pair table */
#define MODEL_ANY_TABLE "" /* one type, default parameters: fits every law with a pair table */
static const struct model_info {
    const char *name;
    const char *default_kernel;
    const char *pair_format; /* MODEL_GRAVITY, MODEL_ANY_TABLE, or the --params format written */
} models[] = {
    {"plummer", "ga", MODEL_GRAVITY},
    {"lj-fluid", "lj", MODEL_ANY_TABLE},
    {"fcc", "lj", MODEL_ANY_TABLE},
    {"fluorite", "buck", "a b A rho C"},
    {"protein", "ljc_constant", "a b epsilon sigma"},
    {"lj65536", "lj", "a b epsilon sigma"},
};
enum { MODEL_COUNT = sizeof models / sizeof models[0], OUTPUT_FILES = 4 };

const char *cmd_generate_models(void)
{
    static char names[256];
    if (!names[0]) {
        size_t used = 0;
        for (size_t m = 0; m < MODEL_COUNT && used < sizeof names; ++m)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", m ? ", " : "",
                                     models[m].name);
    }
    return names;
}

static int kernel_fits(const struct model_info *info, const fk_kernel_info *kernel)
{
    if (info->pair_format == MODEL_GRAVITY)
        return kernel->pair_parameters == 0;
    if (kernel->pair_parameters == 0)
        return 0;
    return info->pair_format[0] == '\0' || strcmp(info->pair_format, kernel->pair_format) == 0;
}

/* The registry's laws that fit, space separated, for a message. */
static void fitting_kernels(const struct model_info *info, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t k = 0; fk_kernel_at(k) && used < size; ++k)
        if (kernel_fits(info, fk_kernel_at(k))) {
            const int n =
                snprintf(out + used, size - used, "%s%s", used ? " " : "", fk_kernel_at(k)->name);
            used += n > 0 ? (size_t)n : 0;
        }
}

/* One output file: what to write, then its temporary name until renamed. */
typedef struct output_file {
    char *path;
    int (*write)(FILE *file, const void *data, const char *header);
    const void *data;
    char header[1024];
} output_file;

typedef struct particle_output {
    const fkt_particle_set *set;
    fkt_layout layout;
} particle_output;

typedef struct exclusion_output {
    const size_t *pairs;
    size_t count;
} exclusion_output;

static int write_particles(FILE *file, const void *data, const char *header)
{
    const particle_output *output = data;
    return fkt_system_write_particles(file, output->set, output->layout, header);
}

static int write_velocities(FILE *file, const void *data, const char *header)
{
    return fkt_system_write_velocities(file, data, header);
}

static int write_params(FILE *file, const void *data, const char *header)
{
    return fkt_system_write_params(file, data, header);
}

static int write_exclusions(FILE *file, const void *data, const char *header)
{
    const exclusion_output *output = data;
    return fkt_system_write_exclusions(file, output->pairs, output->count, header);
}

static char *concat(const char *a, const char *b)
{
    size_t size = strlen(a) + strlen(b) + 1;
    char *text = malloc(size);
    if (text)
        snprintf(text, size, "%s%s", a, b);
    return text;
}

/* Writes every file (files.h: a temporary name for a regular file, in place for a device), then
 * commits them, the first (the particles) last. Returns an exit code: 2 when a target is refused
 * (a missing or unwritable directory, a read-only file, as `forces --out`), 1 when writing fails
 * (a full disk). Nothing is left behind. */
static int write_outputs(output_file *files, size_t count)
{
    fk_file_writer *writers[8] = {NULL};
    char error[1024] = "";
    fk_status status = FK_OK;
    if (count > sizeof writers / sizeof writers[0])
        return cli_report_status(FK_ERR_INVALID_ARGUMENT, NULL);
    for (size_t k = 0; k < count && status == FK_OK; k++) {
        FILE *file = NULL;
        status = fk__writer_open(files[k].path, &writers[k], &file, error, sizeof error);
        if (status != FK_OK)
            break;
        errno = 0;
        if (files[k].write(file, files[k].data, files[k].header) != 0) {
            snprintf(error, sizeof error, "cannot write %s: %s", files[k].path,
                     strerror(errno ? errno : EIO));
            status = FK_ERR_IO;
            break;
        }
        status = fk__writer_finish(writers[k], error, sizeof error);
    }
    for (size_t k = count; k-- > 0 && status == FK_OK;) {
        status = fk__writer_commit(writers[k], error, sizeof error);
        writers[k] = NULL;
    }
    for (size_t k = 0; k < count; k++)
        fk__writer_abort(writers[k]);
    if (status == FK_OK)
        return CLI_EXIT_OK;
    cli_error("generate", "%s", error);
    return cli_write_exit_code(status);
}

int cmd_generate(int argc, char **argv)
{
    const char *model_name = NULL, *out = NULL, *kernel_name = NULL;
    long long n = 0, seed = 1;
    double density = NAN, temperature = NAN;
    int json = 0, help = 0;
    cli_option table[] = {
        cli_string("model", "M", &model_name, "one of the above"),
        cli_string("out", "FILE", &out,
                   "the particle file; the others are FILE.params, FILE.exclude, FILE.vel"),
        cli_int("n", "N", &n, 1, 1 << 28,
                "particles, 1 to 2^28 (protein: 3339 and lj65536: 65536, the only values)"),
        cli_opt_seed(&seed, 0, CLI_MAX_SEED,
                     "seed of the random draws (default 1; rand48, the same on every platform)"),
        cli_explained(cli_opt_kernel(&kernel_name),
                      "the kernel whose columns to write (default: plummer ga, lj-fluid, fcc,\n"
                      "lj65536 lj, fluorite buck, protein ljc_constant)"),
        cli_double("density", "D", &density, -HUGE_VAL, HUGE_VAL,
                   "number density (lj-fluid, fcc: default 0.8; lj65536: default 0.5, at\n"
                   "most 1)"),
        cli_double("temperature", "T", &temperature, -HUGE_VAL, HUGE_VAL,
                   "lj-fluid temperature, k_B = m = 1 (default 1.0)"),
        cli_explained(cli_opt_json(&json),
                      "describe what was written as one JSON document on standard output"),
        cli_opt_help(&help),
    };
    const size_t options = sizeof table / sizeof table[0];
    static const cli_usage usage = {"generate", generate_synopsis, 19, NULL};
    int usage_code = CLI_EXIT_OK;
    if (cli_parse_command(&usage, argc, argv, table, options, &usage_code))
        return usage_code;
    if (!model_name)
        return cli_usage_error("generate", "--model is required");
    int found = -1;
    for (int m = 0; m < (int)MODEL_COUNT; m++)
        if (strcmp(model_name, models[m].name) == 0)
            found = m;
    if (found < 0)
        return cli_usage_error("generate", "--model '%s': unknown; available: %s", model_name,
                               cmd_generate_models());
    const model which = (model)found;
    const struct model_info *info = &models[which];
    if (!out || !*out)
        return cli_usage_error("generate", "--out FILE is required");
    const int n_given = cli_option_named(table, options, "n")->given;
    if (which == MODEL_PROTEIN || which == MODEL_LJ65536) {
        const long long fixed = which == MODEL_PROTEIN ? FKT_PROTEIN_ATOMS : FKT_LJ65536_ATOMS;
        if (n_given && n != fixed)
            return cli_usage_error("generate", "--n %lld: the %s system has exactly %lld particles",
                                   n, info->name, fixed);
        n = fixed;
    } else if (!n_given) {
        return cli_usage_error("generate", "--n is required for --model %s", info->name);
    }
    if (which == MODEL_FLUORITE && n % 12 != 0)
        return cli_usage_error("generate",
                               "--n %lld: fluorite needs whole 12-ion unit cells (a multiple of "
                               "12, e.g. 12 k^3: 96, 324, 768, 1500)",
                               n);
    const int density_given = cli_option_named(table, options, "density")->given;
    const int temperature_given = cli_option_named(table, options, "temperature")->given;
    if (density_given && which != MODEL_LJ_FLUID && which != MODEL_FCC && which != MODEL_LJ65536)
        return cli_usage_error("generate", "--density applies to lj-fluid, fcc and lj65536");
    if (temperature_given && which != MODEL_LJ_FLUID)
        return cli_usage_error("generate", "--temperature applies to lj-fluid");
    if (!density_given)
        density = which == MODEL_LJ65536 ? FKT_LJ65536_DENSITY : 0.8;
    if (!temperature_given)
        temperature = 1.0;
    if (!(density > 0))
        return cli_usage_error("generate", "--density %g: must be > 0", density);
    if (which == MODEL_LJ65536 && density > FKT_LJ65536_MAX_DENSITY)
        return cli_usage_error("generate",
                               "--density %g: at most %g for lj65536 (random placement without "
                               "overlaps)",
                               density, FKT_LJ65536_MAX_DENSITY);
    if (!(temperature >= 0))
        return cli_usage_error("generate", "--temperature %g: must be >= 0", temperature);
    if (!kernel_name)
        kernel_name = info->default_kernel;
    const fk_kernel_info *kernel = NULL;
    if (cli_find_kernel("generate", kernel_name, &kernel))
        return CLI_EXIT_USAGE;
    if (!kernel_fits(info, kernel)) {
        char fitting[512];
        fitting_kernels(info, fitting, sizeof fitting);
        return cli_usage_error("generate", "--kernel %s: the %s model is for %s", kernel->name,
                               info->name, fitting);
    }
    const fkt_layout layout = (fkt_layout)fkt_io_layout_for_kernel(kernel->name);

    /* Generate. */
    fkt_system system;
    memset(&system, 0, sizeof system);
    system.layout = layout;
    fk_status status = FK_OK;
    const size_t count = (size_t)n;
    switch (which) {
    case MODEL_PLUMMER:
        status = fkt_generate_plummer(count, (uint64_t)seed, layout, &system.particles);
        system.units = "N-body (G = M = 1, E = -1/4)";
        break;
    case MODEL_LJ_FLUID:
        status = fkt_generate_lj_fluid(count, density, temperature, (uint64_t)seed, layout,
                                       &system.particles, system.box);
        system.periodic = 1;
        system.units = "reduced (epsilon = sigma = m = k_B = 1)";
        break;
    case MODEL_FCC:
        status = fkt_generate_fcc(count, density, layout, &system.particles, system.box);
        system.periodic = 1;
        system.units = "reduced (epsilon = sigma = 1)";
        break;
    case MODEL_FLUORITE:
        status = fkt_generate_fluorite(count, &system);
        break;
    case MODEL_PROTEIN:
        status = fkt_generate_protein((uint64_t)seed, &system);
        break;
    case MODEL_LJ65536:
        status = fkt_generate_lj65536(count, density, (uint64_t)seed, layout, &system);
        break;
    }
    if (status != FK_OK) {
        fkt_system_free(&system);
        cli_error("generate", "cannot generate the %s system: %s", info->name,
                  fk_status_string(status));
        return cli_exit_code(status);
    }
    if (layout == FKT_LAYOUT_XYZ_TYPE && system.particles.mass) {
        /* lj columns have no charge: a system built with charges drops them */
        free(system.particles.mass);
        system.particles.mass = NULL;
    }

    /* The files. */
    output_file files[OUTPUT_FILES];
    memset(files, 0, sizeof files);
    size_t file_count = 0;
    particle_output particles = {&system.particles, layout};
    exclusion_output exclusions = {system.exclusions, system.exclusion_count};
    char *params_path = system.params.types ? concat(out, ".params") : NULL;
    char *exclude_path = system.exclusion_count ? concat(out, ".exclude") : NULL;
    char *velocity_path = which == MODEL_LJ_FLUID ? concat(out, ".vel") : NULL;
    if ((system.params.types && !params_path) || (system.exclusion_count && !exclude_path) ||
        (which == MODEL_LJ_FLUID && !velocity_path)) {
        free(params_path);
        free(exclude_path);
        free(velocity_path);
        fkt_system_free(&system);
        return cli_report_status(FK_ERR_HOST_MEMORY, NULL);
    }

    /* The forces command that reads these files, for the header. */
    char physics[512] = "";
    size_t used = 0;
    if (params_path)
        used +=
            (size_t)snprintf(physics + used, sizeof physics - used, " --params %s", params_path);
    if (exclude_path && used < sizeof physics)
        used +=
            (size_t)snprintf(physics + used, sizeof physics - used, " --exclude %s", exclude_path);
    if (system.coulomb != 0 && system.coulomb != 1 && layout == FKT_LAYOUT_XYZQ_TYPE &&
        used < sizeof physics)
        used += (size_t)snprintf(physics + used, sizeof physics - used, " --coulomb %.10g",
                                 system.coulomb);
    /* A periodic box needs a cutoff of at most half its side: lj has one by default (2.5); the
     * others are open clusters unless the user picks a cutoff. */
    if (system.periodic && strcmp(kernel->name, "lj") == 0 && used < sizeof physics)
        snprintf(physics + used, sizeof physics - used, " --box %.17g,%.17g,%.17g", system.box[0],
                 system.box[1], system.box[2]);
    char origin[512];
    snprintf(origin, sizeof origin, "forcekit generate --model %s --n %zu --seed %lld", info->name,
             count, seed);
    if (which == MODEL_LJ_FLUID)
        snprintf(origin + strlen(origin), sizeof origin - strlen(origin),
                 " --density %.15g --temperature %.15g", density, temperature);
    else if (which == MODEL_FCC || which == MODEL_LJ65536)
        snprintf(origin + strlen(origin), sizeof origin - strlen(origin), " --density %.15g",
                 density);

    files[file_count].path = (char *)out;
    files[file_count].write = write_particles;
    files[file_count].data = &particles;
    int length = snprintf(files[file_count].header, sizeof files[file_count].header,
                          "%s\nunits: %s\ncolumns: %s\n", origin, system.units,
                          layout == FKT_LAYOUT_XYZM       ? "x y z m"
                          : layout == FKT_LAYOUT_XYZM_VEL ? "x y z m vx vy vz"
                          : layout == FKT_LAYOUT_XYZ_TYPE ? "x y z type"
                                                          : "x y z q type");
    if (system.box[0] > 0 && length > 0 && (size_t)length < sizeof files[0].header)
        length += snprintf(files[file_count].header + length,
                           sizeof files[file_count].header - (size_t)length,
                           "box %.17g %.17g %.17g (%s)\n", system.box[0], system.box[1],
                           system.box[2], system.periodic ? "periodic" : "the cube it fills");
    if (length > 0 && (size_t)length < sizeof files[0].header)
        snprintf(files[file_count].header + length,
                 sizeof files[file_count].header - (size_t)length,
                 "forcekit forces --kernel %s --in %s%s", kernel->name, out, physics);
    file_count++;
    if (params_path) {
        files[file_count].path = params_path;
        files[file_count].write = write_params;
        files[file_count].data = &system.params;
        snprintf(files[file_count].header, sizeof files[file_count].header,
                 "%s\npair parameters of %s: a b %s (%s)%s", origin, out,
                 system.params.parameters == 3 ? "A rho C" : "epsilon sigma", system.units,
                 which == MODEL_FLUORITE
                     ? "\nMorelon, Ghaleb, Delaye, Van Brutzel, Phil. Mag. 83 (2003) 1533: formal "
                       "charges, U-O and O-O Buckingham (O-O's four-range form equals this one "
                       "beyond 2.6 Angstrom), U-U Coulomb only"
                 : which == MODEL_PROTEIN
                     ? "\nAMBER parm99 (solute) and SPC/E (water), Lorentz-Berthelot mixing"
                     : "\nper-type epsilon in [0.5, 1.5), sigma in [0.8, 1.2), Lorentz-Berthelot "
                       "mixing");
        file_count++;
    }
    if (exclude_path) {
        files[file_count].path = exclude_path;
        files[file_count].write = write_exclusions;
        files[file_count].data = &exclusions;
        snprintf(files[file_count].header, sizeof files[file_count].header,
                 "%s\nexcluded pairs of %s (0-based): the 1-2 and 1-3 pairs of every residue and "
                 "water",
                 origin, out);
        file_count++;
    }
    if (velocity_path) {
        files[file_count].path = velocity_path;
        files[file_count].write = write_velocities;
        files[file_count].data = &system.particles;
        snprintf(files[file_count].header, sizeof files[file_count].header,
                 "%s\nvelocities of %s: vx vy vz, Maxwell-Boltzmann at T = %.17g, zero total "
                 "momentum",
                 origin, out, temperature);
        file_count++;
    }

    int code = write_outputs(files, file_count);
    if (code == CLI_EXIT_OK) {
        double net_charge = 0.0;
        for (size_t i = 0; system.particles.mass && layout != FKT_LAYOUT_XYZM &&
                           layout != FKT_LAYOUT_XYZM_VEL && i < count;
             i++)
            net_charge += system.particles.mass[i];
        fprintf(stderr, "forcekit: generate: wrote %s (%zu particles, %s)", out, count,
                kernel->name);
        for (size_t k = 1; k < file_count; k++)
            fprintf(stderr, ", %s", files[k].path);
        fputc('\n', stderr);
        if (json) {
            cJSON *document = cJSON_CreateObject();
            cJSON_AddStringToObject(document, "model", info->name);
            cJSON_AddNumberToObject(document, "n", (double)count);
            cJSON_AddNumberToObject(document, "seed", (double)seed);
            cJSON_AddStringToObject(document, "out", out);
            cJSON_AddStringToObject(document, "kernel", kernel->name);
            if (params_path)
                cJSON_AddStringToObject(document, "params", params_path);
            else
                cJSON_AddNullToObject(document, "params");
            if (exclude_path)
                cJSON_AddStringToObject(document, "exclude", exclude_path);
            else
                cJSON_AddNullToObject(document, "exclude");
            if (velocity_path)
                cJSON_AddStringToObject(document, "velocities", velocity_path);
            else
                cJSON_AddNullToObject(document, "velocities");
            cJSON_AddNumberToObject(document, "exclusions", (double)system.exclusion_count);
            cJSON_AddNumberToObject(document, "types",
                                    system.params.types ? (double)system.params.types : 1.0);
            cJSON_AddStringToObject(document, "units", system.units);
            if (system.coulomb != 0)
                cJSON_AddNumberToObject(document, "coulomb", system.coulomb);
            if (system.box[0] > 0) {
                cJSON *box = cJSON_AddArrayToObject(document, "box");
                for (int d = 0; d < 3; d++)
                    cJSON_AddItemToArray(box, cJSON_CreateNumber(system.box[d]));
            } else {
                cJSON_AddNullToObject(document, "box");
            }
            cJSON_AddBoolToObject(document, "periodic", system.periodic);
            if (which == MODEL_LJ_FLUID || which == MODEL_FCC || which == MODEL_LJ65536)
                cJSON_AddNumberToObject(document, "density", density);
            if (which == MODEL_LJ_FLUID)
                cJSON_AddNumberToObject(document, "temperature", temperature);
            if (layout == FKT_LAYOUT_XYZQ_TYPE)
                cli_json_number(document, "net_charge", net_charge);
            code = cli_print_json(document);
        }
    }
    free(params_path);
    free(exclude_path);
    free(velocity_path);
    fkt_system_free(&system);
    return code;
}
