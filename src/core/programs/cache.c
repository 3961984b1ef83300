/* The compiled-program cache on disk; see cache.h for the contract. Every read problem is a miss
 * and every write problem is a -1 that leaves nothing behind: the cache only ever saves time. */
#include "core/programs/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
/* Inlined, xxHash's state is a complete type that can live on the stack (no allocation to fail),
 * and its layout cannot drift from a separately upgraded libxxhash.so. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/text.h"

#define ENTRY_SUFFIX ".fkbin"
#define TEMP_SUFFIX ".tmpXXXXXX"
/* magic 8, version 4, reserved 4, key 16, full key size 8, payload size 8, hash 16 (over the full
 * key and the payload) */
#define HEADER_SIZE 64
#define MAX_KEY_BYTES ((size_t)64 << 20)

static const unsigned char entry_magic[8] = {'F', 'K', 'C', 'A', 'C', 'H', 'E', '\0'};

/* Integers are written byte by byte so an entry means the same thing on every host. */
static void put_u32(unsigned char *out, uint32_t value)
{
    for (int i = 0; i < 4; i++)
        out[i] = (unsigned char)(value >> (8 * i));
}

static void put_u64(unsigned char *out, uint64_t value)
{
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)(value >> (8 * i));
}

static uint32_t get_u32(const unsigned char *in)
{
    uint32_t value = 0;
    for (int i = 0; i < 4; i++)
        value |= (uint32_t)in[i] << (8 * i);
    return value;
}

static uint64_t get_u64(const unsigned char *in)
{
    uint64_t value = 0;
    for (int i = 0; i < 8; i++)
        value |= (uint64_t)in[i] << (8 * i);
    return value;
}

/* A presence byte and a length go before every part, so NULL differs from "" and no two splits of
 * the same bytes ("ab"+"c", "a"+"bc") hash alike. */
static void hash_part(XXH3_state_t *state, const char *text, size_t length)
{
    unsigned char prefix[9];
    prefix[0] = text ? 1 : 0;
    put_u64(prefix + 1, text ? (uint64_t)length : 0);
    XXH3_128bits_update(state, prefix, sizeof prefix);
    if (text && length > 0)
        XXH3_128bits_update(state, text, length);
}

static void hash_string(XXH3_state_t *state, const char *text)
{
    hash_part(state, text, text ? strlen(text) : 0);
}

static void hex_encode(const unsigned char *bytes, size_t count, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < count; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * count] = '\0';
}

void fk_cache_key_compute(const fk_cache_key_parts *parts, fk_cache_key *key)
{
    if (!key)
        return;
    static const fk_cache_key_parts no_parts;
    key->has_parts = parts != NULL;
    if (!parts)
        parts = &no_parts;
    key->parts = *parts;

    XXH3_state_t state;
    XXH3_INITSTATE(&state);
    XXH3_128bits_reset(&state);
    unsigned char version[4];
    put_u32(version, FK_CACHE_FORMAT_VERSION);
    XXH3_128bits_update(&state, version, sizeof version);
    hash_part(&state, parts->source, parts->source_length);
    hash_string(&state, parts->options);
    hash_string(&state, parts->platform_version);
    hash_string(&state, parts->device_name);
    hash_string(&state, parts->device_version);
    hash_string(&state, parts->driver_version);

    /* The canonical (big-endian) form makes the name independent of host byte order. */
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(&state));
    hex_encode(canonical.digest, sizeof canonical.digest, key->hex);
}

/* Only a key made by fk_cache_key_compute names a file: anything else (garbage, "../") could point
 * outside the cache directory. */
static int key_is_valid(const fk_cache_key *key)
{
    for (int i = 0; i < 32; i++) {
        char c = key->hex[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return 0;
    }
    return key->hex[32] == '\0';
}

char *fk_cache_entry_path(const char *dir, const fk_cache_key *key)
{
    if (!dir || !*dir || !key || !key_is_valid(key))
        return NULL;
    size_t size = strlen(dir) + 1 + 32 + sizeof ENTRY_SUFFIX;
    char *path = malloc(size);
    if (!path)
        return NULL;
    snprintf(path, size, "%s/%s%s", dir, key->hex, ENTRY_SUFFIX);
    return path;
}

/* The full key, serialised as it is hashed (a presence byte and a length before every part). */
static unsigned char *full_key(const fk_cache_key *key, size_t *size)
{
    static const fk_cache_key_parts no_parts;
    const fk_cache_key_parts *parts = key->has_parts ? &key->parts : &no_parts;
    const char *texts[6] = {parts->source,      parts->options,        parts->platform_version,
                            parts->device_name, parts->device_version, parts->driver_version};
    size_t lengths[6];
    size_t total = 4;
    for (int k = 0; k < 6; ++k) {
        lengths[k] = !texts[k] ? 0 : k == 0 ? parts->source_length : strlen(texts[k]);
        if (lengths[k] > MAX_KEY_BYTES)
            return NULL;
        total += 9 + lengths[k];
    }
    unsigned char *bytes = malloc(total);
    if (!bytes)
        return NULL;
    put_u32(bytes, FK_CACHE_FORMAT_VERSION);
    size_t at = 4;
    for (int k = 0; k < 6; ++k) {
        bytes[at] = texts[k] ? 1 : 0;
        put_u64(bytes + at + 1, (uint64_t)lengths[k]);
        at += 9;
        if (lengths[k])
            memcpy(bytes + at, texts[k], lengths[k]);
        at += lengths[k];
    }
    *size = total;
    return bytes;
}

static void key_digest(const fk_cache_key *key, unsigned char out[16])
{
    for (int i = 0; i < 16; ++i) {
        int high = key->hex[2 * i], low = key->hex[2 * i + 1];
        high = high <= '9' ? high - '0' : high - 'a' + 10;
        low = low <= '9' ? low - '0' : low - 'a' + 10;
        out[i] = (unsigned char)(high << 4 | low);
    }
}

static void entry_hash(const unsigned char *key_bytes, size_t key_size,
                       const unsigned char *payload, size_t size, unsigned char out[16])
{
    XXH3_state_t state;
    XXH3_INITSTATE(&state);
    XXH3_128bits_reset(&state);
    XXH3_128bits_update(&state, key_bytes, key_size);
    XXH3_128bits_update(&state, payload, size);
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(&state));
    memcpy(out, canonical.digest, 16);
}

/* read() until count bytes or the end; 1 when all came. */
static int read_exactly(int fd, unsigned char *out, size_t count)
{
    size_t used = 0;
    while (used < count) {
        ssize_t got = read(fd, out + used, count - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return 0;
        used += (size_t)got;
    }
    return 1;
}

/* Reads and checks one entry; 1 with the payload on success. Every size in the header is checked
 * against the file's size before anything is allocated: the file size must match exactly, as a
 * short or padded file is a damaged entry. */
static int read_entry(int fd, const fk_cache_key *key, unsigned char **binary, size_t *size)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < HEADER_SIZE)
        return 0;
    unsigned char header[HEADER_SIZE];
    if (!read_exactly(fd, header, HEADER_SIZE))
        return 0;
    unsigned char digest[16];
    key_digest(key, digest);
    if (memcmp(header, entry_magic, sizeof entry_magic) != 0 ||
        get_u32(header + 8) != FK_CACHE_FORMAT_VERSION || get_u32(header + 12) != 0 ||
        memcmp(header + 16, digest, 16) != 0)
        return 0;
    size_t expected_key_size = 0;
    unsigned char *expected_key = full_key(key, &expected_key_size);
    if (!expected_key)
        return 0;
    const uint64_t key_size = get_u64(header + 32), payload_size = get_u64(header + 40);
    const uint64_t body = (uint64_t)st.st_size - HEADER_SIZE;
    if (key_size != expected_key_size || payload_size == 0 || payload_size > FK_CACHE_MAX_PAYLOAD ||
        key_size > body || payload_size != body - key_size) {
        free(expected_key);
        return 0;
    }
    unsigned char *stored_key = malloc(expected_key_size);
    unsigned char *payload = malloc((size_t)payload_size);
    int hit = stored_key && payload && read_exactly(fd, stored_key, expected_key_size) &&
              memcmp(stored_key, expected_key, expected_key_size) == 0 &&
              read_exactly(fd, payload, (size_t)payload_size);
    if (hit) {
        unsigned char hash[16];
        entry_hash(stored_key, expected_key_size, payload, (size_t)payload_size, hash);
        hit = memcmp(hash, header + 48, 16) == 0;
    }
    free(expected_key);
    free(stored_key);
    if (!hit) {
        free(payload);
        return 0;
    }
    *binary = payload;
    *size = (size_t)payload_size;
    return 1;
}

int fk_cache_load(const char *dir, const fk_cache_key *key, unsigned char **binary, size_t *size)
{
    if (binary)
        *binary = NULL;
    if (size)
        *size = 0;
    if (!binary || !size)
        return 0;
    char *path = fk_cache_entry_path(dir, key);
    if (!path)
        return 0;
    /* O_NONBLOCK: a FIFO named like an entry must not block the open; fstat then rejects it. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return 0;
    int hit = read_entry(fd, key, binary, size);
    close(fd);
    return hit;
}

/* Writes header, full key and payload and forces them to disk; 0 on success. Closes the file
 * either way. */
static int write_entry(FILE *file, const fk_cache_key *key, const unsigned char *binary,
                       size_t size)
{
    size_t key_size = 0;
    unsigned char *key_bytes = full_key(key, &key_size);
    if (!key_bytes) {
        fclose(file);
        return -1;
    }
    unsigned char header[HEADER_SIZE];
    memcpy(header, entry_magic, sizeof entry_magic);
    put_u32(header + 8, FK_CACHE_FORMAT_VERSION);
    put_u32(header + 12, 0);
    key_digest(key, header + 16);
    put_u64(header + 32, (uint64_t)key_size);
    put_u64(header + 40, (uint64_t)size);
    entry_hash(key_bytes, key_size, binary, size, header + 48);

    /* fsync before rename: otherwise a crash can leave the new name pointing at empty blocks. */
    int ok = fwrite(header, 1, HEADER_SIZE, file) == HEADER_SIZE &&
             fwrite(key_bytes, 1, key_size, file) == key_size &&
             fwrite(binary, 1, size, file) == size && fflush(file) == 0 && fsync(fileno(file)) == 0;
    free(key_bytes);
    if (fclose(file) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

int fk_cache_store(const char *dir, const fk_cache_key *key, const unsigned char *binary,
                   size_t size)
{
    /* An empty entry would only ever load as a miss, so it is not worth a file. */
    if (!binary || size == 0 || size > FK_CACHE_MAX_PAYLOAD)
        return -1;
    char *path = fk_cache_entry_path(dir, key);
    if (!path)
        return -1;
    size_t temp_size = strlen(path) + sizeof TEMP_SUFFIX;
    char *temp_path = malloc(temp_size);
    if (!temp_path) {
        free(path);
        return -1;
    }
    snprintf(temp_path, temp_size, "%s%s", path, TEMP_SUFFIX);

    /* A unique name in the same directory: concurrent writers never share a file, and rename
     * within one file system replaces the entry atomically, so readers see all of it or none. */
    int status = -1;
    int fd = mkstemp(temp_path);
    if (fd >= 0) {
        FILE *file = fdopen(fd, "wb");
        if (!file)
            close(fd);
        if (file && write_entry(file, key, binary, size) == 0 && rename(temp_path, path) == 0)
            status = 0;
        else
            unlink(temp_path);
    }
    free(temp_path);
    free(path);
    return status;
}

/* "off" in any case: users type it into environment variables and config files. */
static int is_off(const char *value)
{
    static const char off[] = "off";
    for (int i = 0; i < 3; i++) {
        char c = value[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != off[i])
            return 0;
    }
    return value[3] == '\0';
}

static int is_directory(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* mkdir -p. A failed mkdir is fine when a directory is there anyway (EEXIST, but also EACCES or
 * EROFS on a parent that already exists), so the test is what stat finds, not the errno. */
static int make_directories(char *path)
{
    for (char *cursor = path + 1; *cursor; cursor++) {
        if (*cursor != '/' || cursor[-1] == '/')
            continue;
        *cursor = '\0';
        int made = mkdir(path, 0755) == 0 || is_directory(path);
        *cursor = '/';
        if (!made)
            return -1;
    }
    if (mkdir(path, 0755) != 0 && !is_directory(path))
        return -1;
    return 0;
}

int fk_cache_dir_resolve(const char *configured, char **dir)
{
    if (!dir)
        return -1;
    *dir = NULL;

    const char *chosen = configured;
    if (!chosen || !*chosen)
        chosen = getenv("FORCEKIT_CACHE_DIR");
    char *path;
    if (chosen && *chosen) {
        if (is_off(chosen))
            return 0;
        path = fk_concatenate(chosen, "");
    } else {
        const char *xdg = getenv("XDG_CACHE_HOME");
        const char *home = getenv("HOME");
        if (xdg && *xdg)
            path = fk_concatenate(xdg, "/forcekit");
        else if (home && *home)
            path = fk_concatenate(home, "/.cache/forcekit");
        else
            return -1;
    }
    if (!path)
        return -1;
    if (make_directories(path) != 0) {
        free(path);
        return -1;
    }
    *dir = path;
    return 0;
}
