/* The command under mpirun (src/cli/mpi.h). */
#include "mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FK_CLI_MPI
#include <mpi.h>

#include "forcekit/forcekit_mpi.h"

static int active, rank, ranks = 1;

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

#else

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
