/* A context's warnings: lines that the library collects where a command line would print (a
 * corrupt tuning database, a cache that cannot be written), read with fk_context_warnings. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

void fk__warn(char **warnings, const char *format, ...)
{
    char line[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    size_t old = *warnings ? strlen(*warnings) : 0;
    char *grown = realloc(*warnings, old + strlen(line) + 2);
    if (!grown)
        return; /* a warning lost to a lack of memory is not worth failing for */
    memcpy(grown + old, line, strlen(line));
    grown[old + strlen(line)] = '\n';
    grown[old + strlen(line) + 1] = '\0';
    *warnings = grown;
}

const char *fk_context_warnings(const fk_context *context)
{
    return context && context->warnings ? context->warnings : "";
}
