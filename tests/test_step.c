/* The step path (issue #16): results decoded on the device into the caller's layout, read from
 * pinned memory, lent without a copy, computed asynchronously, and the update loop of a
 * time-stepping code. The decoded values are compared bit for bit with the host's decode of the
 * same packed words (src/core/accum/accum.c), and the packed words are checked against the
 * double-precision reference elsewhere (test_kernels, test_laws); here one reference check per law
 * guards the layout (forces, then potentials). */
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
#include "forcekit/forcekit.h"
#include "core/internal.h"
#include "test_support.h"

#define N 203 /* not a multiple of any work-group size */

typedef struct step_system {
    double position[3 * N], charge[N];
    int type[N];
} step_system;

static void make_system(step_system *s, fk_test_rng *rng)
{
    fk_test_jittered_lattice(s->position, 6, 1.1, 0.4, rng); /* 216 sites, the first N used */
    for (size_t i = 0; i < N; ++i) {
        s->charge[i] = i % 2 ? 0.5 : -0.5;
        s->type[i] = 0; /* the default pair table: one type */
    }
}

static fk_particles view(step_system *s)
{
    return (fk_particles){.count = N, .position = s->position, .mass = s->charge, .type = s->type};
}

static fk_eval *create(const char *kernel, const char *accum, int potential, int result_type)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = kernel;
    config.accum = accum;
    config.potential = potential;
    config.eps = strcmp(kernel, "ga") == 0 ? 0.05 : 0;
    config.result_type = result_type;
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(fk_test_context, &config, &eval);
    if (status != FK_OK)
        fail_msg("%s/%s: %s", kernel, accum, fk_context_last_error(fk_test_context));
    return eval;
}

/* The host decode of the packed words of the last compute: forces then potentials. */
static void host_decode(fk_eval *eval, const char *accum, int potential, double *forces,
                        double *potentials)
{
    const size_t fc = fk_eval_force_components(eval), components = fc + (potential ? 1 : 0);
    uint32_t *words = malloc(N * components * 2 * sizeof *words);
    assert_non_null(words);
    assert_int_equal(fk__eval_read_packed(eval, words), FK_OK);
    const fk_accum_desc *desc = fk__accum_desc(accum);
    const double scale = fk__eval_accum_scale(eval);
    for (size_t i = 0; i < N; ++i) {
        for (size_t k = 0; k < fc; ++k)
            forces[i * fc + k] = desc->decode(words[2 * (i * components + k)],
                                              words[2 * (i * components + k) + 1], scale);
        if (potential)
            potentials[i] = desc->decode(words[2 * (i * components + fc)],
                                         words[2 * (i * components + fc) + 1], scale);
    }
    free(words);
}

/* Bits, so that NaN == NaN and -0 != +0. */
static void assert_same_doubles(const double *a, const double *b, size_t count, const char *what)
{
    for (size_t v = 0; v < count; ++v)
        if (memcmp(&a[v], &b[v], sizeof a[v]) != 0)
            fail_msg("%s: value %zu is %.17g, the host decode gives %.17g", what, v, a[v], b[v]);
}

static void assert_same_floats(const float *a, const double *b, size_t count, const char *what)
{
    for (size_t v = 0; v < count; ++v) {
        const float expected = (float)b[v];
        if (memcmp(&a[v], &expected, sizeof a[v]) != 0)
            fail_msg("%s: value %zu is %.9g, the rounded host decode gives %.9g", what, v,
                     (double)a[v], (double)expected);
    }
}

/* Every accumulator the device runs, ga and ljc_constant, double and float results: the device
 * decode equals the host decode bit for bit, the float read is its rounding, the view is the
 * read, and the layout matches the reference. */
static void test_device_decode_matches_host(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0x57e9);
    step_system s;
    make_system(&s, &rng);
    const fk_particles particles = view(&s);
    static const char *const kernels[] = {"ga", "ljc_constant"};
    for (size_t k = 0; k < 2; ++k) {
        const char *kernel = kernels[k];
        fk_physics physics = {0};
        physics.eps = strcmp(kernel, "ga") == 0 ? 0.05 : 0;
        double ref_forces[3 * N], ref_potentials[N];
        assert_int_equal(
            fk_reference_forces(kernel, &particles, &physics, ref_forces, ref_potentials), FK_OK);
        for (size_t a = 0; fk_accum_at(a); ++a) {
            const char *accum = fk_accum_at(a)->name;
            if (fk_accum_at(a)->needs_fp64 && !fk_context_device(fk_test_context)->fp64)
                continue;
            for (int result_type = FK_RESULT_DOUBLE; result_type <= FK_RESULT_FLOAT;
                 ++result_type) {
                if (result_type == FK_RESULT_FLOAT && !fk_test_full() && a % 3 != 0)
                    continue; /* the float layout is the same code for every format */
                fk_eval *eval = create(kernel, accum, 1, result_type);
                assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
                assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
                double expected[3 * N], expected_potentials[N];
                host_decode(eval, accum, 1, expected, expected_potentials);
                char what[96];
                snprintf(what, sizeof what, "%s %s %s", kernel, accum,
                         result_type ? "float results" : "double results");
                double forces[3 * N], potentials[N];
                float forces_f[3 * N], potentials_f[N];
                assert_int_equal(fk_eval_read_forces_float(eval, forces_f), FK_OK);
                assert_int_equal(fk_eval_read_potentials_float(eval, potentials_f), FK_OK);
                assert_same_floats(forces_f, expected, 3 * N, what);
                assert_same_floats(potentials_f, expected_potentials, N, what);
                assert_int_equal(fk_eval_read_forces(eval, forces), FK_OK);
                assert_int_equal(fk_eval_read_potentials(eval, potentials), FK_OK);
                if (result_type == FK_RESULT_DOUBLE) {
                    assert_same_doubles(forces, expected, 3 * N, what);
                    assert_same_doubles(potentials, expected_potentials, N, what);
                } else { /* float results widened: the rounded decode, exactly */
                    for (size_t v = 0; v < 3 * N; ++v)
                        assert_true(forces[v] == (double)forces_f[v]);
                }
                const void *forces_view = NULL, *potentials_view = NULL;
                fk_status viewed = fk_eval_results_view(eval, &forces_view, &potentials_view);
                if (fk_context_device(fk_test_context)->fp64) {
                    assert_int_equal(viewed, FK_OK);
                    const size_t size = result_type ? sizeof(float) : sizeof(double);
                    assert_memory_equal(forces_view, result_type ? (void *)forces_f : forces,
                                        3 * N * size);
                    assert_memory_equal(potentials_view,
                                        result_type ? (void *)potentials_f : potentials, N * size);
                } else {
                    assert_int_equal(viewed, FK_ERR_UNSUPPORTED);
                }
                /* the layout: each value where the reference has it (a loose bound; the
                 * accuracy of each accumulator is tested elsewhere) */
                for (size_t v = 0; v < 3 * N; ++v)
                    FK_ASSERT_NEAR(forces[v], ref_forces[v], 1e-2 * (1 + fabs(ref_forces[v])));
                for (size_t i = 0; i < N; ++i)
                    FK_ASSERT_NEAR(potentials[i], ref_potentials[i],
                                   1e-2 * (1 + fabs(ref_potentials[i])));
                fk_eval_destroy(eval);
            }
        }
    }
}

/* The asynchronous form: nothing else is taken while a compute is in flight, wait delivers the
 * same exact results as compute, and destroy with a compute in flight is safe. */
static void test_async(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0xa5c);
    step_system s;
    make_system(&s, &rng);
    const fk_particles particles = view(&s);
    fk_eval *eval = create("ljc_constant", "fixed64", 0, FK_RESULT_DOUBLE);
    double forces[3 * N], again[3 * N];
    assert_int_equal(fk_eval_wait(eval, NULL), FK_ERR_STATE);    /* nothing in flight */
    assert_int_equal(fk_eval_compute_async(eval), FK_ERR_STATE); /* no particles */
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    assert_int_equal(fk_eval_read_forces(eval, forces), FK_OK);

    assert_int_equal(fk_eval_compute_async(eval), FK_OK);
    assert_int_equal(fk_eval_read_forces(eval, again), FK_ERR_STATE);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "fk_eval_wait"));
    assert_int_equal(fk_eval_compute_async(eval), FK_ERR_STATE);
    assert_int_equal(fk_eval_update_positions(eval, s.position, NULL), FK_ERR_STATE);
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_ERR_STATE);
    double seconds = -1;
    assert_int_equal(fk_eval_wait(eval, &seconds), FK_OK);
    assert_true(fk_test_seconds_reported(fk_test_context, seconds));
    assert_int_equal(fk_eval_read_forces(eval, again), FK_OK);
    /* fixed64: the same exact sums of the same terms of the same program */
    assert_memory_equal(forces, again, sizeof forces);
    assert_int_equal(fk_eval_wait(eval, NULL), FK_ERR_STATE); /* waited already */

    assert_int_equal(fk_eval_compute_async(eval), FK_OK);
    fk_eval_destroy(eval); /* in flight: destroy waits, then releases */
}

/* A time-stepping loop through update_positions: each step's results equal those of a fresh
 * set_particles with the same positions (fixed64: exact), and the pinned copy of the particles is
 * rewritten only after the device has its last contents. */
static void test_update_loop(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0x10f);
    step_system s;
    make_system(&s, &rng);
    fk_particles particles = view(&s);
    /* the scale chosen at every update, as set_particles chooses it: the same bits (the
     * default's kept scale is test_default_keeps_scale's) */
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "ljc_constant";
    config.accum = "fixed64";
    config.potential = 1;
    config.scale_policy = FK_SCALE_EACH_UPLOAD;
    fk_eval *stepping = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &stepping), FK_OK);
    fk_eval *fresh = create("ljc_constant", "fixed64", 1, FK_RESULT_DOUBLE);
    assert_int_equal(fk_eval_set_particles(stepping, &particles), FK_OK);
    for (int step = 0; step < 4; ++step) {
        for (size_t v = 0; v < 3 * N; ++v)
            s.position[v] += 0.02 * (fk_test_rng_uniform(&rng) - 0.5);
        assert_int_equal(fk_eval_update_positions(stepping, s.position, NULL), FK_OK);
        assert_int_equal(fk_eval_compute_async(stepping), FK_OK);
        assert_int_equal(fk_eval_set_particles(fresh, &particles), FK_OK);
        assert_int_equal(fk_eval_compute(fresh, NULL), FK_OK);
        assert_int_equal(fk_eval_wait(stepping, NULL), FK_OK);
        const void *a = NULL, *b = NULL, *pa = NULL, *pb = NULL;
        if (fk_eval_results_view(stepping, &a, &pa) != FK_OK)
            skip(); /* no fp64: the reads are compared in test_device_decode_matches_host */
        assert_int_equal(fk_eval_results_view(fresh, &b, &pb), FK_OK);
        assert_memory_equal(a, b, 3 * N * sizeof(double));
        assert_memory_equal(pa, pb, N * sizeof(double));
    }
    /* a bad coordinate is refused and the previous particles stay */
    s.position[7] = NAN;
    assert_int_equal(fk_eval_update_positions(stepping, s.position, NULL), FK_ERR_INVALID_INPUT);
    fk_eval_destroy(stepping);
    fk_eval_destroy(fresh);
}

/* One step of both evaluations, pinned from its positions array and plain from the caller's: the
 * same forces, bit for bit (fixed64), left in a and b. */
static void step_both(fk_eval *pinned, double *buffer, fk_eval *plain, const double *position,
                      double *a, double *b)
{
    assert_int_equal(fk_eval_update_positions(pinned, buffer, NULL), FK_OK);
    assert_int_equal(fk_eval_update_positions(plain, position, NULL), FK_OK);
    assert_int_equal(fk_eval_compute(pinned, NULL), FK_OK);
    assert_int_equal(fk_eval_compute(plain, NULL), FK_OK);
    assert_int_equal(fk_eval_read_forces(pinned, a), FK_OK);
    assert_int_equal(fk_eval_read_forces(plain, b), FK_OK);
    assert_memory_equal(a, b, 3 * N * sizeof *a);
}

/* ljc_constant with fixed64 in the lattice's periodic box (6 x 1.1), cutoff 2.5, by `algorithm`:
 * the cell grid's loops check displacements on the device above the host's count. */
static fk_eval *create_in_box(int algorithm)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "ljc_constant";
    config.accum = "fixed64";
    config.potential = 1;
    config.algorithm = algorithm;
    config.cutoff = 2.5;
    config.box[0] = config.box[1] = config.box[2] = 6 * 1.1;
    fk_eval *eval = NULL;
    if (fk_eval_create(fk_test_context, &config, &eval) != FK_OK)
        fail_msg("algorithm %d: %s", algorithm, fk_context_last_error(fk_test_context));
    return eval;
}

/* The pinned positions array: an update through it gives the bits of the same update from the
 * caller's own array (fixed64; the same rounding to float, on the device or on the host), and a
 * refused coordinate leaves the previous particles in place, whichever loop prepares them
 * (algorithm -1: all pairs without a box; else that loop in the periodic box). */
static void check_positions_buffer(int on_device, int algorithm)
{
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0xb0f);
    step_system s;
    make_system(&s, &rng);
    fk_particles particles = view(&s);
    fk_eval *pinned = algorithm < 0 ? create("ljc_constant", "fixed64", 1, FK_RESULT_DOUBLE)
                                    : create_in_box(algorithm);
    fk_eval *plain = algorithm < 0 ? create("ljc_constant", "fixed64", 1, FK_RESULT_DOUBLE)
                                   : create_in_box(algorithm);
    if (on_device) /* N is below the count the host converts itself */
        fk__eval_set_host_check_count(pinned, 0);
    double *buffer = NULL;
    assert_int_equal(fk_eval_positions_buffer(pinned, &buffer), FK_ERR_STATE);
    assert_null(buffer);
    assert_int_equal(fk_eval_set_particles(pinned, &particles), FK_OK);
    assert_int_equal(fk_eval_set_particles(plain, &particles), FK_OK);
    assert_int_equal(fk_eval_positions_buffer(pinned, &buffer), FK_OK);
    assert_non_null(buffer);
    for (size_t v = 0; v < 3 * N; ++v) /* it holds the positions on the device */
        assert_true(buffer[v] == (double)(float)s.position[v]);
    double a[3 * N], b[3 * N];
    for (int step = 0; step < 3; ++step) {
        for (size_t v = 0; v < 3 * N; ++v) {
            s.position[v] += 0.01 * (fk_test_rng_uniform(&rng) - 0.5);
            buffer[v] = s.position[v];
        }
        step_both(pinned, buffer, plain, s.position, a, b);
    }
    /* a refused coordinate: named, and the particles before it stay, with every other particle
     * moved by up to 0.3 (more than half the cell grid's skin: a grid acting on these positions
     * would rebuild from them) */
    for (size_t v = 0; v < 3 * N; ++v)
        buffer[v] = s.position[v] + 0.6 * (fk_test_rng_uniform(&rng) - 0.5);
    buffer[3 * 17 + 1] = INFINITY;
    assert_int_equal(fk_eval_update_positions(pinned, buffer, NULL), FK_ERR_INVALID_INPUT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "particle 17"));
    assert_int_equal(fk_eval_compute(pinned, NULL), FK_OK);
    assert_int_equal(fk_eval_read_forces(pinned, a), FK_OK);
    assert_memory_equal(a, b, sizeof a);
    /* and the next good update goes on from them */
    s.position[3 * 17 + 1] += 0.01;
    memcpy(buffer, s.position, sizeof s.position);
    step_both(pinned, buffer, plain, s.position, a, b);
    /* a new set of particles: a new array */
    assert_int_equal(fk_eval_set_particles(pinned, &particles), FK_OK);
    assert_int_equal(fk_eval_positions_buffer(pinned, &buffer), FK_OK);
    assert_true(buffer[3 * 17 + 1] == (double)(float)s.position[3 * 17 + 1]);
    fk_eval_destroy(pinned);
    fk_eval_destroy(plain);
}

/* Both ways an update from the pinned array goes: checked and converted on the host (few
 * particles, as here) and on the device (above FK__HOST_CHECK_COUNT, forced here). */
static void test_positions_buffer(void **state)
{
    (void)state;
    check_positions_buffer(0, -1);
    check_positions_buffer(1, -1);
    /* the cell grid's loops take the conversion's verdict with their displacement check */
    check_positions_buffer(1, FK_ALGORITHM_CELLS);
    check_positions_buffer(1, FK_ALGORITHM_NEIGHBORS);
    check_positions_buffer(0, FK_ALGORITHM_NEIGHBORS);
}

/* fixed64's overflow, found by the device decode, names the first particle (the scale chosen at
 * every upload: the default's kept scale would redo the compute, test_default_keeps_scale). */
static void test_overflow_named(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0x0f1);
    step_system s;
    make_system(&s, &rng);
    const fk_particles particles = view(&s);
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "ljc_constant";
    config.accum = "fixed64";
    config.potential = 1;
    config.scale_policy = FK_SCALE_EACH_UPLOAD;
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    fk__eval_set_accum_param(eval, 0, (float)fk__eval_accum_scale(eval) * 1048576.0f);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    double forces[3 * N];
    float forces_f[3 * N];
    const void *forces_view = NULL;
    assert_int_equal(fk_eval_read_forces(eval, forces), FK_ERR_OVERFLOW);
    char message[512];
    snprintf(message, sizeof message, "%s", fk_context_last_error(fk_test_context));
    assert_int_equal(fk_eval_read_forces_float(eval, forces_f), FK_ERR_OVERFLOW);
    assert_int_equal(fk_eval_results_view(eval, &forces_view, NULL), FK_ERR_OVERFLOW);
    assert_null(forces_view);
    /* the first particle: the one the host decode finds first */
    uint32_t words[2 * 4 * N];
    assert_int_equal(fk__eval_read_packed(eval, words), FK_OK);
    size_t first = N;
    for (size_t w = 0; w < 2 * 4 * N && first == N; w += 2)
        if (fk__fixed64_overflowed(words[w], words[w + 1]))
            first = w / 2 / 4;
    assert_true(first < N);
    char expected[32];
    snprintf(expected, sizeof expected, "particle %zu:", first);
    if (!strstr(message, expected))
        fail_msg("\"%s\" does not name %s", message, expected);
    fk_eval_destroy(eval);
}

/* A kept scale's forces against a fresh evaluation's of the same positions (expected, with the
 * fresh scale): the same float terms, each rounded to the kept scale's quantum instead of the
 * fresh one's (fixed64's error model: N terms differ by at most one quantum each); and the
 * physics, the double-precision reference (the float terms' rounding, summed over the
 * neighbours, bounds the difference). */
static void assert_kept_scale_forces(const double *forces, const double *expected,
                                     double kept_scale, double fresh_scale,
                                     const fk_particles *particles)
{
    const double quantum = 1.0 / fmin(kept_scale, fresh_scale);
    for (size_t v = 0; v < 3 * N; ++v)
        FK_ASSERT_NEAR(forces[v], expected[v], N * quantum);
    double reference[3 * N];
    const fk_physics physics = {0};
    assert_int_equal(fk_reference_forces("ljc_constant", particles, &physics, reference, NULL),
                     FK_OK);
    for (size_t v = 0; v < 3 * N; ++v)
        FK_ASSERT_NEAR(forces[v], reference[v], 1e-2 * (1 + fabs(reference[v])));
}

/* Particle 0 moved next to particle 1 (s's positions, which particles views): a pair term far
 * beyond the kept scale's range. kept's compute overflows and is redone once (counted), with a
 * new, smaller scale that is exactly a fresh evaluation's, and the fresh evaluation's bits. */
static void assert_close_approach_redone(fk_eval *kept, fk_eval *fresh, step_system *s,
                                         const fk_particles *particles, double kept_scale)
{
    for (int c = 0; c < 3; ++c)
        s->position[c] = s->position[3 + c] + (c == 0 ? 0.45 : 0.0);
    assert_int_equal(fk_eval_update_positions(kept, s->position, NULL), FK_OK);
    assert_int_equal(fk_eval_compute(kept, NULL), FK_OK);
    assert_int_equal(fk_eval_rescale_count(kept), 1);
    assert_true(fk__eval_accum_scale(kept) < kept_scale);
    double forces[3 * N], expected[3 * N];
    assert_int_equal(fk_eval_read_forces(kept, forces), FK_OK);
    assert_int_equal(fk_eval_set_particles(fresh, particles), FK_OK);
    assert_int_equal(fk_eval_compute(fresh, NULL), FK_OK);
    assert_int_equal(fk_eval_read_forces(fresh, expected), FK_OK);
    assert_true(fk__eval_accum_scale(fresh) == fk__eval_accum_scale(kept));
    assert_memory_equal(forces, expected, sizeof forces);
}

/* FK_SCALE_KEEP: small moves keep the scale (no pre-pass); a close approach overflows the kept
 * scale and the compute is redone with the scale of the current positions, giving exactly what a
 * fresh set_particles gives. */
static void test_keep_scale(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0x5ca1e);
    step_system s;
    make_system(&s, &rng);
    fk_particles particles = view(&s);
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "ljc_constant";
    config.accum = "float";
    config.scale_policy = FK_SCALE_KEEP;
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "fixed64"));
    config.accum = "fixed64";
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    fk_eval *fresh = create("ljc_constant", "fixed64", 0, FK_RESULT_DOUBLE);
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    const double kept_scale = fk__eval_accum_scale(eval);
    double forces[3 * N], expected[3 * N];
    for (int step = 0; step < 3; ++step) {
        for (size_t v = 0; v < 3 * N; ++v)
            s.position[v] += 0.01 * (fk_test_rng_uniform(&rng) - 0.5);
        assert_int_equal(fk_eval_update_positions(eval, s.position, NULL), FK_OK);
        assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
        assert_int_equal(fk_eval_read_forces(eval, forces), FK_OK);
        assert_true(fk__eval_accum_scale(eval) == kept_scale);
        assert_int_equal(fk_eval_rescale_count(eval), 0);
        assert_int_equal(fk_eval_set_particles(fresh, &particles), FK_OK);
        assert_int_equal(fk_eval_compute(fresh, NULL), FK_OK);
        assert_int_equal(fk_eval_read_forces(fresh, expected), FK_OK);
        assert_kept_scale_forces(forces, expected, kept_scale, fk__eval_accum_scale(fresh),
                                 &particles);
    }
    assert_close_approach_redone(eval, fresh, &s, &particles, kept_scale);
    fk_eval_destroy(eval);
    fk_eval_destroy(fresh);
}

/* The bound an evaluation's last pre-pass measured. */
typedef struct measured_bound {
    double term, sum;
} measured_bound;

static measured_bound bound_of(const fk_eval *eval)
{
    measured_bound b = {-1, -1};
    assert_int_equal(fk_eval_get_bound(eval, &b.term, &b.sum), FK_OK);
    return b;
}

static fk_eval *create_policy(const char *accum, int scale_policy, int coordinated)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "ljc_constant";
    config.accum = accum;
    config.scale_policy = scale_policy;
    config.coordinated_scale = coordinated;
    fk_eval *eval = NULL;
    if (fk_eval_create(fk_test_context, &config, &eval) != FK_OK)
        fail_msg("%s, scale_policy %d: %s", accum, scale_policy,
                 fk_context_last_error(fk_test_context));
    return eval;
}

/* The default scale policy (0, FK_SCALE_AUTO; issue #33): fixed64 keeps set_particles' scale
 * across updates. No pre-pass on an update (fk_eval_get_bound still holds set_particles' bound
 * while the largest term of the moved particles is another), results within one kept quantum per
 * term of a fresh evaluation's and within the float terms' reach of the double reference; a close
 * approach overflows the kept scale, and the compute is redone (counted by fk_eval_rescale_count)
 * with exactly a fresh evaluation's scale and bits. FK_SCALE_EACH_UPLOAD (2) measures the bound at
 * every update (a fresh evaluation's bits), and so does the default for narumi (which cannot
 * detect an overflow), for a share's part and for coordinated parts. */
static void test_default_keeps_scale(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0xa070);
    step_system s;
    make_system(&s, &rng);
    fk_particles particles = view(&s);
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    assert_int_equal(config.scale_policy, FK_SCALE_AUTO);
    config.kernel = "ljc_constant";
    config.accum = "fixed64";
    config.scale_policy = 3;
    fk_eval *refused = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &refused), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "scale_policy 3"));

    enum { KEPT, EACH, NARUMI, SHARED, COORDINATED, FRESH, FRESH_NARUMI, EVALS };
    fk_eval *e[EVALS] = {create_policy("fixed64", FK_SCALE_AUTO, 0),
                         create_policy("fixed64", FK_SCALE_EACH_UPLOAD, 0),
                         create_policy("narumi", FK_SCALE_AUTO, 0),
                         create_policy("fixed64", FK_SCALE_AUTO, 0),
                         create_policy("fixed64", FK_SCALE_AUTO, 1),
                         create_policy("fixed64", FK_SCALE_AUTO, 0),
                         create_policy("narumi", FK_SCALE_AUTO, 0)};
    assert_int_equal(fk_eval_set_share(e[SHARED], 0, 2), FK_OK);
    for (int k = 0; k < FRESH; ++k)
        assert_int_equal(fk_eval_set_particles(e[k], &particles), FK_OK);
    const measured_bound first = bound_of(e[KEPT]);
    const double kept_scale = fk__eval_accum_scale(e[KEPT]);
    double forces[3 * N], expected[3 * N];
    for (int step = 0; step < 3; ++step) {
        for (size_t v = 0; v < 3 * N; ++v)
            s.position[v] += 0.01 * (fk_test_rng_uniform(&rng) - 0.5);
        for (int k = 0; k < FRESH; ++k) {
            assert_int_equal(fk_eval_update_positions(e[k], s.position, NULL), FK_OK);
            assert_int_equal(fk_eval_compute(e[k], NULL), FK_OK);
        }
        assert_int_equal(fk_eval_set_particles(e[FRESH], &particles), FK_OK);
        assert_int_equal(fk_eval_set_particles(e[FRESH_NARUMI], &particles), FK_OK);
        assert_int_equal(fk_eval_compute(e[FRESH], NULL), FK_OK);
        assert_int_equal(fk_eval_read_forces(e[FRESH], expected), FK_OK);
        const measured_bound now = bound_of(e[FRESH]), narumi_now = bound_of(e[FRESH_NARUMI]);
        /* the moves (+-0.005 in every coordinate) change the largest float term: were it the
         * same, an update's pre-pass could not be told from none */
        assert_true(now.term != first.term);
        /* kept: set_particles' bound and scale, no redo */
        const measured_bound kept = bound_of(e[KEPT]);
        assert_true(kept.term == first.term && kept.sum == first.sum);
        assert_true(fk__eval_accum_scale(e[KEPT]) == kept_scale);
        assert_int_equal(fk_eval_rescale_count(e[KEPT]), 0);
        /* the others measured these positions */
        const int measured[] = {EACH, SHARED, COORDINATED};
        for (size_t m = 0; m < sizeof measured / sizeof measured[0]; ++m) {
            const measured_bound b = bound_of(e[measured[m]]);
            if (!(b.term == now.term && b.sum == now.sum))
                fail_msg("evaluation %d kept its bound %g (these positions' is %g)", measured[m],
                         b.term, now.term);
        }
        const measured_bound narumi = bound_of(e[NARUMI]);
        assert_true(narumi.term == narumi_now.term && narumi.sum == narumi_now.sum);
        /* EACH_UPLOAD: a fresh evaluation's bits */
        assert_int_equal(fk_eval_read_forces(e[EACH], forces), FK_OK);
        assert_memory_equal(forces, expected, sizeof forces);
        /* kept */
        assert_int_equal(fk_eval_read_forces(e[KEPT], forces), FK_OK);
        assert_kept_scale_forces(forces, expected, kept_scale, fk__eval_accum_scale(e[FRESH]),
                                 &particles);
    }
    assert_close_approach_redone(e[KEPT], e[FRESH], &s, &particles, kept_scale);
    for (int k = 0; k < EVALS; ++k)
        fk_eval_destroy(e[k]);
}

static void test_bad_result_type(void **state)
{
    (void)state;
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "ga";
    config.result_type = 2;
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_ERR_INVALID_ARGUMENT);
    assert_null(eval);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "result_type"));
}

/* A context whose queue records no device times (fk_context_config.device_timing OFF, the
 * cheaper queue on drivers where profiling costs every command host time): the same bits as a
 * timed context's (fixed64), within float's reach of the double reference, seconds -1, and the
 * tuner, which times by profiling, refuses it. */
static void test_device_timing_off(void **state)
{
    (void)state;
    fk_context_config bad = FK_CONFIG_INIT(fk_context_config);
    bad.device_timing = 7;
    fk_context *refused = NULL;
    assert_int_equal(fk_context_create(&bad, &refused), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(refused), "device_timing"));
    fk_context_destroy(refused);

    fk_context_config config = FK_CONFIG_INIT(fk_context_config);
    config.device_timing = FK_DEVICE_TIMING_OFF;
    fk_context *untimed = NULL;
    if (fk_context_create(&config, &untimed) != FK_OK)
        fail_msg("untimed context: %s", fk_context_last_error(untimed));
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed() ^ 0x71e);
    step_system s;
    make_system(&s, &rng);
    const fk_particles particles = view(&s);
    fk_eval_config eval_config = FK_CONFIG_INIT(fk_eval_config);
    eval_config.kernel = "ljc_constant";
    eval_config.accum = "fixed64";
    eval_config.potential = 1;
    fk_eval *fast = NULL;
    if (fk_eval_create(untimed, &eval_config, &fast) != FK_OK)
        fail_msg("untimed eval: %s", fk_context_last_error(untimed));
    fk_eval *timed = create("ljc_constant", "fixed64", 1, FK_RESULT_DOUBLE);
    double forces[3 * N], potentials[N], expected[3 * N], expected_potentials[N];
    for (int step = 0; step < 3; ++step) {
        for (size_t v = 0; v < 3 * N; ++v)
            s.position[v] += 0.01 * (fk_test_rng_uniform(&rng) - 0.5);
        if (step == 0) {
            assert_int_equal(fk_eval_set_particles(fast, &particles), FK_OK);
            assert_int_equal(fk_eval_set_particles(timed, &particles), FK_OK);
        } else {
            assert_int_equal(fk_eval_update_positions(fast, s.position, NULL), FK_OK);
            assert_int_equal(fk_eval_update_positions(timed, s.position, NULL), FK_OK);
        }
        double seconds = 0, timed_seconds = -1;
        assert_int_equal(fk_eval_compute(fast, &seconds), FK_OK);
        assert_true(seconds == -1.0);
        assert_int_equal(fk_eval_compute(timed, &timed_seconds), FK_OK);
        assert_true(fk_test_seconds_reported(fk_test_context, timed_seconds));
        assert_int_equal(fk_eval_read_forces(fast, forces), FK_OK);
        assert_int_equal(fk_eval_read_potentials(fast, potentials), FK_OK);
        assert_int_equal(fk_eval_read_forces(timed, expected), FK_OK);
        assert_int_equal(fk_eval_read_potentials(timed, expected_potentials), FK_OK);
        assert_memory_equal(forces, expected, sizeof forces);
        assert_memory_equal(potentials, expected_potentials, sizeof potentials);
    }
    const fk_physics physics = {0};
    const double error =
        fk_test_error_vs_float_reference("ljc_constant", &particles, &physics, forces);
    if (!(error <= 1e-5))
        fail_msg("untimed forces off the reference by %g of the largest force", error);

    fk_tune_config tune = FK_CONFIG_INIT(fk_tune_config);
    tune.kernel = "ga";
    tune.n = 1024;
    fk_tune_result *tuned = NULL;
    assert_int_equal(fk_tune_run(untimed, &tune, &tuned), FK_ERR_UNSUPPORTED);
    assert_null(tuned);
    assert_non_null(strstr(fk_context_last_error(untimed), "profiling"));
    fk_eval_destroy(fast);
    fk_eval_destroy(timed);
    fk_context_destroy(untimed);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_decode_matches_host),
        cmocka_unit_test(test_async),
        cmocka_unit_test(test_update_loop),
        cmocka_unit_test(test_overflow_named),
        cmocka_unit_test(test_keep_scale),
        cmocka_unit_test(test_default_keeps_scale),
        cmocka_unit_test(test_positions_buffer),
        cmocka_unit_test(test_bad_result_type),
        cmocka_unit_test(test_device_timing_off),
    };
    return cmocka_run_group_tests(tests, fk_test_context_setup, fk_test_context_teardown);
}
