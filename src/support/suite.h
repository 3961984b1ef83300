/* Taufer et al.'s synthetic suite on the device (suite.c, cl/sumtest.cl): the global summation of
 * Tables II-V and the do/undo programs of Fig. 8 and Table VI. Internal to forcekit and its
 * command; the library never prints. */
#ifndef FK_SUITE_H
#define FK_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "forcekit/forcekit.h"

typedef enum fkt_sum_representation {
    FKT_SUM_FLOAT = 0,
    FKT_SUM_DOUBLE,
    FKT_SUM_COMPOSITE,
    FKT_SUM_TI,
    FKT_SUM_FIXED64,
    FKT_SUM_COUNT
} fkt_sum_representation;

typedef enum fkt_doundo_representation {
    FKT_DOUNDO_FLOAT = 0,
    FKT_DOUNDO_DOUBLE,
    FKT_DOUNDO_COMPOSITE,
    FKT_DOUNDO_COUNT
} fkt_doundo_representation;

/* "float", "double", "composite", "ti", "fixed64" */
const char *fkt_sum_name(fkt_sum_representation representation);
const char *fkt_doundo_name(fkt_doundo_representation representation);

typedef struct fkt_suite fkt_suite;

/* Builds cl/sumtest.cl for the context's device. */
fk_status fkt_suite_open(fk_context *context, fkt_suite **suite);
void fkt_suite_close(fkt_suite *suite);
/* 1 when the device has double precision (the double columns). */
int fkt_suite_has_double(const fkt_suite *suite);

/* Sums values[0..count) with `threads` work-items, each a contiguous slice, the host adding the
 * partial sums in the same representation. sums[r] is NaN where r cannot run (double without
 * fp64). fixed64 uses the scale 2^k chosen from max |value| and count as for forces. */
fk_status fkt_suite_sum(fkt_suite *suite, const float *values, size_t count, size_t threads,
                        double sums[FKT_SUM_COUNT]);

/* One do/undo run: x = x0, then `iterations` times x = (x * y) / y (divide_first 0) or
 * (x / y) * y (1), y uniform in [y_low, y_high) from a float xorshift generator seeded by seed.
 * *final is x at the end (value + error for composite); *seconds the device time. */
fk_status fkt_suite_doundo(fkt_suite *suite, fkt_doundo_representation representation, float x0,
                           float y_low, float y_high, uint32_t seed, int iterations,
                           int divide_first, double *final, double *seconds);

#endif
