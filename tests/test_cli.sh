#!/bin/sh
# The forcekit command, driven from outside: exit codes (docs/cli.md), outputs, JSON documents
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

# expect_restart_identical NAME STEPS AT KEY... -- COMMAND...: COMMAND run for STEPS steps, and
# again to step AT with a checkpoint and restarted from it to STEPS; the restart must say it
# restarted at AT and end on the uninterrupted run's values of each JSON KEY.
expect_restart_identical() {
    # own names: expect_exit sets the global name (the script is POSIX sh, without local)
    restart_name=$1
    restart_steps=$2
    restart_at=$3
    restart_keys=""
    shift 3
    while [ "$1" != "--" ]; do
        restart_keys="$restart_keys\"$1\", "
        shift
    done
    shift
    expect_exit "$restart_name, $restart_steps steps exits 0" 0 "$@" --steps "$restart_steps" --json
    cp "$WORK/out" "$WORK/restart-full.json"
    expect_exit "$restart_name, $restart_at of the $restart_steps steps with a checkpoint exits 0" 0 \
        "$@" --steps "$restart_at" --checkpoint "$WORK/restart.ckpt"
    expect_exit "$restart_name --restart to step $restart_steps exits 0" 0 "$@" \
        --steps "$restart_steps" --restart "$WORK/restart.ckpt" --json
    expect_json "a restarted $restart_name ends bit-identical to the uninterrupted one" "$WORK/out" \
        'd["restarted_from_step"] == '"$restart_at"' and all(d[k] == json.load(open("'"$WORK/restart-full.json"'"))[k] for k in ('"$restart_keys"'))'
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
expect_json "devices --json is a list with the documented keys" "$WORK/out" \
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

# --positions: double-single positions give the same two-body answer, tell apart bodies one float
# cannot (accepted at eps = 0, where float positions refuse them as coincident), and are refused
# where they do not apply.
expect_exit "forces --positions ds exits 0" 0 "$FK" forces --kernel ga --in "$WORK/two.txt" --positions ds
expect_values "forces --positions ds gives the same values" "$WORK/out" "1 0 0/-0.25 0 0"
printf '1 2 3 1\n1.000000001 2 3 1\n' >"$WORK/close.txt"
expect_exit "forces on bodies one float cannot tell apart exits 2" 2 "$FK" forces --kernel ga --in "$WORK/close.txt"
expect_stderr "forces names the coincident bodies" "same position"
expect_exit "forces --positions ds tells them apart" 0 "$FK" forces --kernel ga --in "$WORK/close.txt" --positions ds
expect_exit "forces --positions half exits 2" 2 "$FK" forces --kernel ga --in "$WORK/two.txt" --positions half
expect_stderr "forces --positions names the choices" "expected float or ds"
expect_exit "forces --positions ds in a periodic box exits 1" 1 "$FK" forces --kernel lj --in "$WORK/two.txt" --box 10 --positions ds
expect_stderr "the refusal says why" "periodic box is stored in float"

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
expect_json "bench --json has the documented keys and a real variant" "$WORK/out" \
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
expect_exit "bench --lanes 4 exits 2" 2 "$FK" bench --kernel ga --n 100 --lanes 4
expect_stderr "bench --lanes 4 names the values" "expected auto, off, 8 or 16"
expect_exit "bench --lanes off --json exits 0" 0 "$FK" bench --kernel ga --n 300 --reps 2 --lanes off --json
expect_json "bench --lanes off runs the template" "$WORK/out" 'd["results"][0]["lanes"] == 0'
expect_exit "bench --lanes 8 --json exits 0" 0 "$FK" bench --kernel ga --n 300 --reps 2 --lanes 8 --json
expect_json "bench --lanes 8 runs 8 lanes, named 1x1" "$WORK/out" \
    'd["results"][0]["lanes"] == 8 and d["results"][0]["unroll"] == "1x1"'
expect_exit "bench --lanes 16 with ti exits 1" 1 "$FK" bench --kernel ga --n 100 --accum ti --lanes 16
expect_stderr "bench --lanes 16 with ti says why" "no lane form"

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
# The registry's accumulators, as the error lists them: no list of names in this file.
accumulators=$(sed -n 's/.*unknown accumulator .*; available: *//p' "$WORK/err")
expect_exit "accuracy --accum all --json exits 0" 0 "$FK" accuracy --kernel ga --system plummer --n 1024 --reps 1 --json
expect_json "accuracy: every registered accumulator (those the device can run), with checksums" "$WORK/out" \
    'set(r["accum"] for r in d["results"]) | set(s["accum"] for s in d["skipped"]) == set("'"$accumulators"'".split()) and len(d["results"]) >= 2 and all(len(r["checksum"]) == 16 for r in d["results"])'
expect_json "accuracy: fixed64 and narumi offsets are exactly 0 (equal masses), float's is not" "$WORK/out" \
    'all(r["offset"] == 0 for r in d["results"] if r["accum"] in ("fixed64", "narumi")) and [r for r in d["results"] if r["accum"] == "float"][0]["offset"] > 0'
expect_json "accuracy: compensated errors at most 1e-6, below float's" "$WORK/out" \
    'all(r["error"] <= 1e-6 and r["error"] < [f for f in d["results"] if f["accum"] == "float"][0]["error"] for r in d["results"] if r["accum"] in ("ti", "composite", "narumi", "fixed64"))'
# The protein (Narumi's System 1 analogue) on the fly: compensated and fixed-point sums at the level
# of the float pair terms, float's sum above them; zero offsets for narumi and fixed64.
expect_exit "accuracy --system protein --json exits 0" 0 "$FK" accuracy --system protein --exclude-mode onthefly --accum float,ti,composite,narumi,fixed64 --reps 1 --json
expect_json "accuracy protein: documented keys, 3339 atoms, ljc_constant, on the fly" "$WORK/out" \
    'd["kernel"] == "ljc_constant" and d["n"] == 3339 and d["device"] and d["exclusions"] == 7321 and all(set(("accum", "error", "offset", "seconds_per_eval")) <= set(r) and r["exclusion_mode"] == "onthefly" for r in d["results"]) and "exclusion_comparison" not in d'
expect_json "accuracy protein: ti, composite, narumi, fixed64 errors <= 1e-6, float's larger" "$WORK/out" \
    'all(0 < r["error"] <= 1e-6 and r["error"] < [f for f in d["results"] if f["accum"] == "float"][0]["error"] for r in d["results"] if r["accum"] in ("ti", "composite", "narumi", "fixed64")) and len(d["results"]) == 5'
expect_json "accuracy protein: narumi and fixed64 offsets exactly 0, float's not" "$WORK/out" \
    'all(r["offset"] == 0 for r in d["results"] if r["accum"] in ("narumi", "fixed64")) and [r for r in d["results"] if r["accum"] == "float"][0]["offset"] > 0'
expect_exit "accuracy --system protein, both exclusion modes, exits 0" 0 "$FK" accuracy --system protein --accum fixed64 --reps 1 --json
expect_json "accuracy protein: exclude on the fly vs afterwards (Narumi sec. 4.1)" "$WORK/out" \
    'd["results"][0]["exclusion_mode"] == "onthefly" and [c["accum"] for c in d["exclusion_comparison"]] == ["fixed64"] and all(set(("error", "offset", "seconds_per_eval")) <= set(c[m]) for c in d["exclusion_comparison"] for m in ("onthefly", "afterwards")) and d["exclusion_comparison"][0]["onthefly"]["error"] <= d["exclusion_comparison"][0]["afterwards"]["error"]'
expect_exit "accuracy --system lj65536 --n 600 exits 0" 0 "$FK" accuracy --system lj65536 --n 600 --accum float,fixed64 --json
expect_json "accuracy lj65536: lj, N = 600, no exclusions, fixed64 better than float" "$WORK/out" \
    'd["kernel"] == "lj" and d["n"] == 600 and d["exclusions"] == 0 and d["reps"] == 1 and d["results"][1]["error"] < d["results"][0]["error"] and d["results"][1]["offset"] == 0'
expect_exit "accuracy --system protein --n 100 exits 2" 2 "$FK" accuracy --system protein --n 100
expect_exit "accuracy --system protein --kernel ga exits 2" 2 "$FK" accuracy --system protein --kernel ga
expect_exit "accuracy --system protein --eps exits 2" 2 "$FK" accuracy --system protein --eps 0.1
expect_exit "accuracy --system protein --params exits 2" 2 "$FK" accuracy --system protein --params "$WORK/two.txt"
expect_exit "accuracy --accum with an unknown name in a list exits 2" 2 "$FK" accuracy --system protein --accum float,nosuch

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
expect_json "sumtest: 24 rows (4 thread counts x 6 orders) with the documented keys" "$WORK/out" \
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
# The budget is checked by what the run says it did (it sampled), never by the wall clock: a
# loaded machine may take any time.
expect_exit "tune --budget 2 exits 0" 0 env FORCEKIT_TUNING_DB="$DB" "$FK" tune --kernel ga --n 1024 --budget 2 --json
expect_json "tune --json has the documented keys and says it sampled" "$WORK/out" \
    'all(k in d for k in ("kernel", "accum", "n", "device", "best", "tried")) and d["n"] == 1024 and d["search"] == "sampled" and d["buckets"][0]["search"] == "sampled" and d["best"]["unroll"] != "auto" and d["best"]["seconds_per_eval"] > 0 and len(d["tried"]) >= 1 and all("outcome" in t for t in d["tried"])'
expect_json "tune stored its best in FORCEKIT_TUNING_DB" "$DB" \
    'len(d["entries"]) == 1 and d["entries"][0]["kernel"] == "ga" and d["entries"][0]["n"] == 1024'
expect_exit "bench after tune exits 0" 0 env FORCEKIT_TUNING_DB="$DB" "$FK" bench --kernel ga --n 1000 --reps 2 --json
expect_json "bench takes the user database's entry" "$WORK/out" \
    'd["results"][0]["variant_source"] == "user_db"'
expect_exit "forces after tune exits 0" 0 env FORCEKIT_TUNING_DB="$DB" "$FK" forces --kernel ga --in "$WORK/two.txt"
expect_stderr "forces names the user database" "(user tuning database)"
# ti: on CPUs, ga with float or double takes the lane loop over shipped entries (docs/algorithms.md "CPU lanes")
printf '{"entries": [{"kernel": "ga", "accum": "ti", "n": 1024, "unroll": "2x2", "work_group_size": 16}]}\n' >"$WORK/shipped.json"
expect_exit "forces with a shipped default entry exits 0" 0 env FORCEKIT_TUNING_DB=off FORCEKIT_SHIPPED_TUNING_DB="$WORK/shipped.json" "$FK" forces --kernel ga --accum ti --in "$WORK/two.txt"
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

# ---- cells ---------------------------------------------------------------------------------------
expect_exit "bench --algorithm cells --json exits 0" 0 "$FK" bench --kernel lj --n 1000 --reps 2 --algorithm cells --density 0.4 --json
expect_json "cells bench reports the pairs it examined, the grid and the build time" "$WORK/out" \
    '(r := d["results"][0]) and d["algorithm"] == "cells" and 1000 < r["pairs_examined"] < 1000 * 1000 and len(r["cell_grid"]) == 3 and r["cell_build_seconds"] > 0 and abs(r["skin"] - 0.3) < 1e-12 and abs(r["interactions_per_second"] * r["seconds_per_eval"] - r["pairs_examined"]) < 1e-6 * r["pairs_examined"]'
expect_exit "bench --algorithm cells --skin 0 exits 0" 0 "$FK" bench --kernel lj --n 500 --reps 2 --algorithm cells --skin 0 --json
expect_json "--skin 0 means no skin" "$WORK/out" 'd["results"][0]["skin"] == 0'
expect_exit "bench --skin -1 exits 2" 2 "$FK" bench --kernel lj --n 100 --algorithm cells --skin -1
expect_exit "bench --algorithm cells for ga exits 2" 2 "$FK" bench --kernel ga --n 100 --algorithm cells
expect_stderr "cells for ga is explained" "needs a short-range force law with a cutoff"
# bench --step (issue #16): the step's wall time by mode beside the device time and the bandwidth;
# by default the steps run on a queue without profiling and a profiled pass gives the device time
expect_exit "bench --step --json exits 0" 0 "$FK" bench --step --kernel ljc_constant --n 300 --reps 3 --potential --json
expect_json "bench --step reports every mode with the issue's keys, device timing off" "$WORK/out" \
    'd["benchmark"] == "step" and d["device_timing"] == "off" and d["copy_wall_seconds_median_profiled"] > 0 and len(d["results"]) >= 1 and all(all(k in r for k in ("wall_seconds_median", "device_seconds_median", "bytes_moved", "bandwidth_bytes_per_second", "limit_seconds")) and r["wall_seconds_median"] > 0 and r["device_seconds_median"] > 0 for r in d["results"])'
expect_exit "bench --step --device-timing on exits 0" 0 "$FK" bench --step --kernel lj --n 300 --reps 3 --device-timing on --json
expect_json "bench --step --device-timing on times the steps on the profiled queue" "$WORK/out" \
    'd["device_timing"] == "on" and "copy_wall_seconds_median_profiled" not in d and all(r["device_seconds_median"] > 0 for r in d["results"])'
expect_exit "bench --step --device-timing sometimes exits 2" 2 "$FK" bench --step --kernel lj --n 100 --device-timing sometimes
expect_exit "bench --device-timing without --step exits 2" 2 "$FK" bench --kernel lj --n 100 --device-timing off
expect_exit "forces --algorithm cells without a cutoff exits 2" 2 "$FK" forces --kernel ljc_constant --in "$WORK/ljc3.txt" --algorithm cells
expect_stderr "cells without a cutoff is explained" "needs a cutoff"
expect_exit "forces --algorithm cells --cutoff exits 0" 0 "$FK" forces --kernel ljc_constant --in "$WORK/ljc3.txt" --cutoff 1.5 --accum fixed64 --algorithm cells --out "$WORK/cells.txt"
expect_exit "forces --algorithm all-pairs --cutoff exits 0" 0 "$FK" forces --kernel ljc_constant --in "$WORK/ljc3.txt" --cutoff 1.5 --accum fixed64 --out "$WORK/pairs.txt"
if cmp -s "$WORK/cells.txt" "$WORK/pairs.txt"; then pass "cells and all-pairs agree bit for bit (fixed64)"; else fail "cells and all-pairs agree bit for bit (fixed64)"; fi
printf '0 0 0 0\n1 0 0 0\n25 0 0 0\n' >"$WORK/lj-outside.txt"
expect_exit "cells: a particle two boxes outside the box exits 2" 2 "$FK" forces --kernel lj --in "$WORK/lj-outside.txt" --box 10 --algorithm cells
expect_stderr "the particle outside the box is named" "particle 2"

# ---- simulate ------------------------------------------------------------------------------------
# Small runs (108 LJ particles, 64 bodies) on the test device: exit codes, JSON keys, checkpoints,
# bit-identical restarts (the final state's checksum), mismatched restarts and SIGINT.
SIM="$FK simulate --kernel lj --system lj-fluid --n 108"
expect_exit "simulate --help exits 0" 0 "$FK" simulate --help
expect_exit "simulate without --kernel exits 2" 2 "$FK" simulate --n 108 --steps 10
expect_exit "simulate without --steps exits 2" 2 $SIM
expect_exit "simulate --system nowhere exits 2" 2 "$FK" simulate --kernel lj --system nowhere --n 108 --steps 1
expect_exit "simulate --system plummer with lj exits 2" 2 "$FK" simulate --kernel lj --system plummer --n 108 --steps 1
expect_exit "simulate --integrator hermite with lj exits 2" 2 $SIM --steps 1 --integrator hermite
expect_stderr "simulate --integrator hermite with lj is explained" "gaj"
expect_exit "simulate --dt 0 exits 2" 2 $SIM --steps 1 --dt 0
expect_exit "simulate --dt -1 exits 2" 2 $SIM --steps 1 --dt -1
expect_exit "simulate --eps with lj exits 2" 2 $SIM --steps 1 --eps 0.1
expect_exit "simulate --box with lj-fluid exits 2" 2 $SIM --steps 1 --box 5
expect_exit "simulate --algorithm sideways exits 2" 2 $SIM --steps 1 --algorithm sideways
expect_exit "simulate --checkpoint-every without --checkpoint exits 2" 2 $SIM --steps 1 --checkpoint-every 5
expect_exit "simulate --frobnicate exits 2" 2 $SIM --steps 1 --frobnicate
expect_exit "simulate --n 0 exits 2" 2 "$FK" simulate --kernel lj --n 0 --steps 1
expect_exit "simulate of a box smaller than twice the cutoff exits 2" 2 "$FK" simulate --kernel lj --n 32 --steps 1
expect_exit "simulate lj 40 steps --json exits 0" 0 $SIM --steps 40 --sample 10 --algorithm all-pairs --json --checkpoint "$WORK/full.ckpt"
cp "$WORK/out" "$WORK/sim-full.json"
expect_json "simulate --json has the documented keys" "$WORK/sim-full.json" \
    'all(k in d for k in ("kernel", "accum", "n", "steps", "dt", "device", "seconds", "steps_per_second", "relative_energy_drift", "energy_slope_per_time", "energy_slope_per_step", "samples", "integrator", "algorithm", "state_checksum")) and d["kernel"] == "lj" and d["n"] == 108 and d["steps"] == 40 and d["integrator"] == "verlet"'
expect_json "simulate samples every 10 steps, energy finite and conserved" "$WORK/sim-full.json" \
    'd["samples"]["step"] == [0, 10, 20, 30, 40] and len(d["samples"]["energy"]) == 5 and all(math.isfinite(e) for e in d["samples"]["energy"]) and d["relative_energy_drift"] < 1e-3 and abs(d["samples"]["kinetic"][0] + d["samples"]["potential"][0] - d["samples"]["energy"][0]) < 1e-9'
if [ -f "$WORK/full.ckpt" ] && head -n 1 "$WORK/full.ckpt" | grep -q '^forcekit-checkpoint 2$' &&
    tail -n 1 "$WORK/full.ckpt" | grep -q '^checksum XXH3-64 [0-9a-f]\{16\}$'; then
    pass "simulate --checkpoint writes a checkpoint"
else
    fail "simulate --checkpoint writes a checkpoint"
fi
no_temporary_files "simulate leaves no temporary checkpoint" "$WORK"
# --integrate host: the host loop, from the same forces the same state as the device path's
# (docs/simulate.md: the integrator's operations are the host loop's)
expect_exit "simulate --integrate host exits 0" 0 $SIM --steps 40 --sample 10 --algorithm all-pairs --json --integrate host
cp "$WORK/out" "$WORK/sim-host.json"
expect_json "the host loop ends on the device path's state, with device seconds" "$WORK/sim-host.json" \
    'd["integrate"] == "host" and json.load(open("'"$WORK/sim-full.json"'"))["integrate"] == "device" and d["state_checksum"] == json.load(open("'"$WORK/sim-full.json"'"))["state_checksum"] and d["seconds_per_step"]["device"] > 0'
# --device-timing off: a queue without profiling; the same trajectory, no device seconds
expect_exit "simulate --device-timing off exits 0" 0 $SIM --steps 40 --sample 10 --algorithm all-pairs --json --device-timing off --integrate host
expect_json "simulate --device-timing off ends on the same state, device seconds null" "$WORK/out" \
    'd["state_checksum"] == json.load(open("'"$WORK/sim-host.json"'"))["state_checksum"] and d["seconds_per_step"]["device"] is None'
expect_exit "simulate --integrate sideways exits 2" 2 $SIM --steps 1 --integrate sideways
expect_exit "simulate --friction without langevin exits 2" 2 $SIM --steps 1 --friction 2
expect_exit "simulate --integrator langevin --integrate host exits 2" 2 $SIM --steps 1 --integrator langevin --integrate host
expect_stderr "langevin on the host is explained" "device integrator only"
expect_exit "simulate --integrator langevin with ga exits 2" 2 "$FK" simulate --kernel ga --n 64 --steps 1 --integrator langevin
expect_exit "simulate --integrator langevin --friction 0 exits 2" 2 $SIM --steps 1 --integrator langevin --friction 0
expect_exit "simulate --integrator langevin --temperature 0 exits 2" 2 $SIM --steps 1 --integrator langevin --temperature 0
# Langevin: a checkpoint holds the step, so the noise goes on where it stopped, and fixed64's
# bound, so --reproducible with lists and a skin restarts bit-identical (float with a skin would
# not: the lists' order changes the rounding)
LSIM="$SIM --algorithm neighbors --skin 0.3 --reproducible --integrator langevin --temperature 1.5 --friction 2 --sample 10"
expect_exit "simulate --integrator langevin 40 steps exits 0" 0 $LSIM --steps 40 --json
cp "$WORK/out" "$WORK/sim-langevin.json"
expect_json "simulate langevin reports its bath and a temperature" "$WORK/sim-langevin.json" \
    'd["integrator"] == "langevin" and d["integrate"] == "device" and d["bath_temperature"] == 1.5 and d["friction"] == 2 and 0 < d["mean_temperature"] < 3 and d["device_integrator"]["syncs"] > 0 and d["device_integrator"]["rebuilds"] > 0'
expect_exit "simulate langevin 25 steps with a checkpoint exits 0" 0 $LSIM --steps 25 --checkpoint "$WORK/langevin.ckpt"
expect_exit "simulate langevin --restart to step 40 exits 0" 0 $LSIM --steps 40 --restart "$WORK/langevin.ckpt" --json
expect_json "a restarted Langevin run ends bit-identical to the uninterrupted one" "$WORK/out" \
    'd["state_checksum"] == json.load(open("'"$WORK/sim-langevin.json"'"))["state_checksum"] and d["samples"] == json.load(open("'"$WORK/sim-langevin.json"'"))["samples"]'
expect_exit "simulate langevin --restart with another --friction exits 2" 2 $LSIM --steps 40 --friction 3 --restart "$WORK/langevin.ckpt"
expect_exit "simulate --restart of a device checkpoint on the host exits 2" 2 $SIM --steps 40 --integrate host --restart "$WORK/full.ckpt"
expect_stderr "the integrate mismatch is named" "integrate is 'device' there and 'host' here"
expect_exit "simulate --device-timing maybe exits 2" 2 $SIM --steps 1 --device-timing maybe
expect_exit "simulate 25 of the 40 steps with a checkpoint exits 0" 0 $SIM --steps 25 --sample 10 --algorithm all-pairs --checkpoint "$WORK/half.ckpt" --checkpoint-every 7
expect_exit "simulate --restart to step 40 exits 0" 0 $SIM --steps 40 --restart "$WORK/half.ckpt" --json
expect_json "a restarted run ends bit-identical to the uninterrupted one" "$WORK/out" \
    'd["state_checksum"] == json.load(open("'"$WORK/sim-full.json"'"))["state_checksum"] and d["samples"] == json.load(open("'"$WORK/sim-full.json"'"))["samples"] and d["restarted_from_step"] == 25 and d["steps_run"] == 15'
# Neighbour lists, float, no skin (rebuilt every step): the restart runs the checkpoint's lane
# form too (on CPUs the pinned unrolling alone gave the scalar walk with half lists: other bits,
# twice the step time; issue #33 item 4), so it ends bit-identical.
expect_restart_identical "simulate neighbors (lanes, list form)" 40 25 \
    lanes neighbor_half_lists pairs_examined state_checksum samples -- \
    $SIM --algorithm neighbors --sample 10
expect_exit "simulate --integrate host 25 of the 40 steps with a checkpoint exits 0" 0 $SIM --steps 25 --sample 10 --algorithm all-pairs --checkpoint "$WORK/host-half.ckpt" --integrate host
expect_exit "simulate --integrate host --restart to step 40 exits 0" 0 $SIM --steps 40 --restart "$WORK/host-half.ckpt" --integrate host --json
expect_json "a restarted host loop ends bit-identical to the uninterrupted one" "$WORK/out" \
    'd["state_checksum"] == json.load(open("'"$WORK/sim-host.json"'"))["state_checksum"] and d["samples"] == json.load(open("'"$WORK/sim-host.json"'"))["samples"] and d["restarted_from_step"] == 25'
# fixed64 on the host loop: the scale is chosen at every update there (the library's default
# keeps it, and a restart's set_particles would choose another from the restart's positions:
# this Plummer run's encounters leave the kept scale away from a fresh one, seeds 1 and 2 on POCL)
expect_restart_identical "simulate --integrate host fixed64" 200 120 state_checksum samples -- \
    "$FK" simulate --kernel ga --system plummer --n 256 --eps 1e-4 --accum fixed64 \
    --algorithm all-pairs --integrate host --sample 50
# ga float on a CPU runs the automatic lane loop; the checkpoint records the lanes, because the
# restart's explicit unrolling alone would run the scalar template (other roundings; Intel's CPU
# runtime gave other bits for float, double and fixed64 before the lanes were recorded)
expect_restart_identical "simulate ga float all-pairs (lanes)" 130 120 state_checksum -- \
    "$FK" simulate --kernel ga --system plummer --n 256 --eps 1e-4 --accum float \
    --algorithm all-pairs --sample 10
expect_exit "simulate --restart with another --dt exits 2" 2 $SIM --steps 40 --dt 0.004 --restart "$WORK/half.ckpt"
expect_stderr "a mismatched restart names the option" "does not match this run: dt"
expect_exit "simulate --restart with another --seed exits 2" 2 $SIM --steps 40 --seed 2 --restart "$WORK/half.ckpt"
expect_exit "simulate --restart with another --accum exits 2" 2 $SIM --steps 40 --accum double --restart "$WORK/half.ckpt"
expect_exit "simulate --restart with another --algorithm exits 2" 2 $SIM --steps 40 --algorithm cells --restart "$WORK/half.ckpt"
expect_exit "simulate --restart with another N exits 2" 2 "$FK" simulate --kernel lj --n 256 --steps 40 --restart "$WORK/half.ckpt"
expect_exit "simulate fixed64, 10 steps, with a checkpoint exits 0" 0 $SIM --steps 10 --accum fixed64 --algorithm all-pairs --checkpoint "$WORK/fixed64.ckpt"
expect_exit "simulate --restart with --reproducible where the run had none exits 2" 2 $SIM --steps 20 --reproducible --restart "$WORK/fixed64.ckpt"
expect_stderr "the reproducible mismatch is named" "reproducible is '0' there and '1' here"
expect_exit "simulate --reproducible --accum float exits 2" 2 $SIM --steps 1 --reproducible --accum float
# --positions ds: gravity with open boundaries; recorded in the checkpoint, refused in the fluid's box
GSIM="$FK simulate --kernel ga --system plummer --n 64 --algorithm all-pairs"
expect_exit "simulate ga --positions ds exits 0" 0 $GSIM --steps 10 --positions ds --json --checkpoint "$WORK/ds.ckpt"
expect_json "simulate --positions ds says so" "$WORK/out" 'd["positions"] == "ds" and math.isfinite(d["relative_energy_drift"])'
expect_exit "simulate --restart without --positions ds exits 2" 2 $GSIM --steps 20 --restart "$WORK/ds.ckpt"
expect_stderr "the positions mismatch is named" "positions is 'ds' there and 'float' here"
expect_exit "simulate --restart with --positions ds exits 0" 0 $GSIM --steps 20 --positions ds --restart "$WORK/ds.ckpt"
expect_exit "simulate --positions ds in the fluid's box exits 1" 1 $SIM --steps 1 --positions ds
# --reproducible: the same trajectory bit for bit with every pair loop (fixed64, correctly rounded
# pair arithmetic; docs/simulate.md)
for loop in all-pairs cells neighbors; do
    expect_exit "simulate --reproducible --algorithm $loop exits 0" 0 "$FK" simulate --kernel lj --n 500 --steps 30 --reproducible --algorithm "$loop" --json
    cp "$WORK/out" "$WORK/sim-repro-$loop.json"
done
expect_json "simulate --reproducible: cells and lists end on all-pairs' state, bit for bit" "$WORK/sim-repro-all-pairs.json" \
    'd["reproducible"] is True and d["accum"] == "fixed64" and all(json.load(open("'"$WORK"'/sim-repro-%s.json" % l))["state_checksum"] == d["state_checksum"] and json.load(open("'"$WORK"'/sim-repro-%s.json" % l))["samples"] == d["samples"] for l in ("cells", "neighbors"))'

expect_exit "simulate --restart beyond --steps exits 2" 2 $SIM --steps 10 --restart "$WORK/half.ckpt"
expect_exit "simulate --restart of a missing file exits 2" 2 $SIM --steps 40 --restart "$WORK/nonexistent.ckpt"
head -n 40 "$WORK/half.ckpt" >"$WORK/truncated.ckpt"
expect_exit "simulate --restart of a truncated checkpoint exits 2" 2 $SIM --steps 40 --restart "$WORK/truncated.ckpt"
expect_stderr "a truncated checkpoint is named" "truncated.ckpt is damaged"
# Issue #32: a checkpoint ends with the XXH3-64 of its content, checked before anything in it is
# believed: an edited step, one bit flipped in a particle line (a '1' digit made '0', which still
# parses) and a flipped energy sample exit 2 as damaged; a CRLF copy restarts as the original.
sed 's/^step 25$/step 0/' "$WORK/half.ckpt" >"$WORK/step0.ckpt"
expect_exit "simulate --restart of a checkpoint edited from step 25 to step 0 exits 2" 2 $SIM --steps 40 --restart "$WORK/step0.ckpt"
expect_stderr "the edited checkpoint is refused as damaged" "step0.ckpt is damaged: checksum mismatch"
flip_line=$(( $(grep -n '^particles$' "$WORK/half.ckpt" | cut -d: -f1) + 10 ))
sed "${flip_line}s/1/0/" "$WORK/half.ckpt" >"$WORK/flipped.ckpt"
if cmp -s "$WORK/half.ckpt" "$WORK/flipped.ckpt"; then
    fail "the bit flip changed the checkpoint"
else
    expect_exit "simulate --restart of a checkpoint with one bit flipped in a particle line exits 2" 2 $SIM --steps 40 --restart "$WORK/flipped.ckpt"
    expect_stderr "the flipped checkpoint is refused as damaged" "flipped.ckpt is damaged: checksum mismatch"
fi
sample_line=$(( $(grep -n '^samples ' "$WORK/half.ckpt" | cut -d: -f1) + 2 ))
sed "${sample_line}s/\( [^1]*\)1/\10/" "$WORK/half.ckpt" >"$WORK/sample.ckpt" # in an energy
expect_exit "simulate --restart of a checkpoint with a flipped energy sample exits 2" 2 $SIM --steps 40 --restart "$WORK/sample.ckpt"
expect_stderr "the flipped energy sample is refused as damaged" "sample.ckpt is damaged: checksum mismatch"
sed 's/$/\r/' "$WORK/half.ckpt" >"$WORK/crlf.ckpt"
expect_exit "simulate --restart of a CRLF copy exits 0" 0 $SIM --steps 40 --restart "$WORK/crlf.ckpt" --json
expect_json "a restart from the CRLF copy ends bit-identical to the uninterrupted run" "$WORK/out" \
    'd["state_checksum"] == json.load(open("'"$WORK/sim-full.json"'"))["state_checksum"] and d["samples"] == json.load(open("'"$WORK/sim-full.json"'"))["samples"] and d["restarted_from_step"] == 25'
# Checked before the first step (issue #13): a missing directory is the user's to fix.
expect_exit "simulate --checkpoint into a missing directory exits 2 at once" 2 $SIM --steps 100000 --checkpoint "$WORK/no/such/dir.ckpt"
expect_stderr "simulate --checkpoint into a missing directory says so" "No such file or directory"
expect_exit "simulate gaj (Hermite) on a Plummer sphere exits 0" 0 "$FK" simulate --kernel gaj --n 64 --steps 20 --json
expect_json "simulate gaj runs Hermite, conserves energy, tried the pair loops" "$WORK/out" \
    'd["integrator"] == "hermite" and d["system"] == "plummer" and d["relative_energy_drift"] < 1e-4 and d["eps"] == 0.01 and d["algorithm_trials"][0]["algorithm"] == "all-pairs"'
expect_exit "simulate ga (Verlet) on a Plummer sphere exits 0" 0 "$FK" simulate --kernel ga --n 64 --steps 20 --dt 0.001 --algorithm all-pairs --json
expect_json "simulate ga runs Verlet" "$WORK/out" 'd["integrator"] == "verlet" and d["relative_energy_drift"] < 1e-4'
printf '0 0 0 0\n1.2 0 0 0\n' >"$WORK/lj-dimer.txt"
expect_exit "simulate --in an lj file at T = 0 exits 0" 0 "$FK" simulate --kernel lj --in "$WORK/lj-dimer.txt" --temperature 0 --steps 500 --dt 0.001 --algorithm all-pairs --json
expect_json "an lj dimer from rest conserves energy" "$WORK/out" 'd["system"] == "file" and d["cutoff"] == 2.5 and d["samples"]["kinetic"][0] == 0 and d["max_relative_energy_deviation"] < 2e-5'
# SIGINT: the run stops after the current step, writes its checkpoint and exits 130; the
# checkpoint continues.
$SIM --steps 100000000 --algorithm all-pairs --checkpoint "$WORK/interrupted.ckpt" >"$WORK/out" 2>"$WORK/err" &
sim_pid=$!
waited=0
while ! grep -q '^simulate: lj' "$WORK/err" && [ "$waited" -lt 600 ]; do
    sleep 0.1
    waited=$((waited + 1))
done
sleep 0.5
kill -INT "$sim_pid"
wait "$sim_pid"
rc=$?
if [ "$rc" -eq 130 ]; then pass "simulate exits 130 on SIGINT"; else fail "simulate exits 130 on SIGINT (exit $rc)"; fi
expect_stderr "simulate says where the checkpoint went on SIGINT" "continue with --restart"
interrupted_step=$(sed -n 's/^step //p' "$WORK/interrupted.ckpt" 2>/dev/null)
if [ -n "$interrupted_step" ] && [ "$interrupted_step" -gt 0 ]; then
    pass "the SIGINT checkpoint holds step $interrupted_step"
    expect_exit "the SIGINT checkpoint continues" 0 $SIM --steps $((interrupted_step + 5)) --restart "$WORK/interrupted.ckpt"
else
    fail "the SIGINT checkpoint holds a step"
fi

# ---- rand48 --------------------------------------------------------------------------------------
# lrand48 / drand48 of srand48(S), recomputed here from the definition (a = 0x5DEECE66D, c = 11,
# m = 2^48; the seed's low 32 bits above 0x330E), independently of the C code.
rand48_check() { # SEED COUNT FLOAT FILE: the file holds the sequence, exactly
    "$PYTHON" -c '
import sys
seed, count, real = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
x = ((seed & 0xFFFFFFFF) << 16) | 0x330E
want = []
for _ in range(count):
    x = (0x5DEECE66D * x + 0xB) % (1 << 48)
    want.append(x / 2.0**48 if real else x >> 17)
got = [float(v) if real else int(v) for v in open(sys.argv[4]).read().split()]
sys.exit(0 if got == want else 1)' "$@"
}
for seed in 0 42 2147483647 -5; do
    expect_exit "rand48 --seed $seed exits 0" 0 "$FK" rand48 --seed $seed --count 3000
    if [ -z "$PYTHON" ]; then skip "rand48 --seed $seed"; elif rand48_check $seed 3000 0 "$WORK/out"; then pass "rand48 --seed $seed is glibc's lrand48 sequence"; else fail "rand48 --seed $seed is glibc's lrand48 sequence"; fi
done
expect_exit "rand48 --float --work-items 7 exits 0" 0 "$FK" rand48 --seed 9 --count 2000 --float --work-items 7
if [ -z "$PYTHON" ]; then skip "rand48 --float"; elif rand48_check 9 2000 1 "$WORK/out"; then pass "rand48 --float is glibc's drand48 sequence"; else fail "rand48 --float is glibc's drand48 sequence"; fi
cp "$WORK/out" "$WORK/device48.txt"
expect_exit "rand48 --host exits 0" 0 "$FK" rand48 --seed 9 --count 2000 --float --host
if cmp -s "$WORK/out" "$WORK/device48.txt"; then pass "rand48: device and host sequences identical"; else fail "rand48: device and host sequences identical"; fi
expect_exit "rand48 --count 0 exits 0" 0 "$FK" rand48 --count 0
expect_empty_stdout "rand48 --count 0 prints nothing"
expect_exit "rand48 --json exits 0" 0 "$FK" rand48 --seed 1 --count 5 --json
expect_json "rand48 --json: seed, count, float, device, values" "$WORK/out" \
    'd["seed"] == 1 and d["count"] == 5 and d["float"] is False and d["device"] and d["values"][0] == 89400484 and len(d["values"]) == 5'
expect_exit "rand48 without --count exits 2" 2 "$FK" rand48 --seed 1
expect_exit "rand48 --count -1 exits 2" 2 "$FK" rand48 --count -1
expect_exit "rand48 --count abc exits 2" 2 "$FK" rand48 --count abc
expect_exit "rand48 --json above a million values exits 2" 2 "$FK" rand48 --count 1000001 --json
expect_exit "rand48 --host --work-items exits 2" 2 "$FK" rand48 --count 3 --host --work-items 4

# ---- generate ------------------------------------------------------------------------------------
mkdir "$WORK/gen"
G="$WORK/gen"
# data_lines FILE: FILE without its '#' comments, into $WORK/data
data_lines() { grep -v '^#' "$1" >"$WORK/data"; }
expect_exit "generate protein --json exits 0" 0 "$FK" generate --model protein --out "$G/p.txt" --json
expect_json "generate protein: model, n, seed, out, params, exclude" "$WORK/out" \
    'd["model"] == "protein" and d["n"] == 3339 and d["seed"] == 1 and d["out"].endswith("p.txt") and d["params"].endswith("p.txt.params") and d["exclude"].endswith("p.txt.exclude") and d["exclusions"] == 7321 and abs(d["net_charge"]) < 1e-9'
expect_stderr "generate says which files it wrote" "p.txt.exclude"
data_lines "$G/p.txt"
expect_lines "generate protein: 3339 lines of x y z q type" "$WORK/data" 3339 5
data_lines "$G/p.txt.exclude"
expect_lines "generate protein: 7321 exclusions" "$WORK/data" 7321 2
data_lines "$G/p.txt.params"
expect_lines "generate protein: 45 type pairs (9 types)" "$WORK/data" 45 4
"$FK" generate --model protein --out "$G/p2.txt" 2>/dev/null
"$FK" generate --model protein --seed 2 --out "$G/p3.txt" 2>/dev/null
# (the '#' headers name the files, so only the data is compared)
same_data() { grep -v '^#' "$1" >"$WORK/a"; grep -v '^#' "$2" >"$WORK/b"; cmp -s "$WORK/a" "$WORK/b"; }
if same_data "$G/p.txt" "$G/p2.txt" && same_data "$G/p.txt.exclude" "$G/p2.txt.exclude"; then pass "generate is deterministic in the seed"; else fail "generate is deterministic in the seed"; fi
if same_data "$G/p.txt" "$G/p3.txt"; then fail "another seed gives another protein"; else pass "another seed gives another protein"; fi
expect_exit "forces reads the generated protein" 0 "$FK" forces --kernel ljc_constant --in "$G/p.txt" --params "$G/p.txt.params" --exclude "$G/p.txt.exclude" --coulomb 332.0637 --out "$G/pf.txt"
expect_exit "generate fluorite --n 96 exits 0" 0 "$FK" generate --model fluorite --n 96 --out "$G/uo2.txt" --json
expect_json "generate fluorite: params, no exclusions, neutral, periodic 2x2x2 cells" "$WORK/out" \
    'd["params"].endswith("uo2.txt.params") and d["exclude"] is None and d["net_charge"] == 0 and d["box"] == [10.94, 10.94, 10.94] and d["periodic"] is True'
data_lines "$G/uo2.txt"
if [ "$(awk '$5 == 0' "$WORK/data" | wc -l)" -eq 32 ] && [ "$(awk '$5 == 1' "$WORK/data" | wc -l)" -eq 64 ]; then pass "generate fluorite: 32 U, 64 O"; else fail "generate fluorite: 32 U, 64 O"; fi
expect_exit "forces --kernel buck reads the fluorite" 0 "$FK" forces --kernel buck --in "$G/uo2.txt" --params "$G/uo2.txt.params" --coulomb 14.399645 --out "$G/uo2f.txt"
expect_exit "generate fluorite --n 100 exits 2" 2 "$FK" generate --model fluorite --n 100 --out "$G/bad.txt"
expect_exit "generate lj-fluid exits 0" 0 "$FK" generate --model lj-fluid --n 256 --density 0.8442 --temperature 0.72 --out "$G/fluid.txt" --json
expect_json "generate lj-fluid: velocities, periodic box" "$WORK/out" \
    'd["velocities"].endswith("fluid.txt.vel") and d["periodic"] is True and abs(d["box"][0] - (256 / 0.8442) ** (1 / 3)) < 1e-12'
data_lines "$G/fluid.txt.vel"
expect_lines "generate lj-fluid: 256 velocities" "$WORK/data" 256 3
if "$PYTHON" -c '
import sys
v = [list(map(float, l.split())) for l in open(sys.argv[1]) if not l.startswith("#")]
p = [sum(c[k] for c in v) for k in range(3)]
t = sum(x * x for c in v for x in c) / (3 * len(v) - 3)
sys.exit(0 if max(map(abs, p)) < 1e-12 and abs(t - 0.72) < 1e-12 else 1)' "$G/fluid.txt.vel"; then pass "generate lj-fluid: zero momentum, T = 0.72"; else fail "generate lj-fluid: zero momentum, T = 0.72"; fi
# Every force law of the registry from the command line, without naming one: the laws come from
# the unknown-kernel error, each gets a generated system that fits it (plummer for gravity, fcc for
# the laws with a pair table; generate knows which fit from the registry) and one forces run.
laws=$("$FK" forces --kernel nosuchkernel --in "$WORK/two.txt" 2>&1 | sed -n 's/.*unknown kernel .*; available: *//p')
law_count=0
for law in $laws; do
    law_count=$((law_count + 1))
    if "$FK" generate --model plummer --n 40 --kernel "$law" --out "$G/law-$law.txt" >/dev/null 2>&1; then
        expect_exit "forces --kernel $law on a generated plummer sphere exits 0" 0 "$FK" forces --kernel "$law" --in "$G/law-$law.txt" --eps 0.01 --potential
    else
        expect_exit "generate fcc --kernel $law exits 0" 0 "$FK" generate --model fcc --n 108 --kernel "$law" --out "$G/law-$law.txt"
        expect_exit "forces --kernel $law on a generated fcc lattice exits 0" 0 "$FK" forces --kernel "$law" --in "$G/law-$law.txt" --cutoff 1.6 --potential
    fi
    if [ "$(grep -c . "$WORK/out")" = "$(grep -vc '^#' "$G/law-$law.txt")" ]; then
        pass "forces --kernel $law: a line per particle"
    else
        fail "forces --kernel $law: a line per particle"
    fi
done
if [ "$law_count" -ge 8 ]; then pass "the registry lists $law_count force laws"; else fail "the registry lists $law_count force laws: $laws"; fi
# yukawa's own parameter: --kappa, checked against the law.
expect_exit "forces --kernel yukawa --kappa 2 exits 0" 0 "$FK" forces --kernel yukawa --in "$G/law-yukawa.txt" --kappa 2 --cutoff 1.6
expect_exit "forces --kernel yukawa --kappa 0 exits 2" 2 "$FK" forces --kernel yukawa --in "$G/law-yukawa.txt" --kappa 0
expect_exit "forces --kernel lj --kappa 2 exits 2" 2 "$FK" forces --kernel lj --in "$G/law-lj.txt" --kappa 2
expect_stderr "--kappa on lj is explained" "--kappa does not apply to lj"
expect_exit "generate plummer --kernel gaj exits 0" 0 "$FK" generate --model plummer --n 100 --kernel gaj --out "$G/pl.txt"
data_lines "$G/pl.txt"
expect_lines "generate plummer --kernel gaj: 7 columns" "$WORK/data" 100 7
expect_exit "generate lj65536 exits 0" 0 "$FK" generate --model lj65536 --out "$G/big.txt"
data_lines "$G/big.txt.params"
expect_lines "generate lj65536: 136 type pairs" "$WORK/data" 136 4
expect_exit "generate lj65536 --n 1000 exits 2" 2 "$FK" generate --model lj65536 --n 1000 --out "$G/bad.txt"
expect_exit "generate --n 0 exits 2" 2 "$FK" generate --model fcc --n 0 --out "$G/bad.txt"
expect_exit "generate --density -1 exits 2" 2 "$FK" generate --model fcc --n 10 --density -1 --out "$G/bad.txt"
expect_exit "generate --temperature for fcc exits 2" 2 "$FK" generate --model fcc --n 10 --temperature 1 --out "$G/bad.txt"
expect_exit "generate unknown model exits 2" 2 "$FK" generate --model nosuch --n 10 --out "$G/bad.txt"
expect_exit "generate without --out exits 2" 2 "$FK" generate --model fcc --n 10
expect_exit "generate fluorite --kernel lj exits 2" 2 "$FK" generate --model fluorite --n 12 --kernel lj --out "$G/bad.txt"
expect_exit "generate into a missing directory exits 2" 2 "$FK" generate --model protein --out "$WORK/nonexistent/p.txt"
expect_stderr "generate into a missing directory names it" "nonexistent"
if [ -e "$G/bad.txt" ]; then fail "failed generates leave no file"; else pass "failed generates leave no file"; fi
no_temporary_files "generate leaves no temporary files" "$G"

# ---- reliability (issue #13): outputs, inputs, variants -----------------------------------------
R="$WORK/reliability"
mkdir -p "$R"
# 1. Device nodes and FIFOs are written in place, never replaced. As root, on copies of /dev/null
# and /dev/full made with mknod here (the real ones are never put at risk); as a normal user the
# real ones, which such a user cannot replace anyway.
if [ "$(id -u)" -eq 0 ] && mknod "$R/null" c 1 3 2>/dev/null && mknod "$R/full" c 1 7 2>/dev/null; then
    NULL_NODE="$R/null"
    FULL_NODE="$R/full"
else
    [ "$(id -u)" -eq 0 ] && skip "mknod copies of /dev/null and /dev/full (mknod failed); using the real ones"
    NULL_NODE=/dev/null
    FULL_NODE=/dev/full
fi
expect_exit "forces --out a null device exits 0" 0 "$FK" forces --kernel ga --in "$WORK/two.txt" --out "$NULL_NODE"
if [ -c "$NULL_NODE" ]; then pass "the null device is still a device"; else fail "the null device is still a device"; fi
expect_exit "forces --out a full device exits 1" 1 "$FK" forces --kernel ga --in "$WORK/two.txt" --out "$FULL_NODE"
expect_stderr "forces --out a full device says no space" "No space left on device"
if [ -c "$FULL_NODE" ]; then pass "the full device is still a device"; else fail "the full device is still a device"; fi
expect_exit "generate --out a full device exits 1" 1 "$FK" generate --model plummer --n 10 --out "$FULL_NODE"
expect_stderr "generate --out a full device says no space" "No space left on device"
if [ -c "$FULL_NODE" ]; then pass "generate left the full device a device"; else fail "generate left the full device a device"; fi
if [ "$FULL_NODE" = "$R/full" ]; then
    # A periodic checkpoint that fails warns and the run goes on; the final one fails: exit 1.
    expect_exit "simulate --checkpoint on a full device exits 1" 1 $SIM --steps 4 --checkpoint-every 2 --checkpoint "$FULL_NODE"
    expect_stderr "simulate warns about a failed periodic checkpoint and goes on" "checkpoint at step 2 not written; continuing"
    if [ -c "$FULL_NODE" ]; then pass "simulate left the full device a device"; else fail "simulate left the full device a device"; fi
fi
no_temporary_files "writing to devices leaves no temporary" "$R"
mkfifo "$R/fifo"
cat "$R/fifo" >"$R/from-fifo.txt" &
reader_pid=$!
expect_exit "forces --out a FIFO exits 0" 0 timeout 120 "$FK" forces --kernel ga --in "$WORK/two.txt" --out "$R/fifo"
wait "$reader_pid"
expect_values "forces --out a FIFO: the reader got the forces" "$R/from-fifo.txt" "1 0 0/-0.25 0 0"
if [ -p "$R/fifo" ]; then pass "the FIFO is still a FIFO"; else fail "the FIFO is still a FIFO"; fi

# 4. A read-only output file is refused like cp refuses it (exit 2), as a normal user (as root:
# run as nobody through setpriv, when nobody can run forcekit here).
printf 'old\n' >"$R/readonly.txt"
chmod 444 "$R/readonly.txt"
as_user=""
if [ "$(id -u)" -ne 0 ]; then
    as_user=" "
elif command -v setpriv >/dev/null 2>&1; then
    # nobody needs to reach the binary, the kernels and the input, and a POCL cache of its own.
    chmod 755 "$WORK"
    chmod 777 "$R"
    mkdir -m 777 "$R/pocl-nobody"
    chown 65534 "$R/readonly.txt"
    if env POCL_CACHE_DIR="$R/pocl-nobody" FORCEKIT_CACHE_DIR=off setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$FK" forces --kernel ga --in "$WORK/two.txt" >/dev/null 2>&1; then
        as_user="env POCL_CACHE_DIR=$R/pocl-nobody setpriv --reuid=65534 --regid=65534 --clear-groups"
    fi
fi
if [ -n "$as_user" ]; then
    # shellcheck disable=SC2086
    expect_exit "forces --out a read-only file exits 2" 2 env FORCEKIT_CACHE_DIR=off $as_user "$FK" forces --kernel ga --in "$WORK/two.txt" --out "$R/readonly.txt"
    expect_stderr "forces --out a read-only file says permission denied" "Permission denied"
    if [ "$(cat "$R/readonly.txt")" = old ] && [ "$(stat -c %a "$R/readonly.txt")" = 444 ]; then
        pass "the read-only file is untouched"
    else
        fail "the read-only file is untouched"
    fi
else
    skip "read-only output as a normal user (root, and setpriv cannot run forcekit as nobody here)"
fi
chmod 755 "$R"
rm -rf "$R/pocl-nobody"
printf 'old\n' >"$R/mode.txt"
chmod 640 "$R/mode.txt"
expect_exit "forces --out an existing file exits 0" 0 "$FK" forces --kernel ga --in "$WORK/two.txt" --out "$R/mode.txt"
if [ "$(stat -c %a "$R/mode.txt")" = 640 ]; then pass "an overwritten file keeps its mode"; else fail "an overwritten file keeps its mode ($(stat -c %a "$R/mode.txt"))"; fi
printf 'old\n' >"$R/target.txt"
ln -s target.txt "$R/link.txt"
expect_exit "forces --out a symbolic link exits 0" 0 "$FK" forces --kernel ga --in "$WORK/two.txt" --out "$R/link.txt"
if [ -L "$R/link.txt" ]; then pass "the link is still a link"; else fail "the link is still a link"; fi
expect_values "forces --out a link writes through it" "$R/target.txt" "1 0 0/-0.25 0 0"

# 9. Output names of 246 to 255 bytes (the temporary name used to exceed NAME_MAX).
long_name=$(printf 'f%.0s' $(seq 1 250))
expect_exit "forces --out a 250-byte name exits 0" 0 "$FK" forces --kernel ga --in "$WORK/two.txt" --out "$R/$long_name"
expect_values "the 250-byte name holds the forces" "$R/$long_name" "1 0 0/-0.25 0 0"
rm -f "$R/$long_name"
# 9. Stale temporaries of the same target (a writer killed by SIGKILL) are cleaned; others kept.
printf 'partial' >"$R/kept.txt.tmpAbC123"
printf 'partial' >"$R/other.txt.tmpAbC123"
expect_exit "forces over a stale temporary exits 0" 0 "$FK" forces --kernel ga --in "$WORK/two.txt" --out "$R/kept.txt"
if [ ! -e "$R/kept.txt.tmpAbC123" ] && [ -e "$R/other.txt.tmpAbC123" ]; then
    pass "the stale temporary of the same target is removed, another target's kept"
else
    fail "the stale temporary of the same target is removed, another target's kept"
fi
rm -f "$R/other.txt.tmpAbC123"

# 7. Endless or huge inputs: input too large, exit 2, at once.
expect_exit "forces --in /dev/zero (text) exits 2" 2 timeout 60 "$FK" forces --kernel ga --in /dev/zero
expect_stderr "forces --in /dev/zero says input too large" "input too large"
expect_exit "forces --in /dev/zero (TIPSY) exits 2" 2 timeout 60 "$FK" forces --kernel ga --in /dev/zero --format tipsy
expect_exit "forces with FORCEKIT_TUNING_DB=/dev/zero exits 0" 0 timeout 60 env FORCEKIT_TUNING_DB=/dev/zero "$FK" forces --kernel ga --in "$WORK/two.txt"
expect_stderr "FORCEKIT_TUNING_DB=/dev/zero is ignored with a warning" "not a regular file"

# 9. --coulomb out of float range; all-zero masses in accuracy.
printf '0 0 0 1 0\n1 0 0 -1 0\n' >"$R/ljc2.txt"
expect_exit "forces --coulomb 1e300 exits 2" 2 "$FK" forces --kernel ljc_constant --in "$R/ljc2.txt" --coulomb 1e300
expect_stderr "forces --coulomb 1e300 says float range" "out of float range"
printf '0 0 0 1 0\n0.001 0 0 1 0\n' >"$R/ljc-close.txt"
expect_exit "forces whose float arithmetic overflows exits 1" 1 "$FK" forces --kernel ljc_constant --in "$R/ljc-close.txt" --coulomb 3e38 --out "$R/overflow.txt"
if [ -e "$R/overflow.txt" ]; then fail "non-finite forces are not written"; else pass "non-finite forces are not written"; fi
printf '0 0 0 0\n1 0 0 0\n2 0 0 0\n' >"$R/massless.txt"
expect_exit "accuracy on all-zero masses exits 2" 2 timeout 60 "$FK" accuracy --kernel ga --in "$R/massless.txt"
expect_stderr "accuracy on all-zero masses says why" "every mass is zero"

# 2. A variant that would read past the tile: refused by bench, ignored in a database.
expect_exit "bench --wg 5 --unroll 4x4 --tiling on exits 2" 2 "$FK" bench --kernel ga --n 64 --wg 5 --unroll 4x4 --lanes off --tiling on
expect_stderr "bench --wg 5 --unroll 4x4 names the rule" "not a multiple of the j-unrolling"
expect_exit "bench --wg 5 --unroll 4x4 (automatic tiling) exits 2" 2 "$FK" bench --kernel ga --n 64 --wg 5 --unroll 4x4 --lanes off
cat >"$R/wg5.json" <<'JSON'
{"format": "forcekit-tuning", "version": 1, "entries": [
 {"kernel": "ga", "accum": "float", "n": 1024, "unroll": "4x4", "work_group_size": 5, "local_tiling": true}]}
JSON
expect_exit "forces with a wg-5 4x4 database entry exits 0" 0 env FORCEKIT_TUNING_DB="$R/wg5.json" FORCEKIT_SHIPPED_TUNING_DB=off "$FK" forces --kernel ga --in "$WORK/two.txt"
expect_stderr "the wg-5 4x4 entry is ignored with a warning" "entry 0 ignored: work-group size 5 is not a multiple"
expect_values "the wg-5 4x4 entry did not run: right forces" "$WORK/out" "1 0 0/-0.25 0 0"

# 5. tune moves aside only a regular file that does not parse, never over an older backup, and
# refuses a directory.
mkdir "$R/db-dir"
expect_exit "tune with FORCEKIT_TUNING_DB naming a directory exits 2" 2 env FORCEKIT_TUNING_DB="$R/db-dir" "$FK" tune --kernel ga --n 256 --budget 1
if [ -d "$R/db-dir" ] && [ ! -e "$R/db-dir.bad" ]; then pass "the directory is left where it was"; else fail "the directory is left where it was"; fi
printf 'older backup\n' >"$R/db.json.bad"
printf '{ not json\n' >"$R/db.json"
expect_exit "tune over a corrupt database exits 0" 0 env FORCEKIT_TUNING_DB="$R/db.json" "$FK" tune --kernel ga --n 256 --budget 1
if [ "$(cat "$R/db.json.bad")" = "older backup" ] && grep -q 'not json' "$R/db.json.bad.1"; then
    pass "the older backup is kept, the corrupt database goes to .bad.1"
else
    fail "the older backup is kept, the corrupt database goes to .bad.1"
fi

# 6. Concurrent tune runs on one database keep every entry.
for bucket in 1024 4096 16384; do
    env FORCEKIT_TUNING_DB="$R/shared.json" "$FK" tune --kernel ga --n "$bucket" --budget 1 >/dev/null 2>"$R/tune-$bucket.err" &
done
wait
expect_json "concurrent tune runs keep every entry" "$R/shared.json" \
    'sorted(e["n"] for e in d["entries"]) == [1024, 4096, 16384]'
no_temporary_files "the reliability cases leave no temporary" "$R"

# ---- installation problems -----------------------------------------------------------------------
expect_exit "missing kernel directory exits 1" 1 env FORCEKIT_KERNEL_DIR=/nonexistent "$FK" forces --kernel ga --in "$WORK/two.txt"
expect_stderr "missing kernel directory names the path" "/nonexistent"

# ---- the documented reference is the --help texts -------------------------------------------------
bash "$SOURCE_DIR/scripts/cli_reference.sh" "$FK" | sed -e '/^$/d' >"$WORK/reference.md"
sed -n '/^## Reference: every command/,/^## [^R]/p' "$SOURCE_DIR/docs/cli.md" | sed -e '/^## [^R]/d' -e '/^$/d' >"$WORK/documented.md"
if cmp -s "$WORK/reference.md" "$WORK/documented.md"; then
    pass "docs/cli.md's reference is the commands' --help (scripts/cli_reference.sh)"
else
    fail "docs/cli.md's reference differs from the commands' --help: regenerate it with scripts/cli_reference.sh"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
