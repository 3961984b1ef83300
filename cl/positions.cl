/* New positions from the caller's doubles, converted on the device (issue #16): the evaluation's
 * pinned array of 3 x N doubles (fk_eval_positions_buffer) goes to the device by DMA and this
 * kernel writes the float4 particles (x, y, z and the mass or charge kept from the current ones)
 * into a second buffer; the host swaps the two only when no coordinate was refused, so a refused
 * update leaves the previous particles in place, as fk_eval_update_positions promises. A
 * coordinate is refused when it is NaN, infinite or beyond float's range: each converts (rounding
 * to nearest, as the host's (float) does) to NaN or infinity. The first refused particle goes to
 * *first_bad (atomic_min; the host sets it to count first). Built only for devices with fp64. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

kernel void fk_positions_from_double(const uint count, global const double *position,
                                     global const float4 *current, global float4 *next,
                                     global int *first_bad)
{
    const uint i = get_global_id(0);
    if (i >= count)
        return;
    const float x = (float)position[3 * (size_t)i];
    const float y = (float)position[3 * (size_t)i + 1];
    const float z = (float)position[3 * (size_t)i + 2];
    if (!(fabs(x) <= FLT_MAX) || !(fabs(y) <= FLT_MAX) || !(fabs(z) <= FLT_MAX)) {
        atomic_min(first_bad, (int)i);
        next[i] = current[i];
        return;
    }
    next[i] = (float4)(x, y, z, current[i].w);
}
