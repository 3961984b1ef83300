#!/usr/bin/env python3
"""Instructions per pair in the all-pairs inner loop, from the program cache (issue #36).

    bench/ptx_pair_count.py CACHE_DIR OUT_DIR [--force ga]

NVIDIA's OpenCL returns PTX as the program binary, and the library stores it in its program cache
(src/core/programs/cache.c: a 64-byte header, the full key, the payload). For every cached all-pairs program of
the force law this writes OUT_DIR/<accum>_<unroll>.ptx and, where ptxas and nvdisasm are on the
PATH, the sm_90 machine code (.sass) and ptxas's register report, then counts the instructions
of the hottest loop of fk_pairwise: the innermost loop holding the most pair markers (one
reciprocal square root per pair: rsqrt.approx.f32 / sqrt.rn.f64 in PTX, MUFU.RSQ / MUFU.RSQ64H in
SASS), divided by the markers in it. The counts are static (every instruction of the loop body
once, rarely taken branches included) and are printed as JSON: per program, instructions per
pair in PTX and SASS, and among them conversions, 64-bit integer and fp64 operations, with an
opcode histogram.
"""
import collections
import json
import os
import re
import shutil
import struct
import subprocess
import sys

HEADER_SIZE = 64


def read_entry(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < HEADER_SIZE:
        return None
    key_size, payload_size = struct.unpack_from("<QQ", data, 32)
    key = data[HEADER_SIZE:HEADER_SIZE + key_size]
    payload = data[HEADER_SIZE + key_size:]
    if len(payload) != payload_size:
        return None
    parts, at = [], 4
    for _ in range(6):
        present = key[at]
        (length,) = struct.unpack_from("<Q", key, at + 1)
        at += 9
        parts.append(key[at:at + length].decode("utf-8", "replace") if present else None)
        at += length
    return {"source": parts[0], "options": parts[1] or "", "payload": payload}


def option(options, name):
    m = re.search(r"-D\s*" + name + r"=(\S+)", options)
    return m.group(1) if m else None


def loops(lines, label_re, branch_re):
    """(start, end) line ranges of backward branches to a label: the loops."""
    where = {}
    found = []
    for k, line in enumerate(lines):
        m = label_re.match(line)
        if m:
            where[m.group(1)] = k
        for b in branch_re.finditer(line):
            target = b.group(1)
            if target in where and where[target] <= k:
                found.append((where[target], k))
    return found


def ptx_function(text, name):
    m = re.search(r"\.entry\s+" + name + r"\s*\(", text)
    if not m:
        return []
    body = text[m.end():]
    depth, start = 0, body.find("{")
    for k in range(start, len(body)):
        if body[k] == "{":
            depth += 1
        elif body[k] == "}":
            depth -= 1
            if depth == 0:
                return body[start:k].splitlines()
    return body[start:].splitlines()


PTX_MARKER = re.compile(r"\b(rsqrt\.approx(\.ftz)?\.f32|sqrt\.rn\.f64|rsqrt\.approx\.f64)\b")
SASS_MARKER = re.compile(r"\bMUFU\.RSQ(64H)?\b")


def ptx_opcode(line):
    s = line.strip()
    if not s or s.startswith("//") or s.endswith(":") or s.startswith(".") or s in "{}":
        return None
    s = re.sub(r"^@!?%\w+\s+", "", s)
    return s.split()[0].rstrip(";")


def sass_opcode(line):
    m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
    return m.group(2) if m else None


def classify(opcodes, kind):
    conv = fp64 = int64 = 0
    for op in opcodes:
        if kind == "ptx":
            if op.startswith("cvt."):
                conv += 1
            if ".f64" in op:
                fp64 += 1
            if re.search(r"\.[su]64\b|\.b64\b", op) and not op.startswith(("ld.", "st.", "mov.", "cvta")):
                int64 += 1
        else:
            base = op.split(".")[0]
            if base in ("F2I", "I2F", "F2F", "FRND", "I2I", "F2IP", "I2FP"):
                conv += 1
            if base in ("DADD", "DMUL", "DFMA", "DSETP", "DMNMX") or op.startswith("MUFU.") and "64" in op:
                fp64 += 1
            if op.startswith("IADD3.X") or ".64" in op and base not in ("F2I", "I2F", "F2F", "LDG", "STG", "LDS", "STS", "LDC", "ULDC"):
                int64 += 1
    return conv, fp64, int64


def count(lines, label_re, branch_re, marker_re, opcode, kind):
    best = None
    for start, end in loops(lines, label_re, branch_re):
        body = lines[start:end + 1]
        markers = sum(1 for line in body if marker_re.search(line))
        if not markers:
            continue
        size = end - start
        if best is None or markers > best[0] or (markers == best[0] and size < best[1]):
            best = (markers, size, body)
    if best is None:
        return None
    markers, _, body = best
    opcodes = [op for op in (opcode(line) for line in body) if op]
    conv, fp64, int64 = classify(opcodes, kind)
    hist = collections.Counter(opcodes)
    return {"pairs_in_loop": markers, "instructions": len(opcodes),
            "per_pair": round(len(opcodes) / markers, 2),
            "conversions_per_pair": round(conv / markers, 2),
            "fp64_per_pair": round(fp64 / markers, 2),
            "int64_per_pair": round(int64 / markers, 2),
            "opcodes": dict(hist.most_common())}


def main():
    args = sys.argv[1:]
    force = "ga"
    if "--force" in args:
        k = args.index("--force")
        force = args[k + 1]
        del args[k:k + 2]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    cache, out = args
    os.makedirs(out, exist_ok=True)
    have_tools = shutil.which("ptxas") and shutil.which("nvdisasm")
    results = []
    for name in sorted(os.listdir(cache)):
        if not name.endswith(".fkbin"):
            continue
        entry = read_entry(os.path.join(cache, name))
        if not entry or option(entry["options"], "FORCE") != force:
            continue
        text = entry["payload"].rstrip(b"\0").decode("utf-8", "replace")  # a C string
        if ".entry fk_pairwise" not in text:
            continue
        opts = entry["options"]
        accum = option(opts, "ACCUM")
        tag = "%s_i%s_j%s_wg%s_p%s" % (accum, option(opts, "UNROLL_I"), option(opts, "UNROLL_J"),
                                       option(opts, "WG_SIZE"), option(opts, "POTENTIAL"))
        if "REPRODUCIBLE=1" in opts and accum != "ref":
            tag += "_repro"
        base = os.path.join(out, tag)
        with open(base + ".ptx", "w") as f:
            f.write(text)
        row = {"accum": accum, "program": tag, "options": opts}
        row["ptx"] = count(ptx_function(text, "fk_pairwise"), re.compile(r"^\s*(\$L__\w+):"),
                           re.compile(r"\bbra(?:\.uni)?\s+(\$L__\w+)"), PTX_MARKER, ptx_opcode,
                           "ptx")
        if have_tools:
            p = subprocess.run(["ptxas", "-arch=sm_90", "-O3", "-v", base + ".ptx", "-o",
                                base + ".cubin"], capture_output=True, text=True)
            lines = p.stderr.splitlines()
            at = next((k for k, l in enumerate(lines) if "Compiling entry function 'fk_pairwise'" in l), None)
            row["ptxas"] = lines[at:at + 4] if at is not None else lines[-6:]
            if p.returncode == 0:
                d = subprocess.run(["nvdisasm", "-c", base + ".cubin"], capture_output=True,
                                   text=True)
                with open(base + ".sass", "w") as f:
                    f.write(d.stdout)
                lines = d.stdout.splitlines()
                # the kernel's own section only
                start = next((k for k, l in enumerate(lines) if re.match(r"\s*fk_pairwise:", l)), 0)
                end = next((k for k in range(start + 1, len(lines))
                            if re.match(r"\s*\.section", lines[k])), len(lines))
                row["sass"] = count(lines[start:end], re.compile(r"^\s*(\.L_x_\d+):"),
                                    re.compile(r"BRA\s+`?\(?(\.L_x_\d+)"), SASS_MARKER,
                                    sass_opcode, "sass")
        results.append(row)
    json.dump(results, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
