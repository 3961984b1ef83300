/* Whether a device time from OpenCL event profiling can be believed (issue #37): Mesa 22.3's
 * Rusticl reports 1 ns for every command, which made `bench` print 4.2e15 pair interactions per
 * second. One place decides, for every caller of fk_eval_compute's seconds (bench, tune, accuracy,
 * simulate): an implausible time is reported as unavailable (-1, as on a queue without
 * profiling), with a warning in fk_context_warnings once per context. */
#include <stdio.h>

#include "core/eval/eval.h"
#include "core/internal.h"

/* No launch with its pairs takes less (POCL's launch alone is ~10 us, GPUs' 2-5 us). */
#define FK__SHORTEST_LAUNCH_SECONDS 1e-7
/* Pair interactions per second that no device reaches: ~100 times the fastest measured
 * (NVIDIA H200, ga float: ~4e11; results/). */
#define FK__MOST_PAIRS_PER_SECOND 1e14

double fk__plausible_device_seconds(fk_context *context, double seconds, double pairs,
                                    double wall_seconds)
{
    if (!(seconds >= 0))
        return -1.0; /* unavailable already */
    const char *why = NULL;
    char detail[160];
    if (seconds < FK__SHORTEST_LAUNCH_SECONDS) {
        snprintf(detail, sizeof detail, "%.3g s for a launch (no device launches that fast)",
                 seconds);
        why = detail;
    } else if (pairs > 0 && pairs / seconds > FK__MOST_PAIRS_PER_SECOND) {
        snprintf(detail, sizeof detail, "%.3g pair interactions per second (above %.0e)",
                 pairs / seconds, FK__MOST_PAIRS_PER_SECOND);
        why = detail;
    } else if (wall_seconds > 0 && seconds > 1.5 * wall_seconds + 1e-3) {
        snprintf(detail, sizeof detail,
                 "%.3g s on the device but %.3g s between enqueue and completion", seconds,
                 wall_seconds);
        why = detail;
    }
    if (!why)
        return seconds;
    if (!context->timing_warned) {
        context->timing_warned = 1;
        fk__warn(&context->warnings,
                 "%s (%s): device event times are not usable (%s); device seconds are reported "
                 "as unavailable (-1), measure by the wall clock",
                 context->info.name, context->info.driver_version, why);
    }
    return -1.0;
}
