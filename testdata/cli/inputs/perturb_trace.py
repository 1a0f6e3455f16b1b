#!/usr/bin/python3
"""perturb_trace.py IN OUT KEY: a copy of the safetensors file IN with the
first element of float32 tensor KEY scaled by 1.01 (trace.test's part)."""
import json
import struct
import sys

src, dst, key = sys.argv[1:4]
data = bytearray(open(src, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
entry = json.loads(data[8:8 + n])[key]
assert entry["dtype"] == "F32", entry
at = 8 + n + entry["data_offsets"][0]
(v,) = struct.unpack("<f", data[at:at + 4])
data[at:at + 4] = struct.pack("<f", v * 1.01 if v else 1.0)
open(dst, "wb").write(bytes(data))
