/* Targets against sources (fk_sources, issue #18): the engine against the double-precision
 * reference (tests/g6/g6_reference.c) on fresh random inputs, per accumulator and position mode:
 * acceleration, jerk, potential, nearest neighbour, the device predictor (dt != 0 with every
 * Taylor term), ID exclusion, neighbour lists equal to brute force including overflow (T4), and
 * bad input. Output arrays are poisoned with NaN before every finish. */
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
#include "g6/g6_reference.h"
#include "test_support.h"

/* A random tsystem: nj sources (IDs 1000 + 3 j, so that IDs are not slots), spread over a unit
 * sphere around an offset centre (far from the origin, where float positions lose digits),
 * with velocities, accelerations, jerks and snaps of order 1 and times tj in [0, 0.1). */
typedef struct tsystem {
    size_t nj, ni;
    g6ref_source *sources;
    double ti;
    int *target_id;
    double *tx, *tv, *h2;
    /* reference */
    double *px, *pv, *mass;
    int *source_id;
} tsystem;

static double uniform(fk_test_rng *rng, double lo, double hi)
{
    return lo + (hi - lo) * fk_test_rng_uniform(rng);
}

static void system_make(tsystem *s, size_t nj, size_t ni, double centre, fk_test_rng *rng)
{
    memset(s, 0, sizeof *s);
    s->nj = nj;
    s->ni = ni;
    s->sources = calloc(nj, sizeof *s->sources);
    s->px = calloc(3 * nj, sizeof(double));
    s->pv = calloc(3 * nj, sizeof(double));
    s->mass = calloc(nj, sizeof(double));
    s->source_id = calloc(nj, sizeof(int));
    s->target_id = calloc(ni, sizeof(int));
    s->tx = calloc(3 * ni, sizeof(double));
    s->tv = calloc(3 * ni, sizeof(double));
    s->h2 = calloc(ni, sizeof(double));
    s->ti = 0.125;
    for (size_t j = 0; j < nj; ++j) {
        g6ref_source *src = &s->sources[j];
        src->id = 1000 + 3 * (int)j;
        src->t = uniform(rng, 0, 0.1);
        src->mass = uniform(rng, 0.5, 1.5) / (double)nj;
        for (int k = 0; k < 3; ++k) {
            src->x[k] = centre + uniform(rng, -1, 1);
            src->v[k] = uniform(rng, -1, 1);
            src->a[k] = uniform(rng, -1, 1);
            src->jerk[k] = uniform(rng, -2, 2);
            src->snap[k] = uniform(rng, -4, 4);
        }
        g6ref_predict(src, s->ti, s->px + 3 * j, s->pv + 3 * j);
        s->mass[j] = src->mass;
        s->source_id[j] = src->id;
    }
    /* Half the targets are sources (their own predicted copies, moved by 1e-9: the host's
     * prediction differs from the device's, and the ID must exclude the pair anyway), half are
     * foreign points with IDs no source has. */
    for (size_t i = 0; i < ni; ++i) {
        if (i % 2 == 0) {
            const size_t j = (i * 7) % nj;
            s->target_id[i] = s->sources[j].id;
            for (int k = 0; k < 3; ++k) {
                s->tx[3 * i + k] = s->px[3 * j + k] + 1e-9;
                s->tv[3 * i + k] = s->pv[3 * j + k];
            }
        } else {
            s->target_id[i] = 7 + (int)i; /* below 1000: no source has it */
            for (int k = 0; k < 3; ++k) {
                s->tx[3 * i + k] = centre + uniform(rng, -1, 1);
                s->tv[3 * i + k] = uniform(rng, -1, 1);
            }
        }
        s->h2[i] = uniform(rng, 0.01, 0.09);
    }
}

static void system_free(tsystem *s)
{
    free(s->sources);
    free(s->px);
    free(s->pv);
    free(s->mass);
    free(s->source_id);
    free(s->target_id);
    free(s->tx);
    free(s->tv);
    free(s->h2);
}

/* A reference source as the engine's slot. */
static fk_source slot_of(const g6ref_source *src)
{
    fk_source slot = {.id = src->id, .t = src->t, .mass = src->mass};
    memcpy(slot.x, src->x, sizeof slot.x);
    memcpy(slot.v, src->v, sizeof slot.v);
    memcpy(slot.a, src->a, sizeof slot.a);
    memcpy(slot.jerk, src->jerk, sizeof slot.jerk);
    memcpy(slot.snap, src->snap, sizeof slot.snap);
    return slot;
}

/* Targets per work-item for load() (fk_sources_config.unroll; 0: the default, 1). */
static int load_unroll = 0;

/* The first ni targets of s against its first nj sources at s's time, with fixed64's scale hints
 * (the reference's acceleration, jerk and potential). */
static fk_targets hinted_targets(const tsystem *s, size_t ni, size_t nj, double eps2,
                                 const double *acc_hint, const double *jerk_hint,
                                 const double *pot_hint)
{
    return (fk_targets){.count = ni,
                        .sources = nj,
                        .time = s->ti,
                        .eps2 = eps2,
                        .id = s->target_id,
                        .position = s->tx,
                        .velocity = s->tv,
                        .acc_hint = acc_hint,
                        .jerk_hint = jerk_hint,
                        .pot_hint = pot_hint};
}

static fk_sources *load(const tsystem *s, const char *accum, fk_positions positions,
                        size_t max_targets, size_t neighbor_capacity)
{
    fk_sources_config config = FK_CONFIG_INIT(fk_sources_config);
    config.unroll = load_unroll;
    config.capacity = s->nj + 5; /* more slots than the evaluation uses */
    config.max_targets = max_targets;
    config.accum = accum;
    config.positions = positions;
    config.neighbor_capacity = neighbor_capacity;
    fk_sources *engine = NULL;
    fk_status status = fk_sources_create(fk_test_context, &config, &engine);
    if (status != FK_OK)
        fail_msg("fk_sources_create (%s, %s): %s: %s", accum, fk_positions_name(positions),
                 fk_status_string(status), fk_context_last_error(fk_test_context));
    /* In reverse order, so that the dirty range is built from both ends. */
    for (size_t j = s->nj; j-- > 0;) {
        const g6ref_source *src = &s->sources[j];
        const fk_source slot = slot_of(src);
        assert_int_equal(fk_sources_set(engine, j, &slot), FK_OK);
    }
    return engine;
}

/* Evaluates all targets (in batches of max_targets) and compares with the reference: the largest
 * error of each quantity relative to that target's scale (sum_j of |term|, so cancellation does
 * not inflate it), and the nearest neighbours exactly. */
static void check_against_reference(const char *accum, fk_positions positions, double centre,
                                    double tolerance_acc, double tolerance_jerk,
                                    double tolerance_pot)
{
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    tsystem s;
    const size_t nj = 1003, ni = 300, batch = 128;
    system_make(&s, nj, ni, centre, &rng);
    fk_sources *engine = load(&s, accum, positions, batch, 0);
    const double eps2 = 1e-4;

    double *ref_acc = calloc(3 * ni, sizeof(double)), *ref_jerk = calloc(3 * ni, sizeof(double));
    double *ref_pot = calloc(ni, sizeof(double));
    int *ref_nn = calloc(ni, sizeof(int));
    g6ref_evaluate(ni, s.target_id, s.tx, s.tv, nj, s.source_id, s.px, s.pv, s.mass, eps2, ref_acc,
                   ref_jerk, ref_pot, ref_nn);
    /* Scales: the sums of |terms| (|acc| scale: sum m/s^2; jerk: sum m |v|/s^3 + 3 m |v|/s^3). */
    double *scale_acc = calloc(ni, sizeof(double)), *scale_jerk = calloc(ni, sizeof(double));
    double *scale_pot = calloc(ni, sizeof(double));
    for (size_t i = 0; i < ni; ++i)
        for (size_t j = 0; j < nj; ++j) {
            if (s.source_id[j] == s.target_id[i])
                continue;
            double r2 = eps2, v2 = 0;
            for (int k = 0; k < 3; ++k) {
                const double d = s.px[3 * j + k] - s.tx[3 * i + k];
                const double w = s.pv[3 * j + k] - s.tv[3 * i + k];
                r2 += d * d;
                v2 += w * w;
            }
            scale_pot[i] += s.mass[j] / sqrt(r2);
            scale_acc[i] += s.mass[j] / r2;
            scale_jerk[i] += 4 * s.mass[j] * sqrt(v2) / (r2 * sqrt(r2));
        }

    double worst_acc = 0, worst_jerk = 0, worst_pot = 0;
    size_t nn_mismatch = 0;
    double acc[3 * 128], jerk[3 * 128], pot[128];
    int nearest[128];
    for (size_t first = 0; first < ni; first += batch) {
        const size_t n = ni - first < batch ? ni - first : batch;
        fk_targets targets = {.count = n,
                              .sources = nj,
                              .time = s.ti,
                              .eps2 = eps2,
                              .id = s.target_id + first,
                              .position = s.tx + 3 * first,
                              .velocity = s.tv + 3 * first};
        assert_int_equal(fk_sources_start(engine, &targets), FK_OK);
        for (size_t k = 0; k < 3 * batch; ++k)
            acc[k] = jerk[k] = NAN;
        for (size_t k = 0; k < batch; ++k) {
            pot[k] = NAN;
            nearest[k] = -7;
        }
        fk_target_results results = {acc, jerk, pot, nearest};
        fk_status status = fk_sources_finish(engine, &results);
        if (status != FK_OK)
            fail_msg("finish: %s: %s", fk_status_string(status),
                     fk_context_last_error(fk_test_context));
        for (size_t i = 0; i < n; ++i) {
            const size_t g = first + i;
            for (int k = 0; k < 3; ++k) {
                const double ea = fabs(acc[3 * i + k] - ref_acc[3 * g + k]) / scale_acc[g];
                const double ej = fabs(jerk[3 * i + k] - ref_jerk[3 * g + k]) / scale_jerk[g];
                worst_acc = !(ea <= worst_acc) ? ea : worst_acc; /* NaN wins */
                worst_jerk = !(ej <= worst_jerk) ? ej : worst_jerk;
            }
            const double ep = fabs(pot[i] - ref_pot[g]) / scale_pot[g];
            worst_pot = !(ep <= worst_pot) ? ep : worst_pot;
            if (nearest[i] != ref_nn[g]) {
                if (nn_mismatch < 3)
                    fprintf(stderr, "  target %zu (ID %d): nearest %d, reference %d\n", g,
                            s.target_id[g], nearest[i], ref_nn[g]);
                ++nn_mismatch;
            }
        }
    }
    fprintf(stderr, "%s/%s centre %g: worst relative error acc %.3g jerk %.3g pot %.3g\n", accum,
            fk_positions_name(positions), centre, worst_acc, worst_jerk, worst_pot);
    if (!(worst_acc <= tolerance_acc) || !(worst_jerk <= tolerance_jerk) ||
        !(worst_pot <= tolerance_pot))
        fail_msg("%s/%s: errors acc %g jerk %g pot %g above %g %g %g", accum,
                 fk_positions_name(positions), worst_acc, worst_jerk, worst_pot, tolerance_acc,
                 tolerance_jerk, tolerance_pot);
    /* Nearest neighbours: exact with double pair arithmetic; with float terms a near tie may go
     * the other way, so allow one in a hundred there. */
    if (strcmp(accum, "ref") == 0)
        assert_int_equal(nn_mismatch, 0);
    else
        assert_true(nn_mismatch <= ni / 100);
    free(ref_acc);
    free(ref_jerk);
    free(ref_pot);
    free(ref_nn);
    free(scale_acc);
    free(scale_jerk);
    free(scale_pot);
    fk_sources_destroy(engine);
    system_free(&s);
}

/* DS positions with double pair arithmetic and sums: 1e-12 of the potential, as the issue asks,
 * at a centre of 10 where float positions would have 5e-7 absolute error. (A float pair holds 48
 * bits: at a centre C the absolute error of a coordinate is about C 2^-48, 3.6e-14 here.) */
static void test_ref_ds(void **state)
{
    (void)state;
    check_against_reference("ref", FK_POSITIONS_DOUBLE_SINGLE, 10.0, 1e-11, 1e-10, 1e-12);
}

/* The same near the origin, the default configuration (accum NULL = ref, positions 0 = DS). */
static void test_default_near_origin(void **state)
{
    (void)state;
    check_against_reference("ref", FK_POSITIONS_DEFAULT, 0.0, 1e-11, 1e-10, 1e-12);
}

/* Float pair terms, double sums, DS positions: float precision per term, independent of the
 * centre. */
static void test_double_ds(void **state)
{
    (void)state;
    check_against_reference("double", FK_POSITIONS_DOUBLE_SINGLE, 1000.0, 1e-5, 1e-5, 1e-5);
}

/* Float positions near the origin, float sums: the float class (5 digits). */
static void test_float_float(void **state)
{
    (void)state;
    check_against_reference("float", FK_POSITIONS_FLOAT, 0.0, 1e-4, 1e-4, 1e-5);
}

/* Float positions far from the origin lose digits; DS positions keep 2^24 times more. A pair 1e-3
 * apart at a centre of 1000: float coordinates carry about 3e-5 absolute error (3e-2 of the
 * distance), float pairs about 1000 * 2^-48 = 3.6e-12 (4e-9 of it). */
static void test_float_positions_lose_digits(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    tsystem s;
    system_make(&s, 64, 1, 1000.0, &rng);
    s.target_id[0] = 5;
    for (int k = 0; k < 3; ++k)
        s.tx[k] = s.px[k] + 1e-3; /* close to source 0 */
    double ref_pot;
    g6ref_evaluate(1, s.target_id, s.tx, s.tv, s.nj, s.source_id, s.px, s.pv, s.mass, 0.0, NULL,
                   NULL, &ref_pot, NULL);
    double errors[2];
    const fk_positions modes[2] = {FK_POSITIONS_FLOAT, FK_POSITIONS_DOUBLE_SINGLE};
    for (int m = 0; m < 2; ++m) {
        fk_sources *engine = load(&s, "ref", modes[m], 4, 0);
        fk_targets targets = {.count = 1,
                              .sources = s.nj,
                              .time = s.ti,
                              .eps2 = 0.0,
                              .id = s.target_id,
                              .position = s.tx,
                              .velocity = s.tv};
        double pot = NAN;
        assert_int_equal(fk_sources_start(engine, &targets), FK_OK);
        assert_int_equal(fk_sources_finish(engine, &(fk_target_results){.pot = &pot}), FK_OK);
        errors[m] = fabs(pot - ref_pot) / fabs(ref_pot);
        fk_sources_destroy(engine);
    }
    fprintf(stderr, "close pair at 1000: float positions %.3g, DS %.3g\n", errors[0], errors[1]);
    assert_true(errors[0] > 1e-4);
    assert_true(errors[1] < 1e-8);
    system_free(&s);
}

/* The self pair is excluded by ID even at zero distance and eps = 0 (finite results equal to the
 * reference that leaves it out); a target whose ID no source has sees every source. */
static void test_id_exclusion(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    tsystem s;
    system_make(&s, 50, 2, 0.0, &rng);
    s.target_id[0] = s.sources[3].id;
    s.target_id[1] = 1; /* nobody's */
    for (int k = 0; k < 3; ++k) {
        s.tx[k] = s.px[3 * 3 + k]; /* exactly on source 3 */
        s.tv[k] = s.pv[3 * 3 + k];
        s.tx[3 + k] = s.px[3 * 3 + k] + 0.25;
    }
    fk_sources *engine = load(&s, "ref", FK_POSITIONS_DOUBLE_SINGLE, 2, 0);
    fk_targets targets = {.count = 2,
                          .sources = s.nj,
                          .time = s.ti,
                          .eps2 = 0.0,
                          .id = s.target_id,
                          .position = s.tx,
                          .velocity = s.tv};
    double acc[6], pot[2], ref_acc[6], ref_pot[2];
    int nearest[2], ref_nn[2];
    assert_int_equal(fk_sources_start(engine, &targets), FK_OK);
    assert_int_equal(
        fk_sources_finish(engine, &(fk_target_results){.acc = acc, .pot = pot, .nearest = nearest}),
        FK_OK);
    g6ref_evaluate(2, s.target_id, s.tx, s.tv, s.nj, s.source_id, s.px, s.pv, s.mass, 0.0, ref_acc,
                   NULL, ref_pot, ref_nn);
    for (int i = 0; i < 2; ++i) {
        FK_ASSERT_NEAR(pot[i], ref_pot[i], 1e-11 * fabs(ref_pot[i]));
        assert_int_equal(nearest[i], ref_nn[i]);
        assert_int_not_equal(nearest[i], s.target_id[i]);
    }
    fk_sources_destroy(engine);
    system_free(&s);
}

/* T4: the neighbour lists equal brute force (sorted IDs), and overflow is flagged with the true
 * count when a list holds more than neighbor_capacity; the IDs kept then are a subset. */
static void check_neighbor_lists(void)
{
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    tsystem s;
    const size_t nj = 700, ni = 96, capacity = 24;
    system_make(&s, nj, ni, 10.0, &rng);
    /* Radii from empty to crowded: some lists overflow capacity 24 (0.09 of a unit cube of 700
     * sources holds about 100 at the centre). */
    for (size_t i = 0; i < ni; ++i)
        s.h2[i] = (i % 4 == 3) ? 0.0 : 0.3 * (double)(i % 11) / 10.0;
    fk_sources *engine = load(&s, "ref", FK_POSITIONS_DOUBLE_SINGLE, ni, capacity);
    fk_targets targets = {.count = ni,
                          .sources = nj,
                          .time = s.ti,
                          .eps2 = 1e-6,
                          .id = s.target_id,
                          .position = s.tx,
                          .velocity = s.tv,
                          .h2 = s.h2};
    assert_int_equal(fk_sources_start(engine, &targets), FK_OK);
    assert_int_equal(fk_sources_finish(engine, NULL), FK_OK);
    int *full = calloc(nj, sizeof(int));
    size_t overflowed = 0, nonempty = 0;
    for (size_t i = 0; i < ni; ++i) {
        const size_t expected =
            g6ref_neighbors(s.target_id[i], s.tx + 3 * i, s.h2[i], nj, s.source_id, s.px, full, nj);
        const int *ids = NULL;
        size_t count = 0;
        int overflow = -1;
        assert_int_equal(fk_sources_neighbors(engine, i, &ids, &count, &overflow), FK_OK);
        if (count != expected)
            fail_msg("target %zu: %zu neighbours, brute force %zu", i, count, expected);
        assert_int_equal(overflow, expected > capacity);
        if (expected > capacity) {
            ++overflowed;
            for (size_t k = 0; k < capacity; ++k) {
                int present = 0;
                for (size_t q = 0; q < expected && !present; ++q)
                    present = full[q] == ids[k];
                assert_true(present);
                if (k > 0)
                    assert_true(ids[k - 1] < ids[k]);
            }
        } else {
            nonempty += expected > 0;
            for (size_t k = 0; k < expected; ++k)
                assert_int_equal(ids[k], full[k]);
        }
    }
    fprintf(stderr, "neighbour lists: %zu overflowed, %zu non-empty within capacity\n", overflowed,
            nonempty);
    assert_true(overflowed > 0); /* the test covers overflow */
    assert_true(nonempty > 0);
    free(full);
    fk_sources_destroy(engine);
    system_free(&s);
}

/* The lists with one, two and four targets per work-item (96 targets: 24 work-items at four). */
static void test_neighbor_lists(void **state)
{
    (void)state;
    for (load_unroll = 1; load_unroll <= 4; load_unroll *= 2)
        check_neighbor_lists();
    load_unroll = 0;
}

/* Two targets per work-item (four is covered by the lists and the split counts): ref/ds and
 * float/float against the reference with test_ref_ds's and test_float_float's tolerances, 300
 * targets in blocks of 128 (the last block, 44, is not a multiple of 128). */
static void test_unrolled(void **state)
{
    (void)state;
    load_unroll = 2;
    check_against_reference("ref", FK_POSITIONS_DOUBLE_SINGLE, 10.0, 1e-11, 1e-10, 1e-12);
    check_against_reference("float", FK_POSITIONS_FLOAT, 0.0, 1e-4, 1e-4, 1e-5);
    load_unroll = 0;
}

/* An engine holding sources [first, end) of s in slots 0 .. end - first - 1. */
static fk_sources *load_part(const tsystem *s, const char *accum, size_t first, size_t end)
{
    fk_sources_config config = FK_CONFIG_INIT(fk_sources_config);
    config.capacity = end - first;
    config.max_targets = 64;
    config.accum = accum;
    fk_sources *engine = NULL;
    assert_int_equal(fk_sources_create(fk_test_context, &config, &engine), FK_OK);
    for (size_t j = first; j < end; ++j) {
        const g6ref_source *src = &s->sources[j];
        const fk_source slot = slot_of(src);
        assert_int_equal(fk_sources_set(engine, j - first, &slot), FK_OK);
    }
    return engine;
}

/* fk_sources_read_raw / decode_raw / set_scale_count (the MPI layer's block steps): the raw words
 * decode to finish's results bit for bit; two engines holding the two halves of the sources, with
 * the scale sized for all of them, give fixed64 integers whose sum decodes to one engine's results
 * bit for bit, and the nearest source is the nearer of the halves'. */
static void test_split_raw(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0x5b117ull);
    tsystem s;
    const size_t nj = 1003, ni = 64, half = 401;
    system_make(&s, nj, ni, 0.0, &rng);
    fk_targets targets = {.count = ni,
                          .sources = nj,
                          .time = s.ti,
                          .eps2 = 1e-4,
                          .id = s.target_id,
                          .position = s.tx,
                          .velocity = s.tv};
    double acc[3 * 64], jerk[3 * 64], pot[64], acc2[3 * 64], jerk2[3 * 64], pot2[64];
    int nearest[64], nearest2[64];
    uint64_t whole[64 * FK_SOURCES_RAW_WORDS], a[64 * FK_SOURCES_RAW_WORDS],
        b[64 * FK_SOURCES_RAW_WORDS];
    fk_sources *one = load_part(&s, "fixed64", 0, nj);
    assert_int_equal(fk_sources_read_raw(one, whole), FK_ERR_STATE); /* nothing finished */
    assert_int_equal(fk_sources_start(one, &targets), FK_OK);
    assert_int_equal(fk_sources_finish(one, &(fk_target_results){acc, jerk, pot, nearest}), FK_OK);
    assert_int_equal(fk_sources_read_raw(one, whole), FK_OK);
    assert_int_equal(
        fk_sources_decode_raw(one, whole, &(fk_target_results){acc2, jerk2, pot2, nearest2}),
        FK_OK);
    assert_memory_equal(acc, acc2, sizeof acc);
    assert_memory_equal(jerk, jerk2, sizeof jerk);
    assert_memory_equal(pot, pot2, sizeof pot);
    assert_memory_equal(nearest, nearest2, sizeof nearest);

    fk_sources *first = load_part(&s, "fixed64", 0, half),
               *second = load_part(&s, "fixed64", half, nj);
    assert_int_equal(fk_sources_set_scale_count(first, nj), FK_OK);
    assert_int_equal(fk_sources_set_scale_count(second, nj), FK_OK);
    targets.sources = half;
    assert_int_equal(fk_sources_start(first, &targets), FK_OK);
    assert_int_equal(fk_sources_finish(first, NULL), FK_OK);
    assert_int_equal(fk_sources_read_raw(first, a), FK_OK);
    targets.sources = nj - half;
    assert_int_equal(fk_sources_start(second, &targets), FK_OK);
    assert_int_equal(fk_sources_finish(second, NULL), FK_OK);
    assert_int_equal(fk_sources_read_raw(second, b), FK_OK);
    uint64_t first_alone[64 * FK_SOURCES_RAW_WORDS];
    memcpy(first_alone, a, sizeof first_alone);
    for (size_t i = 0; i < ni; ++i) {
        uint64_t *w = a + i * FK_SOURCES_RAW_WORDS;
        const uint64_t *v = b + i * FK_SOURCES_RAW_WORDS;
        for (int c = 0; c < 7; ++c)
            w[c] += v[c]; /* two's complement: the integers' sum */
        double ra, rb;
        memcpy(&ra, &w[8], sizeof ra);
        memcpy(&rb, &v[8], sizeof rb);
        const int ia = (int)(uint32_t)w[7], ib = (int)(uint32_t)v[7];
        if (ib >= 0 && (ia < 0 || rb < ra || (rb == ra && ib < ia))) {
            w[7] = v[7];
            w[8] = v[8];
        }
    }
    assert_int_equal(
        fk_sources_decode_raw(first, a, &(fk_target_results){acc2, jerk2, pot2, nearest2}), FK_OK);
    assert_memory_equal(acc, acc2, sizeof acc);
    assert_memory_equal(jerk, jerk2, sizeof jerk);
    assert_memory_equal(pot, pot2, sizeof pot);
    assert_memory_equal(nearest, nearest2, sizeof nearest);
    /* Without the scale count the halves' scales differ from the whole's: other bits. */
    assert_int_equal(fk_sources_set_scale_count(first, 0), FK_OK);
    targets.sources = half;
    assert_int_equal(fk_sources_start(first, &targets), FK_OK);
    assert_int_equal(fk_sources_finish(first, NULL), FK_OK);
    uint64_t own[64 * FK_SOURCES_RAW_WORDS];
    assert_int_equal(fk_sources_read_raw(first, own), FK_OK);
    assert_true(memcmp(own, first_alone, sizeof own) != 0);
    fk_sources_destroy(one);
    fk_sources_destroy(first);
    fk_sources_destroy(second);
    system_free(&s);
}

/* fixed64 scaled per target from hints, as GRAPE-6 scaled its sums: with hints of the right
 * magnitude the float class (the terms are float), with hints far too small an overflow reported
 * as FK_ERR_OVERFLOW and NaN in the overflowed sums, never a wrong finite value. */
static void test_fixed64_hints(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    tsystem s;
    const size_t nj = 1003, ni = 64;
    system_make(&s, nj, ni, 0.0, &rng);
    fk_sources *engine = load(&s, "fixed64", FK_POSITIONS_DOUBLE_SINGLE, ni, 0);
    const double eps2 = 1e-4;
    double ref_acc[3 * 64], ref_jerk[3 * 64], ref_pot[64], acc[3 * 64], jerk[3 * 64], pot[64];
    g6ref_evaluate(ni, s.target_id, s.tx, s.tv, nj, s.source_id, s.px, s.pv, s.mass, eps2, ref_acc,
                   ref_jerk, ref_pot, NULL);
    fk_targets targets = hinted_targets(&s, ni, nj, eps2, ref_acc, ref_jerk, ref_pot);
    assert_int_equal(fk_sources_start(engine, &targets), FK_OK);
    assert_int_equal(fk_sources_finish(engine, &(fk_target_results){acc, jerk, pot, NULL}), FK_OK);
    double worst = 0;
    for (size_t i = 0; i < ni; ++i) {
        const double na =
            sqrt(ref_acc[3 * i] * ref_acc[3 * i] + ref_acc[3 * i + 1] * ref_acc[3 * i + 1] +
                 ref_acc[3 * i + 2] * ref_acc[3 * i + 2]);
        const double nk =
            sqrt(ref_jerk[3 * i] * ref_jerk[3 * i] + ref_jerk[3 * i + 1] * ref_jerk[3 * i + 1] +
                 ref_jerk[3 * i + 2] * ref_jerk[3 * i + 2]);
        for (int k = 0; k < 3; ++k) {
            const double ea = fabs(acc[3 * i + k] - ref_acc[3 * i + k]) / na;
            const double ej = fabs(jerk[3 * i + k] - ref_jerk[3 * i + k]) / nk;
            worst = !(ea <= worst) ? ea : worst;
            worst = !(ej <= worst) ? ej : worst;
        }
        const double ep = fabs(pot[i] - ref_pot[i]) / fabs(ref_pot[i]);
        worst = !(ep <= worst) ? ep : worst;
    }
    fprintf(stderr, "fixed64 with hints: worst relative error %.3g\n", worst);
    assert_true(worst < 1e-4);
    /* Hints a million times too small: terms beyond the range. */
    for (size_t k = 0; k < 3 * ni; ++k) {
        ref_acc[k] *= 1e-9;
        ref_jerk[k] *= 1e-9;
    }
    for (size_t i = 0; i < ni; ++i)
        ref_pot[i] *= 1e-9;
    assert_int_equal(fk_sources_start(engine, &targets), FK_OK);
    assert_int_equal(fk_sources_finish(engine, &(fk_target_results){acc, jerk, pot, NULL}),
                     FK_ERR_OVERFLOW);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "fixed64"));
    assert_true(isnan(pot[0]));
    fk_sources_destroy(engine);
    system_free(&s);
}

/* The merge of the j-splits (a tree over up to 64 lanes, each lane merging every 64th split), with
 * one, two and four targets per work-item: split counts from 1 to above 64, not powers of two,
 * with small work-groups so that there are enough tiles to split. fixed64's sums are exact, so its
 * raw words (and the nearest neighbours) are the same bits for every split count and unroll; ref
 * stays within 1e-12 of the double reference. */
static void test_split_counts(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    tsystem s;
    const size_t nj = 1003, ni = 37;
    system_make(&s, nj, ni, 0.0, &rng);
    const double eps2 = 1e-4;
    double ref_acc[3 * 37], ref_jerk[3 * 37], ref_pot[37];
    int ref_nn[37];
    g6ref_evaluate(ni, s.target_id, s.tx, s.tv, nj, s.source_id, s.px, s.pv, s.mass, eps2, ref_acc,
                   ref_jerk, ref_pot, ref_nn);
    const int split_counts[] = {1, 3, 16, 65, 100, 126};
    const int unrolls[] = {1, 2, 4};
    uint64_t first_words[37 * FK_SOURCES_RAW_WORDS], words[37 * FK_SOURCES_RAW_WORDS];
    for (int a = 0; a < 2; ++a) {
        const char *accum = a == 0 ? "fixed64" : "ref";
        for (size_t c = 0; c < 3 * sizeof split_counts / sizeof split_counts[0]; ++c) {
            const int splits = split_counts[c / 3], unroll = unrolls[c % 3];
            fk_sources_config config = FK_CONFIG_INIT(fk_sources_config);
            config.capacity = nj;
            config.max_targets = ni;
            config.accum = accum;
            config.work_group_size = 8; /* 126 tiles of sources */
            config.j_splits = splits;
            config.unroll = unroll;
            fk_sources *engine = NULL;
            if (fk_sources_create(fk_test_context, &config, &engine) != FK_OK)
                fail_msg("fk_sources_create: %s", fk_context_last_error(fk_test_context));
            for (size_t j = 0; j < nj; ++j) {
                const fk_source slot = slot_of(&s.sources[j]);
                assert_int_equal(fk_sources_set(engine, j, &slot), FK_OK);
            }
            const fk_targets targets = hinted_targets(&s, ni, nj, eps2, ref_acc, ref_jerk, ref_pot);
            double acc[3 * 37], jerk[3 * 37], pot[37];
            int nearest[37];
            assert_int_equal(fk_sources_start(engine, &targets), FK_OK);
            assert_int_equal(
                fk_sources_finish(engine, &(fk_target_results){acc, jerk, pot, nearest}), FK_OK);
            double total = -1, loop = -1;
            const fk_status timed = fk_sources_device_seconds(engine, &total, &loop);
            assert_true(timed == FK_OK || timed == FK_ERR_UNSUPPORTED);
            if (timed == FK_OK)
                assert_true(total >= loop && loop >= 0);
            assert_int_equal(fk_sources_read_raw(engine, words), FK_OK);
            for (size_t i = 0; i < ni; ++i)
                assert_int_equal(nearest[i], ref_nn[i]);
            if (a == 0) {
                if (c == 0)
                    memcpy(first_words, words, sizeof words);
                else if (memcmp(first_words, words, sizeof words) != 0)
                    fail_msg("fixed64 with %d splits, unroll %d: not the bits of one split", splits,
                             unroll);
            } else {
                double worst = 0;
                for (size_t i = 0; i < ni; ++i) {
                    const double ep = fabs(pot[i] - ref_pot[i]) / fabs(ref_pot[i]);
                    worst = !(ep <= worst) ? ep : worst;
                    for (int k = 0; k < 3; ++k) {
                        const double ea = fabs(acc[3 * i + k] - ref_acc[3 * i + k]) /
                                          (fabs(ref_acc[3 * i]) + fabs(ref_acc[3 * i + 1]) +
                                           fabs(ref_acc[3 * i + 2]));
                        worst = !(ea <= worst) ? ea : worst;
                    }
                }
                if (!(worst < 1e-12))
                    fail_msg("ref with %d splits, unroll %d: relative error %g", splits, unroll,
                             worst);
            }
            fk_sources_destroy(engine);
        }
    }
    system_free(&s);
}

/* Slot updates as a block step makes them, after a first load too large for the packed path
 * (4500 slots: the range upload): scattered slots rewritten (one with a new ID), evaluated at the
 * same time again (the predictor must rerun for the new slots) and at a later one; then slots set
 * beyond the evaluated range and the range grown; each time equal to the reference on the
 * current slots. */
static void evaluate_and_compare(fk_sources *engine, tsystem *s, double ti)
{
    for (size_t j = 0; j < s->nj; ++j) {
        g6ref_predict(&s->sources[j], ti, s->px + 3 * j, s->pv + 3 * j);
        s->source_id[j] = s->sources[j].id;
        s->mass[j] = s->sources[j].mass;
    }
    double pot[16], ref_pot[16];
    int nearest[16], ref_nn[16];
    fk_targets targets = {.count = s->ni,
                          .sources = s->nj,
                          .time = ti,
                          .eps2 = 1e-4,
                          .id = s->target_id,
                          .position = s->tx,
                          .velocity = s->tv};
    assert_int_equal(fk_sources_start(engine, &targets), FK_OK);
    assert_int_equal(
        fk_sources_finish(engine, &(fk_target_results){.pot = pot, .nearest = nearest}), FK_OK);
    g6ref_evaluate(s->ni, s->target_id, s->tx, s->tv, s->nj, s->source_id, s->px, s->pv, s->mass,
                   1e-4, NULL, NULL, ref_pot, ref_nn);
    for (size_t i = 0; i < s->ni; ++i) {
        FK_ASSERT_NEAR(pot[i], ref_pot[i], 1e-12 * fabs(ref_pot[i]));
        assert_int_equal(nearest[i], ref_nn[i]);
    }
}

static void test_slot_updates(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    tsystem s;
    system_make(&s, 4500, 16, 0.0, &rng);
    fk_sources *engine = load(&s, "ref", FK_POSITIONS_DOUBLE_SINGLE, 16, 0);
    evaluate_and_compare(engine, &s, s.ti);
    for (int round = 0; round < 3; ++round) {
        for (size_t k = 0; k < 10; ++k) {
            const size_t slot = (k * 977 + (size_t)round * 31) % s.nj;
            g6ref_source *src = &s.sources[slot];
            src->t = s.ti;
            for (int c = 0; c < 3; ++c) {
                src->x[c] = 2 * fk_test_rng_uniform(&rng) - 1;
                src->v[c] = 2 * fk_test_rng_uniform(&rng) - 1;
            }
            if (k == 3)
                src->id = 900000 + round; /* a new ID in an old slot */
            const fk_source slot_data = slot_of(src);
            assert_int_equal(fk_sources_set(engine, slot, &slot_data), FK_OK);
        }
        evaluate_and_compare(engine, &s, s.ti); /* same time: the predictor must rerun */
        evaluate_and_compare(engine, &s, s.ti); /* nothing changed: it may be skipped */
        s.ti += 0.0625;
        evaluate_and_compare(engine, &s, s.ti);
    }
    /* Slots beyond the evaluated range: set while only the first 4000 take part, they must be on
     * the device when the range grows (the predictor stores the updates of every slot, not only
     * of those it predicts). */
    for (size_t slot = 4490; slot < 4500; ++slot) {
        g6ref_source *src = &s.sources[slot];
        src->t = s.ti;
        for (int c = 0; c < 3; ++c)
            src->x[c] = 0.5 * (2 * fk_test_rng_uniform(&rng) - 1);
        const fk_source slot_data = slot_of(src);
        assert_int_equal(fk_sources_set(engine, slot, &slot_data), FK_OK);
    }
    s.nj = 4000;
    evaluate_and_compare(engine, &s, s.ti);
    s.nj = 4500;
    evaluate_and_compare(engine, &s, s.ti);
    fk_sources_destroy(engine);
    system_free(&s);
}

/* Bad input gives a clear status and a message, never a crash; the engine stays usable. */
static void test_bad_input(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    tsystem s;
    system_make(&s, 20, 4, 0.0, &rng);
    fk_sources *engine = NULL;
    fk_sources_config config = FK_CONFIG_INIT(fk_sources_config);
    assert_int_equal(fk_sources_create(fk_test_context, &config, &engine), FK_ERR_INVALID_ARGUMENT);
    assert_null(engine);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "capacity"));
    config.capacity = 10;
    config.accum = "narumi"; /* needs a bound pre-pass */
    assert_int_equal(fk_sources_create(fk_test_context, &config, &engine), FK_ERR_UNSUPPORTED);
    config.accum = "no-such";
    assert_int_equal(fk_sources_create(fk_test_context, &config, &engine), FK_ERR_INVALID_ARGUMENT);
    config.accum = NULL;
    config.positions = (fk_positions)42;
    assert_int_equal(fk_sources_create(fk_test_context, &config, &engine), FK_ERR_INVALID_ARGUMENT);

    engine = load(&s, "ref", FK_POSITIONS_DOUBLE_SINGLE, 4, 0);
    fk_targets targets = {.count = 4,
                          .sources = s.nj,
                          .time = s.ti,
                          .eps2 = 0.01,
                          .id = s.target_id,
                          .position = s.tx,
                          .velocity = s.tv};
    double pot[4];
    const fk_target_results results = {.pot = pot};
    assert_int_equal(fk_sources_finish(engine, &results), FK_ERR_STATE);
    targets.count = 5; /* above max_targets (GRAPE: ni > npipes) */
    assert_int_equal(fk_sources_start(engine, &targets), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "max_targets"));
    targets.count = 0;
    assert_int_equal(fk_sources_start(engine, &targets), FK_ERR_INVALID_ARGUMENT);
    targets.count = 4;
    targets.sources = s.nj + 1; /* a slot that was never set */
    assert_int_equal(fk_sources_start(engine, &targets), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "never set"));
    /* a gap: slot nj + 1 set, slot nj not; the message names the first slot never set */
    fk_source beyond = {.id = 999, .mass = 1};
    assert_int_equal(fk_sources_set(engine, s.nj + 1, &beyond), FK_OK);
    targets.sources = s.nj + 2;
    assert_int_equal(fk_sources_start(engine, &targets), FK_ERR_INVALID_ARGUMENT);
    char expected[64];
    snprintf(expected, sizeof expected, "source slot %zu (of nj = %zu)", s.nj, s.nj + 2);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), expected));
    targets.sources = s.nj + 100; /* beyond the capacity */
    assert_int_equal(fk_sources_start(engine, &targets), FK_ERR_INVALID_ARGUMENT);
    targets.sources = s.nj;
    s.tx[4] = NAN;
    assert_int_equal(fk_sources_start(engine, &targets), FK_ERR_INVALID_INPUT);
    s.tx[4] = 0.5;
    targets.eps2 = -1;
    assert_int_equal(fk_sources_start(engine, &targets), FK_ERR_INVALID_INPUT);
    targets.eps2 = 0.01;
    fk_source bad = {.id = 3, .mass = 1};
    bad.x[1] = NAN;
    assert_int_equal(fk_sources_set(engine, 0, &bad), FK_ERR_INVALID_INPUT);
    bad.x[1] = 0;
    bad.mass = -1;
    assert_int_equal(fk_sources_set(engine, 0, &bad), FK_ERR_INVALID_INPUT);
    bad.mass = 1;
    bad.id = -2;
    assert_int_equal(fk_sources_set(engine, 0, &bad), FK_ERR_INVALID_INPUT);
    bad.id = 3;
    assert_int_equal(fk_sources_set(engine, 1000, &bad), FK_ERR_INVALID_ARGUMENT);
    /* In flight: a second start, a set and the lists are refused; finish then works. */
    assert_int_equal(fk_sources_start(engine, &targets), FK_OK);
    assert_int_equal(fk_sources_start(engine, &targets), FK_ERR_STATE);
    assert_int_equal(fk_sources_set(engine, 0, &bad), FK_ERR_STATE);
    assert_int_equal(fk_sources_finish(engine, &results), FK_OK);
    for (int i = 0; i < 4; ++i)
        assert_true(pot[i] < 0);
    const int *ids;
    size_t count;
    assert_int_equal(fk_sources_neighbors(engine, 0, &ids, &count, NULL), FK_ERR_STATE);
    assert_int_equal(fk_sources_finish(engine, &results), FK_ERR_STATE);
    fk_sources_destroy(engine);
    fk_sources_destroy(NULL);
    system_free(&s);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_ds),
        cmocka_unit_test(test_default_near_origin),
        cmocka_unit_test(test_double_ds),
        cmocka_unit_test(test_float_float),
        cmocka_unit_test(test_float_positions_lose_digits),
        cmocka_unit_test(test_id_exclusion),
        cmocka_unit_test(test_neighbor_lists),
        cmocka_unit_test(test_slot_updates),
        cmocka_unit_test(test_split_raw),
        cmocka_unit_test(test_split_counts),
        cmocka_unit_test(test_unrolled),
        cmocka_unit_test(test_fixed64_hints),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, fk_test_context_setup, fk_test_context_teardown);
}
