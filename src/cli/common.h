/* What the commands share: exit codes, error reports, opening the device, names of kernels,
 * accumulators and variants, JSON output, small statistics. */
#ifndef FK_CLI_COMMON_H
#define FK_CLI_COMMON_H

#include <stddef.h>

#include <cJSON.h>

#include "forcekit/forcekit.h"
#include "forcekit/tools.h"
#include "cli/options.h"

#if defined(__GNUC__)
#define CLI_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define CLI_PRINTF(fmt, args)
#endif

/* The largest seed: JSON numbers are doubles, and seeds above 2^53 would be reported inexactly. */
#define CLI_MAX_SEED 9007199254740992.0

/* Exit codes (docs/cli.md). */
enum { CLI_EXIT_OK = 0, CLI_EXIT_RUNTIME = 1, CLI_EXIT_USAGE = 2 };

/* The one place a library status becomes an exit code: bad input and bad usage are 2, everything
 * the user cannot fix by changing the command line (OpenCL, build, memory, installation) is 1. */
int cli_exit_code(fk_status status);
/* The same for writing an output (files.h): a refused target (read-only, a directory) is 2, a
 * failure while writing (a full disk) is a runtime failure, 1. */
int cli_write_exit_code(fk_status status);

/* Prints `forcekit: WHAT: DETAIL` on stderr. */
void cli_error(const char *what, const char *format, ...) CLI_PRINTF(2, 3);

/* Reports a library failure as `forcekit: STATUS: DETAIL`, the detail being context's last error
 * (a build log, the OpenCL call, the devices there are) when there is one, and returns the exit
 * code. context may be NULL. */
int cli_report_status(fk_status status, const fk_context *context);

/* Creates a context on the device selector (NULL: $FORCEKIT_DEVICE, else the default device) and
 * prints its warnings (an ignored corrupt tuning database) on stderr. On failure reports it and
 * returns the exit code with *context NULL. */
int cli_open_context(const char *device, fk_context **context);
/* The same with fk_context_config.device_timing (fk_device_timing). */
int cli_open_context_timed(const char *device, int device_timing, fk_context **context);

/* Opens the device (cli_open_context) and Taufer's suite (support/suite.h) on it, for sumtest and
 * doundo. On failure reports it and returns the exit code with both NULL. */
struct fkt_suite;
int cli_open_suite(const char *device, fk_context **context, struct fkt_suite **suite);
/* The end of such a run: reports a failed status (the document is dropped) or, with json, prints
 * the document; then closes the suite and the device. Returns the exit code. */
int cli_close_suite(fk_status status, int json, cJSON *document, fk_context *context,
                    struct fkt_suite *suite);

/* A synthetic system of count particles must fit the device (a float4 per particle) before it is
 * generated, so that an absurd --n fails at once instead of exhausting host memory. Reports and
 * returns 1 when it does not fit, else 0. */
int cli_check_fits_device(const fk_context *context, size_t count);

/* Looks a kernel or an accumulator name up in the library's registry. An unknown name is reported
 * with the names there are and gives 2. */
int cli_find_kernel(const char *command, const char *name, const fk_kernel_info **kernel);
int cli_find_accum(const char *command, const char *name, const fk_accum_info **accum);

/* Gravity kernels (positions and masses, F = m a) as opposed to the molecular ones. */
int cli_kernel_is_gravity(const char *kernel);

/* --format: "auto" (or NULL), "text" or "tipsy". Returns 1 when valid. */
int cli_parse_format(const char *text, fkt_file_format *format);

#define CLI_UNROLL_NAME_SIZE 16

/* --algorithm: "all-pairs" (or NULL), "symmetric" or "cells". Reports a usage error naming the
 * command and returns 2 when unknown, else 0. */
int cli_parse_algorithm(const char *command, const char *text, fk_algorithm *algorithm);
/* --lists: "half", "full" or "auto" (or NULL) into an fk_neighbor_lists value; reports a usage
 * error naming the command and returns its exit code otherwise. */
int cli_parse_lists(const char *command, const char *text, int *lists);
/* --positions: "float" (or NULL) or "ds" into an fk_positions value (fk_eval_config.positions);
 * reports a usage error naming the command and returns its exit code otherwise. */
int cli_parse_positions(const char *command, const char *text, int *positions);
/* --device-timing: on or off into *timing (fk_device_timing); NULL text gives fallback. Exit 2
 * with the reason for anything else. */
int cli_parse_device_timing(const char *command, const char *text, int fallback, int *timing);
extern const char cli_positions_usage[];
void cli_unroll_name(int unroll_i, int unroll_j, char name[CLI_UNROLL_NAME_SIZE]);

/* Where a variant came from: a stable token for JSON ("default", "user_db", "shipped_db") and
 * words for people ("built-in default", "user tuning database"). */
const char *cli_variant_source_token(fk_variant_source source);
const char *cli_variant_source_text(fk_variant_source source);
/* Says on stderr why the variant was narrowed (fk_eval_variant_note), when it was; and the same
 * as "variant_note" in a JSON document (nothing when there is none). */
void cli_note_variant(const fk_eval *eval);
void cli_json_variant_note(cJSON *object, const fk_eval *eval);

/* Prints a JSON document on stdout followed by a newline, then deletes it. Returns 0, or 1 when
 * it could not be printed. A NULL document (cJSON out of memory) is reported too. */
int cli_print_json(cJSON *document);

/* Adds a number, or null when it is not finite (JSON has no NaN). */
void cli_json_number(cJSON *object, const char *key, double value);

/* The current time as UTC ISO-8601, "2024-05-01T12:00:00Z". */
#define CLI_TIMESTAMP_SIZE 32
void cli_utc_timestamp(char text[CLI_TIMESTAMP_SIZE]);

/* XXH3-64 of the bytes of count doubles, as 16 lowercase hex digits: a fingerprint of results that
 * must be bit-identical (reproducible mode, across devices). */
#define CLI_CHECKSUM_SIZE 17
void cli_checksum(const double *values, size_t count, char text[CLI_CHECKSUM_SIZE]);

/* For an evaluation created with config.reproducible: prints on stderr whether its results can be
 * bit-identical across devices, and why not. */
void cli_note_reproducible(const fk_eval *eval, const char *device_name);

#endif
