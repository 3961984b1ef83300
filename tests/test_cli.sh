#!/bin/sh
# The forcekit command, driven from outside: exit codes (SPEC "Exit codes"), outputs, JSON documents
# and atomic output files.
#   test_cli.sh FORCEKIT_BINARY SOURCE_DIR
# CTest sets FORCEKIT_KERNEL_DIR and FORCEKIT_CACHE_DIR. Prints "N passed, M failed" at the end.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 FORCEKIT_BINARY SOURCE_DIR" >&2
    exit 2
fi
FK=$1
SOURCE_DIR=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/forcekit-cli.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

PYTHON=$(command -v python3 || true)
if [ -z "$PYTHON" ]; then
    echo "note: python3 not found; JSON documents are not validated"
fi

passed=0
failed=0
pass() {
    passed=$((passed + 1))
    echo "ok     $1"
}
fail() {
    failed=$((failed + 1))
    echo "FAILED $1"
    if [ -s "$WORK/err" ]; then
        sed 's/^/       stderr: /' "$WORK/err" | head -n 20
    fi
}
skip() {
    echo "skip   $1"
}

# run CMD...: runs a command with stdout in $WORK/out and stderr in $WORK/err; exit status in $rc.
run() {
    "$@" >"$WORK/out" 2>"$WORK/err"
    rc=$?
}

# expect_exit NAME CODE CMD...: the command exits with CODE.
expect_exit() {
    name=$1
    want=$2
    shift 2
    run "$@"
    if [ "$rc" -eq "$want" ]; then
        pass "$name"
    else
        fail "$name (exit $rc, expected $want)"
    fi
}

# expect_stderr NAME TEXT: the last command's stderr contains TEXT.
expect_stderr() {
    if grep -F -q -- "$2" "$WORK/err"; then
        pass "$1"
    else
        fail "$1 (stderr lacks '$2')"
    fi
}

# expect_empty_stdout NAME: the last command printed nothing on stdout.
expect_empty_stdout() {
    if [ -s "$WORK/out" ]; then
        fail "$1 (stdout not empty)"
    else
        pass "$1"
    fi
}

# expect_json NAME FILE EXPRESSION: FILE holds exactly one JSON document d and the Python
# EXPRESSION over d is true.
expect_json() {
    if [ -z "$PYTHON" ]; then
        skip "$1 (no python3)"
        return
    fi
    if "$PYTHON" -c '
import json, math, sys
with open(sys.argv[1]) as f:
    d = json.load(f)
sys.exit(0 if eval(sys.argv[2]) else 1)' "$2" "$3" 2>"$WORK/pyerr"; then
        pass "$1"
    else
        failed=$((failed + 1))
        echo "FAILED $1 (JSON check: $3)"
        sed 's/^/       /' "$WORK/pyerr" | tail -n 3
        head -c 2000 "$2" | sed 's/^/       json: /'
    fi
}

# expect_lines NAME FILE COUNT COLUMNS: FILE has COUNT lines of COLUMNS finite numbers each.
expect_lines() {
    if [ ! -f "$2" ]; then
        fail "$1 ($2 does not exist)"
        return
    fi
    if awk -v count="$3" -v columns="$4" '
        NF != columns { bad = 1 }
        { for (i = 1; i <= NF; i++)
              if ($i !~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/) bad = 1 }
        END { exit (bad || NR != count) ? 1 : 0 }' "$2"; then
        pass "$1"
    else
        fail "$1 (expected $3 lines of $4 finite numbers; got $(wc -l <"$2") lines)"
    fi
}

# expect_values NAME FILE "v11 v12 ... / v21 ...": FILE's numbers match row by row within 1e-6
# relative (OpenCL's rsqrt need not be correctly rounded).
expect_values() {
    if [ ! -f "$2" ]; then
        fail "$1 ($2 does not exist)"
        return
    fi
    if echo "$3" | tr '/' '\n' | awk '
        NR == FNR { for (i = 1; i <= NF; i++) want[FNR, i] = $i; wanted[FNR] = NF; rows = FNR; next }
        { got_rows = FNR
          if (NF != wanted[FNR]) bad = 1
          for (i = 1; i <= NF; i++) {
              d = $i - want[FNR, i]; if (d < 0) d = -d
              s = want[FNR, i]; if (s < 0) s = -s
              if (d > 1e-6 * (s > 1 ? s : 1)) bad = 1 } }
        END { exit (bad || got_rows != rows) ? 1 : 0 }' - "$2"; then
        pass "$1"
    else
        fail "$1 (expected '$3', got '$(tr '\n' '/' <"$2")')"
    fi
}

# no_temporary_files NAME DIR: no *.tmp* file left in DIR.
no_temporary_files() {
    if ls -a "$2" | grep -q '\.tmp'; then
        fail "$1 (temporary files left: $(ls -a "$2" | grep '\.tmp' | tr '\n' ' '))"
    else
        pass "$1"
    fi
}

# ---- fixtures ------------------------------------------------------------------------------------
printf '# two bodies at distance 2, masses 1 and 4\n0 0 0 1\n2 0 0 4\n' >"$WORK/two.txt"
printf '0 0 0 1\n2 0 0 oops\n' >"$WORK/bad.txt"
printf '0 0 0 1\n2 0 0 4 5\n' >"$WORK/columns.txt"
printf '0 0 0 1\n1 1 1 1\n0 0 0 2\n' >"$WORK/coincident.txt"
: >"$WORK/empty.txt"
printf '# nothing but comments\n\n   # and blanks\n' >"$WORK/comments.txt"
printf '0 0 0 1\nnan 0 0 1\n' >"$WORK/nan.txt"

# ---- usage ---------------------------------------------------------------------------------------
expect_exit "--help exits 0" 0 "$FK" --help
if grep -q '^usage: forcekit' "$WORK/out"; then pass "--help prints usage on stdout"; else fail "--help prints usage on stdout"; fi
expect_exit "no arguments exit 2" 2 "$FK"
expect_stderr "no arguments print usage" "usage: forcekit"
expect_exit "--version exits 0" 0 "$FK" --version
expect_exit "unknown command exits 2" 2 "$FK" frobnicate
for command in devices forces bench accuracy; do
    expect_exit "$command --help exits 0" 0 "$FK" "$command" --help
done

# ---- devices -------------------------------------------------------------------------------------
expect_exit "devices exits 0" 0 "$FK" devices
if grep -q '0:0' "$WORK/out"; then pass "devices lists selector 0:0"; else fail "devices lists selector 0:0"; fi
expect_exit "devices --json exits 0" 0 "$FK" devices --json
expect_json "devices --json is a list with the SPEC keys" "$WORK/out" \
    'isinstance(d, list) and len(d) >= 1 and all(all(k in x for k in ("selector", "name", "vendor", "type", "compute_units", "fp64")) for x in d) and sum(1 for x in d if x["default"]) == 1'
expect_exit "devices --device nosuchdevice exits 2" 2 "$FK" devices --device nosuchdevice

# ---- forces: results -----------------------------------------------------------------------------
expect_exit "forces on two bodies exits 0" 0 "$FK" forces --kernel ga --in "$WORK/two.txt"
expect_values "forces on two bodies: a = (1, -0.25)" "$WORK/out" "1 0 0/-0.25 0 0"
expect_stderr "forces names the variant's origin" "(built-in default)"
expect_exit "forces --unroll 2x4 exits 0" 0 "$FK" forces --kernel ga --in "$WORK/two.txt" --unroll 2x4
expect_stderr "forces --unroll says explicit" "variant 2x4 (explicit)"
expect_values "forces --unroll 2x4 gives the same values" "$WORK/out" "1 0 0/-0.25 0 0"
expect_exit "forces --potential exits 0" 0 "$FK" forces --kernel ga --in "$WORK/two.txt" --potential
expect_values "forces --potential appends phi" "$WORK/out" "1 0 0 -2/-0.25 0 0 -0.5"

mkdir "$WORK/outdir"
expect_exit "forces --out exits 0" 0 "$FK" forces --kernel ga --in "$WORK/two.txt" --out "$WORK/outdir/forces.txt"
expect_empty_stdout "forces --out prints nothing on stdout"
if [ -f "$WORK/outdir/forces.txt" ]; then
    pass "forces --out creates the file"
    expect_values "forces --out file content" "$WORK/outdir/forces.txt" "1 0 0/-0.25 0 0"
else
    fail "forces --out creates the file"
fi
no_temporary_files "forces --out leaves no temporary file" "$WORK/outdir"

expect_exit "forces --json --out exits 0" 0 "$FK" forces --kernel ga --in "$WORK/two.txt" --out "$WORK/outdir/json.txt" --json
expect_json "forces --json: one document with the keys" "$WORK/out" \
    'all(k in d for k in ("kernel", "accum", "n", "device", "unroll", "variant_source", "seconds", "out")) and d["n"] == 2 and d["unroll"] != "auto"'
expect_exit "forces --json without --out exits 2" 2 "$FK" forces --kernel ga --in "$WORK/two.txt" --json
expect_empty_stdout "forces --json usage error prints nothing on stdout"

# ---- forces: bad usage and bad input --------------------------------------------------------------
expect_exit "malformed file exits 2" 2 "$FK" forces --kernel ga --in "$WORK/bad.txt"
expect_stderr "malformed file names file:line" "bad.txt:2"
expect_exit "wrong column count exits 2" 2 "$FK" forces --kernel ga --in "$WORK/columns.txt"
expect_stderr "wrong column count names file:line" "columns.txt:2"
expect_exit "NaN in the file exits 2" 2 "$FK" forces --kernel ga --in "$WORK/nan.txt"
expect_exit "missing file exits 2" 2 "$FK" forces --kernel ga --in "$WORK/no-such-file.txt"
expect_stderr "missing file is named" "no-such-file.txt"
expect_exit "unknown option exits 2" 2 "$FK" forces --kernel ga --in "$WORK/two.txt" --frobnicate
expect_exit "stray argument exits 2" 2 "$FK" forces --kernel ga --in "$WORK/two.txt" stray
expect_exit "missing option value exits 2" 2 "$FK" forces --kernel ga --in
expect_exit "missing --kernel exits 2" 2 "$FK" forces --in "$WORK/two.txt"
expect_exit "unknown kernel exits 2" 2 "$FK" forces --kernel nosuchkernel --in "$WORK/two.txt"
expect_exit "unknown accumulator exits 2" 2 "$FK" forces --kernel ga --accum nosuchaccum --in "$WORK/two.txt"
expect_exit "bad --unroll exits 2" 2 "$FK" forces --kernel ga --unroll 3x4 --in "$WORK/two.txt"
expect_exit "bad number --eps abc exits 2" 2 "$FK" forces --kernel ga --eps abc --in "$WORK/two.txt"
expect_exit "bad number --eps=0.1x exits 2" 2 "$FK" forces --kernel ga --eps=0.1x --in "$WORK/two.txt"
expect_exit "negative --eps exits 2" 2 "$FK" forces --kernel ga --eps -1 --in "$WORK/two.txt"
expect_exit "--eps nan exits 2" 2 "$FK" forces --kernel ga --eps nan --in "$WORK/two.txt"
expect_exit "unknown device exits 2" 2 "$FK" forces --kernel ga --in "$WORK/two.txt" --device nosuchdevice
expect_exit "unknown FORCEKIT_DEVICE exits 2" 2 env FORCEKIT_DEVICE=nosuchdevice "$FK" forces --kernel ga --in "$WORK/two.txt"
expect_exit "coincident particles with eps 0 exit 2" 2 "$FK" forces --kernel ga --in "$WORK/coincident.txt"
expect_stderr "coincident particles are explained" "same position"
expect_exit "coincident particles with --eps 0.1 exit 0" 0 "$FK" forces --kernel ga --in "$WORK/coincident.txt" --eps 0.1
expect_lines "coincident particles with --eps 0.1 give finite forces" "$WORK/out" 3 3
expect_exit "empty file (N = 0) exits 2" 2 "$FK" forces --kernel ga --in "$WORK/empty.txt"
expect_exit "comment-only file (N = 0) exits 2" 2 "$FK" forces --kernel ga --in "$WORK/comments.txt"

# ---- forces: outputs are atomic -------------------------------------------------------------------
run "$FK" forces --kernel ga --in "$WORK/two.txt" --out "$WORK/no-such-dir/forces.txt"
if [ "$rc" -ne 0 ] && [ ! -e "$WORK/no-such-dir" ]; then
    pass "output into a nonexistent directory fails"
else
    fail "output into a nonexistent directory fails (exit $rc)"
fi
expect_exit "failed run with --out exits 2" 2 "$FK" forces --kernel ga --in "$WORK/coincident.txt" --out "$WORK/outdir/failed.txt"
if [ -e "$WORK/outdir/failed.txt" ]; then fail "failed run leaves no output file"; else pass "failed run leaves no output file"; fi
echo "previous content" >"$WORK/outdir/kept.txt"
expect_exit "failed run over an existing file exits 2" 2 "$FK" forces --kernel ga --in "$WORK/bad.txt" --out "$WORK/outdir/kept.txt"
if [ "$(cat "$WORK/outdir/kept.txt")" = "previous content" ]; then
    pass "failed run leaves an existing output untouched"
else
    fail "failed run leaves an existing output untouched"
fi
no_temporary_files "failed runs leave no temporary file" "$WORK/outdir"
if [ "$(id -u)" -ne 0 ]; then
    mkdir "$WORK/readonly" && chmod 555 "$WORK/readonly"
    expect_exit "output into a read-only directory exits 2" 2 "$FK" forces --kernel ga --in "$WORK/two.txt" --out "$WORK/readonly/forces.txt"
    chmod 755 "$WORK/readonly"
else
    skip "output into a read-only directory (running as root)"
fi

# ---- forces: TIPSY fixture ------------------------------------------------------------------------
GALAXY="$SOURCE_DIR/../shared/data/galaxy_20K.bin"
if [ -f "$GALAXY" ]; then
    expect_exit "forces on galaxy_20K.bin exits 0" 0 "$FK" forces --kernel ga --eps 0.01 --in "$GALAXY" --out "$WORK/galaxy.txt"
    expect_lines "galaxy_20K.bin gives 20000 lines of 3 finite numbers" "$WORK/galaxy.txt" 20000 3
else
    skip "TIPSY fixture ($GALAXY is absent)"
fi

# ---- bench ---------------------------------------------------------------------------------------
expect_exit "bench --json exits 0" 0 "$FK" bench --kernel ga --n 1000 --reps 3 --json
expect_json "bench --json has the SPEC keys and a real variant" "$WORK/out" \
    'all(k in d for k in ("kernel", "accum", "n", "device", "results", "reps", "date", "device_type", "driver_version", "platform")) and d["n"] == 1000 and len(d["results"]) == 1 and all(all(k in r for k in ("unroll", "seconds_per_eval", "interactions_per_second", "gflops")) and r["unroll"] != "auto" and r["seconds_per_eval"] > 0 and r["gflops"] > 0 for r in d["results"])'
expect_exit "bench --unroll all exits 0" 0 "$FK" bench --kernel ga --n 300 --reps 2 --unroll all --json
expect_json "bench --unroll all gives 16 variants" "$WORK/out" \
    'len(d["results"]) == 16 and len(set(r["unroll"] for r in d["results"])) == 16'
expect_exit "bench text table exits 0" 0 "$FK" bench --kernel ga --n 200 --reps 2 --unroll 2x2
if grep -q '^2x2 ' "$WORK/out"; then pass "bench text table has the variant row"; else fail "bench text table has the variant row"; fi
expect_exit "bench unknown kernel exits 2" 2 "$FK" bench --kernel nosuchkernel --n 100
expect_exit "bench --n 0 exits 2" 2 "$FK" bench --kernel ga --n 0
expect_exit "bench --n 12abc exits 2" 2 "$FK" bench --kernel ga --n 12abc
expect_exit "bench --n huge exits 2" 2 "$FK" bench --kernel ga --n 99999999999999999999999
expect_exit "bench --reps 0 exits 2" 2 "$FK" bench --kernel ga --n 100 --reps 0
expect_exit "bench --tiling maybe exits 2" 2 "$FK" bench --kernel ga --n 100 --tiling maybe

# ---- accuracy ------------------------------------------------------------------------------------
expect_exit "accuracy --json exits 0" 0 "$FK" accuracy --kernel ga --system plummer --n 2000 --json
expect_json "accuracy: float error in (0, 1e-4)" "$WORK/out" \
    'all(k in d for k in ("kernel", "n", "device", "results", "reference_offset")) and all(all(k in r for k in ("accum", "error", "offset", "seconds_per_eval", "relative_time")) for r in d["results"]) and [r for r in d["results"] if r["accum"] == "float"][0]["error"] > 0 and [r for r in d["results"] if r["accum"] == "float"][0]["error"] < 1e-4'
expect_json "accuracy: double is more accurate than float where it ran" "$WORK/out" \
    'all(r["error"] < [f for f in d["results"] if f["accum"] == "float"][0]["error"] for r in d["results"] if r["accum"] == "double")'
expect_exit "accuracy --in exits 0" 0 "$FK" accuracy --kernel ga --in "$WORK/two.txt" --accum float
expect_exit "accuracy needs --in or --system" 2 "$FK" accuracy --kernel ga
expect_exit "accuracy unknown system exits 2" 2 "$FK" accuracy --kernel ga --system nosuchsystem
expect_exit "accuracy unknown accumulator exits 2" 2 "$FK" accuracy --kernel ga --system plummer --n 100 --accum nosuchaccum

# ---- installation problems -----------------------------------------------------------------------
expect_exit "missing kernel directory exits 1" 1 env FORCEKIT_KERNEL_DIR=/nonexistent "$FK" forces --kernel ga --in "$WORK/two.txt"
expect_stderr "missing kernel directory names the path" "/nonexistent"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
