#!/usr/bin/env bash
# Runs a test program under oclgrind's checkers and fails on any diagnostic, whatever the
# program's own verdict:  tests/oclgrind_check.sh PROGRAM [ARGS...]
# - The checks: data races (global and local memory, barrier divergence), API misuse, reads of
#   uninitialized values. --max-errors is raised so that no message is suppressed.
# - -cl-opt-disable: oclgrind 21.10 cannot load optimised kernels ("Undefined external function:
#   llvm.experimental.noalias.scope.decl", an intrinsic its LLVM interpreter does not know); its
#   --build-options are appended to every clBuildProgram, so the library needs no oclgrind switch.
# - The `oclgrind` command preloads its own OpenCL runtime, so the program sees one platform with
#   one device: oclgrind's.
# Exit: the program's status, or 1 when oclgrind reported anything; 77 (CTest's skip) when oclgrind
# is not installed, said loudly so that it never passes unnoticed.
set -u
if ! command -v oclgrind >/dev/null; then
    echo "SKIP: oclgrind not installed (Debian package oclgrind; scripts/setup-deps.sh installs it)" >&2
    exit 77
fi
# The device is whatever oclgrind offers, not the one a caller picked for the other tests.
unset FORCEKIT_DEVICE
log=$(mktemp "${TMPDIR:-/tmp}/forcekit-oclgrind.XXXXXX")
trap 'rm -f "$log"' EXIT
oclgrind --log "$log" --max-errors 1000000000 --data-races --check-api --uninitialized \
    --build-options -cl-opt-disable "$@"
status=$?
if [ -s "$log" ]; then
    echo "FAIL: oclgrind reported diagnostics:" >&2
    cat "$log" >&2
    exit 1
fi
exit "$status"
