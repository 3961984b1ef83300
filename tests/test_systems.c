/* The systems of `forcekit generate` (src/support/systems.c): counts, types, exclusions, distances,
 * charge, stoichiometry, velocities, determinism in the seed, and the text files they are written
 * as. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/systems.h"
#include "test_support.h"

static double distance(const fkt_particle_set *set, size_t i, size_t j)
{
    double s = 0.0;
    for (int d = 0; d < 3; d++) {
        double x = set->position[3 * i + d] - set->position[3 * j + d];
        s += x * x;
    }
    return sqrt(s);
}

static int same_set(const fkt_particle_set *a, const fkt_particle_set *b)
{
    size_t n = a->count;
    return a->count == b->count && memcmp(a->position, b->position, 3 * n * sizeof(double)) == 0 &&
           (!a->mass || memcmp(a->mass, b->mass, n * sizeof(double)) == 0) &&
           (!a->velocity || memcmp(a->velocity, b->velocity, 3 * n * sizeof(double)) == 0) &&
           (!a->type || memcmp(a->type, b->type, n * sizeof(int)) == 0);
}

/* Kinetic temperature (3N - 3 degrees of freedom) and total momentum with masses (NULL: 1). */
static void kinetics(const fkt_particle_set *set, const double *mass, double *temperature,
                     double momentum[3])
{
    double twice_kinetic = 0.0, scale = 0.0;
    momentum[0] = momentum[1] = momentum[2] = 0.0;
    for (size_t i = 0; i < set->count; i++) {
        double m = mass ? mass[i] : 1.0;
        for (int d = 0; d < 3; d++) {
            double v = set->velocity[3 * i + d];
            twice_kinetic += m * v * v;
            momentum[d] += m * v;
            scale += m * fabs(v);
        }
    }
    *temperature = twice_kinetic / (3.0 * (double)set->count - 3.0);
    for (int d = 0; d < 3; d++)
        momentum[d] /= scale; /* relative to sum |m v| */
}

/* ---- lj-fluid, fcc, velocities -----------------------------------------------------------------
 */

static void test_lj_fluid(void **state)
{
    (void)state;
    const uint64_t seed = fk_test_seed();
    const size_t counts[] = {500, 108, 100, 2};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        const size_t n = counts[c];
        const double density = 0.8, temperature = 1.5;
        fkt_particle_set set;
        double box[3];
        assert_int_equal(
            fkt_generate_lj_fluid(n, density, temperature, seed, FKT_LAYOUT_XYZ_TYPE, &set, box),
            FK_OK);
        assert_int_equal(set.count, n);
        assert_non_null(set.velocity); /* even though the lj columns have no velocity */
        assert_null(set.mass);
        const double side = cbrt((double)n / density);
        FK_ASSERT_NEAR(box[0], side, 1e-12 * side);
        assert_true(box[1] == box[0] && box[2] == box[0]);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(set.type[i], 0);
            for (int d = 0; d < 3; d++)
                assert_true(set.position[3 * i + d] > 0 && set.position[3 * i + d] < side);
        }
        /* fcc nearest neighbours: cell / sqrt(2), the cell being side / k. */
        size_t k = 1;
        while (4 * k * k * k < n)
            k++;
        double nearest = INFINITY;
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++)
                nearest = fmin(nearest, distance(&set, i, j));
        FK_ASSERT_NEAR(nearest, side / (double)k / sqrt(2.0), 1e-9);
        double t, p[3];
        kinetics(&set, NULL, &t, p);
        FK_ASSERT_NEAR(t, temperature, 1e-12);
        for (int d = 0; d < 3; d++)
            FK_ASSERT_NEAR(p[d], 0.0, 1e-13);

        fkt_particle_set again, other;
        assert_int_equal(
            fkt_generate_lj_fluid(n, density, temperature, seed, FKT_LAYOUT_XYZ_TYPE, &again, box),
            FK_OK);
        assert_true(same_set(&set, &again));
        assert_int_equal(fkt_generate_lj_fluid(n, density, temperature, seed + 1,
                                               FKT_LAYOUT_XYZ_TYPE, &other, box),
                         FK_OK);
        assert_memory_equal(set.position, other.position, 3 * n * sizeof(double));
        assert_memory_not_equal(set.velocity, other.velocity, 3 * n * sizeof(double));
        fkt_particle_set_free(&set);
        fkt_particle_set_free(&again);
        fkt_particle_set_free(&other);
    }
    /* ljc columns: charges 0. */
    fkt_particle_set set;
    double box[3];
    assert_int_equal(fkt_generate_lj_fluid(32, 0.8, 1.0, 3, FKT_LAYOUT_XYZQ_TYPE, &set, box),
                     FK_OK);
    for (size_t i = 0; i < set.count; i++)
        assert_true(set.mass[i] == 0.0);
    fkt_particle_set_free(&set);
    /* Bad input. */
    assert_int_equal(fkt_generate_lj_fluid(0, 0.8, 1.0, 1, FKT_LAYOUT_XYZ_TYPE, &set, box),
                     FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fkt_generate_lj_fluid(10, 0.0, 1.0, 1, FKT_LAYOUT_XYZ_TYPE, &set, box),
                     FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fkt_generate_lj_fluid(10, 0.8, -1.0, 1, FKT_LAYOUT_XYZ_TYPE, &set, box),
                     FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fkt_generate_lj_fluid(10, NAN, 1.0, 1, FKT_LAYOUT_XYZ_TYPE, &set, box),
                     FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fkt_generate_lj_fluid(10, 0.8, 1.0, 1, FKT_LAYOUT_XYZM, &set, box),
                     FK_ERR_INVALID_ARGUMENT);
    assert_null(set.position);
}

/* Maxwell-Boltzmann: each component of sqrt(m) v is normal, so its kurtosis is 3 (the estimate
 * from 3 x 4,000 samples has a standard deviation of 0.045; the bound is 6 of them). */
static void test_velocity_distribution(void **state)
{
    (void)state;
    fkt_particle_set set;
    assert_int_equal(fkt_particle_set_alloc(&set, FKT_LAYOUT_XYZM, 4000), FK_OK);
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    for (size_t i = 0; i < set.count; i++)
        set.mass[i] = 0.5 + 3.0 * fk_test_rng_uniform(&rng);
    assert_int_equal(fkt_generate_velocities(&set, 2.0, fk_test_seed()), FK_OK);
    double t, p[3];
    kinetics(&set, set.mass, &t, p);
    FK_ASSERT_NEAR(t, 2.0, 1e-12);
    for (int d = 0; d < 3; d++)
        FK_ASSERT_NEAR(p[d], 0.0, 1e-13);
    double second = 0.0, fourth = 0.0;
    for (size_t i = 0; i < set.count; i++)
        for (int d = 0; d < 3; d++) {
            double w = sqrt(set.mass[i]) * set.velocity[3 * i + d];
            second += w * w;
            fourth += w * w * w * w;
        }
    const double samples = 3.0 * (double)set.count;
    const double kurtosis = (fourth / samples) / ((second / samples) * (second / samples));
    FK_ASSERT_NEAR(kurtosis, 3.0, 0.27);

    /* One particle: no degree of freedom is left, every velocity is 0; T = 0 likewise. */
    fkt_particle_set one;
    assert_int_equal(fkt_particle_set_alloc(&one, FKT_LAYOUT_XYZM, 1), FK_OK);
    one.mass[0] = 1.0;
    assert_int_equal(fkt_generate_velocities(&one, 1.0, 1), FK_OK);
    assert_true(one.velocity[0] == 0 && one.velocity[1] == 0 && one.velocity[2] == 0);
    assert_int_equal(fkt_generate_velocities(&set, 0.0, 1), FK_OK);
    for (size_t i = 0; i < 3 * set.count; i++)
        assert_true(set.velocity[i] == 0.0);
    /* A mass that is not positive, a negative temperature. */
    set.mass[17] = -1.0;
    assert_int_equal(fkt_generate_velocities(&set, 1.0, 1), FK_ERR_INVALID_ARGUMENT);
    set.mass[17] = 1.0;
    assert_int_equal(fkt_generate_velocities(&set, -1.0, 1), FK_ERR_INVALID_ARGUMENT);
    fkt_particle_set_free(&one);
    fkt_particle_set_free(&set);
}

/* ---- fluorite ----------------------------------------------------------------------------------
 */

static void test_fluorite(void **state)
{
    (void)state;
    const size_t counts[] = {96, 324, 120};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        const size_t n = counts[c];
        fkt_system system;
        assert_int_equal(fkt_generate_fluorite(n, &system), FK_OK);
        const fkt_particle_set *set = &system.particles;
        assert_int_equal(set->count, n);
        size_t uranium = 0;
        double charge = 0.0;
        for (size_t i = 0; i < n; i++) {
            assert_true(set->type[i] == 0 || set->type[i] == 1);
            uranium += set->type[i] == 0;
            assert_true(set->mass[i] == (set->type[i] == 0 ? 4.0 : -2.0));
            charge += set->mass[i];
        }
        assert_int_equal(3 * uranium, n); /* UO2: 1 : 2 */
        assert_true(charge == 0.0);       /* exact: small integers */
        /* Nearest neighbours: U-O at a sqrt(3) / 4. */
        FK_ASSERT_NEAR(fkt_system_min_distance(set), FKT_FLUORITE_LATTICE * sqrt(3.0) / 4.0, 1e-9);
        size_t k = 1;
        while (12 * k * k * k < n)
            k++;
        FK_ASSERT_NEAR(system.box[0], (double)k * FKT_FLUORITE_LATTICE, 1e-12);
        assert_int_equal(system.periodic, 12 * k * k * k == n);
        /* Morelon et al.: U-O and O-O Buckingham, U-U Coulomb only; symmetric. */
        assert_int_equal(system.params.types, 2);
        assert_int_equal(system.params.parameters, 3);
        const double *v = system.params.values;
        assert_true(v[0] == 0.0 && v[2] == 0.0);                           /* U-U */
        assert_true(v[3] == 566.498 && v[4] == 0.42056 && v[5] == 0.0);    /* U-O */
        assert_memory_equal(v + 3, v + 6, 3 * sizeof(double));             /* O-U */
        assert_true(v[9] == 11272.6 && v[10] == 0.1363 && v[11] == 134.0); /* O-O */
        FK_ASSERT_NEAR(system.coulomb, 14.399645, 0);
        fkt_system_free(&system);
    }
    fkt_system system;
    assert_int_equal(fkt_generate_fluorite(100, &system), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fkt_generate_fluorite(0, &system), FK_ERR_INVALID_ARGUMENT);
}

/* ---- the protein -------------------------------------------------------------------------------
 */

static double clash(int type)
{
    /* Hydrogens (types 1, 3, 8) 0.9 Angstrom, heavy atoms 1.35. */
    return (type == 1 || type == 3 || type == 8) ? 0.9 : 1.35;
}

static int compare_pairs(const void *a, const void *b)
{
    const size_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

static void check_protein(uint64_t seed)
{
    fkt_system system;
    assert_int_equal(fkt_generate_protein(seed, &system), FK_OK);
    const fkt_particle_set *set = &system.particles;
    const size_t n = set->count;
    assert_int_equal(n, 3339);
    assert_int_equal(system.params.types, 9);
    assert_string_equal(system.units, "kcal/mol, Angstrom, e");
    FK_ASSERT_NEAR(system.coulomb, 332.0637, 0);
    /* Solute types 0-6, then 208 waters O H H (types 7, 8, 8) at 1 Angstrom, 109.47 degrees. */
    double charge = 0.0;
    for (size_t i = 0; i < FKT_PROTEIN_SOLUTE_ATOMS; i++) {
        assert_true(set->type[i] >= 0 && set->type[i] <= 6);
        charge += set->mass[i];
    }
    for (size_t w = 0; w < FKT_PROTEIN_WATERS; w++) {
        const size_t o = FKT_PROTEIN_SOLUTE_ATOMS + 3 * w;
        assert_true(set->type[o] == 7 && set->type[o + 1] == 8 && set->type[o + 2] == 8);
        FK_ASSERT_NEAR(distance(set, o, o + 1), 1.0, 1e-12);
        FK_ASSERT_NEAR(distance(set, o, o + 2), 1.0, 1e-12);
        FK_ASSERT_NEAR(distance(set, o + 1, o + 2),
                       2.0 * sin(109.47 / 2 * 3.14159265358979323846 / 180), 1e-12);
        FK_ASSERT_NEAR(set->mass[o] + set->mass[o + 1] + set->mass[o + 2], 0.0, 1e-15);
        charge += set->mass[o] + set->mass[o + 1] + set->mass[o + 2];
    }
    FK_ASSERT_NEAR(charge, 0.0, 1e-9); /* 20 acidic and 20 basic residues */

    /* Exclusions: 37 per 15-atom residue (14 bonds, 23 angles), 3 per water, i < j, inside one
     * residue or water, no duplicates, bonded or angle distances (0.95 to 2.6 Angstrom). */
    assert_int_equal(system.exclusion_count, 181 * 37 + 208 * 3);
    size_t *sorted = malloc(2 * system.exclusion_count * sizeof *sorted);
    assert_non_null(sorted);
    memcpy(sorted, system.exclusions, 2 * system.exclusion_count * sizeof *sorted);
    qsort(sorted, system.exclusion_count, 2 * sizeof *sorted, compare_pairs);
    for (size_t e = 0; e < system.exclusion_count; e++) {
        const size_t i = sorted[2 * e], j = sorted[2 * e + 1];
        assert_true(i < j && j < n);
        if (j < FKT_PROTEIN_SOLUTE_ATOMS)
            assert_int_equal(i / 15, j / 15);
        else
            assert_int_equal((i - FKT_PROTEIN_SOLUTE_ATOMS) / 3,
                             (j - FKT_PROTEIN_SOLUTE_ATOMS) / 3);
        const double r = distance(set, i, j);
        if (!(r > 0.95 && r < 2.6))
            fail_msg("excluded pair %zu %zu at %g Angstrom", i, j, r);
        if (e > 0)
            assert_true(compare_pairs(&sorted[2 * e - 2], &sorted[2 * e]) < 0);
    }
    /* Every other pair at least the sum of the clash radii apart. */
    size_t e = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            const size_t pair[2] = {i, j};
            while (e < system.exclusion_count && compare_pairs(&sorted[2 * e], pair) < 0)
                e++;
            if (e < system.exclusion_count && sorted[2 * e] == i && sorted[2 * e + 1] == j)
                continue;
            const double limit = clash(set->type[i]) + clash(set->type[j]);
            if (distance(set, i, j) < limit - 1e-12)
                fail_msg("atoms %zu and %zu (types %d, %d) at %g < %g Angstrom", i, j, set->type[i],
                         set->type[j], distance(set, i, j), limit);
        }
    free(sorted);
    /* Pair table: symmetric, Lorentz-Berthelot, SPC/E's water oxygen. */
    const double *v = system.params.values;
    for (size_t a = 0; a < 9; a++)
        for (size_t b = 0; b < 9; b++) {
            assert_memory_equal(v + 2 * (a * 9 + b), v + 2 * (b * 9 + a), 2 * sizeof(double));
            FK_ASSERT_NEAR(v[2 * (a * 9 + b) + 1],
                           0.5 * (v[2 * (a * 9 + a) + 1] + v[2 * (b * 9 + b) + 1]), 1e-12);
        }
    FK_ASSERT_NEAR(v[2 * (7 * 9 + 7)], 0.1553, 1e-15);
    FK_ASSERT_NEAR(v[2 * (7 * 9 + 7) + 1], 3.166, 1e-15);

    fkt_system again;
    assert_int_equal(fkt_generate_protein(seed, &again), FK_OK);
    assert_true(same_set(set, &again.particles));
    assert_memory_equal(system.exclusions, again.exclusions,
                        2 * system.exclusion_count * sizeof(size_t));
    fkt_system_free(&again);
    assert_int_equal(fkt_generate_protein(seed + 1, &again), FK_OK);
    assert_memory_not_equal(set->position, again.particles.position, 3 * n * sizeof(double));
    fkt_system_free(&again);
    fkt_system_free(&system);
}

static void test_protein(void **state)
{
    (void)state;
    check_protein(1); /* the default seed of generate and accuracy */
    check_protein(fk_test_seed());
}

/* ---- lj65536 -----------------------------------------------------------------------------------
 */

static void test_lj65536(void **state)
{
    (void)state;
    const uint64_t seed = fk_test_seed();
    fkt_system system;
    assert_int_equal(fkt_generate_lj65536(65536, 0.5, seed, FKT_LAYOUT_XYZ_TYPE, &system), FK_OK);
    assert_int_equal(system.particles.count, 65536);
    assert_int_equal(system.params.types, 16);
    size_t seen[16] = {0};
    const double side = cbrt(65536 / 0.5);
    for (size_t i = 0; i < 65536; i++) {
        assert_true(system.particles.type[i] >= 0 && system.particles.type[i] < 16);
        seen[system.particles.type[i]]++;
        for (int d = 0; d < 3; d++)
            assert_true(system.particles.position[3 * i + d] >= 0 &&
                        system.particles.position[3 * i + d] < side);
    }
    for (int t = 0; t < 16; t++) /* 4,096 expected each; 6 standard deviations is 375 */
        assert_true(seen[t] > 3700 && seen[t] < 4500);
    const double *v = system.params.values;
    for (size_t a = 0; a < 16; a++) {
        assert_true(v[2 * (a * 16 + a)] >= 0.5 && v[2 * (a * 16 + a)] < 1.5);
        assert_true(v[2 * (a * 16 + a) + 1] >= 0.8 && v[2 * (a * 16 + a) + 1] < 1.2);
    }
    fkt_system again;
    assert_int_equal(fkt_generate_lj65536(65536, 0.5, seed, FKT_LAYOUT_XYZ_TYPE, &again), FK_OK);
    assert_true(same_set(&system.particles, &again.particles));
    fkt_system_free(&again);
    fkt_system_free(&system);

    /* The recipe at 4,096 particles: no pair closer than 0.8 sigma_ab; charges 0 for ljc. */
    assert_int_equal(fkt_generate_lj65536(4096, 0.5, seed, FKT_LAYOUT_XYZQ_TYPE, &system), FK_OK);
    const fkt_particle_set *set = &system.particles;
    v = system.params.values;
    for (size_t i = 0; i < set->count; i++) {
        assert_true(set->mass[i] == 0.0);
        for (size_t j = i + 1; j < set->count; j++) {
            double sigma = v[2 * ((size_t)set->type[i] * 16 + (size_t)set->type[j]) + 1];
            if (distance(set, i, j) < 0.8 * sigma)
                fail_msg("particles %zu and %zu at %g < 0.8 sigma = %g", i, j, distance(set, i, j),
                         0.8 * sigma);
        }
    }
    fkt_system_free(&system);
    assert_int_equal(fkt_generate_lj65536(100, 2.0, seed, FKT_LAYOUT_XYZ_TYPE, &system),
                     FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fkt_generate_lj65536(100, 0.5, seed, FKT_LAYOUT_XYZM, &system),
                     FK_ERR_INVALID_ARGUMENT);
}

/* ---- the files ---------------------------------------------------------------------------------
 */

static void test_written_files_read_back(void **state)
{
    (void)state;
    char *dir = fk_test_make_temp_dir("systems");
    assert_non_null(dir);
    char particles_path[1024], params_path[1024], exclude_path[1024], message[512];
    snprintf(particles_path, sizeof particles_path, "%s/p.txt", dir);
    snprintf(params_path, sizeof params_path, "%s/p.txt.params", dir);
    snprintf(exclude_path, sizeof exclude_path, "%s/p.txt.exclude", dir);
    fkt_system system;
    assert_int_equal(fkt_generate_protein(fk_test_seed(), &system), FK_OK);
    FILE *file = fopen(particles_path, "w");
    assert_non_null(file);
    assert_int_equal(fkt_system_write_particles(file, &system.particles, FKT_LAYOUT_XYZQ_TYPE,
                                                "a header\nof two lines"),
                     0);
    fclose(file);
    file = fopen(params_path, "w");
    assert_non_null(file);
    assert_int_equal(fkt_system_write_params(file, &system.params, "params"), 0);
    fclose(file);
    file = fopen(exclude_path, "w");
    assert_non_null(file);
    assert_int_equal(
        fkt_system_write_exclusions(file, system.exclusions, system.exclusion_count, NULL), 0);
    fclose(file);

    fkt_particle_set read;
    assert_int_equal(
        fkt_io_read_text(particles_path, FKT_LAYOUT_XYZQ_TYPE, &read, message, sizeof message),
        FK_OK);
    assert_true(same_set(&system.particles, &read)); /* %.17g: exact */
    fkt_particle_set_free(&read);
    fkt_pair_table_set table;
    assert_int_equal(fkt_io_read_pair_table(params_path, 2, "a b epsilon sigma", 0, &table, message,
                                            sizeof message),
                     FK_OK);
    assert_int_equal(table.types, system.params.types);
    assert_memory_equal(table.values, system.params.values,
                        table.types * table.types * 2 * sizeof(double));
    fkt_pair_table_set_free(&table);
    size_t *pairs = NULL, count = 0;
    assert_int_equal(fkt_io_read_exclusions(exclude_path, system.particles.count, &pairs, &count,
                                            message, sizeof message),
                     FK_OK);
    assert_int_equal(count, system.exclusion_count);
    assert_memory_equal(pairs, system.exclusions, 2 * count * sizeof(size_t));
    free(pairs);
    fkt_system_free(&system);
    fk_test_remove_tree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lj_fluid), cmocka_unit_test(test_velocity_distribution),
        cmocka_unit_test(test_fluorite), cmocka_unit_test(test_protein),
        cmocka_unit_test(test_lj65536),  cmocka_unit_test(test_written_files_read_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
