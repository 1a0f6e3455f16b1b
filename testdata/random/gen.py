#!/usr/bin/python3
"""Programs with random ops (dropout in training), whose results cannot match
PyTorch's random stream: tests check their distribution and that every
backend draws the same numbers for a seed (Note [Random numbers]).

    /usr/bin/python3 testdata/random/gen.py [OUTDIR]
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
from fx_export import export, write_safetensors  # noqa: E402


class DropoutNet(torch.nn.Module):
    """Two dropouts (p=0.3 functional, p=0.5 module) around a scale."""

    def __init__(self):
        super().__init__()
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(torch.nn.functional.dropout(x, 0.3, training=True) * 2.0)


def noise(x):
    """rand, randn (Box-Muller), rand_like, randn_like and randperm."""
    return (torch.rand(64, 64), torch.randn(64, 64) * 2 + 1, x + torch.randn_like(x), torch.rand_like(x, dtype=torch.float64),
            torch.randperm(100))


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else HERE
    x = torch.ones(64, 64, requires_grad=True)
    export(DropoutNet().train(), (x,), os.path.join(outdir, "dropout"))
    write_safetensors(os.path.join(outdir, "dropout.inputs.safetensors"),
                      {"x": torch.ones(64, 64), "rng_seed": torch.tensor(7, dtype=torch.int64),
                       "grad_output.0": torch.ones(64, 64)})
    x = torch.zeros(64, 64)
    export(noise, (x,), os.path.join(outdir, "noise"))
    write_safetensors(os.path.join(outdir, "noise.inputs.safetensors"), {"x": x, "rng_seed": torch.tensor(11, dtype=torch.int64)})


if __name__ == "__main__":
    main()
