/* The CPU baseline's gravity loop: plain C, one loop over j with an OpenMP simd reduction,
 * parallel over i. bench/CMakeLists.txt compiles this file alone with -O3 -march=native
 * -ffast-math -fopenmp, so that it is the fastest honest C loop to compare the OpenCL CPU
 * runtimes with: GCC turns 1/sqrtf into vrsqrtps and one Newton step, 8 lanes on AVX2. */
#include <math.h>
#include <omp.h>

#include "baseline_gravity.h"

/* 19 flops per pair as counted by Elsen et al. The self pair contributes exactly 0 (r_ii = 0,
 * eps > 0), so the loop has no branch. */
void fk_baseline_gravity(size_t n, const float *restrict x, const float *restrict y,
                         const float *restrict z, const float *restrict m, float eps2,
                         float *restrict ax, float *restrict ay, float *restrict az)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) {
        const float xi = x[i], yi = y[i], zi = z[i];
        float sx = 0.0f, sy = 0.0f, sz = 0.0f;
#pragma omp simd reduction(+ : sx, sy, sz)
        for (size_t j = 0; j < n; ++j) {
            const float dx = x[j] - xi, dy = y[j] - yi, dz = z[j] - zi;
            const float s2 = dx * dx + dy * dy + dz * dz + eps2;
            const float inv = 1.0f / sqrtf(s2);
            const float w = m[j] * inv * inv * inv;
            sx += dx * w;
            sy += dy * w;
            sz += dz * w;
        }
        ax[i] = sx;
        ay[i] = sy;
        az[i] = sz;
    }
}

const char *fk_baseline_flags(void)
{
    return "-O3 -march=native -ffast-math -fopenmp";
}

const char *fk_baseline_compiler(void)
{
    return __VERSION__;
}

int fk_baseline_threads(void)
{
    return omp_get_max_threads();
}
