/*
 * The tools library beside the force library: read a particle file (TIPSY, or text "x y z m"),
 * compute the gravitational accelerations on the default device and write them atomically.
 *
 *   cc read_particles.c $(pkg-config --cflags --libs forcekit-tools) -lm -o read_particles
 *   ./read_particles galaxy_20K.bin accelerations.txt
 */
#include <stdio.h>
#include <stdlib.h>

#include <forcekit/forcekit.h>
#include <forcekit/tools.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s PARTICLES OUT\n", argv[0]);
        return 2;
    }
    char message[1024] = "";
    fkt_particle_set set = {0};
    /* FKT_FORMAT_AUTO: TIPSY for names ending .bin or .tipsy, text otherwise. */
    fk_status status = fkt_io_read_particles(argv[1], FKT_FORMAT_AUTO, FKT_LAYOUT_XYZM, &set,
                                             message, sizeof message);
    if (status != FK_OK) {
        fprintf(stderr, "read_particles: %s\n", message);
        return 2;
    }
    fk_context *context = NULL;
    fk_eval *eval = NULL;
    const fk_physics physics = {.eps = 0.01};
    fk_eval_config config = FK_CONFIG_INIT(fk_eval_config);
    config.kernel = "ga";
    config.physics = &physics;
    const fk_particles particles = fkt_particle_set_view(&set);
    double *acceleration = malloc(3 * set.count * sizeof *acceleration);
    status = acceleration ? fk_context_create(NULL, &context) : FK_ERR_HOST_MEMORY;
    if (status == FK_OK)
        status = fk_eval_create(context, &config, &eval);
    if (status == FK_OK)
        status = fk_eval_set_particles(eval, &particles);
    if (status == FK_OK)
        status = fk_eval_compute(eval, NULL);
    if (status == FK_OK)
        status = fk_eval_read_forces(eval, acceleration);
    if (status != FK_OK)
        fprintf(stderr, "read_particles: %s: %s\n", fk_status_string(status),
                context ? fk_context_last_error(context) : "");
    else if ((status = fkt_io_write_forces(argv[2], set.count, 3, acceleration, NULL, message,
                                           sizeof message)) != FK_OK)
        fprintf(stderr, "read_particles: %s\n", message);
    else
        printf("%zu particles from %s: accelerations in %s\n", set.count, argv[1], argv[2]);
    fk_eval_destroy(eval);
    fk_context_destroy(context);
    free(acceleration);
    fkt_particle_set_free(&set);
    return status == FK_OK ? 0 : 1;
}
