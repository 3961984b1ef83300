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
        if (!eval || now[0] != box[0] || now[1] != box[1] || now[2] != box[2]) {
            fk_eval_destroy(eval);
            eval = nullptr;
            eval = createEval(ctx, *force, now);
            for (int k = 0; k < 3; k++)
                box[k] = now[k];
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
        if (includeForces) {
            std::vector<Vec3> &out = *data->forces;
            for (size_t i = 0; i < n; i++)
                out[i] += Vec3(forces[3 * i], forces[3 * i + 1], forces[3 * i + 2]);
        }
        double energy = 0.0;
        if (includeEnergy)
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
// OpenMM's posq (slot order, real4, unwrapped) -> float4 in the System's order, wrapped.
__kernel void fkGather(__global const real4* restrict posq, __global const int* restrict atomIndex,
        __global float4* restrict out, int numAtoms, int periodic, real bx, real by, real bz) {
    for (int slot = get_global_id(0); slot < numAtoms; slot += get_global_size(0)) {
        real4 p = posq[slot];
        if (periodic) {
            p.x -= bx*floor(p.x/bx);
            p.y -= by*floor(p.y/by);
            p.z -= bz*floor(p.z/bz);
        }
        out[atomIndex[slot]] = (float4) ((float) p.x, (float) p.y, (float) p.z, 0.0f);
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
        cl::Program program = cl.createProgram(openclSource);
        gather = cl::Kernel(program, "fkGather");
        scatter = cl::Kernel(program, "fkScatter");
    }
    double execute(ContextImpl &context, bool includeForces, bool includeEnergy) override
    {
        if (cl.getQueue()() != queue)
            throw OpenMMException("ForcekitNonbondedForce: OpenMM switched to another OpenCL queue "
                                  "than the one forcekit was created on");
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
        cl.executeKernel(gather, workUnits);
        fk_status s;
        if (!eval || now[0] != box[0] || now[1] != box[1] || now[2] != box[2]) {
            fk_eval_destroy(eval);
            eval = nullptr;
            eval = createEval(ctx, *force, now);
            for (int k = 0; k < 3; k++)
                box[k] = now[k];
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
        if ((s = fk_eval_compute(eval, nullptr)) != FK_OK)
            fail(ctx, "evaluating", s);
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
    int n = 0;
    double box[3] = {0, 0, 0};
    OpenCLArray positions, forces, potentials;
    cl::Kernel gather, scatter;
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
