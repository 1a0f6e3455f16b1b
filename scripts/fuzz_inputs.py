#!/usr/bin/python3
"""fuzz_inputs.py AOTC SRCROOT [N]: bad input must never crash aotc.  Takes the
committed FX fixtures, damages each of N copies in one random way (deletes a
key, changes a value's type, puts in a huge, negative or non-finite number,
renames a reference, truncates the file), and runs `aotc compile` on it.
Every run must exit 0 or 1 (never a signal or an internal error), print at
most one line per problem, and, when it fails, leave no artifact and no
temporary directory.  Deterministic (seeded)."""
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile


def damage(doc, rng):
    """One random damage somewhere in the document."""
    paths = []

    def walk(x, path):
        paths.append(path)
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, path + [k])
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, path + [i])
    walk(doc, [])
    path = rng.choice(paths[1:])
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    key = path[-1]
    kind = rng.randrange(7)
    if kind == 0 and isinstance(parent, dict):
        del parent[key]
    elif kind == 1:
        parent[key] = rng.choice([None, True, "x", 3, -1, [], {}, 1.5])
    elif kind == 2:
        parent[key] = rng.choice([10 ** 15, -(10 ** 12), 2 ** 62])
    elif kind == 3:
        parent[key] = {"node": rng.choice(["nope", "x", ""])}
    elif kind == 4 and isinstance(parent[key], list) and parent[key]:
        parent[key].pop(rng.randrange(len(parent[key])))
    elif kind == 5 and isinstance(parent[key], str):
        parent[key] = parent[key] + "_x"
    else:
        parent[key] = [parent[key], parent[key]]
    return doc


def main():
    aotc, root = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 150
    rng = random.Random(1234)
    fixtures = sorted(glob.glob(os.path.join(root, "testdata", "fx", "*.json")) +
                      glob.glob(os.path.join(root, "testdata", "conformance", "*.json")))
    bad = 0
    tmp = tempfile.mkdtemp()
    try:
        for i in range(n):
            src = rng.choice(fixtures)
            case = os.path.join(tmp, f"case{i}")
            os.makedirs(case)
            with open(src) as f:
                text = f.read()
            if rng.random() < 0.1:
                text = text[:rng.randrange(len(text))]
            else:
                text = json.dumps(damage(json.loads(text), rng))
            model = os.path.join(case, os.path.basename(src))
            with open(model, "w") as f:
                f.write(text)
            weights = src[:-5] + ".safetensors"
            if os.path.exists(weights):
                shutil.copy(weights, case)
            out = os.path.join(case, "out")
            r = subprocess.run([aotc, "-q", "compile", model, "-o", out, "--arch", "sm_90", "--no-cache"],
                               capture_output=True, text=True, timeout=120)
            leftovers = [e for e in os.listdir(case) if e.startswith(".out.tmp")]
            ok = r.returncode in (0, 1) and "internal error" not in r.stderr and not leftovers
            if r.returncode == 1 and (os.path.exists(out) or not r.stderr.strip()):
                ok = False
            if not ok:
                bad += 1
                print(f"case {i} ({os.path.basename(src)}): rc={r.returncode} {r.stderr.strip()[:300]}")
            shutil.rmtree(case, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{n - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
