#!/usr/bin/env bash
# oclgrind registered as an ICD beside POCL (OCL_ICD_VENDORS, a private folder): `forcekit devices`
# must show it as type "other" and must not make it the default device (it reports every device
# type bit; it used to be classified as a GPU and picked by default).
#   tests/oclgrind_default.sh FORCEKIT_BINARY
# Exit 77 (CTest's skip) when oclgrind's ICD library or POCL's .icd is missing.
set -euo pipefail
forcekit=$1
oclgrind_icd_library=/usr/lib/oclgrind/liboclgrind-rt-icd.so
pocl_icd=/etc/OpenCL/vendors/pocl.icd
if [ ! -f "$oclgrind_icd_library" ] || [ ! -f "$pocl_icd" ]; then
    echo "SKIP: needs $oclgrind_icd_library (Debian oclgrind) and $pocl_icd" >&2
    exit 77
fi
vendors=$(mktemp -d "${TMPDIR:-/tmp}/forcekit-vendors.XXXXXX")
trap 'rm -rf "$vendors"' EXIT
# oclgrind first, so that a default that takes the first device would take it.
echo "$oclgrind_icd_library" >"$vendors/a-oclgrind.icd"
cp "$pocl_icd" "$vendors/b-pocl.icd"
unset FORCEKIT_DEVICE
json=$(OCL_ICD_VENDORS=$vendors "$forcekit" devices --json)
python3 - "$json" <<'PY'
import json, sys
devices = json.loads(sys.argv[1])
grind = [d for d in devices if "Oclgrind" in d["name"]]
if not grind:
    sys.exit("FAIL: oclgrind's device is not listed: %s" % devices)
if grind[0]["type"] != "other":
    sys.exit("FAIL: oclgrind is classified as %r, expected 'other'" % grind[0]["type"])
default = [d for d in devices if d.get("default")]
if len(default) != 1 or "Oclgrind" in default[0]["name"]:
    sys.exit("FAIL: the default device is %s" % [d["name"] for d in default])
print("oclgrind listed as 'other'; default device: %s" % default[0]["name"])
PY
