/* fk__find_coincident (src/core/laws/forcelaw.c): the check of fk_eval_set_particles that no two
 * particles share a single-precision position (modulo a periodic box), against a brute-force
 * comparison of every pair on fresh random inputs with planted coincidences. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/internal.h"
#include "test_support.h"

#define N 1500

/* The smallest (lexicographic) shared position's two smallest indices, by every pair. */
static void brute_force(const float *body, const double *box, size_t *first, size_t *second)
{
    *first = *second = SIZE_MAX;
    double best[3] = {0, 0, 0};
    for (size_t i = 0; i < N; ++i)
        for (size_t j = i + 1; j < N; ++j) {
            double a[3], b[3];
            int same = 1;
            for (int k = 0; k < 3; ++k) {
                a[k] = body[4 * i + (size_t)k], b[k] = body[4 * j + (size_t)k];
                if (box) {
                    const double side = (double)(float)box[k];
                    a[k] -= side * floor(a[k] / side);
                    b[k] -= side * floor(b[k] / side);
                    if (a[k] >= side)
                        a[k] -= side;
                    if (b[k] >= side)
                        b[k] -= side;
                    a[k] = (double)(float)a[k], b[k] = (double)(float)b[k];
                }
                same &= a[k] == b[k];
            }
            if (!same)
                continue;
            int before = 0, after = 0;
            for (int k = 0; k < 3 && !before && !after; ++k)
                before = a[k]<best[k], after = a[k]> best[k];
            if (*first == SIZE_MAX || before ||
                (!after && (i < *first || (i == *first && j < *second)))) {
                memcpy(best, a, sizeof best);
                *first = i, *second = j;
            }
        }
}

static void check(int planted, int periodic, fk_test_rng *rng)
{
    static float body[4 * N];
    const double box[3] = {10.0, 10.0, 10.0};
    for (size_t i = 0; i < N; ++i) {
        for (int k = 0; k < 3; ++k) /* a coarse grid: chance coincidences too */
            body[4 * i + (size_t)k] = (float)(floor(fk_test_rng_uniform(rng) * 4096) / 409.6);
        body[4 * i + 3] = 1.0f;
    }
    for (int p = 0; p < planted; ++p) {
        const size_t i = (size_t)(fk_test_rng_uniform(rng) * N),
                     j = (size_t)(fk_test_rng_uniform(rng) * N);
        for (int k = 0; k < 3; ++k) /* in a box, j sits one image away */
            body[4 * j + (size_t)k] =
                body[4 * i + (size_t)k] + (periodic && k == p % 3 ? 10.0f : 0.0f);
    }
    size_t first = 0, second = 0, want_first = 0, want_second = 0;
    assert_int_equal(fk__find_coincident(body, 4, N, periodic ? box : NULL, &first, &second),
                     FK_OK);
    brute_force(body, periodic ? box : NULL, &want_first, &want_second);
    assert_true(first == want_first);
    assert_true(second == want_second);
}

static void test_against_every_pair(void **state)
{
    (void)state;
    fk_test_rng rng;
    fk_test_rng_init(&rng, fk_test_seed());
    for (int round = 0; round < 6; ++round)
        for (int planted = 0; planted <= 3; ++planted) {
            check(planted, 0, &rng);
            check(planted, 1, &rng);
        }
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_against_every_pair)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
