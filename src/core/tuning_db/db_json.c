/* The JSON form of the tuning database: an entry read (every field checked, a reason for each
 * refusal) and written, and a whole document read and checked for format and version. Separate
 * from loading and storing, which decide what to do with a bad entry or file; here is only what
 * the file format is (docs/tuning.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "core/programs/install_paths.h"
#include "core/tuning_db/db_private.h"

static int parse_unroll_name(const char *text, int *unroll_i, int *unroll_j)
{
    if (!text || strlen(text) != 3 || text[1] != 'x')
        return 0;
    int i = text[0] - '0', j = text[2] - '0';
    int valid_i = i == 1 || i == 2 || i == 4 || i == 8,
        valid_j = j == 1 || j == 2 || j == 4 || j == 8;
    if (!valid_i || !valid_j)
        return 0;
    *unroll_i = i;
    *unroll_j = j;
    return 1;
}

/* A level key: absent or null means "default". */
static int read_level(const cJSON *object, const char *key, char *out, size_t size)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
    if (!item || cJSON_IsNull(item)) {
        fk_copy_text(out, size, DEFAULT_LEVEL);
        return 1;
    }
    if (!cJSON_IsString(item) || !*item->valuestring || strlen(item->valuestring) >= size)
        return 0;
    fk_copy_text(out, size, item->valuestring);
    return 1;
}

static int read_positive_integer(const cJSON *object, const char *key, double limit, int required,
                                 double *value)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
    if (!item)
        return !required;
    if (!cJSON_IsNumber(item) || item->valuedouble < 0 || item->valuedouble > limit ||
        item->valuedouble != floor(item->valuedouble))
        return 0;
    *value = item->valuedouble;
    return 1;
}

/* One entry; returns 0 with *reason saying why when it is malformed. */
static int parse_entry_reason(const cJSON *object, fk_tuning_entry *entry, const char **reason,
                              char *shape, size_t shape_size)
{
    memset(entry, 0, sizeof *entry);
    *reason = "not an object";
    if (!cJSON_IsObject(object))
        return 0;
    *reason = "bad type, vendor, architecture or device";
    if (!read_level(object, "type", entry->type, sizeof entry->type) ||
        !read_level(object, "vendor", entry->vendor, sizeof entry->vendor) ||
        !read_level(object, "architecture", entry->architecture, sizeof entry->architecture) ||
        !read_level(object, "device", entry->device, sizeof entry->device))
        return 0;
    const cJSON *kernel = cJSON_GetObjectItemCaseSensitive(object, "kernel");
    const cJSON *accum = cJSON_GetObjectItemCaseSensitive(object, "accum");
    *reason = "kernel and accum must be names";
    if (!cJSON_IsString(kernel) || !cJSON_IsString(accum) ||
        strlen(kernel->valuestring) >= sizeof entry->kernel ||
        strlen(accum->valuestring) >= sizeof entry->accum)
        return 0;
    fk_copy_text(entry->kernel, sizeof entry->kernel, kernel->valuestring);
    fk_copy_text(entry->accum, sizeof entry->accum, accum->valuestring);
    double n = 0, group = 0, splits = 0;
    *reason = "n must be a positive integer";
    if (!read_positive_integer(object, "n", (double)(1u << 30), 1, &n) || n < 1)
        return 0;
    *reason = "unroll must be IxJ with I, J in 1, 2, 4, 8";
    const cJSON *unroll = cJSON_GetObjectItemCaseSensitive(object, "unroll");
    if (!cJSON_IsString(unroll) ||
        !parse_unroll_name(unroll->valuestring, &entry->unroll_i, &entry->unroll_j))
        return 0;
    *reason = "work_group_size must be an integer from 1 to 4096";
    if (!read_positive_integer(object, "work_group_size", 4096, 1, &group) || group < 1)
        return 0;
    *reason = "j_splits must be a non-negative integer (0: automatic)";
    if (!read_positive_integer(object, "j_splits", 1 << 20, 0, &splits))
        return 0;
    const cJSON *tiling = cJSON_GetObjectItemCaseSensitive(object, "local_tiling");
    *reason = "local_tiling must be true or false";
    if (tiling && !cJSON_IsBool(tiling))
        return 0;
    entry->n = (size_t)n;
    entry->work_group_size = (int)group;
    entry->j_splits = (int)splits;
    entry->local_tiling = tiling ? cJSON_IsTrue(tiling) : 1;
    /* The shape rules every variant meets (variant.c): an entry the API would refuse, such as
     * work-group size 5 with unroll 4x4 and tiling, is ignored rather than run. */
    if (!fk__variant_check(entry->unroll_i, entry->unroll_j, entry->work_group_size,
                           entry->local_tiling ? 1 : -1, shape, shape_size)) {
        *reason = shape;
        return 0;
    }
    /* "lanes": written by the lane-aware tuner; absent in older entries (-1, see tune.h). */
    const cJSON *lanes = cJSON_GetObjectItemCaseSensitive(object, "lanes");
    *reason = "lanes must be 0, 8 or 16";
    if (lanes && (!cJSON_IsNumber(lanes) ||
                  (lanes->valuedouble != 0 && lanes->valuedouble != 8 && lanes->valuedouble != 16)))
        return 0;
    entry->lanes = lanes ? (int)lanes->valuedouble : -1;
    /* "algorithm": the pair loop; absent in entries of all-pairs and in older databases. */
    const cJSON *algorithm = cJSON_GetObjectItemCaseSensitive(object, "algorithm");
    *reason = "algorithm must be all-pairs, symmetric, cells or neighbors";
    fk_algorithm loop = FK_ALGORITHM_ALL_PAIRS;
    if (algorithm &&
        (!cJSON_IsString(algorithm) || fk_algorithm_find(algorithm->valuestring, &loop) != FK_OK ||
         loop == FK_ALGORITHM_AUTO))
        return 0;
    entry->algorithm = (int)loop;
    /* "seconds_per_eval": what the tuner measured (0 when absent or not a positive number);
     * fk_eval_create's FK_ALGORITHM_AUTO compares the loops by it (src/core/eval/choose.c). */
    const cJSON *seconds = cJSON_GetObjectItemCaseSensitive(object, "seconds_per_eval");
    entry->seconds_per_eval =
        cJSON_IsNumber(seconds) && seconds->valuedouble > 0 && isfinite(seconds->valuedouble)
            ? seconds->valuedouble
            : 0.0;
    return 1;
}

int fk__tuning_parse_entry(const cJSON *object, fk_tuning_entry *entry, char *why, size_t why_size)
{
    const char *reason = "";
    char shape[256];
    int valid = parse_entry_reason(object, entry, &reason, shape, sizeof shape);
    if (!valid && why && why_size)
        snprintf(why, why_size, "%s", reason);
    return valid;
}

int fk__tuning_read_document(const char *path, int built_in, cJSON **document, char *reason,
                             size_t reason_size)
{
    *document = NULL;
    size_t size = 0;
    char *text = built_in ? fk__embedded_read("tuning/shipped.json", &size)
                          : fk__tuning_read_bounded(path, &size);
    if (!text) {
        if (errno == ENOENT)
            return 1;
        if (errno == EINVAL)
            snprintf(reason, reason_size, "not a regular file");
        else if (errno == EFBIG)
            snprintf(reason, reason_size, "input too large (over %zu MiB)", DB_MAX_BYTES >> 20);
        else
            snprintf(reason, reason_size, "cannot read it: %s", strerror(errno));
        return 0;
    }
    const char *error_at = NULL;
    /* The terminating NUL is part of the length so that cJSON can insist that nothing follows the
     * document; an embedded NUL would end it early, so that is checked too. */
    cJSON *parsed =
        strlen(text) == size ? cJSON_ParseWithLengthOpts(text, size + 1, &error_at, 1) : NULL;
    if (!parsed) {
        size_t offset = error_at && error_at >= text ? (size_t)(error_at - text) : 0;
        snprintf(reason, reason_size, "not valid JSON (near byte %zu)", offset);
        free(text);
        return 0;
    }
    free(text);
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(parsed, "version");
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(parsed, "entries");
    if (!cJSON_IsObject(parsed) || !cJSON_IsArray(entries)) {
        snprintf(reason, reason_size, "not a tuning database (an object with an \"entries\" list)");
        cJSON_Delete(parsed);
        return 0;
    }
    if (version && (!cJSON_IsNumber(version) || version->valuedouble != DB_VERSION)) {
        snprintf(reason, reason_size, "database version %g; this forcekit reads version %d",
                 cJSON_IsNumber(version) ? version->valuedouble : -1.0, DB_VERSION);
        cJSON_Delete(parsed);
        return 0;
    }
    *document = parsed;
    return 1;
}

cJSON *fk__tuning_entry_to_json(const fk_tuning_entry *e)
{
    cJSON *object = cJSON_CreateObject();
    char unroll[16];
    snprintf(unroll, sizeof unroll, "%dx%d", e->unroll_i, e->unroll_j);
    cJSON_AddStringToObject(object, "type", e->type);
    cJSON_AddStringToObject(object, "vendor", e->vendor);
    cJSON_AddStringToObject(object, "architecture", e->architecture);
    cJSON_AddStringToObject(object, "device", e->device);
    cJSON_AddStringToObject(object, "kernel", e->kernel);
    cJSON_AddStringToObject(object, "accum", e->accum);
    cJSON_AddNumberToObject(object, "n", (double)e->n);
    cJSON_AddStringToObject(object, "unroll", unroll);
    cJSON_AddNumberToObject(object, "work_group_size", e->work_group_size);
    cJSON_AddBoolToObject(object, "local_tiling", e->local_tiling != 0);
    cJSON_AddNumberToObject(object, "j_splits", e->j_splits);
    if (e->lanes >= 0)
        cJSON_AddNumberToObject(object, "lanes", e->lanes);
    if (e->algorithm != FK_ALGORITHM_ALL_PAIRS) /* absent: all-pairs, as in older databases */
        cJSON_AddStringToObject(object, "algorithm", fk_algorithm_name((fk_algorithm)e->algorithm));
    return object;
}
