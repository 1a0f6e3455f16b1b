#!/usr/bin/python3
"""deploy_example_test.py SRCROOT BUILD AOTC WORKDIR

The deployment example (tools/deploy_example) built the way a user builds it:
installs the aotc_runtime package from BUILD with `cmake --install`,
configures the example against the *installed* package (find_package), builds
it, compiles an artifact, runs the example on it (the GPU when there is one,
else the emulate device), and checks every number it prints against
`aotc run --backend reference` given the same inputs and grad outputs.
Fails on any difference beyond 1e-5 relative, on a missing result, or when
the installed library exports anything but the C ABI.
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys

src, build, aotc, work = sys.argv[1:5]
sys.path.insert(0, os.path.join(src, "scripts"))
from compare_safetensors import load  # noqa: E402
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
prefix = os.path.join(work, "prefix")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"FAILED ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r.stdout


run(["cmake", "--install", build, "--prefix", prefix])
lib = [f for f in os.listdir(os.path.join(prefix, "lib")) if f.startswith("libaotc_runtime.so")]
assert lib, "the package installs no libaotc_runtime.so"
assert os.path.exists(os.path.join(prefix, "include/aotc/runtime/c_api.h"))
assert os.path.exists(os.path.join(prefix, "lib/cmake/aotc_runtime/aotc_runtimeConfig.cmake"))
syms = run(["nm", "-D", "--defined-only", os.path.join(prefix, "lib", "libaotc_runtime.so")])
exported = [l.split()[-1] for l in syms.splitlines() if " T " in l]
bad = [s for s in exported if not s.startswith("aotc_")]
assert not bad, f"the runtime exports symbols beyond the C ABI: {bad[:5]}"
assert "aotc_open" in exported and "aotc_backward" in exported

exb = os.path.join(work, "example-build")
run(["cmake", "-S", os.path.join(src, "tools/deploy_example"), "-B", exb, "-G", "Ninja",
     f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release"])
run(["cmake", "--build", exb])
example = os.path.join(exb, "deploy_example")

art = os.path.join(work, "art")
run([aotc, "compile", os.path.join(src, "testdata/fx/mlp.json"), "-o", art, "-q"])
env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"), TMPDIR=work)
out = run([example, art], env=env)
lines = out.splitlines()
assert lines[0].startswith("device "), out
got = {}
for l in lines[1:]:
    head, vals = l.split(":", 1)
    name = head.split()[0]
    got[name] = [float(v) for v in vals.split()]

# The same inputs and grad outputs for the reference runtime.
m = json.load(open(os.path.join(art, "manifest.json")))
tensors = {}
j = 0
for inp in m["inputs"]:
    if inp["role"] != "user_input":
        continue
    n = math.prod(inp["shape"])
    tensors[inp["name"]] = (inp["shape"], [math.sin(0.37 * i + j) for i in range(n)])
    j += 1
for o in m["outputs"]:
    if o["tangent"] is not None:
        tensors[f"grad_output.{o['index']}"] = (o["shape"], [1.0] * math.prod(o["shape"]))
header, data = {}, b""
for name in sorted(tensors):
    shape, vals = tensors[name]
    blob = struct.pack(f"<{len(vals)}f", *vals)
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
    data += blob
hb = json.dumps(header).encode()
hb += b" " * ((8 - len(hb) % 8) % 8)
inputs = os.path.join(work, "inputs.safetensors")
open(inputs, "wb").write(struct.pack("<Q", len(hb)) + hb + data)
ref = os.path.join(work, "ref.safetensors")
run([aotc, "run", art, "--inputs", inputs, "--grad-outputs", inputs, "--out", ref])
want = {k: v.ravel().tolist() for k, v in load(ref).items()}

assert set(want) == set(got), f"results differ: example {sorted(got)}, reference {sorted(want)}"
worst = 0.0
for k in want:
    assert len(want[k]) == len(got[k]), k
    for a, r in zip(got[k], want[k]):
        err = abs(a - r) / max(1.0, abs(r))
        worst = max(worst, err)
        assert err <= 1e-5, f"{k}: example {a}, reference {r}"
print(f"deploy example on {lines[0][7:]}: {len(want)} results match the reference (worst relative error {worst:.2e})")
