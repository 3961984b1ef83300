#!/usr/bin/env bash
# Sets up a fresh Debian machine, configures, builds and runs the test suite:
#   1. pocl:     the whole suite on the default OpenCL device (POCL on a CPU-only machine), build-test/
#   2. oclgrind: every pair loop under oclgrind's data-race, API and uninitialized-value checks
#   3. intel:    the device tests (CTest label "device") but the MPI ones again on Intel's OpenCL CPU runtime, installed
#                from PyPI into build-test/intel-opencl by scripts/intel-opencl.sh (never system-wide)
#   3b. rusticl: the same device tests on Mesa's Rusticl (Debian's mesa-opencl-icd) and its llvmpipe
#                CPU device (RUSTICL_ENABLE=llvmpipe), the only platform the ICD loader is shown: no
#                fp64, so the tests skip what needs it by capability and the library refuses it
#   4. python:   the Python package (python/) pip-installed into a venv under build-test/python/ (its
#                own build of the library, nanobind, numpy, pytest, openmm from PyPI), then
#                `python -m forcekit.selftest` and its pytest suite, the OpenMM bridge included
#   5. amuse:    real GRAPE-6 clients (issue #18): AMUSE 2024.6.0's ph4 and phiGRAPE built from PyPI
#                into build-test/amuse, relinked against forcekit's libsapporo and the comparison
#                library, tests T1-T3 (tests/amuse/run_clients.sh; about 3 minutes on 2 cores)
#   6. sanitize: with --sanitize, the ASan + UBSan build (build-sanitize/) on the default device
# Usage: scripts/test.sh [--sanitize]
# Environment: FORCEKIT_DEVICE picks the device of stages 1 and 4 (e.g. gpu); JOBS sets build/test
# parallelism; FORCEKIT_CI_INTEL=off, FORCEKIT_CI_RUSTICL=off, FORCEKIT_CI_PYTHON=off and
# FORCEKIT_CI_AMUSE=off leave stages 3, 3b, 4 and 5 out (reported as skipped).
# Every stage runs even when an earlier one failed; the last line is the summary, where a stage that
# could not run says SKIPPED and why. Exit status 1 when any stage failed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

sanitize=0
for arg in "$@"; do
    case "$arg" in
    --sanitize) sanitize=1 ;;
    *) echo "usage: scripts/test.sh [--sanitize]" >&2; exit 2 ;;
    esac
done
bash "$root/scripts/setup-deps.sh"
jobs=${JOBS:-$(nproc)}

# A fresh POCL kernel cache per run, so no run depends on what an earlier one compiled (the stages
# of this run share it: the sanitizer build compiles the same kernels).
POCL_CACHE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/forcekit-pocl-cache.XXXXXX")
export POCL_CACHE_DIR
trap 'rm -rf "$POCL_CACHE_DIR"' EXIT

summary=()
failed=0
record() { # stage verdict [detail]
    summary+=("$1 $2${3:+ ($3)}")
    [ "$2" != FAIL ] || failed=1
    echo "== stage $1: $2${3:+ ($3)}" >&2
}
seconds_since() { echo $(($(date +%s) - $1)); }

build() { # build_type build_dir
    echo "== $1 build in $2" >&2
    # ON, not the default AUTO: CI must build the tests, and fail clearly without cmocka
    cmake -S "$root" -B "$2" -DCMAKE_BUILD_TYPE="$1" -DFORCEKIT_BUILD_TESTS=ON >/dev/null
    cmake --build "$2" -j "$jobs"
}

run_ctest() { # build_dir ctest arguments...
    local dir=$1
    shift
    rm -rf "$dir/tests/cache-"*
    (cd "$dir" && ctest --output-on-failure -j "$jobs" "$@")
}

# 1 and 2: the normal build.
start=$(date +%s)
if build RelWithDebInfo "$root/build-test"; then
    if run_ctest "$root/build-test" -LE "oclgrind|golden|full"; then
        record pocl PASS "$(seconds_since "$start") s"
    else
        record pocl FAIL
    fi
    start=$(date +%s)
    # CTest reports a missing oclgrind as "Skipped" (exit 77 of tests/oclgrind_check.sh).
    log=$root/build-test/oclgrind-ctest.log
    if run_ctest "$root/build-test" -L oclgrind 2>&1 | tee "$log"; then
        if grep -q "Skipped\|Not Run" "$log"; then
            record oclgrind SKIPPED "skipped by ctest: oclgrind or an ICD missing, see above"
        else
            record oclgrind PASS "$(seconds_since "$start") s"
        fi
    else
        record oclgrind FAIL
    fi
else
    record pocl FAIL "build failed"
    record oclgrind FAIL "build failed"
fi

# 3: Intel's runtime, the only platform the ICD loader is shown (its own vendors folder).
start=$(date +%s)
if [ "${FORCEKIT_CI_INTEL:-on}" = off ]; then
    record intel SKIPPED "FORCEKIT_CI_INTEL=off"
elif [ ! -x "$root/build-test/forcekit" ]; then
    record intel FAIL "build failed"
else
    set +e
    intel_env=$(bash "$root/scripts/intel-opencl.sh" "$root/build-test/intel-opencl")
    intel_status=$?
    set -e
    if [ "$intel_status" -eq 3 ]; then
        record intel SKIPPED "intel-opencl-rt, intel-cmplr-lib-rt not installed from PyPI: see the SKIP line"
    elif [ "$intel_status" -ne 0 ]; then
        record intel FAIL "scripts/intel-opencl.sh exited $intel_status"
    else
        # shellcheck disable=SC2086 # NAME=VALUE lines without blanks
        if ! env $intel_env "$root/build-test/forcekit" devices --json |
            grep -q '"platform":[[:space:]]*"Intel(R) OpenCL"'; then
            env $intel_env "$root/build-test/forcekit" devices >&2 || true
            record intel FAIL "Intel's device is not the one FORCEKIT_DEVICE selects"
        elif env $intel_env bash -c 'cd "$1" && shift && rm -rf tests/cache-* && ctest --output-on-failure "$@"' \
            _ "$root/build-test" -j "$jobs" -L device -LE mpi; then
            record intel PASS "$(seconds_since "$start") s"
        else
            record intel FAIL
        fi
    fi
fi

# 3b: Mesa's Rusticl on llvmpipe, the only platform the ICD loader is shown (a vendors folder of its
# own, as for Intel; POCL stays installed). Rusticl enables no driver by default: RUSTICL_ENABLE.
start=$(date +%s)
rusticl_icd=/etc/OpenCL/vendors/rusticl.icd
if [ "${FORCEKIT_CI_RUSTICL:-on}" = off ]; then
    record rusticl SKIPPED "FORCEKIT_CI_RUSTICL=off"
elif [ ! -x "$root/build-test/forcekit" ]; then
    record rusticl FAIL "build failed"
elif [ ! -f "$rusticl_icd" ]; then
    record rusticl SKIPPED "$rusticl_icd missing: mesa-opencl-icd is not installed"
else
    vendors=$root/build-test/rusticl-vendors
    rm -rf "$vendors" && mkdir -p "$vendors" && cp "$rusticl_icd" "$vendors/"
    rusticl_env=(OCL_ICD_VENDORS="$vendors" RUSTICL_ENABLE=llvmpipe FORCEKIT_DEVICE=llvmpipe)
    # The device tests that pass on it (docs/testing.md, "Mesa's Rusticl"); what llvmpipe cannot
    # do is skipped by capability inside them. llvmpipe compiles each kernel again at its first
    # launch unless Mesa's shader cache has it: 271 s for these on 2 cores with a cold cache, 84 s
    # warm (2026-11-28).
    rusticl_tests='^test_(device|program|fit|known_answer|loop_limit|timing|accum|kernels|precision|reproducible|selftest|cells|symmetric|neighbors|lanes|rand48|exclusions|laws|forces|simulate)$'
    rusticl_tests=${FORCEKIT_CI_RUSTICL_TESTS:-$rusticl_tests}
    if ! env "${rusticl_env[@]}" "$root/build-test/forcekit" devices --json |
        grep -q '"name":[[:space:]]*"llvmpipe'; then
        env "${rusticl_env[@]}" "$root/build-test/forcekit" devices >&2 || true
        record rusticl FAIL "Rusticl's llvmpipe is not the device FORCEKIT_DEVICE selects"
    elif env "${rusticl_env[@]}" bash -c 'cd "$1" && shift && rm -rf tests/cache-* && ctest --output-on-failure "$@"' \
        _ "$root/build-test" -j "$jobs" -L device -LE mpi -R "$rusticl_tests"; then
        record rusticl PASS "$(seconds_since "$start") s"
    else
        record rusticl FAIL
    fi
fi

# 4: the Python package, built by pip with the library (python/CMakeLists.txt), in a venv of the
# build tree; the extension's build folder is kept between runs, forcekit's program cache is not.
start=$(date +%s)
if [ "${FORCEKIT_CI_PYTHON:-on}" = off ]; then
    record python SKIPPED "FORCEKIT_CI_PYTHON=off"
else
    py=$root/build-test/python
    rm -rf "$py/cache"
    if { [ -x "$py/venv/bin/python" ] || python3 -m venv "$py/venv"; } &&
        "$py/venv/bin/pip" install -q scikit-build-core nanobind numpy pytest openmm >&2 &&
        "$py/venv/bin/pip" install -q --no-build-isolation "$root/python" \
            --config-settings=build-dir="$py/ext" >&2 &&
        (cd "$py" && FORCEKIT_CACHE_DIR="$py/cache" venv/bin/python -m forcekit.selftest --device \
            "${FORCEKIT_DEVICE:-cpu}" && FORCEKIT_CACHE_DIR="$py/cache" venv/bin/pytest -q \
            -p no:cacheprovider "$root/python/tests"); then
        record python PASS "$(seconds_since "$start") s"
    else
        record python FAIL
    fi
fi

# 5: AMUSE's ph4 and phiGRAPE, unchanged, on libsapporo (a failed download is a failure).
start=$(date +%s)
if [ "${FORCEKIT_CI_AMUSE:-on}" = off ]; then
    record amuse SKIPPED "FORCEKIT_CI_AMUSE=off"
elif [ ! -e "$root/build-test/libsapporo.so" ]; then
    record amuse FAIL "libsapporo.so was not built"
elif FORCEKIT_KERNEL_DIR="$root/cl" FORCEKIT_CACHE_DIR="$root/build-test/amuse-cache" \
    AMUSE_JOBS="$jobs" bash "$root/tests/amuse/run_clients.sh" "$root/build-test" "$root" all; then
    record amuse PASS "$(seconds_since "$start") s"
else
    record amuse FAIL
fi

# 6: the sanitizer build. oclgrind preloads its own OpenCL runtime, which ASan cannot run under,
# and it checks the kernels, not the host code: left out here.
if [ "$sanitize" -eq 1 ]; then
    start=$(date +%s)
    # Leak checking stays on for forcekit; the OpenCL runtime's own allocations (POCL, LLVM) are
    # suppressed.
    # The ICD loader is shown POCL only: Mesa's ICDs (mesa-opencl-icd, for the rusticl stage) allocate
    # at platform discovery in every process, which LeakSanitizer would report in every test.
    pocl_vendors=$root/build-sanitize/pocl-vendors
    mkdir -p "$pocl_vendors" && cp /etc/OpenCL/vendors/pocl.icd "$pocl_vendors/" 2>/dev/null || true
    if build Sanitize "$root/build-sanitize" &&
        OCL_ICD_VENDORS=$pocl_vendors LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp:print_suppressions=0} \
            UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
            run_ctest "$root/build-sanitize" -LE "oclgrind|golden|full"; then
        record sanitize PASS "$(seconds_since "$start") s"
    else
        record sanitize FAIL
    fi
    # ThreadSanitizer: the thread-safety rule of forcekit.h, two contexts in two threads
    # (tests/test_threads.c; tests/tsan.supp suppresses the OpenCL implementation only).
    start=$(date +%s)
    if cmake -S "$root" -B "$root/build-tsan" -DCMAKE_BUILD_TYPE=Tsan -DFORCEKIT_BUILD_TESTS=ON \
            -DFORCEKIT_BUILD_BENCH=OFF -DFORCEKIT_BUILD_EXAMPLES=OFF >/dev/null &&
        cmake --build "$root/build-tsan" -j "$jobs" --target test_threads >/dev/null &&
        run_ctest "$root/build-tsan" -R '^test_threads$'; then
        record tsan PASS "$(seconds_since "$start") s"
    else
        record tsan FAIL
    fi
fi

line=""
for stage in "${summary[@]}"; do line+="${line:+ | }$stage"; done
echo "forcekit CI summary: $line"
exit "$failed"
