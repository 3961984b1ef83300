/*
 * bench_g6_hermite: a Plummer sphere integrated with 4th-order Hermite block steps through
 * libsapporo (the GRAPE-6 API over fk_sources; issue #18, deliverable 5): the energy error and the
 * wall time, one JSON document. It stands in for AMUSE's ph4 where AMUSE cannot be installed (a
 * device machine without network): the same calls ph4 makes (set_j_particle of the corrected
 * particles, set_ti, firsthalf and lasthalf in blocks of npipes), by tests/g6/g6_driver.c, the
 * driver test_g6 checks against the comparison library. Where AMUSE can be built, ph4 itself:
 * tests/amuse/run_clients.sh BUILD SOURCE bench.
 *
 *   bench_g6_hermite [--n 16384] [--t 1] [--eta 0.03] [--eps2 1e-4] [--seed 1]
 * The device, accumulator and positions come from FORCEKIT_G6_DEVICE, FORCEKIT_G6_ACCUM and
 * FORCEKIT_G6_POSITIONS, as for any libsapporo client.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "g6/g6_driver.h"

/* libsapporo's entry points (linked). */
int g6_open_(int *);
int g6_close_(int *);
int g6_npipes_(void);
int g6_set_ti_(int *, double *);
int g6_set_j_particle_(int *, int *, int *, double *, double *, double *, double *, double *,
                       double *, double *, double *);
void g6calc_firsthalf_(int *, int *, int *, int *, double (*)[3], double (*)[3], double (*)[3],
                       double (*)[3], double *, double *, double *);
int g6calc_lasthalf_(int *, int *, int *, int *, double (*)[3], double (*)[3], double *, double *,
                     double (*)[3], double (*)[3], double *);
int g6calc_lasthalf2_(int *, int *, int *, int *, double (*)[3], double (*)[3], double *, double *,
                      double (*)[3], double (*)[3], double *, int *);
int g6_read_neighbour_list_(int *);
int g6_get_neighbour_list_(int *, int *, int *, int *, int *);
int g6_reset_(int *);
int get_device_count(void);

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int n = 16384;
    double t_end = 1.0, eta = 0.03, eps2 = 1e-4;
    unsigned long long seed = 1;
    for (int a = 1; a + 1 < argc; a += 2) {
        if (strcmp(argv[a], "--n") == 0)
            n = atoi(argv[a + 1]);
        else if (strcmp(argv[a], "--t") == 0)
            t_end = strtod(argv[a + 1], NULL);
        else if (strcmp(argv[a], "--eta") == 0)
            eta = strtod(argv[a + 1], NULL);
        else if (strcmp(argv[a], "--eps2") == 0)
            eps2 = strtod(argv[a + 1], NULL);
        else if (strcmp(argv[a], "--seed") == 0)
            seed = strtoull(argv[a + 1], NULL, 10);
        else {
            fprintf(stderr, "usage: %s [--n N] [--t T] [--eta ETA] [--eps2 EPS2] [--seed S]\n",
                    argv[0]);
            return 2;
        }
    }
    if (argc % 2 == 0 || n < 2 || !(t_end > 0)) {
        fprintf(stderr, "usage: %s [--n N] [--t T] [--eta ETA] [--eps2 EPS2] [--seed S]\n",
                argv[0]);
        return 2;
    }
    g6lib lib = {.name = "libsapporo",
                 .open = g6_open_,
                 .close = g6_close_,
                 .npipes = g6_npipes_,
                 .set_ti = g6_set_ti_,
                 .set_j_particle = g6_set_j_particle_,
                 .firsthalf = g6calc_firsthalf_,
                 .lasthalf = g6calc_lasthalf_,
                 .lasthalf2 = g6calc_lasthalf2_,
                 .read_neighbour_list = g6_read_neighbour_list_,
                 .get_neighbour_list = g6_get_neighbour_list_,
                 .reset = g6_reset_,
                 .get_device_count = get_device_count};
    particles initial;
    g6_plummer(&initial, n, seed);
    size_t steps = 0;
    const double start = now();
    const double error = g6_hermite(&lib, &initial, eps2, eta, t_end, &steps);
    const double wall = now() - start;
    const char *device = getenv("FORCEKIT_G6_DEVICE"), *accum = getenv("FORCEKIT_G6_ACCUM");
    const char *positions = getenv("FORCEKIT_G6_POSITIONS");
    printf("{\"bench\": \"g6_hermite\", \"n\": %d, \"t_end\": %g, \"eta\": %g, \"eps2\": %g, "
           "\"seed\": %llu, \"npipes\": %d, \"device\": \"%s\", \"accum\": \"%s\", "
           "\"positions\": \"%s\", \"block_steps\": %zu, \"wall_seconds\": %.3f, "
           "\"energy_error\": %.6e}\n",
           n, t_end, eta, eps2, seed, g6_npipes_(), device ? device : "default",
           accum ? accum : "ref", positions ? positions : "ds", steps, wall, error);
    particles_free(&initial);
    return isnan(error) ? 1 : 0;
}
