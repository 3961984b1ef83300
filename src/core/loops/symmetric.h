/* Internals of the symmetric pair loop and the kernel figures that bench/kernel_info.c prints. Not
 * installed. */
#ifndef FK_SYMMETRIC_H
#define FK_SYMMETRIC_H

#include <stddef.h>
#include <stdint.h>

#include "forcekit/forcekit.h"

/* clGetKernelWorkGroupInfo of one kernel of an evaluation. */
typedef struct fk__kernel_figures {
    char name[64];
    uint64_t private_bytes;    /* CL_KERNEL_PRIVATE_MEM_SIZE */
    uint64_t local_bytes;      /* CL_KERNEL_LOCAL_MEM_SIZE */
    size_t work_group_size;    /* CL_KERNEL_WORK_GROUP_SIZE: the most this kernel can run */
    size_t preferred_multiple; /* CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE */
} fk__kernel_figures;

/* The figures of every kernel the evaluation holds (all-pairs, split reduction, bound pre-pass,
 * symmetric pair and reduction), up to capacity; *count says how many there are. */
fk_status fk__eval_kernel_figures(const fk_eval *eval, fk__kernel_figures *figures, size_t capacity,
                                  size_t *count);

#endif
