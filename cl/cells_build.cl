/*
 * forcekit: building the cell lists on the device (van Meel et al., sec. 3); src/cells.c drives
 * these kernels and cl/cells.cl runs the pair loop over them. Nothing here depends on the force law
 * or the accumulator, so this program is compiled once per context, not per evaluation variant.
 *
 * Layout: van Meel's fixed arrays of placeholders. Cell c owns slots [c * capacity, (c + 1) *
 * capacity) of `slots`, which hold particle indices (not copies of the particles: positions change
 * every step while the assignment is kept within the skin, and the index keeps exclusions on the
 * fly and the self test exact); count[c] is the number of particles binned into c, which may exceed
 * the capacity: those particles are counted in stats[FK_CELLS_OVERFLOW], and the host grows the
 * capacity and bins again, so none is ever dropped.
 *
 * Per build: fk_cells_check (displacement since the last build, particles far outside a periodic
 * box, the bounding box of open systems), fk_cells_bin, fk_cells_finish (sorts each cell by
 * particle index so that sums run in a fixed order; the largest count; the pairs the loop will
 * examine).
 */

/* No contraction: the displacement check must round the same way in every program. */
#pragma OPENCL FP_CONTRACT OFF

#include "cells_grid.clh"

/* Work-group size of the build kernels (their local reductions); the host uses the same value. */
#ifndef FK_CELLS_AUX_WG
#define FK_CELLS_AUX_WG 64
#endif

/* stats[]: what the build reports to the host (src/cells.c has the same indices). */
#define FK_CELLS_MOVED 0     /* 1: a particle moved more than skin / 2 since the last build */
#define FK_CELLS_BAD 1       /* smallest index of a particle far outside the periodic box */
#define FK_CELLS_OVERFLOW 2  /* particles that found their cell full */
#define FK_CELLS_MAX_COUNT 3 /* the largest number of particles binned into one cell */
#define FK_CELLS_PAIRS_LO 4  /* pairs the cell loop examines per evaluation, 64 bits */
#define FK_CELLS_PAIRS_HI 5
#define FK_CELLS_MIN 6  /* bounding box, x y z, floats as order-preserving ints */
#define FK_CELLS_MAX 9

/* A float as an int with the same order (for atomic_min/max); the host decodes it. */
static inline int fk_cells_ordered(const float x)
{
    const int bits = as_int(x);
    return bits >= 0 ? bits : bits ^ 0x7fffffff;
}

static inline int fk_cells_axis(const float x, const float origin, const float inv_size,
                                const int n, const int periodic)
{
    const int t = (int)floor((x - origin) * inv_size);
    if (periodic) {
        const int k = t % n; /* positions lie within one box length of the box: t is small */
        return k < 0 ? k + n : k;
    }
    return clamp(t, 0, n - 1);
}

/*
 * Per particle: the squared displacement since the last build against threshold2 = (skin / 2)^2
 * (minimum image in a periodic box), particles more than one box length outside a periodic box,
 * and the bounding box (open systems; work-group reduction, then one atomic per group and axis).
 */
__kernel __attribute__((reqd_work_group_size(FK_CELLS_AUX_WG, 1, 1))) void
fk_cells_check(const int n, __global const float4 *restrict body,
               __global const float4 *restrict reference, const int has_reference,
               const float threshold2, const float4 box, const int periodic,
               __global int *restrict stats)
{
    const int i = (int)get_global_id(0);
    const int lid = (int)get_local_id(0);
    const float4 p = body[min(i, n - 1)];
    if (i < n) {
        if (periodic) {
            const int outside = p.x < -box.x || p.x >= 2.0f * box.x || p.y < -box.y ||
                                p.y >= 2.0f * box.y || p.z < -box.z || p.z >= 2.0f * box.z;
            if (outside)
                atomic_min(&stats[FK_CELLS_BAD], i);
        }
        if (has_reference) {
            float4 d = p - reference[i];
            if (periodic) {
                d.x -= box.x * rint(d.x / box.x);
                d.y -= box.y * rint(d.y / box.y);
                d.z -= box.z * rint(d.z / box.z);
            }
            if (d.x * d.x + d.y * d.y + d.z * d.z > threshold2)
                stats[FK_CELLS_MOVED] = 1; /* every writer writes 1: no atomic needed */
        }
    }
    if (periodic)
        return; /* uniform over the whole launch: no work-group is left at a barrier */
    __local float3 low[FK_CELLS_AUX_WG], high[FK_CELLS_AUX_WG];
    low[lid] = p.xyz; /* items past n repeat particle n - 1, which changes nothing */
    high[lid] = p.xyz;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = FK_CELLS_AUX_WG / 2; stride > 0; stride /= 2) {
        if (lid < stride) {
            low[lid] = fmin(low[lid], low[lid + stride]);
            high[lid] = fmax(high[lid], high[lid + stride]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        atomic_min(&stats[FK_CELLS_MIN], fk_cells_ordered(low[0].x));
        atomic_min(&stats[FK_CELLS_MIN + 1], fk_cells_ordered(low[0].y));
        atomic_min(&stats[FK_CELLS_MIN + 2], fk_cells_ordered(low[0].z));
        atomic_max(&stats[FK_CELLS_MAX], fk_cells_ordered(high[0].x));
        atomic_max(&stats[FK_CELLS_MAX + 1], fk_cells_ordered(high[0].y));
        atomic_max(&stats[FK_CELLS_MAX + 2], fk_cells_ordered(high[0].z));
    }
}

/* Per particle: its cell, and a placeholder there if one is free (count[] must start at 0). */
__kernel void fk_cells_bin(const int n, __global const float4 *restrict body, const float4 origin,
                           const float4 inv_size, const int4 grid, const int capacity,
                           __global int *restrict count, __global int *restrict slots,
                           __global int *restrict stats)
{
    const int i = (int)get_global_id(0);
    if (i >= n)
        return;
    const float4 p = body[i];
    const int kx = fk_cells_axis(p.x, origin.x, inv_size.x, grid.x, grid.w);
    const int ky = fk_cells_axis(p.y, origin.y, inv_size.y, grid.y, grid.w);
    const int kz = fk_cells_axis(p.z, origin.z, inv_size.z, grid.z, grid.w);
    const int c = (kz * grid.y + ky) * grid.x + kx;
    const int slot = atomic_inc(&count[c]);
    if (slot < capacity)
        slots[(size_t)c * (size_t)capacity + (size_t)slot] = i;
    else
        atomic_inc(&stats[FK_CELLS_OVERFLOW]);
}

/* Per cell: sort its placeholders; the largest count and the pairs examined per evaluation
 * (count of the cell times the counts of its neighbours, itself included) reduced per work-group,
 * then one atomic each. The 64-bit sum goes through two 32-bit atomics with an explicit carry, so
 * no 64-bit atomics extension is needed. */
__kernel __attribute__((reqd_work_group_size(FK_CELLS_AUX_WG, 1, 1))) void
fk_cells_finish(const int cells, const int4 grid, const int capacity,
                __global const int *restrict count, __global int *restrict slots,
                __global int *restrict stats)
{
    const int c = (int)get_global_id(0);
    const int lid = (int)get_local_id(0);
    int largest = 0;
    ulong pairs = 0;
    if (c < cells) {
        largest = count[c];
        const int m = min(largest, capacity);
        fk_cells_sort(slots + (size_t)c * (size_t)capacity, m);
        if (m > 0) {
            int2 rx, ry, rz;
            fk_cells_neighbour_ranges(c, grid, &rx, &ry, &rz);
            ulong partners = 0;
            for (int tz = rz.x; tz <= rz.y; ++tz)
                for (int ty = ry.x; ty <= ry.y; ++ty)
                    for (int tx = rx.x; tx <= rx.y; ++tx) {
                        const int nb = fk_cells_index(tx, ty, tz, grid);
                        partners += (ulong)min(count[nb], capacity);
                    }
            pairs = (ulong)m * partners;
        }
    }
    __local int local_max[FK_CELLS_AUX_WG];
    __local ulong local_pairs[FK_CELLS_AUX_WG];
    local_max[lid] = largest;
    local_pairs[lid] = pairs;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = FK_CELLS_AUX_WG / 2; stride > 0; stride /= 2) {
        if (lid < stride) {
            local_max[lid] = max(local_max[lid], local_max[lid + stride]);
            local_pairs[lid] += local_pairs[lid + stride];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        atomic_max(&stats[FK_CELLS_MAX_COUNT], local_max[0]);
        const ulong sum = local_pairs[0];
        volatile __global uint *lo = (volatile __global uint *)&stats[FK_CELLS_PAIRS_LO];
        volatile __global uint *hi = (volatile __global uint *)&stats[FK_CELLS_PAIRS_HI];
        const uint add = (uint)sum;
        const uint old = atomic_add(lo, add);
        atomic_add(hi, (uint)(sum >> 32) + (old + add < old ? 1u : 0u));
    }
}
