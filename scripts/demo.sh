#!/usr/bin/env bash
# The main job on a fresh machine: set up, build if needed, then on the default device (first GPU,
# else the CPU through POCL; FORCEKIT_DEVICE or --device picks another):
#   1. forcekit bench: ga on a 16,384-body Plummer sphere, the default variant
#   2. forcekit accuracy: ga against the double-precision host reference on the same sphere
# Extra arguments go to both commands (e.g. --device cpu).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup-deps.sh"
build_dir=${FORCEKIT_BUILD_DIR:-$root/build}
if [ ! -x "$build_dir/forcekit" ]; then
    cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
# The command and both libraries: everything `cmake --install "$build_dir"` installs afterwards.
cmake --build "$build_dir" -j "$(nproc)" --target forcekit_cli forcekit forcekit_static >/dev/null
forcekit="$build_dir/forcekit"

echo "== forcekit devices" >&2
"$forcekit" devices
echo "== forcekit bench --kernel ga --n 16384" >&2
"$forcekit" bench --kernel ga --n 16384 --reps 5 "$@"
echo "== forcekit accuracy --kernel ga --system plummer --n 16384 --accum all" >&2
"$forcekit" accuracy --kernel ga --system plummer --n 16384 --accum all "$@"
