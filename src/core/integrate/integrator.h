/* The integrator's internals for tests (src/core/integrate/integrator.c). Not installed. */
#ifndef FK_INTEGRATOR_H
#define FK_INTEGRATOR_H

#include "forcekit/forcekit.h"

/* The Langevin noise of every particle at one step (3 count standard normal deviates, as
 * fk_integrate_step draws them for the configured seed), computed on the device. */
fk_status fk__integrator_noise(fk_integrator *integrator, uint64_t step, double *out);

/* The host's version of the same deviates (the same operations in C), for the tests' reference:
 * particle's three deviates at (seed, step). */
void fk__integrator_noise_host(uint64_t seed, uint64_t step, uint32_t particle, double out[3]);

/* Langevin's c1 = exp(-friction dt) and c2 = sqrt(1 - c1^2), by fixed double operations (the same
 * bits on every platform, unlike a libm's exp). */
void fk__integrator_langevin_constants(double friction, double dt, double *c1, double *c2);

/* Philox-4x32-10 on the host (the device's fk_philox4x32_10), for its known-answer test. */
void fk__philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

/* The forces of the current step (force_components values per particle, as the evaluation
 * decodes them: molecular forces, gravity accelerations and for gaj the jerks after them), read
 * (write 0) or replaced (write 1). `forcekit simulate` keeps them in its checkpoints: a restart
 * writes them back instead of evaluating again, so that it continues with the bits of the
 * uninterrupted run (Hermite's are those at the predicted positions; fixed64's depend on the
 * scale). */
fk_status fk__integrator_forces(fk_integrator *integrator, double *forces, int write);

#endif
