/* The known-answer check (issue #37): Mesa 22.3's Rusticl returned all-zero forces with FK_OK for
 * five accumulators (a runtime bug, tests/rusticl/clfinish_read.c), and nothing noticed. Now the
 * first evaluation of each program on a context runs the same configuration (force law,
 * accumulator, loop, variant, switches) on four particles whose forces the host's double
 * reference gives, and refuses the accumulator when the device's differ by more than any
 * accumulator's rounding can explain (all zeros and NaN included).
 *
 * The particles: distances of 1 to 1.5 (a quarter of that scale for gravity), coordinates and
 * masses or charges powers of two or short binary fractions, exact in float, so the device sees
 * exactly the reference's input. Four particles, one tiny launch: the cost is one evaluation
 * of N = 4 per distinct program and context (the programs come from the memo, nothing is
 * compiled twice). The record is in memory per context: a context that built and checked a program
 * does not check it again. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/eval/eval_internal.h"
#include "core/eval/known_answer.h"

typedef struct fk__known_answers {
    char **keys; /* the programs that passed */
    size_t count, capacity;
    int depth; /* > 0 while a check's own evaluation is being made */
    size_t runs;
} fk__known_answers;

/* A program is what the device compiled: everything fk_eval_create turns into a build. */
static void program_key(const fk_eval *eval, unsigned slots, char *key, size_t size)
{
    const fk_eval_config *c = &eval->state.config;
    const fk_variant *v = &eval->state.variant;
    snprintf(key, size,
             "%s|%s|alg %d|%dx%d|wg %d|tile %d|lanes %d|half %d|pot %d|rep %d|pos %d|res %d|"
             "slots %u|soft %d|cut %a|cou %a|box %a %a %a|par %a %a %a %a|ex %d|skin %a",
             c->kernel, c->accum, v->algorithm, v->unroll_i, v->unroll_j, v->work_group_size,
             v->local_tiling, v->lanes, v->neighbor_half_lists, c->potential, c->reproducible,
             c->positions, c->result_type, slots, c->eps > 0, c->cutoff, c->coulomb, c->box[0],
             c->box[1], c->box[2], c->parameters[0], c->parameters[1], c->parameters[2],
             c->parameters[3], c->exclusion_mode, c->skin);
}

static int passed_before(const fk__known_answers *record, const char *key)
{
    for (size_t k = 0; record && k < record->count; ++k)
        if (strcmp(record->keys[k], key) == 0)
            return 1;
    return 0;
}

static fk_status remember(fk__known_answers *record, const char *key)
{
    if (record->count == record->capacity) {
        const size_t capacity = record->capacity ? 2 * record->capacity : 16;
        char **keys = realloc(record->keys, capacity * sizeof *keys);
        if (!keys)
            return FK_ERR_HOST_MEMORY;
        record->keys = keys;
        record->capacity = capacity;
    }
    const size_t length = strlen(key) + 1;
    char *copy = malloc(length);
    if (!copy)
        return FK_ERR_HOST_MEMORY;
    memcpy(copy, key, length);
    record->keys[record->count++] = copy;
    return FK_OK;
}

void fk__known_answer_free(fk_context *context)
{
    fk__known_answers *record = context->known_answers;
    if (!record)
        return;
    for (size_t k = 0; k < record->count; ++k)
        free(record->keys[k]);
    free(record->keys);
    free(record);
    context->known_answers = NULL;
}

size_t fk__known_answer_runs(const fk_context *context)
{
    return context && context->known_answers ? context->known_answers->runs : 0;
}

enum { PARTICLES = 4 };

/* The four particles around the box's centre (periodic) or the origin: pair distances from 1 to
 * 1.5 times scale, within any cutoff of 1.6 scale or more. */
static void known_particles(const fk_eval *eval, double position[3 * PARTICLES],
                            double mass[PARTICLES], double velocity[3 * PARTICLES])
{
    static const double offset[PARTICLES][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1.25, 0}, {0.5, 0.5, 1}};
    static const double charge[PARTICLES] = {1, -1, 0.5, -0.5};
    const fk_eval_config *c = &eval->state.config;
    const int gravity = !eval->state.kernel->uses_table;
    double scale = gravity ? 0.25 : 1.0;
    /* a cutoff below 1.6 (never a default): the particles closer, by powers of two */
    while (!gravity && c->cutoff > 0 && 1.6 * scale > c->cutoff && scale > 0x1p-10)
        scale /= 2;
    for (int i = 0; i < PARTICLES; ++i) {
        for (int d = 0; d < 3; ++d) {
            const double centre = c->box[d] > 0 ? ldexp(floor(ldexp(c->box[d] / 2, 4)), -4) : 0;
            position[3 * i + d] = centre + scale * offset[i][d];
            velocity[3 * i + d] = 0.125 * (double)(d + 1) * (i % 2 ? -1 : 1);
        }
        mass[i] = gravity ? 0.25 : charge[i];
    }
}

fk_status fk__known_answer_check(fk_eval *eval, unsigned exclusion_slots)
{
    fk_context *context = eval->state.context;
    context->known_answer_refused = 0;
    if (!context->known_answers) {
        context->known_answers = calloc(1, sizeof *context->known_answers);
        if (!context->known_answers)
            return FK_ERR_HOST_MEMORY;
    }
    fk__known_answers *record = context->known_answers;
    if (record->depth > 0) /* the check's own evaluation */
        return FK_OK;
    char key[512];
    program_key(eval, exclusion_slots, key, sizeof key);
    if (passed_before(record, key))
        return FK_OK;

    double position[3 * PARTICLES], mass[PARTICLES], velocity[3 * PARTICLES];
    known_particles(eval, position, mass, velocity);
    const fk_particles particles = {.count = PARTICLES,
                                    .position = position,
                                    .mass = mass,
                                    .velocity =
                                        eval->state.kernel->needs_velocity ? velocity : NULL};
    const fk_eval_config *c = &eval->state.config;
    fk_physics physics = {.eps = c->eps, .cutoff = c->cutoff, .coulomb = c->coulomb};
    memcpy(physics.parameters, c->parameters, sizeof physics.parameters);
    memcpy(physics.box, c->box, sizeof physics.box);
    const size_t components = eval->state.kernel->info.force_components;
    double reference[3 * PARTICLES * 2], computed[3 * PARTICLES * 2];
    if (components * PARTICLES > sizeof reference / sizeof reference[0] ||
        fk_reference_forces(c->kernel, &particles, &physics, reference, NULL) != FK_OK) {
        fk__clear_error(context);
        return remember(record, key); /* nothing to compare with: not this check's to refuse */
    }

    fk_eval_config config = eval->state.config;
    config.struct_size = sizeof config;
    config.physics = NULL;                      /* the evaluation's flat fields hold it */
    config.scale_policy = FK_SCALE_EACH_UPLOAD; /* its own scale, from its four particles */
    config.coordinated_scale = 0;
    fk_eval *check = NULL;
    ++record->depth;
    fk_status status = fk__eval_build(context, &config, exclusion_slots, &check);
    --record->depth;
    if (status == FK_OK)
        status = fk_eval_set_particles(check, &particles);
    if (status == FK_ERR_INVALID_INPUT) { /* a law that refuses these particles: no verdict */
        fk_eval_destroy(check);
        fk__clear_error(context);
        return remember(record, key);
    }
    if (status == FK_OK)
        status = fk_eval_compute(check, NULL);
    if (status == FK_OK)
        status = fk_eval_read_forces(check, computed);
    fk_eval_destroy(check);
    ++record->runs;
    if (status != FK_OK)
        return status; /* the same configuration failed: its own message stands */

    double largest = 0, worst = -1;
    size_t worst_at = 0;
    for (size_t k = 0; k < components * PARTICLES; ++k)
        if (fabs(reference[k]) > largest)
            largest = fabs(reference[k]);
    for (size_t k = 0; k < components * PARTICLES; ++k) {
        const double error = fabs(computed[k] - reference[k]);
        if (!(error <= worst) || isnan(error)) {
            worst = isnan(error) ? INFINITY : error;
            worst_at = k;
        }
    }
    /* Every accumulator sums these few terms far better than 1e-3 of the largest force (float:
     * ~1e-6); a miscompiled one is off by the whole force (zeros) or NaN. */
    if (largest > 0 && !(worst <= 1e-3 * largest)) {
        const fk_device_info *device = &context->info;
        context->known_answer_refused = 1;
        context->known_answer_error = worst / largest;
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "known-answer check failed: accumulator %s (force law %s, %s loop, "
                        "variant %dx%d, work-group size %d) on %s (%s, driver %s) computed %.9g "
                        "where %.9g is right (particle %zu, component %zu); this accumulator is "
                        "refused on this device",
                        c->accum, c->kernel,
                        fk_algorithm_name((fk_algorithm)eval->state.variant.algorithm),
                        eval->state.variant.unroll_i, eval->state.variant.unroll_j,
                        eval->state.variant.work_group_size, device->name, device->platform_version,
                        device->driver_version, computed[worst_at], reference[worst_at],
                        worst_at / components, worst_at % components);
    }
    return remember(record, key);
}
