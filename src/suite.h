/* Taufer et al.'s synthetic suite on the device (suite.c, cl/sumtest.cl): the global summation of
 * Tables II-V and the do/undo programs of Fig. 8 and Table VI. Internal to forcekit and its
 * command; the library never prints. */
#ifndef FK_SUITE_H
#define FK_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "forcekit/forcekit.h"

typedef enum fk_sum_representation {
    FK_SUM_FLOAT = 0,
    FK_SUM_DOUBLE,
    FK_SUM_COMPOSITE,
    FK_SUM_TI,
    FK_SUM_FIXED64,
    FK_SUM_COUNT
} fk_sum_representation;

typedef enum fk_doundo_representation {
    FK_DOUNDO_FLOAT = 0,
    FK_DOUNDO_DOUBLE,
    FK_DOUNDO_COMPOSITE,
    FK_DOUNDO_COUNT
} fk_doundo_representation;

/* "float", "double", "composite", "ti", "fixed64" */
const char *fk__sum_name(fk_sum_representation representation);
const char *fk__doundo_name(fk_doundo_representation representation);

typedef struct fk_suite fk_suite;

/* Builds cl/sumtest.cl for the context's device. */
fk_status fk__suite_open(fk_context *context, fk_suite **suite);
void fk__suite_close(fk_suite *suite);
/* 1 when the device has double precision (the double columns). */
int fk__suite_has_double(const fk_suite *suite);

/* Sums values[0..count) with `threads` work-items, each a contiguous slice, the host adding the
 * partial sums in the same representation. sums[r] is NaN where r cannot run (double without
 * fp64). fixed64 uses the scale 2^k chosen from max |value| and count as for forces. */
fk_status fk__suite_sum(fk_suite *suite, const float *values, size_t count, size_t threads,
                        double sums[FK_SUM_COUNT]);

/* One do/undo run: x = x0, then `iterations` times x = (x * y) / y (divide_first 0) or
 * (x / y) * y (1), y uniform in [y_low, y_high) from a float xorshift generator seeded by seed.
 * *final is x at the end (value + error for composite); *seconds the device time. */
fk_status fk__suite_doundo(fk_suite *suite, fk_doundo_representation representation, float x0,
                           float y_low, float y_high, uint32_t seed, int iterations,
                           int divide_first, double *final, double *seconds);

#endif
