/* New positions from the caller's doubles, converted on the device (issue #16): the evaluation's
 * pinned array of 3 x N doubles (fk_eval_positions_buffer) goes to the device by DMA and this
 * kernel writes the float4 particles (x, y, z and the mass or charge kept from the current ones)
 * into a second buffer; the host swaps the two only when no coordinate was refused, so a refused
 * update leaves the previous particles in place, as fk_eval_update_positions promises. A
 * coordinate is refused when it is NaN, infinite or beyond float's range: each converts (rounding
 * to nearest, as the host's (float) does) to NaN or infinity. The first refused particle goes to
 * *first_bad (atomic_min; the host sets it to count first). The double form needs fp64. */
/* One particle: the new coordinates, or (refused) the current particle unchanged. */
static void fk_positions_store(const uint i, const float x, const float y, const float z,
                               global const float4 *current, global float4 *next,
                               global int *first_bad)
{
    if (!(fabs(x) <= FLT_MAX) || !(fabs(y) <= FLT_MAX) || !(fabs(z) <= FLT_MAX)) {
        atomic_min(first_bad, (int)i);
        next[i] = current[i];
        return;
    }
    next[i] = (float4)(x, y, z, current[i].w);
}

/* The caller's float4 (fk_eval_update_positions_cl): the fourth value is not the caller's to set
 * (masses and charges stay those of set_particles). */
kernel void fk_positions_from_float4(const uint count, global const float4 *position,
                                     global const float4 *current, global float4 *next,
                                     global int *first_bad)
{
    const uint i = get_global_id(0);
    if (i < count)
        fk_positions_store(i, position[i].x, position[i].y, position[i].z, current, next,
                           first_bad);
}

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
/* 3 doubles per particle: the pinned array of fk_eval_positions_buffer, or the caller's buffer. */
kernel void fk_positions_from_double(const uint count, global const double *position,
                                     global const float4 *current, global float4 *next,
                                     global int *first_bad)
{
    const uint i = get_global_id(0);
    if (i < count)
        fk_positions_store(i, (float)position[3 * (size_t)i], (float)position[3 * (size_t)i + 1],
                           (float)position[3 * (size_t)i + 2], current, next, first_bad);
}
#endif
