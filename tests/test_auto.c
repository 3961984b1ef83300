/*
 * --algorithm auto (FK_ALGORITHM_AUTO, src/core/eval/choose.c): the untuned rule (long-range laws
 * and tiny systems run all-pairs, a cutoff and a large N do not; the device type and the density
 * decide the rest), the choice read from the tuning database's measured entries of the loops
 * (fastest wins, the source is the database; one measured loop is not a comparison), what
 * fk_variant reports, forces equal bit for bit to those of the loop it chose, the names, the
 * refusal of "auto" as a database entry's loop, and the reach the evaluation resolved
 * (fk_eval_get_reach: cutoff, skin and box, from the flat fields or config.physics).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/eval/choose.h"
#include "core/internal.h"
#include "test_support.h"
#include "core/tune/tune.h"

/* An LJ fluid of side^3 particles on a jittered lattice at density 0.8 in its periodic box. */
typedef struct fluid {
    size_t n;
    double *position;
    double box;
} fluid;

static fluid make_fluid(int side, uint64_t seed)
{
    fluid f = {.n = (size_t)side * (size_t)side * (size_t)side};
    const double spacing = cbrt(1 / 0.8);
    f.box = spacing * side;
    f.position = malloc(3 * f.n * sizeof *f.position);
    assert_non_null(f.position);
    fk_test_rng rng;
    fk_test_rng_init(&rng, seed);
    fk_test_jittered_lattice(f.position, side, spacing, 0.2 * spacing, &rng);
    return f;
}

static fk_eval_config lj_config(const fluid *f, int algorithm)
{
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "lj";
    config.algorithm = algorithm;
    config.expected_count = f->n;
    for (int d = 0; d < 3; ++d)
        config.box[d] = f->box;
    return config;
}

static fk_variant create_variant(const fk_eval_config *config, fk_eval **keep)
{
    fk_eval *eval = NULL;
    if (fk_eval_create(fk_test_context, config, &eval) != FK_OK)
        fail_msg("create: %s", fk_context_last_error(fk_test_context));
    fk_variant variant;
    assert_int_equal(fk_eval_get_variant(eval, &variant), FK_OK);
    if (keep)
        *keep = eval;
    else
        fk_eval_destroy(eval);
    return variant;
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(fk_algorithm_name(FK_ALGORITHM_AUTO), "auto");
    fk_algorithm found = FK_ALGORITHM_ALL_PAIRS;
    assert_int_equal(fk_algorithm_find("auto", &found), FK_OK);
    assert_int_equal(found, FK_ALGORITHM_AUTO);
    assert_int_equal(fk_algorithm_find("automatic", &found), FK_ERR_INVALID_ARGUMENT);
}

/* The rule, for both device types, without a device. */
static void test_rule(void **state)
{
    (void)state;
    fk_device_info cpu = {.type = FK_DEVICE_CPU}, gpu = {.type = FK_DEVICE_GPU};
    const double open[3] = {0, 0, 0};
    /* long-range (no cutoff): all-pairs at any N */
    assert_int_equal(fk__eval_auto_rule(&cpu, 0, 0, 0, 1u << 20, open), FK_ALGORITHM_ALL_PAIRS);
    assert_int_equal(fk__eval_auto_rule(&gpu, 0, 0, 0, 1u << 20, open), FK_ALGORITHM_ALL_PAIRS);
    assert_int_equal(fk__eval_auto_rule(&cpu, 1, 0, 0, 100000, open), FK_ALGORITHM_ALL_PAIRS);
    /* tiny N with a cutoff: all-pairs */
    assert_int_equal(fk__eval_auto_rule(&cpu, 1, 2.5, 0, 64, open), FK_ALGORITHM_ALL_PAIRS);
    assert_int_equal(fk__eval_auto_rule(&gpu, 1, 2.5, 0, 4096, open), FK_ALGORITHM_ALL_PAIRS);
    /* a cutoff and a large N: not all-pairs; lists on both */
    assert_int_equal(fk__eval_auto_rule(&cpu, 1, 2.5, 0, 16384, open), FK_ALGORITHM_NEIGHBORS);
    assert_int_equal(fk__eval_auto_rule(&gpu, 1, 2.5, 0, 1u << 20, open), FK_ALGORITHM_NEIGHBORS);
    /* N unknown: a loop (O(N)), never all-pairs */
    assert_int_equal(fk__eval_auto_rule(&cpu, 1, 2.5, 0, 0, open), FK_ALGORITHM_NEIGHBORS);
    assert_int_equal(fk__eval_auto_rule(&gpu, 1, 2.5, 0, 0, open), FK_ALGORITHM_NEIGHBORS);
    /* the density: 4,096 particles at 0.8 in a periodic box (side 17.2) have ~96 partners within
     * 2.8 (lists); the same in a box of side 5 (density 33) have ~3,000: all-pairs */
    const double liquid[3] = {17.24, 17.24, 17.24}, dense[3] = {5, 5, 5};
    assert_int_equal(fk__eval_auto_rule(&cpu, 1, 2.5, 0, 4096, liquid), FK_ALGORITHM_NEIGHBORS);
    assert_int_equal(fk__eval_auto_rule(&cpu, 1, 2.5, 0, 4096, dense), FK_ALGORITHM_ALL_PAIRS);
    /* a larger reach at density 0.8 crosses too: 4/3 pi 8^3 0.8 = 1,716 < 4096 / 2 without a
     * skin; with the default skin (0.96) 2,411 > 2,048 */
    assert_int_equal(fk__eval_auto_rule(&cpu, 1, 8.0, -1, 4096, open), FK_ALGORITHM_NEIGHBORS);
    assert_int_equal(fk__eval_auto_rule(&cpu, 1, 8.0, 0, 4096, open), FK_ALGORITHM_ALL_PAIRS);
}

/* Through fk_eval_create on the test device (no tuning database: the rule decides). */
static void test_create_untuned(void **state)
{
    (void)state;
    /* gravity, a tiny N: all-pairs, chosen by the rule */
    fk_eval_config ga = FK_CONFIG_INIT(fk_eval_config);
    ga.kernel = "ga";
    ga.algorithm = FK_ALGORITHM_AUTO;
    ga.expected_count = 16;
    fk_variant v = create_variant(&ga, NULL);
    assert_int_equal(v.algorithm, FK_ALGORITHM_ALL_PAIRS);
    assert_int_equal(v.algorithm_source, FK_VARIANT_DEFAULT);
    /* an explicit loop says so */
    ga.algorithm = FK_ALGORITHM_SYMMETRIC;
    v = create_variant(&ga, NULL);
    assert_int_equal(v.algorithm, FK_ALGORITHM_SYMMETRIC);
    assert_int_equal(v.algorithm_source, FK_VARIANT_EXPLICIT);
    /* lj, a large N in a periodic box: not all-pairs */
    fluid f = {.n = 65536, .box = cbrt(65536 / 0.8)};
    fk_eval_config lj = lj_config(&f, FK_ALGORITHM_AUTO);
    v = create_variant(&lj, NULL);
    assert_int_not_equal(v.algorithm, FK_ALGORITHM_ALL_PAIRS);
    assert_int_equal(v.algorithm, FK_ALGORITHM_NEIGHBORS);
    assert_int_equal(v.algorithm_source, FK_VARIANT_DEFAULT);
    /* lj, 27 particles: all-pairs */
    lj.expected_count = 27;
    v = create_variant(&lj, NULL);
    assert_int_equal(v.algorithm, FK_ALGORITHM_ALL_PAIRS);
}

/* The forces with auto are those of the loop it chose, bit for bit (the same loop and variant
 * on the same inputs; float sums in the loop's fixed order). */
static void test_forces_equal_chosen(void **state)
{
    (void)state;
    const int sides[] = {6, 16}; /* 216: all-pairs; 4,096: a loop on a CPU */
    for (size_t k = 0; k < sizeof sides / sizeof sides[0]; ++k) {
        fluid f = make_fluid(sides[k], 17 + k);
        fk_eval_config config = lj_config(&f, FK_ALGORITHM_AUTO);
        fk_eval *automatic = NULL, *explicit_eval = NULL;
        const fk_variant chosen = create_variant(&config, &automatic);
        config.algorithm = chosen.algorithm;
        create_variant(&config, &explicit_eval);
        const fk_particles particles = {.count = f.n, .position = f.position};
        double *a = malloc(3 * f.n * sizeof *a), *b = malloc(3 * f.n * sizeof *b);
        assert_true(a && b);
        fk_eval *evals[2] = {automatic, explicit_eval};
        double *out[2] = {a, b};
        for (int e = 0; e < 2; ++e) {
            if (fk_eval_set_particles(evals[e], &particles) != FK_OK ||
                fk_eval_compute(evals[e], NULL) != FK_OK ||
                fk_eval_read_forces(evals[e], out[e]) != FK_OK)
                fail_msg("%s: %s", fk_algorithm_name((fk_algorithm)chosen.algorithm),
                         fk_context_last_error(fk_test_context));
        }
        double largest = 0;
        for (size_t i = 0; i < 3 * f.n; ++i)
            largest = fmax(largest, fabs(a[i]));
        assert_true(largest > 0); /* the jitter leaves forces to compare */
        assert_memory_equal(a, b, 3 * f.n * sizeof *a);
        fk_variant after;
        fk_eval_get_variant(automatic, &after);
        assert_int_equal(after.algorithm, chosen.algorithm);
        fk_eval_destroy(automatic);
        fk_eval_destroy(explicit_eval);
        free(a);
        free(b);
        free(f.position);
    }
}

/* Exclusions on the fly rebuild the programs for their slots: the same loop, the same reason. */
static void test_exclusions_rebuild_keeps_choice(void **state)
{
    (void)state;
    fluid f = {.n = 4096, .box = cbrt(4096 / 0.8)};
    fk_eval_config config = lj_config(&f, FK_ALGORITHM_AUTO);
    config.kernel = "ljc_constant";
    config.cutoff = 2.5;
    fk_eval *eval = NULL;
    const fk_variant before = create_variant(&config, &eval);
    const size_t pairs[] = {0, 1, 0, 2, 5, 9};
    if (fk_eval_set_exclusions(eval, pairs, 3) != FK_OK)
        fail_msg("exclusions: %s", fk_context_last_error(fk_test_context));
    fk_variant after;
    fk_eval_get_variant(eval, &after);
    assert_int_equal(after.algorithm, before.algorithm);
    assert_int_equal(after.algorithm_source, FK_VARIANT_DEFAULT);
    fk_eval_destroy(eval);
}

/* fk_eval_get_reach: the cutoff, skin and box that fk_eval_create resolved once (its plan,
 * src/core/eval/plan.c), from the flat fields or from config.physics, with the law's default
 * cutoff and the default skin applied; the cells loop runs with the same skin. */
static void expect_reach(const fk_eval_config *config, double cutoff, double skin, double side)
{
    fk_eval *eval = NULL;
    const fk_variant variant = create_variant(config, &eval);
    double got_cutoff = -1, got_skin = -1, box[3] = {-1, -1, -1};
    assert_int_equal(fk_eval_get_reach(eval, &got_cutoff, &got_skin, box), FK_OK);
    if (got_cutoff != cutoff || got_skin != skin)
        fail_msg("%s: reach %.17g + %.17g, expected %.17g + %.17g", config->kernel, got_cutoff,
                 got_skin, cutoff, skin);
    for (int d = 0; d < 3; ++d)
        assert_true(box[d] == side);
    if (variant.algorithm == FK_ALGORITHM_CELLS)
        assert_true(variant.cell_skin == skin);
    assert_int_equal(fk_eval_get_reach(eval, NULL, NULL, NULL), FK_OK);
    fk_eval_destroy(eval);
}

static void test_reach(void **state)
{
    (void)state;
    fluid f = {.n = 4096, .box = 16.0};
    /* flat fields: lj's default cutoff 2.5 and the default skin */
    fk_eval_config flat = lj_config(&f, FK_ALGORITHM_CELLS);
    expect_reach(&flat, 2.5, FK_DEFAULT_SKIN_FRACTION * 2.5, f.box);
    flat.skin = -1; /* none */
    expect_reach(&flat, 2.5, 0, f.box);
    /* config.physics: its cutoff (not lj's default), an explicit skin */
    fk_physics physics = {.cutoff = 3.5, .box = {f.box, f.box, f.box}};
    fk_eval_config described = FK_CONFIG_INIT(fk_eval_config);
    described.kernel = "lj";
    described.algorithm = FK_ALGORITHM_CELLS;
    described.physics = &physics;
    expect_reach(&described, 3.5, FK_DEFAULT_SKIN_FRACTION * 3.5, f.box);
    described.skin = 0.5;
    expect_reach(&described, 3.5, 0.5, f.box);
    /* open boundaries; gravity has no cutoff and no skin */
    physics.box[0] = physics.box[1] = physics.box[2] = 0;
    described.algorithm = FK_ALGORITHM_NEIGHBORS;
    expect_reach(&described, 3.5, 0.5, 0);
    fk_eval_config ga = FK_CONFIG_INIT(fk_eval_config);
    ga.kernel = "ga";
    ga.eps = 0.01;
    expect_reach(&ga, 0, 0, 0);
    double cutoff = 0;
    assert_int_equal(fk_eval_get_reach(NULL, &cutoff, NULL, NULL), FK_ERR_INVALID_ARGUMENT);
}

/* ---- the tuning database ----------------------------------------------------------------------
 */

static char *work_dir;

static void write_text(const char *path, const char *text)
{
    assert_int_equal(fk_test_write_file(path, text, strlen(text)), 0);
}

static fk_context *context_with_database(const char *path)
{
    setenv("FORCEKIT_TUNING_DB", path, 1);
    setenv("FORCEKIT_SHIPPED_TUNING_DB", "off", 1);
    fk_context *context = NULL;
    if (fk_context_create(NULL, &context) != FK_OK)
        fail_msg("context: %s", fk_context_last_error(context));
    return context;
}

/* One entry per loop for this device, lj float at bucket n; seconds <= 0: no "seconds_per_eval". */
static void write_entries(fk_context *context, const char *path, size_t n,
                          const char *const *algorithms, const double *seconds, size_t count)
{
    const fk_tuning_identity *id = &context->tuning->identity;
    char text[8192] = "{\"entries\": [";
    for (size_t k = 0; k < count; ++k) {
        char entry[1024], algorithm_key[64] = "", seconds_key[64] = "";
        /* each loop's own kind of shape: i-unrolling for all-pairs and the cells' placeholders,
         * partners per step for the lists */
        const int lists = strcmp(algorithms[k], "neighbors") == 0;
        const int cells = strcmp(algorithms[k], "cells") == 0;
        if (strcmp(algorithms[k], "all-pairs") != 0)
            snprintf(algorithm_key, sizeof algorithm_key, ", \"algorithm\": \"%s\"", algorithms[k]);
        if (seconds[k] > 0)
            snprintf(seconds_key, sizeof seconds_key, ", \"seconds_per_eval\": %g", seconds[k]);
        snprintf(entry, sizeof entry,
                 "%s{\"type\": \"%s\", \"vendor\": \"%s\", \"architecture\": \"%s\", "
                 "\"device\": \"%s\", \"kernel\": \"lj\", \"accum\": \"float\", \"n\": %zu, "
                 "\"unroll\": \"%s\", \"work_group_size\": %d, \"local_tiling\": false, "
                 "\"j_splits\": 0%s%s}",
                 k ? ", " : "", id->type, id->vendor,
                 id->architecture[0] ? id->architecture : "default", id->device, n,
                 lists ? "1x4" : "4x1",
                 lists   ? 16
                 : cells ? 1
                         : 64,
                 algorithm_key, seconds_key);
        strncat(text, entry, sizeof text - strlen(text) - 1);
    }
    strncat(text, "]}", sizeof text - strlen(text) - 1);
    write_text(path, text);
}

static void test_tuned_choice(void **state)
{
    (void)state;
    work_dir = fk_test_make_temp_dir("fk-auto");
    char path[1024];
    snprintf(path, sizeof path, "%s/tuning.json", work_dir);
    fk_context *probe = context_with_database("off");
    fluid f = {.n = 16384, .box = cbrt(16384 / 0.8)};
    fk_eval_config config = lj_config(&f, FK_ALGORITHM_AUTO);

    /* cells measured fastest: cells, from the user's database (whatever the rule says) */
    const char *three[] = {"all-pairs", "cells", "neighbors"};
    const double cells_fastest[] = {0.5, 0.001, 0.002};
    write_entries(probe, path, 16384, three, cells_fastest, 3);
    fk_context *context = context_with_database(path);
    fk_eval *eval = NULL;
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_OK);
    fk_variant v;
    fk_eval_get_variant(eval, &v);
    assert_int_equal(v.algorithm, FK_ALGORITHM_CELLS);
    assert_int_equal(v.algorithm_source, FK_VARIANT_USER_DB);
    fk_eval_destroy(eval);
    fk_context_destroy(context);

    /* all-pairs measured fastest (a device where it is): all-pairs, even at this N */
    const double all_pairs_fastest[] = {0.0005, 0.001, 0.002};
    write_entries(probe, path, 16384, three, all_pairs_fastest, 3);
    context = context_with_database(path);
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_OK);
    fk_eval_get_variant(eval, &v);
    assert_int_equal(v.algorithm, FK_ALGORITHM_ALL_PAIRS);
    assert_int_equal(v.algorithm_source, FK_VARIANT_USER_DB);
    fk_eval_destroy(eval);
    /* another bucket (N = 1,024) has no measurement: the rule */
    config.expected_count = 1024;
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_OK);
    fk_eval_get_variant(eval, &v);
    assert_int_equal(v.algorithm_source, FK_VARIANT_DEFAULT);
    fk_eval_destroy(eval);
    config.expected_count = 16384;
    fk_context_destroy(context);

    /* one loop measured, or entries without times: no comparison, the rule */
    const double one_time[] = {0, 0.001, 0};
    write_entries(probe, path, 16384, three, one_time, 3);
    context = context_with_database(path);
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_OK);
    fk_eval_get_variant(eval, &v);
    assert_int_equal(v.algorithm_source, FK_VARIANT_DEFAULT);
    assert_int_not_equal(v.algorithm, FK_ALGORITHM_ALL_PAIRS);
    fk_eval_destroy(eval);
    fk_context_destroy(context);

    /* "auto" is no loop an entry can be tuned for: that entry is ignored with a warning, the
     * others stand */
    const char *with_auto[] = {"all-pairs", "auto", "neighbors"};
    const double times[] = {0.5, 0.0001, 0.002};
    write_entries(probe, path, 16384, with_auto, times, 3);
    context = context_with_database(path);
    assert_non_null(strstr(fk_context_warnings(context), "algorithm must be"));
    assert_int_equal(fk_eval_create(context, &config, &eval), FK_OK);
    fk_eval_get_variant(eval, &v);
    assert_int_equal(v.algorithm, FK_ALGORITHM_NEIGHBORS);
    assert_int_equal(v.algorithm_source, FK_VARIANT_USER_DB);
    fk_eval_destroy(eval);
    fk_context_destroy(context);

    fk_context_destroy(probe);
    unsetenv("FORCEKIT_SHIPPED_TUNING_DB");
    setenv("FORCEKIT_TUNING_DB", "off", 1);
    fk_test_remove_tree(work_dir);
    free(work_dir);
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_rule),
        cmocka_unit_test(test_create_untuned),
        cmocka_unit_test(test_forces_equal_chosen),
        cmocka_unit_test(test_exclusions_rebuild_keeps_choice),
        cmocka_unit_test(test_reach),
        cmocka_unit_test(test_tuned_choice),
    };
    return cmocka_run_group_tests(tests, fk_test_context_setup, fk_test_context_teardown);
}
