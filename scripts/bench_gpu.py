#!/usr/bin/env python3
"""GPU benchmark (issue 13): aotc's artifacts on a GPU beside PyTorch on the same GPU.

    bench_gpu.py AOTC LIBAOTC_RUNTIME [--device cuda|emulate] [--quick] [--json OUT]

AOTC is the compiler, LIBAOTC_RUNTIME the deployment library
(build/src/libaotc_runtime.so): artifacts run through its C ABI
(aotc/runtime/c_api.h, by ctypes) on tensors PyTorch allocated, so aotc and
PyTorch time the same memory on the same device.  Every figure is a ratio
against a baseline measured in the same run:

  1. bandwidth: fused pointwise kernels (a chain of elementwise ops, and one
     reading two inputs), a row reduction and a softmax (a row group), each
     over 2^26 float32 elements: achieved GB/s (bytes the program must read
     and write / time) beside a device-to-device copy of the same bytes
     (torch's copy_), as a fraction of it (target: pointwise >= 80%);
  2. a training step (forward + backward, grad output of ones) of resnet18,
     mobilenet_v2 (batch 32, 3x224x224) and a TransformerEncoder (batch 32,
     sequence 128, d_model 256, 4 layers), beside PyTorch eager and
     torch.compile where this PyTorch has it (target: resnet18 faster than
     eager); each result checked against eager first (a wrong answer is no
     benchmark);
  3. kernel launches per step: aotc's (the manifest's launches, GEMMs and
     convolutions) beside eager's (CUDA kernels in torch.profiler's trace).

Times are medians of `--iters` runs after warm-up, each synchronized.
`--device emulate --quick` runs the same code on the CPU at tiny sizes (the
emulate device takes host pointers), to check the script where there is no
GPU; its figures mean nothing.  Without a GPU (and without --device emulate)
it prints why and exits 77.
"""
import argparse
import ctypes
import json
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
MAX_DIMS = 16


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64))]


class TensorView(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_DIMS), ("strides", ctypes.c_int64 * MAX_DIMS), ("offset", ctypes.c_int64)]


class Runtime:
    """One artifact opened through the C ABI."""

    def __init__(self, lib, artifact, device):
        self.lib = lib
        rt = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        if lib.aotc_open(artifact.encode(), device.encode(), ctypes.byref(rt), err, len(err)):
            raise RuntimeError(f"aotc_open {artifact}: {err.value.decode()}")
        self.rt = rt
        self.keep = []  # shapes and strides the runtime points at

    def check(self, rc, what):
        if rc:
            raise RuntimeError(f"{what}: {self.lib.aotc_error(self.rt).decode()}")

    def _tensor(self, t):
        shape = (ctypes.c_int64 * max(1, t.dim()))(*t.shape)
        strides = (ctypes.c_int64 * max(1, t.dim()))(*t.stride())
        self.keep += [shape, strides]
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

    def _view(self, v, like):
        """A copy of a tensor the runtime returned, as a torch tensor on `like`'s device."""
        shape = [v.shape[i] for i in range(v.ndim)]
        strides = [v.strides[i] for i in range(v.ndim)]
        if any(s == 0 for s in shape):
            return torch.empty(shape, dtype=like.dtype, device=like.device)
        span = v.offset + sum((s - 1) * st for s, st in zip(shape, strides)) + 1
        host = torch.empty(span, dtype=like.dtype)
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
    return lib


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


def compile_artifact(aotc, module, args, work, name):
    prefix = os.path.join(work, name)
    export(module, args, prefix)
    art = prefix + ".aotc"
    r = subprocess.run([aotc, "compile", prefix + ".json", "-o", art, "-q"], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"aotc compile {name}: {r.stderr.strip()}")
    return art


def relerr(got, want):
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


def bandwidth(opts, lib, work, device, sync, results):
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
        rt = Runtime(lib, art, opts.device)
        for name, a in zip(rt.inputs(), args):
            rt.bind(name, a)
        rt.forward()
        sync()
        want = mod(*args)
        got = rt.output(0, want)
        if not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
            raise RuntimeError(f"{title}: aotc's result differs from eager's by {(got - want).abs().max().item()}")
        t = timeit(rt.forward, opts.iters, sync)
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


def training(opts, lib, work, device, sync, results):
    import torchvision
    batch = 4 if opts.quick else 32
    side = 64 if opts.quick else 224
    seq, d = (8, 32) if opts.quick else (128, 256)
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=d, nhead=4, dim_feedforward=4 * d, dropout=0.0, batch_first=True)
    models = [("resnet18", lambda: torchvision.models.resnet18(num_classes=1000).train(), (batch, 3, side, side)),
              ("mobilenet_v2", lambda: torchvision.models.mobilenet_v2(num_classes=1000, dropout=0.0).train(), (batch, 3, side, side)),
              ("transformer", lambda: torch.nn.TransformerEncoder(layer, num_layers=2 if opts.quick else 4).train(), (batch, seq, d))]
    results["training"] = []
    for name, make, shape in models:
        if opts.models and name not in opts.models:
            continue
        torch.manual_seed(0)
        model = make()
        x_cpu = torch.randn(*shape)
        # The artifact is compiled from the CPU model (the exporter traces on the CPU).
        art = compile_artifact(opts.aotc, model, (x_cpu,), work, name)
        model = model.to(device)
        x = x_cpu.to(device)
        rt = Runtime(lib, art, opts.device)
        params = dict(model.named_parameters())
        buffers = dict(model.named_buffers())
        for inp in rt.inputs():
            rt.bind(inp, params.get(inp, buffers.get(inp, x)))
        with torch.no_grad():
            out = model(x)
        g = torch.ones_like(out)
        rt.bind_grad_output(0, g)

        def aotc_step():
            rt.forward()
            rt.backward()

        # Check one step against eager before timing it (BatchNorm's running
        # statistics move with every step, as they do in eager).
        ref = make().to(device)
        ref.load_state_dict(model.state_dict())
        aotc_step()
        sync()
        want = ref(x)
        want.backward(g)
        got = rt.output(0, want)
        # Float32 in a different order (and train-mode BatchNorm): errors
        # relative to the tensor's scale; a wrong program is off by O(1).
        err = relerr(got, want)
        if err > 1e-2:
            raise RuntimeError(f"{name}: aotc's output differs from eager's (relative error {err:.2e})")
        first = next(n for n, p in ref.named_parameters())
        gerr = relerr(rt.grad(first, params[first]), dict(ref.named_parameters())[first].grad)
        if gerr > 2e-2:
            raise RuntimeError(f"{name}: the gradient of {first} differs from eager's (relative error {gerr:.2e})")

        def eager_step():
            model.zero_grad(set_to_none=True)
            model(x).backward(g)

        aotc_t = timeit(aotc_step, opts.iters, sync)
        eager_t = timeit(eager_step, opts.iters, sync)
        row = {"model": name, "aotc_ms": aotc_t * 1e3, "eager_ms": eager_t * 1e3, "speedup_vs_eager": eager_t / aotc_t,
               "aotc_launches": manifest_launches(art), "eager_launches": eager_launches(eager_step, device)}
        if hasattr(torch, "compile") and device.type == "cuda":
            compiled = torch.compile(model)

            def compiled_step():
                model.zero_grad(set_to_none=True)
                compiled(x).backward(g)

            try:
                row["compile_ms"] = timeit(compiled_step, opts.iters, sync) * 1e3
                row["speedup_vs_compile"] = row["compile_ms"] / row["aotc_ms"]
            except Exception as e:  # torch.compile may lack a backend here: say so
                row["compile_error"] = str(e).splitlines()[0][:200]
        results["training"].append(row)
        print(f"{name:14s} aotc {row['aotc_ms']:8.2f} ms  eager {row['eager_ms']:8.2f} ms  "
              f"({row['speedup_vs_eager']:.2f}x eager)" +
              (f"  torch.compile {row['compile_ms']:8.2f} ms ({row['speedup_vs_compile']:.2f}x)" if "compile_ms" in row else "") +
              f"  launches/step aotc {row['aotc_launches']} (kernels + library calls) eager {row['eager_launches']}")
        rt.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("aotc")
    ap.add_argument("lib")
    ap.add_argument("--device", default="cuda", choices=["cuda", "emulate"])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (to check the script)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--models", nargs="*", default=[])
    ap.add_argument("--json", help="write the figures here")
    opts = ap.parse_args()
    if opts.device == "cuda" and not torch.cuda.is_available():
        print("bench_gpu: SKIPPED: no usable GPU on this machine (torch.cuda.is_available() is false); nothing measured")
        return 77
    device = torch.device("cuda" if opts.device == "cuda" else "cpu")
    # Full float32 on both sides: aotc's cuBLAS and cuDNN calls do not use TF32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    lib = load_lib(opts.lib)
    results = {"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu (emulate)",
               "torch": torch.__version__, "quick": opts.quick}
    print(f"bench_gpu on {results['device']}, PyTorch {torch.__version__}")
    with tempfile.TemporaryDirectory(prefix="aotc-bench-gpu-") as work:
        bandwidth(opts, lib, work, device, sync, results)
        training(opts, lib, work, device, sync, results)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
