#!/usr/bin/python3
"""bench_partition: bytes saved for the backward, per program, by aotc's
`default` and `min-cut` partitioners and by functorch 1.13's aot_function
with min_cut_rematerialization_partition on the same program, in the same
run, with the ratio aotc min-cut / functorch.  Also runs functorch's compiled
function and reports every program where its results (outputs, gradients,
mutated inputs after forward and after backward) differ from eager.

    /usr/bin/python3 scripts/bench_partition.py [--aotc build/tools/aotc] [--only SUBSTR]

Programs: the FX fixtures, the mutation conformance suite, and a few larger
models built from the ops aotc supports.  Saved bytes count every saved
tensor at numel x element size (a saved view counts its own elements), for
both compilers alike.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import warnings

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "testdata"))
sys.path.insert(0, os.path.join(ROOT, "testdata", "fx"))
sys.path.insert(0, os.path.join(ROOT, "testdata", "conformance"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import gen as conformance  # noqa: E402
import gen_fixtures  # noqa: E402
from compare_safetensors import load  # noqa: E402
from fx_export import _functional_call, _input_names, export  # noqa: E402
from gen_util import reference  # noqa: E402

warnings.filterwarnings("ignore")


class MlpBn(torch.nn.Module):
    """Linear/BatchNorm/activation stack with a squared-error loss."""

    def __init__(self, width=256, depth=3):
        super().__init__()
        layers, d = [], 64
        for _ in range(depth):
            layers += [torch.nn.Linear(d, width), torch.nn.BatchNorm1d(width), torch.nn.Tanh()]
            d = width
        self.body = torch.nn.Sequential(*layers)
        self.head = torch.nn.Linear(d, 10)

    def forward(self, x, target):
        y = self.head(self.body(x))
        return ((y - target) * (y - target)).mean()


class GatedMlp(torch.nn.Module):
    """sigmoid-gated feed-forward blocks with residuals: many cheap pointwise ops."""

    def __init__(self, d=128, hidden=512, blocks=2):
        super().__init__()
        self.up = torch.nn.ModuleList(torch.nn.Linear(d, hidden) for _ in range(blocks))
        self.gate = torch.nn.ModuleList(torch.nn.Linear(d, hidden) for _ in range(blocks))
        self.down = torch.nn.ModuleList(torch.nn.Linear(hidden, d) for _ in range(blocks))

    def forward(self, x):
        for up, gate, down in zip(self.up, self.gate, self.down):
            h = up(x)
            x = x + down(h * torch.sigmoid(h) * torch.sigmoid(gate(x)))
        return x.sum()


def models():
    torch.manual_seed(0)
    yield "model_mlp_bn", MlpBn(), (torch.randn(32, 64), torch.randn(32, 10))
    yield "model_gated_mlp", GatedMlp(), (torch.randn(16, 128),)


def programs():
    for name, model, args in gen_fixtures.programs():
        yield "fx/" + name, model, args
    for name, model, args in conformance.scenarios():
        yield "conf/" + name, model, args
    for name, model, args in models():
        yield name, model, args


def aotc_saved_bytes(aotc, prefix, partitioner, tmp):
    out = os.path.join(tmp, "art_" + partitioner)
    r = subprocess.run([aotc, "-q", "compile", prefix + ".json", "-o", out, "--arch", "sm_90",
                        "--partitioner", partitioner], capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[0] if r.stderr else "failed"
    with open(os.path.join(out, "manifest.json")) as f:
        m = json.load(f)
    size = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "bool": 1, "i8": 1, "i16": 2, "u8": 1, "u16": 2, "u32": 4, "u64": 8}
    total = 0
    for s in m["saved"]:
        n = 1
        for d in s["shape"]:
            n *= d
        total += n * size[s["dtype"]]
    return total, None


def functorch_run(model, args, inputs, expected):
    """Saved bytes of functorch's min-cut partition, and whether its compiled
    function reproduces eager's results."""
    from functorch.compile import aot_function, make_boxed_func, min_cut_rematerialization_partition
    saved = {}

    def fw(gm, ex):
        return make_boxed_func(gm)

    def bw(gm, ex):
        total = 0
        for n in gm.graph.nodes:
            if n.op == "placeholder" and not n.name.startswith("tangents"):
                m = n.meta.get("tensor_meta", n.meta.get("val"))
                if m is not None and hasattr(m, "shape"):
                    numel = 1
                    for d in m.shape:
                        numel *= int(d)
                    total += numel * torch.empty((), dtype=m.dtype).element_size()
        saved["bytes"] = total
        return make_boxed_func(gm)

    is_module = isinstance(model, torch.nn.Module)
    m = copy.deepcopy(model) if is_module else model
    state = {}
    if is_module:
        state.update(dict(m.named_parameters()))
        state.update(dict(m.named_buffers()))
    names = list(state)
    user_names = _input_names(model, len(args), is_module)
    tensors = [t.detach().clone().requires_grad_(t.requires_grad) for t in state.values()]
    user = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]

    def flat(*a):
        if is_module:
            return _functional_call(m, dict(zip(names, a[:len(names)])), tuple(a[len(names):]))
        return m(*a)

    compiled = aot_function(flat, fw_compiler=fw, bw_compiler=bw, partition_fn=min_cut_rematerialization_partition)
    everything = dict(zip(names, tensors))
    everything.update(zip(user_names, user))
    out = compiled(*tensors, *user)
    outs = [out] if isinstance(out, torch.Tensor) else [t for t in out]
    got = {}
    for n, t in everything.items():
        got["after_forward." + n] = t.detach().clone()
    diff, grads = [], []
    for i, o in enumerate(outs):
        got[f"output.{i}"] = o.detach().clone()
        if o.requires_grad and f"grad_output.{i}" in inputs:
            diff.append(o)
            grads.append(torch.from_numpy(inputs[f"grad_output.{i}"]).to(o.dtype))
    if diff:
        torch.autograd.backward(diff, grads)
    for n, t in everything.items():
        if t.grad is not None:
            got["grad." + n] = t.grad.detach().clone()
        got["after_backward." + n] = t.detach().clone()
    bad = []
    for k, v in expected.items():
        if k.startswith("grad.") and k not in got:
            g = torch.zeros(tuple(v.shape))
        elif k not in got:
            bad.append(k)
            continue
        else:
            g = got[k].double()
        w = torch.from_numpy(v).double()
        if tuple(g.shape) != tuple(w.shape) or not torch.allclose(g, w, rtol=1e-4, atol=1e-4):
            bad.append(k)
    return saved.get("bytes"), bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--aotc", default=os.path.join(ROOT, "build", "tools", "aotc"))
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    rows = []
    print(f"{'program':44} {'default':>9} {'min-cut':>9} {'functorch':>9} {'ratio':>6}  functorch vs eager")
    for name, model, args in programs():
        if a.only not in name:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            prefix = os.path.join(tmp, "p")
            export(model, args, prefix)
            reference("p", model, args, tmp)
            inputs = load(prefix + ".inputs.safetensors")
            expected = load(prefix + ".expected.safetensors")
            d, derr = aotc_saved_bytes(a.aotc, prefix, "default", tmp)
            mc, merr = aotc_saved_bytes(a.aotc, prefix, "min-cut", tmp)
            try:
                fb, bad = functorch_run(model, args, inputs, expected)
                verdict = "matches" if not bad else "DIFFERS: " + ", ".join(sorted(bad)[:4])
            except Exception as e:  # functorch 1.13 rejects some programs outright
                fb, verdict = None, "ERROR: " + (str(e).splitlines() or [type(e).__name__])[0][:70]
        ratio = f"{mc / fb:.2f}" if mc is not None and fb else ("-" if mc is None else "n/a")
        fmt = lambda x: "-" if x is None else str(x)  # noqa: E731
        print(f"{name:44} {fmt(d):>9} {fmt(mc):>9} {fmt(fb):>9} {ratio:>6}  {verdict}", flush=True)
        if derr or merr:
            print(f"    aotc: {derr or merr}")
        rows.append((name, d, mc, fb, verdict))
    comparable = [r for r in rows if r[2] is not None and r[3] is not None]
    le = sum(1 for r in comparable if r[2] <= r[3])
    lt = sum(1 for r in comparable if r[2] < r[3])
    # Where functorch's program is wrong (e.g. it never applies a backward
    # mutation, so it saves nothing for it), fewer bytes is no merit.
    correct = [r for r in comparable if r[4] == "matches"]
    cle = sum(1 for r in correct if r[2] <= r[3])
    clt = sum(1 for r in correct if r[2] < r[3])
    worse = [r[0] for r in comparable if r[2] > r[3]]
    mc_le_default = sum(1 for r in rows if r[1] is not None and r[2] is not None and r[2] <= r[1])
    print()
    print(f"where functorch matches eager: aotc min-cut saves no more than functorch on {cle}/{len(correct)} programs, "
          f"fewer on {clt}")
    print(f"all programs both compile: no more on {le}/{len(comparable)}, fewer on {lt}; more on: {', '.join(worse) or 'none'}")
    print(f"aotc min-cut saves no more than aotc default on {mc_le_default}/{sum(1 for r in rows if r[1] is not None)}")
    print(f"total saved bytes: default {sum(r[1] or 0 for r in comparable)}, min-cut {sum(r[2] or 0 for r in comparable)}, "
          f"functorch {sum(r[3] or 0 for r in comparable)}")
    differs = [r[0] for r in rows if r[4] != "matches"]
    print(f"functorch differs from eager (or fails) on {len(differs)} programs: {', '.join(differs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
