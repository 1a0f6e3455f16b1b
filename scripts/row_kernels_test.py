#!/usr/bin/python3
"""row_kernels_test.py AOTC WORK

The reduction kernels that only large tensors get (issue 34), run on the
reference and emulate backends against eager PyTorch: each program is
exported here, compiled for the default targets (whose launch-shape rule
schedules reductions over more than 1 MiB), and the test checks both that the
kernel of interest is in the artifact and that every result matches eager.

  - Note [Welford moments]: BatchNorm2d statistics of few channels (mean and
    variance in one pass over x), float32 and float64, with the running
    statistics it updates;
  - Note [Sibling reductions]: the same batch norm's backward sums (Row) and a
    LayerNorm's weight and bias gradients (Column);
  - Note [Reductions that store their input]: a Linear's bias gradient (a
    Column sum) that computes and stores relu's masked gradient the GEMMs
    read, and a TransformerEncoderLayer's (in_proj's q/k/v sum, linear1's
    relu gradient);
  - Note [Online softmax]: softmax, log_softmax and cross_entropy over rows
    longer than the row cache, with rows that are all -inf, an +inf and a
    NaN: the NaN/inf pattern must be eager's.

Exits 1 on any difference."""
import copy
import glob
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
import fx_export  # noqa: E402
from compare_safetensors import load  # noqa: E402


class Rows(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.w = torch.nn.Parameter(torch.ones(1))

    def forward(self, x):
        y = x * self.w
        if self.kind == "softmax":
            return y.softmax(-1)
        if self.kind == "log_softmax":
            return y.log_softmax(-1)
        return torch.nn.functional.cross_entropy(y, torch.arange(y.shape[0]) % y.shape[1])


def special(x):
    x[:, :3000] = float("-inf")
    x[5, :] = float("-inf")
    x[7, 100] = float("inf")
    x[9, 4000] = float("nan")
    return x


def cases():
    """(name, module, input, marker in a kernel's text, tolerance, compare NaN/inf pattern)."""
    torch.manual_seed(0)
    bn = torch.nn.Sequential(torch.nn.BatchNorm2d(16), torch.nn.ReLU()).train()
    ln = torch.nn.Sequential(torch.nn.LayerNorm(256), torch.nn.Linear(256, 64)).train()
    enc = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0).train()
    ff = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256)).train()
    out = [
        ("bn_f32", bn, torch.randn(8, 16, 64, 64) * 3 + 5, "Welford moments", 1e-5, False),
        ("bn_f64", copy.deepcopy(bn).double(), (torch.randn(8, 16, 64, 64) * 3 + 5).double(), "sibling reductions", 1e-12, False),
        ("layernorm_f32", ln, torch.randn(64, 64, 256), "sibling reductions", 1e-5, False),
        ("feed_forward_f32", ff, torch.randn(16, 64, 256), "st0[", 1e-5, False),
        ("encoder_layer_f32", enc, torch.randn(64, 32, 256), "st0[", 1e-4, False),
        ("log_softmax_f64", Rows("log_softmax").double(), torch.randn(160, 5000).double() * 4, "om0", 1e-12, False),
        ("softmax_special", Rows("softmax"), special(torch.randn(256, 8192) * 4), "om0", 1e-5, True),
        ("cross_entropy", Rows("ce"), torch.randn(160, 6000) * 4, "om0", 1e-5, False),
    ]
    return out


def main():
    aotc, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    bad = 0
    for name, module, x, marker, tol, pattern in cases():
        p = os.path.join(work, name)
        fx_export.export(module, (torch.nan_to_num(x, 0.0, 1.0, -1.0),), p)
        r = subprocess.run([aotc, "compile", p + ".json", "-o", p + ".art"], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {name}: compile: {r.stderr.strip()}")
            bad += 1
            continue
        if not any(marker in open(f).read() for f in glob.glob(os.path.join(p + ".art", "kernels", "*.cu"))):
            print(f"FAIL {name}: no kernel has '{marker}'")
            bad += 1
        m = copy.deepcopy(module)
        xx = x.clone().requires_grad_(True)
        y = m(xx)
        g = torch.randn_like(y)
        y.backward(g)
        want = {"output.0": y.detach()}
        want.update({"grad." + n: q.grad for n, q in m.named_parameters()})
        want.update({"after_forward." + n: b for n, b in m.named_buffers() if b.is_floating_point()})
        fx_export.write_safetensors(p + ".in.safetensors", {"src" if name.startswith("encoder") else "input" if name.startswith(("bn", "layernorm", "feed_forward")) else "x": x})
        fx_export.write_safetensors(p + ".g.safetensors", {"grad_output.0": g})
        for be in ("reference", "emulate"):
            out = f"{p}.{be}.safetensors"
            r = subprocess.run([aotc, "run", p + ".art", "--inputs", p + ".in.safetensors", "--grad-outputs", p + ".g.safetensors",
                                "--backend", be, "--out", out], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {name} {be}: {r.stderr.strip()}")
                bad += 1
                continue
            got = load(out)
            errors = []
            for k, ref in want.items():
                if k not in got:
                    errors.append(f"{k}: missing")
                    continue
                ref = ref.detach().double().numpy()
                v = got[k]
                if pattern and not ((np.isnan(v) == np.isnan(ref)).all() and (np.isinf(v) == np.isinf(ref)).all()
                                    and (v[np.isinf(v)] == ref[np.isinf(ref)]).all()):
                    errors.append(f"{k}: NaN/inf where eager has none or the other way round")
                fin = np.isfinite(ref) & np.isfinite(v) if pattern else np.ones(ref.shape, bool)
                if not np.allclose(v[fin], ref[fin], rtol=tol, atol=tol * max(1.0, float(np.abs(ref[fin]).max(initial=0.0)))):
                    errors.append(f"{k}: max difference {np.abs(v[fin] - ref[fin]).max():.3g}")
            if errors:
                print(f"FAIL {name} {be}: " + "; ".join(errors))
                bad += 1
            else:
                print(f"ok   {name} {be}: {len(want)} tensors, '{marker}' kernel")
    print("row_kernels_test: " + ("FAILED" if bad else "all passed"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
