#!/usr/bin/python3
"""Exports the real models of the op-coverage suite with tools/fx_export.py
and writes PyTorch eager's results, computed in float64, beside them
(outputs, every parameter gradient, BatchNorm running statistics after
forward):

    /usr/bin/python3 testdata/models/gen_models.py OUTDIR [NAME...]

Too large to commit; the test suite runs this into the build directory and
reuses the files while this script is unchanged (the stamp holds its hash).
"""
import copy
import hashlib
import os
import sys

import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
sys.path.insert(0, os.path.join(HERE, ".."))
from fx_export import export  # noqa: E402
from gen_util import reference  # noqa: E402


# Models also exported in float64 (NAME_f64): the ill-conditioned ones.
FLOAT64_TWINS = {"resnet18", "mobilenet_v2"}


class MlpCrossEntropy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 64),
                                       torch.nn.SiLU(), torch.nn.Linear(64, 10))

    def forward(self, x, target):
        return torch.nn.functional.cross_entropy(self.net(x), target)


def models():
    torch.manual_seed(0)
    yield "resnet18", torchvision.models.resnet18(num_classes=10).train(), (torch.randn(2, 3, 64, 64),)
    torch.manual_seed(0)
    yield "mobilenet_v2", torchvision.models.mobilenet_v2(num_classes=10, dropout=0.0).train(), (torch.randn(2, 3, 64, 64),)
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
    yield "transformer", torch.nn.TransformerEncoder(layer, num_layers=2).train(), (torch.randn(2, 10, 64),)
    torch.manual_seed(0)
    yield "mlp_cross_entropy", MlpCrossEntropy(), (torch.randn(16, 32), torch.randint(0, 10, (16,)))


def main():
    outdir = sys.argv[1]
    only = set(sys.argv[2:])
    os.makedirs(outdir, exist_ok=True)
    with open(__file__, "rb") as f:
        digest = hashlib.sha256(f.read() + open(os.path.join(HERE, "..", "..", "tools", "fx_export.py"), "rb").read()).hexdigest()
    stamp = os.path.join(outdir, "stamp")
    if not only and os.path.exists(stamp) and open(stamp).read() == digest:
        print("models are up to date")
        return
    for name, model, args in models():
        if only and name not in only:
            continue
        export(model, args, os.path.join(outdir, name))
        # Train-mode BatchNorm on batch 2 with 2x2 final maps is ill-conditioned:
        # float32 eager's gradients are ~2% off the exact ones (measured against
        # float64), so the reference is eager in float64.
        reference(name, model, args, outdir, float64=True)
        # ... and in float32, the arithmetic a GPU (and `aotc run --backend
        # emulate`) does: emulate is checked against this one.
        reference(name + ".f32", model, args, outdir)
        os.remove(os.path.join(outdir, name + ".f32.inputs.safetensors"))
        print("wrote", name, flush=True)
        if name in FLOAT64_TWINS:
            # The same model exported in float64: the generated kernels then
            # compute in double too, and must match the reference runtime
            # and eager to 1e-4 despite the conditioning.
            m64 = copy.deepcopy(model).double()
            a64 = tuple(a.double() if a.is_floating_point() else a for a in args)
            export(m64, a64, os.path.join(outdir, name + "_f64"))
            reference(name + "_f64", m64, a64, outdir, float64=True)
            print("wrote", name + "_f64", flush=True)
    if not only:
        with open(stamp, "w") as f:
            f.write(digest)


if __name__ == "__main__":
    main()
