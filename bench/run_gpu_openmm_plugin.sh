#!/usr/bin/env bash
# The OpenMM plugin on a GPU (issue #34): bench/openmm_plugin.py (an OpenMM Simulation of an LJ
# fluid, CutoffPeriodic, rc 2.5 sigma, density 0.8; the plugin, float and fixed64, against OpenMM's
# own NonbondedForce on OpenMM's OpenCL platform) at N = 65,536 and 1,048,576, plus the plugin's
# pytest file on the GPU. The GPU machine has no network: the Python wheels travel in
# .devdeps/wheels (shared/device/prepare.sh's folder, named in `carry`).
#   On a networked machine, in the project's root:
#     bench/run_gpu_openmm_plugin.sh --fetch [PYVER]   (PYVER: the GPU machine's python3, 3.12)
#   On the GPU machine, after `source .devdeps/setup.sh`:
#     bench/run_gpu_openmm_plugin.sh OUT_DIR
# Environment: N_LIST (default "65536 1048576"), PRECISIONS (default "single mixed"), PYTHON
# (default python3), WORK (default build-gpu-openmm: the venv and the extension's build).
set -euo pipefail
wheels=.devdeps/wheels
packages="openmm numpy scikit-build-core nanobind pytest"
if [ "${1:-}" = --fetch ]; then
    pyver=${2:-3.12}
    mkdir -p "$wheels"
    grep -qx '/.devdeps/' .git/info/exclude 2>/dev/null || echo '/.devdeps/' >> "$(git rev-parse --git-path info/exclude)"
    python3 -m pip download -q -d "$wheels" --only-binary=:all: --python-version "$pyver" \
        --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any $packages
    ls "$wheels"
    exit 0
fi
if [ $# -ne 1 ]; then
    echo "usage: $0 --fetch [PYVER] | $0 OUT_DIR" >&2
    exit 2
fi
out=$1
work=$(pwd)/${WORK:-build-gpu-openmm}  # absolute: pip resolves build-dir from python/
mkdir -p "$out" "$work"
venv=$work/venv
[ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/pip" install -q --no-index --find-links "$wheels" $packages
"$venv/bin/pip" install -q --no-index --no-build-isolation ./python \
    --config-settings=build-dir="$work/ext"
"$venv/bin/python" -c 'import forcekit.openmm as f; print("plugin:", f.load_plugin())'
FORCEKIT_DEVICE=${FORCEKIT_DEVICE:-gpu} "$venv/bin/pytest" -q -p no:cacheprovider \
    python/tests/test_openmm_plugin.py > "$out/pytest_openmm_plugin.txt" 2>&1 ||
    echo "$0: the plugin's tests failed on this machine: $out/pytest_openmm_plugin.txt" >&2
for n in ${N_LIST:-65536 1048576}; do
    for precision in ${PRECISIONS:-single mixed}; do
        if [ "$n" -ge 1000000 ]; then steps=100 warmup=20; else steps=500 warmup=50; fi
        "$venv/bin/python" bench/openmm_plugin.py --n "$n" --precision "$precision" \
            --steps "$steps" --warmup "$warmup" --out "$out/n${n}_${precision}.json" \
            2> "$out/n${n}_${precision}.log" ||
            echo "$0: N = $n $precision failed: $out/n${n}_${precision}.log" >&2
    done
done
ls "$out"
