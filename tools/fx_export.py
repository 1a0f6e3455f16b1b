"""Export a PyTorch module or function to aotc's FX JSON format (v2; v3 with dynamic dims).

    from fx_export import export
    export(module_or_fn, example_args, "out/mlp")   # writes out/mlp.json, out/mlp.safetensors

The graph is recorded at the ATen level by a ``TorchDispatchMode`` (the
mechanism ``make_fx`` is built on) while the model runs once on clones of its
state: in-place ops and views are kept as they are (aotc functionalizes them
itself), each op records whether grad mode was on, the user's source line
(``file:line``) and the module path it ran in (``layer3.0.conv1``), and every
call of a user ``torch.autograd.Function`` becomes one node holding its traced
forward and its traced backward (which may mutate what the forward saved).

Note [Capturing state by identity]: parameters and buffers are identified by
tensor identity, not by attribute path.  Every slot of every submodule that
holds a parameter or buffer (``_parameters``/``_buffers``, so ``self.w``,
``self.parameters()``, ``state_dict()``, ``buffers()`` and tied weights all
see it) is swapped for one clone per distinct tensor while tracing, and the
recorder maps any other reference to an original (a Python list, a closure)
to its clone as the op runs.  A tied tensor is one graph input named by its
first ``state_dict`` name, its other names recorded as ``aliases``.  A tensor
that requires grad and is none of a parameter, a buffer or an input is an
export error naming it, never a constant (a constant would silently get no
gradient); a tensor that merely shares storage with one is refused too unless
it is the same view (``w.data``, ``w.detach()`` taken before the call).

Note [Inputs as the caller passes them]: example arguments may be nested
tuples/lists/dicts; each tensor leaf is a user input named ``<param>`` or
``<param>.<key or index>`` along its path, every other leaf (int, float,
bool, None, str, dtype) is specialized into the graph and recorded under
``arguments``.  A user input that requires grad is traced as a non-leaf view
of a fresh leaf, as AOTAutograd receives it, so in-place ops, view-chain
mutations and metadata mutations of it record instead of failing in
PyTorch; gradients are with respect to its value at call time.

Outputs may be nested tuples/lists/dicts (``None`` leaves are dropped); they
are flattened in order and each one's path is recorded (``output_paths``).
The caller's tensors and the module are left exactly as they were: values
and version counters.  ``dynamic=`` makes dims of user inputs symbols and
sizes computed from them expressions (Note [Dynamic export]; format version
3, written only then).  Works with PyTorch 1.13 (Debian's python3-torch) and
2.x.  The format is specified by ``schemas/fx_graph.schema.json``.
"""

import contextlib
import inspect
import json
from fractions import Fraction
from math import lcm
import os
import struct
import sys
import tempfile
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

FORMAT = "aotc.fx_graph"
VERSION = 2
EXPORTER_VERSION = "2"

_ST_DTYPES = {
    torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.bool: "BOOL",
    torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
}
_TORCH_DTYPES = {
    torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
    torch.bfloat16: "bfloat16", torch.int64: "int64", torch.int32: "int32", torch.bool: "bool",
    torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8",
}
for _name, _st in (("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64")):  # PyTorch 2.3+
    if hasattr(torch, _name):
        _ST_DTYPES[getattr(torch, _name)] = _st
        _TORCH_DTYPES[getattr(torch, _name)] = _name


class ExportError(ValueError):
    """The program cannot be exported faithfully; nothing was written."""


_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _storage_ptr(t):
    st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()  # 2.x, else 1.13
    return st.data_ptr()


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
    def write(f):
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    _write_atomic(path, write)


def _write_atomic(path, write):
    """Writes through a temporary file in the same directory, renamed into place."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


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


def _wrap_numbers(func, args):
    """PyTorch 1.13 hands __torch_dispatch__ a wrapped-number operand (the
    Scalar of `bitwise_or(t, 3)`, which ATen wraps into a 0-dim tensor) as a
    Python number, and the op then refuses it when called again.  The node
    records the number (aotc's converters take a number where a tensor may
    be); the call gets the 0-dim tensor ATen made."""
    schema = getattr(func, "_schema", None)
    if schema is None:
        return args
    out = list(args)
    for i, (a, arg) in enumerate(zip(out, schema.arguments)):
        if isinstance(a, (bool, int, float)) and str(arg.type) == "Tensor":
            out[i] = torch.tensor(a)
    return tuple(out)


def _meta_of(t):
    return {"dtype": _dtype_name(t.dtype), "shape": list(t.shape), "stride": list(t.stride())}


def _signature(t):
    """Identifies a tensor's view of memory (SavedVariable may hand back a new
    tensor object for a saved output)."""
    return (t.data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)


# Ops whose schema does not mark what they write: native_batch_norm updates
# running_mean and running_var in place when training (its schema has no
# ``(a!)`` in PyTorch 1.13 or 2.x).  Never pruned, even when nothing reads
# their results: a training batch norm whose output is unused still moves
# the running statistics (found by the differential fuzzer, issue 48).
_HIDDEN_MUTATIONS = {torch.ops.aten.native_batch_norm.default}


class _Graph:
    """One graph being recorded: the model's, or a custom Function's forward or
    backward region.  Tensors are identified by their TensorImpl (``_cdata``);
    an in-place op returns its argument, so its result rebinds the name."""

    def __init__(self, kind, resolve, where=None):
        self.kind = kind
        self.resolve = resolve  # unknown tensor -> name (adds an input or a constant)
        self.where = where or (lambda: {})  # the user's source line and module path
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
        entry.update(self.where())
        if hasattr(func, "_schema") and not func._schema.is_mutable and func not in _HIDDEN_MUTATIONS:
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
                    item = {"name": g, "target": "getitem", "args": [{"node": name}, i], "kwargs": {}, "meta": _meta_of(o)}
                    item.update({k: entry[k] for k in ("source", "module") if k in entry})
                    self.nodes.append(item)
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


_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_THIS_FILE = os.path.abspath(__file__)


def _user_frame():
    """The innermost frame outside PyTorch, this file and Python's own
    machinery: the user's line."""
    f = sys._getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_TORCH_DIR) and os.path.abspath(fn) != _THIS_FILE and not fn.startswith("<frozen"):
            return f
        f = f.f_back
    return None


def _tensors_in(x, path="", depth=3):
    """(path, tensor) for the tensors inside a Python container attribute."""
    if isinstance(x, torch.Tensor):
        yield path, x
    elif depth > 0 and isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            yield from _tensors_in(v, f"{path}[{i}]", depth - 1)
    elif depth > 0 and isinstance(x, dict):
        for k, v in x.items():
            yield from _tensors_in(v, f"{path}[{k!r}]", depth - 1)


class _Recorder(TorchDispatchMode):
    """Records every ATen op into the current _Graph, and every user
    torch.autograd.Function call as one node holding its forward and backward.

    `subst` maps an original tensor (by TensorImpl) to the clone traced in its
    place (Note [Capturing state by identity]); `owners` maps the storage of
    every original to (input name, original) so that other views of it are
    recognized."""

    def __init__(self, constants, root, subst, owners):
        super().__init__()
        self.constants = constants  # name -> tensor, written to the weights file
        self.root = root            # the module being exported, or None
        self.subst = subst
        self.owners = owners
        self.scope = []             # module paths of the forwards running now
        self.current = None         # the op being recorded, for error messages
        self.main = _Graph("main", self._resolve_main, self.where)
        self.g = self.main

    # -- where an op comes from
    def where(self):
        w = {}
        f = _user_frame()
        if f is not None:
            w["source"] = f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"
        if self.scope and self.scope[-1]:
            w["module"] = self.scope[-1]
        return w

    def _context(self):
        w = self.where()
        at = f" at {w['source']}" if "source" in w else ""
        at += f" in {w['module']}" if "module" in w else ""
        return f"{self.current}{at}" if self.current else f"the program{at}"

    # -- tensors the program reaches that are not bound yet
    def _describe(self, t):
        if self.root is not None:
            for prefix, mod in self.root.named_modules(remove_duplicate=False):
                for k, v in vars(mod).items():
                    if k in ("_parameters", "_buffers", "_modules"):
                        continue
                    for path, x in _tensors_in(v):
                        if x is t:
                            return f"attribute '{prefix + '.' if prefix else ''}{k}{path}'"
        return "a tensor the program captures (a closure, a global, or a tensor computed before the call)"

    def _resolve_main(self, g, t):
        hit = self.subst.get(t._cdata)
        if hit is not None:
            return g.names[hit._cdata]
        owner = self.owners.get(_storage_ptr(t)) if t.device.type != "meta" else None
        if owner is not None:
            name, orig = owner
            same = (t.dtype == orig.dtype and tuple(t.shape) == tuple(orig.shape) and t.stride() == orig.stride()
                    and t.storage_offset() == orig.storage_offset())
            if same and not t.requires_grad:
                # `w.data` or `w.detach()` taken before the call: a detached
                # view of the input, so it sees the input's run-time value.
                node = g.fresh("detach")
                entry = {"name": node, "target": "aten.detach.default", "args": [{"node": g.names[self.subst[orig._cdata]._cdata]}],
                         "kwargs": {}, "meta": _meta_of(t)}
                entry.update(self.where())
                g.nodes.append(entry)
                g.bind(t, node)
                return node
            raise ExportError(
                f"fx_export: {self._context()} reads {self._describe(t)} ({_dtype_name(t.dtype)}{list(t.shape)}), which shares "
                f"storage with input '{name}' but is a view of it made before the call; aotc cannot follow it: "
                "take the view inside forward")
        if t.requires_grad:
            raise ExportError(
                f"fx_export: {self._context()} reads {self._describe(t)} ({_dtype_name(t.dtype)}{list(t.shape)}), which requires "
                "grad but is neither a parameter, a buffer nor an input; as a constant it would get no gradient: "
                "register it as an nn.Parameter or buffer of the module, or pass it as an argument")
        name = f"_tensor_constant{len(self.constants)}"
        self.constants[name] = t.detach().clone()
        return g.add_input(t, name, role="constant", requires_grad=False)

    def _subst(self, x):  # noqa: E301
        return tree_map(lambda a: self.subst.get(a._cdata, a) if isinstance(a, torch.Tensor) else a, x)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.subst:
            args, kwargs = self._subst(args), self._subst(kwargs)
        g = self.g  # None: the exporter's own bookkeeping ops
        self.current = str(func)
        entry = g.prepare(func, args, kwargs) if g is not None else None
        self.current = None
        out = func(*_wrap_numbers(func, args), **kwargs)
        if g is not None:
            g.record(entry, out)
        return out

    def custom_function(self, cls, orig_apply, args):
        args = tuple(self._subst(list(args)))
        if not torch.is_grad_enabled() or not any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            return orig_apply(*args)  # no autograd node: its ops are recorded inline
        outer = self.g
        outer_args = []
        self.current = f"{cls.__qualname__}.apply"

        def resolve_fwd(g, t):  # a tensor the forward reads without receiving it
            outer_ref = outer.ref(t)
            outer_args.append(outer_ref)
            return g.add_input(t, g.fresh("captured"))

        fwd = _Graph("forward", resolve_fwd, self.where)
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                outer_args.append(outer.ref(a))
                fwd.add_input(a, f"arg{i}", index=i)
        self.current = None
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
                raise ExportError(f"fx_export: {cls.__qualname__}.backward reads a tensor its forward neither "
                                  "received nor produced")
            return g.add_input(t, g.fresh("saved_" + name), saved=name)

        bwd = _Graph("backward", resolve_bwd, self.where)
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
        entry.update(self.where())
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


def flatten_outputs(out, path=""):
    """(path, tensor) for every tensor of a nested output, in order; None
    leaves are dropped.  `aotc run` names them output.<i> in this order."""
    if isinstance(out, torch.Tensor):
        return [(path, out)]
    if out is None:
        return []
    if isinstance(out, (tuple, list)):
        items = list(enumerate(out))
    elif isinstance(out, dict):
        items = list(out.items())
    else:
        raise ExportError(f"fx_export: output {path or '(the result)'} is a {type(out).__name__}; outputs must be tensors or "
                          "tuples, lists or dicts of tensors")
    res = []
    for k, v in items:
        res.extend(flatten_outputs(v, f"{path}.{k}" if path else str(k)))
    return res


def _check_name(name, what):
    if not name or len(name) > 256 or not set(name) <= _NAME_CHARS:
        raise ExportError(f"fx_export: {what} '{name}' must be 1-256 characters of [A-Za-z0-9_.-] "
                          "(user inputs are named <parameter>.<key or index> along their path)")


def _flatten_args(name, a, leaves):
    """The JSON record of argument `a` (named `name`); its tensor leaves are
    appended to `leaves` as (input name, tensor)."""
    if isinstance(a, torch.Tensor):
        _check_name(name, "input")
        leaves.append((name, a))
        return {"input": name}
    if isinstance(a, (tuple, list)):
        return {"tuple" if isinstance(a, tuple) else "list": [_flatten_args(f"{name}.{i}", x, leaves) for i, x in enumerate(a)]}
    if isinstance(a, dict):
        items = {}
        for k, v in a.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise ExportError(f"fx_export: argument {name} has a key {k!r} of type {type(k).__name__}; keys must be str or int")
            items[str(k)] = _flatten_args(f"{name}.{k}", v, leaves)
        return {"dict": items}
    try:
        return {"value": _arg(a)}
    except ValueError:
        raise ExportError(f"fx_export: argument {name} is a {type(a).__name__}; arguments must be tensors, int, float, bool, "
                          "None, str, torch.dtype or tuples/lists/dicts of them") from None


def _rebuild(a, traced, it):
    """`a` with its tensor leaves replaced, in order, by the traced ones."""
    if isinstance(a, torch.Tensor):
        return traced[next(it)]
    if isinstance(a, (tuple, list)):
        return type(a)(_rebuild(x, traced, it) for x in a) if isinstance(a, tuple) else [_rebuild(x, traced, it) for x in a]
    if isinstance(a, dict):
        return {k: _rebuild(v, traced, it) for k, v in a.items()}
    return a


def _state_slots(module):
    """Every distinct parameter and buffer tensor, in state_dict order
    (parameters first), with every (module, dict, key, full name) slot that
    holds it."""
    found = {}
    for kind in ("_parameters", "_buffers"):
        for prefix, mod in module.named_modules(remove_duplicate=False):
            for attr, t in getattr(mod, kind).items():
                if t is None:
                    continue
                full = f"{prefix}.{attr}" if prefix else attr
                e = found.setdefault(t._cdata, {"tensor": t, "role": "parameter" if kind == "_parameters" else "buffer",
                                                "names": [], "slots": []})
                if full not in e["names"]:
                    e["names"].append(full)
                e["slots"].append((getattr(mod, kind), attr))
    return list(found.values())


def export(module_or_fn, example_args, path_prefix, dynamic=None, ranges=None, *, name=None):
    """Traces ``module_or_fn(*example_args)`` and writes ``<path_prefix>.json``
    and ``<path_prefix>.safetensors``.  Returns the JSON document (a dict).

    ``dynamic`` names dims of user inputs as symbols, by the inputs' names:
    ``{"x": {0: "batch"}, "tokens": {1: "seq"}}``; ``ranges`` optionally bounds
    them, ``{"batch": (1, 4096)}`` (default 1 to 2**31 - 1).  The example
    values are the symbols' hints (Note [Dynamic export]).

    Raises ExportError, writing nothing, when the program cannot be exported
    faithfully."""
    if not isinstance(example_args, tuple):
        example_args = (example_args,)
    _warn_disabled_autocast()
    prefix = os.fspath(path_prefix)
    doc, weights = _trace(module_or_fn, example_args, prefix, name)
    if dynamic or ranges:
        doc = _dynamic_doc(module_or_fn, example_args, prefix, name, doc, weights, dynamic or {}, ranges or {})
    d = os.path.dirname(prefix)
    if d:
        os.makedirs(d, exist_ok=True)
    write_safetensors(prefix + ".safetensors", weights)
    text = (json.dumps(doc, indent=1) + "\n").encode()
    _write_atomic(prefix + ".json", lambda f: f.write(text))
    return doc


def _warn_disabled_autocast():
    """Note [Disabled autocast]: PyTorch turns torch.autocast("cuda") off, with
    one warning at construction, on a machine without CUDA, so a model
    exported inside it traces in float32.  The region still counts in
    autocast's nesting depth (every __enter__ increments it), which is how
    the exporter sees it: inside an autocast region with neither CUDA nor CPU
    autocast enabled and no CUDA, it says so and points to --precision."""
    depth = torch.autocast_increment_nesting() - 1
    torch.autocast_decrement_nesting()
    if depth <= 0 or torch.cuda.is_available():
        return
    try:
        on = torch.is_autocast_enabled("cuda") or torch.is_autocast_enabled("cpu")
    except TypeError:  # 1.13: no device argument
        on = torch.is_autocast_enabled() or torch.is_autocast_cpu_enabled()
    if on:
        return
    warnings.warn("fx_export: exported inside a torch.autocast region that PyTorch disabled (torch.autocast(\"cuda\") "
                  "on a machine without CUDA): the graph is float32 as written; compile it with "
                  "`aotc compile --precision bf16` (or fp16) to run it as CUDA autocast would", stacklevel=3)

# Note [Composite kernels while tracing]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The recorder sits below autograd, so it sees the op a composite op such as
# aten.lstm dispatches to, and that depends on the backend libraries enabled:
# on the CPU PyTorch 2.x runs nn.LSTM as one oneDNN op per layer
# (aten.mkldnn_rnn_layer), and on a GPU nn.LSTM/GRU/RNN as one cuDNN op
# (aten._cudnn_rnn).  With oneDNN and cuDNN off for the trace (the public
# torch.backends flags, in 1.13 and 2.x alike) the same call runs PyTorch's
# own composite kernel instead -- the cells as linear, split and pointwise
# ops, the spelling 1.13 traces on the CPU -- which computes the same
# function: a trace-time decomposition by PyTorch itself, not a rewrite.  The
# recorded ops above the backend (aten.convolution, aten.addmm) are the same
# either way; only the trace's own run of the model uses the slower kernels.
@contextlib.contextmanager
def _composite_kernels():
    backends = (torch.backends.mkldnn, torch.backends.cudnn)
    was = [b.enabled for b in backends]
    try:
        for b in backends:
            b.enabled = False
        yield
    finally:
        for b, w in zip(backends, was):
            b.enabled = w


def _trace(module_or_fn, example_args, path, name):
    """One trace at the example arguments' sizes: the JSON document and the
    weights to write beside it."""
    is_module = isinstance(module_or_fn, torch.nn.Module)
    state = _state_slots(module_or_fn) if is_module else []
    params = [e for e in state if e["role"] == "parameter"]
    state = params + [e for e in state if e["role"] == "buffer"]

    # User inputs: tensor leaves of the (nested) arguments.
    user_names = _input_names(module_or_fn, len(example_args), is_module)
    leaves, arguments = [], []
    for n, a in zip(user_names, example_args):
        arguments.append({"name": n, "value": _flatten_args(n, a, leaves)})
    taken = {n for e in state for n in e["names"]}
    for n, _ in leaves:
        if n in taken:
            raise ExportError(f"fx_export: user input '{n}' has the name of a parameter or buffer; rename the argument")

    # Tracing runs on clones, so the caller's tensors and the module's state
    # are left as they were found, and the weights file holds the values from
    # before the export.  A requires-grad user input is traced as a non-leaf
    # (Note [Inputs as the caller passes them]).
    snapshot = {e["names"][0]: e["tensor"].detach().clone() for e in state}
    originals = [e["tensor"] for e in state] + [t for _, t in leaves]
    versions = [t._version for t in originals]
    traced = []
    for e in state:
        t = e["tensor"]
        c = t.detach().clone()
        traced.append(torch.nn.Parameter(c, requires_grad=t.requires_grad) if isinstance(t, torch.nn.Parameter) else c)
    for _, t in leaves:
        c = t.detach().clone()
        traced.append(c.requires_grad_().clone() if t.requires_grad else c)
    names = [e["names"][0] for e in state] + [n for n, _ in leaves]
    roles = [e["role"] for e in state] + ["user_input"] * len(leaves)
    subst = {o._cdata: c for o, c in zip(originals, traced)}
    owners = {}
    for n, o in zip(names, originals):
        owners.setdefault(_storage_ptr(o), (n, o))

    constants = {}
    rec = _Recorder(constants, module_or_fn if is_module else None, subst, owners)
    for i, (n, role, t, c) in enumerate(zip(names, roles, originals, traced)):
        extra = {"role": role, "requires_grad": bool(t.requires_grad)}
        if i < len(state) and len(state[i]["names"]) > 1:
            extra["aliases"] = state[i]["names"][1:]
        rec.main.add_input(c, n, **extra)
    # Inputs that share memory in the caller: declared, so the compiler can
    # handle or refuse them (it refuses when one of them is mutated).
    groups = {}
    for n, t in zip(names, originals):
        groups.setdefault(_storage_ptr(t), []).append(n)
    storage_groups = [g for g in groups.values() if len(g) > 1]

    patched = _user_functions()
    for cls in patched:
        cls.apply = staticmethod((lambda c, orig: lambda *a: rec.custom_function(c, orig, a))(cls, cls.apply))
    hooks = []
    if is_module:
        # A module used in two places is named by its first path.
        def leave(mod, args, out):  # a forward hook's result would replace the output
            rec.scope.pop()
        for prefix, mod in module_or_fn.named_modules():
            hooks.append(mod.register_forward_pre_hook(lambda m, i, p=prefix: rec.scope.append(p)))
            hooks.append(mod.register_forward_hook(leave))
    was_training = module_or_fn.training if is_module else None
    for e, c in zip(state, traced):
        for d, k in e["slots"]:
            d[k] = c
    try:
        call_args = _rebuild(example_args, traced[len(state):], iter(range(len(leaves))))
        with rec, _composite_kernels():
            out = module_or_fn(*call_args)
        # A backward run inside the forward leaves gradients in .grad, state
        # the program writes that the graph does not hold: refused, never a
        # silent zero gradient (issue 47).
        written = [n for n, c in zip(names, traced) if isinstance(c, torch.Tensor) and c.grad is not None]
        if written:
            raise ExportError("fx_export: the forward writes gradients into .grad of " + ", ".join(written) +
                              " (a backward inside the forward); aotc does not model a .grad a program writes: return the loss and "
                              "let aotc's backward compute the gradients, with `aotc compile --optimizer sgd|adam|adamw` for the update")
        outs = flatten_outputs(out)
        rec.main.outputs = [rec.main.ref(t) for _, t in outs]
    finally:
        for e in state:
            for d, k in e["slots"]:
                d[k] = e["tensor"]
        for h in hooks:
            h.remove()
        for cls in patched:
            del cls.apply
        if is_module:
            module_or_fn.train(was_training)
    rec.main.prune()
    _restore_versions(names, originals, versions)

    # Input entries in schema order.
    inputs = []
    for e in rec.main.inputs:
        entry = {"name": e["name"], "role": e["role"], "requires_grad": e["requires_grad"],
                 "dtype": e["dtype"], "shape": e["shape"], "stride": e["stride"]}
        if "aliases" in e:
            entry["aliases"] = e["aliases"]
        inputs.append(entry)

    doc = {
        "format": FORMAT,
        "version": VERSION,
        "name": name or os.path.basename(path),
        "producer": {"exporter": "aotc.fx_export " + EXPORTER_VERSION, "torch": torch.__version__},
        "weights": os.path.basename(path) + ".safetensors",
        "inputs": inputs,
        "arguments": arguments,
        "nodes": rec.main.nodes,
        "outputs": rec.main.outputs,
        "output_paths": [p for p, _ in outs],
    }
    if storage_groups:
        doc["storage_groups"] = storage_groups
    weights = dict(snapshot)
    weights.update(constants)
    return doc, weights


# Note [Dynamic export]
# ~~~~~~~~~~~~~~~~~~~~~
# ``dynamic`` makes dims of user inputs symbols; every integer of the graph
# that the program computes from them (a shape in a node's meta, a size
# passed to view/reshape/expand, a slice bound, an arange end) must become
# an expression over the symbols, never the example's constant.
#
# How: the recorder traces real tensors, so it sees integers, not where they
# came from.  The program is traced again at probe sizes -- the grid
# {h, 2h, 3h} per symbol (h its hint; 3^k traces for k symbols), then once
# more at 4h for all of them -- and the traces must agree on everything but
# integers: the same ops in the same order, the same dtypes, floats,
# strings, source lines, and the same constant tensors.  Each integer
# position is then fitted exactly by the unique polynomial of degree at most
# two in each symbol through the grid (rational coefficients; degree two
# because an attention score has seq*seq elements); the extra trace at 4h
# must match the fit.  A fit with
# fractional coefficients, p(s)/d, becomes p // d with the guard p % d == 0
# (probes are multiples of the hint, so they keep whatever divisibility the
# hint has: reshape(-1, 2) of an even batch stays exportable, and an odd
# batch is refused at run time by the guard rather than computed).
#
# Why this and not make_fx(tracing_mode="symbolic"): on PyTorch 1.13 the
# symbolic tracer fails on nn.TransformerEncoder ("Cannot call sizes() on
# tensor with symbolic sizes/strides") and would replace this recorder, which
# keeps in-place ops, custom autograd Functions, source lines and module
# paths.  What each refuses: anything the traces disagree on (control flow
# that takes another path at a probe size, a float computed from a size, a
# constant tensor built from a shape), any integer that is not a multilinear
# polynomial of low degree (max(batch, 8), batch**3, seq // 3 when the
# hint is not a multiple of 3 ... each shows up as a failed fit), and more
# than three symbols.  What it cannot see: a branch whose threshold no probe
# crosses (``if x.size(0) > 1000``, exported at batch 4: probes 4..12 all
# take one side).  The symbols' ranges are then part of the contract: keep
# ``ranges`` to what the program was written for; sizes outside them are
# refused at run time.

_SYMBOL_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_MAX_SIZE = 2 ** 31 - 1
_MAX_SYMBOLS = 3
_DEGREE = 2  # per symbol: seq*seq is an attention score's size


def _tensor_leaves(module_or_fn, example_args):
    """[(user input name, tensor)] of the example arguments, in order."""
    is_module = isinstance(module_or_fn, torch.nn.Module)
    leaves = []
    for n, a in zip(_input_names(module_or_fn, len(example_args), is_module), example_args):
        _flatten_args(n, a, leaves)
    return leaves


def _symbols(module_or_fn, example_args, dynamic, ranges):
    """Checks ``dynamic`` and ``ranges``; returns ({symbol: (hint, lo, hi)},
    [(input name, dim, symbol)])."""
    leaves = _tensor_leaves(module_or_fn, example_args)
    by_name = dict(leaves)
    if not isinstance(dynamic, dict):
        raise ExportError("fx_export: dynamic= must be a dict {input name: {dim: symbol}}")
    dims, hints = [], {}
    for inp, spec in dynamic.items():
        if inp not in by_name:
            raise ExportError(f"fx_export: dynamic= names input '{inp}', which is not a tensor input; the inputs are "
                              + ", ".join(repr(n) for n, _ in leaves))
        t = by_name[inp]
        if not isinstance(spec, dict):
            raise ExportError(f"fx_export: dynamic['{inp}'] must be a dict {{dim: symbol}}")
        if not t.is_contiguous():
            raise ExportError(f"fx_export: input '{inp}' has a dynamic dim but is not contiguous; pass a contiguous tensor")
        for dim, sym in spec.items():
            if isinstance(dim, bool) or not isinstance(dim, int) or not -t.dim() <= dim < t.dim():
                raise ExportError(f"fx_export: dynamic['{inp}'] names dim {dim!r}, but '{inp}' has {t.dim()} dims")
            dim %= t.dim()
            if (not isinstance(sym, str) or not sym or len(sym) > 64 or not set(sym) <= _SYMBOL_CHARS
                    or sym[0].isdigit() or sym in ("max", "min")):
                raise ExportError(f"fx_export: symbol {sym!r} (dynamic['{inp}'][{dim}]) must be an identifier "
                                  "[A-Za-z_][A-Za-z0-9_]*, not max or min")
            size = t.shape[dim]
            if size < 2:
                raise ExportError(f"fx_export: dim {dim} of '{inp}' is {size} in the example; a dynamic dim's example "
                                  f"size must be at least 2 (a size of 1 broadcasts, so its trace is not general)")
            if sym in hints and hints[sym] != size:
                raise ExportError(f"fx_export: symbol '{sym}' is {hints[sym]} in one input but dim {dim} of '{inp}' is "
                                  f"{size}; the example values of one symbol must agree")
            hints[sym] = size
            dims.append((inp, dim, sym))
    if len(hints) > _MAX_SYMBOLS:
        raise ExportError(f"fx_export: {len(hints)} symbols; at most {_MAX_SYMBOLS} are supported")
    if not isinstance(ranges, dict):
        raise ExportError("fx_export: ranges= must be a dict {symbol: (min, max)}")
    symbols = {}
    for sym, hint in sorted(hints.items()):
        lo, hi = 1, _MAX_SIZE
        if sym in ranges:
            r = ranges[sym]
            if (not isinstance(r, (tuple, list)) or len(r) != 2
                    or not all(isinstance(v, int) and not isinstance(v, bool) for v in r)):
                raise ExportError(f"fx_export: ranges['{sym}'] must be a pair of ints (min, max)")
            lo, hi = r
            if not 1 <= lo <= hint <= hi <= _MAX_SIZE:
                raise ExportError(f"fx_export: ranges['{sym}'] = ({lo}, {hi}) must satisfy 1 <= min <= {hint} (the "
                                  f"example) <= max <= {_MAX_SIZE}")
            if hi < (_DEGREE + 2) * hint:
                raise ExportError(f"fx_export: ranges['{sym}'] = ({lo}, {hi}) ends below {(_DEGREE + 2) * hint}, but the "
                                  f"export traces at up to {_DEGREE + 2} times the example size {hint} (Note [Dynamic "
                                  f"export]); export with an example of at most {hi // (_DEGREE + 2)}")
        symbols[sym] = (hint, lo, hi)
    for sym in ranges:
        if sym not in hints:
            raise ExportError(f"fx_export: ranges= names '{sym}', which no dynamic= dim defines")
    return symbols, dims


def _probe_args(module_or_fn, example_args, dims, sizes):
    """The example arguments with each dynamic dim resized to its symbol's
    probe size, values repeated cyclically (integer inputs stay valid
    indices)."""
    leaves = _tensor_leaves(module_or_fn, example_args)
    new = []
    for n, t in leaves:
        r = t.detach()
        for inp, dim, sym in dims:
            if inp == n:
                idx = torch.arange(sizes[sym]) % r.shape[dim]
                r = r.index_select(dim, idx)
        r = r.contiguous()
        if t.requires_grad:
            r.requires_grad_()
        new.append(r)
    return _rebuild(example_args, new, iter(range(len(new))))


def _poly_mul(a, b):
    """Product of two polynomials {monomial (sorted tuple of symbols, with
    repeats for powers): Fraction}."""
    out = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = tuple(sorted(ma + mb))
            out[m] = out.get(m, 0) + ca * cb
    return {m: c for m, c in out.items() if c != 0}


def _fit(points, values, hints):
    """The polynomial of degree at most _DEGREE in each symbol through
    `values` at `points`, the grid {h, 2h, ..., (_DEGREE+1)h} per symbol:
    tensor-product Lagrange interpolation in exact arithmetic."""
    syms = sorted(hints)
    poly = {}
    for p, v in zip(points, values):
        term = {(): Fraction(v)}
        for s in syms:
            nodes = [hints[s] * (j + 1) for j in range(_DEGREE + 1)]
            for b in nodes:
                if b != p[s]:  # (x - b) / (p - b)
                    term = _poly_mul(term, {(s,): Fraction(1, p[s] - b), (): Fraction(-b, p[s] - b)})
        for m, c in term.items():
            poly[m] = poly.get(m, 0) + c
    return {m: c for m, c in poly.items() if c != 0}


def _eval_fit(poly, point):
    total = Fraction(0)
    for m, c in poly.items():
        t = Fraction(c)
        for s in m:
            t *= point[s]
        total += t
    return total


def _expr_text(poly):
    """(text of the expression, divisor guard or None) in Note [Symbolic
    sizes]' grammar: sum of integer monomials, then // d when the fit has
    fractions."""
    d = 1
    for c in poly.values():
        d = lcm(d, c.denominator)
    terms = []
    for m in sorted(poly, key=lambda m: (len(m), m)):
        c = int(poly[m] * d)
        body = "*".join(m)
        if not m:
            terms.append(str(c))
        elif c == 1:
            terms.append(body)
        elif c == -1:
            terms.append("-" + body)
        else:
            terms.append(f"{c}*{body}")
    text = " + ".join(terms).replace("+ -", "- ") or "0"
    if d == 1:
        return text, None
    return (f"({text}) // {d}" if len(terms) > 1 else f"{text} // {d}"), (text, d)


def _dynamic_doc(module_or_fn, example_args, path, name, doc, weights0, dynamic, ranges):
    """The document of one trace made general over the symbols (Note
    [Dynamic export]): format version 3."""
    symbols, dims = _symbols(module_or_fn, example_args, dynamic, ranges)
    if not symbols:
        return doc
    hints = {s: v[0] for s, v in symbols.items()}
    syms = sorted(hints)
    points = [{}]
    for s in syms:
        points = [dict(p, **{s: hints[s] * (j + 1)}) for p in points for j in range(_DEGREE + 1)]
    corners = points[1:]  # points[0] is the example itself
    check = {s: (_DEGREE + 2) * hints[s] for s in syms}
    docs = [doc]
    for p in corners + [check]:
        at = ", ".join(f"{s}={p[s]}" for s in syms)
        try:
            d, w = _trace(module_or_fn, _probe_args(module_or_fn, example_args, dims, p), path, name)
        except ExportError as e:
            raise ExportError(f"{e} (while tracing at {at}, Note [Dynamic export])") from None
        except Exception as e:  # the program itself fails at that size
            raise ExportError(f"fx_export: the program fails at {at}, which dynamic= allows: {type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else ''}") from None
        docs.append(d)
        for k in set(w) | set(weights0):
            if k not in w or k not in weights0 or w[k].shape != weights0[k].shape or not torch.equal(w[k], weights0[k]):
                raise ExportError(f"fx_export: constant tensor '{k}' differs at {at}: the program builds a tensor "
                                  "from a dynamic size, which cannot be exported as a constant")
    guards = []

    def unify(vals, where):
        v0 = vals[0]
        if isinstance(v0, bool) or not isinstance(v0, int):
            if isinstance(v0, dict):
                if any(not isinstance(v, dict) or v.keys() != v0.keys() for v in vals):
                    raise ExportError(f"fx_export: the traces differ at {where} when the dynamic sizes change "
                                      "(control flow depends on a size?)")
                return {k: unify([v[k] for v in vals], f"{where} {k}") for k in v0}
            if isinstance(v0, list):
                if any(not isinstance(v, list) or len(v) != len(v0) for v in vals):
                    raise ExportError(f"fx_export: the traces differ at {where} when the dynamic sizes change "
                                      "(control flow or a list's length depends on a size?)")
                return [unify([v[i] for v in vals], f"{where}[{i}]") for i in range(len(v0))]
            for p, v in zip(points[1:] + [check], vals[1:]):
                if v != v0 or type(v) is not type(v0):
                    at = ", ".join(f"{s}={p[s]}" for s in syms)
                    if isinstance(v0, float):
                        raise ExportError(f"fx_export: {where} is {v0!r} at the example sizes and {v!r} at {at}; only "
                                          "integers may depend on a dynamic size")
                    raise ExportError(f"fx_export: the traces differ at {where}: {v0!r} at the example sizes, {v!r} at "
                                      f"{at} (does control flow depend on a dynamic size?)")
            return v0
        if any(isinstance(v, bool) or not isinstance(v, int) for v in vals):
            raise ExportError(f"fx_export: the traces differ at {where} when the dynamic sizes change")
        if all(v == v0 for v in vals):
            return v0
        poly = _fit(points, vals[:len(points)], hints)
        if _eval_fit(poly, check) != vals[-1]:
            seen = ", ".join(f"{v} at {', '.join(f'{s}={p[s]}' for s in syms)}" for p, v in zip(points + [check], vals))
            raise ExportError(f"fx_export: {where} is not a polynomial of degree at most {_DEGREE} in each of "
                              f"{', '.join(syms)} ({seen}); aotc cannot make it an expression")
        text, guard = _expr_text(poly)
        if guard:
            g = {"expr": guard[0], "divisible_by": guard[1], "where": where}
            if not any(x["expr"] == g["expr"] and x["divisible_by"] == g["divisible_by"] for x in guards):
                guards.append(g)
        return {"sym": text}

    out = {}
    for k in doc:
        if k == "producer":
            out[k] = doc[k]
        elif k == "nodes" and any(len(d[k]) != len(doc[k]) for d in docs):
            # Name the first node where the op sequences part.
            for p, d in zip(points[1:] + [check], docs[1:]):
                if len(d[k]) == len(doc[k]):
                    continue
                at = ", ".join(f"{s}={p[s]}" for s in syms)
                i = next((i for i, (a, b) in enumerate(zip(doc[k], d[k])) if a.get("target") != b.get("target")),
                         min(len(doc[k]), len(d[k])))
                here = doc[k][i] if i < len(doc[k]) else d[k][i]
                where = f"node '{here.get('name')}' ({here.get('target')}{', ' + here['source'] if 'source' in here else ''})"
                raise ExportError(f"fx_export: the program runs {len(doc[k])} ops at the example sizes but {len(d[k])} at "
                                  f"{at}, first differing at {where} (PyTorch skips a full slice, or control flow depends "
                                  "on a dynamic size); choose an example (and ranges) where this size stays general")
        elif k == "nodes":
            out[k] = []
            for i, n in enumerate(doc[k]):
                where = f"node '{n.get('name')}' ({n.get('target')}{', ' + n['source'] if 'source' in n else ''})"
                out[k].append(unify([d[k][i] for d in docs], where))
        else:
            out[k] = unify([d[k] for d in docs], k)
    out["version"] = 3
    out["symbols"] = [{"name": s, "hint": symbols[s][0], "min": symbols[s][1], "max": symbols[s][2]} for s in syms]
    if guards:
        out["guards"] = guards
    return out


def _restore_versions(names, originals, versions):
    """Ops reach originals only through the recorder, which runs them on the
    clones; but autograd, above it, bumps an original's version counter when
    an in-place op names it through a reference that was not swapped (a list,
    a closure).  PyTorch 2.x can set the counter back; 1.13 cannot."""
    setter = getattr(torch._C._autograd, "_unsafe_set_version_counter", None)
    for n, t, v in zip(names, originals, versions):
        if t._version != v:
            if setter is not None:
                setter(t, v)
            else:
                warnings.warn(f"fx_export: '{n}' was mutated through a reference other than its module attribute; its "
                              f"value is unchanged but PyTorch {torch.__version__} cannot restore its version counter")
