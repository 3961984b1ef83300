/*
 * The synthetic suite of Taufer et al. (sec. V), on the device, with the same building blocks the
 * accumulators use (accum/eft.clh).
 *
 * Global summation (Tables II-V): work-item t of T sums the contiguous slice [t n / T, (t+1) n / T)
 * of the values in one representation and writes its partial sum (8 bytes); the host adds the
 * partial sums in the same representation.
 *
 * Do/undo (Fig. 7-8, Table VI): one work-item repeats x = (x op y) op^-1 y with a fresh y each
 * iteration. y comes from the same float generator in every kernel, so all representations see the
 * same operands.
 *
 * FK_FP64 (default 0): 1 when the device has double precision, adding the double kernels.
 */
#ifndef FK_FP64
#define FK_FP64 0
#endif

#include "accum/eft.clh"

#if FK_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define FK_SLICE_BEGIN(t) (int)(((long)(t) * count) / threads)

__kernel void fk_sum_float(__global const float *values, const int count, const int threads,
                           __global uint2 *partial)
{
    const int t = (int)get_global_id(0);
    float sum = 0.0f;
    for (int i = FK_SLICE_BEGIN(t); i < FK_SLICE_BEGIN(t + 1); ++i)
        sum += values[i];
    partial[t] = (uint2)(as_uint(sum), 0u);
}

__kernel void fk_sum_composite(__global const float *values, const int count, const int threads,
                               __global uint2 *partial)
{
    const int t = (int)get_global_id(0);
    float2 sum = (float2)(0.0f, 0.0f);
    for (int i = FK_SLICE_BEGIN(t); i < FK_SLICE_BEGIN(t + 1); ++i)
        sum = fk_composite_add(sum, (float2)(values[i], 0.0f));
    partial[t] = as_uint2(sum);
}

__kernel void fk_sum_ti(__global const float *values, const int count, const int threads,
                        __global uint2 *partial)
{
    const int t = (int)get_global_id(0);
    float2 sum = (float2)(0.0f, 0.0f);
    for (int i = FK_SLICE_BEGIN(t); i < FK_SLICE_BEGIN(t + 1); ++i)
        sum = fk_ti_add(sum, values[i]);
    partial[t] = as_uint2(sum);
}

/* scale_limit: the fixed-point scale 2^k and per-term limit, chosen by the host as for forces. */
__kernel void fk_sum_fixed64(__global const float *values, const int count, const int threads,
                             const float2 scale_limit, __global uint2 *partial)
{
    const int t = (int)get_global_id(0);
    fk_fixed64 sum = fk_fixed64_zero();
    for (int i = FK_SLICE_BEGIN(t); i < FK_SLICE_BEGIN(t + 1); ++i)
        sum = fk_fixed64_add(sum, values[i], scale_limit.x, scale_limit.y);
    partial[t] = as_uint2(fk_fixed64_value(sum));
}

#if FK_FP64
__kernel void fk_sum_double(__global const float *values, const int count, const int threads,
                            __global uint2 *partial)
{
    const int t = (int)get_global_id(0);
    double sum = 0.0;
    for (int i = FK_SLICE_BEGIN(t); i < FK_SLICE_BEGIN(t + 1); ++i)
        sum += (double)values[i];
    partial[t] = as_uint2(sum);
}
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Do/undo. range = (y_low, y_high); divide_first 0: x * y / y, 1: x / y * y. */

static inline float fk_next_y(uint *state, const float2 range)
{
    /* xorshift32, 24 bits to a float in [0, 1): exact, so every device draws the same y */
    uint s = *state;
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    *state = s;
    const float unit = (float)(s >> 8) * (1.0f / 16777216.0f);
    return range.x + (range.y - range.x) * unit;
}

__kernel void fk_doundo_float(const float x0, const float2 range, const uint seed,
                              const int iterations, const int divide_first, __global uint2 *out)
{
    uint state = seed;
    float x = x0;
    for (int k = 0; k < iterations; ++k) {
        const float y = fk_next_y(&state, range);
        x = divide_first ? (x / y) * y : (x * y) / y;
    }
    out[0] = (uint2)(as_uint(x), 0u);
}

__kernel void fk_doundo_composite(const float x0, const float2 range, const uint seed,
                                  const int iterations, const int divide_first,
                                  __global uint2 *out)
{
    uint state = seed;
    float2 x = (float2)(x0, 0.0f);
    for (int k = 0; k < iterations; ++k) {
        const float2 y = (float2)(fk_next_y(&state, range), 0.0f);
        x = divide_first ? fk_composite_mul(fk_composite_div(x, y), y)
                         : fk_composite_div(fk_composite_mul(x, y), y);
    }
    out[0] = as_uint2(x);
}

#if FK_FP64
__kernel void fk_doundo_double(const float x0, const float2 range, const uint seed,
                               const int iterations, const int divide_first, __global uint2 *out)
{
    uint state = seed;
    double x = (double)x0;
    for (int k = 0; k < iterations; ++k) {
        const double y = (double)fk_next_y(&state, range);
        x = divide_first ? (x / y) * y : (x * y) / y;
    }
    out[0] = as_uint2(x);
}
#endif
