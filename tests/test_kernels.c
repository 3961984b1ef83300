/*
 * ga: every unroll variant (float), every accumulator (at three variants: tiling, j-splits,
 * softening, potential on and off) against the double-precision host reference, on fresh random
 * inputs, with poisoned output buffers (the library fills results with NaN before each run; the
 * host arrays are NaN too), at N that are not multiples of the work-group size or the unroll
 * factors.
 *
 * Error measure: per particle, |a - a_ref| / S_i where S_i = sum_j |term_ij| is the sum of the
 * magnitudes of the pair terms. Float rounding scales with S_i, not with the (possibly cancelling)
 * result, so this bound is tight and cannot be passed by an unrelated answer.
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

#include "forcekit/forcekit.h"
#include "test_support.h"

typedef struct bodies {
    size_t n;
    double *position, *mass;
} bodies;

/* Positions uniform in a unit cube, masses in [0.5, 1.5) / n, all exactly representable in float
 * so the reference sees the same input as the device. */
static bodies make_bodies(size_t n, fk_test_rng *rng)
{
    bodies b = {n, malloc(3 * n * sizeof(double)), malloc(n * sizeof(double))};
    assert_non_null(b.position);
    assert_non_null(b.mass);
    for (size_t i = 0; i < 3 * n; ++i)
        b.position[i] = (double)(float)(fk_test_rng_uniform(rng) - 0.5);
    for (size_t i = 0; i < n; ++i)
        b.mass[i] = (double)(float)((0.5 + fk_test_rng_uniform(rng)) / (double)n);
    return b;
}

static void free_bodies(bodies *b)
{
    free(b->position);
    free(b->mass);
}

/* S_i = sum_j m_j / s^2 (magnitude of each acceleration term) and P_i = sum_j m_j / s. */
static void term_scales(const bodies *b, double eps, double *accel_scale, double *pot_scale)
{
    for (size_t i = 0; i < b->n; ++i) {
        double sa = 0, sp = 0;
        for (size_t j = 0; j < b->n; ++j) {
            if (j == i)
                continue;
            double s2 = eps * eps;
            for (int k = 0; k < 3; ++k) {
                double d = b->position[3 * j + k] - b->position[3 * i + k];
                s2 += d * d;
            }
            sa += b->mass[j] / s2;
            sp += b->mass[j] / sqrt(s2);
        }
        accel_scale[i] = sa;
        pot_scale[i] = sp;
    }
}

typedef struct check_result {
    double worst_force, worst_potential;
    double scale_ratio; /* max_i S_i / min_i S_i, for the error model's global part */
} check_result;

/* Runs one evaluation on fresh bodies and returns the worst scaled errors. */
static check_result run_and_compare(fk_eval *eval, size_t n, double eps, int potential,
                                    fk_test_rng *rng)
{
    bodies b = make_bodies(n, rng);
    fk_particles particles = {.count = n, .position = b.position, .mass = b.mass};
    fk_status status = fk_eval_set_particles(eval, &particles);
    if (status != FK_OK)
        fail_msg("set_particles: %s: %s", fk_status_string(status),
                 fk_context_last_error(fk_test_context));
    double seconds = -1;
    status = fk_eval_compute(eval, &seconds);
    if (status != FK_OK)
        fail_msg("compute: %s: %s", fk_status_string(status),
                 fk_context_last_error(fk_test_context));
    assert_true(fk_test_seconds_reported(fk_test_context, seconds));

    double *force = malloc(3 * n * sizeof(double)), *ref = malloc(3 * n * sizeof(double));
    double *pot = malloc(n * sizeof(double)), *ref_pot = malloc(n * sizeof(double));
    double *scale = malloc(n * sizeof(double)), *pot_scale = malloc(n * sizeof(double));
    for (size_t i = 0; i < 3 * n; ++i)
        force[i] = NAN;
    for (size_t i = 0; i < n; ++i)
        pot[i] = NAN;
    assert_int_equal(fk_eval_read_forces(eval, force), FK_OK);
    if (potential)
        assert_int_equal(fk_eval_read_potentials(eval, pot), FK_OK);
    fk_physics physics = {.eps = eps};
    assert_int_equal(fk_reference_forces("ga", &particles, &physics, ref, ref_pot), FK_OK);
    term_scales(&b, eps, scale, pot_scale);

    check_result result = {0, 0, 1};
    double largest = 0, smallest = HUGE_VAL;
    for (size_t i = 0; n > 1 && i < n; ++i) {
        largest = fmax(largest, fmax(scale[i], pot_scale[i]));
        smallest = fmin(smallest, fmin(scale[i], pot_scale[i]));
    }
    if (n > 1 && smallest > 0)
        result.scale_ratio = largest / smallest;
    for (size_t i = 0; i < n; ++i) {
        for (int k = 0; k < 3; ++k) {
            double value = force[3 * i + (size_t)k];
            if (!isfinite(value))
                fail_msg("N=%zu particle %zu component %d is %g (unwritten or overflow)", n, i, k,
                         value);
            double err = fabs(value - ref[3 * i + (size_t)k]);
            double scaled = n > 1 ? err / scale[i] : err;
            if (n == 1 && value != 0.0)
                fail_msg("N=1: the self term must contribute exactly 0, got %g", value);
            if (scaled > result.worst_force)
                result.worst_force = scaled;
        }
        if (potential) {
            if (!isfinite(pot[i]))
                fail_msg("N=%zu particle %zu potential is %g", n, i, pot[i]);
            if (n == 1 && pot[i] != 0.0)
                fail_msg("N=1: the self potential must be exactly 0, got %g", pot[i]);
            double err = fabs(pot[i] - ref_pot[i]);
            double scaled = n > 1 ? err / pot_scale[i] : err;
            if (scaled > result.worst_potential)
                result.worst_potential = scaled;
        }
    }
    free(force);
    free(ref);
    free(pot);
    free(ref_pot);
    free(scale);
    free(pot_scale);
    free_bodies(&b);
    return result;
}

/* Tolerances on the scaled error, from the accumulator's error model (fk_accum_info.error; no
 * accumulator named here): 16 ulp for the pair term itself (rsqrt is not correctly rounded: OpenCL
 * allows 2 ulp for float rsqrt; native GPU versions stay inside that), plus the model's bound for
 * the sum, its global part taken at the largest ratio max_S / S_i of the run. Sums that grow like
 * float's are held to the typical growth, ~sqrt(n) (a float sum of n terms loses up to ~n/2 ulp in
 * the worst case), where that is tighter than the bound; a model that is not a bound (Nitadori's
 * trick without LARGE needs the sum to exceed each term, which the first terms and cancelling sums
 * break) gets the typical growth alone. */
static double tolerance(const char *accum, size_t n, double scale_ratio)
{
    const double ulp = 0x1p-24;
    const fk_accum_error_model *model = &fk_accum_find(accum)->error;
    const double typical = ulp * (2.0 * sqrt((double)n) + 0.02 * (double)n);
    const double range = (model->range_grows_with_n ? (double)n : 1.0) * scale_ratio;
    const double bound = model->relative + (double)(n > 0 ? n - 1 : 0) * model->growth +
                         (double)n * model->global * range;
    return ulp * 16.0 + (model->bounded ? fmin(bound, typical) : typical);
}

typedef struct variant_case {
    int unroll_i, unroll_j, tiling, splits;
} variant_case;

static void check_variant(const char *accum, variant_case v, const size_t *sizes, size_t size_count,
                          double eps, int potential)
{
    if (fk_accum_find(accum)->needs_fp64 && !fk_context_device(fk_test_context)->fp64) {
        fk_eval_config config = {.kernel = "ga", .accum = accum};
        fk_eval *eval = NULL;
        assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_UNSUPPORTED);
        assert_null(eval);
        return;
    }
    fk_eval_config config = {.kernel = "ga",
                             .accum = accum,
                             .unroll_i = v.unroll_i,
                             .unroll_j = v.unroll_j,
                             .local_tiling = v.tiling,
                             .j_splits = v.splits,
                             .potential = potential,
                             .eps = eps};
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(fk_test_context, &config, &eval);
    if (status == FK_ERR_UNSUPPORTED) {
        fprintf(stderr, "  %dx%d %s: not supported here: %s\n", v.unroll_i, v.unroll_j, accum,
                fk_context_last_error(fk_test_context));
        return;
    }
    if (status != FK_OK)
        fail_msg("create %dx%d %s: %s: %s", v.unroll_i, v.unroll_j, accum, fk_status_string(status),
                 fk_context_last_error(fk_test_context));
    fk_test_rng rng;
    fk_test_rng_init(&rng,
                     fk_test_seed() ^ (uint64_t)(v.unroll_i * 131 + v.unroll_j * 7 + v.tiling));
    for (size_t s = 0; s < size_count; ++s) {
        check_result r = run_and_compare(eval, sizes[s], eps, potential, &rng);
        double tol = tolerance(accum, sizes[s], r.scale_ratio);
        fk_variant used;
        fk_eval_get_variant(eval, &used);
        if (r.worst_force > tol || r.worst_potential > tol)
            fail_msg("ga %dx%d %s tiling=%d splits=%d N=%zu eps=%g: worst scaled error force %.3g "
                     "potential %.3g > %.3g",
                     v.unroll_i, v.unroll_j, accum, used.local_tiling, used.j_splits, sizes[s], eps,
                     r.worst_force, r.worst_potential, tol);
    }
    fk_eval_destroy(eval);
}

static const size_t sizes[] = {1, 2, 31, 1000, 1531, 4099};

/* All 16 with --full; the default run (CI) the diagonal and the corners 1x8, 8x1. */
static void all_unroll_variants(const char *accum)
{
    static const int factors[] = {1, 2, 4, 8};
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) {
            const int corner = (a == 0 && b == 3) || (a == 3 && b == 0);
            if (!fk_test_full() && a != b && !corner)
                continue;
            variant_case v = {factors[a], factors[b], 0, 0};
            check_variant(accum, v, sizes, sizeof sizes / sizeof sizes[0], 0.0, 1);
        }
}

static void test_ga_float_every_unroll(void **state)
{
    (void)state;
    all_unroll_variants("float");
}

/* double's unrolling: the four required variants (float has all 16: the unrolling changes which
 * work-item adds which term, not the accumulator's arithmetic; CI time, issue 12). */
static void test_ga_double_every_unroll(void **state)
{
    (void)state;
    static const int required[][2] = {{1, 1}, {1, 4}, {2, 4}, {4, 4}};
    for (size_t r = 0; r < sizeof required / sizeof required[0]; ++r) {
        variant_case v = {required[r][0], required[r][1], 0, 0};
        check_variant("double", v, sizes, sizeof sizes / sizeof sizes[0], 0.0, 1);
    }
}

/* Without local memory, with forced j-splits (the small-N path's reduction), with softening, and
 * without the potential (a different program). */
static void test_ga_tiling_splits_softening(void **state)
{
    (void)state;
    const variant_case cases[] = {
        {1, 1, -1, 1}, {4, 4, -1, 1}, {2, 8, -1, 0}, {1, 4, 1, 3}, {4, 4, 1, 7}, {8, 2, -1, 5},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        check_variant("float", cases[c], sizes, sizeof sizes / sizeof sizes[0], 0.0, 1);
        check_variant("double", cases[c], sizes, sizeof sizes / sizeof sizes[0], 0.05, 0);
    }
}

/* Every other accumulator (ti, nitadori, nitadori_large, narumi, ref, composite, fixed64): one
 * required variant with tiling as automatic, one without local tiling and with forced j-splits, one
 * with tiling and j-splits (the splits' reduction runs each accumulator's merge), with and without
 * softening and the potential. The other unroll variants are float's (all 16) and double's (the
 * required four): CI time, issue 12. */
static void test_ga_every_accumulator(void **state)
{
    (void)state;
    const variant_case cases[] = {{2, 4, 0, 0}, {4, 4, -1, 3}, {1, 4, 1, 7}};
    for (size_t a = 0; fk_accum_at(a); ++a) {
        const char *accum = fk_accum_at(a)->name;
        if (strcmp(accum, "float") == 0 || strcmp(accum, "double") == 0)
            continue;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c)
            check_variant(accum, cases[c], sizes, sizeof sizes / sizeof sizes[0],
                          c % 2 ? 0.05 : 0.0, c != 2);
    }
}

/* A larger N for the default variant and two explicit ones. */
static void test_ga_larger_n(void **state)
{
    (void)state;
    const size_t large[] = {16411};
    const variant_case cases[] = {{0, 0, 0, 0}, {4, 4, 1, 0}, {1, 4, 1, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        check_variant("float", cases[c], large, 1, 0.01, 1);
        check_variant("double", cases[c], large, 1, 0.0, 0);
    }
}

/* The self term with eps = 0 takes no branch and gives exactly 0: two bodies on an axis give
 * exactly +-m/d^2 with no contamination. */
static void test_ga_two_bodies_exact(void **state)
{
    (void)state;
    fk_eval_config config = {.kernel = "ga", .potential = 1};
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    double position[6] = {0, 0, 0, 2, 0, 0}, mass[2] = {1, 4};
    fk_particles particles = {.count = 2, .position = position, .mass = mass};
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    double force[6], pot[2];
    assert_int_equal(fk_eval_read_forces(eval, force), FK_OK);
    assert_int_equal(fk_eval_read_potentials(eval, pot), FK_OK);
    assert_true(fabs(force[0] - 1.0) < 1e-6); /* 4 / 2^2 */
    assert_true(fabs(force[3] + 0.25) < 1e-7);
    assert_true(force[1] == 0.0 && force[2] == 0.0 && force[4] == 0.0 && force[5] == 0.0);
    assert_true(fabs(pot[0] + 2.0) < 1e-6 && fabs(pot[1] + 0.5) < 1e-6);
    fk_eval_destroy(eval);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    fk_eval *eval = NULL;
    fk_eval_config config = {.kernel = "nosuch"};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "nosuch"));
    config = (fk_eval_config){.kernel = "ga", .accum = "nosuch"};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    config = (fk_eval_config){.kernel = "ga", .unroll_i = 3, .unroll_j = 4};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    config = (fk_eval_config){.kernel = "ga", .eps = NAN};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    config = (fk_eval_config){.kernel = "ga", .work_group_size = 1 << 30};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_UNSUPPORTED);
    assert_null(eval);

    config = (fk_eval_config){.kernel = "ga"};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_ERR_STATE);
    double force[6];
    assert_int_equal(fk_eval_read_forces(eval, force), FK_ERR_STATE);
    double position[6] = {0, 0, 0, 1, 1, 1}, mass[2] = {1, 1};
    fk_particles particles = {.count = 0, .position = position, .mass = mass};
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_ERR_INVALID_INPUT);
    particles.count = 2;
    position[4] = NAN;
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_ERR_INVALID_INPUT);
    position[4] = INFINITY;
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_ERR_INVALID_INPUT);
    position[4] = 1e300; /* finite in double, infinite in float */
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_ERR_INVALID_INPUT);
    position[4] = 1;
    mass[1] = NAN;
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_ERR_INVALID_INPUT);
    mass[1] = 1;
    /* Coincident bodies without softening are a user error naming both. */
    position[3] = position[4] = position[5] = 0;
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_ERR_INVALID_INPUT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "particles 0 and 1"));
    fk_eval_destroy(eval);

    /* With softening they are fine, and the force between them is 0. */
    config.eps = 0.1;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    assert_int_equal(fk_eval_read_forces(eval, force), FK_OK);
    for (int k = 0; k < 6; ++k)
        assert_true(force[k] == 0.0);
    assert_int_equal(fk_eval_read_potentials(eval, force), FK_ERR_STATE); /* not requested */
    fk_eval_destroy(eval);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ga_two_bodies_exact),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_ga_float_every_unroll),
        cmocka_unit_test(test_ga_double_every_unroll),
        cmocka_unit_test(test_ga_tiling_splits_softening),
        cmocka_unit_test(test_ga_every_accumulator),
        cmocka_unit_test(test_ga_larger_n),
    };
    return cmocka_run_group_tests(tests, fk_test_context_setup, fk_test_context_teardown);
}
