/*
 * Start-up latency: wall time from process start to the first completed `ga` force evaluation,
 * once with the compiled-program cache cold (the child compiles from source and fills the cache)
 * and once warm (the child loads the program from the cache). Prints one JSON document.
 *
 *   bench_startup [N]          N particles (default 4096); device from $FORCEKIT_DEVICE
 *
 * Each measurement runs in a fresh process (this program re-executed with --child), since start-up
 * costs (OpenCL platform loading, driver initialisation) are paid once per process.
 *
 * Note: POCL keeps a kernel cache of its own (POCL_KERNEL_CACHE=0 disables it), so on POCL the
 * "cold" run compiles forcekit's program from source but may still reuse POCL's cached code.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "forcekit/forcekit.h"
#include "support/generate.h"
#include "forcekit/tools.h"

static double seconds_of(const struct timespec *ts)
{
    return (double)ts->tv_sec + 1e-9 * (double)ts->tv_nsec;
}

static double monotonic_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return seconds_of(&ts);
}

/* Seconds since the kernel started this process (/proc/self/stat field 22, in clock ticks since
 * boot, so only 1/CLK_TCK resolution); negative when unavailable. */
static double seconds_since_process_start(void)
{
#ifdef CLOCK_BOOTTIME
    FILE *file = fopen("/proc/self/stat", "r");
    if (!file)
        return -1;
    char line[4096];
    size_t length = fread(line, 1, sizeof line - 1, file);
    fclose(file);
    line[length] = '\0';
    /* The command name (field 2) may contain spaces and parentheses: count from the last ')'. */
    char *cursor = strrchr(line, ')');
    if (!cursor)
        return -1;
    unsigned long long start_ticks = 0;
    for (int field = 3; field <= 22; ++field) {
        cursor = strchr(cursor + 1, ' ');
        if (!cursor)
            return -1;
        if (field == 22 && sscanf(cursor + 1, "%llu", &start_ticks) != 1)
            return -1;
    }
    long ticks_per_second = sysconf(_SC_CLK_TCK);
    struct timespec now;
    if (ticks_per_second <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0)
        return -1;
    return seconds_of(&now) - (double)start_ticks / (double)ticks_per_second;
#else
    return -1;
#endif
}

/* The timed work of one child: context, program (compiled or from the cache), particles, one
 * evaluation. Prints a JSON object; returns the exit status. */
static int run_child(double main_entry, size_t count, int cold)
{
    fk_context *context = NULL;
    fk_eval *eval = NULL;
    fkt_particle_set particles = {0};
    fk_eval_config config = {.kernel = "ga", .eps = 0.01, .refresh_cache = cold};
    double device_seconds = 0;
    fk_status status = fk_context_create(NULL, &context);
    if (status == FK_OK)
        status = fk_eval_create(context, &config, &eval);
    if (status == FK_OK)
        status = fkt_generate_plummer(count, 1, FKT_LAYOUT_XYZM, &particles);
    fk_particles view = fkt_particle_set_view(&particles);
    if (status == FK_OK)
        status = fk_eval_set_particles(eval, &view);
    if (status == FK_OK)
        status = fk_eval_compute(eval, &device_seconds);
    const double from_main = monotonic_now() - main_entry;
    const double from_start = seconds_since_process_start();
    int code = 0;
    if (status != FK_OK) {
        fprintf(stderr, "bench_startup: %s: %s\n", fk_status_string(status),
                fk_context_last_error(context));
        code = 1;
    } else {
        fk_variant variant;
        fk_eval_get_variant(eval, &variant);
        cJSON *document = cJSON_CreateObject();
        cJSON_AddStringToObject(document, "device", fk_context_device(context)->name);
        cJSON_AddNumberToObject(document, "seconds_from_main", from_main);
        if (from_start >= 0)
            cJSON_AddNumberToObject(document, "seconds_from_process_start", from_start);
        else
            cJSON_AddNullToObject(document, "seconds_from_process_start");
        cJSON_AddNumberToObject(document, "build_seconds", variant.build_seconds);
        cJSON_AddBoolToObject(document, "program_from_cache", variant.program_from_cache);
        cJSON_AddNumberToObject(document, "eval_seconds", device_seconds);
        char *text = cJSON_PrintUnformatted(document);
        cJSON_Delete(document);
        if (!text || printf("%s\n", text) < 0 || fflush(stdout) != 0)
            code = 1;
        cJSON_free(text);
    }
    fkt_particle_set_free(&particles);
    fk_eval_destroy(eval);
    fk_context_destroy(context);
    return code;
}

/* Runs this program again as a child and parses the JSON it prints. NULL on failure. */
static cJSON *run_measurement(const char *count_text, int cold)
{
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) {
        perror("bench_startup: pipe");
        return NULL;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("bench_startup: fork");
        close(pipe_ends[0]);
        close(pipe_ends[1]);
        return NULL;
    }
    if (pid == 0) {
        close(pipe_ends[0]);
        if (dup2(pipe_ends[1], STDOUT_FILENO) < 0)
            _exit(127);
        close(pipe_ends[1]);
        char *child_argv[] = {"bench_startup", "--child", cold ? "cold" : "warm",
                              (char *)count_text, NULL};
        execv("/proc/self/exe", child_argv);
        perror("bench_startup: exec /proc/self/exe");
        _exit(127);
    }
    close(pipe_ends[1]);
    char output[8192];
    size_t used = 0;
    for (;;) {
        ssize_t got = read(pipe_ends[0], output + used, sizeof output - 1 - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        used += (size_t)got;
        if (used == sizeof output - 1)
            break;
    }
    output[used] = '\0';
    close(pipe_ends[0]);
    int wait_status = 0;
    while (waitpid(pid, &wait_status, 0) < 0)
        if (errno != EINTR) {
            perror("bench_startup: waitpid");
            return NULL;
        }
    if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
        fprintf(stderr, "bench_startup: the %s child failed\n", cold ? "cold" : "warm");
        return NULL;
    }
    cJSON *document = cJSON_Parse(output);
    if (!cJSON_IsObject(document)) {
        fprintf(stderr, "bench_startup: the %s child printed no JSON object\n",
                cold ? "cold" : "warm");
        cJSON_Delete(document);
        return NULL;
    }
    return document;
}

static int parse_count(const char *text, size_t *count)
{
    char *end = NULL;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno || end == text || *end != '\0' || value < 1 || value > (1 << 30))
        return 0;
    *count = (size_t)value;
    return 1;
}

static double number_of(const cJSON *document, const char *key)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(document, key);
    return cJSON_IsNumber(item) ? item->valuedouble : -1;
}

int main(int argc, char **argv)
{
    const double main_entry = monotonic_now();
    if (argc == 4 && strcmp(argv[1], "--child") == 0) {
        size_t count = 0;
        if (!parse_count(argv[3], &count))
            return 2;
        return run_child(main_entry, count, strcmp(argv[2], "cold") == 0);
    }
    const char *count_text = argc > 1 ? argv[1] : "4096";
    size_t count = 0;
    if (argc > 2 || !parse_count(count_text, &count)) {
        fprintf(stderr, "usage: bench_startup [N]   (N from 1 to 2^30, default 4096)\n");
        return 2;
    }
    cJSON *cold = run_measurement(count_text, 1);
    cJSON *warm = cold ? run_measurement(count_text, 0) : NULL;
    if (!cold || !warm) {
        cJSON_Delete(cold);
        cJSON_Delete(warm);
        return 1;
    }
    const cJSON *device = cJSON_GetObjectItemCaseSensitive(warm, "device");
    cJSON *report = cJSON_CreateObject();
    cJSON_AddStringToObject(report, "benchmark", "startup");
    cJSON_AddStringToObject(report, "kernel", "ga");
    cJSON_AddNumberToObject(report, "n", (double)count);
    cJSON_AddStringToObject(report, "device",
                            cJSON_IsString(device) ? device->valuestring : "unknown");
    cJSON_AddNumberToObject(report, "cold_start_seconds", number_of(cold, "seconds_from_main"));
    cJSON_AddNumberToObject(report, "warm_start_seconds", number_of(warm, "seconds_from_main"));
    cJSON_AddBoolToObject(
        report, "warm_from_cache",
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(warm, "program_from_cache")));
    cJSON_AddItemToObject(report, "cold", cold);
    cJSON_AddItemToObject(report, "warm", warm);
    char *text = cJSON_Print(report);
    cJSON_Delete(report);
    int code = text && printf("%s\n", text) >= 0 && fflush(stdout) == 0 ? 0 : 1;
    cJSON_free(text);
    return code;
}
