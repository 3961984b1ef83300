/* Two string helpers the library and the tools share (not installed): the bounded message
 * formatting every reader and writer reports its errors with, and C11's missing strdup. */
#ifndef FK_TEXT_H
#define FK_TEXT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline void
fk_format_message(char *message, size_t size, const char *format, ...)
{
    if (!message || size == 0)
        return;
    va_list args;
    va_start(args, format);
    vsnprintf(message, size, format, args);
    va_end(args);
}

/* A malloc'ed copy of text; NULL when out of memory. */
static inline char *fk_copy_string(const char *text)
{
    const size_t size = strlen(text) + 1;
    char *copy = malloc(size);
    if (copy)
        memcpy(copy, text, size);
    return copy;
}

#endif
