/*
 * forcekit: targets against sources (issue #18), the engine behind fk_sources and libsapporo.
 *
 * A set of ni targets (i-particles, predicted by the caller) is evaluated against a resident set of
 * nj sources (j-particles, predicted here to the block time ti): acceleration, jerk and potential
 * of gravity (the gaj law), the nearest source of each target, and the sources within each
 * target's radius h2 (neighbour lists). Sources whose ID equals the target's ID are left out (the
 * self pair of a Hermite code's block step, where the target is its own host-predicted copy).
 *
 * Why not cl/pairwise.cl with cl/forces/gaj.clh: the i-set and the j-set are different arrays of
 * different sizes, positions are double-single pairs (FK_G6_DS) rather than one float, the pair is
 * masked by ID rather than by index, and the loop also yields the nearest neighbour and the lists.
 * The accumulators are shared: cl/accum/<ACCUM>.clh gives fk_real, fk_acc and the arithmetic, and
 * results leave as packed uint2 per component like every loop's, decoded by the host's decoder.
 *
 * Positions. FK_G6_DS=1: each coordinate is a float pair (hi, lo), hi = (float)x, lo =
 * (float)(x - hi), 48 bits of mantissa; a difference is (xj.hi - xi.hi) + (xj.lo - xi.lo) in
 * fk_real, so close pairs far from the origin keep their relative precision (with ref's double
 * fk_real the difference is as good as double's). FK_G6_DS=0: hi only (float positions).
 * Velocities are carried the same way.
 *
 * The predictor runs in double (the engine needs cl_khr_fp64): x(ti) = x + v dt + a/2 dt^2 +
 * j/6 dt^3 + s/24 dt^4, v(ti) = v + a dt + j/2 dt^2 + s/6 dt^3, dt = ti - tj, Horner form, with
 * contraction off so that it is the same arithmetic as the host's.
 *
 * Defines (all with defaults): ACCUM_HEADER, WG_SIZE (work-items per work-group, also the
 * j-tile), FK_G6_DS, FK_G6_UNROLL (targets per work-item).
 */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#ifndef ACCUM_HEADER
#define ACCUM_HEADER "accum/double.clh"
#endif
#ifndef WG_SIZE
#define WG_SIZE 64
#endif
#ifndef FK_G6_DS
#define FK_G6_DS 1
#endif
/* Targets per work-item (1, 2 or 4): each source read from local memory serves that many. */
#ifndef FK_G6_UNROLL
#define FK_G6_UNROLL 1
#endif
#ifndef REPRODUCIBLE
#define REPRODUCIBLE 0
#endif
/* 1: each target's components have their own accumulator settings (fixed64's scale from the
 * caller's hints, t_param[i][component]); 0: the launch's acc_param for all. */
#ifndef FK_G6_TARGET_ENV
#define FK_G6_TARGET_ENV 0
#endif

#include ACCUM_HEADER

#if FK_ACC_ALLOW_CONTRACT
#pragma OPENCL FP_CONTRACT ON
#else
#pragma OPENCL FP_CONTRACT OFF
#endif

/* Outputs per target: ax ay az jx jy jz phi; in the result buffer followed by the nearest ID
 * (uint2: ID, 0) and its r^2 (a double's bits). */
#define FK_G6_COMPONENTS 7
#define FK_G6_RESULT_WORDS 9
/* s^2 floor at eps = 0 (as gaj): a masked self pair at r = 0 then gives 0 * finite, not NaN. */
#define FK_G6_TINY 1e-30

#if FK_G6_DS
#define FK_G6_DIFF(jh, jl, ih, il)                                                                 \
    ((((fk_real)(jh) - (fk_real)(ih))) + ((fk_real)(jl) - (fk_real)(il)))
#else
#define FK_G6_DIFF(jh, jl, ih, il) ((fk_real)(jh) - (fk_real)(ih))
#endif

/* With double pair arithmetic (ref) and DS positions, the sources are staged in local memory as
 * doubles, hi + lo (the 48-bit value, exact in double but for a lo far below hi's last bit, where
 * the rounding is below the pair's own 2^-48), and the targets likewise once: a difference is then
 * one subtraction instead of four conversions and three additions per coordinate, which made ref
 * the slowest configuration per pair. */
#if FK_G6_DS && defined(FK_REAL_IS_DOUBLE)
#define FK_G6_STAGE_DOUBLE 1
#else
#define FK_G6_STAGE_DOUBLE 0
#endif

/* One slot: x_t (x, y, z, tj), v_m (vx, vy, vz, mass), a, jerk, snap (xyz, unused w). Writes the
 * predicted position and velocity as hi/lo float pairs; the mass goes as a pair too (w of pos_hi
 * and pos_lo), since a float mass alone would cap every term at 6e-8.
 *
 * Slot updates ride along (one launch fewer per block step: each command costs the host several
 * microseconds to enqueue on some implementations): the n updates at update + offset, six double4
 * each (x|t, v|m, a, jerk, snap, then the slot and the ID as an int2 in the first double of the
 * sixth), sorted by slot. Work-item j looks its slot up among them (a binary search); an updated
 * slot is predicted from its update and the update is stored into the slot arrays, by this
 * work-item alone. Work-items from nj up to `slots` (one past the last updated slot) only store. */
__kernel void fk_g6_predict(const int nj, const double ti, const int slots, const int n,
                            __global const double4 *restrict update, const int offset,
                            __global double4 *restrict x_t, __global double4 *restrict v_m,
                            __global double4 *restrict acc, __global double4 *restrict jerk,
                            __global double4 *restrict snap, __global int *restrict s_id,
                            __global float4 *restrict pos_hi, __global float4 *restrict pos_lo,
                            __global float4 *restrict vel_hi, __global float4 *restrict vel_lo)
{
    const int j = (int)get_global_id(0);
    if (j >= slots)
        return;
    int lo = 0, hi = n; /* the first update with slot >= j */
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (as_int2(update[offset + 6 * mid + 5].x).x < j)
            lo = mid + 1;
        else
            hi = mid;
    }
    double4 xt, vm, a4, k4, s4;
    if (lo < n && as_int2(update[offset + 6 * lo + 5].x).x == j) {
        __global const double4 *u = update + offset + 6 * lo;
        xt = u[0];
        vm = u[1];
        a4 = u[2];
        k4 = u[3];
        s4 = u[4];
        x_t[j] = xt;
        v_m[j] = vm;
        acc[j] = a4;
        jerk[j] = k4;
        snap[j] = s4;
        s_id[j] = as_int2(u[5].x).y;
    } else {
        if (j >= nj)
            return;
        xt = x_t[j];
        vm = v_m[j];
        a4 = acc[j];
        k4 = jerk[j];
        s4 = snap[j];
    }
    const double3 a = a4.xyz, k = k4.xyz, s = s4.xyz;
    const double dt = ti - xt.w;
    /* Horner: x + dt (v + dt (a/2 + dt (k/6 + dt s/24))) */
    const double3 x =
        xt.xyz + dt * (vm.xyz + dt * (a * 0.5 + dt * (k * (1.0 / 6.0) + dt * (s * (1.0 / 24.0)))));
    const double3 v = vm.xyz + dt * (a + dt * (k * 0.5 + dt * (s * (1.0 / 6.0))));
    const float3 xh = convert_float3(x), vh = convert_float3(v);
    pos_hi[j] = (float4)(xh, (float)vm.w);
    vel_hi[j] = (float4)(vh, 0.0f);
#if FK_G6_DS
    pos_lo[j] =
        (float4)(convert_float3(x - convert_double3(xh)), (float)(vm.w - (double)(float)vm.w));
    vel_lo[j] = (float4)(convert_float3(v - convert_double3(vh)), 0.0f);
#else
    pos_lo[j] = (float4)(0.0f);
    vel_lo[j] = (float4)(0.0f);
#endif
}

/*
 * Targets against one chunk of sources: work-item (w, split) takes targets w + u * targets_stride
 * for u < FK_G6_UNROLL (targets_stride: the work-items in dimension 0), so that each source read
 * from local memory serves FK_G6_UNROLL targets, and sources [split * chunk, min(nj, (split + 1) *
 * chunk)), staged through local memory in tiles of WG_SIZE; a target past ni is computed as
 * target ni - 1 and not stored. Partial sums go to partial[split][i][component] (packed), the
 * nearest source so far to nn_r2 / nn_id [split][i]; sources with r^2 <= h2[i] (ID excluded) are
 * appended to list[i][...] through count[i] (an atomic counter that keeps counting past capacity,
 * so that the host sees the overflow; the order is the device's, the host sorts).
 */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
fk_g6_forces(const int ni, const int nj, const int chunk, const double eps2_in,
             const float4 acc_param, __global const float4 *restrict targets, const int stride,
             __global const float4 *restrict pos_hi, __global const float4 *restrict pos_lo,
             __global const float4 *restrict vel_hi, __global const float4 *restrict vel_lo,
             __global const int *restrict s_id, __global uint2 *restrict partial,
             __global double *restrict nn_r2, __global int *restrict nn_id, const int want_lists,
             const int capacity, __global int *restrict count, __global int *restrict list)
{
#if FK_G6_STAGE_DOUBLE
    __local double4 l_x[WG_SIZE], l_v[WG_SIZE]; /* w: the mass */
#else
    __local float4 l_pos_hi[WG_SIZE], l_pos_lo[WG_SIZE], l_vel_hi[WG_SIZE], l_vel_lo[WG_SIZE];
#endif
    __local int l_id[WG_SIZE];

    const int w = (int)get_global_id(0);
    const int targets_stride = (int)get_global_size(0);
    const int lid = (int)get_local_id(0);
    const int split = (int)get_global_id(1);
    /* One upload per block step carries all the targets' data (a transfer has a fixed cost): four
     * float4 arrays, then (h2, ID) as double2, then fixed64's settings, each stride entries. */
    __global const double2 *t_meta = (__global const double2 *)(targets + 4 * (size_t)stride);
    __global const float4 *t_param = targets + 5 * (size_t)stride;
    const fk_real eps2 = (fk_real)eps2_in;

    float4 ih[FK_G6_UNROLL], il[FK_G6_UNROLL], ivh[FK_G6_UNROLL], ivl[FK_G6_UNROLL];
#if FK_G6_STAGE_DOUBLE
    double3 xi[FK_G6_UNROLL], vi[FK_G6_UNROLL];
#endif
    int iid[FK_G6_UNROLL], lists[FK_G6_UNROLL];
    fk_real h2[FK_G6_UNROLL], best_r2[FK_G6_UNROLL];
    int best_id[FK_G6_UNROLL];
    fk_acc acc[FK_G6_UNROLL][FK_G6_COMPONENTS];
#if FK_G6_TARGET_ENV
    fk_acc_env env_of[FK_G6_UNROLL][FK_G6_COMPONENTS];
#define FK_G6_ENV(u, c) (&env_of[u][c])
    (void)acc_param;
#else
    const fk_acc_env env = fk_acc_env_load(acc_param);
#define FK_G6_ENV(u, c) (&env)
    (void)t_param;
#endif
#pragma unroll
    for (int u = 0; u < FK_G6_UNROLL; ++u) {
        const int gi = w + u * targets_stride;
        const int i = min(gi, ni - 1);
        ih[u] = targets[i];
        il[u] = targets[stride + i];
        ivh[u] = targets[2 * stride + i];
        ivl[u] = targets[3 * stride + i];
#if FK_G6_STAGE_DOUBLE
        xi[u] = convert_double3(ih[u].xyz) + convert_double3(il[u].xyz);
        vi[u] = convert_double3(ivh[u].xyz) + convert_double3(ivl[u].xyz);
#endif
        const double2 meta = t_meta[i];
        iid[u] = (int)meta.y;
        h2[u] = (fk_real)meta.x;
        lists[u] = want_lists && gi < ni && h2[u] > (fk_real)0;
        best_r2[u] = (fk_real)INFINITY;
        best_id[u] = -1;
        for (int c = 0; c < FK_G6_COMPONENTS; ++c) {
            acc[u][c] = fk_acc_zero();
#if FK_G6_TARGET_ENV
            env_of[u][c] = fk_acc_env_load(t_param[(size_t)i * FK_G6_COMPONENTS + c]);
#endif
        }
    }

    /* One source k of the tile against the work-item's targets. */
#if FK_G6_STAGE_DOUBLE
#define FK_G6_SOURCE(k)                                                                            \
    const double4 xj = l_x[k], vj = l_v[k];                                                        \
    const int jid = l_id[k];                                                                       \
    const fk_real mass = xj.w;
#define FK_G6_DIFFS(u)                                                                             \
    const fk_real dx = xj.x - xi[u].x, dy = xj.y - xi[u].y, dz = xj.z - xi[u].z;                   \
    const fk_real vx = vj.x - vi[u].x, vy = vj.y - vi[u].y, vz = vj.z - vi[u].z;
#else
#if FK_G6_DS
#define FK_G6_MASS(jh, jl) ((fk_real)(jh).w + (fk_real)(jl).w)
#else
#define FK_G6_MASS(jh, jl) ((fk_real)(jh).w)
#endif
#define FK_G6_SOURCE(k)                                                                            \
    const float4 jh = l_pos_hi[k], jl = l_pos_lo[k];                                               \
    const float4 jvh = l_vel_hi[k], jvl = l_vel_lo[k];                                             \
    const int jid = l_id[k];                                                                       \
    const fk_real mass = FK_G6_MASS(jh, jl);
#define FK_G6_DIFFS(u)                                                                             \
    const fk_real dx = FK_G6_DIFF(jh.x, jl.x, ih[u].x, il[u].x);                                   \
    const fk_real dy = FK_G6_DIFF(jh.y, jl.y, ih[u].y, il[u].y);                                   \
    const fk_real dz = FK_G6_DIFF(jh.z, jl.z, ih[u].z, il[u].z);                                   \
    const fk_real vx = FK_G6_DIFF(jvh.x, jvl.x, ivh[u].x, ivl[u].x);                               \
    const fk_real vy = FK_G6_DIFF(jvh.y, jvl.y, ivh[u].y, ivl[u].y);                               \
    const fk_real vz = FK_G6_DIFF(jvh.z, jvl.z, ivh[u].z, ivl[u].z);
#endif
#if REPRODUCIBLE
#define FK_G6_RSQRT(x) ((fk_real)1 / sqrt(x))
#else
#define FK_G6_RSQRT(x) rsqrt(x)
#endif
#define FK_G6_PAIR(k)                                                                              \
    {                                                                                              \
        FK_G6_SOURCE(k)                                                                            \
        _Pragma("unroll") for (int u = 0; u < FK_G6_UNROLL; ++u)                                   \
        {                                                                                          \
            const int same = jid == iid[u];                                                        \
            FK_G6_DIFFS(u)                                                                         \
            const fk_real r2 = dx * dx + (dy * dy + dz * dz);                                      \
            const fk_real inv_s = FK_G6_RSQRT(fmax(r2 + eps2, (fk_real)FK_G6_TINY));               \
            const fk_real inv_s2 = inv_s * inv_s;                                                  \
            const fk_real m_inv_s = (same ? (fk_real)0 : mass) * inv_s;                            \
            const fk_real m_inv_s3 = m_inv_s * inv_s2;                                             \
            const fk_real rv3 = (fk_real)3 * (dx * vx + dy * vy + dz * vz) * inv_s2;               \
            fk_acc_add(&acc[u][0], dx * m_inv_s3, FK_G6_ENV(u, 0));                                \
            fk_acc_add(&acc[u][1], dy * m_inv_s3, FK_G6_ENV(u, 1));                                \
            fk_acc_add(&acc[u][2], dz * m_inv_s3, FK_G6_ENV(u, 2));                                \
            fk_acc_add(&acc[u][3], (vx - rv3 * dx) * m_inv_s3, FK_G6_ENV(u, 3));                   \
            fk_acc_add(&acc[u][4], (vy - rv3 * dy) * m_inv_s3, FK_G6_ENV(u, 4));                   \
            fk_acc_add(&acc[u][5], (vz - rv3 * dz) * m_inv_s3, FK_G6_ENV(u, 5));                   \
            fk_acc_add(&acc[u][6], -m_inv_s, FK_G6_ENV(u, 6));                                     \
            if (!same && (r2 < best_r2[u] || (r2 == best_r2[u] && jid < best_id[u]))) {            \
                best_r2[u] = r2;                                                                   \
                best_id[u] = jid;                                                                  \
            }                                                                                      \
            if (lists[u] && !same && r2 <= h2[u]) {                                                \
                const int gi = w + u * targets_stride;                                             \
                const int slot = atomic_inc(&count[gi]);                                           \
                if (slot < capacity)                                                               \
                    list[(size_t)gi * capacity + slot] = jid;                                      \
            }                                                                                      \
        }                                                                                          \
    }

    const int j_begin = split * chunk;
    const int j_end = min(nj, j_begin + chunk);
    for (int base = j_begin; base < j_end; base += WG_SIZE) {
        const int load = base + lid;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (load < j_end) {
#if FK_G6_STAGE_DOUBLE
            l_x[lid] = convert_double4(pos_hi[load]) + convert_double4(pos_lo[load]);
            l_v[lid] = convert_double4(vel_hi[load]) + convert_double4(vel_lo[load]);
#else
            l_pos_hi[lid] = pos_hi[load];
            l_pos_lo[lid] = pos_lo[load];
            l_vel_hi[lid] = vel_hi[load];
            l_vel_lo[lid] = vel_lo[load];
#endif
            l_id[lid] = s_id[load];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* Work-items past the last target load their share of the tile and skip the pairs: with
         * few targets (a small block step) most of a work-group has nothing to compute. A full
         * tile runs a loop of constant length, which the compiler unrolls. */
        if (w < ni) {
            const int tile = min(WG_SIZE, j_end - base);
            if (tile == WG_SIZE) {
#pragma unroll 4
                for (int k = 0; k < WG_SIZE; ++k)
                    FK_G6_PAIR(k)
            } else {
                for (int k = 0; k < tile; ++k)
                    FK_G6_PAIR(k)
            }
        }
    }
#pragma unroll
    for (int u = 0; u < FK_G6_UNROLL; ++u) {
        const int gi = w + u * targets_stride;
        if (gi < ni) {
            const size_t out = (size_t)split * ni + gi;
            for (int c = 0; c < FK_G6_COMPONENTS; ++c)
                partial[out * FK_G6_COMPONENTS + c] = fk_acc_pack(acc[u][c]);
            nn_r2[out] = (double)best_r2[u];
            nn_id[out] = best_id[u];
        }
    }
}

/* Merges the splits: one work-group per target (global size ni * lanes, lanes a power of two up
 * to FK_G6_REDUCE_LANES), lane l merging splits l, l + lanes, ... in the accumulator's own
 * arithmetic, then a tree over the lanes in local memory. The order is fixed by splits and lanes,
 * so the result is deterministic; fixed64's sums are exact in any order. A serial merge of a few
 * hundred splits per target was most of a small block step on a GPU (a chain of dependent merges
 * in one work-item). The nearest neighbours merge the same way: the smallest r^2, ties to the
 * smaller ID, which is the same in any order. Writes result[i][component], the ID to
 * result[i][7] and its r^2 to result[i][8]. */
#define FK_G6_REDUCE_LANES 64
__kernel void fk_g6_reduce(const int ni, const int splits, __global const uint2 *restrict partial,
                           __global uint2 *restrict result, __global const double *restrict nn_r2,
                           __global const int *restrict nn_id)
{
    __local uint2 l_sum[FK_G6_COMPONENTS][FK_G6_REDUCE_LANES];
    __local double l_r2[FK_G6_REDUCE_LANES];
    __local int l_id[FK_G6_REDUCE_LANES];
    const int i = (int)get_group_id(0);
    const int lane = (int)get_local_id(0), lanes = (int)get_local_size(0);
    if (i >= ni) /* the whole work-group: no barrier is skipped by part of it */
        return;
    if (lane < splits) {
        double best = nn_r2[(size_t)lane * ni + i];
        int id = nn_id[(size_t)lane * ni + i];
        for (int c = 0; c < FK_G6_COMPONENTS; ++c) {
            fk_acc sum = fk_acc_unpack(partial[((size_t)lane * ni + i) * FK_G6_COMPONENTS + c]);
            for (int s = lane + lanes; s < splits; s += lanes)
                sum = fk_acc_merge(
                    sum, fk_acc_unpack(partial[((size_t)s * ni + i) * FK_G6_COMPONENTS + c]));
            l_sum[c][lane] = fk_acc_pack(sum);
        }
        for (int s = lane + lanes; s < splits; s += lanes) {
            const double r2 = nn_r2[(size_t)s * ni + i];
            const int other = nn_id[(size_t)s * ni + i];
            if (other >= 0 && (id < 0 || r2 < best || (r2 == best && other < id))) {
                best = r2;
                id = other;
            }
        }
        l_r2[lane] = best;
        l_id[lane] = id;
    }
    /* lanes holding a value: min(lanes, splits), halved (rounded up to the width) each level */
    int count = min(lanes, splits);
    for (int width = lanes / 2; width > 0; width /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lane < width && lane + width < count) {
            for (int c = 0; c < FK_G6_COMPONENTS; ++c)
                l_sum[c][lane] = fk_acc_pack(fk_acc_merge(fk_acc_unpack(l_sum[c][lane]),
                                                          fk_acc_unpack(l_sum[c][lane + width])));
            const double r2 = l_r2[lane + width];
            const int other = l_id[lane + width];
            const int id = l_id[lane];
            if (other >= 0 && (id < 0 || r2 < l_r2[lane] || (r2 == l_r2[lane] && other < id))) {
                l_r2[lane] = r2;
                l_id[lane] = other;
            }
        }
        count = min(count, width);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int c = lane; c < FK_G6_COMPONENTS; c += lanes)
        result[(size_t)i * FK_G6_RESULT_WORDS + c] = l_sum[c][0];
    if (lane == 0) {
        result[(size_t)i * FK_G6_RESULT_WORDS + FK_G6_COMPONENTS] = (uint2)((uint)l_id[0], 0u);
        result[(size_t)i * FK_G6_RESULT_WORDS + FK_G6_COMPONENTS + 1] = as_uint2(l_r2[0]);
    }
}
