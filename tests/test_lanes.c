/*
 * The CPU lane loop (cl/pairwise_lanes.cl, fk_eval_config.lanes): results with lanes on (8, 16,
 * automatic) and off against the double-precision host reference, on fresh random inputs, at N
 * that are not multiples of the lane count or the work-group size, with and without softening,
 * with the potential, float, double, fixed64 and narumi, forced j-splits (the lane file's own
 * reduction); fixed64 and narumi lanes give the scalar template's packed words bit for bit; the
 * library poisons its result buffers with NaN before each run and the host arrays are NaN too, so
 * an unwritten particle fails. Then the host's choice: when lanes are taken, when not, and the
 * errors for what has no lane form.
 *
 * Error measure (as tests/test_kernels.c): per particle |a - a_ref| / S_i, S_i = sum_j m_j / s^2
 * (the sum of the magnitudes of the pair terms), which float rounding scales with.
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
#include "core/internal.h"
#include "test_support.h"

static int is_cpu(void)
{
    return fk_context_device(fk_test_context)->type == FK_DEVICE_CPU;
}

/* The device's native float vector width, as the device reports it (not through the library). */
static unsigned native_width(void)
{
    cl_uint width = 0;
    assert_int_equal(clGetDeviceInfo(fk_test_context->device, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT,
                                     sizeof width, &width, NULL),
                     CL_SUCCESS);
    return width;
}

/* Automatic lanes: the widest of 8 and 16 that the native width holds, on CPUs only. */
static int automatic_width(const char *accum)
{
    const unsigned width = native_width();
    if (!is_cpu() || width < 8 ||
        (strcmp(accum, "fixed64") == 0 && !fk_context_device(fk_test_context)->fp64))
        return 0;
    return width >= 16 ? 16 : 8;
}

/* Explicit lanes wider than a CPU's native width are refused (clang splits them and warns). */
static int width_allowed(int lanes)
{
    return !is_cpu() || (unsigned)lanes <= native_width();
}

/* What refuses explicit lanes on this device, by capability (the library's order): no lane form
 * of the accumulator (fixed64's needs fp64), then a native width narrower than the lanes (Mesa's
 * llvmpipe reports 1). NULL when they run. */
static const char *lanes_refusal(const char *accum, int lanes)
{
    if (!fk__registry_has_lanes(fk__kernel_desc("ga"), fk__accum_desc(accum),
                                fk_context_device(fk_test_context)->fp64))
        return "no lane form";
    return width_allowed(lanes) ? NULL : "NATIVE_VECTOR_WIDTH_FLOAT";
}

/* An explicit lanes request that must be refused (lanes_refusal says why). */
static void expect_refused(const fk_eval_config *config, const char *why)
{
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, config, &eval), FK_ERR_UNSUPPORTED);
    assert_null(eval);
    if (!strstr(fk_context_last_error(fk_test_context), why))
        fail_msg("lanes %d refused without '%s': %s", config->lanes, why,
                 fk_context_last_error(fk_test_context));
}

static int is_pocl(void)
{
    return strstr(fk_context_device(fk_test_context)->platform_name,
                  "Portable Computing Language") != NULL;
}

/* Bodies, their double reference and the per-particle term scales, for one N and eps. */
typedef struct lane_system {
    size_t n;
    double eps;
    double *position, *mass;
    double *force, *potential;       /* reference */
    double *force_scale, *pot_scale; /* S_i and sum_j m_j / s */
} lane_system;

/* Positions uniform in a unit cube, masses in [0.5, 1.5) / n, exactly representable in float so
 * the reference sees what the device sees. */
static lane_system make_system(size_t n, double eps, fk_test_rng *rng)
{
    lane_system s = {.n = n, .eps = eps};
    s.position = malloc(3 * n * sizeof *s.position);
    s.mass = malloc(n * sizeof *s.mass);
    s.force = malloc(3 * n * sizeof *s.force);
    s.potential = malloc(n * sizeof *s.potential);
    s.force_scale = malloc(n * sizeof *s.force_scale);
    s.pot_scale = malloc(n * sizeof *s.pot_scale);
    assert_true(s.position && s.mass && s.force && s.potential && s.force_scale && s.pot_scale);
    for (size_t i = 0; i < 3 * n; ++i)
        s.position[i] = (double)(float)(fk_test_rng_uniform(rng) - 0.5);
    for (size_t i = 0; i < n; ++i)
        s.mass[i] = (double)(float)((0.5 + fk_test_rng_uniform(rng)) / (double)n);
    fk_particles particles = {.count = n, .position = s.position, .mass = s.mass};
    fk_physics physics = {.eps = eps};
    assert_int_equal(fk_reference_forces("ga", &particles, &physics, s.force, s.potential), FK_OK);
    for (size_t i = 0; i < n; ++i) {
        double sa = 0, sp = 0;
        for (size_t j = 0; j < n; ++j) {
            if (j == i)
                continue;
            double s2 = eps * eps;
            for (int k = 0; k < 3; ++k) {
                double d = s.position[3 * j + (size_t)k] - s.position[3 * i + (size_t)k];
                s2 += d * d;
            }
            sa += s.mass[j] / s2;
            sp += s.mass[j] / sqrt(s2);
        }
        s.force_scale[i] = sa;
        s.pot_scale[i] = sp;
    }
    return s;
}

static void free_system(lane_system *s)
{
    free(s->position);
    free(s->mass);
    free(s->force);
    free(s->potential);
    free(s->force_scale);
    free(s->pot_scale);
}

/* Float sums of n terms lose up to ~n/2 ulp in the worst case, typically sqrt(n); double sums keep
 * only the per-term float rounding (rsqrt: 2 ulp allowed). As tests/test_kernels.c. */
static double tolerance(const char *accum, size_t n)
{
    const double ulp = 5.96e-8;
    if (strcmp(accum, "float") == 0)
        return ulp * (16.0 + 2.0 * sqrt((double)n) + 0.02 * (double)n);
    return ulp * 16.0;
}

typedef struct lane_case {
    const char *accum;
    int lanes; /* fk_eval_config.lanes */
    int unroll_j;
    int splits;
    int potential;
} lane_case;

static const char *lanes_text(int lanes)
{
    return lanes < 0 ? "off" : lanes == 0 ? "auto" : lanes == 8 ? "8" : "16";
}

/* One evaluation of s under c: the variant that ran must be the one asked for, and every value
 * within the tolerance of the reference. */
static void check_case(const lane_case *c, const lane_system *s)
{
    const char *refusal = c->lanes > 0 ? lanes_refusal(c->accum, c->lanes) : NULL;
    if (refusal) {
        fk_eval_config refused = {.kernel = "ga", .accum = c->accum, .lanes = c->lanes};
        fk_eval *none = NULL;
        assert_int_equal(fk_eval_create(fk_test_context, &refused, &none), FK_ERR_UNSUPPORTED);
        assert_null(none);
        if (!strstr(fk_context_last_error(fk_test_context), refusal))
            fail_msg("lanes %d %s refused without '%s': %s", c->lanes, c->accum, refusal,
                     fk_context_last_error(fk_test_context));
        return;
    }
    fk_eval_config config = {.kernel = "ga",
                             .accum = c->accum,
                             .unroll_i = c->unroll_j ? 1 : 0,
                             .unroll_j = c->unroll_j,
                             .j_splits = c->splits,
                             .potential = c->potential,
                             .eps = s->eps,
                             .lanes = c->lanes};
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(fk_test_context, &config, &eval);
    if (status != FK_OK)
        fail_msg("create lanes=%s %s: %s: %s", lanes_text(c->lanes), c->accum,
                 fk_status_string(status), fk_context_last_error(fk_test_context));
    fk_particles particles = {.count = s->n, .position = s->position, .mass = s->mass};
    status = fk_eval_set_particles(eval, &particles);
    if (status == FK_OK)
        status = fk_eval_compute(eval, NULL);
    if (status != FK_OK)
        fail_msg("lanes=%s %s N=%zu: %s: %s", lanes_text(c->lanes), c->accum, s->n,
                 fk_status_string(status), fk_context_last_error(fk_test_context));
    fk_variant used;
    assert_int_equal(fk_eval_get_variant(eval, &used), FK_OK);
    const int expected = c->lanes > 0 ? c->lanes : c->lanes == 0 ? automatic_width(c->accum) : 0;
    if (used.lanes != expected)
        fail_msg("lanes=%s %s: ran with %d lanes, expected %d", lanes_text(c->lanes), c->accum,
                 used.lanes, expected);
    if (c->splits > 1 && s->n >= 64 && used.j_splits < 2) /* the reduction must have run */
        fail_msg("asked for %d j-splits, ran %d", c->splits, used.j_splits);

    const size_t n = s->n;
    double *force = malloc(3 * n * sizeof *force), *pot = malloc(n * sizeof *pot);
    assert_true(force && pot);
    for (size_t i = 0; i < 3 * n; ++i)
        force[i] = NAN;
    for (size_t i = 0; i < n; ++i)
        pot[i] = NAN;
    assert_int_equal(fk_eval_read_forces(eval, force), FK_OK);
    if (c->potential)
        assert_int_equal(fk_eval_read_potentials(eval, pot), FK_OK);
    fk_eval_destroy(eval);

    const double tol = tolerance(c->accum, n);
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
        for (int k = 0; k < 3; ++k) {
            const double value = force[3 * i + (size_t)k];
            if (!isfinite(value))
                fail_msg("lanes=%s %s N=%zu eps=%g: particle %zu component %d is %g (unwritten?)",
                         lanes_text(c->lanes), c->accum, n, s->eps, i, k, value);
            if (n == 1 && value != 0.0)
                fail_msg("N=1: the self term must contribute exactly 0, got %g", value);
            const double err = fabs(value - s->force[3 * i + (size_t)k]);
            const double scaled = n > 1 ? err / s->force_scale[i] : err;
            worst = scaled > worst ? scaled : worst;
        }
        if (c->potential) {
            if (!isfinite(pot[i]))
                fail_msg("lanes=%s %s N=%zu: particle %zu potential is %g", lanes_text(c->lanes),
                         c->accum, n, i, pot[i]);
            if (n == 1 && pot[i] != 0.0)
                fail_msg("N=1: the self potential must be exactly 0, got %g", pot[i]);
            const double err = fabs(pot[i] - s->potential[i]);
            const double scaled = n > 1 ? err / s->pot_scale[i] : err;
            worst = scaled > worst ? scaled : worst;
        }
    }
    if (worst > tol)
        fail_msg("lanes=%s %s 1x%d splits=%d N=%zu eps=%g: worst scaled error %.3g > %.3g",
                 lanes_text(c->lanes), c->accum, used.unroll_j, used.j_splits, n, s->eps, worst,
                 tol);
    free(force);
    free(pot);
}

static const size_t sizes[] = {1, 2, 7, 31, 67, 1000, 4099};

/* Lanes off, 8, 16 and automatic, float, double, fixed64 and narumi, eps = 0 and eps > 0
 * (FK_SOFTENED: no floor), all with the potential; one reference per system serves every case. */
static void test_lanes_against_reference(void **state)
{
    (void)state;
    const int fp64 = fk_context_device(fk_test_context)->fp64;
    static const int lane_settings[] = {-1, 8, 16, 0};
    static const char *accums[] = {"float", "double", "fixed64", "narumi"};
    static const double eps_values[] = {0.0, 0.05};
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    for (size_t e = 0; e < 2; ++e)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
            lane_system sys = make_system(sizes[s], eps_values[e], &rng);
            for (size_t a = 0; a < sizeof accums / sizeof accums[0]; ++a) {
                if (strcmp(accums[a], "double") == 0 && !fp64)
                    continue;
                for (size_t l = 0; l < 4; ++l) {
                    const lane_case c = {accums[a], lane_settings[l], 0, 0, 1};
                    check_case(&c, &sys);
                }
            }
            free_system(&sys);
        }
}

/* Forced j-splits (the lane file's fk_reduce_splits merges them), an unrolled j-loop, and no
 * potential (another program). */
static void test_lanes_splits_unroll_no_potential(void **state)
{
    (void)state;
    const int fp64 = fk_context_device(fk_test_context)->fp64;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0x5eedu);
    const lane_case cases[] = {
        {"float", 16, 0, 5, 1},  {"double", 8, 0, 3, 1}, {"float", 16, 4, 0, 1},
        {"double", 16, 2, 7, 1}, {"float", 16, 0, 0, 0}, {"float", 8, 8, 2, 0},
        {"fixed64", 8, 2, 3, 1}, {"narumi", 8, 4, 5, 1}, {"fixed64", 16, 0, 2, 0},
        {"narumi", 16, 1, 3, 0},
    };
    static const size_t split_sizes[] = {7, 1000, 4099};
    for (size_t s = 0; s < sizeof split_sizes / sizeof split_sizes[0]; ++s) {
        lane_system sys = make_system(split_sizes[s], 0.01, &rng); /* eps = 0: the test above */
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c)
            if (strcmp(cases[c].accum, "double") != 0 || fp64)
                check_case(&cases[c], &sys);
        free_system(&sys);
    }
}

/* Two bodies on an axis: exactly +-m / d^2 and -m / d, the self term exactly 0 (eps = 0, no
 * branch: 0 * m * rsqrt(floor)^3), in every lane width. */
static void test_lanes_two_bodies_exact(void **state)
{
    (void)state;
    static const int widths[] = {8, 16};
    for (size_t w = 0; w < 2; ++w) {
        if (!width_allowed(widths[w]))
            continue; /* check_case covers the refusal */
        fk_eval_config config = {.kernel = "ga", .potential = 1, .lanes = widths[w]};
        fk_eval *eval = NULL;
        assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
        double position[6] = {0, 0, 0, 2, 0, 0}, mass[2] = {1, 4};
        fk_particles particles = {.count = 2, .position = position, .mass = mass};
        assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
        assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
        double force[6], pot[2];
        assert_int_equal(fk_eval_read_forces(eval, force), FK_OK);
        assert_int_equal(fk_eval_read_potentials(eval, pot), FK_OK);
        FK_ASSERT_NEAR(force[0], 1.0, 1e-6);
        FK_ASSERT_NEAR(force[3], -0.25, 1e-7);
        assert_true(force[1] == 0.0 && force[2] == 0.0 && force[4] == 0.0 && force[5] == 0.0);
        FK_ASSERT_NEAR(pot[0], -2.0, 1e-6);
        FK_ASSERT_NEAR(pot[1], -0.5, 1e-6);
        fk_eval_destroy(eval);
    }
}

/* The registry's lane flags (what fk_eval_create reads) agree with the headers' lane sections: ga
 * with float, double, fixed64 and narumi today. */
static void test_lanes_declared_by_headers(void **state)
{
    (void)state;
    for (size_t k = 0; fk_kernel_at(k); ++k)
        for (size_t a = 0; fk_accum_at(a); ++a) {
            const char *kernel = fk_kernel_at(k)->name, *accum = fk_accum_at(a)->name;
            const int expected = strcmp(kernel, "ga") == 0 &&
                                 (strcmp(accum, "float") == 0 || strcmp(accum, "double") == 0 ||
                                  strcmp(accum, "fixed64") == 0 || strcmp(accum, "narumi") == 0);
            if (fk__program_has_lanes(fk_test_context, kernel, accum) != expected)
                fail_msg("%s with %s: lane form %s in the headers, expected %s", kernel, accum,
                         expected ? "not found" : "found", expected ? "one" : "none");
            if (fk__registry_has_lanes(fk__kernel_desc(kernel), fk__accum_desc(accum), 1) !=
                expected)
                fail_msg(
                    "%s with %s: src/core/laws/registry.c's lane flags disagree with the headers",
                    kernel, accum);
            /* The neighbour lists' lane form (partners in lanes): lj and ljc_constant with the
             * same accumulators (FK_LAW_PAIR_LANES, the laws' .list_lanes). */
            const int list_expected =
                (strcmp(kernel, "lj") == 0 || strcmp(kernel, "ljc_constant") == 0) &&
                (strcmp(accum, "float") == 0 || strcmp(accum, "double") == 0 ||
                 strcmp(accum, "fixed64") == 0 || strcmp(accum, "narumi") == 0);
            if (fk__program_has_list_lanes(fk_test_context, kernel, accum) != list_expected)
                fail_msg("%s with %s: list lane form %s in the headers, expected %s", kernel, accum,
                         list_expected ? "not found" : "found", list_expected ? "one" : "none");
            if (fk__registry_has_list_lanes(fk__kernel_desc(kernel), fk__accum_desc(accum), 1) !=
                list_expected)
                fail_msg("%s with %s: the laws' .list_lanes disagree with the headers", kernel,
                         accum);
        }
    assert_int_equal(fk__program_has_lanes(fk_test_context, "nosuch", "float"), 0);
    /* native_rsqrt as a Newton-step estimate (src/core/probes/lanes_rsqrt.c): POCL's is the exact
     * square root and division (no estimate: the lane loop keeps rsqrt), Intel's CPU runtime's is
     * vrsqrtps. */
    const int estimate = fk__native_rsqrt_estimate_ok(fk_test_context);
    if (is_pocl())
        assert_int_equal(estimate, 0);
    else if (strstr(fk_context_device(fk_test_context)->platform_name, "Intel") && is_cpu())
        assert_int_equal(estimate, 1);
    /* fixed64's lane form converts through double: not without fp64. */
    assert_int_equal(fk__registry_has_lanes(fk__kernel_desc("ga"), fk__accum_desc("fixed64"), 0),
                     0);
    assert_int_equal(fk__registry_has_lanes(fk__kernel_desc("ga"), fk__accum_desc("narumi"), 0), 1);
}

/* One evaluation's packed result words (the accumulator's representation). */
static uint32_t *packed_words(const fk_eval_config *config, const lane_system *s, int want_lanes)
{
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(fk_test_context, config, &eval);
    if (status != FK_OK)
        fail_msg("create %s lanes %d: %s", config->accum, config->lanes,
                 fk_context_last_error(fk_test_context));
    fk_variant used;
    assert_int_equal(fk_eval_get_variant(eval, &used), FK_OK);
    if (used.lanes != want_lanes)
        fail_msg("%s: ran with %d lanes, expected %d", config->accum, used.lanes, want_lanes);
    fk_particles particles = {.count = s->n, .position = s->position, .mass = s->mass};
    status = fk_eval_set_particles(eval, &particles);
    if (status == FK_OK)
        status = fk_eval_compute(eval, NULL);
    if (status != FK_OK)
        fail_msg("%s N=%zu: %s", config->accum, s->n, fk_context_last_error(fk_test_context));
    const size_t words = s->n * 4 * 2; /* 3 force components and the potential */
    uint32_t *packed = malloc(words * sizeof *packed);
    assert_non_null(packed);
    assert_int_equal(fk__eval_read_packed(eval, packed), FK_OK);
    fk_eval_destroy(eval);
    return packed;
}

/* fixed64 and narumi sums are exact (integers, in any order), so the lane forms must give the
 * scalar template's packed words bit for bit, for every width, j-unrolling and j-split, and N not
 * a multiple of the width. The pair terms must be the same bits too: with --reproducible
 * (correctly rounded sqrt and divide) on every device; with rsqrt only where the compiler rounds
 * it alike in vector and scalar code, which POCL does (sqrt + divide) and Intel's CPU runtime
 * does not (docs/precision.md, issue #12): there a difference is reported, not failed. */
static void test_lanes_fixed_point_bit_identical(void **state)
{
    (void)state;
    if (!is_cpu() && automatic_width("narumi") == 0 && !width_allowed(8))
        skip();
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0xb17u);
    static const char *accums[] = {"fixed64", "narumi"};
    static const size_t identity_sizes[] = {1, 7, 31, 67, 1000};
    static const struct {
        int lanes, unroll_j, splits;
    } forms[] = {{8, 1, 0}, {8, 4, 3}, {16, 1, 0}, {16, 2, 5}};
    for (size_t s = 0; s < sizeof identity_sizes / sizeof identity_sizes[0]; ++s) {
        lane_system sys = make_system(identity_sizes[s], s % 2 ? 0.02 : 0.0, &rng);
        const size_t words = sys.n * 4 * 2;
        for (size_t a = 0; a < 2; ++a) {
            if (strcmp(accums[a], "fixed64") == 0 && !fk_context_device(fk_test_context)->fp64)
                continue;
            for (int reproducible = 0; reproducible <= (a == 0); ++reproducible) {
                fk_eval_config scalar = {.kernel = "ga",
                                         .accum = accums[a],
                                         .potential = 1,
                                         .eps = sys.eps,
                                         .reproducible = reproducible,
                                         .lanes = -1};
                uint32_t *expected = packed_words(&scalar, &sys, 0);
                for (size_t f = 0; f < sizeof forms / sizeof forms[0]; ++f) {
                    if (!width_allowed(forms[f].lanes))
                        continue;
                    fk_eval_config lanes = scalar;
                    lanes.lanes = forms[f].lanes;
                    lanes.unroll_i = 1;
                    lanes.unroll_j = forms[f].unroll_j;
                    lanes.j_splits = forms[f].splits;
                    uint32_t *got = packed_words(&lanes, &sys, forms[f].lanes);
                    size_t differ = 0, first = words;
                    for (size_t w = 0; w < words; ++w)
                        if (got[w] != expected[w]) {
                            differ++;
                            first = first < words ? first : w;
                        }
                    if (differ && (reproducible || is_pocl()))
                        fail_msg("%s%s lanes %d 1x%d splits %d N=%zu: %zu of %zu packed words "
                                 "differ from the scalar template's (first: word %zu)",
                                 accums[a], reproducible ? " reproducible" : "", forms[f].lanes,
                                 forms[f].unroll_j, forms[f].splits, sys.n, differ, words, first);
                    if (differ)
                        print_message("note: %s lanes %d N=%zu: %zu of %zu words differ from the "
                                      "scalar template (rsqrt rounds differently in vector code "
                                      "on %s; not a promise there)\n",
                                      accums[a], forms[f].lanes, sys.n, differ, words,
                                      fk_context_device(fk_test_context)->platform_name);
                    free(got);
                }
                free(expected);
            }
        }
        free_system(&sys);
    }
}

static fk_variant variant_of(const fk_eval_config *config)
{
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(fk_test_context, config, &eval);
    if (status != FK_OK)
        fail_msg("create: %s: %s", fk_status_string(status),
                 fk_context_last_error(fk_test_context));
    fk_variant variant;
    assert_int_equal(fk_eval_get_variant(eval, &variant), FK_OK);
    fk_eval_destroy(eval);
    return variant;
}

/* When lanes are taken: automatically on CPUs only, and not when something more specific was
 * asked; the errors for what cannot have them. */
static void test_lanes_choice(void **state)
{
    (void)state;
    fk_eval_config config = {.kernel = "ga", .expected_count = 8192};
    fk_variant v = variant_of(&config);
    if (automatic_width("float")) {
        assert_int_equal(v.lanes, automatic_width("float"));
        assert_int_equal(v.unroll_i, 1);
        assert_int_equal(v.unroll_j, 1);
        assert_int_equal(v.work_group_size, 8);
        assert_int_equal(v.local_tiling, 0);
        assert_int_equal(v.source, FK_VARIANT_DEFAULT);
    } else {
        assert_int_equal(v.lanes, 0); /* GPUs (and CPUs narrower than 8) keep the template */
    }
    config.lanes = -1; /* off: the scalar template's built-in default or tuned entry */
    v = variant_of(&config);
    assert_int_equal(v.lanes, 0);
    config.lanes = 0;
    config.unroll_i = 4;
    config.unroll_j = 1; /* explicit unrolling is the template's */
    assert_int_equal(variant_of(&config).lanes, 0);
    config.unroll_i = config.unroll_j = 0;
    config.local_tiling = 1; /* so is explicit tiling */
    assert_int_equal(variant_of(&config).lanes, 0);
    config.local_tiling = 0;
    if (automatic_width("float")) { /* on a GPU the template's tiles would not hold 4 */
        config.work_group_size = 4; /* a work-group size applies to lanes too */
        v = variant_of(&config);
        assert_int_equal(v.work_group_size, 4);
        assert_int_equal(v.lanes, automatic_width("float"));
        config.work_group_size = 0;
    }
    config.accum = "ti"; /* no lane form: the template, automatically */
    assert_int_equal(variant_of(&config).lanes, 0);
    config.accum = NULL;
    config.algorithm = FK_ALGORITHM_SYMMETRIC; /* another pair loop */
    assert_int_equal(variant_of(&config).lanes, 0);

    fk_eval *eval = NULL;
    config.lanes = 16;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_UNSUPPORTED);
    assert_null(eval);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "symmetric"));
    config.algorithm = FK_ALGORITHM_ALL_PAIRS;
    config.accum = "ti";
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_UNSUPPORTED);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "no lane form"));
    config = (fk_eval_config){.kernel = "lj", .lanes = 8};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_UNSUPPORTED);
    config = (fk_eval_config){.kernel = "ga", .lanes = 16, .unroll_i = 4, .unroll_j = 1};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(
        strstr(fk_context_last_error(fk_test_context), "lanes replace the i-unrolling"));
    config = (fk_eval_config){.kernel = "ga", .lanes = 16, .local_tiling = 1};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "no local tiling"));
    config.local_tiling = -1; /* off is what lanes do anyway */
    /* Wider than the CPU's registers: refused, never built with ABI warnings (on Mesa's llvmpipe,
     * whose native float width is 1, even 8). */
    static const int explicit_widths[] = {8, 16};
    for (size_t w = 0; w < 2; ++w) {
        config.lanes = explicit_widths[w];
        if (width_allowed(config.lanes))
            assert_int_equal(variant_of(&config).lanes, config.lanes);
        else
            expect_refused(&config, "NATIVE_VECTOR_WIDTH_FLOAT");
    }
    /* A cold build of the default variant leaves nothing in the warnings: the compiler had
     * nothing to say (it would be there, not on stderr). */
    if (automatic_width("float")) {
        const size_t before = strlen(fk_context_warnings(fk_test_context));
        config = (fk_eval_config){.kernel = "ga", .potential = 1, .refresh_cache = 1};
        (void)variant_of(&config);
        if (strlen(fk_context_warnings(fk_test_context)) != before)
            fail_msg("the default lane build warned: %s",
                     fk_context_warnings(fk_test_context) + before);
    }
    static const int bad[] = {4, 3, -2, 32, 1};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; ++b) {
        config = (fk_eval_config){.kernel = "ga", .lanes = bad[b]};
        assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(fk_context_last_error(fk_test_context), "expected -1 (off)"));
        assert_null(eval);
    }
    /* Explicit lanes with the j-loop unrolled: 1xJ, said to be explicit. */
    config = (fk_eval_config){.kernel = "ga", .lanes = 8, .unroll_i = 1, .unroll_j = 4};
    if (!width_allowed(8)) {
        expect_refused(&config, "NATIVE_VECTOR_WIDTH_FLOAT");
        return;
    }
    v = variant_of(&config);
    assert_int_equal(v.lanes, 8);
    assert_int_equal(v.unroll_j, 4);
    assert_int_equal(v.source, FK_VARIANT_EXPLICIT);
}

/* An accumulator without a lane form still gives right results when lanes are automatic (the host
 * falls back to the template). */
static void test_lanes_fallback_results(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0xfa11u);
    lane_system sys = make_system(31, 0.0, &rng);
    fk_eval_config config = {.kernel = "ga", .accum = "ti", .potential = 1};
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    fk_particles particles = {.count = sys.n, .position = sys.position, .mass = sys.mass};
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    double force[3 * 31];
    for (size_t i = 0; i < 3 * 31; ++i)
        force[i] = NAN;
    assert_int_equal(fk_eval_read_forces(eval, force), FK_OK);
    for (size_t i = 0; i < 31; ++i)
        for (size_t k = 0; k < 3; ++k)
            if (!(fabs(force[3 * i + k] - sys.force[3 * i + k]) <=
                  tolerance("ti", 31) * sys.force_scale[i]))
                fail_msg("ti particle %zu component %zu: %g, reference %g", i, k, force[3 * i + k],
                         sys.force[3 * i + k]);
    fk_eval_destroy(eval);
    free_system(&sys);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lanes_declared_by_headers),
        cmocka_unit_test(test_lanes_choice),
        cmocka_unit_test(test_lanes_two_bodies_exact),
        cmocka_unit_test(test_lanes_against_reference),
        cmocka_unit_test(test_lanes_splits_unroll_no_potential),
        cmocka_unit_test(test_lanes_fixed_point_bit_identical),
        cmocka_unit_test(test_lanes_fallback_results),
    };
    return cmocka_run_group_tests(tests, fk_test_context_setup, fk_test_context_teardown);
}
