/* `forcekit devices`: every OpenCL device with the selector that picks it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"

static const char devices_synopsis[] =
    "usage: forcekit devices [--device SEL] [--json]\n\n"
    "Lists every device of every OpenCL platform: selector P:D, type, compute units, global\n"
    "memory, double precision, OpenCL C version, vendor and name. '*' marks the default device\n"
    "(what commands use without --device: $FORCEKIT_DEVICE, else the first GPU, else the first\n"
    "CPU); '>' the one --device selects.\n\n";

static cJSON *device_json(const fk_device_info *device, int is_default, int is_selected)
{
    cJSON *object = cJSON_CreateObject();
    cJSON_AddStringToObject(object, "selector", device->selector);
    cJSON_AddStringToObject(object, "name", device->name);
    cJSON_AddStringToObject(object, "vendor", device->vendor);
    cJSON_AddStringToObject(object, "type", fk_device_type_name(device->type));
    cJSON_AddNumberToObject(object, "compute_units", device->compute_units);
    cJSON_AddBoolToObject(object, "fp64", device->fp64 != 0);
    cJSON_AddNumberToObject(object, "global_memory_bytes", (double)device->global_memory_bytes);
    cJSON_AddNumberToObject(object, "local_memory_bytes", (double)device->local_memory_bytes);
    cJSON_AddNumberToObject(object, "max_work_group_size", (double)device->max_work_group_size);
    cJSON_AddStringToObject(object, "opencl_c_version", device->opencl_c_version);
    cJSON_AddStringToObject(object, "device_version", device->device_version);
    cJSON_AddStringToObject(object, "platform", device->platform_name);
    cJSON_AddStringToObject(object, "platform_version", device->platform_version);
    cJSON_AddStringToObject(object, "driver_version", device->driver_version);
    cJSON_AddBoolToObject(object, "default", is_default);
    cJSON_AddBoolToObject(object, "selected", is_selected);
    return object;
}

static int column_width(const fk_device_info *devices, size_t count, const char *heading,
                        size_t offset)
{
    size_t width = strlen(heading);
    for (size_t i = 0; i < count; ++i) {
        size_t length = strlen((const char *)&devices[i] + offset);
        if (length > width)
            width = length;
    }
    return (int)width;
}

static char device_mark(size_t index, size_t default_index, size_t selected_index)
{
    return index == selected_index ? '>' : index == default_index ? '*' : ' ';
}

static void print_table(const fk_device_info *devices, size_t count, size_t default_index,
                        size_t selected_index)
{
    const int selector_width =
        column_width(devices, count, "SEL", offsetof(fk_device_info, selector));
    const int version_width =
        column_width(devices, count, "OPENCL C", offsetof(fk_device_info, opencl_c_version));
    const int vendor_width =
        column_width(devices, count, "VENDOR", offsetof(fk_device_info, vendor));
    printf("  %-*s %-11s %5s %10s %4s  %-*s  %-*s  %s\n", selector_width, "SEL", "TYPE", "CU",
           "MEMORY", "FP64", version_width, "OPENCL C", vendor_width, "VENDOR", "NAME");
    for (size_t i = 0; i < count; ++i) {
        const fk_device_info *device = &devices[i];
        printf("%c %-*s %-11s %5u %6.1f GiB %4s  %-*s  %-*s  %s\n",
               device_mark(i, default_index, selected_index), selector_width, device->selector,
               fk_device_type_name(device->type), device->compute_units,
               (double)device->global_memory_bytes / (1024.0 * 1024 * 1024),
               device->fp64 ? "yes" : "no", version_width, device->opencl_c_version, vendor_width,
               device->vendor, device->name);
    }
    if (default_index < count)
        printf("\n* default device (FORCEKIT_DEVICE, else the first GPU, else the first CPU)\n");
    if (selected_index < count)
        printf("%s> the device --device selects\n", default_index < count ? "" : "\n");
}

int cmd_devices(int argc, char **argv)
{
    const char *device_selector = NULL;
    int json = 0, help = 0;
    cli_option options[] = {
        cli_explained(cli_opt_device(&device_selector),
                      "mark the device SEL selects (P:D, a name substring, cpu, gpu)"),
        cli_explained(cli_opt_json(&json), "a JSON list of devices on standard output"),
        cli_opt_help(&help),
    };
    static const cli_usage usage = {"devices", devices_synopsis, 16, NULL};
    int usage_code = CLI_EXIT_OK;
    if (cli_parse_command(&usage, argc, argv, options, sizeof options / sizeof options[0],
                          &usage_code))
        return usage_code;

    fk_device_info *devices = NULL;
    size_t count = 0;
    fk_status status = fk_devices_list(&devices, &count);
    if (status != FK_OK)
        return cli_report_status(status, NULL);

    /* The default is what commands pick without --device: $FORCEKIT_DEVICE, else the first GPU,
     * else the first CPU (fk_context_create's rule). A FORCEKIT_DEVICE that matches nothing does
     * not stop the listing: this is the command to find out why. */
    const char *environment = getenv("FORCEKIT_DEVICE");
    size_t default_index = count, selected_index = count;
    if (count && fk_device_select(devices, count, environment, &default_index) != FK_OK) {
        fprintf(stderr, "forcekit: devices: FORCEKIT_DEVICE='%s' matches no device\n",
                environment ? environment : "");
        default_index = count;
    }
    if (device_selector && *device_selector) {
        status = count ? fk_device_select(devices, count, device_selector, &selected_index)
                       : FK_ERR_NO_DEVICE;
        if (status != FK_OK) {
            cli_error("devices", "no device matches '%s'", device_selector);
            fk_devices_free(devices);
            return cli_exit_code(status);
        }
    }

    int code = CLI_EXIT_OK;
    if (json) {
        cJSON *list = cJSON_CreateArray();
        for (size_t i = 0; i < count; ++i)
            cJSON_AddItemToArray(list,
                                 device_json(&devices[i], i == default_index, i == selected_index));
        code = cli_print_json(list);
    } else if (count == 0) {
        fprintf(stderr, "forcekit: no OpenCL devices found\n");
    } else {
        print_table(devices, count, default_index, selected_index);
        if (fflush(stdout) != 0) {
            cli_error("devices", "cannot write standard output");
            code = CLI_EXIT_RUNTIME;
        }
    }
    fk_devices_free(devices);
    return code;
}
