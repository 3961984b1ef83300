/*
 * forcekit: the all-pairs loop for CPUs, with i-particles in vector lanes.
 *
 * POCL 3.1 does not vectorize cl/pairwise.cl's loop across work-items (its work-item loop is an
 * outer loop around the j-loop, which LLVM's loop vectorizer does not take; bench/README.md), so
 * this file makes the vector width explicit: each work-item carries FK_LANES i-particles as the
 * lanes of floatN vectors, and each j-particle is a scalar broadcast to all lanes. Within one lane
 * the j-sum runs in the same sequential order as the scalar template's, so each particle's sum is
 * the scalar loop's sum in the same order (the compensated accumulators would depend on that).
 *
 * Same kernel arguments, launch shape (dimension 0 in work-groups of WG_SIZE work-items,
 * dimension 1 the j-splits) and output layout (out[split][i][component], 8 bytes each, in the
 * accumulator's representation) as fk_pairwise in cl/pairwise.cl, so the host's buffers, the split
 * reduction (the pair step's fk_reduce_splits, cl/pair_step.clh) and the read-back are shared; only the i-particles per work-group differ (WG_SIZE *
 * FK_LANES, contiguous per work-item: a CPU core reads them once per work-item, no coalescing to
 * keep). j-particles are read from global memory (the core's caches): no local tiling, whose
 * barriers POCL turns into work-item loops that spill every live vector.
 *
 * Defines, each with a default so the file compiles on its own (`-I cl`): those of
 * cl/pairwise.cl (FORCE, ACCUM, their headers, UNROLL_J, WG_SIZE, POTENTIAL, REPRODUCIBLE;
 * UNROLL_I and LOCAL_TILING are ignored) and
 *   FK_LANES              i-particles per work-item: 8 or 16 (float8 / float16). The host takes
 *                         the device's native float vector width (CL_DEVICE_NATIVE_VECTOR_WIDTH_
 *                         FLOAT: 8 on AVX2, 16 on AVX-512) and never a wider one: a float16 on an
 *                         AVX2 device is two registers, and clang warns on every function that
 *                         takes or returns one ("changes the ABI"), which POCL prints to stderr.
 *
 * The pair step (cl/pair_step.clh) defines, with FK_LANES, the vector vocabulary (FK_VEC, FK_VLOAD,
 * fk_maskv, FK_LANE_INDEX, FK_LANE_INLINE, ...) before it includes the headers. Besides the pair
 * step's contract, the headers provide, inside #ifdef FK_LANES:
 *   force law:   FK_INTERACT_LANES, fk_ibodyv, fk_load_i_lanes(body, aux, first, n),
 *                fk_interact_lanes(&ibodyv, &jbody, mask, &phys, &env, accv[], form), the
 *                scalar fk_interact's arithmetic over vectors (ga.clh: one FK_GA_PAIR for both);
 *                mask: all bits set in the lanes whose particle is j (the lane pair mask)
 *   accumulator: FK_ACC_LANES, fk_realv (FK_VEC(float)), fk_accv, fk_accv_zero(),
 *                fk_accv_add(&accv, fk_realv, &env, form), fk_accv_store(&accv, &env,
 *                fk_acc lanes[FK_LANES]) (each lane then leaves through the scalar fk_acc_pack,
 *                so that the packed words are the scalar accumulator's, bit for bit)
 *   optionally   FK_ACC_LANE_FORMS (> 1) and fk_accv_form(&env): an addition with forms chosen per
 *                launch (fixed64: by the per-term limit); the j-loop is written out once per form,
 *                with the form a constant, so that nothing is decided per pair
 * Lane functions are FK_LANE_INLINE (always inlined: POCL left fixed64's call per pair, with the
 * state in memory, as a function call).
 * This file holds the lane i-block (FK_LANES i-particles in vectors: load, zero, store lane by
 * lane) and the j-loop; the pair step's scalar i-block does not apply here.
 * The host builds this file only for a force law and an accumulator that src/core/laws/registry.c marks as
 * having a lane form (`.lanes = 1`; tests/test_lanes.c checks that the headers' `#define
 * FK_INTERACT_LANES` / `#define FK_ACC_LANES` lines agree); the others run cl/pairwise.cl.
 */
#ifndef WG_SIZE
#define WG_SIZE 8
#endif
#ifndef FK_LANES
#define FK_LANES 16
#endif
#define FK_PAIR_STEP_SPLITS 1 /* fk_reduce_splits merges the j-splits */
/* The j-loop below can run in blocks of 128 j-particles for an accumulator that takes them
 * (FK_ACCV_BLOCKS: narumi, whose per-addition counter and empty test they replace). */
#define FK_ACCV_BLOCK_TERMS 128
#include "pair_step.clh"

#ifndef FK_ACC_LANE_FORMS /* one form of the addition */
#define FK_ACC_LANE_FORMS 1
#define fk_accv_form(env) 0
#endif

#if !defined(FK_INTERACT_LANES) || !defined(FK_ACC_LANES)
#error "this force law or accumulator has no lane form; the host builds cl/pairwise.cl for it"
#endif

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
fk_pairwise(const int n, const int j_chunk, __global const float4 *restrict body,
            __global const float4 *restrict body_aux, __global const float *restrict table,
            __constant const float *restrict physics, const float4 acc_param,
            __global uint2 *restrict out)
{
    const int i_first = (int)get_global_id(0) * FK_LANES;
    const int split = (int)get_group_id(1);
    FK_PAIR_PROLOGUE(physics, table, acc_param);
    const fk_ibodyv ibody = fk_load_i_lanes(body, body_aux, i_first, n);
    const fk_maskv i_index = (fk_maskv)i_first + FK_LANE_INDEX;

    fk_accv acc[FK_COMPONENTS];
    _Pragma("unroll") for (int k = 0; k < FK_COMPONENTS; ++k) acc[k] = fk_accv_zero();

    const int j_begin = split * j_chunk;
    const int j_end = min(n, j_begin + j_chunk);
    /* The j-loop for one form of the accumulator's addition (a constant): each j-particle read from
     * global memory and broadcast to the lanes, the lane pair mask the lanes whose particle is j. */
#define FK_LANE_STEP(j, form)                                                                      \
    const fk_jbody jb = fk_load_j(body, body_aux, j);                                              \
    fk_interact_lanes(&ibody, &jb, i_index == (fk_maskv)(j), &phys, &env, acc, form)
#ifdef FK_ACCV_BLOCKS
#define FK_J_LOOP(form)                                                                            \
    for (int b_ = j_begin; b_ < j_end; b_ += FK_ACCV_BLOCK_TERMS) {                                \
        const int e_ = min(j_end, b_ + FK_ACCV_BLOCK_TERMS);                                       \
        _Pragma("unroll") for (int k = 0; k < FK_COMPONENTS; ++k)                                  \
            fk_accv_block_begin(&acc[k], &env);                                                    \
        FK_J_RUN(j, b_, e_, FK_LANE_STEP, form)                                                    \
        _Pragma("unroll") for (int k = 0; k < FK_COMPONENTS; ++k)                                  \
            fk_accv_block_end(&acc[k], e_ - b_);                                                   \
    }
#else
#define FK_J_LOOP(form) FK_J_RUN(j, j_begin, j_end, FK_LANE_STEP, form)
#endif
#if FK_ACC_LANE_FORMS > 1
    if (fk_accv_form(&env) == 1)
        FK_J_LOOP(1)
    else
#endif
        FK_J_LOOP(0)
#undef FK_J_LOOP
#undef FK_LANE_STEP

    __global uint2 *dst = out + ((size_t)split * (size_t)n + (size_t)i_first) * FK_COMPONENTS;
    _Pragma("unroll") for (int k = 0; k < FK_COMPONENTS; ++k)
    {
        fk_acc lanes[FK_LANES];
        fk_accv_store(&acc[k], &env, lanes);
        for (int u = 0; u < FK_LANES; ++u)
            if (i_first + u < n)
                dst[u * FK_COMPONENTS + k] = fk_acc_pack(lanes[u]);
    }
}
