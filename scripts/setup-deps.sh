#!/usr/bin/env bash
# Installs the Debian packages forcekit needs to build, test and run on the CPU (POCL), if missing.
# Sourced or run by scripts/test.sh and scripts/demo.sh. Needs root or sudo only when something is missing.
set -euo pipefail
# oclgrind: the kernel checker of scripts/test.sh; python3-pip: installs Intel's OpenCL runtime
# from PyPI into the build tree (scripts/intel-opencl.sh); python3-venv, python3-dev, g++: the
# Python package's venv and its C++ extension (scripts/test.sh, stage python); gfortran,
# libopenmpi-dev: AMUSE's ph4 and phiGRAPE workers (stage amuse), the g6 Fortran ABI test and
# libforcekit_mpi; openmpi-bin: mpirun for the MPI tests (only recommended by libopenmpi-dev);
# dpkg-dev: dpkg-shlibdeps, which computes the .deb's Depends (`cpack -G DEB`, test_install);
# mesa-opencl-icd: Mesa's Rusticl, the llvmpipe CPU device of the rusticl stage (issue #37).
packages=(cmake make gcc pkg-config dpkg-dev ocl-icd-opencl-dev opencl-headers pocl-opencl-icd
          libcmocka-dev libcjson-dev libxxhash-dev python3 python3-pip python3-venv python3-dev g++ oclgrind
          gfortran libopenmpi-dev openmpi-bin mesa-opencl-icd
          clang-14 libclang-rt-14-dev) # the libFuzzer harnesses (tests/fuzz)
missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "forcekit: installing ${missing[*]}" >&2
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
