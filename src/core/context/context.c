/* The context, put together: the device and its queue (src/core/devices/context.c), the kernel
 * directory (src/core/programs/kernel_dir.c), the program cache, the tuning databases and the
 * known-answer memo. This is the top of the core library: it calls down into every layer that
 * keeps per-context state, so that none of them calls up to set itself up or tear itself down. */
#include <stdlib.h>

#include "core/eval/known_answer.h"
#include "core/internal.h"
#include "core/programs/cache.h"
#include "core/tuning_db/db.h"
#include "forcekit/forcekit_cl.h" /* fk_context_create_cl, exported from there */

/* What both constructors do first: the (empty) context handed to the caller at once, so that a
 * failure below still has its message there, and the caller's configuration in this library's
 * layout. */
static fk_status begin_context(const fk_context_config *config, fk_context **out,
                               fk_context_config *copy)
{
    if (!out)
        return FK_ERR_INVALID_ARGUMENT;
    *out = NULL;
    const fk_context_config defaults = {0};
    fk_context *context = calloc(1, sizeof *context);
    if (!context)
        return FK_ERR_HOST_MEMORY;
    *out = context;
    return fk__config_copy(context, "fk_context_config", copy, sizeof *copy,
                           config ? config : &defaults, FK__SIZE_0_2(fk_context_config, cache_dir));
}

/* What both constructors do once the OpenCL objects are in place. */
static fk_status finish_context(fk_context *context, const fk_context_config *config)
{
    fk_status status = fk__kernel_dir_resolve(context, config->kernel_dir);
    if (status != FK_OK)
        return status;

    fk__kernel_version_read(context);

    /* A cache directory that cannot be created only costs speed: run without it. */
    if (fk_cache_dir_resolve(config->cache_dir, &context->cache_dir) != 0)
        context->cache_dir = NULL;
    /* The tuning databases are small; reading them once here lets every fk_eval_create use them,
     * and a corrupt one is reported (fk_context_warnings) before anything runs. */
    fk__tuning_context_load(context);
    fk__clear_error(context);
    context->ready = 1;
    return FK_OK;
}

fk_status fk_context_create(const fk_context_config *config, fk_context **out)
{
    fk_context_config copy;
    fk_status begun = begin_context(config, out, &copy);
    if (begun != FK_OK)
        return begun;
    fk_status status = fk__context_open_device(*out, &copy);
    return status != FK_OK ? status : finish_context(*out, &copy);
}

fk_status fk_context_create_cl(cl_context cl, cl_device_id device, cl_command_queue queue,
                               const fk_context_config *config, fk_context **out)
{
    fk_context_config copy;
    fk_status begun = begin_context(config, out, &copy);
    if (begun != FK_OK)
        return begun;
    fk_status status = fk__context_adopt_cl(*out, cl, device, queue, &copy);
    return status != FK_OK ? status : finish_context(*out, &copy);
}

void fk_context_destroy(fk_context *context)
{
    if (!context)
        return;
    fk__program_memo_free(context); /* before the OpenCL context its programs belong to */
    fk__known_answer_free(context);
    fk__context_release_device(context);
    free(context->kernel_dir);
    free(context->cache_dir);
    free(context->last_error);
    fk__tuning_db_free(context->tuning);
    free(context->warnings);
    free(context);
}
