/* The autotuner (docs/tuning.md): per N bucket, every candidate variant is built, checked
 * against the double-precision host reference on sampled particles, and only then timed (a
 * warm-up, then the median of at least 5 evaluations by OpenCL event profiling). The budget
 * decides between an exhaustive search and a sampled one with local refinement around the best.
 * Every measured point goes to a resume file at once, so an interrupted run continues where it
 * stopped; the best of each bucket goes to the user's tuning database. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/stats.h"
#include "core/eval/eval.h"
#include "core/eval/choose.h"
#include "core/loops/lanes.h"
#include "core/loops/loop.h"
#include "core/tune/tune.h"

#define DEFAULT_BUDGET_SECONDS 600.0
#define MIN_REPS 5
#define MAX_REPS 21
#define TUNE_EPS 0.01       /* softening of the gravity kernels, as in `forcekit bench` */
#define LATTICE_DENSITY 0.8 /* the synthetic system of `forcekit bench` for molecular kernels */
#define REFERENCE_PAIR_BUDGET (1u << 25) /* host reference pair terms per bucket, at most */
/* The relative stretch of a pair's separation for its terms' sensitivity (make_reference) */
#define STRETCH 1e-4
#define MAX_TARGETS 256
#define MIN_TARGETS 32
#define REFINE_AFTER 0.7 /* of a bucket's budget spent on random samples before refining */
#define CONFIRM_TOP 3    /* candidates timed again at the end of a bucket */
#define CONFIRM_ROUNDS 2

enum { DIM_UNROLL_I, DIM_UNROLL_J, DIM_GROUP, DIM_TILING, DIM_SPLITS, DIM_LANES, DIM_COUNT };

typedef struct candidate {
    int unroll_i, unroll_j, work_group_size, local_tiling, j_splits;
    int lanes;                 /* 0: the scalar template */
    int coordinate[DIM_COUNT]; /* index along each dimension, for neighbourhoods */
    int done;
} candidate;

typedef struct tuner {
    fk_context *context;
    const fk_kernel_info *kernel;
    const char *accum;
    double eps; /* softening for the gravity kernels; the molecular ones take none */
    const fk_tune_config *config;
    fk_tune_result *result;
    fk_tuning_identity identity;
    double start, budget;
    uint64_t random_state;
    int stop;
    /* The current bucket. */
    fk_tune_bucket_result *bucket;
    size_t bucket_index;
    size_t n;
    unsigned components;
    double *position, *mass, *velocity;
    int *type;
    size_t *targets;
    size_t target_count;
    double *reference, *scale; /* per target and component */
    double *forces;            /* n * components */
    double tolerance;
    fk_eval *eval; /* kept while consecutive candidates share its program */
    int eval_key[6];
    int lane_width; /* the widest lanes the device holds (0: no lanes here) */
    int algorithm;  /* the pair loop tuned (fk_algorithm) */
    const fk__loop *loop;
    /* Resume file. */
    char *database_path, *resume_path;
    cJSON *resume;
    char resume_key[1024];
} tuner;

static double now(void)
{
    return fk__now();
}

static uint64_t next_random(tuner *t)
{
    /* xorshift64*: a fixed, portable sequence for a given seed. */
    t->random_state ^= t->random_state >> 12;
    t->random_state ^= t->random_state << 25;
    t->random_state ^= t->random_state >> 27;
    return t->random_state * 2685821657736338717ull;
}

static double uniform(tuner *t)
{
    return (double)(next_random(t) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- the synthetic system and its reference -------------------------------------------------- */

static void free_system(tuner *t)
{
    free(t->position);
    free(t->mass);
    free(t->velocity);
    free(t->type);
    free(t->targets);
    free(t->reference);
    free(t->scale);
    free(t->forces);
    t->position = t->mass = t->velocity = t->reference = t->scale = t->forces = NULL;
    t->type = NULL;
    t->targets = NULL;
}

static fk_particles particles_view(const tuner *t)
{
    fk_particles view = {.count = t->n,
                         .position = t->position,
                         .mass = t->mass,
                         .velocity = t->velocity,
                         .type = t->type};
    return view;
}

/* A jittered cubic lattice at density 0.8 (`forcekit bench`'s system for the molecular kernels):
 * no two particles close, so every kernel's forces stay finite, and the all-pairs cost does not
 * depend on the positions. Masses are positive; kernels that read charges (a "q" column) get
 * +-0.5; velocities are small and random; every particle has type 0. */
static fk_status make_system(tuner *t)
{
    const size_t n = t->n;
    t->position = malloc(3 * n * sizeof *t->position);
    t->mass = malloc(n * sizeof *t->mass);
    t->velocity = malloc(3 * n * sizeof *t->velocity);
    t->type = calloc(n, sizeof *t->type);
    t->forces = malloc(n * t->components * sizeof *t->forces);
    if (!t->position || !t->mass || !t->velocity || !t->type || !t->forces)
        return FK_ERR_HOST_MEMORY;
    size_t side = 1;
    while (side * side * side < n)
        ++side;
    const double spacing = cbrt(1.0 / LATTICE_DENSITY);
    const int charged = strstr(t->kernel->input_format, " q") != NULL;
    for (size_t i = 0; i < n; ++i) {
        const size_t cell[3] = {i % side, (i / side) % side, i / (side * side)};
        for (int k = 0; k < 3; ++k) {
            double x = ((double)cell[k] + 0.1 * (uniform(t) - 0.5)) * spacing;
            t->position[3 * i + (size_t)k] = (double)(float)x; /* the device sees floats */
            t->velocity[3 * i + (size_t)k] = (double)(float)(uniform(t) - 0.5);
        }
        t->mass[i] = charged ? (i % 2 ? -0.5 : 0.5) : (double)(float)(1.0 / (double)n);
    }
    return FK_OK;
}

/* The host reference on sampled particles only: O(N) per target instead of O(N^2), so even the
 * 1M bucket is checked. Each pair goes through fk_reference_forces on a two-particle system, which
 * works for every pairwise-additive kernel and also yields the pair terms' magnitudes for the
 * error scale (tests/test_kernels.c's |a - a_ref| / sum_j |term_ij|). */
static fk_status make_reference(tuner *t)
{
    const size_t n = t->n;
    size_t wanted = REFERENCE_PAIR_BUDGET / n;
    wanted = wanted < MIN_TARGETS ? MIN_TARGETS : wanted > MAX_TARGETS ? MAX_TARGETS : wanted;
    t->target_count = wanted < n ? wanted : n;
    const unsigned c = t->components;
    t->targets = malloc(t->target_count * sizeof *t->targets);
    t->reference = calloc(t->target_count * c, sizeof *t->reference);
    t->scale = calloc(t->target_count * c, sizeof *t->scale);
    if (!t->targets || !t->reference || !t->scale)
        return FK_ERR_HOST_MEMORY;
    /* Spread over the whole range, first and last included: the last i-block is partial. */
    for (size_t k = 0; k < t->target_count; ++k)
        t->targets[k] =
            t->target_count > 1
                ? (size_t)((double)k * (double)(n - 1) / (double)(t->target_count - 1) + 0.5)
                : 0;

    const fk_physics physics = {.eps = t->eps};
    double position[6], mass[2], velocity[6], pair_forces[2 * 16], stretched_forces[2 * 16];
    int type[2];
    if (c > 16)
        return FK_ERR_UNSUPPORTED;
    fk_particles pair = {
        .count = 2, .position = position, .mass = mass, .velocity = velocity, .type = type};
    for (size_t k = 0; k < t->target_count; ++k) {
        const size_t i = t->targets[k];
        memcpy(position, t->position + 3 * i, 3 * sizeof *position);
        memcpy(velocity, t->velocity + 3 * i, 3 * sizeof *velocity);
        mass[0] = t->mass[i];
        type[0] = t->type[i];
        double *sum = t->reference + k * c, *magnitude = t->scale + k * c;
        for (size_t j = 0; j < n; ++j) {
            if (j == i)
                continue;
            memcpy(position + 3, t->position + 3 * j, 3 * sizeof *position);
            memcpy(velocity + 3, t->velocity + 3 * j, 3 * sizeof *velocity);
            mass[1] = t->mass[j];
            type[1] = t->type[j];
            fk_status status =
                fk_reference_forces(t->kernel->name, &pair, &physics, pair_forces, NULL);
            /* The term again with the separation stretched by a relative STRETCH: its change is
             * the term's sensitivity to a relative rounding of r (r dF/dr). A term that is the
             * difference of nearly equal parts (LJ near its minimum, where the tuner's lattice
             * puts the nearest neighbours) is small while its float rounding, relative to the
             * parts, is not: its length alone would make the scale too small for any variant. */
            for (int k3 = 0; k3 < 3; ++k3)
                position[3 + k3] =
                    position[k3] +
                    (1.0 + STRETCH) * (t->position[3 * j + (size_t)k3] - position[k3]);
            if (status == FK_OK)
                status =
                    fk_reference_forces(t->kernel->name, &pair, &physics, stretched_forces, NULL);
            if (status != FK_OK)
                return status;
            /* Components come in 3-vectors (acceleration, jerk); a vector's rounding scales with
             * its length (as in the kernel tests) and its sensitivity. */
            for (unsigned q = 0; q < c; q += 3) {
                const unsigned width = c - q < 3 ? c - q : 3;
                double length = 0, change = 0;
                for (unsigned w = 0; w < width; ++w) {
                    sum[q + w] += pair_forces[q + w];
                    length += pair_forces[q + w] * pair_forces[q + w];
                    const double d = stretched_forces[q + w] - pair_forces[q + w];
                    change += d * d;
                }
                for (unsigned w = 0; w < width; ++w)
                    magnitude[q + w] += sqrt(length) + sqrt(change) / STRETCH;
            }
        }
    }
    /* tests/test_kernels.c's float bound (sums of N terms lose up to ~N/2 ulp, typically sqrt(N));
     * every other accumulator is at least as accurate, so one bound serves all: the check is for
     * wrong variants, not for precision. */
    const double ulp = 5.96e-8;
    t->tolerance = ulp * (16.0 + 2.0 * sqrt((double)n) + 0.02 * (double)n);
    return FK_OK;
}

/* Worst scaled error of the device's forces on the targets; infinite for a non-finite value. */
static double check_forces(const tuner *t)
{
    const unsigned c = t->components;
    double worst = 0;
    for (size_t k = 0; k < t->target_count; ++k)
        for (unsigned q = 0; q < c; ++q) {
            const double value = t->forces[t->targets[k] * c + q];
            if (!isfinite(value))
                return HUGE_VAL;
            const double scale = t->scale[k * c + q];
            const double error = fabs(value - t->reference[k * c + q]);
            const double scaled = scale > 0 ? error / scale : error;
            if (scaled > worst)
                worst = scaled;
        }
    return worst;
}

/* ---- the search space ------------------------------------------------------------------------ */

/* The candidates: the loop's tuning space (src/core/loops/), each shape a candidate. */
static size_t build_space(const tuner *t, candidate **out)
{
    const fk__tuning_query query = {.context = t->context,
                                    .kernel = t->kernel->name,
                                    .accum = t->accum,
                                    .pinned = t->config,
                                    .n = t->n,
                                    .lane_width = t->lane_width};
    fk__loop_shape *shapes = NULL;
    const size_t count = t->loop->tuning_space(&query, &shapes);
    candidate *space = count ? calloc(count, sizeof *space) : NULL;
    if (!space) {
        free(shapes);
        return 0;
    }
    for (size_t k = 0; k < count; ++k) {
        const fk__loop_shape *s = &shapes[k];
        candidate *c = &space[k];
        c->unroll_i = s->unroll_i;
        c->unroll_j = s->unroll_j;
        c->work_group_size = s->work_group_size;
        c->local_tiling = s->local_tiling;
        c->j_splits = s->j_splits;
        c->lanes = s->lanes;
        memcpy(c->coordinate, s->coordinate, sizeof c->coordinate);
    }
    free(shapes);
    *out = space;
    return count;
}

static int neighbours(const candidate *a, const candidate *b)
{
    int distance = 0;
    for (int d = 0; d < DIM_COUNT; ++d)
        distance += abs(a->coordinate[d] - b->coordinate[d]);
    return distance == 1;
}

/* ---- the resume file ------------------------------------------------------------------------- */

static cJSON *point_to_json(const fk_tune_point *p, size_t n)
{
    cJSON *object = cJSON_CreateObject();
    cJSON_AddNumberToObject(object, "n", (double)n);
    cJSON_AddNumberToObject(object, "unroll_i", p->unroll_i);
    cJSON_AddNumberToObject(object, "unroll_j", p->unroll_j);
    cJSON_AddNumberToObject(object, "work_group_size", p->work_group_size);
    cJSON_AddNumberToObject(object, "local_tiling", p->local_tiling);
    cJSON_AddNumberToObject(object, "j_splits", p->j_splits);
    cJSON_AddNumberToObject(object, "effective_j_splits", p->effective_j_splits);
    cJSON_AddNumberToObject(object, "lanes", p->lanes);
    cJSON_AddNumberToObject(object, "outcome", (double)p->outcome);
    if (isfinite(p->seconds))
        cJSON_AddNumberToObject(object, "seconds", p->seconds);
    if (isfinite(p->error))
        cJSON_AddNumberToObject(object, "error", p->error);
    cJSON_AddNumberToObject(object, "tolerance", p->tolerance);
    cJSON_AddStringToObject(object, "note", p->note);
    return object;
}

static int json_int(const cJSON *object, const char *key, int *value)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
    if (!cJSON_IsNumber(item))
        return 0;
    *value = item->valueint;
    return 1;
}

static double json_double(const cJSON *object, const char *key)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
    return cJSON_IsNumber(item) ? item->valuedouble : NAN;
}

static int point_from_json(const cJSON *object, fk_tune_point *p)
{
    memset(p, 0, sizeof *p);
    int outcome = 0;
    if (!json_int(object, "unroll_i", &p->unroll_i) ||
        !json_int(object, "unroll_j", &p->unroll_j) ||
        !json_int(object, "work_group_size", &p->work_group_size) ||
        !json_int(object, "local_tiling", &p->local_tiling) ||
        !json_int(object, "j_splits", &p->j_splits) || !json_int(object, "outcome", &outcome) ||
        outcome < FK_TUNE_MEASURED || outcome > FK_TUNE_FAILED)
        return 0;
    json_int(object, "effective_j_splits", &p->effective_j_splits);
    json_int(object, "lanes", &p->lanes); /* absent: the scalar template */
    p->outcome = (fk_tune_outcome)outcome;
    p->seconds = json_double(object, "seconds");
    p->confirmed_seconds = NAN;
    p->error = json_double(object, "error");
    p->tolerance = json_double(object, "tolerance");
    if (p->outcome == FK_TUNE_MEASURED && !(p->seconds > 0))
        return 0;
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(object, "note");
    if (cJSON_IsString(note))
        snprintf(p->note, sizeof p->note, "%s", note->valuestring);
    p->resumed = 1;
    return 1;
}

static void load_resume(tuner *t)
{
    if (!t->resume_path)
        return;
    size_t size = 0;
    char *text = fk__read_file(t->resume_path, &size);
    if (!text)
        return; /* no interrupted run */
    cJSON *document = cJSON_ParseWithLength(text, size);
    free(text);
    if (!cJSON_IsObject(document) ||
        !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(document, "runs"))) {
        fk__warn(&t->context->warnings, "tuning resume file %s ignored: not a resume file",
                 t->resume_path);
        cJSON_Delete(document);
        return;
    }
    t->resume = document;
}

static fk_status save_resume(tuner *t)
{
    if (!t->resume_path || !t->resume)
        return FK_OK;
    /* Merged under the resume file's lock: concurrent tune runs keep each other's points. */
    cJSON *runs = cJSON_GetObjectItemCaseSensitive(t->resume, "runs");
    char message[512];
    fk_status status = fk__tuning_resume_save(t->resume_path, t->resume_key,
                                              cJSON_GetObjectItemCaseSensitive(runs, t->resume_key),
                                              message, sizeof message);
    if (status == FK_ERR_HOST_MEMORY)
        return status;
    /* Only resuming is lost when the file cannot be written: not a reason to stop tuning. */
    if (status != FK_OK)
        fk__warn(&t->context->warnings, "cannot write the tuning resume file %s", t->resume_path);
    return FK_OK;
}

static cJSON *resume_points(tuner *t, int create)
{
    if (!t->resume_path)
        return NULL;
    if (!t->resume) {
        if (!create)
            return NULL;
        t->resume = cJSON_CreateObject();
        cJSON_AddStringToObject(t->resume, "format", "forcekit-tuning-resume");
        cJSON_AddNumberToObject(t->resume, "version", 1);
        cJSON_AddObjectToObject(t->resume, "runs");
    }
    cJSON *runs = cJSON_GetObjectItemCaseSensitive(t->resume, "runs");
    cJSON *points = cJSON_GetObjectItemCaseSensitive(runs, t->resume_key);
    if (!cJSON_IsArray(points)) {
        if (!create)
            return NULL;
        cJSON_DeleteItemFromObjectCaseSensitive(runs, t->resume_key);
        points = cJSON_AddArrayToObject(runs, t->resume_key);
    }
    return points;
}

/* ---- measuring one candidate ----------------------------------------------------------------- */

static void note_error(tuner *t, fk_tune_point *p, const char *prefix)
{
    /* The first line of the detail: a build log follows it and is too long for a note. */
    const char *detail = fk_context_last_error(t->context);
    size_t length = strcspn(detail, "\n");
    snprintf(p->note, sizeof p->note, "%s%.*s", prefix, (int)(length > 300 ? 300 : length), detail);
}

static int is_fatal(fk_status status)
{
    return status == FK_ERR_HOST_MEMORY || status == FK_ERR_KERNEL_SOURCE ||
           status == FK_ERR_NO_DEVICE || status == FK_ERR_INVALID_ARGUMENT;
}

/* Builds (or reuses) the candidate's program, checks it, times it. Returns a status only for
 * failures that end the whole run; a candidate's own failure is its point's outcome. */
static fk_status measure(tuner *t, const candidate *c, fk_tune_point *p)
{
    memset(p, 0, sizeof *p);
    p->unroll_i = c->unroll_i;
    p->unroll_j = c->unroll_j;
    p->work_group_size = c->work_group_size;
    p->local_tiling = c->local_tiling;
    p->j_splits = c->j_splits;
    p->lanes = c->lanes;
    p->seconds = p->error = p->confirmed_seconds = NAN;
    p->tolerance = t->tolerance;

    /* A loop whose entry builds the split into the program (the neighbour lists' work-items per
     * particle, FK_NB_SPLIT) needs a new evaluation per value; the others set their j-splits on
     * the one evaluation. */
    const int key[6] = {c->unroll_i,     c->unroll_j, c->work_group_size,
                        c->local_tiling, c->lanes,    t->loop->split_in_program ? c->j_splits : 0};
    if (t->eval && memcmp(key, t->eval_key, sizeof key) != 0) {
        fk_eval_destroy(t->eval);
        t->eval = NULL;
    }
    fk_status status = FK_OK;
    if (!t->eval) {
        fk_eval_config config = {.struct_size = sizeof(fk_eval_config),
                                 .kernel = t->kernel->name,
                                 .accum = t->accum,
                                 .unroll_i = c->unroll_i,
                                 .unroll_j = c->unroll_j,
                                 .work_group_size = c->work_group_size,
                                 .local_tiling = c->local_tiling ? 1 : -1,
                                 .j_splits = c->j_splits,
                                 .eps = t->eps,
                                 .expected_count = t->n,
                                 .lanes = c->lanes ? c->lanes : -1,
                                 .algorithm = t->algorithm};
        t->context->known_answer_refused = 0;
        status = fk_eval_create(t->context, &config, &t->eval);
        if (status == FK_ERR_UNSUPPORTED && t->context->known_answer_refused) {
            /* the library's known-answer check (src/core/eval/known_answer.c) caught wrong
             * forces: the variant is wrong, not beyond a device limit */
            p->outcome = FK_TUNE_WRONG_RESULT;
            p->error = t->context->known_answer_error;
            snprintf(p->note, sizeof p->note,
                     "rejected: the known-answer check's error is %.3g of the largest force",
                     p->error);
            return FK_OK;
        }
        if (status == FK_ERR_UNSUPPORTED) {
            p->outcome = FK_TUNE_UNSUPPORTED;
            note_error(t, p, "skipped: ");
            return FK_OK;
        }
        if (status == FK_ERR_BUILD) {
            p->outcome = FK_TUNE_BUILD_FAILED;
            note_error(t, p, "build failed: ");
            return FK_OK;
        }
        if (status != FK_OK) {
            p->outcome = FK_TUNE_FAILED;
            note_error(t, p, "");
            return is_fatal(status) ? status : FK_OK;
        }
        memcpy(t->eval_key, key, sizeof key);
    }
    fk__eval_set_j_splits(t->eval, c->j_splits);
    const fk_particles view = particles_view(t);
    status = fk_eval_set_particles(t->eval, &view);
    double warmup = 0;
    /* The first evaluation is both the check and the warm-up (first-launch costs are not timed). */
    if (status == FK_OK)
        status = fk_eval_compute(t->eval, &warmup);
    if (status == FK_OK)
        status = fk_eval_read_forces(t->eval, t->forces);
    if (status != FK_OK) {
        p->outcome = status == FK_ERR_UNSUPPORTED || status == FK_ERR_DEVICE_MEMORY
                         ? FK_TUNE_UNSUPPORTED
                         : FK_TUNE_FAILED;
        note_error(t, p, "");
        fk_eval_destroy(t->eval);
        t->eval = NULL;
        return is_fatal(status) ? status : FK_OK;
    }
    fk_variant variant;
    fk_eval_get_variant(t->eval, &variant);
    p->effective_j_splits = variant.j_splits;
    p->error = check_forces(t);
    if (!(p->error <= t->tolerance)) {
        p->outcome = FK_TUNE_WRONG_RESULT;
        snprintf(p->note, sizeof p->note,
                 "rejected: scaled error %.3g against the host reference exceeds %.3g", p->error,
                 t->tolerance);
        return FK_OK;
    }
    int reps = warmup > 0 ? (int)(0.2 / warmup) : MAX_REPS;
    reps = reps < MIN_REPS ? MIN_REPS : reps > MAX_REPS ? MAX_REPS : reps;
    double timings[MAX_REPS];
    for (int r = 0; r < reps && status == FK_OK; ++r) {
        timings[r] = NAN;
        status = fk_eval_compute(t->eval, &timings[r]);
        if (status == FK_OK && !(timings[r] >= 0)) {
            p->outcome = FK_TUNE_FAILED;
            snprintf(p->note, sizeof p->note,
                     "no usable device time (no profiling, or implausible event times: "
                     "fk_context_warnings says which)");
            return FK_OK;
        }
    }
    if (status != FK_OK) {
        p->outcome = FK_TUNE_FAILED;
        note_error(t, p, "");
        return is_fatal(status) ? status : FK_OK;
    }
    for (int a = 1; a < reps; ++a) /* insertion sort: at most 21 values */
        for (int b = a; b > 0 && timings[b - 1] > timings[b]; --b) {
            double swap = timings[b];
            timings[b] = timings[b - 1];
            timings[b - 1] = swap;
        }
    p->seconds = reps % 2 ? timings[reps / 2] : 0.5 * (timings[reps / 2 - 1] + timings[reps / 2]);
    p->outcome = FK_TUNE_MEASURED;
    return FK_OK;
}

/* ---- one bucket ------------------------------------------------------------------------------ */

static int report(tuner *t, size_t done, size_t planned, const fk_tune_point *point,
                  const fk_tune_bucket_result *finished)
{
    if (!t->config->progress)
        return 0;
    fk_tune_progress progress = {.bucket_index = t->bucket_index,
                                 .bucket_count = t->result->bucket_count,
                                 .n = t->n,
                                 .done = done,
                                 .planned = planned,
                                 .search = t->bucket->search,
                                 .elapsed = now() - t->start,
                                 .budget = t->budget,
                                 .best_seconds =
                                     t->bucket->has_best ? t->bucket->best.seconds : NAN,
                                 .point = point,
                                 .finished = finished};
    return t->config->progress(&progress, t->config->user);
}

static void record(tuner *t, const fk_tune_point *p)
{
    fk_tune_bucket_result *b = t->bucket;
    b->tried[b->tried_count++] = *p;
    if (p->outcome == FK_TUNE_MEASURED && (!b->has_best || p->seconds < b->best.seconds)) {
        b->best = *p;
        b->has_best = 1;
    }
}

static int same_candidate(const candidate *c, const fk_tune_point *p)
{
    return c->unroll_i == p->unroll_i && c->unroll_j == p->unroll_j &&
           c->work_group_size == p->work_group_size && c->local_tiling == p->local_tiling &&
           c->j_splits == p->j_splits && c->lanes == p->lanes;
}

static void shuffle(tuner *t, candidate *space, size_t count)
{
    for (size_t i = count; i > 1; --i) {
        size_t j = (size_t)(next_random(t) % i);
        candidate swap = space[i - 1];
        space[i - 1] = space[j];
        space[j] = swap;
    }
}

static int compare_by_program(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    const int kx[6] = {x->lanes,           x->unroll_i,     x->unroll_j,
                       x->work_group_size, x->local_tiling, x->j_splits};
    const int ky[6] = {y->lanes,           y->unroll_i,     y->unroll_j,
                       y->work_group_size, y->local_tiling, y->j_splits};
    for (int k = 0; k < 6; ++k)
        if (kx[k] != ky[k])
            return kx[k] < ky[k] ? -1 : 1;
    return 0;
}

/* The variant that runs when there is no database entry (fk_eval_create's defaults): the lane loop
 * at the device's width on a CPU where the kernel and accumulator have one, else the built-in
 * scalar variant. The untuned baseline, and the one every tuned entry must beat. */
static void default_candidate(const tuner *t, fk_variant *builtin)
{
    const fk__tuning_query query = {.context = t->context,
                                    .kernel = t->kernel->name,
                                    .accum = t->accum,
                                    .pinned = t->config,
                                    .n = t->n,
                                    .lane_width = t->lane_width};
    fk__loop_shape shape;
    t->loop->default_shape(&query, &shape);
    memset(builtin, 0, sizeof *builtin);
    builtin->unroll_i = shape.unroll_i;
    builtin->unroll_j = shape.unroll_j;
    builtin->work_group_size = shape.work_group_size;
    builtin->local_tiling = shape.local_tiling;
    builtin->lanes = shape.lanes;
}

static int is_builtin(const fk_tune_point *p, const fk_variant *builtin)
{
    if (p->outcome != FK_TUNE_MEASURED || p->j_splits != 0 || p->lanes != builtin->lanes)
        return 0;
    return p->unroll_i == builtin->unroll_i && p->unroll_j == builtin->unroll_j &&
           p->work_group_size == builtin->work_group_size &&
           p->local_tiling == (builtin->local_tiling != 0);
}

/* On a device whose load changes (a shared CPU), the best of hundreds of single measurements is
 * partly luck: the fastest few and the built-in default are timed again, alternately, and judged
 * by the median of their three timings, so the winner and the untuned baseline come from the same
 * minutes. Skipped when it would not fit in the time left. */
static fk_status confirm(tuner *t, const fk_variant *builtin, double time_left, double mean_cost)
{
    fk_tune_bucket_result *b = t->bucket;
    size_t chosen[CONFIRM_TOP + 1], count = 0;
    for (int k = 0; k < CONFIRM_TOP; ++k) {
        size_t fastest = b->tried_count;
        for (size_t i = 0; i < b->tried_count; ++i) {
            int taken = 0;
            for (size_t c = 0; c < count; ++c)
                taken |= chosen[c] == i;
            if (!taken && b->tried[i].outcome == FK_TUNE_MEASURED &&
                (fastest == b->tried_count || b->tried[i].seconds < b->tried[fastest].seconds))
                fastest = i;
        }
        if (fastest < b->tried_count)
            chosen[count++] = fastest;
    }
    for (size_t i = 0; i < b->tried_count; ++i)
        if (is_builtin(&b->tried[i], builtin)) {
            int taken = 0;
            for (size_t c = 0; c < count; ++c)
                taken |= chosen[c] == i;
            if (!taken)
                chosen[count++] = i;
        }
    if (count < 2 || (double)(count * CONFIRM_ROUNDS) * mean_cost > time_left)
        return FK_OK;
    double timings[CONFIRM_TOP + 1][CONFIRM_ROUNDS];
    for (int round = 0; round < CONFIRM_ROUNDS; ++round)
        for (size_t c = 0; c < count; ++c) {
            const fk_tune_point *old = &b->tried[chosen[c]];
            candidate again = {.unroll_i = old->unroll_i,
                               .unroll_j = old->unroll_j,
                               .work_group_size = old->work_group_size,
                               .local_tiling = old->local_tiling,
                               .j_splits = old->j_splits,
                               .lanes = old->lanes};
            fk_tune_point p;
            fk_status status = measure(t, &again, &p);
            if (status != FK_OK)
                return status;
            timings[c][round] = p.outcome == FK_TUNE_MEASURED ? p.seconds : HUGE_VAL;
        }
    size_t best = chosen[0];
    for (size_t c = 0; c < count; ++c) {
        fk_tune_point *p = &b->tried[chosen[c]];
        double three[3] = {p->seconds, timings[c][0], timings[c][1]};
        p->confirmed_seconds = fk__median(three, 3);
        if (p->confirmed_seconds < b->tried[best].confirmed_seconds || c == 0)
            best = chosen[c];
        if (is_builtin(p, builtin))
            b->untuned_seconds = p->confirmed_seconds;
    }
    b->best = b->tried[best];
    b->best.seconds = b->best.confirmed_seconds;
    return FK_OK;
}

static fk_status write_entry(tuner *t)
{
    const fk_tune_bucket_result *b = t->bucket;
    fk_tune_result *r = t->result;
    if (!b->has_best || !t->database_path)
        return FK_OK;
    fk_tuning_entry entry = {.n = b->bucket,
                             .unroll_i = b->best.unroll_i,
                             .unroll_j = b->best.unroll_j,
                             .work_group_size = b->best.work_group_size,
                             .local_tiling = b->best.local_tiling,
                             .j_splits = b->best.j_splits,
                             .lanes = b->best.lanes,
                             .algorithm = t->algorithm};
    snprintf(entry.type, sizeof entry.type, "%s", t->identity.type);
    snprintf(entry.vendor, sizeof entry.vendor, "%s", t->identity.vendor);
    snprintf(entry.architecture, sizeof entry.architecture, "%s",
             t->identity.architecture[0] ? t->identity.architecture : "default");
    snprintf(entry.device, sizeof entry.device, "%s", t->identity.device);
    snprintf(entry.kernel, sizeof entry.kernel, "%s", t->kernel->name);
    snprintf(entry.accum, sizeof entry.accum, "%s", t->accum);

    char date[32] = "unknown";
    time_t clock = time(NULL);
    struct tm utc;
    if (gmtime_r(&clock, &utc))
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
    cJSON *extra = cJSON_CreateObject();
    const double pairs = (double)b->n * (double)b->n;
    cJSON_AddNumberToObject(extra, "n_measured", (double)b->n);
    cJSON_AddNumberToObject(extra, "seconds_per_eval", b->best.seconds);
    cJSON_AddNumberToObject(extra, "interactions_per_second", pairs / b->best.seconds);
    if (isfinite(b->untuned_seconds)) {
        cJSON_AddNumberToObject(extra, "untuned_seconds_per_eval", b->untuned_seconds);
        cJSON_AddNumberToObject(extra, "speedup", b->untuned_seconds / b->best.seconds);
    }
    cJSON_AddStringToObject(extra, "search",
                            b->search == FK_TUNE_EXHAUSTIVE ? "exhaustive" : "sampled");
    cJSON_AddNumberToObject(extra, "candidates_tried", (double)b->tried_count);
    cJSON_AddNumberToObject(extra, "space_size", (double)b->space_size);
    cJSON_AddStringToObject(extra, "device_name", t->context->info.name);
    cJSON_AddStringToObject(extra, "driver_version", t->context->info.driver_version);
    cJSON_AddStringToObject(extra, "date", date);
    cJSON_AddStringToObject(extra, "source", "forcekit tune");
    char *extra_text = cJSON_PrintUnformatted(extra);
    cJSON_Delete(extra);
    if (!extra_text)
        return FK_ERR_HOST_MEMORY;
    char message[1280];
    const char *extras[1] = {extra_text};
    fk_status status = fk__tuning_db_store(t->database_path, &entry, extras, 1,
                                           &t->context->warnings, message, sizeof message);
    cJSON_free(extra_text);
    if (status == FK_ERR_IO)
        return fk__fail(t->context, status, "%s", message);
    if (status == FK_OK)
        snprintf(r->database, sizeof r->database, "%s", t->database_path);
    return status;
}

/* Moves the candidate of the built-in variant to the front of space (if it is there). */
static void put_first(candidate *space, size_t count, const fk_variant *builtin)
{
    for (size_t i = 0; i < count; ++i)
        if (space[i].unroll_i == builtin->unroll_i && space[i].unroll_j == builtin->unroll_j &&
            space[i].work_group_size == builtin->work_group_size &&
            space[i].local_tiling == (builtin->local_tiling != 0) && space[i].j_splits == 0 &&
            space[i].lanes == builtin->lanes) {
            candidate swap = space[0];
            space[0] = space[i];
            space[i] = swap;
            return;
        }
}

/* The bucket's points that an interrupted run saved (the resume file, under this bucket's key):
 * recorded as tried and marked done in space. */
static void resume_bucket(tuner *t, candidate *space, size_t count)
{
    fk__tuning_resume_key(&t->identity, t->kernel->name, t->accum, t->bucket->bucket, t->resume_key,
                          sizeof t->resume_key);
    if (!t->loop->reference) { /* another loop's points are not the reference loop's */
        const size_t used = strlen(t->resume_key);
        snprintf(t->resume_key + used, sizeof t->resume_key - used, "|%s", t->loop->name);
    }
    cJSON *saved = resume_points(t, 0);
    const cJSON *item;
    cJSON_ArrayForEach(item, saved)
    {
        fk_tune_point p;
        if (json_double(item, "n") != (double)t->n || !point_from_json(item, &p))
            continue;
        for (size_t i = 0; i < count; ++i)
            if (!space[i].done && same_candidate(&space[i], &p)) {
                space[i].done = 1;
                record(t, &p);
                break;
            }
    }
}

static fk_status tune_bucket(tuner *t, double share)
{
    fk_tune_bucket_result *b = t->bucket;
    const double bucket_start = now();
    free_system(t);
    fk_status status = make_system(t);
    if (status == FK_OK)
        status = make_reference(t);
    if (status != FK_OK)
        return status;

    candidate *space = NULL;
    size_t count = build_space(t, &space);
    if (count == 0) {
        snprintf(b->note, sizeof b->note, "no candidate: the search space is empty here");
        b->search = FK_TUNE_SKIPPED;
        return FK_OK;
    }
    b->space_size = count;
    b->tried = calloc(count, sizeof *b->tried);
    if (!b->tried) {
        free(space);
        return FK_ERR_HOST_MEMORY;
    }

    /* The default goes first: it is the untuned baseline and a safe best. */
    fk_variant builtin = {0};
    default_candidate(t, &builtin);
    shuffle(t, space, count);
    put_first(space, count, &builtin);
    resume_bucket(t, space, count);
    b->untuned_seconds = NAN;
    b->search = FK_TUNE_SAMPLED;

    size_t done = b->tried_count, ran = 0, next_in_order = 0, refined = 0;
    double measuring = 0; /* seconds spent on candidates this run, for the estimate */
    double costliest = 0; /* the guard against overrunning assumes the worst seen so far */
    int decided = 0;
    size_t planned = count;
    if (report(t, done, planned, NULL, NULL))
        t->stop = 1;
    while (!t->stop && done < count) {
        const double spent = now() - bucket_start;
        const double estimate = ran ? measuring / (double)ran : 0;
        const double reserve = fmin(0.15 * share, (CONFIRM_TOP + 1) * CONFIRM_ROUNDS * estimate);
        if (ran && spent + costliest > share - reserve)
            break; /* the next candidate could overrun the budget (less the confirmation's) */
        if (!decided && ran >= 3) {
            decided = 1;
            if (spent + estimate * (double)(count - done) <= share) {
                /* Everything fits: neighbours in program order share one build. */
                b->search = FK_TUNE_EXHAUSTIVE;
                qsort(space + next_in_order, count - next_in_order, sizeof *space,
                      compare_by_program);
            } else {
                planned = done + (size_t)((share - spent) / estimate);
            }
        }
        size_t pick = count;
        if (decided && b->search == FK_TUNE_SAMPLED && spent >= REFINE_AFTER * share &&
            b->has_best) {
            /* Local refinement: an untried neighbour of the best so far. */
            size_t best_index = count;
            for (size_t k = 0; k < count && best_index == count; ++k)
                if (same_candidate(&space[k], &b->best))
                    best_index = k;
            for (size_t i = 0; i < count && pick == count && best_index < count; ++i)
                if (!space[i].done && neighbours(&space[i], &space[best_index]))
                    pick = i;
            refined += pick < count;
        }
        if (pick == count) {
            while (next_in_order < count && space[next_in_order].done)
                ++next_in_order;
            pick = next_in_order;
        }
        if (pick == count)
            break;
        const double candidate_start = now();
        fk_tune_point p;
        status = measure(t, &space[pick], &p);
        if (status != FK_OK)
            break;
        space[pick].done = 1;
        const double cost = now() - candidate_start;
        measuring += cost;
        costliest = cost > costliest ? cost : costliest;
        ++ran;
        ++done;
        record(t, &p);
        if (is_builtin(&p, &builtin))
            b->untuned_seconds = p.seconds;
        cJSON *points = resume_points(t, 1);
        if (points)
            cJSON_AddItemToArray(points, point_to_json(&p, t->n));
        save_resume(t);
        if (planned < done)
            planned = done;
        if (report(t, done, planned, &b->tried[b->tried_count - 1], NULL))
            t->stop = 1;
    }
    /* The untuned baseline may come from the resumed points. */
    for (size_t i = 0; i < b->tried_count && !isfinite(b->untuned_seconds); ++i)
        if (is_builtin(&b->tried[i], &builtin))
            b->untuned_seconds = b->tried[i].seconds;
    if (status == FK_OK && !t->stop && b->has_best)
        status =
            confirm(t, &builtin, share - (now() - bucket_start), ran ? measuring / (double)ran : 0);
    free(space);
    fk_eval_destroy(t->eval);
    t->eval = NULL;
    if (status != FK_OK)
        return status;
    b->search = b->tried_count == count ? FK_TUNE_EXHAUSTIVE : FK_TUNE_SAMPLED;
    b->seconds = now() - bucket_start;
    if (b->search == FK_TUNE_SAMPLED)
        snprintf(b->note, sizeof b->note,
                 "sampled: %zu of %zu candidates (%zu of them neighbours of the best) in %.0f s of "
                 "a %.0f s share of the budget",
                 b->tried_count, count, refined, b->seconds, share);
    else
        snprintf(b->note, sizeof b->note, "all %zu candidates tried", count);
    if (t->stop)
        return FK_OK; /* interrupted: the points stay in the resume file, nothing is stored */
    status = write_entry(t);
    if (status != FK_OK)
        return status;
    cJSON *runs = t->resume ? cJSON_GetObjectItemCaseSensitive(t->resume, "runs") : NULL;
    if (runs) {
        cJSON_DeleteItemFromObjectCaseSensitive(runs, t->resume_key);
        save_resume(t);
    }
    return FK_OK;
}

/* ---- the run --------------------------------------------------------------------------------- */

void fk_tune_result_free(fk_tune_result *result)
{
    if (!result)
        return;
    for (size_t i = 0; i < result->bucket_count; ++i)
        free(result->buckets[i].tried);
    free(result->buckets);
    free(result);
}

/* Seconds of one evaluation of the built-in default at a moderate N, for predicting the cost of a
 * first bucket too large to just try (a pinned --n of a million on a CPU runs for minutes per
 * evaluation). Not smaller: GPUs at small N measure launch latency, not N^2 work. */
#define PROBE_N 16384
static void probe(tuner *t, double *seconds, size_t *n, double *overhead)
{
    const size_t saved = t->n;
    const double start = now();
    t->n = PROBE_N;
    fk_variant builtin = {0};
    fk__builtin_variant(&t->context->info, &builtin);
    fk_eval_config config = {.struct_size = sizeof(fk_eval_config),
                             .kernel = t->kernel->name,
                             .accum = t->accum,
                             .unroll_i = builtin.unroll_i,
                             .unroll_j = builtin.unroll_j,
                             .work_group_size = builtin.work_group_size,
                             .eps = t->eps,
                             .algorithm = t->algorithm};
    if (!t->loop->reference) /* the loop's own default shape */
        config.unroll_i = config.unroll_j = config.work_group_size = 0;
    fk_eval *eval = NULL;
    double measured = -1;
    if (make_system(t) == FK_OK && fk_eval_create(t->context, &config, &eval) == FK_OK) {
        const fk_particles view = particles_view(t);
        if (fk_eval_set_particles(eval, &view) == FK_OK && fk_eval_compute(eval, NULL) == FK_OK &&
            fk_eval_compute(eval, &measured) == FK_OK && measured > 0) {
            *seconds = measured;
            *n = PROBE_N;
            *overhead = now() - start;
        }
    }
    fk_eval_destroy(eval);
    free_system(t);
    t->n = saved;
}

/* Seconds one candidate at n would take, from a measured evaluation at n0 (N^2 work), with the
 * warm-up and the check, plus the build. */
static double predicted_cost(double seconds0, size_t n0, size_t n, double overhead)
{
    const double ratio = (double)n / (double)n0;
    return seconds0 * ratio * ratio * (MIN_REPS + 2) + overhead;
}

/* What a loop other than the reference refuses for this kernel and accumulator (lanes where it
 * has none, cells without a cutoff, the symmetric loop with a compensated accumulator) is an error
 * of the run, not of every candidate. */
static fk_status check_loop_runs(fk_context *context, const fk_tune_config *config,
                                 const fk__loop *loop, const fk_kernel_desc *kernel_desc,
                                 const fk_accum_desc *accum_desc)
{
    if (loop->reference)
        return FK_OK;
    const fk_kernel_info *kernel = &kernel_desc->info;
    if (config->lanes > 0 && !fk__loop_lane_form(loop) && !loop->list_lanes)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "lanes are a form of the all-pairs and neighbors loops, not of "
                        "algorithm %s",
                        loop->name);
    const fk_eval_config probe_config = {
        .struct_size = sizeof(fk_eval_config),
        .kernel = kernel->name,
        .accum = accum_desc->info.name,
        .algorithm = loop->algorithm,
        .lanes = -1,
        .eps = strncmp(kernel->input_format, "x y z m", 7) == 0 ? TUNE_EPS : 0.0};
    fk_eval *probe_eval = NULL;
    const fk_status supported = fk_eval_create(context, &probe_config, &probe_eval);
    fk_eval_destroy(probe_eval);
    return supported;
}

/* Tunes every bucket of t->result in turn, each with its share of the remaining budget. What
 * the first bucket measured predicts the others (N^2 work): buckets whose candidates could not run
 * a few times in their share are skipped, and their share goes to the rest. */
static fk_status tune_buckets(tuner *t)
{
    fk_tune_result *result = t->result;
    fk_status status = FK_OK;
    double reference_seconds = 0, overhead = 0;
    size_t reference_n = 0;
    if (result->buckets[0].n > 4 * PROBE_N)
        probe(t, &reference_seconds, &reference_n, &overhead);
    for (size_t i = 0; i < result->bucket_count && status == FK_OK && !t->stop; ++i) {
        t->bucket = &result->buckets[i];
        t->bucket_index = i;
        t->n = t->bucket->n;
        const double remaining = t->budget - (now() - t->start);
        size_t feasible = result->bucket_count - i;
        double share = remaining / (double)feasible;
        if (reference_n) {
            for (int round = 0; round < 8; ++round) {
                size_t count = 0;
                for (size_t k = i; k < result->bucket_count; ++k)
                    if (3 * predicted_cost(reference_seconds, reference_n, result->buckets[k].n,
                                           overhead) <=
                        share)
                        ++count;
                if (count == 0 || count == feasible)
                    break;
                feasible = count;
                share = remaining / (double)feasible;
            }
            const double cost = predicted_cost(reference_seconds, reference_n, t->n, overhead);
            if (3 * cost > share) {
                t->bucket->search = FK_TUNE_SKIPPED;
                snprintf(t->bucket->note, sizeof t->bucket->note,
                         "skipped: a candidate would take about %.3g s; the budget leaves %.3g s "
                         "for this N (raise --budget)",
                         cost, share);
                if (report(t, 0, 0, NULL, t->bucket))
                    t->stop = 1;
                continue;
            }
        }
        status = tune_bucket(t, share);
        /* The latest bucket predicts the next best: its N is the nearest, and at small N a GPU's
         * time is launch latency rather than N^2 work. */
        if (status == FK_OK && t->bucket->has_best) {
            reference_seconds = t->bucket->best.seconds;
            reference_n = t->n;
            overhead =
                t->bucket->tried_count ? t->bucket->seconds / (double)t->bucket->tried_count : 0;
        }
        if (status == FK_OK &&
            report(t, t->bucket->tried_count, t->bucket->tried_count, NULL, t->bucket))
            t->stop = 1;
    }
    return status;
}

fk_status fk_tune_run(fk_context *context, const fk_tune_config *config, fk_tune_result **out)
{
    return fk__tune_run_loop(context, config, fk__loop_reference()->algorithm, out);
}

fk_status fk__tune_run_loop(fk_context *context, const fk_tune_config *config, int algorithm,
                            fk_tune_result **out)
{
    if (!out)
        return FK_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (fk__context_usable(context) != FK_OK)
        return FK_ERR_INVALID_ARGUMENT;
    fk__clear_error(context);
    if (!config)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "no kernel named");
    if (!context->profiling)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "tuning times candidates by OpenCL event profiling, which this context's "
                        "queue does not record (fk_context_config.device_timing, or the caller's "
                        "queue without CL_QUEUE_PROFILING_ENABLE)");
    fk_tune_config copy;
    const fk_status copied = fk__config_copy(context, "fk_tune_config", &copy, sizeof copy, config,
                                             FK__SIZE_0_2(fk_tune_config, user));
    if (copied != FK_OK)
        return copied;
    config = &copy;
    const fk_kernel_desc *kernel_desc = NULL;
    const fk_accum_desc *accum_desc = NULL;
    fk_status found =
        fk__find_kernel_and_accum(context, config->kernel, config->accum ? config->accum : "float",
                                  &kernel_desc, &accum_desc);
    if (found != FK_OK)
        return found;
    const fk_kernel_info *kernel = &kernel_desc->info;
    const fk_accum_info *accum = &accum_desc->info;
    if (!(config->budget_seconds >= 0) || !isfinite(config->budget_seconds))
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "the budget must be finite and >= 0");
    if (config->n > (size_t)1 << 30)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "N = %zu exceeds 2^30", config->n);
    const fk__loop *loop = fk__loop_for(algorithm);
    if (!loop)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "unknown algorithm %d", algorithm);
    const fk_status runs = check_loop_runs(context, config, loop, kernel_desc, accum_desc);
    if (runs != FK_OK)
        return runs;

    fk_tune_result *result = calloc(1, sizeof *result);
    if (!result)
        return FK_ERR_HOST_MEMORY;
    tuner t = {.context = context,
               .kernel = kernel,
               .accum = accum->name,
               .config = config,
               .result = result,
               .start = now(),
               .budget =
                   config->budget_seconds > 0 ? config->budget_seconds : DEFAULT_BUDGET_SECONDS,
               .random_state = config->seed ? config->seed : 0x5eed5eed5eedull,
               .components = kernel->force_components,
               /* Gravity kernels read masses ("x y z m ..."); the others reject a softening. */
               .eps = strncmp(kernel->input_format, "x y z m", 7) == 0 ? TUNE_EPS : 0.0,
               .algorithm = algorithm,
               .loop = loop};
    fk__tuning_identity_query(context->platform, context->device, &context->info, &t.identity);
    {
        fk_variant lanes = {0};
        if (fk__loop_lane_form(loop)) /* the lane template, where automatic lanes would run it */
            t.lane_width = fk__automatic_lanes(context, kernel->name, accum->name, &lanes);
        else if (loop->list_lanes && context->info.type == FK_DEVICE_CPU &&
                 fk__registry_has_list_lanes(kernel_desc, accum_desc, context->info.fp64))
            t.lane_width = fk__device_lane_width(context); /* partners in lanes, on CPUs */
    }
    snprintf(result->kernel, sizeof result->kernel, "%s", kernel->name);
    snprintf(result->accum, sizeof result->accum, "%s", accum->name);
    snprintf(result->device_type, sizeof result->device_type, "%s", t.identity.type);
    snprintf(result->vendor, sizeof result->vendor, "%s", t.identity.vendor);
    snprintf(result->architecture, sizeof result->architecture, "%s",
             t.identity.architecture[0] ? t.identity.architecture : "default");
    snprintf(result->device, sizeof result->device, "%s", t.identity.device);
    t.database_path = fk__tuning_user_path(config->database);
    t.resume_path = fk__tuning_resume_path(t.database_path);
    if (t.resume_path)
        snprintf(result->resume, sizeof result->resume, "%s", t.resume_path);
    load_resume(&t);

    result->bucket_count = config->n ? 1 : FK_TUNE_BUCKET_COUNT;
    result->buckets = calloc(result->bucket_count, sizeof *result->buckets);
    fk_status status = result->buckets ? FK_OK : FK_ERR_HOST_MEMORY;
    for (size_t i = 0; i < result->bucket_count && status == FK_OK; ++i) {
        fk_tune_bucket_result *b = &result->buckets[i];
        b->bucket = config->n ? fk_tune_bucket_for(config->n) : fk_tune_bucket_at(i);
        b->n = config->n ? config->n : b->bucket;
        b->untuned_seconds = NAN;
    }

    if (status == FK_OK)
        status = tune_buckets(&t);
    result->interrupted = t.stop;
    result->seconds = now() - t.start;
    free_system(&t);
    fk_eval_destroy(t.eval);
    cJSON_Delete(t.resume);
    free(t.database_path);
    free(t.resume_path);
    if (status != FK_OK) {
        fk_tune_result_free(result);
        return status;
    }
    if (result->database[0]) {
        /* Later evaluations on this context see the new entries; warnings were given already. */
        char *warnings = context->warnings;
        context->warnings = NULL;
        fk__tuning_context_load(context);
        free(context->warnings);
        context->warnings = warnings;
    }
    *out = result;
    return FK_OK;
}
