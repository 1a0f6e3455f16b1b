//===- emulate_runtime.cpp - Run the manifest's steps on the CPU -----------===//
//
// The emulate backend proves on any machine that the generated kernels and
// the manifest compute the right thing: every kernel source of the artifact
// is compiled by the host C++ compiler against a shim for the CUDA built-ins
// (src/runtime/emulate_shim.h), and each program's steps run in order:
// launches loop over the grid and the block calling the kernel, GEMM and
// convolution steps run host implementations of exactly the cuBLAS/cuDNN
// calls the manifest spells out, views are pointer arithmetic on root
// buffers.  Buffers hold each dtype's real bytes, laid out as the manifest
// says.
//
// Note [Emulated barriers]: a kernel without __syncthreads runs its threads
// to completion one after another.  A kernel with barriers runs each block's
// threads as fibers (Boost.Context) on one host thread: __syncthreads switches to
// the scheduler, which resumes every unfinished thread in order, so all of a
// block's threads reach a barrier before any passes it.
//===----------------------------------------------------------------------===//
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "aotc/codegen/codegen.h"
#include "aotc/support/fs.h"
#include "aotc/ops/ops.h"
#include "aotc/runtime/emulate_shim_text.h"
#include "aotc/ir/safetensors.h"
#include "aotc/runtime/reference_runtime.h"

namespace aotc {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct Layout {
  DType dtype;
  Ints sizes, strides;
  int64_t offset = 0;
};

Layout layoutOf(const json& b) {
  auto d = parseDType(b.at("dtype").get<std::string>());
  AOTC_CHECK(d, "bad dtype in manifest");
  return Layout{*d, b.at("shape").get<Ints>(), b.at("strides").get<Ints>(), b.value("offset", int64_t{0})};
}

/// Visits each element of a strided layout: (row-major index, storage element offset).
template <typename F>
void forLayout(const Ints& sizes, const Ints& strides, int64_t offset, F f) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  Ints c(sizes.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = offset;
    for (size_t d = 0; d < c.size(); ++d) off += c[d] * strides[d];
    f(e, off);
    for (size_t d = c.size(); d-- > 0;) {
      if (++c[d] < sizes[d]) break;
      c[d] = 0;
    }
  }
}

HostTensor readLayout(const unsigned char* base, DType d, const Ints& sizes, const Ints& strides, int64_t offset) {
  HostTensor t = HostTensor::zeros(d, sizes);
  int64_t es = dtypeSize(d);
  forLayout(sizes, strides, offset, [&](int64_t e, int64_t off) { t.data[static_cast<size_t>(e)] = loadElement(d, base + off * es); });
  return t;
}

void writeLayout(unsigned char* base, DType d, const Ints& sizes, const Ints& strides, int64_t offset, const HostTensor& t) {
  int64_t es = dtypeSize(d);
  forLayout(sizes, strides, offset, [&](int64_t e, int64_t off) { storeElement(d, base + off * es, t.data[static_cast<size_t>(e)]); });
}

using Trampoline = void (*)(void**);
using RunBlock = void (*)(Trampoline, void**, unsigned, unsigned, unsigned, int);

/// The block runner compiled into every kernel library.
constexpr const char* kBlockRunner = R"aotc(
#include <boost/context/fiber.hpp>
#include <vector>
extern "C" { thread_local aotc_dim3 aotc_blockIdx, aotc_threadIdx, aotc_blockDim, aotc_gridDim; }
extern "C" { int aotc_index_error = 0; }
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
extern "C" void aotc_run_block(void (*f)(void**), void** args, unsigned bx, unsigned bdx, unsigned gdx, int barriers) {
  aotc_blockIdx.x = bx; aotc_blockIdx.y = aotc_blockIdx.z = 0;
  aotc_blockDim.x = bdx; aotc_blockDim.y = aotc_blockDim.z = 1;
  aotc_gridDim.x = gdx; aotc_gridDim.y = aotc_gridDim.z = 1;
  aotc_threadIdx.y = aotc_threadIdx.z = 0;
  if (!barriers) {
    for (unsigned t = 0; t < bdx; ++t) { aotc_threadIdx.x = t; f(args); }
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
    for (unsigned t = 0; t < bdx; ++t) {
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
  KernelLibrary(const fs::path& dir, const json& manifest, const RunOptions& opts) {
    std::ostringstream tu;
    tu << "#define AOTC_EMULATE 1\n" << kEmulateShim << "\n" << devicePrelude() << "\n";
    std::ostringstream tramp;
    std::vector<std::string> names;
    static const std::regex sig(R"(extern "C" __global__ void (k_[0-9a-f]+)\(([^)]*)\))");
    for (const json& k : manifest.at("kernels")) {
      std::ifstream f(dir / k.at("source").get<std::string>());
      if (!f) throw UserError(SourceLoc{(dir / k.at("source").get<std::string>()).string(), "", ""}, "cannot read kernel source");
      std::string src((std::istreambuf_iterator<char>(f)), {});
      std::string::size_type p = src.find("#include \"aotc_prelude.cuh\"");
      if (p != std::string::npos) src.erase(p, std::string("#include \"aotc_prelude.cuh\"").size());
      tu << src << "\n";
      std::smatch m;
      if (!std::regex_search(src, m, sig)) throw UserError(SourceLoc{k.at("source").get<std::string>(), "", ""}, "no kernel signature");
      std::string name = m[1], params = m[2];
      tramp << "extern \"C\" void aotc_launch_" << name << "(void** a) { " << name << "(";
      std::stringstream ps(params);
      std::string param;
      int i = 0;
      while (std::getline(ps, param, ',')) {
        std::string type = param.substr(0, param.find("__restrict__"));
        tramp << (i ? ", " : "") << "(" << type << ")a[" << i << "]";
        ++i;
      }
      tramp << "); }\n";
      names.push_back(name);
      if (src.find("__syncthreads") != std::string::npos) barriers_.insert(name);
    }
    tu << tramp.str() << kBlockRunner;
    std::string text = tu.str();
    // Content-addressed: the same kernels reuse the same library.
    fs::path cache = opts.emulate_cache_dir.empty() ? fs::temp_directory_path() / "aotc-emulate" : fs::path(opts.emulate_cache_dir);
    fs::create_directories(cache);
    std::string key = sha256Hex(text + opts.host_compiler).substr(0, 24);
    fs::path lib = cache / ("emu_" + key + ".so");
    if (!fs::exists(lib)) {
      removeStaleTemporaries(cache, "emu_", ".tmp.");  // Note [No debris]
      std::string tmp = (cache / ("emu_" + key + ".tmp." + std::to_string(::getpid()))).string();
      { std::ofstream(tmp + ".cpp") << text; }
      std::string cmd = opts.host_compiler + " -std=c++17 -O2 -fPIC -shared -w -o " + tmp + ".so " + tmp + ".cpp -lboost_context > " + tmp +
                        ".log 2>&1";
      int rc = std::system(cmd.c_str());
      if (rc != 0) {
        std::ifstream lf(tmp + ".log");
        std::string log((std::istreambuf_iterator<char>(lf)), {});
        throw UserError(SourceLoc{tmp + ".cpp", "", "emulate"}, "host compilation of the kernels failed: " + log.substr(0, 2000));
      }
      fs::rename(tmp + ".so", lib);  // atomic: concurrent runs see a whole library or none
      std::error_code ec;
      fs::remove(tmp + ".cpp", ec);
      fs::remove(tmp + ".log", ec);
    }
    handle_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw UserError(SourceLoc{lib.string(), "", "emulate"}, std::string("dlopen failed: ") + dlerror());
    runBlock_ = reinterpret_cast<RunBlock>(dlsym(handle_, "aotc_run_block"));
    indexError_ = reinterpret_cast<int*>(dlsym(handle_, "aotc_index_error"));
    if (!runBlock_) throw UserError(SourceLoc{lib.string(), "", "emulate"}, "kernel library has no block runner");
    for (auto& n : names) fns_[n] = reinterpret_cast<Trampoline>(dlsym(handle_, ("aotc_launch_" + n).c_str()));
  }
  ~KernelLibrary() {
    if (handle_) dlclose(handle_);
  }
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  void launch(const std::string& kernel, const json& grid, const json& block, std::vector<void*>& args) const {
    Trampoline f = fns_.at(kernel);
    unsigned gx = grid[0].get<unsigned>(), bx = block[0].get<unsigned>();
    AOTC_CHECK(grid[1] == 1 && grid[2] == 1 && block[1] == 1 && block[2] == 1, "emulate: only 1-D launches");
    int barriers = barriers_.count(kernel) ? 1 : 0;
    if (indexError_) *indexError_ = 0;
    for (unsigned b = 0; b < gx; ++b) runBlock_(f, args.data(), b, bx, gx, barriers);
  }
  /// Whether the last launch met an index outside its dim (Note [Index errors]).
  bool indexError() const { return indexError_ && *indexError_; }

 private:
  void* handle_ = nullptr;
  RunBlock runBlock_ = nullptr;
  int* indexError_ = nullptr;
  std::set<std::string> barriers_;
  std::map<std::string, Trampoline> fns_;
};

class EmulateBackend final : public ProgramBackend {
 public:
  EmulateBackend(const std::string& dir, const json& manifest, const RunOptions& opts)
      : manifest_(manifest), lib_(dir, manifest, opts) {}

  std::vector<HostTensor> run(const std::string& program, const Graph& ir, const std::vector<HostTensor>& inputs,
                              const std::function<void(const std::string&, const HostTensor&)>& on_epilogue) override {
    const json& prog = manifest_.at(program);
    std::map<std::string, std::vector<unsigned char>> storage;
    std::map<std::string, std::string> root;
    std::map<std::string, Layout> layout;
    // Owned buffers live in the program's arena at their planned offsets, so
    // a wrong memory plan shows up as wrong results here.
    std::vector<unsigned char> arena(static_cast<size_t>(prog.value("arena_bytes", int64_t{0})) + 64, 0);
    std::map<std::string, unsigned char*> arenaPtr;
    size_t in = 0;
    for (const json& b : prog.at("buffers")) {
      std::string name = b.at("name"), kind = b.at("kind");
      Layout l = layoutOf(b);
      layout[name] = l;
      if (kind == "view") {
        root[name] = root.at(b.at("base").get<std::string>());
        continue;
      }
      root[name] = name;
      if (kind == "alloc" && b.contains("arena_offset")) {
        arenaPtr[name] = arena.data() + b["arena_offset"].get<int64_t>();
        continue;
      }
      TensorType t{l.dtype, l.sizes, l.strides, l.offset};
      int64_t bytes = kind == "alloc" ? b.at("bytes").get<int64_t>() : t.storageSpan() * dtypeSize(l.dtype);
      storage[name].assign(static_cast<size_t>(std::max<int64_t>(bytes, 1)) + 16, 0);
      if (kind == "input") {
        AOTC_CHECK(in < inputs.size(), "emulate: more input buffers than inputs");
        writeLayout(storage[name].data(), l.dtype, l.sizes, l.strides, l.offset, inputs[in++]);
      }
    }
    AOTC_CHECK(in == inputs.size(), "emulate: ", inputs.size(), " inputs for ", in, " input buffers");
    auto ptr = [&](const std::string& buf) {
      const std::string& r = root.at(buf);
      auto a = arenaPtr.find(r);
      return a != arenaPtr.end() ? a->second : storage.at(r).data();
    };
    std::vector<std::pair<std::string, std::string>> epilogues;  // (input, buffer)
    for (const json& st : prog.at("steps")) {
      const std::string op = st.at("op");
      if (op == "launch") {
        std::vector<void*> args;
        for (auto& a : st.at("args")) args.push_back(ptr(a.get<std::string>()));
        lib_.launch(st.at("kernel"), st.at("grid"), st.at("block"), args);
        if (lib_.indexError()) {
          std::string nodes;
          for (const json& k : manifest_.at("kernels"))
            if (k.value("name", "") == st.at("kernel").get<std::string>() && k.contains("nodes"))
              for (const json& nd : k["nodes"]) nodes += (nodes.empty() ? "" : ", ") + nd.get<std::string>();
          throw UserError(SourceLoc{program, nodes, "emulate"},
                          "index out of range in kernel " + st.at("kernel").get<std::string>() + " (an index tensor holds a value outside its dim)");
        }
        if (st.contains("epilogue")) epilogues.push_back({st["epilogue"]["input"], st["args"][0]});
      } else if (op == "gemm" || op == "gemm_batched") {
        gemm(st, ptr, layout);
      } else if (op == "conv") {
        conv(st, ptr, layout);
      } else {
        throw UserError(SourceLoc{program, "", "emulate"}, "unknown step '" + op + "'");
      }
    }
    for (auto& [input, buf] : epilogues) {
      const Layout& l = layout.at(buf);
      on_epilogue(input, readLayout(ptr(buf), l.dtype, l.sizes, l.strides, l.offset));
    }
    std::vector<HostTensor> outs;
    for (const json& o : prog.at("outputs")) {
      const Layout& l = layout.at(o.at("buffer").get<std::string>());
      outs.push_back(readLayout(ptr(o.at("buffer")), l.dtype, l.sizes, l.strides, l.offset));
    }
    AOTC_CHECK(outs.size() == ir.outputs.size(), "emulate: manifest and IR disagree on outputs");
    return outs;
  }

 private:
  /// cublasGemmEx / cublasGemmStridedBatchedEx, column-major, as spelled out.
  template <typename Ptr>
  void gemm(const json& st, Ptr ptr, const std::map<std::string, Layout>& layout) {
    int64_t m = st["m"], n = st["n"], k = st["k"], batch = st.value("batch", int64_t{1});
    bool ta = st["transa"] == "T", tb = st["transb"] == "T";
    const json &A = st["A"], &B = st["B"], &C = st["C"];
    DType dt = layout.at(C["buffer"].get<std::string>()).dtype;
    int64_t es = dtypeSize(dt);
    int64_t lda = A["ld"], ldb = B["ld"], ldc = C["ld"];
    double alpha = st["alpha"], beta = st["beta"];
    const unsigned char* bias = nullptr;
    if (st.contains("epilogue")) {
      AOTC_CHECK(st["epilogue"] == "CUBLASLT_EPILOGUE_BIAS", "emulate: unknown GEMM epilogue");
      bias = ptr(st["bias"]["buffer"]) + st["bias"]["offset"].get<int64_t>() * es;
    }
    for (int64_t z = 0; z < batch; ++z) {
      const unsigned char* a = ptr(A["buffer"]) + (A["offset"].get<int64_t>() + z * A.value("stride", int64_t{0})) * es;
      const unsigned char* b = ptr(B["buffer"]) + (B["offset"].get<int64_t>() + z * B.value("stride", int64_t{0})) * es;
      unsigned char* c = ptr(C["buffer"]) + (C["offset"].get<int64_t>() + z * C.value("stride", int64_t{0})) * es;
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < m; ++i) {
          double s = 0;
          for (int64_t p = 0; p < k; ++p) {
            double av = loadElement(dt, a + (ta ? p + i * lda : i + p * lda) * es);
            double bv = loadElement(dt, b + (tb ? j + p * ldb : p + j * ldb) * es);
            s += av * bv;
          }
          unsigned char* out = c + (i + j * ldc) * es;
          double v = alpha * s + (beta != 0 ? beta * loadElement(dt, out) : 0.0);
          if (bias) v += loadElement(dt, bias + i * es);  // CUBLASLT_EPILOGUE_BIAS: one value per row (m)
          storeElement(dt, out, v);
        }
    }
  }

  /// cuDNN convolutions via the reference kernels, on the described tensors.
  template <typename Ptr>
  void conv(const json& st, Ptr ptr, const std::map<std::string, Layout>& layout) {
    auto read = [&](const json& d) {
      DType dt = layout.at(d["buffer"].get<std::string>()).dtype;
      return readLayout(ptr(d["buffer"]), dt, d["dims"].get<Ints>(), d["strides"].get<Ints>(), d["offset"].get<int64_t>());
    };
    auto write = [&](const json& d, const HostTensor& t) {
      DType dt = layout.at(d["buffer"].get<std::string>()).dtype;
      writeLayout(ptr(d["buffer"]), dt, d["dims"].get<Ints>(), d["strides"].get<Ints>(), d["offset"].get<int64_t>(), t);
    };
    Attrs a{{"stride", st["stride"].get<Ints>()}, {"padding", st["pad"].get<Ints>()}, {"dilation", st["dilation"].get<Ints>()},
            {"groups", st["groups"].get<int64_t>()}};
    const std::string call = st["call"];
    if (call == "cudnnConvolutionForward") {
      HostTensor x = read(st["x"]), w = read(st["w"]);
      auto ot = inferTypes(OpKind::Conv2d, {TensorType::contiguous(x.dtype, x.sizes), TensorType::contiguous(w.dtype, w.sizes)}, a);
      write(st["y"], referenceEval(OpKind::Conv2d, {&x, &w}, a, ot)[0]);
    } else if (call == "cudnnConvolutionBackwardData") {
      HostTensor dy = read(st["dy"]), w = read(st["w"]);
      a["input_size"] = st["dx"]["dims"].get<Ints>();
      auto ot = inferTypes(OpKind::Conv2dBackwardInput, {TensorType::contiguous(dy.dtype, dy.sizes), TensorType::contiguous(w.dtype, w.sizes)}, a);
      write(st["dx"], referenceEval(OpKind::Conv2dBackwardInput, {&dy, &w}, a, ot)[0]);
    } else {
      HostTensor dy = read(st["dy"]), x = read(st["x"]);
      a["weight_size"] = st["dw"]["dims"].get<Ints>();
      auto ot = inferTypes(OpKind::Conv2dBackwardWeight, {TensorType::contiguous(dy.dtype, dy.sizes), TensorType::contiguous(x.dtype, x.sizes)}, a);
      write(st["dw"], referenceEval(OpKind::Conv2dBackwardWeight, {&dy, &x}, a, ot)[0]);
    }
  }

  json manifest_;
  KernelLibrary lib_;
};

}  // namespace

std::unique_ptr<ProgramBackend> makeEmulateBackend(const std::string& dir, const json& manifest, const RunOptions& opts) {
  return std::make_unique<EmulateBackend>(dir, manifest, opts);
}

}  // namespace aotc
