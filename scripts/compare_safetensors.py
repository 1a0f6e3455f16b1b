#!/usr/bin/python3
"""compare_safetensors.py GOT EXPECTED [--tol T] [--equal-nan] : every tensor of
EXPECTED must be in GOT with the same dtype, shape and allclose (atol = rtol = T,
default 1e-5; a NaN matches only a NaN, and only with --equal-nan), and GOT must
hold nothing else.  Prints one line per tensor; exits 1 on
any difference.  Uses only the standard library and numpy (python3-numpy)."""
import json
import struct
import sys

import numpy as np

_DT = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64, "I32": np.int32, "BOOL": np.bool_,
       "I16": np.int16, "I8": np.int8, "U8": np.uint8, "U16": np.uint16, "U32": np.uint32, "U64": np.uint64}


def load(path):
    """{name: float64 array}."""
    return {k: v for k, (_, v) in load_typed(path).items()}


def load_typed(path):
    """{name: (safetensors dtype, float64 array)}."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, v in header.items():
        if name == "__metadata__":
            continue
        b, e = v["data_offsets"]
        if v["dtype"] == "BF16":
            raw = np.frombuffer(data[8 + n + b:8 + n + e], dtype=np.uint16).astype(np.uint32) << 16
            arr = raw.view(np.float32)
        else:
            arr = np.frombuffer(data[8 + n + b:8 + n + e], dtype=_DT[v["dtype"]])
        out[name] = (v["dtype"], arr.reshape(v["shape"]).astype(np.float64))
    return out


def main():
    args = sys.argv[1:]
    tol = 1e-5
    if "--tol" in args:
        i = args.index("--tol")
        tol = float(args[i + 1])
        del args[i:i + 2]
    equal_nan = "--equal-nan" in args
    if equal_nan:
        args.remove("--equal-nan")
    bad = ok = 0
    got, want = load_typed(args[0]), load_typed(args[1])
    for name in set(got) & set(want):
        if got[name][0] != want[name][0]:
            print(f"{name}: dtype {got[name][0]} != {want[name][0]}")
            del got[name], want[name]
            bad += 1
    got = {k: v[1] for k, v in got.items()}
    want = {k: v[1] for k, v in want.items()}
    for name in sorted(set(got) | set(want)):
        if name not in want:
            print(f"{name}: not in the reference")
            bad += 1
        elif name not in got:
            print(f"{name}: missing")
            bad += 1
        elif got[name].shape != want[name].shape:
            print(f"{name}: shape {got[name].shape} != {want[name].shape}")
            bad += 1
        elif not np.allclose(got[name], want[name], rtol=tol, atol=tol, equal_nan=equal_nan):
            g, w = got[name], want[name]
            if np.issubdtype(g.dtype, np.floating) or np.issubdtype(g.dtype, np.complexfloating):
                nan_g, nan_w = np.isnan(g), np.isnan(w)
                fin = np.isfinite(g) & np.isfinite(w)
                inf = ~fin & ~nan_g & ~nan_w
                d = np.abs(g[fin] - w[fin])
                print(f"{name}: max abs diff {d.max() if d.size else 0:.3g} where both are finite; NaN in one only at "
                      f"{int(np.count_nonzero(nan_g != nan_w))}, different infinities at "
                      f"{int(np.count_nonzero(inf & (g != w)))} of {g.size}")
            else:
                print(f"{name}: max abs diff {np.max(np.abs(g.astype(np.float64) - w.astype(np.float64))):.3g}")
            bad += 1
        else:
            print(f"{name}: ok")
            ok += 1
    print(f"{ok} matched, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
