/* Writing entries into a database file: read, replace entries of the same key, write atomically,
 * all under one lock so that concurrent tune runs keep each other's entries; a file that does not
 * parse is moved aside, never lost. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/files.h"
#include "common/text.h"
#include "core/tuning_db/db_private.h"

/* Moves a database that does not parse aside, to path.bad, or path.bad.1, ... when that exists:
 * a backup is never overwritten. link then unlink, so an existing name is never replaced. */
static void move_aside(const char *path, const char *reason, char **warnings)
{
    char *aside = NULL;
    for (int attempt = 0; attempt < 100; ++attempt) {
        size_t size = strlen(path) + 16;
        free(aside);
        aside = malloc(size);
        if (!aside)
            break;
        if (attempt == 0)
            snprintf(aside, size, "%s.bad", path);
        else
            snprintf(aside, size, "%s.bad.%d", path, attempt);
        if (link(path, aside) == 0) {
            unlink(path);
            fk__warn(warnings, "tuning database %s was not readable (%s); moved to %s", path,
                     reason, aside);
            free(aside);
            return;
        }
        if (errno != EEXIST)
            break;
    }
    free(aside);
    fk__warn(warnings, "tuning database %s was not readable (%s); replaced", path, reason);
}

fk_status fk__tuning_db_store(const char *path, const fk_tuning_entry *entries,
                              const char *const *extra_json, size_t count, char **warnings,
                              char *message, size_t message_size)
{
    message[0] = '\0';
    /* Only a regular file (or none) is a database to rewrite: a directory or a device named by
     * FORCEKIT_TUNING_DB is refused, never moved aside or replaced. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(message, message_size,
                 "cannot write the tuning database %s: not a regular file (FORCEKIT_TUNING_DB)",
                 path);
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (fk__tuning_make_parent_directories(path) != 0) {
        snprintf(message, message_size, "cannot write the tuning database %s: %s", path,
                 strerror(errno));
        return FK_ERR_INVALID_ARGUMENT;
    }
    /* Read, modify and write under one lock, so that concurrent tune runs keep each other's
     * entries. Without a lock (a read-only directory) the write below fails anyway. */
    int lock = fk__lock_acquire(path);
    cJSON *document = NULL;
    char reason[256];
    if (!fk__tuning_read_document(path, 0, &document, reason, sizeof reason)) {
        /* Keep what the user had: a hand-edited file with a typo is still worth fixing by hand. */
        move_aside(path, reason, warnings);
        document = NULL;
    }
    if (!document) {
        document = cJSON_CreateObject();
        cJSON_AddStringToObject(document, "format", DB_FORMAT);
        cJSON_AddNumberToObject(document, "version", DB_VERSION);
        cJSON_AddArrayToObject(document, "entries");
    }
    cJSON *list = cJSON_GetObjectItemCaseSensitive(document, "entries");
    for (size_t k = 0; k < count; ++k) {
        /* Replace an entry with the same key; entries this forcekit cannot read are kept. */
        for (int index = cJSON_GetArraySize(list) - 1; index >= 0; --index) {
            fk_tuning_entry old;
            if (fk__tuning_parse_entry(cJSON_GetArrayItem(list, index), &old, NULL, 0) &&
                fk__tuning_same_key(&old, &entries[k]))
                cJSON_DeleteItemFromArray(list, index);
        }
        cJSON *object = fk__tuning_entry_to_json(&entries[k]);
        cJSON *extra = extra_json && extra_json[k] ? cJSON_Parse(extra_json[k]) : NULL;
        cJSON *item = NULL;
        cJSON_ArrayForEach(item, extra)
        {
            if (!cJSON_GetObjectItemCaseSensitive(object, item->string))
                cJSON_AddItemToObject(object, item->string, cJSON_Duplicate(item, 1));
        }
        cJSON_Delete(extra);
        cJSON_AddItemToArray(list, object);
    }
    char *text = cJSON_Print(document);
    cJSON_Delete(document);
    if (!text) {
        fk__lock_release(lock);
        return FK_ERR_HOST_MEMORY;
    }
    char *with_newline = fk_concatenate(text, "\n");
    cJSON_free(text);
    if (!with_newline) {
        fk__lock_release(lock);
        return FK_ERR_HOST_MEMORY;
    }
    char error[512];
    fk_status written = fk__tuning_write_text(path, with_newline, error, sizeof error);
    fk__lock_release(lock);
    free(with_newline);
    if (written != FK_OK) {
        snprintf(message, message_size, "cannot write the tuning database: %s", error);
        return written == FK_ERR_HOST_MEMORY ? written : FK_ERR_IO;
    }
    return FK_OK;
}
