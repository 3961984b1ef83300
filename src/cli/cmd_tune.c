/* `forcekit tune`: the autotuner (fk_tune_run) with a progress bar, a summary and the JSON
 * document of docs/cli.md ("tune"). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/tune/tune.h" /* fk__tune_run_loop: the public fk_tune_run tunes all-pairs */

static const char tune_synopsis[] =
    "usage: forcekit tune --kernel K [--accum A] [--algorithm L] [--n N] [--budget SECONDS]\n"
    "                     [--seed S] [--device SEL] [--json]\n\n"
    "Searches unroll factors (IxJ), work-group size, local tiling and the j-split (small N), and\n"
    "on CPUs the lane loop (its width, j-unroll and work-group size; docs/cpu.md), for\n"
    "kernel K on the device, per N bucket (1024, 4096, ..., 1048576), and stores the best of each\n"
    "bucket in the user's tuning database, which `--unroll auto` (the default) then uses. Every\n"
    "candidate is checked against the double-precision host reference before it is timed (a\n"
    "warm-up, then the median of at least 5 evaluations). When the budget cannot cover every\n"
    "candidate, a random sample is tried and then refined around the best; buckets whose\n"
    "candidates would not fit at all are skipped. Interrupted (Ctrl-C), the next run with the\n"
    "same arguments resumes from the points already measured.\n\n";

static void tune_usage_after(FILE *out, const cli_option *options, size_t count)
{
    (void)options;
    (void)count;
    fputs("\nThe database is $FORCEKIT_TUNING_DB, else $XDG_DATA_HOME/forcekit/tuning.json (else\n"
          "~/.local/share/forcekit/tuning.json); FORCEKIT_TUNING_DB=off tunes without storing.\n",
          out);
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int signal_number)
{
    interrupted = 1;
    signal(signal_number, SIG_DFL); /* a second Ctrl-C stops at once */
}

typedef struct tune_view {
    int bar; /* stderr is a terminal */
    int bar_drawn;
} tune_view;

static const char *outcome_token(fk_tune_outcome outcome)
{
    switch (outcome) {
    case FK_TUNE_MEASURED:
        return "measured";
    case FK_TUNE_UNSUPPORTED:
        return "unsupported";
    case FK_TUNE_BUILD_FAILED:
        return "build_failed";
    case FK_TUNE_WRONG_RESULT:
        return "wrong_result";
    case FK_TUNE_FAILED:
        break;
    }
    return "failed";
}

static const char *search_token(fk_tune_search search)
{
    return search == FK_TUNE_EXHAUSTIVE ? "exhaustive"
           : search == FK_TUNE_SAMPLED  ? "sampled"
                                        : "skipped";
}

static void describe(const fk_tune_point *p, char *text, size_t size)
{
    char splits[16];
    if (p->j_splits)
        snprintf(splits, sizeof splits, "%d", p->j_splits);
    else
        snprintf(splits, sizeof splits, "auto");
    char lanes[24] = "";
    if (p->lanes > 0) /* the CPU lane loop */
        snprintf(lanes, sizeof lanes, " lanes %d", p->lanes);
    snprintf(text, size, "%dx%d wg %d tiling %s splits %s%s", p->unroll_i, p->unroll_j,
             p->work_group_size, p->local_tiling ? "on" : "off", splits, lanes);
}

static void clear_bar(tune_view *view)
{
    if (view->bar_drawn) {
        fputs("\r\033[K", stderr);
        view->bar_drawn = 0;
    }
}

static int on_progress(const fk_tune_progress *progress, void *user)
{
    tune_view *view = user;
    const fk_tune_point *p = progress->point;
    if (p && p->outcome != FK_TUNE_MEASURED && !p->resumed) {
        char name[96];
        describe(p, name, sizeof name);
        clear_bar(view);
        fprintf(stderr, "forcekit: tune: N=%zu %s: %s\n", progress->n, name, p->note);
    }
    if (progress->finished) {
        const fk_tune_bucket_result *b = progress->finished;
        clear_bar(view);
        if (b->has_best) {
            char name[96];
            describe(&b->best, name, sizeof name);
            fprintf(stderr, "forcekit: tune: N=%zu: %s search, %zu of %zu tried; best %s, %.4g s\n",
                    b->n, search_token(b->search), b->tried_count, b->space_size, name,
                    b->best.seconds);
        } else {
            fprintf(stderr, "forcekit: tune: N=%zu: %s\n", b->n, b->note);
        }
    } else if (view->bar) {
        const size_t width = 30;
        const size_t planned = progress->planned ? progress->planned : 1;
        const size_t filled = progress->done >= planned ? width : width * progress->done / planned;
        char bar[64];
        memset(bar, '#', filled);
        memset(bar + filled, '.', width - filled);
        bar[width] = '\0';
        fprintf(stderr, "\r\033[K[%s] N=%zu (%zu/%zu) %zu/%zu %s best %.3g s  %.0f/%.0f s", bar,
                progress->n, progress->bucket_index + 1, progress->bucket_count, progress->done,
                progress->planned, search_token(progress->search), progress->best_seconds,
                progress->elapsed, progress->budget);
        fflush(stderr);
        view->bar_drawn = 1;
    }
    return interrupted != 0;
}

static cJSON *point_json(const fk_tune_point *p, size_t n, double flops)
{
    char unroll[CLI_UNROLL_NAME_SIZE];
    cli_unroll_name(p->unroll_i, p->unroll_j, unroll);
    cJSON *object = cJSON_CreateObject();
    cJSON_AddNumberToObject(object, "n", (double)n);
    cJSON_AddStringToObject(object, "unroll", unroll);
    cJSON_AddNumberToObject(object, "work_group_size", p->work_group_size);
    cJSON_AddBoolToObject(object, "local_tiling", p->local_tiling != 0);
    cJSON_AddNumberToObject(object, "j_splits", p->j_splits); /* 0: automatic */
    cJSON_AddNumberToObject(object, "effective_j_splits", p->effective_j_splits);
    cJSON_AddNumberToObject(object, "lanes", p->lanes); /* 0: the scalar template */
    cJSON_AddStringToObject(object, "outcome", outcome_token(p->outcome));
    const double rate = (double)n * (double)n / p->seconds;
    cli_json_number(object, "seconds_per_eval", p->seconds);
    cli_json_number(object, "confirmed_seconds", p->confirmed_seconds);
    cli_json_number(object, "interactions_per_second", rate);
    cli_json_number(object, "gflops", rate * flops / 1e9);
    cli_json_number(object, "error", p->error);
    cli_json_number(object, "tolerance", p->tolerance);
    cJSON_AddBoolToObject(object, "resumed", p->resumed != 0);
    if (p->note[0])
        cJSON_AddStringToObject(object, "note", p->note);
    return object;
}

static cJSON *bucket_json(const fk_tune_bucket_result *b, double flops)
{
    cJSON *object = cJSON_CreateObject();
    cJSON_AddNumberToObject(object, "n", (double)b->n);
    cJSON_AddNumberToObject(object, "bucket", (double)b->bucket);
    cJSON_AddStringToObject(object, "search", search_token(b->search));
    cJSON_AddNumberToObject(object, "space_size", (double)b->space_size);
    cJSON_AddNumberToObject(object, "tried_count", (double)b->tried_count);
    if (b->has_best)
        cJSON_AddItemToObject(object, "best", point_json(&b->best, b->n, flops));
    else
        cJSON_AddNullToObject(object, "best");
    cli_json_number(object, "untuned_seconds_per_eval", b->untuned_seconds);
    cli_json_number(object, "speedup", b->has_best ? b->untuned_seconds / b->best.seconds : NAN);
    cli_json_number(object, "seconds", b->seconds);
    cJSON_AddStringToObject(object, "note", b->note);
    return object;
}

/* The bucket whose best is the document's "best": the pinned one, else the largest N tuned. */
static const fk_tune_bucket_result *main_bucket(const fk_tune_result *result)
{
    const fk_tune_bucket_result *chosen = result->bucket_count ? &result->buckets[0] : NULL;
    for (size_t i = 0; i < result->bucket_count; ++i)
        if (result->buckets[i].has_best)
            chosen = &result->buckets[i];
    return chosen;
}

static const char *overall_search(const fk_tune_result *result)
{
    int sampled = 0, exhaustive = 0;
    for (size_t i = 0; i < result->bucket_count; ++i) {
        sampled |= result->buckets[i].search == FK_TUNE_SAMPLED;
        exhaustive |= result->buckets[i].search == FK_TUNE_EXHAUSTIVE;
    }
    return sampled ? "sampled" : exhaustive ? "exhaustive" : "skipped";
}

static int print_json(const fk_tune_result *result, const fk_context *context, double budget,
                      double flops)
{
    const fk_tune_bucket_result *primary = main_bucket(result);
    cJSON *document = cJSON_CreateObject();
    cJSON_AddStringToObject(document, "kernel", result->kernel);
    cJSON_AddStringToObject(document, "accum", result->accum);
    cJSON_AddNumberToObject(document, "n", primary ? (double)primary->n : 0);
    cJSON_AddStringToObject(document, "device", fk_context_device(context)->name);
    cJSON *keys = cJSON_AddObjectToObject(document, "device_keys");
    cJSON_AddStringToObject(keys, "type", result->device_type);
    cJSON_AddStringToObject(keys, "vendor", result->vendor);
    cJSON_AddStringToObject(keys, "architecture", result->architecture);
    cJSON_AddStringToObject(keys, "device", result->device);
    cJSON_AddStringToObject(document, "search", overall_search(result));
    if (primary && primary->has_best)
        cJSON_AddItemToObject(document, "best", point_json(&primary->best, primary->n, flops));
    else
        cJSON_AddNullToObject(document, "best");
    cJSON *tried = cJSON_AddArrayToObject(document, "tried");
    cJSON *buckets = cJSON_AddArrayToObject(document, "buckets");
    for (size_t i = 0; i < result->bucket_count; ++i) {
        const fk_tune_bucket_result *b = &result->buckets[i];
        for (size_t k = 0; k < b->tried_count; ++k)
            cJSON_AddItemToArray(tried, point_json(&b->tried[k], b->n, flops));
        cJSON_AddItemToArray(buckets, bucket_json(b, flops));
    }
    cJSON_AddNumberToObject(document, "budget_seconds", budget);
    cJSON_AddNumberToObject(document, "seconds", result->seconds);
    cJSON_AddBoolToObject(document, "interrupted", result->interrupted != 0);
    if (result->database[0])
        cJSON_AddStringToObject(document, "database", result->database);
    else
        cJSON_AddNullToObject(document, "database");
    return cli_print_json(document);
}

static void print_table(const fk_tune_result *result, const fk_context *context, double budget)
{
    printf("%s (%s) on %s [%s / %s / %s], budget %.0f s, %.1f s used\n", result->kernel,
           result->accum, fk_context_device(context)->name, result->vendor, result->architecture,
           result->device, budget, result->seconds);
    printf("%-8s %-10s %9s  %-42s %11s %11s %8s\n", "N", "SEARCH", "TRIED", "BEST", "S/EVAL",
           "UNTUNED S", "SPEEDUP");
    for (size_t i = 0; i < result->bucket_count; ++i) {
        const fk_tune_bucket_result *b = &result->buckets[i];
        char tried[32], best[96] = "-";
        snprintf(tried, sizeof tried, "%zu/%zu", b->tried_count, b->space_size);
        if (b->has_best)
            describe(&b->best, best, sizeof best);
        printf("%-8zu %-10s %9s  %-42s %11.4e %11.4e %8.2f\n", b->n, search_token(b->search), tried,
               best, b->has_best ? b->best.seconds : NAN, b->untuned_seconds,
               b->has_best ? b->untuned_seconds / b->best.seconds : NAN);
        if (b->search != FK_TUNE_EXHAUSTIVE && b->note[0])
            printf("         %s\n", b->note);
    }
    fflush(stdout);
}

int cmd_tune(int argc, char **argv)
{
    const char *kernel_name = NULL, *accum_name = "float", *device = NULL, *algorithm_name = NULL;
    long long n = 0, seed = 0;
    double budget = 600;
    int json = 0, help = 0;
    cli_option table[] = {
        cli_explained(cli_opt_kernel(&kernel_name), "force law"),
        cli_opt_accum(&accum_name),
        cli_explained(cli_string("algorithm", "L", &algorithm_name, NULL),
                      "the pair loop to tune: all-pairs (default), symmetric (unroll IxJ with\n"
                      "J <= I, work-group size), cells (placeholders per work-item,\n"
                      "work-group size, tiling) or neighbors (partners per unrolled step,\n"
                      "work-group size); entries are stored under the loop's name"),
        cli_int("n", "N", &n, 1, 1 << 30, "tune only the bucket holding N, measured at N"),
        cli_double("budget", "SECONDS", &budget, 0.001, 1e7,
                   "wall time for the whole run (default 600)"),
        cli_opt_seed(&seed, 0, CLI_MAX_SEED, "order of the sampled search (default: fixed)"),
        cli_opt_device(&device),
        cli_opt_json(&json),
        cli_opt_help(&help),
    };
    static const cli_usage usage = {"tune", tune_synopsis, 20, tune_usage_after};
    int usage_code = CLI_EXIT_OK;
    if (cli_parse_command(&usage, argc, argv, table, sizeof table / sizeof table[0], &usage_code))
        return usage_code;
    if (!kernel_name)
        return cli_usage_error("tune", "--kernel is required");
    const fk_kernel_info *kernel = NULL;
    const fk_accum_info *accum = NULL;
    if (cli_find_kernel("tune", kernel_name, &kernel) || cli_find_accum("tune", accum_name, &accum))
        return CLI_EXIT_USAGE;
    fk_algorithm algorithm = FK_ALGORITHM_ALL_PAIRS;
    if (cli_parse_algorithm("tune", algorithm_name, &algorithm))
        return CLI_EXIT_USAGE;
    if (algorithm == FK_ALGORITHM_AUTO)
        return cli_usage_error("tune",
                               "--algorithm auto: tune one pair loop at a time (all-pairs, cells "
                               "and neighbors at the same --n); auto then compares their entries");
    /* A database path naming a directory or a device is refused before the budget is spent
     * (the library refuses to store there too, and never moves such a thing aside). */
    const char *database = getenv("FORCEKIT_TUNING_DB");
    struct stat database_info;
    if (database && *database && strcasecmp(database, "off") != 0 &&
        stat(database, &database_info) == 0 && !S_ISREG(database_info.st_mode)) {
        cli_error("tune", "FORCEKIT_TUNING_DB=%s is not a regular file", database);
        return CLI_EXIT_USAGE;
    }

    fk_context *context = NULL;
    int code = cli_open_context(device, &context);
    /* cli_open_context has printed the warnings so far; later ones are printed after the run. */
    const size_t warnings_shown = context ? strlen(fk_context_warnings(context)) : 0;
    if (code == CLI_EXIT_OK && n)
        code = cli_check_fits_device(context, (size_t)n);
    if (code != CLI_EXIT_OK) {
        fk_context_destroy(context);
        return code;
    }
    tune_view view = {.bar = isatty(fileno(stderr))};
    fk_tune_config config = {.kernel = kernel->name,
                             .accum = accum->name,
                             .n = (size_t)n,
                             .budget_seconds = budget,
                             .seed = (uint64_t)seed,
                             .progress = on_progress,
                             .user = &view};
    signal(SIGINT, on_interrupt);
    fk_tune_result *result = NULL;
    fk_status status = fk__tune_run_loop(context, &config, (int)algorithm, &result);
    signal(SIGINT, SIG_DFL);
    clear_bar(&view);
    /* Warnings that arose while tuning (a database moved aside, a resume file not written). */
    const char *warnings = fk_context_warnings(context) + warnings_shown;
    for (const char *line = warnings; *line;) {
        size_t length = strcspn(line, "\n");
        fprintf(stderr, "forcekit: warning: %.*s\n", (int)length, line);
        line += length + (line[length] == '\n');
    }
    if (status != FK_OK) {
        code = cli_report_status(status, context);
        if (status == FK_ERR_IO) /* the database could not be written: a full disk is runtime */
            code = cli_write_exit_code(status);
        fk_context_destroy(context);
        return code;
    }
    if (result->interrupted) {
        cli_error("tune",
                  "interrupted; the points measured so far are kept in %s: run the same "
                  "command again to resume",
                  result->resume[0] ? result->resume : "(no resume file: FORCEKIT_TUNING_DB=off)");
        code = 130;
    } else if (!main_bucket(result) || !main_bucket(result)->has_best) {
        const fk_tune_bucket_result *b = main_bucket(result);
        if (b && b->search == FK_TUNE_SKIPPED) /* the reason was printed with the bucket */
            cli_error("tune", "nothing was measured within the budget of %g s", budget);
        else
            cli_error("tune", "no candidate could be measured on %s",
                      fk_context_device(context)->name);
        code = CLI_EXIT_RUNTIME;
    } else if (result->database[0]) {
        fprintf(stderr, "forcekit: tune: stored in %s\n", result->database);
    } else {
        fprintf(stderr, "forcekit: tune: not stored (FORCEKIT_TUNING_DB=off)\n");
    }
    if (code == CLI_EXIT_OK || code == 130) {
        int printed = json ? print_json(result, context, budget, kernel->flops_per_interaction)
                           : (print_table(result, context, budget), CLI_EXIT_OK);
        if (code == CLI_EXIT_OK)
            code = printed;
    }
    fk_tune_result_free(result);
    fk_context_destroy(context);
    return code;
}
