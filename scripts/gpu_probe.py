#!/usr/bin/env python3
"""gpu_probe.py AOTC OUT [--device cuda|emulate] [--model resnet18] [--batch 2]
[--side 224] [--precision fp32] [--sanitizer-seconds 120]

Where does a GPU result part from the emulate device's?  (Note [Step trace];
the resnet18 fp32 gate of the GPU check, /work/notes/gpu-s28.md: at batch 2
eager's gradients are 5e-6 from float64 and aotc's on the GPU 4e-3, while the
emulate device, which runs the same kernel text on the host, is 1e-6.)  On
the GPU machine, from the bundle (scripts/gpu_check.sh; probe.sh runs it):
  1. exports the model (train mode, torch.manual_seed(0), x ~ randn, the
     grad output ones, as bench_gpu.py's training rows) and compiles it;
  2. runs the artifact with --backend cuda and with --backend emulate, each
     with --trace, and compares the traces in step order
     (scripts/compare_traces.py): the first step that parts is the culprit;
  3. measures each side's gradients against float64 eager;
  4. runs the cuda step under compute-sanitizer's initcheck, racecheck and
     synccheck when the machine has it (time-boxed).
With --device emulate (a host check of the script, in scripts/gpu_check.sh
--host-test) the "cuda" side is a second emulate run.  Everything lands under
OUT; prints what it found; exits as compare_traces.py does (0: no step parts)."""
import argparse
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))


def sh(cmd, timeout=None):
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        rc, out = r.returncode, (r.stdout + r.stderr)
    except subprocess.TimeoutExpired as e:
        rc, out = 124, f"(timed out after {timeout} s) " + ((e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""))
    print(f"$ {' '.join(cmd)}  [{time.time() - t0:.1f} s, rc {rc}]", flush=True)
    return rc, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("aotc")
    ap.add_argument("out")
    ap.add_argument("--device", default="cuda", choices=["cuda", "emulate"])
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--side", type=int, default=224)
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--sanitizer-seconds", type=float, default=120)
    o = ap.parse_args()
    import numpy as np
    import torch
    import torchvision
    from fx_export import export, write_safetensors
    from compare_safetensors import load

    work = os.path.join(o.out, "probe")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    torch.manual_seed(0)
    model = getattr(torchvision.models, o.model)(num_classes=1000).train()
    x = torch.randn(o.batch, 3, o.side, o.side)
    prefix = os.path.join(work, o.model)
    export(model, (x,), prefix)
    art = os.path.join(work, "art")
    rc, out = sh([o.aotc, "compile", prefix + ".json", "-o", art, "-q", "--precision", o.precision])
    if rc:
        print(out)
        return 1
    with torch.no_grad():
        y = model(x)
    g = torch.ones_like(y)
    inputs = os.path.join(work, "inputs.safetensors")
    write_safetensors(inputs, {"x": x, "grad_output.0": g})
    results, traces = {}, {}
    sides = [("cuda", o.device), ("emulate", "emulate")]
    for side, backend in sides:
        res, tr = os.path.join(work, f"{side}.safetensors"), os.path.join(work, f"{side}.trace.safetensors")
        rc, out = sh([o.aotc, "run", art, "--backend", backend, "--cache-dir", os.path.join(work, "emcache"), "--inputs", inputs,
                      "--grad-outputs", inputs, "--out", res, "--trace", tr, "-q"])
        if rc:
            print(out[-3000:])
            return 1
        results[side], traces[side] = res, tr
    # The same run as a deployment makes it (graphs on, arenas not poisoned,
    # no synchronization between steps): a fault the traced runs do not show
    # lives in that path.
    res = os.path.join(work, "graphs.safetensors")
    rc, out = sh([o.aotc, "run", art, "--backend", o.device, "--cache-dir", os.path.join(work, "emcache"), "--inputs", inputs,
                  "--grad-outputs", inputs, "--out", res, "-q"])
    if rc:
        print(out[-3000:])
        return 1
    results["graphs"] = res
    parted, out = sh([sys.executable, os.path.join(HERE, "compare_traces.py"), traces["cuda"], traces["emulate"], "--artifact", art])
    print(out, flush=True)
    for t in traces.values():
        os.remove(t)  # hundreds of MB each: not brought back
    # Each side against float64 eager (on the GPU when there is one).
    dev = torch.device("cuda" if o.device == "cuda" and torch.cuda.is_available() else "cpu")
    m64 = getattr(torchvision.models, o.model)(num_classes=1000).train()
    m64.load_state_dict(model.state_dict())
    m64 = m64.to(dev).double()
    m64(x.to(dev).double()).backward(g.to(dev).double())
    m32 = getattr(torchvision.models, o.model)(num_classes=1000).train().to(dev)
    m32.load_state_dict(model.state_dict())
    m32(x.to(dev)).backward(g.to(dev))
    got = {side: load(results[side]) for side in results}
    rows = []
    for n, p in m64.named_parameters():
        ref = p.grad.cpu().numpy()
        scale = max(np.abs(ref).max(), 1.0)
        d = {side: float(np.abs(got[side]["grad." + n] - ref).max() / scale) for side in results}
        e = dict(m32.named_parameters())[n].grad.cpu().double().numpy()
        rows.append((d["cuda"], d["graphs"], d["emulate"], float(np.abs(e - ref).max() / scale), n))
    rows.sort(reverse=True)
    print(f"gradients, distance from float64 (max |d| / max(max |ref|, 1)): {o.device} traced (graphs off), {o.device} with graphs, "
          f"emulate, eager fp32 on {dev}")
    for r in rows[:8]:
        print(f"  {r[0]:.2e}  {r[1]:.2e}  {r[2]:.2e}  {r[3]:.2e}  {r[4]}")
    san = shutil.which("compute-sanitizer")
    if o.device == "cuda" and san:
        for tool in ("initcheck", "racecheck", "synccheck"):
            rc, out = sh([san, "--tool", tool, "--error-exitcode", "9", o.aotc, "run", art, "--backend", "cuda", "--inputs", inputs,
                          "--grad-outputs", inputs, "--out", os.path.join(work, f"{tool}.safetensors"), "-q"], timeout=o.sanitizer_seconds)
            lines = [l for l in out.splitlines() if l.strip()]
            print(f"compute-sanitizer {tool}: rc {rc}; " + ("\n    ".join(lines[:25]) if lines else "(no output)"), flush=True)
    elif o.device == "cuda":
        print("compute-sanitizer: not on this machine")
    return parted  # 0: the traces agree; 1: a step parts; 2: they are not comparable


if __name__ == "__main__":
    sys.exit(main())
