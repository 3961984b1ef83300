/* The physics buffer of the molecular force laws: one list, read by the device
 * (forces/molecular.clh) and by the host that fills it (src/core/laws/forcelaw.c, through
 * internal.h), so the two cannot drift apart. Valid C and OpenCL C alike.
 *
 * FK_MOLECULAR_PHYSICS(X) calls X(NAME, index, floats) for every field; the host and the device
 * each turn it into FK_PHYS_<NAME> indices. */
#ifndef FK_FORCE_MOLECULAR_LAYOUT_H
#define FK_FORCE_MOLECULAR_LAYOUT_H

#define FK_MOLECULAR_PHYSICS(X)                                                                    \
    X(CUTOFF2, 1, 1)          /* rc^2 (FLT_MAX without a cutoff) */                                \
    X(COULOMB, 2, 1)          /* the Coulomb factor the law's header multiplies q_i q_j by */      \
    X(COULOMB_F_RC, 3, 1)     /* the charge part's f(rc) per unit q_i q_j (FK_SHIFTED) */          \
    X(COULOMB_U_OFFSET, 4, 1) /* its U(rc) + rc f(rc) per unit q_i q_j (FK_SHIFTED) */             \
    X(BOX, 5, 3)              /* Lx, Ly, Lz (FK_PERIODIC) */                                       \
    X(INV_BOX, 8, 3)          /* 1/Lx, 1/Ly, 1/Lz */                                               \
    X(LAW, 11, 4)             /* the law's named parameters (fk_kernel_info.parameters), in float */

/* Floats in the buffer (index 0 is gravity's eps^2, unused here). */
#define FK_PHYSICS_FLOATS 16

#define FK_PHYS_INDEX_(name, index, floats) FK_PHYS_##name = index,
enum { FK_MOLECULAR_PHYSICS(FK_PHYS_INDEX_) FK_PHYS_END_ = FK_PHYSICS_FLOATS };
#undef FK_PHYS_INDEX_

#endif
