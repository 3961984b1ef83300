/* Kernel sources and the compiled-program cache, through the public API: cache hit, miss and a
 * corrupt entry; the cache switched off; a missing kernel directory; a deliberately broken kernel
 * whose build log reaches the caller; the template compiling on its own with its defaults. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "forcekit/forcekit.h"
#include "core/programs/install_paths.h" /* the built-in copy */
#include "core/internal.h"               /* fk__build_log_warns */
#include "test_support.h"

static char kernel_dir[4096];

static int setup(void **state)
{
    (void)state;
    snprintf(kernel_dir, sizeof kernel_dir, "%s/cl", fk_test_source_dir());
    return 0;
}

static size_t count_entries(const char *dir, const char *suffix)
{
    DIR *handle = opendir(dir);
    if (!handle)
        return 0;
    size_t count = 0;
    struct dirent *entry;
    while ((entry = readdir(handle)) != NULL) {
        size_t length = strlen(entry->d_name), suffix_length = strlen(suffix);
        if (length > suffix_length && strcmp(entry->d_name + length - suffix_length, suffix) == 0)
            ++count;
    }
    closedir(handle);
    return count;
}

/* Overwrites every cache entry with garbage of the same size. */
static void corrupt_entries(const char *dir)
{
    DIR *handle = opendir(dir);
    assert_non_null(handle);
    struct dirent *entry;
    while ((entry = readdir(handle)) != NULL) {
        if (!strstr(entry->d_name, ".fkbin"))
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, entry->d_name);
        FILE *file = fopen(path, "r+b");
        assert_non_null(file);
        fseek(file, 0, SEEK_END);
        long size = ftell(file);
        fseek(file, 0, SEEK_SET);
        for (long i = 0; i < size; ++i)
            fputc((int)(i * 131 % 251), file);
        fclose(file);
    }
    closedir(handle);
}

/* Creates an eval, runs it on a fixed input, returns whether the program came from the cache and
 * the forces. */
static int evaluate(fk_context *context, const fk_eval_config *config, double *force)
{
    fk_eval *eval = NULL;
    fk_status status = fk_eval_create(context, config, &eval);
    if (status != FK_OK)
        fail_msg("%s: %s", fk_status_string(status), fk_context_last_error(context));
    double position[9] = {0, 0, 0, 1, 0, 0, 0, 2, 0}, mass[3] = {1, 2, 3};
    fk_particles particles = {.count = 3, .position = position, .mass = mass};
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    assert_int_equal(fk_eval_compute(eval, NULL), FK_OK);
    assert_int_equal(fk_eval_read_forces(eval, force), FK_OK);
    fk_variant variant;
    assert_int_equal(fk_eval_get_variant(eval, &variant), FK_OK);
    assert_true(variant.build_seconds >= 0);
    fk_eval_destroy(eval);
    return variant.program_from_cache;
}

static void test_cache_hit_miss_corrupt(void **state)
{
    (void)state;
    char *cache = fk_test_make_temp_dir("fk-cache-");
    assert_non_null(cache);
    fk_context_config context_config = {.kernel_dir = kernel_dir, .cache_dir = cache};
    fk_context *context = NULL;
    assert_int_equal(fk_context_create(&context_config, &context), FK_OK);
    assert_string_equal(fk_context_cache_dir(context), cache);

    /* work-group size 16: within every device's limit, so that no narrowed shape (issue #37)
     * adds a first, refused build to the entries counted */
    fk_eval_config config = {.kernel = "ga", .unroll_i = 2, .unroll_j = 4, .work_group_size = 16};
    double cold[9], warm[9], rebuilt[9];
    /* with fp64 every evaluation also builds cl/decode.cl's program (the output stage): one more
     * entry, the same for every variant */
    const size_t decode = fk_context_device(context)->fp64 ? 1 : 0;
    assert_int_equal(evaluate(context, &config, cold), 0); /* miss: compiled and stored */
    assert_int_equal(count_entries(cache, ".fkbin"), 1 + decode);
    assert_int_equal(evaluate(context, &config, warm), 1); /* hit, in memory */
    assert_memory_equal(cold, warm, sizeof cold);
    /* The disk cache itself: a new context has nothing in memory. */
    fk_context_destroy(context);
    assert_int_equal(fk_context_create(&context_config, &context), FK_OK);
    assert_int_equal(evaluate(context, &config, warm), 1); /* hit, on disk */
    assert_memory_equal(cold, warm, sizeof cold);

    /* Another variant is another entry. */
    fk_eval_config other = config;
    other.unroll_i = 1;
    double unused[9];
    assert_int_equal(evaluate(context, &other, unused), 0);
    assert_int_equal(count_entries(cache, ".fkbin"), 2 + decode);

    /* A corrupt entry is a miss and a rebuild, never an error; the entry is rewritten. */
    corrupt_entries(cache);
    fk_context_destroy(context);
    assert_int_equal(fk_context_create(&context_config, &context), FK_OK);
    assert_int_equal(evaluate(context, &config, rebuilt), 0);
    assert_memory_equal(cold, rebuilt, sizeof cold);
    assert_int_equal(evaluate(context, &config, rebuilt), 1);

    /* refresh_cache compiles from source even on a hit. */
    config.refresh_cache = 1;
    assert_int_equal(evaluate(context, &config, rebuilt), 0);
    assert_int_equal(count_entries(cache, ".tmp"), 0); /* no temporaries left behind */

    fk_context_destroy(context);
    fk_test_remove_tree(cache);
    free(cache);
}

static void test_cache_off(void **state)
{
    (void)state;
    fk_context_config context_config = {.kernel_dir = kernel_dir, .cache_dir = "off"};
    fk_context *context = NULL;
    assert_int_equal(fk_context_create(&context_config, &context), FK_OK);
    assert_null(fk_context_cache_dir(context));
    fk_eval_config config = {.kernel = "ga"};
    double force[9];
    assert_int_equal(evaluate(context, &config, force), 0);
    assert_int_equal(evaluate(context, &config, force), 0);
    fk_context_destroy(context);
}

static void test_missing_kernel_dir(void **state)
{
    (void)state;
    fk_context_config config = {.kernel_dir = "/nonexistent/forcekit-kernels", .cache_dir = "off"};
    fk_context *context = NULL;
    assert_int_equal(fk_context_create(&config, &context), FK_ERR_KERNEL_SOURCE);
    assert_non_null(strstr(fk_context_last_error(context), "/nonexistent/forcekit-kernels"));
    fk_context_destroy(context);
}

static char *copy_kernel_dir(void)
{
    char *dir = fk_test_make_temp_dir("fk-kernels-");
    assert_non_null(dir);
    char command[16384];
    snprintf(command, sizeof command, "cp -R '%s/.' '%s/'", kernel_dir, dir);
    assert_int_equal(system(command), 0);
    return dir;
}

static void test_broken_kernel_build_log(void **state)
{
    (void)state;
    char *dir = copy_kernel_dir();
    char path[8192];
    snprintf(path, sizeof path, "%s/forces/ga.clh", dir);
    const char *broken = "#define FK_FORCE_COMPONENTS 3\n"
                         "typedef float fk_phys;\n"
                         "int fk_broken(void) { return fk_deliberately_undeclared_identifier; }\n";
    assert_int_equal(fk_test_write_file(path, broken, strlen(broken)), 0);

    fk_context_config context_config = {.kernel_dir = dir, .cache_dir = "off"};
    fk_context *context = NULL;
    assert_int_equal(fk_context_create(&context_config, &context), FK_OK);
    fk_eval_config config = {.kernel = "ga"};
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_ERR_BUILD);
    assert_null(eval);
    const char *message = fk_context_last_error(context);
    assert_non_null(strstr(message, "clBuildProgram"));
    assert_non_null(strstr(message, "build log"));
    /* The compiler's own words about our identifier, and the options used, reach the caller. */
    assert_non_null(strstr(message, "fk_deliberately_undeclared_identifier"));
    assert_non_null(strstr(message, "-D FORCE=ga"));

    /* A missing header is a source error naming the file. */
    snprintf(path, sizeof path, "%s/accum/float.clh", dir);
    assert_int_equal(remove(path), 0);
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_ERR_KERNEL_SOURCE);
    assert_non_null(strstr(fk_context_last_error(context), "accum/float.clh"));
    fk_context_destroy(context);
    fk_test_remove_tree(dir);
    free(dir);
}

/* The copy of the data compiled into the library (issue #32, the last fallback of the kernel
 * search) is the source tree's, byte for byte: every file of cl/ (a stale table means the build
 * did not regenerate it when a kernel changed) and the shipped tuning database. */
static void test_built_in_copy_matches_sources(void **state)
{
    (void)state;
    size_t files = 0;
    int has_template = 0, has_database = 0;
    for (const fk__embedded_file *file = fk__embedded_files; file->name; ++file, ++files) {
        char path[8192];
        if (strncmp(file->name, "cl/", 3) == 0)
            snprintf(path, sizeof path, "%s/%s", fk_test_source_dir(), file->name);
        else
            snprintf(path, sizeof path, "%s/data/%s", fk_test_source_dir(), file->name);
        size_t size = 0;
        char *text = fk__read_file(path, &size);
        if (!text)
            fail_msg("the built-in %s has no source file %s", file->name, path);
        if (size != file->size || memcmp(text, file->data, size) != 0)
            fail_msg("the built-in %s differs from %s: rebuild, or the embedding missed a change",
                     file->name, path);
        free(text);
        size_t read_size = 0;
        char *copy = fk__embedded_read(file->name, &read_size);
        assert_non_null(copy);
        assert_int_equal(read_size, file->size);
        assert_int_equal(copy[read_size], '\0');
        free(copy);
        has_template |= strcmp(file->name, "cl/pairwise.cl") == 0;
        has_database |= strcmp(file->name, "tuning/shipped.json") == 0;
    }
    assert_true(has_template && has_database);
    assert_null(fk__embedded_read("cl/no-such-file.cl", NULL));
    /* and every file of cl/ is in it */
    char command[8192];
    snprintf(command, sizeof command, "find '%s/cl' -type f | wc -l", fk_test_source_dir());
    FILE *pipe = popen(command, "r");
    assert_non_null(pipe);
    size_t on_disk = 0;
    assert_int_equal(fscanf(pipe, "%zu", &on_disk), 1);
    pclose(pipe);
    assert_int_equal(on_disk + 1, files);
}

/* The template compiles on its own with its #ifndef defaults and a plain -I (CLBlast's habit),
 * without the host's include expander. */
/* Which successful build logs are kept as warnings: a compiler's real warning, not Intel's
 * progress lines nor NVIDIA's notes on kernels' noinline attribute (logs as the drivers print
 * them). */
static void test_build_log_warnings(void **state)
{
    (void)state;
    assert_false(fk__build_log_warns(""));
    assert_false(fk__build_log_warns("Compilation started\nCompilation done\nLinking started\n"
                                     "Linking done\n"));
    const char *nvidia =
        "(): Warning: Function fk_reduce_splits is a kernel, so overriding noinline attribute. "
        "The function may be inlined when called.\n"
        "(): Warning: Function fk_pairwise is a kernel, so overriding noinline attribute. The "
        "function may be inlined when called.\n\n";
    assert_false(fk__build_log_warns(nvidia));
    assert_true(fk__build_log_warns("<source>:12:9: warning: unused variable 'x'\n"));
    char mixed[512];
    snprintf(mixed, sizeof mixed, "%s<source>:3:1: warning: implicit conversion\n", nvidia);
    assert_true(fk__build_log_warns(mixed));
    assert_true(fk__build_log_warns("WARNING: register spilling")); /* no newline at the end */
}

static void test_template_standalone(void **state)
{
    (void)state;
    fk_context *context = NULL;
    fk_context_config context_config = {.kernel_dir = kernel_dir, .cache_dir = "off"};
    assert_int_equal(fk_context_create(&context_config, &context), FK_OK);
    const fk_device_info *info = fk_context_device(context);

    cl_platform_id platforms[16];
    cl_uint platform_count = 0;
    assert_int_equal(clGetPlatformIDs(16, platforms, &platform_count), CL_SUCCESS);
    cl_device_id devices[16];
    cl_uint device_count = 0;
    assert_int_equal(clGetDeviceIDs(platforms[info->platform_index], CL_DEVICE_TYPE_ALL, 16,
                                    devices, &device_count),
                     CL_SUCCESS);
    cl_device_id device = devices[info->device_index];
    cl_int err;
    cl_context cl = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    char path[8192];
    snprintf(path, sizeof path, "%s/pairwise.cl", kernel_dir);
    FILE *file = fopen(path, "rb");
    assert_non_null(file);
    static char source[1 << 20];
    size_t size = fread(source, 1, sizeof source - 1, file);
    fclose(file);
    source[size] = '\0';
    const char *sources[] = {source};
    cl_program program = clCreateProgramWithSource(cl, 1, sources, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    char options[8192];
    snprintf(options, sizeof options, "-I %s", kernel_dir);
    err = clBuildProgram(program, 1, &device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        static char log[1 << 16];
        clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        fail_msg("standalone build failed: %d\n%s", err, log);
    }
    clReleaseProgram(program);
    clReleaseContext(cl);
    fk_context_destroy(context);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_hit_miss_corrupt),
        cmocka_unit_test(test_cache_off),
        cmocka_unit_test(test_missing_kernel_dir),
        cmocka_unit_test(test_built_in_copy_matches_sources),
        cmocka_unit_test(test_broken_kernel_build_log),
        cmocka_unit_test(test_template_standalone),
        cmocka_unit_test(test_build_log_warnings),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
