#!/bin/sh
# Issue #17, deliverable 3 on a CPU: forcekit's cells and neighbors loops against OpenMM's CPU and
# OpenCL platforms on the MD workload (LJ fluid, density 0.8, rc 2.5, periodic, float), lj and
# ljc_constant, per evaluation with the forces read back, interleaved in one run.
#
#   bench/run_cpu_md.sh BUILD_DIR OUT_DIR [REPS] [SIZES]
#
# REPS (default 3) repetitions; in each, every size, law and program runs once in turn (forcekit
# bench_md_loops with both loops interleaved inside it, then bench_openmm_md on CPU and OpenCL, each
# with forcekit's law written exactly and with OpenMM's native NonbondedForce), so a busy spell of
# the shared machine falls on all of them. SIZES defaults to "16384 65536". Each program warms up
# with STEPS (default 10) NVE steps and then times EVALS (default 10) evaluations; the figures are
# per run min / median / max and, over the repetitions, the median of the medians. Writes
# OUT_DIR/raw/*.json, OUT_DIR/cpu_md.json and OUT_DIR/summary.md (bench/cpu_md_summary.py).
# LOOPS (default cells,neighbors) and MD_ARGS (more bench_md_loops options, e.g. "--lanes off")
# change what forcekit runs.
set -eu
build=${1:?usage: run_cpu_md.sh BUILD_DIR OUT_DIR [REPS] [SIZES]}
out=${2:?usage: run_cpu_md.sh BUILD_DIR OUT_DIR [REPS] [SIZES]}
reps=${3:-3}
sizes=${4:-16384 65536}
steps=${STEPS:-10}
evals=${EVALS:-10}
here=$(cd "$(dirname "$0")" && pwd)
forcekit="$build/forcekit"
md="$build/bench/bench_md_loops"
openmm="$build/bench/bench_openmm_md"
[ -x "$openmm" ] || { echo "run_cpu_md.sh: $openmm not built (OpenMM not found?)" >&2; exit 2; }
mkdir -p "$out/raw"
{
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host_cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "cores: $(nproc)"
    echo "pocl: $(dpkg-query -W -f='${Version}' libpocl2 2>/dev/null || echo unknown)"
    echo "openmm: $(dpkg-query -W -f='${Version}' libopenmm-dev 2>/dev/null || echo unknown)"
    echo "forcekit_commit: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "load_at_start: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/machine.txt"
for n in $sizes; do
    "$forcekit" generate --model lj-fluid --n "$n" --density 0.8 --out "$out/raw/fluid_$n.txt" \
        > /dev/null 2>&1
done
rep=1
while [ "$rep" -le "$reps" ]; do
    for n in $sizes; do
        for law in lj ljc_constant; do
            tag="n${n}_${law}_rep${rep}"
            echo "rep $rep n $n $law: forcekit (load $(cut -d' ' -f1 /proc/loadavg))" >&2
            # shellcheck disable=SC2086 # MD_ARGS: extra bench_md_loops options, word-split
            "$md" --n "$n" --kernel "$law" --rounds 1 --steps "$steps" --evals "$evals" \
                --loops "${LOOPS:-cells,neighbors}" ${MD_ARGS:-} > "$out/raw/forcekit_$tag.json"
            for platform in CPU OpenCL; do
                for form in exact native; do
                    echo "rep $rep n $n $law: OpenMM $platform $form" >&2
                    "$openmm" --in "$out/raw/fluid_$n.txt" --platform "$platform" --law "$law" \
                        --form "$form" --warmup-steps "$steps" --evals "$evals" \
                        > "$out/raw/openmm_${platform}_${form}_$tag.json"
                done
            done
            echo "$tag load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/load.txt"
        done
    done
    rep=$((rep + 1))
done
echo "load_at_end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/machine.txt"
# the generated inputs (several MB; `forcekit generate` makes them again from the seed)
rm -f "$out"/raw/fluid_*
python3 "$here/cpu_md_summary.py" "$out"
