/* Time integration on the device (issue #33): fk_integrator, on an evaluation, with the kernels of
 * cl/integrate.cl around the evaluation's pair loop (src/core/eval/device_step.h).
 *
 * What crosses to the host, and when. set_state writes the state and waits for the first forces.
 * step enqueues the steps in groups: every kernel of a group (the integrator's, the pair loop's,
 * the decode's) goes to the in-order queue without a wait, and one read of five flag words after
 * the group says whether, and at which step, the group stopped: the cell or neighbour lists went
 * stale (a particle moved more than skin / 2 since their build: the check is in fk_integrate_step,
 * on the device), fixed64 overflowed, or a force was not finite. A stopped group leaves the state
 * after that step's drift; the host then rebuilds the lists (the loop's prepare) or chooses a new
 * fixed64 scale, computes that step's forces again and goes on. Loops without lists stop only for
 * overflow, so their groups are long (GROUP_MAX steps); with lists a group ends where the next
 * rebuild is expected (the last interval between rebuilds), so that few steps are computed after
 * a stop only to be thrown away. get_state and energies read what they return.
 *
 * Everything the state goes through is an IEEE double operation OpenCL requires to be correctly
 * rounded, or exact (cl/integrate.cl says which): given the same forces, the trajectory is the same
 * bits on every device with fp64, for every work-group size, grouping of steps and loop; with
 * reproducible fixed64 the forces are, and so is the whole trajectory. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/eval/device_step.h"
#include "core/integrate/integrator.h"
#include "core/internal.h"
#include "core/loops/loop.h"

/* cl/integrate.cl's flags[] */
enum {
    FLAG_HALT = 0,
    FLAG_MOVED,
    FLAG_MOVED_ODD,
    FLAG_OVERFLOW,
    FLAG_NONFINITE,
    FLAG_LEAVE,
    FLAG_FAR,
    FLAG_COUNT
};
/* A part's votes, combined over the parts (FK_PART_REDUCE_OR) after each step's forces. */
enum {
    VOTE_MOVED = 1,     /* some part's lists went stale: every part rebuilds */
    VOTE_OVERFLOW = 2,  /* some part's fixed64 sums overflowed: every part rescales */
    VOTE_NONFINITE = 4, /* a force was not finite */
    VOTE_LEAVE = 8,     /* an own particle moved farther than leave: stop after this step */
    VOTE_FAR = 16,      /* ... farther than 2 leave: the step is not trusted */
    VOTE_FAILED = 32    /* a part failed (its message is its own) */
};
/* The most steps enqueued before the host looks at the flags. */
enum { GROUP_MAX = 256 };
/* The first guess of the steps between rebuilds (with lists), before one was seen. */
enum { INTERVAL_GUESS = 8 };
/* The rounding of the per-particle kernels' launch sizes, and the work-group size of the energy
 * sum (FK_ENERGY_WG) where the device cannot run ENERGY_GROUP_WIDE. */
enum { GROUP = 64, ENERGY_GROUP = 64, ENERGY_GROUP_WIDE = 256 };

/* The energy sum runs as one work-group over all N particles, so its time is N / group serial
 * loads a work-item: on an H200 the gap between simulate's step (which asks for the energies every
 * --sample steps) and the library step grew with N, 1.2 / 4.8 / 24 ms per 100 steps at N = 65,536
 * / 262,144 / 1,048,576 (issue #33 item 4), consistent with a latency-bound loop of 64
 * work-items (not yet measured on a GPU with 256). 256 keeps four times the loads in flight. The
 * result is the same bits at any group size (an exact maximum and an integer sum). */
static int energy_group(const fk_context *context)
{
    return context->info.max_work_group_size >= ENERGY_GROUP_WIDE ? ENERGY_GROUP_WIDE
                                                                  : ENERGY_GROUP;
}

struct fk_integrator {
    fk_eval *eval;
    fk_context *context;
    fk_integrator_config config;
    size_t count;
    int gravity, periodic, lists;
    int has_potential; /* the evaluation computes potentials */
    double box[3];
    cl_program program;
    cl_kernel set, step, kick, energies, noise, set_velocities, predict, correct;
    /* x, v: the state (3 doubles per particle); force, potential: the last decoded forces and
     * potentials (eval->result_size bytes each); inverse_mass (1 for gravity), kinetic_mass (the
     * masses of the kinetic energy), noise_scale (Langevin: sqrt(1 - c1^2) sqrt(kT / m));
     * reference: the float4 positions of the lists' build; flags; energy_out: 2 doubles. */
    cl_mem x, v, force, potential, inverse_mass, kinetic_mass, noise_scale, reference, flags,
        energy_out;
    /* Hermite: the forces (accelerations and jerks) of even and odd steps, force_odd the second
     * (force is the first), and a scratch buffer for the energies' evaluation. */
    cl_mem force_odd, force_scratch;
    int hermite;
    cl_mem forces_target; /* where the forces of the next forces_attempt go */
    double c1;            /* Langevin: exp(-friction dt) */
    cl_float threshold2;
    uint64_t step_index;
    int state_set;        /* set_state succeeded and no step failed since */
    int close_pending;    /* the last step's closing half kick is still to be applied */
    size_t seen_rebuilds; /* the evaluation's cell_rebuilds after our last prepare */
    uint64_t since_rebuild, interval;
    uint64_t rebuilds, rescales, syncs;
    cl_int flags_reset[FLAG_COUNT], flags_host[FLAG_COUNT];
    /* A part of a divided system (fk_integrator_set_part); has_part 0 otherwise. The part's arrays
     * live on the device: global_index (uint per particle), x_set (the positions of set_state, for
     * the leave check), send_index and receive_index with their values; the host keeps the
     * exchange's buffers, the halo flags (set_state zeroes those velocities) and the callbacks. */
    int has_part;
    int leave_pending; /* a step voted "leave": no more steps until set_state */
    fk_integrator_part part;
    cl_mem global_index, x_set, send_index, receive_index, send_values, receive_values;
    cl_mem energy_largest_out, energy_sums_out;
    cl_kernel gather, scatter, energy_largest, energy_sums;
    /* the exchange's host arrays, pinned (DMA at the bus's speed: 24 bytes a halo particle each
     * way every step) */
    cl_mem send_pinned, receive_pinned;
    double *send_host, *receive_host;
    unsigned char *halo;
};

/* ---------------------------------------------------------------------------------------------- */
/* The random numbers on the host: cl/integrate.cl's functions, the same operations in C (C11
 * without contraction: CMake's C_EXTENSIONS OFF), for the tests' reference. */

void fk__philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c[4] = {counter[0], counter[1], counter[2], counter[3]}, k[2] = {key[0], key[1]};
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k[0] += 0x9E3779B9u;
            k[1] += 0xBB67AE85u;
        }
        const uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        const uint32_t next[4] = {(uint32_t)(p1 >> 32) ^ c[1] ^ k[0], (uint32_t)p1,
                                  (uint32_t)(p0 >> 32) ^ c[3] ^ k[1], (uint32_t)p0};
        memcpy(c, next, sizeof c);
    }
    memcpy(out, c, sizeof c);
}

static double noise_log(double x)
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

static void noise_cos_sin_2pi(double u, double *cosine_out, double *sine_out)
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
    const double cs[4][2] = {{cosine, sine}, {-sine, cosine}, {-cosine, -sine}, {sine, -cosine}};
    *cosine_out = cs[quadrant][0];
    *sine_out = cs[quadrant][1];
}

static void noise_box_muller(const uint32_t r[4], double out[2])
{
    const uint64_t bits1 = ((uint64_t)r[0] << 21) | (uint64_t)(r[1] >> 11);
    const uint64_t bits2 = ((uint64_t)r[2] << 21) | (uint64_t)(r[3] >> 11);
    const double u1 = (double)(bits1 + 1) * 0x1.0p-53, u2 = (double)bits2 * 0x1.0p-53;
    const double radius = sqrt(-2.0 * noise_log(u1));
    double c, s;
    noise_cos_sin_2pi(u2, &c, &s);
    out[0] = radius * c;
    out[1] = radius * s;
}

void fk__integrator_noise_host(uint64_t seed, uint64_t step, uint32_t particle, double out[3])
{
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    double a[2], b[2];
    uint32_t r[4];
    const uint32_t c0[4] = {(uint32_t)step, (uint32_t)(step >> 32), particle, 0};
    fk__philox4x32_10(c0, key, r);
    noise_box_muller(r, a);
    const uint32_t c1[4] = {(uint32_t)step, (uint32_t)(step >> 32), particle, 1};
    fk__philox4x32_10(c1, key, r);
    noise_box_muller(r, b);
    out[0] = a[0];
    out[1] = a[1];
    out[2] = b[0];
}

/* exp(x) - 1 for x <= 0 by fixed double operations, so that Langevin's constants are the same bits
 * on every platform (a libm's exp may differ in the last bit): x halved k times to |x| < 2^-4, the
 * Taylor series of expm1 to x^13 (below 1e-17 of the result there), then k doublings through
 * expm1(2y) = expm1(y) (expm1(y) + 2). */
static double langevin_expm1(double x)
{
    if (!(x > -745.0))
        return -1.0;
    int k = 0;
    while (x < -0.0625) {
        x = 0.5 * x;
        ++k;
    }
    double p = 1.0 / 6227020800.0; /* 1/13! */
    const double inverse_factorials[11] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
                                           1.0 / 362880.0,    1.0 / 40320.0,    1.0 / 5040.0,
                                           1.0 / 720.0,       1.0 / 120.0,      1.0 / 24.0,
                                           1.0 / 6.0,         1.0 / 2.0};
    for (int t = 0; t < 11; ++t)
        p = inverse_factorials[t] + x * p;
    double e = x + x * (x * p);
    for (; k > 0; --k)
        e = e * (e + 2.0);
    return e;
}

/* exp(x) for x <= 0 the same way: x = m ln 2 + r with |r| <= ln 2 / 2 (fdlibm's split of ln 2,
 * exact products), exp(r) by its Taylor series to r^17, times 2^m. */
static double langevin_exp(double x)
{
    if (!(x > -745.0))
        return 0.0;
    const double m = floor(x * 1.44269504088896340736 + 0.5);
    const double r = (x - m * 6.93147180369123816490e-01) - m * 1.90821492927058770002e-10;
    double p = 1.0;
    for (int t = 17; t >= 1; --t) /* 1 + r/1 (1 + r/2 (1 + ... (1 + r/17))) */
        p = 1.0 + (r / (double)t) * p;
    return ldexp(p, (int)m);
}

void fk__integrator_langevin_constants(double friction, double dt, double *c1, double *c2)
{
    const double gamma_dt = friction * dt;
    *c1 = langevin_exp(-gamma_dt);
    *c2 = sqrt(-langevin_expm1(-2.0 * gamma_dt)); /* sqrt(1 - c1^2), without the cancellation */
}

/* ---------------------------------------------------------------------------------------------- */
/* Create and destroy */

void fk_integrator_destroy(fk_integrator *integrator)
{
    if (!integrator)
        return;
    clFinish(integrator->context->queue);
    cl_kernel kernels[] = {
        integrator->set,   integrator->step,    integrator->kick,           integrator->energies,
        integrator->noise, integrator->predict, integrator->set_velocities, integrator->correct};
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; ++k)
        if (kernels[k])
            clReleaseKernel(kernels[k]);
    cl_kernel part_kernels[] = {integrator->gather, integrator->scatter, integrator->energy_largest,
                                integrator->energy_sums};
    for (size_t k = 0; k < sizeof part_kernels / sizeof part_kernels[0]; ++k)
        if (part_kernels[k])
            clReleaseKernel(part_kernels[k]);
    cl_mem part_buffers[] = {integrator->global_index,       integrator->x_set,
                             integrator->send_index,         integrator->receive_index,
                             integrator->send_values,        integrator->receive_values,
                             integrator->energy_largest_out, integrator->energy_sums_out};
    for (size_t k = 0; k < sizeof part_buffers / sizeof part_buffers[0]; ++k)
        if (part_buffers[k])
            clReleaseMemObject(part_buffers[k]);
    fk__pinned_release(integrator->context, &integrator->send_pinned,
                       (void **)&integrator->send_host);
    fk__pinned_release(integrator->context, &integrator->receive_pinned,
                       (void **)&integrator->receive_host);
    free(integrator->halo);
    cl_mem buffers[] = {integrator->x,
                        integrator->v,
                        integrator->force,
                        integrator->potential,
                        integrator->inverse_mass,
                        integrator->kinetic_mass,
                        integrator->noise_scale,
                        integrator->reference,
                        integrator->flags,
                        integrator->force_odd,
                        integrator->force_scratch,
                        integrator->energy_out};
    for (size_t k = 0; k < sizeof buffers / sizeof buffers[0]; ++k)
        if (buffers[k])
            clReleaseMemObject(buffers[k]);
    if (integrator->program)
        clReleaseProgram(integrator->program);
    free(integrator);
}

static fk_status check_config(fk_context *context, const fk_eval *eval,
                              const fk_integrator_config *config, int gravity)
{
    if (config->kind != FK_INTEGRATOR_VERLET && config->kind != FK_INTEGRATOR_LANGEVIN &&
        config->kind != FK_INTEGRATOR_HERMITE)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_integrator_config.kind %d: FK_INTEGRATOR_VERLET (0), "
                        "FK_INTEGRATOR_LANGEVIN (1) or FK_INTEGRATOR_HERMITE (2)",
                        config->kind);
    if (config->kind == FK_INTEGRATOR_HERMITE && !eval->state.kernel->needs_velocity)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "Hermite needs the jerk: gaj, not %s",
                        eval->state.kernel->info.name);
    if (!(config->dt > 0) || !isfinite(config->dt))
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_integrator_config.dt is %g: a time step > 0 is required", config->dt);
    if (config->kind == FK_INTEGRATOR_LANGEVIN) {
        if (!(config->temperature > 0) || !isfinite(config->temperature))
            return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                            "Langevin: the temperature (k_B T) is %g; it must be > 0 and finite",
                            config->temperature);
        if (!(config->friction > 0) || !isfinite(config->friction))
            return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                            "Langevin: the friction is %g; it must be > 0 and finite",
                            config->friction);
    } else if (config->temperature != 0 || config->friction != 0) {
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "%s takes no temperature or friction (they are Langevin's)",
                        config->kind == FK_INTEGRATOR_HERMITE ? "Hermite" : "velocity Verlet");
    }
    if (config->masses && gravity)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "%s gives accelerations: its masses are the evaluation's particles', so "
                        "fk_integrator_config.masses must be NULL",
                        eval->state.kernel->info.name);
    if (config->masses) {
        if (config->mass_count != eval->state.count)
            return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                            "fk_integrator_config: %zu masses for %zu particles",
                            config->mass_count, eval->state.count);
        for (size_t i = 0; i < eval->state.count; ++i)
            if (!(config->masses[i] > 0) || !isfinite(config->masses[i]))
                return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                                "fk_integrator_config: mass %zu is %g; each must be > 0 and finite",
                                i, config->masses[i]);
    } else if (config->mass_count) {
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_integrator_config: mass_count %zu without masses", config->mass_count);
    }
    return FK_OK;
}

/* What the evaluation must be for an integrator. */
static fk_status check_eval(fk_context *context, const fk_eval *eval)
{
    if (eval->pending)
        return fk__fail(context, FK_ERR_STATE,
                        "a compute is in flight (fk_eval_compute_async): call fk_eval_wait first");
    if (eval->state.count == 0 || !eval->state.host_body)
        return fk__fail(context, FK_ERR_STATE, "fk_integrator_create before set_particles");
    if (!context->info.fp64 || !eval->device_decode)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "the integrator keeps its state in double and decodes the forces on the "
                        "device: it needs fp64 (cl_khr_fp64), which %s lacks",
                        context->info.name);
    if (!eval->state.kernel->uses_table && !(eval->state.config.eps > 0))
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "the integrator needs softening (eps > 0) for %s: without it the host "
                        "must check every step for coincident bodies",
                        eval->state.kernel->info.name);
    if (eval->state.share_parts > 1 || eval->state.share_explicit)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "the integrator steps the whole system: the evaluation has a share "
                        "(fk_eval_set_share)");
    return FK_OK;
}

/* A table of the program's kernels to create (those not made yet). */
typedef struct named_kernel {
    cl_kernel *kernel;
    const char *name;
} named_kernel;

static fk_status create_named_kernels(fk_integrator *integrator, const named_kernel *kernels,
                                      size_t count)
{
    for (size_t k = 0; k < count; ++k) {
        if (*kernels[k].kernel)
            continue;
        cl_int err = CL_SUCCESS;
        *kernels[k].kernel = clCreateKernel(integrator->program, kernels[k].name, &err);
        if (err != CL_SUCCESS) {
            *kernels[k].kernel = NULL;
            char call[96];
            snprintf(call, sizeof call, "clCreateKernel (%s)", kernels[k].name);
            return fk__cl_fail(integrator->context, call, err);
        }
    }
    return FK_OK;
}

static fk_status create_kernels(fk_integrator *integrator)
{
    fk_context *context = integrator->context;
    const fk_eval *eval = integrator->eval;
    char options[256];
    snprintf(options, sizeof options,
             "-D FK_DS_POSITIONS=%d -D FK_FORCE_DOUBLE=%d -D FK_FORCE_COMPONENTS=%u "
             "-D FK_PERIODIC=%d -D FK_LANGEVIN=%d -D FK_CHECK_LISTS=%d -D FK_GRAVITY=%d "
             "-D FK_ENERGY_WG=%d -D FK_HERMITE=%d",
             fk__eval_ds(&eval->state), eval->result_size == 8,
             eval->state.kernel->info.force_components, integrator->periodic,
             integrator->config.kind == FK_INTEGRATOR_LANGEVIN, integrator->lists,
             integrator->gravity, energy_group(context), integrator->hermite);
    fk_program_result built;
    fk_status status = fk__program_build_file(context, "integrate.cl", options, &built);
    if (status != FK_OK)
        return status;
    integrator->program = built.program;
    const named_kernel kernels[] = {{&integrator->set, "fk_integrate_set"},
                                    {&integrator->step, "fk_integrate_step"},
                                    {&integrator->kick, "fk_integrate_kick"},
                                    {&integrator->energies, "fk_integrate_energies"},
                                    {&integrator->noise, "fk_integrate_noise"},
                                    {&integrator->set_velocities, "fk_integrate_set_velocities"},
                                    {&integrator->predict, "fk_integrate_predict"},
                                    {&integrator->correct, "fk_integrate_correct"}};
    return create_named_kernels(integrator, kernels, sizeof kernels / sizeof kernels[0]);
}

static fk_status create_buffer(fk_integrator *integrator, cl_mem *buffer, size_t bytes,
                               const void *host, const char *what)
{
    const cl_mem_flags flags = CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0);
    return fk__eval_create_buffer(&integrator->eval->state, buffer, flags, bytes, (void *)host,
                                  what);
}

/* The per-particle constants: 1 / m for the kick (1 for gravity's accelerations), the masses of
 * the kinetic energy, Langevin's noise amplitude. */
static fk_status create_constants(fk_integrator *integrator, const double *masses)
{
    const fk_eval *eval = integrator->eval;
    const fk_integrator_config *config = &integrator->config;
    const size_t n = integrator->count;
    double *inverse = malloc(n * sizeof *inverse), *mass = malloc(n * sizeof *mass);
    double *noise = malloc(n * sizeof *noise);
    if (!inverse || !mass || !noise) {
        free(inverse);
        free(mass);
        free(noise);
        return FK_ERR_HOST_MEMORY;
    }
    const size_t stride = fk__eval_body_floats(&eval->state);
    /* Langevin's exact Ornstein-Uhlenbeck step: v' = c1 v + sqrt(1 - c1^2) sqrt(kT / m) z */
    double c2 = 0.0;
    fk__integrator_langevin_constants(config->friction, config->dt, &integrator->c1, &c2);
    for (size_t i = 0; i < n; ++i) {
        double m = 1.0;
        if (integrator->gravity) { /* the evaluation's masses, as the device holds them */
            m = (double)eval->state.host_body[stride * i + 3];
            if (stride == 8)
                m += (double)eval->state.host_body[stride * i + 7];
        } else if (masses) {
            m = masses[i];
        }
        mass[i] = m;
        inverse[i] = integrator->gravity ? 1.0 : 1.0 / m;
        noise[i] =
            config->kind == FK_INTEGRATOR_LANGEVIN ? c2 * sqrt(config->temperature / m) : 0.0;
    }
    fk_status status =
        create_buffer(integrator, &integrator->inverse_mass, n * sizeof(double), inverse, "1 / m");
    if (status == FK_OK)
        status = create_buffer(integrator, &integrator->kinetic_mass, n * sizeof(double), mass,
                               "masses");
    if (status == FK_OK)
        status =
            create_buffer(integrator, &integrator->noise_scale, n * sizeof(double), noise, "noise");
    free(inverse);
    free(mass);
    free(noise);
    return status;
}

fk_status fk_integrator_create(fk_eval *eval, const fk_integrator_config *config,
                               fk_integrator **out)
{
    if (out)
        *out = NULL;
    if (!eval || !config || !out)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = eval->state.context;
    fk__clear_error(context);
    fk_integrator_config copy;
    fk_status status = fk__config_copy(context, "fk_integrator_config", &copy, sizeof copy, config,
                                       FK__SIZE_0_2(fk_integrator_config, mass_count));
    if (status != FK_OK)
        return status;
    status = check_eval(context, eval);
    const int gravity = !eval->state.kernel->uses_table;
    if (status == FK_OK)
        status = check_config(context, eval, &copy, gravity);
    if (status != FK_OK)
        return status;
    fk_integrator *integrator = calloc(1, sizeof *integrator);
    if (!integrator)
        return FK_ERR_HOST_MEMORY;
    integrator->eval = eval;
    integrator->context = context;
    integrator->config = copy;
    integrator->config.masses = NULL; /* the caller's; copied to the device below */
    integrator->count = eval->state.count;
    integrator->gravity = gravity;
    integrator->periodic = eval->state.plan.physics.periodic;
    memcpy(integrator->box, eval->state.plan.physics.box, sizeof integrator->box);
    integrator->lists = eval->loop->invalidate != NULL;
    integrator->hermite = copy.kind == FK_INTEGRATOR_HERMITE;
    integrator->has_potential = eval->state.config.potential != 0;
    integrator->interval = INTERVAL_GUESS;
    const size_t n = eval->state.count;
    const cl_int none = (cl_int)n;
    const cl_int reset[FLAG_COUNT] = {-1, 0, 0, none, none, 0, 0};
    memcpy(integrator->flags_reset, reset, sizeof reset);
    status = create_constants(integrator, copy.masses);
    if (status == FK_OK)
        status = create_kernels(integrator);
    const size_t force_bytes = n * eval->state.kernel->info.force_components * eval->result_size;
    const size_t state_bytes = 3 * n * sizeof(double);
    if (status == FK_OK)
        status = create_buffer(integrator, &integrator->x, state_bytes, NULL, "positions");
    if (status == FK_OK)
        status = create_buffer(integrator, &integrator->v, state_bytes, NULL, "velocities");
    if (status == FK_OK)
        status = create_buffer(integrator, &integrator->force, force_bytes, NULL, "forces");
    if (status == FK_OK && integrator->hermite)
        status = create_buffer(integrator, &integrator->force_odd, force_bytes, NULL, "forces");
    if (status == FK_OK && integrator->hermite)
        status = create_buffer(integrator, &integrator->force_scratch, force_bytes, NULL, "forces");
    if (status == FK_OK)
        status = create_buffer(integrator, &integrator->potential,
                               integrator->has_potential ? n * eval->result_size : 16, NULL,
                               "potentials");
    if (status == FK_OK)
        status = create_buffer(integrator, &integrator->reference,
                               integrator->lists ? n * 4 * sizeof(cl_float) : 16, NULL,
                               "the lists' build positions");
    if (status == FK_OK)
        status = create_buffer(integrator, &integrator->flags, sizeof integrator->flags_host, NULL,
                               "flags");
    if (status == FK_OK)
        status = create_buffer(integrator, &integrator->energy_out, 2 * sizeof(double), NULL,
                               "energies");
    if (status != FK_OK) {
        fk_integrator_destroy(integrator);
        return status;
    }
    *out = integrator;
    return FK_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Stepping */

/* The first step of every call but destroy: the error cleared, the handle's evaluation still has
 * the integrator's particles, and (need_state) a state was set. */
static fk_status begin(fk_integrator *integrator, int need_state, const char *call)
{
    fk_context *context = integrator->context;
    fk__clear_error(context);
    if (integrator->eval->state.count != integrator->count)
        return fk__fail(context, FK_ERR_STATE,
                        "%s: the evaluation's particles changed (%zu, the integrator was made for "
                        "%zu): create a new integrator",
                        call, integrator->eval->state.count, integrator->count);
    if (need_state && !integrator->state_set)
        return fk__fail(context, FK_ERR_STATE, "%s before fk_integrator_set_state%s", call,
                        integrator->step_index ? " (a failed step lost the state)" : "");
    return FK_OK;
}

/* A per-particle kernel over items work-items (rounded up to GROUP; each returns past the count).
 * The work-group size is the runtime's: nothing here depends on it, and a device whose compiled
 * kernel holds fewer than GROUP work-items still runs it. */
static fk_status enqueue_kernel(fk_integrator *integrator, cl_kernel kernel, size_t items,
                                const char *name)
{
    const size_t group = GROUP, global = (items + group - 1) / group * group;
    const cl_int err = clEnqueueNDRangeKernel(integrator->context->queue, kernel, 1, NULL, &global,
                                              NULL, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        char call[96];
        snprintf(call, sizeof call, "clEnqueueNDRangeKernel (%s)", name);
        return fk__cl_fail(integrator->context, call, err);
    }
    return FK_OK;
}

static fk_status reset_flags(fk_integrator *integrator)
{
    const cl_int err = clEnqueueWriteBuffer(integrator->context->queue, integrator->flags, CL_FALSE,
                                            0, sizeof integrator->flags_reset,
                                            integrator->flags_reset, 0, NULL, NULL);
    return err == CL_SUCCESS
               ? FK_OK
               : fk__cl_fail(integrator->context, "clEnqueueWriteBuffer (flags)", err);
}

static fk_status read_flags(fk_integrator *integrator)
{
    integrator->syncs++;
    const cl_int err =
        clEnqueueReadBuffer(integrator->context->queue, integrator->flags, CL_TRUE, 0,
                            sizeof integrator->flags_host, integrator->flags_host, 0, NULL, NULL);
    return err == CL_SUCCESS ? FK_OK
                             : fk__cl_fail(integrator->context, "clEnqueueReadBuffer (flags)", err);
}

/* The loop's prepare on the positions in eval->state.body; with lists, a rebuild forced (our check
 * is against the positions of the build we asked for) and those positions kept as the reference. */
static fk_status prepare_lists(fk_integrator *integrator)
{
    fk_eval *eval = integrator->eval;
    if (integrator->lists)
        eval->loop->invalidate(eval->loop_state);
    fk_status status = fk__eval_device_prepare(eval);
    if (status != FK_OK || !integrator->lists)
        return status;
    const cl_int err =
        clEnqueueCopyBuffer(integrator->context->queue, eval->state.body, integrator->reference, 0,
                            0, integrator->count * 4 * sizeof(cl_float), 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return fk__cl_fail(integrator->context, "clEnqueueCopyBuffer (the lists' positions)", err);
    /* cl/cells_build.cl's threshold, from the skin the grid uses */
    const double half_skin = 0.5 * eval->state.variant.cell_skin;
    integrator->threshold2 = (cl_float)(half_skin * half_skin);
    integrator->seen_rebuilds = eval->state.variant.cell_rebuilds;
    integrator->rebuilds++;
    return FK_OK;
}

/* The forces of the state after `step` steps: Hermite alternates two buffers (a step needs its
 * first forces and those at its prediction); the others keep one. */
static cl_mem forces_of(const fk_integrator *integrator, uint64_t step)
{
    return integrator->hermite && (step & 1) ? integrator->force_odd : integrator->force;
}

static fk_status enqueue_forces_into(fk_integrator *integrator, cl_mem target)
{
    return fk__eval_enqueue_device_forces(integrator->eval, target,
                                          integrator->has_potential ? integrator->potential : NULL,
                                          integrator->flags, FLAG_OVERFLOW);
}

/* The forces a stopped or new state waits for: the next step's (step_index + 1) during a step,
 * set by forces_target. */
static fk_status enqueue_forces(fk_integrator *integrator)
{
    return fk__eval_enqueue_device_forces(integrator->eval, integrator->forces_target,
                                          integrator->has_potential ? integrator->potential : NULL,
                                          integrator->flags, FLAG_OVERFLOW);
}

static cl_double4 box4(const fk_integrator *integrator)
{
    const cl_double4 box = {{integrator->box[0], integrator->box[1], integrator->box[2], 0.0}};
    return box;
}

/* The failures found by the flags after a forces pass (at step, for the message). */
static fk_status flag_failure(fk_integrator *integrator, uint64_t step)
{
    const cl_int n = (cl_int)integrator->count;
    if (integrator->flags_host[FLAG_NONFINITE] < n) {
        integrator->state_set = 0;
        return fk__fail(integrator->context, FK_ERR_INVALID_INPUT,
                        "particle %d: its force is not finite (step %llu): two particles came "
                        "(nearly) on top of each other; use a smaller time step",
                        integrator->flags_host[FLAG_NONFINITE], (unsigned long long)step);
    }
    if (integrator->flags_host[FLAG_OVERFLOW] < n) {
        integrator->state_set = 0;
        return fk__fail(integrator->context, FK_ERR_OVERFLOW,
                        "particle %d: its force left the range of the %s accumulator even at a "
                        "scale chosen from these positions (step %llu)",
                        integrator->flags_host[FLAG_OVERFLOW],
                        integrator->eval->state.accum->info.name, (unsigned long long)step);
    }
    return FK_OK;
}

/* The forces at the positions in eval->state.body, waited for, and the flags they left: after
 * set_state and after a stopped group's rebuild or rescale. */
static fk_status forces_attempt(fk_integrator *integrator)
{
    fk_status status = reset_flags(integrator);
    if (status == FK_OK)
        status = enqueue_forces(integrator);
    if (status == FK_OK)
        status = read_flags(integrator);
    return status;
}

/* gaj: the velocity records from the state (its jerk reads them). */
static fk_status write_velocities(fk_integrator *integrator)
{
    if (!integrator->eval->state.kernel->needs_velocity)
        return FK_OK;
    const cl_uint count = (cl_uint)integrator->count;
    fk_status status = FK__SET_ARGS(
        integrator->context, integrator->set_velocities, "fk_integrate_set_velocities", 0,
        FK__ARG(count), FK__ARG(integrator->v), FK__ARG(integrator->eval->state.body_aux));
    return status == FK_OK ? enqueue_kernel(integrator, integrator->set_velocities,
                                            integrator->count, "fk_integrate_set_velocities")
                           : status;
}

static fk_status part_settle(fk_integrator *integrator, fk_status status, int rescale_first,
                             uint64_t step);

fk_status fk_integrator_set_state(fk_integrator *integrator, const double *positions,
                                  const double *velocities, uint64_t step)
{
    if (!integrator || !positions)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = integrator->context;
    fk_status status = begin(integrator, 0, "fk_integrator_set_state");
    if (status != FK_OK)
        return status;
    const size_t n = integrator->count;
    for (size_t m = 0; m < 3 * n; ++m) {
        if (!(fabs(positions[m]) <= FLT_MAX))
            return fk__fail(context, FK_ERR_INVALID_INPUT,
                            "particle %zu: coordinate %d is %g (not a finite float)", m / 3,
                            (int)(m % 3), positions[m]);
        if (velocities && !isfinite(velocities[m]))
            return fk__fail(context, FK_ERR_INVALID_INPUT,
                            "particle %zu: velocity component %d is %g (not finite)", m / 3,
                            (int)(m % 3), velocities[m]);
    }
    fk_eval *eval = integrator->eval;
    status = fk__eval_device_begin(eval);
    if (status != FK_OK)
        return status;
    integrator->state_set = 0;
    cl_command_queue queue = context->queue;
    const size_t bytes = 3 * n * sizeof(double);
    double *own_velocities = NULL; /* a part's: its halo copies' zeroed */
    if (velocities && integrator->has_part) {
        own_velocities = malloc(bytes);
        if (!own_velocities)
            return FK_ERR_HOST_MEMORY;
        for (size_t m = 0; m < 3 * n; ++m)
            own_velocities[m] = integrator->halo[m / 3] ? 0.0 : velocities[m];
        velocities = own_velocities;
    }
    cl_int err =
        clEnqueueWriteBuffer(queue, integrator->x, CL_TRUE, 0, bytes, positions, 0, NULL, NULL);
    if (err == CL_SUCCESS && velocities)
        err = clEnqueueWriteBuffer(queue, integrator->v, CL_TRUE, 0, bytes, velocities, 0, NULL,
                                   NULL);
    else if (err == CL_SUCCESS) {
        const cl_double zero = 0.0;
        err = fk__enqueue_fill(context, integrator->v, &zero, sizeof zero, bytes, 0, NULL, NULL);
    }
    free(own_velocities);
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, "clEnqueueWriteBuffer (state)", err);
    const cl_uint count = (cl_uint)n;
    const cl_double4 box = box4(integrator);
    status = FK__SET_ARGS(context, integrator->set, "fk_integrate_set", 0, FK__ARG(count),
                          FK__ARG(integrator->x), FK__ARG(box), FK__ARG(eval->state.body));
    if (status == FK_OK)
        status = enqueue_kernel(integrator, integrator->set, n, "fk_integrate_set");
    if (status == FK_OK)
        status = write_velocities(integrator);
    if (status == FK_OK && integrator->has_part) { /* the leave check's reference */
        err = clEnqueueCopyBuffer(queue, integrator->x, integrator->x_set, 0, 0, bytes, 0, NULL,
                                  NULL);
        if (err != CL_SUCCESS)
            status = fk__cl_fail(context, "clEnqueueCopyBuffer (the part's positions)", err);
    }
    if (status == FK_OK)
        status = prepare_lists(integrator);
    integrator->forces_target = forces_of(integrator, step);
    if (integrator->has_part) /* collective from here, whatever happened before */
        status = part_settle(integrator, status, !integrator->part.keep_scale, step);
    else if (status == FK_OK) {
        status = fk__eval_device_rescale(eval); /* a scale for these positions */
        if (status == FK_OK && eval->state.accum->choose_parameters)
            integrator->rescales++;
        if (status == FK_OK)
            status = forces_attempt(integrator);
        if (status == FK_OK)
            status = flag_failure(integrator, step);
    }
    if (status != FK_OK) {
        clFinish(queue);
        return status;
    }
    integrator->step_index = step;
    integrator->close_pending = 0;
    integrator->since_rebuild = 0;
    integrator->leave_pending = 0;
    integrator->state_set = 1;
    return FK_OK;
}

/* Hermite's corrector of step `step` (from the forces of its start and of its prediction). */
static fk_status enqueue_correct(fk_integrator *integrator, uint64_t step)
{
    const cl_uint n = (cl_uint)integrator->count;
    const cl_double dt = integrator->config.dt;
    const cl_double half = 0.5 * dt, twelfth = dt * dt / 12.0; /* src/support/simulate_step.c's */
    const cl_mem first = forces_of(integrator, step), next = forces_of(integrator, step + 1);
    fk_status status =
        FK__SET_ARGS(integrator->context, integrator->correct, "fk_integrate_correct", 0,
                     FK__ARG(n), FK__ARG(integrator->x), FK__ARG(integrator->v), FK__ARG(first),
                     FK__ARG(next), FK__ARG(half), FK__ARG(twelfth), FK__ARG(integrator->flags));
    return status == FK_OK
               ? enqueue_kernel(integrator, integrator->correct, n, "fk_integrate_correct")
               : status;
}

/* Hermite's step `step`: the predictor from its first forces, the forces at the prediction into
 * the other buffer, the corrector (the verdicts are the next predictor's and the host's). */
static fk_status enqueue_hermite_step(fk_integrator *integrator, uint64_t step, cl_int index)
{
    fk_context *context = integrator->context;
    fk_eval *eval = integrator->eval;
    const cl_uint n = (cl_uint)integrator->count;
    const cl_double dt = integrator->config.dt;
    const cl_mem first = forces_of(integrator, step), next = forces_of(integrator, step + 1);
    fk_status status = FK__SET_ARGS(
        context, integrator->predict, "fk_integrate_predict", 0, FK__ARG(n), FK__ARG(integrator->x),
        FK__ARG(integrator->v), FK__ARG(first), FK__ARG(dt), FK__ARG(eval->state.body),
        FK__ARG(eval->state.body_aux), FK__ARG(integrator->flags), FK__ARG(index));
    if (status == FK_OK)
        status = enqueue_kernel(integrator, integrator->predict, n, "fk_integrate_predict");
    if (status == FK_OK)
        status = enqueue_forces_into(integrator, next);
    if (status == FK_OK)
        status = enqueue_correct(integrator, step);
    return status;
}

/* Enqueues step `step` of a group (index within it, for the verdict). */
static fk_status enqueue_step(fk_integrator *integrator, uint64_t step, cl_int index)
{
    if (integrator->hermite)
        return enqueue_hermite_step(integrator, step, index);
    fk_context *context = integrator->context;
    fk_eval *eval = integrator->eval;
    const cl_uint n = (cl_uint)integrator->count;
    const cl_double dt = integrator->config.dt, h = 0.5 * dt;
    const cl_int close_previous = integrator->close_pending;
    const cl_double4 box = box4(integrator);
    const cl_float4 box_f = {{(cl_float)integrator->box[0], (cl_float)integrator->box[1],
                              (cl_float)integrator->box[2], 0.0f}};
    const cl_double c1 = integrator->c1;
    const uint64_t seed = integrator->config.seed;
    const cl_uint seed_lo = (cl_uint)seed, seed_hi = (cl_uint)(seed >> 32);
    const cl_uint step_lo = (cl_uint)step, step_hi = (cl_uint)(step >> 32);
    fk_status status = FK__SET_ARGS(
        context, integrator->step, "fk_integrate_step", 0, FK__ARG(n), FK__ARG(integrator->x),
        FK__ARG(integrator->v), FK__ARG(integrator->force), FK__ARG(integrator->inverse_mass),
        FK__ARG(h), FK__ARG(dt), FK__ARG(close_previous), FK__ARG(box), FK__ARG(eval->state.body),
        FK__ARG(integrator->reference), FK__ARG(integrator->threshold2), FK__ARG(box_f),
        FK__ARG(integrator->flags), FK__ARG(integrator->noise_scale), FK__ARG(c1), FK__ARG(seed_lo),
        FK__ARG(seed_hi), FK__ARG(step_lo), FK__ARG(step_hi), FK__ARG(index));
    /* a part's noise keys and leave check (unused buffers stand in without a part) */
    const cl_int indexed = integrator->has_part;
    const cl_double leave = integrator->has_part ? integrator->part.leave : 0.0;
    const cl_mem global_index = indexed ? integrator->global_index : integrator->flags;
    const cl_mem x_set = indexed ? integrator->x_set : integrator->x;
    if (status == FK_OK)
        status =
            FK__SET_ARGS(context, integrator->step, "fk_integrate_step", 21, FK__ARG(global_index),
                         FK__ARG(indexed), FK__ARG(x_set), FK__ARG(leave));
    if (status == FK_OK)
        status = enqueue_kernel(integrator, integrator->step, n, "fk_integrate_step");
    if (status == FK_OK)
        integrator->close_pending = 1;
    return status;
}

/* The closing half kick of the last step. */
static fk_status close_step(fk_integrator *integrator)
{
    if (!integrator->close_pending)
        return FK_OK;
    const cl_uint n = (cl_uint)integrator->count;
    const cl_double h = 0.5 * integrator->config.dt;
    fk_status status =
        FK__SET_ARGS(integrator->context, integrator->kick, "fk_integrate_kick", 0, FK__ARG(n),
                     FK__ARG(integrator->v), FK__ARG(integrator->force),
                     FK__ARG(integrator->inverse_mass), FK__ARG(h), FK__ARG(integrator->flags));
    if (status == FK_OK)
        status = enqueue_kernel(integrator, integrator->kick, n, "fk_integrate_kick");
    if (status == FK_OK)
        integrator->close_pending = 0;
    return status;
}

/* Steps in the next group: with lists, up to where the next rebuild is expected (the last
 * interval between rebuilds); past that, a quarter of the steps since the last rebuild at a time,
 * so that a longer interval costs few waits and a stop wastes at most a quarter of it. */
static uint64_t group_size(const fk_integrator *integrator, uint64_t remaining)
{
    uint64_t size = GROUP_MAX;
    if (integrator->lists) {
        const uint64_t since = integrator->since_rebuild;
        size = integrator->interval > since ? integrator->interval - since
                                            : (since / 4 > 1 ? since / 4 : 1);
    }
    if (size > GROUP_MAX)
        size = GROUP_MAX;
    return size < remaining ? size : remaining;
}

/* A group stopped at a step whose drift is done: the lists rebuilt or the scale chosen again
 * from these positions, and the step's forces computed again (after a rebuild, once more with a
 * new scale if they overflowed). */
static fk_status resume(fk_integrator *integrator, cl_int halt)
{
    fk_eval *eval = integrator->eval;
    const uint64_t step = integrator->step_index + 1;
    const cl_int n = (cl_int)integrator->count;
    if (integrator->flags_host[FLAG_NONFINITE] < n)
        return flag_failure(integrator, step);
    const int moved = integrator->flags_host[FLAG_MOVED + (halt & 1)] != 0;
    integrator->forces_target = forces_of(integrator, step);
    fk_status status;
    if (moved) {
        integrator->interval = integrator->since_rebuild + 1;
        integrator->since_rebuild = 0;
        status = prepare_lists(integrator);
    } else { /* not the lists: fixed64's range */
        status = fk__eval_device_rescale(eval);
        integrator->rescales++;
    }
    if (status == FK_OK)
        status = forces_attempt(integrator);
    if (status == FK_OK && moved && integrator->flags_host[FLAG_OVERFLOW] < n) {
        status = fk__eval_device_rescale(eval);
        integrator->rescales++;
        if (status == FK_OK)
            status = forces_attempt(integrator);
    }
    if (status == FK_OK)
        status = flag_failure(integrator, step);
    if (status == FK_OK && integrator->hermite) /* the stopped step's corrector */
        status = enqueue_correct(integrator, integrator->step_index);
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* A part of a divided system (fk_integrator_set_part) */

static fk_status part_buffer(fk_integrator *integrator, cl_mem *buffer, size_t bytes,
                             const void *host, const char *what)
{
    if (*buffer) { /* a failed set_part's */
        clReleaseMemObject(*buffer);
        *buffer = NULL;
    }
    return create_buffer(integrator, buffer, bytes ? bytes : 16, bytes ? host : NULL, what);
}

static fk_status check_part(fk_integrator *integrator, const fk_integrator_part *part)
{
    fk_context *context = integrator->context;
    const size_t n = integrator->count;
    if (integrator->gravity || integrator->hermite)
        return fk__fail(
            context, FK_ERR_UNSUPPORTED,
            "fk_integrator_set_part: a part integrates molecular kernels with Verlet or "
            "Langevin (not %s%s)",
            integrator->eval->state.kernel->info.name, integrator->hermite ? " with Hermite" : "");
    if (!part->exchange || !part->reduce)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_integrator_part: exchange and reduce are required");
    if (part->system_count < n || part->system_count > UINT32_MAX)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_integrator_part.system_count %zu: at least the part's %zu particles "
                        "and below 2^32",
                        part->system_count, n);
    if (!(part->leave >= 0) || !isfinite(part->leave))
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_integrator_part.leave is %g: >= 0 and finite", part->leave);
    if ((part->send_count && !part->send) || (part->receive_count && !part->receive))
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_integrator_part: send or receive indices missing for their counts");
    for (size_t k = 0; k < part->send_count; ++k)
        if (part->send[k] >= n)
            return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                            "fk_integrator_part.send[%zu] = %u: beyond the part's %zu particles", k,
                            part->send[k], n);
    unsigned char *seen = calloc(n ? n : 1, 1);
    if (!seen)
        return FK_ERR_HOST_MEMORY;
    fk_status status = FK_OK;
    for (size_t k = 0; status == FK_OK && k < part->receive_count; ++k) {
        const uint32_t i = part->receive[k];
        if (i >= n || seen[i] || !part->halo || !part->halo[i])
            status = fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                              "fk_integrator_part.receive[%zu] = %u: each must be a distinct halo "
                              "copy of the part's %zu particles",
                              k, i, n);
        else
            seen[i] = 1;
    }
    for (size_t i = 0; status == FK_OK && part->global_index && i < n; ++i)
        if (part->global_index[i] >= part->system_count)
            status = fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                              "fk_integrator_part.global_index[%zu] = %u: beyond the system's %zu",
                              i, part->global_index[i], part->system_count);
    free(seen);
    return status;
}

/* Halo copies are not moved: 1 / m and Langevin's noise amplitude 0 (their velocities stay 0,
 * and the energies and the leave check know them by it). */
static fk_status freeze_halo(fk_integrator *integrator)
{
    const size_t n = integrator->count;
    double *values = malloc(n * sizeof *values);
    if (!values)
        return FK_ERR_HOST_MEMORY;
    cl_command_queue queue = integrator->context->queue;
    cl_mem buffers[] = {integrator->inverse_mass, integrator->noise_scale};
    cl_int err = CL_SUCCESS;
    for (size_t b = 0; err == CL_SUCCESS && b < 2; ++b) {
        err = clEnqueueReadBuffer(queue, buffers[b], CL_TRUE, 0, n * sizeof *values, values, 0,
                                  NULL, NULL);
        for (size_t i = 0; i < n; ++i)
            if (integrator->halo[i])
                values[i] = 0.0;
        if (err == CL_SUCCESS)
            err = clEnqueueWriteBuffer(queue, buffers[b], CL_TRUE, 0, n * sizeof *values, values, 0,
                                       NULL, NULL);
    }
    free(values);
    return err == CL_SUCCESS ? FK_OK
                             : fk__cl_fail(integrator->context, "the halo's constants", err);
}

static fk_status create_part_kernels(fk_integrator *integrator)
{
    const named_kernel kernels[] = {{&integrator->gather, "fk_integrate_gather"},
                                    {&integrator->scatter, "fk_integrate_scatter"},
                                    {&integrator->energy_largest, "fk_integrate_energy_largest"},
                                    {&integrator->energy_sums, "fk_integrate_energy_sums"}};
    return create_named_kernels(integrator, kernels, sizeof kernels / sizeof kernels[0]);
}

fk_status fk_integrator_set_part(fk_integrator *integrator, const fk_integrator_part *part)
{
    if (!integrator || !part)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = integrator->context;
    fk_status status = begin(integrator, 0, "fk_integrator_set_part");
    if (status != FK_OK)
        return status;
    fk_integrator_part copy;
    status = fk__config_copy(context, "fk_integrator_part", &copy, sizeof copy, part, sizeof copy);
    if (status == FK_OK && integrator->has_part)
        status = fk__fail(context, FK_ERR_STATE, "fk_integrator_set_part: the part is already set");
    if (status == FK_OK)
        status = check_part(integrator, &copy);
    if (status != FK_OK)
        return status;
    const size_t n = integrator->count;
    free(integrator->halo); /* what a failed set_part left (its device buffers are kept) */
    fk__pinned_release(context, &integrator->send_pinned, (void **)&integrator->send_host);
    fk__pinned_release(context, &integrator->receive_pinned, (void **)&integrator->receive_host);
    integrator->halo = calloc(n, 1);
    uint32_t *own_index = NULL;
    if (!copy.global_index) {
        own_index = malloc(n * sizeof *own_index);
        for (size_t i = 0; own_index && i < n; ++i)
            own_index[i] = (uint32_t)i;
    }
    if (!integrator->halo || (!copy.global_index && !own_index)) {
        free(own_index);
        return FK_ERR_HOST_MEMORY;
    }
    status = fk__pinned_create(context, (3 * copy.send_count + 1) * sizeof(double),
                               &integrator->send_pinned, (void **)&integrator->send_host,
                               "the sent positions");
    if (status == FK_OK)
        status = fk__pinned_create(context, (3 * copy.receive_count + 1) * sizeof(double),
                                   &integrator->receive_pinned, (void **)&integrator->receive_host,
                                   "the halo's positions");
    if (status != FK_OK) {
        free(own_index);
        return status;
    }
    for (size_t i = 0; copy.halo && i < n; ++i)
        integrator->halo[i] = copy.halo[i] != 0;
    const uint32_t *global_index = copy.global_index ? copy.global_index : own_index;
    status = part_buffer(integrator, &integrator->global_index, n * sizeof(cl_uint), global_index,
                         "the part's indices");
    free(own_index);
    if (status == FK_OK)
        status = part_buffer(integrator, &integrator->x_set, 3 * n * sizeof(double), NULL,
                             "the part's positions at set_state");
    if (status == FK_OK)
        status = part_buffer(integrator, &integrator->send_index, copy.send_count * sizeof(cl_uint),
                             copy.send, "the part's send indices");
    if (status == FK_OK)
        status =
            part_buffer(integrator, &integrator->receive_index,
                        copy.receive_count * sizeof(cl_uint), copy.receive, "the halo's indices");
    if (status == FK_OK)
        status = part_buffer(integrator, &integrator->send_values,
                             3 * copy.send_count * sizeof(double), NULL, "the sent positions");
    if (status == FK_OK)
        status = part_buffer(integrator, &integrator->receive_values,
                             3 * copy.receive_count * sizeof(double), NULL, "the halo's positions");
    if (status == FK_OK)
        status = part_buffer(integrator, &integrator->energy_largest_out, 2 * sizeof(double), NULL,
                             "energies");
    if (status == FK_OK)
        status = part_buffer(integrator, &integrator->energy_sums_out, 2 * sizeof(cl_long), NULL,
                             "energies");
    if (status == FK_OK)
        status = create_part_kernels(integrator);
    if (status == FK_OK)
        status = freeze_halo(integrator);
    if (status != FK_OK)
        return status; /* the buffers made so far go with the integrator */
    copy.global_index = NULL, copy.halo = NULL, copy.send = NULL, copy.receive = NULL;
    integrator->part = copy;
    integrator->has_part = 1;
    integrator->state_set = 0;
    return FK_OK;
}

uint64_t fk_integrator_step_index(const fk_integrator *integrator)
{
    return integrator ? integrator->step_index : 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* A part's step: the exchange after the drift, the decisions taken with the other parts */

static uint32_t local_votes(const fk_integrator *integrator)
{
    const cl_int n = (cl_int)integrator->count;
    const cl_int *flags = integrator->flags_host;
    return (flags[FLAG_MOVED] ? VOTE_MOVED : 0u) | (flags[FLAG_OVERFLOW] < n ? VOTE_OVERFLOW : 0u) |
           (flags[FLAG_NONFINITE] < n ? VOTE_NONFINITE : 0u) |
           (flags[FLAG_LEAVE] ? VOTE_LEAVE : 0u) | (flags[FLAG_FAR] ? VOTE_FAR : 0u);
}

/* This part's votes (VOTE_FAILED when status failed) combined over the parts into *votes. Every
 * part calls it whatever happened to it, so that none waits for a part that gave up. */
static fk_status part_vote(fk_integrator *integrator, fk_status status, uint32_t mask,
                           uint32_t *votes)
{
    uint32_t value = status == FK_OK ? (local_votes(integrator) & mask) : VOTE_FAILED;
    const fk_status reduced =
        integrator->part.reduce(integrator->part.user, FK_PART_REDUCE_OR, &value, 1);
    *votes = value;
    return status != FK_OK ? status : reduced;
}

/* What the combined votes mean for the step that led to them: this part's own failure keeps its
 * message (status), another part's is named as such. */
static fk_status part_verdict(fk_integrator *integrator, fk_status status, uint32_t votes,
                              uint64_t step)
{
    fk_context *context = integrator->context;
    const unsigned long long at = (unsigned long long)step;
    if (status == FK_OK && (local_votes(integrator) & (VOTE_NONFINITE | VOTE_OVERFLOW)) & votes &
                               (VOTE_NONFINITE | VOTE_OVERFLOW))
        status = flag_failure(integrator, step);
    if (status == FK_OK && (votes & VOTE_FAILED))
        status =
            fk__fail(context, FK_ERR_STATE, "another part of the system failed at step %llu", at);
    else if (status == FK_OK && (votes & VOTE_NONFINITE))
        status = fk__fail(context, FK_ERR_INVALID_INPUT,
                          "a force of another part is not finite (step %llu): use a smaller time "
                          "step",
                          at);
    else if (status == FK_OK && (votes & VOTE_OVERFLOW))
        status = fk__fail(context, FK_ERR_OVERFLOW,
                          "another part's %s sums left their range even at a new scale (step %llu)",
                          integrator->eval->state.accum->info.name, at);
    else if (status == FK_OK && (votes & VOTE_FAR))
        status = fk__fail(context, FK_ERR_INVALID_INPUT,
                          "a particle moved farther than %g (2 leave) along z since the part's "
                          "set_state (step %llu): the halo may miss its neighbours; use a smaller "
                          "time step or a wider margin",
                          2.0 * integrator->part.leave, at);
    if (status != FK_OK)
        integrator->state_set = 0;
    return status;
}

/* fixed64's scale (and the other data-scaled accumulators' parameters) for the whole system: each
 * part measures its bound, the parts take the maximum of each (every pair of the system is some
 * part's own particle's, so that is the bound one evaluation of the system would measure; a halo
 * copy's partial sums are below its owner's) and set it for the system's count. A part that
 * already failed (prior) takes part without measuring. */
static fk_status rescale_system(fk_integrator *integrator, fk_status prior)
{
    fk_eval *eval = integrator->eval;
    fk_status status = prior == FK_OK ? fk__eval_device_rescale(eval) : prior;
    if (!eval->state.accum->choose_parameters)
        return status;
    integrator->rescales++;
    double bound[3] = {0.0, 0.0, status == FK_OK ? 0.0 : 1.0};
    if (status == FK_OK)
        status = fk_eval_get_bound(eval, &bound[0], &bound[1]);
    const fk_status reduced =
        integrator->part.reduce(integrator->part.user, FK_PART_REDUCE_MAX, bound, 3);
    if (status == FK_OK)
        status = reduced;
    if (status == FK_OK && bound[2] > 0.0)
        status = fk__fail(integrator->context, FK_ERR_STATE,
                          "another part of the system failed to choose the %s scale",
                          eval->state.accum->info.name);
    if (status == FK_OK)
        status = fk_eval_set_bound(eval, bound[0], bound[1], integrator->part.system_count);
    return status;
}

/* The forces at the current positions, agreed usable by every part: after set_state (with a
 * scale chosen first unless kept) and after the lists' rebuild or an overflow. As one
 * integrator's resume: an overflow after a rebuild rescales once more. */
static fk_status part_settle(fk_integrator *integrator, fk_status status, int rescale_first,
                             uint64_t step)
{
    const uint32_t outcome = VOTE_OVERFLOW | VOTE_NONFINITE;
    if (rescale_first)
        status = rescale_system(integrator, status);
    if (status == FK_OK)
        status = forces_attempt(integrator);
    uint32_t votes = 0;
    status = part_vote(integrator, status, outcome, &votes);
    if (!rescale_first && (votes & outcome) == VOTE_OVERFLOW && !(votes & VOTE_FAILED)) {
        status = rescale_system(integrator, status);
        if (status == FK_OK)
            status = forces_attempt(integrator);
        status = part_vote(integrator, status, outcome, &votes);
    }
    return part_verdict(integrator, status, votes, step);
}

/* After the drift: the send particles' positions to the caller, the halo's back (the exchange is
 * called whatever happened before it: the other parts wait for it). */
static fk_status part_exchange(fk_integrator *integrator, fk_status status)
{
    fk_context *context = integrator->context;
    cl_command_queue queue = context->queue;
    const cl_uint sends = (cl_uint)integrator->part.send_count;
    const cl_uint receives = (cl_uint)integrator->part.receive_count;
    if (status == FK_OK && sends)
        status = FK__SET_ARGS(context, integrator->gather, "fk_integrate_gather", 0, FK__ARG(sends),
                              FK__ARG(integrator->send_index), FK__ARG(integrator->x),
                              FK__ARG(integrator->send_values));
    if (status == FK_OK && sends)
        status = enqueue_kernel(integrator, integrator->gather, sends, "fk_integrate_gather");
    cl_int err = CL_SUCCESS;
    if (status == FK_OK && sends)
        err = clEnqueueReadBuffer(queue, integrator->send_values, CL_TRUE, 0,
                                  3 * (size_t)sends * sizeof(double), integrator->send_host, 0,
                                  NULL, NULL);
    if (status == FK_OK && err != CL_SUCCESS)
        status = fk__cl_fail(context, "clEnqueueReadBuffer (the sent positions)", err);
    const fk_status exchanged = integrator->part.exchange(
        integrator->part.user, integrator->send_host, integrator->receive_host);
    if (status == FK_OK && exchanged != FK_OK)
        status = fk__fail(context, exchanged, "the part's exchange failed");
    if (status != FK_OK || !receives)
        return status;
    /* The host buffer stays until the next step's blocking read, which the in-order queue puts
     * after this write: no wait here. */
    err = clEnqueueWriteBuffer(queue, integrator->receive_values, CL_FALSE, 0,
                               3 * (size_t)receives * sizeof(double), integrator->receive_host, 0,
                               NULL, NULL);
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, "clEnqueueWriteBuffer (the halo's positions)", err);
    status =
        FK__SET_ARGS(context, integrator->scatter, "fk_integrate_scatter", 0, FK__ARG(receives),
                     FK__ARG(integrator->receive_index), FK__ARG(integrator->receive_values),
                     FK__ARG(integrator->x), FK__ARG(integrator->eval->state.body));
    return status == FK_OK
               ? enqueue_kernel(integrator, integrator->scatter, receives, "fk_integrate_scatter")
               : status;
}

/* One step of a part; *stop when an own particle of some part moved farther than leave. */
static fk_status part_step(fk_integrator *integrator, int *stop)
{
    const uint64_t step = integrator->step_index + 1;
    fk_status status = reset_flags(integrator);
    if (status == FK_OK)
        status = enqueue_step(integrator, integrator->step_index, 0);
    status = part_exchange(integrator, status);
    if (status == FK_OK)
        status = enqueue_forces_into(integrator, integrator->force);
    if (status == FK_OK)
        status = read_flags(integrator);
    uint32_t votes = 0;
    status = part_vote(integrator, status, ~0u, &votes);
    const uint32_t failures = VOTE_FAILED | VOTE_NONFINITE | VOTE_FAR;
    if (status != FK_OK || (votes & failures))
        return part_verdict(integrator, status, votes & failures, step);
    integrator->forces_target = integrator->force;
    if (votes & VOTE_MOVED) {
        integrator->interval = integrator->since_rebuild + 1;
        integrator->since_rebuild = 0;
        status = part_settle(integrator, prepare_lists(integrator), 0, step);
    } else if (votes & VOTE_OVERFLOW) {
        status = part_settle(integrator, FK_OK, 1, step);
    }
    if (status != FK_OK)
        return status;
    integrator->step_index = step;
    integrator->since_rebuild += 1;
    *stop = (votes & VOTE_LEAVE) != 0;
    integrator->leave_pending = *stop;
    return FK_OK;
}

static fk_status part_steps(fk_integrator *integrator, uint64_t n_steps)
{
    fk_status status = FK_OK;
    int stop =
        integrator->leave_pending; /* the last call ended on a "leave": none until set_state */
    for (uint64_t s = 0; status == FK_OK && !stop && s < n_steps; ++s)
        status = part_step(integrator, &stop);
    return status;
}

/* cl/integrate.cl's fk_energy_exponent on the host: 2^k keeps the sum of count terms below 2^62
 * when the largest is top. */
static int energy_exponent(double top, size_t count)
{
    int exponent = 0;
    frexp(top, &exponent);
    int bits = 0;
    for (size_t c = count; c; c >>= 1)
        ++bits;
    const int k = 62 - exponent - bits;
    return k < -1000 ? -1000 : (k > 1000 ? 1000 : k);
}

static fk_status enqueue_energy_pass(fk_integrator *integrator, cl_kernel kernel, cl_mem out,
                                     void *host, size_t bytes, const char *name)
{
    fk_context *context = integrator->context;
    const size_t group = (size_t)energy_group(context);
    cl_int err =
        clEnqueueNDRangeKernel(context->queue, kernel, 1, NULL, &group, &group, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(context->queue, out, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
    return err == CL_SUCCESS ? FK_OK : fk__cl_fail(context, name, err);
}

/* A part's energies: the largest terms over every part, then the integer sums at the system's
 * scales added over the parts: the bits of fk_integrate_energies on the whole system. The reduces
 * are made whatever happened before (status), with a failure flag beside the values. */
static fk_status part_energies(fk_integrator *integrator, fk_status status, cl_uint count,
                               double values[2])
{
    fk_context *context = integrator->context;
    const cl_uint n = (cl_uint)integrator->count;
    double largest[3] = {0.0, 0.0, 0.0};
    if (status == FK_OK)
        status = FK__SET_ARGS(context, integrator->energy_largest, "fk_integrate_energy_largest", 0,
                              FK__ARG(n), FK__ARG(count), FK__ARG(integrator->v),
                              FK__ARG(integrator->kinetic_mass), FK__ARG(integrator->potential),
                              FK__ARG(integrator->inverse_mass),
                              FK__ARG(integrator->energy_largest_out));
    if (status == FK_OK)
        status = enqueue_energy_pass(integrator, integrator->energy_largest,
                                     integrator->energy_largest_out, largest,
                                     count * sizeof(double), "fk_integrate_energy_largest");
    largest[2] = status == FK_OK ? 0.0 : 1.0;
    fk_status reduced =
        integrator->part.reduce(integrator->part.user, FK_PART_REDUCE_MAX, largest, 3);
    if (status == FK_OK)
        status = reduced;
    const size_t system = integrator->part.system_count;
    const cl_int k0 = energy_exponent(largest[0], system), k1 = energy_exponent(largest[1], system);
    cl_long sums_device[2] = {0, 0};
    if (status == FK_OK && largest[2] == 0.0)
        status = FK__SET_ARGS(context, integrator->energy_sums, "fk_integrate_energy_sums", 0,
                              FK__ARG(n), FK__ARG(count), FK__ARG(integrator->v),
                              FK__ARG(integrator->kinetic_mass), FK__ARG(integrator->potential),
                              FK__ARG(integrator->inverse_mass), FK__ARG(k0), FK__ARG(k1),
                              FK__ARG(integrator->energy_sums_out));
    if (status == FK_OK && largest[2] == 0.0)
        status =
            enqueue_energy_pass(integrator, integrator->energy_sums, integrator->energy_sums_out,
                                sums_device, count * sizeof(cl_long), "fk_integrate_energy_sums");
    int64_t sums[3] = {sums_device[0], sums_device[1], status == FK_OK ? 0 : 1};
    reduced = integrator->part.reduce(integrator->part.user, FK_PART_REDUCE_SUM, sums, 3);
    if (status == FK_OK)
        status = reduced;
    if (status == FK_OK && (largest[2] != 0.0 || sums[2] != 0))
        status = fk__fail(context, FK_ERR_STATE,
                          "another part of the system failed to sum its energies");
    if (status != FK_OK)
        return status;
    values[0] = ldexp((double)sums[0], -k0);
    values[1] = ldexp((double)sums[1], -k1);
    return FK_OK;
}

fk_status fk_integrator_step(fk_integrator *integrator, uint64_t n_steps)
{
    if (!integrator)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = begin(integrator, 1, "fk_integrator_step");
    if (status != FK_OK)
        return status;
    fk_eval *eval = integrator->eval;
    status = fk__eval_device_begin(eval);
    if (status != FK_OK)
        return status;
    if (integrator->lists && eval->state.variant.cell_rebuilds != integrator->seen_rebuilds) {
        /* The caller's own updates rebuilt the lists from other positions: ours again. */
        const cl_uint count = (cl_uint)integrator->count;
        const cl_double4 box = box4(integrator);
        status = FK__SET_ARGS(integrator->context, integrator->set, "fk_integrate_set", 0,
                              FK__ARG(count), FK__ARG(integrator->x), FK__ARG(box),
                              FK__ARG(eval->state.body));
        if (status == FK_OK)
            status =
                enqueue_kernel(integrator, integrator->set, integrator->count, "fk_integrate_set");
        if (status == FK_OK)
            status = prepare_lists(integrator);
        if (status != FK_OK) {
            integrator->state_set = 0;
            clFinish(integrator->context->queue);
            return status;
        }
    }
    uint64_t remaining = integrator->has_part ? 0 : n_steps;
    if (integrator->has_part)
        status = part_steps(integrator, n_steps);
    while (status == FK_OK && remaining > 0) {
        const uint64_t size = group_size(integrator, remaining);
        status = reset_flags(integrator);
        for (uint64_t s = 0; status == FK_OK && s < size; ++s) {
            status = enqueue_step(integrator, integrator->step_index + s, (cl_int)s);
            if (status == FK_OK && !integrator->hermite)
                status = enqueue_forces_into(integrator, integrator->force);
        }
        if (status == FK_OK)
            status = read_flags(integrator);
        if (status != FK_OK)
            break;
        cl_int halt = integrator->flags_host[FLAG_HALT];
        const cl_int n = (cl_int)integrator->count, last = (cl_int)size - 1;
        if (halt < 0 && (integrator->flags_host[FLAG_MOVED + (last & 1)] != 0 ||
                         integrator->flags_host[FLAG_OVERFLOW] < n ||
                         integrator->flags_host[FLAG_NONFINITE] < n))
            halt = last; /* the verdict on the group's last step is the host's */
        if (halt < 0) {
            integrator->step_index += size;
            integrator->since_rebuild += size;
            remaining -= size;
            continue;
        }
        /* Steps 0 .. halt - 1 of the group are done, step halt up to its forces. */
        integrator->step_index += (uint64_t)halt;
        integrator->since_rebuild += (uint64_t)halt;
        remaining -= (uint64_t)halt;
        status = resume(integrator, halt);
        if (status == FK_OK) {
            integrator->step_index += 1;
            integrator->since_rebuild += 1;
            remaining -= 1;
        }
    }
    if (status == FK_OK)
        status = close_step(integrator);
    if (status == FK_OK) {
        const cl_int err = clFlush(integrator->context->queue);
        if (err != CL_SUCCESS)
            status = fk__cl_fail(integrator->context, "clFlush", err);
    }
    if (status != FK_OK) {
        integrator->state_set = 0;
        clFinish(integrator->context->queue);
    }
    return status;
}

/* After the last step's closing kick: a force that was not finite there is reported now. */
static fk_status check_last_kick(fk_integrator *integrator)
{
    fk_status status = read_flags(integrator);
    if (status == FK_OK && integrator->flags_host[FLAG_NONFINITE] < (cl_int)integrator->count)
        status = flag_failure(integrator, integrator->step_index);
    return status;
}

fk_status fk_integrator_get_state(fk_integrator *integrator, double *positions, double *velocities,
                                  uint64_t *step)
{
    if (!integrator)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = begin(integrator, 1, "fk_integrator_get_state");
    if (status == FK_OK)
        status = check_last_kick(integrator);
    if (status != FK_OK)
        return status;
    cl_command_queue queue = integrator->context->queue;
    const size_t bytes = 3 * integrator->count * sizeof(double);
    cl_int err = CL_SUCCESS;
    if (positions)
        err =
            clEnqueueReadBuffer(queue, integrator->x, CL_TRUE, 0, bytes, positions, 0, NULL, NULL);
    if (err == CL_SUCCESS && velocities)
        err =
            clEnqueueReadBuffer(queue, integrator->v, CL_TRUE, 0, bytes, velocities, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return fk__cl_fail(integrator->context, "clEnqueueReadBuffer (state)", err);
    if (step)
        *step = integrator->step_index;
    return FK_OK;
}

/* Hermite's last evaluation was at the predicted positions: the potentials at the corrected
 * ones, from one more evaluation (into a scratch buffer: the trajectory does not see it). An
 * overflow there is reported, not rescaled, so that asking for energies never changes the
 * trajectory. */
static fk_status hermite_potentials(fk_integrator *integrator)
{
    fk_context *context = integrator->context;
    fk_eval *eval = integrator->eval;
    fk_status status = fk__eval_device_begin(eval);
    const cl_uint count = (cl_uint)integrator->count;
    const cl_double4 box = box4(integrator);
    if (status == FK_OK)
        status = FK__SET_ARGS(context, integrator->set, "fk_integrate_set", 0, FK__ARG(count),
                              FK__ARG(integrator->x), FK__ARG(box), FK__ARG(eval->state.body));
    if (status == FK_OK)
        status = enqueue_kernel(integrator, integrator->set, integrator->count, "fk_integrate_set");
    if (status == FK_OK)
        status = write_velocities(integrator);
    integrator->forces_target = integrator->force_scratch;
    if (status == FK_OK)
        status = forces_attempt(integrator);
    if (status == FK_OK && (integrator->flags_host[FLAG_OVERFLOW] < (cl_int)count))
        status = fk__fail(context, FK_ERR_OVERFLOW,
                          "the potential energy: particle %d's sum left the %s accumulator's range "
                          "at the corrected positions (the state is kept)",
                          integrator->flags_host[FLAG_OVERFLOW], eval->state.accum->info.name);
    return status;
}

fk_status fk_integrator_energies(fk_integrator *integrator, double *kinetic, double *potential)
{
    if (!integrator || (!kinetic && !potential))
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = integrator->context;
    fk_status status = begin(integrator, 1, "fk_integrator_energies");
    if (status != FK_OK)
        return status;
    if (potential && !integrator->has_potential)
        return fk__fail(context, FK_ERR_STATE,
                        "the potential energy needs the evaluation's potentials "
                        "(fk_eval_config.potential)");
    status = check_last_kick(integrator);
    if (status == FK_OK && potential && integrator->hermite)
        status = hermite_potentials(integrator);
    if (status != FK_OK && !integrator->has_part) /* a part takes part in the sums regardless */
        return status;
    const cl_uint n = (cl_uint)integrator->count, count = integrator->has_potential ? 2 : 1;
    if (integrator->has_part) {
        double values[2] = {0.0, 0.0};
        status = part_energies(integrator, status, count, values);
        if (status == FK_OK && kinetic)
            *kinetic = values[0];
        if (status == FK_OK && potential)
            *potential = values[1];
        return status;
    }
    status = FK__SET_ARGS(context, integrator->energies, "fk_integrate_energies", 0, FK__ARG(n),
                          FK__ARG(count), FK__ARG(integrator->v), FK__ARG(integrator->kinetic_mass),
                          FK__ARG(integrator->potential), FK__ARG(integrator->energy_out));
    const size_t group = (size_t)energy_group(context);
    cl_int err = CL_SUCCESS;
    if (status == FK_OK)
        err = clEnqueueNDRangeKernel(context->queue, integrator->energies, 1, NULL, &group, &group,
                                     0, NULL, NULL);
    cl_double values[2] = {0, 0};
    if (status == FK_OK && err == CL_SUCCESS)
        err = clEnqueueReadBuffer(context->queue, integrator->energy_out, CL_TRUE, 0,
                                  count * sizeof(cl_double), values, 0, NULL, NULL);
    if (status == FK_OK && err != CL_SUCCESS)
        status = fk__cl_fail(context, "fk_integrate_energies", err);
    if (status != FK_OK)
        return status;
    if (kinetic)
        *kinetic = values[0];
    if (potential)
        *potential = values[1];
    return FK_OK;
}

fk_status fk_integrator_counters(const fk_integrator *integrator, uint64_t *rebuilds,
                                 uint64_t *rescales, uint64_t *syncs)
{
    if (!integrator)
        return FK_ERR_INVALID_ARGUMENT;
    if (rebuilds)
        *rebuilds = integrator->rebuilds;
    if (rescales)
        *rescales = integrator->rescales;
    if (syncs)
        *syncs = integrator->syncs;
    return FK_OK;
}

fk_status fk__integrator_noise(fk_integrator *integrator, uint64_t step, double *out)
{
    if (!integrator || !out)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = integrator->context;
    fk__clear_error(context);
    const size_t n = integrator->count;
    cl_mem buffer = NULL;
    fk_status status = create_buffer(integrator, &buffer, 3 * n * sizeof(double), NULL, "noise");
    if (status != FK_OK)
        return status;
    const cl_uint count = (cl_uint)n;
    const uint64_t seed = integrator->config.seed;
    const cl_uint seed_lo = (cl_uint)seed, seed_hi = (cl_uint)(seed >> 32);
    const cl_uint step_lo = (cl_uint)step, step_hi = (cl_uint)(step >> 32);
    status = FK__SET_ARGS(context, integrator->noise, "fk_integrate_noise", 0, FK__ARG(count),
                          FK__ARG(seed_lo), FK__ARG(seed_hi), FK__ARG(step_lo), FK__ARG(step_hi),
                          FK__ARG(buffer));
    if (status == FK_OK)
        status = enqueue_kernel(integrator, integrator->noise, n, "fk_integrate_noise");
    if (status == FK_OK) {
        const cl_int err = clEnqueueReadBuffer(context->queue, buffer, CL_TRUE, 0,
                                               3 * n * sizeof(double), out, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            status = fk__cl_fail(context, "clEnqueueReadBuffer (noise)", err);
    }
    clReleaseMemObject(buffer);
    return status;
}

/* The forces of the current step as the evaluation decoded them (force_components values per
 * particle, eval->result_size bytes each), read to the host or replaced from it. */
fk_status fk__integrator_forces(fk_integrator *integrator, double *forces, int write)
{
    if (!integrator || !forces)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = begin(integrator, 1, "fk__integrator_forces");
    if (status == FK_OK && !write)
        status = check_last_kick(integrator);
    if (status != FK_OK)
        return status;
    fk_context *context = integrator->context;
    const fk_eval *eval = integrator->eval;
    const size_t values = integrator->count * eval->state.kernel->info.force_components;
    const size_t bytes = values * eval->result_size;
    cl_mem buffer = forces_of(integrator, integrator->step_index);
    float *narrow = NULL;
    void *host = forces;
    if (eval->result_size == sizeof(float)) { /* float results: convert (exactly, on a write */
        narrow = malloc(bytes);               /* of values that were read as floats) */
        if (!narrow)
            return FK_ERR_HOST_MEMORY;
        for (size_t k = 0; write && k < values; ++k)
            narrow[k] = (float)forces[k];
        host = narrow;
    }
    const cl_int err =
        write ? clEnqueueWriteBuffer(context->queue, buffer, CL_TRUE, 0, bytes, host, 0, NULL, NULL)
              : clEnqueueReadBuffer(context->queue, buffer, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
    for (size_t k = 0; narrow && !write && err == CL_SUCCESS && k < values; ++k)
        forces[k] = (double)narrow[k];
    free(narrow);
    return err == CL_SUCCESS
               ? FK_OK
               : fk__cl_fail(
                     context,
                     write ? "clEnqueueWriteBuffer (forces)" : "clEnqueueReadBuffer (forces)", err);
}
