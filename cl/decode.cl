/* The results in the caller's layout, decoded on the device (issue #16): the packed 8-byte sums of
 * a forces pass (2 words per component, force components then the potential, per particle) become
 * doubles (or floats on request) in two plain arrays, forces (components x count) then potentials
 * (count), which one read brings to the host.
 *
 * Every decode is the host's (src/core/accum/accum.c, src/core/laws/registry.c) step for step, in operations that
 * OpenCL requires to be correctly rounded in double precision (conversions, +, -, / by a power of
 * two, ldexp) or that are exact, so the device's decode and the host's give the same bits; test_step
 * checks that against the host decode of the same packed words. Float words are widened by their
 * bits (fk_word_to_double), not by the device's float arithmetic, so a device that flushes single
 * precision denormals still widens them exactly. Built only for devices with cl_khr_fp64; the host
 * decodes on the others. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

/* The float with these bits, exactly, in double. */
static double fk_word_to_double(uint word)
{
    const uint magnitude = word & 0x7fffffffu;
    if (magnitude != 0 && magnitude < 0x00800000u) { /* a denormal: m 2^-149 */
        const double value = ldexp((double)magnitude, -149);
        return (word >> 31) ? -value : value;
    }
    return (double)as_float(word);
}

/* float: the sum is the low word. */
static double fk_decode_float_sum(uint2 w, double scale, int exponent, int *overflow)
{
    (void)scale;
    (void)exponent;
    (void)overflow;
    return fk_word_to_double(w.x);
}

/* double, ref: the two words of a double, low word first. */
static double fk_decode_double_sum(uint2 w, double scale, int exponent, int *overflow)
{
    (void)scale;
    (void)exponent;
    (void)overflow;
    return as_double(w);
}

/* ti, nitadori, composite: two floats whose sum (exact in double) is the value. */
static double fk_decode_pair_sum(uint2 w, double scale, int exponent, int *overflow)
{
    (void)scale;
    (void)exponent;
    (void)overflow;
    return fk_word_to_double(w.x) + fk_word_to_double(w.y);
}

/* nitadori_large: (LARGE + high, errors), scale = LARGE; a zero high part is an empty sum. */
static double fk_decode_large_pair_sum(uint2 w, double scale, int exponent, int *overflow)
{
    (void)exponent;
    (void)overflow;
    const double high = fk_word_to_double(w.x);
    return (high == 0.0 ? 0.0 : high - scale) + fk_word_to_double(w.y);
}

/* narumi: (LARGE + high, li), li in units of 2^(e - 46), LARGE = 3 * 2^e = scale; exponent is
 * the host's frexp exponent of the scale (e + 2). */
static double fk_decode_narumi_sum(uint2 w, double scale, int exponent, int *overflow)
{
    (void)overflow;
    const double high = fk_word_to_double(w.x);
    if (high == 0.0)
        return 0.0;
    return (high - scale) + ldexp((double)as_int(w.y), exponent - 2 - 46);
}

/* fixed64: the integer times 2^-k (scale = 2^k); the sentinel INT64_MIN is an overflow. */
static double fk_decode_fixed64_sum(uint2 w, double scale, int exponent, int *overflow)
{
    (void)exponent;
    if (w.x == 0u && w.y == 0x80000000u) {
        *overflow = 1;
        return NAN;
    }
    const long value = as_long(w);
    return convert_double(value) / scale;
}

/* One work-item per particle: its components' sums to forces[i * force_components + k] (k below
 * force_components) and, when the potential was computed, to potentials[potentials_at + i]. The
 * first particle with an overflowed sum goes to flags[overflow_at] (atomic_min; the host sets it
 * to count first). The three may be one buffer (the evaluation's staging layout) or the caller's
 * buffers (fk_eval_set_results_cl) and the evaluation's flag word. */
#define FK_DECODE_KERNEL(format, type)                                                             \
    kernel void fk_decode_##format##_##type(                                                       \
        const uint count, const uint components, const uint force_components,                      \
        const double scale, const int exponent, global const uint2 *packed, global type *forces,   \
        global type *potentials, const uint potentials_at, global int *flags,                      \
        const uint overflow_at)                                                                    \
    {                                                                                              \
        const uint i = get_global_id(0);                                                           \
        if (i >= count)                                                                            \
            return;                                                                                \
        int overflow = 0;                                                                          \
        for (uint k = 0; k < force_components; ++k)                                                \
            forces[(size_t)i * force_components + k] = (type)fk_decode_##format##_sum(            \
                packed[(size_t)i * components + k], scale, exponent, &overflow);                   \
        if (components > force_components)                                                         \
            potentials[(size_t)potentials_at + i] = (type)fk_decode_##format##_sum(               \
                packed[(size_t)i * components + force_components], scale, exponent, &overflow);    \
        if (overflow)                                                                              \
            atomic_min(flags + overflow_at, (int)i);                                               \
    }

#define FK_DECODE_FORMAT(format)                                                                   \
    FK_DECODE_KERNEL(format, double)                                                               \
    FK_DECODE_KERNEL(format, float)

FK_DECODE_FORMAT(float)
FK_DECODE_FORMAT(double)
FK_DECODE_FORMAT(pair)
FK_DECODE_FORMAT(large_pair)
FK_DECODE_FORMAT(narumi)
FK_DECODE_FORMAT(fixed64)
