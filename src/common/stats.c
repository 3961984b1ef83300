#include "common/stats.h"

#include <math.h>
#include <stdlib.h>

int fk__compare_doubles(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    if (isnan(x) || isnan(y))
        return (isnan(x) != 0) - (isnan(y) != 0);
    return (x > y) - (x < y);
}

double fk__median(double *values, size_t count)
{
    if (count == 0)
        return NAN;
    qsort(values, count, sizeof *values, fk__compare_doubles);
    return count % 2 ? values[count / 2] : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}
