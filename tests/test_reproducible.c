/*
 * Reproducible mode across devices, pair loops and exclusion modes: golden checksums.
 *
 * docs/precision.md ("Bit-identity promises") promises that with fk_eval_config.reproducible the
 * results of fixed64 and narumi are the same bits on every conformant device that can run the mode
 * (fk_eval_reproducible() == 1), in every pair loop and exclusion mode: every pair term is built
 * from correctly rounded operations only (+, -, *, /, sqrt; no rsqrt, no contraction, denormals
 * kept), so it is the same bits in every program, and the fixed-point sums are exact and
 * order-independent. This test holds each device CI has (POCL, Intel's CPU runtime) and the GPU to
 * one checksum per case, measured once and written down here: the same constant for all-pairs,
 * symmetric and cells, and for exclusions on the fly and afterwards. A device that cannot run
 * the mode says why, loudly; its cases still run, held to the reference, and print whether their
 * checksums happen to match (not an assertion there: nothing promises it).
 *
 * The inputs are fixed (a seeded generator), as a golden value needs; the other tests hold every
 * variant to the double-precision reference on fresh random inputs, and so does this one, loosely,
 * so that a checksum can never be of wrong forces.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/internal.h"
#include "common/splitmix64.h"
#include "test_support.h"

/* Fixed inputs on every platform (splitmix64), exact in float. */
static double uniform(uint64_t *seed)
{
    return fk_splitmix64_float_uniform(seed);
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

enum {
    GRAVITY_N = 700,
    LATTICE_SIDE = 8,
    MOLECULAR_N = LATTICE_SIDE * LATTICE_SIDE * LATTICE_SIDE
};
#define SPACING 1.125
#define BOX (LATTICE_SIDE * SPACING)

typedef struct system {
    size_t n;
    double position[3 * MOLECULAR_N > 3 * GRAVITY_N ? 3 * MOLECULAR_N : 3 * GRAVITY_N];
    double mass[MOLECULAR_N > GRAVITY_N ? MOLECULAR_N : GRAVITY_N];
    int type[MOLECULAR_N];
    size_t exclusions[2 * MOLECULAR_N];
    size_t exclusion_count;
} system_t;

/* A unit-cube cluster of unequal masses (gravity). */
static void gravity_system(system_t *s)
{
    uint64_t seed = 20261123;
    s->n = GRAVITY_N;
    for (size_t i = 0; i < s->n; ++i) {
        for (int k = 0; k < 3; ++k)
            s->position[3 * i + (size_t)k] = uniform(&seed);
        s->mass[i] = (0.5 + uniform(&seed)) / 1024.0;
    }
    s->exclusion_count = 0;
}

/* A jittered lattice in a periodic box, two types, charges +-0.5, every even particle excluded
 * from the next (a bonded pair, close by). */
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

/* epsilon, sigma per type pair (a, b) */
static const double pair_values[] = {1.0, 1.0, 0.75, 1.1, 0.75, 1.1, 0.5, 1.2};

typedef struct golden_case {
    const char *kernel, *accum;
    fk_algorithm algorithm;
    fk_exclusion_mode exclusion_mode;
    uint64_t expected; /* FNV-1a of the packed results (forces and potentials) */
} golden_case;

/* The constants were measured on POCL 3.1 (x86-64) and checked on Intel's CPU runtime and an
 * NVIDIA H200; a change of a force law's or an accumulator's arithmetic changes them on purpose,
 * and then every device must agree on the new value. */
#define GA_FIXED64 0x24617cb85c2cb961ull
#define GA_NARUMI 0x1d2bf8ff6341a764ull
#define LJ_FIXED64 0xdd79db7d8939a8a0ull
#define LJC_FIXED64 0x64432acf6c223994ull
static const golden_case cases[] = {
    {"ga", "fixed64", FK_ALGORITHM_ALL_PAIRS, FK_EXCLUDE_ON_THE_FLY, GA_FIXED64},
    {"ga", "fixed64", FK_ALGORITHM_SYMMETRIC, FK_EXCLUDE_ON_THE_FLY, GA_FIXED64},
    {"ga", "narumi", FK_ALGORITHM_ALL_PAIRS, FK_EXCLUDE_ON_THE_FLY, GA_NARUMI},
    {"lj", "fixed64", FK_ALGORITHM_ALL_PAIRS, FK_EXCLUDE_ON_THE_FLY, LJ_FIXED64},
    {"lj", "fixed64", FK_ALGORITHM_CELLS, FK_EXCLUDE_ON_THE_FLY, LJ_FIXED64},
    {"lj", "fixed64", FK_ALGORITHM_SYMMETRIC, FK_EXCLUDE_ON_THE_FLY, LJ_FIXED64},
    {"ljc_constant", "fixed64", FK_ALGORITHM_ALL_PAIRS, FK_EXCLUDE_ON_THE_FLY, LJC_FIXED64},
    {"ljc_constant", "fixed64", FK_ALGORITHM_ALL_PAIRS, FK_EXCLUDE_AFTERWARDS, LJC_FIXED64},
    {"ljc_constant", "fixed64", FK_ALGORITHM_CELLS, FK_EXCLUDE_ON_THE_FLY, LJC_FIXED64},
};

/* Runs one case; returns 1 when the device can run reproducible mode, 0 when it cannot (said
 * why): the case still runs there, is held to the reference, and its checksum is compared but not
 * promised (Mesa's llvmpipe: no correctly rounded divide and sqrt and no fp64). */
static int run_case(const golden_case *c, const system_t *s, uint64_t *hash, double *worst)
{
    const int gravity = strcmp(c->kernel, "ga") == 0;
    fk_eval_config config = {.kernel = c->kernel,
                             .accum = c->accum,
                             .reproducible = 1,
                             .potential = 1,
                             .algorithm = (int)c->algorithm,
                             .exclusion_mode = (int)c->exclusion_mode};
    if (gravity) {
        config.eps = 0.01;
    } else {
        config.cutoff = 2.5;
        config.box[0] = config.box[1] = config.box[2] = BOX;
    }
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(fk_test_context, &config, &eval);
    if (status != FK_OK)
        fail_msg("%s %s %s: create: %s: %s", c->kernel, c->accum, fk_algorithm_name(c->algorithm),
                 fk_status_string(status), fk_context_last_error(fk_test_context));
    const char *reason = NULL;
    const int capable = fk_eval_reproducible(eval, &reason) == 1;
    if (!capable)
        fprintf(stderr,
                "NOT PROMISED %s %s: this device cannot run reproducible mode: %s; its checksum "
                "is compared below but not held to the golden value\n",
                c->kernel, c->accum, reason ? reason : "(no reason)");
    const fk_particles particles = {
        .count = s->n, .position = s->position, .mass = s->mass, .type = gravity ? NULL : s->type};
    if (!gravity) {
        const fk_pair_table table = {.types = 2, .values = pair_values};
        status = fk_eval_set_pair_table(eval, &table);
        if (status == FK_OK && strcmp(c->kernel, "lj") != 0)
            status = fk_eval_set_exclusions(eval, s->exclusions, s->exclusion_count);
    }
    if (status == FK_OK)
        status = fk_eval_set_particles(eval, &particles);
    if (status == FK_OK)
        status = fk_eval_compute(eval, NULL);
    const size_t components = 4; /* 3 forces + the potential */
    uint32_t *packed = malloc(2 * components * s->n * sizeof *packed);
    double *forces = malloc(3 * s->n * sizeof *forces);
    double *reference = malloc(3 * s->n * sizeof *reference);
    assert_true(packed && forces && reference);
    if (status == FK_OK)
        status = fk__eval_read_packed(eval, packed);
    if (status == FK_OK)
        status = fk_eval_read_forces(eval, forces);
    if (status != FK_OK)
        fail_msg("%s %s %s: %s: %s", c->kernel, c->accum, fk_algorithm_name(c->algorithm),
                 fk_status_string(status), fk_context_last_error(fk_test_context));
    fk_eval_destroy(eval);

    /* Loosely against the reference: the checksum must be of right forces. */
    fk_physics physics = {.eps = config.eps, .cutoff = config.cutoff};
    memcpy(physics.box, config.box, sizeof physics.box);
    if (!gravity && strcmp(c->kernel, "lj") != 0) {
        physics.exclusions = s->exclusions;
        physics.exclusion_count = s->exclusion_count;
    }
    const fk_pair_table table = {.types = 2, .values = pair_values};
    if (!gravity)
        physics.pair_table = &table;
    status = fk_reference_forces(c->kernel, &particles, &physics, reference, NULL);
    if (status != FK_OK)
        fail_msg("reference %s: %s", c->kernel, fk_status_string(status));
    double scale = 0, largest = 0;
    for (size_t v = 0; v < 3 * s->n; ++v)
        scale = fmax(scale, fabs(reference[v]));
    for (size_t v = 0; v < 3 * s->n; ++v)
        largest = fmax(largest, fabs(forces[v] - reference[v]));
    *worst = largest / scale;
    *hash = fnv1a(packed, 2 * components * s->n);
    free(packed);
    free(forces);
    free(reference);
    return capable;
}

static void test_golden_checksums(void **state)
{
    (void)state;
    static system_t gravity, molecular;
    gravity_system(&gravity);
    molecular_system(&molecular);
    int mismatches = 0, ran = 0, unpromised = 0, unpromised_same = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        const golden_case *c = &cases[k];
        uint64_t hash = 0;
        double worst = 0;
        const int capable =
            run_case(c, strcmp(c->kernel, "ga") == 0 ? &gravity : &molecular, &hash, &worst);
        const int same = hash == c->expected;
        if (capable) {
            ++ran;
            mismatches += !same;
        } else {
            ++unpromised;
            unpromised_same += same;
        }
        fprintf(stderr,
                "  %-12s %-7s %-9s %-10s checksum %016llx %s (expected %016llx)%s; largest "
                "error / largest force %.2g\n",
                c->kernel, c->accum, fk_algorithm_name(c->algorithm),
                c->exclusion_mode == FK_EXCLUDE_AFTERWARDS ? "afterwards" : "on the fly",
                (unsigned long long)hash, same ? "==" : "!=", (unsigned long long)c->expected,
                capable ? "" : " not promised", worst);
        if (!(worst < 1e-5))
            fail_msg("%s %s: largest error %.3g of the largest force", c->kernel, c->accum, worst);
    }
    fprintf(stderr, "  on %s: %d cases ran", fk_context_device(fk_test_context)->name, ran);
    if (unpromised)
        fprintf(stderr, "; %d more without the promise, %d of them with the golden checksum",
                unpromised, unpromised_same);
    fprintf(stderr, "\n");
    if (mismatches)
        fail_msg("%d of %d reproducible checksums differ from the golden values", mismatches, ran);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_checksums),
    };
    return cmocka_run_group_tests(tests, fk_test_context_setup, fk_test_context_teardown);
}
