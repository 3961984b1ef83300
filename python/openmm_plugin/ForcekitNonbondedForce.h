// forcekit as a native OpenMM force (issue #34): the C++ side of forcekit.openmm.nonbonded_force.
// The Force holds a NonbondedForce translated into forcekit's terms (per-particle charges and
// types, a pair table, exclusions); its kernels run forcekit's evaluation on OpenMM's own OpenCL
// context and buffers (OpenCL platform) or through forcekit's host path on a device the user
// chooses (Reference and CPU platforms). Python builds it through XmlSerializer (the
// serialization proxy below), so no SWIG module is needed: docs/python.md says why.
#ifndef FORCEKIT_OPENMM_NONBONDED_FORCE_H
#define FORCEKIT_OPENMM_NONBONDED_FORCE_H

#include <string>
#include <utility>
#include <vector>

#include "openmm/Force.h"
#include "openmm/KernelImpl.h"
#include "openmm/Platform.h"
#include "openmm/System.h"
#include "openmm/internal/ContextImpl.h"
#include "openmm/internal/ForceImpl.h"
#include "openmm/serialization/SerializationProxy.h"

namespace ForcekitPlugin
{

class ForcekitNonbondedForce : public OpenMM::Force
{
  public:
    ForcekitNonbondedForce() = default;
    // Settings (see docs/python.md for their meaning; units nm, kJ/mol, e).
    std::string kernel = "lj";      // "lj" or "ljc_constant"
    std::string accum = "fixed64";  // forcekit accumulator
    std::string algorithm;          // "" : neighbors with a cutoff, all-pairs without
    std::string device;             // host path (Reference, CPU): forcekit's device selector
    double cutoff = 0.0;            // nm; 0: no cutoff (all pairs, open boundaries)
    double coulomb = 0.0;           // Coulomb constant (ljc_constant)
    double skin = 0.0;              // forcekit's Verlet skin, nm; 0: its default
    bool periodic = false;          // minimum image in the context's (rectangular) box
    bool reproducible = false;      // forcekit's reproducible mode
    int types = 1;                  // pair table: types x types x (epsilon, sigma)
    std::vector<double> pairTable;  // (a * types + b) * 2 + {0: epsilon, 1: sigma}
    std::vector<double> charges;    // per particle
    std::vector<int> particleTypes; // per particle
    std::vector<std::pair<int, int>> exclusions;
    // Scaled 1-4 pairs (NonbondedForce's exceptions with nonzero chargeProd or epsilon): left out
    // of forcekit's loop (each is also in `exclusions`) and computed by the plugin as
    // NonbondedForce computes exceptions: plain LJ + Coulomb, no cutoff, no reaction field, the
    // minimum image only when exceptionsPeriodic (its getExceptionsUsePeriodicBoundaryConditions).
    struct Exception14 {
        int p1, p2;
        double chargeProd, sigma, epsilon;
    };
    std::vector<Exception14> exceptions14;
    bool exceptionsPeriodic = false;

    int getNumParticles() const
    {
        return (int)particleTypes.size();
    }
    bool usesPeriodicBoundaryConditions() const override
    {
        return periodic;
    }
    // Throws OpenMMException naming what is inconsistent.
    void validate() const;

  protected:
    OpenMM::ForceImpl *createImpl() const override;
};

class ForcekitNonbondedForceImpl : public OpenMM::ForceImpl
{
  public:
    explicit ForcekitNonbondedForceImpl(const ForcekitNonbondedForce &owner) : owner(owner) {}
    void initialize(OpenMM::ContextImpl &context) override;
    const ForcekitNonbondedForce &getOwner() const override
    {
        return owner;
    }
    void updateContextState(OpenMM::ContextImpl &, bool &) override {}
    double calcForcesAndEnergy(OpenMM::ContextImpl &context, bool includeForces, bool includeEnergy,
                               int groups) override;
    std::map<std::string, double> getDefaultParameters() override
    {
        return {};
    }
    std::vector<std::string> getKernelNames() override;
    // The 1-4 pairs are bonded: OpenMM then keeps each pair in one molecule and never wraps its
    // two particles into different images (their distance is taken without the minimum image).
    std::vector<std::pair<int, int>> getBondedParticles() const override;

  private:
    const ForcekitNonbondedForce &owner;
    OpenMM::Kernel kernel;
};

// The kernel every platform implements.
class CalcForcekitNonbondedKernel : public OpenMM::KernelImpl
{
  public:
    static std::string Name()
    {
        return "CalcForcekitNonbonded";
    }
    CalcForcekitNonbondedKernel(std::string name, const OpenMM::Platform &platform)
        : KernelImpl(name, platform)
    {
    }
    virtual void initialize(const OpenMM::System &system, const ForcekitNonbondedForce &force) = 0;
    // Adds the forces into the platform's force buffer; returns the energy (or adds it into the
    // platform's energy buffer and returns 0, on the OpenCL platform).
    virtual double execute(OpenMM::ContextImpl &context, bool includeForces,
                           bool includeEnergy) = 0;
};

class ForcekitNonbondedForceProxy : public OpenMM::SerializationProxy
{
  public:
    ForcekitNonbondedForceProxy() : SerializationProxy("ForcekitNonbondedForce") {}
    void serialize(const void *object, OpenMM::SerializationNode &node) const override;
    void *deserialize(const OpenMM::SerializationNode &node) const override;
};

} // namespace ForcekitPlugin

#endif
