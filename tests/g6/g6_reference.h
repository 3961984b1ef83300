/* The double-precision reference of targets against sources (issue #18), for the engine's tests
 * (tests/test_sources.c) and the comparison g6 library (tests/g6/g6cpu.c): plain loops in double,
 * written for clarity, not speed. Not installed. */
#ifndef FK_G6_REFERENCE_H
#define FK_G6_REFERENCE_H

#include <stddef.h>

/* One source as a Hermite code holds it (fk_source's fields, in the physical derivatives). */
typedef struct g6ref_source {
    int id;
    double t, mass;
    double x[3], v[3], a[3], jerk[3], snap[3];
} g6ref_source;

/* Position and velocity of source at time ti: the fourth-order Taylor series (snap included). */
void g6ref_predict(const g6ref_source *source, double ti, double x[3], double v[3]);

/* Targets i < ni (id, x, v) against predicted sources j < nj (id, px, pv, mass), ID excluded:
 * acc, jerk (3 per target), pot (per target), nearest (ID of the nearest other source by
 * unsoftened distance, ties to the smaller ID, -1 if none). Any output may be NULL. */
void g6ref_evaluate(size_t ni, const int *id, const double *x, const double *v, size_t nj,
                    const int *source_id, const double *px, const double *pv, const double *mass,
                    double eps2, double *acc, double *jerk, double *pot, int *nearest);

/* The IDs of the sources j (ID not the target's) with r^2 <= h2, in increasing order, at most
 * capacity of them in list; returns how many there are in all. */
size_t g6ref_neighbors(const int id, const double x[3], double h2, size_t nj, const int *source_id,
                       const double *px, int *list, size_t capacity);

#endif
