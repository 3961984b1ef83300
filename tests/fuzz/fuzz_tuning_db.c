/* Tuning databases (src/core/tuning_db/db_load.c, db_json.c, db_lookup.c): loading as user and as
 * shipped database, then lookups. A corrupt database is a warning, never a failure. */
#include <stdlib.h>

#include "fuzz_support.h"
#include "core/tune/tune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fk_fuzz_write("tuning.json", data, size);
    const fk_tuning_identity identity = {
        .type = "gpu", .vendor = "NVIDIA", .architecture = "SM9.0", .device = "NVIDIA H200"};
    fk_tuning_db *db = NULL;
    char *warnings = NULL;
    if (fk__tuning_db_load(&identity, path, path, &db, &warnings) != FK_OK)
        __builtin_trap(); /* only memory can make loading fail */
    static const size_t counts[] = {0, 1, 1000, 100000, (size_t)1 << 30};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; ++k) {
        const fk_tuning_entry *entry = fk__tuning_lookup(db, "ga", "float", counts[k]);
        char reason[256];
        /* Every entry the lookup can return meets the variant rules. */
        if (entry && !fk__variant_check(entry->unroll_i, entry->unroll_j, entry->work_group_size,
                                        entry->local_tiling ? 1 : -1, reason, sizeof reason))
            __builtin_trap();
    }
    fk__tuning_db_free(db);
    free(warnings);
    return 0;
}
