/*
 * Automatic shapes fitted to the built kernels (issue #37).
 *
 * The device says per built kernel how many work-items a group may have (CL_KERNEL_WORK_GROUP_SIZE:
 * 32 for the pair loops on Mesa's llvmpipe, where the built-in CPU default asks 64) and how much
 * local memory it takes. The test links the static library with -Wl,--wrap for
 * clGetKernelWorkGroupInfo, so that on any device (POCL in CI) the pair kernels can be made to
 * report a smaller limit or more local memory than the device has, as such a device would. It
 * checks that an automatic shape is rebuilt at a size that fits, says so (FK_VARIANT_FITTED and
 * fk_eval_variant_note), computes the right forces (against the double reference), and that an
 * explicit work-group size that does not fit is refused with a message, never changed.
 *
 * The cell loop is not swept: its built-in CPU group is 1 work-item, which every limit allows.
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

/* ---- the wrapper ---------------------------------------------------------------------------- */

/* 0: pass everything on; else the work-items per group the pair kernels report. */
static size_t group_limit;
/* 0: pass on; else a pair kernel built for more than 8 work-items per group reports more local
 * memory than the device has (an eighth of it per work-item). */
static int local_overflow;

cl_int __real_clGetKernelWorkGroupInfo(cl_kernel, cl_device_id, cl_kernel_work_group_info, size_t,
                                       void *, size_t *);

/* The pair loops' kernels, not the cell grid's or neighbour lists' build kernels (fixed groups of
 * 64 work-items) nor the reductions. */
static int is_pair_kernel(cl_kernel kernel)
{
    char name[128] = "";
    clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
    return strcmp(name, "fk_pairwise") == 0 || strcmp(name, "fk_symmetric") == 0 ||
           strcmp(name, "fk_symmetric_edges") == 0 || strcmp(name, "fk_cells_pairs") == 0 ||
           strcmp(name, "fk_neighbors_half") == 0 || strcmp(name, "fk_neighbors_full") == 0 ||
           strcmp(name, "fk_neighbors_gather") == 0;
}

cl_int __wrap_clGetKernelWorkGroupInfo(cl_kernel kernel, cl_device_id device,
                                       cl_kernel_work_group_info what, size_t size, void *value,
                                       size_t *size_out)
{
    const cl_int err = __real_clGetKernelWorkGroupInfo(kernel, device, what, size, value, size_out);
    if (err != CL_SUCCESS || !value || !is_pair_kernel(kernel))
        return err;
    if (what == CL_KERNEL_WORK_GROUP_SIZE && group_limit && size == sizeof(size_t))
        *(size_t *)value = group_limit;
    if (what == CL_KERNEL_LOCAL_MEM_SIZE && local_overflow && size == sizeof(cl_ulong)) {
        /* more than the device has whenever the program was built for more than 8 work-items */
        cl_ulong device_local = 0;
        clGetDeviceInfo(device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof device_local, &device_local, NULL);
        size_t compiled[3] = {0, 0, 0}; /* reqd_work_group_size(WG_SIZE, 1, 1) */
        __real_clGetKernelWorkGroupInfo(kernel, device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE,
                                        sizeof compiled, compiled, NULL);
        const size_t built_for = compiled[0];
        if (built_for > 8)
            *(cl_ulong *)value = device_local / 8 * built_for;
    }
    return err;
}

/* ---- helpers ----------------------------------------------------------------------------------
 */

static fk_context *context;
static fk_test_rng rng;

static int setup(void **state)
{
    (void)state;
    fk_test_rng_init(&rng, fk_test_seed());
    return fk_test_open_context(&context);
}

static int teardown(void **state)
{
    (void)state;
    fk_context_destroy(context);
    group_limit = 0;
    local_overflow = 0;
    return 0;
}

/* A molecular system for the loops with a cutoff: lj on a jittered lattice in a periodic box. */
static void lj_system(fk_test_system *s)
{
    fk_test_system_alloc(s, "lj", 512, &rng);
    s->physics.cutoff = 2.5;
    for (int d = 0; d < 3; ++d)
        s->physics.box[d] = 8 * 1.1;
    fk_test_system_lattice(s, 0, s->n, 8, 1.1, (double[3]){0.55, 0.55, 0.55}, 0.15, &rng);
}

/* ga: 300 bodies in a unit cube, masses 1/N. */
static void ga_system(fk_test_system *s)
{
    fk_test_system_alloc(s, "ga", 300, &rng);
    for (size_t i = 0; i < s->n; ++i) {
        for (int k = 0; k < 3; ++k)
            s->position[3 * i + k] = fk_test_quantize(fk_test_rng_uniform(&rng) - 0.5);
        s->charge[i] = 1.0 / (double)s->n;
    }
    s->physics.eps = 0.01;
}

static fk_eval_config config_of(const fk_test_system *s, int algorithm)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = s->kernel;
    config.accum = "float";
    config.algorithm = algorithm;
    config.eps = s->physics.eps;
    config.cutoff = s->physics.cutoff;
    memcpy(config.box, s->physics.box, sizeof config.box);
    return config;
}

/* Creates, computes and compares with the double reference; returns the variant. */
static fk_variant run_and_check(const fk_test_system *s, const fk_eval_config *config)
{
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(context, config, &eval);
    if (status != FK_OK)
        fail_msg("create %s %s: %s: %s", s->kernel, fk_algorithm_name(config->algorithm),
                 fk_status_string(status), fk_context_last_error(context));
    fk_particles particles = fk_test_system_view(s);
    double *forces = calloc(3 * s->n, sizeof *forces);
    assert_non_null(forces);
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    assert_int_equal(fk_eval_read_forces(eval, forces), FK_OK);
    const double error =
        fk_test_error_vs_float_reference(s->kernel, &particles, &s->physics, forces);
    /* float sums of a few hundred terms: far below 1e-4 of the largest force for any draw */
    if (!(error < 1e-4))
        fail_msg("%s %s: error %g against the double reference", s->kernel,
                 fk_algorithm_name(config->algorithm), error);
    fk_variant variant;
    assert_int_equal(fk_eval_get_variant(eval, &variant), FK_OK);
    if (variant.source == FK_VARIANT_FITTED) {
        const char *note = fk_eval_variant_note(eval);
        assert_non_null(strstr(note, "narrowed"));
        assert_non_null(strstr(note, context ? fk_context_device(context)->name : ""));
    } else {
        assert_string_equal(fk_eval_variant_note(eval), "");
    }
    free(forces);
    fk_eval_destroy(eval);
    return variant;
}

/* ---- tests ------------------------------------------------------------------------------------
 */

/* Every loop whose automatic group exceeds the limit is rebuilt within it, says so, and is right.
 */
static void test_automatic_shape_narrowed(void **state)
{
    (void)state;
    fk_test_system ga, lj;
    ga_system(&ga);
    lj_system(&lj);
    struct {
        const fk_test_system *system;
        int algorithm, lanes;
    } cases[] = {
        {&ga, FK_ALGORITHM_ALL_PAIRS, -1}, /* the scalar template */
        {&ga, FK_ALGORITHM_ALL_PAIRS, 0},  /* automatic lanes where the device has them */
        {&lj, FK_ALGORITHM_ALL_PAIRS, -1}, /* molecular */
        {&lj, FK_ALGORITHM_SYMMETRIC, -1}, /* CPU default: 64 work-items */
        {&lj, FK_ALGORITHM_NEIGHBORS, -1}, /* CPU default: 16 */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        fk_eval_config config = config_of(cases[c].system, cases[c].algorithm);
        config.lanes = cases[c].lanes;
        group_limit = 0;
        const fk_variant free_variant = run_and_check(cases[c].system, &config);
        /* a limit below what the automatic choice takes */
        group_limit =
            (size_t)(free_variant.work_group_size > 1 ? free_variant.work_group_size / 2 : 1);
        const fk_variant fitted = run_and_check(cases[c].system, &config);
        group_limit = 0;
        if (free_variant.work_group_size <= 1)
            continue;
        if (fitted.source != FK_VARIANT_FITTED ||
            (size_t)fitted.work_group_size > (size_t)free_variant.work_group_size / 2)
            fail_msg("%s %s lanes %d: work-group size %d (source %d) under a limit of %d",
                     cases[c].system->kernel, fk_algorithm_name(cases[c].algorithm), cases[c].lanes,
                     fitted.work_group_size, (int)fitted.source, free_variant.work_group_size / 2);
    }
    fk_test_system_free(&ga);
    fk_test_system_free(&lj);
}

/* Local memory beyond the device's: the tiled all-pairs loop narrows its tile until it fits. */
static void test_local_memory_narrowed(void **state)
{
    (void)state;
    fk_test_system ga;
    ga_system(&ga);
    fk_eval_config config = config_of(&ga, FK_ALGORITHM_ALL_PAIRS);
    config.lanes = -1;
    config.local_tiling = 1;
    local_overflow = 1;
    const fk_variant fitted = run_and_check(&ga, &config);
    local_overflow = 0;
    assert_int_equal(fitted.source, FK_VARIANT_FITTED);
    assert_true(fitted.work_group_size <= 8);
    fk_test_system_free(&ga);
}

/* An explicit work-group size is the caller's: refused with the limit named, not changed. */
static void test_explicit_shape_refused(void **state)
{
    (void)state;
    fk_test_system ga, lj;
    ga_system(&ga);
    lj_system(&lj);
    const struct {
        const fk_test_system *system;
        int algorithm;
    } cases[] = {{&ga, FK_ALGORITHM_ALL_PAIRS},
                 {&lj, FK_ALGORITHM_SYMMETRIC},
                 {&lj, FK_ALGORITHM_NEIGHBORS}};
    group_limit = 8;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        fk_eval_config config = config_of(cases[c].system, cases[c].algorithm);
        config.lanes = -1;
        config.work_group_size = 32;
        fk_eval *eval = NULL;
        assert_int_equal(fk_eval_create(context, &config, &eval), FK_ERR_UNSUPPORTED);
        assert_null(eval);
        const char *message = fk_context_last_error(context);
        if (!strstr(message, "limit of 8") || !strstr(message, "explicitly"))
            fail_msg("%s: %s", fk_algorithm_name(cases[c].algorithm), message);
    }
    group_limit = 0;
    fk_test_system_free(&ga);
    fk_test_system_free(&lj);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_automatic_shape_narrowed),
        cmocka_unit_test(test_local_memory_narrowed),
        cmocka_unit_test(test_explicit_shape_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
