/*
 * fixed64's scale policy on updates (issue #33 item 6): what keeping the scale of the last
 * set_particles (FK_SCALE_KEEP, with fk_eval_wait's redo on overflow) costs in accuracy and what
 * it saves in time, against choosing a new scale at every update (FK_SCALE_EACH_UPLOAD, the bound
 * pre-pass), on MD-like trajectories. Prints one JSON document.
 *
 *   bench_scalepolicy --system lj|coulomb|plummer [--n N] [--steps S] [--every E] [--dt DT]
 *                     [--eps EPS] [--seed S] [--device SEL]
 *
 *   lj       LJ fluid melting from fcc: density 0.8, T* = 1 Maxwell-Boltzmann velocities on the
 *            lattice, rc 2.5, periodic, neighbour lists (skin 0.3); dt 0.005.
 *   coulomb  a molten salt: ljc_constant (LJ + Coulomb, k = 1, charges +-0.5 alternating on a
 *            jittered simple cubic lattice at density 0.8), T = 1, rc 2.5, periodic, neighbour
 *            lists; dt 0.002.
 *   plummer  gravity (ga) of a Plummer sphere in N-body units, eps 1e-4 (close encounters: the
 *            largest pair term swings by orders of magnitude), all-pairs; dt 0.001.
 *
 * One trajectory, velocity Verlet on the host in double, driven by the EACH evaluation's forces;
 * at every step both evaluations (each, keep) get the same positions (fk_eval_update_positions)
 * and compute. Every E steps both are compared with fk_reference_forces (double, on the host):
 * rms error |F - F_ref| / rms |F_ref|, the largest per-particle |F - F_ref| / |F_ref|, and the
 * largest |F_keep - F_each| / rms |F_ref| (--every 0: no samples, for the timing of large N); and
 * the kept scale's staleness, the ratio of the largest pair term at keep's last scale choice
 * (fk_eval_get_bound) to the largest term now (each's pre-pass of these positions): the factor of
 * resolution keep has given up. Keep's redos on overflow (fk_eval_rescale_count) are counted; the
 * wall time of update + compute of each policy is summed over the steps (interleaved, the same
 * positions).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "forcekit/forcekit.h"
#include "forcekit/tools.h"
#include "support/generate.h"
#include "support/systems.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(fk_context *context, const char *what, fk_status status)
{
    fprintf(stderr, "bench_scalepolicy: %s: %s (%s)\n", what, fk_status_string(status),
            context ? fk_context_last_error(context) : "");
    return 1;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_scalepolicy --system lj|coulomb|plummer [--n N] [--steps S] "
                    "[--every E] [--dt DT] [--eps EPS] [--seed S] [--device SEL]\n");
}

/* Errors of forces f against the reference r (3 components per particle). */
typedef struct errors {
    double rms, max_rel;
} errors;

static errors compare(const double *f, const double *r, size_t n)
{
    double num = 0, den = 0, max_rel = 0;
    for (size_t i = 0; i < n; ++i) {
        double d2 = 0, r2 = 0;
        for (int c = 0; c < 3; ++c) {
            const double d = f[3 * i + c] - r[3 * i + c];
            d2 += d * d;
            r2 += r[3 * i + c] * r[3 * i + c];
        }
        num += d2;
        den += r2;
        const double rel = r2 > 0 ? sqrt(d2 / r2) : (d2 > 0 ? INFINITY : 0);
        if (!(rel <= max_rel))
            max_rel = rel;
    }
    errors e = {.rms = den > 0 ? sqrt(num / den) : sqrt(num), .max_rel = max_rel};
    return e;
}

int main(int argc, char **argv)
{
    size_t n = 0;
    int steps = 2000, every = 100;
    double dt = 0, eps = 1e-4;
    unsigned long long seed = 1;
    const char *system = NULL, *device = NULL;
    for (int i = 1; i < argc; ++i) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!value) {
            usage();
            return 2;
        }
        ++i;
        if (strcmp(arg, "--system") == 0)
            system = value;
        else if (strcmp(arg, "--n") == 0)
            n = (size_t)strtoull(value, NULL, 10);
        else if (strcmp(arg, "--steps") == 0)
            steps = atoi(value);
        else if (strcmp(arg, "--every") == 0)
            every = atoi(value);
        else if (strcmp(arg, "--dt") == 0)
            dt = atof(value);
        else if (strcmp(arg, "--eps") == 0)
            eps = atof(value);
        else if (strcmp(arg, "--seed") == 0)
            seed = strtoull(value, NULL, 10);
        else if (strcmp(arg, "--device") == 0)
            device = value;
        else {
            usage();
            return 2;
        }
    }
    if (!system || steps < 1 || every < 0) {
        usage();
        return 2;
    }
    const int lj = strcmp(system, "lj") == 0, coulomb = strcmp(system, "coulomb") == 0,
              plummer = strcmp(system, "plummer") == 0;
    if (!lj && !coulomb && !plummer) {
        usage();
        return 2;
    }
    if (n == 0)
        n = plummer ? 1024 : 4096;
    if (!(dt > 0))
        dt = lj ? 0.005 : coulomb ? 0.002 : 0.001;
    if (n < 2 || !(eps >= 0)) {
        usage();
        return 2;
    }

    fkt_particle_set set = {0};
    double box[3] = {0, 0, 0};
    fk_status status = FK_OK;
    const char *kernel = lj ? "lj" : coulomb ? "ljc_constant" : "ga";
    if (lj) {
        status = fkt_generate_lj_fluid(n, 0.8, 1.0, seed, FKT_LAYOUT_XYZ_TYPE, &set, box);
    } else if (coulomb) {
        status = fkt_generate_lattice(n, 0.8, 0.1, seed, FKT_LAYOUT_XYZQ_TYPE, &set);
        if (status == FK_OK)
            status = fkt_generate_velocities(&set, 1.0, seed);
        box[0] = box[1] = box[2] = cbrt((double)n / 0.8);
    } else {
        status = fkt_generate_plummer(n, seed, FKT_LAYOUT_XYZM_VEL, &set);
    }
    if (status != FK_OK)
        return fail(NULL, "generate", status);

    fk_context_config context_config = FK_CONFIG_INIT(fk_context_config);
    context_config.device = device;
    fk_context *context = NULL;
    status = fk_context_create(&context_config, &context);
    if (status != FK_OK)
        return fail(context, "fk_context_create", status);

    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = kernel;
    config.accum = "fixed64";
    config.expected_count = n;
    fk_physics physics = {0};
    if (plummer) {
        config.eps = eps;
        config.algorithm = FK_ALGORITHM_ALL_PAIRS;
        physics.eps = eps;
    } else {
        config.cutoff = 2.5;
        memcpy(config.box, box, sizeof config.box);
        config.algorithm = FK_ALGORITHM_NEIGHBORS;
        config.skin = 0.3;
        physics.cutoff = 2.5;
        memcpy(physics.box, box, sizeof physics.box);
    }
    fk_particles particles = {
        .count = n, .position = set.position, .mass = set.mass, .type = set.type};
    fk_eval *each = NULL, *keep = NULL;
    config.scale_policy = FK_SCALE_EACH_UPLOAD;
    status = fk_eval_create(context, &config, &each);
    config.scale_policy = FK_SCALE_KEEP;
    if (status == FK_OK)
        status = fk_eval_create(context, &config, &keep);
    if (status == FK_OK)
        status = fk_eval_set_particles(each, &particles);
    if (status == FK_OK)
        status = fk_eval_set_particles(keep, &particles);
    if (status != FK_OK)
        return fail(context, "fk_eval_create / set_particles", status);

    double *x = malloc(3 * n * sizeof *x), *v = malloc(3 * n * sizeof *v);
    double *fe = malloc(3 * n * sizeof *fe), *fk = malloc(3 * n * sizeof *fk);
    double *fr = malloc(3 * n * sizeof *fr);
    if (!x || !v || !fe || !fk || !fr)
        return fail(context, "malloc", FK_ERR_HOST_MEMORY);
    memcpy(x, set.position, 3 * n * sizeof *x);
    memcpy(v, set.velocity, 3 * n * sizeof *v);

    printf("{\n  \"bench\": \"scalepolicy\",\n  \"device\": \"%s\",\n  \"version\": \"%s\",\n",
           fk_context_device(context)->name, fk_version());
    printf("  \"system\": \"%s\",\n  \"kernel\": \"%s\",\n  \"n\": %zu,\n  \"steps\": %d,\n"
           "  \"every\": %d,\n  \"dt\": %g,\n  \"seed\": %llu,\n",
           system, kernel, n, steps, every, dt, seed);
    if (plummer)
        printf("  \"eps\": %g,\n  \"algorithm\": \"allpairs\",\n", eps);
    else
        printf("  \"cutoff\": 2.5,\n  \"box\": %.17g,\n  \"algorithm\": \"neighbors\",\n", box[0]);
    printf("  \"samples\": [");

    double time_each = 0, time_keep = 0, worst_stale = 1, worst_keep_rms = 0, worst_each_rms = 0;
    double worst_keep_rel = 0, worst_each_rel = 0, worst_diff = 0;
    double worst_rms_ratio = 0; /* keep's rms error over each's, the worst sample */
    size_t bitwise_equal_samples = 0, samples = 0;
    int worst_bits = 0; /* keep's scale against each's, in bits (negative: keep's is finer) */
    for (int s = 0; s <= steps && status == FK_OK; ++s) {
        if (s > 0) { /* kick, drift, wrap; the second kick after the forces below */
            for (size_t m = 0; m < 3 * n; ++m) {
                v[m] += 0.5 * dt * fe[m]; /* ga: accelerations; lj, ljc: forces, unit masses */
                double y = x[m] + dt * v[m];
                const double side = box[m % 3];
                if (side > 0 && !(y >= 0 && y < side)) {
                    y -= side * floor(y / side);
                    if (y >= side || y < 0)
                        y = 0;
                }
                x[m] = y;
            }
        }
        double t0 = now();
        status = fk_eval_update_positions(each, x, NULL);
        if (status == FK_OK)
            status = fk_eval_compute(each, NULL);
        double t1 = now();
        if (status == FK_OK)
            status = fk_eval_update_positions(keep, x, NULL);
        if (status == FK_OK)
            status = fk_eval_compute(keep, NULL);
        double t2 = now();
        if (status == FK_OK)
            status = fk_eval_read_forces(each, fe);
        if (status == FK_OK)
            status = fk_eval_read_forces(keep, fk);
        if (status != FK_OK)
            break;
        if (s > 0) {
            time_each += t1 - t0;
            time_keep += t2 - t1;
            for (size_t m = 0; m < 3 * n; ++m)
                v[m] += 0.5 * dt * fe[m];
        }
        if (every > 0 && s > 0 &&
            (s % every == 0 || s == steps)) { /* fcc's step 0: forces cancel to 0 */
            fk_particles now_particles = particles;
            now_particles.position = x;
            status = fk_reference_forces(kernel, &now_particles, &physics, fr, NULL);
            if (status != FK_OK)
                break;
            const errors ee = compare(fe, fr, n), ek = compare(fk, fr, n);
            double rms_ref = 0, diff = 0;
            for (size_t m = 0; m < 3 * n; ++m) {
                rms_ref += fr[m] * fr[m];
                const double d = fabs(fk[m] - fe[m]);
                if (d > diff)
                    diff = d;
            }
            rms_ref = sqrt(rms_ref / (double)n);
            const double diff_rel = diff / rms_ref;
            double each_term = 0, keep_term = 0, unused = 0;
            fk_eval_get_bound(each, &each_term, &unused);
            fk_eval_get_bound(keep, &keep_term, &unused);
            const double stale = each_term > 0 ? keep_term / each_term : 1;
            /* the scales' exponents differ by what frexp gives the two largest terms
             * (src/core/accum/accum.c, fk__choose_fixed64): the bits of resolution keep gave up */
            int e_each = 0, e_keep = 0;
            frexp(each_term, &e_each);
            frexp(keep_term, &e_keep);
            const int bits_lost = e_keep - e_each;
            if (bits_lost > worst_bits)
                worst_bits = bits_lost;
            const int equal = memcmp(fe, fk, 3 * n * sizeof *fe) == 0;
            printf("%s\n    {\"step\": %d, \"each_rms\": %.3e, \"keep_rms\": %.3e, "
                   "\"each_max_rel\": %.3e, \"keep_max_rel\": %.3e, \"keep_vs_each\": %.3e, "
                   "\"bitwise_equal\": %s, \"max_term_now\": %.6g, \"max_term_kept\": %.6g, "
                   "\"staleness\": %.4g, \"bits_lost\": %d, \"rescales\": %zu}",
                   samples ? "," : "", s, ee.rms, ek.rms, ee.max_rel, ek.max_rel, diff_rel,
                   equal ? "true" : "false", each_term, keep_term, stale, bits_lost,
                   fk_eval_rescale_count(keep));
            ++samples;
            bitwise_equal_samples += equal;
            if (stale > worst_stale)
                worst_stale = stale;
            if (ek.rms > worst_keep_rms)
                worst_keep_rms = ek.rms;
            if (ee.rms > worst_each_rms)
                worst_each_rms = ee.rms;
            if (ek.max_rel > worst_keep_rel)
                worst_keep_rel = ek.max_rel;
            if (ee.max_rel > worst_each_rel)
                worst_each_rel = ee.max_rel;
            if (diff_rel > worst_diff)
                worst_diff = diff_rel;
            if (ee.rms > 0 && ek.rms / ee.rms > worst_rms_ratio)
                worst_rms_ratio = ek.rms / ee.rms;
            fflush(stdout);
        }
    }
    if (status != FK_OK) {
        printf("\n  ]\n}\n");
        return fail(context, "trajectory", status);
    }
    printf("\n  ],\n  \"keep_rescales\": %zu,\n  \"samples_bitwise_equal\": %zu,\n"
           "  \"samples_total\": %zu,\n",
           fk_eval_rescale_count(keep), bitwise_equal_samples, samples);
    printf("  \"worst\": {\"staleness\": %.4g, \"bits_lost\": %d, \"each_rms\": %.3e, "
           "\"keep_rms\": %.3e, "
           "\"keep_rms_over_each_rms\": %.4g, \"each_max_rel\": %.3e, \"keep_max_rel\": %.3e, "
           "\"keep_vs_each\": %.3e},\n",
           worst_stale, worst_bits, worst_each_rms, worst_keep_rms, worst_rms_ratio, worst_each_rel,
           worst_keep_rel, worst_diff);
    printf("  \"ms_per_step\": {\"each\": %.5g, \"keep\": %.5g},\n  \"each_over_keep\": %.4g\n}\n",
           1e3 * time_each / steps, 1e3 * time_keep / steps, time_each / time_keep);
    fk_eval_destroy(each);
    fk_eval_destroy(keep);
    fk_context_destroy(context);
    free(x);
    free(v);
    free(fe);
    free(fk);
    free(fr);
    fkt_particle_set_free(&set);
    return 0;
}
