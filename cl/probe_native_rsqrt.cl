/* forcekit: native_rsqrt on given inputs, for the host's accuracy check (src/core/probes/lanes_rsqrt.c).
 * native_ functions have an implementation-defined accuracy; the CPU lane loop uses native_rsqrt
 * plus one Newton step only where this probe shows it to be at least an 11-bit estimate. */
__kernel void fk_probe_native_rsqrt(__global const float *restrict x, __global float *restrict y)
{
    const size_t i = get_global_id(0);
    y[i] = native_rsqrt(x[i]);
}
