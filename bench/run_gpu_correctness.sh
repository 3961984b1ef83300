#!/usr/bin/env bash
# The vendor-neutral correctness issue's GPU checks (README "Bit-identity promises"):
#   bench/run_gpu_correctness.sh BUILD_DIR OUT_DIR
# Runs the device tests that hold the bit-identity scopes and the exclusion modes on the GPU, and
# Narumi's protein comparison of both exclusion modes.
set -uo pipefail
build=$1 out=$2
export FORCEKIT_DEVICE=${FORCEKIT_DEVICE:-gpu}
(cd "$build" && ctest --output-on-failure -j 4 \
    -R 'test_reproducible|test_exclusions|test_precision|test_cells|test_symmetric|test_accum') \
    > "$out/ctest_gpu.log" 2>&1
echo "ctest exit $?" >> "$out/ctest_gpu.log"
for kernel in ljc_constant lj; do
    "$build/forcekit" accuracy --system protein --kernel "$kernel" --reps 3 --json \
        > "$out/accuracy_protein_$kernel.json" 2>> "$out/accuracy_stderr.txt"
done
"$build/forcekit" devices --json > "$out/devices.json"
nvidia-smi > "$out/nvidia_smi.txt" 2>&1 || true
