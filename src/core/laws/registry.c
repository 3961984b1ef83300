/* The kernels (force laws) and accumulators the library knows. Adding a law: its header under
 * cl/forces/, its descriptor under src/core/laws/, a line in FK_LAWS below (docs/extending.md). */
#include <string.h>

#include "core/accum/accum.h"
#include "core/internal.h"

/* The force laws, one line each: the descriptor fk__law_<name> in src/core/laws/<name>.c. The order
 * is the one fk_kernel_at() lists them in. */
#define FK_LAWS(X)                                                                                 \
    X(ga)                                                                                          \
    X(gaj)                                                                                         \
    X(ljc_constant)                                                                                \
    X(ljc_linear)                                                                                  \
    X(ljc_sigmoidal)                                                                               \
    X(lj)                                                                                          \
    X(buck)                                                                                        \
    X(yukawa)

#define FK_LAW_DECLARE(name) extern const fk_kernel_desc fk__law_##name;
FK_LAWS(FK_LAW_DECLARE)
#define FK_LAW_ENTRY(name) &fk__law_##name,
static const fk_kernel_desc *const kernels[] = {FK_LAWS(FK_LAW_ENTRY)};

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
              .needs_fp64 = 0,
              .error = {.growth = 0x1p-24, .bounded = 1}},
     .decode = decode_float,
     .decode_format = "float",
     .flush_denormals = 1,
     .lanes = 1},
    {.info = {.name = "double",
              .letter = 'B',
              .description = "pair terms in single precision, sums in double",
              .needs_fp64 = 1,
              .error = {.relative = 0x1p-53, .growth = 0x1p-53, .bounded = 1}},
     .decode = decode_double,
     .decode_format = "double",
     .flush_denormals = 1,
     .lanes = 1},
    {.info = {.name = "ti",
              .letter = 'C',
              .description = "sums as a Takahashi-Iitaka float pair (two-sum, 10 flops per add)",
              .needs_fp64 = 0,
              .error = {.relative = 0x1p-46, .growth = 0x1p-47, .bounded = 1}},
     .decode = fk__decode_pair,
     .decode_format = "pair"},
    {.info = {.name = "nitadori",
              .letter = 'D',
              .description = "sums with Nitadori's trick (fast two-sum, 4 flops per add)",
              .needs_fp64 = 0,
              .error = {.growth = 0x1p-24, .bounded = 0}},
     .decode = fk__decode_pair,
     .decode_format = "pair"},
    {.info = {.name = "nitadori_large",
              .letter = 'E',
              .description = "Nitadori's trick from LARGE = 3*2^e, 2^e from a bound on the sums",
              .needs_fp64 = 0,
              .error = {.relative = 0x1p-46, .global = 0x1p-44, .bounded = 1}},
     .decode = fk__decode_large_pair,
     .decode_format = "large_pair",
     .choose_parameters = fk__choose_large},
    {.info = {.name = "narumi",
              .letter = 'F',
              .description = "Narumi's float + int32 fixed point (LOWER_SHIFT 8), zero offset",
              .needs_fp64 = 0,
              .error = {.global = 0x1p-44, .bounded = 1, .order_independent = 1}},
     .decode = fk__decode_narumi,
     .decode_format = "narumi",
     .choose_parameters = fk__choose_narumi,
     .flush_denormals = 1,
     .lanes = 1},
    {.info = {.name = "ref",
              .letter = 'G',
              .description = "pair terms and sums in double precision (the reference)",
              .needs_fp64 = 1,
              .error = {.relative = 0x1p-53, .growth = 0x1p-53, .bounded = 1}},
     .decode = decode_double,
     .decode_format = "double",
     .flush_denormals = 1,
     .double_pairs = 1},
    {.info = {.name = "composite",
              .letter = '-',
              .description = "Taufer et al.'s composite float2 (value + error) addition",
              .needs_fp64 = 0,
              .error = {.relative = 0x1p-46, .growth = 0x1p-46, .bounded = 1}},
     .decode = fk__decode_pair,
     .decode_format = "pair"},
    {.info = {.name = "fixed64",
              .letter = '-',
              .description = "64-bit integer fixed point at a scale 2^k from the data; "
                             "order-independent, overflow detected",
              .needs_fp64 = 0,
              .error = {.global = 0x1p-60,
                        .range_grows_with_n = 1,
                        .bounded = 1,
                        .order_independent = 1}},
     .decode = fk__decode_fixed64,
     .decode_format = "fixed64",
     .choose_parameters = fk__choose_fixed64,
     .overflowed = fk__fixed64_overflowed,
     .flush_denormals = 1,
     .lanes = FK_LANES_NEED_FP64},
};

#define COUNT_OF(array) (sizeof(array) / sizeof((array)[0]))

const fk_kernel_desc *fk__kernel_desc(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < COUNT_OF(kernels); ++i)
        if (strcmp(kernels[i]->info.name, name) == 0)
            return kernels[i];
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
    return index < COUNT_OF(kernels) ? &kernels[index]->info : NULL;
}

const fk_accum_info *fk_accum_at(size_t index)
{
    return index < COUNT_OF(accumulators) ? &accumulators[index].info : NULL;
}

static const char *const algorithm_names[] = {"all-pairs", "symmetric", "cells", "neighbors"};

const char *fk_algorithm_name(fk_algorithm algorithm)
{
    if (algorithm == FK_ALGORITHM_AUTO) /* a choice, not a loop */
        return "auto";
    if ((int)algorithm < 0 ||
        (size_t)algorithm >= sizeof algorithm_names / sizeof algorithm_names[0])
        return NULL;
    return algorithm_names[algorithm];
}

fk_status fk_algorithm_find(const char *name, fk_algorithm *algorithm)
{
    if (!name || !algorithm)
        return FK_ERR_INVALID_ARGUMENT;
    if (strcmp(name, "auto") == 0) {
        *algorithm = FK_ALGORITHM_AUTO;
        return FK_OK;
    }
    for (size_t i = 0; i < sizeof algorithm_names / sizeof algorithm_names[0]; ++i)
        if (strcmp(name, algorithm_names[i]) == 0) {
            *algorithm = (fk_algorithm)i;
            return FK_OK;
        }
    return FK_ERR_INVALID_ARGUMENT;
}

double fk_accum_error_bound(const fk_accum_info *accum, size_t n)
{
    if (!accum || n == 0)
        return 0.0;
    const fk_accum_error_model *e = &accum->error;
    const double range = e->range_grows_with_n ? (double)n : 1.0;
    return e->relative + (double)(n - 1) * e->growth + (double)n * e->global * range;
}

/* The accumulator's lane form, on a device with or without fp64 (both lane forms use it). */
static int accum_has_lanes(const fk_accum_desc *accum, int fp64)
{
    return accum && accum->lanes && (accum->lanes != FK_LANES_NEED_FP64 || fp64);
}

int fk__registry_has_lanes(const fk_kernel_desc *kernel, const fk_accum_desc *accum, int fp64)
{
    return kernel && kernel->lanes && accum_has_lanes(accum, fp64);
}

int fk__registry_has_list_lanes(const fk_kernel_desc *kernel, const fk_accum_desc *accum, int fp64)
{
    return kernel && kernel->list_lanes && accum_has_lanes(accum, fp64);
}
