/*
 * forcekit: the cell-list pair loop (van Meel et al., sec. 3), for the short-range force laws.
 *
 * The host specializes this file exactly as cl/pairwise.cl (same -D defines, same force-law and
 * accumulator headers through FORCE_HEADER and ACCUM_HEADER, the same pair step cl/pair_step.clh:
 * prologue, i-block, pair mask), so every molecular force law and every accumulator runs here
 * unchanged; results leave the device as one uint2 per component, as from the all-pairs loop.
 * This file holds the cell iteration: the i-block over a cell's placeholders and the j-loop over
 * the neighbour cells.
 * The cells it loops over are built by cl/cells_build.cl (the layout is described there).
 */
#ifndef FORCE
#define FORCE lj
#endif
#ifndef FORCE_HEADER
#define FORCE_HEADER "forces/lj.clh"
#endif
/* (FORCE above: the cell loop needs a cutoff, so its default law is lj; the other defaults are
 * every loop's, cl/template_defaults.clh.) */
#ifndef WG_SIZE
#define WG_SIZE 16
#endif
#ifndef LOCAL_TILING
#define LOCAL_TILING 1
#endif
/* Positions lie within one box length of a periodic box (the grid refuses others): the minimum
 * image without rint (forces/molecular_pair.clh). */
#define FK_IMAGE_BOUNDED 1
#include "pair_step.clh"
#include "cells_grid.clh"

/*
 * The pair loop. Work-group (c, chunk): cell c = group 0, its i-placeholders chunk * WG_SIZE ..
 * + WG_SIZE - 1 (one work-item each, as van Meel's one thread per placeholder). Every work-item of
 * the group runs the same j-loop over the neighbour cells (only up to each one's count, not over
 * empty placeholders), with LOCAL_TILING staging each neighbour's particles through local memory
 * WG_SIZE at a time (GPUs), without it reading them through the cache (CPUs: no barriers).
 * Work-items past the cell's count compute on a real particle and do not store, as in the
 * all-pairs template. Each particle sits in exactly one placeholder, so each result is written
 * once; sums run over the neighbour cells in a fixed order and within a cell by particle index.
 */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
fk_cells_pairs(const int capacity, const int4 grid, __global const int *restrict count,
               __global const int *restrict slots, __global const float4 *restrict body,
               __global const float4 *restrict body_aux, __global const float *restrict table,
               __constant const float *restrict physics, const float4 acc_param,
               __global uint2 *restrict out)
{
    const int lid = (int)get_local_id(0);
    /* The cell from the global id: a global offset (fk_eval_set_share) starts at a later cell. */
    const int c = ((int)get_global_id(0) - lid) / WG_SIZE;
    const int first = (int)get_group_id(1) * (WG_SIZE * UNROLL_I);
    const int m = min(count[c], capacity);
    if (first >= m)
        return; /* the whole work-group leaves together, before any barrier */
    FK_PAIR_PROLOGUE(physics, table, acc_param);
    __global const int *own = slots + (size_t)c * (size_t)capacity;
    /* The i-block over the cell's placeholders: i[u] is the particle in placeholder slot[u]
     * (clamped to the cell's last, as FK_IBLOCK_LOAD clamps to the last particle). */
    int slot[UNROLL_I];
    FK_IBLOCK(ibody, i, excluded, acc);
    _Pragma("unroll") for (int u = 0; u < UNROLL_I; ++u)
    {
        slot[u] = first + lid + u * WG_SIZE;
        i[u] = own[min(slot[u], m - 1)];
        ibody[u] = fk_load_i(body, body_aux, i[u]);
        FK_LOAD_EXCLUDED(body_aux, i[u], excluded[u]);
        FK_ACC_ZERO(acc[u]);
    }

    int2 rx, ry, rz;
    fk_cells_neighbour_ranges(c, grid, &rx, &ry, &rz);
#if LOCAL_TILING
    __local fk_jbody tile[WG_SIZE];
    __local int tile_index[WG_SIZE];
#endif
    for (int tz = rz.x; tz <= rz.y; ++tz)
        for (int ty = ry.x; ty <= ry.y; ++ty)
            for (int tx = rx.x; tx <= rx.y; ++tx) {
                const int nb = fk_cells_index(tx, ty, tz, grid);
                const int partners = min(count[nb], capacity);
                __global const int *theirs = slots + (size_t)nb * (size_t)capacity;
#if LOCAL_TILING
                for (int start = 0; start < partners; start += WG_SIZE) {
                    if (start + lid < partners) {
                        const int j = theirs[start + lid];
                        tile[lid] = fk_load_j(body, body_aux, j);
                        tile_index[lid] = j;
                    }
                    barrier(CLK_LOCAL_MEM_FENCE);
                    const int loaded = min(WG_SIZE, partners - start);
                    for (int jj = 0; jj < loaded; ++jj) {
                        const fk_jbody jb = tile[jj];
                        const int j = tile_index[jj];
                        FK_IBLOCK_INTERACT(ibody, i, excluded, acc, jb, j, &phys, &env);
                    }
                    barrier(CLK_LOCAL_MEM_FENCE);
                }
#else
                /* The same j for every work-item of the group: a broadcast from the cache. */
                for (int jj = 0; jj < partners; ++jj) {
                    const int j = theirs[jj];
                    const fk_jbody jb = fk_load_j(body, body_aux, j);
                    FK_IBLOCK_INTERACT(ibody, i, excluded, acc, jb, j, &phys, &env);
                }
#endif
            }

    _Pragma("unroll") for (int u = 0; u < UNROLL_I; ++u)
    {
        if (slot[u] < m)
            FK_ACC_STORE(out + (size_t)i[u] * FK_COMPONENTS, acc[u]);
    }
}
