/*
 * forcekit: building Verlet neighbour lists on the device from the cell grid. The grid comes from
 * cl/cells_build.cl (src/core/loops/cell_grid.c), src/core/loops/neighbors.c drives these kernels, and
 * cl/neighbors.cl is the pair loop over the lists. Nothing here depends on the force law or the
 * accumulator, so this program is compiled once per context.
 *
 * The lists hold, for each particle i, every other particle j closer than the list radius R
 * (cutoff + skin plus the grid's rounding margin) at the build; the pair loop reuses them until
 * some particle has moved more than skin / 2 (the grid's check), and a pair closer than the cutoff
 * then was closer than R at the build. Candidates are the particles of the neighbouring cells
 * (cells are at least R wide), visited in the grid's fixed order: the neighbour cells in
 * fk_cells_range order, each cell's placeholders by particle index (cells_build.cl sorts them).
 *
 * Storage: compressed rows, sized from an exact count. A count pass gives each particle its number
 * of partners, a prefix sum gives the offsets and the totals, the host allocates what was counted
 * (never a guess per particle, so nothing can overflow) and a fill pass repeats the count pass's
 * walk and writes the partners. One walk instead of two (src/core/loops/neighbors.c decides): the
 * count pass also stores each particle's partners of A, in the walk's order, into a row of
 * `row` slots (and a spare) of a scratch buffer (fk_neighbors_count_store), and after the prefix
 * sum fk_neighbors_compact copies the rows to their offsets and scatters the mirrors as the fill
 * would: the same lists, entry for entry. A row that overflows is counted all the same, and the
 * largest such count reported (stats[FK_NB_MAX_ROW]); the host then runs the fill pass instead. Two
 * lists per particle, A and B, with offsets offsets[i].x and offsets[i].y (offsets[n] holds the
 * totals): full lists (the accumulators whose sums must run per particle): A every partner, in the
 * walk's order; B empty. half lists (Newton's third law): A the partners j > i, in the walk's
 * order, whose pair terms the pair loop computes once for both particles, storing j's side at the
 * pair's place in A; B one entry per partner j < i: the mirror of the pair, its place in j's list
 * A, where i then finds its side of that pair. The fill writes A, and j's walk, writing pair (j, i)
 * at place p of its A, puts p into i's B at a slot taken with an atomic increment (any order),
 *     after which each B is sorted: mirrors are distinct, so the order, and hence the order of
 *     each particle's sum, is fixed.
 * Distances use the force laws' minimum image (d -= L rint(d / L)), which is exactly odd in d, so
 * i finds j exactly when j finds i: i counted as many lower partners as the mirrors it receives
 * (stats[FK_NB_MISSING] counts particles for which that fails: none, by construction; the host
 * refuses such lists).
 */

/* No contraction: the distance test must round the same way for (i, j) and (j, i). */
#pragma OPENCL FP_CONTRACT OFF

#include "cells_grid.clh"

/* Work-group size of the build kernels (their local reductions); the host uses the same value. */
#ifndef FK_CELLS_AUX_WG
#define FK_CELLS_AUX_WG 64
#endif
/* Elements of the prefix sum per work-item: a block of the scan is FK_CELLS_AUX_WG of them. */
#define FK_NB_SCAN_ITEMS 16
#define FK_NB_SCAN_BLOCK (FK_CELLS_AUX_WG * FK_NB_SCAN_ITEMS)

/* stats[]: what the build reports to the host (src/core/loops/neighbors.c has the same indices). */
#define FK_NB_MISSING 0 /* half lists: particles whose mirrors do not match their count (none) */
#define FK_NB_TOTAL_A 1 /* entries of the lists A, 64 bits: lo, hi */
#define FK_NB_TOTAL_B 3 /* entries of the lists B, 64 bits: lo, hi */
#define FK_NB_MAX_ROW 5 /* one walk: the largest count of A beyond the scratch row (0: none) */

/* rint(x) for |x| < 2^22, as two additions: x + 1.5 2^23 lies where the float spacing is 1, so
 * the addition rounds x to the nearest integer, ties to even, and subtracting 1.5 2^23 is exact.
 * The same value as rint (odd, like it), without the library call POCL 3.1 makes of rint: the
 * walks took 2.3 times as long with it (N = 16,384 in a periodic box). Needs FP_CONTRACT OFF
 * (above) and no fast-math, which this program is never built with. Here |x| < 3: positions lie
 * within one box length of the box. */
static inline float fk_nb_rint(const float x)
{
    const float magic = 0x1.8p23f;
    return (x + magic) - magic;
}

/* The squared distance of the pair with the force laws' minimum image (forces/molecular_pair.clh),
 * to the rounding the list radius's margin covers. */
static inline float fk_nb_distance2(const float4 pi, const float4 pj, const float4 box,
                                    const float4 inv_box, const int periodic)
{
    float dx = pi.x - pj.x, dy = pi.y - pj.y, dz = pi.z - pj.z;
    if (periodic) {
        dx -= box.x * fk_nb_rint(dx * inv_box.x);
        dy -= box.y * fk_nb_rint(dy * inv_box.y);
        dz -= box.z * fk_nb_rint(dz * inv_box.z);
    }
    return dx * dx + dy * dy + dz * dz;
}

/* 1: the one-walk build stores every candidate (see fk_nb_candidate); the host sets it on CPUs. */
#ifndef FK_NB_STORE_ALWAYS
#define FK_NB_STORE_ALWAYS 0
#endif

/* Placeholders (i-particles) per work-item of the walk: each candidate j read from the cells is
 * tested against all of them, as the cell loop's i-block does (on POCL the walk took twice as long
 * with one). */
#define FK_NB_WALK_I 4

/* What a walk does with its candidates: fill is a constant of each kernel. */
#define FK_NB_COUNT 0 /* count them */
#define FK_NB_FILL 1  /* write them at the counted offsets */
#define FK_NB_STORE 2 /* count them, and store those of A into the particle's scratch row */

/* One candidate j of placeholder i, in either walk: counted (count pass: into A, or B when it is
 * a lower partner of a half list) or written (fill pass: j into i's A at next_a and, for half
 * lists, the pair's place into j's B); FK_NB_STORE counts, and j goes to i's scratch row (at
 * next_a: the row's start) while the row has room. live 0: a repeated placeholder, which takes
 * nothing. */
static inline void fk_nb_candidate(const int fill, const int half_lists, const int live,
                                   const int i, const float4 pi, const int j, const float4 pj,
                                   const float radius2, const float4 box, const float4 inv_box,
                                   const int periodic, __global const uint2 *restrict offsets,
                                   __global int *restrict list_a, __global int *restrict list_b,
                                   __global int *restrict cursor, const int row, uint *next_a,
                                   int *in_a, int *in_b)
{
    const int within =
        live & (j != i) & (fk_nb_distance2(pi, pj, box, inv_box, periodic) < radius2);
    const int to_a = !half_lists | (j > i);
    if (fill == FK_NB_STORE) {
#if FK_NB_STORE_ALWAYS
        /* Every candidate written at the row's next free slot (row: a spare slot that takes what
         * falls past the row), which a partner then keeps by advancing in_a: no branch on the
         * distance test, which a CPU mispredicts (POCL, where the walk is scalar code). */
        if (live) /* a repeated placeholder's row is a live one's */
            list_a[*next_a + (uint)min(*in_a, row)] = j;
#else
        if (within && to_a && *in_a < row)
            list_a[*next_a + (uint)*in_a] = j;
#endif
        *in_a += within & to_a;
        *in_b += within & !to_a;
    } else if (!fill) { /* counted without branches: a tenth of them are taken */
        *in_a += within & to_a;
        *in_b += within & !to_a;
    } else if (within && to_a) {
        if (half_lists) { /* i is a lower partner of j: j gets the mirror */
            const uint2 range = (uint2)(offsets[j].y, offsets[j + 1].y);
            const uint slot_b = range.x + (uint)atomic_inc(&cursor[j]);
            if (slot_b < range.y) /* else the count check fails the build */
                list_b[slot_b] = (int)*next_a;
        }
        list_a[(*next_a)++] = j;
    }
}

/*
 * The walk. Work-item g takes FK_NB_WALK_I consecutive placeholders of one cell (cell c = g /
 * per_cell, per_cell = ceil(capacity / FK_NB_WALK_I)); each particle i there visits its neighbour
 * cells and takes every other particle closer than the list radius; half_lists: A takes j > i and
 * B j < i; else A takes all. fill is a constant of each kernel: fk_neighbors_count counts
 * (counts[i] = (partners in A, in B)), fk_neighbors_fill writes A at
 * offsets[i].x (as counted: the same walk) and, for half lists, each pair's mirror into the
 * partner's B (cursor[j]: the mirrors j has received so far, from 0).
 */
static inline void fk_nb_walk(const int fill, const int half_lists, const int capacity,
                              const int4 grid, __global const int *restrict count,
                              __global const int *restrict slots,
                              __global const float4 *restrict body, const float radius2,
                              const float4 box, const float4 inv_box,
                              __global int2 *restrict counts,
                              __global const uint2 *restrict offsets, __global int *restrict list_a,
                              __global int *restrict list_b, __global int *restrict cursor,
                              const int row, __global int *restrict stats)
{
    const size_t g = get_global_id(0);
    const int per_cell = (capacity + FK_NB_WALK_I - 1) / FK_NB_WALK_I;
    const int c = (int)(g / (size_t)per_cell);
    const int first = (int)(g % (size_t)per_cell) * FK_NB_WALK_I;
    if (c >= grid.x * grid.y * grid.z)
        return;
    const int m = min(count[c], capacity);
    if (first >= m)
        return;
    int i[FK_NB_WALK_I], live[FK_NB_WALK_I], in_a[FK_NB_WALK_I], in_b[FK_NB_WALK_I];
    float4 pi[FK_NB_WALK_I];
    uint next_a[FK_NB_WALK_I]; /* where the fill writes each particle's next partner of A */
    _Pragma("unroll") for (int u = 0; u < FK_NB_WALK_I; ++u)
    {
        live[u] = first + u < m; /* a placeholder past the cell's count repeats its last */
        i[u] = slots[(size_t)c * (size_t)capacity + (size_t)min(first + u, m - 1)];
        pi[u] = body[i[u]];
        next_a[u] = fill == FK_NB_FILL    ? offsets[i[u]].x
                    : fill == FK_NB_STORE ? (uint)i[u] * (uint)(row + 1)
                                          : 0u;
        in_a[u] = in_b[u] = 0;
    }
    int2 rx, ry, rz;
    fk_cells_neighbour_ranges(c, grid, &rx, &ry, &rz);
    for (int tz = rz.x; tz <= rz.y; ++tz)
        for (int ty = ry.x; ty <= ry.y; ++ty)
            for (int tx = rx.x; tx <= rx.y; ++tx) {
                const int nb = fk_cells_index(tx, ty, tz, grid);
                const int partners = min(count[nb], capacity);
                __global const int *theirs = slots + (size_t)nb * (size_t)capacity;
                for (int jj = 0; jj < partners; ++jj) {
                    const int j = theirs[jj];
                    const float4 pj = body[j];
                    _Pragma("unroll") for (int u = 0; u < FK_NB_WALK_I; ++u)
                        fk_nb_candidate(fill, half_lists, live[u], i[u], pi[u], j, pj, radius2, box,
                                        inv_box, grid.w, offsets, list_a, list_b, cursor, row,
                                        &next_a[u], &in_a[u], &in_b[u]);
                }
            }
    if (fill == FK_NB_FILL)
        return;
    _Pragma("unroll") for (int u = 0; u < FK_NB_WALK_I; ++u)
    {
        if (live[u])
            counts[i[u]] = (int2)(in_a[u], in_b[u]);
        if (fill == FK_NB_STORE && live[u] && in_a[u] > row) /* the row overflowed */
            atomic_max(&stats[FK_NB_MAX_ROW], in_a[u]);
    }
}

__kernel __attribute__((reqd_work_group_size(FK_CELLS_AUX_WG, 1, 1))) void
fk_neighbors_count(const int half_lists, const int capacity, const int4 grid,
                   __global const int *restrict count, __global const int *restrict slots,
                   __global const float4 *restrict body, const float radius2, const float4 box,
                   const float4 inv_box, __global int2 *restrict counts)
{
    fk_nb_walk(FK_NB_COUNT, half_lists, capacity, grid, count, slots, body, radius2, box, inv_box,
               counts, NULL, NULL, NULL, NULL, 0, NULL);
}

/* The count pass that also stores the partners of A into scratch rows of `row` slots and a spare
 * (particle i's row at i * (row + 1)): the one-walk build. The first arguments are the count
 * pass's. */
__kernel __attribute__((reqd_work_group_size(FK_CELLS_AUX_WG, 1, 1))) void fk_neighbors_count_store(
    const int half_lists, const int capacity, const int4 grid, __global const int *restrict count,
    __global const int *restrict slots, __global const float4 *restrict body, const float radius2,
    const float4 box, const float4 inv_box, __global int2 *restrict counts, const int row,
    __global int *restrict scratch, __global int *restrict stats)
{
    fk_nb_walk(FK_NB_STORE, half_lists, capacity, grid, count, slots, body, radius2, box, inv_box,
               counts, NULL, scratch, NULL, NULL, row, stats);
}

/*
 * The one walk for CPUs, in vectors: work-item g takes FK_NB_WALK_V consecutive placeholders of one
 * cell as the lanes of float vectors, and each candidate j is tested against all of them at once
 * (POCL runs the scalar walk one pair at a time: its work-items' loops differ, so it cannot
 * vectorise across them). The distance is fk_nb_distance2's operations lane by lane (FP_CONTRACT
 * OFF), so the same bits and the same lists; each lane then stores j at its row's next free slot
 * (every candidate: FK_NB_STORE_ALWAYS) and a partner advances the lane's count.
 */
#define FK_NB_WALK_V 8
__kernel __attribute__((reqd_work_group_size(FK_CELLS_AUX_WG, 1, 1))) void
fk_neighbors_count_store_vec(const int half_lists, const int capacity, const int4 grid,
                             __global const int *restrict count, __global const int *restrict slots,
                             __global const float4 *restrict body, const float radius2,
                             const float4 box, const float4 inv_box, __global int2 *restrict counts,
                             const int row, __global int *restrict scratch,
                             __global int *restrict stats)
{
    const size_t g = get_global_id(0);
    const int per_cell = (capacity + FK_NB_WALK_V - 1) / FK_NB_WALK_V;
    const int c = (int)(g / (size_t)per_cell);
    const int first = (int)(g % (size_t)per_cell) * FK_NB_WALK_V;
    if (c >= grid.x * grid.y * grid.z)
        return;
    const int m = min(count[c], capacity);
    if (first >= m)
        return;
    int is[FK_NB_WALK_V], lives[FK_NB_WALK_V], in_a[FK_NB_WALK_V];
    float xs[FK_NB_WALK_V], ys[FK_NB_WALK_V], zs[FK_NB_WALK_V];
    uint next[FK_NB_WALK_V];
    _Pragma("unroll") for (int u = 0; u < FK_NB_WALK_V; ++u)
    {
        lives[u] =
            first + u < m ? -1 : 0; /* a placeholder past the cell's count repeats its last */
        is[u] = slots[(size_t)c * (size_t)capacity + (size_t)min(first + u, m - 1)];
        const float4 p = body[is[u]];
        xs[u] = p.x;
        ys[u] = p.y;
        zs[u] = p.z;
        next[u] = (uint)is[u] * (uint)(row + 1);
        in_a[u] = 0;
    }
    const float8 px = vload8(0, xs), py = vload8(0, ys), pz = vload8(0, zs);
    const int8 iv = vload8(0, is), live = vload8(0, lives);
    const int periodic = grid.w;
    const float magic = 0x1.8p23f;
    int8 in_b = (int8)(0);
    int2 rx, ry, rz;
    fk_cells_neighbour_ranges(c, grid, &rx, &ry, &rz);
    for (int tz = rz.x; tz <= rz.y; ++tz)
        for (int ty = ry.x; ty <= ry.y; ++ty)
            for (int tx = rx.x; tx <= rx.y; ++tx) {
                const int nb = fk_cells_index(tx, ty, tz, grid);
                const int partners = min(count[nb], capacity);
                __global const int *theirs = slots + (size_t)nb * (size_t)capacity;
                for (int jj = 0; jj < partners; ++jj) {
                    const int j = theirs[jj];
                    const float4 pj = body[j];
                    float8 dx = px - pj.x, dy = py - pj.y, dz = pz - pj.z;
                    if (periodic) { /* fk_nb_distance2's image, fk_nb_rint lane by lane */
                        dx -= box.x * ((dx * inv_box.x + magic) - magic);
                        dy -= box.y * ((dy * inv_box.y + magic) - magic);
                        dz -= box.z * ((dz * inv_box.z + magic) - magic);
                    }
                    const float8 r2 = dx * dx + dy * dy + dz * dz;
                    const int8 within = live & (iv != j) & (r2 < radius2);
                    const int8 to_a = half_lists ? (iv < j) : (int8)(-1);
                    int take[FK_NB_WALK_V];
                    vstore8(within & to_a, 0, take);
                    in_b -= within & ~to_a;
                    _Pragma("unroll") for (int u = 0; u < FK_NB_WALK_V; ++u)
                    {
                        if (lives[u]) /* a repeated placeholder's row is a live one's */
                            scratch[next[u] + (uint)min(in_a[u], row)] = j;
                        in_a[u] -= take[u];
                    }
                }
            }
    int bs[FK_NB_WALK_V];
    vstore8(in_b, 0, bs);
    _Pragma("unroll") for (int u = 0; u < FK_NB_WALK_V; ++u)
    {
        if (lives[u])
            counts[is[u]] = (int2)(in_a[u], bs[u]);
        if (lives[u] && in_a[u] > row) /* the row overflowed */
            atomic_max(&stats[FK_NB_MAX_ROW], in_a[u]);
    }
}

__kernel __attribute__((reqd_work_group_size(FK_CELLS_AUX_WG, 1, 1))) void fk_neighbors_fill(
    const int half_lists, const int capacity, const int4 grid, __global const int *restrict count,
    __global const int *restrict slots, __global const float4 *restrict body, const float radius2,
    const float4 box, const float4 inv_box, __global const uint2 *restrict offsets,
    __global int *restrict list_a, __global int *restrict list_b, __global int *restrict cursor)
{
    fk_nb_walk(FK_NB_FILL, half_lists, capacity, grid, count, slots, body, radius2, box, inv_box,
               NULL, offsets, list_a, list_b, cursor, 0, NULL);
}

/*
 * The same walk for GPUs, tiled through local memory: one work-group per (cell, block of
 * FK_CELLS_AUX_WG placeholders), one placeholder per work-item, and each neighbour cell's
 * particles loaded into local memory by the group, a tile of FK_CELLS_AUX_WG at a time. The walk
 * above is a chain of dependent global loads per work-item (27 cells x the occupancy candidates)
 * on a few thousand work-items when N is small: on an H200 at N = 4,096 its count and fill took
 * 250 and 310 us, most of a list rebuild. Here the chain runs on local memory, and there is one
 * work-item per particle. Candidates are visited in the same order (neighbour cells in
 * fk_cells_range order, each cell's placeholders in order) and tested by the same
 * fk_nb_distance2, so both walks build the same lists, entry for entry. The loops around the
 * barriers depend only on the group's cell: every work-item of a group reaches every barrier.
 */
static inline void
fk_nb_walk_tiled(const int fill, const int half_lists, const int capacity, const int4 grid,
                 __global const int *restrict count, __global const int *restrict slots,
                 __global const float4 *restrict body, const float radius2, const float4 box,
                 const float4 inv_box, __global int2 *restrict counts,
                 __global const uint2 *restrict offsets, __global int *restrict list_a,
                 __global int *restrict list_b, __global int *restrict cursor, const int row,
                 __global int *restrict stats, __local int *restrict tile_j,
                 __local float4 *restrict tile_p)
{
    const int lid = (int)get_local_id(0);
    const int blocks = (capacity + FK_CELLS_AUX_WG - 1) / FK_CELLS_AUX_WG;
    const int c = (int)(get_group_id(0) / (size_t)blocks);
    const int first = (int)(get_group_id(0) % (size_t)blocks) * FK_CELLS_AUX_WG;
    if (c >= grid.x * grid.y * grid.z)
        return; /* the whole group */
    const int m = min(count[c], capacity);
    if (first >= m)
        return; /* the whole group */
    const int live = first + lid < m;
    const int i = slots[(size_t)c * (size_t)capacity + (size_t)min(first + lid, m - 1)];
    const float4 pi = body[i];
    uint next_a = fill == FK_NB_FILL && live ? offsets[i].x
                  : fill == FK_NB_STORE      ? (uint)i * (uint)(row + 1)
                                             : 0u;
    int in_a = 0, in_b = 0;
    int2 rx, ry, rz;
    fk_cells_neighbour_ranges(c, grid, &rx, &ry, &rz);
    for (int tz = rz.x; tz <= rz.y; ++tz)
        for (int ty = ry.x; ty <= ry.y; ++ty)
            for (int tx = rx.x; tx <= rx.y; ++tx) {
                const int nb = fk_cells_index(tx, ty, tz, grid);
                const int partners = min(count[nb], capacity);
                __global const int *theirs = slots + (size_t)nb * (size_t)capacity;
                for (int base = 0; base < partners; base += FK_CELLS_AUX_WG) {
                    const int tile = min(FK_CELLS_AUX_WG, partners - base);
                    barrier(CLK_LOCAL_MEM_FENCE); /* the last tile is read by everyone */
                    if (lid < tile) {
                        const int j = theirs[base + lid];
                        tile_j[lid] = j;
                        tile_p[lid] = body[j];
                    }
                    barrier(CLK_LOCAL_MEM_FENCE);
                    for (int jj = 0; jj < tile; ++jj)
                        fk_nb_candidate(fill, half_lists, live, i, pi, tile_j[jj], tile_p[jj],
                                        radius2, box, inv_box, grid.w, offsets, list_a, list_b,
                                        cursor, row, &next_a, &in_a, &in_b);
                }
            }
    if (fill != FK_NB_FILL && live)
        counts[i] = (int2)(in_a, in_b);
    if (fill == FK_NB_STORE && live && in_a > row) /* the row overflowed */
        atomic_max(&stats[FK_NB_MAX_ROW], in_a);
}

__kernel __attribute__((reqd_work_group_size(FK_CELLS_AUX_WG, 1, 1))) void
fk_neighbors_count_tiled(const int half_lists, const int capacity, const int4 grid,
                         __global const int *restrict count, __global const int *restrict slots,
                         __global const float4 *restrict body, const float radius2,
                         const float4 box, const float4 inv_box, __global int2 *restrict counts)
{
    __local int tile_j[FK_CELLS_AUX_WG];
    __local float4 tile_p[FK_CELLS_AUX_WG];
    fk_nb_walk_tiled(FK_NB_COUNT, half_lists, capacity, grid, count, slots, body, radius2, box,
                     inv_box, counts, NULL, NULL, NULL, NULL, 0, NULL, tile_j, tile_p);
}

__kernel __attribute__((reqd_work_group_size(FK_CELLS_AUX_WG, 1, 1))) void
fk_neighbors_count_store_tiled(const int half_lists, const int capacity, const int4 grid,
                               __global const int *restrict count,
                               __global const int *restrict slots,
                               __global const float4 *restrict body, const float radius2,
                               const float4 box, const float4 inv_box,
                               __global int2 *restrict counts, const int row,
                               __global int *restrict scratch, __global int *restrict stats)
{
    __local int tile_j[FK_CELLS_AUX_WG];
    __local float4 tile_p[FK_CELLS_AUX_WG];
    fk_nb_walk_tiled(FK_NB_STORE, half_lists, capacity, grid, count, slots, body, radius2, box,
                     inv_box, counts, NULL, scratch, NULL, NULL, row, stats, tile_j, tile_p);
}

__kernel __attribute__((reqd_work_group_size(FK_CELLS_AUX_WG, 1, 1))) void fk_neighbors_fill_tiled(
    const int half_lists, const int capacity, const int4 grid, __global const int *restrict count,
    __global const int *restrict slots, __global const float4 *restrict body, const float radius2,
    const float4 box, const float4 inv_box, __global const uint2 *restrict offsets,
    __global int *restrict list_a, __global int *restrict list_b, __global int *restrict cursor)
{
    __local int tile_j[FK_CELLS_AUX_WG];
    __local float4 tile_p[FK_CELLS_AUX_WG];
    fk_nb_walk_tiled(FK_NB_FILL, half_lists, capacity, grid, count, slots, body, radius2, box,
                     inv_box, NULL, offsets, list_a, list_b, cursor, 0, NULL, tile_j, tile_p);
}

/*
 * The one-walk build's second half: each particle's scratch row (fk_neighbors_count_store) copied
 * to its offset in the lists A, and for half lists each pair's mirror (its place in A) into the
 * partner's B at a slot taken with an atomic increment, as the fill pass does. `lanes` work-items
 * per particle, each taking every lanes-th entry of the row (on a GPU a warp reads and writes a row
 * in whole transactions; a CPU takes 1). Writes beyond the lists' allocated entries (capacity_a,
 * capacity_b: the host enqueues this before it has read the new totals) are dropped, and the host
 * then runs it again on larger lists; a row that overflowed is never copied (the host runs the fill
 * pass instead).
 */
__kernel __attribute__((reqd_work_group_size(FK_CELLS_AUX_WG, 1, 1))) void
fk_neighbors_compact(const int n, const int half_lists, const int row, const int lanes,
                     __global const int2 *restrict counts, __global const int *restrict scratch,
                     __global const uint2 *restrict offsets, __global int *restrict list_a,
                     const uint capacity_a, __global int *restrict list_b, const uint capacity_b,
                     __global int *restrict cursor)
{
    const size_t g = get_global_id(0);
    const int i = (int)(g / (size_t)lanes), lane = (int)(g % (size_t)lanes);
    if (i >= n)
        return;
    const int m = counts[i].x;
    if (m > row)
        return;
    const uint first = offsets[i].x;
    __global const int *mine = scratch + (size_t)i * (size_t)(row + 1);
    for (int k = lane; k < m; k += lanes) {
        const uint place = first + (uint)k;
        if (place >= capacity_a)
            return;
        const int j = mine[k];
        list_a[place] = j;
        if (half_lists) { /* i is a lower partner of j: j gets the mirror */
            const uint end_b = min(offsets[j + 1].y, capacity_b);
            const uint slot_b = offsets[j].y + (uint)atomic_inc(&cursor[j]);
            if (slot_b < end_b) /* else the count check fails, or the host redoes this */
                list_b[slot_b] = (int)place;
        }
    }
}

/* Half lists, per particle: sort the mirrors of B (they arrived in any order; sorted, each
 * particle's j-side sum runs in a fixed order), and check that as many arrived as were counted. */
__kernel void fk_neighbors_sort(const int n, __global const uint2 *restrict offsets,
                                __global int *restrict list_b, __global const int *restrict cursor,
                                __global int *restrict stats)
{
    const int i = (int)get_global_id(0);
    if (i >= n)
        return;
    const uint first = offsets[i].y;
    const int lower = (int)(offsets[i + 1].y - first);
    if (cursor[i] != lower) {
        atomic_inc(&stats[FK_NB_MISSING]);
        return;
    }
    fk_cells_sort(list_b + first, lower);
}

/*
 * The exclusive prefix sum of counts[0 .. n) into offsets[0 .. n], both lists at once, in three
 * kernels: the sum of each block of FK_NB_SCAN_BLOCK counts (64 bits), the exclusive scan of the
 * block sums by one work-group (and the totals into offsets[n] and stats), then each block's
 * offsets from its block's start. Totals beyond 2^31 are the host's to refuse (the offsets wrap).
 */
__kernel __attribute__((reqd_work_group_size(FK_CELLS_AUX_WG, 1, 1))) void
fk_neighbors_scan_blocks(const int n, __global const int2 *restrict counts,
                         __global ulong2 *restrict block_sums)
{
    const int lid = (int)get_local_id(0);
    const int first = (int)get_group_id(0) * FK_NB_SCAN_BLOCK + lid * FK_NB_SCAN_ITEMS;
    ulong2 sum = (ulong2)(0, 0);
    for (int k = first; k < min(first + FK_NB_SCAN_ITEMS, n); ++k)
        sum += convert_ulong2(counts[k]);
    __local ulong2 partial[FK_CELLS_AUX_WG];
    partial[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = FK_CELLS_AUX_WG / 2; stride > 0; stride /= 2) {
        if (lid < stride)
            partial[lid] += partial[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        block_sums[get_group_id(0)] = partial[0];
}

/* One work-group: each work-item scans a run of consecutive block sums. */
__kernel __attribute__((reqd_work_group_size(FK_CELLS_AUX_WG, 1, 1))) void
fk_neighbors_scan_top(const int n, const int blocks, __global ulong2 *restrict block_sums,
                      __global uint2 *restrict offsets, __global int *restrict stats)
{
    const int lid = (int)get_local_id(0);
    const int run = (blocks + FK_CELLS_AUX_WG - 1) / FK_CELLS_AUX_WG;
    const int first = lid * run, end = min(first + run, blocks);
    ulong2 sum = (ulong2)(0, 0);
    for (int b = first; b < end; ++b)
        sum += block_sums[b];
    __local ulong2 start[FK_CELLS_AUX_WG];
    start[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) { /* 64 values: sequentially */
        ulong2 running = (ulong2)(0, 0);
        for (int k = 0; k < FK_CELLS_AUX_WG; ++k) {
            const ulong2 value = start[k];
            start[k] = running;
            running += value;
        }
        offsets[n] = convert_uint2(running);
        stats[FK_NB_TOTAL_A] = (int)(uint)running.x;
        stats[FK_NB_TOTAL_A + 1] = (int)(uint)(running.x >> 32);
        stats[FK_NB_TOTAL_B] = (int)(uint)running.y;
        stats[FK_NB_TOTAL_B + 1] = (int)(uint)(running.y >> 32);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    ulong2 running = start[lid];
    for (int b = first; b < end; ++b) {
        const ulong2 value = block_sums[b];
        block_sums[b] = running;
        running += value;
    }
}

__kernel __attribute__((reqd_work_group_size(FK_CELLS_AUX_WG, 1, 1))) void
fk_neighbors_scan_apply(const int n, __global const int2 *restrict counts,
                        __global const ulong2 *restrict block_sums,
                        __global uint2 *restrict offsets)
{
    const int lid = (int)get_local_id(0);
    const int first = (int)get_group_id(0) * FK_NB_SCAN_BLOCK + lid * FK_NB_SCAN_ITEMS;
    const int end = min(first + FK_NB_SCAN_ITEMS, n);
    ulong2 sum = (ulong2)(0, 0);
    for (int k = first; k < end; ++k)
        sum += convert_ulong2(counts[k]);
    __local ulong2 start[FK_CELLS_AUX_WG];
    start[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        ulong2 running = block_sums[get_group_id(0)];
        for (int k = 0; k < FK_CELLS_AUX_WG; ++k) {
            const ulong2 value = start[k];
            start[k] = running;
            running += value;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    ulong2 running = start[lid];
    for (int k = first; k < end; ++k) {
        offsets[k] = convert_uint2(running);
        running += convert_ulong2(counts[k]);
    }
}
