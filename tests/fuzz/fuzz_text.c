/* Text particle files (src/tools/io.c) in every column layout: any bytes give FK_OK with finite
 * values or an error with a message; never a crash, a leak or unbounded memory. */
#include <math.h>
#include <string.h>

#include "fuzz_support.h"
#include "forcekit/tools.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fk_fuzz_write("particles.txt", data, size);
    static const fkt_layout layouts[] = {FKT_LAYOUT_XYZM, FKT_LAYOUT_XYZM_VEL, FKT_LAYOUT_XYZQ_TYPE,
                                         FKT_LAYOUT_XYZ_TYPE};
    for (size_t k = 0; k < sizeof layouts / sizeof layouts[0]; ++k) {
        fkt_particle_set set;
        char error[512] = "";
        fk_status status = fkt_io_read_text(path, layouts[k], &set, error, sizeof error);
        if (status == FK_OK) {
            for (size_t i = 0; i < 3 * set.count; ++i)
                if (!isfinite(set.position[i]))
                    __builtin_trap(); /* the reader promises finite numbers */
        } else if (error[0] == '\0' || set.position) {
            __builtin_trap(); /* a failure says why and leaves the set empty */
        }
        fkt_particle_set_free(&set);
    }
    return 0;
}
