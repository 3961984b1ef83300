/*
 * Embedding forcekit: gravitational accelerations of a small random cluster on the default device,
 * checked against the library's double-precision host reference.
 *
 *   cc embed.c $(pkg-config --cflags --libs forcekit) -lm -o embed   # against an installed
 * forcekit
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <forcekit/forcekit.h>

int main(void)
{
    enum { N = 1000 };
    static double position[3 * N], mass[N], force[3 * N], reference[3 * N];
    unsigned long long state = 12345;
    for (int i = 0; i < N; ++i) {
        for (int k = 0; k < 3; ++k) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            position[3 * i + k] = (double)(float)((double)(state >> 11) / 9007199254740992.0 - 0.5);
        }
        mass[i] = 1.0 / N;
    }

    fk_context *context = NULL;
    fk_status status = fk_context_create(NULL, &context); /* default device: first GPU, else CPU */
    if (status != FK_OK) {
        fprintf(stderr, "forcekit: %s: %s\n", fk_status_string(status),
                fk_context_last_error(context));
        fk_context_destroy(context);
        return 1;
    }
    printf("device: %s\n", fk_context_device(context)->name);

    /* struct_size: a later library that has grown the struct reads only what this program has */
    fk_eval_config config = {
        .struct_size = sizeof(fk_eval_config), .kernel = "ga", .accum = "float", .eps = 0.01};
    fk_eval *eval = NULL;
    fk_particles particles = {.count = N, .position = position, .mass = mass};
    double seconds = 0;
    status = fk_eval_create(context, &config, &eval);
    if (status == FK_OK)
        status = fk_eval_set_particles(eval, &particles);
    if (status == FK_OK)
        status = fk_eval_compute(eval, &seconds);
    if (status == FK_OK)
        status = fk_eval_read_forces(eval, force);
    if (status != FK_OK) {
        fprintf(stderr, "forcekit: %s: %s\n", fk_status_string(status),
                fk_context_last_error(context));
        fk_eval_destroy(eval);
        fk_context_destroy(context);
        return 1;
    }

    fk_physics physics = {.eps = config.eps};
    fk_reference_forces("ga", &particles, &physics, reference, NULL);
    double worst = 0;
    for (int i = 0; i < N; ++i) {
        double diff = 0, norm = 0;
        for (int k = 0; k < 3; ++k) {
            diff += pow(force[3 * i + k] - reference[3 * i + k], 2);
            norm += pow(reference[3 * i + k], 2);
        }
        if (sqrt(diff / norm) > worst)
            worst = sqrt(diff / norm);
    }
    fk_variant variant;
    fk_eval_get_variant(eval, &variant);
    printf("ga, N = %d, variant %dx%d: %.3g s on the device, worst relative error %.2e\n", N,
           variant.unroll_i, variant.unroll_j, seconds, worst);
    fk_eval_destroy(eval);
    fk_context_destroy(context);
    return worst < 1e-4 ? 0 : 1;
}
