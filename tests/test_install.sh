#!/usr/bin/env bash
# The installed tree works on its own, from any prefix and after it is moved: installs the build
# into a temporary prefix, builds examples/embed.c against it as a consumer would (find_package and
# pkg-config), then MOVES the prefix and runs the command and both consumers from the new place
# with no FORCEKIT_* variable set. The installed library must find its kernels and shipped tuning
# database relative to itself (src/core/programs/install_paths.c), not in this checkout and not at the configured
# prefix: `forcekit --version` must name the moved prefix's kernel directory. A static consumer
# copied out of the prefix runs on the kernels built into the library.
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

# pkg-config from a prefix the dynamic loader does not search: the README's step, an rpath to the
# .pc's libdir, makes the program start without LD_LIBRARY_PATH (run before the prefix moves, as
# the rpath names where the prefix is now; the LD_LIBRARY_PATH route is run after the move).
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 $consumer_cflags "$source/examples/embed.c" $(pkg-config --cflags --libs forcekit) \
    -Wl,-rpath,"$(pkg-config --variable=libdir forcekit)" -lm -o "$work/embed_pc_rpath"
unset PKG_CONFIG_PATH
(unset LD_LIBRARY_PATH; "$work/embed_pc_rpath" >/dev/null) ||
    fail "the pkg-config consumer linked with the README's rpath step did not run"
if (unset LD_LIBRARY_PATH; "$work/embed_pc" >/dev/null 2>&1); then
    echo "install: note: the pkg-config consumer without rpath ran ($libdir is on the loader's path)"
fi

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

# A program linked with the static library lives anywhere (issue #32): copied out of the prefix,
# with the prefix's share/forcekit moved away too and no FORCEKIT_* variable, it finds no kernel
# directory and must run on the kernel sources built into the library, with right forces (the
# consumer checks them against the double-precision reference). The forcekit command links the
# static library too: its --version must say "built-in". Unless the configured prefix holds
# kernels, which the library's search tries before its built-in copy.
configured_data=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")/share/forcekit/cl
mkdir -p "$work/elsewhere/bin"
cp "$work/consumer/static_consumer" "$work/moved/bin/forcekit" "$work/elsewhere/bin/"
mv "$work/moved/share/forcekit" "$work/share-away"
"$work/elsewhere/bin/static_consumer" >/dev/null ||
    fail "the static consumer outside the prefix did not compute right forces"
LD_LIBRARY_PATH="$work/moved/$librel" "$work/consumer/consumer" >/dev/null ||
    fail "the find_package consumer without the prefix's share/forcekit failed"
version=$("$work/elsewhere/bin/forcekit" --version) || fail "forcekit --version outside the prefix failed"
if [ -e "$configured_data/pairwise.cl" ]; then
    echo "install: note: $configured_data exists, so the copied command may use it: $version"
else
    case $version in
    *"kernels $(cat "$source/cl/VERSION") built-in"*) ;;
    *) fail "the command outside the prefix did not say it runs on the built-in kernels: $version" ;;
    esac
    "$work/elsewhere/bin/forcekit" forces --kernel ga --in "$work/three.txt" --eps 0.1 \
        --out "$work/forces_builtin.txt" >/dev/null 2>&1 || fail "forcekit forces on the built-in kernels failed"
    cmp -s "$work/forces.txt" "$work/forces_builtin.txt" ||
        fail "the built-in kernels computed other forces than the installed ones"
fi
# The shipped tuning database is built in the same way: the variant the command outside the
# prefix chooses (a gaj double entry at N = 1,024 exists for POCL and the H200) comes from the
# same source as the installed command's, which reads the installed file.
for i in $(seq 0 1023); do echo "$((i % 10)) $((i / 10 % 10)) $((i / 100)) 1 0.1 0.2 0.3"; done >"$work/gaj.txt"
variant_of() { # forcekit
    FORCEKIT_TUNING_DB=off "$1" forces --kernel gaj --accum double --in "$work/gaj.txt" --eps 0.1 \
        --out /dev/null 2>&1 | sed -n 's/.*variant \([^,]*\),.*/\1/p'
}
outside=$(variant_of "$work/elsewhere/bin/forcekit")
mv "$work/share-away" "$work/moved/share/forcekit"
installed=$(variant_of "$work/moved/bin/forcekit")
[ -n "$installed" ] && [ "$outside" = "$installed" ] ||
    fail "the command outside the prefix chose '$outside', the installed one '$installed'"
echo "install: a static consumer and the command outside the prefix ran on the built-in kernels" \
    "and tuning database ($outside)"

# A plain configure needs no cmocka (issue #32): with cmocka hidden from pkg-config, the default
# (AUTO) configures without the tests and says so; FORCEKIT_BUILD_TESTS=ON fails naming cmocka.
# Configure only: the build never needed cmocka, the tests' CMakeLists did.
if command -v pkg-config >/dev/null && [ -z "$consumer_cflags" ]; then
    mkdir -p "$work/pc-no-cmocka"
    for dir in $(pkg-config --variable pc_path pkg-config | tr ':' ' '); do
        [ -d "$dir" ] && find "$dir" -maxdepth 1 -name '*.pc' ! -name 'cmocka.pc' -exec cp {} "$work/pc-no-cmocka/" \;
    done
    configure_no_cmocka() { # extra cmake arguments...
        PKG_CONFIG_LIBDIR="$work/pc-no-cmocka" PKG_CONFIG_PATH= cmake -S "$source" -B "$work/no-cmocka" \
            -DFORCEKIT_BUILD_BENCH=OFF -DFORCEKIT_BUILD_EXAMPLES=OFF "$@" 2>&1
    }
    out=$(configure_no_cmocka) || fail "a configure without cmocka failed: $out"
    grep -q "cmocka not found: the tests are left out" <<<"$out" || fail "no word that the tests are left out: $out"
    [ ! -e "$work/no-cmocka/tests/CTestTestfile.cmake" ] || fail "the tests were configured without cmocka"
    out=$(configure_no_cmocka -DFORCEKIT_BUILD_TESTS=ON) && fail "FORCEKIT_BUILD_TESTS=ON configured without cmocka"
    grep -q "needs cmocka" <<<"$out" || fail "FORCEKIT_BUILD_TESTS=ON without cmocka did not name it: $out"
    rm -rf "$work/no-cmocka"
    echo "install: a configure without cmocka leaves the tests out; FORCEKIT_BUILD_TESTS=ON asks for cmocka"
fi

# The Debian package is tested by tests/test_deb.sh.
