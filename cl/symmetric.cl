/*
 * forcekit: the symmetric pair loop (Newton's third law): every unordered pair is evaluated once
 * and its terms go to both particles (Boyarchenkov & Potashnikov sec. 6.4, version 3, in a
 * tile-symmetric form).
 *
 * The host specializes it with the template's defines (FORCE, ACCUM, UNROLL_I, UNROLL_J, WG_SIZE,
 * POTENTIAL, REPRODUCIBLE and the force law's switches); the force-law and accumulator headers are
 * the same ones pairwise.cl uses, unchanged, through the same pair step (cl/pair_step.clh). This
 * file holds the block schedule, the block-pair and one-sided iterations and the slot reduction.
 *
 * Blocks. Particles fall into nb blocks of FK_BLOCK = WG_SIZE * UNROLL_I; work-item lid owns
 * particles lid + u * WG_SIZE of a block (u < UNROLL_I). Block pairs follow a circulant schedule:
 * distance d = 0 is the block with itself, distances 1 .. nb/2 pair block I with (I + d) mod nb,
 * and when nb is even, distance nb/2 is taken only from I < nb/2 (else it would come twice). Each
 * work-group (I, d) evaluates one block pair. Every block then receives one i-side and (for d > 0)
 * one j-side result per distance, and the reduction kernel merges them in distance order, so the
 * result does not depend on the order in which work-groups ran.
 *
 * Inside a full off-diagonal block pair (I, J): the i-particles sit in registers (UNROLL_I per
 * work-item), the J block in local memory, and the j-side sums in local memory too. At step s of
 * round r, work-item lid takes the UNROLL_J j-slots x = lid + s + (v + r UNROLL_J) WG_SIZE: no two
 * work-items touch the same slot in one step, and a barrier ends each step (Boyarchenkov's version
 * 3 synchronizes every iteration for the same reason). The slots are not reduced modulo the block:
 * the tile and the j-sums are FK_SPAN = FK_BLOCK + WG_SIZE long, slot x + FK_BLOCK holding the same
 * j-particle as slot x, so neighbouring work-items read neighbouring addresses (contiguous vector
 * loads on CPUs, no bank conflicts on GPUs) and the two partial j-sums are merged at the end.
 *
 * Diagonal blocks, and block pairs that involve the last block when it is partial, are evaluated
 * one-sided, as the all-pairs loop does, each side against the other's real particles, by a
 * second kernel (fk_symmetric_edges) over the same grid. They are O(nb) of the O(nb^2) block
 * pairs, and they need no padding rules.
 *
 * The pair terms. The force law's fk_interact is compiled in the pair step's capture mode
 * (FK_CAPTURE_TERMS, cl/pair_step.clh): it stores its terms instead of adding them, so the i-side
 * terms are exactly what the all-pairs loop adds to i for j. The j-side terms are what it adds to j
 * for i, obtained by the rule the force law declares (FK_SYM_SOURCE or FK_SYM_SYMMETRIC; fk_sym_pair
 * in cl/pair_step.clh): forces are odd in r_ij (negated), the potential even (kept), and for
 * gravity the source strength is the other particle's mass. Every operation involved is exact
 * under negation, so with the fixed64 accumulator (integer sums of individually rounded terms) the
 * results are bit-identical to the all-pairs loop's.
 */
#ifndef WG_SIZE
#define WG_SIZE 64
#endif
#define FK_CAPTURE_TERMS 1 /* fk_interact stores its terms: fk_sym_pair uses them twice */
#include "pair_step.clh"

#if UNROLL_J > UNROLL_I || UNROLL_I % UNROLL_J
#error "symmetric.cl: UNROLL_J must divide UNROLL_I (the host clamps it)"
#endif

#define FK_BLOCK (WG_SIZE * UNROLL_I)
#define FK_SPAN (FK_BLOCK + WG_SIZE)

/* One-sided: block x's particles against block y's real particles and, when x != y, block y's
 * against block x's, all-pairs style, into out_x and out_y. One barrier, no loop around it: the
 * kernel that calls this has no other barrier (POCL 3.1 miscompiled a version that called a
 * barrier-holding function twice in one branch: some work-items read the next call's tile). */
static inline void fk_sym_one_sided(const int n, const int x, const int y,
                                    __global const float4 *restrict body,
                                    __global const float4 *restrict body_aux,
                                    const fk_phys *phys, const fk_acc_env *env,
                                    __local fk_jbody *tile, __global uint2 *restrict out_x,
                                    __global uint2 *restrict out_y)
{
    const int lid = (int)get_local_id(0);
    const int both = x != y;
    fk_ibody ibody[2][UNROLL_I];
    int i_index[2][UNROLL_I];
    FK_EXCLUDED_DECLARE(excluded[2][UNROLL_I]);
    fk_acc acc[2][UNROLL_I][FK_COMPONENTS];
    _Pragma("unroll") for (int side = 0; side < 2; ++side)
    {
        const int own = side ? y : x, other = side ? x : y;
        FK_IBLOCK_LOAD(ibody[side], i_index[side], excluded[side], acc[side], body, body_aux,
                       own * FK_BLOCK + lid, n - 1);
        /* tile[0, FK_BLOCK): y's particles (x's j-range); tile[FK_BLOCK, 2 FK_BLOCK): x's */
        _Pragma("unroll") for (int u = 0; u < UNROLL_I; ++u)
        {
            const int j = other * FK_BLOCK + lid + u * WG_SIZE;
            if (j < n)
                tile[side * FK_BLOCK + lid + u * WG_SIZE] = fk_load_j(body, body_aux, j);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    _Pragma("unroll") for (int side = 0; side < 2; ++side)
    {
        if (side == 0 || both) {
            const int j_first = (side ? x : y) * FK_BLOCK;
            const int count = min(FK_BLOCK, n - j_first);
            for (int jj = 0; jj < count; ++jj) {
                const fk_jbody jb = tile[side * FK_BLOCK + jj];
                FK_IBLOCK_INTERACT(ibody[side], i_index[side], excluded[side], acc[side], jb,
                                   j_first + jj, phys, env);
            }
            FK_IBLOCK_STORE(i_index[side], acc[side], n, side ? out_y : out_x);
        }
    }
}

/* Full blocks x and y (x != y): each pair once. i-side into out_i, j-side into out_j. */
static inline void fk_sym_block_pair(const int x, const int y,
                                     __global const float4 *restrict body,
                                     __global const float4 *restrict body_aux,
                                     const fk_phys *phys, const fk_acc_env *env,
                                     __local fk_jbody *tile, __local fk_acc *jacc,
                                     __global uint2 *restrict out_i, __global uint2 *restrict out_j)
{
    const int lid = (int)get_local_id(0);
    /* Full blocks: no index is past the end (INT_MAX: no clamp). */
    FK_IBLOCK(ibody, i_index, excluded, acc);
    FK_IBLOCK_LOAD(ibody, i_index, excluded, acc, body, body_aux, x * FK_BLOCK + lid, INT_MAX);
    /* The tile and the j-sums, FK_SPAN = (UNROLL_I + 1) WG_SIZE long: slot p and p + FK_BLOCK
     * are the same j-particle. */
    _Pragma("unroll") for (int u = 0; u <= UNROLL_I; ++u)
    {
        const int p = lid + u * WG_SIZE;
        tile[p] = fk_load_j(body, body_aux, y * FK_BLOCK + (u < UNROLL_I ? p : lid));
        _Pragma("unroll") for (int c = 0; c < FK_COMPONENTS; ++c) jacc[c * FK_SPAN + p] =
            fk_acc_zero();
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int r = 0; r < UNROLL_I / UNROLL_J; ++r) {
        for (int s = 0; s < WG_SIZE; ++s) {
            const int first = lid + s + r * UNROLL_J * WG_SIZE;
            _Pragma("unroll") for (int v = 0; v < UNROLL_J; ++v)
            {
                const int slot = first + v * WG_SIZE;
                const fk_jbody jb = tile[slot];
                fk_acc jside[FK_COMPONENTS];
                FK_ACC_ZERO(jside);
                _Pragma("unroll") for (int u = 0; u < UNROLL_I; ++u)
                {
                    fk_real ti[FK_COMPONENTS], tj[FK_COMPONENTS];
                    /* slot's particle: y's slot, or slot - FK_BLOCK (evaluated only with
                     * exclusions on the fly; FK_EXCLUDED is 0 without) */
                    fk_sym_pair(&ibody[u], &jb,
                                FK_EXCLUDED(excluded[u], y * FK_BLOCK + slot -
                                                             (slot >= FK_BLOCK ? FK_BLOCK : 0)),
                                phys, env, ti, tj);
                    _Pragma("unroll") for (int c = 0; c < FK_COMPONENTS; ++c)
                    {
                        fk_acc_add(&acc[u][c], ti[c], env);
                        fk_acc_add(&jside[c], tj[c], env);
                    }
                }
                _Pragma("unroll") for (int c = 0; c < FK_COMPONENTS; ++c) jacc[c * FK_SPAN + slot] =
                    fk_acc_merge(jacc[c * FK_SPAN + slot], jside[c]);
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }

    _Pragma("unroll") for (int u = 0; u < UNROLL_I; ++u)
    {
        const int p = lid + u * WG_SIZE;
        __global uint2 *dst_i = out_i + (size_t)(x * FK_BLOCK + p) * FK_COMPONENTS;
        __global uint2 *dst_j = out_j + (size_t)(y * FK_BLOCK + p) * FK_COMPONENTS;
        _Pragma("unroll") for (int c = 0; c < FK_COMPONENTS; ++c)
        {
            dst_i[c] = fk_acc_pack(acc[u][c]);
            fk_acc sum = jacc[c * FK_SPAN + p];
            if (u == 0) /* slot p + FK_BLOCK: the same particle, the other partial sum */
                sum = fk_acc_merge(sum, jacc[c * FK_SPAN + p + FK_BLOCK]);
            dst_j[c] = fk_acc_pack(sum);
        }
    }
}

/*
 * Work-group (I, dd) of either kernel stands for block pair (I, J = (I + d) mod nb), d = first_d +
 * dd, nb the number of work-groups in dimension 0; results go to slots[2 dd + side][particle]
 * [component], side 0 the i-side (block I), side 1 the j-side (block J), and fk_symmetric_reduce
 * knows which exist. fk_symmetric takes the full off-diagonal pairs, fk_symmetric_edges the
 * diagonal and the pairs with a partial last block; the other work-groups of each return at once
 * (uniformly, before any barrier).
 */
#define FK_SYM_PAIR_SETUP                                                                          \
    const int nb = (int)get_num_groups(0);                                                         \
    const int block_i = (int)get_group_id(0);                                                      \
    const int dd = (int)get_group_id(1);                                                           \
    const int d = first_d + dd;                                                                    \
    const int half_nb = nb / 2;                                                                    \
    /* the distance nb/2 of an even nb comes from I < nb/2 only */                                 \
    const int absent = d > half_nb || (nb % 2 == 0 && d == half_nb && d > 0 && block_i >= half_nb); \
    const int block_j = (block_i + d) % nb;                                                        \
    const int edge = d == 0 || (n % FK_BLOCK != 0 && (block_i == nb - 1 || block_j == nb - 1));    \
    const size_t slot_size = (size_t)n * FK_COMPONENTS;                                            \
    __global uint2 *out_i = slots + (size_t)(2 * dd) * slot_size;                                  \
    __global uint2 *out_j = out_i + slot_size

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
fk_symmetric(const int n, const int first_d, __global const float4 *restrict body,
             __global const float4 *restrict body_aux, __global const float *restrict table,
             __constant const float *restrict physics, const float4 acc_param,
             __global uint2 *restrict slots)
{
    __local fk_jbody tile[FK_SPAN];
    __local fk_acc jacc[FK_COMPONENTS * FK_SPAN];
    FK_SYM_PAIR_SETUP;
    if (absent || edge)
        return;
    FK_PAIR_PROLOGUE(physics, table, acc_param);
    fk_sym_block_pair(block_i, block_j, body, body_aux, &phys, &env, tile, jacc, out_i, out_j);
}

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
fk_symmetric_edges(const int n, const int first_d, __global const float4 *restrict body,
                   __global const float4 *restrict body_aux, __global const float *restrict table,
                   __constant const float *restrict physics, const float4 acc_param,
                   __global uint2 *restrict slots)
{
    __local fk_jbody tile[2 * FK_BLOCK];
    FK_SYM_PAIR_SETUP;
    if (absent || !edge)
        return;
    FK_PAIR_PROLOGUE(physics, table, acc_param);
    fk_sym_one_sided(n, block_i, block_j, body, body_aux, &phys, &env, tile, out_i, out_j);
}

/* Merges the slots of distances first_d .. first_d + count - 1 into out, in distance order, i-side
 * before j-side (deterministic), starting from out's previous value when accumulate is set. */
__kernel void fk_symmetric_reduce(const int n, const int nb, const int first_d, const int count,
                                  const int accumulate, __global const uint2 *restrict slots,
                                  __global uint2 *restrict out)
{
    const size_t g = get_global_id(0);
    const size_t total = (size_t)n * FK_COMPONENTS;
    if (g >= total)
        return;
    const int block = (int)(g / FK_COMPONENTS) / FK_BLOCK;
    const int half_nb = nb / 2;
    const int even_half = nb % 2 == 0;
    fk_acc sum = accumulate ? fk_acc_unpack(out[g]) : fk_acc_zero();
    for (int dd = 0; dd < count; ++dd) {
        const int d = first_d + dd;
        const int split_half = even_half && d == half_nb && d > 0;
        if (d == 0 || !split_half || block < half_nb)
            sum = fk_merge_packed(sum, slots[(size_t)(2 * dd) * total + g]);
        if (d > 0 && (!split_half || block >= half_nb))
            sum = fk_merge_packed(sum, slots[(size_t)(2 * dd + 1) * total + g]);
    }
    out[g] = fk_acc_pack(sum);
}
