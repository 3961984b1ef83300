/* splitmix64 (Steele, Lea, Flood 2014): a small seedable generator whose sequence is the same on
 * every platform, for inputs that must be reproducible (golden checksums, the summation suite).
 * Not installed. */
#ifndef FK_SPLITMIX64_H
#define FK_SPLITMIX64_H

#include <stdint.h>

static inline uint64_t fk_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) on a grid of 2^-24: every value is exact in float, so no device rounds an
 * input differently. */
static inline double fk_splitmix64_float_uniform(uint64_t *state)
{
    return (double)(fk_splitmix64(state) >> 40) * 0x1p-24;
}

#endif
