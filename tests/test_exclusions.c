/*
 * Exclude afterwards on the device (cl/pairwise.cl fk_subtract_exclusions) against exclude on the
 * fly and the double-precision host reference (fk_reference_forces, which skips the excluded pairs
 * exactly), on fresh random molecular systems (ljc_constant, two types, charges) whose bonded pairs
 * are close, so that excluded LJ terms are 1e4 to 1e6 times a particle's remaining force: the case
 * where subtracting anything but the device's own pair terms shows (Narumi et al. sec. 4.1).
 *
 * - every accumulator tested (float, double, ti, narumi, fixed64, ref), both modes, forces and
 *   potentials, within: the included terms' own float rounding (48 ulp of sum_j |term_ij| over the
 *   included pairs) + the accumulator's rounding of partial sums as large as all the terms (float:
 *   the float bound; double and ref: n 2^-52; ti: (n + 16) 2^-44 of sum_j |term_ij| over all
 *   pairs; narumi and fixed64: their resolution floor, (n + 16) 2^-44 of the largest such sum). The
 *   host subtraction this replaced missed the double bound by about 1e-7 of the excluded terms;
 * - on the fly is the default and needs nothing of the device: the bounds above hold everywhere.
 *   Afterwards subtracts terms that a second kernel recomputes; OpenCL lets two programs compute
 *   the same term with different bits (Intel's CPU compiler does: rsqrt differs between vector and
 *   scalar code), each within the pair arithmetic's 48 ulp, so outside reproducible mode the
 *   residue of each excluded term is allowed too (2 x 48 ulp of it): the bound any conformant
 *   device meets. In reproducible mode (fixed64, narumi) the terms are the same bits by
 *   construction and the tight bounds hold;
 * - fixed64 and narumi afterwards bit-identical (packed words) to on the fly run at the same scale
 *   in reproducible mode; across j-splits (the same program) in either mode: integer sums are
 *   order-independent and q(-y) = -q(y);
 * - a particle with more partners (83) than the on-the-fly kernel can ever hold (64 slots): a
 *   clear error on the fly, no limit afterwards; automatic slots rebuilt as the exclusions change;
 * - fk_eval_update_positions: the subtraction uses the new positions;
 * - every slot in use on the fly: particles with exactly 4 and 8 partners (the automatic slots are
 *   filled in fours, so the last slot holds a partner), lj and ljc_constant, float and double,
 *   all-pairs, and the neighbour lists and cells (their lane forms) in a periodic box;
 * - the symmetric and cell-list loops in both modes (the subtraction runs after them too): fixed64
 *   bit-identical to all-pairs in reproducible mode, float and fixed64 against the reference; a
 *   periodic box with an excluded pair that only the minimum image brings within the cutoff.
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
    fk_test_rng_init(&rng, fk_test_seed());
    return 0;
}

static int teardown(void **state)
{
    return fk_test_context_teardown(state);
}

/* ---------------------------------------------------------------------------------------------- */
/* Systems */

enum { TYPES = 2, ON_THE_FLY_SLOTS = 8 };
/* ljc_constant everywhere but test_full_slots (lj) */
static const char *kernel_name = "ljc_constant";

typedef struct test_system {
    size_t n;
    double *position, *charge;
    int *type;
    double values[TYPES * TYPES * 2]; /* epsilon, sigma */
    fk_pair_table table;
    size_t *exclusions;
    size_t exclusion_count;
    fk_physics physics; /* cutoff, box; pair_table and exclusions set by view_physics */
    size_t far;         /* box: the partner of particle 0 across the boundary */
} test_system;

static double uniform(double lo, double hi)
{
    return lo + (hi - lo) * fk_test_rng_uniform(&rng);
}

static double quantize(double x)
{
    return (double)(float)x; /* the device's inputs exactly: input rounding is not tested here */
}

/* Coordinates and box sides on the grid 2^-18 (below 32 in magnitude): then the device's float
 * differences and minimum images are exact, as the double reference's are, and only the pair
 * arithmetic is compared. */
static double on_grid(double x)
{
    return ldexp(nearbyint(ldexp(x, 18)), -18);
}

/* Squared distance, through the minimum image when box (3 sides) is not NULL. */
static double distance2(const double *a, const double *b, const double *box)
{
    double s = 0;
    for (int k = 0; k < 3; ++k) {
        double d = a[k] - b[k];
        if (box)
            d -= box[k] * nearbyint(d / box[k]);
        s += d * d;
    }
    return s;
}

static void add_pair(test_system *s, size_t *capacity, size_t i, size_t j)
{
    if (s->exclusion_count == *capacity) {
        *capacity = 2 * *capacity + 16;
        s->exclusions = realloc(s->exclusions, 2 * *capacity * sizeof *s->exclusions);
        assert_non_null(s->exclusions);
    }
    s->exclusions[2 * s->exclusion_count] = i;
    s->exclusions[2 * s->exclusion_count++ + 1] = j;
}

/* n particles on a jittered lattice of spacing 1.1 (sigma about 1); every fourth is moved to 0.4 to
 * 0.55 of its predecessor ("bonded") but at least 0.75 from every other particle. Excluded: every
 * pair with |i - j| <= 3 (up to 6 partners, more than the default 4 slots), in both orders and once
 * twice (duplicates count once). hub: particle n / 2 also excluded with every even particle (n / 2
 * partners). box: a periodic box of the lattice's side, cutoff 2.5, and the pair of particle 0 and
 * the one at the other end of its lattice row, within the cutoff only through the minimum image. */
static void make_system(test_system *s, size_t n, int hub, int box)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->position = malloc(3 * n * sizeof *s->position);
    s->charge = malloc(n * sizeof *s->charge);
    s->type = malloc(n * sizeof *s->type);
    assert_true(s->position && s->charge && s->type);
    size_t side = 1;
    while (side * side * side < n)
        ++side;
    const double spacing = 1.1;
    if (box) {
        for (int k = 0; k < 3; ++k)
            s->physics.box[k] = on_grid((double)side * spacing);
        s->physics.cutoff = 2.5;
    }
    const double *periodic = box ? s->physics.box : NULL;
    for (size_t i = 0; i < n; ++i) {
        const size_t site[3] = {i % side, (i / side) % side, i / (side * side)};
        for (int k = 0; k < 3; ++k)
            s->position[3 * i + (size_t)k] =
                on_grid(((double)site[k] + 0.5 + uniform(-0.2, 0.2)) * spacing);
        const double sign = fk_test_rng_uniform(&rng) < 0.5 ? -1.0 : 1.0;
        s->charge[i] = quantize(sign * uniform(0.2, 1.0));
        s->type[i] = (int)(fk_test_rng_uniform(&rng) * TYPES);
    }
    for (size_t i = 3; i < n; i += 4) {
        double *p = s->position + 3 * i;
        int clear = 0;
        for (int attempt = 0; attempt < 1000 && !clear; ++attempt) {
            double direction[3], length = 0;
            for (int k = 0; k < 3; ++k) {
                direction[k] = uniform(-1, 1);
                length += direction[k] * direction[k];
            }
            length = sqrt(length);
            const double r = uniform(0.4, 0.55);
            for (int k = 0; k < 3; ++k)
                p[k] = on_grid(s->position[3 * (i - 1) + (size_t)k] + r * direction[k] / length);
            clear = 1;
            for (size_t j = 0; j < n && clear; ++j)
                clear = j == i || j == i - 1 ||
                        distance2(p, s->position + 3 * j, periodic) > 0.75 * 0.75;
        }
        assert_true(clear);
    }
    for (size_t a = 0; a < TYPES; ++a)
        for (size_t b = a; b < TYPES; ++b) {
            const double epsilon = uniform(0.5, 1.5), sigma = uniform(0.9, 1.1);
            s->values[2 * (a * TYPES + b)] = s->values[2 * (b * TYPES + a)] = epsilon;
            s->values[2 * (a * TYPES + b) + 1] = s->values[2 * (b * TYPES + a) + 1] = sigma;
        }
    s->table = (fk_pair_table){.types = TYPES, .values = s->values};

    size_t capacity = 0;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n && j <= i + 3; ++j) {
            if ((i + j) % 2)
                add_pair(s, &capacity, j, i); /* either order */
            else
                add_pair(s, &capacity, i, j);
        }
    if (n > 1)
        add_pair(s, &capacity, 1, 0); /* a duplicate */
    if (hub)
        for (size_t j = 0; j < n; j += 2)
            if (j != n / 2 && (j > n / 2 + 3 || j + 3 < n / 2))
                add_pair(s, &capacity, n / 2, j);
    if (box) {
        assert_true(n == side * side * side && side > 4 && (side - 1) % 4 != 3);
        s->far = side - 1;
        add_pair(s, &capacity, 0, s->far);
    }
}

static void free_system(test_system *s)
{
    free(s->position);
    free(s->charge);
    free(s->type);
    free(s->exclusions);
    memset(s, 0, sizeof *s);
}

static fk_particles view(const test_system *s)
{
    return (fk_particles){
        .count = s->n, .position = s->position, .mass = s->charge, .type = s->type};
}

static fk_physics view_physics(const test_system *s)
{
    fk_physics physics = s->physics;
    physics.pair_table = &s->table;
    physics.exclusions = s->exclusions;
    physics.exclusion_count = s->exclusion_count;
    return physics;
}

/* ---------------------------------------------------------------------------------------------- */
/* The reference and the error scales */

typedef struct reference {
    double *force, *potential;
    /* per particle: sum_j |term_ij| over the included pairs and over all pairs; forces (the pair
     * force's magnitude) and potentials (|U_ij| / 2) */
    double *included, *all, *pot_included, *pot_all;
    double largest_all; /* the largest of all[] and pot_all[] */
    double largest_excluded_ratio;
} reference;

static reference make_reference(const test_system *s)
{
    const size_t n = s->n;
    reference ref = {malloc(3 * n * sizeof(double)),
                     malloc(n * sizeof(double)),
                     calloc(n, sizeof(double)),
                     calloc(n, sizeof(double)),
                     calloc(n, sizeof(double)),
                     calloc(n, sizeof(double)),
                     0,
                     0};
    unsigned char *excluded = calloc(n * n, 1);
    assert_true(ref.force && ref.potential && ref.included && ref.all && ref.pot_included &&
                ref.pot_all && excluded);
    const fk_particles particles = view(s);
    const fk_physics physics = view_physics(s);
    fk_status status =
        fk_reference_forces(kernel_name, &particles, &physics, ref.force, ref.potential);
    if (status != FK_OK)
        fail_msg("reference: %s", fk_status_string(status));
    for (size_t e = 0; e < s->exclusion_count; ++e) {
        const size_t i = s->exclusions[2 * e], j = s->exclusions[2 * e + 1];
        excluded[i * n + j] = excluded[j * n + i] = 1;
    }
    const fk_kernel_desc *kernel = fk__kernel_desc(kernel_name);
    fk__physics resolved;
    char message[256];
    assert_int_equal(fk__physics_resolve(kernel, &s->physics, &resolved, message, sizeof message),
                     FK_OK);
    for (size_t i = 0; i < n; ++i) {
        double excluded_sum = 0;
        for (size_t j = 0; j < n; ++j) {
            if (j == i)
                continue;
            double d[3];
            for (int k = 0; k < 3; ++k)
                d[k] = s->position[3 * i + (size_t)k] - s->position[3 * j + (size_t)k];
            fk__minimum_image(&resolved, d);
            const double r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            const double *pair = s->values + 2 * ((size_t)s->type[i] * TYPES + (size_t)s->type[j]);
            double f, u;
            fk__pair_function_shifted(kernel, &resolved, pair, s->charge[i] * s->charge[j], r, &f,
                                      &u);
            ref.all[i] += fabs(f);
            ref.pot_all[i] += 0.5 * fabs(u);
            if (excluded[i * n + j]) {
                excluded_sum += fabs(f);
            } else {
                ref.included[i] += fabs(f);
                ref.pot_included[i] += 0.5 * fabs(u);
            }
        }
        ref.largest_all = fmax(ref.largest_all, fmax(ref.all[i], ref.pot_all[i]));
        if (ref.included[i] > 0)
            ref.largest_excluded_ratio =
                fmax(ref.largest_excluded_ratio, excluded_sum / ref.included[i]);
    }
    free(excluded);
    return ref;
}

static void free_reference(reference *ref)
{
    free(ref->force);
    free(ref->potential);
    free(ref->included);
    free(ref->all);
    free(ref->pot_included);
    free(ref->pot_all);
}

/* The allowed error of one value: see the comment at the top. */
static double allowed(const char *accum, size_t n, double included, double all, double largest)
{
    const double ulp = 5.96e-8;
    const double pair = 48.0 * ulp * included;
    const double count = (double)n;
    if (strcmp(accum, "float") == 0)
        return pair + ulp * (48.0 + 2.0 * sqrt(count) + 0.02 * count) * all;
    if (strcmp(accum, "double") == 0 || strcmp(accum, "ref") == 0)
        return pair + ldexp(count, -52) * all;
    if (strcmp(accum, "ti") == 0)
        return pair + ldexp(count + 16.0, -44) * all;
    return pair + ldexp(count + 16.0, -44) * largest; /* narumi, fixed64 */
}

/* Excluding afterwards outside reproducible mode: the excluded terms the second kernel subtracts
 * may differ from those the pair loop added by the pair arithmetic's error, twice. */
static double allowed_afterwards(const char *accum, size_t n, double included, double all,
                                 double largest)
{
    const double ulp = 5.96e-8;
    return allowed(accum, n, included, all, largest) + 2.0 * 48.0 * ulp * (all - included);
}

/* ---------------------------------------------------------------------------------------------- */
/* Evaluations */

typedef struct run_options {
    const char *accum;
    int on_the_fly;
    int reproducible;   /* fixed64 and narumi: pair arithmetic correctly rounded, the same bits in
                         * every kernel */
    int max_exclusions; /* on the fly: 0 automatic */
    int algorithm;
    int j_splits;
    int lanes; /* fk_eval_config.lanes (the neighbour lists' lane form): 0 automatic */
    /* > 0: run with this data scale (fixed64's 2^k, narumi's LARGE) instead of the eval's own;
     * only the packed words are meaningful then */
    double forced_scale;
} run_options;

typedef struct result {
    double *force, *potential;
    uint32_t *packed; /* 4 components x 2 words per particle */
    double scale;     /* the accumulator's data scale (fk__eval_accum_scale) */
    double seconds;
} result;

static void free_result(result *r)
{
    free(r->force);
    free(r->potential);
    free(r->packed);
}

static fk_eval *create(const test_system *s, run_options o)
{
    fk_eval_config config = {.kernel = kernel_name,
                             .accum = o.accum,
                             .algorithm = o.algorithm,
                             .unroll_i = 2,
                             .unroll_j = 2,
                             .j_splits = o.j_splits,
                             .lanes = o.lanes,
                             .potential = 1,
                             .cutoff = s->physics.cutoff,
                             .reproducible = o.reproducible,
                             .exclusion_mode =
                                 o.on_the_fly ? FK_EXCLUDE_ON_THE_FLY : FK_EXCLUDE_AFTERWARDS,
                             .max_exclusions = o.on_the_fly ? o.max_exclusions : 0};
    memcpy(config.box, s->physics.box, sizeof config.box);
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(fk_test_context, &config, &eval);
    if (status == FK_ERR_UNSUPPORTED && !fk_context_device(fk_test_context)->fp64 &&
        (strcmp(o.accum, "double") == 0 || strcmp(o.accum, "ref") == 0))
        return NULL; /* no fp64 on this device */
    if (status != FK_OK)
        fail_msg("create %s %s %s: %s: %s", o.accum, o.on_the_fly ? "on the fly" : "afterwards",
                 fk_algorithm_name((fk_algorithm)o.algorithm), fk_status_string(status),
                 fk_context_last_error(fk_test_context));
    return eval;
}

static void expect(fk_status status, const char *what)
{
    if (status != FK_OK)
        fail_msg("%s: %s: %s", what, fk_status_string(status),
                 fk_context_last_error(fk_test_context));
}

static void force_scale(fk_eval *eval, const char *accum, double scale)
{
    fk__eval_set_accum_param(eval, 0, (float)scale);
    if (strcmp(accum, "narumi") == 0) { /* LARGE = 3 2^e, LOWER_FACTOR 2^(46 - e) and inverse */
        int e = 0;
        frexp(scale / 3.0, &e);
        e -= 1;
        assert_true(ldexp(3.0, e) == scale);
        fk__eval_set_accum_param(eval, 1, (float)ldexp(1.0, 46 - e));
        fk__eval_set_accum_param(eval, 2, (float)ldexp(1.0, e - 46));
    }
}

/* Reads forces, potentials and the packed words of the last compute into r (NaN-poisoned). */
static void read_all(fk_eval *eval, size_t n, int decode, result *r)
{
    r->force = malloc(3 * n * sizeof(double));
    r->potential = malloc(n * sizeof(double));
    r->packed = malloc(8 * n * sizeof(uint32_t));
    assert_true(r->force && r->potential && r->packed);
    for (size_t i = 0; i < 3 * n; ++i)
        r->force[i] = NAN;
    for (size_t i = 0; i < n; ++i)
        r->potential[i] = NAN;
    if (decode) {
        expect(fk_eval_read_forces(eval, r->force), "read forces");
        expect(fk_eval_read_potentials(eval, r->potential), "read potentials");
    }
    expect(fk__eval_read_packed(eval, r->packed), "read packed");
    r->scale = fk__eval_accum_scale(eval);
}

/* One evaluation; returns 0 (and nothing in r) when the device cannot run the accumulator. */
static int evaluate(const test_system *s, run_options o, result *r)
{
    memset(r, 0, sizeof *r);
    fk_eval *eval = create(s, o);
    if (!eval)
        return 0;
    expect(fk_eval_set_pair_table(eval, &s->table), "set_pair_table");
    expect(fk_eval_set_exclusions(eval, s->exclusions, s->exclusion_count), "set_exclusions");
    const fk_particles particles = view(s);
    expect(fk_eval_set_particles(eval, &particles), "set_particles");
    if (o.forced_scale > 0)
        force_scale(eval, o.accum, o.forced_scale);
    r->seconds = -1;
    expect(fk_eval_compute(eval, &r->seconds), "compute");
    assert_true(fk_test_seconds_reported(fk_test_context, r->seconds));
    read_all(eval, s->n, o.forced_scale <= 0, r);
    fk_eval_destroy(eval);
    return 1;
}

/* Worst error in units of the allowed error; fails above 1 or on a non-finite value. The bound is
 * the one of the mode o ran in (afterwards outside reproducible mode: allowed_afterwards). */
static double check(const char *what, const test_system *s, const reference *ref, run_options o,
                    const result *r)
{
    const char *accum = o.accum;
    double (*bound)(const char *, size_t, double, double, double) =
        o.on_the_fly || o.reproducible ? allowed : allowed_afterwards;
    double worst = 0;
    for (size_t i = 0; i < s->n; ++i)
        for (unsigned c = 0; c <= 3; ++c) {
            const int pot = c == 3;
            const double value = pot ? r->potential[i] : r->force[3 * i + c];
            const double want = pot ? ref->potential[i] : ref->force[3 * i + c];
            if (!isfinite(value))
                fail_msg("%s: particle %zu component %u is %g", what, i, c, value);
            const double limit = bound(accum, s->n, pot ? ref->pot_included[i] : ref->included[i],
                                       pot ? ref->pot_all[i] : ref->all[i], ref->largest_all);
            const double error = fabs(value - want) / limit;
            if (error > 1.0)
                fail_msg("%s: particle %zu component %u: %.17g, reference %.17g (error %.3g of "
                         "the allowed %.3g)",
                         what, i, c, value, want, error, limit);
            worst = fmax(worst, error);
        }
    return worst;
}

static void same_bits(const char *what, size_t n, const result *a, const result *b)
{
    for (size_t w = 0; w < 8 * n; ++w)
        if (a->packed[w] != b->packed[w])
            fail_msg("%s: packed word %zu (particle %zu) differs: %08x vs %08x", what, w, w / 8,
                     a->packed[w], b->packed[w]);
}

/* ---------------------------------------------------------------------------------------------- */
/* Tests */

static const char *const accumulators[] = {"float", "double", "ti", "narumi", "fixed64", "ref"};
enum { ACCUMULATORS = sizeof accumulators / sizeof accumulators[0] };

/* Both modes, every accumulator, against the reference; on the fly with automatic and explicit
 * slots; afterwards also in reproducible mode where the accumulator allows it. */
static int reproducible_capable(const char *accum)
{
    return strcmp(accum, "fixed64") == 0 || strcmp(accum, "narumi") == 0;
}

static void test_modes_against_reference(void **state)
{
    (void)state;
    test_system s;
    make_system(&s, 150, 0, 0);
    reference ref = make_reference(&s);
    fprintf(stderr, "N = %zu, %zu exclusions, excluded terms up to %.3g times the included\n", s.n,
            s.exclusion_count, ref.largest_excluded_ratio);
    assert_true(ref.largest_excluded_ratio > 1e4); /* the case this is about */
    for (size_t a = 0; a < ACCUMULATORS; ++a) {
        const char *accum = accumulators[a];
        const run_options modes[] = {
            {.accum = accum, .on_the_fly = 1},
            {.accum = accum, .on_the_fly = 1, .max_exclusions = ON_THE_FLY_SLOTS},
            {.accum = accum},
            {.accum = accum, .reproducible = 1},
        };
        const char *names[] = {"on the fly", "on the fly, explicit slots", "afterwards",
                               "afterwards, reproducible"};
        double worst[4] = {0, 0, 0, 0};
        for (int m = 0; m < 4; ++m) {
            if (modes[m].reproducible && !reproducible_capable(accum))
                continue;
            result r;
            if (!evaluate(&s, modes[m], &r))
                continue;
            char what[96];
            snprintf(what, sizeof what, "%s %s", accum, names[m]);
            worst[m] = check(what, &s, &ref, modes[m], &r);
            free_result(&r);
        }
        fprintf(stderr,
                "%-8s worst error / allowed: on the fly %.3g (explicit slots %.3g), afterwards "
                "%.3g, reproducible afterwards %.3g\n",
                accum, worst[0], worst[1], worst[2], worst[3]);
    }
    free_reference(&ref);
    free_system(&s);
}

/* fixed64 and narumi: afterwards subtracts exactly what the pair loop added when both kernels
 * compute the same terms, which reproducible mode makes true by construction: at the same scale
 * the integers equal those of on the fly. Across j-splits the same program computes every term,
 * so that holds in either mode. */
static void test_exact_cancellation(void **state)
{
    (void)state;
    test_system s;
    make_system(&s, 150, 0, 0);
    static const char *const exact[] = {"fixed64", "narumi"};
    for (size_t a = 0; a < 2; ++a) {
        result after, after_split, fly, fly_split, plain, plain_split;
        const char *accum = exact[a];
        assert_true(
            evaluate(&s, (run_options){.accum = accum, .reproducible = 1, .j_splits = 1}, &after));
        assert_true(evaluate(&s, (run_options){.accum = accum, .reproducible = 1, .j_splits = 3},
                             &after_split));
        assert_true(evaluate(&s,
                             (run_options){.accum = accum,
                                           .reproducible = 1,
                                           .on_the_fly = 1,
                                           .j_splits = 1,
                                           .forced_scale = after.scale},
                             &fly));
        assert_true(evaluate(&s,
                             (run_options){.accum = accum,
                                           .reproducible = 1,
                                           .on_the_fly = 1,
                                           .j_splits = 3,
                                           .forced_scale = after.scale},
                             &fly_split));
        assert_true(evaluate(&s, (run_options){.accum = accum, .j_splits = 1}, &plain));
        assert_true(evaluate(&s, (run_options){.accum = accum, .j_splits = 3}, &plain_split));
        char what[96];
        snprintf(what, sizeof what, "%s reproducible afterwards vs on the fly", accum);
        same_bits(what, s.n, &after, &fly);
        snprintf(what, sizeof what, "%s reproducible afterwards, 1 vs 3 j-splits", accum);
        same_bits(what, s.n, &after, &after_split);
        snprintf(what, sizeof what, "%s reproducible on the fly, 3 j-splits", accum);
        same_bits(what, s.n, &after, &fly_split);
        snprintf(what, sizeof what, "%s afterwards, 1 vs 3 j-splits", accum);
        same_bits(what, s.n, &plain, &plain_split);
        /* And not trivially: the scale differs from on the fly's own (the excluded terms are the
         * largest), and the words are not those of the unsubtracted sums. */
        result own;
        assert_true(evaluate(&s, (run_options){.accum = accum, .on_the_fly = 1}, &own));
        assert_true(own.scale != after.scale);
        fprintf(stderr, "%s: afterwards bit-identical to on the fly at scale %g (its own: %g)\n",
                accum, after.scale, own.scale);
        free_result(&after);
        free_result(&after_split);
        free_result(&fly);
        free_result(&fly_split);
        free_result(&plain);
        free_result(&plain_split);
        free_result(&own);
    }
    free_system(&s);
}

/* A particle with 83 partners (N = 160): more than the on-the-fly kernel can hold (64 slots at
 * most): a clear error there, while afterwards has no per-particle limit. */
static void test_many_partners(void **state)
{
    (void)state;
    test_system s;
    make_system(&s, 160, 1, 0);
    size_t hub = 0;
    for (size_t e = 0; e < s.exclusion_count; ++e)
        hub += s.exclusions[2 * e] == s.n / 2 || s.exclusions[2 * e + 1] == s.n / 2;
    assert_true(hub > 64);

    fk_eval *fly = create(&s, (run_options){.accum = "float", .on_the_fly = 1});
    fk_status status = fk_eval_set_exclusions(fly, s.exclusions, s.exclusion_count);
    assert_int_equal(status, FK_ERR_INVALID_INPUT);
    char expected[64];
    snprintf(expected, sizeof expected, "a particle has %zu excluded partners", hub);
    if (!strstr(fk_context_last_error(fk_test_context), expected) ||
        !strstr(fk_context_last_error(fk_test_context), "afterwards"))
        fail_msg("on the fly with %zu partners: %s", hub, fk_context_last_error(fk_test_context));
    fk_eval_destroy(fly);

    reference ref = make_reference(&s);
    for (size_t a = 0; a < ACCUMULATORS; ++a) {
        for (int reproducible = 0; reproducible < 2; ++reproducible) {
            if (reproducible && !reproducible_capable(accumulators[a]))
                continue;
            const run_options o = {.accum = accumulators[a], .reproducible = reproducible};
            result r;
            if (!evaluate(&s, o, &r))
                continue;
            char what[96];
            snprintf(what, sizeof what, "%s afterwards%s, a particle with %zu partners",
                     accumulators[a], reproducible ? " (reproducible)" : "", hub);
            const double worst = check(what, &s, &ref, o, &r);
            fprintf(stderr, "%-8s%s %zu partners: worst error / allowed %.3g\n", accumulators[a],
                    reproducible ? " reproducible" : "", hub, worst);
            free_result(&r);
        }
    }
    free_reference(&ref);
    free_system(&s);
}

/* Automatic slots follow the exclusions: set, grown past the build, cleared; the pair table set
 * before a rebuild stays. Each state against the reference of that state. */
static void test_automatic_slots(void **state)
{
    (void)state;
    test_system s;
    make_system(&s, 150, 0, 0);
    const run_options o = {.accum = "fixed64", .on_the_fly = 1};
    fk_eval *eval = create(&s, o);
    expect(fk_eval_set_pair_table(eval, &s.table), "set_pair_table");
    const size_t all = s.exclusion_count;
    const size_t counts[] = {1, all, 0, all};
    for (size_t step = 0; step < sizeof counts / sizeof counts[0]; ++step) {
        s.exclusion_count = counts[step];
        expect(fk_eval_set_exclusions(eval, s.exclusions, s.exclusion_count), "set_exclusions");
        const fk_particles particles = view(&s);
        expect(fk_eval_set_particles(eval, &particles), "set_particles");
        expect(fk_eval_compute(eval, NULL), "compute");
        result r;
        read_all(eval, s.n, 1, &r);
        reference ref = make_reference(&s);
        char what[96];
        snprintf(what, sizeof what, "automatic slots, %zu exclusions", counts[step]);
        const double worst = check(what, &s, &ref, o, &r);
        fprintf(stderr, "%s: worst error / allowed %.3g\n", what, worst);
        free_result(&r);
        free_reference(&ref);
    }
    fk_eval_destroy(eval);
    s.exclusion_count = all;
    free_system(&s);
}

/* fk_eval_update_positions keeps the partner lists; the subtraction reads the new positions. */
static void test_update_positions(void **state)
{
    (void)state;
    test_system s;
    make_system(&s, 150, 0, 0);
    const char *accum = fk_context_device(fk_test_context)->fp64 ? "double" : "ti";
    const run_options o = {.accum = accum};
    fk_eval *eval = create(&s, o);
    assert_non_null(eval);
    expect(fk_eval_set_pair_table(eval, &s.table), "set_pair_table");
    expect(fk_eval_set_exclusions(eval, s.exclusions, s.exclusion_count), "set_exclusions");
    const fk_particles particles = view(&s);
    expect(fk_eval_set_particles(eval, &particles), "set_particles");
    expect(fk_eval_compute(eval, NULL), "compute");
    for (size_t i = 0; i < 3 * s.n; ++i) /* move everything a little (no pair comes close) */
        s.position[i] = on_grid(s.position[i] + uniform(-0.03, 0.03));
    expect(fk_eval_update_positions(eval, s.position, NULL), "update_positions");
    expect(fk_eval_compute(eval, NULL), "compute after the update");
    result r;
    read_all(eval, s.n, 1, &r);
    fk_eval_destroy(eval);
    reference ref = make_reference(&s);
    const double worst = check("afterwards after update_positions", &s, &ref, o, &r);
    fprintf(stderr, "%s after update_positions: worst error / allowed %.3g\n", accum, worst);
    free_result(&r);
    free_reference(&ref);
    free_system(&s);
}

/* The other pair loops leave their results where the all-pairs loop does; the subtraction follows
 * each. In reproducible mode every loop computes the same terms: fixed64 gives the same integers
 * as all-pairs, in both modes. Outside it, each loop against the reference. */
static void check_algorithm(const test_system *s, const reference *ref, fk_algorithm algorithm)
{
    const char *name = fk_algorithm_name(algorithm);
    for (int on_the_fly = 0; on_the_fly < 2; ++on_the_fly) {
        const char *mode = on_the_fly ? "on the fly" : "afterwards";
        const run_options exact = {.accum = "fixed64", .reproducible = 1, .on_the_fly = on_the_fly};
        run_options exact_other = exact;
        exact_other.algorithm = (int)algorithm;
        const run_options fixed = {
            .accum = "fixed64", .on_the_fly = on_the_fly, .algorithm = (int)algorithm};
        const run_options single = {
            .accum = "float", .on_the_fly = on_the_fly, .algorithm = (int)algorithm};
        result pairs, other, other_fixed, other_float;
        assert_true(evaluate(s, exact, &pairs));
        assert_true(evaluate(s, exact_other, &other));
        assert_true(evaluate(s, fixed, &other_fixed));
        assert_true(evaluate(s, single, &other_float));
        char what[128];
        snprintf(what, sizeof what, "reproducible fixed64 %s, %s vs all-pairs", mode, name);
        same_bits(what, s->n, &other, &pairs);
        snprintf(what, sizeof what, "reproducible fixed64 %s, %s", mode, name);
        const double worst_exact = check(what, s, ref, exact_other, &other);
        snprintf(what, sizeof what, "fixed64 %s, %s", mode, name);
        const double worst = check(what, s, ref, fixed, &other_fixed);
        snprintf(what, sizeof what, "float %s, %s", mode, name);
        const double worst_float = check(what, s, ref, single, &other_float);
        fprintf(stderr,
                "%s %s: reproducible fixed64 bit-identical to all-pairs; worst error / allowed "
                "reproducible fixed64 %.3g, fixed64 %.3g, float %.3g\n",
                name, mode, worst_exact, worst, worst_float);
        free_result(&pairs);
        free_result(&other);
        free_result(&other_fixed);
        free_result(&other_float);
    }
}

static void test_symmetric(void **state)
{
    (void)state;
    test_system s;
    make_system(&s, 150, 0, 0);
    reference ref = make_reference(&s);
    check_algorithm(&s, &ref, FK_ALGORITHM_SYMMETRIC);
    free_reference(&ref);
    free_system(&s);
}

/* Half lists (the float and fixed64 runs: each pair once, the mask from i's side) in the same
 * periodic box, the far excluded pair within the cutoff only through the minimum image. */
static void test_neighbors_periodic(void **state)
{
    (void)state;
    test_system s;
    make_system(&s, 216, 0, 1);
    reference ref = make_reference(&s);
    check_algorithm(&s, &ref, FK_ALGORITHM_NEIGHBORS);
    free_reference(&ref);
    free_system(&s);
}

static void test_cells_periodic(void **state)
{
    (void)state;
    test_system s;
    make_system(&s, 216, 0, 1);
    reference ref = make_reference(&s);
    /* the pair (0, far) is excluded and within the cutoff only through the minimum image */
    const double *far = s.position + 3 * s.far;
    const double cutoff2 = s.physics.cutoff * s.physics.cutoff;
    assert_true(distance2(s.position, far, s.physics.box) < cutoff2 &&
                distance2(s.position, far, NULL) > cutoff2);
    check_algorithm(&s, &ref, FK_ALGORITHM_CELLS);
    free_reference(&ref);
    free_system(&s);
}

/* The excluded pairs of s replaced by every pair with 0 < |i - j| <= reach: interior particles
 * then have exactly 2 reach partners (the bonded pairs stay excluded: |i - j| = 1). */
static void exclude_within(test_system *s, size_t reach)
{
    free(s->exclusions);
    s->exclusions = NULL;
    s->exclusion_count = 0;
    size_t capacity = 0;
    for (size_t i = 0; i < s->n; ++i)
        for (size_t j = i + 1; j < s->n && j <= i + reach; ++j)
            add_pair(s, &capacity, i, j);
}

/* The included pairs' part of the bound widened by each term's sensitivity |r dF/dr| (and the
 * potential's): a pure LJ term near its minimum is the difference of nearly equal parts, and its
 * float rounding is relative to the parts, not to their small difference. For LJ, |rep| + |att|
 * <= 3.4 (|F| + |r F'|) at every r (F' = (-13 rep + 7 att) / r); Coulomb's r F' = -2 F. */
static void widen_for_cancellation(const test_system *s, reference *ref)
{
    const size_t n = s->n;
    const double stretch = 1e-6;
    unsigned char *excluded = calloc(n * n, 1);
    assert_non_null(excluded);
    for (size_t e = 0; e < s->exclusion_count; ++e) {
        const size_t i = s->exclusions[2 * e], j = s->exclusions[2 * e + 1];
        excluded[i * n + j] = excluded[j * n + i] = 1;
    }
    const fk_kernel_desc *kernel = fk__kernel_desc(kernel_name);
    fk__physics resolved;
    char message[256];
    assert_int_equal(fk__physics_resolve(kernel, &s->physics, &resolved, message, sizeof message),
                     FK_OK);
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
            if (j == i || excluded[i * n + j])
                continue;
            double d[3];
            for (int k = 0; k < 3; ++k)
                d[k] = s->position[3 * i + (size_t)k] - s->position[3 * j + (size_t)k];
            fk__minimum_image(&resolved, d);
            const double r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            const double *pair = s->values + 2 * ((size_t)s->type[i] * TYPES + (size_t)s->type[j]);
            const double qq = s->charge[i] * s->charge[j];
            double f, u, f_far, u_far;
            fk__pair_function_shifted(kernel, &resolved, pair, qq, r, &f, &u);
            fk__pair_function_shifted(kernel, &resolved, pair, qq, r * (1.0 + stretch), &f_far,
                                      &u_far);
            ref->included[i] += fabs(f_far - f) / stretch;
            ref->pot_included[i] += 0.5 * fabs(u_far - u) / stretch;
        }
    free(excluded);
}

/* On the fly with every slot in use: the slots are filled in fours (int4 records), so particles
 * with exactly 4 and exactly 8 partners fill the automatic 4 and 8 slots to the last one, where a
 * slot loop that stops one short would count an excluded pair (a bonded one among them: 1e4 times
 * the included terms). lj (its terms alone) and ljc_constant, float and double, against the
 * reference that skips the excluded pairs exactly (the pair part of the bound widened for LJ's
 * cancellation: widen_for_cancellation); and float with the neighbour lists and cells in a
 * periodic box. */
static void test_full_slots(void **state)
{
    (void)state;
    static const char *const laws[] = {"lj", "ljc_constant"};
    static const char *const full[] = {"float", "double"};
    for (size_t l = 0; l < 2; ++l) {
        kernel_name = laws[l];
        for (size_t reach = 2; reach <= 4; reach += 2) {
            test_system s;
            make_system(&s, 150, 0, 0);
            exclude_within(&s, reach);
            reference ref = make_reference(&s);
            widen_for_cancellation(&s, &ref);
            for (size_t a = 0; a < 2; ++a) {
                const run_options o = {.accum = full[a], .on_the_fly = 1};
                result r;
                if (!evaluate(&s, o, &r))
                    continue;
                char what[96];
                snprintf(what, sizeof what, "%s %s on the fly, %zu partners in %zu slots",
                         kernel_name, full[a], 2 * reach, 2 * reach);
                const double worst = check(what, &s, &ref, o, &r);
                fprintf(stderr, "%s: worst error / allowed %.3g\n", what, worst);
                free_result(&r);
            }
            free_reference(&ref);
            free_system(&s);
        }
        /* The grid loops in a periodic box (cutoff 2.5), whose lane forms check the slots in code
         * of their own (cl/neighbors.cl). */
        for (size_t reach = 2; reach <= 4; reach += 2) {
            test_system s;
            make_system(&s, 216, 0, 1);
            exclude_within(&s, reach);
            reference ref = make_reference(&s);
            widen_for_cancellation(&s, &ref);
            /* the neighbour lists' scalar walk and lane form (explicit: the test's unrolling
             * would ask for the scalar walk), the cells */
            static const fk_algorithm grid[] = {FK_ALGORITHM_NEIGHBORS, FK_ALGORITHM_NEIGHBORS,
                                                FK_ALGORITHM_CELLS};
            static const int lanes[] = {-1, 8, 0};
            for (size_t g = 0; g < 3; ++g) {
                if (lanes[g] > 0 && fk_context_device(fk_test_context)->type == FK_DEVICE_CPU &&
                    fk__device_lane_width(fk_test_context) < lanes[g]) {
                    /* a CPU narrower than the lanes refuses them (test_lanes holds the refusal;
                     * Mesa's llvmpipe reports a native float width of 1) */
                    fprintf(stderr,
                            "%s, neighbors in %d lanes: skipped, wider than the device's "
                            "native float vector\n",
                            kernel_name, lanes[g]);
                    continue;
                }
                const run_options o = {.accum = "float",
                                       .on_the_fly = 1,
                                       .algorithm = (int)grid[g],
                                       .lanes = lanes[g]};
                result r;
                assert_true(evaluate(&s, o, &r));
                char what[96];
                snprintf(what, sizeof what, "%s float on the fly, %s%s, %zu partners in %zu slots",
                         kernel_name, fk_algorithm_name(grid[g]), lanes[g] > 0 ? " in lanes" : "",
                         2 * reach, 2 * reach);
                const double worst = check(what, &s, &ref, o, &r);
                fprintf(stderr, "%s: worst error / allowed %.3g\n", what, worst);
                free_result(&r);
            }
            free_reference(&ref);
            free_system(&s);
        }
    }
    kernel_name = "ljc_constant";
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modes_against_reference),
        cmocka_unit_test(test_exact_cancellation),
        cmocka_unit_test(test_many_partners),
        cmocka_unit_test(test_automatic_slots),
        cmocka_unit_test(test_update_positions),
        cmocka_unit_test(test_symmetric),
        cmocka_unit_test(test_cells_periodic),
        cmocka_unit_test(test_neighbors_periodic),
        cmocka_unit_test(test_full_slots),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
