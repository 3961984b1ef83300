/* The median of repeated timings (src/common/stats.c): the middle value of an odd count, the mean
 * of the middle two of an even one, NaN for none; the values left sorted, NaN last, so that the
 * callers can read the minimum and the maximum at the ends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <stdlib.h>

#include "common/stats.h"
#include "test_support.h"

static void test_odd_count(void **state)
{
    (void)state;
    double values[] = {5, 1, 4, 2, 3};
    assert_true(fk__median(values, 5) == 3.0);
    for (size_t i = 0; i < 5; ++i) /* sorted in place */
        assert_true(values[i] == (double)(i + 1));
    double one[] = {-7.5};
    assert_true(fk__median(one, 1) == -7.5);
}

static void test_even_count(void **state)
{
    (void)state;
    double values[] = {4, 10, 1, 2};
    assert_true(fk__median(values, 4) == 3.0); /* (2 + 4) / 2, not the upper or lower middle */
    assert_true(values[0] == 1.0 && values[3] == 10.0);
    double two[] = {1e-9, 3e-9};
    assert_true(fk__median(two, 2) == 0.5 * (1e-9 + 3e-9));
}

static void test_empty(void **state)
{
    (void)state;
    assert_true(isnan(fk__median(NULL, 0)));
}

static void test_nan_sorts_last(void **state)
{
    (void)state;
    double values[] = {NAN, 2, NAN, 1, 3};
    assert_true(fk__median(values, 5) == 3.0); /* 1 2 3 NaN NaN */
    assert_true(values[0] == 1.0 && values[1] == 2.0 && values[2] == 3.0);
    assert_true(isnan(values[3]) && isnan(values[4]));
    const double two = 2, nan = NAN;
    assert_true(fk__compare_doubles(&nan, &two) > 0);
    assert_true(fk__compare_doubles(&two, &nan) < 0);
    assert_int_equal(fk__compare_doubles(&nan, &nan), 0);
    assert_int_equal(fk__compare_doubles(&two, &two), 0);
}

/* qsort with the comparison gives the same order whatever the input order. */
static void test_order_is_total(void **state)
{
    (void)state;
    const double expected[] = {-HUGE_VAL, -1, 0, 0.5, 2, HUGE_VAL};
    double values[] = {2, HUGE_VAL, 0, -1, 0.5, -HUGE_VAL};
    for (int round = 0; round < 6; ++round) {
        double shuffled[6];
        for (size_t i = 0; i < 6; ++i)
            shuffled[i] = values[(i + (size_t)round) % 6];
        qsort(shuffled, 6, sizeof *shuffled, fk__compare_doubles);
        for (size_t i = 0; i < 6; ++i)
            assert_true(shuffled[i] == expected[i]);
    }
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_odd_count),      cmocka_unit_test(test_even_count),
        cmocka_unit_test(test_empty),          cmocka_unit_test(test_nan_sorts_last),
        cmocka_unit_test(test_order_is_total),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
