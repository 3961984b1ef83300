/* libsapporo (src/sapporo/sapporo.c) through the GRAPE-6 API, against the comparison library
 * (tests/g6/g6cpu.c, double precision on the CPU). Both are loaded into this process with dlopen
 * (RTLD_LOCAL: their identical symbols do not clash), so every test drives both with the same
 * calls: forces, jerks, potentials and nearest neighbours of random systems; neighbour lists
 * including overflow (T4); bad input (nonzero returns, no crash); and a Hermite block-step
 * integration of a Plummer sphere whose energy error through libsapporo must be within 2x of the
 * comparison library's.
 *   FK_G6_LIBSAPPORO=path FK_G6_COMPARISON=path test_g6 [PATTERN]   (CTest sets both) */
#define _GNU_SOURCE
#include <dlfcn.h>
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

#include "g6/g6_driver.h"

static const char *library_path[2];
static g6lib libs[2]; /* 0: forcekit's libsapporo, 1: the comparison library */

static void *symbol(g6lib *lib, const char *name)
{
    void *address = dlsym(lib->handle, name);
    if (!address)
        fail_msg("%s: no symbol %s", lib->name, name);
    return address;
}

static void load(g6lib *lib, const char *name, const char *path)
{
    memset(lib, 0, sizeof *lib);
    lib->name = name;
    lib->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle)
        fail_msg("dlopen %s: %s", path, dlerror());
    *(void **)&lib->open = symbol(lib, "g6_open_");
    *(void **)&lib->close = symbol(lib, "g6_close_");
    *(void **)&lib->npipes = symbol(lib, "g6_npipes_");
    *(void **)&lib->set_ti = symbol(lib, "g6_set_ti_");
    *(void **)&lib->set_j_particle = symbol(lib, "g6_set_j_particle_");
    *(void **)&lib->firsthalf = symbol(lib, "g6calc_firsthalf_");
    *(void **)&lib->lasthalf = symbol(lib, "g6calc_lasthalf_");
    *(void **)&lib->lasthalf2 = symbol(lib, "g6calc_lasthalf2_");
    *(void **)&lib->read_neighbour_list = symbol(lib, "g6_read_neighbour_list_");
    *(void **)&lib->get_neighbour_list = symbol(lib, "g6_get_neighbour_list_");
    *(void **)&lib->reset = symbol(lib, "g6_reset_");
    *(void **)&lib->get_device_count = symbol(lib, "get_device_count");
}

static int setup(void **state)
{
    (void)state;
    /* Small pipes so that blocks of targets split, and small lists so that they overflow. */
    setenv("FORCEKIT_G6_NPIPES", "48", 1);
    setenv("FORCEKIT_G6_NEIGHBOURS", "20", 1);
    setenv("FORCEKIT_G6_CAPACITY", "100", 1); /* the engine must grow */
    load(&libs[0], "libsapporo", library_path[0]);
    load(&libs[1], "comparison", library_path[1]);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int k = 0; k < 2; ++k)
        if (libs[k].handle)
            dlclose(libs[k].handle);
    return 0;
}

/* ---- a random system loaded into a library ------------------------------------------------ */

static void particles_random(particles *p, int n, fk_test_rng *rng)
{
    particles_alloc(p, n);
    for (int i = 0; i < n; ++i) {
        p->id[i] = 5 + 2 * i;
        p->m[i] = (0.5 + fk_test_rng_uniform(rng)) / n;
        p->t[i] = 0.01 * fk_test_rng_uniform(rng);
        for (int k = 0; k < 3; ++k) {
            p->x[i][k] = 2 * fk_test_rng_uniform(rng) - 1;
            p->v[i][k] = 2 * fk_test_rng_uniform(rng) - 1;
            p->a[i][k] = 2 * fk_test_rng_uniform(rng) - 1;
            p->jerk[i][k] = 2 * fk_test_rng_uniform(rng) - 1;
        }
    }
}

static void load_all(g6lib *lib, int unit, const particles *p)
{
    assert_int_equal(lib->open(&unit), 0);
    for (int i = 0; i < p->n; ++i)
        assert_int_equal(g6_set_j(lib, unit, i, p, i), 0);
}

/* acc, jerk, pot and nearest neighbour of every particle through both libraries, in blocks of
 * npipes; targets are the sources' own positions predicted on the host to ti (a 3rd-order
 * predictor, so they differ from the libraries' own predictions), IDs the sources': agree to
 * 1e-11 of each target's scale (the default configuration: ref, DS), nearest neighbours exactly. */
static void test_forces_agree(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    particles p;
    const int n = 333, unit = 0;
    particles_random(&p, n, &rng);
    for (int k = 0; k < 2; ++k)
        load_all(&libs[k], unit, &p);
    /* A slot far beyond the engine's first capacity (100) and beyond the nj evaluated: the
     * engine must grow to hold it and still evaluate nj = n. */
    for (int k = 0; k < 2; ++k)
        assert_int_equal(g6_set_j(&libs[k], unit, 5000, &p, 0), 0);
    const int npipes = libs[0].npipes();
    assert_int_equal(npipes, 48);
    assert_int_equal(libs[1].npipes(), 48);
    double ti = 0.02, eps2 = 1e-3;
    double(*xi)[3] = calloc((size_t)npipes, sizeof *xi),
    (*vi)[3] = calloc((size_t)npipes, sizeof *vi);
    double(*acc[2])[3], (*jerk[2])[3], *pot[2];
    int *nn[2];
    double *h2 = calloc((size_t)npipes, sizeof(double));
    for (int k = 0; k < 2; ++k) {
        acc[k] = calloc((size_t)npipes, sizeof *acc[k]);
        jerk[k] = calloc((size_t)npipes, sizeof *jerk[k]);
        pot[k] = calloc((size_t)npipes, sizeof(double));
        nn[k] = calloc((size_t)npipes, sizeof(int));
        assert_int_equal(libs[k].set_ti((int *)&unit, &ti), 0);
    }
    double worst = 0;
    for (int first = 0; first < n; first += npipes) {
        int ni = n - first < npipes ? n - first : npipes, nj = n;
        for (int i = 0; i < ni; ++i) {
            g6_host_predict(&p, first + i, ti, xi[i], vi[i]);
            h2[i] = eps2;
        }
        for (int k = 0; k < 2; ++k) {
            for (int i = 0; i < ni; ++i)
                pot[k][i] = NAN;
            libs[k].firsthalf((int *)&unit, &nj, &ni, p.id + first, xi, vi, p.a + first,
                              p.jerk + first, pot[k], &eps2, h2);
            assert_int_equal(libs[k].lasthalf2((int *)&unit, &nj, &ni, p.id + first, xi, vi, &eps2,
                                               h2, acc[k], jerk[k], pot[k], nn[k]),
                             0);
        }
        for (int i = 0; i < ni; ++i) {
            const double scale_a = sqrt(acc[1][i][0] * acc[1][i][0] + acc[1][i][1] * acc[1][i][1] +
                                        acc[1][i][2] * acc[1][i][2]) +
                                   1.0;
            for (int c = 0; c < 3; ++c) {
                double e = fabs(acc[0][i][c] - acc[1][i][c]) / scale_a;
                worst = !(e <= worst) ? e : worst;
                e = fabs(jerk[0][i][c] - jerk[1][i][c]) / (fabs(jerk[1][i][c]) + 10.0);
                worst = !(e <= worst) ? e : worst;
            }
            const double e = fabs(pot[0][i] - pot[1][i]) / fabs(pot[1][i]);
            worst = !(e <= worst) ? e : worst;
            assert_true(pot[0][i] < 0);
            if (nn[0][i] != nn[1][i])
                fail_msg("target %d: nearest %d, comparison %d", first + i, nn[0][i], nn[1][i]);
            assert_int_not_equal(nn[0][i], p.id[first + i]);
        }
    }
    fprintf(stderr, "libsapporo against the comparison library: worst relative %.3g\n", worst);
    assert_true(worst < 1e-11);
    for (int k = 0; k < 2; ++k) {
        assert_int_equal(libs[k].close((int *)&unit), 0);
        free(acc[k]);
        free(jerk[k]);
        free(pot[k]);
        free(nn[k]);
    }
    free(xi);
    free(vi);
    free(h2);
    particles_free(&p);
}

/* T4 through the API: the same lists (sorted IDs) as the comparison library's brute force, the
 * same overflow answers from read (the engine's 20 per list) and get (the caller's maxlength). */
static void test_neighbour_lists_agree(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    particles p;
    const int n = 400, unit = 3;
    particles_random(&p, n, &rng);
    for (int k = 0; k < 2; ++k)
        load_all(&libs[k], unit, &p);
    int ni = 40, nj = n;
    double ti = 0.01, eps2 = 0.0;
    double xi[40][3], vi[40][3], h2[40], acc[40][3], jerk[40][3], pot[40];
    for (int i = 0; i < ni; ++i) {
        g6_host_predict(&p, i, ti, xi[i], vi[i]);
        h2[i] = 0.04 * (i % 8); /* 0 (no list) .. 0.28: about 0 to 30 neighbours */
    }
    /* One list that must overflow the engine's 20, whatever the draw: the targets near the cube's
     * faces hold fewer, and all ten with h2 >= 0.24 held 20 or fewer in 73 of 100,000 draws.
     * Radius sqrt(0.5) at the centre holds 400 * 1.48 / 8 = 74 bodies on average (sd 8). */
    xi[0][0] = xi[0][1] = xi[0][2] = 0;
    h2[0] = 0.5;
    int read[2];
    for (int k = 0; k < 2; ++k) {
        assert_int_equal(libs[k].set_ti((int *)&unit, &ti), 0);
        libs[k].firsthalf((int *)&unit, &nj, &ni, p.id, xi, vi, acc, jerk, pot, &eps2, h2);
        assert_int_equal(
            libs[k].lasthalf((int *)&unit, &nj, &ni, p.id, xi, vi, &eps2, h2, acc, jerk, pot), 0);
        read[k] = libs[k].read_neighbour_list((int *)&unit);
    }
    assert_int_equal(read[0], read[1]);
    int overflowed = 0, complete = 0;
    for (int i = 0; i < ni; ++i) {
        for (int maxlength = 8; maxlength <= 32; maxlength += 24) {
            int lists[2][32], count[2], status[2];
            for (int k = 0; k < 2; ++k)
                status[k] =
                    libs[k].get_neighbour_list((int *)&unit, &i, &maxlength, &count[k], lists[k]);
            assert_int_equal(status[0], status[1]);
            assert_int_equal(count[0], count[1]);
            if (status[0] == 0) {
                ++complete;
                for (int q = 0; q < count[0]; ++q)
                    assert_int_equal(lists[0][q], lists[1][q]);
            } else {
                ++overflowed;
            }
        }
    }
    fprintf(stderr, "neighbour lists: read %d, %d complete, %d overflowed\n", read[0], complete,
            overflowed);
    assert_int_equal(read[0], 1); /* some list held more than 20 */
    assert_true(overflowed > 0 && complete > 0);
    for (int k = 0; k < 2; ++k)
        assert_int_equal(libs[k].close((int *)&unit), 0);
    particles_free(&p);
}

/* Bad input: nonzero returns, never a crash; the unit stays usable afterwards. */
static void test_bad_input(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    particles p;
    particles_random(&p, 10, &rng);
    g6lib *lib = &libs[0];
    int unit = 2, unknown = 9, outside = 99;
    double ti = 0, eps2 = 0.01, xi[64][3] = {{0}}, vi[64][3] = {{0}}, h2[64] = {0};
    double acc[64][3], jerk[64][3], pot[64];
    int index[64] = {0}, nn[64];
    assert_true(lib->get_device_count() >= 1);
    /* Nothing open: every ID fails. */
    assert_int_not_equal(lib->set_ti(&unknown, &ti), 0);
    assert_int_not_equal(lib->close(&unknown), 0);
    /* Any ID opens a unit, and while it is the only one open, a call with another ID reaches it
     * (Sapporo ignores the ID; ph4's standalone program opens an uninitialised one). */
    assert_int_equal(lib->open(&outside), 0);
    assert_int_equal(lib->set_ti(&unknown, &ti), 0);
    load_all(lib, unit, &p);
    /* Two open: an ID naming neither is refused. */
    assert_int_not_equal(lib->set_ti(&unknown, &ti), 0);
    assert_int_equal(lib->close(&outside), 0);
    int nj = 10, ni = 49; /* npipes is 48 */
    lib->firsthalf(&unit, &nj, &ni, index, xi, vi, acc, jerk, pot, &eps2, h2);
    assert_int_not_equal(lib->lasthalf(&unit, &nj, &ni, index, xi, vi, &eps2, h2, acc, jerk, pot),
                         0);
    ni = 2;
    nj = 11; /* address 10 was never set */
    lib->firsthalf(&unit, &nj, &ni, index, xi, vi, acc, jerk, pot, &eps2, h2);
    assert_int_not_equal(lib->lasthalf(&unit, &nj, &ni, index, xi, vi, &eps2, h2, acc, jerk, pot),
                         0);
    nj = 10;
    xi[1][2] = NAN;
    lib->firsthalf(&unit, &nj, &ni, index, xi, vi, acc, jerk, pot, &eps2, h2);
    assert_int_not_equal(lib->lasthalf(&unit, &nj, &ni, index, xi, vi, &eps2, h2, acc, jerk, pot),
                         0);
    xi[1][2] = 0.5;
    /* lasthalf without firsthalf; a neighbour list without radii */
    assert_int_not_equal(lib->lasthalf(&unit, &nj, &ni, index, xi, vi, &eps2, h2, acc, jerk, pot),
                         0);
    p.x[3][0] = NAN;
    assert_int_not_equal(g6_set_j(lib, unit, 3, &p, 3), 0);
    p.x[3][0] = 0.25;
    int negative = -1;
    double zero3[3] = {0, 0, 0}, one = 1;
    assert_int_not_equal(lib->set_j_particle(&unit, &negative, &p.id[0], &ti, &ti, &one, zero3,
                                             zero3, zero3, zero3, zero3),
                         0);
    /* Still usable: a good call after the bad ones. */
    index[0] = p.id[0];
    index[1] = -1;
    lib->firsthalf(&unit, &nj, &ni, index, xi, vi, acc, jerk, pot, &eps2, h2);
    assert_int_equal(lib->lasthalf2(&unit, &nj, &ni, index, xi, vi, &eps2, h2, acc, jerk, pot, nn),
                     0);
    assert_true(pot[0] < 0 && pot[1] < 0);
    assert_int_equal(lib->read_neighbour_list(&unit), 0); /* all radii 0: empty lists */
    int pipe = 0, maxlength = 4, count = -1, list[4];
    assert_int_equal(lib->get_neighbour_list(&unit, &pipe, &maxlength, &count, list), 0);
    assert_int_equal(count, 0);
    pipe = 7; /* beyond ni */
    assert_int_not_equal(lib->get_neighbour_list(&unit, &pipe, &maxlength, &count, list), 0);
    assert_int_equal(lib->reset(&unit), 0);
    assert_int_equal(lib->close(&unit), 0);
    assert_int_not_equal(lib->close(&unit), 0);
    particles_free(&p);
}

/* ---- g6_close_ closes only the unit it names (issue #32) ----------------------------------- */

/* acc, jerk and pot of the first npipes particles of p on unit of libsapporo, against the
 * comparison library's unit of the same ID: agree to 1e-11 of each target's scale, as in
 * test_forces_agree. */
static void assert_unit_computes(int unit, const particles *p)
{
    const int npipes = libs[0].npipes();
    int ni = p->n < npipes ? p->n : npipes, nj = p->n;
    double ti = 0.02, eps2 = 1e-3;
    double(*xi)[3] = calloc((size_t)ni, sizeof *xi), (*vi)[3] = calloc((size_t)ni, sizeof *vi);
    double *h2 = calloc((size_t)ni, sizeof(double));
    double(*acc[2])[3], (*jerk[2])[3], *pot[2];
    for (int i = 0; i < ni; ++i) {
        g6_host_predict(p, i, ti, xi[i], vi[i]);
        h2[i] = eps2;
    }
    for (int k = 0; k < 2; ++k) {
        acc[k] = calloc((size_t)ni, sizeof *acc[k]);
        jerk[k] = calloc((size_t)ni, sizeof *jerk[k]);
        pot[k] = calloc((size_t)ni, sizeof(double));
        assert_int_equal(libs[k].set_ti(&unit, &ti), 0);
        libs[k].firsthalf(&unit, &nj, &ni, p->id, xi, vi, p->a, p->jerk, pot[k], &eps2, h2);
        assert_int_equal(
            libs[k].lasthalf(&unit, &nj, &ni, p->id, xi, vi, &eps2, h2, acc[k], jerk[k], pot[k]),
            0);
    }
    for (int i = 0; i < ni; ++i) {
        const double scale_a = sqrt(acc[1][i][0] * acc[1][i][0] + acc[1][i][1] * acc[1][i][1] +
                                    acc[1][i][2] * acc[1][i][2]) +
                               1.0;
        for (int c = 0; c < 3; ++c) {
            assert_true(fabs(acc[0][i][c] - acc[1][i][c]) / scale_a < 1e-11);
            assert_true(fabs(jerk[0][i][c] - jerk[1][i][c]) / (fabs(jerk[1][i][c]) + 10.0) < 1e-11);
        }
        assert_true(fabs(pot[0][i] - pot[1][i]) / fabs(pot[1][i]) < 1e-11);
    }
    for (int k = 0; k < 2; ++k) {
        free(acc[k]);
        free(jerk[k]);
        free(pot[k]);
    }
    free(xi);
    free(vi);
    free(h2);
}

/* g6_open_(0); g6_open_(1); g6_close_(1); g6_close_(1): the second close names no open unit and
 * must fail without closing unit 0 (the fallback to the only open unit serves ph4's calls with
 * an unset ID, never close). The same after a failed 17th open: closing the ID that never opened
 * leaves the other units alone. Unit 0 still computes the comparison library's forces. */
static void test_close_names_its_unit(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    particles p;
    particles_random(&p, 40, &rng);
    g6lib *lib = &libs[0];
    int zero = 0, one = 1;
    for (int k = 0; k < 2; ++k)
        load_all(&libs[k], zero, &p);
    assert_int_equal(lib->open(&one), 0);
    assert_int_equal(lib->close(&one), 0);
    assert_int_not_equal(lib->close(&one), 0); /* already closed */
    assert_unit_computes(zero, &p);

    /* 16 open (0 and 101 .. 115), the 17th refused; then only 0 stays open, and closing the
     * 17th's ID must not reach it. */
    int ids[15];
    for (int k = 0; k < 15; ++k) {
        ids[k] = 101 + k;
        assert_int_equal(lib->open(&ids[k]), 0);
    }
    int seventeenth = 116;
    assert_int_not_equal(lib->open(&seventeenth), 0);
    for (int k = 0; k < 15; ++k)
        assert_int_equal(lib->close(&ids[k]), 0);
    assert_int_not_equal(lib->close(&seventeenth), 0);
    assert_unit_computes(zero, &p);
    for (int k = 0; k < 2; ++k)
        assert_int_equal(libs[k].close(&zero), 0);
    assert_int_not_equal(lib->close(&zero), 0);
    particles_free(&p);
}

/* ---- the Hermite block-step integrator of tests/g6/g6_driver.c ----------------------------- */

/* The same Plummer sphere through both libraries: no NaN, a small energy error, and libsapporo's
 * within 2x of the comparison library's (plus 1e-9 for the noise floor). */
static void test_hermite_plummer(void **state)
{
    (void)state;
    particles initial;
    g6_plummer(&initial, 128, fk_test_seed());
    size_t steps[2] = {0, 0};
    double error[2];
    for (int k = 0; k < 2; ++k)
        error[k] = g6_hermite(&libs[k], &initial, 1e-4, 0.02, 0.25, &steps[k]);
    fprintf(stderr,
            "Plummer N = 128 to t = 0.25: |dE/E| libsapporo %.3g (%zu block steps), "
            "comparison %.3g (%zu)\n",
            error[0], steps[0], error[1], steps[1]);
    assert_false(isnan(error[0]));
    assert_false(isnan(error[1]));
    assert_true(error[1] < 1e-4);
    assert_true(error[0] <= 2 * error[1] + 1e-9);
    particles_free(&initial);
}

int main(int argc, char **argv)
{
    library_path[0] = getenv("FK_G6_LIBSAPPORO");
    library_path[1] = getenv("FK_G6_COMPARISON");
    if (!library_path[0] || !library_path[1]) {
        fprintf(stderr, "%s: set FK_G6_LIBSAPPORO and FK_G6_COMPARISON to the two libraries\n",
                argv[0]);
        return 2;
    }
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forces_agree),    cmocka_unit_test(test_neighbour_lists_agree),
        cmocka_unit_test(test_bad_input),       cmocka_unit_test(test_close_names_its_unit),
        cmocka_unit_test(test_hermite_plummer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
