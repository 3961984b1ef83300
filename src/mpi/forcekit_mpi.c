/* forcekit over MPI (include/forcekit/forcekit_mpi.h, issue #20). Uses only forcekit.h's API.
 * Two schemes, chosen by the pair loop the evaluation runs:
 *   allgather (all-pairs, and cells and lists without a periodic box): every rank holds all
 *     particles and computes its share of them: exactly its own slice where the loop's shares are
 *     particle ranges (fk_eval_set_share_range), so that its results need no moving; with cells,
 *     a range of cells (fk_eval_set_share), the results OR'ed across the ranks.
 *   spatial (cells and neighbour lists in a periodic box): rank r owns the slab
 *     [L r / P, L (r + 1) / P) along z; each rank sends every particle of its slice to the rank
 *     whose slab holds it and to those whose slab lies within the halo width (cutoff + skin, plus
 *     a margin) of it (MPI_Alltoallv), each rank evaluates its slab and halo on its device, in
 *     the order of the global indices, and sends the results of the particles it owns back to
 *     the ranks whose slices hold them. The sets are resident: until some particle has moved
 *     more than half the margin along z, an update sends only the positions, along the same
 *     routes, and the device's particles are updated, not set again (as with Verlet lists).
 *     The fixed64 scale is chosen together (fk_eval_get_bound, an MPI_MAX, fk_eval_set_bound
 *     with the system's N).
 *
 * Every collective entry point is a sequence of phases that every rank runs in the same order
 * whatever happened locally: local work, then `agree` (one MPI_Allreduce of the lowest failing
 * rank, and on failure a broadcast of its status and message), then communication only when all
 * succeeded. So a rank that fails never leaves the others inside a collective it skipped. */
#include "forcekit/forcekit_mpi.h"

#include "mpi/agree.h"
#include "mpi/spatial.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Header-only, as in src/core/programs/cache.c: the digests of replicated input
 * (fk_mpi_eval_set_all_particles) link nothing. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#define ERROR_TEXT FK__MPI_ERROR_TEXT
/* The evaluation's calls while an fk_mpi_integrator holds its device set, or after it went and
 * before an update or set_particles gave the evaluation its own sets again. */
#define LENT_MESSAGE                                                                               \
    "%s: the local evaluation's particles are (or were last) an fk_mpi_integrator's: destroy it, " \
    "then update or set the particles"

/* Why the last fk_mpi_eval_create of this thread failed (fk_mpi_eval_last_error(NULL)). */
static _Thread_local char create_error[ERROR_TEXT];

/* The library's message for a failed forcekit call on this rank. */
static fk_status forcekit_fail(fk_mpi_eval *m, fk_status status, const char *call)
{
    return fk__mpi_local_fail(&m->part, status, "%s: %s: %s", call, fk_status_string(status),
                              fk_context_last_error(m->context));
}

int fk_mpi_local_rank(MPI_Comm comm)
{
    MPI_Comm node;
    int rank = 0;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return 0;
    MPI_Comm_rank(node, &rank);
    MPI_Comm_free(&node);
    return rank;
}

/* The spatial scheme's reach, as the rank's evaluation resolved it (fk_eval_get_reach: from
 * config.physics or the flat fields, the law's default cutoff and the default skin applied), and
 * whether it runs: cells and lists in a periodic box, without exclusions (they name particles by
 * their index in the whole system, which a rank's slab and halo renumber). The halo width is
 * cutoff + skin, which covers every particle within the cutoff of an owned one and what the lists
 * and cells examine, plus the resident sets' margin: the default skin's width. A particle that
 * moved less than half of it along z since the sets were built cannot have entered another rank's
 * halo or slab from outside that rank's set (a rank's set reaches halo + margin beyond its slab).
 */
static int spatial_reach(fk_mpi_eval *m, const fk_eval_config *config, int cell_grid)
{
    double cutoff = 0, skin = 0, box[3] = {0, 0, 0};
    if (fk_eval_get_reach(m->eval, &cutoff, &skin, box) != FK_OK)
        return 0;
    const int periodic = box[0] > 0 && box[1] > 0 && box[2] > 0;
    const int excluded = config->physics && config->physics->exclusion_count > 0;
    if (!periodic || excluded || fk_eval_force_components(m->eval) != 3 || !cell_grid)
        return 0;
    m->box_length = box[2];
    m->margin = FK_DEFAULT_SKIN_FRACTION * cutoff;
    m->halo = cutoff + skin + m->margin;
    return 1;
}

/* Whether the ranks keep the data-scaled accumulator's scale across updates: FK_SCALE_KEEP, and
 * FK_SCALE_AUTO's fixed64, as one evaluation of the whole system would (forcekit.h); a compute
 * that overflows the kept scale is redone by every rank together (fk_mpi_eval_compute). */
static int keeps_scale(const fk_eval_config *config)
{
    if (config->scale_policy == FK_SCALE_KEEP)
        return 1;
    if (config->scale_policy != FK_SCALE_AUTO)
        return 0;
    const char *accum = config->accum          ? config->accum
                        : config->reproducible ? "fixed64" /* as fk_eval_create chooses */
                                               : "float";
    return strcmp(accum, "fixed64") == 0;
}

static fk_status create_local(fk_mpi_eval *m, const fk_eval_config *config)
{
    fk_eval_config local = *config;
    if (local.struct_size == 0)
        local.struct_size = sizeof local;
    /* the local parts are coordinated, where AUTO would choose at every update: the ranks'
     * policy, resolved here */
    local.scale_policy = keeps_scale(config) ? FK_SCALE_KEEP : FK_SCALE_EACH_UPLOAD;
    /* Shares need every particle's results on one part: full lists on every rank count, so
     * that P = 1 runs what P = 4 runs. The ranks choose the scale together. */
    local.neighbor_lists = FK_NEIGHBOR_LISTS_FULL;
    local.coordinated_scale = 1;
    fk_status status = fk_eval_create(m->context, &local, &m->eval);
    if (status != FK_OK)
        return forcekit_fail(m, status, "fk_eval_create");
    int writes_pairs = 0, cell_grid = 0, shares_cells = 0;
    fk_eval_get_loop_traits(m->eval, &writes_pairs, &cell_grid, &shares_cells);
    if (writes_pairs) {
        /* A loop that writes both particles of a pair (Newton's third law) cannot be shared:
         * the reference loop, all-pairs (the public default, every law and share), instead. */
        fk_eval_destroy(m->eval);
        m->eval = NULL;
        local.algorithm = FK_ALGORITHM_ALL_PAIRS;
        status = fk_eval_create(m->context, &local, &m->eval);
        if (status != FK_OK)
            return forcekit_fail(m, status,
                                 "fk_eval_create (all-pairs for a loop that writes pairs)");
        fk_eval_get_loop_traits(m->eval, NULL, &cell_grid, &shares_cells);
    }
    m->spatial = spatial_reach(m, config, cell_grid);
    if (m->spatial) {
        m->double_results = config->result_type == FK_RESULT_DOUBLE;
    } else if (shares_cells) {
        status = fk_eval_set_share(m->eval, m->part.rank, m->part.size);
        if (status != FK_OK)
            return forcekit_fail(m, status, "fk_eval_set_share");
    } else {
        m->slice_share = 1; /* set with the slices (set_particles) */
    }
    m->components = fk_eval_force_components(m->eval);
    const fk_kernel_info *law = config->kernel ? fk_kernel_find(config->kernel) : NULL;
    m->molecular = law && law->pair_parameters > 0;
    m->potential = config->potential != 0;
    m->keep_scale = keeps_scale(config);
    return FK_OK;
}

/* Digests of what the ranks must hold the same of: every byte that defines the computation, and
 * which optional parts are present (an absent array and an array of zeros differ). */
static void digest_bytes(XXH3_state_t *state, const void *bytes, size_t size)
{
    const unsigned char present = bytes != NULL;
    XXH3_64bits_update(state, &present, 1);
    if (bytes && size)
        XXH3_64bits_update(state, bytes, size);
}

static void digest_string(XXH3_state_t *state, const char *text)
{
    digest_bytes(state, text, text ? strlen(text) + 1 : 0);
}

static uint64_t particles_digest(const fk_particles *all)
{
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    const unsigned long long count = all->count;
    XXH3_64bits_update(&state, &count, sizeof count);
    digest_bytes(&state, all->position, 3 * all->count * sizeof *all->position);
    digest_bytes(&state, all->mass, all->count * sizeof *all->mass);
    digest_bytes(&state, all->velocity, 3 * all->count * sizeof *all->velocity);
    digest_bytes(&state, all->type, all->count * sizeof *all->type);
    return XXH3_64bits_digest(&state);
}

/* The physics and the choices every rank must share: the force law and accumulator, softening,
 * cutoff, Coulomb constant, the law's parameters, box, exclusion mode, pair loop, skin, result
 * type, scale policy, positions, and config.physics (with its pair table and exclusions) when
 * given. Tuning choices (unroll, work-group size, tiling, j-splits, lanes) may differ with the
 * ranks' devices and are left out; so is expected_count. */
static uint64_t config_digest(const fk_eval_config *given)
{
    fk_eval_config c;
    memset(&c, 0, sizeof c);
    const size_t size =
        given->struct_size && given->struct_size < sizeof c ? given->struct_size : sizeof c;
    memcpy(&c, given, size);
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    digest_string(&state, c.kernel);
    digest_string(&state, c.accum);
    const int ints[] = {c.potential,   c.reproducible, c.exclusion_mode, c.algorithm,
                        c.result_type, c.scale_policy, c.positions};
    const double doubles[] = {c.eps, c.cutoff, c.coulomb, c.skin};
    XXH3_64bits_update(&state, ints, sizeof ints);
    XXH3_64bits_update(&state, doubles, sizeof doubles);
    XXH3_64bits_update(&state, c.parameters, sizeof c.parameters);
    XXH3_64bits_update(&state, c.box, sizeof c.box);
    digest_bytes(&state, c.physics, 0);
    if (c.physics) {
        const fk_physics *p = c.physics;
        const double values[] = {p->eps, p->cutoff, p->coulomb, p->box[0], p->box[1], p->box[2]};
        XXH3_64bits_update(&state, values, sizeof values);
        XXH3_64bits_update(&state, p->parameters, sizeof p->parameters);
        const fk_pair_table *table = p->pair_table;
        digest_bytes(&state, table, 0);
        if (table && table->types) {
            const size_t pairs = (size_t)table->types * table->types;
            const unsigned long long types = table->types;
            XXH3_64bits_update(&state, &types, sizeof types);
            const fk_kernel_info *info = c.kernel ? fk_kernel_find(c.kernel) : NULL;
            const size_t per = info ? info->pair_parameters : 0;
            digest_bytes(&state, table->values, pairs * per * sizeof *table->values);
            digest_bytes(&state, table->present, pairs * sizeof *table->present);
        }
        const unsigned long long exclusions = p->exclusions ? p->exclusion_count : 0;
        XXH3_64bits_update(&state, &exclusions, sizeof exclusions);
        digest_bytes(&state, p->exclusions, 2 * exclusions * sizeof *p->exclusions);
    }
    return XXH3_64bits_digest(&state);
}

fk_status fk_mpi_eval_create(fk_context *context, const fk_eval_config *config, MPI_Comm comm,
                             fk_mpi_eval **out)
{
    if (!out)
        return FK_ERR_INVALID_ARGUMENT;
    *out = NULL;
    fk_mpi_eval *m = calloc(1, sizeof *m);
    create_error[0] = '\0';
    fk_status status = fk__mpi_part_open(m ? &m->part : NULL, comm, create_error);
    if (status != FK_OK) {
        free(m);
        return status;
    }
    m->context = context;
    if (!context || !config)
        status = fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT,
                                    "fk_mpi_eval_create: NULL %s", context ? "config" : "context");
    else
        status = create_local(m, config);
    status = fk__mpi_agree(&m->part, status);
    /* Every rank must evaluate the same physics: a rank with another box or cutoff would compute
     * its share of another system, silently. */
    if (status == FK_OK)
        status = fk__mpi_agree_replicated(&m->part, "fk_mpi_eval_create", "config", 0,
                                          config_digest(config));
    if (status == FK_OK) {
        /* Every rank must run the same loop, or the shares would not tile the particles. */
        fk_variant variant;
        fk_eval_get_variant(m->eval, &variant);
        int lowest = variant.algorithm, highest = variant.algorithm;
        MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, m->part.comm);
        MPI_Allreduce(MPI_IN_PLACE, &highest, 1, MPI_INT, MPI_MAX, m->part.comm);
        if (lowest != highest)
            status = fk__mpi_everyone_fails(
                &m->part, FK_ERR_UNSUPPORTED,
                "the ranks' devices chose different pair loops (%s and %s): "
                "set config.algorithm",
                fk_algorithm_name((fk_algorithm)lowest), fk_algorithm_name((fk_algorithm)highest));
    }
    if (status != FK_OK) {
        memcpy(create_error, m->part.error, sizeof create_error);
        fk_mpi_eval_destroy(m);
        return status;
    }
    m->counts = calloc((size_t)m->part.size, sizeof *m->counts);
    m->firsts = calloc((size_t)m->part.size, sizeof *m->firsts);
    m->scaled_counts = calloc((size_t)m->part.size, sizeof *m->scaled_counts);
    m->scaled_firsts = calloc((size_t)m->part.size, sizeof *m->scaled_firsts);
    m->result_counts = calloc((size_t)m->part.size, sizeof *m->result_counts);
    m->result_firsts = calloc((size_t)m->part.size, sizeof *m->result_firsts);
    status = m->counts && m->firsts && m->scaled_counts && m->scaled_firsts && m->result_counts &&
                     m->result_firsts
                 ? FK_OK
                 : fk__mpi_local_fail(&m->part, FK_ERR_HOST_MEMORY, "out of host memory");
    status = fk__mpi_agree(&m->part, status);
    if (status != FK_OK) {
        memcpy(create_error, m->part.error, sizeof create_error);
        fk_mpi_eval_destroy(m);
        return status;
    }
    *out = m;
    return FK_OK;
}

static void release_routes(fk_mpi_eval *m)
{
    free(m->send_counts);
    free(m->send_displs);
    free(m->recv_counts);
    free(m->recv_displs);
    free(m->send_index);
    free(m->rebuild_z);
    free(m->send_positions);
    m->send_positions = NULL;
    m->update_to = NULL;
    m->result_forces = m->result_potentials = NULL;
    m->send_counts = m->send_displs = m->recv_counts = m->recv_displs = NULL;
    m->send_index = NULL;
    m->rebuild_z = NULL;
    m->send_total = 0;
    m->resident = 0;
}

static void release_local(fk_mpi_eval *m)
{
    release_routes(m);
    free(m->local_index);
    free(m->local_position);
    free(m->local_mass);
    free(m->local_type);
    free(m->local_owned);
    free(m->local_forces);
    free(m->local_potentials);
    m->local_index = m->local_position = m->local_mass = NULL;
    m->local_type = NULL;
    m->local_owned = NULL;
    m->local_forces = m->local_potentials = NULL;
    m->local_n = 0;
}

static void release_system(fk_mpi_eval *m)
{
    free(m->position);
    free(m->velocity);
    free(m->mass);
    free(m->type);
    free(m->forces);
    free(m->potentials);
    free(m->slice_mass);
    free(m->slice_type);
    m->position = m->velocity = m->mass = m->slice_mass = NULL;
    m->gather_to = NULL;
    m->type = m->slice_type = NULL;
    m->forces = m->potentials = NULL;
    release_local(m);
    m->n = 0;
    m->computed = 0;
    m->have_bound = 0;
}

void fk_mpi_eval_destroy(fk_mpi_eval *m)
{
    if (!m)
        return;
    release_system(m);
    fk_eval_destroy(m->eval);
    free(m->counts);
    free(m->firsts);
    free(m->scaled_counts);
    free(m->scaled_firsts);
    free(m->result_counts);
    free(m->result_firsts);
    fk__mpi_part_close(&m->part);
    free(m);
}

static fk_status upload(fk_mpi_eval *m, const double *position, const double *velocity, int first);

/* Gathers this rank's slice of `per` values per particle into all (every rank's slices in rank
 * order). */
static void gather_doubles(fk_mpi_eval *m, const double *mine, double *all, int per)
{
    const int *counts = per == 3 ? m->scaled_counts : m->counts;
    const int *firsts = per == 3 ? m->scaled_firsts : m->firsts;
    const double start = MPI_Wtime();
    MPI_Allgatherv(mine, counts[m->part.rank], MPI_DOUBLE, all, counts, firsts, MPI_DOUBLE,
                   m->part.comm);
    m->part.figures.communication_seconds += MPI_Wtime() - start;
}

fk_status fk_mpi_eval_set_particles(fk_mpi_eval *m, const fk_particles *local)
{
    if (!m)
        return FK_ERR_INVALID_ARGUMENT;
    m->computed = 0;
    m->replicated = 0;
    fk_status status = FK_OK;
    unsigned long long count = 0;
    if (!local)
        status =
            fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT, "set_particles: NULL particles");
    else if (local->count && !local->position)
        status =
            fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT, "set_particles: NULL positions");
    else if (local->count > (size_t)INT_MAX / 3)
        status = fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT,
                                    "set_particles: %zu particles on one rank (at most %d)",
                                    local->count, INT_MAX / 3);
    else if (m->lent == 1)
        status = fk__mpi_local_fail(&m->part, FK_ERR_STATE, LENT_MESSAGE, "set_particles");
    else
        count = local->count;
    status = fk__mpi_agree(&m->part, status);
    if (status != FK_OK)
        return status;

    /* The slices and which optional arrays they carry: a rank without particles has no say. */
    unsigned long long *all_counts = malloc((size_t)m->part.size * sizeof *all_counts);
    if (!all_counts)
        return fk__mpi_agree(
            &m->part, fk__mpi_local_fail(&m->part, FK_ERR_HOST_MEMORY, "out of host memory"));
    MPI_Allgather(&count, 1, MPI_UNSIGNED_LONG_LONG, all_counts, 1, MPI_UNSIGNED_LONG_LONG,
                  m->part.comm);
    /* mass, velocity, type: [0 .. 2] present, [3 .. 5] absent, on every rank with particles */
    int flags[6] = {1, 1, 1, 1, 1, 1};
    if (count) {
        const void *arrays[3] = {local->mass, local->velocity, local->type};
        for (int k = 0; k < 3; ++k) {
            flags[k] = arrays[k] != NULL;
            flags[3 + k] = arrays[k] == NULL;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, flags, 6, MPI_INT, MPI_MIN, m->part.comm);
    const int *present = flags, *absent = flags + 3;
    unsigned long long total = 0;
    for (int r = 0; r < m->part.size; ++r)
        total += all_counts[r];
    const char *names[3] = {"masses", "velocities", "types"};
    for (int k = 0; k < 3 && status == FK_OK; ++k)
        if (!present[k] && !absent[k])
            status = fk__mpi_everyone_fails(&m->part, FK_ERR_INVALID_ARGUMENT,
                                            "set_particles: some ranks give %s and others do not",
                                            names[k]);
    if (status == FK_OK && total == 0)
        status = fk__mpi_everyone_fails(&m->part, FK_ERR_INVALID_ARGUMENT,
                                        "set_particles: no particles on any rank");
    if (status == FK_OK && total > (unsigned long long)INT_MAX / 3)
        status = fk__mpi_everyone_fails(&m->part, FK_ERR_INVALID_ARGUMENT,
                                        "set_particles: %llu particles: at most %d over MPI", total,
                                        INT_MAX / 3);
    if (status != FK_OK) {
        free(all_counts);
        return status;
    }
    int first = 0;
    for (int r = 0; r < m->part.size; ++r) {
        m->counts[r] = (int)all_counts[r];
        m->firsts[r] = first;
        m->scaled_counts[r] = 3 * m->counts[r];
        m->scaled_firsts[r] = 3 * first;
        m->result_counts[r] = (int)m->components * m->counts[r];
        m->result_firsts[r] = (int)m->components * first;
        first += m->counts[r];
    }
    free(all_counts);
    /* absent[k]: no rank with particles gives the array (and they agree, checked above). */
    m->has_mass = !absent[0];
    m->has_velocity = !absent[1];
    m->has_type = !absent[2];

    release_system(m);
    const size_t n = (size_t)total, mine = (size_t)m->counts[m->part.rank];
    int allocated = 1;
    if (m->spatial) { /* this rank's slice's charges and types travel with its positions */
        m->slice_mass = m->has_mass ? malloc((mine + 1) * sizeof *m->slice_mass) : NULL;
        m->slice_type = m->has_type ? malloc((mine + 1) * sizeof *m->slice_type) : NULL;
        allocated = (!m->has_mass || m->slice_mass) && (!m->has_type || m->slice_type);
        if (allocated && m->has_mass)
            memcpy(m->slice_mass, local->mass, mine * sizeof *m->slice_mass);
        if (allocated && m->has_type)
            memcpy(m->slice_type, local->type, mine * sizeof *m->slice_type);
    } else {
        m->position = malloc(3 * n * sizeof *m->position);
        m->velocity = m->has_velocity ? malloc(3 * n * sizeof *m->velocity) : NULL;
        m->mass = m->has_mass ? malloc(n * sizeof *m->mass) : NULL;
        m->type = m->has_type ? malloc(n * sizeof *m->type) : NULL;
        allocated = m->position && (!m->has_velocity || m->velocity) && (!m->has_mass || m->mass) &&
                    (!m->has_type || m->type);
    }
    m->forces = malloc(n * m->components * sizeof *m->forces);
    m->potentials = m->potential ? malloc(n * sizeof *m->potentials) : NULL;
    allocated = allocated && m->forces && (!m->potential || m->potentials);
    status = fk__mpi_agree(
        &m->part,
        allocated ? FK_OK : fk__mpi_local_fail(&m->part, FK_ERR_HOST_MEMORY, "out of host memory"));
    if (status != FK_OK) {
        release_system(m);
        return status;
    }
    if (!m->spatial) { /* the charges and types, once */
        if (m->has_mass)
            gather_doubles(m, local->mass, m->mass, 1);
        if (m->has_type) {
            const double start = MPI_Wtime();
            MPI_Allgatherv(local->type, m->counts[m->part.rank], MPI_INT, m->type, m->counts,
                           m->firsts, MPI_INT, m->part.comm);
            m->part.figures.communication_seconds += MPI_Wtime() - start;
        }
    }
    m->n = n;
    m->part.figures.particles = mine;
    if (m->slice_share) {
        const size_t first_index = (size_t)m->firsts[m->part.rank];
        status = fk_eval_set_share_range(m->eval, first_index, first_index + mine);
        status = fk__mpi_agree(&m->part, status == FK_OK
                                             ? FK_OK
                                             : forcekit_fail(m, status, "fk_eval_set_share_range"));
        if (status != FK_OK) {
            release_system(m);
            return status;
        }
    }
    status = upload(m, local->position, local->velocity, 1);
    if (status != FK_OK)
        m->n = 0;
    else
        m->lent = 0;
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* The spatial scheme's exchange */

/* Values per particle record: global index, x, y, z, charge, type, owned by the receiver. */
#define RECORD 7

/* The ranks' displacements in particles from their counts (MPI's int displacements). */
static void displacements(const int *counts, int *displs, int ranks)
{
    int at = 0;
    for (int r = 0; r < ranks; ++r) {
        displs[r] = at;
        at += counts[r];
    }
}

/* Sends this rank's slice (positions given, charges and types kept) to the ranks whose slab or
 * halo holds each particle, fills the local arrays with what arrives, in ascending global index,
 * and keeps the routes for the updates that follow. Collective; agreed. */
static fk_status rebuild(fk_mpi_eval *m, const double *position)
{
    const int ranks = m->part.size;
    const size_t mine = (size_t)m->counts[m->part.rank], first = (size_t)m->firsts[m->part.rank];
    release_local(m);
    m->send_counts = calloc((size_t)ranks, sizeof *m->send_counts);
    m->send_displs = calloc((size_t)ranks, sizeof *m->send_displs);
    m->recv_counts = calloc((size_t)ranks, sizeof *m->recv_counts);
    m->recv_displs = calloc((size_t)ranks, sizeof *m->recv_displs);
    m->rebuild_z = malloc((mine + 1) * sizeof *m->rebuild_z);
    int *send_values = calloc((size_t)ranks, sizeof *send_values);
    int *send_value_displs = calloc((size_t)ranks, sizeof *send_value_displs);
    int *recv_values = calloc((size_t)ranks, sizeof *recv_values);
    int *recv_value_displs = calloc((size_t)ranks, sizeof *recv_value_displs);
    int *fill = calloc((size_t)ranks, sizeof *fill);
    double *send = NULL;
    fk_status status = m->send_counts && m->send_displs && m->recv_counts && m->recv_displs &&
                               m->rebuild_z && send_values && send_value_displs && recv_values &&
                               recv_value_displs && fill
                           ? FK_OK
                           : fk__mpi_local_fail(&m->part, FK_ERR_HOST_MEMORY, "out of host memory");
    size_t records = 0;
    for (size_t i = 0; status == FK_OK && i < mine; ++i) {
        const double z = fk__mpi_wrap(position[3 * i + 2], m->box_length);
        m->rebuild_z[i] = position[3 * i + 2];
        for (int r = 0; r < ranks; ++r) {
            int owned = 0;
            if (fk__mpi_slab_needs(m->box_length, m->part.size, m->halo, r, z, &owned)) {
                ++m->send_counts[r];
                ++records;
            }
        }
    }
    if (status == FK_OK && records * RECORD > (size_t)INT_MAX)
        status = fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT,
                                    "%zu particle copies to send: more than MPI's int counts hold",
                                    records);
    if (status == FK_OK) {
        send = malloc((records + 1) * RECORD * sizeof *send);
        m->send_index = malloc((records + 1) * sizeof *m->send_index);
        m->send_positions = malloc((records + 1) * 3 * sizeof *m->send_positions);
        if (!send || !m->send_index || !m->send_positions)
            status = fk__mpi_local_fail(&m->part, FK_ERR_HOST_MEMORY, "out of host memory");
    }
    if (status == FK_OK) {
        displacements(m->send_counts, m->send_displs, ranks);
        m->send_total = records;
        for (size_t i = 0; i < mine; ++i) {
            const double z = fk__mpi_wrap(position[3 * i + 2], m->box_length);
            for (int r = 0; r < ranks; ++r) {
                int owned = 0;
                if (!fk__mpi_slab_needs(m->box_length, m->part.size, m->halo, r, z, &owned))
                    continue;
                const size_t entry = (size_t)m->send_displs[r] + (size_t)fill[r]++;
                m->send_index[entry] = i;
                double *record = send + entry * RECORD;
                record[0] = (double)(first + i); /* exact: N < 2^31 */
                record[1] = position[3 * i];
                record[2] = position[3 * i + 1];
                record[3] = position[3 * i + 2];
                record[4] = m->slice_mass ? m->slice_mass[i] : 1.0;
                record[5] = m->slice_type ? (double)m->slice_type[i] : 0.0;
                record[6] = owned;
            }
        }
        for (int r = 0; r < ranks; ++r) {
            send_values[r] = m->send_counts[r] * RECORD;
            send_value_displs[r] = m->send_displs[r] * RECORD;
        }
    }
    status = fk__mpi_agree(&m->part, status);
    double *received = NULL;
    size_t arrived = 0;
    if (status == FK_OK) {
        const double start = MPI_Wtime();
        MPI_Alltoall(m->send_counts, 1, MPI_INT, m->recv_counts, 1, MPI_INT, m->part.comm);
        long long total = 0;
        for (int r = 0; r < ranks; ++r)
            total += m->recv_counts[r];
        if (total * RECORD > INT_MAX)
            status = fk__mpi_local_fail(
                &m->part, FK_ERR_INVALID_ARGUMENT,
                "%lld particles to receive: more than MPI's int counts hold", total);
        else if (!(received = malloc(((size_t)total + 1) * RECORD * sizeof *received)))
            status = fk__mpi_local_fail(&m->part, FK_ERR_HOST_MEMORY, "out of host memory");
        arrived = (size_t)total;
        status = fk__mpi_agree(&m->part, status);
        if (status == FK_OK) {
            displacements(m->recv_counts, m->recv_displs, ranks);
            for (int r = 0; r < ranks; ++r) {
                recv_values[r] = m->recv_counts[r] * RECORD;
                recv_value_displs[r] = m->recv_displs[r] * RECORD;
            }
            MPI_Alltoallv(send, send_values, send_value_displs, MPI_DOUBLE, received, recv_values,
                          recv_value_displs, MPI_DOUBLE, m->part.comm);
        }
        m->part.figures.communication_seconds += MPI_Wtime() - start;
    }
    free(send);
    free(send_values);
    free(send_value_displs);
    free(recv_values);
    free(recv_value_displs);
    free(fill);
    if (status != FK_OK) {
        free(received);
        release_local(m);
        return status;
    }
    /* The global order, within a cell the order of the loops' sums: the slices are ascending
     * ranges of global indices in rank order, and each rank sends its particles in slice order,
     * so what arrives is already ascending; the updates rely on it to land each position in its
     * slot. Checked, not assumed. */
    const size_t fc = m->components, slots = arrived + 1;
    m->local_index = malloc(slots * sizeof *m->local_index);
    m->local_position = malloc(3 * slots * sizeof *m->local_position);
    m->local_mass = malloc(slots * sizeof *m->local_mass);
    m->local_type = malloc(slots * sizeof *m->local_type);
    m->local_owned = malloc(slots);
    m->local_forces = malloc(fc * slots * sizeof *m->local_forces);
    m->local_potentials = malloc(slots * sizeof *m->local_potentials);
    if (m->local_index && m->local_position && m->local_mass && m->local_type && m->local_owned &&
        m->local_forces && m->local_potentials) {
        for (size_t k = 0; k < arrived; ++k) {
            const double *record = received + k * RECORD;
            m->local_index[k] = record[0];
            memcpy(&m->local_position[3 * k], record + 1, 3 * sizeof(double));
            m->local_mass[k] = record[4];
            m->local_type[k] = (int)record[5];
            m->local_owned[k] = record[6] != 0;
            if (k > 0 && !(m->local_index[k - 1] < m->local_index[k]) && status == FK_OK)
                status = fk__mpi_local_fail(&m->part, FK_ERR_STATE,
                                            "the halo exchange arrived out of order (index %.0f "
                                            "after %.0f)",
                                            m->local_index[k], m->local_index[k - 1]);
        }
        m->local_n = arrived;
        m->resident = status == FK_OK;
    } else {
        status = fk__mpi_local_fail(&m->part, FK_ERR_HOST_MEMORY, "out of host memory");
    }
    free(received);
    if (status != FK_OK)
        release_local(m);
    status = fk__mpi_agree(&m->part, status);
    if (status == FK_OK)
        m->rebuilds++;
    return status;
}

/* An update's positions along the routes of the last build, packed in one pass that also
 * checks how far each particle has moved along z since then: this rank's own entries go straight
 * to their local slots in update_to (with their ownership: the rank whose slab holds a particle
 * now owns it, and holds it in its set), the others into the send buffer. Returns whether some
 * particle moved more than half the margin (NaN counts as moved). Local. */
static int pack_positions(fk_mpi_eval *m, const double *position)
{
    const int me = m->part.rank;
    const double half_margin = 0.5 * m->margin, length = m->box_length;
    double lo, hi;
    fk__mpi_slab(m->box_length, m->part.size, me, &lo, &hi);
    const size_t own_from = (size_t)m->send_displs[me], own_count = (size_t)m->send_counts[me];
    double *own_to = m->update_to + 3 * (size_t)m->recv_displs[me];
    unsigned char *own_owned = m->local_owned + (size_t)m->recv_displs[me];
    int moved = 0;
    for (size_t e = 0; e < m->send_total; ++e) {
        const size_t i = m->send_index[e];
        const double *x = position + 3 * i;
        moved |= !(fabs(x[2] - m->rebuild_z[i]) <= half_margin);
        const size_t own = e - own_from;
        double *to = own < own_count ? own_to + 3 * own : m->send_positions + 3 * e;
        to[0] = x[0];
        to[1] = x[1];
        to[2] = x[2];
        if (own < own_count) {
            const double z = fk__mpi_wrap(x[2], length);
            own_owned[own] = z >= lo && z < hi;
        }
    }
    return moved;
}

/* Must the sets be built again: a rank without resident sets (set_particles, a failure), or a
 * particle that moved more than half the margin along z since they were built? Packs the update
 * on the way (pack_positions). Collective: every rank takes the same path. */
static int build_again(fk_mpi_eval *m, const double *position, int first)
{
    int moved = first || !m->resident || pack_positions(m, position);
    int any = 0;
    const double start = MPI_Wtime();
    MPI_Allreduce(&moved, &any, 1, MPI_INT, MPI_MAX, m->part.comm);
    m->part.figures.communication_seconds += MPI_Wtime() - start;
    return any;
}

/* The packed positions to the ranks whose sets hold them, straight into update_to (what arrives
 * is in the local order), and the ownership of what arrived. Collective. */
static fk_status send_positions(fk_mpi_eval *m)
{
    const int ranks = m->part.size, me = m->part.rank;
    int *counts = calloc(4 * (size_t)ranks, sizeof *counts);
    fk_status status = fk__mpi_agree(
        &m->part,
        counts ? FK_OK : fk__mpi_local_fail(&m->part, FK_ERR_HOST_MEMORY, "out of host memory"));
    if (status != FK_OK) {
        free(counts);
        return status;
    }
    int *send_values = counts, *send_displs = counts + ranks;
    int *recv_values = counts + 2 * ranks, *recv_displs = counts + 3 * ranks;
    for (int r = 0; r < ranks; ++r) {
        const int self = r == me;
        send_values[r] = self ? 0 : 3 * m->send_counts[r];
        send_displs[r] = 3 * m->send_displs[r];
        recv_values[r] = self ? 0 : 3 * m->recv_counts[r];
        recv_displs[r] = 3 * m->recv_displs[r];
    }
    const double start = MPI_Wtime();
    MPI_Alltoallv(m->send_positions, send_values, send_displs, MPI_DOUBLE, m->update_to,
                  recv_values, recv_displs, MPI_DOUBLE, m->part.comm);
    m->part.figures.communication_seconds += MPI_Wtime() - start;
    const double length = m->box_length;
    double lo, hi;
    fk__mpi_slab(m->box_length, m->part.size, me, &lo, &hi);
    for (int r = 0; r < ranks; ++r) {
        if (r == me)
            continue; /* owned set while packing */
        const size_t from = (size_t)m->recv_displs[r], end = from + (size_t)m->recv_counts[r];
        for (size_t k = from; k < end; ++k) {
            const double z = fk__mpi_wrap(m->update_to[3 * k + 2], length);
            m->local_owned[k] = z >= lo && z < hi;
        }
    }
    free(counts);
    return FK_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Both schemes */

/* The scale of the data-scaled accumulators, on every rank the one a single device would choose:
 * the maximum of the bounds the ranks measured (each term is measured on some rank: the spatial
 * scheme's owners see all their terms; the allgather scheme measures them all everywhere), with
 * the system's N. fresh: a new bound (set_particles, a rescale, every update under
 * FK_SCALE_EACH_UPLOAD); otherwise the kept one. Collective; agreed. */
static fk_status choose_scale(fk_mpi_eval *m, int fresh)
{
    const int evaluates = !m->spatial || m->local_n > 0;
    double measured[2] = {0, 0}, combined[2] = {0, 0};
    if (evaluates)
        fk_eval_get_bound(m->eval, &measured[0], &measured[1]);
    MPI_Allreduce(measured, combined, 2, MPI_DOUBLE, MPI_MAX, m->part.comm);
    if (fresh || !m->keep_scale || !m->have_bound) {
        m->bound[0] = combined[0];
        m->bound[1] = combined[1];
        m->have_bound = 1;
    }
    fk_status status = FK_OK;
    if (evaluates) {
        status = fk_eval_set_bound(m->eval, m->bound[0], m->bound[1], m->n);
        if (status != FK_OK)
            status = forcekit_fail(m, status, "fk_eval_set_bound");
    }
    return fk__mpi_agree(&m->part, status);
}

/* The particles (all, or the slab and halo) onto this rank's device. first: set_particles. */
static fk_status upload(fk_mpi_eval *m, const double *position, const double *velocity, int first)
{
    fk_status status = FK_OK;
    if (m->spatial) {
        /* The same particles on this rank's device while no particle has moved far: update
         * their positions; else new sets, set again. */
        const int again = build_again(m, position, first);
        status = again ? rebuild(m, position) : send_positions(m);
        if (status != FK_OK)
            return status;
        const fk_particles mine = {.count = m->local_n,
                                   .position = m->local_position,
                                   .mass = m->has_mass ? m->local_mass : NULL,
                                   .type = m->has_type ? m->local_type : NULL};
        const double start = MPI_Wtime();
        if (again) {
            if (m->local_n)
                status = fk_eval_set_particles(m->eval, &mine);
            /* The next updates write into the evaluation's pinned array, else the local one. */
            double *pinned = NULL;
            m->update_to =
                m->local_n && status == FK_OK && fk_eval_positions_buffer(m->eval, &pinned) == FK_OK
                    ? pinned
                    : m->local_position;
        } else if (m->local_n) {
            status = fk_eval_update_positions(m->eval, m->update_to, NULL);
        }
        m->part.figures.compute_seconds += MPI_Wtime() - start;
        if (status != FK_OK) {
            status = forcekit_fail(m, status,
                                   again ? "fk_eval_set_particles" : "fk_eval_update_positions");
            m->resident = 0; /* the device's set is not known: build again next time */
        }
    } else {
        double *to = first || !m->gather_to ? m->position : m->gather_to;
        gather_doubles(m, position, to, 3);
        if (m->has_velocity)
            gather_doubles(m, velocity, m->velocity, 3);
        const double start = MPI_Wtime();
        if (first) {
            const fk_particles all = {.count = m->n,
                                      .position = m->position,
                                      .mass = m->mass,
                                      .velocity = m->velocity,
                                      .type = m->type};
            status = fk_eval_set_particles(m->eval, &all);
            /* The next updates gather into the evaluation's pinned array, else the own one. */
            if (status != FK_OK || fk_eval_positions_buffer(m->eval, &m->gather_to) != FK_OK)
                m->gather_to = NULL;
        } else {
            status = fk_eval_update_positions(m->eval, to, m->has_velocity ? m->velocity : NULL);
            if (status != FK_OK)
                m->gather_to = NULL; /* set_particles again before the pinned array is used */
        }
        m->part.figures.compute_seconds += MPI_Wtime() - start;
        if (status != FK_OK)
            status = forcekit_fail(m, status,
                                   first ? "fk_eval_set_particles" : "fk_eval_update_positions");
    }
    status = fk__mpi_agree(&m->part, status);
    if (status != FK_OK)
        return status;
    return choose_scale(m, first);
}

fk_status fk_mpi_eval_update_positions(fk_mpi_eval *m, const double *position,
                                       const double *velocity)
{
    if (!m)
        return FK_ERR_INVALID_ARGUMENT;
    m->computed = 0;
    fk_status status = FK_OK;
    if (m->n == 0)
        status =
            fk__mpi_local_fail(&m->part, FK_ERR_STATE, "update_positions before set_particles");
    else if (m->counts[m->part.rank] && !position)
        status = fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT,
                                    "update_positions: NULL positions");
    else if (m->counts[m->part.rank] && m->has_velocity && !velocity)
        status = fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT,
                                    "update_positions: NULL velocities (the particles have them)");
    else if (m->lent == 1)
        status = fk__mpi_local_fail(&m->part, FK_ERR_STATE, LENT_MESSAGE, "update_positions");
    status = fk__mpi_agree(&m->part, status);
    if (status != FK_OK)
        return status;
    status = upload(m, position, velocity, 0);
    if (status == FK_OK)
        m->lent = 0; /* the evaluation's own sets again (built anew: not resident) */
    return status;
}

/* This rank's part of the equal split of n particles: [n r / P, n (r + 1) / P). */
static size_t equal_slice(const fk_mpi_eval *m, size_t n, size_t *first)
{
    const unsigned long long rank = (unsigned long long)m->part.rank,
                             ranks = (unsigned long long)m->part.size;
    *first = (size_t)(n * rank / ranks);
    return (size_t)(n * (rank + 1) / ranks) - *first;
}

fk_status fk_mpi_eval_set_all_particles(fk_mpi_eval *m, const fk_particles *all)
{
    if (!m)
        return FK_ERR_INVALID_ARGUMENT;
    m->computed = 0;
    m->replicated = 0;
    fk_status status = FK_OK;
    if (!all)
        status = fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT,
                                    "set_all_particles: NULL particles");
    else if (all->count && !all->position)
        status = fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT,
                                    "set_all_particles: NULL positions");
    else if (all->count > (size_t)INT_MAX / 3) /* before n r / P is formed */
        status = fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT,
                                    "set_all_particles: %zu particles: at most %d over MPI",
                                    all->count, INT_MAX / 3);
    status = fk__mpi_agree(&m->part, status);
    if (status != FK_OK)
        return status;
    /* Before any slice is taken: ranks that read different files would otherwise each pass a
     * slice of their own system, and the caller's all-N buffers would not hold the sum. */
    status = fk__mpi_agree_replicated(&m->part, "set_all_particles", "particles", all->count,
                                      particles_digest(all));
    if (status != FK_OK)
        return status;
    size_t first = 0;
    const size_t count = equal_slice(m, all->count, &first);
    const fk_particles slice = {.count = count,
                                .position = all->position + 3 * first,
                                .mass = all->mass ? all->mass + first : NULL,
                                .velocity = all->velocity ? all->velocity + 3 * first : NULL,
                                .type = all->type ? all->type + first : NULL};
    status = fk_mpi_eval_set_particles(m, &slice);
    m->replicated = status == FK_OK;
    return status;
}

fk_status fk_mpi_eval_update_all_positions(fk_mpi_eval *m, const double *position,
                                           const double *velocity)
{
    if (!m)
        return FK_ERR_INVALID_ARGUMENT;
    m->computed = 0;
    fk_status status = FK_OK;
    if (!m->replicated)
        status = fk__mpi_local_fail(&m->part, FK_ERR_STATE,
                                    "update_all_positions without a successful "
                                    "set_all_particles");
    else if (!position)
        status = fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT,
                                    "update_all_positions: NULL positions");
    else if (m->has_velocity && !velocity)
        status = fk__mpi_local_fail(&m->part, FK_ERR_INVALID_ARGUMENT,
                                    "update_all_positions: NULL velocities (the particles have "
                                    "them)");
    status = fk__mpi_agree(&m->part, status);
    if (status != FK_OK)
        return status;
    /* Ranks that integrate the same system the same way hold the same bits; a rank that drifted
     * (another restart file, another integration) is caught here, not in wrong forces. The
     * velocities count only where the particles carry them (gaj). */
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    XXH3_64bits_update(&state, position, 3 * m->n * sizeof *position);
    if (m->has_velocity)
        XXH3_64bits_update(&state, velocity, 3 * m->n * sizeof *velocity);
    status = fk__mpi_agree_replicated(&m->part, "update_all_positions", "positions", m->n,
                                      XXH3_64bits_digest(&state));
    if (status != FK_OK)
        return status;
    const size_t first = (size_t)m->firsts[m->part.rank];
    return fk_mpi_eval_update_positions(m, position + 3 * first,
                                        m->has_velocity ? velocity + 3 * first : NULL);
}

/* This rank's compute and read: allgather, all N results into forces (its share nonzero);
 * spatial, the slab and halo's into the local arrays. */
static fk_status compute_local(fk_mpi_eval *m, double *seconds)
{
    if (m->spatial && m->local_n == 0)
        return FK_OK;
    fk_status status = fk_eval_compute(m->eval, seconds);
    if (status != FK_OK)
        return forcekit_fail(m, status, "fk_eval_compute");
    if (m->spatial && m->double_results) {
        /* The decoded results where the compute left them (pinned), without a copy. */
        const void *forces = NULL, *potentials = NULL;
        if (fk_eval_results_view(m->eval, &forces, m->potential ? &potentials : NULL) == FK_OK) {
            m->result_forces = forces;
            m->result_potentials = potentials;
            return FK_OK;
        }
    }
    double *forces = m->spatial ? m->local_forces : (double *)(void *)m->forces;
    double *potentials = m->spatial ? m->local_potentials : (double *)(void *)m->potentials;
    m->result_forces = forces;
    m->result_potentials = potentials;
    status = fk_eval_read_forces(m->eval, forces); /* doubles into the bits the OR combines */
    if (status == FK_OK && m->potential)
        status = fk_eval_read_potentials(m->eval, potentials);
    if (status != FK_OK)
        return forcekit_fail(m, status, "fk_eval_read_forces");
    return FK_OK;
}

/* The slice owner of a global index: the last rank whose first is <= index. An empty slice
 * shares its first with the next rank's, which is later, so it is never the last. */
static int slice_owner(const fk_mpi_eval *m, size_t index)
{
    int lo = 0, hi = m->part.size - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if ((size_t)m->firsts[mid] <= index)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The spatial scheme: the owned particles' results to the ranks whose slices hold them. */
static fk_status return_results(fk_mpi_eval *m)
{
    const int ranks = m->part.size;
    const size_t fc = m->components, width = 1 + fc + 1;
    int *send_counts = calloc((size_t)ranks, sizeof *send_counts);
    int *send_displs = calloc((size_t)ranks, sizeof *send_displs);
    int *recv_counts = calloc((size_t)ranks, sizeof *recv_counts);
    int *recv_displs = calloc((size_t)ranks, sizeof *recv_displs);
    int *fill = calloc((size_t)ranks, sizeof *fill);
    /* Results of this rank's own slice go straight to it (most of them where slabs and slices
     * overlap); only the others travel, as records (global index, forces, potential). */
    const size_t first = (size_t)m->firsts[m->part.rank], mine = (size_t)m->counts[m->part.rank];
    const double *forces = m->result_forces, *potentials = m->result_potentials;
    size_t owned = 0, kept = 0;
    for (size_t k = 0; k < m->local_n;) {
        if (!m->local_owned[k]) {
            ++k;
            continue;
        }
        const size_t index = (size_t)m->local_index[k];
        if (index - first >= mine) {
            ++owned;
            ++k;
            continue;
        }
        /* A run of owned particles with consecutive indices in the slice: one copy. */
        size_t end = k + 1;
        while (end < m->local_n && m->local_owned[end] &&
               (size_t)m->local_index[end] == index + (end - k) && index + (end - k) - first < mine)
            ++end;
        memcpy(m->forces + index * fc, forces + k * fc, (end - k) * fc * sizeof *m->forces);
        if (m->potential)
            memcpy(m->potentials + index, potentials + k, (end - k) * sizeof *m->potentials);
        kept += end - k;
        k = end;
    }
    double *send = malloc((owned + 1) * width * sizeof *send);
    double *received = malloc((mine - (kept < mine ? kept : mine) + 1) * width * sizeof *received);
    fk_status status =
        send_counts && send_displs && recv_counts && recv_displs && fill && send && received
            ? FK_OK
            : fk__mpi_local_fail(&m->part, FK_ERR_HOST_MEMORY, "out of host memory");
    status = fk__mpi_agree(&m->part, status);
    if (status == FK_OK) {
        for (size_t k = 0; owned && k < m->local_n; ++k)
            if (m->local_owned[k] && (size_t)m->local_index[k] - first >= mine)
                send_counts[slice_owner(m, (size_t)m->local_index[k])] += (int)width;
        int at = 0;
        for (int r = 0; r < ranks; ++r) {
            send_displs[r] = at;
            at += send_counts[r];
        }
        for (size_t k = 0; owned && k < m->local_n; ++k) {
            if (!m->local_owned[k] || (size_t)m->local_index[k] - first < mine)
                continue;
            const int r = slice_owner(m, (size_t)m->local_index[k]);
            double *record = send + send_displs[r] + fill[r];
            fill[r] += (int)width;
            record[0] = m->local_index[k];
            memcpy(record + 1, forces + k * fc, fc * sizeof *record);
            record[1 + fc] = m->potential ? potentials[k] : 0.0;
        }
        const double start = MPI_Wtime();
        MPI_Alltoall(send_counts, 1, MPI_INT, recv_counts, 1, MPI_INT, m->part.comm);
        int total = 0;
        for (int r = 0; r < ranks; ++r) {
            recv_displs[r] = total;
            total += recv_counts[r];
        }
        MPI_Alltoallv(send, send_counts, send_displs, MPI_DOUBLE, received, recv_counts,
                      recv_displs, MPI_DOUBLE, m->part.comm);
        m->part.figures.communication_seconds += MPI_Wtime() - start;
        /* Every particle of the slice arrives exactly once, from the rank whose slab holds it
         * (this one's own kept above). */
        const size_t arrived = (size_t)total / width;
        if (kept > mine || arrived != mine - kept)
            status =
                fk__mpi_local_fail(&m->part, FK_ERR_STATE,
                                   "%zu results arrived for a slice of %zu particles (a position "
                                   "outside the slabs?)",
                                   arrived + kept, mine);
        for (size_t k = 0; status == FK_OK && k < arrived; ++k) {
            const double *record = received + k * width;
            const size_t index = (size_t)record[0] - first;
            memcpy(m->forces + (first + index) * fc, record + 1, fc * sizeof(double));
            if (m->potential)
                memcpy(m->potentials + first + index, record + 1 + fc, sizeof(double));
        }
        status = fk__mpi_agree(&m->part, status);
    }
    free(send_counts);
    free(send_displs);
    free(recv_counts);
    free(recv_displs);
    free(fill);
    free(send);
    free(received);
    return status;
}

fk_status fk_mpi_eval_compute(fk_mpi_eval *m, double *seconds)
{
    if (!m)
        return FK_ERR_INVALID_ARGUMENT;
    m->computed = 0;
    m->gathered = 0;
    double device = 0;
    double start = MPI_Wtime();
    fk_status status =
        !m->n     ? fk__mpi_local_fail(&m->part, FK_ERR_STATE, "compute before set_particles")
        : m->lent ? fk__mpi_local_fail(&m->part, FK_ERR_STATE, LENT_MESSAGE, "compute")
                  : compute_local(m, &device);
    m->part.figures.compute_seconds += MPI_Wtime() - start;
    /* FK_SCALE_KEEP: when a compute on any rank left the kept scale's range, every rank chooses
     * a new scale from the current positions and computes again, once, as one device would. */
    int overflowed = status == FK_ERR_OVERFLOW, any = 0;
    MPI_Allreduce(&overflowed, &any, 1, MPI_INT, MPI_MAX, m->part.comm);
    if (any && m->keep_scale) {
        m->part.figures.rescales++;
        m->part.local_error[0] = '\0';
        status = FK_OK;
        start = MPI_Wtime();
        if (!m->spatial || m->local_n > 0) {
            status = fk_eval_rescale(m->eval);
            if (status != FK_OK)
                status = forcekit_fail(m, status, "fk_eval_rescale");
        }
        m->part.figures.compute_seconds += MPI_Wtime() - start;
        status = fk__mpi_agree(&m->part, status);
        if (status == FK_OK)
            status = choose_scale(m, 1);
        if (status != FK_OK)
            return status;
        start = MPI_Wtime();
        status = compute_local(m, &device);
        m->part.figures.compute_seconds += MPI_Wtime() - start;
    }
    status = fk__mpi_agree(&m->part, status);
    if (status != FK_OK)
        return status;
    if (!m->spatial || m->local_n > 0)
        m->part.figures.pairs += fk_eval_share_pairs(m->eval);
    if (m->spatial) {
        status = return_results(m);
        if (status != FK_OK)
            return status;
    } else if (!m->slice_share) {
        /* Cells: each particle's results are nonzero on one rank only, all bits zero elsewhere:
         * the OR is that rank's bits exactly, on every rank count. Each rank receives its slice's
         * (read_all gathers the others, as the spatial scheme does): half the bytes of an
         * allreduce for a caller that reads only its slice. In place, the slice arrives at the
         * start of the buffer. (With slice shares each rank computed its own slice: nothing to
         * move.) */
        start = MPI_Wtime();
        const size_t fc = m->components, first = (size_t)m->firsts[m->part.rank];
        const size_t mine = (size_t)m->counts[m->part.rank];
        MPI_Reduce_scatter(MPI_IN_PLACE, m->forces, m->result_counts, MPI_UINT64_T, MPI_BOR,
                           m->part.comm);
        memmove(m->forces + first * fc, m->forces, mine * fc * sizeof *m->forces);
        if (m->potential) {
            MPI_Reduce_scatter(MPI_IN_PLACE, m->potentials, m->counts, MPI_UINT64_T, MPI_BOR,
                               m->part.comm);
            memmove(m->potentials + first, m->potentials, mine * sizeof *m->potentials);
        }
        m->part.figures.communication_seconds += MPI_Wtime() - start;
    }
    if (seconds)
        *seconds = device;
    m->computed = 1;
    return FK_OK;
}

static fk_status read_results(fk_mpi_eval *m, const uint64_t *from, size_t per, int all,
                              double *out, const char *what)
{
    if (!m || !out)
        return FK_ERR_INVALID_ARGUMENT;
    if (!m->computed)
        return fk__mpi_everyone_fails(&m->part, FK_ERR_STATE, "%s before a successful compute",
                                      what);
    if (!from)
        return fk__mpi_everyone_fails(&m->part, FK_ERR_STATE, "%s: config.potential was not set",
                                      what);
    const size_t first = all ? 0 : (size_t)m->firsts[m->part.rank];
    const size_t count = all ? m->n : (size_t)m->counts[m->part.rank];
    memcpy(out, from + first * per, count * per * sizeof *out);
    return FK_OK;
}

/* After a compute each rank holds only its slice: gather every slice (collective). */
static void gather_results(fk_mpi_eval *m)
{
    if (m->gathered || !m->computed)
        return;
    const double start = MPI_Wtime();
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, m->forces, m->result_counts,
                   m->result_firsts, MPI_UINT64_T, m->part.comm);
    if (m->potential)
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, m->potentials, m->counts, m->firsts,
                       MPI_UINT64_T, m->part.comm);
    m->part.figures.communication_seconds += MPI_Wtime() - start;
    m->gathered = 1;
}

fk_status fk_mpi_eval_read_forces(fk_mpi_eval *m, double *forces)
{
    return read_results(m, m ? m->forces : NULL, m ? m->components : 0, 0, forces, "read_forces");
}

fk_status fk_mpi_eval_read_potentials(fk_mpi_eval *m, double *potentials)
{
    return read_results(m, m ? m->potentials : NULL, 1, 0, potentials, "read_potentials");
}

fk_status fk_mpi_eval_read_all_forces(fk_mpi_eval *m, double *forces)
{
    if (m)
        gather_results(m);
    return read_results(m, m ? m->forces : NULL, m ? m->components : 0, 1, forces,
                        "read_all_forces");
}

fk_status fk_mpi_eval_read_all_potentials(fk_mpi_eval *m, double *potentials)
{
    if (m)
        gather_results(m);
    return read_results(m, m ? m->potentials : NULL, 1, 1, potentials, "read_all_potentials");
}

size_t fk_mpi_eval_rebuilds(const fk_mpi_eval *m)
{
    return m ? m->rebuilds : 0;
}

const char *fk_mpi_eval_scheme(const fk_mpi_eval *m)
{
    return !m ? NULL : m->spatial ? "spatial" : "allgather";
}

fk_eval *fk_mpi_eval_local(fk_mpi_eval *m)
{
    return m ? m->eval : NULL;
}

size_t fk_mpi_eval_count(const fk_mpi_eval *m)
{
    return m ? m->n : 0;
}

size_t fk_mpi_eval_slice(const fk_mpi_eval *m, size_t *first)
{
    if (first)
        *first = m && m->n ? (size_t)m->firsts[m->part.rank] : 0;
    return m && m->n ? (size_t)m->counts[m->part.rank] : 0;
}

const char *fk_mpi_eval_last_error(const fk_mpi_eval *m)
{
    return m ? m->part.error : create_error;
}

fk_status fk_mpi_eval_figures(fk_mpi_eval *m, int root, fk_mpi_rank_figures *figures)
{
    return m ? fk__mpi_gather_figures(&m->part, root, figures) : FK_ERR_INVALID_ARGUMENT;
}

void fk_mpi_eval_reset_figures(fk_mpi_eval *m)
{
    if (!m)
        return;
    const size_t particles = m->part.figures.particles;
    memset(&m->part.figures, 0, sizeof m->part.figures);
    m->part.figures.rank = m->part.rank;
    m->part.figures.particles = particles;
}
