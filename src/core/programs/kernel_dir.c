/* The kernel directory of a context: where its .cl sources are read from (a directory on disk or
 * the copy built into the library) and the version they carry. Part of the programs layer: only
 * the program builder reads sources; the context (src/core/context/) resolves the directory once
 * at creation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/text.h"
#include "core/internal.h"
#include "core/programs/install_paths.h"

static int has_template(const char *dir)
{
    size_t size = strlen(dir) + 32;
    char *path = malloc(size);
    if (!path)
        return 0;
    snprintf(path, size, "%s/pairwise.cl", dir);
    struct stat st;
    int found = stat(path, &st) == 0 && S_ISREG(st.st_mode);
    free(path);
    return found;
}

char *fk__kernel_source_read(const fk_context *context, const char *relative, size_t *size)
{
    const char *dir = context->kernels_built_in ? "cl" : context->kernel_dir;
    if (!dir || !relative)
        return NULL;
    const size_t path_size = strlen(dir) + strlen(relative) + 2;
    char *path = malloc(path_size);
    if (!path)
        return NULL;
    snprintf(path, path_size, "%s/%s", dir, relative);
    char *text =
        context->kernels_built_in ? fk__embedded_read(path, size) : fk__read_file(path, size);
    free(path);
    return text;
}

/* An explicitly named directory (config or FORCEKIT_KERNEL_DIR) is authoritative: if it lacks the
 * sources that is an error, not a silent fall-back to some other copy of the kernels. Otherwise
 * the installed and build-tree directories are searched, and the copy built into the library
 * (install_paths.h) is the last resort: a program linked with the static library runs wherever
 * it is, and a directory found on disk still wins, so installed kernels stay editable. */
fk_status fk__kernel_dir_resolve(fk_context *context, const char *configured)
{
    const char *from_env = getenv("FORCEKIT_KERNEL_DIR");
    const char *explicit_dir = (configured && *configured) ? configured
                               : (from_env && *from_env)   ? from_env
                                                           : NULL;
    if (explicit_dir) {
        if (!has_template(explicit_dir))
            return fk__fail(context, FK_ERR_KERNEL_SOURCE,
                            "kernel sources not found: %s/pairwise.cl does not exist (set by %s)",
                            explicit_dir,
                            (configured && *configured) ? "the caller" : "FORCEKIT_KERNEL_DIR");
        context->kernel_dir = fk_copy_string(explicit_dir);
        return context->kernel_dir ? FK_OK : FK_ERR_HOST_MEMORY;
    }
    char *candidates[4];
    const size_t count = fk__data_candidates("cl", FK_SOURCE_KERNEL_DIR, candidates, 4);
    char searched[2048] = "";
    size_t used = 0;
    fk_status status = FK_ERR_KERNEL_SOURCE;
    for (size_t i = 0; i < count && status == FK_ERR_KERNEL_SOURCE; ++i) {
        if (has_template(candidates[i])) {
            context->kernel_dir = candidates[i];
            candidates[i] = NULL;
            status = context->kernel_dir ? FK_OK : FK_ERR_HOST_MEMORY;
        } else if (used < sizeof searched) {
            used +=
                (size_t)snprintf(searched + used, sizeof searched - used, ", %s", candidates[i]);
        }
    }
    fk__data_candidates_free(candidates, count);
    if (status == FK_OK)
        return status;
    if (fk__embedded_has("cl/pairwise.cl")) {
        context->kernel_dir = fk_copy_string(FK__BUILT_IN);
        context->kernels_built_in = 1;
        return context->kernel_dir ? FK_OK : FK_ERR_HOST_MEMORY;
    }
    return fk__fail(context, FK_ERR_KERNEL_SOURCE,
                    "kernel sources (pairwise.cl) not found; searched: $FORCEKIT_KERNEL_DIR "
                    "(unset)%s",
                    searched);
}

/* The kernel sources carry their own version (cl/VERSION): users may edit or replace an installed
 * kernel directory, and a library built for other kernels would fail in ways hard to trace. A
 * mismatch is a warning, not an error: edited kernels are a supported use. */
void fk__kernel_version_read(fk_context *context)
{
    char *text = fk__kernel_source_read(context, "VERSION", NULL);
    if (text) {
        text[strcspn(text, "\r\n")] = '\0';
        snprintf(context->kernel_version, sizeof context->kernel_version, "%s", text);
        free(text);
    } else {
        snprintf(context->kernel_version, sizeof context->kernel_version, "unknown");
    }
    if (strcmp(context->kernel_version, fk_version()) != 0)
        fk__warn(&context->warnings,
                 "the kernel sources in %s are version %s, this library is %s: results may be "
                 "wrong or builds may fail; point FORCEKIT_KERNEL_DIR at the kernels of this "
                 "version",
                 context->kernel_dir, context->kernel_version, fk_version());
}
