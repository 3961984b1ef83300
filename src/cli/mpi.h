/* The command under mpirun (issue #20): `mpirun -np P forcekit forces ...`. Built with MPI when
 * CMake found it (FK_CLI_MPI); without it the functions say "one process". */
#ifndef FK_CLI_MPI_H
#define FK_CLI_MPI_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "forcekit/forcekit.h"
#include "support/simulate.h"

/* main: MPI_Init when the process was started by an MPI launcher (Open MPI's, MPICH's Hydra,
 * PMIx); cli_mpi_finish(exit code) at exit: MPI_Finalize, or MPI_Abort for a failure. */
void cli_mpi_start(int *argc, char ***argv);
void cli_mpi_finish(int code);
/* 1 under an MPI launcher (even with one rank), else 0; this rank and the rank count. */
int cli_mpi_active(void);
int cli_mpi_rank(void);
int cli_mpi_ranks(void);
/* The device for this rank when none was named (--device, $FORCEKIT_DEVICE): ranks on one node
 * take the node's GPUs (else CPUs) by local rank, modulo their number. Writes the selector into
 * selector (size 32) and returns it, or NULL to leave the choice to the default. */
const char *cli_mpi_device(char *selector);

/* simulate under mpirun: the forces of every step from libforcekit_mpi, each rank computing its
 * share. The device path (config.device): fk_mpi_integrator, each rank stepping its slab on its
 * own device; the host path: every rank integrating all particles the same way (replicated
 * data). NULL without MPI. */
const fkt_sim_backend *cli_mpi_sim_backend(void);
/* The halo's margin the device path's fk_mpi_integrator takes (simulate --halo-margin; 0: the
 * library's default). Nothing without MPI. */
void cli_mpi_set_halo_margin(double margin);
/* Collective under mpirun: rank 0's count on every rank (the step loop's chunks, which every
 * rank must step alike); count itself otherwise. */
uint64_t cli_mpi_rank0_count(uint64_t count);
/* Collective: the JSON "mpi" object {"ranks", "per_rank": [...], "integrate"; the device path
 * adds "redistributions", "rebuilds", "rescales"} of the simulation's evaluation or integrator
 * on rank 0 (NULL elsewhere, on failure, or without MPI). */
cJSON *cli_mpi_sim_figures(void);
#ifdef FK_CLI_MPI
struct fk_mpi_eval;
/* Collective: the same object for any distributed evaluation. */
cJSON *cli_mpi_figures_json(struct fk_mpi_eval *eval);
/* Collective: the distributed evaluation of config with the pair table (NULL: none) and the
 * exclusions applied to it, refused in the spatial scheme (their indices are global) and when
 * the ranks read different tables or exclusions; on
 * failure *out is NULL and message (size bytes) says why, the same on every rank. */
fk_status cli_mpi_eval_open(fk_context *context, const fk_eval_config *config,
                            const fk_pair_table *table, const size_t *exclusions,
                            size_t exclusion_count, struct fk_mpi_eval **out, char *message,
                            size_t size);
#endif

#endif
