#define _XOPEN_SOURCE 700
#include "forcekit/forcekit.h"
#include "splitmix64.h"
#include "test_support.h"

#include <ftw.h>
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
