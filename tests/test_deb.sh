#!/usr/bin/env bash
# The Debian package (`cpack -G DEB`, issue #32): it lists the installed files, runs where it is
# unpacked, and its Depends cover what its ELF files need. Every NEEDED library of every ELF file in
# the package (readelf -d) that the package does not hold itself must come from a package this
# machine has installed (dpkg -S) that the Depends line names, in some alternative. A fixed list
# missed libmpi.so.40 (libopenmpi3) and libgomp.so.1 (libgomp1) of the command, which then did not
# start on a machine without Open MPI; the Depends are now computed by dpkg-shlibdeps.
# Exit 77 (CTest's skip) without cpack, dpkg-deb, dpkg-shlibdeps, readelf or ldconfig, and for
# a sanitizer build (not packaged). Args: BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 source=$2
fail() { echo "test_deb: $*" >&2; exit 1; }
for tool in cpack dpkg-deb dpkg dpkg-shlibdeps readelf; do
    command -v "$tool" >/dev/null || { echo "test_deb: skipped: no $tool" >&2; exit 77; }
done
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
[ -x "$ldconfig" ] || { echo "test_deb: skipped: no ldconfig" >&2; exit 77; }
if grep -q '^CMAKE_BUILD_TYPE:STRING=\(Sanitize\|Tsan\)$' "$build/CMakeCache.txt"; then
    echo "test_deb: skipped: a sanitizer build is not packaged" >&2
    exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/fk-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT

(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/deb" >"$work/cpack.log" 2>&1) ||
    fail "cpack -G DEB failed: $(tail -n 20 "$work/cpack.log")"
deb=$(find "$work/deb" -maxdepth 1 -name '*.deb' | head -n1)
[ -n "$deb" ] || fail "cpack made no .deb"
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
listing=$(dpkg-deb -c "$deb")
for f in ./usr/bin/forcekit ./usr/include/forcekit/forcekit.h ./usr/share/forcekit/cl/pairwise.cl \
         ./usr/share/forcekit/tuning/shipped.json "./usr/$libdir/libforcekit.so" \
         "./usr/$libdir/pkgconfig/forcekit.pc"; do
    grep -q " $f" <<<"$listing" || fail "the .deb lacks $f"
done
dpkg-deb -x "$deb" "$work/unpacked"

# Unpacked anywhere it runs on its own kernels (nothing points into the build or the checkout).
unset FORCEKIT_KERNEL_DIR FORCEKIT_SHIPPED_TUNING_DB
prefix=$work/unpacked/usr
version=$("$prefix/bin/forcekit" --version) || fail "forcekit --version failed from the unpacked package"
case $version in
*"kernels $(cat "$source/cl/VERSION") in $prefix/share/forcekit/cl"*) ;;
*) fail "the unpacked command did not use its own kernels: $version" ;;
esac
printf '0 0 0 1\n1 0 0 1\n0 1 0 2\n' >"$work/three.txt"
"$prefix/bin/forcekit" forces --kernel ga --in "$work/three.txt" --eps 0.1 --out "$work/forces.txt" \
    >/dev/null 2>&1 || fail "forcekit forces failed from the unpacked package"
[ "$(wc -l <"$work/forces.txt")" = 3 ] || fail "forcekit forces wrote $(wc -l <"$work/forces.txt") lines"

# The Depends against the ELF files' needs.
depends=$(dpkg-deb -f "$deb" Depends)
# Package names, each alternative of each entry: "a (>= 1) | b, c" -> a b c
declared=" $(sed -e 's/([^)]*)//g' -e 's/:[a-z0-9]*//g' -e 's/[,|]/ /g' <<<"$depends" | tr -s ' ') "
# Libraries the package holds itself (its sonames and their links).
own=" $(find "$work/unpacked" \( -type f -o -type l \) -name '*.so*' -printf '%f ') "
arch_tag=$(dpkg --print-architecture)
checked=0
while IFS= read -r -d '' file; do
    readelf -h "$file" >/dev/null 2>&1 || continue # not ELF
    while read -r needed; do
        [[ $own == *" $needed "* ]] && continue
        # Where the dynamic loader takes it from, and the package that installed that file.
        path=$("$ldconfig" -p | awk -v lib="$needed" '$1 == lib { print $NF }' | head -n1)
        [ -n "$path" ] || fail "${file#"$work/unpacked"} needs $needed, which this machine's loader does not know"
        owner=
        for candidate in "$path" "$(readlink -f "$path")" "/usr$path" "${path#/usr}"; do
            owner=$(dpkg -S "$candidate" 2>/dev/null | head -n1 | sed 's/[:,].*//') && [ -n "$owner" ] && break
        done
        [ -n "$owner" ] || fail "no installed package owns $path ($needed of ${file#"$work/unpacked"})"
        [[ $declared == *" $owner "* ]] ||
            fail "${file#"$work/unpacked"} needs $needed from $owner, which Depends does not declare: $depends"
        checked=$((checked + 1))
    done < <(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p')
done < <(find "$work/unpacked" -type f -print0)
[ "$checked" -gt 0 ] || fail "no NEEDED library was checked: no ELF file in the package?"
echo "deb: $(basename "$deb") ($arch_tag) lists the installed files, runs where it is unpacked, and" \
    "its Depends cover the $checked needs of its ELF files: $depends"
