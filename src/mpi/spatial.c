/* The spatial scheme's slabs (src/mpi/spatial.h). */
#include "mpi/spatial.h"

#include <math.h>

double fk__mpi_wrap(double z, double length)
{
    double w = z - length * floor(z / length);
    return w >= length || w < 0 ? 0.0 : w;
}

void fk__mpi_slab(double length, int ranks, int r, double *lo, double *hi)
{
    *lo = length * (double)r / (double)ranks;
    *hi = length * (double)(r + 1) / (double)ranks;
}

int fk__mpi_slab_needs(double length, int ranks, double halo, int r, double z, int *owned)
{
    double lo, hi;
    fk__mpi_slab(length, ranks, r, &lo, &hi);
    *owned = z >= lo && z < hi;
    if (*owned)
        return 1;
    const double below = z < lo ? lo - z : lo - z + length;  /* from z up to the slab */
    const double above = z >= hi ? z - hi : z - hi + length; /* from the slab up to z */
    return below <= halo || above <= halo;
}

int fk__mpi_slab_owner(double length, int ranks, double z)
{
    /* a first guess, then the slabs' own bounds decide (the guess may be one off by rounding) */
    int r = (int)(z / length * (double)ranks);
    r = r < 0 ? 0 : (r >= ranks ? ranks - 1 : r);
    double lo, hi;
    fk__mpi_slab(length, ranks, r, &lo, &hi);
    while (r > 0 && z < lo)
        fk__mpi_slab(length, ranks, --r, &lo, &hi);
    while (r < ranks - 1 && z >= hi)
        fk__mpi_slab(length, ranks, ++r, &lo, &hi);
    return r;
}
