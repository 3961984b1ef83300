/* Variant choice of the evaluation: built-in defaults, the tuning database's entry, explicit
 * shapes, then the lane rules (src/core/loops/lanes.c). The tuner asks here too (the untuned
 * baseline, automatic lanes), so it depends on the evaluation and never the reverse. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/eval/eval_internal.h"
#include "core/loops/lanes.h"
#include "core/tuning_db/db.h"

static int valid_unroll(int value)
{
    return value == 1 || value == 2 || value == 4 || value == 8;
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
    fk__builtin_variant(&context->info, &variant);
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
    /* the loop; fk__eval_create_slots sets the source when FK_ALGORITHM_AUTO chose it */
    out->variant.algorithm = out->scalar.algorithm = config->algorithm;
    out->variant.algorithm_source = out->scalar.algorithm_source = FK_VARIANT_EXPLICIT;
    return FK_OK;
}

/* ---- FK_ALGORITHM_AUTO ---------------------------------------------------------------------- */

/* Below these N all-pairs wins the untuned rule (break-even of cells against all-pairs for lj at
 * rc 2.5, densities 0.1 to 1.0, force only to a rebuild every step: POCL 2 EPYC cores < 64 to
 * 324, NVIDIA H200 2,866 to 9,246; docs/algorithms.md "Cell lists"). Neighbour lists cost more
 * per build than cells, so the larger end of each range is taken. */
enum { AUTO_ALL_PAIRS_BELOW_CPU = 512, AUTO_ALL_PAIRS_BELOW_GPU = 8192 };

/* The density the rule assumes when N or the box is unknown (open boundaries): the molecular
 * bench and tuning system's, the MD workload's. */
#define AUTO_DEFAULT_DENSITY 0.8
/* The rule with the skin resolved: reach is cutoff + skin, the radius the loops examine. */
static int auto_rule(const fk_device_info *device, int short_range, double cutoff, double reach,
                     size_t n, const double box[3])
{
    /* the loops by their entries' FK_ALGORITHM_AUTO role (src/core/loops/loop.h) */
    const int all_pairs = fk__loop_reference()->algorithm;
    const int lists = fk__loop_short_range()->algorithm;
    if (!short_range || !(cutoff > 0))
        return all_pairs; /* the only one that serves every law */
    if (n == 0)           /* unknown: the loops are O(N); all-pairs at a large N would be O(N^2) */
        return lists;
    if (n < (device->type == FK_DEVICE_GPU ? AUTO_ALL_PAIRS_BELOW_GPU : AUTO_ALL_PAIRS_BELOW_CPU))
        return all_pairs;
    /* Partners within the list radius: when they are most of the system (a periodic box hardly
     * wider than the cutoff sphere, or a dense one), the loops examine every pair anyway and only
     * add their build. */
    const double volume = box[0] * box[1] * box[2];
    const double density = volume > 0 ? (double)n / volume : AUTO_DEFAULT_DENSITY;
    const double partners = density * 4.0 / 3.0 * 3.14159265358979 * reach * reach * reach;
    if (2 * partners >= (double)n)
        return all_pairs;
    /* The lists examine ~17x fewer pairs than the 27 cells. CPUs: 5.5x faster per MD step on POCL
     * (N = 16,384, rebuilds included). GPUs, with their full lists and tuned shape: on the H200
     * 1.63 against 2.84 ms per step at N = 1,048,576, 0.224 against 0.347 at 65,536, and 0.57
     * against 1.80 ms of device time per NVE step at 1M with rebuilds included
     * (results/2026-11-25_nvidia-h200/step_final, nve_md). */
    return lists;
}

int fk__eval_auto_rule(const fk_device_info *device, int short_range, double cutoff, double skin,
                       size_t n, const double box[3])
{
    return auto_rule(device, short_range, cutoff, cutoff + fk__skin_resolve(skin, cutoff), n, box);
}

int fk__eval_choose_algorithm(fk_context *context, const fk_eval_config *config,
                              const fk_kernel_desc *kernel, const fk_accum_desc *accum,
                              const fk__plan *plan, fk_variant_source *source)
{
    /* the plan's physics: config.physics or the flat fields, the law's default cutoff applied */
    const fk__physics *physics = &plan->physics;
    const int short_range = kernel->uses_table && physics->cutoff > 0;
    *source = FK_VARIANT_DEFAULT;
    /* Measured: the tuning database's entries of the loops FK_ALGORITHM_AUTO may take (their
     * table entries say so) for this device, kernel and accumulator in N's bucket (forcekit tune
     * --algorithm L --n N writes them with the seconds per evaluation it measured); when two or
     * more have a time, the fastest. */
    const size_t n = config->expected_count;
    if (short_range && n) {
        const size_t bucket = fk_tune_bucket_for(n);
        const fk_tuning_entry *best = NULL;
        int measured = 0;
        for (size_t l = 0; l < fk__loop_count(); ++l) {
            const fk__loop *loop = fk__loop_at(l);
            if (loop->automatic == FK__AUTO_NEVER)
                continue;
            const fk_tuning_entry *e = fk__tuning_lookup_loop(
                context->tuning, loop->algorithm, kernel->info.name, accum->info.name, n);
            if (!e || e->n != bucket || !(e->seconds_per_eval > 0))
                continue;
            ++measured;
            if (!best || e->seconds_per_eval < best->seconds_per_eval)
                best = e;
        }
        if (measured >= 2) {
            *source = best->origin;
            return best->algorithm;
        }
    }
    return auto_rule(&context->info, short_range, physics->cutoff, physics->cutoff + plan->skin, n,
                     physics->box);
}
