/* What the harnesses share: the readers take paths, so each input is written to one private file
 * (rewritten per input) in a private directory removed at exit: under $FK_FUZZ_TMPDIR, else
 * /dev/shm, else $TMPDIR, else /tmp. */
#ifndef FK_FUZZ_SUPPORT_H
#define FK_FUZZ_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* The directory (created on first use) and a path in it; both live until exit. */
const char *fk_fuzz_dir(void);
const char *fk_fuzz_path(const char *name);
/* Writes the bytes to fk_fuzz_path(name) and returns that path; aborts if it cannot (a harness
 * that silently tests nothing would be worse). */
const char *fk_fuzz_write(const char *name, const uint8_t *data, size_t size);

#endif
