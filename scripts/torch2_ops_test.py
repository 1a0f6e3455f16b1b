#!/usr/bin/env python3
"""torch2_ops_test.py AOTC [--work DIR] [--all] [NAME...]: the op conformance
suite under PyTorch 2.x (issue 36; ctest torch2_ops, run by the pinned
environment's python, scripts/setup-venv.sh).

The programs of testdata/ops/gen.py -- by default the ones for what 2.x
traces as single ops (vector norms, cumprod, adaptive max pooling,
new_empty_strided, scaled_dot_product_attention and its fused CPU kernel,
_safe_softmax) and the layers people use (LSTM, GRU, a transformer, a UNet
step, a GPT block, ...); --all: every program -- are exported with this
python's PyTorch and run eagerly for their reference (outputs and gradients,
testdata/gen_util.py), then compiled under both partitioners and run on the
reference and emulate backends; every result must match eager at the e2e
suite's tolerances (Note [Dtype tolerances] in src/driver/e2e_test.cpp).
The GPU attention kernels (flash, memory-efficient, cuDNN), which a CPU
cannot run eagerly, are checked by respelling the CPU kernel's nodes of one
program as each of them (same semantics: their output is the same
function), with the CPU program's eager reference; the GPU's fused LSTM and
GRU cells by hand-written graphs against the cells' formulas.  Exits 1 on any failure,
naming each.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "testdata"))
sys.path.insert(0, os.path.join(ROOT, "testdata", "ops"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from compare_safetensors import load_typed  # noqa: E402
import gen  # noqa: E402  (testdata/ops/gen.py: builds its program list on import)
from gen_util import write_fixture  # noqa: E402

# What 2.x traces as one op, and the layers.
DEFAULT = ["norms", "norm_overloads", "cumprod", "adaptive_max_pool", "new_empty_strided", "sdpa", "sdpa_flash_cpu", "safe_softmax",
           "layer_transformer", "layer_lstm", "layer_gru", "layer_unet", "layer_gpt_block", "layer_instancenorm_prelu",
           "layer_losses", "backward_ops", "prod", "max_min_dim",
           # special functions and composites users call (refused before)
           "erfc_exp2", "gamma_fns", "erfinv", "logit", "copysign", "hypot", "logaddexp2", "shrinks", "nan_to_num", "lerp",
           "addcmul_addcdiv", "binary_cross_entropy", "pointwise_backwards",
           # upsample_bicubic2d.default with scales_h / scales_w (1.13 traces .vec)
           "upsample_bicubic", "upsample_bicubic_half"]
# Results that must be eager's bit for bit, by program: key prefixes.
# upsample_bicubic_half: float16/bfloat16 summed in float with rounded
# weights, as ATen (Note [Separable resampling]); its gradients are index_add
# scatters in another order (an ulp apart), at the dtype's tolerance.
EXACT = {"upsample_bicubic_half": ("output.",)}
PARTITIONERS = ("min-cut", "default")
BACKENDS = ("reference", "emulate")
TOL = {"F16": 2e-3, "BF16": 2e-2, "F32": 1e-5, "F64": 1e-5}
def load(path):
    """{name: (safetensors dtype, float64 tensor)}: compare_safetensors' reader, as torch tensors."""
    return {k: (d, torch.from_numpy(a)) for k, (d, a) in load_typed(path).items()}


def compare(got, want, exact=()):
    """Problems of `got` against eager's `want` (e2e_test's expectClose);
    keys starting with a prefix in `exact` must be equal."""
    bad = []
    for k, (dt, w) in want.items():
        if k not in got:
            bad.append(f"missing {k}")
            continue
        gdt, g = got[k]
        if gdt != dt or g.shape != w.shape:
            bad.append(f"{k}: {gdt}{list(g.shape)}, eager gives {dt}{list(w.shape)}")
            continue
        tol = 0.0 if k.startswith(tuple(exact)) else TOL.get(dt, 0.0)
        same = (g == w) | (g.isnan() & w.isnan())
        err = torch.where(same, torch.zeros_like(g), (g - w).abs())
        err = torch.where(w.isfinite(), err - tol * w.abs(), err)
        if err.numel() and float(err.max()) > tol:
            i = int(err.flatten().argmax())
            bad.append(f"{k}: element {i} is {float(g.flatten()[i])!r}, eager gives {float(w.flatten()[i])!r}")
    bad += [f"{k}: no eager reference" for k in got if k not in want]
    return bad


def run_program(aotc, work, name):
    """Compiles and runs work/name.json; the list of failures."""
    p = os.path.join(work, name)
    want = load(p + ".expected.safetensors")
    fails = []
    for part in PARTITIONERS:
        art = f"{p}.{part}.aotc"
        r = subprocess.run([aotc, "-q", "compile", p + ".json", "-o", art, "--partitioner", part, "--no-cache"],
                           capture_output=True, text=True)
        if r.returncode:
            return [f"{name} [{part}]: compile failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}"]
        for backend in BACKENDS:
            out = f"{p}.{part}.{backend}.safetensors"
            r = subprocess.run([aotc, "run", art, "--backend", backend, "--inputs", p + ".safetensors", "--inputs",
                                p + ".inputs.safetensors", "--grad-outputs", p + ".inputs.safetensors", "--out", out],
                               capture_output=True, text=True)
            if r.returncode:
                fails.append(f"{name} [{part}, {backend}]: run failed: {r.stderr.strip()[:300]}")
                continue
            fails += [f"{name} [{part}, {backend}]: {b}" for b in compare(load(out), want, EXACT.get(name, ()))]
        shutil.rmtree(art, ignore_errors=True)
    return fails


# The GPU kernels' schemas: (target, args after q, k, v given the CPU node's
# mask and is_causal, number of results).
def _efficient(mask, causal):
    return "aten._scaled_dot_product_efficient_attention.default", [mask, False, 0.0, causal], 4


def _cudnn(mask, causal):
    return "aten._scaled_dot_product_cudnn_attention.default", [mask, False, 0.0, causal, False], 9


def _flash(mask, causal):
    if mask is not None:
        return None  # the flash kernel takes no mask: this node stays the CPU kernel's
    return "aten._scaled_dot_product_flash_attention.default", [0.0, causal, False], 9


def gpu_attention_programs(work):
    """sdpa_gpu: a masked, a causal and a plain attention exported once; its
    CPU kernel nodes respelled as each GPU kernel (sdpa_gpu_efficient, ...)."""
    rn = gen.seeded_randn(3600)

    def prog(q, k, v, m):
        sdpa = torch.nn.functional.scaled_dot_product_attention
        return sdpa(q, k, v, attn_mask=m), sdpa(q, k, v, is_causal=True), sdpa(q, k, v, scale=0.25)
    write_fixture("sdpa_gpu", prog, (rn(2, 3, 5, 8, rg=True), rn(2, 3, 5, 8, rg=True), rn(2, 3, 5, 8, rg=True), rn(5, 5)), work)
    doc = json.load(open(os.path.join(work, "sdpa_gpu.json")))
    names = []
    for tag, spell in (("efficient", _efficient), ("cudnn", _cudnn), ("flash", _flash)):
        d = json.loads(json.dumps(doc))
        changed = 0
        for n in d["nodes"]:
            if n["target"] != "aten._scaled_dot_product_flash_attention_for_cpu.default":
                continue
            a, kw = n["args"], n.get("kwargs", {})
            assert len(a) <= 5 and not (len(a) > 3 and a[3]), n  # dropout 0
            causal = a[4] if len(a) > 4 else kw.get("is_causal", False)
            got = spell(kw.get("attn_mask"), causal)
            if got is None:
                continue
            target, rest, nres = got
            n["target"], n["args"] = target, a[:3] + rest
            n["kwargs"] = {"scale": kw["scale"]} if kw.get("scale") is not None else {}
            n["meta"] = [n["meta"][0]] + [None] * (nres - 1)
            changed += 1
        assert changed, tag
        name = f"sdpa_gpu_{tag}"
        d["name"] = name
        with open(os.path.join(work, name + ".json"), "w") as f:
            json.dump(d, f, indent=1)
        for suffix in (".safetensors", ".inputs.safetensors", ".expected.safetensors"):
            shutil.copy(os.path.join(work, "sdpa_gpu" + suffix), os.path.join(work, name + suffix))
        names.append(name)
    return names


def fused_cell_programs(work):
    """The GPU's fused LSTM and GRU cells (no CPU kernel): hand-written graphs
    of one _thnn_fused_lstm_cell / _thnn_fused_gru_cell node (with and
    without biases), the reference being the cells' documented formulas
    (nn.LSTMCell's and nn.GRUCell's) run by eager autograd."""
    rn = gen.seeded_randn(3700)
    B, H = 3, 5
    meta = lambda t: {"dtype": "float32", "shape": list(t.shape), "stride": list(t.stride())}  # noqa: E731
    names = []
    for cell, n in (("lstm", 4), ("gru", 3)):
        for bias in (True, False):
            name = f"fused_{cell}_cell{'' if bias else '_nobias'}"
            ins = {"ig": rn(B, n * H), "hg": rn(B, n * H), "hx": rn(B, H)}
            if bias:
                ins.update(ib=rn(n * H), hb=rn(n * H))
            args = [{"node": k} for k in ("ig", "hg", "hx")] + ([{"node": "ib"}, {"node": "hb"}] if bias else [])
            nres = 3 if cell == "lstm" else 2
            doc = {"format": "aotc.fx_graph", "version": 1, "name": name, "weights": name + ".safetensors",
                   "inputs": [dict(name=k, role="user_input", requires_grad=True, **meta(t)) for k, t in ins.items()],
                   "nodes": [{"name": "cell", "target": f"aten._thnn_fused_{cell}_cell.default", "args": args, "kwargs": {}}]
                   + [{"name": f"r{i}", "target": "getitem", "args": [{"node": "cell"}, i], "kwargs": {}} for i in range(nres - 1)],
                   "outputs": [{"node": f"r{i}"} for i in range(nres - 1)]}
            with open(os.path.join(work, name + ".json"), "w") as f:
                json.dump(doc, f, indent=1)
            gen.write_safetensors(os.path.join(work, name + ".safetensors"), {})
            x = {k: t.clone().requires_grad_(True) for k, t in ins.items()}
            gi = x["ig"] + x["ib"] if bias else x["ig"]
            gh = x["hg"] + x["hb"] if bias else x["hg"]
            if cell == "lstm":
                i, f_, g, o = (a + b for a, b in zip(gi.chunk(4, 1), gh.chunk(4, 1)))
                cy = f_.sigmoid() * x["hx"] + i.sigmoid() * g.tanh()
                outs = [o.sigmoid() * cy.tanh(), cy]
            else:
                (ir, iz, in_), (hr, hz, hn) = gi.chunk(3, 1), gh.chunk(3, 1)
                r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
                nn_ = (in_ + r * hn).tanh()
                outs = [(1 - z) * nn_ + z * x["hx"]]
            gos = [rn(B, H) for _ in outs]
            torch.autograd.backward(outs, gos)
            gen.write_safetensors(os.path.join(work, name + ".inputs.safetensors"),
                                  dict(ins, **{f"grad_output.{i}": g for i, g in enumerate(gos)}))
            gen.write_safetensors(os.path.join(work, name + ".expected.safetensors"),
                                  dict({f"output.{i}": o.detach() for i, o in enumerate(outs)},
                                       **{f"grad.{k}": t.grad for k, t in x.items()}))
            names.append(name)
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aotc")
    ap.add_argument("--work", help="keep the exported programs and artifacts here (default: a temporary directory)")
    ap.add_argument("--all", action="store_true", help="every program of testdata/ops/gen.py")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--write-fixtures", metavar="DIR",
                    help="write the 2.x-only programs' fixtures (gen.TORCH2_ONLY, the GPU kernels' respellings, the fused "
                         "cells) into DIR (testdata/ops) and stop")
    ap.add_argument("names", nargs="*")
    a = ap.parse_intermixed_args()
    if not torch.__version__.startswith("2."):
        print(f"torch2_ops_test: expects PyTorch 2.x, this python has {torch.__version__}", file=sys.stderr)
        return 1
    programs = {p[0]: p for p in gen.programs}
    if a.write_fixtures:
        for n in gen.TORCH2_ONLY:
            name, model, args, *opts = programs[n]
            write_fixture(name, model, args, a.write_fixtures, **(opts[0] if opts else {}))
        gpu_attention_programs(a.write_fixtures)
        fused_cell_programs(a.write_fixtures)
        return 0
    names = a.names or (list(programs) if a.all else DEFAULT)
    if not a.names:
        # A program of an op this PyTorch lacks (_safe_softmax before 2.5):
        # named, not run (scripts/oldest_torch2.sh runs this on 2.4).
        for n in [n for n in names if n not in programs and n in gen.TORCH2_ONLY]:
            print(f"skip {n}: not in PyTorch {torch.__version__}")
            names.remove(n)
    extra = ("sdpa_gpu", "fused_")
    unknown = [n for n in names if n not in programs and not n.startswith(extra)]
    if unknown:
        ap.error(f"unknown program(s) {', '.join(unknown)}")
    work = a.work or tempfile.mkdtemp(prefix="torch2_ops.")
    os.makedirs(work, exist_ok=True)
    fails, ready = [], []
    for n in names:
        if n.startswith(extra):
            continue
        name, model, args, *opts = programs[n]
        try:
            write_fixture(name, model, args, work, **(opts[0] if opts else {}))
            ready.append(name)
        except Exception as e:  # an export the exporter refuses is a failure too
            fails.append(f"{name}: export failed: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
    if not a.names or any(n.startswith("sdpa_gpu") for n in a.names):
        ready += gpu_attention_programs(work)
    if not a.names or any(n.startswith("fused_") for n in a.names):
        ready += fused_cell_programs(work)
    with concurrent.futures.ThreadPoolExecutor(max(1, a.j)) as pool:
        for name, f in zip(ready, pool.map(lambda n: run_program(a.aotc, work, n), ready)):
            print(f"{'ok  ' if not f else 'FAIL'} {name}", flush=True)
            fails += f
    for f in fails:
        print("FAIL", f)
    print(f"torch {torch.__version__}: {len(ready) - len({f.split()[0].rstrip(':') for f in fails})}/{len(ready)} programs match eager"
          f" under {' and '.join(PARTITIONERS)} on {' and '.join(BACKENDS)}")
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
