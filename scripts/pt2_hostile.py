#!/usr/bin/python3
"""Mutated .pt2 archives are compiled or refused in one line, never crash
(issue 46 item 7).  From the committed fixtures of testdata/pt2, a seeded
sweep writes archives whose JSON entries (the program, the weights config)
have values deleted or replaced by values of the wrong kind, and archives
with bytes flipped anywhere (libzip's CRC check must catch those in the
records); each must exit 0 or 1, and an exit 1 must print exactly one line
(a program with several unsupported ops prints one per op, which these
mutations do not make) and no internal error.

    /usr/bin/python3 scripts/pt2_hostile.py path/to/aotc [--cases N] [--seed S]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = ["mlp.pt2", "conv_bn_core.pt2", "composites.pt2", "losses.pt2", "mlp_dynamic.pt2"]
ODD = [None, 0, -1, 2 ** 62, -(2 ** 62), "x", [], {}, {"as_int": 2 ** 50}, {"as_tensor": {"name": "nope"}},
       {"as_expr": {"expr_str": "Symbol('u0')", "hint": {"as_int": 2}}}, 1.5, True]


def mutate_json(rng, j):
    paths = []

    def walk(x, p):
        paths.append(p)
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, p + [k])
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, p + [i])
    walk(j, [])
    if len(paths) < 2:
        return
    p = rng.choice(paths[1:])
    parent = j
    for k in p[:-1]:
        parent = parent[k]
    if isinstance(parent, dict) and rng.random() < 0.3:
        del parent[p[-1]]
    else:
        parent[p[-1]] = rng.choice(ODD)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aotc")
    ap.add_argument("--cases", type=int, default=120)
    ap.add_argument("--seed", type=int, default=46)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="aotc_pt2_hostile_")
    bad = 0
    for case in range(a.cases):
        src = os.path.join(ROOT, "testdata", "pt2", rng.choice(FIXTURES))
        out = os.path.join(work, "m.pt2")
        if case % 4 == 3:
            data = bytearray(open(src, "rb").read())
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            open(out, "wb").write(bytes(data))
        else:
            with zipfile.ZipFile(src) as z:
                entries = [(i.filename, z.read(i.filename)) for i in z.infolist()]
            target = rng.choice([n for n, _ in entries if n.endswith(".json")])
            with zipfile.ZipFile(out, "w") as z:
                for n, b in entries:
                    if n == target:
                        j = json.loads(b)
                        for _ in range(rng.randint(1, 3)):
                            mutate_json(rng, j)
                        b = json.dumps(j).encode()
                    z.writestr(n, b)
        art = os.path.join(work, f"art{case}")
        r = subprocess.run([a.aotc, "compile", out, "-o", art, "-q"], capture_output=True, text=True, timeout=120)
        lines = r.stderr.strip().splitlines()
        if r.returncode not in (0, 1) or "internal" in r.stderr or (r.returncode == 1 and len(lines) != 1):
            bad += 1
            keep = os.path.join(work, f"bad{case}.pt2")
            os.replace(out, keep)
            print(f"case {case} ({os.path.basename(src)}): exit {r.returncode}: {r.stderr.strip()[-300:]} (kept {keep})")
        subprocess.run(["rm", "-rf", art])
    print(f"{a.cases} mutated archives, {bad} crashed or misreported")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
