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


# The training loop (issue 47 item 6): an --optimizer artifact, 3 steps of
# fresh batches with the learning rate on a schedule, each one trainStep; the
# same steps by `aotc run --backend reference`, one at a time, the state carried.
def write_st(path, tensors):
    header, data = {}, b""
    for name in sorted(tensors):
        dtype, shape, vals = tensors[name]
        blob = struct.pack(f"<{len(vals)}{'d' if dtype == 'F64' else 'f'}", *vals)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    hb = json.dumps(header).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    open(path, "wb").write(struct.pack("<Q", len(hb)) + hb + data)


tart = os.path.join(work, "train_art")
run([aotc, "compile", os.path.join(src, "testdata/fx/mlp.json"), "-o", tart, "-q", "--optimizer", "sgd", "--lr", "0.01", "--momentum", "0.9"])
tout = run([example, tart, "emulate" if "emulate" in lines[0] else "auto", "--train", "3"], env=env)
tl = tout.splitlines()
losses = [float(l.split()[-1]) for l in tl if l.startswith("step ")]
after = {}
for l in tl:
    if l.startswith("after."):
        head, vals = l.split(":", 1)
        after[head.split()[0][len("after."):]] = [float(v) for v in vals.split()]
tm = json.load(open(os.path.join(tart, "manifest.json")))
users = [i for i in tm["inputs"] if i["role"] == "user_input"]
carried = {}
ref_losses = []
for k in range(3):
    given = {}
    for j, inp in enumerate(users):
        n = math.prod(inp["shape"])
        given[inp["name"]] = ("F32", inp["shape"], [math.sin(0.37 * i + j + 0.5 * k) for i in range(n)])
    given["optim.lr"] = ("F64", [], [0.01 / (k + 1)])
    for name, (shape, vals, dt) in carried.items():
        given[name] = (dt, shape, vals)
    stepin = os.path.join(work, f"train_in{k}.safetensors")
    write_st(stepin, given)
    stepout = os.path.join(work, f"train_out{k}.safetensors")
    run([aotc, "run", tart, "--inputs", stepin, "--out", stepout])
    res = load(stepout)
    ref_losses.append(float(res["output.0"].ravel()[0]))
    dtypes = {i["name"]: ("F64" if i["dtype"] == "f64" else "F32") for i in tm["inputs"]}
    carried = {k2[len("after_backward."):]: (list(v.shape), v.ravel().tolist(), dtypes[k2[len("after_backward."):]])
               for k2, v in res.items() if k2.startswith("after_backward.")}
assert len(losses) == 3, tout
for a, r in zip(losses, ref_losses):
    assert abs(a - r) <= 1e-5 * max(1.0, abs(r)), f"training loop losses {losses}, reference {ref_losses}"
params = [i["name"] for i in tm["inputs"] if i["role"] == "parameter"]
for p in params:
    assert p in after and p in carried, f"{p}: not printed by the example or not updated by the reference"
    for a, r in zip(after[p], carried[p][1]):
        assert abs(a - r) <= 1e-5 * max(1.0, abs(r)), f"{p}: example {a}, reference {r}"
print(f"deploy example training loop: 3 steps, losses {', '.join(f'{v:.6f}' for v in losses)} and {len(params)} parameters "
      f"match the reference stepped one run at a time")
