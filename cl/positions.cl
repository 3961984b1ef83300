/* New positions from the caller's doubles, converted on the device (issue #16): the evaluation's
 * pinned array of 3 x N doubles (fk_eval_positions_buffer) goes to the device by DMA and this
 * kernel writes the float4 particles (x, y, z and the mass or charge kept from the current ones)
 * into a second buffer; the host swaps the two only when no coordinate was refused, so a refused
 * update leaves the previous particles in place, as fk_eval_update_positions promises. A
 * coordinate is refused when it is NaN, infinite or beyond float's range: each converts (rounding
 * to nearest, as the host's (float) does) to NaN or infinity. The first refused particle goes to
 * *first_bad (atomic_min; the host sets it to count first). The double form needs fp64. */
/*
 * With FK_DS_POSITIONS=1 (the evaluation's double-single positions, cl/forces/point.clh) the
 * particle buffers hold two records per particle, hi at 2i and lo at 2i + 1; lx, ly, lz are the
 * low parts (0 from float4 input) and the mass or charge keeps both of its parts.
 */
#ifndef FK_DS_POSITIONS
#define FK_DS_POSITIONS 0
#endif

/* One particle: the new coordinates, or (refused) the current particle unchanged. */
static void fk_positions_store(const uint i, const float x, const float y, const float z,
                               const float lx, const float ly, const float lz,
                               global const float4 *current, global float4 *next,
                               global int *first_bad)
{
#if FK_DS_POSITIONS
    const size_t hi = 2 * (size_t)i, lo = hi + 1;
#else
    const size_t hi = i;
    (void)lx, (void)ly, (void)lz;
#endif
    if (!(fabs(x) <= FLT_MAX) || !(fabs(y) <= FLT_MAX) || !(fabs(z) <= FLT_MAX)) {
        atomic_min(first_bad, (int)i);
        next[hi] = current[hi];
#if FK_DS_POSITIONS
        next[lo] = current[lo];
#endif
        return;
    }
    next[hi] = (float4)(x, y, z, current[hi].w);
#if FK_DS_POSITIONS
    next[lo] = (float4)(lx, ly, lz, current[lo].w);
#endif
}

/* The caller's float4 (fk_eval_update_positions_cl): the fourth value is not the caller's to set
 * (masses and charges stay those of set_particles). */
kernel void fk_positions_from_float4(const uint count, global const float4 *position,
                                     global const float4 *current, global float4 *next,
                                     global int *first_bad)
{
    const uint i = get_global_id(0);
    if (i < count)
        fk_positions_store(i, position[i].x, position[i].y, position[i].z, 0.0f, 0.0f, 0.0f,
                           current, next, first_bad);
}

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
/* 3 doubles per particle: the pinned array of fk_eval_positions_buffer, or the caller's buffer. */
kernel void fk_positions_from_double(const uint count, global const double *position,
                                     global const float4 *current, global float4 *next,
                                     global int *first_bad)
{
    const uint i = get_global_id(0);
    if (i >= count)
        return;
    const double3 v = vload3(i, position);
    const float3 h = convert_float3(v); /* round to nearest, as the host's (float) */
    /* The low parts: v - h is exact in double; NaN where h is infinite, and then refused. */
    const float3 l = convert_float3(v - convert_double3(h));
    fk_positions_store(i, h.x, h.y, h.z, l.x, l.y, l.z, current, next, first_bad);
}
#endif
