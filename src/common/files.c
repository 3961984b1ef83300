/* Writing files without destroying what is not ours; see files.h. */
#define _DEFAULT_SOURCE /* flock, realpath */
#include "common/files.h"
#include "common/text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef NAME_MAX
#define NAME_MAX 255
#endif

#define TEMP_TAIL ".tmp"
#define TEMP_RANDOM "XXXXXX"
#define MAX_LINK_HOPS 40

struct fk_file_writer {
    char *target; /* what the rename replaces (a link already followed); the path for in place */
    char *temp;   /* NULL when written in place */
    FILE *file;
    int finished;
};

/* Problems with the target the user can fix on the command line, as opposed to a failing disk. */
static fk_status status_for_errno(int code)
{
    switch (code) {
    case EACCES:
    case EPERM:
    case EROFS:
    case EISDIR:
    case ENOENT:
    case ENOTDIR:
    case ENAMETOOLONG:
    case ELOOP:
        return FK_ERR_INVALID_ARGUMENT;
    case ENOMEM:
        return FK_ERR_HOST_MEMORY;
    default:
        return FK_ERR_IO;
    }
}

static fk_status fail(char *error, size_t error_size, const char *what, const char *path, int code)
{
    if (code == 0)
        code = EIO;
    fk_format_message(error, error_size, "%s %s: %s", what, path, strerror(code));
    return status_for_errno(code);
}

/* The mode a newly created file gets (mkstemp always makes 0600). umask() is read by setting and
 * restoring it; the tools that write files are single-threaded there. */
static mode_t default_file_mode(void)
{
    mode_t mask = umask(077);
    umask(mask);
    return (mode_t)0666 & ~mask;
}

/* Follows a chain of symbolic links whose last element does not exist (a dangling link), so that
 * the file is created where the link points and the link stays. malloc'ed; NULL with errno. */
static char *follow_dangling_links(const char *path)
{
    char *current = fk_copy_string(path);
    for (int hop = 0; current && hop < MAX_LINK_HOPS; ++hop) {
        struct stat st;
        if (lstat(current, &st) != 0 || !S_ISLNK(st.st_mode))
            return current;
        char link[PATH_MAX];
        ssize_t length = readlink(current, link, sizeof link - 1);
        if (length < 0) {
            free(current);
            return NULL;
        }
        link[length] = '\0';
        char *next;
        const char *slash = strrchr(current, '/');
        if (link[0] == '/' || !slash) {
            next = fk_copy_string(link);
        } else {
            size_t directory = (size_t)(slash - current) + 1;
            next = malloc(directory + (size_t)length + 1);
            if (next) {
                memcpy(next, current, directory);
                memcpy(next + directory, link, (size_t)length + 1);
            }
        }
        free(current);
        current = next;
    }
    if (current) {
        free(current);
        errno = ELOOP;
    } else {
        errno = ENOMEM;
    }
    return NULL;
}

char *fk__writer_temp_prefix(const char *target)
{
    const char *slash = strrchr(target, '/');
    size_t directory = slash ? (size_t)(slash - target) + 1 : 0;
    size_t name = strlen(target) - directory;
    const size_t room = NAME_MAX - (sizeof TEMP_TAIL - 1) - (sizeof TEMP_RANDOM - 1);
    if (name > room)
        name = room; /* a long name's temporary is its cut prefix: still in the same directory */
    char *prefix = malloc(directory + name + sizeof TEMP_TAIL);
    if (!prefix)
        return NULL;
    memcpy(prefix, target, directory + name);
    memcpy(prefix + directory + name, TEMP_TAIL, sizeof TEMP_TAIL);
    return prefix;
}

static int is_random_suffix(const char *text)
{
    size_t length = strlen(text);
    if (length != sizeof TEMP_RANDOM - 1)
        return 0;
    for (size_t i = 0; i < length; ++i) {
        char c = text[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
            return 0;
    }
    return 1;
}

/* Removes temporaries of this target left by writers that died (SIGKILL during a checkpoint):
 * a live writer holds a lock on its temporary, a dead one's lock went with it. Only regular files
 * of this user are touched; every failure just leaves the file. */
static void remove_stale_temporaries(const char *prefix)
{
    const char *slash = strrchr(prefix, '/');
    char *directory = slash ? malloc((size_t)(slash - prefix) + 2) : fk_copy_string(".");
    if (!directory)
        return;
    if (slash) {
        size_t length = (size_t)(slash - prefix);
        memcpy(directory, prefix, length ? length : 1); /* "/name" lives in "/" */
        directory[length ? length : 1] = '\0';
    }
    const char *stem = slash ? slash + 1 : prefix;
    size_t stem_length = strlen(stem);
    DIR *listing = opendir(directory);
    if (!listing) {
        free(directory);
        return;
    }
    int directory_fd = dirfd(listing);
    struct dirent *item;
    while ((item = readdir(listing)) != NULL) {
        if (strncmp(item->d_name, stem, stem_length) != 0 ||
            !is_random_suffix(item->d_name + stem_length))
            continue;
        int fd = openat(directory_fd, item->d_name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat opened, named;
        if (fstat(fd, &opened) == 0 && S_ISREG(opened.st_mode) && opened.st_uid == geteuid() &&
            flock(fd, LOCK_EX | LOCK_NB) == 0 &&
            fstatat(directory_fd, item->d_name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
            named.st_ino == opened.st_ino && named.st_dev == opened.st_dev)
            unlinkat(directory_fd, item->d_name, 0);
        close(fd);
    }
    closedir(listing);
    free(directory);
}

/* Where and how to write path: in place (a device, a FIFO), or replacing target atomically with
 * the given mode. */
typedef struct plan {
    char *target;
    int in_place;
    mode_t mode;
} plan;

static fk_status plan_output(const char *path, plan *out, char *error, size_t error_size)
{
    memset(out, 0, sizeof *out);
    out->mode = default_file_mode();
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return fail(error, error_size, "cannot write", path, EISDIR);
        if (!S_ISREG(st.st_mode)) {
            /* /dev/null, /dev/full, a FIFO, /dev/stdout on a pipe: never rename over these. */
            out->in_place = 1;
            out->target = fk_copy_string(path);
            return out->target ? FK_OK : FK_ERR_HOST_MEMORY;
        }
        /* A read-only file is refused, as the shell and cp refuse it (root may write anyway). */
        if (access(path, W_OK) != 0)
            return fail(error, error_size, "cannot write", path, errno);
        out->mode = st.st_mode & 0777; /* the file keeps its mode, as with cp or `>` */
        struct stat link;
        if (lstat(path, &link) == 0 && S_ISLNK(link.st_mode)) {
            /* Written through the link: the file it names is replaced, the link stays. A link
             * that does not resolve to the same file (/proc's magic links) is written in place. */
            char *resolved = realpath(path, NULL);
            struct stat real;
            if (resolved && stat(resolved, &real) == 0 && real.st_dev == st.st_dev &&
                real.st_ino == st.st_ino) {
                out->target = resolved;
                return FK_OK;
            }
            free(resolved);
            out->in_place = 1;
        }
        out->target = fk_copy_string(path);
        return out->target ? FK_OK : FK_ERR_HOST_MEMORY;
    }
    if (errno != ENOENT)
        return fail(error, error_size, "cannot write", path, errno);
    out->target = follow_dangling_links(path);
    if (!out->target)
        return fail(error, error_size, "cannot write", path, errno);
    return FK_OK;
}

static void writer_free(fk_file_writer *writer)
{
    free(writer->target);
    free(writer->temp);
    free(writer);
}

/* mkstemp, then the lock; a cleaner that took the lock first may have removed the name, so the
 * name must still be this file once the lock is held. */
static int create_locked_temporary(char *temp)
{
    for (int attempt = 0; attempt < 8; ++attempt) {
        size_t length = strlen(temp);
        memcpy(temp + length - (sizeof TEMP_RANDOM - 1), TEMP_RANDOM, sizeof TEMP_RANDOM - 1);
        int fd = mkstemp(temp);
        if (fd < 0)
            return -1;
        /* A file system without flock (some network ones): the temporary is unlocked, which
         * only lets a concurrent writer of the same target take it for stale. */
        if (flock(fd, LOCK_EX) != 0)
            return fd;
        struct stat opened, named;
        if (fstat(fd, &opened) == 0 && stat(temp, &named) == 0 && opened.st_ino == named.st_ino &&
            opened.st_dev == named.st_dev)
            return fd;
        close(fd); /* removed by a cleaner before the lock: that name is no longer ours */
    }
    errno = EAGAIN;
    return -1;
}

fk_status fk__writer_open(const char *path, fk_file_writer **writer, FILE **file, char *error,
                          size_t error_size)
{
    if (writer)
        *writer = NULL;
    if (file)
        *file = NULL;
    if (!path || !*path || !writer || !file) {
        fk_format_message(error, error_size, "no output file name");
        return FK_ERR_INVALID_ARGUMENT;
    }
    plan target;
    fk_status status = plan_output(path, &target, error, error_size);
    if (status != FK_OK) {
        free(target.target);
        if (status == FK_ERR_HOST_MEMORY)
            fk_format_message(error, error_size, "%s: out of memory", path);
        return status;
    }
    fk_file_writer *w = calloc(1, sizeof *w);
    if (!w) {
        free(target.target);
        fk_format_message(error, error_size, "%s: out of memory", path);
        return FK_ERR_HOST_MEMORY;
    }
    w->target = target.target;
    int fd;
    if (target.in_place) {
        fd = open(w->target, O_WRONLY | O_TRUNC | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) {
            status = fail(error, error_size, "cannot open", path, errno);
            writer_free(w);
            return status;
        }
    } else {
        char *prefix = fk__writer_temp_prefix(w->target);
        w->temp = prefix ? malloc(strlen(prefix) + sizeof TEMP_RANDOM) : NULL;
        if (!w->temp) {
            free(prefix);
            writer_free(w);
            fk_format_message(error, error_size, "%s: out of memory", path);
            return FK_ERR_HOST_MEMORY;
        }
        snprintf(w->temp, strlen(prefix) + sizeof TEMP_RANDOM, "%s%s", prefix, TEMP_RANDOM);
        remove_stale_temporaries(prefix);
        free(prefix);
        fd = create_locked_temporary(w->temp);
        if (fd < 0) {
            status = fail(error, error_size, "cannot create a temporary file for", path, errno);
            free(w->temp);
            w->temp = NULL;
            writer_free(w);
            return status;
        }
        if (fchmod(fd, target.mode) != 0) {
            status = fail(error, error_size, "cannot set the mode of", path, errno);
            close(fd);
            fk__writer_abort(w);
            return status;
        }
    }
    w->file = fdopen(fd, "w");
    if (!w->file) {
        status = fail(error, error_size, "cannot open", path, errno);
        close(fd);
        fk__writer_abort(w);
        return status;
    }
    *writer = w;
    *file = w->file;
    return FK_OK;
}

fk_status fk__writer_check(const char *path, char *error, size_t error_size)
{
    if (!path || !*path) {
        fk_format_message(error, error_size, "no output file name");
        return FK_ERR_INVALID_ARGUMENT;
    }
    plan target;
    fk_status status = plan_output(path, &target, error, error_size);
    if (status == FK_OK && !target.in_place) {
        char *prefix = fk__writer_temp_prefix(target.target);
        char *probe = prefix ? malloc(strlen(prefix) + sizeof TEMP_RANDOM) : NULL;
        if (!probe) {
            status = FK_ERR_HOST_MEMORY;
            fk_format_message(error, error_size, "%s: out of memory", path);
        } else {
            snprintf(probe, strlen(prefix) + sizeof TEMP_RANDOM, "%s%s", prefix, TEMP_RANDOM);
            int fd = create_locked_temporary(probe);
            if (fd < 0) {
                status = fail(error, error_size, "cannot create a file beside", path, errno);
            } else {
                unlink(probe);
                close(fd);
            }
        }
        free(probe);
        free(prefix);
    }
    free(target.target);
    return status;
}

fk_status fk__writer_finish(fk_file_writer *writer, char *error, size_t error_size)
{
    if (!writer)
        return FK_ERR_INVALID_ARGUMENT;
    if (writer->finished)
        return FK_OK;
    const char *failed = NULL;
    int saved = 0;
    errno = 0;
    if (fflush(writer->file) != 0 || ferror(writer->file))
        failed = "cannot write";
    /* fsync before rename: a crash must leave the old file or the new one, never an empty file
     * under the old name. Devices and pipes have nothing to sync. */
    else if (writer->temp && fsync(fileno(writer->file)) != 0)
        failed = "cannot sync";
    saved = errno;
    if (!writer->temp) {
        /* fclose reports delayed write errors (NFS, full disks): check it too. */
        if (fclose(writer->file) != 0 && !failed) {
            failed = "cannot write";
            saved = errno;
        }
        writer->file = NULL;
    }
    if (failed) {
        fk_status status = fail(error, error_size, failed, writer->target, saved);
        /* Writing failed: a runtime failure whatever errno says (EACCES cannot happen here). */
        return status == FK_ERR_HOST_MEMORY ? status : FK_ERR_IO;
    }
    writer->finished = 1;
    return FK_OK;
}

fk_status fk__writer_commit(fk_file_writer *writer, char *error, size_t error_size)
{
    if (!writer)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = fk__writer_finish(writer, error, error_size);
    if (status != FK_OK) {
        fk__writer_abort(writer);
        return status;
    }
    if (writer->temp) {
        /* Renamed while the lock is held, so no cleaner can take the temporary for stale. */
        if (rename(writer->temp, writer->target) != 0) {
            int saved = errno;
            fail(error, error_size, "cannot rename the temporary file onto", writer->target, saved);
            fk__writer_abort(writer);
            return FK_ERR_IO;
        }
        if (fclose(writer->file) != 0) {
            /* Already flushed and synced: nothing can be lost here any more. */
        }
        writer->file = NULL;
    }
    writer_free(writer);
    return FK_OK;
}

void fk__writer_abort(fk_file_writer *writer)
{
    if (!writer)
        return;
    if (writer->temp)
        unlink(writer->temp);
    if (writer->file)
        fclose(writer->file);
    writer_free(writer);
}

fk_status fk__write_file(const char *path, int (*write_body)(FILE *file, const void *context),
                         const void *context, char *error, size_t error_size)
{
    fk_file_writer *writer = NULL;
    FILE *file = NULL;
    fk_status status = fk__writer_open(path, &writer, &file, error, error_size);
    if (status != FK_OK)
        return status;
    errno = 0;
    if (write_body(file, context) != 0) {
        int saved = errno;
        fail(error, error_size, "cannot write", path, saved);
        fk__writer_abort(writer);
        return FK_ERR_IO;
    }
    return fk__writer_commit(writer, error, error_size);
}

int fk__lock_acquire(const char *path)
{
    if (!path) {
        errno = EINVAL;
        return -1;
    }
    size_t size = strlen(path) + sizeof ".lock";
    char *lock_path = malloc(size);
    if (!lock_path) {
        errno = ENOMEM;
        return -1;
    }
    snprintf(lock_path, size, "%s.lock", path);
    int fd = open(lock_path, O_RDWR | O_CREAT | O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0666);
    int saved = errno;
    free(lock_path);
    if (fd < 0) {
        errno = saved;
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
    }
    return fd;
}

void fk__lock_release(int lock)
{
    if (lock >= 0)
        close(lock); /* closing the only descriptor releases the flock */
}

int fk__open_regular(const char *path, size_t *size)
{
    if (size)
        *size = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    /* Back to blocking reads: O_NONBLOCK was only for the open. */
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    if (size)
        *size = (size_t)st.st_size;
    return fd;
}
