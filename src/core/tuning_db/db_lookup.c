/* Choosing an entry for a device, kernel, accumulator and N: CLBlast's order of levels (vendor,
 * architecture, device name, each falling back to "default"), then the nearest N bucket. Separate
 * because it is the one part every evaluation runs; it reads only the loaded entries. */
#include <math.h>
#include <string.h>

#include "core/tuning_db/db_private.h"

size_t fk_tune_bucket_at(size_t index)
{
    return index < FK_TUNE_BUCKET_COUNT ? (size_t)1024 << (2 * index) : 0;
}

size_t fk_tune_bucket_for(size_t n)
{
    if (n == 0)
        return fk_tune_bucket_at(FK_TUNE_BUCKET_COUNT - 1);
    size_t best = fk_tune_bucket_at(0);
    double best_distance = HUGE_VAL;
    for (size_t k = 0; k < FK_TUNE_BUCKET_COUNT; ++k) {
        double distance = fabs(log((double)n) - log((double)fk_tune_bucket_at(k)));
        if (distance < best_distance) {
            best_distance = distance;
            best = fk_tune_bucket_at(k);
        }
    }
    return best;
}

/* 2: the entry names this level's value, 1: the entry's level is "default", 0: no match. */
static int level_match(const char *entry_value, const char *device_value)
{
    if (strcmp(entry_value, DEFAULT_LEVEL) == 0)
        return 1;
    return device_value && *device_value && strcmp(entry_value, device_value) == 0 ? 2 : 0;
}

const fk_tuning_entry *fk__tuning_lookup(const fk_tuning_db *db, const char *kernel,
                                         const char *accum, size_t n)
{
    return fk__tuning_lookup_loop(db, FK_ALGORITHM_ALL_PAIRS, kernel, accum, n);
}

const fk_tuning_entry *fk__tuning_lookup_loop(const fk_tuning_db *db, int algorithm,
                                              const char *kernel, const char *accum, size_t n)
{
    if (!db)
        return NULL;
    const fk_tuning_identity *id = &db->identity;
    const size_t bucket = fk_tune_bucket_for(n);
    const fk_tuning_entry *best = NULL;
    int best_specificity = -1;
    double best_distance = HUGE_VAL;
    for (size_t i = 0; i < db->count; ++i) {
        const fk_tuning_entry *e = &db->entries[i];
        if (e->algorithm != algorithm || strcmp(e->kernel, kernel) != 0 ||
            strcmp(e->accum, accum) != 0)
            continue;
        int type = level_match(e->type, id->type);
        int vendor = level_match(e->vendor, id->vendor);
        int architecture = level_match(e->architecture, id->architecture);
        int device = level_match(e->device, id->device);
        if (!type || !vendor || !architecture || !device)
            continue;
        /* CLBlast's order: the vendor decides first, then the architecture, then the device. */
        int specificity = (vendor - 1) * 8 + (architecture - 1) * 4 + (device - 1) * 2 + (type - 1);
        /* Nearest bucket on a log scale; without a known N, the largest N wins; between two equally
         * near buckets, the larger (a variant tuned for more work degrades more gently). */
        double distance =
            n ? fabs(log((double)e->n) - log((double)bucket)) - 1e-9 * log((double)e->n)
              : -(double)e->n;
        if (specificity > best_specificity ||
            (specificity == best_specificity && distance < best_distance)) {
            best = e;
            best_specificity = specificity;
            best_distance = distance;
        }
    }
    return best;
}
