/* rand48 (src/support/rand48.c, cl/rand48.cl): the host generator and the device's leapfrogged
 * streams against glibc's srand48 / lrand48 / drand48, value by value, and the leapfrog identity.
 */
#define _DEFAULT_SOURCE /* srand48, lrand48, drand48 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "core/internal.h" /* fk_context.loop_limit, planted below */
#include "support/rand48.h"
#include "test_support.h"

enum { VALUES = 100000 };

/* 0, 1, 42, 2^31 - 1, negative seeds, and one whose high bits glibc ignores (LP64 long). */
static const long seeds[] = {
    0, 1, 42, 2147483647L, -1, -123456789L, (long)(((uint64_t)1 << 40) + 5)};
enum { SEED_COUNT = sizeof seeds / sizeof seeds[0] };

static fk_context *context;
static fkt_rand48_device *generator;

static int setup(void **state)
{
    (void)state;
    fk_status status = fk_context_create(NULL, &context);
    if (status == FK_OK)
        status = fkt_rand48_device_open(context, &generator);
    if (status != FK_OK) {
        fprintf(stderr, "rand48 device: %s: %s\n", fk_status_string(status),
                fk_context_last_error(context));
        return -1;
    }
    fprintf(stderr, "device: %s\n", fk_context_device(context)->name);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fkt_rand48_device_close(generator);
    fk_context_destroy(context);
    return 0;
}

static void test_host_matches_glibc(void **state)
{
    (void)state;
    for (int s = 0; s < SEED_COUNT; s++) {
        fkt_rand48 r;
        fkt_rand48_seed(&r, seeds[s]);
        srand48(seeds[s]);
        for (int k = 0; k < VALUES; k++) {
            long expected = lrand48(), got = fkt_rand48_lrand(&r);
            if (got != expected)
                fail_msg("seed %ld, lrand48 value %d: %ld, glibc %ld", seeds[s], k, got, expected);
        }
        fkt_rand48_seed(&r, seeds[s]);
        srand48(seeds[s]);
        for (int k = 0; k < VALUES; k++) {
            double expected = drand48(), got = fkt_rand48_drand(&r);
            if (got != expected)
                fail_msg("seed %ld, drand48 value %d: %.17g, glibc %.17g", seeds[s], k, got,
                         expected);
        }
    }
}

/* Sequential steps against one jump, for fresh random jump lengths; composition; the edges. */
static void test_leapfrog_identity(void **state)
{
    (void)state;
    uint64_t a, c;
    fkt_rand48_leapfrog(0, &a, &c);
    assert_true(a == 1 && c == 0);
    fkt_rand48_leapfrog(1, &a, &c);
    assert_true(a == FKT_RAND48_A && c == FKT_RAND48_C);

    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    for (int trial = 0; trial < 20; trial++) {
        const uint64_t m = (uint64_t)(fk_test_rng_uniform(&rng) * 20000.0);
        fkt_rand48 r;
        fkt_rand48_seed(&r, (long)(fk_test_rng_uniform(&rng) * 4e9) - 2000000000L);
        const uint64_t start = r.state;
        for (uint64_t k = 0; k < m; k++)
            fkt_rand48_lrand(&r);
        fkt_rand48_leapfrog(m, &a, &c);
        assert_true(fkt_rand48_jump(start, a, c) == r.state);
        /* (A, C) for m1 + m2 is the map for m2 after the one for m1. */
        const uint64_t m1 = m / 3, m2 = m - m1;
        uint64_t a1, c1, a2, c2;
        fkt_rand48_leapfrog(m1, &a1, &c1);
        fkt_rand48_leapfrog(m2, &a2, &c2);
        assert_true(fkt_rand48_jump(fkt_rand48_jump(start, a1, c1), a2, c2) == r.state);
        assert_true(a < ((uint64_t)1 << 48) && c < ((uint64_t)1 << 48));
    }
    /* The period is 2^48: the jump by 2^48 is the identity map. */
    fkt_rand48_leapfrog((uint64_t)1 << 48, &a, &c);
    assert_true(a == 1 && c == 0);
}

static long lrand_values[VALUES];
static double drand_values[VALUES];

static void test_device_matches_glibc(void **state)
{
    (void)state;
    /* Work-item counts: automatic, one, a prime, not dividing the count, and more than fit one
     * value each. */
    static const size_t work_items[] = {0, 1, 7, 1000, 65536};
    for (int s = 0; s < SEED_COUNT; s++)
        for (size_t w = 0; w < sizeof work_items / sizeof work_items[0]; w++) {
            for (int k = 0; k < VALUES; k++)
                lrand_values[k] = -1;
            assert_int_equal(fkt_rand48_device_generate(generator, seeds[s], 0, VALUES,
                                                        work_items[w], lrand_values, NULL),
                             FK_OK);
            srand48(seeds[s]);
            for (int k = 0; k < VALUES; k++) {
                long expected = lrand48();
                if (lrand_values[k] != expected)
                    fail_msg("seed %ld, %zu work-items, lrand48 value %d: %ld, glibc %ld", seeds[s],
                             work_items[w], k, lrand_values[k], expected);
            }
            assert_int_equal(fkt_rand48_device_generate(generator, seeds[s], 0, VALUES,
                                                        work_items[w], NULL, drand_values),
                             FK_OK);
            srand48(seeds[s]);
            for (int k = 0; k < VALUES; k++) {
                double expected = drand48();
                if (drand_values[k] != expected)
                    fail_msg("seed %ld, %zu work-items, drand48 value %d: %.17g, glibc %.17g",
                             seeds[s], work_items[w], k, drand_values[k], expected);
            }
        }
}

/* A block that starts inside the sequence, both outputs at once, and more values than one launch
 * holds (2^22), against the host generator. */
static void test_device_offset_and_blocks(void **state)
{
    (void)state;
    const uint64_t first = 123457;
    const size_t count = ((size_t)1 << 22) + 1001;
    long *integers = malloc(count * sizeof *integers);
    double *reals = malloc(count * sizeof *reals);
    assert_non_null(integers);
    assert_non_null(reals);
    assert_int_equal(fkt_rand48_device_generate(generator, -42, first, count, 999, integers, reals),
                     FK_OK);
    fkt_rand48 r;
    fkt_rand48_seed(&r, -42);
    for (uint64_t k = 0; k < first; k++)
        fkt_rand48_lrand(&r);
    for (size_t k = 0; k < count; k++) {
        fkt_rand48 copy = r;
        double expected_real = fkt_rand48_drand(&copy);
        long expected = fkt_rand48_lrand(&r);
        if (integers[k] != expected || reals[k] != expected_real)
            fail_msg("value %zu after %llu: %ld %.17g, expected %ld %.17g", k,
                     (unsigned long long)first, integers[k], reals[k], expected, expected_real);
    }
    free(integers);
    free(reals);
}

/* A device that stops kernel loops early (Mesa's llvmpipe: 65,535 iterations,
 * src/core/probes/loop_limit.c): the generator splits a work-item's values over more launches.
 * Planted here as a cap of 1,000 so every device runs the split; without it the values from 1,000
 * on would be the device buffer's garbage on llvmpipe (test_device_matches_glibc's one work-item
 * sees the real cap there). */
static void test_device_loop_cap_split(void **state)
{
    (void)state;
    const size_t count = 70001; /* a work-item's loop over more than 65,535 asks for the cap */
    long *integers = malloc(count * sizeof *integers);
    assert_non_null(integers);
    const cl_uint probed = context->loop_limit;
    context->loop_limit = 1000;
    const fk_status status = fkt_rand48_device_generate(generator, 7, 5, count, 1, integers, NULL);
    context->loop_limit = probed;
    assert_int_equal(status, FK_OK);
    fkt_rand48 r;
    fkt_rand48_seed(&r, 7);
    for (int k = 0; k < 5; k++)
        fkt_rand48_lrand(&r);
    for (size_t k = 0; k < count; k++) {
        const long expected = fkt_rand48_lrand(&r);
        if (integers[k] != expected)
            fail_msg("value %zu with a planted loop cap of 1,000: %ld, expected %ld", k,
                     integers[k], expected);
    }
    free(integers);
}

static void test_device_bad_arguments(void **state)
{
    (void)state;
    long value = 7;
    assert_int_equal(fkt_rand48_device_generate(generator, 1, 0, 1, 0, NULL, NULL),
                     FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fkt_rand48_device_generate(NULL, 1, 0, 1, 0, &value, NULL),
                     FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fkt_rand48_device_generate(generator, 1, 0, 0, 0, &value, NULL), FK_OK);
    assert_int_equal(value, 7); /* count 0 writes nothing */
    fkt_rand48_device *none = NULL;
    assert_int_equal(fkt_rand48_device_open(NULL, &none), FK_ERR_INVALID_ARGUMENT);
    assert_null(none);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_matches_glibc),
        cmocka_unit_test(test_leapfrog_identity),
        cmocka_unit_test(test_device_matches_glibc),
        cmocka_unit_test(test_device_offset_and_blocks),
        cmocka_unit_test(test_device_loop_cap_split),
        cmocka_unit_test(test_device_bad_arguments),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
