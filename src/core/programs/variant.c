/* The constraints every variant of the pair loops meets, in one place (issue #13): the API
 * (fk_eval_config), the command's options and the tuning database's entries all ask here, so a
 * shape that one of them accepts is never rejected, or worse run out of bounds, by another. */
#include <stdarg.h>
#include <stdio.h>

#include "core/internal.h"

static int fail(char *reason, size_t reason_size, const char *format, ...) FK_PRINTF(3, 4);

static int fail(char *reason, size_t reason_size, const char *format, ...)
{
    if (reason && reason_size) {
        va_list args;
        va_start(args, format);
        vsnprintf(reason, reason_size, format, args);
        va_end(args);
    }
    return 0;
}

static int valid_factor(int value)
{
    return value == 1 || value == 2 || value == 4 || value == 8;
}

int fk__variant_check(int unroll_i, int unroll_j, int work_group_size, int local_tiling,
                      char *reason, size_t reason_size)
{
    if (reason && reason_size)
        reason[0] = '\0';
    if ((unroll_i || unroll_j) && (!valid_factor(unroll_i) || !valid_factor(unroll_j)))
        return fail(reason, reason_size, "unroll %dx%d: each factor must be 1, 2, 4 or 8", unroll_i,
                    unroll_j);
    /* The upper bound is the device's (fk_eval_create: FK_ERR_UNSUPPORTED beyond it). */
    if (work_group_size < 0)
        return fail(reason, reason_size, "work-group size %d: expected 1 or more (0: automatic)",
                    work_group_size);
    /* Undocumented values (7 read as "on") would make a typo mean something. */
    if (local_tiling < -1 || local_tiling > 1)
        return fail(reason, reason_size,
                    "local tiling %d: expected 1 (on), -1 (off) or 0 (automatic)", local_tiling);
    /* The tiled loop takes a tile of WG_SIZE j-particles UNROLL_J at a time: a tile that is not
     * a whole number of steps is not a variant worth having (cl/pairwise.cl finishes such a tile
     * one by one anyway, so nothing reads past it). */
    if (local_tiling > 0 && work_group_size > 0 && unroll_j > 0 && work_group_size % unroll_j != 0)
        return fail(reason, reason_size,
                    "work-group size %d is not a multiple of the j-unrolling %d (unroll %dx%d): "
                    "with local tiling a tile of %d j-particles is taken %d at a time",
                    work_group_size, unroll_j, unroll_i, unroll_j, work_group_size, unroll_j);
    return 1;
}
