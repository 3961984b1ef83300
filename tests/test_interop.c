/* OpenCL interoperability (forcekit_cl.h, issue #16): a forcekit context on the caller's OpenCL
 * objects, positions from the caller's buffers and results into them. The reference for every
 * check is the host path of the same evaluation type on the same positions: fixed64, so the same
 * float positions give the same bits whichever way they arrived. */
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
#include "forcekit/forcekit_cl.h"
#include "test_support.h"

#define N 150

/* The caller's objects: its own context and queue on forcekit's default device. */
typedef struct caller_cl {
    cl_context context;
    cl_device_id device;
    cl_command_queue queue;
} caller_cl;

static int open_caller(caller_cl *caller, cl_command_queue_properties properties)
{
    fk_context *probe = NULL;
    if (fk_test_open_context(&probe) != 0)
        return -1;
    cl_device_id device = NULL;
    fk_context_cl_objects(probe, NULL, &device, NULL);
    cl_int err = CL_SUCCESS;
    caller->device = device;
    clRetainDevice(device);
    fk_context_destroy(probe);
    caller->context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        return -1;
    caller->queue = clCreateCommandQueue(caller->context, device, properties, &err);
    return err == CL_SUCCESS ? 0 : -1;
}

static void close_caller(caller_cl *caller)
{
    if (caller->queue)
        clReleaseCommandQueue(caller->queue);
    if (caller->context)
        clReleaseContext(caller->context);
    if (caller->device)
        clReleaseDevice(caller->device);
}

static void make_positions(double *position, double *charge, fk_test_rng *rng)
{
    double lattice[3 * 216];
    fk_test_jittered_lattice(lattice, 6, 1.1, 0.4, rng);
    memcpy(position, lattice, 3 * N * sizeof *position);
    for (size_t i = 0; i < N; ++i)
        charge[i] = i % 2 ? 0.5 : -0.5;
}

static fk_eval *create_eval(fk_context *context, int result_type)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "ljc_constant";
    config.accum = "fixed64";
    config.potential = 1;
    config.result_type = result_type;
    fk_eval *eval = NULL;
    if (fk_eval_create(context, &config, &eval) != FK_OK)
        fail_msg("fk_eval_create: %s", fk_context_last_error(context));
    return eval;
}

static void test_context_on_caller_objects(void **state)
{
    (void)state;
    caller_cl caller = {0};
    assert_int_equal(open_caller(&caller, CL_QUEUE_PROFILING_ENABLE), 0);
    fk_context *context = NULL;
    assert_int_equal(
        fk_context_create_cl(caller.context, caller.device, caller.queue, NULL, &context), FK_OK);
    cl_context cl = NULL;
    cl_command_queue queue = NULL;
    assert_int_equal(fk_context_cl_objects(context, &cl, NULL, &queue), FK_OK);
    assert_ptr_equal(cl, caller.context);
    assert_ptr_equal(queue, caller.queue);
    /* forcekit holds its own references: the caller may let go of its own first */
    fk_context_destroy(context);
    fk_context *bad = NULL;
    assert_int_equal(fk_context_create_cl(caller.context, caller.device, NULL, NULL, &bad),
                     FK_ERR_INVALID_ARGUMENT);
    fk_context_destroy(bad);
    fk_context_config named = FK_CONFIG_INIT(fk_context_config);
    named.device = "cpu";
    assert_int_equal(
        fk_context_create_cl(caller.context, caller.device, caller.queue, &named, &bad),
        FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(bad), "device"));
    fk_context_destroy(bad);
    fk_context_config timing = FK_CONFIG_INIT(fk_context_config);
    timing.device_timing = FK_DEVICE_TIMING_OFF; /* the caller's queue decides that */
    assert_int_equal(
        fk_context_create_cl(caller.context, caller.device, caller.queue, &timing, &bad),
        FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(bad), "device_timing"));
    fk_context_destroy(bad);
    close_caller(&caller);

    /* a queue without profiling: no device times, the tuner refuses, the results arrive */
    caller_cl untimed = {0};
    assert_int_equal(open_caller(&untimed, 0), 0);
    fk_context *context_untimed = NULL;
    assert_int_equal(fk_context_create_cl(untimed.context, untimed.device, untimed.queue, NULL,
                                          &context_untimed),
                     FK_OK);
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0x3d1);
    double position[3 * N], charge[N], forces[3 * N];
    make_positions(position, charge, &rng);
    const fk_particles particles = {.count = N, .position = position, .mass = charge};
    fk_eval *eval = create_eval(context_untimed, FK_RESULT_DOUBLE);
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    double seconds = 0;
    assert_int_equal(fk_eval_compute(eval, &seconds), FK_OK);
    assert_true(seconds == -1.0);
    assert_int_equal(fk_eval_read_forces(eval, forces), FK_OK);
    const fk_physics physics = {0};
    assert_true(fk_test_error_vs_float_reference("ljc_constant", &particles, &physics, forces) <=
                1e-5);
    fk_tune_config tune = FK_CONFIG_INIT(fk_tune_config);
    tune.kernel = "ga";
    tune.n = 1024;
    fk_tune_result *tuned = NULL;
    assert_int_equal(fk_tune_run(context_untimed, &tune, &tuned), FK_ERR_UNSUPPORTED);
    fk_eval_destroy(eval);
    fk_context_destroy(context_untimed);
    close_caller(&untimed);

    /* an out-of-order queue, where the device offers one */
    caller_cl unordered = {0};
    if (open_caller(&unordered, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) == 0) {
        assert_int_equal(
            fk_context_create_cl(unordered.context, unordered.device, unordered.queue, NULL, &bad),
            FK_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(fk_context_last_error(bad), "order"));
        fk_context_destroy(bad);
    }
    close_caller(&unordered);
}

/* Positions from the caller's buffers (3 doubles or float4) and results into the caller's
 * buffers give the bits of the host path. */
static void test_buffers(void **state)
{
    (void)state;
    caller_cl caller = {0};
    assert_int_equal(open_caller(&caller, CL_QUEUE_PROFILING_ENABLE), 0);
    fk_context *context = NULL;
    assert_int_equal(
        fk_context_create_cl(caller.context, caller.device, caller.queue, NULL, &context), FK_OK);
    const int fp64 = fk_context_device(context)->fp64;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0x1c1);
    double position[3 * N], charge[N];
    make_positions(position, charge, &rng);
    const fk_particles particles = {.count = N, .position = position, .mass = charge};
    fk_eval *device_side = create_eval(context, FK_RESULT_DOUBLE);
    fk_eval *host_side = create_eval(context, FK_RESULT_DOUBLE);
    assert_int_equal(fk_eval_set_particles(device_side, &particles), FK_OK);
    assert_int_equal(fk_eval_set_particles(host_side, &particles), FK_OK);

    cl_int err = CL_SUCCESS;
    cl_mem doubles =
        clCreateBuffer(caller.context, CL_MEM_READ_WRITE, 3 * N * sizeof(double), NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_mem floats =
        clCreateBuffer(caller.context, CL_MEM_READ_WRITE, 4 * N * sizeof(float), NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_mem forces =
        clCreateBuffer(caller.context, CL_MEM_READ_WRITE, 3 * N * sizeof(double), NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_mem potentials =
        clCreateBuffer(caller.context, CL_MEM_READ_WRITE, N * sizeof(double), NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_mem small = clCreateBuffer(caller.context, CL_MEM_READ_WRITE, 16, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);

    if (!fp64) { /* the decode and the double positions need fp64 */
        assert_int_equal(fk_eval_set_results_cl(device_side, forces, potentials),
                         FK_ERR_UNSUPPORTED);
        assert_int_equal(fk_eval_update_positions_cl(device_side, doubles, 0), FK_ERR_UNSUPPORTED);
    } else {
        assert_int_equal(fk_eval_set_results_cl(device_side, small, potentials),
                         FK_ERR_INVALID_ARGUMENT);
        assert_int_equal(fk_eval_set_results_cl(device_side, forces, NULL),
                         FK_ERR_INVALID_ARGUMENT); /* potentials were asked for */
        assert_int_equal(fk_eval_set_results_cl(device_side, forces, potentials), FK_OK);
    }
    assert_int_equal(fk_eval_update_positions_cl(device_side, small, FK_CL_POSITIONS_FLOAT4),
                     FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_eval_update_positions_cl(device_side, floats, 7), FK_ERR_INVALID_ARGUMENT);

    for (int step = 0; step < 4; ++step) {
        for (size_t v = 0; v < 3 * N; ++v)
            position[v] += 0.01 * (fk_test_rng_uniform(&rng) - 0.5);
        const int layout = fp64 && step % 2 == 0 ? FK_CL_POSITIONS_DOUBLE3 : FK_CL_POSITIONS_FLOAT4;
        if (layout == FK_CL_POSITIONS_DOUBLE3) {
            err = clEnqueueWriteBuffer(caller.queue, doubles, CL_TRUE, 0, sizeof position, position,
                                       0, NULL, NULL);
        } else {
            float packed[4 * N];
            for (size_t i = 0; i < N; ++i) {
                for (int k = 0; k < 3; ++k)
                    packed[4 * i + (size_t)k] = (float)position[3 * i + (size_t)k];
                packed[4 * i + 3] = 1e30f; /* not the caller's: the charges stay */
            }
            err = clEnqueueWriteBuffer(caller.queue, floats, CL_TRUE, 0, sizeof packed, packed, 0,
                                       NULL, NULL);
        }
        assert_int_equal(err, CL_SUCCESS);
        assert_int_equal(
            fk_eval_update_positions_cl(
                device_side, layout == FK_CL_POSITIONS_DOUBLE3 ? doubles : floats, layout),
            FK_OK);
        assert_int_equal(fk_eval_update_positions(host_side, position, NULL), FK_OK);
        assert_int_equal(fk_eval_compute(device_side, NULL), FK_OK);
        assert_int_equal(fk_eval_compute(host_side, NULL), FK_OK);
        double expected[3 * N], expected_potentials[N], got[3 * N], got_potentials[N];
        assert_int_equal(fk_eval_read_forces(host_side, expected), FK_OK);
        assert_int_equal(fk_eval_read_potentials(host_side, expected_potentials), FK_OK);
        if (fp64) {
            assert_int_equal(fk_eval_read_forces(device_side, got), FK_ERR_STATE);
            /* on the caller's queue: the results are there for its next commands */
            assert_int_equal(clEnqueueReadBuffer(caller.queue, forces, CL_TRUE, 0, sizeof got, got,
                                                 0, NULL, NULL),
                             CL_SUCCESS);
            assert_int_equal(clEnqueueReadBuffer(caller.queue, potentials, CL_TRUE, 0,
                                                 sizeof got_potentials, got_potentials, 0, NULL,
                                                 NULL),
                             CL_SUCCESS);
        } else {
            assert_int_equal(fk_eval_read_forces(device_side, got), FK_OK);
            assert_int_equal(fk_eval_read_potentials(device_side, got_potentials), FK_OK);
        }
        assert_memory_equal(got, expected, sizeof got);
        assert_memory_equal(got_potentials, expected_potentials, sizeof got_potentials);
    }
    /* a refused coordinate: the previous particles stay */
    float bad[4 * N] = {0};
    bad[4 * 9 + 2] = NAN;
    assert_int_equal(
        clEnqueueWriteBuffer(caller.queue, floats, CL_TRUE, 0, sizeof bad, bad, 0, NULL, NULL),
        CL_SUCCESS);
    assert_int_equal(fk_eval_update_positions_cl(device_side, floats, FK_CL_POSITIONS_FLOAT4),
                     FK_ERR_INVALID_INPUT);
    assert_non_null(strstr(fk_context_last_error(context), "particle 9"));
    /* back to the host staging */
    if (fp64)
        assert_int_equal(fk_eval_set_results_cl(device_side, NULL, NULL), FK_OK);
    assert_int_equal(fk_eval_compute(device_side, NULL), FK_OK);
    double again[3 * N], expected[3 * N];
    assert_int_equal(fk_eval_read_forces(device_side, again), FK_OK);
    assert_int_equal(fk_eval_read_forces(host_side, expected), FK_OK);
    assert_memory_equal(again, expected, sizeof again);

    fk_eval_destroy(device_side);
    fk_eval_destroy(host_side);
    clReleaseMemObject(doubles);
    clReleaseMemObject(floats);
    clReleaseMemObject(forces);
    clReleaseMemObject(potentials);
    clReleaseMemObject(small);
    fk_context_destroy(context);
    close_caller(&caller);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_context_on_caller_objects),
        cmocka_unit_test(test_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
