/*
 * forcekit: the tiled all-pairs loop.
 *
 * Every kernel (force law) and every accumulator goes through this loop. The host specializes it with
 * -D defines; each has a default (cl/template_defaults.clh, or here) so the file compiles on its own
 * (e.g. with `-I cl`):
 *   FORCE, ACCUM          names of the force law (cl/forces/<FORCE>.clh) and accumulator
 *                         (cl/accum/<ACCUM>.clh); the host's include expander resolves FORCE_HEADER and
 *                         ACCUM_HEADER from them
 *   UNROLL_I, UNROLL_J    i-particles per work-item, j-particles per unrolled inner step (Elsen et al.)
 *   WG_SIZE               work-group size (fixed at compile time: the tile size)
 *   LOCAL_TILING          1: j-particles staged through local memory; 0: read from global (cache)
 *   POTENTIAL             1: also accumulate the potential as one more output component
 *   REPRODUCIBLE          1: pair arithmetic only in correctly rounded operations (sqrt and divide,
 *                         not rsqrt), for results bit-identical across devices (--reproducible)
 *
 * The pair step (cl/pair_step.clh) includes the accumulator and the force law (its header comment
 * states what each provides) and gives this file the prologue, the i-block, the pair mask and the
 * split reduction fk_reduce_splits; this file holds the j-loop (tiles, splits) and, for a law with
 * FK_INTERACT_EXCLUDED (fk_interact_excluded adds exactly the negation of each term fk_interact
 * adds for the pair: the molecular laws), fk_subtract_exclusions.
 */
#ifndef WG_SIZE
#define WG_SIZE 64
#endif
#ifndef LOCAL_TILING
#define LOCAL_TILING 1
#endif
#define FK_PAIR_STEP_SPLITS 1 /* fk_reduce_splits merges the j-splits */
/* Blocks for the accumulators that can use them (FK_ACC_BLOCKS: narumi): a tile runs its j in
 * blocks of FK_ACC_BLOCK_TERMS (the whole tile up to 128; a tile of 256 or more, a multiple of
 * 128, in blocks of 128), each between FK_ACC_BLOCK_BEGIN and FK_ACC_BLOCK_END. Every block has at
 * least one j, and every pair adds one term to each component, so a state's additions come in
 * non-empty blocks of at most FK_ACC_BLOCK_TERMS. The accumulator takes blocks only up to its own
 * limit; otherwise FK_TILE_BLOCK is the whole tile and nothing changes. */
#if LOCAL_TILING && WG_SIZE <= 128
#define FK_ACC_BLOCK_TERMS WG_SIZE
#elif LOCAL_TILING && WG_SIZE % 128 == 0 && 128 % UNROLL_J == 0
#define FK_ACC_BLOCK_TERMS 128
#endif
#include "pair_step.clh"

#ifdef FK_ACC_BLOCKS
#define FK_ACC_BLOCK_BEGIN(acc)                                                                    \
    _Pragma("unroll") for (int u_ = 0; u_ < UNROLL_I; ++u_) _Pragma("unroll") for (              \
        int k_ = 0; k_ < FK_COMPONENTS; ++k_) fk_acc_block_begin(&(acc)[u_][k_], &env)
#define FK_ACC_BLOCK_END(acc)                                                                      \
    _Pragma("unroll") for (int u_ = 0; u_ < UNROLL_I; ++u_) _Pragma("unroll") for (              \
        int k_ = 0; k_ < FK_COMPONENTS; ++k_) fk_acc_block_end(&(acc)[u_][k_], &env)
#define FK_TILE_BLOCK FK_ACC_BLOCK_TERMS
#else
#define FK_ACC_BLOCK_BEGIN(acc) (void)0
#define FK_ACC_BLOCK_END(acc) (void)0
#define FK_TILE_BLOCK WG_SIZE
#endif

/* The pair loop body for one j-particle against this work-item's i-block. */
#define FK_INTERACT_ALL(jbody, j_index)                                                            \
    FK_IBLOCK_INTERACT(ibody, i_index, excluded, acc, jbody, j_index, &phys, &env)
/* One j-particle of a FK_J_RUN: tile slot jj of the tile starting at tile_start, or particle j
 * read from global memory. */
#define FK_TILE_STEP(jj, tile_start)                                                               \
    const fk_jbody jb = tile[jj];                                                                  \
    FK_INTERACT_ALL(jb, tile_start + jj)
#define FK_GLOBAL_STEP(j, unused)                                                                  \
    const fk_jbody jb = fk_load_j(body, body_aux, j);                                              \
    FK_INTERACT_ALL(jb, j)

/*
 * Work decomposition: dimension 0 covers i in blocks of WG_SIZE * UNROLL_I (work-item lid handles
 * i = block + lid + u * WG_SIZE, so loads and stores stay coalesced); dimension 1 splits the j-range
 * into chunks of j_chunk so that small N still fills the device (Elsen sec. 3.4, Boyarchenkov's
 * BI x BJ). Split s writes partial sums to out[s][i][component]; fk_reduce_splits merges them.
 */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
fk_pairwise(const int n, const int j_chunk, __global const float4 *restrict body,
            __global const float4 *restrict body_aux, __global const float *restrict table,
            __constant const float *restrict physics, const float4 acc_param,
            __global uint2 *restrict out)
{
    const int lid = (int)get_local_id(0);
    /* The block from the global id, not the group id: a global offset (fk_eval_set_share) starts
     * the launch at a later block. get_global_id(0) - lid = offset + group * WG_SIZE. */
    const int i_first = ((int)get_global_id(0) - lid) * UNROLL_I + lid;
    const int split = (int)get_group_id(1);
    FK_PAIR_PROLOGUE(physics, table, acc_param);
    (void)body_aux;

    FK_IBLOCK(ibody, i_index, excluded, acc);
    FK_IBLOCK_LOAD(ibody, i_index, excluded, acc, body, body_aux, i_first, n - 1);

    const int j_begin = split * j_chunk;
    const int j_end = min(n, j_begin + j_chunk);

#if LOCAL_TILING
    __local fk_jbody tile[WG_SIZE];
    for (int tile_start = j_begin; tile_start < j_end; tile_start += WG_SIZE) {
        const int j_load = tile_start + lid;
        if (j_load < j_end)
            tile[lid] = fk_load_j(body, body_aux, j_load);
        barrier(CLK_LOCAL_MEM_FENCE);
        const int count = min(WG_SIZE, j_end - tile_start);
        if (count == WG_SIZE) {
            /* Full tile: a compile-time trip count the compiler can unroll further. The host
             * makes WG_SIZE a multiple of UNROLL_J (src/core/programs/variant.c); should it not be, the last
             * WG_SIZE % UNROLL_J go one by one rather than past the tile. */
            for (int block = 0; block < WG_SIZE; block += FK_TILE_BLOCK) {
                FK_ACC_BLOCK_BEGIN(acc);
                int jj = block;
                for (; jj + UNROLL_J <= block + FK_TILE_BLOCK; jj += UNROLL_J) {
                    _Pragma("unroll") for (int v = 0; v < UNROLL_J; ++v)
                    {
                        const fk_jbody jb = tile[jj + v];
                        FK_INTERACT_ALL(jb, tile_start + jj + v);
                    }
                }
#if FK_TILE_BLOCK % UNROLL_J
                for (; jj < block + FK_TILE_BLOCK; ++jj) {
                    const fk_jbody jb = tile[jj];
                    FK_INTERACT_ALL(jb, tile_start + jj);
                }
#endif
                FK_ACC_BLOCK_END(acc);
            }
        } else {
            for (int block = 0; block < count; block += FK_TILE_BLOCK) {
                FK_ACC_BLOCK_BEGIN(acc);
                FK_J_RUN(jj, block, min(count, block + FK_TILE_BLOCK), FK_TILE_STEP, tile_start)
                FK_ACC_BLOCK_END(acc);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#else
    FK_J_RUN(j, j_begin, j_end, FK_GLOBAL_STEP, 0)
#endif

    FK_IBLOCK_STORE(i_index, acc, n, out + (size_t)split * (size_t)n * FK_COMPONENTS);
}

#if defined(FK_INTERACT_EXCLUDED) && !FK_EXCLUSION_SLOTS
/*
 * Exclude afterwards (Narumi et al. sec. 4.1), run after the pair loop (and fk_reduce_splits, or
 * another loop that leaves its results in out, such as cells.cl and symmetric.cl): each particle's
 * sums are unpacked, the excluded partners' terms added negated, in the accumulator's own
 * arithmetic, and packed again. The terms come from the same fk_interact code, program and build
 * options as the pair loop's, so they are the terms that loop added, bit for bit, wherever the
 * accumulator forbids contraction (all but float, double and ref); only the accumulation's rounding
 * remains, and fixed64 and narumi (integer sums, q(-y) = -q(y)) cancel each excluded pair exactly.
 * The bound pre-pass (accum/bound.clh) already covers these additions: each is the negation of a
 * term it measured, and every partial sum is a sum of a subset of the particle's terms.
 *
 * excluded: CSR lists, n + 1 offsets then the partners, sorted (src/core/laws/forcelaw.c); no limit on the
 * partners per particle. A particle without any is left untouched (same bits).
 */
__kernel void fk_subtract_exclusions(const int n, __global const int *restrict excluded,
                                     __global const float4 *restrict body,
                                     __global const float4 *restrict body_aux,
                                     __global const float *restrict table,
                                     __constant const float *restrict physics,
                                     const float4 acc_param, __global uint2 *restrict out)
{
    const int i = (int)get_global_id(0);
    if (i >= n)
        return;
    const int first = excluded[i], last = excluded[i + 1];
    if (first == last)
        return;
    FK_PAIR_PROLOGUE(physics, table, acc_param);
    const fk_ibody ibody = fk_load_i(body, body_aux, i);
    __global uint2 *sums = out + (size_t)i * FK_COMPONENTS;
    fk_acc acc[FK_COMPONENTS];
    _Pragma("unroll") for (int k = 0; k < FK_COMPONENTS; ++k) acc[k] = fk_acc_unpack(sums[k]);
    __global const int *partners = excluded + n + 1;
    for (int p = first; p < last; ++p) {
        const fk_jbody jb = fk_load_j(body, body_aux, partners[p]);
#ifdef FK_ACC_BLOCKS /* one partner per block: no limit on the partners */
        _Pragma("unroll") for (int k = 0; k < FK_COMPONENTS; ++k) fk_acc_block_begin(&acc[k], &env);
#endif
        fk_interact_excluded(&ibody, &jb, &phys, &env, acc);
#ifdef FK_ACC_BLOCKS
        _Pragma("unroll") for (int k = 0; k < FK_COMPONENTS; ++k) fk_acc_block_end(&acc[k], &env);
#endif
    }
    FK_ACC_STORE(sums, acc);
}
#endif
