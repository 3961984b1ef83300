/*
 * The symmetric pair loop (fk_eval_config.algorithm = FK_ALGORITHM_SYMMETRIC) against the
 * double-precision host reference on fresh random inputs, and against the all-pairs loop:
 *
 * - ga (with the potential), gaj, lj and ljc_constant (periodic box, cutoff, exclusions on the
 * fly), float and double within the per-particle scaled tolerance of the kernel tests, at N = 1, 2,
 * 31, 1000, 1024 and 4099: one block, two blocks, an even and an odd number of blocks, full and
 *   partial last blocks, the split distance nb/2 of an even nb;
 * - fixed64 in reproducible mode bit-identical (the packed integers) to the all-pairs fixed64
 *   result: the symmetric loop adds the terms all-pairs adds, each rounded on its own, integer sums
 *   do not depend on the order, and correctly rounded pair arithmetic makes each term the same
 *   bits in both programs (outside reproducible mode OpenCL lets two programs differ there);
 *   in either mode bit-identical with one block distance per launch (the same program);
 * - outputs NaN-poisoned (the library poisons the device buffer, the host arrays start as NaN), so
 *   an unwritten result fails;
 * - accumulators it does not support are refused with FK_ERR_UNSUPPORTED and a reason, and so
 *   are the fixed64 variants POCL miscompiles (src/core/loops/symmetric.c).
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
#include "test_support.h"

static fk_test_rng rng;

static int setup(void **state)
{
    if (fk_test_context_setup(state) != 0)
        return -1;
    const uint64_t seed = fk_test_seed();
    fk_test_rng_init(&rng, seed);
    return 0;
}

static int teardown(void **state)
{
    return fk_test_context_teardown(state);
}

/* ---------------------------------------------------------------------------------------------- */
/* Systems */

enum { TYPES = 3 };

typedef struct test_system {
    const char *kernel;
    size_t n;
    double *position, *source, *velocity; /* source: mass (gravity) or charge */
    int *type;
    fk_physics physics;
    fk_pair_table table;
    double *values; /* TYPES x TYPES x (epsilon, sigma) */
    size_t *exclusions;
    size_t exclusion_count;
} test_system;

static int is_gravity(const char *kernel)
{
    return strcmp(kernel, "ga") == 0 || strcmp(kernel, "gaj") == 0;
}

static double uniform(double low, double high)
{
    return low + (high - low) * fk_test_rng_uniform(&rng);
}

/* A multiple of 2^-16: coordinates below 64 differ exactly in float. */
static double quantize(double x)
{
    return ldexp(nearbyint(ldexp(x, 16)), -16);
}

/* Gravity: uniform in a unit cube, masses in [0.5, 1.5) / n, velocities in [-1, 1). Molecular: a
 * jittered cubic lattice (spacing 1.1), TYPES random types with a random symmetric table, charges
 * +-[0.2, 1]. Every value is exact in float, so the reference sees the device's input. */
static test_system make_system(const char *kernel, size_t n)
{
    test_system s = {.kernel = kernel, .n = n};
    s.position = malloc(3 * n * sizeof(double));
    s.source = malloc(n * sizeof(double));
    s.velocity = malloc(3 * n * sizeof(double));
    s.type = malloc(n * sizeof(int));
    assert_true(s.position && s.source && s.velocity && s.type);
    size_t side = 1;
    while (side * side * side < n)
        ++side;
    for (size_t i = 0; i < n; ++i) {
        const size_t site[3] = {i % side, (i / side) % side, i / (side * side)};
        for (int k = 0; k < 3; ++k)
            s.position[3 * i + (size_t)k] =
                is_gravity(kernel) ? (double)(float)uniform(-0.5, 0.5)
                                   : quantize(((double)site[k] + 0.5 + uniform(-0.2, 0.2)) * 1.1);
        for (int k = 0; k < 3; ++k)
            s.velocity[3 * i + (size_t)k] = (double)(float)uniform(-1, 1);
        const double sign = fk_test_rng_uniform(&rng) < 0.5 ? -1.0 : 1.0;
        s.source[i] = is_gravity(kernel) ? (double)(float)(uniform(0.5, 1.5) / (double)n)
                                         : (double)(float)(sign * uniform(0.2, 1.0));
        s.type[i] = (int)(fk_test_rng_uniform(&rng) * TYPES);
    }
    if (is_gravity(kernel)) {
        s.physics.eps = 0.01;
        return s;
    }
    s.values = malloc(TYPES * TYPES * 2 * sizeof(double));
    assert_non_null(s.values);
    for (size_t a = 0; a < TYPES; ++a)
        for (size_t b = a; b < TYPES; ++b) {
            const double epsilon = (double)(float)uniform(0.5, 1.5);
            const double sigma = (double)(float)uniform(0.8, 1.2);
            s.values[(a * TYPES + b) * 2] = s.values[(b * TYPES + a) * 2] = epsilon;
            s.values[(a * TYPES + b) * 2 + 1] = s.values[(b * TYPES + a) * 2 + 1] = sigma;
        }
    s.table = (fk_pair_table){.types = TYPES, .values = s.values};
    return s; /* physics.pair_table is set where the system's address is final (reference) */
}

static void free_system(test_system *s)
{
    free(s->position);
    free(s->source);
    free(s->velocity);
    free(s->type);
    free(s->exclusions);
    free(s->values);
}

static fk_particles view(const test_system *s)
{
    fk_particles p = {.count = s->n, .position = s->position, .mass = s->source};
    if (strcmp(s->kernel, "gaj") == 0)
        p.velocity = s->velocity;
    if (!is_gravity(s->kernel))
        p.type = s->type;
    if (strcmp(s->kernel, "lj") == 0)
        p.mass = NULL;
    return p;
}

/* Per particle: the sum over the other particles of the magnitudes of the parts of each pair
 * term (float rounding is proportional to it), forces and potential. Gravity: m/s^2 (and the
 * jerk's m |v| 4/s^3 with |v_ij| <= 2 sqrt 3); molecular: the LJ and Coulomb parts with the shift's
 * parts at the cutoff. */
static void term_scales(const test_system *s, double *force, double *potential)
{
    const fk_physics *ph = &s->physics;
    const int gravity = is_gravity(s->kernel), lj = strcmp(s->kernel, "lj") == 0;
    const double rc = lj && ph->cutoff == 0 ? 2.5 : ph->cutoff;
    for (size_t i = 0; i < s->n; ++i) {
        double f_sum = 0, u_sum = 0;
        for (size_t j = 0; j < s->n; ++j) {
            if (i == j)
                continue;
            double d[3], r2 = 0;
            for (int k = 0; k < 3; ++k) {
                d[k] = s->position[3 * j + (size_t)k] - s->position[3 * i + (size_t)k];
                if (ph->box[k] > 0)
                    d[k] -= ph->box[k] * nearbyint(d[k] / ph->box[k]);
                r2 += d[k] * d[k];
            }
            if (gravity) {
                const double s2 = r2 + ph->eps * ph->eps, m = s->source[j];
                const double jerk = strcmp(s->kernel, "gaj") == 0 ? 16.0 / sqrt(s2) : 0.0;
                f_sum += m / s2 * (1 + jerk);
                u_sum += m / sqrt(s2);
                continue;
            }
            const double r = sqrt(r2);
            if (rc > 0 && r >= rc)
                continue;
            const double *v = s->values + ((size_t)s->type[i] * TYPES + (size_t)s->type[j]) * 2;
            const double qq = lj ? 0.0 : fabs(s->source[i] * s->source[j]);
            double parts_f[2], parts_u[2];
            const double at[2] = {r, rc};
            for (int p = 0; p < (rc > 0 ? 2 : 1); ++p) {
                const double sr = v[1] / at[p], sr6 = sr * sr * sr * sr * sr * sr;
                parts_f[p] = 4 * v[0] * (12 * sr6 * sr6 + 6 * sr6) / at[p] + qq / (at[p] * at[p]);
                parts_u[p] = 4 * v[0] * (sr6 * sr6 + sr6) + qq / at[p];
            }
            f_sum += parts_f[0] + (rc > 0 ? parts_f[1] : 0);
            u_sum += 0.5 * (parts_u[0] + (rc > 0 ? parts_u[1] + (r + rc) * parts_f[1] : 0));
        }
        force[i] = f_sum;
        potential[i] = u_sum;
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Evaluations */

typedef struct options {
    const char *accum;
    int algorithm;
    int unroll_i, unroll_j, work_group_size;
    int j_splits; /* symmetric: block distances per launch */
    int on_the_fly;
    int reproducible;
} options;

typedef struct result {
    double *force, *potential;
    uint32_t *packed;
    unsigned components;
} result;

static void free_result(result *r)
{
    free(r->force);
    free(r->potential);
    free(r->packed);
}

static fk_eval *create(const test_system *s, options o)
{
    fk_eval_config config = {.kernel = s->kernel,
                             .accum = o.accum,
                             .algorithm = o.algorithm,
                             .unroll_i = o.unroll_i,
                             .unroll_j = o.unroll_j,
                             .work_group_size = o.work_group_size,
                             .j_splits = o.j_splits,
                             .potential = 1,
                             .eps = s->physics.eps,
                             .cutoff = s->physics.cutoff,
                             .reproducible = o.reproducible,
                             .exclusion_mode =
                                 o.on_the_fly ? FK_EXCLUDE_ON_THE_FLY : FK_EXCLUDE_AFTERWARDS};
    memcpy(config.box, s->physics.box, sizeof config.box);
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(fk_test_context, &config, &eval);
    if (status != FK_OK)
        fail_msg("create %s %s %s %dx%d: %s: %s", s->kernel, o.accum,
                 fk_algorithm_name((fk_algorithm)o.algorithm), o.unroll_i, o.unroll_j,
                 fk_status_string(status), fk_context_last_error(fk_test_context));
    return eval;
}

/* One evaluation into NaN-filled host arrays, with the packed device words. */
static result evaluate(fk_eval *eval, const test_system *s)
{
    const unsigned components = (unsigned)fk_kernel_find(s->kernel)->force_components;
    fk_status status = FK_OK;
    if (!is_gravity(s->kernel))
        status = fk_eval_set_pair_table(eval, &s->table);
    if (status == FK_OK && s->exclusion_count)
        status = fk_eval_set_exclusions(eval, s->exclusions, s->exclusion_count);
    const fk_particles particles = view(s);
    if (status == FK_OK)
        status = fk_eval_set_particles(eval, &particles);
    double seconds = -1;
    if (status == FK_OK)
        status = fk_eval_compute(eval, &seconds);
    if (status != FK_OK)
        fail_msg("%s N=%zu: %s: %s", s->kernel, s->n, fk_status_string(status),
                 fk_context_last_error(fk_test_context));
    assert_true(fk_test_seconds_reported(fk_test_context, seconds));
    result r = {malloc(components * s->n * sizeof(double)), malloc(s->n * sizeof(double)),
                malloc((components + 1) * s->n * 2 * sizeof(uint32_t)), components};
    assert_true(r.force && r.potential && r.packed);
    for (size_t i = 0; i < components * s->n; ++i)
        r.force[i] = NAN;
    for (size_t i = 0; i < s->n; ++i)
        r.potential[i] = NAN;
    assert_int_equal(fk_eval_read_forces(eval, r.force), FK_OK);
    assert_int_equal(fk_eval_read_potentials(eval, r.potential), FK_OK);
    assert_int_equal(fk__eval_read_packed(eval, r.packed), FK_OK);
    return r;
}

/* Worst error against the reference in units of the allowed error tol * scale_i (+ an absolute
 * floor for fixed64: up to one resolution step per term, (n + 16) 2^-44 of the largest scale). */
static double compare_reference(const test_system *s, const result *r, const char *accum)
{
    const size_t n = s->n;
    const unsigned components = r->components;
    double *ref = malloc(components * n * sizeof(double)), *ref_pot = malloc(n * sizeof(double));
    double *scale = malloc(n * sizeof(double)), *pot_scale = malloc(n * sizeof(double));
    assert_true(ref && ref_pot && scale && pot_scale);
    fk_physics physics = s->physics;
    physics.pair_table = is_gravity(s->kernel) ? NULL : &s->table;
    physics.exclusions = s->exclusions;
    physics.exclusion_count = s->exclusion_count;
    const fk_particles particles = view(s);
    assert_int_equal(fk_reference_forces(s->kernel, &particles, &physics, ref, ref_pot), FK_OK);
    term_scales(s, scale, pot_scale);
    const double ulp = 5.96e-8;
    const double tol = strcmp(accum, "float") == 0
                           ? ulp * (48.0 + 2.0 * sqrt((double)n) + 0.02 * (double)n)
                           : ulp * 48.0;
    double largest = 0;
    for (size_t i = 0; i < n; ++i)
        largest = fmax(largest, fmax(scale[i], pot_scale[i]));
    const double floor = strcmp(accum, "fixed64") == 0 ? ldexp((double)n + 16.0, -44) : 0.0;
    double worst = 0;
    for (size_t i = 0; i < n; ++i)
        for (unsigned k = 0; k <= components; ++k) {
            const int is_potential = k == components;
            const double value = is_potential ? r->potential[i] : r->force[i * components + k];
            const double want = is_potential ? ref_pot[i] : ref[i * components + k];
            if (!isfinite(value))
                fail_msg("%s %s N=%zu: particle %zu component %u is %g (unwritten?)", s->kernel,
                         accum, n, i, k, value);
            if (n == 1 && value != 0.0)
                fail_msg("%s N=1: the self term must give exactly 0, got %g", s->kernel, value);
            const double allowed = tol * (is_potential ? pot_scale[i] : scale[i]) + floor * largest;
            const double error = allowed > 0 ? fabs(value - want) / allowed : fabs(value - want);
            if (error > worst)
                worst = error;
        }
    free(ref);
    free(ref_pot);
    free(scale);
    free(pot_scale);
    if (worst > 1.0)
        fail_msg("%s %s N=%zu: error %.3g of the tolerance", s->kernel, accum, n, worst);
    return worst;
}

static void assert_identical(const test_system *s, const result *a, const result *b,
                             const char *what)
{
    const size_t words = (a->components + 1) * s->n * 2;
    for (size_t w = 0; w < words; ++w)
        if (a->packed[w] != b->packed[w])
            fail_msg("%s %s N=%zu: packed word %zu (particle %zu) differs: %08x vs %08x", s->kernel,
                     what, s->n, w, w / (2 * (a->components + 1)), a->packed[w], b->packed[w]);
}

/* Symmetric against the reference at each N; with fixed64 also bit for bit against the symmetric
 * loop with one block distance per launch, and in reproducible mode against all-pairs. */
static void check(const char *kernel, options o, const size_t *sizes, size_t size_count,
                  void (*prepare)(test_system *))
{
    o.algorithm = FK_ALGORITHM_SYMMETRIC;
    const int fixed = strcmp(o.accum, "fixed64") == 0;
    for (size_t k = 0; k < size_count; ++k) {
        test_system s = make_system(kernel, sizes[k]);
        if (prepare)
            prepare(&s);
        /* Per system: the physics (box, cutoff) is part of the configuration. Programs come from
         * the test's program cache after the first size. */
        fk_eval *symmetric = create(&s, o);
        result r = evaluate(symmetric, &s);
        const double worst = compare_reference(&s, &r, o.accum);
        fk_variant ran;
        assert_int_equal(fk_eval_get_variant(symmetric, &ran), FK_OK);
        fprintf(stderr, "  %s %s symmetric %dx%d wg %d N=%zu (%d distances): error %.3f of tol\n",
                kernel, o.accum, ran.unroll_i, ran.unroll_j, ran.work_group_size, s.n, ran.j_splits,
                worst);
        if (fixed) {
            options exact = o, base = o, single = o;
            exact.reproducible = base.reproducible = 1;
            base.algorithm = FK_ALGORITHM_ALL_PAIRS;
            single.j_splits = 1;
            fk_eval *symmetric_exact = create(&s, exact), *all_pairs = create(&s, base),
                    *one_per_launch = create(&s, single);
            result sx = evaluate(symmetric_exact, &s);
            result ap = evaluate(all_pairs, &s);
            assert_identical(&s, &sx, &ap, "reproducible symmetric vs all-pairs");
            result one = evaluate(one_per_launch, &s);
            assert_identical(&s, &r, &one, "symmetric vs one distance per launch");
            free_result(&sx);
            free_result(&ap);
            free_result(&one);
            fk_eval_destroy(symmetric_exact);
            fk_eval_destroy(all_pairs);
            fk_eval_destroy(one_per_launch);
        }
        fk_eval_destroy(symmetric);
        free_result(&r);
        free_system(&s);
    }
}

static const size_t sizes_all[] = {1, 2, 31, 1000, 1024, 4099};
static const size_t sizes_small[] = {2, 31, 1000};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The default symmetric variant (blocks of 256 on CPUs, 512 on GPUs) and a small explicit one
 * (blocks of 32): N = 1000 then has 32 blocks (even, partial last), 4099 has 129 (odd). */
static void test_ga_float(void **state)
{
    (void)state;
    check("ga", (options){.accum = "float"}, sizes_all, COUNT(sizes_all), NULL);
    check("ga", (options){.accum = "float", .unroll_i = 2, .unroll_j = 1, .work_group_size = 16},
          sizes_all, COUNT(sizes_all), NULL);
}

static void test_ga_fixed64(void **state)
{
    (void)state;
    check("ga", (options){.accum = "fixed64"}, sizes_all, COUNT(sizes_all), NULL);
    check("ga", (options){.accum = "fixed64", .unroll_i = 4, .unroll_j = 2, .work_group_size = 8},
          sizes_small, COUNT(sizes_small), NULL);
    check("ga", (options){.accum = "fixed64", .unroll_i = 2, .unroll_j = 2, .work_group_size = 32},
          sizes_small, COUNT(sizes_small), NULL);
}

/* The variants POCL miscompiles with fixed64 (src/core/loops/symmetric.c) are refused there, with a
 * reason; elsewhere they run and must match all-pairs bit for bit like every other. */
static void test_fixed64_wide_steps(void **state)
{
    (void)state;
    const int pocl = strstr(fk_context_device(fk_test_context)->platform_name,
                            "Portable Computing Language") != NULL;
    const options wide = {.accum = "fixed64", .unroll_i = 4, .unroll_j = 4, .work_group_size = 16};
    if (!pocl) {
        const size_t sizes[] = {1000};
        check("ga", wide, sizes, 1, NULL);
        return;
    }
    fk_eval_config config = {.kernel = "ga",
                             .accum = "fixed64",
                             .algorithm = FK_ALGORITHM_SYMMETRIC,
                             .unroll_i = wide.unroll_i,
                             .unroll_j = wide.unroll_j};
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_UNSUPPORTED);
    assert_null(eval);
    if (!strstr(fk_context_last_error(fk_test_context), "POCL"))
        fail_msg("the refusal should say why: %s", fk_context_last_error(fk_test_context));
}

static void test_ga_double(void **state)
{
    (void)state;
    if (!fk_context_device(fk_test_context)->fp64) {
        test_system s = make_system("ga", 4);
        fk_eval_config config = {.kernel = "ga", .accum = "double", .algorithm = 1};
        fk_eval *eval = NULL;
        assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_UNSUPPORTED);
        free_system(&s);
        return;
    }
    const size_t sizes[] = {31, 1000};
    check("ga", (options){.accum = "double", .unroll_i = 2, .unroll_j = 2, .work_group_size = 16},
          sizes, COUNT(sizes), NULL);
}

static void test_gaj_float(void **state)
{
    (void)state;
    check("gaj", (options){.accum = "float", .unroll_i = 2, .unroll_j = 2, .work_group_size = 16},
          sizes_small, COUNT(sizes_small), NULL);
}

static void test_lj(void **state)
{
    (void)state;
    check("lj", (options){.accum = "float", .unroll_i = 2, .unroll_j = 2, .work_group_size = 16},
          sizes_small, COUNT(sizes_small), NULL);
    check("lj", (options){.accum = "fixed64", .unroll_i = 2, .unroll_j = 2, .work_group_size = 16},
          sizes_small, COUNT(sizes_small), NULL);
}

/* Periodic box (the lattice's own period), cutoff 2.5, and 3 exclusions per particle masked on
 * the fly: the masks must hold on the j-side too. */
static void periodic_with_exclusions(test_system *s)
{
    size_t side = 1;
    while (side * side * side < s->n)
        ++side;
    for (int k = 0; k < 3; ++k)
        s->physics.box[k] = 1.1 * (double)side;
    s->physics.cutoff = s->n > 8 && 1.1 * (double)side >= 5.0 ? 2.5 : 0.0;
    if (s->physics.cutoff == 0) /* a box too small for the cutoff: open boundaries */
        memset(s->physics.box, 0, sizeof s->physics.box);
    s->exclusion_count = s->n / 2;
    s->exclusions = malloc(2 * s->exclusion_count * sizeof(size_t));
    assert_non_null(s->exclusions);
    for (size_t e = 0; e < s->exclusion_count; ++e) { /* i with i + 1: at most 2 per particle */
        s->exclusions[2 * e] = 2 * e;
        s->exclusions[2 * e + 1] = (2 * e + 1) % s->n;
    }
}

static void test_ljc_constant_periodic(void **state)
{
    (void)state;
    const size_t sizes[] = {31, 1000};
    check("ljc_constant",
          (options){.accum = "fixed64",
                    .unroll_i = 2,
                    .unroll_j = 1,
                    .work_group_size = 16,
                    .on_the_fly = 1},
          sizes, COUNT(sizes), periodic_with_exclusions);
}

static void test_refused(void **state)
{
    (void)state;
    const char *refused[] = {"ti", "nitadori", "narumi", "composite"};
    for (size_t k = 0; k < COUNT(refused); ++k) {
        fk_eval_config config = {
            .kernel = "ga", .accum = refused[k], .algorithm = FK_ALGORITHM_SYMMETRIC};
        fk_eval *eval = NULL;
        assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_UNSUPPORTED);
        assert_null(eval);
        const char *message = fk_context_last_error(fk_test_context);
        if (!strstr(message, "symmetric") || !strstr(message, refused[k]))
            fail_msg("the refusal should name the algorithm and %s: %s", refused[k], message);
    }
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused),    cmocka_unit_test(test_ga_float),
        cmocka_unit_test(test_ga_fixed64), cmocka_unit_test(test_fixed64_wide_steps),
        cmocka_unit_test(test_ga_double),  cmocka_unit_test(test_gaj_float),
        cmocka_unit_test(test_lj),         cmocka_unit_test(test_ljc_constant_periodic),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
