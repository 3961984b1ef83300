/* forcekit over MPI (include/forcekit/forcekit_mpi.h, issue #20): the replicated-positions
 * allgather scheme over fk_eval_set_share. Uses only forcekit.h's API.
 *
 * Every collective entry point is a sequence of phases that every rank runs in the same order
 * whatever happened locally: local work, then `agree` (one MPI_Allreduce of the lowest failing
 * rank, and on failure a broadcast of its status and message), then communication only when all
 * succeeded. So a rank that fails never leaves the others inside a collective it skipped. */
#include "forcekit/forcekit_mpi.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERROR_TEXT 1024

/* Why the last fk_mpi_eval_create of this thread failed (fk_mpi_eval_last_error(NULL)). */
static _Thread_local char create_error[ERROR_TEXT];

struct fk_mpi_eval {
    MPI_Comm comm;
    int rank, size;
    fk_context *context;
    fk_eval *eval;
    size_t components; /* force components per particle */
    int potential;
    /* The system: every rank's slice (counts, firsts) and all particles, gathered. */
    size_t n;
    int *counts, *firsts;               /* particles per rank, in MPI's int counts */
    int *scaled_counts, *scaled_firsts; /* the same times 3, for positions and velocities */
    double *position, *velocity, *mass;
    int *type;
    int has_mass, has_velocity, has_type;
    /* The combined results of the last compute (bits, OR'ed across ranks). */
    uint64_t *forces, *potentials;
    int computed;
    size_t rescales_seen;
    fk_mpi_rank_figures figures;
    char local_error[ERROR_TEXT]; /* this rank's reason for a failed phase */
    char error[ERROR_TEXT];       /* the agreed error of the last call */
};

static fk_status local_fail(fk_mpi_eval *m, fk_status status, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(m->local_error, sizeof m->local_error, format, args);
    va_end(args);
    return status;
}

/* The library's message for a failed forcekit call on this rank. */
static fk_status forcekit_fail(fk_mpi_eval *m, fk_status status, const char *call)
{
    return local_fail(m, status, "%s: %s: %s", call, fk_status_string(status),
                      fk_context_last_error(m->context));
}

/* All ranks learn whether any failed; on failure every rank returns the status and message of the
 * lowest failing rank. The time spent here is waiting for the slowest rank. */
static fk_status agree_on(MPI_Comm comm, fk_status status, const char *reason, char *error)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int failing = status == FK_OK ? size : rank, lowest = size;
    MPI_Allreduce(&failing, &lowest, 1, MPI_INT, MPI_MIN, comm);
    if (lowest == size) {
        error[0] = '\0';
        return FK_OK;
    }
    struct {
        int status;
        char text[ERROR_TEXT];
    } message;
    memset(&message, 0, sizeof message);
    if (rank == lowest) {
        message.status = (int)status;
        snprintf(message.text, sizeof message.text, "rank %d: %s", rank,
                 reason && reason[0] ? reason : fk_status_string(status));
    }
    MPI_Bcast(&message, (int)sizeof message, MPI_BYTE, lowest, comm);
    memcpy(error, message.text, ERROR_TEXT);
    error[ERROR_TEXT - 1] = '\0';
    return (fk_status)message.status;
}

static fk_status agree(fk_mpi_eval *m, fk_status status)
{
    const double start = MPI_Wtime();
    status = agree_on(m->comm, status, m->local_error, m->error);
    m->figures.wait_seconds += MPI_Wtime() - start;
    m->local_error[0] = '\0';
    return status;
}

/* The same failure decided on every rank from collective data (no agreement needed). */
static fk_status everyone_fails(fk_mpi_eval *m, fk_status status, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(m->error, sizeof m->error, format, args);
    va_end(args);
    return status;
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

static fk_status create_local(fk_mpi_eval *m, const fk_eval_config *config)
{
    fk_eval_config local = *config;
    if (local.struct_size == 0)
        local.struct_size = sizeof local;
    /* Shares need every particle's results on one part: full lists on every rank count, so
     * that P = 1 runs what P = 4 runs. */
    local.neighbor_lists = FK_NEIGHBOR_LISTS_FULL;
    fk_status status = fk_eval_create(m->context, &local, &m->eval);
    if (status != FK_OK)
        return forcekit_fail(m, status, "fk_eval_create");
    fk_variant variant;
    fk_eval_get_variant(m->eval, &variant);
    if (variant.algorithm == FK_ALGORITHM_SYMMETRIC) {
        /* Newton's third law writes both particles of a pair: all-pairs instead. */
        fk_eval_destroy(m->eval);
        m->eval = NULL;
        local.algorithm = FK_ALGORITHM_ALL_PAIRS;
        status = fk_eval_create(m->context, &local, &m->eval);
        if (status != FK_OK)
            return forcekit_fail(m, status, "fk_eval_create (all-pairs for symmetric)");
    }
    status = fk_eval_set_share(m->eval, m->rank, m->size);
    if (status != FK_OK)
        return forcekit_fail(m, status, "fk_eval_set_share");
    m->components = fk_eval_force_components(m->eval);
    m->potential = config->potential != 0;
    return FK_OK;
}

fk_status fk_mpi_eval_create(fk_context *context, const fk_eval_config *config, MPI_Comm comm,
                             fk_mpi_eval **out)
{
    if (!out)
        return FK_ERR_INVALID_ARGUMENT;
    *out = NULL;
    fk_mpi_eval *m = calloc(1, sizeof *m);
    create_error[0] = '\0';
    /* Every rank learns whether every rank could start, before the first collective on a
     * communicator of its own (MPI errors: the communicator's handler). */
    const fk_status allocated =
        agree_on(comm, m ? FK_OK : FK_ERR_HOST_MEMORY, "out of host memory", create_error);
    if (allocated != FK_OK) {
        free(m);
        return allocated;
    }
    MPI_Comm_dup(comm, &m->comm);
    MPI_Comm_rank(m->comm, &m->rank);
    MPI_Comm_size(m->comm, &m->size);
    m->context = context;
    m->figures.rank = m->rank;
    fk_status status = FK_OK;
    if (!context || !config)
        status = local_fail(m, FK_ERR_INVALID_ARGUMENT, "fk_mpi_eval_create: NULL %s",
                            context ? "config" : "context");
    else
        status = create_local(m, config);
    status = agree(m, status);
    if (status == FK_OK) {
        /* Every rank must run the same loop, or the shares would not tile the particles. */
        fk_variant variant;
        fk_eval_get_variant(m->eval, &variant);
        int lowest = variant.algorithm, highest = variant.algorithm;
        MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, m->comm);
        MPI_Allreduce(MPI_IN_PLACE, &highest, 1, MPI_INT, MPI_MAX, m->comm);
        if (lowest != highest)
            status = everyone_fails(m, FK_ERR_UNSUPPORTED,
                                    "the ranks' devices chose different pair loops (%s and %s): "
                                    "set config.algorithm",
                                    fk_algorithm_name((fk_algorithm)lowest),
                                    fk_algorithm_name((fk_algorithm)highest));
    }
    if (status != FK_OK) {
        memcpy(create_error, m->error, sizeof create_error);
        fk_mpi_eval_destroy(m);
        return status;
    }
    m->counts = calloc((size_t)m->size, sizeof *m->counts);
    m->firsts = calloc((size_t)m->size, sizeof *m->firsts);
    m->scaled_counts = calloc((size_t)m->size, sizeof *m->scaled_counts);
    m->scaled_firsts = calloc((size_t)m->size, sizeof *m->scaled_firsts);
    status = m->counts && m->firsts && m->scaled_counts && m->scaled_firsts
                 ? FK_OK
                 : local_fail(m, FK_ERR_HOST_MEMORY, "out of host memory");
    status = agree(m, status);
    if (status != FK_OK) {
        memcpy(create_error, m->error, sizeof create_error);
        fk_mpi_eval_destroy(m);
        return status;
    }
    *out = m;
    return FK_OK;
}

static void release_system(fk_mpi_eval *m)
{
    free(m->position);
    free(m->velocity);
    free(m->mass);
    free(m->type);
    free(m->forces);
    free(m->potentials);
    m->position = m->velocity = m->mass = NULL;
    m->type = NULL;
    m->forces = m->potentials = NULL;
    m->n = 0;
    m->computed = 0;
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
    MPI_Comm_free(&m->comm);
    free(m);
}

/* Gathers this rank's slice of `per` values per particle into all (every rank's slices in rank
 * order). */
static void gather_doubles(fk_mpi_eval *m, const double *mine, double *all, int per)
{
    const int *counts = per == 3 ? m->scaled_counts : m->counts;
    const int *firsts = per == 3 ? m->scaled_firsts : m->firsts;
    const double start = MPI_Wtime();
    MPI_Allgatherv(mine, counts[m->rank], MPI_DOUBLE, all, counts, firsts, MPI_DOUBLE, m->comm);
    m->figures.communication_seconds += MPI_Wtime() - start;
}

fk_status fk_mpi_eval_set_particles(fk_mpi_eval *m, const fk_particles *local)
{
    if (!m)
        return FK_ERR_INVALID_ARGUMENT;
    m->computed = 0;
    fk_status status = FK_OK;
    unsigned long long count = 0;
    if (!local)
        status = local_fail(m, FK_ERR_INVALID_ARGUMENT, "set_particles: NULL particles");
    else if (local->count && !local->position)
        status = local_fail(m, FK_ERR_INVALID_ARGUMENT, "set_particles: NULL positions");
    else if (local->count > (size_t)INT_MAX / 3)
        status = local_fail(m, FK_ERR_INVALID_ARGUMENT,
                            "set_particles: %zu particles on one rank (at most %d)", local->count,
                            INT_MAX / 3);
    else
        count = local->count;
    status = agree(m, status);
    if (status != FK_OK)
        return status;

    /* The slices and which optional arrays they carry: a rank without particles has no say. */
    unsigned long long *all_counts = malloc((size_t)m->size * sizeof *all_counts);
    if (!all_counts)
        return agree(m, local_fail(m, FK_ERR_HOST_MEMORY, "out of host memory"));
    MPI_Allgather(&count, 1, MPI_UNSIGNED_LONG_LONG, all_counts, 1, MPI_UNSIGNED_LONG_LONG,
                  m->comm);
    int present[3] = {1, 1, 1}, absent[3] = {1, 1, 1}; /* mass, velocity, type */
    if (count) {
        const void *arrays[3] = {local->mass, local->velocity, local->type};
        for (int k = 0; k < 3; ++k) {
            present[k] = arrays[k] != NULL;
            absent[k] = arrays[k] == NULL;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, present, 3, MPI_INT, MPI_MIN, m->comm);
    MPI_Allreduce(MPI_IN_PLACE, absent, 3, MPI_INT, MPI_MIN, m->comm);
    unsigned long long total = 0;
    for (int r = 0; r < m->size; ++r)
        total += all_counts[r];
    const char *names[3] = {"masses", "velocities", "types"};
    for (int k = 0; k < 3 && status == FK_OK; ++k)
        if (!present[k] && !absent[k])
            status =
                everyone_fails(m, FK_ERR_INVALID_ARGUMENT,
                               "set_particles: some ranks give %s and others do not", names[k]);
    if (status == FK_OK && total == 0)
        status =
            everyone_fails(m, FK_ERR_INVALID_ARGUMENT, "set_particles: no particles on any rank");
    if (status == FK_OK && total > (unsigned long long)INT_MAX / 3)
        status = everyone_fails(m, FK_ERR_INVALID_ARGUMENT,
                                "set_particles: %llu particles: at most %d over MPI", total,
                                INT_MAX / 3);
    if (status != FK_OK) {
        free(all_counts);
        return status;
    }
    int first = 0;
    for (int r = 0; r < m->size; ++r) {
        m->counts[r] = (int)all_counts[r];
        m->firsts[r] = first;
        m->scaled_counts[r] = 3 * m->counts[r];
        m->scaled_firsts[r] = 3 * first;
        first += m->counts[r];
    }
    free(all_counts);
    /* absent[k]: no rank with particles gives the array (and they agree, checked above). */
    m->has_mass = !absent[0];
    m->has_velocity = !absent[1];
    m->has_type = !absent[2];

    release_system(m);
    const size_t n = (size_t)total;
    m->position = malloc(3 * n * sizeof *m->position);
    m->velocity = m->has_velocity ? malloc(3 * n * sizeof *m->velocity) : NULL;
    m->mass = m->has_mass ? malloc(n * sizeof *m->mass) : NULL;
    m->type = m->has_type ? malloc(n * sizeof *m->type) : NULL;
    m->forces = malloc(n * m->components * sizeof *m->forces);
    m->potentials = m->potential ? malloc(n * sizeof *m->potentials) : NULL;
    const int allocated = m->position && m->forces && (!m->has_velocity || m->velocity) &&
                          (!m->has_mass || m->mass) && (!m->has_type || m->type) &&
                          (!m->potential || m->potentials);
    status = agree(m, allocated ? FK_OK : local_fail(m, FK_ERR_HOST_MEMORY, "out of host memory"));
    if (status != FK_OK) {
        release_system(m);
        return status;
    }
    gather_doubles(m, local->position, m->position, 3);
    if (m->has_velocity)
        gather_doubles(m, local->velocity, m->velocity, 3);
    if (m->has_mass)
        gather_doubles(m, local->mass, m->mass, 1);
    if (m->has_type) {
        const double start = MPI_Wtime();
        MPI_Allgatherv(local->type, m->counts[m->rank], MPI_INT, m->type, m->counts, m->firsts,
                       MPI_INT, m->comm);
        m->figures.communication_seconds += MPI_Wtime() - start;
    }
    m->n = n;
    m->figures.particles = (size_t)m->counts[m->rank];
    const fk_particles all = {.count = n,
                              .position = m->position,
                              .mass = m->mass,
                              .velocity = m->velocity,
                              .type = m->type};
    const double start = MPI_Wtime();
    status = fk_eval_set_particles(m->eval, &all);
    m->figures.compute_seconds += MPI_Wtime() - start;
    if (status != FK_OK)
        status = forcekit_fail(m, status, "fk_eval_set_particles");
    status = agree(m, status);
    if (status != FK_OK)
        m->n = 0;
    m->rescales_seen = fk_eval_rescale_count(m->eval);
    return status;
}

fk_status fk_mpi_eval_update_positions(fk_mpi_eval *m, const double *position,
                                       const double *velocity)
{
    if (!m)
        return FK_ERR_INVALID_ARGUMENT;
    m->computed = 0;
    fk_status status = FK_OK;
    if (m->n == 0)
        status = local_fail(m, FK_ERR_STATE, "update_positions before set_particles");
    else if (m->counts[m->rank] && !position)
        status = local_fail(m, FK_ERR_INVALID_ARGUMENT, "update_positions: NULL positions");
    else if (m->counts[m->rank] && m->has_velocity && !velocity)
        status = local_fail(m, FK_ERR_INVALID_ARGUMENT,
                            "update_positions: NULL velocities (the particles have them)");
    status = agree(m, status);
    if (status != FK_OK)
        return status;
    gather_doubles(m, position, m->position, 3);
    if (m->has_velocity)
        gather_doubles(m, velocity, m->velocity, 3);
    const double start = MPI_Wtime();
    status = fk_eval_update_positions(m->eval, m->position, m->has_velocity ? m->velocity : NULL);
    m->figures.compute_seconds += MPI_Wtime() - start;
    if (status != FK_OK)
        status = forcekit_fail(m, status, "fk_eval_update_positions");
    return agree(m, status);
}

/* This rank's compute and read of all N results (its share nonzero, the rest zero). */
static fk_status compute_local(fk_mpi_eval *m, double *seconds)
{
    fk_status status = fk_eval_compute(m->eval, seconds);
    if (status != FK_OK)
        return forcekit_fail(m, status, "fk_eval_compute");
    return FK_OK;
}

static fk_status read_local(fk_mpi_eval *m)
{
    /* doubles into the uint64 buffers: the OR works on their bits */
    fk_status status = fk_eval_read_forces(m->eval, (double *)(void *)m->forces);
    if (status != FK_OK)
        return forcekit_fail(m, status, "fk_eval_read_forces");
    if (m->potential) {
        status = fk_eval_read_potentials(m->eval, (double *)(void *)m->potentials);
        if (status != FK_OK)
            return forcekit_fail(m, status, "fk_eval_read_potentials");
    }
    return FK_OK;
}

fk_status fk_mpi_eval_compute(fk_mpi_eval *m, double *seconds)
{
    if (!m)
        return FK_ERR_INVALID_ARGUMENT;
    m->computed = 0;
    double device = 0;
    double start = MPI_Wtime();
    fk_status status = m->n ? compute_local(m, &device)
                            : local_fail(m, FK_ERR_STATE, "compute before set_particles");
    m->figures.compute_seconds += MPI_Wtime() - start;
    status = agree(m, status);
    if (status != FK_OK)
        return status;
    /* FK_SCALE_KEEP: a rank that overflowed chose a new scale from every particle's terms (its
     * pre-pass covers them all) and computed again; the others do the same, so that every share
     * is on the scale a single device would use. */
    const size_t rescales = fk_eval_rescale_count(m->eval);
    int rescaled = rescales != m->rescales_seen, any = 0;
    m->rescales_seen = rescales;
    MPI_Allreduce(&rescaled, &any, 1, MPI_INT, MPI_MAX, m->comm);
    start = MPI_Wtime();
    if (any && !rescaled) {
        status = fk_eval_rescale(m->eval);
        if (status != FK_OK)
            status = forcekit_fail(m, status, "fk_eval_rescale");
        else
            status = compute_local(m, &device);
    }
    if (status == FK_OK)
        status = read_local(m);
    m->figures.compute_seconds += MPI_Wtime() - start;
    status = agree(m, status);
    if (status != FK_OK)
        return status;
    m->figures.pairs += fk_eval_share_pairs(m->eval);
    /* Each particle's results are nonzero on one rank only, all bits zero elsewhere: the OR is
     * that rank's bits exactly, on every rank count. */
    start = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, m->forces, (int)(m->n * m->components), MPI_UINT64_T, MPI_BOR,
                  m->comm);
    if (m->potential)
        MPI_Allreduce(MPI_IN_PLACE, m->potentials, (int)m->n, MPI_UINT64_T, MPI_BOR, m->comm);
    m->figures.communication_seconds += MPI_Wtime() - start;
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
        return everyone_fails(m, FK_ERR_STATE, "%s before a successful compute", what);
    if (!from)
        return everyone_fails(m, FK_ERR_STATE, "%s: config.potential was not set", what);
    const size_t first = all ? 0 : (size_t)m->firsts[m->rank];
    const size_t count = all ? m->n : (size_t)m->counts[m->rank];
    memcpy(out, from + first * per, count * per * sizeof *out);
    return FK_OK;
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
    return read_results(m, m ? m->forces : NULL, m ? m->components : 0, 1, forces,
                        "read_all_forces");
}

fk_status fk_mpi_eval_read_all_potentials(fk_mpi_eval *m, double *potentials)
{
    return read_results(m, m ? m->potentials : NULL, 1, 1, potentials, "read_all_potentials");
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
        *first = m && m->n ? (size_t)m->firsts[m->rank] : 0;
    return m && m->n ? (size_t)m->counts[m->rank] : 0;
}

const char *fk_mpi_eval_last_error(const fk_mpi_eval *m)
{
    return m ? m->error : create_error;
}

fk_status fk_mpi_eval_figures(fk_mpi_eval *m, int root, fk_mpi_rank_figures *figures)
{
    if (!m)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = root < 0 || root >= m->size
                           ? local_fail(m, FK_ERR_INVALID_ARGUMENT, "figures: root %d", root)
                       : m->rank == root && !figures
                           ? local_fail(m, FK_ERR_INVALID_ARGUMENT, "figures: NULL on root")
                           : FK_OK;
    status = agree(m, status);
    if (status != FK_OK)
        return status;
    MPI_Gather(&m->figures, (int)sizeof m->figures, MPI_BYTE, figures, (int)sizeof m->figures,
               MPI_BYTE, root, m->comm);
    return FK_OK;
}

void fk_mpi_eval_reset_figures(fk_mpi_eval *m)
{
    if (!m)
        return;
    const size_t particles = m->figures.particles;
    memset(&m->figures, 0, sizeof m->figures);
    m->figures.rank = m->rank;
    m->figures.particles = particles;
}
