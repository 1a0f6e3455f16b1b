#!/usr/bin/python3
"""Writes damaged copies of aotc files for the hostile-input lit tests.

    corrupt.py manifest ARTIFACT OUT CASE   copy ARTIFACT to OUT, damage its manifest
    corrupt.py safetensors IN OUT CASE      damage a safetensors file
"""
import json
import shutil
import struct
import sys

MANIFEST = {
    "output_dtype": lambda m: m["outputs"][0].__setitem__("dtype", "zz"),
    "input_dtype": lambda m: m["inputs"][0].__setitem__("dtype", "f99"),
    "no_inputs": lambda m: m.pop("inputs"),
    "number_name": lambda m: m["inputs"][0].__setitem__("name", 3),
    "ir_escape": lambda m: m["forward"].__setitem__("ir", "../../etc/passwd"),
    "kernel_abs": lambda m: m["kernels"][0].__setitem__("source", "/etc/passwd"),
    "check_index": lambda m: m["runtime_checks"].__setitem__("no_create_graph_inputs", [99]),
    "huge_shape": lambda m: m["inputs"][0].__setitem__("shape", [1 << 20, 1 << 20]),
}


def main():
    kind, src, out, case = sys.argv[1:5]
    if kind == "manifest":
        shutil.copytree(src, out)
        with open(out + "/manifest.json") as f:
            m = json.load(f)
        if case == "string":
            m = "just a string"
        else:
            MANIFEST[case](m)
        with open(out + "/manifest.json", "w") as f:
            json.dump(m, f)
    else:
        with open(src, "rb") as f:
            b = f.read()
        n = struct.unpack("<Q", b[:8])[0]
        h = json.loads(b[8:8 + n])
        name = sorted(k for k in h if k != "__metadata__")[0]
        if case == "wrap_offsets":  # data_offsets near 2^64: the bounds check must not wrap
            size = h[name]["data_offsets"][1] - h[name]["data_offsets"][0]
            h[name]["data_offsets"] = [2**64 - 8 - n, 2**64 - 8 - n + size]
        elif case == "huge_shape":  # 2^40 elements declared, few bytes present
            h[name]["shape"] = [1 << 20, 1 << 20]
        hb = json.dumps(h).encode()
        hb += b" " * ((8 - len(hb) % 8) % 8)
        with open(out, "wb") as f:
            f.write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])


if __name__ == "__main__":
    main()
