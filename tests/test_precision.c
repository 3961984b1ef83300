/*
 * The precision properties of the accumulators, on the device:
 *
 * - Force offset (Narumi eq. 11) exactly 0 for fixed64 and narumi when the pair terms are exactly
 *   antisymmetric. For gravity that needs equal masses: the term of j on i is m_j g(r_ij) r_ij and
 *   that of i on j is m_i g(r_ij) (-r_ij), computed with the same roundings (r_ji = -r_ij exactly,
 *   s^2 and the rsqrt are the same), so with m_i = m_j they are exact negatives; with a
 * power-of-two mass F_i = m a_i is exact too. Both accumulators map a term y to a fixed-point q(y)
 * with q(-y) = -q(y) and add exactly, so sum_i F_i is 0 in their integers. The test checks the raw
 *   integers, and eq. 11 of the decoded forces with an exact summation: 0.0 for narumi (47-bit
 *   values are exact in double); fixed64's decode rounds sums above 2^53 units to double, so there
 *   eq. 11 is only within 1e-15 of 0. With unequal masses the offsets are printed, not asserted.
 * - fixed64 (and narumi) results bit-identical for every j-split of one program in any mode (each
 *   pair term comes from the same code, and integer sums do not depend on the order), and for
 *   every unroll variant, work-group size and tiling in reproducible mode (different programs:
 *   only correctly rounded pair arithmetic makes a term the same bits in each; outside it OpenCL
 *   lets a compiler differ, and Intel's does between vector and scalar code).
 * - Force error (eq. 10) against the device's ref accumulator at most 1e-6 for ti, composite,
 *   narumi and fixed64 on a Plummer sphere and a random cluster; float's larger. Printed.
 * - An overflow of fixed64 is reported as FK_ERR_OVERFLOW, never a wrapped number.
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

#include "core/accum/accum.h"
#include "support/generate.h"
#include "core/internal.h"
#include "test_support.h"

typedef struct test_system {
    const char *name;
    size_t n;
    double eps;
    double *position, *mass;
} test_system;

static void system_free(test_system *s)
{
    free(s->position);
    free(s->mass);
}

/* Plummer sphere (equal masses 1/N: a power of two when N is). */
static test_system plummer(size_t n, double eps)
{
    fkt_particle_set set = {0};
    assert_int_equal(fkt_generate_plummer(n, 7, FKT_LAYOUT_XYZM, &set), FK_OK);
    test_system s = {"plummer", n, eps, set.position, set.mass};
    for (size_t i = 0; i < 3 * n; ++i)
        s.position[i] = (double)(float)s.position[i];
    set.position = set.mass = NULL;
    fkt_particle_set_free(&set);
    return s;
}

/* A random cluster: Gaussian positions (a dense core and a sparse halo), masses uniform in
 * [0.5, 1.5) / N, or all equal to equal_mass when that is > 0. */
static test_system cluster(size_t n, double eps, double equal_mass, uint64_t seed)
{
    fk_test_rng rng;
    fk_test_rng_init(&rng, seed);
    test_system s = {"cluster", n, eps, malloc(3 * n * sizeof(double)), malloc(n * sizeof(double))};
    assert_non_null(s.position);
    assert_non_null(s.mass);
    for (size_t i = 0; i < 3 * n; ++i) {
        const double u = fk_test_rng_uniform(&rng) + 1e-12, v = fk_test_rng_uniform(&rng);
        s.position[i] = (double)(float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
    }
    for (size_t i = 0; i < n; ++i)
        s.mass[i] = equal_mass > 0 ? equal_mass
                                   : (double)(float)((0.5 + fk_test_rng_uniform(&rng)) / (double)n);
    return s;
}

typedef struct variant {
    int unroll_i, unroll_j, work_group_size, tiling, splits, reproducible;
} variant;

/* One evaluation: forces (m a, 3 per particle), and the packed words (2 per component) when asked.
 * Returns the status of create, so callers can skip what the device cannot run. */
static fk_status evaluate(const char *accum, const test_system *s, variant v, int potential,
                          double *forces, uint32_t *packed, double *scale)
{
    fk_eval_config config = {.kernel = "ga",
                             .accum = accum,
                             .eps = s->eps,
                             .potential = potential,
                             .unroll_i = v.unroll_i,
                             .unroll_j = v.unroll_j,
                             .work_group_size = v.work_group_size,
                             .local_tiling = v.tiling,
                             .j_splits = v.splits,
                             .reproducible = v.reproducible};
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(fk_test_context, &config, &eval);
    if (status != FK_OK)
        return status;
    fk_particles particles = {.count = s->n, .position = s->position, .mass = s->mass};
    status = fk_eval_set_particles(eval, &particles);
    if (status == FK_OK)
        status = fk_eval_compute(eval, NULL);
    if (status == FK_OK && forces)
        status = fk_eval_read_forces(eval, forces);
    if (status == FK_OK && packed)
        status = fk__eval_read_packed(eval, packed);
    if (scale)
        *scale = fk__eval_accum_scale(eval);
    if (status != FK_OK)
        fail_msg("%s on %s: %s: %s", accum ? accum : "(default)", s->name, fk_status_string(status),
                 fk_context_last_error(fk_test_context));
    for (size_t i = 0; forces && i < s->n; ++i)
        for (int k = 0; k < 3; ++k)
            forces[3 * i + k] *= s->mass[i];
    fk_eval_destroy(eval);
    return FK_OK;
}

/* Exact sum of doubles (Shewchuk's expansion, as Python's math.fsum): the metric itself must not
 * round, or it could not see an exact 0. */
static double exact_sum(const double *values, size_t count, size_t stride)
{
    double partials[128];
    size_t used = 0;
    for (size_t i = 0; i < count; ++i) {
        double x = values[i * stride];
        size_t kept = 0;
        for (size_t p = 0; p < used; ++p) {
            double y = partials[p];
            if (fabs(x) < fabs(y)) {
                double t = x;
                x = y;
                y = t;
            }
            const double high = x + y, low = y - (high - x);
            if (low != 0.0)
                partials[kept++] = low;
            x = high;
        }
        assert_true(kept < 128);
        partials[kept++] = x;
        used = kept;
    }
    double sum = 0.0;
    for (size_t p = used; p-- > 0;)
        sum += partials[p];
    return sum;
}

/* Narumi eq. 11 with an exact numerator. */
static double offset(const double *forces, size_t n)
{
    const double total[3] = {exact_sum(forces, n, 3), exact_sum(forces + 1, n, 3),
                             exact_sum(forces + 2, n, 3)};
    double magnitudes = 0;
    for (size_t i = 0; i < n; ++i)
        magnitudes += sqrt(forces[3 * i] * forces[3 * i] + forces[3 * i + 1] * forces[3 * i + 1] +
                           forces[3 * i + 2] * forces[3 * i + 2]);
    return sqrt(total[0] * total[0] + total[1] * total[1] + total[2] * total[2]) / magnitudes;
}

/* Narumi eq. 10. */
static double error(const double *forces, const double *reference, size_t n)
{
    double difference = 0, magnitude = 0;
    for (size_t i = 0; i < n; ++i) {
        double d2 = 0, r2 = 0;
        for (int k = 0; k < 3; ++k) {
            const double d = forces[3 * i + k] - reference[3 * i + k];
            d2 += d * d;
            r2 += reference[3 * i + k] * reference[3 * i + k];
        }
        difference += sqrt(d2);
        magnitude += sqrt(r2);
    }
    return difference / magnitude;
}

/* The raw integer totals over particles of each force component: fixed64 as int64 (modulo 2^64:
 * the total of exact negatives is 0 there too), narumi in units of 2^(e-46). */
static void integer_totals(const char *accum, const uint32_t *packed, size_t n, double scale,
                           int64_t total[3])
{
    uint64_t sums[3] = {0, 0, 0};
    for (size_t i = 0; i < n; ++i)
        for (int k = 0; k < 3; ++k) {
            const uint32_t lo = packed[2 * (3 * i + (size_t)k)],
                           hi = packed[2 * (3 * i + (size_t)k) + 1];
            if (strcmp(accum, "fixed64") == 0) {
                sums[k] += ((uint64_t)hi << 32) | lo;
            } else {
                float hs;
                memcpy(&hs, &lo, sizeof hs);
                int exponent = 0;
                frexp(scale, &exponent); /* scale = LARGE = 0.75 * 2^(e+2) */
                const double high = ldexp((double)hs - scale, 48 - exponent);
                sums[k] += (uint64_t)(int64_t)high + (uint64_t)(int64_t)(int32_t)hi;
            }
        }
    for (int k = 0; k < 3; ++k)
        memcpy(&total[k], &sums[k], sizeof total[k]);
}

static const variant default_variant = {0, 0, 0, 0, 0, 0};

static void test_offset_exactly_zero(void **state)
{
    (void)state;
    test_system systems[] = {plummer(2048, 0.01), cluster(1000, 0.0, 1.0 / 1024, 11),
                             cluster(1500, 0.001, 1.0 / 1024, 12)};
    const char *accums[] = {"fixed64", "narumi", "float"};
    for (size_t s = 0; s < sizeof systems / sizeof systems[0]; ++s) {
        const size_t n = systems[s].n;
        double *forces = malloc(3 * n * sizeof *forces);
        uint32_t *packed = malloc(6 * n * sizeof *packed);
        for (size_t a = 0; a < sizeof accums / sizeof accums[0]; ++a) {
            double scale = 0;
            evaluate(accums[a], &systems[s], default_variant, 0, forces, packed, &scale);
            const double measured = offset(forces, n);
            fprintf(stderr, "  equal masses, %s N=%zu eps=%g: %-8s offset %.3g\n", systems[s].name,
                    n, systems[s].eps, accums[a], measured);
            if (strcmp(accums[a], "float") == 0)
                continue;
            int64_t total[3];
            integer_totals(accums[a], packed, n, scale, total);
            for (int k = 0; k < 3; ++k)
                if (total[k] != 0)
                    fail_msg("%s: component %d of sum_i F_i is %lld units, not 0", accums[a], k,
                             (long long)total[k]);
            if (strcmp(accums[a], "narumi") == 0)
                assert_true(measured == 0.0);
            else
                assert_true(measured <= 1e-15);
        }
        free(forces);
        free(packed);
        system_free(&systems[s]);
    }
    /* Unequal masses: m_i (m_j g) and m_j (m_i g) round differently; for the record. */
    test_system unequal = cluster(1000, 0.001, 0.0, 13);
    double *forces = malloc(3 * unequal.n * sizeof *forces);
    for (size_t a = 0; a < sizeof accums / sizeof accums[0]; ++a) {
        evaluate(accums[a], &unequal, default_variant, 0, forces, NULL, NULL);
        fprintf(stderr, "  unequal masses, cluster N=%zu: %-8s offset %.3g\n", unequal.n, accums[a],
                offset(forces, unequal.n));
    }
    free(forces);
    system_free(&unequal);
}

/* 1 when this device runs reproducible mode (fk_eval_reproducible): every variant then computes
 * the same pair terms. Else it says why (no correctly rounded divide and sqrt, no fp64 to build
 * them from) and the bit-identity tests are skipped on this capability, loudly. */
static int device_reproducible(void)
{
    fk_eval_config config = {.kernel = "ga", .accum = "fixed64", .reproducible = 1};
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    const char *reason = NULL;
    const int capable = fk_eval_reproducible(eval, &reason);
    fk_eval_destroy(eval);
    if (capable != 1)
        fprintf(stderr,
                "  SKIPPED bit identity across variants: this device cannot run "
                "reproducible mode: %s\n",
                reason ? reason : "(no reason)");
    return capable == 1;
}

static void check_bit_identical(const char *accum, const variant *variants, size_t count)
{
    int across_programs = 0; /* different programs agree only in reproducible mode */
    for (size_t v = 0; v < count; ++v)
        across_programs |= variants[v].reproducible;
    if (across_programs && !device_reproducible())
        return;
    test_system s = cluster(1531, 0.0, 0.0, 21);
    const size_t words = 2 * 4 * s.n; /* 3 force components + the potential */
    uint32_t *first = malloc(words * sizeof *first), *packed = malloc(words * sizeof *packed);
    for (size_t v = 0; v < count; ++v) {
        fk_status status = evaluate(accum, &s, variants[v], 1, NULL, v ? packed : first, NULL);
        if (status == FK_ERR_UNSUPPORTED)
            continue;
        assert_int_equal(status, FK_OK);
        if (v && memcmp(first, packed, words * sizeof *packed) != 0) {
            size_t w = 0;
            while (first[w] == packed[w])
                ++w;
            fail_msg("%s %dx%d wg %d tiling %d splits %d reproducible %d: word %zu differs from "
                     "the first variant's",
                     accum ? accum : "(default)", variants[v].unroll_i, variants[v].unroll_j,
                     variants[v].work_group_size, variants[v].tiling, variants[v].splits,
                     variants[v].reproducible, w);
        }
    }
    free(first);
    free(packed);
    system_free(&s);
}

/* Different programs: reproducible mode. */
static const variant variants[] = {
    {1, 1, 64, 1, 1, 1},
    {1, 4, 64, 1, 1, 1},
    {2, 4, 64, 1, 1, 1},
    {4, 4, 64, 1, 1, 1},
    {8, 8, 64, 1, 1, 1},
    {4, 1, 32, 1, 1, 1},
    {2, 2, 128, 1, 0, 1},
    {1, 1, 64, -1, 1, 1},
    {4, 4, 64, -1, 3, 1},
    {1, 4, 16, 1, 7, 1},
    {2, 8, 64, 1, 24, 1},
    /* tiles of 256 (narumi adds them in two blocks of 128, cl/pairwise.cl) and of 192 (one
     * block of its own counted additions), whole and split */
    {4, 8, 256, 1, 1, 1},
    {2, 4, 256, 1, 3, 1},
    {2, 4, 192, 1, 3, 1},
};
/* One program, its j-splits: any mode. */
static const variant splits[] = {
    {2, 4, 32, 1, 1, 0},
    {2, 4, 32, 1, 3, 0},
    {2, 4, 32, 1, 7, 0},
    {2, 4, 32, 1, 24, 0},
};

static void test_fixed64_bit_identical(void **state)
{
    (void)state;
    check_bit_identical("fixed64", variants, sizeof variants / sizeof variants[0]);
    check_bit_identical("fixed64", splits, sizeof splits / sizeof splits[0]);
}

/* Narumi's sums are exact too, so it shares the property. */
static void test_narumi_bit_identical(void **state)
{
    (void)state;
    check_bit_identical("narumi", variants, sizeof variants / sizeof variants[0]);
    check_bit_identical("narumi", splits, sizeof splits / sizeof splits[0]);
}

static void test_reproducible_mode(void **state)
{
    (void)state;
    const variant reproducible[] = {
        {1, 1, 64, 1, 1, 1}, {4, 4, 64, 1, 1, 1}, {2, 8, 32, -1, 5, 1}, {0, 0, 0, 0, 0, 1}};
    check_bit_identical(NULL, reproducible, sizeof reproducible / sizeof reproducible[0]);

    fk_eval *eval = NULL;
    fk_eval_config config = {.kernel = "ga", .accum = "float", .reproducible = 1};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "fixed64 or narumi"));
    config.accum = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    const char *reason = NULL;
    const int capable = fk_eval_reproducible(eval, &reason);
    fprintf(stderr, "  reproducible on this device: %d%s%s\n", capable, reason ? ": " : "",
            reason ? reason : "");
    assert_true(capable == 1 || (capable == 0 && reason));
    fk_eval_destroy(eval);
    config.reproducible = 0;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    assert_int_equal(fk_eval_reproducible(eval, NULL), -1);
    fk_eval_destroy(eval);
}

static void measure_errors(const test_system *s)
{
    const size_t n = s->n;
    double *reference = malloc(3 * n * sizeof *reference), *forces = malloc(3 * n * sizeof *forces);
    const char *reference_name = "ref";
    if (!fk_context_device(fk_test_context)->fp64) { /* the host's double reference instead */
        fk_particles particles = {.count = n, .position = s->position, .mass = s->mass};
        fk_physics physics = {.eps = s->eps};
        assert_int_equal(fk_reference_forces("ga", &particles, &physics, reference, NULL), FK_OK);
        for (size_t i = 0; i < n; ++i)
            for (int k = 0; k < 3; ++k)
                reference[3 * i + k] *= s->mass[i];
        reference_name = "host double";
    } else {
        evaluate("ref", s, default_variant, 0, reference, NULL, NULL);
    }
    double float_error = 0, worst_compensated = 0;
    for (size_t a = 0; fk_accum_at(a); ++a) {
        const fk_accum_info *accum = fk_accum_at(a);
        if (strcmp(accum->name, "ref") == 0)
            continue;
        if (accum->needs_fp64 && !fk_context_device(fk_test_context)->fp64)
            continue;
        evaluate(accum->name, s, default_variant, 0, forces, NULL, NULL);
        const double e = error(forces, reference, n);
        fprintf(stderr, "  %s N=%zu eps=%g vs %s: %-15s error %.3e offset %.3e\n", s->name, n,
                s->eps, reference_name, accum->name, e, offset(forces, n));
        if (strcmp(accum->name, "float") == 0)
            float_error = e;
        const char *bounded[] = {"ti", "composite", "narumi", "fixed64"};
        for (size_t b = 0; b < 4; ++b)
            if (strcmp(accum->name, bounded[b]) == 0) {
                if (!(e <= 1e-6))
                    fail_msg("%s: error %.3g above 1e-6", accum->name, e);
                if (e > worst_compensated)
                    worst_compensated = e;
            }
    }
    if (!(float_error > worst_compensated))
        fail_msg("float's error %.3g is not above the compensated ones' (%.3g)", float_error,
                 worst_compensated);
    free(reference);
    free(forces);
}

static void test_error_against_ref(void **state)
{
    (void)state;
    test_system p = plummer(4096, 0.01), c = cluster(3000, 0.001, 0.0, 31);
    measure_errors(&p);
    measure_errors(&c);
    system_free(&p);
    system_free(&c);
}

static void test_overflow_reported(void **state)
{
    (void)state;
    test_system s = cluster(100, 0.01, 0.0, 41);
    /* the scale chosen at every upload: a kept scale (the default) would redo the compute */
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "ga";
    config.accum = "fixed64";
    config.eps = 0.01;
    config.scale_policy = FK_SCALE_EACH_UPLOAD;
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    fk_particles particles = {.count = s.n, .position = s.position, .mass = s.mass};
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    /* a scale 2^20 times too large: the largest terms pass the per-term limit */
    fk__eval_set_accum_param(eval, 0, (float)fk__eval_accum_scale(eval) * 1048576.0f);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    double *forces = malloc(3 * s.n * sizeof *forces);
    assert_int_equal(fk_eval_read_forces(eval, forces), FK_ERR_OVERFLOW);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "fixed64"));
    assert_string_equal(fk_status_string(FK_ERR_OVERFLOW), "fixed-point range exceeded");
    /* new particles choose the scale again, and all is well */
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    assert_int_equal(fk_eval_read_forces(eval, forces), FK_OK);
    free(forces);
    fk_eval_destroy(eval);
    system_free(&s);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offset_exactly_zero),  cmocka_unit_test(test_fixed64_bit_identical),
        cmocka_unit_test(test_narumi_bit_identical), cmocka_unit_test(test_reproducible_mode),
        cmocka_unit_test(test_error_against_ref),    cmocka_unit_test(test_overflow_reported),
    };
    return cmocka_run_group_tests(tests, fk_test_context_setup, fk_test_context_teardown);
}
