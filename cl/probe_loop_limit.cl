/* forcekit: does a kernel's loop run to the end on this device? (src/core/probes/loop_limit.c)
 * Mesa 22.3's llvmpipe (Rusticl) stops any loop after 65,535 iterations without an error
 * (tests/rusticl/loop_limit.c); a pair loop cut short there would return wrong forces with success.
 * One work-item writes out[t] = t + 1 for every t < n: a store per iteration, so no compiler can
 * replace the loop by its closed form. */
__kernel void fk_probe_loop_limit(__global uint *restrict out, const uint n)
{
    if (get_global_id(0) != 0)
        return;
    for (uint t = 0; t < n; ++t)
        out[t] = t + 1;
}
