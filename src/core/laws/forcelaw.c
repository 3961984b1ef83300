/* The host side of the force laws: their options (validated, defaults applied, packed for the
 * device), typed pair tables, per-particle auxiliary data, exclusions on the fly (slots in
 * body_aux) and afterwards (partner lists for the device's fk_subtract_exclusions). The device side
 * is cl/forces/; the data layout is described in cl/forces/molecular.clh. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "common/text.h"

static int is_molecular(const fk_kernel_desc *kernel)
{
    return kernel->uses_table;
}

/* ---------------------------------------------------------------------------------------------- */
/* Options */

/* The law's named parameters (fk_kernel_info.parameters): each value finite, 0 replaced by the
 * default, any other value in range; values no parameter names must be 0. */
static fk_status resolve_parameters(const fk_kernel_desc *kernel, const double *in, double *out,
                                    char *message, size_t message_size)
{
    const char *name = kernel->info.name;
    unsigned named[FK_LAW_PARAMETERS] = {0};
    for (unsigned p = 0; p < kernel->info.parameter_count; ++p) {
        const fk_kernel_parameter *parameter = &kernel->info.parameters[p];
        for (unsigned k = parameter->first; k < parameter->first + parameter->count; ++k) {
            named[k] = 1;
            const double value = in[k];
            /* the device takes them in float */
            if (!isfinite(value) || fabs(value) > FLT_MAX) {
                fk_format_message(message, message_size, "%s: %s must be a finite float", name,
                                  parameter->name);
                return FK_ERR_INVALID_ARGUMENT;
            }
            if (value == 0) {
                out[k] = parameter->default_value;
                continue;
            }
            if (value < parameter->minimum ||
                (value == parameter->minimum && !parameter->minimum_inclusive)) {
                fk_format_message(message, message_size, "%s: %s = %g must be %s %g (0: %g)", name,
                                  parameter->name, value, parameter->minimum_inclusive ? ">=" : ">",
                                  parameter->minimum, parameter->default_value);
                return FK_ERR_INVALID_ARGUMENT;
            }
            out[k] = value;
        }
    }
    for (unsigned k = 0; k < FK_LAW_PARAMETERS; ++k)
        if (!named[k] && in[k] != 0) {
            if (kernel->info.parameter_count == 0)
                fk_format_message(message, message_size,
                                  "%s has no named parameters (dielectric, kappa, ...)", name);
            else
                fk_format_message(message, message_size,
                                  "%s's parameters (%s, ...) do not take value %u of the "
                                  "parameters array",
                                  name, kernel->info.parameters[0].name, k + 1);
            return FK_ERR_INVALID_ARGUMENT;
        }
    return FK_OK;
}

double fk__skin_resolve(double skin, double cutoff)
{
    if (skin > 0)
        return skin;
    return skin == 0 ? FK_DEFAULT_SKIN_FRACTION * cutoff : 0.0;
}

fk_status fk__physics_resolve(const fk_kernel_desc *kernel, const fk_physics *in, fk__physics *out,
                              char *message, size_t message_size)
{
    static const fk_physics none = {0};
    if (!in)
        in = &none;
    memset(out, 0, sizeof *out);
    const char *name = kernel->info.name;
    if (!isfinite(in->eps) || in->eps < 0) {
        fk_format_message(message, message_size, "softening eps must be finite and >= 0");
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (!isfinite(in->cutoff) || in->cutoff < 0) {
        fk_format_message(message, message_size, "cutoff must be finite and >= 0 (0: the default)");
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (!isfinite(in->coulomb)) {
        fk_format_message(message, message_size, "the Coulomb constant must be finite");
        return FK_ERR_INVALID_ARGUMENT;
    }
    int boxed = 0;
    for (int k = 0; k < 3; ++k) {
        if (!isfinite(in->box[k]) || in->box[k] < 0) {
            fk_format_message(message, message_size, "box sides must be finite and > 0");
            return FK_ERR_INVALID_ARGUMENT;
        }
        boxed |= in->box[k] > 0;
    }
    fk_status status =
        resolve_parameters(kernel, in->parameters, out->parameters, message, message_size);
    if (status != FK_OK)
        return status;
    if (!is_molecular(kernel)) {
        if (in->cutoff != 0 || in->coulomb != 0 || boxed) {
            fk_format_message(message, message_size,
                              "%s is a gravity kernel: cutoff, Coulomb and box options apply to "
                              "the molecular kernels (those with a pair table)",
                              name);
            return FK_ERR_INVALID_ARGUMENT;
        }
        out->eps = in->eps;
        return FK_OK;
    }

    if (in->eps != 0) {
        fk_format_message(message, message_size,
                          "softening eps applies to the gravity kernels, not to %s", name);
        return FK_ERR_INVALID_ARGUMENT;
    }
    out->cutoff = in->cutoff;
    if (out->cutoff == 0)
        out->cutoff = kernel->default_cutoff;
    out->shifted = out->cutoff > 0;
    out->coulomb = in->coulomb != 0 ? in->coulomb : 1.0;
    /* The device computes in float: like the pair table, the constant must fit (1e300 gave
     * inf and nan forces). */
    if (fabs(out->coulomb) > FLT_MAX) {
        fk_format_message(message, message_size,
                          "the Coulomb constant %g is out of float range (|k| <= %g)", out->coulomb,
                          (double)FLT_MAX);
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (boxed) {
        for (int k = 0; k < 3; ++k)
            if (!(in->box[k] > 0)) {
                fk_format_message(message, message_size, "a periodic box needs three sides > 0");
                return FK_ERR_INVALID_ARGUMENT;
            }
        double shortest = fmin(in->box[0], fmin(in->box[1], in->box[2]));
        if (!out->shifted) {
            fk_format_message(
                message, message_size,
                "a periodic box needs a cutoff for %s (at most half the shortest side, %g)", name,
                0.5 * shortest);
            return FK_ERR_INVALID_ARGUMENT;
        }
        if (out->cutoff > 0.5 * shortest) {
            fk_format_message(
                message, message_size,
                "cutoff %g exceeds half the shortest box side (%g): the minimum image would "
                "miss pairs",
                out->cutoff, 0.5 * shortest);
            return FK_ERR_INVALID_ARGUMENT;
        }
        memcpy(out->box, in->box, sizeof out->box);
        out->periodic = 1;
    }
    return FK_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Pair parameters */

static fk_status check_pair_values(const fk_kernel_desc *kernel, const double *v, size_t a,
                                   size_t b, char *message, size_t size)
{
    for (unsigned p = 0; p < kernel->info.pair_parameters; ++p)
        if (!isfinite(v[p])) {
            fk_format_message(message, size, "pair table: type pair (%zu, %zu): parameter %u is %g",
                              a, b, p + 1, v[p]);
            return FK_ERR_INVALID_INPUT;
        }
    char reason[256] = "";
    if (!kernel->check_pair(v, reason, sizeof reason)) {
        fk_format_message(message, size, "pair table: type pair (%zu, %zu): %s", a, b, reason);
        return FK_ERR_INVALID_INPUT;
    }
    return FK_OK;
}

fk_status fk__pair_params_copy(const fk_kernel_desc *kernel, const fk_pair_table *table,
                               fk__pair_params *out, char *message, size_t message_size)
{
    memset(out, 0, sizeof *out);
    const unsigned parameters = kernel->info.pair_parameters;
    if (!is_molecular(kernel) || parameters == 0) {
        fk_format_message(message, message_size, "%s takes no pair table", kernel->info.name);
        return FK_ERR_INVALID_ARGUMENT;
    }
    fk_pair_table fallback = {.types = 1, .values = kernel->default_pair};
    if (!table)
        table = &fallback;
    const size_t types = table->types;
    if (types == 0 || types > FK_MAX_PAIR_TYPES || !table->values) {
        fk_format_message(message, message_size, "pair table: %zu types (1 to %d, with values)",
                          types, FK_MAX_PAIR_TYPES);
        return FK_ERR_INVALID_ARGUMENT;
    }
    const size_t pairs = types * types;
    out->values = malloc(pairs * parameters * sizeof *out->values);
    out->present = malloc(pairs);
    if (!out->values || !out->present) {
        fk__pair_params_free(out);
        return FK_ERR_HOST_MEMORY;
    }
    out->types = types;
    out->parameters = parameters;
    for (size_t a = 0; a < types; ++a)
        for (size_t b = 0; b < types; ++b) {
            const size_t ab = a * types + b, ba = b * types + a;
            const int present = table->present ? table->present[ab] != 0 : 1;
            out->present[ab] = (unsigned char)present;
            const double *v = table->values + ab * parameters;
            memcpy(out->values + ab * parameters, v, parameters * sizeof *v);
            if (!present)
                continue;
            fk_status status = check_pair_values(kernel, v, a, b, message, message_size);
            if (status == FK_OK && b < a &&
                ((table->present && !table->present[ba]) ||
                 memcmp(v, table->values + ba * parameters, parameters * sizeof *v) != 0)) {
                fk_format_message(
                    message, message_size,
                    "pair table: type pair (%zu, %zu) differs from (%zu, %zu); pairs are "
                    "symmetric",
                    a, b, b, a);
                status = FK_ERR_INVALID_INPUT;
            }
            if (status != FK_OK) {
                fk__pair_params_free(out);
                return status;
            }
        }
    return FK_OK;
}

void fk__pair_params_free(fk__pair_params *params)
{
    free(params->values);
    free(params->present);
    memset(params, 0, sizeof *params);
}

fk_status fk__pair_params_check_types(const fk__pair_params *params, const fk_particles *particles,
                                      char *message, size_t message_size)
{
    const size_t types = params->types, n = particles->count;
    size_t *first = malloc(types * sizeof *first); /* a particle of each type, or n */
    size_t *second = malloc(types * sizeof *second);
    if (!first || !second) {
        free(first);
        free(second);
        return FK_ERR_HOST_MEMORY;
    }
    for (size_t t = 0; t < types; ++t)
        first[t] = second[t] = n;
    fk_status status = FK_OK;
    for (size_t i = 0; i < n && status == FK_OK; ++i) {
        const int type = particles->type ? particles->type[i] : 0;
        if (type < 0 || (size_t)type >= types) {
            fk_format_message(
                message, message_size,
                "particle %zu has type %d; the pair table has types 0 to %zu (without one: "
                "type 0 only)",
                i, type, types - 1);
            status = FK_ERR_INVALID_INPUT;
        } else if (first[type] == n) {
            first[type] = i;
        } else if (second[type] == n) {
            second[type] = i;
        }
    }
    /* A pair (a, b) is used when particles of both types exist (two of them for a == b). */
    for (size_t a = 0; a < types && status == FK_OK; ++a)
        for (size_t b = a; b < types && status == FK_OK; ++b) {
            const size_t other = a == b ? second[a] : first[b];
            if (first[a] == n || other == n || params->present[a * types + b])
                continue;
            fk_format_message(
                message, message_size,
                "no pair parameters for types (%zu, %zu), which particles %zu and %zu have", a, b,
                first[a] < other ? first[a] : other, first[a] < other ? other : first[a]);
            status = FK_ERR_INVALID_INPUT;
        }
    free(first);
    free(second);
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* The pair functions in double */

void fk__pair_function(const fk_kernel_desc *kernel, const fk__physics *physics, const double *pair,
                       double qq, double r, double *force, double *energy)
{
    kernel->pair_function(physics, pair, qq, r, force, energy);
}

void fk__pair_function_shifted(const fk_kernel_desc *kernel, const fk__physics *physics,
                               const double *pair, double qq, double r, double *force,
                               double *energy)
{
    if (!physics->shifted) {
        fk__pair_function(kernel, physics, pair, qq, r, force, energy);
        return;
    }
    if (r >= physics->cutoff) {
        *force = *energy = 0;
        return;
    }
    /* van Meel et al. eq. 3, and the potential it is the gradient of. */
    const double rc = physics->cutoff;
    double f, u, f_rc, u_rc;
    fk__pair_function(kernel, physics, pair, qq, r, &f, &u);
    fk__pair_function(kernel, physics, pair, qq, rc, &f_rc, &u_rc);
    *force = f - f_rc;
    *energy = u - u_rc + (r - rc) * f_rc;
}

void fk__minimum_image(const fk__physics *physics, double d[3])
{
    if (!physics->periodic)
        return;
    for (int k = 0; k < 3; ++k)
        d[k] -= physics->box[k] * nearbyint(d[k] / physics->box[k]);
}

/* ---------------------------------------------------------------------------------------------- */
/* Exclusions */

static int compare_pairs(const void *a, const void *b)
{
    const size_t *p = a, *q = b;
    if (p[0] != q[0])
        return p[0] < q[0] ? -1 : 1;
    if (p[1] != q[1])
        return p[1] < q[1] ? -1 : 1;
    return 0;
}

fk_status fk__exclusions_normalize(const size_t *pairs, size_t count, size_t **normalized,
                                   size_t *unique, char *message, size_t message_size)
{
    *normalized = NULL;
    *unique = 0;
    if (count == 0)
        return FK_OK;
    if (!pairs || count > SIZE_MAX / (2 * sizeof(size_t)))
        return FK_ERR_INVALID_ARGUMENT;
    size_t *sorted = malloc(2 * count * sizeof *sorted);
    if (!sorted)
        return FK_ERR_HOST_MEMORY;
    for (size_t e = 0; e < count; ++e) {
        size_t i = pairs[2 * e], j = pairs[2 * e + 1];
        if (i == j) {
            fk_format_message(message, message_size,
                              "exclusion %zu excludes particle %zu from itself", e, i);
            free(sorted);
            return FK_ERR_INVALID_INPUT;
        }
        sorted[2 * e] = i < j ? i : j;
        sorted[2 * e + 1] = i < j ? j : i;
    }
    qsort(sorted, count, 2 * sizeof *sorted, compare_pairs);
    size_t kept = 0;
    for (size_t e = 0; e < count; ++e)
        if (kept == 0 || compare_pairs(sorted + 2 * e, sorted + 2 * (kept - 1)) != 0) {
            sorted[2 * kept] = sorted[2 * e];
            sorted[2 * kept + 1] = sorted[2 * e + 1];
            ++kept;
        }
    *normalized = sorted;
    *unique = kept;
    return FK_OK;
}

static int compare_sizes(const void *a, const void *b)
{
    const size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

fk_status fk__exclusions_max_partners(const size_t *normalized, size_t count, size_t *most_partners)
{
    *most_partners = 0;
    if (count == 0)
        return FK_OK;
    /* Normalized pairs are unique, so a particle's partners are the times it appears. */
    size_t *ends = malloc(2 * count * sizeof *ends);
    if (!ends)
        return FK_ERR_HOST_MEMORY;
    memcpy(ends, normalized, 2 * count * sizeof *ends);
    qsort(ends, 2 * count, sizeof *ends, compare_sizes);
    size_t most = 1, run = 1;
    for (size_t k = 1; k < 2 * count; ++k) {
        run = ends[k] == ends[k - 1] ? run + 1 : 1;
        if (run > most)
            most = run;
    }
    free(ends);
    *most_partners = most;
    return FK_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Evaluations */

/* The molecular physics constants (FK_PHYS_*) in double, before any rounding to float. */
static void molecular_physics(const fk_kernel_desc *kernel, const fk__physics *p,
                              double physics[FK__PHYSICS_FLOATS])
{
    for (int k = 0; k < FK__PHYSICS_FLOATS; ++k)
        physics[k] = 0.0;
    physics[FK_PHYS_CUTOFF2] = p->shifted ? p->cutoff * p->cutoff : FLT_MAX;
    physics[FK_PHYS_COULOMB] = kernel->coulomb_factor ? kernel->coulomb_factor(p) : p->coulomb;
    for (int k = 0; k < FK_LAW_PARAMETERS; ++k)
        physics[FK_PHYS_LAW + k] = p->parameters[k];
    if (p->shifted && kernel->no_short_range) {
        /* The charge part's shift per unit q_i q_j: the pair function without its short-range
         * part at rc. */
        double f_rc, u_rc;
        fk__pair_function(kernel, p, kernel->no_short_range, 1.0, p->cutoff, &f_rc, &u_rc);
        physics[FK_PHYS_COULOMB_F_RC] = f_rc;
        physics[FK_PHYS_COULOMB_U_OFFSET] = u_rc + p->cutoff * f_rc;
    }
    if (p->periodic)
        for (int k = 0; k < 3; ++k) {
            physics[FK_PHYS_BOX + k] = p->box[k];
            physics[FK_PHYS_INV_BOX + k] = 1.0 / p->box[k];
        }
}

void fk__forcelaw_prepare(const fk_kernel_desc *kernel, const fk__physics *physics,
                          int exclusion_mode, unsigned exclusion_slots, int double_table,
                          int double_single, fk__forcelaw_state *state,
                          float values[FK__PHYSICS_FLOATS])
{
    memset(state, 0, sizeof *state);
    state->physics = *physics;
    state->exclusion_mode = exclusion_mode;
    if (!is_molecular(kernel)) {
        const double eps2 = physics->eps * physics->eps;
        values[0] = (float)eps2;
        if (double_single) /* eps^2 as a float pair too (forces/ga.clh, gaj.clh) */
            values[1] = (float)(eps2 - (double)values[0]);
        return;
    }
    state->exclusion_slots = exclusion_slots;
    /* The float buffer holds every constant rounded once from double; an accumulator of double
     * pair arithmetic (ref) reads the double values from the head of the pair table instead, so
     * that typed systems are double too (issue #36: they stopped at 1.8e-8 with float
     * coefficients). */
    molecular_physics(kernel, physics, state->physics_double);
    for (int k = 0; k < FK__PHYSICS_FLOATS; ++k)
        values[k] = (float)state->physics_double[k];
    state->double_table = double_table != 0;
}

void fk__forcelaw_state_free(fk__forcelaw_state *state)
{
    fk__pair_params_free(&state->pairs);
    free(state->exclusions);
    memset(state, 0, sizeof *state);
}

fk_status fk__forcelaw_table(fk_context *context, const fk_kernel_desc *kernel,
                             fk__forcelaw_state *state, void **table, size_t *bytes)
{
    *table = NULL;
    *bytes = 0;
    if (state->pairs.types == 0) {
        char message[256] = "";
        fk_status status =
            fk__pair_params_copy(kernel, NULL, &state->pairs, message, sizeof message);
        if (status != FK_OK)
            return fk__fail(context, status, "%s", message);
    }
    const fk__pair_params *params = &state->pairs;
    const size_t pairs = params->types * params->types, stride = kernel->table_stride;
    /* Double: the physics constants lead (cl/forces/molecular.clh fk_phys_load). */
    const size_t head = state->double_table ? FK__PHYSICS_FLOATS : 0;
    const size_t count = head + pairs * stride;
    double *values = calloc(count, sizeof *values);
    if (!values)
        return FK_ERR_HOST_MEMORY;
    for (size_t k = 0; k < head; ++k)
        values[k] = state->physics_double[k];
    /* The short-range part alone (no charges) gives the table's shift entries. */
    fk__physics short_range = state->physics;
    for (size_t ab = 0; ab < pairs; ++ab) {
        if (!params->present[ab])
            continue; /* never used: fk__pair_params_check_types rejects such particles */
        const double *v = params->values + ab * params->parameters;
        double *entry = values + head + ab * stride;
        kernel->pack_pair(v, entry);
        const size_t shift = kernel->shift_entry;
        if (short_range.shifted) {
            double f_rc, u_rc;
            fk__pair_function(kernel, &short_range, v, 0.0, short_range.cutoff, &f_rc, &u_rc);
            entry[shift] = f_rc;
            entry[shift + 1] = u_rc + short_range.cutoff * f_rc;
        }
    }
    if (state->double_table) {
        *table = values;
        *bytes = count * sizeof *values;
        return FK_OK;
    }
    /* Float: every value rounded once (the bits the table always had). */
    float *rounded = malloc(count * sizeof *rounded);
    if (!rounded) {
        free(values);
        return FK_ERR_HOST_MEMORY;
    }
    for (size_t k = 0; k < count; ++k)
        rounded[k] = (float)values[k];
    free(values);
    *table = rounded;
    *bytes = count * sizeof *rounded;
    return FK_OK;
}

/* Particle i's position as the coincidence check compares it: float (or double-single, exact in
 * double), in a periodic box modulo the box. */
static void coincidence_key(const float *body, size_t stride, size_t i, const double *box,
                            double key[3])
{
    for (int k = 0; k < 3; ++k) {
        double x = (double)body[stride * i + (size_t)k];
        if (stride == 8) /* double-single: hi + lo, exact in double */
            x += (double)body[stride * i + 4 + (size_t)k];
        if (box && box[k] > 0) { /* the same position modulo the box */
            const double side = (double)(float)box[k];
            x -= side * floor(x / side);
            if (x >= side)
                x -= side;
        }
        key[k] = stride == 8 ? x : (double)(float)x;
    }
}

typedef struct hashed_position {
    uint64_t hash;
    size_t index;
} hashed_position;

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Sorts by hash, least significant 16 bits first (4 counting passes: O(n), where a comparison
 * sort of 16M records took seconds, each MPI redistribution's set_particles included). */
static void sort_by_hash(hashed_position *a, hashed_position *scratch, size_t n)
{
    enum { BITS = 16, BUCKETS = 1 << BITS };
    size_t *count = malloc(BUCKETS * sizeof *count);
    if (!count) { /* a slower fallback rather than a failure */
        for (size_t k = 1; k < n; ++k) {
            const hashed_position value = a[k];
            size_t at = k;
            for (; at > 0 && a[at - 1].hash > value.hash; --at)
                a[at] = a[at - 1];
            a[at] = value;
        }
        return;
    }
    for (int shift = 0; shift < 64; shift += BITS) {
        memset(count, 0, BUCKETS * sizeof *count);
        for (size_t k = 0; k < n; ++k)
            count[(a[k].hash >> shift) & (BUCKETS - 1)]++;
        size_t at = 0;
        for (size_t b = 0; b < BUCKETS; ++b) {
            const size_t c = count[b];
            count[b] = at;
            at += c;
        }
        for (size_t k = 0; k < n; ++k)
            scratch[count[(a[k].hash >> shift) & (BUCKETS - 1)]++] = a[k];
        memcpy(a, scratch, n * sizeof *a);
    }
    free(count);
}

/* 1 when key a sorts before key b (lexicographic). */
static int key_before(const double a[3], const double b[3])
{
    for (int k = 0; k < 3; ++k)
        if (a[k] != b[k])
            return a[k] < b[k];
    return 0;
}

fk_status fk__find_coincident(const float *body, size_t stride, size_t n, const double *box,
                              size_t *first, size_t *second)
{
    *first = *second = SIZE_MAX;
    if (n < 2)
        return FK_OK;
    hashed_position *records = malloc(n * sizeof *records);
    hashed_position *scratch = malloc(n * sizeof *scratch);
    if (!records || !scratch) {
        free(records);
        free(scratch);
        return FK_ERR_HOST_MEMORY;
    }
    for (size_t i = 0; i < n; ++i) {
        double key[3];
        coincidence_key(body, stride, i, box, key);
        uint64_t hash = 0;
        for (int k = 0; k < 3; ++k) {
            uint64_t bits;
            const double value = key[k] == 0.0 ? 0.0 : key[k]; /* -0 and +0 coincide */
            memcpy(&bits, &value, sizeof bits);
            hash = mix64(hash ^ bits);
        }
        records[i] = (hashed_position){hash, i};
    }
    sort_by_hash(records, scratch, n);
    free(scratch);
    /* Equal positions have equal hashes: within each run of one hash, the pairs with equal keys
     * (a run longer than one is a collision or a coincidence). The pair named: the smallest
     * position that two particles share, and its two smallest indices. */
    double best[3] = {0, 0, 0};
    for (size_t run = 0, end = 0; run < n; run = end) {
        for (end = run + 1; end < n && records[end].hash == records[run].hash; ++end)
            ;
        for (size_t a = run; a + 1 < end; ++a) {
            double ka[3];
            coincidence_key(body, stride, records[a].index, box, ka);
            for (size_t b = a + 1; b < end; ++b) {
                double kb[3];
                coincidence_key(body, stride, records[b].index, box, kb);
                if (key_before(ka, kb) || key_before(kb, ka))
                    continue;
                size_t i = records[a].index, j = records[b].index;
                if (i > j) {
                    const size_t t = i;
                    i = j, j = t;
                }
                const int first_found = *first == SIZE_MAX;
                if (first_found || key_before(ka, best) ||
                    (!key_before(best, ka) && (i < *first || (i == *first && j < *second)))) {
                    memcpy(best, ka, sizeof best);
                    *first = i, *second = j;
                }
            }
        }
    }
    free(records);
    return FK_OK;
}

/* Two particles at the same single-precision position (in a periodic box: the same position
 * modulo the box) have an infinite pair force: a user error, named. O(N log N). */
static fk_status check_coincident(fk_context *context, const fk__physics *physics,
                                  const float *body, size_t stride, size_t n)
{
    size_t a = 0, b = 0;
    fk_status status =
        fk__find_coincident(body, stride, n, physics->periodic ? physics->box : NULL, &a, &b);
    if (status != FK_OK || a == SIZE_MAX)
        return status;
    return fk__fail(context, FK_ERR_INVALID_INPUT,
                    "particles %zu and %zu are at the same position (%g, %g, %g)%s: "
                    "their pair force is infinite",
                    a, b, (double)body[stride * a], (double)body[stride * a + 1],
                    (double)body[stride * a + 2], physics->periodic ? " modulo the box" : "");
}

/* body_aux of the molecular laws: an int4 record per particle (cl/forces/molecular.clh), then with
 * exclusions on the fly exclusion_slots partner indices per particle, -1 where unused. */
static fk_status molecular_aux(fk_context *context, const fk_kernel_desc *kernel,
                               const fk__forcelaw_state *state, const fk_particles *particles,
                               void **aux, size_t *aux_bytes)
{
    const size_t n = particles->count, slots = state->exclusion_slots;
    const size_t records = n + n * slots / 4;
    int32_t *data = malloc(records * 4 * sizeof *data);
    if (!data)
        return FK_ERR_HOST_MEMORY;
    const size_t stride = kernel->table_stride, types = state->pairs.types;
    for (size_t i = 0; i < n; ++i) {
        const size_t type = particles->type ? (size_t)particles->type[i] : 0;
        data[4 * i] = (int32_t)(type * stride);
        data[4 * i + 1] = (int32_t)(type * types * stride);
        data[4 * i + 2] = (int32_t)(n + i * slots / 4);
        data[4 * i + 3] = 0;
    }
    if (slots) {
        int32_t *partners = data + 4 * n;
        for (size_t s = 0; s < n * slots; ++s)
            partners[s] = -1;
        size_t *used = calloc(n, sizeof *used);
        if (!used) {
            free(data);
            return FK_ERR_HOST_MEMORY;
        }
        for (size_t e = 0; e < state->exclusion_count; ++e)
            for (int side = 0; side < 2; ++side) {
                const size_t i = state->exclusions[2 * e + (size_t)side];
                const size_t j = state->exclusions[2 * e + 1 - (size_t)side];
                if (used[i] == slots) {
                    free(used);
                    free(data);
                    return fk__fail(context, FK_ERR_INVALID_INPUT,
                                    "particle %zu has more than %zu exclusions, the most the "
                                    "on-the-fly kernel was built for "
                                    "(fk_eval_config.max_exclusions)",
                                    i, slots);
                }
                partners[i * slots + used[i]++] = (int32_t)j;
            }
        free(used);
    }
    *aux = data;
    *aux_bytes = records * 4 * sizeof *data;
    return FK_OK;
}

fk_status fk__velocity_records(fk_context *context, const double *velocity, size_t n, size_t stride,
                               float **records)
{
    *records = NULL;
    float *out = calloc(stride * n, sizeof *out);
    if (!out)
        return FK_ERR_HOST_MEMORY;
    for (size_t i = 0; i < n; ++i) {
        for (int k = 0; k < 3; ++k) {
            const double v = velocity[3 * i + (size_t)k];
            if (!isfinite(v) || fabs(v) > FLT_MAX) {
                free(out);
                return fk__fail(context, FK_ERR_INVALID_INPUT,
                                "particle %zu: velocity %d is %g (not a finite float)", i, k, v);
            }
            const float hi = (float)v;
            out[stride * i + (size_t)k] = hi;
            if (stride == 8) /* double-single: the low part in the second record */
                out[stride * i + 4 + (size_t)k] = (float)(v - (double)hi);
        }
    }
    *records = out;
    return FK_OK;
}

fk_status fk__forcelaw_particles(fk_context *context, const fk_kernel_desc *kernel,
                                 fk__forcelaw_state *state, const fk_particles *particles,
                                 float *body, size_t stride, void **aux, size_t *aux_bytes)
{
    *aux = NULL;
    *aux_bytes = 0;
    const size_t n = particles->count;
    if (kernel->needs_velocity) {
        if (!particles->velocity)
            return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "gaj needs velocities");
        float *velocity = NULL;
        const fk_status status =
            fk__velocity_records(context, particles->velocity, n, stride, &velocity);
        if (status != FK_OK)
            return status;
        *aux = velocity;
        *aux_bytes = stride * n * sizeof *velocity;
        return FK_OK;
    }
    if (!is_molecular(kernel)) {
        if (state->exclusion_count)
            return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                            "exclusions apply to the molecular kernels");
        return FK_OK;
    }

    char message[512] = "";
    if (state->pairs.types == 0) {
        fk_status status =
            fk__pair_params_copy(kernel, NULL, &state->pairs, message, sizeof message);
        if (status != FK_OK)
            return fk__fail(context, status, "%s", message);
    }
    fk_status status =
        fk__pair_params_check_types(&state->pairs, particles, message, sizeof message);
    if (status != FK_OK)
        return fk__fail(context, status, "%s", message);
    for (size_t e = 0; e < state->exclusion_count; ++e)
        if (state->exclusions[2 * e + 1] >= n)
            return fk__fail(context, FK_ERR_INVALID_INPUT,
                            "exclusion (%zu, %zu): particle %zu does not exist (N = %zu)",
                            state->exclusions[2 * e], state->exclusions[2 * e + 1],
                            state->exclusions[2 * e + 1], n);
    if (!kernel->charged)
        for (size_t i = 0; i < n; ++i) { /* no charges: the lane is unused */
            body[stride * i + 3] = 0.0f;
            if (stride == 8)
                body[stride * i + 7] = 0.0f;
        }
    status = check_coincident(context, &state->physics, body, stride, n);
    if (status != FK_OK)
        return status;
    return molecular_aux(context, kernel, state, particles, aux, aux_bytes);
}

fk_status fk__forcelaw_exclusion_lists(fk_context *context, const fk__forcelaw_state *state,
                                       size_t n, int32_t **lists, size_t *bytes)
{
    *lists = NULL;
    *bytes = 0;
    if (state->exclusion_mode != FK_EXCLUDE_AFTERWARDS || state->exclusion_count == 0)
        return FK_OK;
    /* int32 offsets and indices on the device: n + 1 + 2 E of them */
    if (n >= (size_t)INT32_MAX || state->exclusion_count > ((size_t)INT32_MAX - n - 1) / 2)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "%zu exclusions among %zu particles: the device's partner lists hold at "
                        "most 2^31 - 1 entries",
                        state->exclusion_count, n);
    const size_t count = n + 1 + 2 * state->exclusion_count;
    int32_t *data = calloc(count, sizeof *data);
    size_t *next = malloc((n + 1) * sizeof *next);
    if (!data || !next) {
        free(data);
        free(next);
        return FK_ERR_HOST_MEMORY;
    }
    int32_t *offset = data, *partner = data + n + 1;
    for (size_t e = 0; e < 2 * state->exclusion_count; ++e)
        ++offset[state->exclusions[e] + 1];
    for (size_t i = 0; i < n; ++i)
        offset[i + 1] += offset[i];
    for (size_t i = 0; i <= n; ++i)
        next[i] = (size_t)offset[i];
    /* The pairs are sorted (i < j, lexicographic), so every list comes out in increasing order: the
     * j < i partners from the pairs (j, i) first, in order of j, then those from (i, j). */
    for (size_t e = 0; e < state->exclusion_count; ++e) {
        const size_t i = state->exclusions[2 * e], j = state->exclusions[2 * e + 1];
        partner[next[j]++] = (int32_t)i;
    }
    for (size_t e = 0; e < state->exclusion_count; ++e) {
        const size_t i = state->exclusions[2 * e], j = state->exclusions[2 * e + 1];
        partner[next[i]++] = (int32_t)j;
    }
    free(next);
    *lists = data;
    *bytes = count * sizeof *data;
    return FK_OK;
}
