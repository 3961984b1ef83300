/* van Meel et al.'s parallel lrand48 (sec. 4): the rand48 sequence x_{k+1} = (a x_k + c) mod 2^48
 * split over W work-items by leapfrogging. Work-item w holds the state that produces value w of a
 * block and jumps W values at a time with (A, C) = (a^W, c (a^(W-1) + ... + 1)) mod 2^48, computed
 * on the host (rand48.c). ulong products wrap mod 2^64 and 2^48 divides 2^64, so masking the
 * product's low 48 bits is exact: no 24-bit halves are needed.
 *
 * Each launch writes per_item values per work-item, value t * W + w of the block from work-item w
 * (coalesced stores), and leaves the work-item's next state in state[w] for the next block. Values
 * past `remaining` are not stored. */

#define FK_RAND48_MASK 0xFFFFFFFFFFFFul

/* lrand48: the state's top 31 bits. */
__kernel void fk_rand48_lrand(__global ulong *state, ulong jump_a, ulong jump_c, uint per_item,
                              ulong remaining, __global uint *values)
{
    const size_t w = get_global_id(0), items = get_global_size(0);
    ulong x = state[w];
    for (uint t = 0; t < per_item; ++t) {
        const ulong index = (ulong)t * items + w;
        if (index < remaining)
            values[index] = (uint)(x >> 17);
        x = (jump_a * x + jump_c) & FK_RAND48_MASK;
    }
    state[w] = x;
}

/* drand48: the whole 48-bit state; the host scales it by 2^-48, which is exact in a double, so the
 * device needs no fp64 and the value is glibc's bit for bit. */
__kernel void fk_rand48_state(__global ulong *state, ulong jump_a, ulong jump_c, uint per_item,
                              ulong remaining, __global ulong *values)
{
    const size_t w = get_global_id(0), items = get_global_size(0);
    ulong x = state[w];
    for (uint t = 0; t < per_item; ++t) {
        const ulong index = (ulong)t * items + w;
        if (index < remaining)
            values[index] = x;
        x = (jump_a * x + jump_c) & FK_RAND48_MASK;
    }
    state[w] = x;
}
