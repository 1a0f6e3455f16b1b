"""Random PyTorch programs for the differential fuzzer (issue 48).

``generate(seed, kind)`` returns a ``Case``: the program as Python source text
(a ``Model`` module and ``make_args(B)``), so that a finding is saved as a
standalone script and replays without the generator.  Only the standard
library's ``random.Random(seed)`` draws choices: the same seed gives the
same source under every Python and PyTorch version.

Note [Fuzz program shape]: a program is a straight line of statements
``vN = <expr>`` over a pool of values whose shapes and dtypes the generator
tracks.  Each op below looks at a value (and sometimes a second one, or a
fresh parameter, buffer or user input it declares) and either declines or
returns an expression with its result's shape and dtype.  Values are kept
finite by construction: log, sqrt, rsqrt and reciprocal take ``abs() + c``,
division divides by ``abs() + c``, exp takes a clamped argument, matmul
weights are scaled by 1/sqrt(K); the oracle still discards a case whose
eager results are not finite (that says nothing about aotc).

Kinds: ``plain`` (float32 graphs, training and inference), ``mixed`` (float64,
float16, bfloat16 values and int64/bool ones from comparisons, where and
argmax), ``dynamic`` (the first input's dim 0 is the symbol B; every size
derived from it is written as an expression of B -- the batch is 5, and no
other dim has a factor 5, so a size divisible by 5 is B times something --
and the case is exported at B=5 and run at another B), ``mutation``
(in-place ops on user inputs, buffers and their views in the forward, in a
custom autograd.Function's backward, under no_grad, the same input twice,
metadata mutations, outputs that alias inputs).
"""
import random
import re

KINDS = ("plain", "mixed", "dynamic", "mutation")
DIMS = (2, 3, 4, 6, 7, 8)   # never a factor 5: Note [Fuzz program shape]
BATCH = 5
FLOATS = ("float32", "float64", "float16", "bfloat16")


class Val:
    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype

    @property
    def is_float(self):
        return self.dtype in FLOATS


class Case:
    def __init__(self, seed, kind, source, ops, dtypes, dynamic):
        self.seed, self.kind, self.source = seed, kind, source
        self.ops, self.dtypes, self.dynamic = ops, dtypes, dynamic


class Gen:
    def __init__(self, seed, kind, attempt=0):
        self.r = random.Random(seed * 7919 + KINDS.index(kind) + attempt * 104729)
        self.seed, self.kind = seed, kind
        # A mutation case has a dynamic batch dim a quarter of the time.
        self.dynamic = kind == "dynamic" or (kind == "mutation" and self.r.random() < 0.25)
        self.body, self.init, self.args, self.helpers = [], [], [], []
        self.pool, self.n = [], 0
        self.ops, self.dtypes = set(), set()
        self.params = 0

    # ------------------------------------------------------------ sizes
    def sz(self, d):
        """A size as the program writes it (B-relative in dynamic cases)."""
        if self.dynamic and d % BATCH == 0:
            k = d // BATCH
            return "B" if k == 1 else f"B * {k}"
        return str(d)

    def shp(self, shape):
        return "(" + "".join(self.sz(d) + ", " for d in shape) + ")"

    def has_b(self, shape):
        return self.dynamic and any(d % BATCH == 0 for d in shape)

    def fresh(self, expr, shape, dtype, op=None):
        v = Val(f"v{self.n}", shape, dtype)
        self.n += 1
        self.body.append(f"{v.name} = {expr}")
        self.pool.append(v)
        if op:
            self.ops.add(op)
        self.dtypes.add(dtype)
        return v

    def new_input(self, shape, dtype="float32", grad=True, low=None):
        name = f"x{len(self.args)}"
        dt = f"torch.{dtype}"
        if low is not None:   # int64 indices in [0, low)
            make = f"torch.randint(0, {low}, {self.shp(shape)}, generator=g)"
        else:
            make = f"torch.randn({self.shp(shape)}, generator=g).to({dt})"
            if grad and not getattr(self, "inference", False):
                make += ".requires_grad_()"
        self.args.append((name, make, shape))
        v = Val(name, shape, "int64" if low is not None else dtype)
        self.dtypes.add(v.dtype)
        return v

    def new_param(self, shape, scale=1.0, dtype="float32", buffer=False):
        """A parameter (or buffer); its shape must not involve B."""
        name = f"{'b' if buffer else 'p'}{self.params}"
        self.params += 1
        init = f"torch.randn({tuple(shape)!r}, generator=g).to(torch.{dtype}) * {scale:.4g}"
        if buffer:
            self.init.append(f"self.register_buffer({name!r}, {init})")
        else:
            self.init.append(f"self.{name} = torch.nn.Parameter({init})")
        return Val("self." + name, shape, dtype)

    def pick(self, pred=lambda v: True):
        c = [v for v in self.pool if pred(v)]
        if not c:
            return None
        # Prefer recent values: deeper chains.
        return c[min(len(c) - 1, int(len(c) * (1 - self.r.random() ** 2)))]

    def dims(self, k):
        return tuple(self.r.choice(DIMS) for _ in range(k))

    # ------------------------------------------------------------ ops
    def op_unary(self, v):
        if not v.is_float:
            return None
        n = v.name
        forms = [("sin", f"{n}.sin()"), ("cos", f"torch.cos({n})"), ("tanh", f"{n}.tanh()"),
                 ("sigmoid", f"torch.sigmoid({n})"), ("relu", f"F.relu({n})"), ("gelu", f"F.gelu({n})"),
                 ("exp", f"torch.exp({n}.clamp(-3, 3))"), ("log", f"torch.log({n}.abs() + 0.5)"),
                 ("sqrt", f"({n}.abs() + 0.1).sqrt()"), ("rsqrt", f"torch.rsqrt({n}.abs() + 0.5)"),
                 ("abs", f"{n}.abs()"), ("neg", f"-{n}"), ("square", f"{n} * {n}"), ("pow", f"{n}.pow(3)"),
                 ("erf", f"torch.erf({n})"), ("softplus", f"F.softplus({n})"), ("silu", f"F.silu({n})"),
                 ("leaky_relu", f"F.leaky_relu({n}, 0.1)"), ("elu", f"F.elu({n})"),
                 ("clamp", f"{n}.clamp(-0.5, 0.7)"), ("reciprocal", f"({n}.abs() + 0.5).reciprocal()"),
                 ("atan", f"torch.atan({n})"), ("scale", f"{n} * {self.r.choice([0.5, 2.0, -1.5])}"),
                 ("addc", f"{n} + {self.r.choice([1.0, -0.25, 3.0])}"), ("hardtanh", f"F.hardtanh({n})"),
                 ("log1p", f"torch.log1p({n}.abs())"), ("expm1", f"torch.expm1({n}.clamp(-2, 2))"),
                 ("logsigmoid", f"F.logsigmoid({n})"), ("tan", f"torch.tan({n}.clamp(-1, 1))")]
        op, e = self.r.choice(forms)
        return self.fresh(e, v.shape, v.dtype, op)

    def broadcast_partner(self, v):
        """Another value broadcastable with v, or a fresh input/parameter."""
        cands = [w for w in self.pool if w is not v and w.is_float and w.dtype == v.dtype
                 and _broadcast(v.shape, w.shape) == v.shape]
        if cands and self.r.random() < 0.6:
            return self.r.choice(cands)
        shape = list(v.shape)
        for i in range(len(shape)):
            if self.r.random() < 0.3:
                shape[i] = 1
        if shape and self.r.random() < 0.3:
            shape = shape[self.r.randrange(len(shape)):]
        if self.has_b(shape):
            if len(shape) == len(v.shape) and self.b_leading(shape):
                return self.new_input(shape, v.dtype, grad=self.r.random() < 0.7)
            return self.new_param([1 if d % BATCH == 0 else d for d in shape], 1.0, v.dtype)
        if self.r.random() < 0.5:
            return self.new_param(shape, 1.0, v.dtype)
        return self.new_input(shape, v.dtype, grad=self.r.random() < 0.7)

    def b_leading(self, shape):
        return shape[0] == BATCH and not any(d % BATCH == 0 for d in shape[1:])

    def op_binary(self, v):
        if not v.is_float:
            return None
        w = self.broadcast_partner(v)
        a, b = v.name, w.name
        if self.r.random() < 0.5:
            a, b = b, a
        forms = [("add", f"{a} + {b}"), ("sub", f"{a} - {b}"), ("mul", f"{a} * {b}"),
                 ("div", f"{a} / ({b}.abs() + 0.5)"), ("maximum", f"torch.maximum({a}, {b})"),
                 ("minimum", f"torch.minimum({a}, {b})"), ("where", f"torch.where({a} > {b}, {a}, {b} * 0.5)"),
                 ("lerp", f"torch.lerp({a}, {b}, 0.3)"), ("atan2", f"torch.atan2({a}, {b}.abs() + 0.5)"),
                 ("masked_fill", f"{a}.masked_fill({b} > 0.5, 0.25)"), ("addcmul", f"torch.addcmul({a}, {a}, {b}, value=0.5)")]
        op, e = self.r.choice(forms)
        if op == "masked_fill" and self.r.random() < 0.8:   # aotc refuses a mask wider than the input
            e = f"{v.name}.masked_fill({w.name} > 0.5, 0.25)"
        out = _broadcast(v.shape, w.shape)
        return self.fresh(e, out, v.dtype, op)

    def op_reduce(self, v):
        if not v.is_float or not v.shape:
            return None
        d = self.r.randrange(len(v.shape))
        keep = self.r.random() < 0.4
        n = v.name
        forms = [("sum", f"{n}.sum({d}, keepdim={keep})"), ("mean", f"{n}.mean({d}, keepdim={keep})"),
                 ("amax", f"{n}.amax({d}, keepdim={keep})"), ("amin", f"torch.amin({n}, {d}, keepdim={keep})"),
                 ("var", f"{n}.var({d}, keepdim={keep})"), ("std", f"torch.std({n}, {d}, keepdim={keep})"),
                 ("logsumexp", f"torch.logsumexp({n}, {d}, keepdim={keep})"),
                 ("max_dim", f"{n}.max({d}, keepdim={keep})[0]"), ("norm", f"torch.linalg.vector_norm({n} + 0.1, dim={d}, keepdim={keep})"),
                 ("cumsum", None), ("sum_all", None), ("mean_dims", None)]
        op, e = self.r.choice(forms)
        if op in ("var", "std") and v.shape[d] < 2:
            op, e = "sum", f"{n}.sum({d}, keepdim={keep})"
        if op == "cumsum":
            return self.fresh(f"torch.cumsum({n}, {d})", v.shape, v.dtype, op)
        if op == "sum_all":
            return self.fresh(f"{n}.sum()", (), v.dtype, op)
        if op == "mean_dims" and len(v.shape) >= 2:
            ds = sorted(self.r.sample(range(len(v.shape)), 2))
            shape = [1 if i in ds else s for i, s in enumerate(v.shape)] if keep else \
                [s for i, s in enumerate(v.shape) if i not in ds]
            return self.fresh(f"{n}.mean({tuple(ds)!r}, keepdim={keep})", shape, v.dtype, op)
        if op == "mean_dims":
            op, e = "mean", f"{n}.mean({d}, keepdim={keep})"
        shape = list(v.shape)
        if keep:
            shape[d] = 1
        else:
            del shape[d]
        return self.fresh(e, shape, v.dtype, op)

    def op_softmax(self, v):
        if not v.is_float or not v.shape:
            return None
        d = self.r.randrange(-len(v.shape), 0)
        op = self.r.choice(["softmax", "log_softmax"])
        return self.fresh(f"F.{op}({v.name}, dim={d})", v.shape, v.dtype, op)

    def op_view(self, v):
        n, s = v.name, list(v.shape)
        forms = ["permute", "transpose", "slice", "unsqueeze", "squeeze", "reshape_merge", "reshape_split",
                 "expand", "select", "flatten", "narrow", "step", "t", "contiguous"]
        op = self.r.choice(forms)
        if op == "permute" and len(s) >= 2:
            p = list(range(len(s)))
            self.r.shuffle(p)
            return self.fresh(f"{n}.permute{tuple(p)!r}", [s[i] for i in p], v.dtype, op)
        if op == "transpose" and len(s) >= 2:
            a, b = self.r.sample(range(len(s)), 2)
            s[a], s[b] = s[b], s[a]
            return self.fresh(f"{n}.transpose({a}, {b})", s, v.dtype, op)
        if op == "t" and len(s) == 2:
            return self.fresh(f"{n}.t()", s[::-1], v.dtype, op)
        if op in ("slice", "narrow", "step") and s:
            d = self.r.randrange(len(s))
            if s[d] < 2 or (self.dynamic and s[d] % BATCH == 0):
                return None
            lo = self.r.randrange(s[d] - 1)
            if op == "step":
                s[d] = (s[d] + 1) // 2
                return self.fresh(f"{n}[{':, ' * d}::2]", s, v.dtype, op)
            length = self.r.randrange(1, s[d] - lo + 1)
            s[d] = length
            if op == "narrow":
                return self.fresh(f"{n}.narrow({d}, {lo}, {length})", s, v.dtype, op)
            return self.fresh(f"{n}[{':, ' * d}{lo}:{lo + length}]", s, v.dtype, op)
        if op == "select" and len(s) >= 2:
            d = self.r.randrange(len(s))
            if self.dynamic and s[d] % BATCH == 0:
                return None
            i = self.r.randrange(s[d])
            del s[d]
            return self.fresh(f"{n}.select({d}, {i})", s, v.dtype, op)
        if op == "unsqueeze" and len(s) < 4:
            d = self.r.randrange(len(s) + 1)
            s.insert(d, 1)
            return self.fresh(f"{n}.unsqueeze({d})", s, v.dtype, op)
        if op == "squeeze" and 1 in s:
            d = s.index(1)
            del s[d]
            return self.fresh(f"{n}.squeeze({d})", s, v.dtype, op)
        if op == "expand" and 1 in s:
            d = s.index(1)
            s[d] = self.r.choice(DIMS)
            return self.fresh(f"{n}.expand{self.shp(s)}", s, v.dtype, op)
        if op == "reshape_merge" and len(s) >= 2:
            d = self.r.randrange(len(s) - 1)
            s[d:d + 2] = [s[d] * s[d + 1]]
            how = self.r.choice(["reshape", "contiguous().view"])
            return self.fresh(f"{n}.{how}{self.shp(s)}", s, v.dtype, op)
        if op == "reshape_split" and s and len(s) < 4:
            d = self.r.randrange(len(s))
            for f in (2, 3):
                if s[d] % f == 0 and s[d] > f and not self.has_b(s[d:d + 1]):
                    s[d:d + 1] = [f, s[d] // f]
                    return self.fresh(f"{n}.reshape{self.shp(s)}", s, v.dtype, op)
            return None
        if op == "flatten" and len(s) >= 2:
            out = [s[0], _prod(s[1:])]
            return self.fresh(f"{n}.flatten(1)", out, v.dtype, op)
        if op == "contiguous" and len(s) >= 2:
            return self.fresh(f"{n}.transpose(0, 1).contiguous().transpose(0, 1)", s, v.dtype, op)
        return None

    def op_matmul(self, v):
        if not v.is_float or not v.shape or self.has_b(v.shape[-1:]):
            return None
        k = v.shape[-1]
        form = self.r.choice(["weight", "linear", "bmm", "attention", "self"])
        sc = 1.0 / k ** 0.5
        if form == "weight" or (form in ("bmm", "attention") and len(v.shape) != 3):
            n = self.r.choice(DIMS)
            w = self.new_param((k, n), sc, v.dtype)
            return self.fresh(f"{v.name} @ {w.name}", v.shape[:-1] + (n,), v.dtype, "matmul")
        if form == "linear":
            n = self.r.choice(DIMS)
            w = self.new_param((n, k), sc, v.dtype)
            b = self.new_param((n,), 0.1, v.dtype)
            return self.fresh(f"F.linear({v.name}, {w.name}, {b.name})", v.shape[:-1] + (n,), v.dtype, "linear")
        if form == "self" and len(v.shape) >= 2:
            return self.fresh(f"{v.name} @ {v.name}.transpose(-1, -2) * {sc:.4g}", v.shape[:-1] + (v.shape[-2],),
                              v.dtype, "matmul_self")
        if form == "bmm":
            n = self.r.choice(DIMS)
            if self.has_b(v.shape[:1]):
                w = self.new_input((v.shape[0], k, n), v.dtype) if v.shape[0] == BATCH else None
                if w is None:
                    return None
            else:
                w = self.new_param((v.shape[0], k, n), sc, v.dtype)
            return self.fresh(f"torch.bmm({v.name}, {w.name})", v.shape[:-1] + (n,), v.dtype, "bmm")
        if form == "attention":
            b, t, d = v.shape
            kv = self.pick(lambda w: w is not v and w.shape == v.shape and w.dtype == v.dtype)
            kname = kv.name if kv else v.name
            self.ops.add("attention")
            s = self.fresh(f"torch.softmax({v.name} @ {kname}.transpose(1, 2) * {1 / d ** 0.5:.4g}, dim=-1)",
                           (b, t, t), v.dtype, "attention_scores")
            return self.fresh(f"{s.name} @ {v.name}", (b, t, d), v.dtype, "attention")
        return None

    def op_conv(self, v):
        if not v.is_float or v.dtype in ("float16", "bfloat16"):
            return None
        if len(v.shape) != 4 or v.shape[2] < 3 or v.shape[3] < 3 or self.has_b(v.shape[1:]):
            if len(v.shape) == 2 and not self.has_b(v.shape[1:]) and v.shape[1] % 4 == 0 and v.shape[1] >= 8:
                c = v.shape[1] // 4
                shape = (v.shape[0], c, 2, 2)
                return self.fresh(f"{v.name}.reshape{self.shp(shape)}", shape, v.dtype, "reshape_nchw")
            return None
        n, c, h, w = v.shape
        op = self.r.choice(["conv2d", "conv2d", "max_pool2d", "avg_pool2d", "batch_norm", "group_norm"])
        if op == "conv2d":
            co, k = self.r.choice((2, 3, 4)), self.r.choice((1, 3))
            stride, pad = self.r.choice((1, 2)), self.r.choice((0, 1)) if k == 3 else 0
            wt = self.new_param((co, c, k, k), 1 / (c * k * k) ** 0.5, v.dtype)
            b = self.new_param((co,), 0.1, v.dtype)
            ho, wo = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
            return self.fresh(f"F.conv2d({v.name}, {wt.name}, {b.name}, stride={stride}, padding={pad})",
                              (n, co, ho, wo), v.dtype, op)
        if op in ("max_pool2d", "avg_pool2d"):
            return self.fresh(f"F.{op}({v.name}, 2)", (n, c, h // 2, w // 2), v.dtype, op)
        if op == "group_norm" and c % 2 == 0:
            return self.fresh(f"F.group_norm({v.name}, 2)", v.shape, v.dtype, op)
        return self.op_batch_norm(v)

    def op_batch_norm(self, v):
        if not v.is_float or len(v.shape) not in (2, 4) or self.has_b(v.shape[1:2]) or v.dtype != "float32":
            return None
        c = v.shape[1]
        rm = self.new_param((c,), 0.1, v.dtype, buffer=True)
        rv = self.new_param((c,), 0.0, v.dtype, buffer=True)
        self.init[-1] = self.init[-1].replace("* 0", "* 0 + 1")   # running_var starts at 1
        w = self.new_param((c,), 1.0, v.dtype)
        b = self.new_param((c,), 0.1, v.dtype)
        train = self.r.random() < 0.7
        return self.fresh(f"F.batch_norm({v.name}, {rm.name}, {rv.name}, {w.name}, {b.name}, training={train})",
                          v.shape, v.dtype, "batch_norm" if train else "batch_norm_eval")

    def op_layer_norm(self, v):
        if not v.is_float or not v.shape or self.has_b(v.shape[-1:]) or v.dtype in ("float16",):
            return None
        k = v.shape[-1]
        if self.r.random() < 0.5:
            w, b = self.new_param((k,), 1.0, v.dtype), self.new_param((k,), 0.1, v.dtype)
            return self.fresh(f"F.layer_norm({v.name}, ({k},), {w.name}, {b.name})", v.shape, v.dtype, "layer_norm")
        return self.fresh(f"F.layer_norm({v.name}, ({k},))", v.shape, v.dtype, "layer_norm")

    def op_gather(self, v):
        if not v.is_float or not v.shape:
            return None
        d = self.r.randrange(len(v.shape))
        if self.has_b(v.shape):
            return None
        op = self.r.choice(["index_select", "gather", "scatter_add", "embedding", "index_add"])
        s = list(v.shape)
        if op == "index_select":
            m = self.r.choice(DIMS)
            idx = self.new_input((m,), low=s[d])
            s[d] = m
            return self.fresh(f"torch.index_select({v.name}, {d}, {idx.name})", s, v.dtype, op)
        if op == "gather":
            s2 = [self.r.randint(1, x) for x in s]
            s2[d] = self.r.choice(DIMS)
            idx = self.new_input(s2, low=s[d])
            return self.fresh(f"torch.gather({v.name}, {d}, {idx.name})", s2, v.dtype, op)
        if op == "scatter_add":
            s2 = [self.r.randint(1, x) for x in s]
            idx = self.new_input(s2, low=s[d])
            src = f"{v.name}[{', '.join(f':{x}' for x in s2)}]"
            return self.fresh(f"torch.zeros_like({v.name}).scatter_add({d}, {idx.name}, {src} * 2)", s, v.dtype, op)
        if op == "index_add":
            idx = self.new_input((s[d],), low=s[d])
            return self.fresh(f"{v.name}.index_add({d}, {idx.name}, {v.name}.sin())", s, v.dtype, op)
        if op == "embedding" and len(s) == 2:
            idx = self.new_input(self.dims(2), low=s[0])
            return self.fresh(f"F.embedding({idx.name}, {v.name})", idx.shape + (s[1],), v.dtype, op)
        return None

    def op_dtype(self, v):
        """Mixed kind: casts, promotion, int64/bool results."""
        if not v.is_float:
            return None
        r = self.r.random()
        if r < 0.45:
            dts = [d for d in FLOATS if d != v.dtype]
            dt = self.r.choice(dts)
            return self.fresh(f"{v.name}.to(torch.{dt})", v.shape, dt, f"cast:{v.dtype}->{dt}")
        if r < 0.65:
            w = self.pick(lambda w: w.is_float and w.dtype != v.dtype and _broadcast(v.shape, w.shape) is not None)
            if w is None:
                return None
            dt = _promote(v.dtype, w.dtype)
            self.dtypes.add(f"{v.dtype}+{w.dtype}")
            return self.fresh(f"{v.name} * {w.name}", _broadcast(v.shape, w.shape), dt, f"promote:{v.dtype}*{w.dtype}")
        if r < 0.8 and v.shape:
            d = self.r.randrange(len(v.shape))
            s = list(v.shape)
            del s[d]
            i = self.fresh(f"{v.name}.argmax({d})", s, "int64", "argmax")
            return self.fresh(f"{i.name} * 2 + 1", s, "int64", "int_arith") if self.r.random() < 0.5 else i
        b = self.fresh(f"{v.name} > 0.1", v.shape, "bool", "gt")
        r = self.r.random()
        if r < 0.3:
            return self.fresh(f"{b.name}.sum(-1)" if v.shape else f"{b.name}.long()", v.shape[:-1], "int64", "bool_sum")
        if r < 0.6:
            return self.fresh(f"{b.name}.to({v.name}.dtype) * {v.name}", v.shape, v.dtype, "bool_to_float")
        return self.fresh(f"{b.name} & ({v.name} < 0.9)", v.shape, "bool", "logical_and")

    def op_inplace(self, v):
        """In-place ops on an intermediate (a clone, so autograd saved nothing
        the op overwrites), directly and through views."""
        if not v.is_float or not v.shape:
            return None
        w = self.fresh(f"{v.name}.clone()", v.shape, v.dtype)
        n, s = w.name, w.shape
        forms = [("ip_add_", f"{n}.add_({v.name}.sin())"), ("ip_relu_", f"F.relu({n}, inplace=True)"),
                 ("ip_select_mul_", f"{n}[0].mul_(3.0)"), ("ip_slice_fill_", f"{n}[..., :1].fill_(0.5)"),
                 ("ip_transpose_add_", f"{n}.transpose(0, -1)[0].add_(1.0)"),
                 ("ip_mul_partner_", None)]
        op, e = self.r.choice(forms)
        if op == "ip_mul_partner_":
            p = self.broadcast_partner(v)
            if _broadcast(p.shape, s) != s:
                return None
            e = f"{n}.mul_({p.name})"
        self.body.append(e)
        self.ops.add(op)
        return w

    # ------------------------------------------------------------ mutation
    def mutation(self, targets):
        """One in-place statement on a user input / buffer (or its view)."""
        r = self.r
        v = r.choice(targets)
        n, s = v.name, v.shape
        c = r.choice(["2.0", "0.5", "-1.0"])
        forms = [("add_", f"{n}.add_({c})"), ("mul_", f"{n}.mul_({c})"),
                 ("select_mul_", f"{n}[0].mul_({c})" if s and not self.has_b(s[:1]) or len(s) > 0 else None),
                 ("view_slice_zero_", f"{n}.view(-1)[:{max(1, _prod(s) // 2)}].zero_()"
                  if not self.has_b(s) and not getattr(v, "noncontig", False) else None),
                 ("transpose_select_add_", f"{n}.transpose(0, 1)[1].add_({c})" if len(s) >= 2 and s[1] >= 2 else None),
                 ("copy_", f"{n}.copy_({n}.detach().sin() * 2)"),
                 ("clamp_", f"{n}.clamp_(-1.0, 1.0)"), ("sigmoid_", f"{n}.sigmoid_()"),
                 ("no_grad_mul_", f"with torch.no_grad():\n            {n}.mul_({c})"),
                 ("narrow_add_", f"{n}.narrow(-1, 0, 1).add_({c})" if s else None),
                 ("twice", f"{n}.add_(1.0)\n        {n}.mul_({c})")]
        if n.startswith("self."):   # a buffer's running average of a computed value
            src = self.pick(lambda w: w.is_float and w.name.startswith("v"))
            if src is not None:
                forms.append(("buffer_ema", f"{n}.mul_(0.9).add_({src.name}.detach().mean().to({n}.dtype) * 0.1)"))
        op, e = r.choice([f for f in forms if f[1]])
        self.body.append(e)
        self.ops.add("mut:" + op)

    def custom_fn(self, v):
        """A custom autograd.Function whose backward mutates what the forward saved."""
        k = len(self.helpers)
        how = self.r.choice(["mul_", "add_", "none"])
        stmt = {"mul_": "x.mul_(2)", "add_": "x.add_(1)", "none": "pass"}[how]
        self.helpers.append(f'''
class Fn{k}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        r = g * 2 * x
        {stmt}
        return r
''')
        self.ops.add("custom_fn_bw:" + how)
        return self.fresh(f"Fn{k}.apply({v.name})", v.shape, v.dtype)

    # ------------------------------------------------------------ program
    def build(self):
        r = self.r
        rank = r.choice((1, 2, 2, 3, 3, 4))
        shape = list(self.dims(rank))
        if self.dynamic:
            shape[0] = BATCH
        elif r.random() < 0.3:
            shape[0] = BATCH
        self.inference = self.kind == "plain" and r.random() < 0.15
        x = self.new_input(shape, "float32", grad=not self.inference and (self.kind == "mutation" or r.random() < 0.85))
        self.pool.append(x)
        mut_targets = []
        if self.kind == "mutation":
            mut_targets.append(x)
            if r.random() < 0.5:
                y = self.new_input(x.shape, "float32", grad=r.random() < 0.5)
                self.pool.append(y)
                mut_targets.append(y)
            if r.random() < 0.5 and not self.has_b(x.shape):
                buf = self.new_param(x.shape, 1.0, buffer=True)
                mut_targets.append(buf)
            if r.random() < 0.3 and len(x.shape) >= 2:   # metadata mutation first, as users write it
                self.body.append(f"{x.name}.t_()" if len(x.shape) == 2 else f"{x.name}.transpose_(0, 1)")
                x.shape = (x.shape[1], x.shape[0]) + x.shape[2:]
                x.noncontig = True
                self.ops.add("mut:meta_transpose_")
        if self.kind == "mixed" and r.random() < 0.5:
            dt = r.choice(("float64", "bfloat16", "float16"))
            w = self.new_input(x.shape, dt, grad=r.random() < 0.7)
            self.pool.append(w)
        ops = [self.op_unary] * 5 + [self.op_binary] * 5 + [self.op_reduce] * 2 + [self.op_view] * 4 + \
              [self.op_matmul] * 2 + [self.op_softmax, self.op_conv, self.op_layer_norm, self.op_gather,
                                      self.op_batch_norm]
        ops += [self.op_inplace]
        if len(x.shape) == 4:
            ops += [self.op_conv] * 4
        if self.kind == "mixed":
            ops += [self.op_dtype] * 4
        steps = r.randint(3, 12)
        for i in range(steps):
            if self.kind == "mutation" and r.random() < 0.25:
                self.mutation(mut_targets)
                continue
            if self.kind == "mutation" and r.random() < 0.1:
                # Half the time on an input or buffer itself: its backward then
                # mutates the caller's tensor (after_backward.*), maybe after the
                # forward mutated it too.
                v = r.choice(mut_targets) if r.random() < 0.3 else self.pick(lambda v: v.is_float)
                self.custom_fn(v)
                continue
            v = self.pick()
            for _ in range(6):
                if r.choice(ops)(v) is not None:
                    break
            if self.pool[-1].is_float and _numel(self.pool[-1].shape) > 4096:
                self.pool.pop()
                self.body.pop()
        if self.kind == "mutation" and r.random() < 0.6:
            self.mutation(mut_targets)
        outs = [self.pool[-1]]
        # Values nothing reads become outputs too (up to three), so that
        # little of what was generated is dead code the exporter drops.
        text = "\n".join(self.body)
        dead = [v for v in self.pool[:-1] if v.name.startswith("v")
                and len(re.findall(rf"\b{v.name}\b", text)) == 1]
        outs += dead[-3:]
        names = [o.name for o in outs]
        if r.random() < 0.15 and outs[0].shape:   # outputs that alias each other
            names.append(f"{outs[0].name}[0]")
            self.ops.add("out:alias_output")
        if self.kind == "mutation" and r.random() < 0.4:   # an output that aliases an input
            t = r.choice([t for t in mut_targets if not t.name.startswith("self.")] or [x])
            names.append(r.choice([f"{t.name}.view(-1)" if not getattr(t, "noncontig", False) else t.name,
                                   f"{t.name}[0]" if t.shape else t.name, f"{t.name}.transpose(0, -1)", t.name]))
            self.ops.add("out:alias_input")
        return self.render(names)

    def render(self, outs):
        lines = ["import torch", "import torch.nn.functional as F", "",
                 f"KIND = {self.kind!r}", f"SEED = {self.seed}"]
        dyn = None
        if self.dynamic:
            dyn = {name: {0: "B"} for name, _, shape in self.args if shape and shape[0] % BATCH == 0}
        lines.append(f"DYNAMIC = {dyn!r}")
        lines += self.helpers
        lines += ["", "", "class Model(torch.nn.Module):", "    def __init__(self):", "        super().__init__()",
                  f"        g = torch.Generator().manual_seed({self.seed})"]
        lines += ["        " + s for s in self.init]
        if self.inference:   # an inference program: nothing requires grad
            lines.append("        self.requires_grad_(False)")
        argn = ", ".join(a for a, _, _ in self.args)
        lines += ["", f"    def forward(self, {argn}):"]
        if self.dynamic:
            lines.append(f"        B = {self.args[0][0]}.shape[0]")
        lines += ["        " + s for s in self.body]
        lines.append(f"        return ({', '.join(outs)},)")
        lines += ["", "", f"def make_args(B={BATCH}, seed={self.seed + 1}):",
                  "    g = torch.Generator().manual_seed(seed)"]
        lines += [f"    {a} = {m}" for a, m, _ in self.args]
        lines.append(f"    return ({argn},)")
        src = "\n".join(lines) + "\n"
        return Case(self.seed, self.kind, src, sorted(self.ops), sorted(self.dtypes), dyn)


def _prod(s):
    p = 1
    for d in s:
        p *= d
    return p


def _numel(s):
    return _prod(s)


def _broadcast(a, b):
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(reversed(out))


def _promote(a, b):
    order = {"float16": 1, "bfloat16": 1, "float32": 2, "float64": 3}
    if {a, b} == {"float16", "bfloat16"}:
        return "float32"
    return a if order[a] >= order[b] else b


def generate(seed, kind, attempt=0):
    """Case `seed` of `kind`; `attempt` > 0 draws another program for the same
    seed (the fuzzer's retry when eager refuses the first one)."""
    return Gen(seed, kind, attempt).build()
