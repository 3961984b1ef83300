/* A fourth-order Hermite block-step integrator over the GRAPE-6 API (g6_driver.h). */
#include "g6_driver.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

void particles_alloc(particles *p, int n)
{
    p->n = n;
    p->x = calloc((size_t)n, sizeof *p->x);
    p->v = calloc((size_t)n, sizeof *p->v);
    p->a = calloc((size_t)n, sizeof *p->a);
    p->jerk = calloc((size_t)n, sizeof *p->jerk);
    p->m = calloc((size_t)n, sizeof(double));
    p->t = calloc((size_t)n, sizeof(double));
    p->id = calloc((size_t)n, sizeof(int));
}

void particles_free(particles *p)
{
    free(p->x);
    free(p->v);
    free(p->a);
    free(p->jerk);
    free(p->m);
    free(p->t);
    free(p->id);
}

int g6_set_j(g6lib *lib, int unit, int slot, const particles *p, int i)
{
    double k18[3] = {0, 0, 0}, j6[3], a2[3], dt = 0.0;
    for (int k = 0; k < 3; ++k) {
        a2[k] = p->a[i][k] / 2;
        j6[k] = p->jerk[i][k] / 6;
    }
    int id = p->id[i];
    return lib->set_j_particle(&unit, &slot, &id, &p->t[i], &dt, &p->m[i], k18, j6, a2, p->v[i],
                               p->x[i]);
}

void g6_host_predict(const particles *p, int i, double ti, double x[3], double v[3])
{
    const double dt = ti - p->t[i];
    for (int k = 0; k < 3; ++k) {
        x[k] = p->x[i][k] + dt * (p->v[i][k] + dt * (p->a[i][k] / 2 + dt * p->jerk[i][k] / 6));
        v[k] = p->v[i][k] + dt * (p->a[i][k] + dt * p->jerk[i][k] / 2);
    }
}

static double uniform(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return (double)(*state >> 11) * 0x1.0p-53;
}

void g6_plummer(particles *p, int n, uint64_t seed)
{
    uint64_t state = seed ? seed : 0x9e3779b97f4a7c15ull, *rng = &state;
    particles_alloc(p, n);
    double cm[6] = {0};
    for (int i = 0; i < n; ++i) {
        p->id[i] = i;
        p->m[i] = 1.0 / n;
        double r;
        do {
            const double u = uniform(rng) * 0.999 + 1e-6;
            r = 1.0 / sqrt(pow(u, -2.0 / 3.0) - 1.0);
        } while (r > 10);
        double q, g;
        do {
            q = uniform(rng);
            g = 0.1 * uniform(rng);
        } while (g > q * q * pow(1 - q * q, 3.5));
        const double speed = q * sqrt(2.0) * pow(1 + r * r, -0.25);
        for (int which = 0; which < 2; ++which) {
            const double z = 2 * uniform(rng) - 1;
            const double phi = 2 * M_PI * uniform(rng);
            const double s = sqrt(1 - z * z), len = which ? speed : r;
            double *out = which ? p->v[i] : p->x[i];
            out[0] = len * s * cos(phi);
            out[1] = len * s * sin(phi);
            out[2] = len * z;
        }
        for (int k = 0; k < 3; ++k) {
            cm[k] += p->m[i] * p->x[i][k];
            cm[3 + k] += p->m[i] * p->v[i][k];
        }
    }
    /* Centre of mass at rest at the origin; Henon units (E = -1/4: the scale 3 pi / 16). */
    const double scale = 3 * M_PI / 16;
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < 3; ++k) {
            p->x[i][k] = (p->x[i][k] - cm[k]) * scale;
            p->v[i][k] = (p->v[i][k] - cm[3 + k]) / sqrt(scale);
        }
}

double g6_energy(const particles *p, double eps2)
{
    double kinetic = 0, potential = 0;
    for (int i = 0; i < p->n; ++i) {
        kinetic += 0.5 * p->m[i] *
                   (p->v[i][0] * p->v[i][0] + p->v[i][1] * p->v[i][1] + p->v[i][2] * p->v[i][2]);
        for (int j = i + 1; j < p->n; ++j) {
            double r2 = eps2;
            for (int k = 0; k < 3; ++k)
                r2 += (p->x[j][k] - p->x[i][k]) * (p->x[j][k] - p->x[i][k]);
            potential -= p->m[i] * p->m[j] / sqrt(r2);
        }
    }
    return kinetic + potential;
}

/* acc and jerk of the listed particles (positions xp, vp predicted to ti) through the library,
 * in calls of at most npipes targets, with GRAPE's scale hints (a/2, jerk/6, phi). */
static int forces(g6lib *lib, int unit, const particles *p, const int *list, int count,
                  double (*xp)[3], double (*vp)[3], double ti, double eps2, double (*acc)[3],
                  double (*jerk)[3])
{
    const int npipes = lib->npipes();
    int nj = p->n, failed = npipes < 1;
    const size_t n = npipes > 0 ? (size_t)npipes : 1;
    int *index = malloc(n * sizeof(int));
    double(*xi)[3] = malloc(n * sizeof *xi), (*vi)[3] = malloc(n * sizeof *vi);
    double(*aold)[3] = malloc(n * sizeof *aold), (*jold)[3] = malloc(n * sizeof *jold);
    double(*a)[3] = malloc(n * sizeof *a), (*j)[3] = malloc(n * sizeof *j);
    double *pot = malloc(n * sizeof(double)), *h2 = malloc(n * sizeof(double));
    failed = failed || !index || !xi || !vi || !aold || !jold || !a || !j || !pot || !h2 ||
             lib->set_ti(&unit, &ti) != 0;
    for (int first = 0; !failed && first < count; first += npipes) {
        int ni = count - first < npipes ? count - first : npipes;
        for (int i = 0; i < ni; ++i) {
            const int b = list[first + i];
            index[i] = p->id[b];
            h2[i] = 0;
            for (int k = 0; k < 3; ++k) {
                xi[i][k] = xp[first + i][k];
                vi[i][k] = vp[first + i][k];
                aold[i][k] = p->a[b][k] / 2;
                jold[i][k] = p->jerk[b][k] / 6;
            }
            pot[i] = 0;
        }
        lib->firsthalf(&unit, &nj, &ni, index, xi, vi, aold, jold, pot, &eps2, h2);
        failed = lib->lasthalf(&unit, &nj, &ni, index, xi, vi, &eps2, h2, a, j, pot) != 0;
        for (int i = 0; !failed && i < ni; ++i)
            for (int k = 0; k < 3; ++k) {
                acc[first + i][k] = a[i][k];
                jerk[first + i][k] = j[i][k];
            }
    }
    free(index);
    free(xi);
    free(vi);
    free(aold);
    free(jold);
    free(a);
    free(j);
    free(pot);
    free(h2);
    return failed;
}

static double norm(const double *v)
{
    return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

/* Fourth-order Hermite with block time steps (Makino & Aarseth 1992) from t = 0 to t_end;
 * returns |dE/E| (NaN on a failure). */
double g6_hermite(g6lib *lib, const particles *initial, double eps2, double eta, double t_end,
                  size_t *steps)
{
    const int n = initial->n, unit = 1;
    const double dt_max = 1.0 / 16;
    particles p;
    particles_alloc(&p, n);
    memcpy(p.x, initial->x, (size_t)n * sizeof *p.x);
    memcpy(p.v, initial->v, (size_t)n * sizeof *p.v);
    memcpy(p.m, initial->m, (size_t)n * sizeof(double));
    memcpy(p.id, initial->id, (size_t)n * sizeof(int));
    double *dt = calloc((size_t)n, sizeof(double));
    int *list = calloc((size_t)n, sizeof(int));
    double(*xp)[3] = calloc((size_t)n, sizeof *xp), (*vp)[3] = calloc((size_t)n, sizeof *vp);
    double(*a1)[3] = calloc((size_t)n, sizeof *a1), (*j1)[3] = calloc((size_t)n, sizeof *j1);
    const double e0 = g6_energy(&p, eps2);
    double result = NAN;
    if (lib->open((int *)&unit) != 0)
        goto done;
    for (int i = 0; i < n; ++i)
        if (g6_set_j(lib, unit, i, &p, i) != 0)
            goto done;
    for (int i = 0; i < n; ++i) {
        list[i] = i;
        memcpy(xp[i], p.x[i], sizeof xp[i]);
        memcpy(vp[i], p.v[i], sizeof vp[i]);
    }
    if (forces(lib, unit, &p, list, n, xp, vp, 0.0, eps2, p.a, p.jerk) != 0)
        goto done;
    for (int i = 0; i < n; ++i) {
        const double guess = 0.01 * norm(p.a[i]) / norm(p.jerk[i]);
        dt[i] = dt_max;
        while (dt[i] > guess)
            dt[i] /= 2;
        if (g6_set_j(lib, unit, i, &p, i) != 0)
            goto done;
    }
    *steps = 0;
    for (;;) {
        double t_next = INFINITY;
        for (int i = 0; i < n; ++i)
            t_next = fmin(t_next, p.t[i] + dt[i]);
        if (t_next > t_end)
            break;
        int count = 0;
        for (int i = 0; i < n; ++i)
            if (p.t[i] + dt[i] == t_next)
                list[count++] = i;
        for (int q = 0; q < count; ++q)
            g6_host_predict(&p, list[q], t_next, xp[q], vp[q]);
        if (forces(lib, unit, &p, list, count, xp, vp, t_next, eps2, a1, j1) != 0)
            goto done;
        for (int q = 0; q < count; ++q) {
            const int i = list[q];
            const double h = dt[i];
            double a2[3], a3[3];
            for (int k = 0; k < 3; ++k) {
                a2[k] =
                    (-6 * (p.a[i][k] - a1[q][k]) - h * (4 * p.jerk[i][k] + 2 * j1[q][k])) / (h * h);
                a3[k] =
                    (12 * (p.a[i][k] - a1[q][k]) + 6 * h * (p.jerk[i][k] + j1[q][k])) / (h * h * h);
                p.x[i][k] = xp[q][k] + h * h * h * h * (a2[k] / 24 + h * a3[k] / 120);
                p.v[i][k] = vp[q][k] + h * h * h * (a2[k] / 6 + h * a3[k] / 24);
                p.a[i][k] = a1[q][k];
                p.jerk[i][k] = j1[q][k];
                a2[k] += h * a3[k]; /* the second derivative at the new time */
            }
            p.t[i] = t_next;
            const double aa = norm(p.a[i]), jj = norm(p.jerk[i]), a2n = norm(a2), a3n = norm(a3);
            const double wanted = sqrt(eta * (aa * a2n + jj * jj) / (jj * a3n + a2n * a2n));
            double next = h;
            while (next > wanted)
                next /= 2;
            if (next == h && wanted > 2 * h && fmod(t_next, 2 * h) == 0 && 2 * h <= dt_max)
                next = 2 * h;
            dt[i] = next;
            if (g6_set_j(lib, unit, i, &p, i) != 0)
                goto done;
        }
        ++*steps;
    }
    result = fabs((g6_energy(&p, eps2) - e0) / e0);
done:
    lib->close((int *)&unit);
    particles_free(&p);
    free(dt);
    free(list);
    free(xp);
    free(vp);
    free(a1);
    free(j1);
    return result;
}
