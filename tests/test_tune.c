/*
 * The tuning database and the autotuner: device keys and their normalisation, lookup fallbacks at
 * each level, the nearest N bucket, user entries over shipped ones, corrupt files (a warning, never
 * an error), fk_eval_create taking its variant from the database, a variant with a deliberately
 * wrong result rejected before it is timed (one wrong everywhere, one wrong at the last particle
 * only), resuming an interrupted run, and a tiny budget.
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "forcekit/forcekit.h"
#include "test_support.h"
#include "core/tune/tune.h"

#include <cJSON.h>

static char *work_dir;

static int setup(void **state)
{
    (void)state;
    work_dir = fk_test_make_temp_dir("fk-tune");
    return work_dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    fk_test_remove_tree(work_dir);
    free(work_dir);
    return 0;
}

static char *path_in_work(const char *name)
{
    size_t size = strlen(work_dir) + strlen(name) + 2;
    char *path = malloc(size);
    assert_non_null(path);
    snprintf(path, size, "%s/%s", work_dir, name);
    return path;
}

static void write_text(const char *path, const char *text)
{
    assert_int_equal(fk_test_write_file(path, text, strlen(text)), 0);
}

/* ---- device keys ----------------------------------------------------------------------------- */

static void test_name_normalisation(void **state)
{
    (void)state;
    char a[256], b[256];
    fk__tuning_normalise_name("pthread-skylake-avx512-AMD EPYC", a, sizeof a);
    fk__tuning_normalise_name("cpu-skylake-avx512-AMD EPYC", b, sizeof b);
    assert_string_equal(a, "skylake-avx512-AMD EPYC");
    assert_string_equal(a, b);
    fk__tuning_normalise_name("  NVIDIA   H200 \t", a, sizeof a);
    assert_string_equal(a, "NVIDIA H200");
    assert_string_equal(fk__tuning_normalise_vendor("NVIDIA Corporation"), "NVIDIA");
    assert_string_equal(fk__tuning_normalise_vendor("Advanced Micro Devices, Inc."), "AMD");
    assert_string_equal(fk__tuning_normalise_vendor("AuthenticAMD"), "AMD");
    assert_string_equal(fk__tuning_normalise_vendor("GenuineIntel"), "Intel");
    assert_string_equal(fk__tuning_normalise_vendor("Intel(R) Corporation"), "Intel");
    assert_string_equal(fk__tuning_normalise_vendor("Imagination"), "Imagination");
}

static void test_identity(void **state)
{
    (void)state;
    fk_tuning_identity id;
    fk_tuning_device_facts nvidia = {.vendor = "NVIDIA Corporation",
                                     .name = "NVIDIA H200",
                                     .platform_name = "NVIDIA CUDA",
                                     .type = FK_DEVICE_GPU,
                                     .nv_major = 9,
                                     .nv_minor = 0};
    fk__tuning_identity_from(&nvidia, &id);
    assert_string_equal(id.type, "gpu");
    assert_string_equal(id.vendor, "NVIDIA");
    assert_string_equal(id.architecture, "SM9.0");
    assert_string_equal(id.device, "NVIDIA H200");

    fk_tuning_device_facts amd = {.vendor = "Advanced Micro Devices, Inc.",
                                  .name = "gfx90a:sramecc+:xnack-",
                                  .platform_name = "AMD Accelerated Parallel Processing",
                                  .board_name = "AMD Instinct MI210",
                                  .type = FK_DEVICE_GPU,
                                  .nv_major = -1};
    fk__tuning_identity_from(&amd, &id);
    assert_string_equal(id.vendor, "AMD");
    assert_string_equal(id.architecture, "gfx90a");
    assert_string_equal(id.device, "AMD Instinct MI210");

    fk_tuning_device_facts pocl = {.vendor = "AuthenticAMD",
                                   .name = "pthread-skylake-avx512-AMD EPYC",
                                   .platform_name = "Portable Computing Language",
                                   .type = FK_DEVICE_CPU,
                                   .nv_major = -1};
    fk__tuning_identity_from(&pocl, &id);
    assert_string_equal(id.type, "cpu");
    assert_string_equal(id.vendor, "AMD");
    assert_string_equal(id.architecture, "skylake-avx512");
    assert_string_equal(id.device, "skylake-avx512-AMD EPYC");
    pocl.name = "cpu-x86-64-v3-Intel(R) Xeon(R) Processor";
    fk__tuning_identity_from(&pocl, &id);
    assert_string_equal(id.architecture, "x86-64-v3");

    fk_tuning_device_facts other = {.vendor = "Someone",
                                    .name = "Accelerator 3000",
                                    .platform_name = "Vendor CL",
                                    .type = FK_DEVICE_ACCELERATOR,
                                    .nv_major = -1};
    fk__tuning_identity_from(&other, &id);
    assert_string_equal(id.architecture, ""); /* only "default" entries match that level */
}

static void test_buckets(void **state)
{
    (void)state;
    assert_int_equal(fk_tune_bucket_at(0), 1024);
    assert_int_equal(fk_tune_bucket_at(FK_TUNE_BUCKET_COUNT - 1), 1048576);
    assert_int_equal(fk_tune_bucket_for(1), 1024);
    assert_int_equal(fk_tune_bucket_for(2000), 1024);
    assert_int_equal(fk_tune_bucket_for(2100), 4096);
    assert_int_equal(fk_tune_bucket_for(20000), 16384);
    assert_int_equal(fk_tune_bucket_for(300000), 262144);
    assert_int_equal(fk_tune_bucket_for(0), 1048576);
    assert_int_equal(fk_tune_bucket_for((size_t)1 << 30), 1048576);
}

/* ---- lookup ---------------------------------------------------------------------------------- */

#define ENTRY(type, vendor, arch, device, accum, n, unroll)                                        \
    "{\"type\": \"" type "\", \"vendor\": \"" vendor "\", \"architecture\": \"" arch               \
    "\", \"device\": \"" device "\", \"kernel\": \"ga\", \"accum\": \"" accum "\", \"n\": " #n     \
    ", \"unroll\": \"" unroll "\", \"work_group_size\": 64}"

static fk_tuning_identity h200(void)
{
    fk_tuning_identity id = {
        .type = "gpu", .vendor = "NVIDIA", .architecture = "SM9.0", .device = "NVIDIA H200"};
    return id;
}

static const fk_tuning_entry *lookup_in(const char *user_text, const char *shipped_text,
                                        const fk_tuning_identity *id, const char *accum, size_t n,
                                        fk_tuning_db **db, char **warnings)
{
    char *user = path_in_work("user.json"), *shipped = path_in_work("shipped.json");
    remove(user);
    remove(shipped);
    if (user_text)
        write_text(user, user_text);
    if (shipped_text)
        write_text(shipped, shipped_text);
    assert_int_equal(fk__tuning_db_load(id, user, shipped, db, warnings), FK_OK);
    free(user);
    free(shipped);
    return fk__tuning_lookup(*db, "ga", accum, n);
}

static void expect_unroll(const fk_tuning_entry *entry, int unroll_i, int unroll_j)
{
    assert_non_null(entry);
    if (entry->unroll_i != unroll_i || entry->unroll_j != unroll_j)
        fail_msg("got %dx%d, expected %dx%d", entry->unroll_i, entry->unroll_j, unroll_i, unroll_j);
}

static void test_lookup_fallbacks(void **state)
{
    (void)state;
    const fk_tuning_identity id = h200();
    fk_tuning_db *db = NULL;
    char *warnings = NULL;
    const char *levels = "{\"entries\": [" ENTRY(
        "default", "default", "default", "default", "float", 1024,
        "1x1") "," ENTRY("gpu", "NVIDIA", "default", "default", "float", 1024,
                         "2x2") "," ENTRY("gpu", "NVIDIA", "SM9.0", "default", "float", 1024,
                                          "4x4") "," ENTRY("gpu", "NVIDIA", "SM9.0", "NVIDIA H200",
                                                           "float", 1024,
                                                           "8x8") "," ENTRY("gpu", "NVIDIA",
                                                                            "SM8.0", "NVIDIA A100",
                                                                            "float", 1024,
                                                                            "1x2") "," ENTRY("cpu",
                                                                                             "NVIDI"
                                                                                             "A",
                                                                                             "SM9."
                                                                                             "0",
                                                                                             "NVIDI"
                                                                                             "A "
                                                                                             "H200",
                                                                                             "doubl"
                                                                                             "e",
                                                                                             1024,
                                                                                             "1x4") "]}";
    /* The most specific level wins: the device, */
    expect_unroll(lookup_in(levels, NULL, &id, "float", 1024, &db, &warnings), 8, 8);
    fk__tuning_db_free(db);
    /* then the architecture's default, the vendor's default, the global default. */
    fk_tuning_identity other = id;
    snprintf(other.device, sizeof other.device, "NVIDIA H100");
    expect_unroll(lookup_in(levels, NULL, &other, "float", 1024, &db, &warnings), 4, 4);
    fk__tuning_db_free(db);
    snprintf(other.architecture, sizeof other.architecture, "SM10.0");
    expect_unroll(lookup_in(levels, NULL, &other, "float", 1024, &db, &warnings), 2, 2);
    fk__tuning_db_free(db);
    snprintf(other.vendor, sizeof other.vendor, "AMD");
    expect_unroll(lookup_in(levels, NULL, &other, "float", 1024, &db, &warnings), 1, 1);
    fk__tuning_db_free(db);
    /* An entry for another device type never matches; nothing for double on a GPU. */
    assert_null(lookup_in(levels, NULL, &id, "double", 1024, &db, &warnings));
    assert_null(fk__tuning_lookup(db, "gaj", "float", 1024));
    fk__tuning_db_free(db);
    assert_null(warnings);
}

static void test_nearest_bucket(void **state)
{
    (void)state;
    const fk_tuning_identity id = h200();
    fk_tuning_db *db = NULL;
    char *warnings = NULL;
    const char *buckets = "{\"entries\": [" ENTRY(
        "gpu", "NVIDIA", "SM9.0", "NVIDIA H200", "float", 1024,
        "1x1") "," ENTRY("gpu", "NVIDIA", "SM9.0", "NVIDIA H200", "float", 16384,
                         "2x2") "," ENTRY("gpu", "NVIDIA", "SM9.0", "NVIDIA H200", "float", 262144,
                                          "8x8") "]}";
    expect_unroll(lookup_in(buckets, NULL, &id, "float", 16000, &db, &warnings), 2, 2); /* exact */
    expect_unroll(fk__tuning_lookup(db, "ga", "float", 1500), 1, 1);
    expect_unroll(fk__tuning_lookup(db, "ga", "float", 3000), 2, 2);  /* tie: the larger */
    expect_unroll(fk__tuning_lookup(db, "ga", "float", 65536), 8, 8); /* tie: the larger */
    expect_unroll(fk__tuning_lookup(db, "ga", "float", (size_t)1 << 20), 8, 8);
    expect_unroll(fk__tuning_lookup(db, "ga", "float", 0), 8, 8); /* unknown N: the largest */
    /* A device entry at a far bucket beats a default entry at the exact one. */
    fk__tuning_db_free(db);
    const char *levels = "{\"entries\": [" ENTRY(
        "gpu", "NVIDIA", "SM9.0", "NVIDIA H200", "float", 262144,
        "8x8") "," ENTRY("gpu", "NVIDIA", "default", "default", "float", 1024, "1x1") "]}";
    expect_unroll(lookup_in(levels, NULL, &id, "float", 1024, &db, &warnings), 8, 8);
    fk__tuning_db_free(db);
    assert_null(warnings);
}

static void test_user_overrides_shipped(void **state)
{
    (void)state;
    const fk_tuning_identity id = h200();
    fk_tuning_db *db = NULL;
    char *warnings = NULL;
    const char *shipped = "{\"format\": \"forcekit-tuning\", \"version\": 1, \"entries\": [" ENTRY(
        "gpu", "NVIDIA", "SM9.0", "NVIDIA H200", "float", 262144,
        "8x8") "," ENTRY("gpu", "NVIDIA", "SM9.0", "NVIDIA H200", "float", 1024, "4x8") "]}";
    const char *user = "{\"entries\": [" ENTRY("gpu", "NVIDIA", "SM9.0", "NVIDIA H200", "float",
                                               262144, "2x4") "]}";
    const fk_tuning_entry *entry = lookup_in(user, shipped, &id, "float", 262144, &db, &warnings);
    expect_unroll(entry, 2, 4);
    assert_int_equal(entry->origin, FK_VARIANT_USER_DB);
    entry = fk__tuning_lookup(db, "ga", "float", 1024); /* the user has no entry for this N */
    expect_unroll(entry, 4, 8);
    assert_int_equal(entry->origin, FK_VARIANT_SHIPPED_DB);
    fk__tuning_db_free(db);
    assert_null(warnings);
}

static void test_corrupt_database(void **state)
{
    (void)state;
    const fk_tuning_identity id = h200();
    fk_tuning_db *db = NULL;
    char *warnings = NULL;
    const char *shipped =
        "{\"entries\": [" ENTRY("gpu", "NVIDIA", "SM9.0", "NVIDIA H200", "float", 1024, "4x8") "]}";
    /* Not JSON: ignored with a warning that names the file; the shipped entries still serve. */
    const fk_tuning_entry *entry =
        lookup_in("{\"entries\": [ {\"kernel\": ", shipped, &id, "float", 1024, &db, &warnings);
    expect_unroll(entry, 4, 8);
    assert_non_null(warnings);
    assert_non_null(strstr(warnings, "user.json"));
    assert_non_null(strstr(warnings, "ignored"));
    fk__tuning_db_free(db);
    free(warnings);
    warnings = NULL;
    /* JSON, but not a database; then a database version from the future. */
    assert_non_null(lookup_in("[1, 2, 3]", shipped, &id, "float", 1024, &db, &warnings));
    assert_non_null(strstr(warnings, "not a tuning database"));
    fk__tuning_db_free(db);
    free(warnings);
    warnings = NULL;
    assert_non_null(lookup_in("{\"version\": 99, \"entries\": []}", shipped, &id, "float", 1024,
                              &db, &warnings));
    assert_non_null(strstr(warnings, "version"));
    fk__tuning_db_free(db);
    free(warnings);
    warnings = NULL;
    /* One bad entry is skipped; the rest of the file is used. */
    const char *one_bad = "{\"entries\": [{\"kernel\": \"ga\", \"accum\": \"float\", \"n\": 1024, "
                          "\"unroll\": \"3x3\","
                          " \"work_group_size\": 64}, " ENTRY(
                              "gpu", "NVIDIA", "SM9.0", "NVIDIA H200", "float", 1024, "2x8") "]}";
    expect_unroll(lookup_in(one_bad, NULL, &id, "float", 1024, &db, &warnings), 2, 8);
    assert_non_null(strstr(warnings, "entry 0 ignored"));
    fk__tuning_db_free(db);
    free(warnings);
    warnings = NULL;

    /* Storing into a corrupt file keeps it aside instead of destroying it. */
    char *user = path_in_work("store.json"), *aside = path_in_work("store.json.bad");
    write_text(user, "not json");
    fk_tuning_entry fresh = {.type = "gpu",
                             .vendor = "NVIDIA",
                             .architecture = "SM9.0",
                             .device = "NVIDIA H200",
                             .kernel = "ga",
                             .accum = "float",
                             .n = 4096,
                             .unroll_i = 8,
                             .unroll_j = 4,
                             .work_group_size = 128,
                             .local_tiling = 1};
    char message[256];
    assert_int_equal(fk__tuning_db_store(user, &fresh, NULL, 1, &warnings, message, sizeof message),
                     FK_OK);
    struct stat st;
    assert_int_equal(stat(aside, &st), 0);
    assert_non_null(strstr(warnings, "moved to"));
    free(warnings);
    warnings = NULL;
    assert_int_equal(fk__tuning_db_load(&id, user, NULL, &db, &warnings), FK_OK);
    expect_unroll(fk__tuning_lookup(db, "ga", "float", 4096), 8, 4);
    assert_null(warnings);
    fk__tuning_db_free(db);
    free(user);
    free(aside);

    /* Through a context: the warning reaches fk_context_warnings, and evaluations still run. */
    char *corrupt = path_in_work("corrupt.json");
    write_text(corrupt, "\x01\x02 garbage");
    setenv("FORCEKIT_TUNING_DB", corrupt, 1);
    fk_context *context = NULL;
    assert_int_equal(fk_context_create(NULL, &context), FK_OK);
    assert_non_null(strstr(fk_context_warnings(context), "corrupt.json"));
    fk_eval_config config = {.kernel = "ga"};
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_OK);
    fk_eval_destroy(eval);
    fk_context_destroy(context);
    unsetenv("FORCEKIT_TUNING_DB");
    free(corrupt);
}

/* ---- fk_eval_create and the database --------------------------------------------------------- */

static fk_context *context_with_databases(const char *user, const char *shipped)
{
    setenv("FORCEKIT_TUNING_DB", user ? user : "off", 1);
    setenv("FORCEKIT_SHIPPED_TUNING_DB", shipped ? shipped : "off", 1);
    fk_context *context = NULL;
    fk_status status = fk_context_create(NULL, &context);
    if (status != FK_OK)
        fail_msg("context: %s", fk_context_last_error(context));
    return context;
}

/* An entry for this very device, in the keys the library computes for it. */
/* lanes < 0: no "lanes" key (an entry written before the tuner searched the lane loop). */
static void write_entry_for(fk_context *context, const char *path, size_t n, const char *unroll,
                            int group, const char *tiling, int splits, int lanes)
{
    const fk_tuning_identity *id = &context->tuning->identity;
    char lanes_key[32] = "";
    if (lanes >= 0)
        snprintf(lanes_key, sizeof lanes_key, ", \"lanes\": %d", lanes);
    char text[2048];
    snprintf(text, sizeof text,
             "{\"entries\": [{\"type\": \"%s\", \"vendor\": \"%s\", \"architecture\": \"%s\", "
             "\"device\": \"%s\", \"kernel\": \"ga\", \"accum\": \"float\", \"n\": %zu, "
             "\"unroll\": \"%s\", \"work_group_size\": %d, \"local_tiling\": %s, \"j_splits\": "
             "%d%s}]}",
             id->type, id->vendor, id->architecture[0] ? id->architecture : "default", id->device,
             n, unroll, group, tiling, splits, lanes_key);
    write_text(path, text);
}

/* The lane width fk_eval_create takes by itself here (0: none: a GPU, or no 8-wide registers). */
static int automatic_lanes(fk_context *context)
{
    cl_uint width = 0;
    clGetDeviceInfo(context->device, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof width, &width,
                    NULL);
    if (fk_context_device(context)->type != FK_DEVICE_CPU || width < 8)
        return 0;
    return width >= 16 ? 16 : 8;
}

static fk_variant variant_for(fk_context *context, const fk_eval_config *config)
{
    fk_eval *eval = NULL;
    if (fk_eval_create(context, config, &eval) != FK_OK)
        fail_msg("create: %s", fk_context_last_error(context));
    fk_variant variant;
    assert_int_equal(fk_eval_get_variant(eval, &variant), FK_OK);
    fk_eval_destroy(eval);
    return variant;
}

/* Deliverable 6 of issue #12: a user's entry never replaces the lane loop with something it was
 * not compared with. An entry without "lanes" (measured on the scalar template only, by the tuner
 * before it searched lanes; it made ga 3.4x slower on an AVX2 EPYC) gives way to automatic lanes
 * on a CPU; an entry with "lanes": 8 runs the lane loop with its j-unroll and work-group size;
 * "lanes": 0 (the tuner compared both, and the template won) is followed. */
static void test_database_and_lanes(void **state)
{
    (void)state;
    char *user = path_in_work("lanes.json");
    fk_context *context = context_with_databases(NULL, NULL);
    const int width = automatic_lanes(context);
    write_entry_for(context, user, 4096, "2x4", 32, "false", 0, -1);
    fk_context_destroy(context);
    context = context_with_databases(user, NULL);
    fk_eval_config config = {.kernel = "ga", .eps = 0.01, .expected_count = 4000};
    fk_variant variant = variant_for(context, &config);
    if (width) {
        assert_int_equal(variant.lanes, width);
        assert_int_equal(variant.source, FK_VARIANT_DEFAULT);
    } else {
        assert_int_equal(variant.lanes, 0);
        assert_int_equal(variant.source, FK_VARIANT_USER_DB);
    }
    fk_context_destroy(context);

    context = context_with_databases(NULL, NULL);
    write_entry_for(context, user, 4096, "1x4", 16, "false", 0, 8);
    fk_context_destroy(context);
    context = context_with_databases(user, NULL);
    assert_string_equal(fk_context_warnings(context), "");
    variant = variant_for(context, &config);
    if (width) {
        assert_int_equal(variant.lanes, 8);
        assert_int_equal(variant.unroll_j, 4);
        assert_int_equal(variant.work_group_size, 16);
        assert_int_equal(variant.source, FK_VARIANT_USER_DB);
    }
    fk_context_destroy(context);

    /* A bad "lanes" value: the database is ignored with a warning. */
    context = context_with_databases(NULL, NULL);
    write_entry_for(context, user, 4096, "1x4", 16, "false", 0, 12);
    fk_context_destroy(context);
    context = context_with_databases(user, NULL);
    assert_non_null(strstr(fk_context_warnings(context), "lanes must be 0, 8 or 16"));
    fk_context_destroy(context);
    free(user);
}

/* Entries are keyed by pair loop (issue #14): a symmetric entry serves the symmetric loop only, an
 * entry without "algorithm" (every database written before) all-pairs only. */
static void test_database_keyed_by_loop(void **state)
{
    (void)state;
    char *user = path_in_work("loops.json");
    fk_context *context = context_with_databases(NULL, NULL);
    const fk_tuning_identity *id = &context->tuning->identity;
    char text[4096];
    snprintf(text, sizeof text,
             "{\"entries\": [{\"type\": \"%s\", \"vendor\": \"%s\", \"architecture\": "
             "\"%s\", \"device\": \"%s\", \"kernel\": \"ga\", \"accum\": \"float\", \"n\": "
             "4096, \"unroll\": \"2x2\", \"work_group_size\": 16, \"local_tiling\": true, "
             "\"j_splits\": 0, \"lanes\": 0, \"algorithm\": \"symmetric\"}]}",
             id->type, id->vendor, id->architecture[0] ? id->architecture : "default", id->device);
    write_text(user, text);
    fk_context_destroy(context);
    context = context_with_databases(user, NULL);
    assert_string_equal(fk_context_warnings(context), "");
    assert_null(fk__tuning_lookup(context->tuning, "ga", "float", 4096));
    const fk_tuning_entry *entry =
        fk__tuning_lookup_loop(context->tuning, FK_ALGORITHM_SYMMETRIC, "ga", "float", 4096);
    assert_non_null(entry);
    assert_int_equal(entry->algorithm, FK_ALGORITHM_SYMMETRIC);

    fk_eval_config config = {
        .kernel = "ga", .eps = 0.01, .expected_count = 4000, .algorithm = FK_ALGORITHM_SYMMETRIC};
    fk_variant variant = variant_for(context, &config);
    assert_int_equal(variant.source, FK_VARIANT_USER_DB);
    assert_int_equal(variant.unroll_i, 2);
    assert_int_equal(variant.unroll_j, 2);
    assert_int_equal(variant.work_group_size, 16);
    assert_int_equal(variant.tuned_count, 4096);
    config.algorithm = FK_ALGORITHM_ALL_PAIRS;
    variant = variant_for(context, &config);
    assert_int_not_equal(variant.source, FK_VARIANT_USER_DB);
    fk_context_destroy(context);

    /* Stored back, the key survives; an unknown loop name makes the database ignored. */
    fk_tuning_db *db = NULL;
    char *warnings = NULL;
    fk_tuning_identity identity;
    context = context_with_databases(NULL, NULL);
    identity = context->tuning->identity;
    fk_context_destroy(context);
    assert_int_equal(fk__tuning_db_load(&identity, user, NULL, &db, &warnings), FK_OK);
    assert_int_equal(db->count, 1);
    fk_tuning_entry copy = db->entries[0];
    fk__tuning_db_free(db);
    copy.algorithm = FK_ALGORITHM_CELLS;
    copy.unroll_j = 1;
    char message[1024];
    assert_int_equal(fk__tuning_db_store(user, &copy, NULL, 1, &warnings, message, sizeof message),
                     FK_OK);
    assert_int_equal(fk__tuning_db_load(&identity, user, NULL, &db, &warnings), FK_OK);
    assert_int_equal(db->count, 2); /* the symmetric entry and the cells one: different keys */
    assert_non_null(fk__tuning_lookup_loop(db, FK_ALGORITHM_CELLS, "ga", "float", 4096));
    fk__tuning_db_free(db);
    write_text(user, "{\"entries\": [{\"type\": \"default\", \"vendor\": \"default\", "
                     "\"architecture\": \"default\", \"device\": \"default\", \"kernel\": "
                     "\"ga\", \"accum\": \"float\", \"n\": 4096, \"unroll\": \"2x2\", "
                     "\"work_group_size\": 16, \"j_splits\": 0, \"algorithm\": \"tree\"}]}");
    assert_int_equal(fk__tuning_db_load(&identity, user, NULL, &db, &warnings), FK_OK);
    assert_non_null(warnings);
    assert_non_null(strstr(warnings, "algorithm must be all-pairs, symmetric, cells or neighbors"));
    fk__tuning_db_free(db);
    free(warnings);
    free(user);
}

static void test_eval_uses_database(void **state)
{
    (void)state;
    char *user = path_in_work("eval.json");
    fk_context *context = context_with_databases(NULL, NULL);
    write_entry_for(context, user, 4096, "2x4", 32, "false", 3, 0); /* the template won */
    fk_context_destroy(context);
    context = context_with_databases(user, NULL);
    assert_string_equal(fk_context_warnings(context), "");

    fk_eval_config config = {.kernel = "ga", .eps = 0.01, .expected_count = 4000};
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_OK);
    fk_variant variant;
    assert_int_equal(fk_eval_get_variant(eval, &variant), FK_OK);
    assert_int_equal(variant.source, FK_VARIANT_USER_DB);
    assert_int_equal(variant.unroll_i, 2);
    assert_int_equal(variant.unroll_j, 4);
    assert_int_equal(variant.work_group_size, 32);
    assert_int_equal(variant.local_tiling, 0);
    assert_int_equal(variant.tuned_count, 4096);
    /* The tuned split applies in the entry's bucket, the automatic one elsewhere. */
    fk_test_rng rng;
    fk_test_rng_init(&rng, 7);
    double *position = malloc(3 * 4000 * sizeof *position);
    assert_non_null(position);
    for (size_t i = 0; i < 3 * 4000; ++i)
        position[i] = fk_test_rng_uniform(&rng);
    fk_particles particles = {.count = 4000, .position = position};
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    fk_eval_get_variant(eval, &variant);
    assert_int_equal(variant.j_splits, 3);
    particles.count = 100;
    assert_int_equal(fk_eval_set_particles(eval, &particles), FK_OK);
    fk_eval_get_variant(eval, &variant);
    assert_int_not_equal(variant.j_splits, 3);
    fk_eval_destroy(eval);

    /* Explicit unrolling ignores the database; an explicit work-group size overrides the entry's.
     */
    config.unroll_i = 1;
    config.unroll_j = 1;
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_OK);
    fk_eval_get_variant(eval, &variant);
    assert_int_equal(variant.source, FK_VARIANT_EXPLICIT);
    fk_eval_destroy(eval);
    config = (fk_eval_config){.kernel = "ga", .work_group_size = 16};
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_OK);
    fk_eval_get_variant(eval, &variant);
    assert_int_equal(variant.source, FK_VARIANT_USER_DB); /* N unknown: the largest entry */
    assert_int_equal(variant.work_group_size, 16);
    fk_eval_destroy(eval);
    /* Another accumulator has no entry: the built-in default. */
    if (fk_context_device(context)->fp64) {
        config = (fk_eval_config){.kernel = "ga", .accum = "double", .expected_count = 4096};
        assert_int_equal(fk_eval_create(context, &config, &eval), FK_OK);
        fk_eval_get_variant(eval, &variant);
        assert_int_equal(variant.source, FK_VARIANT_DEFAULT);
        fk_eval_destroy(eval);
    }
    fk_context_destroy(context);
    free(position);
    free(user);
}

/* ---- the tuner ------------------------------------------------------------------------------- */

static void copy_tree(const char *from, const char *to)
{
    assert_true(mkdir(to, 0755) == 0);
    DIR *dir = opendir(from);
    assert_non_null(dir);
    for (struct dirent *item; (item = readdir(dir));) {
        if (item->d_name[0] == '.')
            continue;
        char source[4096], target[4096];
        snprintf(source, sizeof source, "%s/%s", from, item->d_name);
        snprintf(target, sizeof target, "%s/%s", to, item->d_name);
        struct stat st;
        assert_int_equal(stat(source, &st), 0);
        if (S_ISDIR(st.st_mode)) {
            copy_tree(source, target);
            continue;
        }
        size_t size = 0;
        char *data = fk__read_file(source, &size);
        assert_non_null(data);
        assert_int_equal(fk_test_write_file(target, data, size), 0);
        free(data);
    }
    closedir(dir);
}

/* The four candidates 1x1, 1x2, 1x4, 1x8 with 64 work-items, tiling on, automatic split. */
static fk_tune_config narrow_config(size_t n, const char *database)
{
    fk_tune_config config = {.kernel = "ga",
                             .accum = "float",
                             .n = n,
                             .budget_seconds = 120,
                             .database = database,
                             .unroll_i = 1,
                             .work_group_size = 64,
                             .local_tiling = 1,
                             .j_splits = -1};
    return config;
}

static const fk_tune_point *find_point(const fk_tune_bucket_result *b, int unroll_i, int unroll_j)
{
    for (size_t i = 0; i < b->tried_count; ++i)
        if (b->tried[i].unroll_i == unroll_i && b->tried[i].unroll_j == unroll_j)
            return &b->tried[i];
    return NULL;
}

/* A kernel directory whose gravity is 1.5 times too strong when UNROLL_J is 2: the j-particles'
 * masses are scaled as they are loaded (the self-referential macro calls the real fk_load_j; not
 * variadic, which NVIDIA's OpenCL compiler rejects). */
static void test_wrong_variant_rejected(void **state)
{
    (void)state;
    char *kernels = path_in_work("wrong-cl");
    char source[4096];
    snprintf(source, sizeof source, "%s/cl", fk_test_source_dir());
    copy_tree(source, kernels);
    char header[4096];
    snprintf(header, sizeof header, "%s/forces/ga.clh", kernels);
    size_t size = 0;
    char *text = fk__read_file(header, &size);
    assert_non_null(text);
    const char *fault = "\n#if UNROLL_J == 2\n"
                        "static inline float4 fk_test_heavier(float4 body)\n"
                        "{\n    body.w *= 1.5f;\n    return body;\n}\n"
                        "#define fk_load_j(body, aux, j) fk_test_heavier(fk_load_j(body, aux, j))\n"
                        "#endif\n";
    char *patched = malloc(size + strlen(fault) + 1);
    assert_non_null(patched);
    memcpy(patched, text, size);
    memcpy(patched + size, fault, strlen(fault) + 1);
    write_text(header, patched);
    free(text);
    free(patched);

    char *database = path_in_work("wrong.json");
    setenv("FORCEKIT_TUNING_DB", database, 1); /* the context reads it; the tuner writes it */
    setenv("FORCEKIT_SHIPPED_TUNING_DB", "off", 1);
    fk_context_config context_config = {.kernel_dir = kernels};
    fk_context *context = NULL;
    assert_int_equal(fk_context_create(&context_config, &context), FK_OK);
    fk_tune_config config = narrow_config(1000, NULL);
    fk_tune_result *result = NULL;
    fk_status status = fk_tune_run(context, &config, &result);
    if (status != FK_OK)
        fail_msg("tune: %s", fk_context_last_error(context));
    assert_int_equal(result->bucket_count, 1);
    const fk_tune_bucket_result *b = &result->buckets[0];
    assert_int_equal(b->bucket, 1024);
    assert_int_equal(b->space_size, 4);
    assert_int_equal(b->tried_count, 4);
    assert_int_equal(b->search, FK_TUNE_EXHAUSTIVE);
    const fk_tune_point *wrong = find_point(b, 1, 2);
    assert_non_null(wrong);
    assert_int_equal(wrong->outcome, FK_TUNE_WRONG_RESULT);
    assert_true(isnan(wrong->seconds)); /* never timed */
    assert_true(wrong->error > wrong->tolerance);
    assert_non_null(strstr(wrong->note, "rejected"));
    for (int j = 1; j <= 8; j *= 2)
        if (j != 2) {
            const fk_tune_point *right = find_point(b, 1, j);
            assert_non_null(right);
            assert_int_equal(right->outcome, FK_TUNE_MEASURED);
            assert_true(right->seconds > 0 && right->error <= right->tolerance);
        }
    assert_true(b->has_best);
    assert_int_not_equal(b->best.unroll_j, 2);
    /* The three measured candidates were timed twice more; the best is judged by that median. */
    assert_true(isfinite(b->best.confirmed_seconds));
    assert_true(b->best.seconds == b->best.confirmed_seconds);
    assert_true(isnan(wrong->confirmed_seconds));
    assert_string_equal(result->database, database);
    fk_tune_result_free(result);

    /* The stored best is what automatic unrolling now takes (the context reloaded it). */
    fk_eval_config eval_config = {.kernel = "ga", .expected_count = 1000};
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(context, &eval_config, &eval), FK_OK);
    fk_variant variant;
    fk_eval_get_variant(eval, &variant);
    assert_int_equal(variant.source, FK_VARIANT_USER_DB);
    assert_int_equal(variant.unroll_i, 1);
    assert_int_not_equal(variant.unroll_j, 2);
    fk_eval_destroy(eval);
    fk_context_destroy(context);
    unsetenv("FORCEKIT_TUNING_DB");
    unsetenv("FORCEKIT_SHIPPED_TUNING_DB");
    free(database);
    free(kernels);
}

/* A variant wrong only at the tail: with UNROLL_J = 2 the last particle (n - 1, in the partial
 * last i-block: N = 1000, blocks of 64) is loaded 0.25 away from where it is, so its force alone is
 * wrong. The correctness check must sample that particle too (the first and the last are always
 * among its targets), or the variant would be accepted into the database. */
static void test_wrong_tail_rejected(void **state)
{
    (void)state;
    char *kernels = path_in_work("wrong-tail-cl");
    char source[4096];
    snprintf(source, sizeof source, "%s/cl", fk_test_source_dir());
    copy_tree(source, kernels);
    char header[4096];
    snprintf(header, sizeof header, "%s/forces/ga.clh", kernels);
    size_t size = 0;
    char *text = fk__read_file(header, &size);
    assert_non_null(text);
    /* n is the pair loop kernel's own argument at every fk_load_i of cl/pairwise.cl */
    const char *fault = "\n#if UNROLL_J == 2\n"
                        "static inline float4 fk_test_moved(float4 body, int last)\n"
                        "{\n    if (last)\n        body.x += 0.25f;\n    return body;\n}\n"
                        "#define fk_load_i(body, aux, i) fk_test_moved(fk_load_i(body, aux, i), "
                        "(i) == n - 1)\n"
                        "#endif\n";
    char *patched = malloc(size + strlen(fault) + 1);
    assert_non_null(patched);
    memcpy(patched, text, size);
    memcpy(patched + size, fault, strlen(fault) + 1);
    write_text(header, patched);
    free(text);
    free(patched);

    char *database = path_in_work("wrong-tail.json");
    setenv("FORCEKIT_TUNING_DB", database, 1);
    setenv("FORCEKIT_SHIPPED_TUNING_DB", "off", 1);
    fk_context_config context_config = {.kernel_dir = kernels};
    fk_context *context = NULL;
    assert_int_equal(fk_context_create(&context_config, &context), FK_OK);
    fk_tune_config config = narrow_config(1000, NULL);
    config.unroll_j = 2; /* the wrong variant alone */
    fk_tune_result *result = NULL;
    fk_status status = fk_tune_run(context, &config, &result);
    if (status != FK_OK)
        fail_msg("tune: %s", fk_context_last_error(context));
    assert_int_equal(result->bucket_count, 1);
    const fk_tune_bucket_result *b = &result->buckets[0];
    const fk_tune_point *wrong = find_point(b, 1, 2);
    assert_non_null(wrong);
    if (wrong->outcome != FK_TUNE_WRONG_RESULT)
        fail_msg("a variant wrong at the last particle only was accepted (outcome %d, error %g, "
                 "tolerance %g)",
                 (int)wrong->outcome, wrong->error, wrong->tolerance);
    assert_true(wrong->error > wrong->tolerance);
    assert_false(b->has_best && b->best.unroll_j == 2);
    fk_tune_result_free(result);
    fk_context_destroy(context);
    unsetenv("FORCEKIT_TUNING_DB");
    unsetenv("FORCEKIT_SHIPPED_TUNING_DB");
    free(database);
    free(kernels);
}

typedef struct stop_after {
    size_t measured, limit;
} stop_after;

static int stop_after_points(const fk_tune_progress *progress, void *user)
{
    stop_after *stop = user;
    if (progress->point && progress->point->outcome == FK_TUNE_MEASURED)
        ++stop->measured;
    return stop->measured >= stop->limit;
}

static void test_resume_after_interruption(void **state)
{
    (void)state;
    char *database = path_in_work("resume.json");
    char *resume = path_in_work("resume.json.resume");
    fk_context *context = context_with_databases(database, NULL);

    /* First run: stopped (as by Ctrl-C) after two measured points. */
    stop_after stop = {.limit = 2};
    fk_tune_config config = narrow_config(1500, NULL);
    config.progress = stop_after_points;
    config.user = &stop;
    fk_tune_result *first = NULL;
    assert_int_equal(fk_tune_run(context, &config, &first), FK_OK);
    assert_true(first->interrupted);
    assert_int_equal(first->buckets[0].tried_count, 2);
    assert_string_equal(first->database, ""); /* nothing stored for an unfinished bucket */
    assert_string_equal(first->resume, resume);
    struct stat st;
    assert_int_equal(stat(resume, &st), 0);
    assert_int_not_equal(stat(database, &st), 0);

    /* Second run: the two points come from the resume file, unmeasured again (same seconds). */
    config.progress = NULL;
    config.user = NULL;
    fk_tune_result *second = NULL;
    assert_int_equal(fk_tune_run(context, &config, &second), FK_OK);
    assert_false(second->interrupted);
    const fk_tune_bucket_result *b = &second->buckets[0];
    assert_int_equal(b->tried_count, 4);
    size_t resumed = 0;
    for (size_t i = 0; i < b->tried_count; ++i)
        if (b->tried[i].resumed) {
            ++resumed;
            const fk_tune_point *p = &b->tried[i];
            const fk_tune_point *before = find_point(&first->buckets[0], p->unroll_i, p->unroll_j);
            assert_non_null(before);
            /* cJSON prints 15 significant digits; a new measurement would differ far more. */
            if (!(fabs(before->seconds - p->seconds) <= 1e-12 * before->seconds))
                fail_msg("resumed %dx%d: %.17g s, measured before as %.17g s", p->unroll_i,
                         p->unroll_j, p->seconds, before->seconds);
        }
    assert_int_equal(resumed, 2);
    assert_int_equal(b->search, FK_TUNE_EXHAUSTIVE);
    assert_string_equal(second->database, database);
    assert_int_not_equal(stat(resume, &st), 0); /* finished: the resume file is gone */
    assert_int_equal(stat(database, &st), 0);

    /* A resume file that is not one is ignored with a warning. */
    write_text(resume, "{broken");
    fk_tune_result *third = NULL;
    config.budget_seconds = 60;
    assert_int_equal(fk_tune_run(context, &config, &third), FK_OK);
    assert_non_null(strstr(fk_context_warnings(context), "resume"));
    assert_int_equal(third->buckets[0].tried_count, 4);
    fk_tune_result_free(first);
    fk_tune_result_free(second);
    fk_tune_result_free(third);
    fk_context_destroy(context);
    unsetenv("FORCEKIT_TUNING_DB");
    unsetenv("FORCEKIT_SHIPPED_TUNING_DB");
    free(database);
    free(resume);
}

/* The molecular kernels at the smallest bucket: on the tuner's lattice, near the LJ minimum, a
 * pair term is the difference of two nearly equal parts, and its float rounding is judged by
 * the term's sensitivity, not its small length; with the length alone every candidate of lj and
 * ljc_constant was rejected at N = 1,024 (scaled errors 7e-6 to 8e-6 against 6e-6). Every
 * candidate of a narrow space must be measured, none rejected. */
static void test_molecular_small_bucket(void **state)
{
    (void)state;
    char *database = path_in_work("molecular.json");
    fk_context *context = context_with_databases(database, NULL);
    const char *kernels[] = {"lj", "ljc_constant"};
    for (size_t k = 0; k < 2; ++k) {
        fk_tune_config config = narrow_config(1024, NULL);
        config.kernel = kernels[k];
        fk_tune_result *result = NULL;
        if (fk_tune_run(context, &config, &result) != FK_OK)
            fail_msg("tune %s: %s", kernels[k], fk_context_last_error(context));
        const fk_tune_bucket_result *b = &result->buckets[0];
        assert_int_equal(b->tried_count, b->space_size);
        for (size_t i = 0; i < b->tried_count; ++i) {
            if (b->tried[i].outcome != FK_TUNE_MEASURED)
                fail_msg("%s %dx%d: %s", kernels[k], b->tried[i].unroll_i, b->tried[i].unroll_j,
                         b->tried[i].note);
            assert_true(b->tried[i].error <= b->tried[i].tolerance);
        }
        assert_true(b->has_best);
        fk_tune_result_free(result);
    }
    fk_context_destroy(context);
    unsetenv("FORCEKIT_TUNING_DB");
    unsetenv("FORCEKIT_SHIPPED_TUNING_DB");
    free(database);
}

static void test_tiny_budget(void **state)
{
    (void)state;
    char *database = path_in_work("budget.json");
    fk_context *context = context_with_databases(database, NULL);
    fk_tune_config config = {.kernel = "ga", .n = 1024, .budget_seconds = 1.5};
    fk_tune_result *result = NULL;
    const double start = fk__now();
    assert_int_equal(fk_tune_run(context, &config, &result), FK_OK);
    const double seconds = fk__now() - start;
    fprintf(stderr, "tiny budget: %.2f s, %zu of %zu candidates\n", seconds,
            result->buckets[0].tried_count, result->buckets[0].space_size);
    assert_int_equal(result->buckets[0].search, FK_TUNE_SAMPLED);
    assert_true(result->buckets[0].tried_count >= 1);
    assert_true(result->buckets[0].tried_count < result->buckets[0].space_size);
    assert_true(result->buckets[0].has_best);
    /* The built-in default runs first: the untuned baseline is always known. */
    assert_true(isfinite(result->buckets[0].untuned_seconds));
    fk_tune_result_free(result);

    /* Bad arguments. */
    config.kernel = "nosuch";
    assert_int_equal(fk_tune_run(context, &config, &result), FK_ERR_INVALID_ARGUMENT);
    assert_null(result);
    config.kernel = "ga";
    config.accum = "nosuch";
    assert_int_equal(fk_tune_run(context, &config, &result), FK_ERR_INVALID_ARGUMENT);
    config.accum = NULL;
    config.budget_seconds = NAN;
    assert_int_equal(fk_tune_run(context, &config, &result), FK_ERR_INVALID_ARGUMENT);
    fk_context_destroy(context);
    unsetenv("FORCEKIT_TUNING_DB");
    unsetenv("FORCEKIT_SHIPPED_TUNING_DB");
    free(database);
}

/* ---- issue #13: variant rules, database files, concurrency ----------------------------------- */

static fk_tuning_entry entry_with_n(size_t n)
{
    fk_tuning_entry entry = {.type = "gpu",
                             .vendor = "NVIDIA",
                             .architecture = "SM9.0",
                             .device = "NVIDIA H200",
                             .kernel = "ga",
                             .accum = "float",
                             .n = n,
                             .unroll_i = 4,
                             .unroll_j = 8,
                             .work_group_size = 256,
                             .local_tiling = 1};
    return entry;
}

/* The one place (src/core/programs/variant.c) and the three sites that ask it: the API, the
 * database (the CLI's bench options are covered by test_cli.sh). */
static void test_variant_rules(void **state)
{
    (void)state;
    char reason[256];
    assert_int_equal(fk__variant_check(0, 0, 0, 0, reason, sizeof reason), 1);
    assert_int_equal(fk__variant_check(4, 4, 8, 1, reason, sizeof reason), 1);
    assert_int_equal(fk__variant_check(4, 4, 5, -1, reason, sizeof reason), 1); /* no tile */
    assert_int_equal(fk__variant_check(4, 4, 5, 0, reason, sizeof reason), 1);  /* decided later */
    assert_int_equal(fk__variant_check(4, 4, 5, 1, reason, sizeof reason), 0);
    assert_non_null(strstr(reason, "not a multiple of the j-unrolling 4"));
    assert_int_equal(fk__variant_check(3, 4, 0, 0, reason, sizeof reason), 0);
    assert_int_equal(fk__variant_check(4, 0, 0, 0, reason, sizeof reason), 0);
    assert_int_equal(fk__variant_check(0, 0, 5000, 0, reason, sizeof reason), 1); /* device's */
    assert_int_equal(fk__variant_check(0, 0, -1, 0, reason, sizeof reason), 0);
    assert_int_equal(fk__variant_check(0, 0, 0, 7, reason, sizeof reason), 0);
    assert_non_null(strstr(reason, "local tiling 7"));

    fk_context *context = context_with_databases(NULL, NULL);
    fk_eval *eval = NULL;
    /* The audit's reproducer: unroll 4x4, work-group size 5 returned FK_OK with garbage forces. */
    fk_eval_config bad = {.kernel = "ga", .unroll_i = 4, .unroll_j = 4, .work_group_size = 5};
    assert_int_equal(fk_eval_create(context, &bad, &eval), FK_ERR_INVALID_ARGUMENT);
    assert_null(eval);
    assert_non_null(strstr(fk_context_last_error(context), "not a multiple"));
    fk_eval_config seven = {.kernel = "ga", .local_tiling = 7};
    assert_int_equal(fk_eval_create(context, &seven, &eval), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fk_context_last_error(context), "local tiling 7"));
    /* The same shape without a tile is a valid variant, and so is 4x4 with 8. */
    fk_eval_config untiled = {
        .kernel = "ga", .unroll_i = 4, .unroll_j = 4, .work_group_size = 5, .local_tiling = -1};
    assert_int_equal(fk_eval_create(context, &untiled, &eval), FK_OK);
    fk_eval_destroy(eval);
    eval = NULL;

    /* A database entry with that shape is ignored with a warning; the built-in default runs. */
    char *user = path_in_work("wg5.json");
    write_entry_for(context, user, 1024, "4x4", 5, "true", 0, -1);
    fk_context_destroy(context);
    context = context_with_databases(user, NULL);
    assert_non_null(strstr(fk_context_warnings(context), "entry 0 ignored: work-group size 5"));
    fk_eval_config automatic = {.kernel = "ga", .expected_count = 1000};
    assert_int_equal(fk_eval_create(context, &automatic, &eval), FK_OK);
    fk_variant variant;
    assert_int_equal(fk_eval_get_variant(eval, &variant), FK_OK);
    assert_int_not_equal(variant.source, FK_VARIANT_USER_DB);
    assert_int_equal(variant.work_group_size % variant.unroll_j, 0);
    fk_eval_destroy(eval);
    fk_context_destroy(context);
    unsetenv("FORCEKIT_TUNING_DB");
    unsetenv("FORCEKIT_SHIPPED_TUNING_DB");
    free(user);
}

/* Only a regular file that does not parse is moved aside, never over an older backup; anything
 * else named as the database is refused and left alone. */
static void test_store_keeps_what_is_not_ours(void **state)
{
    (void)state;
    char message[512];
    char *warnings = NULL;
    fk_tuning_entry entry = entry_with_n(4096);
    char *directory = path_in_work("db-directory");
    assert_int_equal(mkdir(directory, 0755), 0);
    assert_int_equal(
        fk__tuning_db_store(directory, &entry, NULL, 1, &warnings, message, sizeof message),
        FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(message, "not a regular file"));
    struct stat st;
    assert_int_equal(stat(directory, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    char *directory_bad = path_in_work("db-directory.bad");
    assert_int_equal(stat(directory_bad, &st), -1);

    char *db = path_in_work("chain.json"), *bad = path_in_work("chain.json.bad"),
         *bad1 = path_in_work("chain.json.bad.1");
    write_text(bad, "an older backup");
    write_text(db, "{ broken");
    assert_int_equal(fk__tuning_db_store(db, &entry, NULL, 1, &warnings, message, sizeof message),
                     FK_OK);
    assert_non_null(strstr(warnings, "chain.json.bad.1"));
    FILE *file = fopen(bad, "r");
    assert_non_null(file);
    char text[64] = "";
    assert_non_null(fgets(text, sizeof text, file));
    fclose(file);
    assert_string_equal(text, "an older backup");
    assert_int_equal(stat(bad1, &st), 0);
    free(warnings);
    free(directory);
    free(directory_bad);
    free(db);
    free(bad);
    free(bad1);
}

/* The audit: 4 processes x 50 stores kept 52 of 200 entries. Under the lock all are kept; the
 * resume file keeps every process's run too. */
static void test_concurrent_stores(void **state)
{
    (void)state;
    char *db = path_in_work("concurrent.json"), *resume = path_in_work("concurrent.json.resume");
    enum { PROCESSES = 4, STORES = 50 };
    pid_t children[PROCESSES];
    for (int p = 0; p < PROCESSES; ++p) {
        children[p] = fork();
        assert_true(children[p] >= 0);
        if (children[p] == 0) {
            for (int k = 0; k < STORES; ++k) {
                fk_tuning_entry entry = entry_with_n((size_t)(1 + p * STORES + k));
                char *warnings = NULL, message[512];
                if (fk__tuning_db_store(db, &entry, NULL, 1, &warnings, message, sizeof message) !=
                    FK_OK)
                    _exit(1);
                free(warnings);
                char key[32];
                snprintf(key, sizeof key, "run-%d", p);
                cJSON *points = cJSON_CreateArray();
                for (int point = 0; point <= k; ++point)
                    cJSON_AddItemToArray(points, cJSON_CreateNumber(point));
                if (fk__tuning_resume_save(resume, key, points, message, sizeof message) != FK_OK)
                    _exit(2);
                cJSON_Delete(points);
            }
            _exit(0);
        }
    }
    for (int p = 0; p < PROCESSES; ++p) {
        int status = 0;
        assert_int_equal(waitpid(children[p], &status, 0), children[p]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    const fk_tuning_identity id = h200();
    fk_tuning_db *loaded = NULL;
    char *warnings = NULL;
    assert_int_equal(fk__tuning_db_load(&id, db, NULL, &loaded, &warnings), FK_OK);
    assert_null(warnings);
    assert_int_equal(loaded->count, PROCESSES * STORES);
    fk__tuning_db_free(loaded);

    size_t size = 0;
    char *text = fk__read_file(resume, &size);
    assert_non_null(text);
    cJSON *document = cJSON_Parse(text);
    free(text);
    cJSON *runs = cJSON_GetObjectItemCaseSensitive(document, "runs");
    assert_int_equal(cJSON_GetArraySize(runs), PROCESSES);
    for (int p = 0; p < PROCESSES; ++p) {
        char key[32];
        snprintf(key, sizeof key, "run-%d", p);
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(runs, key)), STORES);
    }
    cJSON_Delete(document);
    free(db);
    free(resume);
}

/* A large database with duplicate keys: each key once, the first (user) one kept. Loading was
 * quadratic (10,000 entries 14 s); the time is printed, not asserted. */
static void test_large_database(void **state)
{
    (void)state;
    enum { ENTRIES = 20000, DUPLICATES = 1000 };
    char *path = path_in_work("large.json");
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fputs("{\"format\": \"forcekit-tuning\", \"version\": 1, \"entries\": [\n", file);
    for (int k = 0; k < ENTRIES + DUPLICATES; ++k) {
        /* the duplicates repeat the first keys with another unroll */
        int n = k < ENTRIES ? k + 1 : k - ENTRIES + 1;
        fprintf(file,
                "%s{\"type\": \"gpu\", \"vendor\": \"NVIDIA\", \"architecture\": \"SM9.0\", "
                "\"device\": \"NVIDIA H200\", \"kernel\": \"ga\", \"accum\": \"float\", \"n\": "
                "%d, \"unroll\": \"%s\", \"work_group_size\": 64}\n",
                k ? "," : "", n, k < ENTRIES ? "4x8" : "1x1");
    }
    fputs("]}\n", file);
    fclose(file);
    const fk_tuning_identity id = h200();
    fk_tuning_db *db = NULL;
    char *warnings = NULL;
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    assert_int_equal(fk__tuning_db_load(&id, path, NULL, &db, &warnings), FK_OK);
    clock_gettime(CLOCK_MONOTONIC, &end);
    print_message("loaded %d entries (%d duplicates) in %.3f s\n", ENTRIES + DUPLICATES, DUPLICATES,
                  (double)(end.tv_sec - start.tv_sec) +
                      1e-9 * (double)(end.tv_nsec - start.tv_nsec));
    assert_null(warnings);
    assert_int_equal(db->count, ENTRIES);
    for (size_t k = 0; k < db->count; ++k)
        if (db->entries[k].unroll_i != 4 || db->entries[k].n != k + 1)
            fail_msg("entry %zu: n %zu unroll %dx%d", k, db->entries[k].n, db->entries[k].unroll_i,
                     db->entries[k].unroll_j);
    fk__tuning_db_free(db);
    free(path);
}

/* The tuner searches the lane loop on a CPU (its widths, j-unroll, work-group sizes) beside the
 * scalar template, takes what runs by default (the lane loop) as its baseline and confirms against
 * it, so the stored best is never slower than the default by its own measurement, and stores the
 * lane choice, which fk_eval_create then follows. */
static void test_tuner_searches_lanes(void **state)
{
    (void)state;
    char *database = path_in_work("lanes_tuned.json");
    setenv("FORCEKIT_TUNING_DB", database, 1);
    setenv("FORCEKIT_SHIPPED_TUNING_DB", "off", 1);
    fk_context *context = NULL;
    assert_int_equal(fk_context_create(NULL, &context), FK_OK);
    const int width = automatic_lanes(context);
    fk_tune_config config = {.kernel = "ga",
                             .accum = "float",
                             .n = 1000,
                             .budget_seconds = 300,
                             .database = database,
                             .unroll_i = 1,
                             .unroll_j = 1,
                             .local_tiling = -1,
                             .j_splits = -1};
    fk_tune_result *result = NULL;
    if (fk_tune_run(context, &config, &result) != FK_OK)
        fail_msg("tune: %s", fk_context_last_error(context));
    const fk_tune_bucket_result *b = &result->buckets[0];
    const size_t scalar_groups = fk_context_device(context)->type == FK_DEVICE_GPU ? 4 : 5;
    const size_t widths = width == 16 ? 2 : width == 8 ? 1 : 0;
    assert_int_equal(b->space_size, scalar_groups + 4 * widths);
    assert_int_equal(b->tried_count, b->space_size);
    size_t lane_points = 0;
    for (size_t i = 0; i < b->tried_count; ++i)
        if (b->tried[i].lanes) {
            ++lane_points;
            assert_true(b->tried[i].lanes <= width);
            if (b->tried[i].outcome != FK_TUNE_MEASURED)
                fail_msg("lanes %d wg %d: %s", b->tried[i].lanes, b->tried[i].work_group_size,
                         b->tried[i].note);
        }
    assert_int_equal(lane_points, 4 * widths);
    assert_true(b->has_best);
    if (width) {
        /* The default (the lane loop) was measured and confirmed beside the best. */
        assert_true(isfinite(b->untuned_seconds));
        assert_true(isfinite(b->best.confirmed_seconds));
        assert_true(b->best.seconds <= b->untuned_seconds);
    }
    const int best_lanes = b->best.lanes;
    fk_tune_result_free(result);
    char *text = fk__read_file(database, NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"lanes\""));
    free(text);
    fk_eval_config eval_config = {.kernel = "ga", .expected_count = 1000};
    const fk_variant variant = variant_for(context, &eval_config);
    assert_int_equal(variant.source, FK_VARIANT_USER_DB);
    assert_int_equal(variant.lanes, best_lanes);
    fk_context_destroy(context);
    unsetenv("FORCEKIT_TUNING_DB");
    unsetenv("FORCEKIT_SHIPPED_TUNING_DB");
    free(database);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_normalisation),
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_buckets),
        cmocka_unit_test(test_lookup_fallbacks),
        cmocka_unit_test(test_nearest_bucket),
        cmocka_unit_test(test_user_overrides_shipped),
        cmocka_unit_test(test_corrupt_database),
        cmocka_unit_test(test_eval_uses_database),
        cmocka_unit_test(test_database_keyed_by_loop),
        cmocka_unit_test(test_database_and_lanes),
        cmocka_unit_test(test_tuner_searches_lanes),
        cmocka_unit_test(test_wrong_variant_rejected),
        cmocka_unit_test(test_wrong_tail_rejected),
        cmocka_unit_test(test_molecular_small_bucket),
        cmocka_unit_test(test_resume_after_interruption),
        cmocka_unit_test(test_tiny_budget),
        cmocka_unit_test(test_variant_rules),
        cmocka_unit_test(test_store_keeps_what_is_not_ours),
        cmocka_unit_test(test_concurrent_stores),
        cmocka_unit_test(test_large_database),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
