/*
 * The force laws other than ga (gaj, ljc_constant, ljc_linear, ljc_sigmoidal, lj, buck) against
 * the double-precision host reference on fresh random inputs, at N that are not multiples of the
 * work-group size: every kernel x accumulator at one unroll variant and every variant with float
 * (sweep() says why not the whole product); every kernel x {float, double, fixed64, narumi} on
 * the symmetric and cell-list loops; cutoffs (pairs exactly at rc), periodic boxes, exclusions on
 * the fly and afterwards, typed pair tables and bad inputs.
 *
 * Inputs are float-exact and so are the differences of positions: coordinates are multiples of
 * 2^-16 below 64, so r_i - r_j is computed exactly in float. The error left is the rounding of
 * the pair arithmetic, which scales with the magnitudes of the parts of each pair term (the LJ
 * repulsion and attraction cancel near the minimum, the shift cancels U near rc); the tests bound
 * |F - F_ref| per particle by that sum, as test_kernels.c does for gravity.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/loops/loop.h" /* the table: every loop */
#include "forcekit/forcekit.h"
#include "test_support.h"

/* ---------------------------------------------------------------------------------------------- */
/* Systems */

enum { MAX_TYPES = 3, MAX_PARAMETERS = 3 };

typedef struct test_system {
    size_t n;
    double *position, *charge, *velocity;
    int *type;
    /* Physics: the same structure drives the evaluation config and the reference. */
    fk_physics physics;
    fk_pair_table table;
    int has_table;
    double values[MAX_TYPES * MAX_TYPES * MAX_PARAMETERS];
    size_t *exclusions;
    size_t exclusion_count;
} test_system;

/* A multiple of 2^-16: coordinates below 64 then differ exactly in float. */
static double quantize(double x)
{
    return ldexp(nearbyint(ldexp(x, 16)), -16);
}

static double uniform(fk_test_rng *rng, double low, double high)
{
    return low + (high - low) * fk_test_rng_uniform(rng);
}

static int is_gravity(const char *kernel)
{
    return strcmp(kernel, "ga") == 0 || strcmp(kernel, "gaj") == 0;
}

static void free_system(test_system *s)
{
    free(s->position);
    free(s->charge);
    free(s->velocity);
    free(s->type);
    free(s->exclusions);
    memset(s, 0, sizeof *s);
}

/* A random symmetric pair table of `types` types for the kernel (float-exact values). */
static void random_table(test_system *s, const char *kernel, size_t types, fk_test_rng *rng)
{
    const fk_kernel_info *info = fk_kernel_find(kernel);
    const unsigned parameters = info->pair_parameters;
    for (size_t a = 0; a < types; ++a)
        for (size_t b = a; b < types; ++b) {
            double v[MAX_PARAMETERS];
            if (strcmp(kernel, "buck") == 0) {
                v[0] = (double)(float)uniform(rng, 50, 150);    /* A */
                v[1] = (double)(float)uniform(rng, 0.25, 0.35); /* rho */
                v[2] = (double)(float)uniform(rng, 0.5, 2);     /* C */
            } else {
                v[0] = (double)(float)uniform(rng, 0.5, 1.5); /* epsilon */
                v[1] = (double)(float)uniform(rng, 0.8, 1.2); /* sigma */
            }
            memcpy(s->values + (a * types + b) * parameters, v, parameters * sizeof *v);
            memcpy(s->values + (b * types + a) * parameters, v, parameters * sizeof *v);
        }
    s->table = (fk_pair_table){.types = types, .values = s->values};
    s->has_table = 1;
    s->physics.pair_table = &s->table;
}

/* A jittered cubic lattice (spacing 1.1) with every seventh particle moved close (0.35 to 0.5)
 * to its predecessor: charged particles at close range. Types random below `types`, charges
 * random in +-[0.2, 1]. Gravity kernels get masses ~1/n and velocities instead. */
static void make_system(test_system *s, const char *kernel, size_t n, size_t types,
                        fk_test_rng *rng)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->position = malloc(3 * n * sizeof(double));
    s->charge = malloc(n * sizeof(double));
    s->velocity = malloc(3 * n * sizeof(double));
    s->type = malloc(n * sizeof(int));
    assert_true(s->position && s->charge && s->velocity && s->type);
    size_t side = 1;
    while (side * side * side < n)
        ++side;
    const double spacing = 1.1;
    for (size_t i = 0; i < n; ++i) {
        const size_t site[3] = {i % side, (i / side) % side, i / (side * side)};
        for (int k = 0; k < 3; ++k)
            s->position[3 * i + k] =
                quantize(((double)site[k] + 0.5 + uniform(rng, -0.25, 0.25)) * spacing);
        if (i % 7 == 6) {
            double direction[3], length = 0;
            for (int k = 0; k < 3; ++k) {
                direction[k] = uniform(rng, -1, 1);
                length += direction[k] * direction[k];
            }
            length = sqrt(length);
            const double distance = uniform(rng, 0.35, 0.5);
            for (int k = 0; k < 3; ++k)
                s->position[3 * i + k] =
                    quantize(s->position[3 * (i - 1) + k] + distance * direction[k] / length);
        }
        const double sign = fk_test_rng_uniform(rng) < 0.5 ? -1.0 : 1.0;
        s->charge[i] = is_gravity(kernel) ? (double)(float)uniform(rng, 0.5, 1.5) / (double)n
                                          : (double)(float)(sign * uniform(rng, 0.2, 1.0));
        for (int k = 0; k < 3; ++k)
            s->velocity[3 * i + k] = (double)(float)uniform(rng, -1, 1);
        s->type[i] = (int)(fk_test_rng_uniform(rng) * (double)types);
    }
    if (!is_gravity(kernel) && types > 1)
        random_table(s, kernel, types, rng);
}

static fk_particles view(const test_system *s, const char *kernel)
{
    fk_particles p = {.count = s->n, .position = s->position, .mass = s->charge};
    if (strcmp(kernel, "gaj") == 0)
        p.velocity = s->velocity;
    if (!is_gravity(kernel))
        p.type = s->type;
    if (strcmp(kernel, "lj") == 0)
        p.mass = NULL;
    return p;
}

static void config_physics(fk_eval_config *config, const fk_physics *physics)
{
    config->eps = physics->eps;
    config->cutoff = physics->cutoff;
    config->coulomb = physics->coulomb;
    memcpy(config->dielectric, physics->dielectric, sizeof config->dielectric);
    memcpy(config->box, physics->box, sizeof config->box);
}

/* ---------------------------------------------------------------------------------------------- */
/* Error scales: the magnitudes of the parts of each pair term */

typedef struct scales {
    double *force, *potential; /* per particle */
} scales;

static double lj_default[2] = {1.0, 1.0}, buck_default[3] = {1.0, 1.0, 1.0};

static const double *pair_values(const test_system *s, const char *kernel, size_t i, size_t j)
{
    if (!s->has_table)
        return strcmp(kernel, "buck") == 0 ? buck_default : lj_default;
    const unsigned parameters = fk_kernel_find(kernel)->pair_parameters;
    return s->values + ((size_t)s->type[i] * s->table.types + (size_t)s->type[j]) * parameters;
}

/* Sum of |parts| of f(r) (force) and of U(r) (energy), unshifted. */
static void pair_parts(const char *kernel, const fk_physics *ph, const double *v, double qq,
                       double r, double *force, double *energy)
{
    const double k = ph->coulomb ? ph->coulomb : 1.0;
    double f = 0, u = 0;
    if (strcmp(kernel, "buck") == 0) {
        const double bm = v[0] * exp(-r / v[1]), x = r / v[1];
        const double r6 = r * r * r * r * r * r;
        f = bm / v[1] * (1 + x) + 6 * v[2] / (r6 * r) + fabs(k * qq) / (r * r);
        u = bm * (1 + x) + v[2] / r6 + fabs(k * qq) / r;
    } else {
        const double sr = v[1] / r, sr2 = sr * sr, sr6 = sr2 * sr2 * sr2;
        f = 4 * v[0] * (12 * sr6 * sr6 + 6 * sr6) / r;
        u = 4 * v[0] * (sr6 * sr6 + sr6);
        const double d0 = ph->dielectric[0] ? ph->dielectric[0] : 1.0;
        if (strcmp(kernel, "ljc_constant") == 0) {
            f += fabs(k * qq) / (d0 * r * r);
            u += fabs(k * qq) / (d0 * r);
        } else if (strcmp(kernel, "ljc_linear") == 0) {
            f += 2 * fabs(k * qq) / (d0 * r * r * r);
            u += fabs(k * qq) / (d0 * r * r);
        } else if (strcmp(kernel, "ljc_sigmoidal") == 0) {
            const double *a = ph->dielectric;
            const double p = a[0] * r * r * r + a[1] * r * r + a[2] * r + a[3];
            const double parts =
                fabs(a[0]) * r * r * r + fabs(a[1]) * r * r + fabs(a[2]) * r + fabs(a[3]);
            const double dp = fabs(3 * a[0] * r * r) + fabs(2 * a[1] * r) + fabs(a[2]);
            const double c = fabs(k * qq) * exp(-p) / r;
            f += c * (1 / r + dp) * (1 + parts);
            u += c * (1 + parts);
        }
    }
    *force = f;
    *energy = u;
}

static void minimum_image(const fk_physics *ph, double d[3])
{
    for (int k = 0; k < 3; ++k)
        if (ph->box[k] > 0)
            d[k] -= ph->box[k] * nearbyint(d[k] / ph->box[k]);
}

/* Per particle: the sums over every other particle (excluded ones too: afterwards computes them)
 * of the term-part magnitudes, with the shift's parts inside the cutoff. */
static scales term_scales(const test_system *s, const char *kernel)
{
    scales out = {calloc(s->n, sizeof(double)), calloc(s->n, sizeof(double))};
    assert_true(out.force && out.potential);
    const fk_physics *ph = &s->physics;
    const int gravity = is_gravity(kernel);
    double rc = ph->cutoff;
    if (strcmp(kernel, "lj") == 0 && rc == 0)
        rc = 2.5;
    for (size_t i = 0; i < s->n; ++i)
        for (size_t j = 0; j < s->n; ++j) {
            if (i == j)
                continue;
            double d[3];
            for (int k = 0; k < 3; ++k)
                d[k] = s->position[3 * i + k] - s->position[3 * j + k];
            minimum_image(ph, d);
            const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            const double r = sqrt(r2);
            if (gravity) {
                const double s2 = r2 + ph->eps * ph->eps, m = fabs(s->charge[j]);
                /* jerk: m (|v| + 3 |v|) / s^3 with |v_ij| <= 2 sqrt(3) */
                const double v = strcmp(kernel, "gaj") == 0 ? 16.0 : 0.0;
                out.force[i] += m / s2 * (1 + v / sqrt(s2));
                out.potential[i] += m / sqrt(s2);
                continue;
            }
            if (rc > 0 && r >= rc)
                continue;
            const double qq = strcmp(kernel, "lj") == 0 ? 0 : s->charge[i] * s->charge[j];
            const double *v = pair_values(s, kernel, i, j);
            double f, u;
            pair_parts(kernel, ph, v, qq, r, &f, &u);
            if (rc > 0) {
                double f_rc, u_rc;
                pair_parts(kernel, ph, v, qq, rc, &f_rc, &u_rc);
                f += f_rc;
                u += u_rc + (r + rc) * f_rc;
            }
            out.force[i] += f;
            out.potential[i] += 0.5 * u;
        }
    return out;
}

static void free_scales(scales *s)
{
    free(s->force);
    free(s->potential);
}

/* ---------------------------------------------------------------------------------------------- */
/* Running and comparing */

typedef struct reference {
    double *force, *potential;
    scales scale;
    unsigned components;
} reference;

static reference make_reference(test_system *s, const char *kernel)
{
    const unsigned components = (unsigned)fk_kernel_find(kernel)->force_components;
    reference ref = {malloc(components * s->n * sizeof(double)), malloc(s->n * sizeof(double)),
                     term_scales(s, kernel), components};
    assert_true(ref.force && ref.potential);
    fk_physics physics = s->physics;
    physics.exclusions = s->exclusions;
    physics.exclusion_count = s->exclusion_count;
    const fk_particles particles = view(s, kernel);
    fk_status status = fk_reference_forces(kernel, &particles, &physics, ref.force, ref.potential);
    if (status != FK_OK)
        fail_msg("reference %s N=%zu: %s", kernel, s->n, fk_status_string(status));
    return ref;
}

static void free_reference(reference *ref)
{
    free(ref->force);
    free(ref->potential);
    free_scales(&ref->scale);
}

/* Tolerance on the scaled error: float sums of n terms lose up to ~n/2 ulp (typically sqrt n);
 * the other accumulators keep the per-term float rounding, a few ulp per part of the term (rsqrt
 * and exp are not correctly rounded). */
static double tolerance(const char *accum, size_t n)
{
    const double ulp = 5.96e-8;
    if (strcmp(accum, "float") == 0)
        return ulp * (48.0 + 2.0 * sqrt((double)n) + 0.02 * (double)n);
    return ulp * 48.0;
}

typedef struct run_options {
    int unroll_i, unroll_j;
    int exclusion_mode;
    int max_exclusions;
    int algorithm; /* fk_algorithm; 0 all-pairs */
} run_options;

/* Creates an evaluation, or returns NULL when the device cannot run this variant/accumulator. */
static fk_eval *create_eval(const char *kernel, const char *accum, const test_system *s,
                            run_options o)
{
    fk_eval_config config = {.kernel = kernel,
                             .accum = accum,
                             .unroll_i = o.unroll_i,
                             .unroll_j = o.unroll_j,
                             .potential = 1,
                             .exclusion_mode = o.exclusion_mode,
                             .max_exclusions = o.max_exclusions,
                             .algorithm = o.algorithm};
    config_physics(&config, &s->physics);
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(fk_test_context, &config, &eval);
    if (status == FK_ERR_UNSUPPORTED) {
        /* Said, so that a combination that silently stopped running shows in the log. */
        fprintf(stderr, "not offered: %s %s %dx%d %s: %s\n", kernel,
                fk_algorithm_name((fk_algorithm)o.algorithm), o.unroll_i, o.unroll_j, accum,
                fk_context_last_error(fk_test_context));
        return NULL;
    }
    if (status != FK_OK)
        fail_msg("create %s %dx%d %s: %s: %s", kernel, o.unroll_i, o.unroll_j, accum,
                 fk_status_string(status), fk_context_last_error(fk_test_context));
    return eval;
}

/* Uploads the system's table, exclusions and particles, computes, and reads forces and
 * potentials into NaN-poisoned arrays. */
static void evaluate(fk_eval *eval, const char *kernel, const test_system *s, double *force,
                     double *potential)
{
    const unsigned components = (unsigned)fk_kernel_find(kernel)->force_components;
    if (s->has_table)
        assert_int_equal(fk_eval_set_pair_table(eval, &s->table), FK_OK);
    if (s->exclusion_count)
        assert_int_equal(fk_eval_set_exclusions(eval, s->exclusions, s->exclusion_count), FK_OK);
    const fk_particles particles = view(s, kernel);
    fk_status status = fk_eval_set_particles(eval, &particles);
    if (status != FK_OK)
        fail_msg("set_particles %s N=%zu: %s: %s", kernel, s->n, fk_status_string(status),
                 fk_context_last_error(fk_test_context));
    status = fk_eval_compute(eval, NULL);
    if (status != FK_OK)
        fail_msg("compute %s: %s: %s", kernel, fk_status_string(status),
                 fk_context_last_error(fk_test_context));
    for (size_t i = 0; i < components * s->n; ++i)
        force[i] = NAN;
    for (size_t i = 0; i < s->n; ++i)
        potential[i] = NAN;
    status = fk_eval_read_forces(eval, force);
    if (status == FK_OK)
        status = fk_eval_read_potentials(eval, potential);
    if (status != FK_OK)
        fail_msg("read %s: %s: %s", kernel, fk_status_string(status),
                 fk_context_last_error(fk_test_context));
}

/* Accumulators whose resolution comes from the largest sum in the system (nitadori_large,
 * narumi: LARGE, resolution 2^-46 of it; fixed64: the scale) have an absolute error floor: up to
 * one resolution step per term, a tiny fraction of the largest per-particle scale, which close
 * pairs make many orders above a quiet particle's. */
static double global_tolerance(const char *accum, size_t n)
{
    return strcmp(accum, "float") == 0 ? 0.0 : ldexp((double)n + 16.0, -44);
}

/* Worst error of forces and potentials against the reference in units of the allowed error
 * (tol * scale_i + global_tol * the largest scale); fails on non-finite values and on anything
 * but exact zeros for N = 1. */
static double compare(const char *what, const reference *ref, size_t n, const double *force,
                      const double *potential, double tol, double global_tol)
{
    double worst = 0, largest = 0;
    for (size_t i = 0; i < n; ++i)
        largest = fmax(largest, fmax(ref->scale.force[i], ref->scale.potential[i]));
    for (size_t i = 0; i < n; ++i) {
        for (unsigned k = 0; k <= ref->components; ++k) {
            const int is_potential = k == ref->components;
            const double value = is_potential ? potential[i] : force[i * ref->components + k];
            const double want =
                is_potential ? ref->potential[i] : ref->force[i * ref->components + k];
            if (!isfinite(value))
                fail_msg("%s N=%zu particle %zu component %u is %g", what, n, i, k, value);
            if (n == 1 && value != 0.0)
                fail_msg("%s N=1: the self term must contribute exactly 0, got %g (component %u)",
                         what, value, k);
            const double scale = is_potential ? ref->scale.potential[i] : ref->scale.force[i];
            const double allowed = tol * scale + global_tol * largest;
            const double error = allowed > 0 ? fabs(value - want) / allowed : fabs(value - want);
            if (error > worst)
                worst = error;
        }
    }
    return worst;
}

/* Program builds dominate the test's time (about 1 s each on POCL), so the option paths that do
 * not depend on the accumulator run with these two only. */
static const char *const float_and_double[] = {"float", "double", NULL};

static int listed(const char *const *names, const char *name)
{
    for (; names && *names; ++names)
        if (strcmp(*names, name) == 0)
            return 1;
    return names == NULL;
}

/* Every accumulator the library has (or those in only, when not NULL), for one kernel, variant
 * and system. */
static int check_accumulators(const char *kernel, const test_system *s, const reference *ref,
                              run_options o, const char *const *only)
{
    int ran = 0;
    const unsigned components = (unsigned)fk_kernel_find(kernel)->force_components;
    double *force = malloc(components * s->n * sizeof(double));
    double *potential = malloc(s->n * sizeof(double));
    assert_true(force && potential);
    for (size_t a = 0; fk_accum_at(a); ++a) {
        const char *accum = fk_accum_at(a)->name;
        if (only && !listed(only, accum))
            continue;
        fk_eval *eval = create_eval(kernel, accum, s, o);
        if (!eval)
            continue;
        ++ran;
        evaluate(eval, kernel, s, force, potential);
        fk_eval_destroy(eval);
        char what[160];
        snprintf(what, sizeof what, "%s %s %dx%d %s%s", kernel,
                 fk_algorithm_name((fk_algorithm)o.algorithm), o.unroll_i, o.unroll_j, accum,
                 s->exclusion_count ? (o.exclusion_mode ? " on the fly" : " afterwards") : "");
        const double tol = tolerance(accum, s->n);
        const double worst =
            compare(what, ref, s->n, force, potential, tol, global_tolerance(accum, s->n));
        if (worst > 1)
            fail_msg("%s N=%zu: worst error %.3g times the bound (%.3g per unit of term "
                     "magnitude)",
                     what, s->n, worst, tol);
    }
    free(force);
    free(potential);
    return ran;
}

static const int variants_required[][2] = {{1, 1}, {1, 4}, {2, 4}, {4, 4}};

/* The physics each kernel is checked with in the main sweep: every option path appears once. */
static void kernel_physics(const char *kernel, fk_physics *ph)
{
    memset(ph, 0, sizeof *ph);
    if (strcmp(kernel, "gaj") == 0) {
        ph->eps = 0.05;
    } else if (strcmp(kernel, "ljc_constant") == 0) {
        ph->coulomb = 1.5;
        ph->dielectric[0] = 2.0; /* no cutoff: plain all-pairs */
    } else if (strcmp(kernel, "ljc_linear") == 0) {
        ph->dielectric[0] = 4.0;
        ph->cutoff = 3.0; /* shifted Coulomb too */
    } else if (strcmp(kernel, "ljc_sigmoidal") == 0) {
        const double sigmoid[4] = {0.01, -0.05, 0.3, 0.1};
        memcpy(ph->dielectric, sigmoid, sizeof sigmoid);
    } else if (strcmp(kernel, "buck") == 0) {
        ph->cutoff = 4.0;
    } /* lj: the default cutoff 2.5 */
}

/*
 * Program builds dominate the test's time (about 1 s each on POCL, more on a cold cache), so the
 * product kernel x variant x accumulator is not run whole: each kernel runs every accumulator at
 * one variant (`full`, a different one per kernel, so that every required variant meets every
 * accumulator on some kernel) and its other variants with float. The unrolling changes which
 * work-item adds which term, not the accumulator's arithmetic, and the accumulators' own algebra
 * is tested in test_accum and test_precision. The default run (CI) takes of the other variants
 * only the next one; --full (ctest label full) takes them all.
 */
static const char *const float_only[] = {"float", NULL};

static void sweep_variants(const char *kernel, const int (*variants)[2], size_t variant_count,
                           size_t full, const size_t *sizes, size_t size_count, uint64_t salt,
                           int every);

static void sweep(const char *kernel, const int (*variants)[2], size_t variant_count, size_t full,
                  const size_t *sizes, size_t size_count, uint64_t salt)
{
    sweep_variants(kernel, variants, variant_count, full, sizes, size_count, salt, 0);
}

/* Every variant listed, in either mode. */
static void sweep_all(const char *kernel, const int (*variants)[2], size_t variant_count,
                      size_t full, const size_t *sizes, size_t size_count, uint64_t salt)
{
    sweep_variants(kernel, variants, variant_count, full, sizes, size_count, salt, 1);
}

static void sweep_variants(const char *kernel, const int (*variants)[2], size_t variant_count,
                           size_t full, const size_t *sizes, size_t size_count, uint64_t salt,
                           int every)
{
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ salt);
    for (size_t z = 0; z < size_count; ++z) {
        test_system s;
        make_system(&s, kernel, sizes[z], is_gravity(kernel) ? 1 : MAX_TYPES, &rng);
        kernel_physics(kernel, &s.physics);
        if (s.has_table)
            s.physics.pair_table = &s.table;
        reference ref = make_reference(&s, kernel);
        for (size_t v = 0; v < variant_count; ++v) {
            /* The default run: the variant with every accumulator and the next one with float;
             * --full: every variant. */
            if (!every && !fk_test_full() && v != full && v != (full + 1) % variant_count)
                continue;
            run_options o = {.unroll_i = variants[v][0], .unroll_j = variants[v][1]};
            check_accumulators(kernel, &s, &ref, o, v == full ? NULL : float_only);
        }
        free_reference(&ref);
        free_system(&s);
    }
}

static const size_t sizes_main[] = {1, 2, 31, 333, 1531};

static void test_gaj(void **state)
{
    (void)state;
    sweep("gaj", variants_required, 4, 0, sizes_main, 5, 0x9a1);
}

static void test_ljc_constant(void **state)
{
    (void)state;
    sweep("ljc_constant", variants_required, 4, 1, sizes_main, 5, 0x1c1);
}

static void test_ljc_linear(void **state)
{
    (void)state;
    sweep("ljc_linear", variants_required, 4, 2, sizes_main, 5, 0x1c2);
}

static void test_ljc_sigmoidal(void **state)
{
    (void)state;
    sweep("ljc_sigmoidal", variants_required, 4, 3, sizes_main, 5, 0x1c3);
}

static void test_buck(void **state)
{
    (void)state;
    sweep("buck", variants_required, 4, 2, sizes_main, 5, 0xb0c);
}

/* lj is the representative molecular kernel: all 16 unroll variants with --full (every
 * accumulator at 1x1); the default run takes the diagonal 1x1, 2x2, 4x4, 8x8 and 1x8, 8x1. */
static void test_lj_every_unroll(void **state)
{
    (void)state;
    int variants[16][2];
    size_t count = 0;
    static const int factors[] = {1, 2, 4, 8};
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) {
            const int corner = (a == 0 && b == 3) || (a == 3 && b == 0);
            if (!fk_test_full() && a != b && !corner)
                continue;
            variants[count][0] = factors[a];
            variants[count][1] = factors[b];
            ++count;
        }
    static const size_t sizes[] = {1, 31, 333, 1531};
    sweep_all("lj", (const int(*)[2])variants, count, 0, sizes, 4, 0x17);
}

/* The four accumulators CI must see on every pair loop (issue 12): the two plain sums and the two
 * that run the bound pre-pass. */
static const char *const loop_accumulators[] = {"float", "double", "fixed64", "narumi", NULL};
/* test_laws runs every law on every loop with float and fixed64 already: the default run adds the
 * other two here (all four without fp64, where double cannot run and symmetric refuses narumi),
 * for the laws in loop_laws_default (one plain, one charged: every loop sees all four
 * accumulators, as issue 12 asks); --full all four for every law. */
static const char *const loop_accumulators_default[] = {"double", "narumi", NULL};
static int loop_law_in_default_run(const char *kernel)
{
    return !strcmp(kernel, "lj") || !strcmp(kernel, "ljc_constant");
}

/* Every molecular force law on every loop of the table but the reference (all-pairs is the sweeps
 * above, lanes are test_lanes.c: only ga has a lane form): today symmetric, cells and neighbour
 * lists, and a new loop the moment its entry is added (docs/extending.md). With float, double,
 * fixed64 and narumi, at the automatic variant and a cutoff, so that every loop applies; gaj has
 * no cutoff and so no loop that needs one (an invalid argument, not tried), and the symmetric loop
 * refuses narumi (src/core/loops/symmetric.c says why): refusals are printed as "not offered".
 * Fails when a loop ran nothing for a kernel. */
static void test_every_loop(void **state)
{
    (void)state;
    static const char *kernels[] = {"gaj",           "ljc_constant", "ljc_linear",
                                    "ljc_sigmoidal", "buck",         "lj"};
    static const size_t sizes[] = {31, 333};
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0x100b);
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; ++k)
        for (size_t a = 0; a < fk__loop_count(); ++a) {
            const fk__loop *loop = fk__loop_at(a);
            if (loop->reference)
                continue; /* the sweeps above */
            if (!fk_test_full() && fk_context_device(fk_test_context)->fp64 &&
                !loop_law_in_default_run(kernels[k]))
                continue; /* float and fixed64 on this loop: test_laws */
            if (is_gravity(kernels[k]) && loop->reach == FK__REACH_CUTOFF_SKIN)
                continue; /* cells and lists need a cutoff: an invalid argument for gravity */
            int ran = 0;
            for (size_t z = 0; z < 2; ++z) {
                test_system s;
                make_system(&s, kernels[k], sizes[z], is_gravity(kernels[k]) ? 1 : MAX_TYPES, &rng);
                kernel_physics(kernels[k], &s.physics);
                if (s.has_table)
                    s.physics.pair_table = &s.table;
                if (!is_gravity(kernels[k]) && s.physics.cutoff == 0)
                    s.physics.cutoff = 3.0;
                reference ref = make_reference(&s, kernels[k]);
                run_options o = {.algorithm = loop->algorithm};
                const int all = fk_test_full() || !fk_context_device(fk_test_context)->fp64;
                ran += check_accumulators(kernels[k], &s, &ref, o,
                                          all ? loop_accumulators : loop_accumulators_default);
                free_reference(&ref);
                free_system(&s);
            }
            if (!ran)
                fail_msg("%s: the %s loop ran with none of float, double, fixed64, narumi",
                         kernels[k], loop->name);
        }
}

/* Periodic boxes: the minimum image, with particles given outside the box too (float and double:
 * the geometry does not depend on the accumulator). */
static void test_periodic(void **state)
{
    (void)state;
    static const char *kernels[] = {"lj", "ljc_constant", "buck"};
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0xb0c5);
    for (size_t k = 0; k < 3; ++k) {
        const size_t n = 333;
        test_system s;
        make_system(&s, kernels[k], n, 2, &rng);
        size_t side = 1;
        while (side * side * side < n)
            ++side;
        const double length = quantize((double)side * 1.1);
        for (int d = 0; d < 3; ++d)
            s.physics.box[d] = length;
        s.physics.cutoff = 2.5;
        for (size_t i = 0; i < n; i += 5) /* the same particles, an image away */
            s.position[3 * i + i % 3] += i % 2 ? length : -length;
        reference ref = make_reference(&s, kernels[k]);
        run_options o = {.unroll_i = 2, .unroll_j = 4};
        check_accumulators(kernels[k], &s, &ref, o, float_and_double);
        free_reference(&ref);
        free_system(&s);
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Exclusions */

/* Bonds along the chain (i, i+1), angles (i, i+2) and a few random pairs, some listed twice and
 * in both orders. */
static void add_exclusions(test_system *s, fk_test_rng *rng)
{
    const size_t capacity = 3 * s->n + 8;
    s->exclusions = malloc(2 * capacity * sizeof(size_t));
    assert_non_null(s->exclusions);
    size_t count = 0;
    for (size_t i = 0; i + 1 < s->n; ++i) {
        s->exclusions[2 * count] = i;
        s->exclusions[2 * count++ + 1] = i + 1;
        if (i + 2 < s->n && i % 2 == 0) {
            s->exclusions[2 * count] = i + 2;
            s->exclusions[2 * count++ + 1] = i;
        }
    }
    for (int extra = 0; extra < 4 && s->n > 3; ++extra) {
        const size_t i = (size_t)(fk_test_rng_uniform(rng) * (double)s->n);
        const size_t j = (i + s->n / 2) % s->n;
        s->exclusions[2 * count] = j;
        s->exclusions[2 * count++ + 1] = i;
    }
    if (count) { /* a duplicate */
        s->exclusions[2 * count] = s->exclusions[1];
        s->exclusions[2 * count + 1] = s->exclusions[0];
        ++count;
    }
    s->exclusion_count = count;
}

static void test_exclusions_both_modes(void **state)
{
    (void)state;
    static const char *kernels[] = {"ljc_constant", "lj"};
    static const size_t sizes[] = {2, 31, 333};
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0xe7c1);
    for (size_t k = 0; k < 2; ++k)
        for (size_t z = 0; z < 3; ++z) {
            const size_t n = sizes[z];
            test_system s;
            make_system(&s, kernels[k], n, 2, &rng);
            if (k == 1) { /* lj in a periodic box, cutoff at half the side */
                size_t side = 1;
                while (side * side * side < n)
                    ++side;
                for (int d = 0; d < 3; ++d)
                    s.physics.box[d] = quantize((double)side * 1.1);
                s.physics.cutoff = fmin(2.5, 0.5 * s.physics.box[0]);
            }
            add_exclusions(&s, &rng);
            reference ref = make_reference(&s, kernels[k]); /* skips the excluded pairs */
            const unsigned components = 3;
            double *force[2], *potential[2];
            for (int mode = 0; mode < 2; ++mode) {
                run_options o = {
                    .unroll_i = 2, .unroll_j = 4, .exclusion_mode = mode, .max_exclusions = 8};
                /* Every accumulator for ljc_constant (Narumi et al. compare the modes across
                 * them); lj's periodic path with float and double. */
                check_accumulators(kernels[k], &s, &ref, o, k == 0 ? NULL : float_and_double);
                /* And the two modes agree with each other (double accumulation where there is
                 * fp64: only the rounding of the excluded terms is left). */
                force[mode] = malloc(components * n * sizeof(double));
                potential[mode] = malloc(n * sizeof(double));
                fk_eval *eval = create_eval(kernels[k], "double", &s, o);
                if (!eval)
                    eval = create_eval(kernels[k], "float", &s, o);
                assert_non_null(eval);
                evaluate(eval, kernels[k], &s, force[mode], potential[mode]);
                fk_eval_destroy(eval);
            }
            for (size_t i = 0; i < n; ++i)
                for (unsigned c = 0; c <= components; ++c) {
                    const double a =
                        c < components ? force[0][i * components + c] : potential[0][i];
                    const double b =
                        c < components ? force[1][i * components + c] : potential[1][i];
                    const double scale =
                        c < components ? ref.scale.force[i] : ref.scale.potential[i];
                    if (fabs(a - b) > tolerance("float", n) * (scale > 0 ? scale : 1))
                        fail_msg("%s N=%zu particle %zu component %u: afterwards %.17g, on the "
                                 "fly %.17g",
                                 kernels[k], n, i, c, a, b);
                }
            for (int mode = 0; mode < 2; ++mode) {
                free(force[mode]);
                free(potential[mode]);
            }
            free_reference(&ref);
            free_system(&s);
        }
}

static void expect_failure(fk_eval *eval, const fk_particles *particles, fk_status want,
                           const char *text)
{
    const fk_status got = fk_eval_set_particles(eval, particles);
    if (got != want)
        fail_msg("expected %s, got %s: %s", fk_status_string(want), fk_status_string(got),
                 fk_context_last_error(fk_test_context));
    if (text && !strstr(fk_context_last_error(fk_test_context), text))
        fail_msg("the message '%s' lacks '%s'", fk_context_last_error(fk_test_context), text);
}

static void test_exclusion_errors(void **state)
{
    (void)state;
    double position[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0}, charge[3] = {1, -1, 1};
    fk_particles particles = {.count = 3, .position = position, .mass = charge};
    fk_eval_config config = {
        .kernel = "ljc_constant", .exclusion_mode = FK_EXCLUDE_ON_THE_FLY, .max_exclusions = 1};
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    const size_t self[2] = {1, 1};
    assert_int_equal(fk_eval_set_exclusions(eval, self, 1), FK_ERR_INVALID_INPUT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "itself"));
    const size_t out_of_range[2] = {0, 3};
    assert_int_equal(fk_eval_set_exclusions(eval, out_of_range, 1), FK_OK);
    expect_failure(eval, &particles, FK_ERR_INVALID_INPUT, "particle 3 does not exist");
    /* max_exclusions 1 is rounded up to 4 slots; particle 0 with 5 partners is too many. */
    double many_position[18], many_charge[6] = {0};
    for (size_t i = 0; i < 18; ++i)
        many_position[i] = (double)i;
    const size_t star[10] = {0, 1, 0, 2, 0, 3, 0, 4, 0, 5};
    fk_particles many = {.count = 6, .position = many_position, .mass = many_charge};
    assert_int_equal(fk_eval_set_exclusions(eval, star, 5), FK_OK);
    expect_failure(eval, &many, FK_ERR_INVALID_INPUT, "particle 0 has more than 4 exclusions");
    assert_int_equal(fk_eval_set_exclusions(eval, star, 4), FK_OK);
    assert_int_equal(fk_eval_set_particles(eval, &many), FK_OK);
    fk_eval_destroy(eval);

    config = (fk_eval_config){.kernel = "ga"};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    const size_t pair[2] = {0, 1};
    assert_int_equal(fk_eval_set_exclusions(eval, pair, 1), FK_ERR_INVALID_ARGUMENT);
    fk_eval_destroy(eval);
    config = (fk_eval_config){.kernel = "lj", .exclusion_mode = 7};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
}

/* ---------------------------------------------------------------------------------------------- */
/* Cutoff, known answers, energy consistency */

/* Two particles on an axis: lj's force and potential are exactly 0 at rc and beyond, and the
 * known shifted values inside. */
static void test_lj_cutoff_exact(void **state)
{
    (void)state;
    fk_eval_config config = {.kernel = "lj", .potential = 1, .unroll_i = 1, .unroll_j = 4};
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    const double distances[] = {2.5, 2.75, 100.0, 1.0, 2.0};
    for (size_t c = 0; c < sizeof distances / sizeof distances[0]; ++c) {
        double position[6] = {0.25, -1, 3, 0.25 + distances[c], -1, 3};
        fk_particles particles = {.count = 2, .position = position};
        assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
        assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
        double force[6], potential[2], ref_force[6], ref_potential[2];
        assert_int_equal(fk_eval_read_forces(eval, force), FK_OK);
        assert_int_equal(fk_eval_read_potentials(eval, potential), FK_OK);
        assert_int_equal(fk_reference_forces("lj", &particles, NULL, ref_force, ref_potential),
                         FK_OK);
        if (distances[c] >= 2.5) {
            for (int k = 0; k < 6; ++k)
                if (force[k] != 0.0 || ref_force[k] != 0.0)
                    fail_msg("r = %g: force %g (reference %g), expected exactly 0", distances[c],
                             force[k], ref_force[k]);
            if (potential[0] != 0.0 || potential[1] != 0.0 || ref_potential[0] != 0.0)
                fail_msg("r = %g: potential %g, expected exactly 0", distances[c], potential[0]);
            continue;
        }
        /* f_s(r) = 24 (2 / r^13 - 1 / r^7) - f(rc); U_s = U(r) - U(rc) + (r - rc) f(rc) */
        const double r = distances[c], rc = 2.5;
        const double f_rc = 24 * (2 / pow(rc, 13) - 1 / pow(rc, 7));
        const double u_rc = 4 * (1 / pow(rc, 12) - 1 / pow(rc, 6));
        const double f = 24 * (2 / pow(r, 13) - 1 / pow(r, 7)) - f_rc;
        const double u = 4 * (1 / pow(r, 12) - 1 / pow(r, 6)) - u_rc + (r - rc) * f_rc;
        FK_ASSERT_NEAR(ref_force[0], -f, 1e-12 * fabs(f));
        FK_ASSERT_NEAR(ref_force[3], f, 1e-12 * fabs(f));
        FK_ASSERT_NEAR(ref_potential[0], 0.5 * u, 1e-12 * fabs(u));
        FK_ASSERT_NEAR(force[0], -f, 1e-5 * fabs(f));
        FK_ASSERT_NEAR(force[3], f, 1e-5 * fabs(f));
        FK_ASSERT_NEAR(potential[1], 0.5 * u, 1e-5 * fabs(u) + 1e-7);
        assert_true(force[1] == 0 && force[2] == 0 && force[4] == 0 && force[5] == 0);
    }
    fk_eval_destroy(eval);

    /* ljc_constant with a cutoff: 0 exactly at rc, Coulomb included. */
    config = (fk_eval_config){.kernel = "ljc_constant", .potential = 1, .cutoff = 2.0};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    double position[6] = {1, 1, 1, 1, 3, 1}, charge[2] = {1, -1};
    fk_particles particles = {.count = 2, .position = position, .mass = charge};
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    double force[6], potential[2];
    assert_int_equal(fk_eval_read_forces(eval, force), FK_OK);
    assert_int_equal(fk_eval_read_potentials(eval, potential), FK_OK);
    for (int k = 0; k < 6; ++k)
        assert_true(force[k] == 0.0);
    assert_true(potential[0] == 0.0 && potential[1] == 0.0);
    fk_eval_destroy(eval);
}

/* Total energy (sum of potentials) of the reference against its forces by central differences:
 * the forces are the exact negative gradient of the potential docs/force-laws.md defines, shift
 * included. */
static void test_energy_consistency(void **state)
{
    (void)state;
    static const char *kernels[] = {"ljc_constant", "ljc_linear", "ljc_sigmoidal", "lj", "buck"};
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0xe5e);
    for (size_t k = 0; k < 5; ++k) {
        test_system s;
        make_system(&s, kernels[k], 27, 2, &rng);
        kernel_physics(kernels[k], &s.physics);
        if (s.has_table)
            s.physics.pair_table = &s.table;
        const fk_particles particles = view(&s, kernels[k]);
        double force[81], potential[27];
        assert_int_equal(fk_reference_forces(kernels[k], &particles, &s.physics, force, potential),
                         FK_OK);
        /* Five-point central differences: truncation O(h^4) even next to the close pairs. */
        const double h = 1e-4, weight[4] = {1, -8, 8, -1}, offset[4] = {-2, -1, 1, 2};
        for (size_t i = 0; i < 27; i += 4)
            for (int c = 0; c < 3; ++c) {
                double gradient = 0, magnitude = 0;
                for (int side = 0; side < 4; ++side) {
                    const double saved = s.position[3 * i + c];
                    s.position[3 * i + c] = saved + offset[side] * h;
                    double f[81], u[27];
                    assert_int_equal(fk_reference_forces(kernels[k], &particles, &s.physics, f, u),
                                     FK_OK);
                    s.position[3 * i + c] = saved;
                    for (size_t j = 0; j < 27; ++j) {
                        gradient += weight[side] * u[j] / (12 * h);
                        magnitude += fabs(u[j]);
                    }
                }
                FK_ASSERT_NEAR(force[3 * i + c], -gradient,
                               1e-6 * (1 + fabs(gradient)) + 1e-14 * magnitude / h);
            }
        free_system(&s);
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Pair tables and bad inputs */

static void test_pair_table_errors(void **state)
{
    (void)state;
    fk_eval_config config = {.kernel = "ljc_constant"};
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    double values[3 * 3 * 2];
    unsigned char present[9];
    for (size_t p = 0; p < 9; ++p) {
        values[2 * p] = 1.0;
        values[2 * p + 1] = 1.0;
        present[p] = 1;
    }
    present[0 * 3 + 2] = present[2 * 3 + 0] = 0; /* pair (0, 2) missing */
    fk_pair_table table = {.types = 3, .values = values, .present = present};
    assert_int_equal(fk_eval_set_pair_table(eval, &table), FK_OK);
    double position[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}, charge[4] = {1, -1, 1, -1};
    int type[4] = {0, 1, 1, 0};
    fk_particles particles = {.count = 4, .position = position, .mass = charge, .type = type};
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK); /* (0, 2) unused */
    type[2] = 2;
    expect_failure(eval, &particles, FK_ERR_INVALID_INPUT, "types (0, 2)");
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "particles 0 and 2"));
    type[2] = 3;
    expect_failure(eval, &particles, FK_ERR_INVALID_INPUT, "particle 2 has type 3");
    type[2] = -1;
    expect_failure(eval, &particles, FK_ERR_INVALID_INPUT, "particle 2 has type -1");
    type[2] = 1;

    values[2 * 4 + 1] = -1; /* sigma of (1, 1) */
    assert_int_equal(fk_eval_set_pair_table(eval, &table), FK_ERR_INVALID_INPUT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "(1, 1)"));
    values[2 * 4 + 1] = NAN;
    assert_int_equal(fk_eval_set_pair_table(eval, &table), FK_ERR_INVALID_INPUT);
    values[2 * 4 + 1] = 1;
    values[2 * 1] = 2; /* epsilon (0, 1) != (1, 0) */
    assert_int_equal(fk_eval_set_pair_table(eval, &table), FK_ERR_INVALID_INPUT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "symmetric"));
    values[2 * 1] = 1;
    table.types = 0;
    assert_int_equal(fk_eval_set_pair_table(eval, &table), FK_ERR_INVALID_ARGUMENT);
    fk_eval_destroy(eval);

    /* Without a table: one type, so type 1 is unknown. */
    config = (fk_eval_config){.kernel = "lj"};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    expect_failure(eval, &particles, FK_ERR_INVALID_INPUT, "particle 1 has type 1");
    fk_eval_destroy(eval);

    /* buck: rho must be > 0. */
    config = (fk_eval_config){.kernel = "buck"};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    double buck[3] = {1, 0, 1};
    fk_pair_table one = {.types = 1, .values = buck};
    assert_int_equal(fk_eval_set_pair_table(eval, &one), FK_ERR_INVALID_INPUT);
    fk_eval_destroy(eval);
}

static void test_bad_physics_and_inputs(void **state)
{
    (void)state;
    fk_eval *eval = NULL;
    fk_eval_config config = {.kernel = "ljc_constant", .box = {10, 10, 10}};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "cutoff"));
    config.cutoff = 5.5;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "half the shortest"));
    config = (fk_eval_config){.kernel = "lj", .box = {10, 4, 10}}; /* default rc 2.5 > 2 */
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    config = (fk_eval_config){.kernel = "lj", .box = {10, 0, 10}};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    config = (fk_eval_config){.kernel = "ga", .cutoff = 1};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    config = (fk_eval_config){.kernel = "lj", .eps = 0.1};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    config = (fk_eval_config){.kernel = "lj", .cutoff = NAN};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    config = (fk_eval_config){.kernel = "ljc_constant", .dielectric = {-1}};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    config = (fk_eval_config){.kernel = "lj", .dielectric = {2}};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    assert_null(eval);

    /* Coincident particles without softening, named; in a box, modulo the box. */
    config = (fk_eval_config){.kernel = "buck"};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    double position[9] = {0, 0, 0, 1, 1, 1, 0, 0, 0}, charge[3] = {1, 1, -1};
    fk_particles particles = {.count = 3, .position = position, .mass = charge};
    expect_failure(eval, &particles, FK_ERR_INVALID_INPUT, "particles 0 and 2");
    fk_eval_destroy(eval);
    config = (fk_eval_config){.kernel = "lj", .box = {6, 6, 6}};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    position[6] = 6; /* (6, 0, 0) is (0, 0, 0) in the box */
    expect_failure(eval, &particles, FK_ERR_INVALID_INPUT, "particles 0 and 2");
    position[6] = 3;
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    fk_eval_destroy(eval);

    /* gaj needs velocities; NaN velocities are bad input. */
    config = (fk_eval_config){.kernel = "gaj", .eps = 0.1};
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_ERR_INVALID_ARGUMENT);
    double velocity[9] = {0, 0, 0, 0, NAN, 0, 0, 0, 0};
    particles.velocity = velocity;
    expect_failure(eval, &particles, FK_ERR_INVALID_INPUT, "particle 1");
    fk_eval_destroy(eval);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    /* FK_TEST_FILTER=test_every_loop runs one test (cmocka's wildcard pattern). */
    const char *filter = getenv("FK_TEST_FILTER");
    if (filter && *filter)
        cmocka_set_test_filter(filter);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_physics_and_inputs),
        cmocka_unit_test(test_pair_table_errors),
        cmocka_unit_test(test_exclusion_errors),
        cmocka_unit_test(test_lj_cutoff_exact),
        cmocka_unit_test(test_energy_consistency),
        cmocka_unit_test(test_gaj),
        cmocka_unit_test(test_ljc_constant),
        cmocka_unit_test(test_ljc_linear),
        cmocka_unit_test(test_ljc_sigmoidal),
        cmocka_unit_test(test_buck),
        cmocka_unit_test(test_lj_every_unroll),
        cmocka_unit_test(test_every_loop),
        cmocka_unit_test(test_periodic),
        cmocka_unit_test(test_exclusions_both_modes),
    };
    return cmocka_run_group_tests(tests, fk_test_context_setup, fk_test_context_teardown);
}
