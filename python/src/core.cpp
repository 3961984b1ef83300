// forcekit._core: the nanobind layer over the C API (include/forcekit/forcekit.h).
//
// This module only marshals: argument checking that Python does better (dtypes, shapes, names)
// lives in forcekit/__init__.py, every computation is the C library's. Arrays arrive here already
// float64 / int32 / uint64 and C-contiguous, so nb::ndarray binds them without a copy. Sizes are
// still checked here too (a wrong size would be a heap overflow, not an exception).
//
// Threads: forcekit.h says one context and its evaluations are used by one thread at a time.
// Every call into the C library that touches a context goes through Context::locked: it releases
// the GIL and then takes that context's mutex, never the other order, so Python threads sharing
// a context are serialized, and threads with their own contexts run in parallel. The rules that
// keep this free of deadlocks and races (issue #32):
//  - No thread waits for a context's mutex while it holds the GIL. A thread holding the mutex may
//    need the GIL (fk_tune_run's progress callback calls Python), so waiting for the mutex with
//    the GIL held could deadlock. Destructors run with the GIL held and cannot release it for a
//    wait of unknown length (a tune runs for minutes; at interpreter exit the holder may never
//    come back), so ~Evaluator only try-locks and otherwise hands its evaluation to the thread
//    that holds the mutex, which destroys it when it lets go (Context::retire).
//  - Everything that depends on the evaluation's state is read and sized under the mutex: the
//    particle count, the arrays compute() fills (allocated there, wrapped into numpy arrays after),
//    the counts update_positions() checks, the last error of a failed call. A set_particles from
//    another thread can change N between any two calls, never within one.
//  - A thread that holds the mutex (a tune's progress callback) and calls into the same context
//    again gets a RuntimeError instead of locking a mutex it already holds.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
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
using Result2 = nb::ndarray<nb::numpy, double, nb::ndim<2>>;
using Result1 = nb::ndarray<nb::numpy, double, nb::ndim<1>>;

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

std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char *fmt, ...)
{
    char text[512];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    return text;
}

// A call's outcome as seen under the context's mutex: the status, and the context's last error
// read before another thread's call could replace it. Raised once the GIL is back.
struct Outcome {
    fk_status status = FK_OK;
    std::string detail;
    std::string value_error; // a size check that failed (a ValueError naming the argument)
    bool closed = false;     // the context was closed

    void raise_if_failed() const
    {
        if (closed)
            throw std::runtime_error("the context was closed");
        if (!value_error.empty())
            throw nb::value_error(value_error.c_str());
        if (status != FK_OK)
            raise_status(status, detail.c_str());
    }
};

// A numpy array that takes over a buffer allocated without the GIL (under the context's mutex).
nb::object adopt(std::unique_ptr<double[]> data, size_t rows, size_t columns)
{
    double *raw = data.get();
    nb::capsule owner(raw, [](void *p) noexcept { delete[] static_cast<double *>(p); });
    data.release();
    if (columns == 0)
        return Result1(raw, {rows}, owner).cast();
    return Result2(raw, {rows, columns}, owner).cast();
}

std::unique_ptr<double[]> allocate(size_t count)
{
    return std::unique_ptr<double[]>(new (std::nothrow) double[count ? count : 1]);
}

// An object whose Python owner went while another thread held the context's mutex. An
// integrator holds a reference to its evaluation's Python object, so it is always retired before
// that evaluation: destroying in the order of retirement destroys the integrator first.
struct Retired {
    fk_eval *eval = nullptr;
    fk_integrator *integrator = nullptr;

    // With the context's mutex held. Returns whether an evaluation went (it counts in `live`).
    bool destroy() const
    {
        fk_integrator_destroy(integrator);
        fk_eval_destroy(eval);
        return eval != nullptr;
    }
};

struct Context {
    fk_context *context = nullptr;
    std::mutex mutex;
    // The thread that holds mutex (a default id when none): a call from that same thread (a
    // tune's progress callback) must not lock it again.
    std::atomic<std::thread::id> holder{};
    size_t live = 0;                  // evaluations created from it and not yet destroyed (mutex)
    std::atomic<bool> closing{false}; // close() was called: destroyed when the last evaluation goes
    // Evaluations whose Python objects went while another thread held mutex: that thread
    // destroys them when it lets go of it (retire). pending_mutex is only ever held for a push or
    // a swap, never while waiting for anything else.
    std::mutex pending_mutex;
    std::vector<Retired> pending;
    // Fixed for the life of the context: copied once, readable without the mutex.
    fk_device_info device{};
    std::string kernel_dir;
    std::optional<std::string> cache_dir;

    Context(std::optional<std::string> device_selector, std::optional<std::string> kernels,
            std::optional<std::string> cache, bool device_timing)
    {
        fk_context_config config{};
        config.struct_size = sizeof config;
        config.device = device_selector ? device_selector->c_str() : nullptr;
        config.device_timing = device_timing ? FK_DEVICE_TIMING_ON : FK_DEVICE_TIMING_OFF;
        config.kernel_dir = kernels ? kernels->c_str() : nullptr;
        config.cache_dir = cache ? cache->c_str() : nullptr;
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
        device = *fk_context_device(context);
        kernel_dir = fk_context_kernel_dir(context);
        if (const char *d = fk_context_cache_dir(context))
            cache_dir = d;
    }
    // The Python object is gone, so no evaluation (each keeps it alive) and no tune (its argument)
    // uses the context: nothing holds the mutex.
    ~Context()
    {
        for (const Retired &r : pending)
            r.destroy();
        fk_context_destroy(context);
    }
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    // Runs f() with the mutex held and the GIL released; call it with the GIL held. f must not
    // touch Python objects (it may raise nothing but C++ exceptions of its own).
    template <class F> auto locked(F &&f) -> decltype(f())
    {
        if (holder.load() == std::this_thread::get_id())
            throw std::runtime_error(
                "forcekit: this thread is already inside a call on this context (a tune() "
                "progress callback must not use the context being tuned)");
        nb::gil_scoped_release release;
        mutex.lock();
        holder.store(std::this_thread::get_id());
        struct Unlock {
            Context *c;
            ~Unlock()
            {
                c->unlock();
            }
        } unlock_at_exit{this};
        return f();
    }

    // With the mutex held: destroys what was retired meanwhile, lets go of the mutex, and takes it
    // back for evaluations retired while it was being released (else they would wait for the next
    // call). A failed try_lock means another thread holds it and will do the same.
    void unlock()
    {
        for (;;) {
            destroy_pending();
            holder.store(std::thread::id());
            mutex.unlock();
            {
                std::lock_guard<std::mutex> guard(pending_mutex);
                if (pending.empty())
                    return;
            }
            if (!mutex.try_lock())
                return;
            holder.store(std::this_thread::get_id());
        }
    }

    void destroy_pending()
    {
        std::vector<Retired> retired;
        {
            std::lock_guard<std::mutex> guard(pending_mutex);
            retired.swap(pending);
        }
        for (const Retired &r : retired)
            if (r.destroy())
                --live;
        release_if_unused();
    }

    // An evaluation or integrator whose Python object goes (with the GIL held, so without
    // waiting for the mutex): destroyed now if the mutex is free, else by the thread that holds it.
    void retire(Retired object)
    {
        {
            std::lock_guard<std::mutex> guard(pending_mutex);
            pending.push_back(object);
        }
        // This thread may hold the mutex further up its stack (an evaluation collected inside a
        // tune's progress callback): that call's unlock destroys it. try_lock from the owner
        // would be undefined.
        if (holder.load() == std::this_thread::get_id())
            return;
        if (mutex.try_lock()) {
            holder.store(std::this_thread::get_id());
            unlock();
        }
    }

    // With the mutex held.
    void release_if_unused()
    {
        if (closing && live == 0 && context) {
            fk_context_destroy(context);
            context = nullptr;
        }
    }

    // With the mutex held: the context for a new use, or nullptr once closed.
    fk_context *usable() const
    {
        return closing ? nullptr : context;
    }

    // With the mutex held.
    Outcome outcome(fk_status status) const
    {
        Outcome o;
        o.status = status;
        if (status != FK_OK && context)
            o.detail = fk_context_last_error(context);
        return o;
    }

    void check_open() const
    {
        if (closing)
            throw std::runtime_error("the context was closed");
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
    // Particles of the last successful set_particles; written under the context's mutex, read
    // anywhere (the authoritative reads are under the mutex too).
    std::atomic<size_t> count{0};
    size_t components = 0;
    size_t pair_parameters = 0;
    bool potential = false;

    Evaluator(nb::object context_object, const EvalOptions &o) : owner(context_object)
    {
        ctx = nb::cast<Context *>(context_object);
        const fk_kernel_info *info = fk_kernel_find(o.kernel.c_str());
        pair_parameters = info ? info->pair_parameters : 0;
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
        // Created and counted in one hold of the mutex: a close() in between would otherwise
        // destroy the context under the new evaluation.
        Outcome out = ctx->locked([&] {
            Outcome result;
            fk_context *context = ctx->usable();
            if (!context) {
                result.closed = true;
                return result;
            }
            result = ctx->outcome(fk_eval_create(context, &config, &eval));
            if (result.status != FK_OK) {
                fk_eval_destroy(eval);
                eval = nullptr;
                return result;
            }
            components = fk_eval_force_components(eval);
            ++ctx->live;
            return result;
        });
        out.raise_if_failed();
    }
    // Runs with the GIL held (deallocation): never waits for the mutex (see the top of the file).
    ~Evaluator()
    {
        if (eval)
            ctx->retire(Retired{eval, nullptr});
    }
    Evaluator(const Evaluator &) = delete;
    Evaluator &operator=(const Evaluator &) = delete;

    void set_particles(Positions positions, std::optional<Vector> masses,
                       std::optional<Positions> velocities, std::optional<Types> types)
    {
        const size_t n = positions.shape(0);
        if (masses && masses->shape(0) != n)
            throw nb::value_error(
                format("masses_or_charges: expected shape (%zu,), got (%zu,)", n, masses->shape(0))
                    .c_str());
        if (velocities && velocities->shape(0) != n)
            throw nb::value_error(
                format("velocities: expected shape (%zu, 3), got (%zu, 3)", n, velocities->shape(0))
                    .c_str());
        if (types && types->shape(0) != n)
            throw nb::value_error(
                format("types: expected shape (%zu,), got (%zu,)", n, types->shape(0)).c_str());
        fk_particles particles = {};
        particles.count = n;
        particles.position = positions.data();
        particles.mass = masses ? masses->data() : nullptr;
        particles.velocity = velocities ? velocities->data() : nullptr;
        particles.type = types ? reinterpret_cast<const int *>(types->data()) : nullptr;
        ctx->locked([&] {
               Outcome o = ctx->outcome(fk_eval_set_particles(eval, &particles));
               // One store: a reader outside the mutex (update_positions' early check) never sees
               // a count between the old and the new.
               count = o.status == FK_OK ? n : 0;
               return o;
           })
            .raise_if_failed();
    }

    void update_positions(Positions positions, std::optional<Positions> velocities)
    {
        const double *v = velocities ? velocities->data() : nullptr;
        ctx->locked([&] {
               Outcome o;
               const size_t n = count;
               if (n == 0) {
                   o.status = FK_ERR_STATE;
                   o.detail = "update_positions before set_particles";
               } else if (positions.shape(0) != n) {
                   o.value_error = format("positions: expected shape (%zu, 3), got (%zu, 3)", n,
                                          positions.shape(0));
               } else if (velocities && velocities->shape(0) != n) {
                   o.value_error = format("velocities: expected shape (%zu, 3), got (%zu, 3)", n,
                                          velocities->shape(0));
               } else {
                   o = ctx->outcome(fk_eval_update_positions(eval, positions.data(), v));
               }
               return o;
           })
            .raise_if_failed();
    }

    // Returns (forces, potentials or None, device seconds). The result arrays are sized by the
    // particle count under the mutex, where they are filled: new arrays, or out when its shape
    // is (N, components) for the N of that moment.
    nb::tuple compute(std::optional<Output> out)
    {
        double seconds = 0;
        size_t n = 0;
        std::unique_ptr<double[]> forces, potentials;
        Outcome result = ctx->locked([&] {
            Outcome o;
            n = count;
            if (n == 0) {
                o.status = FK_ERR_STATE;
                o.detail = "compute before set_particles";
                return o;
            }
            double *target = nullptr;
            if (out) {
                if (out->shape(0) != n || out->shape(1) != components) {
                    o.value_error = format("out: expected shape (%zu, %zu), got (%zu, %zu)", n,
                                           components, out->shape(0), out->shape(1));
                    return o;
                }
                target = out->data();
            } else {
                forces = allocate(n * components);
                target = forces.get();
            }
            if (potential)
                potentials = allocate(n);
            if (!target || (potential && !potentials)) {
                o.status = FK_ERR_HOST_MEMORY;
                o.detail = "allocating the result arrays";
                return o;
            }
            fk_status status = fk_eval_compute(eval, &seconds);
            if (status == FK_OK)
                status = fk_eval_read_forces(eval, target);
            if (status == FK_OK && potential)
                status = fk_eval_read_potentials(eval, potentials.get());
            return ctx->outcome(status);
        });
        result.raise_if_failed();
        // out itself is returned by the Python layer (a cast here would be a new array object).
        nb::object f = out ? nb::none() : adopt(std::move(forces), n, components);
        nb::object p = potential ? adopt(std::move(potentials), n, 0) : nb::none();
        return nb::make_tuple(f, p, seconds);
    }

    void set_pair_table(size_t types, Vector values, std::optional<Flags> present)
    {
        // types * types * P values (and types * types flags), or the library reads past them.
        const size_t p = pair_parameters;
        if (types == 0 || types > (size_t)INT_MAX || values.shape(0) / types / types != p ||
            values.shape(0) != types * types * p)
            throw nb::value_error(format("table: expected %zu x %zu x %zu values, got %zu", types,
                                         types, p, values.shape(0))
                                      .c_str());
        if (present && present->shape(0) != types * types)
            throw nb::value_error(format("present: expected %zu x %zu flags, got %zu", types, types,
                                         present->shape(0))
                                      .c_str());
        fk_pair_table table = {};
        table.types = types;
        table.values = values.data();
        table.present = present ? present->data() : nullptr;
        ctx->locked([&] { return ctx->outcome(fk_eval_set_pair_table(eval, &table)); })
            .raise_if_failed();
    }

    void set_exclusions(Pairs pairs)
    {
        static_assert(sizeof(size_t) == sizeof(uint64_t), "size_t must be 64-bit");
        const size_t *data = reinterpret_cast<const size_t *>(pairs.data());
        const size_t n = pairs.shape(0);
        ctx->locked(
               [&] { return ctx->outcome(fk_eval_set_exclusions(eval, n ? data : nullptr, n)); })
            .raise_if_failed();
    }

    nb::dict variant()
    {
        fk_variant v;
        std::memset(&v, 0, sizeof v);
        ctx->locked([&] { return ctx->outcome(fk_eval_get_variant(eval, &v)); }).raise_if_failed();
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

    nb::tuple reproducible()
    {
        int r = 0;
        std::string why;
        ctx->locked([&] {
            const char *reason = nullptr;
            r = fk_eval_reproducible(eval, &reason);
            if (reason)
                why = reason;
            return Outcome();
        });
        return nb::make_tuple(r, why);
    }
};

// The device integrator on an evaluation (fk_integrator, issue #33). It keeps the Python
// Evaluator (and through it the Context) alive: forcekit.h requires the evaluation to outlive the
// integrator.
struct Integrator {
    nb::object owner; // the Python-level _core.Evaluator
    Evaluator *evaluator;
    Context *ctx;
    fk_integrator *integrator = nullptr;
    bool potential = false;

    Integrator(nb::object evaluator_object, int kind, double dt, double temperature,
               double friction, uint64_t seed, std::optional<Vector> masses)
        : owner(evaluator_object)
    {
        evaluator = nb::cast<Evaluator *>(evaluator_object);
        ctx = evaluator->ctx;
        potential = evaluator->potential;
        fk_integrator_config config{};
        config.struct_size = sizeof config;
        config.kind = kind;
        config.dt = dt;
        config.temperature = temperature;
        config.friction = friction;
        config.seed = seed;
        config.masses = masses ? masses->data() : nullptr;
        config.mass_count = masses ? masses->shape(0) : 0;
        ctx->locked([&] {
               Outcome o = ctx->outcome(
                   fk_integrator_create(evaluator->eval, &config, &integrator));
               if (o.status != FK_OK) {
                   fk_integrator_destroy(integrator);
                   integrator = nullptr;
               }
               return o;
           })
            .raise_if_failed();
    }
    ~Integrator()
    {
        if (integrator)
            ctx->retire(Retired{nullptr, integrator});
    }
    Integrator(const Integrator &) = delete;
    Integrator &operator=(const Integrator &) = delete;

    void set_state(Positions positions, std::optional<Positions> velocities, uint64_t step)
    {
        ctx->locked([&] {
               Outcome o;
               const size_t n = evaluator->count;
               if (positions.shape(0) != n)
                   o.value_error = format("positions: expected shape (%zu, 3), got (%zu, 3)", n,
                                          positions.shape(0));
               else if (velocities && velocities->shape(0) != n)
                   o.value_error = format("velocities: expected shape (%zu, 3), got (%zu, 3)", n,
                                          velocities->shape(0));
               else
                   o = ctx->outcome(fk_integrator_set_state(
                       integrator, positions.data(), velocities ? velocities->data() : nullptr,
                       step));
               return o;
           })
            .raise_if_failed();
    }

    void step(uint64_t steps)
    {
        ctx->locked([&] { return ctx->outcome(fk_integrator_step(integrator, steps)); })
            .raise_if_failed();
    }

    // (positions, velocities, step), new arrays sized under the mutex.
    nb::tuple state()
    {
        std::unique_ptr<double[]> x, v;
        size_t n = 0;
        uint64_t step = 0;
        ctx->locked([&] {
               Outcome o;
               n = evaluator->count;
               x = allocate(3 * n);
               v = allocate(3 * n);
               if (!x || !v) {
                   o.status = FK_ERR_HOST_MEMORY;
                   o.detail = "allocating the state arrays";
                   return o;
               }
               return ctx->outcome(fk_integrator_get_state(integrator, x.get(), v.get(), &step));
           })
            .raise_if_failed();
        return nb::make_tuple(adopt(std::move(x), n, 3), adopt(std::move(v), n, 3), step);
    }

    // (kinetic, potential or None when the evaluation has no potentials).
    nb::tuple energies()
    {
        double kinetic = 0, potential_energy = 0;
        ctx->locked([&] {
               return ctx->outcome(fk_integrator_energies(
                   integrator, &kinetic, potential ? &potential_energy : nullptr));
           })
            .raise_if_failed();
        return nb::make_tuple(kinetic, potential ? nb::object(nb::float_(potential_energy))
                                                 : nb::none());
    }

    nb::dict counters()
    {
        uint64_t rebuilds = 0, rescales = 0, syncs = 0;
        ctx->locked([&] {
               return ctx->outcome(
                   fk_integrator_counters(integrator, &rebuilds, &rescales, &syncs));
           })
            .raise_if_failed();
        nb::dict out;
        out["rebuilds"] = rebuilds;
        out["rescales"] = rescales;
        out["syncs"] = syncs;
        return out;
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

// The double-precision host reference: (forces, potentials or None). Computed in slices of
// rows (fk_reference_forces_rows) with the GIL released, checking for Ctrl-C between them: an
// O(N^2) reference at large N takes minutes, and a single call could not be interrupted.
nb::tuple reference_forces(const std::string &kernel, Positions positions,
                           std::optional<Vector> masses, std::optional<Positions> velocities,
                           std::optional<Types> types, double eps, double cutoff, double coulomb,
                           std::vector<double> parameters, std::vector<double> box,
                           std::optional<Vector> pair_values, size_t pair_types,
                           std::optional<Pairs> exclusions, bool potential)
{
    const fk_kernel_info *info = fk_kernel_find(kernel.c_str());
    if (!info)
        throw nb::value_error(format("kernel: unknown force law '%s'", kernel.c_str()).c_str());
    const size_t n = positions.shape(0);
    const size_t components = info->force_components;
    if (n == 0)
        throw nb::value_error("positions: at least one particle is needed, got shape (0, 3)");
    if (masses && masses->shape(0) != n)
        throw nb::value_error("masses_or_charges: one value per particle expected");
    if (velocities && velocities->shape(0) != n)
        throw nb::value_error("velocities: one row per particle expected");
    if (types && types->shape(0) != n)
        throw nb::value_error("types: one value per particle expected");
    if (pair_values && (pair_types == 0 || pair_types > (size_t)INT_MAX ||
                        pair_values->shape(0) / pair_types / pair_types != info->pair_parameters ||
                        pair_values->shape(0) != pair_types * pair_types * info->pair_parameters))
        throw nb::value_error("pair_table: expected T x T x (the law's pair parameters) values");
    fk_particles particles = {};
    particles.count = n;
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
    std::unique_ptr<double[]> forces = allocate(n * components);
    std::unique_ptr<double[]> potentials = potential ? allocate(n) : nullptr;
    if (!forces || (potential && !potentials))
        throw std::bad_alloc();
    // About 2^21 pair terms a slice: milliseconds, so Ctrl-C is prompt and the slices' own cost
    // (a GIL round trip, the law's setup) is negligible.
    const size_t rows = std::max<size_t>(1, ((size_t)1 << 21) / n);
    for (size_t first = 0; first < n; first += rows) {
        const size_t end = std::min(n, first + rows);
        fk_status status;
        {
            nb::gil_scoped_release release;
            status = fk_reference_forces_rows(kernel.c_str(), &particles, &physics, first, end,
                                              forces.get() + first * components,
                                              potential ? potentials.get() + first : nullptr);
        }
        if (status != FK_OK)
            raise_status(status, "fk_reference_forces rejected the input (coincident particles "
                                 "without softening, an exclusion or type out of range, a "
                                 "parameter out of range)");
        if (PyErr_CheckSignals() != 0)
            throw nb::python_error();
    }
    nb::object p = potential ? adopt(std::move(potentials), n, 0) : nb::none();
    return nb::make_tuple(adopt(std::move(forces), n, components), p);
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
    nb::object progress; // None: only the Ctrl-C check
    bool failed = false; // the callback raised, or a signal handler did (the error is set)
};

// Called by fk_tune_run after each candidate, on the thread that holds the context's mutex, with
// the GIL released: it takes the GIL, which is safe because no thread waits for the mutex while
// holding the GIL (the top of this file). Without a Python callback it only runs the signal
// handlers, so that Ctrl-C stops a tune after the current candidate.
int tune_progress(const fk_tune_progress *progress, void *user)
{
    TuneCallback *cb = static_cast<TuneCallback *>(user);
    if (cb->failed) // the run may call once more (a bucket's end) after a stop
        return 1;
    nb::gil_scoped_acquire acquire;
    try {
        int stop = 0;
        if (!cb->progress.is_none()) {
            nb::dict d;
            d["bucket_index"] = progress->bucket_index;
            d["bucket_count"] = progress->bucket_count;
            d["n"] = progress->n;
            d["done"] = progress->done;
            d["planned"] = progress->planned;
            d["elapsed"] = progress->elapsed;
            d["budget"] = progress->budget;
            d["best_seconds"] = progress->best_seconds;
            nb::object answer = cb->progress(d);
            stop = PyObject_IsTrue(answer.ptr()); // any truthy value stops, None does not
            if (stop < 0)
                throw nb::python_error();
        }
        if (PyErr_CheckSignals() != 0)
            throw nb::python_error();
        return stop;
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
    config.progress = tune_progress;
    config.user = &cb;
    fk_tune_result *result = nullptr;
    Outcome outcome = ctx->locked([&] {
        Outcome o;
        fk_context *context = ctx->usable();
        if (!context) {
            o.closed = true;
            return o;
        }
        return ctx->outcome(fk_tune_run(context, &config, &result));
    });
    if (cb.failed) {
        fk_tune_result_free(result);
        throw nb::python_error();
    }
    if (outcome.status != FK_OK || outcome.closed) {
        fk_tune_result_free(result);
        outcome.raise_if_failed();
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
                 c.locked([&] {
                     c.closing = true;
                     c.release_if_unused();
                     return 0;
                 });
             })
        .def_prop_ro("closed", [](const Context &c) { return c.closing.load(); })
        // Evaluations not yet destroyed (the tests check that retired ones do go).
        .def_prop_ro("_live", [](Context &c) { return c.locked([&] { return c.live; }); })
        .def_prop_ro("device",
                     [](const Context &c) {
                         c.check_open();
                         return device_dict(c.device);
                     })
        .def_prop_ro("last_error",
                     [](Context &c) {
                         c.check_open();
                         return c.locked([&] {
                             return std::string(c.context ? fk_context_last_error(c.context) : "");
                         });
                     })
        .def_prop_ro("warnings",
                     [](Context &c) {
                         c.check_open();
                         return c.locked([&] {
                             return std::string(c.context ? fk_context_warnings(c.context) : "");
                         });
                     })
        .def_prop_ro("kernel_dir",
                     [](const Context &c) {
                         c.check_open();
                         return c.kernel_dir;
                     })
        .def_prop_ro("cache_dir", [](const Context &c) {
            c.check_open();
            return c.cache_dir ? nb::object(nb::str(c.cache_dir->c_str())) : nb::none();
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
        .def("compute", &Evaluator::compute, "out"_a.none().noconvert())
        .def("set_pair_table", &Evaluator::set_pair_table, "types"_a, "values"_a,
             "present"_a.none())
        .def("set_exclusions", &Evaluator::set_exclusions, "pairs"_a)
        .def_prop_ro("variant", &Evaluator::variant)
        .def_prop_ro("reproducible", &Evaluator::reproducible)
        .def_prop_ro("count", [](const Evaluator &e) { return e.count.load(); })
        .def_ro("components", &Evaluator::components)
        .def_ro("potential", &Evaluator::potential);

    nb::class_<Integrator>(m, "Integrator")
        .def(nb::init<nb::object, int, double, double, double, uint64_t, std::optional<Vector>>(),
             "evaluator"_a, "kind"_a, "dt"_a, "temperature"_a, "friction"_a, "seed"_a,
             "masses"_a.none())
        .def("set_state", &Integrator::set_state, "positions"_a, "velocities"_a.none(), "step"_a)
        .def("step", &Integrator::step, "steps"_a)
        .def("state", &Integrator::state)
        .def("energies", &Integrator::energies)
        .def("counters", &Integrator::counters);

    m.def("reference_forces", &reference_forces, "kernel"_a, "positions"_a, "masses"_a.none(),
          "velocities"_a.none(), "types"_a.none(), "eps"_a, "cutoff"_a, "coulomb"_a, "parameters"_a,
          "box"_a, "pair_values"_a.none(), "pair_types"_a, "exclusions"_a.none(), "potential"_a);
    m.def("tune", &tune, "context"_a, "kernel"_a, "accum"_a.none(), "n"_a, "budget_seconds"_a,
          "database"_a.none(), "seed"_a, "unroll_i"_a, "unroll_j"_a, "work_group_size"_a,
          "local_tiling"_a, "j_splits"_a, "lanes"_a, "progress"_a.none());
}
