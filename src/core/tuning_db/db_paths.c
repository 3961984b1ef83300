/* Where the tuning databases are: the user's (configured, $FORCEKIT_TUNING_DB, then the XDG data
 * directory) and the shipped one (its environment variable, the installed or build-tree file, then
 * the copy built into the library). Separate because it reads only the environment and the file
 * system's names, never a database. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/text.h"
#include "core/programs/install_paths.h"
#include "core/tuning_db/db_private.h"

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
        return fk_concatenate(xdg, "/forcekit/tuning.json");
    const char *home = getenv("HOME");
    if (home && *home)
        return fk_concatenate(home, "/.local/share/forcekit/tuning.json");
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
