/* Writing files without destroying what is not ours (issue #13): an output replaces a regular
 * file atomically (temporary name in the same directory, synced, renamed), but a device, FIFO or
 * /dev/stdout is written in place, never renamed over; a read-only file is refused as cp refuses
 * it; a symbolic link is written through, not replaced. Temporaries hold an advisory lock while
 * they live, so that a later writer of the same target can tell a stale one (its writer was
 * killed) from a live one and remove only the stale. Also the lock that serialises
 * read-modify-write of a shared file (the tuning database and its resume file).
 *
 * Statuses: FK_ERR_INVALID_ARGUMENT when the target itself is refused (a directory, no
 * permission, a missing directory, a name too long: the user's to fix, exit 2), FK_ERR_IO when
 * writing fails (a full disk: a runtime failure, exit 1), FK_ERR_HOST_MEMORY. Never prints. */
#ifndef FK_FILES_H
#define FK_FILES_H

#include <stddef.h>
#include <stdio.h>

#include "forcekit/forcekit.h"

typedef struct fk_file_writer fk_file_writer;

/* Starts an output: *file is where to write. On failure *writer and *file are NULL. */
fk_status fk__writer_open(const char *path, fk_file_writer **writer, FILE **file, char *error,
                          size_t error_size);
/* Flushes, syncs and closes the data (the temporary keeps its lock until commit or abort). */
fk_status fk__writer_finish(fk_file_writer *writer, char *error, size_t error_size);
/* Finishes if needed, then renames the temporary onto the target; frees the writer either way
 * (on failure the temporary is removed). */
fk_status fk__writer_commit(fk_file_writer *writer, char *error, size_t error_size);
/* Drops the output: the temporary is removed, the target untouched. NULL is fine. */
void fk__writer_abort(fk_file_writer *writer);

/* Checks up front that path could be written (the refusals above, and a temporary can be created
 * in its directory), writing nothing: a long run learns of an unwritable checkpoint at its start,
 * not at its first checkpoint. A device or FIFO is not opened (that could block). */
fk_status fk__writer_check(const char *path, char *error, size_t error_size);

/* The whole cycle: write_body(file, context) returns 0, or nonzero with errno set. */
fk_status fk__write_file(const char *path, int (*write_body)(FILE *file, const void *context),
                         const void *context, char *error, size_t error_size);

/* The temporary name a writer of target uses, before its six random characters: target's
 * directory and name, the name cut so that name + ".tmpXXXXXX" fits NAME_MAX. malloc'ed. */
char *fk__writer_temp_prefix(const char *target);

/* Takes an exclusive advisory lock (flock) on "<path>.lock", waiting for it. Returns the lock's
 * descriptor, or -1 (errno set) when it cannot be taken: the caller then carries on unlocked
 * only where losing a concurrent update is acceptable. */
int fk__lock_acquire(const char *path);
void fk__lock_release(int lock);

/* Opens path for reading only when it is a regular file (O_NONBLOCK, so a FIFO never blocks,
 * then fstat). Returns the descriptor with *size, or -1 with errno (EINVAL: not a regular
 * file). */
int fk__open_regular(const char *path, size_t *size);

#endif
