/* The command under mpirun (src/cli/mpi.h). */
#include "cli/mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef FK_CLI_MPI
#include <mpi.h>

#include "forcekit/forcekit_mpi.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

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
        /* A failure every rank agreed on is printed by rank 0 alone; another rank's abort,
         * reached at once, could kill rank 0 before its message left (seen: the line cut after
         * "forcekit: invalid argument: "). The other ranks give it a second first. */
        if (rank != 0) {
            const struct timespec pause = {.tv_sec = 1, .tv_nsec = 0};
            nanosleep(&pause, NULL);
        }
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

/* Whether every rank read the same pair table and exclusions (--params, --exclude: each rank
 * reads its own copy of the files): XXH3-64 of them, compared through one reduction of the digest
 * and its complement (the largest of both is every rank's only when all are equal). The
 * library's config check (fk_mpi_eval_create) covers the other options; these go to the local
 * evaluation directly. */
static int same_tables_everywhere(const fk_eval_config *config, const fk_pair_table *table,
                                  const size_t *exclusions, size_t exclusion_count)
{
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    const unsigned long long sizes[2] = {table ? table->types : 0, exclusion_count};
    XXH3_64bits_update(&state, sizes, sizeof sizes);
    const fk_kernel_info *info = fk_kernel_find(config->kernel);
    if (table && table->types && info) {
        const size_t pairs = table->types * table->types;
        if (table->values)
            XXH3_64bits_update(&state, table->values,
                               pairs * info->pair_parameters * sizeof *table->values);
        if (table->present)
            XXH3_64bits_update(&state, table->present, pairs);
    }
    if (exclusion_count)
        XXH3_64bits_update(&state, exclusions, 2 * exclusion_count * sizeof *exclusions);
    const unsigned long long digest = XXH3_64bits_digest(&state);
    unsigned long long both[2] = {digest, ~digest};
    MPI_Allreduce(MPI_IN_PLACE, both, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    return both[0] == ~both[1];
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
    if (!same_tables_everywhere(config, table, exclusions, exclusion_count)) {
        snprintf(message, size,
                 "the ranks read different pair tables or exclusions (--params, --exclude): "
                 "every rank must read the same files");
        fk_mpi_eval_destroy(m);
        return FK_ERR_INVALID_ARGUMENT;
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

/* The simulation's backend: one distributed evaluation; this rank's slice is an equal split.
 * With the device path, fk_mpi_integrator on it: each rank's slab on its own device. */
static struct sim_state {
    double halo_margin; /* fk_mpi_integrator_config.margin */
    fk_mpi_eval *m;
    fk_mpi_integrator *integrator;
    size_t n;
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
    fk_particles particles = *all;
    if (strcmp(config->kernel, "gaj") != 0)
        particles.velocity = NULL; /* only gaj reads them */
    /* Every rank generated or read (or restarted from) its own copy: the library checks that
     * they are one system (issue #32) before it takes this rank's slice. */
    status = fk_mpi_eval_set_all_particles(s->m, &particles);
    if (status == FK_OK)
        *local = fk_mpi_eval_local(s->m);
    return status;
}

static fk_status sim_update(void *user, const double *position, const double *velocity)
{
    struct sim_state *s = user;
    /* Every rank integrated all particles; the library checks that their positions still agree
     * (velocities are gathered only when the particles were set with them: gaj). */
    return fk_mpi_eval_update_all_positions(s->m, position, velocity);
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
    if (s->error[0] || !s->m)
        return s->error;
    return s->integrator ? fk_mpi_integrator_last_error(s->integrator)
                         : fk_mpi_eval_last_error(s->m);
}

static void sim_destroy(void *user)
{
    struct sim_state *s = user;
    fk_mpi_integrator_destroy(s->integrator); /* before its evaluation */
    s->integrator = NULL;
    fk_mpi_eval_destroy(s->m);
    s->m = NULL;
}

/* The device path: fk_mpi_integrator refuses (FK_ERR_UNSUPPORTED) what it cannot divide (the
 * allgather scheme, gravity, Hermite, loops without a skin); the command then integrates on the
 * host with replicated data. */
static fk_status sim_integrator_create(void *user, const fk_integrator_config *config)
{
    struct sim_state *s = user;
    fk_mpi_integrator_config mc = FK_CONFIG_INIT(fk_mpi_integrator_config);
    mc.margin = s->halo_margin;
    mc.integrator = *config;
    const fk_status status = fk_mpi_integrator_create(s->m, &mc, &s->integrator);
    if (status != FK_OK)
        snprintf(s->error, sizeof s->error, "%s", fk_mpi_integrator_last_error(NULL));
    return status;
}

static fk_status sim_set_state(void *user, const double *position, const double *velocity,
                               uint64_t step, const double *bound)
{
    struct sim_state *s = user;
    return bound ? fk_mpi_integrator_restore_all_state(s->integrator, position, velocity, step,
                                                       bound[0], bound[1])
                 : fk_mpi_integrator_set_all_state(s->integrator, position, velocity, step);
}

static fk_status sim_step(void *user, uint64_t steps)
{
    return fk_mpi_integrator_step(((struct sim_state *)user)->integrator, steps);
}

static fk_status sim_get_state(void *user, double *position, double *velocity)
{
    return fk_mpi_integrator_get_all_state(((struct sim_state *)user)->integrator, position,
                                           velocity, NULL);
}

static fk_status sim_energies(void *user, double *kinetic, double *potential)
{
    return fk_mpi_integrator_energies(((struct sim_state *)user)->integrator, kinetic, potential);
}

static fk_status sim_counters(void *user, uint64_t *rebuilds, uint64_t *rescales,
                              uint64_t *redistributions)
{
    return fk_mpi_integrator_counters(((struct sim_state *)user)->integrator, rebuilds, rescales,
                                      redistributions);
}

static const fkt_sim_backend sim_backend = {.user = &sim_state,
                                            .create = sim_create,
                                            .update = sim_update,
                                            .compute = sim_compute,
                                            .read_forces = sim_read_forces,
                                            .read_potentials = sim_read_potentials,
                                            .last_error = sim_last_error,
                                            .destroy = sim_destroy,
                                            .integrator_create = sim_integrator_create,
                                            .set_state = sim_set_state,
                                            .step = sim_step,
                                            .get_state = sim_get_state,
                                            .energies = sim_energies,
                                            .counters = sim_counters};

const fkt_sim_backend *cli_mpi_sim_backend(void)
{
    return active ? &sim_backend : NULL;
}

void cli_mpi_set_halo_margin(double margin)
{
    sim_state.halo_margin = margin;
}

/* The "mpi" object from the evaluation's figures or (integrator) the integrator's. */
static cJSON *rank_figures_json(fk_mpi_eval *m, fk_mpi_integrator *integrator)
{
    fk_mpi_rank_figures *figures = calloc((size_t)ranks, sizeof *figures);
    char *labels = calloc((size_t)ranks, device_label_size);
    const fk_status status = integrator ? fk_mpi_integrator_figures(integrator, 0, figures)
                                        : fk_mpi_eval_figures(m, 0, figures);
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

cJSON *cli_mpi_figures_json(fk_mpi_eval *m)
{
    return rank_figures_json(m, NULL);
}

cJSON *cli_mpi_sim_figures(void)
{
    if (!active || !sim_state.m)
        return NULL;
    cJSON *mpi = rank_figures_json(sim_state.m, sim_state.integrator);
    uint64_t counters[3];
    if (mpi && sim_state.integrator &&
        fk_mpi_integrator_counters(sim_state.integrator, &counters[0], &counters[1],
                                   &counters[2]) == FK_OK) {
        /* the state on each rank's device: how often the particles moved between the ranks
         * (set_state's distributions included), the lists' builds and fixed64's scales */
        cJSON_AddStringToObject(mpi, "integrate", "device");
        cJSON_AddNumberToObject(mpi, "redistributions", (double)counters[2]);
        cJSON_AddNumberToObject(mpi, "rebuilds", (double)counters[0]);
        cJSON_AddNumberToObject(mpi, "rescales", (double)counters[1]);
    } else if (mpi) {
        cJSON_AddStringToObject(mpi, "integrate", "host");
    }
    return mpi;
}

uint64_t cli_mpi_rank0_count(uint64_t count)
{
    if (active) {
        unsigned long long value = count;
        MPI_Bcast(&value, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
        count = value;
    }
    return count;
}

#else

uint64_t cli_mpi_rank0_count(uint64_t count)
{
    return count;
}

const fkt_sim_backend *cli_mpi_sim_backend(void)
{
    return NULL;
}

void cli_mpi_set_halo_margin(double margin)
{
    (void)margin;
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
