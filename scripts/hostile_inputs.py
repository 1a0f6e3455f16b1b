#!/usr/bin/python3
"""Bounded work on hostile input (issue 11, item 7): each input is handled in
time and memory proportional to its size, or refused with one line, within
a time limit and without a crash.  Inputs are generated here, at test time.

    /usr/bin/python3 scripts/hostile_inputs.py path/to/aotc
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

LIMIT_S = 120


def fx(nodes, inputs, outputs):
    return {"format": "aotc.fx_graph", "version": 2, "name": "hostile", "weights": "w.safetensors",
            "inputs": inputs, "nodes": nodes, "outputs": outputs}


def user(name, shape, rg=False):
    return {"name": name, "role": "user_input", "requires_grad": rg, "dtype": "float32", "shape": shape}


def main():
    aotc = sys.argv[1]
    work = tempfile.mkdtemp(prefix="aotc-hostile-")
    fails = 0

    def run(what, args, expect_rc, expect_text=None):
        nonlocal fails
        t0 = time.time()
        try:
            r = subprocess.run([aotc, "-q", *args], capture_output=True, text=True, timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            print(f"FAIL: {what}: still running after {LIMIT_S} s")
            fails += 1
            return
        dt = time.time() - t0
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        ok = r.returncode == expect_rc and (expect_text is None or any(expect_text in l for l in lines))
        ok = ok and (expect_rc == 0 or len(lines) >= 1) and r.returncode < 128
        print(("ok  " if ok else "FAIL") + f": {what}: exit {r.returncode} in {dt:.1f} s: {lines[:1]}")
        fails += not ok

    def write(name, doc):
        p = os.path.join(work, name)
        with open(p, "w") as f:
            json.dump(doc, f)
        return p

    # A graph of a million nodes: refused at once, before any work on it.
    n = 1_000_000
    nodes = [{"name": f"r{i}", "target": "aten.relu.default", "args": [{"node": f"r{i - 1}" if i else "x"}]} for i in range(n)]
    big = write("million.json", fx(nodes, [user("x", [4])], [{"node": f"r{n - 1}"}]))
    run("a graph of a million nodes", ["compile", big, "-o", os.path.join(work, "a1")], 1, "nodes; aotc compiles graphs of at most")

    # A ten-thousand-deep view chain with a mutation at its end: handled.
    d = 10_000
    nodes = []
    prev = "x"
    for i in range(d):
        nodes.append({"name": f"v{i}", "target": "aten.view.default", "args": [{"node": prev}, [4] if i % 2 else [2, 2]]})
        prev = f"v{i}"
    nodes.append({"name": "m", "target": "aten.mul_.Scalar", "args": [{"node": prev}, 2.0]})
    nodes.append({"name": "s", "target": "aten.sum.default", "args": [{"node": "x"}]})
    deep = write("deep_views.json", fx(nodes, [user("x", [4])], [{"node": "s"}]))
    run("a 10,000-deep view chain mutated at its end", ["compile", deep, "-o", os.path.join(work, "a2"), "--no-cache"], 0)

    # A tensor of 2^40 elements declared by the graph: compiles (no data is
    # touched), and the CPU runtimes refuse to run it in one line.
    huge = write("huge.json", fx([{"name": "r", "target": "aten.relu.default", "args": [{"node": "x"}]}],
                                 [user("x", [1 << 20, 1 << 20])], [{"node": "r"}]))
    run("a 2^40-element input compiles", ["compile", huge, "-o", os.path.join(work, "a3"), "--no-cache"], 0)
    st = os.path.join(work, "x.safetensors")
    h = json.dumps({"x": {"dtype": "F32", "shape": [1 << 20, 1 << 20], "data_offsets": [0, 4 << 40]}}).encode()
    with open(st, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
    run("running it is refused", ["run", os.path.join(work, "a3"), "--inputs", st, "--out", os.path.join(work, "r.safetensors")],
        1, "larger than the CPU runtimes hold")
    run("inspect reads its manifest", ["inspect", os.path.join(work, "a3")], 0)

    # A manifest pointing outside its directory: refused before anything is read.
    art = os.path.join(work, "a2")
    with open(os.path.join(art, "manifest.json")) as f:
        m = json.load(f)
    m["backward"]["ir"] = "/etc/shadow"
    with open(os.path.join(art, "manifest.json"), "w") as f:
        json.dump(m, f)
    run("a manifest pointing outside its directory", ["run", art, "--inputs", st, "--out", os.path.join(work, "r.safetensors")],
        1, "leaves the artifact directory")
    shutil.rmtree(work)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
