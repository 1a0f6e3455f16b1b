#!/usr/bin/env python3
"""Issue 45 item 1: the one-command GPU check, its driver (scripts/gpu_check.sh
prepares the bundle it runs from and prints the device call).

    gpu_check.py run AOTC LIBAOTC_RUNTIME OUT [--device cuda|emulate] [--quick]
                 [--budget SECONDS] [--models ...] [--precisions ...] [--iters N]
                 [--sample N] [--gpu NAME|FILE]
    gpu_check.py compile-row MODEL PRECISION --device D [--quick] [--iters N]   (a child)
    gpu_check.py selftest

`run` writes OUT/gpu_check.json and OUT/gpu_check.md, rewritten after every
step, so a run cut off at its time limit still returns what it measured:

  1. the fixtures (scripts/gpu_test.py: testdata/fx and testdata/ops) on the
     device against `--backend reference`, with CUDA graphs (the runtime's
     default) and without (AOTC_CUDA_GRAPHS=0);
  2. scripts/bench_gpu.py's rows, imported and called one by one (not
     rebuilt: its correctness gate, timings, peak memory and --profile): the
     training steps of resnet18, mobilenet_v2 and the TransformerEncoder in
     each precision, then the same models' inference, aotc beside eager; a
     CUDA graph capture that fails is reported and the row is measured again
     without graphs;
  3. per training step, `aotc inspect ART --roofline --json` (issue 45 item
     2):
     efficiency = the step's bound / its measured time (synchronized wall,
     CUDA-event gpu time and the profiler's kernel sum), and the 15 CUDA
     activities with the most time per step (bench_gpu.py's --profile),
     joined by kernel name to the roofline's steps, each with its own bound
     (the library's kernels have other names: they stay unjoined);
  4. bench_gpu.py's bandwidth rows (a device copy beside aotc's kernels);
  5. last and optional, torch.compile mode "reduce-overhead" on the training
     steps (bf16 first: issue 37's yardstick), each in a child process cut off
     when the budget runs out (cold compiles took 10-63 s per model on an
     H100); those skipped are listed, and the anchors recorded in
     docs/gpu-measurements.md serve for them.

`--device emulate --quick` runs the same driver on the CPU at tiny sizes
(ctest gpu_check_smoke), so that the host side cannot rot; its figures mean
nothing there.  `selftest` checks the roofline join and efficiencies on
hand-made figures.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

TOP = 15
# The order of the optional torch.compile rows: bf16 first, fastest compile first.
COMPILE_ORDER = [("bf16", "transformer"), ("bf16", "resnet18"), ("bf16", "mobilenet_v2"),
                 ("fp32", "transformer"), ("fp32", "resnet18"), ("fp32", "mobilenet_v2")]
# A torch.compile row is started only with this much budget left (seconds).
COMPILE_MIN_S = 40


class Report:
    """The results, rewritten as JSON and Markdown after every change."""

    def __init__(self, out, deadline):
        self.out, self.deadline, self.t0 = out, deadline, time.monotonic()
        self.data = {"fixtures": [], "training": [], "inference": [], "optimizer": [], "compile": [], "notes": []}

    def left(self):
        return self.deadline - time.monotonic()

    def note(self, msg):
        print("gpu_check: " + msg, flush=True)
        self.data["notes"].append(msg)
        self.save()

    def save(self):
        self.data["elapsed_s"] = time.monotonic() - self.t0
        for name, text in (("gpu_check.json", json.dumps(self.data, indent=1, default=str)), ("gpu_check.md", markdown(self.data))):
            tmp = os.path.join(self.out, name + ".tmp")
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, os.path.join(self.out, name))


# ---------------------------------------------------------------- roofline


def roofline(aotc, art, gpu=None):
    """The artifact's roofline: `aotc inspect ART --roofline --json [--gpu]`
    (Note [Roofline]); a failure is the row's roofline_error."""
    extra = ["--gpu", gpu] if gpu else []
    r = subprocess.run([aotc, "inspect", art, "--roofline", "--json", *extra], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError((r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1][:200])
    res = json.loads(r.stdout)
    res["source"] = "aotc inspect --roofline" + (f" --gpu {gpu}" if gpu else "")
    return res


KERNEL = re.compile(r"\bk_[0-9a-f]{16}\b")


def join_kernels(top, rf):
    """The profiler's top activities (bench_gpu.py's <impl>_top_kernels: name,
    ms and calls per step) joined by kernel name to the roofline's steps of
    both programs: each with the summed bound of the steps of that name, and
    bound / measured."""
    by_name = {}
    for prog, p in rf.get("programs", {}).items():
        for s in p.get("steps", []):
            e = by_name.setdefault(s["name"], {"bound_s": 0.0, "bytes": 0, "flops": 0, "steps": 0, "programs": set()})
            e["bound_s"] += s["bound_s"]
            e["bytes"] += s["bytes"]
            e["flops"] += s["flops"]
            e["steps"] += 1
            e["programs"].add(prog)
    rows = []
    for k in top or []:
        m = KERNEL.search(k["name"])
        row = {"name": k["name"], "ms": k["ms"], "calls": k["calls"]}
        hit = by_name.get(m.group(0)) if m else None
        if hit:
            row.update({"kernel": m.group(0), "bound_ms": hit["bound_s"] * 1e3, "bytes": hit["bytes"], "flops": hit["flops"],
                        "roofline_steps": hit["steps"], "programs": sorted(hit["programs"]),
                        "efficiency": hit["bound_s"] * 1e3 / k["ms"] if k["ms"] else None})
        else:
            row["joined"] = "no aotc launch of this name (a library's kernel, a copy or a memset)"
        rows.append(row)
    return rows


def efficiency(row, rf, program=None):
    """The roofline summary of a bench row: the bound of the step (both
    programs, or `program`) beside its measured times."""
    tot = rf["programs"][program] if program else rf["step"]
    bound_ms = tot["bound_s"] * 1e3
    res = {"source": rf.get("source"), "gpu": rf.get("gpu", {}).get("name"), "dynamic_at_hints": rf.get("dynamic_at_hints"),
           "bytes": tot["bytes"], "flops": tot["flops"], "bound_ms": bound_ms,
           "launches": tot.get("launches"), "library_calls": tot.get("library_calls")}
    for key, col in (("wall", "aotc_ms"), ("gpu", "aotc_gpu_ms"), ("kernels", "aotc_kernel_ms")):
        v = row.get(col)
        res[f"efficiency_{key}"] = bound_ms / v if v else None
    return res


# ---------------------------------------------------------------- steps


def run_child(cmd, timeout, env=None):
    """(exit status or "timeout", stdout, stderr) of cmd in its own process
    group, the whole group killed at the timeout (gpu_test.py's aotc
    processes, Inductor's compile workers)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        import signal
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        return "timeout", out, err


def fixtures(opts, rep):
    """scripts/gpu_test.py with CUDA graphs and without."""
    for graphs in (True, False):
        left = rep.left()
        if left < 20:
            rep.note(f"fixtures (graphs {'on' if graphs else 'off'}) skipped: {left:.0f} s left")
            continue
        env = dict(os.environ)
        if not graphs:
            env["AOTC_CUDA_GRAPHS"] = "0"
        cmd = [sys.executable, os.path.join(ROOT, "scripts", "gpu_test.py"), opts.aotc, ROOT,
               os.path.join(opts.work, "fixtures"), "--backend", opts.device]
        if opts.sample:
            cmd += ["--sample", str(opts.sample)]
        t0 = time.monotonic()
        res = {"graphs": graphs, "backend": opts.device}
        rc, so, se = run_child(cmd, min(opts.fixture_timeout, left - 10), env)
        out = so + se
        res["rc"] = rc
        res["seconds"] = time.monotonic() - t0
        res["failures"] = [ln[5:] for ln in out.splitlines() if ln.startswith("FAIL ")]
        m = re.search(r"gpu: (\d+)/(\d+) programs match", out)
        res["passed"], res["total"] = (int(m.group(1)), int(m.group(2))) if m else (None, None)
        if res["rc"] == 77:
            res["skipped"] = out.strip().splitlines()[-1] if out.strip() else "skipped"
        elif m is None:
            res["error"] = out.strip()[-600:]
        rep.data["fixtures"].append(res)
        rep.save()
        print(f"gpu_check: fixtures, graphs {'on' if graphs else 'off'}: "
              f"{res['passed']}/{res['total']} match ({res['seconds']:.0f} s, rc {res['rc']})", flush=True)


def bench_opts(opts):
    return argparse.Namespace(aotc=opts.aotc, lib=opts.lib, device=opts.device, quick=opts.quick, iters=opts.iters,
                              models=opts.models, profile=True, no_graphs=False, conv_layout="auto",
                              precisions=opts.precisions, compile_modes=[], json=None)


GRAPH_FAILURE = re.compile(r"capture|cuGraph")


def bench_row(rep, env, kind, fn):
    """Runs one bench_gpu.py row; a failure whose message speaks of graphs
    is retried without CUDA graphs.  Returns the row, or None."""
    import bench_gpu as bg
    results = {"training": [], "inference": [], "optimizer": []}
    try:
        fn(results)
    except Exception as e:  # noqa: BLE001 -- a row's failure is a result; the run goes on
        msg = bg.first_line(e)
        if env.graphs is None and GRAPH_FAILURE.search(msg):
            rep.note(f"{kind}: CUDA graph capture failed ({msg}); measured again without graphs")
            env.graphs = False
            try:
                fn(results)
            except Exception as e2:  # noqa: BLE001
                return {"error": bg.first_line(e2), "graphs": False}
            finally:
                env.graphs = None
            row = results[kind][-1]
            row["graphs"] = False
            row["graph_capture_error"] = msg
            return row
        return {"error": msg}
    if not results[kind]:
        return {"skipped": "bench_gpu.py gave no row (see the log)"}
    row = results[kind][-1]
    row["graphs"] = env.graphs is None
    return row


def preload_bundle_libs():
    """Run from the bundle (scripts/gpu_check.sh): the libraries the runtime
    library needs that the bundle carries (lib/runtime-needs), loaded before
    it so that the loader finds them by name: the machine's own copy where it
    has one, else the bundle's.  Returns (loaded, not loadable)."""
    import ctypes
    lib = os.environ.get("AOTC_BUNDLE_LIB")
    if not lib or not os.path.exists(os.path.join(lib, "runtime-needs")):
        return [], []
    with open(os.path.join(lib, "runtime-needs")) as f:
        pending = f.read().split()
    loaded = []
    while pending:
        rest = []
        for n in pending:
            for where, path in (("machine's", n), ("bundle's", os.path.join(lib, n))):
                try:
                    ctypes.CDLL(path)
                    loaded.append(f"{n} ({where})")
                    break
                except OSError:
                    pass
            else:
                rest.append(n)  # its own needs may come later in the list
        if rest == pending:
            break
        pending = rest
    return loaded, pending


def bench(opts, rep):
    import torch
    import bench_gpu as bg
    bopts = bench_opts(opts)
    device = torch.device("cuda" if opts.device == "cuda" else "cpu")
    bg.set_tf32(False)
    loaded, missing = preload_bundle_libs()
    rep.data["runtime_libraries"] = {"loaded": loaded, "not_loadable": missing}
    lib = bg.load_lib(opts.lib)
    env = bg.Env(bopts, lib, device)
    work = os.path.join(opts.work, "bench")
    os.makedirs(work, exist_ok=True)
    models = bg.models(bopts)
    for kind, row_fn in (("training", bg.training_row), ("inference", bg.inference_row), ("optimizer", bg.optimizer_row)):
        for precision in opts.precisions:
            for name, make, shape in models:
                if rep.left() < 15:
                    rep.note(f"{kind} {name} {precision} skipped: {rep.left():.0f} s left")
                    continue
                t0 = time.monotonic()
                print(f"gpu_check: {kind} {name} {precision} ...", flush=True)
                row = bench_row(rep, env, kind,
                                lambda res, n=name, mk=make, sh=shape, p=precision, f=row_fn: f(bopts, env, work, res, n, mk, sh, p))
                row.update({"model": name, "precision": precision, "seconds": time.monotonic() - t0})
                if "artifact" in row:
                    try:
                        rf = roofline(opts.aotc, row["artifact"], opts.gpu)
                        row["roofline"] = efficiency(row, rf, None if kind in ("training", "optimizer") else "forward")
                        row["top_kernels_joined"] = join_kernels(row.get("aotc_top_kernels"), rf)
                        row["roofline"]["largest"] = rf.get("largest", [])[:10]
                    except Exception as e:  # noqa: BLE001
                        row["roofline_error"] = bg.first_line(e)
                rep.data[kind].append(row)
                rep.save()
    if rep.left() > 20:
        try:
            res = {}
            bg.bandwidth(bopts, env, work, res)
            rep.data["bandwidth"] = {"copy_gbps": res.get("copy_gbps"), "rows": res.get("bandwidth")}
        except Exception as e:  # noqa: BLE001
            rep.data["bandwidth"] = {"error": bg.first_line(e)}
        rep.save()


def compile_rows(opts, rep):
    """torch.compile reduce-overhead, training, each row in a child cut off at the budget."""
    order = [(p, m) for p, m in COMPILE_ORDER if p in opts.precisions and (not opts.models or m in opts.models)]
    if opts.device != "cuda":
        order = order[:1]  # the emulate device: the child's plumbing only (it measures nothing there)
    for precision, model in order:
        left = rep.left()
        if left < COMPILE_MIN_S and opts.device == "cuda":
            rep.data["compile"].append({"model": model, "precision": precision,
                                        "skipped": f"{left:.0f} s left (a cold reduce-overhead compile took 10-63 s per model on an H100)"})
            rep.save()
            continue
        cmd = [sys.executable, os.path.abspath(__file__), "compile-row", model, precision, "--device", opts.device, "--iters", str(opts.iters)]
        if opts.quick:
            cmd.append("--quick")
        t0 = time.monotonic()
        rc, so, se = run_child(cmd, max(5, left - 5))
        lines = [ln for ln in so.splitlines() if ln.startswith("{")]
        if rc == "timeout":
            row = {"skipped": f"cut off after {time.monotonic() - t0:.0f} s: the budget ran out"}
        else:
            row = json.loads(lines[-1]) if lines else {"error": (se.strip().splitlines() or [f"exit {rc}"])[-1][:300]}
        row.update({"model": model, "precision": precision, "seconds": time.monotonic() - t0})
        rep.data["compile"].append(row)
        rep.save()


def compile_row_main(argv):
    """The child: one training step under torch.compile(mode="reduce-overhead"), timed as bench_gpu.py times."""
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("precision")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args(argv)
    import torch
    import bench_gpu as bg
    if a.device != "cuda" or not hasattr(torch, "compile"):
        print(json.dumps({"skipped": f"torch.compile rows run on a GPU only (device {a.device}, PyTorch {torch.__version__})"}))
        return 0
    opts = argparse.Namespace(quick=a.quick, models=[a.model], iters=a.iters, no_graphs=False)
    device = torch.device("cuda")
    env = bg.Env(opts, None, device)
    bg.set_tf32(a.precision == "tf32")
    mode = bg.Mode(a.precision, device)
    (name, make, shape), = bg.models(opts)
    torch.manual_seed(0)
    model = make().to(device)
    x = torch.randn(*shape).to(device)
    with torch.no_grad(), mode.forward():
        g = torch.ones_like(model(x))
    compiled = bg.torch_compile(model, "reduce-overhead")

    def step():
        bg.cudagraph_step_begin()
        model.zero_grad(set_to_none=True)
        with mode.forward():
            out = compiled(x)
        out.backward(g)

    t0 = time.monotonic()
    step()
    torch.cuda.synchronize()
    cold = time.monotonic() - t0
    t = env.measure(step, a.iters)
    print(json.dumps({"compile_ro_ms": t["wall_ms"], "compile_ro_host_ms": t["host_ms"], "compile_ro_gpu_ms": t["gpu_ms"],
                      "compile_ro_first_step_s": cold, "compile_ro_peak_mib": env.eager_peak(step) / 2 ** 20}))
    return 0


# ---------------------------------------------------------------- report


def fmt(v, spec=".2f"):
    if v is None:
        return "-"
    if isinstance(v, (int, float)):
        return f"{v:{spec}}"
    return str(v)


def markdown(d):
    L = [f"# aotc GPU check: {d.get('device', '?')}", ""]
    L.append(f"PyTorch {d.get('torch')}, aotc {d.get('aotc_version', '?')}, device `{d.get('aotc_device')}`; "
             f"{fmt(d.get('elapsed_s'), '.0f')} s of a {fmt(d.get('budget_s'), '.0f')} s budget"
             + (" (--quick: figures mean nothing)" if d.get("quick") else "") + ".")
    if d.get("nvidia_smi"):
        L.append(f"`nvidia-smi -L`: {d['nvidia_smi']}")
    L += ["", "## Fixtures (scripts/gpu_test.py) against --backend reference", "",
          "| graphs | passed | failures | seconds |", "|---|---|---|---|"]
    for f in d["fixtures"]:
        fails = "; ".join(f.get("failures", [])[:8]) or f.get("skipped") or f.get("error", "")
        L.append(f"| {'on' if f['graphs'] else 'off'} | {fmt(f.get('passed'), 'd')}/{fmt(f.get('total'), 'd')} | {fails} | {fmt(f.get('seconds'), '.0f')} |")
    L += ["", "## Training steps (ms; medians; bound = the roofline's step, efficiency = bound / measured)", "",
          "| model | precision | aotc wall | aotc gpu | aotc kernels | eager wall | vs eager | bound | eff. wall | eff. kernels | "
          "launches + library | bytes GiB | aotc peak MiB | eager peak MiB | graphs | vs float64 (aotc / eager / limit) |",
          "|" + "---|" * 16]
    for r in d["training"]:
        if "error" in r or "skipped" in r:
            L.append(f"| {r['model']} | {r['precision']} | {r.get('error') or r.get('skipped')} |" + " |" * 14)
            continue
        rf = r.get("roofline", {})
        v = r.get("vs_float64") or {}
        L.append(f"| {r['model']} | {r['precision']} | {fmt(r.get('aotc_ms'))} | {fmt(r.get('aotc_gpu_ms'))} | {fmt(r.get('aotc_kernel_ms'))} | "
                 f"{fmt(r.get('eager_ms'))} | {fmt(r.get('speedup_vs_eager'))}x | {fmt(rf.get('bound_ms'), '.3f')} | "
                 f"{fmt(rf.get('efficiency_wall'), '.1%')} | {fmt(rf.get('efficiency_kernels'), '.1%')} | "
                 f"{fmt(rf.get('launches'), 'd')} + {fmt(rf.get('library_calls'), 'd')} | {fmt((rf.get('bytes') or 0) / 2**30)} | "
                 f"{fmt(r.get('aotc_peak_mib'), '.0f')} | {fmt(r.get('eager_peak_mib'), '.0f')} | {'on' if r.get('graphs') else 'OFF'} | "
                 f"{fmt(v.get('aotc'), '.1e')} / {fmt(v.get('eager'), '.1e')} / {fmt(v.get('limit'), '.1e')} ({v.get('tensor', '')}) |")
    sources = sorted({r["roofline"]["source"] for r in d["training"] + d["inference"] if "roofline" in r})
    if sources:
        L.append("")
        L.append("Roofline from: " + "; ".join(sources) + ".")
    L += ["", "## Inference (ONNX, forward; ms)", "",
          "| model | precision | aotc wall | aotc gpu | eager wall | vs eager | bound | eff. wall | aotc peak MiB | eager peak MiB |",
          "|" + "---|" * 10]
    for r in d["inference"]:
        if "error" in r or "skipped" in r:
            L.append(f"| {r['model']} | {r['precision']} | {r.get('error') or r.get('skipped')} |" + " |" * 8)
            continue
        rf = r.get("roofline", {})
        L.append(f"| {r['model']} | {r['precision']} | {fmt(r.get('aotc_ms'))} | {fmt(r.get('aotc_gpu_ms'))} | {fmt(r.get('eager_ms'))} | "
                 f"{fmt(r.get('speedup_vs_eager'))}x | {fmt(rf.get('bound_ms'), '.3f')} | {fmt(rf.get('efficiency_wall'), '.1%')} | "
                 f"{fmt(r.get('aotc_peak_mib'), '.0f')} | {fmt(r.get('eager_peak_mib'), '.0f')} |")
    L += ["", "## Training steps with the optimizer in the artifact (--optimizer adamw; eager: torch.optim.AdamW, fused on a GPU; ms)", "",
          "| model | precision | aotc wall | aotc gpu | eager wall | vs eager | launches + library | bytes GiB | first updates off by > lr/10 |",
          "|" + "---|" * 9]
    for r in d.get("optimizer", []):
        if "error" in r or "skipped" in r:
            L.append(f"| {r['model']} | {r['precision']} | {r.get('error') or r.get('skipped')} |" + " |" * 6)
            continue
        rf = r.get("roofline", {})
        L.append(f"| {r['model']} | {r['precision']} | {fmt(r.get('aotc_ms'))} | {fmt(r.get('aotc_gpu_ms'))} | {fmt(r.get('eager_ms'))} | "
                 f"{fmt(r.get('speedup_vs_eager'))}x | {fmt(rf.get('launches'), 'd')} + {fmt(rf.get('library_calls'), 'd')} | "
                 f"{fmt((rf.get('bytes') or 0) / 2**30)} | {fmt(r.get('update_mismatch'), '.3%')} |")
    L += ["", f"## The {TOP} CUDA activities with the most time per aotc training step, joined to the roofline", ""]
    for r in d["training"]:
        top = r.get("top_kernels_joined")
        if not top:
            continue
        L += [f"**{r['model']} {r['precision']}**", "", "| activity | ms/step | calls/step | bound ms | bound / measured | bytes MiB | GFLOP |",
              "|---|---|---|---|---|---|---|"]
        for k in top:
            L.append(f"| `{k['name'][:70]}` | {fmt(k['ms'], '.3f')} | {fmt(k['calls'], '.0f')} | {fmt(k.get('bound_ms'), '.3f')} | "
                     f"{fmt(k.get('efficiency'), '.1%')} | {fmt(k['bytes'] / 2**20 if 'bytes' in k else None, '.1f')} | "
                     f"{fmt(k['flops'] / 1e9 if 'flops' in k else None, '.2f')} |")
        L.append("")
    bw = d.get("bandwidth")
    if bw:
        L += ["## Bandwidth (bench_gpu.py)", ""]
        if "error" in bw:
            L.append(f"failed: {bw['error']}")
        else:
            L.append(f"device copy {fmt(bw.get('copy_gbps'), '.0f')} GB/s")
            for r in bw.get("rows") or []:
                L.append(f"- {r['kernel']}: aotc {r['aotc_gbps']:.0f} GB/s ({r['of_copy']:.0%} of copy), eager {r['eager_gbps']:.0f} GB/s")
        L.append("")
    L += ["## torch.compile reduce-overhead, training (last, optional)", "", "| model | precision | ms | first step s | note |", "|---|---|---|---|---|"]
    for r in d["compile"]:
        L.append(f"| {r['model']} | {r['precision']} | {fmt(r.get('compile_ro_ms'))} | {fmt(r.get('compile_ro_first_step_s'), '.1f')} | "
                 f"{r.get('skipped') or r.get('error') or ''} |")
    if d["notes"]:
        L += ["", "## Notes", ""] + [f"- {n}" for n in d["notes"]]
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------- main


def run_main(argv):
    ap = argparse.ArgumentParser(prog="gpu_check.py run")
    ap.add_argument("aotc")
    ap.add_argument("lib")
    ap.add_argument("out")
    ap.add_argument("--device", default="cuda", choices=["cuda", "emulate"])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget", type=float, default=330, help="seconds for everything (the device call's limit minus margin)")
    ap.add_argument("--models", nargs="*", default=[])
    ap.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--sample", type=int, default=0, help="run about N fixtures (0: all)")
    ap.add_argument("--fixture-timeout", type=float, default=75, help="seconds per fixture run (graphs on, off)")
    ap.add_argument("--gpu", help="aotc inspect --roofline --gpu (default: from the device's name)")
    ap.add_argument("--work", help="keep the artifacts here (default: a temporary directory)")
    ap.add_argument("--strict", action="store_true", help="exit 1 on any failed fixture, row or roofline (the host test)")
    opts = ap.parse_args(argv)
    opts.aotc, opts.lib = os.path.abspath(opts.aotc), os.path.abspath(opts.lib)
    os.makedirs(opts.out, exist_ok=True)
    rep = Report(opts.out, time.monotonic() + opts.budget)
    try:
        import torch
    except ImportError as e:
        rep.note(f"{sys.executable} has no PyTorch ({e}): nothing measured; set PYTHON to the python that has it")
        return 1
    if opts.device == "cuda" and not torch.cuda.is_available():
        rep.note("no usable GPU (torch.cuda.is_available() is false): nothing measured")
        return 77
    d = rep.data
    d.update({"device": torch.cuda.get_device_name() if opts.device == "cuda" else "cpu (emulate)", "torch": torch.__version__,
              "aotc_device": opts.device, "quick": opts.quick, "budget_s": opts.budget, "precisions": opts.precisions,
              "iters": opts.iters})
    r = subprocess.run([opts.aotc, "--version"], capture_output=True, text=True)
    d["aotc_version"] = (r.stdout.strip() or r.stderr.strip()).splitlines()[0] if (r.stdout or r.stderr).strip() else "?"
    try:
        d["nvidia_smi"] = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    if opts.gpu is None and opts.device == "cuda":
        name = d["device"]
        opts.gpu = "H200" if "H200" in name else "H100 PCIe" if ("H100" in name and "PCIe" in name) else "H100 SXM" if "H100" in name else None
    d["roofline_gpu"] = opts.gpu or "the artifact's arch default"
    rep.save()
    with tempfile.TemporaryDirectory(prefix="aotc-gpu-check-") as tmp:
        opts.work = opts.work or tmp
        for step in (fixtures, bench, compile_rows):
            try:
                step(opts, rep)
            except Exception as e:  # noqa: BLE001 -- the next step still runs
                import traceback
                traceback.print_exc()
                rep.note(f"{step.__name__} failed: {type(e).__name__}: {str(e).strip()[:300]}")
    rep.save()
    print(markdown(rep.data))
    if opts.strict:
        problems = strict_problems(rep.data)
        for pr in problems:
            print("FAIL " + pr)
        return 1 if problems else 0
    return 0


def strict_problems(d):
    """--strict (the host test): what makes a run a failure."""
    problems = [f"{n}" for n in d["notes"] if "failed" in n]
    for f in d["fixtures"]:
        if f.get("rc") != 0 or f.get("passed") is None or f["passed"] != f["total"]:
            problems.append(f"fixtures (graphs {'on' if f['graphs'] else 'off'}): {f.get('passed')}/{f.get('total')}, rc {f.get('rc')}: "
                            + "; ".join(f.get("failures", [])[:3]) + f.get("error", ""))
    if len(d["fixtures"]) != 2:
        problems.append(f"{len(d['fixtures'])} fixture runs, not 2")
    for kind in ("training", "inference"):
        for r in d[kind]:
            if "error" in r or "roofline_error" in r:
                problems.append(f"{kind} {r['model']} {r['precision']}: {r.get('error') or r.get('roofline_error')}")
            elif "skipped" not in r and "roofline" not in r:
                problems.append(f"{kind} {r['model']} {r['precision']}: no roofline")
    if not any("roofline" in r for r in d["training"]):
        problems.append("no training row with its roofline")
    if not d["compile"]:
        problems.append("no torch.compile row (not even a skipped one)")
    return problems


def selftest():
    """The join and the efficiencies on a hand-made roofline (the schema of
    `aotc inspect --roofline --json`) and profile: every figure by hand."""
    rf = {"gpu": {"name": "H100 SXM"}, "source": "hand-made",
          "programs": {"forward": {"bytes": 3000, "flops": 10, "bound_s": 3e-3, "launches": 2, "library_calls": 1, "steps": [
              {"index": 0, "kind": "launch", "name": "k_00000000000000aa", "call": "", "math": "memory", "bytes": 1000, "flops": 0, "bound_s": 1e-3},
              {"index": 1, "kind": "gemm", "name": "mm", "call": "cublasGemmEx", "math": "fp32", "bytes": 1000, "flops": 10, "bound_s": 1e-3},
              {"index": 2, "kind": "launch", "name": "k_00000000000000bb", "call": "", "math": "memory", "bytes": 1000, "flops": 0, "bound_s": 1e-3}]},
              "backward": {"bytes": 1000, "flops": 0, "bound_s": 1e-3, "launches": 1, "library_calls": 0, "steps": [
                  {"index": 0, "kind": "launch", "name": "k_00000000000000aa", "call": "", "math": "memory", "bytes": 1000, "flops": 0, "bound_s": 1e-3}]}},
          "step": {"bytes": 4000, "flops": 10, "bound_s": 4e-3, "launches": 3, "library_calls": 1}}
    top = [{"name": "k_00000000000000aa", "ms": 4.0, "calls": 2}, {"name": "void cutlass_gemm<...>(Params)", "ms": 1.0, "calls": 1},
           {"name": "k_00000000000000bb(float*, long)", "ms": 0.5, "calls": 1}]
    rows = join_kernels(top, rf)
    errors = []

    def want(what, got, expected):
        if not (got == expected or (isinstance(expected, float) and got is not None and abs(got - expected) < 1e-12)):
            errors.append(f"{what}: {got!r}, want {expected!r}")

    want("aa bound (two steps, both programs)", rows[0].get("bound_ms"), 2.0)
    want("aa efficiency", rows[0].get("efficiency"), 0.5)
    want("aa programs", rows[0].get("programs"), ["backward", "forward"])
    want("library kernel unjoined", "bound_ms" in rows[1], False)
    want("bb joined through its signature", rows[2].get("kernel"), "k_00000000000000bb")
    want("bb efficiency", rows[2].get("efficiency"), 2.0)
    eff = efficiency({"aotc_ms": 8.0, "aotc_gpu_ms": 5.0, "aotc_kernel_ms": None}, rf)
    want("step bound", eff["bound_ms"], 4.0)
    want("efficiency wall", eff["efficiency_wall"], 0.5)
    want("efficiency gpu", eff["efficiency_gpu"], 0.8)
    want("efficiency kernels absent", eff["efficiency_kernels"], None)
    want("forward only", efficiency({"aotc_ms": 6.0}, rf, "forward")["efficiency_wall"], 0.5)
    md = markdown({"fixtures": [], "training": [dict({"model": "m", "precision": "fp32", "aotc_ms": 8.0}, roofline=eff, top_kernels_joined=rows)],
                   "inference": [], "compile": [], "notes": []})
    want("report shows the efficiency", "50.0%" in md, True)
    # bench_gpu.py's gate (Note [Correctness gate]) on made-up tensors: bf16
    # rounding passes however far aotc is from eager, a wrong program fails.
    import torch
    import bench_gpu as bg
    ref = torch.linspace(-2, 2, 101, dtype=torch.float64)
    eager = ref * 1.4  # eager's own distance from float64: 0.4 (relerr: max |diff| / max(max |ref|, 1))
    aotc = ref * 0.8  # 0.2 from float64, 0.43 from eager: a bf16 gate against eager would stop here
    worst = bg.gate("made-up", "bf16", [("t", aotc, eager, ref, 0.15)])
    want("gate: aotc's distance", round(worst["aotc"], 6), 0.2)
    want("gate: eager's distance", round(worst["eager"], 6), 0.4)
    want("gate: the limit", round(worst["limit"], 6), 1.6)
    for what, bad, e in (("a wrong program", -ref, ref * (1 + 1e-6)), ("NaN", ref * float("nan"), ref)):
        try:
            bg.gate("made-up", "fp32", [("t", bad, e, ref, 2e-2)])
            errors.append(f"gate: {what} passed")
        except RuntimeError as ex:
            want(f"gate: {what} is named", "a wrong program" in str(ex), True)
    for e in errors:
        print("FAIL " + e)
    print(f"gpu_check selftest: {'ok' if not errors else f'{len(errors)} failures'}")
    return 1 if errors else 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("run", "compile-row", "selftest"):
        raise SystemExit(__doc__)
    cmd, argv = sys.argv[1], sys.argv[2:]
    return run_main(argv) if cmd == "run" else compile_row_main(argv) if cmd == "compile-row" else selftest()


if __name__ == "__main__":
    sys.exit(main())
