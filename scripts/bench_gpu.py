#!/usr/bin/env python3
"""GPU benchmark (issues 13, 33): aotc's artifacts on a GPU beside PyTorch on the same GPU.

    bench_gpu.py AOTC LIBAOTC_RUNTIME [--device cuda|emulate] [--quick] [--iters N]
                 [--models NAME ...] [--precisions fp32 tf32 bf16] [--profile] [--no-graphs]
                 [--compile-modes MODE ...] [--json OUT]

AOTC is the compiler, LIBAOTC_RUNTIME the deployment library
(build/src/libaotc_runtime.so): artifacts run through its C ABI
(aotc/runtime/c_api.h, by ctypes) on tensors PyTorch allocated, so aotc and
PyTorch time the same memory on the same device.  On a GPU every runtime is
opened on PyTorch's device ("cuda:<n>") and given PyTorch's current stream
(aotc_set_stream; CU_STREAM_LEGACY when that is the legacy default stream):
forward and backward enqueue behind PyTorch's work and return, and nothing
synchronizes between the two but the benchmark's own synchronize.  Every
figure is a ratio against a baseline measured in the same run:

  1. bandwidth: fused pointwise kernels (a chain of elementwise ops, and one
     reading two inputs), a row reduction and a softmax (a row group), each
     over 2^26 float32 elements: achieved GB/s (bytes the program must read
     and write / time) beside a device-to-device copy of the same bytes
     (torch's copy_), as a fraction of it (target: pointwise >= 80%);
  2. training: a step (forward + backward, grad output of ones) of resnet18,
     mobilenet_v2 (batch 32, 3x224x224) and a TransformerEncoder (batch 32,
     sequence 128, d_model 256, 4 layers), artifacts compiled from FX JSON,
     beside PyTorch eager, torch.compile (mode "default") and torch.compile
     mode "reduce-overhead" (Inductor's kernels replayed as CUDA graphs) where
     this PyTorch has torch.compile; each result checked against eager first
     (a wrong answer is no benchmark);
  3. inference: the same three models in eval mode (BatchNorm's running
     statistics set from the input's batch first, so that outputs are not
     ~0) exported to ONNX (torch.onnx.export's TorchScript exporter,
     dynamo=False where it has that argument, opset 17) and compiled by
     `aotc compile model.onnx` (forward only; the weights are the artifact's,
     only the input "x" is bound), a forward through the C ABI beside eager
     under torch.no_grad() and torch.compile reduce-overhead, checked against
     eager first;
  4. kernel launches per step: aotc's (the manifest's launches, GEMMs and
     convolutions) beside eager's (CUDA kernels in torch.profiler's trace).

Issue 37, `--precisions` (default: fp32 tf32 bf16, each in the same run):
rows 2 and 3 are measured once per precision, every implementation in the
same mode, and "vs eager" is against eager in that mode:
  fp32  aotc `--precision fp32`; PyTorch with TF32 off (the exact float32
        both compute);
  tf32  aotc `--precision tf32` (cuBLASLt CUBLAS_COMPUTE_32F_FAST_TF32,
        cuDNN tensor-op math); PyTorch with torch.backends.cuda.matmul.
        allow_tf32 and cudnn.allow_tf32 on;
  bf16  aotc `--precision bf16` (autocast's rewrite, master weights in
        float32); PyTorch's forward under torch.autocast(<device>, bfloat16)
        with the backward outside it (AMP as documented), eager and
        torch.compile (default and reduce-overhead: issue 37's yardstick,
        3.76 / 6.6 / 2.18 ms on an H100 for the three training steps).
  Each row is checked first (Note [Correctness gate]): aotc and eager in
  the same mode are each measured against a float64 run of the step (the
  output and every parameter's gradient); aotc fails only where it is more
  than 4x as far from float64 as eager is and past the mode's floor (fp32
  1e-2 / 2e-2 relative for output / gradient, tf32 5e-2 / 5e-2, bf16 1e-1 /
  1.5e-1): a wrong program is off by O(1), a mode's rounding is not.

Per model and per implementation, three times per step (medians of
`--iters` steps after 3 warm-up steps, 1 on emulate; the device synchronized
before each):
  wall  the synchronized step: from the call until torch.cuda.synchronize()
        returns (this is "the step's time" of the speedups);
  host  the wall time of the Python call that enqueues the step alone (no
        synchronization): what the step costs the calling thread;
  gpu   CUDA events recorded on PyTorch's current stream before and after
        the step: the device's elapsed time for it.
A step whose host time is close to its gpu time is launch-bound (the host
path, not the kernels, sets the pace).  Peak device memory per step:
  eager  torch.cuda.max_memory_allocated() over one step after
         reset_peak_memory_stats(): everything PyTorch's allocator holds at the
         peak (parameters, buffers, input, grad output, gradients, activations,
         library workspaces PyTorch allocates);
  aotc   the runtime allocates with cuMemAlloc, which PyTorch does not see:
         the drop of torch.cuda.mem_get_info()'s free memory from before the
         runtime is opened to after its first step (arenas, library
         workspaces, CUDA graphs, weights not bound, handles; rounded to the
         driver's pages, and device-wide: another process on the GPU skews
         it), printed beside that plus the bytes of the PyTorch tensors bound
         to it (the total comparable to eager's peak).
`--profile` runs 5 steps of each under torch.profiler and prints the sum of
the CUDA activity per step (kernels, including those cuBLAS and cuDNN launch
and those of a replayed CUDA graph, and memcpy/memset) beside the wall time.

Issue 33's targets on an H100 (for the training steps and the inference
rows): a steady, synchronized step's wall time <= 1.05x the sum of its
kernel and library times by the profiler (`--profile`'s "wall/kern"
column); each step no slower than eager PyTorch ("vs eager" >= 1x); peak
memory no higher than eager's (the "memory:" line's "x eager" <= 1).
`--no-graphs` runs aotc without CUDA graphs (aotc_set_graphs(rt, 0)), to
compare.  `--compile-modes` picks the torch.compile modes measured (none:
aotc and eager alone; scripts/gpu_check.py measures them last, time allowing).  `--json` writes every figure: per row of "training" and
"inference", <impl>_ms / _host_ms / _gpu_ms for impl aotc, eager, compile
(mode default) and compile_ro (reduce-overhead; <impl>_error where it
failed), speedup_vs_*, aotc_first_step_ms, launches, aotc_runtime_mib /
aotc_bound_mib / aotc_peak_mib beside eager_peak_mib (and compile*_peak_mib),
vs_float64 (the gate's closest call), artifact (its path, gone after the run
unless the caller's work directory keeps it), and with --profile
<impl>_kernel_ms, <impl>_wall_over_kernels and <impl>_top_kernels (the 15
CUDA activities with the most time per step, by name).

`--device emulate --quick` runs the same code on the CPU at tiny sizes (the
emulate device takes host pointers; gpu times, memory and profiles are then
absent), to check the script where there is no GPU; its figures mean
nothing.  Without a GPU (and without --device emulate) it prints why and
exits 77.
"""
import argparse
import copy
import ctypes
import inspect
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from fx_export import export  # noqa: E402

DTYPES = {torch.float32: 0, torch.float64: 1, torch.float16: 2, torch.bfloat16: 3, torch.int64: 4, torch.int32: 5,
          torch.bool: 6, torch.int8: 7, torch.int16: 8, torch.uint8: 9}
TORCH_DTYPES = {code: dt for dt, code in DTYPES.items()}
MAX_DIMS = 16
# --profile: the CUDA activities with the most time kept per row (<impl>_top_kernels).
TOP_KERNELS = 15


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64))]


class TensorView(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_DIMS), ("strides", ctypes.c_int64 * MAX_DIMS), ("offset", ctypes.c_int64)]


class Runtime:
    """One artifact opened through the C ABI."""

    def __init__(self, lib, artifact, device, stream=None, graphs=None):
        """device: aotc's device string; stream: a CUstream as an int (1 is
        CU_STREAM_LEGACY) to enqueue on, None for the runtime's own stream
        (forward and backward then synchronous); graphs: None leaves the
        runtime's default (CUDA graphs on)."""
        self.lib = lib
        rt = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        if lib.aotc_open(artifact.encode(), device.encode(), ctypes.byref(rt), err, len(err)):
            raise RuntimeError(f"aotc_open {artifact}: {err.value.decode()}")
        self.rt = rt
        self.keep = []  # shapes and strides the runtime points at
        self.bound = {}  # data pointer -> bytes of the caller's tensors bound (memory PyTorch counts)
        try:
            if stream is not None:
                self.check(lib.aotc_set_stream(rt, ctypes.c_void_p(stream)), "aotc_set_stream")
            if graphs is not None:
                self.check(lib.aotc_set_graphs(rt, int(graphs)), "aotc_set_graphs")
        except Exception:
            lib.aotc_close(rt)
            raise

    def check(self, rc, what):
        if rc:
            raise RuntimeError(f"{what}: {self.lib.aotc_error(self.rt).decode()}")

    def _tensor(self, t):
        shape = (ctypes.c_int64 * max(1, t.dim()))(*t.shape)
        strides = (ctypes.c_int64 * max(1, t.dim()))(*t.stride())
        self.keep += [shape, strides]
        self.bound[t.data_ptr()] = max(self.bound.get(t.data_ptr(), 0), t.numel() * t.element_size())
        return Tensor(t.data_ptr(), DTYPES[t.dtype], t.dim(), shape, strides)

    def inputs(self):
        return [self.lib.aotc_input_name(self.rt, i).decode() for i in range(self.lib.aotc_num_inputs(self.rt))]

    def bind(self, name, t):
        self.check(self.lib.aotc_bind(self.rt, name.encode(), ctypes.byref(self._tensor(t))), f"bind {name}")

    def bind_grad_output(self, i, t):
        self.check(self.lib.aotc_bind_grad_output(self.rt, i, ctypes.byref(self._tensor(t))), f"bind grad_output.{i}")

    def forward(self):
        self.check(self.lib.aotc_forward(self.rt), "forward")

    def backward(self):
        self.check(self.lib.aotc_backward(self.rt), "backward")

    def synchronize(self):
        """Waits for the runtime's work; raises on an index error of any step since the last wait."""
        if hasattr(self.lib, "aotc_synchronize"):
            self.check(self.lib.aotc_synchronize(self.rt), "synchronize")

    def bound_bytes(self):
        return sum(self.bound.values())

    def _view(self, v, like):
        """A copy of a tensor the runtime returned, in the dtype the runtime
        gave it (which may differ from eager's: a bf16 artifact's float32
        LayerNorm output beside CPU autocast's bf16), as a torch tensor on
        `like`'s device."""
        shape = [v.shape[i] for i in range(v.ndim)]
        strides = [v.strides[i] for i in range(v.ndim)]
        dtype = TORCH_DTYPES.get(v.dtype)
        if dtype is None:
            raise RuntimeError(f"the runtime returned a tensor of dtype code {v.dtype}, which this script does not know")
        if any(s == 0 for s in shape):
            return torch.empty(shape, dtype=dtype, device=like.device)
        span = v.offset + sum((s - 1) * st for s, st in zip(shape, strides)) + 1
        host = torch.empty(span, dtype=dtype)
        nbytes = span * host.element_size()
        if like.device.type == "cuda":
            self.check(self.lib.aotc_copy_to_host(self.rt, host.data_ptr(), v.data, nbytes), "copy to host")
        else:
            ctypes.memmove(host.data_ptr(), v.data, nbytes)
        return torch.as_strided(host, shape, strides, v.offset).clone().to(like.device)

    def output(self, i, like):
        v = TensorView()
        self.check(self.lib.aotc_output(self.rt, i, ctypes.byref(v)), f"output {i}")
        return self._view(v, like)

    def grad(self, name, like):
        v = TensorView()
        self.check(self.lib.aotc_grad(self.rt, name.encode(), ctypes.byref(v)), f"grad {name}")
        return self._view(v, like)

    def close(self):
        self.lib.aotc_close(self.rt)


def load_lib(path):
    lib = ctypes.CDLL(path)
    lib.aotc_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
    lib.aotc_error.restype = ctypes.c_char_p
    lib.aotc_error.argtypes = [ctypes.c_void_p]
    lib.aotc_close.argtypes = [ctypes.c_void_p]
    lib.aotc_num_inputs.restype = ctypes.c_size_t
    lib.aotc_num_inputs.argtypes = [ctypes.c_void_p]
    lib.aotc_input_name.restype = ctypes.c_char_p
    lib.aotc_input_name.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.aotc_bind.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    lib.aotc_bind_grad_output.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    lib.aotc_forward.argtypes = [ctypes.c_void_p]
    lib.aotc_backward.argtypes = [ctypes.c_void_p]
    lib.aotc_output.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    lib.aotc_grad.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    lib.aotc_copy_to_host.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    # C ABI version 2 (issue 33); an older library lacks them (then no stream is passed).
    if hasattr(lib, "aotc_set_stream"):
        lib.aotc_set_stream.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.aotc_synchronize.argtypes = [ctypes.c_void_p]
        lib.aotc_set_graphs.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


class Env:
    """The device, how aotc's runtimes are opened on it, and how steps are timed."""

    def __init__(self, opts, lib, device):
        self.opts, self.lib, self.device = opts, lib, device
        self.cuda = device.type == "cuda"
        # The runtime on PyTorch's own GPU.
        self.aotc_device = f"cuda:{torch.cuda.current_device()}" if self.cuda else "emulate"
        self.graphs = False if opts.no_graphs else None

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def stream(self):
        """PyTorch's current stream for aotc_set_stream: its CUstream, or
        CU_STREAM_LEGACY ((void*)1) where that is the legacy default stream
        (cuda_stream 0).  None on the emulate device (no stream there) or
        with a runtime library older than aotc_set_stream."""
        if not self.cuda or not hasattr(self.lib, "aotc_set_stream"):
            return None
        return torch.cuda.current_stream().cuda_stream or 1

    def open(self, art):
        return Runtime(self.lib, art, self.aotc_device, self.stream(), self.graphs)

    def free_bytes(self):
        """The device's free memory (cuMemGetInfo): sees what aotc's cuMemAlloc takes."""
        if not self.cuda:
            return None
        torch.cuda.synchronize()
        return torch.cuda.mem_get_info()[0]

    def measure(self, fn, iters):
        """Median wall (synchronized), host (the call alone) and gpu (CUDA
        events on the current stream) milliseconds per call of fn, after 3
        warm-up calls (1 on the emulate device, whose figures mean nothing)."""
        for _ in range(3 if self.cuda else 1):
            fn()
        self.sync()
        wall, host, gpu = [], [], []
        for _ in range(iters):
            if self.cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
            t0 = time.perf_counter()
            fn()
            t1 = time.perf_counter()
            if self.cuda:
                end.record()
            self.sync()
            t2 = time.perf_counter()
            wall.append(t2 - t0)
            host.append(t1 - t0)
            if self.cuda:
                gpu.append(start.elapsed_time(end) / 1e3)
        med = lambda v: statistics.median(v) * 1e3 if v else None  # noqa: E731
        return {"wall_ms": med(wall), "host_ms": med(host), "gpu_ms": med(gpu)}

    def eager_peak(self, fn):
        """PyTorch's peak allocated bytes over one call of fn (None off a GPU)."""
        if not self.cuda:
            return None
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        fn()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated()

    def profile(self, fn, top=TOP_KERNELS):
        """Sum of CUDA activity (kernels, memcpy, memset) per call of fn by
        torch.profiler (CUPTI sees aotc's kernels and library calls too) over
        5 calls after one, the number of those activities per call, and the
        `top` activities with the most time, summed by name: [{"name", "ms"
        (per call), "calls" (per call)}]; (None, None, []) off a GPU (where
        one call checks the code path)."""
        from torch.profiler import ProfilerActivity, profile
        acts = [ProfilerActivity.CUDA] if self.cuda else [ProfilerActivity.CPU]
        steps = 5 if self.cuda else 1
        if self.cuda:
            fn()
            self.sync()
        with profile(activities=acts) as prof:
            for _ in range(steps):
                fn()
            self.sync()
        ev = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        if not ev:
            return None, None, []
        by_name = {}
        for e in ev:
            us, calls = by_name.get(e.name, (0.0, 0))
            by_name[e.name] = (us + e.time_range.elapsed_us(), calls + 1)
        ranked = sorted(by_name.items(), key=lambda kv: -kv[1][0])[:top]
        return (sum(e.time_range.elapsed_us() for e in ev) / steps / 1e3, len(ev) / steps,
                [{"name": n, "ms": us / steps / 1e3, "calls": c / steps} for n, (us, c) in ranked])


def first_line(e):
    lines = str(e).strip().splitlines()
    return (lines[0] if lines else type(e).__name__)[:200]


def torch_compile(model, mode):
    """torch.compile(model, mode), on a fresh dynamo cache (one module compiled
    in two modes otherwise shares its cache entries)."""
    if hasattr(torch, "_dynamo") and hasattr(torch._dynamo, "reset"):
        torch._dynamo.reset()
    return torch.compile(model) if mode == "default" else torch.compile(model, mode=mode)


def cudagraph_step_begin():
    """Marks a new step for reduce-overhead's CUDA graph trees (PyTorch >= 2.1)."""
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "cudagraph_mark_step_begin"):
        compiler.cudagraph_mark_step_begin()


COMPILE_MODES = (("compile", "default"), ("compile_ro", "reduce-overhead"))

PRECISIONS = ("fp32", "tf32", "bf16")
# (output, gradient) tolerances against eager in the same mode, relative to
# the tensor's scale: room for the mode's rounding, far below a wrong answer.
PRECISION_TOLERANCE = {"fp32": (1e-2, 2e-2), "tf32": (5e-2, 5e-2), "bf16": (1e-1, 1.5e-1)}
# Note [Correctness gate]: a run stops only on a wrong program, never on a
# mode's rounding.  Eager's own bf16 autocast is 0.46 from float64 on
# resnet18's conv1.weight gradient at --quick sizes, so aotc's distance from
# eager bf16 says nothing by itself.  Each side -- aotc, and eager in the same
# mode -- is measured against a float64 run of the same step (the same
# parameters, buffers, input and grad output), per tensor (the output and
# every parameter's gradient), and aotc fails only when it is more than
# YARDSTICK times as far from float64 as eager is, and past the mode's floor
# (PRECISION_TOLERANCE, INFERENCE_TOLERANCE): scripts/precision_test.py's
# yardstick.  A wrong program is off by O(1); eager in the mode is not.
YARDSTICK = 4.0


def gate(title, precision, checks, err=None, report=0):
    """checks: (what, aotc's tensor, eager's in the mode, float64's, floor).
    Raises on the first tensor where aotc is past max(YARDSTICK x eager's
    distance from float64, floor); returns the closest call: {"tensor",
    "aotc", "eager", "limit"} (distances from float64).  report=N prints the
    N closest calls (every tensor is measured before the first failure is
    raised), each eager yardstick apart: the evidence for "ill-conditioned"
    against "wrong"."""
    err = err or relerr
    worst, failure, rows = None, None, []
    for what, got, eager, ref, floor in checks:
        # eager: one tensor, or several (eager under more than one cuDNN
        # setting): the yardstick is the farthest of them.
        eagers = eager if isinstance(eager, (list, tuple)) else [eager]
        ea, each = err(got, ref), [err(e, ref) for e in eagers]
        ee = max(each)
        limit = max(YARDSTICK * ee, floor)
        rows.append((ea / limit, what, ea, each, limit))
        if worst is None or ea / limit > worst["aotc"] / worst["limit"]:
            worst = {"tensor": what, "aotc": ea, "eager": ee, "limit": limit}
        if failure is None and not ea <= limit:  # NaN fails too
            failure = (f"{title}: {what} is {ea:.2e} from float64, eager {precision}'s {ee:.2e} "
                       f"(limit max({YARDSTICK:g}x eager's, {floor:g}) = {limit:.2e}): a wrong program")
    if report:
        print(f"  gate report, {title}: distance from float64 (aotc / limit, aotc, eager yardsticks, limit)")
        for ratio, what, ea, each, limit in sorted(rows, key=lambda r: -r[0] if r[0] == r[0] else -math.inf)[:report]:
            print(f"    {ratio:6.2f}  {ea:.2e}  [{', '.join(f'{e:.2e}' for e in each)}]  {limit:.2e}  {what}")
    if failure:
        raise RuntimeError(failure)
    return worst


def set_tf32(on):
    """PyTorch's allow_tf32 switches (matmul and cuDNN), as --precision tf32 / fp32 mean them."""
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


class Mode:
    """How PyTorch runs a forward in one precision mode: `with mode.forward():`
    wraps the forward (autocast for bf16; nothing otherwise); the TF32
    switches are set by set_tf32 before each mode's rows."""

    def __init__(self, precision, device):
        self.precision, self.device = precision, device

    def forward(self):
        import contextlib
        if self.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()


def timeit(fn, iters, sync):
    for _ in range(3):
        fn()
    sync()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def compile_artifact(aotc, module, args, work, name, precision="fp32", conv_layout="auto", extra=(), tag=""):
    prefix = os.path.join(work, name)
    if not os.path.exists(prefix + ".json"):
        export(module, args, prefix)
    art = f"{prefix}.{precision}.{conv_layout}{tag}.aotc"
    r = subprocess.run([aotc, "compile", prefix + ".json", "-o", art, "-q", "--precision", precision, "--conv-layout", conv_layout,
                        *extra], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"aotc compile {name} --precision {precision}: {r.stderr.strip()}")
    return art


def relerr(got, want):
    got, want = got.double(), want.double()
    return ((got - want).abs().max() / want.abs().max().clamp(min=1)).item()


def manifest_launches(art):
    m = json.load(open(os.path.join(art, "manifest.json")))
    return sum(len(m[p]["steps"]) for p in ("forward", "backward"))


class Pointwise(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x * 1.5 + 0.25).sigmoid() * 2.0


class Pointwise2(torch.nn.Module):
    def forward(self, x, y):
        return torch.tanh(x * y + x)


class RowSum(torch.nn.Module):
    def forward(self, x):
        return x.sum(dim=1)


class Softmax(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def bandwidth(opts, env, work, results):
    device, sync = env.device, env.sync
    n = 1 << (14 if opts.quick else 26)
    rows = 1 << (5 if opts.quick else 13)
    x = torch.randn(n, device=device)
    y = torch.randn(n, device=device)
    dst = torch.empty_like(x)
    copy_t = timeit(lambda: dst.copy_(x), opts.iters, sync)
    copy_bw = 2 * x.numel() * 4 / copy_t
    print(f"device-to-device copy: {copy_bw / 1e9:.1f} GB/s ({x.numel() * 4 / 2**20:.0f} MiB)")
    results["copy_gbps"] = copy_bw / 1e9
    cases = [("pointwise chain (5 ops, 1 in, 1 out)", Pointwise(), (x,), 2 * n * 4),
             ("pointwise, 2 inputs", Pointwise2(), (x, y), 3 * n * 4),
             ("row sum", RowSum(), (x.view(rows, -1),), n * 4 + rows * 4),
             ("softmax (row group)", Softmax(), (x.view(rows, -1),), 2 * n * 4)]
    results["bandwidth"] = []
    for title, mod, args, nbytes in cases:
        cpu_args = tuple(a.cpu() for a in args)
        art = compile_artifact(opts.aotc, mod, cpu_args, work, title.split()[0] + str(len(results["bandwidth"])))
        rt = env.open(art)
        for name, a in zip(rt.inputs(), args):
            rt.bind(name, a)
        rt.forward()
        sync()
        rt.synchronize()
        want = mod(*args)
        got = rt.output(0, want)
        # Each side against float64 (a row sum's rounding depends on its
        # order): aotc may be at most 4x as far as eager, past a floor.
        want64 = mod(*(a.double() for a in args))
        scale = want64.abs().max().item() or 1.0
        ea = (got.double() - want64).abs().max().item() / scale
        ee = (want.double() - want64).abs().max().item() / scale
        if not ea <= max(4 * ee, 1e-6):
            raise RuntimeError(f"{title}: aotc's result is {ea:.2e} from float64 (relative to its largest), eager's {ee:.2e}")
        t = timeit(rt.forward, opts.iters, sync)
        rt.synchronize()
        eager_t = timeit(lambda: mod(*args), opts.iters, sync)
        bw = nbytes / t
        row = {"kernel": title, "aotc_gbps": bw / 1e9, "of_copy": bw / copy_bw, "eager_gbps": nbytes / eager_t / 1e9}
        results["bandwidth"].append(row)
        print(f"{title:40s} aotc {bw / 1e9:7.1f} GB/s = {bw / copy_bw:5.1%} of copy   eager {nbytes / eager_t / 1e9:7.1f} GB/s")
        rt.close()


def eager_launches(step, device):
    if device.type != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile
    step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def models(opts):
    """(name, constructor (train mode), input shape) of the models benchmarked, filtered by --models."""
    import torchvision
    batch = 4 if opts.quick else 32
    side = 64 if opts.quick else 224
    seq, d = (8, 32) if opts.quick else (128, 256)

    def transformer():
        layer = torch.nn.TransformerEncoderLayer(d_model=d, nhead=4, dim_feedforward=4 * d, dropout=0.0, batch_first=True)
        return torch.nn.TransformerEncoder(layer, num_layers=2 if opts.quick else 4).train()

    all_models = [("resnet18", lambda: torchvision.models.resnet18(num_classes=1000).train(), (batch, 3, side, side)),
                  ("mobilenet_v2", lambda: torchvision.models.mobilenet_v2(num_classes=1000, dropout=0.0).train(),
                   (batch, 3, side, side)),
                  ("transformer", transformer, (batch, seq, d))]
    return [m for m in all_models if not opts.models or m[0] in opts.models]


def first_call_ms(env, rt, fn):
    """The first call of fn, synchronized, in ms: it prepares the runtime
    (arenas, algorithms, graph capture) and is not in the medians."""
    t0 = time.perf_counter()
    fn()
    env.sync()
    rt.synchronize()
    return (time.perf_counter() - t0) * 1e3


def aotc_and_eager_into(env, opts, row, art, rt, aotc_fn, eager_fn, free_before, free_after):
    """The aotc and eager timings of a row, its launches and its memory."""
    measure_into(env, opts, row, "aotc", aotc_fn)
    measure_into(env, opts, row, "eager", eager_fn)
    rt.synchronize()  # an index error in any timed step fails the run
    row["speedup_vs_eager"] = row["eager_ms"] / row["aotc_ms"]
    row["aotc_launches"] = manifest_launches(art)
    row["eager_launches"] = eager_launches(eager_fn, env.device)
    memory_into(env, row, rt, free_before, free_after, eager_fn)


def measure_into(env, opts, row, key, fn):
    """Times fn into row[key_ms] (synchronized wall), row[key_host_ms], row[key_gpu_ms]."""
    t = env.measure(fn, opts.iters)
    row[f"{key}_ms"], row[f"{key}_host_ms"], row[f"{key}_gpu_ms"] = t["wall_ms"], t["host_ms"], t["gpu_ms"]


def memory_into(env, row, rt, free_before, free_after, eager_fn):
    """Peak device memory of a step, aotc's beside eager's (MiB; absent off a GPU).
    aotc_runtime_mib: what the runtime took with cuMemAlloc from before it was
    opened to after its first step (free memory by cuMemGetInfo: arenas,
    library workspaces, CUDA graphs, weights not bound; PyTorch does not see
    it).  aotc_bound_mib: the PyTorch tensors bound to it (parameters,
    buffers, input, grad output).  aotc_peak_mib: their sum, comparable to
    eager_peak_mib: torch.cuda.max_memory_allocated() over one eager step
    (everything PyTorch's allocator holds at the step's peak)."""
    if free_before is None:
        return
    mib = 2.0 ** 20
    row["aotc_runtime_mib"] = (free_before - free_after) / mib
    row["aotc_bound_mib"] = rt.bound_bytes() / mib
    row["aotc_peak_mib"] = row["aotc_runtime_mib"] + row["aotc_bound_mib"]
    row["eager_peak_mib"] = env.eager_peak(eager_fn) / mib
    row["memory_vs_eager"] = row["aotc_peak_mib"] / row["eager_peak_mib"]


def compiled_into(env, opts, row, keys, make_step):
    """torch.compile rows (where this PyTorch has it, on a GPU): for each
    (key, mode), times make_step(mode)'s step, or records why it failed."""
    if not (hasattr(torch, "compile") and env.cuda):
        return
    for key, mode in COMPILE_MODES:
        if key not in keys or mode not in opts.compile_modes:
            continue
        try:
            step = make_step(mode)
            measure_into(env, opts, row, key, step)
            row[f"speedup_vs_{key}"] = row[f"{key}_ms"] / row["aotc_ms"]
            row[f"{key}_peak_mib"] = env.eager_peak(step) / 2.0 ** 20
        except Exception as e:  # torch.compile may lack a backend here, or fail on the model: say so
            row[f"{key}_error"] = first_line(e)
    if hasattr(torch, "_dynamo") and hasattr(torch._dynamo, "reset"):
        torch._dynamo.reset()


def profile_into(env, opts, row, impls):
    """--profile: CUDA activity per step by torch.profiler beside the wall time
    (issue 33's target: aotc's wall <= 1.05x its kernels)."""
    if not opts.profile:
        return
    for key, fn in impls:
        kernel_ms, n, top = env.profile(fn)
        row[f"{key}_kernel_ms"] = kernel_ms
        row[f"{key}_profiled_activities"] = n
        row[f"{key}_top_kernels"] = top
        row[f"{key}_wall_over_kernels"] = row[f"{key}_ms"] / kernel_ms if kernel_ms else None


LABELS = {"aotc": "aotc", "eager": "eager", "compile": "torch.compile", "compile_ro": "compile reduce-overhead"}


def print_row(title, row, keys):
    def f(v, width=9, spec=".2f"):
        return f"{v:{width}{spec}}" if v is not None else f"{'-':>{width}}"

    print(title)
    print(f"  {'':24s}{'wall ms':>9s}{'host ms':>9s}{'gpu ms':>9s}{'vs eager':>9s}"
          f"{'peak MiB':>10s}{'kern ms':>9s}{'wall/kern':>10s}")
    for key in keys:
        if f"{key}_error" in row:
            print(f"  {LABELS[key]:24s}failed: {row[key + '_error']}")
            continue
        if f"{key}_ms" not in row:
            continue
        peak = row.get(f"{key}_peak_mib")
        print(f"  {LABELS[key]:24s}{f(row[key + '_ms'])}{f(row[key + '_host_ms'])}{f(row[key + '_gpu_ms'])}"
              f"{f(row['eager_ms'] / row[key + '_ms'], 8)}x{f(peak, 10, '.1f')}"
              f"{f(row.get(key + '_kernel_ms'))}{f(row.get(key + '_wall_over_kernels'), 9)}" +
              ("x" if row.get(key + "_wall_over_kernels") is not None else ""))
    line = (f"  aotc's first step (prepares arenas, algorithms, graphs) {row['aotc_first_step_ms']:.2f} ms;"
            f"  launches/step aotc {row['aotc_launches']} (manifest: kernels + library calls)")
    if row.get("eager_launches") is not None:
        line += f"  eager {row['eager_launches']} (profiler)"
    print(line)
    if "aotc_runtime_mib" in row:
        print(f"  memory: aotc {row['aotc_peak_mib']:.1f} MiB = {row['aotc_runtime_mib']:.1f} MiB its own (cuMemAlloc; "
              f"free memory before open - after first step) + {row['aotc_bound_mib']:.1f} MiB PyTorch tensors bound; "
              f"eager peak {row['eager_peak_mib']:.1f} MiB (max_memory_allocated) -> {row['memory_vs_eager']:.2f}x eager")


def training(opts, env, work, results):
    results["training"] = []
    for name, make, shape in models(opts):
        for precision in opts.precisions:
            training_row(opts, env, work, results, name, make, shape, precision)


def training_row(opts, env, work, results, name, make, shape, precision):
    device = env.device
    mode = Mode(precision, device)
    set_tf32(precision == "tf32")
    torch.manual_seed(0)
    model = make()
    x_cpu = torch.randn(*shape)
    # The artifact is compiled from the CPU model (the exporter traces on the CPU).
    art = compile_artifact(opts.aotc, model, (x_cpu,), work, name, precision, opts.conv_layout)
    model = model.to(device)
    x = x_cpu.to(device)
    with torch.no_grad(), mode.forward():
        out = model(x)
    g = torch.ones_like(out)
    del out
    free_before = env.free_bytes()
    rt = env.open(art)
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    for inp in rt.inputs():
        rt.bind(inp, params.get(inp, buffers.get(inp, x)))
    rt.bind_grad_output(0, g)

    def aotc_step():
        # On a GPU both enqueue on PyTorch's current stream and return.
        rt.forward()
        rt.backward()

    # Check one step against eager before timing it (BatchNorm's running
    # statistics move with every step, as they do in eager).  This first
    # step prepares the runtime (arenas, algorithms, graph capture): the
    # device memory it took is read right after it.
    first_ms = first_call_ms(env, rt, aotc_step)
    free_after = env.free_bytes()
    ref = make().to(device)
    ref.load_state_dict(model.state_dict())
    with mode.forward():
        want = ref(x)
    want.backward(g)
    got = rt.output(0, want)
    # Note [Correctness gate]: aotc and eager in this mode, each against float64.
    ref64 = make().to(device).double()
    ref64.load_state_dict(model.state_dict())
    want64 = ref64(x.double())
    want64.backward(g.double())
    out_floor, grad_floor = PRECISION_TOLERANCE[precision]
    checks = [("the output", got, want, want64, out_floor)]
    eager_grads = {n: p.grad for n, p in ref.named_parameters()}
    # A second eager yardstick: cuDNN's deterministic algorithms (aotc takes
    # deterministic ones too).  An ill-conditioned gradient (train-mode
    # BatchNorm after a convolution, resnet18's layer4 at batch 32) lands
    # 4e-3 to 5e-2 from float64 depending on the summation order alone
    # (gpu_check 2026-11-27; on the CPU eager gives 5e-2 on layer4.1.conv1):
    # the yardstick is the farther of the two, as an order is no error.
    alt_grads = {}
    if device.type == "cuda":
        was = torch.backends.cudnn.deterministic
        torch.backends.cudnn.deterministic = True
        try:
            alt = make().to(device)
            alt.load_state_dict(model.state_dict())
            with mode.forward():
                alt_out = alt(x)
            alt_out.backward(g)
            alt_grads = {n: p.grad for n, p in alt.named_parameters()}
        finally:
            torch.backends.cudnn.deterministic = was
    for n, p in ref64.named_parameters():
        if p.grad is not None and eager_grads.get(n) is not None:
            eagers = [eager_grads[n]] + ([alt_grads[n]] if alt_grads.get(n) is not None else [])
            checks.append((f"the gradient of {n}", rt.grad(n, params[n]), eagers, p.grad, grad_floor))
    err = relerr(got, want)
    first = next(n for n, p in ref.named_parameters())
    gerr = relerr(rt.grad(first, params[first]), eager_grads[first])
    try:
        worst = gate(f"{name} ({precision})", precision, checks, report=getattr(opts, "gate_report", 0))
    except RuntimeError:
        rt.close()
        raise
    del ref, want, got, ref64, want64, checks, eager_grads, alt_grads

    def eager_step():
        model.zero_grad(set_to_none=True)
        with mode.forward():
            out = model(x)
        out.backward(g)

    # aotc_first_step_ms: the first step, which prepares the runtime (not in the medians).
    row = {"model": name, "precision": precision, "batch": shape[0], "output_relerr": err, "grad_relerr": gerr,
           "vs_float64": worst, "aotc_first_step_ms": first_ms, "artifact": art}
    aotc_and_eager_into(env, opts, row, art, rt, aotc_step, eager_step, free_before, free_after)

    def compiled_step(compile_mode):
        compiled = torch_compile(model, compile_mode)

        def step():
            cudagraph_step_begin()
            model.zero_grad(set_to_none=True)
            with mode.forward():
                out = compiled(x)
            out.backward(g)
        return step

    compiled_into(env, opts, row, ("compile", "compile_ro"), compiled_step)
    profile_into(env, opts, row, [("aotc", aotc_step), ("eager", eager_step)])
    rt.synchronize()
    results["training"].append(row)
    print_row(f"{name} training step, {precision} (batch {shape[0]}; output rel. error {err:.1e}, grad {gerr:.1e}); "
              f"x = speedup vs eager {precision}", row, ("aotc", "eager", "compile", "compile_ro"))
    rt.close()
    model.zero_grad(set_to_none=True)


# Issue 47: the whole training step with the optimizer in the artifact.
OPTIMIZER_LR = 1e-3


def optimizer_row(opts, env, work, results, name, make, shape, precision):
    """A training step with AdamW (lr 1e-3, weight decay 1e-2) compiled into the
    artifact (--optimizer adamw: forward, backward and update) beside eager's
    forward, backward and torch.optim.AdamW(fused=True) on a GPU (foreach on
    the CPU).  The checks after the first step: (1) aotc's update of every
    parameter is AdamW's of the artifact's own gradients (--keep-grads), element
    by element within lr/100 (the first step is -lr*wd*p - lr*g/(|g|+eps), so a
    wrong formula is off by about lr); (2) aotc's and eager's updates agree
    within lr/10 except where a gradient is at rounding-noise level and Adam's
    sign of it may differ: at most 1% of the elements in float32 and TF32; in
    bf16/fp16 the gradients' own rounding (which the training row judges
    against float64) flips many more of those signs, so there the fraction is
    reported, not held."""
    device = env.device
    mode = Mode(precision, device)
    set_tf32(precision == "tf32")
    torch.manual_seed(0)
    model = make()
    x_cpu = torch.randn(*shape)
    art = compile_artifact(opts.aotc, model, (x_cpu,), work, name, precision, opts.conv_layout,
                           extra=("--optimizer", "adamw", "--lr", str(OPTIMIZER_LR), "--keep-grads"), tag=".adamw")
    model = model.to(device)
    ref = make().to(device)
    ref.load_state_dict(model.state_dict())
    x = x_cpu.to(device)
    with torch.no_grad(), mode.forward():
        out = model(x)
    # A random incoming gradient: with ones, a sum over LayerNorm's output has
    # a gradient of zero in exact arithmetic (the transformer's last norm), and
    # Adam turns rounding noise into steps of +-lr.
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(device=device, dtype=out.dtype)
    del out
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    free_before = env.free_bytes()
    rt = env.open(art)
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    for inp in rt.inputs():
        if not inp.startswith("optim."):  # the optimizer's state and learning rate stay the runtime's
            rt.bind(inp, params.get(inp, buffers.get(inp, x)))
    rt.bind_grad_output(0, g)

    def aotc_step():
        rt.forward()
        rt.backward()

    first_ms = first_call_ms(env, rt, aotc_step)
    free_after = env.free_bytes()
    env.sync()
    rt.synchronize()
    fused = device.type == "cuda"
    opt = torch.optim.AdamW(ref.parameters(), lr=OPTIMIZER_LR, weight_decay=1e-2, **({"fused": True} if fused else {"foreach": True}))

    def eager_step():
        opt.zero_grad(set_to_none=True)
        with mode.forward():
            y = ref(x)
        y.backward(g)
        opt.step()

    eager_step()
    env.sync()
    worst, own_worst, total = 0, 0, 0
    with torch.no_grad():
        for n, p in ref.named_parameters():
            da = params[n].detach().double() - before[n].double()
            de = p.detach().double() - before[n].double()
            ga = rt.grad(n, params[n]).double()
            own = -OPTIMIZER_LR * 1e-2 * before[n].double() - OPTIMIZER_LR * ga / (ga.abs() + 1e-8)
            own_worst += int(((da - own).abs() > OPTIMIZER_LR / 100).sum().item())
            worst += int(((da - de).abs() > OPTIMIZER_LR / 10).sum().item())
            total += p.numel()
    off = worst / max(total, 1)
    if own_worst:
        rt.close()
        raise RuntimeError(f"{name} ({precision}, AdamW): {own_worst} elements of the parameters' first updates are not AdamW's of the "
                           "artifact's own gradients (within lr/100): a wrong program")
    if not off <= 0.01 and precision in ("fp32", "tf32"):
        rt.close()
        raise RuntimeError(f"{name} ({precision}, AdamW): {off:.2%} of the parameters' first updates differ from eager's by more than lr/10")
    row = {"model": name, "precision": precision, "batch": shape[0], "optimizer": "adamw", "update_mismatch": off, "keep_grads": True,
           "eager_optimizer": "AdamW(fused=True)" if fused else "AdamW(foreach=True)", "aotc_first_step_ms": first_ms, "artifact": art}
    aotc_and_eager_into(env, opts, row, art, rt, aotc_step, eager_step, free_before, free_after)
    profile_into(env, opts, row, [("aotc", aotc_step), ("eager", eager_step)])
    rt.synchronize()
    results.setdefault("optimizer", []).append(row)
    print_row(f"{name} training step with AdamW, {precision} (batch {shape[0]}; first updates off by > lr/10: {off:.3%}); "
              f"x = speedup vs eager {precision} with {row['eager_optimizer']}", row, ("aotc", "eager"))
    rt.close()


def calibrate(module, x):
    """Sets BatchNorm's running statistics to x's batch statistics (one
    train-mode forward with a cumulative average), then eval mode: a freshly
    initialised mobilenet_v2 in eval mode otherwise outputs values of 1e-9,
    which no error check can tell from zero."""
    bns = [(m, m.momentum) for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for m, _ in bns:
        m.reset_running_stats()
        m.momentum = None
    module.train()
    with torch.no_grad():
        module(x)
    for m, momentum in bns:
        m.momentum = momentum
    return module.eval()


def export_onnx(module, x_cpu, path):
    """The eval-mode module as ONNX by the TorchScript exporter at opset 17 (aotc
    reads opsets up to 17; PyTorch 2.x's dynamo exporter writes newer ones).
    Traced with grad enabled: TransformerEncoder takes its fused fast path
    (aten::_transformer_encoder_layer_fwd, which ONNX cannot express) only
    without grad."""
    kwargs = {}
    try:
        if "dynamo" in inspect.signature(torch.onnx.export).parameters:
            kwargs["dynamo"] = False
    except (TypeError, ValueError):
        pass
    torch.onnx.export(module, (x_cpu,), path, opset_version=17, input_names=["x"], output_names=["y"], **kwargs)


def inference(opts, env, work, results):
    results["inference"] = []
    for name, make, shape in models(opts):
        for precision in opts.precisions:
            inference_row(opts, env, work, results, name, make, shape, precision)


# Inference floors (Note [Correctness gate]), relative to the output's scale.
INFERENCE_TOLERANCE = {"fp32": 1e-3, "tf32": 5e-2, "bf16": 1e-1}


def scaled_err(got, want):
    """max |got - want| / max |want|, with no clamp at 1 as in training: eval outputs may be small."""
    got, want = got.double(), want.double()
    return ((got - want).abs().max() / want.abs().max().clamp(min=1e-30)).item()


def inference_row(opts, env, work, results, name, make, shape, precision):
    device = env.device
    mode = Mode(precision, device)
    set_tf32(precision == "tf32")
    torch.manual_seed(0)
    model = make()
    x_cpu = torch.randn(*shape)
    calibrate(model, x_cpu)
    onnx_path = os.path.join(work, f"{name}_eval.onnx")
    if not os.path.exists(onnx_path):
        export_onnx(model, x_cpu, onnx_path)
    art = os.path.join(work, f"{name}_eval.{precision}.{opts.conv_layout}.aotc")
    r = subprocess.run([opts.aotc, "compile", onnx_path, "-o", art, "-q", "--precision", precision, "--conv-layout", opts.conv_layout],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"aotc compile {name}_eval.onnx --precision {precision}: {r.stderr.strip()}")
    model = model.to(device)
    for p in model.parameters():
        p.requires_grad_(False)
    x = x_cpu.to(device)
    free_before = env.free_bytes()
    rt = env.open(art)
    # The ONNX input is "x"; initializers (the weights) come from the artifact.
    rt.bind("x", x)

    def aotc_fwd():
        rt.forward()

    def eager_fwd():
        with torch.no_grad(), mode.forward():
            model(x)

    first_ms = first_call_ms(env, rt, aotc_fwd)
    free_after = env.free_bytes()
    try:
        with torch.no_grad(), mode.forward():
            want = model(x)
    except RuntimeError as e:
        # PyTorch 1.13's fused TransformerEncoder inference path on the CPU
        # fails under bf16 autocast: no eager baseline, so no row.
        print(f"{name} inference, {precision}: skipped: eager PyTorch {torch.__version__} fails in this mode: {first_line(e)}")
        rt.close()
        return
    got = rt.output(0, want)
    err = scaled_err(got, want)
    # Note [Correctness gate]: each side against float64.
    with torch.no_grad():
        want64 = copy.deepcopy(model).double()(x.double())
    try:
        worst = gate(f"{name} (ONNX, inference, {precision})", precision,
                     [("the output", got, want, want64, INFERENCE_TOLERANCE[precision])], scaled_err)
    except RuntimeError:
        rt.close()
        raise
    del want, got, want64

    row = {"model": name, "precision": precision, "batch": shape[0], "output_relerr": err, "vs_float64": worst,
           "aotc_first_step_ms": first_ms, "artifact": art}
    aotc_and_eager_into(env, opts, row, art, rt, aotc_fwd, eager_fwd, free_before, free_after)

    def compiled_fwd(compile_mode):
        compiled = torch_compile(model, compile_mode)

        def fwd():
            cudagraph_step_begin()
            with torch.no_grad(), mode.forward():
                compiled(x)
        return fwd

    compiled_into(env, opts, row, ("compile_ro",), compiled_fwd)
    profile_into(env, opts, row, [("aotc", aotc_fwd), ("eager", eager_fwd)])
    rt.synchronize()
    results["inference"].append(row)
    print_row(f"{name} inference, {precision}, ONNX opset 17, forward (batch {shape[0]}; output rel. error {err:.1e}); "
              f"eager under no_grad; x = speedup vs eager {precision}", row, ("aotc", "eager", "compile_ro"))
    rt.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("aotc")
    ap.add_argument("lib")
    ap.add_argument("--device", default="cuda", choices=["cuda", "emulate"])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (to check the script)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--models", nargs="*", default=[], help="of resnet18 mobilenet_v2 transformer (training and inference)")
    ap.add_argument("--profile", action="store_true", help="CUDA kernel time per step by torch.profiler beside the wall time")
    ap.add_argument("--no-graphs", action="store_true", help="run aotc without CUDA graphs (aotc_set_graphs 0)")
    ap.add_argument("--conv-layout", default="auto", choices=["auto", "nchw"],
                    help="aotc compile --conv-layout: run once with each to measure Note [Channels last] (bf16 convolutions)")
    ap.add_argument("--precisions", nargs="+", default=list(PRECISIONS), choices=PRECISIONS,
                    help="the modes of the training and inference rows (issue 37), each beside PyTorch in the same mode")
    ap.add_argument("--compile-modes", nargs="*", default=[m for _, m in COMPILE_MODES], choices=[m for _, m in COMPILE_MODES],
                    help="the torch.compile modes measured beside aotc (none: aotc and eager alone)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--gate-report", type=int, default=0, metavar="N",
                    help="print the training gate's N closest calls (Note [Correctness gate]), eager yardsticks apart")
    opts = ap.parse_args()
    unknown = sorted(set(opts.models) - {"resnet18", "mobilenet_v2", "transformer"})
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}: choose from resnet18 mobilenet_v2 transformer")
    if opts.device == "cuda" and not torch.cuda.is_available():
        print("bench_gpu: SKIPPED: no usable GPU on this machine (torch.cuda.is_available() is false); nothing measured")
        return 77
    device = torch.device("cuda" if opts.device == "cuda" else "cpu")
    # Full float32 on both sides (aotc's cuBLAS and cuDNN calls use TF32 only
    # under --precision tf32): each precision's rows set the switches again.
    set_tf32(False)
    lib = load_lib(opts.lib)
    env = Env(opts, lib, device)
    results = {"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu (emulate)",
               "torch": torch.__version__, "quick": opts.quick, "aotc_device": env.aotc_device,
               "aotc_stream": "torch current stream" if env.stream() is not None else None,
               "aotc_graphs": not opts.no_graphs, "iters": opts.iters, "precisions": opts.precisions, "conv_layout": opts.conv_layout}
    print(f"bench_gpu on {results['device']}, PyTorch {torch.__version__}; aotc on {env.aotc_device}"
          + (", on PyTorch's current stream" if env.stream() is not None else "")
          + (", CUDA graphs off" if opts.no_graphs else "") + f", --conv-layout {opts.conv_layout}")
    with tempfile.TemporaryDirectory(prefix="aotc-bench-gpu-") as work:
        bandwidth(opts, env, work, results)
        training(opts, env, work, results)
        inference(opts, env, work, results)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
