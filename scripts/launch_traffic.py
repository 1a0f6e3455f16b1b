#!/usr/bin/python3
"""The memory traffic of the kernels two aotc builds emit, from their
manifests (no GPU): per program, the launches and the bytes their launches
touch (each launch's `work.bytes`: the buffers it reads and writes), for
resnet18, mobilenet_v2 and the TransformerEncoder at scripts/bench_gpu.py's
sizes (the models scripts/launch_shapes.py exports), compiled for sm_90.

    /usr/bin/python3 scripts/launch_traffic.py BASE_AOTC NEW_AOTC SOURCE_ROOT WORK

Prints each model's figures for both builds and the ratio new / base of
both.  A kernel at the memory roofline takes time in proportion to its bytes,
so the ratio of bytes is what a GPU run's kernel time should follow; the GPU
confirms it (scripts/bench_gpu.py)."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launch_shapes import export_gpu_models  # noqa: E402


def traffic(aotc, model, out):
    r = subprocess.run([aotc, "-q", "compile", model, "-o", out, "--arch", "sm_90"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"launch_traffic: {aotc} cannot compile {model}: {r.stderr.strip()}")
    with open(os.path.join(out, "manifest.json")) as f:
        m = json.load(f)
    res = {}
    for prog in ("forward", "backward"):
        launches = [s for s in m[prog]["steps"] if s["op"] == "launch"]
        res[prog] = (len(launches), sum(s.get("work", {}).get("bytes", 0) for s in launches))
    return res


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    base, new, root, work = sys.argv[1:]
    models = export_gpu_models(root, os.path.join(work, "gpu_models"))
    for model in models:
        name = os.path.splitext(os.path.basename(model))[0]
        b = traffic(base, model, os.path.join(work, name + ".base"))
        n = traffic(new, model, os.path.join(work, name + ".new"))
        for prog in ("forward", "backward"):
            (bl, bb), (nl, nb) = b[prog], n[prog]
            print(f"{name:13s} {prog:8s} launches {bl:4d} -> {nl:4d} ({nl / max(bl, 1):.2f}x)   "
                  f"bytes {bb / 2**30:6.2f} -> {nb / 2**30:6.2f} GiB ({nb / max(bb, 1):.2f}x)")
        tb = sum(v[1] for v in b.values())
        tn = sum(v[1] for v in n.values())
        print(f"{name:13s} step     bytes {tb / 2**30:6.2f} -> {tn / 2**30:6.2f} GiB ({tn / max(tb, 1):.2f}x)")


if __name__ == "__main__":
    main()
