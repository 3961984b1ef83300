/* Device discovery and selection: the selector rules on a fake device list, and on the real one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "forcekit/forcekit.h"
#include "test_support.h"

static fk_device_info fake(unsigned platform, unsigned device, const char *name,
                           fk_device_type type)
{
    fk_device_info info;
    memset(&info, 0, sizeof info);
    info.platform_index = platform;
    info.device_index = device;
    snprintf(info.selector, sizeof info.selector, "%u:%u", platform, device);
    snprintf(info.name, sizeof info.name, "%s", name);
    info.type = type;
    return info;
}

static void test_select_rules(void **state)
{
    (void)state;
    fk_device_info list[] = {
        fake(0, 0, "pthread-skylake-avx512-AMD EPYC", FK_DEVICE_CPU),
        fake(1, 0, "NVIDIA H100 80GB HBM3", FK_DEVICE_GPU),
        fake(1, 1, "NVIDIA H200", FK_DEVICE_GPU),
    };
    size_t chosen = 99;
    /* Default: the first GPU, even when a CPU comes first. */
    assert_int_equal(fk_device_select(list, 3, NULL, &chosen), FK_OK);
    assert_int_equal(chosen, 1);
    assert_int_equal(fk_device_select(list, 3, "", &chosen), FK_OK);
    assert_int_equal(chosen, 1);
    assert_int_equal(fk_device_select(list, 3, "cpu", &chosen), FK_OK);
    assert_int_equal(chosen, 0);
    assert_int_equal(fk_device_select(list, 3, "GPU", &chosen), FK_OK);
    assert_int_equal(chosen, 1);
    assert_int_equal(fk_device_select(list, 3, "1:1", &chosen), FK_OK);
    assert_int_equal(chosen, 2);
    assert_int_equal(fk_device_select(list, 3, "0:0", &chosen), FK_OK);
    assert_int_equal(chosen, 0);
    assert_int_equal(fk_device_select(list, 3, "h200", &chosen), FK_OK); /* case-insensitive */
    assert_int_equal(chosen, 2);
    assert_int_equal(fk_device_select(list, 3, "skylake", &chosen), FK_OK);
    assert_int_equal(chosen, 0);
    assert_int_equal(fk_device_select(list, 3, "2:0", &chosen), FK_ERR_DEVICE_NOT_FOUND);
    assert_int_equal(fk_device_select(list, 3, "radeon", &chosen), FK_ERR_DEVICE_NOT_FOUND);
    assert_int_equal(fk_device_select(list, 3, "accelerator", &chosen), FK_ERR_DEVICE_NOT_FOUND);
    /* CPU-only machine: default falls back to the first CPU, "gpu" is not found. */
    assert_int_equal(fk_device_select(list, 1, NULL, &chosen), FK_OK);
    assert_int_equal(chosen, 0);
    assert_int_equal(fk_device_select(list, 1, "gpu", &chosen), FK_ERR_DEVICE_NOT_FOUND);
    assert_int_equal(fk_device_select(list, 0, NULL, &chosen), FK_ERR_NO_DEVICE);
    assert_int_equal(fk_device_select(NULL, 3, NULL, &chosen), FK_ERR_INVALID_ARGUMENT);
}

static void test_real_devices(void **state)
{
    (void)state;
    fk_device_info *devices = NULL;
    size_t count = 0;
    assert_int_equal(fk_devices_list(&devices, &count), FK_OK);
    assert_true(count >= 1);
    for (size_t i = 0; i < count; ++i) {
        assert_true(strlen(devices[i].name) > 0);
        assert_true(devices[i].compute_units > 0);
        assert_true(devices[i].global_memory_bytes > 0);
        char expected[32];
        snprintf(expected, sizeof expected, "%u:%u", devices[i].platform_index,
                 devices[i].device_index);
        assert_string_equal(devices[i].selector, expected);
        for (size_t j = 0; j < i; ++j)
            assert_string_not_equal(devices[i].selector, devices[j].selector);
    }
    /* Each device opens by its selector and by its name. */
    for (size_t i = 0; i < count; ++i) {
        fk_context *context = NULL;
        fk_context_config config = {.device = devices[i].selector};
        assert_int_equal(fk_context_create(&config, &context), FK_OK);
        assert_string_equal(fk_context_device(context)->name, devices[i].name);
        fk_context_destroy(context);
        config.device = devices[i].name;
        assert_int_equal(fk_context_create(&config, &context), FK_OK);
        fk_context_destroy(context);
    }
    fk_devices_free(devices);
}

static void test_unknown_device_explains(void **state)
{
    (void)state;
    fk_context *context = NULL;
    fk_context_config config = {.device = "no-such-device-anywhere"};
    assert_int_equal(fk_context_create(&config, &context), FK_ERR_DEVICE_NOT_FOUND);
    assert_non_null(context);
    const char *message = fk_context_last_error(context);
    assert_non_null(strstr(message, "no-such-device-anywhere"));
    assert_non_null(strstr(message, "0:0")); /* lists what exists */
    fk_context_destroy(context);
}

static void test_environment_selector(void **state)
{
    (void)state;
    const char *saved = getenv("FORCEKIT_DEVICE");
    char *copy = saved ? strdup(saved) : NULL;
    setenv("FORCEKIT_DEVICE", "no-such-device-anywhere", 1);
    fk_context *context = NULL;
    assert_int_equal(fk_context_create(NULL, &context), FK_ERR_DEVICE_NOT_FOUND);
    fk_context_destroy(context);
    /* An explicit selector wins over the environment. */
    fk_context_config config = {.device = "0:0"};
    assert_int_equal(fk_context_create(&config, &context), FK_OK);
    fk_context_destroy(context);
    setenv("FORCEKIT_DEVICE", "0:0", 1);
    assert_int_equal(fk_context_create(NULL, &context), FK_OK);
    assert_string_equal(fk_context_device(context)->selector, "0:0");
    fk_context_destroy(context);
    if (copy) {
        setenv("FORCEKIT_DEVICE", copy, 1);
        free(copy);
    } else {
        unsetenv("FORCEKIT_DEVICE");
    }
}

static void test_status_strings(void **state)
{
    (void)state;
    for (int s = FK_OK; s <= FK_ERR_OVERFLOW; ++s) {
        const char *text = fk_status_string((fk_status)s);
        assert_non_null(text);
        assert_string_not_equal(text, "unknown status");
        for (int t = FK_OK; t < s; ++t)
            assert_string_not_equal(text, fk_status_string((fk_status)t));
    }
    assert_string_equal(fk_status_string((fk_status)999), "unknown status");
    assert_string_equal(fk_device_type_name(FK_DEVICE_GPU), "gpu");
    assert_string_equal(fk_device_type_name(FK_DEVICE_CPU), "cpu");
    assert_string_equal(fk_context_last_error(NULL), "");
}

int main(int argc, char **argv)
{
    FK_TEST_PREPARE(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select_rules),
        cmocka_unit_test(test_real_devices),
        cmocka_unit_test(test_unknown_device_explains),
        cmocka_unit_test(test_environment_selector),
        cmocka_unit_test(test_status_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
