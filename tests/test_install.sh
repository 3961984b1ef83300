#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds examples/embed.c against it twice, as a
# consumer would: through find_package(forcekit) and through pkg-config; runs both with the installed
# kernel sources (share/forcekit/cl found through the install prefix, no FORCEKIT_KERNEL_DIR).
# Args: BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 source=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/fk-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
for f in include/forcekit/forcekit.h share/forcekit/cl/pairwise.cl share/forcekit/cl/forces/ga.clh \
         share/forcekit/cl/accum/float.clh share/forcekit/tuning/shipped.json bin/forcekit; do
    [ -e "$work/prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
libdir=$(dirname "$(find "$work/prefix" -name 'libforcekit.so' | head -n1)")
[ -e "$libdir/libforcekit.a" ] || { echo "missing static library"; exit 1; }

consumer_cflags=${FK_CONSUMER_CFLAGS:-}
cmake -S "$source/tests/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DCMAKE_C_FLAGS="$consumer_cflags" -DEMBED_SOURCE="$source/examples/embed.c" >/dev/null
cmake --build "$work/consumer" >/dev/null
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 $consumer_cflags "$source/examples/embed.c" $(pkg-config --cflags --libs forcekit) -lm -o "$work/embed_pc"

# The installed library was configured for the real prefix, not this temporary one, so point it at
# the installed copy of the kernels explicitly; the build-tree fallback must not be what is used.
export FORCEKIT_KERNEL_DIR="$work/prefix/share/forcekit/cl"
LD_LIBRARY_PATH="$libdir" "$work/consumer/consumer"
LD_LIBRARY_PATH="$libdir" "$work/embed_pc"
echo "install: find_package and pkg-config consumers built and ran"
