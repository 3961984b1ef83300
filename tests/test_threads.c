/*
 * The thread-safety rule (include/forcekit/forcekit.h): objects of different contexts may be used
 * concurrently; one context and its evaluations from one thread at a time. Two threads here each
 * own a context and run whole evaluations on it at the same time (gravity all-pairs, and
 * Lennard-Jones with cell lists and fixed64, whose bound pre-pass and tuning-database lookups touch
 * the most library state), each checked against the double-precision reference. Run under
 * ThreadSanitizer (CMAKE_BUILD_TYPE=Tsan, tests/tsan.supp says what is suppressed and why) it also
 * proves the absence of data races in the library; in the other builds it checks the results.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forcekit/forcekit.h"
#include "test_support.h"

enum { N = 343, SIDE = 7, ROUNDS = 3, THREADS = 2 };

typedef struct job {
    uint64_t seed;
    int failed;
    char message[512];
} job;

static void fail_job(job *j, const char *what, fk_status status, const fk_context *context)
{
    j->failed = 1;
    snprintf(j->message, sizeof j->message, "%s: %s: %s", what, fk_status_string(status),
             context ? fk_context_last_error(context) : "");
}

/* One evaluation, checked against the reference; returns 0 on success. */
static int evaluate(job *j, fk_context *context, const fk_eval_config *config,
                    const fk_particles *particles, const fk_physics *physics)
{
    double *forces = malloc(3 * N * sizeof *forces);
    double *reference = malloc(3 * N * sizeof *reference);
    if (!forces || !reference) {
        free(forces);
        free(reference);
        fail_job(j, "malloc", FK_ERR_HOST_MEMORY, NULL);
        return -1;
    }
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(context, config, &eval);
    if (status == FK_OK)
        status = fk_eval_set_particles(eval, particles);
    if (status == FK_OK)
        status = fk_eval_compute(eval, NULL);
    if (status == FK_OK)
        status = fk_eval_read_forces(eval, forces);
    if (status != FK_OK) {
        fail_job(j, config->kernel, status, context);
    } else if ((status = fk_reference_forces(config->kernel, particles, physics, reference,
                                             NULL)) != FK_OK) {
        fail_job(j, "reference", status, NULL);
    } else {
        double largest = 0, worst = 0;
        for (size_t k = 0; k < 3 * N; ++k) {
            largest = fmax(largest, fabs(reference[k]));
            worst = fmax(worst, fabs(forces[k] - reference[k]));
        }
        if (!(worst <= 1e-4 * largest)) {
            j->failed = 1;
            snprintf(j->message, sizeof j->message, "%s %s: error %g of %g", config->kernel,
                     config->accum, worst, largest);
        }
    }
    fk_eval_destroy(eval);
    free(forces);
    free(reference);
    return j->failed ? -1 : 0;
}

static void *run(void *argument)
{
    job *j = argument;
    fk_context *context = NULL;
    fk_status status = fk_context_create(NULL, &context);
    if (status != FK_OK) {
        fail_job(j, "context", status, context);
        fk_context_destroy(context);
        return NULL;
    }
    fk_test_rng rng;
    fk_test_rng_init(&rng, j->seed);
    static const int no_types[N]; /* one type, read only */
    double *position = malloc(3 * N * sizeof *position);
    double *mass = malloc(N * sizeof *mass);
    for (int round = 0; position && mass && round < ROUNDS && !j->failed; ++round) {
        /* gravity in a unit cube */
        for (size_t i = 0; i < N; ++i) {
            for (int k = 0; k < 3; ++k)
                position[3 * i + (size_t)k] = fk_test_rng_uniform(&rng);
            mass[i] = 0.5 + fk_test_rng_uniform(&rng);
        }
        const fk_particles gravity = {.count = N, .position = position, .mass = mass};
        const fk_eval_config ga = {
            .kernel = "ga", .accum = round % 2 ? "double" : "float", .eps = 0.01};
        const fk_physics ga_physics = {.eps = 0.01};
        if (evaluate(j, context, &ga, &gravity, &ga_physics) != 0)
            break;
        /* a jittered Lennard-Jones lattice in a periodic box, cell lists, fixed64 */
        fk_test_jittered_lattice(position, SIDE, 1.1, 0.2, &rng);
        const fk_particles fluid = {.count = N, .position = position, .type = no_types};
        const fk_eval_config lj = {.kernel = "lj",
                                   .accum = "fixed64",
                                   .cutoff = 2.5,
                                   .box = {1.1 * SIDE, 1.1 * SIDE, 1.1 * SIDE},
                                   .algorithm = FK_ALGORITHM_CELLS};
        const fk_physics lj_physics = {.cutoff = 2.5, .box = {1.1 * SIDE, 1.1 * SIDE, 1.1 * SIDE}};
        evaluate(j, context, &lj, &fluid, &lj_physics);
    }
    if (!position || !mass)
        fail_job(j, "malloc", FK_ERR_HOST_MEMORY, NULL);
    free(position);
    free(mass);
    fk_context_destroy(context);
    return NULL;
}

int main(void)
{
    const uint64_t seed = fk_test_seed();
    job jobs[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; ++t) {
        memset(&jobs[t], 0, sizeof jobs[t]);
        jobs[t].seed = seed + (uint64_t)t;
        if (pthread_create(&threads[t], NULL, run, &jobs[t]) != 0) {
            fprintf(stderr, "test_threads: pthread_create failed\n");
            return 1;
        }
    }
    int failed = 0;
    for (int t = 0; t < THREADS; ++t) {
        pthread_join(threads[t], NULL);
        if (jobs[t].failed) {
            fprintf(stderr, "thread %d: %s\n", t, jobs[t].message);
            failed = 1;
        }
    }
    if (!failed)
        printf("test_threads: %d threads x %d rounds on their own contexts: results right\n",
               THREADS, ROUNDS);
    return failed;
}
