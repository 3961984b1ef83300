/* The tuning database: device keys, files, lookup and update (docs/tuning.md).
 *
 * A database is one JSON document {"format": "forcekit-tuning", "version": 1, "entries": [...]};
 * each entry names a device at three levels (vendor, architecture, device name, each possibly
 * "default", as in CLBlast's database) and a kernel, accumulator and N bucket, and holds the
 * variant. A flat list rather than a nested tree, so that `forcekit tune` can add one entry without
 * touching the others and a person can read a diff of the file. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/programs/install_paths.h"

#include <cJSON.h>

#include "common/files.h"
#include "common/text.h"
#include "core/tune/tune.h"

#define DB_FORMAT "forcekit-tuning"
#define DB_VERSION 1
#define DEFAULT_LEVEL "default"

/* NVIDIA's and AMD's vendor extensions (cl_ext.h names them, but older headers lack them). */
#define FK_CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define FK_CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001
#define FK_CL_DEVICE_BOARD_NAME_AMD 0x4038

/* ---- N buckets ------------------------------------------------------------------------------- */

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

/* ---- warnings -------------------------------------------------------------------------------- */

void fk__warn(char **warnings, const char *format, ...)
{
    char line[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    size_t old = *warnings ? strlen(*warnings) : 0;
    char *grown = realloc(*warnings, old + strlen(line) + 2);
    if (!grown)
        return; /* a warning lost to a lack of memory is not worth failing for */
    memcpy(grown + old, line, strlen(line));
    grown[old + strlen(line)] = '\n';
    grown[old + strlen(line) + 1] = '\0';
    *warnings = grown;
}

const char *fk_context_warnings(const fk_context *context)
{
    return context && context->warnings ? context->warnings : "";
}

/* ---- device keys ----------------------------------------------------------------------------- */

/* Copies at most size - 1 bytes: keys longer than their field are cut on purpose. */
static void copy_text(char *out, size_t size, const char *text)
{
    size_t length = text ? strlen(text) : 0;
    if (length >= size)
        length = size - 1;
    if (length)
        memcpy(out, text, length);
    out[length] = '\0';
}

void fk__tuning_normalise_name(const char *name, char *out, size_t size)
{
    static const char *const prefixes[] = {"pthread-", "cpu-"};
    if (!name)
        name = "";
    while (isspace((unsigned char)*name))
        ++name;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; ++i)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) {
            name += strlen(prefixes[i]);
            break;
        }
    size_t used = 0;
    int pending_space = 0;
    for (; *name && used + 1 < size; ++name) {
        if (isspace((unsigned char)*name)) {
            pending_space = used > 0;
            continue;
        }
        if (pending_space && used + 2 < size)
            out[used++] = ' ';
        pending_space = 0;
        out[used++] = *name;
    }
    out[used] = '\0';
}

static int contains_ignoring_case(const char *text, const char *word)
{
    for (size_t start = 0; text[start]; ++start)
        if (strncasecmp(text + start, word, strlen(word)) == 0)
            return 1;
    return 0;
}

const char *fk__tuning_normalise_vendor(const char *vendor)
{
    if (!vendor || !*vendor)
        return DEFAULT_LEVEL;
    if (contains_ignoring_case(vendor, "NVIDIA"))
        return "NVIDIA";
    if (contains_ignoring_case(vendor, "Advanced Micro Devices") ||
        strcasecmp(vendor, "AMD") == 0 || strcmp(vendor, "AuthenticAMD") == 0)
        return "AMD";
    if (contains_ignoring_case(vendor, "Intel"))
        return "Intel"; /* "Intel(R) Corporation", "GenuineIntel" */
    if (contains_ignoring_case(vendor, "Apple"))
        return "Apple";
    if (strcasecmp(vendor, "ARM") == 0 || contains_ignoring_case(vendor, "ARM Limited"))
        return "ARM";
    return vendor;
}

/* POCL names a CPU device "<LLVM cpu>-<model>" (after its driver prefix): the LLVM CPU
 * ("skylake-avx512", "znver3", "x86-64-v3") is the architecture. Its words are lower case, the
 * model's first word is not ("AMD EPYC", "Intel(R) Xeon(R)"). */
static void pocl_architecture(const char *normalised, char *out, size_t size)
{
    out[0] = '\0';
    size_t end = 0, cursor = 0;
    while (normalised[cursor]) {
        size_t word = cursor;
        while (normalised[cursor] && normalised[cursor] != '-')
            ++cursor;
        int lower = cursor > word;
        for (size_t k = word; k < cursor; ++k)
            if (!(islower((unsigned char)normalised[k]) || isdigit((unsigned char)normalised[k]) ||
                  normalised[k] == '_' || normalised[k] == '.'))
                lower = 0;
        if (!lower || !normalised[cursor])
            break; /* the model starts here, or there is no model after the CPU name */
        end = cursor;
        ++cursor;
    }
    if (end > 0 && end < size) {
        memcpy(out, normalised, end);
        out[end] = '\0';
    }
}

void fk__tuning_identity_from(const fk_tuning_device_facts *facts, fk_tuning_identity *identity)
{
    memset(identity, 0, sizeof *identity);
    copy_text(identity->type, sizeof identity->type, fk_device_type_name(facts->type));
    copy_text(identity->vendor, sizeof identity->vendor,
              fk__tuning_normalise_vendor(facts->vendor));
    fk__tuning_normalise_name(facts->name, identity->device, sizeof identity->device);
    const char *platform = facts->platform_name ? facts->platform_name : "";
    if (facts->nv_major >= 0) {
        snprintf(identity->architecture, sizeof identity->architecture, "SM%d.%d", facts->nv_major,
                 facts->nv_minor);
    } else if (strcmp(identity->vendor, "AMD") == 0 && facts->type == FK_DEVICE_GPU &&
               strncmp(identity->device, "gfx", 3) == 0) {
        /* AMD's platforms name the device by its gfx target, with feature flags after ':'
         * ("gfx90a:sramecc+:xnack-"); the board name is the device. */
        copy_text(identity->architecture, sizeof identity->architecture, identity->device);
        identity->architecture[strcspn(identity->architecture, ":")] = '\0';
        if (facts->board_name && *facts->board_name)
            fk__tuning_normalise_name(facts->board_name, identity->device, sizeof identity->device);
    } else if (contains_ignoring_case(platform, "Portable Computing Language") ||
               contains_ignoring_case(platform, "pocl")) {
        pocl_architecture(identity->device, identity->architecture, sizeof identity->architecture);
    }
}

static int has_extension(cl_device_id device, const char *name)
{
    size_t size = 0;
    if (clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, 0, NULL, &size) != CL_SUCCESS || size == 0)
        return 0;
    char *extensions = malloc(size + 1);
    if (!extensions)
        return 0;
    int found = 0;
    if (clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, size, extensions, NULL) == CL_SUCCESS) {
        extensions[size] = '\0';
        size_t length = strlen(name);
        for (char *at = strstr(extensions, name); at && !found; at = strstr(at + 1, name))
            found = (at == extensions || at[-1] == ' ') && (at[length] == ' ' || !at[length]);
    }
    free(extensions);
    return found;
}

void fk__tuning_identity_query(cl_platform_id platform, cl_device_id device,
                               const fk_device_info *info, fk_tuning_identity *identity)
{
    (void)platform;
    fk_tuning_device_facts facts = {.vendor = info->vendor,
                                    .name = info->name,
                                    .platform_name = info->platform_name,
                                    .type = info->type,
                                    .nv_major = -1,
                                    .nv_minor = -1};
    cl_uint major = 0, minor = 0;
    if (has_extension(device, "cl_nv_device_attribute_query") &&
        clGetDeviceInfo(device, FK_CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof major, &major,
                        NULL) == CL_SUCCESS &&
        clGetDeviceInfo(device, FK_CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, sizeof minor, &minor,
                        NULL) == CL_SUCCESS) {
        facts.nv_major = (int)major;
        facts.nv_minor = (int)minor;
    }
    char board[256] = "";
    if (has_extension(device, "cl_amd_device_attribute_query") &&
        clGetDeviceInfo(device, FK_CL_DEVICE_BOARD_NAME_AMD, sizeof board, board, NULL) ==
            CL_SUCCESS) {
        board[sizeof board - 1] = '\0';
        facts.board_name = board;
    }
    fk__tuning_identity_from(&facts, identity);
}

/* ---- paths ----------------------------------------------------------------------------------- */

static char *concatenate(const char *a, const char *b)
{
    size_t size = strlen(a) + strlen(b) + 1;
    char *joined = malloc(size);
    if (joined)
        snprintf(joined, size, "%s%s", a, b);
    return joined;
}

static int is_off(const char *value)
{
    return strcasecmp(value, "off") == 0;
}

char *fk__tuning_user_path(const char *configured)
{
    const char *chosen = configured && *configured ? configured : getenv("FORCEKIT_TUNING_DB");
    if (chosen && *chosen)
        return is_off(chosen) ? NULL : fk_copy_string(chosen);
    const char *xdg = getenv("XDG_DATA_HOME");
    if (xdg && *xdg)
        return concatenate(xdg, "/forcekit/tuning.json");
    const char *home = getenv("HOME");
    if (home && *home)
        return concatenate(home, "/.local/share/forcekit/tuning.json");
    return NULL;
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

char *fk__tuning_shipped_path(void)
{
    const char *chosen = getenv("FORCEKIT_SHIPPED_TUNING_DB");
    if (chosen && *chosen)
        return is_off(chosen) ? NULL : fk_copy_string(chosen);
    char *candidates[4];
    const size_t count =
        fk__data_candidates("tuning/shipped.json", FK_SOURCE_TUNING_DB, candidates, 4);
    char *found = NULL;
    for (size_t i = 0; i < count && !found; ++i)
        if (is_file(candidates[i])) {
            found = candidates[i];
            candidates[i] = NULL;
        }
    fk__data_candidates_free(candidates, count);
    if (!found && fk__embedded_has("tuning/shipped.json"))
        found = fk_copy_string(FK__BUILT_IN); /* read by load_file from the built-in copy */
    return found;
}

char *fk__tuning_resume_path(const char *database_path)
{
    return database_path ? concatenate(database_path, ".resume") : NULL;
}

void fk__tuning_resume_key(const fk_tuning_identity *identity, const char *kernel,
                           const char *accum, size_t bucket, char *key, size_t size)
{
    snprintf(key, size, "%s|%s|%s|%s|%s|%s|%zu", identity->type, identity->vendor,
             identity->architecture, identity->device, kernel, accum, bucket);
}

/* ---- files ----------------------------------------------------------------------------------- */

static int make_parent_directories(const char *path)
{
    char *copy = fk_copy_string(path);
    if (!copy)
        return -1;
    char *slash = strrchr(copy, '/');
    int status = 0;
    if (slash && slash != copy) {
        *slash = '\0';
        for (char *cursor = copy + 1; *cursor && status == 0; ++cursor) {
            if (*cursor != '/')
                continue;
            *cursor = '\0';
            struct stat st;
            if (mkdir(copy, 0755) != 0 && !(stat(copy, &st) == 0 && S_ISDIR(st.st_mode)))
                status = -1;
            *cursor = '/';
        }
        struct stat st;
        if (status == 0 && mkdir(copy, 0755) != 0 && !(stat(copy, &st) == 0 && S_ISDIR(st.st_mode)))
            status = -1;
    }
    free(copy);
    return status;
}

static int write_text_body(FILE *file, const void *context)
{
    return fputs((const char *)context, file) == EOF ? -1 : 0;
}

/* Through files.h: atomic for a regular file, in place for a device, never renaming over what is
 * not a regular file. */
static fk_status write_text(const char *path, const char *text, char *error, size_t error_size)
{
    return fk__write_file(path, write_text_body, text, error, error_size);
}

int fk__write_file_atomic(const char *path, const char *text)
{
    if (make_parent_directories(path) != 0)
        return -1;
    char error[256];
    return write_text(path, text, error, sizeof error) == FK_OK ? 0 : -1;
}

/* ---- parsing --------------------------------------------------------------------------------- */

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
        copy_text(out, size, DEFAULT_LEVEL);
        return 1;
    }
    if (!cJSON_IsString(item) || !*item->valuestring || strlen(item->valuestring) >= size)
        return 0;
    copy_text(out, size, item->valuestring);
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

/* One entry; returns 0 (and says why in why[why_size]) when it is malformed. */
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
    copy_text(entry->kernel, sizeof entry->kernel, kernel->valuestring);
    copy_text(entry->accum, sizeof entry->accum, accum->valuestring);
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

static int parse_entry(const cJSON *object, fk_tuning_entry *entry, char *why, size_t why_size)
{
    const char *reason = "";
    char shape[256];
    int valid = parse_entry_reason(object, entry, &reason, shape, sizeof shape);
    if (!valid && why && why_size)
        snprintf(why, why_size, "%s", reason);
    return valid;
}

/* A database is small (a few hundred bytes an entry): anything larger is not one, and an endless
 * file (FORCEKIT_TUNING_DB=/dev/zero) must not be read until memory runs out. */
#define DB_MAX_BYTES ((size_t)64 << 20)

/* Reads a regular file of at most DB_MAX_BYTES, NUL-terminated; NULL with errno (EINVAL: not a
 * regular file, EFBIG: too large). */
static char *read_bounded(const char *path, size_t *size)
{
    size_t length = 0;
    int fd = fk__open_regular(path, &length);
    if (fd < 0)
        return NULL;
    if (length > DB_MAX_BYTES) {
        close(fd);
        errno = EFBIG;
        return NULL;
    }
    char *text = malloc(length + 1);
    size_t used = 0;
    int saved = ENOMEM;
    while (text && used < length) {
        ssize_t got = read(fd, text + used, length - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            saved = got < 0 ? errno : EIO; /* shrank while being read */
            free(text);
            text = NULL;
            break;
        }
        used += (size_t)got;
    }
    close(fd);
    if (!text) {
        errno = saved;
        return NULL;
    }
    text[used] = '\0';
    *size = used;
    return text;
}

/* Reads a database; *document is NULL for a missing file. Returns 0 and fills reason when the file
 * exists but is not a database. */
/* built_in: the shipped database's copy compiled into the library (FK__BUILT_IN), not a file. */
static int read_document(const char *path, int built_in, cJSON **document, char *reason,
                         size_t reason_size)
{
    *document = NULL;
    size_t size = 0;
    char *text =
        built_in ? fk__embedded_read("tuning/shipped.json", &size) : read_bounded(path, &size);
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

static int same_key(const fk_tuning_entry *a, const fk_tuning_entry *b)
{
    return strcmp(a->type, b->type) == 0 && strcmp(a->vendor, b->vendor) == 0 &&
           strcmp(a->architecture, b->architecture) == 0 && strcmp(a->device, b->device) == 0 &&
           strcmp(a->kernel, b->kernel) == 0 && strcmp(a->accum, b->accum) == 0 && a->n == b->n &&
           a->algorithm == b->algorithm;
}

/* An open-addressing set of entry indices, keyed as same_key compares. */
typedef struct key_set {
    size_t *slots; /* index + 1; 0 is empty */
    size_t mask;
} key_set;

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

static int key_set_init(key_set *set, size_t count)
{
    size_t capacity = 16;
    while (capacity < 2 * count + 1 && capacity < ((size_t)1 << 40))
        capacity *= 2;
    set->slots = calloc(capacity, sizeof *set->slots);
    set->mask = capacity - 1;
    return set->slots != NULL;
}

/* Inserts entries[index] unless an entry with its key is there; 1 when inserted. */
static int key_set_insert(key_set *set, const fk_tuning_entry *entries, size_t index)
{
    for (size_t slot = (size_t)hash_key(&entries[index]) & set->mask;;
         slot = (slot + 1) & set->mask) {
        if (set->slots[slot] == 0) {
            set->slots[slot] = index + 1;
            return 1;
        }
        if (same_key(&entries[set->slots[slot] - 1], &entries[index]))
            return 0;
    }
}

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
    if (!read_document(path, built_in, &document, reason, sizeof reason)) {
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
    key_set seen;
    if (!key_set_init(&seen, db->count + count)) {
        cJSON_Delete(document);
        return FK_ERR_HOST_MEMORY;
    }
    for (size_t k = 0; k < db->count; ++k)
        key_set_insert(&seen, db->entries, k);
    size_t index = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, entries)
    {
        fk_tuning_entry entry;
        char why[320];
        if (!parse_entry(item, &entry, why, sizeof why)) {
            fk__warn(warnings, "tuning database %s (%s): entry %zu ignored: %s", path, which, index,
                     why);
        } else {
            entry.origin = origin;
            db->entries[db->count] = entry;
            if (key_set_insert(&seen, db->entries, db->count))
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

/* ---- lookup ---------------------------------------------------------------------------------- */

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

/* ---- writing --------------------------------------------------------------------------------- */

static cJSON *entry_to_json(const fk_tuning_entry *e)
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
    if (make_parent_directories(path) != 0) {
        snprintf(message, message_size, "cannot write the tuning database %s: %s", path,
                 strerror(errno));
        return FK_ERR_INVALID_ARGUMENT;
    }
    /* Read, modify and write under one lock, so that concurrent tune runs keep each other's
     * entries. Without a lock (a read-only directory) the write below fails anyway. */
    int lock = fk__lock_acquire(path);
    cJSON *document = NULL;
    char reason[256];
    if (!read_document(path, 0, &document, reason, sizeof reason)) {
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
            if (parse_entry(cJSON_GetArrayItem(list, index), &old, NULL, 0) &&
                same_key(&old, &entries[k]))
                cJSON_DeleteItemFromArray(list, index);
        }
        cJSON *object = entry_to_json(&entries[k]);
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
    char *with_newline = concatenate(text, "\n");
    cJSON_free(text);
    if (!with_newline) {
        fk__lock_release(lock);
        return FK_ERR_HOST_MEMORY;
    }
    char error[512];
    fk_status written = write_text(path, with_newline, error, sizeof error);
    fk__lock_release(lock);
    free(with_newline);
    if (written != FK_OK) {
        snprintf(message, message_size, "cannot write the tuning database: %s", error);
        return written == FK_ERR_HOST_MEMORY ? written : FK_ERR_IO;
    }
    return FK_OK;
}

fk_status fk__tuning_resume_save(const char *path, const char *key, const cJSON *points,
                                 char *message, size_t message_size)
{
    message[0] = '\0';
    int lock = fk__lock_acquire(path);
    size_t size = 0;
    char *text = read_bounded(path, &size);
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
            status = write_text(path, printed, message, message_size);
            cJSON_free(printed);
        }
    }
    cJSON_Delete(document);
    fk__lock_release(lock);
    return status;
}
