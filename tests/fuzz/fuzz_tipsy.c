/* TIPSY snapshots (src/tools/io.c), both byte orders, with and without velocities. */
#include <math.h>

#include "fuzz_support.h"
#include "forcekit/tools.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fk_fuzz_write("snapshot.bin", data, size);
    static const fkt_layout layouts[] = {FKT_LAYOUT_XYZM, FKT_LAYOUT_XYZM_VEL};
    for (size_t k = 0; k < 2; ++k) {
        fkt_particle_set set;
        char error[512] = "";
        fk_status status = fkt_io_read_tipsy(path, layouts[k], &set, error, sizeof error);
        if (status == FK_OK) {
            for (size_t i = 0; i < set.count; ++i)
                if (!isfinite(set.mass[i]))
                    __builtin_trap();
        } else if (error[0] == '\0' || set.position) {
            __builtin_trap();
        }
        fkt_particle_set_free(&set);
    }
    return 0;
}
