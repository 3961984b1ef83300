/*
 * The neighbour-list algorithm (cl/neighbors.cl, cl/neighbors_build.cl,
 * src/core/loops/neighbors.c): forces and potentials against the double-precision host reference
 * (fk_reference_forces, same cutoff) on fresh random inputs, every accumulator, each held to its
 * own error model (fk_accum_info.error, as tests/test_kernels.c does); half lists for the
 * accumulators with Newton's third law and full lists for the others, told apart by the pairs each
 * evaluates; fixed64 bit for bit equal to the cell and all-pairs loops in reproducible mode (the
 * promise of docs/precision.md); lists that never miss a pair: pairs that were just inside the list
 * radius at the build and move into the cutoff by moves just under skin / 2 (no rebuild, still
 * exact), pairs just outside it that move in by moves just over skin / 2 (a rebuild, counted, and
 * exact); clustered particles (cells overflow their placeholders, lists of hundreds), boxes of one
 * and two cells per side, open boundaries, exclusions both ways, and bad inputs.
 *
 * Coordinates are multiples of 2^-16 below 64, so differences of positions are exact in float; the
 * error left is the pair arithmetic's rounding and the sum's, bounded per particle by the sum of
 * the magnitudes of the parts of its pair terms (as in test_cells.c). One evaluation serves many
 * checks (each new program costs a compile on POCL); --full adds wider sweeps.
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

static fk_context *context;
static fk_test_rng rng;

static int setup(void **state)
{
    (void)state;
    if (fk_test_open_context(&context) != 0)
        return -1;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0x4e16b02ull);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fk_context_destroy(context);
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Systems */

typedef fk_test_system test_system; /* test_support.h */

static double uniform(double low, double high)
{
    return low + (high - low) * fk_test_rng_uniform(&rng);
}

/* The shared system with lj's cutoff, which every system here uses. */
static void alloc_system(test_system *s, const char *kernel, size_t n)
{
    fk_test_system_alloc(s, kernel, n, &rng);
    s->physics.cutoff = 2.5;
}

static void set_box(test_system *s, double box)
{
    for (int d = 0; d < 3; ++d)
        s->physics.box[d] = box;
}

/* ---------------------------------------------------------------------------------------------- */
/* The reference and the error scale */

/* Sum of |parts| of f(r) and of U(r), unshifted, epsilon = sigma = 1. */
static void pair_parts(const test_system *s, double qq, double r, double *force, double *energy)
{
    const double k = s->physics.coulomb ? s->physics.coulomb : 1.0;
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
    size_t *terms;                      /* per particle: partners closer than the cutoff */
    size_t within;                      /* ordered pairs closer than the cutoff, not excluded */
    size_t within_inner, within_outer;  /* ordered pairs closer than 0.999 and 1.001 rc + skin */
} reference;

static int excluded(const test_system *s, size_t i, size_t j)
{
    for (size_t k = 0; k < s->exclusion_count; ++k)
        if ((s->exclusions[2 * k] == i && s->exclusions[2 * k + 1] == j) ||
            (s->exclusions[2 * k] == j && s->exclusions[2 * k + 1] == i))
            return 1;
    return 0;
}

/* skin: the evaluation's (for the pair counts near the list radius). */
static reference make_reference(const test_system *s, double skin)
{
    const size_t n = s->n;
    reference ref = {malloc(3 * n * sizeof(double)),
                     malloc(n * sizeof(double)),
                     calloc(n, sizeof(double)),
                     calloc(n, sizeof(double)),
                     calloc(n, sizeof(size_t)),
                     0,
                     0,
                     0};
    assert_true(ref.force && ref.potential && ref.force_scale && ref.energy_scale && ref.terms);
    fk_physics physics = s->physics;
    physics.exclusions = s->exclusions;
    physics.exclusion_count = s->exclusion_count;
    const fk_particles particles = fk_test_system_view(s);
    fk_status status =
        fk_reference_forces(s->kernel, &particles, &physics, ref.force, ref.potential);
    if (status != FK_OK)
        fail_msg("reference %s N=%zu: %s", s->kernel, n, fk_status_string(status));
    const double rc = s->physics.cutoff, reach = rc + skin;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
            if (i == j)
                continue;
            const double r = fk_test_system_distance(s, i, j);
            ref.within_inner += r < 0.999 * reach;
            ref.within_outer += r < 1.001 * reach;
            if (r >= rc)
                continue;
            /* Excluded pairs count in the scale: excluded afterwards, the sums pass through their
             * terms (and on the fly the bound is a little looser). */
            ref.within += !excluded(s, i, j);
            ref.terms[i]++;
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
    free(ref->terms);
}

/* The allowed error of a particle with `terms` pair terms, from the accumulator's error model
 * (no accumulator named here): 48 float ulp of the scale for the pair term itself (rsqrt is not
 * correctly rounded, and r^-13 multiplies its error; test_cells.c's allowance), plus the model's
 * bound on the sum, held to the typical growth of a float sum where that is tighter (as
 * test_kernels.c); the global part (fixed-point resolution) relative to the largest scale, at the
 * range the evaluation chose for n particles. */
static void tolerance(const char *accum, size_t terms, size_t n, double *relative, double *global)
{
    const double ulp = 0x1p-24;
    const fk_accum_error_model *model = &fk_accum_find(accum)->error;
    const double typical = ulp * (2.0 * sqrt((double)terms) + 0.02 * (double)terms);
    const double bound = model->relative + (double)(terms > 0 ? terms - 1 : 0) * model->growth;
    *relative = 48.0 * ulp + (model->bounded ? fmin(bound, typical) : typical);
    *global = (double)terms * model->global * (model->range_grows_with_n ? (double)n : 1.0);
}

/* Worst error in units of the allowed error; fails on non-finite values. */
static double worst_error(const char *what, const test_system *s, const reference *ref,
                          const char *accum, const double *force, const double *potential)
{
    double largest = 0, worst = 0;
    for (size_t i = 0; i < s->n; ++i)
        largest = fmax(largest, fmax(ref->force_scale[i], ref->energy_scale[i]));
    for (size_t i = 0; i < s->n; ++i) {
        double relative, global;
        tolerance(accum, ref->terms[i], s->n, &relative, &global);
        for (int k = 0; k <= 3; ++k) {
            const double value = k < 3 ? force[3 * i + k] : potential[i];
            const double want = k < 3 ? ref->force[3 * i + k] : ref->potential[i];
            if (!isfinite(value))
                fail_msg("%s: particle %zu component %d is %g", what, i, k, value);
            const double scale = k < 3 ? ref->force_scale[i] : ref->energy_scale[i];
            const double allowed = relative * scale + global * largest;
            const double error = allowed > 0 ? fabs(value - want) / allowed : fabs(value - want);
            worst = fmax(worst, error);
        }
    }
    return worst;
}

/* ---------------------------------------------------------------------------------------------- */
/* Evaluations */

typedef struct eval_options {
    int algorithm; /* 0 here means neighbors (the loop under test) */
    double skin;
    int exclusion_mode;
    int work_group_size, unroll_j;
    int reproducible;
    int lists; /* fk_neighbor_lists */
    int lanes; /* fk_eval_config.lanes: 0 automatic, -1 off, 8 or 16 */
    int split; /* fk_eval_config.j_splits: work-items per particle (full lists, scalar walk) */
} eval_options;

static fk_algorithm algorithm_of(eval_options o)
{
    return o.algorithm ? (fk_algorithm)o.algorithm : FK_ALGORITHM_NEIGHBORS;
}

/* The evaluation, or NULL with the status in *status (the context's last error says why). */
static fk_eval *try_make_eval(const test_system *s, const char *accum, eval_options o,
                              fk_status *status)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = s->kernel;
    config.accum = accum;
    config.potential = 1;
    config.cutoff = s->physics.cutoff;
    config.coulomb = s->physics.coulomb;
    config.exclusion_mode = o.exclusion_mode;
    config.reproducible = o.reproducible;
    config.algorithm = (int)algorithm_of(o);
    config.skin = o.skin;
    config.work_group_size = o.work_group_size;
    config.unroll_i = o.unroll_j ? 1 : 0;
    config.unroll_j = o.unroll_j;
    config.neighbor_lists = o.lists;
    config.lanes = o.lanes;
    config.j_splits = o.split;
    memcpy(config.box, s->physics.box, sizeof config.box);
    fk_eval *eval = NULL;
    *status = fk_eval_create(context, &config, &eval);
    if (*status != FK_OK)
        return NULL;
    if (fk_test_device_checks)
        fk__eval_set_host_check_count(eval, 0);
    if (s->exclusion_count)
        assert_int_equal(fk_eval_set_exclusions(eval, s->exclusions, s->exclusion_count), FK_OK);
    return eval;
}

static fk_eval *make_eval(const test_system *s, const char *accum, eval_options o)
{
    fk_status status;
    fk_eval *eval = try_make_eval(s, accum, o, &status);
    if (!eval)
        fail_msg("create %s %s %s: %s: %s", s->kernel, accum, fk_algorithm_name(algorithm_of(o)),
                 fk_status_string(status), fk_context_last_error(context));
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
        fail_msg("%s: %s: %s", what, fk_status_string(status), fk_context_last_error(context));
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

static void set_particles(fk_eval *eval, const test_system *s)
{
    const fk_particles particles = fk_test_system_view(s);
    expect_ok(fk_eval_set_particles(eval, &particles), "set_particles");
}

static fk_variant variant_of(const fk_eval *eval)
{
    fk_variant v;
    assert_int_equal(fk_eval_get_variant(eval, &v), FK_OK);
    return v;
}

/* The lane form's width as fk_eval_config.lanes documents it for the neighbour lists: automatic
 * on CPUs, at the native float vector width, in periodic boxes, for lj and ljc_constant with the
 * accumulators that have lane forms (float, double, narumi; fixed64 with fp64), not in
 * reproducible mode and not with an explicit partner unrolling; 0: the scalar walk. */
static int expected_lanes(const test_system *s, const char *accum, eval_options o)
{
    const char *kernel = s->kernel;
    const fk_device_info *device = fk_context_device(context);
    const int law = strcmp(kernel, "lj") == 0 || strcmp(kernel, "ljc_constant") == 0;
    const int sums = strcmp(accum, "float") == 0 || strcmp(accum, "double") == 0 ||
                     strcmp(accum, "narumi") == 0 ||
                     (strcmp(accum, "fixed64") == 0 && device->fp64);
    if (o.lanes < 0 || o.reproducible || !law || !sums)
        return 0;
    if (o.lanes > 0)
        return o.lanes;
    const int periodic = s->physics.box[0] > 0;
    return device->type == FK_DEVICE_CPU && !o.unroll_j && periodic ? fk__device_lane_width(context)
                                                                    : 0;
}

/* Whether the lists are half lists, as fk_neighbor_lists documents it: asked for, or automatic and
 * then half lists on CPUs for the accumulators the symmetric loop takes (Newton's third law),
 * unless the lane form runs (full lists: faster there). */
static int half_lists(const test_system *s, const char *accum, eval_options o)
{
    const int allowed = strcmp(accum, "float") == 0 || strcmp(accum, "double") == 0 ||
                        strcmp(accum, "fixed64") == 0;
    if (o.lists != FK_NEIGHBOR_LISTS_AUTO)
        return o.lists == FK_NEIGHBOR_LISTS_HALF;
    return allowed && fk_context_device(context)->type != FK_DEVICE_GPU &&
           !expected_lanes(s, accum, o);
}

/* The pairs the lists hold: every pair within the cutoff at least; about the pairs within
 * cutoff + skin (the list radius is that plus a rounding margin), once per unordered pair for half
 * lists, once per particle for full ones. */
static void check_pairs(const char *what, const fk_variant *v, const reference *ref, int half)
{
    const uint64_t examined = v->pairs_examined * (half ? 2u : 1u);
    if (examined < ref->within_inner || examined > ref->within_outer || examined < ref->within)
        fail_msg("%s: %s lists hold %llu pairs; the pairs within 0.999 and 1.001 (rc + skin) "
                 "number %zu and %zu (ordered), %zu within rc",
                 what, half ? "half" : "full", (unsigned long long)v->pairs_examined,
                 ref->within_inner, ref->within_outer, ref->within);
}

/* The neighbour lists on one system with one accumulator against the reference, and their pair
 * count; returns the variant. */
static fk_variant check_system(const char *what, const test_system *s, const reference *ref,
                               const char *accum, eval_options o)
{
    outputs out = make_outputs(s->n);
    fk_eval *eval = make_eval(s, accum, o);
    set_particles(eval, s);
    compute_read(eval, s->n, &out);
    const fk_variant v = variant_of(eval);
    fk_eval_destroy(eval);
    char label[160];
    snprintf(label, sizeof label, "%s %s %s", what, s->kernel, accum);
    const double worst = worst_error(label, s, ref, accum, out.force, out.potential);
    fprintf(stderr,
            "  %-26s %-14s N=%5zu grid %2dx%2dx%2d: worst error / bound %.3f; %s lists, %.1f "
            "pairs per particle (%.1f within rc)\n",
            what, accum, s->n, v.cell_grid[0], v.cell_grid[1], v.cell_grid[2], worst,
            v.neighbor_half_lists ? "half" : "full", (double)v.pairs_examined / (double)s->n,
            (double)ref->within / (double)s->n);
    if (worst > 1)
        fail_msg("%s: worst error %.3g times the bound", label, worst);
    assert_int_equal(v.neighbor_half_lists, half_lists(s, accum, o));
    assert_int_equal(v.lanes, expected_lanes(s, accum, o));
    check_pairs(label, &v, ref, v.neighbor_half_lists);
    assert_int_equal(v.cell_rebuilds, 1);
    free_outputs(&out);
    return v;
}

/* fixed64 in reproducible mode: the neighbour lists, the cell loop and all-pairs give the same
 * integers (docs/precision.md, "Bit-identity promises"). */
static void check_bit_identity(const char *what, const test_system *s, const char *accum,
                               int with_cells)
{
    const fk_algorithm loops[] = {FK_ALGORITHM_NEIGHBORS, FK_ALGORITHM_ALL_PAIRS,
                                  FK_ALGORITHM_CELLS};
    outputs out[3];
    const size_t count = with_cells ? 3 : 2;
    for (size_t l = 0; l < count; ++l) {
        out[l] = make_outputs(s->n);
        fk_eval *eval =
            make_eval(s, accum, (eval_options){.algorithm = (int)loops[l], .reproducible = 1});
        set_particles(eval, s);
        compute_read(eval, s->n, &out[l]);
        fk_eval_destroy(eval);
    }
    for (size_t l = 1; l < count; ++l)
        for (size_t w = 0; w < 8 * s->n; ++w)
            if (out[0].packed[w] != out[l].packed[w])
                fail_msg("%s %s: neighbors and %s differ at particle %zu component %zu", what,
                         accum, fk_algorithm_name(loops[l]), w / 8, (w % 8) / 2);
    fprintf(stderr, "  %-26s %-14s bit for bit equal to all-pairs%s\n", what, accum,
            with_cells ? " and cells" : "");
    for (size_t l = 0; l < count; ++l)
        free_outputs(&out[l]);
}

/* ---------------------------------------------------------------------------------------------- */
/* Tests */

/* A periodic box at density ~0.8, partly filled (1,500 of 12^3 lattice sites: a denser and an
 * empty region), every 7th particle one box length outside the box: every accumulator the device
 * has (the default run; narrow sums and wide ones, half and full lists), with the potential. */
static void test_every_accumulator(void **state)
{
    (void)state;
    test_system s;
    alloc_system(&s, "lj", 1500);
    const double spacing = 1.08, box = fk_test_quantize(12 * spacing);
    fk_test_system_lattice(&s, 0, s.n, 12, spacing,
                           (double[3]){0.5 * spacing, 0.5 * spacing, 0.5 * spacing}, 0.2, &rng);
    for (size_t i = 0; i < s.n; i += 7)
        s.position[3 * i + i % 3] += (i % 2 ? box : -box);
    set_box(&s, box);
    reference ref = make_reference(&s, 0.3);
    for (size_t a = 0; fk_accum_at(a); ++a) {
        const fk_accum_info *accum = fk_accum_at(a);
        if (accum->needs_fp64 && !fk_context_device(context)->fp64)
            continue;
        const fk_variant v =
            check_system("periodic fluid", &s, &ref, accum->name, (eval_options){0});
        assert_int_equal(v.cell_grid[0], 4); /* 12.96 / (2.5 + 0.3) */
        FK_ASSERT_NEAR(v.cell_skin, 0.3, 1e-12);
    }
    free_reference(&ref);
    fk_test_system_free(&s);
}

/* Repeated computes on unchanged positions reuse the lists and give the same bits (float, half
 * lists, the i-side and j-side sums run in a fixed order; full lists, each particle's own); a new
 * set of the same positions does not rebuild either; shapes: work-group sizes that do not divide N,
 * partners not unrolled (half lists) and unrolled by 8 (full lists); the automatic shape and form
 * are every other test's. */
static void test_reuse_and_shapes(void **state)
{
    (void)state;
    test_system s;
    alloc_system(&s, "ljc_constant", 1000);
    fk_test_system_lattice(&s, 0, s.n, 10, 1.1, (double[3]){0.3, 0.3, 0.3}, 0.2, &rng);
    s.physics.cutoff = 3.0;
    s.physics.coulomb = 1.5;
    set_box(&s, fk_test_quantize(10 * 1.1));
    reference ref = make_reference(&s, 0.36);
    eval_options shapes[] = {
        {.work_group_size = 7, .unroll_j = 1, .lists = FK_NEIGHBOR_LISTS_HALF},
        {.work_group_size = 64, .unroll_j = 8, .lists = FK_NEIGHBOR_LISTS_FULL}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; ++k) {
        outputs first = make_outputs(s.n), again = make_outputs(s.n);
        fk_status status;
        fk_eval *eval = try_make_eval(&s, "float", shapes[k], &status);
        /* An explicit group larger than the built kernel allows is refused (Mesa's llvmpipe: 32
         * work-items for the list walk); the largest power of two below that fits still does
         * not divide N. */
        while (!eval && status == FK_ERR_UNSUPPORTED && shapes[k].work_group_size > 8 &&
               strstr(fk_context_last_error(context), "exceeds this kernel's limit")) {
            shapes[k].work_group_size /= 2;
            fprintf(stderr, "  note: %s; trying work-group %d\n", fk_context_last_error(context),
                    shapes[k].work_group_size);
            eval = try_make_eval(&s, "float", shapes[k], &status);
        }
        if (!eval)
            fail_msg("create wg %d: %s: %s", shapes[k].work_group_size, fk_status_string(status),
                     fk_context_last_error(context));
        set_particles(eval, &s);
        compute_read(eval, s.n, &first);
        compute_read(eval, s.n, &again);
        set_particles(eval, &s);
        compute_read(eval, s.n, &again);
        const fk_variant v = variant_of(eval);
        assert_int_equal(v.cell_rebuilds, 1);
        assert_int_equal(v.work_group_size, shapes[k].work_group_size);
        assert_int_equal(v.unroll_j, shapes[k].unroll_j);
        if (memcmp(first.packed, again.packed, 8 * s.n * sizeof(uint32_t)) != 0)
            fail_msg("work-group %d: a second compute on the same lists differs",
                     shapes[k].work_group_size);
        const double worst = worst_error("shapes", &s, &ref, "float", again.force, again.potential);
        fprintf(stderr, "  ljc_constant wg %2d unroll 1x%d: worst error / bound %.3f\n",
                v.work_group_size, v.unroll_j, worst);
        if (worst > 1)
            fail_msg("work-group %d: worst error %.3g times the bound", v.work_group_size, worst);
        assert_int_equal(v.neighbor_half_lists, half_lists(&s, "float", shapes[k]));
        check_pairs("shapes", &v, &ref, v.neighbor_half_lists);
        fk_eval_destroy(eval);
        free_outputs(&first);
        free_outputs(&again);
    }
    free_reference(&ref);
    fk_test_system_free(&s);
}

/* fixed64 in reproducible mode, bit for bit: the periodic fluid against cells and all-pairs; with
 * --full also narumi (order-independent too; full lists) against all-pairs. */
static void test_bit_identity(void **state)
{
    (void)state;
    test_system s;
    alloc_system(&s, "lj", 1000);
    const double spacing = 1.1, box = fk_test_quantize(10 * spacing);
    fk_test_system_lattice(&s, 0, s.n, 10, spacing,
                           (double[3]){0.5 * spacing, 0.5 * spacing, 0.5 * spacing}, 0.2, &rng);
    set_box(&s, box);
    check_bit_identity("periodic fluid", &s, "fixed64", 1);
    if (fk_test_full())
        check_bit_identity("periodic fluid", &s, "narumi", 0);
    fk_test_system_free(&s);
}

/* Half and full lists asked for explicitly (fk_eval_config.neighbor_lists), whatever the device's
 * automatic choice: float both ways against the reference; fixed64 in reproducible mode the same
 * integers both ways and as all-pairs (its sums are exact, so the form cannot matter); half lists
 * refused for an accumulator whose sums may not be merged, and a value out of range refused. */
static void test_list_forms(void **state)
{
    (void)state;
    test_system s;
    alloc_system(&s, "ljc_constant", 1000);
    fk_test_system_lattice(&s, 0, s.n, 10, 1.1, (double[3]){0.5, 0.5, 0.5}, 0.2, &rng);
    s.physics.coulomb = 1.0;
    set_box(&s, fk_test_quantize(10 * 1.1));
    reference ref = make_reference(&s, 0.3);
    const int forms[] = {FK_NEIGHBOR_LISTS_HALF, FK_NEIGHBOR_LISTS_FULL};
    outputs exact[2];
    for (size_t f = 0; f < 2; ++f) {
        const fk_variant v =
            check_system(forms[f] == FK_NEIGHBOR_LISTS_HALF ? "half lists" : "full lists", &s, &ref,
                         "float", (eval_options){.lists = forms[f]});
        assert_int_equal(v.neighbor_half_lists, forms[f] == FK_NEIGHBOR_LISTS_HALF);
        exact[f] = make_outputs(s.n);
        fk_eval *eval =
            make_eval(&s, "fixed64", (eval_options){.lists = forms[f], .reproducible = 1});
        set_particles(eval, &s);
        compute_read(eval, s.n, &exact[f]);
        fk_eval_destroy(eval);
    }
    outputs all_pairs = make_outputs(s.n);
    fk_eval *eval = make_eval(
        &s, "fixed64", (eval_options){.algorithm = FK_ALGORITHM_ALL_PAIRS, .reproducible = 1});
    set_particles(eval, &s);
    compute_read(eval, s.n, &all_pairs);
    fk_eval_destroy(eval);
    for (size_t w = 0; w < 8 * s.n; ++w) {
        if (exact[0].packed[w] != exact[1].packed[w])
            fail_msg("fixed64: half and full lists differ at particle %zu component %zu", w / 8,
                     (w % 8) / 2);
        if (exact[1].packed[w] != all_pairs.packed[w])
            fail_msg("fixed64: full lists and all-pairs differ at particle %zu component %zu",
                     w / 8, (w % 8) / 2);
    }
    fprintf(stderr, "  fixed64 half lists = full lists = all-pairs, bit for bit\n");

    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "lj";
    config.algorithm = FK_ALGORITHM_NEIGHBORS;
    memcpy(config.box, s.physics.box, sizeof config.box);
    config.accum = "narumi";
    config.neighbor_lists = FK_NEIGHBOR_LISTS_HALF;
    fk_eval *refused = NULL;
    assert_int_equal(fk_eval_create(context, &config, &refused), FK_ERR_UNSUPPORTED);
    assert_null(refused);
    assert_non_null(strstr(fk_context_last_error(context), "full lists"));
    config.accum = "float";
    config.neighbor_lists = 3;
    assert_int_equal(fk_eval_create(context, &config, &refused), FK_ERR_INVALID_ARGUMENT);
    assert_null(refused);
    config.neighbor_lists = -1;
    assert_int_equal(fk_eval_create(context, &config, &refused), FK_ERR_INVALID_ARGUMENT);
    free_outputs(&all_pairs);
    free_outputs(&exact[0]);
    free_outputs(&exact[1]);
    free_reference(&ref);
    fk_test_system_free(&s);
}

/* Lists never miss a pair. Dimers on a lattice 6.5 apart (centres jittered by 0.25: no pair of
 * two dimers within the list radius, before or after the moves), half of them at 2.79 (within rc +
 * skin = 2.8: in the lists, beyond the cutoff 2.5), half at 2.801 (outside the lists), randomly
 * oriented, in a periodic box. Step 1: both partners of every dimer move 0.1485 towards each other,
 * just under skin / 2 = 0.15: no rebuild, and the first kind now interact (2.493), which only lists
 * built with the skin can know; the second do not (2.504). Step 2: the second kind move 0.003 more
 * each (0.1515 since the build, just over skin / 2): one rebuild, and now they interact (2.498).
 * Each step: float against the reference, and fixed64 (reproducible) bit for bit against all-pairs,
 * through fk_eval_update_positions. */
static void test_skin_under_and_over(void **state)
{
    (void)state;
    const size_t side = 6, dimers = side * side * side;
    const double spacing = 6.5, skin = 0.3;
    test_system s;
    alloc_system(&s, "lj", 2 * dimers);
    set_box(&s, spacing * (double)side);
    double *axis = malloc(3 * dimers * sizeof(double));
    assert_non_null(axis);
    const double length[2] = {2.79, 2.801};
    for (size_t k = 0; k < dimers; ++k) {
        double u[3], norm = 0;
        do { /* a random direction */
            norm = 0;
            for (int d = 0; d < 3; ++d) {
                u[d] = uniform(-1, 1);
                norm += u[d] * u[d];
            }
        } while (norm > 1 || norm < 0.01);
        const size_t site[3] = {k % side, (k / side) % side, k / (side * side)};
        for (int d = 0; d < 3; ++d) {
            axis[3 * k + d] = u[d] / sqrt(norm);
            const double centre = ((double)site[d] + 0.5) * spacing + uniform(-0.25, 0.25);
            const double half = 0.5 * length[k % 2] * axis[3 * k + d];
            s.position[3 * (2 * k) + d] = fk_test_quantize(centre - half);
            s.position[3 * (2 * k + 1) + d] = fk_test_quantize(centre + half);
        }
    }
    fk_eval *float_eval = make_eval(&s, "float", (eval_options){.skin = skin});
    fk_eval *fixed_eval = make_eval(&s, "fixed64", (eval_options){.skin = skin, .reproducible = 1});
    fk_eval *pairs_eval = make_eval(
        &s, "fixed64", (eval_options){.algorithm = FK_ALGORITHM_ALL_PAIRS, .reproducible = 1});
    fk_eval *evals[] = {float_eval, fixed_eval, pairs_eval};
    outputs out = make_outputs(s.n), fixed = make_outputs(s.n), pairs = make_outputs(s.n);
    /* moves[step]: how far each partner of each kind of dimer moves towards the other */
    const double moves[3][2] = {{0, 0}, {0.1485, 0.1485}, {0, 0.003}};
    const size_t interacting[3] = {0, dimers / 2 * 2, dimers * 2}; /* ordered pairs within rc */
    for (int step = 0; step < 3; ++step) {
        for (size_t k = 0; k < dimers; ++k)
            for (int d = 0; d < 3; ++d) {
                const double move = moves[step][k % 2] * axis[3 * k + d];
                s.position[3 * (2 * k) + d] = fk_test_quantize(s.position[3 * (2 * k) + d] + move);
                s.position[3 * (2 * k + 1) + d] =
                    fk_test_quantize(s.position[3 * (2 * k + 1) + d] - move);
            }
        for (size_t e = 0; e < 3; ++e) {
            if (step == 0)
                set_particles(evals[e], &s);
            else
                expect_ok(fk_eval_update_positions(evals[e], s.position, NULL), "update_positions");
        }
        reference ref = make_reference(&s, skin);
        assert_int_equal(ref.within, interacting[step]);
        compute_read(float_eval, s.n, &out);
        compute_read(fixed_eval, s.n, &fixed);
        compute_read(pairs_eval, s.n, &pairs);
        const double worst = worst_error("skin", &s, &ref, "float", out.force, out.potential);
        const fk_variant v = variant_of(float_eval), fixed_variant = variant_of(fixed_eval);
        fprintf(stderr,
                "  step %d: %zu pairs within rc, %llu in the lists, %zu rebuilds: worst error / "
                "bound %.3f\n",
                step, ref.within / 2, (unsigned long long)v.pairs_examined, v.cell_rebuilds, worst);
        if (worst > 1)
            fail_msg("step %d: worst error %.3g times the bound", step, worst);
        if (memcmp(fixed.packed, pairs.packed, 8 * s.n * sizeof(uint32_t)) != 0)
            fail_msg("step %d: fixed64 neighbors and all-pairs differ", step);
        const size_t expected_rebuilds = step < 2 ? 1 : 2;
        assert_int_equal(v.cell_rebuilds, expected_rebuilds);
        assert_int_equal(fixed_variant.cell_rebuilds, expected_rebuilds);
        /* the lists hold the first kind from the start, the second after the rebuild (each pair
         * once in half lists, twice in full lists: GPUs' automatic form) */
        assert_int_equal(v.pairs_examined,
                         (step < 2 ? dimers / 2 : dimers) * (v.neighbor_half_lists ? 1 : 2));
        free_reference(&ref);
    }
    for (size_t e = 0; e < 3; ++e)
        fk_eval_destroy(evals[e]);
    free_outputs(&out);
    free_outputs(&fixed);
    free_outputs(&pairs);
    free(axis);
    fk_test_system_free(&s);
}

/* Without a skin (config skin < 0) every move rebuilds; the default skin is 0.12 rc. */
static void test_no_skin(void **state)
{
    (void)state;
    test_system s;
    alloc_system(&s, "lj", 512);
    fk_test_system_lattice(&s, 0, s.n, 8, 1.1, (double[3]){0.55, 0.55, 0.55}, 0.15, &rng);
    set_box(&s, fk_test_quantize(8 * 1.1));
    fk_eval *eval = make_eval(&s, "float", (eval_options){.skin = -1});
    outputs out = make_outputs(s.n);
    for (int step = 0; step < 3; ++step) {
        if (step > 0)
            for (size_t i = 0; i < 3 * s.n; ++i)
                s.position[i] = fk_test_quantize(s.position[i] + uniform(-0.001, 0.001));
        if (step == 0)
            set_particles(eval, &s);
        else
            expect_ok(fk_eval_update_positions(eval, s.position, NULL), "update_positions");
        compute_read(eval, s.n, &out);
        reference ref = make_reference(&s, 0.0);
        const double worst = worst_error("no skin", &s, &ref, "float", out.force, out.potential);
        if (worst > 1)
            fail_msg("no skin, step %d: worst error %.3g times the bound", step, worst);
        free_reference(&ref);
        const fk_variant v = variant_of(eval);
        assert_int_equal(v.cell_rebuilds, (size_t)step + 1);
        FK_ASSERT_NEAR(v.cell_skin, 0.0, 0.0);
    }
    fk_eval_destroy(eval);
    free_outputs(&out);
    fk_test_system_free(&s);
}

/* Most particles in a few cells (open boundaries): 343 on a dense lattice (spacing 0.62) inside a
 * 4.3-wide cube, 169 spread over a 30-wide region. The grid's placeholders overflow (resize and
 * bin again) and the cluster's lists hold hundreds of partners (the heapsort of long half lists);
 * float against the reference, fixed64 bit for bit against all-pairs. */
static void test_clustered(void **state)
{
    (void)state;
    test_system s;
    alloc_system(&s, "lj", 512);
    fk_test_system_lattice(&s, 0, 343, 7, 0.62, (double[3]){6.4, 6.4, 6.4}, 0.1, &rng);
    fk_test_system_lattice(&s, 343, 169, 6, 5.5, (double[3]){0.0, 0.0, 0.0}, 0.1, &rng);
    reference ref = make_reference(&s, 0.3);
    const fk_variant v = check_system("clustered", &s, &ref, "float", (eval_options){0});
    assert_true(v.cell_resizes >= 1);
    assert_true(v.pairs_examined > 100 * 343 / 2); /* hundreds of partners in the cluster */
    check_bit_identity("clustered", &s, "fixed64", 0);
    free_reference(&ref);
    fk_test_system_free(&s);
}

/* The list build's two walks (cl/neighbors_build.cl: per item, and tiled through local memory,
 * the GPUs' default) build the same lists entry for entry: the forces are the same bits with float
 * sums (whose order is the lists' order), half and full lists, on a uniform fluid and on a cluster
 * whose cells hold more particles than a work-group (the tiled walk's several tiles and blocks);
 * and the tiled walk's forces match the double reference. */
static void test_walks_agree(void **state)
{
    (void)state;
    test_system uniform, cluster;
    alloc_system(&uniform, "lj", 1200);
    fk_test_system_lattice(&uniform, 0, 1200, 11, 1.0 / cbrt(0.8), (double[3]){0.0, 0.0, 0.0}, 0.1,
                           &rng);
    set_box(&uniform, 11.0 / cbrt(0.8));
    alloc_system(&cluster, "lj", 512);
    fk_test_system_lattice(&cluster, 0, 343, 7, 0.62, (double[3]){6.4, 6.4, 6.4}, 0.1, &rng);
    fk_test_system_lattice(&cluster, 343, 169, 6, 5.5, (double[3]){0.0, 0.0, 0.0}, 0.1, &rng);
    const test_system *systems[] = {&uniform, &cluster};
    const int forms[] = {FK_NEIGHBOR_LISTS_HALF, FK_NEIGHBOR_LISTS_FULL};
    for (size_t k = 0; k < 2; ++k) {
        const test_system *s = systems[k];
        for (size_t f = 0; f < 2; ++f) {
            const eval_options o = {.lists = forms[f], .lanes = -1};
            /* Each walk, with two walks (row 0) and with one: rows that overflow (4: the fill walk
             * redoes the build) and rows that hold every list (256: the compaction). Each build
             * twice (all particles moved past the skin): the second finds lists from the first,
             * and one walk then compacts into them before it reads the totals. */
            enum { VARIANTS = 6 };
            double *moved = malloc(3 * s->n * sizeof *moved); /* every particle 0.5 along x */
            assert_non_null(moved);
            for (size_t m = 0; m < 3 * s->n; ++m) {
                const double side = s->physics.box[m % 3];
                moved[m] = s->position[m] + (m % 3 == 0 ? 0.5 : 0.0);
                if (side > 0 && moved[m] >= side)
                    moved[m] -= side;
            }
            outputs out[VARIANTS];
            const char *walks[] = {"items", "tiled"}, *rows[] = {"0", "4", "256"};
            for (int w = 0; w < VARIANTS; ++w) {
                setenv("FORCEKIT_NEIGHBOR_WALK", walks[w / 3], 1);
                setenv("FORCEKIT_NEIGHBOR_ROW", rows[w % 3], 1);
                out[w] = make_outputs(s->n);
                fk_eval *eval = make_eval(s, "float", o);
                set_particles(eval, s);
                compute_read(eval, s->n, &out[w]);
                const size_t builds = variant_of(eval).cell_rebuilds;
                expect_ok(fk_eval_update_positions(eval, moved, NULL), "update_positions");
                compute_read(eval, s->n, &out[w]);
                assert_true(variant_of(eval).cell_rebuilds > builds);
                fk_eval_destroy(eval);
            }
            unsetenv("FORCEKIT_NEIGHBOR_ROW");
            free(moved);
            for (int v = 1; v < VARIANTS; ++v) {
                for (size_t w = 0; w < 8 * s->n; ++w)
                    if (out[0].packed[w] != out[v].packed[w])
                        fail_msg("%s lists, system %zu: walk %s with rows %s differs from walk "
                                 "items with two walks at particle %zu component %zu",
                                 f ? "full" : "half", k, walks[v / 3], rows[v % 3], w / 8,
                                 (w % 8) / 2);
                free_outputs(&out[v]);
            }
            free_outputs(&out[0]);
        }
        reference ref = make_reference(s, 0.3);
        check_system(k ? "cluster, tiled walk" : "uniform, tiled walk", s, &ref, "float",
                     (eval_options){0});
        unsetenv("FORCEKIT_NEIGHBOR_WALK");
        free_reference(&ref);
    }
    unsetenv("FORCEKIT_NEIGHBOR_WALK");
    fk_test_system_free(&uniform);
    fk_test_system_free(&cluster);
}

/* Open boundaries, and periodic boxes of two and one cells per side (every cell a neighbour once;
 * minimum image picks the image), with half lists (float) and full lists (ti). */
static void test_open_and_small_boxes(void **state)
{
    (void)state;
    test_system s;
    alloc_system(&s, "lj", 729);
    fk_test_system_lattice(&s, 0, s.n, 9, 1.08, (double[3]){0.5, -3.0, 7.0}, 0.2, &rng);
    reference ref = make_reference(&s, 0.3);
    const char *accums[] = {"float", "ti"};
    for (size_t a = 0; a < 2; ++a)
        check_system("open", &s, &ref, accums[a], (eval_options){0});
    free_reference(&ref);
    fk_test_system_free(&s);

    const double boxes[] = {6.0, 5.0};
    const int cells_per_side[] = {2, 1};
    for (size_t b = 0; b < 2; ++b) {
        alloc_system(&s, "lj", 125);
        fk_test_system_lattice(&s, 0, s.n, 5, boxes[b] / 5, (double[3]){0.3, 0.3, 0.3}, 0.2, &rng);
        set_box(&s, boxes[b]);
        ref = make_reference(&s, 0.3);
        for (size_t a = 0; a < 2; ++a) {
            const fk_variant v = check_system("small box", &s, &ref, accums[a], (eval_options){0});
            assert_int_equal(v.cell_grid[0], cells_per_side[b]);
        }
        free_reference(&ref);
        fk_test_system_free(&s);
    }
}

/* Exclusions on the fly and afterwards: neighbouring pairs (within the cutoff) and far pairs, half
 * lists and full lists. */
static void test_exclusions(void **state)
{
    (void)state;
    test_system s;
    alloc_system(&s, "lj", 512);
    fk_test_system_lattice(&s, 0, s.n, 8, 1.1, (double[3]){0, 0, 0}, 0.2, &rng);
    s.exclusion_count = 120;
    s.exclusions = malloc(2 * s.exclusion_count * sizeof(size_t));
    assert_non_null(s.exclusions);
    for (size_t k = 0; k < s.exclusion_count; ++k) {
        const size_t i = 4 * k + (size_t)(k % 3);
        s.exclusions[2 * k] = i;
        s.exclusions[2 * k + 1] = k % 4 == 3 ? (i + 300) % s.n : i + 1; /* near, or far */
    }
    reference ref = make_reference(&s, 0.3);
    check_system("exclusions on the fly", &s, &ref, "float",
                 (eval_options){.exclusion_mode = FK_EXCLUDE_ON_THE_FLY});
    check_system("exclusions on the fly", &s, &ref, "ti",
                 (eval_options){.exclusion_mode = FK_EXCLUDE_ON_THE_FLY});
    check_system("exclusions afterwards", &s, &ref, "float",
                 (eval_options){.exclusion_mode = FK_EXCLUDE_AFTERWARDS});
    free_reference(&ref);
    fk_test_system_free(&s);
}

static void expect_failure(fk_status status, fk_status expected, const char *needle);

/* A particle's list shared by 2, 4 or 8 work-items (fk_eval_config.j_splits, cl/neighbors.cl
 * FK_NB_SPLIT: full lists, the scalar walk), each part merged in part order through local memory:
 * float against the reference on the periodic fluid with lists of every length (a work-group size
 * that N does not fill, so work-items past the last particle reach the barrier too), fixed64 in
 * reproducible mode the same integers as one work-item per particle (correctly rounded terms,
 * exact sums: the same in any kernel, so a part left out or merged twice shows); then the
 * refusals. */
static void test_split_lists(void **state)
{
    (void)state;
    test_system s;
    alloc_system(&s, "ljc_constant", 611);
    s.physics.coulomb = 1.2;
    fk_test_system_lattice(&s, 0, s.n, 9, 1.1, (double[3]){0.5, 0.5, 0.5}, 0.2, &rng);
    set_box(&s, fk_test_quantize(9 * 1.1));
    reference ref = make_reference(&s, 0.3);
    outputs whole = make_outputs(s.n), out = make_outputs(s.n);
    const int fp64 = fk_context_device(context)->fp64;
    const char *exact = fp64 ? "fixed64" : "float";
    const eval_options one = {.lists = FK_NEIGHBOR_LISTS_FULL,
                              .lanes = -1,
                              .split = 1,
                              .work_group_size = 32,
                              .reproducible = fp64};
    fk_eval *eval = make_eval(&s, exact, one);
    set_particles(eval, &s);
    compute_read(eval, s.n, &whole);
    assert_int_equal(variant_of(eval).j_splits, 1);
    fk_eval_destroy(eval);
    const int splits[] = {2, 4, 8};
    for (size_t k = 0; k < sizeof splits / sizeof splits[0]; ++k) {
        eval_options o = one;
        o.split = splits[k];
        o.reproducible = 0;
        char label[64];
        snprintf(label, sizeof label, "split %d", splits[k]);
        const fk_variant v = check_system(label, &s, &ref, "float", o);
        o.reproducible = 1;
        assert_int_equal(v.j_splits, splits[k]);
        if (!fp64)
            continue;
        eval = make_eval(&s, "fixed64", o);
        set_particles(eval, &s);
        compute_read(eval, s.n, &out);
        fk_eval_destroy(eval);
        if (memcmp(out.packed, whole.packed, 8 * s.n * sizeof(uint32_t)) != 0)
            fail_msg("split %d: fixed64 differs from one work-item per particle", splits[k]);
        fprintf(stderr, "  split %d: fixed64 the same integers as one work-item per particle\n",
                splits[k]);
    }
    free_outputs(&whole);
    free_outputs(&out);
    free_reference(&ref);
    fk_test_system_free(&s);

    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "lj";
    config.algorithm = FK_ALGORITHM_NEIGHBORS;
    config.box[0] = config.box[1] = config.box[2] = 20.0;
    config.lanes = -1;
    config.neighbor_lists = FK_NEIGHBOR_LISTS_FULL;
    config.j_splits = 3;
    fk_eval *refused = NULL;
    expect_failure(fk_eval_create(context, &config, &refused), FK_ERR_INVALID_ARGUMENT, "1, 2, 4");
    assert_null(refused);
    config.j_splits = 4;
    config.work_group_size = 6;
    config.unroll_i = 1; /* a shape the generic rules accept everywhere (GPUs: tiled 4x8) */
    config.unroll_j = 1;
    config.local_tiling = -1;
    expect_failure(fk_eval_create(context, &config, &refused), FK_ERR_INVALID_ARGUMENT,
                   "does not divide");
    config.work_group_size = 0;
    config.neighbor_lists = FK_NEIGHBOR_LISTS_HALF;
    expect_failure(fk_eval_create(context, &config, &refused), FK_ERR_INVALID_ARGUMENT,
                   "half lists");
    config.neighbor_lists = FK_NEIGHBOR_LISTS_FULL;
    config.lanes = 8;
    if (fk_context_device(context)->type == FK_DEVICE_CPU && fk__device_lane_width(context) < 8)
        /* a CPU narrower than the lanes refuses them first (Mesa's llvmpipe: width 1) */
        expect_failure(fk_eval_create(context, &config, &refused), FK_ERR_UNSUPPORTED,
                       "NATIVE_VECTOR_WIDTH_FLOAT");
    else
        expect_failure(fk_eval_create(context, &config, &refused), FK_ERR_INVALID_ARGUMENT,
                       "lane form");
}

static void expect_failure(fk_status status, fk_status expected, const char *needle)
{
    if (status != expected)
        fail_msg("expected %s, got %s: %s", fk_status_string(expected), fk_status_string(status),
                 fk_context_last_error(context));
    if (!strstr(fk_context_last_error(context), needle))
        fail_msg("message '%s' does not say '%s'", fk_context_last_error(context), needle);
}

/* The lane form (cl/neighbors.cl with FK_LANES: a particle's partners in the lanes of vectors) on a
 * system that reaches its every path: ljc_constant with three particle types (a pair table: each
 * lane's own entry; the one-type systems of the other tests take one entry for all lanes),
 * exclusions on the fly (a vector comparison per slot), and lists of every length: a dense
 * periodic region (lists of 40-80 partners: whole vectors and a last step that rereads the list's
 * end) and a sparse one (lists shorter than a vector, reading into the next list or the padding
 * after the last). Each width the device may run (8, and 16 where it holds 16 floats; both on
 * devices other than CPUs) and both list forms: float and fixed64 against the reference, each
 * held to its error model. Not bit for bit against the scalar walk: outside reproducible mode
 * (where lanes do not run) rsqrt is not correctly rounded, and an implementation may compute it
 * differently in a vector and in a scalar (Intel's CPU runtime does; POCL does not). Then the
 * refusals: a law without a lane form, a width wider than the CPU's registers, reproducible mode.
 */
static void test_lanes(void **state)
{
    (void)state;
    enum { TYPES = 3 };
    test_system s;
    alloc_system(&s, "ljc_constant", 700);
    s.physics.coulomb = 0.7;
    fk_test_system_lattice(&s, 0, 600, 10, 1.1, (double[3]){0.4, 0.4, 0.4}, 0.2, &rng);
    /* the sparse region: 100 particles 2.2 apart in the box's far corner (4 to 10 partners) */
    fk_test_system_lattice(&s, 600, 100, 5, 2.2, (double[3]){11.3, 11.3, 11.3}, 0.05, &rng);
    set_box(&s, fk_test_quantize(22.5));
    double values[TYPES * TYPES * 2];
    for (size_t a = 0; a < TYPES; ++a)
        for (size_t b = a; b < TYPES; ++b) {
            /* epsilon <= 1 and sigma <= 1: the error scale (pair_parts, epsilon = sigma = 1)
             * bounds every pair's parts */
            const double epsilon = uniform(0.6, 1.0), sigma = uniform(0.9, 1.0);
            values[2 * (a * TYPES + b)] = values[2 * (b * TYPES + a)] = epsilon;
            values[2 * (a * TYPES + b) + 1] = values[2 * (b * TYPES + a) + 1] = sigma;
        }
    const fk_pair_table table = {.types = TYPES, .values = values};
    s.physics.pair_table = &table;
    for (size_t i = 0; i < s.n; ++i)
        s.type[i] = (int)fmin(uniform(0, TYPES), TYPES - 1);
    s.exclusion_count = 150;
    s.exclusions = malloc(2 * s.exclusion_count * sizeof(size_t));
    assert_non_null(s.exclusions);
    for (size_t k = 0; k < s.exclusion_count; ++k) {
        s.exclusions[2 * k] = 4 * k;
        s.exclusions[2 * k + 1] = k % 3 ? 4 * k + 1 : (4 * k + 10) % s.n; /* near, or farther */
    }
    reference ref = make_reference(&s, 0.3);
    const fk_device_info *device = fk_context_device(context);
    const int native = fk__device_lane_width(context);
    const int cpu = device->type == FK_DEVICE_CPU;
    int widths[2], width_count = 0;
    if (!cpu || native >= 8)
        widths[width_count++] = 8;
    if (!cpu || native >= 16)
        widths[width_count++] = 16;
    const int forms[] = {FK_NEIGHBOR_LISTS_FULL, FK_NEIGHBOR_LISTS_HALF};
    outputs out = make_outputs(s.n);
    for (size_t f = 0; f < 2; ++f) {
        fk_eval *eval = NULL;
        for (int w = 0; w < width_count; ++w) {
            const eval_options on = {.lists = forms[f], .lanes = widths[w]};
            char label[96];
            snprintf(label, sizeof label, "lanes %d, %s lists", widths[w],
                     forms[f] == FK_NEIGHBOR_LISTS_HALF ? "half" : "full");
            eval = make_eval(&s, "float", on);
            expect_ok(fk_eval_set_pair_table(eval, &table), "set_pair_table");
            set_particles(eval, &s);
            compute_read(eval, s.n, &out);
            const fk_variant v = variant_of(eval);
            fk_eval_destroy(eval);
            assert_int_equal(v.lanes, widths[w]);
            assert_int_equal(v.neighbor_half_lists, forms[f] == FK_NEIGHBOR_LISTS_HALF);
            check_pairs(label, &v, &ref, v.neighbor_half_lists);
            const double worst = worst_error(label, &s, &ref, "float", out.force, out.potential);
            fprintf(stderr, "  %-26s float          worst error / bound %.3f\n", label, worst);
            if (worst > 1)
                fail_msg("%s: worst error %.3g times the bound", label, worst);
            if (!device->fp64)
                continue;
            eval = make_eval(&s, "fixed64", on);
            expect_ok(fk_eval_set_pair_table(eval, &table), "set_pair_table");
            set_particles(eval, &s);
            compute_read(eval, s.n, &out);
            assert_int_equal(variant_of(eval).lanes, widths[w]);
            fk_eval_destroy(eval);
            const double exact = worst_error(label, &s, &ref, "fixed64", out.force, out.potential);
            fprintf(stderr, "  %-26s fixed64        worst error / bound %.3f\n", label, exact);
            if (exact > 1)
                fail_msg("%s: fixed64 worst error %.3g times the bound", label, exact);
        }
    }
    free_outputs(&out);
    free_reference(&ref);
    fk_test_system_free(&s);

    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "ljc_linear";
    config.cutoff = 2.5;
    config.algorithm = FK_ALGORITHM_NEIGHBORS;
    config.lanes = 8;
    fk_eval *refused = NULL;
    expect_failure(fk_eval_create(context, &config, &refused), FK_ERR_UNSUPPORTED, "no lane form");
    assert_null(refused);
    config.kernel = "lj";
    config.lanes = 8;
    config.reproducible = 1;
    config.accum = "fixed64";
    expect_failure(fk_eval_create(context, &config, &refused), FK_ERR_UNSUPPORTED,
                   "reproducible mode");
    config.reproducible = 0;
    config.accum = "float";
    config.lanes = 5;
    expect_failure(fk_eval_create(context, &config, &refused), FK_ERR_INVALID_ARGUMENT, "lanes 5");
    if (cpu && native < 16) {
        config.lanes = 16;
        expect_failure(fk_eval_create(context, &config, &refused), FK_ERR_UNSUPPORTED,
                       "vector register");
    }
    /* automatic lanes: CPUs' only, in a periodic box (open boundaries keep the scalar walk's half
     * lists); lanes -1 keeps the scalar walk everywhere */
    config.lanes = 0;
    fk_eval *eval = NULL;
    expect_ok(fk_eval_create(context, &config, &eval), "create");
    assert_int_equal(variant_of(eval).lanes, 0);
    fk_eval_destroy(eval);
    config.box[0] = config.box[1] = config.box[2] = 20.0;
    expect_ok(fk_eval_create(context, &config, &eval), "create");
    assert_int_equal(variant_of(eval).lanes, cpu ? native : 0);
    fk_eval_destroy(eval);
    config.lanes = -1;
    expect_ok(fk_eval_create(context, &config, &eval), "create");
    assert_int_equal(variant_of(eval).lanes, 0);
    fk_eval_destroy(eval);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    fk_eval *eval = NULL;
    fk_algorithm found;
    assert_int_equal(fk_algorithm_find("neighbors", &found), FK_OK);
    assert_int_equal(found, FK_ALGORITHM_NEIGHBORS);
    assert_string_equal(fk_algorithm_name(FK_ALGORITHM_NEIGHBORS), "neighbors");
    fk_eval_config config = {.kernel = "ga", .algorithm = FK_ALGORITHM_NEIGHBORS};
    expect_failure(fk_eval_create(context, &config, &eval), FK_ERR_INVALID_ARGUMENT, "gravity");
    assert_null(eval);
    config = (fk_eval_config){.kernel = "gaj", .algorithm = FK_ALGORITHM_NEIGHBORS};
    expect_failure(fk_eval_create(context, &config, &eval), FK_ERR_INVALID_ARGUMENT, "cutoff");
    config = (fk_eval_config){.kernel = "ljc_constant", .algorithm = FK_ALGORITHM_NEIGHBORS};
    expect_failure(fk_eval_create(context, &config, &eval), FK_ERR_INVALID_ARGUMENT, "cutoff");
    assert_null(eval);
    config = (fk_eval_config){.kernel = "lj", .algorithm = FK_ALGORITHM_NEIGHBORS, .skin = NAN};
    expect_failure(fk_eval_create(context, &config, &eval), FK_ERR_INVALID_ARGUMENT, "skin");
    /* Shapes the loop does not have (i-unrolling, tiling) are not applied, and the variant says
     * what runs: one particle per work-item, its partners 2 per unrolled step, untiled. */
    config = (fk_eval_config){.kernel = "lj",
                              .algorithm = FK_ALGORITHM_NEIGHBORS,
                              .unroll_i = 4,
                              .unroll_j = 2,
                              .local_tiling = 1};
    expect_ok(fk_eval_create(context, &config, &eval), "create 4x2, tiled");
    const fk_variant shape = variant_of(eval);
    assert_true(shape.unroll_i == 1 && shape.unroll_j == 2 && shape.local_tiling == 0);
    assert_int_equal(shape.source, FK_VARIANT_EXPLICIT);
    fk_eval_destroy(eval);
    eval = NULL;
    config = (fk_eval_config){.kernel = "lj", .algorithm = FK_ALGORITHM_NEIGHBORS + 1};
    expect_failure(fk_eval_create(context, &config, &eval), FK_ERR_INVALID_ARGUMENT, "algorithm");
    assert_null(eval);

    /* Periodic box 10: particle 17 at z = 20 (two box lengths) is named; -10 and 19.9 are fine. */
    test_system s;
    alloc_system(&s, "lj", 64);
    fk_test_system_lattice(&s, 0, s.n, 4, 2.5, (double[3]){1, 1, 1}, 0.1, &rng);
    set_box(&s, 10.0);
    s.position[3 * 5] = -10.0;
    s.position[3 * 9 + 1] = 19.9;
    eval = make_eval(&s, "float", (eval_options){0});
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
    s.position[3 * 40] = 2.0;
    expect_ok(fk_eval_set_particles(eval, &particles), "set_particles after a refused update");
    expect_ok(fk_eval_compute(eval, NULL), "compute after a refused update");
    fk_eval_destroy(eval);
    fk_test_system_free(&s);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_every_accumulator),
        cmocka_unit_test(test_reuse_and_shapes),
        cmocka_unit_test(test_bit_identity),
        cmocka_unit_test(test_skin_under_and_over),
        cmocka_unit_test(test_no_skin),
        cmocka_unit_test(test_clustered),
        cmocka_unit_test(test_walks_agree),
        cmocka_unit_test(test_open_and_small_boxes),
        cmocka_unit_test(test_exclusions),
        cmocka_unit_test(test_list_forms),
        cmocka_unit_test(test_lanes),
        cmocka_unit_test(test_split_lists),
        cmocka_unit_test_setup_teardown(test_skin_under_and_over, fk_test_device_checks_on,
                                        fk_test_device_checks_off),
        cmocka_unit_test_setup_teardown(test_open_and_small_boxes, fk_test_device_checks_on,
                                        fk_test_device_checks_off),
        cmocka_unit_test_setup_teardown(test_bad_inputs, fk_test_device_checks_on,
                                        fk_test_device_checks_off),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
