/* String helpers the library, the tools and the command share (not installed): the bounded
 * message formatting every reader and writer reports its errors with, C11's missing strdup, a
 * joined copy of two strings and a copy cut to a fixed field. */
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

/* A malloc'ed a followed by b (a path and its suffix, say); NULL when out of memory. */
static inline char *fk_concatenate(const char *a, const char *b)
{
    const size_t size = strlen(a) + strlen(b) + 1;
    char *joined = malloc(size);
    if (joined)
        snprintf(joined, size, "%s%s", a, b);
    return joined;
}

/* Copies at most size - 1 bytes of text (NULL: empty) into out: a key longer than its fixed
 * field is cut on purpose. */
static inline void fk_copy_text(char *out, size_t size, const char *text)
{
    size_t length = text ? strlen(text) : 0;
    if (length >= size)
        length = size - 1;
    if (length)
        memcpy(out, text, length);
    out[length] = '\0';
}

#endif
