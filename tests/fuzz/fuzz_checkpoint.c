/* simulate checkpoints (src/simulate.c): the header's counts must never drive an allocation
 * beyond what the file holds (the audit's 71-byte file asked for 24.7 GB). */
#include "fuzz_support.h"
#include "simulate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fk_fuzz_write("state.checkpoint", data, size);
    fkt_sim_checkpoint checkpoint;
    char error[512] = "";
    if (fkt_sim_checkpoint_read(path, &checkpoint, error, sizeof error) == FK_OK) {
        if (checkpoint.n == 0 || !checkpoint.position)
            __builtin_trap();
        fkt_sim_checkpoint_free(&checkpoint);
    } else if (error[0] == '\0') {
        __builtin_trap();
    }
    return 0;
}
