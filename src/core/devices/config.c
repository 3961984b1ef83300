/* Configuration structs across library versions (forcekit.h, struct_size). */
#include <string.h>

#include "core/internal.h"

fk_status fk__config_copy(fk_context *context, const char *type, void *out, size_t out_size,
                          const void *in, size_t size_0_2)
{
    memset(out, 0, out_size);
    size_t size = 0;
    memcpy(&size, in, sizeof size); /* struct_size, the first member of every config */
    if (size == 0)
        size = size_0_2; /* a caller of 0.2.0's headers that left it zero */
    if (size < sizeof(size_t) + sizeof(void *)) {
        if (context)
            fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                     "%s.struct_size is %zu: set it to sizeof(%s) (FK_CONFIG_INIT) or 0", type,
                     size, type);
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (size > out_size) {
        /* A newer program: what this library does not know must be unset. */
        const unsigned char *tail = (const unsigned char *)in + out_size;
        for (size_t k = 0; k < size - out_size; ++k)
            if (tail[k]) {
                if (context)
                    fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                             "%s sets fields this library (forcekit %s, %zu bytes) does not know "
                             "(the caller's struct has %zu bytes): a newer forcekit is needed",
                             type, fk_version(), out_size, size);
                return FK_ERR_INVALID_ARGUMENT;
            }
        size = out_size;
    }
    memcpy(out, in, size);
    ((size_t *)out)[0] = out_size;
    return FK_OK;
}
