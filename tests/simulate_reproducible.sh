#!/bin/sh
# usage: simulate_reproducible.sh FORCEKIT STEPS
#
# Issue #33 item 3: `forcekit simulate --reproducible` on the device integrator gives the same
# trajectory bits on every device with fp64 and with every pair loop. An LJ fluid of N = 4,096
# (density 0.8, T* = 1, rc 2.5, dt 0.005, skin 0.3) runs STEPS steps with Verlet and with Langevin
# (seed 1, gamma 1), each with the cells and the neighbour-list loops; the test requires
#   - the two loops' state_checksum equal (on this device), and
#   - each equal to the checksum recorded below, measured on POCL and on Intel's OpenCL CPU
#     runtime (the same value on both, 2026-11-28): a device whose bits differ fails.
# Recorded rather than passed from CI's POCL stage to its Intel stage: the test then needs no
# artifact between stages, runs alike on a developer's `ctest -L device` and on the GPU, and
# compares three things (two loops here, the other runtime's recorded bits). A change to the
# integrator, the LJ kernel or the fluid generator that changes the trajectory changes the
# recorded values: rerun this script on POCL and Intel's runtime and record the new ones (they
# must agree). Devices without fp64 cannot run the device integrator: skipped (exit 77).
set -u
forcekit=$1
steps=$2
case "$steps" in
200) expected_verlet=74b03f87d7780d33 expected_langevin=6de0dec3294833a6 ;;
1000) expected_verlet=e8b4574fead3d7d5 expected_langevin=826d1bed71c8f0eb ;;
*)
    echo "no recorded checksum for $steps steps" >&2
    exit 2
    ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/forcekit-reproducible.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
failures=0
for integrator in verlet langevin; do
    eval expected=\$expected_$integrator
    for algorithm in neighbors cells; do
        "$forcekit" simulate --kernel lj --n 4096 --steps "$steps" --sample "$steps" \
            --algorithm "$algorithm" --skin 0.3 --reproducible --integrator "$integrator" \
            --integrate device --json >"$work/out.json" 2>"$work/err"
        rc=$?
        if [ "$rc" -ne 0 ]; then
            cat "$work/err" >&2
            if grep -q 'fp64\|double precision' "$work/err"; then
                echo "SKIP: the device has no fp64 (the device integrator needs it)"
                exit 77
            fi
            echo "FAIL: $integrator $algorithm exited $rc" >&2
            failures=$((failures + 1))
            continue
        fi
        checksum=$(tr -d ' \t\n' <"$work/out.json" |
            sed -n 's/.*"state_checksum":"\([0-9a-f]*\)".*/\1/p')
        device=$(tr -d '\n' <"$work/out.json" | sed -n 's/.*"device":[[:space:]]*"\([^"]*\)".*/\1/p')
        if [ "$checksum" = "$expected" ]; then
            echo "ok: $integrator $algorithm $steps steps on $device: $checksum"
        else
            echo "FAIL: $integrator $algorithm $steps steps on $device: state_checksum" \
                "'$checksum', recorded (POCL, Intel) $expected" >&2
            failures=$((failures + 1))
        fi
    done
done
[ "$failures" -eq 0 ]
