# shellcheck shell=sh
# Sourced by the bench scripts (sh and bash): the periodic box of forcekit bench's lattice of N
# particles at density 0.8 (side = ceil(cbrt(N)) sites, spacing 0.8^(-1/3)), for --box.
#   box N
box() {
    python3 -c "import math; n=$1; s=round(n**(1/3));
s = s + 1 if s**3 < n else s
print(s * (1 / 0.8) ** (1 / 3))"
}
