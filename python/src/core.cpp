// forcekit._core: the nanobind layer over the C API (include/forcekit/forcekit.h).
//
// This module only marshals: argument checking that Python does better (dtypes, shapes, names)
// lives in forcekit/__init__.py, every computation is the C library's. Arrays arrive here already
// float64 / int32 / uint64 and C-contiguous, so nb::ndarray binds them without a copy.
//
// Threads: forcekit.h says one context and its evaluations are used by one thread at a time.
// Every call into the C library that touches a context releases the GIL and then takes that
// context's mutex (never the other order), so Python threads sharing a context are serialized
// without a deadlock, and threads with their own contexts run in parallel.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

extern "C" {
#include "forcekit/forcekit.h"
}

namespace nb = nanobind;
using namespace nb::literals;

namespace
{

using Positions = nb::ndarray<const double, nb::shape<-1, 3>, nb::c_contig, nb::device::cpu>;
using Vector = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Types = nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Pairs = nb::ndarray<const uint64_t, nb::shape<-1, 2>, nb::c_contig, nb::device::cpu>;
using Flags = nb::ndarray<const uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Output = nb::ndarray<double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Output1 = nb::ndarray<double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// forcekit._errors.from_status(status, name, detail) builds the exception; set by __init__.py.
// A plain reference that is never released: an nb::object here would be released by a C++
// static destructor after the interpreter has finalized (an abort at exit).
PyObject *error_factory = nullptr;

[[noreturn]] void raise_status(fk_status status, const char *detail)
{
    const char *name = fk_status_string(status);
    if (!error_factory)
        throw std::runtime_error(std::string(name) + ": " + (detail ? detail : ""));
    nb::object exc = nb::borrow<nb::object>(error_factory)((int)status, name, detail ? detail : "");
    PyErr_SetObject((PyObject *)Py_TYPE(exc.ptr()), exc.ptr());
    throw nb::python_error();
}

struct Context {
    fk_context *context = nullptr;
    std::mutex mutex;
    size_t live = 0;      // evaluations created from it and not yet destroyed
    bool closing = false; // close() was called: destroyed when the last evaluation goes

    Context(std::optional<std::string> device, std::optional<std::string> kernel_dir,
            std::optional<std::string> cache_dir, bool device_timing)
    {
        fk_context_config config{};
        config.struct_size = sizeof config;
        config.device = device ? device->c_str() : nullptr;
        config.device_timing = device_timing ? FK_DEVICE_TIMING_ON : FK_DEVICE_TIMING_OFF;
        config.kernel_dir = kernel_dir ? kernel_dir->c_str() : nullptr;
        config.cache_dir = cache_dir ? cache_dir->c_str() : nullptr;
        fk_status status;
        {
            nb::gil_scoped_release release;
            status = fk_context_create(&config, &context);
        }
        if (status != FK_OK) {
            std::string detail = context ? fk_context_last_error(context) : "";
            fk_context_destroy(context);
            context = nullptr;
            raise_status(status, detail.c_str());
        }
    }
    ~Context()
    {
        fk_context_destroy(context);
    }
    void release_if_unused()
    {
        if (closing && live == 0 && context) {
            fk_context_destroy(context);
            context = nullptr;
        }
    }
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    fk_context *get() const
    {
        if (!context || closing)
            throw std::runtime_error("the context was closed");
        return context;
    }
    void check(fk_status status) const
    {
        if (status != FK_OK)
            raise_status(status, context ? fk_context_last_error(context) : "");
    }
};

nb::dict device_dict(const fk_device_info &d)
{
    nb::dict out;
    out["selector"] = std::string(d.selector);
    out["platform_index"] = d.platform_index;
    out["device_index"] = d.device_index;
    out["name"] = std::string(d.name);
    out["vendor"] = std::string(d.vendor);
    out["platform_name"] = std::string(d.platform_name);
    out["platform_version"] = std::string(d.platform_version);
    out["device_version"] = std::string(d.device_version);
    out["driver_version"] = std::string(d.driver_version);
    out["opencl_c_version"] = std::string(d.opencl_c_version);
    out["type"] = std::string(fk_device_type_name(d.type));
    out["compute_units"] = d.compute_units;
    out["global_memory_bytes"] = d.global_memory_bytes;
    out["local_memory_bytes"] = d.local_memory_bytes;
    out["max_allocation_bytes"] = d.max_allocation_bytes;
    out["max_work_group_size"] = d.max_work_group_size;
    out["fp64"] = d.fp64 != 0;
    return out;
}

nb::list devices()
{
    fk_device_info *list = nullptr;
    size_t count = 0;
    fk_status status;
    {
        nb::gil_scoped_release release;
        status = fk_devices_list(&list, &count);
    }
    if (status != FK_OK)
        raise_status(status, "listing OpenCL platforms and devices");
    nb::list out;
    for (size_t k = 0; k < count; ++k)
        out.append(device_dict(list[k]));
    fk_devices_free(list);
    return out;
}

// The evaluation's configuration as Python hands it over (already validated there).
struct EvalOptions {
    std::string kernel;
    std::optional<std::string> accum;
    int unroll_i = 0, unroll_j = 0, work_group_size = 0, local_tiling = 0, j_splits = 0;
    bool potential = false;
    double eps = 0;
    bool refresh_cache = false;
    size_t expected_count = 0;
    bool reproducible = false;
    double cutoff = 0, coulomb = 0;
    std::vector<double> parameters;
    std::vector<double> box;
    int exclusion_mode = 0, max_exclusions = 0, algorithm = 0;
    double skin = 0;
    int lanes = 0, result_type = 0, scale_policy = 0, neighbor_lists = 0;
    int positions = 0;
};

struct Evaluator {
    nb::object owner; // the Python Context: keeps it alive while this evaluation exists
    Context *ctx;
    fk_eval *eval = nullptr;
    size_t count = 0; // particles of the last successful set_particles
    size_t components = 0;
    bool potential = false;

    Evaluator(nb::object context_object, const EvalOptions &o) : owner(context_object)
    {
        ctx = nb::cast<Context *>(context_object);
        fk_eval_config config{};
        config.struct_size = sizeof config;
        config.kernel = o.kernel.c_str();
        config.accum = o.accum ? o.accum->c_str() : nullptr;
        config.unroll_i = o.unroll_i;
        config.unroll_j = o.unroll_j;
        config.work_group_size = o.work_group_size;
        config.local_tiling = o.local_tiling;
        config.j_splits = o.j_splits;
        config.potential = o.potential;
        config.eps = o.eps;
        config.refresh_cache = o.refresh_cache;
        config.expected_count = o.expected_count;
        config.reproducible = o.reproducible;
        config.cutoff = o.cutoff;
        config.coulomb = o.coulomb;
        for (size_t k = 0; k < o.parameters.size() && k < FK_LAW_PARAMETERS; ++k)
            config.parameters[k] = o.parameters[k];
        for (size_t k = 0; k < o.box.size() && k < 3; ++k)
            config.box[k] = o.box[k];
        config.exclusion_mode = o.exclusion_mode;
        config.max_exclusions = o.max_exclusions;
        config.algorithm = o.algorithm;
        config.skin = o.skin;
        config.lanes = o.lanes;
        config.result_type = o.result_type;
        config.scale_policy = o.scale_policy;
        config.neighbor_lists = o.neighbor_lists;
        config.positions = o.positions;
        potential = o.potential;
        fk_status status;
        {
            nb::gil_scoped_release release;
            std::lock_guard<std::mutex> lock(ctx->mutex);
            status = fk_eval_create(ctx->get(), &config, &eval);
        }
        if (status != FK_OK) {
            std::string detail = fk_context_last_error(ctx->context);
            fk_eval_destroy(eval);
            eval = nullptr;
            raise_status(status, detail.c_str());
        }
        components = fk_eval_force_components(eval);
        ++ctx->live;
    }
    // Runs with the GIL held (deallocation); a thread computing on another evaluation of this
    // context holds the mutex without the GIL and lets go of it before taking the GIL back.
    ~Evaluator()
    {
        if (eval) {
            std::lock_guard<std::mutex> lock(ctx->mutex);
            fk_eval_destroy(eval);
            --ctx->live;
        }
        ctx->release_if_unused();
    }
    Evaluator(const Evaluator &) = delete;
    Evaluator &operator=(const Evaluator &) = delete;

    template <class F> void call(F &&f)
    {
        fk_status status;
        {
            nb::gil_scoped_release release;
            std::lock_guard<std::mutex> lock(ctx->mutex);
            status = f();
        }
        ctx->check(status);
    }

    void set_particles(Positions positions, std::optional<Vector> masses,
                       std::optional<Positions> velocities, std::optional<Types> types)
    {
        fk_particles particles = {};
        particles.count = positions.shape(0);
        particles.position = positions.data();
        particles.mass = masses ? masses->data() : nullptr;
        particles.velocity = velocities ? velocities->data() : nullptr;
        particles.type = types ? reinterpret_cast<const int *>(types->data()) : nullptr;
        count = 0;
        call([&] { return fk_eval_set_particles(eval, &particles); });
        count = particles.count;
    }

    void update_positions(Positions positions, std::optional<Positions> velocities)
    {
        const double *v = velocities ? velocities->data() : nullptr;
        call([&] { return fk_eval_update_positions(eval, positions.data(), v); });
    }

    double compute(Output forces, std::optional<Output1> potentials)
    {
        double seconds = 0;
        double *p = potentials ? potentials->data() : nullptr;
        call([&] {
            fk_status status = fk_eval_compute(eval, &seconds);
            if (status == FK_OK)
                status = fk_eval_read_forces(eval, forces.data());
            if (status == FK_OK && p)
                status = fk_eval_read_potentials(eval, p);
            return status;
        });
        return seconds;
    }

    void set_pair_table(size_t types, Vector values, std::optional<Flags> present)
    {
        fk_pair_table table = {};
        table.types = types;
        table.values = values.data();
        table.present = present ? present->data() : nullptr;
        call([&] { return fk_eval_set_pair_table(eval, &table); });
    }

    void set_exclusions(Pairs pairs)
    {
        static_assert(sizeof(size_t) == sizeof(uint64_t), "size_t must be 64-bit");
        const size_t *data = reinterpret_cast<const size_t *>(pairs.data());
        const size_t n = pairs.shape(0);
        call([&] { return fk_eval_set_exclusions(eval, n ? data : nullptr, n); });
    }

    nb::dict variant() const
    {
        fk_variant v;
        std::memset(&v, 0, sizeof v);
        fk_status status = fk_eval_get_variant(eval, &v);
        ctx->check(status);
        static const char *sources[] = {"explicit", "default", "user_db", "shipped_db", "fitted"};
        nb::dict out;
        out["unroll_i"] = v.unroll_i;
        out["unroll_j"] = v.unroll_j;
        out["work_group_size"] = v.work_group_size;
        out["local_tiling"] = v.local_tiling != 0;
        out["j_splits"] = v.j_splits;
        out["source"] = (unsigned)v.source < 5 ? sources[v.source] : "unknown";
        out["source_note"] = fk_eval_variant_note(eval);
        out["program_from_cache"] = v.program_from_cache != 0;
        out["build_seconds"] = v.build_seconds;
        out["tuned_count"] = v.tuned_count;
        out["lanes"] = v.lanes;
        out["cell_grid"] = nb::make_tuple(v.cell_grid[0], v.cell_grid[1], v.cell_grid[2]);
        out["cell_rebuilds"] = v.cell_rebuilds;
        out["pairs_examined"] = v.pairs_examined;
        out["neighbor_half_lists"] = v.neighbor_half_lists != 0;
        return out;
    }

    nb::tuple reproducible() const
    {
        const char *reason = nullptr;
        int r = fk_eval_reproducible(eval, &reason);
        return nb::make_tuple(r, reason ? std::string(reason) : std::string());
    }
};

nb::dict kernel_dict(const fk_kernel_info *k)
{
    nb::dict out;
    out["name"] = std::string(k->name);
    out["description"] = std::string(k->description ? k->description : "");
    out["force_components"] = k->force_components;
    out["pair_parameters"] = k->pair_parameters;
    out["pair_format"] = std::string(k->pair_format ? k->pair_format : "");
    out["output_format"] = std::string(k->output_format ? k->output_format : "");
    nb::list params;
    for (unsigned p = 0; p < k->parameter_count; ++p) {
        const fk_kernel_parameter &q = k->parameters[p];
        nb::dict d;
        d["name"] = std::string(q.name);
        d["description"] = std::string(q.description ? q.description : "");
        d["first"] = q.first;
        d["count"] = q.count;
        d["default"] = q.default_value;
        params.append(d);
    }
    out["parameters"] = params;
    return out;
}

nb::list kernels()
{
    nb::list out;
    for (size_t k = 0; fk_kernel_at(k); ++k)
        out.append(kernel_dict(fk_kernel_at(k)));
    return out;
}

nb::list accumulators()
{
    nb::list out;
    for (size_t k = 0; fk_accum_at(k); ++k) {
        const fk_accum_info *a = fk_accum_at(k);
        nb::dict d;
        d["name"] = std::string(a->name);
        d["description"] = std::string(a->description ? a->description : "");
        d["needs_fp64"] = a->needs_fp64 != 0;
        d["order_independent"] = a->error.order_independent != 0;
        out.append(d);
    }
    return out;
}

// The double-precision host reference (fk_reference_forces).
void reference_forces(const std::string &kernel, Positions positions, std::optional<Vector> masses,
                      std::optional<Positions> velocities, std::optional<Types> types, double eps,
                      double cutoff, double coulomb, std::vector<double> parameters,
                      std::vector<double> box, std::optional<Vector> pair_values, size_t pair_types,
                      std::optional<Pairs> exclusions, Output forces,
                      std::optional<Output1> potentials)
{
    fk_particles particles = {};
    particles.count = positions.shape(0);
    particles.position = positions.data();
    particles.mass = masses ? masses->data() : nullptr;
    particles.velocity = velocities ? velocities->data() : nullptr;
    particles.type = types ? reinterpret_cast<const int *>(types->data()) : nullptr;
    fk_physics physics;
    std::memset(&physics, 0, sizeof physics);
    physics.eps = eps;
    physics.cutoff = cutoff;
    physics.coulomb = coulomb;
    for (size_t k = 0; k < parameters.size() && k < FK_LAW_PARAMETERS; ++k)
        physics.parameters[k] = parameters[k];
    for (size_t k = 0; k < box.size() && k < 3; ++k)
        physics.box[k] = box[k];
    fk_pair_table table = {};
    if (pair_values) {
        table.types = pair_types;
        table.values = pair_values->data();
        physics.pair_table = &table;
    }
    if (exclusions && exclusions->shape(0)) {
        physics.exclusions = reinterpret_cast<const size_t *>(exclusions->data());
        physics.exclusion_count = exclusions->shape(0);
    }
    double *p = potentials ? potentials->data() : nullptr;
    fk_status status;
    {
        nb::gil_scoped_release release;
        status = fk_reference_forces(kernel.c_str(), &particles, &physics, forces.data(), p);
    }
    if (status != FK_OK)
        raise_status(status, "fk_reference_forces rejected the input");
}

nb::dict point_dict(const fk_tune_point &p)
{
    static const char *outcomes[] = {"measured", "unsupported", "build_failed", "wrong_result",
                                     "failed"};
    nb::dict d;
    d["unroll_i"] = p.unroll_i;
    d["unroll_j"] = p.unroll_j;
    d["work_group_size"] = p.work_group_size;
    d["local_tiling"] = p.local_tiling != 0;
    d["j_splits"] = p.j_splits;
    d["effective_j_splits"] = p.effective_j_splits;
    d["lanes"] = p.lanes;
    d["outcome"] = (unsigned)p.outcome < 5 ? outcomes[p.outcome] : "unknown";
    d["seconds"] = p.seconds;
    d["error"] = p.error;
    d["tolerance"] = p.tolerance;
    d["note"] = std::string(p.note);
    return d;
}

struct TuneCallback {
    nb::object progress;
    bool failed = false;
};

int tune_progress(const fk_tune_progress *progress, void *user)
{
    TuneCallback *cb = static_cast<TuneCallback *>(user);
    if (cb->failed) // the run may call once more (a bucket's end) after a stop
        return 1;
    nb::gil_scoped_acquire acquire;
    try {
        nb::dict d;
        d["bucket_index"] = progress->bucket_index;
        d["bucket_count"] = progress->bucket_count;
        d["n"] = progress->n;
        d["done"] = progress->done;
        d["planned"] = progress->planned;
        d["elapsed"] = progress->elapsed;
        d["budget"] = progress->budget;
        d["best_seconds"] = progress->best_seconds;
        nb::object stop = cb->progress(d);
        const int truth = PyObject_IsTrue(stop.ptr()); // any truthy value stops, None does not
        if (truth < 0)
            throw nb::python_error();
        return truth;
    } catch (nb::python_error &e) {
        e.restore(); // this thread's error indicator, re-raised after fk_tune_run returns
        cb->failed = true;
        return 1;
    }
}

nb::dict tune(nb::object context_object, const std::string &kernel,
              std::optional<std::string> accum, size_t n, double budget_seconds,
              std::optional<std::string> database, uint64_t seed, int unroll_i, int unroll_j,
              int work_group_size, int local_tiling, int j_splits, int lanes, nb::object progress)
{
    Context *ctx = nb::cast<Context *>(context_object);
    fk_tune_config config{};
    config.struct_size = sizeof config;
    config.kernel = kernel.c_str();
    config.accum = accum ? accum->c_str() : nullptr;
    config.n = n;
    config.budget_seconds = budget_seconds;
    config.database = database ? database->c_str() : nullptr;
    config.seed = seed;
    config.unroll_i = unroll_i;
    config.unroll_j = unroll_j;
    config.work_group_size = work_group_size;
    config.local_tiling = local_tiling;
    config.j_splits = j_splits;
    config.lanes = lanes;
    TuneCallback cb{progress};
    if (!progress.is_none()) {
        config.progress = tune_progress;
        config.user = &cb;
    }
    fk_tune_result *result = nullptr;
    fk_status status;
    {
        nb::gil_scoped_release release;
        std::lock_guard<std::mutex> lock(ctx->mutex);
        status = fk_tune_run(ctx->get(), &config, &result);
    }
    if (cb.failed) {
        fk_tune_result_free(result);
        throw nb::python_error();
    }
    if (status != FK_OK) {
        fk_tune_result_free(result);
        ctx->check(status);
    }
    static const char *searches[] = {"exhaustive", "sampled", "skipped"};
    nb::dict out;
    out["kernel"] = std::string(result->kernel);
    out["accum"] = std::string(result->accum);
    out["device_type"] = std::string(result->device_type);
    out["vendor"] = std::string(result->vendor);
    out["architecture"] = std::string(result->architecture);
    out["device"] = std::string(result->device);
    out["database"] = std::string(result->database);
    out["interrupted"] = result->interrupted != 0;
    out["seconds"] = result->seconds;
    nb::list buckets;
    for (size_t b = 0; b < result->bucket_count; ++b) {
        const fk_tune_bucket_result &r = result->buckets[b];
        nb::dict d;
        d["bucket"] = r.bucket;
        d["n"] = r.n;
        d["search"] = (unsigned)r.search < 3 ? searches[r.search] : "unknown";
        d["space_size"] = r.space_size;
        d["tried"] = r.tried_count;
        d["best"] = r.has_best ? nb::object(point_dict(r.best)) : nb::none();
        d["untuned_seconds"] = r.untuned_seconds;
        d["seconds"] = r.seconds;
        d["note"] = std::string(r.note);
        buckets.append(d);
    }
    out["buckets"] = buckets;
    fk_tune_result_free(result);
    return out;
}

} // namespace

NB_MODULE(_core, m)
{
    m.doc() = "Low-level binding of the forcekit C library; use the forcekit package instead.";
    m.def("_set_error_factory", [](nb::object f) {
        Py_XDECREF(error_factory);
        error_factory = f.release().ptr();
    });
    m.def("version", [] { return std::string(fk_version()); });
    m.def("devices", &devices);
    m.def("kernels", &kernels);
    m.def("accumulators", &accumulators);
    m.def("algorithm_find", [](const std::string &name) {
        fk_algorithm a;
        if (fk_algorithm_find(name.c_str(), &a) != FK_OK)
            return -1;
        return (int)a;
    });

    nb::class_<Context>(m, "Context")
        .def(nb::init<std::optional<std::string>, std::optional<std::string>,
                      std::optional<std::string>, bool>(),
             "device"_a.none(), "kernel_dir"_a.none(), "cache_dir"_a.none(),
             "device_timing"_a = true)
        .def("close",
             [](Context &c) {
                 nb::gil_scoped_release release;
                 std::lock_guard<std::mutex> lock(c.mutex);
                 c.closing = true;
                 c.release_if_unused();
             })
        .def_prop_ro("closed", [](const Context &c) { return c.closing || !c.context; })
        .def_prop_ro("device",
                     [](const Context &c) { return device_dict(*fk_context_device(c.get())); })
        .def_prop_ro("last_error",
                     [](const Context &c) { return std::string(fk_context_last_error(c.get())); })
        .def_prop_ro("warnings",
                     [](const Context &c) { return std::string(fk_context_warnings(c.get())); })
        .def_prop_ro("kernel_dir",
                     [](const Context &c) { return std::string(fk_context_kernel_dir(c.get())); })
        .def_prop_ro("cache_dir", [](const Context &c) {
            const char *d = fk_context_cache_dir(c.get());
            return d ? nb::object(nb::str(d)) : nb::none();
        });

    nb::class_<EvalOptions>(m, "EvalOptions")
        .def(nb::init<>())
        .def_rw("kernel", &EvalOptions::kernel)
        .def_rw("accum", &EvalOptions::accum, nb::arg().none())
        .def_rw("unroll_i", &EvalOptions::unroll_i)
        .def_rw("unroll_j", &EvalOptions::unroll_j)
        .def_rw("work_group_size", &EvalOptions::work_group_size)
        .def_rw("local_tiling", &EvalOptions::local_tiling)
        .def_rw("j_splits", &EvalOptions::j_splits)
        .def_rw("potential", &EvalOptions::potential)
        .def_rw("eps", &EvalOptions::eps)
        .def_rw("refresh_cache", &EvalOptions::refresh_cache)
        .def_rw("expected_count", &EvalOptions::expected_count)
        .def_rw("reproducible", &EvalOptions::reproducible)
        .def_rw("cutoff", &EvalOptions::cutoff)
        .def_rw("coulomb", &EvalOptions::coulomb)
        .def_rw("parameters", &EvalOptions::parameters)
        .def_rw("box", &EvalOptions::box)
        .def_rw("exclusion_mode", &EvalOptions::exclusion_mode)
        .def_rw("max_exclusions", &EvalOptions::max_exclusions)
        .def_rw("algorithm", &EvalOptions::algorithm)
        .def_rw("skin", &EvalOptions::skin)
        .def_rw("lanes", &EvalOptions::lanes)
        .def_rw("result_type", &EvalOptions::result_type)
        .def_rw("scale_policy", &EvalOptions::scale_policy)
        .def_rw("neighbor_lists", &EvalOptions::neighbor_lists)
        .def_rw("positions", &EvalOptions::positions);

    nb::class_<Evaluator>(m, "Evaluator")
        .def(nb::init<nb::object, const EvalOptions &>())
        .def("set_particles", &Evaluator::set_particles, "positions"_a, "masses"_a.none(),
             "velocities"_a.none(), "types"_a.none())
        .def("update_positions", &Evaluator::update_positions, "positions"_a, "velocities"_a.none())
        .def("compute", &Evaluator::compute, "forces"_a, "potentials"_a.none())
        .def("set_pair_table", &Evaluator::set_pair_table, "types"_a, "values"_a,
             "present"_a.none())
        .def("set_exclusions", &Evaluator::set_exclusions, "pairs"_a)
        .def_prop_ro("variant", &Evaluator::variant)
        .def_prop_ro("reproducible", &Evaluator::reproducible)
        .def_ro("count", &Evaluator::count)
        .def_ro("components", &Evaluator::components)
        .def_ro("potential", &Evaluator::potential);

    m.def("reference_forces", &reference_forces, "kernel"_a, "positions"_a, "masses"_a.none(),
          "velocities"_a.none(), "types"_a.none(), "eps"_a, "cutoff"_a, "coulomb"_a, "parameters"_a,
          "box"_a, "pair_values"_a.none(), "pair_types"_a, "exclusions"_a.none(), "forces"_a,
          "potentials"_a.none());
    m.def("tune", &tune, "context"_a, "kernel"_a, "accum"_a.none(), "n"_a, "budget_seconds"_a,
          "database"_a.none(), "seed"_a, "unroll_i"_a, "unroll_j"_a, "work_group_size"_a,
          "local_tiling"_a, "j_splits"_a, "lanes"_a, "progress"_a.none());
}
