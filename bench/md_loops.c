/*
 * The MD workload of issue #17 through the public API and the command's integrator: an LJ fluid
 * (fcc start, Maxwell-Boltzmann velocities, periodic cube, rc 2.5 force-shifted, lj float by
 * default), velocity-Verlet NVE steps, per pair loop. Each step is what an MD code pays: new
 * positions uploaded (fk_eval_update_positions, where the cells and lists are checked on the device
 * and rebuilt when some particle moved more than skin / 2), one evaluation, the forces read back.
 * Prints one JSON document.
 *
 *   bench_md_loops [--n N] [--density D] [--skin S] [--rounds R] [--steps K] [--accum A]
 *                  [--loops cells,neighbors,...] [--seed S] [--kernel lj|ljc_constant]
 *                  [--evals E]
 *
 * The loops run interleaved: R rounds, each of K steps of every loop in turn, every loop from the
 * same initial state and continuing its own trajectory; the figures are the medians over the
 * rounds of each round's seconds per step (a shared machine slows whole rounds, and interleaving
 * spreads that over the loops). Per loop also: the device seconds of one evaluation at fixed
 * positions (median of 7, OpenCL event profiling), the rebuilds over all steps, the device time
 * of the last build, and the pairs each evaluation examines.
 *
 * --kernel ljc_constant adds Coulomb (k = D0 = 1, force-shifted at the same cutoff) with charges
 * alternating +0.5, -0.5 by particle index, as bench_openmm_md assigns them. --evals E (default
 * 0: none) then times, per loop and after the steps, E evaluations at the final positions of a
 * fresh evaluation without the potential, each compute + fk_eval_read_forces in wall time (the
 * lists or cells built once before the first), interleaved across the loops: the figure to
 * compare with OpenMM's context.getState(Forces) (bench/run_cpu_md.sh).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "common/stats.h"
#include "forcekit/forcekit.h"
#include "forcekit/tools.h"
#include "support/simulate.h"
#include "support/systems.h"

enum { MAX_LOOPS = 4, MAX_ROUNDS = 64, FIXED_REPS = 7, MAX_EVALS = 256 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int usage(const char *message)
{
    fprintf(
        stderr,
        "bench_md_loops: %s\nusage: bench_md_loops [--n N] [--density D] [--skin S] "
        "[--rounds R] [--steps K] [--accum A] [--loops L1,L2,...] [--seed S]\n"
        "                      [--kernel lj|ljc_constant] [--evals E] [--lanes auto|off|8|16]\n",
        message);
    return 2;
}

typedef struct loop_run {
    fk_algorithm algorithm;
    fkt_sim *sim;
    double round_seconds[MAX_ROUNDS]; /* wall seconds per step of each round */
    double round_device[MAX_ROUNDS];  /* device seconds per evaluation of each round */
    double fixed_seconds;             /* device seconds of one evaluation at fixed positions */
    size_t steps;
    double eval_seconds[MAX_EVALS]; /* --evals: wall seconds of compute + read_forces */
} loop_run;

int main(int argc, char **argv)
{
    size_t n = 16384;
    double density = 0.8, skin = 0.3, temperature = 1.0, dt = 0.005, cutoff = 2.5;
    int rounds = 5, steps = 40, evals = 0, lanes = 0;
    unsigned long long seed = 1;
    const char *accum = "float", *loop_names = "cells,neighbors", *kernel = "lj";
    for (int a = 1; a < argc; ++a) {
        const char *value = a + 1 < argc ? argv[a + 1] : NULL;
        if (!value)
            return usage("an option without its value");
        if (strcmp(argv[a], "--n") == 0)
            n = (size_t)strtoull(value, NULL, 10);
        else if (strcmp(argv[a], "--density") == 0)
            density = strtod(value, NULL);
        else if (strcmp(argv[a], "--skin") == 0)
            skin = strtod(value, NULL);
        else if (strcmp(argv[a], "--rounds") == 0)
            rounds = atoi(value);
        else if (strcmp(argv[a], "--steps") == 0)
            steps = atoi(value);
        else if (strcmp(argv[a], "--accum") == 0)
            accum = value;
        else if (strcmp(argv[a], "--loops") == 0)
            loop_names = value;
        else if (strcmp(argv[a], "--seed") == 0)
            seed = strtoull(value, NULL, 10);
        else if (strcmp(argv[a], "--kernel") == 0)
            kernel = value;
        else if (strcmp(argv[a], "--evals") == 0)
            evals = atoi(value);
        else if (strcmp(argv[a], "--lanes") == 0) /* fk_eval_config.lanes: auto, off, 8, 16 */
            lanes = strcmp(value, "off") == 0               ? -1
                    : strcmp(value, "auto") == 0            ? 0
                    : atoi(value) == 8 || atoi(value) == 16 ? atoi(value)
                                                            : -2;
        else
            return usage("unknown option");
        ++a;
    }
    if (n < 2 || !(density > 0) || !(skin > 0) || rounds < 1 || rounds > MAX_ROUNDS || steps < 1 ||
        evals < 0 || evals > MAX_EVALS || lanes == -2)
        return usage("--n >= 2, --density > 0, --skin > 0, 1 <= --rounds <= 64, --steps >= 1, "
                     "0 <= --evals <= 256, --lanes auto, off, 8 or 16");
    const int coulomb = strcmp(kernel, "ljc_constant") == 0;
    if (!coulomb && strcmp(kernel, "lj") != 0)
        return usage("--kernel: lj or ljc_constant");

    loop_run loops[MAX_LOOPS];
    size_t loop_count = 0;
    char names[256];
    snprintf(names, sizeof names, "%s", loop_names);
    for (char *save = NULL, *name = strtok_r(names, ",", &save); name;
         name = strtok_r(NULL, ",", &save)) {
        if (loop_count == MAX_LOOPS)
            return usage("at most 4 loops");
        memset(&loops[loop_count], 0, sizeof loops[loop_count]);
        if (fk_algorithm_find(name, &loops[loop_count].algorithm) != FK_OK)
            return usage("--loops: an unknown pair loop");
        ++loop_count;
    }

    fk_context *context = NULL;
    fk_status status = fk_context_create(NULL, &context);
    if (status != FK_OK) {
        fprintf(stderr, "bench_md_loops: context: %s: %s\n", fk_status_string(status),
                context ? fk_context_last_error(context) : "");
        fk_context_destroy(context);
        return 1;
    }
    fkt_particle_set particles;
    double box[3];
    status = fkt_generate_lj_fluid(n, density, temperature, (uint64_t)seed,
                                   coulomb ? FKT_LAYOUT_XYZQ_TYPE : FKT_LAYOUT_XYZ_TYPE, &particles,
                                   box);
    if (status == FK_OK && coulomb)
        for (size_t i = 0; i < n; ++i)
            particles.mass[i] = i % 2 ? -0.5 : 0.5;
    if (status != FK_OK) {
        fprintf(stderr, "bench_md_loops: lj fluid: %s\n", fk_status_string(status));
        fk_context_destroy(context);
        return 1;
    }

    int exit_code = 0;
    for (size_t l = 0; l < loop_count && exit_code == 0; ++l) {
        fkt_sim_config config = {.integrator = FKT_INTEGRATOR_VERLET, .dt = dt};
        config.eval = (fk_eval_config)FK_CONFIG_INIT(fk_eval_config);
        config.eval.kernel = kernel;
        config.eval.accum = accum;
        config.eval.cutoff = cutoff;
        config.eval.skin = skin;
        config.eval.algorithm = (int)loops[l].algorithm;
        config.eval.lanes = lanes;
        memcpy(config.eval.box, box, sizeof box);
        char error[1024] = "";
        status = fkt_sim_create(context, &config, &particles, &loops[l].sim, error, sizeof error);
        if (status != FK_OK) {
            fprintf(stderr, "bench_md_loops: %s: %s\n", fk_algorithm_name(loops[l].algorithm),
                    error);
            exit_code = 1;
        }
    }
    /* One evaluation at fixed positions, device time: the loop without the MD around it. */
    for (size_t l = 0; l < loop_count && exit_code == 0; ++l) {
        double times[FIXED_REPS];
        for (int r = 0; r < FIXED_REPS && status == FK_OK; ++r)
            status = fk_eval_compute(loops[l].sim->eval, &times[r]);
        if (status != FK_OK) {
            fprintf(stderr, "bench_md_loops: compute: %s\n", fk_context_last_error(context));
            exit_code = 1;
        } else {
            loops[l].fixed_seconds = fk__median(times, FIXED_REPS);
        }
    }
    for (int r = 0; r < rounds && exit_code == 0; ++r)
        for (size_t l = 0; l < loop_count && exit_code == 0; ++l) {
            fkt_sim *sim = loops[l].sim;
            const double device_before = sim->device_seconds;
            const uint64_t evaluations_before = sim->evaluations;
            const double start = now();
            for (int s = 0; s < steps && status == FK_OK; ++s)
                status = fkt_sim_step(sim);
            loops[l].round_seconds[r] = (now() - start) / steps;
            loops[l].round_device[r] = (sim->device_seconds - device_before) /
                                       (double)(sim->evaluations - evaluations_before);
            loops[l].steps += (size_t)steps;
            if (status != FK_OK) {
                fprintf(stderr, "bench_md_loops: %s step: %s\n",
                        fk_algorithm_name(loops[l].algorithm), sim->message);
                exit_code = 1;
            }
        }

    /* --evals: compute + read back at fixed positions, without the potential, as OpenMM's
     * getState(Forces). A fresh evaluation per loop at the loop's final positions. */
    fk_eval *fixed[MAX_LOOPS] = {NULL};
    double *forces = evals > 0 ? malloc(3 * n * sizeof *forces) : NULL;
    for (size_t l = 0; l < loop_count && exit_code == 0 && evals > 0; ++l) {
        fk_eval_config config = loops[l].sim->config.eval;
        config.potential = 0;
        const fk_particles current = {.count = n,
                                      .position = loops[l].sim->position,
                                      .mass = particles.mass,
                                      .type = particles.type};
        status = forces ? fk_eval_create(context, &config, &fixed[l]) : FK_ERR_HOST_MEMORY;
        if (status == FK_OK)
            status = fk_eval_set_particles(fixed[l], &current);
        if (status == FK_OK) /* the build, not timed */
            status = fk_eval_compute(fixed[l], NULL);
        if (status != FK_OK) {
            fprintf(stderr, "bench_md_loops: %s evaluation: %s: %s\n",
                    fk_algorithm_name(loops[l].algorithm), fk_status_string(status),
                    fk_context_last_error(context));
            exit_code = 1;
        }
    }
    for (int e = 0; e < evals && exit_code == 0; ++e)
        for (size_t l = 0; l < loop_count && exit_code == 0; ++l) {
            const double start = now();
            status = fk_eval_compute(fixed[l], NULL);
            if (status == FK_OK)
                status = fk_eval_read_forces(fixed[l], forces);
            loops[l].eval_seconds[e] = now() - start;
            if (status != FK_OK) {
                fprintf(stderr, "bench_md_loops: %s: %s\n", fk_algorithm_name(loops[l].algorithm),
                        fk_context_last_error(context));
                exit_code = 1;
            }
        }
    for (size_t l = 0; l < loop_count; ++l)
        fk_eval_destroy(fixed[l]);
    free(forces);

    if (exit_code == 0) {
        const fk_device_info *device = fk_context_device(context);
        cJSON *document = cJSON_CreateObject();
        cJSON_AddStringToObject(document, "program", "bench_md_loops");
        cJSON_AddStringToObject(document, "workload",
                                "lj fluid, fcc start, Maxwell-Boltzmann velocities, periodic cube, "
                                "velocity-Verlet NVE; a step = update_positions + compute + "
                                "read_forces");
        cJSON_AddStringToObject(document, "kernel", kernel);
        cJSON_AddStringToObject(document, "accum", accum);
        cJSON_AddNumberToObject(document, "n", (double)n);
        cJSON_AddNumberToObject(document, "density", density);
        cJSON_AddNumberToObject(document, "box", box[0]);
        cJSON_AddNumberToObject(document, "cutoff", cutoff);
        cJSON_AddNumberToObject(document, "skin", skin);
        cJSON_AddNumberToObject(document, "temperature", temperature);
        cJSON_AddNumberToObject(document, "dt", dt);
        cJSON_AddNumberToObject(document, "seed", (double)seed);
        cJSON_AddNumberToObject(document, "rounds", rounds);
        cJSON_AddNumberToObject(document, "steps_per_round", steps);
        cJSON_AddStringToObject(document, "device", device->name);
        cJSON_AddStringToObject(document, "platform", device->platform_name);
        cJSON_AddStringToObject(document, "driver_version", device->driver_version);
        cJSON_AddNumberToObject(document, "compute_units", device->compute_units);
        cJSON *results = cJSON_AddArrayToObject(document, "loops");
        double medians[MAX_LOOPS];
        for (size_t l = 0; l < loop_count; ++l) {
            fk_variant v;
            fk_eval_get_variant(loops[l].sim->eval, &v);
            cJSON *item = cJSON_CreateObject();
            cJSON_AddStringToObject(item, "algorithm", fk_algorithm_name(loops[l].algorithm));
            char unroll[16];
            snprintf(unroll, sizeof unroll, "%dx%d", v.unroll_i, v.unroll_j);
            cJSON_AddStringToObject(item, "unroll", unroll);
            cJSON_AddNumberToObject(item, "work_group_size", v.work_group_size);
            /* neighbors: the list form and the CPU lane form (0: the scalar walk) */
            cJSON_AddStringToObject(item, "lists", v.neighbor_half_lists ? "half" : "full");
            cJSON_AddNumberToObject(item, "lanes", v.lanes);
            cJSON_AddBoolToObject(item, "local_tiling", v.local_tiling != 0);
            cJSON *per_round = cJSON_AddArrayToObject(item, "seconds_per_step_by_round");
            for (int r = 0; r < rounds; ++r)
                cJSON_AddItemToArray(per_round, cJSON_CreateNumber(loops[l].round_seconds[r]));
            medians[l] = fk__median(loops[l].round_seconds, (size_t)rounds);
            cJSON_AddNumberToObject(item, "seconds_per_step", medians[l]);
            cJSON_AddNumberToObject(item, "device_seconds_per_evaluation_in_steps",
                                    fk__median(loops[l].round_device, (size_t)rounds));
            cJSON_AddNumberToObject(item, "device_seconds_per_evaluation_fixed",
                                    loops[l].fixed_seconds);
            cJSON_AddNumberToObject(item, "steps", (double)loops[l].steps);
            /* the initial build and one per rebuild since */
            cJSON_AddNumberToObject(item, "builds", (double)v.cell_rebuilds);
            cJSON_AddNumberToObject(item, "last_build_device_seconds", v.cell_build_seconds);
            cJSON_AddNumberToObject(item, "pairs_examined", (double)v.pairs_examined);
            if (evals > 0) {
                cJSON *by_rep = cJSON_AddArrayToObject(item, "eval_readback_seconds_by_rep");
                for (int e = 0; e < evals; ++e)
                    cJSON_AddItemToArray(by_rep, cJSON_CreateNumber(loops[l].eval_seconds[e]));
                const double middle = fk__median(loops[l].eval_seconds, (size_t)evals); /* sorts */
                cJSON_AddNumberToObject(item, "eval_readback_seconds_min",
                                        loops[l].eval_seconds[0]);
                cJSON_AddNumberToObject(item, "eval_readback_seconds_median", middle);
                cJSON_AddNumberToObject(item, "eval_readback_seconds_max",
                                        loops[l].eval_seconds[evals - 1]);
            }
            cJSON *grid = cJSON_AddArrayToObject(item, "cell_grid");
            for (int d = 0; d < 3; ++d)
                cJSON_AddItemToArray(grid, cJSON_CreateNumber(v.cell_grid[d]));
            const fkt_sim_timing *t = &loops[l].sim->timing;
            const double evaluations = (double)loops[l].sim->evaluations;
            cJSON *phases = cJSON_AddObjectToObject(item, "wall_seconds_per_evaluation");
            cJSON_AddNumberToObject(phases, "update_positions", t->update / evaluations);
            cJSON_AddNumberToObject(phases, "compute", t->compute / evaluations);
            cJSON_AddNumberToObject(phases, "read_forces", t->read / evaluations);
            cJSON_AddItemToArray(results, item);
        }
        if (loop_count == 2) {
            char key[96];
            snprintf(key, sizeof key, "%s_over_%s_seconds_per_step",
                     fk_algorithm_name(loops[0].algorithm), fk_algorithm_name(loops[1].algorithm));
            cJSON_AddNumberToObject(document, key, medians[0] / medians[1]);
        }
        char *text = cJSON_Print(document);
        if (text)
            printf("%s\n", text);
        free(text);
        cJSON_Delete(document);
    }
    for (size_t l = 0; l < loop_count; ++l)
        fkt_sim_destroy(loops[l].sim);
    fkt_particle_set_free(&particles);
    fk_context_destroy(context);
    return exit_code;
}
