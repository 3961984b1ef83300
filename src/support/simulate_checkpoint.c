/* The checkpoint format (docs/simulate.md): writing a run's state as text with exact hexadecimal
 * floats and an XXH3-64 checksum over every line as its last line, and the parts of the format
 * that reading shares (a line's canonical form for the checksum, the checksum line). Reading is
 * in simulate_checkpoint_read.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "support/simulate_private.h"

/* The writer's output and the checksum of everything it wrote (the file's bytes: it writes "\n"
 * line ends, the canonical form). */
typedef struct checksum_writer {
    FILE *file;
    XXH3_state_t hash;
    int failed;
} checksum_writer;

static void emit(checksum_writer *w, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void emit(checksum_writer *w, const char *format, ...)
{
    char text[1024]; /* the longest piece is an option line: 32 + 480 bytes */
    va_list args;
    va_start(args, format);
    const int length = vsnprintf(text, sizeof text, format, args);
    va_end(args);
    if (length < 0 || (size_t)length >= sizeof text) {
        w->failed = 1;
        return;
    }
    XXH3_64bits_update(&w->hash, text, (size_t)length);
    if (fwrite(text, 1, (size_t)length, w->file) != (size_t)length)
        w->failed = 1;
}

static int write_checkpoint_body(FILE *file, const fkt_sim *sim, const fkt_sim_option *options,
                                 size_t option_count, const fkt_sim_sample *samples,
                                 size_t sample_count)
{
    const int has_jerk = sim->jerk != NULL;
    checksum_writer w = {.file = file};
    XXH3_64bits_reset(&w.hash);
    emit(&w, "forcekit-checkpoint %d\n", FKT_SIM_CHECKPOINT_VERSION);
    emit(&w, "# forcekit simulate state; continue with --restart FILE and the same options. "
             "Numbers are C99 hexadecimal floats (exact). The last line is the XXH3-64 of every "
             "line before it.\n");
    for (size_t o = 0; o < option_count; ++o) {
        char value[sizeof options[o].value];
        size_t k = 0;
        for (const char *c = options[o].value; *c && k + 1 < sizeof value; ++c) /* one line */
            value[k++] = *c == '\n' || *c == '\r' ? ' ' : *c;
        value[k] = '\0';
        emit(&w, "option %s %s\n", options[o].key, value);
    }
    emit(&w, "step %llu\nn %zu\ncolumns %d\nsamples %zu\n", (unsigned long long)sim->step, sim->n,
         has_jerk ? 12 : 9, sample_count);
    for (size_t s = 0; s < sample_count; ++s)
        emit(&w, "%llu %a %a\n", (unsigned long long)samples[s].step, samples[s].kinetic,
             samples[s].potential);
    emit(&w, "particles\n");
    for (size_t i = 0; i < sim->n && !w.failed; ++i) {
        const double *rows[] = {sim->position, sim->velocity, sim->acceleration, sim->jerk};
        for (int r = 0; r < (has_jerk ? 4 : 3); ++r)
            for (int k = 0; k < 3; ++k)
                emit(&w, r == 0 && k == 0 ? "%a" : " %a", rows[r][3 * i + (size_t)k]);
        emit(&w, "\n");
    }
    emit(&w, "end\n");
    if (w.failed)
        return -1;
    return fprintf(file, "checksum XXH3-64 %016llx\n",
                   (unsigned long long)XXH3_64bits_digest(&w.hash)) < 0
               ? -1
               : 0;
}

/* A line's canonical form for the checksum: its text without the terminator ("\n", or "\r\n" from
 * a CRLF conversion), then "\n". */
void fkt_sim__hash_line(XXH3_state_t *hash, const char *text, size_t length)
{
    if (length > 0 && text[length - 1] == '\n')
        --length;
    if (length > 0 && text[length - 1] == '\r')
        --length;
    XXH3_64bits_update(hash, text, length);
    XXH3_64bits_update(hash, "\n", 1);
}

uint64_t fkt_sim_checkpoint_checksum(const char *body, size_t size)
{
    XXH3_state_t hash;
    XXH3_64bits_reset(&hash);
    size_t at = 0;
    while (at < size) {
        const char *newline = memchr(body + at, '\n', size - at);
        const size_t length = newline ? (size_t)(newline - (body + at)) + 1 : size - at;
        fkt_sim__hash_line(&hash, body + at, length);
        at += length;
    }
    return XXH3_64bits_digest(&hash);
}

/* "checksum XXH3-64 " and 16 hexadecimal digits. */
int fkt_sim__parse_checksum_line(const char *line, uint64_t *value)
{
    static const char prefix[] = "checksum XXH3-64 ";
    if (strncmp(line, prefix, sizeof prefix - 1) != 0)
        return 0;
    const char *digits = line + sizeof prefix - 1;
    uint64_t v = 0;
    for (int k = 0; k < 16; ++k) {
        const char c = digits[k];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return 0;
        v = v << 4 | (uint64_t)d;
    }
    if (digits[16] != '\0')
        return 0;
    *value = v;
    return 1;
}

typedef struct checkpoint_parts {
    const fkt_sim *sim;
    const fkt_sim_option *options;
    size_t option_count;
    const fkt_sim_sample *samples;
    size_t sample_count;
} checkpoint_parts;

static int write_checkpoint_to(FILE *file, const void *context)
{
    const checkpoint_parts *parts = context;
    return write_checkpoint_body(file, parts->sim, parts->options, parts->option_count,
                                 parts->samples, parts->sample_count);
}

fk_status fkt_sim_checkpoint_write(const char *path, const fkt_sim *sim,
                                   const fkt_sim_option *options, size_t option_count,
                                   const fkt_sim_sample *samples, size_t sample_count, char *error,
                                   size_t error_size)
{
    if (!path || !*path || !sim) {
        fk_format_message(error, error_size, "invalid arguments to fkt_sim_checkpoint_write");
        return FK_ERR_INVALID_ARGUMENT;
    }
    const checkpoint_parts parts = {sim, options, option_count, samples, sample_count};
    return fkt_io_write_atomic(path, write_checkpoint_to, &parts, error, error_size);
}

void fkt_sim_checkpoint_free(fkt_sim_checkpoint *checkpoint)
{
    if (!checkpoint)
        return;
    free(checkpoint->position);
    free(checkpoint->velocity);
    free(checkpoint->acceleration);
    free(checkpoint->jerk);
    free(checkpoint->samples);
    memset(checkpoint, 0, sizeof *checkpoint);
}

const char *fkt_sim_checkpoint_option(const fkt_sim_checkpoint *checkpoint, const char *key)
{
    for (size_t o = 0; o < checkpoint->option_count; ++o)
        if (strcmp(checkpoint->options[o].key, key) == 0)
            return checkpoint->options[o].value;
    return NULL;
}
