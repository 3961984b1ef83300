#!/usr/bin/env bash
# `mpirun -np P forcekit simulate` on the device path (fk_mpi_integrator, issue #33 item 5): an LJ
# fluid with neighbour lists (--skin 0.3), fixed64 (--reproducible), 200 steps sampled every step
# (so each call steps once: a redistribution must still follow every leave vote), Verlet and
# Langevin: the final state_checksum of 2 and 3 ranks equals the single-process run's, the JSON
# says "device" and counts the redistributions; a restart under mpirun (2 ranks to step 100, 3
# ranks on to 200) ends on the uninterrupted run's checksum, and a single process refuses that
# checkpoint (it holds no forces); all-pairs falls back to the host path with one note, and its
# checksum is the single-process host run's; --integrate device where it cannot run fails.
#   test_mpi_cli_md.sh FORCEKIT MPIEXEC [MPIEXEC FLAGS...]
set -euo pipefail
forcekit=$1
shift
mpiexec=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
check() { # description command...
    local what=$1
    shift
    if "$@"; then passed=$((passed + 1)); else echo "FAILED: $what"; failed=$((failed + 1)); fi
}
field() { # file key: the JSON document's top-level value
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}
# --halo-margin 0.3 (the default is twice the cutoff): redistributions during the 200 steps; one
# process ignores it.
fluid=(--kernel lj --system lj-fluid --n 864 --dt 0.002 --reproducible --algorithm neighbors
       --skin 0.3 --halo-margin 0.3 --json)
runs=("verlet" "langevin --temperature 1.2")
for k in 0 1; do
    read -r -a dynamics <<< "${runs[$k]}"
    "$forcekit" simulate "${fluid[@]}" --integrator "${dynamics[@]}" --steps 200 \
        > "$work/plain$k.json" 2>/dev/null
    for np in 2 3; do
        "${mpiexec[@]}" -np "$np" "$forcekit" simulate "${fluid[@]}" \
            --integrator "${dynamics[@]}" --steps 200 > "$work/mpi$k-$np.json" 2>"$work/err" ||
            cat "$work/err"
        check "${dynamics[0]}, $np ranks: the single-process run's state_checksum" \
            test "$(field "$work/plain$k.json" state_checksum)" = \
            "$(field "$work/mpi$k-$np.json" state_checksum)"
        check "${dynamics[0]}, $np ranks: the device path, redistributions counted" \
            python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); m=d["mpi"]
assert d["integrate"]=="device" and m["integrate"]=="device", d["integrate"]
assert m["ranks"]==int(sys.argv[2]) and len(m["per_rank"])==m["ranks"], m
assert m["redistributions"]>1, m  # set_state and at least one during the steps
assert sum(r["particles"] for r in m["per_rank"])==864, m' "$work/mpi$k-$np.json" "$np"
    done
done
# Restart: the checkpoint of 2 ranks at step 100, continued by 3 ranks to 200.
"${mpiexec[@]}" -np 2 "$forcekit" simulate "${fluid[@]}" --steps 100 \
    --checkpoint "$work/half" > /dev/null 2>&1
check "restart: the checkpoint says its forces are recomputed" \
    grep -q "^option forces recomputed" "$work/half"
"${mpiexec[@]}" -np 3 "$forcekit" simulate "${fluid[@]}" --steps 200 --restart "$work/half" \
    > "$work/restarted.json" 2>"$work/err" || cat "$work/err"
check "restart under mpirun (2 ranks, then 3): the uninterrupted run's state_checksum" \
    test "$(field "$work/plain0.json" state_checksum)" = \
    "$(field "$work/restarted.json" state_checksum)"
if "$forcekit" simulate "${fluid[@]}" --steps 200 --restart "$work/half" > /dev/null \
    2> "$work/err"; then
    echo "FAILED: a single process restarted a checkpoint without forces"
    failed=$((failed + 1))
else
    check "a single process refuses the checkpoint, saying why" \
        grep -q "holds no forces" "$work/err"
fi
# The fallback: all-pairs is not the spatial scheme: the host path, said once, on rank 0.
pairs=(--kernel lj --system lj-fluid --n 256 --dt 0.002 --reproducible --algorithm all-pairs
       --steps 20 --json)
"$forcekit" simulate "${pairs[@]}" --integrate host > "$work/pairs-plain.json" 2>/dev/null
"${mpiexec[@]}" -np 2 "$forcekit" simulate "${pairs[@]}" > "$work/pairs.json" 2>"$work/err"
check "all-pairs under mpirun: one note says it integrates on the host, and why" \
    test "$(grep -c "integrating on the host (.*allgather" "$work/err")" -eq 1
check "all-pairs under mpirun: the host path, the single-process host run's checksum" \
    test "$(field "$work/pairs.json" integrate)/$(field "$work/pairs.json" state_checksum)" = \
    "host/$(field "$work/pairs-plain.json" state_checksum)"
if "${mpiexec[@]}" -np 2 "$forcekit" simulate "${pairs[@]}" --integrate device > /dev/null \
    2> "$work/err"; then
    echo "FAILED: --integrate device with all-pairs under mpirun exited 0"
    failed=$((failed + 1))
else
    check "--integrate device with all-pairs under mpirun: the message says why" \
        grep -q "spatial" "$work/err"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
