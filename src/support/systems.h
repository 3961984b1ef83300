/* The precision and simulation systems of `forcekit generate`: an LJ fluid and fcc crystal (van
 * Meel et al.), a fluorite ionic crystal (Boyarchenkov's 12-particle cells), Narumi et al.'s System
 * 1 (a 3,339-atom protein-like LJ + Coulomb cluster with exclusions) and System 2 (65,536 LJ
 * particles of 16 random types), and Maxwell-Boltzmann velocities. Every draw comes from the rand48
 * sequence of the seed (fkt_rand48, the glibc srand48 sequence), which the device generator
 * reproduces exactly, so a seed gives the same system on every platform and device. Internal to the
 * command and tests. */
#ifndef FK_SYSTEMS_H
#define FK_SYSTEMS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "forcekit/tools.h"

/* An LJ fluid: count particles in a cubic periodic box of side (count/density)^(1/3) on an fcc
 * lattice (the smallest fcc lattice with >= count sites, the first count sites), type 0, velocities
 * (set->velocity allocated, 3*count, even though the lj text layout has no velocity columns) drawn
 * Maxwell–Boltzmann at temperature from drand48 streams seeded by seed (Box–Muller), total momentum
 * removed and rescaled so the kinetic temperature is exactly `temperature` (k_B = m = 1, 3N-3
 * degrees of freedom). box[3] receives the side lengths. layout is FKT_LAYOUT_XYZ_TYPE (lj) or
 * FKT_LAYOUT_XYZQ_TYPE (charges 0). */
fk_status fkt_generate_lj_fluid(size_t count, double density, double temperature, uint64_t seed,
                                fkt_layout layout, fkt_particle_set *set, double box[3]);

/* Maxwell–Boltzmann velocities as above for any particle set with masses (NULL masses: 1).
 * Masses: set->mass where the set has no type array (the gravity layouts, whose 4th column is a
 * mass); sets with types (the molecular layouts, whose mass array holds charges) have unit masses.
 * Allocates set->velocity when NULL. The seed's low 32 bits seed srand48 (as glibc does); the
 * normals come from consecutive drand48 pairs, component by component in particle order. With
 * fewer than 2 particles or temperature 0 every velocity is 0. */
fk_status fkt_generate_velocities(fkt_particle_set *set, double temperature, uint64_t seed);

/* An fcc crystal: count sites of the smallest cubic fcc lattice (k^3 cells of 4) with
 * 4 k^3 >= count, in cell order, in a cube of side (count/density)^(1/3) (so the number density is
 * exactly `density`; when count < 4 k^3 the last cells are partly empty). Type 0, charge 0, no
 * velocities. box receives the side lengths. */
fk_status fkt_generate_fcc(size_t count, double density, fkt_layout layout, fkt_particle_set *set,
                           double box[3]);

/* A generated system with what the kernels need beside the particles. */
typedef struct fkt_system {
    fkt_particle_set particles;
    fkt_layout layout;
    fkt_pair_table_set params; /* types x types x parameters; parameters 0: none (plain LJ) */
    size_t *exclusions;        /* 2 per pair (i < j), or NULL */
    size_t exclusion_count;
    double box[3];     /* the crystal's, fluid's or random cube's sides; 0 for the protein */
    int periodic;      /* 1 when box is meant as a periodic box */
    double coulomb;    /* the Coulomb constant the parameters assume (--coulomb) */
    const char *units; /* for headers and JSON: "reduced", "eV, Angstrom, e", ... */
} fkt_system;

void fkt_system_free(fkt_system *system);

/* UO2 in the fluorite structure: count must be a positive multiple of 12 (whole unit cells, each
 * 4 U + 8 O, so the crystal is neutral with stoichiometry 1:2); the cells fill the smallest cube of
 * k^3 cells with 12 k^3 >= count, in cell order (periodic is set when they fill it). Lattice
 * constant 5.47 Angstrom; layout x y z q type, type 0 U (+4), type 1 O (-2): Morelon et al.,
 * Phil. Mag. 83 (2003) 1533, formal charges and Buckingham A, rho, C in eV and Angstrom (buck,
 * with --coulomb 14.399645 eV Angstrom / e^2). */
#define FKT_FLUORITE_LATTICE 5.47
#define FKT_FLUORITE_CHARGE_U 4.0
#define FKT_FLUORITE_CHARGE_O (-2.0)
#define FKT_COULOMB_EV_ANGSTROM 14.399645
fk_status fkt_generate_fluorite(size_t count, fkt_system *system);

/* Narumi et al.'s System 1 analogue: 3,339 atoms, a 2,715-atom solute of 181 residues of 15 atoms
 * (backbone N H CA HA C O and a 9-atom side chain; 20 acidic (-1) and 20 basic (+1) residues, the
 * rest aliphatic) placed along a self-avoiding walk on a cubic lattice of residue sites, and 208
 * SPC/E waters in a shell around it; typed LJ (AMBER parm99 and SPC/E) + Coulomb; exclusions: the
 * 1-2 and 1-3 pairs inside residues and waters. Non-excluded atoms are at least the sum of their
 * clash radii apart (heavy 1.35, hydrogen 0.9 Angstrom). Units: Angstrom, kcal/mol, e (Coulomb
 * k = 332.0637 kcal/mol Angstrom / e^2). See systems.c and docs/systems.md. */
#define FKT_PROTEIN_ATOMS 3339
#define FKT_PROTEIN_SOLUTE_ATOMS 2715
#define FKT_PROTEIN_WATERS 208
#define FKT_PROTEIN_CHARGED 20
#define FKT_PROTEIN_DENSITY 0.1  /* solute atoms per cubic Angstrom aimed at */
#define FKT_PROTEIN_STEP_MIN 4.5 /* Angstrom between consecutive residue centres */
#define FKT_PROTEIN_STEP_MAX 6.5
#define FKT_PROTEIN_ATTEMPTS 1000 /* placements tried before a chain break */
#define FKT_COULOMB_KCAL_ANGSTROM 332.0637
fk_status fkt_generate_protein(uint64_t seed, fkt_system *system);

/* Narumi et al.'s System 2: count (65,536 for the paper) LJ particles of 16 types, type uniform,
 * per-type epsilon uniform in [0.5, 1.5) and sigma in [0.8, 1.2) (Lorentz-Berthelot mixing),
 * positions uniform in a cube of side (count / density)^(1/3) by random sequential addition (no
 * pair closer than 0.8 sigma_ab). Charges 0 where the layout has them (System 2 is van der Waals
 * only). Reduced units; open boundaries (box holds the cube, for reference). */
#define FKT_LJ65536_ATOMS 65536
#define FKT_LJ65536_TYPES 16
#define FKT_LJ65536_DENSITY 0.5
#define FKT_LJ65536_MAX_DENSITY 1.0
#define FKT_LJ65536_EPSILON_MIN 0.5
#define FKT_LJ65536_EPSILON_MAX 1.5
#define FKT_LJ65536_SIGMA_MIN 0.8
#define FKT_LJ65536_SIGMA_MAX 1.2
#define FKT_LJ65536_MIN_DISTANCE 0.8
fk_status fkt_generate_lj65536(size_t count, double density, uint64_t seed, fkt_layout layout,
                               fkt_system *system);

/* Text writers (docs/file-formats.md): each header line becomes a '#' comment; values %.17g. Return
 * 0, or -1 on a write error. Particles in the layout's columns; velocities `vx vy vz`; a pair table
 * `a b p1 p2 ...` for a <= b; exclusions `i j`. */
int fkt_system_write_particles(FILE *file, const fkt_particle_set *set, fkt_layout layout,
                               const char *header);
int fkt_system_write_velocities(FILE *file, const fkt_particle_set *set, const char *header);
int fkt_system_write_params(FILE *file, const fkt_pair_table_set *table, const char *header);
int fkt_system_write_exclusions(FILE *file, const size_t *pairs, size_t count, const char *header);

/* The smallest distance between two particles of a set, open boundaries; O(N^2), for tests. */
double fkt_system_min_distance(const fkt_particle_set *set);

#endif
