#include "fuzz_support.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *directory;

static void remove_directory(void)
{
    if (!directory)
        return;
    DIR *listing = opendir(directory);
    if (listing) {
        struct dirent *item;
        while ((item = readdir(listing)) != NULL) {
            if (strcmp(item->d_name, ".") == 0 || strcmp(item->d_name, "..") == 0)
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", directory, item->d_name);
            unlink(path);
        }
        closedir(listing);
    }
    rmdir(directory);
    free(directory);
    directory = NULL;
}

const char *fk_fuzz_dir(void)
{
    if (directory)
        return directory;
    /* Memory-backed when possible: every input is written to a file, and a disk-backed /tmp made
     * the harnesses ten times slower. */
    const char *base = getenv("FK_FUZZ_TMPDIR");
    if (!base || !*base)
        base = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    char template_path[4096];
    snprintf(template_path, sizeof template_path, "%s/forcekit-fuzz.XXXXXX",
             base && *base ? base : "/tmp");
    if (!mkdtemp(template_path))
        abort();
    directory = strdup(template_path);
    if (!directory)
        abort();
    atexit(remove_directory);
    return directory;
}

const char *fk_fuzz_path(const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", fk_fuzz_dir(), name);
    return path;
}

const char *fk_fuzz_write(const char *name, const uint8_t *data, size_t size)
{
    const char *path = fk_fuzz_path(name);
    FILE *file = fopen(path, "wb");
    if (!file || (size && fwrite(data, 1, size, file) != size) || fclose(file) != 0)
        abort();
    return path;
}
