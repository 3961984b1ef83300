/*
 * forcekit tools: the file formats of docs/file-formats.md for programs that use the library:
 * particles as text (four column layouts) and TIPSY (either byte order), typed pair parameters,
 * exclusions, and forces written atomically. A library of its own (libforcekit_tools, CMake
 * target forcekit::forcekit_tools, pkg-config forcekit-tools) beside the force library, with its
 * own prefix fkt_; it uses only forcekit.h's API. Like the library it never prints and never
 * exits: errors come back as an fk_status and a message in the caller's buffer.
 */
#ifndef FORCEKIT_TOOLS_H
#define FORCEKIT_TOOLS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "forcekit/forcekit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Column layouts of the text particle format, one per family of kernels. */
typedef enum fkt_layout {
    FKT_LAYOUT_XYZM = 0,  /* ga:   x y z m */
    FKT_LAYOUT_XYZM_VEL,  /* gaj:  x y z m vx vy vz */
    FKT_LAYOUT_XYZQ_TYPE, /* ljc_*, buck: x y z q type */
    FKT_LAYOUT_XYZ_TYPE   /* lj:   x y z type */
} fkt_layout;

/* Owned particle arrays. Arrays a layout lacks are NULL. */
typedef struct fkt_particle_set {
    size_t count;
    double *position; /* 3 * count */
    double *mass;     /* count: mass or charge; NULL for FKT_LAYOUT_XYZ_TYPE */
    double *velocity; /* 3 * count or NULL */
    int *type;        /* count or NULL */
} fkt_particle_set;

typedef enum fkt_file_format {
    FKT_FORMAT_AUTO = 0,
    FKT_FORMAT_TEXT,
    FKT_FORMAT_TIPSY
} fkt_file_format;

/* Text lines longer than this are not data: "input too large" (an endless --in /dev/zero or a
 * 20 MB line must not take all memory). */
#define FKT_IO_MAX_LINE ((size_t)1 << 20)
/* Particles a file may hold: the kernels index them with int. */
#define FKT_IO_MAX_PARTICLES ((size_t)INT32_MAX)

/* getline with a bound: the next line (newline kept, NUL-terminated, NUL bytes inside kept) into
 * *line (grown as needed, at most FKT_IO_MAX_LINE + 1 bytes). Returns its length; -1 at the end
 * of the file or on a read error (ferror tells, errno set); -2 when the line is longer than
 * FKT_IO_MAX_LINE (errno EFBIG); -3 without memory (errno ENOMEM). */
long fkt_io_getline(char **line, size_t *capacity, FILE *file);

/* The layout a kernel reads ("ga" -> FKT_LAYOUT_XYZM). Returns -1 for an unknown kernel. */
int fkt_io_layout_for_kernel(const char *kernel);
unsigned fkt_io_layout_columns(fkt_layout layout);

/* Reads particles. FKT_FORMAT_AUTO picks TIPSY for names ending .bin or .tipsy, text otherwise.
 * On failure returns FK_ERR_IO (cannot open/read) or FK_ERR_PARSE (malformed), leaves *set empty,
 * and writes a message naming the file (and line for text) into error[error_size]. */
fk_status fkt_io_read_particles(const char *path, fkt_file_format format, fkt_layout layout,
                                fkt_particle_set *set, char *error, size_t error_size);
fk_status fkt_io_read_text(const char *path, fkt_layout layout, fkt_particle_set *set, char *error,
                           size_t error_size);
/* TIPSY: gas, dark and star records (mass and position; velocity too when the layout has it);
 * either byte order, detected from the header. */
fk_status fkt_io_read_tipsy(const char *path, fkt_layout layout, fkt_particle_set *set, char *error,
                            size_t error_size);

/* Allocates arrays for count particles of a layout (zeroed). */
fk_status fkt_particle_set_alloc(fkt_particle_set *set, fkt_layout layout, size_t count);
void fkt_particle_set_free(fkt_particle_set *set);
/* A read-only view for the library API. */
fk_particles fkt_particle_set_view(const fkt_particle_set *set);

/* Writes forces as text (docs/file-formats.md: one line per particle, %.17g, potential as a last
 * column when potentials is non-NULL). path NULL or "-" writes to stdout; otherwise as
 * fkt_io_write_atomic. */
fk_status fkt_io_write_forces(const char *path, size_t count, unsigned components,
                              const double *forces, const double *potentials, char *error,
                              size_t error_size);

/* Writes path (files.h): write_body(file, context) fills the output (returning 0, or nonzero
 * with errno set). A regular file is replaced atomically (temporary name in the same directory,
 * synced, renamed; it keeps its mode, a new one gets the umask's); a device or FIFO is written in
 * place; a symbolic link is written through; a read-only file or a directory is refused. On
 * failure nothing is left behind and error names the step: FK_ERR_INVALID_ARGUMENT for a refused
 * target (exit 2), FK_ERR_IO when writing failed (a full disk, exit 1). */
fk_status fkt_io_write_atomic(const char *path, int (*write_body)(FILE *file, const void *context),
                              const void *context, char *error, size_t error_size);

/* Pair parameters (--params, docs/file-formats.md): lines `a b p1 p2 ...` with `parameters` numbers
 * (fk_kernel_info.pair_parameters; format names them for messages, "a b epsilon sigma").
 * Symmetric: (a, b) also sets (b, a); a pair given twice with other values is an error naming
 * both lines. The table has max(at_least_types, largest type + 1) types, so that particle types
 * the file lacks show up as missing pairs (the library names them); unlisted pairs are absent. */
typedef struct fkt_pair_table_set {
    size_t types;
    unsigned parameters;
    double *values;         /* types * types * parameters */
    unsigned char *present; /* types * types */
} fkt_pair_table_set;
fk_status fkt_io_read_pair_table(const char *path, unsigned parameters, const char *format,
                                 size_t at_least_types, fkt_pair_table_set *set, char *error,
                                 size_t error_size);
void fkt_pair_table_set_free(fkt_pair_table_set *set);
fk_pair_table fkt_pair_table_set_view(const fkt_pair_table_set *set);

/* Exclusions (--exclude): lines `i j`, 0-based particle indices, '#' comments. particle_count
 * (0: unchecked) bounds the indices. *pairs (2 per exclusion, malloc'ed) and *count. */
fk_status fkt_io_read_exclusions(const char *path, size_t particle_count, size_t **pairs,
                                 size_t *count, char *error, size_t error_size);

#ifdef __cplusplus
}
#endif
#endif
