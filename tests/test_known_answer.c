/*
 * The known-answer check (issue #37, src/core/eval/known_answer.c): the first evaluation of each
 * program on a context computes four particles whose forces the host knows, and an accumulator
 * whose forces are wrong is refused instead of returned with FK_OK.
 *
 * A wrong answer is planted as Mesa 22.3's Rusticl produced it: the test links the static library
 * with -Wl,--wrap=clEnqueueReadBuffer, and the wrapper, when armed, overwrites what a read of the
 * check's results (4 particles x 3 components) brought back with zeros or NaN, after the real read
 * completed. Checked: the refusal's status and message (device, driver, accumulator),
 * that a refused program is not remembered as good, that a passed one is not checked again on the
 * same context (one run per program), and that the check's own evaluation is right on the device
 * under test for every accumulator it has.
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
#include "core/eval/known_answer.h"
#include "test_support.h"

/* ---- the wrapper ---------------------------------------------------------------------------- */

typedef enum planted { PLANT_NONE, PLANT_ZEROS, PLANT_NAN } planted;
static planted plant = PLANT_NONE;
/* the results of the check's evaluation, 4 particles x 3 components: packed (2 words each, the
 * host decodes) or decoded on the device (a double each, and the 8-byte overflow word) */
enum { CHECK_PACKED_BYTES = 4 * 3 * 8, CHECK_DECODED_BYTES = 4 * 3 * 8 + 8 };

cl_int __real_clEnqueueReadBuffer(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *,
                                  cl_uint, const cl_event *, cl_event *);

cl_int __wrap_clEnqueueReadBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                                  size_t offset, size_t size, void *host, cl_uint wait_count,
                                  const cl_event *wait_list, cl_event *event)
{
    const cl_int err = __real_clEnqueueReadBuffer(queue, buffer, blocking, offset, size, host,
                                                  wait_count, wait_list, event);
    if (err != CL_SUCCESS || plant == PLANT_NONE ||
        (size != CHECK_PACKED_BYTES && size != CHECK_DECODED_BYTES))
        return err;
    clFinish(queue);
    if (event && *event)
        clWaitForEvents(1, event);
    if (plant == PLANT_ZEROS) {
        memset(host, 0, size);
    } else {
        /* a quiet NaN as a float word, and as a double of two such words */
        uint32_t *words = host;
        for (size_t w = 0; w < size / 4; ++w)
            words[w] = 0x7fc00000u;
    }
    return err;
}

/* ---- helpers ----------------------------------------------------------------------------------
 */

static fk_context *context;

static int setup(void **state)
{
    (void)state;
    return fk_test_open_context(&context);
}

static int teardown(void **state)
{
    (void)state;
    fk_context_destroy(context);
    plant = PLANT_NONE;
    return 0;
}

static fk_eval_config ga_config(const char *accum)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "ga";
    config.accum = accum;
    config.eps = 0.01;
    config.lanes = -1; /* the scalar template: packed float results, as planted */
    return config;
}

/* ---- tests ------------------------------------------------------------------------------------
 */

static void expect_refused(planted what, int work_group_size)
{
    fk_eval_config config = ga_config("float");
    config.work_group_size = work_group_size; /* a program no other test here built */
    plant = what;
    fk_eval *eval = NULL;
    const fk_status status = fk_eval_create(context, &config, &eval);
    plant = PLANT_NONE;
    assert_int_equal(status, FK_ERR_UNSUPPORTED);
    assert_null(eval);
    const char *message = fk_context_last_error(context);
    const fk_device_info *device = fk_context_device(context);
    if (!strstr(message, "known-answer check failed") || !strstr(message, "accumulator float") ||
        !strstr(message, device->name) || !strstr(message, device->driver_version))
        fail_msg("message: %s", message);
    /* the refusal is not remembered as a pass: without the plant the same program is checked
     * again, and passes */
    const size_t runs = fk__known_answer_runs(context);
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_OK);
    assert_int_equal(fk__known_answer_runs(context), runs + 1);
    fk_eval_destroy(eval);
}

/* A device that returns zeros for an accumulator: refused, with device, driver and accumulator. */
static void test_zeros_refused(void **state)
{
    (void)state;
    expect_refused(PLANT_ZEROS, 16);
}

/* NaN: refused too. */
static void test_nan_refused(void **state)
{
    (void)state;
    expect_refused(PLANT_NAN, 8);
}

/* A program that passed is not checked again on this context; another program is. */
static void test_checked_once(void **state)
{
    (void)state;
    fk_eval_config config = ga_config("float");
    /* a shape valid on every device: the automatic unroll may be wider than 4 (1x8 on NVIDIA),
     * which a work-group of 4 cannot tile */
    config.unroll_i = 1;
    config.unroll_j = 1;
    config.work_group_size = 4;
    fk_eval *eval = NULL;
    const size_t before = fk__known_answer_runs(context);
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_OK);
    fk_eval_destroy(eval);
    assert_int_equal(fk__known_answer_runs(context), before + 1);
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_OK);
    fk_eval_destroy(eval);
    assert_int_equal(fk__known_answer_runs(context), before + 1);
    config.potential = 1; /* another program */
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_OK);
    fk_eval_destroy(eval);
    assert_int_equal(fk__known_answer_runs(context), before + 2);
}

/* Every accumulator the device has passes its own check (a false refusal would take a working
 * accumulator away), for a gravity and a molecular law and the loops with a cutoff. */
static void test_every_accumulator_passes(void **state)
{
    (void)state;
    const int fp64 = fk_test_device_has_fp64(context);
    for (size_t a = 0; fk_accum_at(a); ++a) {
        const fk_accum_info *accum = fk_accum_at(a);
        if (strcmp(accum->name, "bound") == 0)
            continue; /* the data-scaled accumulators' pre-pass, no forces */
        if (accum->needs_fp64 && !fp64)
            continue; /* refused as unsupported, before any check */
        fk_eval_config config = ga_config(accum->name);
        config.lanes = 0;
        fk_eval *eval = NULL;
        fk_status status = fk_eval_create(context, &config, &eval);
        if (status != FK_OK)
            fail_msg("ga %s: %s: %s", accum->name, fk_status_string(status),
                     fk_context_last_error(context));
        fk_eval_destroy(eval);
    }
    const int loops[] = {FK_ALGORITHM_ALL_PAIRS, FK_ALGORITHM_SYMMETRIC, FK_ALGORITHM_CELLS,
                         FK_ALGORITHM_NEIGHBORS};
    for (size_t l = 0; l < sizeof loops / sizeof loops[0]; ++l) {
        fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
        config.kernel = "ljc_constant";
        config.accum = "float";
        config.cutoff = 2.5;
        config.algorithm = loops[l];
        for (int d = 0; d < 3; ++d)
            config.box[d] = 9.0;
        fk_eval *eval = NULL;
        fk_status status = fk_eval_create(context, &config, &eval);
        if (status != FK_OK)
            fail_msg("ljc_constant %s: %s: %s", fk_algorithm_name(loops[l]),
                     fk_status_string(status), fk_context_last_error(context));
        fk_eval_destroy(eval);
    }
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zeros_refused),
        cmocka_unit_test(test_nan_refused),
        cmocka_unit_test(test_checked_once),
        cmocka_unit_test(test_every_accumulator_passes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
