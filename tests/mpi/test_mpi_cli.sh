#!/usr/bin/env bash
# `mpirun -np P forcekit forces` (issue #20): the output file of P = 1, 2 and 3 ranks equals the
# plain command's byte for byte (ga and lj with fixed64; lj in a periodic box with cells), the JSON
# summary carries the "mpi" object with one entry per rank, and a bad input ends the job with a
# nonzero exit and rank 0's message, without hanging (the caller's timeout bounds it).
#   test_mpi_cli.sh FORCEKIT MPIEXEC [MPIEXEC FLAGS...]
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
"$forcekit" generate --model plummer --n 1500 --seed 7 --out "$work/ga.txt" 2>/dev/null
"$forcekit" generate --model lj-fluid --n 2048 --seed 7 --out "$work/lj.txt" 2>/dev/null
box=$(sed -n 's/.*--box \([^ ]*\).*/\1/p' "$work/lj.txt" | head -1)
runs=("ga --accum fixed64 --eps 0.01 --in $work/ga.txt"
      "lj --accum fixed64 --box $box --algorithm cells --in $work/lj.txt")
for k in 0 1; do
    read -r -a args <<< "${runs[$k]}"
    "$forcekit" forces --kernel "${args[@]}" --potential --out "$work/plain$k.txt" 2>/dev/null
    for np in 1 2 3; do
        "${mpiexec[@]}" -np "$np" "$forcekit" forces --kernel "${args[@]}" --potential \
            --out "$work/mpi$k-$np.txt" --json > "$work/mpi$k-$np.json" 2>"$work/err"
        check "kernel ${args[0]}: the output of $np ranks equals the plain command's" \
            cmp -s "$work/plain$k.txt" "$work/mpi$k-$np.txt"
        check "kernel ${args[0]}: $np ranks in the JSON summary" \
            python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); m=d["mpi"]; n=int(sys.argv[2])
assert m["ranks"]==n and len(m["per_rank"])==n, m
assert all(r["pairs"]>0 and r["compute_seconds"]>=0 for r in m["per_rank"]), m' \
            "$work/mpi$k-$np.json" "$np"
    done
done
# Bad input: a missing file, on every rank: nonzero exit and the message, no hang.
if "${mpiexec[@]}" -np 2 "$forcekit" forces --kernel ga --in "$work/missing.txt" \
    --out "$work/never.txt" > /dev/null 2> "$work/err"; then
    echo "FAILED: a missing input file exited 0"
    failed=$((failed + 1))
else
    check "missing input: the message names the file" grep -q "missing.txt" "$work/err"
    check "missing input: no output file" test ! -e "$work/never.txt"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
