/* A fourth-order Hermite block-step integrator over the GRAPE-6 API (issue #18), shared by
 * tests/test_g6.c (libsapporo against the comparison library) and bench/g6_hermite.c (a large
 * Plummer sphere through libsapporo on a device where AMUSE cannot be installed). The library
 * comes as a table of the g6 entry points, so that the caller may dlopen it or link it. */
#ifndef FK_G6_DRIVER_H
#define FK_G6_DRIVER_H

#include <stddef.h>
#include <stdint.h>

typedef struct g6lib { /* the g6 entry points of one library */
    const char *name;
    void *handle;
    int (*open)(int *);
    int (*close)(int *);
    int (*npipes)(void);
    int (*set_ti)(int *, double *);
    int (*set_j_particle)(int *, int *, int *, double *, double *, double *, double *, double *,
                          double *, double *, double *);
    void (*firsthalf)(int *, int *, int *, int *, double (*)[3], double (*)[3], double (*)[3],
                      double (*)[3], double *, double *, double *);
    int (*lasthalf)(int *, int *, int *, int *, double (*)[3], double (*)[3], double *, double *,
                    double (*)[3], double (*)[3], double *);
    int (*lasthalf2)(int *, int *, int *, int *, double (*)[3], double (*)[3], double *, double *,
                     double (*)[3], double (*)[3], double *, int *);
    int (*read_neighbour_list)(int *);
    int (*get_neighbour_list)(int *, int *, int *, int *, int *);
    int (*reset)(int *);
    int (*get_device_count)(void);
} g6lib;

typedef struct particles {
    int n;
    double (*x)[3], (*v)[3], (*a)[3], (*jerk)[3], *m, *t;
    int *id;
} particles;

void particles_alloc(particles *p, int n);
void particles_free(particles *p);
/* Slot `slot` of unit from particle i (a/2, jerk/6, snap 0, as a Hermite code passes them). */
int g6_set_j(g6lib *lib, int unit, int slot, const particles *p, int i);
/* The third-order host prediction of particle i to ti. */
void g6_host_predict(const particles *p, int i, double ti, double x[3], double v[3]);
/* A Plummer sphere of n equal masses in Henon units, centre of mass at rest (seeded xorshift). */
void g6_plummer(particles *p, int n, uint64_t seed);
/* Kinetic plus softened potential energy, directly in double. */
double g6_energy(const particles *p, double eps2);
/* Integrates initial from t = 0 to t_end (a multiple of 1/16) with block steps (Aarseth's
 * criterion with eta, steps at most 1/16) on g6 unit 1 of lib; returns |dE/E|, NaN when a g6
 * call failed. steps: block steps taken. */
double g6_hermite(g6lib *lib, const particles *initial, double eps2, double eta, double t_end,
                  size_t *steps);

#endif
