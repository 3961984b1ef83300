/* The tuner's resume file (the user database's path + ".resume"): the points measured so far by
 * each run, keyed by device, kernel, accumulator and bucket, so that an interrupted `forcekit tune`
 * continues where it stopped. Separate from the database: another format, read only by tune.c. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/files.h"
#include "common/text.h"
#include "core/tuning_db/db_private.h"

char *fk__tuning_resume_path(const char *database_path)
{
    return database_path ? fk_concatenate(database_path, ".resume") : NULL;
}

void fk__tuning_resume_key(const fk_tuning_identity *identity, const char *kernel,
                           const char *accum, size_t bucket, char *key, size_t size)
{
    snprintf(key, size, "%s|%s|%s|%s|%s|%s|%zu", identity->type, identity->vendor,
             identity->architecture, identity->device, kernel, accum, bucket);
}

fk_status fk__tuning_resume_save(const char *path, const char *key, const cJSON *points,
                                 char *message, size_t message_size)
{
    message[0] = '\0';
    int lock = fk__lock_acquire(path);
    size_t size = 0;
    char *text = fk__tuning_read_bounded(path, &size);
    cJSON *document = text ? cJSON_ParseWithLength(text, size) : NULL;
    free(text);
    cJSON *runs = cJSON_GetObjectItemCaseSensitive(document, "runs");
    if (!cJSON_IsObject(document) || !cJSON_IsObject(runs)) {
        /* Absent or not a resume file: start one (load_resume warned about the latter). */
        cJSON_Delete(document);
        document = cJSON_CreateObject();
        cJSON_AddStringToObject(document, "format", "forcekit-tuning-resume");
        cJSON_AddNumberToObject(document, "version", 1);
        runs = cJSON_AddObjectToObject(document, "runs");
    }
    /* Only this run's points change: other runs' (concurrent tune runs) are kept as found. */
    cJSON_DeleteItemFromObjectCaseSensitive(runs, key);
    if (points && cJSON_GetArraySize(points) > 0)
        cJSON_AddItemToObject(runs, key, cJSON_Duplicate(points, 1));
    fk_status status = FK_OK;
    if (cJSON_GetArraySize(runs) == 0) {
        unlink(path);
    } else {
        char *printed = cJSON_PrintUnformatted(document);
        if (!printed) {
            status = FK_ERR_HOST_MEMORY;
        } else {
            status = fk__tuning_write_text(path, printed, message, message_size);
            cJSON_free(printed);
        }
    }
    cJSON_Delete(document);
    fk__lock_release(lock);
    return status;
}
