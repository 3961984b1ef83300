/* The double-precision host reference itself, against physics known in closed form. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "forcekit/forcekit.h"
#include "support/generate.h"
#include "test_support.h"

static void test_two_bodies(void **state)
{
    (void)state;
    double position[6] = {1, 2, 3, 1, 2, 6}, mass[2] = {2, 3}, force[6], pot[2];
    fk_particles p = {.count = 2, .position = position, .mass = mass};
    fk_physics physics = {.eps = 0};
    assert_int_equal(fk_reference_forces("ga", &p, &physics, force, pot), FK_OK);
    FK_ASSERT_NEAR(force[2], 3.0 / 9.0, 1e-15);
    FK_ASSERT_NEAR(force[5], -2.0 / 9.0, 1e-15);
    FK_ASSERT_NEAR(force[0], 0.0, 0.0);
    FK_ASSERT_NEAR(pot[0], -1.0, 1e-15);
    FK_ASSERT_NEAR(pot[1], -2.0 / 3.0, 1e-15);
    /* Softening: s^2 = 9 + 16 = 25. */
    physics.eps = 4;
    assert_int_equal(fk_reference_forces("ga", &p, &physics, force, pot), FK_OK);
    FK_ASSERT_NEAR(force[2], 3.0 * 3.0 / 125.0, 1e-15);
    FK_ASSERT_NEAR(pot[1], -2.0 / 5.0, 1e-15);
}

/* Momentum conservation (sum of m_i a_i = 0) and the virial of a Plummer sphere (W = -1/2). */
static void test_plummer_invariants(void **state)
{
    (void)state;
    fkt_particle_set set = {0};
    assert_int_equal(fkt_generate_plummer(2000, 7, FKT_LAYOUT_XYZM, &set), FK_OK);
    fk_particles p = fkt_particle_set_view(&set);
    double *force = malloc(3 * set.count * sizeof(double));
    double *pot = malloc(set.count * sizeof(double));
    fk_physics physics = {.eps = 0};
    assert_int_equal(fk_reference_forces("ga", &p, &physics, force, pot), FK_OK);
    double total[3] = {0, 0, 0}, magnitude = 0, w = 0;
    for (size_t i = 0; i < set.count; ++i) {
        for (int k = 0; k < 3; ++k) {
            total[k] += set.mass[i] * force[3 * i + (size_t)k];
            magnitude += fabs(set.mass[i] * force[3 * i + (size_t)k]);
        }
        w += 0.5 * set.mass[i] * pot[i];
    }
    for (int k = 0; k < 3; ++k)
        assert_true(fabs(total[k]) < 1e-12 * magnitude);
    assert_true(fabs(w + 0.5) < 0.05);
    free(force);
    free(pot);
    fkt_particle_set_free(&set);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    double position[6] = {0, 0, 0, 0, 0, 0}, force[6];
    fk_particles p = {.count = 2, .position = position};
    assert_int_equal(fk_reference_forces("ga", &p, NULL, force, NULL), FK_ERR_INVALID_INPUT);
    assert_int_equal(fk_reference_forces("nosuch", &p, NULL, force, NULL), FK_ERR_INVALID_ARGUMENT);
    p.count = 0;
    assert_int_equal(fk_reference_forces("ga", &p, NULL, force, NULL), FK_ERR_INVALID_INPUT);
    assert_int_equal(fk_reference_forces("ga", NULL, NULL, force, NULL), FK_ERR_INVALID_ARGUMENT);
}

/* Non-finite input is refused, not summed into NaN forces (issue #32): positions, masses or
 * charges and velocities, for gravity and a molecular law. */
static void test_non_finite_input(void **state)
{
    (void)state;
    const double bad[] = {NAN, INFINITY, -INFINITY};
    for (size_t b = 0; b < sizeof bad / sizeof *bad; ++b) {
        double position[9] = {0, 0, 0, 1.5, 0, 0, 0, 1.5, 0}, mass[3] = {1, 2, 3};
        double velocity[9] = {0}, force[18], potential[3];
        fk_particles p = {.count = 3, .position = position, .mass = mass, .velocity = velocity};
        fk_physics physics = {.eps = 0.1};
        assert_int_equal(fk_reference_forces("gaj", &p, &physics, force, potential), FK_OK);
        position[4] = bad[b];
        assert_int_equal(fk_reference_forces("ga", &p, &physics, force, potential),
                         FK_ERR_INVALID_INPUT);
        assert_int_equal(fk_reference_forces("lj", &p, NULL, force, potential),
                         FK_ERR_INVALID_INPUT);
        position[4] = 0;
        mass[2] = bad[b];
        assert_int_equal(fk_reference_forces("ga", &p, &physics, force, NULL),
                         FK_ERR_INVALID_INPUT);
        assert_int_equal(fk_reference_forces("ljc_constant", &p, NULL, force, NULL),
                         FK_ERR_INVALID_INPUT);
        mass[2] = 3;
        velocity[8] = bad[b];
        assert_int_equal(fk_reference_forces("gaj", &p, &physics, force, NULL),
                         FK_ERR_INVALID_INPUT);
    }
}

/* fk_reference_forces_rows: any slicing into row ranges gives the whole call's values, for
 * gravity, jerk and a molecular law with exclusions; ranges outside the particles are refused. */
static void test_rows(void **state)
{
    (void)state;
    enum { N = 37 };
    fkt_particle_set set = {0};
    assert_int_equal(fkt_generate_plummer(N, 11, FKT_LAYOUT_XYZM, &set), FK_OK);
    fk_particles p = fkt_particle_set_view(&set);
    double velocity[3 * N];
    for (size_t k = 0; k < 3 * N; ++k)
        velocity[k] = set.position[k] * 0.25 - 0.1; /* anything finite */
    p.velocity = velocity;
    const size_t exclusions[] = {0, 1, 5, 9, 36, 2};
    const char *kernels[] = {"ga", "gaj", "yukawa"};
    static double whole[6 * N], whole_potential[N], sliced[6 * N], sliced_potential[N];
    for (size_t k = 0; k < 3; ++k) {
        fk_physics physics = {.eps = 0.05};
        if (k == 2) {
            physics = (fk_physics){.cutoff = 0};
            physics.exclusions = exclusions;
            physics.exclusion_count = 3;
        }
        const size_t c = k == 1 ? 6 : 3;
        assert_int_equal(fk_reference_forces(kernels[k], &p, &physics, whole, whole_potential),
                         FK_OK);
        const size_t cuts[] = {0, 1, 2, 17, 36, N};
        for (size_t s = 0; s + 1 < sizeof cuts / sizeof *cuts; ++s)
            assert_int_equal(fk_reference_forces_rows(kernels[k], &p, &physics, cuts[s],
                                                      cuts[s + 1], sliced + c * cuts[s],
                                                      sliced_potential + cuts[s]),
                             FK_OK);
        /* The same sums in the same order: the same bits. */
        assert_memory_equal(sliced, whole, c * N * sizeof(double));
        assert_memory_equal(sliced_potential, whole_potential, N * sizeof(double));
        assert_int_equal(fk_reference_forces_rows(kernels[k], &p, &physics, 3, 3, sliced, NULL),
                         FK_ERR_INVALID_ARGUMENT);
        assert_int_equal(fk_reference_forces_rows(kernels[k], &p, &physics, 4, 2, sliced, NULL),
                         FK_ERR_INVALID_ARGUMENT);
        assert_int_equal(fk_reference_forces_rows(kernels[k], &p, &physics, 0, N + 1, sliced, NULL),
                         FK_ERR_INVALID_ARGUMENT);
    }
    fkt_particle_set_free(&set);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_bodies),    cmocka_unit_test(test_plummer_invariants),
        cmocka_unit_test(test_bad_arguments), cmocka_unit_test(test_non_finite_input),
        cmocka_unit_test(test_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
