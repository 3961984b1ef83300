#!/usr/bin/env bash
# The installed tree works on its own, from any prefix and after it is moved: installs the build
# into a temporary prefix, builds examples/embed.c against it as a consumer would (find_package and
# pkg-config), then MOVES the prefix and runs the command and both consumers from the new place
# with no FORCEKIT_* variable set. The installed library must find its kernels and shipped tuning
# database relative to itself (src/install_paths.c), not in this checkout and not at the configured
# prefix: `forcekit --version` must name the moved prefix's kernel directory. When cpack is
# present, the .deb must list the same files, and unpacked anywhere it must run the same way.
# Args: BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 source=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/fk-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "test_install: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/prefix" >/dev/null
for f in include/forcekit/forcekit.h include/forcekit/version.h include/forcekit/tools.h share/forcekit/cl/pairwise.cl \
         share/forcekit/cl/VERSION share/forcekit/cl/forces/ga.clh share/forcekit/cl/accum/float.clh \
         share/forcekit/tuning/shipped.json bin/forcekit; do
    [ -e "$work/prefix/$f" ] || fail "missing after install: $f"
done
libdir=$(dirname "$(find "$work/prefix" -name 'libforcekit.so' | head -n1)")
[ -e "$libdir/libforcekit.a" ] || fail "missing static library"
[ -e "$libdir/pkgconfig/forcekit.pc" ] || fail "missing pkg-config file"
[ -e "$libdir/libforcekit_tools.a" ] || fail "missing tools library"
[ -e "$libdir/pkgconfig/forcekit-tools.pc" ] || fail "missing tools pkg-config file"
[ -e "$libdir/cmake/forcekit/forcekitConfig.cmake" ] || fail "missing CMake package file"
librel=${libdir#"$work/prefix/"}

consumer_cflags=${FK_CONSUMER_CFLAGS:-}
cmake -S "$source/tests/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DCMAKE_C_FLAGS="$consumer_cflags" -DEMBED_SOURCE="$source/examples/embed.c" \
      -DTOOLS_SOURCE="$source/examples/read_particles.c" >/dev/null
cmake --build "$work/consumer" >/dev/null
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 $consumer_cflags "$source/examples/embed.c" $(pkg-config --cflags --libs forcekit) -lm -o "$work/embed_pc"
cc -std=c11 $consumer_cflags "$source/examples/read_particles.c" $(pkg-config --cflags --libs forcekit-tools) -lm -o "$work/tools_pc"
# libsapporo (issue #18), when built: sapporo_light.pc links the Fortran g6 smoke test, which runs
# from the moved prefix below on the library's own kernels.
g6_smoke=
if [ -e "$libdir/libsapporo.so" ]; then
    [ -e "$libdir/libsapporo.a" ] || fail "missing libsapporo.a"
    [ -e "$libdir/pkgconfig/sapporo_light.pc" ] || fail "missing sapporo_light.pc"
    if command -v gfortran >/dev/null && [ -z "$consumer_cflags" ]; then
        gfortran "$source/tests/g6/g6_smoke.f90" $(pkg-config --libs sapporo_light) -o "$work/g6_smoke" ||
            fail "the g6 Fortran smoke test does not link through sapporo_light.pc"
        g6_smoke=$work/g6_smoke
    fi
fi
unset PKG_CONFIG_PATH

# Move the whole prefix; nothing may point into the old one, the checkout or the build tree.
mv "$work/prefix" "$work/moved"
unset FORCEKIT_KERNEL_DIR FORCEKIT_SHIPPED_TUNING_DB
run_installed() { # prefix
    local prefix=$1
    local version
    version=$("$prefix/bin/forcekit" --version) || fail "forcekit --version failed from $prefix"
    case $version in
    *"kernels $(cat "$source/cl/VERSION") in $prefix/share/forcekit/cl"*) ;;
    *) fail "the installed command did not use its own kernels: $version" ;;
    esac
    printf '0 0 0 1\n1 0 0 1\n0 1 0 2\n' >"$work/three.txt"
    "$prefix/bin/forcekit" forces --kernel ga --in "$work/three.txt" --eps 0.1 --out "$work/forces.txt" \
        >/dev/null 2>&1 || fail "forcekit forces failed from $prefix"
    [ "$(wc -l <"$work/forces.txt")" = 3 ] || fail "forcekit forces wrote $(wc -l <"$work/forces.txt") lines"
}
run_installed "$work/moved"
LD_LIBRARY_PATH="$work/moved/$librel" "$work/consumer/consumer" >/dev/null || fail "find_package consumer failed"
LD_LIBRARY_PATH="$work/moved/$librel" "$work/embed_pc" >/dev/null || fail "pkg-config consumer failed"
# The tools consumers read a particle file (text here; the same call reads TIPSY) and write forces.
for tools in "$work/consumer/tools_consumer" "$work/tools_pc"; do
    LD_LIBRARY_PATH="$work/moved/$librel" "$tools" "$work/three.txt" "$work/tools_forces.txt" >/dev/null ||
        fail "tools consumer $tools failed"
    [ "$(wc -l <"$work/tools_forces.txt")" = 3 ] || fail "tools consumer $tools wrote $(wc -l <"$work/tools_forces.txt") lines"
done
if [ -n "$g6_smoke" ]; then
    LD_LIBRARY_PATH="$work/moved/$librel" "$g6_smoke" >/dev/null || fail "the installed libsapporo failed the g6 smoke test"
    echo "install: the moved libsapporo ran the Fortran g6 smoke test on its own kernels"
fi
echo "install: the moved prefix ran the command, both consumers and both tools consumers on its own kernels"

# The Debian package, where cpack and dpkg are present (a sanitizer build is not packaged).
if command -v cpack >/dev/null && command -v dpkg-deb >/dev/null && [ -z "$consumer_cflags" ]; then
    (cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/deb" >/dev/null) ||
        fail "cpack -G DEB failed"
    deb=$(find "$work/deb" -maxdepth 1 -name '*.deb' | head -n1)
    [ -n "$deb" ] || fail "cpack made no .deb"
    listing=$(dpkg-deb -c "$deb")
    for f in ./usr/bin/forcekit ./usr/include/forcekit/forcekit.h ./usr/share/forcekit/cl/pairwise.cl \
             ./usr/share/forcekit/tuning/shipped.json "./usr/$librel/libforcekit.so" \
             "./usr/$librel/pkgconfig/forcekit.pc"; do
        grep -q " $f" <<<"$listing" || fail "the .deb lacks $f"
    done
    dpkg-deb -x "$deb" "$work/unpacked"
    run_installed "$work/unpacked/usr"
    echo "install: $(basename "$deb") lists the installed files and runs where it is unpacked"
fi
