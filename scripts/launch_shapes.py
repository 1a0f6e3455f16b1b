#!/usr/bin/python3
"""The launch-shape rule over every artifact the suite compiles (Note [Launch
shape], include/aotc/codegen/launch_shape.h): every committed fixture (the
directories scripts/static_plans.py compiles, and the ONNX models of
testdata/onnx), the exported zoo models of
the test suite (testdata/models/gen_models.py, float64 twins included), and
resnet18, mobilenet_v2 and the TransformerEncoder at the sizes of
scripts/bench_gpu.py (batch 32, 224x224; 4 layers of d 256, seq 128),
exported here once.  Each is compiled with `aotc compile
--check-launch-shapes --arch sm_90`, which refuses an artifact with a launch
that touches more than 1 MiB and has fewer blocks with work than the SMs
(132) or a thread looping over more than 1024 elements; the refusal names
every such launch.  Then the check is shown able to fail: the transformer
with --sm-count 100000 must be refused by the rule.

    /usr/bin/python3 scripts/launch_shapes.py AOTC SOURCE_ROOT WORK [MODELS_DIR]

Prints, per large model, the launches over 1 MiB with their fewest blocks
and longest serial loop, and every split reduction.
"""
import concurrent.futures
import glob
import hashlib
import json
import os
import subprocess
import sys

DIRS = ("fx", "conformance", "exporter", "random", "ops")
RULE = "launch-shape rule"


def export_gpu_models(root, out):
    """resnet18, mobilenet_v2 and the transformer at bench_gpu.py's sizes
    (FX JSON only: no references are needed to check shapes)."""
    os.makedirs(out, exist_ok=True)
    stamp = os.path.join(out, "stamp")
    with open(__file__, "rb") as f, open(os.path.join(root, "tools", "fx_export.py"), "rb") as g:
        digest = hashlib.sha256(f.read() + g.read()).hexdigest()
    names = ["resnet18", "mobilenet_v2", "transformer"]
    paths = [os.path.join(out, n + ".json") for n in names] + [os.path.join(out, "resnet18_onnx.onnx")]
    if os.path.exists(stamp) and open(stamp).read() == digest:
        return paths
    import torch
    import torchvision
    sys.path.insert(0, os.path.join(root, "tools"))
    from fx_export import export
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0, batch_first=True)
    models = [("resnet18", torchvision.models.resnet18(num_classes=1000).train(), (32, 3, 224, 224)),
              ("mobilenet_v2", torchvision.models.mobilenet_v2(num_classes=1000, dropout=0.0).train(), (32, 3, 224, 224)),
              ("transformer", torch.nn.TransformerEncoder(layer, num_layers=4).train(), (32, 128, 256))]
    for name, model, shape in models:
        export(model, (torch.randn(*shape),), os.path.join(out, name))
    # resnet18 through the ONNX front end (inference, PyTorch's exporter at opset 17).
    torch.onnx.export(torchvision.models.resnet18(num_classes=1000).eval(), (torch.randn(32, 3, 224, 224),), paths[-1], opset_version=17)
    with open(stamp, "w") as f:
        f.write(digest)
    return paths


def compile_one(aotc, model, work, extra=()):
    name = os.path.basename(os.path.dirname(model)) + "/" + os.path.splitext(os.path.basename(model))[0]
    out = os.path.join(work, "artifacts", name.replace("/", "."))
    r = subprocess.run([aotc, "-q", "compile", model, "-o", out, "--arch", "sm_90", "-j", "1", "--check-launch-shapes",
                        "--cache-dir", os.path.join(work, "cache"), *extra], capture_output=True, text=True)
    return name, out, r


def summary(out):
    with open(os.path.join(out, "manifest.json")) as f:
        m = json.load(f)
    lines = []
    for prog in ("forward", "backward"):
        large = [s for s in m[prog]["steps"] if s["op"] == "launch" and s["work"]["bytes"] > (1 << 20)]
        if large:
            fewest = min(s["work"]["blocks"] for s in large)
            longest = max(s["work"]["serial"] for s in large)
            lines.append(f"  {prog}: {len(large)} launches over 1 MiB, fewest blocks with work {fewest}, longest serial loop {longest}")
        for s in m[prog]["steps"]:
            if s["op"] == "launch" and s["work"]["split"] > 1:
                w = s["work"]
                lines.append(f"  {prog}: split reduction {s['kernel']}: grid {s['grid'][0]} x {s['block'][0]}, "
                             f"{w['blocks']} blocks with work, {w['split']} partials per output, {w['serial']} serial, "
                             f"{w['bytes'] / (1 << 20):.1f} MiB")
    return lines


def main():
    aotc, root, work = sys.argv[1], sys.argv[2], sys.argv[3]
    models = sorted(m for d in DIRS for m in glob.glob(os.path.join(root, "testdata", d, "*.json")))
    # The ONNX front end's models too: the rule is the code generator's, not a front end's.
    models += sorted(glob.glob(os.path.join(root, "testdata", "onnx", "*.onnx")))
    if len(sys.argv) > 4:
        models += sorted(glob.glob(os.path.join(sys.argv[4], "*.json")))
    gpu = export_gpu_models(root, os.path.join(work, "gpu_models"))
    models += gpu
    fails = refused = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
        results = list(pool.map(lambda m: compile_one(aotc, m, work), models))
    for name, out, r in results:
        if r.returncode == 0:
            continue
        if RULE in r.stderr:
            print(f"FAIL: {name}\n{r.stderr.strip()}")
            fails += 1
        else:
            refused += 1  # refused for another reason (static_plans.py records these as 'refused')
    for name, out, r in results:
        if r.returncode != 0 and name.startswith("gpu_models/"):
            print(f"FAIL: {name} (a bench-size model) was refused: {r.stderr.strip()[:300]}")
            fails += 1
        if r.returncode == 0 and name.startswith("gpu_models/"):
            print(name + ":")
            for line in summary(out):
                print(line)
    # The check can fail: no artifact fills a machine of 100000 SMs.
    _, _, r = compile_one(aotc, gpu[2], work, ("--sm-count", "100000"))
    if r.returncode == 0 or RULE not in r.stderr:
        print("FAIL: the transformer compiled for 100000 SMs was not refused by the launch-shape rule")
        fails += 1
    else:
        print("the transformer for 100000 SMs is refused, as it must be: " + r.stderr.strip().splitlines()[0][:200])
    print(f"{len(models)} models compiled with --check-launch-shapes, {refused} refused for other reasons, {fails} fail")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
