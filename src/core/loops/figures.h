/* The kernel figures of a loop (clGetKernelWorkGroupInfo), which bench/kernel_info.c prints
 * through fk__eval_kernel_figures (src/core/eval/eval.h). Not installed. */
#ifndef FK_LOOP_FIGURES_H
#define FK_LOOP_FIGURES_H

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

#endif
