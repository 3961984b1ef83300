/* simulate checkpoints (src/support/simulate_checkpoint_read.c): the header's counts must never
 * drive an allocation beyond what the file holds (the audit's 71-byte file asked for 24.7 GB), and
 * a checkpoint is trusted only with its checksum (issue #32).
 *
 * Most mutations of a real checkpoint break its checksum, which the reader checks before it
 * parses anything, so the parser behind it would be reached only by the corpus itself. The first
 * byte chooses: even, the input is the file as it is (the checksum check, and the corpus files,
 * which carry valid checksums, start with 'f'); odd, the rest of the input is a body to which the
 * harness appends its valid checksum line (fkt_sim_checkpoint_checksum, the writer's), so the
 * mutations reach the parser. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"
#include "support/simulate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = NULL;
    if (size > 0 && (data[0] & 1)) {
        const char *body = (const char *)data + 1;
        const size_t length = size - 1;
        const int newline = length > 0 && body[length - 1] != '\n'; /* end the last line */
        enum { line = 34 }; /* "checksum XXH3-64 " 16 "\n" */
        uint8_t *file = malloc(length + 1 + line + 1);
        if (!file)
            return 0;
        memcpy(file, body, length);
        size_t at = length;
        if (newline)
            file[at++] = '\n';
        at += (size_t)snprintf((char *)file + at, line + 1, "checksum XXH3-64 %016llx\n",
                               (unsigned long long)fkt_sim_checkpoint_checksum((char *)file, at));
        path = fk_fuzz_write("state.checkpoint", file, at);
        free(file);
    } else {
        path = fk_fuzz_write("state.checkpoint", data, size);
    }
    fkt_sim_checkpoint checkpoint;
    char error[512] = "";
    if (fkt_sim_checkpoint_read(path, &checkpoint, error, sizeof error) == FK_OK) {
        if (checkpoint.n == 0 || !checkpoint.position)
            __builtin_trap();
        fkt_sim_checkpoint_free(&checkpoint);
    } else if (error[0] == '\0') {
        __builtin_trap();
    }
    return 0;
}
