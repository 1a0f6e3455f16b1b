#!/usr/bin/python3
"""f64_conditioning.py MODEL [--side N] [--batch B]: how far eager float64 moves from itself.

When aotc's float64 results differ from eager float64 by more than a few ulps, the
difference is either somebody's rounding (a float32 constant, a formula) or the
problem's conditioning: reductions summed in another order (train-mode BatchNorm
over a few elements amplifies 1e-16 reorderings). This runs a torchvision model's
training step in eager float64 twice, the second time with the batch reversed (the
same mathematics, other summation orders), and prints the largest relative change
of the output and of any parameter gradient. A change of the size of aotc's
difference says the difference is conditioning, nobody's constant.
(Issue 36: inception_v3 at side 80, batch 2 moves by 1.6e-8 on PyTorch 1.13 — the
size of aotc's 2–4e-8 — so its difference is conditioning.)
"""
import argparse
import copy

import torch
import torchvision


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--side", type=int, default=80)
    ap.add_argument("--batch", type=int, default=2)
    a = ap.parse_args()
    torch.manual_seed(0)
    kw = {"aux_logits": False, "init_weights": True} if a.model in ("inception_v3", "googlenet") else {}
    m = getattr(torchvision.models, a.model)(weights=None, **kw).double().train()
    for mod in m.modules():  # dropout off: the two runs must be the same mathematics
        if isinstance(mod, torch.nn.Dropout):
            mod.p = 0.0
    x = torch.randn(a.batch, 3, a.side, a.side, dtype=torch.float64)

    def step(inp, flip):
        mm = copy.deepcopy(m)
        out = mm(inp.flip(0) if flip else inp)
        g = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
        out.backward(g.flip(0) if flip else g)
        return (out.flip(0) if flip else out).detach(), {n: p.grad for n, p in mm.named_parameters()}

    o1, g1 = step(x, False)
    o2, g2 = step(x, True)

    def rel(p, q):
        return float((p - q).abs().max() / q.abs().max().clamp_min(1e-300))
    worst = max((rel(g2[n], g1[n]), n) for n in g1)
    print(f"{a.model} (torch {torch.__version__}, side {a.side}, batch {a.batch}): eager float64 against itself with the "
          f"batch reversed: output {rel(o2, o1):.2e}, worst gradient {worst[0]:.2e} ({worst[1]})")


if __name__ == "__main__":
    main()
