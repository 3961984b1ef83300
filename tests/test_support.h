/* Helpers shared by the cmocka tests. */
#ifndef FK_TEST_SUPPORT_H
#define FK_TEST_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* A fresh seed per run (time and pid), printed so a failure can be replayed with FK_TEST_SEED. */
uint64_t fk_test_seed(void);
/* xoshiro-style generator for test inputs. */
typedef struct fk_test_rng {
    uint64_t state;
} fk_test_rng;
void fk_test_rng_init(fk_test_rng *rng, uint64_t seed);
double fk_test_rng_uniform(fk_test_rng *rng); /* [0, 1) */

/* A simple cubic lattice of side^3 points, spacing apart, each moved by up to +-jitter/2 per
 * coordinate: position[3 * side^3], the cell centres at spacing * (index + 1/2), so the lattice
 * fills the box [0, side * spacing)^3 periodically. */
void fk_test_jittered_lattice(double *position, int side, double spacing, double jitter,
                              fk_test_rng *rng);

/* The same inputs on every machine (splitmix64 from seed; the values are exact in float): a
 * jittered side^3 lattice, spacing apart, jitter +-0.125 per coordinate, random types 0 or 1, and
 * charges +0.5 / -0.5 alternating. Golden checksums (test_reproducible, golden_variants) are of
 * these inputs: a change here changes them. */
void fk_test_fixed_lattice(int side, double spacing, uint64_t seed, double *position, int *type,
                           double *charge);

/* A new empty directory under $TMPDIR (malloc'ed path); fk_test_remove_tree deletes it. */
char *fk_test_make_temp_dir(const char *prefix);
void fk_test_remove_tree(const char *path);
/* Writes text to a file; returns 0 on success. */
int fk_test_write_file(const char *path, const void *data, size_t size);
/* $FK_TEST_SOURCE_DIR or "." */
const char *fk_test_source_dir(void);
/* $FK_TEST_DATA_DIR (../shared/data) or NULL when absent. */
const char *fk_test_data_dir(void);

/* The shared harness. Every cmocka test's main starts with FK_TEST_PREPARE(argc, argv):
 *   test_x [PATTERN] [--full]     PATTERN: run only the tests whose names match it (cmocka's glob,
 *                                 * and ?; also $FK_TEST_FILTER);
 *                                 --full (or FK_TEST_FULL=1): the full sweeps (ctest label full)
 * Returns 0, or 2 after a usage message. */
int fk_test_prepare(int argc, char **argv);
#define FK_TEST_PREPARE(argc, argv)                                                                \
    do {                                                                                           \
        if (fk_test_prepare(argc, argv) != 0)                                                      \
            return 2;                                                                              \
    } while (0)
/* 1 in the full mode: the complete variant x accumulator x size sweeps; else the representative
 * subset that the default run (and CI) takes. */
int fk_test_full(void);

struct fk_context;
/* The shared fixture: a context on the default device, created by the group setup and destroyed by
 * its teardown, in fk_test_context. */
extern struct fk_context *fk_test_context;
int fk_test_context_setup(void **state);
int fk_test_context_teardown(void **state);
/* Creates a context on the default device ($FORCEKIT_DEVICE, else the first GPU, else the first
 * CPU) and prints which one on stderr; on failure prints why, leaves *context NULL and returns -1
 * (a cmocka group setup then fails), else 0. */
int fk_test_open_context(struct fk_context **context);

/* Capabilities of the device under test, for tests that skip what it cannot do (issue #37: by
 * capability, never by the device's name). 1 when context's device has double precision
 * (cl_khr_fp64): the double and ref accumulators, reproducible mode's correctly rounded fallback,
 * double-single positions, the device-side decode. */
int fk_test_device_has_fp64(const struct fk_context *context);
/* The same for the default device (FORCEKIT_DEVICE, else the first GPU, else the first CPU),
 * for tests without a context at hand; opens and closes one. */
int fk_test_default_device_has_fp64(void);

/* 1 when seconds is a device time fk_eval_compute may report on context: >= 0, or -1 when the
 * device's event times are not usable and the context says so in its warnings
 * (src/core/devices/timing.c: Rusticl 22.3 reports 1 ns for every command). */
int fk_test_seconds_reported(const struct fk_context *context, double seconds);

/* |a - b| <= tolerance in double (cmocka 1.1 has no double comparison). */
#define FK_ASSERT_NEAR(a, b, tolerance)                                                            \
    do {                                                                                           \
        double fk_a_ = (a), fk_b_ = (b), fk_t_ = (tolerance);                                      \
        if (!(fk_a_ - fk_b_ <= fk_t_ && fk_b_ - fk_a_ <= fk_t_))                                   \
            fail_msg("%s = %.17g, expected %.17g within %g", #a, fk_a_, fk_b_, fk_t_);             \
    } while (0)

/* A molecular system shared by the pair-loop tests (test_cells, test_neighbors): n particles with
 * charges, types and the physics that drives both the evaluation's configuration and the
 * reference. */
#include "forcekit/forcekit.h"
typedef struct fk_test_system {
    const char *kernel; /* lj, ljc_constant, buck, ... */
    size_t n;
    double *position, *charge; /* 3n, n */
    int *type;                 /* n, all 0 after fk_test_system_alloc */
    fk_physics physics;        /* cutoff, coulomb, box: drives the configs and the reference */
    size_t *exclusions;        /* 2 per pair, malloc'ed (freed by fk_test_system_free), or NULL */
    size_t exclusion_count;
} fk_test_system;
/* x rounded to a multiple of 2^-16: below 64, differences of such coordinates are exact in
 * float, so the error the tests see is the pair arithmetic's and the sums'. */
double fk_test_quantize(double x);
/* Zeroed positions and types, physics all 0 (no cutoff: set it), charges of alternating sign and
 * magnitude uniform in [0.2, 1) from rng, rounded to float. Aborts when memory runs out. */
void fk_test_system_alloc(fk_test_system *s, const char *kernel, size_t n, fk_test_rng *rng);
void fk_test_system_free(fk_test_system *s);
/* Particles first .. first + count - 1 on a cubic lattice of `side` sites per axis with the given
 * spacing from origin, each coordinate jittered by up to +-jitter (times the spacing) from rng,
 * quantized. */
void fk_test_system_lattice(fk_test_system *s, size_t first, size_t count, size_t side,
                            double spacing, const double origin[3], double jitter,
                            fk_test_rng *rng);
/* The particles as the API takes them (lj: no charges). */
fk_particles fk_test_system_view(const fk_test_system *s);
/* The distance of i and j, minimum image in a periodic box (physics.box). */
double fk_test_system_distance(const fk_test_system *s, size_t i, size_t j);
/* max |forces - F_ref| / max |F_ref| (NaN or infinity when F_ref is all zero), F_ref the
 * double-precision reference (fk_reference_forces) on the particles' positions as a float device
 * holds them: a close pair's r^-13 turns the rounding of its coordinates into an error of ~1e-5
 * of the largest force that depends on the draw, which is not what a test compares. Aborts when
 * memory runs out or the reference fails. */
double fk_test_error_vs_float_reference(const char *kernel, const fk_particles *particles,
                                        const fk_physics *physics, const double *forces);

/* Nonzero: evaluations made by the grid loops' tests send their checks to the device
 * (fk__eval_set_host_check_count(eval, 0)), which the host otherwise runs for systems this small
 * (src/core/internal.h, FK__HOST_CHECK_COUNT). fk_test_device_checks_on / _off are cmocka setup and
 * teardown functions, so a test that depends on the grid's check runs both ways. */
extern int fk_test_device_checks;
int fk_test_device_checks_on(void **state);
int fk_test_device_checks_off(void **state);

#endif
