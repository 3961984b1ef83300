/* OpenCL interoperability (added in 0.2), as CLBlast offers it: forcekit on the caller's OpenCL
 * context, device and queue, with positions taken from and forces written into the caller's
 * buffers, so that a code whose integrator runs on the device never copies particles to the host.
 * Needs the OpenCL headers (and, to create the objects, the OpenCL library) in the caller's build;
 * forcekit.h alone does not. */
#ifndef FORCEKIT_CL_H
#define FORCEKIT_CL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

#include "forcekit/forcekit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A context on the caller's objects: the device must belong to the context and the queue to both.
 * forcekit retains the three (clRetain*) and releases its references in fk_context_destroy; the
 * caller keeps its own. Everything forcekit enqueues goes to this queue, so the caller's later
 * commands on it see the results without a host wait. The queue must execute in order
 * (FK_ERR_INVALID_ARGUMENT for CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE); without
 * CL_QUEUE_PROFILING_ENABLE the device times (fk_eval_compute's seconds) are -1. config may be
 * NULL; its device selector must be unset. Kernel directory, program cache and tuning database as
 * for fk_context_create. */
FK_API fk_status fk_context_create_cl(cl_context cl_context, cl_device_id device,
                                      cl_command_queue queue, const fk_context_config *config,
                                      fk_context **context);

/* The OpenCL objects a context runs on (its own or the caller's); any pointer may be NULL. The
 * handles stay owned by the context: retain them to keep them past fk_context_destroy. */
FK_API fk_status fk_context_cl_objects(const fk_context *context, cl_context *cl_context,
                                       cl_device_id *device, cl_command_queue *queue);

/* The layouts of the caller's position buffers. */
typedef enum fk_cl_positions {
    FK_CL_POSITIONS_DOUBLE3 = 0, /* 3 * count doubles: x, y, z (devices with fp64) */
    FK_CL_POSITIONS_FLOAT4 = 1   /* count float4: x, y, z and a fourth value that is ignored */
} fk_cl_positions;

/* fk_eval_update_positions from a buffer of the caller's on the same context, read from offset 0:
 * converted and checked on the device (no host pass, no transfer), then the loops brought up to
 * date as for any update. A coordinate that is NaN, infinite or beyond float's range is refused
 * (FK_ERR_INVALID_INPUT naming the particle) and the previous particles stay. Masses, charges and
 * types stay those of the last fk_eval_set_particles. The update waits for its check (one small
 * read); the caller's commands that wrote the buffer must be on the same queue or finished. Not
 * for gaj (its velocities) and gravity with eps = 0 (the coincidence check): FK_ERR_UNSUPPORTED.
 * With double-single positions (fk_eval_config.positions) DOUBLE3 keeps every bit of the doubles
 * (split into float pairs on the device); FLOAT4 holds floats, so the low parts are zero. */
FK_API fk_status fk_eval_update_positions_cl(fk_eval *eval, cl_mem positions, int layout);

/* Results into the caller's buffers: from the next compute on, the decoded forces
 * (force_components per particle, in config.result_type: double or float) go to `forces` and, with
 * config.potential, the potentials (one per particle) to `potentials`, from offset 0, on the
 * device; nothing is read back to the host but fixed64's overflow word, so fk_eval_wait still
 * reports FK_ERR_OVERFLOW. The host reads (fk_eval_read_*, fk_eval_results_view) then answer
 * FK_ERR_STATE. forces NULL returns to the host staging. The buffers must hold count values of
 * the result type per component; they are checked against the particle count at each compute.
 * Devices with fp64 (the decode runs in double): FK_ERR_UNSUPPORTED elsewhere. */
FK_API fk_status fk_eval_set_results_cl(fk_eval *eval, cl_mem forces, cl_mem potentials);

#ifdef __cplusplus
}
#endif

#endif
