#!/usr/bin/python3
"""zoo_check.py [--build build] [MODEL...]: real models through aotc.

torchvision classifiers and segmenters, and the layers people build by hand
(LSTM, GRU, UNet, conv1d audio, a GPT-2 block, InstanceNorm + PReLU, the
losses), each in train mode with dropout and stochastic depth off, exported
with tools/fx_export.py, compiled, and run on both backends with gradients:
the reference runtime against eager in float64, `--backend emulate` against
eager in float32 (errors relative to each tensor's max, floored at 1e-3 of
the largest tensor of its kind).  Eager float32's own distance from float64
is the model's conditioning: where it exceeds F32_TOL (train-mode BatchNorm
on 1x1 or 2x2 maps, e.g. inception_v3, regnet), float32 cannot tell a bug
from rounding, so the model's float64 twin is compiled and must match eager
float64 within F64_TOL on both backends.  Prints one line per model and exits
1 if any fails.  Not part of the suite (about 15 minutes on 2 cores); under
the pinned PyTorch 2.x (scripts/setup-venv.sh) ctest zoo_torch2 runs three
of the models, and the rest are issue 36's zoo on 2.x.

--door pt2 (PyTorch 2.8+, issue 46) exports with torch.export.export and
torch.export.save instead, in the training IR as export() returns it, the
Core ATen of ep.run_decompositions(), or both (--dialect), and compiles the
archive with `aotc compile m.pt2 --train` (Note [pt2 front end]: weights
from the archive, parameters' gradients grad.<state_dict name>); the same
tolerances and float64 twin decide.  --dynamic exports the batch dim as a
torch.export.Dim and runs the one artifact at another batch.  A model
torch.export cannot capture is reported `export refused: REASON` (not aotc's
failure: the FX door is that model's way in), and so is aotc's one-line
refusal of --train on a Core ATen program that lost a detach() or a no_grad
region (Note [Core ATen and training]: its training IR is the way in); aotc
must compile everything else or refuse it in one line, which fails the model.
"""
import argparse
import copy
import math
import os
import subprocess
import time
import sys
import tempfile

import numpy as np
import torch
import torchvision

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "testdata"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from compare_safetensors import load  # noqa: E402
from fx_export import export  # noqa: E402
from gen_util import reference  # noqa: E402

TORCHVISION = {
    "vgg11": dict(dropout=0.0), "googlenet": dict(dropout=0.0, aux_logits=False, init_weights=True),
    "squeezenet1_0": dict(dropout=0.0), "mobilenet_v3_small": dict(dropout=0.0), "mobilenet_v2": dict(dropout=0.0),
    "resnet18": {}, "densenet121": {}, "shufflenet_v2_x0_5": {}, "convnext_tiny": dict(stochastic_depth_prob=0.0),
    "resnext50_32x4d": {}, "regnet_x_400mf": {},
    "efficientnet_b0": {}, "regnet_y_400mf": {}, "inception_v3": dict(aux_logits=False, init_weights=True),
    "swin_t": {},
    # Issue 36's zoo on PyTorch 2.x (torchvision >= 0.13 builders; the names
    # below exist in 0.14, Debian's, too).
    "mnasnet0_5": dict(dropout=0.0), "mobilenet_v3_large": dict(dropout=0.0), "squeezenet1_1": dict(dropout=0.0),
    "efficientnet_v2_s": {}, "wide_resnet50_2": {}, "resnext101_32x8d": {}, "regnet_y_800mf": {}, "shufflenet_v2_x1_0": {},
    "densenet161": {}, "convnext_small": dict(stochastic_depth_prob=0.0),
}
# Input side per model (96 unless listed).
SIDE = {"swin_t": 64, "inception_v3": 80}


class Segmentation(torch.nn.Module):
    """A torchvision segmentation model's 'out' map (the models return a dict)."""

    def __init__(self, name):
        super().__init__()
        self.m = getattr(torchvision.models.segmentation, name)(num_classes=5, weights_backbone=None)

    def forward(self, x):
        return self.m(x)["out"]


class Recurrent(torch.nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn = cell
        self.head = torch.nn.Linear(cell.hidden_size * (2 if cell.bidirectional else 1), 10)

    def forward(self, x):
        return self.head(self.rnn(x)[0])


class UNet(torch.nn.Module):
    """Two levels down, two up: ConvTranspose2d on one, bilinear upsampling on the other, cat skips."""

    def __init__(self, c=8):
        super().__init__()

        def block(i, o):
            return torch.nn.Sequential(torch.nn.Conv2d(i, o, 3, padding=1), torch.nn.BatchNorm2d(o), torch.nn.ReLU(),
                                       torch.nn.Conv2d(o, o, 3, padding=1), torch.nn.BatchNorm2d(o), torch.nn.ReLU())
        self.e1, self.e2, self.mid = block(3, c), block(c, 2 * c), block(2 * c, 4 * c)
        self.up2 = torch.nn.ConvTranspose2d(4 * c, 2 * c, 2, 2)
        self.d2 = block(4 * c, 2 * c)
        self.d1 = block(3 * c, c)
        self.out = torch.nn.Conv2d(c, 2, 1)

    def forward(self, x):
        e1 = self.e1(x)
        e2 = self.e2(torch.nn.functional.max_pool2d(e1, 2))
        m = self.mid(torch.nn.functional.max_pool2d(e2, 2))
        d2 = self.d2(torch.cat([self.up2(m), e2], 1))
        up1 = torch.nn.functional.interpolate(d2, scale_factor=2, mode="bilinear", align_corners=False)
        return self.out(self.d1(torch.cat([up1, e1], 1)))


class AudioNet(torch.nn.Module):
    """A conv1d classifier on raw audio (M5-style)."""

    def __init__(self):
        super().__init__()
        layers, c = [], 1
        for o, k, s in ((16, 40, 8), (16, 3, 1), (32, 3, 1)):
            layers += [torch.nn.Conv1d(c, o, k, s), torch.nn.BatchNorm1d(o), torch.nn.ReLU(), torch.nn.MaxPool1d(2)]
            c = o
        self.features = torch.nn.Sequential(*layers)
        self.head = torch.nn.Linear(c, 10)

    def forward(self, x):
        return self.head(torch.nn.functional.adaptive_avg_pool1d(self.features(x), 1).flatten(1))


class GPT2Block(torch.nn.Module):
    """Token + position embeddings, one pre-norm GPT-2 block (causal mask by masked_fill), a tied head."""

    def __init__(self, vocab=100, d=32, heads=4, t_max=16):
        super().__init__()
        self.heads = heads
        self.wte, self.wpe = torch.nn.Embedding(vocab, d), torch.nn.Embedding(t_max, d)
        self.ln1, self.ln2, self.ln_f = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.c_attn, self.c_proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.proj = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
        self.head = torch.nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight
        self.register_buffer("bias", torch.tril(torch.ones(t_max, t_max)).view(1, 1, t_max, t_max))

    def forward(self, idx):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(0, T, dtype=torch.long))
        C = x.shape[-1]
        q, k, v = self.c_attn(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")).softmax(dim=-1)
        x = x + self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))
        x = x + self.proj(torch.nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return self.head(self.ln_f(x))


class InstanceNormPReLU(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.InstanceNorm2d(8, affine=True),
                                       torch.nn.PReLU(8), torch.nn.Conv2d(8, 8, 3, padding=1),
                                       torch.nn.InstanceNorm2d(8), torch.nn.PReLU())

    def forward(self, x):
        return self.net(x)


class Losses(torch.nn.Module):
    """The five losses on a small regressor's output: BCE-with-logits, smooth L1, Huber, KL divergence (xlogy), MSE."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(16, 8)

    def forward(self, x, target):
        F = torch.nn.functional
        y = self.net(x)
        return (F.binary_cross_entropy_with_logits(y, target.sigmoid()), F.smooth_l1_loss(y, target, beta=0.5),
                F.huber_loss(y, target, delta=0.7), F.kl_div(y.log_softmax(-1), target.softmax(-1), reduction="batchmean"),
                F.mse_loss(y, target))


class Encoder(torch.nn.Module):
    """nn.TransformerEncoder (two layers, a padding mask): 2.x runs its attention as one fused SDPA op."""

    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(32, 10)

    def forward(self, x):
        pad = torch.zeros(x.shape[0], x.shape[1], dtype=torch.bool)
        pad[:, -2:] = True
        return self.head(self.enc(x, src_key_padding_mask=pad))


def image(side=96):
    return (torch.randn(2, 3, side, side),)


def deterministic(m):
    """Dropout and stochastic depth off (train mode would draw random masks)."""
    for mod in m.modules():
        if isinstance(mod, (torch.nn.Dropout, torchvision.ops.StochasticDepth)):
            mod.p = 0.0
        if hasattr(mod, "dropout") and isinstance(mod.dropout, float):
            mod.dropout = 0.0
        if hasattr(mod, "attention_dropout") and isinstance(mod.attention_dropout, float):
            mod.attention_dropout = 0.0
    return m


def mvit_tiny():
    from torchvision.models.video.mvit import MViT, MSBlockConfig
    blocks = [MSBlockConfig(num_heads=1, input_channels=16, output_channels=16, kernel_q=[3, 3, 3], kernel_kv=[3, 3, 3],
                            stride_q=[1, 1, 1], stride_kv=[1, 2, 2]),
              MSBlockConfig(num_heads=2, input_channels=16, output_channels=32, kernel_q=[3, 3, 3], kernel_kv=[3, 3, 3],
                            stride_q=[1, 2, 2], stride_kv=[1, 1, 1])]
    return MViT(spatial_size=(32, 32), temporal_size=4, block_setting=blocks, residual_pool=True, residual_with_cls_embed=False,
                rel_pos_embed=True, proj_after_attn=True, dropout=0.0, num_classes=10)


# name -> () -> (model, example args); each built right after torch.manual_seed(0).
MODELS = {name: (lambda name=name: (getattr(torchvision.models, name)(num_classes=10, **TORCHVISION[name]),
                                      image(SIDE.get(name, 96)))) for name in TORCHVISION}
MODELS.update({
    "maxvit_small": lambda: (torchvision.models.MaxVit(input_size=(64, 64), stem_channels=16, partition_size=4,
                                                       block_channels=[16, 32], block_layers=[1, 1], head_dim=8,
                                                       stochastic_depth_prob=0.0, num_classes=10), image(64)),
    "vit_32": lambda: (torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                                           hidden_dim=64, mlp_dim=128, num_classes=10), image(32)),
    "swin_v2_small": lambda: (torchvision.models.SwinTransformer(
        patch_size=[4, 4], embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=[4, 4], stochastic_depth_prob=0.0,
        num_classes=10, block=torchvision.models.swin_transformer.SwinTransformerBlockV2,
        downsample_layer=torchvision.models.swin_transformer.PatchMergingV2), image(32)),
    "transformer_encoder": lambda: (Encoder(), (torch.randn(2, 10, 32),)),
    "r3d_18": lambda: (torchvision.models.video.r3d_18(num_classes=10), (torch.randn(1, 3, 4, 32, 32),)),
    "mc3_18": lambda: (torchvision.models.video.mc3_18(num_classes=10), (torch.randn(1, 3, 4, 32, 32),)),
    "r2plus1d_18": lambda: (torchvision.models.video.r2plus1d_18(num_classes=10), (torch.randn(1, 3, 4, 32, 32),)),
    # MViT v2 (torchvision's mvit_v2_s design: pooling attention, relative
    # position embeddings, residual pooling) at a size that fits: mvit_v2_s
    # itself fixes its input at 16 x 224 x 224.  s3d is not here: its head's
    # fixed AvgPool3d((2, 7, 7)) needs 16 x 224 x 224 clips (17 GFLOP a
    # forward), beyond this script's 2-core budget.
    "mvit_v2_tiny": lambda: (mvit_tiny(), (torch.randn(1, 3, 4, 32, 32),)),
    "fcn_resnet50": lambda: (Segmentation("fcn_resnet50"), image(64)),
    "deeplabv3_mobilenet_v3_large": lambda: (Segmentation("deeplabv3_mobilenet_v3_large"), image(64)),
    "lraspp_mobilenet_v3_large": lambda: (Segmentation("lraspp_mobilenet_v3_large"), image(64)),
    "lstm_2layer": lambda: (Recurrent(torch.nn.LSTM(16, 32, num_layers=2, batch_first=True)), (torch.randn(4, 12, 16),)),
    "gru_bidirectional": lambda: (Recurrent(torch.nn.GRU(16, 24, bidirectional=True)), (torch.randn(12, 4, 16),)),
    "unet": lambda: (UNet(), image(32)),
    "audio_conv1d": lambda: (AudioNet(), (torch.randn(2, 1, 2000),)),
    "gpt2_block": lambda: (GPT2Block(), (torch.randint(0, 100, (2, 12)),)),
    "instancenorm_prelu": lambda: (InstanceNormPReLU(), image(16)),
    "losses": lambda: (Losses(), (torch.randn(6, 16), torch.randn(6, 8))),
})


def worst(got, want):
    """Worst per-tensor error relative to the tensor's max (floored at 1e-3 of
    the largest tensor of its kind, outputs or gradients), and missing names."""
    scale = {}
    for k, v in want.items():
        if v.size:
            kind = k.startswith("grad.")
            scale[kind] = max(scale.get(kind, 0.0), float(np.max(np.abs(v))))
    rows = []
    for k, v in want.items():
        if v.size and k in got:
            den = max(float(np.max(np.abs(v))), 1e-3 * scale[k.startswith("grad.")], 1e-30)
            rows.append((float(np.max(np.abs(got[k].astype(np.float64) - v))) / den, k))
    missing = [k for k in want if k not in got]
    return max(rows) if rows else (0.0, ""), missing


# A float32 run passes within F32_TOL of eager float32 (emulate) and of eager
# float64 (reference) where the model is well conditioned, i.e. eager float32
# itself is within F32_TOL of float64.  Where it is not, float32 cannot decide
# and the float64 twin (the model and inputs in double) must match eager
# float64 within F64_TOL on both backends.
F32_TOL, F64_TOL = 1e-3, 1e-6


def run_backends(aotc, tmp, p, refs, model=None):
    """Compiles p.json (or `model`, a .pt2 archive, with --train) and runs it on both backends;
    [(backend, err, key, missing)] or an error line."""
    art = p + ".art"
    t0 = time.time()
    cmd = [aotc, "-q", "compile", model or p + ".json", "-o", art, "--arch", "sm_90"] + (["--train"] if model else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        lines = r.stderr.strip().splitlines() or ["(no message)"]
        # A refusal is one line (the project's rule): more is a defect of its own.
        return f"compile failed: {lines[0]}" + (f" (+{len(lines) - 1} more lines)" if len(lines) > 1 else "")
    compile_s = time.time() - t0
    rows = []
    for backend, ref in zip(("reference", "emulate"), refs):
        out = os.path.join(tmp, backend + ".safetensors")
        weights = [] if model else ["--inputs", p + ".safetensors"]
        r = subprocess.run([aotc, "run", art, "--backend", backend] + weights + ["--inputs",
                            p + ".inputs.safetensors", "--grad-outputs", p + ".inputs.safetensors", "--out", out],
                           capture_output=True, text=True)
        if r.returncode:
            return f"{backend} failed: {r.stderr.strip()[:200]}"
        (err, key), missing = worst(load(out), load(os.path.join(tmp, ref + ".expected.safetensors")))
        rows.append((backend, err, key, missing))
    return rows, compile_s


class ExportRefused(Exception):
    """torch.export cannot capture the model: not aotc's failure."""


class CoreTrainRefused(Exception):
    """aotc refuses --train on a Core ATen program that lost a detach() or a
    grad-mode region (Note [Core ATen and training]): one line, by design;
    the training IR is that model's way in."""


CORE_TRAIN_REFUSAL = "(run_decompositions(), PyTorch's inference IR) has lost a"


# The batch dim per model where it is not dim 0 (a sequence-first RNN).
BATCH_DIM = {"gru_bidirectional": 1}


def batch_dim(name):
    return BATCH_DIM.get(name, 0)


def other_batch(args, bd):
    """The example arguments at batch + 1 (the dynamic artifact runs at a size
    it was not exported at): fresh normal values for floating tensors, the
    first row repeated for integer ones (token ids stay in range)."""
    def grow(a):
        if a.is_floating_point():
            shape = list(a.shape)
            shape[bd] += 1
            return torch.randn(shape, dtype=a.dtype)
        return torch.cat([a, a.narrow(bd, 0, 1)], bd)
    return tuple(grow(a) for a in args)


def export_pt2(m, args, path, dialect, dynamic_dim):
    """torch.export.export + torch.export.save of a copy of m (export must not
    touch the module the reference ran); returns the program's node count."""
    kw = {}
    if dynamic_dim is not None:
        batch = torch.export.Dim("batch", min=1, max=64)
        kw["dynamic_shapes"] = tuple({dynamic_dim: batch} for _ in args)
    try:
        ep = torch.export.export(copy.deepcopy(m), args, **kw)
        if dialect == "aten":
            ep = ep.run_decompositions()
    except Exception as e:  # noqa: BLE001 -- torch.export's refusals have many types
        lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()] or [type(e).__name__]
        raise ExportRefused(f"{type(e).__name__}: {lines[0][:200]}") from None
    torch.export.save(ep, path)
    return sum(1 for n in ep.graph.nodes if n.op == "call_function")


def check(aotc, name, m, args, tmp, door="fx", dialect=None, dynamic=False):
    """One model: returns (passed, report line); door "pt2" exports with
    torch.export in `dialect` ("training" or "aten")."""
    p = os.path.join(tmp, "m")
    pt2 = door == "pt2"
    bd = batch_dim(name) if dynamic else None
    export_args = args
    if pt2:
        nodes = export_pt2(m, args, p + ".pt2", dialect, bd)
        if dynamic:
            args = other_batch(args, bd)
    else:
        nodes = len(export(m, args, p)["nodes"])
    reference("m", m, args, tmp, float64=True)
    reference("m32", m, args, tmp)
    (cond, _), _ = worst(load(os.path.join(tmp, "m32.expected.safetensors")), load(os.path.join(tmp, "m.expected.safetensors")))
    t0 = time.time()
    rows = run_backends(aotc, tmp, p, ("m", "m32"), p + ".pt2" if pt2 else None)
    if isinstance(rows, str) and pt2 and dialect == "aten" and CORE_TRAIN_REFUSAL in rows and "more lines" not in rows:
        raise CoreTrainRefused(rows)
    if isinstance(rows, str):
        return False, f"{nodes} nodes  " + rows
    rows, compile_s = rows
    ok = all(not missing for *_, missing in rows)
    line = f"{nodes} nodes  compile {compile_s:.1f} s  " + "  ".join(f"{b} {e:.1e} ({k}){' missing ' + str(mi) if mi else ''}" for b, e, k, mi in rows)
    line += f"  [eager f32 vs f64 {cond:.1e}]"
    if cond <= F32_TOL:
        ok = ok and all(e <= F32_TOL for _, e, _, _ in rows)
    else:
        # Conditioning decides: the float64 twin.
        m64 = copy.deepcopy(m).double()
        a64 = tuple(a.double() if a.is_floating_point() else a for a in args)
        p64 = os.path.join(tmp, "m64")
        if pt2:
            # Exported at the example batch, run at `args`' own.
            export_pt2(m64, tuple(a.double() if a.is_floating_point() else a for a in export_args), p64 + ".pt2", dialect, bd)
        else:
            export(m64, a64, p64)
        reference("m64", m64, a64, tmp, float64=True)
        rows64 = run_backends(aotc, tmp, p64, ("m64", "m64"), p64 + ".pt2" if pt2 else None)
        if isinstance(rows64, str):
            return False, line + "  f64 twin " + rows64
        rows64 = rows64[0]
        ok = ok and all(e <= F64_TOL and not mi for _, e, _, mi in rows64)
        line += "  f64 twin: " + "  ".join(f"{b} {e:.1e} ({k})" for b, e, k, _ in rows64)
    return ok, line + f"  ({time.time() - t0:.0f} s)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--door", choices=["fx", "pt2"], default="fx",
                    help="tools/fx_export.py (fx) or torch.export.export + torch.export.save (pt2)")
    ap.add_argument("--dialect", choices=["training", "aten", "both"], default="both",
                    help="pt2: the training IR export() returns, run_decompositions()' Core ATen, or both")
    ap.add_argument("--dynamic", action="store_true", help="pt2: the batch dim a torch.export.Dim, run at another batch")
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    if a.door == "fx" and a.dynamic:
        ap.error("--dynamic is for --door pt2")
    aotc = os.path.join(a.build, "tools", "aotc")
    unknown = [n for n in a.models if n not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    runs = [(None, False)] if a.door == "fx" else \
        [(d, a.dynamic) for d in (("training", "aten") if a.dialect == "both" else (a.dialect,))]
    failed, refused, total = [], [], 0
    for name in a.models or list(MODELS):
        for dialect, dynamic in runs:
            label = name if dialect is None else f"{name} [{dialect}{', dynamic batch' if dynamic else ''}]"
            total += 1
            with tempfile.TemporaryDirectory() as tmp:
                torch.manual_seed(0)
                m, args = MODELS[name]()
                try:
                    ok, line = check(aotc, name, deterministic(m).train(), args, tmp, a.door, dialect, dynamic)
                except ExportRefused as e:
                    print(f"skip {label:40} export refused: {e}", flush=True)
                    refused.append(label)
                    continue
                except CoreTrainRefused as e:
                    print(f"skip {label:40} refused as designed (Note [Core ATen and training]): {e}", flush=True)
                    refused.append(label)
                    continue
                print(f"{'ok  ' if ok else 'FAIL'} {label:40} {line}", flush=True)
                if not ok:
                    failed.append(label)
    print(f"{total - len(failed) - len(refused)}/{total - len(refused)} models match eager"
          + (f"; failed: {', '.join(failed)}" if failed else "")
          + (f"; refused (by torch.export, or Core ATen --train by design) {len(refused)}: {', '.join(refused)}"
             if refused else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
