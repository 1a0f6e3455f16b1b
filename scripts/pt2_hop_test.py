#!/usr/bin/env python3
"""The higher-order ops of a .pt2 archive against PyTorch (issue 46 item 3):
torch.autocast regions (Note [Autocast regions], Note [Inlined grad
regions]) and a surviving torch.cond (Note [pt2 cond]).

A `with torch.autocast("cuda", dtype):` block is the higher-order op
wrap_with_autocast in the training IR.  On this machine (no CUDA) export
records such a block disabled, as eager runs it here; on a CUDA machine it
records it enabled, with the dtypes CUDA autocast gives every node.  So each
program is checked three ways:

 1. as exported here (enabled=False recorded): `aotc compile` (inference and
    --train) on the reference backend matches eager float32, which is what
    eager runs here (a true eager comparison);
 2. as a CUDA machine exports it: the program exported again under
    FakeTensorMode with fake CUDA tensors (CUDA's availability checks
    patched, PyTorch's AutocastCUDA dispatch key then runs on the fake
    tensors), its program JSON put into the first archive in place of the
    first (the weights are the same).  `aotc graph --stage autocast` must give
    every tensor the dtype PyTorch's CUDA autocast recorded for it
    (tensor_values, in the region and after it) -- PyTorch's own lists
    against aotc's autocast pass;
 3. that archive's results (inference and --train, reference backend)
    against eager with CUDA autocast's policy applied per op on the CPU
    (precision_test.py's ExplicitCasts; its op lists are aotc's table,
    include/aotc/ops/autocast.def, so this checks the numbers of the regions'
    scoping and casts, not the lists, which 2 checks), at a half-precision
    tolerance;
 4. a torch.autocast("cpu") region is refused in one line naming the archive,
    the node and the source line.

A torch.cond with a data-dependent predicate (two outputs; the predicate
read from the input, so both values are reached by the same artifact) is
compiled for inference and run on reference and emulate with inputs that
take each branch, against eager; with --train, and with a branch that draws
random numbers (dropout), it is refused in one line naming the node.

A tied weight (an embedding and a head sharing one tensor) with a nested
result is trained and compared with eager (Note [pt2 tied weights]).

Usage: pt2_hop_test.py AOTC [--work DIR]   (under the pinned PyTorch 2.x)
"""
import argparse
import contextlib
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings
import zipfile

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
from fx_export import write_safetensors  # noqa: E402
from precision_test import ExplicitCasts  # noqa: E402
from compare_safetensors import load as read_safetensors  # noqa: E402  {name: float64 array}


class Ctx:
    """How a program's autocast blocks run: torch.autocast (export), or
    ExplicitCasts (the reference of check 3; a disabled block turns it off)."""

    def __init__(self, explicit=False):
        self.explicit = explicit

    def __call__(self, device, dtype=torch.bfloat16, enabled=True):
        if not self.explicit:
            return torch.autocast(device, dtype=dtype, enabled=enabled)
        if enabled:
            return ExplicitCasts(dtype)
        return torch.utils._python_dispatch._disable_current_modes()


class Partial(nn.Module):
    """A bf16 block in the middle: a Linear (lowered), softmax (float32
    list), a product that follows its bf16 operand, a disabled block inside
    (float32 again); after the block a bf16 result promotes with a float32
    one, as eager's type promotion does."""

    def __init__(self, ctx):
        super().__init__()
        self.ctx = ctx
        self.l0, self.l1, self.l2 = nn.Linear(8, 16), nn.Linear(16, 16), nn.Linear(8, 4)

    def forward(self, x):
        h = torch.relu(self.l0(x))
        with self.ctx("cuda", torch.bfloat16):
            y = self.l1(h)
            p = torch.softmax(y, -1)
            q = y * 2
            with self.ctx("cuda", enabled=False):
                r = self.l2(x)
        return p.sum(-1, keepdim=True) * r + (q + h).mean(-1, keepdim=True)


class ConvHalf(nn.Module):
    """A float16 block around conv (no bias: through train-mode BatchNorm its
    gradient is zero, its relative error noise) + BatchNorm (train mode:
    running statistics updated) + matmul; a no_grad block after it (not inside: a
    no_grad block nested in an autocast block loses its grad mode in 2.15's
    training IR, which splits the autocast block around it into
    wrap_with_autocast ops and keeps no wrap_with_set_grad_enabled)."""

    def __init__(self, ctx):
        super().__init__()
        self.ctx = ctx
        self.c, self.b = nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4)
        self.w = nn.Parameter(torch.randn(4, 3) * 0.3)

    def forward(self, x):
        with self.ctx("cuda", torch.float16):
            y = torch.relu(self.b(self.c(x)))
            z = y.mean((2, 3)) @ self.w
        with torch.no_grad():
            s = y.abs().mean()
        return z.float() * s


class CpuBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 4)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.l(x)


class Cond(nn.Module):
    def __init__(self, dropout=False):
        super().__init__()
        self.l = nn.Linear(4, 5)
        self.dropout = dropout

    def forward(self, x):
        h = self.l(x)

        def yes(a, b):
            return torch.relu(a) * 2, (a @ a.t()).softmax(-1)

        def no(a, b):
            a = nn.functional.dropout(a, 0.5, training=True) if self.dropout else a
            return a.sin() - 1, b @ b.t() - 1

        p, q = torch.cond(x.sum() > 0, yes, no, (h, x))
        return p.mean(-1, keepdim=True) + q


def check_cond(aotc, work, report):
    torch.manual_seed(0)
    m = Cond()
    x = torch.randn(3, 4).abs() + 0.1
    ep = torch.export.export(m, (x,))
    if not any("cond" in str(n.target) for n in ep.graph.nodes):
        report("cond survives export", ["export removed the cond"])
        return
    model = os.path.join(work, "cond.pt2")
    torch.export.save(ep, model)
    art = os.path.join(work, "cond")
    subprocess.run([aotc, "compile", model, "-o", art, "-q"], check=True)
    for sign in (1, -1):
        xi = sign * x
        want = m(xi).detach()
        for backend in ("reference", "emulate"):
            inp, res = (os.path.join(work, f"cond_{sign}_{backend}{s}.safetensors") for s in ("_in", "_out"))
            write_safetensors(inp, {"x": xi})
            subprocess.run([aotc, "run", art, "--inputs", inp, "--out", res, "--backend", backend, "--forward-only", "-q",
                            "--cache-dir", os.path.join(work, "cache")], check=True)
            e = relerr(read_safetensors(res)["output.0"], want.double().numpy())
            report(f"cond, predicate {sign > 0}, {backend}: eager", [f"relative error {e:.2e}"] if e > 1e-5 else [],
                   f", relative error {e:.2e}")
    for what, path, extra, needle in (
            ("--train", model, ["--train"], "not with --train"),
            ("a branch with dropout", None, [], "draws random numbers (aten.dropout.default)")):
        if path is None:
            path = os.path.join(work, "cond_dropout.pt2")
            torch.export.save(torch.export.export(Cond(dropout=True), (x,)), path)
        r = subprocess.run([aotc, "compile", path, "-o", os.path.join(work, "refused"), "-q"] + extra, capture_output=True, text=True)
        line = r.stderr.strip()
        good = r.returncode == 1 and len(line.splitlines()) == 1 and os.path.basename(path) in line and needle in line
        good = good and ("node 'cond' (higher_order.cond) at pt2_hop_test.py:" in line or "dropout" in what)
        report(f"cond with {what} is refused in one line", [] if good else [f"exit {r.returncode}: {line}"])


class Tied(nn.Module):
    """A head tied to the embedding (one tensor, two state_dict names) and a
    nested result."""

    def __init__(self):
        super().__init__()
        self.emb, self.head = nn.Embedding(10, 4), nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight
        self.l = nn.Linear(4, 4)

    def forward(self, i, x):
        e = self.emb(i)
        return {"logits": self.head(self.l(e) + x), "aux": (e.sum(-1), x * 2)}


def check_tied(aotc, work, report):
    """Note [pt2 tied weights]: one input, its gradient eager's .grad (both
    uses' sum) as grad.emb.weight, head.weight its alias; the nested result's
    leaves are output.<i> in pytree order with their paths."""
    torch.manual_seed(0)
    m = Tied()
    i, x = torch.tensor([1, 2, 3, 1]), torch.randn(4, 4)
    model = os.path.join(work, "tied.pt2")
    torch.export.save(torch.export.export(m, (i, x)), model)
    out = m(i, x)
    leaves, _ = torch.utils._pytree.tree_flatten(out)
    gen = torch.Generator().manual_seed(1)
    gouts = [torch.randn(t.shape, generator=gen) for t in leaves[:2]]  # aux.1 (x * 2) reaches no parameter
    sum((t * g).sum() for t, g in zip(leaves, gouts)).backward()
    art = os.path.join(work, "tied")
    subprocess.run([aotc, "compile", model, "-o", art, "--train", "-q"], check=True)
    listing = subprocess.run([aotc, "inspect", model, "--train"], capture_output=True, text=True, check=True).stdout
    bad = []
    if "alias:head.weight" not in listing:
        bad.append(f"emb.weight does not list head.weight as its alias:\n{listing}")
    for k, path in enumerate(["logits", "aux.0", "aux.1"]):
        if f"output.{k} '{path}'" not in listing:
            bad.append(f"output.{k} is not listed with its path '{path}'")
    inp, gpath = os.path.join(work, "tied_in.safetensors"), os.path.join(work, "tied_gout.safetensors")
    write_safetensors(inp, {"i": i, "x": x})
    write_safetensors(gpath, {f"grad_output.{k}": g for k, g in enumerate(gouts)})
    for backend in ("reference", "emulate"):
        res = os.path.join(work, f"tied_{backend}.safetensors")
        subprocess.run([aotc, "run", art, "--inputs", inp, "--grad-outputs", gpath, "--out", res, "--backend", backend, "-q",
                        "--cache-dir", os.path.join(work, "cache")], check=True)
        got = read_safetensors(res)
        want = {f"output.{k}": t for k, t in enumerate(leaves)}
        want.update({f"grad.{n}": p.grad for n, p in m.named_parameters()})  # emb.weight once: eager's one tensor
        for k, w in want.items():
            e = relerr(got[k], w.detach().double().numpy()) if k in got else float("inf")
            if e > 1e-4:
                bad.append(f"{backend}: {k}: relative error {e:.2e}" if k in got else f"{backend}: {k} missing (has {sorted(got)})")
        if "grad.head.weight" in got:
            bad.append(f"{backend}: the tied weight's gradient is also returned as grad.head.weight")
    report("tied embedding and head, nested result, --train (reference, emulate): eager", bad)


PROGRAMS = {"partial": (Partial, (6, 8), 3e-2), "conv_half": (ConvHalf, (2, 3, 6, 6), 1e-2)}


@contextlib.contextmanager
def fake_cuda():
    """torch.autocast("cuda") enabled on a machine without CUDA, for fake
    CUDA tensors."""
    import torch.cuda.amp.common as common
    saved = common.amp_definitely_not_available, torch.cuda.is_bf16_supported
    common.amp_definitely_not_available = lambda: False
    torch.cuda.is_bf16_supported = lambda *a, **k: True
    try:
        yield
    finally:
        common.amp_definitely_not_available, torch.cuda.is_bf16_supported = saved


def cuda_program_json(ctor, shape):
    """The program JSON a CUDA machine's export writes (check 2)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    with fake_cuda(), FakeTensorMode(allow_non_fake_inputs=True):
        with torch.device("cuda"):
            m = ctor(Ctx()).train()
            x = torch.randn(shape)
        ep = torch.export.export(m, (x,))
    from torch._export.serde.serialize import serialize
    return json.loads(serialize(ep).exported_program)


def replace_program(src, dst, program):
    with zipfile.ZipFile(src) as z:
        entries = [(i.filename, z.read(i.filename)) for i in z.infolist()]
    hits = [n for n, _ in entries if n.endswith("/models/model.json")]
    assert len(hits) == 1, hits
    with zipfile.ZipFile(dst, "w") as z:
        for n, b in entries:
            z.writestr(n, json.dumps(program).encode() if n == hits[0] else b)


def recorded_dtypes(program):
    """{node name: (dtype, shape)} from tensor_values, the regions' nodes
    named as the translation names them (`<op>.<name>`, Note [Inlined grad
    regions])."""
    codes = {7: "f32", 13: "bf16", 6: "f16", 5: "i64", 12: "bool"}
    out = {}

    def walk(graph, prefix):
        for name, tv in graph["tensor_values"].items():
            shape = ",".join(str(d.get("as_int")) for d in tv["sizes"])
            out[prefix + name] = (codes.get(tv["dtype"], str(tv["dtype"])), shape)
        for n in graph["nodes"]:
            for i in n["inputs"]:
                if "as_graph" in i["arg"]:
                    walk(i["arg"]["as_graph"]["graph"], prefix + n["name"] + ".")
    walk(program["graph_module"]["graph"], "")
    return out


def ir_dtypes(aotc, model, train, recorded):
    """{node name: dtype} after the autocast pass: for each recorded node, the
    dtype of the last IR value built for it (its location; the autocast
    pass's casts of its results come last) with the recorded shape -- the
    op's result as later ops read it."""
    r = subprocess.run([aotc, "graph", model, "--stage", "autocast", "--format", "ir"] + (["--train"] if train else []),
                       capture_output=True, text=True, check=True)
    have = {}
    for dtype, shape, loc in re.findall(r"%[\w.\-]+ : (\w+)\[([^\]]*)\] = .*loc\(\"([^\"]+)\"", r.stdout):
        if loc in recorded and recorded[loc][1] == shape:
            have[loc] = dtype
    return have, r.stdout


def relerr(got, want):
    want = np.asarray(want, dtype=np.float64)
    return float(np.max(np.abs(got - want))) / max(1e-3, float(np.max(np.abs(want))))


def compare(name, aotc, work, ctor, shape, tol, explicit_ref, model, train):
    torch.manual_seed(0)
    ref = ctor(Ctx(explicit_ref)).train()
    x = torch.randn(shape)
    before = {k: v.clone() for k, v in ref.named_buffers()}
    if explicit_ref:
        out = ref(x)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = ref(x)
    gout = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
    if train:
        out.backward(gout)
    tag = f"{name}_{'explicit' if explicit_ref else 'eager'}_{'train' if train else 'infer'}"
    art, inp, gpath, res = (os.path.join(work, tag + s) for s in ("", "_in.safetensors", "_gout.safetensors", "_out.safetensors"))
    subprocess.run([aotc, "compile", model, "-o", art, "-q"] + (["--train"] if train else []), check=True)
    write_safetensors(inp, {"x": x})
    write_safetensors(gpath, {"grad_output.0": gout})
    cmd = [aotc, "run", art, "--inputs", inp, "--out", res, "--backend", "reference", "-q"]
    subprocess.run(cmd + (["--grad-outputs", gpath] if train else ["--forward-only"]), check=True)
    got = read_safetensors(res)
    bad, worst = [], 0.0
    want = {"output.0": out.detach()}
    want.update({f"after_forward.{k}": v for k, v in ref.named_buffers() if not torch.equal(v, before[k])})
    if train:
        want.update({f"grad.{k}": p.grad for k, p in ref.named_parameters()})
    for k, w in want.items():
        if k not in got:
            bad.append(f"{k} missing (has {sorted(got)})")
            continue
        e = relerr(got[k], w.double().numpy())
        worst = max(worst, e)
        if e > (tol if k.startswith("grad.") or k == "output.0" else max(tol, 1e-4)):
            bad.append(f"{k}: relative error {e:.2e}")
    return bad, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("aotc")
    ap.add_argument("--work")
    a = ap.parse_args()
    aotc = os.path.abspath(a.aotc)
    work = a.work or tempfile.mkdtemp(prefix="aotc_pt2_autocast_")
    os.makedirs(work, exist_ok=True)
    ok = True

    def report(what, bad, extra=""):
        nonlocal ok
        ok = ok and not bad
        print(f"{'FAIL' if bad else 'ok'} {what}{extra}")
        for b in bad:
            print(f"  {b}")

    for name, (ctor, shape, tol) in PROGRAMS.items():
        torch.manual_seed(0)
        m = ctor(Ctx()).train()
        x = torch.randn(shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "CUDA is not available ... Disabling autocast"
            ep = torch.export.export(copy.deepcopy(m), (x,))
        here = os.path.join(work, f"{name}.pt2")
        torch.export.save(ep, here)
        for train in (False, True):
            bad, worst = compare(name, aotc, work, ctor, shape, 2e-3 if train else 1e-4, False, here, train)
            report(f"{name} as exported here (autocast disabled), {'--train' if train else 'inference'}: eager float32", bad,
                   f", worst relative error {worst:.2e}")

        program = cuda_program_json(ctor, shape)
        cuda = os.path.join(work, f"{name}_cuda.pt2")
        replace_program(here, cuda, program)
        recorded = recorded_dtypes(program)
        for train in (False, True):
            have, ir = ir_dtypes(aotc, cuda, train, recorded)
            bad = [f"{v}: PyTorch's CUDA autocast recorded {d}, aotc gives {have.get(v)}"
                   for v, (d, _) in sorted(recorded.items()) if v in have and have[v] != d]
            seen = len(have)
            lowered = sum(recorded[v][0] in ("bf16", "f16") for v in have)
            if seen < 8 or not lowered:
                bad.append(f"only {seen} of {len(recorded)} recorded values ({lowered} half precision) found in the IR")
            report(f"{name} as a CUDA machine exports it, {'--train' if train else 'inference'}: dtypes after autocast", bad,
                   f", {seen} values as PyTorch recorded ({lowered} half precision)")
            if bad:
                with open(os.path.join(work, f"{name}_{train}.ir"), "w") as f:
                    f.write(ir)
        for train in (False, True):
            bad, worst = compare(name, aotc, work, ctor, shape, tol, True, cuda, train)
            report(f"{name} as a CUDA machine exports it, {'--train' if train else 'inference'}: eager with CUDA autocast's "
                   f"casts applied per op (tolerance {tol:.0e})", bad, f", worst relative error {worst:.2e}")

    ep = torch.export.export(CpuBlock(), (torch.randn(2, 4),))
    cpu = os.path.join(work, "cpu_block.pt2")
    torch.export.save(ep, cpu)
    r = subprocess.run([aotc, "compile", cpu, "-o", os.path.join(work, "refused"), "-q"], capture_output=True, text=True)
    line = r.stderr.strip()
    good = (r.returncode == 1 and len(line.splitlines()) == 1 and "cpu_block.pt2" in line and "wrap_with_autocast" in line
            and "pt2_hop_test.py:" in line and 'torch.autocast("cpu")' in line)
    report("a torch.autocast(\"cpu\") region is refused in one line", [] if good else [f"exit {r.returncode}: {line}"])
    check_cond(aotc, work, report)
    check_tied(aotc, work, report)
    print("all higher-order ops match PyTorch" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
