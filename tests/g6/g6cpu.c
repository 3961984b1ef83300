/*
 * The comparison g6 library (issue #18, deliverable 3): the GRAPE-6 API of src/sapporo/sapporo.c
 * (same symbols, same conventions, same environment variables FORCEKIT_G6_NPIPES and
 * FORCEKIT_G6_NEIGHBOURS) computed on the CPU in double precision with the plain loops of
 * g6_reference.c. Correct and slow on purpose: what libsapporo is measured against, in the tests
 * and with AMUSE's workers relinked against it. Built as its own libsapporo.so in a directory of
 * its own (tests/g6cpu/), so that a client links either one with -lsapporo.
 *
 * The predictor is the fourth-order Taylor series with snap (x: dt^4 / 24 for snap, v: dt^3 / 6),
 * unlike AMUSE's lib/g6lib emulator, whose velocity predictor has the wrong powers.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "g6_reference.h"

#define G6_EXPORT __attribute__((visibility("default")))
#define G6_MAX_IDS 16

typedef struct unit {
    g6ref_source *slots;
    unsigned char *set;
    size_t capacity, highest;
    double ti;
    int npipes, neighbor_capacity;
    /* the last firsthalf's results */
    int ni, computed, failed;
    double *acc, *jerk, *pot;
    int *nearest;
    int *lists;    /* ni * neighbor_capacity */
    size_t *found; /* ni */
    int have_lists;
} unit;

/* Open units under the IDs g6_open_ was given (any int); a call whose ID names none reaches the
 * only open unit, as with Sapporo, which ignores the ID (libsapporo's rule, src/sapporo/sapporo.c).
 */
static unit *units[G6_MAX_IDS];
static int keys[G6_MAX_IDS];

static int slot_of_id(int id)
{
    for (int k = 0; k < G6_MAX_IDS; ++k)
        if (units[k] && keys[k] == id)
            return k;
    return -1;
}

static int slot_for_call(const int *id)
{
    if (!id)
        return -1;
    const int exact = slot_of_id(*id);
    if (exact >= 0)
        return exact;
    int only = -1, open = 0;
    for (int k = 0; k < G6_MAX_IDS; ++k)
        if (units[k]) {
            only = k;
            ++open;
        }
    return open == 1 ? only : -1;
}

static int env_int(const char *name, int fallback)
{
    const char *text = getenv(name);
    if (!text || !*text)
        return fallback;
    const long value = strtol(text, NULL, 10);
    return value > 0 && value < (1 << 24) ? (int)value : fallback;
}

static unit *unit_of(const int *id)
{
    const int slot = slot_for_call(id);
    return slot >= 0 ? units[slot] : NULL;
}

G6_EXPORT int get_device_count(void)
{
    return 1;
}

G6_EXPORT int g6_open_(int *id)
{
    if (!id)
        return 1;
    if (slot_of_id(*id) >= 0)
        return 0;
    int free_slot = -1;
    for (int k = G6_MAX_IDS; k-- > 0;)
        if (!units[k])
            free_slot = k;
    if (free_slot < 0)
        return 1;
    unit *u = calloc(1, sizeof *u);
    if (!u)
        return 1;
    u->npipes = env_int("FORCEKIT_G6_NPIPES", 256);
    u->neighbor_capacity = env_int("FORCEKIT_G6_NEIGHBOURS", 256);
    const size_t n = (size_t)u->npipes;
    u->acc = calloc(3 * n, sizeof(double));
    u->jerk = calloc(3 * n, sizeof(double));
    u->pot = calloc(n, sizeof(double));
    u->nearest = calloc(n, sizeof(int));
    u->lists = calloc(n * (size_t)u->neighbor_capacity, sizeof(int));
    u->found = calloc(n, sizeof(size_t));
    if (!u->acc || !u->jerk || !u->pot || !u->nearest || !u->lists || !u->found) {
        free(u);
        return 1;
    }
    units[free_slot] = u;
    keys[free_slot] = *id;
    return 0;
}

G6_EXPORT int g6_close_(int *id)
{
    const int slot = id ? slot_of_id(*id) : -1; /* only its own unit, as libsapporo's */
    if (slot < 0)
        return 1;
    unit *u = units[slot];
    free(u->slots);
    free(u->set);
    free(u->acc);
    free(u->jerk);
    free(u->pot);
    free(u->nearest);
    free(u->lists);
    free(u->found);
    free(u);
    units[slot] = NULL;
    return 0;
}

G6_EXPORT int g6_npipes_(void)
{
    return env_int("FORCEKIT_G6_NPIPES", 256);
}

G6_EXPORT int g6_set_tunit_(int *value)
{
    (void)value;
    return 0;
}

G6_EXPORT int g6_set_xunit_(int *value)
{
    (void)value;
    return 0;
}

G6_EXPORT int g6_set_ti_(int *id, double *ti)
{
    unit *u = unit_of(id);
    if (!u || !ti)
        return 1;
    u->ti = *ti;
    return 0;
}

G6_EXPORT int g6_set_j_particle_(int *id, int *address, int *index, double *tj, double *dtj,
                                 double *mass, double k18[3], double j6[3], double a2[3],
                                 double v[3], double x[3])
{
    (void)dtj;
    unit *u = unit_of(id);
    if (!u || !address || *address < 0 || !index || !tj || !mass)
        return 1;
    const size_t slot = (size_t)*address;
    if (slot >= u->capacity) {
        size_t grown = u->capacity ? u->capacity : 1024;
        while (grown <= slot)
            grown *= 2;
        g6ref_source *slots = realloc(u->slots, grown * sizeof *slots);
        if (!slots)
            return 1;
        u->slots = slots;
        unsigned char *set = realloc(u->set, grown);
        if (!set)
            return 1;
        memset(set + u->capacity, 0, grown - u->capacity);
        u->set = set;
        u->capacity = grown;
    }
    g6ref_source *s = &u->slots[slot];
    s->id = *index;
    s->t = *tj;
    s->mass = *mass;
    int finite = isfinite(*tj) && isfinite(*mass);
    for (int k = 0; k < 3; ++k) {
        s->x[k] = x[k];
        s->v[k] = v[k];
        s->a[k] = 2.0 * a2[k];
        s->jerk[k] = 6.0 * j6[k];
        s->snap[k] = 18.0 * k18[k];
        finite = finite && isfinite(x[k]) && isfinite(v[k]) && isfinite(a2[k]) && isfinite(j6[k]) &&
                 isfinite(k18[k]);
    }
    if (!finite)
        return 1;
    u->set[slot] = 1;
    if (slot + 1 > u->highest)
        u->highest = slot + 1;
    return 0;
}

G6_EXPORT void g6calc_firsthalf_(int *id, int *nj, int *ni, int index[], double xi[][3],
                                 double vi[][3], double aold[][3], double j6old[][3],
                                 double phiold[], double *eps2, double h2[])
{
    (void)aold;
    (void)j6old;
    (void)phiold;
    unit *u = unit_of(id);
    if (!u)
        return;
    u->computed = 0;
    u->failed = 1;
    u->have_lists = 0;
    if (!nj || !ni || *ni < 1 || *ni > u->npipes || *nj < 1 || (size_t)*nj > u->highest || !eps2 ||
        !(*eps2 >= 0))
        return;
    const size_t n = (size_t)*nj;
    for (size_t j = 0; j < n; ++j)
        if (!u->set[j])
            return;
    double *px = malloc(3 * n * sizeof(double)), *pv = malloc(3 * n * sizeof(double));
    double *mass = malloc(n * sizeof(double));
    int *ids = malloc(n * sizeof(int));
    if (!px || !pv || !mass || !ids) {
        free(px);
        free(pv);
        free(mass);
        free(ids);
        return;
    }
    for (size_t j = 0; j < n; ++j) {
        g6ref_predict(&u->slots[j], u->ti, px + 3 * j, pv + 3 * j);
        mass[j] = u->slots[j].mass;
        ids[j] = u->slots[j].id;
    }
    g6ref_evaluate((size_t)*ni, index, &xi[0][0], &vi[0][0], n, ids, px, pv, mass, *eps2, u->acc,
                   u->jerk, u->pot, u->nearest);
    if (h2) {
        for (int i = 0; i < *ni; ++i)
            u->found[i] = g6ref_neighbors(index[i], xi[i], h2[i], n, ids, px,
                                          u->lists + (size_t)i * (size_t)u->neighbor_capacity,
                                          (size_t)u->neighbor_capacity);
        u->have_lists = 1;
    }
    free(px);
    free(pv);
    free(mass);
    free(ids);
    u->ni = *ni;
    u->computed = 1;
    u->failed = 0;
}

static int lasthalf(int *id, double acc[][3], double jerk[][3], double pot[], int *nearest)
{
    unit *u = unit_of(id);
    if (!u || !u->computed || u->failed)
        return 1;
    u->computed = 0;
    int finite = 1;
    for (int i = 0; i < u->ni; ++i) {
        for (int k = 0; k < 3; ++k) {
            if (acc)
                acc[i][k] = u->acc[3 * i + k];
            if (jerk)
                jerk[i][k] = u->jerk[3 * i + k];
            finite = finite && isfinite(u->acc[3 * i + k]) && isfinite(u->jerk[3 * i + k]);
        }
        if (pot)
            pot[i] = u->pot[i];
        if (nearest)
            nearest[i] = u->nearest[i];
        finite = finite && isfinite(u->pot[i]);
    }
    return finite ? 0 : 1;
}

G6_EXPORT int g6calc_lasthalf_(int *id, int *nj, int *ni, int index[], double xi[][3],
                               double vi[][3], double *eps2, double h2[], double acc[][3],
                               double jerk[][3], double pot[])
{
    (void)nj;
    (void)ni;
    (void)index;
    (void)xi;
    (void)vi;
    (void)eps2;
    (void)h2;
    return lasthalf(id, acc, jerk, pot, NULL);
}

G6_EXPORT int g6calc_lasthalf2_(int *id, int *nj, int *ni, int index[], double xi[][3],
                                double vi[][3], double *eps2, double h2[], double acc[][3],
                                double jerk[][3], double pot[], int *nearest)
{
    (void)nj;
    (void)ni;
    (void)index;
    (void)xi;
    (void)vi;
    (void)eps2;
    (void)h2;
    return lasthalf(id, acc, jerk, pot, nearest);
}

G6_EXPORT int g6_read_neighbour_list_(int *id)
{
    unit *u = unit_of(id);
    if (!u || !u->have_lists)
        return -1;
    for (int i = 0; i < u->ni; ++i)
        if (u->found[i] > (size_t)u->neighbor_capacity)
            return 1;
    return 0;
}

G6_EXPORT int g6_get_neighbour_list_(int *id, int *ipipe, int *maxlength, int *n_neighbours,
                                     int neighbour_list[])
{
    unit *u = unit_of(id);
    if (!u || !ipipe || !maxlength || !n_neighbours)
        return -1;
    *n_neighbours = 0;
    if (!u->have_lists || *ipipe < 0 || *ipipe >= u->ni)
        return -1;
    size_t limit = *maxlength > 0 ? (size_t)*maxlength : 0;
    if (limit > (size_t)u->neighbor_capacity)
        limit = (size_t)u->neighbor_capacity;
    const size_t found = u->found[*ipipe];
    const size_t copied = found < limit ? found : limit;
    memcpy(neighbour_list, u->lists + (size_t)*ipipe * (size_t)u->neighbor_capacity,
           copied * sizeof(int));
    *n_neighbours = (int)copied;
    return found > copied ? 1 : 0;
}

G6_EXPORT int g6_initialize_jp_buffer_(int *id, int *size)
{
    (void)id;
    (void)size;
    return 0;
}

G6_EXPORT int g6_flush_jp_buffer_(int *id)
{
    (void)id;
    return 0;
}

G6_EXPORT int g6_reset_(int *id)
{
    (void)id;
    return 0;
}

G6_EXPORT int g6_reset_fofpga_(int *id)
{
    (void)id;
    return 0;
}
