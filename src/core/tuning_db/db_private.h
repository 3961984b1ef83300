/* What the tuning database's own files (db_*.c, identity.c, resume.c) share and nobody else needs:
 * the format's constants, the JSON form of an entry and a document, an entry's key, and the
 * bounded read and atomic write of a database file. */
#ifndef FK_TUNE_DB_PRIVATE_H
#define FK_TUNE_DB_PRIVATE_H

#include <stddef.h>

#include <cJSON.h>

#include "core/tuning_db/db.h"

#define DB_FORMAT "forcekit-tuning"
#define DB_VERSION 1
#define DEFAULT_LEVEL "default"

/* A database is small (a few hundred bytes an entry): anything larger is not one, and an endless
 * file (FORCEKIT_TUNING_DB=/dev/zero) must not be read until memory runs out. */
#define DB_MAX_BYTES ((size_t)64 << 20)

/* db_json.c. One entry; returns 0 (and says why in why[why_size], when why is not NULL) when it is
 * malformed. */
int fk__tuning_parse_entry(const cJSON *object, fk_tuning_entry *entry, char *why, size_t why_size);
cJSON *fk__tuning_entry_to_json(const fk_tuning_entry *entry);
/* Reads a database; *document is NULL for a missing file. Returns 0 and fills reason when the file
 * exists but is not a database. built_in: the shipped database's copy compiled into the library
 * (FK__BUILT_IN), not a file. */
int fk__tuning_read_document(const char *path, int built_in, cJSON **document, char *reason,
                             size_t reason_size);

/* db_keys.c. Whether two entries have one key (device levels, kernel, accum, n, pair loop). */
int fk__tuning_same_key(const fk_tuning_entry *a, const fk_tuning_entry *b);
/* An open-addressing set of entry indices, keyed as fk__tuning_same_key compares. */
typedef struct fk_tuning_key_set {
    size_t *slots; /* index + 1; 0 is empty */
    size_t mask;
} fk_tuning_key_set;
/* Room for count entries; 0 without memory. The caller frees set->slots. */
int fk__tuning_key_set_init(fk_tuning_key_set *set, size_t count);
/* Inserts entries[index] unless an entry with its key is there; 1 when inserted. */
int fk__tuning_key_set_insert(fk_tuning_key_set *set, const fk_tuning_entry *entries, size_t index);

/* db_files.c. Reads a regular file of at most DB_MAX_BYTES, NUL-terminated; NULL with errno
 * (EINVAL: not a regular file, EFBIG: too large). */
char *fk__tuning_read_bounded(const char *path, size_t *size);
/* Creates the directories above path; 0 on success, -1 with errno. */
int fk__tuning_make_parent_directories(const char *path);
/* Through files.h: atomic for a regular file, in place for a device, never renaming over what is
 * not a regular file. */
fk_status fk__tuning_write_text(const char *path, const char *text, char *error, size_t error_size);

#endif
