/* Variant choice of the evaluation: built-in defaults, the tuning database's entry, explicit
 * shapes, then the lane rules (src/loops/lanes.c). The tuner asks here too (the untuned baseline,
 * automatic lanes), so it depends on the evaluation and never the reverse. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"
#include "loops/lanes.h"
#include "tune.h"

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

fk_status fk__eval_choose_variant(fk_context *context, const fk_eval_config *config,
                                  const fk_kernel_desc *kernel, const fk_accum_desc *accum,
                                  fk__variant_choice *out)
{
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
    if (!fk__loop_for(config->algorithm)) /* every loop of the registry, and only those */
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "unknown algorithm %d",
                        config->algorithm);
    out->scalar = variant; /* what runs if automatic lanes cannot build */
    out->scalar_tuned = tuned;
    fk_status lanes_status = fk__lanes_choose(context, config, kernel, accum, &tuned, &variant);
    if (lanes_status != FK_OK)
        return lanes_status;
    if (!fk__variant_check(variant.unroll_i, variant.unroll_j, variant.work_group_size,
                           variant.local_tiling ? 1 : -1, variant_reason, sizeof variant_reason))
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "%s", variant_reason);

    out->variant = variant;
    out->tuned = tuned;
    return FK_OK;
}
