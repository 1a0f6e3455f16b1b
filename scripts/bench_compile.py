#!/usr/bin/python3
"""bench_compile: aotc's compile time beside PyTorch's tracer, measured in one
run on this machine (issue 16 item 2), for resnet18, mobilenet_v2 and the
transformer encoder of testdata/models/gen_models.py (the same modules and
example inputs on both sides):

  functorch   functorch 1.13's aot_module with the min-cut partitioner and
              no-op compilers: the first call (trace, functionalize, joint
              graph, partition) minus one eager training step, in a fresh
              process each time;
  engine      aotc from load through the partitioned programs (--timings:
              load + engine);
  cold        a whole `aotc compile` process, default archs, empty kernel
              cache (NVRTC and nvJitLink included);
  warm        the same with the kernel cache of the cold compile.

Targets: engine >= 50x faster than functorch; cold <= functorch; warm <= 5%
of cold.  Then where the cold compile's time goes (stages, NVRTC and
nvJitLink CPU time).  Every figure is the best of RUNS.

    /usr/bin/python3 scripts/bench_compile.py [--build build] [--runs 3]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ["resnet18", "mobilenet_v2", "transformer"]

FUNCTORCH = r"""
import runpy, sys, time, torch
from functorch.compile import aot_module, min_cut_rematerialization_partition
g = runpy.run_path(sys.argv[1])
name = sys.argv[2]
for n, m, args in g["models"]():
    if n == name:
        break
def step(mod):
    out = mod(*args)
    out = out if isinstance(out, torch.Tensor) else out[0]
    out.sum().backward()
step(m)  # warm PyTorch's own caches: what remains is the tracer's work
t0 = time.perf_counter(); step(m); eager = time.perf_counter() - t0
nop = lambda gm, _: gm
compiled = aot_module(m, fw_compiler=nop, bw_compiler=nop, partition_fn=min_cut_rematerialization_partition)
t0 = time.perf_counter(); step(compiled); first = time.perf_counter() - t0
print(f"{first - eager:.4f}")
"""


def functorch_seconds(name):
    r = subprocess.run(["/usr/bin/python3", "-c", FUNCTORCH, os.path.join(ROOT, "testdata", "models", "gen_models.py"), name],
                       capture_output=True, text=True, check=True)
    return float(r.stdout.strip().splitlines()[-1])


def aotc_compile(aotc, model, out, cache):
    """(wall s, the --timings fields in ms)."""
    t0 = time.perf_counter()
    r = subprocess.run([aotc, "-q", "compile", model, "-o", out, "--cache-dir", cache, "--timings"], capture_output=True, text=True,
                       check=True)
    wall = time.perf_counter() - t0
    t = {k: float(v) for k, v in re.findall(r"(load|engine|codegen|nvrtc|write|total) ([0-9.]+) ms", r.stdout)}
    m = re.search(r"\(([0-9.]+) ms on all threads\)", r.stdout)
    t["nvrtc_cpu"] = float(m.group(1)) if m else 0.0
    m = re.search(r"nvJitLink ([0-9.]+) ms", r.stdout)
    t["link_cpu"] = float(m.group(1)) if m else 0.0
    return wall, t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    aotc = os.path.join(a.build, "tools", "aotc")
    models = os.path.join(a.build, "models")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "testdata", "models", "gen_models.py"), models], check=True,
                   capture_output=True)
    print(f"{'model':14} {'functorch s':>11} {'engine s':>9} {'speedup':>8} {'cold s':>7} {'vs functorch':>12} {'warm s':>7} "
          f"{'warm/cold':>9}")
    rows = {}
    for name in NAMES:
        tmp = tempfile.mkdtemp()
        try:
            fts = [functorch_seconds(name) for _ in range(a.runs)]
            colds, warms = [], []
            for r in range(a.runs):
                cache = os.path.join(tmp, f"cache{r}")
                colds.append(aotc_compile(aotc, os.path.join(models, name + ".json"), os.path.join(tmp, f"a{r}"), cache))
                warms.append(aotc_compile(aotc, os.path.join(models, name + ".json"), os.path.join(tmp, f"b{r}"), cache))
            ft = min(fts)
            engine = min((c[1]["load"] + c[1]["engine"]) / 1000.0 for c in colds)
            cold = min(colds, key=lambda c: c[0])
            warm = min(w[0] for w in warms)
            rows[name] = cold
            print(f"{name:14} {ft:11.3f} {engine:9.4f} {ft / engine:7.0f}x {cold[0]:7.2f} {cold[0] / ft:11.2f}x {warm:7.3f} "
                  f"{warm / cold[0]:9.1%}", flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print("targets: engine >= 50x faster than functorch; cold <= functorch's first call (ratio <= 1.00x); warm <= 5% of cold")
    print(f"\nwhere the cold compile goes (ms; NVRTC and nvJitLink CPU time is summed over {os.cpu_count()} threads)")
    print(f"{'model':14} {'load':>6} {'engine':>7} {'codegen':>8} {'nvrtc+link wall':>15} {'write':>6} {'nvrtc cpu':>9} "
          f"{'nvJitLink cpu':>13} {'process':>8}")
    for name, (wall, t) in rows.items():
        print(f"{name:14} {t['load']:6.0f} {t['engine']:7.0f} {t['codegen']:8.0f} {t['nvrtc']:15.0f} {t['write']:6.0f} "
              f"{t['nvrtc_cpu']:9.0f} {t['link_cpu']:13.0f} {wall * 1000:8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
