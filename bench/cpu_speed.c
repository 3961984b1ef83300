/*
 * bench_cpu_speed: ga on an OpenCL CPU device against the C + OpenMP baseline
 * (bench/baseline_gravity.c, -O3 -march=native -ffast-math), interleaved in one run, so that every
 * contender sees the same load on a shared machine. Per N, each round times the baseline, then
 * each accumulator (float, fixed64, narumi by default) with the library's default variant (the
 * CPU lane loop where the device has one), `--reps` evaluations each; the JSON gives every
 * contender's min / median / max wall seconds per evaluation over all rounds, the per-round ratios
 * and their median: baseline / forcekit for float ("x baseline", > 1 is faster than the baseline)
 * and accumulator / float for the others ("x float"). Every contender is checked first against
 * fk_reference_forces (double) on up to 128 sampled particles with the kernel tests' error scale;
 * a failed check is exit status 1 and nothing is timed.
 *
 * Wall time around fk_eval_compute, which returns when the device has finished; the baseline's
 * OpenMP threads must not spin between rounds (OMP_WAIT_POLICY=passive: bench/run_cpu_speed.sh
 * sets it, and the JSON records it).
 *
 * usage: bench_cpu_speed [--n N[,N...]] [--rounds R] [--reps K] [--accum A[,A...]] [--lanes L]
 *                        [--device SEL] [--seed S]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "baseline_gravity.h"
#include "common/stats.h"
#include "forcekit/forcekit.h"
#include "support/generate.h"

#define MAX_SIZES 8
#define MAX_ACCUMS 8
#define EPS 0.01
#define CHECK_SAMPLES 128

static double wall(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int usage(const char *why)
{
    fprintf(stderr,
            "bench_cpu_speed: %s\nusage: bench_cpu_speed [--n N[,N...]] [--rounds R] [--reps K] "
            "[--accum A[,A...]] [--lanes auto|off|8|16] [--device SEL] [--seed S]\n",
            why);
    return 2;
}

/* Comma-separated positive integers. */
static int parse_sizes(const char *text, size_t *sizes, size_t *count)
{
    *count = 0;
    for (const char *p = text; *p;) {
        char *end = NULL;
        const long long value = strtoll(p, &end, 10);
        if (end == p || value < 2 || value > (1 << 22) || *count == MAX_SIZES ||
            (*end && *end != ','))
            return 0;
        sizes[(*count)++] = (size_t)value;
        p = *end ? end + 1 : end;
    }
    return *count > 0;
}

static int parse_names(char *text, const char **names, size_t *count)
{
    *count = 0;
    for (char *token = strtok(text, ","); token; token = strtok(NULL, ",")) {
        if (*count == MAX_ACCUMS)
            return 0;
        names[(*count)++] = token;
    }
    return *count > 0;
}

typedef struct system_data {
    size_t n;
    double *position, *mass, *reference, *scale; /* scale: sum_j m_j / s^2 per sampled particle */
    float *x, *y, *z, *m, *ax, *ay, *az;
    size_t samples[CHECK_SAMPLES], sample_count;
} system_data;

static void free_system(system_data *s)
{
    free(s->position);
    free(s->mass);
    free(s->reference);
    free(s->scale);
    free(s->x);
    memset(s, 0, sizeof *s);
}

/* The bench's input (fkt_generate_plummer, single-precision values) and the double reference on
 * the sampled particles: O(N) each. */
static int make_system(size_t n, unsigned long long seed, system_data *s)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    fkt_particle_set set = {0};
    if (fkt_generate_plummer(n, seed, FKT_LAYOUT_XYZM, &set) != FK_OK)
        return 0;
    s->position = malloc(3 * n * sizeof *s->position);
    s->mass = malloc(n * sizeof *s->mass);
    s->x = malloc(7 * n * sizeof *s->x);
    s->reference = malloc(3 * CHECK_SAMPLES * sizeof *s->reference);
    s->scale = malloc(CHECK_SAMPLES * sizeof *s->scale);
    if (!s->position || !s->mass || !s->x || !s->reference || !s->scale) {
        fkt_particle_set_free(&set);
        return 0;
    }
    s->y = s->x + n;
    s->z = s->y + n;
    s->m = s->z + n;
    s->ax = s->m + n;
    s->ay = s->ax + n;
    s->az = s->ay + n;
    for (size_t i = 0; i < n; ++i) {
        float *columns[3] = {s->x, s->y, s->z};
        for (int k = 0; k < 3; ++k) {
            columns[k][i] = (float)set.position[3 * i + (size_t)k];
            s->position[3 * i + (size_t)k] = (double)columns[k][i];
        }
        s->m[i] = (float)set.mass[i];
        s->mass[i] = (double)s->m[i];
    }
    fkt_particle_set_free(&set);
    s->sample_count = n < CHECK_SAMPLES ? n : CHECK_SAMPLES;
    for (size_t k = 0; k < s->sample_count; ++k) {
        const size_t i = s->sample_count > 1 ? k * (n - 1) / (s->sample_count - 1) : 0;
        s->samples[k] = i;
        double sum[3] = {0, 0, 0}, scale = 0;
        for (size_t j = 0; j < n; ++j) {
            if (j == i)
                continue;
            const double d[3] = {s->position[3 * j] - s->position[3 * i],
                                 s->position[3 * j + 1] - s->position[3 * i + 1],
                                 s->position[3 * j + 2] - s->position[3 * i + 2]};
            const double s2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + EPS * EPS;
            const double w = s->mass[j] / (s2 * sqrt(s2));
            for (int c = 0; c < 3; ++c)
                sum[c] += d[c] * w;
            scale += s->mass[j] / s2;
        }
        memcpy(&s->reference[3 * k], sum, sizeof sum);
        s->scale[k] = scale;
    }
    return 1;
}

/* Worst scaled error of forces (3 per particle, all n) on the samples. */
static double worst_error(const system_data *s, const double *forces)
{
    double worst = 0;
    for (size_t k = 0; k < s->sample_count; ++k)
        for (int c = 0; c < 3; ++c) {
            const double error =
                fabs(forces[3 * s->samples[k] + (size_t)c] - s->reference[3 * k + (size_t)c]);
            const double scaled = error / s->scale[k];
            if (!(scaled <= worst))
                worst = scaled;
        }
    return worst;
}

/* The kernel tests' float bound (sums of N terms); the baseline's rsqrt estimate gets 48 ulp. */
static double tolerance(size_t n)
{
    return 5.96e-8 * (48.0 + 2.0 * sqrt((double)n) + 0.02 * (double)n);
}

int main(int argc, char **argv)
{
    size_t sizes[MAX_SIZES] = {8192, 16384}, size_count = 2;
    const char *accums[MAX_ACCUMS] = {"float", "fixed64", "narumi"};
    size_t accum_count = 3;
    long long rounds = 5, reps = 3;
    unsigned long long seed = 1;
    int lanes = 0;
    const char *device = "cpu";
    char accum_text[256];
    for (int a = 1; a < argc; a += 2) {
        const char *option = argv[a], *value = a + 1 < argc ? argv[a + 1] : NULL;
        char *end = NULL;
        if (!value)
            return usage("an option without its value");
        if (strcmp(option, "--n") == 0) {
            if (!parse_sizes(value, sizes, &size_count))
                return usage("--n: comma-separated N from 2 to 4194304 (at most 8)");
        } else if (strcmp(option, "--rounds") == 0) {
            rounds = strtoll(value, &end, 10);
            if (*end || rounds < 1 || rounds > 1000)
                return usage("--rounds: 1 to 1000");
        } else if (strcmp(option, "--reps") == 0) {
            reps = strtoll(value, &end, 10);
            if (*end || reps < 1 || reps > 1000)
                return usage("--reps: 1 to 1000");
        } else if (strcmp(option, "--seed") == 0) {
            seed = strtoull(value, &end, 10);
            if (*end || !*value)
                return usage("--seed: a non-negative integer");
        } else if (strcmp(option, "--accum") == 0) {
            snprintf(accum_text, sizeof accum_text, "%s", value);
            if (!parse_names(accum_text, accums, &accum_count) || strcmp(accums[0], "float") != 0)
                return usage("--accum: comma-separated names, float first (the ratios' base)");
        } else if (strcmp(option, "--lanes") == 0) {
            lanes = strcmp(value, "auto") == 0  ? 0
                    : strcmp(value, "off") == 0 ? -1
                    : strcmp(value, "8") == 0   ? 8
                    : strcmp(value, "16") == 0  ? 16
                                                : -2;
            if (lanes == -2)
                return usage("--lanes: auto, off, 8 or 16");
        } else if (strcmp(option, "--device") == 0) {
            device = value;
        } else {
            return usage("unknown option");
        }
    }

    fk_context *context = NULL;
    fk_context_config context_config = {.device = device};
    if (fk_context_create(&context_config, &context) != FK_OK) {
        fprintf(stderr, "bench_cpu_speed: %s\n",
                context ? fk_context_last_error(context) : "out of memory");
        fk_context_destroy(context);
        return 1;
    }
    const fk_device_info *info = fk_context_device(context);
    const char *wait_policy = getenv("OMP_WAIT_POLICY");

    char date[32];
    const time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    printf("{\n  \"bench\": \"bench_cpu_speed\",\n  \"kernel\": \"ga\",\n  \"date\": \"%s\",\n"
           "  \"device\": \"%s\",\n  \"platform\": \"%s\",\n  \"driver_version\": \"%s\",\n"
           "  \"baseline\": {\"code\": \"bench/baseline_gravity.c\", \"flags\": \"%s\", "
           "\"compiler\": \"%s\", \"threads\": %d, \"omp_wait_policy\": \"%s\"},\n"
           "  \"eps\": %g, \"seed\": %llu, \"rounds\": %lld, \"reps_per_round\": %lld,\n"
           "  \"lanes_asked\": %d,\n  \"timing\": \"wall seconds per evaluation "
           "(fk_eval_compute, which waits for the device)\",\n  \"sizes\": [",
           date, info->name, info->platform_name, info->driver_version, fk_baseline_flags(),
           fk_baseline_compiler(), fk_baseline_threads(), wait_policy ? wait_policy : "(unset)",
           EPS, seed, rounds, reps, lanes);

    int status = 0;
    for (size_t si = 0; si < size_count && status == 0; ++si) {
        const size_t n = sizes[si];
        system_data s;
        if (!make_system(n, seed, &s)) {
            fprintf(stderr, "bench_cpu_speed: cannot generate %zu particles\n", n);
            status = 1;
            break;
        }
        fk_eval *evals[MAX_ACCUMS] = {0};
        fk_variant variants[MAX_ACCUMS];
        double errors[MAX_ACCUMS + 1];
        double *forces = malloc(3 * n * sizeof *forces);
        double *timings = malloc((accum_count + 1) * (size_t)(rounds * reps) * sizeof *timings);
        double *round_median = malloc((accum_count + 1) * (size_t)rounds * sizeof *round_median);
        if (!forces || !timings || !round_median) {
            fprintf(stderr, "bench_cpu_speed: out of memory\n");
            status = 1;
        }
        /* Build, upload, check (the first evaluation is the warm-up). */
        for (size_t a = 0; a < accum_count && status == 0; ++a) {
            fk_eval_config config = {.kernel = "ga",
                                     .accum = accums[a],
                                     .eps = EPS,
                                     .expected_count = n,
                                     .lanes = lanes};
            fk_particles view = {.count = n, .position = s.position, .mass = s.mass};
            if (fk_eval_create(context, &config, &evals[a]) != FK_OK ||
                fk_eval_set_particles(evals[a], &view) != FK_OK ||
                fk_eval_compute(evals[a], NULL) != FK_OK ||
                fk_eval_read_forces(evals[a], forces) != FK_OK ||
                fk_eval_get_variant(evals[a], &variants[a]) != FK_OK) {
                fprintf(stderr, "bench_cpu_speed: ga %s: %s\n", accums[a],
                        fk_context_last_error(context));
                status = 1;
                break;
            }
            errors[a + 1] = worst_error(&s, forces);
            if (!(errors[a + 1] <= tolerance(n))) {
                fprintf(stderr, "bench_cpu_speed: ga %s N=%zu: error %.3g > %.3g\n", accums[a], n,
                        errors[a + 1], tolerance(n));
                status = 1;
            }
        }
        if (status == 0) {
            fk_baseline_gravity(n, s.x, s.y, s.z, s.m, (float)(EPS * EPS), s.ax, s.ay, s.az);
            for (size_t i = 0; i < n; ++i) {
                forces[3 * i] = s.ax[i];
                forces[3 * i + 1] = s.ay[i];
                forces[3 * i + 2] = s.az[i];
            }
            errors[0] = worst_error(&s, forces);
            if (!(errors[0] <= tolerance(n))) {
                fprintf(stderr, "bench_cpu_speed: baseline N=%zu: error %.3g > %.3g\n", n,
                        errors[0], tolerance(n));
                status = 1;
            }
        }
        /* The interleaved rounds: baseline, then each accumulator, reps evaluations each. */
        const size_t per = (size_t)(rounds * reps);
        for (long long r = 0; r < rounds && status == 0; ++r)
            for (size_t c = 0; c <= accum_count && status == 0; ++c) {
                double round_times[1000];
                for (long long k = 0; k < reps; ++k) {
                    const double start = wall();
                    if (c == 0)
                        fk_baseline_gravity(n, s.x, s.y, s.z, s.m, (float)(EPS * EPS), s.ax, s.ay,
                                            s.az);
                    else if (fk_eval_compute(evals[c - 1], NULL) != FK_OK) {
                        fprintf(stderr, "bench_cpu_speed: %s\n", fk_context_last_error(context));
                        status = 1;
                        break;
                    }
                    round_times[k] = wall() - start;
                    timings[c * per + (size_t)(r * reps + k)] = round_times[k];
                }
                round_median[c * (size_t)rounds + (size_t)r] =
                    fk__median(round_times, (size_t)reps);
            }
        if (status == 0) {
            printf("%s\n    {\"n\": %zu, \"check\": {\"samples\": %zu, \"tolerance\": %.3e},\n"
                   "     \"contenders\": [\n",
                   si ? "," : "", n, s.sample_count, tolerance(n));
            for (size_t c = 0; c <= accum_count; ++c) {
                double *t = timings + c * per;
                const double median = fk__median(t, per); /* sorts: t[0] and t[per - 1] below */
                /* Per-round ratios: float against the baseline, the others against float. */
                double ratios[1000];
                for (long long r = 0; r < rounds; ++r) {
                    const double mine = round_median[c * (size_t)rounds + (size_t)r];
                    const double base = round_median[(size_t)r];
                    const double flt = round_median[1 * (size_t)rounds + (size_t)r];
                    ratios[r] = c == 0 ? 1.0 : c == 1 ? base / mine : mine / flt;
                }
                printf("       {\"name\": \"%s\", ", c == 0 ? "baseline_omp" : accums[c - 1]);
                if (c > 0)
                    printf("\"lanes\": %d, \"unroll\": \"%dx%d\", \"work_group_size\": %d, "
                           "\"j_splits\": %d, ",
                           variants[c - 1].lanes, variants[c - 1].unroll_i,
                           variants[c - 1].unroll_j, variants[c - 1].work_group_size,
                           variants[c - 1].j_splits);
                printf("\"worst_error\": %.3e, \"min_seconds\": %.6e, \"median_seconds\": %.6e, "
                       "\"max_seconds\": %.6e, \"interactions_per_second\": %.4e",
                       errors[c], t[0], median, t[per - 1], (double)n * (double)n / median);
                if (c > 0) {
                    printf(", \"%s\": [", c == 1 ? "x_baseline_per_round" : "x_float_per_round");
                    for (long long r = 0; r < rounds; ++r)
                        printf("%s%.3f", r ? ", " : "", ratios[r]);
                    const double median_ratio = fk__median(ratios, (size_t)rounds);
                    printf("], \"%s\": %.3f, \"%s\": %.3f, \"%s\": %.3f",
                           c == 1 ? "x_baseline_median" : "x_float_median", median_ratio,
                           c == 1 ? "x_baseline_min" : "x_float_min", ratios[0],
                           c == 1 ? "x_baseline_max" : "x_float_max", ratios[rounds - 1]);
                }
                printf("}%s\n", c < accum_count ? "," : "");
            }
            printf("     ]}");
        }
        for (size_t a = 0; a < accum_count; ++a)
            fk_eval_destroy(evals[a]);
        free(forces);
        free(timings);
        free(round_median);
        free_system(&s);
    }
    printf("\n  ]\n}\n");
    fk_context_destroy(context);
    return status;
}
