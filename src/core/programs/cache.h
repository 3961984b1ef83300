/* The compiled-program cache on disk (ggml's OpenCL backend is the model).
 * Key: XXH3-128 over a format version, the expanded source, the build options, the platform
 * version, device name, device version and driver version; it names the entry's file. Entry:
 * header (magic, format version, the key, the sizes, a hash over the rest), then the full key
 * (every part, as hashed), then the binary. A hit needs the full key to be equal, not only its
 * hash, so an intact entry of another key (copied, renamed, colliding) is a miss (issue #13).
 * Writes go to a temporary name and are renamed. Any failure to read, and anything odd (not a
 * regular file, a FIFO, sizes that disagree with the file), is a miss, never an error. */
#ifndef FK_CACHE_H
#define FK_CACHE_H

#include <stddef.h>

#define FK_CACHE_FORMAT_VERSION 2u
/* No program binary is this large: a header claiming more is damaged. */
#define FK_CACHE_MAX_PAYLOAD ((size_t)1 << 30)

typedef struct fk_cache_key_parts {
    const char *source;
    size_t source_length;
    const char *options;
    const char *platform_version;
    const char *device_name;
    const char *device_version;
    const char *driver_version;
} fk_cache_key_parts;

/* The key borrows the parts' strings: use it (load, store) while they live. A key with has_parts
 * 0 (made by hand) has an empty full key. */
typedef struct fk_cache_key {
    char hex[33]; /* 32 hex digits and NUL */
    fk_cache_key_parts parts;
    int has_parts;
} fk_cache_key;

void fk_cache_key_compute(const fk_cache_key_parts *parts, fk_cache_key *key);

/* Resolves the cache directory: configured (may be NULL), else $FORCEKIT_CACHE_DIR, else
 * $XDG_CACHE_HOME/forcekit, else $HOME/.cache/forcekit. "off" (either source) disables: returns 0
 * with *dir NULL. Creates the directory (and parents). Returns 0 on success, -1 when the directory
 * cannot be created (the caller then runs without a cache). *dir is malloc'ed. */
int fk_cache_dir_resolve(const char *configured, char **dir);

/* 1 and a malloc'ed binary of *size bytes (0 < size <= FK_CACHE_MAX_PAYLOAD) on a hit; 0 on any
 * miss (absent, not a regular file, truncated, bad magic, another key, bad hash). */
int fk_cache_load(const char *dir, const fk_cache_key *key, unsigned char **binary, size_t *size);

/* 0 when stored; -1 on failure (the caller carries on without caching). Never leaves a partial
 * entry. */
int fk_cache_store(const char *dir, const fk_cache_key *key, const unsigned char *binary,
                   size_t size);

/* The entry's path (for tests and messages); malloc'ed. */
char *fk_cache_entry_path(const char *dir, const fk_cache_key *key);

#endif
