#!/usr/bin/python3
"""gpu_test.py AOTC SRCROOT WORKDIR [MODELS_DIR] [--backend cuda|emulate] [--sample N]

The GPU tests (CTest label `gpu`): every FX fixture (testdata/fx) and every op
program (testdata/ops), and the exported models when MODELS_DIR holds them,
compiled once and run with `--backend cuda` and `--backend reference` on the
same inputs and grad outputs; every result must agree (allclose, atol = rtol
= 1e-3; 3e-2 for the float16/bfloat16 programs).  Without a usable GPU it
prints why and exits 77, which CTest reports as skipped -- never as passed.

--backend emulate runs the same comparison on the emulate device (the host
side of scripts/gpu_check.py on a machine without a GPU); --sample N takes
every k-th program so that N are run (a quick check).  The environment
passes through: AOTC_CUDA_GRAPHS=0 runs `--backend cuda` without CUDA graphs.
"""
import argparse
import concurrent.futures as cf
import glob
import os
import shutil
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("aotc")
ap.add_argument("src")
ap.add_argument("work")
ap.add_argument("models", nargs="?", default="")
ap.add_argument("--backend", default="cuda", choices=["cuda", "emulate"])
ap.add_argument("--sample", type=int, default=0, help="run about N of the programs (every k-th)")
opts = ap.parse_args()
aotc, src, work, models, backend = opts.aotc, opts.src, opts.work, opts.models, opts.backend
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def sh(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


# Probe: the backend on the smallest fixture.
probe = os.path.join(work, "probe")
r = sh([aotc, "compile", os.path.join(src, "testdata/fx/mlp.json"), "-o", probe, "-q"])
if r.returncode:
    sys.exit(f"compile failed: {r.stderr}")
r = sh([aotc, "run", probe, "--backend", backend, "--inputs", os.path.join(src, "testdata/fx/mlp.inputs.safetensors"),
        "--grad-outputs", os.path.join(src, "testdata/fx/mlp.inputs.safetensors"), "--out", os.path.join(work, "probe.safetensors")])
if r.returncode and ("CUDA driver" in r.stderr or "no CUDA device" in r.stderr or "does not start" in r.stderr):
    print("SKIPPED: " + r.stderr.strip().splitlines()[-1])
    sys.exit(77)

cases = []
for d in ("fx", "ops"):
    for j in sorted(glob.glob(os.path.join(src, "testdata", d, "*.json"))):
        stem = j[:-5]
        if os.path.exists(stem + ".inputs.safetensors"):
            cases.append((f"{d}/{os.path.basename(stem)}", j, [stem + ".inputs.safetensors"]))
if models and os.path.isdir(models):
    for j in sorted(glob.glob(os.path.join(models, "*.json"))):
        stem = j[:-5]
        if os.path.exists(stem + ".inputs.safetensors"):
            cases.append((f"models/{os.path.basename(stem)}", j, [stem + ".inputs.safetensors"]))
if opts.sample and len(cases) > opts.sample:
    cases = cases[::-(-len(cases) // opts.sample)]


def one(case):
    name, model, inputs = case
    art = os.path.join(work, name.replace("/", "_"))
    r = sh([aotc, "compile", model, "-o", art, "-q"])
    if r.returncode:
        return name, "compile: " + r.stderr.strip()
    outs = {}
    for b in ("reference", backend):
        out = os.path.join(work, name.replace("/", "_") + "." + b + ".safetensors")
        cmd = [aotc, "run", art, "--backend", b, "--out", out, "--grad-outputs", inputs[0]]
        for i in inputs:
            cmd += ["--inputs", i]
        r = sh(cmd)
        if r.returncode:
            return name, f"{b}: " + r.stderr.strip()
        outs[b] = out
    tol = "3e-2" if ("f16" in name or "bf16" in name) else "1e-3"
    # The running interpreter (on a GPU machine /usr/bin/python3 may lack numpy).
    r = sh([sys.executable, os.path.join(src, "scripts/compare_safetensors.py"), outs[backend], outs["reference"], "--tol", tol, "--equal-nan"])
    if r.returncode == 0:
        return name, None
    lines = r.stdout.strip().splitlines()
    bad = [l for l in lines[:-1] if not l.endswith(": ok")]
    return name, "differs: " + lines[-1] + (" (" + "; ".join(bad[:3]) + ")" if bad else "")


failed = 0
with cf.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
    for name, err in pool.map(one, cases):
        if err:
            failed += 1
            print(f"FAIL {name}: {err}")
print(f"gpu: {len(cases) - failed}/{len(cases)} programs match the reference under --backend {backend}")
sys.exit(1 if failed else 0)
