#!/usr/bin/python3
"""dynamic_test.py AOTC [--backend B]... [--only NAME]... [--work DIR]

Issue 15's done-when: each program is exported with dynamic dims, compiled
ONCE by aotc, and the one artifact is run at several sizes -- 1 where eager
PyTorch accepts it, the hint, and at least two others -- under each backend
(reference and emulate by default), every result compared with eager
PyTorch 1.13 at that size: outputs, the gradient of every parameter, and
every tensor the program mutates (after the forward and after the backward).
A program whose compile assumed a divisibility must refuse, at run time and
in one line, a size that breaks it.  Exits 1 on any difference."""
import argparse
import copy
import json
import inspect
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
import fx_export  # noqa: E402
from compare_safetensors import load  # noqa: E402


class MlpCE(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 10))

    def forward(self, x, target):
        return torch.nn.functional.cross_entropy(self.net(x), target)


class Causal(torch.nn.Module):
    """Causal self-attention with a fixed mask buffer sliced to the length."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48)
        self.register_buffer("mask", torch.tril(torch.ones(32, 32)).bool())

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv(x).split(16, dim=2)
        att = ((q @ k.transpose(-2, -1)) / 4.0).masked_fill(~self.mask[:T, :T], float("-inf")).softmax(-1)
        return att @ v


class ViewMutation(torch.nn.Module):
    """Mutates its input through a view (the caller sees the new values)."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(2))

    def forward(self, x):
        x[:, 1:3].mul_(self.w)
        return x.sum(0) * 3


class PairMean(torch.nn.Module):
    """reshape(batch // 2, 2, ...): the artifact needs an even batch."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(x.reshape(x.size(0) // 2, 2, 8).mean(1))


class Outer(torch.nn.Module):
    """A batch x batch intermediate: at batch 46341 it spans more than 2^31
    elements, beyond 32-bit indices (Note [Dynamic index width])."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(1))

    def forward(self, x):
        return (x[:, None] * x[None, :] * self.w).sum(1)


class VarStd(torch.nn.Module):
    """var / std over the dynamic dim: their divisor n - correction follows
    the batch (difffuzz's dynamic cases were refused: "attribute 'value' is
    4.0 at the hints and 9.0 at another probe")."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(6))

    def forward(self, x):
        y = x * self.w
        return (y.var(0, keepdim=True) + y.std(dim=(0, 1)) + y.var(0, correction=0)).sum(-1) + y.std(1, correction=2)[:1].sum(-1, keepdim=True)


def cases():
    """name -> (module, make_args(sizes), dynamic, ranges, hint sizes, other sizes, tolerance)."""
    import torchvision

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
    return {
        "mlp_ce": (MlpCE(), lambda s: (torch.randn(s["batch"], 32), torch.randint(0, 10, (s["batch"],))),
                   {"x": {0: "batch"}, "target": {0: "batch"}}, None, {"batch": 8}, [{"batch": 1}, {"batch": 3}, {"batch": 13}], 1e-4),
        "transformer": (torch.nn.TransformerEncoder(layer, num_layers=2).train(), lambda s: (torch.randn(s["batch"], s["seq"], 32),),
                        {"src": {0: "batch", 1: "seq"}}, None, {"batch": 2, "seq": 6},
                        [{"batch": 1, "seq": 1}, {"batch": 3, "seq": 5}, {"batch": 5, "seq": 11}], 2e-4),
        # 64x64 images: the last stage is 2x2, so train-mode BatchNorm has at
        # least four values per channel even at batch 1 (with one or two its
        # gradient is too ill-conditioned to compare in float32).
        "resnet18": (torchvision.models.resnet18(num_classes=10).train(), lambda s: (torch.randn(s["batch"], 3, 64, 64),),
                     {"x": {0: "batch"}}, None, {"batch": 2}, [{"batch": 1}, {"batch": 3}, {"batch": 5}], 2e-3),
        "causal_attention": (Causal(), lambda s: (torch.randn(s["batch"], s["seq"], 16),), {"x": {0: "batch", 1: "seq"}},
                             {"seq": (1, 32)}, {"batch": 2, "seq": 4}, [{"batch": 1, "seq": 1}, {"batch": 3, "seq": 7}, {"batch": 2, "seq": 32}], 1e-4),
        "batchnorm": (torch.nn.BatchNorm1d(8).train(), lambda s: (torch.randn(s["batch"], 8),), {"input": {0: "batch"}},
                      None, {"batch": 4}, [{"batch": 2}, {"batch": 3}, {"batch": 17}], 1e-4),
        "view_mutation": (ViewMutation(), lambda s: (torch.randn(s["batch"], 6),), {"x": {0: "batch"}}, None, {"batch": 4},
                          [{"batch": 1}, {"batch": 5}, {"batch": 9}], 1e-5),
        "even_batch": (PairMean(), lambda s: (torch.randn(s["batch"], 8),), {"x": {0: "batch"}}, None, {"batch": 4},
                       [{"batch": 2}, {"batch": 6}, {"batch": 10}], 1e-5),
        "var_std": (VarStd(), lambda s: (torch.randn(s["batch"], 3, 6),), {"x": {0: "batch"}}, None, {"batch": 4},
                    [{"batch": 2}, {"batch": 5}, {"batch": 13}], 1e-4),
        "outer": (Outer(), lambda s: (torch.randn(s["batch"]),), {"x": {0: "batch"}}, None, {"batch": 4},
                  [{"batch": 1}, {"batch": 7}, {"batch": 33}], 1e-5),
        "outer_wide": (Outer(), lambda s: (torch.randn(s["batch"]),), {"x": {0: "batch"}}, None, {"batch": 4},
                       [{"batch": 1}, {"batch": 33}], 1e-5),
    }


# Extra compile flags, and what the artifact's kernels must then index with.
FLAGS = {"outer_wide": ["--wide-index"]}
INDEX = {"outer": "int", "outer_wide": "long long"}


# Sizes each artifact must refuse at run time, in one line, writing nothing:
# what its compile assumed (an even batch), and a batch that would divide by
# zero (BatchNorm's unbiased variance at batch 1, which eager refuses too).
REFUSALS = {
    "even_batch": ({"x": (5, 8)}, "dim 0 is 5 (batch), which breaks the guard batch % 2 == 0"),
    "batchnorm": ({"input": (1, 8)}, "dim 0 is 1 (batch), which makes batch - 1 zero, and the artifact divides by it"),
    # 32-bit indices chosen at the hints: a size they cannot reach is refused
    # when the symbols are bound, before anything is allocated.
    "outer": ({"x": (46341,)}, "which makes %mul of the forward span more than 2147483647 elements, beyond what this "
                                "artifact's 32-bit indices reach (batch*batch <= 2147483647; compile with --wide-index"),
}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def eager(module, args, names, grad_outputs):
    """What PyTorch computes: outputs, parameter gradients, mutated tensors."""
    m = copy.deepcopy(module)
    args = [a.clone() for a in args]
    outs = m(*args)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    res = {f"output.{i}": o.detach() for i, o in enumerate(outs)}
    params = [(n, p) for n, p in m.named_parameters() if p.requires_grad]
    diff = [(o, g) for o, g in zip(outs, grad_outputs) if o.requires_grad]
    grads = torch.autograd.grad([o for o, _ in diff], [p for _, p in params], [g for _, g in diff], allow_unused=True) if params else []
    for (n, p), g in zip(params, grads):
        res[f"grad.{n}"] = torch.zeros_like(p) if g is None else g
    state = dict(m.named_buffers())
    state.update({n: a for n, a in zip(names, args)})
    return res, state


def relu_margin(module, args):
    """The smallest |input| of any ReLU in a float64 forward, relative to
    that ReLU input's largest: how close the data sits to ReLU's kink."""
    m = copy.deepcopy(module).double()
    margins = []

    def pre(mod, inp):
        v = inp[0].detach().abs()
        margins.append((v.min() / v.max().clamp_min(1e-300)).item())

    for mod in m.modules():
        if isinstance(mod, torch.nn.ReLU):
            mod.register_forward_pre_hook(pre)
    with torch.no_grad():
        m(*[a.double() if a.is_floating_point() else a for a in args])
    return min(margins, default=1.0)


def draw_away_from_kinks(module, make_args, sizes):
    """Note [Inputs away from kinks]: a float32 artifact and float32 eager
    round differently (another summation order is another last bit), so an
    activation within rounding of ReLU's kink takes its sign from the
    rounding, and every gradient upstream of it moves by that element's
    whole gradient: not a defect of either.  (resnet18 at batch 5 with seed
    2 put a layer1.1 pre-activation 5e-8 from 0; the row kernels of issue 34
    summed the batch-norm statistics in another order and the ReLU flipped.)
    Inputs are drawn, from seed 2 on, until no ReLU input of a float64
    forward is within 2e-7 of its largest magnitude from zero (float32
    rounds such values to either side)."""
    for seed in range(2, 22):
        torch.manual_seed(seed)
        args = make_args(sizes)
        if relu_margin(module, args) > 2e-7:
            return args
    raise SystemExit(f"dynamic_test: no inputs at {sizes} keep every ReLU input away from 0 in 20 draws")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aotc")
    ap.add_argument("--backend", action="append")
    ap.add_argument("--only", action="append")
    ap.add_argument("--work")
    a = ap.parse_args()
    backends = a.backend or ["reference", "emulate"]
    work = a.work or tempfile.mkdtemp(prefix="aotc-dynamic-")
    bad = 0
    for name, (module, make_args, dynamic, ranges, hint, others, tol) in cases().items():
        if a.only and name not in a.only:
            continue
        prefix = os.path.join(work, name)
        torch.manual_seed(1)
        fx_export.export(module, make_args(hint), prefix, dynamic=dynamic, ranges=ranges)
        art = prefix + ".art"
        rc, _, err = run([a.aotc, "compile", prefix + ".json", "-o", art] + FLAGS.get(name, []))
        if rc != 0:
            print(f"FAIL {name}: compile: {err.strip()}")
            bad += 1
            continue
        if name in INDEX:
            # The index type of the kernels over the batch x batch value, and
            # the manifest's limits: some with 32-bit indices, none with 64.
            with open(os.path.join(art, "manifest.json")) as f:
                limits = json.load(f).get("limits", [])
            kernels = "".join(open(os.path.join(art, "kernels", k)).read() for k in sorted(os.listdir(os.path.join(art, "kernels")))
                              if k.endswith(".cu"))
            wide = INDEX[name] == "long long"
            ok = (("aotc_i64 i =" in kernels) == wide and ("int i =" in kernels) != wide and bool(limits) != wide)
            print(("ok   " if ok else "FAIL ") + f"{name}: {INDEX[name]} indices, limits {[l['expr'] for l in limits]}")
            bad += not ok
        if name == "transformer":
            # The probes run on -j threads; the artifact must not depend on it.
            rc1, _, e1 = run([a.aotc, "compile", prefix + ".json", "-o", art + ".j1", "-j", "1"])
            rc2, _, e2 = run([a.aotc, "compile", prefix + ".json", "-o", art + ".j2", "-j", "2"])
            same = rc1 == 0 and rc2 == 0 and subprocess.run(["diff", "-r", "-q", art + ".j1", art + ".j2"], capture_output=True).returncode == 0
            print(("ok   " if same else "FAIL ") + f"{name}: the artifact is the same bytes for -j 1 and -j 2 {e1.strip()} {e2.strip()}")
            bad += not same
        rc, out, _ = run([sys.executable, os.path.join(HERE, "validate_json.py"), os.path.join(HERE, "..", "schemas", "manifest.schema.json"),
                          os.path.join(art, "manifest.json")])
        if rc != 0:
            print(f"FAIL {name}: the manifest does not validate: {out.strip()}")
            bad += 1
        names = list(inspect.signature(module.forward).parameters)
        for sizes in [hint] + others:
            args = draw_away_from_kinks(module, make_args, sizes)
            torch.manual_seed(3)
            m = copy.deepcopy(module)
            outs = m(*[x.clone() for x in args])
            outs = outs if isinstance(outs, (tuple, list)) else (outs,)
            gouts = [torch.randn_like(o) if o.requires_grad else None for o in outs]
            want, state = eager(module, args, names, gouts)
            inputs = os.path.join(work, f"{name}.in.safetensors")
            fx_export.write_safetensors(inputs, dict(zip(names, args)))
            gfile = os.path.join(work, f"{name}.grad.safetensors")
            fx_export.write_safetensors(gfile, {f"grad_output.{i}": g for i, g in enumerate(gouts) if g is not None})
            for be in backends:
                out = os.path.join(work, f"{name}.{be}.out.safetensors")
                rc, _, err = run([a.aotc, "run", art, "--inputs", inputs, "--grad-outputs", gfile, "--backend", be, "--out", out])
                label = f"{name} {sizes} {be}"
                if rc != 0:
                    print(f"FAIL {label}: {err.strip()}")
                    bad += 1
                    continue
                got = load(out)
                errors = []
                for k, v in got.items():
                    if k.startswith("after_"):
                        ref = state.get(k.split(".", 1)[1])
                        if ref is None:
                            errors.append(f"{k}: no eager tensor of this name")
                            continue
                    elif k in want:
                        ref = want[k]
                    else:
                        errors.append(f"{k}: not computed by eager")
                        continue
                    ref = ref.detach().double().numpy()
                    if ref.shape != v.shape or not np.allclose(v, ref, atol=tol, rtol=tol, equal_nan=True):
                        d = np.abs(v - ref).max() if ref.shape == v.shape else f"shape {v.shape} vs {ref.shape}"
                        errors.append(f"{k}: max difference {d}")
                for k in want:
                    if k not in got:
                        errors.append(f"{k}: missing")
                if errors:
                    print(f"FAIL {label}: " + "; ".join(errors))
                    bad += 1
                else:
                    print(f"ok   {label}: {len(got)} tensors")
        if name in REFUSALS:
            shapes, fragment = REFUSALS[name]
            bad_in = os.path.join(work, "refused.safetensors")
            fx_export.write_safetensors(bad_in, {k: torch.randn(*v) for k, v in shapes.items()})
            for be in backends:
                out = os.path.join(work, "refused.out.safetensors")
                rc, _, err = run([a.aotc, "run", art, "--inputs", bad_in, "--backend", be, "--out", out])
                lines = err.strip().splitlines()
                if rc == 0 or len(lines) != 1 or fragment not in err:
                    print(f"FAIL {name} {shapes} {be}: not refused as expected: rc {rc}, {err.strip()}")
                    bad += 1
                elif os.path.exists(out):
                    print(f"FAIL {name} {shapes} {be}: wrote results")
                    bad += 1
                else:
                    print(f"ok   {name} {shapes} {be} refused: {lines[0]}")
    print("dynamic_test:", "FAILED" if bad else "all passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
