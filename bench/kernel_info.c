/*
 * bench_kernel_info: what the OpenCL compiler made of each kernel. Builds every requested kernel x
 * accumulator x unroll variant x algorithm through the library (fk_eval_create: the same programs
 * `forcekit bench` runs) and prints, per OpenCL kernel of the evaluation, the figures of
 * clGetKernelWorkGroupInfo: CL_KERNEL_PRIVATE_MEM_SIZE, CL_KERNEL_LOCAL_MEM_SIZE,
 * CL_KERNEL_WORK_GROUP_SIZE and CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE. One JSON document.
 *
 * usage: bench_kernel_info [--device SEL] [--kernels ga,lj,...] [--accums float,fixed64,...]
 *                          [--unroll auto|all|IxJ,IxJ...] [--algorithms all-pairs,symmetric]
 *                          [--wg W]
 *
 * Variants the device cannot run (local memory, registers) are listed with the reason. Private
 * memory is what the driver reports: NVIDIA counts spills (local memory in CUDA's sense), POCL the
 * work-group function's stack.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "forcekit/forcekit.h"
#include "core/eval/eval.h" /* fk__eval_kernel_figures */

enum { MAX_ITEMS = 32 };

/* Splits a comma-separated list (modified in place) into items; returns their number. */
static size_t split_list(char *text, char **items)
{
    size_t count = 0;
    for (char *item = strtok(text, ","); item && count < MAX_ITEMS; item = strtok(NULL, ","))
        items[count++] = item;
    return count;
}

static int parse_unroll(const char *text, int *i, int *j)
{
    if (strcmp(text, "auto") == 0) {
        *i = *j = 0;
        return 1;
    }
    char tail = 0;
    return sscanf(text, "%dx%d%c", i, j, &tail) == 2;
}

static cJSON *figures_json(const fk__kernel_figures *f)
{
    cJSON *object = cJSON_CreateObject();
    cJSON_AddStringToObject(object, "name", f->name);
    cJSON_AddNumberToObject(object, "private_bytes", (double)f->private_bytes);
    cJSON_AddNumberToObject(object, "local_bytes", (double)f->local_bytes);
    cJSON_AddNumberToObject(object, "max_work_group_size", (double)f->work_group_size);
    cJSON_AddNumberToObject(object, "preferred_multiple", (double)f->preferred_multiple);
    return object;
}

int main(int argc, char **argv)
{
    const char *device = NULL;
    char kernels_text[256] = "ga,ljc_constant,lj", accums_text[256] = "float,fixed64";
    char unroll_text[256] = "auto", algorithms_text[256] = "all-pairs,symmetric";
    int work_group_size = 0;
    for (int a = 1; a < argc; a += 2) {
        const char *value = a + 1 < argc ? argv[a + 1] : NULL;
        char *target = NULL;
        if (!value)
            target = NULL;
        else if (strcmp(argv[a], "--kernels") == 0)
            target = kernels_text;
        else if (strcmp(argv[a], "--accums") == 0)
            target = accums_text;
        else if (strcmp(argv[a], "--unroll") == 0)
            target = unroll_text;
        else if (strcmp(argv[a], "--algorithms") == 0)
            target = algorithms_text;
        if (target && strlen(value) < 256) {
            strcpy(target, value);
        } else if (value && strcmp(argv[a], "--device") == 0) {
            device = value;
        } else if (value && strcmp(argv[a], "--wg") == 0 && atoi(value) > 0) {
            work_group_size = atoi(value);
        } else {
            fprintf(stderr, "usage: bench_kernel_info [--device SEL] [--kernels K,...] "
                            "[--accums A,...] [--unroll auto|all|IxJ,...] "
                            "[--algorithms all-pairs,symmetric] [--wg W]\n");
            return 2;
        }
    }
    if (strcmp(unroll_text, "all") == 0) {
        unroll_text[0] = '\0';
        for (int i = 1; i <= 8; i *= 2)
            for (int j = 1; j <= 8; j *= 2) {
                char one[32]; /* room for any int pair: gcc 13 checks the worst case */
                snprintf(one, sizeof one, "%s%dx%d", unroll_text[0] ? "," : "", i, j);
                strcat(unroll_text, one);
            }
    }
    char *kernels[MAX_ITEMS], *accums[MAX_ITEMS], *unrolls[MAX_ITEMS], *algorithms[MAX_ITEMS];
    const size_t kernel_count = split_list(kernels_text, kernels);
    const size_t accum_count = split_list(accums_text, accums);
    const size_t unroll_count = split_list(unroll_text, unrolls);
    const size_t algorithm_count = split_list(algorithms_text, algorithms);

    fk_context *context = NULL;
    const fk_context_config context_config = {.device = device};
    if (fk_context_create(&context_config, &context) != FK_OK) {
        fprintf(stderr, "bench_kernel_info: %s\n",
                context ? fk_context_last_error(context) : "out of memory");
        fk_context_destroy(context);
        return 1;
    }
    const fk_device_info *info = fk_context_device(context);
    cJSON *document = cJSON_CreateObject();
    cJSON_AddStringToObject(document, "device", info->name);
    cJSON_AddStringToObject(document, "device_type", fk_device_type_name(info->type));
    cJSON_AddStringToObject(document, "driver_version", info->driver_version);
    cJSON_AddStringToObject(document, "platform", info->platform_name);
    cJSON_AddNumberToObject(document, "local_memory_bytes", (double)info->local_memory_bytes);
    cJSON_AddNumberToObject(document, "max_work_group_size", (double)info->max_work_group_size);
    cJSON *entries = cJSON_AddArrayToObject(document, "entries");
    int failures = 0;
    for (size_t k = 0; k < kernel_count; ++k)
        for (size_t a = 0; a < accum_count; ++a)
            for (size_t g = 0; g < algorithm_count; ++g)
                for (size_t u = 0; u < unroll_count; ++u) {
                    fk_algorithm algorithm;
                    int unroll_i, unroll_j;
                    if (fk_algorithm_find(algorithms[g], &algorithm) != FK_OK ||
                        !parse_unroll(unrolls[u], &unroll_i, &unroll_j)) {
                        fprintf(stderr, "bench_kernel_info: bad algorithm %s or unroll %s\n",
                                algorithms[g], unrolls[u]);
                        cJSON_Delete(document);
                        fk_context_destroy(context);
                        return 2;
                    }
                    const int gravity =
                        strcmp(kernels[k], "ga") == 0 || strcmp(kernels[k], "gaj") == 0;
                    fk_eval_config config = {.kernel = kernels[k],
                                             .accum = accums[a],
                                             .unroll_i = unroll_i,
                                             .unroll_j = unroll_j,
                                             .work_group_size = work_group_size,
                                             .eps = gravity ? 0.01 : 0.0,
                                             .algorithm = (int)algorithm};
                    cJSON *entry = cJSON_CreateObject();
                    cJSON_AddStringToObject(entry, "kernel", kernels[k]);
                    cJSON_AddStringToObject(entry, "accum", accums[a]);
                    cJSON_AddStringToObject(entry, "algorithm", algorithms[g]);
                    cJSON_AddStringToObject(entry, "requested_unroll", unrolls[u]);
                    fk_eval *eval = NULL;
                    const fk_status status = fk_eval_create(context, &config, &eval);
                    if (status != FK_OK) {
                        cJSON_AddStringToObject(entry, "error", fk_status_string(status));
                        cJSON_AddStringToObject(entry, "reason", fk_context_last_error(context));
                        failures += status != FK_ERR_UNSUPPORTED;
                    } else {
                        fk_variant variant;
                        fk_eval_get_variant(eval, &variant);
                        char name[32];
                        snprintf(name, sizeof name, "%dx%d", variant.unroll_i, variant.unroll_j);
                        cJSON_AddStringToObject(entry, "unroll", name);
                        cJSON_AddNumberToObject(entry, "work_group_size", variant.work_group_size);
                        cJSON_AddBoolToObject(entry, "local_tiling", variant.local_tiling != 0);
                        fk__kernel_figures figures[8];
                        size_t count = 0;
                        fk__eval_kernel_figures(eval, figures, 8, &count);
                        cJSON *list = cJSON_AddArrayToObject(entry, "kernels");
                        for (size_t f = 0; f < count && f < 8; ++f)
                            cJSON_AddItemToArray(list, figures_json(&figures[f]));
                        fk_eval_destroy(eval);
                    }
                    cJSON_AddItemToArray(entries, entry);
                }
    char *text = cJSON_Print(document);
    if (text)
        printf("%s\n", text);
    cJSON_free(text);
    cJSON_Delete(document);
    fk_context_destroy(context);
    return text && !failures ? 0 : 1;
}
