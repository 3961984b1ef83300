#!/usr/bin/env bash
# Sets up a fresh Debian machine, configures, builds and runs the whole test suite on the default
# OpenCL device (POCL on a CPU-only machine).
#   scripts/test.sh              RelWithDebInfo build in build-test/
#   scripts/test.sh --sanitize   also the ASan + UBSan build (build-sanitize/)
# Environment: FORCEKIT_DEVICE picks the device (e.g. gpu); JOBS sets build/test parallelism.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup-deps.sh"

sanitize=0
for arg in "$@"; do
    case "$arg" in
    --sanitize) sanitize=1 ;;
    *) echo "usage: scripts/test.sh [--sanitize]" >&2; exit 2 ;;
    esac
done
jobs=${JOBS:-$(nproc)}

# A fresh POCL kernel cache per run, so no run depends on what an earlier one compiled.
POCL_CACHE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/forcekit-pocl-cache.XXXXXX")
export POCL_CACHE_DIR
trap 'rm -rf "$POCL_CACHE_DIR"' EXIT

run_suite() {
    local build_type=$1 build_dir=$2
    echo "== $build_type build in $build_dir" >&2
    rm -rf "$build_dir/tests/cache-"*
    cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
    cmake --build "$build_dir" -j "$jobs"
    (cd "$build_dir" && ctest --output-on-failure -j "$jobs")
}

run_suite RelWithDebInfo "$root/build-test"
if [ "$sanitize" -eq 1 ]; then
    # Leak checking stays on for forcekit; the OpenCL runtime's own allocations (POCL, LLVM) are
    # suppressed.
    LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp:print_suppressions=0} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        run_suite Sanitize "$root/build-sanitize"
fi
