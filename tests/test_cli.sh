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
for command in devices forces bench accuracy sumtest doundo; do
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
# Without a tuning database the built-in default runs (the "tune" section covers the databases).
expect_exit "forces on two bodies exits 0" 0 env FORCEKIT_SHIPPED_TUNING_DB=off "$FK" forces --kernel ga --in "$WORK/two.txt"
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
expect_exit "accuracy --accum all --json exits 0" 0 "$FK" accuracy --kernel ga --system plummer --n 1024 --reps 1 --json
expect_json "accuracy: all nine accumulators (those the device can run), with checksums" "$WORK/out" \
    'set(r["accum"] for r in d["results"]) | set(s["accum"] for s in d["skipped"]) == {"float", "double", "ti", "nitadori", "nitadori_large", "narumi", "ref", "composite", "fixed64"} and all(len(r["checksum"]) == 16 for r in d["results"])'
expect_json "accuracy: fixed64 and narumi offsets are exactly 0 (equal masses), float's is not" "$WORK/out" \
    'all(r["offset"] == 0 for r in d["results"] if r["accum"] in ("fixed64", "narumi")) and [r for r in d["results"] if r["accum"] == "float"][0]["offset"] > 0'
expect_json "accuracy: compensated errors at most 1e-6, below float's" "$WORK/out" \
    'all(r["error"] <= 1e-6 and r["error"] < [f for f in d["results"] if f["accum"] == "float"][0]["error"] for r in d["results"] if r["accum"] in ("ti", "composite", "narumi", "fixed64"))'
expect_exit "accuracy --system protein is not yet available (exit 2)" 2 "$FK" accuracy --kernel ga --system protein
expect_stderr "accuracy --system protein says so" "not yet available"
expect_exit "accuracy --system lj65536 is not yet available (exit 2)" 2 "$FK" accuracy --kernel ga --system lj65536

# ---- reproducible mode, sumtest, doundo ----------------------------------------------------------
printf '0 0 0 1\n1 0 0 0.5\n0 2 0 2\n0.3 0.1 -0.7 1\n' >"$WORK/four.txt"
expect_exit "forces --reproducible --json exits 0" 0 "$FK" forces --kernel ga --in "$WORK/four.txt" --reproducible --out "$WORK/r1.txt" --json
expect_json "forces --reproducible: fixed64 and a checksum" "$WORK/out" 'd["accum"] == "fixed64" and d["reproducible"] is True and len(d["checksum"]) == 16'
cp "$WORK/out" "$WORK/r1.json"
expect_exit "forces --reproducible with another variant exits 0" 0 "$FK" forces --kernel ga --in "$WORK/four.txt" --reproducible --unroll 1x1 --out "$WORK/r2.txt" --json
expect_json "forces --reproducible: the same checksum for another variant" "$WORK/out" \
    'd["checksum"] == json.load(open(sys.argv[1][:-3] + "r1.json"))["checksum"]'
expect_exit "forces --reproducible with --accum float exits 2" 2 "$FK" forces --kernel ga --in "$WORK/four.txt" --reproducible --accum float
expect_exit "sumtest --json exits 0" 0 "$FK" sumtest --json
expect_json "sumtest: 24 rows (4 thread counts x 6 orders) with SPEC's keys" "$WORK/out" \
    'len(d["results"]) == 24 and all(all(k in r for k in ("threads", "order", "float", "double", "composite", "ti", "fixed64")) for r in d["results"]) and sorted(set(r["threads"] for r in d["results"])) == [1, 10, 100, 1000]'
expect_json "sumtest: fixed64 sums are exactly 0, float's are not all 0" "$WORK/out" \
    'all(r["fixed64"] == 0 for r in d["results"]) and any(r["float"] != 0 for r in d["results"])'
expect_exit "sumtest odd --count exits 2" 2 "$FK" sumtest --count 7
expect_exit "doundo --json exits 0" 0 "$FK" doundo --iterations 100000 --json
expect_json "doundo: 3 ranges x 2 orders x each representation, float drifts" "$WORK/out" \
    'len(d["results"]) in (12, 18) and all(r["seconds"] >= 0 for r in d["results"]) and any(abs(r["drift"]) > 1e-7 for r in d["results"] if r["representation"] == "float")'

# ---- tune and the tuning databases ---------------------------------------------------------------
DB="$WORK/tuning.json"
expect_exit "tune --help exits 0" 0 "$FK" tune --help
expect_exit "tune without --kernel exits 2" 2 "$FK" tune --n 1024
expect_exit "tune unknown kernel exits 2" 2 "$FK" tune --kernel nosuchkernel
expect_exit "tune --budget 0 exits 2" 2 "$FK" tune --kernel ga --budget 0
expect_exit "tune --budget abc exits 2" 2 "$FK" tune --kernel ga --budget abc
started=$(date +%s.%N)
expect_exit "tune --budget 2 exits 0" 0 env FORCEKIT_TUNING_DB="$DB" "$FK" tune --kernel ga --n 1024 --budget 2 --json
finished=$(date +%s.%N)
if awk -v a="$started" -v b="$finished" 'BEGIN { exit (b - a < 6) ? 0 : 1 }'; then
    pass "tune --budget 2 finishes within 3x the budget"
else
    fail "tune --budget 2 finishes within 3x the budget (took $(awk -v a="$started" -v b="$finished" 'BEGIN { print b - a }') s)"
fi
expect_json "tune --json has the SPEC keys and says it sampled" "$WORK/out" \
    'all(k in d for k in ("kernel", "accum", "n", "device", "best", "tried")) and d["n"] == 1024 and d["search"] == "sampled" and d["buckets"][0]["search"] == "sampled" and d["best"]["unroll"] != "auto" and d["best"]["seconds_per_eval"] > 0 and len(d["tried"]) >= 1 and all("outcome" in t for t in d["tried"])'
expect_json "tune stored its best in FORCEKIT_TUNING_DB" "$DB" \
    'len(d["entries"]) == 1 and d["entries"][0]["kernel"] == "ga" and d["entries"][0]["n"] == 1024'
expect_exit "bench after tune exits 0" 0 env FORCEKIT_TUNING_DB="$DB" "$FK" bench --kernel ga --n 1000 --reps 2 --json
expect_json "bench takes the user database's entry" "$WORK/out" \
    'd["results"][0]["variant_source"] == "user_db"'
expect_exit "forces after tune exits 0" 0 env FORCEKIT_TUNING_DB="$DB" "$FK" forces --kernel ga --in "$WORK/two.txt"
expect_stderr "forces names the user database" "(user tuning database)"
printf '{"entries": [{"kernel": "ga", "accum": "float", "n": 1024, "unroll": "2x2", "work_group_size": 16}]}\n' >"$WORK/shipped.json"
expect_exit "forces with a shipped default entry exits 0" 0 env FORCEKIT_TUNING_DB=off FORCEKIT_SHIPPED_TUNING_DB="$WORK/shipped.json" "$FK" forces --kernel ga --in "$WORK/two.txt"
expect_stderr "forces names the shipped database" "variant 2x2 (shipped tuning database)"
expect_values "the shipped variant gives the same values" "$WORK/out" "1 0 0/-0.25 0 0"
printf '{"entries": [ oops\n' >"$WORK/corrupt.json"
expect_exit "a corrupt tuning database is not fatal" 0 env FORCEKIT_TUNING_DB="$WORK/corrupt.json" FORCEKIT_SHIPPED_TUNING_DB=off "$FK" forces --kernel ga --in "$WORK/two.txt"
expect_stderr "a corrupt tuning database is named in a warning" "warning: tuning database $WORK/corrupt.json (user) ignored"
expect_stderr "a corrupt tuning database falls back to the built-in default" "(built-in default)"
expect_exit "tune with FORCEKIT_TUNING_DB=off exits 0" 0 env FORCEKIT_TUNING_DB=off "$FK" tune --kernel ga --n 300 --budget 1
expect_stderr "tune with FORCEKIT_TUNING_DB=off says it stored nothing" "not stored"
no_temporary_files "tune leaves no temporary file" "$WORK"

# ---- molecular kernels ---------------------------------------------------------------------------
# Two LJ particles 1 apart (epsilon = sigma = 1, rc = 2.5, force-shifted): f_s(1) = 24.0389994774528,
# 1/2 U_s(1) = 0.0374080536576 each; at 1.5 (another pair table): f_s = -1.1190293535933555.
printf '0 0 0 0\n1 0 0 0\n' >"$WORK/lj2.txt"
expect_exit "lj on two particles exits 0" 0 "$FK" forces --kernel lj --in "$WORK/lj2.txt" --potential
expect_values "lj two particles: the shifted force and potential" "$WORK/out" \
    "-24.0389994774528 0 0 0.0374080536576/24.0389994774528 0 0 0.0374080536576"
printf '0 0 0 0\n2.5 0 0 0\n' >"$WORK/lj-rc.txt"
expect_exit "lj at the cutoff exits 0" 0 "$FK" forces --kernel lj --in "$WORK/lj-rc.txt" --potential
expect_values "lj at the cutoff: exactly zero" "$WORK/out" "0 0 0 0/0 0 0 0"
printf '0 0 0 1\n1.5 0 0 1\n' >"$WORK/lj-typed.txt"
printf '# a b epsilon sigma\n1 1 1 1\n' >"$WORK/params-lj.txt"
expect_exit "lj --params exits 0" 0 "$FK" forces --kernel lj --in "$WORK/lj-typed.txt" --params "$WORK/params-lj.txt"
expect_values "lj --params at r = 1.5" "$WORK/out" "1.1190293535933555 0 0/-1.1190293535933555 0 0"
printf '0 0 0 0\n1.5 0 0 1\n' >"$WORK/lj-mixed.txt"
expect_exit "a missing type pair exits 2" 2 "$FK" forces --kernel lj --in "$WORK/lj-mixed.txt" --params "$WORK/params-lj.txt"
expect_stderr "a missing type pair is named" "types (0, 1)"
expect_exit "a type without --params exits 2" 2 "$FK" forces --kernel lj --in "$WORK/lj-typed.txt"
printf '0 0 1 1\n0 0 2 1\n' >"$WORK/params-bad.txt"
expect_exit "conflicting pair parameters exit 2" 2 "$FK" forces --kernel lj --in "$WORK/lj-typed.txt" --params "$WORK/params-bad.txt"
printf '1 1 1\n' >"$WORK/params-columns.txt"
expect_exit "a params line with too few columns exits 2" 2 "$FK" forces --kernel lj --in "$WORK/lj-typed.txt" --params "$WORK/params-columns.txt"
expect_stderr "a bad params file names file:line" "params-columns.txt:1"
printf '0 0 -1 1\n' >"$WORK/params-negative.txt"
expect_exit "negative epsilon exits 2" 2 "$FK" forces --kernel lj --in "$WORK/lj2.txt" --params "$WORK/params-negative.txt"

printf '0 0 0 1 0\n1 0 0 -1 0\n2 0 0 1 0\n' >"$WORK/ljc3.txt"
printf '0 1\n' >"$WORK/exclude.txt"
expect_exit "ljc_constant --exclude afterwards exits 0" 0 "$FK" forces --kernel ljc_constant --in "$WORK/ljc3.txt" --exclude "$WORK/exclude.txt" --out "$WORK/after.txt"
expect_exit "ljc_constant --exclude onthefly exits 0" 0 "$FK" forces --kernel ljc_constant --in "$WORK/ljc3.txt" --exclude "$WORK/exclude.txt" --exclude-mode onthefly --out "$WORK/fly.txt"
expect_values "exclusion modes agree" "$WORK/fly.txt" "$(tr '\n' '/' <"$WORK/after.txt" | sed 's:/$::')"
printf '0 3\n' >"$WORK/exclude-range.txt"
expect_exit "an exclusion out of range exits 2" 2 "$FK" forces --kernel ljc_constant --in "$WORK/ljc3.txt" --exclude "$WORK/exclude-range.txt"
expect_stderr "an exclusion out of range names file:line" "exclude-range.txt:1"
expect_exit "--exclude-mode sideways exits 2" 2 "$FK" forces --kernel ljc_constant --in "$WORK/ljc3.txt" --exclude "$WORK/exclude.txt" --exclude-mode sideways
expect_exit "ljc_sigmoidal --dielectric exits 0" 0 "$FK" forces --kernel ljc_sigmoidal --in "$WORK/ljc3.txt" --dielectric 0.01,-0.05,0.3,0.1 --potential
expect_lines "ljc_sigmoidal gives 3 lines of 4 numbers" "$WORK/out" 3 4
expect_exit "ljc_sigmoidal with one dielectric number exits 2" 2 "$FK" forces --kernel ljc_sigmoidal --in "$WORK/ljc3.txt" --dielectric 2
expect_exit "ljc_linear --cutoff --box exits 0" 0 "$FK" forces --kernel ljc_linear --in "$WORK/ljc3.txt" --cutoff 2 --box 5,5,5
expect_exit "--box without a cutoff exits 2" 2 "$FK" forces --kernel ljc_constant --in "$WORK/ljc3.txt" --box 5
expect_exit "a cutoff above half the box exits 2" 2 "$FK" forces --kernel lj --in "$WORK/lj2.txt" --box 4,6,6
expect_stderr "a cutoff above half the box is explained" "half the shortest"
expect_exit "--coulomb 0 exits 2" 2 "$FK" forces --kernel ljc_constant --in "$WORK/ljc3.txt" --coulomb 0
expect_exit "--cutoff for ga exits 2" 2 "$FK" forces --kernel ga --in "$WORK/two.txt" --cutoff 2
printf '0 0 0 0\n0 0 0 0\n' >"$WORK/lj-coincident.txt"
expect_exit "coincident lj particles exit 2" 2 "$FK" forces --kernel lj --in "$WORK/lj-coincident.txt"
expect_stderr "coincident lj particles are named" "particles 0 and 1"
printf '0 0 0 1 0 0 0\n1 0 0 1 0 1 0\n' >"$WORK/gaj2.txt"
expect_exit "gaj exits 0" 0 "$FK" forces --kernel gaj --in "$WORK/gaj2.txt"
expect_values "gaj: acceleration and jerk" "$WORK/out" "1 0 0 0 1 0/-1 0 0 0 -1 0"
expect_exit "buck bench exits 0" 0 "$FK" bench --kernel buck --n 500 --reps 2 --unroll 2x4 --json
expect_json "buck bench reports 40 flops per interaction" "$WORK/out" \
    'd["flops_per_interaction"] == 40 and d["results"][0]["gflops"] > 0'
expect_exit "lj bench with a box exits 0" 0 "$FK" bench --kernel lj --n 1000 --reps 2 --box 10.77
expect_exit "bench --params for ga exits 2" 2 "$FK" bench --kernel ga --n 100 --params "$WORK/params-lj.txt"

# ---- installation problems -----------------------------------------------------------------------
expect_exit "missing kernel directory exits 1" 1 env FORCEKIT_KERNEL_DIR=/nonexistent "$FK" forces --kernel ga --in "$WORK/two.txt"
expect_stderr "missing kernel directory names the path" "/nonexistent"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
