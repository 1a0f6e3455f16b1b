#!/usr/bin/python3
"""ONNX training artifacts against PyTorch's gradients.

Each model is exported by Debian's torch.onnx.export in training mode
(TrainingMode.TRAINING, no constant folding), compiled with
`aotc compile M.onnx --train`, and run with a grad output for every graph
output; the parameter gradients (grad.<initializer>) must match PyTorch's
autograd on the same module and inputs, and the BatchNormalization running
means written back through the forward epilogue (after_forward.<name>) must
match the module's running means after the step.

Usage: scripts/onnx_train_test.py [--aotc PATH] [--backend reference|emulate] [--double]
       [--cache-dir D] [MODEL ...]   (models: mlp cnn_bn transformer resnet18 mobilenet_v2)
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from fx_export import write_safetensors  # noqa: E402  (the exporter's writer: one spelling of the format)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    kinds = {"F32": np.float32, "F64": np.float64, "I64": np.int64}
    return {k: np.frombuffer(data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], dtype=kinds[v["dtype"]]).reshape(v["shape"])
            for k, v in header.items() if k != "__metadata__"}


class MLPLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(8, 16), nn.Linear(16, 4)

    def forward(self, x, t):
        return nn.functional.cross_entropy(self.l2(torch.relu(self.l1(x))), t)


class CnnBn(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = nn.functional.max_pool2d(torch.relu(self.b2(self.c2(y))) + y[:, :, ::2, ::2], 2)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))


def models():
    import torchvision
    return {
        "mlp": (MLPLoss, lambda: (torch.randn(6, 8), torch.tensor([0, 1, 2, 3, 1, 0])), ["x", "t"]),
        "cnn_bn": (CnnBn, lambda: (torch.randn(2, 3, 12, 12),), ["x"]),
        "transformer": (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True), 2),
                        lambda: (torch.randn(2, 5, 16),), ["x"]),
        "resnet18": (lambda: torchvision.models.resnet18(num_classes=10), lambda: (torch.randn(2, 3, 32, 32),), ["x"]),
        # Dropout's mask is random (aotc's generator is not PyTorch's): p = 0
        # makes the exported training-mode Dropout an identity on both sides.
        "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(num_classes=10, dropout=0.0), lambda: (torch.randn(4, 3, 64, 64),), ["x"]),
    }


def check(name, aotc, backend, cache_dir, work, double):
    ctor, make_args, input_names = models()[name]
    torch.manual_seed(0)
    module = ctor()
    args = make_args()
    if double:
        # The f64 twin: a model whose float32 gradients are ill-conditioned
        # (batch norm over 2 elements) is checked exactly in float64.
        module = module.double()
        args = tuple(a.double() if a.is_floating_point() else a for a in args)
    model = os.path.join(work, name + ".onnx")
    module.train()
    torch.onnx.export(module, args, model, training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=input_names, opset_version=14)
    # Tracing ran the module once: the exported running statistics are the
    # module's now, and the step below starts from them as aotc's does.
    module.train()
    out = module(*args)
    outs = out if isinstance(out, tuple) else (out,)
    gen = torch.Generator().manual_seed(1)
    grads_out = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in outs]
    torch.autograd.backward(outs, grads_out)

    art = os.path.join(work, name + "_art")
    cmd = [aotc, "compile", model, "-o", art, "--train", "-q"] + (["--cache-dir", cache_dir] if cache_dir else ["--no-cache"])
    subprocess.run(cmd, check=True)
    inp, gout, res = (os.path.join(work, f"{name}_{k}.safetensors") for k in ("in", "gout", "out"))
    write_safetensors(inp, dict(zip(input_names, args)))
    write_safetensors(gout, {f"grad_output.{i}": g for i, g in enumerate(grads_out)})
    cmd = [aotc, "run", art, "--inputs", inp, "--grad-outputs", gout, "--out", res, "--backend", backend, "-q"]
    if backend == "emulate" and cache_dir:
        cmd += ["--cache-dir", os.path.join(cache_dir, "emulate")]
    subprocess.run(cmd, check=True)
    got = read_safetensors(res)

    worst, failures = 0.0, []
    for i, o in enumerate(outs):
        e = o.detach().numpy()
        err = float(np.max(np.abs(got[f"output.{i}"] - e))) / max(1.0, float(np.max(np.abs(e))))
        worst = max(worst, err)
        if err > 1e-3:
            failures.append(f"output.{i}: relative error {err:.2e}")
    for pname, p in module.named_parameters():
        key = f"grad.{pname}"
        if key not in got:
            failures.append(f"{key} missing")
            continue
        e = p.grad.numpy()
        err = float(np.max(np.abs(got[key] - e))) / max(1e-3, float(np.max(np.abs(e))))
        worst = max(worst, err)
        if err > 2e-3:
            failures.append(f"{key}: relative error {err:.2e}")
    for bname, b in module.named_buffers():
        if not bname.endswith("running_mean"):
            continue
        key = f"after_forward.{bname}"
        if key not in got:
            failures.append(f"{key} missing (the running mean is not written back)")
            continue
        err = float(np.max(np.abs(got[key] - b.numpy())))
        worst = max(worst, err)
        if err > 1e-4:
            failures.append(f"{key}: error {err:.2e}")
    status = "ok" if not failures else "FAIL"
    print(f"{status} {name} ({backend}{', f64' if double else ''}): {len(list(module.parameters()))} parameter grads, worst relative error {worst:.2e}")
    for f in failures:
        print(f"  {f}")
    return not failures


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aotc", default=os.path.join(here, "..", "build", "tools", "aotc"))
    ap.add_argument("--backend", default="reference", choices=["reference", "emulate"])
    ap.add_argument("--cache-dir", default="")
    ap.add_argument("--double", action="store_true", help="export and check the model in float64")
    ap.add_argument("models", nargs="*", default=["mlp", "cnn_bn", "transformer"])
    args = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="aotc-onnx-train-") as work:
        for name in args.models:
            ok = check(name, args.aotc, args.backend, args.cache_dir, work, args.double) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    import warnings
    warnings.filterwarnings("ignore")
    sys.exit(main())
