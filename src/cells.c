/* The cell lists pair loop: not implemented yet. */
#include "eval.h"

fk_status fk__cells_create(fk_eval *eval, const fk_program_request *request)
{
    (void)request;
    return fk__fail(eval->context, FK_ERR_UNSUPPORTED, "the cells algorithm is not available yet");
}

fk_status fk__cells_set_particles(fk_eval *eval)
{
    (void)eval;
    return FK_ERR_UNSUPPORTED;
}

fk_status fk__cells_compute(fk_eval *eval, double *seconds)
{
    (void)eval;
    (void)seconds;
    return FK_ERR_UNSUPPORTED;
}

void fk__cells_destroy(fk_eval *eval)
{
    (void)eval;
}
