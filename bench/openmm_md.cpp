/*
 * OpenMM timing of issue #17's MD workload, for the comparison in bench/run_cpu_md.sh: an LJ fluid
 * (density 0.8, periodic cube) read from a `forcekit generate --model lj-fluid` file, rc 2.5,
 * single precision, on one OpenMM platform (CPU or OpenCL), timing context.getState(Forces) per
 * evaluation (compute and read-back) at fixed positions after a short NVE warm-up. Prints one JSON
 * document. Built only when OpenMM is found (bench/CMakeLists.txt).
 *
 *   bench_openmm_md --in FILE --platform CPU|OpenCL [--law lj|ljc_constant] [--form exact|native]
 *                   [--evals E] [--warmup-steps S] [--threads T] [--forces-out FILE]
 *
 * Laws, as forcekit defines them (docs/force-laws.md), epsilon = sigma = m = 1, k = D0 = 1:
 *   lj            LJ truncated and force-shifted at rc: f_s(r) = f(r) - f(rc)
 *   ljc_constant  the same LJ plus Coulomb k q_i q_j / r, also force-shifted at rc; charges
 *                 alternate +0.5, -0.5 by particle index (bench_md_loops assigns the same)
 * --form exact (default) writes these in a CustomNonbondedForce, so OpenMM computes forcekit's
 * law; --form native uses OpenMM's NonbondedForce with CutoffPeriodic instead (LJ plainly
 * truncated, Coulomb as reaction field with dielectric 1, i.e. potential-shifted): not the same
 * forces but the same pairs, and OpenMM's fastest, hand-vectorized path on the CPU platform.
 * Units are OpenMM's (nm, ps, kJ/mol) read as reduced units; charges are scaled by
 * 1/sqrt(ONE_4PI_EPS0) in the native form so that k = 1. --forces-out writes the forces of the
 * last evaluation, one "fx fy fz" line per particle, to compare with `forcekit forces` on the same
 * file (with --warmup-steps 0 both see the file's positions).
 */
#include <OpenMM.h>
#include <openmm/reference/SimTKOpenMMRealType.h> /* ONE_4PI_EPS0, BOLTZ */

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace
{

int usage(const char *message)
{
    std::fprintf(stderr,
                 "bench_openmm_md: %s\nusage: bench_openmm_md --in FILE --platform CPU|OpenCL "
                 "[--law lj|ljc_constant] [--form exact|native] [--evals E] [--warmup-steps S] "
                 "[--threads T]\n",
                 message);
    return 2;
}

bool read_particles(const char *path, std::vector<OpenMM::Vec3> &positions, double &box)
{
    std::ifstream in(path);
    if (!in)
        return false;
    std::string line;
    box = 0;
    while (std::getline(in, line)) {
        if (line.empty())
            continue;
        if (line[0] == '#') {
            if (line.compare(0, 6, "# box ") == 0)
                box = std::strtod(line.c_str() + 6, nullptr);
            continue;
        }
        std::istringstream fields(line);
        double x, y, z;
        if (!(fields >> x >> y >> z))
            return false;
        positions.emplace_back(x, y, z);
    }
    return box > 0 && !positions.empty();
}

} // namespace

int main(int argc, char **argv)
{
    const char *in_path = nullptr, *platform_name = nullptr, *law = "lj", *form = "exact";
    const char *forces_path = nullptr;
    int evals = 20, warmup_steps = 20, threads = 0;
    const double cutoff = 2.5, dt = 0.005, temperature = 1.0;
    for (int a = 1; a < argc; a += 2) {
        if (a + 1 >= argc)
            return usage("an option without its value");
        const char *value = argv[a + 1];
        if (!std::strcmp(argv[a], "--in"))
            in_path = value;
        else if (!std::strcmp(argv[a], "--platform"))
            platform_name = value;
        else if (!std::strcmp(argv[a], "--law"))
            law = value;
        else if (!std::strcmp(argv[a], "--form"))
            form = value;
        else if (!std::strcmp(argv[a], "--evals"))
            evals = std::atoi(value);
        else if (!std::strcmp(argv[a], "--warmup-steps"))
            warmup_steps = std::atoi(value);
        else if (!std::strcmp(argv[a], "--threads"))
            threads = std::atoi(value);
        else if (!std::strcmp(argv[a], "--forces-out"))
            forces_path = value;
        else
            return usage("unknown option");
    }
    if (!in_path || !platform_name)
        return usage("--in and --platform are required");
    const bool coulomb = !std::strcmp(law, "ljc_constant");
    if (!coulomb && std::strcmp(law, "lj"))
        return usage("--law: lj or ljc_constant");
    const bool exact = !std::strcmp(form, "exact");
    if (!exact && std::strcmp(form, "native"))
        return usage("--form: exact or native");
    if (evals < 1 || warmup_steps < 0)
        return usage("--evals >= 1, --warmup-steps >= 0");

    std::vector<OpenMM::Vec3> positions;
    double box = 0;
    if (!read_particles(in_path, positions, box)) {
        std::fprintf(stderr, "bench_openmm_md: %s: cannot read particles and '# box'\n", in_path);
        return 1;
    }
    const int n = (int)positions.size();

    try {
        OpenMM::Platform::loadPluginsFromDirectory(OpenMM::Platform::getDefaultPluginsDirectory());
        OpenMM::System system;
        system.setDefaultPeriodicBoxVectors(OpenMM::Vec3(box, 0, 0), OpenMM::Vec3(0, box, 0),
                                            OpenMM::Vec3(0, 0, box));
        for (int i = 0; i < n; ++i)
            system.addParticle(1.0);
        auto charge = [](int i) { return i % 2 ? -0.5 : 0.5; };
        if (exact) {
            /* U_s(r) = U(r) - U(rc) + (r - rc) f(rc), f = -dU/dr: force f(r) - f(rc). */
            const double rc = cutoff;
            const double u_lj = 4 * (std::pow(rc, -12) - std::pow(rc, -6));
            const double f_lj = 24 * (2 * std::pow(rc, -13) - std::pow(rc, -7));
            char expression[512];
            std::snprintf(expression, sizeof expression,
                          "4*(r^-12-r^-6) - (%.17g) + (r-%.17g)*(%.17g)%s", u_lj, rc, f_lj,
                          coulomb ? " + q1*q2*(1/r - 1/rc + (r-rc)/(rc*rc))" : "");
            auto *force = new OpenMM::CustomNonbondedForce(expression);
            if (coulomb) {
                force->addGlobalParameter("rc", rc);
                force->addPerParticleParameter("q");
            }
            force->setNonbondedMethod(OpenMM::CustomNonbondedForce::CutoffPeriodic);
            force->setCutoffDistance(rc);
            force->setUseSwitchingFunction(false);
            force->setUseLongRangeCorrection(false);
            for (int i = 0; i < n; ++i)
                force->addParticle(coulomb ? std::vector<double>{charge(i)}
                                           : std::vector<double>{});
            system.addForce(force);
        } else {
            auto *force = new OpenMM::NonbondedForce();
            force->setNonbondedMethod(OpenMM::NonbondedForce::CutoffPeriodic);
            force->setCutoffDistance(cutoff);
            force->setReactionFieldDielectric(1.0);
            force->setUseSwitchingFunction(false);
            force->setUseDispersionCorrection(false);
            const double scale = 1 / std::sqrt(ONE_4PI_EPS0);
            for (int i = 0; i < n; ++i)
                force->addParticle(coulomb ? charge(i) * scale : 0.0, 1.0, 1.0);
            system.addForce(force);
        }
        OpenMM::VerletIntegrator integrator(dt);
        OpenMM::Platform &platform = OpenMM::Platform::getPlatformByName(platform_name);
        std::map<std::string, std::string> properties;
        if (!std::strcmp(platform_name, "OpenCL"))
            properties["Precision"] = "single";
        if (!std::strcmp(platform_name, "CPU") && threads > 0)
            properties["Threads"] = std::to_string(threads);
        const auto setup_start = std::chrono::steady_clock::now();
        OpenMM::Context context(system, integrator, platform, properties);
        context.setPositions(positions);
        context.setVelocitiesToTemperature(temperature / (BOLTZ), 1);
        integrator.step(warmup_steps);
        (void)context.getState(OpenMM::State::Forces); /* one evaluation after the steps */
        const double setup_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();

        std::vector<double> times;
        double checksum = 0;
        for (int e = 0; e < evals; ++e) {
            const auto start = std::chrono::steady_clock::now();
            OpenMM::State state = context.getState(OpenMM::State::Forces);
            const std::vector<OpenMM::Vec3> &forces = state.getForces();
            times.push_back(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
            checksum = 0;
            for (const auto &f : forces)
                checksum += std::fabs(f[0]) + std::fabs(f[1]) + std::fabs(f[2]);
            if (forces_path && e == evals - 1) {
                std::FILE *out = std::fopen(forces_path, "w");
                if (!out)
                    throw std::runtime_error(std::string("cannot write ") + forces_path);
                for (const auto &f : forces)
                    std::fprintf(out, "%.9g %.9g %.9g\n", f[0], f[1], f[2]);
                std::fclose(out);
            }
        }
        std::vector<double> sorted = times;
        std::sort(sorted.begin(), sorted.end());
        const size_t m = sorted.size();
        const double median = m % 2 ? sorted[m / 2] : 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]);

        std::printf("{\n  \"program\": \"bench_openmm_md\",\n  \"openmm_version\": \"%s\",\n",
                    OpenMM::Platform::getOpenMMVersion().c_str());
        std::printf("  \"platform\": \"%s\",\n", platform.getName().c_str());
        for (const char *key : {"Precision", "Threads", "OpenCLPlatformName", "DeviceName"}) {
            try {
                std::printf("  \"%s\": \"%s\",\n", key,
                            platform.getPropertyValue(context, key).c_str());
            } catch (const OpenMM::OpenMMException &) {
            }
        }
        std::printf("  \"law\": \"%s\",\n  \"form\": \"%s\",\n  \"n\": %d,\n  \"box\": %.17g,\n"
                    "  \"cutoff\": %g,\n  \"warmup_steps\": %d,\n  \"setup_seconds\": %.6g,\n",
                    law, form, n, box, cutoff, warmup_steps, setup_seconds);
        std::printf("  \"evals\": %d,\n  \"seconds_per_eval_by_rep\": [", evals);
        for (size_t e = 0; e < times.size(); ++e)
            std::printf("%s%.6g", e ? ", " : "", times[e]);
        std::printf("],\n  \"seconds_per_eval_min\": %.6g,\n  \"seconds_per_eval_median\": %.6g,\n"
                    "  \"seconds_per_eval_max\": %.6g,\n  \"sum_abs_force\": %.9g\n}\n",
                    sorted.front(), median, sorted.back(), checksum);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_openmm_md: OpenMM: %s\n", e.what());
        return 1;
    }
    return 0;
}
