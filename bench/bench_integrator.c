/*
 * The device integrator (fk_integrator, issue #33) against one plain force evaluation and against
 * the host-integrated step path, on the LJ fluid (fcc start, Maxwell-Boltzmann velocities at
 * T* = 1, periodic cube at density 0.8, rc 2.5 force-shifted). Prints one JSON document.
 *
 *   bench_integrator [--n N] [--steps K] [--rounds R] [--evals E] [--accum A] [--algorithm L]
 *                    [--kind verlet|langevin] [--dt DT] [--skin S] [--seed S] [--device SEL]
 *                    [--warmup W] [--device-timing on|off] [--lists auto|half|full]
 *
 * First W steps (default 200) of the integrator and of the host loop, untimed: the fcc start melts,
 * and while it does the lists are rebuilt every few steps. Then interleaved rounds (a shared
 * machine slows whole rounds, and interleaving spreads that over the three figures), each:
 *   integrator  fk_integrator_step(K) and a get_state of the step number alone (which waits for the
 *               queue), wall time / K: a whole step with the integration on the device;
 *   host_loop   K velocity Verlet steps the way a user's first program does them: kick and drift
 *               on the host in double, fk_eval_update_positions from the pinned positions array,
 *               compute, the forces read through fk_eval_results_view (a second evaluation,
 *               continuing its own trajectory);
 *   force_eval  E evaluations at fixed positions through the plain path, fk_eval_compute +
 *               fk_eval_read_forces (a third evaluation, lists built before the first), wall time
 *               each: issue #33's "one force evaluation" (the 1.1x target).
 * Medians over the rounds; the ratio integrator / force_eval is the figure.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/stats.h"
#include "forcekit/forcekit.h"
#include "forcekit/tools.h"
#include "support/systems.h"

enum { MAX_ROUNDS = 64, MAX_EVALS = 256 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The median of values, which stay in their order (fk__median sorts a copy). */
static double median(const double *values, size_t count)
{
    double sorted[MAX_EVALS > MAX_ROUNDS ? MAX_EVALS : MAX_ROUNDS];
    memcpy(sorted, values, count * sizeof *values);
    return fk__median(sorted, count);
}

static int fail(fk_context *context, const char *what, fk_status status)
{
    fprintf(stderr, "bench_integrator: %s: %s (%s)\n", what, fk_status_string(status),
            context ? fk_context_last_error(context) : "");
    return 1;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_integrator [--n N] [--steps K] [--rounds R] [--evals E] "
                    "[--accum A] [--algorithm L] [--kind verlet|langevin] [--dt DT] [--skin S] "
                    "[--seed S] [--device SEL] [--warmup W] [--device-timing on|off] "
                    "[--lists auto|half|full] [--potential off|on]\n");
}

static void print_array(const char *name, const double *values, size_t count, double scale)
{
    printf("    \"%s\": [", name);
    for (size_t i = 0; i < count; ++i)
        printf("%s%.6g", i ? ", " : "", values[i] * scale);
    printf("]");
}

/* The host-integrated velocity Verlet of the step path (src/support/simulate.c's operations). */
typedef struct host_loop {
    fk_eval *eval;
    double *x, *v, *a; /* x: the evaluation's pinned positions array */
    size_t n;
    double dt, box[3];
} host_loop;

static fk_status host_steps(host_loop *loop, int steps)
{
    const double dt = loop->dt, half = 0.5 * dt;
    double *x = loop->x, *v = loop->v, *a = loop->a;
    fk_status status = FK_OK;
    for (int s = 0; s < steps && status == FK_OK; ++s) {
        for (size_t m = 0; m < 3 * loop->n; ++m) {
            v[m] += half * a[m];
            double y = x[m] + dt * v[m];
            const double side = loop->box[m % 3];
            if (!(y >= 0 && y < side)) {
                y -= side * floor(y / side);
                if (y >= side)
                    y -= side;
                if (y < 0)
                    y += side;
            }
            x[m] = y;
        }
        status = fk_eval_update_positions(loop->eval, x, NULL);
        if (status == FK_OK)
            status = fk_eval_compute(loop->eval, NULL);
        const void *view = NULL;
        if (status == FK_OK)
            status = fk_eval_results_view(loop->eval, &view, NULL);
        if (status == FK_OK) {
            const double *f = view;
            for (size_t m = 0; m < 3 * loop->n; ++m) {
                a[m] = f[m];
                v[m] += half * a[m];
            }
        }
    }
    return status;
}

int main(int argc, char **argv)
{
    size_t n = 16384;
    int steps = 100, rounds = 5, evals = 20, warmup = 200;
    /* --device-timing off: the queue without event profiling, as `simulate --device-timing off`
     * (a profiled queue costs microseconds a kernel on some drivers); --lists: the neighbour
     * lists' form (fk_eval_config.neighbor_lists). */
    int device_timing = FK_DEVICE_TIMING_ON, lists = FK_NEIGHBOR_LISTS_AUTO, potential = 0;
    const char *accum = "float", *algorithm_name = "neighbors", *kind_name = "verlet";
    const char *device = NULL;
    double dt = 0.005, skin = 0.3;
    unsigned long long seed = 1;
    for (int a = 1; a < argc; ++a) {
        const char *arg = argv[a];
        const char *value = a + 1 < argc ? argv[a + 1] : NULL;
        if (!value) {
            usage();
            return 2;
        }
        ++a;
        if (strcmp(arg, "--n") == 0)
            n = strtoull(value, NULL, 10);
        else if (strcmp(arg, "--steps") == 0)
            steps = atoi(value);
        else if (strcmp(arg, "--rounds") == 0)
            rounds = atoi(value);
        else if (strcmp(arg, "--evals") == 0)
            evals = atoi(value);
        else if (strcmp(arg, "--accum") == 0)
            accum = value;
        else if (strcmp(arg, "--algorithm") == 0)
            algorithm_name = value;
        else if (strcmp(arg, "--kind") == 0)
            kind_name = value;
        else if (strcmp(arg, "--dt") == 0)
            dt = atof(value);
        else if (strcmp(arg, "--skin") == 0)
            skin = atof(value);
        else if (strcmp(arg, "--seed") == 0)
            seed = strtoull(value, NULL, 10);
        else if (strcmp(arg, "--device") == 0)
            device = value;
        else if (strcmp(arg, "--warmup") == 0)
            warmup = atoi(value);
        else if (strcmp(arg, "--device-timing") == 0)
            device_timing = strcmp(value, "off") == 0  ? FK_DEVICE_TIMING_OFF
                            : strcmp(value, "on") == 0 ? FK_DEVICE_TIMING_ON
                                                       : -1;
        else if (strcmp(arg, "--potential") == 0) /* potentials every step, as simulate's */
            potential = strcmp(value, "on") == 0 ? 1 : strcmp(value, "off") == 0 ? 0 : -1;
        else if (strcmp(arg, "--lists") == 0)
            lists = strcmp(value, "half") == 0   ? FK_NEIGHBOR_LISTS_HALF
                    : strcmp(value, "full") == 0 ? FK_NEIGHBOR_LISTS_FULL
                    : strcmp(value, "auto") == 0 ? FK_NEIGHBOR_LISTS_AUTO
                                                 : -1;
        else {
            usage();
            return 2;
        }
    }
    fk_algorithm algorithm;
    const int langevin = strcmp(kind_name, "langevin") == 0;
    if (n < 2 || steps < 1 || warmup < 0 || rounds < 1 || rounds > MAX_ROUNDS || evals < 1 ||
        evals > MAX_EVALS || !(dt > 0) || fk_algorithm_find(algorithm_name, &algorithm) != FK_OK ||
        (!langevin && strcmp(kind_name, "verlet") != 0) || device_timing < 0 || lists < 0 ||
        potential < 0) {
        usage();
        return 2;
    }

    fkt_particle_set set = {0};
    double box[3];
    fk_status status = fkt_generate_lj_fluid(n, 0.8, 1.0, seed, FKT_LAYOUT_XYZ_TYPE, &set, box);
    if (status != FK_OK)
        return fail(NULL, "fkt_generate_lj_fluid", status);
    fk_context_config context_config = FK_CONFIG_INIT(fk_context_config);
    context_config.device = device;
    context_config.device_timing = device_timing;
    fk_context *context = NULL;
    status = fk_context_create(&context_config, &context);
    if (status != FK_OK)
        return fail(context, "fk_context_create", status);

    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "lj";
    config.accum = accum;
    config.cutoff = 2.5;
    memcpy(config.box, box, sizeof config.box);
    config.algorithm = algorithm;
    config.skin = skin;
    config.expected_count = n;
    config.neighbor_lists = lists;
    config.potential = potential;
    if (strcmp(accum, "fixed64") == 0)
        config.scale_policy = FK_SCALE_KEEP;
    fk_particles particles = {.count = n, .position = set.position, .type = set.type};
    fk_eval *evals_[3] = {NULL, NULL, NULL}; /* integrator, host loop, plain evaluation */
    for (int e = 0; e < 3; ++e) {
        status = fk_eval_create(context, &config, &evals_[e]);
        if (status == FK_OK)
            status = fk_eval_set_particles(evals_[e], &particles);
        if (status != FK_OK)
            return fail(context, "fk_eval_create / set_particles", status);
    }
    fk_integrator_config integrator_config = FK_CONFIG_INIT(fk_integrator_config);
    integrator_config.kind = langevin ? FK_INTEGRATOR_LANGEVIN : FK_INTEGRATOR_VERLET;
    integrator_config.dt = dt;
    if (langevin) {
        integrator_config.temperature = 1.0;
        integrator_config.friction = 1.0;
        integrator_config.seed = seed;
    }
    fk_integrator *integrator = NULL;
    status = fk_integrator_create(evals_[0], &integrator_config, &integrator);
    if (status == FK_OK)
        status = fk_integrator_set_state(integrator, set.position, set.velocity, 0);
    if (status != FK_OK)
        return fail(context, "fk_integrator_create / set_state", status);

    /* The host loop's state: positions in the evaluation's pinned array. */
    double *x = NULL;
    status = fk_eval_positions_buffer(evals_[1], &x);
    if (status != FK_OK)
        return fail(context, "fk_eval_positions_buffer", status);
    double *v = malloc(3 * n * sizeof *v), *a = malloc(3 * n * sizeof *a);
    double *forces = malloc(3 * n * sizeof *forces);
    if (!v || !a || !forces)
        return fail(context, "malloc", FK_ERR_HOST_MEMORY);
    memcpy(x, set.position, 3 * n * sizeof *x);
    memcpy(v, set.velocity, 3 * n * sizeof *v);
    status = fk_eval_update_positions(evals_[1], x, NULL);
    if (status == FK_OK)
        status = fk_eval_compute(evals_[1], NULL);
    if (status == FK_OK)
        status = fk_eval_read_forces(evals_[1], a);
    if (status == FK_OK) /* the plain evaluation's lists, built before the first timing */
        status = fk_eval_compute(evals_[2], NULL);
    if (status != FK_OK)
        return fail(context, "first forces", status);

    double integrator_ms[MAX_ROUNDS], host_ms[MAX_ROUNDS], eval_ms[MAX_ROUNDS];
    host_loop loop = {.eval = evals_[1], .x = x, .v = v, .a = a, .n = n, .dt = dt};
    memcpy(loop.box, box, sizeof box);
    status = fk_integrator_step(integrator, (uint64_t)warmup);
    if (status == FK_OK)
        status = fk_integrator_get_state(integrator, NULL, NULL, NULL);
    if (status == FK_OK)
        status = host_steps(&loop, warmup);
    if (status != FK_OK)
        return fail(context, "warm-up", status);
    uint64_t warm_rebuilds = 0, warm_syncs = 0;
    fk_integrator_counters(integrator, &warm_rebuilds, NULL, &warm_syncs);
    for (int r = 0; r < rounds; ++r) {
        double t0 = now();
        status = fk_integrator_step(integrator, (uint64_t)steps);
        if (status == FK_OK)
            status = fk_integrator_get_state(integrator, NULL, NULL, NULL);
        if (status != FK_OK)
            return fail(context, "fk_integrator_step", status);
        integrator_ms[r] = 1e3 * (now() - t0) / steps;

        t0 = now();
        status = host_steps(&loop, steps);
        if (status != FK_OK)
            return fail(context, "host loop", status);
        host_ms[r] = 1e3 * (now() - t0) / steps;

        double each[MAX_EVALS];
        for (int e = 0; e < evals && status == FK_OK; ++e) {
            t0 = now();
            status = fk_eval_compute(evals_[2], NULL);
            if (status == FK_OK)
                status = fk_eval_read_forces(evals_[2], forces);
            each[e] = now() - t0;
        }
        if (status != FK_OK)
            return fail(context, "plain evaluation", status);
        eval_ms[r] = 1e3 * median(each, (size_t)evals);
    }
    uint64_t rebuilds = 0, rescales = 0, syncs = 0;
    fk_integrator_counters(integrator, &rebuilds, &rescales, &syncs);
    rebuilds -= warm_rebuilds; /* over the timed rounds */
    syncs -= warm_syncs;
    double kinetic = 0;
    fk_integrator_energies(integrator, &kinetic, NULL);
    fk_variant variant;
    fk_eval_get_variant(evals_[0], &variant); /* the last rebuild's device time */

    const double mi = median(integrator_ms, (size_t)rounds);
    const double mh = median(host_ms, (size_t)rounds), me = median(eval_ms, (size_t)rounds);
    printf("{\n  \"bench\": \"integrator\",\n  \"device\": \"%s\",\n  \"version\": \"%s\",\n",
           fk_context_device(context)->name, fk_version());
    printf("  \"n\": %zu,\n  \"kernel\": \"lj\",\n  \"accum\": \"%s\",\n  \"algorithm\": \"%s\",\n"
           "  \"kind\": \"%s\",\n  \"dt\": %g,\n  \"skin\": %g,\n  \"steps_per_round\": %d,\n"
           "  \"rounds\": %d,\n  \"evals_per_round\": %d,\n  \"warmup_steps\": %d,\n",
           n, accum, algorithm_name, kind_name, dt, skin, steps, rounds, evals, warmup);
    printf("  \"potential\": %s,\n", potential ? "true" : "false");
    printf("  \"device_timing\": %s,\n  \"neighbor_half_lists\": %s,\n",
           device_timing == FK_DEVICE_TIMING_OFF ? "false" : "true",
           variant.neighbor_half_lists ? "true" : "false");
    printf("  \"ms_per_step\": {\n    \"integrator\": %.6g,\n    \"host_loop\": %.6g,\n"
           "    \"force_eval\": %.6g\n  },\n",
           mi, mh, me);
    printf("  \"integrator_over_force_eval\": %.4g,\n  \"host_loop_over_force_eval\": %.4g,\n",
           mi / me, mh / me);
    printf("  \"rounds_ms\": {\n");
    print_array("integrator", integrator_ms, (size_t)rounds, 1);
    printf(",\n");
    print_array("host_loop", host_ms, (size_t)rounds, 1);
    printf(",\n");
    print_array("force_eval", eval_ms, (size_t)rounds, 1);
    printf("\n  },\n  \"integrator_rebuilds\": %llu,\n  \"integrator_rescales\": %llu,\n"
           "  \"integrator_syncs\": %llu,\n  \"last_build_device_ms\": %.6g,\n"
           "  \"final_kinetic_temperature\": %.6g\n}\n",
           (unsigned long long)rebuilds, (unsigned long long)rescales, (unsigned long long)syncs,
           1e3 * variant.cell_build_seconds, 2.0 * kinetic / (3.0 * (double)n - 3.0));
    fk_integrator_destroy(integrator);
    for (int e = 0; e < 3; ++e)
        fk_eval_destroy(evals_[e]);
    fk_context_destroy(context);
    free(v);
    free(a);
    free(forces);
    fkt_particle_set_free(&set);
    return 0;
}
