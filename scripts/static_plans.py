#!/usr/bin/python3
"""Static programs keep their kernels and steps: compiles every committed
fixture (and the exported zoo models, when a models directory is given) and
compares, per program, a digest of what the code generator decided -- the
kernels (names are hashes of their sources, Note [Kernel text]) with the
nodes they serve, and each program's buffers, steps and arena -- with
testdata/codegen/static_plans.txt.  The goldens were taken before sizes
became symbolic (issue 15), so a static program's code generation cannot
change unnoticed while dynamic shapes go in.

    /usr/bin/python3 scripts/static_plans.py AOTC SOURCE_ROOT [MODELS_DIR] [--update]

A changed line names the fixture; `aotc compile` it with both builds and
diff the artifacts (scripts/compare_builds.py) to see what moved.  A change
on purpose is re-recorded with --update, and the commit says why.
"""
import concurrent.futures
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

GOLDEN = os.path.join("testdata", "codegen", "static_plans.txt")
DIRS = ("fx", "conformance", "exporter", "random", "ops")
# The exported zoo models (testdata/models/gen_models.py).
MODELS = ("mlp_cross_entropy", "resnet18", "mobilenet_v2", "transformer")


def program(p):
    return {k: p[k] for k in ("buffers", "steps", "arena_bytes")}


def digest(manifest):
    kept = {
        "kernels": [[k["name"], k["nodes"]] for k in manifest["kernels"]],
        "forward": program(manifest["forward"]),
        "backward": program(manifest["backward"]),
    }
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def describe(aotc, model, work):
    name = os.path.basename(os.path.dirname(model)) + "/" + os.path.splitext(os.path.basename(model))[0]
    out = os.path.join(work, name.replace("/", "."))
    r = subprocess.run([aotc, "-q", "compile", model, "-o", out, "--arch", "sm_90", "-j", "1",
                        "--cache-dir", os.path.join(work, "cache")], capture_output=True, text=True)
    if r.returncode != 0:
        return name, "refused"
    with open(os.path.join(out, "manifest.json")) as f:
        m = json.load(f)
    launches = [sum(s["op"] == "launch" for s in m[p]["steps"]) for p in ("forward", "backward")]
    return name, f"kernels={len(m['kernels'])} launches={launches[0]}+{launches[1]} {digest(m)}"


def main():
    args = [a for a in sys.argv[1:] if a != "--update"]
    update = "--update" in sys.argv[1:]
    aotc, root = args[0], args[1]
    models = sorted(m for d in DIRS for m in glob.glob(os.path.join(root, "testdata", d, "*.json")))
    if len(args) > 2:
        for n in MODELS:
            path = os.path.join(args[2], n + ".json")
            if os.path.exists(path):
                models.append(path)
    with tempfile.TemporaryDirectory(prefix="aotc-static-") as work:
        with concurrent.futures.ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
            got = dict(pool.map(lambda m: describe(aotc, m, work), models))
    golden_path = os.path.join(root, GOLDEN)
    if update:
        with open(golden_path, "w") as f:
            for k in sorted(got):
                f.write(f"{k} {got[k]}\n")
        print(f"{golden_path}: {len(got)} programs recorded")
        return 0
    want = {}
    with open(golden_path) as f:
        for line in f:
            name, rest = line.rstrip("\n").split(" ", 1)
            want[name] = rest
    fails = 0
    for k in sorted(got):
        if k not in want:
            print(f"NEW: {k} {got[k]} (not in {GOLDEN}; record it with --update)")
            fails += 1
        elif got[k] != want[k]:
            print(f"CHANGED: {k}\n  golden: {want[k]}\n  now:    {got[k]}")
            fails += 1
    missing = [k for k in want if k not in got and not k.startswith("models/")]
    for k in missing:
        print(f"MISSING: {k} is in {GOLDEN} but was not compiled")
        fails += 1
    print(f"{len(got)} programs compared with {GOLDEN}, {fails} differ")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
