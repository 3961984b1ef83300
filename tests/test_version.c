/* The version: the run-time query agrees with the header generated from CMake's project version,
 * and the status codes keep their ABI values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "forcekit/forcekit.h"
#include "test_support.h"

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

/* Configuration structs across versions (forcekit.h, struct_size): a program built against an
 * older, smaller struct passes fewer bytes, and the library must not read past them; a newer,
 * larger one is accepted only when the bytes this library does not know are zero. Simulated here
 * with a buffer larger than the struct, filled with a pattern beyond the size the caller states. */
static void test_config_struct_size(void **state)
{
    (void)state;
    fk_context *context = NULL;
    assert_int_equal(fk_test_open_context(&context), 0);
    double position[6] = {0, 0, 0, 1, 0, 0}, mass[2] = {1, 1}, forces[6];
    const fk_particles particles = {.count = 2, .position = position, .mass = mass};

    /* An old caller: its struct ends before `lanes`, and the bytes after it are garbage (0x7f:
     * lanes = 0x7f7f7f7f, an invalid width) that the library must not read. */
    unsigned char *buffer = malloc(sizeof(fk_eval_config) + 64);
    assert_non_null(buffer);
    memset(buffer, 0x7f, sizeof(fk_eval_config) + 64);
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "ga";
    config.eps = 0.1;
    config.struct_size = offsetof(fk_eval_config, lanes);
    memcpy(buffer, &config, offsetof(fk_eval_config, lanes));
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(context, (const fk_eval_config *)buffer, &eval);
    if (status != FK_OK)
        fail_msg("an older, smaller fk_eval_config: %s: %s", fk_status_string(status),
                 fk_context_last_error(context));
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    assert_int_equal(fk_eval_read_forces(eval, forces), FK_OK);
    assert_true(forces[0] > 0.9 && forces[0] < 1.0); /* 1 / (1 + 0.01)^(3/2) */
    fk_eval_destroy(eval);

    /* A newer caller with zero bytes beyond this library's struct: accepted. */
    memset(buffer, 0, sizeof(fk_eval_config) + 64);
    config.struct_size = sizeof(fk_eval_config) + 64;
    memcpy(buffer, &config, sizeof config);
    status = fk_eval_create(context, (const fk_eval_config *)buffer, &eval);
    assert_int_equal(status, FK_OK);
    fk_eval_destroy(eval);

    /* ... and with a field set that this library does not know: refused, saying why. */
    buffer[sizeof(fk_eval_config) + 8] = 1;
    eval = NULL;
    status = fk_eval_create(context, (const fk_eval_config *)buffer, &eval);
    assert_int_equal(status, FK_ERR_INVALID_ARGUMENT);
    assert_null(eval);
    assert_non_null(strstr(fk_context_last_error(context), "does not know"));

    /* An implausible size. */
    config.struct_size = 3;
    status = fk_eval_create(context, &config, &eval);
    assert_int_equal(status, FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(context), "struct_size"));

    /* The same rule for the context's configuration. */
    fk_context_config context_config = FK_CONFIG_INIT(fk_context_config);
    context_config.struct_size = 1;
    fk_context *other = NULL;
    assert_int_equal(fk_context_create(&context_config, &other), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(other);
    assert_non_null(strstr(fk_context_last_error(other), "fk_context_config.struct_size"));
    fk_context_destroy(other);
    free(buffer);
    fk_context_destroy(context);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_agrees),
        cmocka_unit_test(test_status_values),
        cmocka_unit_test(test_config_struct_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
