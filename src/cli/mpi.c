/* The command under mpirun (src/cli/mpi.h). */
#include "mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FK_CLI_MPI
#include <mpi.h>

#include "forcekit/forcekit_mpi.h"

static int active, rank, ranks = 1;
/* This rank's device, "P:D name", for the JSON document's per-rank figures: which GPU each rank
 * ran on is what a multi-device run is checked by. */
enum { device_label_size = 96 };
static char device_label[device_label_size];

void cli_mpi_start(int *argc, char ***argv)
{
    /* Started by a launcher: Open MPI (OMPI_COMM_WORLD_SIZE), MPICH's Hydra (PMI_SIZE), PMIx. A
     * plain `forcekit ...` never initializes MPI (a singleton start costs time and may print). */
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE") && !getenv("PMIX_RANK"))
        return;
    if (MPI_Init(argc, argv) != MPI_SUCCESS)
        return;
    active = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    /* Rank 0 writes the outputs and the JSON document; the others' standard output is
     * discarded (their errors still reach standard error). */
    if (rank != 0 && !freopen("/dev/null", "w", stdout))
        return;
}

void cli_mpi_finish(int code)
{
    if (!active)
        return;
    /* A rank that fails outside a collective would leave the others waiting in one: a failed
     * command ends the whole job, with its exit code, instead of finalizing. Failures inside
     * libforcekit_mpi are agreed on by every rank, which all return the same code. */
    if (code != 0) {
        fflush(NULL);
        MPI_Abort(MPI_COMM_WORLD, code);
    }
    MPI_Finalize();
}

int cli_mpi_active(void)
{
    return active;
}

int cli_mpi_rank(void)
{
    return rank;
}

int cli_mpi_ranks(void)
{
    return ranks;
}

const char *cli_mpi_device(char *selector)
{
    if (!active || getenv("FORCEKIT_DEVICE"))
        return NULL;
    fk_device_info *devices = NULL;
    size_t count = 0;
    if (fk_devices_list(&devices, &count) != FK_OK || count == 0) {
        fk_devices_free(devices);
        return NULL;
    }
    size_t gpus = 0;
    for (size_t k = 0; k < count; ++k)
        gpus += devices[k].type == FK_DEVICE_GPU;
    const size_t choices = gpus ? gpus : count;
    size_t pick = (size_t)fk_mpi_local_rank(MPI_COMM_WORLD) % choices, seen = 0;
    const char *chosen = NULL;
    for (size_t k = 0; k < count && !chosen; ++k)
        if (!gpus || devices[k].type == FK_DEVICE_GPU) {
            if (seen++ == pick) {
                snprintf(selector, 32, "%s", devices[k].selector);
                chosen = selector;
            }
        }
    fk_devices_free(devices);
    return chosen;
}

fk_particles cli_mpi_slice(const fk_particles *all, size_t *first_out)
{
    const size_t first = all->count * (size_t)rank / (size_t)ranks;
    const size_t count = all->count * ((size_t)rank + 1) / (size_t)ranks - first;
    if (first_out)
        *first_out = first;
    return (fk_particles){.count = count,
                          .position = all->position + 3 * first,
                          .mass = all->mass ? all->mass + first : NULL,
                          .velocity = all->velocity ? all->velocity + 3 * first : NULL,
                          .type = all->type ? all->type + first : NULL};
}

fk_status cli_mpi_eval_open(fk_context *context, const fk_eval_config *config,
                            const fk_pair_table *table, const size_t *exclusions,
                            size_t exclusion_count, fk_mpi_eval **out, char *message, size_t size)
{
    *out = NULL;
    fk_mpi_eval *m = NULL;
    const fk_device_info *device = fk_context_device(context);
    if (device)
        snprintf(device_label, sizeof device_label, "%.15s %.79s", device->selector, device->name);
    fk_status status = fk_mpi_eval_create(context, config, MPI_COMM_WORLD, &m);
    if (status != FK_OK) {
        snprintf(message, size, "%s", fk_mpi_eval_last_error(NULL));
        return status;
    }
    /* The same tables on every rank and the same checks: a failure is every rank's. */
    if (exclusion_count && strcmp(fk_mpi_eval_scheme(m), "spatial") == 0) {
        snprintf(message, size,
                 "exclusions under mpirun need --algorithm all-pairs: the spatial scheme of "
                 "cells and lists does not take them (docs/mpi.md)");
        fk_mpi_eval_destroy(m);
        return FK_ERR_UNSUPPORTED;
    }
    fk_eval *eval = fk_mpi_eval_local(m);
    if (table)
        status = fk_eval_set_pair_table(eval, table);
    if (status == FK_OK && exclusion_count)
        status = fk_eval_set_exclusions(eval, exclusions, exclusion_count);
    if (status != FK_OK) {
        snprintf(message, size, "%s", fk_context_last_error(context));
        fk_mpi_eval_destroy(m);
        return status;
    }
    *out = m;
    return FK_OK;
}

/* The simulation's backend: one distributed evaluation; this rank's slice is an equal split. */
static struct sim_state {
    fk_mpi_eval *m;
    size_t first, count, n;
    char error[1200];
} sim_state;

static fk_status sim_create(void *user, fk_context *context, const fk_eval_config *config,
                            const fk_pair_table *table, const size_t *exclusions,
                            size_t exclusion_count, const fk_particles *all, fk_eval **local)
{
    struct sim_state *s = user;
    s->error[0] = '\0';
    s->n = all->count;
    fk_status status = cli_mpi_eval_open(context, config, table, exclusions, exclusion_count, &s->m,
                                         s->error, sizeof s->error);
    if (status != FK_OK)
        return status;
    fk_particles slice = cli_mpi_slice(all, &s->first);
    s->count = slice.count;
    if (strcmp(config->kernel, "gaj") != 0)
        slice.velocity = NULL; /* only gaj reads them */
    status = fk_mpi_eval_set_particles(s->m, &slice);
    if (status == FK_OK)
        *local = fk_mpi_eval_local(s->m);
    return status;
}

static fk_status sim_update(void *user, const double *position, const double *velocity)
{
    struct sim_state *s = user;
    /* Velocities are gathered only when the particles were set with them (gaj: sim_create). */
    return fk_mpi_eval_update_positions(s->m, position + 3 * s->first,
                                        velocity ? velocity + 3 * s->first : NULL);
}

static fk_status sim_compute(void *user, double *seconds)
{
    return fk_mpi_eval_compute(((struct sim_state *)user)->m, seconds);
}

static fk_status sim_read_forces(void *user, double *forces)
{
    return fk_mpi_eval_read_all_forces(((struct sim_state *)user)->m, forces);
}

static fk_status sim_read_potentials(void *user, double *potentials)
{
    return fk_mpi_eval_read_all_potentials(((struct sim_state *)user)->m, potentials);
}

static const char *sim_last_error(void *user)
{
    struct sim_state *s = user;
    return s->error[0] || !s->m ? s->error : fk_mpi_eval_last_error(s->m);
}

static void sim_destroy(void *user)
{
    struct sim_state *s = user;
    fk_mpi_eval_destroy(s->m);
    s->m = NULL;
}

static const fkt_sim_backend sim_backend = {.user = &sim_state,
                                            .create = sim_create,
                                            .update = sim_update,
                                            .compute = sim_compute,
                                            .read_forces = sim_read_forces,
                                            .read_potentials = sim_read_potentials,
                                            .last_error = sim_last_error,
                                            .destroy = sim_destroy};

const fkt_sim_backend *cli_mpi_sim_backend(void)
{
    return active ? &sim_backend : NULL;
}

cJSON *cli_mpi_figures_json(fk_mpi_eval *m)
{
    fk_mpi_rank_figures *figures = calloc((size_t)ranks, sizeof *figures);
    char *labels = calloc((size_t)ranks, device_label_size);
    const fk_status status = fk_mpi_eval_figures(m, 0, figures);
    /* Collective like the figures: every rank takes part whatever its allocation gave. */
    MPI_Gather(device_label, device_label_size, MPI_CHAR, labels, labels ? device_label_size : 0,
               MPI_CHAR, 0, MPI_COMM_WORLD);
    if (status != FK_OK || rank != 0 || !labels) {
        free(figures);
        free(labels);
        return NULL;
    }
    cJSON *mpi = cJSON_CreateObject();
    cJSON_AddNumberToObject(mpi, "ranks", ranks);
    cJSON *per_rank = cJSON_AddArrayToObject(mpi, "per_rank");
    for (int r = 0; r < ranks; ++r) {
        cJSON *entry = cJSON_CreateObject();
        cJSON_AddNumberToObject(entry, "rank", figures[r].rank);
        labels[(size_t)(r + 1) * device_label_size - 1] = '\0';
        cJSON_AddStringToObject(entry, "device", labels + (size_t)r * device_label_size);
        cJSON_AddNumberToObject(entry, "particles", (double)figures[r].particles);
        cJSON_AddNumberToObject(entry, "pairs", (double)figures[r].pairs);
        cJSON_AddNumberToObject(entry, "compute_seconds", figures[r].compute_seconds);
        cJSON_AddNumberToObject(entry, "communication_seconds", figures[r].communication_seconds);
        cJSON_AddNumberToObject(entry, "wait_seconds", figures[r].wait_seconds);
        cJSON_AddItemToArray(per_rank, entry);
    }
    free(figures);
    free(labels);
    return mpi;
}

cJSON *cli_mpi_sim_figures(void)
{
    return active && sim_state.m ? cli_mpi_figures_json(sim_state.m) : NULL;
}

#else

const fkt_sim_backend *cli_mpi_sim_backend(void)
{
    return NULL;
}

cJSON *cli_mpi_sim_figures(void)
{
    return NULL;
}

void cli_mpi_start(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
}

void cli_mpi_finish(int code)
{
    (void)code;
}

int cli_mpi_active(void)
{
    return 0;
}

int cli_mpi_rank(void)
{
    return 0;
}

int cli_mpi_ranks(void)
{
    return 1;
}

const char *cli_mpi_device(char *selector)
{
    (void)selector;
    return NULL;
}

#endif
