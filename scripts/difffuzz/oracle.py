"""The differential oracle (issue 48 item 3): one generated case, exported,
run eagerly for its reference (testdata/gen_util.py: outputs, gradients of
every input and parameter that requires grad, every mutated input's state
after forward and after backward), compiled under each partitioner and run
on each backend, training and --forward-only, every result compared with
eager at dtype-aware tolerances.

Outcomes (``Result.status``):
  ok          every run matched eager, or aotc refused in one line
  refused     compile or run exited 1 with a one-line message (correct; counted by reason)
  discarded   the case says nothing about aotc: eager raised (an op CPU eager lacks for a
              dtype, an in-place op on a value autograd saved), eager's results are not
              finite, or the exporter refused the program with its ExportError
  finding     one of the classes below, saved with the case's seed and source

Finding classes: ``mismatch`` (a value, gradient or input state differs from
eager), ``internal_error`` (exit 3), ``crash`` (killed by a signal),
``hang`` (past the timeout), ``bad_refusal`` (exit 1 without exactly one line
on stderr), ``bad_exit`` (any other status), ``exporter_exception`` (the
exporter raised something other than ExportError).
"""
import os
import subprocess
import sys
import traceback
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "testdata"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from compare_safetensors import load_typed  # noqa: E402
from fx_export import ExportError, export  # noqa: E402
from gen_util import reference  # noqa: E402

# Note [Fuzz tolerances]: looser than the e2e suite's (Note [Dtype
# tolerances], src/driver/e2e_test.cpp: 1e-5 for float32) because a random
# chain of a dozen ops, reductions and matmuls accumulates rounding that a
# hand-picked test does not; and scaled by the tensor's largest magnitude
# (a gradient summed over many terms cancels).  A wrong rule is off by far
# more.  Each element may also differ by four times eager's own error (eager
# float32 against the program's float64 twin, gen_util's float64=True): a
# gradient that is zero in exact arithmetic (a batch norm's bias feeding
# another batch norm) is rounding noise of any size in float32.  Integers
# and bools are exact.  A float result is held to the
# loosest tolerance of the float dtypes its program uses (compare's floor).
TOL = {"F32": 1e-4, "F64": 1e-9, "F16": 1e-2, "BF16": 5e-2}
LIMIT = 1e4          # eager values beyond this: discard (the chain blew up)
DYNAMIC_RUN_B = (3, 7)


class Result:
    def __init__(self, status, cls=None, detail="", refusal=None):
        self.status, self.cls, self.detail, self.refusal = status, cls, detail, refusal


def load(path):
    return {k: (d, torch.from_numpy(a)) for k, (d, a) in load_typed(path).items()}


def compare(got, want, keys, floor=0.0, exact=None):
    """Differences of `got` from eager's `want` over the names `keys` selects;
    no tolerance is below `floor` (the loosest of the program's float dtypes:
    a float64 result cast from a float32 one carries float32's rounding)."""
    bad = []
    for k, (dt, w) in want.items():
        if not keys(k):
            continue
        if k not in got:
            bad.append(f"missing {k}")
            continue
        gdt, g = got[k]
        if gdt != dt or g.shape != w.shape:
            bad.append(f"{k}: {gdt}{list(g.shape)}, eager gives {dt}{list(w.shape)}")
            continue
        if not w.numel():
            continue
        tol = max(TOL.get(dt, 0.0), floor) if dt in TOL else 0.0
        scale = max(1.0, float(w[w.isfinite()].abs().max())) if w.isfinite().any() else 1.0
        same = (g == w) | (g.isnan() & w.isnan())
        err = torch.where(same, torch.zeros_like(g), (g - w).abs())
        err = err - tol * w.abs().nan_to_num(0, 0, 0) - tol * scale
        if exact and k in exact and exact[k][1].shape == w.shape:   # eager's own error, four times over
            err = err - 4 * (w - exact[k][1]).abs().nan_to_num(0, 0, 0)
        if float(err.max()) > 0:
            i = int(err.flatten().argmax())
            bad.append(f"{k}: element {i} is {float(g.flatten()[i])!r}, eager gives {float(w.flatten()[i])!r}"
                       f" (max abs diff {float((g - w).abs().nan_to_num(float('inf')).max()):.3g}, scale {scale:.3g})")
    bad += [f"{k}: no eager reference" for k in got if keys(k) and k not in want]
    return bad


def float_floor(source):
    """compare's floor: the loosest tolerance of the float dtypes a case's program names."""
    return max(TOL[st] for dt, st in (("float32", "F32"), ("float16", "F16"), ("bfloat16", "BF16")) if "torch." + dt in source)


def _one_line(stderr):
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    return lines[0] if len(lines) == 1 else None


def _classify(rc, stderr, timed_out, what):
    """None when the process succeeded, else a Result."""
    if timed_out:
        return Result("finding", "hang", f"{what}: no result after the timeout")
    if rc == 0:
        return None
    tail = stderr.strip()[-1500:]
    if rc < 0:
        return Result("finding", "crash", f"{what}: killed by signal {-rc}\n{tail}")
    if rc == 3:
        return Result("finding", "internal_error", f"{what}: exit 3\n{tail}")
    if rc == 1:
        line = _one_line(stderr)
        if line is None:
            return Result("finding", "bad_refusal", f"{what}: exit 1 without one line on stderr\n{tail}")
        return Result("refused", detail=f"{what}: {line}", refusal=line)
    return Result("finding", "bad_exit", f"{what}: exit {rc}\n{tail}")


def _run(cmd, timeout):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stderr, False
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return None, err, True


def load_case(source, path):
    """Executes a case's source as a module (custom Functions need one)."""
    name = "difffuzz_case_" + os.path.basename(os.path.dirname(path)).replace("-", "_")
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    exec(compile(source, path, "exec"), mod.__dict__)
    return mod


def _finite(path):
    for k, (_, t) in load(path).items():
        if t.is_floating_point() and (not bool(t.isfinite().all()) or (t.numel() and float(t.abs().max()) > LIMIT)):
            return False
    return True


def eager_and_export(case_dir, source):
    """Writes prog.py, the export and eager's reference; a Result when the case
    is discarded or the exporter fails, else None."""
    path = os.path.join(case_dir, "prog.py")
    with open(path, "w") as f:
        f.write(source)
    torch.manual_seed(0)
    try:
        mod = load_case(source, path)
        model = mod.Model()
        run_b = None
        if mod.DYNAMIC:
            run_b = DYNAMIC_RUN_B[mod.SEED % len(DYNAMIC_RUN_B)]
        args = mod.make_args(run_b) if run_b else mod.make_args()
        reference("ref", model, args, case_dir)
    except Exception as e:  # noqa: BLE001  eager itself refused the program
        return Result("discarded", "eager_error", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    if not _finite(os.path.join(case_dir, "ref.expected.safetensors")):
        return Result("discarded", "nonfinite", "eager's results are not finite or beyond 1e4")
    try:   # Note [Fuzz tolerances]: eager's own rounding, from a float64 twin
        reference("ref64", mod.Model(), args, case_dir, float64=True)
    except Exception:  # noqa: BLE001  some programs have no float64 twin (an explicit cast); no allowance then
        pass
    try:
        ranges = {"B": (1, 64)} if mod.DYNAMIC else None
        export(model, mod.make_args(), os.path.join(case_dir, "prog"), dynamic=mod.DYNAMIC, ranges=ranges)
    except ExportError as e:
        return Result("discarded", "export_refused", str(e).splitlines()[0])
    except Exception as e:  # noqa: BLE001
        return Result("finding", "exporter_exception", traceback.format_exc()[-2000:])
    return None


def run_case(aotc, case_dir, partitioners, backends, timeout=120, forward_only=None):
    """Compiles and runs an exported case; a list of Results (one per failing
    step, or one ok/refused).  `forward_only`: the backends that also run
    --forward-only (default: all of them)."""
    p = os.path.join(case_dir, "prog")
    want = load(os.path.join(case_dir, "ref.expected.safetensors"))
    p64 = os.path.join(case_dir, "ref64.expected.safetensors")
    exact = load(p64) if os.path.exists(p64) else None
    ecache = os.path.join(os.path.dirname(case_dir), "emulate-cache")
    with open(os.path.join(case_dir, "prog.py")) as f:
        source = f.read()
    floor = float_floor(source)
    results = []
    for part in partitioners:
        art = f"{p}.{part}.aotc"
        rc, err, to = _run([aotc, "-q", "compile", p + ".json", "-o", art, "--partitioner", part, "--no-cache"], timeout)
        r = _classify(rc, err, to, f"compile --partitioner {part}")
        if r:
            results.append(r)
            continue
        for backend in backends:
            modes = [("train", [])]
            if forward_only is None or backend in forward_only:
                modes.append(("forward-only", ["--forward-only"]))
            for mode, flags in modes:
                out = f"{p}.{part}.{backend}.{mode}.safetensors"
                cmd = [aotc, "run", art, "--backend", backend, "--inputs", p + ".safetensors",
                       "--inputs", os.path.join(case_dir, "ref.inputs.safetensors"), "--out", out] + flags
                if mode == "train":
                    cmd += ["--grad-outputs", os.path.join(case_dir, "ref.inputs.safetensors")]
                if backend == "emulate":
                    cmd += ["--cache-dir", ecache]
                what = f"run --backend {backend} ({mode}, --partitioner {part})"
                rc, err, to = _run(cmd, timeout)
                r = _classify(rc, err, to, what)
                if r:
                    results.append(r)
                    continue
                keys = (lambda k: True) if mode == "train" else \
                    (lambda k: k.startswith("output.") or k.startswith("after_forward."))
                bad = compare(load(out), want, keys, floor, exact)
                if bad:
                    results.append(Result("finding", "mismatch", what + ":\n  " + "\n  ".join(bad[:8])))
    return results or [Result("ok")]


# Note [ONNX door in the fuzzer]: a plain or mixed case (no input mutation,
# static shapes) is also exported to ONNX (torch.onnx.export's TorchScript
# exporter at opset 17, the newest aotc's ONNX 1.12 reads; the module in eval
# mode) and compiled through aotc's ONNX front end; ONNX Runtime running the
# same file is the truth, so the door is tested on what the file says (the
# exporter's own deviations from eager are not aotc's).  A case the exporter
# or ONNX Runtime cannot take is discarded; aotc's outputs on each backend are
# compared with ONNX Runtime's at the same dtype-aware tolerances.
ONNX_KINDS = ("plain", "mixed")


def onnx_case(aotc, case_dir, backends, timeout=120):
    """Results of the ONNX door for an exported case (eager_and_export ran)."""
    import inspect
    import numpy as np
    try:
        import onnxruntime as ort
    except ImportError:
        return [Result("discarded", "onnx_no_runtime", "onnxruntime is not installed")]
    from fx_export import write_safetensors
    path = os.path.join(case_dir, "prog.py")
    with open(path) as f:
        source = f.read()
    torch.manual_seed(0)
    mod = load_case(source, path)
    model = mod.Model().eval()
    args = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in mod.make_args())
    if not all(isinstance(a, torch.Tensor) for a in args) or any(a.dtype == torch.bfloat16 for a in args):
        return [Result("discarded", "onnx_inputs", "an input ONNX Runtime's CPU provider cannot feed (not a tensor, or bfloat16)")]
    names = [f"x{i}" for i in range(len(args))]
    onnx_path = os.path.join(case_dir, "prog.onnx")
    kwargs = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    try:
        import warnings
        with warnings.catch_warnings(), _quiet_fds():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, args, onnx_path, opset_version=17, input_names=names, **kwargs)
    except Exception as e:  # noqa: BLE001  the exporter's limits, not aotc's
        return [Result("discarded", "onnx_export_refused", f"{type(e).__name__}: {str(e).splitlines()[0][:150] if str(e) else ''}")]
    try:
        sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
        feed_names = [i.name for i in sess.get_inputs()]
        feeds = {n: a.numpy() for n, a in zip(names, args) if n in feed_names}
        want_np = sess.run(None, feeds)
    except Exception as e:  # noqa: BLE001
        return [Result("discarded", "onnx_runtime_error", f"{type(e).__name__}: {str(e).splitlines()[0][:150] if str(e) else ''}")]
    st = {np.dtype("float32"): "F32", np.dtype("float64"): "F64", np.dtype("float16"): "F16", np.dtype("int64"): "I64",
          np.dtype("int32"): "I32", np.dtype("bool"): "BOOL"}
    want = {}
    for i, w in enumerate(want_np):
        w = np.asarray(w)
        if w.dtype not in st:
            return [Result("discarded", "onnx_outputs", f"output {i} is {w.dtype}")]
        want[f"output.{i}"] = (st[w.dtype], torch.from_numpy(w.astype(np.float64)))
    if not all(bool(t.isfinite().all()) and (not t.numel() or float(t.abs().max()) <= LIMIT) for _, t in want.values()):
        return [Result("discarded", "onnx_nonfinite", "ONNX Runtime's results are not finite or beyond 1e4")]
    inputs = os.path.join(case_dir, "onnx.inputs.safetensors")
    write_safetensors(inputs, {n: a for n, a in zip(names, args) if n in feed_names})
    art = os.path.join(case_dir, "prog.onnx.aotc")
    rc, err, to = _run([aotc, "-q", "compile", onnx_path, "-o", art, "--no-cache"], timeout)
    r = _classify(rc, err, to, "onnx: compile")
    if r:
        return [_onnx_class(r)]
    floor = float_floor(source)
    results = []
    for backend in backends:
        out = os.path.join(case_dir, f"prog.onnx.{backend}.safetensors")
        cmd = [aotc, "run", art, "--backend", backend, "--inputs", inputs, "--out", out, "--forward-only"]
        if backend == "emulate":
            cmd += ["--cache-dir", os.path.join(os.path.dirname(case_dir), "emulate-cache")]
        what = f"onnx: run --backend {backend}"
        rc, err, to = _run(cmd, timeout)
        r = _classify(rc, err, to, what)
        if r:
            results.append(_onnx_class(r))
            continue
        bad = compare(load(out), want, lambda k: k.startswith("output."), floor)
        if bad:
            results.append(Result("finding", "onnx_mismatch", what + " against ONNX Runtime:\n  " + "\n  ".join(bad[:8])))
    return results or [Result("ok")]


class _quiet_fds:
    """Silences file descriptors 1 and 2 (the TorchScript exporter prints
    graphs from C++ on some warnings)."""
    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.saved = [os.dup(1), os.dup(2)]
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)

    def __exit__(self, *exc):
        for fd, saved in zip((1, 2), self.saved):
            os.dup2(saved, fd)
            os.close(saved)
        return False


def _onnx_class(r):
    """The ONNX door's findings are classed apart (onnx_<class>)."""
    if r.status == "finding":
        r.cls = "onnx_" + r.cls
    return r
