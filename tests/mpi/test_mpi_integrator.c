/*
 * fk_mpi_integrator under mpirun (issue #33 item 5), on every rank count CTest runs it with (1 to
 * 4): each rank integrates its slab of an LJ fluid on its own device, the halo's positions moving
 * between the ranks after every drift. The reference is one fk_integrator of the whole system on
 * rank 0 (the same context), its state and energies broadcast:
 *
 *   bits      fixed64 (reproducible) Verlet and fixed64 Langevin with unequal masses, 150 steps
 *             (12 calls of one step, then two: a call must not lose the last step's "leave")
 *             with a small margin so that the ranks redistribute many times (the counter is
 *             checked): every rank's gathered positions and velocities and both energies equal the
 *             reference bit for bit, and the counters are the same on every rank. And
 *             ljc_constant (charges +-0.3, two types in config.physics's pair table) with the
 *             evaluation set from uneven slices (the last rank none when P > 2), 90 steps.
 *   float     Verlet with float sums, 60 steps: within 1e-4 in position, 1e-3 in velocity and
 *             1e-6 of the energies (each redistribution rebuilds the lists, and the sums follow
 *             their order); the largest differences and how many coordinates are the same bits
 *             are printed.
 *   refusals  the allgather scheme (all-pairs) and Hermite: FK_ERR_UNSUPPORTED on every rank with
 *             a message; rank 1 with another dt, or one coordinate one ulp away: every rank
 *             fails naming rank 1; one particle far too fast (one rank sees it): every rank
 *             fails with the halo's message; a time step far too large fails on every rank with one
 * message, and the state is then gone (get_all_state: FK_ERR_STATE on every rank); while an
 * integrator holds the evaluation's device set, a second integrator and the evaluation's compute
 * are FK_ERR_STATE, and after it an update gives the evaluation its own sets back; nothing hangs
 * (CTest's timeout bounds the run).
 *
 * Exit status 0 when every check passed on every rank; rank 0 prints what failed.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "forcekit/forcekit.h"
#include "forcekit/forcekit_mpi.h"

#include "mpi_test.h"

/* 10 x 10 x 20 sites at density 0.8: a box of 10.8 x 10.8 x 21.5, four slabs of 5.4 along z, each
 * wider than the halo (2.5 + 0.3 + the margin). */
#define SIDE_XY 10
#define SIDE_Z 20
#define N (SIDE_XY * SIDE_XY * SIDE_Z)
#define CUTOFF 2.5
#define SKIN 0.3
#define DT 0.005

typedef struct fluid {
    double box[3];
    double x[3 * N], v[3 * N], masses[N];
    double charges[N];
    int types[N];
} fluid;

static void make_fluid(fluid *f)
{
    const double spacing = cbrt(1.0 / 0.8);
    f->box[0] = f->box[1] = SIDE_XY * spacing;
    f->box[2] = SIDE_Z * spacing;
    size_t i = 0;
    for (int a = 0; a < SIDE_XY; ++a)
        for (int b = 0; b < SIDE_XY; ++b)
            for (int c = 0; c < SIDE_Z; ++c, ++i) {
                const int site[3] = {a, b, c};
                f->masses[i] = 1.0 + 0.5 * (double)(i % 3);
                f->charges[i] = i % 2 ? 0.3 : -0.3;
                f->types[i] = (int)(i % 5 < 2);
                for (int k = 0; k < 3; ++k) {
                    f->x[3 * i + k] = spacing * (site[k] + 0.5 + 0.2 * (uniform() - 0.5));
                    const double u1 = 1.0 - uniform(), u2 = uniform();
                    /* temperature about 1.5: particles cross the slabs' faces */
                    f->v[3 * i + k] =
                        sqrt(1.5) * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
                }
            }
}

typedef struct run_config {
    const char *law; /* NULL: lj (one type, no charges); else with charges and two types */
    const char *accum;
    int reproducible;
    int algorithm;
    int kind;
    double dt;
    int masses;
    uint64_t steps;
    double margin;
} run_config;

/* Two types for the charged law: epsilon and sigma per pair, symmetric. */
static const double pair_values[] = {1.0, 1.0, 0.8, 0.95, 0.8, 0.95, 1.2, 1.05};
static const unsigned char pair_present[] = {1, 1, 1, 1};
static const fk_pair_table pair_table = {
    .types = 2, .values = pair_values, .present = pair_present};
static fk_physics physics;

static fk_eval_config eval_config(const fluid *f, const run_config *run)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = run->law ? run->law : "lj";
    config.accum = run->accum;
    config.reproducible = run->reproducible;
    if (run->law) { /* the physics as one description, its pair table included */
        memset(&physics, 0, sizeof physics);
        physics.cutoff = CUTOFF;
        memcpy(physics.box, f->box, sizeof physics.box);
        physics.pair_table = &pair_table;
        config.physics = &physics;
    } else {
        config.cutoff = CUTOFF;
        memcpy(config.box, f->box, sizeof config.box);
    }
    config.skin = SKIN;
    config.algorithm = run->algorithm;
    config.potential = 1;
    /* the distributed evaluation's lists are full on every rank count: the same here */
    config.neighbor_lists = FK_NEIGHBOR_LISTS_FULL;
    return config;
}

static fk_integrator_config dynamics(const fluid *f, const run_config *run)
{
    fk_integrator_config config = FK_CONFIG_INIT(fk_integrator_config);
    config.kind = run->kind;
    config.dt = run->dt;
    if (run->kind == FK_INTEGRATOR_LANGEVIN) {
        config.temperature = 1.0;
        config.friction = 1.0;
        config.seed = 0x5eed0fca11ab1eull;
    }
    if (run->masses) {
        config.masses = f->masses;
        config.mass_count = N;
    }
    return config;
}

/* The reference on rank 0, broadcast: x, v, then the kinetic and potential energy. */
static int whole_system(const fluid *f, const run_config *run, double *out)
{
    int ok = 1;
    if (rank == 0) {
        const fk_eval_config config = eval_config(f, run);
        const fk_integrator_config integrator_config = dynamics(f, run);
        fk_eval *eval = NULL;
        fk_integrator *integrator = NULL;
        const fk_particles particles = {.count = N,
                                        .position = f->x,
                                        .mass = run->law ? f->charges : NULL,
                                        .type = run->law ? f->types : NULL};
        ok = fk_eval_create(context, &config, &eval) == FK_OK &&
             fk_eval_set_particles(eval, &particles) == FK_OK &&
             fk_integrator_create(eval, &integrator_config, &integrator) == FK_OK &&
             fk_integrator_set_state(integrator, f->x, f->v, 0) == FK_OK &&
             fk_integrator_step(integrator, run->steps) == FK_OK &&
             fk_integrator_get_state(integrator, out, out + 3 * N, NULL) == FK_OK &&
             fk_integrator_energies(integrator, &out[6 * N], &out[6 * N + 1]) == FK_OK;
        CHECK(ok, "the reference: %s", fk_context_last_error(context));
        fk_integrator_destroy(integrator);
        fk_eval_destroy(eval);
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(out, 6 * N + 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return ok;
}

static fk_mpi_eval *make_mpi_eval(const fluid *f, const run_config *run)
{
    const fk_eval_config config = eval_config(f, run);
    fk_mpi_eval *m = NULL;
    fk_status status = fk_mpi_eval_create(context, &config, MPI_COMM_WORLD, &m);
    CHECK(status == FK_OK, "fk_mpi_eval_create: %s", fk_mpi_eval_last_error(NULL));
    if (run->law) {
        /* uneven slices, the last rank none when P > 2: each rank's charges and types are
         * gathered by the integrator */
        size_t weights = 0, before = 0, mine = 0;
        for (int r = 0; r < ranks; ++r) {
            const size_t w = ranks > 2 && r == ranks - 1 ? 0 : (size_t)r + 1;
            before += r < rank ? w : 0;
            mine = r == rank ? w : mine;
            weights += w;
        }
        const size_t first = N * before / weights, count = N * (before + mine) / weights - first;
        const fk_particles slice = {.count = count,
                                    .position = f->x + 3 * first,
                                    .mass = f->charges + first,
                                    .type = f->types + first};
        if (status == FK_OK)
            status = fk_mpi_eval_set_particles(m, &slice);
    } else {
        const fk_particles all = {.count = N, .position = f->x};
        if (status == FK_OK)
            status = fk_mpi_eval_set_all_particles(m, &all);
    }
    CHECK(status == FK_OK, "set_all_particles: %s", fk_mpi_eval_last_error(m));
    if (status != FK_OK) {
        fk_mpi_eval_destroy(m);
        return NULL;
    }
    return m;
}

/* The same value on every rank. */
static int same_everywhere(uint64_t value)
{
    uint64_t low = value, high = value;
    MPI_Allreduce(MPI_IN_PLACE, &low, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &high, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return low == high;
}

static size_t differing(const double *a, const double *b, size_t count)
{
    size_t n = 0;
    for (size_t k = 0; k < count; ++k)
        n += memcmp(&a[k], &b[k], sizeof a[k]) != 0;
    return n;
}

/* The distributed run against the reference; bits: fixed64's equality, else the tolerance. */
static void check_run(const run_config *run, int bits)
{
    static fluid f;
    make_fluid(&f);
    static double reference[6 * N + 2], x[3 * N], v[3 * N];
    if (!whole_system(&f, run, reference))
        return;
    fk_mpi_eval *m = make_mpi_eval(&f, run);
    if (!m)
        return;
    fk_mpi_integrator_config config = FK_CONFIG_INIT(fk_mpi_integrator_config);
    config.integrator = dynamics(&f, run);
    config.margin = run->margin;
    fk_mpi_integrator *mi = NULL;
    fk_status status = fk_mpi_integrator_create(m, &config, &mi);
    CHECK(status == FK_OK, "fk_mpi_integrator_create: %s", fk_mpi_integrator_last_error(NULL));
    if (status == FK_OK)
        status = fk_mpi_integrator_set_all_state(mi, f.x, f.v, 0);
    /* 12 calls of one step (a call that ends on the step whose vote said "leave" must not lose
     * it: one step past it a particle may have left the halo's reach), then two calls */
    for (int k = 0; k < 12 && status == FK_OK; ++k)
        status = fk_mpi_integrator_step(mi, 1);
    if (status == FK_OK)
        status = fk_mpi_integrator_step(mi, run->steps / 3);
    if (status == FK_OK)
        status = fk_mpi_integrator_step(mi, run->steps - run->steps / 3 - 12);
    uint64_t step = 0;
    if (status == FK_OK)
        status = fk_mpi_integrator_get_all_state(mi, x, v, &step);
    double energies[2] = {0, 0};
    if (status == FK_OK)
        status = fk_mpi_integrator_energies(mi, &energies[0], &energies[1]);
    CHECK(status == FK_OK, "%s: %s", fk_status_string(status), fk_mpi_integrator_last_error(mi));
    uint64_t rebuilds = 0, rescales = 0, redistributions = 0;
    fk_mpi_integrator_counters(mi, &rebuilds, &rescales, &redistributions);
    fk_mpi_rank_figures figures[4];
    CHECK(fk_mpi_integrator_figures(mi, 0, ranks <= 4 ? figures : NULL) == FK_OK, "figures");
    if (rank == 0)
        printf("%s %s %s P=%d: %llu redistributions, %llu rebuilds, %llu rescales; %zu of %d "
               "coordinates and %zu velocities differ from one device's; rank 0 owns %zu, "
               "compute %.3f s, communication %.3f s\n",
               run->law ? run->law : "lj", run->accum,
               run->kind == FK_INTEGRATOR_LANGEVIN ? "langevin" : "verlet", ranks,
               (unsigned long long)redistributions, (unsigned long long)rebuilds,
               (unsigned long long)rescales, differing(x, reference, 3 * N), 3 * N,
               differing(v, reference + 3 * N, 3 * N), figures[0].particles,
               figures[0].compute_seconds, figures[0].communication_seconds);
    fk_mpi_integrator_destroy(mi);
    fk_mpi_eval_destroy(m);
    if (status != FK_OK)
        return;
    CHECK(step == run->steps, "step %llu", (unsigned long long)step);
    /* set_all_state's distribution and at least a few more */
    CHECK(redistributions > 3, "%llu redistributions", (unsigned long long)redistributions);
    CHECK(same_everywhere(redistributions) && same_everywhere(rebuilds) &&
              same_everywhere(rescales),
          "the counters differ between the ranks");
    if (bits) {
        CHECK(differing(x, reference, 3 * N) == 0, "positions differ");
        CHECK(differing(v, reference + 3 * N, 3 * N) == 0, "velocities differ");
        CHECK(differing(energies, reference + 6 * N, 2) == 0,
              "energies %.17g %.17g against %.17g %.17g", energies[0], energies[1],
              reference[6 * N], reference[6 * N + 1]);
        return;
    }
    /* float sums in another order (each redistribution rebuilds the lists, and the sums follow
     * the lists' order): rounding, about 1e-7 of a coordinate per step, grown by the chaos over
     * the steps; the largest differences are printed (after 60 steps, P = 1..4: 1e-6..2e-6 in
     * position, 2e-5..4e-5 in velocity, 3e-8..8e-8 of the energies), the bounds 12-50 times
     * above them */
    double largest[2] = {0, 0};
    for (size_t k = 0; k < 3 * N; ++k) {
        double d = fabs(x[k] - reference[k]);
        d = fmin(d, f.box[k % 3] - d); /* across the periodic boundary */
        largest[0] = fmax(largest[0], d);
        largest[1] = fmax(largest[1], fabs(v[k] - reference[3 * N + k]));
        if (!(d < 1e-4) || !(fabs(v[k] - reference[3 * N + k]) < 1e-3)) {
            CHECK(0, "coordinate %zu: %.17g / %.17g, velocity %.17g / %.17g", k, x[k], reference[k],
                  v[k], reference[3 * N + k]);
            break;
        }
    }
    if (rank == 0)
        printf("float: largest differences %.3g in position, %.3g in velocity; energies %.3g, "
               "%.3g relative\n",
               largest[0], largest[1], fabs(energies[0] / reference[6 * N] - 1),
               fabs(energies[1] / reference[6 * N + 1] - 1));
    CHECK(fabs(energies[0] - reference[6 * N]) < 1e-6 * fabs(reference[6 * N]), "kinetic %.17g",
          energies[0]);
    CHECK(fabs(energies[1] - reference[6 * N + 1]) < 1e-6 * fabs(reference[6 * N + 1]),
          "potential %.17g", energies[1]);
}

/* The same status and message on every rank. */
static void check_agreed(fk_status status, fk_status expected, const char *message,
                         const char *what)
{
    CHECK(status == expected, "%s: %s, expected %s (%s)", what, fk_status_string(status),
          fk_status_string(expected), message);
    CHECK(message && message[0], "%s: no message", what);
    char first[1024] = "";
    if (rank == 0 && message)
        snprintf(first, sizeof first, "%s", message);
    MPI_Bcast(first, sizeof first, MPI_CHAR, 0, MPI_COMM_WORLD);
    CHECK(message && strncmp(first, message, sizeof first - 1) == 0,
          "%s: '%s' against rank 0's '%s'", what, message ? message : "", first);
    if (rank == 0)
        printf("%s: %s\n", what, message ? message : "");
}

static void check_refusals(void)
{
    static fluid f;
    make_fluid(&f);
    run_config run = {.accum = "fixed64",
                      .algorithm = FK_ALGORITHM_ALL_PAIRS,
                      .kind = FK_INTEGRATOR_VERLET,
                      .dt = DT,
                      .steps = 10,
                      .margin = 0.3};
    fk_mpi_integrator_config config = FK_CONFIG_INIT(fk_mpi_integrator_config);
    config.integrator = dynamics(&f, &run);
    fk_mpi_integrator *mi = NULL;
    fk_mpi_eval *m = make_mpi_eval(&f, &run); /* all-pairs: the allgather scheme */
    if (m) {
        check_agreed(fk_mpi_integrator_create(m, &config, &mi), FK_ERR_UNSUPPORTED,
                     fk_mpi_integrator_last_error(NULL), "all-pairs");
        CHECK(mi == NULL, "an integrator on a refusal");
        fk_mpi_eval_destroy(m);
    }
    run.algorithm = FK_ALGORITHM_NEIGHBORS;
    m = make_mpi_eval(&f, &run);
    if (!m)
        return;
    config.integrator.kind = FK_INTEGRATOR_HERMITE;
    check_agreed(fk_mpi_integrator_create(m, &config, &mi), FK_ERR_UNSUPPORTED,
                 fk_mpi_integrator_last_error(NULL), "hermite");
    config.integrator.kind = FK_INTEGRATOR_VERLET;
    if (ranks > 1) { /* rank 1 with another time step, then with one coordinate moved */
        config.integrator.dt = rank == 1 ? 2 * DT : DT;
        fk_status status = fk_mpi_integrator_create(m, &config, &mi);
        check_agreed(status, FK_ERR_INVALID_ARGUMENT, fk_mpi_integrator_last_error(NULL),
                     "another dt on rank 1");
        CHECK(strstr(fk_mpi_integrator_last_error(NULL), "rank 1"), "rank 1 not named");
        config.integrator.dt = DT;
        status = fk_mpi_integrator_create(m, &config, &mi);
        CHECK(status == FK_OK, "create: %s", fk_mpi_integrator_last_error(NULL));
        if (status == FK_OK) {
            const double kept = f.x[3 * 7 + 2];
            if (rank == 1)
                f.x[3 * 7 + 2] = nextafter(kept, 1e9);
            status = fk_mpi_integrator_set_all_state(mi, f.x, f.v, 0);
            f.x[3 * 7 + 2] = kept;
            check_agreed(status, FK_ERR_INVALID_ARGUMENT, fk_mpi_integrator_last_error(mi),
                         "one coordinate one ulp away on rank 1");
            check_agreed(fk_mpi_integrator_step(mi, 1), FK_ERR_STATE,
                         fk_mpi_integrator_last_error(mi), "a step without a state");
        }
        fk_mpi_integrator_destroy(mi);
        mi = NULL;
    }
    /* one particle far too fast: only its owner sees it leave, and every rank fails (the
     * integrator's verdict is the system's vote, the same message on every part) */
    fk_status status = fk_mpi_integrator_create(m, &config, &mi);
    CHECK(status == FK_OK, "create: %s", fk_mpi_integrator_last_error(NULL));
    const size_t fast = 7 * SIDE_Z + SIDE_Z - 5; /* near the top of the box: the last rank's */
    const double kept = f.v[3 * fast + 2];
    f.v[3 * fast + 2] = 200.0; /* 1.0 along z in one step of 0.005 */
    if (status == FK_OK)
        status = fk_mpi_integrator_set_all_state(mi, f.x, f.v, 0);
    f.v[3 * fast + 2] = kept;
    CHECK(status == FK_OK, "set_all_state: %s", fk_mpi_integrator_last_error(mi));
    if (status == FK_OK) {
        const char *message = fk_mpi_integrator_last_error(mi);
        check_agreed(fk_mpi_integrator_step(mi, 5), FK_ERR_INVALID_INPUT, message,
                     "one particle too fast");
        CHECK(strstr(message, "moved farther than") != NULL, "not the halo's message: %s", message);
    }
    fk_mpi_integrator_destroy(mi);
    mi = NULL;
    /* far too large a time step: the particles fly through each other and the halo */
    config.integrator.kind = FK_INTEGRATOR_VERLET;
    config.integrator.dt = 0.5;
    status = fk_mpi_integrator_create(m, &config, &mi);
    CHECK(status == FK_OK, "create: %s", fk_mpi_integrator_last_error(NULL));
    if (status == FK_OK)
        status = fk_mpi_integrator_set_all_state(mi, f.x, f.v, 0);
    CHECK(status == FK_OK, "set_all_state: %s", fk_mpi_integrator_last_error(mi));
    if (status == FK_OK) {
        status = fk_mpi_integrator_step(mi, 50);
        int worst = (int)status, best = (int)status;
        MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &best, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        CHECK(status != FK_OK && worst == best, "dt 0.5: %s", fk_status_string(status));
        check_agreed(status, FK_ERR_INVALID_INPUT, fk_mpi_integrator_last_error(mi), "dt 0.5");
        static double x[3 * N];
        check_agreed(fk_mpi_integrator_get_all_state(mi, x, NULL, NULL), FK_ERR_STATE,
                     fk_mpi_integrator_last_error(mi), "get_all_state after a failed step");
    }
    /* The evaluation's device set is the integrator's: its own calls are refused meanwhile, a
     * second integrator too, and after the integrator an update gives it its own sets back. */
    fk_mpi_integrator *second = NULL;
    check_agreed(fk_mpi_integrator_create(m, &config, &second), FK_ERR_STATE,
                 fk_mpi_integrator_last_error(NULL), "a second integrator");
    check_agreed(fk_mpi_eval_compute(m, NULL), FK_ERR_STATE, fk_mpi_eval_last_error(m),
                 "the evaluation's compute under an integrator");
    fk_mpi_integrator_destroy(mi);
    check_agreed(fk_mpi_eval_compute(m, NULL), FK_ERR_STATE, fk_mpi_eval_last_error(m),
                 "the evaluation's compute after the integrator");
    status = fk_mpi_eval_update_all_positions(m, f.x, NULL);
    if (status == FK_OK)
        status = fk_mpi_eval_compute(m, NULL);
    CHECK(status == FK_OK, "update and compute after the integrator: %s",
          fk_mpi_eval_last_error(m));
    fk_mpi_eval_destroy(m);
}

int main(int argc, char **argv)
{
    if (mpi_test_start(&argc, &argv, "test_mpi_integrator") != 0)
        return 1;
    const char *what = argc > 1 ? argv[1] : "all";
    if (!strcmp(what, "all") || !strcmp(what, "bits")) {
        const run_config verlet = {.accum = "fixed64",
                                   .reproducible = 1,
                                   .algorithm = FK_ALGORITHM_NEIGHBORS,
                                   .kind = FK_INTEGRATOR_VERLET,
                                   .dt = DT,
                                   .steps = 150,
                                   .margin = 0.2};
        check_run(&verlet, 1);
        const run_config langevin = {.accum = "fixed64",
                                     .algorithm = FK_ALGORITHM_NEIGHBORS,
                                     .kind = FK_INTEGRATOR_LANGEVIN,
                                     .dt = DT,
                                     .masses = 1,
                                     .steps = 150,
                                     .margin = 0.2};
        check_run(&langevin, 1);
        const run_config charged = {.law = "ljc_constant",
                                    .accum = "fixed64",
                                    .algorithm = FK_ALGORITHM_NEIGHBORS,
                                    .kind = FK_INTEGRATOR_VERLET,
                                    .dt = DT,
                                    .steps = 90,
                                    .margin = 0.2};
        check_run(&charged, 1);
    }
    if (!strcmp(what, "all") || !strcmp(what, "float")) {
        const run_config verlet = {.accum = "float",
                                   .algorithm = FK_ALGORITHM_NEIGHBORS,
                                   .kind = FK_INTEGRATOR_VERLET,
                                   .dt = DT,
                                   .steps = 60,
                                   .margin = 0.4};
        check_run(&verlet, 0);
    }
    if (!strcmp(what, "all") || !strcmp(what, "refusals"))
        check_refusals();
    return mpi_test_finish("test_mpi_integrator");
}
