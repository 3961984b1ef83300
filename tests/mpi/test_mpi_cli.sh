#!/usr/bin/env bash
# `mpirun -np P forcekit forces|simulate|bench` (issue #20): the output file of P = 1, 2 and 3 ranks
# equals the plain command's byte for byte (ga and lj with fixed64; lj in a periodic box with
# cells), so does the checkpoint after 100 fixed64 simulate steps for P = 1 and 3, the JSON
# summaries carry the "mpi" object (bench: the forces' checksum is the same for P = 1 and 3) with one entry per rank, and a bad input ends the job with a
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
# simulate: 100 steps with fixed64 (gaj Hermite on a Plummer sphere; lj in a periodic box with
# cells): the final checkpoint of 1 and 3 ranks equals the plain command's, byte for byte. These
# runs take the host path with replicated data (--integrate host; the device path under mpirun is
# test_mpi_cli_md.sh's), and so does the plain run they are compared with.
sims=("--kernel gaj --system plummer --n 300 --dt 0.002 --algorithm all-pairs"
      "--kernel lj --system lj-fluid --n 500 --dt 0.002 --algorithm cells")
for k in 0 1; do
    read -r -a args <<< "${sims[$k]}"
    "$forcekit" simulate "${args[@]}" --steps 100 --accum fixed64 --integrate host \
        --checkpoint "$work/sim$k" 2>/dev/null
    for np in 1 3; do
        "${mpiexec[@]}" -np "$np" "$forcekit" simulate "${args[@]}" --steps 100 --accum fixed64 \
            --integrate host --checkpoint "$work/sim$k-$np" --json > "$work/sim$k-$np.json" \
            2>/dev/null
        check "simulate ${args[1]}: the 100-step checkpoint of $np ranks equals the plain run's" \
            cmp -s "$work/sim$k" "$work/sim$k-$np"
        check "simulate ${args[1]}: $np ranks in the JSON summary" \
            python3 -c 'import json,sys
m=json.load(open(sys.argv[1]))["mpi"]; assert m["ranks"]==int(sys.argv[2]), m' \
            "$work/sim$k-$np.json" "$np"
    done
done
# bench: the checksum of the forces after R distributed steps is the same for 1 and 3 ranks.
for np in 1 3; do
    "${mpiexec[@]}" -np "$np" "$forcekit" bench --kernel ga --accum fixed64 --n 1000 --reps 3 \
        --json > "$work/bench-$np.json" 2>/dev/null
done
check "bench: the same checksum on 1 and 3 ranks, 3 ranks in the summary" \
    python3 -c 'import json,sys
a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2]))
assert a["checksum"]==b["checksum"], (a["checksum"], b["checksum"])
assert b["mpi"]["ranks"]==3 and b["pairs_per_step"]==1000*1000, b' \
    "$work/bench-1.json" "$work/bench-3.json"
# Exclusions: with all-pairs they are the plain command's; cells in a periodic box (the spatial
# scheme, global indices) refuse them with a message, on every rank count.
printf '0 1\n2 3\n10 11\n' > "$work/exclude.txt"
"$forcekit" forces --kernel lj --accum fixed64 --box "$box" --in "$work/lj.txt" \
    --exclude "$work/exclude.txt" --out "$work/excl-plain.txt" 2>/dev/null
"${mpiexec[@]}" -np 2 "$forcekit" forces --kernel lj --accum fixed64 --box "$box" \
    --in "$work/lj.txt" --exclude "$work/exclude.txt" --out "$work/excl-mpi.txt" 2>/dev/null
check "exclusions, all-pairs, 2 ranks: the plain command's output" \
    cmp -s "$work/excl-plain.txt" "$work/excl-mpi.txt"
if "${mpiexec[@]}" -np 2 "$forcekit" forces --kernel lj --accum fixed64 --box "$box" \
    --algorithm cells --in "$work/lj.txt" --exclude "$work/exclude.txt" \
    --out "$work/excl-cells.txt" > /dev/null 2> "$work/err"; then
    echo "FAILED: exclusions with cells under mpirun exited 0"
    failed=$((failed + 1))
else
    check "exclusions with cells under mpirun: the message says why" \
        grep -q "exclusions under mpirun need --algorithm all-pairs" "$work/err"
fi
# Bad input: a missing file, on every rank: nonzero exit and the message, no hang.
if "${mpiexec[@]}" -np 2 "$forcekit" forces --kernel ga --in "$work/missing.txt" \
    --out "$work/never.txt" > /dev/null 2> "$work/err"; then
    echo "FAILED: a missing input file exited 0"
    failed=$((failed + 1))
else
    check "missing input: the message names the file" grep -q "missing.txt" "$work/err"
    check "missing input: no output file" test ! -e "$work/never.txt"
fi
# Every rank reads its own copy of the input (issue #32): the ranks must agree on it. A per-rank
# wrapper gives rank 0 one file and the other ranks another. (a) 500 particles on rank 0, 400 on
# rank 1: the job fails on every rank with the library's message (before, rank 1 read 450 ranks'
# worth of forces into its 400-particle buffer: a heap overflow under ASan); (b) two different
# 500-particle files: the job fails (before, it exited 0 with forces 101% wrong); (c) simulate
# with a different --seed on rank 1 (different generated systems) fails the same way; (d) so does
# another --exclude file on rank 1 (exit 0 before the command compared them).
"$forcekit" generate --model plummer --n 500 --seed 21 --out "$work/in500a.txt" 2>/dev/null
"$forcekit" generate --model plummer --n 500 --seed 22 --out "$work/in500b.txt" 2>/dev/null
"$forcekit" generate --model plummer --n 400 --seed 21 --out "$work/in400.txt" 2>/dev/null
cat > "$work/per-rank.sh" <<'EOF_WRAPPER'
#!/bin/sh
# per-rank.sh RANK0_ARG OTHER_ARG FORCEKIT ARGS...: runs FORCEKIT ARGS with every @ replaced by
# RANK0_ARG on rank 0 and by OTHER_ARG on the others (Open MPI's or MPICH's rank variable).
first=$1 other=$2
shift 2
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
[ "$rank" = 0 ] && mine=$first || mine=$other
command=$1
shift
for argument in "$@"; do
    [ "$argument" = @ ] && argument=$mine
    set -- "$@" "$argument"
    shift
done
exec "$command" "$@"
EOF_WRAPPER
chmod +x "$work/per-rank.sh"
different_inputs() { # description expected-message-part mpiexec-args...
    local what=$1 expect=$2 code=0
    shift 2
    "${mpiexec[@]}" -np 2 "$work/per-rank.sh" "$@" > /dev/null 2> "$work/err" || code=$?
    if [ "$code" -eq 0 ]; then
        echo "FAILED: $what: exited 0"
        failed=$((failed + 1))
        return
    fi
    check "$what: exit 2, not $code" test "$code" -eq 2
    check "$what: the message says the ranks' inputs differ" grep -q "$expect" "$work/err"
    check "$what: no sanitizer report" bash -c '! grep -q "Sanitizer" "$1"' _ "$work/err"
    check "$what: no output file" test ! -e "$work/never.txt"
}
different_inputs "forces, 500 particles on rank 0 and 400 on rank 1" \
    "rank 0 has 500 particles, rank 1 has 400" \
    "$work/in500a.txt" "$work/in400.txt" \
    "$forcekit" forces --kernel ga --accum fixed64 --eps 0.01 --in @ --out "$work/never.txt"
different_inputs "forces, two different 500-particle files" "rank 1's particles differ from rank 0's" \
    "$work/in500a.txt" "$work/in500b.txt" \
    "$forcekit" forces --kernel ga --accum fixed64 --eps 0.01 --in @ --out "$work/never.txt"
different_inputs "simulate, another --seed on rank 1" "rank 1's particles differ from rank 0's" \
    1 2 "$forcekit" simulate --kernel ga --system plummer --n 200 --steps 2 --seed @ \
    --checkpoint "$work/never.txt"
# (d) another exclusion file on rank 1 (the command compares pair tables and exclusions).
printf '0 1\n' > "$work/exclude0.txt"
printf '0 2\n' > "$work/exclude1.txt"
different_inputs "forces, another --exclude file on rank 1" "the ranks read different pair tables or exclusions" \
    "$work/exclude0.txt" "$work/exclude1.txt" \
    "$forcekit" forces --kernel lj --accum fixed64 --box "$box" --in "$work/lj.txt" --exclude @ \
    --out "$work/never.txt"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
