#!/usr/bin/python3
"""bench_codegen: for resnet18, mobilenet_v2 and the transformer (exported by
testdata/models/gen_models.py into BUILD/models), prints per training step:
IR pointwise/reduction ops vs kernel launches (target: at most one launch per
three ops), cold compile time vs warm (kernel cache hit; target under 10% of
cold), NVRTC's (and nvJitLink's) share of the cold compile (times: best of --runs, default 3), and the peak arena bytes of the
forward and the backward beside the sum of all their buffers.  Then a model
dynamic twin of each model (batch, and sequence length for the transformer,
symbolic: issue 15) at the hint sizes: launches, cold compile time and emulate
time beside the static model's.  Then a model
zoo compiled into one cache (resnet18, then resnet34, mobilenet_v2 and the
transformer): how many of each model's kernels an earlier model already
compiled, and its compile time beside its own cold compile.  Everything is
measured in this run; ratios are against this run's own baselines.

    /usr/bin/python3 scripts/bench_codegen.py [--build build] [--arch sm_80,sm_90] [--runs N] [--twins]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

RUNS = 3  # by default, timings are the best of this many compiles
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POINTWISE_OR_REDUCTION = set("""add sub mul div neg relu exp log tanh sigmoid gt where sum mean clone sqrt rsqrt abs sign
sin cos erf pow maximum minimum lt le ge eq ne logical_and logical_or logical_not cast amax amin argmax constant
rand_mask""".split())


def ir_ops(path):
    ops = 0
    with open(path) as f:
        for line in f:
            m = re.match(r"\s+%.* = ([a-z_]+)\(", line)
            if m and m.group(1) in POINTWISE_OR_REDUCTION:
                ops += 1
    return ops


def compile_once(aotc, model, out, cache, arch):
    t0 = time.perf_counter()
    r = subprocess.run([aotc, "-q", "compile", model, "-o", out, "--arch", arch, "--cache-dir", cache, "--timings"],
                       capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    m = re.search(r"nvrtc ([0-9.]+) ms", r.stdout)
    mods = re.search(r"module cache: (\d+) hits, (\d+) misses", r.stdout)
    kern = re.search(r"kernel cache: (\d+) hits, (\d+) misses", r.stdout)
    return (wall, float(m.group(1)) / 1000.0, int(mods.group(1)), int(mods.group(2)), int(kern.group(1)),
            int(kern.group(2)))


def export_resnet34(path):
    """resnet34 shares its stages' shapes with resnet18: a zoo neighbour."""
    code = f"""
import sys, torch, torchvision
sys.path.insert(0, {os.path.join(ROOT, 'tools')!r})
from fx_export import export
torch.manual_seed(0)
export(torchvision.models.resnet34(num_classes=10).train(), (torch.randn(2, 3, 64, 64),), {path!r})
"""
    subprocess.run(["/usr/bin/python3", "-c", code], check=True, capture_output=True)


# Each model's dims that the dynamic twin exports as symbols (issue 15).
DYNAMIC = {"resnet18": {"x": {0: "batch"}}, "mobilenet_v2": {"x": {0: "batch"}}, "transformer": {"src": {0: "batch", 1: "seq"}}}


def export_dynamic(models, tmp):
    """The models of gen_models.py again, their dims in DYNAMIC symbolic."""
    code = f"""
import sys, runpy, torch
sys.path.insert(0, {os.path.join(ROOT, 'tools')!r})
from fx_export import export
g = runpy.run_path({os.path.join(ROOT, 'testdata', 'models', 'gen_models.py')!r})
for name, m, args in g["models"]():
    if name in {sorted(DYNAMIC)!r}:
        export(m, args, {tmp!r} + "/" + name, dynamic={DYNAMIC!r}[name])
"""
    subprocess.run(["/usr/bin/python3", "-c", code], check=True, capture_output=True)


def emulate_seconds(aotc, art, inputs, cache, runs):
    """One forward + backward under --backend emulate, kernels already host-compiled (best of `runs`)."""
    cmd = [aotc, "run", art, "--inputs", inputs, "--grad-outputs", inputs, "--backend", "emulate", "--cache-dir", cache, "--out", os.path.join(art, "out.safetensors")]
    subprocess.run(cmd, check=True, capture_output=True)
    best = None
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    return best


def dynamic_twins(aotc, models, arch, runs):
    """Issue 15: beside each static model, its dynamic twin at the hint
    sizes: kernel launches (should be equal), cold compile time (target
    within 1.5x) and emulate time of a training step."""
    tmp = tempfile.mkdtemp()
    try:
        export_dynamic(models, tmp)
        print(f"\n{'dynamic twin':14} {'launches':>8} {'static':>7} {'cold s':>7} {'static s':>8} {'ratio':>6} "
              f"{'emulate s':>9} {'static s':>8} {'ratio':>6}")
        for name in ["resnet18", "mobilenet_v2", "transformer"]:
            row = {}
            kinds = (("static", os.path.join(models, name + ".json")), ("dynamic", os.path.join(tmp, name + ".json")))
            # The two kinds alternate, so that a slow spell of a shared
            # machine falls on both rather than on one.
            colds = {kind: [] for kind, _ in kinds}
            for r in range(runs):
                for kind, model in kinds:
                    cache = os.path.join(tmp, f"{name}-{kind}-cache{r}")
                    colds[kind].append(compile_once(aotc, model, os.path.join(tmp, f"{name}-{kind}{r}"), cache, arch)[0])
            for kind, model in kinds:
                art = os.path.join(tmp, f"{name}-{kind}0")
                with open(os.path.join(art, "manifest.json")) as f:
                    man = json.load(f)
                launches = sum(1 for p in ("forward", "backward") for s in man[p]["steps"] if s["op"] == "launch")
                emu = emulate_seconds(aotc, art, os.path.join(models, name + ".inputs.safetensors"), os.path.join(tmp, "emu"), runs)
                row[kind] = (launches, min(colds[kind]), emu)
            d, st = row["dynamic"], row["static"]
            print(f"{name:14} {d[0]:8d} {st[0]:7d} {d[1]:7.2f} {st[1]:8.2f} {d[1] / st[1]:6.2f} {d[2]:9.2f} {st[2]:8.2f} {d[2] / st[2]:6.2f}",
                  flush=True)
        print("targets: launches equal; dynamic compile within 1.5x of static")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--arch", default="sm_80,sm_90")
    ap.add_argument("--runs", type=int, default=RUNS, help="timings are the best of this many compiles")
    ap.add_argument("--twins", action="store_true", help="only the dynamic twins' table")
    a = ap.parse_args()
    runs = max(1, a.runs)
    aotc = os.path.join(a.build, "tools", "aotc")
    models = os.path.join(a.build, "models")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "testdata", "models", "gen_models.py"), models], check=True,
                   capture_output=True)
    if a.twins:
        dynamic_twins(aotc, models, a.arch, runs)
        return 0
    print(f"{'model':14} {'ops':>6} {'launches':>8} {'ops/launch':>10} {'cold s':>7} {'warm s':>7} {'warm/cold':>9} "
          f"{'nvrtc share':>11} {'fw arena':>10} {'fw sum':>10} {'bw arena':>10} {'bw sum':>10}")
    for name in ["resnet18", "mobilenet_v2", "transformer"]:
        tmp = tempfile.mkdtemp()
        cache = os.path.join(tmp, "cache")
        try:
            # Best of `runs`: cold compiles each start from an empty cache.
            model = os.path.join(models, name + ".json")
            colds, warms = [], []
            for r in range(runs):
                shutil.rmtree(cache, ignore_errors=True)
                colds.append(compile_once(aotc, model, os.path.join(tmp, f"a{r}"), cache, a.arch))
                warms.append(compile_once(aotc, model, os.path.join(tmp, f"b{r}"), cache, a.arch))
                assert warms[-1][3] == 0 and warms[-1][2] == colds[-1][3], "the warm compile must hit the cache for every module"
            cold, nvrtc = min(colds)[:2]
            warm = min(warms)[0]
            art = os.path.join(tmp, "a0")
            with open(os.path.join(art, "manifest.json")) as f:
                man = json.load(f)
            ops = ir_ops(os.path.join(art, "forward.ir")) + ir_ops(os.path.join(art, "backward.ir"))
            launches = sum(1 for p in ("forward", "backward") for s in man[p]["steps"] if s["op"] == "launch")
            print(f"{name:14} {ops:6d} {launches:8d} {ops / launches:10.2f} {cold:7.2f} {warm:7.2f} {warm / cold:9.1%} "
                  f"{nvrtc / cold:11.1%} {man['forward']['arena_bytes']:10d} {man['forward']['alloc_bytes_unplanned']:10d} "
                  f"{man['backward']['arena_bytes']:10d} {man['backward']['alloc_bytes_unplanned']:10d}", flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print("\ntargets: ops/launch >= 3; warm/cold < 10%")

    dynamic_twins(aotc, models, a.arch, runs)

    # A zoo sharing one cache: each model compiles only the kernels no earlier
    # model emitted (Note [Kernel cache]); the artifacts are the same bytes.
    tmp = tempfile.mkdtemp()
    try:
        export_resnet34(os.path.join(tmp, "resnet34"))
        zoo = [("resnet18", os.path.join(models, "resnet18.json")), ("resnet34", os.path.join(tmp, "resnet34.json")),
               ("mobilenet_v2", os.path.join(models, "mobilenet_v2.json")),
               ("transformer", os.path.join(models, "transformer.json"))]
        cache = os.path.join(tmp, "zoo-cache")
        print(f"\n{'zoo (one cache)':16} {'kernels':>8} {'shared':>7} {'compile s':>9} {'alone cold s':>12} {'ratio':>6}")
        for name, path in zoo:
            alone = min(compile_once(aotc, path, os.path.join(tmp, f"{name}-alone{r}"), os.path.join(tmp, f"{name}-cache{r}"), a.arch)[0]
                        for r in range(runs))
            wall, _, _, _, hits, misses = compile_once(aotc, path, os.path.join(tmp, name + "-zoo"), cache, a.arch)
            same = subprocess.run(["diff", "-r", "-q", os.path.join(tmp, name + "-alone0"), os.path.join(tmp, name + "-zoo")],
                                  capture_output=True).returncode == 0
            assert same, f"{name}: the artifact depends on the cache"
            print(f"{name:16} {hits + misses:8d} {hits / (hits + misses):7.1%} {wall:9.2f} {alone:12.2f} {wall / alone:6.2f}",
                  flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
