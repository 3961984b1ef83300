/*
 * Targets against sources (issue #18): fk_sources, the engine of the GRAPE-6 / Sapporo layer
 * (src/sapporo/sapporo.c) and of any Hermite code that keeps its particles resident on the device.
 *
 * Why an object of its own and not a pair loop of fk_eval (src/core/loops/loop.h sketches one): an
 * evaluation is one particle set against itself, with float positions, index-based self and
 * exclusion masks, a bound pre-pass keyed to that set and results per particle of the set. Here
 * the targets and the sources are different sets of different sizes, the sources change one slot
 * at a time and are predicted on the device, positions are double-single, the self pair is masked
 * by ID, and the results add a nearest neighbour and neighbour lists. Forcing that through
 * fk_eval would add a second particle set, a second upload path and three result kinds to every
 * loop's contract; the shared parts are reused instead: the accumulator headers (cl/accum/), the
 * program builder and cache (fk__program_build with cl/g6.cl), the accumulators' host decoders,
 * the error mechanism and the struct_size rule.
 *
 * Device memory, per source slot: five double4 (x|tj, v|m, a, jerk, snap) as set, and the
 * predicted float4 pairs (position hi/lo with the mass, velocity hi/lo) and the ID. Per target
 * (max_targets): float4 pairs, ID, h2; partial sums per j-split; nearest neighbour; list.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "core/accum/accum.h" /* fk__choose_fixed64: the scale of a fixed64 sum */
#include "core/eval/eval.h"   /* fk__event_seconds */
#include "core/internal.h"
#include "core/loops/loop.h" /* FK__SET_ARGS */

#define FK_SOURCES_COMPONENTS 7 /* ax ay az jx jy jz phi (cl/g6.cl FK_G6_COMPONENTS) */
#define FK_SOURCES_MAX_SPLITS 1024
/* Per target in the result buffer: the 7 packed sums, the nearest ID, its r^2 (cl/g6.cl). */
#define FK_SOURCES_RESULT_WORDS 9
/* Work-items per target in the merge of the j-splits at most (cl/g6.cl FK_G6_REDUCE_LANES). */
#define FK_SOURCES_REDUCE_LANES 64

enum { BUF_XT, BUF_VM, BUF_A, BUF_J, BUF_S, SOURCE_DOUBLE4 };
enum { PRED_POS_HI, PRED_POS_LO, PRED_VEL_HI, PRED_VEL_LO, PRED_COUNT };
enum { TGT_POS_HI, TGT_POS_LO, TGT_VEL_HI, TGT_VEL_LO, TGT_COUNT };

struct fk_sources {
    fk_context *context;
    fk_sources_config config; /* defaults resolved; accum points at the descriptor's name */
    const fk_accum_desc *accum;
    int work_group_size, max_splits;
    size_t partial_count; /* (split, target) entries of the partial sums */

    cl_program program;
    cl_kernel predict, forces, reduce;
    cl_mem source[SOURCE_DOUBLE4], source_id, predicted[PRED_COUNT];
    /* Few transfers per block step (each has a fixed cost): all of the targets' data in one buffer
     * (the four float4 arrays, array k at k * max_targets; their (h2, ID) pairs as double2 at 4 *
     * max_targets; fixed64's settings at 5 * max_targets), one upload from pinned memory; the
     * results, nearest neighbour included, come back in one download into pinned memory. */
    cl_mem target;
    cl_mem partial, result, nn_r2, nn_id, count, list;

    /* Host side: the slots as set (4 doubles per slot per array), which slots were ever set, and
     * the range changed since the last upload. */
    double *host_source[SOURCE_DOUBLE4];
    int *host_id;
    unsigned char *ever_set;
    size_t
        set_prefix; /* slots 0 .. set_prefix - 1 have all been set (start checks nj against it) */
    size_t dirty_begin, dirty_end; /* [begin, end), empty when equal */
    /* The changed slots themselves (a block step changes a few, scattered): packed into one
     * upload and stored on the device by the predictor (fk_g6_predict), unless there are more than
     * update_capacity of them (the first load), which go as the range above. */
    size_t *dirty_list, dirty_count, update_capacity;
    unsigned char *dirty_mark;
    /* 24 doubles per update: x|t, v|m, a, jerk, snap, (slot, ID); in the target block's staging,
     * at update_offset bytes, so that the updates and the targets go up in one write */
    double *host_update;
    size_t update_offset;
    /* The predicted sources are those of predicted_time for slots below predicted_count while
     * predicted_valid (nothing changed since): the predictor is skipped (a repeated firsthalf). */
    int predicted_valid;
    double predicted_time;
    size_t predicted_count;

    /* Staging of one evaluation (written in start, read by the device until finish). */
    /* Pinned (mapped CL_MEM_ALLOC_HOST_PTR buffers): a transfer from or to pageable memory goes
     * through the driver's bounce buffer, and on a GPU that was most of a small block step. */
    cl_mem target_staging, result_staging;
    unsigned char *host_target_block; /* the layout of the device's target buffer */
    size_t target_block_bytes;
    float *host_target[TGT_COUNT];
    int *host_target_id;
    double *host_target_meta; /* (h2, ID) per target, in host_target_block */
    uint32_t *host_result;    /* FK_SOURCES_RESULT_WORDS uint2 per target; pinned */
    int *host_count, *host_list;

    /* fixed64: per target and component, the kernel's (scale, limit) and the decoder's scale. */
    int per_target_scale;
    size_t scale_count;       /* fk_sources_set_scale_count; 0: each start's nj */
    float *host_target_param; /* 4 per target component, in host_target_block */
    double *host_scale;       /* per target component */
    int in_flight, has_results, lists_wanted;
    int lists_on_device, lists_fetched; /* the device computed lists; they are on the host */
    size_t ni;
    /* The last start's first command, pair loop, merge and download (profiling); finish waits for
     * the download, the queue's last command. */
    cl_event first, forces_done, reduce_done, read_done;
};

static void release_event(cl_event *event)
{
    if (*event)
        clReleaseEvent(*event);
    *event = NULL;
}

static void release_events(fk_sources *s)
{
    release_event(&s->first);
    release_event(&s->forces_done);
    release_event(&s->reduce_done);
    release_event(&s->read_done);
}

const char *fk_positions_name(fk_positions positions)
{
    switch (positions) {
    case FK_POSITIONS_FLOAT:
        return "float";
    case FK_POSITIONS_DEFAULT:
    case FK_POSITIONS_DOUBLE_SINGLE:
        return "ds";
    }
    return NULL;
}

fk_status fk_positions_find(const char *name, fk_positions *positions)
{
    if (!name || !positions)
        return FK_ERR_INVALID_ARGUMENT;
    if (strcmp(name, "float") == 0)
        *positions = FK_POSITIONS_FLOAT;
    else if (strcmp(name, "ds") == 0 || strcmp(name, "double-single") == 0)
        *positions = FK_POSITIONS_DOUBLE_SINGLE;
    else
        return FK_ERR_INVALID_ARGUMENT;
    return FK_OK;
}

static void release_mem(cl_mem *mem)
{
    if (*mem)
        clReleaseMemObject(*mem);
    *mem = NULL;
}

void fk_sources_destroy(fk_sources *s)
{
    if (!s)
        return;
    if (s->in_flight && s->read_done)
        clWaitForEvents(1, &s->read_done);
    release_events(s);
    void *target_host = s->host_target_block, *result_host = s->host_result;
    fk__pinned_release(s->context, &s->target_staging, &target_host);
    fk__pinned_release(s->context, &s->result_staging, &result_host);
    for (int k = 0; k < SOURCE_DOUBLE4; ++k) {
        release_mem(&s->source[k]);
        free(s->host_source[k]);
    }
    for (int k = 0; k < PRED_COUNT; ++k)
        release_mem(&s->predicted[k]);
    release_mem(&s->target);
    cl_mem *others[] = {&s->source_id, &s->partial, &s->result, &s->nn_r2,
                        &s->nn_id,     &s->count,   &s->list};
    for (size_t k = 0; k < sizeof others / sizeof others[0]; ++k)
        release_mem(others[k]);
    if (s->predict)
        clReleaseKernel(s->predict);
    if (s->forces)
        clReleaseKernel(s->forces);
    if (s->reduce)
        clReleaseKernel(s->reduce);
    free(s->host_scale);
    free(s->dirty_list);
    free(s->dirty_mark);
    if (s->program)
        clReleaseProgram(s->program);
    free(s->host_id);
    free(s->ever_set);
    free(s->host_target_id);
    free(s->host_count);
    free(s->host_list);
    free(s);
}

static fk_status create_buffer(fk_sources *s, cl_mem_flags flags, size_t bytes, cl_mem *out,
                               const char *what)
{
    cl_int err = CL_SUCCESS;
    *out = clCreateBuffer(s->context->cl, flags, bytes ? bytes : 16, NULL, &err);
    if (err != CL_SUCCESS) {
        *out = NULL;
        return fk__fail(s->context, fk__cl_status(err), "clCreateBuffer (%s, %zu bytes) failed: %s",
                        what, bytes, fk__cl_error_name(err));
    }
    return FK_OK;
}

static fk_status create_kernel(fk_sources *s, const char *name, cl_kernel *out)
{
    cl_int err = CL_SUCCESS;
    *out = clCreateKernel(s->program, name, &err);
    if (err != CL_SUCCESS) {
        *out = NULL;
        return fk__fail(s->context, fk__cl_status(err), "clCreateKernel (%s) failed: %s", name,
                        fk__cl_error_name(err));
    }
    return FK_OK;
}

/* Work-groups that fill the device: four per compute unit. */
static size_t wanted_groups(const fk_context *context)
{
    return 4 * (size_t)(context->info.compute_units ? context->info.compute_units : 1);
}

static fk_status resolve_config(fk_context *context, const fk_sources_config *in,
                                fk_sources_config *out, const fk_accum_desc **accum)
{
    fk_status status =
        fk__config_copy(context, "fk_sources_config", out, sizeof *out, in, sizeof *out);
    if (status != FK_OK)
        return status;
    if (out->capacity == 0 || out->capacity > (size_t)INT32_MAX / 2)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_sources_config.capacity must be 1 .. %d source slots (got %zu)",
                        INT32_MAX / 2, out->capacity);
    if (out->max_targets == 0)
        out->max_targets = 256;
    if (out->max_targets > 65536)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_sources_config.max_targets %zu is above 65536", out->max_targets);
    if (out->neighbor_capacity == 0)
        out->neighbor_capacity = 256;
    if (out->neighbor_capacity > (size_t)INT32_MAX / out->max_targets)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_sources_config.neighbor_capacity %zu is too large",
                        out->neighbor_capacity);
    if (out->positions == FK_POSITIONS_DEFAULT)
        out->positions = FK_POSITIONS_DOUBLE_SINGLE;
    if (!fk_positions_name(out->positions))
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_sources_config.positions %d is not an fk_positions value",
                        (int)out->positions);
    /* 1 by default: on the H200 two and four targets per work-item were slower (register
     * pressure; results/2026-11-27_nvidia-h200/g6/README.md). */
    if (out->unroll == 0)
        out->unroll = 1;
    if (out->unroll != 1 && out->unroll != 2 && out->unroll != 4)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_sources_config.unroll %d: 1, 2 or 4 targets per work-item",
                        out->unroll);
    if (out->work_group_size < 0 || out->j_splits < 0 || out->j_splits > FK_SOURCES_MAX_SPLITS)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_sources_config: work_group_size %d or j_splits %d out of range "
                        "(j_splits <= %d)",
                        out->work_group_size, out->j_splits, FK_SOURCES_MAX_SPLITS);
    if (!context->info.fp64)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "targets against sources need double precision (cl_khr_fp64) for the "
                        "predictor, which %s lacks",
                        context->info.name);
    const char *name = out->accum ? out->accum : "ref";
    *accum = fk__accum_desc(name);
    if (!*accum)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "unknown accumulator '%s'", name);
    if ((*accum)->choose_parameters && (*accum)->choose_parameters != fk__choose_fixed64)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "accumulator '%s' takes its scale from a bound pre-pass, which targets "
                        "against sources does not run; use ref, double, float, fixed64 (scaled "
                        "from hints) or a compensated one",
                        name);
    if (strcmp(name, "bound") == 0)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "'bound' is not an accumulator of sums");
    out->accum = (*accum)->info.name;
    return FK_OK;
}

/* The kernels' arguments that stay for the object's lifetime (its buffers, the target stride, the
 * list capacity), set once: a block step sets only the few that change (each clSetKernelArg is a
 * host call of its own, some forty of them per block step otherwise). */
static fk_status set_fixed_args(fk_sources *s)
{
    fk_context *context = s->context;
    const cl_float4 acc_param = {{0, 0, 0, 0}};
    const int target_stride = (int)s->config.max_targets;
    const int capacity = (int)s->config.neighbor_capacity;
    const int offset = (int)(s->update_offset / (4 * sizeof(double))); /* in double4 */
    fk_status status = FK__SET_ARGS(
        context, s->predict, "fk_g6_predict", 4, FK__ARG(s->target), FK__ARG(offset),
        FK__ARG(s->source[BUF_XT]), FK__ARG(s->source[BUF_VM]), FK__ARG(s->source[BUF_A]),
        FK__ARG(s->source[BUF_J]), FK__ARG(s->source[BUF_S]), FK__ARG(s->source_id),
        FK__ARG(s->predicted[PRED_POS_HI]), FK__ARG(s->predicted[PRED_POS_LO]),
        FK__ARG(s->predicted[PRED_VEL_HI]), FK__ARG(s->predicted[PRED_VEL_LO]));
    if (status == FK_OK)
        status = FK__SET_ARGS(
            context, s->forces, "fk_g6_forces", 4, FK__ARG(acc_param), FK__ARG(s->target),
            FK__ARG(target_stride), FK__ARG(s->predicted[PRED_POS_HI]),
            FK__ARG(s->predicted[PRED_POS_LO]), FK__ARG(s->predicted[PRED_VEL_HI]),
            FK__ARG(s->predicted[PRED_VEL_LO]), FK__ARG(s->source_id), FK__ARG(s->partial),
            FK__ARG(s->nn_r2), FK__ARG(s->nn_id));
    if (status == FK_OK)
        status = FK__SET_ARGS(context, s->forces, "fk_g6_forces", 16, FK__ARG(capacity),
                              FK__ARG(s->count), FK__ARG(s->list));
    if (status == FK_OK)
        status = FK__SET_ARGS(context, s->reduce, "fk_g6_reduce", 2, FK__ARG(s->partial),
                              FK__ARG(s->result), FK__ARG(s->nn_r2), FK__ARG(s->nn_id));
    return status;
}

/* The work-group size, the most j-splits, and the program of cl/g6.cl for this configuration with
 * its three kernels. */
static fk_status build_program(fk_sources *s)
{
    fk_context *context = s->context;
    const size_t capacity = s->config.capacity;
    int wg = s->config.work_group_size;
    if (wg == 0)
        wg = context->info.type == FK_DEVICE_GPU ? 128 : 64;
    if ((size_t)wg > context->info.max_work_group_size)
        wg = (int)context->info.max_work_group_size;
    s->work_group_size = wg;
    const size_t tiles = (capacity + (size_t)wg - 1) / (size_t)wg;
    s->max_splits = (int)(tiles < FK_SOURCES_MAX_SPLITS ? tiles : FK_SOURCES_MAX_SPLITS);
    if (s->config.j_splits > s->max_splits)
        s->max_splits = s->config.j_splits;

    s->per_target_scale = s->accum->choose_parameters != NULL; /* fixed64 */
    char options[128];
    snprintf(options, sizeof options, "-D FK_G6_DS=%d -D FK_G6_TARGET_ENV=%d -D FK_G6_UNROLL=%d",
             s->config.positions == FK_POSITIONS_DOUBLE_SINGLE ? 1 : 0, s->per_target_scale,
             s->config.unroll);
    fk_program_request request = {.force = "gaj",
                                  .accum = s->accum->info.name,
                                  .unroll_i = 1,
                                  .unroll_j = 1,
                                  .work_group_size = wg,
                                  .local_tiling = 1,
                                  .potential = 1,
                                  .extra_options = options,
                                  .file = "g6.cl"};
    fk_program_result built;
    fk_status status = fk__program_build(context, &request, &built);
    if (status == FK_OK) {
        s->program = built.program;
        status = create_kernel(s, "fk_g6_predict", &s->predict);
    }
    if (status == FK_OK)
        status = create_kernel(s, "fk_g6_forces", &s->forces);
    if (status == FK_OK)
        status = create_kernel(s, "fk_g6_reduce", &s->reduce);
    return status;
}

/* The source slots: on the device (as set and predicted) and on the host (as set, and which
 * changed since the last upload), with the decoder's scales. */
static fk_status allocate_sources(fk_sources *s)
{
    const size_t capacity = s->config.capacity, ni_max = s->config.max_targets;
    s->host_scale = calloc(ni_max * FK_SOURCES_COMPONENTS, sizeof(double));
    if (!s->host_scale)
        return FK_ERR_HOST_MEMORY;
    s->dirty_list = calloc(capacity, sizeof(size_t));
    s->dirty_mark = calloc(capacity, 1);
    if (!s->dirty_list || !s->dirty_mark)
        return FK_ERR_HOST_MEMORY;
    fk_status status = FK_OK;
    for (int k = 0; k < SOURCE_DOUBLE4 && status == FK_OK; ++k) {
        status = create_buffer(s, CL_MEM_READ_ONLY, capacity * 4 * sizeof(double), &s->source[k],
                               "source slots");
        s->host_source[k] = calloc(capacity * 4, sizeof(double));
        if (status == FK_OK && !s->host_source[k])
            status = FK_ERR_HOST_MEMORY;
    }
    for (int k = 0; k < PRED_COUNT && status == FK_OK; ++k)
        status = create_buffer(s, CL_MEM_READ_WRITE, capacity * 4 * sizeof(float), &s->predicted[k],
                               "predicted sources");
    return status;
}

/* The target block, on the device and pinned on the host, with the host's views into it. */
static fk_status allocate_targets(fk_sources *s)
{
    fk_context *context = s->context;
    const size_t ni_max = s->config.max_targets;
    /* In float4 units of ni_max entries: four arrays, (h2, ID), and for fixed64
     * FK_SOURCES_COMPONENTS settings per target (cl/g6.cl reads the same layout); then, on a
     * 64-byte boundary, room for update_capacity slot updates. A block step sends both in one
     * write (each command costs the device a few microseconds of its own). */
    const size_t float4_bytes = 4 * sizeof(float);
    s->target_block_bytes =
        (TGT_COUNT + 1 + (s->per_target_scale ? FK_SOURCES_COMPONENTS : 0)) * ni_max * float4_bytes;
    s->update_offset = (s->target_block_bytes + 63) / 64 * 64;
    const size_t upload_bytes = s->update_offset + s->update_capacity * 24 * sizeof(double);
    fk_status status =
        create_buffer(s, CL_MEM_READ_ONLY, upload_bytes, &s->target, "targets and updates");
    if (status == FK_OK) {
        void *host = NULL;
        status =
            fk__pinned_create(context, upload_bytes, &s->target_staging, &host, "target staging");
        s->host_target_block = host;
    }
    if (status == FK_OK) {
        memset(s->host_target_block, 0, upload_bytes); /* what goes up beyond ni is defined */
        s->host_update = (double *)(s->host_target_block + s->update_offset);
        for (int k = 0; k < TGT_COUNT; ++k)
            s->host_target[k] = (float *)(s->host_target_block + (size_t)k * ni_max * float4_bytes);
        s->host_target_meta = (double *)(s->host_target_block + TGT_COUNT * ni_max * float4_bytes);
        s->host_target_param =
            s->per_target_scale
                ? (float *)(s->host_target_block + (TGT_COUNT + 1) * ni_max * float4_bytes)
                : NULL;
    }
    return status;
}

/* The IDs, the partial sums of the j-splits, the results (pinned on the host too), the nearest
 * neighbours and the neighbour lists. */
static fk_status allocate_results(fk_sources *s)
{
    fk_context *context = s->context;
    const size_t capacity = s->config.capacity, ni_max = s->config.max_targets;
    const size_t list_capacity = s->config.neighbor_capacity;
    const size_t wg = (size_t)s->work_group_size;
    /* Partial sums: splits x ni entries. The automatic split count is ceil(want / groups), so
     * splits x ni stays below (want + groups) x wg whatever ni is: a large max_targets (Sapporo2
     * reports 16,384 pipes) does not multiply the largest split count. */
    size_t partial_count = (size_t)s->max_splits * ni_max;
    if (s->config.j_splits == 0) {
        const size_t groups_max = (ni_max + (size_t)wg - 1) / (size_t)wg;
        const size_t bound =
            (wanted_groups(context) + groups_max) * (size_t)wg * (size_t)s->config.unroll;
        if (bound < partial_count)
            partial_count = bound;
    }
    s->partial_count = partial_count;
    fk_status status =
        create_buffer(s, CL_MEM_READ_ONLY, capacity * sizeof(int), &s->source_id, "IDs");
    if (status == FK_OK)
        status = create_buffer(s, CL_MEM_READ_WRITE,
                               partial_count * FK_SOURCES_COMPONENTS * 2 * sizeof(uint32_t),
                               &s->partial, "partial sums");
    if (status == FK_OK)
        status = create_buffer(s, CL_MEM_READ_WRITE,
                               ni_max * FK_SOURCES_RESULT_WORDS * 2 * sizeof(uint32_t), &s->result,
                               "results");
    if (status == FK_OK) {
        void *host = NULL;
        status = fk__pinned_create(context, ni_max * FK_SOURCES_RESULT_WORDS * 2 * sizeof(uint32_t),
                                   &s->result_staging, &host, "result staging");
        s->host_result = host;
    }
    if (status == FK_OK)
        status = create_buffer(s, CL_MEM_READ_WRITE, partial_count * sizeof(double), &s->nn_r2,
                               "nearest distances");
    if (status == FK_OK)
        status = create_buffer(s, CL_MEM_READ_WRITE, partial_count * sizeof(int), &s->nn_id,
                               "nearest IDs");
    if (status == FK_OK)
        status = create_buffer(s, CL_MEM_READ_WRITE, ni_max * sizeof(int), &s->count,
                               "neighbour counts");
    if (status == FK_OK)
        status = create_buffer(s, CL_MEM_READ_WRITE, ni_max * list_capacity * sizeof(int), &s->list,
                               "neighbour lists");
    if (status == FK_OK) {
        s->host_id = calloc(capacity, sizeof(int));
        s->ever_set = calloc(capacity, 1);
        s->host_target_id = calloc(ni_max, sizeof(int));
        s->host_count = calloc(ni_max, sizeof(int));
        s->host_list = calloc(ni_max * list_capacity, sizeof(int));
        if (!s->host_id || !s->ever_set || !s->host_target_id || !s->host_count || !s->host_list)
            status = FK_ERR_HOST_MEMORY;
    }
    return status;
}

fk_status fk_sources_create(fk_context *context, const fk_sources_config *config, fk_sources **out)
{
    if (!out)
        return FK_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (fk__context_usable(context) != FK_OK)
        return FK_ERR_INVALID_ARGUMENT;
    fk__clear_error(context);
    if (!config)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "fk_sources_create: no configuration");
    fk_sources *s = calloc(1, sizeof *s);
    if (!s)
        return FK_ERR_HOST_MEMORY;
    s->context = context;
    fk_status status = resolve_config(context, config, &s->config, &s->accum);
    if (status != FK_OK) {
        free(s);
        return status;
    }
    status = build_program(s);
    const size_t ni_max = s->config.max_targets;
    s->update_capacity = 4 * ni_max > 4096 ? 4 * ni_max : 4096;
    if (s->update_capacity > s->config.capacity)
        s->update_capacity = s->config.capacity;
    if (status == FK_OK)
        status = allocate_sources(s);
    if (status == FK_OK)
        status = allocate_targets(s);
    if (status == FK_OK)
        status = allocate_results(s);
    if (status == FK_OK)
        status = set_fixed_args(s);
    if (status != FK_OK) {
        fk_sources_destroy(s);
        return status;
    }
    *out = s;
    return FK_OK;
}

fk_status fk_sources_get_config(const fk_sources *s, fk_sources_config *config)
{
    if (!s || !config)
        return FK_ERR_INVALID_ARGUMENT;
    *config = s->config;
    config->work_group_size = s->work_group_size;
    return FK_OK;
}

static int finite3(const double *v)
{
    return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]);
}

fk_status fk_sources_set(fk_sources *s, size_t slot, const fk_source *source)
{
    if (!s || !source)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = s->context;
    fk__clear_error(context);
    if (s->in_flight)
        return fk__fail(context, FK_ERR_STATE,
                        "fk_sources_set: an evaluation is in flight (call fk_sources_finish)");
    if (slot >= s->config.capacity)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_sources_set: slot %zu is beyond the capacity of %zu slots", slot,
                        s->config.capacity);
    if (source->id < 0)
        return fk__fail(context, FK_ERR_INVALID_INPUT, "fk_sources_set: slot %zu: ID %d < 0", slot,
                        source->id);
    if (!isfinite(source->t) || !isfinite(source->mass) || source->mass < 0 ||
        !finite3(source->x) || !finite3(source->v) || !finite3(source->a) ||
        !finite3(source->jerk) || !finite3(source->snap))
        return fk__fail(context, FK_ERR_INVALID_INPUT,
                        "fk_sources_set: slot %zu (ID %d): a value is NaN or infinite, or the "
                        "mass is negative",
                        slot, source->id);
    double *xt = s->host_source[BUF_XT] + 4 * slot, *vm = s->host_source[BUF_VM] + 4 * slot;
    double *a = s->host_source[BUF_A] + 4 * slot, *jk = s->host_source[BUF_J] + 4 * slot;
    double *sn = s->host_source[BUF_S] + 4 * slot;
    for (int k = 0; k < 3; ++k) {
        xt[k] = source->x[k];
        vm[k] = source->v[k];
        a[k] = source->a[k];
        jk[k] = source->jerk[k];
        sn[k] = source->snap[k];
    }
    xt[3] = source->t;
    vm[3] = source->mass;
    s->host_id[slot] = source->id;
    s->ever_set[slot] = 1;
    while (s->set_prefix < s->config.capacity && s->ever_set[s->set_prefix])
        ++s->set_prefix;
    s->predicted_valid = 0;
    if (!s->dirty_mark[slot]) {
        s->dirty_mark[slot] = 1;
        s->dirty_list[s->dirty_count++] = slot;
    }
    if (s->dirty_begin == s->dirty_end) {
        s->dirty_begin = slot;
        s->dirty_end = slot + 1;
    } else {
        if (slot < s->dirty_begin)
            s->dirty_begin = slot;
        if (slot + 1 > s->dirty_end)
            s->dirty_end = slot + 1;
    }
    return FK_OK;
}

/* x as a float pair (hi, lo) with hi + lo = x to 48 bits; lo = 0 for float positions. */
static void split_double(double x, int ds, float *hi, float *lo)
{
    *hi = (float)x;
    *lo = ds ? (float)(x - (double)*hi) : 0.0f;
}

static int compare_size(const void *a, const void *b)
{
    const size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

static fk_status fail_enqueue(fk_sources *s, const char *call, cl_int err)
{
    clFinish(s->context->queue);
    return fk__cl_fail(s->context, call, err);
}

/* fixed64: target i's scales, one per vector (or the potential), from the caller's hint of its
 * magnitude (1 without one) with room for terms 1024 times larger, over nj terms: fixed64's own
 * rule for the scale. */
static fk_status choose_target_scales(fk_sources *s, const fk_targets *t, size_t i, size_t nj)
{
    for (int c = 0; c < FK_SOURCES_COMPONENTS; c += c < 6 ? 3 : 1) {
        /* The hint's magnitude: a vector's norm for all three components. */
        const double *hint = c == 0   ? (t->acc_hint ? t->acc_hint + 3 * i : NULL)
                             : c == 3 ? (t->jerk_hint ? t->jerk_hint + 3 * i : NULL)
                                      : (t->pot_hint ? t->pot_hint + i : NULL);
        double magnitude = 0;
        if (hint)
            magnitude = c < 6 ? sqrt(hint[0] * hint[0] + hint[1] * hint[1] + hint[2] * hint[2])
                              : fabs(hint[0]);
        if (!(magnitude > 0) || !isfinite(magnitude))
            magnitude = 1.0;
        const fk_accum_bound bound = {.max_term = 1024 * magnitude,
                                      .max_sum = 1024 * magnitude,
                                      .count = s->scale_count ? s->scale_count : nj};
        fk_accum_params params;
        if (!fk__choose_fixed64(&bound, &params))
            return fk__fail(s->context, FK_ERR_INVALID_INPUT,
                            "fk_sources_start: target %zu (ID %d): scale hint %g cannot "
                            "be represented by fixed64",
                            i, t->id[i], magnitude);
        for (int q = c; q < (c < 6 ? c + 3 : c + 1); ++q) {
            const size_t at = i * FK_SOURCES_COMPONENTS + (size_t)q;
            s->host_scale[at] = params.scale;
            memcpy(s->host_target_param + 4 * at, params.acc_param, 4 * sizeof(float));
        }
    }
    return FK_OK;
}

/* The targets into the staging block (positions split into hi and lo floats for double-single),
 * each checked to be finite; *lists: some target asks for a neighbour list (h2 > 0). */
static fk_status stage_targets(fk_sources *s, const fk_targets *t, int *lists)
{
    fk_context *context = s->context;
    const size_t ni = t->count, nj = t->sources;
    const int ds = s->config.positions == FK_POSITIONS_DOUBLE_SINGLE;
    *lists = 0;
    for (size_t i = 0; i < ni; ++i) {
        if (!finite3(t->position + 3 * i) || !finite3(t->velocity + 3 * i))
            return fk__fail(context, FK_ERR_INVALID_INPUT,
                            "fk_sources_start: target %zu (ID %d) has a NaN or infinite "
                            "position or velocity",
                            i, t->id[i]);
        const double h2 = t->h2 ? t->h2[i] : 0.0;
        if (isnan(h2))
            return fk__fail(context, FK_ERR_INVALID_INPUT,
                            "fk_sources_start: target %zu (ID %d) has h2 = NaN", i, t->id[i]);
        if (h2 > 0)
            *lists = 1;
        for (int k = 0; k < 3; ++k) {
            split_double(t->position[3 * i + k], ds, &s->host_target[TGT_POS_HI][4 * i + k],
                         &s->host_target[TGT_POS_LO][4 * i + k]);
            split_double(t->velocity[3 * i + k], ds, &s->host_target[TGT_VEL_HI][4 * i + k],
                         &s->host_target[TGT_VEL_LO][4 * i + k]);
        }
        s->host_target_id[i] = t->id[i];
        s->host_target_meta[2 * i] = h2;
        s->host_target_meta[2 * i + 1] = (double)t->id[i];
        for (int c = 0; c < FK_SOURCES_COMPONENTS; ++c)
            s->host_scale[i * FK_SOURCES_COMPONENTS + (size_t)c] = 1.0;
        if (s->per_target_scale) {
            const fk_status status = choose_target_scales(s, t, i, nj);
            if (status != FK_OK)
                return status;
        }
    }
    return FK_OK;
}

/* The sources changed since the last upload and the staged targets, in as few writes as it takes;
 * *packed_updates and *update_slots: the slot updates that the predictor stores. */
static fk_status send_targets_and_changes(fk_sources *s, size_t ni, int lists,
                                          size_t *packed_updates_out, size_t *update_slots_out)
{
    fk_context *context = s->context;
    cl_command_queue queue = context->queue;
    cl_int err = CL_SUCCESS;
    /* The slots changed since the last upload: packed in slot order, for the predictor to store
     * (it finds them by binary search), when they are few (a block step's); else the range that
     * holds them (the first load). */
    size_t packed_updates = 0, update_slots = 0;
    if (s->dirty_count > 0 && s->dirty_count <= s->update_capacity) {
        const size_t n = s->dirty_count;
        packed_updates = n;
        qsort(s->dirty_list, n, sizeof *s->dirty_list, compare_size);
        update_slots = s->dirty_list[n - 1] + 1;
        for (size_t k = 0; k < n; ++k) {
            const size_t slot = s->dirty_list[k];
            for (int b = 0; b < SOURCE_DOUBLE4; ++b)
                memcpy(s->host_update + 24 * k + 4 * b, s->host_source[b] + 4 * slot,
                       4 * sizeof(double));
            /* The slot and the ID ride in the sixth double4's first double (as_int2 there). */
            const int32_t slot_id[2] = {(int32_t)slot, s->host_id[slot]};
            memcpy(s->host_update + 24 * k + 20, slot_id, sizeof slot_id);
            s->dirty_mark[slot] = 0;
        }
    } else if (s->dirty_count > 0) {
        const size_t first = s->dirty_begin, n = s->dirty_end - s->dirty_begin;
        for (int k = 0; k < SOURCE_DOUBLE4 && err == CL_SUCCESS; ++k)
            err = clEnqueueWriteBuffer(queue, s->source[k], CL_FALSE, first * 4 * sizeof(double),
                                       n * 4 * sizeof(double), s->host_source[k] + 4 * first, 0,
                                       NULL, NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueWriteBuffer(queue, s->source_id, CL_FALSE, first * sizeof(int),
                                       n * sizeof(int), s->host_id + first, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            return fail_enqueue(s, "clEnqueueWriteBuffer (sources)", err);
        for (size_t k = 0; k < s->dirty_count; ++k)
            s->dirty_mark[s->dirty_list[k]] = 0;
    }
    s->dirty_count = 0;
    s->dirty_begin = s->dirty_end = 0;
    /* The target block as one write, up to the last part's first ni entries, or with packed slot
     * updates up to the last of them. */
    const size_t float4_bytes = 4 * sizeof(float), ni_max = s->config.max_targets;
    const size_t target_bytes =
        packed_updates > 0 ? s->update_offset + packed_updates * 24 * sizeof(double)
        : s->per_target_scale
            ? ((TGT_COUNT + 1) * ni_max + ni * FK_SOURCES_COMPONENTS) * float4_bytes
            : (TGT_COUNT * ni_max + ni) * float4_bytes;
    err = clEnqueueWriteBuffer(queue, s->target, CL_FALSE, 0, target_bytes, s->host_target_block, 0,
                               NULL, &s->first);
    if (err == CL_SUCCESS && lists) {
        const cl_int zero = 0;
        err = fk__enqueue_fill(context, s->count, &zero, sizeof zero, ni * sizeof(int), 0, NULL,
                               NULL);
    }
    if (err != CL_SUCCESS)
        return fail_enqueue(s, "clEnqueueWriteBuffer (targets, updates)", err);
    *packed_updates_out = packed_updates;
    *update_slots_out = update_slots;
    return FK_OK;
}

/* The predictor over slots 0 .. nj - 1 at the targets' time, unless the predicted sources are
 * still those of that time; it also stores the packed updates (also those of slots from nj on,
 * which it only stores). */
static fk_status predict_sources(fk_sources *s, size_t nj, double ti, size_t packed_updates,
                                 size_t update_slots)
{
    fk_context *context = s->context;
    cl_command_queue queue = context->queue;
    cl_int err = CL_SUCCESS;
    const int nj_int = (int)nj;
    const size_t predict_slots = update_slots > nj ? update_slots : nj;
    const int slots_int = (int)predict_slots, updates_int = (int)packed_updates;
    fk_status status = FK__SET_ARGS(context, s->predict, "fk_g6_predict", 0, FK__ARG(nj_int),
                                    FK__ARG(ti), FK__ARG(slots_int), FK__ARG(updates_int));
    if (status != FK_OK) {
        clFinish(queue);
        return status;
    }
    if (packed_updates > 0 ||
        !(s->predicted_valid && s->predicted_time == ti && s->predicted_count >= nj)) {
        const size_t predict_local = 64;
        const size_t predict_global =
            (predict_slots + predict_local - 1) / predict_local * predict_local;
        err = clEnqueueNDRangeKernel(queue, s->predict, 1, NULL, &predict_global, &predict_local, 0,
                                     NULL, NULL);
        if (err != CL_SUCCESS)
            return fail_enqueue(s, "clEnqueueNDRangeKernel (fk_g6_predict)", err);
        s->predicted_valid = 1;
        s->predicted_time = ti;
        s->predicted_count = nj;
    }
    return FK_OK;
}

/* The pair loop over the sources split among work-groups, the merge of the splits, and the
 * download of the results, without waiting. */
static fk_status launch_forces(fk_sources *s, const fk_targets *t, int lists)
{
    fk_context *context = s->context;
    cl_command_queue queue = context->queue;
    const size_t ni = t->count, nj = t->sources;
    const int nj_int = (int)nj, ni_int = (int)ni;
    /* The split of the sources: enough work-groups to fill the device (four per compute unit),
     * no chunk shorter than a tile. */
    const size_t wg = (size_t)s->work_group_size;
    const size_t per_group = wg * (size_t)s->config.unroll; /* targets per work-group */
    const size_t groups = (ni + per_group - 1) / per_group;
    const size_t tiles = (nj + wg - 1) / wg;
    size_t splits = (size_t)s->config.j_splits;
    if (splits == 0) {
        const size_t want = wanted_groups(context);
        splits = (want + groups - 1) / groups;
    }
    if (splits > tiles)
        splits = tiles;
    if (splits > (size_t)s->max_splits)
        splits = (size_t)s->max_splits;
    if (splits > s->partial_count / ni)
        splits = s->partial_count / ni;
    if (splits == 0)
        splits = 1;
    const int chunk = (int)(((tiles + splits - 1) / splits) * wg);
    splits = (nj + (size_t)chunk - 1) / (size_t)chunk;
    const int splits_int = (int)splits;
    const int want_lists = lists;
    const double eps2 = t->eps2;
    /* Only the arguments that change; the buffers were set at creation (set_fixed_args). */
    fk_status status = FK__SET_ARGS(context, s->forces, "fk_g6_forces", 0, FK__ARG(ni_int),
                                    FK__ARG(nj_int), FK__ARG(chunk), FK__ARG(eps2));
    if (status == FK_OK)
        status = FK__SET_ARGS(context, s->forces, "fk_g6_forces", 15, FK__ARG(want_lists));
    if (status == FK_OK)
        status = FK__SET_ARGS(context, s->reduce, "fk_g6_reduce", 0, FK__ARG(ni_int),
                              FK__ARG(splits_int));
    if (status != FK_OK) {
        clFinish(queue);
        return status;
    }
    const size_t forces_global[2] = {groups * wg, splits}, forces_local[2] = {wg, 1};
    cl_int err = clEnqueueNDRangeKernel(queue, s->forces, 2, NULL, forces_global, forces_local, 0,
                                        NULL, &s->forces_done);
    if (err != CL_SUCCESS)
        return fail_enqueue(s, "clEnqueueNDRangeKernel (fk_g6_forces)", err);
    /* The merge: a work-group per target, a lane per split up to FK_SOURCES_REDUCE_LANES. */
    size_t lanes = 1;
    while (lanes < splits && lanes < FK_SOURCES_REDUCE_LANES &&
           lanes * 2 <= context->info.max_work_group_size)
        lanes *= 2;
    const size_t reduce_global = ni * lanes;
    err = clEnqueueNDRangeKernel(queue, s->reduce, 1, NULL, &reduce_global, &lanes, 0, NULL,
                                 &s->reduce_done);
    if (err != CL_SUCCESS)
        return fail_enqueue(s, "clEnqueueNDRangeKernel (fk_g6_reduce)", err);

    /* The results back into pinned memory, without waiting. */
    err = clEnqueueReadBuffer(queue, s->result, CL_FALSE, 0,
                              ni * FK_SOURCES_RESULT_WORDS * 2 * sizeof(uint32_t), s->host_result,
                              0, NULL, &s->read_done);
    /* The neighbour lists stay on the device until fk_sources_neighbors asks (most block steps
     * never read them, and they are the largest result). */
    if (err != CL_SUCCESS)
        return fail_enqueue(s, "clEnqueueReadBuffer (results)", err);
    return FK_OK;
}

fk_status fk_sources_start(fk_sources *s, const fk_targets *t)
{
    if (!s || !t)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = s->context;
    fk__clear_error(context);
    if (s->in_flight)
        return fk__fail(context, FK_ERR_STATE,
                        "fk_sources_start: an evaluation is already in flight");
    const size_t ni = t->count, nj = t->sources;
    if (ni == 0 || ni > s->config.max_targets)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_sources_start: %zu targets; 1 .. %zu (max_targets) are allowed", ni,
                        s->config.max_targets);
    if (nj == 0 || nj > s->config.capacity)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_sources_start: %zu sources; 1 .. %zu (the capacity) are allowed", nj,
                        s->config.capacity);
    if (!t->id || !t->position || !t->velocity)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_sources_start: the targets need id, position and velocity");
    if (!isfinite(t->time) || !(t->eps2 >= 0) || !isfinite(t->eps2))
        return fk__fail(context, FK_ERR_INVALID_INPUT,
                        "fk_sources_start: time %g or eps2 %g is not finite, or eps2 < 0", t->time,
                        t->eps2);
    /* The first slot never set, kept by fk_sources_set: no pass over the sources per block step. */
    if (nj > s->set_prefix)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_sources_start: source slot %zu (of nj = %zu) was never set",
                        s->set_prefix, nj);
    int lists = 0;
    fk_status status = stage_targets(s, t, &lists);
    if (status != FK_OK)
        return status;
    release_events(s);
    size_t packed_updates = 0, update_slots = 0;
    status = send_targets_and_changes(s, ni, lists, &packed_updates, &update_slots);
    if (status == FK_OK)
        status = predict_sources(s, nj, t->time, packed_updates, update_slots);
    if (status == FK_OK)
        status = launch_forces(s, t, lists);
    if (status != FK_OK)
        return status;
    /* The download, the queue's last command, is what finish waits for: no marker after it (on
     * NVIDIA's OpenCL every command costs the host 4-22 us to enqueue behind a running kernel,
     * bench_async_probe). */
    clFlush(context->queue);
    s->in_flight = 1;
    s->has_results = 0;
    /* Radii given but none positive: empty lists, without a pass on the device. */
    s->lists_wanted = t->h2 != NULL;
    s->lists_on_device = lists;
    s->lists_fetched = 0;
    if (s->lists_wanted && !lists)
        memset(s->host_count, 0, ni * sizeof(int));
    s->ni = ni;
    return FK_OK;
}

static int compare_int(const void *a, const void *b)
{
    const int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static fk_status decode_results(fk_sources *s, const uint32_t *words,
                                const fk_target_results *results);

fk_status fk_sources_finish(fk_sources *s, const fk_target_results *results)
{
    if (!s)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = s->context;
    fk__clear_error(context);
    if (!s->in_flight)
        return fk__fail(context, FK_ERR_STATE, "fk_sources_finish: no evaluation was started");
    s->in_flight = 0;
    cl_int err = clWaitForEvents(1, &s->read_done);
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, "clWaitForEvents (targets against sources)", err);
    cl_int execution = CL_COMPLETE;
    clGetEventInfo(s->read_done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof execution, &execution,
                   NULL);
    if (execution < 0)
        return fk__cl_fail(context, "targets against sources (enqueued work)", execution);
    s->has_results = 1;
    return decode_results(s, s->host_result, results);
}

/* The results of words (FK_SOURCES_RESULT_WORDS uint2 per target, as the device wrote them, or
 * partial evaluations combined) decoded at the last start's scales. */
static fk_status decode_results(fk_sources *s, const uint32_t *words,
                                const fk_target_results *results)
{
    fk_context *context = s->context;
    fk_status status = FK_OK;
    size_t bad = SIZE_MAX;
    for (size_t i = 0; i < s->ni; ++i) {
        double value[FK_SOURCES_COMPONENTS];
        for (int c = 0; c < FK_SOURCES_COMPONENTS; ++c) {
            const uint32_t *w = words + 2 * (i * FK_SOURCES_RESULT_WORDS + (size_t)c);
            const int overflowed = s->accum->overflowed && s->accum->overflowed(w[0], w[1]);
            value[c] = overflowed
                           ? NAN
                           : s->accum->decode(w[0], w[1],
                                              s->host_scale[i * FK_SOURCES_COMPONENTS + (size_t)c]);
            if (!isfinite(value[c]) && bad == SIZE_MAX)
                bad = i;
        }
        if (results && results->acc)
            for (int k = 0; k < 3; ++k)
                results->acc[3 * i + (size_t)k] = value[k];
        if (results && results->jerk)
            for (int k = 0; k < 3; ++k)
                results->jerk[3 * i + (size_t)k] = value[3 + k];
        if (results && results->pot)
            results->pot[i] = value[6];
        if (results && results->nearest)
            results->nearest[i] =
                (int32_t)words[2 * (i * FK_SOURCES_RESULT_WORDS + FK_SOURCES_COMPONENTS)];
    }
    if (bad != SIZE_MAX)
        status = fk__fail(context, FK_ERR_OVERFLOW,
                          "targets against sources: target %zu (ID %d) has a non-finite sum "
                          "(coincident particles without softening?) or one beyond fixed64's "
                          "range (a scale hint too small)",
                          bad, s->host_target_id[bad]);
    return status;
}

fk_status fk_sources_set_scale_count(fk_sources *s, size_t count)
{
    if (!s)
        return FK_ERR_INVALID_ARGUMENT;
    fk__clear_error(s->context);
    if (s->in_flight)
        return fk__fail(s->context, FK_ERR_STATE,
                        "fk_sources_set_scale_count while an evaluation is in flight");
    s->scale_count = count;
    return FK_OK;
}

fk_status fk_sources_read_raw(fk_sources *s, uint64_t *words)
{
    if (!s || !words)
        return FK_ERR_INVALID_ARGUMENT;
    fk__clear_error(s->context);
    if (!s->has_results || s->in_flight)
        return fk__fail(s->context, FK_ERR_STATE, "fk_sources_read_raw: no finished evaluation");
    for (size_t k = 0; k < s->ni * FK_SOURCES_RESULT_WORDS; ++k)
        words[k] = (uint64_t)s->host_result[2 * k] | (uint64_t)s->host_result[2 * k + 1] << 32;
    return FK_OK;
}

fk_status fk_sources_decode_raw(fk_sources *s, const uint64_t *words,
                                const fk_target_results *results)
{
    if (!s || !words)
        return FK_ERR_INVALID_ARGUMENT;
    fk__clear_error(s->context);
    if (!s->has_results || s->in_flight)
        return fk__fail(s->context, FK_ERR_STATE,
                        "fk_sources_decode_raw: no finished evaluation (its scales decode)");
    uint32_t *pairs = malloc(s->ni * FK_SOURCES_RESULT_WORDS * 2 * sizeof *pairs + 1);
    if (!pairs)
        return fk__fail(s->context, FK_ERR_HOST_MEMORY, "fk_sources_decode_raw: no memory");
    for (size_t k = 0; k < s->ni * FK_SOURCES_RESULT_WORDS; ++k) {
        pairs[2 * k] = (uint32_t)words[k];
        pairs[2 * k + 1] = (uint32_t)(words[k] >> 32);
    }
    const fk_status status = decode_results(s, pairs, results);
    free(pairs);
    return status;
}

fk_status fk_sources_neighbors(fk_sources *s, size_t target, const int **ids, size_t *count,
                               int *overflow)
{
    if (!s || !ids || !count)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = s->context;
    fk__clear_error(context);
    if (!s->has_results || !s->lists_wanted)
        return fk__fail(context, FK_ERR_STATE,
                        "fk_sources_neighbors: no finished evaluation with neighbour radii");
    if (target >= s->ni)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "fk_sources_neighbors: target %zu of %zu",
                        target, s->ni);
    if (s->lists_on_device && !s->lists_fetched) {
        /* The first request since the evaluation: counts and lists come over, sorted here. */
        const size_t capacity = s->config.neighbor_capacity;
        cl_int err = clEnqueueReadBuffer(context->queue, s->count, CL_TRUE, 0, s->ni * sizeof(int),
                                         s->host_count, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueReadBuffer(context->queue, s->list, CL_TRUE, 0,
                                      s->ni * capacity * sizeof(int), s->host_list, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            return fk__cl_fail(context, "clEnqueueReadBuffer (neighbour lists)", err);
        for (size_t i = 0; i < s->ni; ++i) {
            size_t n = (size_t)s->host_count[i];
            if (n > capacity)
                n = capacity;
            qsort(s->host_list + i * capacity, n, sizeof(int), compare_int);
        }
        s->lists_fetched = 1;
    }
    const size_t found = (size_t)s->host_count[target];
    *ids = s->host_list + target * s->config.neighbor_capacity;
    *count = found;
    if (overflow)
        *overflow = found > s->config.neighbor_capacity;
    return FK_OK;
}

fk_status fk_sources_device_seconds(fk_sources *s, double *total, double *pair_loop)
{
    if (!s)
        return FK_ERR_INVALID_ARGUMENT;
    fk__clear_error(s->context);
    if (!s->has_results || s->in_flight)
        return fk__fail(s->context, FK_ERR_STATE,
                        "fk_sources_device_seconds: no finished evaluation");
    const double whole = s->first && s->read_done ? fk__event_seconds(s->first, s->read_done) : -1;
    const double loop =
        s->forces_done && s->reduce_done ? fk__event_seconds(s->forces_done, s->reduce_done) : -1;
    if (whole < 0 || loop < 0)
        return fk__fail(s->context, FK_ERR_UNSUPPORTED,
                        "fk_sources_device_seconds: the device gave no profiling times");
    if (total)
        *total = whole;
    if (pair_loop)
        *pair_loop = loop;
    return FK_OK;
}
