#!/usr/bin/python3
"""Issue 37: mixed precision, checked against PyTorch (run under PyTorch 1.13
and under the pinned 2.x; ctest precision_mixed, precision_mixed_torch2).

1. Already-mixed graphs compile as given: programs traced under the user's
   own CPU bf16 torch.autocast (linear + softmax, conv + train-mode batch
   norm with float32 weights and statistics, mixed-dtype inputs and explicit
   casts) run on the reference and emulate backends against eager under the
   same autocast; `_softmax` with half_to_float=True (a hand-edited trace: a
   CPU trace never emits it) against eager's float32 softmax of the input.
2. `--precision bf16`: a representative subset of models (an MLP with
   cross-entropy, a small CNN with batch norm, a TransformerEncoder layer)
   compiled from their float32 export and run on the emulate backend (bf16
   arithmetic on the host) against eager float32.  Tolerance per tensor:
   YARDSTICK times eager CPU bf16 autocast's own distance from float32 on
   that tensor (floored), and, tighter, against a PyTorch run applying the
   same casts explicitly (CUDA autocast's policy per ATen op, implemented
   as a dispatch mode: Note [Autocast pass]).  Prints the worst difference per
   model and tensor.
3. Note [Channels last]: bfloat16 convolution stacks (training and
   inference) whose artifacts store NHWC compute bit for bit what the same
   model compiled with --conv-layout nchw computes, on the emulate backend.

    python scripts/precision_test.py AOTC
"""
import json
import os
import subprocess
import sys
import tempfile
import warnings
import weakref

import numpy as np
import torch
from torch.utils._pytree import tree_flatten, tree_map

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "testdata"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from compare_safetensors import load, load_typed  # noqa: E402
from fx_export import export, write_safetensors  # noqa: E402
from gen_util import reference  # noqa: E402

F = torch.nn.functional
FAILS = []


def fail(msg):
    print("FAIL " + msg)
    FAILS.append(msg)


class Under(torch.nn.Module):
    """Runs `inner` under `ctx()` (None: as written).  The wrapper's own
    state names are the inner module's with an `m.` prefix, the same in the
    export and in the eager references."""

    def __init__(self, inner, ctx=None, widen=False):
        super().__init__()
        self.m = inner
        self.ctx = ctx
        self.widen = widen

    def forward(self, *a):
        if self.ctx is None:
            out = self.m(*a)
        else:
            with self.ctx():
                out = self.m(*a)
        # widen: 16-bit results returned as float32, so that the eager reference draws
        # its random grad outputs in float32 -- the same numbers as the float32 run's
        # (randn in bfloat16 draws others) -- and rounds them to bf16 on the way back,
        # as aotc's bf16 output takes them.
        if self.widen:
            out = tree_map(lambda t: t.float() if isinstance(t, torch.Tensor) and t.dtype in (torch.bfloat16, torch.float16)
                           else t, out)
        return out


def cpu_bf16():
    return torch.autocast("cpu", dtype=torch.bfloat16)


def rel_err(got, want, floor=1e-3):
    """Per tensor: max |got - want| / max |want|, the denominator floored at 1e-3 of
    the largest tensor of its kind (output, grad, after_*), as zoo_check does: a
    gradient that is zero in exact arithmetic (a conv bias before train-mode batch
    norm) holds rounding noise in every run, and its relative error means nothing.
    The 16-bit comparisons floor at BF16_FLOOR: bf16 rounding noise is ~2^-8 of the
    magnitudes summed, so a near-zero tensor is compared at that scale."""
    kind = lambda k: k.split(".", 1)[0]
    top = {}
    for k, v in want.items():
        if v.size:
            top[kind(k)] = max(top.get(kind(k), 0.0), float(np.max(np.abs(v))))
    out = {}
    for k, v in want.items():
        if k in got and v.size:
            den = max(float(np.max(np.abs(v))), floor * top[kind(k)], 1e-30)
            out[k] = float(np.max(np.abs(got[k].astype(np.float64) - v))) / den
    return out


# Manifest dtype names and safetensors codes as torch dtypes.
TORCH_DTYPE = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
               "i64": torch.int64, "i32": torch.int32, "bool": torch.bool}
ST_DTYPE = {"F32": "f32", "F64": "f64", "F16": "f16", "BF16": "bf16", "I64": "i64", "I32": "i32", "BOOL": "bool"}


def load_torch(path):
    """{name: (manifest dtype name, torch tensor in that dtype)}."""
    return {k: (ST_DTYPE[d], torch.from_numpy(a.copy()).to(TORCH_DTYPE[ST_DTYPE[d]])) for k, (d, a) in load_typed(path).items()}


def compile_run(aotc, tmp, prefix, backends, extra=()):
    art = prefix + ".art"
    r = subprocess.run([aotc, "-q", "compile", prefix + ".json", "-o", art, "--arch", "sm_90", *extra], capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip()
    res = {}
    for b in backends:
        out = os.path.join(tmp, b + ".out.safetensors")
        inputs = prefix + ".inputs.safetensors"
        # Grad outputs in the dtype of the artifact's outputs (a bf16 output under
        # --precision bf16 takes a bf16 gradient: aotc run does not round inputs).
        with open(os.path.join(art, "manifest.json")) as f:
            outs = {o["index"]: o["dtype"] for o in json.load(f)["outputs"]}
        given = load_torch(inputs)
        if any(k.startswith("grad_output.") and d != outs[int(k.split(".")[1])] for k, (d, _) in given.items()):
            inputs = prefix + ".inputs.cast.safetensors"
            write_safetensors(inputs, {k: v.to(TORCH_DTYPE[outs[int(k.split(".")[1])]]) if k.startswith("grad_output.") else v
                                       for k, (_, v) in given.items()})
        r = subprocess.run([aotc, "run", art, "--backend", b, "--inputs", prefix + ".safetensors", "--inputs",
                            inputs, "--grad-outputs", inputs, "--out", out],
                           capture_output=True, text=True)
        if r.returncode:
            return None, f"{b}: {r.stderr.strip()[:300]}"
        res[b] = load(out)
    return res, art


# ---------------------------------------------------------------- mixed graphs
MIXED_TOL = 4e-2

class LinearSoftmax(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.b(torch.relu(self.a(x))).softmax(-1).float()


class ConvBN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c, self.bn = torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)

    def forward(self, x):
        return torch.relu(self.bn(self.c(x))).float().mean((2, 3))


class MixedInputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(6, 6))

    def forward(self, x, h):  # x float32, h bfloat16
        y = torch.mm(x, self.w)            # under autocast: bf16
        z = y + h                           # bf16 + bf16
        u = z.to(torch.float32) * x         # explicit cast, f32 * f32
        return torch.cat([u, z.float()], 1), (z + x).sum()  # bf16 + f32 -> f32


def mixed_graphs(aotc, tmp):
    torch.manual_seed(0)
    progs = {
        "linear_softmax": (LinearSoftmax(), (torch.randn(4, 8),)),
        "conv_bn_train": (ConvBN().train(), (torch.randn(2, 3, 6, 6),)),
        "mixed_inputs": (MixedInputs(), (torch.randn(3, 6), torch.randn(3, 6).bfloat16())),
    }
    for name, (m, args) in progs.items():
        w = Under(m, cpu_bf16)
        p = os.path.join(tmp, name)
        export(w, args, p)
        reference(name, w, args, tmp)
        res, art = compile_run(aotc, tmp, p, ("reference", "emulate"))
        if res is None:
            fail(f"mixed {name}: {art}")
            continue
        want = load(os.path.join(tmp, name + ".expected.safetensors"))
        for b, got in res.items():
            errs = rel_err(got, want, BF16_FLOOR)
            worst = max(errs.items(), key=lambda kv: kv[1])
            # Same graph, same dtypes per op: only accumulation order differs
            # (a bf16 ulp is 2^-8 of the value; MIXED_TOL is ten of them).
            ok = worst[1] <= MIXED_TOL and set(want) <= set(got)
            print(f"{'ok  ' if ok else 'FAIL'} mixed {name} {b}: worst {worst[1]:.1e} ({worst[0]})")
            if not ok:
                print("     " + ", ".join(f"{k} {e:.1e}" for k, e in sorted(errs.items())))
                fail(f"mixed {name} {b}")

    # _softmax(x, -1, half_to_float=True): a bf16 trace edited by hand (a CPU
    # trace never emits it): the flag set and the recorded result float32.
    x = torch.randn(3, 5).bfloat16()
    p = os.path.join(tmp, "half_to_float")
    doc = export(lambda x: torch.ops.aten._softmax(x, -1, False), (x,), p)
    node = next(n for n in doc["nodes"] if n["target"] == "aten._softmax.default")
    node["args"][2] = True
    node["meta"]["dtype"] = "float32"
    with open(p + ".json", "w") as f:
        json.dump(doc, f)
    write_safetensors(p + ".inputs.safetensors", {"x": x})
    res, art = compile_run(aotc, tmp, p, ("reference", "emulate"))
    if res is None:
        return fail("half_to_float: " + art)
    want = torch.softmax(x.float(), -1).numpy().astype(np.float64)
    for b, got in res.items():
        err = float(np.max(np.abs(got["output.0"] - want)))
        ok = err <= 1e-6
        print(f"{'ok  ' if ok else 'FAIL'} _softmax half_to_float {b}: {err:.1e}")
        if not ok:
            fail(f"half_to_float {b}")


# ---------------------------------------------------------------- --precision bf16
class ExplicitCasts(torch.utils._python_dispatch.TorchDispatchMode):
    """CUDA autocast's policy applied per ATen op, explicitly, on the CPU.
    A logically low-precision tensor is held in float32 with bf16 values
    (rounded through bf16), so that ATen's composite checks, which run above
    this mode, see one dtype: lower-precision ops round their operands and
    their result, fp32 ops take the values as they are, the rest compute in
    float32 and round their result where every operand was low precision
    (ATen's CUDA kernels: float32 inside, one rounding), batch norm rounds its
    normalized result.  The op lists are the table's
    (include/aotc/ops/autocast.def), read from it."""

    def __init__(self, low):
        super().__init__()
        self.low = low
        self.marked = {}  # id -> weakref (tensors compare elementwise)
        self.policy = {}
        with open(os.path.join(ROOT, "include", "aotc", "ops", "autocast.def")) as f:
            for line in f:
                if line.startswith("AUTOCAST("):
                    name, pol = line[len("AUTOCAST("):].rstrip().rstrip(")").split(", ")
                    self.policy[name.strip('"')] = pol

    def rnd(self, x):
        if isinstance(x, torch.Tensor) and x.dtype == torch.float32:
            return x.to(self.low).to(torch.float32)
        return x

    def mark(self, x):
        y = self.rnd(x)
        if isinstance(y, torch.Tensor) and y.dtype == torch.float32:
            self.marked[id(y)] = weakref.ref(y)
        return y

    def low_(self, t):
        r = self.marked.get(id(t))
        return r is not None and r() is t

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.__name__.split(".")[0]
        pol = self.policy.get(name, "Follow")
        leaves, _ = tree_flatten((args, kwargs))
        floats = [t for t in leaves if isinstance(t, torch.Tensor) and t.dtype == torch.float32]
        if pol == "Lower":
            args, kwargs = tree_map(self.rnd, (args, kwargs))
            return tree_map(self.mark, func(*args, **kwargs))
        out = func(*args, **kwargs)
        if pol == "Fp32" or not floats:
            return out
        if pol == "BatchNorm":
            if self.low_(floats[0]):
                return (self.mark(out[0]),) + tuple(out[1:])
            return out
        dims = [t for t in floats if t.dim() > 0] or floats
        if pol == "Promote":
            dims = floats
        if all(self.low_(t) for t in dims):
            return tree_map(self.mark, out)
        return out


class MLPLoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 10))

    def forward(self, x, target):
        return F.cross_entropy(self.net(x), target)


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.f = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                     torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.BatchNorm2d(16),
                                     torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10))

    def forward(self, x):
        return self.f(x)


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.l(x)


# Eager CPU bf16 autocast's distance from float32 is the yardstick: aotc's
# --precision bf16 may be YARDSTICK times as far (it runs CUDA's lists, not
# the CPU's, so its casts differ), never less than FLOOR; against the
# explicit-cast run (the same casts, other accumulation orders) EXPLICIT_TOL.
YARDSTICK, FLOOR, EXPLICIT_TOL = 4.0, 2e-2, 2e-2
BF16_FLOOR = 5e-2


def channels_last(aotc, tmp, prefix, name, art, got):
    """Note [Channels last]: the artifact's NHWC convolutions, and its
    results (`got`: per backend) against the same model compiled with
    --conv-layout nchw on the same backends: the layout moves bytes, never
    values, so they must be bit-identical."""
    steps = [s for prog in ("forward", "backward") for s in json.load(open(os.path.join(art, "manifest.json")))[prog]["steps"]
             if s["op"] == "conv"]
    nhwc = sum(s["format"] == "CUDNN_TENSOR_NHWC" for s in steps)
    if not nhwc:
        return False
    res, err = compile_run(aotc, tmp, prefix, tuple(got), ("--precision", "bf16", "--conv-layout", "nchw"))
    if res is None:
        fail(f"bf16 {name} --conv-layout nchw: {err}")
        return True
    for backend, plain in res.items():
        mine = got[backend]
        differ = sorted(k for k in plain if k not in mine or plain[k].tobytes() != mine[k].tobytes())
        print(f"{'ok  ' if not differ else 'FAIL'} bf16 {name} {backend}: {nhwc} of {len(steps)} convolutions channels-last, "
              "results " + ("bit-identical to --conv-layout nchw" if not differ else f"differ from --conv-layout nchw: {differ[:5]}"))
        if differ:
            fail(f"bf16 {name} {backend}: channels-last")
    return True


class ConvStack(torch.nn.Module):
    """Convolutions over 8 and 16 channels with batch norm, relu, a residual
    add, a strided convolution, and max and global average pooling reading
    the last one: bfloat16 islands stored channels-last under --precision
    bf16 (Note [Channels last])."""
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU())
        self.b = torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.BatchNorm2d(16))
        self.c = torch.nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.d = torch.nn.Conv2d(32, 8, 1)

    def forward(self, x):
        h = self.a(x)
        h = torch.relu(self.b(h) + h)
        y = self.d(torch.relu(self.c(h)))
        return y.mean((2, 3)) + F.adaptive_avg_pool2d(F.max_pool2d(y, 2), 1).flatten(1)


def channels_last_models(aotc, tmp):
    """Note [Channels last] in training and inference: an artifact with
    NHWC convolutions computes bit for bit what --conv-layout nchw does (whose
    agreement with eager the models above check)."""
    torch.manual_seed(0)
    for name, (m, args) in {"conv_stack_train": (ConvStack().train(), (torch.randn(2, 8, 8, 8, requires_grad=True),)),
                            "conv_stack_eval": (ConvStack().eval(), (torch.randn(2, 8, 8, 8),))}.items():
        p = os.path.join(tmp, name)
        export(m, args, p)
        reference(name, m, args, tmp)
        res, art = compile_run(aotc, tmp, p, ("reference", "emulate"), ("--precision", "bf16"))
        if res is None:
            fail(f"bf16 {name}: {art}")
            continue
        if not channels_last(aotc, tmp, p, name, art, res):
            fail(f"bf16 {name}: no convolution is channels-last")


def precision_bf16(aotc, tmp, models=None):
    torch.manual_seed(0)
    if models is None:
        models = {
            "mlp_cross_entropy": (MLPLoss(), (torch.randn(16, 32), torch.randint(0, 10, (16,)))),
            "cnn_batchnorm": (SmallCNN().train(), (torch.randn(4, 3, 16, 16),)),
            "transformer_layer": (Encoder(), (torch.randn(2, 8, 32),)),
        }
    for name, (m, args) in models.items():
        p = os.path.join(tmp, name)
        export(m, args, p)
        reference(name, m, args, tmp)                          # eager float32
        try:
            reference(name + "_amp", Under(m, cpu_bf16, widen=True), args, tmp)  # eager CPU bf16 autocast
        except RuntimeError as e:  # a CPU kernel without bf16 (e.g. hardshrink_backward on 1.13)
            print(f"     {name}: eager CPU bf16 autocast fails ({str(e).splitlines()[0]}): no yardstick, FLOOR only")
            reference(name + "_amp", m, args, tmp)  # float32: a distance of 0, so the yardstick is FLOOR
        reference(name + "_explicit", Under(m, lambda: ExplicitCasts(torch.bfloat16)), args, tmp)
        res, art = compile_run(aotc, tmp, p, ("emulate",), ("--precision", "bf16"))
        if res is None:
            fail(f"bf16 {name}: {art}")
            continue
        got = res["emulate"]
        channels_last(aotc, tmp, p, name, art, res)
        want = load(os.path.join(tmp, name + ".expected.safetensors"))
        amp = {k.replace("grad.m.", "grad.").replace("after_forward.m.", "after_forward."): v
               for k, v in load(os.path.join(tmp, name + "_amp.expected.safetensors")).items()}
        expl = {k.replace("grad.m.", "grad.").replace("after_forward.m.", "after_forward."): v
                for k, v in load(os.path.join(tmp, name + "_explicit.expected.safetensors")).items()}
        e_f32, e_amp, e_expl = rel_err(got, want, BF16_FLOOR), rel_err(amp, want, BF16_FLOOR), rel_err(got, expl, BF16_FLOOR)
        worst_f32 = max(e_f32.items(), key=lambda kv: kv[1])
        worst_expl = max(e_expl.items(), key=lambda kv: kv[1]) if e_expl else ("", 0.0)
        bad = [k for k, e in e_f32.items() if e > max(YARDSTICK * e_amp.get(k, 0.0), FLOOR)]
        # Tighter than the yardstick (1x, not YARDSTICK x eager autocast's own distance from
        # float32, or EXPLICIT_TOL): train-mode BatchNorm's weight gradients on a small
        # batch move 5-17% between any two bf16 runs (aotc, eager autocast, explicit casts).
        bad += [k for k, e in e_expl.items() if e > max(EXPLICIT_TOL, e_amp.get(k, 0.0))]
        missing = [k for k in want if k not in got]
        ok = not bad and not missing
        print(f"{'ok  ' if ok else 'FAIL'} bf16 {name}: vs eager fp32 worst {worst_f32[1]:.1e} ({worst_f32[0]}; "
              f"eager CPU autocast there {e_amp.get(worst_f32[0], 0):.1e}), vs explicit casts worst {worst_expl[1]:.1e} "
              f"({worst_expl[0]}){' over: ' + str(bad) if bad else ''}{' missing: ' + str(missing) if missing else ''}")
        if not ok:
            print("     vs fp32: " + ", ".join(f"{k} {e:.1e} (amp {e_amp.get(k, 0):.1e})" for k, e in sorted(e_f32.items())))
            fail(f"bf16 {name}")


class Zoo:
    """zoo_check.py's models, built one at a time (each after manual_seed(0))."""
    def __init__(self, names):
        import zoo_check
        self.zoo, self.names = zoo_check, names

    def items(self):
        for n in self.names:
            torch.manual_seed(0)
            m, args = self.zoo.MODELS[n]()
            yield n, (m.train(), args if isinstance(args, tuple) else (args,))


def main():
    # precision_test.py AOTC [--zoo MODEL...]: with --zoo, `--precision bf16` of
    # scripts/zoo_check.py's models (issue 37's per-model figures), nothing else.
    aotc = sys.argv[1]
    warnings.simplefilter("ignore")
    print(f"torch {torch.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        if len(sys.argv) > 2 and sys.argv[2] == "--zoo":
            precision_bf16(aotc, tmp, Zoo(sys.argv[3:]))
        else:
            mixed_graphs(aotc, tmp)
            precision_bf16(aotc, tmp)
            channels_last_models(aotc, tmp)
    if FAILS:
        print(f"{len(FAILS)} failure(s)")
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
