/*
 * Golden checksums of every pair-loop variant in fixed64, taken before a refactor of the loops and
 * kept to prove that it changed no bit (issue #14: "fixed64 results stay bit-identical to before on
 * every variant").
 *
 * Outside reproducible mode a pair term is whatever the device's compiler makes of one program, so
 * two variants may differ in the last bits and no checksum holds across devices: a golden file
 * belongs to one device and driver (its first line names them). fixed64 sums are exact and
 * order-independent, so on that device a variant's checksum changes only when the arithmetic of its
 * pair term, its exclusion handling or its read-back changes.
 *
 *   golden_variants [--all]                 print the checksums (--all: every variant)
 *   golden_variants --check FILE [--all]    compare with FILE; exit 77 (skipped) when FILE was
 *                                           written on another device or driver
 *
 * Each line: kernel loop variant exclusions result: the FNV-1a of the packed fixed64
 * words (forces and potentials), or refused-S with the fk_status S the variant was refused with.
 * Every computed result is also held loosely to the double-precision reference, so a checksum is
 * never of wrong forces. A variant the golden file says was refused and that runs now is reported,
 * not failed (a refactor may add support); a variant that ran and is refused now fails.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "common/splitmix64.h"
#include "test_support.h"

enum {
    GRAVITY_N = 389,
    LATTICE_SIDE = 7,
    MOLECULAR_N = LATTICE_SIDE * LATTICE_SIDE * LATTICE_SIDE
};
#define MOST_N (GRAVITY_N > MOLECULAR_N ? GRAVITY_N : MOLECULAR_N)
#define SPACING 1.125
#define BOX (LATTICE_SIDE * SPACING)

typedef struct system {
    size_t n;
    double position[3 * MOST_N];
    double velocity[3 * MOST_N];
    double mass[MOST_N];
    int type[MOST_N];
    size_t exclusions[2 * MOST_N];
    size_t exclusion_count;
} system_t;

static void gravity_system(system_t *s)
{
    uint64_t seed = 20261123;
    s->n = GRAVITY_N;
    for (size_t i = 0; i < s->n; ++i) {
        for (int k = 0; k < 3; ++k) {
            s->position[3 * i + (size_t)k] = fk_splitmix64_float_uniform(&seed);
            s->velocity[3 * i + (size_t)k] = fk_splitmix64_float_uniform(&seed) - 0.5;
        }
        s->mass[i] = (0.5 + fk_splitmix64_float_uniform(&seed)) / 1024.0;
    }
    s->exclusion_count = 0;
}

/* A jittered lattice in a periodic box, two types, charges +-0.5, pairs (2k, 2k+1) excluded. */
static void molecular_system(system_t *s)
{
    s->n = MOLECULAR_N;
    fk_test_fixed_lattice(LATTICE_SIDE, SPACING, 1123, s->position, s->type, s->mass);
    s->exclusion_count = 0;
    for (size_t j = 0; j + 1 < s->n; j += 2) {
        s->exclusions[2 * s->exclusion_count] = j;
        s->exclusions[2 * s->exclusion_count + 1] = j + 1;
        ++s->exclusion_count;
    }
}

/* (a, b) = (0,0), (0,1), (1,0), (1,1) */
static const double lj_pairs[] = {1.0, 1.0, 0.75, 1.1, 0.75, 1.1, 0.5, 1.2};
static const double buck_pairs[] = {1000, 0.3, 10, 800, 0.32, 12, 800, 0.32, 12, 600, 0.35, 14};

typedef struct variant {
    int unroll_i, unroll_j, tiling, lanes;
} variant;

static int subset_variant(const variant *v)
{
    static const variant subset[] = {{1, 1, -1, -1}, {1, 4, 1, -1}, {2, 4, -1, -1}, {4, 4, 1, -1},
                                     {8, 8, -1, -1}, {1, 1, -1, 8}, {1, 4, -1, 16}};
    for (size_t k = 0; k < sizeof subset / sizeof subset[0]; ++k)
        if (memcmp(&subset[k], v, sizeof *v) == 0)
            return 1;
    return 0;
}

static uint64_t fnv1a(const uint32_t *words, size_t count)
{
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t w = 0; w < count; ++w)
        for (int b = 0; b < 4; ++b) {
            hash ^= (words[w] >> (8 * b)) & 0xffu;
            hash *= 0x100000001b3ull;
        }
    return hash;
}

static fk_context *context;
static int wrong_forces;

/* One variant: writes its result ("0123abcd..." or a status name) into result. */
static void run_variant(const char *kernel, const system_t *s, fk_algorithm algorithm,
                        const variant *v, fk_exclusion_mode exclusions, char *result,
                        size_t result_size)
{
    const int gravity = strcmp(kernel, "ga") == 0 || strcmp(kernel, "gaj") == 0;
    const int has_exclusions = !gravity && strcmp(kernel, "lj") != 0;
    fk_eval_config config = {.kernel = kernel,
                             .accum = "fixed64",
                             .unroll_i = v->unroll_i,
                             .unroll_j = v->unroll_j,
                             .local_tiling = v->tiling,
                             .lanes = v->lanes,
                             .potential = strcmp(kernel, "gaj") != 0,
                             .algorithm = (int)algorithm,
                             .exclusion_mode = (int)exclusions};
    if (gravity) {
        config.eps = 0.01;
    } else {
        config.cutoff = 2.5;
        config.box[0] = config.box[1] = config.box[2] = BOX;
    }
    const fk_pair_table table = {.types = 2,
                                 .values = strcmp(kernel, "buck") == 0 ? buck_pairs : lj_pairs};
    const fk_particles particles = {.count = s->n,
                                    .position = s->position,
                                    .mass = s->mass,
                                    .velocity = strcmp(kernel, "gaj") == 0 ? s->velocity : NULL,
                                    .type = gravity ? NULL : s->type};
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(context, &config, &eval);
    if (status == FK_OK && !gravity)
        status = fk_eval_set_pair_table(eval, &table);
    if (status == FK_OK && has_exclusions)
        status = fk_eval_set_exclusions(eval, s->exclusions, s->exclusion_count);
    if (status == FK_OK)
        status = fk_eval_set_particles(eval, &particles);
    if (status == FK_OK)
        status = fk_eval_compute(eval, NULL);
    const size_t force_components = eval ? fk_eval_force_components(eval) : 3;
    const size_t components = force_components + (config.potential ? 1 : 0);
    uint32_t *packed = malloc(2 * components * s->n * sizeof *packed);
    double *forces = malloc(components * s->n * sizeof *forces);
    double *reference = malloc(components * s->n * sizeof *reference);
    if (!packed || !forces || !reference) {
        fprintf(stderr, "golden_variants: out of memory\n");
        exit(1);
    }
    if (status == FK_OK)
        status = fk__eval_read_packed(eval, packed);
    if (status == FK_OK)
        status = fk_eval_read_forces(eval, forces);
    fk_eval_destroy(eval);
    if (status != FK_OK) {
        snprintf(result, result_size, "refused-%d", (int)status);
    } else {
        fk_physics physics = {.eps = config.eps, .cutoff = config.cutoff};
        memcpy(physics.box, config.box, sizeof physics.box);
        if (!gravity)
            physics.pair_table = &table;
        if (has_exclusions) {
            physics.exclusions = s->exclusions;
            physics.exclusion_count = s->exclusion_count;
        }
        if (fk_reference_forces(kernel, &particles, &physics, reference, NULL) != FK_OK) {
            fprintf(stderr, "golden_variants: reference %s failed\n", kernel);
            exit(1);
        }
        const size_t values = force_components * s->n;
        double scale = 0, largest = 0;
        for (size_t k = 0; k < values; ++k)
            scale = fmax(scale, fabs(reference[k]));
        for (size_t k = 0; k < values; ++k)
            largest = fmax(largest, fabs(forces[k] - reference[k]));
        if (!(largest <= 1e-5 * scale)) {
            fprintf(stderr, "WRONG FORCES %s %s %dx%d: largest error %.3g of %.3g\n", kernel,
                    fk_algorithm_name(algorithm), v->unroll_i, v->unroll_j, largest, scale);
            ++wrong_forces;
        }
        snprintf(result, result_size, "%016llx",
                 (unsigned long long)fnv1a(packed, 2 * components * s->n));
    }
    free(packed);
    free(forces);
    free(reference);
}

typedef struct golden {
    char device[1200];
    char **lines;
    size_t count;
} golden;

static void device_line(char *out, size_t size)
{
    const fk_device_info *info = fk_context_device(context);
    snprintf(out, size, "# device: %s | %s | %s", info->name, info->platform_name,
             info->driver_version);
}

static int load_golden(const char *path, golden *g)
{
    FILE *file = fopen(path, "r");
    if (!file)
        return -1;
    char line[sizeof g->device];
    g->device[0] = '\0';
    g->lines = NULL;
    g->count = 0;
    while (fgets(line, sizeof line, file)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "# device: ", 10) == 0) {
            memcpy(g->device, line, sizeof line);
            continue;
        }
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char **grown = realloc(g->lines, (g->count + 1) * sizeof *grown);
        if (!grown || !(grown[g->count] = strdup(line))) {
            fclose(file);
            return -1;
        }
        g->lines = grown;
        ++g->count;
    }
    fclose(file);
    return 0;
}

/* The golden result for key ("kernel loop variant exclusions"), or NULL. */
static const char *golden_result(const golden *g, const char *key)
{
    const size_t length = strlen(key);
    for (size_t k = 0; k < g->count; ++k)
        if (strncmp(g->lines[k], key, length) == 0 && g->lines[k][length] == ' ')
            return g->lines[k] + length + 1;
    return NULL;
}

/* 1 when the golden file has results of the pair loop named (its second field): a file written
 * before a loop existed lacks all of them, which is new coverage, not a change of bits. */
static int golden_has_loop(const golden *g, const char *loop)
{
    const size_t length = strlen(loop);
    for (size_t k = 0; k < g->count; ++k) {
        const char *second = strchr(g->lines[k], ' ');
        if (second && strncmp(second + 1, loop, length) == 0 && second[1 + length] == ' ')
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int all = 0;
    const char *check = NULL;
    for (int a = 1; a < argc; ++a) {
        if (strcmp(argv[a], "--all") == 0) {
            all = 1;
        } else if (strcmp(argv[a], "--check") == 0 && a + 1 < argc) {
            check = argv[++a];
        } else {
            fprintf(stderr, "usage: golden_variants [--all] [--check FILE]\n");
            return 2;
        }
    }
    if (fk_test_open_context(&context) != 0)
        return 1;
    char device[1200];
    device_line(device, sizeof device);
    golden g = {0};
    if (check) {
        if (load_golden(check, &g) != 0) {
            fprintf(stderr, "golden_variants: cannot read %s\n", check);
            fk_context_destroy(context);
            return 1;
        }
        if (strcmp(g.device, device) != 0) {
            fprintf(stderr, "SKIPPED: %s was written on\n  %s\nand this is\n  %s\n", check,
                    g.device, device);
            fk_context_destroy(context);
            return 77;
        }
    } else {
        printf("%s\n", device);
    }

    static system_t gravity, molecular;
    gravity_system(&gravity);
    molecular_system(&molecular);
    static const char *const kernels[] = {
        "ga", "gaj", "ljc_constant", "ljc_linear", "ljc_sigmoidal", "lj", "buck"};
    static const fk_algorithm loops[] = {FK_ALGORITHM_ALL_PAIRS, FK_ALGORITHM_SYMMETRIC,
                                         FK_ALGORITHM_CELLS, FK_ALGORITHM_NEIGHBORS};
    static const int unrolls[] = {1, 2, 4, 8};
    int mismatches = 0, compared = 0, newly = 0;
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; ++k) {
        const char *kernel = kernels[k];
        const int is_gravity = strncmp(kernel, "ga", 2) == 0;
        const system_t *s = is_gravity ? &gravity : &molecular;
        for (size_t l = 0; l < sizeof loops / sizeof loops[0]; ++l) {
            if ((loops[l] == FK_ALGORITHM_CELLS || loops[l] == FK_ALGORITHM_NEIGHBORS) &&
                is_gravity)
                continue;
            /* scalar variants, then lanes 8 and 16 (1xJ, no tiling) */
            for (int form = 0; form < 3; ++form)
                for (int ui = 0; ui < 4; ++ui)
                    for (int uj = 0; uj < 4; ++uj)
                        for (int tiling = -1; tiling <= 1; tiling += 2) {
                            variant v = {unrolls[ui], unrolls[uj], tiling,
                                         form == 0   ? -1
                                         : form == 1 ? 8
                                                     : 16};
                            if (form > 0 && (ui > 0 || tiling == 1))
                                continue;
                            if (!all && !subset_variant(&v))
                                continue;
                            const int modes = loops[l] == FK_ALGORITHM_ALL_PAIRS && !is_gravity &&
                                                      strcmp(kernel, "lj") != 0 && form == 0 &&
                                                      ui == 0 && uj == 0
                                                  ? 2
                                                  : 1;
                            for (int m = 0; m < modes; ++m) {
                                const fk_exclusion_mode mode =
                                    m ? FK_EXCLUDE_AFTERWARDS : FK_EXCLUDE_ON_THE_FLY;
                                char key[256], result[64];
                                snprintf(key, sizeof key, "%s %s %dx%d tiling=%s lanes=%d %s",
                                         kernel, fk_algorithm_name(loops[l]), v.unroll_i,
                                         v.unroll_j, tiling > 0 ? "on" : "off",
                                         v.lanes > 0 ? v.lanes : 0, m ? "afterwards" : "onthefly");
                                run_variant(kernel, s, loops[l], &v, mode, result, sizeof result);
                                if (!check) {
                                    printf("%s %s\n", key, result);
                                    fflush(stdout);
                                    continue;
                                }
                                const char *expected = golden_result(&g, key);
                                const int refused_then =
                                    expected && strncmp(expected, "refused", 7) == 0;
                                const int refused_now = strncmp(result, "refused", 7) == 0;
                                if (!expected &&
                                    !golden_has_loop(&g, fk_algorithm_name(loops[l]))) {
                                    fprintf(stderr,
                                            "NEW     %s %s (%s has no %s results: regenerate it)\n",
                                            key, result, check, fk_algorithm_name(loops[l]));
                                    ++newly;
                                } else if (!expected) {
                                    fprintf(stderr, "MISSING %s: not in %s\n", key, check);
                                    ++mismatches;
                                } else if (refused_then && !refused_now) {
                                    fprintf(stderr, "NEW     %s %s (was %s)\n", key, result,
                                            expected);
                                    ++newly;
                                } else if (strcmp(expected, result) != 0) {
                                    fprintf(stderr, "DIFFERS %s %s (golden %s)\n", key, result,
                                            expected);
                                    ++mismatches;
                                }
                                ++compared;
                            }
                        }
        }
    }
    for (size_t k = 0; k < g.count; ++k)
        free(g.lines[k]);
    free(g.lines);
    fk_context_destroy(context);
    if (check)
        fprintf(stderr, "golden_variants: %d compared, %d differ, %d newly supported, %d wrong\n",
                compared, mismatches, newly, wrong_forces);
    return mismatches || wrong_forces ? 1 : 0;
}
