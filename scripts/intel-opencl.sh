#!/usr/bin/env bash
# Installs Intel's oneAPI OpenCL CPU runtime from PyPI into a private folder (never system-wide) and
# prints the environment that makes it the only OpenCL platform a program sees:
#   scripts/intel-opencl.sh DIR     e.g. DIR = build-test/intel-opencl
# stdout: NAME=VALUE lines (OCL_ICD_VENDORS, FORCEKIT_DEVICE), for `env $(scripts/intel-opencl.sh DIR)`.
# Exit status: 0 ready; 3 skipped (download or install failed: the reason, naming the package, is on
# stderr); 2 usage. INTEL_OPENCL_VERSION picks the release (default 2026.2.0, the one issue 12 measured).
#
# Why not `pip install`: the wheels keep the libraries under <pkg>.data/data/lib, which pip --target
# does not place anywhere usable, and the wheel's own .icd names a placeholder path
# (/opt/anaconda1anaconda2anaconda3/lib). So the wheels are downloaded with pip and their lib folders
# unpacked into one folder: libintelocl.so has RUNPATH $ORIGIN, so it finds libimf.so, libsvml.so
# (intel-cmplr-lib-rt) and libtbb.so.12 (tbb) beside it without LD_LIBRARY_PATH. The wheel's own
# libOpenCL.so* is left out: it would shadow the system ICD loader if anything ever put that folder
# on a library path.
set -euo pipefail
if [ $# -ne 1 ]; then
    echo "usage: scripts/intel-opencl.sh DIR" >&2
    exit 2
fi
dir=$1
version=${INTEL_OPENCL_VERSION:-2026.2.0}
packages=("intel-opencl-rt==$version" "intel-cmplr-lib-rt==$version")

skip() {
    echo "forcekit: SKIP Intel OpenCL runtime: $*" >&2
    exit 3
}

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
lib=$dir/lib
stamp=$dir/installed-$version
if [ ! -f "$stamp" ] || [ ! -f "$lib/libintelocl.so" ]; then
    command -v python3 >/dev/null || skip "python3 not found, cannot install ${packages[*]}"
    python3 -m pip --version >/dev/null 2>&1 ||
        skip "pip not available (python3 -m pip), cannot install ${packages[*]}"
    rm -rf "$dir/wheels" "$dir/lib.partial" "$lib" "$dir"/installed-*
    mkdir -p "$dir/wheels"
    # With dependencies: intel-opencl-rt needs tbb (libtbb.so.12) and pulls tcmlib and the licence.
    if ! python3 -m pip download --quiet --disable-pip-version-check --only-binary=:all: \
        --dest "$dir/wheels" "${packages[@]}" >"$dir/pip.log" 2>&1; then
        tail -n 5 "$dir/pip.log" >&2
        skip "pip download of ${packages[*]} failed (log: $dir/pip.log)"
    fi
    if ! python3 - "$dir/wheels" "$dir/lib.partial" <<'EOF'; then
import os, sys, zipfile
wheels, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
for name in sorted(os.listdir(wheels)):
    if not name.endswith(".whl"):
        continue
    with zipfile.ZipFile(os.path.join(wheels, name)) as wheel:
        for member in wheel.infolist():
            parts = member.filename.split("/")
            # <package>.data/data/lib/<file>: the shared libraries and the runtime's data files.
            if (len(parts) == 4 and parts[0].endswith(".data") and parts[1:3] == ["data", "lib"]
                    and parts[3] and not parts[3].startswith("libOpenCL.so")):
                target = os.path.join(out, parts[3])
                with wheel.open(member) as source, open(target, "wb") as sink:
                    sink.write(source.read())
                os.chmod(target, 0o755)
EOF
        skip "unpacking the wheels of ${packages[*]} failed"
    fi
    [ -f "$dir/lib.partial/libintelocl.so" ] || skip "intel-opencl-rt==$version has no libintelocl.so"
    [ -f "$dir/lib.partial/libimf.so" ] || skip "intel-cmplr-lib-rt==$version has no libimf.so"
    mv "$dir/lib.partial" "$lib"
    rm -rf "$dir/wheels"
    touch "$stamp"
fi
mkdir -p "$dir/vendors"
printf '%s\n' "$lib/libintelocl.so" >"$dir/vendors/intel-cpu.icd"
# Only this .icd is read, so Intel's CPU device is platform 0, device 0.
echo "OCL_ICD_VENDORS=$dir/vendors"
echo "FORCEKIT_DEVICE=0:0"
