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

/* What the command line asks for, checked, with the model's defaults applied. */
typedef struct generate_request {
    model which;
    const struct model_info *info;
    const char *out;
    long long n, seed;
    double density, temperature;
    const fk_kernel_info *kernel;
    fkt_layout layout;
    int json;
} generate_request;

/* --n for the model: required, or the fixed count of protein and lj65536. */
static int resolve_count(generate_request *request, int n_given)
{
    const model which = request->which;
    if (which == MODEL_PROTEIN || which == MODEL_LJ65536) {
        const long long fixed = which == MODEL_PROTEIN ? FKT_PROTEIN_ATOMS : FKT_LJ65536_ATOMS;
        if (n_given && request->n != fixed)
            return cli_usage_error("generate", "--n %lld: the %s system has exactly %lld particles",
                                   request->n, request->info->name, fixed);
        request->n = fixed;
    } else if (!n_given) {
        return cli_usage_error("generate", "--n is required for --model %s", request->info->name);
    }
    if (which == MODEL_FLUORITE && request->n % 12 != 0)
        return cli_usage_error("generate",
                               "--n %lld: fluorite needs whole 12-ion unit cells (a multiple of "
                               "12, e.g. 12 k^3: 96, 324, 768, 1500)",
                               request->n);
    return CLI_EXIT_OK;
}

/* --density and --temperature for the model, with its defaults. */
static int resolve_density(generate_request *request, int density_given, int temperature_given)
{
    const model which = request->which;
    if (density_given && which != MODEL_LJ_FLUID && which != MODEL_FCC && which != MODEL_LJ65536)
        return cli_usage_error("generate", "--density applies to lj-fluid, fcc and lj65536");
    if (temperature_given && which != MODEL_LJ_FLUID)
        return cli_usage_error("generate", "--temperature applies to lj-fluid");
    if (!density_given)
        request->density = which == MODEL_LJ65536 ? FKT_LJ65536_DENSITY : 0.8;
    if (!temperature_given)
        request->temperature = 1.0;
    if (!(request->density > 0))
        return cli_usage_error("generate", "--density %g: must be > 0", request->density);
    if (which == MODEL_LJ65536 && request->density > FKT_LJ65536_MAX_DENSITY)
        return cli_usage_error("generate",
                               "--density %g: at most %g for lj65536 (random placement without "
                               "overlaps)",
                               request->density, FKT_LJ65536_MAX_DENSITY);
    if (!(request->temperature >= 0))
        return cli_usage_error("generate", "--temperature %g: must be >= 0", request->temperature);
    return CLI_EXIT_OK;
}

/* Parses and checks the command line. Returns 1 when the command is done (*code: 0 after the
 * help, 2 after a usage error). */
static int parse_request(int argc, char **argv, generate_request *request, int *code)
{
    const char *model_name = NULL, *kernel_name = NULL;
    int help = 0;
    *request = (generate_request){.seed = 1, .density = NAN, .temperature = NAN};
    cli_option table[] = {
        cli_string("model", "M", &model_name, "one of the above"),
        cli_string("out", "FILE", &request->out,
                   "the particle file; the others are FILE.params, FILE.exclude, FILE.vel"),
        cli_int("n", "N", &request->n, 1, 1 << 28,
                "particles, 1 to 2^28 (protein: 3339 and lj65536: 65536, the only values)"),
        cli_opt_seed(&request->seed, 0, CLI_MAX_SEED,
                     "seed of the random draws (default 1; rand48, the same on every platform)"),
        cli_explained(cli_opt_kernel(&kernel_name),
                      "the kernel whose columns to write (default: plummer ga, lj-fluid, fcc,\n"
                      "lj65536 lj, fluorite buck, protein ljc_constant)"),
        cli_double("density", "D", &request->density, -HUGE_VAL, HUGE_VAL,
                   "number density (lj-fluid, fcc: default 0.8; lj65536: default 0.5, at\n"
                   "most 1)"),
        cli_double("temperature", "T", &request->temperature, -HUGE_VAL, HUGE_VAL,
                   "lj-fluid temperature, k_B = m = 1 (default 1.0)"),
        cli_explained(cli_opt_json(&request->json),
                      "describe what was written as one JSON document on standard output"),
        cli_opt_help(&help),
    };
    const size_t options = sizeof table / sizeof table[0];
    static const cli_usage usage = {"generate", generate_synopsis, 19, NULL};
    if (cli_parse_command(&usage, argc, argv, table, options, code))
        return 1;
    *code = CLI_EXIT_USAGE;
    if (!model_name)
        return cli_usage_error("generate", "--model is required");
    int found = -1;
    for (int m = 0; m < (int)MODEL_COUNT; m++)
        if (strcmp(model_name, models[m].name) == 0)
            found = m;
    if (found < 0)
        return cli_usage_error("generate", "--model '%s': unknown; available: %s", model_name,
                               cmd_generate_models());
    request->which = (model)found;
    request->info = &models[found];
    if (!request->out || !*request->out)
        return cli_usage_error("generate", "--out FILE is required");
    if (resolve_count(request, cli_option_named(table, options, "n")->given) ||
        resolve_density(request, cli_option_named(table, options, "density")->given,
                        cli_option_named(table, options, "temperature")->given))
        return 1;
    if (!kernel_name)
        kernel_name = request->info->default_kernel;
    if (cli_find_kernel("generate", kernel_name, &request->kernel))
        return 1;
    if (!kernel_fits(request->info, request->kernel)) {
        char fitting[512];
        fitting_kernels(request->info, fitting, sizeof fitting);
        return cli_usage_error("generate", "--kernel %s: the %s model is for %s",
                               request->kernel->name, request->info->name, fitting);
    }
    request->layout = (fkt_layout)fkt_io_layout_for_kernel(request->kernel->name);
    *code = CLI_EXIT_OK;
    return 0;
}

/* The system of the request; reports a failure and returns its exit code. */
static int generate_system(const generate_request *request, fkt_system *system)
{
    memset(system, 0, sizeof *system);
    const fkt_layout layout = request->layout;
    system->layout = layout;
    const size_t count = (size_t)request->n;
    const uint64_t seed = (uint64_t)request->seed;
    const double density = request->density;
    fk_status status = FK_OK;
    switch (request->which) {
    case MODEL_PLUMMER:
        status = fkt_generate_plummer(count, seed, layout, &system->particles);
        system->units = "N-body (G = M = 1, E = -1/4)";
        break;
    case MODEL_LJ_FLUID:
        status = fkt_generate_lj_fluid(count, density, request->temperature, seed, layout,
                                       &system->particles, system->box);
        system->periodic = 1;
        system->units = "reduced (epsilon = sigma = m = k_B = 1)";
        break;
    case MODEL_FCC:
        status = fkt_generate_fcc(count, density, layout, &system->particles, system->box);
        system->periodic = 1;
        system->units = "reduced (epsilon = sigma = 1)";
        break;
    case MODEL_FLUORITE:
        status = fkt_generate_fluorite(count, system);
        break;
    case MODEL_PROTEIN:
        status = fkt_generate_protein(seed, system);
        break;
    case MODEL_LJ65536:
        status = fkt_generate_lj65536(count, density, seed, layout, system);
        break;
    }
    if (status != FK_OK) {
        fkt_system_free(system);
        cli_error("generate", "cannot generate the %s system: %s", request->info->name,
                  fk_status_string(status));
        return cli_exit_code(status);
    }
    if (layout == FKT_LAYOUT_XYZ_TYPE && system->particles.mass) {
        /* lj columns have no charge: a system built with charges drops them */
        free(system->particles.mass);
        system->particles.mass = NULL;
    }
    return CLI_EXIT_OK;
}

/* The files besides the particles: NULL where the model writes none. */
typedef struct generate_paths {
    char *params, *exclude, *velocity;
} generate_paths;

static void generate_paths_free(generate_paths *paths)
{
    free(paths->params);
    free(paths->exclude);
    free(paths->velocity);
}

/* The options of the forces command that reads these files, for the particle file's header. */
static void forces_arguments(const generate_request *request, const fkt_system *system,
                             const generate_paths *paths, char *physics, size_t size)
{
    size_t used = 0;
    physics[0] = '\0';
    if (paths->params)
        used += (size_t)snprintf(physics + used, size - used, " --params %s", paths->params);
    if (paths->exclude && used < size)
        used += (size_t)snprintf(physics + used, size - used, " --exclude %s", paths->exclude);
    if (system->coulomb != 0 && system->coulomb != 1 && request->layout == FKT_LAYOUT_XYZQ_TYPE &&
        used < size)
        used += (size_t)snprintf(physics + used, size - used, " --coulomb %.10g", system->coulomb);
    /* A periodic box needs a cutoff of at most half its side: lj has one by default (2.5); the
     * others are open clusters unless the user picks a cutoff. */
    if (system->periodic && strcmp(request->kernel->name, "lj") == 0 && used < size)
        snprintf(physics + used, size - used, " --box %.17g,%.17g,%.17g", system->box[0],
                 system->box[1], system->box[2]);
}

/* The particle file's header: how it was made, units, columns, box, the forces command. */
static void particle_header(const generate_request *request, const fkt_system *system,
                            const generate_paths *paths, const char *origin, char *header,
                            size_t size)
{
    const fkt_layout layout = request->layout;
    char physics[512];
    forces_arguments(request, system, paths, physics, sizeof physics);
    int length = snprintf(header, size, "%s\nunits: %s\ncolumns: %s\n", origin, system->units,
                          layout == FKT_LAYOUT_XYZM       ? "x y z m"
                          : layout == FKT_LAYOUT_XYZM_VEL ? "x y z m vx vy vz"
                          : layout == FKT_LAYOUT_XYZ_TYPE ? "x y z type"
                                                          : "x y z q type");
    if (system->box[0] > 0 && length > 0 && (size_t)length < size)
        length += snprintf(header + length, size - (size_t)length, "box %.17g %.17g %.17g (%s)\n",
                           system->box[0], system->box[1], system->box[2],
                           system->periodic ? "periodic" : "the cube it fills");
    if (length > 0 && (size_t)length < size)
        snprintf(header + length, size - (size_t)length, "forcekit forces --kernel %s --in %s%s",
                 request->kernel->name, request->out, physics);
}

/* The next file to write: its path, writer and data; the caller fills its header. */
static char *add_file(output_file *files, size_t *count, char *path,
                      int (*write)(FILE *, const void *, const char *), const void *data)
{
    output_file *file = &files[(*count)++];
    file->path = path;
    file->write = write;
    file->data = data;
    return file->header;
}

/* The files to write with their headers (the particles first); returns how many. */
static size_t describe_files(const generate_request *request, fkt_system *system,
                             const generate_paths *paths, particle_output *particles,
                             exclusion_output *exclusions, output_file *files)
{
    const model which = request->which;
    const char *out = request->out;
    char origin[512];
    snprintf(origin, sizeof origin, "forcekit generate --model %s --n %zu --seed %lld",
             request->info->name, (size_t)request->n, request->seed);
    if (which == MODEL_LJ_FLUID)
        snprintf(origin + strlen(origin), sizeof origin - strlen(origin),
                 " --density %.15g --temperature %.15g", request->density, request->temperature);
    else if (which == MODEL_FCC || which == MODEL_LJ65536)
        snprintf(origin + strlen(origin), sizeof origin - strlen(origin), " --density %.15g",
                 request->density);
    const size_t size = sizeof files[0].header;
    size_t file_count = 0;
    particle_header(request, system, paths, origin,
                    add_file(files, &file_count, (char *)out, write_particles, particles), size);
    if (paths->params)
        snprintf(add_file(files, &file_count, paths->params, write_params, &system->params), size,
                 "%s\npair parameters of %s: a b %s (%s)%s", origin, out,
                 system->params.parameters == 3 ? "A rho C" : "epsilon sigma", system->units,
                 which == MODEL_FLUORITE
                     ? "\nMorelon, Ghaleb, Delaye, Van Brutzel, Phil. Mag. 83 (2003) 1533: formal "
                       "charges, U-O and O-O Buckingham (O-O's four-range form equals this one "
                       "beyond 2.6 Angstrom), U-U Coulomb only"
                 : which == MODEL_PROTEIN
                     ? "\nAMBER parm99 (solute) and SPC/E (water), Lorentz-Berthelot mixing"
                     : "\nper-type epsilon in [0.5, 1.5), sigma in [0.8, 1.2), Lorentz-Berthelot "
                       "mixing");
    if (paths->exclude)
        snprintf(add_file(files, &file_count, paths->exclude, write_exclusions, exclusions), size,
                 "%s\nexcluded pairs of %s (0-based): the 1-2 and 1-3 pairs of every residue and "
                 "water",
                 origin, out);
    if (paths->velocity)
        snprintf(
            add_file(files, &file_count, paths->velocity, write_velocities, &system->particles),
            size,
            "%s\nvelocities of %s: vx vy vz, Maxwell-Boltzmann at T = %.17g, zero total "
            "momentum",
            origin, out, request->temperature);
    return file_count;
}

/* A file name as JSON: the string, or null when the model writes no such file. */
static void json_path(cJSON *document, const char *key, const char *path)
{
    if (path)
        cJSON_AddStringToObject(document, key, path);
    else
        cJSON_AddNullToObject(document, key);
}

static int print_json_summary(const generate_request *request, const fkt_system *system,
                              const generate_paths *paths)
{
    const fkt_layout layout = request->layout;
    const size_t count = (size_t)request->n;
    double net_charge = 0.0;
    for (size_t i = 0; system->particles.mass && layout != FKT_LAYOUT_XYZM &&
                       layout != FKT_LAYOUT_XYZM_VEL && i < count;
         i++)
        net_charge += system->particles.mass[i];
    cJSON *document = cJSON_CreateObject();
    cJSON_AddStringToObject(document, "model", request->info->name);
    cJSON_AddNumberToObject(document, "n", (double)count);
    cJSON_AddNumberToObject(document, "seed", (double)request->seed);
    cJSON_AddStringToObject(document, "out", request->out);
    cJSON_AddStringToObject(document, "kernel", request->kernel->name);
    json_path(document, "params", paths->params);
    json_path(document, "exclude", paths->exclude);
    json_path(document, "velocities", paths->velocity);
    cJSON_AddNumberToObject(document, "exclusions", (double)system->exclusion_count);
    cJSON_AddNumberToObject(document, "types",
                            system->params.types ? (double)system->params.types : 1.0);
    cJSON_AddStringToObject(document, "units", system->units);
    if (system->coulomb != 0)
        cJSON_AddNumberToObject(document, "coulomb", system->coulomb);
    if (system->box[0] > 0) {
        cJSON *box = cJSON_AddArrayToObject(document, "box");
        for (int d = 0; d < 3; d++)
            cJSON_AddItemToArray(box, cJSON_CreateNumber(system->box[d]));
    } else {
        cJSON_AddNullToObject(document, "box");
    }
    cJSON_AddBoolToObject(document, "periodic", system->periodic);
    const model which = request->which;
    if (which == MODEL_LJ_FLUID || which == MODEL_FCC || which == MODEL_LJ65536)
        cJSON_AddNumberToObject(document, "density", request->density);
    if (which == MODEL_LJ_FLUID)
        cJSON_AddNumberToObject(document, "temperature", request->temperature);
    if (layout == FKT_LAYOUT_XYZQ_TYPE)
        cli_json_number(document, "net_charge", net_charge);
    return cli_print_json(document);
}

int cmd_generate(int argc, char **argv)
{
    generate_request request;
    int code = CLI_EXIT_OK;
    if (parse_request(argc, argv, &request, &code))
        return code;
    fkt_system system;
    code = generate_system(&request, &system);
    if (code != CLI_EXIT_OK)
        return code;
    const char *out = request.out;
    const int velocities = request.which == MODEL_LJ_FLUID;
    generate_paths paths = {
        .params = system.params.types ? concat(out, ".params") : NULL,
        .exclude = system.exclusion_count ? concat(out, ".exclude") : NULL,
        .velocity = velocities ? concat(out, ".vel") : NULL,
    };
    if ((system.params.types && !paths.params) || (system.exclusion_count && !paths.exclude) ||
        (velocities && !paths.velocity)) {
        generate_paths_free(&paths);
        fkt_system_free(&system);
        return cli_report_status(FK_ERR_HOST_MEMORY, NULL);
    }
    output_file files[OUTPUT_FILES];
    memset(files, 0, sizeof files);
    particle_output particles = {&system.particles, request.layout};
    exclusion_output exclusions = {system.exclusions, system.exclusion_count};
    const size_t file_count =
        describe_files(&request, &system, &paths, &particles, &exclusions, files);
    code = write_outputs(files, file_count);
    if (code == CLI_EXIT_OK) {
        fprintf(stderr, "forcekit: generate: wrote %s (%zu particles, %s)", out, (size_t)request.n,
                request.kernel->name);
        for (size_t k = 1; k < file_count; k++)
            fprintf(stderr, ", %s", files[k].path);
        fputc('\n', stderr);
        if (request.json)
            code = print_json_summary(&request, &system, &paths);
    }
    generate_paths_free(&paths);
    fkt_system_free(&system);
    return code;
}
