/* Particle files (text and TIPSY) and force output (docs/file-formats.md). Never prints: every
 * failure is described in the caller's error buffer. */
#include "forcekit/tools.h"
#include "common/text.h"
#include "common/files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------------- */
/* Helpers */

/* a * b without wrapping; 0 on overflow. */
static int mul_size(size_t a, size_t b, size_t *result)
{
    if (b != 0 && a > SIZE_MAX / b)
        return 0;
    *result = a * b;
    return 1;
}

long fkt_io_getline(char **line, size_t *capacity, FILE *file)
{
    size_t used = 0;
    int c = EOF;
    for (;;) {
        if (used + 1 >= *capacity) {
            if (*capacity > FKT_IO_MAX_LINE) {
                errno = EFBIG;
                return -2;
            }
            size_t grown = *capacity ? 2 * *capacity : 256;
            if (grown > FKT_IO_MAX_LINE + 2)
                grown = FKT_IO_MAX_LINE + 2;
            char *bigger = realloc(*line, grown);
            if (!bigger) {
                errno = ENOMEM;
                return -3;
            }
            *line = bigger;
            *capacity = grown;
        }
        c = getc(file);
        if (c == EOF)
            break;
        (*line)[used++] = (char)c;
        if (c == '\n')
            break;
    }
    (*line)[used] = '\0';
    if (used == 0 && c == EOF)
        return -1;
    if (used > FKT_IO_MAX_LINE) {
        errno = EFBIG;
        return -2;
    }
    return (long)used;
}

static int layout_valid(fkt_layout layout)
{
    return layout == FKT_LAYOUT_XYZM || layout == FKT_LAYOUT_XYZM_VEL ||
           layout == FKT_LAYOUT_XYZQ_TYPE || layout == FKT_LAYOUT_XYZ_TYPE;
}

static int layout_has_mass(fkt_layout layout)
{
    return layout != FKT_LAYOUT_XYZ_TYPE;
}

static int layout_has_velocity(fkt_layout layout)
{
    return layout == FKT_LAYOUT_XYZM_VEL;
}

static int layout_has_type(fkt_layout layout)
{
    return layout == FKT_LAYOUT_XYZQ_TYPE || layout == FKT_LAYOUT_XYZ_TYPE;
}

static const char *layout_columns_text(fkt_layout layout)
{
    switch (layout) {
    case FKT_LAYOUT_XYZM:
        return "x y z m";
    case FKT_LAYOUT_XYZM_VEL:
        return "x y z m vx vy vz";
    case FKT_LAYOUT_XYZQ_TYPE:
        return "x y z q type";
    case FKT_LAYOUT_XYZ_TYPE:
        return "x y z type";
    }
    return "?";
}

/* ---------------------------------------------------------------------------------------------- */
/* Layouts and particle sets */

int fkt_io_layout_for_kernel(const char *kernel)
{
    /* The registry's input format names the layout: no list of laws here. */
    const fk_kernel_info *info = kernel ? fk_kernel_find(kernel) : NULL;
    if (!info)
        return -1;
    static const fkt_layout layouts[] = {FKT_LAYOUT_XYZM, FKT_LAYOUT_XYZM_VEL, FKT_LAYOUT_XYZQ_TYPE,
                                         FKT_LAYOUT_XYZ_TYPE};
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; ++i)
        if (strcmp(info->input_format, layout_columns_text(layouts[i])) == 0)
            return (int)layouts[i];
    return -1;
}

unsigned fkt_io_layout_columns(fkt_layout layout)
{
    switch (layout) {
    case FKT_LAYOUT_XYZM:
        return 4;
    case FKT_LAYOUT_XYZM_VEL:
        return 7;
    case FKT_LAYOUT_XYZQ_TYPE:
        return 5;
    case FKT_LAYOUT_XYZ_TYPE:
        return 4;
    }
    return 0;
}

fk_status fkt_particle_set_alloc(fkt_particle_set *set, fkt_layout layout, size_t count)
{
    if (!set)
        return FK_ERR_INVALID_ARGUMENT;
    memset(set, 0, sizeof *set);
    if (!layout_valid(layout))
        return FK_ERR_INVALID_ARGUMENT;
    size_t vector_count;
    if (!mul_size(count, 3, &vector_count) || vector_count > SIZE_MAX / sizeof(double))
        return FK_ERR_HOST_MEMORY;
    if (count == 0)
        return FK_OK;
    set->position = calloc(vector_count, sizeof(double));
    if (layout_has_mass(layout))
        set->mass = calloc(count, sizeof(double));
    if (layout_has_velocity(layout))
        set->velocity = calloc(vector_count, sizeof(double));
    if (layout_has_type(layout))
        set->type = calloc(count, sizeof(int));
    if (!set->position || (layout_has_mass(layout) && !set->mass) ||
        (layout_has_velocity(layout) && !set->velocity) ||
        (layout_has_type(layout) && !set->type)) {
        fkt_particle_set_free(set);
        return FK_ERR_HOST_MEMORY;
    }
    set->count = count;
    return FK_OK;
}

void fkt_particle_set_free(fkt_particle_set *set)
{
    if (!set)
        return;
    free(set->position);
    free(set->mass);
    free(set->velocity);
    free(set->type);
    memset(set, 0, sizeof *set);
}

fk_particles fkt_particle_set_view(const fkt_particle_set *set)
{
    fk_particles view;
    memset(&view, 0, sizeof view);
    if (!set)
        return view;
    view.count = set->count;
    view.position = set->position;
    view.mass = set->mass;
    view.velocity = set->velocity;
    view.type = set->type;
    return view;
}

/* ---------------------------------------------------------------------------------------------- */
/* Text particles */

enum { MAX_COLUMNS = 7, TOKEN_SHOWN = 40 };

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* Growable storage for the rows read so far: values[columns * n], types[n]. */
typedef struct text_rows {
    size_t count, capacity;
    double *values;
    int *types;
} text_rows;

static int text_rows_reserve(text_rows *rows, unsigned columns)
{
    if (rows->count < rows->capacity)
        return 1;
    size_t capacity = rows->capacity ? rows->capacity : 1024;
    if (rows->capacity) {
        if (!mul_size(capacity, 2, &capacity))
            return 0;
    }
    size_t value_count;
    if (!mul_size(capacity, columns, &value_count) || value_count > SIZE_MAX / sizeof(double))
        return 0;
    double *values = realloc(rows->values, value_count * sizeof(double));
    if (!values)
        return 0;
    rows->values = values;
    int *types = realloc(rows->types, capacity * sizeof(int));
    if (!types)
        return 0;
    rows->types = types;
    rows->capacity = capacity;
    return 1;
}

/* Parses one data line (NUL-terminated at line[length], comment already cut) into a row.
 * Returns FK_OK, or FK_ERR_PARSE with the message written. A line holding only white space
 * sets *empty. */
static fk_status parse_line(char *line, size_t length, fkt_layout layout, const char *path,
                            size_t line_number, double *values, int *type, int *empty, char *error,
                            size_t error_size)
{
    unsigned columns = fkt_io_layout_columns(layout);
    int typed = layout_has_type(layout);
    char *tokens[MAX_COLUMNS];
    size_t token_lengths[MAX_COLUMNS];
    unsigned found = 0;
    size_t i = 0;
    /* Tokenise in place first, so the column count is reported before any bad number. */
    while (i < length) {
        while (i < length && is_space(line[i]))
            i++;
        if (i >= length)
            break;
        char *start = line + i;
        while (i < length && !is_space(line[i]))
            i++;
        if (found < MAX_COLUMNS) {
            tokens[found] = start;
            token_lengths[found] = (size_t)(line + i - start);
        }
        found++;
        if (i < length)
            line[i++] = '\0';
    }
    *empty = (found == 0);
    if (found == 0)
        return FK_OK;
    if (found != columns) {
        fk_format_message(error, error_size, "%s:%zu: expected %u columns (%s), found %u", path,
                          line_number, columns, layout_columns_text(layout), found);
        return FK_ERR_PARSE;
    }
    for (unsigned c = 0; c < columns; c++) {
        const char *token = tokens[c];
        /* Compared with the token's end, not with NUL: a stray NUL byte must not end a number. */
        const char *token_end = token + token_lengths[c];
        char *end = NULL;
        if (typed && c == columns - 1) {
            errno = 0;
            long value = strtol(token, &end, 10);
            if (end == token || end != token_end) {
                fk_format_message(error, error_size,
                                  "%s:%zu: column %u (type): '%.*s' is not a non-negative integer",
                                  path, line_number, c + 1, TOKEN_SHOWN, token);
                return FK_ERR_PARSE;
            }
            if (value < 0 && errno != ERANGE) {
                fk_format_message(
                    error, error_size,
                    "%s:%zu: column %u (type): %.*s is negative; types are integers from 0", path,
                    line_number, c + 1, TOKEN_SHOWN, token);
                return FK_ERR_PARSE;
            }
            if (errno == ERANGE || value < 0 || value > INT_MAX) {
                fk_format_message(error, error_size,
                                  "%s:%zu: column %u (type): %.*s is out of range (0 to %d)", path,
                                  line_number, c + 1, TOKEN_SHOWN, token, INT_MAX);
                return FK_ERR_PARSE;
            }
            *type = (int)value;
            continue;
        }
        /* Underflow to a tiny value is harmless; overflow shows up as Inf below. */
        double value = strtod(token, &end);
        if (end == token || end != token_end) {
            fk_format_message(error, error_size, "%s:%zu: column %u: '%.*s' is not a number", path,
                              line_number, c + 1, TOKEN_SHOWN, token);
            return FK_ERR_PARSE;
        }
        if (!isfinite(value)) {
            fk_format_message(error, error_size, "%s:%zu: column %u: '%.*s' is not a finite number",
                              path, line_number, c + 1, TOKEN_SHOWN, token);
            return FK_ERR_PARSE;
        }
        values[c] = value;
    }
    if (!typed)
        *type = 0;
    return FK_OK;
}

static fk_status rows_to_set(const text_rows *rows, fkt_layout layout, fkt_particle_set *set)
{
    fk_status status = fkt_particle_set_alloc(set, layout, rows->count);
    if (status != FK_OK)
        return status;
    unsigned columns = fkt_io_layout_columns(layout);
    for (size_t i = 0; i < rows->count; i++) {
        const double *row = rows->values + i * columns;
        for (unsigned d = 0; d < 3; d++)
            set->position[3 * i + d] = row[d];
        if (set->mass)
            set->mass[i] = row[3];
        if (set->velocity)
            for (unsigned d = 0; d < 3; d++)
                set->velocity[3 * i + d] = row[4 + d];
        if (set->type)
            set->type[i] = rows->types[i];
    }
    return FK_OK;
}

fk_status fkt_io_read_text(const char *path, fkt_layout layout, fkt_particle_set *set, char *error,
                           size_t error_size)
{
    if (set)
        memset(set, 0, sizeof *set);
    if (!path || !set || !layout_valid(layout)) {
        fk_format_message(error, error_size, "invalid arguments to fkt_io_read_text");
        return FK_ERR_INVALID_ARGUMENT;
    }
    FILE *file = fopen(path, "r");
    if (!file) {
        fk_format_message(error, error_size, "cannot open %s: %s", path, strerror(errno));
        return FK_ERR_IO;
    }
    unsigned columns = fkt_io_layout_columns(layout);
    text_rows rows = {0, 0, NULL, NULL};
    char *line = NULL;
    size_t line_capacity = 0;
    size_t line_number = 0;
    fk_status status = FK_OK;
    for (;;) {
        errno = 0;
        long got = fkt_io_getline(&line, &line_capacity, file);
        if (got == -2) {
            fk_format_message(
                error, error_size,
                "%s:%zu: input too large: a line longer than %zu bytes is not particle data", path,
                line_number + 1, FKT_IO_MAX_LINE);
            status = FK_ERR_PARSE;
            break;
        }
        if (got < 0) {
            if (ferror(file) || got == -3) {
                int saved = errno;
                if (got == -3) {
                    fk_format_message(error, error_size, "%s:%zu: out of memory reading a line",
                                      path, line_number + 1);
                    status = FK_ERR_HOST_MEMORY;
                } else {
                    fk_format_message(error, error_size, "cannot read %s: %s", path,
                                      strerror(saved ? saved : EIO));
                    status = FK_ERR_IO;
                }
            }
            break;
        }
        line_number++;
        size_t length = (size_t)got;
        char *text = line;
        /* Editors on some systems start files with a UTF-8 byte order mark. */
        if (line_number == 1 && length >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
            text += 3;
            length -= 3;
        }
        char *comment = memchr(text, '#', length);
        if (comment) {
            *comment = '\0';
            length = (size_t)(comment - text);
        }
        if (!text_rows_reserve(&rows, columns)) {
            fk_format_message(error, error_size, "%s:%zu: out of memory", path, line_number);
            status = FK_ERR_HOST_MEMORY;
            break;
        }
        if (rows.count >= FKT_IO_MAX_PARTICLES) {
            fk_format_message(error, error_size, "%s:%zu: input too large: more than %zu particles",
                              path, line_number, FKT_IO_MAX_PARTICLES);
            status = FK_ERR_PARSE;
            break;
        }
        int empty = 0;
        status =
            parse_line(text, length, layout, path, line_number, rows.values + rows.count * columns,
                       &rows.types[rows.count], &empty, error, error_size);
        if (status != FK_OK)
            break;
        if (!empty)
            rows.count++;
    }
    free(line);
    fclose(file);
    if (status == FK_OK && rows.count == 0) {
        fk_format_message(error, error_size, "%s: no particles (expected lines of %s)", path,
                          layout_columns_text(layout));
        status = FK_ERR_PARSE;
    }
    if (status == FK_OK) {
        status = rows_to_set(&rows, layout, set);
        if (status != FK_OK)
            fk_format_message(error, error_size, "%s: out of memory for %zu particles", path,
                              rows.count);
    }
    free(rows.values);
    free(rows.types);
    if (status != FK_OK)
        fkt_particle_set_free(set);
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* TIPSY */

enum {
    TIPSY_HEADER_PADDED = 32,
    TIPSY_HEADER_UNPADDED = 28,
    TIPSY_GAS_BYTES = 48,
    TIPSY_DARK_BYTES = 36,
    TIPSY_STAR_BYTES = 44
};

static uint32_t swap32(uint32_t value)
{
    return ((value & 0xffu) << 24) | ((value & 0xff00u) << 8) | ((value >> 8) & 0xff00u) |
           (value >> 24);
}

/* memcpy rather than pointer casts: records are not aligned for the host, and UBSan checks. */
static uint32_t load_u32(const unsigned char *bytes, int swap)
{
    uint32_t value;
    memcpy(&value, bytes, sizeof value);
    return swap ? swap32(value) : value;
}

static int32_t load_i32(const unsigned char *bytes, int swap)
{
    uint32_t bits = load_u32(bytes, swap);
    int32_t value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static double load_f32(const unsigned char *bytes, int swap)
{
    uint32_t bits = load_u32(bytes, swap);
    float value;
    memcpy(&value, &bits, sizeof value);
    return (double)value;
}

typedef struct tipsy_header {
    int32_t nbodies, ndim, nsph, ndark, nstar;
} tipsy_header;

static void decode_header(const unsigned char *bytes, int swap, tipsy_header *header)
{
    /* bytes 0..7 are the snapshot time, unused here */
    header->nbodies = load_i32(bytes + 8, swap);
    header->ndim = load_i32(bytes + 12, swap);
    header->nsph = load_i32(bytes + 16, swap);
    header->ndark = load_i32(bytes + 20, swap);
    header->nstar = load_i32(bytes + 24, swap);
}

static int header_consistent(const tipsy_header *header)
{
    if (header->ndim != 3 || header->nbodies < 0 || header->nsph < 0 || header->ndark < 0 ||
        header->nstar < 0)
        return 0;
    int64_t sum = (int64_t)header->nsph + header->ndark + header->nstar;
    return sum == header->nbodies;
}

/* The bytes a TIPSY file with this header has (the padded header), or 0 when the header is
 * inconsistent in both byte orders. */
static uint64_t tipsy_expected_size(const unsigned char *bytes, size_t size)
{
    if (size < TIPSY_HEADER_UNPADDED)
        return 0;
    for (int swap = 0; swap < 2; ++swap) {
        tipsy_header header;
        decode_header(bytes, swap, &header);
        if (header_consistent(&header))
            return TIPSY_HEADER_PADDED + (uint64_t)header.nsph * TIPSY_GAS_BYTES +
                   (uint64_t)header.ndark * TIPSY_DARK_BYTES +
                   (uint64_t)header.nstar * TIPSY_STAR_BYTES;
    }
    return 0;
}

/* Reads a TIPSY file into memory, never more than its header accounts for plus one byte (to see
 * trailing bytes): the header's sizes are checked against a regular file's size before anything
 * large is allocated, and a device or pipe (--in /dev/zero) is read only that far. A file whose
 * header is inconsistent is read no further than the header. FK_ERR_IO / FK_ERR_HOST_MEMORY with
 * a message on failure; the caller checks the size against the header. */
static fk_status read_tipsy_bytes(const char *path, unsigned char **data, size_t *size, char *error,
                                  size_t error_size)
{
    *data = NULL;
    *size = 0;
    size_t file_size = 0;
    FILE *file = fopen(path, "rb");
    if (!file) {
        fk_format_message(error, error_size, "cannot open %s: %s", path, strerror(errno));
        return FK_ERR_IO;
    }
    unsigned char header[TIPSY_HEADER_PADDED];
    size_t used = fread(header, 1, sizeof header, file);
    uint64_t limit = tipsy_expected_size(header, used);
    struct stat info;
    if (limit > 0 && fstat(fileno(file), &info) == 0 && S_ISREG(info.st_mode) &&
        (uint64_t)info.st_size != limit && (uint64_t)info.st_size + 4 != limit)
        limit = 0; /* the sizes disagree: the header is all the caller needs for its message */
    if (limit > 0)
        limit += 1;
    if (limit > SIZE_MAX / 2)
        limit = 0;
    size_t capacity = used;
    unsigned char *buffer = malloc(capacity ? capacity : 1);
    if (buffer)
        memcpy(buffer, header, used);
    while (buffer && used < limit) {
        if (used == capacity) {
            /* Grown as bytes arrive, never beyond what the header accounts for. */
            size_t grown = capacity < 65536 ? 65536 : 2 * capacity;
            if (grown > limit)
                grown = (size_t)limit;
            unsigned char *bigger = realloc(buffer, grown);
            if (!bigger) {
                free(buffer);
                buffer = NULL;
                break;
            }
            buffer = bigger;
            capacity = grown;
        }
        size_t got = fread(buffer + used, 1, capacity - used, file);
        used += got;
        if (got == 0)
            break;
    }
    if (!buffer) {
        fclose(file);
        fk_format_message(error, error_size, "%s: out of memory reading the file", path);
        return FK_ERR_HOST_MEMORY;
    }
    if (ferror(file)) {
        int saved = errno;
        free(buffer);
        fclose(file);
        fk_format_message(error, error_size, "cannot read %s: %s", path,
                          strerror(saved ? saved : EIO));
        return FK_ERR_IO;
    }
    /* A regular file whose size disagrees with its header was read no further than the header:
     * its real size goes to the caller's message, and the records are never decoded. */
    file_size = used;
    if (used <= sizeof header && fstat(fileno(file), &info) == 0 && S_ISREG(info.st_mode) &&
        (uint64_t)info.st_size > used && (uint64_t)info.st_size <= SIZE_MAX)
        file_size = (size_t)info.st_size;
    fclose(file);
    if (file_size != used && file_size >= TIPSY_HEADER_UNPADDED) {
        /* Pad the buffer's view: only the header (read) is ever decoded from such a file. */
        *data = buffer;
        *size = file_size;
        return FK_OK;
    }
    *data = buffer;
    *size = used;
    return FK_OK;
}

/* Decodes count records of record_size bytes starting at bytes into the set from index first. */
static fk_status decode_records(const unsigned char *bytes, size_t count, size_t record_size,
                                int swap, const char *kind, size_t first, fkt_particle_set *set,
                                const char *path, char *error, size_t error_size)
{
    for (size_t i = 0; i < count; i++) {
        const unsigned char *record = bytes + i * record_size;
        size_t index = first + i;
        double mass = load_f32(record, swap);
        double position[3], velocity[3];
        for (unsigned d = 0; d < 3; d++) {
            position[d] = load_f32(record + 4 + 4 * d, swap);
            velocity[d] = load_f32(record + 16 + 4 * d, swap);
        }
        const char *bad = NULL;
        if (!isfinite(mass))
            bad = "mass";
        else if (!isfinite(position[0]) || !isfinite(position[1]) || !isfinite(position[2]))
            bad = "position";
        else if (set->velocity &&
                 (!isfinite(velocity[0]) || !isfinite(velocity[1]) || !isfinite(velocity[2])))
            bad = "velocity";
        if (bad) {
            fk_format_message(error, error_size,
                              "%s: %s particle %zu (body %zu) has a non-finite %s", path, kind, i,
                              index, bad);
            return FK_ERR_PARSE;
        }
        set->mass[index] = mass;
        for (unsigned d = 0; d < 3; d++)
            set->position[3 * index + d] = position[d];
        if (set->velocity)
            for (unsigned d = 0; d < 3; d++)
                set->velocity[3 * index + d] = velocity[d];
    }
    return FK_OK;
}

fk_status fkt_io_read_tipsy(const char *path, fkt_layout layout, fkt_particle_set *set, char *error,
                            size_t error_size)
{
    if (set)
        memset(set, 0, sizeof *set);
    if (!path || !set || !layout_valid(layout)) {
        fk_format_message(error, error_size, "invalid arguments to fkt_io_read_tipsy");
        return FK_ERR_INVALID_ARGUMENT;
    }
    /* Checked before touching the file: no TIPSY content could satisfy a typed kernel. */
    if (layout != FKT_LAYOUT_XYZM && layout != FKT_LAYOUT_XYZM_VEL) {
        fk_format_message(
            error, error_size,
            "%s: TIPSY files carry gravity data (x y z m); kernel needs %s (use a text file)", path,
            layout_columns_text(layout));
        return FK_ERR_PARSE;
    }
    unsigned char *data;
    size_t size;
    fk_status status = read_tipsy_bytes(path, &data, &size, error, error_size);
    if (status != FK_OK)
        return status;

    tipsy_header header;
    int swap = 0;
    if (size < TIPSY_HEADER_UNPADDED) {
        fk_format_message(error, error_size,
                          "%s: not a TIPSY file (%zu bytes, shorter than a header)", path, size);
        status = FK_ERR_PARSE;
        goto done;
    }
    decode_header(data, 0, &header);
    if (!header_consistent(&header)) {
        swap = 1;
        decode_header(data, 1, &header);
        if (!header_consistent(&header)) {
            fk_format_message(error, error_size,
                              "%s: not a TIPSY file (header is inconsistent in either byte order)",
                              path);
            status = FK_ERR_PARSE;
            goto done;
        }
    }
    if (header.nbodies == 0) {
        fk_format_message(error, error_size, "%s: TIPSY file has no particles", path);
        status = FK_ERR_PARSE;
        goto done;
    }
    /* Counts are at most INT32_MAX each, so these sums fit in 64 bits. */
    uint64_t records = (uint64_t)header.nsph * TIPSY_GAS_BYTES +
                       (uint64_t)header.ndark * TIPSY_DARK_BYTES +
                       (uint64_t)header.nstar * TIPSY_STAR_BYTES;
    uint64_t expected = TIPSY_HEADER_PADDED + records;
    size_t header_size = TIPSY_HEADER_PADDED;
    if ((uint64_t)size != expected) {
        if ((uint64_t)size == TIPSY_HEADER_UNPADDED + records) {
            header_size = TIPSY_HEADER_UNPADDED; /* the rare variant without the pad word */
        } else if ((uint64_t)size < expected) {
            fk_format_message(
                error, error_size,
                "%s: truncated TIPSY file: expected %llu bytes (%d gas, %d dark, %d star), "
                "found %zu",
                path, (unsigned long long)expected, (int)header.nsph, (int)header.ndark,
                (int)header.nstar, size);
            status = FK_ERR_PARSE;
            goto done;
        } else {
            fk_format_message(
                error, error_size,
                "%s: TIPSY file has %llu unexpected trailing bytes: expected %llu bytes "
                "(%d gas, %d dark, %d star), found %zu",
                path, (unsigned long long)((uint64_t)size - expected), (unsigned long long)expected,
                (int)header.nsph, (int)header.ndark, (int)header.nstar, size);
            status = FK_ERR_PARSE;
            goto done;
        }
    }

    status = fkt_particle_set_alloc(set, layout, (size_t)header.nbodies);
    if (status != FK_OK) {
        fk_format_message(error, error_size, "%s: out of memory for %d particles", path,
                          (int)header.nbodies);
        goto done;
    }
    const unsigned char *cursor = data + header_size;
    size_t first = 0;
    status = decode_records(cursor, (size_t)header.nsph, TIPSY_GAS_BYTES, swap, "gas", first, set,
                            path, error, error_size);
    cursor += (size_t)header.nsph * TIPSY_GAS_BYTES;
    first += (size_t)header.nsph;
    if (status == FK_OK)
        status = decode_records(cursor, (size_t)header.ndark, TIPSY_DARK_BYTES, swap, "dark", first,
                                set, path, error, error_size);
    cursor += (size_t)header.ndark * TIPSY_DARK_BYTES;
    first += (size_t)header.ndark;
    if (status == FK_OK)
        status = decode_records(cursor, (size_t)header.nstar, TIPSY_STAR_BYTES, swap, "star", first,
                                set, path, error, error_size);
done:
    free(data);
    if (status != FK_OK)
        fkt_particle_set_free(set);
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* Either format */

static int has_suffix(const char *path, const char *suffix)
{
    size_t length = strlen(path), suffix_length = strlen(suffix);
    return length >= suffix_length && strcasecmp(path + length - suffix_length, suffix) == 0;
}

fk_status fkt_io_read_particles(const char *path, fkt_file_format format, fkt_layout layout,
                                fkt_particle_set *set, char *error, size_t error_size)
{
    if (set)
        memset(set, 0, sizeof *set);
    if (!path) {
        fk_format_message(error, error_size, "no input file given");
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (format == FKT_FORMAT_AUTO)
        format = (has_suffix(path, ".bin") || has_suffix(path, ".tipsy")) ? FKT_FORMAT_TIPSY
                                                                          : FKT_FORMAT_TEXT;
    switch (format) {
    case FKT_FORMAT_TEXT:
        return fkt_io_read_text(path, layout, set, error, error_size);
    case FKT_FORMAT_TIPSY:
        return fkt_io_read_tipsy(path, layout, set, error, error_size);
    case FKT_FORMAT_AUTO:
        break;
    }
    fk_format_message(error, error_size, "%s: unknown file format %d", path, (int)format);
    return FK_ERR_INVALID_ARGUMENT;
}

/* ---------------------------------------------------------------------------------------------- */
/* Force output */

/* Returns 0 on success; on failure errno describes the error. */
static int write_force_lines(FILE *file, size_t count, unsigned components, const double *forces,
                             const double *potentials)
{
    for (size_t i = 0; i < count; i++) {
        for (unsigned c = 0; c < components; c++)
            if (fprintf(file, c ? " %.17g" : "%.17g", forces[i * components + c]) < 0)
                return -1;
        if (potentials && fprintf(file, " %.17g", potentials[i]) < 0)
            return -1;
        if (putc('\n', file) == EOF)
            return -1;
    }
    return 0;
}

typedef struct force_lines {
    size_t count;
    unsigned components;
    const double *forces, *potentials;
} force_lines;

static int write_force_lines_to(FILE *file, const void *context)
{
    const force_lines *lines = context;
    return write_force_lines(file, lines->count, lines->components, lines->forces,
                             lines->potentials);
}

fk_status fkt_io_write_forces(const char *path, size_t count, unsigned components,
                              const double *forces, const double *potentials, char *error,
                              size_t error_size)
{
    if (components == 0 || (count > 0 && !forces)) {
        fk_format_message(error, error_size, "invalid arguments to fkt_io_write_forces");
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (!path || strcmp(path, "-") == 0) {
        errno = 0;
        if (write_force_lines(stdout, count, components, forces, potentials) != 0 ||
            fflush(stdout) != 0 || ferror(stdout)) {
            fk_format_message(error, error_size, "cannot write standard output: %s",
                              strerror(errno ? errno : EIO));
            return FK_ERR_IO;
        }
        return FK_OK;
    }
    if (*path == '\0') {
        fk_format_message(error, error_size, "empty output file name");
        return FK_ERR_INVALID_ARGUMENT;
    }

    const force_lines lines = {count, components, forces, potentials};
    return fkt_io_write_atomic(path, write_force_lines_to, &lines, error, error_size);
}

fk_status fkt_io_write_atomic(const char *path, int (*write_body)(FILE *file, const void *context),
                              const void *context, char *error, size_t error_size)
{
    return fk__write_file(path, write_body, context, error, error_size);
}
