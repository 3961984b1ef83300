/* The failure agreement and the figures of the MPI layer (src/mpi/agree.h). */
#include "mpi/agree.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

fk_status fk__mpi_part_open(fk__mpi_part *part, MPI_Comm comm, char *error)
{
    const fk_status allocated = fk__mpi_agree_on(comm, part ? FK_OK : FK_ERR_HOST_MEMORY,
                                                 "out of host memory", error, NULL);
    if (allocated != FK_OK)
        return allocated;
    MPI_Comm_dup(comm, &part->comm);
    MPI_Comm_rank(part->comm, &part->rank);
    MPI_Comm_size(part->comm, &part->size);
    part->figures.rank = part->rank;
    return FK_OK;
}

void fk__mpi_part_close(fk__mpi_part *part)
{
    MPI_Comm_free(&part->comm);
}

fk_status fk__mpi_local_fail(fk__mpi_part *part, fk_status status, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(part->local_error, sizeof part->local_error, format, args);
    va_end(args);
    return status;
}

fk_status fk__mpi_agree_on(MPI_Comm comm, fk_status status, const char *reason, char *error,
                           double *wait_seconds)
{
    const double start = MPI_Wtime();
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int failing = status == FK_OK ? size : rank, lowest = size;
    MPI_Allreduce(&failing, &lowest, 1, MPI_INT, MPI_MIN, comm);
    if (wait_seconds)
        *wait_seconds += MPI_Wtime() - start;
    if (lowest == size) {
        error[0] = '\0';
        return FK_OK;
    }
    struct {
        int status;
        char text[FK__MPI_ERROR_TEXT];
    } message;
    memset(&message, 0, sizeof message);
    if (rank == lowest) {
        message.status = (int)status;
        snprintf(message.text, sizeof message.text, "rank %d: %.1000s", rank,
                 reason && reason[0] ? reason : fk_status_string(status));
    }
    MPI_Bcast(&message, (int)sizeof message, MPI_BYTE, lowest, comm);
    memcpy(error, message.text, FK__MPI_ERROR_TEXT);
    error[FK__MPI_ERROR_TEXT - 1] = '\0';
    return (fk_status)message.status;
}

fk_status fk__mpi_agree(fk__mpi_part *part, fk_status status)
{
    status = fk__mpi_agree_on(part->comm, status, part->local_error, part->error,
                              &part->figures.wait_seconds);
    part->local_error[0] = '\0';
    return status;
}

fk_status fk__mpi_everyone_fails(fk__mpi_part *part, fk_status status, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(part->error, sizeof part->error, format, args);
    va_end(args);
    return status;
}

fk_status fk__mpi_agree_replicated(fk__mpi_part *part, const char *call, const char *items,
                                   unsigned long long count, uint64_t digest)
{
    const double start = MPI_Wtime();
    unsigned long long first[2] = {count, (unsigned long long)digest};
    MPI_Bcast(first, 2, MPI_UNSIGNED_LONG_LONG, 0, part->comm);
    const int differs = count != first[0] || (unsigned long long)digest != first[1];
    int mine = differs ? part->rank : part->size, lowest = part->size;
    MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, part->comm);
    if (lowest == part->size) {
        part->figures.wait_seconds += MPI_Wtime() - start;
        return FK_OK;
    }
    unsigned long long other[2] = {count, (unsigned long long)digest};
    MPI_Bcast(other, 2, MPI_UNSIGNED_LONG_LONG, lowest, part->comm);
    part->figures.wait_seconds += MPI_Wtime() - start;
    if (other[0] != first[0])
        return fk__mpi_everyone_fails(
            part, FK_ERR_INVALID_ARGUMENT,
            "%s: the ranks were given different %s: rank 0 has %llu %s, rank %d has %llu (every "
            "rank must pass the same system: did each rank read the same files?)",
            call, items, first[0], items, lowest, other[0]);
    if (first[0] == 0) /* one item, no count */
        return fk__mpi_everyone_fails(part, FK_ERR_INVALID_ARGUMENT,
                                      "%s: the ranks were given different %ss: rank %d's %s "
                                      "differs from rank 0's (XXH3-64 %016llx against %016llx; "
                                      "every rank must pass the same one)",
                                      call, items, lowest, items, other[1], first[1]);
    return fk__mpi_everyone_fails(
        part, FK_ERR_INVALID_ARGUMENT,
        "%s: the ranks were given different %s: rank %d's %s differ from rank 0's (the same "
        "count, %llu, but XXH3-64 %016llx against %016llx; every rank must pass the same system: "
        "did each rank read the same files?)",
        call, items, lowest, items, first[0], other[1], first[1]);
}

fk_status fk__mpi_gather_figures(fk__mpi_part *part, int root, fk_mpi_rank_figures *figures)
{
    fk_status status =
        root < 0 || root >= part->size
            ? fk__mpi_local_fail(part, FK_ERR_INVALID_ARGUMENT, "figures: root %d", root)
        : part->rank == root && !figures
            ? fk__mpi_local_fail(part, FK_ERR_INVALID_ARGUMENT, "figures: NULL on root")
            : FK_OK;
    /* The figures are read after a failure too (the command reports them with the error): a
     * successful gather keeps the last failed call's error instead of clearing it. */
    char error[FK__MPI_ERROR_TEXT];
    status =
        fk__mpi_agree_on(part->comm, status, part->local_error, error, &part->figures.wait_seconds);
    part->local_error[0] = '\0';
    if (status != FK_OK) {
        memcpy(part->error, error, sizeof error);
        return status;
    }
    MPI_Gather(&part->figures, (int)sizeof part->figures, MPI_BYTE, figures,
               (int)sizeof part->figures, MPI_BYTE, root, part->comm);
    return FK_OK;
}
