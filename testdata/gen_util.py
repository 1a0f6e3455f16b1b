"""Shared by the fixture generators: PyTorch eager reference results, named
as `aotc run` names them."""
import copy
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from fx_export import _flatten_args, _input_names, _rebuild, export, flatten_outputs, write_safetensors  # noqa: E402


def seeded_randn(first_seed):
    """rn(*shape, rg=False): a fresh tensor from the next seed after
    `first_seed`, so each generator's fixtures are reproducible."""
    seed = [first_seed]

    def rn(*shape, rg=False):
        seed[0] += 1
        g = torch.Generator().manual_seed(seed[0])
        return torch.randn(*shape, generator=g).requires_grad_(rg)
    return rn


def flat_outputs(out):
    """The program's result flattened as aotc numbers it (output.<i>)."""
    return [t for _, t in flatten_outputs(out)]


def reference(name, model, args, outdir, seed=1234, float64=False, copy_model=True):
    """Runs `model(*args)` eagerly, then backward with random grad outputs;
    writes NAME.inputs.safetensors (user inputs, grad_output.<i>) and
    NAME.expected.safetensors (output.<i>, grad.<input>,
    after_forward.<input>, after_backward.<input> for every mutated input).

    As AOTAutograd receives them, user inputs that require grad are passed as
    non-leaf clones of leaves: the program may mutate them in place, and the
    gradient is the leaf's (with respect to the value at call time).
    Arguments may be nested; tensor leaves are named as the exporter names
    them.  The model runs on a deep copy unless `copy_model` is false (a
    program whose closures hold its parameters must run as it is).

    float64: run eager in double precision on the same values (the model's
    floating state and inputs converted), for models whose float32 eager
    result is itself far from the exact one; results are stored as F64."""
    g = torch.Generator().manual_seed(seed)
    is_module = isinstance(model, torch.nn.Module)
    m = copy.deepcopy(model) if is_module and copy_model else model
    if float64 and is_module:
        m = m.double()
    dt = (lambda t: t.double() if float64 and t.is_floating_point() else t)
    state = {}
    if is_module:
        state.update(dict(m.named_parameters()))
        state.update(dict(m.named_buffers()))
    leaves = []
    for n, a in zip(_input_names(model, len(args), is_module), args):
        _flatten_args(n, a, leaves)
    leaf = {n: dt(a.detach().clone()).requires_grad_(a.requires_grad) for n, a in leaves}
    passed = {n: (leaf[n].clone() if a.requires_grad else leaf[n]) for n, a in leaves}
    call_args = _rebuild(args, list(passed.values()), iter(range(len(passed))))
    everything = dict(state)
    everything.update(passed)
    # As the caller declared them (an in-place op may give a tensor grad later).
    requires = {n: t.requires_grad for n, t in list(state.items()) + list(leaf.items())}
    versions = {n: t._version for n, t in everything.items()}
    shapes = {n: (tuple(t.shape), t.stride()) for n, t in everything.items()}
    # Some kernels update tensors without bumping their version counter
    # (native_batch_norm's running statistics): compare values too.
    before = {n: t.detach().clone() for n, t in everything.items()}

    def changed(n, t):
        return (t._version != versions[n] or (tuple(t.shape), t.stride()) != shapes[n]
                or not torch.equal(t.detach(), before[n]))
    outs = flat_outputs(m(*call_args))
    after_fw = {n: t.detach().clone() for n, t in everything.items()}
    changed_fw = {n: changed(n, t) for n, t in everything.items()}

    inputs = {n: a.detach().clone() for n, a in leaves}
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
    wrt = dict(state)
    wrt.update(leaf)
    for n, t in wrt.items():
        if requires[n]:
            expected[f"grad.{n}"] = t.grad.detach().clone() if t.grad is not None else torch.zeros_like(t)
    for n, t in everything.items():
        if changed(n, t) or changed_fw[n]:
            expected[f"after_forward.{n}"] = after_fw[n]
            expected[f"after_backward.{n}"] = t.detach().clone()
    write_safetensors(os.path.join(outdir, name + ".inputs.safetensors"), inputs)
    write_safetensors(os.path.join(outdir, name + ".expected.safetensors"), expected)


def _state_and_versions(model):
    if not isinstance(model, torch.nn.Module):
        return {}
    return {k: (v.detach().clone(), v._version) for k, v in model.state_dict(keep_vars=True).items()}


def write_fixture(name, model, args, outdir, **options):
    """Exports `model` as NAME.json/.safetensors, checks that the export left
    the module's state and the arguments as they were (values and version
    counters), and writes eager's reference beside it."""
    before = _state_and_versions(model)
    leaves = []
    for n, a in enumerate(args):
        _flatten_args(f"a{n}", a, leaves)
    args_before = [(t.detach().clone(), t._version) for _, t in leaves]
    export(model, args, os.path.join(outdir, name))
    for k, (v, ver) in _state_and_versions(model).items():
        assert torch.equal(v, before[k][0]) and ver == before[k][1], f"{name}: export changed {k}"
    for (n, t), (v, ver) in zip(leaves, args_before):
        assert torch.equal(t.detach(), v) and t._version == ver, f"{name}: export changed argument {n}"
    reference(name, model, args, outdir, **options)


def write_fixtures(programs, default_dir):
    """The generators' command line: writes every (name, model, args) of
    `programs` with write_fixture into argv[1], else `default_dir`."""
    outdir = sys.argv[1] if len(sys.argv) > 1 else default_dir
    os.makedirs(outdir, exist_ok=True)
    for name, model, args, *options in programs:
        write_fixture(name, model, args, outdir, **(options[0] if options else {}))
        print("wrote", name)
