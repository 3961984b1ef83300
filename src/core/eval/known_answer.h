/* The known-answer check (issue #37, src/core/eval/known_answer.c): the first evaluation of each
 * program (force law, accumulator, loop, shape, switches) on a context computes a few particles
 * whose forces the host knows, so that a compiler that miscompiles an accumulator makes it refused
 * instead of returning wrong forces with FK_OK. Not installed. */
#ifndef FK_KNOWN_ANSWER_H
#define FK_KNOWN_ANSWER_H

#include "core/eval/eval.h"

/* After fk_eval_create built eval's programs: FK_OK when this program passed on this context
 * before or passes now; FK_ERR_UNSUPPORTED with a message naming the device, its driver and the
 * accumulator when it computes wrong forces; another status when the check could not run. */
fk_status fk__known_answer_check(fk_eval *eval, unsigned exclusion_slots);

/* Frees the context's record of checked programs (fk_context_destroy). */
void fk__known_answer_free(fk_context *context);

/* How many checks ran (computed) on this context: for the tests of the cache. */
size_t fk__known_answer_runs(const fk_context *context);

#endif
