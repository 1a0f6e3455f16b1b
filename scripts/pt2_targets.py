#!/usr/bin/env python3
"""The targets torch.export writes for the zoo and the .pt2 test programs
(issue 46 item 3): every node target of the saved programs, in both dialects
(the training IR export() returns and the Core ATen of
ep.run_decompositions()), static and with a dynamic batch dim, as the archive
spells them (`torch.ops.aten.conv2d.default`, `torch.ops.higher_order.X`,
`_operator.mul`), higher-order ops' subgraphs included.

    pt2_targets.py --write testdata/pt2/exported_targets.txt   # every model (minutes)
    pt2_targets.py --check testdata/pt2/exported_targets.txt   # the fast subset (CTest)

--write exports every model of scripts/zoo_check.py and every program of
scripts/pt2_test.py and writes the sorted list, one target a line.
frontend_completeness_test checks that aotc's .pt2 door takes every listed
target (isSupportedPt2Target).  --check exports the fast subset (the test
programs and the zoo's small models) and fails naming each target missing
from the list: a new PyTorch that writes a new composite op fails this test
(ctest pt2_targets, label torch2) rather than a user; regenerate the list
with --write and make aotc take the new target.  Run under the pinned
PyTorch 2.x (scripts/setup-venv.sh).
"""
import argparse
import copy
import io
import json
import os
import sys
import time
import zipfile

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import pt2_test  # noqa: E402
import zoo_check  # noqa: E402

# The zoo models whose exports take seconds (CTest's subset, with every
# pt2_test program); between them they use every target family the zoo has
# but torchvision's heavier classifiers' same ops.
FAST_ZOO = ["instancenorm_prelu", "losses", "gpt2_block", "lstm_2layer", "gru_bidirectional", "unet", "audio_conv1d",
            "transformer_encoder", "vit_32", "swin_v2_small", "resnet18"]


def archive_targets(ep):
    """The node targets of the saved program, as torch.export.save writes them."""
    buf = io.BytesIO()
    torch.export.save(ep, buf)
    out = set()

    def walk(j):
        if isinstance(j, dict):
            if isinstance(j.get("target"), str) and "inputs" in j and "outputs" in j:
                out.add(j["target"])
            for v in j.values():
                walk(v)
        elif isinstance(j, list):
            for v in j:
                walk(v)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        for n in z.namelist():
            if "/models/" in n and n.endswith(".json"):
                walk(json.loads(z.read(n)))
    return out


def exports(module, args, batch_dims):
    """Yields (label, ExportedProgram): static, then dynamic where export
    accepts it, each in both dialects."""
    for dynamic in (False, True):
        kw = {}
        if dynamic:
            batch = torch.export.Dim("batch", min=1, max=64)
            kw["dynamic_shapes"] = batch_dims(batch)
        try:
            ep = torch.export.export(copy.deepcopy(module), args, **kw)
        except Exception as e:  # noqa: BLE001 -- torch.export's refusals have many types
            yield ("dynamic" if dynamic else "static") + " export refused: " + str(e).strip().splitlines()[0][:120], None
            continue
        tag = "dynamic" if dynamic else "static"
        yield tag + " training", ep
        yield tag + " aten", ep.run_decompositions()


def programs(fast, only=()):
    """(name, module, args, batch_dims) for the test programs and the zoo (or those named in `only`)."""
    for name in pt2_test.DEFAULT:
        if only and name not in only:
            continue
        ctor, make = pt2_test.PROGRAMS[name]
        torch.manual_seed(0)
        args = make(4)
        yield name, ctor().train(), args, (lambda b, args=args: torch.utils._pytree.tree_map(lambda _: {0: b}, args))
    for name in (FAST_ZOO if fast else list(zoo_check.MODELS)):
        if only and name not in only:
            continue
        torch.manual_seed(0)
        m, args = zoo_check.MODELS[name]()
        bd = zoo_check.batch_dim(name)
        yield name, zoo_check.deterministic(m).train(), args, (lambda b, args=args, bd=bd: tuple({bd: b} for _ in args))


def collect(fast, log, only=()):
    found = {}
    for name, m, args, batch_dims in programs(fast, only):
        t0 = time.time()
        for label, ep in exports(m, args, batch_dims):
            if ep is None:
                print(f"  {name}: {label}", file=log, flush=True)
                continue
            for t in archive_targets(ep):
                found.setdefault(t, f"{name} ({label})")
        print(f"  {name}: {time.time() - t0:.0f} s", file=log, flush=True)
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", metavar="FILE", help="export every model and write the list")
    g.add_argument("--check", metavar="FILE", help="export the fast subset; fail naming targets not in FILE")
    ap.add_argument("only", nargs="*", help="--check: only these programs or models")
    a = ap.parse_args()
    if a.write:
        found = collect(fast=False, log=sys.stdout)
        with open(a.write, "w") as f:
            f.write(f"# Written by scripts/pt2_targets.py --write (torch {torch.__version__.split('+')[0]}): every target torch.export\n"
                    "# writes for scripts/zoo_check.py's models and scripts/pt2_test.py's programs, both dialects,\n"
                    "# static and dynamic batch (Note [Exported targets]).\n")
            f.write("".join(t + "\n" for t in sorted(found)))
        print(f"wrote {len(found)} targets to {a.write}")
        return 0
    listed = {ln.strip() for ln in open(a.check) if ln.strip() and not ln.startswith("#")}
    found = collect(fast=True, log=sys.stdout, only=a.only)
    new = sorted(t for t in found if t not in listed)
    for t in new:
        print(f"new target {t} (first in {found[t]}): not in {a.check}; make aotc's .pt2 door take it, then "
              f"regenerate the list with scripts/pt2_targets.py --write")
    print(f"{len(found)} targets exported, {len(new)} not listed")
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
