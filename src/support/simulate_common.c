/* What the files of the simulation driver share and the driver's core (simulate.c) would
 * otherwise lend to the files it calls: the clock, a failure's message, the periodic wrap. Lowest
 * of src/support/simulate*.c, so that the driver calls the integrators and the loop choice and
 * they call down here, never back into the driver's own entry points. */
#include <math.h>
#include <time.h>

#include "common/text.h"
#include "support/simulate_private.h"

double fkt_sim__seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* A library failure: what was being done and the context's detail (the caller prints the
 * status's name). */
fk_status fkt_sim__failure(fkt_sim *sim, fk_status status, const char *what)
{
    const fkt_sim_backend *backend = sim->config.backend;
    const char *detail =
        backend ? backend->last_error(backend->user) : fk_context_last_error(sim->context);
    fk_format_message(sim->message, sizeof sim->message, "%s: %s", what,
                      detail && *detail ? detail : fk_status_string(status));
    return status;
}

/* Keeps a coordinate in [0, L): a multiple of L off, in double, so the dynamics is unchanged.
 * A coordinate already in [0, L) is returned as it is, which is what the general path gives it
 * too (floor(x / L) is 0 there: x / L rounds below 1 for every x < L, since 1 - x / L >= ulp(L) /
 * L > 2^-53), without the division and floor that made this pass 28 ms per step at N = 1M. */
static double wrap(double x, double side)
{
    if (x >= 0 && x < side)
        return x;
    x -= side * floor(x / side);
    if (x >= side)
        x -= side;
    if (x < 0)
        x += side;
    return x;
}

void fkt_sim__wrap_positions(const fkt_sim *sim, double *position)
{
    if (!sim->periodic)
        return;
    const size_t values = 3 * sim->n;
    const double *box = sim->config.eval.box;
    FK_SIM_PARALLEL(sim, values);
    FK_SIM_PARALLEL_FOR
    for (size_t m = 0; m < values; ++m)
        position[m] = wrap(position[m], box[m % 3]);
}
