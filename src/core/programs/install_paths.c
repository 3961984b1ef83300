/* Finding the library's data from where the library is (install_paths.h).
 *
 * dladdr on one of the library's own functions names the file its code came from: libforcekit.so
 * for users of the shared library, the executable itself for programs linked with the static one
 * (the forcekit command). The relative paths from the install's lib and bin directories to its data
 * directory are computed by CMake at configure time (FK_LIBDIR_TO_DATA, FK_BINDIR_TO_DATA), so a
 * prefix may be moved as a whole: nothing absolute is compiled in that the lookup depends on. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/programs/install_paths.h"
#include "common/text.h"

#ifndef FK_LIBDIR_TO_DATA
#define FK_LIBDIR_TO_DATA "../share/forcekit"
#endif
#ifndef FK_BINDIR_TO_DATA
#define FK_BINDIR_TO_DATA "../share/forcekit"
#endif
#ifndef FK_BUILD_DIR
#define FK_BUILD_DIR ""
#endif
#ifndef FK_INSTALL_DATA_DIR
#define FK_INSTALL_DATA_DIR ""
#endif

static char *join(const char *dir, const char *relative)
{
    const size_t size = strlen(dir) + strlen(relative) + 2;
    char *path = malloc(size);
    if (path)
        snprintf(path, size, "%s/%s", dir, relative);
    return path;
}

/* An object of the library: dladdr names the file it was loaded from (a function's address would
 * need a cast that ISO C does not allow). */
static const char anchor = 0;

/* The directory of the file this code was loaded from (malloc'ed), or NULL. */
static char *loaded_from_dir(void)
{
    Dl_info info;
    if (!dladdr(&anchor, &info) || !info.dli_fname || !*info.dli_fname)
        return NULL;
    char *resolved = realpath(info.dli_fname, NULL);
    if (!resolved)
        return NULL;
    char *slash = strrchr(resolved, '/');
    if (slash == resolved)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    return resolved;
}

/* 1 when path lies inside dir (both absolute). */
static int inside(const char *path, const char *dir)
{
    const size_t length = strlen(dir);
    return length > 0 && strncmp(path, dir, length) == 0 &&
           (path[length] == '/' || path[length] == '\0');
}

size_t fk__data_candidates(const char *installed_relative, const char *source_path, char **paths,
                           size_t max)
{
    size_t count = 0;
    char *here = loaded_from_dir();
    if (here) {
        const char *relatives[] = {FK_LIBDIR_TO_DATA, FK_BINDIR_TO_DATA};
        for (size_t r = 0; r < 2 && count < max; ++r) {
            if (r == 1 && strcmp(relatives[0], relatives[1]) == 0)
                break;
            char *data = join(here, relatives[r]);
            if (!data)
                continue;
            /* "<prefix>/share/forcekit", not "<prefix>/lib/../share/forcekit": paths are shown */
            char *resolved = realpath(data, NULL);
            char *candidate = join(resolved ? resolved : data, installed_relative);
            free(resolved);
            free(data);
            if (candidate)
                paths[count++] = candidate;
        }
        /* The source tree is used only by the library of the build tree itself: an installed copy
         * must never read a checkout that happens to still exist where it was configured. */
        char *build = *FK_BUILD_DIR ? realpath(FK_BUILD_DIR, NULL) : NULL;
        if (build && source_path && inside(here, build) && count < max) {
            char *copy = fk_copy_string(source_path);
            if (copy)
                paths[count++] = copy;
        }
        free(build);
        free(here);
    }
    if (*FK_INSTALL_DATA_DIR && count < max) {
        char *candidate = join(FK_INSTALL_DATA_DIR, installed_relative);
        if (candidate)
            paths[count++] = candidate;
    }
    return count;
}

void fk__data_candidates_free(char **paths, size_t count)
{
    for (size_t k = 0; k < count; ++k)
        free(paths[k]);
}

static const fk__embedded_file *embedded_find(const char *name)
{
    for (const fk__embedded_file *file = fk__embedded_files; name && file->name; ++file)
        if (strcmp(file->name, name) == 0)
            return file;
    return NULL;
}

int fk__embedded_has(const char *name)
{
    return embedded_find(name) != NULL;
}

char *fk__embedded_read(const char *name, size_t *size)
{
    const fk__embedded_file *file = embedded_find(name);
    if (!file) {
        errno = ENOENT;
        return NULL;
    }
    char *copy = malloc(file->size + 1);
    if (!copy) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(copy, file->data, file->size);
    copy[file->size] = '\0';
    if (size)
        *size = file->size;
    return copy;
}
