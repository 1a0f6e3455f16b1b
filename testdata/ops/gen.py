#!/usr/bin/python3
"""Op conformance fixtures (issue 12): for each op spelling, a small program
that applies it to several samples (broadcasting, a transposed
non-contiguous operand, size-1 dims), exported with tools/fx_export.py and
run eagerly by PyTorch for its reference (outputs and gradients).  Samples
stay small so the suite stays fast.

    /usr/bin/python3 testdata/ops/gen.py [OUTDIR]
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from gen_util import seeded_randn, write_fixtures, write_safetensors  # noqa: E402

rn = seeded_randn(1200)


def unary(fn, lo=-2.0, hi=2.0):
    """fn on a [2,3] tensor, a transposed [4,3] one and a [1,5]; values in (lo, hi)."""
    def prog(a, b, c):
        return fn(a), fn(b.t()), fn(c)
    span = hi - lo
    mk = (lambda *s: (torch.rand(*s, generator=torch.Generator().manual_seed(sum(s) + 7)) * span + lo).requires_grad_(True))
    return prog, (mk(2, 3), mk(3, 4), mk(1, 5))


def binary(fn, lo=-2.0, hi=2.0, away=0.0, scalar=True):
    """fn(x, y) with broadcasting ([2,3] with [3]), a transposed operand, a
    size-1 one and (if the op takes one) a Python scalar."""
    def prog(a, b, c, d):
        return (fn(a, b), fn(c.t(), a), fn(a, d)) + ((fn(a, 1.5),) if scalar else ())
    span = hi - lo

    def mk(*s):
        t = torch.rand(*s, generator=torch.Generator().manual_seed(sum(s) + 11)) * span + lo
        if away:
            t = torch.where(t.abs() < away, t.sign() * away + t, t)
        return t.requires_grad_(True)
    return prog, (mk(2, 3), mk(3), mk(3, 2), mk(1))


programs = []


def add(name, prog_args, **opts):
    prog, args = prog_args
    programs.append((name, prog, args) + ((opts,) if opts else ()))


# elementwise math
add("expm1", unary(torch.expm1))
add("log1p", unary(torch.log1p, -0.5, 2))
add("log2", unary(torch.log2, 0.2, 3))
add("log10", unary(torch.log10, 0.2, 3))
add("reciprocal", unary(torch.reciprocal, 0.5, 2))
add("tan", unary(torch.tan, -1.2, 1.2))
add("asin", unary(torch.asin, -0.9, 0.9))
add("acos", unary(torch.acos, -0.9, 0.9))
add("atan", unary(torch.atan))
add("sinh", unary(torch.sinh))
add("cosh", unary(torch.cosh))
add("asinh", unary(torch.asinh))
add("acosh", unary(torch.acosh, 1.2, 3))
add("atanh", unary(torch.atanh, -0.9, 0.9))
add("rounding", unary(lambda x: torch.floor(x * 3) + torch.ceil(x * 3) + torch.round(x * 3) + torch.trunc(x * 3) + x))
add("atan2", binary(torch.atan2, away=0.2, scalar=False))
add("fmod", binary(torch.fmod, away=0.3))
add("remainder", binary(torch.remainder, away=0.3))
add("div_modes", binary(lambda x, y: torch.div(x, y, rounding_mode="floor") + torch.div(x, y, rounding_mode="trunc") + x * y, away=0.3))
add("pow_scalar_base", unary(lambda x: torch.pow(2.0, x)))
add("elu", unary(lambda x: F.elu(x, alpha=0.7)))
add("selu_celu", unary(lambda x: torch.selu(x) + F.celu(x, alpha=1.3)))
add("softplus", unary(lambda x: F.softplus(x) + F.softplus(x * 10, beta=2.0, threshold=5.0)))
add("mish", unary(F.mish))
add("logsigmoid", unary(F.logsigmoid, -6, 6))
add("logaddexp", binary(torch.logaddexp, scalar=False))
add("xlogy", binary(lambda x, y: torch.xlogy(x, y.abs() + 0.1) if torch.is_tensor(y) else torch.xlogy(x, y)))
add("clamp_tensor", binary(lambda x, y: torch.clamp(x, min=y - 0.5, max=y + 0.5) + torch.clamp_min(x, 0.3) + torch.clamp_max(x, -0.2),
                          scalar=False))


def nan_inf(x):
    y = torch.where(x > 1, x / 0.0, x)
    y = torch.where(x < -1.5, y * float("nan"), y)
    return torch.isnan(y).float() * 2 + torch.isinf(y).float() + x
add("isnan_isinf", unary(nan_inf))


# Issue 48: NaN and the sign of zero where eager has them.  relu keeps a NaN
# and a -0 (clamp_min(x, 0)); clamp with tensor bounds returns a NaN bound;
# remainder's zero has fmod's sign (the dividend's: torch.remainder(0., -2.)
# is +0, unlike Python's %), fmod's and floor division's have theirs; a
# logsumexp over infinities is that infinity (ATen shifts by 0 there).  A
# signed zero is shown by a reciprocal's infinity.
def nan_and_signed_zero(a, b):
    x = a.detach()
    nan_x = torch.where(x > 1, x * float("nan"), x)
    z = torch.where(x.abs() < 1, x * 0.0, x)
    return (a * b, 1 / torch.relu(z), torch.relu(nan_x), torch.clamp(x, min=nan_x - 3), torch.clamp(x, max=nan_x + 3),
            torch.clamp(x, min=b - 3, max=nan_x), torch.clamp_min(x, nan_x), torch.clamp_max(x, nan_x),
            1 / torch.remainder(z, -2.0), 1 / torch.remainder(z, 2.0), 1 / torch.remainder(z, b - 5), 1 / torch.fmod(z, -2.0),
            1 / torch.floor_divide(z, -2.0), 1 / torch.div(z, b - 5, rounding_mode="trunc"), torch.sign(nan_x), 1 / torch.abs(z),
            torch.maximum(x, nan_x), torch.minimum(nan_x, x), torch.amax(nan_x, 1), torch.remainder(nan_x, b), torch.fmod(b, nan_x),
            torch.logsumexp(x.abs() / 0.0, 1), torch.logsumexp(-x.abs() / 0.0, 1), torch.logsumexp(torch.where(x > 0, x / 0.0, x), 1))
add("nan_and_signed_zero", (nan_and_signed_zero, ((torch.rand(3, 4, generator=torch.Generator().manual_seed(4801)) * 4 - 2).requires_grad_(True),
                                                  torch.rand(3, 4, generator=torch.Generator().manual_seed(4802)) + 0.5)))


def ints(x):
    i = (x * 10).long()
    j = i.flip(0)
    a = (i & j) + torch.bitwise_or(i, 3) + (i ^ j) + (~i) + i % 3 + torch.fmod(i, 4) + torch.div(i, 3, rounding_mode="floor") \
        + torch.div(i, 3, rounding_mode="trunc") + i.bitwise_not()
    b = torch.logical_xor(i > 0, j < 0)
    return x * a.float() + b.float()
add("integer_ops", unary(ints))


# reductions with indices
def maxmin(x):
    v, i = torch.max(x, dim=1)
    w, j = torch.min(x, dim=0, keepdim=True)
    return v, i, w, j, torch.argmin(x, dim=1), x.max(), x.min(), torch.any(x > 1.5), torch.any(x > 1, dim=1)
add("max_min_dim", (maxmin, (rn(3, 4, rg=True),)))
add("var_dim", (lambda x: (torch.var(x, dim=1), torch.var(x, dim=(0, 1), unbiased=False, keepdim=True)), (rn(3, 4, rg=True),)))


# shape ops
add("repeat", (lambda x, y: (x.repeat(2, 3), y.repeat(2, 1, 2), x.t().repeat(1, 2)), (rn(2, 3, rg=True), rn(4, rg=True))))
add("flip_roll", (lambda x: (torch.flip(x, [0, 2]), torch.roll(x, 2, 1), torch.roll(x, (1, -1), (0, 2)), torch.roll(x, 5)),
                  (rn(2, 3, 4, rg=True),)))
add("triu_tril", (lambda x, y: (torch.triu(x), torch.tril(x, -1), torch.triu(y, 1), torch.tril(y.transpose(1, 2), 2)),
                  (rn(4, 5, rg=True), rn(2, 3, 4, rg=True))))
add("masked_fill", (lambda x, m: (x.masked_fill(m, -1.0), x.masked_fill(m[0], float("-inf")).softmax(-1),
                                  x.masked_fill(m, torch.tensor(2.0))),
                    (rn(3, 4, rg=True), torch.tensor([[True, False, False, True], [False] * 4, [True] * 3 + [False]]))))


def new_fill(x):
    z = x.new_zeros((2, 3)) + x.new_ones(3) + x.new_full((1, 3), 2.5)
    f = torch.full_like(x, 3.0)
    f.fill_(torch.tensor(1.5))
    return x * z + f, torch.zeros_like(x).fill_(2.0) * x
add("new_fill", (new_fill, (rn(2, 3, rg=True),)))


def scatter_views(x, s):
    return torch.slice_scatter(x, s, dim=1, start=0, end=4, step=2), torch.select_scatter(x, s[:, 0], 1, 3)
add("scatter_views", (scatter_views, (rn(3, 5, rg=True), rn(3, 2, rg=True))))


def index_t(x, i, j):
    return x[i], x[:, j], x[i, j], x[i.view(2, 1), j.view(1, 2)], x[-1], x[[0, 2]]
add("index_tensor", (index_t, (rn(4, 5, rg=True), torch.tensor([3, 0]), torch.tensor([-1, 2]))))
add("upsample_nearest", (lambda x: (F.interpolate(x, scale_factor=2, mode="nearest"), F.interpolate(x, size=(5, 7), mode="nearest"),
                                    F.interpolate(x, scale_factor=0.5, mode="nearest")), (rn(1, 2, 4, 6, rg=True),)))
add("upsample_bilinear", (lambda x: (F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
                                     F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True),
                                     F.interpolate(x, size=(3, 4), mode="bilinear")), (rn(1, 2, 4, 6, rg=True),)))
add("pad_modes", (lambda x, y: (F.pad(x, (2, 1, 1, 2), mode="reflect"), F.pad(x, (1, 3, 2, 0), mode="replicate"),
                                F.pad(y, (2, 1), mode="reflect"), F.pad(y, (0, 2), mode="replicate")),
                  (rn(1, 2, 4, 5, rg=True), rn(2, 3, 4, rg=True))))
add("pixel_shuffle", (lambda x: (F.pixel_shuffle(x, 2), F.pixel_unshuffle(F.pixel_shuffle(x, 2) * 2, 2)), (rn(1, 8, 3, 2, rg=True),)))
add("prelu", (lambda x, w, v: (F.prelu(x, w), F.prelu(x, v)), (rn(2, 3, 4, 4, rg=True), rn(3, rg=True), rn(1, rg=True))))
add("split_unsafe", (lambda x: [t * (i + 1) for i, t in enumerate(torch.split(x, 2, dim=1))] +
                     list(torch.split(x, [1, 3, 1], dim=1)), (rn(3, 5, rg=True),)))


# convolution and pooling in 1-D, transposed convolution
add("conv1d", (lambda x, w, b: (F.conv1d(x, w, b, stride=2, padding=1), F.conv1d(x, w[:, :2], None, padding=2, dilation=2, groups=2)),
               (rn(2, 4, 9, rg=True), rn(6, 4, 3, rg=True), rn(6, rg=True))))
add("conv_transpose", (lambda x, w, b, y, v: (F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
                                              F.conv_transpose2d(x, w[:, :1].repeat(1, 1, 1, 1), None, groups=2),
                                              F.conv_transpose1d(y, v, stride=3, padding=1)),
                       (rn(1, 4, 3, 4, rg=True), rn(4, 3, 3, 3, rg=True), rn(3, rg=True), rn(2, 3, 5, rg=True), rn(3, 2, 4, rg=True))))
add("pool1d", (lambda x: (F.avg_pool1d(x, 3, 2, 1), F.adaptive_avg_pool1d(x, 3), F.avg_pool1d(x, 2)), (rn(2, 3, 9, rg=True),)))


def index_put(x, i, j, v):
    y = x.clone()
    y[i] = v[0]
    z = x.clone()
    z.index_put_((i, j), v[1, :2], accumulate=True)
    w = x.clone()
    w[w > 0.5] = 0.0
    u = x.clone()
    u[torch.tensor([1, 3, 1])] = v[:3]  # a duplicate: the later write wins
    return y, z, w, u
add("index_put", (index_put, (rn(4, 5, rg=True), torch.tensor([2, 0]), torch.tensor([1, 4]), rn(3, 5, rg=True))))


def grad_in_forward(x, w):
    y = F.mse_loss(x * w, torch.ones_like(x))
    g, = torch.autograd.grad(y, x, create_graph=True)
    return g * 2 + x
add("grad_in_forward", (grad_in_forward, (rn(3, 4, rg=True), rn(3, 4, rg=True))))


# Core ATen overloads called by their own names (the spellings 2.x traces
# emit and a 1.13 trace of user code may not).
A = torch.ops.aten


def core_direct(x, y, b1, b2, i):
    outs = [A.add.Scalar(x, 2.0), A.alias(x) * 3, A.mul.Scalar(x, -1.5), A.div.Scalar(x, 4.0),
            A.div.Scalar_mode(x, 0.7, rounding_mode="floor"), A.bmm(b1, b2), A.copy(x, y[0]),
            A.expand(y[0], [2, 3]) * x, A.fill.Scalar(x, 0.25) + x, A.full([2, 3], 1.5) * x, A.hardtanh(x * 2, -0.5, 0.5),
            A.erf(x), A.log(x.abs() + 0.5), A.maximum(x, y[1]), A.minimum(x, y[1]),
            A.index_put(x, [i], y[:2], False), A.index_put(x, [i], y[:2], True)]
    outs += [A.eq.Tensor(x, y[0]), A.eq.Scalar(x, 0.5), A.ge.Tensor(x, y[0]), A.ge.Scalar(x, 0.1), A.gt.Tensor(x, y[0]),
             A.le.Tensor(x, y[0]), A.le.Scalar(x, 0.1), A.lt.Tensor(x, y[0]), A.ne.Tensor(x, y[0]), A.ne.Scalar(x, 0.0)]
    m = x > 0
    outs += [A.logical_and(m, y[0] > 0), A.logical_or(m, y[0] > 0), A.logical_not(m), A.arange.start_step(0, 5, 2),
             A.bitwise_and.Scalar(A.arange.start_step(0, 6, 1), 3), A.bitwise_or.Scalar(A.arange.start_step(0, 6, 1), 8),
             A.bitwise_xor.Scalar(A.arange.start_step(0, 6, 1), 5)]
    return outs
add("core_direct", (core_direct, (rn(2, 3, rg=True), rn(3, 3, rg=True), rn(2, 2, 3, rg=True), rn(2, 3, 2, rg=True),
                                  torch.tensor([1, 0]))))


def backward_ops(x, w, g, idx):
    y, ind = A.max_pool2d_with_indices(x, [2, 2], [2, 2])
    outs = [A.max_pool2d_with_indices_backward(g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, ind),
            A.avg_pool2d_backward(g, x, [2, 2], [2, 2], [0, 0], False, True, None),
            A._adaptive_avg_pool2d_backward(g, x)]
    gc = torch.ones(1, 3, 3, 3) * g.sum()
    outs += list(A.convolution_backward(gc, x, w, [3], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True]))
    outs.append(A.embedding_dense_backward(g.reshape(4, 2), idx, 5, 1, False))
    return outs
add("backward_ops", (backward_ops, (rn(1, 2, 4, 4, rg=True), rn(3, 2, 2, 2, rg=True), rn(1, 2, 2, 2, rg=True),
                                    torch.tensor([0, 1, 3, 1]))))


add("cumsum", (lambda x, i: (torch.cumsum(x, 1), torch.cumsum(x.t(), 0), torch.cumsum(i, 0), x.cumsum(-1).cumsum(0)),
               (rn(3, 4, rg=True), torch.tensor([3, -1, 2, 5]))))


def sorting(x):
    v, i = torch.sort(x, dim=1)
    w, j = torch.sort(x, dim=0, descending=True, stable=True)
    t, k = torch.topk(x, 2, dim=1)
    u, m = torch.topk(x.t(), 3, dim=0, largest=False)
    return v, i, w, j, t, k, u, m, torch.argsort(x, dim=1, descending=True)
add("sort_topk", (sorting, (rn(4, 5, rg=True),)))


def scatters(x, s, i):
    return (torch.scatter(x, 1, i, s[:, :2]), torch.scatter(x, 0, i.t()[:, :2] % 3, 2.5), x.scatter_reduce(1, i, s[:, :2], "sum"),
            x.scatter_reduce(1, i, s[:, :2], "mean", include_self=False), x.scatter_reduce(1, i, s[:, :2], "mean"),
            torch.scatter(x, 1, i[:, :1], s[:, :1]))
add("scatter", (scatters, (rn(3, 5, rg=True), rn(3, 4, rg=True), torch.tensor([[0, 4], [2, 2], [1, 3]]))))
add("masked_scatter", (lambda x, m, s: (x.masked_scatter(m, s), x.masked_scatter(m[0], s)),
                       (rn(3, 4, rg=True), torch.tensor([[True, False, True, False], [False] * 4, [True] * 4]), rn(4, 4, rg=True))))


def layer_norm_backward(x, w, b, go):
    out, mean, rstd = torch.ops.aten.native_layer_norm(x, [4], w, b, 1e-5)
    return torch.ops.aten.native_layer_norm_backward(go, x, [4], mean, rstd, w, b, [True, True, True])
add("layer_norm_backward", (layer_norm_backward, (rn(2, 3, 4, rg=True), rn(4, rg=True), rn(4, rg=True), rn(2, 3, 4, rg=True))))


def bn_eval(x, w, b, rm, rv):
    return torch.ops.aten.native_batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5)[0]


def bn_train_no_stats(x, w, b):
    return torch.ops.aten.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)[0]
add("bn_legit_no_training", (bn_eval, (rn(2, 3, 4, rg=True), rn(3, rg=True), rn(3, rg=True), rn(3), rn(3).abs() + 0.5)))
add("bn_legit_no_stats", (bn_train_no_stats, (rn(2, 3, 4, rg=True), rn(3, rg=True), rn(3, rg=True))))


def respell_batch_norm(outdir):
    """PyTorch 1.13 has no _native_batch_norm_legit*: the two fixtures above
    are exported with native_batch_norm and respelled as 2.x traces spell
    them (same semantics, arguments without `training` or the running stats)."""
    for name, target, drop in (("bn_legit_no_training", "aten._native_batch_norm_legit_no_training.default", [5]),
                               ("bn_legit_no_stats", "aten._native_batch_norm_legit.no_stats", [3, 4])):
        path = os.path.join(outdir, name + ".json")
        doc = json.load(open(path))
        for n in doc["nodes"]:
            if n["target"] == "aten.native_batch_norm.default":
                n["target"] = target
                n["args"] = [a for k, a in enumerate(n["args"]) if k not in drop]
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


# losses
def losses(x, t, w):
    return (F.binary_cross_entropy_with_logits(x, t.sigmoid()),
            F.binary_cross_entropy_with_logits(x, t.sigmoid(), pos_weight=w.detach().abs(), reduction="sum"),
            F.smooth_l1_loss(x, t), F.smooth_l1_loss(x, t, beta=0.5, reduction="none"),
            F.huber_loss(x, t, delta=0.7), F.kl_div(x.log_softmax(-1), t.softmax(-1), reduction="batchmean"),
            F.kl_div(x.log_softmax(-1), t.log_softmax(-1), reduction="sum", log_target=True))
add("losses", (losses, (rn(3, 4, rg=True), rn(3, 4, rg=True), rn(4))))


# generic spellings: in-place, out=, _foreach
def inplace_forms(x):
    y = x.clone()
    y.mul_(0.5).expm1_()
    f = x.clone()
    f.floor_()
    z = x.clone()
    z.clamp_min_(0.1).log1p_()
    # out= refuses inputs that require grad in eager.
    d = x.detach()
    out = torch.empty(2, 3)
    torch.sin(d, out=out)
    w = d.clone()
    torch.atan2(d, d + 1, out=w)
    return y + z + f, out * x, w * x
add("inplace_out", (inplace_forms, (rn(2, 3, rg=True),)))


def foreach_forms(a, b):
    xs = [a.clone(), b.clone()]
    torch._foreach_mul_(xs, 2.0)
    torch._foreach_add_(xs, [a, b], alpha=0.5)
    ys = torch._foreach_exp([a, b])
    zs = torch._foreach_mul(xs, [1.5, -2.0])
    return xs[0] + ys[0] + zs[0], xs[1] * ys[1] + zs[1]
add("foreach", (foreach_forms, (rn(2, 3), rn(4))))  # 1.13 has no _foreach gradients


# ---------------------------------------------------------------- layers people use
# Small versions of the layers issue 12 names (the full models are for
# scripts/zoo_check.py): recurrent nets (unsafe_split), a UNet step
# (transposed convolution, bilinear upsampling, cat skip), a GPT-2 block
# (masked_fill causal mask, split, a tied head), InstanceNorm + PReLU, and
# the losses (BCE-with-logits, smooth L1, Huber, KL divergence).
class LSTMNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0]


class GRUNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(8, 12, bidirectional=True)

    def forward(self, x):
        return self.gru(x)[0]


class UNetStep(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.down = torch.nn.Conv2d(3, 8, 3, 2, 1)
        self.up = torch.nn.ConvTranspose2d(8, 4, 2, 2)
        self.out = torch.nn.Conv2d(7, 2, 1)

    def forward(self, x):
        y = F.relu(self.down(x))
        z = self.up(y)
        z2 = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
        return self.out(torch.cat([z, x], 1)) + z2[:, :2]


class GPTBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(50, 16)
        self.ln = torch.nn.LayerNorm(16)
        self.attn = torch.nn.Linear(16, 48)
        self.head = torch.nn.Linear(16, 50, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx):
        T = idx.shape[1]
        x = self.wte(idx)
        q, k, v = self.attn(self.ln(x)).split(16, dim=2)
        a = (q @ k.transpose(1, 2)) / 4.0
        mask = torch.tril(torch.ones(T, T)).bool()
        a = a.masked_fill(~mask, float("-inf")).softmax(-1)
        return self.head(x + a @ v)


class NormPReLU(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.InstanceNorm2d(3, affine=True)
        self.act = torch.nn.PReLU(3)

    def forward(self, x):
        return self.act(self.norm(x))


def more_losses(x, t):
    return (F.binary_cross_entropy_with_logits(x, t.sigmoid()), F.smooth_l1_loss(x, t), F.huber_loss(x, t),
            F.kl_div(x.log_softmax(-1), t.softmax(-1), reduction="batchmean"))


torch.manual_seed(12)
add("layer_lstm", (LSTMNet(), (rn(2, 5, 8, rg=True),)))
add("layer_gru", (GRUNet(), (rn(5, 2, 8, rg=True),)))
add("layer_unet", (UNetStep(), (rn(1, 3, 8, 8, rg=True),)))
add("layer_gpt_block", (GPTBlock(), (torch.randint(0, 50, (2, 6), generator=torch.Generator().manual_seed(3)),)))
add("layer_instancenorm_prelu", (NormPReLU(), (rn(2, 3, 5, 5, rg=True),)))
add("layer_losses", (more_losses, (rn(3, 4, rg=True), rn(3, 4))))



# ---------------------------------------------------------------- the rest of Core ATen
# Appended after the fixtures above with their own random stream, so those
# stay byte-identical when this generator grows.
rn2 = seeded_randn(1300)


def sym_shapes(x):
    return x.reshape(2, 6), x.t() + 1, x[1:] + 3
add("sym_shapes", (sym_shapes, (rn2(4, 3, rg=True),)))


def respell_sym(outdir):
    """Symbolic traces compute sizes with aten.sym_size.int & co. and Python
    integer arithmetic (_operator.*); PyTorch 1.13's dispatch-level recorder
    sees the numbers.  Respells sym_shapes as such a trace spells it: the
    reshape's sizes and the added numbers become shape computations."""
    path = os.path.join(outdir, "sym_shapes.json")
    doc = json.load(open(path))
    nodes, out = doc["nodes"], []
    x = doc["inputs"][0]["name"]

    def node(name, target, *args):
        out.append({"name": name, "target": target, "args": list(args), "kwargs": {}})
        return {"node": name}
    for n in nodes:
        if n["target"] in ("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten._reshape_alias.default") and n["args"][1] == [2, 6]:
            q = node("sym_q", "_operator.floordiv", node("sym_n", "aten.sym_numel.default", {"node": x}), 6)
            s1 = node("sym_s1", "aten.sym_size.int", {"node": x}, -1)
            n["args"][1] = [q, node("sym_w", "_operator.mul", s1, node("sym_two", "_operator.sub", node("sym_s0", "aten.sym_size.int", {"node": x}, 0), 2))]
        elif n["target"] == "aten.add.Tensor" and n["args"][1] == 1:
            n["args"][1] = node("sym_st", "aten.sym_stride.int", n["args"][0], 0)
        elif n["target"] == "aten.add.Tensor" and n["args"][1] == 3:
            n["args"][1] = node("sym_off", "_operator.add", node("sym_o", "aten.sym_storage_offset.default", n["args"][0]),
                                node("sym_c", "aten.sym_is_contiguous.default", {"node": x}))
            n["args"][1] = node("sym_off3", "_operator.sub", n["args"][1], 1)
        out.append(n)
    assert sum(o["target"].startswith(("aten.sym_", "_operator.")) for o in out) == 11, out
    doc["nodes"] = out
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")



def prods(x, i):
    z = x * torch.tensor([[1.0, 1, 1, 1], [1, 0, 1, 1], [0, 1, 0, 1]])  # rows with no, one and two zeros
    return (torch.prod(x), torch.prod(z, 1), torch.prod(z.t(), 0, keepdim=True), torch.prod(x, -1), torch.prod(z[1]),
            torch.prod(i), torch.prod(i, 0))
add("prod", (prods, (rn2(3, 4, rg=True), torch.tensor([[3, -2], [1, 5]]))))



def pools3d(x, t):
    ties = t * 1.0  # integer values: ties inside windows
    m1, i1 = F.max_pool3d(x, 2, return_indices=True)
    m2, i2 = F.max_pool3d(x, (2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0), dilation=(1, 1, 2), ceil_mode=True, return_indices=True)
    m3, i3 = F.max_pool3d(ties, 2, stride=1, return_indices=True)
    return (m1, i1, m2, i2, m3, i3, F.max_pool3d(x[0], 3, stride=2, padding=1),
            F.avg_pool3d(x, 2), F.avg_pool3d(x, (3, 2, 3), stride=2, padding=1, ceil_mode=True),
            F.avg_pool3d(x, 3, stride=2, padding=1, count_include_pad=False, ceil_mode=True),
            F.avg_pool3d(x.transpose(3, 4), 2, divisor_override=3),
            F.adaptive_avg_pool3d(x, (3, 2, 4)), F.adaptive_avg_pool3d(x, 1), F.adaptive_avg_pool3d(x[1], (2, 5, 3)))
add("pool3d", (pools3d, (rn2(2, 3, 5, 6, 7, rg=True), torch.randint(0, 3, (1, 2, 4, 4, 4), generator=torch.Generator().manual_seed(5)).float().requires_grad_(True))))



def group_norm_backward(x, w, b, go):
    # PyTorch 1.13 has no derivative for native_group_norm_backward: its
    # operands are detached, and gradients are checked through the forward.
    out, mean, rstd = torch.ops.aten.native_group_norm(x, w, b, 2, 6, 10, 3, 1e-5)
    xd, wd, md, rd = x.detach(), w.detach(), mean.detach(), rstd.detach()
    gx, gw, gb = torch.ops.aten.native_group_norm_backward(go, xd, md, rd, wd, 2, 6, 10, 3, [True, True, True])
    gx2 = torch.ops.aten.native_group_norm_backward(go, xd, md, rd, None, 2, 6, 10, 3, [True, False, False])[0]
    return out, gx, gw, gb, gx2
add("group_norm_backward", (group_norm_backward, (rn2(2, 6, 2, 5, rg=True), rn2(6, rg=True), rn2(6, rg=True), rn2(2, 6, 2, 5))))



def diagonals(x, v):
    y = x.clone()
    y.diagonal(1, 1, 2).mul_(2.0)          # an in-place update through the view
    d = torch.diagonal(x, -1, 0, 2) * 1.0  # batch of off-diagonals
    return (y, d, x[0].diagonal(), x.transpose(1, 2).diagonal(2, -1, -2), torch.diagonal_scatter(x, v, 0, 1, 2),
            torch.diag(v[0]), torch.diag(v[1], -2), torch.diag(x[1], 1), x[:, :0].diagonal())
add("diagonal", (diagonals, (rn2(2, 3, 4, rg=True), rn2(2, 3, rg=True))))



def diagonal_input_mutation(x, w):
    x.diagonal(0, -2, -1).add_(w)  # the caller's tensor changes: an epilogue through the view
    return (x * w.sum()).sum(0)
add("diagonal_mutation", (diagonal_input_mutation, (rn2(2, 3, 3), rn2(3, rg=True))))



def distances(a, b, x):
    dup = torch.cat([x[:2], x[:1]])  # a repeated row: a zero distance
    return (torch.cdist(a, b), torch.cdist(a, b, p=1), torch.cdist(a, b, p=3.5), torch.cdist(a, b, p=float("inf")),
            torch.cdist(a, b, p=0), torch.cdist(a[0], a[0]), torch.cdist(a.transpose(1, 2), a.transpose(1, 2)[:1, :2]),
            F.pdist(x), F.pdist(dup), F.pdist(x, p=1), F.pdist(x, p=float("inf")))
add("distances", (distances, (rn2(2, 4, 3, rg=True), rn2(2, 5, 3, rg=True), rn2(5, 3, rg=True))))



def fold_unfold(x, cols):
    return (F.unfold(x, 3, padding=1), F.unfold(x, (2, 3), dilation=(2, 1), stride=(1, 2)), F.unfold(x[0], 2, stride=2),
            F.fold(cols, (5, 6), 2), F.fold(cols[:, :4, :9], (4, 7), (2, 2), dilation=(1, 2), padding=1, stride=(2, 3)),
            F.fold(F.unfold(x, 3, padding=1, stride=2), x.shape[2:], 3, padding=1, stride=2))
add("fold_unfold", (fold_unfold, (rn2(2, 3, 5, 6, rg=True), rn2(2, 8, 20, rg=True))))



def resize_same(x):
    y = x * 2.0
    y.resize_(x.shape)  # out= wrappers resize to the result's own shape: a no-op
    return y + 1.0
add("resize_same", (resize_same, (rn2(2, 3),)))  # eager refuses resize_ under autograd



def bags(w, psw, idx, offs, idx2):
    return (F.embedding_bag(idx, w, offs, mode="sum"), F.embedding_bag(idx, w, offs, mode="mean"),  # bag 2 is empty
            F.embedding_bag(idx, w, offs, mode="sum", per_sample_weights=psw), F.embedding_bag(idx2, w, mode="mean"),
            F.embedding_bag(idx, w, torch.cat([offs, torch.tensor([8])]), include_last_offset=True, padding_idx=3),
            F.embedding_bag(idx, w, offs, mode="sum", padding_idx=1))
add("embedding_bag", (bags, (rn2(6, 3, rg=True), rn2(8, rg=True), torch.tensor([1, 3, 0, 5, 3, 1, 2, 4]), torch.tensor([0, 2, 5, 5]),
                             torch.tensor([[0, 1, 2], [5, 3, 3]]))))



def grid_samples(x, g):
    g2 = g * 1.3  # some points outside [-1, 1]
    outs = []
    for mode in ("bilinear", "nearest"):
        for pad in ("zeros", "border", "reflection"):
            for align in (False, True):
                outs.append(F.grid_sample(x, g2, mode=mode, padding_mode=pad, align_corners=align))
    return tuple(outs)
add("grid_sampler", (grid_samples, (rn2(2, 3, 5, 6, rg=True), (torch.rand(2, 4, 3, 2, generator=torch.Generator().manual_seed(9)) * 2 - 1).requires_grad_(True))))



def pool_results_are_fresh(x):
    # A pool stage that keeps its size must still give a new tensor: an
    # in-place update of the result must not reach the input.
    y = F.adaptive_avg_pool3d(x, (2, 3, 4))
    z = F.adaptive_avg_pool2d(x, (3, 4))
    y.add_(1.0)
    z.mul_(2.0)
    return x + 0.0, y, z
add("pool_fresh", (pool_results_are_fresh, (rn2(2, 2, 3, 4),)))



def aranges(x):
    # Every arange overload, and ATen's dtype rule: int64 only when every
    # bound is an integer (a float step makes the whole range float).
    T = x.shape[1]
    return (x + torch.arange(0, T, dtype=torch.long), x * torch.arange(T), torch.arange(1, T + 1) * 1.5 + x,
            torch.arange(0, 3, 0.5), torch.arange(2, 9, 3), torch.arange(-1.0, 1.0, 0.25), torch.arange(0.5, 4))
add("aranges", (aranges, (rn2(2, 5, rg=True),)))


def signs(x):
    # aten.sign (Core ATen), zeros included: no gradient flows through it.
    return torch.sign(x) * x, torch.sign(x - x.round())
add("sign", (signs, (torch.tensor([[-1.5, 0.0, 2.0], [3.0, -0.25, 0.0]], requires_grad=True),)))


# ---------------------------------------------------------------- dtypes
# The same layers in float64 and bfloat16 (PyTorch 1.13's CPU kernels cover
# them), and float16 on the ops its CPU kernels have: e2e_test compares with a
# tolerance per result dtype (Note [Dtype tolerances] there).
def mixed_layers(x, w, cw, g):
    h = F.conv2d(x, cw, padding=1)
    h = F.gelu(h).flatten(1) @ w
    h = F.layer_norm(h, (h.shape[-1],), g, None)
    s = h.softmax(-1) * torch.tanh(h) + h.sigmoid().sqrt() - torch.exp(-h.abs()) + torch.erf(h) / 2
    m = torch.where(h > 0, h, 0.5 * h).amax(1, keepdim=True)
    return (s - m).mean(), h.log_softmax(-1), F.relu(h).pow(2).sum(0)


def half_ops(x, y):
    return (x * y + x / (y.abs() + 1)).sum(1), torch.where(x > y, x, y).amax(0), (x - y).pow(2).mean()


for dt, tag in ((torch.float64, "f64"), (torch.bfloat16, "bf16")):
    add(f"dtype_{tag}", (mixed_layers, (rn2(2, 2, 3, 3).to(dt).requires_grad_(True), rn2(18, 6).to(dt).requires_grad_(True),
                                        rn2(2, 2, 3, 3).to(dt).requires_grad_(True), rn2(6).to(dt).requires_grad_(True))))
add("dtype_f16", (half_ops, (rn2(3, 4).half().requires_grad_(True), rn2(3, 4).half().requires_grad_(True))))


def half_vectors(x, y, r, s, h):
    # Note [Vectorized access] for the 16-bit types: innermost sizes that are
    # multiples of four give kernels that read and write four bfloat16 /
    # float16 values per access, beside a broadcast row, an operand sliced at
    # an odd offset (scalar loads), a float32 operand in a bfloat16 kernel,
    # and a bfloat16 softmax row group (Note [Row vectors]).  s needs no
    # gradient: its float32 gradient would carry bfloat16 roundings of
    # softmax's backward, which eager's fused kernel places elsewhere.
    a = x * y + torch.tanh(x) * r
    b = a + s[:, 1:9].to(torch.bfloat16)
    sm = torch.softmax(b, -1) * y
    hh = torch.where(h > 0, h, h * 0.25) + (h - 1.5) * h.abs()
    return sm, b.float().sum(0), hh, hh.sum(1)
add("half_vectors", (half_vectors, (rn2(4, 8).bfloat16().requires_grad_(True), rn2(4, 8).bfloat16().requires_grad_(True),
                                    rn2(8).bfloat16().requires_grad_(True), rn2(4, 9),
                                    rn2(2, 12).half().requires_grad_(True))))


def convs3d(x, w, b, wg, wt, wtg):
    return (F.conv3d(x, w, b), F.conv3d(x, w, stride=(2, 1, 2), padding=(1, 2, 0), dilation=(2, 1, 1)),
            F.conv3d(x, wg, groups=2, padding=1),
            F.conv_transpose3d(x, wt, b, stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 0), dilation=(1, 2, 1)),
            F.conv_transpose3d(x[:1], wtg, groups=2), F.conv3d(x[1], w, padding=(0, 1, 1)))
add("conv3d", (convs3d, (rn2(2, 4, 5, 6, 5, rg=True), rn2(3, 4, 2, 3, 2, rg=True), rn2(3, rg=True), rn2(4, 2, 3, 1, 2, rg=True),
                         rn2(4, 3, 2, 2, 3, rg=True), rn2(4, 1, 2, 3, 2, rg=True))))


def small_ints(a, b, c):
    return (a + b, a * b, b - a, torch.maximum(a, b), a & b, a ^ b, a.to(torch.int16) - c, c * c, c.abs(), a > b,
            a.float() * 0.5, c.to(torch.uint8), a + c)
_g = torch.Generator().manual_seed(11)
add("small_ints", (small_ints, (torch.randint(0, 256, (3, 4), generator=_g, dtype=torch.uint8),
                                torch.randint(0, 256, (3, 4), generator=_g, dtype=torch.uint8),
                                torch.randint(-128, 128, (4,), generator=_g, dtype=torch.int8))))


# ---------------------------------------------------------------- Core ATen overloads no other fixture reaches
# Direct: PyTorch 1.13's tracer spells these as they are.  The random ops
# enter through results that do not depend on the draw (a sorted
# permutation, a uniform below 1), so eager's values still hold.
def core_more(x, y, x5):
    e = torch.empty_strided((2, 3), (1, 2))
    e.copy_(x)
    return (torch.rsqrt(x.abs() + 1), A.sub.Scalar(x, 2.5), torch.pow(x.abs() + 0.5, y), e * y,
            F.pad(x5, (1, 1, 1, 0, 0, 1), mode="reflect"), F.pad(x5, (1, 1, 1, 0, 0, 1), mode="replicate"),
            A.native_dropout(x, 0.0, True)[0] * y, (torch.rand(3) < 1.0).float(), torch.randn(2, 2).isnan().float(),
            torch.randperm(5).sort().values)
add("core_more", (core_more, (rn2(2, 3, rg=True), rn2(2, 3, rg=True), rn2(1, 2, 3, 3, 3, rg=True))))


# Respelled: what PyTorch 2.x traces spell differently (respell_core below
# rewrites the exported graph; the values are eager's for the same program).
def core_respelled(x, y, w, b):
    return (F.avg_pool1d(x, 3, 2, 1), F.adaptive_avg_pool1d(x, 2), x.unsqueeze(1).squeeze(1) * 2, x.any(1),
            torch.var(y, 1, keepdim=True), A.lerp.Scalar(y, y.flip(0), 1.0),
            A.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)[0])
add("core_respelled", (core_respelled, (rn2(2, 3, 7, rg=True), rn2(3, 4, rg=True), rn2(3, rg=True), rn2(3, rg=True))))


# Complex values as (re, im) pairs (Note [Complex tensors as pairs]): the
# spectra torch.fft, stft and spectral filters give, read back as real
# tensors; windows; as_strided's overlapping frames as a gather.
def spectra(x, img, filt, sig):
    y = torch.fft.rfft(x, norm="ortho")
    z = torch.stft(sig, 8, hop_length=3, window=torch.hann_window(8), return_complex=True)
    f2 = torch.fft.rfft2(img)
    back = torch.fft.irfft2(f2 * filt, s=img.shape[-2:])
    full = torch.fft.fft(x, dim=0)
    inv = torch.fft.ifft(torch.fft.fft(img, dim=-1) / 2.0 - full[:1, :1] * 3.0, dim=-2, norm="forward")
    frames = sig.unfold(-1, 5, 2)
    return (y.abs(), torch.view_as_real(y), z.abs().pow(2), back, full.real, full.imag, torch.view_as_real(inv),
            y.angle(), (y * y).sum(-1).abs(), frames * 2, torch.hamming_window(6, periodic=False) + torch.blackman_window(5)[0],
            torch.bartlett_window(7))
add("spectra", (spectra, (rn2(6, 5, rg=True), rn2(2, 4, 6, rg=True), rn2(4, 4, rg=True), rn2(2, 20, rg=True))))


def respell_core(outdir):
    """core_respelled as a 2.x trace spells it: avg_pool1d and
    adaptive_avg_pool1d as themselves (1.13 lifts them to 2-D between an
    unsqueeze and a squeeze), squeeze.dims and any.dims with a list of dims,
    var.dim (1.13: var.correction), copy (a lerp with weight 1 is a copy of
    its end: lerp computes end - (end - start) * (1 - weight), exactly `end`
    with gradient 0 to `start`), _native_batch_norm_legit.default (the same
    arguments as native_batch_norm); and core_direct's bitwise_or/xor with
    a Python scalar as the .Scalar overloads they are."""
    path = os.path.join(outdir, "core_respelled.json")
    doc = json.load(open(path))
    byname = {n["name"]: n for n in doc["nodes"]}
    drop, out = set(), []
    for n in doc["nodes"]:
        t = n["target"]
        src = n["args"][0] if n["args"] and isinstance(n["args"][0], dict) else None
        inner = byname.get(src["node"]) if src else None
        if t == "aten.squeeze.dim" and inner and inner["target"] in ("aten.avg_pool2d.default", "aten._adaptive_avg_pool2d.default"):
            lifted = byname[inner["args"][0]["node"]]
            x = lifted["args"][0]
            drop.update({inner["name"], lifted["name"]})
            if inner["target"] == "aten.avg_pool2d.default":
                n["target"], n["args"] = "aten.avg_pool1d.default", [x] + [a[1:] for a in inner["args"][1:4]]
            else:
                n["target"], n["args"] = "aten.adaptive_avg_pool1d.default", [x, inner["args"][1][1:]]
        elif t == "aten.squeeze.dim":
            n["target"], n["args"] = "aten.squeeze.dims", [n["args"][0], [n["args"][1]]]
        elif t == "aten.any.dim":
            n["target"], n["args"] = "aten.any.dims", [n["args"][0], [n["args"][1]]]
        elif t == "aten.var.correction":
            assert n["kwargs"] == {"correction": 1, "keepdim": True}, n
            n["target"], n["args"], n["kwargs"] = "aten.var.dim", [n["args"][0], n["args"][1], True, True], {}
        elif t == "aten.lerp.Scalar":
            assert n["args"][2] == 1.0
            n["target"], n["args"] = "aten.copy.default", n["args"][:2]
        elif t == "aten.native_batch_norm.default":
            n["target"] = "aten._native_batch_norm_legit.default"
    doc["nodes"] = [n for n in doc["nodes"] if n["name"] not in drop]
    targets = {n["target"] for n in doc["nodes"]}
    for t in ("aten.avg_pool1d.default", "aten.adaptive_avg_pool1d.default", "aten.squeeze.dims", "aten.any.dims",
              "aten.var.dim", "aten.copy.default", "aten._native_batch_norm_legit.default"):
        assert t in targets, t
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    # core_more draws random numbers: its inputs carry the seed.
    path = os.path.join(outdir, "core_more.inputs.safetensors")
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    types = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "BOOL": torch.bool}
    tensors = {k: torch.frombuffer(bytearray(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]), dtype=types[v["dtype"]])
               .reshape(v["shape"]) for k, v in header.items() if k != "__metadata__"}
    tensors["rng_seed"] = torch.tensor(5, dtype=torch.int64)
    write_safetensors(path, tensors)
    path = os.path.join(outdir, "core_direct.json")
    doc = json.load(open(path))
    for n in doc["nodes"]:
        if n["target"] in ("aten.bitwise_or.Tensor", "aten.bitwise_xor.Tensor") and not isinstance(n["args"][1], dict):
            n["target"] = n["target"].replace(".Tensor", ".Scalar")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


# ---------------------------------------------------------------- what PyTorch 2.x traces as one op (issue 36)
# Vector norms of every order (zero rows and zero elements: eager's gradient
# masks its divisions there), cumprod with zeros, adaptive max pooling with
# its backward, new_empty_strided.  Their own seeds: the fixtures above keep theirs.  scripts/torch2_ops_test.py exports these
# (and the attention programs below, which 1.13 cannot) under PyTorch 2.x.
rn3 = seeded_randn(1400)


def norms(x, z):
    V = torch.linalg.vector_norm
    outs = [V(z, p, dim=1) for p in (2, 1, 0, 3, 0.5, -1, -0.5, 1.5, float("inf"), float("-inf"))]
    return outs + [V(x), V(x, 2, dim=(0, 1), keepdim=True), torch.norm(x, p=1, dim=0, keepdim=True), torch.norm(x, dim=1),
                   V(x, 3, dim=-1, dtype=torch.float64), x.norm(float("inf")), torch.norm(x), V(x, 1.5, dim=(), keepdim=True)]
add("norms", (norms, (rn3(3, 4, rg=True), torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.5, 0.0, -2.0, 0.5], [0.3, -1.2, 0.7, 2.0]],
                                                         requires_grad=True))))


def cumprods(x, z, i):
    return (torch.cumprod(z, 1), torch.cumprod(z.t(), 0), torch.cumprod(x, -1), torch.cumprod(x[0], 0, dtype=torch.float64),
            torch.cumprod(i, 0), torch.cumprod(x[:, :1], 1))
add("cumprod", (cumprods, (rn3(3, 7, rg=True),  # rows with no, one and two zeros
                           torch.tensor([[1.5, -2.0, 0.5, 3.0, 1.1], [0.7, 0.0, 2.0, -1.0, 4.0], [0.0, 1.3, 0.0, 2.0, -0.5]],
                                        requires_grad=True),
                           torch.tensor([3, -1, 2, 5]))))


def adaptive_max(x, t, y, g):
    ties = t * 1.0  # integer values: ties inside windows
    a, ia = F.adaptive_max_pool2d(x, (2, 3), return_indices=True)        # windows overlap, sizes differ
    b, ib = F.adaptive_max_pool2d(x[:, :, :4, :6], 2, return_indices=True)  # divisible: a max_pool2d
    c, ic = F.adaptive_max_pool2d(ties, (3, 2), return_indices=True)
    d, idd = F.adaptive_max_pool1d(y, 3, return_indices=True)
    e = F.adaptive_max_pool2d(x[0], (4, 5))                              # unbatched, output as large as the input
    back = torch.ops.aten.adaptive_max_pool2d_backward(g, x.detach(), ia.detach())
    return a, ia, b, ib, c, ic, d, idd, e, back
add("adaptive_max_pool", (adaptive_max, (rn3(2, 3, 5, 7, rg=True),
                                         torch.randint(0, 3, (1, 2, 5, 4), generator=torch.Generator().manual_seed(6)).float()
                                         .requires_grad_(True), rn3(2, 3, 7, rg=True), rn3(2, 3, 2, 3))))


def new_empty_strided(x):
    e = x.new_empty_strided((2, 3), (1, 2))
    e.fill_(1.5)
    f = x.new_empty_strided((3,), (1,), dtype=torch.float64).zero_()
    return e * x, f + 1
add("new_empty_strided", (new_empty_strided, (rn3(2, 3, rg=True),)))


def norm_overloads(x, y):
    # The overloads by name (traces of torch.norm pick among them by version).
    return (A.norm.Scalar(x, 3), A.norm.ScalarOpt_dtype(x, 1.5, dtype=torch.float64), A.norm.ScalarOpt_dim_dtype(x, None, [0], True, dtype=torch.float64),
            A.adaptive_max_pool1d(y, [3]))
add("norm_overloads", (norm_overloads, (rn3(3, 4, rg=True), rn3(2, 3, 7, rg=True))))


# PyTorch 2.x only: their fixtures are written by the pinned 2.x
# (scripts/torch2_ops_test.py --write-fixtures testdata/ops).
TORCH2_ONLY = ["sdpa", "sdpa_flash_cpu", "safe_softmax", "layer_transformer"]
if hasattr(F, "scaled_dot_product_attention"):  # PyTorch 2.x
    import inspect
    try:
        SDPA_GQA = "enable_gqa" in inspect.signature(F.scaled_dot_product_attention).parameters
    except (TypeError, ValueError):  # a builtin without a signature: the docstring tells
        SDPA_GQA = "enable_gqa" in (F.scaled_dot_product_attention.__doc__ or "")

    def attentions(q, k, v, kg, vg, m, kl, vl):
        # A value head size unlike the query's takes PyTorch's math path
        # (_safe_softmax), an equal one the fused CPU kernel: both.
        sdpa = F.scaled_dot_product_attention
        bm = torch.ones(2, 1, 4, 4, dtype=torch.bool).tril()
        bm[1, 0, 2] = False  # a fully masked row: 0 out, no gradient
        outs = []
        for vv, vgg, vll in ((v, vg, vl), (v[..., :6], vg[..., :6], vl[..., :6])):
            outs += [sdpa(q, k, vv), sdpa(q, k, vv, is_causal=True, scale=0.3), sdpa(q, k, vv, attn_mask=m),
                     sdpa(q, k, vv, attn_mask=bm), sdpa(q, kl, vll, is_causal=True),
                     sdpa(q[0], k[0], vv[0]), sdpa(q.double(), k.double(), vv.double(), attn_mask=m.double())]
            if SDPA_GQA:  # grouped-query heads: PyTorch >= 2.5
                outs.insert(len(outs) - 3, sdpa(q, kg, vgg, enable_gqa=True))
        return outs
    add("sdpa", (attentions, (rn3(2, 4, 4, 8, rg=True), rn3(2, 4, 4, 8, rg=True), rn3(2, 4, 4, 8, rg=True), rn3(2, 2, 4, 8, rg=True),
                              rn3(2, 2, 4, 8, rg=True), rn3(4, 4), rn3(2, 4, 6, 8, rg=True), rn3(2, 4, 6, 8, rg=True))))

    def flash_cpu(q, k, v):
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, is_causal=True)
        return out, lse
    add("sdpa_flash_cpu", (flash_cpu, (rn3(2, 3, 5, 8, rg=True), rn3(2, 3, 5, 8, rg=True), rn3(2, 3, 5, 8, rg=True))))

    def safe_softmax(x):
        y = x.masked_fill(torch.tensor([False, True, False]).view(3, 1), float("-inf"))
        return torch.ops.aten._safe_softmax(y, -1), torch.ops.aten._safe_softmax(x, 0)
    if hasattr(torch.ops.aten, "_safe_softmax"):  # PyTorch >= 2.5
        add("safe_softmax", (safe_softmax, (rn3(3, 4, rg=True),)))

    class Transformer(torch.nn.Module):
        """nn.MultiheadAttention without weights (2.x: the fused kernel), an encoder layer, a causal decoder layer."""

        def __init__(self):
            super().__init__()
            self.mha = torch.nn.MultiheadAttention(16, 4, batch_first=True)
            self.enc = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
            self.dec = torch.nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0, batch_first=True)

        def forward(self, x, mem):
            a = self.mha(x, x, x, need_weights=False)[0]
            causal = torch.nn.Transformer.generate_square_subsequent_mask(x.shape[1])
            return self.dec(self.enc(x + a), mem, tgt_mask=causal, tgt_is_causal=True)
    torch.manual_seed(36)
    add("layer_transformer", (Transformer(), (rn3(2, 5, 16, rg=True), rn3(2, 3, 16, rg=True))))


# ------------------------------------------------ spellings without a line yet
# One fixture line each for spellings of the FX tables that no program used
# (frontend_completeness_test's kNoFixtureYet, issue 35); own seeds, so the
# programs above keep theirs.
rn3 = seeded_randn(1400)


def inplace_activations(x):
    a = x * 1.0
    F.relu(a, inplace=True)
    b = x * 1.0
    F.silu(b, inplace=True)
    c = x * 1.0
    F.hardtanh(c, -0.5, 0.5, inplace=True)
    d = x * 1.0
    F.leaky_relu(d, 0.2, inplace=True)
    e = x * 1.0
    F.hardsigmoid(e, inplace=True)
    f = x * 1.0
    F.hardswish(f, inplace=True)
    g = x * 1.0
    g.clamp_(-0.3, 0.4)
    h = x * 1.0
    h.div_(x.detach().abs() + 3.0)
    k = x.unsqueeze(0) * 1.0
    k.squeeze_()
    return a, b, c, d, e, f, g, h, k
add("inplace_activations", (inplace_activations, (rn3(3, 4, rg=True),)))


def more_spellings(x, y, b1, b2, i):
    return (torch.clamp_min(x, y), torch.clamp_max(x, y), torch.floor_divide(x.detach(), y.detach().abs() + 3.0),
            torch.baddbmm(x.unsqueeze(0).expand(2, 3, 4) * 1.0, b1, b2), torch.argsort(x, dim=1, stable=True),
            x.index_add(0, i, y[:2] * 1.0), x.unsqueeze(1).squeeze() * 1.0)
add("more_spellings", (more_spellings, (rn3(3, 4, rg=True), rn3(3, 4, rg=True), rn3(2, 3, 5, rg=True), rn3(2, 5, 4, rg=True),
                                        torch.tensor([0, 2]))))


def windows(x):
    return (x + torch.hann_window(5, periodic=True), x + torch.hamming_window(5), x + torch.bartlett_window(5, periodic=True),
            x + torch.blackman_window(5, periodic=True), x + torch.hamming_window(5, True, 0.5),
            x + torch.hamming_window(5, True, 0.5, 0.4))
add("window_spellings", (windows, (rn3(2, 5, rg=True),)))


# ------------------------------------------------ special functions and composites (issue 36)
# What users' programs call that aotc refused: erfc, exp2, frac, the shrinks,
# threshold, lerp, nan_to_num, lgamma/digamma/polygamma, erfinv, logit,
# addcmul/addcdiv, copysign, hypot, logaddexp2, binary_cross_entropy, and the
# backward spellings joint graphs hold.  Own seeds: the programs above keep theirs.
rn4 = seeded_randn(1500)
add("erfc_exp2", unary(lambda x: (torch.erfc(x), torch.exp2(x), torch.special.erfc(x * 0.5))))


def gammas(x, neg):
    # Negative arguments away from the poles; polygamma(1) (trigamma) without
    # a gradient: its own (polygamma(2)) is refused by name.
    return (torch.lgamma(x), torch.digamma(x), torch.lgamma(neg), torch.digamma(neg), torch.polygamma(0, x),
            torch.polygamma(1, x.detach()) * x, torch.polygamma(1, neg.detach()))
add("gamma_fns", (gammas, ((torch.rand(3, 4, generator=torch.Generator().manual_seed(1501)) * 4 + 0.2).requires_grad_(True),
                            torch.tensor([-0.5, -1.3, -2.6, -3.5, -0.2, -4.75], requires_grad=True))))


def erfinvs(x, edge):
    return torch.erfinv(x), torch.erfinv(x.t()), torch.erfinv(edge)
add("erfinv", (erfinvs, ((torch.rand(3, 4, generator=torch.Generator().manual_seed(1502)) * 1.9 - 0.95).requires_grad_(True),
                         torch.tensor([-1.0, 1.0, 0.5, -0.25, 1.5], requires_grad=True))))


def logits(x, edge):
    return (torch.logit(x), torch.logit(x, eps=0.1), torch.logit(edge), torch.logit(edge, 1e-3), torch.logit(edge, 0.0),
            torch.special.logit(x.t()))
add("logit", (logits, ((torch.rand(3, 4, generator=torch.Generator().manual_seed(1503)) * 0.9 + 0.05).requires_grad_(True),
                       torch.tensor([-0.5, 0.0, 1.0, 1.5, 0.3, 0.0005, 0.9999], requires_grad=True))))
add("copysign", binary(lambda x, y: torch.copysign(x, y), away=0.1))
add("hypot", binary(torch.hypot, away=0.1, scalar=False))
add("logaddexp2", binary(torch.logaddexp2, scalar=False))


def shrinks(x):
    y = x * 1.5
    return (torch.frac(y), F.hardshrink(y, 0.3), F.softshrink(y, 0.4), F.threshold(y, 0.1, -2.0), F.hardshrink(y),
            F.softshrink(y.t()), F.threshold(y, -0.5, 7.0))
add("shrinks", (shrinks, (rn4(3, 4, rg=True),)))


def nan_to_nums(x):
    y = torch.where(x > 1, x / 0.0, x)
    y = torch.where(x < -1, -y / 0.0, y)
    y = torch.where(x.abs() < 0.2, y * float("nan"), y)
    return (torch.nan_to_num(y), torch.nan_to_num(y, nan=1.5, posinf=100.0, neginf=-7.0), torch.nan_to_num(y.double()),
            torch.nan_to_num(y, posinf=2.0), torch.nan_to_num((x * 10).long()))
add("nan_to_num", (nan_to_nums, (rn4(4, 5, rg=True),)))


def lerps(a, b, w):
    return (torch.lerp(a, b, 0.3), torch.lerp(a, b, 0.75), torch.lerp(a, b, w), torch.lerp(a, b[0], w.t().t()),
            torch.lerp(a, b, -0.2))
add("lerp", (lerps, (rn4(3, 4, rg=True), rn4(3, 4, rg=True),
                     (torch.rand(3, 4, generator=torch.Generator().manual_seed(1504)) * 1.6 - 0.3).requires_grad_(True))))


def addcs(x, a, b):
    return (torch.addcmul(x, a, b), torch.addcmul(x, a, b[0], value=-0.5), torch.addcdiv(x, a, b.abs() + 0.5),
            torch.addcdiv(x, a, b.abs() + 0.5, value=2.0), torch.addcmul(x.t(), a.t(), b.t(), value=3))
add("addcmul_addcdiv", (addcs, (rn4(3, 4, rg=True), rn4(3, 4, rg=True), rn4(3, 4, rg=True))))


def bces(x, t, w, edge, et):
    # 1.13's kernel takes log(1 - x), 2.x's log1p(-x): inputs where both are
    # within the suite's tolerance; edge holds exact 0s and 1s (a saturated
    # sigmoid), where the gradient is ATen's clamped (x - t) / 1e-12.
    return (F.binary_cross_entropy(x, t), F.binary_cross_entropy(x, t, reduction="sum"),
            F.binary_cross_entropy(x, t, weight=w, reduction="none"), F.binary_cross_entropy(x, t, weight=w[0]),
            F.binary_cross_entropy(edge, et, reduction="none"))
add("binary_cross_entropy", (bces, ((torch.rand(3, 4, generator=torch.Generator().manual_seed(1505)) * 0.9 + 0.05).requires_grad_(True),
                                    torch.rand(3, 4, generator=torch.Generator().manual_seed(1506)).requires_grad_(True),
                                    torch.rand(3, 4, generator=torch.Generator().manual_seed(1507)) + 0.5,
                                    torch.tensor([0.0, 1.0, 0.0, 1.0, 0.5], requires_grad=True),
                                    torch.tensor([0.0, 1.0, 0.3, 0.8, 0.5]))))


def pointwise_backwards(g, x, t, w):
    return (A.threshold_backward(g, x, 0.0), A.threshold_backward(g, x, 0.5),
            A.binary_cross_entropy_backward(g, x.sigmoid(), t, None, 0),
            A.binary_cross_entropy_backward(g.sum(), x.sigmoid(), t, w, 1),
            A.binary_cross_entropy_backward(g.sum(), x.sigmoid(), t, None, 2))
add("pointwise_backwards", (pointwise_backwards, (rn4(3, 4, rg=True), rn4(3, 4, rg=True),
                                                  torch.rand(3, 4, generator=torch.Generator().manual_seed(1508)),
                                                  torch.rand(4, generator=torch.Generator().manual_seed(1509)))))


# The backward spellings a joint graph holds for hardshrink, softshrink and
# logit: values at, inside and outside the bounds (and NaN), logit's with and
# without eps.
def shrink_logit_backwards(g, x, p):
    # NaN in self passes g; built off the graph of x (eager's 0 * NaN through
    # the where would make x's whole gradient NaN, a rule aotc does not copy).
    nan = torch.where(x.detach() > 1.5, x.detach() * float("nan"), x.detach())
    edge = torch.tensor([-0.5, 0.5, 0.0, 0.25, -0.25, 1.0])
    return (A.hardshrink_backward(g, x, 0.5), A.softshrink_backward(g, x, 0.5),
            A.hardshrink_backward(g, nan, 0.5), A.softshrink_backward(g, nan, 0.5),
            A.hardshrink_backward(g[:, :1], edge.reshape(6, 1)[:3], 0.25), A.softshrink_backward(g[:, 0], edge[:3], 0.5),
            # logit_backward has no derivative in eager: no gradient flows through it.
            A.logit_backward(g.detach(), p), A.logit_backward(g.detach(), p, 0.1), A.logit_backward(g.detach(), p * 1.4 - 0.2),
            A.logit_backward(g.detach(), p * 1.4 - 0.2, 0.05))
add("shrink_logit_backwards", (shrink_logit_backwards, (rn4(3, 4, rg=True), rn4(3, 4, rg=True) * 1.2,
                                                        torch.rand(3, 4, generator=torch.Generator().manual_seed(1512)) * 0.9
                                                        + 0.05)))

# Note [Float math on integers] (kernels.cpp): float ops on integer and bool
# tensors compute in the result's type (true division, exp of an int), and a
# float32 with a float64 operand in float64.
def float_math_on_ints(x, d):
    i = (x.detach() * 4).round().long()  # int64 in [-8, 8]
    j = torch.arange(1, 13, dtype=torch.int32).reshape(3, 4)
    b = i > 0
    f = (torch.exp(i * 0.25) + torch.exp(j) * 1e-4 + torch.sqrt(j) + torch.sin(i) * torch.erf(j) + i / 3 + j / i.clamp(min=1)
         + torch.atan2(i, j) + torch.sigmoid(i) + torch.exp(b) + torch.log1p(j) + torch.true_divide(j, 7) + torch.tanh(b))
    return x * f, torch.atan2(x, d), x.double() * (i / 7)
add("float_math_on_ints", (float_math_on_ints, ((torch.rand(3, 4, generator=torch.Generator().manual_seed(1510)) * 4 - 2).requires_grad_(True),
                                                torch.rand(3, 4, generator=torch.Generator().manual_seed(1511), dtype=torch.float64) + 0.5)))


# ------------------------------------------------ bicubic upsampling (issue 48)
# upsample_bicubic2d (Note [Separable resampling]): align_corners both ways,
# up and down, sizes and scale factors (a scale factor is used as given, so a
# non-integer one moves the points off in / out), a dim kept, a single
# output row with align_corners; own seeds.
rn5 = seeded_randn(1600)


def bicubic(x):
    return (F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False),
            F.interpolate(x, size=(7, 9), mode="bicubic", align_corners=True),
            F.interpolate(x, scale_factor=0.5, mode="bicubic", align_corners=False),
            F.interpolate(x, size=(3, 4), mode="bicubic", align_corners=True),
            F.interpolate(x, scale_factor=(1.7, 0.6), mode="bicubic", align_corners=False),
            F.interpolate(x, size=(5, 6), mode="bicubic", align_corners=False),
            F.interpolate(x, scale_factor=1.3, mode="bicubic", align_corners=False, recompute_scale_factor=True),
            F.interpolate(x.transpose(2, 3), size=(1, 3), mode="bicubic", align_corners=True))
add("upsample_bicubic", (bicubic, (rn5(2, 3, 4, 6, rg=True),)))


def bicubic_default(x):
    return (F.interpolate(x, scale_factor=(1.7, 0.6), mode="bicubic", align_corners=False),
            F.interpolate(x, size=(6, 3), mode="bicubic", align_corners=True),
            F.interpolate(x, size=(2, 7), mode="bicubic", align_corners=False))
add("upsample_bicubic_default", (bicubic_default, (rn5(1, 2, 4, 5, rg=True),)))


if hasattr(F, "scaled_dot_product_attention"):  # PyTorch 2.x: float16 and bfloat16 bicubic on the CPU
    # ATen sums in float with weights rounded to the input's dtype: aotc's
    # forward is bit for bit eager's (torch2_ops_test.py's EXACT).
    rn6 = seeded_randn(1700)

    def bicubic_half(h, b):
        return (F.interpolate(h, scale_factor=(1.7, 0.6), mode="bicubic", align_corners=False),
                F.interpolate(h, size=(7, 9), mode="bicubic", align_corners=True),
                F.interpolate(b, scale_factor=2, mode="bicubic", align_corners=False),
                F.interpolate(b, size=(3, 5), mode="bicubic", align_corners=True))
    add("upsample_bicubic_half", (bicubic_half, (rn6(1, 2, 4, 6).half().requires_grad_(True),
                                                 rn6(1, 2, 4, 6).bfloat16().requires_grad_(True))))
    TORCH2_ONLY.append("upsample_bicubic_half")

rn7 = seeded_randn(1800)


def masked_fill_broadcast(x, m):
    # self smaller than the mask: the result has the broadcast shape
    # (difffuzz mutation-2910119: refused as "the mask does not broadcast").
    return x.masked_fill(m, 0.25), x[0].masked_fill(m.t()[:, :1], -1.0) * 2.0
add("masked_fill_broadcast", (masked_fill_broadcast, (rn7(1, 4, rg=True), rn7(3, 4) > 0.3)))


def half_compare_scalar(b, h):
    # A bfloat16/float16 tensor against a Python scalar: eager compares with
    # the scalar rounded to the tensor's dtype (bf16(0.1) = 0.10009765625),
    # so b > 0.1 is false where b holds bf16(0.1) (difffuzz mixed-2920113:
    # emulate compared with the float nearest 0.1 and said true).
    return (b > 0.1, b >= 0.1, b == 0.1, b < 0.9, h > 0.1, h == 0.1, (b > 0.1) & (b < 0.9))
add("half_compare_scalar", (half_compare_scalar,
                            (torch.tensor([0.1, 0.10002683, 0.0999, 0.9, 0.8984375, -0.1]).bfloat16(),
                             torch.tensor([0.1, 0.10002683, 0.0999, 0.09997559]).half())))


def respell_bicubic(outdir):
    """upsample_bicubic_default as PyTorch 2.x traces it: upsample_bicubic2d.default
    (self, output_size, align_corners, scales_h, scales_w) with the output's
    size, the scale factors the .vec call was given and none where it had none."""
    path = os.path.join(outdir, "upsample_bicubic_default.json")
    doc = json.load(open(path))
    for n in doc["nodes"]:
        if n["target"] == "aten.upsample_bicubic2d.vec":
            x, _, align, scales = n["args"]
            n["target"], n["args"] = "aten.upsample_bicubic2d.default", [x, n["meta"]["shape"][2:], align] + (scales or [])
    assert sum(n["target"] == "aten.upsample_bicubic2d.default" for n in doc["nodes"]) == 3
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")

if __name__ == "__main__":
    write_fixtures(programs, HERE)
    respell_batch_norm(sys.argv[1] if len(sys.argv) > 1 else HERE)
    respell_sym(sys.argv[1] if len(sys.argv) > 1 else HERE)
    respell_core(sys.argv[1] if len(sys.argv) > 1 else HERE)
    respell_bicubic(sys.argv[1] if len(sys.argv) > 1 else HERE)
