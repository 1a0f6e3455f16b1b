"""Export a PyTorch module or function to aotc's FX JSON format (v1).

    from fx_export import export
    export(module_or_fn, example_args, "out/mlp")   # writes out/mlp.json, out/mlp.safetensors

The graph is recorded at the ATen level by a ``TorchDispatchMode`` (the
mechanism ``make_fx`` is built on) while the model runs once on clones of its
state: in-place ops and views are kept as they are (aotc functionalizes them
itself), each op records whether grad mode was on, and every call of a user
``torch.autograd.Function`` becomes one node holding its traced forward and
its traced backward (which may mutate what the forward saved).  Parameters and
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
from torch.utils._python_dispatch import TorchDispatchMode

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
    # A dtype aotc does not support is written as PyTorch spells it; the
    # compiler reports it if a node that survives dead-code removal uses it.
    return _TORCH_DTYPES.get(dt, str(dt).replace("torch.", ""))


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


def _arg(a):
    """A non-tensor argument as JSON."""
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


def _meta_of(t):
    return {"dtype": _dtype_name(t.dtype), "shape": list(t.shape), "stride": list(t.stride())}


def _signature(t):
    """Identifies a tensor's view of memory (SavedVariable may hand back a new
    tensor object for a saved output)."""
    return (t.data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)


class _Graph:
    """One graph being recorded: the model's, or a custom Function's forward or
    backward region.  Tensors are identified by their TensorImpl (``_cdata``);
    an in-place op returns its argument, so its result rebinds the name."""

    def __init__(self, kind, resolve):
        self.kind = kind
        self.resolve = resolve  # unknown tensor -> name (adds an input or a constant)
        self.names, self.sigs, self.keep = {}, {}, []
        self.inputs, self.nodes, self.outputs = [], [], []
        self.counts, self.used = {}, set()

    def fresh(self, base):
        base = "".join(c if c.isalnum() or c in "_.-" else "_" for c in base) or "v"
        n = self.counts.get(base, 0)
        while True:
            name = base if n == 0 else f"{base}_{n}"
            n += 1
            if name not in self.used:
                break
        self.counts[base] = n
        self.used.add(name)
        return name

    def bind(self, t, name):
        self.names[t._cdata] = name
        self.sigs[_signature(t)] = name
        self.keep.append(t)

    def add_input(self, t, name, **extra):
        self.used.add(name)
        entry = {"name": name}
        entry.update(extra)
        entry.update(_meta_of(t))
        self.inputs.append(entry)
        self.bind(t, name)
        return name

    def ref(self, t):
        name = self.names.get(t._cdata)
        if name is None:
            name = self.resolve(self, t)
        return {"node": name}

    def arg(self, a):
        if isinstance(a, torch.Tensor):
            return self.ref(a)
        if isinstance(a, (list, tuple)):
            return [self.arg(x) for x in a]
        return _arg(a)

    def prepare(self, func, args, kwargs):
        """The node for a call, built before the op runs: operands that are
        first seen here are described as they are before an in-place op."""
        name = self.fresh(func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func))
        entry = {"name": name, "target": str(func), "args": [self.arg(a) for a in args],
                 "kwargs": {k: self.arg(v) for k, v in kwargs.items()}}
        if not torch.is_grad_enabled():
            entry["grad_enabled"] = False
        if hasattr(func, "_schema") and not func._schema.is_mutable:
            entry["_pure"] = True
        return entry

    def record(self, entry, out):
        self.nodes.append(entry)
        self._bind_results(entry, out)

    def _bind_results(self, entry, out):
        name = entry["name"]
        if isinstance(out, torch.Tensor):
            entry["meta"] = _meta_of(out)
            self.bind(out, name)
        elif isinstance(out, (tuple, list)):
            metas = []
            for i, o in enumerate(out):
                metas.append(_meta_of(o) if isinstance(o, torch.Tensor) else None)
            if all(m is not None for m in metas):
                entry["meta"] = metas
            for i, o in enumerate(out):
                if isinstance(o, torch.Tensor):
                    g = self.fresh("getitem")
                    self.nodes.append({"name": g, "target": "getitem", "args": [{"node": name}, i], "kwargs": {},
                                       "meta": _meta_of(o)})
                    self.bind(o, g)

    def prune(self):
        """Drops pure nodes nothing uses (e.g. the uint8 reserve tensor that
        batch_norm's composite creates), then the internal markers."""
        def refs(x, acc):
            if isinstance(x, dict):
                if "node" in x and len(x) == 1:
                    acc.add(x["node"])
                for v in x.values():
                    refs(v, acc)
            elif isinstance(x, list):
                for v in x:
                    refs(v, acc)
        while True:
            used = set()
            refs(self.outputs, used)
            for n in self.nodes:
                refs(n["args"], used)
                refs(n["kwargs"], used)
            keep = [n for n in self.nodes if n["name"] in used or not (n.get("_pure") or n["target"] == "getitem")]
            if len(keep) == len(self.nodes):
                break
            self.nodes = keep
        for n in self.nodes:
            n.pop("_pure", None)

    def to_json(self):
        self.prune()
        return {"inputs": self.inputs, "nodes": self.nodes, "outputs": self.outputs}


class _Recorder(TorchDispatchMode):
    """Records every ATen op into the current _Graph, and every user
    torch.autograd.Function call as one node holding its forward and backward."""

    def __init__(self, constants):
        super().__init__()
        self.constants = constants  # name -> tensor, written to the weights file
        self.main = _Graph("main", self._resolve_main)
        self.g = self.main

    def _resolve_main(self, g, t):
        name = f"_tensor_constant{len(self.constants)}"
        self.constants[name] = t.detach().clone()
        return g.add_input(t, name, role="constant", requires_grad=False)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        g = self.g  # None: the exporter's own bookkeeping ops
        entry = g.prepare(func, args, kwargs) if g is not None else None
        out = func(*args, **kwargs)
        if g is not None:
            g.record(entry, out)
        return out

    def custom_function(self, cls, orig_apply, args):
        if not torch.is_grad_enabled() or not any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            return orig_apply(*args)  # no autograd node: its ops are recorded inline
        outer = self.g
        outer_args = []

        def resolve_fwd(g, t):  # a tensor the forward reads without receiving it
            outer_ref = outer.ref(t)
            outer_args.append(outer_ref)
            return g.add_input(t, g.fresh("captured"))

        fwd = _Graph("forward", resolve_fwd)
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                outer_args.append(outer.ref(a))
                fwd.add_input(a, f"arg{i}", index=i)
        self.g = fwd
        try:
            out = orig_apply(*args)
        finally:
            self.g = outer
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        fwd.outputs = [fwd.ref(o) for o in outs]
        grad_fn = next((o.grad_fn for o in outs if isinstance(o, torch.Tensor) and o.grad_fn is not None), None)

        def resolve_bwd(g, t):  # a tensor the forward saved (or stored on ctx)
            name = fwd.names.get(t._cdata) or fwd.sigs.get(_signature(t))
            if name is None:
                raise ValueError(f"fx_export: {cls.__qualname__}.backward reads a tensor its forward neither "
                                 "received nor produced")
            return g.add_input(t, g.fresh("saved_" + name), saved=name)

        bwd = _Graph("backward", resolve_bwd)
        grads = []
        self.g = None
        try:
            grads = [torch.ones_like(o) for o in outs]
        finally:
            self.g = outer
        for i, grad in enumerate(grads):
            bwd.add_input(grad, f"grad_output_{i}", grad_output=i)
        self.g = bwd
        try:
            with torch.no_grad():
                res = cls.backward(grad_fn, *grads)
        finally:
            self.g = outer
        res = list(res) if isinstance(res, (tuple, list)) else [res]
        bwd.outputs = [bwd.ref(r) if isinstance(r, torch.Tensor) else None for r in res]
        name = outer.fresh(cls.__name__.lower())
        entry = {"name": name, "target": "aotc.autograd_function", "function": f"{cls.__module__}.{cls.__qualname__}",
                 "args": outer_args, "kwargs": {}, "forward": fwd.to_json(), "backward": bwd.to_json()}
        outer.nodes.append(entry)
        outer._bind_results(entry, tuple(outs) if isinstance(out, (tuple, list)) else out)
        return out


def _user_functions():
    seen, todo = [], list(torch.autograd.Function.__subclasses__())
    while todo:
        c = todo.pop()
        if c in seen:
            continue
        seen.append(c)
        todo.extend(c.__subclasses__())
    return [c for c in seen if not c.__module__.startswith("torch.") and "apply" not in c.__dict__]


def _flatten(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flatten(o)]
    if isinstance(out, dict):
        return [t for k in out for t in _flatten(out[k])]
    raise ValueError(f"fx_export: outputs must be tensors or tuples, lists or dicts of tensors, got {type(out).__name__}")


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
    all_names = state_names + user_names
    roles = ["parameter"] * len(params) + ["buffer"] * len(buffers) + ["user_input"] * len(example_args)
    originals = state + list(example_args)

    # Tracing runs on clones, so the module's state is left as it was found,
    # and the weights file holds the values from before the export.
    snapshot = {n: t.detach().clone() for n, t in zip(state_names, state)}
    clones = [t.detach().clone().requires_grad_(t.requires_grad) for t in originals]

    constants = {}
    rec = _Recorder(constants)
    for n, role, t, c in zip(all_names, roles, originals, clones):
        rec.main.add_input(c, n, role=role, requires_grad=bool(t.requires_grad))
    # Inputs that share memory in the caller: declared, so the compiler can
    # handle or refuse them (it refuses when one of them is mutated).
    groups = {}
    for n, t in zip(all_names, originals):
        st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()  # 2.x, else 1.13
        groups.setdefault(st.data_ptr(), []).append(n)
    storage_groups = [g for g in groups.values() if len(g) > 1]

    patched = _user_functions()
    for cls in patched:
        cls.apply = staticmethod((lambda c, orig: lambda *a: rec.custom_function(c, orig, a))(cls, cls.apply))
    was_training = module_or_fn.training if is_module else None
    try:
        with rec:
            if is_module:
                sd = {n: c for n, c in zip(state_names, clones)}
                out = _functional_call(module_or_fn, sd, tuple(clones[len(state_names):]))
            else:
                out = module_or_fn(*clones)
    finally:
        for cls in patched:
            del cls.apply
        if is_module:
            module_or_fn.train(was_training)
    rec.main.outputs = [rec.main.ref(t) for t in _flatten(out)]
    rec.main.prune()

    # Input entries in schema order.
    inputs = []
    for e in rec.main.inputs:
        inputs.append({"name": e["name"], "role": e["role"], "requires_grad": e["requires_grad"],
                       "dtype": e["dtype"], "shape": e["shape"], "stride": e["stride"]})

    prefix = os.fspath(path_prefix)
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "name": name or os.path.basename(prefix),
        "producer": {"exporter": "aotc.fx_export " + EXPORTER_VERSION, "torch": torch.__version__},
        "weights": os.path.basename(prefix) + ".safetensors",
        "inputs": inputs,
        "nodes": rec.main.nodes,
        "outputs": rec.main.outputs,
    }
    if storage_groups:
        doc["storage_groups"] = storage_groups
    d = os.path.dirname(prefix)
    if d:
        os.makedirs(d, exist_ok=True)
    weights = dict(snapshot)
    weights.update(constants)
    write_safetensors(prefix + ".safetensors", weights)
    with open(prefix + ".json", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return doc
