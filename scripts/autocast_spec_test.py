#!/usr/bin/python3
"""Issue 37 item 5: `--precision bf16|fp16` against what CUDA autocast did, op
by op (ctest autocast_spec under PyTorch 1.13, autocast_spec_torch2 under the
pinned 2.x).

testdata/autocast_spec/autocast_cuda_{bf16,f16}.json (copied from
../shared/spec) record, per model, every ATen op CUDA autocast ran on an H100
with PyTorch 2.11 -- forward under autocast, backward outside -- with the
dtypes it received and returned.  This script rebuilds those models (small
sizes, the same layer types and the same op order), exports them in float32
with tools/fx_export.py, compiles them with `aotc compile --precision bf16`
and `fp16`, reads the IR after the autocast pass (--print-ir-after autocast)
and compares the forward op by op with the records:

  * an aotc "op" is a group of IR nodes with the same location (the FX node's
    name and ATen spelling, Note [Autocast pass]); the casts the pass added
    (loc(..., "autocast")) are not ops, they are PyTorch's `_to_copy`;
  * records and groups are aligned per model by their ATen names (difflib on
    the sequences; views, casts, detach and creation ops are not compared);
  * GEMMs and convolutions (mm, addmm, bmm, baddbmm, convolution, prelu,
    attention, RNN layers): the dtypes their compute nodes read (after the
    casts) and return;
  * every other op: each floating input as it arrives (before the group's own
    casts: ATen's kernels compute a low-precision tensor in float32 and round
    the result once, which aotc writes as cast - compute - cast) or as the
    compute nodes read it (after the casts: what autocast's `_to_copy` gave
    the op), and its result as later ops see it.

Where aotc differs on purpose, DELIBERATE names the op and why; any other
difference fails with one line naming model, op and dtypes.  Records aotc
cannot compare under this PyTorch (an op it refuses, an op this PyTorch
spells differently) are printed with the reason and counted, never passed
silently.

    python scripts/autocast_spec_test.py AOTC [--keep DIR] [--only MODEL,...]
"""
import argparse
import difflib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from fx_export import export  # noqa: E402

nn = torch.nn
F = torch.nn.functional
SPEC = os.path.join(ROOT, "testdata", "autocast_spec")
TORCH2 = int(torch.__version__.split(".")[0]) >= 2
FLOAT = {"f32", "f16", "bf16", "f64"}
PRECISION = {"bf16": "bf16", "f16": "fp16"}  # record file's dtype -> aotc --precision

# ------------------------------------------------------------------- models
# Rebuilt from the records: the same layer types in the same order (the op
# sequences below match the records' forward), at small sizes.


class AttentionBlock(nn.Module):
    """Pre-norm qkv projection; attention written out (matmul, scale, softmax,
    matmul) then projected and added; the same q, k, v through
    scaled_dot_product_attention added unprojected (records 0..46)."""

    def __init__(self, d=32, h=4, sdpa=True):
        super().__init__()
        self.norm, self.qkv, self.proj, self.h, self.sdpa = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d), h, sdpa

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(B, N, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4).unbind(0)
        a = ((q @ k.transpose(-2, -1)) / math.sqrt(C // self.h)).softmax(-1)
        y = x + self.proj((a @ v).transpose(1, 2).reshape(B, N, C))
        if not self.sdpa:
            return y
        return y + F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, N, C)


class Misc(nn.Module):
    """conv -> group norm -> prelu -> bilinear upsampling -> mean + embedding,
    einsum + baddbmm, then a sum of reductions and losses of the result (the
    records' order: cumsum, vector norms, logsumexp, mse, l1, smooth l1, bce
    with logits, cross entropy, log_softmax + nll, exp, log, pow, softplus,
    gelu, sigmoid, softmax + max)."""

    def __init__(self, norms=True):
        super().__init__()
        self.conv, self.gn, self.prelu = nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.PReLU(8)
        self.emb = nn.Embedding(10, 8)
        self.w, self.w2, self.b2 = (nn.Parameter(torch.randn(8, 16) / 3), nn.Parameter(torch.randn(8, 16) / 3),
                                    nn.Parameter(torch.randn(16) / 3))
        self.norms = norms

    def forward(self, x, idx, t, lab):
        up = F.interpolate(self.prelu(self.gn(self.conv(x))), scale_factor=2, mode="bilinear", align_corners=False)
        h = up.mean((2, 3)) + self.emb(idx)
        e = torch.einsum("bi,ij->bj", h, self.w)
        bb = torch.baddbmm(self.b2.unsqueeze(0).unsqueeze(0), h.unsqueeze(1),
                           self.w2.unsqueeze(0).expand(h.shape[0], 8, 16)).squeeze(1)
        z = e + bb
        loss = z.cumsum(1).sum()
        if self.norms:
            loss = loss + torch.linalg.vector_norm(z)
            loss = loss + torch.linalg.vector_norm(z, dim=1).sum()
        loss = loss + torch.logsumexp(z, 1).sum()
        loss = loss + F.mse_loss(z, t)
        loss = loss + F.l1_loss(z, t)
        loss = loss + F.smooth_l1_loss(z, t)
        loss = loss + F.binary_cross_entropy_with_logits(z, torch.sigmoid(t))
        loss = loss + F.cross_entropy(z, lab % 16)
        loss = loss + F.nll_loss(F.log_softmax(z, 1), lab % 16)
        loss = loss + z.exp().mean()
        loss = loss + torch.log(z.abs() + 1).mean()
        loss = loss + (z ** 2).mean()
        loss = loss + F.softplus(z).mean()
        loss = loss + F.gelu(z).mean()
        loss = loss + torch.sigmoid(z).mean()
        return loss + z.softmax(1).max()


def build(name, variant=None):
    """(module in train mode, example args).  `variant`: the fallback of
    FALLBACK[name] (the model without the ops this aotc or PyTorch lacks)."""
    import torchvision
    torch.manual_seed(0)
    img = torch.randn(2, 3, 32, 32)
    if name == "resnet18":
        m, a = torchvision.models.resnet18(num_classes=10), (img,)
    elif name == "mobilenet_v2":
        m, a = torchvision.models.mobilenet_v2(num_classes=10), (img,)
    elif name == "transformer_encoder":  # post-norm, relu, batch_first, no dropout (none recorded)
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        m, a = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False) if TORCH2 else nn.TransformerEncoder(layer, 2), \
            (torch.randn(2, 8, 32),)
    elif name == "vit_small":  # torchvision's ViT: conv patches, class token, pre-norm blocks, gelu MLP
        m, a = torchvision.models.VisionTransformer(32, 8, 2, 4, 32, 64, num_classes=10), (img,)
    elif name == "lstm":  # two layers, zero initial state (the records' zeros)
        m, a = nn.LSTM(8, 16, num_layers=2), (torch.randn(5, 2, 8),)
    elif name == "gru":
        m, a = nn.GRU(8, 16), (torch.randn(5, 2, 8),)
    elif name == "attention_block":
        m, a = AttentionBlock(sdpa=variant is None), (torch.randn(2, 8, 32),)
    elif name == "misc_ops":
        m, a = Misc(norms=variant is None), (torch.randn(2, 3, 8, 8), torch.tensor([1, 7]), torch.randn(2, 16),
                                             torch.tensor([3, 21]))
    else:
        raise KeyError(name)
    return m.train(), a


# model -> (the op whose absence makes the fallback, the records it leaves
# uncompared): used when PyTorch lacks the op or aotc refuses it.
FALLBACK = {
    "attention_block": ("scaled_dot_product_attention", {"sdpa"}),
    "misc_ops": ("linalg_vector_norm", {"linalg_vector_norm"}),
}

# -------------------------------------------------------- op classification
VIEWISH = {
    "view", "_unsafe_view", "t", "transpose", "permute", "unsqueeze", "squeeze", "select", "expand", "clone",
    "unbind", "detach", "alias", "slice", "split", "unsafe_split", "split_with_sizes", "contiguous", "reshape",
    "_reshape_alias", "as_strided", "lift_fresh", "lift_fresh_copy", "zeros", "ones", "empty", "full", "set",
    "copy", "_to_copy", "to", "ones_like", "zeros_like", "empty_like", "new_zeros", "new_empty", "flatten",
    "_unsafe_index", "scalar_tensor", "arange", "stack", "cat_view", "expand_as", "view_as",
}
GEMM = {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "einsum", "convolution", "_convolution", "conv2d",
        "_prelu_kernel", "prelu", "sdpa", "rnn"}
SPELLING = {  # ATen names that are one op for this comparison
    "_scaled_dot_product_cudnn_attention": "sdpa", "_scaled_dot_product_flash_attention": "sdpa",
    "_scaled_dot_product_efficient_attention": "sdpa", "_scaled_dot_product_flash_attention_for_cpu": "sdpa",
    "scaled_dot_product_attention": "sdpa", "_cudnn_rnn": "rnn", "lstm": "rnn", "gru": "rnn",
    "mkldnn_rnn_layer": "rnn", "rnn_tanh": "rnn", "rnn_relu": "rnn",
    "_native_batch_norm_legit": "native_batch_norm", "_native_batch_norm_legit_functional": "native_batch_norm",
    "_batch_norm_with_update": "native_batch_norm", "cudnn_batch_norm": "native_batch_norm",
    "prelu": "_prelu_kernel",
}


def canon(aten):
    """'aten::add_.Tensor' / 'aten.add_.Tensor' -> 'add' (in-place ops are
    their functional op; overloads are one op)."""
    s = aten[6:] if aten.startswith("aten::") else aten[5:] if aten.startswith("aten.") else aten
    s = s.split(".")[0]
    if s.endswith("_") and not s.endswith("__"):
        s = s[:-1]
    return SPELLING.get(s, s)


# Where aotc differs from CUDA autocast on purpose: (model or "*", op, autocast
# dtype) -> why.  The test prints each as a deliberate difference.
DELIBERATE = {
    ("*", "rnn", "bf16"):
        "PyTorch's cuDNN RNNs run in float16 even under bfloat16 autocast (AutocastRNN.cpp casts to at::kHalf); "
        "aotc runs the RNN in the autocast dtype, bf16: the user asked for bf16, bf16 training runs without a "
        "GradScaler and float16's range would need one, and aotc has no cuDNN RNN to match",
    ("misc_ops", "_log_softmax", "*"):
        "cross_entropy's log_softmax: PyTorch passes the input's dtype to log_softmax (cross_entropy_loss -> "
        "log_softmax(x, dim, x.scalar_type())), so autocast leaves it in bf16/fp16; the FX trace holds the same "
        "_log_softmax as F.log_softmax's, which autocast runs in float32, and aotc runs both in float32 "
        "(one rounding less)",
}


# Ops the records hold that this PyTorch traces under other names (the other
# names' ops are then checked against the records' per-op summary, `ops`).
SPELLED = {
    ("sdpa", 1): "PyTorch 1.13 has no scaled_dot_product_attention: nn.MultiheadAttention's attention is traced "
                 "as div + bmm + _softmax + bmm",
    ("native_dropout", 1): "dropout on the CPU is traced as empty_like + bernoulli_ + div_ + mul",
    ("native_dropout", 2): "dropout on the CPU is traced as empty_like + bernoulli_ + div_ + mul",
}


# Differences aotc does not mean but cannot remove yet (issue 37, left open): each runs
# the op in float32 where CUDA autocast runs it in the low dtype -- one rounding less,
# never a wrong answer -- and each is named in the test's output.
_LINEAR = ("a linear on a 3-D input is traced as mm + add: autocast casts linear's bias to the low dtype, "
           "aotc's pass sees the add of a bf16 product and a float32 bias and follows ATen's promotion to float32 "
           "(the trace lacks linear's composite level; the exporter would have to record it)")
_DROPOUT = ("CPU dropout is traced as empty_like + bernoulli_ + div_ + mul: the front end makes empty_like a "
            "float32 constant with no input, so its mask and the mul stay float32 where native_dropout is bf16")
KNOWN = {
    ("transformer_encoder", "add", "*"): _LINEAR, ("transformer_encoder", "div", "*"): _LINEAR,
    ("vit_small", "add", "*"): _LINEAR, ("vit_small", "div", "*"): _LINEAR,
    ("mobilenet_v2", "div", "*"): _DROPOUT,
}


def deliberate(model, op, dtype):
    for key in ((model, op, dtype), ("*", op, dtype), (model, op, "*"), ("*", op, "*")):
        if key in DELIBERATE:
            return DELIBERATE[key]
        if key in KNOWN:
            return "KNOWN, not yet matched: " + KNOWN[key]
    return None


# ----------------------------------------------------------------- IR reading
_LINE = re.compile(r'^\s+(?P<outs>%[^=]+?) = (?P<op>[\w.]+)\((?P<ins>[^)]*)\).*?'
                   r'loc\("(?P<node>[^"]*)", "(?P<aten>[^"]*)"')
_VAL = re.compile(r'%(?P<name>[^\s:,]+) : (?P<dtype>\w+)\[(?P<shape>[^\]]*)\]')
_INPUT = re.compile(r'^\s+input %(?P<name>\S+) : (?P<dtype>\w+)\[(?P<shape>[^\]]*)\]')
_OUTPUT = re.compile(r'^\s+output %(?P<name>\S+)')


def parse_ir(text):
    """The first graph after the autocast pass: (values {name: (dtype, numel)},
    nodes [(op, ins, outs, loc node, loc aten)], graph outputs)."""
    body = text.split("// ----- IR after autocast", 1)[1]
    body = body.split("\n}", 1)[0]
    values, nodes, outputs = {}, [], []
    for line in body.splitlines():
        m = _INPUT.match(line)
        if m:
            values[m["name"]] = (m["dtype"], numel(m["shape"]))
            continue
        m = _OUTPUT.match(line)
        if m:
            outputs.append(m["name"])
            continue
        m = _LINE.match(line)
        if not m:
            continue
        outs = []
        for v in _VAL.finditer(m["outs"]):
            values[v["name"]] = (v["dtype"], numel(v["shape"]))
            outs.append(v["name"])
        ins = [s.strip()[1:] for s in m["ins"].split(",") if s.strip().startswith("%")]
        nodes.append((m["op"], ins, outs, m["node"], m["aten"]))
    return values, nodes, outputs


def numel(shape):
    n = 1
    for d in shape.split(","):
        d = d.strip()
        if d:
            n *= int(d) if d.isdigit() else 1
    return n


class Group:
    """One aotc op: the nodes of one FX node (casts excluded)."""

    def __init__(self, node, aten):
        self.node, self.aten, self.key = node, aten, canon(aten)
        self.nodes = []


def groups_of(values, nodes, outputs):
    producer, users = {}, {}
    for i, (op, ins, outs, node, aten) in enumerate(nodes):
        for o in outs:
            producer[o] = i
        for v in ins:
            users.setdefault(v, []).append(i)
    is_cast = lambda i: nodes[i][4] == "autocast"  # noqa: E731
    order, by = [], {}
    for i, (op, ins, outs, node, aten) in enumerate(nodes):
        if is_cast(i):
            continue
        if (node, aten) not in by:
            by[(node, aten)] = Group(node, aten)
            order.append(by[(node, aten)])
        by[(node, aten)].nodes.append(i)

    def origin(v):
        """`v` as its producer published it: back through the casts the pass
        added for the reader, not through the producer's own trailing cast
        (loc(<producer's node>, "autocast")), which gives its result's dtype."""
        while v in producer and is_cast(producer[v]):
            c = producer[v]
            u = nodes[c][1][0]
            if u in producer and not is_cast(producer[u]) and nodes[producer[u]][3] == nodes[c][3]:
                break
            v = u
        return v

    for g in order:
        mine = set(g.nodes)
        made = {o for i in g.nodes for o in nodes[i][2]}
        g.reads, seen = [], set()  # (value the compute nodes read, value before the casts)
        for i in g.nodes:
            for v in nodes[i][1]:
                if v not in made and v not in seen and values[v][0] in FLOAT:
                    seen.add(v)
                    g.reads.append((v, origin(v)))
        # Results other ops (or the graph) read, as they read them: through the
        # group's own trailing cast (loc(<this node>, "autocast")), if any.
        g.results = []
        for i in g.nodes:
            for o in nodes[i][2]:
                outside = [u for u in users.get(o, []) if u not in mine]
                if not outside and o not in outputs:
                    continue
                seen_as = o
                for u in outside:
                    if is_cast(u) and nodes[u][3] == g.node:
                        seen_as = nodes[u][2][0]
                g.results.append((o, seen_as))
    return order


# ---------------------------------------------------------------- comparison
def compare_op(model, rec, g, values, dtype):
    """None when the group runs as the record says, else a one-line reason."""
    op, rin, rout = canon(rec[0]), [d for d in rec[1] if d in FLOAT], rec[2]
    read = [values[v][0] for v, _ in g.reads]
    before = [values[o][0] for _, o in g.reads]
    flo = [(values[s][0], values[o][1]) for o, s in g.results if values[s][0] in FLOAT]
    # The primary result: the largest floating one (a norm's output, not its statistics).
    out = max(flo, key=lambda t: t[1])[0] if flo else None
    want_out = rout[0] if rout else None
    if op in GEMM:
        ok_in = set(read) == set(rin) if rin else True
        got_in = read
    else:
        ok_in = match_inputs(rin, list(zip(read, before)))
        got_in = [b if b == a else f"{b}->{a}" for a, b in zip(read, before)]
    ok_out = want_out is None or want_out not in FLOAT or out == want_out
    if ok_in and ok_out:
        return None
    return (f"{model} {PRECISION[dtype]}: {rec[0]} (aotc {g.node} {g.aten}): autocast ran "
            f"{','.join(rec[1])} -> {','.join(rec[2])}, aotc {','.join(got_in)} -> {out}")


def match_inputs(want, got):
    """Each recorded floating input matched by one operand, as it arrives or
    as the compute nodes read it."""
    if len(want) != len(got):
        # An operand aotc folded (a scalar) or split: compare the dtypes present.
        return set(want) <= {d for pair in got for d in pair} and all(a in want or b in want for a, b in got)
    left = list(got)
    for w in want:
        for k, (a, b) in enumerate(left):
            if w in (a, b):
                del left[k]
                break
        else:
            return False
    return True


def compared(rec):
    if rec[3] != "forward":
        return False
    if canon(rec[0]) in VIEWISH:
        return False
    return any(d in FLOAT for d in rec[1] + rec[2])


def compare_model(model, records, summary, text, dtype, skip_ops, report):
    values, nodes, outputs = parse_ir(text)
    gs = [g for g in groups_of(values, nodes, outputs)
          if g.key not in VIEWISH and any(values[o][0] in FLOAT for i in g.nodes for o in nodes[i][2])]
    recs = [r for r in records if compared(r)]
    stats = {"compared": 0, "matched": 0, "deliberate": 0, "failed": 0, "uncompared": 0, "summary": 0}
    # The RNN layer: one record (_cudnn_rnn) for the layer; aotc's trace holds
    # the layer (2.x: mkldnn_rnn_layer) or, under 1.13, its cells (addmm per
    # step and the gates' pointwise ops).  Every GEMM of the layer is compared
    # with the record, and so are the graph's outputs (out, h, c).
    rnn = [r for r in recs if canon(r[0]) == "rnn"]
    if rnn:
        pairs = [(rnn[0], g) for g in gs if g.key in GEMM]
        recs, gs = [r for r in recs if canon(r[0]) != "rnn"], [g for g in gs if g.key not in GEMM]
        out_groups = [g for g in gs if any(o in outputs or s in outputs for o, s in g.results)]
        pairs += [(rnn[0], g) for g in out_groups]
        gs = [g for g in gs if g not in out_groups]
        rnn_cells = len(gs)
        gs = []
    else:
        rnn_cells = 0
        a, b = [canon(r[0]) for r in recs], [g.key for g in gs]
        sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
        pairs, matched_r, matched_g = [], set(), set()
        for blk in sm.get_matching_blocks():
            for k in range(blk.size):
                pairs.append((recs[blk.a + k], gs[blk.b + k]))
                matched_r.add(blk.a + k)
                matched_g.add(blk.b + k)
        recs = [r for i, r in enumerate(recs) if i not in matched_r]
        gs = [g for i, g in enumerate(gs) if i not in matched_g]
    for rec, g in pairs:
        stats["compared"] += 1
        why = compare_op(model, rec, g, values, dtype)
        if why is None:
            stats["matched"] += 1
            continue
        reason = deliberate(model, canon(rec[0]), dtype)
        if reason:
            stats["deliberate"] += 1
            report.append(("deliberate", why, reason))
        else:
            stats["failed"] += 1
            report.append(("fail", why, None))
    # Records left without an aotc op: each named, with the reason, or a
    # failure (the rebuilt model is not the recorded one).
    major = int(torch.__version__.split(".")[0])
    for r in recs:
        stats["uncompared"] += 1
        what = f"{model} {PRECISION[dtype]}: record {r[0]} {','.join(r[1])} -> {','.join(r[2])}"
        why = next((s for o, s in skip_ops if canon(r[0]) in o), None) or SPELLED.get((canon(r[0]), major))
        if why is None and skip_ops:
            why = "no aotc op aligned with it, in the model without " + ", ".join(sorted(o for ops, _ in skip_ops for o in ops))
        report.append(("uncompared", what, why) if why else ("fail", what + ": no aotc op aligned with it", None))
    # aotc ops without a record (another spelling): checked against every
    # forward signature the records hold for the op, where they hold one.
    for g in gs:
        sigs = [s[:-len(" (forward)")] for k, v in summary.items() if canon(k) == g.key for s in v
                if s.endswith(" (forward)")]
        what = f"{model} {PRECISION[dtype]}: aotc op {g.node} ({g.aten})"
        if not sigs:
            report.append(("extra", what, "no record of this op in any model's forward"))
            continue
        stats["summary"] += 1
        whys = [compare_op(model, ("aten::" + g.key, *[x.split(",") if x else [] for x in sig.split(" -> ")], "forward"),
                           g, values, dtype) for sig in sigs]
        if any(w is None for w in whys):
            report.append(("extra", what, "no record aligned with it; matches a recorded signature of the op"))
        elif deliberate(model, g.key, dtype):
            stats["deliberate"] += 1
            report.append(("deliberate", what + ": " + whys[0].split(": ", 2)[2], deliberate(model, g.key, dtype)))
        else:
            stats["failed"] += 1
            report.append(("fail", what + f": runs as none of the recorded signatures ({'; '.join(sigs)}): "
                           + whys[0].split(": ", 2)[2], None))
    if rnn_cells:
        report.append(("extra", f"{model} {PRECISION[dtype]}: {rnn_cells} aotc ops of the traced RNN cells "
                       "(gate pointwise ops)", "cuDNN runs them inside _cudnn_rnn: no record"))
    return stats


# ---------------------------------------------------------------------- main
def compile_ir(aotc, json_path, precision, art):
    r = subprocess.run([aotc, "-q", "compile", json_path, "-o", art, "--arch", "sm_90", "--precision", precision,
                        "--print-ir-after", "autocast"], capture_output=True, text=True)
    return r.returncode, r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aotc")
    ap.add_argument("--keep", help="write exports and IR here (default: a temporary directory)")
    ap.add_argument("--only", help="comma list of models")
    ap.add_argument("--verbose", action="store_true", help="print unaligned records and aotc ops")
    args = ap.parse_args()
    specs = {d: json.load(open(os.path.join(SPEC, f"autocast_cuda_{d}.json"))) for d in ("bf16", "f16")}
    models = list(specs["bf16"]["models"])
    if args.only:
        models = [m for m in models if m in args.only.split(",")]
    tmp = args.keep or tempfile.mkdtemp(prefix="autocast_spec.")
    os.makedirs(tmp, exist_ok=True)
    print(f"PyTorch {torch.__version__}; records: PyTorch {specs['bf16']['torch']} CUDA autocast, "
          f"backward {specs['bf16']['backward']}")
    fails, skipped, table = [], [], []
    warnings.filterwarnings("ignore")
    for model in models:
        skip_ops = []
        prefix = os.path.join(tmp, model)
        err = None
        try:
            export(*build(model), prefix)
        except Exception as e:  # PyTorch lacks an op of the model
            err = f"export: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        first = None
        if err is None:
            first = compile_ir(args.aotc, prefix + ".json", "bf16", prefix + ".bf16.art")
            if first[0]:
                err = first[1].strip().splitlines()[-1][:300]
        if err is not None and model in FALLBACK:
            op, ops = FALLBACK[model]
            print(f"note {model}: {err}")
            print(f"     compared without {op}: its records are left uncompared")
            skip_ops.append((ops, f"not in this model: {err}"))
            export(*build(model, "fallback"), prefix)
            first, err = None, None
        if err is not None:
            print(f"SKIP {model} under PyTorch {torch.__version__}: {err}")
            skipped.append(model)
            continue
        for dtype in ("bf16", "f16"):
            rc, text = first if dtype == "bf16" and first else \
                compile_ir(args.aotc, prefix + ".json", PRECISION[dtype], f"{prefix}.{dtype}.art")
            if rc:
                fails.append(f"{model} {PRECISION[dtype]}: aotc compile failed: {text.strip()[-300:]}")
                print("FAIL " + fails[-1])
                continue
            with open(f"{prefix}.{dtype}.ir", "w") as f:
                f.write(text)
            report = []
            st = compare_model(model, specs[dtype]["models"][model], specs[dtype]["ops"], text, dtype, skip_ops, report)
            table.append((model, PRECISION[dtype], st))
            status = "ok  " if st["failed"] == 0 else "FAIL"
            print(f"{status} {model} {PRECISION[dtype]}: {st['compared']} ops compared, {st['matched']} match, "
                  f"{st['deliberate']} deliberate, {st['failed']} differ; {st['uncompared']} records uncompared, "
                  f"{st['summary']} unaligned aotc ops checked against the per-op summary")
            for kind, what, why in report:
                if kind == "fail":
                    fails.append(what)
                    print("  FAIL " + what)
                elif kind == "deliberate":
                    print(f"  deliberate: {what}\n      ({why})")
                elif kind == "uncompared" or args.verbose:
                    print(f"  {kind}: {what}: {why}")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{sum(s['compared'] for _, _, s in table)} ops compared in {len(table)} model/dtype pairs; "
          f"{len(skipped)} models skipped ({', '.join(skipped) or 'none'}); {len(fails)} failures")
    if not table:
        print("FAIL nothing compared")
        return 1
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
