/* Shares (fk_eval_set_share, issue #20): one part of the pair work, for a distributed evaluation
 * in which every part holds every particle and computes the results of its own share of them
 * (src/mpi/ combines the parts). The loops launch only their share (src/core/loops/: all-pairs and
 * lanes a range of i-blocks, full lists a range of particles, cells a range of cells); this file
 * holds the split, the zeroing of the results outside a particle range, and the rescale entry
 * points a caller with several parts needs to keep them on one fixed64 scale. */
#include <stdint.h>

#include "core/accum/accum.h"
#include "core/eval/eval_internal.h"

/* Why this evaluation's loop cannot compute a share, or NULL: its entry says whether it writes
 * both particles of a pair as it ran (Newton's third law), and why that refuses a share. */
static const char *share_refusal(const fk_eval *eval)
{
    if (fk__loop_uses_newton(eval->loop, &eval->state.variant))
        return eval->loop->newton_refusal;
    if (eval->state.config.exclusion_mode == FK_EXCLUDE_AFTERWARDS)
        return "exclusions afterwards subtract from every particle's results (use exclusions on "
               "the fly)";
    return NULL;
}

static void share_reset(fk_eval *eval)
{
    eval->state.share_part = 0;
    eval->state.share_parts = 1;
    eval->state.share_explicit = 0;
    eval->state.share_from = eval->state.share_to = 0;
    eval->state.share_first = eval->state.share_end = 0;
    eval->state.share_range = 0;
    eval->computed = 0;
}

fk_status fk_eval_set_share(fk_eval *eval, int part, int parts)
{
    if (!eval)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = fk__eval_begin(eval, NULL);
    if (status != FK_OK)
        return status;
    if (parts < 1 || part < 0 || part >= parts)
        return fk__fail(eval->state.context, FK_ERR_INVALID_ARGUMENT,
                        "share %d of %d: the part must lie in 0 .. parts - 1, parts >= 1", part,
                        parts);
    const char *why = parts > 1 ? share_refusal(eval) : NULL;
    if (why)
        return fk__fail(eval->state.context, FK_ERR_UNSUPPORTED, "a share of the pair work: %s",
                        why);
    share_reset(eval);
    eval->state.share_part = parts > 1 ? part : 0;
    eval->state.share_parts = parts;
    return FK_OK;
}

fk_status fk_eval_set_share_range(fk_eval *eval, size_t first, size_t end)
{
    if (!eval)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = fk__eval_begin(eval, NULL);
    if (status != FK_OK)
        return status;
    if (first > end)
        return fk__fail(eval->state.context, FK_ERR_INVALID_ARGUMENT,
                        "share range [%zu, %zu): first must not exceed end", first, end);
    const char *why = share_refusal(eval);
    if (!why && eval->loop->share_unit == FK__SHARE_CELLS)
        why = "the cell loop's shares are ranges of cells (use fk_eval_set_share)";
    if (why)
        return fk__fail(eval->state.context, FK_ERR_UNSUPPORTED, "a share range of particles: %s",
                        why);
    share_reset(eval);
    eval->state.share_explicit = 1;
    eval->state.share_from = first;
    eval->state.share_to = end;
    return FK_OK;
}

/* After a forces pass of a loop whose share is a particle range: zero results outside it (the
 * kernels left them unwritten, or wrote partial sums of another part's particles there). */
uint64_t fk_eval_share_pairs(const fk_eval *eval)
{
    if (!eval || !eval->state.count)
        return 0;
    const uint64_t n = (uint64_t)eval->state.count;
    const fk_variant *v = &eval->state.variant;
    if (!fk__share_active(&eval->state))
        return v->pairs_examined ? v->pairs_examined : n * n;
    if (eval->loop->share_unit == FK__SHARE_CELLS) {
        /* The loop examines every pair of neighbouring cells; its share is a range of cells.
         * The pairs are counted for the whole grid, so this is the share's fraction of them by
         * cells: exact on average for a uniform density, an estimate otherwise. */
        const uint64_t cells =
            (uint64_t)v->cell_grid[0] * (uint64_t)v->cell_grid[1] * (uint64_t)v->cell_grid[2];
        size_t first = 0, end = 0;
        fk__share_units(&eval->state, (size_t)cells, &first, &end);
        return cells ? (uint64_t)((double)v->pairs_examined * (double)(end - first) / (double)cells)
                     : 0;
    }
    const uint64_t mine = (uint64_t)(eval->state.share_end - eval->state.share_first);
    if (eval->loop->reach == FK__REACH_CUTOFF_SKIN) /* the share's fraction of the pairs built */
        return (uint64_t)((double)v->pairs_examined * (double)mine / (double)n);
    return mine * n; /* every pair of the share's particles: exact */
}

/* Whether update_positions keeps the scale (and fk_eval_wait redoes an overflowed compute).
 * FK_SCALE_AUTO keeps it where that is safe without the caller's help: an accumulator that
 * detects every overflow (fixed64; narumi and nitadori_large cannot, so they need the pre-pass's
 * bound every time), an evaluation that is no part of a larger one (coordinated parts rescale
 * together on the caller's call, which a caller of 0.2's default does not make) and no share
 * (the parts of a share each see only their own particles' overflow: one would rescale without
 * the others, and their results would no longer combine to the unshared ones). Read at each
 * update, because a share is set and cleared after fk_eval_create. */
int fk__eval_keeps_scale(const fk_eval *eval)
{
    switch (eval->state.config.scale_policy) {
    case FK_SCALE_KEEP:
        return 1;
    case FK_SCALE_AUTO:
        return eval->state.accum->overflowed != NULL &&
               eval->state.accum->choose_parameters != NULL &&
               !eval->state.config.coordinated_scale && !fk__share_active(&eval->state);
    default:
        return 0;
    }
}

fk_status fk_eval_rescale(fk_eval *eval)
{
    if (!eval)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = fk__eval_begin(eval, "rescale");
    if (status != FK_OK)
        return status;
    return fk__eval_choose_accum_parameters(eval);
}

size_t fk_eval_rescale_count(const fk_eval *eval)
{
    return eval ? eval->rescales : 0;
}

fk_status fk_eval_get_bound(const fk_eval *eval, double *max_term, double *max_sum)
{
    if (!eval || !max_term || !max_sum)
        return FK_ERR_INVALID_ARGUMENT;
    *max_term = eval->bound_max_term;
    *max_sum = eval->bound_max_sum;
    return FK_OK;
}

fk_status fk_eval_set_bound(fk_eval *eval, double max_term, double max_sum, size_t count)
{
    if (!eval)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = fk__eval_begin(eval, "set_bound");
    if (status != FK_OK || !eval->state.accum->choose_parameters)
        return status;
    if (!(max_term >= 0) || !(max_sum >= 0)) /* NaN included */
        return fk__fail(eval->state.context, FK_ERR_INVALID_ARGUMENT,
                        "set_bound: max_term %g and max_sum %g must be >= 0", max_term, max_sum);
    const struct fk_accum_bound bound = {
        .max_term = max_term, .max_sum = max_sum, .count = count ? count : eval->state.count};
    status = fk__eval_apply_bound(eval, &bound);
    if (status == FK_OK) {
        eval->bound_max_term = max_term;
        eval->bound_max_sum = max_sum;
        eval->computed = 0;
    }
    return status;
}
