/* The double-precision reference of targets against sources (g6_reference.h). */
#include "g6_reference.h"

#include <math.h>
#include <stdlib.h>

void g6ref_predict(const g6ref_source *s, double ti, double x[3], double v[3])
{
    const double dt = ti - s->t;
    for (int k = 0; k < 3; ++k) {
        x[k] = s->x[k] +
               dt * (s->v[k] + dt * (s->a[k] * 0.5 + dt * (s->jerk[k] * (1.0 / 6.0) +
                                                           dt * (s->snap[k] * (1.0 / 24.0)))));
        v[k] = s->v[k] + dt * (s->a[k] + dt * (s->jerk[k] * 0.5 + dt * (s->snap[k] * (1.0 / 6.0))));
    }
}

void g6ref_evaluate(size_t ni, const int *id, const double *x, const double *v, size_t nj,
                    const int *source_id, const double *px, const double *pv, const double *mass,
                    double eps2, double *acc, double *jerk, double *pot, int *nearest)
{
    for (size_t i = 0; i < ni; ++i) {
        double a[3] = {0, 0, 0}, jk[3] = {0, 0, 0}, phi = 0, best = INFINITY;
        int best_id = -1;
        for (size_t j = 0; j < nj; ++j) {
            if (source_id[j] == id[i])
                continue;
            double dx[3], dv[3];
            for (int k = 0; k < 3; ++k) {
                dx[k] = px[3 * j + k] - x[3 * i + k];
                dv[k] = pv[3 * j + k] - v[3 * i + k];
            }
            const double r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
            const double s2 = r2 + eps2;
            const double inv_s = 1.0 / sqrt(s2), inv_s2 = inv_s * inv_s;
            const double m_inv_s3 = mass[j] * inv_s * inv_s2;
            const double rv3 = 3.0 * (dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2]) * inv_s2;
            for (int k = 0; k < 3; ++k) {
                a[k] += dx[k] * m_inv_s3;
                jk[k] += (dv[k] - rv3 * dx[k]) * m_inv_s3;
            }
            phi -= mass[j] * inv_s;
            if (r2 < best || (r2 == best && source_id[j] < best_id)) {
                best = r2;
                best_id = source_id[j];
            }
        }
        for (int k = 0; k < 3; ++k) {
            if (acc)
                acc[3 * i + k] = a[k];
            if (jerk)
                jerk[3 * i + k] = jk[k];
        }
        if (pot)
            pot[i] = phi;
        if (nearest)
            nearest[i] = best_id;
    }
}

static int compare_int(const void *a, const void *b)
{
    const int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

size_t g6ref_neighbors(const int id, const double x[3], double h2, size_t nj, const int *source_id,
                       const double *px, int *list, size_t capacity)
{
    size_t found = 0;
    if (!(h2 > 0))
        return 0;
    for (size_t j = 0; j < nj; ++j) {
        if (source_id[j] == id)
            continue;
        double r2 = 0;
        for (int k = 0; k < 3; ++k) {
            const double d = px[3 * j + k] - x[k];
            r2 += d * d;
        }
        if (r2 <= h2) {
            if (found < capacity)
                list[found] = source_id[j];
            ++found;
        }
    }
    qsort(list, found < capacity ? found : capacity, sizeof(int), compare_int);
    return found;
}
