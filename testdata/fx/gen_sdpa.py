#!/usr/bin/python3
"""sdpa_causal: a hand-written FX graph calling aten.scaled_dot_product_attention
(which PyTorch 2.x's nn.MultiheadAttention records and 1.13 cannot export),
with references from the math form in PyTorch 1.13 eager."""
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from gen_util import write_safetensors  # noqa: E402


def main():
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 2, 5, 4, generator=g, dtype=torch.float32) for _ in range(3))
    meta = lambda t: {"dtype": "float32", "shape": list(t.shape), "stride": list(t.stride())}  # noqa: E731
    doc = {"format": "aotc.fx_graph", "version": 1, "name": "sdpa_causal", "weights": "sdpa_causal.safetensors",
           "inputs": [dict(name=n, role="user_input", requires_grad=True, **meta(t)) for n, t in zip("qkv", (q, k, v))],
           "nodes": [{"name": "sdpa", "target": "aten.scaled_dot_product_attention.default",
                      "args": [{"node": "q"}, {"node": "k"}, {"node": "v"}], "kwargs": {"is_causal": True}}],
           "outputs": [{"node": "sdpa"}]}
    with open(os.path.join(HERE, "sdpa_causal.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    write_safetensors(os.path.join(HERE, "sdpa_causal.safetensors"), {})
    qq, kk, vv = (t.clone().requires_grad_(True) for t in (q, k, v))
    s = qq @ kk.transpose(-2, -1) / math.sqrt(4)
    s = s.masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf"))
    out = torch.softmax(s, -1) @ vv
    go = torch.randn(out.shape, generator=g)
    out.backward(go)
    write_safetensors(os.path.join(HERE, "sdpa_causal.inputs.safetensors"), {"q": q, "k": k, "v": v, "grad_output.0": go})
    write_safetensors(os.path.join(HERE, "sdpa_causal.expected.safetensors"),
                      {"output.0": out.detach(), "grad.q": qq.grad, "grad.k": kk.grad, "grad.v": vv.grad})


if __name__ == "__main__":
    main()
