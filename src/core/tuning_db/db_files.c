/* The database's files as bytes: a bounded read (a database is small; /dev/zero named as one must
 * not be read until memory runs out) and a write through files.h that replaces a regular file
 * atomically, creating its directory. Separate from the JSON so that the database and the tuner's
 * resume file share one reader and one writer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/files.h"
#include "common/text.h"
#include "core/tuning_db/db_private.h"

int fk__tuning_make_parent_directories(const char *path)
{
    char *copy = fk_copy_string(path);
    if (!copy)
        return -1;
    char *slash = strrchr(copy, '/');
    int status = 0;
    if (slash && slash != copy) {
        *slash = '\0';
        for (char *cursor = copy + 1; *cursor && status == 0; ++cursor) {
            if (*cursor != '/')
                continue;
            *cursor = '\0';
            struct stat st;
            if (mkdir(copy, 0755) != 0 && !(stat(copy, &st) == 0 && S_ISDIR(st.st_mode)))
                status = -1;
            *cursor = '/';
        }
        struct stat st;
        if (status == 0 && mkdir(copy, 0755) != 0 && !(stat(copy, &st) == 0 && S_ISDIR(st.st_mode)))
            status = -1;
    }
    free(copy);
    return status;
}

static int write_text_body(FILE *file, const void *context)
{
    return fputs((const char *)context, file) == EOF ? -1 : 0;
}

fk_status fk__tuning_write_text(const char *path, const char *text, char *error, size_t error_size)
{
    return fk__write_file(path, write_text_body, text, error, error_size);
}

char *fk__tuning_read_bounded(const char *path, size_t *size)
{
    size_t length = 0;
    int fd = fk__open_regular(path, &length);
    if (fd < 0)
        return NULL;
    if (length > DB_MAX_BYTES) {
        close(fd);
        errno = EFBIG;
        return NULL;
    }
    char *text = malloc(length + 1);
    size_t used = 0;
    int saved = ENOMEM;
    while (text && used < length) {
        ssize_t got = read(fd, text + used, length - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            saved = got < 0 ? errno : EIO; /* shrank while being read */
            free(text);
            text = NULL;
            break;
        }
        used += (size_t)got;
    }
    close(fd);
    if (!text) {
        errno = saved;
        return NULL;
    }
    text[used] = '\0';
    *size = used;
    return text;
}
