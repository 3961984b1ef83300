#define _XOPEN_SOURCE 700
#include "forcekit/forcekit.h"
#include "common/splitmix64.h"
#include "test_support.h"

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint64_t fk_test_seed(void)
{
    static uint64_t seed;
    if (seed == 0) {
        const char *fixed = getenv("FK_TEST_SEED");
        if (fixed && *fixed)
            seed = strtoull(fixed, NULL, 0);
        else
            seed = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid();
        if (seed == 0)
            seed = 1;
        fprintf(stderr, "test seed: FK_TEST_SEED=%llu\n", (unsigned long long)seed);
    }
    return seed;
}

void fk_test_rng_init(fk_test_rng *rng, uint64_t seed)
{
    rng->state = seed;
}

/* splitmix64: small, fast and good enough for test inputs. */
double fk_test_rng_uniform(fk_test_rng *rng)
{
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

char *fk_test_make_temp_dir(const char *prefix)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    size_t size = strlen(tmp) + strlen(prefix) + 16;
    char *path = malloc(size);
    if (!path)
        return NULL;
    snprintf(path, size, "%s/%sXXXXXX", tmp, prefix);
    if (!mkdtemp(path)) {
        free(path);
        return NULL;
    }
    return path;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void fk_test_remove_tree(const char *path)
{
    if (path)
        nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int fk_test_write_file(const char *path, const void *data, size_t size)
{
    FILE *file = fopen(path, "wb");
    if (!file)
        return -1;
    size_t written = fwrite(data, 1, size, file);
    int closed = fclose(file);
    return (written == size && closed == 0) ? 0 : -1;
}

const char *fk_test_source_dir(void)
{
    const char *dir = getenv("FK_TEST_SOURCE_DIR");
    return (dir && *dir) ? dir : ".";
}

const char *fk_test_data_dir(void)
{
    const char *dir = getenv("FK_TEST_DATA_DIR");
    struct stat st;
    if (dir && *dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        return dir;
    return NULL;
}

int fk_test_open_context(fk_context **context)
{
    fk_status status = fk_context_create(NULL, context);
    if (status != FK_OK) {
        fprintf(stderr, "context: %s: %s\n", fk_status_string(status),
                fk_context_last_error(*context));
        fk_context_destroy(*context);
        *context = NULL;
        return -1;
    }
    fprintf(stderr, "device: %s (%s)\n", fk_context_device(*context)->name,
            fk_context_device(*context)->selector);
    return 0;
}

void fk_test_jittered_lattice(double *position, int side, double spacing, double jitter,
                              fk_test_rng *rng)
{
    size_t i = 0;
    for (int x = 0; x < side; ++x)
        for (int y = 0; y < side; ++y)
            for (int z = 0; z < side; ++z, ++i) {
                const int cell[3] = {x, y, z};
                for (int k = 0; k < 3; ++k)
                    position[3 * i + (size_t)k] =
                        spacing * (cell[k] + 0.5) + jitter * (fk_test_rng_uniform(rng) - 0.5);
            }
}

void fk_test_fixed_lattice(int side, double spacing, uint64_t seed, double *position, int *type,
                           double *charge)
{
    size_t i = 0;
    for (int x = 0; x < side; ++x)
        for (int y = 0; y < side; ++y)
            for (int z = 0; z < side; ++z, ++i) {
                const int cell[3] = {x, y, z};
                for (int k = 0; k < 3; ++k)
                    position[3 * i + (size_t)k] = spacing * (cell[k] + 0.5) +
                                                  0.25 * (fk_splitmix64_float_uniform(&seed) - 0.5);
                type[i] = (int)(fk_splitmix64(&seed) & 1u);
                charge[i] = i % 2 ? -0.5 : 0.5;
            }
}

/* ---- the molecular test system (test_cells, test_neighbors) ---------------------------------- */

double fk_test_quantize(double x)
{
    return ldexp(nearbyint(ldexp(x, 16)), -16);
}

double fk_test_error_vs_float_reference(const char *kernel, const fk_particles *particles,
                                        const fk_physics *physics, const double *forces)
{
    const size_t count = 3 * particles->count;
    double *held = malloc(count * sizeof *held), *reference = malloc(count * sizeof *reference);
    if (!held || !reference) {
        fprintf(stderr, "fk_test_error_vs_float_reference: out of memory\n");
        abort();
    }
    for (size_t v = 0; v < count; ++v)
        held[v] = (double)(float)particles->position[v];
    fk_particles held_particles = *particles;
    held_particles.position = held;
    if (fk_reference_forces(kernel, &held_particles, physics, reference, NULL) != FK_OK) {
        fprintf(stderr, "fk_test_error_vs_float_reference: the %s reference failed\n", kernel);
        abort();
    }
    double largest = 0, worst = 0;
    for (size_t v = 0; v < count; ++v) {
        largest = fmax(largest, fabs(reference[v]));
        worst = fmax(worst, fabs(forces[v] - reference[v]));
    }
    free(held);
    free(reference);
    return worst / largest;
}

void fk_test_system_alloc(fk_test_system *s, const char *kernel, size_t n, fk_test_rng *rng)
{
    memset(s, 0, sizeof *s);
    s->kernel = kernel;
    s->n = n;
    s->position = calloc(3 * n, sizeof(double));
    s->charge = calloc(n, sizeof(double));
    s->type = calloc(n, sizeof(int));
    if (!s->position || !s->charge || !s->type) {
        fprintf(stderr, "fk_test_system_alloc: out of memory for %zu particles\n", n);
        abort();
    }
    for (size_t i = 0; i < n; ++i)
        s->charge[i] =
            (double)(float)((i % 2 ? -1.0 : 1.0) * (0.2 + 0.8 * fk_test_rng_uniform(rng)));
}

void fk_test_system_free(fk_test_system *s)
{
    free(s->position);
    free(s->charge);
    free(s->type);
    free(s->exclusions);
    memset(s, 0, sizeof *s);
}

void fk_test_system_lattice(fk_test_system *s, size_t first, size_t count, size_t side,
                            double spacing, const double origin[3], double jitter, fk_test_rng *rng)
{
    for (size_t k = 0; k < count; ++k) {
        const size_t site[3] = {k % side, (k / side) % side, k / (side * side)};
        for (int d = 0; d < 3; ++d)
            s->position[3 * (first + k) + d] = fk_test_quantize(
                origin[d] +
                ((double)site[d] + (-jitter + 2 * jitter * fk_test_rng_uniform(rng))) * spacing);
    }
}

fk_particles fk_test_system_view(const fk_test_system *s)
{
    fk_particles p = {.count = s->n, .position = s->position, .mass = s->charge, .type = s->type};
    if (strcmp(s->kernel, "lj") == 0)
        p.mass = NULL;
    return p;
}

double fk_test_system_distance(const fk_test_system *s, size_t i, size_t j)
{
    double r2 = 0;
    for (int d = 0; d < 3; ++d) {
        double x = s->position[3 * i + d] - s->position[3 * j + d];
        const double box = s->physics.box[d];
        if (box > 0)
            x -= box * nearbyint(x / box);
        r2 += x * x;
    }
    return sqrt(r2);
}

int fk_test_device_checks;

int fk_test_device_checks_on(void **state)
{
    (void)state;
    fk_test_device_checks = 1;
    return 0;
}

int fk_test_device_checks_off(void **state)
{
    (void)state;
    fk_test_device_checks = 0;
    return 0;
}

int fk_test_device_has_fp64(const struct fk_context *context)
{
    const fk_device_info *device = context ? fk_context_device(context) : NULL;
    return device && device->fp64;
}

int fk_test_default_device_has_fp64(void)
{
    static int known = -1;
    if (known < 0) {
        struct fk_context *context = NULL;
        known = fk_context_create(NULL, &context) == FK_OK && fk_test_device_has_fp64(context);
        fk_context_destroy(context);
    }
    return known;
}

int fk_test_seconds_reported(const struct fk_context *context, double seconds)
{
    if (seconds >= 0)
        return 1;
    const char *warnings = context ? fk_context_warnings(context) : "";
    return seconds == -1.0 && strstr(warnings, "device event times are not usable") != NULL;
}
