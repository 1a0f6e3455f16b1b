#!/usr/bin/env python3
"""Loss scaling with the optimizer in the artifact (issue 47 item 4, Note [Loss
scaling with an optimizer] in src/passes/optimizer.cpp) against eager's
GradScaler loop.

    optimizer_loss_scaling_test.py AOTC WORK [--backends reference emulate]

The MLP of optimizer_test.py (a parameter the loss does not reach included)
is compiled with `--optimizer ... --loss-scaling dynamic` (float32: eager's
float32 loop is then the exact reference) and run micro-step by micro-step
with `aotc run`, each call's after_backward.* results given back as the
next call's inputs.  Eager runs torch.amp.GradScaler("cpu")'s idiom on a
copy of the model, N micro-batches per step:

    if k % N == 0: opt.zero_grad()
    scaler.scale(loss / N).backward()
    if k % N == N - 1:
        scaler.unscale_(opt); clip_grad_norm_(...)     # when clipping
        scaler.step(opt); scaler.update()

After every micro-step the parameters, the optimizer's state, the
accumulators (eager's p.grad, scaled, before the step; zeros after it), the
micro-step counter, aotc.loss_scale and aotc.growth_tracker (eager's
scaler state) and aotc.found_inf (1 exactly on the N-th micro-step of a
skipped step) must agree; elements eager makes inf or NaN must be
non-finite in aotc's too.  The configurations:

  * SGD with momentum, --accumulate 4, --keep-grads, 12 micro-steps: micro-batch 5's
    target is 1e37 times larger (its scaled gradient is inf), so the second
    step is skipped and the scale backs off once, not once per micro-batch;
  * AdamW, --accumulate 2, --grad-clip-norm 0.5, --keep-grads (the
    gradients returned are eager's p.grad), the tracker starting at
    1999: the first step grows the scale, micro-batch 2 overflows (the
    second step skipped: no moment update, Adam's step count not
    incremented), the third step at the backed-off scale;
  * AdamW, --accumulate 2: micro-batches 2 and 3 are the same batch whose
    scaled gradients are finite, 0.75 of float32's largest, and whose sum
    overflows: eager finds inf in p.grad at the step, and so must aotc (an
    OR of per-micro-batch flags would miss it; the test checks its premise);
  * SGD, no --accumulate (N = 1), --grad-clip-norm 0.05, step 1 overflowing;
  * --precision fp16 (loss scaling by default), SGD with --accumulate 2,
    against eager's CPU autocast float16 under the same GradScaler: the
    scale, tracker and found_inf exactly, the parameters to 1e-3 (two
    autocast policies round differently); micro-batch 1's input times 3e4
    overflows float16.
"""
import argparse
import copy
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
from fx_export import export  # noqa: E402
from optimizer_test import MLP  # noqa: E402
from precision_test import load_torch, write_safetensors  # noqa: E402

FLT_MAX = torch.finfo(torch.float32).max
STATE_NAMES = {"momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"}


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def close(got, want, what, atol=1e-6, rtol=1e-5):
    """Equal to rounding where eager's value is finite; non-finite where it is not."""
    got = torch.as_tensor(got, dtype=torch.float64).reshape(want.shape)
    want = torch.as_tensor(want).detach().double()
    fin = torch.isfinite(want)
    if not torch.equal(torch.isfinite(got), fin):
        fail(f"{what}: non-finite elements differ ({int((~torch.isfinite(got)).sum())} in aotc's, {int((~fin).sum())} in eager's)")
    if not torch.allclose(got[fin], want[fin], atol=atol, rtol=rtol):
        fail(f"{what}: max abs diff {(got[fin] - want[fin]).abs().max().item():.3g}")


def calibrated_overflow(model, x, t, scale, n):
    """A target factor c: the scaled gradients of (x, t * c) are finite, 0.75 of float32's largest at most."""
    probe = copy.deepcopy(model)
    c1 = 1e30
    (torch.nn.functional.mse_loss(probe.b(torch.tanh(probe.a(x))), t * c1) / n * scale).backward()
    biggest = max(p.grad.abs().max().item() for p in probe.parameters() if p.grad is not None)
    return c1 * 0.75 * FLT_MAX / biggest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aotc")
    ap.add_argument("work")
    ap.add_argument("--backends", nargs="+", default=["reference", "emulate"])
    opts = ap.parse_args()
    os.makedirs(opts.work, exist_ok=True)
    torch.manual_seed(0)
    model = MLP()
    batches = [(torch.randn(4, 8), torch.randn(4, 4)) for _ in range(12)]
    prefix = os.path.join(opts.work, "mlp")
    export(model, batches[0], prefix)
    c_sum = calibrated_overflow(model, *batches[2], 65536.0, 2)

    def big(k, c):  # micro-batch k's target times c
        return lambda i, b: (b[0], b[1] * c) if i == k else b

    def same_pair(i, b):  # micro-batches 2 and 3: batch 2, its target times c_sum
        return (batches[2][0], batches[2][1] * c_sum) if i in (2, 3) else b

    def fp16_big(i, b):
        return (b[0] * 3e4, b[1]) if i == 1 else b

    # (name, aotc flags, torch.optim constructor, N, clip, micro-steps, batch changer, initial tracker, fp16)
    configs = [
        ("sgd_momentum_accumulate4", ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9", "--accumulate", "4", "--keep-grads"],
         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), 4, None, 12, big(5, 1e37), 0, False),
        ("adamw_accumulate2_clip", ["--optimizer", "adamw", "--lr", "0.01", "--accumulate", "2", "--grad-clip-norm", "0.5", "--keep-grads"],
         lambda p: torch.optim.AdamW(p, lr=0.01), 2, 0.5, 6, big(2, 1e37), 1999, False),
        ("adamw_accumulate2_sum_overflows", ["--optimizer", "adamw", "--lr", "0.01", "--accumulate", "2"],
         lambda p: torch.optim.AdamW(p, lr=0.01), 2, None, 6, same_pair, 0, False),
        ("sgd_clip", ["--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9", "--grad-clip-norm", "0.05"],
         lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), 1, 0.05, 3, big(1, 1e37), 0, False),
        ("fp16_sgd_accumulate2", ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9", "--accumulate", "2"],
         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), 2, None, 6, fp16_big, 0, True),
    ]
    for cname, flags, make_opt, n, clip, steps, change, tracker0, fp16 in configs:
        art = f"{prefix}.{cname}.aotc"
        prec = ["--precision", "fp16"] if fp16 else ["--loss-scaling", "dynamic"]
        r = subprocess.run([opts.aotc, "compile", prefix + ".json", "-o", art, "-q", "--arch", "sm_90"] + prec + flags,
                           capture_output=True, text=True)
        if r.returncode:
            fail(f"{cname}: compile: {r.stderr.strip()}")
        tol = dict(atol=1e-3, rtol=1e-3) if fp16 else {}
        skipped = 0
        for backend in opts.backends:
            ref = copy.deepcopy(model)
            opt = make_opt(ref.parameters())
            scaler = torch.amp.GradScaler("cpu")
            scaler.load_state_dict({"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
                                    "_growth_tracker": tracker0})
            names = {id(p): n_ for n_, p in ref.named_parameters()}
            carried = {"aotc.growth_tracker": torch.tensor(tracker0, dtype=torch.int32)}
            for k in range(steps):
                x, target = change(k, batches[k])
                where = f"{cname} {backend} micro-step {k}"
                inputs = os.path.join(opts.work, f"{cname}.{backend}.in{k}.safetensors")
                write_safetensors(inputs, {"x": x, "target": target, **carried})
                out = os.path.join(opts.work, f"{cname}.{backend}.out{k}.safetensors")
                r = subprocess.run([opts.aotc, "run", art, "--backend", backend, "--inputs", inputs, "--out", out],
                                   capture_output=True, text=True)
                if r.returncode:
                    fail(f"{where}: {r.stderr.strip()}")
                got = {g: t for g, (_, t) in load_torch(out).items()}
                # Eager: GradScaler's idiom.
                if k % n == 0:
                    opt.zero_grad(set_to_none=True)
                with torch.autocast("cpu", dtype=torch.float16, enabled=fp16):
                    loss = ref(x, target)
                scaler.scale(loss / n if n > 1 else loss).backward()
                last = k % n == n - 1
                if cname.endswith("sum_overflows") and k == 2:
                    if not all(torch.isfinite(p.grad).all() for p in ref.parameters() if p.grad is not None):
                        fail(f"{where}: the premise: micro-batch 2's scaled gradients are finite")
                acc = {n_: p.grad.clone() for n_, p in ref.named_parameters() if p.grad is not None}
                found = 0.0
                if last:
                    if clip:
                        scaler.unscale_(opt)
                        torch.nn.utils.clip_grad_norm_(ref.parameters(), clip)
                    scaler.step(opt)
                    found = sum(v.item() for v in scaler._per_optimizer_states[id(opt)]["found_inf_per_device"].values())
                    scaler.update()
                    skipped += 1 if found else 0
                if cname.endswith("sum_overflows") and k == 3 and not found:
                    fail(f"{where}: the premise: the sum of two finite scaled gradients overflows in eager's p.grad")
                close(got["output.0"], loss.float(), f"{where}: the loss", **tol)
                for n_, p in ref.named_parameters():
                    key = "after_backward." + n_
                    if p.grad is None:
                        if key in got or any(g.startswith(f"after_backward.optim.{n_}.") for g in got):
                            fail(f"{where}: '{n_}' is not reached by the loss, yet aotc updated it or gave it state")
                        continue
                    close(got[key], p, f"{where}: parameter {n_}", **tol)
                    if "--keep-grads" in flags:  # eager's p.grad after the call: scaled sum, or unscaled and clipped by the step
                        fin = p.grad[torch.isfinite(p.grad)].abs()
                        unit = max(1.0, fin.max().item() if fin.numel() else 0.0)
                        close(got["grad." + n_], p.grad, f"{where}: gradient {n_} (--keep-grads)", atol=1e-6 * unit)
                    if n > 1:
                        # Scaled (by S / N, or the overflow's size): so is the distance two orders of summation give.
                        fin = acc[n_][torch.isfinite(acc[n_])].abs()
                        unit = max(scaler.get_scale() / n, fin.max().item() if fin.numel() else 0.0) if not last else 1.0
                        close(got[f"after_backward.optim.{n_}.grad_acc"], torch.zeros_like(p) if last else acc[n_],
                              f"{where}: grad_acc of {n_}", atol=(1e-3 if fp16 else 1e-6) * unit, rtol=tol.get("rtol", 1e-5))
                for p, st in opt.state.items():
                    for s, v in st.items():
                        if s not in STATE_NAMES:
                            continue
                        key = "after_backward.optim.step" if s == "step" else f"after_backward.optim.{names[id(p)]}.{s}"
                        close(got[key], torch.as_tensor(v), f"{where}: {s} of {names[id(p)]}", **tol)
                if n > 1 and int(got["after_backward.optim.micro_step"]) != (k + 1) % n:
                    fail(f"{where}: optim.micro_step {int(got['after_backward.optim.micro_step'])}, want {(k + 1) % n}")
                want = {"aotc.loss_scale": scaler.get_scale(), "aotc.growth_tracker": int(scaler._growth_tracker),
                        "aotc.found_inf": 1.0 if found else 0.0}
                have = {s: float(got["after_backward." + s]) for s in want}
                if have != {s: float(v) for s, v in want.items()}:
                    fail(f"{where}: GradScaler's state {have}, eager's {want}")
                if last and found and "the optimizer step was skipped" not in r.stderr:
                    fail(f"{where}: aotc run does not say the step was skipped: {r.stderr.strip()}")
                carried = {g[len("after_backward."):]: torch.as_tensor(v) for g, v in got.items() if g.startswith("after_backward.")}
        if not skipped:
            fail(f"{cname}: no step was skipped: the test exercises nothing")
        print(f"ok   {cname}: {steps} micro-steps on {', '.join(opts.backends)} match eager's GradScaler loop "
              f"({skipped // len(opts.backends)} step(s) skipped)")
    print("optimizer_loss_scaling: every configuration matches eager's GradScaler")


if __name__ == "__main__":
    main()
