/* An entry's key (device levels, kernel, accumulator, n and pair loop): equality, and a hash set of
 * entry indices so that loading 10,000 entries finds duplicates in linear time. Separate because
 * loading and storing both decide "the same entry" by it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/tuning_db/db_private.h"

int fk__tuning_same_key(const fk_tuning_entry *a, const fk_tuning_entry *b)
{
    return strcmp(a->type, b->type) == 0 && strcmp(a->vendor, b->vendor) == 0 &&
           strcmp(a->architecture, b->architecture) == 0 && strcmp(a->device, b->device) == 0 &&
           strcmp(a->kernel, b->kernel) == 0 && strcmp(a->accum, b->accum) == 0 && a->n == b->n &&
           a->algorithm == b->algorithm;
}

static uint64_t hash_text(uint64_t hash, const char *text)
{
    for (; *text; ++text)
        hash = (hash ^ (unsigned char)*text) * 1099511628211ull; /* FNV-1a */
    return (hash ^ 0xff) * 1099511628211ull; /* a separator, so "ab"+"c" differs from "a"+"bc" */
}

static uint64_t hash_key(const fk_tuning_entry *e)
{
    uint64_t hash = 14695981039346656037ull;
    const char *parts[] = {e->type, e->vendor, e->architecture, e->device, e->kernel, e->accum};
    for (size_t k = 0; k < sizeof parts / sizeof parts[0]; ++k)
        hash = hash_text(hash, parts[k]);
    hash = (hash ^ (uint64_t)e->n) * 1099511628211ull;
    return (hash ^ (uint64_t)e->algorithm) * 1099511628211ull;
}

int fk__tuning_key_set_init(fk_tuning_key_set *set, size_t count)
{
    size_t capacity = 16;
    while (capacity < 2 * count + 1 && capacity < ((size_t)1 << 40))
        capacity *= 2;
    set->slots = calloc(capacity, sizeof *set->slots);
    set->mask = capacity - 1;
    return set->slots != NULL;
}

int fk__tuning_key_set_insert(fk_tuning_key_set *set, const fk_tuning_entry *entries, size_t index)
{
    for (size_t slot = (size_t)hash_key(&entries[index]) & set->mask;;
         slot = (slot + 1) & set->mask) {
        if (set->slots[slot] == 0) {
            set->slots[slot] = index + 1;
            return 1;
        }
        if (fk__tuning_same_key(&entries[set->slots[slot] - 1], &entries[index]))
            return 0;
    }
}
