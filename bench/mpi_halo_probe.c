/* How fast does this machine's MPI move a slab decomposition's halo? Each of P ranks sends
 * COUNT doubles to its two neighbours in a ring (zero to the others and to itself) with one
 * MPI_Alltoallv, the pattern of libforcekit_mpi's spatial updates (src/mpi/forcekit_mpi.c);
 * prints the median seconds over REPS and the bytes per second each rank sent, as JSON on rank 0.
 *   mpirun -np P bench_mpi_halo_probe COUNT [REPS]
 * A transport that is slow for this pattern (a fallback path inside a container, say) shows here
 * apart from forcekit. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stats.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const long count = argc > 1 ? atol(argv[1]) : 0;
    const int reps = argc > 2 ? atoi(argv[2]) : 10;
    if (count <= 0 || count > 100000000 || reps <= 0) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np P bench_mpi_halo_probe COUNT [REPS]\n");
        MPI_Finalize();
        return 2;
    }
    const int up = (rank + 1) % ranks, down = (rank + ranks - 1) % ranks;
    int *counts = calloc((size_t)ranks, sizeof *counts);
    int *displs = calloc((size_t)ranks, sizeof *displs);
    double *send = malloc(2 * (size_t)count * sizeof *send);
    double *receive = malloc(2 * (size_t)count * sizeof *receive);
    double *seconds = malloc((size_t)reps * sizeof *seconds);
    if (!counts || !displs || !send || !receive || !seconds)
        MPI_Abort(MPI_COMM_WORLD, 1);
    memset(send, 1, 2 * (size_t)count * sizeof *send);
    memset(receive, 0, 2 * (size_t)count * sizeof *receive);
    if (up != rank)
        counts[up] = (int)count;
    if (down != rank && down != up)
        counts[down] = (int)count;
    for (int r = 0, at = 0; r < ranks; ++r) {
        displs[r] = at;
        at += counts[r];
    }
    long sent = 0;
    for (int r = 0; r < ranks; ++r)
        sent += counts[r];
    for (int k = 0; k < reps; ++k) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        MPI_Alltoallv(send, counts, displs, MPI_DOUBLE, receive, counts, displs, MPI_DOUBLE,
                      MPI_COMM_WORLD);
        seconds[k] = MPI_Wtime() - start;
    }
    /* the upper middle of an even count (the default 10), as this probe has always reported */
    qsort(seconds, (size_t)reps, sizeof *seconds, fk__compare_doubles);
    double median = seconds[reps / 2], slowest = 0;
    MPI_Reduce(&median, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("{\"ranks\": %d, \"doubles_per_neighbour\": %ld, \"reps\": %d, "
               "\"seconds_median\": %.6g, \"bytes_per_second_per_rank\": %.6g}\n",
               ranks, count, reps, slowest, (double)sent * 8.0 / slowest);
    free(counts);
    free(displs);
    free(send);
    free(receive);
    free(seconds);
    MPI_Finalize();
    return 0;
}
