#!/usr/bin/python3
"""Writes inputs/located_unsupported.{json,safetensors}: a real export whose
unsupported ops sit in submodules, so that compile errors must name the
user's source line and module path (checked by located_unsupported.test).

    /usr/bin/python3 testdata/errors/gen_located.py
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
from fx_export import export  # noqa: E402


class Attn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        x = torch.i0(self.proj(x))
        return torch.special.i1(x)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([torch.nn.Linear(4, 4), Attn()])

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return torch.i0(x).sum()


if __name__ == "__main__":
    torch.manual_seed(0)
    export(Net(), (torch.randn(2, 4),), os.path.join(HERE, "inputs", "located_unsupported"))
