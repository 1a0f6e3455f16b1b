#!/usr/bin/python3
"""Note [No debris], tested: `aotc compile` killed with SIGKILL at many
moments leaves no partial artifact, and the next compile into the same place
removes whatever temporaries the killed one left (beside the artifact and in
the kernel cache).  Replacing an existing artifact is atomic: killed at any
moment, the directory holds the old artifact or the new one, never neither.

    /usr/bin/python3 scripts/kill_test.py path/to/aotc SOURCE_ROOT
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def temporaries(d):
    found = []
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            if ".tmp" in n:
                found.append(os.path.join(root, n))
    return found


def complete(art):
    """An artifact directory is whole: its manifest parses and names files that exist."""
    with open(os.path.join(art, "manifest.json")) as f:
        m = json.load(f)
    for k in m["kernels"]:
        assert os.path.exists(os.path.join(art, k["source"])), k["source"]
    for prog in ("forward", "backward"):
        assert os.path.exists(os.path.join(art, m[prog]["ir"]))
    return m


def main():
    aotc, root = sys.argv[1], sys.argv[2]
    model = os.path.join(root, "testdata", "fx", "decompositions.json")
    other = os.path.join(root, "testdata", "fx", "mlp.json")
    work = tempfile.mkdtemp(prefix="aotc-kill-")
    out, cache = os.path.join(work, "out", "art"), os.path.join(work, "cache")
    fails = 0

    def compile_(m, extra=()):
        return subprocess.Popen([aotc, "-q", "compile", m, "-o", out, "--cache-dir", cache, "-j", "2", *extra],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def check(cond, what):
        nonlocal fails
        print(("ok  " if cond else "FAIL") + ": " + what)
        fails += not cond

    # 1. Fresh compiles killed at increasing moments: no artifact or a whole one.
    for delay in (0.02, 0.1, 0.3, 0.6, 1.0, 1.5, 2.5):
        shutil.rmtree(os.path.join(work, "out"), ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
        p = compile_(model)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        whole = not os.path.exists(out)
        if not whole:
            try:
                complete(out)
                whole = True
            except Exception:  # noqa: BLE001
                whole = False
        check(whole, f"killed after {delay}s: no artifact or a whole one")
        # The next compile into the same place and cache removes the debris.
        r = subprocess.run([aotc, "-q", "compile", other, "-o", out, "--cache-dir", cache, "-j", "2"])
        check(r.returncode == 0, f"killed after {delay}s: the next compile succeeds")
        left = temporaries(os.path.join(work, "out")) + temporaries(cache)
        check(not left, f"killed after {delay}s: the next compile leaves no temporaries ({left[:3]})")

    # 2. Replacing an artifact, killed at any moment: old or new, never neither.
    shutil.rmtree(os.path.join(work, "out"), ignore_errors=True)
    subprocess.run([aotc, "-q", "compile", other, "-o", out, "--no-cache"], check=True)
    for delay in (0.05, 0.3, 0.8, 1.5, 2.5, 3.5):
        p = compile_(model, ("--no-cache",))
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        try:
            name = complete(out)["model"]["name"]
            ok = name in ("mlp", "decompositions")
        except Exception:  # noqa: BLE001
            ok = False
        check(ok, f"replace killed after {delay}s: the artifact is the old or the new one")

    # 3. A trailing slash names the directory; a failed compile leaves no
    # directory it created.
    bad = os.path.join(root, "testdata", "errors", "inputs", "shape_mismatch.json")
    r = subprocess.run([aotc, "-q", "compile", bad, "-o", os.path.join(work, "new", "deeper") + "/"],
                       stderr=subprocess.DEVNULL)
    check(r.returncode == 1 and not os.path.exists(os.path.join(work, "new")), "a failed compile removes the directories it created")
    r = subprocess.run([aotc, "-q", "compile", other, "-o", os.path.join(work, "slash") + "/", "--no-cache"])
    check(r.returncode == 0 and os.path.exists(os.path.join(work, "slash", "manifest.json")), "-o DIR/ writes DIR")
    shutil.rmtree(work)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
