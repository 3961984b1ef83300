/* Device unit tests of the accumulators' building blocks (tests/test_accum.c): each kernel applies
 * one block of accum/eft.clh to arrays, and the host compares with exact results. Built exactly as
 * the accumulators are: no -cl-fast-relaxed-math, no -cl-mad-enable, FP_CONTRACT OFF. */
#include "accum/eft.clh"

__kernel void test_two_sum(__global const float *a, __global const float *b, __global float2 *out)
{
    const size_t i = get_global_id(0);
    out[i] = fk_two_sum(a[i], b[i]);
}

__kernel void test_fast_two_sum(__global const float *a, __global const float *b,
                                __global float2 *out)
{
    const size_t i = get_global_id(0);
    out[i] = fk_fast_two_sum(a[i], b[i]);
}

__kernel void test_ti_add(__global const float2 *a, __global const float *y, __global float2 *out)
{
    const size_t i = get_global_id(0);
    out[i] = fk_ti_add(a[i], y[i]);
}

__kernel void test_nitadori_add(__global const float2 *a, __global const float *y,
                                __global float2 *out)
{
    const size_t i = get_global_id(0);
    out[i] = fk_nitadori_add(a[i], y[i]);
}

__kernel void test_composite_add(__global const float2 *x, __global const float2 *y,
                                 __global float2 *out)
{
    const size_t i = get_global_id(0);
    out[i] = fk_composite_add(x[i], y[i]);
}

/* One work-item: the whole sequence through fk_narumi_add, and the two halves merged.
 * out[0], out[1]: (hs bits, li) of the whole and of the merge; out[2].x: 1 when li ever left
 * [-2^30, 2^30 + 2^24) just before a renormalization (it must not). */
__kernel void test_narumi_sequence(__global const float *terms, const int count, const float large,
                                   const float lower_factor, __global uint2 *out)
{
    fk_narumi whole = {0.0f, 0, 0}, first = {0.0f, 0, 0}, second = {0.0f, 0, 0};
    int out_of_range = 0;
    for (int k = 0; k < count; ++k) {
        whole = fk_narumi_add(whole, terms[k], large, lower_factor);
        out_of_range |= whole.li < -(1 << 30) || whole.li >= (1 << 30) + (1 << 24);
        if (k < count / 2)
            first = fk_narumi_add(first, terms[k], large, lower_factor);
        else
            second = fk_narumi_add(second, terms[k], large, lower_factor);
    }
    const fk_narumi normal = fk_narumi_renormalize(whole);
    const fk_narumi merged = fk_narumi_merge(first, second);
    out[0] = (uint2)(as_uint(normal.hs), as_uint(normal.li));
    out[1] = (uint2)(as_uint(merged.hs), as_uint(merged.li));
    out[2] = (uint2)((uint)out_of_range, 0u);
}

/* One work-item: the sequence through fk_fixed64_add, the halves merged, and the sum after
 * appending `poison` (a term at or above the limit, or NaN) then more terms. */
__kernel void test_fixed64_sequence(__global const float *terms, const int count,
                                    const float2 scale_limit, const float poison,
                                    __global long *out)
{
    fk_fixed64 whole = fk_fixed64_zero(), first = fk_fixed64_zero(), second = fk_fixed64_zero();
    for (int k = 0; k < count; ++k) {
        whole = fk_fixed64_add(whole, terms[k], scale_limit.x, scale_limit.y);
        if (k < count / 2)
            first = fk_fixed64_add(first, terms[k], scale_limit.x, scale_limit.y);
        else
            second = fk_fixed64_add(second, terms[k], scale_limit.x, scale_limit.y);
    }
    out[0] = fk_fixed64_value(whole);
    out[1] = fk_fixed64_value(fk_fixed64_merge(first, second));
    fk_fixed64 poisoned = fk_fixed64_add(whole, poison, scale_limit.x, scale_limit.y);
    for (int k = 0; k < count; ++k)
        poisoned = fk_fixed64_add(poisoned, -terms[k], scale_limit.x, scale_limit.y);
    out[2] = fk_fixed64_value(poisoned);
    /* the flag survives a round trip through the packed value, then a merge */
    out[3] = fk_fixed64_value(
        fk_fixed64_merge(first, fk_fixed64_from_value(fk_fixed64_value(poisoned))));
}
