#!/usr/bin/python3
"""compare_traces.py A B [--tol T] [--artifact ART] : two step traces of one
artifact (`aotc run --trace`, Note [Step trace]) -- e.g. --backend cuda against
--backend emulate, which runs the same kernel text on the host -- compared in
step order.  Prints the first step where a buffer parts by more than T
(max |a - b| / max |b|, default 1e-4; NaN matches NaN: --trace poisons the
arenas, so what no step wrote reads NaN on both), what that step is (from
ART's manifest.json when given), and the steps' worst buffers up to it.
Exits 0 when no step parts, 1 when one does, 2 when the traces do not hold the
same buffers.  The first step that parts is the one to look at: every buffer
it reads was equal after the steps before it."""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_safetensors import load  # noqa: E402


def key_order(k):
    phase, step, name = k.split(".", 2)
    return (0 if phase == "forward" else 1, int(step), name)


def distance(a, b):
    both_nan = np.isnan(a) & np.isnan(b)
    d = np.where(both_nan, 0.0, np.abs(a - b))
    if np.isnan(d).any():
        return float("inf")
    scale = np.nanmax(np.abs(b)) if b.size and not np.isnan(b).all() else 0.0
    return float(d.max() / max(scale, 1e-30)) if d.size else 0.0


def describe(manifest, phase, step):
    if manifest is None:
        return ""
    s = manifest[phase]["steps"][step]
    what = s.get("kernel") or s.get("call") or s.get("op")
    return f" ({s.get('op')} {what}{', node ' + s['node'] if s.get('node') else ''})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--artifact")
    o = ap.parse_args()
    A, B = load(o.a), load(o.b)
    if set(A) != set(B):
        only = sorted(set(A) ^ set(B))
        print(f"compare_traces: the traces hold different buffers ({len(only)}, e.g. {only[:3]}): not one artifact's steps")
        return 2
    manifest = None
    if o.artifact:
        with open(os.path.join(o.artifact, "manifest.json")) as f:
            manifest = json.load(f)
    worst = {}
    for k in sorted(A, key=key_order):
        phase, step, name = k.split(".", 2)
        if A[k].shape != B[k].shape:
            print(f"compare_traces: {k}: shapes {A[k].shape} and {B[k].shape}")
            return 2
        d = distance(A[k], B[k])
        at = (phase, int(step))
        if at not in worst or d > worst[at][0]:
            worst[at] = (d, name)
        if d > o.tol:
            print(f"first step that parts: {phase} step {step}{describe(manifest, phase, int(step))}: buffer {name} "
                  f"is {d:.3e} apart (tolerance {o.tol:g})")
            for (ph, st), (dd, nm) in list(worst.items())[-6:]:   # keys arrive in step order
                print(f"  {ph} step {st:4d}: worst {dd:.3e} ({nm})")
            return 1
    print(f"compare_traces: {len(A)} buffers over {len(worst)} steps agree within {o.tol:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
