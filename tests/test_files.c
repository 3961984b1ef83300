/* Writing files (src/common/files.c, issue #13): device nodes and FIFOs written in place, never
 * replaced; read-only files refused; links written through; modes kept; long names; stale
 * temporaries of the same target removed, live ones kept; the lock serialising read-modify-write.
 */
#define _DEFAULT_SOURCE /* mknod, makedev, flock */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/files.h"
#include "test_support.h"

static char error[1024];

static int write_hello(FILE *file, const void *context)
{
    (void)context;
    return fputs("hello\n", file) == EOF ? -1 : 0;
}

/* 12 KB, more than a stdio buffer, as the audit's forces file was. */
static int write_lots(FILE *file, const void *context)
{
    (void)context;
    for (int i = 0; i < 1200; ++i)
        if (fputs("0123456789", file) == EOF)
            return -1;
    return 0;
}

static char *join(const char *dir, const char *name)
{
    size_t size = strlen(dir) + strlen(name) + 2;
    char *path = malloc(size);
    assert_non_null(path);
    snprintf(path, size, "%s/%s", dir, name);
    return path;
}

static char *slurp(const char *path)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return NULL;
    static char buffer[65536];
    size_t got = fread(buffer, 1, sizeof buffer - 1, file);
    buffer[got] = '\0';
    fclose(file);
    return buffer;
}

static int count_entries(const char *path)
{
    DIR *dir = opendir(path);
    assert_non_null(dir);
    int count = 0;
    struct dirent *item;
    while ((item = readdir(dir)) != NULL)
        if (strcmp(item->d_name, ".") != 0 && strcmp(item->d_name, "..") != 0)
            count++;
    closedir(dir);
    return count;
}

/* Copies of /dev/null and /dev/full made with mknod in a temporary directory, so the test never
 * risks the real ones (the audit's reproducer replaced /dev/null as root). */
static void test_device_nodes_written_in_place(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        print_message("skipped: mknod of device nodes needs root (not root here)\n");
        skip();
    }
    char *dir = fk_test_make_temp_dir("fk_test_nodes_");
    assert_non_null(dir);
    char *null_copy = join(dir, "null"), *full_copy = join(dir, "full");
    if (mknod(null_copy, S_IFCHR | 0666, makedev(1, 3)) != 0 ||
        mknod(full_copy, S_IFCHR | 0666, makedev(1, 7)) != 0) {
        print_message("skipped: mknod failed: %s (a container without CAP_MKNOD)\n",
                      strerror(errno));
        fk_test_remove_tree(dir);
        free(null_copy);
        free(full_copy);
        free(dir);
        skip();
    }
    struct stat st;
    assert_int_equal(fk__write_file(null_copy, write_lots, NULL, error, sizeof error), FK_OK);
    assert_int_equal(lstat(null_copy, &st), 0);
    assert_true(S_ISCHR(st.st_mode)); /* still the device, not a 12 KB regular file */
    assert_int_equal(major(st.st_rdev), 1);
    assert_int_equal(minor(st.st_rdev), 3);

    /* /dev/full: the write fails as a runtime failure with the system's words. */
    error[0] = '\0';
    assert_int_equal(fk__write_file(full_copy, write_lots, NULL, error, sizeof error), FK_ERR_IO);
    assert_non_null(strstr(error, "No space left on device"));
    assert_int_equal(lstat(full_copy, &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    assert_int_equal(count_entries(dir), 2); /* no temporary either */

    fk_test_remove_tree(dir);
    free(null_copy);
    free(full_copy);
    free(dir);
}

static void test_fifo_written_in_place(void **state)
{
    (void)state;
    char *dir = fk_test_make_temp_dir("fk_test_fifo_");
    assert_non_null(dir);
    char *fifo = join(dir, "pipe");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    /* A reader (read-write, so that the writer's open does not wait for one). */
    int reader = open(fifo, O_RDWR | O_NONBLOCK);
    assert_true(reader >= 0);
    assert_int_equal(fk__write_file(fifo, write_hello, NULL, error, sizeof error), FK_OK);
    char got[16] = "";
    assert_int_equal(read(reader, got, sizeof got - 1), 6);
    assert_string_equal(got, "hello\n");
    close(reader);
    struct stat st;
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(count_entries(dir), 1);
    fk_test_remove_tree(dir);
    free(fifo);
    free(dir);
}

static void test_read_only_file_refused(void **state)
{
    (void)state;
    char *dir = fk_test_make_temp_dir("fk_test_ro_");
    assert_non_null(dir);
    char *path = join(dir, "out.txt");
    assert_int_equal(fk_test_write_file(path, "old\n", 4), 0);
    assert_int_equal(chmod(path, 0444), 0);
    fk_status status = fk__write_file(path, write_hello, NULL, error, sizeof error);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0444); /* the mode stays, whoever wrote */
    if (geteuid() == 0) {
        /* root may write a read-only file (as cp and the shell let it): the content changes. */
        assert_int_equal(status, FK_OK);
        assert_string_equal(slurp(path), "hello\n");
    } else {
        assert_int_equal(status, FK_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(error, "Permission denied"));
        assert_string_equal(slurp(path), "old\n");
    }
    assert_int_equal(count_entries(dir), 1);
    fk_test_remove_tree(dir);
    free(path);
    free(dir);
}

static void test_mode_kept(void **state)
{
    (void)state;
    char *dir = fk_test_make_temp_dir("fk_test_mode_");
    assert_non_null(dir);
    char *path = join(dir, "out.txt");
    assert_int_equal(fk_test_write_file(path, "old\n", 4), 0);
    assert_int_equal(chmod(path, 0640), 0);
    assert_int_equal(fk__write_file(path, write_hello, NULL, error, sizeof error), FK_OK);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    assert_string_equal(slurp(path), "hello\n");
    fk_test_remove_tree(dir);
    free(path);
    free(dir);
}

static void test_symlink_written_through(void **state)
{
    (void)state;
    char *dir = fk_test_make_temp_dir("fk_test_link_");
    assert_non_null(dir);
    char *target = join(dir, "target.txt"), *link = join(dir, "link.txt");
    char *dangling = join(dir, "dangling.txt"), *created = join(dir, "created.txt");
    assert_int_equal(fk_test_write_file(target, "old\n", 4), 0);
    assert_int_equal(symlink("target.txt", link), 0);
    assert_int_equal(fk__write_file(link, write_hello, NULL, error, sizeof error), FK_OK);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode)); /* the link stays a link */
    assert_string_equal(slurp(target), "hello\n");

    /* A dangling link: the file is created where it points. */
    assert_int_equal(symlink("created.txt", dangling), 0);
    assert_int_equal(fk__write_file(dangling, write_hello, NULL, error, sizeof error), FK_OK);
    assert_int_equal(lstat(dangling, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_string_equal(slurp(created), "hello\n");
    assert_int_equal(count_entries(dir), 4);
    fk_test_remove_tree(dir);
    free(target);
    free(link);
    free(dangling);
    free(created);
    free(dir);
}

static void test_long_names(void **state)
{
    (void)state;
    char *dir = fk_test_make_temp_dir("fk_test_long_");
    assert_non_null(dir);
    /* 246 to 255 bytes: the temporary name ("<name>.tmpXXXXXX") would exceed NAME_MAX. */
    for (size_t length = 246; length <= 255; ++length) {
        char name[256];
        memset(name, 'a', length);
        name[length] = '\0';
        char *path = join(dir, name);
        error[0] = '\0';
        assert_int_equal(fk__write_file(path, write_hello, NULL, error, sizeof error), FK_OK);
        assert_string_equal(slurp(path), "hello\n");
        free(path);
    }
    assert_int_equal(count_entries(dir), 10); /* no temporaries left */
    fk_test_remove_tree(dir);
    free(dir);
}

/* A temporary whose writer was killed (no lock held) is removed by the next writer of the same
 * target; a live writer's (locked) is kept, and so is another target's. */
static void test_stale_temporaries(void **state)
{
    (void)state;
    char *dir = fk_test_make_temp_dir("fk_test_stale_");
    assert_non_null(dir);
    char *target = join(dir, "ckpt");
    char *stale = join(dir, "ckpt.tmpAb12Cd"), *live = join(dir, "ckpt.tmpLive01");
    char *other = join(dir, "other.tmpAb12Cd");
    assert_int_equal(fk_test_write_file(stale, "partial", 7), 0);
    assert_int_equal(fk_test_write_file(live, "partial", 7), 0);
    assert_int_equal(fk_test_write_file(other, "partial", 7), 0);
    int live_fd = open(live, O_RDONLY);
    assert_true(live_fd >= 0);
    assert_int_equal(flock(live_fd, LOCK_EX), 0);
    /* flock locks belong to the open file, so this descriptor's lock stands for a live writer
     * even within this process. */
    assert_int_equal(fk__write_file(target, write_hello, NULL, error, sizeof error), FK_OK);
    assert_int_equal(access(stale, F_OK), -1);
    assert_int_equal(access(live, F_OK), 0);
    assert_int_equal(access(other, F_OK), 0);
    assert_string_equal(slurp(target), "hello\n");
    close(live_fd);
    assert_int_equal(count_entries(dir), 3);
    fk_test_remove_tree(dir);
    free(target);
    free(stale);
    free(live);
    free(other);
    free(dir);
}

static void test_refusals(void **state)
{
    (void)state;
    char *dir = fk_test_make_temp_dir("fk_test_refuse_");
    assert_non_null(dir);
    char *missing = join(dir, "no/such/out.txt");
    assert_int_equal(fk__write_file(missing, write_hello, NULL, error, sizeof error),
                     FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk__write_file(dir, write_hello, NULL, error, sizeof error),
                     FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(error, "Is a directory"));
    assert_int_equal(fk__write_file("", write_hello, NULL, error, sizeof error),
                     FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(count_entries(dir), 0);
    fk_test_remove_tree(dir);
    free(missing);
    free(dir);
}

/* A body that fails leaves the old file and no temporary. */
static int write_then_fail(FILE *file, const void *context)
{
    (void)context;
    fputs("partial", file);
    errno = ENOSPC;
    return -1;
}

static void test_failed_body_keeps_old(void **state)
{
    (void)state;
    char *dir = fk_test_make_temp_dir("fk_test_body_");
    assert_non_null(dir);
    char *path = join(dir, "out.txt");
    assert_int_equal(fk_test_write_file(path, "old\n", 4), 0);
    assert_int_equal(fk__write_file(path, write_then_fail, NULL, error, sizeof error), FK_ERR_IO);
    assert_non_null(strstr(error, "No space left on device"));
    assert_string_equal(slurp(path), "old\n");
    assert_int_equal(count_entries(dir), 1);
    fk_test_remove_tree(dir);
    free(path);
    free(dir);
}

static int write_text_for_lock(FILE *file, const void *context)
{
    return fputs((const char *)context, file) == EOF ? -1 : 0;
}

/* Four processes increment a counter file 50 times each under the lock: none is lost. */
static void test_lock_serialises(void **state)
{
    (void)state;
    char *dir = fk_test_make_temp_dir("fk_test_lock_");
    assert_non_null(dir);
    char *path = join(dir, "counter");
    assert_int_equal(fk_test_write_file(path, "0", 1), 0);
    enum { PROCESSES = 4, INCREMENTS = 50 };
    pid_t children[PROCESSES];
    for (int p = 0; p < PROCESSES; ++p) {
        children[p] = fork();
        assert_true(children[p] >= 0);
        if (children[p] == 0) {
            for (int k = 0; k < INCREMENTS; ++k) {
                int lock = fk__lock_acquire(path);
                if (lock < 0)
                    _exit(1);
                FILE *file = fopen(path, "r");
                long value = 0;
                if (!file || fscanf(file, "%ld", &value) != 1)
                    _exit(2);
                fclose(file);
                char text[32];
                snprintf(text, sizeof text, "%ld", value + 1);
                char message[256];
                if (fk__write_file(path, write_text_for_lock, text, message, sizeof message) !=
                    FK_OK)
                    _exit(3);
                fk__lock_release(lock);
            }
            _exit(0);
        }
    }
    for (int p = 0; p < PROCESSES; ++p) {
        int status = 0;
        assert_int_equal(waitpid(children[p], &status, 0), children[p]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    long value = strtol(slurp(path), NULL, 10);
    assert_int_equal(value, PROCESSES * INCREMENTS);
    fk_test_remove_tree(dir);
    free(path);
    free(dir);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_nodes_written_in_place),
        cmocka_unit_test(test_fifo_written_in_place),
        cmocka_unit_test(test_read_only_file_refused),
        cmocka_unit_test(test_mode_kept),
        cmocka_unit_test(test_symlink_written_through),
        cmocka_unit_test(test_long_names),
        cmocka_unit_test(test_stale_temporaries),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_failed_body_keeps_old),
        cmocka_unit_test(test_lock_serialises),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
