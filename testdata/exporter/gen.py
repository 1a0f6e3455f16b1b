#!/usr/bin/python3
"""Programs as PyTorch users write them, for the exporter (issue 10): each is
exported with tools/fx_export.py and run eagerly by PyTorch for its reference
(testdata/gen_util.py: outputs, gradients, every mutated input after forward
and after backward).  e2e_test compiles every one under both partitioners
and runs it on the reference and emulate backends.

  * mut_*: in-place ops on user inputs that require grad (traced, as
    AOTAutograd receives them, as non-leaf tensors): directly, through view
    chains, metadata mutations, mutated and returned, mutated in the forward
    and again in a custom Function's backward, views of one another;
  * state_*: parameters and buffers reached other than by one attribute path
    (tied, shared submodules, self.parameters(), lists, closures);
  * args_*: non-tensor and nested arguments, nested outputs.

    /usr/bin/python3 testdata/exporter/gen.py [OUTDIR]
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from gen_util import seeded_randn, write_fixtures  # noqa: E402

rn = seeded_randn(100)


class SaveAndDoubleInBackward(torch.autograd.Function):
    """Saves its input; the backward doubles the saved tensor in place."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        x.mul_(2)
        return g * 3


# ---------------------------------------------------------------- item 1

def mut_mul_(x, w):
    x.mul_(2)
    return (x * w).sum()


def mut_select_add_(x):
    x[0].add_(1)
    return x * x


def mut_view_slice_zero_(x, w):
    x.view(-1)[:3].zero_()
    return (x * w).sum()


def mut_transpose_chain(x):
    x.transpose(0, 1)[1].mul_(3)
    return x.sin()


def mut_permute_chain(x):
    x.permute(2, 0, 1)[1, :, 1:].mul_(-2)
    return x.cos()


def mut_t_unsqueeze_chain(x):
    x.t().unsqueeze(0)[0, 1:].add_(5)
    return x.exp().sum(0)


def mut_as_strided_view(x):
    x.as_strided(x.shape, x.stride()).mul_(0.5)
    return x * x


def mut_meta_t_(x, w):
    x.t_()
    return x * w


def mut_meta_transpose_then_data(x):
    x.transpose_(0, 1)
    x.mul_(2)
    return x.sum(0)


def mut_meta_unsqueeze_(x, w):
    x.unsqueeze_(0)
    return (x * w).sum(1)


def mut_meta_squeeze_(x):
    x.squeeze_(1)
    return x.tanh()


def mut_and_returned(x, y):
    x.add_(y)
    return x, x * y


def mut_returned_as_view(x):
    x.mul_(2)
    return x.view(-1), x.sum()


def mut_fw_then_custom_bw(x, w):
    x.add_(1)
    return (SaveAndDoubleInBackward.apply(x) * w).sum()


def mut_views_of_one_another(x, w):
    a = x[0]
    b = x.view(-1)[1:4]
    a.mul_(2)
    b.add_(1)
    return (x * w).sum()


def mut_under_no_grad(x, w):
    with torch.no_grad():
        x.mul_(2)
    return (x * w).sum()


def mut_copy_from_rg(x, y):
    x.copy_(y * 2)
    return (x * x).sum()


def mut_two_inputs(x, y):
    y.sub_(1)
    x.mul_(y)
    return x + y


class MutInModule(torch.nn.Module):
    """A module adds its bias into a requires-grad user input."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.b = torch.nn.Parameter(rn(3))

    def forward(self, x):
        x.add_(self.b)
        return self.lin(x).relu()


# ---------------------------------------------------------------- item 2

class TiedLM(torch.nn.Module):
    """nanoGPT's weight tying: the head's weight is the embedding's."""

    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(11, 6)
        self.ln = torch.nn.LayerNorm(6)
        self.lm_head = torch.nn.Linear(6, 11, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets):
        logits = self.lm_head(self.ln(self.wte(idx)))
        return F.cross_entropy(logits.view(-1, 11), targets.view(-1))


class TiedLinear(torch.nn.Module):
    """b.weight = a.weight."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 4)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(self.a(x).tanh())


class L2Penalty(torch.nn.Module):
    """An L2 penalty summed over self.parameters() inside forward."""

    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(3, 4)
        self.l2 = torch.nn.Linear(4, 1)

    def forward(self, x):
        loss = self.l2(self.l1(x).relu()).pow(2).mean()
        return loss + 0.01 * sum((p * p).sum() for p in self.parameters())


class SharedSubmodule(torch.nn.Module):
    """One Linear used by two submodule paths (encoder and decoder)."""

    def __init__(self):
        super().__init__()
        shared = torch.nn.Linear(3, 3)
        self.enc = torch.nn.Sequential(shared, torch.nn.Tanh())
        self.dec = torch.nn.Sequential(torch.nn.Sigmoid(), shared)

    def forward(self, x):
        return self.dec(self.enc(x))


class SharedBuffer(torch.nn.Module):
    """One buffer registered in two submodules; one mutates it, the other reads it."""

    class Counter(torch.nn.Module):
        def forward(self, x):
            self.count.add_(1)
            return x * self.scale

    class Reader(torch.nn.Module):
        def forward(self, x):
            return x + self.count

    def __init__(self):
        super().__init__()
        count = torch.zeros(3)
        self.counter = self.Counter()
        self.reader = self.Reader()
        self.counter.register_buffer("count", count)
        self.reader.register_buffer("count", count)
        self.counter.scale = torch.nn.Parameter(rn(3))

    def forward(self, x):
        return self.reader(self.counter(x)).sum()


class ParamsInList(torch.nn.Module):
    """Parameters reached through a plain Python list attribute, and
    named_parameters()/buffers()/state_dict() iterated inside forward."""

    def __init__(self):
        super().__init__()
        self.w1 = torch.nn.Parameter(rn(3))
        self.w2 = torch.nn.Parameter(rn(3))
        self.register_buffer("shift", rn(3))
        self.ws = [self.w1, self.w2]

    def forward(self, x):
        y = x
        for w in self.ws:
            y = y * w
        norms = sum((p * p).sum().sqrt() for _, p in self.named_parameters())
        shift = sum(b for b in self.buffers()) + self.state_dict()["shift"]
        return (y + shift).sum() + norms


def closure_program():
    """Parameters captured by a closure, not reached through the module."""
    w = torch.nn.Parameter(rn(2, 3))
    b = torch.nn.Parameter(rn(3))

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_parameter("w", w)
            self.register_parameter("b", b)
            self.f = lambda x: (x @ w + b).relu()

        def forward(self, x):
            return self.f(x).sum()
    return M()


# ---------------------------------------------------------------- item 3

def args_scalars(x, k, s, flag, nothing, mode, dt):
    y = x * s + k
    if flag and nothing is None:
        y = y.relu()
    if mode == "sum":
        return y.sum().to(dt)
    return y.mean()


def args_dict_in(batch):
    return (batch["x"] * batch["w"]).sum(1) + batch["b"]


def args_nested_out(x, w):
    h = x @ w
    return {"logits": h, "aux": (h.relu().sum(), (h.tanh(), None))}


def args_list_in_tuple_out(xs, ws):
    return tuple(a * b for a, b in zip(xs, ws)), xs[0] + ws[1]


def args_named_tangent(tangent_0, tangent_1):
    """User inputs named like the backward's tangents (issue 13: `aotc run` died with map::at)."""
    return tangent_0 * tangent_1.sin(), (tangent_1.exp() * tangent_0).sum()


class BufferAndBroadcastGrad(torch.nn.Module):
    """Issue 36's regression: a buffer mutated in place beside (w @ x).sum() with x requiring grad; the
    expanded gradient of the sum feeds both GEMMs of the backward, and the code generator wrote its dense
    copy twice under one name ('sum_3.dense' is declared twice)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.ones(4, 4))
        self.w = torch.nn.Parameter(rn(4, 2))

    def forward(self, x):
        self.buf.add_(1)
        return (self.w @ x).sum() + self.buf.sum()


def programs():
    return [
        ("mut_mul_", mut_mul_, (rn(2, 3, rg=True), rn(2, 3, rg=True))),
        ("mut_select_add_", mut_select_add_, (rn(3, 2, rg=True),)),
        ("mut_view_slice_zero_", mut_view_slice_zero_, (rn(2, 3, rg=True), rn(2, 3))),
        ("mut_transpose_chain", mut_transpose_chain, (rn(3, 2, rg=True),)),
        ("mut_t_unsqueeze_chain", mut_t_unsqueeze_chain, (rn(3, 2, rg=True),)),
        ("mut_as_strided_view", mut_as_strided_view, (rn(2, 2, rg=True),)),
        ("mut_meta_t_", mut_meta_t_, (rn(2, 3, rg=True), rn(3, 2, rg=True))),
        ("mut_meta_transpose_then_data", mut_meta_transpose_then_data, (rn(2, 3, rg=True),)),
        ("mut_meta_unsqueeze_", mut_meta_unsqueeze_, (rn(3, rg=True), rn(2, 3, rg=True))),
        ("mut_meta_squeeze_", mut_meta_squeeze_, (rn(3, 1, rg=True),)),
        ("mut_and_returned", mut_and_returned, (rn(2, 2, rg=True), rn(2, 2, rg=True))),
        ("mut_returned_as_view", mut_returned_as_view, (rn(2, 3, rg=True),)),
        ("mut_fw_then_custom_bw", mut_fw_then_custom_bw, (rn(3, rg=True), rn(3, rg=True))),
        ("mut_views_of_one_another", mut_views_of_one_another, (rn(2, 3, rg=True), rn(2, 3))),
        ("mut_under_no_grad", mut_under_no_grad, (rn(3, rg=True), rn(3, rg=True))),
        ("mut_copy_from_rg", mut_copy_from_rg, (rn(3, rg=True), rn(3, rg=True))),
        ("mut_two_inputs", mut_two_inputs, (rn(3, rg=True), rn(3, rg=True))),
        ("mut_in_module", MutInModule(), (rn(2, 3, rg=True),)),
        ("state_tied_lm", TiedLM(), (torch.tensor([[1, 4, 9], [2, 2, 10]]), torch.tensor([[4, 9, 0], [2, 10, 3]]))),
        ("state_tied_linear", TiedLinear(), (rn(2, 4),)),
        ("state_l2_penalty", L2Penalty(), (rn(5, 3),)),
        ("state_shared_submodule", SharedSubmodule(), (rn(2, 3, rg=True),)),
        ("state_shared_buffer", SharedBuffer(), (rn(3),)),
        ("state_params_in_list", ParamsInList(), (rn(3),)),
        ("state_closure", closure_program(), (rn(4, 2),), {"copy_model": False}),
        ("args_scalars", args_scalars, (rn(2, 3, rg=True), 3, 0.5, True, None, "sum", torch.float64)),
        ("args_dict_in", args_dict_in, ({"x": rn(2, 3, rg=True), "w": rn(3, rg=True), "b": rn(2)},)),
        ("args_nested_out", args_nested_out, (rn(2, 3, rg=True), rn(3, 4, rg=True))),
        ("args_list_in_tuple_out", args_list_in_tuple_out, ([rn(2, rg=True), rn(2)], (rn(2, rg=True), rn(2, rg=True)))),
        ("mut_permute_chain", mut_permute_chain, (rn(2, 3, 4, rg=True),)),
        ("args_named_tangent", args_named_tangent, (rn(2, 3, rg=True), rn(2, 3, rg=True))),
        ("mut_buffer_broadcast_grad", BufferAndBroadcastGrad(), (rn(2, 4, rg=True),)),
        ("mut_custom_bw_returned", mut_custom_bw_returned, (rn(2, 3, rg=True), rn(2, 3, rg=True))),
        ("mut_meta_then_custom_bw", mut_meta_then_custom_bw, (rn(2, 3, rg=True),)),
        ("state_unused_batch_norm", UnusedBatchNorm(), (rn(4, 3, rg=True),)),
        ("mut_view_no_grad_then_used", mut_view_no_grad_then_used, (rn(3, 2, rg=True), rn(2, rg=True))),
        ("mut_meta_then_no_grad", mut_meta_then_no_grad, (rn(3, 2, rg=True),)),
    ]


def main():
    torch.manual_seed(0)  # the modules' own initialization: regenerated fixtures are the same bytes
    write_fixtures(programs(), HERE)


# ---------------------------------------------------------------- issue 48 (differential fuzzer findings)

def mut_custom_bw_returned(x, w):
    """A custom backward mutates an input the forward returns as it is
    (issue 48's fuzzer: the default partitioner crashed)."""
    return SaveAndDoubleInBackward.apply(x) * w, x


def mut_meta_then_custom_bw(x):
    """A metadata mutation, then a custom backward mutating the same input
    (issue 48's fuzzer: refused by the verifier after functionalize-joint)."""
    x.transpose_(0, 1)
    return SaveAndDoubleInBackward.apply(x).sin()


def mut_view_no_grad_then_used(x, w):
    """A view mutated under no_grad, then used: autograd sees the view as it
    was (issue 48's fuzzer: the gradient went through the mutation)."""
    v = x[0]
    with torch.no_grad():
        v.mul_(2.0)
    return v * w


def mut_meta_then_no_grad(x):
    """x.t_(), then a no_grad mutation, then x returned (issue 48's fuzzer,
    mutation-7: the gradient had the wrong sign)."""
    x.t_()
    with torch.no_grad():
        x.mul_(-1.0)
    return x


class UnusedBatchNorm(torch.nn.Module):
    """A training batch norm whose result nothing reads still updates its
    running statistics (issue 48's fuzzer: the exporter pruned the node)."""

    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(3)

    def forward(self, x):
        self.bn(x)
        return x.tanh()


if __name__ == "__main__":
    main()
