/* What forcekit_mpi.c (evaluations) and sources_mpi.c (block steps) share: the agreement on
 * failures after each phase, and the gather of every rank's figures. Not installed. */
#ifndef FK_MPI_AGREE_H
#define FK_MPI_AGREE_H

#include "forcekit/forcekit_mpi.h"

#define FK__MPI_ERROR_TEXT 1024

/* One rank's side of a distributed object: its communicator, its reason for a failed phase,
 * the agreed error of the last call, and its figures. */
typedef struct fk__mpi_part {
    MPI_Comm comm;
    int rank, size;
    fk_mpi_rank_figures figures;
    char local_error[FK__MPI_ERROR_TEXT];
    char error[FK__MPI_ERROR_TEXT];
} fk__mpi_part;

/* Collective, the first step of a create: every rank learns whether every rank allocated its
 * object (part NULL: this one did not); then each duplicates comm into its part (MPI errors: the
 * communicator's handler) and fills rank, size and figures.rank. FK_ERR_HOST_MEMORY on every
 * rank, with error (FK__MPI_ERROR_TEXT bytes) saying so, when some rank could not allocate. */
fk_status fk__mpi_part_open(fk__mpi_part *part, MPI_Comm comm, char *error);
/* Frees the part's communicator. */
void fk__mpi_part_close(fk__mpi_part *part);

/* Sets the part's local reason (printf format) and returns status. */
fk_status fk__mpi_local_fail(fk__mpi_part *part, fk_status status, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* All ranks learn whether any failed (one MPI_Allreduce of the lowest failing rank, then, on
 * failure, a broadcast of its status and "rank R: reason"); every rank returns that status and
 * keeps the message in error (empty on success). reason may be NULL or empty (the status's
 * name). Time spent goes to *wait_seconds when not NULL. */
fk_status fk__mpi_agree_on(MPI_Comm comm, fk_status status, const char *reason, char *error,
                           double *wait_seconds);
/* The same for a part, with its local reason, which it then clears. */
fk_status fk__mpi_agree(fk__mpi_part *part, fk_status status);
/* The same failure decided on every rank from collective data (no agreement needed). */
fk_status fk__mpi_everyone_fails(fk__mpi_part *part, fk_status status, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Collective, for input every rank must hold the same of (replicated data: each rank read the
 * same files): every rank's count of items and digest of their bytes against rank 0's. On a
 * difference every rank returns FK_ERR_INVALID_ARGUMENT with one message naming the lowest rank
 * that differs ("CALL: the ranks were given different ITEMS: rank 0 has 500 ITEMS, rank 1 has
 * 400 ..." or "... rank 1's ITEMS differ from rank 0's ..."; count 0 on every rank: one item,
 * "rank 1's ITEM differs ..."). Two broadcasts of 16 bytes and one
 * reduction of an int; nothing is allocated. */
fk_status fk__mpi_agree_replicated(fk__mpi_part *part, const char *call, const char *items,
                                   unsigned long long count, uint64_t digest);
/* Collective: every rank's figures on root, in rank order. On success the error of the last
 * failed call stays. */
fk_status fk__mpi_gather_figures(fk__mpi_part *part, int root, fk_mpi_rank_figures *figures);

#endif
