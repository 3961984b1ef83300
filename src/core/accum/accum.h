/* Host side of the accumulators (accum.c): decoding the packed 8-byte results to double and
 * choosing the per-launch parameters (fixed-point scale, LARGE) from a bound on the pair terms. */
#ifndef FK_ACCUM_H
#define FK_ACCUM_H

#include <stddef.h>
#include <stdint.h>

/* What the bound pre-pass (cl/accum/bound.clh) found, over every particle and component. */
typedef struct fk_accum_bound {
    double max_term; /* max |term| over all pairs: exact */
    double max_sum;  /* max over particles of sum_j |term_ij|: bounds every partial sum */
    size_t count;    /* particles, i.e. terms per sum */
} fk_accum_bound;

/* The parameters of one evaluation: acc_param goes to the kernel, scale to the decoder. */
typedef struct fk_accum_params {
    float acc_param[4];
    double scale;
    int exponent; /* fixed64: k of the scale 2^k; narumi, nitadori_large: e of LARGE = 3 * 2^e */
} fk_accum_params;

double fk__decode_pair(uint32_t lo, uint32_t hi, double scale);
double fk__decode_large_pair(uint32_t lo, uint32_t hi, double scale);
double fk__decode_narumi(uint32_t lo, uint32_t hi, double scale);
double fk__decode_fixed64(uint32_t lo, uint32_t hi, double scale);
int fk__fixed64_overflowed(uint32_t lo, uint32_t hi);

/* Each returns 0 when the bound cannot be represented (a NaN or infinite term). */
int fk__choose_fixed64(const fk_accum_bound *bound, fk_accum_params *params);
int fk__choose_large(const fk_accum_bound *bound, fk_accum_params *params);
int fk__choose_narumi(const fk_accum_bound *bound, fk_accum_params *params);

#endif
