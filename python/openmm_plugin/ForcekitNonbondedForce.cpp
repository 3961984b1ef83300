// The Force, its ForceImpl, the serialization proxy and the plugin's entry points (OpenMM calls
// registerKernelFactories when Platform::loadPluginLibrary loads this library).
#include "ForcekitNonbondedForce.h"

#include <cmath>
#include <set>
#include <sstream>

#include "openmm/OpenMMException.h"
#include "openmm/serialization/SerializationNode.h"

using namespace OpenMM;

namespace ForcekitPlugin
{

void ForcekitNonbondedForce::validate() const
{
    auto fail = [](const std::string &what) {
        throw OpenMMException("ForcekitNonbondedForce: " + what);
    };
    if (kernel != "lj" && kernel != "ljc_constant")
        fail("kernel \"" + kernel + "\": lj or ljc_constant");
    if (types < 1 || pairTable.size() != (size_t)types * types * 2)
        fail("the pair table must hold types x types x 2 values");
    if (charges.size() != particleTypes.size())
        fail("one charge per particle");
    for (int t : particleTypes)
        if (t < 0 || t >= types)
            fail("particle type " + std::to_string(t) + " outside the pair table");
    for (auto &e : exclusions)
        if (e.first < 0 || e.second < 0 || e.first >= getNumParticles() ||
            e.second >= getNumParticles())
            fail("exclusion of a particle that does not exist");
    for (auto &e : exceptions14)
        if (e.p1 < 0 || e.p2 < 0 || e.p1 >= getNumParticles() || e.p2 >= getNumParticles() ||
            e.p1 == e.p2)
            fail("a 1-4 exception of a particle that does not exist (or with itself)");
    if (!(cutoff >= 0) || (periodic && cutoff <= 0))
        fail("a periodic force needs a cutoff > 0");
}

ForceImpl *ForcekitNonbondedForce::createImpl() const
{
    return new ForcekitNonbondedForceImpl(*this);
}

void ForcekitNonbondedForceImpl::initialize(ContextImpl &context)
{
    owner.validate();
    if (owner.getNumParticles() != context.getSystem().getNumParticles())
        throw OpenMMException("ForcekitNonbondedForce: " + std::to_string(owner.getNumParticles()) +
                              " particles, the System has " +
                              std::to_string(context.getSystem().getNumParticles()));
    kernel = context.getPlatform().createKernel(CalcForcekitNonbondedKernel::Name(), context);
    kernel.getAs<CalcForcekitNonbondedKernel>().initialize(context.getSystem(), owner);
}

double ForcekitNonbondedForceImpl::calcForcesAndEnergy(ContextImpl &context, bool includeForces,
                                                       bool includeEnergy, int groups)
{
    if ((groups & (1 << owner.getForceGroup())) == 0)
        return 0.0;
    return kernel.getAs<CalcForcekitNonbondedKernel>().execute(context, includeForces,
                                                               includeEnergy);
}

std::vector<std::pair<int, int>> ForcekitNonbondedForceImpl::getBondedParticles() const
{
    std::vector<std::pair<int, int>> pairs;
    for (auto &e : owner.exceptions14)
        pairs.emplace_back(e.p1, e.p2);
    return pairs;
}

std::vector<std::string> ForcekitNonbondedForceImpl::getKernelNames()
{
    return {CalcForcekitNonbondedKernel::Name()};
}

void ForcekitNonbondedForceProxy::serialize(const void *object, SerializationNode &node) const
{
    const ForcekitNonbondedForce &f = *static_cast<const ForcekitNonbondedForce *>(object);
    node.setIntProperty("version", 1);
    node.setIntProperty("forceGroup", f.getForceGroup());
    node.setStringProperty("name", f.getName());
    node.setStringProperty("kernel", f.kernel);
    node.setStringProperty("accum", f.accum);
    node.setStringProperty("algorithm", f.algorithm);
    node.setStringProperty("device", f.device);
    node.setDoubleProperty("cutoff", f.cutoff);
    node.setDoubleProperty("coulomb", f.coulomb);
    node.setDoubleProperty("skin", f.skin);
    node.setBoolProperty("periodic", f.periodic);
    node.setBoolProperty("reproducible", f.reproducible);
    node.setIntProperty("types", f.types);
    SerializationNode &table = node.createChildNode("PairTable");
    for (int a = 0; a < f.types; a++)
        for (int b = 0; b < f.types; b++)
            table.createChildNode("Pair")
                .setIntProperty("a", a)
                .setIntProperty("b", b)
                .setDoubleProperty("eps", f.pairTable[(a * f.types + b) * 2])
                .setDoubleProperty("sig", f.pairTable[(a * f.types + b) * 2 + 1]);
    SerializationNode &particles = node.createChildNode("Particles");
    for (int i = 0; i < f.getNumParticles(); i++)
        particles.createChildNode("Particle")
            .setDoubleProperty("q", f.charges[i])
            .setIntProperty("t", f.particleTypes[i]);
    node.setBoolProperty("exceptionsPeriodic", f.exceptionsPeriodic);
    SerializationNode &pairs14 = node.createChildNode("Exceptions14");
    for (auto &e : f.exceptions14)
        pairs14.createChildNode("Exception")
            .setIntProperty("p1", e.p1)
            .setIntProperty("p2", e.p2)
            .setDoubleProperty("q", e.chargeProd)
            .setDoubleProperty("sig", e.sigma)
            .setDoubleProperty("eps", e.epsilon);
    SerializationNode &exclusions = node.createChildNode("Exclusions");
    for (auto &e : f.exclusions)
        exclusions.createChildNode("Exclusion")
            .setIntProperty("p1", e.first)
            .setIntProperty("p2", e.second);
}

void *ForcekitNonbondedForceProxy::deserialize(const SerializationNode &node) const
{
    if (node.getIntProperty("version") != 1)
        throw OpenMMException("ForcekitNonbondedForce: unsupported serialization version");
    ForcekitNonbondedForce *f = new ForcekitNonbondedForce();
    try {
        f->setForceGroup(node.getIntProperty("forceGroup", 0));
        f->setName(node.getStringProperty("name", "ForcekitNonbondedForce"));
        f->kernel = node.getStringProperty("kernel");
        f->accum = node.getStringProperty("accum");
        f->algorithm = node.getStringProperty("algorithm", "");
        f->device = node.getStringProperty("device", "");
        f->cutoff = node.getDoubleProperty("cutoff");
        f->coulomb = node.getDoubleProperty("coulomb", 0.0);
        f->skin = node.getDoubleProperty("skin", 0.0);
        f->periodic = node.getBoolProperty("periodic");
        f->reproducible = node.getBoolProperty("reproducible", false);
        f->types = node.getIntProperty("types");
        if (f->types < 1 || f->types > 1024)
            throw OpenMMException("ForcekitNonbondedForce: types must be 1 to 1024");
        f->pairTable.assign((size_t)f->types * f->types * 2, NAN);
        for (auto &pair : node.getChildNode("PairTable").getChildren()) {
            int a = pair.getIntProperty("a"), b = pair.getIntProperty("b");
            if (a < 0 || b < 0 || a >= f->types || b >= f->types)
                throw OpenMMException("ForcekitNonbondedForce: pair type outside the table");
            f->pairTable[(a * f->types + b) * 2] = pair.getDoubleProperty("eps");
            f->pairTable[(a * f->types + b) * 2 + 1] = pair.getDoubleProperty("sig");
        }
        for (double v : f->pairTable)
            if (std::isnan(v))
                throw OpenMMException("ForcekitNonbondedForce: the pair table is incomplete");
        for (auto &p : node.getChildNode("Particles").getChildren()) {
            f->charges.push_back(p.getDoubleProperty("q"));
            f->particleTypes.push_back(p.getIntProperty("t"));
        }
        for (auto &e : node.getChildNode("Exclusions").getChildren())
            f->exclusions.emplace_back(e.getIntProperty("p1"), e.getIntProperty("p2"));
        f->exceptionsPeriodic = node.getBoolProperty("exceptionsPeriodic", false);
        for (auto &child : node.getChildren())
            if (child.getName() == "Exceptions14")
                for (auto &e : child.getChildren())
                    f->exceptions14.push_back({e.getIntProperty("p1"), e.getIntProperty("p2"),
                                               e.getDoubleProperty("q"), e.getDoubleProperty("sig"),
                                               e.getDoubleProperty("eps")});
        f->validate();
    } catch (...) {
        delete f;
        throw;
    }
    return f;
}

} // namespace ForcekitPlugin

// At load time (dlopen by Platform::loadPluginLibrary): XmlSerializer learns the type.
extern "C" __attribute__((constructor)) void forcekitRegisterSerializationProxies()
{
    SerializationProxy::registerProxy(typeid(ForcekitPlugin::ForcekitNonbondedForce),
                                      new ForcekitPlugin::ForcekitNonbondedForceProxy());
}
