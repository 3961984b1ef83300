/* Host side of the accumulators: decoders and the data-dependent parameters of fixed64, narumi
 * and nitadori_large. The device side is cl/accum/; cl/accum/eft.clh documents the formats. */
#include "core/accum/accum.h"

#include <math.h>
#include <string.h>

static float word_float(uint32_t word)
{
    float value;
    memcpy(&value, &word, sizeof value);
    return value;
}

/* ti, nitadori, composite: two floats whose sum is the value; the sum is exact in double. */
double fk__decode_pair(uint32_t lo, uint32_t hi, double scale)
{
    (void)scale;
    return (double)word_float(lo) + (double)word_float(hi);
}

/* nitadori_large: (LARGE + high, errors); scale is LARGE. A zero high part is an empty sum. */
double fk__decode_large_pair(uint32_t lo, uint32_t hi, double scale)
{
    const double high = word_float(lo);
    return (high == 0.0 ? 0.0 : high - scale) + (double)word_float(hi);
}

/* narumi: (LARGE + high, li) with li in units of 2^(e-46), LARGE = 3 * 2^e = scale. Both parts
 * and their sum are exact in double (47 significant bits). */
double fk__decode_narumi(uint32_t lo, uint32_t hi, double scale)
{
    const double high = word_float(lo);
    if (high == 0.0)
        return 0.0;
    int exponent = 0;
    frexp(scale, &exponent); /* scale = 0.75 * 2^(e+2) */
    const int32_t low = (int32_t)hi;
    return (high - scale) + ldexp((double)low, exponent - 2 - 46);
}

int fk__fixed64_overflowed(uint32_t lo, uint32_t hi)
{
    return lo == 0 && hi == 0x80000000u;
}

/* fixed64: the integer times 2^-k (scale = 2^k). Beyond 2^53 the conversion rounds to nearest. */
double fk__decode_fixed64(uint32_t lo, uint32_t hi, double scale)
{
    if (fk__fixed64_overflowed(lo, hi))
        return NAN;
    const uint64_t bits = ((uint64_t)hi << 32) | lo;
    int64_t value;
    memcpy(&value, &bits, sizeof value);
    return (double)value / scale;
}

/* ceil(log2(n)) for n >= 1 */
static int ceil_log2(size_t n)
{
    int bits = 0;
    while (((size_t)1 << bits) < n)
        ++bits;
    return bits;
}

int fk__choose_fixed64(const fk_accum_bound *bound, fk_accum_params *params)
{
    memset(params, 0, sizeof *params);
    if (!isfinite(bound->max_term))
        return 0;
    const size_t count = bound->count ? bound->count : 1;
    /* N terms each below L = 2^limit_exponent sum to at most 2^62: no int64 overflow. */
    const int limit_exponent = 62 - ceil_log2(count);
    int k = 0;
    if (bound->max_term > 0) {
        int e = 0;
        frexp(bound->max_term, &e); /* max_term < 2^e */
        k = limit_exponent - 1 - e; /* max_term 2^k < L / 2 */
    }
    /* Float limits of the scale itself; below 2^-126 would need forces near FLT_MAX. */
    if (k > 127)
        k = 127;
    if (k < -126)
        return 0;
    params->exponent = k;
    params->scale = ldexp(1.0, k);
    params->acc_param[0] = (float)params->scale;
    params->acc_param[1] = (float)ldexp(1.0, limit_exponent);
    return 1;
}

/* LARGE = 3 * 2^e with 2^(e-1) >= the bound on every partial sum and term (the float sums of the
 * pre-pass are padded by their worst-case rounding, N 2^-24 relative). */
static int choose_large_exponent(const fk_accum_bound *bound, int *exponent)
{
    if (!isfinite(bound->max_term) || !isfinite(bound->max_sum))
        return 0;
    double limit = bound->max_sum * (1.0 + (double)bound->count * ldexp(1.0, -23));
    if (bound->max_term > limit)
        limit = bound->max_term;
    int e = 0;
    if (limit > 0) {
        int frexp_exponent = 0;
        double mantissa = frexp(limit, &frexp_exponent); /* limit <= 2^frexp_exponent */
        e = frexp_exponent + (mantissa == 0.5 ? 0 : 1);  /* 2^(e-1) >= limit */
    }
    /* Keep LARGE, its binade and narumi's LOWER_FACTOR = 2^(46-e) normal floats. */
    if (e < -80)
        e = -80;
    if (e > 125)
        return 0;
    *exponent = e;
    return 1;
}

int fk__choose_large(const fk_accum_bound *bound, fk_accum_params *params)
{
    memset(params, 0, sizeof *params);
    int e = 0;
    if (!choose_large_exponent(bound, &e))
        return 0;
    params->exponent = e;
    params->scale = ldexp(3.0, e);
    params->acc_param[0] = (float)params->scale;
    return 1;
}

int fk__choose_narumi(const fk_accum_bound *bound, fk_accum_params *params)
{
    if (!fk__choose_large(bound, params))
        return 0;
    params->acc_param[1] = (float)ldexp(1.0, 46 - params->exponent);
    params->acc_param[2] = (float)ldexp(1.0, params->exponent - 46);
    return 1;
}
