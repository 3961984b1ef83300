/* Reading a checkpoint (format: simulate_checkpoint.c, docs/simulate.md): the checksum over the
 * whole file first, then the content, hashed again as it is parsed, each part checked before its
 * counts are believed. Separate from writing because it is most of the format's code: every way a
 * file can be damaged, truncated or too large has its message. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "support/simulate_private.h"

typedef struct reader {
    FILE *file;
    const char *path;
    char *line;
    size_t capacity;
    size_t number;
    int too_long; /* a line beyond FKT_IO_MAX_LINE: input too large */
    int hashing;  /* the lines read go into hash (all but the checksum line) */
    XXH3_state_t hash;
} reader;

/* The next line without its line end ("\n" or "\r\n": a CRLF copy reads the same); NULL at the
 * end of the file. */
static char *next_line(reader *r)
{
    long length = fkt_io_getline(&r->line, &r->capacity, r->file);
    if (length == -2)
        r->too_long = 1;
    if (length < 0)
        return NULL;
    r->number++;
    if (r->hashing)
        fkt_sim__hash_line(&r->hash, r->line, (size_t)length);
    if (length > 0 && r->line[length - 1] == '\n')
        r->line[--length] = '\0';
    if (length > 0 && r->line[length - 1] == '\r')
        r->line[--length] = '\0';
    return r->line;
}

/* The first pass: the checksum of every line but the last, against the last line's
 * ("checksum XXH3-64 H"), before anything else in the file is believed. Returns the problem, or
 * NULL with *stored the checksum; detail holds the text of a problem made here. */
static const char *verify_checksum(reader *r, uint64_t *stored, char *detail, size_t size)
{
    XXH3_state_t hash;
    XXH3_64bits_reset(&hash);
    char *held = NULL; /* the line before the current one, hashed once another follows it */
    size_t held_capacity = 0;
    long held_length = -1, length = 0;
    for (;;) {
        length = fkt_io_getline(&r->line, &r->capacity, r->file);
        if (length == -2)
            r->too_long = 1;
        if (length < 0)
            break;
        if (held_length >= 0)
            fkt_sim__hash_line(&hash, held, (size_t)held_length);
        char *swap_line = held;
        size_t swap_capacity = held_capacity;
        held = r->line;
        held_capacity = r->capacity;
        held_length = length;
        r->line = swap_line;
        r->capacity = swap_capacity;
    }
    const char *problem = NULL;
    if (r->too_long || ferror(r->file)) {
        problem = ""; /* reported by the caller */
    } else if (length == -3) {
        snprintf(detail, size, "cannot read checkpoint %s: out of memory", r->path);
        problem = detail;
    } else {
        if (held_length > 0 && held[held_length - 1] == '\n')
            held[--held_length] = '\0';
        if (held_length > 0 && held[held_length - 1] == '\r')
            held[--held_length] = '\0';
        const uint64_t computed = XXH3_64bits_digest(&hash);
        if (held_length < 0 || !fkt_sim__parse_checksum_line(held, stored)) {
            snprintf(detail, size,
                     "checkpoint %s is damaged: its last line is not 'checksum XXH3-64 "
                     "<16 hex digits>' (truncated or edited?)",
                     r->path);
            problem = detail;
        } else if (computed != *stored) {
            snprintf(detail, size,
                     "checkpoint %s is damaged: checksum mismatch (its content's XXH3-64 is "
                     "%016llx, its last line says %016llx: the file was changed after it was "
                     "written)",
                     r->path, (unsigned long long)computed, (unsigned long long)*stored);
            problem = detail;
        }
    }
    free(held);
    return problem;
}

/* "KEY VALUE" with an unsigned integer value. */
static int parse_count_line(const char *line, const char *key, unsigned long long *value)
{
    const size_t length = strlen(key);
    if (strncmp(line, key, length) != 0 || line[length] != ' ')
        return 0;
    const char *start = line + length + 1;
    if (*start < '0' || *start > '9')
        return 0;
    char *end = NULL;
    errno = 0;
    *value = strtoull(start, &end, 10);
    return errno == 0 && *end == '\0';
}

/* count numbers separated by spaces (strtod reads %a's hexadecimal floats exactly). */
static int parse_numbers(const char *text, double *values, size_t count)
{
    const char *cursor = text;
    for (size_t c = 0; c < count; ++c) {
        char *end = NULL;
        errno = 0;
        values[c] = strtod(cursor, &end);
        if (end == cursor || errno == ERANGE || !isfinite(values[c]))
            return 0;
        cursor = end;
    }
    while (*cursor == ' ')
        ++cursor;
    return *cursor == '\0';
}

/* Room for entry index in an array whose final length is count: grown by doubling. */
static int grow_array(void **array, size_t index, size_t count, size_t element, size_t *capacity)
{
    if (index < *capacity)
        return 1;
    size_t grown = *capacity ? 2 * *capacity : 1024;
    if (grown > count)
        grown = count;
    if (grown <= index || grown > SIZE_MAX / element)
        return 0;
    void *bigger = realloc(*array, grown * element);
    if (!bigger)
        return 0;
    *array = bigger;
    *capacity = grown;
    return 1;
}

static int grow_samples(fkt_sim_checkpoint *checkpoint, size_t index, size_t *capacity)
{
    void *samples = checkpoint->samples;
    int ok = grow_array(&samples, index, checkpoint->sample_count, sizeof *checkpoint->samples,
                        capacity);
    checkpoint->samples = samples;
    return ok;
}

static int grow_particles(fkt_sim_checkpoint *checkpoint, size_t index, size_t *capacity)
{
    double **arrays[] = {&checkpoint->position, &checkpoint->velocity, &checkpoint->acceleration,
                         &checkpoint->jerk};
    const int count = checkpoint->has_jerk ? 4 : 3;
    if (index < *capacity)
        return 1;
    size_t capacities[4];
    for (int a = 0; a < count; ++a) {
        capacities[a] = *capacity;
        void *array = *arrays[a];
        int ok = grow_array(&array, index, checkpoint->n, 3 * sizeof(double), &capacities[a]);
        *arrays[a] = array;
        if (!ok)
            return 0;
    }
    *capacity = capacities[0];
    return 1;
}

/* The first line: "forcekit-checkpoint VERSION" with the version this forcekit reads. */
static const char *read_version(reader *r, char *detail, size_t detail_size)
{
    char *line = next_line(r);
    int version = 0;
    char tail = 0;
    if (!line || sscanf(line, "forcekit-checkpoint %d%c", &version, &tail) != 1)
        return "not a forcekit checkpoint (the first line must be 'forcekit-checkpoint "
               "VERSION')";
    if (version == 1) {
        /* Format 1 had no checksum, and was written only by development versions before 0.2.0
         * (checkpoints arrived with 0.2.0): a restart that cannot be checked is refused rather
         * than trusted, and the run it came from can be repeated from its inputs. */
        return "checkpoint format version 1 has no checksum and is no longer read (it came "
               "only from development versions before 0.2.0: repeat that run); this "
               "forcekit reads 2";
    }
    if (version != FKT_SIM_CHECKPOINT_VERSION) {
        snprintf(detail, detail_size, "checkpoint format version %d; this forcekit reads %d",
                 version, FKT_SIM_CHECKPOINT_VERSION);
        return detail;
    }
    return NULL;
}

/* The checksum first, over the whole file; then back to the start, past the version line, with
 * the content hashed again as it is parsed (the bytes parsed are the bytes checked, whatever
 * happened to the file in between). A problem of the whole file is written to whole and returned
 * as ""; a line too long or a read error is left in r for read_result. */
static const char *check_whole_file(reader *r, uint64_t *stored, char *whole, size_t whole_size)
{
    if (fseek(r->file, 0, SEEK_SET) != 0) {
        snprintf(whole, whole_size,
                 "cannot read checkpoint %s twice (the checksum, then the content): it must be "
                 "a regular file",
                 r->path);
        return "";
    }
    if (verify_checksum(r, stored, whole, whole_size))
        return ""; /* in whole, or r->too_long / a read error */
    if (fseek(r->file, 0, SEEK_SET) != 0) {
        snprintf(whole, whole_size, "cannot read checkpoint %s again", r->path);
        return "";
    }
    r->number = 0;
    r->hashing = 1;
    XXH3_64bits_reset(&r->hash);
    next_line(r); /* the version line, read before */
    return NULL;
}

/* The header after the version: options and comments up to "step S", then "n N", "columns C"
 * and "samples M". */
static const char *read_header(reader *r, fkt_sim_checkpoint *checkpoint, size_t *columns)
{
    unsigned long long value = 0;
    for (;;) {
        char *line = next_line(r);
        if (!line)
            return "truncated: no 'step' line";
        if (line[0] == '#' || line[0] == '\0')
            continue;
        if (strncmp(line, "option ", 7) == 0) {
            const char *key = line + 7, *space = strchr(key, ' ');
            const size_t key_length = space ? (size_t)(space - key) : strlen(key);
            if (key_length == 0 || key_length >= sizeof checkpoint->options[0].key ||
                checkpoint->option_count == FKT_SIM_MAX_OPTIONS)
                return "malformed or too many options";
            fkt_sim_option *option = &checkpoint->options[checkpoint->option_count++];
            memcpy(option->key, key, key_length);
            option->key[key_length] = '\0';
            snprintf(option->value, sizeof option->value, "%s", space ? space + 1 : "");
            continue;
        }
        if (!parse_count_line(line, "step", &value))
            return "expected 'step S'";
        checkpoint->step = value;
        break;
    }
    char *line = next_line(r);
    if (!line || !parse_count_line(line, "n", &value) || value == 0 || value > (1ull << 30))
        return "expected 'n N' with 0 < N <= 2^30";
    checkpoint->n = (size_t)value;
    line = next_line(r);
    if (!line || !parse_count_line(line, "columns", &value) || (value != 9 && value != 12))
        return "expected 'columns 9' or 'columns 12'";
    checkpoint->has_jerk = value == 12;
    *columns = (size_t)value;
    line = next_line(r);
    if (!line || !parse_count_line(line, "samples", &value) || value > (1ull << 32))
        return "expected 'samples M'";
    checkpoint->sample_count = (size_t)value;
    return NULL;
}

/* The energy samples, "step kinetic potential" each. The header's counts drive no allocation
 * before the data is there (a 71-byte file asked for 24.7 GB): the arrays grow as the lines
 * arrive, never beyond the counts (here and in read_particles). */
static const char *read_samples(reader *r, fkt_sim_checkpoint *checkpoint)
{
    size_t sample_capacity = 0;
    for (size_t s = 0; s < checkpoint->sample_count; ++s) {
        if (!grow_samples(checkpoint, s, &sample_capacity))
            return "out of memory";
        char *line = next_line(r);
        char *end = NULL;
        double energies[2];
        if (!line || line[0] < '0' || line[0] > '9')
            return "truncated or malformed energy sample";
        errno = 0;
        checkpoint->samples[s].step = strtoull(line, &end, 10);
        if (errno || *end != ' ' || !parse_numbers(end, energies, 2))
            return "malformed energy sample (expected: step kinetic potential)";
        checkpoint->samples[s].kinetic = energies[0];
        checkpoint->samples[s].potential = energies[1];
    }
    return NULL;
}

/* "particles", then n lines of position, velocity, acceleration (and jerk). */
static const char *read_particles(reader *r, fkt_sim_checkpoint *checkpoint, size_t columns,
                                  char *detail, size_t detail_size)
{
    char *line = next_line(r);
    if (!line || strcmp(line, "particles") != 0)
        return "expected 'particles'";
    size_t particle_capacity = 0;
    for (size_t i = 0; i < checkpoint->n; ++i) {
        double row[12];
        if (!grow_particles(checkpoint, i, &particle_capacity))
            return "out of memory";
        line = next_line(r);
        if (!line)
            return "truncated: fewer particle lines than n";
        if (!parse_numbers(line, row, columns)) {
            snprintf(detail, detail_size, "expected %zu finite numbers", columns);
            return detail;
        }
        for (int k = 0; k < 3; ++k) {
            checkpoint->position[3 * i + (size_t)k] = row[k];
            checkpoint->velocity[3 * i + (size_t)k] = row[3 + k];
            checkpoint->acceleration[3 * i + (size_t)k] = row[6 + k];
            if (checkpoint->jerk)
                checkpoint->jerk[3 * i + (size_t)k] = row[9 + k];
        }
    }
    return NULL;
}

/* "end", the checksum line (the same as in the first pass, and of the lines parsed), and nothing
 * after it. A mismatch is a problem of the whole file: written to whole, returned as "". */
static const char *read_end(reader *r, uint64_t stored, char *whole, size_t whole_size)
{
    char *line = next_line(r);
    if (!line || strcmp(line, "end") != 0)
        return "truncated: no 'end' line after the particles";
    r->hashing = 0; /* the checksum line */
    uint64_t again = 0;
    line = next_line(r);
    if (!line || !fkt_sim__parse_checksum_line(line, &again) || again != stored ||
        XXH3_64bits_digest(&r->hash) != stored) {
        snprintf(whole, whole_size,
                 "checkpoint %s is damaged: checksum mismatch (the file changed while it was "
                 "read, or holds text after 'end')",
                 r->path);
        return "";
    }
    if (next_line(r))
        return "text after the checksum line";
    return NULL;
}

/* Closes the file and turns what went wrong into a status and a message: a line too long, then a
 * read error, then a problem of the whole file (no line number), then one of the current line. */
static fk_status read_result(reader *r, fkt_sim_checkpoint *checkpoint, const char *problem,
                             char *whole, char *error, size_t error_size)
{
    if (r->too_long) {
        problem = "input too large: a line longer than FKT_IO_MAX_LINE (1 MiB)";
        whole[0] = '\0';
    }
    const int read_error = ferror(r->file);
    fclose(r->file);
    free(r->line);
    fk_status status = FK_OK;
    if (read_error) {
        fk_format_message(error, error_size, "cannot read checkpoint %s", r->path);
        status = FK_ERR_IO;
    } else if (whole[0]) {
        fk_format_message(error, error_size, "%s", whole);
        status = FK_ERR_PARSE;
    } else if (problem) {
        fk_format_message(error, error_size, "%s:%zu: %s", r->path, r->number, problem);
        status = FK_ERR_PARSE;
    }
    if (status != FK_OK)
        fkt_sim_checkpoint_free(checkpoint);
    return status;
}

fk_status fkt_sim_checkpoint_read(const char *path, fkt_sim_checkpoint *checkpoint, char *error,
                                  size_t error_size)
{
    memset(checkpoint, 0, sizeof *checkpoint);
    reader r = {.path = path};
    r.file = fopen(path, "r");
    if (!r.file) {
        fk_format_message(error, error_size, "cannot open checkpoint %s: %s", path,
                          strerror(errno));
        return FK_ERR_IO;
    }
    char detail[160] = "";
    /* A whole-file refusal (a damaged file) is reported without a line number. */
    char whole[4608] = ""; /* a path (up to PATH_MAX) and the reason */
    uint64_t stored = 0;
    size_t columns = 0;
    const char *problem = read_version(&r, detail, sizeof detail);
    if (!problem)
        problem = check_whole_file(&r, &stored, whole, sizeof whole);
    if (!problem)
        problem = read_header(&r, checkpoint, &columns);
    if (!problem)
        problem = read_samples(&r, checkpoint);
    if (!problem)
        problem = read_particles(&r, checkpoint, columns, detail, sizeof detail);
    if (!problem)
        problem = read_end(&r, stored, whole, sizeof whole);
    return read_result(&r, checkpoint, problem, whole, error, error_size);
}
