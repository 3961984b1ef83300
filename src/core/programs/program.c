/* Finding, specializing and building the .cl sources, with the compiled-program cache. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/programs/cache.h"
#include "core/internal.h"

/* A growable string. */
typedef struct text {
    char *data;
    size_t length, capacity;
    int failed;
} text;

static void text_append(text *t, const char *data, size_t length)
{
    if (t->failed)
        return;
    if (t->length + length + 1 > t->capacity) {
        size_t capacity = t->capacity ? t->capacity : 4096;
        while (capacity < t->length + length + 1)
            capacity *= 2;
        char *grown = realloc(t->data, capacity);
        if (!grown) {
            t->failed = 1;
            return;
        }
        t->data = grown;
        t->capacity = capacity;
    }
    memcpy(t->data + t->length, data, length);
    t->length += length;
    t->data[t->length] = '\0';
}

static void text_printf(text *t, const char *format, ...) FK_PRINTF(2, 3);
static void text_printf(text *t, const char *format, ...)
{
    char buffer[1024];
    va_list args;
    va_start(args, format);
    int length = vsnprintf(buffer, sizeof buffer, format, args);
    va_end(args);
    if (length < 0 || (size_t)length >= sizeof buffer) {
        t->failed = 1;
        return;
    }
    text_append(t, buffer, (size_t)length);
}

typedef struct expander {
    fk_context *context;
    const char *force_header;
    const char *accum_header;
    text out;
    fk_status status;
} expander;

/*
 * Expands #include lines ourselves: the result is one self-contained source that is hashed for the
 * cache (as POCL hashes preprocessed source) and handed to the compiler without -I paths, which
 * differ between drivers. `#include "path"` is relative to the kernel directory; `#include
 * FORCE_HEADER` and `#include ACCUM_HEADER` resolve to the headers the host chose. #line markers
 * keep compiler messages pointing at the real files.
 */
static void expand_file(expander *e, const char *relative, int depth)
{
    if (e->status != FK_OK)
        return;
    if (depth > 16) {
        e->status = fk__fail(e->context, FK_ERR_KERNEL_SOURCE,
                             "#include nesting deeper than 16 at %s", relative);
        return;
    }
    char *source = fk__kernel_source_read(e->context, relative, NULL);
    if (!source) {
        e->status = fk__fail(e->context, FK_ERR_KERNEL_SOURCE, "cannot read kernel source %s/%s",
                             e->context->kernel_dir, relative);
        return;
    }

    text_printf(&e->out, "#line 1 \"%s\"\n", relative);
    int line_number = 0;
    for (char *line = source; *line && e->status == FK_OK;) {
        char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) : strlen(line);
        ++line_number;
        const char *p = line;
        while (p < line + length && (*p == ' ' || *p == '\t'))
            ++p;
        const char *included = NULL;
        char quoted[256];
        if (p < line + length && *p == '#') {
            ++p;
            while (*p == ' ' || *p == '\t')
                ++p;
            if (strncmp(p, "include", 7) == 0) {
                p += 7;
                while (*p == ' ' || *p == '\t')
                    ++p;
                if (*p == '"') {
                    const char *close = memchr(p + 1, '"', (size_t)(line + length - p - 1));
                    if (close && (size_t)(close - p - 1) < sizeof quoted) {
                        memcpy(quoted, p + 1, (size_t)(close - p - 1));
                        quoted[close - p - 1] = '\0';
                        included = quoted;
                    }
                } else if (strncmp(p, "FORCE_HEADER", 12) == 0) {
                    included = e->force_header;
                } else if (strncmp(p, "ACCUM_HEADER", 12) == 0) {
                    included = e->accum_header;
                }
                if (!included) {
                    e->status = fk__fail(e->context, FK_ERR_KERNEL_SOURCE,
                                         "%s:%d: unsupported #include form", relative, line_number);
                    break;
                }
            }
        }
        if (included) {
            expand_file(e, included, depth + 1);
            text_printf(&e->out, "#line %d \"%s\"\n", line_number + 1, relative);
        } else {
            text_append(&e->out, line, length);
            text_append(&e->out, "\n", 1);
        }
        line = end ? end + 1 : line + length;
    }
    free(source);
}

static fk_status build_log(fk_context *context, cl_program program)
{
    size_t size = 0;
    clGetProgramBuildInfo(program, context->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
    char *log = malloc(size + 1);
    if (log) {
        log[0] = '\0';
        clGetProgramBuildInfo(program, context->device, CL_PROGRAM_BUILD_LOG, size, log, NULL);
        log[size] = '\0';
        fk__append_error(context, "\n--- build log ---\n");
        fk__append_error(context, log);
        free(log);
    }
    return FK_ERR_BUILD;
}

/* 1 when a line of the build log (up to its newline) is a warning worth the caller's attention.
 * NVIDIA's driver notes, for programs whose kernels it links, "Warning: Function fk_pairwise is a
 * kernel, so overriding noinline attribute. The function may be inlined when called." about
 * every kernel: no defect of the source, and printed by tune on every such build. */
static int is_real_warning(const char *line, size_t length)
{
    static const char benign[] = "is a kernel, so overriding noinline attribute";
    int warned = 0, harmless = 0;
    for (size_t i = 0; i < length; ++i) {
        warned = warned || strncasecmp(line + i, "warning", 7) == 0;
        harmless = harmless || (length - i >= sizeof benign - 1 &&
                                strncmp(line + i, benign, sizeof benign - 1) == 0);
    }
    return warned && !harmless;
}

int fk__build_log_warns(const char *log)
{
    for (const char *line = log; *line;) {
        const size_t length = strcspn(line, "\n");
        if (is_real_warning(line, length))
            return 1;
        line += length + (line[length] == '\n');
    }
    return 0;
}

/* A successful build's log, when the compiler warned: kept for the caller in the context's
 * warnings (fk_context_warnings), never printed. Logs without a warning are not kept: Intel's
 * runtime, for one, reports every successful build ("Compilation started ... done"); nor are
 * logs whose only warnings are NVIDIA's notes on kernels' noinline attribute. */
static void keep_build_warnings(fk_context *context, cl_program program, const char *options)
{
    size_t size = 0;
    if (clGetProgramBuildInfo(program, context->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) !=
            CL_SUCCESS ||
        size < 2)
        return;
    char *log = malloc(size + 1);
    if (!log)
        return;
    if (clGetProgramBuildInfo(program, context->device, CL_PROGRAM_BUILD_LOG, size, log, NULL) ==
        CL_SUCCESS) {
        log[size] = '\0';
        if (fk__build_log_warns(log))
            fk__warn(&context->warnings, "kernel build with options %s: the compiler warned:\n%s",
                     options, log);
    }
    free(log);
}

/* Builds from source; on success optionally stores the binary in the cache. */
static fk_status build_from_source(fk_context *context, const char *source, const char *options,
                                   cl_program *out)
{
    cl_int err = CL_SUCCESS;
    const char *sources[] = {source};
    cl_program program = clCreateProgramWithSource(context->cl, 1, sources, NULL, &err);
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, "clCreateProgramWithSource", err);
    err = clBuildProgram(program, 1, &context->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        fk__fail(context, FK_ERR_BUILD, "clBuildProgram failed: %s (%d) with options: %s",
                 fk__cl_error_name(err), (int)err, options);
        build_log(context, program);
        clReleaseProgram(program);
        return FK_ERR_BUILD;
    }
    keep_build_warnings(context, program, options);
    *out = program;
    return FK_OK;
}

static void store_binary(fk_context *context, cl_program program, const fk_cache_key *key)
{
    size_t size = 0;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) !=
            CL_SUCCESS ||
        size == 0)
        return;
    unsigned char *binary = malloc(size);
    if (!binary)
        return;
    unsigned char *binaries[] = {binary};
    if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof binaries, binaries, NULL) ==
        CL_SUCCESS)
        fk_cache_store(context->cache_dir, key, binary, size); /* failure only costs speed */
    free(binary);
}

/* Loads from the cache; any failure is a miss (returns 0). */
static int load_binary(fk_context *context, const fk_cache_key *key, const char *options,
                       cl_program *out)
{
    unsigned char *binary = NULL;
    size_t size = 0;
    if (!fk_cache_load(context->cache_dir, key, &binary, &size))
        return 0;
    cl_int err = CL_SUCCESS, binary_status = CL_SUCCESS;
    const unsigned char *binaries[] = {binary};
    cl_program program = clCreateProgramWithBinary(context->cl, 1, &context->device, &size,
                                                   binaries, &binary_status, &err);
    free(binary);
    if (err != CL_SUCCESS || binary_status != CL_SUCCESS)
        return 0;
    if (clBuildProgram(program, 1, &context->device, options, NULL, NULL) != CL_SUCCESS) {
        clReleaseProgram(program);
        return 0;
    }
    *out = program;
    return 1;
}

/* The in-memory cache in front of the disk cache: the last programs built in this context, by the
 * disk cache's key (expanded source, options, device identity), so that a second evaluation of the
 * same variant, the exclusion subtraction of the all-pairs program or the tuner's repeated
 * candidates take a reference instead of a load and clBuildProgram. Bounded: a tuner builds
 * hundreds of variants, and each program holds its device code. */
enum { PROGRAM_MEMO_CAPACITY = 16 };

struct fk__program_memo {
    struct {
        char key[sizeof(((fk_cache_key *)0)->hex)];
        cl_program program;
        unsigned long used; /* the clock at the last hit: the least recent one is replaced */
    } entries[PROGRAM_MEMO_CAPACITY];
    unsigned long clock;
};

void fk__program_memo_free(fk_context *context)
{
    struct fk__program_memo *memo = context->programs;
    if (!memo)
        return;
    for (size_t k = 0; k < PROGRAM_MEMO_CAPACITY; ++k)
        if (memo->entries[k].program)
            clReleaseProgram(memo->entries[k].program);
    free(memo);
    context->programs = NULL;
}

/* Both only while the cache is on: "off" means every build compiles (fresh builds on purpose). */
static cl_program memo_find(fk_context *context, const fk_cache_key *key)
{
    if (!context->cache_dir)
        return NULL;
    struct fk__program_memo *memo = context->programs;
    for (size_t k = 0; memo && k < PROGRAM_MEMO_CAPACITY; ++k)
        if (memo->entries[k].program && strcmp(memo->entries[k].key, key->hex) == 0) {
            memo->entries[k].used = ++memo->clock;
            clRetainProgram(memo->entries[k].program);
            return memo->entries[k].program;
        }
    return NULL;
}

/* Keeps a reference to program; a failure to allocate only costs speed. */
static void memo_keep(fk_context *context, const fk_cache_key *key, cl_program program)
{
    if (!context->cache_dir)
        return;
    if (!context->programs)
        context->programs = calloc(1, sizeof *context->programs);
    struct fk__program_memo *memo = context->programs;
    if (!memo)
        return;
    size_t slot = 0;
    for (size_t k = 0; k < PROGRAM_MEMO_CAPACITY; ++k) {
        if (memo->entries[k].program && strcmp(memo->entries[k].key, key->hex) == 0) {
            slot = k; /* refreshed: the new build replaces the old */
            break;
        }
        if (!memo->entries[k].program || memo->entries[k].used < memo->entries[slot].used)
            slot = k;
        if (!memo->entries[k].program)
            break;
    }
    if (memo->entries[slot].program)
        clReleaseProgram(memo->entries[slot].program);
    clRetainProgram(program);
    memcpy(memo->entries[slot].key, key->hex, sizeof memo->entries[slot].key);
    memo->entries[slot].program = program;
    memo->entries[slot].used = ++memo->clock;
}

/* The cache around a build: key over the expanded source, options and device identity; a hit in
 * memory or on disk gives the program without compiling, a miss (or refresh) compiles from source
 * and stores the result in both. */
static fk_status build_cached(fk_context *context, const text *source, const char *options,
                              int refresh_cache, fk_program_result *result)
{
    fk_cache_key key;
    fk_cache_key_parts parts = {.source = source->data,
                                .source_length = source->length,
                                .options = options,
                                .platform_version = context->info.platform_version,
                                .device_name = context->info.name,
                                .device_version = context->info.device_version,
                                .driver_version = context->info.driver_version};
    fk_cache_key_compute(&parts, &key);
    cl_program program = refresh_cache ? NULL : memo_find(context, &key);
    if (program) {
        result->from_cache = 1;
        result->program = program;
        return FK_OK;
    }
    if (context->cache_dir && !refresh_cache && load_binary(context, &key, options, &program)) {
        result->from_cache = 1;
    } else {
        fk_status status = build_from_source(context, source->data, options, &program);
        if (status != FK_OK)
            return status;
        if (context->cache_dir)
            store_binary(context, program, &key);
    }
    memo_keep(context, &key, program);
    result->program = program;
    return FK_OK;
}

/* The last step of both builds: the expanded source (e) with the options, through the program
 * cache; the build's seconds count from start. Frees both texts. */
static fk_status build_expanded(fk_context *context, expander *e, text *options, int refresh_cache,
                                double start, fk_program_result *result)
{
    if (e->status == FK_OK && (e->out.failed || options->failed))
        e->status = FK_ERR_HOST_MEMORY;
    fk_status status = e->status;
    if (status == FK_OK)
        status = build_cached(context, &e->out, options->data, refresh_cache, result);
    free(e->out.data);
    free(options->data);
    if (status == FK_OK)
        result->seconds = fk__now() - start;
    return status;
}

fk_status fk__program_build(fk_context *context, const fk_program_request *request,
                            fk_program_result *result)
{
    double start = fk__now();
    memset(result, 0, sizeof *result);
    char force_header[128], accum_header[128];
    snprintf(force_header, sizeof force_header, "forces/%s.clh", request->force);
    snprintf(accum_header, sizeof accum_header, "accum/%s.clh", request->accum);

    expander e = {.context = context,
                  .force_header = force_header,
                  .accum_header = accum_header,
                  .status = FK_OK};
    expand_file(&e, request->file ? request->file : "pairwise.cl", 0);
    text options = {0};
    text_printf(&options,
                "-cl-std=CL1.2 -D FORCE=%s -D ACCUM=%s -D UNROLL_I=%d -D UNROLL_J=%d "
                "-D WG_SIZE=%d -D LOCAL_TILING=%d -D POTENTIAL=%d",
                request->force, request->accum, request->unroll_i, request->unroll_j,
                request->work_group_size, request->local_tiling ? 1 : 0,
                request->potential ? 1 : 0);
    if (request->lanes > 0)
        text_printf(&options, " -D FK_LANES=%d%s", request->lanes,
                    request->lane_rsqrt_newton ? " -D FK_LANE_RSQRT_NEWTON=1" : "");
    if (request->extra_options && *request->extra_options) {
        text_append(&options, " ", 1);
        text_append(&options, request->extra_options, strlen(request->extra_options));
    }
    return build_expanded(context, &e, &options, request->refresh_cache, start, result);
}

/* 1 when the header kernel_dir/relative has a line `#define NAME` (leading blanks allowed). */
static int header_declares(fk_context *context, const char *relative, const char *name)
{
    char *source = fk__kernel_source_read(context, relative, NULL);
    if (!source)
        return 0;
    int found = 0;
    const size_t length = strlen(name);
    for (const char *line = source; line && *line && !found;) {
        const char *p = line;
        while (*p == ' ' || *p == '\t')
            ++p;
        if (*p == '#') {
            ++p;
            while (*p == ' ' || *p == '\t')
                ++p;
            if (strncmp(p, "define", 6) == 0 && (p[6] == ' ' || p[6] == '\t')) {
                p += 6;
                while (*p == ' ' || *p == '\t')
                    ++p;
                found = strncmp(p, name, length) == 0 && (p[length] == ' ' || p[length] == '\t' ||
                                                          p[length] == '\n' || p[length] == '\0');
            }
        }
        line = strchr(line, '\n');
        if (line)
            ++line;
    }
    free(source);
    return found;
}

/* Lane support is declared by the headers themselves, so a force law or accumulator that gains a
 * lane section is picked up without a host change: the force law's header defines force_macro
 * and the accumulator's FK_ACC_LANES. */
static int headers_have_lanes(fk_context *context, const char *force, const char *accum,
                              const char *force_macro)
{
    char force_header[128], accum_header[128];
    snprintf(force_header, sizeof force_header, "forces/%s.clh", force);
    snprintf(accum_header, sizeof accum_header, "accum/%s.clh", accum);
    return header_declares(context, force_header, force_macro) &&
           header_declares(context, accum_header, "FK_ACC_LANES");
}

int fk__program_has_lanes(fk_context *context, const char *force, const char *accum)
{
    return headers_have_lanes(context, force, accum, "FK_INTERACT_LANES");
}

int fk__program_has_list_lanes(fk_context *context, const char *force, const char *accum)
{
    return headers_have_lanes(context, force, accum, "FK_LAW_PAIR_LANES");
}

fk_status fk__program_build_file(fk_context *context, const char *file, const char *options,
                                 fk_program_result *result)
{
    double start = fk__now();
    memset(result, 0, sizeof *result);
    expander e = {.context = context, .status = FK_OK};
    expand_file(&e, file, 0);
    text full_options = {0};
    text_printf(&full_options, "-cl-std=CL1.2%s%s", options && *options ? " " : "",
                options ? options : "");
    return build_expanded(context, &e, &full_options, 0, start, result);
}
