#!/usr/bin/env python3
"""PyTorch 2.x's default ONNX exporter (dynamo=True) through aotc.

Run with the pinned PyTorch 2.x environment (scripts/setup-venv.sh:
torch, torchvision, onnx, onnxruntime, onnxscript).  Each model is exported
by torch.onnx.export(..., dynamo=True) in eval mode (opset 18 and later),
and then:
  inference  the default export (onnxscript's optimizer on) compiled with
             `aotc compile` and run with --forward-only: outputs against
             onnxruntime on the same file and against eager PyTorch;
  --train    the export without the optimizer (optimize=False, so the
             initializers keep the module's parameter names; the optimizer
             folds BatchNormalization into the convolutions) compiled with
             --train and run with a grad output for every graph output: every
             parameter gradient (grad.<name>) against eager autograd on the
             same module in eval mode.
Both on the backend given (reference or emulate).

mobilenet_v2's ReLU6 (exported as Clip) meets inputs exactly at its bound 0:
a fresh model's eval-mode batch norms (mean 0, bias 0) pass the exact zeros
of depthwise convolutions over all-zero windows (about 16,000 in one
forward at 32x32, half of the 960-channel 1x1 maps).  ONNX defines no
gradient; aotc's Clip gives 0 at a bound, as hardtanh_backward does (Note
[ONNX Clip's gradient], src/frontend/onnx/pointwise.cpp), so the eager
gradients are what the graph means here.

Usage: scripts/onnx_dynamo_test.py [--aotc PATH] [--backend reference|emulate] [--cache-dir D]
       [MODEL ...]   (models: resnet18 mobilenet_v2 vit_b_16 vit_small transformer lstm;
                      default: all)
"""
import argparse
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from fx_export import write_safetensors  # noqa: E402
from compare_safetensors import load_typed  # noqa: E402


class LSTMHead(nn.Module):
    """A 2-layer LSTM (exported as two ONNX LSTM nodes) and a linear head."""

    def __init__(self):
        super().__init__()
        self.lstm, self.fc = nn.LSTM(8, 16, num_layers=2, batch_first=True), nn.Linear(16, 4)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return self.fc(y), h, c


def models():
    import torchvision
    from torchvision.models.vision_transformer import VisionTransformer
    img = lambda n, s: (torch.randn(n, 3, s, s),)  # noqa: E731
    return {
        "resnet18": (lambda: torchvision.models.resnet18(num_classes=10), lambda: img(2, 32)),
        "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(num_classes=10), lambda: img(2, 32)),
        # vit_b_16 as torchvision builds it, on a 32x32 image (4 patches of 16).
        "vit_b_16": (lambda: torchvision.models.vit_b_16(image_size=32, num_classes=10), lambda: img(2, 32)),
        "vit_small": (lambda: VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                                                num_classes=10), lambda: img(2, 32)),
        "transformer": (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True), 2),
                        lambda: (torch.randn(2, 5, 16),)),
        "lstm": (LSTMHead, lambda: (torch.randn(2, 5, 8),)),
    }


def rel_err(got, want):
    want = np.asarray(want, dtype=np.float64)
    return float(np.max(np.abs(np.asarray(got, dtype=np.float64) - want))) / max(1e-3, float(np.max(np.abs(want))))


def check(name, args, work):
    import onnx
    import onnxruntime as ort
    ctor, make_args = models()[name]
    torch.manual_seed(0)
    module = ctor().eval()
    inputs = make_args()
    failures, worst = [], 0.0
    cache = ["--cache-dir", args.cache_dir] if args.cache_dir else ["--no-cache"]
    run_cache = ["--cache-dir", os.path.join(args.cache_dir or work, "emulate")] if args.backend == "emulate" else []

    # Inference: the default export.
    path = os.path.join(work, name + ".onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, inputs, path, dynamo=True, verbose=False)
    m = onnx.load(path, load_external_data=False)
    opset = max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
    names = [i.name for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}]
    art = os.path.join(work, name + "_inf")
    subprocess.run([args.aotc, "compile", path, "-o", art, "-q"] + cache, check=True)
    inp, out = os.path.join(work, name + "_in.safetensors"), os.path.join(work, name + "_out.safetensors")
    write_safetensors(inp, dict(zip(names, inputs)))
    subprocess.run([args.aotc, "run", art, "--inputs", inp, "--out", out, "--forward-only", "--backend", args.backend, "-q"] + run_cache, check=True)
    got = {k: v[1] for k, v in load_typed(out).items()}
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ref = sess.run(None, {n: t.numpy() for n, t in zip(names, inputs)})
    with torch.no_grad():
        eager = module(*inputs)
    eager = eager if isinstance(eager, tuple) else (eager,)
    for i, r in enumerate(ref):
        g = got.get(f"output.{i}")
        if g is None:
            failures.append(f"output.{i} missing")
            continue
        for what, want, tol in (("onnxruntime", r, 1e-4), ("eager", eager[i].numpy() if i < len(eager) else None, 1e-4)):
            if want is None:
                continue
            e = rel_err(g, want)
            worst = max(worst, e)
            if np.shape(g) != np.shape(want) or e > tol:
                failures.append(f"output.{i} vs {what}: shape {np.shape(g)} / {np.shape(want)}, relative error {e:.2e}")

    # Gradients: the unoptimized export, --train.
    if not args.no_train:
        tpath = os.path.join(work, name + "_train.onnx")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, inputs, tpath, dynamo=True, optimize=False, verbose=False)
        outs = module(*inputs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        gen = torch.Generator().manual_seed(1)
        gouts = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in outs]
        module.zero_grad()
        torch.autograd.backward(outs, gouts)
        tart = os.path.join(work, name + "_train")
        subprocess.run([args.aotc, "compile", tpath, "-o", tart, "--train", "-q"] + cache, check=True)
        gfile, tout = os.path.join(work, name + "_gout.safetensors"), os.path.join(work, name + "_tout.safetensors")
        write_safetensors(gfile, {f"grad_output.{i}": g for i, g in enumerate(gouts)})
        subprocess.run([args.aotc, "run", tart, "--inputs", inp, "--grad-outputs", gfile, "--out", tout, "--backend", args.backend, "-q"] + run_cache,
                       check=True)
        tgot = {k: v[1] for k, v in load_typed(tout).items()}
        n = 0
        for pname, p in module.named_parameters():
            if p.grad is None:
                continue
            key = f"grad.{pname}"
            if key not in tgot:
                failures.append(f"{key} missing")
                continue
            n += 1
            e = rel_err(tgot[key], p.grad.numpy())
            worst = max(worst, e)
            if e > 2e-3:
                failures.append(f"{key}: relative error {e:.2e}")
        train_note = f", {n} parameter grads"
    else:
        train_note = ""
    print(f"{'ok' if not failures else 'FAIL'} {name} (opset {opset}, {args.backend}{train_note}): worst relative error {worst:.2e}", flush=True)
    for f in failures[:10]:
        print(f"  {f}")
    return not failures


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aotc", default=os.path.join(here, "..", "build", "tools", "aotc"))
    ap.add_argument("--backend", default="reference", choices=["reference", "emulate"])
    ap.add_argument("--cache-dir", default="")
    ap.add_argument("--no-train", action="store_true", help="inference only")
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    todo = args.models or list(models())
    for m in todo:
        if m not in models():
            ap.error(f"unknown model {m}; models: {' '.join(models())}")
    ok = True
    with tempfile.TemporaryDirectory(prefix="aotc-onnx-dynamo-") as work:
        for name in todo:
            try:
                ok = check(name, args, work) and ok
            except subprocess.CalledProcessError as e:
                print(f"FAIL {name}: {' '.join(e.cmd[:2])} exited {e.returncode}", flush=True)
                ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
