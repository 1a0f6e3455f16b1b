#!/usr/bin/env python3
"""Differential graph fuzzer (issue 48): random PyTorch programs
(scripts/difffuzz/gen.py) exported with tools/fx_export.py, compiled by aotc
under each partitioner, run on each backend, training and --forward-only,
and compared with eager (scripts/difffuzz/oracle.py).

  run.py AOTC --seed S --cases N [--minutes M] [--kinds plain mixed dynamic mutation]
         [--backends reference emulate] [--partitioners min-cut default] [--doors fx onnx] --work DIR
         [--ci] [--keep] [--quiet]
  run.py AOTC --replay FINDING_DIR/prog.py --work DIR     (re-run one saved case)

Case i (0 <= i < N) has seed S + i and kind KINDS[i % len(KINDS)]; the same
seed gives the same program under every Python and PyTorch version.  Each
finding is saved under DIR/findings/<class>/<kind>-<seed>/ (prog.py, the
standalone program; detail.txt, what differed; the export and eager's
reference).  A summary follows: cases by kind, discarded cases by reason,
refusals by message, findings by class, ops and dtypes covered.  --minutes
stops starting cases after M minutes.

--ci: the CTest slice (difffuzz_slice; --forward-only on the reference
backend only, to keep it short).  Exits 1 when a finding is not in
KNOWN_FINDINGS below, or when a listed one no longer shows up (fixed: take
it off the list), so known findings neither fail the slice nor pass silently.
"""
import argparse
import collections
import os
import re
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen  # noqa: E402
import oracle  # noqa: E402

# Note [Known fuzz findings]: (kind, seed) -> (finding class, cause), for the
# seeds of the CI slice (--ci) that hit a finding not yet fixed.  The slice
# expects each of them to show up with its class; a fixed one makes the
# slice fail until it is taken off this list.
KNOWN_FINDINGS = {
}
# A case whose program eager refuses (an in-place op on a value autograd
# saved, a view of a non-contiguous input) draws another program for the
# same seed, up to this many times.
TRIES = 4


def _norm(msg):
    """A refusal message with numbers and node names blurred, for counting."""
    msg = re.sub(r"/[^\s:]*prog\.json", "prog.json", msg)
    msg = re.sub(r"%[\w.]+", "%N", msg)
    return re.sub(r"\d+", "N", msg)[:160]


def save_finding(work, case_dir, case, res):
    dest = os.path.join(work, "findings", res.cls, f"{case.kind}-{case.seed}")
    if os.path.exists(dest):
        shutil.rmtree(dest)
    shutil.copytree(case_dir, dest, ignore=shutil.ignore_patterns("*.aotc"))
    with open(os.path.join(dest, "detail.txt"), "a") as f:
        f.write(f"seed {case.seed} kind {case.kind} class {res.cls}\n{res.detail}\n\n")
    return dest


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("aotc")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cases", type=int, default=20)
    ap.add_argument("--minutes", type=float)
    ap.add_argument("--kinds", nargs="+", default=list(gen.KINDS), choices=gen.KINDS)
    ap.add_argument("--backends", nargs="+", default=["reference", "emulate"])
    ap.add_argument("--partitioners", nargs="+", default=["min-cut", "default"])
    ap.add_argument("--doors", nargs="+", default=["fx", "onnx"], choices=["fx", "onnx"],
                    help="fx: the FX export against eager; onnx: plain and mixed cases also through ONNX against ONNX Runtime")
    ap.add_argument("--work", required=True)
    ap.add_argument("--timeout", type=float, default=180)
    ap.add_argument("--ci", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep every case's directory")
    ap.add_argument("--replay")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    aotc = os.path.abspath(a.aotc)
    if a.ci:
        shutil.rmtree(os.path.join(work, "findings"), ignore_errors=True)

    if a.replay:
        src = open(a.replay).read()
        kind = re.search(r"^KIND = '(\w+)'", src, re.M).group(1)
        seed = int(re.search(r"^SEED = (\d+)", src, re.M).group(1))
        case = gen.Case(seed, kind, src, [], [], None)
        cases = [case]
    else:
        cases = None

    t0 = time.time()
    by_kind = collections.Counter()
    discarded = collections.Counter()
    refusals = collections.Counter()
    findings = collections.Counter()
    ops, dtypes = collections.Counter(), collections.Counter()
    unexpected, seen_known = [], set()
    onnx_outcomes = collections.Counter()   # Note [ONNX door in the fuzzer]: ok, finding, refused, or why discarded
    n = len(cases) if cases else a.cases
    for i in range(n):
        if a.minutes and time.time() - t0 > a.minutes * 60:
            print(f"difffuzz: stopping after {a.minutes} minutes, {i} cases started", flush=True)
            break
        for attempt in range(1 if cases else TRIES):
            case = cases[i] if cases else gen.generate(a.seed + i, a.kinds[i % len(a.kinds)], attempt)
            case_dir = os.path.join(work, "cases", f"{case.kind}-{case.seed}")
            shutil.rmtree(case_dir, ignore_errors=True)
            os.makedirs(case_dir)
            res = oracle.eager_and_export(case_dir, case.source)
            if res and res.status == "discarded" and attempt + 1 < TRIES:
                discarded[f"{case.kind}: {res.cls} (retried)"] += 1
                continue
            break
        if res:
            results = [res]
        else:
            results = oracle.run_case(aotc, case_dir, a.partitioners, a.backends, a.timeout,
                                      ["reference"] if a.ci else None) if "fx" in a.doors else []
            if "onnx" in a.doors and case.kind in oracle.ONNX_KINDS:
                onnx = oracle.onnx_case(aotc, case_dir, a.backends, a.timeout)
                onnx_outcomes[onnx[0].cls if onnx[0].status == "discarded" else onnx[0].status] += 1
                results += [r for r in onnx if r.status != "discarded"]
            results = [r for r in results if r.status != "ok"] or [oracle.Result("ok")]
        statuses = {r.status for r in results}
        if "discarded" in statuses:
            discarded[f"{case.kind}: {results[0].cls}"] += 1
            if not a.quiet:
                print(f"[{i}] {case.kind}-{case.seed}: discarded ({results[0].cls}: {results[0].detail[:120]})",
                      flush=True)
            shutil.rmtree(case_dir, ignore_errors=True)
            continue
        by_kind[case.kind] += 1
        ops.update(case.ops)
        dtypes.update(case.dtypes)
        found = [r for r in results if r.status == "finding"]
        for r in results:
            if r.status == "refused":
                reason = _norm(r.refusal)
                refusals[reason] += 1
                if refusals[reason] <= 2:   # a sample of each reason, to read
                    d = os.path.join(work, "refusals", f"{case.kind}-{case.seed}")
                    shutil.rmtree(d, ignore_errors=True)
                    shutil.copytree(case_dir, d, ignore=shutil.ignore_patterns("*.aotc"))
                    with open(os.path.join(d, "detail.txt"), "a") as f:
                        f.write(r.detail + "\n")
        key = (case.kind, case.seed)
        for cls in sorted({r.cls for r in found}):   # findings count cases, not steps
            findings[cls] += 1
            known = KNOWN_FINDINGS.get(key)
            if known and known[0] == cls:
                seen_known.add(key)
            else:
                unexpected.append(f"{case.kind}-{case.seed}: {cls} ({os.path.join(work, 'findings', cls)})")
        for r in found:
            save_finding(work, case_dir, case, r)
            print(f"[{i}] {case.kind}-{case.seed}: FINDING {r.cls}: {r.detail[:600]}", flush=True)
        if not found and not a.quiet:
            tag = "refused: " + results[0].refusal[:150] if "refused" in statuses else "ok"
            print(f"[{i}] {case.kind}-{case.seed}: {tag}", flush=True)
        if not a.keep:
            shutil.rmtree(case_dir, ignore_errors=True)

    print(f"\ndifffuzz summary ({time.time() - t0:.0f} s, seeds {a.seed}..{a.seed + n - 1}, "
          f"backends {' '.join(a.backends)}, partitioners {' '.join(a.partitioners)}, torch {oracle.torch.__version__})")
    print(f"  cases run: {sum(by_kind.values())} " + " ".join(f"{k}={by_kind[k]}" for k in gen.KINDS))
    print(f"  discarded: {sum(discarded.values())} " + ", ".join(f"{k}={v}" for k, v in sorted(discarded.items())))
    print(f"  findings (cases): {sum(findings.values())} " + " ".join(f"{k}={v}" for k, v in sorted(findings.items())))
    if "onnx" in a.doors:
        print("  onnx door (plain and mixed cases): " + " ".join(f"{k}={v}" for k, v in sorted(onnx_outcomes.items())))
    print(f"  refusals: {sum(refusals.values())}")
    for msg, c in refusals.most_common(15):
        print(f"    {c:4d}  {msg}")
    print(f"  ops covered: {len(ops)}: " + " ".join(sorted(ops)))
    print(f"  dtypes covered: " + " ".join(sorted(dtypes)))
    pairs = sorted(o for o in ops if o.startswith(("cast:", "promote:")))
    print(f"  dtype pairs covered: {len(pairs)}")
    if a.ci:
        missing = [f"{k}-{s}: listed as {c} ({cause}) but did not show up: fixed? take it off KNOWN_FINDINGS"
                   for (k, s), (c, cause) in KNOWN_FINDINGS.items() if (k, s) not in seen_known
                   and a.seed <= s < a.seed + n and k in a.kinds]
        for m in unexpected + missing:
            print("FAIL " + m)
        return 1 if unexpected or missing else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
