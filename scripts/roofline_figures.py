#!/usr/bin/python3
"""The traffic of a training step, held (issue 45 item 4): resnet18,
mobilenet_v2 and the TransformerEncoder at scripts/bench_gpu.py's sizes
(scripts/launch_shapes.py exports them), compiled for sm_90 in fp32 and
bf16, counted by `aotc inspect ART --roofline --json` (Note [Roofline]):
all bytes of a training step (launches and library operands), its launches
and library calls, its bound on an H100 SXM.  Compared with
testdata/codegen/roofline_figures.txt: a model whose bytes or launches move
by more than 2% fails until re-recorded (--update), and the commit says why
-- a cut is recorded as well as a loss, so the figures always are today's.
Also checked: a bf16 step has no more launches than the fp32 step.

    /usr/bin/python3 scripts/roofline_figures.py AOTC SOURCE_ROOT WORK [--update]
"""
import concurrent.futures
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launch_shapes import export_gpu_models  # noqa: E402

GOLDEN = os.path.join("testdata", "codegen", "roofline_figures.txt")
TOLERANCE = 0.02
PRECISIONS = ("fp32", "bf16")


def figures(aotc, model, precision, work):
    name = os.path.splitext(os.path.basename(model))[0]
    out = os.path.join(work, f"{name}.{precision}")
    r = subprocess.run([aotc, "-q", "compile", model, "-o", out, "--arch", "sm_90", "-j", "1", "--precision", precision,
                        "--cache-dir", os.path.join(work, "cache")], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"roofline_figures: {name} ({precision}) was refused: {r.stderr.strip()}")
    r = subprocess.run([aotc, "inspect", out, "--roofline", "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"roofline_figures: aotc inspect --roofline {out} failed: {r.stderr.strip()}")
    j = json.loads(r.stdout)
    if j["gpu"]["name"] != "H100 SXM":
        raise SystemExit(f"roofline_figures: an sm_90 artifact was reported on {j['gpu']['name']}, not the H100 SXM")
    f, b, s = j["programs"]["forward"], j["programs"]["backward"], j["step"]
    # The totals are the sums of the steps (the report adds nothing of its own).
    for prog in (f, b):
        if sum(st["bytes"] for st in prog["steps"]) != prog["bytes"]:
            raise SystemExit(f"roofline_figures: {name} ({precision}): a program's bytes are not the sum of its steps'")
    return (name, precision), {"bytes": s["bytes"], "launches": s["launches"], "library": s["library_calls"],
                               "forward_bytes": f["bytes"], "backward_bytes": b["bytes"], "bound_us": round(s["bound_s"] * 1e6)}


def line(key, v):
    return (f"{key[0]} {key[1]} bytes={v['bytes']} launches={v['launches']} library={v['library']} "
            f"forward_bytes={v['forward_bytes']} backward_bytes={v['backward_bytes']} bound_us={v['bound_us']}")


def parse(text):
    out = {}
    for ln in text.splitlines():
        if not ln.strip() or ln.startswith("#"):
            continue
        parts = ln.split()
        out[(parts[0], parts[1])] = {k: int(v) for k, v in (p.split("=") for p in parts[2:])}
    return out


def main():
    args = [a for a in sys.argv[1:] if a != "--update"]
    if len(args) != 3:
        raise SystemExit(__doc__)
    aotc, root, work = args
    models = export_gpu_models(root, os.path.join(work, "gpu_models"))[:3]
    jobs = [(m, p) for m in models for p in PRECISIONS]
    with concurrent.futures.ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
        got = dict(pool.map(lambda mp: figures(aotc, mp[0], mp[1], work), jobs))
    golden_path = os.path.join(root, GOLDEN)
    text = "".join(line(k, got[k]) + "\n" for k in sorted(got))
    for k in sorted(got):
        v = got[k]
        print(f"{k[0]:13s} {k[1]}: {v['bytes'] / 2**30:7.3f} GiB per training step, {v['launches']} launches, "
              f"{v['library']} library calls, bound {v['bound_us'] / 1e3:.3f} ms on an H100 SXM")
    fails = 0
    for name in sorted({k[0] for k in got}):
        if got[(name, "bf16")]["launches"] > got[(name, "fp32")]["launches"]:
            print(f"NOTE: {name}: bf16 launches {got[(name, 'bf16')]['launches']} > fp32's {got[(name, 'fp32')]['launches']} "
                  "(issue 45 item 4 wants no more)")
    if "--update" in sys.argv:
        with open(golden_path, "w") as f:
            f.write("# scripts/roofline_figures.py --update: a training step at bench sizes, sm_90 (Note [Roofline])\n" + text)
        print(f"recorded {golden_path}")
        return 0
    want = parse(open(golden_path).read()) if os.path.exists(golden_path) else {}
    for k in sorted(got):
        if k not in want:
            print(f"FAIL: {k[0]} {k[1]} has no recorded figures (run with --update)")
            fails += 1
            continue
        for field in ("bytes", "launches"):
            a, b = want[k][field], got[k][field]
            if abs(b - a) > TOLERANCE * max(a, 1):
                print(f"FAIL: {k[0]} {k[1]}: {field} {a} -> {b} ({(b - a) / max(a, 1):+.1%}); if on purpose, re-record with "
                      "--update and say why in the commit")
                fails += 1
    print(f"{len(got)} training steps counted, {fails} moved beyond {TOLERANCE:.0%}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
