/*
 * forcekit: time integration on the device (issue #33); src/core/integrate/integrator.c drives these kernels
 * around the evaluation's own pair loop. The master copy of the state is double (x, v: 3 values per
 * particle); each step writes the evaluation's particle records (float4, or double-single hi/lo
 * pairs) from it, as cl/positions.cl does for an update, so the pair loops read the positions
 * they always read.
 *
 * One step, as the host enqueues it (velocity Verlet; Langevin BAOAB differs only in the drift):
 *   fk_integrate_step     first the verdict on the previous step's forces (fk_stopped: the lists
 *                         went stale in its drift, fixed64 overflowed or a force was not finite
 *                         stop the group there, and every later kernel of the group does
 *                         nothing), then the previous step's closing half kick (close_previous),
 *                         this step's opening half kick, the drift (Verlet: x += dt v; BAOAB: a
 *                         half drift, the Ornstein-Uhlenbeck update, a half drift), the periodic
 *                         wrap, the particle records, and the lists' displacement check
 *   (the evaluation's pair loop, the exclusion subtraction and cl/decode.cl into `force`)
 * and after the last step of a group, once the host has read the flags (the verdict on that last
 * step), fk_integrate_kick closes it. Hermite (gaj) instead runs fk_integrate_predict (the
 * verdict, then the records of the predicted positions and velocities), the forces into the
 * second force buffer and fk_integrate_correct. So the host enqueues a group of steps without
 * waiting and learns from one read (flags) where it stopped.
 *
 * Every operation here is an IEEE double operation that OpenCL requires to be correctly rounded
 * (+, -, *, /, sqrt, conversions) or exact (frexp, ldexp, rint, floor, integer arithmetic), with
 * contraction off: the same inputs give the same bits on every device with fp64, and a step's
 * result does not depend on the work-group size or on how the steps were grouped (the two half
 * kicks of fk_integrate_step round as two separate kicks would). The normal deviates use no
 * builtin transcendental (whose accuracy OpenCL leaves to the device): fk_log and
 * fk_cos_sin_2pi are fixed polynomials.
 */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

/* The evaluation's particle records: 1 for double-single (hi at 2i, lo at 2i + 1). */
#ifndef FK_DS_POSITIONS
#define FK_DS_POSITIONS 0
#endif
/* The decoded forces: double (1) or float (0, fk_eval_config.result_type FK_RESULT_FLOAT). */
#ifndef FK_FORCE_DOUBLE
#define FK_FORCE_DOUBLE 1
#endif
/* Values per particle in the force output: 3, or gaj's 6 (acceleration then jerk). */
#ifndef FK_FORCE_COMPONENTS
#define FK_FORCE_COMPONENTS 3
#endif
/* 1: wrap the positions into the periodic box [0, L). */
#ifndef FK_PERIODIC
#define FK_PERIODIC 0
#endif
/* 1: Langevin BAOAB; 0: velocity Verlet. */
#ifndef FK_LANGEVIN
#define FK_LANGEVIN 0
#endif
/* 1: 4th-order Hermite (gaj: forces are accelerations then jerks, and the device's velocity
 * records feed the jerk); FK_LANGEVIN must be 0. */
#ifndef FK_HERMITE
#define FK_HERMITE 0
#endif
/* 1: the loop keeps cell or neighbour lists: check the displacements since their build. */
#ifndef FK_CHECK_LISTS
#define FK_CHECK_LISTS 0
#endif
/* 1: gravity (the potential energy is half of sum m_i phi_i); 0: molecular (sum of phi_i). */
#ifndef FK_GRAVITY
#define FK_GRAVITY 0
#endif
/* Work-items of the single work-group that sums the energies (a power of two). */
#ifndef FK_ENERGY_WG
#define FK_ENERGY_WG 64
#endif

/* flags[]: written by the kernels, read by the host after a group of steps (src/core/integrate/integrator.c has
 * the same indices). */
#define FK_FLAG_HALT 0 /* the step of the group whose forces could not be used; -1: none yet */
/* 1: a particle moved more than skin / 2 since the lists' build, at FK_FLAG_MOVED + (step & 1):
 * step k's kernel reads the word of step k - 1 while it writes its own */
#define FK_FLAG_MOVED 1
#define FK_FLAG_OVERFLOW 3  /* cl/decode.cl's first overflowed particle; n: none */
#define FK_FLAG_NONFINITE 4 /* the first particle with a force that is not finite; n: none */
/* A part of a divided system (fk_integrator_part): 1 when an own particle moved farther than leave
 * along z since set_state (LEAVE), or farther than 2 leave (FAR: the halo may miss neighbours). */
#define FK_FLAG_LEAVE 5
#define FK_FLAG_FAR 6

/* Whether the group has stopped before its step `index`: the forces of step index - 1 cannot be
 * used (the lists went stale in its drift, fixed64 overflowed, a force was not finite), or an
 * earlier step stopped it. Every word read here was written by earlier kernels, except HALT,
 * which work-item 0 of this kernel may write with the same verdict, and NONFINITE, which only a
 * failing run (whose state is lost) writes in this kernel: every work-item decides alike. The
 * first step of a group has none before it (the host checked the last step of the previous
 * group). */
static int fk_stopped(global int *flags, const int index, const int n)
{
    if (flags[FK_FLAG_HALT] >= 0)
        return 1;
    if (index == 0)
        return 0;
    return flags[FK_FLAG_MOVED + ((index - 1) & 1)] != 0 || flags[FK_FLAG_OVERFLOW] < n ||
           flags[FK_FLAG_NONFINITE] < n;
}

/* fk_stopped, recording the stopped step for the host (work-item 0). */
static int fk_stop_here(global int *flags, const int index, const uint n)
{
    const int stopped = fk_stopped(flags, index, (int)n);
    if (stopped && get_global_id(0) == 0 && flags[FK_FLAG_HALT] < 0)
        flags[FK_FLAG_HALT] = index - 1;
    return stopped;
}

#if FK_FORCE_DOUBLE
typedef double fk_force_t;
#else
typedef float fk_force_t;
#endif

/* A particle's three doubles travel as a double4 whose w is 0, read and written one by one.
 * Intel's OpenCL CPU runtime (2026.22.10) miscompiles double4 values when it vectorizes a kernel
 * across work-items: they come out at a stride of four doubles (particle 1's x landed in slot 4,
 * whether stored by vstore3 or component by component), so the state was garbage there while POCL
 * and NVIDIA were right. double4 is a whole vector register and is handled right; the unused w
 * costs nothing in the arithmetic that matters. */
static double4 fk_load3(const global double *p, const uint i)
{
    const size_t k = 3 * (size_t)i;
    return (double4)(p[k], p[k + 1], p[k + 2], 0.0);
}

static void fk_store3(const double4 value, const uint i, global double *p)
{
    const size_t k = 3 * (size_t)i;
    p[k] = value.x;
    p[k + 1] = value.y;
    p[k + 2] = value.z;
}

/* ---------------------------------------------------------------------------------------------- */
/* Counter-based random numbers: Philox-4x32-10 (Salmon et al., SC'11), keyed by the seed, counted
 * by (step, particle, draw). */

static uint4 fk_philox4x32_10(uint4 c, uint2 k)
{
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k.x += 0x9E3779B9u;
            k.y += 0xBB67AE85u;
        }
        const uint lo0 = 0xD2511F53u * c.x, hi0 = mul_hi(0xD2511F53u, c.x);
        const uint lo1 = 0xCD9E8D57u * c.z, hi1 = mul_hi(0xCD9E8D57u, c.z);
        c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}

/* 53 random bits from two words, as an integer. */
static ulong fk_bits53(const uint high, const uint low)
{
    return ((ulong)high << 21) | (ulong)(low >> 11);
}

/* log(x) for x in (0, 1]: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s),
 * s = (m - 1) / (m + 1), |s| < 0.1716, by its series to s^23 (error below 1e-17 of the result);
 * e ln 2 with ln 2 split so that e ln2_hi is exact (fdlibm's constants). */
static double fk_log(const double x)
{
    int e;
    double m = frexp(x, &e);
    if (m < 0.70710678118654752440) {
        m = 2.0 * m;
        e = e - 1;
    }
    const double s = (m - 1.0) / (m + 1.0);
    const double z = s * s;
    double p = 1.0 / 23.0;
    p = 1.0 / 21.0 + z * p;
    p = 1.0 / 19.0 + z * p;
    p = 1.0 / 17.0 + z * p;
    p = 1.0 / 15.0 + z * p;
    p = 1.0 / 13.0 + z * p;
    p = 1.0 / 11.0 + z * p;
    p = 1.0 / 9.0 + z * p;
    p = 1.0 / 7.0 + z * p;
    p = 1.0 / 5.0 + z * p;
    p = 1.0 / 3.0 + z * p;
    const double t = 2.0 * s;
    const double r = t + t * (z * p);
    const double de = (double)e;
    return de * 6.93147180369123816490e-01 + (de * 1.90821492927058770002e-10 + r);
}

/* (cos 2 pi u, sin 2 pi u) for u in [0, 1): the quadrant q = floor(4u) and x = (4u - q) pi / 2 in
 * [0, pi / 2) (both exact but the product), Taylor polynomials to x^23 and x^22 (error below 1e-17),
 * then the quadrant's rotation (exact). */
static double2 fk_cos_sin_2pi(const double u)
{
    const double t = 4.0 * u;
    const double q = floor(t);
    const double x = (t - q) * 1.57079632679489661923;
    const double x2 = x * x;
    double s = -1.0 / 25852016738884976640000.0;
    s = 1.0 / 51090942171709440000.0 + x2 * s;
    s = -1.0 / 121645100408832000.0 + x2 * s;
    s = 1.0 / 355687428096000.0 + x2 * s;
    s = -1.0 / 1307674368000.0 + x2 * s;
    s = 1.0 / 6227020800.0 + x2 * s;
    s = -1.0 / 39916800.0 + x2 * s;
    s = 1.0 / 362880.0 + x2 * s;
    s = -1.0 / 5040.0 + x2 * s;
    s = 1.0 / 120.0 + x2 * s;
    s = -1.0 / 6.0 + x2 * s;
    const double sine = x + x * (x2 * s);
    double c = -1.0 / 1124000727777607680000.0;
    c = 1.0 / 2432902008176640000.0 + x2 * c;
    c = -1.0 / 6402373705728000.0 + x2 * c;
    c = 1.0 / 20922789888000.0 + x2 * c;
    c = -1.0 / 87178291200.0 + x2 * c;
    c = 1.0 / 479001600.0 + x2 * c;
    c = -1.0 / 3628800.0 + x2 * c;
    c = 1.0 / 40320.0 + x2 * c;
    c = -1.0 / 720.0 + x2 * c;
    c = 1.0 / 24.0 + x2 * c;
    c = -1.0 / 2.0 + x2 * c;
    const double cosine = 1.0 + x2 * c;
    const int quadrant = (int)q;
    if (quadrant == 0)
        return (double2)(cosine, sine);
    if (quadrant == 1)
        return (double2)(-sine, cosine);
    if (quadrant == 2)
        return (double2)(-cosine, -sine);
    return (double2)(sine, -cosine);
}

/* Two standard normal deviates (Box-Muller) from the four words of one Philox block. */
static double2 fk_box_muller(const uint4 r)
{
    const double u1 = (double)(fk_bits53(r.x, r.y) + 1) * 0x1.0p-53; /* (0, 1] */
    const double u2 = (double)fk_bits53(r.z, r.w) * 0x1.0p-53;       /* [0, 1) */
    const double radius = sqrt(-2.0 * fk_log(u1));
    const double2 cs = fk_cos_sin_2pi(u2);
    return (double2)(radius * cs.x, radius * cs.y);
}

/* Particle i's three deviates at step (step_lo, step_hi) under seed (seed_lo, seed_hi): draws 0
 * and 1 of the counter (step, i, draw), the fourth deviate unused. */
static double4 fk_normal3(const uint seed_lo, const uint seed_hi, const uint step_lo,
                          const uint step_hi, const uint i)
{
    const uint2 key = (uint2)(seed_lo, seed_hi);
    const double2 a = fk_box_muller(fk_philox4x32_10((uint4)(step_lo, step_hi, i, 0u), key));
    const double2 b = fk_box_muller(fk_philox4x32_10((uint4)(step_lo, step_hi, i, 1u), key));
    return (double4)(a.x, a.y, b.x, 0.0);
}

/* Tests (src/core/integrate/integrator.c's fk__integrator_noise): the deviates of every particle at one step. */
kernel void fk_integrate_noise(const uint n, const uint seed_lo, const uint seed_hi,
                               const uint step_lo, const uint step_hi, global double *out)
{
    const uint i = get_global_id(0);
    if (i < n)
        fk_store3(fk_normal3(seed_lo, seed_hi, step_lo, step_hi, i), i, out);
}

/* ---------------------------------------------------------------------------------------------- */
/* The state */

/* A coordinate into [0, L): src/support/simulate.c's wrap, the same operations. */
static double fk_wrap(double x, const double side)
{
    if (x >= 0.0 && x < side)
        return x;
    x = x - side * floor(x / side);
    if (x >= side)
        x = x - side;
    if (x < 0.0)
        x = x + side;
    return x;
}

static double4 fk_wrap3(double4 x, const double4 box)
{
#if FK_PERIODIC
    x.x = fk_wrap(x.x, box.x);
    x.y = fk_wrap(x.y, box.y);
    x.z = fk_wrap(x.z, box.z);
#else
    (void)box;
#endif
    return x;
}

/* Particle i's record(s) from x: rounded to nearest as the host's (float) in fk_eval_set_particles,
 * and with double-single the low parts (x - hi, exact in double, rounded); the fourth value (mass or
 * charge) stays. Returns the float position the pair loops see. */
static float4 fk_store_body(global float4 *body, const uint i, const double4 x)
{
    const float4 h4 = convert_float4(x); /* x.w is 0 */
    const float3 h = h4.xyz;
#if FK_DS_POSITIONS
    const size_t hi = 2 * (size_t)i, lo = hi + 1;
    const float3 l = convert_float4(x - convert_double4(h4)).xyz;
    const float4 record = (float4)(h, body[hi].w);
    body[hi] = record;
    body[lo] = (float4)(l, body[lo].w);
    return record;
#else
    const float4 record = (float4)(h, body[i].w);
    body[i] = record;
    return record;
#endif
}

/* gaj's velocity records (fk__velocity_records: rounded to nearest, the fourth value 0, with
 * double-single the low parts in the second record). */
static void fk_store_velocity(global float4 *aux, const uint i, const double4 v)
{
    const float4 h4 = convert_float4(v); /* v.w is 0 */
    const float3 h = h4.xyz;
#if FK_DS_POSITIONS
    aux[2 * (size_t)i] = (float4)(h, 0.0f);
    aux[2 * (size_t)i + 1] = (float4)(convert_float4(v - convert_double4(h4)).xyz, 0.0f);
#else
    aux[i] = (float4)(h, 0.0f);
#endif
}

/* The lists' check (cl/cells_build.cl's fk_cells_check, the same float operations in the same
 * order) against the positions of their build; threshold2 is (skin / 2)^2, or a little less. */
static void fk_check_moved(const float4 p, global const float4 *reference, const uint i,
                           const float threshold2, const float4 box_f, global int *flags,
                           const int index)
{
#if FK_CHECK_LISTS
    float4 d = p - reference[i];
#if FK_PERIODIC
    d.x -= box_f.x * rint(d.x / box_f.x);
    d.y -= box_f.y * rint(d.y / box_f.y);
    d.z -= box_f.z * rint(d.z / box_f.z);
#endif
    if (d.x * d.x + d.y * d.y + d.z * d.z > threshold2)
        flags[FK_FLAG_MOVED + (index & 1)] = 1; /* every writer writes 1 */
#else
    (void)p, (void)reference, (void)i, (void)threshold2, (void)box_f, (void)flags, (void)index;
#endif
}

/* A part's own particle (1 / m > 0: halo copies have 0) that moved along z since set_state (the
 * shortest periodic distance) farther than leave, or than 2 leave: the host's votes. Double
 * arithmetic; only the decision depends on it, not the state. leave 0: no part. */
static void fk_check_leave(const double4 xi, global const double *x_set,
                           global const double *inverse_mass, const uint i, const double4 box,
                           const double leave, global int *flags)
{
    if (!(leave > 0.0) || inverse_mass[i] == 0.0)
        return;
    double d = xi.z - x_set[3 * (size_t)i + 2];
#if FK_PERIODIC
    d -= box.z * rint(d / box.z);
#else
    (void)box;
#endif
    if (!(fabs(d) <= 2.0 * leave))
        flags[FK_FLAG_FAR] = 1; /* every writer writes 1 */
    else if (fabs(d) > leave)
        flags[FK_FLAG_LEAVE] = 1;
}

/* Particle i's acceleration: the force (or gravity's acceleration) times 1 / m (1 for gravity).
 * Not finite: recorded, and the caller stops. */
static int fk_acceleration(global const fk_force_t *force, global const double *inverse_mass,
                           const uint i, global int *flags, double4 *a)
{
    const size_t at = (size_t)i * FK_FORCE_COMPONENTS;
    const double4 f = (double4)((double)force[at], (double)force[at + 1], (double)force[at + 2], 0.0);
    if (!(fabs(f.x) <= DBL_MAX && fabs(f.y) <= DBL_MAX && fabs(f.z) <= DBL_MAX)) {
        atomic_min(&flags[FK_FLAG_NONFINITE], (int)i);
        return 0;
    }
    const double w = inverse_mass[i];
    *a = (double4)(f.x * w, f.y * w, f.z * w, 0.0);
    return 1;
}

/* The state from the host (fk_integrator_set_state): positions wrapped, records written. */
kernel void fk_integrate_set(const uint n, global double *x, const double4 box,
                             global float4 *body)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const double4 xi = fk_wrap3(fk_load3(x, i), box);
    fk_store3(xi, i, x);
    fk_store_body(body, i, xi);
}

/* gaj's velocity records from the state (set_state, and the energies' evaluation). */
kernel void fk_integrate_set_velocities(const uint n, global const double *v, global float4 *aux)
{
    const uint i = get_global_id(0);
    if (i < n)
        fk_store_velocity(aux, i, fk_load3(v, i));
}

/* Particle i's acceleration and jerk (gaj's six outputs); not finite: recorded, 0 returned. */
static int fk_acceleration_jerk(global const fk_force_t *force, const uint i, global int *flags,
                                double4 *a, double4 *j)
{
    const size_t at = (size_t)i * FK_FORCE_COMPONENTS;
    double f[6];
    for (int k = 0; k < 6; ++k) {
        f[k] = (double)force[at + (size_t)k];
        if (!(fabs(f[k]) <= DBL_MAX)) {
            atomic_min(&flags[FK_FLAG_NONFINITE], (int)i);
            return 0;
        }
    }
    *a = (double4)(f[0], f[1], f[2], 0.0);
    *j = (double4)(f[3], f[4], f[5], 0.0);
    return 1;
}

/* Hermite's predictor (src/support/simulate.c's hermite_step, the same operations): the predicted
 * positions and velocities go to the particle and velocity records only. */
kernel void fk_integrate_predict(const uint n, global const double *x, global const double *v,
                                 global const fk_force_t *force, const double dt,
                                 global float4 *body, global float4 *aux, global int *flags,
                                 const int index)
{
    const uint i = get_global_id(0);
    if (fk_stop_here(flags, index, n) || i >= n)
        return;
    double4 a, j;
    if (!fk_acceleration_jerk(force, i, flags, &a, &j))
        return;
    const double4 xi = fk_load3(x, i), vi = fk_load3(v, i);
    const double4 xp = xi + dt * (vi + dt * (0.5 * a + dt * (j / 6.0)));
    const double4 vp = vi + dt * (a + dt * (0.5 * j));
    fk_store_body(body, i, xp);
    fk_store_velocity(aux, i, vp);
}

/* Hermite's corrector in the time-symmetric form, from the step's first forces (force) and those
 * at the prediction (next); half_dt = dt / 2 and twelfth = dt^2 / 12 from the host. */
kernel void fk_integrate_correct(const uint n, global double *x, global double *v,
                                 global const fk_force_t *force, global const fk_force_t *next,
                                 const double half_dt, const double twelfth, global int *flags)
{
    const uint i = get_global_id(0);
    /* this step's forces (next) must be usable: the words written before this kernel */
    if (i >= n || flags[FK_FLAG_HALT] >= 0 || flags[FK_FLAG_OVERFLOW] < (int)n ||
        flags[FK_FLAG_NONFINITE] < (int)n)
        return;
    double4 a, j, a1, j1;
    if (!fk_acceleration_jerk(force, i, flags, &a, &j) ||
        !fk_acceleration_jerk(next, i, flags, &a1, &j1))
        return;
    const double4 xi = fk_load3(x, i), vi = fk_load3(v, i);
    const double4 v1 = vi + half_dt * (a + a1) + twelfth * (j - j1);
    const double4 x1 = xi + half_dt * (vi + v1) + twelfth * (a - a1);
    fk_store3(v1, i, v);
    fk_store3(x1, i, x);
}

/* One step up to the forces (see the top of the file). h = dt / 2. Langevin: c1 = exp(-gamma dt),
 * noise[i] = sqrt(1 - c1^2) sqrt(kT / m_i), both from the host. */
kernel void fk_integrate_step(const uint n, global double *x, global double *v,
                              global const fk_force_t *force, global const double *inverse_mass,
                              const double h, const double dt, const int close_previous,
                              const double4 box, global float4 *body,
                              global const float4 *reference, const float threshold2,
                              const float4 box_f, global int *flags, global const double *noise,
                              const double c1, const uint seed_lo, const uint seed_hi,
                              const uint step_lo, const uint step_hi, const int index,
                              global const uint *global_index, const int indexed,
                              global const double *x_set, const double leave)
{
    const uint i = get_global_id(0);
    if (fk_stop_here(flags, index, n) || i >= n)
        return;
    double4 a;
    if (!fk_acceleration(force, inverse_mass, i, flags, &a))
        return;
    double4 vi = fk_load3(v, i);
    if (close_previous)
        vi = vi + h * a;
    vi = vi + h * a;
    double4 xi = fk_load3(x, i);
#if FK_LANGEVIN
    xi = xi + h * vi;
    /* a part's particle draws by its index in the whole system: the same numbers in every part */
    const uint key = indexed ? global_index[i] : i;
    const double4 z = fk_normal3(seed_lo, seed_hi, step_lo, step_hi, key);
    vi = c1 * vi + noise[i] * z;
    xi = xi + h * vi;
#else
    (void)noise, (void)c1, (void)seed_lo, (void)seed_hi, (void)step_lo, (void)step_hi;
    (void)global_index, (void)indexed;
    xi = xi + dt * vi;
#endif
    xi = fk_wrap3(xi, box);
    fk_store3(vi, i, v);
    fk_store3(xi, i, x);
    const float4 p = fk_store_body(body, i, xi);
    fk_check_moved(p, reference, i, threshold2, box_f, flags, index);
    fk_check_leave(xi, x_set, inverse_mass, i, box, leave, flags);
}

/* The closing half kick of the last step of a group (enqueued once the host saw its forces are
 * usable). */
kernel void fk_integrate_kick(const uint n, global double *v, global const fk_force_t *force,
                              global const double *inverse_mass, const double h, global int *flags)
{
    const uint i = get_global_id(0);
    if (i >= n || flags[FK_FLAG_HALT] >= 0)
        return;
    double4 a;
    if (!fk_acceleration(force, inverse_mass, i, flags, &a))
        return;
    fk_store3(fk_load3(v, i) + h * a, i, v);
}

/* A part's exchange (fk_integrator_part): the positions of the send particles into out, in the
 * caller's order (3 doubles each). */
kernel void fk_integrate_gather(const uint count, global const uint *index,
                                global const double *x, global double *out)
{
    const uint k = get_global_id(0);
    if (k < count)
        fk_store3(fk_load3(x, index[k]), k, out);
}

/* The halo copies' positions from the other parts (already wrapped by their owners' steps): the
 * state and the particle records. */
kernel void fk_integrate_scatter(const uint count, global const uint *index,
                                 global const double *in, global double *x, global float4 *body)
{
    const uint k = get_global_id(0);
    if (k >= count)
        return;
    const uint i = index[k];
    const double4 xi = fk_load3(in, k);
    fk_store3(xi, i, x);
    fk_store_body(body, i, xi);
}

/* ---------------------------------------------------------------------------------------------- */
/* Energies */

/* Particle i's term: which 0 kinetic, 1 potential. */
static double fk_energy_term(const uint which, const uint i, global const double *v,
                             global const double *mass, global const fk_force_t *potential)
{
    if (which == 0) {
        const double4 vi = fk_load3(v, i);
        return 0.5 * mass[i] * ((vi.x * vi.x + vi.y * vi.y) + vi.z * vi.z);
    }
#if FK_GRAVITY
    return 0.5 * mass[i] * (double)potential[i];
#else
    return (double)potential[i];
#endif
}

/* Particle i's term, or 0 for a part's halo copy (masked: 1 / m is 0 there). */
static double fk_energy_term_of(const uint which, const uint i, global const double *v,
                                global const double *mass, global const fk_force_t *potential,
                                global const double *inverse_mass, const int masked)
{
    if (masked && inverse_mass[i] == 0.0)
        return 0.0;
    return fk_energy_term(which, i, v, mass, potential);
}

/* The work-group's largest |term| of energy `which` (exact). */
static double fk_energy_largest(const uint which, const uint n, global const double *v,
                                global const double *mass, global const fk_force_t *potential,
                                global const double *inverse_mass, const int masked,
                                local double *largest)
{
    const uint lid = get_local_id(0);
    double m = 0.0;
    for (uint i = lid; i < n; i += FK_ENERGY_WG)
        m = fmax(m, fabs(fk_energy_term_of(which, i, v, mass, potential, inverse_mass, masked)));
    largest[lid] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = FK_ENERGY_WG / 2; stride > 0; stride /= 2) {
        if (lid < stride)
            largest[lid] = fmax(largest[lid], largest[lid + stride]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const double top = largest[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return top;
}

/* The work-group's sum of energy `which`'s terms times 2^k, each rounded to an integer (exact up
 * to that rounding; the sum of 64-bit integers is exact in any order). */
static long fk_energy_sum(const uint which, const uint n, const int k, global const double *v,
                          global const double *mass, global const fk_force_t *potential,
                          global const double *inverse_mass, const int masked, local long *sums)
{
    const uint lid = get_local_id(0);
    long sum = 0;
    for (uint i = lid; i < n; i += FK_ENERGY_WG)
        sum += convert_long(rint(
            ldexp(fk_energy_term_of(which, i, v, mass, potential, inverse_mass, masked), k)));
    sums[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = FK_ENERGY_WG / 2; stride > 0; stride /= 2) {
        if (lid < stride)
            sums[lid] += sums[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const long total = sums[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

/* The power-of-two scale 2^k that keeps the sum of `count` terms below 2^62 when the largest is
 * top (src/core/integrate/integrator.c's energy_exponent does the same for a part). */
static int fk_energy_exponent(const double top, const uint count)
{
    int exponent = 0;
    frexp(top, &exponent); /* top < 2^exponent */
    const int n_bits = 32 - (int)clz(count);
    return clamp(62 - exponent - n_bits, -1000, 1000);
}

/* One work-group of FK_ENERGY_WG: for each energy, the largest |term| (exact), a power-of-two scale
 * 2^k that keeps the sum of n terms below 2^62, the terms times 2^k rounded to integers (exact up
 * to that rounding) and summed as 64-bit integers (exact, in any order), then that sum / 2^k. The
 * result depends only on the terms, not on the order: the same bits everywhere. out[which]. */
kernel __attribute__((reqd_work_group_size(FK_ENERGY_WG, 1, 1))) void
fk_integrate_energies(const uint n, const uint count, global const double *v,
                      global const double *mass, global const fk_force_t *potential,
                      global double *out)
{
    local double largest[FK_ENERGY_WG];
    local long sums[FK_ENERGY_WG];
    for (uint which = 0; which < count; ++which) {
        const double top = fk_energy_largest(which, n, v, mass, potential, mass, 0, largest);
        const int k = fk_energy_exponent(top, n);
        const long sum = fk_energy_sum(which, n, k, v, mass, potential, mass, 0, sums);
        if (get_local_id(0) == 0)
            out[which] = ldexp(convert_double(sum), -k);
    }
}

/* A part's energies in two passes, the host combining the parts between them: the largest terms
 * of its own particles (largest_out[which]), then with the system's scales k (from the largest
 * over all parts and the system's count) the integer sums (sums_out[which]), which the parts add. */
kernel __attribute__((reqd_work_group_size(FK_ENERGY_WG, 1, 1))) void
fk_integrate_energy_largest(const uint n, const uint count, global const double *v,
                            global const double *mass, global const fk_force_t *potential,
                            global const double *inverse_mass, global double *largest_out)
{
    local double largest[FK_ENERGY_WG];
    for (uint which = 0; which < count; ++which) {
        const double top =
            fk_energy_largest(which, n, v, mass, potential, inverse_mass, 1, largest);
        if (get_local_id(0) == 0)
            largest_out[which] = top;
    }
}

kernel __attribute__((reqd_work_group_size(FK_ENERGY_WG, 1, 1))) void
fk_integrate_energy_sums(const uint n, const uint count, global const double *v,
                         global const double *mass, global const fk_force_t *potential,
                         global const double *inverse_mass, const int k0, const int k1,
                         global long *sums_out)
{
    local long sums[FK_ENERGY_WG];
    for (uint which = 0; which < count; ++which) {
        const long sum = fk_energy_sum(which, n, which ? k1 : k0, v, mass, potential,
                                       inverse_mass, 1, sums);
        if (get_local_id(0) == 0)
            sums_out[which] = sum;
    }
}
