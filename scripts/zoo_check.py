#!/usr/bin/python3
"""zoo_check.py [--build build] [MODEL...]: torchvision models through aotc.

Each model (train mode, batch 2, dropout and stochastic depth 0, 10 classes)
is exported with tools/fx_export.py, compiled, and run on both backends:
the reference runtime against eager in float64, `--backend emulate` against
eager in float32.  Prints the worst per-tensor error, and eager float32's
own distance from float64 (the model's conditioning), (relative to the
tensor's max, floored at 1e-3 of the largest tensor of its kind).  A smoke
test of generality, not part of the suite: train-mode BatchNorm on small
maps is ill-conditioned, so some models' gradients differ from float64 by
as much as eager float32's own do (resnext50, regnet).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "testdata"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from compare_safetensors import load  # noqa: E402
from fx_export import export  # noqa: E402
from gen_util import reference  # noqa: E402

MODELS = {
    "vgg11": dict(dropout=0.0), "googlenet": dict(dropout=0.0, aux_logits=False, init_weights=True),
    "squeezenet1_0": dict(dropout=0.0), "mobilenet_v3_small": dict(dropout=0.0), "mobilenet_v2": dict(dropout=0.0),
    "resnet18": {}, "densenet121": {}, "shufflenet_v2_x0_5": {}, "convnext_tiny": dict(stochastic_depth_prob=0.0),
    "resnext50_32x4d": {}, "regnet_x_400mf": {},
}


def worst(got, want):
    scale = {}
    for k, v in want.items():
        if v.size:
            kind = k.startswith("grad.")
            scale[kind] = max(scale.get(kind, 0.0), float(np.max(np.abs(v))))
    rows = [(float(np.max(np.abs(got[k] - v))) / max(float(np.max(np.abs(v))), 1e-3 * scale[k.startswith("grad.")]), k)
            for k, v in want.items() if v.size]
    missing = [k for k in want if k not in got]
    return max(rows) if rows else (0.0, ""), missing


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    aotc = os.path.join(a.build, "tools", "aotc")
    for name in a.models or list(MODELS):
        with tempfile.TemporaryDirectory() as tmp:
            torch.manual_seed(0)
            m = getattr(torchvision.models, name)(num_classes=10, **MODELS.get(name, {})).train()
            x = torch.randn(2, 3, 96, 96)
            p = os.path.join(tmp, "m")
            export(m, (x,), p)
            reference("m", m, (x,), tmp, float64=True)
            reference("m32", m, (x,), tmp)
            art = os.path.join(tmp, "art")
            r = subprocess.run([aotc, "-q", "compile", p + ".json", "-o", art, "--arch", "sm_90"], capture_output=True, text=True)
            if r.returncode:
                print(f"{name:20} compile failed: {r.stderr.strip().splitlines()[0]}")
                continue
            line = f"{name:20}"
            for backend, ref in (("reference", "m"), ("emulate", "m32")):
                out = os.path.join(tmp, backend + ".safetensors")
                r = subprocess.run([aotc, "run", art, "--backend", backend, "--inputs", p + ".safetensors", "--inputs",
                                    p + ".inputs.safetensors", "--grad-outputs", p + ".inputs.safetensors", "--out", out],
                                   capture_output=True, text=True)
                if r.returncode:
                    line += f" {backend}: failed ({r.stderr.strip()[:80]})"
                    continue
                (err, key), missing = worst(load(out), load(os.path.join(tmp, ref + ".expected.safetensors")))
                line += f"  {backend} {err:.1e} ({key}){' missing ' + str(missing) if missing else ''}"
            # How far eager float32 itself is from float64: the conditioning.
            (err, key), _ = worst(load(os.path.join(tmp, "m32.expected.safetensors")), load(os.path.join(tmp, "m.expected.safetensors")))
            line += f"  [eager f32 vs f64 {err:.1e}]"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
