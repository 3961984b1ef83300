#!/usr/bin/env bash
# Runs golden_variants --check against the golden file of this device, if there is one; 77 (skipped)
# otherwise. GOLDEN_ALL=1 checks every variant instead of the subset.
#   golden_variants.sh PROGRAM GOLDEN_DIR
set -u
program=$1
dir=$2
args=()
[ "${GOLDEN_ALL:-0}" = 1 ] && args+=(--all)
skipped=1
for file in "$dir"/*.txt; do
    [ -e "$file" ] || continue
    "$program" --check "$file" "${args[@]}"
    rc=$?
    [ $rc = 77 ] && continue
    exit $rc
done
echo "no golden file in $dir for this device: skipped" >&2
exit 77
