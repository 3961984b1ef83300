/* The version: the run-time query agrees with the header generated from CMake's project version,
 * and the status codes keep their ABI values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "forcekit/forcekit.h"

static void test_version_agrees(void **state)
{
    (void)state;
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", FK_VERSION_MAJOR, FK_VERSION_MINOR,
             FK_VERSION_PATCH);
    assert_string_equal(fk_version(), expected);
    assert_string_equal(fk_version(), FK_VERSION_STRING);
    assert_int_equal(fk_version_number(),
                     FK_VERSION_MAJOR * 10000 + FK_VERSION_MINOR * 100 + FK_VERSION_PATCH);
}

/* Renumbering a status breaks every binary built against an older header. */
static void test_status_values(void **state)
{
    (void)state;
    const fk_status values[] = {FK_OK,
                                FK_ERR_INVALID_ARGUMENT,
                                FK_ERR_INVALID_INPUT,
                                FK_ERR_HOST_MEMORY,
                                FK_ERR_NO_DEVICE,
                                FK_ERR_DEVICE_NOT_FOUND,
                                FK_ERR_UNSUPPORTED,
                                FK_ERR_KERNEL_SOURCE,
                                FK_ERR_BUILD,
                                FK_ERR_DEVICE_MEMORY,
                                FK_ERR_OPENCL,
                                FK_ERR_IO,
                                FK_ERR_PARSE,
                                FK_ERR_STATE,
                                FK_ERR_OVERFLOW};
    for (size_t k = 0; k < sizeof values / sizeof values[0]; ++k) {
        assert_int_equal((int)values[k], (int)k);
        assert_true(strlen(fk_status_string(values[k])) > 0);
    }
    assert_int_equal(FK_EXCLUDE_ON_THE_FLY, 0);
    assert_int_equal(FK_EXCLUDE_AFTERWARDS, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_agrees),
        cmocka_unit_test(test_status_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
