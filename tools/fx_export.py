"""Export a PyTorch module or function to aotc's FX JSON format (v1).

    from fx_export import export
    export(module_or_fn, example_args, "out/mlp")   # writes out/mlp.json, out/mlp.safetensors

The graph is traced at the ATen level with ``make_fx``; in-place ops and views
are kept as they are (aotc functionalizes them itself).  Parameters and
buffers become named graph inputs (their ``state_dict`` names) with their role
and ``requires_grad``; their values from *before* the export are written to
``<prefix>.safetensors``.  Tracing runs on clones, so the module's state is left
as it was found.  User inputs are named after the parameters of ``forward``
(or of the function).

Works with PyTorch 1.13 (Debian's python3-torch) and 2.x: where the APIs
differ (``torch.func.functional_call`` vs ``torch.nn.utils.stateless``), the
2.x one is used when present.  The format is specified by
``schemas/fx_graph.schema.json``.
"""

import inspect
import json
import os
import struct

import torch
from torch.fx.experimental.proxy_tensor import make_fx

FORMAT = "aotc.fx_graph"
VERSION = 1
EXPORTER_VERSION = "1"

_ST_DTYPES = {
    torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.bool: "BOOL",
}
_TORCH_DTYPES = {
    torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
    torch.bfloat16: "bfloat16", torch.int64: "int64", torch.int32: "int32", torch.bool: "bool",
}


def _functional_call(module, state, args):
    func = getattr(torch, "func", None)
    if func is not None and hasattr(func, "functional_call"):
        return func.functional_call(module, state, args)
    from torch.nn.utils import stateless
    return stateless.functional_call(module, state, args)


def _dtype_name(dt):
    if dt not in _TORCH_DTYPES:
        raise ValueError(f"fx_export: unsupported dtype {dt}")
    return _TORCH_DTYPES[dt]


def _tensor_bytes(t):
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def write_safetensors(path, tensors):
    """Writes {name: tensor} as safetensors, names sorted, data 8-byte aligned."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name]
        if t.dtype not in _ST_DTYPES:
            raise ValueError(f"fx_export: tensor {name}: unsupported dtype {t.dtype}")
        b = _tensor_bytes(t)
        header[name] = {"dtype": _ST_DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - (len(h) + 8) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def _input_names(fn, n, is_module):
    target = fn.forward if is_module else fn
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            break
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    while len(names) < n:
        names.append(f"arg{len(names)}")
    return names[:n]


def _meta(node):
    tm = node.meta.get("tensor_meta")
    val = node.meta.get("val")
    if tm is not None and hasattr(tm, "shape"):
        return {"dtype": _dtype_name(tm.dtype), "shape": list(tm.shape), "stride": list(tm.stride)}
    if isinstance(val, torch.Tensor):
        return {"dtype": _dtype_name(val.dtype), "shape": list(val.shape), "stride": list(val.stride())}
    if isinstance(tm, (list, tuple)) and all(hasattr(m, "shape") for m in tm):
        return [{"dtype": _dtype_name(m.dtype), "shape": list(m.shape), "stride": list(m.stride)} for m in tm]
    return None


def _arg(a):
    if isinstance(a, torch.fx.Node):
        return {"node": a.name}
    if isinstance(a, (list, tuple)):
        return [_arg(x) for x in a]
    if isinstance(a, torch.dtype):
        return {"dtype": _dtype_name(a)}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if isinstance(a, torch.memory_format):
        return {"memory_format": str(a).replace("torch.", "")}
    if isinstance(a, torch.layout):
        return {"layout": str(a).replace("torch.", "")}
    if a is None or isinstance(a, (bool, int, float, str)):
        if isinstance(a, float) and (a != a or a in (float("inf"), float("-inf"))):
            return {"float": repr(a)}
        return a
    raise ValueError(f"fx_export: cannot serialize argument {a!r} of type {type(a).__name__}")


def _target_name(target):
    name = str(target)
    if hasattr(target, "_schema"):  # OpOverload: aten.add.Tensor
        return name
    return getattr(target, "__name__", name)


def export(module_or_fn, example_args: tuple, path_prefix, *, name=None):
    """Traces ``module_or_fn(*example_args)`` and writes ``<path_prefix>.json``
    and ``<path_prefix>.safetensors``.  Returns the JSON document (a dict)."""
    if not isinstance(example_args, tuple):
        example_args = (example_args,)
    is_module = isinstance(module_or_fn, torch.nn.Module)
    params = dict(module_or_fn.named_parameters()) if is_module else {}
    buffers = dict(module_or_fn.named_buffers()) if is_module else {}
    state_names = list(params) + list(buffers)
    state = [params[n] if n in params else buffers[n] for n in state_names]
    user_names = _input_names(module_or_fn, len(example_args), is_module)
    for i, a in enumerate(example_args):
        if not isinstance(a, torch.Tensor):
            raise ValueError(f"fx_export: example argument {i} ({user_names[i]}) is not a tensor")

    # The snapshot written to the weights file: values from before the export.
    snapshot = {n: t.detach().clone() for n, t in zip(state_names, state)}

    def clones():
        c = [t.detach().clone().requires_grad_(t.requires_grad) for t in state]
        c += [a.detach().clone().requires_grad_(a.requires_grad) for a in example_args]
        return c

    nstate = len(state_names)

    def flat(*a):
        if is_module:
            sd = {n: a[i] for i, n in enumerate(state_names)}
            return _functional_call(module_or_fn, sd, tuple(a[nstate:]))
        return module_or_fn(*a)

    was_training = module_or_fn.training if is_module else None
    gm = make_fx(flat)(*clones())
    if is_module:
        module_or_fn.train(was_training)
    try:
        from torch.fx.passes.shape_prop import ShapeProp
        ShapeProp(gm).propagate(*clones())
    except Exception:  # meta is optional in the format; the compiler infers shapes
        pass

    all_names = state_names + user_names
    roles = ["parameter"] * len(params) + ["buffer"] * len(buffers) + ["user_input"] * len(example_args)
    all_vals = state + list(example_args)
    inputs, nodes, outputs = [], [], []
    placeholder_idx = 0
    rename = {}
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            i = placeholder_idx
            placeholder_idx += 1
            t = all_vals[i]
            rename[node.name] = all_names[i]
            inputs.append({"name": all_names[i], "role": roles[i], "requires_grad": bool(t.requires_grad),
                           "dtype": _dtype_name(t.dtype), "shape": list(t.shape), "stride": list(t.stride())})
        elif node.op == "call_function":
            entry = {"name": node.name, "target": _target_name(node.target),
                     "args": [_arg(a) for a in node.args],
                     "kwargs": {k: _arg(v) for k, v in node.kwargs.items()}}
            m = _meta(node)
            if m is not None:
                entry["meta"] = m
            if node.stack_trace:
                entry["stack_trace"] = node.stack_trace
            nodes.append(entry)
        elif node.op == "output":
            res = node.args[0]
            res = list(res) if isinstance(res, (list, tuple)) else [res]
            outputs = [_arg(r) for r in res]
        else:
            raise ValueError(f"fx_export: unsupported FX node kind {node.op} ({node.name})")

    def fix(a):  # placeholders take their signature names
        if isinstance(a, dict) and "node" in a:
            return {"node": rename.get(a["node"], a["node"])}
        if isinstance(a, list):
            return [fix(x) for x in a]
        if isinstance(a, dict):
            return {k: fix(v) for k, v in a.items()}
        return a

    for n in nodes:
        n["args"] = fix(n["args"])
        n["kwargs"] = fix(n["kwargs"])
    outputs = fix(outputs)

    prefix = os.fspath(path_prefix)
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "name": name or os.path.basename(prefix),
        "producer": {"exporter": "aotc.fx_export " + EXPORTER_VERSION, "torch": torch.__version__},
        "weights": os.path.basename(prefix) + ".safetensors",
        "inputs": inputs,
        "nodes": nodes,
        "outputs": outputs,
    }
    d = os.path.dirname(prefix)
    if d:
        os.makedirs(d, exist_ok=True)
    write_safetensors(prefix + ".safetensors", snapshot)
    with open(prefix + ".json", "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
    return doc
