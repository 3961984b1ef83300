/* The MD step with the state on each rank's device (forcekit_mpi.h's fk_mpi_integrator, issue #33
 * item 5). One fk_integrator per rank, made one part of the divided system
 * (fk_integrator_set_part) on the spatial scheme's local evaluation: rank r integrates the
 * particles of its slab [Lz r / P, Lz (r + 1) / P) and holds halo copies of those within the
 * width w = cutoff + skin + margin of it. Each step moves only the halo's positions (the part's
 * exchange: one MPI_Alltoallv along routes fixed at the distribution) and the step's votes (the
 * part's reduce: MPI_Allreduce).
 *
 * Why w and leave = margin / 4 are enough. The integrator stops after the step on which an own
 * particle moved farther than leave along z since the distribution, and fails a step after which
 * one moved farther than 2 leave = margin / 2 (fk_integrator_part.leave): so while a distribution
 * lasts, every particle is within margin / 2 of where it was along z. A list built meanwhile for
 * an own particle i holds the j within cutoff + skin of it at the build (the list's rebuild check
 * keeps every j within the cutoff until the next build). Then |z_j - z_i| <= cutoff + skin at the
 * build, and at the distribution z_i lay in the slab and z_j within cutoff + skin + margin / 2 +
 * margin / 2 = w of it: j is this rank's own particle or a halo copy. The halo copies' positions
 * are their owners' after every drift; their velocities are zero and their inverse masses 0
 * (frozen): only the owner moves a particle.
 *
 * A redistribution (the step returned early, every rank at the same step): each rank reads its
 * state, sends each own particle's record (global index, x, v) to the rank whose slab holds it
 * now and to those whose halo reaches it (MPI_Alltoallv; never all N), and every rank sets a new
 * local set, in ascending global index, with a new integrator. fixed64's scale is restored
 * (fk_eval_get_bound before, fk_eval_set_bound with the system's N after, keep_scale), so the
 * trajectory stays the bits of one integrator of the whole system.
 *
 * Collective calls as in forcekit_mpi.c: local work, then an agreement (agree.h), then
 * communication. The integrator's own collective phases (set_state, step, energies) call the
 * exchange and reduce on every part whatever happened to it, so that only the local work before
 * them needs agreeing: it is, before each of them. */
#include "forcekit/forcekit_mpi.h"

#include "mpi/agree.h"
#include "mpi/spatial.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Values per particle record of a distribution: global index, x, y, z, vx, vy, vz. They travel
 * as one MPI type (record_type), so that MPI's int counts are records, not doubles. */
#define RECORD 7

/* Why the last fk_mpi_integrator_create of this thread failed (last_error(NULL)). */
static _Thread_local char create_error[FK__MPI_ERROR_TEXT];

struct fk_mpi_integrator {
    fk__mpi_part part;
    MPI_Datatype record_type;
    fk_mpi_eval *m;
    int holds_eval;            /* created: m's device set is this integrator's (m->lent) */
    fk_integrator *integrator; /* NULL until the first distribution */
    fk_integrator_config dynamics;
    /* The system: N, and its charges, types and the dynamics' masses for all N (NULL: absent). */
    size_t n;
    double *charges, *masses;
    int *types;
    double length, width, margin;
    int state_set;
    double bound[2]; /* fixed64's bound across a redistribution */
    /* The local set: own particles and halo copies, ascending global index. */
    size_t local_n, own_n;
    uint32_t *global;
    unsigned char *halo;
    double *x, *v, *local_charges, *local_masses;
    int *local_types;
    /* The exchange's routes (fk_integrator_part's send and receive) and their MPI counts in
     * doubles, fixed at the distribution. */
    uint32_t *send, *receive;
    size_t sends, receives;
    int *send_counts, *send_displs, *recv_counts, *recv_displs;
    /* Counters of the integrators destroyed at redistributions, and the redistributions. */
    uint64_t rebuilds, rescales, redistributions;
};

static fk_status forcekit_fail(fk_mpi_integrator *mi, fk_status status, const char *call)
{
    return fk__mpi_local_fail(&mi->part, status, "%s: %s: %s", call, fk_status_string(status),
                              fk_context_last_error(mi->m->context));
}

/* The agreement after a phase of the integrator's own collective calls: they fail on every part
 * together, and a part that failed because another did says so ("another part ..."); the message
 * kept is that of the lowest rank whose failure is its own. */
static fk_status agree_parts(fk_mpi_integrator *mi, fk_status status, const char *call)
{
    const char *text = fk_context_last_error(mi->m->context);
    const int own = status != FK_OK && !strstr(text, "another part");
    int mine = own ? mi->part.rank : mi->part.size, lowest = mi->part.size;
    MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, mi->part.comm);
    if (status != FK_OK)
        forcekit_fail(mi, status, call);
    if (lowest < mi->part.size && mi->part.rank != lowest)
        status = FK_OK; /* the lowest rank with its own failure speaks for all */
    status = fk__mpi_agree(&mi->part, status);
    if (status != FK_OK)
        mi->state_set = 0;
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* The part's callbacks */

static fk_status exchange(void *user, const double *sent, double *received)
{
    fk_mpi_integrator *mi = user;
    const double start = MPI_Wtime();
    const int err = MPI_Alltoallv(sent, mi->send_counts, mi->send_displs, MPI_DOUBLE, received,
                                  mi->recv_counts, mi->recv_displs, MPI_DOUBLE, mi->part.comm);
    mi->part.figures.communication_seconds += MPI_Wtime() - start;
    return err == MPI_SUCCESS ? FK_OK : FK_ERR_STATE;
}

static fk_status reduce(void *user, int op, void *values, size_t count)
{
    fk_mpi_integrator *mi = user;
    MPI_Datatype type = op == FK_PART_REDUCE_OR    ? MPI_UINT32_T
                        : op == FK_PART_REDUCE_MAX ? MPI_DOUBLE
                                                   : MPI_INT64_T;
    MPI_Op how = op == FK_PART_REDUCE_OR ? MPI_BOR : op == FK_PART_REDUCE_MAX ? MPI_MAX : MPI_SUM;
    const double start = MPI_Wtime();
    const int err = MPI_Allreduce(MPI_IN_PLACE, values, (int)count, type, how, mi->part.comm);
    mi->part.figures.communication_seconds += MPI_Wtime() - start;
    return err == MPI_SUCCESS ? FK_OK : FK_ERR_STATE;
}

/* ---------------------------------------------------------------------------------------------- */
/* Create and destroy */

static void release_local(fk_mpi_integrator *mi)
{
    free(mi->global);
    free(mi->halo);
    free(mi->x);
    free(mi->v);
    free(mi->local_charges);
    free(mi->local_masses);
    free(mi->local_types);
    free(mi->send);
    free(mi->receive);
    mi->global = mi->send = mi->receive = NULL;
    mi->halo = NULL;
    mi->x = mi->v = mi->local_charges = mi->local_masses = NULL;
    mi->local_types = NULL;
    mi->local_n = mi->own_n = mi->sends = mi->receives = 0;
}

/* The integrator of the last distribution goes; its counters stay. */
static void release_integrator(fk_mpi_integrator *mi)
{
    if (!mi->integrator)
        return;
    uint64_t rebuilds = 0, rescales = 0;
    fk_integrator_counters(mi->integrator, &rebuilds, &rescales, NULL);
    mi->rebuilds += rebuilds;
    mi->rescales += rescales;
    fk_integrator_destroy(mi->integrator);
    mi->integrator = NULL;
    mi->state_set = 0;
}

void fk_mpi_integrator_destroy(fk_mpi_integrator *mi)
{
    if (!mi)
        return;
    if (mi->holds_eval) /* the evaluation's own sets are to be built again */
        mi->m->lent = 2;
    release_integrator(mi);
    release_local(mi);
    free(mi->charges);
    free(mi->masses);
    free(mi->types);
    free(mi->send_counts);
    free(mi->send_displs);
    free(mi->recv_counts);
    free(mi->recv_displs);
    if (mi->record_type != MPI_DATATYPE_NULL)
        MPI_Type_free(&mi->record_type);
    fk__mpi_part_close(&mi->part);
    free(mi);
}

/* What create refuses, on this rank (the same on every rank: the evaluation's setup and the
 * config are agreed). */
static fk_status check_create(fk_mpi_integrator *mi, const fk_mpi_integrator_config *config)
{
    const fk_mpi_eval *m = mi->m;
    fk__mpi_part *part = &mi->part;
    if (!config)
        return fk__mpi_local_fail(part, FK_ERR_INVALID_ARGUMENT,
                                  "fk_mpi_integrator_create: NULL config");
    if (!m->spatial)
        return fk__mpi_local_fail(
            part, FK_ERR_UNSUPPORTED,
            "fk_mpi_integrator_create: the evaluation runs the allgather scheme; the MD step on "
            "each rank's device needs the spatial one (cells or neighbour lists in a periodic "
            "box, no exclusions): integrate on the host with replicated data there");
    if (!m->molecular)
        return fk__mpi_local_fail(part, FK_ERR_UNSUPPORTED,
                                  "fk_mpi_integrator_create: gravity kernels are integrated on the "
                                  "host (the parts integrate molecular kernels)");
    if (m->n == 0)
        return fk__mpi_local_fail(part, FK_ERR_STATE,
                                  "fk_mpi_integrator_create: set the evaluation's particles first");
    if (m->lent == 1)
        return fk__mpi_local_fail(part, FK_ERR_STATE,
                                  "fk_mpi_integrator_create: the evaluation already has one");
    const int kind = config->integrator.kind;
    if (kind != FK_INTEGRATOR_VERLET && kind != FK_INTEGRATOR_LANGEVIN)
        return fk__mpi_local_fail(part, FK_ERR_UNSUPPORTED,
                                  "fk_mpi_integrator_create: integrator kind %d: the parts step "
                                  "with Verlet or Langevin (Hermite is integrated on the host)",
                                  kind);
    double cutoff = 0, skin = 0;
    fk_eval_get_reach(m->eval, &cutoff, &skin, NULL);
    if (!(skin > 0))
        return fk__mpi_local_fail(part, FK_ERR_UNSUPPORTED,
                                  "fk_mpi_integrator_create: the pair loop has no skin: the halo "
                                  "is kept between the lists' rebuilds, give config.skin > 0");
    if (!(config->margin >= 0) || !isfinite(config->margin))
        return fk__mpi_local_fail(part, FK_ERR_INVALID_ARGUMENT,
                                  "fk_mpi_integrator_create: margin %g: >= 0 and finite",
                                  config->margin);
    const fk_integrator_config *dynamics = &config->integrator;
    if (dynamics->masses && dynamics->mass_count && dynamics->mass_count != m->n)
        return fk__mpi_local_fail(part, FK_ERR_INVALID_ARGUMENT,
                                  "fk_mpi_integrator_create: %zu masses for a system of %zu",
                                  dynamics->mass_count, m->n);
    for (size_t i = 0; dynamics->masses && i < m->n; ++i)
        if (!(dynamics->masses[i] > 0) || !isfinite(dynamics->masses[i]))
            return fk__mpi_local_fail(
                part, FK_ERR_INVALID_INPUT,
                "fk_mpi_integrator_create: particle %zu's mass is %g (> 0 and "
                "finite)",
                i, dynamics->masses[i]);
    mi->length = m->box_length;
    mi->margin =
        config->margin > 0 ? config->margin : fmax(2.0 * cutoff, skin); /* docs/mpi.md: why */
    mi->width = cutoff + skin + mi->margin;
    return FK_OK;
}

/* The dynamics every rank must share (kind, dt, temperature, friction, seed, masses, margin). */
static uint64_t config_digest(const fk_mpi_integrator_config *config, size_t n)
{
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    const fk_integrator_config *d = &config->integrator;
    const double values[] = {d->dt, d->temperature, d->friction, config->margin};
    const unsigned long long ints[] = {(unsigned long long)d->kind, d->seed, d->masses != NULL};
    XXH3_64bits_update(&state, values, sizeof values);
    XXH3_64bits_update(&state, ints, sizeof ints);
    if (d->masses)
        XXH3_64bits_update(&state, d->masses, n * sizeof *d->masses);
    return XXH3_64bits_digest(&state);
}

/* The system's charges and types for all N on every rank: the slices gathered. */
static fk_status gather_system(fk_mpi_integrator *mi, const fk_mpi_integrator_config *config)
{
    fk_mpi_eval *m = mi->m;
    const size_t n = m->n, ranks = (size_t)mi->part.size;
    mi->n = n;
    mi->charges = m->has_mass ? malloc(n * sizeof *mi->charges) : NULL;
    mi->types = m->has_type ? malloc(n * sizeof *mi->types) : NULL;
    mi->masses = config->integrator.masses ? malloc(n * sizeof *mi->masses) : NULL;
    mi->send_counts = calloc(ranks, sizeof *mi->send_counts);
    mi->send_displs = calloc(ranks, sizeof *mi->send_displs);
    mi->recv_counts = calloc(ranks, sizeof *mi->recv_counts);
    mi->recv_displs = calloc(ranks, sizeof *mi->recv_displs);
    const int allocated = (!m->has_mass || mi->charges) && (!m->has_type || mi->types) &&
                          (!config->integrator.masses || mi->masses) && mi->send_counts &&
                          mi->send_displs && mi->recv_counts && mi->recv_displs;
    fk_status status =
        fk__mpi_agree(&mi->part, allocated ? FK_OK
                                           : fk__mpi_local_fail(&mi->part, FK_ERR_HOST_MEMORY,
                                                                "out of host memory"));
    if (status != FK_OK)
        return status;
    if (mi->masses)
        memcpy(mi->masses, config->integrator.masses, n * sizeof *mi->masses);
    const double start = MPI_Wtime();
    const int me = mi->part.rank;
    if (m->has_mass)
        MPI_Allgatherv(m->slice_mass, m->counts[me], MPI_DOUBLE, mi->charges, m->counts, m->firsts,
                       MPI_DOUBLE, mi->part.comm);
    if (m->has_type)
        MPI_Allgatherv(m->slice_type, m->counts[me], MPI_INT, mi->types, m->counts, m->firsts,
                       MPI_INT, mi->part.comm);
    mi->part.figures.communication_seconds += MPI_Wtime() - start;
    return FK_OK;
}

fk_status fk_mpi_integrator_create(fk_mpi_eval *m, const fk_mpi_integrator_config *config,
                                   fk_mpi_integrator **out)
{
    if (!out || !m)
        return FK_ERR_INVALID_ARGUMENT;
    *out = NULL;
    create_error[0] = '\0';
    fk_mpi_integrator *mi = calloc(1, sizeof *mi);
    if (mi)
        mi->record_type = MPI_DATATYPE_NULL;
    fk_status status = fk__mpi_part_open(mi ? &mi->part : NULL, m->part.comm, create_error);
    if (status != FK_OK) {
        free(mi);
        return status;
    }
    mi->m = m;
    MPI_Type_contiguous(RECORD, MPI_DOUBLE, &mi->record_type);
    MPI_Type_commit(&mi->record_type);
    status = fk__mpi_agree(&mi->part, check_create(mi, config));
    if (status == FK_OK)
        status = fk__mpi_agree_replicated(&mi->part, "fk_mpi_integrator_create", "config", 0,
                                          config_digest(config, m->n));
    if (status == FK_OK)
        status = gather_system(mi, config);
    if (status != FK_OK) {
        memcpy(create_error, mi->part.error, sizeof create_error);
        fk_mpi_integrator_destroy(mi);
        return status;
    }
    mi->dynamics = config->integrator;
    mi->dynamics.struct_size = sizeof mi->dynamics;
    mi->dynamics.masses = NULL; /* the local set's, at each distribution */
    /* The evaluation's device set becomes the integrator's: the evaluation's own update path
     * builds its sets again if it is ever used. */
    m->resident = 0;
    m->computed = 0;
    m->lent = 1;
    mi->holds_eval = 1;
    *out = mi;
    return FK_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Distributions */

/* The records of a redistribution in ascending index: each sender's run arrives ascending (it
 * packs its local set in order) and the runs hold different particles (each has one owner), so a
 * merge of the P runs (O(n P), P small) replaces a sort (O(n log n) with a comparison call each:
 * 2-3 s for 9M records on the H200's host). NULL when out of memory. */
static double *merge_runs(const double *records, const int *counts, const int *firsts, int runs,
                          size_t total)
{
    double *merged = malloc((total + 1) * RECORD * sizeof *merged);
    size_t *next = calloc((size_t)runs, sizeof *next);
    if (!merged || !next) {
        free(merged);
        free(next);
        return NULL;
    }
    for (size_t k = 0; k < total; ++k) {
        int best = -1;
        double best_index = 0.0;
        for (int q = 0; q < runs; ++q) {
            if (next[q] >= (size_t)counts[q])
                continue;
            const double index = records[((size_t)firsts[q] + next[q]) * RECORD];
            if (best < 0 || index < best_index)
                best = q, best_index = index;
        }
        memcpy(merged + k * RECORD, records + ((size_t)firsts[best] + next[best]) * RECORD,
               RECORD * sizeof *merged);
        next[best]++;
    }
    free(next);
    return merged;
}

/* The local arrays from records (RECORD doubles each, ascending index) and the exchange's routes:
 * send, this rank's own particles within the width of another rank's slab, grouped by that rank
 * in rank order; receive, the halo copies grouped by their owner, in the order the owner sends
 * them (ascending index on both sides). Local. */
static fk_status take_records(fk_mpi_integrator *mi, const double *records, size_t count)
{
    const int ranks = mi->part.size, me = mi->part.rank;
    release_local(mi);
    const size_t slots = count + 1;
    mi->global = malloc(slots * sizeof *mi->global);
    mi->halo = malloc(slots);
    mi->x = malloc(3 * slots * sizeof *mi->x);
    mi->v = malloc(3 * slots * sizeof *mi->v);
    mi->local_charges = mi->charges ? malloc(slots * sizeof *mi->local_charges) : NULL;
    mi->local_types = mi->types ? malloc(slots * sizeof *mi->local_types) : NULL;
    mi->local_masses = mi->masses ? malloc(slots * sizeof *mi->local_masses) : NULL;
    mi->send = malloc((size_t)ranks * slots * sizeof *mi->send);
    mi->receive = malloc(slots * sizeof *mi->receive);
    if (!mi->global || !mi->halo || !mi->x || !mi->v || (mi->charges && !mi->local_charges) ||
        (mi->types && !mi->local_types) || (mi->masses && !mi->local_masses) || !mi->send ||
        !mi->receive)
        return fk__mpi_local_fail(&mi->part, FK_ERR_HOST_MEMORY, "out of host memory");
    for (size_t k = 0; k < count; ++k) {
        const double *record = records + k * RECORD;
        const size_t i = (size_t)record[0];
        if (i >= mi->n || (k > 0 && !(record[-RECORD] < record[0])))
            return fk__mpi_local_fail(&mi->part, FK_ERR_STATE,
                                      "a distribution gave particle %.0f out of order or twice",
                                      record[0]);
        mi->global[k] = (uint32_t)i;
        memcpy(mi->x + 3 * k, record + 1, 3 * sizeof(double));
        memcpy(mi->v + 3 * k, record + 4, 3 * sizeof(double));
        const double z = fk__mpi_wrap(record[3], mi->length);
        mi->halo[k] = fk__mpi_slab_owner(mi->length, ranks, z) != me;
        mi->own_n += !mi->halo[k];
        if (mi->local_charges)
            mi->local_charges[k] = mi->charges[i];
        if (mi->local_types)
            mi->local_types[k] = mi->types[i];
        if (mi->local_masses)
            mi->local_masses[k] = mi->masses[i];
    }
    mi->local_n = count;
    for (int q = 0; q < ranks; ++q) {
        const size_t sends = mi->sends, receives = mi->receives;
        for (size_t k = 0; q != me && k < count; ++k) {
            const double z = fk__mpi_wrap(mi->x[3 * k + 2], mi->length);
            int owned = 0;
            if (!mi->halo[k] && fk__mpi_slab_needs(mi->length, ranks, mi->width, q, z, &owned))
                mi->send[mi->sends++] = (uint32_t)k;
            if (mi->halo[k] && fk__mpi_slab_owner(mi->length, ranks, z) == q)
                mi->receive[mi->receives++] = (uint32_t)k;
        }
        if (3 * mi->sends > INT_MAX || 3 * mi->receives > INT_MAX)
            return fk__mpi_local_fail(&mi->part, FK_ERR_INVALID_ARGUMENT,
                                      "a halo of %zu particles: more than MPI's int counts hold",
                                      mi->sends > mi->receives ? mi->sends : mi->receives);
        mi->send_counts[q] = 3 * (int)(mi->sends - sends);
        mi->send_displs[q] = 3 * (int)sends;
        mi->recv_counts[q] = 3 * (int)(mi->receives - receives);
        mi->recv_displs[q] = 3 * (int)receives;
    }
    if (count == 0)
        return fk__mpi_local_fail(&mi->part, FK_ERR_UNSUPPORTED,
                                  "no particle lies within %g of this rank's slab along z: use "
                                  "fewer ranks",
                                  mi->width);
    return FK_OK;
}

/* The local evaluation's particles and a new integrator as a part, from the local arrays. keep:
 * fixed64's bound in mi->bound is the system's, restored instead of chosen. Local. */
static fk_status make_part(fk_mpi_integrator *mi, int keep)
{
    fk_mpi_eval *m = mi->m;
    release_integrator(mi);
    const fk_particles particles = {.count = mi->local_n,
                                    .position = mi->x,
                                    .mass = mi->local_charges,
                                    .type = mi->local_types};
    const double start = MPI_Wtime();
    fk_status status = fk_eval_set_particles(m->eval, &particles);
    if (status != FK_OK)
        return forcekit_fail(mi, status, "fk_eval_set_particles");
    fk_integrator_config dynamics = mi->dynamics;
    dynamics.masses = mi->local_masses;
    dynamics.mass_count = mi->local_masses ? mi->local_n : 0;
    status = fk_integrator_create(m->eval, &dynamics, &mi->integrator);
    if (status != FK_OK)
        return forcekit_fail(mi, status, "fk_integrator_create");
    if (keep) {
        status = fk_eval_set_bound(m->eval, mi->bound[0], mi->bound[1], mi->n);
        if (status != FK_OK)
            return forcekit_fail(mi, status, "fk_eval_set_bound");
    }
    const fk_integrator_part part = {.struct_size = sizeof part,
                                     .system_count = mi->n,
                                     .global_index = mi->global,
                                     .halo = mi->halo,
                                     .send = mi->send,
                                     .send_count = mi->sends,
                                     .receive = mi->receive,
                                     .receive_count = mi->receives,
                                     .leave = mi->margin / 4,
                                     .keep_scale = keep,
                                     .exchange = exchange,
                                     .reduce = reduce,
                                     .user = mi};
    status = fk_integrator_set_part(mi->integrator, &part);
    if (status != FK_OK)
        return forcekit_fail(mi, status, "fk_integrator_set_part");
    mi->part.figures.compute_seconds += MPI_Wtime() - start;
    return FK_OK;
}

/* Every rank's local set from its records, the routes checked against each other, then the
 * state set (the integrator's collective set_state: the forces, the lists, the scale).
 * Collective; agreed. */
static fk_status distribute(fk_mpi_integrator *mi, const double *records, size_t count,
                            uint64_t step, int keep)
{
    fk_status status = take_records(mi, records, count);
    if (status == FK_OK)
        status = make_part(mi, keep);
    /* What each rank sends to this one must be what it expects to receive: the same decisions
     * on the same doubles. Checked, not assumed. */
    const int ranks = mi->part.size;
    int *expected = malloc((size_t)ranks * sizeof *expected);
    if (!expected && status == FK_OK)
        status = fk__mpi_local_fail(&mi->part, FK_ERR_HOST_MEMORY, "out of host memory");
    status = fk__mpi_agree(&mi->part, status);
    if (status == FK_OK) {
        MPI_Alltoall(mi->send_counts, 1, MPI_INT, expected, 1, MPI_INT, mi->part.comm);
        for (int q = 0; q < ranks && status == FK_OK; ++q)
            if (expected[q] != mi->recv_counts[q])
                status = fk__mpi_local_fail(&mi->part, FK_ERR_STATE,
                                            "rank %d sends %d halo positions, %d expected", q,
                                            expected[q] / 3, mi->recv_counts[q] / 3);
        status = fk__mpi_agree(&mi->part, status);
    }
    free(expected);
    if (status != FK_OK)
        return status;
    const double start = MPI_Wtime(), communicated = mi->part.figures.communication_seconds;
    status = fk_integrator_set_state(mi->integrator, mi->x, mi->v, step);
    mi->part.figures.compute_seconds +=
        MPI_Wtime() - start - (mi->part.figures.communication_seconds - communicated);
    status = agree_parts(mi, status, "fk_integrator_set_state");
    mi->state_set = status == FK_OK;
    if (status == FK_OK) {
        mi->redistributions++;
        mi->part.figures.particles = mi->own_n;
    }
    return status;
}

/* Whether every coordinate is a finite float and every velocity finite (set_state's own check,
 * made here so that every rank takes the same path). */
static fk_status check_state(fk_mpi_integrator *mi, const double *x, const double *v)
{
    for (size_t k = 0; k < 3 * mi->n; ++k) {
        if (!(fabs(x[k]) <= FLT_MAX))
            return fk__mpi_local_fail(&mi->part, FK_ERR_INVALID_INPUT,
                                      "set_all_state: particle %zu: coordinate %d is %g (not a "
                                      "finite float)",
                                      k / 3, (int)(k % 3), x[k]);
        if (v && !isfinite(v[k]))
            return fk__mpi_local_fail(&mi->part, FK_ERR_INVALID_INPUT,
                                      "set_all_state: particle %zu: velocity component %d is %g",
                                      k / 3, (int)(k % 3), v[k]);
    }
    return FK_OK;
}

/* set_all_state and restore_all_state: keep, fixed64's bound in mi->bound is restored instead of
 * chosen from these positions. */
static fk_status set_all(fk_mpi_integrator *mi, const double *positions, const double *velocities,
                         uint64_t step, int keep)
{
    mi->state_set = 0;
    fk_status status = positions ? check_state(mi, positions, velocities)
                                 : fk__mpi_local_fail(&mi->part, FK_ERR_INVALID_ARGUMENT,
                                                      "set_all_state: NULL positions");
    status = fk__mpi_agree(&mi->part, status);
    if (status != FK_OK)
        return status;
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    XXH3_64bits_update(&state, positions, 3 * mi->n * sizeof *positions);
    const unsigned char has_v = velocities != NULL;
    XXH3_64bits_update(&state, &has_v, 1);
    if (velocities)
        XXH3_64bits_update(&state, velocities, 3 * mi->n * sizeof *velocities);
    XXH3_64bits_update(&state, &step, sizeof step);
    status = fk__mpi_agree_replicated(&mi->part, "set_all_state", "particles", mi->n,
                                      XXH3_64bits_digest(&state));
    if (status != FK_OK)
        return status;
    /* Every rank holds all N: each takes what its slab and halo hold, no communication. */
    const int ranks = mi->part.size, me = mi->part.rank;
    size_t count = 0;
    double *records = malloc((mi->n + 1) * RECORD * sizeof *records);
    for (size_t i = 0; records && i < mi->n; ++i) {
        const double z = fk__mpi_wrap(positions[3 * i + 2], mi->length);
        int owned = 0;
        if (!fk__mpi_slab_needs(mi->length, ranks, mi->width, me, z, &owned))
            continue;
        double *record = records + RECORD * count++;
        record[0] = (double)i;
        memcpy(record + 1, positions + 3 * i, 3 * sizeof(double));
        for (int c = 0; c < 3; ++c)
            record[4 + c] = velocities ? velocities[3 * i + c] : 0.0;
    }
    status = fk__mpi_agree(
        &mi->part,
        records ? FK_OK : fk__mpi_local_fail(&mi->part, FK_ERR_HOST_MEMORY, "out of host memory"));
    if (status == FK_OK)
        status = distribute(mi, records, count, step, keep);
    free(records);
    return status;
}

fk_status fk_mpi_integrator_set_all_state(fk_mpi_integrator *mi, const double *positions,
                                          const double *velocities, uint64_t step)
{
    return mi ? set_all(mi, positions, velocities, step, 0) : FK_ERR_INVALID_ARGUMENT;
}

fk_status fk_mpi_integrator_restore_all_state(fk_mpi_integrator *mi, const double *positions,
                                              const double *velocities, uint64_t step,
                                              double max_term, double max_sum)
{
    if (!mi)
        return FK_ERR_INVALID_ARGUMENT;
    /* Bounds that differ between the ranks would give each part another scale: agreed as the
     * state is (the same doubles everywhere). */
    const double bound[2] = {max_term, max_sum};
    fk_status status = fk__mpi_agree_replicated(&mi->part, "restore_all_state", "bound", 0,
                                                XXH3_64bits(bound, sizeof bound));
    if (status != FK_OK)
        return status;
    mi->bound[0] = max_term;
    mi->bound[1] = max_sum;
    return set_all(mi, positions, velocities, step, 1);
}

/* This rank's own particles' records to the ranks whose slab or halo holds them now, and the
 * local set again from what arrives, fixed64's scale kept. Collective; agreed. */
static fk_status redistribute(fk_mpi_integrator *mi, uint64_t step)
{
    const int ranks = mi->part.size;
    fk_status status = fk_integrator_get_state(mi->integrator, mi->x, mi->v, NULL);
    if (status != FK_OK)
        status = forcekit_fail(mi, status, "fk_integrator_get_state");
    if (status == FK_OK)
        status = fk_eval_get_bound(mi->m->eval, &mi->bound[0], &mi->bound[1]);
    if (status != FK_OK && !mi->part.local_error[0])
        status = forcekit_fail(mi, status, "fk_eval_get_bound");
    int *counts = calloc(4 * (size_t)ranks, sizeof *counts);
    int *fill = calloc((size_t)ranks, sizeof *fill);
    size_t records = 0;
    for (size_t k = 0; status == FK_OK && counts && k < mi->local_n; ++k) {
        const double z = fk__mpi_wrap(mi->x[3 * k + 2], mi->length);
        for (int q = 0; !mi->halo[k] && q < ranks; ++q) {
            int owned = 0;
            if (fk__mpi_slab_needs(mi->length, ranks, mi->width, q, z, &owned) &&
                ++records <= INT_MAX)
                ++counts[q];
        }
    }
    double *send = malloc((records + 1) * RECORD * sizeof *send);
    if (status == FK_OK && (!counts || !fill || !send))
        status = fk__mpi_local_fail(&mi->part, FK_ERR_HOST_MEMORY, "out of host memory");
    if (status == FK_OK && records > INT_MAX)
        status =
            fk__mpi_local_fail(&mi->part, FK_ERR_INVALID_ARGUMENT,
                               "%zu particle records: more than MPI's int counts hold", records);
    status = fk__mpi_agree(&mi->part, status);
    double *received = NULL;
    size_t arrived = 0;
    if (status == FK_OK) {
        int *displs = counts + ranks, *recv_counts = counts + 2 * ranks;
        int *recv_displs = counts + 3 * ranks;
        for (int q = 0, at = 0; q < ranks; at += counts[q++])
            displs[q] = at;
        for (size_t k = 0; k < mi->local_n; ++k) {
            const double z = fk__mpi_wrap(mi->x[3 * k + 2], mi->length);
            for (int q = 0; !mi->halo[k] && q < ranks; ++q) {
                int owned = 0;
                if (!fk__mpi_slab_needs(mi->length, ranks, mi->width, q, z, &owned))
                    continue;
                double *record = send + RECORD * (size_t)(displs[q] + fill[q]++);
                record[0] = (double)mi->global[k]; /* exact: N < 2^31 */
                memcpy(record + 1, mi->x + 3 * k, 3 * sizeof(double));
                memcpy(record + 4, mi->v + 3 * k, 3 * sizeof(double));
            }
        }
        const double start = MPI_Wtime();
        MPI_Alltoall(counts, 1, MPI_INT, recv_counts, 1, MPI_INT, mi->part.comm);
        long long total = 0;
        for (int q = 0; q < ranks; ++q) {
            recv_displs[q] = (int)total;
            total += recv_counts[q];
        }
        received =
            total <= INT_MAX ? malloc(((size_t)total + 1) * RECORD * sizeof *received) : NULL;
        status =
            fk__mpi_agree(&mi->part, received ? FK_OK
                                              : fk__mpi_local_fail(&mi->part, FK_ERR_HOST_MEMORY,
                                                                   "out of host memory"));
        if (status == FK_OK)
            MPI_Alltoallv(send, counts, displs, mi->record_type, received, recv_counts, recv_displs,
                          mi->record_type, mi->part.comm);
        /* fixed64's bound: every part's is the system's; the maximum makes sure of one value */
        MPI_Allreduce(MPI_IN_PLACE, mi->bound, 2, MPI_DOUBLE, MPI_MAX, mi->part.comm);
        mi->part.figures.communication_seconds += MPI_Wtime() - start;
        arrived = (size_t)total;
    }
    double *merged = NULL;
    if (status == FK_OK) {
        merged = merge_runs(received, counts + 2 * ranks, counts + 3 * ranks, ranks, arrived);
        status = fk__mpi_agree(&mi->part, merged ? FK_OK
                                                 : fk__mpi_local_fail(&mi->part, FK_ERR_HOST_MEMORY,
                                                                      "out of host memory"));
    }
    free(counts);
    free(fill);
    free(send);
    free(received);
    if (status == FK_OK)
        status = distribute(mi, merged, arrived, step, 1);
    free(merged);
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* Stepping, the state, the energies */

/* Whether the state is set, on every rank (the integrator's calls need it on all). */
static fk_status need_state(fk_mpi_integrator *mi, const char *call)
{
    return fk__mpi_agree(&mi->part,
                         mi->state_set
                             ? FK_OK
                             : fk__mpi_local_fail(&mi->part, FK_ERR_STATE,
                                                  "%s before a successful set_all_state", call));
}

fk_status fk_mpi_integrator_step(fk_mpi_integrator *mi, uint64_t n_steps)
{
    if (!mi)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = need_state(mi, "step");
    uint64_t done = 0;
    while (status == FK_OK && done < n_steps) {
        const uint64_t before = fk_integrator_step_index(mi->integrator);
        const double start = MPI_Wtime(), communicated = mi->part.figures.communication_seconds;
        status = fk_integrator_step(mi->integrator, n_steps - done);
        mi->part.figures.compute_seconds +=
            MPI_Wtime() - start - (mi->part.figures.communication_seconds - communicated);
        const uint64_t after = fk_integrator_step_index(mi->integrator);
        done += after - before;
        status = agree_parts(mi, status, "fk_integrator_step");
        /* Short of n_steps: some own particle moved farther than leave (every rank stopped at
         * the same step; a "leave" voted on the last call's last step holds until the next
         * set_state, so that call takes no step and lands here too). */
        if (status == FK_OK && done < n_steps)
            status = redistribute(mi, after);
    }
    return status;
}

fk_status fk_mpi_integrator_get_all_state(fk_mpi_integrator *mi, double *positions,
                                          double *velocities, uint64_t *step)
{
    if (!mi)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = need_state(mi, "get_all_state");
    if (status != FK_OK)
        return status;
    const int ranks = mi->part.size;
    double *own = malloc((mi->own_n + 1) * RECORD * sizeof *own);
    double *all = malloc((mi->n + 1) * RECORD * sizeof *all);
    int *counts = malloc(2 * (size_t)ranks * sizeof *counts);
    status = own && all && counts
                 ? fk_integrator_get_state(mi->integrator, mi->x, mi->v, NULL)
                 : fk__mpi_local_fail(&mi->part, FK_ERR_HOST_MEMORY, "out of host memory");
    if (status != FK_OK && own && all && counts)
        status = forcekit_fail(mi, status, "fk_integrator_get_state");
    status = fk__mpi_agree(&mi->part, status);
    if (status == FK_OK) {
        size_t at = 0;
        for (size_t k = 0; k < mi->local_n; ++k) {
            if (mi->halo[k])
                continue;
            double *record = own + RECORD * at++;
            record[0] = (double)mi->global[k];
            memcpy(record + 1, mi->x + 3 * k, 3 * sizeof(double));
            memcpy(record + 4, mi->v + 3 * k, 3 * sizeof(double));
        }
        const int mine = (int)at; /* records: N < INT_MAX / 3 (fk_mpi_eval) */
        int *displs = counts + ranks;
        const double start = MPI_Wtime();
        MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, mi->part.comm);
        long long total = 0;
        for (int q = 0; q < ranks; ++q) {
            displs[q] = (int)total;
            total += counts[q];
        }
        if (total == (long long)mi->n) {
            MPI_Allgatherv(own, mine, mi->record_type, all, counts, displs, mi->record_type,
                           mi->part.comm);
            for (size_t k = 0; k < mi->n; ++k) {
                const double *record = all + RECORD * k;
                const size_t i = (size_t)record[0];
                if (positions)
                    memcpy(positions + 3 * i, record + 1, 3 * sizeof(double));
                if (velocities)
                    memcpy(velocities + 3 * i, record + 4, 3 * sizeof(double));
            }
        } else { /* the same verdict on every rank: the counts are everyone's */
            status = fk__mpi_everyone_fails(&mi->part, FK_ERR_STATE,
                                            "get_all_state: the ranks own %lld particles of %zu",
                                            total, mi->n);
        }
        mi->part.figures.communication_seconds += MPI_Wtime() - start;
        if (step)
            *step = fk_integrator_step_index(mi->integrator);
    }
    free(own);
    free(all);
    free(counts);
    return status;
}

fk_status fk_mpi_integrator_energies(fk_mpi_integrator *mi, double *kinetic, double *potential)
{
    if (!mi)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = need_state(mi, "energies");
    if (status != FK_OK)
        return status;
    if (!kinetic && !potential)
        status = fk__mpi_local_fail(&mi->part, FK_ERR_INVALID_ARGUMENT,
                                    "energies: NULL kinetic and potential");
    else if (potential && !mi->m->potential)
        status = fk__mpi_local_fail(&mi->part, FK_ERR_STATE,
                                    "energies: the potential energy needs the evaluation's "
                                    "potentials (fk_eval_config.potential)");
    status = fk__mpi_agree(&mi->part, status);
    if (status != FK_OK)
        return status;
    /* Every rank asks for both where it can: the integrator's sums are collective either way. */
    double values[2] = {0.0, 0.0};
    status =
        fk_integrator_energies(mi->integrator, &values[0], mi->m->potential ? &values[1] : NULL);
    status = agree_parts(mi, status, "fk_integrator_energies");
    if (status == FK_OK && kinetic)
        *kinetic = values[0];
    if (status == FK_OK && potential)
        *potential = values[1];
    return status;
}

fk_status fk_mpi_integrator_counters(const fk_mpi_integrator *mi, uint64_t *rebuilds,
                                     uint64_t *rescales, uint64_t *redistributions)
{
    if (!mi)
        return FK_ERR_INVALID_ARGUMENT;
    uint64_t now_rebuilds = 0, now_rescales = 0;
    if (mi->integrator)
        fk_integrator_counters(mi->integrator, &now_rebuilds, &now_rescales, NULL);
    if (rebuilds)
        *rebuilds = mi->rebuilds + now_rebuilds;
    if (rescales)
        *rescales = mi->rescales + now_rescales;
    if (redistributions)
        *redistributions = mi->redistributions;
    return FK_OK;
}

fk_status fk_mpi_integrator_figures(fk_mpi_integrator *mi, int root, fk_mpi_rank_figures *figures)
{
    if (!mi)
        return FK_ERR_INVALID_ARGUMENT;
    uint64_t rescales = 0;
    fk_mpi_integrator_counters(mi, NULL, &rescales, NULL);
    mi->part.figures.rescales = (size_t)rescales;
    mi->part.figures.pairs = 0;
    return fk__mpi_gather_figures(&mi->part, root, figures);
}

const char *fk_mpi_integrator_last_error(const fk_mpi_integrator *mi)
{
    return mi ? mi->part.error : create_error;
}
