#!/usr/bin/python3
"""Writes weights.safetensors for the error tests: one tensor `w` (f32[2,3])."""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools"))
from fx_export import write_safetensors  # noqa: E402

write_safetensors(os.path.join(HERE, "weights.safetensors"), {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3)})
