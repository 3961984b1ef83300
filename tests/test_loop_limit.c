/*
 * A device that stops kernel loops early is refused for the particle counts it would get wrong
 * (issue #37, src/core/probes/loop_limit.c).
 *
 * Mesa 22.3's llvmpipe stops every loop of a kernel after 65,535 iterations and reports success
 * (tests/rusticl/loop_limit.c), so a pair loop over more particles returns wrong forces with FK_OK.
 * The library probes the device before the first evaluation above 65,535 particles. Here: the
 * probe's verdict on the device under test (no refusal where loops run to the end, a refusal with
 * the reason where they do not), and the refusal rule itself on any device, with the probe's
 * answer planted as llvmpipe's.
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

/* set_particles of n bodies on a lattice with unit spacing (no compute: the check comes first) */
static fk_status set_lattice(size_t n)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "ga";
    config.accum = "float";
    config.eps = 0.01;
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    double *position = malloc(3 * n * sizeof *position);
    assert_non_null(position);
    for (size_t i = 0; i < n; ++i) {
        position[3 * i] = (double)(i % 64);
        position[3 * i + 1] = (double)(i / 64 % 64);
        position[3 * i + 2] = (double)(i / 4096);
    }
    const fk_particles particles = {.count = n, .position = position};
    const fk_status status = fk_eval_set_particles(eval, &particles);
    fk_eval_destroy(eval);
    free(position);
    return status;
}

/* The device under test: a refusal exactly where the probe found loops cut short. */
static void test_probe_on_this_device(void **state)
{
    (void)state;
    fk_test_context->loop_limit = 0; /* probe again */
    const fk_status status = set_lattice(70000);
    assert_true(fk_test_context->loop_limit > 0); /* the probe ran */
    if (fk_test_context->loop_limit >= 70000) {
        assert_int_equal(status, FK_OK);
    } else {
        fprintf(stderr, "this device stops loops after %u iterations\n",
                fk_test_context->loop_limit);
        assert_int_equal(status, FK_ERR_UNSUPPORTED);
        assert_non_null(strstr(fk_context_last_error(fk_test_context), "stop every loop"));
    }
}

/* The rule, with llvmpipe's answer planted: above the cap refused with the device and the cap
 * named; at the cap and below accepted (the probe is not asked there). */
static void test_refusal_rule(void **state)
{
    (void)state;
    const cl_uint probed = fk_test_context->loop_limit;
    fk_test_context->loop_limit = 65535;
    const fk_status above = set_lattice(65536);
    char message[1024];
    snprintf(message, sizeof message, "%s", fk_context_last_error(fk_test_context));
    const fk_status at = set_lattice(65535);
    fk_test_context->loop_limit = probed;
    assert_int_equal(above, FK_ERR_UNSUPPORTED);
    if (!strstr(message, "after 65535 iterations") ||
        !strstr(message, fk_context_device(fk_test_context)->name))
        fail_msg("message: %s", message);
    assert_int_equal(at, FK_OK);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_on_this_device),
        cmocka_unit_test(test_refusal_rule),
    };
    return cmocka_run_group_tests(tests, fk_test_context_setup, fk_test_context_teardown);
}
