/*
 * libforcekit_mpi under mpirun (issue #20), on every rank count CTest runs it with (1 to 4):
 *
 *   forces    the distributed results, read back whole on every rank, equal bit for bit to one
 *             plain fk_eval on rank 0 (the P = 1 result) for ga, gaj, lj and ljc_constant with
 *             fixed64 (all-pairs, and cells and full lists in a periodic box) and with float; the
 *             plain results held to the double-precision reference; lj's also with its physics
 *             in config.physics, cutoff 4 (the halo from fk_eval_get_reach, issue #35). Fresh
 *             random inputs (the seed, FK_TEST_SEED or the clock, is printed and broadcast),
 *             uneven slices (rank r holds r + 1 parts, the last rank none when P > 2).
 *   moving    the spatial scheme's resident sets over 14 updates of a moving fluid (cells and
 *             lists, fixed64 and float): rebuilds and position-only updates both run, and every
 *             step's fixed64 forces equal one device's bit for bit (float: within 1e-5, its
 *             sums follow each rank's cell and list builds).
 *   simulate  100 leapfrog steps of a gaj cluster, fixed64 with FK_SCALE_KEEP, each rank moving
 *             only its own slice; the final positions and velocities gathered on rank 0 equal
 *             bit for bit those of the same integration on one plain fk_eval. And FK_SCALE_KEEP's
 *             rescale (two particles pushed close) in both schemes: one rescale, the forces
 *             after it one device's. Cells and lists in a periodic box run the spatial scheme
 *             (slabs and halos), the rest the allgather scheme; the forces lines say which.
 *   sources   block steps (fk_mpi_sources): every 7th particle active, the sources split over
 *             the ranks; fixed64 bit-identical to one engine with all the sources, ref within
 *             1e-12 and deterministic, the nearest source equal, the engine against the reference.
 *   failures  a rank that passes bad input at set_particles, one that fails mid-run (step 3 of an
 *             update loop) and ranks that disagree on the arrays they give: every rank returns
 *             the same status, and the message names the failing rank; nothing hangs (CTest's
 *             timeout bounds the run).
 *   replicated  every rank passing the whole system (fk_mpi_eval_set_all_particles): one
 *             device's forces when the ranks agree; FK_ERR_INVALID_ARGUMENT on every rank, naming
 *             rank 1, when rank 1 has fewer particles, one coordinate one ulp away, a drifted
 *             update (update_all_positions) or another eps at create, and block steps
 *             (fk_mpi_sources) with another accumulator on rank 1 (issue #32).
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

/* Uneven slices: rank r holds r + 1 shares of N (when P > 2, the last rank holds none). */
static void slice_of(size_t n, int r, size_t *first, size_t *count)
{
    size_t weights = 0, before = 0;
    for (int k = 0; k < ranks; ++k) {
        const size_t w = ranks > 2 && k == ranks - 1 ? 0 : (size_t)k + 1;
        if (k < r)
            before += w;
        weights += w;
    }
    const size_t mine = ranks > 2 && r == ranks - 1 ? 0 : (size_t)r + 1;
    *first = n * before / weights;
    *count = n * (before + mine) / weights - *first;
}

typedef struct system {
    size_t n;
    double *position, *velocity, *mass;
    double box;
} system_t;

static system_t make_system(const char *kernel, size_t n, double box)
{
    system_t s = {.n = n, .box = box};
    s.position = malloc(3 * n * sizeof *s.position);
    s.velocity = malloc(3 * n * sizeof *s.velocity);
    s.mass = malloc(n * sizeof *s.mass);
    if (!s.position || !s.velocity || !s.mass)
        MPI_Abort(MPI_COMM_WORLD, 2);
    const int molecular = kernel[0] == 'l';
    const int side = (int)ceil(cbrt((double)n));
    for (size_t i = 0; i < n; ++i) {
        if (molecular) { /* a jittered lattice in the box: no overlapping pairs */
            const size_t c[3] = {i % (size_t)side, i / (size_t)side % (size_t)side,
                                 i / ((size_t)side * (size_t)side)};
            for (int d = 0; d < 3; ++d)
                s.position[3 * i + d] = ((double)c[d] + 0.5 + 0.3 * (uniform() - 0.5)) * box / side;
            s.mass[i] = (i % 2 ? -1 : 1) * (0.2 + 0.8 * uniform()); /* charges */
        } else {
            for (int d = 0; d < 3; ++d)
                s.position[3 * i + d] = 2 * uniform() - 1;
            s.mass[i] = (0.5 + uniform()) / (double)n;
        }
        for (int d = 0; d < 3; ++d)
            s.velocity[3 * i + d] = 0.3 * (uniform() - 0.5);
    }
    return s;
}

static void free_system(system_t *s)
{
    free(s->position);
    free(s->velocity);
    free(s->mass);
}

/* Nonzero: make_config asks for double-single positions (the allgather scheme's cases). */
static int double_single;
/* Nonzero: make_config gives the molecular laws' physics as config.physics with this cutoff, not
 * in the flat fields (issue #35: the spatial scheme's halo is the cutoff the evaluation resolved,
 * fk_eval_get_reach; it read only the flat fields, and without a cutoff there lj's 2.5). */
static double physics_cutoff;
static fk_physics described_physics;

static fk_eval_config make_config(const char *kernel, const char *accum, int algorithm,
                                  const system_t *s)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.positions = double_single ? FK_POSITIONS_DOUBLE_SINGLE : FK_POSITIONS_FLOAT;
    config.kernel = kernel;
    config.accum = accum;
    config.algorithm = algorithm;
    config.potential = 1;
    if (kernel[0] == 'l' && physics_cutoff > 0) {
        described_physics = (fk_physics){.cutoff = physics_cutoff, .box = {s->box, s->box, s->box}};
        config.physics = &described_physics;
        config.neighbor_lists = FK_NEIGHBOR_LISTS_FULL;
    } else if (kernel[0] == 'l') {
        config.cutoff = 2.5;
        config.box[0] = config.box[1] = config.box[2] = s->box;
        config.neighbor_lists = FK_NEIGHBOR_LISTS_FULL;
    } else {
        config.eps = 0.05;
    }
    return config;
}

static fk_particles view(const char *kernel, const system_t *s, size_t first, size_t count)
{
    const int gaj = strcmp(kernel, "gaj") == 0;
    return (fk_particles){.count = count,
                          .position = s->position + 3 * first,
                          .mass = strcmp(kernel, "lj") == 0 ? NULL : s->mass + first,
                          .velocity = gaj ? s->velocity + 3 * first : NULL};
}

/* One case: the distributed results against the plain evaluation on rank 0. */
static void check_forces(const char *kernel, const char *accum, int algorithm, size_t n)
{
    system_t s = make_system(kernel, n, 9.9);
    const fk_eval_config config = make_config(kernel, accum, algorithm, &s);
    fk_mpi_eval *m = NULL;
    fk_status status = fk_mpi_eval_create(context, &config, MPI_COMM_WORLD, &m);
    CHECK(status == FK_OK, "create %s %s: %s", kernel, accum, fk_mpi_eval_last_error(NULL));
    if (status != FK_OK) {
        free_system(&s);
        return;
    }
    size_t first = 0, count = 0;
    slice_of(n, rank, &first, &count);
    const fk_particles mine = view(kernel, &s, first, count);
    status = fk_mpi_eval_set_particles(m, &mine);
    if (status == FK_OK)
        status = fk_mpi_eval_compute(m, NULL);
    CHECK(status == FK_OK, "%s %s: %s", kernel, accum, fk_mpi_eval_last_error(m));
    /* Cells and lists in a periodic box run the spatial scheme, the rest the allgather one. */
    const int spatial = algorithm == FK_ALGORITHM_CELLS || algorithm == FK_ALGORITHM_NEIGHBORS;
    CHECK(strcmp(fk_mpi_eval_scheme(m), spatial ? "spatial" : "allgather") == 0, "%s %s: scheme %s",
          kernel, accum, fk_mpi_eval_scheme(m));
    const size_t fc = fk_eval_force_components(fk_mpi_eval_local(m));
    double *all = malloc(fc * n * sizeof *all), *potential = malloc(n * sizeof *potential);
    double *slice = malloc((fc * count + 1) * sizeof *slice);
    if (status == FK_OK) {
        CHECK(fk_mpi_eval_read_all_forces(m, all) == FK_OK, "read_all_forces");
        CHECK(fk_mpi_eval_read_all_potentials(m, potential) == FK_OK, "read_all_potentials");
        CHECK(fk_mpi_eval_read_forces(m, slice) == FK_OK, "read_forces");
        CHECK(memcmp(slice, all + fc * first, fc * count * sizeof *all) == 0,
              "the slice read differs from the whole");
    }
    /* Every rank holds the same combined results: rank 0's, broadcast and compared. */
    double *root = malloc(fc * n * sizeof *root);
    if (rank == 0)
        memcpy(root, all, fc * n * sizeof *all);
    MPI_Bcast(root, (int)(fc * n), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    CHECK(status != FK_OK || memcmp(root, all, fc * n * sizeof *all) == 0,
          "%s %s: this rank's combined results differ from rank 0's", kernel, accum);
    if (rank == 0 && status == FK_OK) {
        /* The P = 1 result: one plain evaluation of all particles, same configuration. */
        fk_eval_config plain_config = config;
        if (algorithm == FK_ALGORITHM_AUTO) { /* what the distributed one ran */
            fk_variant variant;
            fk_eval_get_variant(fk_mpi_eval_local(m), &variant);
            plain_config.algorithm = variant.algorithm;
        }
        fk_eval *plain = NULL;
        double *force = malloc(fc * n * sizeof *force), *pot = malloc(n * sizeof *pot);
        const fk_particles whole = view(kernel, &s, 0, n);
        status = fk_eval_create(context, &plain_config, &plain);
        if (status == FK_OK)
            status = fk_eval_set_particles(plain, &whole);
        if (status == FK_OK)
            status = fk_eval_compute(plain, NULL);
        if (status == FK_OK)
            status = fk_eval_read_forces(plain, force);
        if (status == FK_OK)
            status = fk_eval_read_potentials(plain, pot);
        CHECK(status == FK_OK, "plain %s %s: %s", kernel, accum, fk_context_last_error(context));
        if (status == FK_OK) {
            size_t differ = 0, at = 0;
            for (size_t k = 0; k < fc * n; ++k)
                if (memcmp(&force[k], &all[k], sizeof force[k]) != 0 && differ++ == 0)
                    at = k;
            CHECK(differ == 0,
                  "%s %s %s P=%d: %zu force components differ from one device's; first at %zu: "
                  "%.17g vs %.17g",
                  kernel, accum, fk_algorithm_name((fk_algorithm)config.algorithm), ranks, differ,
                  at, all[at], force[at]);
            CHECK(memcmp(pot, potential, n * sizeof *pot) == 0, "%s %s: potentials differ", kernel,
                  accum);
            /* And the plain results are right: the double-precision reference. */
            fk_physics physics = {.eps = config.eps, .cutoff = config.cutoff};
            memcpy(physics.box, config.box, sizeof physics.box);
            if (config.physics)
                physics = *config.physics;
            double *reference = malloc(fc * n * sizeof *reference);
            CHECK(fk_reference_forces(kernel, &whole, &physics, reference, NULL) == FK_OK,
                  "reference");
            double largest = 0, worst = 0;
            for (size_t k = 0; k < fc * n; ++k) {
                largest = fmax(largest, fabs(reference[k]));
                worst = fmax(worst, fabs(reference[k] - force[k]));
            }
            CHECK(worst <= 1e-4 * largest, "%s %s: error %g against the reference (largest %g)",
                  kernel, accum, worst, largest);
            uint64_t hash = 1469598103934665603ull; /* FNV-1a of the bits, for the log */
            const unsigned char *bytes = (const unsigned char *)all;
            for (size_t k = 0; k < fc * n * sizeof *all; ++k)
                hash = (hash ^ bytes[k]) * 1099511628211ull;
            printf(
                "forces %-12s %-7s %-9s %-5s N=%zu P=%d, %-9s scheme: bit-identical to one "
                "device, checksum %016llx\n",
                kernel, accum, fk_algorithm_name((fk_algorithm)plain_config.algorithm),
                fk_positions_name(double_single ? FK_POSITIONS_DOUBLE_SINGLE : FK_POSITIONS_FLOAT),
                n, ranks, fk_mpi_eval_scheme(m), (unsigned long long)hash);
            free(reference);
        }
        fk_eval_destroy(plain);
        free(force);
        free(pot);
    }
    free(all);
    free(potential);
    free(slice);
    free(root);
    fk_mpi_eval_destroy(m);
    free_system(&s);
}

/* The spatial scheme's resident sets: 14 updates of a fluid whose particles move a little in
 * every direction each step (across slab boundaries, without a rebuild while the moves add up to
 * less than half the margin along z), one step with a jump that forces a rebuild and one that
 * wraps particles into the box; after each, the forces bit for bit those of one plain evaluation
 * of the same positions on rank 0 (fixed64), or within 1e-5 of the largest force (float: its
 * sums follow the order of the cells and lists, which each rank rebuilds when its own particles
 * moved half the skin, so once particles move the bits depend on P). Both paths must have run:
 * rebuilds, and updates without. */
static void check_moving(const char *accum, int algorithm, int exact)
{
    const size_t n = 729;
    const int steps = 14;
    system_t s = make_system("ljc_constant", n, 9.9);
    const fk_eval_config config = make_config("ljc_constant", accum, algorithm, &s);
    fk_mpi_eval *m = NULL;
    fk_eval *plain = NULL;
    fk_status status = fk_mpi_eval_create(context, &config, MPI_COMM_WORLD, &m);
    CHECK(status == FK_OK, "create: %s", fk_mpi_eval_last_error(NULL));
    if (status == FK_OK && rank == 0) {
        status = fk_eval_create(context, &config, &plain);
        CHECK(status == FK_OK, "plain: %s", fk_context_last_error(context));
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    size_t first = 0, count = 0;
    slice_of(n, rank, &first, &count);
    const fk_particles mine = view("ljc_constant", &s, first, count);
    const fk_particles whole = view("ljc_constant", &s, 0, n);
    double *all = malloc(3 * n * sizeof *all), *force = malloc(3 * n * sizeof *force);
    int mismatched = 0;
    for (int step = 0; step <= steps && status == FK_OK; ++step) {
        if (step > 0) { /* the same moves on every rank: the stream is the same */
            for (size_t i = 0; i < n; ++i)
                for (int d = 0; d < 3; ++d) {
                    double *x = &s.position[3 * i + d];
                    *x += 0.08 * (uniform() - 0.5);
                    if (step == 6 && d == 2 && i % 5 == 0)
                        *x += 0.7; /* more than the margin: a rebuild */
                    if (step == 10 && (*x < 0 || *x >= s.box))
                        *x -= s.box * floor(*x / s.box); /* wrapped: a rebuild */
                }
        }
        status = step == 0 ? fk_mpi_eval_set_particles(m, &mine)
                           : fk_mpi_eval_update_positions(m, mine.position, NULL);
        if (status == FK_OK)
            status = fk_mpi_eval_compute(m, NULL);
        if (status == FK_OK)
            status = fk_mpi_eval_read_all_forces(m, all);
        CHECK(status == FK_OK, "moving %s step %d: %s", accum, step, fk_mpi_eval_last_error(m));
        if (rank == 0 && status == FK_OK) {
            fk_status plain_status = step == 0 ? fk_eval_set_particles(plain, &whole)
                                               : fk_eval_update_positions(plain, s.position, NULL);
            if (plain_status == FK_OK)
                plain_status = fk_eval_compute(plain, NULL);
            if (plain_status == FK_OK)
                plain_status = fk_eval_read_forces(plain, force);
            CHECK(plain_status == FK_OK, "plain step %d: %s", step, fk_context_last_error(context));
            double largest = 0, worst = 0;
            for (size_t k = 0; k < 3 * n; ++k) {
                largest = fmax(largest, fabs(force[k]));
                worst = fmax(worst, fabs(all[k] - force[k]));
            }
            const int same =
                exact ? memcmp(all, force, 3 * n * sizeof *all) == 0 : worst <= 1e-5 * largest;
            if (plain_status == FK_OK && !same && mismatched++ == 0)
                CHECK(0,
                      "moving %s %s P=%d step %d: forces differ from one device's (largest "
                      "difference %g of %g)",
                      accum, fk_algorithm_name((fk_algorithm)algorithm), ranks, step, worst,
                      largest);
        }
    }
    const size_t rebuilds = fk_mpi_eval_rebuilds(m);
    /* set_particles, the jump and the wrap at least, and the small moves (at most 0.04 a step
     * along z, half the margin is 0.15) do not rebuild every step. */
    CHECK(status != FK_OK || (rebuilds >= 3 && rebuilds < (size_t)steps),
          "moving %s: %zu rebuilds in %d updates", accum, rebuilds, steps);
    if (rank == 0 && status == FK_OK && !mismatched)
        printf("moving ljc_constant %-7s %-9s N=%zu P=%d: %d updates, %zu set builds, forces %s "
               "one device's each step\n",
               accum, fk_algorithm_name((fk_algorithm)algorithm), n, ranks, steps, rebuilds,
               exact ? "bit-identical to" : "within 1e-5 of");
    free(all);
    free(force);
    fk_eval_destroy(plain);
    fk_mpi_eval_destroy(m);
    free_system(&s);
}

/* Kick-drift-kick with forces from evaluate; each rank moves particles [first, first + count)
 * of s (P = 1 plain: all). */
static void simulate(const char *kernel, fk_mpi_eval *m, fk_eval *plain, system_t *s, size_t first,
                     size_t count, int steps, double dt)
{
    const size_t fc = 6; /* gaj: acceleration, jerk */
    double *force = malloc(fc * (count + 1) * sizeof *force);
    const fk_particles mine = view(kernel, s, first, count);
    fk_status status =
        m ? fk_mpi_eval_set_particles(m, &mine) : fk_eval_set_particles(plain, &mine);
    for (int step = 0; step <= steps && status == FK_OK; ++step) {
        if (step > 0)
            status = m ? fk_mpi_eval_update_positions(m, mine.position, mine.velocity)
                       : fk_eval_update_positions(plain, mine.position, mine.velocity);
        if (status == FK_OK)
            status = m ? fk_mpi_eval_compute(m, NULL) : fk_eval_compute(plain, NULL);
        if (status == FK_OK)
            status = m ? fk_mpi_eval_read_forces(m, force) : fk_eval_read_forces(plain, force);
        if (status != FK_OK)
            break;
        for (size_t i = 0; i < count; ++i)
            for (int d = 0; d < 3; ++d) {
                double *v = &s->velocity[3 * (first + i) + d];
                const double a = force[fc * i + d];
                *v += (step == 0 ? 0.5 : 1.0) * dt * a; /* half kick first, then whole ones */
                if (step < steps)
                    s->position[3 * (first + i) + d] += dt * *v;
            }
    }
    CHECK(status == FK_OK, "simulate: %s",
          m ? fk_mpi_eval_last_error(m) : fk_context_last_error(context));
    free(force);
}

static void check_simulate(void)
{
    const size_t n = 600;
    const int steps = 100;
    const double dt = 0.01;
    system_t s = make_system("gaj", n, 0);
    for (size_t i = 0; i < n; ++i)
        s.mass[i] *= 400.0; /* a bound, fast cluster: 100 steps move it */
    fk_eval_config config = make_config("gaj", "fixed64", FK_ALGORITHM_ALL_PAIRS, &s);
    config.scale_policy = FK_SCALE_KEEP;
    config.potential = 0;
    /* The reference run on rank 0 first, from a copy of the initial state. */
    system_t start = make_system("gaj", n, 0);
    memcpy(start.position, s.position, 3 * n * sizeof(double));
    memcpy(start.velocity, s.velocity, 3 * n * sizeof(double));
    memcpy(start.mass, s.mass, n * sizeof(double));
    if (rank == 0) {
        fk_eval *plain = NULL;
        CHECK(fk_eval_create(context, &config, &plain) == FK_OK, "plain create");
        if (plain)
            simulate("gaj", NULL, plain, &start, 0, n, steps, dt);
        fk_eval_destroy(plain);
    }
    fk_mpi_eval *m = NULL;
    const fk_status status = fk_mpi_eval_create(context, &config, MPI_COMM_WORLD, &m);
    CHECK(status == FK_OK, "create: %s", fk_mpi_eval_last_error(NULL));
    size_t first = 0, count = 0;
    slice_of(n, rank, &first, &count);
    if (m)
        simulate("gaj", m, NULL, &s, first, count, steps, dt);
    /* Gather every rank's slice of the final state on rank 0. */
    int *counts = malloc((size_t)ranks * sizeof *counts),
        *firsts = malloc((size_t)ranks * sizeof *firsts);
    for (int r = 0; r < ranks; ++r) {
        size_t f = 0, c = 0;
        slice_of(n, r, &f, &c);
        counts[r] = (int)(3 * c);
        firsts[r] = (int)(3 * f);
    }
    double *final = malloc(6 * n * sizeof *final);
    MPI_Gatherv(s.position + 3 * first, (int)(3 * count), MPI_DOUBLE, final, counts, firsts,
                MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gatherv(s.velocity + 3 * first, (int)(3 * count), MPI_DOUBLE, final + 3 * n, counts, firsts,
                MPI_DOUBLE, 0, MPI_COMM_WORLD);
    fk_mpi_rank_figures *figures = calloc((size_t)ranks, sizeof *figures);
    if (m)
        fk_mpi_eval_figures(m, 0, figures);
    if (rank == 0) {
        const int same = memcmp(final, start.position, 3 * n * sizeof(double)) == 0 &&
                         memcmp(final + 3 * n, start.velocity, 3 * n * sizeof(double)) == 0;
        CHECK(same, "simulate: after %d steps the P=%d trajectory differs from one device's", steps,
              ranks);
        printf("simulate gaj fixed64 keep N=%zu, %d steps, P=%d: final state %s one device's "
               "(%zu rescales)\n",
               n, steps, ranks, same ? "bit-identical to" : "DIFFERS from", figures[0].rescales);
    }
    free(figures);
    free(counts);
    free(firsts);
    free(final);
    fk_mpi_eval_destroy(m);
    free_system(&s);
    free_system(&start);
}

/* FK_SCALE_KEEP's rescale: two particles pushed close at the second evaluation leave the kept
 * fixed64 scale's range; one device rescales and computes again inside fk_eval_wait, the ranks
 * do it together. The results after it are one device's, bit for bit, in both schemes. */
static void check_rescale(int algorithm)
{
    const size_t n = 512;
    system_t s = make_system("lj", n, 8 * 1.1);
    fk_eval_config config = make_config("lj", "fixed64", algorithm, &s);
    config.scale_policy = FK_SCALE_KEEP;
    double *moved = malloc(3 * n * sizeof *moved);
    memcpy(moved, s.position, 3 * n * sizeof *moved);
    for (int d = 0; d < 3; ++d) /* particle 1 at 0.5 sigma from particle 0: terms 400x larger */
        moved[3 + d] = moved[d] + (d == 0 ? 0.5 : 0.0);
    const size_t fc = 3;
    double *plain_force = malloc(fc * n * sizeof *plain_force);
    if (rank == 0) {
        fk_eval *plain = NULL;
        const fk_particles whole = view("lj", &s, 0, n);
        fk_status status = fk_eval_create(context, &config, &plain);
        if (status == FK_OK)
            status = fk_eval_set_particles(plain, &whole);
        if (status == FK_OK)
            status = fk_eval_compute(plain, NULL);
        if (status == FK_OK)
            status = fk_eval_update_positions(plain, moved, NULL);
        if (status == FK_OK)
            status = fk_eval_compute(plain, NULL);
        if (status == FK_OK)
            status = fk_eval_read_forces(plain, plain_force);
        CHECK(status == FK_OK, "plain rescale run: %s", fk_context_last_error(context));
        CHECK(fk_eval_rescale_count(plain) == 1, "the plain run rescaled %zu times, not once",
              fk_eval_rescale_count(plain));
        fk_eval_destroy(plain);
    }
    fk_mpi_eval *m = NULL;
    fk_status status = fk_mpi_eval_create(context, &config, MPI_COMM_WORLD, &m);
    size_t first = 0, count = 0;
    slice_of(n, rank, &first, &count);
    const fk_particles mine = view("lj", &s, first, count);
    if (status == FK_OK)
        status = fk_mpi_eval_set_particles(m, &mine);
    if (status == FK_OK)
        status = fk_mpi_eval_compute(m, NULL);
    if (status == FK_OK)
        status = fk_mpi_eval_update_positions(m, moved + 3 * first, NULL);
    if (status == FK_OK)
        status = fk_mpi_eval_compute(m, NULL);
    double *all = malloc(fc * n * sizeof *all);
    if (status == FK_OK)
        status = fk_mpi_eval_read_all_forces(m, all);
    CHECK(status == FK_OK, "rescale run: %s",
          m ? fk_mpi_eval_last_error(m) : fk_mpi_eval_last_error(NULL));
    fk_mpi_rank_figures *figures = calloc((size_t)ranks, sizeof *figures);
    if (status == FK_OK && fk_mpi_eval_figures(m, 0, figures) == FK_OK && rank == 0) {
        CHECK(figures[0].rescales == 1, "the ranks rescaled %zu times, not once",
              figures[0].rescales);
        CHECK(memcmp(all, plain_force, fc * n * sizeof *all) == 0,
              "%s: the forces after the rescale differ from one device's", fk_mpi_eval_scheme(m));
        printf("rescale lj fixed64 keep, %s scheme, P=%d: one rescale, forces bit-identical to "
               "one device's\n",
               fk_mpi_eval_scheme(m), ranks);
    }
    free(figures);
    free(all);
    free(plain_force);
    free(moved);
    fk_mpi_eval_destroy(m);
    free_system(&s);
}

/* Block steps (fk_mpi_sources): the sources split evenly over the ranks, every 7th particle an
 * active target on the rank whose slice holds it; the combined results against one engine with
 * all the sources on rank 0: fixed64 bit for bit, the others within rounding and the same bits
 * when evaluated again; the nearest source equal; that engine against the double reference. */
static void check_block_steps(const char *accum)
{
    const size_t n = 800;
    const double eps = 0.01;
    system_t s = make_system("gaj", n, 0);
    fk_source *all = calloc(n, sizeof *all);
    for (size_t i = 0; i < n; ++i) {
        all[i].id = (int)i;
        all[i].mass = s.mass[i];
        memcpy(all[i].x, &s.position[3 * i], sizeof all[i].x);
        memcpy(all[i].v, &s.velocity[3 * i], sizeof all[i].v);
    }
    const size_t first = n * (size_t)rank / (size_t)ranks;
    const size_t mine = n * ((size_t)rank + 1) / (size_t)ranks - first;
    /* this rank's active targets, in global order */
    size_t active = 0, total_active = 0;
    int *id = malloc(n * sizeof *id);
    double *x = malloc(3 * n * sizeof *x), *v = malloc(3 * n * sizeof *v);
    for (size_t i = 0; i < n; ++i) {
        if (i % 7)
            continue;
        if (i >= first && i < first + mine) {
            id[active] = (int)i;
            memcpy(&x[3 * active], &s.position[3 * i], 3 * sizeof(double));
            memcpy(&v[3 * active], &s.velocity[3 * i], 3 * sizeof(double));
            ++active;
        }
        ++total_active;
    }
    fk_sources_config config = FK_CONFIG_INIT(fk_sources_config);
    config.capacity = n;
    config.accum = accum;
    fk_mpi_sources *m = NULL;
    fk_status status = fk_mpi_sources_create(context, &config, MPI_COMM_WORLD, &m);
    CHECK(status == FK_OK, "sources create: %s", fk_mpi_sources_last_error(NULL));
    for (size_t k = 0; status == FK_OK && k < mine; ++k)
        status = fk_mpi_sources_set(m, k, &all[first + k]);
    const fk_targets targets = {.count = active,
                                .sources = mine,
                                .time = 0,
                                .eps2 = eps * eps,
                                .id = id,
                                .position = x,
                                .velocity = v};
    double *acc = malloc((3 * active + 1) * sizeof *acc),
           *jerk = malloc((3 * active + 1) * sizeof *jerk);
    double *pot = malloc((active + 1) * sizeof *pot);
    int *nearest = malloc((active + 1) * sizeof *nearest);
    const fk_target_results results = {.acc = acc, .jerk = jerk, .pot = pot, .nearest = nearest};
    if (status == FK_OK)
        status = fk_mpi_sources_evaluate(m, &targets, &results);
    CHECK(status == FK_OK, "block step %s: %s", accum, fk_mpi_sources_last_error(m));
    /* Again: the same bits (deterministic for this P). */
    double *again = malloc((3 * active + 1) * sizeof *again);
    const fk_target_results second = {.acc = again};
    if (status == FK_OK)
        status = fk_mpi_sources_evaluate(m, &targets, &second);
    CHECK(status == FK_OK && memcmp(again, acc, 3 * active * sizeof *acc) == 0,
          "block step %s: a second evaluation differs", accum);
    /* Everything on rank 0, in global order (the slices are contiguous). */
    int *counts = malloc((size_t)ranks * sizeof *counts),
        *displs = malloc((size_t)ranks * sizeof *displs);
    int local = (int)active;
    /* The counts are rank 0's (MPI_Gather fills them there only): zero elsewhere. */
    memset(counts, 0, (size_t)ranks * sizeof *counts);
    MPI_Gather(&local, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int at = 0;
    for (int r = 0; r < ranks; ++r) {
        displs[r] = at;
        at += counts[r];
    }
    double *gathered_pot = malloc((total_active + 1) * sizeof *gathered_pot);
    int *gathered_nearest = malloc((total_active + 1) * sizeof *gathered_nearest);
    double *gathered = malloc((3 * total_active + 1) * sizeof *gathered);
    MPI_Gatherv(pot, local, MPI_DOUBLE, gathered_pot, counts, displs, MPI_DOUBLE, 0,
                MPI_COMM_WORLD);
    MPI_Gatherv(nearest, local, MPI_INT, gathered_nearest, counts, displs, MPI_INT, 0,
                MPI_COMM_WORLD);
    for (int r = 0; r < ranks; ++r) {
        counts[r] *= 3;
        displs[r] *= 3;
    }
    MPI_Gatherv(acc, 3 * local, MPI_DOUBLE, gathered, counts, displs, MPI_DOUBLE, 0,
                MPI_COMM_WORLD);
    if (rank == 0 && status == FK_OK) {
        /* One engine with all the sources, the same targets in the same order. */
        fk_sources *one = NULL;
        int *all_id = malloc(total_active * sizeof *all_id);
        double *all_x = malloc(3 * total_active * sizeof *all_x);
        double *all_v = malloc(3 * total_active * sizeof *all_v);
        size_t k = 0;
        for (size_t i = 0; i < n; i += 7, ++k) {
            all_id[k] = (int)i;
            memcpy(&all_x[3 * k], &s.position[3 * i], 3 * sizeof(double));
            memcpy(&all_v[3 * k], &s.velocity[3 * i], 3 * sizeof(double));
        }
        double *one_acc = malloc(3 * total_active * sizeof *one_acc);
        double *one_pot = malloc(total_active * sizeof *one_pot);
        int *one_nearest = malloc(total_active * sizeof *one_nearest);
        status = fk_sources_create(context, &config, &one);
        for (size_t j = 0; status == FK_OK && j < n; ++j)
            status = fk_sources_set(one, j, &all[j]);
        const fk_targets whole = {.count = total_active,
                                  .sources = n,
                                  .eps2 = eps * eps,
                                  .id = all_id,
                                  .position = all_x,
                                  .velocity = all_v};
        const fk_target_results one_results = {
            .acc = one_acc, .pot = one_pot, .nearest = one_nearest};
        if (status == FK_OK)
            status = fk_sources_start(one, &whole);
        if (status == FK_OK)
            status = fk_sources_finish(one, &one_results);
        CHECK(status == FK_OK, "one engine: %s", fk_context_last_error(context));
        const int exact = strcmp(accum, "fixed64") == 0;
        double largest = 0, worst = 0;
        for (size_t c = 0; c < 3 * total_active; ++c) {
            largest = fmax(largest, fabs(one_acc[c]));
            worst = fmax(worst, fabs(one_acc[c] - gathered[c]));
        }
        if (exact)
            CHECK(memcmp(one_acc, gathered, 3 * total_active * sizeof *one_acc) == 0 &&
                      memcmp(one_pot, gathered_pot, total_active * sizeof *one_pot) == 0,
                  "block step fixed64 P=%d: not one engine's bits (worst %g)", ranks, worst);
        else
            CHECK(worst <= 1e-12 * largest, "block step %s P=%d: %g from one engine's (largest %g)",
                  accum, ranks, worst, largest);
        CHECK(memcmp(one_nearest, gathered_nearest, total_active * sizeof(int)) == 0,
              "block step %s: nearest sources differ", accum);
        /* The engine against the double reference (each target is a particle: itself left out). */
        double *reference = malloc(6 * n * sizeof *reference);
        const fk_particles particles = {
            .count = n, .position = s.position, .mass = s.mass, .velocity = s.velocity};
        const fk_physics physics = {.eps = eps};
        CHECK(fk_reference_forces("gaj", &particles, &physics, reference, NULL) == FK_OK,
              "reference");
        double error = 0, scale = 0;
        for (k = 0; k < total_active; ++k)
            for (int d = 0; d < 3; ++d) {
                const double r = reference[6 * (size_t)all_id[k] + (size_t)d];
                scale = fmax(scale, fabs(r));
                error = fmax(error, fabs(r - one_acc[3 * k + (size_t)d]));
            }
        CHECK(error <= 1e-5 * scale, "block step %s: %g from the reference (largest %g)", accum,
              error, scale);
        printf(
            "block steps %-7s N=%zu, %zu active, P=%d: %s one engine's (worst %g), nearest "
            "%s\n",
            accum, n, total_active, ranks, exact ? "bits compared with" : "within 1e-12 of", worst,
            memcmp(one_nearest, gathered_nearest, total_active * sizeof(int)) ? "DIFFER" : "equal");
        fk_sources_destroy(one);
        free(reference);
        free(all_id);
        free(all_x);
        free(all_v);
        free(one_acc);
        free(one_pot);
        free(one_nearest);
    }
    free(counts);
    free(displs);
    free(gathered);
    free(gathered_pot);
    free(gathered_nearest);
    free(again);
    free(acc);
    free(jerk);
    free(pot);
    free(nearest);
    free(id);
    free(x);
    free(v);
    free(all);
    fk_mpi_sources_destroy(m);
    free_system(&s);
}

/* The failing rank: the last one that holds particles (rank 0 when P = 1). */
static void check_failures(void)
{
    const int bad = ranks > 2 ? ranks - 2 : ranks - 1;
    char expected[32];
    snprintf(expected, sizeof expected, "rank %d: ", bad);
    system_t s = make_system("ga", 200, 0);
    const fk_eval_config config = make_config("ga", "fixed64", FK_ALGORITHM_ALL_PAIRS, &s);
    fk_mpi_eval *m = NULL;
    if (fk_mpi_eval_create(context, &config, MPI_COMM_WORLD, &m) != FK_OK) {
        CHECK(0, "create: %s", fk_mpi_eval_last_error(NULL));
        free_system(&s);
        return;
    }
    size_t first = 0, count = 0;
    slice_of(s.n, rank, &first, &count);
    /* 1. bad input on one rank at set_particles: positions missing */
    fk_particles mine = view("ga", &s, first, count);
    if (rank == bad) {
        mine.count = 5;
        mine.position = NULL;
    }
    fk_status status = fk_mpi_eval_set_particles(m, &mine);
    CHECK(status == FK_ERR_INVALID_ARGUMENT, "bad positions: %s", fk_status_string(status));
    CHECK(strncmp(fk_mpi_eval_last_error(m), expected, strlen(expected)) == 0,
          "bad positions: message '%s' does not name rank %d", fk_mpi_eval_last_error(m), bad);
    if (rank == 0)
        printf("failures: bad input on rank %d: every rank returned %s: %s\n", bad,
               fk_status_string(status), fk_mpi_eval_last_error(m));
    /* 2. good particles again: the evaluation is usable after a failed call */
    mine = view("ga", &s, first, count);
    status = fk_mpi_eval_set_particles(m, &mine);
    CHECK(status == FK_OK, "good particles: %s", fk_mpi_eval_last_error(m));
    /* 3. mid-run: the bad rank passes NULL positions at the third update */
    for (int step = 0; step < 5 && status == FK_OK; ++step) {
        status =
            fk_mpi_eval_update_positions(m, rank == bad && step == 2 ? NULL : mine.position, NULL);
        if (status == FK_OK)
            status = fk_mpi_eval_compute(m, NULL);
        if (status != FK_OK)
            CHECK(step == 2, "failed at step %d, not 2", step);
    }
    CHECK(status == FK_ERR_INVALID_ARGUMENT, "mid-run failure: %s", fk_status_string(status));
    CHECK(strncmp(fk_mpi_eval_last_error(m), expected, strlen(expected)) == 0,
          "mid-run failure: message '%s' does not name rank %d", fk_mpi_eval_last_error(m), bad);
    if (rank == 0)
        printf("failures: mid-run on rank %d: every rank returned %s: %s\n", bad,
               fk_status_string(status), fk_mpi_eval_last_error(m));
    /* 4. ranks that disagree on masses (needs two ranks with particles) */
    if (ranks > 1) {
        mine = view("ga", &s, first, count);
        if (rank == 1)
            mine.mass = NULL;
        status = fk_mpi_eval_set_particles(m, &mine);
        CHECK(status == FK_ERR_INVALID_ARGUMENT, "disagreeing masses: %s",
              fk_status_string(status));
        if (rank == 0)
            printf("failures: ranks disagreeing on masses: %s: %s\n", fk_status_string(status),
                   fk_mpi_eval_last_error(m));
    }
    /* 5. a configuration error on every rank at create */
    fk_eval_config wrong = config;
    wrong.kernel = "no_such_law";
    fk_mpi_eval *none = NULL;
    status = fk_mpi_eval_create(context, &wrong, MPI_COMM_WORLD, &none);
    CHECK(status != FK_OK && none == NULL && strstr(fk_mpi_eval_last_error(NULL), "rank 0: "),
          "unknown law: %s '%s'", fk_status_string(status), fk_mpi_eval_last_error(NULL));
    fk_mpi_eval_destroy(m);
    free_system(&s);
}

/* Replicated input (issue #32): every rank passes the whole system (fk_mpi_eval_set_all_particles,
 * as the command's ranks each read the same file). The same system on every rank: the forces of
 * one plain fk_eval, bit for bit (fixed64), and the same after update_all_positions. A rank with
 * fewer particles, or one coordinate one ulp away, or one position moved at an update, or another
 * eps at create: every rank fails with FK_ERR_INVALID_ARGUMENT and the message naming rank 1
 * (before these checks a rank with fewer particles overran its own buffers in read_all, and a
 * rank with other particles gave everyone wrong forces with FK_OK). */
static void check_replicated(void)
{
    const size_t n = 200;
    system_t s = make_system("ga", n, 0);
    const fk_eval_config config = make_config("ga", "fixed64", FK_ALGORITHM_ALL_PAIRS, &s);
    fk_mpi_eval *m = NULL;
    if (fk_mpi_eval_create(context, &config, MPI_COMM_WORLD, &m) != FK_OK) {
        CHECK(0, "create: %s", fk_mpi_eval_last_error(NULL));
        free_system(&s);
        return;
    }
    fk_eval *plain = NULL;
    double *forces = malloc(3 * n * sizeof *forces), *expected = malloc(3 * n * sizeof *expected);
    fk_particles all = view("ga", &s, 0, n);
    fk_status status = fk_eval_create(context, &config, &plain);
    if (status == FK_OK)
        status = fk_eval_set_particles(plain, &all);
    if (status == FK_OK)
        status = fk_eval_compute(plain, NULL);
    if (status == FK_OK)
        status = fk_eval_read_forces(plain, expected);
    CHECK(status == FK_OK && forces && expected, "plain evaluation: %s", fk_status_string(status));
    /* 1. the same system everywhere */
    status = fk_mpi_eval_set_all_particles(m, &all);
    if (status == FK_OK)
        status = fk_mpi_eval_compute(m, NULL);
    if (status == FK_OK)
        status = fk_mpi_eval_read_all_forces(m, forces);
    CHECK(status == FK_OK, "set_all_particles: %s", fk_mpi_eval_last_error(m));
    CHECK(fk_mpi_eval_count(m) == n, "count %zu", fk_mpi_eval_count(m));
    CHECK(status != FK_OK || memcmp(forces, expected, 3 * n * sizeof *forces) == 0,
          "set_all_particles: not one device's forces");
    status = fk_mpi_eval_update_all_positions(m, s.position, NULL);
    if (status == FK_OK)
        status = fk_mpi_eval_compute(m, NULL);
    if (status == FK_OK)
        status = fk_mpi_eval_read_all_forces(m, forces);
    CHECK(status == FK_OK && memcmp(forces, expected, 3 * n * sizeof *forces) == 0,
          "update_all_positions: %s", fk_mpi_eval_last_error(m));
    if (ranks > 1) {
        /* 2. rank 1 read a shorter file */
        fk_particles mine = all;
        if (rank == 1)
            mine.count = n - 50;
        status = fk_mpi_eval_set_all_particles(m, &mine);
        CHECK(status == FK_ERR_INVALID_ARGUMENT &&
                  strstr(fk_mpi_eval_last_error(m), "rank 0 has 200 particles, rank 1 has 150"),
              "fewer particles on rank 1: %s '%s'", fk_status_string(status),
              fk_mpi_eval_last_error(m));
        if (rank == 0)
            printf("replicated: fewer particles on rank 1: %s\n", fk_mpi_eval_last_error(m));
        CHECK(fk_mpi_eval_read_all_forces(m, forces) == FK_ERR_STATE,
              "read_all after a refused set_all_particles");
        /* 3. rank 1's copy differs in one coordinate by one ulp */
        const double kept = s.position[3 * 77 + 1];
        if (rank == 1)
            s.position[3 * 77 + 1] = nextafter(kept, 2.0);
        status = fk_mpi_eval_set_all_particles(m, &all);
        CHECK(status == FK_ERR_INVALID_ARGUMENT &&
                  strstr(fk_mpi_eval_last_error(m), "rank 1's particles differ from rank 0's"),
              "one ulp on rank 1: %s '%s'", fk_status_string(status), fk_mpi_eval_last_error(m));
        s.position[3 * 77 + 1] = kept;
        /* 4. the same again, then rank 1's positions drift at an update */
        status = fk_mpi_eval_set_all_particles(m, &all);
        CHECK(status == FK_OK, "set_all_particles again: %s", fk_mpi_eval_last_error(m));
        if (rank == 1)
            s.position[3 * 5] += 1e-9;
        status = fk_mpi_eval_update_all_positions(m, s.position, NULL);
        CHECK(status == FK_ERR_INVALID_ARGUMENT &&
                  strstr(fk_mpi_eval_last_error(m), "rank 1's positions differ from rank 0's"),
              "drifted update on rank 1: %s '%s'", fk_status_string(status),
              fk_mpi_eval_last_error(m));
        if (rank == 0)
            printf("replicated: drifted update on rank 1: %s\n", fk_mpi_eval_last_error(m));
        if (rank == 1)
            s.position[3 * 5] -= 1e-9;
        /* 5. another eps on rank 1 at create */
        fk_eval_config other = config;
        if (rank == 1)
            other.eps = 0.06;
        fk_mpi_eval *none = NULL;
        status = fk_mpi_eval_create(context, &other, MPI_COMM_WORLD, &none);
        CHECK(status == FK_ERR_INVALID_ARGUMENT && none == NULL &&
                  strstr(fk_mpi_eval_last_error(NULL), "rank 1's config differs from rank 0's"),
              "another eps on rank 1: %s '%s'", fk_status_string(status),
              fk_mpi_eval_last_error(NULL));
        fk_mpi_eval_destroy(none);
        /* 6. block steps: another accumulator on rank 1 (fixed64 reduces integers where ref
         * gathers doubles: mismatched collectives) is refused at create */
        fk_sources_config sources_config = FK_CONFIG_INIT(fk_sources_config);
        sources_config.capacity = 16;
        sources_config.accum = rank == 1 ? "ref" : "fixed64";
        fk_mpi_sources *sources = NULL;
        status = fk_mpi_sources_create(context, &sources_config, MPI_COMM_WORLD, &sources);
        CHECK(status == FK_ERR_INVALID_ARGUMENT && sources == NULL &&
                  strstr(fk_mpi_sources_last_error(NULL), "rank 1's config differs from rank 0's"),
              "another accumulator on rank 1: %s '%s'", fk_status_string(status),
              fk_mpi_sources_last_error(NULL));
        fk_mpi_sources_destroy(sources);
    }
    /* 7. update_all_positions needs set_all_particles */
    size_t first = 0, count = 0;
    slice_of(n, rank, &first, &count);
    fk_particles slice = view("ga", &s, first, count);
    status = fk_mpi_eval_set_particles(m, &slice);
    CHECK(status == FK_OK, "set_particles: %s", fk_mpi_eval_last_error(m));
    status = fk_mpi_eval_update_all_positions(m, s.position, NULL);
    CHECK(status == FK_ERR_STATE, "update_all_positions after set_particles: %s",
          fk_status_string(status));
    fk_eval_destroy(plain);
    fk_mpi_eval_destroy(m);
    free(forces);
    free(expected);
    free_system(&s);
}

int main(int argc, char **argv)
{
    if (mpi_test_start(&argc, &argv, "test_mpi") != 0)
        return 1;
    const char *what = argc > 1 ? argv[1] : "all";
    if (!strcmp(what, "all") || !strcmp(what, "forces")) {
        check_forces("ga", "fixed64", FK_ALGORITHM_ALL_PAIRS, 1000);
        check_forces("ga", "float", FK_ALGORITHM_ALL_PAIRS, 1000);
        check_forces("gaj", "fixed64", FK_ALGORITHM_ALL_PAIRS, 700);
        double_single = 1; /* every rank's share reads the float pairs: one device's bits */
        check_forces("gaj", "fixed64", FK_ALGORITHM_ALL_PAIRS, 700);
        check_forces("ga", "float", FK_ALGORITHM_ALL_PAIRS, 1000);
        double_single = 0;
        check_forces("lj", "fixed64", FK_ALGORITHM_CELLS, 729);
        check_forces("lj", "float", FK_ALGORITHM_CELLS, 729);
        check_forces("lj", "fixed64", FK_ALGORITHM_NEIGHBORS, 729);
        check_forces("lj", "fixed64", FK_ALGORITHM_ALL_PAIRS, 729);
        check_forces("ljc_constant", "fixed64", FK_ALGORITHM_CELLS, 729);
        check_forces("ljc_constant", "fixed64", FK_ALGORITHM_ALL_PAIRS, 729);
        /* config.physics's cutoff 4 (half the box is 4.95) needs a halo of 4.96: the defaults of
         * the flat fields gave 3.1, and the scheme was allgather (checked: the scheme fails at
         * every P, and a halo of 3.1 in the spatial scheme fails the forces at P = 4, where a
         * rank's slab and halos no longer cover the box) */
        physics_cutoff = 4.0;
        check_forces("lj", "fixed64", FK_ALGORITHM_CELLS, 729);
        check_forces("lj", "fixed64", FK_ALGORITHM_NEIGHBORS, 729);
        physics_cutoff = 0;
        check_moving("fixed64", FK_ALGORITHM_CELLS, 1);
        check_moving("fixed64", FK_ALGORITHM_NEIGHBORS, 1);
        check_moving("float", FK_ALGORITHM_CELLS, 0);
        check_moving("float", FK_ALGORITHM_NEIGHBORS, 0);
    }
    if (!strcmp(what, "all") || !strcmp(what, "simulate")) {
        check_simulate();
        check_rescale(FK_ALGORITHM_CELLS);
        check_rescale(FK_ALGORITHM_ALL_PAIRS);
    }
    if (!strcmp(what, "all") || !strcmp(what, "sources")) {
        check_block_steps("fixed64");
        check_block_steps("ref");
    }
    if (!strcmp(what, "all") || !strcmp(what, "failures"))
        check_failures();
    if (!strcmp(what, "all") || !strcmp(what, "replicated"))
        check_replicated();
    return mpi_test_finish("test_mpi");
}
