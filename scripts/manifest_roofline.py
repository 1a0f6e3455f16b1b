#!/usr/bin/python3
"""The roofline of an artifact, from its manifest, in the schema of `aotc
inspect ART --roofline --json` (issue 45 item 2), for where that command is
not in the aotc at hand (an older build); scripts/gpu_check.py and
scripts/traffic_ideal.py use the command first and this only when it fails,
and say which one counted.

Counted per step of the forward and backward programs:
  launch  its `work.bytes` (the span its operands and outputs cover: static
          artifacts only), no FLOPs (math "memory");
  gemm    A (m x k), B (k x n) and C (m x n) in their types, C read as well
          when beta != 0, and the bias of a fused epilogue; 2mnk FLOPs
          (times `batch` for gemm_batched);
  conv    the two operands and the result of the call (x, w -> y; dy, w ->
          dx; x, dy -> dw), the result read as well when beta != 0;
          2 x (elements of the activation-sized result or operand) x (filter
          elements per output channel) FLOPs.
bound = max(bytes / bandwidth, FLOPs / peak of the math it runs in).  The
command's own figures win where they differ: it is the reference.  Its
library figures are the same; it counts launches tighter than their `work`
spans (which overcount strided views): resnet18's fp32 training step at
bench sizes is 6.26 GB by the command, 7.08 GB here, all of it in backward
launches.

    python3 scripts/manifest_roofline.py ART [--gpu NAME]   (prints the JSON)
"""
import json
import math
import os
import sys

# Datasheet figures (dense), bytes/s and FLOP/s: the GPUs the fallback knows.
GPUS = {
    "H100 SXM": {"bandwidth_Bps": 3.35e12, "peak_flops": {"fp32": 6.7e13, "tf32": 4.95e14, "bf16": 9.89e14, "fp16": 9.89e14}},
    "H100 PCIe": {"bandwidth_Bps": 2.0e12, "peak_flops": {"fp32": 5.1e13, "tf32": 3.78e14, "bf16": 7.56e14, "fp16": 7.56e14}},
    "H200": {"bandwidth_Bps": 4.8e12, "peak_flops": {"fp32": 6.7e13, "tf32": 4.95e14, "bf16": 9.89e14, "fp16": 9.89e14}},
    "A100 80GB": {"bandwidth_Bps": 2.039e12, "peak_flops": {"fp32": 1.95e13, "tf32": 1.56e14, "bf16": 3.12e14, "fp16": 3.12e14}},
}
ARCH_GPU = {"sm_90": "H100 SXM", "sm_80": "A100 80GB"}
SIZES = {"CUDA_R_32F": 4, "CUDA_R_64F": 8, "CUDA_R_16F": 2, "CUDA_R_16BF": 2,
         "CUDNN_DATA_FLOAT": 4, "CUDNN_DATA_DOUBLE": 8, "CUDNN_DATA_HALF": 2, "CUDNN_DATA_BFLOAT16": 2}
MATH = {"CUDA_R_16F": "fp16", "CUDA_R_16BF": "bf16", "CUDNN_DATA_HALF": "fp16", "CUDNN_DATA_BFLOAT16": "bf16"}
# cuDNN's calls: (the result, the two operands) of each.
CONV_OPERANDS = {"cudnnConvolutionForward": ("y", ("x", "w")), "cudnnConvolutionBackwardData": ("dx", ("dy", "w")),
                 "cudnnConvolutionBackwardFilter": ("dw", ("x", "dy"))}


def gpu_figures(name):
    """A GPU by name (a key of GPUS, or the path of a JSON file with the same
    fields and a "name")."""
    if name in GPUS:
        return dict(GPUS[name], name=name)
    if name and os.path.exists(name):
        with open(name) as f:
            return json.load(f)
    raise SystemExit(f"manifest_roofline: unknown GPU '{name}' (known: {', '.join(GPUS)}, or a JSON file)")


def _int(v):
    if not isinstance(v, int):
        raise ValueError("a dynamic size (symint): the fallback counts static artifacts only")
    return v


def _numel(dims):
    return math.prod(_int(d) for d in dims)


def step_figures(s, precision):
    """(kind, name, call, math, bytes, flops) of one manifest step."""
    op = s["op"]
    if op == "launch":
        return "launch", s["kernel"], "", "memory", _int(s.get("work", {}).get("bytes", 0)), 0
    if op in ("gemm", "gemm_batched"):
        m, n, k = _int(s["m"]), _int(s["n"]), _int(s["k"])
        batch = _int(s.get("batch", 1))
        a, b, c = SIZES[s["Atype"]], SIZES[s["Btype"]], SIZES[s["Ctype"]]
        nbytes = batch * (m * k * a + k * n * b + m * n * c * (2 if s["beta"] else 1))
        if "bias" in s:
            nbytes += m * c
        math_ = MATH.get(s["Atype"], "tf32" if precision == "tf32" else "fp32")
        return "gemm", s.get("node", ""), s["call"], math_, nbytes, 2 * m * n * k * batch
    if op == "conv":
        size = SIZES[s["dataType"]]
        result, operands = CONV_OPERANDS[s["call"]]
        els = {t: _numel(s[t]["dims"]) for t in (result,) + operands}
        nbytes = size * (sum(els.values()) + (els[result] if s["beta"] else 0))
        filt = "w" if "w" in els else "dw"
        out_act = {"cudnnConvolutionForward": "y", "cudnnConvolutionBackwardData": "dy", "cudnnConvolutionBackwardFilter": "dy"}[s["call"]]
        k_out = _int(s[filt]["dims"][0])
        flops = 2 * els[out_act] * (els[filt] // max(k_out, 1))
        math_ = MATH.get(s["dataType"], "tf32" if precision == "tf32" else "fp32")
        return "conv", s.get("node", ""), s["call"], math_, nbytes, flops
    raise ValueError(f"a step of kind '{op}' the fallback does not know")


def roofline(art, gpu=None):
    """The roofline JSON (the schema of `aotc inspect --roofline --json`) of an artifact directory."""
    with open(os.path.join(art, "manifest.json")) as f:
        m = json.load(f)
    precision = m.get("precision", "fp32")
    if gpu is None:
        archs = m.get("archs") or []
        gpu = next((ARCH_GPU[a] for a in archs if a in ARCH_GPU), "H100 SXM")
    g = gpu_figures(gpu)
    res = {"gpu": g, "dynamic_at_hints": False, "source": "manifest (scripts/manifest_roofline.py)", "programs": {}}
    every = []
    for prog in ("forward", "backward"):
        if prog not in m:
            continue
        steps = []
        for i, s in enumerate(m[prog]["steps"]):
            kind, name, call, math_, nbytes, flops = step_figures(s, precision)
            peak = g["peak_flops"].get(math_) if math_ != "memory" else None
            bound = max(nbytes / g["bandwidth_Bps"], flops / peak if peak else 0.0)
            st = {"index": i, "kind": kind, "name": name, "call": call, "math": math_, "bytes": nbytes, "flops": flops, "bound_s": bound}
            steps.append(st)
            every.append(dict(st, program=prog))
        res["programs"][prog] = {
            "bytes": sum(s["bytes"] for s in steps), "flops": sum(s["flops"] for s in steps),
            "bound_s": sum(s["bound_s"] for s in steps), "launches": sum(1 for s in steps if s["kind"] == "launch"),
            "library_calls": sum(1 for s in steps if s["kind"] != "launch"), "steps": steps}
    progs = res["programs"].values()
    res["step"] = {k: sum(p[k] for p in progs) for k in ("bytes", "flops", "bound_s", "launches", "library_calls")}
    res["largest"] = sorted(every, key=lambda s: -s["bound_s"])[:10]
    return res


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        raise SystemExit(__doc__)
    gpu = args[args.index("--gpu") + 1] if "--gpu" in args else None
    json.dump(roofline(args[0], gpu), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
