#!/usr/bin/env python3
"""The optimizer in the artifact (issue 47, Note [Optimizer step]) against torch.optim.

    optimizer_test.py AOTC WORK [--backends reference emulate] [--steps K] [--quick]

Each model (an MLP with a mean-squared loss, and a small CNN with train-mode
BatchNorm and a cross-entropy loss) is exported by tools/fx_export.py,
compiled with `--optimizer ...` for each configuration below, and run for K
training steps with `aotc run`: each step's after_backward.<name> results
(parameters, BatchNorm's running statistics, the optimizer's state
optim.<param>.<state>) are given back as the next step's inputs, as a
training loop keeps them.  Eager runs the same K steps with torch.optim
(zero_grad, loss.backward(), step) on a copy of the model; after every step
every parameter, buffer and optimizer state tensor must agree (float32:
atol 1e-6 + rtol 1e-5, the distance two orders of summation give), and a
parameter the loss does not reach (the MLP's `unused`) must be untouched
and carry no state, as torch.optim skips a parameter whose .grad is None.
The learning rate is an input (optim.lr, float64): a schedule sets it
before each step.  `aotc run --steps 4` runs four steps in one call, its printed losses and
final parameters eager's.  A resumed checkpoint: eager's state_dict after two steps, converted by
scripts/optim_state.py, continued by aotc as eager continues, and aotc's
state converted back and loaded by optimizer.load_state_dict.  Parameter
groups select lr and weight decay by name globs (the usual "no
weight decay for biases and norms"), and --grad-clip-norm clips as
clip_grad_norm_ does before the step.  --accumulate 4 (SGD with momentum,
AdamW) runs 8 steps against eager's own loop of 4 micro-batches each
`(loss / 4).backward()`, then step and zero_grad: two updates, the
parameters, state, accumulators (eager's p.grad) and the int32 micro-step
counter checked after every step.  Also checked: a flag without its optimizer, and torch.optim's argument
checks, are refused in one line.
"""
import argparse
import copy
import fnmatch
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
from fx_export import export  # noqa: E402
from precision_test import load_torch, write_safetensors  # noqa: E402


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4)
        self.unused = torch.nn.Parameter(torch.randn(3))  # the loss does not reach it

    def forward(self, x, target):
        return torch.nn.functional.mse_loss(self.b(torch.tanh(self.a(x))), target)


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        # No bias before train-mode BatchNorm (as ResNets have none): its gradient is
        # zero in exact arithmetic, and Adam's m / sqrt(v) turns rounding noise into steps of lr.
        self.c = torch.nn.Conv2d(3, 6, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(6)
        self.fc = torch.nn.Linear(6, 5)

    def forward(self, x, target):
        h = torch.relu(self.bn(self.c(x))).mean((2, 3))
        return torch.nn.functional.cross_entropy(self.fc(h), target)


# (name, aotc flags, torch.optim constructor)
CONFIGS = [
    ("sgd", ["--optimizer", "sgd", "--lr", "0.1"], lambda p: torch.optim.SGD(p, lr=0.1)),
    ("sgd_momentum_wd_nesterov", ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9", "--weight-decay", "0.01", "--nesterov"],
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01, nesterov=True)),
    ("sgd_dampening_maximize", ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.8", "--dampening", "0.3", "--maximize"],
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, dampening=0.3, maximize=True)),
    ("adam_amsgrad_wd", ["--optimizer", "adam", "--lr", "0.01", "--weight-decay", "0.1", "--amsgrad", "--betas", "0.8,0.99"],
     lambda p: torch.optim.Adam(p, lr=0.01, weight_decay=0.1, amsgrad=True, betas=(0.8, 0.99))),
    ("adamw", ["--optimizer", "adamw", "--lr", "0.01"], lambda p: torch.optim.AdamW(p, lr=0.01)),
    # Parameter groups by name (no weight decay for biases and norms) and clipping.
    ("adamw_groups_clip", ["--optimizer", "adamw", "--lr", "0.01", "--weight-decay", "0.05", "--grad-clip-norm", "0.1",
                           "--param-group", "*.bias|bn.*:weight_decay=0", "--param-group", "fc.*|b.*:lr=0.003"],
     "groups"),
    ("sgd_clip", ["--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9", "--grad-clip-norm", "0.05"],
     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
    # A learning-rate schedule: optim.lr given as an input before each step
    # (no recompile), as the scheduler sets the group's lr in eager.
    # beta1 and momentum too (Note [Run-time momentum]: OneCycleLR's
    # cycle_momentum sets group['betas'] / group['momentum'] every step);
    # beta1 falls below 0.5, where lerp's weight 1 - beta1 takes its other branch.
    ("adam_schedule", ["--optimizer", "adam", "--lr", "0.02"], lambda p: torch.optim.Adam(p, lr=0.02)),
    ("sgd_nesterov_cycle_momentum", ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.95", "--nesterov"],
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.95, nesterov=True)),
    # Gradient accumulation (Note [Gradient accumulation]): eager's loop of
    # 4 micro-batches, each (loss / 4).backward(), then step and zero_grad;
    # ACCUMULATE_STEPS steps (two updates), the accumulators and the counter checked too.
    ("sgd_momentum_accumulate4", ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9", "--accumulate", "4"],
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
    ("adamw_accumulate4", ["--optimizer", "adamw", "--lr", "0.01", "--accumulate", "4"], lambda p: torch.optim.AdamW(p, lr=0.01)),
]
SCHEDULE = {"adam_schedule": lambda k: {"lr": 0.02 * 0.5 ** k, "beta1": [0.9, 0.4, 0.7][k % 3]},
            "sgd_nesterov_cycle_momentum": lambda k: {"lr": 0.05 * (k + 1), "momentum": [0.95, 0.5, 0.9][k % 3]}}
ACCUMULATE = {"sgd_momentum_accumulate4": 4, "adamw_accumulate4": 4}
ACCUMULATE_STEPS = 8
CLIP = {"adamw_groups_clip": 0.1, "sgd_clip": 0.05}


def grouped(model):
    """adamw_groups_clip's torch.optim groups, as the --param-group flags select them."""
    nodecay, slow, rest = [], [], []
    for n, p in model.named_parameters():
        if fnmatch.fnmatch(n, "*.bias") or fnmatch.fnmatch(n, "bn.*"):
            nodecay.append(p)
        elif fnmatch.fnmatch(n, "fc.*") or fnmatch.fnmatch(n, "b.*"):
            slow.append(p)
        else:
            rest.append(p)
    groups = [{"params": rest}]
    if nodecay:
        groups.append({"params": nodecay, "weight_decay": 0.0})
    if slow:
        groups.append({"params": slow, "lr": 0.003})
    return torch.optim.AdamW(groups, lr=0.01, weight_decay=0.05)
STATE_NAMES = {"momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"}


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def close(got, want, what):
    got = torch.as_tensor(got, dtype=torch.float64).reshape(want.shape)
    want = want.detach().double()
    if not torch.allclose(got, want, atol=1e-6, rtol=1e-5):
        fail(f"{what}: max abs diff {(got - want).abs().max().item():.3g}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aotc")
    ap.add_argument("work")
    ap.add_argument("--backends", nargs="+", default=["reference", "emulate"])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="the MLP, SGD with momentum and AdamW only")
    opts = ap.parse_args()
    os.makedirs(opts.work, exist_ok=True)
    torch.manual_seed(0)
    models = {"mlp": (MLP(), lambda: (torch.randn(4, 8), torch.randn(4, 4))),
              "cnn": (CNN().train(), lambda: (torch.randn(4, 3, 6, 6), torch.randint(0, 5, (4,))))}
    configs = CONFIGS
    if opts.quick:
        models = {"mlp": models["mlp"]}
        configs = [c for c in CONFIGS if c[0] in ("sgd_momentum_wd_nesterov", "adamw_groups_clip", "adamw_accumulate4")]
    checked = 0
    for mname, (model, make_batch) in models.items():
        all_batches = [make_batch() for _ in range(max(opts.steps, ACCUMULATE_STEPS))]
        prefix = os.path.join(opts.work, mname)
        export(model, all_batches[0], prefix)
        for cname, flags, make_opt in configs:
            accumulate = ACCUMULATE.get(cname, 1)
            batches = all_batches[:ACCUMULATE_STEPS if accumulate > 1 else opts.steps]
            art = f"{prefix}.{cname}.aotc"
            r = subprocess.run([opts.aotc, "compile", prefix + ".json", "-o", art, "-q", "--arch", "sm_90"] + flags,
                               capture_output=True, text=True)
            if r.returncode:
                fail(f"{mname} {cname}: compile: {r.stderr.strip()}")
            for backend in opts.backends:
                ref = copy.deepcopy(model)
                opt = grouped(ref) if make_opt == "groups" else make_opt(ref.parameters())
                names = {id(p): n for n, p in ref.named_parameters()}
                carried = {}  # after_backward.<name> of the last step, as the next step's inputs
                for k, (x, target) in enumerate(batches):
                    inputs = os.path.join(opts.work, f"{mname}.{cname}.{backend}.in{k}.safetensors")
                    given = {"x": x, "target": target, **carried}
                    if cname in SCHEDULE:
                        for key, v in SCHEDULE[cname](k).items():
                            for grp in opt.param_groups:
                                if key == "beta1":
                                    grp["betas"] = (v, grp["betas"][1])
                                else:
                                    grp[key] = v
                            given["optim." + key] = torch.tensor(v, dtype=torch.float64)
                    write_safetensors(inputs, given)
                    out = os.path.join(opts.work, f"{mname}.{cname}.{backend}.out{k}.safetensors")
                    r = subprocess.run([opts.aotc, "run", art, "--backend", backend, "--inputs", inputs, "--out", out],
                                       capture_output=True, text=True)
                    if r.returncode:
                        fail(f"{mname} {cname} {backend} step {k}: {r.stderr.strip()}")
                    typed = load_torch(out)
                    got = {g: t for g, (_, t) in typed.items()}
                    if k % accumulate == 0:
                        opt.zero_grad(set_to_none=True)
                    loss = ref(x, target)
                    (loss / accumulate if accumulate > 1 else loss).backward()
                    where = f"{mname} {cname} {backend} step {k}"
                    if accumulate > 1:  # the accumulators hold eager's p.grad before the step, zeros after it
                        for n, p in ref.named_parameters():
                            key = f"after_backward.optim.{n}.grad_acc"
                            if p.grad is None:
                                continue
                            if key not in got:
                                fail(f"{where}: no {key}")
                            close(got[key], p.grad if k % accumulate != accumulate - 1 else torch.zeros_like(p), f"{where}: grad_acc of {n}")
                            checked += 1
                        counter = torch.as_tensor(got.get("after_backward.optim.micro_step", -1))
                        if counter.dtype != torch.int32 or int(counter) != (k + 1) % accumulate:
                            fail(f"{where}: optim.micro_step {counter!r}, want int32 {(k + 1) % accumulate}")
                    if k % accumulate == accumulate - 1:
                        if cname in CLIP:
                            torch.nn.utils.clip_grad_norm_(ref.parameters(), CLIP[cname])
                        opt.step()
                    close(got["output.0"], loss, f"{where}: the loss")
                    for n, p in ref.named_parameters():
                        key = "after_backward." + n
                        if p.grad is None:  # unreachable: untouched, no state
                            if key in got or any(g.startswith(f"after_backward.optim.{n}.") for g in got):
                                fail(f"{where}: '{n}' is not reached by the loss, yet aotc updated it or gave it state")
                            continue
                        if key not in got:
                            fail(f"{where}: no {key}")
                        close(got[key], p, f"{where}: parameter {n}")
                    for n, b in ref.named_buffers():
                        if "after_backward." + n in got:
                            close(got["after_backward." + n], b, f"{where}: buffer {n}")
                    for p, st in opt.state.items():
                        for s, v in st.items():
                            if s not in STATE_NAMES:
                                continue
                            key = "after_backward.optim.step" if s == "step" else f"after_backward.optim.{names[id(p)]}.{s}"
                            if s == "step" and key not in got:  # SGD without momentum keeps none
                                continue
                            if key not in got:
                                fail(f"{where}: no {key}")
                            close(got[key], torch.as_tensor(v), f"{where}: {s} of {names[id(p)]}")
                            checked += 1
                    carried = {g[len("after_backward."):]: torch.as_tensor(v) for g, v in got.items() if g.startswith("after_backward.")}
                print(f"ok   {mname} {cname} {backend}: {len(batches)} steps match torch.optim")
    # `aotc run --steps K`: K steps on one batch in one run, each from the
    # last one's parameters and state; the printed losses are eager's.
    for backend in opts.backends:
        cname, flags, make_opt = next(c for c in configs if c[0] == "sgd_momentum_wd_nesterov")
        art = os.path.join(opts.work, f"mlp.{cname}.aotc")
        ref = copy.deepcopy(models["mlp"][0])
        opt = make_opt(ref.parameters())
        torch.manual_seed(2)
        x, target = models["mlp"][1]()
        inputs, out = os.path.join(opts.work, "steps.in.safetensors"), os.path.join(opts.work, f"steps.{backend}.out.safetensors")
        write_safetensors(inputs, {"x": x, "target": target})
        r = subprocess.run([opts.aotc, "run", art, "--backend", backend, "--inputs", inputs, "--steps", "4", "--out", out],
                           capture_output=True, text=True)
        if r.returncode:
            fail(f"--steps 4 {backend}: {r.stderr.strip()}")
        losses = [float(line.split()[-1]) for line in r.stdout.splitlines() if line.startswith("step ")]
        want = []
        for _ in range(4):
            opt.zero_grad(set_to_none=True)
            loss = ref(x, target)
            loss.backward()
            opt.step()
            want.append(loss.item())
        if len(losses) != 4 or not all(abs(a - b) <= 1e-5 * max(1.0, abs(b)) for a, b in zip(losses, want)):
            fail(f"--steps 4 {backend}: losses {losses}, eager {want}")
        got = {g: t for g, (_, t) in load_torch(out).items()}
        for n, p in ref.named_parameters():
            if p.grad is not None:
                close(got["after_backward." + n], p, f"--steps 4 {backend}: parameter {n}")
        print(f"ok   aotc run --steps 4 ({backend}): losses {', '.join(f'{v:.5f}' for v in losses)} and parameters as eager's")
    # A resumed checkpoint (scripts/optim_state.py): eager's first two steps,
    # its state_dict given to aotc for the third, which must land where
    # eager's third does; aotc's state back as a state_dict eager loads.
    import optim_state
    mname, (model, make_batch) = "mlp", models["mlp"]
    prefix = os.path.join(opts.work, mname)
    for cname, flags, make_opt in [c for c in configs if c[0] in ("sgd_momentum_wd_nesterov", "adam_amsgrad_wd", "adamw_groups_clip")]:
        art = f"{prefix}.{cname}.aotc"
        ref = copy.deepcopy(model)
        opt = grouped(ref) if make_opt == "groups" else make_opt(ref.parameters())
        # Positions to names: the artifact's parameter order for one group of
        # model.parameters(); the groups' own order otherwise (--names).
        name_of = {id(p): n for n, p in ref.named_parameters()}
        names = [name_of[id(p)] for g in opt.param_groups for p in g["params"]]
        if make_opt != "groups" and names != optim_state.parameter_names(art):
            fail(f"resume {cname}: the artifact's parameter order {optim_state.parameter_names(art)} is not model.parameters()'s {names}")
        torch.manual_seed(1)
        batches = [make_batch() for _ in range(3)]
        for x, target in batches[:2]:
            opt.zero_grad(set_to_none=True)
            ref(x, target).backward()
            if cname in CLIP:
                torch.nn.utils.clip_grad_norm_(ref.parameters(), CLIP[cname])
            opt.step()
        given = {n: p.detach().clone() for n, p in ref.named_parameters()}
        given.update(optim_state.to_aotc(opt.state_dict(), names))
        x, target = batches[2]
        given.update({"x": x, "target": target})
        inputs, out = os.path.join(opts.work, f"resume.{cname}.in.safetensors"), os.path.join(opts.work, f"resume.{cname}.out.safetensors")
        write_safetensors(inputs, given)
        r = subprocess.run([opts.aotc, "run", art, "--backend", "reference", "--inputs", inputs, "--out", out], capture_output=True, text=True)
        if r.returncode:
            fail(f"resume {cname}: {r.stderr.strip()}")
        got = {g: t for g, (_, t) in load_torch(out).items()}
        opt.zero_grad(set_to_none=True)
        ref(x, target).backward()
        if cname in CLIP:
            torch.nn.utils.clip_grad_norm_(ref.parameters(), CLIP[cname])
        opt.step()
        for n, p in ref.named_parameters():
            if p.grad is not None:
                close(got["after_backward." + n], p, f"resume {cname}: parameter {n}")
        back = optim_state.to_torch(got, names, opt.state_dict())
        fresh = grouped(copy.deepcopy(ref)) if make_opt == "groups" else make_opt(copy.deepcopy(ref).parameters())
        fresh.load_state_dict(back)
        want = opt.state_dict()["state"]
        have = fresh.state_dict()["state"]
        if sorted(want) != sorted(have):
            fail(f"resume {cname}: state for positions {sorted(have)}, eager has {sorted(want)}")
        for pos in want:
            for s, v in want[pos].items():
                close(have[pos][s], torch.as_tensor(v), f"resume {cname}: {s} of position {pos} after load_state_dict")
        print(f"ok   resume {cname}: eager's checkpoint continued by aotc, and aotc's state loaded back by torch.optim")
    # Refusals, one line each.
    for flags, want in [(["--momentum", "0.9"], "--momentum goes with --optimizer sgd"),
                        (["--optimizer", "sgd", "--nesterov"], "--nesterov requires a momentum and zero dampening"),
                        (["--optimizer", "adam", "--betas", "0.9,1.5"], "invalid beta parameter at index 1"),
                        (["--optimizer", "rmsprop"], "--optimizer: rmsprop not in {none,sgd,adam,adamw}"),
                        (["--optimizer", "sgd", "--accumulate", "0"], "--accumulate: the number of micro-batches must be at least 1, not 0"),
                        (["--accumulate", "4"], "--accumulate goes with --optimizer sgd, adam or adamw")]:
        r = subprocess.run([opts.aotc, "compile", os.path.join(opts.work, "mlp.json"), "-o", os.path.join(opts.work, "refused"), "-q"] + flags,
                           capture_output=True, text=True)
        lines = r.stderr.strip().splitlines()
        # A usage error (exit 2) is CLI11's line and its "Run with --help" hint.
        if r.returncode == 0 or not lines or want not in lines[0] or len(lines) > (2 if r.returncode == 2 else 1):
            fail(f"{flags}: want one line with '{want}', got exit {r.returncode}: {r.stderr.strip()}")
        if os.path.exists(os.path.join(opts.work, "refused")):
            fail(f"{flags}: a refused compile left an artifact")
    print(f"optimizer: every configuration matches torch.optim ({checked} state tensors checked); refusals one line each")


if __name__ == "__main__":
    main()
