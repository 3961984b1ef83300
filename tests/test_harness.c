/* The shared cmocka harness (test_support.h): the name filter, the full mode and the context
 * fixture. Linked into every cmocka test (fk_add_test), not into the programs without cmocka. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "forcekit/forcekit.h"
#include "test_support.h"

static int full_mode;

int fk_test_prepare(int argc, char **argv)
{
    const char *pattern = getenv("FK_TEST_FILTER");
    const char *full = getenv("FK_TEST_FULL");
    full_mode = full && strcmp(full, "0") != 0 && *full != '\0';
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--full") == 0) {
            full_mode = 1;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: %s [PATTERN] [--full]\n", argv[0]);
            return 2;
        } else {
            pattern = argv[i];
        }
    }
    if (pattern && *pattern)
        cmocka_set_test_filter(pattern);
    if (full_mode)
        fprintf(stderr, "full mode: the complete sweeps\n");
    return 0;
}

int fk_test_full(void)
{
    return full_mode;
}

fk_context *fk_test_context;

int fk_test_context_setup(void **state)
{
    (void)state;
    return fk_test_open_context(&fk_test_context);
}

int fk_test_context_teardown(void **state)
{
    (void)state;
    fk_context_destroy(fk_test_context);
    fk_test_context = NULL;
    return 0;
}
