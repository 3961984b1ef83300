/*
 * forcekit: the Verlet neighbour-list pair loop, for the short-range force laws.
 *
 * The host specializes this file exactly as cl/pairwise.cl (same -D defines, the same force-law and
 * accumulator headers, the same pair step cl/pair_step.clh), so every force law with a cutoff and
 * every accumulator runs here unchanged; results leave the device as one uint2 per component, as
 * from the other loops. The lists are built by cl/neighbors_build.cl (their layout is described
 * there); this file holds the walk over them. One work-item per particle i, its partners in list
 * order, UNROLL_J of them per unrolled step.
 *
 * FK_NEIGHBORS_HALF (host -D) chooses the form:
 *   0, full lists: i adds its own terms for every partner (fk_neighbors_full), one running sum per
 *     particle as in the all-pairs loop, in the list's fixed order. Every accumulator.
 *   1, half lists with Newton's third law: each pair (i, j), j > i, is computed once, by i, in the
 *     pair step's capture mode (fk_sym_pair): i adds its side, and j's side (exact negations, by the
 *     force law's j-side rule) is stored at the pair's place in the list (fk_neighbors_half); then
 *     fk_neighbors_gather continues each particle's sum with the stored j-sides of its pairs with
 *     lower partners, in the list's fixed order. Each particle's result is still one running sum of
 *     its terms, in a fixed order, nothing merged; the host gives half lists to the accumulators
 *     whose partial sums the symmetric loop merges (float, double, fixed64) and the bound
 *     pre-pass that serves fixed64.
 * Either way each result is written once, and sums do not depend on which work-item ran when.
 */
#ifndef FORCE
#define FORCE lj
#endif
#ifndef FORCE_HEADER
#define FORCE_HEADER "forces/lj.clh"
#endif
/* (FORCE above: the lists need a cutoff, so the default law is lj; the other defaults are every
 * loop's, cl/template_defaults.clh.) */
#ifndef WG_SIZE
#define WG_SIZE 64
#endif
#ifndef FK_NEIGHBORS_HALF
#define FK_NEIGHBORS_HALF 0
#endif
#if FK_NEIGHBORS_HALF
#define FK_CAPTURE_TERMS 1 /* fk_interact stores its terms: fk_sym_pair uses them twice */
#endif
/* Positions lie within one box length of a periodic box (the grid refuses others): the minimum
 * image without rint (forces/molecular_pair.clh). */
#define FK_IMAGE_BOUNDED 1
#include "pair_step.clh"

#if FK_NEIGHBORS_HALF
/* The stored j-sides are the pair terms themselves, kept as float: the accumulator's pair terms
 * must be float (they are for every accumulator the host gives half lists). */
typedef char fk_neighbors_terms_are_float[sizeof(fk_real) == sizeof(float) ? 1 : -1];

/* Partner k of i's list A: i's side into acc, j's side into jterms[k]. */
#define FK_NB_HALF_STEP(k, unused)                                                                 \
    {                                                                                              \
        const int j = partners[k];                                                                 \
        const fk_jbody bj = fk_load_j(body, body_aux, j);                                          \
        fk_real ti[FK_COMPONENTS], tj[FK_COMPONENTS];                                              \
        fk_sym_pair(&bi, &bj, FK_EXCLUDED(excluded, j), &phys, &env, ti, tj);                      \
        _Pragma("unroll") for (int c = 0; c < FK_COMPONENTS; ++c)                                  \
        {                                                                                          \
            fk_acc_add(&acc[c], ti[c], &env);                                                      \
            jterms[(size_t)(k)*FK_COMPONENTS + c] = tj[c];                                        \
        }                                                                                          \
    }

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
fk_neighbors_half(const int n, __global const uint2 *restrict offsets,
                  __global const int *restrict partners, __global const float4 *restrict body,
                  __global const float4 *restrict body_aux, __global const float *restrict table,
                  __constant const float *restrict physics, const float4 acc_param,
                  __global float *restrict jterms, __global uint2 *restrict out)
{
    const int i = (int)get_global_id(0);
    if (i >= n)
        return; /* no barriers here */
    FK_PAIR_PROLOGUE(physics, table, acc_param);
    const fk_ibody bi = fk_load_i(body, body_aux, i);
    FK_EXCLUDED_DECLARE(excluded);
    FK_LOAD_EXCLUDED(body_aux, i, excluded);
    fk_acc acc[FK_COMPONENTS];
    FK_ACC_ZERO(acc);
    FK_J_RUN(k, (int)offsets[i].x, (int)offsets[i + 1].x, FK_NB_HALF_STEP, 0);
    FK_ACC_STORE(out + (size_t)i * FK_COMPONENTS, acc);
}

/* i's sum continued with its side of each pair (j, i), j < i, that j computed: B holds the pairs'
 * places in the lists A (their mirrors). */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
fk_neighbors_gather(const int n, __global const uint2 *restrict offsets,
                    __global const int *restrict mirrors, __global const float *restrict jterms,
                    const float4 acc_param, __global uint2 *restrict out)
{
    const int i = (int)get_global_id(0);
    if (i >= n)
        return;
    const fk_acc_env env = fk_acc_env_load(acc_param);
    __global uint2 *mine = out + (size_t)i * FK_COMPONENTS;
    fk_acc acc[FK_COMPONENTS];
    _Pragma("unroll") for (int c = 0; c < FK_COMPONENTS; ++c) acc[c] = fk_acc_unpack(mine[c]);
    const int end = (int)offsets[i + 1].y;
    for (int k = (int)offsets[i].y; k < end; ++k) {
        __global const float *side = jterms + (size_t)mirrors[k] * FK_COMPONENTS;
        _Pragma("unroll") for (int c = 0; c < FK_COMPONENTS; ++c)
            fk_acc_add(&acc[c], (fk_real)side[c], &env);
    }
    FK_ACC_STORE(mine, acc);
}

#else /* full lists */

#define FK_NB_FULL_STEP(k, unused)                                                                 \
    {                                                                                              \
        const int j = partners[k];                                                                 \
        const fk_jbody bj = fk_load_j(body, body_aux, j);                                          \
        fk_interact(&bi, &bj, FK_EXCLUDED(excluded, j), &phys, &env, acc);                         \
    }

/* Every partner of i (never i itself: the pair mask is only an excluded partner). */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
fk_neighbors_full(const int n, __global const uint2 *restrict offsets,
                  __global const int *restrict partners, __global const float4 *restrict body,
                  __global const float4 *restrict body_aux, __global const float *restrict table,
                  __constant const float *restrict physics, const float4 acc_param,
                  __global uint2 *restrict out)
{
    const int i = (int)get_global_id(0);
    if (i >= n)
        return;
    FK_PAIR_PROLOGUE(physics, table, acc_param);
    const fk_ibody bi = fk_load_i(body, body_aux, i);
    FK_EXCLUDED_DECLARE(excluded);
    FK_LOAD_EXCLUDED(body_aux, i, excluded);
    fk_acc acc[FK_COMPONENTS];
    FK_ACC_ZERO(acc);
    FK_J_RUN(k, (int)offsets[i].x, (int)offsets[i + 1].x, FK_NB_FULL_STEP, 0);
    FK_ACC_STORE(out + (size_t)i * FK_COMPONENTS, acc);
}
#endif
