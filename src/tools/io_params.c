/* Pair-parameter (--params) and exclusion (--exclude) files (docs/file-formats.md). Never prints:
 * every failure is described in the caller's error buffer, naming the file and line. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forcekit/tools.h"
#include "common/text.h"

enum { MAX_FIELDS = 8, TOKEN_SHOWN = 40 };

/* A line split into white-space separated fields, comment ('#') removed; count may exceed
 * MAX_FIELDS (only the first MAX_FIELDS are kept). */
typedef struct fields {
    char *field[MAX_FIELDS];
    size_t count;
} fields;

static void split(char *line, fields *out)
{
    char *comment = strchr(line, '#');
    if (comment)
        *comment = '\0';
    out->count = 0;
    for (char *save = NULL, *token = strtok_r(line, " \t\r\n\v\f", &save); token;
         token = strtok_r(NULL, " \t\r\n\v\f", &save)) {
        if (out->count < MAX_FIELDS)
            out->field[out->count] = token;
        out->count++;
    }
}

/* A non-negative integer up to limit, in full. */
static int parse_index(const char *text, unsigned long long limit, size_t *value)
{
    if (*text == '-' || *text == '+' || *text == '\0')
        return 0;
    errno = 0;
    char *end = NULL;
    unsigned long long parsed = strtoull(text, &end, 10);
    if (*end != '\0' || errno == ERANGE || parsed > limit)
        return 0;
    *value = (size_t)parsed;
    return 1;
}

static int parse_number(const char *text, double *value)
{
    char *end = NULL;
    *value = strtod(text, &end);
    return end != text && *end == '\0' && isfinite(*value);
}

/* Reads lines; calls handle(line fields, line number) for non-empty ones; stops at its error. */
typedef fk_status (*line_handler)(const fields *line, size_t number, void *state, char *error,
                                  size_t error_size);

static fk_status read_lines(const char *path, line_handler handle, void *state, char *error,
                            size_t error_size)
{
    FILE *file = fopen(path, "r");
    if (!file) {
        fk_format_message(error, error_size, "cannot open %s: %s", path, strerror(errno));
        return FK_ERR_IO;
    }
    char *line = NULL;
    size_t capacity = 0, number = 0;
    fk_status status = FK_OK;
    for (;;) {
        errno = 0;
        long got = fkt_io_getline(&line, &capacity, file);
        if (got == -2) {
            fk_format_message(error, error_size,
                              "%s:%zu: input too large: a line longer than %zu bytes", path,
                              number + 1, FKT_IO_MAX_LINE);
            status = FK_ERR_PARSE;
            break;
        }
        if (got < 0) {
            if (ferror(file) || got == -3) {
                fk_format_message(error, error_size, "cannot read %s: %s", path,
                                  strerror(errno ? errno : EIO));
                status = got == -3 ? FK_ERR_HOST_MEMORY : FK_ERR_IO;
            }
            break;
        }
        ++number;
        if ((size_t)got != strlen(line)) {
            fk_format_message(error, error_size, "%s:%zu: a NUL byte in a text file", path, number);
            status = FK_ERR_PARSE;
            break;
        }
        char *text = line;
        if (number == 1 && strncmp(text, "\xEF\xBB\xBF", 3) == 0)
            text += 3; /* UTF-8 byte order mark */
        fields parsed;
        split(text, &parsed);
        if (parsed.count == 0)
            continue;
        status = handle(&parsed, number, state, error, error_size);
        if (status != FK_OK)
            break;
    }
    free(line);
    fclose(file);
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* Pair parameters */

typedef struct pair_entry {
    size_t a, b, line;
    double values[MAX_FIELDS];
} pair_entry;

typedef struct params_state {
    const char *path;
    unsigned parameters;
    const char *format;
    pair_entry *entries;
    size_t count, capacity;
} params_state;

static fk_status handle_pair(const fields *line, size_t number, void *opaque, char *error,
                             size_t error_size)
{
    params_state *state = opaque;
    const size_t want = 2 + state->parameters;
    if (line->count != want) {
        fk_format_message(error, error_size, "%s:%zu: expected %zu columns (%s), found %zu",
                          state->path, number, want, state->format, line->count);
        return FK_ERR_PARSE;
    }
    pair_entry entry = {.line = number};
    for (int side = 0; side < 2; ++side) {
        size_t *type = side ? &entry.b : &entry.a;
        if (!parse_index(line->field[side], FK_MAX_PAIR_TYPES - 1, type)) {
            fk_format_message(error, error_size,
                              "%s:%zu: column %d (type): '%.*s' is not a type from 0 to %d",
                              state->path, number, side + 1, TOKEN_SHOWN, line->field[side],
                              FK_MAX_PAIR_TYPES - 1);
            return FK_ERR_PARSE;
        }
    }
    for (unsigned p = 0; p < state->parameters; ++p)
        if (!parse_number(line->field[2 + p], &entry.values[p])) {
            fk_format_message(error, error_size, "%s:%zu: column %u: '%.*s' is not a finite number",
                              state->path, number, 3 + p, TOKEN_SHOWN, line->field[2 + p]);
            return FK_ERR_PARSE;
        }
    if (state->count == state->capacity) {
        size_t capacity = state->capacity ? 2 * state->capacity : 64;
        pair_entry *grown = realloc(state->entries, capacity * sizeof *grown);
        if (!grown) {
            fk_format_message(error, error_size, "%s:%zu: out of memory", state->path, number);
            return FK_ERR_HOST_MEMORY;
        }
        state->entries = grown;
        state->capacity = capacity;
    }
    state->entries[state->count++] = entry;
    return FK_OK;
}

fk_status fkt_io_read_pair_table(const char *path, unsigned parameters, const char *format,
                                 size_t at_least_types, fkt_pair_table_set *set, char *error,
                                 size_t error_size)
{
    if (set)
        memset(set, 0, sizeof *set);
    if (!path || !set || parameters == 0 || parameters > MAX_FIELDS - 2) {
        fk_format_message(error, error_size, "invalid arguments to fkt_io_read_pair_table");
        return FK_ERR_INVALID_ARGUMENT;
    }
    params_state state = {.path = path, .parameters = parameters, .format = format ? format : ""};
    fk_status status = read_lines(path, handle_pair, &state, error, error_size);
    if (status == FK_OK && state.count == 0) {
        fk_format_message(error, error_size, "%s: no type pairs (expected lines of %s)", path,
                          state.format);
        status = FK_ERR_PARSE;
    }
    size_t types = at_least_types < FK_MAX_PAIR_TYPES ? at_least_types : FK_MAX_PAIR_TYPES;
    for (size_t e = 0; e < state.count; ++e) {
        if (state.entries[e].a + 1 > types)
            types = state.entries[e].a + 1;
        if (state.entries[e].b + 1 > types)
            types = state.entries[e].b + 1;
    }
    if (status == FK_OK) {
        set->values = calloc(types * types * parameters, sizeof *set->values);
        set->present = calloc(types * types, 1);
        size_t *line_of = calloc(types * types, sizeof *line_of);
        if (!set->values || !set->present || !line_of) {
            fk_format_message(error, error_size, "%s: out of memory for %zu types", path, types);
            status = FK_ERR_HOST_MEMORY;
        }
        set->types = types;
        set->parameters = parameters;
        /* Symmetric: (a, b) also sets (b, a); a pair given twice must agree. */
        for (size_t e = 0; status == FK_OK && e < state.count; ++e) {
            const pair_entry *entry = &state.entries[e];
            const size_t cells[2] = {entry->a * types + entry->b, entry->b * types + entry->a};
            for (int c = 0; c < 2 && status == FK_OK; ++c) {
                double *v = set->values + cells[c] * parameters;
                if (set->present[cells[c]] &&
                    memcmp(v, entry->values, parameters * sizeof *v) != 0) {
                    fk_format_message(
                        error, error_size,
                        "%s:%zu: type pair (%zu, %zu) has other parameters on line %zu", path,
                        entry->line, entry->a, entry->b, line_of[cells[c]]);
                    status = FK_ERR_PARSE;
                }
                memcpy(v, entry->values, parameters * sizeof *v);
                set->present[cells[c]] = 1;
                line_of[cells[c]] = entry->line;
            }
        }
        free(line_of);
    }
    free(state.entries);
    if (status != FK_OK)
        fkt_pair_table_set_free(set);
    return status;
}

void fkt_pair_table_set_free(fkt_pair_table_set *set)
{
    if (!set)
        return;
    free(set->values);
    free(set->present);
    memset(set, 0, sizeof *set);
}

fk_pair_table fkt_pair_table_set_view(const fkt_pair_table_set *set)
{
    fk_pair_table table = {0};
    if (set)
        table =
            (fk_pair_table){.types = set->types, .values = set->values, .present = set->present};
    return table;
}

/* ---------------------------------------------------------------------------------------------- */
/* Exclusions */

typedef struct exclusions_state {
    const char *path;
    size_t particle_count;
    size_t *pairs;
    size_t count, capacity;
} exclusions_state;

static fk_status handle_exclusion(const fields *line, size_t number, void *opaque, char *error,
                                  size_t error_size)
{
    exclusions_state *state = opaque;
    if (line->count != 2) {
        fk_format_message(error, error_size, "%s:%zu: expected 2 columns (i j), found %zu",
                          state->path, number, line->count);
        return FK_ERR_PARSE;
    }
    size_t index[2];
    for (int c = 0; c < 2; ++c) {
        if (!parse_index(line->field[c], SIZE_MAX, &index[c])) {
            fk_format_message(
                error, error_size,
                "%s:%zu: column %d: '%.*s' is not a particle index (an integer from 0)",
                state->path, number, c + 1, TOKEN_SHOWN, line->field[c]);
            return FK_ERR_PARSE;
        }
        if (state->particle_count && index[c] >= state->particle_count) {
            fk_format_message(error, error_size, "%s:%zu: particle %zu does not exist (N = %zu)",
                              state->path, number, index[c], state->particle_count);
            return FK_ERR_PARSE;
        }
    }
    if (index[0] == index[1]) {
        fk_format_message(error, error_size, "%s:%zu: excludes particle %zu from itself",
                          state->path, number, index[0]);
        return FK_ERR_PARSE;
    }
    if (state->count == state->capacity) {
        size_t capacity = state->capacity ? 2 * state->capacity : 256;
        size_t *grown = realloc(state->pairs, 2 * capacity * sizeof *grown);
        if (!grown) {
            fk_format_message(error, error_size, "%s:%zu: out of memory", state->path, number);
            return FK_ERR_HOST_MEMORY;
        }
        state->pairs = grown;
        state->capacity = capacity;
    }
    state->pairs[2 * state->count] = index[0];
    state->pairs[2 * state->count + 1] = index[1];
    state->count++;
    return FK_OK;
}

fk_status fkt_io_read_exclusions(const char *path, size_t particle_count, size_t **pairs,
                                 size_t *count, char *error, size_t error_size)
{
    if (!path || !pairs || !count) {
        fk_format_message(error, error_size, "invalid arguments to fkt_io_read_exclusions");
        return FK_ERR_INVALID_ARGUMENT;
    }
    *pairs = NULL;
    *count = 0;
    exclusions_state state = {.path = path, .particle_count = particle_count};
    fk_status status = read_lines(path, handle_exclusion, &state, error, error_size);
    if (status != FK_OK) {
        free(state.pairs);
        return status;
    }
    *pairs = state.pairs;
    *count = state.count;
    return FK_OK;
}
