#!/usr/bin/env python3
"""The GPU runtime's per-step calls, checked without a GPU (issue 33 item 5).

    runtime_calls_test.py AOTC LIBAOTC_RUNTIME FAKE_CUDA_DIR MODELS_DIR WORK

Real artifacts (resnet18, mobilenet_v2, the transformer and the MLP of
testdata/models/gen_models.py, and a dynamic-shape MLP at two sizes) are
compiled for sm_90 and driven through the C ABI (by ctypes) on the
recording fake of the CUDA driver, cuBLASLt and cuDNN (tools/fake_cuda),
found first because this script's children put FAKE_CUDA_DIR on
LD_LIBRARY_PATH; no other test's environment names it.  Each step binds
freshly allocated inputs and grad outputs.  The fake logs every call; the
script writes a marker line before each C ABI call, and after the first step
of each size binding (Note [Prepared plan]) allows only enqueue calls inside
a bind, forward or backward:

  kernel launches, cuBLASLt matmuls with a preset algorithm, cuDNN
  convolutions, device-to-device copies on the session's stream (staged
  inputs, Note [Staged inputs]), device-to-host copies on it (the index
  flags of artifacts whose kernels check indices, into pinned memory, Note
  [Index errors]), graph launches, the two event calls that join the
  caller's stream, and cuCtxGetCurrent (a thread-local read: the session
  makes its context current on whichever thread calls it).

Anything else (an allocation, a free, a heuristic or algorithm query, a
descriptor built, a synchronization or synchronous copy, a capture after the
first) fails the test, as does a GEMM without an algorithm.  Launch counts
must equal the manifest's: with CUDA graphs, one graph launch per phase
whose captured kernels and library calls are the manifest's launches and
GEMMs/convolutions; without, the launches themselves.  A negative control
(AOTC_SYNC_STEPS=1, a synchronization after every step) must be caught.
Then two runtimes of one artifact run in two threads, and one runtime from
a thread other than the one that opened it (on the fake, and on the emulate
device, bit-identical to one runtime alone); and on the emulate device every
model's results are the same bytes with each phase's arena poisoned (0xFF)
before it runs and with inputs staged into the arena.
"""
import ctypes
import json
import os
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_DIMS = 16
DTYPES = {"f32": 0, "f64": 1, "f16": 2, "bf16": 3, "i64": 4, "i32": 5, "bool": 6, "i8": 7, "i16": 8, "u8": 9, "u16": 10,
          "u32": 11, "u64": 12}
SIZES = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "bool": 1, "i8": 1, "i16": 2, "u8": 1, "u16": 2,
         "u32": 4, "u64": 8}

# Calls a phase may make once it is prepared (see the docstring).
ENQUEUE = {"cuLaunchKernel", "cublasLtMatmul", "cudnnConvolutionForward", "cudnnConvolutionBackwardData",
           "cudnnConvolutionBackwardFilter", "cuMemcpyDtoDAsync_v2", "cuGraphLaunch", "cuEventRecord",
           "cuStreamWaitEvent", "cuCtxGetCurrent", "cuMemcpyDtoHAsync_v2"}
# Calls with no stream argument: they run on the legacy stream (Note [One stream]).
LEGACY_STREAM_CALLS = {"cuMemsetD8_v2", "cuMemsetD16_v2", "cuMemsetD32_v2", "cuMemcpy", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2",
                       "cuMemcpyDtoD_v2", "cuCtxSynchronize"}
CONV = {"cudnnConvolutionForward", "cudnnConvolutionBackwardData", "cudnnConvolutionBackwardFilter"}


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64))]


class TensorView(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_DIMS), ("strides", ctypes.c_int64 * MAX_DIMS), ("offset", ctypes.c_int64)]


def load_runtime(path):
    lib = ctypes.CDLL(path)
    lib.aotc_error.restype = ctypes.c_char_p
    lib.aotc_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
    for f in ("aotc_forward", "aotc_backward", "aotc_synchronize", "aotc_close"):
        getattr(lib, f).argtypes = [ctypes.c_void_p]
    lib.aotc_bind.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(Tensor)]
    lib.aotc_bind_grad_output.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(Tensor)]
    lib.aotc_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
    lib.aotc_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.aotc_set_stream.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.aotc_set_graphs.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.aotc_output.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(TensorView)]
    lib.aotc_grad.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(TensorView)]
    lib.aotc_copy_to_host.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    lib.aotc_copy_to_device.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    return lib


class Runtime:
    def __init__(self, lib, artifact, device):
        self.lib = lib
        self.rt = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        if lib.aotc_open(artifact.encode(), device.encode(), ctypes.byref(self.rt), err, len(err)):
            raise RuntimeError(f"aotc_open {artifact}: {err.value.decode()}")
        self.keep = []

    def check(self, rc, what):
        if rc:
            raise RuntimeError(f"{what}: {self.lib.aotc_error(self.rt).decode()}")

    def alloc(self, nbytes):
        p = ctypes.c_void_p()
        self.check(self.lib.aotc_alloc(self.rt, max(nbytes, 1), ctypes.byref(p)), "aotc_alloc")
        return p.value

    def tensor(self, ptr, dtype, shape, strides):
        s = (ctypes.c_int64 * max(1, len(shape)))(*shape)
        st = (ctypes.c_int64 * max(1, len(strides)))(*strides)
        self.keep += [s, st]
        return Tensor(ptr, DTYPES[dtype], len(shape), s, st)

    def view(self, f, *args):
        v = TensorView()
        self.check(f(self.rt, *args, ctypes.byref(v)), f.__name__)
        return v

    def read(self, v, dtype):
        n = 0
        for d in range(v.ndim):
            if v.shape[d] == 0:
                return b""
            n = max(n, (v.shape[d] - 1) * v.strides[d])
        nbytes = (v.offset + n + 1) * SIZES[dtype]
        buf = ctypes.create_string_buffer(nbytes)
        self.check(self.lib.aotc_copy_to_host(self.rt, buf, v.data, nbytes), "aotc_copy_to_host")
        return buf.raw


def contiguous(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.insert(0, acc)
        acc *= max(s, 1)
    return st


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def concrete(shape, binding):
    """A manifest dim: an integer, or {"sym": EXPR} (only bare symbols here)."""
    return [binding[d["sym"]] if isinstance(d, dict) else d for d in shape]


def plan_of(manifest, binding):
    """User inputs and grad outputs with their layouts, at a binding."""
    ins = [(i["name"], i["dtype"], concrete(i["shape"], binding)) for i in manifest["inputs"] if i["role"] == "user_input"]
    bwd = {b["name"]: b for b in manifest["backward"]["buffers"]}
    grads = []
    for o in manifest["outputs"]:
        t = o.get("tangent")
        if t and t in bwd:
            b = bwd[t]
            grads.append((o["index"], b["dtype"], concrete(b["shape"], binding), concrete(b["strides"], binding)))
    return ins, grads


def counts(program):
    launches = sum(1 for s in program["steps"] if "kernel" in s)
    convs = sum(1 for s in program["steps"] if s.get("call", "").startswith("cudnn"))
    return launches, len(program["steps"]) - launches - convs, convs


# --- the child: runs steps on the fake, writing markers into its log -----------------------------------------


def child(lib_path, artifact, mode, bindings):
    log = os.environ["AOTC_FAKE_CUDA_LOG"]
    lib = load_runtime(lib_path)

    def mark(text):
        with open(log, "a") as f:
            f.write(f"## {text}\n")

    manifest = json.load(open(os.path.join(artifact, "manifest.json")))
    mark("open")
    rt = Runtime(lib, artifact, "cuda")
    if mode in ("graphs", "nographs", "syncsteps", "train"):
        drv = ctypes.CDLL("libcuda.so.1")  # the fake the runtime opened (the same soname: the same library)
        stream = ctypes.c_void_p()
        assert drv.cuStreamCreate(ctypes.byref(stream), 1) == 0
        rt.check(lib.aotc_set_stream(rt.rt, stream), "aotc_set_stream")
    if mode in ("nographs", "default"):
        rt.check(lib.aotc_set_graphs(rt.rt, 0), "aotc_set_graphs")
    if mode == "train":
        # Note [Training step]: a fresh batch each step, the learning rate set
        # between steps, one aotc_train_step; the caller's stream (above).
        lib.aotc_set_scalar.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_double]
        for step, binding in enumerate(bindings):
            ins, _ = plan_of(manifest, binding)
            mark(f"step {step} alloc")
            bufs = [rt.alloc(numel(s) * SIZES[d]) for _, d, s in ins]
            mark(f"step {step} bind")
            for (name, d, s), p in zip(ins, bufs):
                rt.check(lib.aotc_bind(rt.rt, name.encode(), ctypes.byref(rt.tensor(p, d, s, contiguous(s)))), f"bind {name}")
            mark(f"step {step} set_scalar")
            rt.check(lib.aotc_set_scalar(rt.rt, b"optim.lr", 0.01 / (step + 1)), "aotc_set_scalar")
            # Note [Run-time momentum]: OneCycleLR's cycle_momentum, beta1 with the lr.
            rt.check(lib.aotc_set_scalar(rt.rt, b"optim.beta1", 0.9 - 0.01 * step), "aotc_set_scalar")
            mark(f"step {step} train")
            rt.check(lib.aotc_train_step(rt.rt), "aotc_train_step")
            mark(f"step {step} sync")
            rt.check(lib.aotc_synchronize(rt.rt), "aotc_synchronize")
            mark(f"step {step} free")
            for p in bufs:
                rt.check(lib.aotc_free(rt.rt, p), "aotc_free")
        mark("close")
        lib.aotc_close(rt.rt)
        return
    for step, binding in enumerate(bindings):
        ins, grads = plan_of(manifest, binding)
        mark(f"step {step} alloc")
        bufs = [rt.alloc(numel(s) * SIZES[d]) for _, d, s in ins] + [rt.alloc(numel(s) * SIZES[d]) for _, d, s, _ in grads]
        mark(f"step {step} bind")
        for (name, d, s), p in zip(ins, bufs):
            rt.check(lib.aotc_bind(rt.rt, name.encode(), ctypes.byref(rt.tensor(p, d, s, contiguous(s)))), f"bind {name}")
        mark(f"step {step} forward")
        rt.check(lib.aotc_forward(rt.rt), "aotc_forward")
        if manifest["backward"]["steps"]:
            mark(f"step {step} bind_grad")
            for (index, d, s, st), p in zip(grads, bufs[len(ins):]):
                rt.check(lib.aotc_bind_grad_output(rt.rt, index, ctypes.byref(rt.tensor(p, d, s, st))), "bind_grad_output")
            mark(f"step {step} backward")
            rt.check(lib.aotc_backward(rt.rt), "aotc_backward")
        mark(f"step {step} sync")
        rt.check(lib.aotc_synchronize(rt.rt), "aotc_synchronize")
        mark(f"step {step} free")
        for p in bufs:
            rt.check(lib.aotc_free(rt.rt, p), "aotc_free")
    mark("close")
    lib.aotc_close(rt.rt)


def child_threads(lib_path, artifact):
    """Two runtimes of one artifact in two threads; one runtime driven from a thread that did not open it."""
    lib = load_runtime(lib_path)
    manifest = json.load(open(os.path.join(artifact, "manifest.json")))
    errors = []

    def steps(rt, n):
        try:
            ins, grads = plan_of(manifest, {})
            for _ in range(n):
                bufs = [rt.alloc(numel(s) * SIZES[d]) for _, d, s in ins]
                for (name, d, s), p in zip(ins, bufs):
                    rt.check(lib.aotc_bind(rt.rt, name.encode(), ctypes.byref(rt.tensor(p, d, s, contiguous(s)))), "bind")
                rt.check(lib.aotc_forward(rt.rt), "forward")
                rt.check(lib.aotc_backward(rt.rt), "backward")
                for p in bufs:
                    rt.check(lib.aotc_free(rt.rt, p), "free")
        except Exception as e:  # reported by the parent
            errors.append(str(e))

    a, b = Runtime(lib, artifact, "cuda"), Runtime(lib, artifact, "cuda")
    threads = [threading.Thread(target=steps, args=(r, 4)) for r in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c = Runtime(lib, artifact, "cuda")  # opened on this thread, used on another
    t = threading.Thread(target=steps, args=(c, 2))
    t.start()
    t.join()
    for r in (a, b, c):
        lib.aotc_close(r.rt)
    if errors:
        print("\n".join(errors))
        sys.exit(1)


# --- the parent: compiles, runs children, reads their logs ----------------------------------------------------


def segments(log):
    """[(marker, [call lines])] in order."""
    segs = [("start", [])]
    for line in open(log).read().splitlines():
        if line.startswith("## "):
            segs.append((line[3:], []))
        elif line.strip():
            segs[-1][1].append(line)
    return segs


def check_log(log, manifest, prepared_steps, default_mode=False):
    """Problems with the calls of the steps in `prepared_steps` (steps after their size binding's first)."""
    problems = []
    fwd, bwd = counts(manifest["forward"]), counts(manifest["backward"])
    for marker, calls in segments(log):
        # Every matmul, captured or not, prepared or preparing, runs with a preset algorithm.
        for c in calls:
            if c.startswith("cublasLtMatmul ") and "algo=set" not in c:
                problems.append(f"{marker}: a matmul without a preset algorithm: {c}")
            # Note [One stream]: nothing on the NULL or legacy stream but the
            # two calls that join the caller's, and no stream-less memset or
            # copy (they run on the legacy stream, unordered with the session's).
            name = c.split()[0]
            if name in LEGACY_STREAM_CALLS or (name not in ("cuEventRecord", "cuStreamWaitEvent", "cuStreamCreate")
                                               and any(f"stream={w} " in c + " " for w in ("0", "legacy", "per_thread"))):
                problems.append(f"{marker}: work outside the session's stream: {c}")
        parts = marker.split()
        if len(parts) != 3 or parts[0] != "step" or int(parts[1]) not in prepared_steps:
            continue
        step, what = int(parts[1]), parts[2]
        if what not in ("bind", "forward", "bind_grad", "backward"):
            continue
        names = [c.split()[0] for c in calls]
        allowed = set() if what.startswith("bind") else ENQUEUE
        if what.startswith("bind"):
            allowed = {"cuCtxGetCurrent"}
        extra = [c for c in calls if c.split()[0] not in allowed]
        if default_mode and what in ("forward", "backward"):
            # The synchronous contract: one wait at the end of each phase.
            syncs = [c for c in extra if c.startswith("cuStreamSynchronize")]
            if len(syncs) != 1 or not calls[-1].startswith("cuStreamSynchronize"):
                problems.append(f"step {step} {what}: {len(syncs)} stream synchronizations (want one, last)")
            extra = [c for c in extra if not c.startswith("cuStreamSynchronize")]
        for c in extra:
            problems.append(f"step {step} {what}: {c}")
        if what in ("forward", "backward"):
            want = fwd if what == "forward" else bwd
            graphs = [c for c in calls if c.startswith("cuGraphLaunch")]
            launches = names.count("cuLaunchKernel")
            gemms = names.count("cublasLtMatmul")
            convs = sum(names.count(c) for c in CONV)
            if graphs:
                fields = dict(kv.split("=", 1) for kv in graphs[0].split()[1:] if "=" in kv)
                got = (int(fields.get("kernels", -1)), int(fields.get("library", -1)))
                if len(graphs) != 1 or launches or gemms or convs or got != (want[0], want[1] + want[2]):
                    problems.append(f"step {step} {what}: {len(graphs)} graph launches replaying {got} kernels/library calls "
                                    f"and {launches + gemms + convs} direct calls; the manifest has {want[0]} launches and "
                                    f"{want[1] + want[2]} GEMMs and convolutions")
            elif (launches, gemms, convs) != want and sum(want):
                problems.append(f"step {step} {what}: {launches} launches, {gemms} GEMMs, {convs} convolutions; "
                                f"the manifest has {want}")
    return problems


def check_train_log(log, manifest, prepared_steps):
    """Note [Training step] on the fake: after the first step, a step is the
    learning rate's and beta1's memsets and one graph launch replaying every kernel and
    library call of both programs; nothing else (no capture, allocation or
    synchronization) inside them."""
    problems = []
    fwd, bwd = counts(manifest["forward"]), counts(manifest["backward"])
    want = (fwd[0] + bwd[0], fwd[1] + fwd[2] + bwd[1] + bwd[2])
    for marker, calls in segments(log):
        parts = marker.split()
        if len(parts) != 3 or parts[0] != "step" or int(parts[1]) not in prepared_steps:
            continue
        names = [c.split()[0] for c in calls]
        if parts[2] == "set_scalar":
            extra = [c for c in calls if c.split()[0] not in ("cuCtxGetCurrent", "cuMemsetD32Async")]
            if names.count("cuMemsetD32Async") != 4 or extra:  # optim.lr and optim.beta1 are float64: two words each
                problems.append(f"step {parts[1]} set_scalar: {names}")
        elif parts[2] == "train":
            extra = [c for c in calls if c.split()[0] not in ENQUEUE]
            graphs = [c for c in calls if c.startswith("cuGraphLaunch")]
            got = None
            if len(graphs) == 1:
                fields = dict(kv.split("=", 1) for kv in graphs[0].split()[1:] if "=" in kv)
                got = (int(fields.get("kernels", -1)), int(fields.get("library", -1)))
            direct = sum(names.count(c) for c in ("cuLaunchKernel", "cublasLtMatmul") + tuple(CONV))
            if extra or len(graphs) != 1 or got != want or direct:
                problems.append(f"step {parts[1]} train: {len(graphs)} graph launches replaying {got} (want one, {want}), "
                                f"{direct} direct calls, other calls {extra[:3]}")
    return problems


def run_child(args, log, fake_dir, extra_env=None):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = fake_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["AOTC_FAKE_CUDA_LOG"] = log
    env.pop("AOTC_CUDA_GRAPHS", None)
    env.pop("AOTC_SYNC_STEPS", None)
    env.update(extra_env or {})
    if os.path.exists(log):
        os.remove(log)
    r = subprocess.run([sys.executable, __file__, "--child"] + args, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode:
        sys.exit(f"FAIL child {' '.join(args)}:\n{r.stdout}{r.stderr}")


def compile_model(aotc, src, out):
    r = subprocess.run([aotc, "compile", src, "-o", out, "--arch", "sm_90", "-q"], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"FAIL compile {src}: {r.stderr}")


def emulate_results(lib, artifact, seed_inputs, threads=1):
    """Outputs and grads (bytes) of one training step on the emulate device, in `threads` runtimes at once."""
    manifest = json.load(open(os.path.join(artifact, "manifest.json")))
    ins, grads = plan_of(manifest, {})
    results = [None] * threads

    def one(k):
        rt = Runtime(lib, artifact, "emulate")
        bufs = []
        for (name, d, s), data in zip(ins, seed_inputs):
            p = rt.alloc(ctypes.sizeof(data))
            rt.check(lib.aotc_copy_to_device(rt.rt, p, data, ctypes.sizeof(data)), "copy")
            bufs.append(p)
            rt.check(lib.aotc_bind(rt.rt, name.encode(), ctypes.byref(rt.tensor(p, d, s, contiguous(s)))), "bind")
        rt.check(lib.aotc_forward(rt.rt), "forward")
        out = [rt.read(rt.view(lib.aotc_output, i), o["dtype"]) for i, o in enumerate(manifest["outputs"])]
        if manifest["backward"]["steps"]:
            for index, d, s, st in grads:
                n = numel(s) * SIZES[d]
                p = rt.alloc(n)
                ones = (ctypes.c_float * numel(s))(*([1.0] * numel(s))) if d == "f32" else ctypes.create_string_buffer(n)
                rt.check(lib.aotc_copy_to_device(rt.rt, p, ones, n), "copy")
                bufs.append(p)
                rt.check(lib.aotc_bind_grad_output(rt.rt, index, ctypes.byref(rt.tensor(p, d, s, st))), "bind grad")
            rt.check(lib.aotc_backward(rt.rt), "backward")
            for g in manifest["grads"]:
                v = rt.view(lib.aotc_grad, g["input"].encode())
                dt = next(i["dtype"] for i in manifest["inputs"] if i["name"] == g["input"])
                out.append(rt.read(v, dt))
        for p in bufs:
            lib.aotc_free(rt.rt, p)
        lib.aotc_close(rt.rt)
        results[k] = out

    ts = [threading.Thread(target=one, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if any(r is None for r in results):
        sys.exit(f"FAIL {artifact}: a thread failed on the emulate device")
    return results


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        if sys.argv[2] == "threads":
            return child_threads(sys.argv[3], sys.argv[4])
        return child(sys.argv[3], sys.argv[4], sys.argv[2], json.loads(sys.argv[5]))
    aotc, libpath, fake_dir, models, work = sys.argv[1:6]
    os.makedirs(work, exist_ok=True)
    if not os.path.exists(os.path.join(fake_dir, "libcuda.so.1")):
        sys.exit(f"FAIL: no fake CUDA libraries in {fake_dir}")
    arts = {}
    for name in ("resnet18", "mobilenet_v2", "transformer", "mlp_cross_entropy"):
        arts[name] = os.path.join(work, name + ".aotc")
        compile_model(aotc, os.path.join(models, name + ".json"), arts[name])
    # A dynamic-shape MLP (batch symbolic): one artifact, bound at two sizes.
    dyn = os.path.join(work, "dyn_mlp")
    subprocess.run(["/usr/bin/python3", "-c", f"""
import sys, torch; sys.path.insert(0, {os.path.join(HERE, '..', 'tools')!r}); from fx_export import export
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
export(m, (torch.randn(4, 8),), {dyn!r}, dynamic={{"input": {{0: "batch"}}}})
"""], check=True)
    arts["dyn_mlp"] = dyn + ".aotc"
    compile_model(aotc, dyn + ".json", arts["dyn_mlp"])
    failures = 0
    for name, art in arts.items():
        manifest = json.load(open(os.path.join(art, "manifest.json")))
        if "symbols" in manifest:
            sym = manifest["symbols"][0]["name"]
            bindings = [{sym: 4}, {sym: 4}, {sym: 6}, {sym: 6}, {sym: 6}]
            prepared = {1, 3, 4}  # the first step at each size prepares
        else:
            bindings = [{}] * 3
            prepared = {1, 2}
        for mode in ("graphs", "nographs", "default"):
            log = os.path.join(work, f"{name}.{mode}.log")
            run_child([mode, libpath, art, json.dumps(bindings)], log, fake_dir)
            problems = check_log(log, manifest, prepared, default_mode=mode == "default")
            captures = sum(1 for _, calls in segments(log) for c in calls if c.startswith("cuStreamBeginCapture"))
            want_captures = 0 if mode != "graphs" else (2 if manifest["backward"]["steps"] else 1) * len({json.dumps(b) for b in bindings})
            if mode == "graphs" and name == "dyn_mlp":
                want_captures = 2 * 2  # two sizes, each captured once per phase
            if captures != want_captures:
                problems.append(f"{captures} captures (want {want_captures}: one per phase and size binding)")
            status = "ok" if not problems else "FAIL"
            print(f"{status} {name} {mode}: steps {sorted(prepared)} checked, {len(problems)} problems", flush=True)
            for p in problems[:10]:
                print("   ", p)
            failures += bool(problems)
    # Note [Training step]: an --optimizer artifact's whole step, one graph launch;
    # also with GradScaler's loss scaling and accumulation (Note [Loss scaling
    # with an optimizer]): the scale, found_inf and the micro-step counter
    # live on the device, so a step is still one launch, nothing synchronized.
    for tag, extra in (("adamw", []), ("adamw fp16 loss-scaled accumulate 2",
                                       ["--precision", "fp16", "--loss-scaling", "dynamic", "--accumulate", "2"])):
        train_art = os.path.join(work, "mlp_" + tag.replace(" ", "_") + ".aotc")
        r = subprocess.run([aotc, "compile", os.path.join(models, "mlp_cross_entropy.json"), "-o", train_art, "--arch", "sm_90", "-q",
                            "--optimizer", "adamw"] + extra, capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"FAIL compile --optimizer {tag}: {r.stderr}")
        log = os.path.join(work, "train_" + tag.replace(" ", "_") + ".log")
        run_child(["train", libpath, train_art, json.dumps([{}] * 4)], log, fake_dir)
        manifest = json.load(open(os.path.join(train_art, "manifest.json")))
        problems = check_train_log(log, manifest, {1, 2, 3})
        captures = sum(1 for _, calls in segments(log) for c in calls if c.startswith("cuStreamBeginCapture"))
        if captures != 1:
            problems.append(f"{captures} captures (want 1: both programs once, never again when the learning rate changes)")
        print(f"{'ok' if not problems else 'FAIL'} train step (--optimizer {tag}): steps 1, 2, 3 checked, {len(problems)} problems", flush=True)
        for p in problems[:10]:
            print("   ", p)
        failures += bool(problems)
    # Negative control: a synchronization after every step must be caught.
    log = os.path.join(work, "control.log")
    run_child(["syncsteps", libpath, arts["transformer"], json.dumps([{}] * 2)], log, fake_dir, {"AOTC_SYNC_STEPS": "1"})
    caught = check_log(log, json.load(open(os.path.join(arts["transformer"], "manifest.json"))), {1})
    print(f"{'ok' if caught else 'FAIL'} control: AOTC_SYNC_STEPS=1 gives {len(caught)} problems "
          f"(e.g. {caught[0] if caught else 'none'})", flush=True)
    failures += not caught
    # Note [Convolution benchmark]: candidates timed once, then read from the cache file.
    cache = os.path.join(work, "cudnn_algos.json")
    if os.path.exists(cache):
        os.remove(cache)
    finds = []
    for k in range(2):
        log = os.path.join(work, f"benchmark{k}.log")
        run_child(["graphs", libpath, arts["resnet18"], json.dumps([{}] * 2)], log, fake_dir,
                  {"AOTC_CUDNN_BENCHMARK": "1", "AOTC_CUDNN_CACHE": cache})
        calls = [c for _, cs in segments(log) for c in cs]
        finds.append(sum(1 for c in calls if c.startswith("cudnnFindConvolution")))
        problems = check_log(log, json.load(open(os.path.join(arts["resnet18"], "manifest.json"))), {1})
        if problems:
            finds.append(-1)
            print("   ", problems[0])
    convs = sum(counts(json.load(open(os.path.join(arts["resnet18"], "manifest.json")))[p])[2] for p in ("forward", "backward"))
    entries = len(json.load(open(cache))["algorithms"]) if os.path.exists(cache) else 0
    # Each distinct problem is timed once (layers of one shape share it), never again with the cache.
    ok = len(finds) == 2 and finds[0] == entries and 0 < entries <= convs and finds[1] == 0
    print(f"{'ok' if ok else 'FAIL'} benchmark: {finds[0]} timed searches in the first session ({convs} convolutions, "
          f"{entries} distinct problems cached), {finds[1]} in the second", flush=True)
    failures += not ok
    # Issue 37: what --precision asks of the libraries.  GEMMs compute in
    # float32 (CUBLAS_COMPUTE_32F = 68) on float32 operands, in TF32 tensor
    # cores (CUBLAS_COMPUTE_32F_FAST_TF32 = 77) under tf32, and on bfloat16
    # operands (CUDA_R_16BF = 14) with float32 accumulation and scale
    # (CUDA_R_32F = 0) under bf16; convolutions use FMA math
    # (CUDNN_FMA_MATH = 3) in float32, tensor ops (CUDNN_TENSOR_OP_MATH = 1)
    # under tf32 and on bfloat16 data (CUDNN_DATA_BFLOAT16 = 9).  Filters
    # are NCHW (CUDNN_TENSOR_NCHW = 0) but for the bfloat16 convolutions over
    # channels that are multiples of 8, which are NHWC (= 1, Note [Channels
    # last]; resnet18's stem reads 3 channels), unless --conv-layout nchw.
    want_prec = {"fp32": ({68}, {0}, {3}, {0}, {0}), "tf32": ({77}, {0}, {1}, {0}, {0}), "bf16": ({68}, {14}, {1}, {9}, {0, 1}),
                 "bf16 nchw": ({68}, {14}, {1}, {9}, {0})}
    for label, (computes, ltypes, maths, dtypes, formats) in want_prec.items():
        prec = label.split()[0]
        seen = {"compute": set(), "layout": set(), "math": set(), "dtype": set(), "format": set()}
        for name in ("resnet18", "mlp_cross_entropy"):
            art = os.path.join(work, f"{name}.{label.replace(' ', '.')}.aotc")
            r = subprocess.run([aotc, "compile", os.path.join(models, name + ".json"), "-o", art, "--arch", "sm_90", "-q",
                                "--precision", prec] + (["--conv-layout", "nchw"] if "nchw" in label else []), capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"FAIL compile {name} --precision {prec}: {r.stderr}")
            log = os.path.join(work, f"{name}.{prec}.log")
            run_child(["default", libpath, art, json.dumps([{}])], log, fake_dir)
            for _, calls in segments(log):
                for c in calls:
                    f = dict(kv.split("=", 1) for kv in c.split()[1:] if "=" in kv)
                    if c.startswith("cublasLtMatmulDescCreate"):
                        seen["compute"].add(int(f["compute"]))
                    elif c.startswith("cublasLtMatrixLayoutCreate"):
                        seen["layout"].add(int(f["type"]))
                    elif c.startswith("cudnnSetConvolutionMathType"):
                        seen["math"].add(int(f["math"]))
                    elif c.startswith("cudnnSetFilter"):
                        seen["dtype"].add(int(f["type"]))
                        seen["format"].add(int(f["format"]))
        got = (seen["compute"], seen["layout"], seen["math"], seen["dtype"], seen["format"])
        ok = got == (computes, ltypes, maths, dtypes, formats)
        print(f"{'ok' if ok else 'FAIL'} precision {label}: GEMM compute types {sorted(got[0])}, operand types {sorted(got[1])}; "
              f"convolution math {sorted(got[2])}, filter types {sorted(got[3])}, filter formats {sorted(got[4])}"
              + ("" if ok else f" (want {[sorted(w) for w in (computes, ltypes, maths, dtypes, formats)]})"), flush=True)
        failures += not ok
    # Threads on the fake.
    run_child(["threads", libpath, arts["transformer"]], os.path.join(work, "threads.log"), fake_dir)
    print("ok fake: two runtimes in two threads, one runtime used from another thread", flush=True)
    # Emulate: threads bit-identical to one runtime; poisoned arenas and staged inputs change no byte.
    lib = load_runtime(libpath)
    import random
    for name in ("transformer", "mlp_cross_entropy", "dyn_mlp"):
        art = arts[name]
        manifest = json.load(open(os.path.join(art, "manifest.json")))
        binding = {manifest["symbols"][0]["name"]: 4} if "symbols" in manifest else {}
        rnd = random.Random(0)
        seeds = []
        ins, _ = plan_of(manifest, binding)
        for _, d, s in ins:
            n = numel(s)
            if d == "f32":
                seeds.append((ctypes.c_float * n)(*[rnd.uniform(-1, 1) for _ in range(n)]))
            else:  # class indices (cross entropy's target)
                seeds.append((ctypes.c_int64 * n)(*[rnd.randrange(0, 10) for _ in range(n)]))
        if binding:
            continue  # the dynamic MLP's size comes from its inputs: covered by dynamic_test
        one = emulate_results(lib, art, seeds)[0]
        two = emulate_results(lib, art, seeds, threads=2)
        if any(r != one for r in two):
            print(f"FAIL emulate {name}: two runtimes in two threads differ from one")
            failures += 1
        else:
            print(f"ok emulate {name}: two runtimes in two threads bit-identical to one ({len(one)} results)", flush=True)
    for name in ("resnet18", "mobilenet_v2", "transformer", "mlp_cross_entropy"):
        art = arts[name]
        ref = os.path.join(models, name + ".inputs.safetensors")
        outs = {}
        for label, env in (("plain", {}), ("poisoned", {"AOTC_POISON_ARENAS": "1"}), ("staged", {"AOTC_STAGE_INPUTS": "1"})):
            out = os.path.join(work, f"{name}.{label}.safetensors")
            e = dict(os.environ)
            e.update(env)
            r = subprocess.run([aotc, "run", art, "--backend", "emulate", "--inputs", ref, "--grad-outputs", ref, "--out", out, "-q"], env=e,
                               capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"FAIL emulate {name} {label}: {r.stderr}")
            outs[label] = open(out, "rb").read()
        same = outs["plain"] == outs["poisoned"] == outs["staged"]
        print(f"{'ok' if same else 'FAIL'} emulate {name}: results identical with poisoned arenas and staged inputs", flush=True)
        failures += not same
    if failures:
        sys.exit(f"FAIL: {failures} checks failed")
    print("runtime_calls: all checks passed")


if __name__ == "__main__":
    main()
