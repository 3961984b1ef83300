/* What the MPI tests share (tests/mpi/test_mpi.c, test_mpi_integrator.c): the rank, the failed
 * checks, one context per rank, a random stream that is the same on every rank, and the start and
 * end of main. Each test includes it once. */
#ifndef FK_MPI_TEST_H
#define FK_MPI_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <mpi.h>

#include "forcekit/forcekit.h"

static int rank, ranks, failures;
static fk_context *context;

#define CHECK(condition, ...)                                                                      \
    do {                                                                                           \
        if (!(condition)) {                                                                        \
            fprintf(stderr, "rank %d: FAILED %s:%d: ", rank, __FILE__, __LINE__);                  \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            ++failures;                                                                            \
        }                                                                                          \
    } while (0)

/* splitmix64: the same stream on every rank from the broadcast seed. */
static uint64_t rng_state;
static double uniform(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* MPI, the rank, the seed (FK_TEST_SEED on rank 0, else the time; printed there and broadcast)
 * and a context on every rank ($FORCEKIT_DEVICE). 0, or 1 (after MPI_Finalize) when some rank has
 * no context. */
static int mpi_test_start(int *argc, char ***argv, const char *name)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    unsigned long long seed = 0;
    if (rank == 0) {
        const char *text = getenv("FK_TEST_SEED");
        seed = text ? strtoull(text, NULL, 10) : (unsigned long long)time(NULL) * 2654435761ull;
        printf("%s: P=%d, FK_TEST_SEED=%llu\n", name, ranks, seed);
    }
    MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    rng_state = seed;
    fk_context_config context_config = FK_CONFIG_INIT(fk_context_config);
    context_config.device = getenv("FORCEKIT_DEVICE");
    fk_status status = fk_context_create(&context_config, &context);
    int ok = status == FK_OK, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        fprintf(stderr, "rank %d: context: %s\n", rank, fk_status_string(status));
        MPI_Finalize();
        return 1;
    }
    return 0;
}

/* The failed checks over all ranks, reported by rank 0; the exit status. */
static int mpi_test_finish(const char *name)
{
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s P=%d: %s (%d failed checks)\n", name, ranks, total ? "FAILED" : "passed", total);
    fk_context_destroy(context);
    MPI_Finalize();
    return total ? 1 : 0;
}

#endif
