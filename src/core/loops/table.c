/* The pair-loop table (loop.h): every loop by algorithm, and the questions its callers ask of the
 * entries. A new loop is one line in `loops` below (docs/extending.md, "Add a pair loop"). */
#include "core/loops/loop.h"

extern const fk__loop fk__loop_all_pairs; /* allpairs.c: cl/pairwise.cl (lanes.c: its lane form) */
extern const fk__loop fk__loop_symmetric; /* symmetric.c: cl/symmetric.cl */
extern const fk__loop fk__loop_cells;     /* cells.c: cl/cells.cl, cells_build.cl */
extern const fk__loop fk__loop_neighbors; /* neighbors.c: cl/neighbors.cl, neighbors_build.cl */
extern const fk__loop fk__loop_lanes;     /* lanes.c: the all-pairs loop's lane template */

/* In algorithm order: loops[k]->algorithm == k (checked by tests/test_loop_table.c). */
static const fk__loop *const loops[] = {
    &fk__loop_all_pairs,
    &fk__loop_symmetric,
    &fk__loop_cells,
    &fk__loop_neighbors,
};

size_t fk__loop_count(void)
{
    return sizeof loops / sizeof loops[0];
}

const fk__loop *fk__loop_at(size_t index)
{
    return index < fk__loop_count() ? loops[index] : NULL;
}

const fk__loop *fk__loop_for(int algorithm)
{
    for (size_t k = 0; k < fk__loop_count(); ++k)
        if (loops[k]->algorithm == algorithm)
            return loops[k];
    return NULL;
}

/* The lane forms, each naming the loop it is a form of (.lane_of). */
static const fk__loop *const lane_forms[] = {
    &fk__loop_lanes,
};

const fk__loop *fk__loop_lane_form(const fk__loop *loop)
{
    for (size_t k = 0; k < sizeof lane_forms / sizeof lane_forms[0]; ++k)
        if (loop && lane_forms[k]->lane_of == loop)
            return lane_forms[k];
    return NULL;
}

const fk__loop *fk__loop_for_variant(const fk_variant *variant)
{
    const fk__loop *loop = fk__loop_for(variant->algorithm);
    const fk__loop *lane_form = fk__loop_lane_form(loop);
    return variant->lanes > 0 && lane_form ? lane_form : loop;
}

static const fk__loop *loop_with(fk__loop_auto automatic)
{
    for (size_t k = 0; k < fk__loop_count(); ++k)
        if (loops[k]->automatic == automatic)
            return loops[k];
    return NULL;
}

const fk__loop *fk__loop_reference(void)
{
    for (size_t k = 0; k < fk__loop_count(); ++k)
        if (loops[k]->reference)
            return loops[k];
    return loops[0];
}

const fk__loop *fk__loop_short_range(void)
{
    const fk__loop *loop = loop_with(FK__AUTO_SHORT_RANGE);
    return loop ? loop : fk__loop_reference();
}

int fk__loop_uses_newton(const fk__loop *loop, const fk_variant *variant)
{
    switch (loop->newton) {
    case FK__NEWTON_ALWAYS:
        return 1;
    case FK__NEWTON_HALF_LISTS:
        return variant->neighbor_half_lists != 0;
    default:
        return 0;
    }
}

int fk__loop_takes_accum(const fk__loop *loop, const fk_accum_desc *accum)
{
    return loop->accums != FK__ACCUMS_NEWTON || fk__accum_allows_newton(accum);
}

int fk__loop_reports_grid(int algorithm)
{
    const fk__loop *loop = fk__loop_for(algorithm);
    return loop && loop->reach == FK__REACH_CUTOFF_SKIN;
}

int fk__loop_reports_lists(int algorithm)
{
    const fk__loop *loop = fk__loop_for(algorithm);
    return loop && loop->newton == FK__NEWTON_HALF_LISTS;
}
