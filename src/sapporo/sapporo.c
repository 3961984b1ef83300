/*
 * libsapporo: the GRAPE-6 API (libg6, as Sapporo implements it) over forcekit's targets against
 * sources (fk_sources, src/core/sources/sources.c), on any OpenCL device (issue #18). A thin
 * adapter: it turns GRAPE's calling conventions into fk_sources calls and keeps nothing but the
 * table of open g6 IDs (one context, one engine and the slots set so far per ID).
 *
 * Calling convention: the Fortran one (trailing underscore, every argument by pointer), which C
 * and C++ clients (AMUSE's ph4 through its own g6_* wrappers, phiGRAPE in Fortran 77) both link
 * against. Arrays of three are [i][3] in C, (3, i) in Fortran. g6_set_j_particle_ takes GRAPE's
 * scaled derivatives (k18 = snap/18, j6 = jerk/6, a2 = acc/2) and multiplies them back.
 *
 * Errors: the library never prints unless FORCEKIT_G6_VERBOSE is set (then one line per failure
 * on stderr, since a g6 client has no other way to read the detail); the functions that return int
 * return nonzero, and g6calc_firsthalf_'s failure (it returns nothing) is returned by the
 * lasthalf that follows, as GRAPE reported overflow there.
 *
 * Environment (read at g6_open_): FORCEKIT_G6_DEVICE (a device selector, as FORCEKIT_DEVICE;
 * default the first GPU, else the first CPU), FORCEKIT_G6_ACCUM (default ref),
 * FORCEKIT_G6_POSITIONS (ds or float; default ds), FORCEKIT_G6_NPIPES (targets per call, default
 * 256), FORCEKIT_G6_NEIGHBOURS (IDs kept per neighbour list, default 256), FORCEKIT_G6_CAPACITY
 * (initial source slots, default 16384; the engine grows to the largest address set),
 * FORCEKIT_G6_VERBOSE.
 *
 * GRAPE-6's scale hints (aold, j6old, phiold) scale the sums of the fixed64 accumulator
 * (FORCEKIT_G6_ACCUM=fixed64), per target and component, as GRAPE-6 scaled its fixed-point sums;
 * a term beyond the range makes g6calc_lasthalf_ return nonzero, and the client retries with the
 * forces it got as better hints. The other accumulators ignore them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forcekit/forcekit.h"

#if defined(__GNUC__)
#define G6_EXPORT __attribute__((visibility("default")))
#else
#define G6_EXPORT
#endif

#define G6_MAX_IDS 16
#define G6_DEFAULT_NPIPES 256
#define G6_DEFAULT_CAPACITY 16384
#define G6_MAX_PIPES 4096 /* FORCEKIT_G6_NPIPES's upper bound (hints go on the stack) */

typedef struct g6_unit {
    fk_context *context;
    fk_sources *engine;
    size_t engine_capacity;
    fk_source *slots; /* the slots as set (the engine is rebuilt from them when it grows) */
    unsigned char *set;
    size_t slot_capacity, highest; /* highest: one past the largest address set */
    double ti;
    int npipes;
    int started;       /* a firsthalf succeeded and its lasthalf is due */
    int pending_error; /* firsthalf failed: the next lasthalf returns it */
    int have_lists;
} g6_unit;

/* The only global state: the open g6 IDs, up to G6_MAX_IDS at once, each unit under the ID
 * g6_open_ was given (any int: GRAPE-6's cluster IDs were board numbers, and Sapporo ignores the
 * argument altogether). */
static g6_unit *g6_units[G6_MAX_IDS];
static int g6_keys[G6_MAX_IDS];

static int slot_of_id(int id)
{
    for (int k = 0; k < G6_MAX_IDS; ++k)
        if (g6_units[k] && g6_keys[k] == id)
            return k;
    return -1;
}

/* The unit a call's ID names: the one opened under that ID, else, when exactly one is open, that
 * one. Sapporo keeps one device for the process and ignores the ID of every call; clients rely on
 * it: ph4's standalone program opens whatever its uninitialised jdata::gpu_id holds and then calls
 * with its MPI rank. Every call that uses a unit takes this rule (set_ti, set_j_particle, the
 * calc halves, the neighbour lists: with one unit open they can only mean that one, and with two
 * or more an unknown ID is refused); g6_close_ does not: it ends only the unit of its own ID. */
static int slot_for_call(int id)
{
    const int exact = slot_of_id(id);
    if (exact >= 0)
        return exact;
    int only = -1, open = 0;
    for (int k = 0; k < G6_MAX_IDS; ++k)
        if (g6_units[k]) {
            only = k;
            ++open;
        }
    return open == 1 ? only : -1;
}

static int verbose(void)
{
    const char *v = getenv("FORCEKIT_G6_VERBOSE");
    return v && *v && strcmp(v, "0") != 0;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int
report(const g6_unit *unit, const char *format, ...)
{
    if (verbose()) {
        va_list args;
        va_start(args, format);
        fputs("forcekit libsapporo: ", stderr);
        vfprintf(stderr, format, args);
        va_end(args);
        if (unit && unit->context && *fk_context_last_error(unit->context))
            fprintf(stderr, ": %s", fk_context_last_error(unit->context));
        fputc('\n', stderr);
    }
    return 1;
}

static long env_long(const char *name, long fallback, long minimum, long maximum)
{
    const char *text = getenv(name);
    if (!text || !*text)
        return fallback;
    char *end = NULL;
    const long value = strtol(text, &end, 10);
    if (*end != '\0' || value < minimum || value > maximum) {
        report(NULL, "%s=%s is not an integer in %ld .. %ld; using %ld", name, text, minimum,
               maximum, fallback);
        return fallback;
    }
    return value;
}

static int npipes_setting(void)
{
    return (int)env_long("FORCEKIT_G6_NPIPES", G6_DEFAULT_NPIPES, 1, G6_MAX_PIPES);
}

static g6_unit *unit_of(const int *id)
{
    const int slot = id ? slot_for_call(*id) : -1;
    if (slot < 0) {
        report(NULL, "g6 ID %d is not open (and not the only unit open)", id ? *id : -1);
        return NULL;
    }
    return g6_units[slot];
}

/* An engine of at least `needed` slots, with every slot set so far. */
static int engine_ensure(g6_unit *unit, size_t needed)
{
    if (unit->engine && unit->engine_capacity >= needed)
        return 0;
    size_t capacity = unit->engine_capacity ? unit->engine_capacity : 1;
    while (capacity < needed)
        capacity *= 2;
    fk_sources_config config = FK_CONFIG_INIT(fk_sources_config);
    config.capacity = capacity;
    config.max_targets = (size_t)unit->npipes;
    config.accum = getenv("FORCEKIT_G6_ACCUM");
    if (config.accum && !*config.accum)
        config.accum = NULL;
    const char *positions = getenv("FORCEKIT_G6_POSITIONS");
    if (positions && *positions && fk_positions_find(positions, &config.positions) != FK_OK)
        return report(unit, "FORCEKIT_G6_POSITIONS=%s: use ds or float", positions);
    config.neighbor_capacity = (size_t)env_long("FORCEKIT_G6_NEIGHBOURS", 256, 1, 1 << 20);
    fk_sources *engine = NULL;
    fk_status status = fk_sources_create(unit->context, &config, &engine);
    if (status != FK_OK)
        return report(unit, "cannot create the engine (%zu slots): %s", capacity,
                      fk_status_string(status));
    for (size_t slot = 0; slot < unit->highest; ++slot)
        if (unit->set[slot] && fk_sources_set(engine, slot, &unit->slots[slot]) != FK_OK) {
            fk_sources_destroy(engine);
            return report(unit, "cannot copy slot %zu into the grown engine", slot);
        }
    fk_sources_destroy(unit->engine);
    unit->engine = engine;
    unit->engine_capacity = capacity;
    return 0;
}

static void unit_free(g6_unit *unit)
{
    if (!unit)
        return;
    if (unit->started)
        fk_sources_finish(unit->engine, NULL);
    fk_sources_destroy(unit->engine);
    fk_context_destroy(unit->context);
    free(unit->slots);
    free(unit->set);
    free(unit);
}

G6_EXPORT int get_device_count(void)
{
    fk_device_info *devices = NULL;
    size_t count = 0;
    if (fk_devices_list(&devices, &count) != FK_OK)
        return 0;
    fk_devices_free(devices);
    return (int)count;
}

G6_EXPORT int g6_open_(int *id)
{
    if (!id)
        return report(NULL, "g6_open: no ID");
    if (slot_of_id(*id) >= 0)
        return 0; /* already open: GRAPE's g6_open is idempotent for the clients' purposes */
    int free_slot = -1;
    for (int k = G6_MAX_IDS; k-- > 0;)
        if (!g6_units[k])
            free_slot = k;
    if (free_slot < 0)
        return report(NULL, "g6_open: %d IDs are open already; close one first", G6_MAX_IDS);
    g6_unit *unit = calloc(1, sizeof *unit);
    if (!unit)
        return report(NULL, "g6_open: out of memory");
    unit->npipes = npipes_setting();
    fk_context_config config = FK_CONFIG_INIT(fk_context_config);
    config.device = getenv("FORCEKIT_G6_DEVICE");
    /* The GRAPE-6 API reports no device time, and a profiled queue costs NVIDIA's driver host
     * time on every block step (docs/performance.md). */
    config.device_timing = FK_DEVICE_TIMING_OFF;
    fk_status status = fk_context_create(&config, &unit->context);
    if (status != FK_OK) {
        report(unit, "g6_open: no OpenCL context (%s)", fk_status_string(status));
        unit_free(unit);
        return 1;
    }
    size_t initial = (size_t)env_long("FORCEKIT_G6_CAPACITY", G6_DEFAULT_CAPACITY, 1, 1L << 28);
    if (engine_ensure(unit, initial) != 0) {
        unit_free(unit);
        return 1;
    }
    g6_units[free_slot] = unit;
    g6_keys[free_slot] = *id;
    return 0;
}

G6_EXPORT int g6_close_(int *id)
{
    /* Only the unit opened under this ID: the fallback to the only open unit (slot_for_call)
     * serves the calls of a client whose ID was never set, but a close that reached another
     * unit would end a unit its owner still uses (g6_open_(0); g6_open_(1); g6_close_(1);
     * g6_close_(1) closed 0; so did closing the ID of an open that had failed). An ID that is
     * not open, or already closed, is an error and touches nothing. */
    const int slot = id ? slot_of_id(*id) : -1;
    if (slot < 0)
        return report(NULL, "g6_close: ID %d is not open", id ? *id : -1);
    unit_free(g6_units[slot]);
    g6_units[slot] = NULL;
    return 0;
}

G6_EXPORT int g6_npipes_(void)
{
    return npipes_setting();
}

/* GRAPE-6's units of its fixed-point formats: nothing to set here (every format is floating or
 * self-scaled). Fortran passes INTEGER. */
G6_EXPORT int g6_set_tunit_(int *unit)
{
    (void)unit;
    return 0;
}

G6_EXPORT int g6_set_xunit_(int *unit)
{
    (void)unit;
    return 0;
}

G6_EXPORT int g6_set_ti_(int *id, double *ti)
{
    g6_unit *unit = unit_of(id);
    if (!unit || !ti)
        return 1;
    unit->ti = *ti;
    return 0;
}

G6_EXPORT int g6_set_j_particle_(int *id, int *address, int *index, double *tj, double *dtj,
                                 double *mass, double k18[3], double j6[3], double a2[3],
                                 double v[3], double x[3])
{
    (void)dtj;
    g6_unit *unit = unit_of(id);
    if (!unit)
        return 1;
    if (!address || !index || !tj || !mass || !k18 || !j6 || !a2 || !v || !x)
        return report(unit, "g6_set_j_particle: a NULL argument");
    if (*address < 0)
        return report(unit, "g6_set_j_particle: address %d < 0", *address);
    if (unit->started)
        return report(unit, "g6_set_j_particle between firsthalf and lasthalf");
    const size_t slot = (size_t)*address;
    if (slot >= unit->slot_capacity) {
        size_t grown = unit->slot_capacity ? unit->slot_capacity : 1024;
        while (grown <= slot)
            grown *= 2;
        fk_source *slots = realloc(unit->slots, grown * sizeof *slots);
        if (!slots)
            return report(unit, "g6_set_j_particle: out of memory");
        unit->slots = slots;
        unsigned char *set = realloc(unit->set, grown);
        if (!set)
            return report(unit, "g6_set_j_particle: out of memory");
        memset(set + unit->slot_capacity, 0, grown - unit->slot_capacity);
        unit->set = set;
        unit->slot_capacity = grown;
    }
    fk_source source = {.id = *index, .t = *tj, .mass = *mass};
    for (int k = 0; k < 3; ++k) {
        source.x[k] = x[k];
        source.v[k] = v[k];
        source.a[k] = 2.0 * a2[k];
        source.jerk[k] = 6.0 * j6[k];
        source.snap[k] = 18.0 * k18[k];
    }
    if (slot < unit->engine_capacity) {
        fk_status status = fk_sources_set(unit->engine, slot, &source);
        if (status != FK_OK)
            return report(unit, "g6_set_j_particle (address %d, index %d): %s", *address, *index,
                          fk_status_string(status));
    }
    /* Beyond the engine's capacity the slot waits here: the next firsthalf grows the engine. */
    unit->slots[slot] = source;
    unit->set[slot] = 1;
    if (slot + 1 > unit->highest)
        unit->highest = slot + 1;
    return 0;
}

G6_EXPORT void g6calc_firsthalf_(int *id, int *nj, int *ni, int index[], double xi[][3],
                                 double vi[][3], double aold[][3], double j6old[][3],
                                 double phiold[], double *eps2, double h2[])
{
    g6_unit *unit = unit_of(id);
    if (!unit)
        return;
    unit->pending_error = 0;
    unit->have_lists = 0;
    if (unit->started) { /* a firsthalf without its lasthalf: drop the old one */
        fk_sources_finish(unit->engine, NULL);
        unit->started = 0;
    }
    if (!nj || !ni || !index || !xi || !vi || !eps2) {
        unit->pending_error = report(unit, "g6calc_firsthalf: a NULL argument");
        return;
    }
    if (*ni < 1 || *ni > unit->npipes) {
        unit->pending_error =
            report(unit, "g6calc_firsthalf: ni = %d; 1 .. %d (npipes) allowed", *ni, unit->npipes);
        return;
    }
    if (*nj < 1 || (size_t)*nj > unit->highest) {
        unit->pending_error =
            report(unit, "g6calc_firsthalf: nj = %d, but only addresses below %zu were set", *nj,
                   unit->highest);
        return;
    }
    /* Every slot set so far must fit: a grown engine is refilled from all of them. */
    if (engine_ensure(unit, unit->highest) != 0) {
        unit->pending_error = 1;
        return;
    }
    /* GRAPE-6's scale hints (aold = acc/2, j6old = jerk/6, phiold), multiplied back: the fixed64
     * accumulator scales each sum from them; the others ignore them. */
    double acc_hint[3 * G6_MAX_PIPES], jerk_hint[3 * G6_MAX_PIPES], pot_hint[G6_MAX_PIPES];
    const int hints = aold && j6old && phiold && *ni <= G6_MAX_PIPES;
    for (int i = 0; hints && i < *ni; ++i) {
        for (int k = 0; k < 3; ++k) {
            acc_hint[3 * i + k] = 2.0 * aold[i][k];
            jerk_hint[3 * i + k] = 6.0 * j6old[i][k];
        }
        pot_hint[i] = phiold[i];
    }
    fk_targets targets = {.count = (size_t)*ni,
                          .sources = (size_t)*nj,
                          .time = unit->ti,
                          .eps2 = *eps2,
                          .id = index,
                          .position = &xi[0][0],
                          .velocity = &vi[0][0],
                          .h2 = h2,
                          .acc_hint = hints ? acc_hint : NULL,
                          .jerk_hint = hints ? jerk_hint : NULL,
                          .pot_hint = hints ? pot_hint : NULL};
    fk_status status = fk_sources_start(unit->engine, &targets);
    if (status != FK_OK) {
        unit->pending_error = report(unit, "g6calc_firsthalf: %s", fk_status_string(status));
        return;
    }
    unit->started = 1;
    unit->have_lists = h2 != NULL;
}

static int lasthalf(int *id, int *ni, double acc[][3], double jerk[][3], double pot[], int *nearest)
{
    g6_unit *unit = unit_of(id);
    if (!unit)
        return 1;
    if (unit->pending_error) {
        unit->pending_error = 0;
        return 1;
    }
    if (!unit->started)
        return report(unit, "g6calc_lasthalf without a firsthalf");
    unit->started = 0;
    (void)ni; /* the firsthalf's ni holds */
    fk_target_results results = {.acc = acc ? &acc[0][0] : NULL,
                                 .jerk = jerk ? &jerk[0][0] : NULL,
                                 .pot = pot,
                                 .nearest = nearest};
    fk_status status = fk_sources_finish(unit->engine, &results);
    if (status != FK_OK) {
        unit->have_lists = 0;
        return report(unit, "g6calc_lasthalf: %s", fk_status_string(status));
    }
    return 0;
}

G6_EXPORT int g6calc_lasthalf_(int *id, int *nj, int *ni, int index[], double xi[][3],
                               double vi[][3], double *eps2, double h2[], double acc[][3],
                               double jerk[][3], double pot[])
{
    (void)nj;
    (void)index;
    (void)xi;
    (void)vi;
    (void)eps2;
    (void)h2;
    return lasthalf(id, ni, acc, jerk, pot, NULL);
}

G6_EXPORT int g6calc_lasthalf2_(int *id, int *nj, int *ni, int index[], double xi[][3],
                                double vi[][3], double *eps2, double h2[], double acc[][3],
                                double jerk[][3], double pot[], int *nearest)
{
    (void)nj;
    (void)index;
    (void)xi;
    (void)vi;
    (void)eps2;
    (void)h2;
    return lasthalf(id, ni, acc, jerk, pot, nearest);
}

/* 0 when the lists of the last calculation are complete; 1 when some list held more IDs than
 * FORCEKIT_G6_NEIGHBOURS (GRAPE's neighbour memory overflow: the client shrinks h2 and retries);
 * -1 without a finished calculation with radii. */
G6_EXPORT int g6_read_neighbour_list_(int *id)
{
    g6_unit *unit = unit_of(id);
    if (!unit)
        return -1;
    if (!unit->have_lists || unit->started)
        return -1;
    for (size_t i = 0;; ++i) {
        const int *ids;
        size_t count;
        int overflow = 0;
        if (fk_sources_neighbors(unit->engine, i, &ids, &count, &overflow) != FK_OK)
            break; /* past the last target */
        if (overflow)
            return 1;
    }
    return 0;
}

/* The sorted IDs of target ipipe's neighbours, at most maxlength of them; returns 1 when there are
 * more than maxlength (or more than the engine kept), -1 on an error, else 0. */
G6_EXPORT int g6_get_neighbour_list_(int *id, int *ipipe, int *maxlength, int *n_neighbours,
                                     int neighbour_list[])
{
    g6_unit *unit = unit_of(id);
    if (!unit || !ipipe || !maxlength || !n_neighbours || (*maxlength > 0 && !neighbour_list))
        return -1;
    *n_neighbours = 0;
    if (!unit->have_lists || *ipipe < 0)
        return -1;
    const int *ids;
    size_t count;
    int overflow = 0;
    if (fk_sources_neighbors(unit->engine, (size_t)*ipipe, &ids, &count, &overflow) != FK_OK) {
        report(unit, "g6_get_neighbour_list: pipe %d", *ipipe);
        return -1;
    }
    fk_sources_config config;
    fk_sources_get_config(unit->engine, &config);
    size_t limit = *maxlength > 0 ? (size_t)*maxlength : 0;
    if (limit > config.neighbor_capacity) /* the engine kept no more than that */
        limit = config.neighbor_capacity;
    const size_t copied = count < limit ? count : limit;
    if (copied > 0) /* neighbour_list may be NULL when maxlength is 0 */
        memcpy(neighbour_list, ids, copied * sizeof(int));
    *n_neighbours = (int)copied;
    return (overflow || count > copied) ? 1 : 0;
}

/* GRAPE-6 housekeeping: nothing to do on an OpenCL device. */
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
