/* The device's keys in the tuning database: vendor, architecture and device name, normalised so
 * that one device has one identity whichever driver or platform names it (POCL's prefixes, vendor
 * aliases, NVIDIA's compute capability, AMD's gfx target). Separate from the database file because
 * it is the only part that queries OpenCL, and the tests compute identities from facts alone. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/text.h"
#include "core/tuning_db/db_private.h"

/* NVIDIA's and AMD's vendor extensions (cl_ext.h names them, but older headers lack them). */
#define FK_CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define FK_CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001
#define FK_CL_DEVICE_BOARD_NAME_AMD 0x4038

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
    fk_copy_text(identity->type, sizeof identity->type, fk_device_type_name(facts->type));
    fk_copy_text(identity->vendor, sizeof identity->vendor,
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
        fk_copy_text(identity->architecture, sizeof identity->architecture, identity->device);
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
