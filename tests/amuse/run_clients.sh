#!/usr/bin/env bash
# Real GRAPE-6 clients, unchanged, on forcekit's libsapporo (issue #18, deliverable 4):
# builds AMUSE 2024.6.0 from PyPI source distributions (amuse-framework, amuse-ph4,
# amuse-phigrape) once into BUILD/amuse, relinks ph4's GPU worker and phiGRAPE's GPU worker
# against libsapporo (-lsapporo, no rpath: which libsapporo.so runs is chosen with
# LD_LIBRARY_PATH, forcekit's or the comparison library's, tests/g6/g6cpu.c), and runs T1-T3:
#   T1 ph4 mode="gpu" get_potential_at_point on a 200-body Plummer sphere against ph4's CPU mode:
#      at least 12 digits with ds + ref (the default), 5 with float + float;
#   T2 ph4, Plummer N = 256, eps 0.01, eta 0.03, t = 0 to 1, five seeds: median |dE/E| through
#      forcekit within 2x of the comparison library's, no NaN;
#   T3 phiGRAPE the same energy check (Fortran ABI).
# (T4, neighbour lists against brute force with overflow, is tests/test_sources.c and test_g6.c.)
#
#   tests/amuse/run_clients.sh BUILD_DIR [SOURCE_DIR] [build|test|all|bench]
# (bench: ph4 on a BENCH_N-body Plummer sphere, default 16,384, to BENCH_T, default 1, through
# forcekit: |dE/E| and wall seconds, one JSON line.)
#
# Needs: python3 (3.9-3.11), gfortran, mpicc/mpif90 (Debian: libopenmpi-dev), network access to
# PyPI the first time. A missing tool or a failed download is a failure with the reason (exit 1),
# never a pass. Set AMUSE_JOBS for make's -j (default 2).
set -euo pipefail

build_dir=$(realpath "${1:?usage: run_clients.sh BUILD_DIR [SOURCE_DIR] [build|test|all]}")
source_dir=$(realpath "${2:-$(dirname "$0")/../..}")
what=${3:-all}
amuse_dir=$build_dir/amuse
version=2024.6.0
venv=$amuse_dir/venv
jobs=${AMUSE_JOBS:-2}
forcekit_lib=$build_dir
comparison_lib=$build_dir/tests/g6cpu

fail() {
    echo "run_clients.sh: FAIL: $*" >&2
    exit 1
}

need() {
    command -v "$1" > /dev/null 2>&1 || fail "$1 not found ($2)"
}

build_amuse() {
    need python3 "install Python 3.9-3.11"
    need gfortran "Debian: apt-get install gfortran"
    need mpicc "Debian: apt-get install libopenmpi-dev"
    need mpif90 "Debian: apt-get install libopenmpi-dev"
    [ -f "$forcekit_lib/libsapporo.so" ] || fail "$forcekit_lib/libsapporo.so is missing: build forcekit first"
    [ -f "$comparison_lib/libsapporo.so" ] || fail "$comparison_lib/libsapporo.so is missing: build forcekit's tests first"
    mkdir -p "$amuse_dir/sdist"
    export PATH="$venv/bin:$PATH" # amusifier, for the codes' makefiles
    if [ ! -f "$amuse_dir/installed-$version" ]; then
        [ -x "$venv/bin/python" ] || python3 -m venv "$venv" || fail "python3 -m venv failed"
        # AMUSE 2024.6.0's build needs old setuptools, numpy < 2, setuptools_scm 8 (its version
        # keyword), docutils, pytest and h5py for its configure, and mpi4py built against the
        # system's Open MPI without build isolation (a new setuptools breaks mpi4py 3's build).
        "$venv/bin/pip" install -q "setuptools<65" "numpy<2" wheel "setuptools_scm>=8,<9" \
            docutils pytest h5py \
            || fail "pip could not install AMUSE's build requirements from PyPI"
        "$venv/bin/pip" install -q --no-build-isolation "mpi4py<4" \
            || fail "pip could not build mpi4py (is libopenmpi-dev installed?)"
        # The framework first: the codes' setup.py imports it.
        "$venv/bin/pip" install --no-build-isolation "amuse-framework==$version" \
            > "$amuse_dir/pip-framework.log" 2>&1 \
            || { tail -40 "$amuse_dir/pip-framework.log" >&2; fail "pip install amuse-framework==$version failed (log: $amuse_dir/pip-framework.log)"; }
        for package in amuse-ph4 amuse-phigrape; do
            "$venv/bin/pip" download -q --no-deps --no-binary :all: --no-build-isolation \
                -d "$amuse_dir/sdist" "$package==$version" \
                || fail "pip download of $package $version failed"
        done
        MAKEFLAGS=-j$jobs "$venv/bin/pip" install --no-build-isolation \
            "$amuse_dir/sdist/amuse_ph4-$version.tar.gz" \
            "$amuse_dir/sdist/amuse_phigrape-$version.tar.gz" \
            > "$amuse_dir/pip-codes.log" 2>&1 \
            || { tail -40 "$amuse_dir/pip-codes.log" >&2; fail "pip install of amuse-ph4 / amuse-phigrape $version failed (log: $amuse_dir/pip-codes.log)"; }
        touch "$amuse_dir/installed-$version"
    fi
    # The source distributions, unpacked, for the workers' makefiles.
    for package in amuse_ph4 amuse_phigrape; do
        [ -d "$amuse_dir/sdist/$package-$version" ] || tar -xzf "$amuse_dir/sdist/$package-$version.tar.gz" -C "$amuse_dir/sdist" \
            || fail "cannot unpack $package $version"
    done
    relink_workers
}

# The directory a code's workers are installed in (beside its interface.py).
code_dir() {
    # (AMUSE prints a citation notice at exit: the first line is the answer.)
    local dir
    "$venv/bin/python" -c "import os, amuse.community.$1 as m; print(os.path.dirname(m.__file__))" \
        > "$amuse_dir/code-dir-$1.txt" || fail "AMUSE's $1 is not importable from $venv"
    dir=$(head -n 1 "$amuse_dir/code-dir-$1.txt")
    [ -d "$dir" ] || fail "AMUSE's $1: no directory $dir"
    echo "$dir"
}

# ph4_worker_gpu and phigrape_worker linked with -lsapporo from forcekit's build tree, no rpath:
# LD_LIBRARY_PATH picks forcekit's or the comparison library at run time (same soname).
relink_workers() {
    export PATH="$venv/bin:$PATH"
    local amuse_root
    amuse_root=$(amusifier --get-amuse-dir) || fail "amusifier --get-amuse-dir failed"
    local ph4_src=$amuse_dir/sdist/amuse_ph4-$version/src/amuse/community/ph4
    local phigrape_src=$amuse_dir/sdist/amuse_phigrape-$version/src/amuse/community/phigrape
    make -C "$ph4_src" -j"$jobs" AMUSE_DIR="$amuse_root" ph4_worker_gpu \
        SAPPORO_LIBS="-L$forcekit_lib -lsapporo" CUDA_LIBS= BOOSTLIBS= \
        > "$amuse_dir/make-ph4.log" 2>&1 \
        || { tail -30 "$amuse_dir/make-ph4.log" >&2; fail "make ph4_worker_gpu failed (log: $amuse_dir/make-ph4.log)"; }
    cp "$ph4_src/ph4_worker_gpu" "$(code_dir ph4)/" || fail "cannot install ph4_worker_gpu"
    rm -f "$phigrape_src/phigrape_worker"
    make -C "$phigrape_src" -j"$jobs" AMUSE_DIR="$amuse_root" phigrape_worker \
        G6LIBS="-L$forcekit_lib -lsapporo" > "$amuse_dir/make-phigrape.log" 2>&1 \
        || { tail -30 "$amuse_dir/make-phigrape.log" >&2; fail "make phigrape_worker failed (log: $amuse_dir/make-phigrape.log)"; }
    cp "$phigrape_src/phigrape_worker" "$(code_dir phigrape)/" \
        || fail "cannot install phigrape_worker"
    for worker in "$(code_dir ph4)/ph4_worker_gpu" "$(code_dir phigrape)/phigrape_worker"; do
        local libraries
        libraries=$(LD_LIBRARY_PATH=$forcekit_lib ldd "$worker") || fail "ldd $worker failed"
        [[ $libraries == *"$forcekit_lib/libsapporo.so"* ]] \
            || fail "$worker does not load libsapporo.so from $forcekit_lib"
    done
}

# AMUSE starts its workers through Open MPI's mpiexec, which refuses root (CI containers) unless
# told.
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# One measurement through one library: LIB_DIR ARGS...
run_with() {
    local lib_dir=$1
    shift
    local out=$amuse_dir/last-run.txt
    LD_LIBRARY_PATH=$lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        FORCEKIT_KERNEL_DIR=${FORCEKIT_KERNEL_DIR:-$source_dir/cl} \
        timeout 1800 "$venv/bin/python" "$source_dir/tests/amuse/clients.py" "$@" > "$out" 2>&1 \
        || { tail -20 "$out" >&2; return 1; }
    # AMUSE prints its citation notice after the result: keep the result line.
    sed -n 's/^RESULT //p' "$out" | head -n 1
}

json_field() {
    "$venv/bin/python" -c "import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"
}

median() {
    "$venv/bin/python" -c "import statistics, sys; print(statistics.median(float(v) for v in sys.argv[1:]))" "$@"
}

run_tests() {
    [ -f "$amuse_dir/installed-$version" ] || fail "AMUSE is not built: run_clients.sh $build_dir $source_dir build"
    local failures=0
    # T1: 12 digits with the default ds + ref, 5 with float + float.
    local line worst
    line=$(run_with "$forcekit_lib" t1 1) || fail "T1 (ds + ref) did not run"
    echo "T1 ds/ref: $line"
    worst=$(json_field "$line" worst_relative)
    "$venv/bin/python" -c "import sys; sys.exit(0 if float('$worst') <= 1e-12 else 1)" \
        || { echo "T1 FAIL: ds + ref potential differs by $worst (> 1e-12)"; failures=$((failures + 1)); }
    line=$(FORCEKIT_G6_ACCUM=float FORCEKIT_G6_POSITIONS=float run_with "$forcekit_lib" t1 1) \
        || fail "T1 (float + float) did not run"
    echo "T1 float/float: $line"
    worst=$(json_field "$line" worst_relative)
    "$venv/bin/python" -c "import sys; sys.exit(0 if float('$worst') <= 1e-5 else 1)" \
        || { echo "T1 FAIL: float + float potential differs by $worst (> 1e-5)"; failures=$((failures + 1)); }
    # T2 (ph4) and T3 (phiGRAPE): five seeds, median |dE/E| within 2x of the comparison's.
    for code in ph4 phigrape; do
        local ours=() theirs=()
        for seed in 1 2 3 4 5; do
            line=$(run_with "$forcekit_lib" energy "$code" "$seed") || fail "$code seed $seed (forcekit) did not run"
            echo "$code forcekit: $line"
            [ "$(json_field "$line" finite)" = True ] || { echo "$code FAIL: NaN energy"; failures=$((failures + 1)); }
            ours+=("$(json_field "$line" dE/E)")
            line=$(run_with "$comparison_lib" energy "$code" "$seed") || fail "$code seed $seed (comparison) did not run"
            echo "$code comparison: $line"
            theirs+=("$(json_field "$line" dE/E)")
        done
        local m_ours m_theirs
        m_ours=$(median "${ours[@]}")
        m_theirs=$(median "${theirs[@]}")
        echo "$code: median |dE/E| forcekit $m_ours, comparison library $m_theirs"
        "$venv/bin/python" -c "import sys; sys.exit(0 if $m_ours <= 2 * $m_theirs else 1)" \
            || { echo "$code FAIL: median |dE/E| $m_ours above 2x the comparison's $m_theirs"; failures=$((failures + 1)); }
    done
    [ "$failures" -eq 0 ] || fail "$failures AMUSE client check(s) failed"
    echo "AMUSE clients: T1-T3 passed"
}

# ph4 on a larger Plummer sphere through forcekit (BENCH_N, default 16,384, to BENCH_T, default 1):
# |dE/E| and the wall time of evolve_model, one JSON line (issue #18, deliverable 5).
run_bench() {
    [ -f "$amuse_dir/installed-$version" ] || fail "AMUSE is not built: run_clients.sh $build_dir $source_dir build"
    run_with "$forcekit_lib" bench "${BENCH_N:-16384}" "${BENCH_T:-1}" || fail "the ph4 bench did not run"
}

case $what in
build) build_amuse ;;
test) run_tests ;;
all) build_amuse && run_tests ;;
bench) run_bench ;;
*) fail "unknown action $what (build, test, all or bench)" ;;
esac
