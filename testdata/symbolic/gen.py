#!/usr/bin/python3
"""Writes the dynamic-dim fixtures of testdata/symbolic (format version 3,
Note [Dynamic export]) with tools/fx_export.py:

    /usr/bin/python3 testdata/symbolic/gen.py

mlp_dynamic: a batch-dynamic MLP whose forward reshapes with x.size(0) and
splits the batch in two (a guard); attention_dynamic: causal attention over
a fixed mask buffer with batch and seq dynamic (batch*seq and seq*seq
sizes); batchnorm_dynamic: train-mode BatchNorm, whose unbiased running
variance multiplies by n / (n - 1), a float computed from the batch;
function_dynamic: a custom autograd.Function over a batch-sized tensor (its
traced forward and backward regions are symbolic too)."""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
from fx_export import export  # noqa: E402


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        b = x.size(0)
        y = torch.relu(self.fc(x.reshape(b * 2, 8)))
        pairs = y.reshape(-1, 2, 2, 4)  # needs an even batch
        return pairs.sum(1).mean()


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)
        self.register_buffer("mask", torch.tril(torch.ones(16, 16)).bool())

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.qkv(x).split(8, dim=2)
        att = ((q @ k.transpose(-2, -1)) / 8 ** 0.5).masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1)
        return att @ v


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def squared(x):
    return Square.apply(x.reshape(-1)).sum()


def main():
    torch.manual_seed(0)
    export(Mlp(), (torch.randn(4, 2, 8),), os.path.join(HERE, "mlp_dynamic"), dynamic={"x": {0: "batch"}},
           ranges={"batch": (2, 1024)})
    export(Attention(), (torch.randn(2, 3, 8),), os.path.join(HERE, "attention_dynamic"),
           dynamic={"x": {0: "batch", 1: "seq"}}, ranges={"seq": (1, 16)})
    export(torch.nn.BatchNorm1d(4).train(), (torch.randn(3, 4),), os.path.join(HERE, "batchnorm_dynamic"),
           dynamic={"input": {0: "batch"}})
    export(squared, (torch.randn(4, 3, requires_grad=True),), os.path.join(HERE, "function_dynamic"), dynamic={"x": {0: "batch"}})


if __name__ == "__main__":
    main()
