#!/usr/bin/python3
"""Issue 37 item 4: fp16 dynamic loss scaling, as torch.cuda.amp.GradScaler
does it (Note [Loss scaling], src/passes/loss_scaling.cpp).

An MLP whose loss is small (its float16 gradients fall into float16's
subnormals, where GradScaler earns its keep) is exported in float32 and
compiled with --precision fp16 (loss scaling on by default for training):

1. the manifest records `loss_scaling` (GradScaler's constants, the three
   state inputs) and `aotc inspect` says so; the artifact's weights hold the
   initial state (scale 2^16, tracker 0, found_inf 0);
2. a clean step on the reference and emulate backends: found_inf 0, the
   scale unchanged, the tracker 1, and the gradients (unscaled) match eager
   float32's to 2e-2 relative, where the same artifact compiled with
   --loss-scaling none loses them to float16's underflow (checked: its worst
   error is at least 5x larger);
3. an overflowing step (an input of 3e4: the scaled backward passes
   float16's 65504): found_inf 1, the scale halved, the tracker reset, and
   `aotc run` says to skip the step;
4. growth: the tracker given as 1999, a clean step doubles the scale and
   resets it; a scale whose doubling is inf keeps its value, as
   _amp_update_scale_ does (float32 gradients, --loss-scaling dynamic);
5. the C ABI (libaotc_runtime.so through ctypes, emulate device): two steps
   on one runtime without binding the state (the runtime's own, kept from
   step to step), aotc_loss_scale reporting found_inf and the scale;
6. refusals: float16 parameters (GradScaler refuses to unscale float16
   gradients) in one line; an inference program gets no loss scaling.

    /usr/bin/python3 scripts/loss_scaling_test.py AOTC LIBAOTC_RUNTIME|- WORKDIR
"""
import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from compare_safetensors import load  # noqa: E402
from fx_export import export, write_safetensors  # noqa: E402

SMALL = 2e-5  # the loss's scale: float16 gradients of ~1e-7, below float16's normals (6e-5)


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x, t):
        return F.mse_loss(self.fc2(torch.relu(self.fc1(x))), t) * SMALL


class HalfScale(torch.nn.Module):
    """A float16 parameter (CPU PyTorch 1.13 multiplies float16, it has no float16 addmm)."""
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.rand(16).half())

    def forward(self, x):
        return (x.half() * self.w).float().sum()


failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def eager_grads(model, x, t):
    m = Mlp()
    m.load_state_dict(model.state_dict())
    loss = m(x, t)
    loss.backward()
    return {f"grad.{n}": p.grad.detach().double().numpy() for n, p in m.named_parameters()}


def worst_rel(got, want):
    scale = max(float(np.abs(want).max()), 1e-30)
    return float(np.abs(got - want).max()) / scale


def main():
    aotc, lib, work = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    model = Mlp()
    x = torch.randn(4, 16)
    t = torch.randn(4, 8)
    prefix = os.path.join(work, "mlp")
    export(model, (x, t), prefix)
    art, plain = prefix + ".fp16", prefix + ".fp16-unscaled"
    for out, extra in ((art, []), (plain, ["--loss-scaling", "none"])):
        r = run([aotc, "compile", prefix + ".json", "-o", out, "--precision", "fp16", "-q"] + extra)
        check(r.returncode == 0, f"compile --precision fp16 {' '.join(extra)} {r.stderr.strip()}")
        if r.returncode:
            return
    man = json.load(open(os.path.join(art, "manifest.json")))
    ls = man.get("loss_scaling", {})
    check(ls.get("init_scale") == 65536 and ls.get("growth_factor") == 2 and ls.get("backoff_factor") == 0.5
          and ls.get("growth_interval") == 2000, f"the manifest records GradScaler's constants: {ls}")
    state = {i["name"]: i for i in man["inputs"] if i["name"].startswith("aotc.")}
    check(sorted(state) == ["aotc.found_inf", "aotc.growth_tracker", "aotc.loss_scale"]
          and all(i.get("mutation") == "backward" for i in state.values()),
          f"three state inputs, written by the backward: {[(n, i.get('mutation')) for n, i in state.items()]}")
    check("loss_scaling" not in json.load(open(os.path.join(plain, "manifest.json"))), "--loss-scaling none: no loss_scaling entry")
    weights = load(os.path.join(art, "weights.safetensors"))
    check(float(weights["aotc.loss_scale"]) == 65536 and float(weights["aotc.growth_tracker"]) == 0
          and float(weights["aotc.found_inf"]) == 0, "the artifact's weights hold the initial state")
    insp = run([aotc, "inspect", art]).stdout
    check("loss scaling: dynamic" in insp, "aotc inspect names the loss scaling")

    want = eager_grads(model, x, t)
    inputs = os.path.join(work, "in.safetensors")
    write_safetensors(inputs, {"x": x, "t": t})

    def step(artifact, backend, extra_inputs=None, tag="", inp=None):
        # The state not given comes from the artifact's weights (its initial values).
        files = [inp or inputs]
        if extra_inputs:
            path = os.path.join(work, f"state{tag}.safetensors")
            write_safetensors(path, extra_inputs)
            files.append(path)
        out = os.path.join(work, f"out.{backend}{tag}.safetensors")
        r = run([aotc, "run", artifact, "--inputs", *files, "--backend", backend, "--out", out])
        if r.returncode:
            check(False, f"aotc run {backend}{tag}: {r.stderr.strip()}")
            return None, r.stderr
        return load(out), r.stderr

    for be in ("reference", "emulate"):
        got, err = step(art, be)
        if got is None:
            continue
        check(float(got["after_backward.aotc.found_inf"]) == 0 and float(got["after_backward.aotc.loss_scale"]) == 65536
              and float(got["after_backward.aotc.growth_tracker"]) == 1,
              f"{be}: a clean step: found_inf 0, scale 65536, tracker 1")
        check("no overflow" in err, f"{be}: aotc run reports the step: {err.strip()}")
        errs = {k: worst_rel(np.asarray(got[k], dtype=np.float64), w) for k, w in want.items()}
        check(all(e < 2e-2 for e in errs.values()), f"{be}: unscaled gradients match eager float32 to 2e-2: "
              + ", ".join(f"{k} {e:.1e}" for k, e in errs.items()))
        base, _ = step(plain, be, tag="-plain")
        if base is not None:
            plain_errs = {k: worst_rel(np.asarray(base[k], dtype=np.float64), w) for k, w in want.items()}
            check(max(plain_errs.values()) > 5 * max(errs.values()),
                  f"{be}: without loss scaling float16 loses them (worst {max(plain_errs.values()):.1e} against "
                  f"{max(errs.values()):.1e})")

        # 3. overflow: the scaled backward passes float16's range.
        big = os.path.join(work, "big.safetensors")
        write_safetensors(big, {"x": x * 3e4, "t": t})
        got, err = step(art, be, tag="-big", inp=big)
        if got is not None:
            check(float(got["after_backward.aotc.found_inf"]) == 1 and float(got["after_backward.aotc.loss_scale"]) == 32768
                  and float(got["after_backward.aotc.growth_tracker"]) == 0,
                  f"{be}: an overflow: found_inf 1, scale 32768, tracker 0 (got {float(got['after_backward.aotc.found_inf'])}, "
                  f"{float(got['after_backward.aotc.loss_scale'])}, {float(got['after_backward.aotc.growth_tracker'])})")
            check("skip this optimizer step" in err, f"{be}: aotc run says to skip the step")

        # 4. growth, and a doubling that would be inf.
        for scale, tracker, want_scale, want_tracker in ((65536.0, 1999, 131072.0, 0), (65536.0, 5, 65536.0, 6),
                                                         (2.0 ** 127, 1999, 2.0 ** 127, 0)):
            st = {"aotc.loss_scale": torch.tensor(scale, dtype=torch.float32),
                  "aotc.growth_tracker": torch.tensor(tracker, dtype=torch.int32),
                  "aotc.found_inf": torch.tensor(0.0)}
            got, _ = step(art, be, st, tag=f"-grow{tracker}")
            if got is None:
                continue
            s, k = float(got["after_backward.aotc.loss_scale"]), float(got["after_backward.aotc.growth_tracker"])
            fi = float(got["after_backward.aotc.found_inf"])
            # 2^127 scales a gradient of 1e-7 past float16: that step overflows.
            if scale == 2.0 ** 127:
                check(fi == 1 and s == 2.0 ** 126, f"{be}: scale 2^127 overflows float16 and backs off (found_inf {fi}, scale {s})")
            else:
                check(fi == 0 and s == want_scale and k == want_tracker,
                      f"{be}: scale {scale:g}, tracker {tracker}: next {want_scale:g}, {want_tracker} (got {s:g}, {k:g})")

    # A doubling that would be inf keeps the scale (float32 gradients:
    # --precision fp32 --loss-scaling dynamic, where 2^127 does not overflow).
    f32 = prefix + ".fp32-scaled"
    r = run([aotc, "compile", prefix + ".json", "-o", f32, "--loss-scaling", "dynamic", "-q"])
    check(r.returncode == 0, f"compile --loss-scaling dynamic (float32) {r.stderr.strip()}")
    if r.returncode == 0:
        st = {"aotc.loss_scale": torch.tensor(2.0 ** 127), "aotc.growth_tracker": torch.tensor(1999, dtype=torch.int32),
              "aotc.found_inf": torch.tensor(0.0)}
        got, _ = step(f32, "reference", st, tag="-f32")
        if got is not None:
            s_, k_ = float(got["after_backward.aotc.loss_scale"]), float(got["after_backward.aotc.growth_tracker"])
            check(float(got["after_backward.aotc.found_inf"]) == 0 and s_ == 2.0 ** 127 and k_ == 0,
                  f"float32, scale 2^127 at the interval: the doubling is inf, the scale stays, the tracker resets (got {s_:g}, {k_:g})")
            errs = {k: worst_rel(np.asarray(got[k], dtype=np.float64), w) for k, w in want.items()}
            check(all(e < 1e-5 for e in errs.values()), "float32 with a scale of 2^127: the gradients unscale exactly: "
                  + ", ".join(f"{k} {e:.1e}" for k, e in errs.items()))

    # 5. The C ABI: two steps on one runtime, the state the runtime's own
    # ("-": the sanitized build, whose library an unsanitized python cannot load).
    if lib != "-":
        c_abi(lib, art, x, t)

    # 6. Refusals and the inference case.
    half = prefix + "_half"
    export(HalfScale(), (x,), half)
    r = run([aotc, "compile", half + ".json", "-o", half + ".art", "--precision", "fp16", "-q"])
    check(r.returncode == 1 and "GradScaler refuses to unscale float16 gradients" in r.stderr and len(r.stderr.strip().splitlines()) == 1
          and not os.path.exists(half + ".art"), f"float16 parameters are refused in one line: {r.stderr.strip()}")
    infer = prefix + "_infer"
    with torch.no_grad():
        frozen = Mlp()
        for p in frozen.parameters():
            p.requires_grad_(False)
        export(frozen, (x, t), infer)
    r = run([aotc, "compile", infer + ".json", "-o", infer + ".art", "--precision", "fp16", "-q"])
    check(r.returncode == 0 and "loss_scaling" not in json.load(open(os.path.join(infer + ".art", "manifest.json"))),
          f"a program without gradients gets no loss scaling {r.stderr.strip()}")


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64))]


def c_abi(lib_path, art, x, t):
    header = open(os.path.join(ROOT, "include", "aotc", "runtime", "c_api.h")).read()
    if "int64_t* shape" not in header.replace("const ", "") and "int64_t *shape" not in header:
        # The struct above mirrors aotc_tensor; refuse to guess if the header changed.
        check(False, "c_api.h's aotc_tensor is what this test mirrors")
        return
    lib = ctypes.CDLL(lib_path)
    rt = ctypes.c_void_p()
    err = ctypes.create_string_buffer(512)
    if lib.aotc_open(art.encode(), b"emulate", ctypes.byref(rt), err, 512):
        check(False, f"aotc_open: {err.value.decode()}")
        return
    lib.aotc_error.restype = ctypes.c_char_p
    keep = []

    def bind(name, arr):
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        ptr = ctypes.c_void_p()
        assert lib.aotc_alloc(rt, ctypes.c_size_t(arr.nbytes), ctypes.byref(ptr)) == 0
        assert lib.aotc_copy_to_device(rt, ptr, arr.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(arr.nbytes)) == 0
        shape = (ctypes.c_int64 * arr.ndim)(*arr.shape)
        keep.append((ptr, shape))
        ten = Tensor(ptr, 0, arr.ndim, shape, None)  # AOTC_F32 is 0
        return lib.aotc_bind(rt, name.encode(), ctypes.byref(ten))

    check(lib.aotc_loss_scaling(rt) == 1, "C ABI: aotc_loss_scaling says the artifact scales its loss")
    ok = bind("x", x.numpy()) == 0 and bind("t", t.numpy()) == 0
    check(ok, f"C ABI: inputs bound {lib.aotc_error(rt)}")
    scale, found = ctypes.c_float(), ctypes.c_int()
    seen = []
    for _ in range(2):
        rc = lib.aotc_forward(rt) or lib.aotc_backward(rt) or lib.aotc_loss_scale(rt, ctypes.byref(scale), ctypes.byref(found))
        if rc:
            check(False, f"C ABI step: {lib.aotc_error(rt)}")
            break
        tracker = ctypes.c_int32()
        view = (ctypes.c_byte * 512)()  # an aotc_tensor_view (280 bytes)
        if lib.aotc_input(rt, b"aotc.growth_tracker", view) == 0:
            dev = ctypes.c_void_p.from_buffer(view).value
            lib.aotc_copy_to_host(rt, ctypes.byref(tracker), ctypes.c_void_p(dev), ctypes.c_size_t(4))
        seen.append((scale.value, found.value, tracker.value))
    check(seen == [(65536.0, 0, 1), (65536.0, 0, 2)], f"C ABI: two clean steps keep the state on the device: {seen}")
    lib.aotc_close(rt)


if __name__ == "__main__":
    main()
    print(f"loss_scaling_test: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
