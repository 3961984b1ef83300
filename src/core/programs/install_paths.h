/* Where the library's data (kernel sources, the shipped tuning database) is, found from where the
 * library itself is loaded, so that an installed tree works from any prefix and after it is moved
 * (issue #15). Not installed. */
#ifndef FK_INSTALL_PATHS_H
#define FK_INSTALL_PATHS_H

#include <stddef.h>

/* Where one piece of data may be, in the order to try: installed_relative ("cl",
 * "tuning/shipped.json") under the data directory ("<prefix>/share/forcekit") found relative to the
 * file the library's code was loaded from (the shared library, or the executable that links the
 * static one); then source_path (the piece in the source tree; NULL: none), only when that file
 * lies in the build tree; then under the configure-time install prefix. Writes up to max
 * malloc'ed paths into paths and returns how many; the caller frees them. */
size_t fk__data_candidates(const char *installed_relative, const char *source_path, char **paths,
                           size_t max);
/* Frees count paths. */
void fk__data_candidates_free(char **paths, size_t count);

/* The built-in copy (issue #32), the last fallback after every candidate above: the files under
 * cl/ and data/tuning/shipped.json as they were at build time, compiled into the library by
 * cmake/embed_files.cmake, so that a program linked with the static library, living anywhere,
 * still has its kernels. Named as installed under the data directory ("cl/pairwise.cl",
 * "tuning/shipped.json"); the table ends with a NULL name. */
typedef struct fk__embedded_file {
    const char *name;
    const unsigned char *data;
    size_t size;
} fk__embedded_file;
extern const fk__embedded_file fk__embedded_files[];

/* What fk_context_kernel_dir and the tuning database's path say for the built-in copy. */
#define FK__BUILT_IN "built-in"

/* 1 when the built-in copy holds name. */
int fk__embedded_has(const char *name);
/* A malloc'ed, NUL-terminated copy of the built-in file name (its size in *size when not NULL),
 * or NULL when there is none or no memory (errno ENOENT or ENOMEM), as fk__read_file. */
char *fk__embedded_read(const char *name, size_t *size);

#endif
