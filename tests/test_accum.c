/*
 * The accumulators' building blocks, run on the device (cl/tests/blocks.cl, which includes the
 * same cl/accum/eft.clh as the accumulators) and compared with exact host results: two-sum and
 * fast two-sum against the exact rounding error (long double holds the exact sum of two floats
 * whose exponents differ by less than 40), Takahashi-Iitaka, Nitadori and the composite addition
 * bit for bit against a host emulation compiled without contraction (an FMA anywhere changes
 * bits), Narumi's renormalization against the exact fixed-point sum (including 1,000 ties of one
 * sign, which overflow Narumi's LOWER_SHIFT 7), and fixed64's rounding, exact sums and sticky
 * overflow sentinel, and its accuracy against the exact sum within the quantum its contract gives
 * (a scale one bit coarser fails). Also the host side: the choice of scale and LARGE, and the
 * decoders.
 */
#include <fenv.h>
#include <float.h>
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
#include "core/internal.h"
#include "test_support.h"

static fk_context *context;
static cl_program program;
static fk_test_rng rng;

static int setup(void **state)
{
    (void)state;
    fk_status status = fk_context_create(NULL, &context);
    if (status == FK_OK) {
        fk_program_result built;
        status = fk__program_build_file(context, "tests/blocks.cl", NULL, &built);
        program = built.program;
    }
    if (status != FK_OK) {
        fprintf(stderr, "setup: %s: %s\n", fk_status_string(status),
                fk_context_last_error(context));
        return -1;
    }
    fprintf(stderr, "device: %s\n", fk_context_device(context)->name);
    fk_test_rng_init(&rng, fk_test_seed());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (program)
        clReleaseProgram(program);
    fk_context_destroy(context);
    return 0;
}

/* A kernel argument: a buffer to upload, a buffer to read back, or a value. */
typedef struct arg {
    enum { IN, OUT, VALUE } kind;
    void *data;
    size_t bytes;
} arg;

static void run(const char *name, size_t items, arg *args, size_t count)
{
    cl_int err = CL_SUCCESS;
    cl_kernel kernel = clCreateKernel(program, name, &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_mem buffers[8] = {0};
    for (size_t a = 0; a < count; ++a) {
        if (args[a].kind == VALUE) {
            assert_int_equal(clSetKernelArg(kernel, (cl_uint)a, args[a].bytes, args[a].data),
                             CL_SUCCESS);
            continue;
        }
        buffers[a] = clCreateBuffer(context->cl,
                                    args[a].kind == IN ? CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR
                                                       : CL_MEM_WRITE_ONLY,
                                    args[a].bytes, args[a].kind == IN ? args[a].data : NULL, &err);
        assert_int_equal(err, CL_SUCCESS);
        assert_int_equal(clSetKernelArg(kernel, (cl_uint)a, sizeof(cl_mem), &buffers[a]),
                         CL_SUCCESS);
    }
    assert_int_equal(
        clEnqueueNDRangeKernel(context->queue, kernel, 1, NULL, &items, NULL, 0, NULL, NULL),
        CL_SUCCESS);
    for (size_t a = 0; a < count; ++a) {
        if (args[a].kind == OUT)
            assert_int_equal(clEnqueueReadBuffer(context->queue, buffers[a], CL_TRUE, 0,
                                                 args[a].bytes, args[a].data, 0, NULL, NULL),
                             CL_SUCCESS);
        if (buffers[a])
            clReleaseMemObject(buffers[a]);
    }
    clReleaseKernel(kernel);
}

/* A float with a random sign, mantissa and exponent in [-exponent_range, exponent_range]. */
static float random_float(int exponent_range)
{
    const double mantissa = 1.0 + fk_test_rng_uniform(&rng);
    const int exponent =
        (int)(fk_test_rng_uniform(&rng) * (2 * exponent_range + 1)) - exponent_range;
    const float value = (float)ldexp(mantissa, exponent);
    return fk_test_rng_uniform(&rng) < 0.5 ? -value : value;
}

typedef struct pair {
    float x, y;
} pair;

#define COUNT 4096

/* Pairs a, b with the hard cases: cancellation, equal magnitudes, |b| > |a|, zeros, ties. */
static void make_operands(float *a, float *b, int ordered)
{
    for (size_t i = 0; i < COUNT; ++i) {
        a[i] = random_float(18);
        switch (i % 8) {
        case 0: /* near cancellation */
            b[i] = -a[i] * (float)(1.0 + ldexp(fk_test_rng_uniform(&rng), -20));
            break;
        case 1:
            b[i] = a[i];
            break;
        case 2:
            b[i] = 0.0f;
            break;
        case 3: /* exactly half an ulp of a: a tie */
            b[i] = (float)ldexp(fabs(a[i]), -24);
            break;
        default:
            b[i] = random_float(18);
        }
        if (ordered && fabsf(b[i]) > fabsf(a[i])) {
            float t = a[i];
            a[i] = b[i];
            b[i] = t;
        }
    }
}

static void check_error_free(const float *a, const float *b, const pair *out, const char *what)
{
    for (size_t i = 0; i < COUNT; ++i) {
        const float rounded = a[i] + b[i];
        const long double exact = (long double)a[i] + (long double)b[i];
        if (out[i].x != rounded || (long double)out[i].x + (long double)out[i].y != exact)
            fail_msg("%s(%a, %a) = (%a, %a); exact sum %La, rounded %a", what, (double)a[i],
                     (double)b[i], (double)out[i].x, (double)out[i].y, exact, (double)rounded);
    }
}

static void test_two_sum(void **state)
{
    (void)state;
    static float a[COUNT], b[COUNT];
    static pair out[COUNT];
    make_operands(a, b, 0);
    arg args[] = {{IN, a, sizeof a}, {IN, b, sizeof b}, {OUT, out, sizeof out}};
    run("test_two_sum", COUNT, args, 3);
    check_error_free(a, b, out, "two_sum");
}

static void test_fast_two_sum(void **state)
{
    (void)state;
    static float a[COUNT], b[COUNT];
    static pair out[COUNT];
    make_operands(a, b, 1);
    arg args[] = {{IN, a, sizeof a}, {IN, b, sizeof b}, {OUT, out, sizeof out}};
    run("test_fast_two_sum", COUNT, args, 3);
    check_error_free(a, b, out, "fast_two_sum");
}

/* Host emulations of the pair additions, in the exact order of cl/accum/eft.clh. */
static pair host_two_sum(float a, float b)
{
    const float s = a + b, w = s - a, z1 = b - w, v = s - w, z2 = v - a;
    return (pair){s, z1 - z2};
}
static pair host_fast_two_sum(float a, float b)
{
    const float s = a + b, w = s - a;
    return (pair){s, b - w};
}
static pair host_ti_add(pair a, float y)
{
    const pair z = host_two_sum(a.x, y);
    const float r = a.y + z.y;
    return host_fast_two_sum(z.x, r);
}
static pair host_nitadori_add(pair a, float y)
{
    pair b = host_fast_two_sum(a.x, y);
    b.y = a.y + b.y;
    return b;
}
static pair host_composite_add(pair x, pair y)
{
    const float value = x.x + y.x;
    const float t = value - x.x;
    const float error = x.x - (value - t) + (y.x - t) + x.y + y.y;
    return (pair){value, error};
}

static int same_bits(pair p, pair q)
{
    return memcmp(&p, &q, sizeof p) == 0;
}

/* Normalized pairs (|low| <= ulp(high) / 2) as the accumulators hold them. */
static void make_pairs(pair *a, float *y)
{
    for (size_t i = 0; i < COUNT; ++i) {
        const float high = random_float(10);
        a[i] = host_fast_two_sum(high, (float)(high * ldexp(fk_test_rng_uniform(&rng) - 0.5, -24)));
        y[i] = i % 4 == 0 ? -a[i].x : random_float(10);
    }
}

static void test_ti_add(void **state)
{
    (void)state;
    static pair a[COUNT], out[COUNT];
    static float y[COUNT];
    make_pairs(a, y);
    arg args[] = {{IN, a, sizeof a}, {IN, y, sizeof y}, {OUT, out, sizeof out}};
    run("test_ti_add", COUNT, args, 3);
    for (size_t i = 0; i < COUNT; ++i) {
        if (!same_bits(out[i], host_ti_add(a[i], y[i])))
            fail_msg("ti_add differs from the uncontracted algorithm at %zu", i);
        /* about 2^-44 relative: the pair is a quasi-double */
        const long double exact = (long double)a[i].x + a[i].y + y[i];
        const long double got = (long double)out[i].x + out[i].y;
        const long double scale = fabsl((long double)a[i].x) + fabsl((long double)y[i]);
        if (fabsl(got - exact) > ldexpl(scale, -44))
            fail_msg("ti_add error %Lg at %zu", fabsl(got - exact) / scale, i);
    }
}

static void test_nitadori_add(void **state)
{
    (void)state;
    static pair a[COUNT], out[COUNT];
    static float y[COUNT];
    make_pairs(a, y);
    for (size_t i = 0; i < COUNT; ++i)
        if (fabsf(y[i]) > fabsf(a[i].x)) /* Nitadori's condition */
            y[i] = a[i].x * 0.75f;
    arg args[] = {{IN, a, sizeof a}, {IN, y, sizeof y}, {OUT, out, sizeof out}};
    run("test_nitadori_add", COUNT, args, 3);
    for (size_t i = 0; i < COUNT; ++i) {
        if (!same_bits(out[i], host_nitadori_add(a[i], y[i])))
            fail_msg("nitadori_add differs from the uncontracted algorithm at %zu", i);
        /* the high-part step is error-free: high' + (low' - low) == high + y exactly */
        const pair step = host_fast_two_sum(a[i].x, y[i]);
        assert_true((long double)step.x + step.y == (long double)a[i].x + y[i]);
    }
}

static void test_composite_add(void **state)
{
    (void)state;
    static pair x[COUNT], y[COUNT], out[COUNT];
    static float a[COUNT], b[COUNT];
    make_operands(a, b, 0);
    for (size_t i = 0; i < COUNT; ++i) {
        /* half plain floats (value, 0), half with error parts */
        const int plain = i % 2 == 0;
        x[i] = (pair){a[i], plain ? 0.0f : a[i] * 1e-8f};
        y[i] = (pair){b[i], plain ? 0.0f : b[i] * -3e-9f};
    }
    arg args[] = {{IN, x, sizeof x}, {IN, y, sizeof y}, {OUT, out, sizeof out}};
    run("test_composite_add", COUNT, args, 3);
    for (size_t i = 0; i < COUNT; ++i) {
        if (!same_bits(out[i], host_composite_add(x[i], y[i])))
            fail_msg("composite_add differs from Taufer's Fig. 3 order at %zu", i);
        /* (a, 0) + (b, 0): the error is Knuth's two-sum error, so the sum is exact */
        if (i % 2 == 0)
            assert_true((long double)out[i].x + out[i].y == (long double)a[i] + b[i]);
    }
}

/* Narumi: the exact contribution q(y) of one term in units of 2^(e-46): y's nearest multiple of
 * the high part's ulp (2^24 units), plus the rest rounded to nearest, ties to even (the default
 * rounding mode of nearbyintl), as the device's convert_int_rte. */
static int64_t narumi_q(float y, int e)
{
    const long double units = ldexpl((long double)y, 46 - e); /* exact */
    const long double ulp = ldexpl(1.0L, 24);
    const long double nearest = nearbyintl(units / ulp) * ulp;
    const long double rest = units - nearest;
    return (int64_t)nearest + (int64_t)nearbyintl(rest);
}

static int64_t narumi_units(const uint32_t *packed, int e)
{
    float hs;
    memcpy(&hs, &packed[0], sizeof hs);
    const int32_t li = (int32_t)packed[1];
    assert_true(li >= 0 && li < (1 << 24)); /* normalized */
    const long double high = ldexpl((long double)hs - ldexpl(3.0L, e), 46 - e);
    return (int64_t)high + li;
}

static void run_narumi(const float *terms, int count, int e, uint32_t out[6])
{
    const float large = (float)ldexp(3.0, e), factor = (float)ldexp(1.0, 46 - e);
    arg args[] = {{IN, (void *)terms, (size_t)count * sizeof *terms},
                  {VALUE, &count, sizeof count},
                  {VALUE, (void *)&large, sizeof large},
                  {VALUE, (void *)&factor, sizeof factor},
                  {OUT, out, 6 * sizeof *out}};
    run("test_narumi_sequence", 1, args, 5);
}

static void test_narumi_renormalization(void **state)
{
    (void)state;
    enum { TERMS = 1000 };
    static float terms[TERMS];
    const int e = 3; /* LARGE = 24: partial sums must stay within +-4 */
    int64_t expected = 0;
    for (int k = 0; k < TERMS; ++k) {
        terms[k] =
            (float)(ldexp(fk_test_rng_uniform(&rng), -(int)(fk_test_rng_uniform(&rng) * 30)) *
                    (k % 2 ? 1 : -1) * 8.0 / TERMS);
        expected += narumi_q(terms[k], e);
    }
    uint32_t out[6];
    run_narumi(terms, TERMS, e, out);
    assert_int_equal(out[4], 0);
    if (narumi_units(out, e) != expected)
        fail_msg("narumi sum %lld units, exact fixed-point sum %lld",
                 (long long)narumi_units(out, e), (long long)expected);
    assert_memory_equal(&out[0], &out[2], 8); /* merge of the halves: the same bits */
    assert_true(fk__decode_narumi(out[0], out[1], ldexp(3.0, e)) ==
                ldexp((double)expected, e - 46));

    /* 1,000 terms of exactly half an ulp of the high part: every addition is a tie that rounds to
     * the even high part and leaves +2^23 in li. 128 of them reach 2^30: with LOWER_SHIFT 7
     * (li kept below 2^25) 128 such additions would overflow int32. */
    const float half_ulp = (float)ldexp(1.0, e - 23);
    for (int k = 0; k < TERMS; ++k)
        terms[k] = half_ulp;
    run_narumi(terms, TERMS, e, out);
    assert_int_equal(out[4], 0);
    assert_true(narumi_units(out, e) == (int64_t)TERMS << 23);
    assert_memory_equal(&out[0], &out[2], 8);
}

static void run_fixed64(const float *terms, int count, const fk_accum_params *params, float poison,
                        int64_t out[4])
{
    const cl_float2 scale_limit = {{params->acc_param[0], params->acc_param[1]}};
    arg args[] = {{IN, (void *)terms, (size_t)count * sizeof *terms},
                  {VALUE, &count, sizeof count},
                  {VALUE, (void *)&scale_limit, sizeof scale_limit},
                  {VALUE, &poison, sizeof poison},
                  {OUT, out, 4 * sizeof *out}};
    run("test_fixed64_sequence", 1, args, 5);
}

static void test_fixed64_conversion_and_overflow(void **state)
{
    (void)state;
    enum { TERMS = 2000 };
    static float terms[TERMS];
    double max_term = 0;
    for (int k = 0; k < TERMS; ++k) {
        terms[k] = random_float(20);
        if (fabs(terms[k]) > max_term)
            max_term = fabs(terms[k]);
    }
    terms[7] = (float)max_term * 0.5f; /* rounding ties at the scale */
    fk_accum_bound bound = {.max_term = max_term, .max_sum = 0, .count = TERMS};
    fk_accum_params params;
    assert_true(fk__choose_fixed64(&bound, &params));
    fesetround(FE_TONEAREST);
    int64_t expected = 0;
    for (int k = 0; k < TERMS; ++k)
        expected += llrint((double)terms[k] * params.scale); /* exact: a power-of-two scale */
    int64_t out[4];
    run_fixed64(terms, TERMS, &params, params.acc_param[1], out);
    assert_true(out[0] == expected);
    assert_true(out[1] == expected);
    assert_true(out[2] == INT64_MIN); /* a term at the limit: the sticky sentinel... */
    assert_true(out[3] == INT64_MIN); /* ...survives more terms and a merge */
    uint32_t lo = (uint32_t)(uint64_t)out[2], hi = (uint32_t)((uint64_t)out[2] >> 32);
    assert_true(fk__fixed64_overflowed(lo, hi));
    assert_true(isnan(fk__decode_fixed64(lo, hi, params.scale)));
    lo = (uint32_t)(uint64_t)out[0];
    hi = (uint32_t)((uint64_t)out[0] >> 32);
    assert_false(fk__fixed64_overflowed(lo, hi));
    assert_true(fk__decode_fixed64(lo, hi, params.scale) == (double)expected / params.scale);

    run_fixed64(terms, TERMS, &params, NAN, out);
    assert_true(out[2] == INT64_MIN);
    run_fixed64(terms, TERMS, &params, INFINITY, out);
    assert_true(out[2] == INT64_MIN);
    /* just below the limit is fine: the sum stays exact */
    const float below = nextafterf(params.acc_param[1], 0.0f) / params.acc_param[0];
    run_fixed64(terms, TERMS, &params, below, out);
    assert_true(out[2] == llrint((double)below * params.scale));
}

/* fixed64's accuracy from its quantum. The host's scale is the one the accumulator's contract
 * gives (cl/accum/fixed64.clh: 2^k the largest power of two with max|term| 2^k < L/2, L =
 * 2^(62 - ceil(log2 N))), derived here from the terms alone, and with it the quantum q = 2^-k:
 * a sum of N terms, each rounded to the nearest multiple of q, is within N q / 2 of the exact sum,
 * and a single term within q / 2. The term (2m + 1) q is exact at that quantum, while at a scale
 * one bit coarser it is a tie, rounded (to even) by a whole q: any draw tells the two apart. */
static void test_fixed64_quantum(void **state)
{
    (void)state;
    enum { TERMS = 1000, DRAWS = 8 };
    static float terms[TERMS];
    for (int draw = 0; draw < DRAWS; ++draw) {
        const int count = 2 + (int)(fk_test_rng_uniform(&rng) * (TERMS - 1));
        const int range = 1 + (int)(fk_test_rng_uniform(&rng) * 30);
        double max_term = 0;
        for (int k = 0; k < count; ++k) {
            terms[k] = random_float(range);
            max_term = fmax(max_term, fabs(terms[k]));
        }
        int bits = 0;
        while ((1 << bits) < count)
            ++bits;
        const double half_limit = ldexp(1.0, 62 - bits - 1);
        int k = 0;
        while (ldexp(max_term, k + 1) < half_limit)
            ++k;
        while (!(ldexp(max_term, k) < half_limit))
            --k;
        const double quantum = ldexp(1.0, -k);

        fk_accum_bound bound = {.max_term = max_term, .max_sum = 0, .count = (size_t)count};
        fk_accum_params params;
        assert_true(fk__choose_fixed64(&bound, &params));
        int64_t out[4];
        run_fixed64(terms, count, &params, 0.0f, out);
        /* The error in units of q, exactly: the sum can exceed 2^53 q, where a double (and, for
         * large N, a long double sum of the terms) no longer holds it. Each term times 2^k is
         * exact in double; its integer part sums exactly in int64 (|sum| < 2^62), the fractions
         * (below 1 each) in double, far below 1. The device's integer, at its own scale, in units
         * of q: a shift of an int64, exact in long double (64-bit significand). */
        int64_t whole = 0;
        double fractions = 0;
        for (int t = 0; t < count; ++t) {
            const double scaled = ldexp((double)terms[t], k);
            const double integral = trunc(scaled);
            whole += (int64_t)integral;
            fractions += scaled - integral;
        }
        const long double device = ldexpl((long double)out[0], k - params.exponent);
        const double error = fabs((double)(device - (long double)whole) - fractions);
        if (!(error <= (double)count / 2))
            fail_msg("draw %d: %d terms, largest %g: error %g q, above N / 2 q (q = 2^%d)", draw,
                     count, max_term, error, -k);

        /* one odd multiple of q: below 2^23 q, a float, and below max|term| >= 2^50 q */
        const float odd = (float)ldexp(2.0 * floor(fk_test_rng_uniform(&rng) * 0x1p22) + 1.0, -k);
        assert_true(ldexp((double)odd, k) < 0x1p24 && fabs((double)odd) <= max_term);
        run_fixed64(&odd, 1, &params, 0.0f, out);
        const double single = (double)out[0] / params.scale;
        if (!(fabs(single - (double)odd) <= quantum / 2))
            fail_msg("draw %d: the term %a came back as %a: error %g, above q / 2 = %g", draw,
                     (double)odd, single, fabs(single - (double)odd), quantum / 2);
    }
}

/* A term exactly at the limit L (as a multiple of the scale), of either sign, is an overflow:
 * cl/accum/fixed64.clh's contract ("at or above L"), which the lane form's flag (the largest |x|
 * >= L) keeps too, so the scalar and lane forms must draw the line at the same place. */
static void test_fixed64_limit_exact(void **state)
{
    (void)state;
    enum { TERMS = 100 };
    float terms[TERMS];
    double max_term = 0;
    for (int k = 0; k < TERMS; ++k) {
        terms[k] = random_float(10);
        max_term = fmax(max_term, fabs(terms[k]));
    }
    fk_accum_bound bound = {.max_term = max_term, .max_sum = 0, .count = TERMS};
    fk_accum_params params;
    assert_true(fk__choose_fixed64(&bound, &params));
    const float at_limit = params.acc_param[1] / params.acc_param[0]; /* powers of two: exact */
    assert_true((double)at_limit * params.scale == (double)params.acc_param[1]);
    int64_t out[4];
    run_fixed64(terms, TERMS, &params, at_limit, out);
    assert_true(out[2] == INT64_MIN);
    run_fixed64(terms, TERMS, &params, -at_limit, out);
    assert_true(out[2] == INT64_MIN);
}

/* The host's choices: fixed64 leaves room for N terms, LARGE bounds every partial sum. */
static void test_host_parameters(void **state)
{
    (void)state;
    const double terms[] = {1e-30, 3e-7, 0.75, 1.0, 1.5, 12345.0, 1e20, 3e38};
    const size_t counts[] = {1, 2, 1000, 65536, (size_t)1 << 30};
    for (size_t t = 0; t < sizeof terms / sizeof terms[0]; ++t)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
            fk_accum_bound bound = {terms[t], terms[t] * 3.0, counts[c]};
            fk_accum_params params;
            assert_true(fk__choose_fixed64(&bound, &params));
            const double limit = params.acc_param[1];
            assert_true((double)counts[c] * limit <= ldexp(1.0, 62));
            assert_true(terms[t] * params.scale < limit / 2 || params.exponent == 127);
            assert_true(terms[t] * params.scale >= limit / 8 || params.exponent == 127);
            if (terms[t] < 1e38) { /* LARGE must stay a float with room */
                assert_true(fk__choose_narumi(&bound, &params));
                const double half = ldexp(1.0, params.exponent - 1);
                assert_true(half >= bound.max_sum);
                assert_true(params.scale == 3.0 * ldexp(1.0, params.exponent));
                assert_true((double)params.acc_param[1] * params.acc_param[2] == 1.0);
            }
        }
    fk_accum_bound bad = {NAN, 0, 10};
    fk_accum_params params;
    assert_false(fk__choose_fixed64(&bad, &params));
    assert_false(fk__choose_large(&bad, &params));
    bad.max_term = INFINITY;
    assert_false(fk__choose_fixed64(&bad, &params));
    fk_accum_bound zero = {0, 0, 10};
    assert_true(fk__choose_fixed64(&zero, &params));
    assert_true(fk__choose_large(&zero, &params));
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_sum),
        cmocka_unit_test(test_fast_two_sum),
        cmocka_unit_test(test_ti_add),
        cmocka_unit_test(test_nitadori_add),
        cmocka_unit_test(test_composite_add),
        cmocka_unit_test(test_narumi_renormalization),
        cmocka_unit_test(test_fixed64_conversion_and_overflow),
        cmocka_unit_test(test_fixed64_quantum),
        cmocka_unit_test(test_fixed64_limit_exact),
        cmocka_unit_test(test_host_parameters),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
