/* Loading a device's tuning databases: the user's entries first, then the shipped ones whose key
 * the user has not taken; a corrupt file or entry is a warning, never a failure. */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "common/text.h"
#include "core/programs/install_paths.h"
#include "core/tuning_db/db_private.h"

/* Appends the valid entries of one file to db; user entries replace shipped ones with the same
 * key (the user file is loaded first, so a shipped duplicate is simply skipped). */
static fk_status load_file(fk_tuning_db *db, const char *path, fk_variant_source origin,
                           char **warnings)
{
    if (!path)
        return FK_OK;
    cJSON *document = NULL;
    char reason[256];
    const char *which = origin == FK_VARIANT_USER_DB ? "user" : "shipped";
    /* fk__tuning_shipped_path's last resort: the copy built into the library */
    const int built_in = origin == FK_VARIANT_SHIPPED_DB && strcmp(path, FK__BUILT_IN) == 0;
    if (!fk__tuning_read_document(path, built_in, &document, reason, sizeof reason)) {
        fk__warn(warnings, "tuning database %s (%s) ignored: %s", path, which, reason);
        return FK_OK;
    }
    if (!document)
        return FK_OK;
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(document, "entries");
    size_t count = (size_t)cJSON_GetArraySize(entries);
    fk_tuning_entry *grown = realloc(db->entries, (db->count + count + 1) * sizeof *grown);
    if (!grown) {
        cJSON_Delete(document);
        return FK_ERR_HOST_MEMORY;
    }
    db->entries = grown;
    /* Duplicates are found through a hash set of the keys loaded so far: a linear scan per entry
     * made 10,000 entries take 14 s at every start-up. */
    fk_tuning_key_set seen;
    if (!fk__tuning_key_set_init(&seen, db->count + count)) {
        cJSON_Delete(document);
        return FK_ERR_HOST_MEMORY;
    }
    for (size_t k = 0; k < db->count; ++k)
        fk__tuning_key_set_insert(&seen, db->entries, k);
    size_t index = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, entries)
    {
        fk_tuning_entry entry;
        char why[320];
        if (!fk__tuning_parse_entry(item, &entry, why, sizeof why)) {
            fk__warn(warnings, "tuning database %s (%s): entry %zu ignored: %s", path, which, index,
                     why);
        } else {
            entry.origin = origin;
            db->entries[db->count] = entry;
            if (fk__tuning_key_set_insert(&seen, db->entries, db->count))
                db->count++;
        }
        ++index;
    }
    free(seen.slots);
    cJSON_Delete(document);
    return FK_OK;
}

fk_status fk__tuning_db_load(const fk_tuning_identity *identity, const char *user_path,
                             const char *shipped_path, fk_tuning_db **out, char **warnings)
{
    *out = NULL;
    fk_tuning_db *db = calloc(1, sizeof *db);
    if (!db)
        return FK_ERR_HOST_MEMORY;
    db->identity = *identity;
    db->user_path = user_path ? fk_copy_string(user_path) : NULL;
    db->shipped_path = shipped_path ? fk_copy_string(shipped_path) : NULL;
    fk_status status = FK_OK;
    if ((user_path && !db->user_path) || (shipped_path && !db->shipped_path))
        status = FK_ERR_HOST_MEMORY;
    if (status == FK_OK)
        status = load_file(db, db->user_path, FK_VARIANT_USER_DB, warnings);
    if (status == FK_OK)
        status = load_file(db, db->shipped_path, FK_VARIANT_SHIPPED_DB, warnings);
    if (status != FK_OK) {
        fk__tuning_db_free(db);
        return status;
    }
    *out = db;
    return FK_OK;
}

void fk__tuning_db_free(fk_tuning_db *db)
{
    if (!db)
        return;
    free(db->entries);
    free(db->user_path);
    free(db->shipped_path);
    free(db);
}

void fk__tuning_context_load(fk_context *context)
{
    fk_tuning_identity identity;
    fk__tuning_identity_query(context->platform, context->device, &context->info, &identity);
    char *user = fk__tuning_user_path(NULL);
    char *shipped = fk__tuning_shipped_path();
    fk_tuning_db *db = NULL;
    /* Without memory for the database, automatic choices fall back to the built-in defaults. */
    if (fk__tuning_db_load(&identity, user, shipped, &db, &context->warnings) == FK_OK) {
        fk__tuning_db_free(context->tuning);
        context->tuning = db;
    }
    free(user);
    free(shipped);
}
