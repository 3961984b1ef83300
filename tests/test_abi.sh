#!/usr/bin/env bash
# The shared library exports exactly the public API: tests/abi/exported_symbols.txt, one name per
# line, sorted. A symbol added to the API is added there on purpose (and to CHANGELOG.md); an
# internal one that leaks fails here.
#   test_abi.sh LIBRARY LIST
set -euo pipefail
library=$1 list=$2
exported=$(nm -D --defined-only "$library" | awk '$2 ~ /^[TDBRV]$/ {print $3}' | LC_ALL=C sort)
if ! diff <(LC_ALL=C sort "$list") <(echo "$exported") > /tmp/forcekit-abi-diff.$$; then
    echo "exported symbols of $library differ from $list (< listed only, > exported only):"
    cat /tmp/forcekit-abi-diff.$$
    rm -f /tmp/forcekit-abi-diff.$$
    exit 1
fi
rm -f /tmp/forcekit-abi-diff.$$
echo "$(echo "$exported" | wc -l) exported symbols, as listed"
echo "1 passed, 0 failed"
