/*
 * The simulation driver (src/support/simulate*.c) and the evaluation's update fast path
 * (fk_eval_update_positions), on the device:
 *
 * - A two-body circular orbit (G = 1, masses 1/2, separation 1, period 2 pi) with ga and velocity
 *   Verlet, and with gaj and the Hermite integrator: the energy stays within a stated tolerance
 *   of its initial value, and the trajectory follows a host integration in double (Verlet, the
 *   same scheme with exact forces) or the exact circle (Hermite).
 * - A 108-particle LJ fluid (rc = 2.5, density 0.8, T = 1) for 300 steps with the float and the
 *   double accumulators: the initial potential energy agrees with the double host reference, and
 *   every sampled energy is finite and within 1e-3 of E0 (relative).
 * - Checkpoints: a written checkpoint reads back bit for bit; a run restored from one continues
 *   bit-identically to an uninterrupted run (lj with float, all-pairs and cells rebuilt every
 *   step, gaj with Hermite, float and double: the double run's jerks are not floats); truncated,
 *   malformed and future-version files are rejected with FK_ERR_PARSE, a missing one FK_ERR_IO.
 * - fk_eval_update_positions gives the bits set_particles gives for the same positions (float,
 *   fixed64 whose scale must follow the data, gaj velocities, exclusions subtracted afterwards,
 *   and the other pair loops where the library has them); rejects NaN, and calls before
 *   set_particles; a coincident molecular pair gives NaN forces (float) or FK_ERR_OVERFLOW
 *   (fixed64), never silently finite numbers, and stops a simulation with a message.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "support/generate.h"
#include "core/internal.h"
#include "forcekit/tools.h"
#include "support/simulate.h"
#include "support/systems.h"
#include "test_support.h"

/* Velocity Verlet of the lj fluid (dt 0.005, cutoff 2.5) in its periodic box, with accum. */
static fkt_sim_config lj_fluid_config(const char *accum, const double box[3])
{
    fkt_sim_config config = {.integrator = FKT_INTEGRATOR_VERLET, .dt = 0.005};
    config.eval.kernel = "lj";
    config.eval.accum = accum;
    config.eval.cutoff = 2.5;
    memcpy(config.eval.box, box, sizeof config.eval.box);
    return config;
}

static fkt_sim *create_sim(const fkt_sim_config *config, const fkt_particle_set *set)
{
    fkt_sim *sim = NULL;
    char error[1024] = "";
    fk_status status = fkt_sim_create(fk_test_context, config, set, &sim, error, sizeof error);
    if (status != FK_OK)
        fail_msg("fkt_sim_create: %s: %s", fk_status_string(status), error);
    return sim;
}

static void step_sim(fkt_sim *sim, unsigned steps)
{
    for (unsigned s = 0; s < steps; ++s) {
        fk_status status = fkt_sim_step(sim);
        if (status != FK_OK)
            fail_msg("step %llu: %s: %s", (unsigned long long)sim->step, fk_status_string(status),
                     sim->message);
    }
}

static double sim_energy(fkt_sim *sim)
{
    double kinetic = NAN, potential = NAN;
    fk_status status = fkt_sim_energy(sim, &kinetic, &potential);
    if (status != FK_OK)
        fail_msg("energy: %s: %s", fk_status_string(status), sim->message);
    return kinetic + potential;
}

/* Two bodies of mass 1/2 at (+-1/2, 0, 0) with velocities (0, +-1/2, 0): a circular orbit of
 * angular velocity 1; E = 2 (1/2 * 1/2 * 1/4) - 1/4 = -1/8. */
static void two_body(fkt_particle_set *set)
{
    assert_int_equal(fkt_particle_set_alloc(set, FKT_LAYOUT_XYZM_VEL, 2), FK_OK);
    for (int b = 0; b < 2; ++b) {
        const double sign = b == 0 ? 1.0 : -1.0;
        set->position[3 * b] = 0.5 * sign;
        set->velocity[3 * b + 1] = 0.5 * sign;
        set->mass[b] = 0.5;
    }
}

/* Velocity Verlet with the exact two-body accelerations, in double on the host. */
static void host_verlet(double x[6], double v[6], double dt, unsigned steps)
{
    double a[6];
    for (unsigned s = 0; s <= steps; ++s) {
        const double d[3] = {x[3] - x[0], x[4] - x[1], x[5] - x[2]};
        const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        const double g = 0.5 / (r2 * sqrt(r2)); /* m_other / r^3 */
        for (int k = 0; k < 3; ++k) {
            const double a0 = g * d[k];
            if (s > 0) { /* second kick of the previous step */
                v[k] += 0.5 * dt * a0;
                v[3 + k] -= 0.5 * dt * a0;
            }
            a[k] = a0;
            a[3 + k] = -a0;
        }
        if (s == steps)
            break;
        for (int m = 0; m < 6; ++m) {
            v[m] += 0.5 * dt * a[m];
            x[m] += dt * v[m];
        }
    }
}

static void test_two_body_verlet(void **state)
{
    (void)state;
    fkt_particle_set set = {0};
    two_body(&set);
    const double dt = 0.01;
    const unsigned steps = 1000; /* 1.6 orbits */
    fkt_sim_config config = {.integrator = FKT_INTEGRATOR_VERLET, .dt = dt};
    config.eval.kernel = "ga";
    config.eval.accum = "float";
    fkt_sim *sim = create_sim(&config, &set);
    const double e0 = sim_energy(sim);
    FK_ASSERT_NEAR(e0, -0.125, 1e-7); /* the potential comes from float pair terms */
    double worst = 0;
    for (unsigned s = 0; s < steps; ++s) {
        step_sim(sim, 1);
        worst = fmax(worst, fabs(sim_energy(sim) / e0 - 1));
    }
    double x[6], v[6];
    memcpy(x, set.position, sizeof x);
    memcpy(v, set.velocity, sizeof v);
    host_verlet(x, v, dt, steps);
    double distance = 0;
    for (int m = 0; m < 6; ++m)
        distance = fmax(distance, fabs(sim->position[m] - x[m]));
    fprintf(stderr,
            "two-body Verlet, dt = %g, %u steps: max |E/E0 - 1| = %.3g, max |x - x_host| "
            "= %.3g\n",
            dt, steps, worst, distance);
    /* On a circular orbit Verlet keeps the orbit circular (at a frequency off by O(dt^2)), so
     * its energy error is tiny; what shows is the float pair terms' rounding (~1e-7 relative;
     * measured 2.8e-7 on POCL). A first-order scheme would drift by ~1e-2 here. */
    assert_true(worst < 2e-6);
    assert_true(distance < 1e-5);
    fkt_sim_destroy(sim);
    fkt_particle_set_free(&set);
}

static void test_two_body_hermite(void **state)
{
    (void)state;
    fkt_particle_set set = {0};
    two_body(&set);
    const double dt = 0.01;
    const unsigned steps = 1000;
    fkt_sim_config config = {.integrator = FKT_INTEGRATOR_HERMITE, .dt = dt};
    config.eval.kernel = "gaj";
    config.eval.accum = "float"; /* two bodies: one term per sum, every accumulator alike */
    fkt_sim *sim = create_sim(&config, &set);
    const double e0 = sim_energy(sim);
    double worst = 0;
    for (unsigned s = 0; s < steps; ++s) {
        step_sim(sim, 1);
        worst = fmax(worst, fabs(sim_energy(sim) / e0 - 1));
    }
    const double t = dt * steps;
    const double exact[6] = {0.5 * cos(t), 0.5 * sin(t), 0, -0.5 * cos(t), -0.5 * sin(t), 0};
    double distance = 0;
    for (int m = 0; m < 6; ++m)
        distance = fmax(distance, fabs(sim->position[m] - exact[m]));
    fprintf(stderr,
            "two-body Hermite, dt = %g, %u steps: max |E/E0 - 1| = %.3g, max |x - x_exact| "
            "= %.3g\n",
            dt, steps, worst, distance);
    /* Fourth order: the truncation error is ~1e-10 here; what is left is the single-precision
     * pair terms' rounding (~1e-7 relative), in energy and in the phase (measured 2.5e-7 and
     * 1.2e-6 on POCL). */
    assert_true(worst < 2e-6);
    assert_true(distance < 1e-5);
    fkt_sim_destroy(sim);
    fkt_particle_set_free(&set);
}

static void test_lj_fluid_drift(void **state)
{
    (void)state;
    const size_t n = 108;
    const char *accums[] = {"float", "double"};
    fkt_particle_set set = {0};
    double box[3];
    const uint64_t seed = fk_test_seed();
    assert_int_equal(fkt_generate_lj_fluid(n, 0.8, 1.0, seed, FKT_LAYOUT_XYZ_TYPE, &set, box),
                     FK_OK);
    /* The double host reference's potential energy of the initial state. */
    fk_physics physics = {.cutoff = 2.5, .box = {box[0], box[1], box[2]}};
    fk_particles view = fkt_particle_set_view(&set);
    double *forces = calloc(3 * n, sizeof *forces), *potentials = calloc(n, sizeof *potentials);
    assert_non_null(forces);
    assert_non_null(potentials);
    assert_int_equal(fk_reference_forces("lj", &view, &physics, forces, potentials), FK_OK);
    double u_ref = 0, k_ref = 0;
    for (size_t i = 0; i < n; ++i) {
        u_ref += potentials[i];
        for (int k = 0; k < 3; ++k)
            k_ref += 0.5 * set.velocity[3 * i + (size_t)k] * set.velocity[3 * i + (size_t)k];
    }
    for (size_t a = 0; a < sizeof accums / sizeof accums[0]; ++a) {
        if (strcmp(accums[a], "double") == 0 && !fk_context_device(fk_test_context)->fp64)
            continue;
        fkt_sim_config config = lj_fluid_config(accums[a], box);
        fkt_sim *sim = create_sim(&config, &set);
        double kinetic, potential;
        assert_int_equal(fkt_sim_energy(sim, &kinetic, &potential), FK_OK);
        FK_ASSERT_NEAR(kinetic, k_ref, 1e-12 * fabs(k_ref));
        /* float pair terms: ~1e-7 relative each, the sum of ~n*40 of them */
        FK_ASSERT_NEAR(potential, u_ref, 1e-5 * fabs(u_ref));
        const double e0 = kinetic + potential;
        double worst = 0, last = e0;
        for (int s = 0; s < 300; ++s) {
            step_sim(sim, 1);
            if (s % 10 == 9) {
                last = sim_energy(sim);
                assert_true(isfinite(last));
                worst = fmax(worst, fabs(last / e0 - 1));
            }
        }
        fprintf(stderr,
                "LJ fluid N = %zu, %s: E0 = %.10g, after 300 steps drift %.3g, max "
                "deviation %.3g\n",
                n, accums[a], e0, fabs(last / e0 - 1), worst);
        assert_true(worst < 1e-3);
        fkt_sim_destroy(sim);
    }
    free(forces);
    free(potentials);
    fkt_particle_set_free(&set);
}

static char *temp_dir;

static char *temp_path(const char *name)
{
    if (!temp_dir)
        temp_dir = fk_test_make_temp_dir("fk-simulate-");
    assert_non_null(temp_dir);
    size_t size = strlen(temp_dir) + strlen(name) + 2;
    char *path = malloc(size);
    assert_non_null(path);
    snprintf(path, size, "%s/%s", temp_dir, name);
    return path;
}

static void assert_same_bits(const double *a, const double *b, size_t count, const char *what)
{
    if (memcmp(a, b, count * sizeof *a) != 0)
        for (size_t m = 0; m < count; ++m)
            if (memcmp(&a[m], &b[m], sizeof *a) != 0)
                fail_msg("%s differs at value %zu: %a vs %a", what, m, a[m], b[m]);
}

/* Runs 2 k steps straight, and k steps + checkpoint + restore + k steps in a fresh sim: the final
 * states must be bit-identical. Also checks the file's round trip. */
static void check_restart(const fkt_sim_config *config, const fkt_particle_set *set, unsigned k,
                          const char *name)
{
    fkt_sim *straight = create_sim(config, set);
    step_sim(straight, 2 * k);
    assert_int_equal(fkt_sim_sync(straight), FK_OK); /* the device path: the state comes back */

    fkt_sim *first = create_sim(config, set);
    fkt_sim_sample samples[2] = {{.step = 0}, {.step = k}};
    assert_int_equal(fkt_sim_energy(first, &samples[0].kinetic, &samples[0].potential), FK_OK);
    step_sim(first, k);
    assert_int_equal(fkt_sim_energy(first, &samples[1].kinetic, &samples[1].potential), FK_OK);
    assert_int_equal(fkt_sim_sync(first), FK_OK);
    double bound[2] = {0, 0}; /* the device path keeps fixed64's scale: the restart sets it */
    assert_int_equal(fk_eval_get_bound(first->eval, &bound[0], &bound[1]), FK_OK);
    fkt_sim_option options[2] = {{"kernel", ""}, {"device", "a name with spaces"}};
    snprintf(options[0].value, sizeof options[0].value, "%s", config->eval.kernel);
    char *path = temp_path(name);
    char error[1024] = "";
    assert_int_equal(
        fkt_sim_checkpoint_write(path, first, options, 2, samples, 2, error, sizeof error), FK_OK);
    fkt_sim_checkpoint checkpoint;
    fk_status status = fkt_sim_checkpoint_read(path, &checkpoint, error, sizeof error);
    if (status != FK_OK)
        fail_msg("%s", error);
    assert_int_equal(checkpoint.step, k);
    assert_int_equal(checkpoint.n, set->count);
    assert_int_equal(checkpoint.has_jerk, first->jerk != NULL);
    const size_t values = 3 * set->count;
    assert_same_bits(checkpoint.position, first->position, values, "position read back");
    assert_same_bits(checkpoint.velocity, first->velocity, values, "velocity read back");
    assert_same_bits(checkpoint.acceleration, first->acceleration, values,
                     "acceleration read back");
    if (first->jerk)
        assert_same_bits(checkpoint.jerk, first->jerk, values, "jerk read back");
    assert_int_equal(checkpoint.sample_count, 2);
    assert_memory_equal(checkpoint.samples, samples, sizeof samples);
    assert_string_equal(fkt_sim_checkpoint_option(&checkpoint, "device"), "a name with spaces");
    assert_string_equal(fkt_sim_checkpoint_option(&checkpoint, "kernel"), config->eval.kernel);
    assert_null(fkt_sim_checkpoint_option(&checkpoint, "accum"));
    fkt_sim_destroy(first);

    fkt_sim *resumed = create_sim(config, set);
    assert_int_equal(fkt_sim_restore(resumed, checkpoint.step, checkpoint.position,
                                     checkpoint.velocity, checkpoint.acceleration, checkpoint.jerk,
                                     config->device ? bound : NULL),
                     FK_OK);
    step_sim(resumed, k);
    assert_int_equal(fkt_sim_sync(resumed), FK_OK);
    assert_int_equal(resumed->step, 2 * k);
    assert_same_bits(resumed->position, straight->position, values, "restarted position");
    assert_same_bits(resumed->velocity, straight->velocity, values, "restarted velocity");
    const double e_straight = sim_energy(straight), e_resumed = sim_energy(resumed);
    assert_memory_equal(&e_straight, &e_resumed, sizeof e_straight);
    fkt_sim_checkpoint_free(&checkpoint);
    fkt_sim_destroy(resumed);
    fkt_sim_destroy(straight);
    free(path);
}

static void test_restart_bit_identical(void **state)
{
    (void)state;
    fkt_particle_set set = {0};
    double box[3];
    assert_int_equal(
        fkt_generate_lj_fluid(108, 0.8, 1.0, fk_test_seed(), FKT_LAYOUT_XYZ_TYPE, &set, box),
        FK_OK);
    fkt_sim_config config = lj_fluid_config("float", box);
    check_restart(&config, &set, 25, "lj.checkpoint");
    fkt_particle_set_free(&set);

    /* cells rebuilt at every step (a negative skin): the forces depend on the positions alone */
    assert_int_equal(
        fkt_generate_lj_fluid(500, 0.8, 1.0, fk_test_seed(), FKT_LAYOUT_XYZ_TYPE, &set, box),
        FK_OK);
    memcpy(config.eval.box, box, sizeof box);
    config.eval.algorithm = FK_ALGORITHM_CELLS;
    config.eval.skin = -1;
    check_restart(&config, &set, 25, "cells.checkpoint");
    fkt_particle_set_free(&set);

    assert_int_equal(fkt_generate_plummer(64, fk_test_seed(), FKT_LAYOUT_XYZM_VEL, &set), FK_OK);
    fkt_sim_config hermite = {.integrator = FKT_INTEGRATOR_HERMITE, .dt = 0.002};
    hermite.eval.kernel = "gaj";
    hermite.eval.accum = "float";
    hermite.eval.eps = 0.01;
    check_restart(&hermite, &set, 25, "gaj.checkpoint");
    fkt_particle_set_free(&set);
}

/* The device path (fk_integrator under fkt_sim, `simulate --integrate device`): restarts
 * bit-identical for Verlet (float), Langevin with fixed64 and lists kept over a skin (the
 * checkpoint's step keys the noise; fixed64's bound and the forces come back) and Hermite (whose
 * forces at the prediction no evaluation at the restart's positions gives); and from the same
 * forces the host loop's state bits. */
static void test_device_path(void **state)
{
    (void)state;
    if (!fk_context_device(fk_test_context)->fp64) {
        fprintf(stderr, "no fp64 on this device: no device integrator\n");
        return;
    }
    fkt_particle_set set = {0};
    double box[3];
    assert_int_equal(
        fkt_generate_lj_fluid(108, 0.8, 1.0, fk_test_seed(), FKT_LAYOUT_XYZ_TYPE, &set, box),
        FK_OK);
    fkt_sim_config config = lj_fluid_config("float", box);
    config.device = 1;
    check_restart(&config, &set, 25, "device-lj.checkpoint");
    /* the host loop from the same start: the same operations on the same forces */
    fkt_sim *device = create_sim(&config, &set);
    config.device = 0;
    fkt_sim *host = create_sim(&config, &set);
    assert_null(host->integrator);
    assert_non_null(device->integrator);
    assert_int_equal(fkt_sim_advance(device, 30), FK_OK);
    assert_int_equal(fkt_sim_advance(host, 30), FK_OK);
    assert_int_equal(fkt_sim_sync(device), FK_OK);
    assert_same_bits(device->position, host->position, 3 * set.count, "device path position");
    assert_same_bits(device->velocity, host->velocity, 3 * set.count, "device path velocity");
    fkt_sim_destroy(device);
    fkt_sim_destroy(host);
    /* Langevin is the device's only */
    config.integrator = FKT_INTEGRATOR_LANGEVIN;
    config.temperature = 1.5;
    config.friction = 2.0;
    config.seed = 7;
    fkt_sim *refused = NULL;
    char error[1024] = "";
    assert_int_equal(fkt_sim_create(fk_test_context, &config, &set, &refused, error, sizeof error),
                     FK_ERR_INVALID_ARGUMENT);
    assert_null(refused);
    fkt_particle_set_free(&set);

    assert_int_equal(
        fkt_generate_lj_fluid(500, 0.8, 1.0, fk_test_seed(), FKT_LAYOUT_XYZ_TYPE, &set, box),
        FK_OK);
    memcpy(config.eval.box, box, sizeof box);
    config.device = 1;
    config.eval.accum = "fixed64";
    config.eval.reproducible = 1;
    config.eval.algorithm = FK_ALGORITHM_NEIGHBORS;
    config.eval.skin = 0.3;
    check_restart(&config, &set, 25, "device-langevin.checkpoint");
    fkt_particle_set_free(&set);

    assert_int_equal(fkt_generate_plummer(64, fk_test_seed(), FKT_LAYOUT_XYZM_VEL, &set), FK_OK);
    fkt_sim_config hermite = {.integrator = FKT_INTEGRATOR_HERMITE, .dt = 0.002, .device = 1};
    hermite.eval.kernel = "gaj";
    hermite.eval.accum = "float";
    hermite.eval.eps = 0.01;
    check_restart(&hermite, &set, 25, "device-gaj.checkpoint");
    fkt_particle_set_free(&set);
}

/* Appends the checksum line of the text in buffer, as the writer would after it. */
static void append_checksum(char *buffer, size_t size)
{
    const size_t length = strlen(buffer);
    snprintf(buffer + length, size - length, "checksum XXH3-64 %016llx\n",
             (unsigned long long)fkt_sim_checkpoint_checksum(buffer, length));
}

/* Hermite with the double accumulator: jerks that a float cannot hold, so the checkpoint must read
 * them back at full width for the restart to be bit-identical (the float run's jerks round-trip
 * even at float width). */
static void test_restart_hermite_double(void **state)
{
    (void)state;
    if (!fk_context_device(fk_test_context)->fp64) {
        fprintf(stderr, "no fp64 on this device: the double accumulator is not built\n");
        return;
    }
    fkt_particle_set set = {0};
    assert_int_equal(fkt_generate_plummer(64, fk_test_seed(), FKT_LAYOUT_XYZM_VEL, &set), FK_OK);
    fkt_sim_config hermite = {.integrator = FKT_INTEGRATOR_HERMITE, .dt = 0.002};
    hermite.eval.kernel = "gaj";
    hermite.eval.accum = "double";
    hermite.eval.eps = 0.01;
    /* the case this is about: some jerk is not a float */
    fkt_sim *sim = create_sim(&hermite, &set);
    step_sim(sim, 1);
    size_t wide = 0;
    for (size_t v = 0; v < 3 * set.count; ++v)
        wide += (double)(float)sim->jerk[v] != sim->jerk[v];
    fkt_sim_destroy(sim);
    assert_true(wide > 0);
    check_restart(&hermite, &set, 25, "gaj-double.checkpoint");
    fkt_particle_set_free(&set);
}

static void test_bad_checkpoints(void **state)
{
    (void)state;
    fkt_particle_set set = {0};
    two_body(&set);
    fkt_sim_config config = {.integrator = FKT_INTEGRATOR_VERLET, .dt = 0.01};
    config.eval.kernel = "ga";
    fkt_sim *sim = create_sim(&config, &set);
    char *path = temp_path("good.checkpoint");
    char error[1024] = "";
    fkt_sim_sample sample = {.step = 0, .kinetic = 0.125, .potential = -0.25};
    assert_int_equal(fkt_sim_checkpoint_write(path, sim, NULL, 0, &sample, 1, error, sizeof error),
                     FK_OK);
    FILE *file = fopen(path, "r");
    assert_non_null(file);
    char text[8192];
    const size_t length = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[length] = '\0';
    fkt_sim_checkpoint checkpoint;

    char *bad = temp_path("bad.checkpoint");
    /* truncated: every proper prefix that ends a line is rejected */
    for (size_t cut = 0; cut < length; ++cut) {
        if (cut && text[cut - 1] != '\n')
            continue;
        assert_int_equal(fk_test_write_file(bad, text, cut), 0);
        if (fkt_sim_checkpoint_read(bad, &checkpoint, error, sizeof error) != FK_ERR_PARSE)
            fail_msg("a checkpoint cut after %zu of %zu bytes was accepted", cut, length);
        assert_non_null(strstr(error, "bad.checkpoint"));
    }
    /* another version */
    char *edited = strdup(text);
    assert_non_null(edited);
    edited[strlen("forcekit-checkpoint ")] = '9';
    assert_int_equal(fk_test_write_file(bad, edited, length), 0);
    assert_int_equal(fkt_sim_checkpoint_read(bad, &checkpoint, error, sizeof error), FK_ERR_PARSE);
    assert_non_null(strstr(error, "version 9"));
    /* a number that is not one */
    memcpy(edited, text, length + 1);
    char *particles = strstr(edited, "particles\n");
    assert_non_null(particles);
    particles[strlen("particles\n")] = 'z';
    assert_int_equal(fk_test_write_file(bad, edited, length), 0);
    assert_int_equal(fkt_sim_checkpoint_read(bad, &checkpoint, error, sizeof error), FK_ERR_PARSE);
    /* text after the end */
    assert_int_equal(fk_test_write_file(bad, text, length), 0);
    file = fopen(bad, "a");
    assert_non_null(file);
    fputs("more\n", file);
    fclose(file);
    assert_int_equal(fkt_sim_checkpoint_read(bad, &checkpoint, error, sizeof error), FK_ERR_PARSE);
    /* missing */
    char *missing = temp_path("missing.checkpoint");
    assert_int_equal(fkt_sim_checkpoint_read(missing, &checkpoint, error, sizeof error), FK_ERR_IO);
    /* the good one still reads */
    assert_int_equal(fk_test_write_file(bad, text, length), 0);
    assert_int_equal(fkt_sim_checkpoint_read(bad, &checkpoint, error, sizeof error), FK_OK);
    fkt_sim_checkpoint_free(&checkpoint);
    /* an unwritable place fails cleanly (a missing directory: the user's to fix, exit 2) */
    assert_int_equal(fkt_sim_checkpoint_write("/nonexistent-dir/x.checkpoint", sim, NULL, 0,
                                              &sample, 1, error, sizeof error),
                     FK_ERR_INVALID_ARGUMENT);
    /* Issue #13: a header's counts drive no allocation before the data is read (a 71-byte file
     * asked for 24.7 GB; ASan stops at such a request). */
    char huge[200];
    snprintf(huge, sizeof huge,
             "forcekit-checkpoint %d\nstep 0\nn 1073741824\ncolumns 12\nsamples 4294967296\n",
             FKT_SIM_CHECKPOINT_VERSION);
    append_checksum(huge, sizeof huge); /* so that the parser reads the header */
    assert_int_equal(fk_test_write_file(bad, huge, strlen(huge)), 0);
    assert_int_equal(fkt_sim_checkpoint_read(bad, &checkpoint, error, sizeof error), FK_ERR_PARSE);
    assert_non_null(strstr(error, "truncated"));
    snprintf(huge, sizeof huge,
             "forcekit-checkpoint %d\nstep 0\nn 1073741824\ncolumns 12\nsamples 0\nparticles\n",
             FKT_SIM_CHECKPOINT_VERSION);
    append_checksum(huge, sizeof huge);
    assert_int_equal(fk_test_write_file(bad, huge, strlen(huge)), 0);
    assert_int_equal(fkt_sim_checkpoint_read(bad, &checkpoint, error, sizeof error), FK_ERR_PARSE);
    /* the checksum line comes where the first particle line should */
    assert_non_null(strstr(error, "expected 12 finite numbers"));
    /* an endless line (a checkpoint path naming /dev/zero) is input too large */
    assert_int_equal(fkt_sim_checkpoint_read("/dev/zero", &checkpoint, error, sizeof error),
                     FK_ERR_PARSE);
    assert_non_null(strstr(error, "input too large"));
    free(edited);
    free(bad);
    free(missing);
    free(path);
    fkt_sim_destroy(sim);
    fkt_particle_set_free(&set);
}
/* ---- checkpoint integrity (issue #32) ---------------------------------------------------------
 */

/* The file at path, whole, NUL-terminated; *length its size. */
static char *read_whole(const char *path, size_t *length)
{
    FILE *file = fopen(path, "rb");
    assert_non_null(file);
    size_t capacity = 1 << 16, used = 0;
    char *text = malloc(capacity);
    assert_non_null(text);
    size_t got;
    while ((got = fread(text + used, 1, capacity - used - 1, file)) > 0) {
        used += got;
        if (used + 1 == capacity) {
            capacity *= 2;
            text = realloc(text, capacity);
            assert_non_null(text);
        }
    }
    fclose(file);
    text[used] = '\0';
    *length = used;
    return text;
}

/* Reads text (length bytes) written to path: must be refused as damaged, naming the file. */
static void assert_damaged(const char *path, const char *text, size_t length, const char *what)
{
    fkt_sim_checkpoint checkpoint;
    char error[4608] = "";
    assert_int_equal(fk_test_write_file(path, text, length), 0);
    const fk_status status = fkt_sim_checkpoint_read(path, &checkpoint, error, sizeof error);
    if (status == FK_OK) {
        fkt_sim_checkpoint_free(&checkpoint);
        fail_msg("%s: accepted", what);
    }
    assert_int_equal(status, FK_ERR_PARSE);
    if (!strstr(error, "is damaged") || !strstr(error, path))
        fail_msg("%s: refused, but not as damaged: %s", what, error);
}

/* k steps of sim from the checkpoint at path, in a fresh simulation of config and set: the state
 * then (positions, velocities) into position and velocity (3 n each). */
static void restart_from(const char *path, const fkt_sim_config *config,
                         const fkt_particle_set *set, unsigned k, double *position,
                         double *velocity)
{
    fkt_sim_checkpoint checkpoint;
    char error[4608] = "";
    if (fkt_sim_checkpoint_read(path, &checkpoint, error, sizeof error) != FK_OK)
        fail_msg("%s", error);
    fkt_sim *resumed = create_sim(config, set);
    assert_int_equal(fkt_sim_restore(resumed, checkpoint.step, checkpoint.position,
                                     checkpoint.velocity, checkpoint.acceleration, checkpoint.jerk,
                                     NULL),
                     FK_OK);
    step_sim(resumed, k);
    memcpy(position, resumed->position, 3 * set->count * sizeof *position);
    memcpy(velocity, resumed->velocity, 3 * set->count * sizeof *velocity);
    fkt_sim_checkpoint_free(&checkpoint);
    fkt_sim_destroy(resumed);
}

/* A real checkpoint (108 lj particles at step 20, three energy samples) under every damage the
 * audit found accepted (3 of 20 bit flips in particle lines, a flipped energy sample, `step 20`
 * edited to `step 0`): 200 random single-bit flips anywhere in the particle lines, a flip in every
 * bit of one energy sample's digits, the step edit, a removed checksum line, and format 1 are
 * all refused as damaged (format 1: as unread). The same body with a recomputed checksum reads
 * (the checksum is the guard, and fkt_sim_checkpoint_checksum is the writer's). A CRLF copy reads
 * the same values and its restart ends in the same bits as the original's. */
static void test_checkpoint_integrity(void **state)
{
    (void)state;
    fkt_particle_set set = {0};
    double box[3];
    assert_int_equal(
        fkt_generate_lj_fluid(108, 0.8, 1.0, fk_test_seed(), FKT_LAYOUT_XYZ_TYPE, &set, box),
        FK_OK);
    const fkt_sim_config config = lj_fluid_config("float", box);
    fkt_sim *sim = create_sim(&config, &set);
    fkt_sim_sample samples[3];
    for (int s = 0; s < 3; ++s) {
        if (s)
            step_sim(sim, 10);
        samples[s].step = sim->step;
        assert_int_equal(fkt_sim_energy(sim, &samples[s].kinetic, &samples[s].potential), FK_OK);
    }
    fkt_sim_option options[1] = {{"kernel", "lj"}};
    char *path = temp_path("integrity.checkpoint"), *bad = temp_path("damaged.checkpoint");
    char error[4608] = "";
    assert_int_equal(
        fkt_sim_checkpoint_write(path, sim, options, 1, samples, 3, error, sizeof error), FK_OK);
    size_t length = 0;
    char *text = read_whole(path, &length);
    char *edited = malloc(2 * length + 64);
    assert_non_null(edited);
    /* the particle lines: from after "particles\n" to "end\n" */
    const char *particles = strstr(text, "\nparticles\n"), *end = strstr(text, "\nend\n");
    assert_non_null(particles);
    assert_non_null(end);
    const size_t first = (size_t)(particles - text) + strlen("\nparticles\n");
    const size_t last = (size_t)(end - text) + 1; /* one past the last particle line */
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    for (int flip = 0; flip < 200; ++flip) {
        memcpy(edited, text, length);
        const size_t at = first + (size_t)(fk_test_rng_uniform(&rng) * (double)(last - first));
        const int bit = (int)(fk_test_rng_uniform(&rng) * 8);
        edited[at] = (char)(edited[at] ^ (1 << bit));
        char what[96];
        snprintf(what, sizeof what, "bit %d of byte %zu (a particle line) flipped", bit, at);
        assert_damaged(bad, edited, length, what);
    }
    /* every bit of the last energy sample's characters but its line end */
    const char *sample = strstr(text, "\n20 ");
    assert_non_null(sample);
    const size_t sample_start = (size_t)(sample - text) + 1;
    const size_t sample_end = (size_t)(strchr(text + sample_start, '\n') - text);
    for (size_t at = sample_start; at < sample_end; ++at)
        for (int bit = 0; bit < 8; ++bit) {
            memcpy(edited, text, length);
            edited[at] = (char)(edited[at] ^ (1 << bit));
            assert_damaged(bad, edited, length, "a flipped energy sample");
        }
    /* `step 20` -> `step 0` (a shorter file) */
    const char *step = strstr(text, "\nstep 20\n");
    assert_non_null(step);
    const size_t step_at = (size_t)(step - text) + strlen("\nstep ");
    memcpy(edited, text, step_at);
    edited[step_at] = '0';
    memcpy(edited + step_at + 1, text + step_at + 2, length - step_at - 2);
    assert_damaged(bad, edited, length - 1, "step 20 edited to step 0");
    /* ... accepted once the checksum is the edited body's: the checksum is what refused it */
    const char *checksum_line = strstr(edited, "\nend\n");
    assert_non_null(checksum_line);
    size_t body = (size_t)(checksum_line - edited) + strlen("\nend\n");
    const int appended = snprintf(edited + body, 64, "checksum XXH3-64 %016llx\n",
                                  (unsigned long long)fkt_sim_checkpoint_checksum(edited, body));
    assert_int_equal(fk_test_write_file(bad, edited, body + (size_t)appended), 0);
    fkt_sim_checkpoint checkpoint;
    if (fkt_sim_checkpoint_read(bad, &checkpoint, error, sizeof error) != FK_OK)
        fail_msg("the edited body with its own checksum: %s", error);
    assert_int_equal(checkpoint.step, 0);
    fkt_sim_checkpoint_free(&checkpoint);
    /* no checksum line (cut after "end") */
    body = (size_t)(end - text) + strlen("\nend\n");
    assert_damaged(bad, text, body, "the checksum line removed");
    /* format 1: the same body under the old header, no checksum: refused, not trusted */
    memcpy(edited, text, body);
    edited[strlen("forcekit-checkpoint ")] = '1';
    assert_int_equal(fk_test_write_file(bad, edited, body), 0);
    assert_int_equal(fkt_sim_checkpoint_read(bad, &checkpoint, error, sizeof error), FK_ERR_PARSE);
    assert_non_null(strstr(error, "version 1 has no checksum"));

    /* CRLF line ends: the same checkpoint, and a restart from it ends in the same bits */
    size_t crlf_length = 0;
    for (size_t k = 0; k < length; ++k) {
        if (text[k] == '\n')
            edited[crlf_length++] = '\r';
        edited[crlf_length++] = text[k];
    }
    char *crlf = temp_path("crlf.checkpoint");
    assert_int_equal(fk_test_write_file(crlf, edited, crlf_length), 0);
    fkt_sim_checkpoint original, converted;
    assert_int_equal(fkt_sim_checkpoint_read(path, &original, error, sizeof error), FK_OK);
    if (fkt_sim_checkpoint_read(crlf, &converted, error, sizeof error) != FK_OK)
        fail_msg("the CRLF copy: %s", error);
    assert_int_equal(converted.step, original.step);
    assert_int_equal(converted.n, original.n);
    assert_int_equal(converted.sample_count, original.sample_count);
    assert_memory_equal(converted.samples, original.samples,
                        original.sample_count * sizeof *original.samples);
    assert_string_equal(fkt_sim_checkpoint_option(&converted, "kernel"), "lj");
    assert_same_bits(converted.position, original.position, 3 * original.n, "CRLF positions");
    assert_same_bits(converted.velocity, original.velocity, 3 * original.n, "CRLF velocities");
    assert_same_bits(converted.acceleration, original.acceleration, 3 * original.n,
                     "CRLF accelerations");
    fkt_sim_checkpoint_free(&original);
    fkt_sim_checkpoint_free(&converted);
    const size_t values = 3 * set.count;
    double *position[2], *velocity[2];
    for (int k = 0; k < 2; ++k) {
        position[k] = malloc(values * sizeof(double));
        velocity[k] = malloc(values * sizeof(double));
        assert_non_null(position[k]);
        assert_non_null(velocity[k]);
    }
    restart_from(path, &config, &set, 10, position[0], velocity[0]);
    restart_from(crlf, &config, &set, 10, position[1], velocity[1]);
    assert_same_bits(position[1], position[0], values, "positions after the CRLF restart");
    assert_same_bits(velocity[1], velocity[0], values, "velocities after the CRLF restart");
    for (int k = 0; k < 2; ++k) {
        free(position[k]);
        free(velocity[k]);
    }
    free(crlf);
    free(edited);
    free(text);
    free(bad);
    free(path);
    fkt_sim_destroy(sim);
    fkt_particle_set_free(&set);
}

/* Forces (and potentials) of one evaluation, read back. */
static void evaluate(fk_eval *eval, size_t n, size_t components, double *forces, double *potentials)
{
    fk_status status = fk_eval_compute(eval, NULL);
    if (status == FK_OK)
        status = fk_eval_read_forces(eval, forces);
    if (status == FK_OK && potentials)
        status = fk_eval_read_potentials(eval, potentials);
    if (status != FK_OK)
        fail_msg("%s: %s", fk_status_string(status), fk_context_last_error(fk_test_context));
    (void)n;
    (void)components;
}

/* set_particles(a); update(b) must give the bits of set_particles(b) on a fresh evaluation. */
static void check_update_matches(const fk_eval_config *config, const fk_particles *a,
                                 const fk_particles *b, const size_t *exclusions,
                                 size_t exclusion_count, const char *what)
{
    const size_t n = a->count;
    const size_t components = fk_kernel_find(config->kernel)->force_components;
    const clock_t start = clock();
    double *expected = calloc(n * components, sizeof(double));
    double *got = calloc(n * components, sizeof(double));
    double *expected_u = calloc(n, sizeof(double)), *got_u = calloc(n, sizeof(double));
    assert_true(expected && got && expected_u && got_u);
    fk_eval *fresh = NULL, *updated = NULL;
    fk_status status = fk_eval_create(fk_test_context, config, &fresh);
    if (status == FK_ERR_UNSUPPORTED) {
        fprintf(stderr, "%s: skipped (%s)\n", what, fk_context_last_error(fk_test_context));
        goto done;
    }
    assert_int_equal(status, FK_OK);
    assert_int_equal(fk_eval_create(fk_test_context, config, &updated), FK_OK);
    if (exclusion_count) {
        assert_int_equal(fk_eval_set_exclusions(fresh, exclusions, exclusion_count), FK_OK);
        assert_int_equal(fk_eval_set_exclusions(updated, exclusions, exclusion_count), FK_OK);
    }
    status = fk_eval_set_particles(fresh, b);
    if (status == FK_ERR_UNSUPPORTED) {
        fprintf(stderr, "%s: skipped (%s)\n", what, fk_context_last_error(fk_test_context));
        goto done;
    }
    assert_int_equal(status, FK_OK);
    evaluate(fresh, n, components, expected, expected_u);
    assert_int_equal(fk_eval_set_particles(updated, a), FK_OK);
    evaluate(updated, n, components, got, got_u);
    const double scale_before = fk__eval_accum_scale(updated);
    assert_int_equal(fk_eval_update_positions(updated, b->position, b->velocity), FK_OK);
    evaluate(updated, n, components, got, got_u);
    if (strcmp(config->accum, "fixed64") == 0) /* the data chose another scale */
        assert_true(fk__eval_accum_scale(updated) != scale_before);
    assert_same_bits(got, expected, n * components, what);
    assert_same_bits(got_u, expected_u, n, what);
    for (size_t m = 0; m < n * components; ++m)
        assert_true(isfinite(got[m]));
    fprintf(stderr, "update = set_particles, bit for bit: %s (%.1f s of CPU with the builds)\n",
            what, (double)(clock() - start) / CLOCKS_PER_SEC);
done:
    fk_eval_destroy(fresh);
    fk_eval_destroy(updated);
    free(expected);
    free(got);
    free(expected_u);
    free(got_u);
}

static void test_update_positions(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    /* gravity: new positions and velocities (gaj's jerk needs them) */
    const size_t n = 150;
    fkt_particle_set a = {0};
    assert_int_equal(fkt_generate_plummer(n, fk_test_seed(), FKT_LAYOUT_XYZM_VEL, &a), FK_OK);
    double *shrunk = malloc(3 * n * sizeof *shrunk), *faster = malloc(3 * n * sizeof *faster);
    assert_true(shrunk && faster);
    for (size_t m = 0; m < 3 * n; ++m) {
        shrunk[m] = 0.5 * a.position[m];
        faster[m] = 2.0 * a.velocity[m] + 0.01 * fk_test_rng_uniform(&rng);
    }
    fk_particles va = fkt_particle_set_view(&a), vb = va;
    vb.position = shrunk;
    vb.velocity = faster;
    fk_eval_config gravity = {.kernel = "ga", .accum = "float", .eps = 0.01, .potential = 1};
    check_update_matches(&gravity, &va, &vb, NULL, 0, "ga");
    gravity.kernel = "gaj";
    check_update_matches(&gravity, &va, &vb, NULL, 0, "gaj");

    /* molecular: ljc_constant in a periodic box with exclusions subtracted afterwards, and the
     * other pair loops */
    fkt_particle_set m = {0};
    double box[3];
    assert_int_equal(
        fkt_generate_lj_fluid(256, 0.8, 1.0, fk_test_seed(), FKT_LAYOUT_XYZQ_TYPE, &m, box), FK_OK);
    for (size_t i = 0; i < m.count; ++i)
        m.mass[i] = i % 2 ? 0.5 : -0.5;
    double *moved = malloc(3 * m.count * sizeof *moved);
    assert_non_null(moved);
    for (size_t q = 0; q < 3 * m.count; ++q) /* jitter, some leave the box */
        moved[q] = m.position[q] + 0.2 * (fk_test_rng_uniform(&rng) - 0.5);
    /* and one pair at 0.9 sigma: the largest pair term grows about 20-fold, so fixed64's scale
     * (a power of two from the largest term) must change with the update */
    for (int k = 0; k < 3; ++k)
        moved[3 + (size_t)k] = moved[(size_t)k] + (k == 0 ? 0.9 : 0.0);
    fk_particles ma = fkt_particle_set_view(&m), mb = ma;
    mb.position = moved;
    const size_t exclusions[] = {0, 1, 5, 9, 200, 17};
    fk_eval_config config = {
        .kernel = "ljc_constant", .accum = "float", .potential = 1, .cutoff = 2.5};
    memcpy(config.box, box, sizeof box);
    check_update_matches(&config, &ma, &mb, exclusions, 3, "ljc_constant exclusions afterwards");
    config.kernel = "lj";
    config.accum = "fixed64";
    check_update_matches(&config, &ma, &mb, NULL, 0, "lj fixed64");
    config.accum = "float";
    config.algorithm = FK_ALGORITHM_CELLS;
    check_update_matches(&config, &ma, &mb, NULL, 0, "lj cells");
    config.algorithm = FK_ALGORITHM_SYMMETRIC;
    check_update_matches(&config, &ma, &mb, NULL, 0, "lj symmetric");

    /* errors */
    fk_eval *eval = NULL;
    config.algorithm = FK_ALGORITHM_ALL_PAIRS;
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    assert_int_equal(fk_eval_update_positions(eval, moved, NULL), FK_ERR_STATE);
    assert_int_equal(fk_eval_set_particles(eval, &ma), FK_OK);
    assert_int_equal(fk_eval_update_positions(NULL, moved, NULL), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_eval_update_positions(eval, NULL, NULL), FK_ERR_INVALID_ARGUMENT);
    const double saved = moved[3 * 7 + 1];
    moved[3 * 7 + 1] = NAN;
    assert_int_equal(fk_eval_update_positions(eval, moved, NULL), FK_ERR_INVALID_INPUT);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "particle 7"));
    moved[3 * 7 + 1] = saved;
    /* a coincident pair (modulo the box): float gives non-finite forces for both particles (NaN
     * when the minimum image comes out exactly 0, inf when x + L rounds so that it is 1 ulp off) */
    for (int k = 0; k < 3; ++k)
        moved[3 * 4 + (size_t)k] = moved[3 * 3 + (size_t)k] + box[k];
    assert_int_equal(fk_eval_update_positions(eval, moved, NULL), FK_OK);
    double *forces = calloc(3 * m.count, sizeof *forces);
    assert_non_null(forces);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    assert_int_equal(fk_eval_read_forces(eval, forces), FK_OK);
    assert_true(!isfinite(forces[3 * 3]) && !isfinite(forces[3 * 4]));
    fk_eval_destroy(eval);
    /* fixed64, its scale chosen at every update: the update's pre-pass refuses the pair */
    fk_eval_config each = config;
    each.struct_size = sizeof each; /* the whole layout, so that scale_policy counts */
    each.accum = "fixed64";
    each.scale_policy = FK_SCALE_EACH_UPLOAD;
    assert_int_equal(fk_eval_create(fk_test_context, &each, &eval), FK_OK);
    assert_int_equal(fk_eval_set_particles(eval, &ma), FK_OK);
    assert_int_equal(fk_eval_update_positions(eval, moved, NULL), FK_ERR_OVERFLOW);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_ERR_STATE); /* set_particles needed again */
    fk_eval_destroy(eval);
    /* the default keeps the scale: the update runs no pre-pass, the compute overflows, and its
     * redo's pre-pass cannot hold a non-finite term either: reported, no numbers */
    config.accum = "fixed64";
    assert_int_equal(fk_eval_create(fk_test_context, &config, &eval), FK_OK);
    assert_int_equal(fk_eval_set_particles(eval, &ma), FK_OK);
    assert_int_equal(fk_eval_update_positions(eval, moved, NULL), FK_OK);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_ERR_OVERFLOW);
    assert_non_null(strstr(fk_context_last_error(fk_test_context), "fixed64"));
    assert_int_equal(fk_eval_read_forces(eval, forces), FK_ERR_STATE);
    fk_eval_destroy(eval);
    /* gaj without velocities */
    fk_eval_config gaj = {.kernel = "gaj", .eps = 0.01};
    assert_int_equal(fk_eval_create(fk_test_context, &gaj, &eval), FK_OK);
    assert_int_equal(fk_eval_set_particles(eval, &va), FK_OK);
    assert_int_equal(fk_eval_update_positions(eval, shrunk, NULL), FK_ERR_INVALID_ARGUMENT);
    fk_eval_destroy(eval);

    free(forces);
    free(moved);
    free(shrunk);
    free(faster);
    fkt_particle_set_free(&a);
    fkt_particle_set_free(&m);
}

static void test_energy_slope(void **state)
{
    (void)state;
    fkt_sim_sample samples[11];
    for (int s = 0; s < 11; ++s) {
        samples[s].step = (uint64_t)(100 * s);
        samples[s].kinetic = 1.0 + (s % 2 ? 1e-3 : -1e-3);
        samples[s].potential = -4.0 - (s % 2 ? 1e-3 : -1e-3) + 0.25 * (0.01 * 100 * s);
    }
    FK_ASSERT_NEAR(fkt_sim_energy_slope(samples, 11, 0.01), 0.25, 1e-12);
    assert_true(isnan(fkt_sim_energy_slope(samples, 1, 0.01)));
}

static void test_bad_configs(void **state)
{
    (void)state;
    fkt_particle_set set = {0};
    two_body(&set);
    fkt_sim *sim = NULL;
    char error[256] = "";
    fkt_sim_config config = {.integrator = FKT_INTEGRATOR_HERMITE, .dt = 0.01};
    config.eval.kernel = "ga";
    assert_int_equal(fkt_sim_create(fk_test_context, &config, &set, &sim, error, sizeof error),
                     FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(error, "gaj"));
    assert_null(sim);
    config.integrator = FKT_INTEGRATOR_VERLET;
    config.dt = 0;
    assert_int_equal(fkt_sim_create(fk_test_context, &config, &set, &sim, error, sizeof error),
                     FK_ERR_INVALID_ARGUMENT);
    config.dt = 0.01;
    double *velocity = set.velocity;
    set.velocity = NULL;
    assert_int_equal(fkt_sim_create(fk_test_context, &config, &set, &sim, error, sizeof error),
                     FK_ERR_INVALID_INPUT);
    set.velocity = velocity;
    /* coincident bodies without softening: the library's message comes through */
    set.position[0] = set.position[3];
    assert_int_equal(fkt_sim_create(fk_test_context, &config, &set, &sim, error, sizeof error),
                     FK_ERR_INVALID_INPUT);
    assert_non_null(strstr(error, "same position"));
    fkt_particle_set_free(&set);
}

/* Two particles put on top of each other: the step fails with a message naming the particle
 * and the remedy, and the state stays that of the last completed step. */
/* The element-wise passes on OpenMP's threads (parallel_min 0: every pass, at any N) against the
 * same run on one thread (parallel_min SIZE_MAX): the same trajectory bit for bit, Verlet in a
 * periodic box (the wrap) and Hermite. Built without OpenMP both runs are serial and agree
 * trivially; CI's build has it. */
static void test_parallel_passes(void **state)
{
    (void)state;
    fkt_particle_set lj = {0}, plummer = {0};
    double box[3];
    assert_int_equal(
        fkt_generate_lj_fluid(500, 0.8, 1.0, fk_test_seed(), FKT_LAYOUT_XYZ_TYPE, &lj, box), FK_OK);
    assert_int_equal(fkt_generate_plummer(200, fk_test_seed(), FKT_LAYOUT_XYZM_VEL, &plummer),
                     FK_OK);
    fkt_sim_config verlet = lj_fluid_config("float", box);
    fkt_sim_config hermite = {.integrator = FKT_INTEGRATOR_HERMITE, .dt = 0.002};
    hermite.eval.kernel = "gaj";
    hermite.eval.accum = "float";
    hermite.eval.eps = 0.01;
    const fkt_sim_config *configs[2] = {&verlet, &hermite};
    const fkt_particle_set *sets[2] = {&lj, &plummer};
    for (int c = 0; c < 2; ++c) {
        fkt_sim *serial = create_sim(configs[c], sets[c]);
        fkt_sim *threaded = create_sim(configs[c], sets[c]);
        serial->parallel_min = SIZE_MAX;
        threaded->parallel_min = 0;
        step_sim(serial, 20);
        step_sim(threaded, 20);
        const size_t values = 3 * sets[c]->count;
        assert_same_bits(threaded->position, serial->position, values, "threaded position");
        assert_same_bits(threaded->velocity, serial->velocity, values, "threaded velocity");
        assert_same_bits(threaded->acceleration, serial->acceleration, values,
                         "threaded acceleration");
        fkt_sim_destroy(serial);
        fkt_sim_destroy(threaded);
    }
    fkt_particle_set_free(&lj);
    fkt_particle_set_free(&plummer);
}

static void test_collapse_stops(void **state)
{
    (void)state;
    fkt_particle_set set = {0};
    double box[3];
    assert_int_equal(fkt_generate_lj_fluid(108, 0.8, 1.0, 5, FKT_LAYOUT_XYZ_TYPE, &set, box),
                     FK_OK);
    const char *accums[] = {"float", "fixed64"};
    for (size_t a = 0; a < 2; ++a) {
        fkt_sim_config config = lj_fluid_config(accums[a], box);
        fkt_sim *sim = create_sim(&config, &set);
        sim->parallel_min = a == 0 ? 0 : SIZE_MAX; /* the threaded read finds the particle too */
        const size_t values = 3 * set.count;
        double *x = malloc(values * sizeof *x), *zero = calloc(values, sizeof *zero);
        assert_true(x && zero);
        memcpy(x, set.position, values * sizeof *x);
        for (int k = 0; k < 3; ++k)
            x[3 * 9 + (size_t)k] = x[3 * 2 + (size_t)k];
        assert_int_equal(fkt_sim_restore(sim, 7, x, zero, zero, NULL, NULL), FK_OK);
        const fk_status status = fkt_sim_step(sim);
        fprintf(stderr, "%s: %s: %s\n", accums[a], fk_status_string(status), sim->message);
        assert_int_equal(status, FK_ERR_INVALID_INPUT);
        assert_non_null(strstr(sim->message, "--dt"));
        if (a == 0)
            assert_non_null(strstr(sim->message, "particle 2"));
        assert_int_equal(sim->step, 7);
        assert_memory_equal(sim->position, x, values * sizeof *x);
        free(x);
        free(zero);
        fkt_sim_destroy(sim);
    }
    fkt_particle_set_free(&set);
}

static int remove_temp(void **state)
{
    (void)state;
    if (temp_dir) {
        fk_test_remove_tree(temp_dir);
        free(temp_dir);
        temp_dir = NULL;
    }
    return fk_test_context_teardown(state);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_energy_slope),
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_two_body_verlet),
        cmocka_unit_test(test_two_body_hermite),
        cmocka_unit_test(test_lj_fluid_drift),
        cmocka_unit_test(test_restart_bit_identical),
        cmocka_unit_test(test_bad_checkpoints),
        cmocka_unit_test(test_update_positions),
        cmocka_unit_test(test_restart_hermite_double),
        cmocka_unit_test(test_collapse_stops),
        cmocka_unit_test(test_device_path),
        cmocka_unit_test(test_parallel_passes),
        cmocka_unit_test(test_checkpoint_integrity),
    };
    return cmocka_run_group_tests(tests, fk_test_context_setup, remove_temp);
}
