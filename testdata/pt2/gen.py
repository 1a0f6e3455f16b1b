"""Writes the .pt2 fixtures of testdata/cli/pt2.test (issue 46): small programs
saved by torch.export.save, their inputs and eager's results, and bad
archives made from a good one.  Run under the pinned PyTorch 2.x
(scripts/setup-venv.sh) from this folder:

    ~/.cache/aotc/venv-torch2/bin/python gen.py

  mlp.pt2           training IR: linear, relu (inference: output.0)
  conv_bn_core.pt2  Core ATen (run_decompositions) of conv + BatchNorm in
                    train(): the running statistics are buffer_mutation outputs
  composites.pt2    training IR: every composite op the FX tables take for
                    torch.export (src/frontend/fx/composites.cpp), with a
                    BatchNorm in train() whose statistics update in place
  einsum.pt2        training IR: aten.einsum.default in several equations
  losses.pt2        training IR: pad (constant, reflect), cross_entropy_loss and a
                    no_grad block (wrap_with_set_grad_enabled, inlined)
  bicubic.pt2       training IR: upsample_bicubic2d.vec (align_corners both
                    ways, a non-integer scale factor, down again; issue 48)
  scalar_first_core.pt2  Core ATen: sub.Tensor with a Python number first
                    (what rsub and torch.sub(number, t) become), float and
                    int64 tensors, with alpha
  zoo_ops.pt2       training IR: the targets the zoo over torch.export found
                    missing (scripts/zoo_check.py --door pt2): instance_norm
                    (affine and not), broadcast_tensors (smooth L1 and
                    Huber losses on broadcast operands), conv_transpose1d/2d/3d,
                    max_pool1d, max_pool3d, expand_as, swapaxes, kl_div (both
                    target forms), tensor_split, and a tied weight
                    (two parameter names over one stored tensor, Note [pt2
                    tied weights])
  mlp_dynamic.pt2   the MLP with a dynamic batch in [1, 64] (exported at 3,
                    its inputs and results at 5)
  two_models.pt2    two programs in one archive (--model)
  autocast_cuda.pt2  training IR with a torch.autocast("cuda", bfloat16)
                    block holding a disabled one, as a CUDA machine's export
                    writes it (enabled, PyTorch's CUDA autocast dtypes in
                    tensor_values; pt2.test checks the autocast pass gives
                    them): the program exported under FakeTensorMode with fake
                    CUDA tensors, put into this machine's archive of the
                    same module (`gen.py --hops` writes only these four)
  bad_autocast_cpu.pt2  a torch.autocast("cpu") block (refused)
  cond.pt2          a torch.cond with a data-dependent predicate and two
                    outputs; cond_true/cond_false inputs and eager's results
  bad_*.pt2         one defect each (pt2.test names them; bad_unsupported.pt2
                    has two targets aotc does not convert)
"""
import copy
import io
import json
import os
import sys
import zipfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export.pt2_archive._package import package_pt2

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
from fx_export import write_safetensors  # noqa: E402


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(4, 6), nn.Linear(6, 3)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


class ConvBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c, self.bn = nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3)

    def forward(self, x):
        return torch.relu(self.bn(self.c(x))).mean((2, 3))


class Composites(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2, self.c3 = nn.Conv1d(2, 2, 3, padding=1), nn.Conv2d(2, 4, 3, padding=1), nn.Conv3d(1, 1, 1)
        self.bn, self.ln, self.gn = nn.BatchNorm2d(4), nn.LayerNorm(4), nn.GroupNorm(2, 4)
        self.fc = nn.Linear(4, 4)

    def forward(self, x, s):
        y = self.gn(self.bn(self.c2(x)))                        # conv2d, batch_norm (train), group_norm
        y = F.max_pool2d(y, 2)                                   # max_pool2d
        y = F.dropout(y.flatten(2).transpose(1, 2).contiguous(), 0.0, True)  # flatten, contiguous, dropout
        y = self.ln(self.fc(y))                                  # linear, layer_norm
        a, b = y.chunk(2, dim=-1)                                # chunk
        z = torch.matmul(a, b.transpose(1, 2)).softmax(-1)       # matmul, softmax.int
        z = z + F.log_softmax(z, -1).unflatten(-1, (2, 2))[..., 0, :].sum(-1, keepdim=True)  # log_softmax.int, unflatten
        w = self.c1(s).to(torch.float64).sum() + self.c3(s.unsqueeze(1).unsqueeze(-1)).type_as(s).sum()    # conv1d, to.dtype, conv3d, type_as
        return z * w.float()


class Losses(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(6, 8), nn.Linear(8, 4)

    def forward(self, x, t):
        with torch.no_grad():                                   # wrap_with_set_grad_enabled
            scale = self.l1(x).abs().mean()
        h = torch.relu(self.l1(F.pad(x, (1, 1))[:, 1:-1]))     # pad
        y = F.pad(h.unsqueeze(1), (1, 1), mode="reflect").squeeze(1)[:, 1:-1]
        return F.cross_entropy(self.l2(y) * scale, t)           # cross_entropy_loss


class Bicubic(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(2, 3, 3, padding=1)

    def forward(self, x):
        y = self.c(x)
        a = F.interpolate(y, scale_factor=1.5, mode="bicubic", align_corners=False)
        b = F.interpolate(y, size=(5, 9), mode="bicubic", align_corners=True)
        d = F.interpolate(a, scale_factor=0.5, mode="bicubic", align_corners=False)
        return a.mean((2, 3)) + d.pow(2).mean((2, 3)) + b.amax((2, 3))


class ScalarFirst(nn.Module):
    def forward(self, x, i):
        return 1.5 - x, torch.rsub(x, 2.0, alpha=3), 2 - i, (2.5 - i) * x, torch.sub(0.5, x)


def save_issue48():
    """The bicubic upsampling (its Core ATen form is pt2_test.py's: 600 KB of
    JSON) and Core ATen's number-first sub."""
    torch.manual_seed(6)
    save_case("bicubic", Bicubic(), (torch.randn(2, 2, 6, 6),), ["x"])
    torch.manual_seed(7)
    save_case("scalar_first_core", ScalarFirst(), (torch.randn(2, 3), torch.tensor([[1, 2, 3], [-4, 5, 6]])), ["x", "i"],
              dialect="core")


class Einsum(nn.Module):
    """aten.einsum.default, kept whole by the training IR (Note [Einsum]):
    bmm, attention scores, implicit output, dot, diagonal, outer product and
    a three-operand chain."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))
        self.a, self.b = nn.Parameter(torch.randn(3, 4)), nn.Parameter(torch.randn(4, 3))

    def forward(self, x):
        h = torch.einsum("bij,jk->bik", x, self.w)
        s = torch.einsum("bhqd,bhkd->bhqk", h.unsqueeze(1), x.unsqueeze(1))
        m = torch.einsum("ij,jk", self.a, self.b)
        d = torch.einsum("i,i->", m.flatten(), m.flatten())
        z = torch.cat([torch.einsum("ii->i", m), torch.einsum("i,j->ij", m[0], m[1]).flatten(),
                       torch.einsum("ij,jk,kl->il", self.a, self.b, self.a).flatten(), d.reshape(1)])
        return torch.cat([torch.einsum("bij,bjk->bik", s.squeeze(1), h).flatten(1), z.expand(x.shape[0], -1)], 1)


class ZooOps(nn.Module):
    """What the zoo's training-IR exports hold that aotc once refused."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(2, 3, 3, padding=1)
        self.n1, self.n2 = nn.InstanceNorm2d(3, affine=True), nn.InstanceNorm1d(3)
        with torch.no_grad():
            self.n1.weight.normal_(), self.n1.bias.normal_()
        self.enc, self.dec = nn.Linear(3, 3), nn.Linear(3, 3, bias=False)
        self.dec.weight = self.enc.weight                        # tied
        self.t1, self.t2 = nn.ConvTranspose1d(3, 2, 3, stride=2, output_padding=1), nn.ConvTranspose2d(3, 2, 2, 2)
        self.t3 = nn.ConvTranspose3d(1, 1, 2, padding=1, dilation=2)

    def forward(self, x, t):
        y = self.n1(self.c(x))                                   # instance_norm (affine)
        z = self.n2(y.flatten(2))                                # instance_norm (no affine), 1-d
        p = self.dec(self.enc(z.mean(-1)))
        u = F.max_pool1d(self.t1(z), 3, 2, padding=1).mean(-1)        # conv_transpose1d, max_pool1d
        v = self.t2(y).mean((2, 3)) + self.t3(y.unsqueeze(1)).mean((1, 3, 4))[:, :2]  # conv_transpose2d/3d
        v = v + F.max_pool3d(y.unsqueeze(1), 2, 1, padding=1).swapaxes(1, 2).amax((2, 3, 4))[:, :2]  # max_pool3d, swapaxes
        p = p + (u + v).sum(-1, keepdim=True).expand_as(p)         # expand_as
        a, b, e = z.tensor_split([1, 5], dim=2)                   # tensor_split.indices: 1, 4 and 20 of 25
        p = p + a.sum(-1) * b.mean(-1) - e.amax(-1)
        kl = F.kl_div(p.log_softmax(-1), t.softmax(-1), reduction="batchmean") + F.kl_div(p, t.abs(), reduction="none")
        kl = kl + F.kl_div(p.log_softmax(-1), t.log_softmax(-1), reduction="mean", log_target=True)  # kl_div
        return (F.smooth_l1_loss(p, t, beta=0.5, reduction="none") + kl,   # broadcast_tensors: [2, 3] against [3]
                F.huber_loss(p.unsqueeze(1), t, delta=0.7), z.amax(-1))


def save_zoo_ops():
    torch.manual_seed(8)
    save_case("zoo_ops", ZooOps(), (torch.randn(2, 2, 5, 5), torch.randn(3)), ["x", "t"])


def save_case(name, module, args, arg_names, dialect="training", dynamic=None):
    torch.manual_seed(0)
    eager = copy.deepcopy(module)
    ep = torch.export.export(module, args, dynamic_shapes=dynamic)
    if dynamic:
        args = tuple(torch.randn(5, *a.shape[1:]) for a in args)  # run at another batch
    if dialect == "core":
        ep = ep.run_decompositions()
    torch.export.save(ep, os.path.join(HERE, name + ".pt2"))
    before = {k: v.clone() for k, v in eager.named_buffers()}
    with torch.no_grad():
        out = eager(*args)
    expected = {f"output.{k}": o for k, o in enumerate(out)} if isinstance(out, tuple) else {"output.0": out}
    for k, v in eager.named_buffers():
        if not torch.equal(v, before[k]):
            expected[f"after_forward.{k}"] = v
    write_safetensors(os.path.join(HERE, name + ".inputs.safetensors"), dict(zip(arg_names, args)))
    write_safetensors(os.path.join(HERE, name + ".expected.safetensors"), expected)
    return ep


def rewrite(src, dst, edit):
    """Copies archive `src` to `dst`, entry by entry through edit(name, bytes)
    -> [(name, bytes)] (stored, as torch.export.save writes)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            for n, b in edit(info.filename, zin.read(info.filename)):
                zout.writestr(zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0)), b)


class AutocastBlock(nn.Module):
    def __init__(self, device="cuda"):
        super().__init__()
        self.device = device
        self.l0, self.l1, self.l2 = nn.Linear(4, 6), nn.Linear(6, 6), nn.Linear(4, 3)

    def forward(self, x):
        h = torch.relu(self.l0(x))
        with torch.autocast(self.device, dtype=torch.bfloat16):
            y = self.l1(h)
            p = torch.softmax(y, -1)
            q = y * 2
            with torch.autocast(self.device, enabled=False):
                r = self.l2(x)
        return p.sum(-1, keepdim=True) * r + (q + h).mean(-1, keepdim=True)


class Cond(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 5)

    def forward(self, x):
        h = self.l(x)
        p, q = torch.cond(x.sum() > 0, lambda a, b: (torch.relu(a) * 2, (a @ a.t()).softmax(-1)),
                          lambda a, b: (a.sin() - 1, b @ b.t() - 1), (h, x))
        return p.mean(-1, keepdim=True) + q


def save_hops():
    import warnings
    from torch._export.serde.serialize import serialize
    from torch._subclasses.fake_tensor import FakeTensorMode
    import torch.cuda.amp.common as common
    torch.manual_seed(7)
    here = os.path.join(HERE, "autocast_here.pt2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CUDA autocast disabled without CUDA
        torch.export.save(torch.export.export(AutocastBlock(), (torch.randn(2, 4),)), here)
    saved = common.amp_definitely_not_available, torch.cuda.is_bf16_supported
    common.amp_definitely_not_available, torch.cuda.is_bf16_supported = (lambda: False), (lambda *a, **k: True)
    try:
        with FakeTensorMode(allow_non_fake_inputs=True), torch.device("cuda"):
            program = serialize(torch.export.export(AutocastBlock(), (torch.randn(2, 4),))).exported_program
    finally:
        common.amp_definitely_not_available, torch.cuda.is_bf16_supported = saved
    rewrite(here, os.path.join(HERE, "autocast_cuda.pt2"), lambda n, b: [(n, program if n.endswith("models/model.json") else b)])
    os.remove(here)
    torch.export.save(torch.export.export(AutocastBlock("cpu"), (torch.randn(2, 4),)), os.path.join(HERE, "bad_autocast_cpu.pt2"))
    torch.manual_seed(8)
    m = Cond()
    x = torch.randn(3, 4).abs() + 0.1
    torch.export.save(torch.export.export(m, (x,)), os.path.join(HERE, "cond.pt2"))
    for name, xi in (("cond_true", x), ("cond_false", -x)):
        write_safetensors(os.path.join(HERE, name + ".inputs.safetensors"), {"x": xi})
        with torch.no_grad():
            write_safetensors(os.path.join(HERE, name + ".expected.safetensors"), {"output.0": m(xi)})


def main():
    if sys.argv[1:] == ["zoo_ops"]:  # one new fixture, the others as committed
        return save_zoo_ops()
    if sys.argv[1:] == ["--hops"]:
        return save_hops()
    save_zoo_ops()
    save_hops()
    torch.manual_seed(0)
    ep_mlp = save_case("mlp", MLP(), (torch.randn(2, 4),), ["x"])
    torch.manual_seed(1)
    save_case("conv_bn_core", ConvBN().train(), (torch.randn(2, 2, 4, 4),), ["x"], dialect="core")
    torch.manual_seed(2)
    save_case("composites", Composites().train(), (torch.randn(2, 2, 4, 4), torch.randn(2, 2, 5)), ["x", "s"])
    torch.manual_seed(6)
    save_case("einsum", Einsum(), (torch.randn(2, 3, 4),), ["x"])
    torch.manual_seed(5)
    save_case("losses", Losses(), (torch.randn(4, 6), torch.tensor([0, 3, 1, 2])), ["x", "t"])
    save_issue48()
    torch.manual_seed(4)
    save_case("mlp_dynamic", MLP(), (torch.randn(3, 4),), ["x"], dynamic=[{0: torch.export.Dim("batch", min=1, max=64)}])
    torch.manual_seed(3)
    ep_b = torch.export.export(MLP(), (torch.randn(2, 4),))
    package_pt2(os.path.join(HERE, "two_models.pt2"), exported_programs={"first": ep_mlp, "second": ep_b})

    good = os.path.join(HERE, "mlp.pt2")
    data = open(good, "rb").read()
    open(os.path.join(HERE, "bad_truncated.pt2"), "wb").write(data[: len(data) * 2 // 3])

    def bump_major(n, b):
        if n.endswith("models/model.json"):
            j = json.loads(b)
            j["schema_version"]["major"] = 9
            b = json.dumps(j).encode()
        return [(n, b)]
    rewrite(good, os.path.join(HERE, "bad_schema.pt2"), bump_major)
    rewrite(good, os.path.join(HERE, "bad_escape.pt2"),
            lambda n, b: [(n, b)] + ([("mlp/../../evil", b"x")] if n.endswith("archive_format") else []))
    rewrite(good, os.path.join(HERE, "bad_short_record.pt2"),
            lambda n, b: [(n, b[:8] if n.endswith("data/weights/weight_0") else b)])
    rewrite(good, os.path.join(HERE, "bad_big_endian.pt2"), lambda n, b: [(n, b"big" if n.endswith("byteorder") else b)])
    rewrite(good, os.path.join(HERE, "bad_aoti.pt2"),
            lambda n, b: [] if "/models/" in n else [(n, b)] + ([("mlp/data/aotinductor/model/model.so", b"\0")] if n.endswith("archive_format") else []))
    rewrite(good, os.path.join(HERE, "bad_pickled.pt2"), lambda n, b: [(n, b.replace(b'"use_pickle": false', b'"use_pickle": true', 1)
                                                                        if n.endswith("_weights_config.json") else b)])
    def unsupported(n, b):
        if n.endswith("models/model.json"):
            j = json.loads(b)
            nodes = j["graph_module"]["graph"]["nodes"]
            nodes[1]["target"] = "torch.ops.aten.special_bessel_j0.default"   # relu
            nodes[2]["target"] = "torch.ops.higher_order.my_region"           # the second linear
            b = json.dumps(j).encode()
        return [(n, b)]
    rewrite(good, os.path.join(HERE, "bad_unsupported.pt2"), unsupported)
    # The layout torch.export.save wrote before PyTorch 2.8.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n in ("serialized_exported_program.json", "serialized_state_dict.pt", "serialized_constants.pt", "version"):
            z.writestr(n, b"{}")
    open(os.path.join(HERE, "bad_legacy.pt2"), "wb").write(buf.getvalue())


if __name__ == "__main__":
    main()
