//===- emulate_device.cpp - The emulate Device: the artifact's kernels on the CPU ===//
//
// The emulate device proves on any machine that the generated kernels and
// the plan compute the right thing: every kernel source of the artifact
// is compiled by the host C++ compiler against a shim for the CUDA built-ins
// (src/runtime/emulate_shim.h) and the artifact's own prelude; the executor
// (Note [One executor]) runs the steps: launches loop over the grid and the
// block calling the kernel, GEMM and convolution steps run host
// implementations of exactly the cuBLAS/cuDNN calls the plan spells out.
// Device memory is host memory holding each dtype's real bytes, laid out as
// the plan says.
//
// Note [Emulated barriers]: a kernel without __syncthreads runs its threads
// to completion one after another.  A kernel with barriers runs each block's
// threads as fibers (Boost.Context) on one host thread: __syncthreads switches to
// the scheduler, which resumes every unfinished thread in order, so all of a
// block's threads reach a barrier before any passes it.  Warp shuffles are
// built on the same switch (Note [Emulated shuffles], emulate_shim.h).
//===----------------------------------------------------------------------===//
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "aotc/ir/safetensors.h"
#include "aotc/ops/ops.h"
#include "aotc/ops/reference.h"
#include "aotc/runtime/device.h"
#include "aotc/runtime/executor.h"
#include "aotc/runtime/emulate_shim_text.h"
#include "aotc/support/fs.h"
#include "aotc/support/hash.h"

namespace aotc {

namespace fs = std::filesystem;

namespace {

using Trampoline = void (*)(void**);
using RunBlock = void (*)(Trampoline, void**, unsigned, unsigned, unsigned, int);

/// The block runner compiled into every kernel library.
constexpr const char* kBlockRunner = R"aotc(
#include <boost/context/fiber.hpp>
#include <vector>
extern "C" { thread_local aotc_dim3 aotc_blockIdx, aotc_threadIdx, aotc_blockDim, aotc_gridDim; }
extern "C" { thread_local int aotc_index_error = 0; }
extern "C" int aotc_take_index_error() { int e = aotc_index_error; aotc_index_error = 0; return e; }
namespace {
namespace bctx = boost::context;
/// Stacks are slices of one region kept for the thread's lifetime.
struct AotcStack {
  char* top;
  std::size_t size;
  bctx::stack_context allocate() { bctx::stack_context sc; sc.size = size; sc.sp = top; return sc; }
  void deallocate(bctx::stack_context&) noexcept {}
};
struct AotcThread { bctx::fiber self, sched; bool done = false; };
thread_local AotcThread* aotc_current = nullptr;
}
extern "C" void __syncthreads() {
  if (aotc_current) aotc_current->sched = std::move(aotc_current->sched).resume();
}
// mode: bit 0, the kernel has barriers (fibers); bit 1, threads in reverse
// order (Note [Emulated order]).
extern "C" void aotc_run_block(void (*f)(void**), void** args, unsigned bx, unsigned bdx, unsigned gdx, int mode) {
  const int barriers = mode & 1;
  const bool rev = (mode & 2) != 0;
  aotc_blockIdx.x = bx; aotc_blockIdx.y = aotc_blockIdx.z = 0;
  aotc_blockDim.x = bdx; aotc_blockDim.y = aotc_blockDim.z = 1;
  aotc_gridDim.x = gdx; aotc_gridDim.y = aotc_gridDim.z = 1;
  aotc_threadIdx.y = aotc_threadIdx.z = 0;
  if (!barriers) {
    for (unsigned k = 0; k < bdx; ++k) { aotc_threadIdx.x = rev ? bdx - 1 - k : k; f(args); }
    return;
  }
  const std::size_t kStack = 1 << 16;
  static thread_local std::vector<char> stacks;
  static thread_local std::vector<AotcThread> threads;
  if (threads.size() < bdx) {
    stacks.assign(kStack * bdx, 0);
    threads.resize(bdx);
  }
  for (unsigned t = 0; t < bdx; ++t) {
    AotcThread& th = threads[t];
    th.done = false;
    th.self = bctx::fiber(std::allocator_arg, AotcStack{stacks.data() + kStack * (t + 1), kStack},
                          [f, args, &th](bctx::fiber&& sched) {
                            th.sched = std::move(sched);
                            f(args);
                            th.done = true;
                            return std::move(th.sched);
                          });
  }
  for (bool any = true; any;) {
    any = false;
    for (unsigned k = 0; k < bdx; ++k) {
      const unsigned t = rev ? bdx - 1 - k : k;
      if (threads[t].done) continue;
      aotc_current = &threads[t];
      aotc_threadIdx.x = t;
      threads[t].self = std::move(threads[t].self).resume();
      any = any || !threads[t].done;
    }
  }
  aotc_current = nullptr;
}
)aotc";

/// The host-compiled kernels of one artifact.
class KernelLibrary {
 public:
  KernelLibrary(const fs::path& dir, const plan::Manifest& manifest, const EmulateOptions& opts) {
    std::ostringstream tu;
    auto slurp = [&](const std::string& rel) {
      std::ifstream f(dir / rel);
      if (!f) throw UserError(SourceLoc{(dir / rel).string(), "", ""}, "cannot read kernel source");
      return std::string((std::istreambuf_iterator<char>(f)), {});
    };
    // The artifact's own prelude: the runtime does not carry the compiler's.
    tu << "#define AOTC_EMULATE 1\n" << kEmulateShim << "\n" << slurp(manifest.prelude) << "\n";
    std::ostringstream tramp;
    std::vector<std::string> names;
    static const std::regex sig(R"(extern "C" __global__ void (k_[0-9a-f]+)\(([^)]*)\))");
    for (const plan::KernelSpec& k : manifest.kernels) {
      std::string src = slurp(k.source);
      std::string::size_type p = src.find("#include \"aotc_prelude.cuh\"");
      if (p != std::string::npos) src.erase(p, std::string("#include \"aotc_prelude.cuh\"").size());
      tu << src << "\n";
      std::smatch m;
      if (!std::regex_search(src, m, sig) || m[1] != k.name) throw UserError(SourceLoc{k.source, "", ""}, "no kernel signature for " + k.name);
      std::string name = m[1], params = m[2];
      tramp << "extern \"C\" void aotc_launch_" << name << "(void** a) { " << name << "(";
      std::stringstream ps(params);
      std::string param;
      int i = 0;
      while (std::getline(ps, param, ',')) {
        if (param.find('*') == std::string::npos) {
          // A scalar (a dynamic-shape artifact's symbol, Note [Symbolic
          // manifest]): passed by address, as cuLaunchKernel takes it.
          tramp << (i ? ", " : "") << "*(long long*)a[" << i << "]";
        } else {
          std::string type = param.substr(0, param.find("__restrict__"));
          tramp << (i ? ", " : "") << "(" << type << ")a[" << i << "]";
        }
        ++i;
      }
      tramp << "); }\n";
      names.push_back(name);
      arity_[name] = i;
      // Shuffles wait for the block's other threads too (Note [Emulated shuffles]).
      if (src.find("__syncthreads") != std::string::npos || src.find("__shfl") != std::string::npos) barriers_.insert(name);
    }
    tu << tramp.str() << kBlockRunner;
    std::string text = tu.str();
    // Content-addressed: the same kernels reuse the same library.
    fs::path cache = opts.cache_dir.empty() ? fs::temp_directory_path() / "aotc-emulate" : fs::path(opts.cache_dir);
    fs::create_directories(cache);
    std::string key = sha256Hex(text + opts.host_compiler).substr(0, 24);
    fs::path lib = cache / ("emu_" + key + ".so");
    if (!fs::exists(lib)) {
      removeStaleTemporaries(cache, "emu_", ".tmp.");  // Note [No debris]
      std::string tmp = (cache / ("emu_" + key + ".tmp." + std::to_string(::getpid()))).string();
      { std::ofstream(tmp + ".cpp") << text; }
      if (opts.progress) opts.progress(cat("host-compiling ", names.size(), " kernels (once per artifact)"), 0, 0);
      std::string cmd = opts.host_compiler + " -std=c++17 -O2 -fPIC -shared -w -o " + tmp + ".so " + tmp + ".cpp -lboost_context > " + tmp +
                        ".log 2>&1";
      int rc = std::system(cmd.c_str());
      if (rc != 0) {
        std::ifstream lf(tmp + ".log");
        std::string log((std::istreambuf_iterator<char>(lf)), {});
        throw UserError(SourceLoc{tmp + ".cpp", "", "emulate"}, "host compilation of the kernels failed: " + log.substr(0, 2000));
      }
      fs::rename(tmp + ".so", lib);  // atomic: concurrent runs see a whole library or none
      if (opts.progress) opts.progress("host-compiled", 1, 1);
      std::error_code ec;
      fs::remove(tmp + ".cpp", ec);
      fs::remove(tmp + ".log", ec);
    }
    handle_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw UserError(SourceLoc{lib.string(), "", "emulate"}, std::string("dlopen failed: ") + dlerror());
    runBlock_ = reinterpret_cast<RunBlock>(dlsym(handle_, "aotc_run_block"));
    takeIndexError_ = reinterpret_cast<int (*)()>(dlsym(handle_, "aotc_take_index_error"));
    if (!runBlock_) throw UserError(SourceLoc{lib.string(), "", "emulate"}, "kernel library has no block runner");
    for (auto& n : names) fns_[n] = reinterpret_cast<Trampoline>(dlsym(handle_, ("aotc_launch_" + n).c_str()));
  }
  ~KernelLibrary() {
    if (handle_) dlclose(handle_);
  }
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  void launch(const plan::Launch& l, std::vector<void*>& args) const {
    auto it = fns_.find(l.kernel);
    if (it == fns_.end() || !it->second) throw UserError(SourceLoc{}, "kernel " + l.kernel + " is not in the artifact's kernel library");
    if (static_cast<int>(args.size()) != arity_.at(l.kernel))
      throw UserError(SourceLoc{}, cat("kernel ", l.kernel, " takes ", arity_.at(l.kernel), " arguments, the step passes ", args.size()));
    Trampoline f = it->second;
    unsigned gx = static_cast<unsigned>(l.grid[0]), bx = static_cast<unsigned>(l.block[0]);
    if (l.grid[1] != 1 || l.grid[2] != 1 || l.block[1] != 1 || l.block[2] != 1) throw UserError(SourceLoc{}, "emulate: only 1-D launches");
    const std::string& kernel = l.kernel;
    const int mode = (barriers_.count(kernel) ? 1 : 0) | (reverse_ ? 2 : 0);
    if (takeIndexError_) takeIndexError_();
    // Note [Emulated order]: AOTC_EMULATE_ORDER=reverse runs the blocks, and
    // each block's threads between barriers, last to first.  A GPU runs them
    // in no order; a kernel whose result depends on the order (threads or
    // blocks racing on memory) gives another result reversed, which two
    // step traces (Note [Step trace]) pin to the kernel.
    for (unsigned k = 0; k < gx; ++k) runBlock_(f, args.data(), reverse_ ? gx - 1 - k : k, bx, gx, mode);
  }
  /// The step tag the last launch on this thread recorded (Note [Index errors]), cleared.
  int takeIndexError() const { return takeIndexError_ ? takeIndexError_() : 0; }

 private:
  void* handle_ = nullptr;
  RunBlock runBlock_ = nullptr;
  int (*takeIndexError_)() = nullptr;
  std::set<std::string> barriers_;
  std::map<std::string, Trampoline> fns_;
  std::map<std::string, int> arity_;
  /// Note [Emulated order]: read once, when the library is loaded.
  const bool reverse_ = [] {
    const char* v = std::getenv("AOTC_EMULATE_ORDER");
    return v && std::string(v) == "reverse";
  }();
};

/// The host address of a device pointer (device memory is host memory here).
unsigned char* at(DevicePtr p) { return reinterpret_cast<unsigned char*>(static_cast<uintptr_t>(p)); }

/// A convolution operand as a device tensor.
DeviceTensor tensorOf(DevicePtr p, DType dt, const plan::ConvTensor& d) { return DeviceTensor{p, dt, d.dims, d.strides, d.offset}; }

class EmulateDevice final : public Device {
 public:
  explicit EmulateDevice(const EmulateOptions& opts) : opts_(opts) {}
  ~EmulateDevice() override {
    for (auto& [p, n] : live_) std::free(reinterpret_cast<void*>(static_cast<uintptr_t>(p)));
  }
  std::string name() const override { return "emulate"; }

  DevicePtr allocate(size_t bytes) override {
    // Slack past the end: vectorized tails may read (never write) up to 16
    // bytes beyond a buffer, as on the device where allocations are rounded.
    if (bytes > (size_t{1} << 48)) throw UserError(SourceLoc{"", "", "emulate"}, cat("cannot allocate ", bytes, " bytes"));
    size_t n = (bytes + 16 + 255) / 256 * 256;
    void* p = std::aligned_alloc(256, n);
    if (!p) throw UserError(SourceLoc{"", "", "emulate"}, cat("out of host memory allocating ", bytes, " bytes"));
    std::memset(p, 0, n);
    DevicePtr d = reinterpret_cast<uintptr_t>(p);
    live_[d] = n;
    return d;
  }
  void release(DevicePtr p) override {
    if (live_.erase(p)) std::free(reinterpret_cast<void*>(static_cast<uintptr_t>(p)));
  }
  void copyToDevice(DevicePtr dst, const void* src, size_t bytes) override { std::memcpy(at(dst), src, bytes); }
  void copyToHost(void* dst, DevicePtr src, size_t bytes) override { std::memcpy(dst, at(src), bytes); }
  void fill(DevicePtr dst, unsigned char value, size_t bytes) override { std::memset(at(dst), value, bytes); }
  void fillWords(DevicePtr dst, uint32_t value, size_t count) override {
    for (size_t k = 0; k < count; ++k) std::memcpy(at(dst + k * sizeof value), &value, sizeof value);
  }
  void copyAsync(DevicePtr dst, DevicePtr src, size_t bytes) override { std::memmove(at(dst), at(src), bytes); }
  void loadKernels(const plan::Manifest& m, const std::string& dir) override { lib_ = std::make_unique<KernelLibrary>(dir, m, opts_); }
  int64_t synchronize() override { return 0; }  // every step ran when it was enqueued

  std::unique_ptr<PreparedPhase> prepare(const plan::Manifest& m, plan::Phase phase, const PhaseArgs& args) override;

  /// One launch; a checked kernel (Note [Index errors]) takes its step's tag
  /// after the symbols' values.
  void launch(const plan::Launch& l, const std::vector<DevicePtr>& args, const long long* scalars, size_t nscalars) {
    AOTC_CHECK(lib_, "emulate: kernels not loaded");
    std::vector<void*> a;
    for (DevicePtr p : args) a.push_back(at(p));
    for (size_t i = 0; i < nscalars; ++i) a.push_back(const_cast<long long*>(scalars + i));
    lib_->launch(l, a);
    if (lib_->takeIndexError()) throw UserError(SourceLoc{}, "index out of range (an index tensor holds a value outside its dim)");
  }

  /// cublasGemmEx / cublasGemmStridedBatchedEx / cublasLtMatmul with a bias
  /// (or relu-bias) epilogue, column-major, as spelled out.
  void gemm(const plan::Gemm& g, DevicePtr pa, DevicePtr pb, DevicePtr pc, DevicePtr pbias) {
    const DType dt = g.dtype;
    const int64_t es = dtypeSize(dt);
    const unsigned char* bias = g.bias ? at(pbias) + g.bias->offset * es : nullptr;
    for (int64_t z = 0; z < g.batch; ++z) {
      const unsigned char* a = at(pa) + (g.A.offset + z * g.A.stride) * es;
      const unsigned char* b = at(pb) + (g.B.offset + z * g.B.stride) * es;
      unsigned char* c = at(pc) + (g.C.offset + z * g.C.stride) * es;
      for (int64_t j = 0; j < g.n; ++j)
        for (int64_t i = 0; i < g.m; ++i) {
          double s = 0;
          for (int64_t p = 0; p < g.k; ++p) {
            double av = loadElement(dt, a + (g.transa ? p + i * g.A.ld : i + p * g.A.ld) * es);
            double bv = loadElement(dt, b + (g.transb ? j + p * g.B.ld : p + j * g.B.ld) * es);
            s += av * bv;
          }
          unsigned char* out = c + (i + j * g.C.ld) * es;
          double v = g.alpha * s + (g.beta != 0 ? g.beta * loadElement(dt, out) : 0.0);
          if (bias) v += loadElement(dt, bias + i * es);  // CUBLASLT_EPILOGUE_BIAS: one value per row (m)
          if (g.relu && v < 0) v = 0;  // CUBLASLT_EPILOGUE_RELU_BIAS, as aotc_relu (Note [GEMM relu epilogue])
          storeElement(dt, out, v);
        }
    }
  }

  /// cuDNN convolutions via the reference kernels, on the described tensors.
  void conv(const plan::Conv& c, DevicePtr pa, DevicePtr pb, DevicePtr pout) {
    Attrs a{{"stride", c.stride}, {"padding", c.pad}, {"dilation", c.dilation}, {"groups", c.groups}};
    HostTensor x = readDeviceTensor(*this, tensorOf(pa, c.dtype, c.a)), w = readDeviceTensor(*this, tensorOf(pb, c.dtype, c.b));
    auto ct = [](const HostTensor& t) { return TensorType::contiguous(t.dtype, t.sizes); };
    OpKind op = OpKind::Conv2d;
    if (c.call == plan::ConvCall::BackwardData) {
      op = OpKind::Conv2dBackwardInput;
      a["input_size"] = c.out.dims;
    } else if (c.call == plan::ConvCall::BackwardFilter) {
      op = OpKind::Conv2dBackwardWeight;
      a["weight_size"] = c.out.dims;
    }
    auto ot = inferTypes(op, {ct(x), ct(w)}, a);
    if (ot[0].sizes != c.out.dims) throw UserError(SourceLoc{}, "the convolution's output dims do not follow from its operands");
    writeDeviceTensor(*this, tensorOf(pout, c.dtype, c.out), referenceEval(op, {&x, &w}, a, ot)[0]);
  }

 private:
  EmulateOptions opts_;
  std::unique_ptr<KernelLibrary> lib_;
  std::map<DevicePtr, size_t> live_;
};

/// The emulate device's prepared phase: each step's arguments resolved to
/// indices once; a step runs when it is enqueued.
class EmulatePhase final : public PreparedPhase {
 public:
  EmulatePhase(EmulateDevice& d, const plan::Manifest& m, plan::Phase phase, const PhaseArgs& args)
      : dev_(d), prog_(m.program(phase)), args_(args) {
    for (size_t i = 0; i < prog_.steps.size(); ++i) {
      std::vector<long long> sc;
      if (const plan::Launch* l = std::get_if<plan::Launch>(&prog_.steps[i])) {
        sc.assign(l->scalars.begin(), l->scalars.end());
        const plan::KernelSpec* k = m.kernel(l->kernel);
        if (k && k->index_checked) sc.push_back(stepTag(phase, i));
      }
      scalars_.push_back(std::move(sc));
    }
  }
  void enqueue(size_t i) override {
    const std::vector<DevicePtr>& roots = *args_.roots;
    const std::vector<uint32_t>& ix = args_.steps[i];
    auto ptr = [&](size_t k) { return roots[ix[k]]; };
    const plan::Step& st = prog_.steps[i];
    if (const plan::Launch* l = std::get_if<plan::Launch>(&st)) {
      std::vector<DevicePtr> a(ix.size());
      for (size_t k = 0; k < ix.size(); ++k) a[k] = ptr(k);
      dev_.launch(*l, a, scalars_[i].data(), scalars_[i].size());
    } else if (const plan::Gemm* g = std::get_if<plan::Gemm>(&st)) {
      dev_.gemm(*g, ptr(0), ptr(1), ptr(2), g->bias ? ptr(3) : 0);
    } else {
      dev_.conv(std::get<plan::Conv>(st), ptr(0), ptr(1), ptr(2));
    }
  }

 private:
  EmulateDevice& dev_;
  const plan::Program& prog_;
  PhaseArgs args_;
  std::vector<std::vector<long long>> scalars_;
};

std::unique_ptr<PreparedPhase> EmulateDevice::prepare(const plan::Manifest& m, plan::Phase phase, const PhaseArgs& args) {
  return std::make_unique<EmulatePhase>(*this, m, phase, args);
}

}  // namespace

std::unique_ptr<Device> makeEmulateDevice(const EmulateOptions& opts) { return std::make_unique<EmulateDevice>(opts); }

}  // namespace aotc
