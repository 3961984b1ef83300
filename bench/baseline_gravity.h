/* The CPU baseline's gravity loop (bench/baseline_gravity.c), shared by bench_baseline_omp and
 * bench_cpu_speed so that both time the same compiled code. */
#ifndef FK_BENCH_BASELINE_GRAVITY_H
#define FK_BENCH_BASELINE_GRAVITY_H

#include <stddef.h>

/* a_i = sum_j m_j r_ij / (r^2 + eps^2)^{3/2} over all j (the self pair contributes exactly 0 for
 * eps > 0), OpenMP-parallel over i, OpenMP simd over j. */
void fk_baseline_gravity(size_t n, const float *restrict x, const float *restrict y,
                         const float *restrict z, const float *restrict m, float eps2,
                         float *restrict ax, float *restrict ay, float *restrict az);

/* The flags and compiler it was built with, for the JSON. */
const char *fk_baseline_flags(void);
const char *fk_baseline_compiler(void);
int fk_baseline_threads(void);

#endif
