#!/usr/bin/env python3
"""Issue 45 item 3: the bytes a training step must move, beside what eager
PyTorch moves and what aotc's artifact moves, for resnet18, mobilenet_v2 and
the TransformerEncoder at scripts/bench_gpu.py's sizes, in fp32 and bf16.

    python scripts/traffic_ideal.py [[--aotc] AOTC] [--batch N] [--models ...]
                                    [--precisions fp32 bf16] [--json OUT] [--work DIR]
    python scripts/traffic_ideal.py AOTC --selftest   (hand-counted small steps)

Runs on the CPU (PyTorch 2.x, or Debian's 1.13).  Per model and precision:

  ideal  fixed by PyTorch, not by aotc's choices: every graph input (x and
         the grad output), parameter and buffer read once; the output, every
         parameter's gradient and every buffer the step mutates (BatchNorm's
         running statistics) written once; and the tensors eager autograd
         saves for the backward, seen by torch.autograd.graph.
         saved_tensors_hooks and deduplicated by storage (the union of the
         byte ranges saved from each storage), written once and read once --
         except those that are a parameter, buffer, the input or the output,
         which are only read again.
  eager  every ATen op eager runs for the step (forward under bf16 autocast
         for bf16, backward outside it, as bench_gpu.py runs it), seen by a
         TorchDispatchMode: the bytes of its tensor operands read plus its
         results written (each tensor's distinct elements: an expanded
         operand counts once), and the operands its schema marks written
         (in place, out=, running statistics); views, allocations and
         metadata ops move nothing.  Counted on the CPU: CPU autocast's op
         lists and the CPU's kernels (CUDA's cuDNN batch norm and attention
         differ in their saved statistics, not in the activations).
  aotc   with --aotc: the model exported with tools/fx_export.py, compiled
         `--arch sm_90 --precision P`, and counted by `aotc inspect ART
         --roofline --json` (step.bytes: every launch's bytes and the
         library calls' operands, by Note [Roofline]'s rule).

Prints a table (GiB per training step, and aotc / ideal, aotc / eager,
eager / ideal) and writes it all as JSON with --json (per model and
precision, and eager's ten op names with the most bytes).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
from torch.utils._pytree import tree_flatten

try:
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError:  # pragma: no cover -- PyTorch < 1.13
    TorchDispatchMode = None

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))

GIB = 2.0 ** 30


def storage_of(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.data_ptr()


def distinct_bytes(t):
    """The bytes of a tensor's distinct elements (a broadcast dimension, stride 0, counts once)."""
    if t.numel() == 0:
        return 0
    n = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            n *= size
    return n * t.element_size()


def byte_range(t):
    """[start, end) of the bytes a tensor covers in its storage."""
    es = t.element_size()
    start = t.storage_offset() * es
    if t.numel() == 0:
        return start, start
    last = sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride()))
    return start, start + (last + 1) * es


def union_bytes(ranges):
    total, end = 0, None
    for a, b in sorted(ranges):
        if end is None or a >= end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


# Ops that allocate or describe and move no data.
NO_TRAFFIC = ("empty", "new_empty", "empty_like", "empty_strided", "lift_fresh", "_local_scalar_dense", "sym_size", "sym_stride")


class OpBytes(TorchDispatchMode or object):
    """Bytes per ATen op: operands read + results written (views move nothing)."""

    def __init__(self):
        super().__init__()
        self.by_op = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.__name__.split(".")[0]
        if name in NO_TRAFFIC:
            return out
        ins, written = [], []
        schema_args = func._schema.arguments
        for i, a in enumerate(args):
            ins += [t for t in tree_flatten(a)[0] if isinstance(t, torch.Tensor)]
            if i < len(schema_args) and schema_args[i].alias_info is not None and schema_args[i].alias_info.is_write:
                written += [t for t in tree_flatten(a)[0] if isinstance(t, torch.Tensor)]
        for k, a in kwargs.items():
            ts = [t for t in tree_flatten(a)[0] if isinstance(t, torch.Tensor)]
            ins += ts
            sa = next((s for s in schema_args if s.name == k), None)
            if sa is not None and sa.alias_info is not None and sa.alias_info.is_write:
                written += ts
        outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        in_storages = {storage_of(t) for t in ins}
        fresh = [t for t in outs if storage_of(t) not in in_storages]
        if not fresh and not written:
            return out  # a view (or an op returning its operand): nothing moves
        seen, read = set(), 0
        for t in ins:
            if id(t) not in seen:
                seen.add(id(t))
                read += distinct_bytes(t)
        write = sum(distinct_bytes(t) for t in fresh) + sum(distinct_bytes(t) for t in written)
        r, w, n = self.by_op.get(name, (0, 0, 0))
        self.by_op[name] = (r + read, w + write, n + 1)
        return out

    def total(self):
        return sum(r + w for r, w, _ in self.by_op.values())


def models(batch, names):
    import torchvision

    def transformer():
        layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0, batch_first=True)
        return torch.nn.TransformerEncoder(layer, num_layers=4).train()

    every = [("resnet18", lambda: torchvision.models.resnet18(num_classes=1000).train(), (batch, 3, 224, 224)),
             ("mobilenet_v2", lambda: torchvision.models.mobilenet_v2(num_classes=1000, dropout=0.0).train(), (batch, 3, 224, 224)),
             ("transformer", transformer, (batch, 128, 256))]
    return [m for m in every if not names or m[0] in names]


def autocast(precision):
    import contextlib
    return torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()


def eager_step(make, shape, precision):
    """One training step in eager: (ideal bytes and its parts, eager bytes, eager's ops)."""
    torch.manual_seed(0)
    model = make()
    x = torch.randn(*shape)
    params = list(model.parameters())
    buffers = list(model.buffers())
    before = [b.clone() for b in buffers]  # (a kernel's in-place update of running statistics bumps no version counter)
    leaf = {storage_of(t) for t in params + buffers + [x]}
    saved = {}  # storage -> [byte ranges]

    def pack(t):
        saved.setdefault(storage_of(t), []).append(byte_range(t))
        return t

    # Two passes: the saved tensors' (PyTorch 1.13 fails a backward that
    # unpacks saved tensors under a dispatch mode), then eager's ops.
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with autocast(precision):
            out = model(x)
    g = torch.ones_like(out)
    out.backward(g)
    mutated = [b for b, v in zip(buffers, before) if not torch.equal(b, v)]
    del before
    model.zero_grad(set_to_none=True)
    counter = OpBytes()
    with counter:
        with autocast(precision):
            out2 = model(x)
        out2.backward(g)
    del out2
    parts = {
        "inputs_read": distinct_bytes(x) + distinct_bytes(g),
        "parameters_read": sum(distinct_bytes(p) for p in params),
        "buffers_read": sum(distinct_bytes(b) for b in buffers),
        "output_written": distinct_bytes(out),
        "gradients_written": sum(distinct_bytes(p.grad) for p in params if p.grad is not None),
        "buffers_written": sum(distinct_bytes(b) for b in mutated),
        "saved_reread": 0,  # saved leaves and the output: read again in the backward
        "saved_written_and_read": 0,  # other saved tensors: twice their bytes
    }
    out_storage = storage_of(out)
    for st, ranges in saved.items():
        n = union_bytes(ranges)
        if st in leaf or st == out_storage:
            parts["saved_reread"] += n
        else:
            parts["saved_written_and_read"] += 2 * n
    parts["saved_storages"] = len(saved)
    ideal = sum(v for k, v in parts.items() if k != "saved_storages")
    top = sorted(counter.by_op.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))[:10]
    ops = [{"op": k, "read": r, "written": w, "calls": n} for k, (r, w, n) in top]
    return ideal, parts, counter.total(), sum(n for _, _, n in counter.by_op.values()), ops


def aotc_bytes(aotc, fx_json, art, precision):
    """(step bytes, launches, library calls) of the artifact compiled for sm_90."""
    r = subprocess.run([aotc, "-q", "compile", fx_json, "-o", art, "--arch", "sm_90", "--precision", precision],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"aotc compile {fx_json} --precision {precision}: {r.stderr.strip()[:300]}")
    r = subprocess.run([aotc, "inspect", art, "--roofline", "--json"], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"aotc inspect {art} --roofline: {r.stderr.strip()[:300]}")
    s = json.loads(r.stdout)["step"]
    return s["bytes"], s["launches"], s["library_calls"]


def selftest(aotc):
    """Hand-counted steps (ctest traffic_ideal, traffic_ideal_torch2)."""
    errors = []

    def want(what, got, expected):
        if got != expected:
            errors.append(f"{what}: {got}, want {expected}")

    # Linear(4, 3), ReLU, Linear(3, 2) on x (2, 4), float32.  Ideal: x 32 +
    # grad output 16 read, parameters 92 read, output 16 and gradients 92
    # written; saved: x (32) and the second weight (24) read again, the
    # ReLU's result (24; addmm saves the same storage) written and read: 352.
    # Eager: addmm 92 + 24, relu 24 + 24, addmm 56 + 16; backward mm 40 + 24
    # (grad W2), sum 16 + 8, mm 40 + 24 (grad h), threshold_backward 48 + 24,
    # mm 56 + 48 (grad W1), sum 24 + 12: 600 bytes in 9 ops (views move nothing).
    mlp = lambda: torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))  # noqa: E731
    ideal, parts, eager, ops, _ = eager_step(mlp, (2, 4), "fp32")
    want("mlp ideal", ideal, 352)
    want("mlp saved, read again", parts["saved_reread"], 56)
    want("mlp saved, written and read", parts["saved_written_and_read"], 48)
    want("mlp eager", eager, 600)
    want("mlp eager ops", ops, 9)
    # BatchNorm1d(3) on (4, 3): running mean and variance (12 + 12) and the
    # step count (8) read, and all three written.
    _, parts, _, _, _ = eager_step(lambda: torch.nn.BatchNorm1d(3).train(), (4, 3), "fp32")
    want("batch norm buffers read", parts["buffers_read"], 32)
    want("batch norm buffers written", parts["buffers_written"], 32)
    if aotc:
        from fx_export import export
        with tempfile.TemporaryDirectory(prefix="aotc-traffic-test-") as tmp:
            torch.manual_seed(0)
            export(mlp(), (torch.randn(2, 4),), os.path.join(tmp, "mlp"))
            b, launches, calls = aotc_bytes(aotc, os.path.join(tmp, "mlp.json"), os.path.join(tmp, "mlp.aotc"), "fp32")
            # Every correct program reads the parameters and writes their gradients.
            if not b >= 92 + 92 or launches + calls < 1:
                errors.append(f"aotc's mlp step: {b} bytes in {launches} launches and {calls} library calls")
            print(f"aotc's mlp step: {b} bytes, {launches} launches, {calls} library calls")
    for e in errors:
        print("FAIL " + e)
    print(f"traffic_ideal selftest (PyTorch {torch.__version__}): {'ok' if not errors else f'{len(errors)} failures'}")
    return 1 if errors else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("aotc_path", nargs="?", help="the same as --aotc")
    ap.add_argument("--aotc", help="count aotc's artifacts too")
    ap.add_argument("--selftest", action="store_true", help="hand-counted small steps only")
    ap.add_argument("--batch", type=int, default=32, help="bench_gpu.py's is 32")
    ap.add_argument("--models", nargs="*", default=[])
    ap.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"])
    ap.add_argument("--json")
    ap.add_argument("--work", help="keep the exports and artifacts here")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: PyTorch's default)")
    opts = ap.parse_args()
    opts.aotc = opts.aotc or opts.aotc_path
    if TorchDispatchMode is None:
        raise SystemExit(f"traffic_ideal: PyTorch {torch.__version__} has no TorchDispatchMode")
    if opts.selftest:
        return selftest(opts.aotc)
    if opts.threads:
        torch.set_num_threads(opts.threads)
    results = {"torch": torch.__version__, "batch": opts.batch, "device": "cpu", "rows": []}
    with tempfile.TemporaryDirectory(prefix="aotc-traffic-") as tmp:
        work = opts.work or tmp
        os.makedirs(work, exist_ok=True)
        for name, make, shape in models(opts.batch, opts.models):
            fx_json = None
            if opts.aotc:
                from fx_export import export
                prefix = os.path.join(work, f"{name}_b{opts.batch}")
                if not os.path.exists(prefix + ".json"):
                    torch.manual_seed(0)
                    export(make(), (torch.randn(*shape),), prefix)
                fx_json = prefix + ".json"
            for precision in opts.precisions:
                t0 = time.monotonic()
                ideal, parts, eager, eager_ops, top = eager_step(make, shape, precision)
                row = {"model": name, "precision": precision, "shape": list(shape), "ideal_bytes": ideal, "ideal_parts": parts,
                       "eager_bytes": eager, "eager_ops": eager_ops, "eager_top_ops": top, "eager_over_ideal": eager / ideal}
                if fx_json:
                    art = os.path.join(work, f"{name}_b{opts.batch}.{precision}.aotc")
                    b, launches, calls = aotc_bytes(opts.aotc, fx_json, art, precision)
                    row.update({"aotc_bytes": b, "aotc_launches": launches, "aotc_library_calls": calls,
                                "aotc_over_ideal": b / ideal, "aotc_over_eager": b / eager})
                row["seconds"] = time.monotonic() - t0
                results["rows"].append(row)
                a = f"aotc {row['aotc_bytes'] / GIB:6.2f} GiB ({row['aotc_launches']} launches + {row['aotc_library_calls']} library), " \
                    f"aotc/ideal {row['aotc_over_ideal']:.2f}, aotc/eager {row['aotc_over_eager']:.2f}" if fx_json else ""
                print(f"{name:13s} {precision:5s} batch {opts.batch}: ideal {ideal / GIB:6.2f} GiB (saved "
                      f"{parts['saved_written_and_read'] / 2 / GIB:.2f} GiB x2), eager {eager / GIB:6.2f} GiB ({eager_ops} ops, "
                      f"eager/ideal {eager / ideal:.2f})  {a}", flush=True)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
