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

/* The pair kernels' first parameters, the order the host sets them in (src/core/loops/neighbors.c
 * neighbors_enqueue); each kernel adds its outputs after them. */
#define FK_NB_PAIR_PARAMS                                                                          \
    const int n, __global const uint2 *restrict offsets, __global const int *restrict partners,    \
        __global const float4 *restrict body, __global const float4 *restrict body_aux,           \
        __global const float *restrict table, __constant const float *restrict physics,           \
        const float4 acc_param

/* The start of a kernel with one particle per work-item: its particle i (work-items past n
 * return: no barriers follow in these kernels), the pass's physics and accumulator settings (phys,
 * env), i's body bi and its excluded partners. */
#define FK_NB_PARTICLE_PROLOGUE(i)                                                                 \
    const int i = (int)get_global_id(0);                                                           \
    if (i >= n)                                                                                    \
        return;                                                                                    \
    FK_PAIR_PROLOGUE(physics, table, acc_param);                                                   \
    const fk_ibody bi = fk_load_i(body, body_aux, i);                                              \
    FK_EXCLUDED_DECLARE(excluded);                                                                 \
    FK_LOAD_EXCLUDED(body_aux, i, excluded)

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

#ifndef FK_LANES
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
fk_neighbors_half(FK_NB_PAIR_PARAMS, __global float *restrict jterms, __global uint2 *restrict out)
{
    FK_NB_PARTICLE_PROLOGUE(i);
    fk_acc acc[FK_COMPONENTS];
    FK_ACC_ZERO(acc);
    FK_J_RUN(k, (int)offsets[i].x, (int)offsets[i + 1].x, FK_NB_HALF_STEP, 0);
    FK_ACC_STORE(out + (size_t)i * FK_COMPONENTS, acc);
}
#endif

/* Where the j-side of list A's entry k, component c, is kept: interleaved by the scalar walk, one
 * plane per component in the lane form (its vector stores are then contiguous); jterm_stride, the
 * entries of the lists A, is an argument of the lane form's kernels. */
#ifdef FK_LANES
#define FK_JTERM(k, c) ((size_t)(c) * (size_t)jterm_stride + (size_t)(k))
#define FK_JTERM_STRIDE_ARG , const int jterm_stride
#else
#define FK_JTERM(k, c) ((size_t)(k) * FK_COMPONENTS + (size_t)(c))
#define FK_JTERM_STRIDE_ARG
#endif

/* i's sum continued with its side of each pair (j, i), j < i, that j computed: B holds the pairs'
 * places in the lists A (their mirrors). */

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
fk_neighbors_gather(const int n, __global const uint2 *restrict offsets,
                    __global const int *restrict mirrors, __global const float *restrict jterms,
                    const float4 acc_param, __global uint2 *restrict out FK_JTERM_STRIDE_ARG)
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
        const int place = mirrors[k];
        _Pragma("unroll") for (int c = 0; c < FK_COMPONENTS; ++c)
            fk_acc_add(&acc[c], (fk_real)jterms[FK_JTERM(place, c)], &env);
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

/* FK_NB_SPLIT (host -D, full lists, the scalar walk): work-items per particle. 1: one walks the
 * whole list. S > 1 (2, 4 or 8, dividing WG_SIZE): S consecutive work-items share particle
 * gid / S, part p taking the list places begin + p, begin + p + S, ... in order, and part 0
 * merges the S partial sums in part order (fk_acc_merge, as the all-pairs j-splits are) through
 * local memory: more work-items where N alone leaves a GPU's cores idle (a list walk is a chain
 * of dependent loads and additions), a fixed order of the same terms, fixed64's integers
 * unchanged. */
#ifndef FK_NB_SPLIT
#define FK_NB_SPLIT 1
#endif

#if !defined(FK_LANES) && FK_NB_SPLIT > 1
#if WG_SIZE % FK_NB_SPLIT
#error "FK_NB_SPLIT must divide WG_SIZE"
#endif
/* Places first, first + S, ... below end, UNROLL_J per unrolled step. */
#define FK_NB_STRIDED_RUN(first, end, STEP)                                                        \
    {                                                                                              \
        int k = (first);                                                                           \
        for (; k + (UNROLL_J - 1) * FK_NB_SPLIT < (end); k += UNROLL_J * FK_NB_SPLIT) {            \
            _Pragma("unroll") for (int v = 0; v < UNROLL_J; ++v)                                   \
            {                                                                                      \
                STEP(k + v * FK_NB_SPLIT, 0);                                                      \
            }                                                                                      \
        }                                                                                          \
        for (; k < (end); k += FK_NB_SPLIT) {                                                      \
            STEP(k, 0);                                                                            \
        }                                                                                          \
    }

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
fk_neighbors_full(FK_NB_PAIR_PARAMS, __global uint2 *restrict out)
{
    __local uint2 parts[WG_SIZE * FK_COMPONENTS];
    const int i = (int)(get_global_id(0) / FK_NB_SPLIT);
    const int part = (int)(get_local_id(0) % FK_NB_SPLIT);
    const int slot = (int)get_local_id(0) - part; /* part 0's work-item in the group */
    const int live = i < n;                       /* every work-item reaches the barrier */
    FK_PAIR_PROLOGUE(physics, table, acc_param);
    const fk_ibody bi = fk_load_i(body, body_aux, live ? i : 0);
    FK_EXCLUDED_DECLARE(excluded);
    FK_LOAD_EXCLUDED(body_aux, live ? i : 0, excluded);
    fk_acc acc[FK_COMPONENTS];
    FK_ACC_ZERO(acc);
    const int begin = live ? (int)offsets[i].x : 0, end = live ? (int)offsets[i + 1].x : 0;
    FK_NB_STRIDED_RUN(begin + part, end, FK_NB_FULL_STEP);
    _Pragma("unroll") for (int c = 0; c < FK_COMPONENTS; ++c)
        parts[(size_t)get_local_id(0) * FK_COMPONENTS + c] = fk_acc_pack(acc[c]);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!live || part != 0)
        return;
    _Pragma("unroll") for (int c = 0; c < FK_COMPONENTS; ++c)
    {
        fk_acc sum = acc[c];
        for (int p = 1; p < FK_NB_SPLIT; ++p)
            sum = fk_merge_packed(sum, parts[(size_t)(slot + p) * FK_COMPONENTS + c]);
        out[(size_t)i * FK_COMPONENTS + c] = fk_acc_pack(sum);
    }
}
#elif !defined(FK_LANES)
/* Every partner of i (never i itself: the pair mask is only an excluded partner). */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
fk_neighbors_full(FK_NB_PAIR_PARAMS, __global uint2 *restrict out)
{
    FK_NB_PARTICLE_PROLOGUE(i);
    fk_acc acc[FK_COMPONENTS];
    FK_ACC_ZERO(acc);
    FK_J_RUN(k, (int)offsets[i].x, (int)offsets[i + 1].x, FK_NB_FULL_STEP, 0);
    FK_ACC_STORE(out + (size_t)i * FK_COMPONENTS, acc);
}
#endif
#endif /* full lists */

#ifdef FK_LANES
/*
 * The lane form, for CPUs (host -D FK_LANES=8 or 16, the device's native float vector width; the
 * host builds it where the force law and the accumulator have lane forms, FK_INTERACT_JLANES in
 * forces/molecular_pair.clh and FK_ACC_LANES): still one particle per work-item, its partners
 * FK_LANES at a time in the lanes of vectors (gathered: a list is any set of particles), so the
 * pair arithmetic runs in the vector unit. POCL does not vectorize the scalar walk across
 * work-items, whose lists differ in length. Lane u sums the partners at list places k = u mod
 * FK_LANES in list order, and the lanes' sums are merged in lane order, in the accumulator's own
 * arithmetic (fk_acc_merge, as the j-splits are): fixed64's integer sums are exact in any order;
 * float's and the others' follow one fixed order. Each term is the scalar walk's operations, its
 * bits where the implementation computes rsqrt alike in vectors and scalars (POCL; not Intel's CPU
 * runtime): no bit-identity is promised here, only in reproducible mode, where lanes do not run.
 * Half lists store the j-sides as the scalar form does, and fk_neighbors_gather (above) is
 * shared.
 */
#if !defined(FK_INTERACT_JLANES) || !defined(FK_ACC_LANES)
#error "this force law or accumulator has no lane form; the host builds the scalar walk for it"
#endif
#if FK_NEIGHBORS_HALF && !(defined(FK_SYM_SYMMETRIC) && FK_SYM_SYMMETRIC)
#error "the lane form's half lists need a pair function symmetric in i and j"
#endif
#ifndef FK_ACC_LANE_FORMS /* one form of the addition */
#define FK_ACC_LANE_FORMS 1
#define fk_accv_form(env) 0
#endif

#if FK_EXCLUSION_SLOTS
/* All bits set in the lanes whose partner is one of i's excluded partners. */
FK_LANE_INLINE fk_maskv fk_excluded_lanes(const int *excluded, const fk_maskv j)
{
    fk_maskv hit = (fk_maskv)0;
    for (int s = 0; s < FK_EXCLUSION_SLOTS; ++s)
        hit |= j == (fk_maskv)excluded[s];
    return hit;
}
#define FK_EXCLUDED_LANES(excluded, j) fk_excluded_lanes(excluded, j)
#else
#define FK_EXCLUDED_LANES(excluded, j) ((fk_maskv)0)
#endif

/* The walk over i's list [begin, end) for one form of the accumulator's addition (a constant):
 * FK_LANES partners per step, read as one vector from list place base. A last step with fewer
 * left reads the list's last FK_LANES places (base = end - FK_LANES) and masks those already done;
 * a list shorter than FK_LANES reads past its end, into the next particle's list or the
 * FK_LANES entries of padding after the last list (neighbors.c allocates and zeroes them: valid
 * particle indices), and masks those places. */
#define FK_NB_LANE_WALK(form)                                                                      \
    for (int k = begin; k < end; k += FK_LANES) {                                                  \
        const int base = k + FK_LANES <= end ? k : max(begin, end - FK_LANES);                     \
        const fk_maskv j = FK_VLOAD(0, partners + base);                                           \
        const fk_jbodyv bj = fk_load_j_lanes(body, body_aux, &phys, &bi, j, one_type);             \
        /* the lanes hold the partners in the order FK_JL_PERM (forces/molecular_pair.clh) */    \
        const fk_maskv place = FK_JL_PERM((fk_maskv)base + FK_LANE_INDEX);                         \
        const fk_maskv outside = (place >= (fk_maskv)end) | (place < (fk_maskv)k);                 \
        fk_realv terms[FK_COMPONENTS];                                                             \
        fk_pair_terms_jlanes(&bi, &bj, outside | FK_EXCLUDED_LANES(excluded, FK_JL_PERM(j)),       \
                             &phys, terms);                                                        \
        _Pragma("unroll") for (int c = 0; c < FK_COMPONENTS; ++c)                                  \
            fk_accv_add(&acc[c], terms[c], &env, form);                                            \
        FK_NB_LANE_JSIDES(base, k, end, terms);                                                    \
    }

#if FK_NEIGHBORS_HALF
/* j's side of each pair at the pair's place in the list, one plane per component: forces negated,
 * the potential as it is; only the places [k, end) of this step (the others are masked lanes). */
#define FK_NB_LANE_JSIDES(base, k, end, terms)                                                     \
    _Pragma("unroll") for (int c = 0; c < FK_COMPONENTS; ++c)                                      \
    {                                                                                              \
        const fk_realv side = FK_JL_UNPERM(c < FK_FORCE_COMPONENTS ? -terms[c] : terms[c]);        \
        __global float *plane = jterms + FK_JTERM(0, c);                                           \
        if ((base) == (k) && (k) + FK_LANES <= (end)) {                                            \
            FK_VSTORE(side, 0, plane + (k));                                                       \
        } else {                                                                                   \
            float sides[FK_LANES];                                                                 \
            FK_VSTORE(side, 0, sides);                                                             \
            for (int p = (k); p < (end); ++p)                                                      \
                plane[p] = sides[p - (base)];                                                      \
        }                                                                                          \
    }
#else
#define FK_NB_LANE_JSIDES(base, k, end, terms) (void)0
#endif

/* The scalar walk's arguments, then one_type: nonzero when the system has one particle type (one
 * pair-table entry for every pair); half lists: jterm_stride last. */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
#if FK_NEIGHBORS_HALF
fk_neighbors_half(FK_NB_PAIR_PARAMS, __global float *restrict jterms, __global uint2 *restrict out,
                  const int one_type, const int jterm_stride)
#else
fk_neighbors_full(FK_NB_PAIR_PARAMS, __global uint2 *restrict out, const int one_type)
#endif
{
    FK_NB_PARTICLE_PROLOGUE(i);
    fk_accv acc[FK_COMPONENTS];
    _Pragma("unroll") for (int c = 0; c < FK_COMPONENTS; ++c) acc[c] = fk_accv_zero();
    const int begin = (int)offsets[i].x, end = (int)offsets[i + 1].x;
#if FK_ACC_LANE_FORMS > 1
    if (fk_accv_form(&env) == 1)
        FK_NB_LANE_WALK(1)
    else
#endif
        FK_NB_LANE_WALK(0)
    _Pragma("unroll") for (int c = 0; c < FK_COMPONENTS; ++c)
    {
        fk_acc lanes[FK_LANES];
        fk_accv_store(&acc[c], &env, lanes);
        fk_acc sum = lanes[0];
        for (int u = 1; u < FK_LANES; ++u)
            sum = fk_acc_merge(sum, lanes[u]);
        out[(size_t)i * FK_COMPONENTS + c] = fk_acc_pack(sum);
    }
}
#endif /* FK_LANES */
