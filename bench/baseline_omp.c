/*
 * bench_baseline_omp: the CPU baseline for `forcekit bench --kernel ga --device cpu`. A plain C
 * gravity loop (bench/baseline_gravity.c: one loop over j with an OpenMP simd reduction, parallel
 * over i), compiled -O3 -march=native -ffast-math (bench/CMakeLists.txt gives only that file those
 * flags), on the
 * same input as the bench (fkt_generate_plummer, seed 1, eps 0.01, single-precision positions and
 * masses). Times the median of R evaluations after one warm-up and checks its own result against
 * fk_reference_forces (double) on up to 256 particles with the kernel tests' error scale. Prints
 * one JSON document.
 *
 * usage: bench_baseline_omp [--n N] [--reps R] [--eps E] [--seed S]   (OMP_NUM_THREADS: threads)
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "baseline_gravity.h"
#include "common/stats.h"
#include "forcekit/forcekit.h"
#include "support/generate.h"

static int parse_size(const char *text, long long min, long long max, long long *value)
{
    char *end = NULL;
    const long long parsed = strtoll(text, &end, 10);
    if (!text[0] || *end || parsed < min || parsed > max)
        return 0;
    *value = parsed;
    return 1;
}

int main(int argc, char **argv)
{
    long long n = 8192, reps = 10, seed = 1;
    double eps = 0.01;
    for (int a = 1; a < argc; ++a) {
        const char *option = argv[a], *value = a + 1 < argc ? argv[a + 1] : NULL;
        int ok = value != NULL;
        if (ok && strcmp(option, "--n") == 0)
            ok = parse_size(value, 1, 1 << 24, &n);
        else if (ok && strcmp(option, "--reps") == 0)
            ok = parse_size(value, 1, 100000, &reps);
        else if (ok && strcmp(option, "--seed") == 0)
            ok = parse_size(value, 0, 1LL << 48, &seed);
        else if (ok && strcmp(option, "--eps") == 0) {
            char *end = NULL;
            eps = strtod(value, &end);
            ok = *end == '\0' && isfinite(eps) && eps > 0;
        } else
            ok = 0;
        if (!ok) {
            fprintf(stderr,
                    "usage: bench_baseline_omp [--n N] [--reps R] [--eps E > 0] [--seed S]\n");
            return 2;
        }
        ++a;
    }

    fkt_particle_set set = {0};
    if (fkt_generate_plummer((size_t)n, (uint64_t)seed, FKT_LAYOUT_XYZM, &set) != FK_OK) {
        fprintf(stderr, "bench_baseline_omp: cannot generate %lld particles\n", n);
        return 1;
    }
    const size_t count = (size_t)n;
    float *data = malloc(7 * count * sizeof *data);
    double *timings = malloc((size_t)reps * sizeof *timings);
    if (!data || !timings) {
        fprintf(stderr, "bench_baseline_omp: out of memory\n");
        return 1;
    }
    float *x = data, *y = x + count, *z = y + count, *m = z + count;
    float *ax = m + count, *ay = ax + count, *az = ay + count;
    /* The device sees single precision; so do this loop and the reference check. */
    for (size_t i = 0; i < count; ++i) {
        x[i] = (float)set.position[3 * i];
        y[i] = (float)set.position[3 * i + 1];
        z[i] = (float)set.position[3 * i + 2];
        m[i] = (float)set.mass[i];
        for (int k = 0; k < 3; ++k)
            set.position[3 * i + (size_t)k] = (double)data[(size_t)k * count + i];
        set.mass[i] = (double)m[i];
    }
    const float eps2 = (float)(eps * eps);

    fk_baseline_gravity(count, x, y, z, m, eps2, ax, ay,
                        az); /* warm-up: threads started, pages touched */
    for (long long r = 0; r < reps; ++r) {
        const double start = omp_get_wtime();
        fk_baseline_gravity(count, x, y, z, m, eps2, ax, ay, az);
        timings[r] = omp_get_wtime() - start;
    }
    const double median = fk__median(timings, (size_t)reps); /* sorts: the extremes below */

    /* Check: the worst |a - a_ref| / sum_j |term_ij| over up to 256 particles (the first and the
     * last included) against the kernel tests' float tolerance. The reference covers every
     * particle (O(N^2) in double, single-threaded): up to N = 32,768 it runs; above, the check
     * is skipped and says so. */
    const size_t samples = count < 256 ? count : 256;
    double worst = 0.0;
    int checked = count <= 32768;
    const double tolerance = 5.96e-8 * (48.0 + 2.0 * sqrt((double)count) + 0.02 * (double)count);
    if (checked) {
        double *reference = malloc(3 * count * sizeof *reference);
        const fk_particles view = {.count = count, .position = set.position, .mass = set.mass};
        const fk_physics physics = {.eps = eps};
        if (!reference || fk_reference_forces("ga", &view, &physics, reference, NULL) != FK_OK) {
            fprintf(stderr, "bench_baseline_omp: reference failed\n");
            return 1;
        }
        for (size_t s = 0; s < samples; ++s) {
            const size_t i = samples > 1 ? s * (count - 1) / (samples - 1) : 0;
            double scale = 0.0;
            for (size_t j = 0; j < count; ++j) {
                if (j == i)
                    continue;
                const double dx = set.position[3 * j] - set.position[3 * i];
                const double dy = set.position[3 * j + 1] - set.position[3 * i + 1];
                const double dz = set.position[3 * j + 2] - set.position[3 * i + 2];
                scale += set.mass[j] / (dx * dx + dy * dy + dz * dz + eps * eps);
            }
            const double got[3] = {ax[i], ay[i], az[i]};
            for (int k = 0; k < 3; ++k) {
                const double error = fabs(got[k] - reference[3 * i + (size_t)k]);
                const double scaled = scale > 0 ? error / scale : error;
                if (!(scaled <= worst)) /* NaN sticks */
                    worst = scaled;
            }
        }
        free(reference);
    }
    const int passed = !checked || worst <= tolerance;

    char date[32];
    const time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    const double rate = (double)count * (double)count / median;
    printf("{\"kernel\": \"ga\", \"implementation\": \"C + OpenMP (bench/baseline_omp.c)\", "
           "\"n\": %zu, \"seconds_per_eval\": %.6e, \"interactions_per_second\": %.6e, "
           "\"gflops\": %.4f, \"min_seconds\": %.6e, \"max_seconds\": %.6e, \"threads\": %d, "
           "\"reps\": %lld, \"eps\": %g, \"seed\": %lld, \"flops_per_interaction\": 19, "
           "\"compiler\": \"%s\", \"flags\": \"-O3 -march=native -ffast-math -fopenmp\", "
           "\"date\": \"%s\", \"check\": {\"particles\": %zu, \"worst_error\": %.3e, "
           "\"tolerance\": %.3e, \"checked\": %s, \"passed\": %s}}\n",
           count, median, rate, rate * 19.0 / 1e9, timings[0], timings[reps - 1],
           omp_get_max_threads(), reps, eps, seed, __VERSION__, date, checked ? samples : 0, worst,
           tolerance, checked ? "true" : "false", passed ? "true" : "false");
    free(data);
    free(timings);
    fkt_particle_set_free(&set);
    if (!passed) {
        fprintf(stderr, "bench_baseline_omp: result off the reference by %.3e (tolerance %.3e)\n",
                worst, tolerance);
        return 1;
    }
    return 0;
}
