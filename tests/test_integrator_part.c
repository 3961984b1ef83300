/* fk_integrator_part (issue #33 item 5): an LJ fluid divided into slabs along z, each slab an
 * integrator of its own (its own context, in its own thread) that holds its particles and halo
 * copies, exchanges the halo's positions after every drift and takes the step's decisions with
 * the others through shared memory, as forcekit_mpi.h's fk_mpi_integrator does over MPI. The
 * whole system's integrator is the reference: with fixed64 the divided run must give its
 * positions, velocities and energies bit for bit (Verlet and Langevin, redistributions between
 * the steps included); with float, the same to rounding. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "forcekit/forcekit.h"
#include "test_support.h"

/* 6 x 6 x 16 sites at density 0.8: the box is 6.46 x 6.46 x 17.2, three slabs of 5.7 along z. */
#define SIDE_XY 6
#define SIDE_Z 16
#define N (SIDE_XY * SIDE_XY * SIDE_Z)
#define PARTS 3
#define DT 0.005
#define CUTOFF 2.5
#define SKIN 0.3

typedef struct fluid {
    double box[3];
    double x[3 * N], v[3 * N];
} fluid;

static void make_fluid(fluid *f, fk_test_rng *rng)
{
    const double spacing = cbrt(1.0 / 0.8);
    f->box[0] = f->box[1] = SIDE_XY * spacing;
    f->box[2] = SIDE_Z * spacing;
    size_t i = 0;
    for (int a = 0; a < SIDE_XY; ++a)
        for (int b = 0; b < SIDE_XY; ++b)
            for (int c = 0; c < SIDE_Z; ++c, ++i) {
                const int site[3] = {a, b, c};
                for (int k = 0; k < 3; ++k) {
                    f->x[3 * i + k] =
                        spacing * (site[k] + 0.5 + 0.2 * (fk_test_rng_uniform(rng) - 0.5));
                    const double u1 = 1.0 - fk_test_rng_uniform(rng), u2 = fk_test_rng_uniform(rng);
                    /* temperature about 1.5: particles cross the slabs' faces */
                    f->v[3 * i + k] =
                        sqrt(1.5) * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
                }
            }
}

/* One run's settings. */
typedef struct run_config {
    const char *accum;
    int kind;
    uint64_t steps;
    double margin; /* the halo beyond cutoff + skin; leave is a quarter of it */
} run_config;

static fk_eval *make_eval(fk_context *context, const fluid *f, const run_config *run,
                          const double *x, size_t count, char *error)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "lj";
    config.accum = run->accum;
    config.cutoff = CUTOFF;
    config.skin = SKIN;
    memcpy(config.box, f->box, sizeof config.box);
    config.algorithm = FK_ALGORITHM_NEIGHBORS;
    config.potential = 1;
    fk_eval *eval = NULL;
    fk_particles particles = {.count = count, .position = x};
    if (fk_eval_create(context, &config, &eval) != FK_OK ||
        fk_eval_set_particles(eval, &particles) != FK_OK) {
        snprintf(error, 512, "eval: %s", fk_context_last_error(context));
        fk_eval_destroy(eval);
        return NULL;
    }
    return eval;
}

static fk_integrator_config integrator_config(const run_config *run)
{
    fk_integrator_config config = FK_CONFIG_INIT(fk_integrator_config);
    config.kind = run->kind;
    config.dt = DT;
    if (run->kind == FK_INTEGRATOR_LANGEVIN) {
        config.temperature = 1.0;
        config.friction = 1.0;
        config.seed = 0xfeedfacecafebeefull;
    }
    return config;
}

/* ---------------------------------------------------------------------------------------------- */
/* The parts, and what they share */

typedef struct shared {
    const fluid *start;
    run_config run;
    pthread_barrier_t barrier;
    double x[3 * N], v[3 * N]; /* the system's state at a redistribution and at the end */
    double energies[PARTS][2];
    /* the exchange: each part's sent positions, and where its segment for each destination
     * starts and how long it is */
    const double *sent[PARTS];
    size_t send_first[PARTS][PARTS], send_count[PARTS][PARTS];
    uint32_t votes[PARTS];
    double largest[PARTS][4];
    int64_t sums[PARTS][4];
    uint64_t redistributions;
    char error[PARTS][512];
} shared;

typedef struct part {
    shared *sh;
    int index;
    /* the part's particles: global indices ascending, halo flags, send and receive lists */
    uint32_t global[N];
    unsigned char halo[N];
    uint32_t send[PARTS * N], receive[N];
    size_t count, sends, receives;
    size_t receive_first[PARTS], receive_count[PARTS];
} part;

static int slab_of(const fluid *f, double z)
{
    const int s = (int)floor(z / (f->box[2] / PARTS));
    return s < 0 ? 0 : (s >= PARTS ? PARTS - 1 : s);
}

/* Whether z lies within width of slab s (the periodic distance). */
static int near_slab(const fluid *f, int s, double z, double width)
{
    const double side = f->box[2] / PARTS, lo = side * s, hi = side * (s + 1);
    for (int image = -1; image <= 1; ++image) {
        const double zi = z + image * f->box[2];
        if (zi > lo - width && zi < hi + width)
            return 1;
    }
    return 0;
}

static double wrapped(double z, double side)
{
    return z - side * floor(z / side);
}

/* The part's particles and lists from the system's state in sh->x. */
static void divide(part *p, double width)
{
    shared *sh = p->sh;
    const fluid *f = sh->start;
    p->count = p->sends = p->receives = 0;
    for (size_t i = 0; i < N; ++i) {
        const double z = wrapped(sh->x[3 * i + 2], f->box[2]);
        const int owner = slab_of(f, z);
        if (owner == p->index || near_slab(f, p->index, z, width)) {
            p->halo[p->count] = owner != p->index;
            p->global[p->count++] = (uint32_t)i;
        }
    }
    for (int q = 0; q < PARTS; ++q) { /* what q needs of ours, what we need of q's */
        sh->send_first[p->index][q] = p->sends;
        p->receive_first[q] = p->receives;
        for (size_t k = 0; q != p->index && k < p->count; ++k) {
            const size_t i = p->global[k];
            const double z = wrapped(sh->x[3 * i + 2], f->box[2]);
            if (!p->halo[k] && near_slab(f, q, z, width))
                p->send[p->sends++] = (uint32_t)k;
            if (p->halo[k] && slab_of(f, z) == q)
                p->receive[p->receives++] = (uint32_t)k;
        }
        sh->send_count[p->index][q] = p->sends - sh->send_first[p->index][q];
        p->receive_count[q] = p->receives - p->receive_first[q];
    }
}

static fk_status exchange(void *user, const double *sent, double *received)
{
    part *p = user;
    shared *sh = p->sh;
    sh->sent[p->index] = sent;
    pthread_barrier_wait(&sh->barrier);
    for (int q = 0; q < PARTS; ++q) {
        if (sh->send_count[q][p->index] != p->receive_count[q])
            return FK_ERR_STATE; /* the lists disagree: the test's own error */
        memcpy(received + 3 * p->receive_first[q], sh->sent[q] + 3 * sh->send_first[q][p->index],
               3 * p->receive_count[q] * sizeof(double));
    }
    pthread_barrier_wait(&sh->barrier); /* before anyone's next step reuses its buffer */
    return FK_OK;
}

static fk_status reduce(void *user, int op, void *values, size_t count)
{
    part *p = user;
    shared *sh = p->sh;
    if (count > 4)
        return FK_ERR_INVALID_ARGUMENT;
    if (op == FK_PART_REDUCE_OR)
        sh->votes[p->index] = *(uint32_t *)values;
    else if (op == FK_PART_REDUCE_MAX)
        memcpy(sh->largest[p->index], values, count * sizeof(double));
    else
        memcpy(sh->sums[p->index], values, count * sizeof(int64_t));
    pthread_barrier_wait(&sh->barrier);
    for (size_t k = 0; k < count; ++k) /* every part combines all, in the same order */
        for (int q = 0; q < PARTS; ++q) {
            if (op == FK_PART_REDUCE_OR)
                *(uint32_t *)values = q ? *(uint32_t *)values | sh->votes[q] : sh->votes[0];
            else if (op == FK_PART_REDUCE_MAX)
                ((double *)values)[k] =
                    q ? fmax(((double *)values)[k], sh->largest[q][k]) : sh->largest[0][k];
            else
                ((int64_t *)values)[k] =
                    q ? ((int64_t *)values)[k] + sh->sums[q][k] : sh->sums[0][k];
        }
    pthread_barrier_wait(&sh->barrier);
    return FK_OK;
}

/* The part's evaluation and integrator on the state in sh->x, sh->v at step; bound: fixed64's
 * system bound to keep (NULL: choose one). */
static fk_status start_part(part *p, fk_context *context, uint64_t step, const double *bound,
                            fk_eval **eval, fk_integrator **integrator)
{
    shared *sh = p->sh;
    const double width = CUTOFF + SKIN + sh->run.margin;
    divide(p, width);
    double *x = malloc(3 * p->count * sizeof *x), *v = malloc(3 * p->count * sizeof *v);
    for (size_t k = 0; x && v && k < p->count; ++k)
        for (int c = 0; c < 3; ++c) {
            x[3 * k + c] = sh->x[3 * p->global[k] + c];
            v[3 * k + c] = sh->v[3 * p->global[k] + c];
        }
    fk_status status = x && v ? FK_OK : FK_ERR_HOST_MEMORY;
    *eval = status == FK_OK
                ? make_eval(context, sh->start, &sh->run, x, p->count, sh->error[p->index])
                : NULL;
    if (!*eval)
        status = FK_ERR_STATE;
    const fk_integrator_config config = integrator_config(&sh->run);
    if (status == FK_OK)
        status = fk_integrator_create(*eval, &config, integrator);
    if (status == FK_OK && bound)
        status = fk_eval_set_bound(*eval, bound[0], bound[1], N);
    fk_integrator_part desc = {.struct_size = sizeof desc,
                               .system_count = N,
                               .global_index = p->global,
                               .halo = p->halo,
                               .send = p->send,
                               .send_count = p->sends,
                               .receive = p->receive,
                               .receive_count = p->receives,
                               .leave = sh->run.margin / 4,
                               .keep_scale = bound != NULL,
                               .exchange = exchange,
                               .reduce = reduce,
                               .user = p};
    if (status == FK_OK)
        status = fk_integrator_set_part(*integrator, &desc);
    if (status == FK_OK)
        status = fk_integrator_set_state(*integrator, x, v, step);
    if (status != FK_OK && !sh->error[p->index][0])
        snprintf(sh->error[p->index], 512, "start: %s", fk_context_last_error(context));
    free(x);
    free(v);
    return status;
}

/* The part's own particles' state into sh->x, sh->v. */
static fk_status gather_own(part *p, fk_integrator *integrator)
{
    shared *sh = p->sh;
    double *x = malloc(3 * p->count * sizeof *x), *v = malloc(3 * p->count * sizeof *v);
    fk_status status =
        x && v ? fk_integrator_get_state(integrator, x, v, NULL) : FK_ERR_HOST_MEMORY;
    for (size_t k = 0; status == FK_OK && k < p->count; ++k)
        for (int c = 0; !p->halo[k] && c < 3; ++c) {
            sh->x[3 * p->global[k] + c] = x[3 * k + c];
            sh->v[3 * p->global[k] + c] = v[3 * k + c];
        }
    free(x);
    free(v);
    return status;
}

static void *run_part(void *argument)
{
    part *p = argument;
    shared *sh = p->sh;
    fk_context *context = NULL;
    fk_eval *eval = NULL;
    fk_integrator *integrator = NULL;
    if (fk_context_create(NULL, &context) != FK_OK) { /* the others would wait: end the test */
        fprintf(stderr, "part %d: no context\n", p->index);
        abort();
    }
    fk_status status = start_part(p, context, 0, NULL, &eval, &integrator);
    uint64_t step = 0;
    while (status == FK_OK && step < sh->run.steps) {
        status = fk_integrator_step(integrator, sh->run.steps - step);
        step = fk_integrator_step_index(integrator);
        if (status != FK_OK || step == sh->run.steps)
            break;
        /* Some part's particle moved a quarter of the margin: every part stopped at this step,
         * and takes no further step until its state is set again. Gather, divide again, keep
         * fixed64's scale. */
        double bound[2] = {0.0, 0.0};
        status = fk_integrator_step(integrator, 3);
        if (status == FK_OK && fk_integrator_step_index(integrator) != step) {
            snprintf(sh->error[p->index], 512, "a step call after 'leave' went on to step %llu",
                     (unsigned long long)fk_integrator_step_index(integrator));
            status = FK_ERR_STATE;
        }
        if (status == FK_OK)
            status = gather_own(p, integrator);
        if (status == FK_OK)
            status = fk_eval_get_bound(eval, &bound[0], &bound[1]);
        pthread_barrier_wait(&sh->barrier);
        if (p->index == 0)
            sh->redistributions++;
        fk_integrator_destroy(integrator);
        fk_eval_destroy(eval);
        integrator = NULL, eval = NULL;
        if (status == FK_OK)
            status = start_part(p, context, step, bound, &eval, &integrator);
    }
    if (status == FK_OK)
        status = fk_integrator_energies(integrator, &sh->energies[p->index][0],
                                        &sh->energies[p->index][1]);
    if (status == FK_OK)
        status = gather_own(p, integrator);
    if (status != FK_OK && !sh->error[p->index][0])
        snprintf(sh->error[p->index], 512, "step %llu: %s", (unsigned long long)step,
                 fk_context_last_error(context));
    fk_integrator_destroy(integrator);
    fk_eval_destroy(eval);
    fk_context_destroy(context);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------- */
/* The reference and the comparison */

static void whole_system(const fluid *f, const run_config *run, double *x, double *v,
                         double energies[2])
{
    char error[512] = "";
    fk_eval *eval = make_eval(fk_test_context, f, run, f->x, N, error);
    if (!eval)
        fail_msg("%s", error);
    const fk_integrator_config config = integrator_config(run);
    fk_integrator *integrator = NULL;
    if (fk_integrator_create(eval, &config, &integrator) != FK_OK ||
        fk_integrator_set_state(integrator, f->x, f->v, 0) != FK_OK ||
        fk_integrator_step(integrator, run->steps) != FK_OK ||
        fk_integrator_get_state(integrator, x, v, NULL) != FK_OK ||
        fk_integrator_energies(integrator, &energies[0], &energies[1]) != FK_OK)
        fail_msg("the whole system: %s", fk_context_last_error(fk_test_context));
    fk_integrator_destroy(integrator);
    fk_eval_destroy(eval);
}

static shared *divided_system(const fluid *f, const run_config *run)
{
    shared *sh = calloc(1, sizeof *sh);
    part *parts = calloc(PARTS, sizeof *parts);
    assert_non_null(sh);
    assert_non_null(parts);
    sh->start = f;
    sh->run = *run;
    memcpy(sh->x, f->x, sizeof sh->x);
    memcpy(sh->v, f->v, sizeof sh->v);
    pthread_barrier_init(&sh->barrier, NULL, PARTS);
    pthread_t threads[PARTS];
    for (int q = 0; q < PARTS; ++q) {
        parts[q].sh = sh;
        parts[q].index = q;
        assert_int_equal(pthread_create(&threads[q], NULL, run_part, &parts[q]), 0);
    }
    for (int q = 0; q < PARTS; ++q)
        pthread_join(threads[q], NULL);
    pthread_barrier_destroy(&sh->barrier);
    free(parts);
    for (int q = 0; q < PARTS; ++q)
        if (sh->error[q][0])
            fail_msg("part %d: %s", q, sh->error[q]);
    return sh;
}

static size_t differing(const double *a, const double *b, size_t count)
{
    size_t n = 0;
    for (size_t k = 0; k < count; ++k)
        n += memcmp(&a[k], &b[k], sizeof a[k]) != 0;
    return n;
}

static void compare_run(const run_config *run, int bits, uint64_t least_redistributions)
{
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    static fluid f;
    make_fluid(&f, &rng);
    static double x[3 * N], v[3 * N];
    double energies[2];
    whole_system(&f, run, x, v, energies);
    shared *sh = divided_system(&f, run);
    fprintf(stderr, "%s %s: %llu redistributions, %zu of %d coordinates differ\n", run->accum,
            run->kind == FK_INTEGRATOR_LANGEVIN ? "langevin" : "verlet",
            (unsigned long long)sh->redistributions, differing(x, sh->x, 3 * N), 3 * N);
    assert_true(sh->redistributions >= least_redistributions);
    for (int q = 0; q < PARTS; ++q) /* every part has the system's energies */
        for (int e = 0; e < 2; ++e)
            assert_memory_equal(&sh->energies[q][e], &sh->energies[0][e], sizeof(double));
    if (bits) {
        assert_int_equal(differing(x, sh->x, 3 * N), 0);
        assert_int_equal(differing(v, sh->v, 3 * N), 0);
        assert_memory_equal(&sh->energies[0][0], &energies[0], sizeof(double));
        assert_memory_equal(&sh->energies[0][1], &energies[1], sizeof(double));
    } else { /* float sums in another order: rounding, grown over the steps */
        for (size_t k = 0; k < 3 * N; ++k) {
            double d = fabs(x[k] - sh->x[k]);
            d = fmin(d, f.box[k % 3] - d); /* across the periodic boundary */
            if (!(d < 1e-3) || !(fabs(v[k] - sh->v[k]) < 1e-2))
                fail_msg("coordinate %zu: %.17g / %.17g, velocity %.17g / %.17g", k, x[k], sh->x[k],
                         v[k], sh->v[k]);
        }
        assert_true(fabs(energies[0] - sh->energies[0][0]) < 1e-6 * fabs(energies[0]));
        assert_true(fabs(energies[1] - sh->energies[0][1]) < 1e-6 * fabs(energies[1]));
    }
    free(sh);
}

static void test_verlet_fixed64_bits(void **state)
{
    (void)state;
    const run_config run = {
        .accum = "fixed64", .kind = FK_INTEGRATOR_VERLET, .steps = 120, .margin = 0.3};
    compare_run(&run, 1, 1);
}

static void test_langevin_fixed64_bits(void **state)
{
    (void)state;
    const run_config run = {
        .accum = "fixed64", .kind = FK_INTEGRATOR_LANGEVIN, .steps = 120, .margin = 0.3};
    compare_run(&run, 1, 1);
}

static void test_verlet_float(void **state)
{
    (void)state;
    const run_config run = {
        .accum = "float", .kind = FK_INTEGRATOR_VERLET, .steps = 60, .margin = 1.0};
    compare_run(&run, 0, 0);
}

/* What a part refuses, and a wrong description. */
static void test_part_misuse(void **state)
{
    (void)state;
    static fluid f;
    fk_test_rng rng;
    fk_test_rng_init(&rng, 7);
    make_fluid(&f, &rng);
    const run_config run = {.accum = "float", .kind = FK_INTEGRATOR_VERLET, .steps = 1};
    char error[512];
    fk_eval *eval = make_eval(fk_test_context, &f, &run, f.x, N, error);
    assert_non_null(eval);
    const fk_integrator_config config = integrator_config(&run);
    fk_integrator *integrator = NULL;
    assert_int_equal(fk_integrator_create(eval, &config, &integrator), FK_OK);
    uint32_t bad = N;
    unsigned char halo[N] = {0};
    fk_integrator_part desc = {.struct_size = sizeof desc,
                               .system_count = N,
                               .halo = halo,
                               .receive = &bad,
                               .receive_count = 1,
                               .exchange = exchange,
                               .reduce = reduce};
    assert_int_equal(fk_integrator_set_part(integrator, &desc), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "receive"));
    desc.receive_count = 0;
    desc.system_count = N - 1;
    assert_int_equal(fk_integrator_set_part(integrator, &desc), FK_ERR_INVALID_ARGUMENT);
    desc.system_count = N;
    desc.reduce = NULL;
    assert_int_equal(fk_integrator_set_part(integrator, &desc), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_integrator_set_part(NULL, &desc), FK_ERR_INVALID_ARGUMENT);
    fk_integrator_destroy(integrator);
    fk_eval_destroy(eval);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_part_misuse),
        cmocka_unit_test(test_verlet_fixed64_bits),
        cmocka_unit_test(test_langevin_fixed64_bits),
        cmocka_unit_test(test_verlet_float),
    };
    if (!fk_test_default_device_has_fp64()) {
        fprintf(stderr, "the integrator needs fp64: skipped\n");
        return 77;
    }
    return cmocka_run_group_tests(tests, fk_test_context_setup, fk_test_context_teardown);
}
