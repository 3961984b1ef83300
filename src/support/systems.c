/* The systems of `forcekit generate` (see systems.h). Every random draw is a drand48 value of the
 * seed's sequence (fkt_rand48), so a system is the same on every platform. */
#include "support/systems.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/rand48.h"

static const double pi = 3.14159265358979323846;

/* The seed's low 32 bits, as srand48 takes them. */
static void seed_stream(fkt_rand48 *r, uint64_t seed)
{
    fkt_rand48_seed(r, (long)(seed & UINT64_C(0xFFFFFFFF)));
}

/* ---- fcc lattice, LJ fluid, velocities --------------------------------------------------------
 */

static size_t fcc_cells_per_side(size_t count)
{
    size_t k = (size_t)ceil(cbrt((double)count / 4.0));
    if (k == 0)
        k = 1;
    while (4 * k * k * k < count)
        k++;
    while (k > 1 && 4 * (k - 1) * (k - 1) * (k - 1) >= count)
        k--;
    return k;
}

static int layout_molecular(fkt_layout layout)
{
    return layout == FKT_LAYOUT_XYZ_TYPE || layout == FKT_LAYOUT_XYZQ_TYPE;
}

fk_status fkt_generate_fcc(size_t count, double density, fkt_layout layout, fkt_particle_set *set,
                           double box[3])
{
    if (!set)
        return FK_ERR_INVALID_ARGUMENT;
    memset(set, 0, sizeof *set);
    if (count == 0 || !isfinite(density) || density <= 0.0 || !layout_molecular(layout))
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = fkt_particle_set_alloc(set, layout, count);
    if (status != FK_OK)
        return status;
    const double side = cbrt((double)count / density);
    const size_t k = fcc_cells_per_side(count);
    const double cell = side / (double)k;
    /* The four sites of a cell, shifted by a quarter cell so that no site lies on the box's faces
     * (minimum-image codes then never see a site at exactly +L/2). */
    static const double basis[4][3] = {
        {0.25, 0.25, 0.25}, {0.75, 0.75, 0.25}, {0.75, 0.25, 0.75}, {0.25, 0.75, 0.75}};
    for (size_t i = 0; i < count; i++) {
        size_t c = i / 4, b = i % 4;
        size_t index[3] = {c % k, (c / k) % k, c / (k * k)};
        for (int d = 0; d < 3; d++)
            set->position[3 * i + d] = ((double)index[d] + basis[b][d]) * cell;
        set->type[i] = 0;
        if (set->mass)
            set->mass[i] = 0.0;
    }
    if (box)
        box[0] = box[1] = box[2] = side;
    return FK_OK;
}

fk_status fkt_generate_velocities(fkt_particle_set *set, double temperature, uint64_t seed)
{
    if (!set || set->count == 0 || !set->position || !isfinite(temperature) || temperature < 0.0)
        return FK_ERR_INVALID_ARGUMENT;
    const size_t n = set->count;
    if (!set->velocity) {
        set->velocity = calloc(3 * n, sizeof(double));
        if (!set->velocity)
            return FK_ERR_HOST_MEMORY;
    }
    /* Molecular sets carry charges in the mass array: their masses are 1. */
    const double *mass = set->type ? NULL : set->mass;
    for (size_t i = 0; i < n; i++)
        if (mass && !(mass[i] > 0.0 && isfinite(mass[i])))
            return FK_ERR_INVALID_ARGUMENT;

    /* Box-Muller on consecutive drand48 pairs: 1 - u is in (0, 1], so the log is finite. Each
     * pair gives two normals (cos and sin), consumed component by component. */
    fkt_rand48 r;
    seed_stream(&r, seed);
    const size_t components = 3 * n;
    for (size_t c = 0; c < components; c += 2) {
        double u1 = fkt_rand48_drand(&r), u2 = fkt_rand48_drand(&r);
        double radius = sqrt(-2.0 * log(1.0 - u1));
        set->velocity[c] = radius * cos(2.0 * pi * u2);
        if (c + 1 < components)
            set->velocity[c + 1] = radius * sin(2.0 * pi * u2);
    }
    /* Each component scaled by 1/sqrt(m) (the Maxwell-Boltzmann width), then the centre-of-mass
     * motion removed and the kinetic temperature set exactly. */
    double momentum[3] = {0, 0, 0}, total_mass = 0.0;
    for (size_t i = 0; i < n; i++) {
        double m = mass ? mass[i] : 1.0;
        total_mass += m;
        for (int d = 0; d < 3; d++) {
            set->velocity[3 * i + d] /= sqrt(m);
            momentum[d] += m * set->velocity[3 * i + d];
        }
    }
    double twice_kinetic = 0.0;
    for (size_t i = 0; i < n; i++) {
        double m = mass ? mass[i] : 1.0;
        for (int d = 0; d < 3; d++) {
            set->velocity[3 * i + d] -= momentum[d] / total_mass;
            twice_kinetic += m * set->velocity[3 * i + d] * set->velocity[3 * i + d];
        }
    }
    const double degrees = 3.0 * (double)n - 3.0;
    double scale = 0.0;
    if (n >= 2 && temperature > 0.0 && twice_kinetic > 0.0)
        scale = sqrt(temperature * degrees / twice_kinetic);
    for (size_t c = 0; c < components; c++)
        set->velocity[c] *= scale;
    return FK_OK;
}

fk_status fkt_generate_lj_fluid(size_t count, double density, double temperature, uint64_t seed,
                                fkt_layout layout, fkt_particle_set *set, double box[3])
{
    if (!set)
        return FK_ERR_INVALID_ARGUMENT;
    memset(set, 0, sizeof *set);
    if (!isfinite(temperature) || temperature < 0.0)
        return FK_ERR_INVALID_ARGUMENT;
    fk_status status = fkt_generate_fcc(count, density, layout, set, box);
    if (status == FK_OK)
        status = fkt_generate_velocities(set, temperature, seed);
    if (status != FK_OK)
        fkt_particle_set_free(set);
    return status;
}

/* ---- systems with parameters ------------------------------------------------------------------
 */

void fkt_system_free(fkt_system *system)
{
    if (!system)
        return;
    fkt_particle_set_free(&system->particles);
    fkt_pair_table_set_free(&system->params);
    free(system->exclusions);
    memset(system, 0, sizeof *system);
}

/* A pair table of `types` types and `parameters` numbers a pair, every pair present. */
static fk_status table_alloc(fkt_pair_table_set *table, size_t types, unsigned parameters)
{
    memset(table, 0, sizeof *table);
    table->values = calloc(types * types * parameters, sizeof *table->values);
    table->present = malloc(types * types);
    if (!table->values || !table->present) {
        fkt_pair_table_set_free(table);
        return FK_ERR_HOST_MEMORY;
    }
    memset(table->present, 1, types * types);
    table->types = types;
    table->parameters = parameters;
    return FK_OK;
}

/* Lorentz-Berthelot mixing (AMBER's too): epsilon_ab = sqrt(epsilon_a epsilon_b), sigma_ab =
 * (sigma_a + sigma_b) / 2. */
static void table_mix_lj(fkt_pair_table_set *table, const double *epsilon, const double *sigma)
{
    const size_t types = table->types;
    for (size_t a = 0; a < types; a++)
        for (size_t b = 0; b < types; b++) {
            double *v = table->values + (a * types + b) * 2;
            v[0] = sqrt(epsilon[a] * epsilon[b]);
            v[1] = 0.5 * (sigma[a] + sigma[b]);
        }
}

/* ---- a uniform grid for "is anything within d of this point" ----------------------------------
 */

typedef struct grid {
    double origin[3], cell;
    size_t dims[3];
    long *head; /* per cell: last point inserted, -1 none */
    long *next; /* per point: the one inserted before it in the same cell */
    const double *points;
} grid;

static fk_status grid_init(grid *g, const double lower[3], const double upper[3], double cell,
                           size_t capacity, const double *points)
{
    memset(g, 0, sizeof *g);
    g->cell = cell;
    g->points = points;
    size_t cells = 1;
    for (int d = 0; d < 3; d++) {
        g->origin[d] = lower[d];
        g->dims[d] = (size_t)((upper[d] - lower[d]) / cell) + 1;
        cells *= g->dims[d];
    }
    g->head = malloc(cells * sizeof *g->head);
    g->next = malloc((capacity ? capacity : 1) * sizeof *g->next);
    if (!g->head || !g->next) {
        free(g->head);
        free(g->next);
        return FK_ERR_HOST_MEMORY;
    }
    for (size_t c = 0; c < cells; c++)
        g->head[c] = -1;
    return FK_OK;
}

static void grid_free(grid *g)
{
    free(g->head);
    free(g->next);
}

static size_t grid_coordinate(const grid *g, int d, double x)
{
    double c = floor((x - g->origin[d]) / g->cell);
    if (c < 0)
        return 0;
    if (c >= (double)g->dims[d])
        return g->dims[d] - 1;
    return (size_t)c;
}

static void grid_insert(grid *g, size_t index)
{
    const double *p = g->points + 3 * index;
    size_t c =
        grid_coordinate(g, 0, p[0]) +
        g->dims[0] * (grid_coordinate(g, 1, p[1]) + g->dims[1] * grid_coordinate(g, 2, p[2]));
    g->next[index] = g->head[c];
    g->head[c] = (long)index;
}

/* Calls too_close(other, squared distance, data) for every stored point within one cell of p
 * (the cell is at least the largest distance asked about); returns 1 at the first that says so. */
static int grid_any(const grid *g, const double p[3],
                    int (*too_close)(size_t other, double distance2, const void *data),
                    const void *data)
{
    size_t low[3], high[3];
    for (int d = 0; d < 3; d++) {
        size_t c = grid_coordinate(g, d, p[d]);
        low[d] = c > 0 ? c - 1 : 0;
        high[d] = c + 1 < g->dims[d] ? c + 1 : c;
    }
    for (size_t z = low[2]; z <= high[2]; z++)
        for (size_t y = low[1]; y <= high[1]; y++)
            for (size_t x = low[0]; x <= high[0]; x++)
                for (long j = g->head[x + g->dims[0] * (y + g->dims[1] * z)]; j >= 0;
                     j = g->next[j]) {
                    const double *q = g->points + 3 * (size_t)j;
                    double dx = p[0] - q[0], dy = p[1] - q[1], dz = p[2] - q[2];
                    if (too_close((size_t)j, dx * dx + dy * dy + dz * dz, data))
                        return 1;
                }
    return 0;
}

/* A uniformly random rotation (Shoemake's unit quaternion from three uniforms). */
static void random_rotation(fkt_rand48 *r, double m[3][3])
{
    double u1 = fkt_rand48_drand(r), u2 = fkt_rand48_drand(r), u3 = fkt_rand48_drand(r);
    double a = sqrt(1.0 - u1), b = sqrt(u1);
    double x = a * sin(2 * pi * u2), y = a * cos(2 * pi * u2);
    double z = b * sin(2 * pi * u3), w = b * cos(2 * pi * u3);
    m[0][0] = 1 - 2 * (y * y + z * z);
    m[0][1] = 2 * (x * y - z * w);
    m[0][2] = 2 * (x * z + y * w);
    m[1][0] = 2 * (x * y + z * w);
    m[1][1] = 1 - 2 * (x * x + z * z);
    m[1][2] = 2 * (y * z - x * w);
    m[2][0] = 2 * (x * z - y * w);
    m[2][1] = 2 * (y * z + x * w);
    m[2][2] = 1 - 2 * (x * x + y * y);
}

/* ---- fluorite (UO2) ----------------------------------------------------------------------------
 */

fk_status fkt_generate_fluorite(size_t count, fkt_system *system)
{
    if (!system)
        return FK_ERR_INVALID_ARGUMENT;
    memset(system, 0, sizeof *system);
    if (count == 0 || count % 12 != 0)
        return FK_ERR_INVALID_ARGUMENT;
    const size_t cells = count / 12;
    size_t k = (size_t)ceil(cbrt((double)cells));
    while (k * k * k < cells)
        k++;
    while (k > 1 && (k - 1) * (k - 1) * (k - 1) >= cells)
        k--;
    fk_status status = fkt_particle_set_alloc(&system->particles, FKT_LAYOUT_XYZQ_TYPE, count);
    if (status == FK_OK)
        status = table_alloc(&system->params, 2, 3);
    if (status != FK_OK) {
        fkt_system_free(system);
        return status;
    }
    system->layout = FKT_LAYOUT_XYZQ_TYPE;
    /* U at the fcc sites of the cell, O on the simple cubic sublattice at the quarter points. The
     * whole crystal is shifted by a/8 so that no ion sits on the box's faces. */
    const double a = FKT_FLUORITE_LATTICE;
    static const double uranium[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
    fkt_particle_set *set = &system->particles;
    size_t i = 0;
    for (size_t c = 0; c < cells; c++) {
        size_t cell[3] = {c % k, (c / k) % k, c / (k * k)};
        for (int u = 0; u < 4; u++, i++) {
            for (int d = 0; d < 3; d++)
                set->position[3 * i + d] = ((double)cell[d] + uranium[u][d] + 0.125) * a;
            set->mass[i] = FKT_FLUORITE_CHARGE_U;
            set->type[i] = 0;
        }
        for (int o = 0; o < 8; o++, i++) {
            for (int d = 0; d < 3; d++)
                set->position[3 * i + d] =
                    ((double)cell[d] + ((o >> d) & 1 ? 0.75 : 0.25) + 0.125) * a;
            set->mass[i] = FKT_FLUORITE_CHARGE_O;
            set->type[i] = 1;
        }
    }
    /* Morelon et al. (2003): A, rho, C per pair (eV, Angstrom); U-U is Coulomb only (buck needs
     * rho > 0, so rho = 1 with A = C = 0). */
    static const double pairs[2][2][3] = {{{0.0, 1.0, 0.0}, {566.498, 0.42056, 0.0}},
                                          {{566.498, 0.42056, 0.0}, {11272.6, 0.1363, 134.0}}};
    memcpy(system->params.values, pairs, sizeof pairs);
    for (int d = 0; d < 3; d++)
        system->box[d] = (double)k * a;
    system->periodic = cells == k * k * k;
    system->coulomb = FKT_COULOMB_EV_ANGSTROM;
    system->units = "eV, Angstrom, e";
    return FK_OK;
}

/* ---- the protein (Narumi's System 1 analogue) --------------------------------------------------
 */

/* Atom types, AMBER parm99 van der Waals parameters (R*, epsilon in kcal/mol: sigma = 2 R* /
 * 2^(1/6)) for the solute, SPC/E for the water. */
enum { T_N, T_H, T_CT, T_HC, T_C, T_O, T_O2, T_OW, T_HW, PROTEIN_TYPES };
static const double protein_rstar[PROTEIN_TYPES] = {1.8240, 0.6000, 1.9080, 1.4870, 1.9080,
                                                    1.6612, 1.6612, 0.0,    0.0};
static const double protein_epsilon[PROTEIN_TYPES] = {0.1700, 0.0157, 0.1094, 0.0157, 0.0860,
                                                      0.2100, 0.2100, 0.1553, 0.0};
#define SPCE_SIGMA 3.166
#define SPCE_CHARGE_O (-0.8476)
#define SPCE_OH 1.0
#define SPCE_ANGLE 109.47

/* Clash radii: no two atoms that are not an excluded (1-2 or 1-3) pair come closer than the sum
 * of theirs: heavy-heavy 2.7, heavy-H 2.25, H-H 1.8 Angstrom. */
static double clash_radius(int type)
{
    return (type == T_H || type == T_HC || type == T_HW) ? 0.9 : 1.35;
}

enum { RESIDUE_ATOMS = 15, SIDE_ALIPHATIC = 0, SIDE_ACID, SIDE_BASE };

/* A residue by internal coordinates: atom i bonded to `parent`, with the angle (i, parent, angle)
 * and the dihedral (i, parent, angle, dihedral) in degrees; torsion names which random torsion is
 * added to `dihedral` (0 none, 1 phi-like on the amide H, 2 psi-like on O, 3 chi1, 4 chi2, 5
 * chi3). Atoms 12-14 depend on the side chain. */
typedef struct zatom {
    int type;
    int parent, angle_atom, dihedral_atom;
    double bond, angle, dihedral;
    int torsion;
    double charge;
} zatom;

static void residue_template(int side, zatom atoms[RESIDUE_ATOMS])
{
    /* Backbone N, CA, C, O, H, HA (charges sum to 0), then CB, HB1, HB2, CG, HG1, HG2. */
    const zatom backbone[12] = {
        {T_N, -1, -1, -1, 0, 0, 0, 0, -0.42},         /* N */
        {T_CT, 0, -1, -1, 1.458, 0, 0, 0, 0.04},      /* CA */
        {T_C, 1, 0, -1, 1.525, 111.2, 0, 0, 0.60},    /* C */
        {T_O, 2, 1, 0, 1.229, 120.5, 0, 2, -0.57},    /* O */
        {T_H, 0, 1, 2, 1.010, 119.0, 0, 1, 0.27},     /* H */
        {T_HC, 1, 0, 2, 1.090, 109.5, -118, 0, 0.08}, /* HA */
        {T_CT, 1, 0, 2, 1.530, 110.5, 122, 0, -0.06}, /* CB */
        {T_HC, 6, 1, 0, 1.090, 109.5, 120, 3, 0.03},  /* HB1 */
        {T_HC, 6, 1, 0, 1.090, 109.5, -120, 3, 0.03}, /* HB2 */
        {T_CT, 6, 1, 0, 1.530, 114.0, 0, 3, -0.06},   /* CG */
        {T_HC, 9, 6, 1, 1.090, 109.5, 120, 4, 0.03},  /* HG1 */
        {T_HC, 9, 6, 1, 1.090, 109.5, -120, 4, 0.03}, /* HG2 */
    };
    memcpy(atoms, backbone, sizeof backbone);
    if (side == SIDE_ALIPHATIC) { /* CD H2: the chain's end */
        atoms[12] = (zatom){T_CT, 9, 6, 1, 1.530, 112.0, 0, 4, -0.06};
        atoms[13] = (zatom){T_HC, 12, 9, 6, 1.090, 109.5, 0, 5, 0.03};
        atoms[14] = (zatom){T_HC, 12, 9, 6, 1.090, 109.5, 120, 5, 0.03};
    } else if (side == SIDE_ACID) { /* carboxylate CD OD1 OD2, charge -1 */
        atoms[12] = (zatom){T_C, 9, 6, 1, 1.520, 112.0, 0, 4, 0.70};
        atoms[13] = (zatom){T_O2, 12, 9, 6, 1.250, 118.0, 0, 5, -0.85};
        atoms[14] = (zatom){T_O2, 12, 9, 6, 1.250, 118.0, 180, 5, -0.85};
    } else { /* amine NZ HZ1 HZ2 with a polarized CG H2, charge +1 */
        atoms[9].charge = 0.10;
        atoms[10].charge = atoms[11].charge = 0.10;
        atoms[12] = (zatom){T_N, 9, 6, 1, 1.470, 112.0, 0, 4, -0.30};
        atoms[13] = (zatom){T_H, 12, 9, 6, 1.010, 109.5, 0, 5, 0.50};
        atoms[14] = (zatom){T_H, 12, 9, 6, 1.010, 109.5, 120, 5, 0.50};
    }
}

static void sub3(const double *a, const double *b, double *out)
{
    for (int d = 0; d < 3; d++)
        out[d] = a[d] - b[d];
}

static void cross3(const double *a, const double *b, double *out)
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

static void normalize3(double *v)
{
    double n = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    for (int d = 0; d < 3; d++)
        v[d] /= n;
}

/* Places d bonded to c at `bond`, angle (d, c, b), dihedral (d, c, b, a) (the NeRF
 * construction). */
static void place_atom(const double *a, const double *b, const double *c, double bond, double angle,
                       double dihedral, double *d)
{
    double bc[3], ab[3], n[3], m[3];
    sub3(c, b, bc);
    normalize3(bc);
    sub3(b, a, ab);
    cross3(ab, bc, n);
    normalize3(n);
    cross3(n, bc, m);
    const double theta = angle * pi / 180.0, phi = dihedral * pi / 180.0;
    const double x = -bond * cos(theta), y = bond * sin(theta) * cos(phi),
                 z = bond * sin(theta) * sin(phi);
    for (int k = 0; k < 3; k++)
        d[k] = c[k] + x * bc[k] + y * m[k] + z * n[k];
}

/* The 1-2 and 1-3 pairs of a residue (i < j), from its bond tree. Returns how many. */
static size_t residue_exclusions(const zatom atoms[RESIDUE_ATOMS], size_t pairs[][2])
{
    int bonded[RESIDUE_ATOMS][RESIDUE_ATOMS] = {{0}};
    for (int i = 1; i < RESIDUE_ATOMS; i++)
        bonded[i][atoms[i].parent] = bonded[atoms[i].parent][i] = 1;
    size_t count = 0;
    for (int i = 0; i < RESIDUE_ATOMS; i++)
        for (int j = i + 1; j < RESIDUE_ATOMS; j++) {
            int excluded = bonded[i][j];
            for (int k = 0; k < RESIDUE_ATOMS && !excluded; k++)
                excluded = bonded[i][k] && bonded[k][j];
            if (excluded) {
                pairs[count][0] = (size_t)i;
                pairs[count][1] = (size_t)j;
                count++;
            }
        }
    return count;
}

/* A conformation in the residue's own frame, centred on its centroid: the random torsions are
 * phi-like and psi-like uniform, chi1 and chi2 a staggered rotamer (-60, 60, 180) +- 15 degrees,
 * chi3 uniform. */
static void build_residue(fkt_rand48 *r, const zatom atoms[RESIDUE_ATOMS],
                          double xyz[RESIDUE_ATOMS][3])
{
    double torsion[6] = {0};
    torsion[1] = 360.0 * fkt_rand48_drand(r);
    torsion[2] = 360.0 * fkt_rand48_drand(r);
    for (int t = 3; t <= 4; t++)
        torsion[t] =
            -60.0 + 120.0 * floor(3.0 * fkt_rand48_drand(r)) + 30.0 * (fkt_rand48_drand(r) - 0.5);
    torsion[5] = 360.0 * fkt_rand48_drand(r);
    xyz[0][0] = xyz[0][1] = xyz[0][2] = 0.0;
    xyz[1][0] = atoms[1].bond;
    xyz[1][1] = xyz[1][2] = 0.0;
    const double theta = atoms[2].angle * pi / 180.0;
    xyz[2][0] = xyz[1][0] - atoms[2].bond * cos(theta);
    xyz[2][1] = atoms[2].bond * sin(theta);
    xyz[2][2] = 0.0;
    for (int i = 3; i < RESIDUE_ATOMS; i++) {
        const zatom *z = &atoms[i];
        place_atom(xyz[z->dihedral_atom], xyz[z->angle_atom], xyz[z->parent], z->bond, z->angle,
                   z->dihedral + torsion[z->torsion], xyz[i]);
    }
    double centre[3] = {0, 0, 0};
    for (int i = 0; i < RESIDUE_ATOMS; i++)
        for (int d = 0; d < 3; d++)
            centre[d] += xyz[i][d] / RESIDUE_ATOMS;
    for (int i = 0; i < RESIDUE_ATOMS; i++)
        for (int d = 0; d < 3; d++)
            xyz[i][d] -= centre[d];
}

/* What a clash test needs: the types placed so far and the candidate's type. */
typedef struct clash_query {
    const int *types;
    int type;
} clash_query;

static int clashes(size_t other, double distance2, const void *data)
{
    const clash_query *q = data;
    double limit = clash_radius(q->type) + clash_radius(q->types[other]);
    return distance2 < limit * limit;
}

/* A point uniform in the ball of the given radius (rejection from the cube). */
static void random_in_ball(fkt_rand48 *r, double radius, double out[3])
{
    for (;;) {
        double s2 = 0.0;
        for (int d = 0; d < 3; d++) {
            out[d] = radius * (2.0 * fkt_rand48_drand(r) - 1.0);
            s2 += out[d] * out[d];
        }
        if (s2 <= radius * radius)
            return;
    }
}

/* Where the next residue's centre may go. */
typedef struct residue_site {
    int chained;        /* 1: near the previous residue's centre; 0: anywhere in the ball */
    double previous[3]; /* the previous residue's centre */
    double radius;      /* the ball the centres stay in */
} residue_site;

static void residue_centre(fkt_rand48 *r, const residue_site *site, double centre[3])
{
    for (;;) {
        if (site->chained) {
            /* A step of 4.5 to 6.5 Angstrom (consecutive residue centres) in a random
             * direction. */
            double z = 1.0 - 2.0 * fkt_rand48_drand(r), phi = 2.0 * pi * fkt_rand48_drand(r);
            double step = FKT_PROTEIN_STEP_MIN +
                          (FKT_PROTEIN_STEP_MAX - FKT_PROTEIN_STEP_MIN) * fkt_rand48_drand(r);
            double planar = sqrt(fmax(1.0 - z * z, 0.0));
            centre[0] = site->previous[0] + step * planar * cos(phi);
            centre[1] = site->previous[1] + step * planar * sin(phi);
            centre[2] = site->previous[2] + step * z;
        } else {
            random_in_ball(r, site->radius, centre);
        }
        if (centre[0] * centre[0] + centre[1] * centre[1] + centre[2] * centre[2] <=
            site->radius * site->radius)
            return;
    }
}

/* The three residue kinds (SIDE_*): their atoms and excluded (1-2, 1-3) pairs. */
typedef struct residue_kinds {
    zatom atoms[3][RESIDUE_ATOMS];
    size_t pairs[3][64][2], pair_count[3];
} residue_kinds;

/* The sequence: FKT_PROTEIN_CHARGED acidic and as many basic residues at random places (so the
 * solute is neutral), the rest aliphatic. */
static void random_sequence(fkt_rand48 *r, int *sequence, size_t residues)
{
    for (size_t i = 0; i < residues; i++)
        sequence[i] = i < FKT_PROTEIN_CHARGED       ? SIDE_ACID
                      : i < 2 * FKT_PROTEIN_CHARGED ? SIDE_BASE
                                                    : SIDE_ALIPHATIC;
    for (size_t i = residues - 1; i > 0; i--) { /* Fisher-Yates */
        size_t j = (size_t)(fkt_rand48_drand(r) * (double)(i + 1));
        int t = sequence[i];
        sequence[i] = sequence[j];
        sequence[j] = t;
    }
}

/* Whether a conformation of a residue puts two of its atoms that are not an excluded pair closer
 * than their clash radii. */
static int residue_clashes_itself(const residue_kinds *kinds, int side,
                                  double local[RESIDUE_ATOMS][3])
{
    const zatom *atoms = kinds->atoms[side];
    for (int i = 0; i < RESIDUE_ATOMS; i++)
        for (int j = i + 1; j < RESIDUE_ATOMS; j++) {
            int excluded = 0;
            for (size_t e = 0; e < kinds->pair_count[side]; e++)
                excluded |=
                    kinds->pairs[side][e][0] == (size_t)i && kinds->pairs[side][e][1] == (size_t)j;
            double diff[3];
            sub3(local[i], local[j], diff);
            double limit = clash_radius(atoms[i].type) + clash_radius(atoms[j].type);
            if (!excluded &&
                diff[0] * diff[0] + diff[1] * diff[1] + diff[2] * diff[2] < limit * limit)
                return 1;
        }
    return 0;
}

/* A molecule's atoms (local coordinates rotated and moved to centre) written at base; 1 when none
 * clashes with an atom placed before (the writing stops at the first that does). */
static int place_molecule(const grid *g, fkt_particle_set *set, size_t base, int count,
                          const double centre[3], double rotation[3][3], double local[][3],
                          const int *types)
{
    for (int i = 0; i < count; i++) {
        double *p = set->position + 3 * (base + (size_t)i);
        for (int d = 0; d < 3; d++)
            p[d] = centre[d] + rotation[d][0] * local[i][0] + rotation[d][1] * local[i][1] +
                   rotation[d][2] * local[i][2];
        clash_query q = {set->type, types[i]};
        if (grid_any(g, p, clashes, &q))
            return 0;
    }
    return 1;
}

/* Keeps a placed molecule: its types and charges, its atoms in the grid, its excluded pairs. */
static void keep_molecule(grid *g, fkt_system *system, size_t base, int count, const int *types,
                          const double *charges, const size_t pairs[][2], size_t pair_count)
{
    fkt_particle_set *set = &system->particles;
    for (int i = 0; i < count; i++) {
        set->type[base + (size_t)i] = types[i];
        set->mass[base + (size_t)i] = charges[i];
        grid_insert(g, base + (size_t)i);
    }
    for (size_t e = 0; e < pair_count; e++) {
        system->exclusions[2 * system->exclusion_count] = base + pairs[e][0];
        system->exclusions[2 * system->exclusion_count + 1] = base + pairs[e][1];
        system->exclusion_count++;
    }
}

/* The solute grows as a chain of the sequence's residues in a ball of the given radius, each at a
 * random conformation, orientation and place that clashes with nothing. */
static fk_status place_solute(fkt_rand48 *r, grid *g, fkt_system *system,
                              const residue_kinds *kinds, const int *sequence, size_t residues,
                              double ball)
{
    residue_site site = {.chained = 0, .radius = ball};
    size_t placed = 0;
    int failures = 0;
    while (placed < residues) {
        const int side = sequence[placed];
        const zatom *atoms = kinds->atoms[side];
        const size_t base = placed * RESIDUE_ATOMS;
        /* Near the previous residue first; after FKT_PROTEIN_ATTEMPTS failures anywhere in the ball
         * (a chain break); after as many again, a wider ball. */
        site.chained = placed > 0 && failures < FKT_PROTEIN_ATTEMPTS;
        if (failures >= 2 * FKT_PROTEIN_ATTEMPTS) {
            site.radius += 0.5;
            failures = 0;
            if (site.radius > ball + 20.0)
                return FK_ERR_INVALID_INPUT; /* cannot happen: the ball grows without bound */
            continue;
        }
        double local[RESIDUE_ATOMS][3], rotation[3][3], centre[3];
        build_residue(r, atoms, local);
        random_rotation(r, rotation);
        residue_centre(r, &site, centre);
        int types[RESIDUE_ATOMS];
        double charges[RESIDUE_ATOMS];
        for (int i = 0; i < RESIDUE_ATOMS; i++) {
            types[i] = atoms[i].type;
            charges[i] = atoms[i].charge;
        }
        /* Non-excluded pairs inside the residue, then the atoms placed before. */
        if (residue_clashes_itself(kinds, side, local) ||
            !place_molecule(g, &system->particles, base, RESIDUE_ATOMS, centre, rotation, local,
                            types)) {
            failures++;
            continue;
        }
        keep_molecule(g, system, base, RESIDUE_ATOMS, types, charges, kinds->pairs[side],
                      kinds->pair_count[side]);
        memcpy(site.previous, centre, sizeof centre);
        failures = 0;
        placed++;
    }
    return FK_OK;
}

/* Waters: SPC/E geometry, O uniform in the shell between the solute's radius - 4 and + 4
 * Angstrom (r^3 uniform), random orientation, kept when nothing clashes. */
static fk_status place_waters(fkt_rand48 *r, grid *g, fkt_system *system)
{
    const fkt_particle_set *set = &system->particles;
    double radius = 0.0;
    for (size_t i = 0; i < FKT_PROTEIN_SOLUTE_ATOMS; i++) {
        const double *p = set->position + 3 * i;
        radius = fmax(radius, sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]));
    }
    const double inner = fmax(radius - 4.0, 0.0), outer = radius + 4.0;
    const double half_angle = 0.5 * SPCE_ANGLE * pi / 180.0;
    /* Not const: place_molecule takes the residues' arrays too, and C11 does not convert a
     * pointer to arrays into a pointer to arrays of const. */
    double local_water[3][3] = {{0, 0, 0},
                                {SPCE_OH * sin(half_angle), SPCE_OH * cos(half_angle), 0},
                                {-SPCE_OH * sin(half_angle), SPCE_OH * cos(half_angle), 0}};
    const int water_types[3] = {T_OW, T_HW, T_HW};
    const double water_charges[3] = {SPCE_CHARGE_O, -0.5 * SPCE_CHARGE_O, -0.5 * SPCE_CHARGE_O};
    static const size_t water_pairs[3][2] = {{0, 1}, {0, 2}, {1, 2}};
    size_t waters = 0;
    for (long attempt = 0; waters < FKT_PROTEIN_WATERS; attempt++) {
        if (attempt > 1000000)
            return FK_ERR_INVALID_INPUT; /* cannot happen: the shell has room for thousands */
        double u = fkt_rand48_drand(r), z = 1.0 - 2.0 * fkt_rand48_drand(r),
               phi = 2.0 * pi * fkt_rand48_drand(r);
        double rr =
            cbrt(inner * inner * inner + u * (outer * outer * outer - inner * inner * inner));
        double planar = sqrt(fmax(1.0 - z * z, 0.0));
        double centre[3] = {rr * planar * cos(phi), rr * planar * sin(phi), rr * z};
        double rotation[3][3];
        random_rotation(r, rotation);
        const size_t base = FKT_PROTEIN_SOLUTE_ATOMS + 3 * waters;
        if (!place_molecule(g, &system->particles, base, 3, centre, rotation, local_water,
                            water_types))
            continue;
        keep_molecule(g, system, base, 3, water_types, water_charges, water_pairs, 3);
        waters++;
    }
    return FK_OK;
}

/* The pair table: AMBER's sigma from R*, SPC/E's for the water oxygen, mixed by Lorentz-Berthelot
 * (table_mix_lj). */
static void protein_parameters(fkt_system *system)
{
    double epsilon[PROTEIN_TYPES], sigma[PROTEIN_TYPES];
    for (int t = 0; t < PROTEIN_TYPES; t++) {
        epsilon[t] = protein_epsilon[t];
        sigma[t] = 2.0 * protein_rstar[t] / pow(2.0, 1.0 / 6.0);
    }
    sigma[T_OW] = SPCE_SIGMA;
    table_mix_lj(&system->params, epsilon, sigma);
}

fk_status fkt_generate_protein(uint64_t seed, fkt_system *system)
{
    if (!system)
        return FK_ERR_INVALID_ARGUMENT;
    memset(system, 0, sizeof *system);
    const size_t residues = FKT_PROTEIN_SOLUTE_ATOMS / RESIDUE_ATOMS;
    const size_t total = FKT_PROTEIN_ATOMS;
    fkt_rand48 r;
    seed_stream(&r, seed);

    residue_kinds kinds;
    for (int side = 0; side < 3; side++) {
        residue_template(side, kinds.atoms[side]);
        kinds.pair_count[side] = residue_exclusions(kinds.atoms[side], kinds.pairs[side]);
    }
    int sequence[FKT_PROTEIN_SOLUTE_ATOMS / RESIDUE_ATOMS];
    random_sequence(&r, sequence, residues);

    /* The solute's ball is sized for FKT_PROTEIN_DENSITY atoms per cubic Angstrom, widened by 0.5
     * Angstrom whenever a residue finds no room at all. */
    double ball = cbrt(3.0 * FKT_PROTEIN_SOLUTE_ATOMS / (4.0 * pi * FKT_PROTEIN_DENSITY)) - 2.0;
    const double reach = ball + 40.0; /* room for the widening and the waters */
    const double lower[3] = {-reach, -reach, -reach}, upper[3] = {reach, reach, reach};
    grid g;
    memset(&g, 0, sizeof g);
    fk_status status = fkt_particle_set_alloc(&system->particles, FKT_LAYOUT_XYZQ_TYPE, total);
    size_t exclusion_capacity = residues * 64 + 3 * FKT_PROTEIN_WATERS;
    if (status == FK_OK) {
        system->exclusions = malloc(2 * exclusion_capacity * sizeof *system->exclusions);
        status = system->exclusions ? FK_OK : FK_ERR_HOST_MEMORY;
    }
    if (status == FK_OK)
        status = grid_init(&g, lower, upper, 2.7, total, system->particles.position);
    if (status == FK_OK)
        status = table_alloc(&system->params, PROTEIN_TYPES, 2);
    if (status == FK_OK)
        status = place_solute(&r, &g, system, &kinds, sequence, residues, ball);
    if (status == FK_OK)
        status = place_waters(&r, &g, system);
    grid_free(&g);
    if (status != FK_OK) {
        fkt_system_free(system);
        return status;
    }
    protein_parameters(system);
    system->layout = FKT_LAYOUT_XYZQ_TYPE;
    system->coulomb = FKT_COULOMB_KCAL_ANGSTROM;
    system->units = "kcal/mol, Angstrom, e";
    return FK_OK;
}

/* ---- Narumi's System 2 -------------------------------------------------------------------------
 */

typedef struct lj_query {
    const int *types;
    const double *sigma;
    int type;
} lj_query;

static int lj_overlaps(size_t other, double distance2, const void *data)
{
    const lj_query *q = data;
    double limit = FKT_LJ65536_MIN_DISTANCE * 0.5 * (q->sigma[q->type] + q->sigma[q->types[other]]);
    return distance2 < limit * limit;
}

fk_status fkt_generate_lj65536(size_t count, double density, uint64_t seed, fkt_layout layout,
                               fkt_system *system)
{
    if (!system)
        return FK_ERR_INVALID_ARGUMENT;
    memset(system, 0, sizeof *system);
    if (count == 0 || !layout_molecular(layout) || !isfinite(density) || density <= 0.0 ||
        density > FKT_LJ65536_MAX_DENSITY)
        return FK_ERR_INVALID_ARGUMENT;
    fkt_rand48 r;
    seed_stream(&r, seed);
    double epsilon[FKT_LJ65536_TYPES], sigma[FKT_LJ65536_TYPES];
    for (int t = 0; t < FKT_LJ65536_TYPES; t++) {
        epsilon[t] = FKT_LJ65536_EPSILON_MIN +
                     (FKT_LJ65536_EPSILON_MAX - FKT_LJ65536_EPSILON_MIN) * fkt_rand48_drand(&r);
        sigma[t] = FKT_LJ65536_SIGMA_MIN +
                   (FKT_LJ65536_SIGMA_MAX - FKT_LJ65536_SIGMA_MIN) * fkt_rand48_drand(&r);
    }
    const double side = cbrt((double)count / density);
    const double lower[3] = {0, 0, 0}, upper[3] = {side, side, side};
    grid g;
    memset(&g, 0, sizeof g);
    fk_status status = fkt_particle_set_alloc(&system->particles, layout, count);
    if (status == FK_OK)
        status = table_alloc(&system->params, FKT_LJ65536_TYPES, 2);
    if (status == FK_OK)
        status = grid_init(&g, lower, upper, FKT_LJ65536_MIN_DISTANCE * FKT_LJ65536_SIGMA_MAX,
                           count, system->particles.position);
    if (status != FK_OK) {
        grid_free(&g);
        fkt_system_free(system);
        return status;
    }
    /* Random sequential addition: type uniform over the 16, position uniform in the cube,
     * redrawn while it comes closer than 0.8 sigma_ab to a particle placed before. */
    fkt_particle_set *set = &system->particles;
    for (size_t i = 0; i < count && status == FK_OK; i++) {
        int type = (int)(FKT_LJ65536_TYPES * fkt_rand48_drand(&r));
        set->type[i] = type;
        if (set->mass)
            set->mass[i] = 0.0;
        lj_query q = {set->type, sigma, type};
        for (long attempt = 0;; attempt++) {
            if (attempt == 100000) {
                status = FK_ERR_INVALID_INPUT; /* the density leaves no room */
                break;
            }
            for (int d = 0; d < 3; d++)
                set->position[3 * i + (size_t)d] = side * fkt_rand48_drand(&r);
            if (!grid_any(&g, set->position + 3 * i, lj_overlaps, &q))
                break;
        }
        grid_insert(&g, i);
    }
    grid_free(&g);
    if (status != FK_OK) {
        fkt_system_free(system);
        return status;
    }
    table_mix_lj(&system->params, epsilon, sigma);
    system->layout = layout;
    system->box[0] = system->box[1] = system->box[2] = side;
    system->coulomb = 1.0;
    system->units = "reduced";
    return FK_OK;
}

/* ---- writers -----------------------------------------------------------------------------------
 */

static void write_header(FILE *file, const char *header)
{
    /* Every line of the header as a comment. */
    for (const char *line = header; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) : strlen(line);
        fprintf(file, "# %.*s\n", (int)length, line);
        line = end ? end + 1 : line + length;
    }
}

int fkt_system_write_particles(FILE *file, const fkt_particle_set *set, fkt_layout layout,
                               const char *header)
{
    write_header(file, header);
    for (size_t i = 0; i < set->count; i++) {
        const double *p = set->position + 3 * i;
        fprintf(file, "%.17g %.17g %.17g", p[0], p[1], p[2]);
        switch (layout) {
        case FKT_LAYOUT_XYZM:
            fprintf(file, " %.17g", set->mass ? set->mass[i] : 1.0);
            break;
        case FKT_LAYOUT_XYZM_VEL: {
            const double *v = set->velocity ? set->velocity + 3 * i : NULL;
            fprintf(file, " %.17g %.17g %.17g %.17g", set->mass ? set->mass[i] : 1.0,
                    v ? v[0] : 0.0, v ? v[1] : 0.0, v ? v[2] : 0.0);
            break;
        }
        case FKT_LAYOUT_XYZQ_TYPE:
            fprintf(file, " %.17g %d", set->mass ? set->mass[i] : 0.0,
                    set->type ? set->type[i] : 0);
            break;
        case FKT_LAYOUT_XYZ_TYPE:
            fprintf(file, " %d", set->type ? set->type[i] : 0);
            break;
        }
        fputc('\n', file);
    }
    return ferror(file) ? -1 : 0;
}

int fkt_system_write_velocities(FILE *file, const fkt_particle_set *set, const char *header)
{
    write_header(file, header);
    for (size_t i = 0; set->velocity && i < set->count; i++)
        fprintf(file, "%.17g %.17g %.17g\n", set->velocity[3 * i], set->velocity[3 * i + 1],
                set->velocity[3 * i + 2]);
    return ferror(file) ? -1 : 0;
}

int fkt_system_write_params(FILE *file, const fkt_pair_table_set *table, const char *header)
{
    write_header(file, header);
    for (size_t a = 0; a < table->types; a++)
        for (size_t b = a; b < table->types; b++) {
            if (table->present && !table->present[a * table->types + b])
                continue;
            fprintf(file, "%zu %zu", a, b);
            for (unsigned p = 0; p < table->parameters; p++)
                fprintf(file, " %.17g",
                        table->values[(a * table->types + b) * table->parameters + p]);
            fputc('\n', file);
        }
    return ferror(file) ? -1 : 0;
}

int fkt_system_write_exclusions(FILE *file, const size_t *pairs, size_t count, const char *header)
{
    write_header(file, header);
    for (size_t e = 0; e < count; e++)
        fprintf(file, "%zu %zu\n", pairs[2 * e], pairs[2 * e + 1]);
    return ferror(file) ? -1 : 0;
}

double fkt_system_min_distance(const fkt_particle_set *set)
{
    double best = INFINITY;
    for (size_t i = 0; set && i < set->count; i++)
        for (size_t j = i + 1; j < set->count; j++) {
            double s = 0.0;
            for (int d = 0; d < 3; d++) {
                double diff = set->position[3 * i + d] - set->position[3 * j + d];
                s += diff * diff;
            }
            if (s < best)
                best = s;
        }
    return sqrt(best);
}
