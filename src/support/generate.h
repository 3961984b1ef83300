/* Synthetic inputs: the built-in systems of bench and the demo. */
#ifndef FK_GENERATE_H
#define FK_GENERATE_H

#include <stddef.h>
#include <stdint.h>
#include "forcekit/tools.h"

/* A Plummer sphere in N-body units (G = M = 1, E = -1/4; scale radius 3*pi/16), equal masses 1/N,
 * centred on the origin, positions drawn by Aarseth, Henon & Wielen (1974), radii cut at 10 scale
 * lengths (rejecting, not clamping). Velocities filled when the layout has them. Deterministic in
 * seed. */
fk_status fkt_generate_plummer(size_t count, uint64_t seed, fkt_layout layout,
                               fkt_particle_set *set);

/* A simple cubic lattice filling a cube at the given number density, each site jittered uniformly
 * by up to jitter * spacing in every axis, one type (0), charges alternating +0.5 / -0.5 where the
 * layout has charges. Deterministic in seed. */
fk_status fkt_generate_lattice(size_t count, double density, double jitter, uint64_t seed,
                               fkt_layout layout, fkt_particle_set *set);

#endif
