/*
 * fk_eval_set_share (issue #20): every part of a split of the pair work computes its share of the
 * particles' results and zeros for the rest, and the parts' results OR'ed together are the
 * unshared results bit for bit, for every loop that takes a share (all-pairs, lanes, cells, full
 * neighbour lists), every accumulator tried (float, composite, fixed64) and part counts that leave
 * some parts empty. The unshared results are held to the double-precision reference on the same
 * fresh random inputs, so the comparison is against forces that are right, not only alike. The
 * explicit particle ranges (fk_eval_set_share_range) are held to the same property. The
 * refusals (symmetric, half lists, exclusions afterwards, bad part numbers), fk_eval_rescale and
 * the coordinated pre-pass (each part measuring its share's bound) are checked too. The MPI layer's
 * own tests (tests/mpi/) build on this.
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

#include "test_support.h"

static fk_test_rng rng;

static int setup(void **state)
{
    if (fk_test_context_setup(state) != 0)
        return -1;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0x5ea4eull);
    return 0;
}

static int teardown(void **state)
{
    return fk_test_context_teardown(state);
}

/* The results of one evaluation as bits: the force components (3, gaj 6) and the potential of
 * each particle, width = components + 1 words per particle. */
static void compute_bits(fk_eval *eval, size_t n, uint64_t *bits)
{
    const size_t fc = fk_eval_force_components(eval), width = fc + 1;
    double *force = malloc(fc * n * sizeof *force), *potential = malloc(n * sizeof *potential);
    assert_non_null(force);
    assert_non_null(potential);
    fk_status status = fk_eval_compute(eval, NULL);
    if (status == FK_OK)
        status = fk_eval_read_forces(eval, force);
    if (status == FK_OK)
        status = fk_eval_read_potentials(eval, potential);
    if (status != FK_OK)
        fail_msg("compute: %s: %s", fk_status_string(status),
                 fk_context_last_error(fk_test_context));
    for (size_t i = 0; i < n; ++i) {
        memcpy(&bits[width * i], &force[fc * i], fc * sizeof(double));
        memcpy(&bits[width * i + fc], &potential[i], sizeof(double));
    }
    free(force);
    free(potential);
}

static double bits_value(uint64_t bits)
{
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* The unshared results against fk_reference_forces: |error| below tolerance times the largest
 * |force| (the sums here are of a few hundred terms; every accumulator tried is far better). */
static void check_reference(const char *kernel, const fk_particles *particles,
                            const fk_physics *physics, size_t fc, const uint64_t *bits)
{
    const size_t n = particles->count, width = fc + 1;
    double *force = malloc(fc * n * sizeof *force), *potential = malloc(n * sizeof *potential);
    assert_non_null(force);
    assert_non_null(potential);
    assert_int_equal(fk_reference_forces(kernel, particles, physics, force, potential), FK_OK);
    double largest = 0;
    for (size_t k = 0; k < fc * n; ++k)
        largest = fmax(largest, fabs(force[k]));
    for (size_t i = 0; i < n; ++i)
        for (size_t c = 0; c < fc; ++c)
            FK_ASSERT_NEAR(bits_value(bits[width * i + c]), force[fc * i + c], 1e-4 * largest);
    free(force);
    free(potential);
}

typedef struct share_case {
    const char *kernel, *accum;
    int algorithm, lanes;
} share_case;

/* The evaluation of a case: potentials on, full lists (shares take no half lists). */
static fk_eval_config case_config(const share_case *c, const fk_eval_config *base)
{
    fk_eval_config config = *base;
    config.struct_size = sizeof config; /* neighbor_lists came after 0.2.0 */
    config.kernel = c->kernel;
    config.accum = c->accum;
    config.algorithm = c->algorithm;
    config.lanes = c->lanes;
    config.potential = 1;
    config.neighbor_lists = FK_NEIGHBOR_LISTS_FULL;
    return config;
}

/* A gravitating cube of n particles: positions in [-1, 1)^3, masses in [0.5, 1.5), velocities in
 * [-0.5, 0.5)^3 (for gaj); the caller frees the three arrays. */
static void random_cluster(size_t n, double **position, double **mass, double **velocity)
{
    *position = malloc(3 * n * sizeof **position);
    *mass = malloc(n * sizeof **mass);
    *velocity = malloc(3 * n * sizeof **velocity);
    assert_true(*position && *mass && *velocity);
    for (size_t i = 0; i < n; ++i) {
        for (int d = 0; d < 3; ++d) {
            (*position)[3 * i + d] = 2 * fk_test_rng_uniform(&rng) - 1;
            (*velocity)[3 * i + d] = fk_test_rng_uniform(&rng) - 0.5;
        }
        (*mass)[i] = 0.5 + fk_test_rng_uniform(&rng);
    }
}

/* Every part count in parts_tried: each part's results zero outside what it computed, the OR of
 * the parts equal to the unshared results, and every particle computed by exactly one part. */
static void check_shares(const share_case *c, const fk_eval_config *base, const fk_particles *p,
                         const fk_physics *physics)
{
    const size_t n = p->count;
    fk_eval_config config = case_config(c, base);
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(fk_test_context, &config, &eval);
    if (status != FK_OK)
        fail_msg("create %s %s: %s", c->kernel, c->accum, fk_context_last_error(fk_test_context));
    assert_int_equal(fk_eval_set_particles(eval, p), FK_OK);
    const size_t fc = fk_eval_force_components(eval), width = fc + 1, words = width * n;
    uint64_t *whole = calloc(words, sizeof *whole), *combined = calloc(words, sizeof *combined);
    uint64_t *part_bits = calloc(words, sizeof *part_bits);
    unsigned char *owner = calloc(n, 1);
    assert_true(whole && combined && part_bits && owner);
    compute_bits(eval, n, whole);
    check_reference(c->kernel, p, physics, fc, whole);

    const int parts_tried[] = {2, 3, 4, 64};
    for (size_t t = 0; t < sizeof parts_tried / sizeof parts_tried[0]; ++t) {
        const int parts = parts_tried[t];
        memset(combined, 0, words * sizeof *combined);
        memset(owner, 0, n);
        uint64_t pairs = 0;
        for (int part = 0; part < parts; ++part) {
            if (fk_eval_set_share(eval, part, parts) != FK_OK)
                fail_msg("%s %s %s: set_share %d of %d: %s", c->kernel, c->accum,
                         fk_algorithm_name(c->algorithm), part, parts,
                         fk_context_last_error(fk_test_context));
            compute_bits(eval, n, part_bits);
            pairs += fk_eval_share_pairs(eval);
            for (size_t i = 0; i < n; ++i) {
                int computed = 0;
                for (size_t k = 0; k < width; ++k) {
                    const uint64_t b = part_bits[width * i + k];
                    if (b && b != whole[width * i + k])
                        fail_msg("%s %s %s: part %d of %d, particle %zu component %zu: %.17g, "
                                 "unshared %.17g",
                                 c->kernel, c->accum, fk_algorithm_name(c->algorithm), part, parts,
                                 i, bits_value(b), bits_value(whole[width * i + k]));
                    computed |= b != 0;
                    combined[width * i + k] |= b;
                }
                if (computed && owner[i]++)
                    fail_msg("%s %s: particle %zu computed by two parts of %d", c->kernel, c->accum,
                             i, parts);
            }
        }
        if (memcmp(combined, whole, words * sizeof *whole) != 0)
            fail_msg("%s %s %s: %d parts OR'ed differ from the unshared results", c->kernel,
                     c->accum, fk_algorithm_name(c->algorithm), parts);
        /* All-pairs counts exactly: every ordered pair once over the parts. */
        if (c->algorithm == FK_ALGORITHM_ALL_PAIRS)
            assert_true(pairs == (uint64_t)n * n);
        else
            assert_true(pairs > 0);
    }
    /* Explicit particle ranges (fk_eval_set_share_range): uneven, one empty, the last reaching
     * beyond N (cut there); each part exactly its range, the OR the unshared results. */
    if (c->algorithm == FK_ALGORITHM_CELLS) {
        assert_int_equal(fk_eval_set_share_range(eval, 0, n / 2), FK_ERR_UNSUPPORTED);
    } else {
        const size_t cuts[] = {0, n / 7, n / 7, n / 2 + 3, n + 5};
        memset(combined, 0, words * sizeof *combined);
        for (size_t r = 0; r + 1 < sizeof cuts / sizeof cuts[0]; ++r) {
            const size_t first = cuts[r], end = cuts[r + 1] < n ? cuts[r + 1] : n;
            assert_int_equal(fk_eval_set_share_range(eval, cuts[r], cuts[r + 1]), FK_OK);
            compute_bits(eval, n, part_bits);
            for (size_t i = 0; i < n; ++i)
                for (size_t k = 0; k < width; ++k) {
                    const uint64_t b = part_bits[width * i + k];
                    const uint64_t expected = i >= first && i < end ? whole[width * i + k] : 0;
                    if (b != expected)
                        fail_msg("%s %s %s: range [%zu, %zu), particle %zu component %zu: %.17g, "
                                 "expected %.17g",
                                 c->kernel, c->accum, fk_algorithm_name(c->algorithm), first, end,
                                 i, bits_value(b), bits_value(expected));
                    combined[width * i + k] |= b;
                }
            if (c->algorithm == FK_ALGORITHM_ALL_PAIRS)
                assert_true(fk_eval_share_pairs(eval) == (uint64_t)(end - first) * n);
        }
        assert_memory_equal(combined, whole, words * sizeof *whole);
    }
    assert_int_equal(fk_eval_set_share_range(eval, 5, 4), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_eval_set_share(eval, 0, 1), FK_OK); /* cleared: the whole again */
    compute_bits(eval, n, part_bits);
    assert_memory_equal(part_bits, whole, words * sizeof *whole);
    free(whole);
    free(combined);
    free(part_bits);
    free(owner);
    fk_eval_destroy(eval);
}

/* Gravity, open boundaries: N not a multiple of any block, masses in [0.5, 1.5). */
static void test_gravity(void **state)
{
    (void)state;
    const size_t n = 1001;
    double *position = NULL, *mass = NULL, *velocity = NULL;
    random_cluster(n, &position, &mass, &velocity);
    const fk_eval_config base = {.eps = 0.05};
    const fk_physics physics = {.eps = 0.05};
    const share_case cases[] = {
        {"ga", "float", FK_ALGORITHM_ALL_PAIRS, -1},
        {"ga", "composite", FK_ALGORITHM_ALL_PAIRS, -1},
        {"ga", "fixed64", FK_ALGORITHM_ALL_PAIRS, -1},
        {"ga", "float", FK_ALGORITHM_ALL_PAIRS, 8}, /* the lane loop */
        {"gaj", "fixed64", FK_ALGORITHM_ALL_PAIRS, -1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        const fk_particles p = {.count = n,
                                .position = position,
                                .mass = mass,
                                .velocity = strcmp(cases[k].kernel, "gaj") == 0 ? velocity : NULL};
        check_shares(&cases[k], &base, &p, &physics);
    }
    free(position);
    free(mass);
    free(velocity);
}

/* A periodic Lennard-Jones fluid with charges: cells and full lists, several laws. */
static void test_molecular(void **state)
{
    (void)state;
    const char *kernels[] = {"lj", "ljc_constant"};
    for (size_t k = 0; k < 2; ++k) {
        fk_test_system s;
        fk_test_system_alloc(&s, kernels[k], 729, &rng);
        fk_test_system_lattice(&s, 0, s.n, 9, 1.1, (double[3]){0.3, 0.3, 0.3}, 0.2, &rng);
        s.physics.cutoff = 2.5;
        for (int d = 0; d < 3; ++d)
            s.physics.box[d] = 9 * 1.1;
        fk_eval_config base = {.cutoff = s.physics.cutoff, .coulomb = s.physics.coulomb};
        memcpy(base.box, s.physics.box, sizeof base.box);
        const fk_particles p = fk_test_system_view(&s);
        const share_case cases[] = {
            {kernels[k], "fixed64", FK_ALGORITHM_CELLS, 0},
            {kernels[k], "float", FK_ALGORITHM_CELLS, 0},
            {kernels[k], "fixed64", FK_ALGORITHM_NEIGHBORS, 0},
            {kernels[k], "fixed64", FK_ALGORITHM_ALL_PAIRS, 0},
        };
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c)
            check_shares(&cases[c], &base, &p, &s.physics);
        fk_test_system_free(&s);
    }
}

/* config.coordinated_scale: each part's pre-pass measures only its share (divided among the
 * parts like the forces), the maximum of the parts' bounds is exactly the unshared bound, and that
 * bound set on every part gives the unshared bits when the parts are OR'ed. */
static void check_coordinated(const share_case *c, const fk_eval_config *base,
                              const fk_particles *p)
{
    const size_t n = p->count;
    fk_eval_config config = case_config(c, base);
    fk_eval *whole_eval = NULL, *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &whole_eval), FK_OK);
    config.coordinated_scale = 1;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    assert_int_equal(fk_eval_set_particles(whole_eval, p), FK_OK);
    assert_int_equal(fk_eval_set_particles(eval, p), FK_OK);
    const size_t width = fk_eval_force_components(eval) + 1, words = width * n;
    uint64_t *whole = calloc(words, sizeof *whole), *combined = calloc(words, sizeof *combined);
    uint64_t *part_bits = calloc(words, sizeof *part_bits);
    assert_true(whole && combined && part_bits);
    compute_bits(whole_eval, n, whole);
    double whole_term = 0, whole_sum = 0;
    assert_int_equal(fk_eval_get_bound(whole_eval, &whole_term, &whole_sum), FK_OK);
    assert_true(whole_term > 0 && whole_sum > 0);

    const int parts = 3;
    double term = 0, sum = 0;
    int below = 0; /* parts whose share does not hold the largest sum */
    for (int part = 0; part < parts; ++part) {
        assert_int_equal(fk_eval_set_share(eval, part, parts), FK_OK);
        assert_int_equal(fk_eval_rescale(eval), FK_OK); /* the pre-pass, on the share */
        double t = 0, s = 0;
        assert_int_equal(fk_eval_get_bound(eval, &t, &s), FK_OK);
        if (!(t <= whole_term && s <= whole_sum))
            fail_msg("%s %s %s: part %d's bound (%.9g, %.9g) above the whole's (%.9g, %.9g)",
                     c->kernel, c->accum, fk_algorithm_name(c->algorithm), part, t, s, whole_term,
                     whole_sum);
        below += s < whole_sum;
        term = fmax(term, t);
        sum = fmax(sum, s);
    }
    if (term != whole_term || sum != whole_sum)
        fail_msg("%s %s %s: the parts' bounds combine to (%.17g, %.17g), the whole's is (%.17g, "
                 "%.17g)",
                 c->kernel, c->accum, fk_algorithm_name(c->algorithm), term, sum, whole_term,
                 whole_sum);
    assert_true(below > 0); /* the pre-pass was divided: some part saw less than the whole */
    for (int part = 0; part < parts; ++part) {
        assert_int_equal(fk_eval_set_share(eval, part, parts), FK_OK);
        assert_int_equal(fk_eval_set_bound(eval, term, sum, n), FK_OK);
        compute_bits(eval, n, part_bits);
        for (size_t k = 0; k < words; ++k)
            combined[k] |= part_bits[k];
    }
    if (memcmp(combined, whole, words * sizeof *whole) != 0)
        fail_msg("%s %s %s: coordinated parts OR'ed differ from the unshared results", c->kernel,
                 c->accum, fk_algorithm_name(c->algorithm));
    free(whole);
    free(combined);
    free(part_bits);
    fk_eval_destroy(eval);
    fk_eval_destroy(whole_eval);
}

static void test_coordinated(void **state)
{
    (void)state;
    const size_t n = 777;
    double *position = NULL, *mass = NULL, *velocity = NULL;
    random_cluster(n, &position, &mass, &velocity);
    const fk_eval_config gravity = {.eps = 0.05};
    const fk_particles g = {.count = n, .position = position, .mass = mass};
    const share_case gravity_cases[] = {
        {"ga", "fixed64", FK_ALGORITHM_ALL_PAIRS, -1},
        {"ga", "narumi", FK_ALGORITHM_ALL_PAIRS, -1},
        {"ga", "fixed64", FK_ALGORITHM_ALL_PAIRS, 8},
    };
    for (size_t k = 0; k < sizeof gravity_cases / sizeof gravity_cases[0]; ++k)
        check_coordinated(&gravity_cases[k], &gravity, &g);
    free(position);
    free(mass);
    free(velocity);

    fk_test_system s;
    fk_test_system_alloc(&s, "ljc_constant", 729, &rng);
    fk_test_system_lattice(&s, 0, s.n, 9, 1.1, (double[3]){0.3, 0.3, 0.3}, 0.2, &rng);
    fk_eval_config molecular = {.cutoff = 2.5, .coulomb = s.physics.coulomb};
    for (int d = 0; d < 3; ++d)
        molecular.box[d] = 9 * 1.1;
    const fk_particles m = fk_test_system_view(&s);
    const share_case molecular_cases[] = {
        {"ljc_constant", "fixed64", FK_ALGORITHM_CELLS, 0},
        {"ljc_constant", "fixed64", FK_ALGORITHM_NEIGHBORS, 0},
    };
    for (size_t k = 0; k < sizeof molecular_cases / sizeof molecular_cases[0]; ++k)
        check_coordinated(&molecular_cases[k], &molecular, &m);
    fk_test_system_free(&s);
}

static void expect_refused(const fk_eval_config *config, fk_status expected)
{
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, config, &eval), FK_OK);
    const fk_status status = fk_eval_set_share(eval, 1, 2);
    if (status != expected)
        fail_msg("set_share: %s, expected %s", fk_status_string(status),
                 fk_status_string(expected));
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "share"));
    assert_int_equal(fk_eval_set_share_range(eval, 0, 1), expected);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "share"));
    fk_eval_destroy(eval);
}

static void test_refusals(void **state)
{
    (void)state;
    fk_eval_config config = {.kernel = "ga", .accum = "fixed64"};
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    assert_int_equal(fk_eval_set_share(eval, 2, 2), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_eval_set_share(eval, -1, 2), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_eval_set_share(eval, 0, 0), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_eval_set_share(NULL, 0, 1), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_eval_set_share_range(NULL, 0, 1), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_eval_rescale(eval), FK_ERR_STATE); /* no particles yet */
    assert_int_equal(fk_eval_rescale_count(eval), 0);
    fk_eval_destroy(eval);

    config.algorithm = FK_ALGORITHM_SYMMETRIC;
    expect_refused(&config, FK_ERR_UNSUPPORTED);
    fk_eval_config lists = {.struct_size = sizeof(fk_eval_config),
                            .kernel = "lj",
                            .accum = "fixed64",
                            .algorithm = FK_ALGORITHM_NEIGHBORS,
                            .neighbor_lists = FK_NEIGHBOR_LISTS_HALF,
                            .box = {10, 10, 10}};
    expect_refused(&lists, FK_ERR_UNSUPPORTED);
    fk_eval_config afterwards = {
        .kernel = "lj", .accum = "fixed64", .exclusion_mode = FK_EXCLUDE_AFTERWARDS};
    expect_refused(&afterwards, FK_ERR_UNSUPPORTED);
}

/* fk_eval_rescale: the pre-pass again on the current positions, the same scale for the same
 * positions, so the results do not change bits. */
static void test_rescale(void **state)
{
    (void)state;
    const size_t n = 300;
    double *position = malloc(3 * n * sizeof *position);
    assert_non_null(position);
    for (size_t k = 0; k < 3 * n; ++k)
        position[k] = fk_test_rng_uniform(&rng);
    const fk_eval_config config = {
        .kernel = "ga", .accum = "fixed64", .eps = 0.01, .scale_policy = FK_SCALE_KEEP};
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    const fk_particles p = {.count = n, .position = position};
    assert_int_equal(fk_eval_set_particles(eval, &p), FK_OK);
    uint64_t *before = calloc(4 * n, 8), *after = calloc(4 * n, 8);
    assert_true(before && after);
    fk_eval_config with_potential = config;
    (void)with_potential;
    double *force = malloc(3 * n * sizeof *force);
    assert_non_null(force);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    assert_int_equal(fk_eval_read_forces(eval, force), FK_OK);
    memcpy(before, force, 3 * n * sizeof *force);
    assert_int_equal(fk_eval_rescale(eval), FK_OK);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    assert_int_equal(fk_eval_read_forces(eval, force), FK_OK);
    memcpy(after, force, 3 * n * sizeof *force);
    assert_memory_equal(before, after, 3 * n * sizeof *force);
    assert_int_equal(fk_eval_rescale_count(eval), 0); /* explicit rescales are not counted */

    /* fk_eval_get_bound / fk_eval_set_bound: the measured bound set back gives the same bits;
     * sized for a larger system (a part of one), a smaller scale: other bits, the same forces
     * within fixed64's resolution. */
    double max_term = 0, max_sum = 0;
    assert_int_equal(fk_eval_get_bound(eval, &max_term, &max_sum), FK_OK);
    assert_true(max_term > 0 && max_sum >= max_term);
    assert_int_equal(fk_eval_set_bound(eval, max_term, max_sum, 0), FK_OK);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    assert_int_equal(fk_eval_read_forces(eval, force), FK_OK);
    assert_memory_equal(before, force, 3 * n * sizeof *force);
    assert_int_equal(fk_eval_set_bound(eval, max_term, max_sum, (size_t)1 << 20), FK_OK);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    assert_int_equal(fk_eval_read_forces(eval, force), FK_OK);
    const double *was = (const double *)(const void *)before;
    double largest = 0;
    int differs = 0;
    for (size_t k = 0; k < 3 * n; ++k) {
        largest = fmax(largest, fabs(was[k]));
        differs |= memcmp(&was[k], &force[k], sizeof force[k]) != 0;
    }
    assert_true(differs); /* 11 bits of scale fewer: the last bits of some forces move */
    for (size_t k = 0; k < 3 * n; ++k)
        FK_ASSERT_NEAR(force[k], was[k], 1e-9 * largest);
    assert_int_equal(fk_eval_set_bound(eval, NAN, 0, 0), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_eval_set_bound(eval, 1e300, 1e300, 0), FK_ERR_OVERFLOW);
    free(force);
    free(before);
    free(after);
    free(position);
    fk_eval_destroy(eval);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gravity),     cmocka_unit_test(test_molecular),
        cmocka_unit_test(test_coordinated), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_rescale),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
