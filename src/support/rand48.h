/* The 48-bit linear congruential generator of the rand48 family (POSIX drand48, lrand48, srand48):
 * x_{k+1} = (a x_k + c) mod 2^48, a = 0x5DEECE66D, c = 0xB. The host functions reproduce glibc's
 * srand48 / lrand48 / drand48 bit for bit; the device version (fkt_rand48_device_*) runs van Meel
 * et al.'s leapfrog (sec. 4) and yields the same sequence, so an initial condition drawn from a
 * seed is the same on every device and on the host. */
#ifndef FK_RAND48_H
#define FK_RAND48_H

#include <stddef.h>
#include <stdint.h>

#include "forcekit/forcekit.h"

#define FKT_RAND48_A UINT64_C(0x5DEECE66D)
#define FKT_RAND48_C UINT64_C(0xB)
#define FKT_RAND48_MASK ((UINT64_C(1) << 48) - 1)

/* rand48.h: glibc-compatible 48-bit LCG (a = 0x5DEECE66D, c = 0xB, m = 2^48). */
typedef struct fkt_rand48 {
    uint64_t state;
} fkt_rand48;

/* srand48: state = (seed << 16) | 0x330E, from the low 32 bits of seed (as glibc on LP64). */
void fkt_rand48_seed(fkt_rand48 *r, long seed);
/* lrand48: the next value, the state's top 31 bits, in [0, 2^31). */
long fkt_rand48_lrand(fkt_rand48 *r);
/* drand48: the next value in [0, 1), the whole 48-bit state times 2^-48 (exact in a double). */
double fkt_rand48_drand(fkt_rand48 *r);
/* Leapfrog jump: the (A, C) with state_{k+m} = A state_k + C mod 2^48 (van Meel et al. sec. 4:
 * A = a^m, C = c (a^(m-1) + ... + a + 1)), by squaring, O(log m). m = 0 gives (1, 0). */
void fkt_rand48_leapfrog(uint64_t m, uint64_t *a_m, uint64_t *c_m);
/* One step of the state by (a_m, c_m): (a_m state + c_m) mod 2^48. */
uint64_t fkt_rand48_jump(uint64_t state, uint64_t a_m, uint64_t c_m);

/* The device generator: cl/rand48.cl built for the context's device. Internal to forcekit and its
 * command (the library never prints). */
typedef struct fkt_rand48_device fkt_rand48_device;
fk_status fkt_rand48_device_open(fk_context *context, fkt_rand48_device **generator);
void fkt_rand48_device_close(fkt_rand48_device *generator);
/* Values first .. first + count - 1 (0-based) of srand48(seed)'s sequence, in sequence order,
 * computed on the device by work_items leapfrogging streams (0: 1,024 per compute unit, at most
 * count): lrand48 values into lrand_out and/or drand48 values into drand_out (either may be NULL,
 * not both). drand48 needs no fp64: the device hands back the 48-bit states and the host scales
 * them by 2^-48, which is exact. Any count: the device buffer holds at most 2^22 values a launch.
 */
/* The work-items a call for count values uses when work_items is requested (0: automatic). */
size_t fkt_rand48_device_work_items(const fkt_rand48_device *generator, size_t count,
                                    size_t work_items);
fk_status fkt_rand48_device_generate(fkt_rand48_device *generator, long seed, uint64_t first,
                                     size_t count, size_t work_items, long *lrand_out,
                                     double *drand_out);

#endif
