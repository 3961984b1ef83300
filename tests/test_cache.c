/* The compiled-program cache: key derivation, entry round trips, corrupt entries as misses, atomic
 * stores and cache directory resolution. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/programs/cache.h"
#include "test_support.h"

/* magic 8, version 4, reserved 4, key digest 16, full key size 8, payload size 8, hash 16; then
 * the full key, then the payload (src/core/programs/cache.c) */
#define HEADER_SIZE 64
#define KEY_SIZE_AT 32
#define PAYLOAD_SIZE_AT 40
#define HASH_AT 48

static size_t stored_key_size(const unsigned char *file)
{
    size_t size = 0;
    for (int i = 7; i >= 0; --i)
        size = size << 8 | file[KEY_SIZE_AT + i];
    return size;
}

/* ---- fixture: a temp dir per test, and the environment variables the resolver reads -------------
 */

static const char *const saved_names[] = {"FORCEKIT_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
#define SAVED_COUNT (sizeof saved_names / sizeof saved_names[0])

typedef struct fixture {
    char *dir;
    char *saved_values[SAVED_COUNT]; /* NULL: the variable was unset */
} fixture;

/* cmocka runs teardown even when a test fails, so the environment is always put back. */
static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx)
        return -1;
    fx->dir = fk_test_make_temp_dir("fk_cache_");
    if (!fx->dir) {
        free(fx);
        return -1;
    }
    for (size_t i = 0; i < SAVED_COUNT; i++) {
        const char *value = getenv(saved_names[i]);
        fx->saved_values[i] = value ? strdup(value) : NULL;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    for (size_t i = 0; i < SAVED_COUNT; i++) {
        if (fx->saved_values[i])
            setenv(saved_names[i], fx->saved_values[i], 1);
        else
            unsetenv(saved_names[i]);
        free(fx->saved_values[i]);
    }
    chmod(fx->dir, 0755);
    fk_test_remove_tree(fx->dir);
    free(fx->dir);
    free(fx);
    return 0;
}

static char *join_path(const char *dir, const char *name)
{
    size_t size = strlen(dir) + strlen(name) + 2;
    char *path = malloc(size);
    assert_non_null(path);
    snprintf(path, size, "%s/%s", dir, name);
    return path;
}

static int path_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int is_directory(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Names in dir containing needle (NULL: every name). */
static int count_entries(const char *dir, const char *needle)
{
    DIR *handle = opendir(dir);
    if (!handle)
        return 0;
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(handle)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        if (!needle || strstr(entry->d_name, needle))
            count++;
    }
    closedir(handle);
    return count;
}

static unsigned char *read_whole_file(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    assert_non_null(file);
    assert_int_equal(fseek(file, 0, SEEK_END), 0);
    long length = ftell(file);
    assert_true(length >= 0);
    rewind(file);
    unsigned char *data = malloc((size_t)length + 1);
    assert_non_null(data);
    assert_int_equal(fread(data, 1, (size_t)length, file), (size_t)length);
    fclose(file);
    *size = (size_t)length;
    return data;
}

static unsigned char *random_bytes(size_t size)
{
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    unsigned char *data = malloc(size);
    assert_non_null(data);
    for (size_t i = 0; i < size; i++)
        data[i] = (unsigned char)(fk_test_rng_uniform(&rng) * 256.0);
    return data;
}

static const char base_source[] = "__kernel void k(__global float *x) { x[0] = 1.0f; }";

static fk_cache_key_parts base_parts(void)
{
    fk_cache_key_parts parts = {
        .source = base_source,
        .source_length = sizeof base_source - 1,
        .options = "-D FORCE=gravity -D UNROLL_I=4",
        .platform_version = "OpenCL 3.0 PoCL 5.0",
        .device_name = "cpu-haswell-AMD EPYC",
        .device_version = "OpenCL 3.0 PoCL HSTR",
        .driver_version = "5.0",
    };
    return parts;
}

static fk_cache_key key_of(const fk_cache_key_parts *parts)
{
    fk_cache_key key;
    memset(&key, 0x55, sizeof key);
    fk_cache_key_compute(parts, &key);
    return key;
}

static void assert_keys_differ(const fk_cache_key *a, const fk_cache_key *b)
{
    assert_string_not_equal(a->hex, b->hex);
}

/* ---- keys --------------------------------------------------------------------------------------
 */

static void test_key_deterministic(void **state)
{
    (void)state;
    fk_cache_key_parts parts = base_parts();
    fk_cache_key first = key_of(&parts);
    fk_cache_key second = key_of(&parts);
    assert_string_equal(first.hex, second.hex);
    assert_int_equal(strlen(first.hex), 32);
    for (int i = 0; i < 32; i++)
        assert_non_null(strchr("0123456789abcdef", first.hex[i]));

    /* Same content at a different address: the key depends on bytes, not pointers. */
    char *copy = malloc(sizeof base_source);
    assert_non_null(copy);
    memcpy(copy, base_source, sizeof base_source);
    parts.source = copy;
    fk_cache_key third = key_of(&parts);
    assert_string_equal(first.hex, third.hex);
    free(copy);
}

static void test_key_each_part_changes(void **state)
{
    (void)state;
    enum { variants = 8 };
    fk_cache_key keys[variants];
    fk_cache_key_parts parts = base_parts();
    keys[0] = key_of(&parts);

    parts = base_parts();
    parts.source = "__kernel void k(__global float *x) { x[0] = 2.0f; }";
    keys[1] = key_of(&parts);
    parts = base_parts();
    parts.source_length -= 1; /* only the first source_length bytes count */
    keys[2] = key_of(&parts);
    parts = base_parts();
    parts.options = "-D FORCE=gravity -D UNROLL_I=2";
    keys[3] = key_of(&parts);
    parts = base_parts();
    parts.platform_version = "OpenCL 3.0 PoCL 5.1";
    keys[4] = key_of(&parts);
    parts = base_parts();
    parts.device_name = "cpu-znver3-AMD EPYC";
    keys[5] = key_of(&parts);
    parts = base_parts();
    parts.device_version = "OpenCL 1.2 PoCL HSTR";
    keys[6] = key_of(&parts);
    parts = base_parts();
    parts.driver_version = "5.1";
    keys[7] = key_of(&parts);

    for (int i = 0; i < variants; i++)
        for (int j = i + 1; j < variants; j++)
            assert_keys_differ(&keys[i], &keys[j]);
}

static void test_key_length_prefix(void **state)
{
    (void)state;
    fk_cache_key_parts left = base_parts();
    fk_cache_key_parts right = base_parts();
    left.source = "ab";
    left.source_length = 2;
    left.options = "c";
    right.source = "a";
    right.source_length = 1;
    right.options = "bc";
    fk_cache_key left_key = key_of(&left);
    fk_cache_key right_key = key_of(&right);
    assert_keys_differ(&left_key, &right_key);

    left = base_parts();
    right = base_parts();
    left.device_name = "ab";
    left.device_version = "c";
    right.device_name = "a";
    right.device_version = "bc";
    left_key = key_of(&left);
    right_key = key_of(&right);
    assert_keys_differ(&left_key, &right_key);
}

static void test_key_null_parts(void **state)
{
    (void)state;
    fk_cache_key_parts with_empty = base_parts();
    fk_cache_key_parts with_null = base_parts();
    with_empty.options = "";
    with_null.options = NULL;
    fk_cache_key empty_key = key_of(&with_empty);
    fk_cache_key null_key = key_of(&with_null);
    assert_keys_differ(&empty_key, &null_key);

    /* A NULL in one place and "" in the next must not match the swap. */
    fk_cache_key_parts first = base_parts();
    fk_cache_key_parts second = base_parts();
    first.device_version = NULL;
    first.driver_version = "";
    second.device_version = "";
    second.driver_version = NULL;
    fk_cache_key first_key = key_of(&first);
    fk_cache_key second_key = key_of(&second);
    assert_keys_differ(&first_key, &second_key);

    fk_cache_key_parts source_null = base_parts();
    fk_cache_key_parts source_empty = base_parts();
    source_null.source = NULL;
    source_null.source_length = 0;
    source_empty.source = "";
    source_empty.source_length = 0;
    fk_cache_key source_null_key = key_of(&source_null);
    fk_cache_key source_empty_key = key_of(&source_empty);
    assert_keys_differ(&source_null_key, &source_empty_key);

    /* All parts NULL still gives a well-formed, deterministic key. */
    fk_cache_key_parts nothing = {0};
    fk_cache_key a = key_of(&nothing);
    fk_cache_key b = key_of(&nothing);
    assert_string_equal(a.hex, b.hex);
    assert_int_equal(strlen(a.hex), 32);
}

static void test_entry_path(void **state)
{
    fixture *fx = *state;
    fk_cache_key_parts parts = base_parts();
    fk_cache_key key = key_of(&parts);
    char *path = fk_cache_entry_path(fx->dir, &key);
    assert_non_null(path);
    char expected[4096];
    snprintf(expected, sizeof expected, "%s/%s.fkbin", fx->dir, key.hex);
    assert_string_equal(path, expected);
    free(path);

    /* A key not made by fk_cache_key_compute must not name a file outside the directory. */
    fk_cache_key bad;
    memset(&bad, 0, sizeof bad);
    snprintf(bad.hex, sizeof bad.hex, "../../../../../../../../etc/pwd");
    assert_null(fk_cache_entry_path(fx->dir, &bad));
    unsigned char byte = 1;
    assert_int_equal(fk_cache_store(fx->dir, &bad, &byte, 1), -1);
    unsigned char *binary = (unsigned char *)&byte;
    size_t size = 7;
    assert_int_equal(fk_cache_load(fx->dir, &bad, &binary, &size), 0);
    assert_null(binary);
    assert_int_equal(size, 0);
    assert_null(fk_cache_entry_path(NULL, &key));
    assert_null(fk_cache_entry_path(fx->dir, NULL));
}

/* ---- store and load ----------------------------------------------------------------------------
 */

static void test_round_trip(void **state)
{
    fixture *fx = *state;
    fk_cache_key_parts parts = base_parts();
    fk_cache_key key = key_of(&parts);
    const size_t payload_size = 100003; /* odd size, larger than a stdio buffer */
    unsigned char *payload = random_bytes(payload_size);

    assert_int_equal(fk_cache_store(fx->dir, &key, payload, payload_size), 0);

    unsigned char *loaded = NULL;
    size_t loaded_size = 0;
    assert_int_equal(fk_cache_load(fx->dir, &key, &loaded, &loaded_size), 1);
    assert_non_null(loaded);
    assert_int_equal(loaded_size, payload_size);
    assert_memory_equal(loaded, payload, payload_size);
    free(loaded);

    /* Header, full key, payload, nothing else; the magic is at the start. */
    char *path = fk_cache_entry_path(fx->dir, &key);
    size_t file_size = 0;
    unsigned char *file = read_whole_file(path, &file_size);
    const size_t key_size = stored_key_size(file);
    /* The full key holds every part: at least the source and the options. */
    assert_true(key_size > parts.source_length + strlen(parts.options));
    assert_int_equal(file_size, HEADER_SIZE + key_size + payload_size);
    assert_memory_equal(file, "FKCACHE\0", 8);
    assert_int_equal(file[8], FK_CACHE_FORMAT_VERSION & 0xff);
    assert_int_equal(file[PAYLOAD_SIZE_AT], payload_size & 0xff); /* little-endian size */
    assert_int_equal(file[PAYLOAD_SIZE_AT + 1], (payload_size >> 8) & 0xff);
    assert_memory_equal(file + HEADER_SIZE + key_size, payload, payload_size);
    free(file);
    free(path);
    free(payload);
}

static void test_store_replaces(void **state)
{
    fixture *fx = *state;
    fk_cache_key_parts parts = base_parts();
    fk_cache_key key = key_of(&parts);
    const unsigned char first[] = "first binary";
    const unsigned char second[] = "a second, longer binary";
    assert_int_equal(fk_cache_store(fx->dir, &key, first, sizeof first), 0);
    assert_int_equal(fk_cache_store(fx->dir, &key, second, sizeof second), 0);
    unsigned char *loaded = NULL;
    size_t loaded_size = 0;
    assert_int_equal(fk_cache_load(fx->dir, &key, &loaded, &loaded_size), 1);
    assert_int_equal(loaded_size, sizeof second);
    assert_memory_equal(loaded, second, sizeof second);
    free(loaded);
    assert_int_equal(count_entries(fx->dir, NULL), 1);
}

static void test_store_leaves_no_temp(void **state)
{
    fixture *fx = *state;
    for (int i = 0; i < 5; i++) {
        fk_cache_key_parts parts = base_parts();
        char options[32];
        snprintf(options, sizeof options, "-D VARIANT=%d", i);
        parts.options = options;
        fk_cache_key key = key_of(&parts);
        unsigned char payload[64];
        memset(payload, i + 1, sizeof payload);
        assert_int_equal(fk_cache_store(fx->dir, &key, payload, sizeof payload), 0);
    }
    assert_int_equal(count_entries(fx->dir, NULL), 5);
    assert_int_equal(count_entries(fx->dir, ".fkbin"), 5);
    assert_int_equal(count_entries(fx->dir, ".tmp"), 0);
}

static void test_store_rejects_empty(void **state)
{
    fixture *fx = *state;
    fk_cache_key_parts parts = base_parts();
    fk_cache_key key = key_of(&parts);
    unsigned char byte = 0;
    assert_int_equal(fk_cache_store(fx->dir, &key, &byte, 0), -1);
    assert_int_equal(fk_cache_store(fx->dir, &key, NULL, 10), -1);
    assert_int_equal(fk_cache_store(NULL, &key, &byte, 1), -1);
    assert_int_equal(fk_cache_store(fx->dir, NULL, &byte, 1), -1);
    assert_int_equal(count_entries(fx->dir, NULL), 0);
}

static void test_miss_absent(void **state)
{
    fixture *fx = *state;
    fk_cache_key_parts parts = base_parts();
    fk_cache_key key = key_of(&parts);
    unsigned char *loaded = (unsigned char *)"stale";
    size_t loaded_size = 99;
    assert_int_equal(fk_cache_load(fx->dir, &key, &loaded, &loaded_size), 0);
    assert_null(loaded);
    assert_int_equal(loaded_size, 0);

    char *missing = join_path(fx->dir, "no/such/dir");
    assert_int_equal(fk_cache_load(missing, &key, &loaded, &loaded_size), 0);
    assert_null(loaded);
    free(missing);
    assert_int_equal(fk_cache_load(NULL, &key, &loaded, &loaded_size), 0);
    assert_int_equal(fk_cache_load(fx->dir, &key, NULL, &loaded_size), 0);
    assert_int_equal(fk_cache_load(fx->dir, &key, &loaded, NULL), 0);
}

/* ---- corrupt entries are misses ----------------------------------------------------------------
 */

typedef enum corruption {
    TRUNCATE_HEADER,
    TRUNCATE_PAYLOAD,
    FLIP_PAYLOAD_BYTE,
    FLIP_HASH_BYTE,
    WRONG_MAGIC,
    WRONG_VERSION,
    EXTRA_TRAILING_BYTES,
    EMPTY_FILE,
    ZERO_SIZE,
    HUGE_SIZE,
    HUGE_KEY_SIZE,
    FLIP_KEY_BYTE,
} corruption;

/* Stores a valid entry, damages the file on disk, and expects a clean miss. */
static void expect_miss_after(void **state, corruption kind)
{
    fixture *fx = *state;
    fk_cache_key_parts parts = base_parts();
    fk_cache_key key = key_of(&parts);
    const size_t payload_size = 1000;
    unsigned char *payload = random_bytes(payload_size);
    assert_int_equal(fk_cache_store(fx->dir, &key, payload, payload_size), 0);
    free(payload);

    char *path = fk_cache_entry_path(fx->dir, &key);
    size_t size = 0;
    unsigned char *data = read_whole_file(path, &size);
    const size_t key_size = stored_key_size(data);
    assert_int_equal(size, HEADER_SIZE + key_size + payload_size);
    unsigned char *grown = NULL;
    switch (kind) {
    case TRUNCATE_HEADER:
        size = HEADER_SIZE / 2;
        break;
    case TRUNCATE_PAYLOAD:
        size -= 1;
        break;
    case FLIP_PAYLOAD_BYTE:
        data[HEADER_SIZE + key_size + payload_size / 2] ^= 0x01;
        break;
    case FLIP_KEY_BYTE: /* the stored full key no longer equals the one asked for */
        data[HEADER_SIZE + key_size / 2] ^= 0x01;
        break;
    case FLIP_HASH_BYTE:
        data[HASH_AT + 7] ^= 0x80;
        break;
    case WRONG_MAGIC:
        data[0] = 'X';
        break;
    case WRONG_VERSION:
        data[8] = (unsigned char)(FK_CACHE_FORMAT_VERSION + 1);
        break;
    case EXTRA_TRAILING_BYTES:
        grown = realloc(data, size + 3);
        assert_non_null(grown);
        data = grown;
        memcpy(data + size, "xyz", 3);
        size += 3;
        break;
    case EMPTY_FILE:
        size = 0;
        break;
    case ZERO_SIZE: /* a well-formed header that claims no payload */
        memset(data + PAYLOAD_SIZE_AT, 0, 8);
        size = HEADER_SIZE + key_size;
        break;
    case HUGE_SIZE: /* must not be trusted for an allocation */
        memset(data + PAYLOAD_SIZE_AT, 0xff, 8);
        break;
    case HUGE_KEY_SIZE:
        memset(data + KEY_SIZE_AT, 0xff, 8);
        break;
    }
    assert_int_equal(fk_test_write_file(path, data, size), 0);
    free(data);
    free(path);

    unsigned char *loaded = (unsigned char *)"stale";
    size_t loaded_size = 99;
    assert_int_equal(fk_cache_load(fx->dir, &key, &loaded, &loaded_size), 0);
    assert_null(loaded);
    assert_int_equal(loaded_size, 0);

    /* A miss is followed by a rebuild and a store, which must repair the entry. */
    const unsigned char fresh[] = "rebuilt";
    assert_int_equal(fk_cache_store(fx->dir, &key, fresh, sizeof fresh), 0);
    assert_int_equal(fk_cache_load(fx->dir, &key, &loaded, &loaded_size), 1);
    assert_int_equal(loaded_size, sizeof fresh);
    assert_memory_equal(loaded, fresh, sizeof fresh);
    free(loaded);
}

static void test_corrupt_truncated_header(void **state)
{
    expect_miss_after(state, TRUNCATE_HEADER);
}

static void test_corrupt_truncated_payload(void **state)
{
    expect_miss_after(state, TRUNCATE_PAYLOAD);
}

static void test_corrupt_flipped_payload_byte(void **state)
{
    expect_miss_after(state, FLIP_PAYLOAD_BYTE);
}

static void test_corrupt_flipped_hash_byte(void **state)
{
    expect_miss_after(state, FLIP_HASH_BYTE);
}

static void test_corrupt_wrong_magic(void **state)
{
    expect_miss_after(state, WRONG_MAGIC);
}

static void test_corrupt_wrong_version(void **state)
{
    expect_miss_after(state, WRONG_VERSION);
}

static void test_corrupt_extra_trailing_bytes(void **state)
{
    expect_miss_after(state, EXTRA_TRAILING_BYTES);
}

static void test_corrupt_empty_file(void **state)
{
    expect_miss_after(state, EMPTY_FILE);
}

static void test_corrupt_zero_size(void **state)
{
    expect_miss_after(state, ZERO_SIZE);
}

static void test_corrupt_huge_size(void **state)
{
    expect_miss_after(state, HUGE_SIZE);
}

static void test_corrupt_huge_key_size(void **state)
{
    expect_miss_after(state, HUGE_KEY_SIZE);
}

static void test_corrupt_flipped_key_byte(void **state)
{
    expect_miss_after(state, FLIP_KEY_BYTE);
}

/* Issue #13: an intact entry of another key (copied or renamed into place) is a miss, and so is
 * one whose header claims this key's name (a hash collision, or a re-labelled entry of a build
 * with another eps) but holds another full key: only the full key decides. */
static void test_entry_of_another_key(void **state)
{
    fixture *fx = *state;
    fk_cache_key_parts mine = base_parts(), theirs = base_parts();
    theirs.options = "-D FORCE=gravity -D UNROLL_I=8"; /* same length, other build */
    fk_cache_key my_key = key_of(&mine), their_key = key_of(&theirs);
    const unsigned char payload[] = "another build's binary";
    assert_int_equal(fk_cache_store(fx->dir, &their_key, payload, sizeof payload), 0);
    char *their_path = fk_cache_entry_path(fx->dir, &their_key);
    char *my_path = fk_cache_entry_path(fx->dir, &my_key);
    size_t size = 0;
    unsigned char *data = read_whole_file(their_path, &size);

    /* Copied as it is: the digest in the header names the other key. */
    assert_int_equal(fk_test_write_file(my_path, data, size), 0);
    unsigned char *loaded = NULL;
    size_t loaded_size = 0;
    assert_int_equal(fk_cache_load(fx->dir, &my_key, &loaded, &loaded_size), 0);
    assert_null(loaded);

    /* Re-labelled with this key's digest, sizes and hash intact: the full key differs. */
    for (int i = 0; i < 16; ++i) {
        unsigned int byte = 0;
        assert_int_equal(sscanf(my_key.hex + 2 * i, "%2x", &byte), 1);
        data[16 + i] = (unsigned char)byte;
    }
    assert_int_equal(fk_test_write_file(my_path, data, size), 0);
    assert_int_equal(fk_cache_load(fx->dir, &my_key, &loaded, &loaded_size), 0);
    assert_null(loaded);
    /* The other key still hits its own entry. */
    assert_int_equal(fk_cache_load(fx->dir, &their_key, &loaded, &loaded_size), 1);
    assert_int_equal(loaded_size, sizeof payload);
    free(loaded);
    free(data);
    free(their_path);
    free(my_path);
}

/* A FIFO named like an entry blocked fopen forever: now a miss at once. */
static void test_fifo_at_entry_path(void **state)
{
    fixture *fx = *state;
    fk_cache_key_parts parts = base_parts();
    fk_cache_key key = key_of(&parts);
    char *path = fk_cache_entry_path(fx->dir, &key);
    assert_int_equal(mkfifo(path, 0600), 0);
    alarm(20); /* a regression hangs: let SIGALRM end the test as a failure */
    unsigned char *loaded = NULL;
    size_t loaded_size = 0;
    assert_int_equal(fk_cache_load(fx->dir, &key, &loaded, &loaded_size), 0);
    alarm(0);
    assert_null(loaded);
    free(path);
}

static void test_directory_at_entry_path(void **state)
{
    fixture *fx = *state;
    fk_cache_key_parts parts = base_parts();
    fk_cache_key key = key_of(&parts);
    char *path = fk_cache_entry_path(fx->dir, &key);
    assert_int_equal(mkdir(path, 0755), 0);

    unsigned char *loaded = NULL;
    size_t loaded_size = 0;
    assert_int_equal(fk_cache_load(fx->dir, &key, &loaded, &loaded_size), 0);
    assert_null(loaded);

    /* rename cannot replace a directory with a file: the store fails and cleans up its temp. */
    const unsigned char payload[] = "binary";
    assert_int_equal(fk_cache_store(fx->dir, &key, payload, sizeof payload), -1);
    assert_int_equal(count_entries(fx->dir, ".tmp"), 0);
    assert_true(is_directory(path));
    free(path);
}

/* ---- stores that cannot happen -----------------------------------------------------------------
 */

static void test_store_nonexistent_dir(void **state)
{
    fixture *fx = *state;
    fk_cache_key_parts parts = base_parts();
    fk_cache_key key = key_of(&parts);
    const unsigned char payload[] = "binary";
    char *missing = join_path(fx->dir, "missing");
    assert_int_equal(fk_cache_store(missing, &key, payload, sizeof payload), -1);
    assert_false(path_exists(missing)); /* store does not create directories */
    assert_int_equal(count_entries(fx->dir, NULL), 0);
    free(missing);
}

static void test_store_under_regular_file(void **state)
{
    fixture *fx = *state;
    fk_cache_key_parts parts = base_parts();
    fk_cache_key key = key_of(&parts);
    const unsigned char payload[] = "binary";
    char *file = join_path(fx->dir, "file");
    assert_int_equal(fk_test_write_file(file, "x", 1), 0);
    char *under = join_path(file, "cache");
    assert_int_equal(fk_cache_store(under, &key, payload, sizeof payload), -1);
    assert_int_equal(fk_cache_store(file, &key, payload, sizeof payload), -1);
    assert_int_equal(count_entries(fx->dir, NULL), 1);
    free(under);
    free(file);
}

static void test_store_read_only_dir(void **state)
{
    fixture *fx = *state;
    if (geteuid() == 0)
        skip(); /* root writes through permission bits */
    fk_cache_key_parts parts = base_parts();
    fk_cache_key key = key_of(&parts);
    const unsigned char payload[] = "binary";
    assert_int_equal(chmod(fx->dir, 0555), 0);
    int stored = fk_cache_store(fx->dir, &key, payload, sizeof payload);
    chmod(fx->dir, 0755);
    assert_int_equal(stored, -1);
    assert_int_equal(count_entries(fx->dir, NULL), 0);
}

/* ---- directory resolution ----------------------------------------------------------------------
 */

static void test_resolve_off(void **state)
{
    (void)state;
    const char *spellings[] = {"off", "OFF", "Off", "oFf"};
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        char *dir = (char *)"stale";
        assert_int_equal(fk_cache_dir_resolve(spellings[i], &dir), 0);
        assert_null(dir);
    }
    setenv("FORCEKIT_CACHE_DIR", "OFF", 1);
    char *dir = (char *)"stale";
    assert_int_equal(fk_cache_dir_resolve(NULL, &dir), 0);
    assert_null(dir);
    dir = (char *)"stale";
    assert_int_equal(fk_cache_dir_resolve("", &dir), 0); /* empty configured falls through */
    assert_null(dir);
}

static void test_resolve_off_lookalikes(void **state)
{
    fixture *fx = *state;
    /* Only the whole value disables: a directory that happens to be called "off" is a directory. */
    char *named_off = join_path(fx->dir, "off");
    char *dir = NULL;
    assert_int_equal(fk_cache_dir_resolve(named_off, &dir), 0);
    assert_non_null(dir);
    assert_string_equal(dir, named_off);
    assert_true(is_directory(named_off));
    free(dir);
    free(named_off);
}

static void test_resolve_configured_wins(void **state)
{
    fixture *fx = *state;
    char *configured = join_path(fx->dir, "configured");
    char *from_env = join_path(fx->dir, "from_env");
    setenv("FORCEKIT_CACHE_DIR", from_env, 1);
    char *dir = NULL;
    assert_int_equal(fk_cache_dir_resolve(configured, &dir), 0);
    assert_string_equal(dir, configured);
    assert_true(is_directory(configured));
    assert_false(path_exists(from_env));
    free(dir);
    free(from_env);
    free(configured);
}

static void test_resolve_env(void **state)
{
    fixture *fx = *state;
    char *from_env = join_path(fx->dir, "from_env");
    setenv("FORCEKIT_CACHE_DIR", from_env, 1);
    char *dir = NULL;
    assert_int_equal(fk_cache_dir_resolve(NULL, &dir), 0);
    assert_string_equal(dir, from_env);
    assert_true(is_directory(from_env));
    free(dir);
    dir = NULL;
    assert_int_equal(fk_cache_dir_resolve("", &dir), 0);
    assert_string_equal(dir, from_env);
    free(dir);
    free(from_env);
}

static void test_resolve_xdg(void **state)
{
    fixture *fx = *state;
    char *xdg = join_path(fx->dir, "xdg");
    char *home = join_path(fx->dir, "home");
    unsetenv("FORCEKIT_CACHE_DIR");
    setenv("XDG_CACHE_HOME", xdg, 1);
    setenv("HOME", home, 1);
    char *dir = NULL;
    assert_int_equal(fk_cache_dir_resolve(NULL, &dir), 0);
    char *expected = join_path(xdg, "forcekit");
    assert_string_equal(dir, expected);
    assert_true(is_directory(expected));
    assert_false(path_exists(home));
    free(expected);
    free(dir);

    /* An empty FORCEKIT_CACHE_DIR is treated as unset. */
    setenv("FORCEKIT_CACHE_DIR", "", 1);
    dir = NULL;
    assert_int_equal(fk_cache_dir_resolve(NULL, &dir), 0);
    assert_non_null(strstr(dir, "/xdg/forcekit"));
    free(dir);
    free(home);
    free(xdg);
}

static void test_resolve_home(void **state)
{
    fixture *fx = *state;
    char *home = join_path(fx->dir, "home");
    unsetenv("FORCEKIT_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "", 1);
    setenv("HOME", home, 1);
    char *dir = NULL;
    assert_int_equal(fk_cache_dir_resolve(NULL, &dir), 0);
    char *expected = join_path(home, ".cache/forcekit");
    assert_string_equal(dir, expected);
    assert_true(is_directory(expected));
    free(expected);
    free(dir);

    /* Nowhere to put a cache at all. */
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    dir = (char *)"stale";
    assert_int_equal(fk_cache_dir_resolve(NULL, &dir), -1);
    assert_null(dir);
    free(home);
}

static void test_resolve_nested(void **state)
{
    fixture *fx = *state;
    char *nested = join_path(fx->dir, "a/b/c/d");
    char *dir = NULL;
    assert_int_equal(fk_cache_dir_resolve(nested, &dir), 0);
    assert_string_equal(dir, nested);
    assert_true(is_directory(nested));
    free(dir);

    /* Existing directories, doubled and trailing slashes are all fine. */
    dir = NULL;
    assert_int_equal(fk_cache_dir_resolve(nested, &dir), 0);
    free(dir);
    char *untidy = join_path(fx->dir, "x//y/z/");
    dir = NULL;
    assert_int_equal(fk_cache_dir_resolve(untidy, &dir), 0);
    char *made = join_path(fx->dir, "x/y/z");
    assert_true(is_directory(made));
    free(made);
    free(untidy);
    free(dir);

    /* The resolved directory is usable straight away. */
    fk_cache_key_parts parts = base_parts();
    fk_cache_key key = key_of(&parts);
    const unsigned char payload[] = "binary";
    assert_int_equal(fk_cache_store(nested, &key, payload, sizeof payload), 0);
    free(nested);
}

static void test_resolve_regular_file(void **state)
{
    fixture *fx = *state;
    char *file = join_path(fx->dir, "file");
    assert_int_equal(fk_test_write_file(file, "x", 1), 0);
    char *dir = (char *)"stale";
    assert_int_equal(fk_cache_dir_resolve(file, &dir), -1);
    assert_null(dir);

    char *under = join_path(file, "sub/dir");
    dir = (char *)"stale";
    assert_int_equal(fk_cache_dir_resolve(under, &dir), -1);
    assert_null(dir);

    /* The same through the environment. */
    setenv("FORCEKIT_CACHE_DIR", under, 1);
    dir = (char *)"stale";
    assert_int_equal(fk_cache_dir_resolve(NULL, &dir), -1);
    assert_null(dir);
    free(under);
    free(file);
    assert_int_equal(fk_cache_dir_resolve(NULL, NULL), -1);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_key_deterministic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_each_part_changes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_length_prefix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_null_parts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entry_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_replaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_leaves_no_temp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_rejects_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_miss_absent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_truncated_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_truncated_payload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_flipped_payload_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_flipped_hash_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_wrong_magic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_wrong_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_extra_trailing_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_empty_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_zero_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_huge_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_huge_key_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_flipped_key_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entry_of_another_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_at_entry_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directory_at_entry_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_nonexistent_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_under_regular_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_read_only_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_off_lookalikes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_configured_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_env, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_xdg, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_home, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_nested, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_regular_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
