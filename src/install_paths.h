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

#endif
