/* The tuning database (docs/tuning.md), what the rest of the library and the tests see of it. Not
 * installed. Its files, one concern each: identity.c (the device's keys), db_paths.c (where the
 * databases are), db_json.c (the file format), db_keys.c (an entry's key and its hash set),
 * db_files.c (bounded reads, atomic writes), db_load.c, db_lookup.c, db_store.c, and resume.c
 * (the tuner's resume file). */
#ifndef FK_TUNE_DB_H
#define FK_TUNE_DB_H

#include <stddef.h>

#include "core/internal.h"

/* Database keys of one device, after normalisation (CLBlast's hierarchy: vendor, architecture,
 * device name; each level of an entry may be "default"). */
typedef struct fk_tuning_identity {
    char type[16];          /* "cpu", "gpu", "accelerator", "other" */
    char vendor[128];       /* aliases folded: "NVIDIA", "AMD", "Intel", else as the device says */
    char architecture[128]; /* "SM9.0", "gfx90a", POCL's LLVM CPU ("skylake-avx512"); "" unknown */
    char device[256];       /* the name with POCL's "pthread-"/"cpu-" prefix stripped */
} fk_tuning_identity;

/* What an identity is computed from, so that tests need no device. nv_major < 0: no
 * cl_nv_device_attribute_query. board_name: CL_DEVICE_BOARD_NAME_AMD or NULL. */
typedef struct fk_tuning_device_facts {
    const char *vendor, *name, *platform_name, *board_name;
    fk_device_type type;
    int nv_major, nv_minor;
} fk_tuning_device_facts;

void fk__tuning_identity_from(const fk_tuning_device_facts *facts, fk_tuning_identity *identity);
/* Queries the device's extensions and computes its identity. */
void fk__tuning_identity_query(cl_platform_id platform, cl_device_id device,
                               const fk_device_info *info, fk_tuning_identity *identity);
/* Strips POCL's prefixes and folds runs of white space: "pthread-skylake-avx512-AMD EPYC" and
 * "cpu-skylake-avx512-AMD EPYC" are one device. */
void fk__tuning_normalise_name(const char *name, char *out, size_t size);
const char *fk__tuning_normalise_vendor(const char *vendor);

/* One entry: a tuned (or measured) variant for a device, kernel, accumulator and N bucket. */
typedef struct fk_tuning_entry {
    char type[16], vendor[128], architecture[128], device[256];
    char kernel[64], accum[64];
    size_t n;
    int unroll_i, unroll_j, work_group_size, local_tiling, j_splits;
    /* CPU lanes (cl/pairwise_lanes.cl): 8 or 16, 0 the scalar template (the tuner compared both),
     * -1 not recorded (an entry measured on the scalar template only, before the tuner searched
     * lanes; automatic lanes take precedence over it). */
    int lanes;
    fk_variant_source origin; /* FK_VARIANT_USER_DB or FK_VARIANT_SHIPPED_DB */
    /* The pair loop it was tuned for (fk_algorithm): "algorithm" in the file, absent for
     * all-pairs, so that databases written before loops were keyed stay valid. */
    int algorithm;
    /* The tuner's measured seconds per evaluation of this variant at n ("seconds_per_eval" in the
     * file); 0 when the entry has none. */
    double seconds_per_eval;
} fk_tuning_entry;

/* The databases a context reads, loaded once at context creation. */
typedef struct fk_tuning_db {
    fk_tuning_identity identity;
    fk_tuning_entry *entries; /* user entries first; shipped ones with the same key are dropped */
    size_t count;
    char *user_path;    /* NULL when off or no home directory */
    char *shipped_path; /* NULL when off; FK__BUILT_IN: the copy built into the library */
} fk_tuning_db;

/* Resolves the database paths (configured, then the environment, then the defaults). Returns a
 * malloc'ed path, or NULL when the database is switched off ("off") or cannot be placed. */
char *fk__tuning_user_path(const char *configured);
/* $FORCEKIT_SHIPPED_TUNING_DB, else the installed or build-tree file (install_paths.h), else
 * FK__BUILT_IN, the copy compiled into the library, which fk__tuning_db_load reads as the
 * shipped database's text (as it reads FORCEKIT_SHIPPED_TUNING_DB=built-in). */
char *fk__tuning_shipped_path(void);

/* Loads both databases for a device. A missing file is no entry; a corrupt one is ignored with a
 * line appended to *warnings (malloc'ed text, may be NULL on entry). Never fails but for memory. */
fk_status fk__tuning_db_load(const fk_tuning_identity *identity, const char *user_path,
                             const char *shipped_path, fk_tuning_db **db, char **warnings);
void fk__tuning_db_free(fk_tuning_db *db);
/* Loads the context's databases (fk_context_create calls it; the tuner again after writing). */
void fk__tuning_context_load(fk_context *context);

/* The best entry for kernel, accumulator and N (0: unknown, the largest N is preferred): the most
 * specific device match first (vendor, then architecture, then device name; "default" matches
 * anything), then the nearest N bucket. NULL when nothing matches. */
const fk_tuning_entry *fk__tuning_lookup(const fk_tuning_db *db, const char *kernel,
                                         const char *accum, size_t n);
/* The same for the entries of one pair loop (fk_algorithm); fk__tuning_lookup is all-pairs. */
const fk_tuning_entry *fk__tuning_lookup_loop(const fk_tuning_db *db, int algorithm,
                                              const char *kernel, const char *accum, size_t n);

/* Adds or replaces (same device keys, kernel, accumulator and n) entries in the database file at
 * path, under a lock on path.lock (concurrent tune runs keep each other's entries), written to a
 * temporary file and renamed (files.h). extra holds one JSON object per entry with more keys to
 * store (timings, provenance); NULL for none. A regular file that does not parse is moved aside
 * to path.bad (path.bad.1, ... when that exists: never overwritten) with a warning; anything but
 * a regular file is refused (FK_ERR_INVALID_ARGUMENT). Returns FK_OK or FK_ERR_IO with message
 * filled. */
fk_status fk__tuning_db_store(const char *path, const fk_tuning_entry *entries,
                              const char *const *extra_json, size_t count, char **warnings,
                              char *message, size_t message_size);

/* Sets one run's points (a JSON array; NULL or empty removes the run) in the resume file at path,
 * keeping the other runs' as found there, under a lock (path.lock); the file is removed when
 * no run is left. FK_OK, or a failure with message filled (resuming is then lost, not tuning). */
struct cJSON;
fk_status fk__tuning_resume_save(const char *path, const char *key, const struct cJSON *points,
                                 char *message, size_t message_size);

/* The resume file of the tuner: the user database's path + ".resume". */
char *fk__tuning_resume_path(const char *database_path);
/* Its key for one run: device keys, kernel, accumulator and bucket. */
void fk__tuning_resume_key(const fk_tuning_identity *identity, const char *kernel,
                           const char *accum, size_t bucket, char *key, size_t size);

#endif
