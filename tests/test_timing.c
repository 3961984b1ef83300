/*
 * Device times that cannot be trusted are reported as such (issue #37, src/core/devices/timing.c).
 *
 * Mesa 22.3's Rusticl reports 1 ns for every command, and bench printed 4.2e15 pair interactions
 * per second. The test links the static library with -Wl,--wrap=clGetEventProfilingInfo; armed,
 * the wrapper makes every command end 1 ns (or a chosen time) after it started, as that driver
 * does. fk_eval_compute's seconds must then be -1 (unavailable, as without profiling), with the
 * reason in fk_context_warnings once, and a plausible time must pass unchanged.
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

/* 0: pass on; else every command's END is START + this many nanoseconds */
static cl_ulong forced_duration_ns;

cl_int __real_clGetEventProfilingInfo(cl_event, cl_profiling_info, size_t, void *, size_t *);

cl_int __wrap_clGetEventProfilingInfo(cl_event event, cl_profiling_info what, size_t size,
                                      void *value, size_t *size_out)
{
    if (!forced_duration_ns || what != CL_PROFILING_COMMAND_END || size != sizeof(cl_ulong))
        return __real_clGetEventProfilingInfo(event, what, size, value, size_out);
    cl_ulong start = 0;
    const cl_int err = __real_clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START,
                                                      sizeof start, &start, NULL);
    if (err == CL_SUCCESS && value)
        *(cl_ulong *)value = start + forced_duration_ns;
    return err;
}

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
    return 0;
}

/* One evaluation of n bodies; returns the seconds fk_eval_compute reported. */
static double compute_seconds(size_t n)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "ga";
    config.accum = "float";
    config.eps = 0.01;
    /* one command: with j-splits the reported time runs from the pair loop's start to the
     * reduction's end, and the gap between the two (31 us on an H100) is not the wrapper's */
    config.j_splits = 1;
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_OK);
    double *position = calloc(3 * n, sizeof *position), *mass = calloc(n, sizeof *mass);
    assert_true(position && mass);
    for (size_t i = 0; i < n; ++i) {
        position[3 * i] = (double)i / (double)n;
        position[3 * i + 1] = (double)(i % 7) / 8.0;
        mass[i] = 1.0 / (double)n;
    }
    const fk_particles particles = {.count = n, .position = position, .mass = mass};
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    double seconds = NAN;
    assert_int_equal(fk_eval_compute(eval, &seconds), FK_OK);
    fk_eval_destroy(eval);
    free(position);
    free(mass);
    return seconds;
}

/* 1 ns per launch, as Rusticl 22.3 reports: unavailable, and the warning says why, once. */
static void test_one_nanosecond_is_unavailable(void **state)
{
    (void)state;
    forced_duration_ns = 1;
    const double first = compute_seconds(1000);
    const double second = compute_seconds(1000);
    forced_duration_ns = 0;
    FK_ASSERT_NEAR(first, -1.0, 0.0);
    FK_ASSERT_NEAR(second, -1.0, 0.0);
    const char *warnings = fk_context_warnings(context);
    const char *said = strstr(warnings, "device event times are not usable");
    if (!said)
        fail_msg("warnings: %s", warnings);
    assert_null(strstr(said + 1, "device event times are not usable")); /* once */
}

/* A time that implies more pair interactions per second than any device reaches: 120 ns for
 * 4,000^2 pairs is 1.3e14 per second: unavailable. */
static void test_impossible_rate_is_unavailable(void **state)
{
    (void)state;
    forced_duration_ns = 120; /* above the shortest launch, below the pair-rate ceiling */
    const double seconds = compute_seconds(4000);
    forced_duration_ns = 0;
    FK_ASSERT_NEAR(seconds, -1.0, 0.0);
}

/* A plausible time passes unchanged: 0.5 ms for 10^6 pairs (2e9 per second, and within the
 * wall clock's bound of every run). */
static void test_plausible_time_passes(void **state)
{
    (void)state;
    forced_duration_ns = 500000;
    const double forced = compute_seconds(1000);
    forced_duration_ns = 0;
    FK_ASSERT_NEAR(forced, 5e-4, 1e-12);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_nanosecond_is_unavailable),
        cmocka_unit_test(test_impossible_rate_is_unavailable),
        cmocka_unit_test(test_plausible_time_passes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
