#!/usr/bin/env bash
# AMUSE's ph4, its own standalone program, through libsapporo (issue #18): "a ph4 run of a
# 16,384-body Plummer sphere to t = 1 on the GPU through forcekit, with its energy error and wall
# time beside the same run on POCL". The GPU machine has no network and no room for AMUSE's Python
# environment, but ph4 ships a standalone driver, parallel_hermite_4.cc with Makefile.ph4 and its
# input files (plummer1k.in .. plummer16k.in). This script builds that program UNCHANGED (no ph4
# file is edited; only make variables are passed) against a libsapporo.so, runs it and reads the
# energies ph4 prints itself. Nothing of AMUSE is in the repository: `prepare` copies the files from
# the places below into a git-ignored folder (.devdeps/ph4), which the device tool carries.
#
# Where the files come from (downloaded earlier from PyPI by tests/amuse/run_clients.sh):
#   PH4_SRC       ph4's src/ folder of the amuse-ph4 2024.6.0 sdist (amuse_ph4-2024.6.0.tar.gz),
#                 default $DEFAULT_PH4_SRC below;
#   STOPCOND_DIR  AMUSE's stopping-conditions library (stopcond.h, libstopcondmpi.a) as installed
#                 from the amuse-framework 2024.6.0 wheel, default $DEFAULT_STOPCOND_DIR below.
#                 ph4's jdata.cc calls it even standalone; libstopcondmpi.a needs only MPI (Open
#                 MPI's ABI: ompi_mpi_comm_world etc.), no Fortran runtime.
#
# Usage:
#   bench/ph4_standalone.sh prepare DEST
#       DEST/src: ph4's sources (.cc .h .c .f), Makefile.ph4, README, plummer*.in (no stale
#       objects); DEST/lib/stopcond: stopcond.h, libstopcondmpi.a. Makefile.ph4 looks for the
#       latter under $(AMUSE_DIR)/lib/stopcond, so AMUSE_DIR=DEST works as is. About 6 MiB.
#   bench/ph4_standalone.sh run PH4_DIR SAPPORO_LIB_DIR OUT_JSON [INPUT] [T_END]
#       PH4_DIR: a folder made by `prepare` (never written to); SAPPORO_LIB_DIR: the folder
#       holding the libsapporo.so to use (forcekit's build root, or build/tests/g6cpu for the
#       double-precision CPU comparison library); INPUT: a file name under PH4_DIR/src or a path
#       (default plummer16k.in); T_END: default 1. Writes OUT_JSON, the run's stdout+stderr as
#       OUT_JSON minus .json plus .log, the build's as .build.log.
#
# The build: `make -f Makefile.ph4 parallel_hermite_4` in a scratch copy of PH4_DIR/src with
#   AMUSE_DIR=PH4_DIR  LIBS="-L PH4_DIR/lib/stopcond -lstopcondmpi -L SAPPORO_LIB_DIR -lsapporo"
# overriding only the Makefile's LIBS (its default names /usr/local/sapporo_v1.6, CUDA and boost,
# none of which libsapporo needs); OPT (-O4, a synonym of -O3 for gcc) is kept: it also removes
# gpu.cc's dead `if (0) force_j_particle_send();`, a symbol no libsapporo exports. The binary
# gets no rpath, so LD_LIBRARY_PATH decides which libsapporo.so it loads; the script checks with
# ldd that it is the one in SAPPORO_LIB_DIR. EXTRAOBJS (kepler, hdyn, smallN, analyze, nstab,
# f2c: ph4's close-encounter code) build from the shipped sources; nstab.c is already f2c's
# output, so f2c is not needed.
#
# ph4's g6 IDs: the standalone main keeps its jdata on the stack and never sets jdata::gpu_id
# (AMUSE's interface sets it), so ph4 calls g6_open(<stack garbage>, e.g. 32765) and then every
# other g6 function with cluster ID = its MPI rank. Sapporo ignores the ID; forcekit's libsapporo
# and the comparison library follow it (a call reaches the only open unit), so ph4 runs unchanged.
# ph4 ignores the g6 return codes (a failed call would integrate with zero forces), hence the
# negative-potential check below and FORCEKIT_G6_VERBOSE=1 (the library's reasons go to the log).
#
# The run: `mpirun -np 1 --bind-to none parallel_hermite_4 -f INPUT -t T_END -d T_END`.
#   -f INPUT   the initial conditions (ph4's own Plummer files, N-body units, total mass 1).
#   -t T_END   ph4's default t_max is 10 (its header comment says 0.5).
#   -d T_END   ph4's diagnostic interval (default 0.5). ph4 synchronizes all particles at each
#              diagnostic (its README: results depend on that interval), so with dt_out = T_END
#              there are exactly two, at t = 0 and t = T_END, and the energy error is the one of
#              an uninterrupted run.
#   Everything else is ph4's default and printed in the log: -a 0.14 (eta), -e 0.01 (softening),
#   -c 1 (close encounters managed), GPU on (-g would turn it off, so it is never passed). The
#   script fails unless the log says "use_gpu = 1" and "opening GPU", i.e. every force went
#   through g6calc_firsthalf_/g6calc_lasthalf_ of the libsapporo loaded, and unless the potential
#   energy is negative at both diagnostics (failed g6 calls leave it 0). FORCEKIT_G6_VERBOSE
#   defaults to 1, so that the library's reasons for any failure are in the log (the JSON counts
#   them); the log is cut at 64 MiB (a good run writes a few KiB), and PH4_TIMEOUT=SECONDS bounds
#   the run (default: no bound).
#   --bind-to none: Open MPI binds a single rank to one core by default, which would leave POCL's
#   CPU device (and forcekit's host threads) one core.
# Energies: ph4's jdata::print() prints "E = ..., E-E0 = ..." (12 digits; E includes Emerge, the
# energy of merged binaries) at each diagnostic; E0 is the first. energy_initial and energy_final
# are the first and last E, relative_energy_error is the last E-E0 (computed in double before
# printing, so it keeps digits the difference of two printed E would lose) over |E0|, signed.
# t_final is the time of the last diagnostic: the first block time >= T_END.
# wall_seconds is mpirun's whole run (MPI start, input read, kernel compiles, the integration);
# ph4_elapsed_seconds is ph4's own clock from its first diagnostic (after the first forces) to the
# last. The kernel cache (FORCEKIT_CACHE_DIR, POCL_CACHE_DIR) defaults to OUT_JSON's folder, so a
# repeated run does not recompile.
#
# On the GPU machine (Ubuntu 24.04, Open MPI 4.1.6, no network), from the repository root, with
# .devdeps/ph4 made here beforehand by `bench/ph4_standalone.sh prepare .devdeps/ph4`:
#   source .devdeps/setup.sh
#   cmake -S . -B build-ph4 -DCMAKE_BUILD_TYPE=Release
#   cmake --build build-ph4 -j"$(nproc)" --target sapporo g6cpu
#   FORCEKIT_G6_DEVICE=gpu PH4_TIMEOUT=500 bench/ph4_standalone.sh run .devdeps/ph4 build-ph4 \
#       "$OUT/ph4_16k_gpu.json" plummer16k.in 1
#   FORCEKIT_G6_DEVICE=cpu PH4_TIMEOUT=500 bench/ph4_standalone.sh run .devdeps/ph4 build-ph4 \
#       "$OUT/ph4_16k_pocl.json" plummer16k.in 1
#   PH4_TIMEOUT=300 bench/ph4_standalone.sh run .devdeps/ph4 build-ph4/tests/g6cpu \
#       "$OUT/ph4_16k_g6cpu_t0.125.json" plummer16k.in 0.125
# (FORCEKIT_KERNEL_DIR defaults to this repository's cl/, FORCEKIT_TUNING_DB to off.) On a 2-core
# EPYC with POCL, N = 16,384 to t = 0.125 took 62 s (454,067 steps); t = 1 is about 8 times the
# steps. The comparison library is one thread: 87 s to t = 0.125 there, so t = 1 would pass the
# device tool's 10 minutes; its run to t = 0.125 is the accuracy cross-check.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# What tests/amuse/run_clients.sh BUILD_DIR left in BUILD_DIR/amuse (the test script's BUILD_DIR
# is build-test; AMUSE_BUILD names another).
amuse_build=${AMUSE_BUILD:-$root/build-test}/amuse
DEFAULT_PH4_SRC=$amuse_build/sdist/amuse_ph4-2024.6.0/src/amuse/community/ph4/src
DEFAULT_STOPCOND_DIR=$amuse_build/venv/share/amuse/lib/stopcond

die() {
    echo "ph4_standalone.sh: $*" >&2
    exit 1
}

usage() {
    echo "usage: bench/ph4_standalone.sh prepare DEST" >&2
    echo "       bench/ph4_standalone.sh run PH4_DIR SAPPORO_LIB_DIR OUT_JSON [INPUT] [T_END]" >&2
    exit 2
}

prepare() {
    local dest=$1
    local src=${PH4_SRC:-$DEFAULT_PH4_SRC} stopcond=${STOPCOND_DIR:-$DEFAULT_STOPCOND_DIR}
    [ -f "$src/parallel_hermite_4.cc" ] && [ -f "$src/Makefile.ph4" ] ||
        die "no ph4 sources in $src (set PH4_SRC to the amuse-ph4 sdist's src/amuse/community/ph4/src)"
    [ -f "$stopcond/stopcond.h" ] && [ -f "$stopcond/libstopcondmpi.a" ] ||
        die "no stopcond.h and libstopcondmpi.a in $stopcond (set STOPCOND_DIR)"
    # A fresh folder, so that nothing stale (an older copy, a built binary) rides along; but only
    # an earlier `prepare` output (it has PROVENANCE) or an empty folder is ever removed.
    if [ -e "$dest" ] && [ -n "$(ls -A "$dest")" ] && [ ! -f "$dest/PROVENANCE" ]; then
        die "$dest exists and was not made by 'prepare': not overwriting it"
    fi
    rm -rf "$dest"
    mkdir -p "$dest/src" "$dest/lib/stopcond"
    # Sources and inputs only: the sdist folder also holds objects and libph4gpu.a from AMUSE's
    # own build (about 25 MiB), built with other flags, which must not be linked here.
    local f n=0
    for f in "$src"/*.cc "$src"/*.h "$src"/*.c "$src"/*.f "$src"/plummer*.in \
        "$src/Makefile.ph4" "$src/README"; do
        [ -f "$f" ] || continue
        cp -p "$f" "$dest/src/"
        n=$((n + 1))
    done
    cp -p "$stopcond/stopcond.h" "$stopcond/libstopcondmpi.a" "$dest/lib/stopcond/"
    # Provenance: where each file came from and its checksum, to tell a stale copy later.
    {
        echo "ph4 standalone inputs for bench/ph4_standalone.sh (prepared $(date -u +%FT%TZ))"
        echo "src/        from $src (amuse-ph4 2024.6.0 sdist, PyPI)"
        echo "lib/stopcond from $stopcond (amuse-framework 2024.6.0, PyPI)"
        (cd "$dest" && find src lib -type f | LC_ALL=C sort | xargs sha256sum)
    } > "$dest/PROVENANCE"
    echo "prepared $dest: $n ph4 files, stopcond; $(du -sh "$dest" | cut -f1) in all"
}

json_str() { # a JSON string literal (backslash, quote and control characters escaped)
    printf '%s' "$1" | awk 'BEGIN { ORS = ""; print "\"" }
        { gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); gsub(/\t/, "\\t"); gsub(/\r/, "\\r");
          if (NR > 1) print "\\n"; print }
        END { print "\"" }'
}

is_number() { # a finite decimal number (ph4 prints nan/inf as such; those are failures)
    [[ $1 =~ ^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$ ]]
}

run() {
    local ph4=$1 libdir=$2 out_json=$3 input=${4:-plummer16k.in} t_end=${5:-1}
    [ -f "$ph4/src/parallel_hermite_4.cc" ] && [ -f "$ph4/lib/stopcond/libstopcondmpi.a" ] ||
        die "$ph4 is not a folder made by 'prepare' (no src/parallel_hermite_4.cc or lib/stopcond)"
    [ -f "$libdir/libsapporo.so" ] || die "no libsapporo.so in $libdir"
    is_number "$t_end" || die "T_END must be a number, not '$t_end'"
    ph4=$(cd "$ph4" && pwd)
    libdir=$(cd "$libdir" && pwd)
    local f
    for f in mpicxx mpicc mpirun make; do
        command -v "$f" > /dev/null || die "$f not found (Open MPI's compilers and mpirun are needed)"
    done
    mkdir -p "$(dirname "$out_json")"
    local out_dir stem
    out_dir=$(cd "$(dirname "$out_json")" && pwd)
    stem=$out_dir/$(basename "$out_json" .json)
    out_json=$out_dir/$(basename "$out_json")
    local log=$stem.log build_log=$stem.build.log
    # Never leave an old result that could be mistaken for this run's.
    rm -f "$out_json" "$log" "$build_log"

    # The input: a name under PH4_DIR/src, or a path. It is copied into the scratch folder
    # because ph4 gunzips (and re-gzips) a .gz input in place.
    local input_path
    if [ -f "$input" ]; then
        input_path=$(cd "$(dirname "$input")" && pwd)/$(basename "$input")
    elif [ -f "$ph4/src/$input" ]; then
        input_path=$ph4/src/$input
    else
        die "input $input not found (neither a file nor one under $ph4/src)"
    fi

    local scratch
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/ph4_standalone.XXXXXX")
    # shellcheck disable=SC2064 # expand now: the folder is local to this function
    trap "rm -rf '$scratch' '$out_json.tmp'" EXIT
    cp -p "$ph4"/src/* "$scratch/"
    cp -p "$input_path" "$scratch/"
    local input_name
    input_name=$(basename "$input_path")

    local libs="-L$ph4/lib/stopcond -lstopcondmpi -L$libdir -lsapporo"

    # Build (out of tree, in the scratch copy). LIBS is the only Makefile variable replaced;
    # AMUSE_DIR points its default -I at PH4_DIR/lib/stopcond.
    echo "building parallel_hermite_4 against $libdir/libsapporo.so" >&2
    if ! make -C "$scratch" -f Makefile.ph4 -j"$(nproc)" parallel_hermite_4 \
        MPICXX=mpicxx MPICC=mpicc AMUSE_DIR="$ph4" LIBS="$libs" > "$build_log" 2>&1; then
        tail -20 "$build_log" >&2
        die "building parallel_hermite_4 failed (whole log: $build_log)"
    fi
    local exe=$scratch/parallel_hermite_4
    [ -x "$exe" ] || die "make succeeded but made no parallel_hermite_4 (see $build_log)"

    export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    # The library the binary will really load (no rpath: LD_LIBRARY_PATH first).
    local loaded
    loaded=$(ldd "$exe" | awk '$1 == "libsapporo.so" { print $3 }')
    [ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$(readlink -f "$libdir/libsapporo.so")" ] ||
        die "parallel_hermite_4 would load '${loaded:-no libsapporo.so}', not $libdir/libsapporo.so"

    # forcekit's libsapporo finds its kernels in the repository (a build tree has no
    # share/forcekit/cl) and, by default here, neither reads nor writes a tuning database. The
    # comparison library ignores all of these.
    export FORCEKIT_KERNEL_DIR=${FORCEKIT_KERNEL_DIR:-$root/cl}
    export FORCEKIT_TUNING_DB=${FORCEKIT_TUNING_DB:-off}
    # ph4 ignores the g6 return codes: let the library say why a call failed, in the log.
    export FORCEKIT_G6_VERBOSE=${FORCEKIT_G6_VERBOSE:-1}
    export FORCEKIT_CACHE_DIR=${FORCEKIT_CACHE_DIR:-$out_dir/ph4-cache/forcekit}
    export POCL_CACHE_DIR=${POCL_CACHE_DIR:-$out_dir/ph4-cache/pocl}
    mkdir -p "$FORCEKIT_CACHE_DIR" "$POCL_CACHE_DIR"
    if [ "$(id -u)" = 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi

    local flags=(-f "$input_name" -t "$t_end" -d "$t_end")
    echo "running parallel_hermite_4 ${flags[*]} (log: $log)" >&2
    # Guards: ph4 ignores failed g6 calls, and with FORCEKIT_G6_VERBOSE every failure is a line,
    # so a broken library can write gigabytes; the log is cut at 64 MiB (a good run writes a few
    # KiB), which stops ph4 (SIGPIPE). PH4_TIMEOUT (seconds, default none) bounds the run.
    local cap=$((64 * 1024 * 1024)) limit=${PH4_TIMEOUT:-0} timeout_cmd=()
    [[ $limit =~ ^[0-9]+$ ]] || die "PH4_TIMEOUT must be a whole number of seconds"
    [ "$limit" = 0 ] || timeout_cmd=(timeout -k 10 "$limit")
    local t0 t1 rc
    t0=$(date +%s.%N)
    set +e
    (cd "$scratch" && "${timeout_cmd[@]}" mpirun -np 1 --bind-to none -x LD_LIBRARY_PATH \
        ./parallel_hermite_4 "${flags[@]}") 2>&1 | head -c "$cap" > "$log"
    rc=${PIPESTATUS[0]}
    set -e
    t1=$(date +%s.%N)
    [ "$(stat -c %s "$log")" -lt "$cap" ] ||
        die "ph4's output passed 64 MiB and was cut (failing g6 calls?): $(grep -m1 '^forcekit libsapporo:' "$log" || echo 'no libsapporo message') (log: $log)"
    [ "$rc" != 124 ] || die "parallel_hermite_4 ran past PH4_TIMEOUT=$limit s (log: $log)"
    [ "$rc" = 0 ] || { tail -20 "$log" >&2; die "parallel_hermite_4 exited with status $rc (log: $log)"; }

    # What ph4 printed (see the header): the parameters it used, then one block per diagnostic.
    grep -q '^ *-g use_gpu = 1$' "$log" || die "ph4 did not run with use_gpu = 1 (log: $log)"
    grep -q '^opening GPU ' "$log" || die "ph4 never called g6_open (no 'opening GPU' in $log)"
    # ph4 ignores failed g6 calls and goes on with zero forces (a free expansion): a bound
    # system's potential energy must be negative at both diagnostics.
    local pe_first pe_last
    pe_first=$(awk '/^pe = / { sub(/^pe = /, ""); sub(/,.*/, ""); print; exit }' "$log")
    pe_last=$(awk '/^pe = / { sub(/^pe = /, ""); sub(/,.*/, ""); v = $0 } END { print v }' "$log")
    is_number "$pe_first" && is_number "$pe_last" &&
        awk -v a="$pe_first" -v b="$pe_last" 'BEGIN { exit !(a + 0 < 0 && b + 0 < 0) }' ||
        die "potential energy '$pe_first' .. '$pe_last' is not negative: the g6 force calls failed ($(grep -c '^forcekit libsapporo:' "$log" || true) libsapporo messages; log: $log)"
    local n e_first e_last de_last t_last steps blocks gpu_calls elapsed
    n=$(awk '/^nj = / { sub(/^nj = /, ""); sub(/,.*/, ""); print; exit }' "$log")
    e_first=$(awk '/^E = .*E-E0 = / { sub(/^E = /, ""); sub(/,.*/, ""); print; exit }' "$log")
    e_last=$(awk '/^E = .*E-E0 = / { sub(/^E = /, ""); sub(/,.*/, ""); v = $0 } END { print v }' "$log")
    de_last=$(awk '/^E = .*E-E0 = / { sub(/.*E-E0 = /, ""); v = $0 } END { print v }' "$log")
    t_last=$(awk '/^system_time = / { sub(/^system_time = /, ""); sub(/,.*/, ""); v = $0 }
        END { print v }' "$log")
    steps=$(awk '/^block_steps = .*total_steps = / { sub(/.*total_steps = /, ""); v = $0 }
        END { print v }' "$log")
    blocks=$(awk '/^block_steps = / { sub(/^block_steps = /, ""); sub(/,.*/, ""); v = $0 }
        END { print v }' "$log")
    gpu_calls=$(awk '/^gpu_calls = / { sub(/^gpu_calls = /, ""); sub(/,.*/, ""); v = $0 }
        END { print v }' "$log")
    elapsed=$(awk '/^elapsed_time = / { sub(/^elapsed_time = /, ""); sub(/,.*/, ""); v = $0 }
        END { print v }' "$log")
    local count
    count=$(grep -c '^E = .*E-E0 = ' "$log" || true)
    [ "$count" -ge 2 ] || die "ph4 printed $count energy diagnostics, not the initial and final ones (log: $log)"
    for f in "$n" "$e_first" "$e_last" "$de_last" "$t_last" "$steps" "$blocks" "$gpu_calls" "$elapsed"; do
        is_number "$f" || die "unparseable ph4 output ('$f' is not a finite number; log: $log)"
    done
    awk -v t="$t_last" -v te="$t_end" 'BEGIN { exit !(t + 0 >= te + 0) }' ||
        die "ph4's last diagnostic is at t = $t_last, before T_END = $t_end (log: $log)"
    awk -v e="$e_first" 'BEGIN { exit !(e + 0 != 0) }' || die "initial energy is 0 (log: $log)"
    local rel wall
    rel=$(awk -v de="$de_last" -v e="$e_first" 'BEGIN { printf "%.6e", de / (e < 0 ? -e : e) }')
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')

    local env_json="" v
    for v in $(compgen -e | grep '^FORCEKIT_G6_' | LC_ALL=C sort); do
        env_json+="${env_json:+, }$(json_str "$v"): $(json_str "${!v}")"
    done
    {
        echo "{"
        echo "  \"input\": $(json_str "$input_path"),"
        echo "  \"n\": $n,"
        echo "  \"t_end\": $t_end,"
        echo "  \"t_final\": $t_last,"
        echo "  \"energy_initial\": $e_first,"
        echo "  \"energy_final\": $e_last,"
        echo "  \"relative_energy_error\": $rel,"
        echo "  \"wall_seconds\": $wall,"
        echo "  \"ph4_elapsed_seconds\": $elapsed,"
        echo "  \"total_steps\": $steps,"
        echo "  \"block_steps\": $blocks,"
        echo "  \"gpu_calls\": $gpu_calls,"
        echo "  \"ph4_flags\": $(json_str "${flags[*]}"),"
        echo "  \"mpi_ranks\": 1,"
        echo "  \"potential_initial\": $pe_first,"
        echo "  \"potential_final\": $pe_last,"
        echo "  \"libsapporo_messages\": $(grep -c '^forcekit libsapporo:' "$log" || true),"
        echo "  \"sapporo_lib\": $(json_str "$(readlink -f "$libdir/libsapporo.so")"),"
        echo "  \"env\": {$env_json},"
        echo "  \"host\": $(json_str "$(hostname)"),"
        echo "  \"log\": $(json_str "$log")"
        echo "}"
    } > "$out_json.tmp"
    mv "$out_json.tmp" "$out_json"
    echo "ph4 N = $n to t = $t_last: relative energy error $rel, wall ${wall} s -> $out_json" >&2
}

[ $# -ge 1 ] || usage
case $1 in
prepare)
    [ $# = 2 ] || usage
    prepare "$2"
    ;;
run)
    [ $# -ge 4 ] && [ $# -le 6 ] || usage
    shift
    run "$@"
    ;;
*) usage ;;
esac
