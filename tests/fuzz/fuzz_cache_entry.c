/* Compiled-program cache entries (src/core/programs/cache.c). Odd first byte: the input is the
 * entry file as it is. Even: the input is a payload that the harness stores as a valid entry, then
 * one byte of the file (at the offset in bytes 1-2) is replaced by byte 3: this reaches the checks
 * behind the magic, the key and the hash. A hit must return exactly what a store of the same key
 * wrote. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/programs/cache.h"
#include "fuzz_support.h"

static const char source[] = "__kernel void k(__global float *x) { x[0] = 1.0f; }";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *dir = fk_fuzz_dir();
    fk_cache_key_parts parts = {.source = source,
                                .source_length = sizeof source - 1,
                                .options = "-D FORCE=ga",
                                .platform_version = "OpenCL 3.0 PoCL",
                                .device_name = "cpu",
                                .device_version = "OpenCL 3.0",
                                .driver_version = "5.0"};
    fk_cache_key key;
    fk_cache_key_compute(&parts, &key);
    char *path = fk_cache_entry_path(dir, &key);
    if (!path)
        abort();
    const uint8_t *stored = NULL;
    size_t stored_size = 0;
    if (size > 0 && (data[0] & 1)) {
        fk_fuzz_write(strrchr(path, '/') + 1, data + 1, size - 1);
    } else if (size > 4) {
        stored = data + 4;
        stored_size = size - 4;
        if (fk_cache_store(dir, &key, stored, stored_size) != 0)
            abort();
        FILE *file = fopen(path, "r+b");
        if (!file)
            abort();
        long offset = (long)(data[1] | data[2] << 8);
        fseek(file, 0, SEEK_END);
        long length = ftell(file);
        if (offset < length && data[3] != 0) {
            fseek(file, offset, SEEK_SET);
            int old = fgetc(file);
            fseek(file, offset, SEEK_SET);
            fputc(old ^ data[3], file);
            stored = NULL; /* damaged: a hit would be wrong */
        }
        fclose(file);
    } else {
        free(path);
        return 0;
    }
    unsigned char *binary = NULL;
    size_t binary_size = 0;
    int hit = fk_cache_load(dir, &key, &binary, &binary_size);
    if (hit && (binary_size == 0 || binary_size > FK_CACHE_MAX_PAYLOAD))
        __builtin_trap();
    if (stored && (!hit || binary_size != stored_size || memcmp(binary, stored, stored_size) != 0))
        __builtin_trap(); /* an intact entry must hit with its payload */
    if (!stored && !(data[0] & 1) && hit)
        __builtin_trap(); /* a flipped byte anywhere in the entry must be a miss */
    free(binary);
    free(path);
    return 0;
}
