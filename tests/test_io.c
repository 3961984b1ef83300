/* Particle files (text, TIPSY) and force output: src/tools/io.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "forcekit/tools.h"
#include "test_support.h"

static char *temp_dir;
static char error[1024];

static int group_setup(void **state)
{
    (void)state;
    temp_dir = fk_test_make_temp_dir("fk_test_io_");
    return temp_dir ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    fk_test_remove_tree(temp_dir);
    free(temp_dir);
    temp_dir = NULL;
    return 0;
}

/* A path in the temporary directory (malloc'ed). */
static char *temp_path(const char *name)
{
    size_t size = strlen(temp_dir) + strlen(name) + 2;
    char *path = malloc(size);
    assert_non_null(path);
    snprintf(path, size, "%s/%s", temp_dir, name);
    return path;
}

static char *write_temp(const char *name, const void *data, size_t size)
{
    char *path = temp_path(name);
    assert_int_equal(fk_test_write_file(path, data, size), 0);
    return path;
}

static char *write_text(const char *name, const char *text)
{
    return write_temp(name, text, strlen(text));
}

/* Reads a text file (malloc'ed, NUL-terminated), or NULL when it cannot be opened. */
static char *slurp(const char *path)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return NULL;
    size_t capacity = 4096, used = 0;
    char *data = malloc(capacity);
    assert_non_null(data);
    size_t got;
    while ((got = fread(data + used, 1, capacity - used - 1, file)) > 0) {
        used += got;
        if (capacity - used - 1 == 0) {
            capacity *= 2;
            data = realloc(data, capacity);
            assert_non_null(data);
        }
    }
    fclose(file);
    data[used] = '\0';
    return data;
}

/* Entries in a directory other than . and .. */
static int count_entries(const char *path)
{
    DIR *dir = opendir(path);
    assert_non_null(dir);
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)))
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0)
            count++;
    closedir(dir);
    return count;
}

static int path_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Expects the read to fail with status and a message containing every given fragment. */
static void expect_text_error(const char *name, const char *text, fkt_layout layout,
                              fk_status expected, const char *fragment1, const char *fragment2)
{
    char *path = write_text(name, text);
    fkt_particle_set set;
    memset(&set, 0xAB, sizeof set); /* poisoned: the reader must leave it empty */
    error[0] = '\0';
    fk_status status = fkt_io_read_text(path, layout, &set, error, sizeof error);
    if (status != expected || !strstr(error, path) || (fragment1 && !strstr(error, fragment1)) ||
        (fragment2 && !strstr(error, fragment2)))
        print_error("input %s: status %d, message \"%s\"\n", name, (int)status, error);
    assert_int_equal(status, expected);
    assert_non_null(strstr(error, path));
    if (fragment1)
        assert_non_null(strstr(error, fragment1));
    if (fragment2)
        assert_non_null(strstr(error, fragment2));
    assert_int_equal(set.count, 0);
    assert_null(set.position);
    assert_null(set.mass);
    assert_null(set.velocity);
    assert_null(set.type);
    free(path);
}

/* ---------------------------------------------------------------------------------------------- */
/* Layouts and sets */

static void test_layout_for_kernel(void **state)
{
    (void)state;
    assert_int_equal(fkt_io_layout_for_kernel("ga"), FKT_LAYOUT_XYZM);
    assert_int_equal(fkt_io_layout_for_kernel("gaj"), FKT_LAYOUT_XYZM_VEL);
    assert_int_equal(fkt_io_layout_for_kernel("ljc_constant"), FKT_LAYOUT_XYZQ_TYPE);
    assert_int_equal(fkt_io_layout_for_kernel("ljc_linear"), FKT_LAYOUT_XYZQ_TYPE);
    assert_int_equal(fkt_io_layout_for_kernel("ljc_sigmoidal"), FKT_LAYOUT_XYZQ_TYPE);
    assert_int_equal(fkt_io_layout_for_kernel("buck"), FKT_LAYOUT_XYZQ_TYPE);
    assert_int_equal(fkt_io_layout_for_kernel("lj"), FKT_LAYOUT_XYZ_TYPE);
    assert_int_equal(fkt_io_layout_for_kernel("gravity"), -1);
    assert_int_equal(fkt_io_layout_for_kernel(""), -1);
    assert_int_equal(fkt_io_layout_for_kernel(NULL), -1);
    assert_int_equal(fkt_io_layout_columns(FKT_LAYOUT_XYZM), 4);
    assert_int_equal(fkt_io_layout_columns(FKT_LAYOUT_XYZM_VEL), 7);
    assert_int_equal(fkt_io_layout_columns(FKT_LAYOUT_XYZQ_TYPE), 5);
    assert_int_equal(fkt_io_layout_columns(FKT_LAYOUT_XYZ_TYPE), 4);
}

static void test_set_alloc_and_view(void **state)
{
    (void)state;
    fkt_particle_set set;
    assert_int_equal(fkt_particle_set_alloc(&set, FKT_LAYOUT_XYZM_VEL, 5), FK_OK);
    assert_int_equal(set.count, 5);
    assert_non_null(set.position);
    assert_non_null(set.mass);
    assert_non_null(set.velocity);
    assert_null(set.type);
    for (size_t i = 0; i < 15; i++)
        assert_true(set.position[i] == 0.0 && set.velocity[i] == 0.0);
    fk_particles view = fkt_particle_set_view(&set);
    assert_int_equal(view.count, 5);
    assert_ptr_equal(view.position, set.position);
    assert_ptr_equal(view.mass, set.mass);
    assert_ptr_equal(view.velocity, set.velocity);
    assert_null(view.type);
    fkt_particle_set_free(&set);
    assert_null(set.position);
    assert_int_equal(set.count, 0);

    assert_int_equal(fkt_particle_set_alloc(&set, FKT_LAYOUT_XYZ_TYPE, 3), FK_OK);
    view = fkt_particle_set_view(&set);
    assert_null(view.mass);
    assert_null(view.velocity);
    assert_non_null(view.type);
    assert_ptr_equal(view.type, set.type);
    fkt_particle_set_free(&set);

    assert_int_equal(fkt_particle_set_alloc(&set, FKT_LAYOUT_XYZQ_TYPE, 2), FK_OK);
    assert_non_null(set.mass);
    assert_non_null(set.type);
    assert_null(set.velocity);
    fkt_particle_set_free(&set);
    fkt_particle_set_free(&set); /* twice is harmless */

    assert_int_equal(fkt_particle_set_alloc(&set, (fkt_layout)42, 2), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fkt_particle_set_alloc(&set, FKT_LAYOUT_XYZM, SIZE_MAX / 2),
                     FK_ERR_HOST_MEMORY);
    assert_null(set.position);
}

/* ---------------------------------------------------------------------------------------------- */
/* Text particles */

static void test_text_xyzm(void **state)
{
    (void)state;
    char *path = write_text("xyzm.txt", "1 2 3 4\n-0.5 1e-3 +2.25 0.125\n");
    fkt_particle_set set;
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZM, &set, error, sizeof error), FK_OK);
    assert_int_equal(set.count, 2);
    const double position[6] = {1, 2, 3, -0.5, 1e-3, 2.25};
    for (int i = 0; i < 6; i++)
        assert_true(set.position[i] == position[i]);
    assert_true(set.mass[0] == 4.0 && set.mass[1] == 0.125);
    assert_null(set.velocity);
    assert_null(set.type);
    fkt_particle_set_free(&set);
    free(path);
}

static void test_text_xyzm_vel(void **state)
{
    (void)state;
    /* No final newline: the last line still counts. */
    char *path = write_text("vel.txt", "0 0 0 1 0.5 -0.5 2\n1 1 1 2 3 4 5");
    fkt_particle_set set;
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZM_VEL, &set, error, sizeof error), FK_OK);
    assert_int_equal(set.count, 2);
    assert_true(set.mass[0] == 1.0 && set.mass[1] == 2.0);
    const double velocity[6] = {0.5, -0.5, 2, 3, 4, 5};
    for (int i = 0; i < 6; i++)
        assert_true(set.velocity[i] == velocity[i]);
    assert_true(set.position[3] == 1.0);
    assert_null(set.type);
    fkt_particle_set_free(&set);
    free(path);
}

static void test_text_xyzq_type(void **state)
{
    (void)state;
    char *path = write_text("xyzq.txt", "0 0 0 0.5 0\n1.5 0 0 -0.5 1\n0 2 0 1 +7\n");
    fkt_particle_set set;
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZQ_TYPE, &set, error, sizeof error),
                     FK_OK);
    assert_int_equal(set.count, 3);
    assert_true(set.mass[0] == 0.5 && set.mass[1] == -0.5 && set.mass[2] == 1.0);
    assert_int_equal(set.type[0], 0);
    assert_int_equal(set.type[1], 1);
    assert_int_equal(set.type[2], 7);
    assert_true(set.position[3] == 1.5 && set.position[7] == 2.0);
    assert_null(set.velocity);
    fkt_particle_set_free(&set);
    free(path);
}

static void test_text_xyz_type(void **state)
{
    (void)state;
    char *path = write_text("xyz.txt", "0 0 0 3\n1 2 3 2147483647\n");
    fkt_particle_set set;
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZ_TYPE, &set, error, sizeof error), FK_OK);
    assert_int_equal(set.count, 2);
    assert_null(set.mass);
    assert_null(set.velocity);
    assert_int_equal(set.type[0], 3);
    assert_int_equal(set.type[1], 2147483647);
    assert_true(set.position[5] == 3.0);
    fkt_particle_set view_source = set;
    fk_particles view = fkt_particle_set_view(&view_source);
    assert_null(view.mass);
    fkt_particle_set_free(&set);
    free(path);
}

static void test_text_comments_and_blank_lines(void **state)
{
    (void)state;
    const char *text = "# header comment\n"
                       "\n"
                       "   \t  \n"
                       "1 2 3 4   # trailing comment 5 6 7\n"
                       "#2 2 2 2\n"
                       "\t5\t6\t7\t8\t\r\n" /* tabs and a CRLF ending */
                       "9 10 11 12#comment touching a number\n"
                       "   # indented comment\n";
    char *path = write_text("comments.txt", text);
    fkt_particle_set set;
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZM, &set, error, sizeof error), FK_OK);
    assert_int_equal(set.count, 3);
    for (int i = 0; i < 3; i++) {
        for (int d = 0; d < 3; d++)
            assert_true(set.position[3 * i + d] == 4.0 * i + d + 1);
        assert_true(set.mass[i] == 4.0 * i + 4);
    }
    fkt_particle_set_free(&set);
    free(path);

    /* A byte order mark from a Windows editor is not data. */
    path = write_text("bom.txt", "\xEF\xBB\xBF"
                                 "1 2 3 4\n");
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZM, &set, error, sizeof error), FK_OK);
    assert_int_equal(set.count, 1);
    fkt_particle_set_free(&set);
    free(path);
}

static void test_text_malformed_number(void **state)
{
    (void)state;
    expect_text_error("malformed.txt", "1 2 3 4\n1 2 abc 4\n", FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                      "malformed.txt:2:", "abc");
    expect_text_error("suffix.txt", "# c\n1 2 3 4kg\n", FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                      "suffix.txt:2:", "4kg");
    expect_text_error("comma.txt", "1,2,3,4\n", FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                      "comma.txt:1:", NULL);
    expect_text_error("sign.txt", "1 2 - 4\n", FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                      "sign.txt:1:", "not a number");
    /* A NUL byte inside a number must not end it silently. */
    static const char nul_text[] = "1 2 3 4\0junk\n";
    char *path = write_temp("nul.txt", nul_text, sizeof nul_text - 1);
    fkt_particle_set set;
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZM, &set, error, sizeof error),
                     FK_ERR_PARSE);
    assert_non_null(strstr(error, "nul.txt:1:"));
    free(path);
}

static void test_text_nan_and_inf(void **state)
{
    (void)state;
    expect_text_error("nan.txt", "1 2 3 4\n0 0 0 1\nNaN 0 0 1\n", FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                      "nan.txt:3:", "finite");
    expect_text_error("inf.txt", "1 2 3 Inf\n", FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                      "inf.txt:1:", "finite");
    static const char *const spellings[] = {"nan",      "NAN",   "-nan",  "nan(0x1)",
                                            "inf",      "-inf",  "+INF",  "infinity",
                                            "Infinity", "1e999", "-1e400"};
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "0 0 0 1 0 0 0\n1 1 1 1 0 %s 0\n", spellings[i]);
        expect_text_error("spelling.txt", text, FKT_LAYOUT_XYZM_VEL, FK_ERR_PARSE,
                          "spelling.txt:2:", spellings[i]);
    }
    /* A charge too is checked, and tiny values that underflow are fine. */
    expect_text_error("charge.txt", "0 0 0 nan 1\n", FKT_LAYOUT_XYZQ_TYPE, FK_ERR_PARSE,
                      "charge.txt:1:", "column 4");
    char *path = write_text("tiny.txt", "1e-400 0 0 1\n");
    fkt_particle_set set;
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZM, &set, error, sizeof error), FK_OK);
    assert_true(set.position[0] >= 0.0 && set.position[0] < 1e-300);
    fkt_particle_set_free(&set);
    free(path);
}

static void test_text_column_count(void **state)
{
    (void)state;
    expect_text_error("few.txt", "1 2 3 4\n\n1 2 3\n", FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                      "few.txt:3: expected 4 columns (x y z m), found 3", NULL);
    expect_text_error("many.txt", "1 2 3 4 5\n", FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                      "many.txt:1: expected 4 columns (x y z m), found 5", NULL);
    expect_text_error("many_vel.txt", "1 2 3 4 5 6 7 8 9 10 11 12\n", FKT_LAYOUT_XYZM_VEL,
                      FK_ERR_PARSE, "expected 7 columns (x y z m vx vy vz), found 12", NULL);
    expect_text_error("few_type.txt", "1 2 3 4\n", FKT_LAYOUT_XYZQ_TYPE, FK_ERR_PARSE,
                      "few_type.txt:1: expected 5 columns (x y z q type), found 4", NULL);
    expect_text_error("many_lj.txt", "1 2 3 0.5 0\n", FKT_LAYOUT_XYZ_TYPE, FK_ERR_PARSE,
                      "expected 4 columns (x y z type), found 5", NULL);
    /* The column count is reported even when the line also holds a bad number. */
    expect_text_error("few_bad.txt", "x y\n", FKT_LAYOUT_XYZM, FK_ERR_PARSE, "found 2", NULL);
}

static void test_text_empty(void **state)
{
    (void)state;
    expect_text_error("empty.txt", "", FKT_LAYOUT_XYZM, FK_ERR_PARSE, "no particles", NULL);
    expect_text_error("comments_only.txt", "# nothing\n\n   # here either\n\n", FKT_LAYOUT_XYZM,
                      FK_ERR_PARSE, "no particles", NULL);
}

static void test_text_bad_type(void **state)
{
    (void)state;
    expect_text_error("float_type.txt", "0 0 0 1 0\n0 0 1 1 1.5\n", FKT_LAYOUT_XYZQ_TYPE,
                      FK_ERR_PARSE, "float_type.txt:2:", "1.5");
    expect_text_error("one_point_zero.txt", "0 0 0 1.0\n", FKT_LAYOUT_XYZ_TYPE, FK_ERR_PARSE,
                      "one_point_zero.txt:1:", "type");
    expect_text_error("word_type.txt", "0 0 0 1 oxygen\n", FKT_LAYOUT_XYZQ_TYPE, FK_ERR_PARSE,
                      "word_type.txt:1:", "oxygen");
    expect_text_error("negative_type.txt", "0 0 0 1 0\n\n0 0 1 -1 -1\n", FKT_LAYOUT_XYZQ_TYPE,
                      FK_ERR_PARSE, "negative_type.txt:3:", "negative");
    expect_text_error("huge_type.txt", "0 0 0 2147483648\n", FKT_LAYOUT_XYZ_TYPE, FK_ERR_PARSE,
                      "huge_type.txt:1:", "range");
    expect_text_error("huger_type.txt", "0 0 0 99999999999999999999999\n", FKT_LAYOUT_XYZ_TYPE,
                      FK_ERR_PARSE, "huger_type.txt:1:", "range");
    expect_text_error("hugely_negative_type.txt", "0 0 0 -99999999999999999999999\n",
                      FKT_LAYOUT_XYZ_TYPE, FK_ERR_PARSE, "hugely_negative_type.txt:1:", "range");
}

static void test_text_long_line(void **state)
{
    (void)state;
    /* 300 kB of padding, a 100 kB number and a 100 kB comment on one line. */
    size_t padding = 300000, digits = 100000;
    size_t size = padding + digits + 200000 + 64;
    char *text = malloc(size);
    assert_non_null(text);
    size_t used = 0;
    memset(text + used, ' ', padding);
    used += padding;
    used += (size_t)sprintf(text + used, "1.");
    memset(text + used, '0', digits);
    used += digits;
    used += (size_t)sprintf(text + used, "5 2 3 4 #");
    memset(text + used, 'c', 200000);
    used += 200000;
    used += (size_t)sprintf(text + used, "\n5 6 7 8\n");
    char *path = write_temp("long.txt", text, used);
    fkt_particle_set set;
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZM, &set, error, sizeof error), FK_OK);
    assert_int_equal(set.count, 2);
    assert_true(set.position[0] == 1.0); /* 1.000...05 rounds to 1 */
    assert_true(set.mass[0] == 4.0 && set.mass[1] == 8.0);
    fkt_particle_set_free(&set);
    free(path);

    /* A long bad token is named in the message without overflowing it. */
    text[padding] = 'x';
    path = write_temp("long_bad.txt", text, used);
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZM, &set, error, sizeof error),
                     FK_ERR_PARSE);
    assert_non_null(strstr(error, "long_bad.txt:1:"));
    assert_true(strlen(error) < sizeof error);
    free(path);
    free(text);
}

static void test_text_many_lines(void **state)
{
    (void)state;
    /* Enough lines to grow the row storage several times. */
    size_t count = 10000;
    char *text = malloc(count * 32);
    assert_non_null(text);
    size_t used = 0;
    for (size_t i = 0; i < count; i++)
        used += (size_t)sprintf(text + used, "%zu 0 0 1 %zu\n", i, i % 3);
    char *path = write_temp("many.txt", text, used);
    fkt_particle_set set;
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZQ_TYPE, &set, error, sizeof error),
                     FK_OK);
    assert_int_equal(set.count, count);
    for (size_t i = 0; i < count; i++) {
        assert_true(set.position[3 * i] == (double)i);
        assert_int_equal(set.type[i], (int)(i % 3));
    }
    fkt_particle_set_free(&set);
    free(path);
    free(text);
}

static void test_text_missing_file(void **state)
{
    (void)state;
    char *path = temp_path("does_not_exist.txt");
    fkt_particle_set set;
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZM, &set, error, sizeof error), FK_ERR_IO);
    assert_non_null(strstr(error, path));
    assert_non_null(strstr(error, "No such file"));
    assert_null(set.position);
    assert_int_equal(
        fkt_io_read_particles(path, FKT_FORMAT_AUTO, FKT_LAYOUT_XYZM, &set, error, sizeof error),
        FK_ERR_IO);
    free(path);

    /* A directory opens but cannot be read as a file. */
    assert_int_equal(fkt_io_read_text(temp_dir, FKT_LAYOUT_XYZM, &set, error, sizeof error),
                     FK_ERR_IO);
    assert_non_null(strstr(error, temp_dir));
}

static void test_text_error_buffer_optional(void **state)
{
    (void)state;
    char *path = write_text("bad_no_buffer.txt", "1 2\n");
    fkt_particle_set set;
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZM, &set, NULL, 0), FK_ERR_PARSE);
    char tiny[8];
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZM, &set, tiny, sizeof tiny),
                     FK_ERR_PARSE);
    assert_int_equal(strlen(tiny), sizeof tiny - 1);
    free(path);
}

/* ---------------------------------------------------------------------------------------------- */
/* TIPSY */

typedef struct tipsy_bytes {
    unsigned char *data;
    size_t size;
} tipsy_bytes;

static uint32_t swap_bytes(uint32_t value)
{
    return ((value & 0xffu) << 24) | ((value & 0xff00u) << 8) | ((value >> 8) & 0xff00u) |
           (value >> 24);
}

static void put_u32(unsigned char *at, uint32_t value, int swap)
{
    if (swap)
        value = swap_bytes(value);
    memcpy(at, &value, 4);
}

static void put_i32(unsigned char *at, int32_t value, int swap)
{
    uint32_t bits;
    memcpy(&bits, &value, 4);
    put_u32(at, bits, swap);
}

static void put_f32(unsigned char *at, float value, int swap)
{
    uint32_t bits;
    memcpy(&bits, &value, 4);
    put_u32(at, bits, swap);
}

/* The values body b of a synthetic file carries: exact in float. */
static double body_mass(int b)
{
    return 0.5 + 0.125 * b;
}
static double body_position(int b, int d)
{
    return b - 0.25 * d;
}
static double body_velocity(int b, int d)
{
    return -0.5 * b + d;
}

/* A TIPSY file with nsph gas, ndark dark and nstar star bodies, in native or swapped byte order,
 * with the 32-byte header (padded) or the 28-byte one. */
static tipsy_bytes make_tipsy(int nsph, int ndark, int nstar, int swap, int padded)
{
    size_t header = padded ? 32 : 28;
    tipsy_bytes file;
    file.size = header + (size_t)nsph * 48 + (size_t)ndark * 36 + (size_t)nstar * 44;
    file.data = calloc(1, file.size);
    assert_non_null(file.data);
    double time = 0.75;
    uint64_t time_bits;
    memcpy(&time_bits, &time, 8);
    if (swap)
        time_bits = ((uint64_t)swap_bytes((uint32_t)time_bits) << 32) |
                    swap_bytes((uint32_t)(time_bits >> 32));
    memcpy(file.data, &time_bits, 8);
    put_i32(file.data + 8, nsph + ndark + nstar, swap);
    put_i32(file.data + 12, 3, swap);
    put_i32(file.data + 16, nsph, swap);
    put_i32(file.data + 20, ndark, swap);
    put_i32(file.data + 24, nstar, swap);
    if (padded)
        put_i32(file.data + 28, 0x7ff6, swap); /* real files leave junk here */
    unsigned char *at = file.data + header;
    int body = 0;
    const int record_sizes[3] = {48, 36, 44};
    const int counts[3] = {nsph, ndark, nstar};
    for (int kind = 0; kind < 3; kind++)
        for (int i = 0; i < counts[kind]; i++, body++) {
            put_f32(at, (float)body_mass(body), swap);
            for (int d = 0; d < 3; d++) {
                put_f32(at + 4 + 4 * d, (float)body_position(body, d), swap);
                put_f32(at + 16 + 4 * d, (float)body_velocity(body, d), swap);
            }
            /* The remaining fields (rho, eps, phi...) are not read; fill them with a pattern. */
            for (int offset = 28; offset < record_sizes[kind]; offset += 4)
                put_i32(at + offset, 1000 + offset, swap);
            at += record_sizes[kind];
        }
    return file;
}

static void check_tipsy_values(const fkt_particle_set *set, int count, int with_velocity)
{
    assert_int_equal(set->count, (size_t)count);
    assert_null(set->type);
    if (with_velocity)
        assert_non_null(set->velocity);
    else
        assert_null(set->velocity);
    for (int b = 0; b < count; b++) {
        assert_true(set->mass[b] == body_mass(b));
        for (int d = 0; d < 3; d++) {
            assert_true(set->position[3 * b + d] == body_position(b, d));
            if (with_velocity)
                assert_true(set->velocity[3 * b + d] == body_velocity(b, d));
        }
    }
}

static void test_tipsy_round_trip(void **state)
{
    (void)state;
    for (int swap = 0; swap <= 1; swap++)
        for (int padded = 1; padded >= 0; padded--) {
            tipsy_bytes bytes = make_tipsy(3, 4, 5, swap, padded);
            char name[64];
            snprintf(name, sizeof name, "synthetic_%d_%d.bin", swap, padded);
            char *path = write_temp(name, bytes.data, bytes.size);
            fkt_particle_set set;
            fk_status status = fkt_io_read_tipsy(path, FKT_LAYOUT_XYZM, &set, error, sizeof error);
            if (status != FK_OK)
                print_error("%s: %s\n", name, error);
            assert_int_equal(status, FK_OK);
            check_tipsy_values(&set, 12, 0);
            fkt_particle_set_free(&set);
            /* Through the format dispatcher, by extension, with velocities. */
            status = fkt_io_read_particles(path, FKT_FORMAT_AUTO, FKT_LAYOUT_XYZM_VEL, &set, error,
                                           sizeof error);
            assert_int_equal(status, FK_OK);
            check_tipsy_values(&set, 12, 1);
            fkt_particle_set_free(&set);
            free(path);
            free(bytes.data);
        }

    /* Only one kind of record; explicit format regardless of the name. */
    tipsy_bytes bytes = make_tipsy(0, 0, 2, 1, 1);
    char *path = write_temp("stars_only.dat", bytes.data, bytes.size);
    fkt_particle_set set;
    assert_int_equal(
        fkt_io_read_particles(path, FKT_FORMAT_TIPSY, FKT_LAYOUT_XYZM, &set, error, sizeof error),
        FK_OK);
    check_tipsy_values(&set, 2, 0);
    fkt_particle_set_free(&set);
    /* And the same bytes read as text are not particles. */
    assert_int_equal(
        fkt_io_read_particles(path, FKT_FORMAT_AUTO, FKT_LAYOUT_XYZM, &set, error, sizeof error),
        FK_ERR_PARSE);
    free(path);
    free(bytes.data);

    bytes = make_tipsy(1, 1, 1, 0, 1);
    path = write_temp("upper.TIPSY", bytes.data, bytes.size);
    assert_int_equal(
        fkt_io_read_particles(path, FKT_FORMAT_AUTO, FKT_LAYOUT_XYZM, &set, error, sizeof error),
        FK_OK);
    assert_int_equal(set.count, 3);
    fkt_particle_set_free(&set);
    free(path);
    free(bytes.data);
}

static void expect_tipsy_error(const char *name, const void *data, size_t size, fkt_layout layout,
                               fk_status expected, const char *fragment)
{
    char *path = write_temp(name, data, size);
    fkt_particle_set set;
    memset(&set, 0xAB, sizeof set);
    error[0] = '\0';
    fk_status status = fkt_io_read_tipsy(path, layout, &set, error, sizeof error);
    if (status != expected || !strstr(error, path) || (fragment && !strstr(error, fragment)))
        print_error("%s: status %d, message \"%s\"\n", name, (int)status, error);
    assert_int_equal(status, expected);
    assert_non_null(strstr(error, path));
    if (fragment)
        assert_non_null(strstr(error, fragment));
    assert_int_equal(set.count, 0);
    assert_null(set.position);
    assert_null(set.mass);
    free(path);
}

static void test_tipsy_truncated_and_trailing(void **state)
{
    (void)state;
    for (int swap = 0; swap <= 1; swap++) {
        tipsy_bytes bytes = make_tipsy(2, 3, 4, swap, 1);
        size_t full = bytes.size; /* 32 + 96 + 108 + 176 = 412 */
        assert_int_equal(full, 412);
        expect_tipsy_error("truncated.bin", bytes.data, full - 1, FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                           "expected 412 bytes");
        expect_tipsy_error("truncated.bin", bytes.data, full - 1, FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                           "found 411");
        expect_tipsy_error("half.bin", bytes.data, full / 2, FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                           "truncated");
        expect_tipsy_error("header_only.bin", bytes.data, 32, FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                           "truncated");
        /* 3 or 5 bytes short of the padded size is neither header variant. */
        expect_tipsy_error("short3.bin", bytes.data, full - 3, FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                           "truncated");

        unsigned char *longer = calloc(1, full + 7);
        assert_non_null(longer);
        memcpy(longer, bytes.data, full);
        expect_tipsy_error("trailing.bin", longer, full + 7, FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                           "7 unexpected trailing bytes");
        expect_tipsy_error("trailing1.bin", longer, full + 1, FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                           "found 413");
        free(longer);
        free(bytes.data);
    }
}

static void test_tipsy_bad_header(void **state)
{
    (void)state;
    unsigned char garbage[256];
    fk_test_rng rng;
    fk_test_rng_init(&rng, 12345);
    for (size_t i = 0; i < sizeof garbage; i++)
        garbage[i] = (unsigned char)(fk_test_rng_uniform(&rng) * 256.0);
    expect_tipsy_error("garbage.bin", garbage, sizeof garbage, FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                       "not a TIPSY file");
    const char text[] = "1 2 3 4\n5 6 7 8\n9 10 11 12\n13 14 15 16\n";
    expect_tipsy_error("text.bin", text, sizeof text - 1, FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                       "not a TIPSY file");
    expect_tipsy_error("tiny.bin", "abc", 3, FKT_LAYOUT_XYZM, FK_ERR_PARSE, "not a TIPSY file");
    expect_tipsy_error("zero_length.bin", "", 0, FKT_LAYOUT_XYZM, FK_ERR_PARSE, "not a TIPSY file");

    /* ndim 2, negative counts, counts that do not add up. */
    tipsy_bytes bytes = make_tipsy(1, 1, 1, 0, 1);
    put_i32(bytes.data + 12, 2, 0);
    expect_tipsy_error("ndim2.bin", bytes.data, bytes.size, FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                       "not a TIPSY file");
    put_i32(bytes.data + 12, 3, 0);
    put_i32(bytes.data + 8, 4, 0);
    expect_tipsy_error("sum.bin", bytes.data, bytes.size, FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                       "not a TIPSY file");
    put_i32(bytes.data + 8, 1, 0);
    put_i32(bytes.data + 16, -1, 0);
    expect_tipsy_error("negative.bin", bytes.data, bytes.size, FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                       "not a TIPSY file");
    free(bytes.data);

    /* Huge counts that add up: the size check refuses them before any allocation. */
    unsigned char huge[32] = {0};
    put_i32(huge + 8, 2147483647, 1);
    put_i32(huge + 12, 3, 1);
    put_i32(huge + 24, 2147483647, 1);
    expect_tipsy_error("huge.bin", huge, sizeof huge, FKT_LAYOUT_XYZM, FK_ERR_PARSE, "truncated");

    /* A consistent header with no bodies. */
    unsigned char empty[32] = {0};
    put_i32(empty + 12, 3, 0);
    expect_tipsy_error("no_bodies.bin", empty, sizeof empty, FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                       "no particles");
}

static void test_tipsy_non_finite(void **state)
{
    (void)state;
    for (int swap = 0; swap <= 1; swap++) {
        tipsy_bytes bytes = make_tipsy(1, 1, 1, swap, 1);
        /* Position y of the dark body (body 1). */
        put_f32(bytes.data + 32 + 48 + 8, NAN, swap);
        expect_tipsy_error("nan_position.bin", bytes.data, bytes.size, FKT_LAYOUT_XYZM,
                           FK_ERR_PARSE, "dark particle 0 (body 1) has a non-finite position");
        free(bytes.data);

        bytes = make_tipsy(1, 1, 1, swap, 1);
        put_f32(bytes.data + 32, INFINITY, swap); /* the gas body's mass */
        expect_tipsy_error("inf_mass.bin", bytes.data, bytes.size, FKT_LAYOUT_XYZM, FK_ERR_PARSE,
                           "gas particle 0 (body 0) has a non-finite mass");
        free(bytes.data);

        bytes = make_tipsy(1, 1, 2, swap, 1);
        put_f32(bytes.data + 32 + 48 + 36 + 44 + 20, -INFINITY, swap); /* star 1, vy */
        expect_tipsy_error("inf_velocity.bin", bytes.data, bytes.size, FKT_LAYOUT_XYZM_VEL,
                           FK_ERR_PARSE, "star particle 1 (body 3) has a non-finite velocity");
        free(bytes.data);
    }
}

static void test_tipsy_typed_layout(void **state)
{
    (void)state;
    tipsy_bytes bytes = make_tipsy(1, 1, 1, 0, 1);
    expect_tipsy_error("typed.bin", bytes.data, bytes.size, FKT_LAYOUT_XYZQ_TYPE, FK_ERR_PARSE,
                       "TIPSY files carry gravity data (x y z m); kernel needs x y z q type");
    expect_tipsy_error("typed.bin", bytes.data, bytes.size, FKT_LAYOUT_XYZ_TYPE, FK_ERR_PARSE,
                       "kernel needs x y z type");
    free(bytes.data);
}

static void test_tipsy_missing_file(void **state)
{
    (void)state;
    char *path = temp_path("missing.bin");
    fkt_particle_set set;
    assert_int_equal(fkt_io_read_tipsy(path, FKT_LAYOUT_XYZM, &set, error, sizeof error),
                     FK_ERR_IO);
    assert_non_null(strstr(error, path));
    assert_int_equal(
        fkt_io_read_particles(path, FKT_FORMAT_AUTO, FKT_LAYOUT_XYZM, &set, error, sizeof error),
        FK_ERR_IO);
    free(path);
    assert_int_equal(fkt_io_read_tipsy(temp_dir, FKT_LAYOUT_XYZM, &set, error, sizeof error),
                     FK_ERR_IO);
}

static void test_tipsy_galaxy_fixture(void **state)
{
    (void)state;
    const char *data_dir = fk_test_data_dir();
    if (!data_dir) {
        print_message("skipping: test data directory (FK_TEST_DATA_DIR, ../shared/data) absent\n");
        skip();
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/galaxy_20K.bin", data_dir);
    fkt_particle_set set;
    fk_status status = fkt_io_read_particles(path, FKT_FORMAT_AUTO, FKT_LAYOUT_XYZM_VEL, &set,
                                             error, sizeof error);
    if (status != FK_OK)
        print_error("%s\n", error);
    assert_int_equal(status, FK_OK);
    assert_int_equal(set.count, 20000);
    double total_mass = 0.0, dark_mass = 0.0, extent = 0.0;
    for (size_t i = 0; i < set.count; i++) {
        for (int d = 0; d < 3; d++) {
            assert_true(isfinite(set.position[3 * i + d]));
            assert_true(isfinite(set.velocity[3 * i + d]));
            extent = fmax(extent, fabs(set.position[3 * i + d]));
        }
        assert_true(set.mass[i] >= 0.0);
        total_mass += set.mass[i];
        if (i < 2500)
            dark_mass += set.mass[i];
    }
    assert_true(total_mass > 0.0);
    assert_true(dark_mass > 0.0);
    assert_true(extent > 0.0);
    fkt_particle_set_free(&set);
}

/* ---------------------------------------------------------------------------------------------- */
/* Force output */

static void test_write_forces_content(void **state)
{
    (void)state;
    const double forces[6] = {1.0, -2.5, 0.1, 0.0, 1e-300, 3e20};
    const double potentials[2] = {-0.5, 1.0 / 3.0};
    char *path = temp_path("forces.txt");
    assert_int_equal(fkt_io_write_forces(path, 2, 3, forces, NULL, error, sizeof error), FK_OK);
    char *content = slurp(path);
    assert_non_null(content);
    assert_string_equal(content, "1 -2.5 0.10000000000000001\n"
                                 "0 1e-300 3e+20\n");
    free(content);

    /* Overwrites, with potentials as a last column. */
    assert_int_equal(fkt_io_write_forces(path, 2, 3, forces, potentials, error, sizeof error),
                     FK_OK);
    content = slurp(path);
    assert_string_equal(content, "1 -2.5 0.10000000000000001 -0.5\n"
                                 "0 1e-300 3e+20 0.33333333333333331\n");
    free(content);

    /* Six components (gaj), one particle: the values round-trip exactly. */
    const double jerk[6] = {1.0 / 7.0, -2.0 / 3.0, 1e-17, 12345.678, -0.0, 5e-324};
    assert_int_equal(fkt_io_write_forces(path, 1, 6, jerk, NULL, error, sizeof error), FK_OK);
    content = slurp(path);
    char *cursor = content;
    for (int c = 0; c < 6; c++) {
        char *end;
        double value = strtod(cursor, &end);
        assert_true(end != cursor);
        assert_memory_equal(&value, &jerk[c], sizeof value);
        assert_true(*end == (c < 5 ? ' ' : '\n'));
        cursor = end + 1;
    }
    assert_true(*cursor == '\0');
    free(content);

    /* No particles: an empty file. */
    assert_int_equal(fkt_io_write_forces(path, 0, 3, NULL, NULL, error, sizeof error), FK_OK);
    content = slurp(path);
    assert_string_equal(content, "");
    free(content);
    free(path);

    assert_int_equal(fkt_io_write_forces("unused", 2, 3, NULL, NULL, error, sizeof error),
                     FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fkt_io_write_forces("unused", 2, 0, forces, NULL, error, sizeof error),
                     FK_ERR_INVALID_ARGUMENT);
    assert_false(path_exists("unused"));
}

static void test_write_forces_stdout(void **state)
{
    (void)state;
    /* Standard output is pointed at a file for the duration of the calls. */
    char *path = temp_path("stdout.txt");
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    assert_true(saved >= 0);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_true(dup2(fd, STDOUT_FILENO) >= 0);
    close(fd);
    const double forces[4] = {1, 2, 3, 4};
    const double potentials[2] = {-1, -2};
    fk_status dash = fkt_io_write_forces("-", 2, 2, forces, NULL, error, sizeof error);
    fk_status null = fkt_io_write_forces(NULL, 1, 2, forces, potentials, error, sizeof error);
    fflush(stdout);
    assert_true(dup2(saved, STDOUT_FILENO) >= 0);
    close(saved);
    assert_int_equal(dash, FK_OK);
    assert_int_equal(null, FK_OK);
    char *content = slurp(path);
    assert_string_equal(content, "1 2\n3 4\n1 2 -1\n");
    free(content);
    assert_false(path_exists("-"));
    free(path);
}

static void test_write_forces_atomic(void **state)
{
    (void)state;
    char *dir = fk_test_make_temp_dir("fk_test_atomic_");
    assert_non_null(dir);
    size_t size = strlen(dir) + 32;
    char *path = malloc(size);
    assert_non_null(path);
    snprintf(path, size, "%s/out.txt", dir);
    const double forces[3] = {1, 2, 3};
    assert_int_equal(fkt_io_write_forces(path, 1, 3, forces, NULL, error, sizeof error), FK_OK);
    assert_int_equal(count_entries(dir), 1); /* only out.txt: no temporary left behind */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_true((st.st_mode & 0400) != 0);
    char *content = slurp(path);
    assert_string_equal(content, "1 2 3\n");
    free(content);

    /* Rewriting keeps one file. */
    assert_int_equal(fkt_io_write_forces(path, 1, 3, forces, forces, error, sizeof error), FK_OK);
    assert_int_equal(count_entries(dir), 1);

    /* The target is a directory: refused up front (the user's to fix: exit 2), the directory
     * and no temporary remain. */
    snprintf(path, size, "%s/sub", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(fkt_io_write_forces(path, 1, 3, forces, NULL, error, sizeof error),
                     FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(error, path));
    assert_int_equal(count_entries(dir), 2);
    assert_int_equal(count_entries(path), 0);

    fk_test_remove_tree(dir);
    free(path);
    free(dir);
}

static void test_write_forces_missing_directory(void **state)
{
    (void)state;
    char *dir = fk_test_make_temp_dir("fk_test_nodir_");
    assert_non_null(dir);
    size_t size = strlen(dir) + 64;
    char *path = malloc(size);
    assert_non_null(path);
    snprintf(path, size, "%s/no/such/dir/out.txt", dir);
    const double forces[3] = {1, 2, 3};
    error[0] = '\0';
    /* A missing directory is the user's to fix (exit 2), unlike a full disk (FK_ERR_IO, exit 1). */
    assert_int_equal(fkt_io_write_forces(path, 1, 3, forces, NULL, error, sizeof error),
                     FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(error, path));
    assert_non_null(strstr(error, "No such file"));
    assert_int_equal(count_entries(dir), 0);
    fk_test_remove_tree(dir);
    free(path);
    free(dir);
}

/* Issue #13: endless or huge inputs are "input too large" (exit 2), never read until memory runs
 * out: a 2 MB line, --in /dev/zero as text and as TIPSY, a TIPSY header claiming more than the
 * file holds, and a long line in the pair and exclusion files. */
static void test_input_too_large(void **state)
{
    (void)state;
    fkt_particle_set set;
    const size_t long_length = 2u << 20;
    char *long_line = malloc(long_length + 16);
    assert_non_null(long_line);
    memset(long_line, ' ', long_length);
    memcpy(long_line + long_length, "1 2 3 4\n", 9);
    char *path = write_temp("long_line.txt", long_line, strlen(long_line));
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZM, &set, error, sizeof error),
                     FK_ERR_PARSE);
    assert_non_null(strstr(error, "input too large"));
    assert_non_null(strstr(error, "long_line.txt:1"));
    assert_null(set.position);
    free(path);

    /* a line just under the bound is still data */
    memcpy(long_line + FKT_IO_MAX_LINE - 20, "1 2 3 4\n", 9);
    path = write_temp("almost_long.txt", long_line, strlen(long_line));
    assert_int_equal(fkt_io_read_text(path, FKT_LAYOUT_XYZM, &set, error, sizeof error), FK_OK);
    assert_int_equal(set.count, 1);
    fkt_particle_set_free(&set);
    free(path);

    assert_int_equal(fkt_io_read_text("/dev/zero", FKT_LAYOUT_XYZM, &set, error, sizeof error),
                     FK_ERR_PARSE);
    assert_non_null(strstr(error, "input too large"));
    assert_int_equal(fkt_io_read_tipsy("/dev/zero", FKT_LAYOUT_XYZM, &set, error, sizeof error),
                     FK_ERR_PARSE);
    assert_non_null(strstr(error, "not a TIPSY file"));

    /* A consistent header claiming 2^31 - 1 dark particles in a 64-byte file. */
    unsigned char header[64] = {0};
    const int32_t fields[5] = {INT32_MAX, 3, 0, INT32_MAX, 0};
    memcpy(header + 8, fields, sizeof fields);
    path = write_temp("huge.bin", header, sizeof header);
    assert_int_equal(fkt_io_read_tipsy(path, FKT_LAYOUT_XYZM, &set, error, sizeof error),
                     FK_ERR_PARSE);
    assert_non_null(strstr(error, "truncated TIPSY file"));
    assert_non_null(strstr(error, "found 64"));
    free(path);

    memset(long_line, ' ', long_length); /* the long line again */
    path = write_temp("long.params", long_line, strlen(long_line));
    fkt_pair_table_set table;
    assert_int_equal(
        fkt_io_read_pair_table(path, 2, "a b epsilon sigma", 1, &table, error, sizeof error),
        FK_ERR_PARSE);
    assert_non_null(strstr(error, "input too large"));
    size_t *pairs = NULL, count = 0;
    assert_int_equal(fkt_io_read_exclusions(path, 0, &pairs, &count, error, sizeof error),
                     FK_ERR_PARSE);
    assert_non_null(strstr(error, "input too large"));
    free(path);
    free(long_line);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_for_kernel),
        cmocka_unit_test(test_set_alloc_and_view),
        cmocka_unit_test(test_text_xyzm),
        cmocka_unit_test(test_text_xyzm_vel),
        cmocka_unit_test(test_text_xyzq_type),
        cmocka_unit_test(test_text_xyz_type),
        cmocka_unit_test(test_text_comments_and_blank_lines),
        cmocka_unit_test(test_text_malformed_number),
        cmocka_unit_test(test_text_nan_and_inf),
        cmocka_unit_test(test_text_column_count),
        cmocka_unit_test(test_text_empty),
        cmocka_unit_test(test_text_bad_type),
        cmocka_unit_test(test_text_long_line),
        cmocka_unit_test(test_text_many_lines),
        cmocka_unit_test(test_text_missing_file),
        cmocka_unit_test(test_text_error_buffer_optional),
        cmocka_unit_test(test_tipsy_round_trip),
        cmocka_unit_test(test_tipsy_truncated_and_trailing),
        cmocka_unit_test(test_tipsy_bad_header),
        cmocka_unit_test(test_tipsy_non_finite),
        cmocka_unit_test(test_tipsy_typed_layout),
        cmocka_unit_test(test_tipsy_missing_file),
        cmocka_unit_test(test_tipsy_galaxy_fixture),
        cmocka_unit_test(test_write_forces_content),
        cmocka_unit_test(test_write_forces_stdout),
        cmocka_unit_test(test_write_forces_atomic),
        cmocka_unit_test(test_write_forces_missing_directory),
        cmocka_unit_test(test_input_too_large),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
