/* Block steps over MPI (include/forcekit/forcekit_mpi.h, fk_mpi_sources; issue #20): each rank
 * holds its own sources (j-particles) in an fk_sources; at a block step the ranks' active targets
 * are gathered (MPI_Allgatherv), every rank evaluates all of them against its sources, and the
 * partial results are combined: fixed64's sums as 64-bit integers (MPI_SUM: exact and
 * order-free, at the scale of one engine holding every source (fk_sources_set_scale_count), so
 * the results are one engine's bit for bit on every rank count), the other
 * accumulators' decoded partial sums added in rank order on every rank (deterministic for a
 * given P), and the nearest source as the smallest r^2 over the ranks, ties to the smaller ID
 * (as one engine breaks them). Uses only the public API. */
#include "forcekit/forcekit_mpi.h"

#include "mpi/agree.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define ERROR_TEXT FK__MPI_ERROR_TEXT
#define SUMS 7 /* ax ay az jx jy jz phi */

static _Thread_local char create_error[ERROR_TEXT];

struct fk_mpi_sources {
    fk__mpi_part part; /* communicator, errors, figures (agree.h) */
    fk_context *context;
    fk_sources *engine;
    size_t max_targets;
    int fixed64;
};

static fk_status engine_fail(fk_mpi_sources *m, fk_status status, const char *call)
{
    return fk__mpi_local_fail(&m->part, status, "%s: %s: %s", call, fk_status_string(status),
                              fk_context_last_error(m->context));
}

/* What every rank's engine must share (as used, after the defaults): the accumulator, the
 * positions' form and max_targets. Capacity is each rank's own. */
static uint64_t config_digest(const fk_sources_config *used)
{
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    const char *accum = used->accum ? used->accum : "";
    XXH3_64bits_update(&state, accum, strlen(accum) + 1);
    const unsigned long long values[2] = {(unsigned long long)used->positions,
                                          (unsigned long long)used->max_targets};
    XXH3_64bits_update(&state, values, sizeof values);
    return XXH3_64bits_digest(&state);
}

fk_status fk_mpi_sources_create(fk_context *context, const fk_sources_config *config, MPI_Comm comm,
                                fk_mpi_sources **out)
{
    if (!out)
        return FK_ERR_INVALID_ARGUMENT;
    *out = NULL;
    create_error[0] = '\0';
    fk_mpi_sources *m = calloc(1, sizeof *m);
    fk_status status = fk__mpi_part_open(m ? &m->part : NULL, comm, create_error);
    if (status != FK_OK) {
        free(m);
        return status;
    }
    m->context = context;
    if (!context || !config)
        status =
            fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT, "fk_mpi_sources_create: NULL %s",
                               context ? "config" : "context");
    else if ((status = fk_sources_create(context, config, &m->engine)) != FK_OK)
        status = engine_fail(m, status, "fk_sources_create");
    uint64_t digest = 0;
    if (status == FK_OK) {
        fk_sources_config used;
        fk_sources_get_config(m->engine, &used);
        m->max_targets = used.max_targets;
        m->fixed64 = used.accum && strcmp(used.accum, "fixed64") == 0;
        digest = config_digest(&used);
    }
    status = fk__mpi_agree(&m->part, status);
    /* The ranks must agree on what decides their collectives: fixed64 reduces integers where the
     * others gather doubles, and max_targets bounds every block step (a rank with another one
     * would fail a step the others run, and leave them waiting). */
    if (status == FK_OK)
        status = fk__mpi_agree_replicated(&m->part, "fk_mpi_sources_create", "config", 0, digest);
    if (status != FK_OK) {
        memcpy(create_error, m->part.error, sizeof create_error);
        fk_mpi_sources_destroy(m);
        return status;
    }
    *out = m;
    return FK_OK;
}

void fk_mpi_sources_destroy(fk_mpi_sources *m)
{
    if (!m)
        return;
    fk_sources_destroy(m->engine);
    fk__mpi_part_close(&m->part);
    free(m);
}

fk_status fk_mpi_sources_set(fk_mpi_sources *m, size_t slot, const fk_source *source)
{
    if (!m)
        return FK_ERR_INVALID_ARGUMENT;
    const fk_status status = fk_sources_set(m->engine, slot, source);
    if (status != FK_OK)
        snprintf(m->part.error, sizeof m->part.error, "%s", fk_context_last_error(m->context));
    return status;
}

const char *fk_mpi_sources_last_error(const fk_mpi_sources *m)
{
    return m ? m->part.error : create_error;
}

fk_status fk_mpi_sources_figures(fk_mpi_sources *m, int root, fk_mpi_rank_figures *figures)
{
    return m ? fk__mpi_gather_figures(&m->part, root, figures) : FK_ERR_INVALID_ARGUMENT;
}

/* The gathered active set and the results of every target. */
typedef struct block {
    int *counts, *firsts, *counts3, *firsts3;
    size_t total;
    int *id;
    double *position, *velocity, *acc_hint, *jerk_hint, *pot_hint;
    uint64_t *words;     /* FK_SOURCES_RAW_WORDS per target: this rank's partial results */
    double *partial;     /* SUMS per target: this rank's decoded partial sums (not fixed64) */
    double *gathered;    /* every rank's partial sums, or nearest pairs */
    double *own_nearest; /* 2 per target: this rank's nearest source (r^2, ID) */
    double *acc, *jerk, *pot;
    int *nearest;
} block;

static void block_free(block *b)
{
    void *arrays[] = {b->counts,   b->firsts,      b->counts3,   b->firsts3,  b->id,    b->position,
                      b->velocity, b->acc_hint,    b->jerk_hint, b->pot_hint, b->words, b->partial,
                      b->gathered, b->own_nearest, b->acc,       b->jerk,     b->pot,   b->nearest};
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; ++k)
        free(arrays[k]);
    memset(b, 0, sizeof *b);
}

static void gather(fk_mpi_sources *m, const void *mine, void *all, const int *counts,
                   const int *firsts, MPI_Datatype type)
{
    const double start = MPI_Wtime();
    MPI_Allgatherv(mine, counts[m->part.rank], type, all, counts, firsts, type, m->part.comm);
    m->part.figures.communication_seconds += MPI_Wtime() - start;
}

/* This rank's targets, checked before any collective (the ranks then agree on the status). */
static fk_status check_targets(fk_mpi_sources *m, const fk_targets *mine)
{
    fk_status status = FK_OK;
    if (!mine)
        status = fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT, "evaluate: NULL targets");
    else if (mine->count && (!mine->id || !mine->position || !mine->velocity))
        status =
            fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT, "evaluate: NULL target arrays");
    else if (mine->h2)
        status = fk__mpi_local_fail(&m->part, FK_ERR_UNSUPPORTED,
                                    "evaluate: neighbour lists (h2) are not combined across ranks");
    else if (mine->sources == 0)
        status =
            fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT,
                               "evaluate: every rank needs at least one source (targets.sources)");
    else if (mine->count > (size_t)INT_MAX / 3)
        status = fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT, "evaluate: %zu targets",
                                    mine->count);
    return status;
}

/* The active set over the ranks: the counts and offsets of every rank's targets into b, and whether
 * the scale hints come (*with_hints); time, eps2 and which hints come must agree. b->total 0: no
 * active target anywhere. */
static fk_status agree_on_block(fk_mpi_sources *m, const fk_targets *mine, block *b,
                                int *with_hints)
{
    const int ranks = m->part.size;
    b->counts = calloc((size_t)ranks, sizeof *b->counts);
    b->firsts = calloc((size_t)ranks, sizeof *b->firsts);
    b->counts3 = calloc((size_t)ranks, sizeof *b->counts3);
    b->firsts3 = calloc((size_t)ranks, sizeof *b->firsts3);
    fk_status status = fk__mpi_agree(
        &m->part, b->counts && b->firsts && b->counts3 && b->firsts3
                      ? FK_OK
                      : fk__mpi_local_fail(&m->part, FK_ERR_HOST_MEMORY, "out of host memory"));
    if (status != FK_OK)
        return status; /* the caller frees b */
    const int count = (int)mine->count;
    MPI_Allgather(&count, 1, MPI_INT, b->counts, 1, MPI_INT, m->part.comm);
    for (int r = 0; r < ranks; ++r) {
        b->firsts[r] = (int)b->total;
        b->counts3[r] = 3 * b->counts[r];
        b->firsts3[r] = 3 * (int)b->total;
        b->total += (size_t)b->counts[r];
    }
    double agreed[4] = {mine->time, -mine->time, mine->eps2, -mine->eps2};
    MPI_Allreduce(MPI_IN_PLACE, agreed, 4, MPI_DOUBLE, MPI_MAX, m->part.comm);
    int hints[2] = {mine->count == 0 || (mine->acc_hint && mine->jerk_hint && mine->pot_hint),
                    mine->count == 0 || (!mine->acc_hint && !mine->jerk_hint && !mine->pot_hint)};
    MPI_Allreduce(MPI_IN_PLACE, hints, 2, MPI_INT, MPI_MIN, m->part.comm);
    if (b->total == 0)
        return FK_OK; /* no active target anywhere */
    if (agreed[0] != -agreed[1] || agreed[2] != -agreed[3])
        status = fk__mpi_everyone_fails(&m->part, FK_ERR_INVALID_ARGUMENT,
                                        "evaluate: the ranks' targets differ in time or eps2");
    else if (!hints[0] && !hints[1])
        status = fk__mpi_everyone_fails(
            &m->part, FK_ERR_INVALID_ARGUMENT,
            "evaluate: some ranks give all three scale hints and others not");
    else if (b->total > m->max_targets)
        status = fk__mpi_everyone_fails(&m->part, FK_ERR_INVALID_ARGUMENT,
                                        "evaluate: %zu active targets over the ranks, at most %zu "
                                        "(fk_sources_config.max_targets)",
                                        b->total, m->max_targets);
    *with_hints = hints[0] && !hints[1];
    return status;
}

/* The block's arrays for b->total targets; 0 without memory. */
static int allocate_block(block *b, int ranks, int with_hints)
{
    const size_t t = b->total;
    b->id = malloc(t * sizeof *b->id);
    b->position = malloc(3 * t * sizeof *b->position);
    b->velocity = malloc(3 * t * sizeof *b->velocity);
    if (with_hints) {
        b->acc_hint = malloc(3 * t * sizeof *b->acc_hint);
        b->jerk_hint = malloc(3 * t * sizeof *b->jerk_hint);
        b->pot_hint = malloc(t * sizeof *b->pot_hint);
    }
    b->words = malloc(t * FK_SOURCES_RAW_WORDS * sizeof *b->words);
    b->partial = malloc(t * SUMS * sizeof *b->partial);
    b->gathered = malloc((size_t)ranks * t * SUMS * sizeof *b->gathered);
    b->own_nearest = malloc(2 * t * sizeof *b->own_nearest);
    b->acc = malloc(3 * t * sizeof *b->acc);
    b->jerk = malloc(3 * t * sizeof *b->jerk);
    b->pot = malloc(t * sizeof *b->pot);
    b->nearest = malloc(t * sizeof *b->nearest);
    return b->id && b->position && b->velocity &&
           (!with_hints || (b->acc_hint && b->jerk_hint && b->pot_hint)) && b->words &&
           b->partial && b->gathered && b->own_nearest && b->acc && b->jerk && b->pot && b->nearest;
}

/* Every rank's targets against this rank's sources: the raw results into b->words (and, decoded,
 * into b->acc, jerk and pot). */
static fk_status evaluate_locally(fk_mpi_sources *m, const fk_targets *mine, block *b)
{
    const size_t t = b->total;
    /* fixed64's range sized for all the ranks' sources, as one engine holding them would. */
    unsigned long long nj = mine->sources, total_sources = 0;
    MPI_Allreduce(&nj, &total_sources, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, m->part.comm);
    fk_sources_set_scale_count(m->engine, (size_t)total_sources);
    const fk_targets all = {.count = t,
                            .sources = mine->sources,
                            .time = mine->time,
                            .eps2 = mine->eps2,
                            .id = b->id,
                            .position = b->position,
                            .velocity = b->velocity,
                            .acc_hint = b->acc_hint,
                            .jerk_hint = b->jerk_hint,
                            .pot_hint = b->pot_hint};
    const fk_target_results partial = {.acc = b->acc, .jerk = b->jerk, .pot = b->pot};
    double start = MPI_Wtime();
    fk_status status = fk_sources_start(m->engine, &all);
    if (status == FK_OK)
        status = fk_sources_finish(m->engine, &partial);
    if (status == FK_OK)
        status = fk_sources_read_raw(m->engine, b->words);
    if (status != FK_OK)
        status = engine_fail(m, status, "targets against this rank's sources");
    m->part.figures.compute_seconds += MPI_Wtime() - start;
    m->part.figures.pairs += (uint64_t)t * (uint64_t)mine->sources;
    return status;
}

/* The sums over the ranks, into b->words (fixed64) or b->partial (the others). */
static void combine_sums(fk_mpi_sources *m, block *b)
{
    const size_t t = b->total;
    const int ranks = m->part.size;
    if (m->fixed64) {
        /* The integers at the targets' scales (the hints fix them, the same on every rank): their
         * sum is the one engine's sum exactly, in any order. */
        int64_t *sums = (int64_t *)(void *)b->partial; /* SUMS per target, the same size */
        for (size_t i = 0; i < t; ++i)
            for (int c = 0; c < SUMS; ++c)
                sums[i * SUMS + (size_t)c] =
                    (int64_t)b->words[i * FK_SOURCES_RAW_WORDS + (size_t)c];
        MPI_Allreduce(MPI_IN_PLACE, sums, (int)(t * SUMS), MPI_INT64_T, MPI_SUM, m->part.comm);
        for (size_t i = 0; i < t; ++i)
            for (int c = 0; c < SUMS; ++c)
                b->words[i * FK_SOURCES_RAW_WORDS + (size_t)c] =
                    (uint64_t)sums[i * SUMS + (size_t)c];
    } else {
        /* Every rank's decoded partial sums, added in rank order: deterministic for a given P. */
        for (size_t i = 0; i < t; ++i) {
            memcpy(&b->partial[i * SUMS], &b->acc[3 * i], 3 * sizeof(double));
            memcpy(&b->partial[i * SUMS + 3], &b->jerk[3 * i], 3 * sizeof(double));
            b->partial[i * SUMS + 6] = b->pot[i];
        }
        MPI_Allgather(b->partial, (int)(t * SUMS), MPI_DOUBLE, b->gathered, (int)(t * SUMS),
                      MPI_DOUBLE, m->part.comm);
        for (size_t k = 0; k < t * SUMS; ++k) {
            double sum = b->gathered[k];
            for (int r = 1; r < ranks; ++r)
                sum += b->gathered[(size_t)r * t * SUMS + k];
            b->partial[k] = sum;
        }
    }
}

/* The nearest source: every rank's (r^2, ID), the smallest r^2, ties to the smaller ID. */
static void combine_nearest(fk_mpi_sources *m, block *b)
{
    const size_t t = b->total;
    const int ranks = m->part.size;
    double *pairs = b->gathered; /* 2 per target per rank: fits in the SUMS per target */
    for (size_t i = 0; i < t; ++i) {
        const uint64_t r2_bits = b->words[i * FK_SOURCES_RAW_WORDS + SUMS + 1];
        memcpy(&b->own_nearest[2 * i], &r2_bits, sizeof r2_bits);
        b->own_nearest[2 * i + 1] =
            (double)(int32_t)(uint32_t)b->words[i * FK_SOURCES_RAW_WORDS + SUMS];
    }
    MPI_Allgather(b->own_nearest, (int)(2 * t), MPI_DOUBLE, pairs, (int)(2 * t), MPI_DOUBLE,
                  m->part.comm);
    for (size_t i = 0; i < t; ++i) {
        double best = 0;
        int id = -1;
        for (int r = 0; r < ranks; ++r) {
            const double r2 = pairs[((size_t)r * t + i) * 2];
            const int other = (int)pairs[((size_t)r * t + i) * 2 + 1];
            if (other >= 0 && (id < 0 || r2 < best || (r2 == best && other < id))) {
                best = r2;
                id = other;
            }
        }
        b->nearest[i] = id;
        uint64_t best_bits;
        memcpy(&best_bits, &best, sizeof best_bits);
        b->words[i * FK_SOURCES_RAW_WORDS + SUMS] = (uint64_t)(uint32_t)id;
        b->words[i * FK_SOURCES_RAW_WORDS + SUMS + 1] = best_bits;
    }
}

/* The combined sums decoded (fixed64) or copied into b->acc, jerk and pot; the ranks agree on the
 * status, then this rank's targets go into results. */
static fk_status deliver_results(fk_mpi_sources *m, const fk_targets *mine, block *b,
                                 const fk_target_results *results)
{
    const size_t t = b->total;
    fk_status status = FK_OK;
    if (m->fixed64) { /* decoded at the targets' scales, as one engine would */
        const fk_target_results whole = {.acc = b->acc, .jerk = b->jerk, .pot = b->pot};
        status = fk_sources_decode_raw(m->engine, b->words, &whole);
        if (status != FK_OK)
            status = engine_fail(m, status, "decoding the combined sums");
    } else {
        for (size_t i = 0; i < t; ++i) {
            memcpy(&b->acc[3 * i], &b->partial[i * SUMS], 3 * sizeof(double));
            memcpy(&b->jerk[3 * i], &b->partial[i * SUMS + 3], 3 * sizeof(double));
            b->pot[i] = b->partial[i * SUMS + 6];
        }
    }
    status = fk__mpi_agree(&m->part, status);
    if (status == FK_OK && results) { /* this rank's targets */
        const size_t first = (size_t)b->firsts[m->part.rank];
        if (results->acc)
            memcpy(results->acc, &b->acc[3 * first], 3 * mine->count * sizeof(double));
        if (results->jerk)
            memcpy(results->jerk, &b->jerk[3 * first], 3 * mine->count * sizeof(double));
        if (results->pot)
            memcpy(results->pot, &b->pot[first], mine->count * sizeof(double));
        if (results->nearest)
            memcpy(results->nearest, &b->nearest[first], mine->count * sizeof(int));
    }
    return status;
}

fk_status fk_mpi_sources_evaluate(fk_mpi_sources *m, const fk_targets *mine,
                                  const fk_target_results *results)
{
    if (!m)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = fk__mpi_agree(&m->part, check_targets(m, mine));
    if (status != FK_OK)
        return status;
    block b = {0};
    int with_hints = 0;
    status = agree_on_block(m, mine, &b, &with_hints);
    if (status != FK_OK || b.total == 0) {
        block_free(&b);
        return status;
    }
    const int allocated = allocate_block(&b, m->part.size, with_hints);
    status = fk__mpi_agree(
        &m->part,
        allocated ? FK_OK : fk__mpi_local_fail(&m->part, FK_ERR_HOST_MEMORY, "out of host memory"));
    if (status != FK_OK) {
        block_free(&b);
        return status;
    }
    gather(m, mine->id, b.id, b.counts, b.firsts, MPI_INT);
    gather(m, mine->position, b.position, b.counts3, b.firsts3, MPI_DOUBLE);
    gather(m, mine->velocity, b.velocity, b.counts3, b.firsts3, MPI_DOUBLE);
    if (with_hints) {
        gather(m, mine->acc_hint, b.acc_hint, b.counts3, b.firsts3, MPI_DOUBLE);
        gather(m, mine->jerk_hint, b.jerk_hint, b.counts3, b.firsts3, MPI_DOUBLE);
        gather(m, mine->pot_hint, b.pot_hint, b.counts, b.firsts, MPI_DOUBLE);
    }
    status = fk__mpi_agree(&m->part, evaluate_locally(m, mine, &b));
    if (status != FK_OK) {
        block_free(&b);
        return status;
    }
    const double start = MPI_Wtime();
    combine_sums(m, &b);
    combine_nearest(m, &b);
    m->part.figures.communication_seconds += MPI_Wtime() - start;
    status = deliver_results(m, mine, &b, results);
    block_free(&b);
    return status;
}
