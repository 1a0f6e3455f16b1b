#!/usr/bin/env python3
"""torch.export .pt2 archives against eager PyTorch (issue 46; Note [pt2 front end]).

Each program is exported with torch.export.export and saved with
torch.export.save in both dialects -- the training IR export() returns and
the Core ATen of ep.run_decompositions(), static and with a dynamic batch
dim (exported at batch 4, run at batch 3) -- then compiled twice:
`aotc compile m.pt2` (inference: outputs and the buffers the forward
mutates, after_forward.<name>) and `aotc compile m.pt2 --train` (plus
grad.<parameter> for a random grad output), and run on the reference and
emulate backends.  Everything is compared with the eager module, run from the
state it was exported with.  Run under the pinned PyTorch 2.x
(scripts/setup-venv.sh); the torch2 CTest label does.

Usage: pt2_test.py AOTC [--backend reference|emulate ...] [--work DIR] [PROGRAM ...]
       (programs: mlp conv_bn buffer_update transformer_layer loss_nograd upsample_bicubic
       nested_inputs einsum, the default; resnet18 mobilenet_v2 vit by name)
"""
import argparse
import copy
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
from fx_export import write_safetensors  # noqa: E402  (one spelling of the format)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    kinds = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "BOOL": np.bool_}
    return {k: np.frombuffer(data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                             dtype=kinds[v["dtype"]]).reshape(v["shape"])
            for k, v in header.items() if k != "__metadata__"}


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(8, 16), nn.Linear(16, 4)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


class ConvBN(nn.Module):
    """conv + BatchNorm in train() mode: running statistics and
    num_batches_tracked updated in place; max pooling, flatten, linear."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6)
        self.c2, self.b2 = nn.Conv2d(6, 6, 3, padding=1, bias=False), nn.BatchNorm2d(6)
        self.fc = nn.Linear(6 * 4 * 4, 5)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = nn.functional.max_pool2d(torch.relu(self.b2(self.c2(y))) + y, 2)
        return self.fc(torch.flatten(y, 1))


class BufferUpdate(nn.Module):
    """An in-place buffer update the forward reads afterwards."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(5))
        self.register_buffer("total", torch.zeros(5))

    def forward(self, x):
        self.total.add_(x.sum(0))
        return (x * self.w + self.total).softmax(-1)


class TransformerLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.layer(x)).mean(1)


class LossNoGrad(nn.Module):
    """A loss (cross_entropy), padding, and a no_grad block (the training IR's
    wrap_with_set_grad_enabled, Note [Inlined grad regions])."""

    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(6, 8), nn.Linear(8, 4)

    def forward(self, x, t):
        with torch.no_grad():
            scale = self.l1(x).abs().mean()
        h = torch.relu(self.l1(nn.functional.pad(x, (1, 1))[:, 1:-1]))
        return nn.functional.cross_entropy(self.l2(h) * scale, t)


class NestedInputs(nn.Module):
    """Nested arguments: inputs named by their paths (d.a, pair.1)."""

    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 4)

    def forward(self, x, d, pair):
        return self.l(x) + d["a"] * d["b"] + pair[0] - pair[1]


class Bicubic(nn.Module):
    """Bicubic upsampling of a convolution's features (issue 48): align_corners
    both ways, a non-integer scale factor, and back down; the convolution's
    gradients come through upsample_bicubic2d's."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(2, 3, 3, padding=1)

    def forward(self, x):
        y = self.c(x)
        a = nn.functional.interpolate(y, scale_factor=1.5, mode="bicubic", align_corners=False)
        b = nn.functional.interpolate(y, size=(5, 9), mode="bicubic", align_corners=True)
        d = nn.functional.interpolate(a, scale_factor=0.5, mode="bicubic", align_corners=False)
        return a.mean((2, 3)) + d.pow(2).mean((2, 3)) + b.amax((2, 3))

class Einsum(nn.Module):
    """aten.einsum.default, which the training IR keeps whole (Note [Einsum]):
    batch matmul, implicit output, attention scores, a dot product, a
    diagonal, an implicit trace, an outer product, a three-operand chain and
    a sum over an index of one operand; every operand reaches a parameter."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 5))
        self.wq, self.wk = nn.Parameter(torch.randn(2, 5, 6)), nn.Parameter(torch.randn(2, 5, 6))
        self.a, self.b, self.c = nn.Parameter(torch.randn(3, 4)), nn.Parameter(torch.randn(4, 3)), nn.Parameter(torch.randn(3, 2))
        self.u, self.v = nn.Parameter(torch.randn(5)), nn.Parameter(torch.randn(5))

    def forward(self, x):
        h = torch.einsum("bij,jk->bik", x, self.w)
        g = torch.einsum("bij,bjk->bik", h, h.transpose(1, 2))
        q, k = torch.einsum("bqd,hde->bhqe", h, self.wq), torch.einsum("bkd,hde->bhke", h, self.wk)
        s = torch.einsum("bhqd,bhkd->bhqk", q, k)
        m = torch.einsum("ij,jk", self.a, self.b)
        dot = torch.einsum("i,i->", self.u, self.v)
        diag = torch.einsum("ii->i", m)
        trace = torch.einsum("ii", m)
        outer = torch.einsum("i,j->ij", diag, self.u)
        chain = torch.einsum("ij,jk,kl->il", self.a, self.b, self.c)
        rows = torch.einsum("ij->j", chain)
        z = torch.cat([m.flatten(), dot.reshape(1), diag, trace.reshape(1), outer.flatten(), chain.flatten(), rows])
        return torch.cat([g.flatten(1), s.flatten(1), z.unsqueeze(0).expand(x.shape[0], -1)], 1)


class PermutedNormConv(torch.nn.Module):
    """ConvNeXt's downsampling: LayerNorm2d (permute to channels-last, norm,
    permute back) then a strided conv: the activation arrives channels-last
    by the program's own permutes, the filter as its parameter is (aotc
    stopped on an internal check, "a channels-last convolution's filter is
    not packed NHWC", compiling convnext_tiny from a .pt2)."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(4)
        self.conv = torch.nn.Conv2d(4, 6, 2, stride=2)

    def forward(self, x):
        return self.conv(self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)).relu()


def flat_inputs(names, args):
    """{path: tensor} as aotc names user inputs (x, d.a, pair.1)."""
    out = {}

    def walk(prefix, v):
        if isinstance(v, torch.Tensor):
            out[prefix] = v
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(f"{prefix}.{k}", x)
        else:
            for i, x in enumerate(v):
                walk(f"{prefix}.{i}", x)
    for n, a in zip(names, args):
        walk(n, a)
    return out


def zoo(name):
    import torchvision
    return {"resnet18": lambda: torchvision.models.resnet18(num_classes=10),
            "mobilenet_v2": lambda: torchvision.models.mobilenet_v2(num_classes=10, dropout=0.0),
            "vit": lambda: torchvision.models.VisionTransformer(32, 8, 2, 2, 32, 64, num_classes=10)}[name]()


# Each program's example arguments at batch size b.
PROGRAMS = {
    "mlp": (MLP, lambda b: (torch.randn(b, 8),)),
    "conv_bn": (ConvBN, lambda b: (torch.randn(b, 3, 8, 8),)),
    "buffer_update": (BufferUpdate, lambda b: (torch.randn(b, 5),)),
    "transformer_layer": (TransformerLayer, lambda b: (torch.randn(b, 5, 16),)),
    "loss_nograd": (LossNoGrad, lambda b: (torch.randn(b, 6), torch.randint(0, 4, (b,)))),
    "upsample_bicubic": (Bicubic, lambda b: (torch.randn(b, 2, 6, 6),)),
    "nested_inputs": (NestedInputs, lambda b: (torch.randn(b, 4), {"a": torch.randn(b, 4), "b": torch.randn(b, 4)},
                                               (torch.randn(b, 4), torch.randn(b, 4)))),
    "einsum": (Einsum, lambda b: (torch.randn(b, 3, 4),)),
    "permuted_norm_conv": (PermutedNormConv, lambda b: (torch.randn(b, 4, 6, 6),)),
}
DEFAULT = list(PROGRAMS)
# torchvision models, run by name (not in CTest's run: minutes on emulate).
for _z in ("resnet18", "mobilenet_v2", "vit"):
    PROGRAMS[_z] = (lambda _z=_z: zoo(_z), lambda b: (torch.randn(b, 3, 32, 32),))


# Note [Core ATen and training]: run_decompositions() drops a no_grad block's
# grad mode, so --train refuses the Core ATen form of these programs.
CORE_TRAIN_REFUSED = {"loss_nograd": "has lost a torch.no_grad / enable_grad / autocast region"}


def run_aotc(aotc, model, art, inputs, gout, out, backend, train):
    cmd = [aotc, "compile", model, "-o", art, "-q"] + (["--train"] if train else [])
    subprocess.run(cmd, check=True)
    cmd = [aotc, "run", art, "--inputs", inputs, "--out", out, "--backend", backend, "-q"]
    cmd += ["--grad-outputs", gout] if train else ["--forward-only"]
    subprocess.run(cmd, check=True)
    return read_safetensors(out)


def relerr(got, want):
    want = np.asarray(want, dtype=np.float64)
    return float(np.max(np.abs(np.asarray(got, dtype=np.float64) - want))) / max(1e-3, float(np.max(np.abs(want)))) if want.size else 0.0


def check(name, dialect, dynamic, train, backend, aotc, work, double=False):
    ctor, base_args = PROGRAMS[name]
    torch.manual_seed(0)
    module = ctor().train()
    # --double: the float64 twin, for a model whose float32 results are
    # ill-conditioned (BatchNorm over a few elements in mobilenet_v2's last
    # 1x1 feature maps).
    make_args = (lambda b: torch.utils._pytree.tree_map(lambda a: a.double() if a.is_floating_point() else a, base_args(b))) if double else base_args
    if double:
        module = module.double()
    args = make_args(4)
    eager = copy.deepcopy(module)  # the state the archive holds
    if dynamic:
        # One artifact for every batch in [1, 64] (Note [pt2 dynamic sizes]),
        # exported at batch 4 and run at batch 3.
        batch = torch.export.Dim("batch", min=1, max=64)
        ep = torch.export.export(module, args, dynamic_shapes=torch.utils._pytree.tree_map(lambda _: {0: batch}, args))
        args = make_args(3)
    else:
        ep = torch.export.export(module, args)
    if dialect == "core":
        ep = ep.run_decompositions()
    model = os.path.join(work, f"{name}_{dialect}{'_dyn' if dynamic else ''}.pt2")
    torch.export.save(ep, model)
    if train and dialect == "core" and name in CORE_TRAIN_REFUSED:
        r = subprocess.run([aotc, "compile", model, "-o", os.path.join(work, "refused"), "--train", "-q"], capture_output=True, text=True)
        ok = r.returncode == 1 and CORE_TRAIN_REFUSED[name] in r.stderr and len(r.stderr.strip().splitlines()) == 1
        print(f"{'ok' if ok else 'FAIL'} {name} ({dialect}{', dynamic batch' if dynamic else ''}, --train, {backend}): "
              f"refused{'' if ok else ' wrongly: ' + r.stderr.strip()}")
        return ok
    arg_names = list(ep.module_call_graph[0].signature.forward_arg_names)

    before = {k: v.clone() for k, v in eager.named_buffers()}
    out = eager(*args)
    gen = torch.Generator().manual_seed(1)
    gout = torch.randn(out.shape, generator=gen, dtype=out.dtype)
    if train:
        out.backward(gout)
    tag = f"{name}_{dialect}{'_dyn' if dynamic else ''}_{'train' if train else 'infer'}_{backend}"
    inp, gpath, res = (os.path.join(work, f"{tag}_{k}.safetensors") for k in ("in", "gout", "out"))
    write_safetensors(inp, flat_inputs(arg_names, args))
    write_safetensors(gpath, {"grad_output.0": gout})
    got = run_aotc(aotc, model, os.path.join(work, tag), inp, gpath, res, backend, train)

    failures, worst = [], 0.0

    def compare(key, want, tol):
        nonlocal worst
        if key not in got:
            failures.append(f"{key} missing (has {sorted(got)})")
            return
        e = relerr(got[key], want.detach().numpy())
        worst = max(worst, e)
        if e > tol:
            failures.append(f"{key}: relative error {e:.2e}")

    compare("output.0", out, 1e-4)
    for bname, b in eager.named_buffers():
        if not torch.equal(b, before[bname]):
            compare(f"after_forward.{bname}", b, 1e-4)
    grads = [k for k in got if k.startswith("grad.")]
    if train:
        for pname, p in eager.named_parameters():
            compare(f"grad.{pname}", p.grad, 2e-3)
    elif grads:
        failures.append(f"an inference artifact returned gradients {grads}")
    status = "ok" if not failures else "FAIL"
    print(f"{status} {name} ({dialect}{', dynamic batch' if dynamic else ''}, {'--train' if train else 'inference'}, {backend}): "
          f"worst relative error {worst:.2e}")
    for f in failures:
        print(f"  {f}")
    return not failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("aotc")
    ap.add_argument("--backend", action="append", choices=["reference", "emulate"])
    ap.add_argument("--work")
    ap.add_argument("--double", action="store_true", help="the programs in float64")
    ap.add_argument("programs", nargs="*")
    a = ap.parse_intermixed_args()
    names = a.programs or DEFAULT
    work = a.work or tempfile.mkdtemp(prefix="aotc_pt2_")
    os.makedirs(work, exist_ok=True)
    ok = True
    for name in names:
        for dialect in ("training", "core"):
            for dynamic in (False, True):
                for train in (False, True):
                    for backend in a.backend or ["reference", "emulate"]:
                        ok = check(name, dialect, dynamic, train, backend, os.path.abspath(a.aotc), work, a.double) and ok
    print("all programs match eager" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
