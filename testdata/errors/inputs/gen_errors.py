#!/usr/bin/python3
"""Exports the models of the error tests that need PyTorch: mutations a
compiler must refuse, with a clear error naming the input and the node."""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools"))
from fx_export import export  # noqa: E402


class TransposeSavedInBackward(torch.autograd.Function):
    """C51: metadata mutation of a saved input in the backward."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(b)
        return a * 2

    @staticmethod
    def backward(ctx, g):
        (b,) = ctx.saved_tensors
        b.transpose_(1, 0)
        return g * 2, None


class SetInBackward(torch.autograd.Function):
    """Storage swap (set_) of a saved input in the backward."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.b = b
        return a * 2

    @staticmethod
    def backward(ctx, g):
        ctx.b.set_(torch.zeros(2, 2))
        return g * 2, None


class MutateSavedOutput(torch.autograd.Function):
    """C55 (#172956): the backward mutates a tensor the forward also returns."""

    @staticmethod
    def forward(ctx, x, offsets):
        ctx.save_for_backward(offsets)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        (offsets,) = ctx.saved_tensors
        offsets.add_(g)
        return g * 2, None


def c55(x):
    offsets = x.clone()
    out = MutateSavedOutput.apply(x, offsets)
    return out.clone(), offsets


def bicubic_aa():
    """Issue 48: antialiased bicubic downsampling (_upsample_bicubic2d_aa), refused by name."""
    export(lambda x: torch.nn.functional.interpolate(x, scale_factor=0.5, mode="bicubic", antialias=True),
           (torch.randn(1, 1, 4, 4, requires_grad=True),), os.path.join(HERE, "bicubic_aa"))


def main():
    a = torch.randn(2, 2, requires_grad=True)
    export(lambda a, b: TransposeSavedInBackward.apply(a, b).sum(), (a, torch.randn(2, 2)),
           os.path.join(HERE, "bw_metadata_mutation"))
    export(lambda a, b: SetInBackward.apply(a, b).sum(), (a, torch.randn(2, 2)), os.path.join(HERE, "bw_set_"))
    export(c55, (torch.randn(3, requires_grad=True),), os.path.join(HERE, "bw_mutates_output"))
    base = torch.randn(4)
    x, y = base[:2], base[:2]
    export(lambda x, y: (x.add_(1), x + y)[1], (x, y), os.path.join(HERE, "shared_storage_mutated"))
    export(lambda x, y: x * y, (x, y), os.path.join(HERE, "shared_storage_read_only"))
    bicubic_aa()


if __name__ == "__main__":
    main()
