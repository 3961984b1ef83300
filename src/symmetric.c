/* The symmetric (Newton's third law) pair loop: not implemented yet. */
#include "eval.h"

fk_status fk__symmetric_create(fk_eval *eval, const fk_program_request *request)
{
    (void)request;
    return fk__fail(eval->context, FK_ERR_UNSUPPORTED,
                    "the symmetric algorithm is not available yet");
}

fk_status fk__symmetric_set_particles(fk_eval *eval)
{
    (void)eval;
    return FK_ERR_UNSUPPORTED;
}

fk_status fk__symmetric_compute(fk_eval *eval, double *seconds)
{
    (void)eval;
    (void)seconds;
    return FK_ERR_UNSUPPORTED;
}

void fk__symmetric_destroy(fk_eval *eval)
{
    (void)eval;
}
