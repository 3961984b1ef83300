/* A force evaluation: variant choice, program, buffers, launch and read-back. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accum.h"
#include "eval.h"
#include "internal.h"
#include "loops/loop.h"
#include "tune.h"

/* Precision (at the end of this file): the bound pre-pass and reproducible mode. */
static fk_status create_subtraction(fk_eval *eval, const fk_program_request *request);
static fk_status choose_accum_parameters(fk_eval *eval);
static const char *reproducible_options(fk_eval *eval);

static int valid_unroll(int value)
{
    return value == 1 || value == 2 || value == 4 || value == 8;
}

/* Built-in defaults, the last fallback when no tuning database has an entry for the device:
 * measured on POCL (x86, AVX-512) and an NVIDIA H100/H200; see bench/results/. */
static void default_variant(const fk_device_info *device, fk_variant *variant)
{
    if (device->type == FK_DEVICE_GPU) {
        variant->unroll_i = 4;
        variant->unroll_j = 8;
        variant->work_group_size = 256;
    } else {
        variant->unroll_i = 4;
        variant->unroll_j = 1;
        variant->work_group_size = 64;
    }
    variant->local_tiling = 1;
}

void fk__builtin_variant(const fk_device_info *device, fk_variant *variant)
{
    default_variant(device, variant);
}

/* CPU lanes (cl/pairwise_lanes.cl): work-group size and j-unrolling measured on POCL 3.1 on two
 * EPYC cores (bench/README.md, "CPU lanes, measured"); the width is the device's (below). */
enum { LANES_WORK_GROUP = 8, LANES_UNROLL_J = 1 };

/* The widest lane count the device holds in one register: its native float vector width (8 with
 * AVX2, 16 with AVX-512). A wider vector is split by the compiler, and clang warns on every
 * function that takes or returns one ("AVX vector return of type 'float16' without 'avx512f'
 * enabled changes the ABI"), which POCL prints to stderr. 0: narrower than 8, no lanes. */
static int device_lane_width(const fk_context *context)
{
    cl_uint native = 0;
    if (clGetDeviceInfo(context->device, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof native,
                        &native, NULL) != CL_SUCCESS)
        native = 0;
    return native >= 16 ? 16 : native >= 8 ? 8 : 0;
}

/* The lane file has the pair loop and the split reduction only: no exclusion subtraction or typed
 * table handling (molecular kernels); the registry says whether the force law and accumulator have
 * a lane form (the bound pre-pass of fixed64 and narumi has one too). */
static int lanes_possible(fk_context *context, const fk_kernel_desc *kernel,
                          const fk_accum_desc *accum)
{
    return !kernel->uses_table && fk__registry_has_lanes(kernel, accum, context->info.fp64);
}

/* Sets variant->lanes (and the lane variant's shape) from config->lanes. Automatic lanes (CPUs
 * only) take the device's width and replace the built-in default, the shipped tuning entries and
 * user entries written before the tuner searched lanes (lanes -1 there: measured on the scalar
 * template only; such an entry made ga 3.4x slower than the default on an AVX2 EPYC); a user entry
 * from the lane-aware tuner is followed, lanes or not. Explicit unrolling or tiling or another pair
 * loop keep the scalar template. *tuned is cleared when lanes replace its entry. */
static fk_status choose_lanes(fk_context *context, const fk_eval_config *config,
                              const fk_kernel_desc *kernel, const fk_accum_desc *accum,
                              const fk_tuning_entry **tuned, fk_variant *variant)
{
    const int asked = config->lanes;
    variant->lanes = 0;
    if (asked != -1 && asked != 0 && asked != 8 && asked != 16)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "lanes %d: expected -1 (off), 0 (automatic), 8 or 16", asked);
    if (asked < 0)
        return FK_OK;
    const int is_cpu = context->info.type == FK_DEVICE_CPU;
    const int width = device_lane_width(context);
    int lanes = asked;
    const fk_tuning_entry *entry = *tuned;
    if (asked == 0) {
        /* GPUs already run one work-item per lane: never there. */
        if (!is_cpu || width == 0 || config->unroll_i || config->unroll_j || config->local_tiling ||
            config->algorithm != FK_ALGORITHM_ALL_PAIRS || config->reproducible ||
            !lanes_possible(context, kernel, accum))
            return FK_OK;
        if (entry && entry->lanes == 0 && entry->origin == FK_VARIANT_USER_DB)
            return FK_OK; /* the tuner measured lanes here and the scalar template won */
        lanes = entry && entry->lanes > 0 && entry->lanes <= width ? entry->lanes : width;
        if (!(entry && entry->lanes > 0 && entry->lanes <= width))
            entry = NULL;
    } else {
        if (config->algorithm != FK_ALGORITHM_ALL_PAIRS)
            return fk__fail(context, FK_ERR_UNSUPPORTED,
                            "lanes are a form of the all-pairs loop, not of algorithm %s",
                            fk_algorithm_name((fk_algorithm)config->algorithm));
        if (config->unroll_i > 1)
            return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                            "lanes replace the i-unrolling: unroll %dx%d with lanes %d (use 1x%d)",
                            config->unroll_i, config->unroll_j, asked, config->unroll_j);
        if (config->local_tiling > 0)
            return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                            "lanes read the j-particles through the caches: no local tiling");
        if (!lanes_possible(context, kernel, accum))
            return fk__fail(context, FK_ERR_UNSUPPORTED,
                            "kernel '%s' with accumulator '%s' has no lane form "
                            "(cl/pairwise_lanes.cl)%s; lanes -1 or 0 run the scalar template",
                            kernel->info.name, accum->info.name,
                            accum->lanes == FK_LANES_NEED_FP64 && !context->info.fp64
                                ? " on a device without double precision"
                                : "");
        if (is_cpu && asked > width)
            return fk__fail(context, FK_ERR_UNSUPPORTED,
                            "lanes %d: %s holds %d floats in a vector register "
                            "(CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT); wider lanes would be split by "
                            "the compiler, with ABI warnings on every build; use lanes %s",
                            asked, context->info.name, width ? width : 1, width ? "8" : "-1");
        entry = NULL;
    }
    variant->lanes = lanes;
    variant->unroll_i = 1;
    variant->unroll_j = config->unroll_j ? config->unroll_j
                        : entry          ? entry->unroll_j
                                         : LANES_UNROLL_J;
    variant->work_group_size = config->work_group_size ? config->work_group_size
                               : entry                 ? entry->work_group_size
                                                       : LANES_WORK_GROUP;
    if ((size_t)variant->work_group_size > context->info.max_work_group_size)
        variant->work_group_size = (int)context->info.max_work_group_size;
    variant->local_tiling = 0; /* j-particles come through the caches */
    if (entry) {
        variant->source = entry->origin;
        variant->tuned_count = entry->n;
    } else {
        variant->source = asked || config->unroll_j ? FK_VARIANT_EXPLICIT : FK_VARIANT_DEFAULT;
        variant->tuned_count = 0;
    }
    *tuned = entry;
    return FK_OK;
}

int fk__automatic_lanes(fk_context *context, const char *kernel_name, const char *accum_name,
                        fk_variant *variant)
{
    const fk_kernel_desc *kernel = fk__kernel_desc(kernel_name);
    const fk_accum_desc *accum = fk__accum_desc(accum_name);
    const int width = device_lane_width(context);
    if (!kernel || !accum || context->info.type != FK_DEVICE_CPU || width == 0 ||
        !lanes_possible(context, kernel, accum))
        return 0;
    variant->lanes = width;
    variant->unroll_i = 1;
    variant->unroll_j = LANES_UNROLL_J;
    variant->work_group_size = LANES_WORK_GROUP;
    if ((size_t)variant->work_group_size > context->info.max_work_group_size)
        variant->work_group_size = (int)context->info.max_work_group_size;
    variant->local_tiling = 0;
    return width;
}

/* i-particles per work-group: the unrolled ones, or the lanes. */
static size_t i_per_group(const fk_variant *variant)
{
    return (size_t)variant->work_group_size * (size_t)variant->unroll_i *
           (size_t)(variant->lanes > 0 ? variant->lanes : 1);
}

static void release_buffers(fk_eval *eval)
{
    /* Not the pair table: it is uploaded once, by fk_eval_set_pair_table or the first particles. */
    cl_mem *buffers[] = {&eval->body,    &eval->body_aux, &eval->physics,
                         &eval->partial, &eval->result,   &eval->excluded};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; ++i) {
        if (*buffers[i] && (buffers[i] != &eval->partial || eval->partial != eval->result))
            clReleaseMemObject(*buffers[i]);
        *buffers[i] = NULL;
    }
}

void fk_eval_destroy(fk_eval *eval)
{
    if (!eval)
        return;
    if (eval->partial == eval->result)
        eval->partial = NULL;
    release_buffers(eval);
    if (eval->table)
        clReleaseMemObject(eval->table);
    free(eval->host_body);
    fk__forcelaw_state_free(&eval->law);
    if (eval->loop)
        eval->loop->destroy(eval->loop_state);
    if (eval->subtract)
        clReleaseKernel(eval->subtract);
    if (eval->subtract_program)
        clReleaseProgram(eval->subtract_program);
    free(eval);
}

/* The checks every entry point that names a kernel and an accumulator needs: both exist, and the
 * device can run the accumulator. */
fk_status fk__find_kernel_and_accum(fk_context *context, const char *kernel_name,
                                    const char *accum_name, const fk_kernel_desc **kernel,
                                    const fk_accum_desc **accum)
{
    if (!kernel_name)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "no kernel named");
    *kernel = fk__kernel_desc(kernel_name);
    if (!*kernel)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "unknown kernel '%s'", kernel_name);
    *accum = fk__accum_desc(accum_name);
    if (!*accum)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "unknown accumulator '%s'", accum_name);
    if ((*accum)->info.needs_fp64 && !context->info.fp64)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "accumulator '%s' needs double precision (cl_khr_fp64), which %s lacks; "
                        "use float or a compensated accumulator",
                        (*accum)->info.name, context->info.name);
    return FK_OK;
}

/* fk_eval_create with the exclusion slots to build when config->max_exclusions is automatic. */
static fk_status eval_create(fk_context *context, const fk_eval_config *config,
                             unsigned exclusion_slots, fk_eval **out)
{
    if (!out)
        return FK_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!context || !context->device)
        return FK_ERR_INVALID_ARGUMENT;
    fk__clear_error(context);
    if (!config)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "no kernel named");
    const char *accum_name = config->accum          ? config->accum
                             : config->reproducible ? "fixed64"
                                                    : "float";
    const fk_kernel_desc *kernel = NULL;
    const fk_accum_desc *accum = NULL;
    fk_status found =
        fk__find_kernel_and_accum(context, config->kernel, accum_name, &kernel, &accum);
    if (found != FK_OK)
        return found;
    if (config->reproducible && strcmp(accum_name, "fixed64") != 0 &&
        strcmp(accum_name, "narumi") != 0)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "reproducible mode sums in fixed point (fixed64 or narumi: exact and "
                        "order-independent); accumulator '%s' is not",
                        accum_name);
    if (!isfinite(config->eps) || config->eps < 0)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "softening eps must be finite and >= 0");

    char variant_reason[256];
    if (!fk__variant_check(config->unroll_i, config->unroll_j, config->work_group_size,
                           config->local_tiling, variant_reason, sizeof variant_reason))
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "%s", variant_reason);

    fk_variant variant = {0};
    default_variant(&context->info, &variant);
    variant.source = FK_VARIANT_DEFAULT;
    /* Automatic unrolling takes the tuning database's entry (user, then shipped) for this device,
     * kernel, accumulator and N bucket; explicit work-group size, tiling and split still win. */
    const fk_tuning_entry *tuned =
        config->unroll_i || config->unroll_j
            ? NULL
            : fk__tuning_lookup(context->tuning, kernel->info.name, accum->info.name,
                                config->expected_count);
    if (tuned) {
        variant.unroll_i = tuned->unroll_i;
        variant.unroll_j = tuned->unroll_j;
        variant.work_group_size = tuned->work_group_size;
        variant.local_tiling = tuned->local_tiling;
        variant.source = tuned->origin;
        variant.tuned_count = tuned->n;
    }
    if (config->unroll_i || config->unroll_j) {
        if (!valid_unroll(config->unroll_i) || !valid_unroll(config->unroll_j))
            return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                            "unroll %dx%d: each factor must be 1, 2, 4 or 8", config->unroll_i,
                            config->unroll_j);
        variant.unroll_i = config->unroll_i;
        variant.unroll_j = config->unroll_j;
        variant.source = FK_VARIANT_EXPLICIT;
    }
    if (config->work_group_size) {
        if (config->work_group_size < 1 ||
            (size_t)config->work_group_size > context->info.max_work_group_size)
            return fk__fail(context, FK_ERR_UNSUPPORTED,
                            "work-group size %d is outside 1..%zu for %s", config->work_group_size,
                            context->info.max_work_group_size, context->info.name);
        variant.work_group_size = config->work_group_size;
    }
    if ((size_t)variant.work_group_size > context->info.max_work_group_size) {
        variant.work_group_size = (int)context->info.max_work_group_size;
        if (variant.work_group_size > variant.unroll_j) /* whole steps of the j-unrolling */
            variant.work_group_size -= variant.work_group_size % variant.unroll_j;
    }
    if (config->local_tiling)
        variant.local_tiling = config->local_tiling > 0;
    if (config->j_splits < 0)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "j_splits must be >= 0");
    if (config->algorithm < FK_ALGORITHM_ALL_PAIRS || config->algorithm > FK_ALGORITHM_CELLS)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "unknown algorithm %d",
                        config->algorithm);
    const fk_variant scalar_variant = variant; /* what runs if automatic lanes cannot build */
    const fk_tuning_entry *const scalar_tuned = tuned;
    fk_status lanes_status = choose_lanes(context, config, kernel, accum, &tuned, &variant);
    if (lanes_status != FK_OK)
        return lanes_status;
    if (!fk__variant_check(variant.unroll_i, variant.unroll_j, variant.work_group_size,
                           variant.local_tiling ? 1 : -1, variant_reason, sizeof variant_reason))
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "%s", variant_reason);

    fk_eval *eval = calloc(1, sizeof *eval);
    if (!eval)
        return FK_ERR_HOST_MEMORY;
    eval->context = context;
    eval->kernel = kernel;
    eval->accum = accum;
    eval->config = *config;
    eval->config.kernel = kernel->info.name; /* keep static strings, not the caller's */
    eval->config.accum = accum->info.name;
    eval->components = kernel->info.force_components + (config->potential ? 1u : 0u);
    eval->accum_scale = 1.0;
    eval->physics_values[0] = (float)(config->eps * config->eps);
    char law_options[256];
    fk_status law_status =
        fk__forcelaw_prepare(context, kernel, config, exclusion_slots, &eval->law,
                             eval->physics_values, law_options, sizeof law_options);
    if (law_status != FK_OK) {
        fk_eval_destroy(eval);
        return law_status;
    }
    const fk__loop *loop = fk__loop_for(config->algorithm);
    char loop_reason[512] = "";
    fk_status supported = loop->supports(context, kernel, accum, config, &eval->law.physics,
                                         loop_reason, sizeof loop_reason);
    if (supported != FK_OK) {
        fk_eval_destroy(eval);
        return fk__fail(context, supported, "%s", loop_reason);
    }
    if (tuned) {
        eval->tuned_j_splits = tuned->j_splits;
        eval->tuned_bucket = fk_tune_bucket_for(tuned->n);
    }

    fk_program_request request = {.force = kernel->info.name,
                                  .accum = accum->info.name,
                                  .unroll_i = variant.unroll_i,
                                  .unroll_j = variant.unroll_j,
                                  .work_group_size = variant.work_group_size,
                                  .local_tiling = variant.local_tiling,
                                  .potential = config->potential != 0,
                                  .refresh_cache = config->refresh_cache,
                                  .file = variant.lanes ? "pairwise_lanes.cl" : NULL,
                                  .lanes = variant.lanes,
                                  /* Not for fixed64 and narumi, whose lane sums are the scalar
                                   * template's bit for bit (same rsqrt), nor their pre-pass. */
                                  .lane_rsqrt_newton = variant.lanes && !config->reproducible &&
                                                       !accum->choose_parameters &&
                                                       fk__native_rsqrt_estimate_ok(context)};
    if (config->reproducible)
        request.extra_options = reproducible_options(eval);
    else
        eval->reproducible = -1;
    char options[512];
    const char *flush =
        !config->reproducible && accum->flush_denormals ? "-cl-denorms-are-zero" : "";
    if (law_options[0] || flush[0]) { /* the force law's switches (periodic, cutoff, exclusions) */
        snprintf(options, sizeof options, "%s %s %s", law_options, flush,
                 request.extra_options ? request.extra_options : "");
        request.extra_options = options;
    }
    /* Only the programs the loop needs: its create builds them (the all-pairs program is not
     * built for symmetric or cells). */
    eval->variant = variant;
    eval->variant.program_from_cache = 1;
    eval->variant.build_seconds = 0;
    eval->loop = loop;
    fk_status status = loop->create(eval, &request, &eval->loop_state);
    if (status == FK_ERR_BUILD && variant.lanes && config->lanes == 0) {
        /* Automatic lanes are an optimization that the registry promises for the shipped headers;
         * an edited kernel directory without the lane sections still runs the scalar template,
         * and a build error is then the template's own. */
        loop->destroy(eval->loop_state);
        eval->loop_state = NULL;
        variant = scalar_variant;
        eval->tuned_j_splits = scalar_tuned ? scalar_tuned->j_splits : 0;
        eval->tuned_bucket = scalar_tuned ? fk_tune_bucket_for(scalar_tuned->n) : 0;
        request.unroll_i = variant.unroll_i;
        request.unroll_j = variant.unroll_j;
        request.work_group_size = variant.work_group_size;
        request.local_tiling = variant.local_tiling;
        request.file = NULL;
        request.lanes = 0;
        request.lane_rsqrt_newton = 0;
        fk__clear_error(context);
        eval->variant = variant;
        eval->variant.program_from_cache = 1;
        eval->variant.build_seconds = 0;
        status = loop->create(eval, &request, &eval->loop_state);
    }
    eval->acc_param[0] = 1.0f;
    if (status == FK_OK)
        status = create_subtraction(eval, &request);
    if (status != FK_OK) {
        fk_eval_destroy(eval);
        return status;
    }
    *out = eval;
    return FK_OK;
}

fk_status fk_eval_create(fk_context *context, const fk_eval_config *config, fk_eval **out)
{
    /* No exclusions yet: an automatic on-the-fly build checks none (no cost per pair) until
     * fk_eval_set_exclusions says how many partners a particle has. */
    return eval_create(context, config, 0, out);
}

/* Exclusions on the fly with automatic slots: the programs are rebuilt for the partners the new
 * exclusions need. A new evaluation of the same configuration takes over; the pair table the caller
 * set moves with it. On failure the evaluation is left as it was. */
static fk_status rebuild_for_exclusion_slots(fk_eval *eval, unsigned slots)
{
    fk_eval *fresh = NULL;
    fk_status status = eval_create(eval->context, &eval->config, slots, &fresh);
    if (status != FK_OK)
        return status;
    const fk__pair_params pairs = eval->law.pairs;
    eval->law.pairs = fresh->law.pairs;
    fresh->law.pairs = pairs;
    cl_mem table = eval->table;
    eval->table = fresh->table;
    fresh->table = table;
    const fk_eval previous = *eval;
    *eval = *fresh;
    *fresh = previous;
    fk_eval_destroy(fresh);
    return FK_OK;
}

static int choose_splits(const fk_eval *eval, size_t count)
{
    const int group = eval->variant.work_group_size;
    const size_t i_block = i_per_group(&eval->variant);
    const size_t i_groups = (count + i_block - 1) / i_block;
    const size_t max_splits = (count + (size_t)group - 1) / (size_t)group; /* >= one tile each */
    size_t splits;
    if (eval->config.j_splits > 0) {
        splits = (size_t)eval->config.j_splits;
    } else if (eval->tuned_j_splits > 0 && fk_tune_bucket_for(count) == eval->tuned_bucket) {
        /* A tuned split is a count of work-groups for that bucket's N; elsewhere it could
         * multiply the partial-sum memory, so other N get the automatic split. */
        splits = (size_t)eval->tuned_j_splits;
    } else {
        /* Enough work-groups to fill the device: GPUs need several resident groups per compute
         * unit to hide latency; a CPU runs one group per core thread at a time. */
        const fk_device_info *device = &eval->context->info;
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
    fk_context *context = eval->context;
    const size_t n = particles->count;
    if (n == 0)
        return fk__fail(context, FK_ERR_INVALID_INPUT, "no particles (N = 0)");
    if (n > (size_t)(1u << 30))
        return fk__fail(context, FK_ERR_INVALID_INPUT, "N = %zu exceeds the limit of 2^30", n);
    if (!particles->position)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "no positions given");
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
    if (eval->config.eps > 0 || n < 2 || eval->kernel->uses_table)
        return FK_OK;
    size_t a = 0, b = 0;
    fk_status status = fk__find_coincident(body, n, NULL, &a, &b);
    if (status != FK_OK || a == SIZE_MAX)
        return status;
    return fk__fail(eval->context, FK_ERR_INVALID_INPUT,
                    "particles %zu and %zu are at the same position (%g, %g, %g) and the "
                    "softening eps is 0: their force is infinite; use --eps",
                    a, b, (double)body[4 * a], (double)body[4 * a + 1], (double)body[4 * a + 2]);
}

fk_status fk__eval_create_buffer(fk_eval *eval, cl_mem *buffer, cl_mem_flags flags, size_t bytes,
                                 void *host, const char *what)
{
    cl_int err = CL_SUCCESS;
    *buffer = clCreateBuffer(eval->context->cl, flags, bytes, host, &err);
    if (err != CL_SUCCESS)
        return fk__fail(eval->context, fk__cl_status(err),
                        "clCreateBuffer (%s, %zu bytes) failed: %s (%d)", what, bytes,
                        fk__cl_error_name(err), (int)err);
    return FK_OK;
}

fk_status fk_eval_set_particles(fk_eval *eval, const fk_particles *particles)
{
    if (!eval || !particles)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = eval->context;
    fk__clear_error(context);
    fk_status status = check_particles(eval, particles);
    if (status != FK_OK)
        return status;
    const size_t n = particles->count;

    float *body = malloc(n * 4 * sizeof *body);
    if (!body)
        return FK_ERR_HOST_MEMORY;
    for (size_t i = 0; i < n; ++i) {
        for (int k = 0; k < 3; ++k)
            body[4 * i + (size_t)k] = (float)particles->position[3 * i + (size_t)k];
        body[4 * i + 3] = particles->mass ? (float)particles->mass[i] : 1.0f;
    }
    status = check_coincident(eval, body, n);
    void *aux = NULL;
    size_t aux_bytes = 0;
    if (status == FK_OK) /* the force law's per-particle data: velocities, types, exclusions */
        status = fk__forcelaw_particles(context, eval->kernel, &eval->law, particles, body, &aux,
                                        &aux_bytes);
    int32_t *excluded = NULL; /* exclude afterwards: the partner lists */
    size_t excluded_bytes = 0;
    if (status == FK_OK && eval->subtract)
        status = fk__forcelaw_exclusion_lists(context, &eval->law, n, &excluded, &excluded_bytes);
    float *table = NULL;
    size_t table_bytes = 0;
    if (status == FK_OK && !eval->table && eval->kernel->uses_table)
        status = fk__forcelaw_table(context, eval->kernel, &eval->law, &table, &table_bytes);
    if (status != FK_OK) {
        free(body);
        free(aux);
        free(excluded);
        return status;
    }

    const int splits = choose_splits(eval, n);
    const int group = eval->variant.work_group_size;
    size_t chunk = (n + (size_t)splits - 1) / (size_t)splits;
    chunk = (chunk + (size_t)group - 1) / (size_t)group * (size_t)group;
    const int effective_splits = (int)((n + chunk - 1) / chunk);

    /* Check the sizes against the device before asking: many drivers allocate lazily and would
     * only fail at the first launch. */
    const size_t result_bytes = n * eval->components * 8;
    const size_t partial_bytes = effective_splits > 1 ? result_bytes * (size_t)effective_splits : 0;
    const size_t body_bytes = n * 4 * sizeof(float);
    const size_t total =
        body_bytes * (eval->kernel->uses_aux ? 2 : 1) + result_bytes + partial_bytes;
    const fk_device_info *device = &context->info;
    size_t largest = partial_bytes > result_bytes ? partial_bytes : result_bytes;
    if (largest < body_bytes)
        largest = body_bytes;
    if (total > device->global_memory_bytes || largest > device->max_allocation_bytes) {
        free(body);
        free(aux);
        free(table);
        free(excluded);
        return fk__fail(context, FK_ERR_DEVICE_MEMORY,
                        "N = %zu needs %zu bytes of device memory (largest buffer %zu); %s has "
                        "%llu (largest allocation %llu)",
                        n, total, largest, device->name,
                        (unsigned long long)device->global_memory_bytes,
                        (unsigned long long)device->max_allocation_bytes);
    }

    if (eval->partial == eval->result)
        eval->partial = NULL;
    release_buffers(eval);
    eval->computed = 0;
    eval->count = 0;
    const cl_mem_flags read_only = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
    status = fk__eval_create_buffer(eval, &eval->body, read_only, body_bytes, body, "particles");
    free(eval->host_body); /* kept: fk_eval_update_positions rewrites only its positions */
    eval->host_body = body;
    /* Unused by ga (aux) and the gravity kernels (table): small placeholders keep the argument
     * list fixed. */
    if (status == FK_OK && aux)
        status = fk__eval_create_buffer(eval, &eval->body_aux, read_only, aux_bytes, aux, "aux");
    else if (status == FK_OK)
        status = fk__eval_create_buffer(eval, &eval->body_aux, CL_MEM_READ_ONLY, 16, NULL, "aux");
    free(aux);
    if (status == FK_OK && table)
        status =
            fk__eval_create_buffer(eval, &eval->table, read_only, table_bytes, table, "pair table");
    else if (status == FK_OK && !eval->table)
        status = fk__eval_create_buffer(eval, &eval->table, CL_MEM_READ_ONLY, 16, NULL, "table");
    free(table);
    if (status == FK_OK)
        status =
            fk__eval_create_buffer(eval, &eval->physics, read_only, sizeof eval->physics_values,
                                   eval->physics_values, "physics");
    if (status == FK_OK && excluded)
        status = fk__eval_create_buffer(eval, &eval->excluded, read_only, excluded_bytes, excluded,
                                        "exclusion lists");
    free(excluded);
    if (status == FK_OK)
        status = fk__eval_create_buffer(eval, &eval->result, CL_MEM_READ_WRITE, result_bytes, NULL,
                                        "results");
    if (status == FK_OK && effective_splits > 1)
        status = fk__eval_create_buffer(eval, &eval->partial, CL_MEM_READ_WRITE, partial_bytes,
                                        NULL, "partial sums");
    else if (status == FK_OK)
        eval->partial = eval->result;
    /* Poison the results (all bits set: NaN in every float format) so an element the kernel fails
     * to write shows up as NaN instead of a stale or zero value. */
    if (status == FK_OK) {
        const cl_uchar poison = 0xff;
        cl_int err =
            fk__enqueue_fill(context, eval->result, &poison, 1, result_bytes, 0, NULL, NULL);
        if (err == CL_SUCCESS && eval->partial != eval->result)
            err =
                fk__enqueue_fill(context, eval->partial, &poison, 1, partial_bytes, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clFinish(context->queue);
        if (err != CL_SUCCESS)
            status = fk__cl_fail(context, "clEnqueueFillBuffer", err);
    }
    if (status != FK_OK) {
        if (eval->partial == eval->result)
            eval->partial = NULL;
        release_buffers(eval);
        return status;
    }
    eval->count = n;
    eval->j_chunk = (int)chunk;
    eval->variant.j_splits = effective_splits;
    status = eval->loop->prepare(eval, eval->loop_state);
    if (status == FK_OK)
        status = choose_accum_parameters(eval);
    if (status != FK_OK)
        eval->count = 0;
    return status;
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
    fk_context *context = eval->context;
    fk__clear_error(context);
    if (eval->count == 0 || !eval->host_body)
        return fk__fail(context, FK_ERR_STATE, "update_positions before set_particles");
    const size_t n = eval->count;
    const int gaj = eval->kernel->law == FK_LAW_GAJ;
    if (gaj && !velocity)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "gaj needs velocities");
    float *body = eval->host_body;
    for (size_t i = 0; i < n; ++i)
        for (int k = 0; k < 3; ++k) {
            const double x = position[3 * i + (size_t)k];
            if (!isfinite(x) || fabs(x) > FLT_MAX)
                return fk__fail(context, FK_ERR_INVALID_INPUT,
                                "particle %zu: coordinate %d is %g (not a finite float)", i, k, x);
            body[4 * i + (size_t)k] = (float)x;
        }
    float *aux = NULL;
    if (gaj) {
        aux = malloc(4 * n * sizeof *aux);
        if (!aux)
            return FK_ERR_HOST_MEMORY;
        for (size_t i = 0; i < n; ++i) {
            for (int k = 0; k < 3; ++k) {
                const double v = velocity[3 * i + (size_t)k];
                if (!isfinite(v) || fabs(v) > FLT_MAX) {
                    free(aux);
                    return fk__fail(context, FK_ERR_INVALID_INPUT,
                                    "particle %zu: velocity %d is %g (not a finite float)", i, k,
                                    v);
                }
                aux[4 * i + (size_t)k] = (float)v;
            }
            aux[4 * i + 3] = 0.0f;
        }
    }
    fk_status status = check_coincident(eval, body, n);
    if (status != FK_OK) {
        free(aux);
        return status;
    }
    /* Blocking writes: the host arrays are reused by the next update. */
    cl_int err = clEnqueueWriteBuffer(context->queue, eval->body, CL_TRUE, 0, 4 * n * sizeof *body,
                                      body, 0, NULL, NULL);
    if (err == CL_SUCCESS && aux)
        err = clEnqueueWriteBuffer(context->queue, eval->body_aux, CL_TRUE, 0, 4 * n * sizeof *aux,
                                   aux, 0, NULL, NULL);
    free(aux);
    eval->computed = 0;
    if (err != CL_SUCCESS) {
        eval->count = 0; /* the device holds neither the old nor the new particles for sure */
        return fk__cl_fail(context, "clEnqueueWriteBuffer (particles)", err);
    }
    status = eval->loop->prepare(eval, eval->loop_state);
    if (status == FK_OK) /* the scale depends on the data: every update */
        status = choose_accum_parameters(eval);
    if (status != FK_OK)
        eval->count = 0;
    return status;
}

double fk__event_seconds(cl_event first, cl_event last)
{
    cl_ulong start = 0, end = 0;
    if (clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) !=
            CL_SUCCESS ||
        clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) !=
            CL_SUCCESS)
        return -1.0;
    return end > start ? (double)(end - start) * 1e-9 : 0.0;
}

fk_status fk__eval_finish(fk_eval *eval, cl_event first, cl_event last, const char *what,
                          double *seconds)
{
    fk_context *context = eval->context;
    if (!last)
        last = first;
    fk_status status = FK_OK;
    const cl_int err = clFinish(context->queue);
    if (err != CL_SUCCESS) {
        status = fk__cl_fail(context, "clFinish", err);
    } else {
        /* An in-order queue ran first .. last; a launch that failed says so in its status. */
        cl_int state_first = CL_COMPLETE, state_last = CL_COMPLETE;
        if (first)
            clGetEventInfo(first, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state_first,
                           &state_first, NULL);
        if (last && last != first)
            clGetEventInfo(last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state_last, &state_last,
                           NULL);
        if (state_first < 0 || state_last < 0) {
            char call[96];
            snprintf(call, sizeof call, "kernel execution (%s)", what);
            status = fk__cl_fail(context, call, state_first < 0 ? state_first : state_last);
        }
    }
    if (status == FK_OK && seconds)
        *seconds = first ? fk__event_seconds(first, last) : -1.0;
    if (first)
        clReleaseEvent(first);
    if (last && last != first)
        clReleaseEvent(last);
    return status;
}

/* Exclude afterwards: enqueues fk_subtract_exclusions on the results of the pair loop just
 * enqueued (the queue is in order). *event stays NULL when there is nothing to subtract. Not after
 * the bound pre-pass: it measures every pair's term, which bounds the subtracted ones too
 * (cl/pairwise.cl). */
static fk_status enqueue_subtraction(fk_eval *eval, cl_event *event)
{
    *event = NULL;
    if (!eval->excluded)
        return FK_OK;
    const cl_int n = (cl_int)eval->count;
    const cl_float4 acc_param = fk__eval_acc_param(eval);
    fk_status status = FK__SET_ARGS(
        eval->context, eval->subtract, "fk_subtract_exclusions", 0, FK__ARG(n),
        FK__ARG(eval->excluded), FK__ARG(eval->body), FK__ARG(eval->body_aux), FK__ARG(eval->table),
        FK__ARG(eval->physics), FK__ARG(acc_param), FK__ARG(eval->result));
    if (status != FK_OK)
        return status;
    const size_t group = 64;
    const size_t global = (eval->count + group - 1) / group * group;
    const cl_int err = clEnqueueNDRangeKernel(eval->context->queue, eval->subtract, 1, NULL,
                                              &global, &group, 0, NULL, event);
    if (err != CL_SUCCESS) {
        *event = NULL;
        return fk__cl_fail(eval->context, "clEnqueueNDRangeKernel (fk_subtract_exclusions)", err);
    }
    return FK_OK;
}

/* One pass of the loop, waited for: the forces pass with the exclusion subtraction appended. */
static fk_status run_pass(fk_eval *eval, fk__pass pass, double *seconds)
{
    fk_context *context = eval->context;
    cl_event first = NULL, last = NULL;
    fk_status status = eval->loop->enqueue(eval, eval->loop_state, pass, &first, &last);
    if (status != FK_OK)
        return status;
    cl_event subtracted = NULL; /* exclude afterwards, on the merged results */
    if (pass == FK__PASS_FORCES)
        status = enqueue_subtraction(eval, &subtracted);
    if (status != FK_OK) {
        clFinish(context->queue);
        if (first)
            clReleaseEvent(first);
        if (last)
            clReleaseEvent(last);
        return status;
    }
    if (subtracted) {
        if (last)
            clReleaseEvent(last);
        last = subtracted;
    }
    return fk__eval_finish(eval, first, last, "pair loop", seconds);
}

fk_status fk_eval_compute(fk_eval *eval, double *seconds)
{
    if (!eval)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = eval->context;
    fk__clear_error(context);
    if (eval->count == 0)
        return fk__fail(context, FK_ERR_STATE, "compute before set_particles");
    const fk_status status = run_pass(eval, FK__PASS_FORCES, seconds);
    eval->computed = status == FK_OK;
    return status;
}

/* Reads components [first, first + count) of every particle, decoded to double. */
static fk_status read_components(fk_eval *eval, unsigned first, unsigned count, double *out)
{
    fk_context *context = eval->context;
    fk__clear_error(context);
    if (!eval->computed)
        return fk__fail(context, FK_ERR_STATE, "read before compute");
    const size_t words = eval->count * eval->components * 2;
    uint32_t *packed = malloc(words * sizeof *packed);
    if (!packed)
        return FK_ERR_HOST_MEMORY;
    cl_int err = clEnqueueReadBuffer(context->queue, eval->result, CL_TRUE, 0,
                                     words * sizeof *packed, packed, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        free(packed);
        return fk__cl_fail(context, "clEnqueueReadBuffer", err);
    }
    for (size_t i = 0; i < eval->count; ++i)
        for (unsigned k = 0; k < count; ++k) {
            size_t word = 2 * (i * eval->components + first + k);
            if (eval->accum->overflowed &&
                eval->accum->overflowed(packed[word], packed[word + 1])) {
                free(packed);
                return fk__fail(context, FK_ERR_OVERFLOW,
                                "particle %zu, component %u: a pair term or sum left the range of "
                                "the %s accumulator at scale %g (a term above its limit or not "
                                "finite)",
                                i, first + k, eval->accum->info.name, eval->accum_scale);
            }
            out[i * count + k] =
                eval->accum->decode(packed[word], packed[word + 1], eval->accum_scale);
        }
    free(packed);
    return FK_OK;
}

fk_status fk_eval_read_forces(fk_eval *eval, double *forces)
{
    if (!eval || !forces)
        return FK_ERR_INVALID_ARGUMENT;
    return read_components(eval, 0, eval->kernel->info.force_components, forces);
}

fk_status fk_eval_read_potentials(fk_eval *eval, double *potentials)
{
    if (!eval || !potentials)
        return FK_ERR_INVALID_ARGUMENT;
    if (!eval->config.potential)
        return fk__fail(eval->context, FK_ERR_STATE,
                        "potentials were not requested (fk_eval_config.potential)");
    return read_components(eval, eval->kernel->info.force_components, 1, potentials);
}

void fk__eval_set_j_splits(fk_eval *eval, int j_splits)
{
    eval->config.j_splits = j_splits > 0 ? j_splits : 0;
}

fk_status fk_eval_get_variant(const fk_eval *eval, fk_variant *variant)
{
    if (!eval || !variant)
        return FK_ERR_INVALID_ARGUMENT;
    *variant = eval->variant;
    return FK_OK;
}

size_t fk_eval_force_components(const fk_eval *eval)
{
    return eval ? eval->kernel->info.force_components : 0;
}

/* Both invalidate the particles: types and exclusion indices are checked, and exclusions built
 * into body_aux, by the next fk_eval_set_particles. */
fk_status fk_eval_set_pair_table(fk_eval *eval, const fk_pair_table *table)
{
    if (!eval || !table)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = eval->context;
    fk__clear_error(context);
    char message[512] = "";
    fk__pair_params params;
    fk_status status = fk__pair_params_copy(eval->kernel, table, &params, message, sizeof message);
    if (status != FK_OK)
        return fk__fail(context, status, "%s", message);
    fk__pair_params_free(&eval->law.pairs);
    eval->law.pairs = params;
    float *values = NULL;
    size_t bytes = 0;
    status = fk__forcelaw_table(context, eval->kernel, &eval->law, &values, &bytes);
    cl_mem buffer = NULL;
    if (status == FK_OK)
        status = fk__eval_create_buffer(eval, &buffer, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                        bytes, values, "pair table");
    free(values);
    if (status != FK_OK)
        return status;
    if (eval->table)
        clReleaseMemObject(eval->table);
    eval->table = buffer;
    eval->count = 0;
    eval->computed = 0;
    return FK_OK;
}

fk_status fk_eval_set_exclusions(fk_eval *eval, const size_t *pairs, size_t count)
{
    if (!eval || (count && !pairs))
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = eval->context;
    fk__clear_error(context);
    if (count && !eval->kernel->uses_table)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "exclusions apply to the molecular kernels, not to %s",
                        eval->kernel->info.name);
    char message[256] = "";
    size_t *normalized = NULL, unique = 0;
    fk_status status =
        fk__exclusions_normalize(pairs, count, &normalized, &unique, message, sizeof message);
    if (status != FK_OK)
        return fk__fail(context, status, "%s", message);
    if (eval->config.exclusion_mode == FK_EXCLUDE_ON_THE_FLY && eval->config.max_exclusions == 0) {
        size_t partners = 0;
        status = fk__exclusions_max_partners(normalized, unique, &partners);
        if (status == FK_OK && partners > FK__MAX_EXCLUSION_SLOTS)
            status = fk__fail(context, FK_ERR_INVALID_INPUT,
                              "a particle has %zu excluded partners; exclusions on the fly check "
                              "at most %d per particle (a compare per partner per pair): exclude "
                              "afterwards (FK_EXCLUDE_AFTERWARDS) for such data",
                              partners, FK__MAX_EXCLUSION_SLOTS);
        const unsigned slots = (unsigned)(partners + 3u) / 4u * 4u;
        if (status == FK_OK && slots != eval->law.exclusion_slots)
            status = rebuild_for_exclusion_slots(eval, slots);
        if (status != FK_OK) {
            free(normalized);
            return status;
        }
    }
    free(eval->law.exclusions);
    eval->law.exclusions = normalized;
    eval->law.exclusion_count = unique;
    eval->count = 0;
    eval->computed = 0;
    return FK_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Precision: the bound pre-pass of the data-scaled accumulators, reproducible mode, packed
 * results */

static fk_status read_packed(fk_eval *eval, uint32_t *words)
{
    const size_t bytes = eval->count * eval->components * 2 * sizeof *words;
    cl_int err = clEnqueueReadBuffer(eval->context->queue, eval->result, CL_TRUE, 0, bytes, words,
                                     0, NULL, NULL);
    return err == CL_SUCCESS ? FK_OK : fk__cl_fail(eval->context, "clEnqueueReadBuffer", err);
}

/* Exclude afterwards subtracts on the device, after any of the pair loops (fk_eval_compute), with
 * cl/pairwise.cl's fk_subtract_exclusions, built with the loop's request on the scalar template:
 * for the scalar all-pairs loop that is the loop's own program, which the context's program cache
 * hands back without a second build. */
static fk_status create_subtraction(fk_eval *eval, const fk_program_request *request)
{
    if (!eval->kernel->uses_table || eval->config.exclusion_mode != FK_EXCLUDE_AFTERWARDS)
        return FK_OK;
    cl_int err = CL_SUCCESS;
    fk_program_request own = *request;
    own.file = NULL;
    own.lanes = 0;
    fk_program_result built;
    fk_status status = fk__program_build(eval->context, &own, &built);
    if (status != FK_OK)
        return status;
    eval->subtract_program = built.program;
    eval->subtract = clCreateKernel(eval->subtract_program, "fk_subtract_exclusions", &err);
    if (err != CL_SUCCESS) {
        eval->subtract = NULL;
        return fk__cl_fail(eval->context, "clCreateKernel (fk_subtract_exclusions)", err);
    }
    return FK_OK;
}

/* Runs the pre-pass on the particles just uploaded (one extra evaluation per set_particles) and
 * sets acc_param and the decode scale. The largest |term| is exact and independent of the variant
 * and the order, so fixed64's scale, and hence its results, are too. */
static fk_status choose_accum_parameters(fk_eval *eval)
{
    if (!eval->accum->choose_parameters)
        return FK_OK;
    fk_context *context = eval->context;
    fk_status status = run_pass(eval, FK__PASS_BOUND, NULL);
    eval->computed = 0;
    const size_t values = eval->count * eval->components;
    uint32_t *packed = status == FK_OK ? malloc(values * 2 * sizeof *packed) : NULL;
    if (status == FK_OK && !packed)
        status = FK_ERR_HOST_MEMORY;
    if (status == FK_OK)
        status = read_packed(eval, packed);
    if (status == FK_OK) { /* poison again: the main pass must be seen to write every result */
        const cl_uchar poison = 0xff;
        cl_int err = fk__enqueue_fill(context, eval->result, &poison, 1, values * 8, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clFinish(context->queue);
        if (err != CL_SUCCESS)
            status = fk__cl_fail(context, "clEnqueueFillBuffer", err);
    }
    if (status != FK_OK) {
        free(packed);
        return status;
    }
    struct fk_accum_bound bound = {.max_term = 0, .max_sum = 0, .count = eval->count};
    for (size_t v = 0; v < values; ++v) {
        float max_term, sum;
        memcpy(&max_term, &packed[2 * v], sizeof max_term);
        memcpy(&sum, &packed[2 * v + 1], sizeof sum);
        if (!(max_term <= bound.max_term)) /* NaN sticks */
            bound.max_term = isnan(bound.max_term) ? bound.max_term : (double)max_term;
        if (!(sum <= bound.max_sum))
            bound.max_sum = isnan(bound.max_sum) ? bound.max_sum : (double)sum;
    }
    free(packed);
    struct fk_accum_params params;
    if (!eval->accum->choose_parameters(&bound, &params))
        return fk__fail(context, FK_ERR_OVERFLOW,
                        "the %s accumulator cannot represent these forces: the largest pair term "
                        "is %g (sum of magnitudes %g)",
                        eval->accum->info.name, bound.max_term, bound.max_sum);
    memcpy(eval->acc_param, params.acc_param, sizeof eval->acc_param);
    eval->accum_scale = params.scale;
    return FK_OK;
}

/* Reproducible mode: REPRODUCIBLE=1 so that force laws use correctly rounded divide and sqrt
 * instead of rsqrt: in float where the device has them (the build flag is only valid there), else
 * through double (cl/forces/reproducible.clh). Denormals are kept: no -cl-denorms-are-zero. What
 * stands in the way of bit identity is reported through fk_eval_reproducible(). */
static const char *reproducible_options(fk_eval *eval)
{
    cl_device_fp_config config = 0;
    if (clGetDeviceInfo(eval->context->device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof config, &config,
                        NULL) != CL_SUCCESS)
        config = 0;
    const int float_correctly_rounded = (config & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
    const int via_double = !float_correctly_rounded && eval->context->info.fp64;
    eval->reproducible = 1;
    eval->reproducible_reason = NULL;
    if (eval->kernel->inexact_builtin)
        eval->reproducible_reason =
            "the force law uses exp, which OpenCL does not round correctly: "
            "its terms may differ between devices and between programs";
    else if (!float_correctly_rounded && !via_double)
        eval->reproducible_reason = "the device has neither correctly rounded single-precision "
                                    "divide and sqrt (CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) nor "
                                    "double precision to build them from";
    else if (!(config & CL_FP_DENORM))
        eval->reproducible_reason = "the device flushes single-precision denormals to zero";
    if (eval->reproducible_reason)
        eval->reproducible = 0;
    if (float_correctly_rounded)
        return "-D REPRODUCIBLE=1 -cl-fp32-correctly-rounded-divide-sqrt";
    return via_double ? "-D REPRODUCIBLE=1 -D FK_CR_VIA_DOUBLE=1" : "-D REPRODUCIBLE=1";
}

int fk_eval_reproducible(const fk_eval *eval, const char **reason)
{
    if (reason)
        *reason = eval ? eval->reproducible_reason : NULL;
    return eval ? eval->reproducible : -1;
}

fk_status fk__eval_read_packed(fk_eval *eval, uint32_t *words)
{
    if (!eval || !words)
        return FK_ERR_INVALID_ARGUMENT;
    fk__clear_error(eval->context);
    if (!eval->computed)
        return fk__fail(eval->context, FK_ERR_STATE, "read before compute");
    return read_packed(eval, words);
}

double fk__eval_accum_scale(const fk_eval *eval)
{
    return eval ? eval->accum_scale : 0.0;
}

void fk__eval_set_accum_param(fk_eval *eval, unsigned index, float value)
{
    if (eval && index < 4)
        eval->acc_param[index] = value;
}

fk_status fk__eval_kernel_figures(const fk_eval *eval, fk__kernel_figures *figures, size_t capacity,
                                  size_t *count)
{
    if (!eval || !count || (capacity && !figures))
        return FK_ERR_INVALID_ARGUMENT;
    *count = eval->loop->figures(eval, eval->loop_state, figures, capacity);
    if (eval->subtract) {
        if (*count < capacity)
            fk__kernel_figures_of(eval->context, eval->subtract, "fk_subtract_exclusions",
                                  &figures[*count]);
        ++*count;
    }
    return FK_OK;
}
