/*
 * The pair-loop table (src/core/loops/table.c, issue #35): every entry's self-description is held
 * to what its loop does, so that the callers which ask the table instead of comparing algorithms
 * (the evaluation, the tuner, shares, FK_ALGORITHM_AUTO, the CLI's reports) are told the truth,
 * and a new loop's entry is checked the moment it is added. For each entry: its place and name;
 * its reach (a loop that needs a cutoff refuses a law without one, the others take it; the pairs
 * counted: 0 for every pair, else the build's, fewer than N^2); Newton's third law and the share
 * unit (a share refused with the entry's own reason while the loop writes both particles of a
 * pair, taken otherwise, and then held to the loop's results: the parts of a split tile the
 * particles with their unshared forces bit for bit, and a particle range too where the unit is
 * particles, refused where it is cells); the accumulators it takes; double-single positions
 * (refused, or computed right); and its forces against the double-precision reference on fresh
 * random inputs at an N that is no multiple of a work-group size.
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

#include "core/accum/accum.h"
#include "core/loops/loop.h"
#include "test_support.h"

static fk_test_rng rng;

static int setup(void **state)
{
    if (fk_test_context_setup(state) != 0)
        return -1;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0x7ab1eull);
    return 0;
}

static int teardown(void **state)
{
    return fk_test_context_teardown(state);
}

/* An lj liquid of 11^3 = 1,331 particles (no multiple of a work-group size) in its periodic box,
 * cutoff 2.5: every loop runs it. */
static void make_liquid(fk_test_system *s)
{
    const int side = 11;
    const double spacing = 1.12;
    fk_test_system_alloc(s, "lj", (size_t)side * side * side, &rng);
    fk_test_system_lattice(s, 0, s->n, (size_t)side, spacing, (double[3]){0, 0, 0}, 0.2, &rng);
    s->physics.cutoff = 2.5;
    for (int d = 0; d < 3; ++d)
        s->physics.box[d] = side * spacing;
}

static fk_eval_config loop_config(const fk_test_system *s, const fk__loop *loop, const char *accum)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = s->kernel;
    config.accum = accum;
    config.algorithm = loop->algorithm;
    config.cutoff = s->physics.cutoff;
    memcpy(config.box, s->physics.box, sizeof config.box);
    config.lanes = -1; /* the entry itself, not its lane form */
    return config;
}

static fk_eval *create_or_fail(const fk_eval_config *config, const char *what)
{
    fk_eval *eval = NULL;
    const fk_status status = fk_eval_create(fk_test_context, config, &eval);
    if (status != FK_OK)
        fail_msg("%s: %s: %s", what, fk_status_string(status),
                 fk_context_last_error(fk_test_context));
    return eval;
}

/* The table's shape: entries in algorithm order under their public names, one reference loop
 * that takes everything, every operation there, a refusal reason exactly where Newton's third
 * law is used, lane forms of the same algorithm. */
static void test_entries(void **state)
{
    (void)state;
    size_t references = 0;
    assert_true(fk__loop_count() >= 1);
    assert_null(fk__loop_at(fk__loop_count()));
    assert_null(fk__loop_for(FK_ALGORITHM_AUTO));
    for (size_t k = 0; k < fk__loop_count(); ++k) {
        const fk__loop *loop = fk__loop_at(k);
        assert_non_null(loop);
        assert_int_equal(loop->algorithm, (int)k);
        assert_ptr_equal(fk__loop_for(loop->algorithm), loop);
        assert_string_equal(loop->name, fk_algorithm_name((fk_algorithm)loop->algorithm));
        fk_algorithm found = FK_ALGORITHM_AUTO;
        assert_int_equal(fk_algorithm_find(loop->name, &found), FK_OK);
        assert_int_equal(found, loop->algorithm);
        assert_true(loop->supports && loop->create && loop->prepare && loop->enqueue &&
                    loop->figures && loop->destroy && loop->tuning_space && loop->default_shape);
        assert_true((loop->newton == FK__NEWTON_NEVER) == (loop->newton_refusal == NULL));
        if (loop->reference) {
            ++references;
            assert_int_equal(loop->accums, FK__ACCUMS_ALL);
            assert_int_equal(loop->reach, FK__REACH_ALL);
            assert_true(loop->double_single);
            assert_int_equal(loop->automatic, FK__AUTO_REFERENCE);
        }
        if (fk__loop_lane_form(loop)) {
            assert_int_equal(fk__loop_lane_form(loop)->algorithm, loop->algorithm);
            const fk_variant lanes = {.algorithm = loop->algorithm, .lanes = 8};
            assert_ptr_equal(fk__loop_for_variant(&lanes), fk__loop_lane_form(loop));
        }
        const fk_variant scalar = {.algorithm = loop->algorithm};
        assert_ptr_equal(fk__loop_for_variant(&scalar), loop);
    }
    assert_int_equal(references, 1);
    assert_ptr_equal(fk__loop_reference(), fk__loop_for(FK_ALGORITHM_ALL_PAIRS));
    assert_int_equal(fk__loop_short_range()->automatic, FK__AUTO_SHORT_RANGE);
    assert_int_equal(fk__loop_short_range()->reach, FK__REACH_CUTOFF_SKIN);
}

/* Reach: a loop that needs a cutoff refuses gravity (no cutoff), the others run it. */
static void test_reach(void **state)
{
    (void)state;
    for (size_t k = 0; k < fk__loop_count(); ++k) {
        const fk__loop *loop = fk__loop_at(k);
        fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
        config.kernel = "ga";
        config.eps = 0.01;
        config.algorithm = loop->algorithm;
        fk_eval *eval = NULL;
        const fk_status status = fk_eval_create(fk_test_context, &config, &eval);
        fk_eval_destroy(eval);
        if (loop->reach == FK__REACH_CUTOFF_SKIN) {
            assert_int_equal(status, FK_ERR_INVALID_ARGUMENT);
            assert_non_null(strstr(fk_context_last_error(fk_test_context), "needs a short-range"));
        } else if (status != FK_OK)
            fail_msg("%s with ga: %s", loop->name, fk_context_last_error(fk_test_context));
    }
}

/* Computes and reads the forces (3 per particle) of eval into force. */
static void compute_forces(fk_eval *eval, double *force, const char *what)
{
    if (fk_eval_compute(eval, NULL) != FK_OK || fk_eval_read_forces(eval, force) != FK_OK)
        fail_msg("%s: compute: %s", what, fk_context_last_error(fk_test_context));
}

/* A share the entry promises, held to what the loop computes: the parts of a three-way split
 * each give some particles their unshared forces bit for bit and zeros to the rest, and every
 * particle gets its forces from exactly one part; a particle range gives its particles theirs and
 * zeros outside. */
static void check_shares(fk_eval *eval, size_t n, const double *unshared, int ranges,
                         const char *what)
{
    double *part_force = malloc(3 * n * sizeof *part_force);
    int *owner = calloc(n, sizeof *owner);
    assert_non_null(part_force);
    assert_non_null(owner);
    for (int part = 0; part < 3; ++part) {
        assert_int_equal(fk_eval_set_share(eval, part, 3), FK_OK);
        compute_forces(eval, part_force, what);
        for (size_t i = 0; i < n; ++i) {
            const double *f = &part_force[3 * i], *u = &unshared[3 * i];
            if (f[0] == 0 && f[1] == 0 && f[2] == 0)
                continue;
            if (memcmp(f, u, 3 * sizeof *f) != 0)
                fail_msg("%s: part %d of 3 gave particle %zu other forces", what, part, i);
            owner[i] += 1;
        }
    }
    for (size_t i = 0; i < n; ++i)
        if (owner[i] != 1)
            fail_msg("%s: particle %zu got its forces from %d parts", what, i, owner[i]);
    if (ranges) {
        assert_int_equal(fk_eval_set_share_range(eval, 10, 100), FK_OK);
        compute_forces(eval, part_force, what);
        for (size_t i = 0; i < n; ++i) {
            const int inside = i >= 10 && i < 100;
            const double *f = &part_force[3 * i];
            if (inside ? memcmp(f, &unshared[3 * i], 3 * sizeof *f) != 0
                       : (f[0] != 0 || f[1] != 0 || f[2] != 0))
                fail_msg("%s: the range [10, 100) gave particle %zu wrong forces", what, i);
        }
    }
    assert_int_equal(fk_eval_set_share(eval, 0, 1), FK_OK);
    free(part_force);
    free(owner);
}

/* Forces against the reference, the pairs counted, and the share the entry promises. */
static void check_loop(const fk_test_system *s, const fk__loop *loop, const char *accum,
                       int neighbor_lists)
{
    const fk_particles particles = fk_test_system_view(s);
    fk_eval_config config = loop_config(s, loop, accum);
    config.neighbor_lists = neighbor_lists;
    char what[96];
    snprintf(what, sizeof what, "%s, %s, lists %d", loop->name, accum, neighbor_lists);
    fk_eval *eval = create_or_fail(&config, what);
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    double *force = malloc(3 * s->n * sizeof *force);
    assert_non_null(force);
    compute_forces(eval, force, what);
    const double error =
        fk_test_error_vs_float_reference(s->kernel, &particles, &s->physics, force);
    if (!(error < 1e-4))
        fail_msg("%s: error %.3g of the largest force against the reference", what, error);

    /* the variant after the pass: the grid loops count the pairs of the build it ran on */
    fk_variant variant;
    assert_int_equal(fk_eval_get_variant(eval, &variant), FK_OK);
    assert_int_equal(variant.algorithm, loop->algorithm);
    const uint64_t all = (uint64_t)s->n * s->n;
    if (loop->reach == FK__REACH_ALL
            ? variant.pairs_examined != 0
            : !(variant.pairs_examined > 0 && variant.pairs_examined < all))
        fail_msg("%s: %llu pairs examined of %llu", what,
                 (unsigned long long)variant.pairs_examined, (unsigned long long)all);

    /* Newton's third law as it ran, and the share the entry says it takes. */
    const int newton = fk__loop_uses_newton(loop, &variant);
    if (loop->newton == FK__NEWTON_HALF_LISTS)
        assert_int_equal(newton, variant.neighbor_half_lists);
    /* The public traits (fk_eval_get_loop_traits, which the MPI layer asks instead of naming
     * loops) say what ran: both particles written, a grid's pairs counted, and (below) which
     * share calls are refused. */
    int writes_pairs = -1, cell_grid = -1, shares_cells = -1;
    assert_int_equal(fk_eval_get_loop_traits(eval, &writes_pairs, &cell_grid, &shares_cells),
                     FK_OK);
    assert_int_equal(writes_pairs, newton);
    assert_int_equal(cell_grid, variant.pairs_examined != 0);
    assert_int_equal(shares_cells, loop->share_unit == FK__SHARE_CELLS);
    const fk_status shared = fk_eval_set_share(eval, 1, 3);
    if (newton) {
        assert_int_equal(shared, FK_ERR_UNSUPPORTED);
        assert_non_null(strstr(fk_context_last_error(fk_test_context), loop->newton_refusal));
    } else {
        assert_int_equal(shared, FK_OK);
        const int ranges = loop->share_unit == FK__SHARE_PARTICLES;
        if (!ranges)
            assert_int_equal(fk_eval_set_share_range(eval, 10, 100), FK_ERR_UNSUPPORTED);
        check_shares(eval, s->n, force, ranges, what);
    }
    free(force);
    fk_eval_destroy(eval);
}

static void test_behaviour(void **state)
{
    (void)state;
    fk_test_system s;
    make_liquid(&s);
    for (size_t k = 0; k < fk__loop_count(); ++k) {
        const fk__loop *loop = fk__loop_at(k);
        check_loop(&s, loop, "float", FK_NEIGHBOR_LISTS_AUTO);
        if (loop->newton == FK__NEWTON_HALF_LISTS) { /* both forms of its lists */
            check_loop(&s, loop, "float", FK_NEIGHBOR_LISTS_HALF);
            check_loop(&s, loop, "float", FK_NEIGHBOR_LISTS_FULL);
        }
    }
    fk_test_system_free(&s);
}

/* The accumulators an entry takes: one that allows Newton's third law (float) everywhere; one
 * that does not (composite) exactly where the entry says every accumulator. */
static void test_accumulators(void **state)
{
    (void)state;
    fk_test_system s;
    make_liquid(&s);
    const fk_accum_desc *composite = fk__accum_desc("composite");
    assert_non_null(composite);
    assert_false(fk__accum_allows_newton(composite));
    for (size_t k = 0; k < fk__loop_count(); ++k) {
        const fk__loop *loop = fk__loop_at(k);
        assert_true(fk__loop_takes_accum(loop, fk__accum_desc("float")));
        const fk_eval_config config = loop_config(&s, loop, "composite");
        fk_eval *eval = NULL;
        const fk_status status = fk_eval_create(fk_test_context, &config, &eval);
        fk_eval_destroy(eval);
        if (fk__loop_takes_accum(loop, composite)) {
            if (status != FK_OK)
                fail_msg("%s with composite: %s", loop->name,
                         fk_context_last_error(fk_test_context));
        } else {
            assert_int_equal(status, FK_ERR_UNSUPPORTED);
        }
    }
    fk_test_system_free(&s);
}

/* Double-single positions (open boundaries) where the entry takes them, a refusal elsewhere. */
static void test_positions(void **state)
{
    (void)state;
    fk_test_system s;
    make_liquid(&s);
    for (size_t k = 0; k < fk__loop_count(); ++k) {
        const fk__loop *loop = fk__loop_at(k);
        fk_eval_config config = loop_config(&s, loop, "float");
        memset(config.box, 0, sizeof config.box);
        config.positions = FK_POSITIONS_DOUBLE_SINGLE;
        fk_eval *eval = NULL;
        const fk_status status = fk_eval_create(fk_test_context, &config, &eval);
        if (status == FK_OK) { /* what it takes, it computes right */
            const fk_particles particles = fk_test_system_view(&s);
            fk_physics open = s.physics;
            memset(open.box, 0, sizeof open.box);
            double *force = malloc(3 * s.n * sizeof *force);
            assert_non_null(force);
            assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
            compute_forces(eval, force, loop->name);
            const double error =
                fk_test_error_vs_float_reference(s.kernel, &particles, &open, force);
            if (!(error < 1e-4))
                fail_msg("%s, double-single: error %.3g against the reference", loop->name, error);
            free(force);
        }
        fk_eval_destroy(eval);
        if (loop->double_single) {
            if (status != FK_OK)
                fail_msg("%s, double-single: %s", loop->name,
                         fk_context_last_error(fk_test_context));
        } else {
            assert_int_equal(status, FK_ERR_UNSUPPORTED);
        }
    }
    fk_test_system_free(&s);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entries),   cmocka_unit_test(test_reach),
        cmocka_unit_test(test_behaviour), cmocka_unit_test(test_accumulators),
        cmocka_unit_test(test_positions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
