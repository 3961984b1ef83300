/* The bound pre-pass's per-value (largest |term|, sum of |terms|) pairs (cl/accum/bound.clh; the
 * packed words of the results buffer, read as float2) reduced on the device to one pair per
 * work-group, so that the host reads FK_BOUND_GROUPS pairs instead of every particle's (issue #16:
 * at N = 1M that read was 32 MB per update_positions). The maximum is exact and independent of
 * the order, so the scale the host chooses from it is the one the whole array gives. A NaN sticks,
 * as in the host's reduction (src/core/eval/precision.c): it means a term that cannot be represented. */
static float fk_bound_max(const float a, const float b)
{
    return isnan(a) || isnan(b) ? NAN : fmax(a, b);
}

static float2 fk_bound_max2(const float2 a, const float2 b)
{
    return (float2)(fk_bound_max(a.x, b.x), fk_bound_max(a.y, b.y));
}

/* Work-groups of FK_BOUND_GROUP work-items (a power of two), any number of groups. */
kernel __attribute__((reqd_work_group_size(FK_BOUND_GROUP, 1, 1))) void
fk_bound_reduce(const uint values, global const float2 *bound, global float2 *partials)
{
    local float2 scratch[FK_BOUND_GROUP];
    const uint lid = get_local_id(0);
    const uint stride = get_num_groups(0) * FK_BOUND_GROUP;
    float2 largest = (float2)(0.0f, 0.0f);
    for (uint v = get_group_id(0) * FK_BOUND_GROUP + lid; v < values; v += stride)
        largest = fk_bound_max2(largest, bound[v]);
    scratch[lid] = largest;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint width = FK_BOUND_GROUP / 2; width > 0; width /= 2) {
        if (lid < width)
            scratch[lid] = fk_bound_max2(scratch[lid], scratch[lid + width]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partials[get_group_id(0)] = scratch[0];
}
