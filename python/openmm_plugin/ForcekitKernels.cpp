// The platforms' kernels of ForcekitNonbondedForce and the plugin's KernelFactory.
//
// OpenCL platform: forcekit runs on OpenMM's own cl_context, device and queue
// (fk_context_create_cl). Each evaluation enqueues, on OpenMM's queue:
//   1. fkGather (ours, compiled by OpenMM's createProgram): OpenMM's posq, which is in OpenMM's
//      reordered slot order (atomIndex[slot] is the System's particle), padded, real4, and not
//      wrapped into the box, becomes float4 positions in the System's order, wrapped;
//   2. forcekit's update from that buffer (fk_eval_update_positions_cl) and its evaluation, whose
//      decoded forces and potentials go to two device buffers (fk_eval_set_results_cl);
//   3. fkScatter (ours): the forces are added, converted to OpenMM's 64-bit fixed point
//      (x 2^32), into OpenMM's long force buffer at each particle's slot, and the potentials'
//      sum into OpenMM's energy buffer.
// No coordinates or forces cross to the host per step; forcekit's update check and fixed64's
// overflow word are small reads (forcekit_cl.h), so the host waits for the device once per
// evaluation. The first evaluation (and one after the box changed) reads the positions once to
// the host for fk_eval_set_particles.
//
// Reference and CPU platforms: OpenMM's host arrays go through forcekit's host path
// (fk_eval_update_positions / fk_eval_read_*) on the device the force names (forcekit's selector,
// FORCEKIT_DEVICE, else its default).
#include "ForcekitNonbondedForce.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "openmm/KernelFactory.h"
#include "openmm/OpenMMException.h"
#include "openmm/opencl/OpenCLContext.h"
#include "openmm/opencl/OpenCLPlatform.h"
#include "openmm/reference/ReferencePlatform.h"

#include "forcekit/forcekit.h"
#include "forcekit/forcekit_cl.h"

using namespace OpenMM;

namespace ForcekitPlugin
{
namespace
{

[[noreturn]] void fail(fk_context *ctx, const std::string &what, fk_status status)
{
    std::string detail = ctx ? fk_context_last_error(ctx) : "";
    throw OpenMMException("ForcekitNonbondedForce: " + what + ": " + fk_status_string(status) +
                          (detail.empty() ? "" : " (" + detail + ")"));
}

// The box the force uses now: {0, 0, 0} without periodicity; a triclinic box is refused.
void currentBox(ContextImpl &context, const ForcekitNonbondedForce &force, double box[3])
{
    box[0] = box[1] = box[2] = 0.0;
    if (!force.periodic)
        return;
    Vec3 a, b, c;
    context.getPeriodicBoxVectors(a, b, c);
    if (a[1] != 0 || a[2] != 0 || b[0] != 0 || b[2] != 0 || c[0] != 0 || c[1] != 0)
        throw OpenMMException("ForcekitNonbondedForce: triclinic periodic boxes are not supported "
                              "(forcekit takes rectangular boxes)");
    box[0] = a[0];
    box[1] = b[1];
    box[2] = c[2];
}

// A forcekit evaluation of the force's physics in the given box (all zero: open boundaries).
fk_eval *createEval(fk_context *ctx, const ForcekitNonbondedForce &force, const double box[3])
{
    fk_eval_config config{};
    config.struct_size = sizeof config;
    config.kernel = force.kernel.c_str();
    config.accum = force.accum.c_str();
    config.potential = 1;
    config.expected_count = (size_t)force.getNumParticles();
    config.reproducible = force.reproducible ? 1 : 0;
    config.cutoff = force.cutoff;
    if (force.kernel == "ljc_constant")
        config.coulomb = force.coulomb;
    config.skin = force.skin;
    for (int k = 0; k < 3; k++)
        config.box[k] = box[k];
    std::string algorithm =
        force.algorithm.empty() ? (force.cutoff > 0 ? "neighbors" : "all-pairs") : force.algorithm;
    fk_algorithm alg;
    if (fk_algorithm_find(algorithm.c_str(), &alg) != FK_OK)
        throw OpenMMException("ForcekitNonbondedForce: unknown algorithm \"" + algorithm + "\"");
    config.algorithm = (int)alg;
    // fixed64 keeps its scale between steps; an overflow rescales and recomputes inside
    // forcekit (forcekit.h, fk_scale_policy), saving the bound pre-pass of every step.
    if (force.accum == "fixed64")
        config.scale_policy = FK_SCALE_KEEP;
    fk_eval *eval = nullptr;
    fk_status s = fk_eval_create(ctx, &config, &eval);
    if (s != FK_OK)
        fail(ctx, "creating the evaluation", s);
    fk_pair_table table{(size_t)force.types, force.pairTable.data(), nullptr};
    if ((s = fk_eval_set_pair_table(eval, &table)) != FK_OK) {
        fk_eval_destroy(eval);
        fail(ctx, "the pair table", s);
    }
    if (!force.exclusions.empty()) {
        std::vector<size_t> pairs;
        for (auto &e : force.exclusions) {
            pairs.push_back((size_t)e.first);
            pairs.push_back((size_t)e.second);
        }
        if ((s = fk_eval_set_exclusions(eval, pairs.data(), force.exclusions.size())) != FK_OK) {
            fk_eval_destroy(eval);
            fail(ctx, "the exclusions", s);
        }
    }
    return eval;
}

void setParticles(fk_context *ctx, fk_eval *eval, const ForcekitNonbondedForce &force,
                  const std::vector<double> &position)
{
    fk_particles particles{};
    particles.count = (size_t)force.getNumParticles();
    particles.position = position.data();
    particles.mass = force.kernel == "lj" ? nullptr : force.charges.data();
    particles.type = force.particleTypes.data();
    fk_status s = fk_eval_set_particles(eval, &particles);
    if (s != FK_OK)
        fail(ctx, "uploading the particles", s);
}

// forcekit's cells and lists are built for one box: a new evaluation when there is none yet or
// the box changed (a barostat), eval and box replaced. True when it did: the caller then uploads
// the particles.
bool renewForBox(fk_context *ctx, const ForcekitNonbondedForce &force, const double now[3],
                 fk_eval *&eval, double box[3])
{
    if (eval && now[0] == box[0] && now[1] == box[1] && now[2] == box[2])
        return false;
    fk_eval_destroy(eval);
    eval = nullptr; // createEval throws on failure: no dangling evaluation left behind
    eval = createEval(ctx, force, now);
    for (int k = 0; k < 3; k++)
        box[k] = now[k];
    return true;
}

// One exception pair: plain LJ + Coulomb at separation d (from p2 to p1), kqq = k q1 q2 (or the
// exception's chargeProd times k). *fr: the force on p1 over r (times d gives the vector), *u:
// the energy. Each operation separately rounded, as the device kernel's (no contraction).
void pair14(const double d[3], double kqq, double sigma, double epsilon, double *fr, double *u)
{
    const double r2 = (d[0] * d[0] + d[1] * d[1]) + d[2] * d[2];
    const double inv_r2 = 1.0 / r2, inv_r = std::sqrt(inv_r2);
    const double sr2 = (sigma * sigma) * inv_r2, sr6 = (sr2 * sr2) * sr2;
    const double coulomb = kqq * inv_r;
    *u = 4.0 * epsilon * (sr6 * sr6 - sr6) + coulomb;
    *fr = (24.0 * epsilon * (2.0 * (sr6 * sr6) - sr6) + coulomb) * inv_r2;
}

double wrap(double x, double box)
{
    return box > 0 ? x - box * std::floor(x / box) : x;
}

// Reference and CPU platforms: forcekit's host path.
class HostKernel : public CalcForcekitNonbondedKernel
{
  public:
    HostKernel(std::string name, const Platform &platform)
        : CalcForcekitNonbondedKernel(name, platform)
    {
    }
    ~HostKernel() override
    {
        fk_eval_destroy(eval);
        fk_context_destroy(ctx);
    }
    void initialize(const System &, const ForcekitNonbondedForce &f) override
    {
        force = &f;
        fk_context_config config{};
        config.struct_size = sizeof config;
        config.device = f.device.empty() ? nullptr : f.device.c_str();
        fk_status s = fk_context_create(&config, &ctx);
        if (s != FK_OK)
            fail(ctx,
                 "opening forcekit's device" + (f.device.empty() ? "" : " \"" + f.device + "\""),
                 s);
        n = (size_t)f.getNumParticles();
        position.resize(3 * n);
        forces.resize(3 * n);
        potentials.resize(n);
    }
    double execute(ContextImpl &context, bool includeForces, bool includeEnergy) override
    {
        auto *data = static_cast<ReferencePlatform::PlatformData *>(context.getPlatformData());
        const std::vector<Vec3> &pos = *data->positions;
        double now[3];
        currentBox(context, *force, now);
        for (size_t i = 0; i < n; i++)
            for (int k = 0; k < 3; k++)
                position[3 * i + k] = wrap(pos[i][k], now[k]);
        fk_status s;
        if (renewForBox(ctx, *force, now, eval, box)) {
            setParticles(ctx, eval, *force, position);
        } else if ((s = fk_eval_update_positions(eval, position.data(), nullptr)) != FK_OK) {
            fail(ctx, "updating the positions", s);
        }
        if ((s = fk_eval_compute(eval, nullptr)) != FK_OK)
            fail(ctx, "evaluating", s);
        if ((s = fk_eval_read_forces(eval, forces.data())) != FK_OK)
            fail(ctx, "reading the forces", s);
        if ((s = fk_eval_read_potentials(eval, potentials.data())) != FK_OK)
            fail(ctx, "reading the potentials", s);
        double energy = 0.0;
        // The scaled 1-4 pairs, from OpenMM's own (unwrapped) positions, as NonbondedForce does.
        for (auto &e : force->exceptions14) {
            double d[3];
            for (int k = 0; k < 3; k++) {
                d[k] = pos[e.p1][k] - pos[e.p2][k];
                if (force->exceptionsPeriodic && now[k] > 0)
                    d[k] -= now[k] * std::round(d[k] / now[k]);
            }
            double fr, u;
            pair14(d, force->coulomb * e.chargeProd, e.sigma, e.epsilon, &fr, &u);
            for (int k = 0; k < 3; k++) {
                forces[3 * e.p1 + k] += fr * d[k];
                forces[3 * e.p2 + k] -= fr * d[k];
            }
            energy += u;
        }
        if (includeForces) {
            std::vector<Vec3> &out = *data->forces;
            for (size_t i = 0; i < n; i++)
                out[i] += Vec3(forces[3 * i], forces[3 * i + 1], forces[3 * i + 2]);
        }
        if (!includeEnergy)
            return 0.0;
        for (double p : potentials)
            energy += p;
        return energy;
    }

  private:
    const ForcekitNonbondedForce *force = nullptr;
    fk_context *ctx = nullptr;
    fk_eval *eval = nullptr;
    size_t n = 0;
    double box[3] = {0, 0, 0};
    std::vector<double> position, forces, potentials;
};

const char *openclSource = R"CL(
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
// Compiled without OpenMM's fast-relaxed-math and with no contraction: the wrap and the 1-4 pairs
// are then correctly rounded, the same bits on every device (fixed64's promise).
#pragma OPENCL FP_CONTRACT OFF
// OpenMM's posq (slot order, real4, unwrapped) -> float4 in the System's order, wrapped, and the
// unwrapped positions in the System's order (raw, for the 1-4 pairs).
__kernel void fkGather(__global const real4* restrict posq, __global const int* restrict atomIndex,
        __global float4* restrict out, int numAtoms, int periodic, real bx, real by, real bz,
        __global real4* restrict raw) {
    for (int slot = get_global_id(0); slot < numAtoms; slot += get_global_size(0)) {
        real4 p = posq[slot];
        raw[atomIndex[slot]] = p;
        if (periodic) {
            p.x -= bx*floor(p.x/bx);
            p.y -= by*floor(p.y/by);
            p.z -= bz*floor(p.z/bz);
        }
        out[atomIndex[slot]] = (float4) ((float) p.x, (float) p.y, (float) p.z, 0.0f);
    }
}

// The scaled 1-4 pairs, one work-item per particle over its own pairs (each pair is listed for
// both particles: no two work-items write one particle), added into forcekit's decoded forces
// and potentials before the scatter; param: k chargeProd, sigma, epsilon.
__kernel void fkExceptions(__global const real4* restrict raw, __global const int* restrict start,
        __global const int* restrict partner, __global const double4* restrict param,
        __global double* restrict force, __global double* restrict pot, int numAtoms,
        int periodic, double bx, double by, double bz) {
    for (int a = get_global_id(0); a < numAtoms; a += get_global_size(0)) {
        const int first = start[a], end = start[a+1];
        if (first == end)
            continue;
        const real4 pa = raw[a];
        double fx = 0.0, fy = 0.0, fz = 0.0, u = 0.0;
        for (int k = first; k < end; k++) {
            const real4 pb = raw[partner[k]];
            double dx = (double) pa.x - (double) pb.x;
            double dy = (double) pa.y - (double) pb.y;
            double dz = (double) pa.z - (double) pb.z;
            if (periodic) {
                dx -= bx*rint(dx/bx);
                dy -= by*rint(dy/by);
                dz -= bz*rint(dz/bz);
            }
            const double4 p = param[k];
            const double r2 = (dx*dx + dy*dy) + dz*dz;
            const double inv_r2 = 1.0/r2, inv_r = sqrt(inv_r2);
            const double sr2 = (p.y*p.y)*inv_r2, sr6 = (sr2*sr2)*sr2;
            const double coulomb = p.x*inv_r;
            const double fr = (24.0*p.z*(2.0*(sr6*sr6) - sr6) + coulomb)*inv_r2;
            fx += fr*dx;
            fy += fr*dy;
            fz += fr*dz;
            u += 0.5*(4.0*p.z*(sr6*sr6 - sr6) + coulomb);
        }
        force[3*a] += fx;
        force[3*a+1] += fy;
        force[3*a+2] += fz;
        pot[a] += u;
    }
}

// forcekit's decoded forces and potentials (System order, double) -> OpenMM's long force buffer
// (slot order, x, y, z blocks of paddedNumAtoms, 64-bit fixed point with 2^32 per kJ/mol/nm) and
// energy buffer (one entry per work-item). In order on OpenMM's queue: no other kernel writes
// these buffers meanwhile, so plain additions suffice.
__kernel void fkScatter(__global const double* restrict force, __global const double* restrict pot,
        __global const int* restrict atomIndex, __global long* restrict longForce,
        __global mixed* restrict energyBuffer, int numAtoms, int paddedNumAtoms, int addForces,
        int addEnergy) {
    double energy = 0.0;
    for (int slot = get_global_id(0); slot < numAtoms; slot += get_global_size(0)) {
        int atom = atomIndex[slot];
        if (addForces) {
            longForce[slot] += (long) (force[3*atom]*0x100000000);
            longForce[slot+paddedNumAtoms] += (long) (force[3*atom+1]*0x100000000);
            longForce[slot+2*paddedNumAtoms] += (long) (force[3*atom+2]*0x100000000);
        }
        energy += pot[atom];
    }
    if (addEnergy)
        energyBuffer[get_global_id(0)] += (mixed) energy;
}
)CL";

class OpenCLKernel : public CalcForcekitNonbondedKernel
{
  public:
    OpenCLKernel(std::string name, const Platform &platform, OpenCLContext &cl)
        : CalcForcekitNonbondedKernel(name, platform), cl(cl)
    {
    }
    ~OpenCLKernel() override
    {
        fk_eval_destroy(eval);
        fk_context_destroy(ctx);
    }
    void initialize(const System &, const ForcekitNonbondedForce &f) override
    {
        force = &f;
        n = f.getNumParticles();
        waitEachStep = f.accum == "fixed64" || f.accum == "narumi" || f.accum == "nitadori_large";
        // forcekit decodes its results into double buffers on the device (forcekit_cl.h), and
        // the scatter kernel reads them: a device without fp64 cannot take the device path.
        if (cl.getDevice().getInfo<CL_DEVICE_DOUBLE_FP_CONFIG>() == 0)
            throw OpenMMException("ForcekitNonbondedForce: OpenMM's OpenCL device " +
                                  cl.getDevice().getInfo<CL_DEVICE_NAME>() +
                                  " has no fp64, which forcekit's results on the device need: "
                                  "use the CPU or Reference platform (forcekit's host path)");
        queue = cl.getQueue()();
        fk_status s =
            fk_context_create_cl(cl.getContext()(), cl.getDevice()(), queue, nullptr, &ctx);
        if (s != FK_OK)
            fail(ctx, "forcekit on OpenMM's OpenCL context", s);
        positions.initialize<mm_float4>(cl, n, "forcekitPositions");
        forces.initialize<cl_double>(cl, 3 * n, "forcekitForces");
        potentials.initialize<cl_double>(cl, n, "forcekitPotentials");
        raw.initialize(cl, n, cl.getUseDoublePrecision() ? sizeof(mm_double4) : sizeof(mm_float4),
                       "forcekitRawPositions");
        // The 1-4 pairs by particle (CSR): start[a] .. start[a + 1] index partner and param.
        std::vector<int> start(n + 1, 0), partner(2 * f.exceptions14.size());
        std::vector<mm_double4> param(2 * f.exceptions14.size());
        for (auto &e : f.exceptions14) {
            start[e.p1 + 1]++;
            start[e.p2 + 1]++;
        }
        for (int a = 0; a < n; a++)
            start[a + 1] += start[a];
        std::vector<int> fill(start.begin(), start.end() - 1);
        for (auto &e : f.exceptions14) {
            const mm_double4 p(f.coulomb * e.chargeProd, e.sigma, e.epsilon, 0.0);
            partner[fill[e.p1]] = e.p2;
            param[fill[e.p1]++] = p;
            partner[fill[e.p2]] = e.p1;
            param[fill[e.p2]++] = p;
        }
        if (!f.exceptions14.empty()) {
            excStart.initialize<cl_int>(cl, n + 1, "forcekitExceptionStart");
            excPartner.initialize<cl_int>(cl, partner.size(), "forcekitExceptionPartner");
            excParam.initialize<mm_double4>(cl, param.size(), "forcekitExceptionParam");
            excStart.upload(start);
            excPartner.upload(partner);
            excParam.upload(param);
        }
        // No fast-relaxed-math (OpenMM's default options): correctly rounded divides and sqrt.
        cl::Program program = cl.createProgram(openclSource, "");
        gather = cl::Kernel(program, "fkGather");
        exceptions = cl::Kernel(program, "fkExceptions");
        scatter = cl::Kernel(program, "fkScatter");
    }
    double execute(ContextImpl &context, bool includeForces, bool includeEnergy) override
    {
        if (cl.getQueue()() != queue)
            throw OpenMMException("ForcekitNonbondedForce: OpenMM switched to another OpenCL queue "
                                  "than the one forcekit was created on");
        fk_status s;
        if (inFlight) { // the last step's compute, finished long ago on the in-order queue
            inFlight = false;
            if ((s = fk_eval_wait(eval, nullptr)) != FK_OK)
                fail(ctx, "evaluating (the previous step)", s);
        }
        double now[3];
        currentBox(context, *force, now);
        int periodic = force->periodic ? 1 : 0;
        int workUnits = cl.getNumThreadBlocks() * OpenCLContext::ThreadBlockSize;
        gather.setArg<cl::Buffer>(0, cl.getPosq().getDeviceBuffer());
        gather.setArg<cl::Buffer>(1, cl.getAtomIndexArray().getDeviceBuffer());
        gather.setArg<cl::Buffer>(2, positions.getDeviceBuffer());
        gather.setArg<cl_int>(3, n);
        gather.setArg<cl_int>(4, periodic);
        if (cl.getUseDoublePrecision()) {
            for (int k = 0; k < 3; k++)
                gather.setArg<cl_double>(5 + k, periodic ? now[k] : 1.0);
        } else {
            for (int k = 0; k < 3; k++)
                gather.setArg<cl_float>(5 + k, (float)(periodic ? now[k] : 1.0));
        }
        gather.setArg<cl::Buffer>(8, raw.getDeviceBuffer());
        cl.executeKernel(gather, workUnits);
        if (renewForBox(ctx, *force, now, eval, box)) {
            std::vector<mm_float4> host(n);
            positions.download(host); // once per evaluation object: set_particles is host data
            std::vector<double> position(3 * (size_t)n);
            for (int i = 0; i < n; i++) {
                position[3 * i] = host[i].x;
                position[3 * i + 1] = host[i].y;
                position[3 * i + 2] = host[i].z;
            }
            setParticles(ctx, eval, *force, position);
            if ((s = fk_eval_set_results_cl(eval, forces.getDeviceBuffer()(),
                                            potentials.getDeviceBuffer()())) != FK_OK)
                fail(ctx, "forcekit's results into OpenMM's buffers", s);
        } else if ((s = fk_eval_update_positions_cl(eval, positions.getDeviceBuffer()(),
                                                    FK_CL_POSITIONS_FLOAT4)) != FK_OK) {
            fail(ctx, "updating the positions", s);
        }
        // The results go to OpenMM's queue as device buffers, so nothing here needs the compute
        // to have finished: the wait (a host round trip that idles the GPU each step) moves to
        // the next step, except for the accumulators whose wait reports an overflow
        // (data-scaled: fixed64, narumi, nitadori_large), which must not reach OpenMM's forces.
        if (waitEachStep) {
            if ((s = fk_eval_compute(eval, nullptr)) != FK_OK)
                fail(ctx, "evaluating", s);
        } else if ((s = fk_eval_compute_async(eval)) != FK_OK) {
            fail(ctx, "evaluating", s);
        } else {
            inFlight = true;
        }
        if (!force->exceptions14.empty()) {
            const int pbc = force->exceptionsPeriodic && periodic;
            exceptions.setArg<cl::Buffer>(0, raw.getDeviceBuffer());
            exceptions.setArg<cl::Buffer>(1, excStart.getDeviceBuffer());
            exceptions.setArg<cl::Buffer>(2, excPartner.getDeviceBuffer());
            exceptions.setArg<cl::Buffer>(3, excParam.getDeviceBuffer());
            exceptions.setArg<cl::Buffer>(4, forces.getDeviceBuffer());
            exceptions.setArg<cl::Buffer>(5, potentials.getDeviceBuffer());
            exceptions.setArg<cl_int>(6, n);
            exceptions.setArg<cl_int>(7, pbc);
            for (int k = 0; k < 3; k++)
                exceptions.setArg<cl_double>(8 + k, pbc ? now[k] : 1.0);
            cl.executeKernel(exceptions, workUnits);
        }
        scatter.setArg<cl::Buffer>(0, forces.getDeviceBuffer());
        scatter.setArg<cl::Buffer>(1, potentials.getDeviceBuffer());
        scatter.setArg<cl::Buffer>(2, cl.getAtomIndexArray().getDeviceBuffer());
        scatter.setArg<cl::Buffer>(3, cl.getLongForceBuffer().getDeviceBuffer());
        scatter.setArg<cl::Buffer>(4, cl.getEnergyBuffer().getDeviceBuffer());
        scatter.setArg<cl_int>(5, n);
        scatter.setArg<cl_int>(6, cl.getPaddedNumAtoms());
        scatter.setArg<cl_int>(7, includeForces ? 1 : 0);
        scatter.setArg<cl_int>(8, includeEnergy ? 1 : 0);
        cl.executeKernel(scatter, workUnits);
        return 0.0;
    }

  private:
    OpenCLContext &cl;
    const ForcekitNonbondedForce *force = nullptr;
    cl_command_queue queue = nullptr;
    fk_context *ctx = nullptr;
    fk_eval *eval = nullptr;
    bool waitEachStep = true; // see execute
    bool inFlight = false;    // a compute enqueued and not yet waited for
    int n = 0;
    double box[3] = {0, 0, 0};
    OpenCLArray positions, raw, forces, potentials, excStart, excPartner, excParam;
    cl::Kernel gather, exceptions, scatter;
};

class Factory : public KernelFactory
{
  public:
    KernelImpl *createKernelImpl(std::string name, const Platform &platform,
                                 ContextImpl &context) const override
    {
        if (name != CalcForcekitNonbondedKernel::Name())
            throw OpenMMException("ForcekitNonbondedForce: no kernel " + name);
        if (platform.getName() == "OpenCL") {
            auto &data = *static_cast<OpenCLPlatform::PlatformData *>(context.getPlatformData());
            if (data.contexts.size() != 1)
                throw OpenMMException("ForcekitNonbondedForce: one OpenCL device per Context only "
                                      "(DeviceIndex names one)");
            return new OpenCLKernel(name, platform, *data.contexts[0]);
        }
        return new HostKernel(name, platform);
    }
};

} // namespace
} // namespace ForcekitPlugin

extern "C" __attribute__((visibility("default"))) void registerKernelFactories()
{
    for (const char *name : {"Reference", "CPU", "OpenCL"}) {
        try {
            Platform &platform = Platform::getPlatformByName(name);
            platform.registerKernelFactory(ForcekitPlugin::CalcForcekitNonbondedKernel::Name(),
                                           new ForcekitPlugin::Factory());
        } catch (const OpenMMException &) {
            // That platform is not installed (or did not load): nothing to register there.
        }
    }
}
