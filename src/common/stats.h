/* The statistics of repeated measurements, one copy for the library, the command and the
 * benchmarks (issue #35): a timing is reported as the median of its repetitions, never the best
 * (a lucky run) nor the mean (one slow run moves it). Never prints. */
#ifndef FK_STATS_H
#define FK_STATS_H

#include <stddef.h>

/* qsort's comparison for doubles, ascending, NaN last: a consistent order whatever the values. */
int fk__compare_doubles(const void *a, const void *b);

/* The median of values, which it sorts in place (callers read the minimum and the maximum at the
 * ends afterwards): the middle value, or the mean of the middle two of an even count; NaN when
 * count is 0. */
double fk__median(double *values, size_t count);

#endif
