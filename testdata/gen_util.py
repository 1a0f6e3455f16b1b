"""Shared by the fixture generators: PyTorch eager reference results, named
as `aotc run` names them."""
import copy
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from fx_export import _input_names, export, write_safetensors  # noqa: E402


def flat_outputs(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for o in out for t in flat_outputs(o)]


def reference(name, model, args, outdir, seed=1234, float64=False):
    """Runs `model(*args)` eagerly on copies, then backward with random grad
    outputs; writes NAME.inputs.safetensors (user inputs, grad_output.<i>)
    and NAME.expected.safetensors (output.<i>, grad.<input>,
    after_forward.<input>, after_backward.<input> for every mutated input).

    float64: run eager in double precision on the same values (the model's
    floating state and inputs converted), for models whose float32 eager
    result is itself far from the exact one; results are stored as F64."""
    g = torch.Generator().manual_seed(seed)
    is_module = isinstance(model, torch.nn.Module)
    m = copy.deepcopy(model) if is_module else model
    if float64 and is_module:
        m = m.double()
    dt = (lambda t: t.double() if float64 and t.is_floating_point() else t)
    state = {}
    if is_module:
        state.update(dict(m.named_parameters()))
        state.update(dict(m.named_buffers()))
    user_names = _input_names(model, len(args), is_module)
    user = [dt(a.detach().clone()).requires_grad_(a.requires_grad) for a in args]
    everything = dict(state)
    everything.update(zip(user_names, user))
    versions = {n: t._version for n, t in everything.items()}
    requires = {n: t.requires_grad for n, t in everything.items()}
    shapes = {n: (tuple(t.shape), t.stride()) for n, t in everything.items()}
    # Some kernels update tensors without bumping their version counter
    # (native_batch_norm's running statistics): compare values too.
    before = {n: t.detach().clone() for n, t in everything.items()}

    def changed(n, t):
        return (t._version != versions[n] or (tuple(t.shape), t.stride()) != shapes[n]
                or not torch.equal(t.detach(), before[n]))
    outs = flat_outputs(m(*user))
    after_fw = {n: t.detach().clone() for n, t in everything.items()}
    changed_fw = {n: changed(n, t) for n, t in everything.items()}

    inputs = {n: a.detach().clone() for n, a in zip(user_names, args)}
    expected = {}
    diff, grads_in = [], []
    for i, o in enumerate(outs):
        expected[f"output.{i}"] = o.detach().clone()
        if o.requires_grad:
            go = torch.randn(o.shape, generator=g, dtype=torch.float32 if float64 else o.dtype)
            inputs[f"grad_output.{i}"] = go
            go = dt(go)
            diff.append(o)
            grads_in.append(go)
    if diff:
        torch.autograd.backward(diff, grads_in)
    for n, t in everything.items():
        if requires[n]:
            expected[f"grad.{n}"] = t.grad.detach().clone() if t.grad is not None else torch.zeros_like(t)
        if changed(n, t) or changed_fw[n]:
            expected[f"after_forward.{n}"] = after_fw[n]
            expected[f"after_backward.{n}"] = t.detach().clone()
    write_safetensors(os.path.join(outdir, name + ".inputs.safetensors"), inputs)
    write_safetensors(os.path.join(outdir, name + ".expected.safetensors"), expected)


def write_fixture(name, model, args, outdir):
    """Exports `model` as NAME.json/.safetensors, checks that the export left
    the module's state as it was, and writes eager's reference beside it."""
    is_module = isinstance(model, torch.nn.Module)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()} if is_module else {}
    export(model, args, os.path.join(outdir, name))
    if is_module:
        for k, v in model.state_dict().items():
            assert torch.equal(v, before[k]), f"{name}: export changed {k}"
    reference(name, model, args, outdir)


def write_fixtures(programs, default_dir):
    """The generators' command line: writes every (name, model, args) of
    `programs` with write_fixture into argv[1], else `default_dir`."""
    outdir = sys.argv[1] if len(sys.argv) > 1 else default_dir
    os.makedirs(outdir, exist_ok=True)
    for name, model, args in programs:
        write_fixture(name, model, args, outdir)
        print("wrote", name)
