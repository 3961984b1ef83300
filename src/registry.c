/* The kernels (force laws) and accumulators the library knows. Adding one: a header under cl/, an
 * entry here, a reference in reference.c. */
#include <string.h>

#include "accum.h"
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
        .law = FK_LAW_GA,
        .lanes = 1,
        .reference = fk__reference_ga,
    },
    /* Flops per interaction: Elsen et al., Table 1 for gaj and ljc_* (their count of the plain
     * kernels, kept for comparison with the paper); lj 30 and buck 40 are forcekit's own counts.
     * docs/force-laws.md "Force laws" gives our own count of what each kernel executes. */
    {
        .info = {.name = "gaj",
                 .description = "gravitational acceleration and jerk (Hermite), softening eps",
                 .force_components = 6,
                 .input_columns = 7,
                 .input_format = "x y z m vx vy vz",
                 .flops_per_interaction = 42.0},
        .uses_aux = 1,
        .physics_floats = 1,
        .law = FK_LAW_GAJ,
        .reference = fk__reference_gaj,
    },
    {
        .info = {.name = "ljc_constant",
                 .description = "Lennard-Jones + Coulomb, constant dielectric D0",
                 .force_components = 3,
                 .input_columns = 5,
                 .input_format = "x y z q type",
                 .flops_per_interaction = 30.0,
                 .pair_parameters = 2,
                 .pair_format = "a b epsilon sigma"},
        .uses_aux = 1,
        .uses_table = 1,
        .physics_floats = FK__PHYSICS_FLOATS,
        .law = FK_LAW_LJC_CONSTANT,
        .table_stride = 4,
        .reference = fk__reference_ljc_constant,
    },
    {
        .info = {.name = "ljc_linear",
                 .description = "Lennard-Jones + Coulomb, dielectric D = s r (energy-consistent)",
                 .force_components = 3,
                 .input_columns = 5,
                 .input_format = "x y z q type",
                 .flops_per_interaction = 30.0,
                 .pair_parameters = 2,
                 .pair_format = "a b epsilon sigma"},
        .uses_aux = 1,
        .uses_table = 1,
        .physics_floats = FK__PHYSICS_FLOATS,
        .law = FK_LAW_LJC_LINEAR,
        .table_stride = 4,
        .reference = fk__reference_ljc_linear,
    },
    {
        .info = {.name = "ljc_sigmoidal",
                 .description = "Lennard-Jones + Coulomb, dielectric exp(a r^3 + b r^2 + c r + d)",
                 .force_components = 3,
                 .input_columns = 5,
                 .input_format = "x y z q type",
                 .flops_per_interaction = 43.0,
                 .pair_parameters = 2,
                 .pair_format = "a b epsilon sigma"},
        .uses_aux = 1,
        .uses_table = 1,
        .physics_floats = FK__PHYSICS_FLOATS,
        .law = FK_LAW_LJC_SIGMOIDAL,
        .table_stride = 4,
        .reference = fk__reference_ljc_sigmoidal,
        .inexact_builtin = "exp",
    },
    {
        .info = {.name = "lj",
                 .description = "Lennard-Jones, truncated and force-shifted at the cutoff (2.5)",
                 .force_components = 3,
                 .input_columns = 4,
                 .input_format = "x y z type",
                 .flops_per_interaction = 30.0,
                 .pair_parameters = 2,
                 .pair_format = "a b epsilon sigma"},
        .uses_aux = 1,
        .uses_table = 1,
        .physics_floats = FK__PHYSICS_FLOATS,
        .law = FK_LAW_LJ,
        .table_stride = 4,
        .reference = fk__reference_lj,
    },
    {
        .info = {.name = "buck",
                 .description = "Born-Mayer-Huggins (Buckingham) + Coulomb, for ionic crystals",
                 .force_components = 3,
                 .input_columns = 5,
                 .input_format = "x y z q type",
                 .flops_per_interaction = 40.0,
                 .pair_parameters = 3,
                 .pair_format = "a b A rho C"},
        .uses_aux = 1,
        .uses_table = 1,
        .physics_floats = FK__PHYSICS_FLOATS,
        .law = FK_LAW_BUCK,
        .table_stride = 8,
        .reference = fk__reference_buck,
        .inexact_builtin = "exp",
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
     .decode = decode_float,
     .flush_denormals = 1,
     .lanes = 1},
    {.info = {.name = "double",
              .letter = 'B',
              .description = "pair terms in single precision, sums in double",
              .needs_fp64 = 1},
     .decode = decode_double,
     .flush_denormals = 1,
     .lanes = 1},
    {.info = {.name = "ti",
              .letter = 'C',
              .description = "sums as a Takahashi-Iitaka float pair (two-sum, 10 flops per add)",
              .needs_fp64 = 0},
     .decode = fk__decode_pair},
    {.info = {.name = "nitadori",
              .letter = 'D',
              .description = "sums with Nitadori's trick (fast two-sum, 4 flops per add)",
              .needs_fp64 = 0},
     .decode = fk__decode_pair},
    {.info = {.name = "nitadori_large",
              .letter = 'E',
              .description = "Nitadori's trick from LARGE = 3*2^e, 2^e from a bound on the sums",
              .needs_fp64 = 0},
     .decode = fk__decode_large_pair,
     .choose_parameters = fk__choose_large},
    {.info = {.name = "narumi",
              .letter = 'F',
              .description = "Narumi's float + int32 fixed point (LOWER_SHIFT 8), zero offset",
              .needs_fp64 = 0},
     .decode = fk__decode_narumi,
     .choose_parameters = fk__choose_narumi,
     .flush_denormals = 1,
     .lanes = 1},
    {.info = {.name = "ref",
              .letter = 'G',
              .description = "pair terms and sums in double precision (the reference)",
              .needs_fp64 = 1},
     .decode = decode_double,
     .flush_denormals = 1},
    {.info = {.name = "composite",
              .letter = '-',
              .description = "Taufer et al.'s composite float2 (value + error) addition",
              .needs_fp64 = 0},
     .decode = fk__decode_pair},
    {.info = {.name = "fixed64",
              .letter = '-',
              .description = "64-bit integer fixed point at a scale 2^k from the data; "
                             "order-independent, overflow detected",
              .needs_fp64 = 0},
     .decode = fk__decode_fixed64,
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

static const char *const algorithm_names[] = {"all-pairs", "symmetric", "cells"};

const char *fk_algorithm_name(fk_algorithm algorithm)
{
    if ((int)algorithm < 0 ||
        (size_t)algorithm >= sizeof algorithm_names / sizeof algorithm_names[0])
        return NULL;
    return algorithm_names[algorithm];
}

fk_status fk_algorithm_find(const char *name, fk_algorithm *algorithm)
{
    if (!name || !algorithm)
        return FK_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < sizeof algorithm_names / sizeof algorithm_names[0]; ++i)
        if (strcmp(name, algorithm_names[i]) == 0) {
            *algorithm = (fk_algorithm)i;
            return FK_OK;
        }
    return FK_ERR_INVALID_ARGUMENT;
}

int fk__registry_has_lanes(const fk_kernel_desc *kernel, const fk_accum_desc *accum, int fp64)
{
    return kernel && accum && kernel->lanes && accum->lanes &&
           (accum->lanes != FK_LANES_NEED_FP64 || fp64);
}
