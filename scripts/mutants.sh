#!/usr/bin/env bash
# Mutation testing (docs/testing.md, "Mutation testing"): applies each one-line bug of
# scripts/mutants.list, alone, to a scratch copy of the tree, builds it, runs the tests the entry
# names under a time bound and reports whether they caught it. Not part of CI (about an hour on two
# cores for the whole list).
#
# Usage: scripts/mutants.sh [options] [NAME...]
#   NAME...          run only these mutants (default: all of the list)
#   --list           print the list (name, file, tests, description) and check every snippet;
#                    runs nothing
#   --baseline       run each distinct test selection of the list once on the unmutated copy
#                    (slot 0) and report the ones that fail: such a selection would "kill" any
#                    mutant. Runs no mutant; exit 1 when one fails
#   -j N             N mutants at once, each in its own scratch copy and build (default 1)
#   --venv DIR       a Python venv with scikit-build-core, nanobind, numpy and pytest (as
#                    scripts/test.sh's stage 4 makes): the Python mutants run their pytest
#                    selection with the package built from the scratch copy (installed with
#                    --target into the scratch area: the venv itself is not changed). Default
#                    $FORCEKIT_MUTANTS_VENV; without one the Python mutants are "not run" (not
#                    counted)
#   --work DIR       scratch area (default build-mutants/ in the tree: copies, builds, caches,
#                    logs; reused between runs, so ccache and the build trees stay warm)
#   --timeout S      default time bound of one mutant's tests in seconds (default 600; an entry's
#                    timeout: overrides it); a run past it counts as killed (the mutant hung it)
#   --threshold P    the kill rate, in percent, below which the exit status is 1 (default 95)
#   --list-file F    another list (default scripts/mutants.list)
#
# The list: entries separated by blank lines, '#' lines are comments, one 'key: value' per line:
#   name:    a unique name
#   file:    the file to mutate, relative to the tree's root
#   find:    the exact original text; it must occur exactly once in the file, else the mutant is
#            STALE (an error of the list: the code changed under it; the list must follow)
#   replace: its replacement (in find and replace, \n stands for a newline, \\ for a backslash)
#   tests:   the ctest regex of the test programs that should kill it (ctest -R)
#   filter:  optional, the cmocka test functions to run (FK_TEST_FILTER: one glob)
#   pytest:  instead of tests, the pytest selection (paths under python/tests, ::names allowed)
#   timeout: optional, seconds
#   desc:    one line: the bug it stands for
#
# Outcomes: killed (a test failed, or the run timed out), survived (every test passed: a gap in the
# suite, or an equivalent mutant, which the list's desc must then say), stale, build-failed (the
# mutant does not compile: fix the entry), not-run (a Python mutant without --venv), error (the
# tests could not run: a missing command, no test matched, pytest's own errors). Kill rate =
# killed / (killed + survived). Exit status 0 when the rate is at least the threshold and no entry
# is stale, fails to build or ends in error; 1 otherwise; 2 for usage errors.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

list_file=$root/scripts/mutants.list
work=$root/build-mutants
jobs=1
venv=${FORCEKIT_MUTANTS_VENV:-}
default_timeout=600
threshold=95
list_only=0
baseline=0
names=()
usage() {
    sed -n '/^# Usage:/,/^# The list:/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
    --list) list_only=1 ;;
    --baseline) baseline=1 ;;
    -j) [ $# -ge 2 ] || usage; jobs=$2; shift ;;
    -j*) jobs=${1#-j} ;;
    --venv) [ $# -ge 2 ] || usage; venv=$2; shift ;;
    --work) [ $# -ge 2 ] || usage; work=$2; shift ;;
    --timeout) [ $# -ge 2 ] || usage; default_timeout=$2; shift ;;
    --threshold) [ $# -ge 2 ] || usage; threshold=$2; shift ;;
    --list-file) [ $# -ge 2 ] || usage; list_file=$2; shift ;;
    -h | --help) usage ;;
    -*) echo "mutants.sh: unknown option $1" >&2; usage ;;
    *) names+=("$1") ;;
    esac
    shift
done
case "$jobs" in '' | *[!0-9]* | 0) echo "mutants.sh: -j needs a positive number" >&2; exit 2 ;; esac
case "$default_timeout" in '' | *[!0-9]*) echo "mutants.sh: --timeout needs seconds" >&2; exit 2 ;; esac
[ -f "$list_file" ] || { echo "mutants.sh: no list $list_file" >&2; exit 2; }
if [ -n "$venv" ]; then
    if [ ! -x "$venv/bin/python" ]; then
        echo "mutants.sh: --venv $venv has no bin/python" >&2
        exit 2
    fi
    venv=$(cd "$venv" && pwd) # the tests run elsewhere
fi

# The list's parser and the snippet operations (exact text, no regular expressions).
helper=$(mktemp "${TMPDIR:-/tmp}/forcekit-mutants.XXXXXX.py")
trap 'rm -f "$helper"' EXIT
cat >"$helper" <<'PY'
import json, os, sys

def unescape(text):
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in "n\\":
            out.append("\n" if text[i + 1] == "n" else "\\")
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)

def parse(path):
    entries, current, errors = [], {}, []
    def flush(line):
        if current:
            current["line"] = line
            entries.append(dict(current))
            current.clear()
    start = 0
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if line.startswith("#"):
                continue
            if not line.strip():
                flush(start)
                continue
            if not current:
                start = number
            key, sep, value = line.partition(":")
            if not sep or key.strip() not in ("name", "file", "find", "replace", "tests", "filter",
                                               "pytest", "timeout", "desc"):
                errors.append(f"{path}:{number}: not a 'key: value' line of the list: {line}")
                continue
            if key.strip() in current:
                errors.append(f"{path}:{number}: {key.strip()} given twice")
            current[key.strip()] = value[1:] if value.startswith(" ") else value
        flush(start)
    seen = set()
    for e in entries:
        for key in ("name", "file", "find", "replace", "desc"):
            if key not in e:
                errors.append(f"{path}:{e['line']}: entry without {key}")
        if ("tests" in e) == ("pytest" in e):
            errors.append(f"{path}:{e['line']}: give exactly one of tests and pytest")
        if e.get("name") in seen:
            errors.append(f"{path}:{e['line']}: name {e.get('name')} used twice")
        seen.add(e.get("name"))
        if e.get("find") is not None and e.get("find") == e.get("replace"):
            errors.append(f"{path}:{e['line']}: replace equals find")
    return entries, errors

def occurrences(tree, e):
    try:
        with open(os.path.join(tree, e["file"]), encoding="utf-8") as f:
            return f.read().count(unescape(e["find"]))
    except OSError:
        return -1

command = sys.argv[1]
if command == "parse":  # list tree names... -> one line per entry, fields split by \x1f
    entries, errors = parse(sys.argv[2])
    for message in errors:
        print(message, file=sys.stderr)
    if errors:
        sys.exit(3)
    wanted = sys.argv[4:]
    known = {e["name"] for e in entries}
    for name in wanted:
        if name not in known:
            print(f"mutants.sh: no mutant named {name} in {sys.argv[2]}", file=sys.stderr)
            sys.exit(3)
    for e in entries:
        if wanted and e["name"] not in wanted:
            continue
        count = occurrences(sys.argv[3], e)
        kind = "python" if "pytest" in e else "ctest"
        print("\x1f".join([e["name"], e["file"], kind, e.get("tests", e.get("pytest", "")),
                         e.get("filter", ""), e.get("timeout", ""), str(count),
                         e["desc"]]))
elif command == "apply":  # list tree name: replaces the snippet in the tree's copy (exactly once)
    entries, _ = parse(sys.argv[2])
    e = next(e for e in entries if e["name"] == sys.argv[4])
    path = os.path.join(sys.argv[3], e["file"])
    with open(path, encoding="utf-8") as f:
        text = f.read()
    find = unescape(e["find"])
    if text.count(find) != 1:
        sys.exit(4)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(find, unescape(e["replace"]), 1))
PY

table=$(python3 "$helper" parse "$list_file" "$root" ${names[@]+"${names[@]}"}) || {
    echo "mutants.sh: the list $list_file has errors (above)" >&2
    exit 2
}
if [ "$list_only" -eq 1 ]; then
    stale=0
    while IFS=$'\x1f' read -r name file kind tests filter timeout count desc; do
        state=ok
        if [ "$count" != 1 ]; then
            state="STALE (the snippet occurs $count times)"
            stale=1
        fi
        printf '%-28s %-34s %-6s %s%s\n    %s  [%s]\n' "$name" "$file" "$kind" "$tests" \
            "${filter:+ ($filter)}" "$desc" "$state"
    done <<<"$table"
    echo "$(wc -l <<<"$table") mutants in $list_file"
    [ "$stale" -eq 0 ] || echo "STALE ENTRIES IN THE LIST: update their snippets" >&2
    exit "$stale"
fi

mkdir -p "$work"
work=$(cd "$work" && pwd)
results=$work/results.tsv
: >"$results"
log=$work/mutants.log
echo "mutation run $(date -u '+%Y-%m-%d %H:%M UTC') of $(git -C "$root" rev-parse --short HEAD)" \
    "(+ uncommitted changes: the working tree is what is copied), -j $jobs" | tee "$log"

# A scratch copy of the working tree (tracked and untracked files that git does not ignore) per
# job, with its own build tree (RelWithDebInfo, ccache) at build/ inside it, as in the tree, so
# that ccache (paths relative to the tree, CCACHE_BASEDIR) finds the tree's own objects; configured
# once and kept between runs. FK_TEST_DATA_DIR is <source>/../shared/data: the copy gets a link to
# the tree's shared folder.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
prepare_slot() { # slot
    local slot=$1 dir=$work/slot-$1
    mkdir -p "$dir/src" "$dir/pocl-cache"
    find "$dir/src" -mindepth 1 -maxdepth 1 ! -name build -exec rm -rf {} +
    # (a tracked file deleted in the tree is skipped: --ignore-failed-read)
    # (extracted with the current time, -m: the build tree kept from an earlier run must not keep
    # an object newer than its restored source; ccache makes the rebuild cheap)
    (cd "$root" && git ls-files -z --cached --others --exclude-standard |
        tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xmf - -C "$dir/src"
    if [ -e "$root/../shared" ]; then
        ln -sfn "$(cd "$root/../shared" && pwd)" "$dir/shared"
    fi
    local launcher=()
    if command -v ccache >/dev/null; then
        launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    fi
    cmake -S "$dir/src" -B "$dir/src/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
        -DFORCEKIT_FUZZ=OFF -DFORCEKIT_BUILD_BENCH=OFF -DFORCEKIT_BUILD_EXAMPLES=OFF \
        >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log" >&2; return 1; }
    cmake --build "$dir/src/build" -j 1 >"$dir/build.log" 2>&1 || {
        tail -40 "$dir/build.log" >&2
        echo "mutants.sh: the unmutated copy does not build (slot $slot)" >&2
        return 1
    }
}

# One mutant in one slot: apply, build, test, restore; appends its line to results.tsv.
run_mutant() { # slot name file kind tests filter timeout desc
    local slot=$1 name=$2 file=$3 kind=$4 tests=$5 filter=$6 bound=${7:-$default_timeout}
    local dir=$work/slot-$slot start outcome="" by="" status=0
    local src=$dir/src mlog=$dir/$name.log
    start=$(date +%s)
    : >"$mlog"
    cp -p "$src/$file" "$dir/original"
    if ! python3 "$helper" apply "$list_file" "$src" "$name"; then
        outcome=stale
    elif [ "$kind" = python ] && [ -z "$venv" ]; then
        outcome=not-run
        by="no --venv"
    elif [ "$kind" = python ]; then
        local site=$dir/py-site
        rm -rf "$site" "$dir/py-cache"
        if ! "$venv/bin/pip" install -q --no-build-isolation --no-deps --target "$site" \
            "$src/python" --config-settings=build-dir="$dir/py-ext" >>"$mlog" 2>&1; then
            outcome=build-failed
        else
            local selection=()
            read -r -a selection <<<"$tests"
            set +e
            (cd "$src/python/tests" && PYTHONPATH=$site FORCEKIT_CACHE_DIR=$dir/py-cache \
                POCL_CACHE_DIR=$dir/pocl-cache timeout "$bound" "$venv/bin/python" -m pytest -q \
                -x -p no:cacheprovider "${selection[@]}") >>"$mlog" 2>&1
            status=$?
            set -e
        fi
    else
        case "$file" in
        cl/*) ;; # kernels are read from the tree at run time (FORCEKIT_KERNEL_DIR)
        *)
            if ! cmake --build "$dir/src/build" -j 1 >>"$mlog" 2>&1; then
                outcome=build-failed
            fi
            ;;
        esac
        if [ -z "$outcome" ]; then
            set +e
            (cd "$dir/src/build" && FK_TEST_FILTER=$filter POCL_CACHE_DIR=$dir/pocl-cache \
                timeout "$bound" ctest -R "$tests" --no-tests=error --output-on-failure -j 1) \
                >>"$mlog" 2>&1
            status=$?
            set -e
        fi
    fi
    # Restored with a new time, and for host code rebuilt at once: the next mutant (a kernel's
    # needs no build) must not run with this one's objects.
    cp "$dir/original" "$src/$file"
    case "$kind:$file" in
    python:* | *:cl/*) ;;
    *)
        if ! cmake --build "$dir/src/build" -j 1 >>"$mlog" 2>&1; then
            echo "mutants.sh: slot $slot does not build after restoring $file: see $mlog" >&2
            exit 1
        fi
        ;;
    esac
    # Not a verdict on the mutant: the tests could not run (command missing, nothing collected,
    # pytest's usage or internal errors). See the mutant's log.
    if [ -z "$outcome" ] && { [ "$status" -eq 126 ] || [ "$status" -eq 127 ] ||
        { [ "$kind" = python ] && [ "$status" -ge 2 ] && [ "$status" -ne 124 ]; } ||
        grep -q "No tests were found" "$mlog"; }; then
        outcome=error
        by="the tests did not run (exit $status): $mlog"
    fi
    if [ -z "$outcome" ]; then
        if [ "$status" -eq 124 ]; then
            outcome=killed
            by="timeout ${bound} s"
        elif [ "$status" -ne 0 ]; then
            outcome=killed
            if [ "$kind" = python ]; then
                by=$(grep -m1 -o 'FAILED [^ ]*' "$mlog" | sed 's/^FAILED //; s|.*/||') || true
                by=${by:-pytest}
            else
                # ctest's summary names the failed programs; the first failed cmocka test too
                by=$(sed -n '/The following tests FAILED/,$p' "$mlog" |
                    grep -oE '^[[:space:]]*[0-9]+ - [A-Za-z_0-9]+ \(' |
                    sed -E 's/^[[:space:]]*[0-9]+ - //; s/ \($//' | awk '!seen[$0]++' |
                    paste -sd, -) || true
                local fn
                fn=$(grep -m1 -o '\[  FAILED  \] [a-z_0-9]*' "$mlog" | sed 's/.*\] //') || true
                by=${by:-ctest}${fn:+ ($fn)}
            fi
        else
            outcome=survived
        fi
    fi
    printf '%s\t%s\t%s\t%s\n' "$name" "$outcome" "${by:--}" "$(($(date +%s) - start))" >>"$results"
    printf '%-28s %-12s %-40s %5s s\n' "$name" "$outcome" "${by:--}" "$(($(date +%s) - start))" |
        tee -a "$log"
}

# --baseline: every distinct selection once, unmutated, in slot 0.
if [ "$baseline" -eq 1 ]; then
    prepare_slot 0 || exit 1
    dir=$work/slot-0
    failed=0
    declare -A seen=()
    while IFS=$'\x1f' read -r name file kind tests filter timeout _ desc; do
        key="$kind|$tests|$filter"
        [ -z "${seen[$key]:-}" ] || continue
        seen[$key]=1
        blog=$dir/baseline-$name.log
        start=$(date +%s)
        set +e
        if [ "$kind" = python ]; then
            if [ -z "$venv" ]; then
                printf '%-44s %-10s\n' "pytest $tests" not-run | tee -a "$log"
                continue
            fi
            site=$dir/py-site
            rm -rf "$site" "$dir/py-cache"
            "$venv/bin/pip" install -q --no-build-isolation --no-deps --target "$site" \
                "$dir/src/python" --config-settings=build-dir="$dir/py-ext" >"$blog" 2>&1 &&
                (cd "$dir/src/python/tests" && read -r -a selection <<<"$tests" &&
                    PYTHONPATH=$site FORCEKIT_CACHE_DIR=$dir/py-cache POCL_CACHE_DIR=$dir/pocl-cache \
                        timeout "${timeout:-$default_timeout}" "$venv/bin/python" -m pytest -q \
                        -p no:cacheprovider "${selection[@]}") >>"$blog" 2>&1
        else
            (cd "$dir/src/build" && FK_TEST_FILTER=$filter POCL_CACHE_DIR=$dir/pocl-cache \
                timeout "${timeout:-$default_timeout}" ctest -R "$tests" --no-tests=error \
                --output-on-failure -j 1) >"$blog" 2>&1
        fi
        status=$?
        set -e
        verdict=pass
        if [ "$status" -ne 0 ]; then
            verdict="FAILS (exit $status): $blog"
            failed=1
        fi
        printf '%-44s %s  %s s\n' "$tests${filter:+ ($filter)}" "$verdict" \
            "$(($(date +%s) - start))" | tee -a "$log"
    done <<<"$table"
    [ "$failed" -eq 0 ] || echo "!!! SELECTIONS THAT FAIL WITHOUT A MUTANT: fix them first !!!" >&2
    exit "$failed"
fi

# The work: mutant k goes to slot k mod jobs; each slot runs its share in order.
mapfile -t entries <<<"$table"
count=${#entries[@]}
[ "$jobs" -le "$count" ] || jobs=$count
pids=()
for ((slot = 0; slot < jobs; ++slot)); do
    (
        prepare_slot "$slot" || exit 1
        for ((k = slot; k < count; k += jobs)); do
            IFS=$'\x1f' read -r name file kind tests filter timeout _ desc <<<"${entries[$k]}"
            run_mutant "$slot" "$name" "$file" "$kind" "$tests" "$filter" "$timeout"
        done
    ) &
    pids+=($!)
done
failed_slots=0
for pid in "${pids[@]}"; do wait "$pid" || failed_slots=1; done

# The kill table, in the list's order.
echo | tee -a "$log"
printf '| mutant | where | outcome | by | seconds |\n|---|---|---|---|---|\n' | tee -a "$log"
killed=0 survived=0 stale=0 build_failed=0 not_run=0 errors=0
for entry in "${entries[@]}"; do
    IFS=$'\x1f' read -r name file kind tests filter timeout _ desc <<<"$entry"
    line=$(awk -F'\t' -v n="$name" '$1 == n' "$results")
    if [ -z "$line" ]; then
        outcome=missing by="slot failed" seconds=-
    else
        IFS=$'\t' read -r _ outcome by seconds <<<"$line"
    fi
    case "$outcome" in
    killed) killed=$((killed + 1)) ;;
    survived) survived=$((survived + 1)) ;;
    stale) stale=$((stale + 1)) ;;
    build-failed) build_failed=$((build_failed + 1)) ;;
    not-run) not_run=$((not_run + 1)) ;;
    *) errors=$((errors + 1)) ;;
    esac
    printf '| %s | %s | %s | %s | %s |\n' "$name" "$file" "$outcome" "$by" "$seconds" |
        tee -a "$log"
done
counted=$((killed + survived))
rate=0
[ "$counted" -eq 0 ] || rate=$(awk -v k="$killed" -v c="$counted" 'BEGIN { printf "%.1f", 100 * k / c }')
echo | tee -a "$log"
echo "killed $killed, survived $survived, stale $stale, build-failed $build_failed," \
    "not run $not_run, errors $errors: kill rate $rate% of $counted (threshold $threshold%)" |
    tee -a "$log"
status=0
if [ "$stale" -gt 0 ]; then
    echo "!!! STALE MUTANTS: their snippets no longer occur exactly once; update the list !!!" |
        tee -a "$log" >&2
    status=1
fi
if [ "$build_failed" -gt 0 ]; then
    echo "!!! MUTANTS THAT DO NOT BUILD: fix their entries !!!" | tee -a "$log" >&2
    status=1
fi
if [ "$errors" -gt 0 ]; then
    echo "!!! MUTANTS WHOSE TESTS DID NOT RUN (outcome error): see their logs !!!" |
        tee -a "$log" >&2
    status=1
fi
[ "$failed_slots" -eq 0 ] || status=1
awk -v r="$rate" -v t="$threshold" 'BEGIN { exit !(r + 0 < t + 0) }' && status=1
[ "$counted" -gt 0 ] || status=1
echo "log: $log" >&2
exit "$status"
