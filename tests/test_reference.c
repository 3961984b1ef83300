/* The double-precision host reference itself, against physics known in closed form. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "forcekit/forcekit.h"
#include "generate.h"
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

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_bodies),
        cmocka_unit_test(test_plummer_invariants),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
