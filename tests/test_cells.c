/*
 * The cells algorithm (cl/cells.cl, src/core/loops/cells.c): the same forces as all-pairs with the
 * cutoff, both held to the double-precision host reference (fk_reference_forces) on fresh random
 * inputs, and fixed64 bit-identical to all-pairs in reproducible mode (integer sums do not depend
 * on the order, the pairs the cell loop skips are beyond the cutoff, exactly 0 in all-pairs, and
 * correctly rounded pair arithmetic makes each term the same bits in both programs; outside it a
 * compiler may compute a term differently in the two programs, which OpenCL allows). Systems:
 * uniform fluids (open and periodic, particles given up to one box length outside the box), boxes
 * of fewer than three cells per side, particles exactly on cell boundaries, clustered particles (a
 * cell overflows its placeholders: resize and rebuild), mostly empty grids (and a far outlier),
 * exclusions both ways, ljc_constant and buck with cutoffs, the skin path over many small moves and
 * a big move, and bad inputs.
 *
 * Coordinates are multiples of 2^-16 below 64, so differences of positions are exact in float;
 * the error left is the pair arithmetic's rounding, bounded per particle by the sum of the
 * magnitudes of the parts of its pair terms (as in test_forces.c).
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

#include "core/internal.h"
#include "test_support.h"

static fk_test_rng rng;

static int setup(void **state)
{
    if (fk_test_context_setup(state) != 0)
        return -1;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0xce115ull);
    return 0;
}

static int teardown(void **state)
{
    return fk_test_context_teardown(state);
}

/* ---------------------------------------------------------------------------------------------- */
/* Systems */

typedef fk_test_system test_system; /* test_support.h */

static double uniform(double low, double high)
{
    return low + (high - low) * fk_test_rng_uniform(&rng);
}

/* ---------------------------------------------------------------------------------------------- */
/* The reference and the error scale */

/* Sum of |parts| of f(r) and of U(r), unshifted, with epsilon = sigma = 1 (buck: A = rho = C = 1).
 */
static void pair_parts(const test_system *s, double qq, double r, double *force, double *energy)
{
    const double k = s->physics.coulomb ? s->physics.coulomb : 1.0;
    if (strcmp(s->kernel, "buck") == 0) {
        const double bm = exp(-r), r6 = r * r * r * r * r * r;
        *force = bm * (1 + r) + 6 / (r6 * r) + fabs(k * qq) / (r * r);
        *energy = bm * (1 + r) + 1 / r6 + fabs(k * qq) / r;
        return;
    }
    const double sr = 1 / r, sr2 = sr * sr, sr6 = sr2 * sr2 * sr2;
    *force = 4 * (12 * sr6 * sr6 + 6 * sr6) / r;
    *energy = 4 * (sr6 * sr6 + sr6);
    if (strcmp(s->kernel, "ljc_constant") == 0) {
        *force += fabs(k * qq) / (r * r);
        *energy += fabs(k * qq) / r;
    }
}

typedef struct reference {
    double *force, *potential;          /* fk_reference_forces */
    double *force_scale, *energy_scale; /* per particle: sums of the parts' magnitudes */
    size_t within;                      /* ordered pairs i != j closer than the cutoff */
} reference;

static reference make_reference(const test_system *s)
{
    const size_t n = s->n;
    reference ref = {malloc(3 * n * sizeof(double)), malloc(n * sizeof(double)),
                     calloc(n, sizeof(double)), calloc(n, sizeof(double)), 0};
    assert_true(ref.force && ref.potential && ref.force_scale && ref.energy_scale);
    fk_physics physics = s->physics;
    physics.exclusions = s->exclusions;
    physics.exclusion_count = s->exclusion_count;
    const fk_particles particles = fk_test_system_view(s);
    fk_status status =
        fk_reference_forces(s->kernel, &particles, &physics, ref.force, ref.potential);
    if (status != FK_OK)
        fail_msg("reference %s N=%zu: %s", s->kernel, n, fk_status_string(status));
    const double rc = s->physics.cutoff ? s->physics.cutoff : 2.5;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
            if (i == j)
                continue;
            double r2 = 0;
            for (int d = 0; d < 3; ++d) {
                double x = s->position[3 * i + d] - s->position[3 * j + d];
                const double box = s->physics.box[d];
                if (box > 0)
                    x -= box * nearbyint(x / box);
                r2 += x * x;
            }
            const double r = sqrt(r2);
            if (r >= rc)
                continue;
            ref.within++;
            const double qq = strcmp(s->kernel, "lj") == 0 ? 0 : s->charge[i] * s->charge[j];
            double f, u, f_rc, u_rc;
            pair_parts(s, qq, r, &f, &u);
            pair_parts(s, qq, rc, &f_rc, &u_rc);
            ref.force_scale[i] += f + f_rc;
            ref.energy_scale[i] += 0.5 * (u + u_rc + (r + rc) * f_rc);
        }
    return ref;
}

static void free_reference(reference *ref)
{
    free(ref->force);
    free(ref->potential);
    free(ref->force_scale);
    free(ref->energy_scale);
}

/* As test_forces.c: float sums of n terms lose up to ~n/2 ulp; the others keep the per-term
 * rounding; fixed64 and narumi add a resolution floor relative to the largest scale. */
static double tolerance(const char *accum, size_t n)
{
    const double ulp = 5.96e-8;
    if (strcmp(accum, "float") == 0)
        return ulp * (48.0 + 2.0 * sqrt((double)n) + 0.02 * (double)n);
    return ulp * 48.0;
}

static double global_tolerance(const char *accum, size_t n)
{
    return strcmp(accum, "float") == 0 ? 0.0 : ldexp((double)n + 16.0, -44);
}

/* Worst error in units of the allowed error; fails on non-finite values. */
static double worst_error(const char *what, const test_system *s, const reference *ref,
                          const char *accum, const double *force, const double *potential)
{
    const double tol = tolerance(accum, s->n), global = global_tolerance(accum, s->n);
    double largest = 0, worst = 0;
    for (size_t i = 0; i < s->n; ++i)
        largest = fmax(largest, fmax(ref->force_scale[i], ref->energy_scale[i]));
    for (size_t i = 0; i < s->n; ++i)
        for (int k = 0; k <= 3; ++k) {
            const double value = k < 3 ? force[3 * i + k] : potential[i];
            const double want = k < 3 ? ref->force[3 * i + k] : ref->potential[i];
            if (!isfinite(value))
                fail_msg("%s: particle %zu component %d is %g", what, i, k, value);
            const double scale = k < 3 ? ref->force_scale[i] : ref->energy_scale[i];
            const double allowed = tol * scale + global * largest;
            const double error = allowed > 0 ? fabs(value - want) / allowed : fabs(value - want);
            worst = fmax(worst, error);
        }
    return worst;
}

/* ---------------------------------------------------------------------------------------------- */
/* Evaluations */

typedef struct eval_options {
    int algorithm;
    double skin;
    int exclusion_mode;
    int local_tiling, work_group_size, unroll_i; /* 0: the device's defaults */
    int reproducible;
} eval_options;

static fk_eval *make_eval(const test_system *s, const char *accum, eval_options o)
{
    fk_eval_config config = {.kernel = s->kernel,
                             .accum = accum,
                             .potential = 1,
                             .cutoff = s->physics.cutoff,
                             .coulomb = s->physics.coulomb,
                             .exclusion_mode = o.exclusion_mode,
                             .reproducible = o.reproducible,
                             .algorithm = o.algorithm,
                             .skin = o.skin,
                             .local_tiling = o.local_tiling,
                             .work_group_size = o.work_group_size,
                             .unroll_i = o.unroll_i,
                             .unroll_j = o.unroll_i ? 1 : 0};
    memcpy(config.box, s->physics.box, sizeof config.box);
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(fk_test_context, &config, &eval);
    if (status != FK_OK)
        fail_msg("create %s %s %s: %s: %s", s->kernel, accum, fk_algorithm_name(o.algorithm),
                 fk_status_string(status), fk_context_last_error(fk_test_context));
    if (fk_test_device_checks)
        fk__eval_set_host_check_count(eval, 0);
    if (s->exclusion_count)
        assert_int_equal(fk_eval_set_exclusions(eval, s->exclusions, s->exclusion_count), FK_OK);
    return eval;
}

typedef struct outputs {
    double *force, *potential;
    uint32_t *packed; /* 2 words per component, 4 components */
} outputs;

static outputs make_outputs(size_t n)
{
    outputs o = {malloc(3 * n * sizeof(double)), malloc(n * sizeof(double)),
                 malloc(8 * n * sizeof(uint32_t))};
    assert_true(o.force && o.potential && o.packed);
    return o;
}

static void free_outputs(outputs *o)
{
    free(o->force);
    free(o->potential);
    free(o->packed);
}

static void expect_ok(fk_status status, const char *what)
{
    if (status != FK_OK)
        fail_msg("%s: %s: %s", what, fk_status_string(status),
                 fk_context_last_error(fk_test_context));
}

/* Computes on the particles already set, reads forces, potentials and the packed words into
 * NaN-poisoned arrays. */
static void compute_read(fk_eval *eval, size_t n, outputs *o)
{
    expect_ok(fk_eval_compute(eval, NULL), "compute");
    for (size_t i = 0; i < 3 * n; ++i)
        o->force[i] = NAN;
    for (size_t i = 0; i < n; ++i)
        o->potential[i] = NAN;
    expect_ok(fk_eval_read_forces(eval, o->force), "read forces");
    expect_ok(fk_eval_read_potentials(eval, o->potential), "read potentials");
    expect_ok(fk__eval_read_packed(eval, o->packed), "read packed");
}

static void evaluate(fk_eval *eval, const test_system *s, outputs *o)
{
    const fk_particles particles = fk_test_system_view(s);
    expect_ok(fk_eval_set_particles(eval, &particles), "set_particles");
    compute_read(eval, s->n, o);
}

/* Cells on one system with one accumulator against the reference; with fixed64 also all-pairs,
 * against the reference and bit for bit with cells, both in reproducible mode, where that is
 * promised (test_forces.c holds all-pairs to the reference with the other accumulators; each
 * extra program costs a compile on POCL). Returns the cells variant. */
static fk_variant check_system(const char *what, const test_system *s, const reference *ref,
                               const char *accum, eval_options o)
{
    const double started = fk__now();
    outputs cells = make_outputs(s->n), pairs = make_outputs(s->n);
    const int fixed64 = strcmp(accum, "fixed64") == 0;
    o.algorithm = FK_ALGORITHM_CELLS;
    o.reproducible = fixed64;
    fk_eval *cell_eval = make_eval(s, accum, o);
    evaluate(cell_eval, s, &cells);
    fk_variant variant;
    assert_int_equal(fk_eval_get_variant(cell_eval, &variant), FK_OK);
    fk_eval_destroy(cell_eval);
    if (fixed64) {
        o.algorithm = FK_ALGORITHM_ALL_PAIRS;
        fk_eval *pair_eval = make_eval(s, accum, o);
        evaluate(pair_eval, s, &pairs);
        fk_eval_destroy(pair_eval);
    }

    char label[200];
    snprintf(label, sizeof label, "%s %s %s cells", what, s->kernel, accum);
    const double worst_cells = worst_error(label, s, ref, accum, cells.force, cells.potential);
    snprintf(label, sizeof label, "%s %s %s all-pairs", what, s->kernel, accum);
    const double worst_pairs =
        fixed64 ? worst_error(label, s, ref, accum, pairs.force, pairs.potential) : 0.0;
    char pairs_error[32] = "-";
    if (fixed64)
        snprintf(pairs_error, sizeof pairs_error, "%.3f", worst_pairs);
    fprintf(stderr,
            "  %-24s %-7s N=%5zu grid %3dx%dx%d capacity %3d resizes %zu: worst error / bound: "
            "cells %.3f, all-pairs %s; pairs examined %.1f per particle (%.1f within rc); "
            "%.1f s\n",
            what, accum, s->n, variant.cell_grid[0], variant.cell_grid[1], variant.cell_grid[2],
            variant.cell_capacity, variant.cell_resizes, worst_cells, pairs_error,
            (double)variant.pairs_examined / (double)s->n, (double)ref->within / (double)s->n,
            fk__now() - started);
    if (worst_cells > 1 || worst_pairs > 1)
        fail_msg("%s %s: worst error %.3g (cells), %.3g (all-pairs) times the bound", what, accum,
                 worst_cells, worst_pairs);
    if (fixed64 && memcmp(cells.packed, pairs.packed, 8 * s->n * sizeof(uint32_t)) != 0) {
        for (size_t w = 0; w < 8 * s->n; ++w)
            if (cells.packed[w] != pairs.packed[w])
                fail_msg("%s fixed64: cells and all-pairs differ at particle %zu component %zu",
                         what, w / 8, (w % 8) / 2);
    }
    /* Every pair within the cutoff (and each particle with itself) is examined; far fewer than
     * N^2 once the grid has more than three cells per side. */
    assert_true(variant.pairs_examined >= ref->within + s->n);
    assert_true(variant.pairs_examined <= (uint64_t)s->n * s->n);
    assert_int_equal(variant.cell_rebuilds, 1);
    free_outputs(&cells);
    free_outputs(&pairs);
    return variant;
}

static const char *const main_accums[] = {"float", "double", "fixed64"};
static const char *const float_fixed64[] = {"float", "fixed64"};

/* ---------------------------------------------------------------------------------------------- */
/* Tests */

/* A jittered lattice at density ~0.8 in open space: every accumulator of main_accums. */
static void test_uniform_open(void **state)
{
    (void)state;
    test_system s;
    fk_test_system_alloc(&s, "lj", 1331, &rng);
    fk_test_system_lattice(&s, 0, s.n, 11, 1.08, (double[3]){0.5, -3.0, 7.0}, 0.2, &rng);
    reference ref = make_reference(&s);
    for (size_t a = 0; a < sizeof main_accums / sizeof main_accums[0]; ++a) {
        if (fk_accum_find(main_accums[a])->needs_fp64 &&
            !fk_test_device_has_fp64(fk_test_context)) {
            fprintf(stderr, "  SKIPPED %s: the device has no double precision\n", main_accums[a]);
            continue; /* refused by the library with a message (test_known_answer, test_device) */
        }
        const fk_variant v =
            check_system("uniform open", &s, &ref, main_accums[a], (eval_options){0});
        assert_true(v.cell_grid[0] >= 4 && v.cell_grid[1] >= 4 && v.cell_grid[2] >= 4);
        assert_true(v.pairs_examined < (uint64_t)s.n * s.n / 2);
    }
    free_reference(&ref);
    fk_test_system_free(&s);
}

/* A periodic box filled at density ~0.8 (float and fixed64; double runs in open space); every
 * 7th particle is given one box length to the left or right of where it is (up to one box length
 * outside the box is accepted). */
static void test_uniform_periodic(void **state)
{
    (void)state;
    test_system s;
    fk_test_system_alloc(&s, "lj", 1728, &rng);
    const double spacing = 1.08, box = fk_test_quantize(12 * spacing);
    fk_test_system_lattice(&s, 0, s.n, 12, spacing,
                           (double[3]){0.5 * spacing, 0.5 * spacing, 0.5 * spacing}, 0.2, &rng);
    for (size_t i = 0; i < s.n; i += 7)
        s.position[3 * i + i % 3] += (i % 2 ? box : -box);
    for (int d = 0; d < 3; ++d)
        s.physics.box[d] = box;
    reference ref = make_reference(&s);
    for (size_t a = 0; a < sizeof float_fixed64 / sizeof float_fixed64[0]; ++a) {
        const fk_variant v =
            check_system("uniform periodic", &s, &ref, float_fixed64[a], (eval_options){0});
        assert_int_equal(v.cell_grid[0], 4); /* 12.96 / (2.5 + 0.3) */
        FK_ASSERT_NEAR(v.cell_size[0], box / 4, 1e-12);
    }
    /* The GPUs' loop (j-particles staged through local memory, barriers) with 2 placeholders per
     * work-item and 8 work-items: 16 per group, so cells span several groups. */
    const fk_variant v =
        check_system("periodic, local tiles", &s, &ref, "float",
                     (eval_options){.local_tiling = 1, .work_group_size = 8, .unroll_i = 2});
    assert_true(v.local_tiling && v.work_group_size == 8 && v.unroll_i == 2);
    free_reference(&ref);
    fk_test_system_free(&s);
}

/* Boxes of two cells and of one cell per side: each neighbour is visited once, minimum image
 * picks the image. */
static void test_small_boxes(void **state)
{
    (void)state;
    const double boxes[] = {6.0, 5.0};
    const int cells_per_side[] = {2, 1};
    for (size_t b = 0; b < 2; ++b) {
        test_system s;
        fk_test_system_alloc(&s, "lj", 125, &rng);
        fk_test_system_lattice(&s, 0, s.n, 5, boxes[b] / 5, (double[3]){0.3, 0.3, 0.3}, 0.2, &rng);
        for (int d = 0; d < 3; ++d)
            s.physics.box[d] = boxes[b];
        reference ref = make_reference(&s);
        const char *accums[] = {"float", "fixed64"};
        for (size_t a = 0; a < 2; ++a) {
            const fk_variant v = check_system("small box", &s, &ref, accums[a], (eval_options){0});
            assert_int_equal(v.cell_grid[0], cells_per_side[b]);
            assert_int_equal(v.cell_grid[2], cells_per_side[b]);
        }
        free_reference(&ref);
        fk_test_system_free(&s);
    }
}

/* Periodic box 12, cutoff 2.5 + skin 0.5: three cells of side exactly 4. Particles on the integer
 * lattice, so a third of every coordinate lies exactly on a cell boundary (0, 4, 8), some at
 * exactly L (= 0 modulo the box), and pairs at exactly 1, 2 and sqrt(5) etc. */
static void test_cell_boundaries(void **state)
{
    (void)state;
    test_system s;
    fk_test_system_alloc(&s, "lj", 1728, &rng);
    fk_test_system_lattice(&s, 0, s.n, 12, 1.0, (double[3]){0, 0, 0}, 0.0, &rng);
    for (size_t i = 0; i < s.n; ++i)
        for (int d = 0; d < 3; ++d)
            if (s.position[3 * i + d] == 0.0 && (i + (size_t)d) % 2)
                s.position[3 * i + d] = 12.0;
    for (int d = 0; d < 3; ++d)
        s.physics.box[d] = 12.0;
    reference ref = make_reference(&s);
    const char *accums[] = {"float", "fixed64"};
    for (size_t a = 0; a < 2; ++a) {
        const fk_variant v =
            check_system("on cell boundaries", &s, &ref, accums[a], (eval_options){.skin = 0.5});
        for (int d = 0; d < 3; ++d) {
            assert_int_equal(v.cell_grid[d], 3);
            FK_ASSERT_NEAR(v.cell_size[d], 4.0, 0.0);
        }
    }
    free_reference(&ref);
    fk_test_system_free(&s);
}

/* Most particles in a few cells: 343 on a dense lattice (spacing 0.62) inside a 4.3-wide cube,
 * 169 spread over a 30-wide region (mostly empty cells). The initial placeholders (twice the mean
 * occupancy) overflow; the build grows them and bins again. */
static void test_clustered(void **state)
{
    (void)state;
    test_system s;
    fk_test_system_alloc(&s, "lj", 512, &rng);
    fk_test_system_lattice(&s, 0, 343, 7, 0.62, (double[3]){6.4, 6.4, 6.4}, 0.1, &rng);
    fk_test_system_lattice(&s, 343, 169, 6, 5.5, (double[3]){0.0, 0.0, 0.0}, 0.1, &rng);
    reference ref = make_reference(&s);
    for (size_t a = 0; a < sizeof float_fixed64 / sizeof float_fixed64[0]; ++a) {
        const fk_variant v =
            check_system("clustered", &s, &ref, float_fixed64[a], (eval_options){0});
        assert_true(v.cell_resizes >= 1);
        assert_true(v.cell_capacity >= 40);
    }
    free_reference(&ref);
    fk_test_system_free(&s);
}

/* Two clusters 40 apart and one particle 900 away: the grid would have millions of cells; it is
 * capped (larger cells), and most cells are empty. */
static void test_empty_cells_and_outlier(void **state)
{
    (void)state;
    test_system s;
    fk_test_system_alloc(&s, "lj", 433, &rng);
    fk_test_system_lattice(&s, 0, 216, 6, 1.1, (double[3]){0.0, 0.0, 0.0}, 0.2, &rng);
    fk_test_system_lattice(&s, 216, 216, 6, 1.1, (double[3]){40.0, 3.0, -5.0}, 0.2, &rng);
    s.position[3 * 432 + 0] = -900.0;
    s.position[3 * 432 + 1] = 17.25;
    s.position[3 * 432 + 2] = 3.5;
    reference ref = make_reference(&s);
    const fk_variant v = check_system("empty cells", &s, &ref, "float", (eval_options){0});
    const double cell_count = (double)v.cell_grid[0] * v.cell_grid[1] * v.cell_grid[2];
    assert_true(cell_count <= 2.0 * (double)s.n + 64.0);
    assert_true(v.cell_size[0] >= 2.8);
    free_reference(&ref);
    fk_test_system_free(&s);
}

/* Exclusions on the fly and afterwards: neighbouring pairs (within the cutoff) and far pairs. */
static void test_exclusions(void **state)
{
    (void)state;
    test_system s;
    fk_test_system_alloc(&s, "lj", 512, &rng);
    fk_test_system_lattice(&s, 0, s.n, 8, 1.1, (double[3]){0, 0, 0}, 0.2, &rng);
    s.exclusion_count = 120;
    s.exclusions = malloc(2 * s.exclusion_count * sizeof(size_t));
    assert_non_null(s.exclusions);
    for (size_t k = 0; k < s.exclusion_count; ++k) {
        const size_t i = 4 * k + (size_t)(k % 3);
        s.exclusions[2 * k] = i;
        s.exclusions[2 * k + 1] = k % 4 == 3 ? (i + 300) % s.n : i + 1; /* near, or far */
    }
    reference ref = make_reference(&s);
    check_system("exclusions afterwards", &s, &ref, "float",
                 (eval_options){.exclusion_mode = FK_EXCLUDE_AFTERWARDS});
    check_system("exclusions on the fly", &s, &ref, "float",
                 (eval_options){.exclusion_mode = FK_EXCLUDE_ON_THE_FLY});
    free_reference(&ref);
    fk_test_system_free(&s);
}

/* The other short-range laws with a cutoff: ljc_constant (shifted Coulomb) in a periodic box and
 * buck in open space, charges +-[0.2, 1]. */
static void test_other_laws(void **state)
{
    (void)state;
    test_system s;
    fk_test_system_alloc(&s, "ljc_constant", 729, &rng);
    const double box = fk_test_quantize(9 * 1.1);
    fk_test_system_lattice(&s, 0, s.n, 9, 1.1, (double[3]){0.3, 0.3, 0.3}, 0.2, &rng);
    s.physics.cutoff = 3.0;
    s.physics.coulomb = 1.5;
    for (int d = 0; d < 3; ++d)
        s.physics.box[d] = box;
    reference ref = make_reference(&s);
    check_system("ljc_constant periodic", &s, &ref, "float", (eval_options){0});
    free_reference(&ref);
    fk_test_system_free(&s);

    fk_test_system_alloc(&s, "buck", 512, &rng);
    fk_test_system_lattice(&s, 0, s.n, 8, 1.2, (double[3]){-4, -4, -4}, 0.2, &rng);
    s.physics.cutoff = 3.5;
    ref = make_reference(&s);
    check_system("buck open", &s, &ref, "float", (eval_options){0});
    free_reference(&ref);
    fk_test_system_free(&s);
}

/* Accumulators that take LARGE from the data (the bound pre-pass runs through the cell loop). */
static void test_bound_accumulators(void **state)
{
    (void)state;
    test_system s;
    fk_test_system_alloc(&s, "lj", 343, &rng);
    fk_test_system_lattice(&s, 0, s.n, 7, 1.1, (double[3]){0, 0, 0}, 0.2, &rng);
    reference ref = make_reference(&s);
    check_system("bound pre-pass", &s, &ref, "narumi", (eval_options){0});
    free_reference(&ref);
    fk_test_system_free(&s);
}

/* A particle given one box length further (the caller rewrapped it into the box, or out of it)
 * has not moved: the displacement check measures with the minimum image, so neither a small move
 * nor the rewrap rebuilds the cells, and the forces stay right; a move of skin across the boundary
 * does rebuild. Runs with the host's check and, a second time, the device's. */
static void test_wrap(void **state)
{
    (void)state;
    test_system s;
    fk_test_system_alloc(&s, "lj", 729, &rng);
    const double box = fk_test_quantize(9 * 1.1);
    fk_test_system_lattice(&s, 0, s.n, 9, 1.1, (double[3]){0.55, 0.55, 0.55}, 0.15, &rng);
    s.physics.cutoff = 2.0; /* default skin 0.24 */
    for (int d = 0; d < 3; ++d)
        s.physics.box[d] = box;
    fk_eval *eval = make_eval(&s, "float", (eval_options){.algorithm = FK_ALGORITHM_CELLS});
    const fk_particles particles = fk_test_system_view(&s);
    expect_ok(fk_eval_set_particles(eval, &particles), "set_particles");
    outputs out = make_outputs(s.n);
    for (int step = 0; step < 3; ++step) {
        /* a small move of everyone, and particles 10, 20, 30 wrapped by one box length */
        for (size_t i = 0; i < 3 * s.n; ++i)
            s.position[i] = fk_test_quantize(s.position[i] + 0.01 * (step % 2 ? 1 : -1));
        s.position[3 * (10 * (size_t)step + 10)] += box;
        s.position[3 * (10 * (size_t)step + 20) + 1] -= box;
        expect_ok(fk_eval_update_positions(eval, s.position, NULL), "update_positions");
        fk_variant v;
        fk_eval_get_variant(eval, &v);
        assert_int_equal(v.cell_rebuilds, 1);
        reference ref = make_reference(&s);
        compute_read(eval, s.n, &out);
        const double worst = worst_error("wrap", &s, &ref, "float", out.force, out.potential);
        free_reference(&ref);
        if (worst > 1)
            fail_msg("step %d: worst error %.3g times the bound", step, worst);
    }
    s.position[3 * 40 + 2] += box + 0.2; /* across the boundary and 0.2 on: past skin / 2 */
    expect_ok(fk_eval_update_positions(eval, s.position, NULL), "update_positions");
    fk_variant v;
    fk_eval_get_variant(eval, &v);
    assert_int_equal(v.cell_rebuilds, 2);
    free_outputs(&out);
    fk_eval_destroy(eval);
    fk_test_system_free(&s);
}

/* As test_wrap, with the wraps along z: the displacement check takes the minimum image on every
 * axis, so a particle wrapped by one box length in z has hardly moved and nothing is rebuilt (a
 * check without z's image would rebuild at every such step: forces still right, the count not).
 * Run both ways: the host's check (src/core/loops/cell_grid.c) and the device's
 * (cl/cells_build.cl). */
static void test_wrap_z(void **state)
{
    (void)state;
    test_system s;
    fk_test_system_alloc(&s, "lj", 729, &rng);
    const double box = fk_test_quantize(9 * 1.1);
    fk_test_system_lattice(&s, 0, s.n, 9, 1.1, (double[3]){0.55, 0.55, 0.55}, 0.15, &rng);
    s.physics.cutoff = 2.0; /* default skin 0.24 */
    for (int d = 0; d < 3; ++d)
        s.physics.box[d] = box;
    fk_eval *eval = make_eval(&s, "float", (eval_options){.algorithm = FK_ALGORITHM_CELLS});
    const fk_particles particles = fk_test_system_view(&s);
    expect_ok(fk_eval_set_particles(eval, &particles), "set_particles");
    outputs out = make_outputs(s.n);
    for (int step = 0; step < 3; ++step) {
        for (size_t i = 0; i < 3 * s.n; ++i)
            s.position[i] = fk_test_quantize(s.position[i] + 0.01 * (step % 2 ? 1 : -1));
        s.position[3 * (10 * (size_t)step + 10) + 2] += box;
        s.position[3 * (10 * (size_t)step + 20) + 2] -= box;
        expect_ok(fk_eval_update_positions(eval, s.position, NULL), "update_positions");
        fk_variant v;
        fk_eval_get_variant(eval, &v);
        if (v.cell_rebuilds != 1)
            fail_msg("step %d: %zu cell rebuilds after wraps in z (1 expected: the first build)",
                     step, v.cell_rebuilds);
        reference ref = make_reference(&s);
        compute_read(eval, s.n, &out);
        const double worst = worst_error("wrap z", &s, &ref, "float", out.force, out.potential);
        free_reference(&ref);
        if (worst > 1)
            fail_msg("step %d: worst error %.3g times the bound", step, worst);
    }
    free_outputs(&out);
    fk_eval_destroy(eval);
    fk_test_system_free(&s);
}

/* The skin: cutoff 2, default skin 0.24, 30 steps of small random moves (each coordinate by at
 * most 0.02, so no particle can move skin / 2 = 0.12 in the first three steps), alternately
 * through set_particles and update_positions; every third step checked against the reference
 * (float), every step against all-pairs bit for bit (fixed64, whose bound pre-pass brings the
 * cells up to date). Rebuilds happen only when
 * the host-computed largest displacement since the last rebuild exceeds skin / 2 (ambiguous
 * steps within 1% of the threshold excepted). Then one particle jumps by 1: exactly one more
 * rebuild. Without a skin, every new position set rebuilds. */
static void test_skin(void **state)
{
    (void)state;
    test_system s;
    fk_test_system_alloc(&s, "lj", 729, &rng);
    const double box = fk_test_quantize(9 * 1.1);
    fk_test_system_lattice(&s, 0, s.n, 9, 1.1, (double[3]){0.55, 0.55, 0.55}, 0.15, &rng);
    s.physics.cutoff = 2.0; /* default skin 0.24: 4 cells of 2.475 per side */
    for (int d = 0; d < 3; ++d)
        s.physics.box[d] = box;
    fk_eval *cells_float = make_eval(&s, "float", (eval_options){.algorithm = FK_ALGORITHM_CELLS});
    /* fixed64 cells = all-pairs bit for bit is a reproducible-mode promise */
    fk_eval *cells_fixed = make_eval(
        &s, "fixed64", (eval_options){.algorithm = FK_ALGORITHM_CELLS, .reproducible = 1});
    fk_eval *pairs_fixed = make_eval(&s, "fixed64", (eval_options){.reproducible = 1});
    fk_eval *no_skin =
        make_eval(&s, "float", (eval_options){.algorithm = FK_ALGORITHM_CELLS, .skin = -1});
    fk_eval *evals[] = {cells_float, cells_fixed, pairs_fixed, no_skin};
    outputs out = make_outputs(s.n), fixed_cells = make_outputs(s.n),
            fixed_pairs = make_outputs(s.n);
    double *built_at = malloc(3 * s.n * sizeof(double));
    assert_non_null(built_at);
    memcpy(built_at, s.position, 3 * s.n * sizeof(double));
    const double half_skin = 0.5 * 0.12 * 2.0;
    size_t rebuilds = 0, ambiguous = 0;
    const int steps = 30;
    for (int step = 0; step <= steps + 1; ++step) {
        if (step > 0 && step <= steps) {
            for (size_t i = 0; i < 3 * s.n; ++i)
                s.position[i] = fk_test_quantize(s.position[i] + uniform(-0.02, 0.02));
        } else if (step == steps + 1) {
            s.position[3 * 123] = fk_test_quantize(s.position[3 * 123] + 1.0);
        }
        double largest = 0;
        for (size_t i = 0; i < s.n; ++i) {
            double d2 = 0;
            for (int d = 0; d < 3; ++d) {
                const double x = s.position[3 * i + d] - built_at[3 * i + d];
                d2 += x * x;
            }
            largest = fmax(largest, sqrt(d2));
        }
        const int should = step == 0 || largest > half_skin;
        const int ambiguous_step = step > 0 && fabs(largest - half_skin) < 0.01 * half_skin;
        ambiguous += (size_t)ambiguous_step;
        const fk_particles particles = fk_test_system_view(&s);
        for (size_t e = 0; e < 4; ++e) {
            if (step % 2 == 0)
                expect_ok(fk_eval_set_particles(evals[e], &particles), "set_particles");
            else
                expect_ok(fk_eval_update_positions(evals[e], s.position, NULL), "update_positions");
        }
        fk_variant v;
        fk_eval_get_variant(cells_float, &v);
        const int did = v.cell_rebuilds > rebuilds;
        assert_true(v.cell_rebuilds <= rebuilds + 1);
        rebuilds = v.cell_rebuilds;
        if (did) /* float and double may disagree within 1% of skin / 2: follow the device */
            memcpy(built_at, s.position, 3 * s.n * sizeof(double));
        if (step <= 3)
            assert_int_equal(v.cell_rebuilds, 1);
        assert_int_equal(v.cell_grid[0], 4);
        if (!ambiguous_step && did != should)
            fail_msg("step %d: rebuilt %d, expected %d (largest displacement since the last "
                     "build %.4f, skin/2 %.4f)",
                     step, did, should, largest, half_skin);
        if (step == steps + 1)
            assert_true(did);
        fk_variant fixed_variant;
        fk_eval_get_variant(cells_fixed, &fixed_variant);
        assert_int_equal(fixed_variant.cell_rebuilds, v.cell_rebuilds);
        fk_eval_get_variant(no_skin, &v);
        assert_int_equal(v.cell_rebuilds, (size_t)step + 1);

        compute_read(cells_fixed, s.n, &fixed_cells);
        compute_read(pairs_fixed, s.n, &fixed_pairs);
        if (memcmp(fixed_cells.packed, fixed_pairs.packed, 8 * s.n * sizeof(uint32_t)) != 0)
            fail_msg("step %d: fixed64 cells and all-pairs differ", step);
        if (step % 3 == 0 || step > steps) {
            reference ref = make_reference(&s);
            compute_read(cells_float, s.n, &out);
            double worst = worst_error("skin", &s, &ref, "float", out.force, out.potential);
            compute_read(no_skin, s.n, &out);
            worst =
                fmax(worst, worst_error("no skin", &s, &ref, "float", out.force, out.potential));
            free_reference(&ref);
            if (worst > 1)
                fail_msg("step %d: worst error %.3g times the bound", step, worst);
        }
    }
    fk_variant v;
    fk_eval_get_variant(cells_float, &v);
    fprintf(stderr, "  skin: %d steps, %zu rebuilds (%zu steps within 1%% of skin/2)\n", steps + 1,
            v.cell_rebuilds, ambiguous);
    assert_true(v.cell_rebuilds >= 3 && v.cell_rebuilds <= (size_t)steps / 2);
    for (size_t e = 0; e < 4; ++e)
        fk_eval_destroy(evals[e]);
    free(built_at);
    free_outputs(&out);
    free_outputs(&fixed_cells);
    free_outputs(&fixed_pairs);
    fk_test_system_free(&s);
}

static void expect_failure(fk_status status, fk_status expected, const char *needle)
{
    if (status != expected)
        fail_msg("expected %s, got %s: %s", fk_status_string(expected), fk_status_string(status),
                 fk_context_last_error(fk_test_context));
    if (!strstr(fk_context_last_error(fk_test_context), needle))
        fail_msg("message '%s' does not say '%s'", fk_context_last_error(fk_test_context), needle);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    fk_eval *eval = NULL;
    fk_eval_config config = {.kernel = "ga", .algorithm = FK_ALGORITHM_CELLS};
    expect_failure(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT,
                   "gravity");
    assert_null(eval);
    config = (fk_eval_config){.kernel = "ljc_constant", .algorithm = FK_ALGORITHM_CELLS};
    expect_failure(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT,
                   "cutoff");
    assert_null(eval);
    config = (fk_eval_config){.kernel = "lj", .algorithm = FK_ALGORITHM_CELLS, .skin = NAN};
    expect_failure(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT,
                   "skin");
    assert_null(eval);

    /* Periodic box 10: particle 17 at x = 20 (two box lengths) is named; -10 and 19.9 are fine. */
    test_system s;
    fk_test_system_alloc(&s, "lj", 64, &rng);
    fk_test_system_lattice(&s, 0, s.n, 4, 2.5, (double[3]){1, 1, 1}, 0.1, &rng);
    for (int d = 0; d < 3; ++d)
        s.physics.box[d] = 10.0;
    s.position[3 * 5] = -10.0;
    s.position[3 * 9 + 1] = 19.9;
    eval = make_eval(&s, "float", (eval_options){.algorithm = FK_ALGORITHM_CELLS});
    fk_particles particles = fk_test_system_view(&s);
    expect_ok(fk_eval_set_particles(eval, &particles), "set_particles within one box length");
    s.position[3 * 17 + 2] = 20.0;
    expect_failure(fk_eval_set_particles(eval, &particles), FK_ERR_INVALID_INPUT, "particle 17");
    expect_failure(fk_eval_compute(eval, NULL), FK_ERR_STATE, "set_particles");
    s.position[3 * 17 + 2] = 3.0;
    expect_ok(fk_eval_set_particles(eval, &particles), "set_particles again");
    s.position[3 * 40] = -25.0;
    expect_failure(fk_eval_update_positions(eval, s.position, NULL), FK_ERR_INVALID_INPUT,
                   "particle 40");
    fk_eval_destroy(eval);
    fk_test_system_free(&s);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_uniform_open),
        cmocka_unit_test(test_uniform_periodic),
        cmocka_unit_test(test_small_boxes),
        cmocka_unit_test(test_cell_boundaries),
        cmocka_unit_test(test_clustered),
        cmocka_unit_test(test_empty_cells_and_outlier),
        cmocka_unit_test(test_exclusions),
        cmocka_unit_test(test_other_laws),
        cmocka_unit_test(test_bound_accumulators),
        cmocka_unit_test(test_skin),
        cmocka_unit_test(test_wrap),
        cmocka_unit_test(test_wrap_z),
        cmocka_unit_test_setup_teardown(test_uniform_open, fk_test_device_checks_on,
                                        fk_test_device_checks_off),
        cmocka_unit_test_setup_teardown(test_skin, fk_test_device_checks_on,
                                        fk_test_device_checks_off),
        cmocka_unit_test_setup_teardown(test_bad_inputs, fk_test_device_checks_on,
                                        fk_test_device_checks_off),
        cmocka_unit_test_setup_teardown(test_wrap, fk_test_device_checks_on,
                                        fk_test_device_checks_off),
        cmocka_unit_test_setup_teardown(test_wrap_z, fk_test_device_checks_on,
                                        fk_test_device_checks_off),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
