#!/usr/bin/python3
"""The mutation-semantics conformance suite: each scenario is exported with
tools/fx_export.py and run eagerly by PyTorch for its reference (outputs,
gradients, every mutated input after forward and after backward).  Scenario
ids in the docstrings refer to the catalog in shared/docs/aot-semantics.md.

    /usr/bin/python3 testdata/conformance/gen.py [OUTDIR]
"""
import os
import sys

import torch
import torch.nn.functional as F  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
sys.path.insert(0, os.path.join(HERE, ".."))
from gen_util import seeded_randn, write_fixtures  # noqa: E402

rn = seeded_randn(0)


class Mod(torch.nn.Module):
    """A module from a forward function, with named parameters and buffers."""

    def __init__(self, fn, params=None, buffers=None):
        super().__init__()
        self.fn = fn
        for k, v in (params or {}).items():
            self.register_parameter(k, torch.nn.Parameter(v))
        for k, v in (buffers or {}).items():
            self.register_buffer(k, v)

    def forward(self, *args):
        return self.fn(self, *args)


# ---------------------------------------------------------------- custom Functions

class SaveBufMutateInBackward(torch.autograd.Function):
    """The seed example: the backward adds the incoming gradient into a buffer the forward saved."""

    @staticmethod
    def forward(ctx, x, buf):
        ctx.save_for_backward(buf)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        (buf,) = ctx.saved_tensors
        buf.add_(grad)
        return grad * 2, None


class BwMutation(torch.autograd.Function):
    """C48: the backward doubles the tensor the forward saved."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        x.mul_(2)
        return g.clone()


class FwBwSameBuffer(torch.autograd.Function):
    """C53 (#154820): the same buffer is mutated in the forward and in the backward."""

    @staticmethod
    def forward(ctx, dummy, buf):
        buf.add_(1)
        ctx.buf = buf
        return dummy.clone()

    @staticmethod
    def backward(ctx, g):
        ctx.buf.add_(1 * (g * 0 + 1))
        return g, None


class ZeroInBackward(torch.autograd.Function):
    """C49/C50: the backward zeroes its second input (a requires-grad tensor) under no_grad."""

    @staticmethod
    def forward(ctx, x, x1):
        ctx.x1 = x1
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        with torch.no_grad():
            ctx.x1.zero_()
        return grad * 2, None


class ScaleAndSave(torch.autograd.Function):
    """Two outputs, a saved intermediate that the backward mutates (functional, no epilogue)."""

    @staticmethod
    def forward(ctx, x, w):
        h = x * w
        ctx.save_for_backward(h, w)
        return h.tanh(), h * 3

    @staticmethod
    def backward(ctx, g1, g2):
        h, w = ctx.saved_tensors
        t = h.tanh()
        d = g1 * (1 - t * t) + g2 * 3
        h.mul_(0)  # mutating a saved intermediate changes nothing the caller sees
        return d * w, None


class ReadsMutatedBuffer(torch.autograd.Function):
    """The backward reads a buffer the forward mutated before the call."""

    @staticmethod
    def forward(ctx, x, buf):
        ctx.save_for_backward(buf)
        return x * buf

    @staticmethod
    def backward(ctx, g):
        (buf,) = ctx.saved_tensors
        out = g * buf
        buf.mul_(0.5)
        return out, None


# ---------------------------------------------------------------- scenarios

def scenarios():
    S = []

    def add(name, model, *args):
        S.append((name, model, args))

    # Forward-only input mutations.
    add("fw_buffer_add", Mod(lambda s, x: (s.w * x).sum() + s.buf.add_(1).sum(),
                             {"w": rn(4)}, {"buf": torch.zeros(4)}), rn(4))
    add("fw_several_inputs", lambda a, b, c: (a.mul_(2), c.mul_(2), a + b + c)[2], rn(3), rn(3, rg=True), rn(3))
    add("fw_mutated_and_returned", lambda a, b: (a.mul_(2), a, a * b)[1:], rn(2, 3), rn(2, 3, rg=True))
    add("fw_mutated_then_view_out", lambda a, w: (a.add_(1), a.view(-1), (a * w).sum())[1:], rn(2, 3), rn(2, 3, rg=True))
    add("fw_mutation_through_view", Mod(lambda s, x: (s.buf.view(-1).mul_(2), (s.buf * x).sum())[1],
                                        buffers={"buf": torch.arange(6.0).reshape(2, 3)}), rn(2, 3, rg=True))
    add("fw_mutation_through_slice", Mod(lambda s, x: (s.buf[1:3].add_(x.detach()), (s.buf * s.w).sum())[1],
                                         {"w": rn(4, 2)}, {"buf": torch.ones(4, 2)}), rn(2, 2, rg=True))
    add("fw_mutation_through_select", Mod(lambda s, x: (s.buf[1].mul_(3), (s.buf.sum(0) * x).sum())[1],
                                          buffers={"buf": torch.arange(6.0).reshape(3, 2)}), rn(2, rg=True))
    add("fw_mutation_through_transpose", Mod(lambda s, x: (s.buf.transpose(0, 1).add_(x.detach()), (s.buf.t() * x).sum())[1],
                                             buffers={"buf": torch.zeros(3, 2)}), rn(2, 3, rg=True))
    add("fw_copy_into_slice", Mod(lambda s, x: (s.buf[:, 1:].copy_(x.detach() * 2), (s.buf + x.sum()).sum())[1],
                                  buffers={"buf": torch.zeros(2, 3)}), rn(2, 2, rg=True))
    add("fw_inplace_chain_on_buffer", Mod(lambda s, x: (s.buf.mul_(0.9).add_(x.detach().mean(0), alpha=0.1), (x * s.buf).sum())[1],
                                          buffers={"buf": torch.ones(3)}), rn(4, 3, rg=True))
    # Requires-grad inputs mutated where autograd does not see it.
    add("no_grad_param_mutation", Mod(lambda s, x: (_no_grad(lambda: s.w.mul_(2)), (s.w * x).sum())[1], {"w": rn(4)}), rn(4))
    add("no_grad_mutation_through_view", Mod(lambda s, x: (_no_grad(lambda: s.w.view(-1).mul_(2)), ((s.w + x) * (s.w + x)).sum())[1],
                                             {"w": rn(2, 2)}), rn(2, 2))
    add("detach_alias_mutation", Mod(lambda s, x: (s.w.detach().mul_(2), (s.w * x).sum())[1], {"w": rn(3)}), rn(3))
    add("no_grad_and_detach_mixed", Mod(lambda s, x: (s.w.detach().mul_(2), _no_grad(lambda: s.w.add_(4)), (s.w * s.w * x).sum())[2],
                                        {"w": rn(3)}), rn(3))
    add("input_gains_grad_inplace", lambda x, y: x.add_(y), rn(3), rn(3, rg=True))
    # Metadata mutations.
    add("meta_t_", lambda a, b: (a.t_(), b.view(b.shape), a.view(a.shape), a * 2)[1:], rn(2, 3), rn(2, 2))
    add("meta_transpose_then_data", lambda a, w: (a.transpose_(1, 0), a.mul_(2), (a * w).sum())[2], rn(2, 3), rn(3, 2, rg=True))
    add("meta_unsqueeze_", lambda a, w: (a.unsqueeze_(0), (a * w).sum(1))[1], rn(3), rn(2, 3, rg=True))
    # Outputs aliasing inputs and intermediates.
    add("out_is_input", lambda x, w: (x, x * w), rn(3), rn(3, rg=True))
    add("out_views_of_param", Mod(lambda s, x: (s.w.t(), s.w[1:], s.w[0], s.w.view(-1), (s.w * x).sum()), {"w": rn(3, 2)}), rn(3, 2))
    add("out_view_of_intermediate", lambda a: (a * 3).view(-1), rn(2, 2, rg=True))
    add("out_two_views_of_intermediate", lambda a: (lambda o: (o.view(-1), o.t()))(a * 3), rn(2, 2, rg=True))
    add("inplace_on_squeezed_clone", lambda a: (lambda b: (b.add_(1), a + b)[1])(a.clone().squeeze(-1)), rn(3, 1, rg=True))
    # Custom Functions and backward mutations.
    add("bw_mutation_seed_example", Mod(lambda s, x: SaveBufMutateInBackward.apply(x, s.buf).sum(),
                                        buffers={"buf": torch.zeros(3)}), rn(3, rg=True))
    add("bw_mutation_of_rg_input", lambda a, b: (a * BwMutation.apply(b)).sum(), rn(3, rg=True), rn(3, rg=True))
    add("bw_mutation_of_plain_input", lambda a, b: (a * BwMutation.apply(b)).sum(), rn(3, rg=True), rn(3))
    add("fw_and_bw_same_buffer", Mod(lambda s, d: FwBwSameBuffer.apply(d, s.buf) * 1.0, buffers={"buf": torch.zeros(2)}),
        rn(2, rg=True))
    add("fw_one_input_bw_another", lambda x, x1, x2: (x2.mul_(5), ZeroInBackward.apply(x, x1) + x2)[1],
        rn(3, rg=True), rn(3, rg=True), rn(3))
    add("fw_mutation_then_custom_bw_mutation", Mod(lambda s, x: (s.buf.mul_(2), SaveBufMutateInBackward.apply(x, s.buf).sum())[1],
                                                   buffers={"buf": torch.ones(3)}), rn(3, rg=True))
    add("custom_two_outputs_saved_intermediate", Mod(lambda s, x: (lambda o: (o[0] * o[1]).sum())(ScaleAndSave.apply(x, s.w)),
                                                     {"w": rn(3)}), rn(2, 3, rg=True))
    add("custom_bw_reads_mutated_buffer", Mod(lambda s, x: (s.buf.add_(1), ReadsMutatedBuffer.apply(x, s.buf).sum())[1],
                                              buffers={"buf": torch.full((3,), 2.0)}), rn(3, rg=True))
    # The recompute trap: the backward needs h = buf * 2, a cheap pointwise
    # op of a buffer that the forward epilogue overwrites.
    add("recompute_trap", Mod(lambda s, x: (lambda h: ((h * x).sum(), _no_grad(lambda: s.buf.add_(10)))[0])(torch.exp(s.buf * 2)),
                              buffers={"buf": rn(3)}), rn(3, rg=True))
    # BatchNorm.
    add("batchnorm_train", torch.nn.BatchNorm1d(3), rn(4, 3, rg=True))
    add("batchnorm2d_train", torch.nn.BatchNorm2d(2), rn(2, 2, 3, 3, rg=True))
    add("batchnorm_eval", torch.nn.BatchNorm1d(3).eval(), rn(4, 3, rg=True))
    return S


def _no_grad(f):
    with torch.no_grad():
        return f()


def main():
    write_fixtures(scenarios(), HERE)


if __name__ == "__main__":
    main()
