/* Pair parameter tables (2 and 3 numbers a pair) and exclusion lists (src/tools/io_params.c). */
#include <stdlib.h>

#include "fuzz_support.h"
#include "forcekit/tools.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fk_fuzz_write("pairs.txt", data, size);
    char error[512] = "";
    static const struct {
        unsigned parameters;
        const char *format;
    } tables[] = {{2, "a b epsilon sigma"}, {3, "a b A rho C"}};
    for (size_t k = 0; k < 2; ++k) {
        fkt_pair_table_set table;
        if (fkt_io_read_pair_table(path, tables[k].parameters, tables[k].format, 1, &table, error,
                                   sizeof error) == FK_OK)
            fkt_pair_table_set_free(&table);
    }
    for (size_t particles = 0; particles <= 64; particles += 64) {
        size_t *pairs = NULL, count = 0;
        if (fkt_io_read_exclusions(path, particles, &pairs, &count, error, sizeof error) == FK_OK &&
            particles)
            for (size_t i = 0; i < 2 * count; ++i)
                if (pairs[i] >= particles)
                    __builtin_trap(); /* indices are bounded by the particle count */
        free(pairs);
    }
    return 0;
}
