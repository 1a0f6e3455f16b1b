#!/usr/bin/python3
"""Two compilers, one output: compiles every fixture with two aotc binaries
(one built by GCC, one by clang; or the builds before and after a refactor)
and checks that the artifacts are the same bytes, file by file (manifest, IR,
kernel sources, PTX, cubin), and that a model one refuses the other refuses
with the same message.  Both share one kernel cache (artifacts do not depend
on what the cache holds, which e2e_test checks), so the second compile of
each kernel is a cache hit.

The models: the FX fixtures (testdata/{fx,conformance,exporter,random,ops}),
the ONNX models of testdata/onnx and the torch.export archives of
testdata/pt2 (forward, and --train where it compiles)
and, with --onnx-conformance, every model of ONNX's backend test suite
(/usr/share/libonnx-testdata, as scripts/onnx_conformance finds it), compiled
as that script compiles it: its inputs given as --constant-inputs.

    /usr/bin/python3 scripts/compare_builds.py AOTC_A AOTC_B SOURCE_ROOT [--onnx-conformance] [-j N]
"""
import argparse
import filecmp
import glob
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor


def conformance_module(root):
    """scripts/onnx_conformance as a module (its case list and readers)."""
    path = os.path.join(root, "scripts", "onnx_conformance")
    loader = importlib.machinery.SourceFileLoader("onnx_conformance", path)
    spec = importlib.util.spec_from_loader("onnx_conformance", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def conformance_jobs(root, work, suite_root=None):
    """(name, model, extra args) for every backend-suite case: its inputs
    written as the --constant-inputs file scripts/onnx_conformance passes."""
    try:
        oc = conformance_module(root)
    except ImportError as e:  # numpy/onnx missing
        print(f"compare_builds: no ONNX conformance models ({e})", file=sys.stderr)
        return []
    suite_root = suite_root or oc.ROOT
    if not os.path.isdir(suite_root):
        print(f"compare_builds: {suite_root} is missing", file=sys.stderr)
        return []
    jobs = []
    for name, path in oc.cases(suite_root, None):
        model = os.path.join(path, "model.onnx")
        data = os.path.join(path, "test_data_set_0")
        args = []
        try:
            m = oc.onnx.load(model, load_external_data=False)
            inits = {t.name for t in m.graph.initializer}
            in_names = [i.name for i in m.graph.input if i.name not in inits]
            bf16 = {i.name for i in m.graph.input if i.type.tensor_type.elem_type == oc.onnx.TensorProto.BFLOAT16}
            inputs, k = {}, 0
            while os.path.exists(os.path.join(data, f"input_{k}.pb")) and k < len(in_names):
                a = oc.load_pb(os.path.join(data, f"input_{k}.pb"))
                if a.dtype not in oc.ST_DTYPES:
                    break
                inputs[in_names[k]] = a
                k += 1
            inp = os.path.join(work, "inputs", name.replace("/", "__") + ".safetensors")
            os.makedirs(os.path.dirname(inp), exist_ok=True)
            oc.write_safetensors(inp, inputs, bf16)
            args = ["--constant-inputs", inp]
        except Exception:  # noqa: BLE001  the model alone, as aotc sees it
            pass
        jobs.append(("onnx-conformance/" + name, model, args))
    return jobs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("root")
    ap.add_argument("--onnx-conformance", action="store_true", help="also every model of ONNX's backend test suite")
    ap.add_argument("--no-fx", action="store_true", help="ONNX models only")
    ap.add_argument("--onnx-suite", help="with --onnx-conformance: another backend suite's root (the pinned wheel's, as scripts/onnx_conformance --suite pinned writes it)")
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--cache-dir", help="the kernel cache both share (default: a fresh one)")
    args = ap.parse_args()
    a, b, root = args.a, args.b, args.root
    work = tempfile.mkdtemp(prefix="aotc-compare-")
    cache = args.cache_dir or os.path.join(work, "cache")
    jobs = []
    if not args.no_fx:
        for d in ("fx", "conformance", "exporter", "random", "ops"):
            for m in sorted(glob.glob(os.path.join(root, "testdata", d, "*.json"))):
                jobs.append((os.path.splitext(os.path.basename(m))[0], m, []))
    for m in sorted(glob.glob(os.path.join(root, "testdata", "onnx", "*.onnx"))):
        name = "onnx/" + os.path.splitext(os.path.basename(m))[0]
        jobs.append((name, m, []))
        jobs.append((name + "-train", m, ["--train"]))
    for m in sorted(glob.glob(os.path.join(root, "testdata", "pt2", "*.pt2"))):
        name = "pt2/" + os.path.splitext(os.path.basename(m))[0]
        jobs.append((name, m, []))
        jobs.append((name + "-train", m, ["--train"]))
    if args.onnx_conformance:
        jobs += conformance_jobs(root, work, args.onnx_suite)

    def one(job):
        name, m, extra = job
        outs = []
        for tag, exe in (("a", a), ("b", b)):
            out = os.path.join(work, tag, name)
            r = subprocess.run([exe, "-q", "compile", m, "-o", out, "--cache-dir", cache, "--arch", "sm_90"] + extra,
                               capture_output=True, text=True)
            outs.append((r.returncode, r.stderr, out))
        (ra, ea, oa), (rb, eb, ob) = outs
        if ra != rb or ea != eb:
            return "fail", f"FAIL: {name}: exit {ra} vs {rb}: {ea.strip()[:200]} | {eb.strip()[:200]}"
        if ra != 0:
            return "refused", None
        fa = sorted(os.path.relpath(os.path.join(d, f), oa) for d, _, fs in os.walk(oa) for f in fs)
        fb = sorted(os.path.relpath(os.path.join(d, f), ob) for d, _, fs in os.walk(ob) for f in fs)
        diff = [f for f in fa if f not in fb or not filecmp.cmp(os.path.join(oa, f), os.path.join(ob, f), shallow=False)]
        shutil.rmtree(oa, ignore_errors=True)
        shutil.rmtree(ob, ignore_errors=True)
        if fa != fb or diff:
            return "fail", f"FAIL: {name}: artifacts differ: {(diff or sorted(set(fa) ^ set(fb)))[:5]}"
        return "same", None

    counts = {"same": 0, "refused": 0, "fail": 0}
    kinds = {}
    with ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
        for job, (verdict, msg) in zip(jobs, pool.map(one, jobs)):
            counts[verdict] += 1
            kind = "fx" if not job[0].startswith(("onnx/", "onnx-conformance/", "pt2/")) else job[0].split("/")[0]
            kinds.setdefault(kind, {"same": 0, "refused": 0, "fail": 0})[verdict] += 1
            if msg:
                print(msg, flush=True)
    shutil.rmtree(work)
    for kind, c in sorted(kinds.items()):
        print(f"{kind}: {c['same']} artifacts identical, {c['refused']} refused alike (same message), {c['fail']} differ")
    compared = counts["same"] + counts["fail"]
    print(f"{compared} artifacts compared, {counts['fail']} differ")
    sys.exit(1 if counts["fail"] or compared < (0 if args.no_fx else 60) else 0)


if __name__ == "__main__":
    main()
