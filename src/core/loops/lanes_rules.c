/* The lane rules (lanes.h): when the all-pairs loop runs in its lane form (lanes.c) and with what
 * shape. Apart from the lane form itself because the all-pairs loop asks them too (its default
 * shape on CPUs is the lane form), and the lane form runs the all-pairs launch: with the rules in
 * either file the two would call each other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/loops/lanes.h"
#include "core/loops/loop.h"
#include "core/tuning_db/db.h"

/* CPU lanes (cl/pairwise_lanes.cl): work-group size and j-unrolling measured on POCL 3.1 on two
 * EPYC cores (bench/README.md, "CPU lanes, measured"); the width is the device's (below). */
enum { LANES_WORK_GROUP = 8, LANES_UNROLL_J = 1 };

/* The widest lane count the device holds in one register: its native float vector width (8 with
 * AVX2, 16 with AVX-512). A wider vector is split by the compiler, and clang warns on every
 * function that takes or returns one ("AVX vector return of type 'float16' without 'avx512f'
 * enabled changes the ABI"), which POCL prints to stderr. 0: narrower than 8, no lanes. */
int fk__device_lane_width(const fk_context *context)
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
int fk__lanes_possible(fk_context *context, const fk_kernel_desc *kernel,
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
fk_status fk__lanes_check_width(fk_context *context, int asked)
{
    const int width = fk__device_lane_width(context);
    if (context->info.type != FK_DEVICE_CPU || asked <= width)
        return FK_OK;
    return fk__fail(context, FK_ERR_UNSUPPORTED,
                    "lanes %d: %s holds %d floats in a vector register "
                    "(CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT); wider lanes would be split by the "
                    "compiler, with ABI warnings on every build; use lanes %s",
                    asked, context->info.name, width ? width : 1, width ? "8" : "-1");
}

fk_status fk__lanes_choose(fk_context *context, const fk_eval_config *config,
                           const fk_kernel_desc *kernel, const fk_accum_desc *accum,
                           const struct fk_tuning_entry **tuned, fk_variant *variant)
{
    const int asked = config->lanes;
    variant->lanes = 0;
    if (asked != -1 && asked != 0 && asked != 8 && asked != 16)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "lanes %d: expected -1 (off), 0 (automatic), 8 or 16", asked);
    if (asked < 0)
        return FK_OK;
    const int is_cpu = context->info.type == FK_DEVICE_CPU;
    const int width = fk__device_lane_width(context);
    int lanes = asked;
    const fk_tuning_entry *entry = *tuned;
    if (asked == 0) {
        /* GPUs already run one work-item per lane: never there. */
        if (!is_cpu || width == 0 || config->unroll_i || config->unroll_j || config->local_tiling ||
            config->algorithm != FK_ALGORITHM_ALL_PAIRS || config->reproducible ||
            !fk__lanes_possible(context, kernel, accum))
            return FK_OK;
        if (entry && entry->lanes == 0 && entry->origin == FK_VARIANT_USER_DB)
            return FK_OK; /* the tuner measured lanes here and the scalar template won */
        lanes = entry && entry->lanes > 0 && entry->lanes <= width ? entry->lanes : width;
        if (!(entry && entry->lanes > 0 && entry->lanes <= width))
            entry = NULL;
    } else {
        if (config->algorithm == FK_ALGORITHM_NEIGHBORS)
            return FK_OK; /* the list loop's own lane form: src/core/loops/neighbors.c decides */
        if (config->algorithm != FK_ALGORITHM_ALL_PAIRS)
            return fk__fail(context, FK_ERR_UNSUPPORTED,
                            "lanes are a form of the all-pairs and neighbors loops, not of "
                            "algorithm %s",
                            fk_algorithm_name((fk_algorithm)config->algorithm));
        if (config->unroll_i > 1)
            return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                            "lanes replace the i-unrolling: unroll %dx%d with lanes %d (use 1x%d)",
                            config->unroll_i, config->unroll_j, asked, config->unroll_j);
        if (config->local_tiling > 0)
            return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                            "lanes read the j-particles through the caches: no local tiling");
        if (!fk__lanes_possible(context, kernel, accum))
            return fk__fail(context, FK_ERR_UNSUPPORTED,
                            "kernel '%s' with accumulator '%s' has no lane form "
                            "(cl/pairwise_lanes.cl)%s; lanes -1 or 0 run the scalar template",
                            kernel->info.name, accum->info.name,
                            accum->lanes == FK_LANES_NEED_FP64 && !context->info.fp64
                                ? " on a device without double precision"
                                : "");
        const fk_status wide = fk__lanes_check_width(context, asked);
        if (wide != FK_OK)
            return wide;
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
    const int width = fk__device_lane_width(context);
    if (!kernel || !accum || context->info.type != FK_DEVICE_CPU || width == 0 ||
        !fk__lanes_possible(context, kernel, accum))
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
