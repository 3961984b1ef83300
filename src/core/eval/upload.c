/* Upload and validation: the particles (and the pair table) checked, converted and written to the
 * device, the all-pairs j-split chosen, then the loop prepared and the accumulator parameters
 * measured. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/eval/eval_internal.h"
#include "forcekit/forcekit_cl.h"
#include "core/tuning_db/db.h"

/* i-particles per work-group: the unrolled ones, or the lanes. */
static size_t i_per_group(const fk_variant *variant)
{
    return (size_t)variant->work_group_size * (size_t)variant->unroll_i *
           (size_t)(variant->lanes > 0 ? variant->lanes : 1);
}

static int choose_splits(const fk_eval *eval, size_t count)
{
    const int group = eval->state.variant.work_group_size;
    const size_t i_block = i_per_group(&eval->state.variant);
    const size_t i_groups = (count + i_block - 1) / i_block;
    const size_t max_splits = (count + (size_t)group - 1) / (size_t)group; /* >= one tile each */
    size_t splits;
    if (eval->state.config.j_splits > 0) {
        splits = (size_t)eval->state.config.j_splits;
    } else if (eval->tuned_j_splits > 0 && fk_tune_bucket_for(count) == eval->tuned_bucket) {
        /* A tuned split is a count of work-groups for that bucket's N; elsewhere it could
         * multiply the partial-sum memory, so other N get the automatic split. */
        splits = (size_t)eval->tuned_j_splits;
    } else {
        /* Enough work-groups to fill the device: GPUs need several resident groups per compute
         * unit to hide latency; a CPU runs one group per core thread at a time. */
        const fk_device_info *device = &eval->state.context->info;
        size_t target = (size_t)device->compute_units * (device->type == FK_DEVICE_GPU ? 8 : 2);
        splits = (target + i_groups - 1) / i_groups;
    }
    if (splits > max_splits)
        splits = max_splits;
    if (splits < 1)
        splits = 1;
    return (int)splits;
}

static fk_status check_particles(fk_eval *eval, const fk_particles *particles)
{
    fk_context *context = eval->state.context;
    const size_t n = particles->count;
    if (n == 0)
        return fk__fail(context, FK_ERR_INVALID_INPUT, "no particles (N = 0)");
    if (n > (size_t)(1u << 30))
        return fk__fail(context, FK_ERR_INVALID_INPUT, "N = %zu exceeds the limit of 2^30", n);
    if (!particles->position)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "no positions given");
    fk_status status = fk__loop_limit_check(context, n);
    if (status != FK_OK)
        return status;
    for (size_t i = 0; i < n; ++i) {
        for (int k = 0; k < 3; ++k) {
            double x = particles->position[3 * i + (size_t)k];
            if (!isfinite(x) || fabs(x) > FLT_MAX)
                return fk__fail(context, FK_ERR_INVALID_INPUT,
                                "particle %zu: coordinate %d is %g (not a finite float)", i, k, x);
        }
        if (particles->mass) {
            double m = particles->mass[i];
            if (!isfinite(m) || fabs(m) > FLT_MAX)
                return fk__fail(context, FK_ERR_INVALID_INPUT,
                                "particle %zu: mass/charge is %g (not a finite float)", i, m);
        }
    }
    return FK_OK;
}

/* With eps = 0 two bodies at the same (single-precision) position have an infinite force: a user
 * error that must be reported, not turned into NaN. O(N log N). */
static fk_status check_coincident(fk_eval *eval, const float *body, size_t n)
{
    /* The molecular kernels check in fk__forcelaw_particles (modulo their periodic box). */
    if (eval->state.config.eps > 0 || n < 2 || eval->state.kernel->uses_table)
        return FK_OK;
    const size_t stride = fk__eval_body_floats(&eval->state);
    size_t a = 0, b = 0;
    fk_status status = fk__find_coincident(body, stride, n, NULL, &a, &b);
    if (status != FK_OK || a == SIZE_MAX)
        return status;
    return fk__fail(eval->state.context, FK_ERR_INVALID_INPUT,
                    "particles %zu and %zu are at the same position (%g, %g, %g) and the "
                    "softening eps is 0: their force is infinite; use --eps",
                    a, b, (double)body[stride * a], (double)body[stride * a + 1],
                    (double)body[stride * a + 2]);
}

/* Particle i's record(s) from the caller's doubles: (x, y, z, m) rounded to float, and with
 * double-single positions the second record, the low parts (the value less its float, exact in
 * double and rounded to float: together 48 bits of mantissa). */
static void store_body(float *body, size_t stride, size_t i, const double *position, double mass)
{
    float *record = body + stride * i;
    for (int k = 0; k < 3; ++k) {
        const double x = position[3 * i + (size_t)k];
        record[k] = (float)x;
        if (stride == 8)
            record[4 + k] = (float)(x - (double)record[k]);
    }
    record[3] = (float)mass;
    if (stride == 8)
        record[7] = (float)(mass - (double)record[3]);
}

/* What set_particles uploads, prepared on the host: the particle records, the force law's
 * per-particle data (velocities, types, exclusions), exclude-afterwards' partner lists and the
 * pair table (NULL where there is none). */
typedef struct staged_particles {
    float *body;
    void *aux;
    size_t aux_bytes;
    int32_t *excluded;
    size_t excluded_bytes;
    void *table;
    size_t table_bytes;
} staged_particles;

static void free_staged(staged_particles *staged)
{
    void *owned[] = {staged->body, staged->aux, staged->excluded, staged->table};
    for (size_t k = 0; k < sizeof owned / sizeof owned[0]; ++k)
        free(owned[k]);
    memset(staged, 0, sizeof *staged);
}

static fk_status stage_particles(fk_eval *eval, const fk_particles *particles, size_t stride,
                                 staged_particles *staged)
{
    fk_context *context = eval->state.context;
    const size_t n = particles->count;
    memset(staged, 0, sizeof *staged);
    staged->body = malloc(n * stride * sizeof *staged->body);
    if (!staged->body)
        return FK_ERR_HOST_MEMORY;
    for (size_t i = 0; i < n; ++i)
        store_body(staged->body, stride, i, particles->position,
                   particles->mass ? particles->mass[i] : 1);
    fk_status status = check_coincident(eval, staged->body, n);
    if (status == FK_OK) /* the force law's per-particle data: velocities, types, exclusions */
        status = fk__forcelaw_particles(context, eval->state.kernel, &eval->state.law, particles,
                                        staged->body, stride, &staged->aux, &staged->aux_bytes);
    if (status == FK_OK && eval->subtract) /* exclude afterwards: the partner lists */
        status = fk__forcelaw_exclusion_lists(context, &eval->state.law, n, &staged->excluded,
                                              &staged->excluded_bytes);
    if (status == FK_OK && !eval->state.table && eval->state.kernel->uses_table)
        status = fk__forcelaw_table(context, eval->state.kernel, &eval->state.law, &staged->table,
                                    &staged->table_bytes);
    if (status != FK_OK)
        free_staged(staged);
    return status;
}

/* The sizes against the device before asking: many drivers allocate lazily and would only fail
 * at the first launch. */
static fk_status check_device_memory(fk_eval *eval, size_t n, size_t body_bytes,
                                     size_t result_bytes, size_t partial_bytes)
{
    const size_t total =
        body_bytes * (eval->state.kernel->uses_aux ? 2 : 1) + result_bytes + partial_bytes;
    const fk_device_info *device = &eval->state.context->info;
    size_t largest = partial_bytes > result_bytes ? partial_bytes : result_bytes;
    if (largest < body_bytes)
        largest = body_bytes;
    if (total <= device->global_memory_bytes && largest <= device->max_allocation_bytes)
        return FK_OK;
    return fk__fail(eval->state.context, FK_ERR_DEVICE_MEMORY,
                    "N = %zu needs %zu bytes of device memory (largest buffer %zu); %s has "
                    "%llu (largest allocation %llu)",
                    n, total, largest, device->name,
                    (unsigned long long)device->global_memory_bytes,
                    (unsigned long long)device->max_allocation_bytes);
}

/* The device buffers of the staged particles (the pinned host copy of body included), the
 * output stage and the poisoned results. On failure the caller releases the buffers. */
static fk_status upload_staged(fk_eval *eval, const staged_particles *staged, size_t n,
                               size_t body_bytes, size_t result_bytes, size_t partial_bytes)
{
    fk_context *context = eval->state.context;
    fk__eval_state *state = &eval->state;
    const cl_mem_flags read_only = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
    fk_status status = fk__eval_create_buffer(state, &state->body, read_only, body_bytes,
                                              staged->body, "particles");
    /* Kept, in pinned memory: fk_eval_update_positions rewrites only its positions there and the
     * driver copies them by DMA. */
    fk__eval_release_host_body(eval);
    fk__eval_release_positions(eval); /* sized for the previous particles */
    if (status == FK_OK) {
        void *pinned = NULL;
        status =
            fk__pinned_create(context, body_bytes, &eval->body_pinned, &pinned, "pinned particles");
        if (status == FK_OK) {
            memcpy(pinned, staged->body, body_bytes);
            state->host_body = pinned;
            state->host_body_current = 1;
        }
    }
    if (status == FK_OK)
        status = fk__eval_create_output(eval, n);
    /* Unused by ga (aux) and the gravity kernels (table): small placeholders keep the argument
     * list fixed. */
    if (status == FK_OK && staged->aux)
        status = fk__eval_create_buffer(state, &state->body_aux, read_only, staged->aux_bytes,
                                        staged->aux, "aux");
    else if (status == FK_OK)
        status = fk__eval_create_buffer(state, &state->body_aux, CL_MEM_READ_ONLY, 16, NULL, "aux");
    if (status == FK_OK && staged->table)
        status = fk__eval_create_buffer(state, &state->table, read_only, staged->table_bytes,
                                        staged->table, "pair table");
    else if (status == FK_OK && !state->table)
        status = fk__eval_create_buffer(state, &state->table, CL_MEM_READ_ONLY, 16, NULL, "table");
    if (status == FK_OK)
        status =
            fk__eval_create_buffer(state, &state->physics, read_only, sizeof state->physics_values,
                                   state->physics_values, "physics");
    if (status == FK_OK && staged->excluded)
        status = fk__eval_create_buffer(state, &eval->excluded, read_only, staged->excluded_bytes,
                                        staged->excluded, "exclusion lists");
    if (status == FK_OK)
        status = fk__eval_create_buffer(state, &state->result, CL_MEM_READ_WRITE, result_bytes,
                                        NULL, "results");
    if (status == FK_OK && partial_bytes)
        status = fk__eval_create_buffer(state, &state->partial, CL_MEM_READ_WRITE, partial_bytes,
                                        NULL, "partial sums");
    else if (status == FK_OK)
        state->partial = state->result;
    /* Poison the results (all bits set: NaN in every float format) so an element the kernel fails
     * to write shows up as NaN instead of a stale or zero value. */
    if (status == FK_OK) {
        const cl_uchar poison = 0xff;
        cl_int err =
            fk__enqueue_fill(context, state->result, &poison, 1, result_bytes, 0, NULL, NULL);
        if (err == CL_SUCCESS && state->partial != state->result)
            err =
                fk__enqueue_fill(context, state->partial, &poison, 1, partial_bytes, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clFinish(context->queue);
        if (err != CL_SUCCESS)
            status = fk__cl_fail(context, "clEnqueueFillBuffer", err);
    }
    return status;
}

fk_status fk_eval_set_particles(fk_eval *eval, const fk_particles *particles)
{
    if (!eval || !particles)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = fk__eval_begin(eval, NULL);
    if (status == FK_OK)
        status = check_particles(eval, particles);
    if (status != FK_OK)
        return status;
    const size_t n = particles->count;
    const size_t stride = fk__eval_body_floats(&eval->state);
    staged_particles staged;
    status = stage_particles(eval, particles, stride, &staged);
    if (status != FK_OK)
        return status;

    /* The all-pairs split of the j-range: whole work-groups of j-particles per range. */
    const int splits = choose_splits(eval, n);
    const int group = eval->state.variant.work_group_size;
    size_t chunk = (n + (size_t)splits - 1) / (size_t)splits;
    chunk = (chunk + (size_t)group - 1) / (size_t)group * (size_t)group;
    const int effective_splits = (int)((n + chunk - 1) / chunk);
    const size_t result_bytes = n * eval->state.components * 8;
    const size_t partial_bytes = effective_splits > 1 ? result_bytes * (size_t)effective_splits : 0;
    const size_t body_bytes = n * stride * sizeof(float);
    status = check_device_memory(eval, n, body_bytes, result_bytes, partial_bytes);
    if (status != FK_OK) {
        free_staged(&staged);
        return status;
    }

    if (eval->state.partial == eval->state.result)
        eval->state.partial = NULL;
    fk__eval_release_buffers(eval);
    eval->computed = 0;
    eval->state.count = 0;
    status = upload_staged(eval, &staged, n, body_bytes, result_bytes, partial_bytes);
    free_staged(&staged);
    if (status != FK_OK) {
        if (eval->state.partial == eval->state.result)
            eval->state.partial = NULL;
        fk__eval_release_buffers(eval);
        return status;
    }
    eval->state.count = n;
    eval->state.j_chunk = (int)chunk;
    eval->state.variant.j_splits = effective_splits;
    status = eval->loop->prepare(&eval->state, eval->loop_state);
    if (status == FK_OK)
        status = fk__eval_choose_accum_parameters(eval);
    if (status != FK_OK)
        eval->state.count = 0;
    return status;
}

/* The pinned positions array (fk_eval_positions_buffer). Devices with fp64 convert the doubles
 * themselves (cl/positions.cl) unless the host must look at the coordinates: gravity without
 * softening checks for coincident bodies, and gaj's velocities come separately. */
static int converts_on_device(const fk_eval *eval)
{
    return eval->state.context->info.fp64 && !eval->state.kernel->needs_velocity &&
           (eval->state.kernel->uses_table || eval->state.config.eps > 0);
}

void fk__eval_release_positions(fk_eval *eval)
{
    if (eval->state.verdict_read) { /* never left pending past an update; released all the same */
        clWaitForEvents(1, &eval->state.verdict_read);
        clReleaseEvent(eval->state.verdict_read);
        eval->state.verdict_read = NULL;
    }
    void *verdict = eval->state.positions_verdict;
    fk__pinned_release(eval->state.context, &eval->verdict_pinned, &verdict);
    eval->state.positions_verdict = NULL;
    void *host = eval->state.positions_host;
    fk__pinned_release(eval->state.context, &eval->positions_pinned, &host);
    eval->state.positions_host = NULL;
    cl_mem *buffers[] = {&eval->positions_device, &eval->body_next, &eval->positions_flag};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; ++i) {
        if (*buffers[i])
            clReleaseMemObject(*buffers[i]);
        *buffers[i] = NULL;
    }
}

/* The device-side conversion (cl/positions.cl), built once per evaluation, and its buffers for
 * the current count: the second particle buffer and the refusal flag. */
static fk_status ensure_converter(fk_eval *eval)
{
    fk_context *context = eval->state.context;
    if (!eval->convert_program) {
        fk_program_result built;
        fk_status status = fk__program_build_file(
            context, "positions.cl", fk__eval_ds(&eval->state) ? "-D FK_DS_POSITIONS=1" : NULL,
            &built);
        if (status != FK_OK)
            return status;
        eval->convert_program = built.program;
    }
    const char *names[2] = {"fk_positions_from_double", "fk_positions_from_float4"};
    for (int k = 0; k < 2; ++k) {
        if (eval->convert_kernels[k] || (k == 0 && !context->info.fp64))
            continue;
        cl_int err = CL_SUCCESS;
        eval->convert_kernels[k] = clCreateKernel(eval->convert_program, names[k], &err);
        if (err != CL_SUCCESS) {
            eval->convert_kernels[k] = NULL;
            return fk__cl_fail(context, "clCreateKernel (positions)", err);
        }
    }
    fk_status status = FK_OK;
    if (!eval->body_next)
        status = fk__eval_create_buffer(&eval->state, &eval->body_next, CL_MEM_READ_WRITE,
                                        fk__eval_body_floats(&eval->state) * eval->state.count *
                                            sizeof(float),
                                        NULL, "particles (next)");
    if (status == FK_OK && !eval->positions_flag)
        status = fk__eval_create_buffer(&eval->state, &eval->positions_flag, CL_MEM_READ_WRITE,
                                        sizeof(cl_int), NULL, "positions flag");
    if (status == FK_OK && !eval->verdict_pinned) {
        void *host = NULL;
        status = fk__pinned_create(eval->state.context, sizeof(cl_int), &eval->verdict_pinned,
                                   &host, "positions verdict");
        eval->state.positions_verdict = host;
    }
    return status;
}

static fk_status create_positions(fk_eval *eval)
{
    const size_t n = eval->state.count;
    void *host = NULL;
    fk_status status = fk__pinned_create(eval->state.context, 3 * n * sizeof(double),
                                         &eval->positions_pinned, &host, "pinned positions");
    if (status != FK_OK)
        return status;
    eval->state.positions_host = host;
    const size_t stride = fk__eval_body_floats(&eval->state);
    for (size_t i = 0; i < n; ++i) /* what the device holds now (hi + lo: exact in double) */
        for (size_t k = 0; k < 3; ++k)
            eval->state.positions_host[3 * i + k] =
                stride == 8 ? (double)eval->state.host_body[stride * i + k] +
                                  (double)eval->state.host_body[stride * i + 4 + k]
                            : eval->state.host_body[stride * i + k];
    if (!converts_on_device(eval))
        return FK_OK;
    status = ensure_converter(eval);
    if (status == FK_OK)
        status = fk__eval_create_buffer(&eval->state, &eval->positions_device, CL_MEM_READ_ONLY,
                                        3 * n * sizeof(double), NULL, "positions (double)");
    return status;
}

fk_status fk_eval_positions_buffer(fk_eval *eval, double **positions)
{
    if (!eval || !positions)
        return FK_ERR_INVALID_ARGUMENT;
    *positions = NULL;
    fk_status status = fk__eval_begin(eval, "positions_buffer");
    if (status != FK_OK)
        return status;
    if (!eval->state.positions_host) {
        status = create_positions(eval);
        if (status != FK_OK) {
            fk__eval_release_positions(eval);
            return status;
        }
    }
    *positions = eval->state.positions_host;
    return FK_OK;
}

/* An update converted on the device from `source` (3N doubles: kernel 0; N float4: kernel 1):
 * the device writes body_next, which becomes the particles unless the refusal flag names a
 * particle. The flag is read without blocking and the loop prepares on body_next at once; a
 * prepare that waits for the device takes the verdict after its own wait (one round trip where
 * there were two: the cell grid's displacement check), else the update waits for it after. A
 * refusal swaps the previous particles back, as they were. */
static fk_status update_from_device_buffer(fk_eval *eval, cl_mem source, int kernel_index)
{
    fk_context *context = eval->state.context;
    const cl_uint n = (cl_uint)eval->state.count;
    cl_kernel kernel = eval->convert_kernels[kernel_index];
    eval->positions_reset = (cl_int)n;
    cl_int err = clEnqueueWriteBuffer(context->queue, eval->positions_flag, CL_FALSE, 0,
                                      sizeof(cl_int), &eval->positions_reset, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        clFinish(context->queue);
        eval->state.count = 0;
        return fk__cl_fail(context, "clEnqueueWriteBuffer (positions flag)", err);
    }
    fk_status status = FK__SET_ARGS(context, kernel, "positions", 0, FK__ARG(n), FK__ARG(source),
                                    FK__ARG(eval->state.body), FK__ARG(eval->body_next),
                                    FK__ARG(eval->positions_flag));
    if (status != FK_OK) {
        clFinish(context->queue);
        eval->state.count = 0;
        return status;
    }
    const size_t group = 64, global = ((size_t)n + group - 1) / group * group;
    const char *call = "clEnqueueNDRangeKernel (positions)";
    err = clEnqueueNDRangeKernel(context->queue, kernel, 1, NULL, &global, &group, 0, NULL, NULL);
    if (err == CL_SUCCESS) {
        call = "clEnqueueReadBuffer (positions flag)";
        *eval->state.positions_verdict = (cl_int)n;
        err =
            clEnqueueReadBuffer(context->queue, eval->positions_flag, CL_FALSE, 0, sizeof(cl_int),
                                eval->state.positions_verdict, 0, NULL, &eval->state.verdict_read);
    }
    if (err != CL_SUCCESS) {
        clFinish(context->queue);
        eval->state.verdict_read = NULL;
        eval->state.count = 0;
        return fk__cl_fail(context, call, err);
    }
    eval->state.verdict_from_host = eval->state.positions_host && source == eval->positions_device;
    eval->state.positions_refused = 0;
    const int was_host_body_current = eval->state.host_body_current, was_computed = eval->computed;
    const cl_mem previous = eval->state.body; /* the loops take eval->state.body at every enqueue */
    eval->state.body = eval->body_next;
    eval->body_next = previous;
    eval->state.host_body_current = 0; /* the host did not see these positions */
    eval->computed = 0;
    status = eval->loop->prepare(&eval->state, eval->loop_state);
    if (!eval->state.positions_refused) {
        /* the loop took no verdict (it did not wait for the device, or failed on its own) */
        const fk_status verdict = fk__eval_positions_verdict(&eval->state);
        if (status == FK_OK)
            status = verdict;
    }
    if (eval->state.positions_refused) {
        /* The prepare took the verdict before acting, or it had nothing to act on (the
         * all-pairs and symmetric loops size buffers only): the previous particles stand as
         * they were. */
        eval->body_next = eval->state.body;
        eval->state.body = previous;
        eval->state.host_body_current = was_host_body_current;
        eval->computed = was_computed;
        eval->state.positions_refused = 0; /* read by the prepare only, within this update */
        return status;
    }
    if (status == FK_OK && !fk__eval_keeps_scale(eval))
        status = fk__eval_choose_accum_parameters(eval);
    if (status != FK_OK)
        eval->state.count = 0;
    return status;
}

/* update_positions from the pinned array on a device that converts: the doubles go by DMA. */
static fk_status update_on_device(fk_eval *eval)
{
    fk_context *context = eval->state.context;
    cl_int err = clEnqueueWriteBuffer(context->queue, eval->positions_device, CL_FALSE, 0,
                                      3 * eval->state.count * sizeof(double),
                                      eval->state.positions_host, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        clFinish(context->queue);
        eval->state.count = 0;
        return fk__cl_fail(context, "clEnqueueWriteBuffer (positions)", err);
    }
    return update_from_device_buffer(eval, eval->positions_device, 0);
}

fk_status fk_eval_update_positions_cl(fk_eval *eval, cl_mem positions, int layout)
{
    if (!eval || !positions)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = eval->state.context;
    fk_status status = fk__eval_begin(eval, "update_positions");
    if (status != FK_OK)
        return status;
    if (layout != FK_CL_POSITIONS_DOUBLE3 && layout != FK_CL_POSITIONS_FLOAT4)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "layout %d: FK_CL_POSITIONS_DOUBLE3 (0) or FK_CL_POSITIONS_FLOAT4 (1)",
                        layout);
    if (eval->state.kernel->needs_velocity ||
        (!eval->state.kernel->uses_table && eval->state.config.eps == 0))
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "positions from an OpenCL buffer: not for %s%s (the host must see the "
                        "coordinates)",
                        eval->state.kernel->info.name,
                        eval->state.kernel->needs_velocity ? "" : " without softening");
    if (layout == FK_CL_POSITIONS_DOUBLE3 && !context->info.fp64)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "double positions need fp64, which %s lacks: use FK_CL_POSITIONS_FLOAT4",
                        context->info.name);
    cl_context owner = NULL;
    size_t bytes = 0;
    if (clGetMemObjectInfo(positions, CL_MEM_CONTEXT, sizeof owner, &owner, NULL) != CL_SUCCESS ||
        clGetMemObjectInfo(positions, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) != CL_SUCCESS)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "positions is not a valid cl_mem");
    if (owner != context->cl)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "positions belongs to another OpenCL context (fk_context_create_cl)");
    const size_t needed =
        eval->state.count *
        (layout == FK_CL_POSITIONS_DOUBLE3 ? 3 * sizeof(double) : 4 * sizeof(float));
    if (bytes < needed)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "positions holds %zu bytes; %zu particles need %zu", bytes,
                        eval->state.count, needed);
    status = ensure_converter(eval);
    if (status != FK_OK)
        return status;
    return update_from_device_buffer(eval, positions, layout == FK_CL_POSITIONS_DOUBLE3 ? 0 : 1);
}

/* The time-stepping fast path: the particles stay, only positions (and gaj's velocities) change,
 * so the buffers, types, pair table and exclusions are kept and the new coordinates are written
 * into the existing buffers. What is not repeated, and why that is safe:
 * - check_particles' count and mass checks: count and masses are those already checked;
 * - the molecular kernels' O(N log N) search for coincident particles (fk__forcelaw_particles):
 *   a coincident pair is masked nowhere, so rsqrt(0) makes its forces NaN; float and the other
 *   plain accumulators return that NaN, and the data-scaled ones (fixed64, narumi,
 *   nitadori_large) fail their bound pre-pass with FK_ERR_OVERFLOW; neither passes silently.
 * Gravity with eps = 0 keeps its check (the self-term floor would give a huge finite force). */
fk_status fk_eval_update_positions(fk_eval *eval, const double *position, const double *velocity)
{
    if (!eval || !position)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = eval->state.context;
    fk_status begun = fk__eval_begin(eval, "update_positions");
    if (begun != FK_OK)
        return begun;
    if (position == eval->state.positions_host && eval->positions_device &&
        eval->state.count > eval->state.host_check_count)
        return update_on_device(eval); /* else as from the caller's array: see internal.h */
    const size_t n = eval->state.count;
    if (eval->body_written) { /* the last update's copy must be done before the rewrite */
        const cl_int err = clWaitForEvents(1, &eval->body_written);
        clReleaseEvent(eval->body_written);
        eval->body_written = NULL;
        if (err != CL_SUCCESS) {
            eval->state.count = 0;
            return fk__cl_fail(context, "clEnqueueWriteBuffer (particles)", err);
        }
    }
    const int gaj = eval->state.kernel->needs_velocity;
    if (gaj && !velocity)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "gaj needs velocities");
    /* One branch-free pass (the compiler vectorizes it; at N = 1M the checked loop with an early
     * return was milliseconds): a coordinate that is NaN, infinite or beyond float's range
     * converts to NaN or infinity and fails the comparison. Only then a second pass finds it. */
    float *body = eval->state.host_body;
    const size_t stride = fk__eval_body_floats(&eval->state);
    eval->state.host_body_current = 0; /* until the device has what is written here */
    int bad = 0;
    if (stride == 4) {
        for (size_t i = 0; i < n; ++i) {
            const float x = (float)position[3 * i], y = (float)position[3 * i + 1],
                        z = (float)position[3 * i + 2];
            body[4 * i] = x;
            body[4 * i + 1] = y;
            body[4 * i + 2] = z;
            bad |= !(fabsf(x) <= FLT_MAX) | !(fabsf(y) <= FLT_MAX) | !(fabsf(z) <= FLT_MAX);
        }
    } else { /* double-single: the low parts into the second record (masses stay) */
        for (size_t i = 0; i < n; ++i)
            for (size_t k = 0; k < 3; ++k) {
                const double v = position[3 * i + k];
                const float hi = (float)v;
                body[8 * i + k] = hi;
                body[8 * i + 4 + k] = (float)(v - (double)hi);
                bad |= !(fabsf(hi) <= FLT_MAX);
            }
    }
    for (size_t v = 0; bad && v < 3 * n; ++v)
        if (!(fabsf((float)position[v]) <= FLT_MAX))
            return fk__fail(context, FK_ERR_INVALID_INPUT,
                            "particle %zu: coordinate %d is %g (not a finite float)", v / 3,
                            (int)(v % 3), position[v]);
    float *aux = NULL;
    fk_status status = gaj ? fk__velocity_records(context, velocity, n, stride, &aux) : FK_OK;
    if (status == FK_OK)
        status = check_coincident(eval, body, n);
    if (status != FK_OK) {
        free(aux);
        return status;
    }
    /* The coordinates from pinned memory without blocking (the next update waits for the copy
     * before it rewrites them, and the queue runs it before the next pass); gaj's velocities from
     * a temporary array, blocking. */
    cl_int err =
        clEnqueueWriteBuffer(context->queue, eval->state.body, CL_FALSE, 0,
                             stride * n * sizeof *body, body, 0, NULL, &eval->body_written);
    if (err != CL_SUCCESS)
        eval->body_written = NULL;
    if (err == CL_SUCCESS && aux)
        err = clEnqueueWriteBuffer(context->queue, eval->state.body_aux, CL_TRUE, 0,
                                   stride * n * sizeof *aux, aux, 0, NULL, NULL);
    free(aux);
    eval->computed = 0;
    if (err != CL_SUCCESS) {
        eval->state.count = 0; /* the device holds neither the old nor the new particles for sure */
        return fk__cl_fail(context, "clEnqueueWriteBuffer (particles)", err);
    }
    eval->state.host_body_current = 1;
    status = eval->loop->prepare(&eval->state, eval->loop_state);
    /* The scale depends on the data: every update, unless it is kept (FK_SCALE_KEEP, and
     * FK_SCALE_AUTO's fixed64: fk_eval_wait rescales when it no longer holds). */
    if (status == FK_OK && !fk__eval_keeps_scale(eval))
        status = fk__eval_choose_accum_parameters(eval);
    if (status != FK_OK)
        eval->state.count = 0;
    return status;
}

/* Both invalidate the particles: types and exclusion indices are checked, and exclusions built
 * into body_aux, by the next fk_eval_set_particles. */
fk_status fk_eval_set_pair_table(fk_eval *eval, const fk_pair_table *table)
{
    if (!eval || !table)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = eval->state.context;
    fk_status begun = fk__eval_begin(eval, NULL);
    if (begun != FK_OK)
        return begun;
    char message[512] = "";
    fk__pair_params params;
    fk_status status =
        fk__pair_params_copy(eval->state.kernel, table, &params, message, sizeof message);
    if (status != FK_OK)
        return fk__fail(context, status, "%s", message);
    fk__pair_params_free(&eval->state.law.pairs);
    eval->state.law.pairs = params;
    void *values = NULL;
    size_t bytes = 0;
    status = fk__forcelaw_table(context, eval->state.kernel, &eval->state.law, &values, &bytes);
    cl_mem buffer = NULL;
    if (status == FK_OK)
        status =
            fk__eval_create_buffer(&eval->state, &buffer, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                   bytes, values, "pair table");
    free(values);
    if (status != FK_OK)
        return status;
    if (eval->state.table)
        clReleaseMemObject(eval->state.table);
    eval->state.table = buffer;
    eval->state.count = 0;
    eval->computed = 0;
    return FK_OK;
}

void fk__eval_release_host_body(fk_eval *eval)
{
    if (eval->body_written) {
        clWaitForEvents(1, &eval->body_written);
        clReleaseEvent(eval->body_written);
        eval->body_written = NULL;
    }
    void *host = eval->state.host_body;
    fk__pinned_release(eval->state.context, &eval->body_pinned, &host);
    eval->state.host_body = NULL;
}

void fk__eval_set_host_check_count(fk_eval *eval, size_t count)
{
    eval->state.host_check_count = count;
}
