#!/usr/bin/python3
"""Two compilers, one output: compiles every fixture with two aotc binaries
(one built by GCC, one by clang) and checks that the artifacts are the same
bytes, file by file (manifest, IR, kernel sources, PTX, cubin).  Both share
one kernel cache (artifacts do not depend on what the cache holds, which
e2e_test checks), so the second compile of each kernel is a cache hit.

    /usr/bin/python3 scripts/compare_builds.py AOTC_A AOTC_B SOURCE_ROOT
"""
import filecmp
import glob
import os
import shutil
import subprocess
import sys
import tempfile


def main():
    a, b, root = sys.argv[1:4]
    models = sorted(glob.glob(os.path.join(root, "testdata", d, "*.json")) for d in ("fx", "conformance", "exporter", "random", "ops"))
    models = [m for group in models for m in group]
    work = tempfile.mkdtemp(prefix="aotc-compare-")
    cache = os.path.join(work, "cache")
    fails = compared = 0
    for m in models:
        name = os.path.splitext(os.path.basename(m))[0]
        outs = []
        for tag, exe in (("a", a), ("b", b)):
            out = os.path.join(work, tag, name)
            r = subprocess.run([exe, "-q", "compile", m, "-o", out, "--cache-dir", cache, "--arch", "sm_90"],
                               capture_output=True, text=True)
            outs.append((r.returncode, r.stderr, out))
        (ra, ea, oa), (rb, eb, ob) = outs
        if ra != rb or ea != eb:
            print(f"FAIL: {name}: exit {ra} vs {rb}: {ea.strip()[:200]} | {eb.strip()[:200]}")
            fails += 1
            continue
        if ra != 0:
            continue
        fa = sorted(os.path.relpath(os.path.join(d, f), oa) for d, _, fs in os.walk(oa) for f in fs)
        fb = sorted(os.path.relpath(os.path.join(d, f), ob) for d, _, fs in os.walk(ob) for f in fs)
        diff = [f for f in fa if f not in fb or not filecmp.cmp(os.path.join(oa, f), os.path.join(ob, f), shallow=False)]
        if fa != fb or diff:
            print(f"FAIL: {name}: artifacts differ: {(diff or sorted(set(fa) ^ set(fb)))[:5]}")
            fails += 1
        compared += 1
    shutil.rmtree(work)
    print(f"{compared} artifacts compared, {fails} differ")
    sys.exit(1 if fails or compared < 60 else 0)


if __name__ == "__main__":
    main()
