#!/usr/bin/python3
"""Regenerates the FX fixtures in this folder with tools/fx_export.py and
PyTorch eager.  For each program P it writes:

  P.json, P.safetensors       the exported graph and its weights (before export)
  P.inputs.safetensors        user inputs, and grad_output.<i> for every output
                              that requires grad
  P.expected.safetensors      eager results, named as `aotc run` names them:
                              output.<i>, grad.<input>, after_forward.<input>,
                              after_backward.<input>

Run with Debian's PyTorch:  /usr/bin/python3 testdata/fx/gen_fixtures.py [DIR]
"""

import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
sys.path.insert(0, os.path.join(HERE, ".."))
from gen_util import write_fixtures  # noqa: E402


class MLP(torch.nn.Module):
    """Two linear layers, tanh and relu, scalar squared-error loss."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x, target):
        h = torch.relu(self.fc1(x))
        y = torch.tanh(self.fc2(h))
        d = y - target
        return (d * d).mean()


class BufferMutation(torch.nn.Module):
    """Running statistics updated in forward, as BatchNorm does."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(6, 3)
        self.register_buffer("running", torch.linspace(-1.0, 1.0, 3))
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        y = torch.sigmoid(self.lin(x))
        self.running.mul_(0.9).add_(y.detach().mean(0), alpha=0.1)
        self.count.add_(1)
        return (y * self.running).sum()


class InplaceChain(torch.nn.Module):
    """In-place ops on intermediates; one intermediate is also returned."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.linspace(0.5, 1.5, 5))

    def forward(self, x):
        y = x * self.w
        y.add_(1.0)
        y.mul_(self.w)
        z = torch.exp(y / 10.0) * x
        z.mul_(2.0)
        return z.sum(dim=1), y


class ViewMutation(torch.nn.Module):
    """A buffer mutated through views (view and t) of itself, then read."""

    def __init__(self):
        super().__init__()
        self.register_buffer("state", torch.arange(6, dtype=torch.float32).reshape(2, 3) / 10.0)

    def forward(self, x):
        self.state.view(6).mul_(2.0)
        self.state.t().add_(x.t().detach())
        return (self.state * x).sum()


class OutputView(torch.nn.Module):
    """Outputs that are views of inputs: t() of a parameter, view of a user input."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.linspace(-1.0, 1.0, 12).reshape(3, 4))

    def forward(self, x):
        return self.w.t(), torch.mm(x, self.w).sum(), x.view(-1)


def matmul_chain(a, b, c):
    """mm chains with transposes, tanh and sigmoid between them."""
    h = torch.tanh(torch.mm(a, b))
    h = torch.mm(h, c.t())
    return torch.sigmoid(torch.mm(h.t(), a)).sum(dim=0)


def restride(x):
    """as_strided_ that only restrides size-1 dims, as ConvNeXt's reductions do."""
    y = (x * 2).mean((-1, -2), keepdim=True)
    c = y.shape[1]
    y.as_strided_(y.shape, (c, 1, c, c))
    return y.permute(0, 2, 3, 1) * 3


class Decompositions(torch.nn.Module):
    """Front-end decompositions against eager: norms, losses, activations."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(7, 6)
        self.gn = torch.nn.GroupNorm(2, 6)
        self.ln = torch.nn.LayerNorm(6)

    def forward(self, idx, x, target):
        e = self.emb(idx)                                   # [4, 6]
        h = self.ln(e + x)
        g = self.gn(h.view(2, 6, 2).contiguous()).view(4, 6)
        a = torch.nn.functional.leaky_relu(g, 0.2) + torch.nn.functional.hardswish(h) + torch.nn.functional.silu(h)
        a = a + torch.clamp(h, -0.5, 0.7) + torch.nn.functional.gelu(h, approximate="tanh") + torch.nn.functional.gelu(h)
        a = a + torch.nn.functional.hardsigmoid(h) + torch.where(h > 0, h, 0.1) + h.abs().sqrt() + torch.sin(h) * torch.cos(h)
        a = a + (h * h + 1).pow(1.5)
        v = a.var(dim=1, keepdim=True) + a.std(dim=0).sum() + torch.logsumexp(a, dim=1, keepdim=True)
        logp = torch.log_softmax(a, dim=1)
        loss = torch.nn.functional.nll_loss(logp, target) + torch.nn.functional.mse_loss(a, x)
        return loss + v.mean() + a.amax(dim=1).mean() - a.amin(dim=0).sum() * 0.1, a.argmax(dim=1)


def shape_ops(x, y, idx):
    """cat/stack/split/chunk/narrow/pad/permute/gather/scatter_add/index_select, and pooling."""
    z = torch.cat([x, y], dim=1)                            # [2, 5, 4]
    s = torch.stack([x[:, 0], y[:, 1]], dim=0)              # [2, 2, 4]
    a, b = torch.split(z, [2, 3], dim=1)
    c1, c2 = torch.chunk(z.permute(0, 2, 1), 2, dim=1)      # [2, 2, 5] each
    p = torch.nn.functional.pad(a, (1, 2, 0, 1), value=0.5)
    g = torch.gather(z, 2, idx)                             # idx [2, 5, 2]
    sa = torch.zeros(2, 5, 4).scatter_add(2, idx, g)
    sel = torch.index_select(b, 2, torch.tensor([3, 0, 3]))
    img = z.reshape(2, 1, 5, 4)
    pools = torch.nn.functional.avg_pool2d(img, 3, 2, 1, count_include_pad=False).sum() + \
        torch.nn.functional.max_pool2d(img, 2, 1, ceil_mode=True).sum() + \
        torch.nn.functional.adaptive_avg_pool2d(img, (3, 3)).sum()
    return (p.sum() + s.sum() * 2 + c1.sum() - c2.mean() + g.sum() + sa.pow(2).sum() + sel.sum() + pools
            + z.narrow(2, 1, 2).sum())


class RowFusion(torch.nn.Module):
    """Reductions fused with the pointwise work around them (Note [Row groups]):
    layer norm whose output is also returned, softmax over a middle dim, a
    keepdim=False mean broadcast back, log_softmax, amax, batch norm in
    training (statistics over dims 0, 2, 3), and a split whose backward is
    slice_scatter (Note [Scatter expressions])."""

    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(8)
        self.bn = torch.nn.BatchNorm2d(3)
        self.lin = torch.nn.Linear(8, 24)

    def forward(self, x, img):
        h = self.ln(x)                                      # [4, 8]
        q, k, v = self.lin(h).split(8, dim=1)
        att = torch.softmax(q.unsqueeze(2) * k.unsqueeze(1), dim=1)   # [4, 8, 8]
        y = (att * v.unsqueeze(1)).sum(2)                   # [4, 8]
        z = y - y.mean(1).unsqueeze(1)
        lp = torch.log_softmax(z, dim=1)
        b = self.bn(img)                                    # [2, 3, 4, 4]
        return lp.sum() + (b * b).mean() + z.amax(1).sum(), h


class RowFusionWide(torch.nn.Module):
    """Rows of 320 elements: row groups with one block per row and a
    shared-memory tree (layer norm, then log_softmax)."""

    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(320)

    def forward(self, x):
        return torch.log_softmax(self.ln(x) * 2.0, dim=1)


class LargeReductions(torch.nn.Module):
    """Reductions large enough to be scheduled for the machine (Note
    [Reduction schedules]): a Linear layer's bias gradient over 1024 rows
    and an amax over them (column reductions, split), whole-tensor sums
    (one output, split), and batch-norm statistics of 16 channels over
    8 x 48 x 48 (the row group is not formed; split rows)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(256, 256)
        self.bn = torch.nn.BatchNorm2d(16)

    def forward(self, x, img):
        y = self.lin(x)                                     # [1024, 256]
        b = self.bn(img)                                    # [8, 16, 48, 48]
        return (y * y).mean() + (b * b).mean() + y.amax(0).sum() + img.sum() * 1e-3


class EncoderLayer(torch.nn.Module):
    """A TransformerEncoderLayer as scripts/bench_gpu.py's transformer has
    them (batch first, no dropout), small: the GEMMs that write into the
    copies made of their products, forward and backward (Note [GEMM into its
    copy]), the attention's 1/sqrt(d) as a backward GEMM's alpha (Note [GEMM
    scale]) and the feed-forward relu as linear1's epilogue (Note [GEMM relu
    epilogue])."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


def gemm_copies(a, b):
    """Contiguous copies of views of GEMM products (Note [GEMM into its
    copy]): one whose rows end up unit-stride (cuBLAS writes C column-major),
    one of a product scaled by a power of two (Note [GEMM scale]), and a
    transposed mm."""
    y = torch.bmm(a, b).transpose(1, 2).transpose(0, 1).contiguous()
    z = (torch.bmm(a, b) * 0.25).transpose(0, 1).contiguous()
    w = torch.mm(a[1], b[1]).t().contiguous()
    return y, z, w


def programs():
    g = torch.Generator().manual_seed(0)

    def rn(*s, rg=False):
        return torch.randn(*s, generator=g).requires_grad_(rg)

    torch.manual_seed(0)
    yield "mlp", MLP(), (rn(4, 8), rn(4, 4))
    torch.manual_seed(1)
    yield "buffer_mutation", BufferMutation(), (rn(5, 6),)
    yield "inplace_chain", InplaceChain(), (rn(3, 5, rg=True),)
    yield "view_mutation", ViewMutation(), (rn(2, 3, rg=True),)
    yield "output_view", OutputView(), (rn(2, 3),)
    yield "matmul_chain", matmul_chain, (rn(4, 3, rg=True), rn(3, 5, rg=True), rn(6, 5, rg=True))
    yield "restride", restride, (rn(2, 4, 3, 3, rg=True),)
    torch.manual_seed(2)
    yield "decompositions", Decompositions(), (torch.tensor([1, 3, 0, 6]), rn(4, 6, rg=True), torch.tensor([0, 5, 2, 1]))
    yield "shape_ops", shape_ops, (rn(2, 2, 4, rg=True), rn(2, 3, 4, rg=True),
                                   torch.tensor([[[0, 3], [1, 1], [2, 0], [3, 3], [1, 2]]] * 2))
    torch.manual_seed(3)
    yield "row_fusion", RowFusion(), (rn(4, 8, rg=True), rn(2, 3, 4, 4, rg=True))
    yield "row_fusion_wide", RowFusionWide(), (rn(3, 320, rg=True),)
    torch.manual_seed(4)
    g4 = torch.Generator().manual_seed(4)
    yield "large_reductions", LargeReductions(), (torch.randn(1024, 256, generator=g4), torch.randn(8, 16, 48, 48, generator=g4))
    torch.manual_seed(5)
    g5 = torch.Generator().manual_seed(5)
    yield "encoder_layer", EncoderLayer(), (torch.randn(3, 6, 16, generator=g5).requires_grad_(True),)
    yield "gemm_copies", gemm_copies, (torch.randn(4, 3, 6, generator=g5).requires_grad_(True),
                                       torch.randn(4, 6, 5, generator=g5).requires_grad_(True))


def main():
    write_fixtures(programs(), HERE)


if __name__ == "__main__":
    main()
