#!/usr/bin/env bash
# `forcekit selftest` on the test device: passes there, reports JSON with both laws, and refuses bad
# usage with exit 2.
#   test_selftest.sh FORCEKIT
set -uo pipefail
fk=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/forcekit-selftest.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
expect() { # description, then a command whose status says
    local description=$1
    shift
    if "$@"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: $description" >&2
    fi
}
device=${FORCEKIT_DEVICE:-}
"$fk" selftest ${device:+--device "$device"} --n 343 --json > "$work/out.json" 2> "$work/err"
status=$?
expect "selftest exits 0 on the test device (stderr: $(head -c 400 "$work/err"))" test "$status" -eq 0
expect "selftest --json: both laws passed, errors below tolerance, a checksum where reproducible" \
    python3 - "$work/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["passed"] is True and d["devices_tested"] >= 1, d
for device in d["devices"]:
    kernels = [c["kernel"] for c in device["checks"]]
    assert kernels == ["ga", "lj"], kernels
    for c in device["checks"]:
        assert c["passed"] and 0 < c["error"] <= c["tolerance"], c
        assert c["reproducible_checksum"] or c["not_reproducible"], c
PY
# The smallest N it accepts: the lattice grows to a box of two cutoffs (it was refused by the
# host reference and reported as a memory failure).
"$fk" selftest ${device:+--device "$device"} --n 27 > /dev/null 2> "$work/err"
status=$?
expect "selftest --n 27 exits 0 (stderr: $(head -c 400 "$work/err"))" test "$status" -eq 0
"$fk" selftest --n 5 > /dev/null 2> "$work/err"
expect "selftest --n 5 exits 2" test $? -eq 2
"$fk" selftest --device nosuchdevice > /dev/null 2> "$work/err"
expect "selftest --device nosuchdevice exits 2" test $? -eq 2
expect "the unknown device is named" grep -q "nosuchdevice" "$work/err"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
