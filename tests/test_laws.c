/*
 * Every force law of the registry, without naming one: for each law fk_kernel_at() lists, on fresh
 * random inputs in the law's own columns (masses, velocities, charges, two particle types, each of
 * the law's named parameters away from its default), every pair loop that takes the law (all-pairs,
 * symmetric, also in blocks small enough for full off-diagonal block pairs, and cells and
 * neighbors where the law has a cutoff), with float and fixed64, against
 * the library's double-precision reference (fk_reference_forces). A law added to the registry is
 * tested here without a change to this file.
 *
 * The reference itself comes from the law's descriptor, so it is checked too, against formulas
 * written here independently: each law has a two-body case below (the force and potential of two
 * particles at distance r, from the textbook formula). A registered law without one fails the
 * test: adding a law means adding its case.
 *
 * Error measure: max over particles and components of |F - F_ref| / max |F_ref|, the scale of the
 * forces on a jittered lattice (no close contacts), 1e-4 for float sums of a few hundred terms.
 *
 * ref, whose pair arithmetic is double, with double-single positions on typed systems (issue #36):
 * every molecular law with three types, random pair parameters, Coulomb constant, cutoff and
 * named parameters (none of them a float), all-pairs, within 1e-12 of the reference
 * on the inputs as double-single holds them. With the pair table and constants in float it erred
 * by about 1e-8.
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

#include "forcekit/forcekit.h"
#include "test_support.h"

static uint64_t seed;

static int setup(void **state)
{
    seed = fk_test_seed();
    return fk_test_context_setup(state);
}

static int teardown(void **state)
{
    return fk_test_context_teardown(state);
}

/* ---------------------------------------------------------------------------------------------- */
/* Two bodies, by hand */

/* The pair force f(r) = -dU/dr and energy U(r), unshifted, for charges q1 q2 = qq and one type
 * with the default pair table (all parameters 1), at the law's named parameters p[]; k = 1. */
typedef void pair_formula(const double *p, double qq, double r, double *f, double *u);

static void lennard_jones(double r, double *f, double *u) /* epsilon = sigma = 1 */
{
    const double r6 = pow(r, -6);
    *u = 4.0 * (r6 * r6 - r6);
    *f = 24.0 * (2.0 * r6 * r6 - r6) / r;
}

static void formula_gravity(const double *p, double qq, double r, double *f, double *u)
{
    (void)p;
    *u = -qq / r; /* m1 m2 for a unit mass on the other: the potential of body 1 is -m2 / r */
    *f = -qq / (r * r);
}

static void formula_lj(const double *p, double qq, double r, double *f, double *u)
{
    (void)p;
    (void)qq;
    lennard_jones(r, f, u);
}

static void formula_ljc_constant(const double *p, double qq, double r, double *f, double *u)
{
    lennard_jones(r, f, u);
    *u += qq / (p[0] * r);
    *f += qq / (p[0] * r * r);
}

static void formula_ljc_linear(const double *p, double qq, double r, double *f, double *u)
{
    lennard_jones(r, f, u);
    *u += qq / (p[0] * r * r);
    *f += 2.0 * qq / (p[0] * r * r * r);
}

static void formula_ljc_sigmoidal(const double *p, double qq, double r, double *f, double *u)
{
    lennard_jones(r, f, u);
    /* U = qq / (zeta r), zeta = exp(P); -dU/dr = U (1/r + P') */
    const double poly = p[0] * r * r * r + p[1] * r * r + p[2] * r + p[3];
    const double slope = 3.0 * p[0] * r * r + 2.0 * p[1] * r + p[2];
    const double coulomb = qq / (exp(poly) * r);
    *u += coulomb;
    *f += coulomb * (1.0 / r + slope);
}

static void formula_buck(const double *p, double qq, double r, double *f, double *u)
{
    (void)p; /* A = rho = C = 1 */
    *u = exp(-r) - pow(r, -6) + qq / r;
    *f = exp(-r) - 6.0 * pow(r, -7) + qq / (r * r);
}

static void formula_yukawa(const double *p, double qq, double r, double *f, double *u)
{
    lennard_jones(r, f, u);
    /* U = qq exp(-kappa r) / r; -dU/dr = qq exp(-kappa r) (1 + kappa r) / r^2 */
    const double kappa = p[0];
    *u += qq * exp(-kappa * r) / r;
    *f += qq * exp(-kappa * r) * (1.0 + kappa * r) / (r * r);
}

static const struct {
    const char *law;
    pair_formula *formula;
} formulas[] = {
    {"ga", formula_gravity},
    {"gaj", formula_gravity},
    {"lj", formula_lj},
    {"ljc_constant", formula_ljc_constant},
    {"ljc_linear", formula_ljc_linear},
    {"ljc_sigmoidal", formula_ljc_sigmoidal},
    {"buck", formula_buck},
    {"yukawa", formula_yukawa},
};

static pair_formula *formula_of(const char *law)
{
    for (size_t i = 0; i < sizeof formulas / sizeof formulas[0]; ++i)
        if (strcmp(formulas[i].law, law) == 0)
            return formulas[i].formula;
    return NULL;
}

/* The law's named parameters, each away from its default: fk_eval_config.parameters. */
static void law_parameters(const fk_kernel_info *law, double *parameters)
{
    for (unsigned k = 0; k < FK_LAW_PARAMETERS; ++k)
        parameters[k] = 0;
    for (unsigned p = 0; p < law->parameter_count; ++p) {
        const fk_kernel_parameter *parameter = &law->parameters[p];
        for (unsigned k = 0; k < parameter->count; ++k) {
            /* small for a polynomial in an exponent (ljc_sigmoidal), else 1.5 times the default */
            const double value = parameter->default_value != 0 ? 1.5 * parameter->default_value
                                                               : 0.01 * (double)(k + 1);
            parameters[parameter->first + k] = value;
        }
    }
}

static int is_molecular(const fk_kernel_info *law)
{
    return law->pair_parameters > 0;
}

/* Two particles along x at distance r: the reference's force on body 0 and its potential against
 * the formula (molecular laws force-shifted at a cutoff; their potential is 1/2 U per particle). */
static void two_bodies(void **state)
{
    (void)state;
    for (size_t index = 0; fk_kernel_at(index); ++index) {
        const fk_kernel_info *law = fk_kernel_at(index);
        pair_formula *formula = formula_of(law->name);
        if (!formula)
            fail_msg("force law %s has no two-body case in tests/test_laws.c", law->name);
        const double r = 1.3, q[2] = {0.8, -1.1};
        const double position[6] = {0, 0, 0, r, 0, 0}, velocity[6] = {0};
        const int type[2] = {0, 0};
        fk_particles particles = {.count = 2,
                                  .position = position,
                                  .mass = q,
                                  .velocity = velocity,
                                  .type = is_molecular(law) ? type : NULL};
        /* The molecular laws at a cutoff, force-shifted (van Meel eq. 3), which lj always is. */
        const double rc = 3.0;
        fk_physics physics = {.cutoff = is_molecular(law) ? rc : 0.0};
        law_parameters(law, physics.parameters);
        double forces[12], potentials[2];
        assert_int_equal(fk_reference_forces(law->name, &particles, &physics, forces, potentials),
                         FK_OK);
        double f, u;
        const int charged = strstr(law->input_format, " q ") != NULL;
        const double qq = is_molecular(law) ? (charged ? q[0] * q[1] : 0.0) : q[1];
        formula(physics.parameters, qq, r, &f, &u);
        if (is_molecular(law)) {
            double f_rc, u_rc;
            formula(physics.parameters, qq, rc, &f_rc, &u_rc);
            f -= f_rc;
            u += (r - rc) * f_rc - u_rc;
        }
        /* d_01 = r_0 - r_1 = (-r, 0, 0): a repulsive f pushes body 0 towards -x. Gravity's
         * acceleration points from 0 to 1. */
        const double expected_force = -f;
        const double expected_potential = is_molecular(law) ? 0.5 * u : u;
        const double force_error = fabs(forces[0] - expected_force) / fabs(expected_force);
        const double potential_error =
            fabs(potentials[0] - expected_potential) / fabs(expected_potential);
        if (!(force_error < 1e-12) || !(potential_error < 1e-12) || forces[1] != 0)
            fail_msg("%s: two bodies at r = %g: force %.17g, potential %.17g; by hand %.17g, %.17g",
                     law->name, r, forces[0], potentials[0], expected_force, expected_potential);
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* The device against the reference */

enum { SIDE = 6, N = SIDE * SIDE * SIDE };

typedef struct law_input {
    double position[3 * N], mass[N], velocity[3 * N];
    int type[N];
    double table[2 * 2 * 8];
    unsigned char present[4];
} law_input;

static void draw_input(const fk_kernel_info *law, fk_test_rng *rng, law_input *in)
{
    fk_test_jittered_lattice(in->position, SIDE, 1.15, 0.3, rng);
    for (size_t i = 0; i < N; ++i) {
        in->mass[i] = is_molecular(law) ? (fk_test_rng_uniform(rng) < 0.5 ? -1.0 : 1.0) *
                                              (0.2 + 0.6 * fk_test_rng_uniform(rng))
                                        : 0.5 + fk_test_rng_uniform(rng);
        in->type[i] = fk_test_rng_uniform(rng) < 0.5 ? 0 : 1;
        for (int k = 0; k < 3; ++k)
            in->velocity[3 * i + (size_t)k] = fk_test_rng_uniform(rng) - 0.5;
    }
    /* Two types; every pair parameter in [0.8, 1.2] (valid for every law: epsilon, sigma, A, rho,
     * C > 0), symmetric. */
    const unsigned parameters = law->pair_parameters;
    for (int a = 0; a < 2; ++a)
        for (int b = a; b < 2; ++b)
            for (unsigned p = 0; p < parameters; ++p) {
                const double value = 0.8 + 0.4 * fk_test_rng_uniform(rng);
                in->table[(size_t)(a * 2 + b) * parameters + p] = value;
                in->table[(size_t)(b * 2 + a) * parameters + p] = value;
            }
}

/* The forces and potentials an evaluation computed (its particles set and computed; it is
 * destroyed here) against the double host reference on the same particles and physics: the
 * largest |F - F_ref| / max |F_ref| and the same for the potentials, and max |F_ref|. */
typedef struct reference_errors {
    double force, potential, scale;
} reference_errors;

static reference_errors errors_against_reference(fk_eval *eval, const fk_kernel_info *law,
                                                 const fk_particles *particles,
                                                 const fk_physics *physics)
{
    const size_t components = law->force_components;
    double *forces = malloc(N * components * sizeof *forces);
    double *reference = malloc(N * components * sizeof *reference);
    double potentials[N], reference_potentials[N];
    assert_non_null(forces);
    assert_non_null(reference);
    assert_int_equal(fk_eval_read_forces(eval, forces), FK_OK);
    assert_int_equal(fk_eval_read_potentials(eval, potentials), FK_OK);
    fk_eval_destroy(eval);
    assert_int_equal(
        fk_reference_forces(law->name, particles, physics, reference, reference_potentials), FK_OK);
    reference_errors e = {0, 0, 0};
    double potential_scale = 0;
    for (size_t v = 0; v < N * components; ++v)
        e.scale = fmax(e.scale, fabs(reference[v]));
    for (size_t v = 0; v < N * components; ++v)
        e.force = fmax(e.force, fabs(forces[v] - reference[v]) / e.scale);
    for (size_t i = 0; i < N; ++i)
        potential_scale = fmax(potential_scale, fabs(reference_potentials[i]));
    for (size_t i = 0; i < N; ++i)
        e.potential =
            fmax(e.potential, fabs(potentials[i] - reference_potentials[i]) / potential_scale);
    free(forces);
    free(reference);
    return e;
}

/* One law with one loop and accumulator: the device's forces and potentials against the
 * reference, max |F - F_ref| / max |F_ref|. unroll_i and work_group_size: the variant's shape (0:
 * the library's choice). */
static void check_law_shaped(const fk_kernel_info *law, fk_algorithm algorithm, const char *accum,
                             const law_input *in, int unroll_i, int work_group_size)
{
    const int molecular = is_molecular(law);
    /* One physics description for the evaluation and the reference (fk_eval_config.physics). */
    const fk_pair_table table = {.types = 2, .values = in->table};
    fk_physics physics = {.eps = molecular ? 0.0 : 0.05,
                          .cutoff = molecular ? 2.6 : 0.0,
                          .pair_table = molecular ? &table : NULL};
    law_parameters(law, physics.parameters);
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = law->name;
    config.accum = accum;
    config.potential = 1;
    config.algorithm = (int)algorithm;
    config.physics = &physics;
    config.unroll_i = unroll_i;
    config.unroll_j = unroll_i ? 1 : 0;
    config.work_group_size = work_group_size;
    if ((algorithm == FK_ALGORITHM_CELLS || algorithm == FK_ALGORITHM_NEIGHBORS) && !molecular)
        return; /* cells and lists need a cutoff, which gravity has not (an error, tested in
                 * test_cells and test_neighbors) */
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(fk_test_context, &config, &eval);
    if (status == FK_ERR_UNSUPPORTED) /* the loop does not take this law: it says so */
        return;
    if (status != FK_OK)
        fail_msg("%s %s %s: create: %s: %s", law->name, fk_algorithm_name(algorithm), accum,
                 fk_status_string(status), fk_context_last_error(fk_test_context));
    const fk_particles particles = {.count = N,
                                    .position = in->position,
                                    .mass = in->mass,
                                    .velocity = in->velocity,
                                    .type = molecular ? in->type : NULL};
    status = fk_eval_set_particles(eval, &particles);
    if (status == FK_OK)
        status = fk_eval_compute(eval, NULL);
    if (status != FK_OK)
        fail_msg("%s %s %s: %s: %s", law->name, fk_algorithm_name(algorithm), accum,
                 fk_status_string(status), fk_context_last_error(fk_test_context));
    const reference_errors e = errors_against_reference(eval, law, &particles, &physics);
    if (!(e.force <= 1e-4) || !(e.potential <= 1e-4) || !(e.scale > 0))
        fail_msg("%s %s %s: force error %.3g, potential error %.3g (of the largest; limit 1e-4)",
                 law->name, fk_algorithm_name(algorithm), accum, e.force, e.potential);
}

static void check_law(const fk_kernel_info *law, fk_algorithm algorithm, const char *accum,
                      const law_input *in)
{
    check_law_shaped(law, algorithm, accum, in, 0, 0);
}

static void every_law_every_loop(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, seed);
    static const char *const accumulators[] = {"float", "fixed64"};
    static const fk_algorithm algorithms[] = {FK_ALGORITHM_ALL_PAIRS, FK_ALGORITHM_SYMMETRIC,
                                              FK_ALGORITHM_CELLS, FK_ALGORITHM_NEIGHBORS};
    law_input *in = malloc(sizeof *in);
    assert_non_null(in);
    for (size_t index = 0; fk_kernel_at(index); ++index) {
        const fk_kernel_info *law = fk_kernel_at(index);
        draw_input(law, &rng, in);
        for (size_t a = 0; a < sizeof algorithms / sizeof algorithms[0]; ++a)
            for (size_t c = 0; c < 2; ++c)
                check_law(law, algorithms[a], accumulators[c], in);
    }
    free(in);
}

/* The symmetric loop in blocks of 16 (1 x 16): N = 216 has 13 full blocks and a partial one, so
 * its full off-diagonal block pairs (the path the default blocks of 256 never take at this N: one
 * block, evaluated one-sided) run for every law, float and fixed64. */
static void every_law_symmetric_blocks(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, seed ^ 0x5bd1e995u);
    law_input *in = malloc(sizeof *in);
    assert_non_null(in);
    static const char *const accumulators[] = {"float", "fixed64"};
    for (size_t index = 0; fk_kernel_at(index); ++index) {
        const fk_kernel_info *law = fk_kernel_at(index);
        draw_input(law, &rng, in);
        for (size_t c = 0; c < 2; ++c)
            check_law_shaped(law, FK_ALGORITHM_SYMMETRIC, accumulators[c], in, 1, 16);
    }
    free(in);
}

/* ---------------------------------------------------------------------------------------------- */
/* ref on typed systems: double all the way */

enum { TYPES = 3 };

/* x as a double-single pair holds it: the float nearest x plus the float nearest the rest. */
static double double_single(double x)
{
    const float hi = (float)x;
    return (double)hi + (double)(float)(x - (double)hi);
}

/* A value near `value` that no float holds (relative 1e-3 of random bits). */
static double not_a_float(double value, fk_test_rng *rng)
{
    return value * (1.0 + 1e-3 * (0.5 + fk_test_rng_uniform(rng)));
}

static void check_ref_typed(const fk_kernel_info *law, fk_algorithm algorithm, fk_test_rng *rng)
{
    double *position = malloc(3 * N * sizeof *position);
    double charge[N];
    int type[N];
    double table[TYPES * TYPES * 8];
    assert_non_null(position);
    fk_test_jittered_lattice(position, SIDE, 1.15, 0.3, rng);
    /* The device holds double-single values: the reference gets those, so that what is measured
     * is the pair arithmetic and the table, not the positions' 2^-48. */
    for (size_t v = 0; v < 3 * N; ++v)
        position[v] = double_single(position[v]);
    for (size_t i = 0; i < N; ++i) {
        charge[i] = double_single((fk_test_rng_uniform(rng) < 0.5 ? -1.0 : 1.0) *
                                  (0.2 + 0.6 * fk_test_rng_uniform(rng)));
        type[i] = (int)(fk_test_rng_uniform(rng) * TYPES) % TYPES;
    }
    const unsigned parameters = law->pair_parameters;
    for (int a = 0; a < TYPES; ++a)
        for (int b = a; b < TYPES; ++b)
            for (unsigned p = 0; p < parameters; ++p) {
                const double value = 0.8 + 0.4 * fk_test_rng_uniform(rng);
                table[(size_t)(a * TYPES + b) * parameters + p] = value;
                table[(size_t)(b * TYPES + a) * parameters + p] = value;
            }
    const fk_pair_table pairs = {.types = TYPES, .values = table};
    fk_physics physics = {
        .cutoff = not_a_float(2.6, rng), .coulomb = not_a_float(1.0, rng), .pair_table = &pairs};
    law_parameters(law, physics.parameters);
    for (unsigned k = 0; k < FK_LAW_PARAMETERS; ++k)
        if (physics.parameters[k] != 0)
            physics.parameters[k] = not_a_float(physics.parameters[k], rng);
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = law->name;
    config.accum = "ref";
    config.potential = 1;
    config.algorithm = (int)algorithm;
    config.physics = &physics;
    config.positions = FK_POSITIONS_DOUBLE_SINGLE;
    const fk_particles particles = {.count = N, .position = position, .mass = charge, .type = type};
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(fk_test_context, &config, &eval);
    if (status == FK_OK)
        status = fk_eval_set_particles(eval, &particles);
    if (status == FK_OK)
        status = fk_eval_compute(eval, NULL);
    if (status != FK_OK)
        fail_msg("%s %s ref: %s: %s", law->name, fk_algorithm_name(algorithm),
                 fk_status_string(status), fk_context_last_error(fk_test_context));
    const reference_errors e = errors_against_reference(eval, law, &particles, &physics);
    print_message("%s %s ref, %d types, double-single positions: force error %.3g, potential "
                  "error %.3g\n",
                  law->name, fk_algorithm_name(algorithm), TYPES, e.force, e.potential);
    free(position);
    if (!(e.force <= 1e-12) || !(e.potential <= 1e-12) || !(e.scale > 0))
        fail_msg("%s %s ref: force error %.3g, potential error %.3g (of the largest; limit 1e-12)",
                 law->name, fk_algorithm_name(algorithm), e.force, e.potential);
}

static void ref_typed_double(void **state)
{
    (void)state;
    if (!fk_test_device_has_fp64(fk_test_context))
        skip(); /* ref needs cl_khr_fp64 */
    fk_test_rng rng;
    fk_test_rng_init(&rng, seed ^ 0x36u);
    /* ref runs all-pairs only (the symmetric loop refuses it; cells and neighbour lists refuse
     * double-single positions). */
    for (size_t index = 0; fk_kernel_at(index); ++index) {
        const fk_kernel_info *law = fk_kernel_at(index);
        if (!is_molecular(law))
            continue; /* gravity with double-single positions: tests/test_positions.c */
        check_ref_typed(law, FK_ALGORITHM_ALL_PAIRS, &rng);
    }
}

/* The physics is given once: config.physics and a flat field together are refused. */
static void physics_given_once(void **state)
{
    (void)state;
    const fk_physics physics = {.cutoff = 2.0};
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "lj";
    config.physics = &physics;
    config.coulomb = 2.0;
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    assert_null(eval);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "physics given twice"));
    /* and the pair table and exclusions of the description are applied (here: refused for
     * gravity, as fk_eval_set_exclusions refuses them) */
    const size_t pair[2] = {0, 1};
    const fk_physics gravity = {.exclusions = pair, .exclusion_count = 1};
    config = (fk_eval_config)FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "ga";
    config.physics = &gravity;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    assert_null(eval);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_bodies),
        cmocka_unit_test(every_law_every_loop),
        cmocka_unit_test(every_law_symmetric_blocks),
        cmocka_unit_test(physics_given_once),
        cmocka_unit_test(ref_typed_double),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
