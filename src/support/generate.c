/* Synthetic inputs: a Plummer sphere for the gravity kernels and a jittered lattice for the
 * molecular ones. The generator is our own so a seed gives the same system on every platform. */
#include "support/generate.h"

#include <math.h>
#include <string.h>

static const double pi = 3.14159265358979323846;

/* xoshiro256** (Blackman & Vigna), seeded through splitmix64 so that nearby seeds give unrelated
 * streams and the state is never all zero. */
typedef struct rng {
    uint64_t state[4];
} rng;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void rng_init(rng *generator, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        generator->state[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng *generator)
{
    uint64_t *s = generator->state;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1). */
static double rng_uniform(rng *generator)
{
    return (double)(rng_next(generator) >> 11) * (1.0 / 9007199254740992.0);
}

/* A point uniform on the sphere of the given radius (AHW's z = (1 - 2X) r construction). */
static void random_direction(rng *generator, double radius, double out[3])
{
    double z = (1.0 - 2.0 * rng_uniform(generator)) * radius;
    double phi = 2.0 * pi * rng_uniform(generator);
    double planar = sqrt(fmax(radius * radius - z * z, 0.0));
    out[0] = planar * cos(phi);
    out[1] = planar * sin(phi);
    out[2] = z;
}

fk_status fkt_generate_plummer(size_t count, uint64_t seed, fkt_layout layout,
                               fkt_particle_set *set)
{
    if (!set)
        return FK_ERR_INVALID_ARGUMENT;
    memset(set, 0, sizeof *set);
    if (count == 0)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = fkt_particle_set_alloc(set, layout, count);
    if (status != FK_OK)
        return status;

    /* AHW draw in units where the scale length is 1; N-body units (E = -1/4) have scale length
     * 3 pi / 16, so lengths shrink by that factor and velocities grow by its inverse square root.
     */
    const double length_scale = 3.0 * pi / 16.0;
    const double velocity_scale = 1.0 / sqrt(length_scale);
    const double mass = 1.0 / (double)count;
    rng generator;
    rng_init(&generator, seed);
    double center[3] = {0, 0, 0}, momentum[3] = {0, 0, 0};

    for (size_t i = 0; i < count; i++) {
        /* Radius from the inverted cumulative mass; r > 10 is rejected (1.5% of draws) so a few
         * far outliers do not dominate the box. X in (0, 1] keeps the power finite. */
        double radius;
        for (;;) {
            double x = ((double)(rng_next(&generator) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
            double denominator = pow(x, -2.0 / 3.0) - 1.0;
            if (denominator > 0.01) { /* r = 1 / sqrt(denominator) < 10 */
                radius = 1.0 / sqrt(denominator);
                break;
            }
        }
        double position[3];
        random_direction(&generator, radius, position);

        /* Speed: q = v / v_escape drawn from g(q) = q^2 (1 - q^2)^(7/2) by von Neumann rejection
         * (g < 0.1 everywhere). Drawn for every layout so positions do not depend on it. */
        double q;
        for (;;) {
            q = rng_uniform(&generator);
            double height = 0.1 * rng_uniform(&generator);
            if (height < q * q * pow(1.0 - q * q, 3.5))
                break;
        }
        double escape = sqrt(2.0) * pow(1.0 + radius * radius, -0.25);
        double velocity[3];
        random_direction(&generator, q * escape, velocity);

        for (int d = 0; d < 3; d++) {
            position[d] *= length_scale;
            velocity[d] *= velocity_scale;
            set->position[3 * i + d] = position[d];
            center[d] += position[d];
            momentum[d] += velocity[d];
            if (set->velocity)
                set->velocity[3 * i + d] = velocity[d];
        }
        if (set->mass)
            set->mass[i] = mass;
        if (set->type)
            set->type[i] = 0;
    }

    /* Equal masses: the centre of mass is the mean position, the mean velocity its motion. */
    for (int d = 0; d < 3; d++) {
        center[d] /= (double)count;
        momentum[d] /= (double)count;
    }
    for (size_t i = 0; i < count; i++)
        for (int d = 0; d < 3; d++) {
            set->position[3 * i + d] -= center[d];
            if (set->velocity)
                set->velocity[3 * i + d] -= momentum[d];
        }
    return FK_OK;
}

fk_status fkt_generate_lattice(size_t count, double density, double jitter, uint64_t seed,
                               fkt_layout layout, fkt_particle_set *set)
{
    if (!set)
        return FK_ERR_INVALID_ARGUMENT;
    memset(set, 0, sizeof *set);
    if (count == 0 || !isfinite(density) || density <= 0.0 || !isfinite(jitter) || jitter < 0.0)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = fkt_particle_set_alloc(set, layout, count);
    if (status != FK_OK)
        return status;

    /* side = ceil(cbrt(count)), corrected in integers since cbrt may round either way. Allocation
     * succeeded, so count < 2^60 and side^3 cannot overflow. */
    uint64_t side = (uint64_t)ceil(cbrt((double)count));
    if (side == 0)
        side = 1;
    while (side * side * side < (uint64_t)count)
        side++;
    while (side > 1 && (side - 1) * (side - 1) * (side - 1) >= (uint64_t)count)
        side--;
    const double spacing = cbrt(1.0 / density);

    rng generator;
    rng_init(&generator, seed);
    for (size_t i = 0; i < count; i++) {
        uint64_t site[3] = {(uint64_t)i % side, ((uint64_t)i / side) % side,
                            (uint64_t)i / (side * side)};
        for (int d = 0; d < 3; d++) {
            /* Sites at cell centres, so the cube [0, side * spacing)^3 can be a periodic box. */
            double offset = jitter * (2.0 * rng_uniform(&generator) - 1.0);
            set->position[3 * i + d] = ((double)site[d] + 0.5 + offset) * spacing;
        }
        if (set->mass) {
            if (layout == FKT_LAYOUT_XYZQ_TYPE) {
                /* Rock-salt pattern: neighbours in every axis have opposite charges; filling
                 * rows in order also makes the first n sites sum to zero for even n. */
                uint64_t parity = (site[0] + site[1] + site[2]) & 1u;
                set->mass[i] = parity ? -0.5 : 0.5;
            } else {
                set->mass[i] = 1.0;
            }
        }
        if (set->type)
            set->type[i] = 0;
    }
    return FK_OK;
}
