/* The kernels (force laws) and accumulators the library knows. Adding one: a header under cl/, an
 * entry here, a reference in reference.c. */
#include <string.h>

#include "internal.h"

static const fk_kernel_desc kernels[] = {
    {
        .info = {.name = "ga",
                 .description = "gravitational acceleration (optional potential), softening eps",
                 .force_components = 3,
                 .input_columns = 4,
                 .input_format = "x y z m",
                 .flops_per_interaction = 19.0},
        .uses_aux = 0,
        .uses_table = 0,
        .physics_floats = 1,
        .reference = fk__reference_ga,
    },
};

static double decode_float(uint32_t lo, uint32_t hi, double scale)
{
    (void)hi;
    (void)scale;
    float value;
    memcpy(&value, &lo, sizeof value);
    return (double)value;
}

static double decode_double(uint32_t lo, uint32_t hi, double scale)
{
    (void)scale;
    /* OpenCL's as_uint2(double) puts the low word first on little-endian devices, which every
     * OpenCL device we target is (CL_DEVICE_ENDIAN_LITTLE is checked at context creation). */
    uint64_t bits = ((uint64_t)hi << 32) | lo;
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static const fk_accum_desc accumulators[] = {
    {.info = {.name = "float",
              .letter = 'A',
              .description = "pair terms and sums in single precision",
              .needs_fp64 = 0},
     .decode = decode_float},
    {.info = {.name = "double",
              .letter = 'B',
              .description = "pair terms in single precision, sums in double",
              .needs_fp64 = 1},
     .decode = decode_double},
};

#define COUNT_OF(array) (sizeof(array) / sizeof((array)[0]))

const fk_kernel_desc *fk__kernel_desc(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < COUNT_OF(kernels); ++i)
        if (strcmp(kernels[i].info.name, name) == 0)
            return &kernels[i];
    return NULL;
}

const fk_accum_desc *fk__accum_desc(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < COUNT_OF(accumulators); ++i)
        if (strcmp(accumulators[i].info.name, name) == 0)
            return &accumulators[i];
    return NULL;
}

const fk_kernel_info *fk_kernel_find(const char *name)
{
    const fk_kernel_desc *desc = fk__kernel_desc(name);
    return desc ? &desc->info : NULL;
}

const fk_accum_info *fk_accum_find(const char *name)
{
    const fk_accum_desc *desc = fk__accum_desc(name);
    return desc ? &desc->info : NULL;
}

const fk_kernel_info *fk_kernel_at(size_t index)
{
    return index < COUNT_OF(kernels) ? &kernels[index].info : NULL;
}

const fk_accum_info *fk_accum_at(size_t index)
{
    return index < COUNT_OF(accumulators) ? &accumulators[index].info : NULL;
}
