/* The device integrator (fk_integrator, issue #33): velocity Verlet and Langevin BAOAB on the
 * device around the evaluation's pair loops.
 *
 * - Bit for bit: with reproducible fixed64 the forces of a position are the same bits whichever
 *   way they are computed, so a host loop through the same evaluation's public step path
 *   (update_positions, compute, read_forces) doing the scheme's double operations must give the
 *   integrator's trajectory exactly, over enough steps that the lists are rebuilt several times:
 *   this checks the arithmetic, the order of the kicks, the wrap, the noise and the rebuild
 *   decision (stale lists would miss pairs and change the forces).
 * - Against double: a host integrator with fk_reference_forces (on the positions as the device
 *   holds them), float and fixed64, every loop.
 * - Energy conservation, the Langevin temperature, bit identity across loops and work-group sizes,
 *   the noise against its host version, and misuse. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "forcekit/forcekit.h"
#include "core/integrate/integrator.h"
#include "common/splitmix64.h"
#include "test_support.h"

/* The LJ fluid: 6^3 particles at density 0.8, rc 2.5 (at most half the box side, 3.23). */
#define SIDE 6
#define N (SIDE * SIDE * SIDE)
#define DENSITY 0.8
#define DT 0.005

typedef struct fluid {
    double box;
    double x[3 * N], v[3 * N], mass[N];
} fluid;

/* A jittered lattice with velocities at temperature about t (zero total momentum) and masses
 * in [1, 2) (unit masses when unit). */
static void make_fluid(fluid *f, double t, int unit, fk_test_rng *rng)
{
    f->box = cbrt(N / DENSITY);
    fk_test_jittered_lattice(f->x, SIDE, f->box / SIDE, 0.1, rng);
    double mean[3] = {0, 0, 0};
    for (size_t i = 0; i < N; ++i) {
        f->mass[i] = unit ? 1.0 : 1.0 + fk_test_rng_uniform(rng);
        for (int k = 0; k < 3; ++k) {
            const double u1 = 1.0 - fk_test_rng_uniform(rng), u2 = fk_test_rng_uniform(rng);
            f->v[3 * i + k] =
                sqrt(t / f->mass[i]) * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
            mean[k] += f->v[3 * i + k] / N;
        }
    }
    for (size_t i = 0; i < N; ++i)
        for (int k = 0; k < 3; ++k)
            f->v[3 * i + k] -= mean[k];
}

/* Exclusions for the next make_eval (exclude afterwards), or none. */
static const size_t *next_exclusions;
static size_t next_exclusion_count;

static fk_eval *make_eval(const fluid *f, const char *accum, int algorithm, int reproducible,
                          int work_group_size, int potential)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "lj";
    config.accum = accum;
    config.cutoff = 2.5;
    config.box[0] = config.box[1] = config.box[2] = f->box;
    config.algorithm = algorithm;
    config.skin = 0.3;
    config.reproducible = reproducible;
    config.work_group_size = work_group_size;
    config.potential = potential;
    if (strcmp(accum, "fixed64") == 0) /* the host loop of the bit tests keeps the scale too */
        config.scale_policy = FK_SCALE_KEEP;
    if (next_exclusions)
        config.exclusion_mode = FK_EXCLUDE_AFTERWARDS;
    fk_eval *eval = NULL;
    if (fk_eval_create(fk_test_context, &config, &eval) != FK_OK)
        fail_msg("fk_eval_create (%s, %s): %s", accum, fk_algorithm_name(algorithm),
                 fk_context_last_error(fk_test_context));
    if (next_exclusions &&
        fk_eval_set_exclusions(eval, next_exclusions, next_exclusion_count) != FK_OK)
        fail_msg("set_exclusions: %s", fk_context_last_error(fk_test_context));
    fk_particles particles = {.count = N, .position = f->x};
    if (fk_eval_set_particles(eval, &particles) != FK_OK)
        fail_msg("set_particles: %s", fk_context_last_error(fk_test_context));
    return eval;
}

static fk_integrator *make_integrator(fk_eval *eval, const fluid *f, int kind, int masses)
{
    fk_integrator_config config = FK_CONFIG_INIT(fk_integrator_config);
    config.kind = kind;
    config.dt = DT;
    if (kind == FK_INTEGRATOR_LANGEVIN) {
        config.temperature = 1.0;
        config.friction = 2.0;
        config.seed = 0x123456789abcdefull;
    }
    if (masses) {
        config.masses = f->mass;
        config.mass_count = N;
    }
    fk_integrator *integrator = NULL;
    if (fk_integrator_create(eval, &config, &integrator) != FK_OK)
        fail_msg("fk_integrator_create: %s", fk_context_last_error(fk_test_context));
    if (fk_integrator_set_state(integrator, f->x, f->v, 0) != FK_OK)
        fail_msg("set_state: %s", fk_context_last_error(fk_test_context));
    return integrator;
}

static void step_ok(fk_integrator *integrator, uint64_t steps)
{
    if (fk_integrator_step(integrator, steps) != FK_OK)
        fail_msg("fk_integrator_step: %s", fk_context_last_error(fk_test_context));
}

/* src/support/simulate_step.c's wrap, the same operations as the device's. */
static double wrap(double x, double side)
{
    if (x >= 0 && x < side)
        return x;
    x -= side * floor(x / side);
    if (x >= side)
        x -= side;
    if (x < 0)
        x += side;
    return x;
}

/* ---------------------------------------------------------------------------------------------- */
/* Bit for bit against the host loop through the same evaluation */

static void eval_forces(fk_eval *eval, const double *x, double *force)
{
    if (fk_eval_update_positions(eval, x, NULL) != FK_OK || fk_eval_compute(eval, NULL) != FK_OK ||
        fk_eval_read_forces(eval, force) != FK_OK)
        fail_msg("host loop: %s", fk_context_last_error(fk_test_context));
}

/* The scheme on the host with the evaluation's forces: the operations of cl/integrate.cl. */
static void host_loop(fk_eval *eval, const fluid *f, int kind, uint64_t steps, double *x, double *v)
{
    const double h = 0.5 * DT;
    double c1, c2;
    fk__integrator_langevin_constants(2.0, DT, &c1, &c2);
    const uint64_t seed = 0x123456789abcdefull;
    double *force = malloc(3 * N * sizeof *force);
    assert_non_null(force);
    memcpy(x, f->x, sizeof f->x);
    memcpy(v, f->v, sizeof f->v);
    eval_forces(eval, x, force);
    for (uint64_t s = 0; s < steps; ++s) {
        for (size_t i = 0; i < N; ++i) {
            const double w = 1.0 / f->mass[i], noise = c2 * sqrt(1.0 / f->mass[i]);
            double z[3];
            fk__integrator_noise_host(seed, s, (uint32_t)i, z);
            for (int k = 0; k < 3; ++k) {
                const size_t m = 3 * i + (size_t)k;
                v[m] = v[m] + h * (force[m] * w);
                if (kind == FK_INTEGRATOR_LANGEVIN) {
                    x[m] = x[m] + h * v[m];
                    v[m] = c1 * v[m] + noise * z[k];
                    x[m] = x[m] + h * v[m];
                } else {
                    x[m] = x[m] + DT * v[m];
                }
                x[m] = wrap(x[m], f->box);
            }
        }
        eval_forces(eval, x, force);
        for (size_t m = 0; m < 3 * N; ++m)
            v[m] = v[m] + h * (force[m] * (1.0 / f->mass[m / 3]));
    }
    free(force);
}

static void assert_same_bits(const double *a, const double *b, size_t count, const char *what)
{
    for (size_t m = 0; m < count; ++m)
        if (memcmp(&a[m], &b[m], sizeof a[m]) != 0)
            fail_msg("%s %zu differs: %a vs %a", what, m, a[m], b[m]);
}

/* Nonzero: the next bit test sends particles 0 and 1 (lattice neighbours along z) at each other
 * fast enough that their force leaves the fixed64 scale chosen at the start. */
static int next_collision;

static void bits_against_host_loop(int kind, int algorithm)
{
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    fluid *f = malloc(sizeof *f);
    double *x = malloc(3 * N * sizeof *x), *v = malloc(3 * N * sizeof *v);
    double *gx = malloc(3 * N * sizeof *gx), *gv = malloc(3 * N * sizeof *gv);
    assert_true(f && x && v && gx && gv);
    make_fluid(f, 1.5, 0, &rng);
    if (next_collision) {
        f->v[2] = 8.0;
        f->v[5] = -8.0;
    }
    fk_eval *device = make_eval(f, "fixed64", algorithm, 1, 0, 0);
    fk_eval *host = make_eval(f, "fixed64", algorithm, 1, 0, 0);
    fk_integrator *integrator = make_integrator(device, f, kind, 1);
    const uint64_t steps = 120;
    /* in uneven groups of calls: the trajectory must not depend on them */
    step_ok(integrator, 1);
    step_ok(integrator, 50);
    step_ok(integrator, steps - 51);
    uint64_t step = 0, rebuilds = 0, rescales = 0;
    assert_int_equal(fk_integrator_get_state(integrator, gx, gv, &step), FK_OK);
    assert_int_equal(step, steps);
    assert_int_equal(fk_integrator_counters(integrator, &rebuilds, &rescales, NULL), FK_OK);
    if (next_collision && rescales < 2) /* set_state's, and at least one on the way */
        fail_msg("the collision rescaled %llu times", (unsigned long long)rescales);
    if (algorithm == FK_ALGORITHM_CELLS || algorithm == FK_ALGORITHM_NEIGHBORS)
        if (rebuilds < 3) /* the check must have been exercised */
            fail_msg("only %llu rebuilds in %llu steps", (unsigned long long)rebuilds,
                     (unsigned long long)steps);
    host_loop(host, f, kind, steps, x, v);
    assert_same_bits(gx, x, 3 * N, "position");
    assert_same_bits(gv, v, 3 * N, "velocity");
    fk_integrator_destroy(integrator);
    fk_eval_destroy(device);
    fk_eval_destroy(host);
    free(f);
    free(x);
    free(v);
    free(gx);
    free(gv);
}

static void test_verlet_bits_all_pairs(void **state)
{
    (void)state;
    bits_against_host_loop(FK_INTEGRATOR_VERLET, FK_ALGORITHM_ALL_PAIRS);
}

static void test_verlet_bits_neighbors(void **state)
{
    (void)state;
    bits_against_host_loop(FK_INTEGRATOR_VERLET, FK_ALGORITHM_NEIGHBORS);
}

static void test_langevin_bits_cells(void **state)
{
    (void)state;
    bits_against_host_loop(FK_INTEGRATOR_LANGEVIN, FK_ALGORITHM_CELLS);
}

static void test_langevin_bits_neighbors(void **state)
{
    (void)state;
    bits_against_host_loop(FK_INTEGRATOR_LANGEVIN, FK_ALGORITHM_NEIGHBORS);
}

/* The evaluation's own calls between steps (an update to other positions and a compute, which
 * rebuild its lists from those): the integrator rebuilds from its own and goes on with the same
 * bits as one left alone. */
static void test_eval_calls_between_steps(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    fluid *f = malloc(sizeof *f), *other = malloc(sizeof *other);
    double *x[2], *v[2];
    assert_true(f && other);
    make_fluid(f, 1.0, 0, &rng);
    /* the same sites shuffled: lists built there pair particle i with the wrong ones */
    size_t order[N];
    for (size_t i = 0; i < N; ++i)
        order[i] = i;
    for (size_t i = N - 1; i > 0; --i) {
        const size_t j = (size_t)(fk_test_rng_uniform(&rng) * (double)(i + 1));
        const size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < N; ++i)
        for (int k = 0; k < 3; ++k)
            other->x[3 * i + k] = f->x[3 * order[i] + k];
    for (int r = 0; r < 2; ++r) {
        x[r] = malloc(3 * N * sizeof *x[r]);
        v[r] = malloc(3 * N * sizeof *v[r]);
        assert_true(x[r] && v[r]);
        fk_eval *eval = make_eval(f, "fixed64", FK_ALGORITHM_NEIGHBORS, 1, 0, 0);
        fk_integrator *integrator = make_integrator(eval, f, FK_INTEGRATOR_LANGEVIN, 1);
        step_ok(integrator, 30);
        if (r == 1) {
            fk_variant before, after;
            assert_int_equal(fk_eval_get_variant(eval, &before), FK_OK);
            assert_int_equal(fk_eval_update_positions(eval, other->x, NULL), FK_OK);
            assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
            assert_int_equal(fk_eval_get_variant(eval, &after), FK_OK);
            assert_true(after.cell_rebuilds > before.cell_rebuilds); /* the case under test */
        }
        step_ok(integrator, 60);
        assert_int_equal(fk_integrator_get_state(integrator, x[r], v[r], NULL), FK_OK);
        fk_integrator_destroy(integrator);
        fk_eval_destroy(eval);
    }
    assert_same_bits(x[1], x[0], 3 * N, "position");
    assert_same_bits(v[1], v[0], 3 * N, "velocity");
    for (int r = 0; r < 2; ++r) {
        free(x[r]);
        free(v[r]);
    }
    free(f);
    free(other);
}

/* A collision: fixed64 overflows mid-group, the integrator stops there, chooses a new scale from
 * those positions and computes the step again, as the evaluation's FK_SCALE_KEEP does in the host
 * loop: the same bits. */
static void test_verlet_bits_rescale(void **state)
{
    (void)state;
    next_collision = 1;
    bits_against_host_loop(FK_INTEGRATOR_VERLET, FK_ALGORITHM_ALL_PAIRS);
    bits_against_host_loop(FK_INTEGRATOR_LANGEVIN, FK_ALGORITHM_NEIGHBORS);
}

/* Exclude afterwards: the device's subtraction pass is part of the integrator's forces. */
static void test_verlet_bits_exclusions(void **state)
{
    (void)state;
    /* Per lattice column (consecutive indices run along z, SIDE = 6 to a column): (0, 2) and
     * (3, 5), two spacings apart with an unexcluded particle between them, and (1, 4), three
     * spacings apart (beyond the cutoff at the start). Excluded partners do not repel, and the
     * afterwards mode computes their terms before subtracting them: lattice neighbours (the
     * earlier choice) could meet head-on within the 120 steps, and an overflowing term at r ~ 0
     * ended the run with FK_ERR_OVERFLOW (FK_TEST_SEED=1883109998988049). */
    size_t pairs[2 * (N / 2)];
    _Static_assert(SIDE == 6, "the pairs below are for columns of 6");
    static const size_t column_pairs[3][2] = {{0, 2}, {3, 5}, {1, 4}};
    size_t p = 0;
    for (size_t column = 0; column < N / SIDE; ++column)
        for (size_t q = 0; q < 3; ++q, ++p) {
            pairs[2 * p] = SIDE * column + column_pairs[q][0];
            pairs[2 * p + 1] = SIDE * column + column_pairs[q][1];
        }
    next_exclusions = pairs;
    next_exclusion_count = N / 2;
    bits_against_host_loop(FK_INTEGRATOR_VERLET, FK_ALGORITHM_NEIGHBORS);
}

/* The options the bit tests take from the file's state, cleared after each such test also when
 * it fails (a failed assertion leaves the test early; the tests after it must not inherit them). */
static int clear_next_options(void **state)
{
    (void)state;
    next_exclusions = NULL;
    next_exclusion_count = 0;
    next_collision = 0;
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Against a double host integrator */

/* Velocity Verlet in double with fk_reference_forces on the positions rounded to float (what the
 * device's pair loops see; held_in_float 0: as they are, for double-single positions). */
static void reference_verlet_held(const char *kernel, const fk_physics *physics, size_t n,
                                  const double *mass, uint64_t steps, double dt, double *x,
                                  double *v, int periodic, double box, int held_in_float)
{
    double *force = malloc(3 * n * sizeof *force), *held = malloc(3 * n * sizeof *held);
    assert_true(force && held);
    const int gravity = strcmp(kernel, "ga") == 0;
    for (uint64_t s = 0; s <= steps; ++s) {
        for (size_t m = 0; m < 3 * n; ++m)
            held[m] = held_in_float ? (double)(float)x[m] : x[m];
        fk_particles particles = {.count = n, .position = held, .mass = gravity ? mass : NULL};
        assert_int_equal(fk_reference_forces(kernel, &particles, physics, force, NULL), FK_OK);
        for (size_t m = 0; m < 3 * n; ++m) {
            const double a = gravity ? force[m] : force[m] / mass[m / 3];
            if (s > 0)
                v[m] += 0.5 * dt * a; /* closing the previous step */
            if (s < steps) {
                v[m] += 0.5 * dt * a;
                x[m] += dt * v[m];
                if (periodic)
                    x[m] = wrap(x[m], box);
            }
        }
    }
    free(force);
    free(held);
}

static void reference_verlet(const char *kernel, const fk_physics *physics, size_t n,
                             const double *mass, uint64_t steps, double dt, double *x, double *v,
                             int periodic, double box)
{
    reference_verlet_held(kernel, physics, n, mass, steps, dt, x, v, periodic, box, 1);
}

/* The largest |a - b| over count values, minimum image for positions in a box. */
static double max_difference(const double *a, const double *b, size_t count, double box)
{
    double worst = 0;
    for (size_t m = 0; m < count; ++m) {
        double d = a[m] - b[m];
        if (box > 0)
            d -= box * rint(d / box);
        worst = fmax(worst, fabs(d));
    }
    return worst;
}

static void lj_against_reference(const char *accum, int algorithm)
{
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    fluid *f = malloc(sizeof *f);
    double *x = malloc(3 * N * sizeof *x), *v = malloc(3 * N * sizeof *v);
    double *gx = malloc(3 * N * sizeof *gx), *gv = malloc(3 * N * sizeof *gv);
    assert_true(f && x && v && gx && gv);
    make_fluid(f, 1.0, 0, &rng);
    fk_eval *eval = make_eval(f, accum, algorithm, 0, 0, 0);
    fk_integrator *integrator = make_integrator(eval, f, FK_INTEGRATOR_VERLET, 1);
    const uint64_t steps = 10;
    step_ok(integrator, steps);
    assert_int_equal(fk_integrator_get_state(integrator, gx, gv, NULL), FK_OK);
    memcpy(x, f->x, sizeof f->x);
    memcpy(v, f->v, sizeof f->v);
    fk_physics physics = {.cutoff = 2.5, .box = {f->box, f->box, f->box}};
    reference_verlet("lj", &physics, N, f->mass, steps, DT, x, v, 1, f->box);
    /* The float pair terms carry about 1e-6 of the largest force (~1e2 here: the closest pair is
     * at least 0.97 apart on this lattice): over 10 steps of 0.005 that moves a velocity by about
     * 2e-6 and a position by 5e-8 (measured on POCL); the tolerances are 20x that. */
    const double dx = max_difference(gx, x, 3 * N, f->box), dv = max_difference(gv, v, 3 * N, 0);
    fprintf(stderr, "lj %s/%s: positions off by %.3g, velocities by %.3g\n", accum,
            fk_algorithm_name(algorithm), dx, dv);
    if (!(dx <= 1e-6 && dv <= 5e-5))
        fail_msg("%s/%s: positions off by %g, velocities by %g", accum,
                 fk_algorithm_name(algorithm), dx, dv);
    fk_integrator_destroy(integrator);
    fk_eval_destroy(eval);
    free(f);
    free(x);
    free(v);
    free(gx);
    free(gv);
}

static void test_lj_reference_loops(void **state)
{
    (void)state;
    const int algorithms[] = {FK_ALGORITHM_ALL_PAIRS, FK_ALGORITHM_SYMMETRIC, FK_ALGORITHM_CELLS,
                              FK_ALGORITHM_NEIGHBORS};
    const char *accums[] = {"float", "fixed64"};
    for (size_t a = 0; a < 2; ++a)
        for (size_t l = 0; l < sizeof algorithms / sizeof algorithms[0]; ++l)
            lj_against_reference(accums[a], algorithms[l]);
}

/* ga and gaj, open boundaries, masses of the evaluation; ga with double-single positions and ref
 * (double pair arithmetic), whose forces agree with double to about 1e-13: the records' low parts
 * written by the integrator must be right. The energies against the reference's at the final
 * state. */
static void test_ga_reference(void **state)
{
    (void)state;
    enum { G = 150, STEPS = 20 };
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    double x[3 * G], v[3 * G], mass[G], gx[3 * G], gv[3 * G], rx[3 * G], rv[3 * G];
    for (size_t i = 0; i < G; ++i) {
        mass[i] = (0.5 + fk_test_rng_uniform(&rng)) / G;
        for (int k = 0; k < 3; ++k) {
            x[3 * i + k] = 2.0 * fk_test_rng_uniform(&rng) - 1.0;
            v[3 * i + k] = 0.3 * (fk_test_rng_uniform(&rng) - 0.5);
        }
    }
    /* gaj too: its first three outputs are ga's accelerations (its jerk is not used) */
    const struct {
        const char *kernel, *accum;
        int ds;
        double dx, dv, du; /* tolerances: positions, velocities, potential energy (relative) */
    } cases[] = {
        /* accelerations of at most m / eps^2 ~ 4 with float errors ~1e-6 of them: over 20 steps
         * of 0.002, a few 1e-9 in v and 1e-10 in x (measured on POCL); the tolerances are 30x */
        {"ga", "float", 0, 2e-9, 1e-7, 1e-6},
        {"ga", "fixed64", 0, 2e-9, 1e-7, 1e-6},
        {"gaj", "float", 0, 2e-9, 1e-7, 1e-6},
        /* 1e-13 of the accelerations: 6e-17 in x and 1e-16 in v measured; 100x */
        {"ga", "ref", 1, 1e-14, 1e-13, 1e-12},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
        config.kernel = cases[c].kernel;
        config.accum = cases[c].accum;
        config.eps = 0.05;
        config.potential = 1;
        config.positions = cases[c].ds ? FK_POSITIONS_DOUBLE_SINGLE : FK_POSITIONS_FLOAT;
        fk_eval *eval = NULL;
        assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
        fk_particles particles = {.count = G, .position = x, .mass = mass, .velocity = v};
        assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
        fk_integrator_config ic = FK_CONFIG_INIT(fk_integrator_config);
        ic.dt = 0.002;
        fk_integrator *integrator = NULL;
        assert_int_equal(fk_integrator_create(eval, &ic, &integrator), FK_OK);
        assert_int_equal(fk_integrator_set_state(integrator, x, v, 0), FK_OK);
        step_ok(integrator, STEPS);
        assert_int_equal(fk_integrator_get_state(integrator, gx, gv, NULL), FK_OK);
        double kinetic = 0, potential = 0;
        assert_int_equal(fk_integrator_energies(integrator, &kinetic, &potential), FK_OK);
        memcpy(rx, x, sizeof x);
        memcpy(rv, v, sizeof v);
        fk_physics physics = {.eps = 0.05};
        /* the masses as the device holds them (float, or a float pair) */
        double held_mass[G];
        for (size_t i = 0; i < G; ++i) {
            const float hi = (float)mass[i];
            held_mass[i] = cases[c].ds ? (double)hi + (double)(float)(mass[i] - hi) : hi;
        }
        reference_verlet_held("ga", &physics, G, held_mass, STEPS, 0.002, rx, rv, 0, 0,
                              !cases[c].ds);
        const double dx = max_difference(gx, rx, 3 * G, 0), dv = max_difference(gv, rv, 3 * G, 0);
        /* the energies at the device's final state */
        double held[3 * G], force[3 * G], phi[G], k_ref = 0, u_ref = 0;
        for (size_t m = 0; m < 3 * G; ++m)
            held[m] = cases[c].ds ? gx[m] : (double)(float)gx[m];
        fk_particles final = {.count = G, .position = held, .mass = held_mass};
        assert_int_equal(fk_reference_forces("ga", &final, &physics, force, phi), FK_OK);
        for (size_t i = 0; i < G; ++i) {
            const double *w = gv + 3 * i;
            k_ref += 0.5 * held_mass[i] * (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
            u_ref += 0.5 * held_mass[i] * phi[i];
        }
        fprintf(stderr, "%s %s%s: positions off by %.3g, velocities by %.3g, U by %.3g\n",
                cases[c].kernel, cases[c].accum, cases[c].ds ? " ds" : "", dx, dv,
                fabs(potential - u_ref) / fabs(u_ref));
        if (!(dx <= cases[c].dx && dv <= cases[c].dv))
            fail_msg("%s/%s: positions off by %g, velocities by %g", cases[c].kernel,
                     cases[c].accum, dx, dv);
        FK_ASSERT_NEAR(kinetic, k_ref, 1e-12 * k_ref);
        FK_ASSERT_NEAR(potential, u_ref, cases[c].du * fabs(u_ref));
        fk_integrator_destroy(integrator);
        fk_eval_destroy(eval);
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Hermite (gaj) */

enum { HG = 150, HERMITE_STEPS = 20 };
#define HERMITE_DT 0.002

static void hermite_cluster(double *x, double *v, double *mass)
{
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    for (size_t i = 0; i < HG; ++i) {
        mass[i] = (0.5 + fk_test_rng_uniform(&rng)) / HG;
        for (int k = 0; k < 3; ++k) {
            x[3 * i + k] = 2.0 * fk_test_rng_uniform(&rng) - 1.0;
            v[3 * i + k] = 0.3 * (fk_test_rng_uniform(&rng) - 0.5);
        }
    }
}

static fk_eval *hermite_eval(const char *accum, int algorithm, int reproducible, const double *x,
                             const double *v, const double *mass)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "gaj";
    config.accum = accum;
    config.eps = 0.05;
    config.potential = 1;
    config.algorithm = algorithm;
    config.reproducible = reproducible;
    if (strcmp(accum, "fixed64") == 0)
        config.scale_policy = FK_SCALE_KEEP;
    fk_eval *eval = NULL;
    if (fk_eval_create(fk_test_context, &config, &eval) != FK_OK)
        fail_msg("gaj: %s", fk_context_last_error(fk_test_context));
    fk_particles particles = {.count = HG, .position = x, .mass = mass, .velocity = v};
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    return eval;
}

static fk_integrator *hermite_integrator(fk_eval *eval, const double *x, const double *v)
{
    fk_integrator_config config = FK_CONFIG_INIT(fk_integrator_config);
    config.kind = FK_INTEGRATOR_HERMITE;
    config.dt = HERMITE_DT;
    fk_integrator *integrator = NULL;
    if (fk_integrator_create(eval, &config, &integrator) != FK_OK)
        fail_msg("Hermite: %s", fk_context_last_error(fk_test_context));
    assert_int_equal(fk_integrator_set_state(integrator, x, v, 0), FK_OK);
    return integrator;
}

/* src/support/simulate_step.c's hermite_step with the forces of `eval` (accelerations and jerks),
 * or with the double reference at the positions and velocities rounded to float (eval NULL). */
static void host_hermite(fk_eval *eval, const double *mass, double *x, double *v)
{
    const double dt = HERMITE_DT, half = 0.5 * dt, twelfth = dt * dt / 12.0;
    double *f0 = malloc(6 * HG * sizeof *f0), *f1 = malloc(6 * HG * sizeof *f1);
    double *xp = malloc(3 * HG * sizeof *xp), *vp = malloc(3 * HG * sizeof *vp);
    assert_true(f0 && f1 && xp && vp);
    fk_physics physics = {.eps = 0.05};
    for (int s = 0; s <= HERMITE_STEPS; ++s) {
        const double *px = s == 0 ? x : xp, *pv = s == 0 ? v : vp;
        double *out = s == 0 ? f0 : f1;
        if (eval) {
            if (fk_eval_update_positions(eval, px, pv) != FK_OK ||
                fk_eval_compute(eval, NULL) != FK_OK || fk_eval_read_forces(eval, out) != FK_OK)
                fail_msg("host Hermite: %s", fk_context_last_error(fk_test_context));
        } else {
            double hx[3 * HG], hv[3 * HG], hm[HG];
            for (size_t m = 0; m < 3 * HG; ++m) {
                hx[m] = (double)(float)px[m];
                hv[m] = (double)(float)pv[m];
            }
            for (size_t i = 0; i < HG; ++i)
                hm[i] = (double)(float)mass[i];
            fk_particles particles = {.count = HG, .position = hx, .mass = hm, .velocity = hv};
            assert_int_equal(fk_reference_forces("gaj", &particles, &physics, out, NULL), FK_OK);
        }
        if (s > 0) { /* correct step s - 1 */
            for (size_t i = 0; i < HG; ++i)
                for (int k = 0; k < 3; ++k) {
                    const size_t m = 3 * i + (size_t)k;
                    const double a = f0[6 * i + k], j = f0[6 * i + 3 + k];
                    const double a1 = f1[6 * i + k], j1 = f1[6 * i + 3 + k];
                    const double v1 = v[m] + half * (a + a1) + twelfth * (j - j1);
                    x[m] = x[m] + half * (v[m] + v1) + twelfth * (a - a1);
                    v[m] = v1;
                }
            memcpy(f0, f1, 6 * HG * sizeof *f0);
        }
        if (s == HERMITE_STEPS)
            break;
        for (size_t i = 0; i < HG; ++i)
            for (int k = 0; k < 3; ++k) {
                const size_t m = 3 * i + (size_t)k;
                const double a = f0[6 * i + k], j = f0[6 * i + 3 + k];
                xp[m] = x[m] + dt * (v[m] + dt * (0.5 * a + dt * (j / 6.0)));
                vp[m] = v[m] + dt * (a + dt * (0.5 * j));
            }
    }
    free(f0);
    free(f1);
    free(xp);
    free(vp);
}

/* With reproducible fixed64: the host loop's bits, all-pairs and symmetric, in uneven calls. */
static void test_hermite_bits(void **state)
{
    (void)state;
    double x[3 * HG], v[3 * HG], mass[HG], gx[3 * HG], gv[3 * HG], hx[3 * HG], hv[3 * HG];
    hermite_cluster(x, v, mass);
    const int algorithms[] = {FK_ALGORITHM_ALL_PAIRS, FK_ALGORITHM_SYMMETRIC};
    for (int l = 0; l < 2; ++l) {
        fk_eval *device = hermite_eval("fixed64", algorithms[l], 1, x, v, mass);
        fk_eval *host = hermite_eval("fixed64", algorithms[l], 1, x, v, mass);
        fk_integrator *integrator = hermite_integrator(device, x, v);
        step_ok(integrator, 7);
        step_ok(integrator, HERMITE_STEPS - 7);
        assert_int_equal(fk_integrator_get_state(integrator, gx, gv, NULL), FK_OK);
        memcpy(hx, x, sizeof x);
        memcpy(hv, v, sizeof v);
        host_hermite(host, mass, hx, hv);
        assert_same_bits(gx, hx, 3 * HG, "position");
        assert_same_bits(gv, hv, 3 * HG, "velocity");
        fk_integrator_destroy(integrator);
        fk_eval_destroy(device);
        fk_eval_destroy(host);
    }
}

/* Against the double reference (fk_reference_forces' gaj), and the energies at the end. */
static void test_hermite_reference(void **state)
{
    (void)state;
    double x[3 * HG], v[3 * HG], mass[HG], gx[3 * HG], gv[3 * HG], hx[3 * HG], hv[3 * HG];
    hermite_cluster(x, v, mass);
    fk_eval *eval = hermite_eval("float", FK_ALGORITHM_ALL_PAIRS, 0, x, v, mass);
    fk_integrator *integrator = hermite_integrator(eval, x, v);
    step_ok(integrator, HERMITE_STEPS);
    assert_int_equal(fk_integrator_get_state(integrator, gx, gv, NULL), FK_OK);
    double kinetic = 0, potential = 0;
    assert_int_equal(fk_integrator_energies(integrator, &kinetic, &potential), FK_OK);
    memcpy(hx, x, sizeof x);
    memcpy(hv, v, sizeof v);
    host_hermite(NULL, mass, hx, hv);
    const double dx = max_difference(gx, hx, 3 * HG, 0), dv = max_difference(gv, hv, 3 * HG, 0);
    /* the energies at the device's final state, the masses as the device holds them */
    double held[3 * HG], force[3 * HG], phi[HG], k_ref = 0, u_ref = 0;
    for (size_t m = 0; m < 3 * HG; ++m)
        held[m] = (double)(float)gx[m];
    double held_mass[HG];
    for (size_t i = 0; i < HG; ++i)
        held_mass[i] = (double)(float)mass[i];
    fk_physics physics = {.eps = 0.05};
    fk_particles final = {.count = HG, .position = held, .mass = held_mass};
    assert_int_equal(fk_reference_forces("ga", &final, &physics, force, phi), FK_OK);
    for (size_t i = 0; i < HG; ++i) {
        const double *w = gv + 3 * i;
        k_ref += 0.5 * held_mass[i] * (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
        u_ref += 0.5 * held_mass[i] * phi[i];
    }
    fprintf(stderr, "Hermite: positions off by %.3g, velocities by %.3g, U by %.3g\n", dx, dv,
            fabs(potential - u_ref) / fabs(u_ref));
    /* as ga's Verlet: float pair terms, 1e-6 of accelerations up to ~4 and jerks; 30x measured */
    if (!(dx <= 2e-9 && dv <= 1e-7))
        fail_msg("Hermite: positions off by %g, velocities by %g", dx, dv);
    FK_ASSERT_NEAR(kinetic, k_ref, 1e-12 * k_ref);
    FK_ASSERT_NEAR(potential, u_ref, 1e-6 * fabs(u_ref));
    fk_integrator_destroy(integrator);
    fk_eval_destroy(eval);
}

/* ---------------------------------------------------------------------------------------------- */
/* Energies */

/* The largest change of the total energy over blocks x every steps of the double host Verlet
 * (fk_reference_forces at the double positions), unit masses. */
static double host_energy_change(const fluid *f, int blocks, int every)
{
    double *x = malloc(3 * N * sizeof *x), *v = malloc(3 * N * sizeof *v);
    double *force = malloc(3 * N * sizeof *force), *potential = malloc(N * sizeof *potential);
    assert_true(x && v && force && potential);
    memcpy(x, f->x, sizeof f->x);
    memcpy(v, f->v, sizeof f->v);
    fk_physics physics = {.cutoff = 2.5, .box = {f->box, f->box, f->box}};
    double e0 = 0, worst = 0;
    for (int block = 0; block <= blocks; ++block) {
        if (block > 0)
            reference_verlet("lj", &physics, N, f->mass, (uint64_t)every, DT, x, v, 1, f->box);
        fk_particles particles = {.count = N, .position = x};
        assert_int_equal(fk_reference_forces("lj", &particles, &physics, force, potential), FK_OK);
        double e = 0;
        for (size_t i = 0; i < N; ++i)
            e += 0.5 * (v[3 * i] * v[3 * i] + v[3 * i + 1] * v[3 * i + 1] +
                        v[3 * i + 2] * v[3 * i + 2]) +
                 potential[i];
        if (block == 0)
            e0 = e;
        worst = fmax(worst, fabs(e - e0));
    }
    free(x);
    free(v);
    free(force);
    free(potential);
    return worst;
}

static void test_verlet_energy(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    fluid *f = malloc(sizeof *f);
    assert_non_null(f);
    make_fluid(f, 1.0, 1, &rng);
    fk_eval *eval = make_eval(f, "float", FK_ALGORITHM_NEIGHBORS, 0, 0, 1);
    fk_integrator *integrator = make_integrator(eval, f, FK_INTEGRATOR_VERLET, 0);
    double k0 = 0, u0 = 0;
    assert_int_equal(fk_integrator_energies(integrator, &k0, &u0), FK_OK);
    /* the kinetic energy against the host's sum of the same velocities */
    double k_host = 0;
    for (size_t m = 0; m < 3 * N; ++m)
        k_host += 0.5 * f->v[m] * f->v[m];
    FK_ASSERT_NEAR(k0, k_host, 1e-12 * k_host);
    enum { BLOCKS = 30, EVERY = 10 };
    const double e0 = k0 + u0;
    double worst = 0;
    for (int block = 0; block < BLOCKS; ++block) {
        step_ok(integrator, EVERY);
        double k = 0, u = 0;
        assert_int_equal(fk_integrator_energies(integrator, &k, &u), FK_OK);
        worst = fmax(worst, fabs(k + u - e0));
    }
    /* Verlet's total energy fluctuates by O(dt^2) around the shadow Hamiltonian's: the device's
     * float forces (1e-6 of the double ones) must not change that fluctuation measurably, while
     * a wrong half kick or a stale list changes it by orders of magnitude. */
    const double host = host_energy_change(f, BLOCKS, EVERY);
    fprintf(stderr, "energy: kinetic %.6g potential %.6g, largest change %.4g (double host %.4g)\n",
            k0, u0, worst, host);
    if (!(worst <= 1.05 * host + 1e-4 * fabs(e0)))
        fail_msg("total energy moved by %g over 300 steps, the double host loop's by %g", worst,
                 host);
    fk_integrator_destroy(integrator);
    fk_eval_destroy(eval);
    free(f);
}

/* The energies are fixed-point sums: the same bits for the same state, whichever loop computed
 * its potentials (fixed64 reproducible). */
static void test_energy_bits_across_loops(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    fluid *f = malloc(sizeof *f);
    assert_non_null(f);
    make_fluid(f, 1.0, 0, &rng);
    const int algorithms[] = {FK_ALGORITHM_ALL_PAIRS, FK_ALGORITHM_NEIGHBORS};
    double energies[2][2];
    for (int l = 0; l < 2; ++l) {
        fk_eval *eval = make_eval(f, "fixed64", algorithms[l], 1, 0, 1);
        fk_integrator *integrator = make_integrator(eval, f, FK_INTEGRATOR_VERLET, 1);
        step_ok(integrator, 25);
        assert_int_equal(fk_integrator_energies(integrator, &energies[l][0], &energies[l][1]),
                         FK_OK);
        fk_integrator_destroy(integrator);
        fk_eval_destroy(eval);
    }
    assert_same_bits(energies[0], energies[1], 2, "energy");
    free(f);
}

/* ---------------------------------------------------------------------------------------------- */
/* Langevin */

/* Philox-4x32-10's known answers (Salmon et al., Random123's kat_vectors). */
static void test_philox_known_answers(void **state)
{
    (void)state;
    const uint32_t cases[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
         0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
         0x94fdcceb, 0x5001e420, 0x24126ea1}};
    for (int c = 0; c < 3; ++c) {
        uint32_t out[4];
        fk__philox4x32_10(cases[c], cases[c] + 4, out);
        for (int k = 0; k < 4; ++k)
            assert_int_equal(out[k], cases[c][6 + k]);
    }
}

/* The device's deviates are the host's bits, and standard normal: mean and variance within five
 * standard errors over 3 N x 40 draws, and the fourth moment (3 for a normal) too. */
static void test_noise(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    fluid *f = malloc(sizeof *f);
    double *z = malloc(3 * N * sizeof *z);
    assert_true(f && z);
    make_fluid(f, 1.0, 1, &rng);
    fk_eval *eval = make_eval(f, "float", FK_ALGORITHM_ALL_PAIRS, 0, 0, 0);
    fk_integrator *integrator = make_integrator(eval, f, FK_INTEGRATOR_LANGEVIN, 0);
    double sum = 0, sum2 = 0, sum4 = 0;
    const int steps = 40;
    for (int s = 0; s < steps; ++s) {
        const uint64_t step = (uint64_t)s * 1000003u + ((uint64_t)s << 33);
        assert_int_equal(fk__integrator_noise(integrator, step, z), FK_OK);
        for (size_t i = 0; i < N; ++i) {
            double expected[3];
            fk__integrator_noise_host(0x123456789abcdefull, step, (uint32_t)i, expected);
            assert_same_bits(z + 3 * i, expected, 3, "deviate");
            for (int k = 0; k < 3; ++k) {
                const double d = z[3 * i + k];
                sum += d;
                sum2 += d * d;
                sum4 += d * d * d * d;
            }
        }
    }
    const double count = 3.0 * N * steps;
    FK_ASSERT_NEAR(sum / count, 0.0, 5.0 / sqrt(count));
    FK_ASSERT_NEAR(sum2 / count, 1.0, 5.0 * sqrt(2.0 / count));
    FK_ASSERT_NEAR(sum4 / count, 3.0, 5.0 * sqrt(96.0 / count));
    fk_integrator_destroy(integrator);
    fk_eval_destroy(eval);
    free(f);
    free(z);
}

/* With reproducible fixed64 the Langevin trajectory is the same bits for two loops and two
 * work-group sizes. */
static void test_langevin_bits_across_loops(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    fluid *f = malloc(sizeof *f);
    double *x[3], *v[3];
    assert_non_null(f);
    make_fluid(f, 1.0, 0, &rng);
    const int algorithms[3] = {FK_ALGORITHM_ALL_PAIRS, FK_ALGORITHM_ALL_PAIRS,
                               FK_ALGORITHM_NEIGHBORS};
    const int groups[3] = {16, 64, 0};
    for (int r = 0; r < 3; ++r) {
        x[r] = malloc(3 * N * sizeof *x[r]);
        v[r] = malloc(3 * N * sizeof *v[r]);
        assert_true(x[r] && v[r]);
        fk_eval *eval = make_eval(f, "fixed64", algorithms[r], 1, groups[r], 0);
        fk_integrator *integrator = make_integrator(eval, f, FK_INTEGRATOR_LANGEVIN, 1);
        step_ok(integrator, 60);
        assert_int_equal(fk_integrator_get_state(integrator, x[r], v[r], NULL), FK_OK);
        fk_integrator_destroy(integrator);
        fk_eval_destroy(eval);
    }
    for (int r = 1; r < 3; ++r) {
        assert_same_bits(x[r], x[0], 3 * N, "position");
        assert_same_bits(v[r], v[0], 3 * N, "velocity");
    }
    for (int r = 0; r < 3; ++r) {
        free(x[r]);
        free(v[r]);
    }
    free(f);
}

/* The kinetic temperature of the LJ fluid under Langevin at T = 1: its mean over the run within
 * five standard errors (from the run's own block averages) of 1, and the standard error itself
 * small enough for that to mean something. */
static void test_langevin_temperature(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    fluid *f = malloc(sizeof *f);
    assert_non_null(f);
    make_fluid(f, 0.5, 0, &rng); /* started cold: the thermostat must bring it to T */
    fk_eval *eval = make_eval(f, "float", FK_ALGORITHM_NEIGHBORS, 0, 0, 0);
    fk_integrator *integrator = make_integrator(eval, f, FK_INTEGRATOR_LANGEVIN, 1);
    step_ok(integrator, 600); /* 3 time units: 6 / friction */
    enum { BLOCKS = 20, SAMPLES = 15, EVERY = 10 };
    double block_mean[BLOCKS], total = 0;
    for (int b = 0; b < BLOCKS; ++b) {
        double sum = 0;
        for (int s = 0; s < SAMPLES; ++s) {
            step_ok(integrator, EVERY);
            double k = 0;
            assert_int_equal(fk_integrator_energies(integrator, &k, NULL), FK_OK);
            sum += 2.0 * k / (3.0 * N); /* no constraint: 3 N degrees of freedom */
        }
        block_mean[b] = sum / SAMPLES;
        total += block_mean[b];
    }
    const double mean = total / BLOCKS;
    double var = 0;
    for (int b = 0; b < BLOCKS; ++b)
        var += (block_mean[b] - mean) * (block_mean[b] - mean);
    const double error = sqrt(var / (BLOCKS - 1) / BLOCKS);
    /* one sample's spread is sqrt(2 / (3 N)) = 0.056; blocks of 0.75 time units (1.5 / friction)
     * are nearly independent, so the error is about 0.056 / sqrt(300 / 5) */
    fprintf(stderr, "kinetic temperature %.5f +- %.5f\n", mean, error);
    if (!(error < 0.02))
        fail_msg("the temperature's standard error %g is too large for the test", error);
    if (!(fabs(mean - 1.0) <= 5.0 * error + 0.005))
        fail_msg("mean kinetic temperature %g +- %g, expected 1", mean, error);
    fk_integrator_destroy(integrator);
    fk_eval_destroy(eval);
    free(f);
}

/* Langevin's constants by fixed operations agree with the libm's to rounding. */
static void test_langevin_constants(void **state)
{
    (void)state;
    const double products[] = {1e-9, 1e-4, 0.01, 0.0625, 0.5, 1.0, 3.0, 50.0, 700.0};
    for (size_t p = 0; p < sizeof products / sizeof products[0]; ++p) {
        double c1, c2;
        fk__integrator_langevin_constants(products[p], 1.0, &c1, &c2);
        const double e1 = exp(-products[p]), e2 = sqrt(-expm1(-2.0 * products[p]));
        if (!(fabs(c1 - e1) <= 4e-16 * e1 && fabs(c2 - e2) <= 4e-16 * e2))
            fail_msg("gamma dt %g: c1 %.17g (libm %.17g), c2 %.17g (libm %.17g)", products[p], c1,
                     e1, c2, e2);
    }
}

/* Golden trajectories (test_reproducible's way): fixed inputs, reproducible fixed64, 200 steps of
 * Langevin and of Verlet, each the same checksum with all-pairs and neighbour lists, and on every
 * device with fp64 that can run the mode (measured on POCL; Rusticl's llvmpipe has no fp64, so
 * the GPU is the second device to hold to it). The state passes only through correctly rounded
 * double operations, Philox and fixed-point sums (Langevin's constants included, by
 * fk__integrator_langevin_constants), so a device that differs has a non-conforming double or a
 * bug. */
#define GOLDEN_LANGEVIN 0x1e8afaca048f7c8full
#define GOLDEN_VERLET 0xcb3916bcfbe579c1ull

static uint64_t fnv1a_doubles(const double *values, size_t count, uint64_t hash)
{
    for (size_t m = 0; m < count; ++m) {
        uint64_t bits;
        memcpy(&bits, &values[m], sizeof bits);
        for (int b = 0; b < 8; ++b) {
            hash ^= (bits >> (8 * b)) & 0xffu;
            hash *= 0x100000001b3ull;
        }
    }
    return hash;
}

static void test_golden_trajectories(void **state)
{
    (void)state;
    fluid *f = malloc(sizeof *f);
    int *type = malloc(N * sizeof *type);
    double *charge = malloc(N * sizeof *charge);
    assert_true(f && type && charge);
    const double spacing = 1.125; /* density 0.70; the coordinates are exact in float */
    f->box = SIDE * spacing;
    fk_test_fixed_lattice(SIDE, spacing, 20261128u, f->x, type, charge);
    uint64_t seed = 33;
    for (size_t i = 0; i < N; ++i) {
        f->mass[i] = 1.0 + 0.5 * (double)(i % 3);
        for (int k = 0; k < 3; ++k)
            f->v[3 * i + k] = 2.0 * (fk_splitmix64_float_uniform(&seed) - 0.5);
    }
    const int kinds[2] = {FK_INTEGRATOR_LANGEVIN, FK_INTEGRATOR_VERLET};
    const uint64_t golden[2] = {GOLDEN_LANGEVIN, GOLDEN_VERLET};
    const int algorithms[2] = {FK_ALGORITHM_ALL_PAIRS, FK_ALGORITHM_NEIGHBORS};
    double *x = malloc(3 * N * sizeof *x), *v = malloc(3 * N * sizeof *v);
    assert_true(x && v);
    int mismatches = 0;
    for (int k = 0; k < 2; ++k)
        for (int l = 0; l < 2; ++l) {
            fk_eval *eval = make_eval(f, "fixed64", algorithms[l], 1, 0, 0);
            if (fk_eval_reproducible(eval, NULL) != 1) {
                fprintf(stderr, "SKIPPED: this device cannot run the reproducible mode\n");
                fk_eval_destroy(eval);
                continue;
            }
            fk_integrator *integrator = make_integrator(eval, f, kinds[k], 1);
            step_ok(integrator, 200);
            assert_int_equal(fk_integrator_get_state(integrator, x, v, NULL), FK_OK);
            const uint64_t hash =
                fnv1a_doubles(v, 3 * N, fnv1a_doubles(x, 3 * N, 0xcbf29ce484222325ull));
            fprintf(stderr, "%s %s: 0x%016llx%s\n", k ? "verlet" : "langevin",
                    fk_algorithm_name(algorithms[l]), (unsigned long long)hash,
                    hash == golden[k] ? "" : " (differs from the golden value)");
            mismatches += hash != golden[k];
            fk_integrator_destroy(integrator);
            fk_eval_destroy(eval);
        }
    free(x);
    free(v);
    free(f);
    free(type);
    free(charge);
    if (mismatches)
        fail_msg("%d golden trajectory checksums differ", mismatches);
}

/* ---------------------------------------------------------------------------------------------- */
/* Misuse */

static void test_misuse(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    fluid *f = malloc(sizeof *f);
    assert_non_null(f);
    make_fluid(f, 1.0, 0, &rng);
    fk_integrator_config config = FK_CONFIG_INIT(fk_integrator_config);
    config.dt = DT;
    fk_integrator *integrator = (fk_integrator *)f; /* must be cleared on failure */

    /* NULL everywhere */
    assert_int_equal(fk_integrator_create(NULL, &config, &integrator), FK_ERR_INVALID_ARGUMENT);
    assert_null(integrator);
    fk_eval *eval = make_eval(f, "float", FK_ALGORITHM_CELLS, 0, 0, 0);
    assert_int_equal(fk_integrator_create(eval, NULL, &integrator), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_integrator_create(eval, &config, NULL), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_integrator_set_state(NULL, f->x, f->v, 0), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_integrator_step(NULL, 1), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_integrator_get_state(NULL, f->x, f->v, NULL), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_integrator_energies(NULL, NULL, NULL), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_integrator_counters(NULL, NULL, NULL, NULL), FK_ERR_INVALID_ARGUMENT);
    fk_integrator_destroy(NULL);

    /* bad configurations */
    struct {
        int kind;
        double dt, temperature, friction;
        const double *masses;
        size_t mass_count;
        size_t struct_size;
    } bad[] = {
        {7, DT, 0, 0, NULL, 0, sizeof config},
        {0, 0, 0, 0, NULL, 0, sizeof config},
        {0, -DT, 0, 0, NULL, 0, sizeof config},
        {0, NAN, 0, 0, NULL, 0, sizeof config},
        {0, INFINITY, 0, 0, NULL, 0, sizeof config},
        {0, DT, 1.0, 0, NULL, 0, sizeof config},      /* Verlet with a temperature */
        {1, DT, 0, 1.0, NULL, 0, sizeof config},      /* Langevin without */
        {1, DT, 1.0, 0, NULL, 0, sizeof config},      /* nor friction */
        {1, DT, -1.0, 1.0, NULL, 0, sizeof config},   /* negative */
        {0, DT, 0, 0, f->mass, N - 1, sizeof config}, /* the wrong count */
        {0, DT, 0, 0, NULL, 5, sizeof config},        /* a count without masses */
        {0, DT, 0, 0, NULL, 0, 3},                    /* an implausible struct_size */
        {2, DT, 0, 0, NULL, 0, sizeof config},        /* Hermite on lj: no jerk */
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; ++c) {
        fk_integrator_config b = FK_CONFIG_INIT(fk_integrator_config);
        b.struct_size = bad[c].struct_size;
        b.kind = bad[c].kind;
        b.dt = bad[c].dt;
        b.temperature = bad[c].temperature;
        b.friction = bad[c].friction;
        b.masses = bad[c].masses;
        b.mass_count = bad[c].mass_count;
        integrator = (fk_integrator *)f;
        if (fk_integrator_create(eval, &b, &integrator) != FK_ERR_INVALID_ARGUMENT)
            fail_msg("bad configuration %zu accepted", c);
        assert_null(integrator);
        assert_true(fk_context_last_error(fk_test_context)[0] != '\0');
    }
    double masses[N];
    for (size_t i = 0; i < N; ++i)
        masses[i] = i == 17 ? 0.0 : 1.0;
    config.masses = masses;
    config.mass_count = N;
    assert_int_equal(fk_integrator_create(eval, &config, &integrator), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "mass 17"));
    config.masses = NULL;
    config.mass_count = 0;

    /* wrong state */
    assert_int_equal(fk_integrator_create(eval, &config, &integrator), FK_OK);
    assert_int_equal(fk_integrator_step(integrator, 1), FK_ERR_STATE);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "set_state"));
    double k = 0, u = 0;
    assert_int_equal(fk_integrator_get_state(integrator, f->x, NULL, NULL), FK_ERR_STATE);
    assert_int_equal(fk_integrator_energies(integrator, &k, NULL), FK_ERR_STATE);
    assert_int_equal(fk_integrator_set_state(integrator, NULL, NULL, 0), FK_ERR_INVALID_ARGUMENT);
    double saved = f->x[40];
    f->x[40] = NAN;
    assert_int_equal(fk_integrator_set_state(integrator, f->x, NULL, 0), FK_ERR_INVALID_INPUT);
    f->x[40] = saved;
    assert_int_equal(fk_integrator_set_state(integrator, f->x, NULL, 7), FK_OK);
    assert_int_equal(fk_integrator_energies(integrator, NULL, NULL), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_integrator_energies(integrator, &k, &u), FK_ERR_STATE); /* no potential */
    assert_int_equal(fk_integrator_energies(integrator, &k, NULL), FK_OK);
    FK_ASSERT_NEAR(k, 0.0, 0.0); /* velocities NULL: at rest */
    assert_int_equal(fk_integrator_step(integrator, 3), FK_OK);
    uint64_t step = 0;
    assert_int_equal(fk_integrator_get_state(integrator, NULL, NULL, &step), FK_OK);
    assert_int_equal(step, 10);
    /* a compute in flight on the evaluation */
    assert_int_equal(fk_eval_compute_async(eval), FK_OK);
    assert_int_equal(fk_integrator_step(integrator, 1), FK_ERR_STATE);
    assert_int_equal(fk_eval_wait(eval, NULL), FK_OK);
    assert_int_equal(fk_integrator_step(integrator, 1), FK_OK);
    /* the evaluation's own calls between steps: the integrator rebuilds from its positions */
    assert_int_equal(fk_eval_update_positions(eval, f->x, NULL), FK_OK);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    assert_int_equal(fk_integrator_step(integrator, 2), FK_OK);
    /* the particles changed under it */
    fk_particles fewer = {.count = N - 1, .position = f->x};
    assert_int_equal(fk_eval_set_particles(eval, &fewer), FK_OK);
    assert_int_equal(fk_integrator_step(integrator, 1), FK_ERR_STATE);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "changed"));
    fk_integrator_destroy(integrator);
    fk_eval_destroy(eval);

    /* an evaluation without particles, and gravity without softening */
    fk_eval_config ec = FK_CONFIG_INIT(fk_eval_config);
    ec.kernel = "ga";
    assert_int_equal(fk_eval_create(fk_test_context, &ec, &eval), FK_OK);
    assert_int_equal(fk_integrator_create(eval, &config, &integrator), FK_ERR_STATE);
    double gm[N];
    for (size_t i = 0; i < N; ++i)
        gm[i] = 1.0 / N;
    fk_particles particles = {.count = N, .position = f->x, .mass = gm};
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    assert_int_equal(fk_integrator_create(eval, &config, &integrator), FK_ERR_UNSUPPORTED);
    fk_eval_destroy(eval);
    ec.eps = 0.1;
    assert_int_equal(fk_eval_create(fk_test_context, &ec, &eval), FK_OK);
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    config.masses = gm; /* gravity takes the evaluation's masses */
    config.mass_count = N;
    assert_int_equal(fk_integrator_create(eval, &config, &integrator), FK_ERR_INVALID_ARGUMENT);
    fk_eval_destroy(eval);
    free(f);
}

/* A force that is not finite (two particles on top of each other) stops the run with a status
 * naming the particle, and the state must be set again. */
static void test_collapse(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    fluid *f = malloc(sizeof *f);
    assert_non_null(f);
    make_fluid(f, 1.0, 1, &rng);
    fk_eval *eval = make_eval(f, "float", FK_ALGORITHM_ALL_PAIRS, 0, 0, 0);
    fk_integrator *integrator = make_integrator(eval, f, FK_INTEGRATOR_VERLET, 0);
    /* particle 1 on top of particle 0: the molecular kernels' coincidence check is
     * set_particles', not the integrator's, so the first forces are NaN */
    for (int k = 0; k < 3; ++k)
        f->x[3 + k] = f->x[k];
    fk_status status = fk_integrator_set_state(integrator, f->x, f->v, 0);
    if (status == FK_OK)
        status = fk_integrator_step(integrator, 5);
    if (status == FK_OK) {
        double *x = malloc(3 * N * sizeof *x);
        status = fk_integrator_get_state(integrator, x, NULL, NULL);
        free(x);
    }
    assert_true(status == FK_ERR_INVALID_INPUT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "not finite"));
    assert_int_equal(fk_integrator_step(integrator, 1), FK_ERR_STATE);
    fk_integrator_destroy(integrator);
    fk_eval_destroy(eval);
    free(f);
}

/* Devices without fp64: the integrator refuses them (tested here), and the other tests are not
 * run. */
static void test_no_fp64(void **state)
{
    (void)state;
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "lj";
    config.cutoff = 2.5;
    config.unroll_i = config.unroll_j = 1; /* small shapes: llvmpipe holds 32 work-items */
    config.work_group_size = 16;
    fk_eval *eval = NULL;
    if (fk_eval_create(fk_test_context, &config, &eval) != FK_OK)
        fail_msg("%s", fk_context_last_error(fk_test_context));
    double x[6] = {0, 0, 0, 1.1, 0, 0};
    fk_particles particles = {.count = 2, .position = x};
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    fk_integrator_config ic = FK_CONFIG_INIT(fk_integrator_config);
    ic.dt = DT;
    fk_integrator *integrator = NULL;
    assert_int_equal(fk_integrator_create(eval, &ic, &integrator), FK_ERR_UNSUPPORTED);
    assert_null(integrator);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "fp64"));
    fk_eval_destroy(eval);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_known_answers),
        cmocka_unit_test(test_langevin_constants),
        cmocka_unit_test(test_golden_trajectories),
        cmocka_unit_test(test_noise),
        cmocka_unit_test(test_misuse),
        cmocka_unit_test(test_collapse),
        cmocka_unit_test(test_verlet_bits_all_pairs),
        cmocka_unit_test(test_verlet_bits_neighbors),
        cmocka_unit_test(test_langevin_bits_cells),
        cmocka_unit_test(test_langevin_bits_neighbors),
        cmocka_unit_test_teardown(test_verlet_bits_exclusions, clear_next_options),
        cmocka_unit_test_teardown(test_verlet_bits_rescale, clear_next_options),
        cmocka_unit_test(test_eval_calls_between_steps),
        cmocka_unit_test(test_langevin_bits_across_loops),
        cmocka_unit_test(test_lj_reference_loops),
        cmocka_unit_test(test_ga_reference),
        cmocka_unit_test(test_hermite_bits),
        cmocka_unit_test(test_hermite_reference),
        cmocka_unit_test(test_verlet_energy),
        cmocka_unit_test(test_energy_bits_across_loops),
        cmocka_unit_test(test_langevin_temperature),
    };
    struct fk_context *probe = NULL;
    if (fk_test_open_context(&probe) != 0)
        return 1;
    const int fp64 = fk_context_device(probe)->fp64;
    fk_context_destroy(probe);
    if (!fp64) {
        const struct CMUnitTest refused[] = {cmocka_unit_test(test_no_fp64)};
        return cmocka_run_group_tests(refused, fk_test_context_setup, fk_test_context_teardown);
    }
    return cmocka_run_group_tests(tests, fk_test_context_setup, fk_test_context_teardown);
}
