/* The failure agreement and the figures of the MPI layer (src/mpi/agree.h). */
#include "agree.h"

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

fk_status fk__mpi_gather_figures(fk__mpi_part *part, int root, fk_mpi_rank_figures *figures)
{
    fk_status status =
        root < 0 || root >= part->size
            ? fk__mpi_local_fail(part, FK_ERR_INVALID_ARGUMENT, "figures: root %d", root)
        : part->rank == root && !figures
            ? fk__mpi_local_fail(part, FK_ERR_INVALID_ARGUMENT, "figures: NULL on root")
            : FK_OK;
    status = fk__mpi_agree(part, status);
    if (status != FK_OK)
        return status;
    MPI_Gather(&part->figures, (int)sizeof part->figures, MPI_BYTE, figures,
               (int)sizeof part->figures, MPI_BYTE, root, part->comm);
    return FK_OK;
}
