//===- nvrtc.cpp - NVRTC wrapper -------------------------------------------===//
#include <dlfcn.h>
#include <nvJitLink.h>
#include <nvrtc.h>
#include <openssl/evp.h>

#include <algorithm>
#include <unistd.h>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <mutex>
#include <tuple>
#include <regex>
#include <set>
#include <sstream>

#include "aotc/codegen/codegen.h"
#include "aotc/support/fs.h"

namespace aotc {


namespace {
namespace fs = std::filesystem;

/// Note [Lazy NVRTC]: NVRTC and nvJitLink are ~200 MB of shared libraries;
/// mapping and relocating them at start-up costs more than a whole compile
/// that hits the kernel cache.  They are opened with dlopen the first time a
/// kernel must really be compiled (PyTorch's LazyNVRTC does the same), so a
/// warm compile, `aotc run` and `aotc inspect` never load them.  The table
/// is built once and never changes after.
struct CudaCompilers {
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetNumSupportedArchs) numArchs = nullptr;
  decltype(&::nvrtcGetSupportedArchs) archs = nullptr;
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcGetProgramLogSize) logSize = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetPTXSize) ptxSize = nullptr;
  decltype(&::nvrtcGetPTX) ptx = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubinSize = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
  decltype(&::nvrtcGetErrorString) errorString = nullptr;
  decltype(&::nvJitLinkVersion) jlVersion = nullptr;
  decltype(&::__nvJitLinkCreate_13_0) jlCreate = nullptr;
  decltype(&::__nvJitLinkDestroy_13_0) jlDestroy = nullptr;
  decltype(&::__nvJitLinkAddData_13_0) jlAddData = nullptr;
  decltype(&::__nvJitLinkComplete_13_0) jlComplete = nullptr;
  decltype(&::__nvJitLinkGetLinkedCubinSize_13_0) jlCubinSize = nullptr;
  decltype(&::__nvJitLinkGetLinkedCubin_13_0) jlCubin = nullptr;
  decltype(&::__nvJitLinkGetErrorLogSize_13_0) jlLogSize = nullptr;
  decltype(&::__nvJitLinkGetErrorLog_13_0) jlLog = nullptr;
};

/// The library files aotc was built against, else the loader's search path.
void* openLibrary(const char* path, const char* soname) {
  void* h = fs::exists(path) ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (!h) h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!h) throw UserError(SourceLoc{soname, "", ""}, std::string("cannot load the CUDA compiler library: ") + dlerror());
  return h;
}

template <typename F>
void bind(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) throw UserError(SourceLoc{name, "", ""}, "the CUDA compiler library lacks this function");
}

CudaCompilers loadCompilers() {
  CudaCompilers c;
  void* rtc = openLibrary(AOTC_NVRTC_LIBRARY, "libnvrtc.so.13");
  bind(rtc, "nvrtcVersion", c.version);
  bind(rtc, "nvrtcGetNumSupportedArchs", c.numArchs);
  bind(rtc, "nvrtcGetSupportedArchs", c.archs);
  bind(rtc, "nvrtcCreateProgram", c.create);
  bind(rtc, "nvrtcDestroyProgram", c.destroy);
  bind(rtc, "nvrtcCompileProgram", c.compile);
  bind(rtc, "nvrtcGetProgramLogSize", c.logSize);
  bind(rtc, "nvrtcGetProgramLog", c.log);
  bind(rtc, "nvrtcGetPTXSize", c.ptxSize);
  bind(rtc, "nvrtcGetPTX", c.ptx);
  bind(rtc, "nvrtcGetCUBINSize", c.cubinSize);
  bind(rtc, "nvrtcGetCUBIN", c.cubin);
  bind(rtc, "nvrtcGetErrorString", c.errorString);
  void* jl = openLibrary(AOTC_NVJITLINK_LIBRARY, "libnvJitLink.so.13");
  bind(jl, "nvJitLinkVersion", c.jlVersion);
  bind(jl, "__nvJitLinkCreate_13_0", c.jlCreate);
  bind(jl, "__nvJitLinkDestroy_13_0", c.jlDestroy);
  bind(jl, "__nvJitLinkAddData_13_0", c.jlAddData);
  bind(jl, "__nvJitLinkComplete_13_0", c.jlComplete);
  bind(jl, "__nvJitLinkGetLinkedCubinSize_13_0", c.jlCubinSize);
  bind(jl, "__nvJitLinkGetLinkedCubin_13_0", c.jlCubin);
  bind(jl, "__nvJitLinkGetErrorLogSize_13_0", c.jlLogSize);
  bind(jl, "__nvJitLinkGetErrorLog_13_0", c.jlLog);
  return c;
}

const CudaCompilers& compilers() {
  static const CudaCompilers c = loadCompilers();
  return c;
}

/// Identifies the compiler libraries without loading them (path, size and
/// modification time, as ccache identifies a compiler): part of every
/// cache key.
std::string toolchainId() {
  std::string id;
  for (const char* p : {AOTC_NVRTC_LIBRARY, AOTC_NVJITLINK_LIBRARY}) {
    std::error_code ec;
    fs::path real = fs::canonical(p, ec);
    auto size = ec ? 0 : fs::file_size(real, ec);
    auto when = ec ? fs::file_time_type{} : fs::last_write_time(real, ec);
    id += real.string() + ":" + std::to_string(size) + ":" + std::to_string(when.time_since_epoch().count()) + ";";
  }
  return id;
}
}  // namespace

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  compilers().version(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string nvrtcVersionCached(const std::string& cache_dir) {
  if (cache_dir.empty()) return nvrtcVersion();
  std::string key = sha256Hex(toolchainId());
  fs::path p = fs::path(cache_dir) / "toolchain" / (key.substr(0, 16) + ".txt");
  std::ifstream f(p);
  std::string v;
  if (f && std::getline(f, v) && !v.empty()) return v;
  v = nvrtcVersion();
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  removeStaleTemporaries(p.parent_path(), "", ".tmp.");  // Note [No debris]
  fs::path tmp = p;
  // Threads of one process (aotc batch) may write it at once: a name each.
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  { std::ofstream(tmp) << v << "\n"; }
  fs::rename(tmp, p, ec);
  if (ec) fs::remove(tmp, ec);  // a cache that cannot be written is only a slower cache
  return v;
}

bool ptxOnlyArch(const std::string& arch) { return arch.rfind("compute_", 0) == 0; }

bool archSpelling(const std::string& arch) {
  size_t digits = ptxOnlyArch(arch) ? 8 : arch.rfind("sm_", 0) == 0 ? 3 : std::string::npos;
  return digits != std::string::npos && arch.size() > digits && arch.size() < digits + 6 &&
         arch.find_first_not_of("0123456789", digits) == std::string::npos;
}

/// The number of an arch spelled sm_<n> or compute_<n>.
int archNumber(const std::string& arch) { return std::stoi(arch.substr(arch.find('_') + 1)); }

bool nvrtcSupportsArch(const std::string& arch) {
  if (!archSpelling(arch)) return false;
  int n = 0;
  if (compilers().numArchs(&n) != NVRTC_SUCCESS) return false;
  std::vector<int> archs(static_cast<size_t>(n));
  compilers().archs(archs.data());
  return std::find(archs.begin(), archs.end(), archNumber(arch)) != archs.end();
}

namespace {
/// The options besides --gpu-architecture, in the cache key.
// --minimal (NVRTC 12.4+): leaves out the texture, surface and runtime-API
// declarations no generated kernel uses; a third of NVRTC's time on a
// model's kernels (scripts/bench_compile.py).
constexpr const char* kNvrtcOptions = "--std=c++17 -default-device --include-path=" AOTC_CUDA_INCLUDE_DIR " --minimal";

/// Compiles one translation unit; nullopt-like empty log on success.
bool compileSource(const std::string& src, const std::string& file, const std::string& arch, NvrtcOutput& out,
                   std::string& error);
}  // namespace

namespace {
/// Note [NVRTC failures]: the error names the kernel's graph nodes and
/// carries NVRTC's log and the kernel's source.
[[noreturn]] void throwKernelFailure(const KernelSource& k, const std::string& arch, const std::string& log) {
  std::string nodes;
  for (auto& s : k.nodes) nodes += (nodes.empty() ? "" : ", ") + s;
  std::vector<Diagnostic> d{{SourceLoc{k.name + ".cu", nodes, "kernel"}, cat("NVRTC failed for ", arch, ": ", log)}};
  d.push_back({SourceLoc{k.name + ".cu", "", ""}, "kernel source: " + k.source});
  throw UserError(d);
}
}  // namespace

NvrtcOutput nvrtcCompile(const KernelSource& k, const std::string& arch) {
  NvrtcOutput out;
  std::string err;
  if (!compileSource(k.source, k.name + ".cu", arch, out, err)) throwKernelFailure(k, arch, err);
  return out;
}

void requireArch(const std::string& arch) {
  if (!archSpelling(arch) || !nvrtcSupportsArch(arch)) {
    std::string known;
    int n = 0;
    if (compilers().numArchs(&n) == NVRTC_SUCCESS && n > 0) {
      std::vector<int> archs(static_cast<size_t>(n));
      compilers().archs(archs.data());
      for (int a : archs) known += (known.empty() ? "" : ", ") + ("sm_" + std::to_string(a));
    }
    throw UserError(SourceLoc{}, "--arch: '" + arch + "' is not an architecture this NVRTC (" + nvrtcVersion() + ") supports" +
                                     (known.empty() ? std::string() : " (supported: " + known + "; compute_<n> of any of them for PTX only)"));
  }
}

std::vector<KernelModule> groupKernels(const std::map<std::string, KernelSource>& kernels, size_t perModule) {
  std::vector<KernelModule> mods;
  for (auto& [name, k] : kernels) {
    if (mods.empty() || mods.back().kernels.size() >= perModule) mods.emplace_back();
    mods.back().kernels.push_back(name);
    mods.back().source += "// ---- " + name + "\n" + k.source;
  }
  for (auto& m : mods) m.name = "m_" + sha256Hex(m.source).substr(0, 16);
  return mods;
}

namespace {
std::string readFileOr(const fs::path& p, bool& ok) {
  std::ifstream f(p, std::ios::binary);
  if (!f) {
    ok = false;
    return "";
  }
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

/// Writes `data` to `p` atomically (temporary file, then rename).
void writeAtomic(const fs::path& p, const std::string& data) {
  removeStaleTemporaries(p.parent_path(), "", ".tmp.");  // Note [No debris]
  fs::path tmp = p;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!f) return;  // a cache that cannot be written is only a slower cache
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) fs::remove(tmp, ec);
}
}  // namespace

namespace {
/// Note [PTX splitting]: NVRTC's PTX for a program is a header (.version,
/// .target, .address_size), module-scope items (.global/.const data such as
/// the sin/cos range-reduction table, .func bodies and declarations) and one
/// .entry per kernel.  A kernel's own PTX is the header, the items its entry
/// references (transitively, by name, in name order) and its entry: the same
/// text whichever program the kernel was compiled in, so it can be cached per
/// kernel and modules can be assembled from any mix of cached and fresh
/// kernels.  Labels and local depots, numbered by the function's index in
/// the program, are renumbered as if each kernel were alone.  Anything the
/// parser does not recognize makes it refuse (the kernels are then compiled
/// one per program).
struct PtxParts {
  std::string header;
  std::map<std::string, std::string> items;                  ///< name -> text
  std::vector<std::pair<std::string, std::string>> entries;  ///< (name, text), in order
};

bool parsePtx(const std::string& ptx, PtxParts& out) {
  static const std::regex entryName(R"(\.entry\s+([A-Za-z_$%][\w$]*))");
  static const std::regex funcName(R"(\.func\s*(?:\([^)]*\)\s*)?([A-Za-z_$%][\w$]*))");
  static const std::regex varName(R"(^\s*(?:\.(?:visible|extern|weak|global|const|shared|align\s+\d+|[usbf]\d+|v\d)\s+)+([A-Za-z_$%][\w$]*)\s*(?:\[|=|;))");
  std::istringstream in(ptx);
  std::string line, item;
  int depth = 0;
  auto trim = [](const std::string& l) {
    size_t b = l.find_first_not_of(" \t\r"), e = l.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : l.substr(b, e - b + 1);
  };
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (item.empty()) {
      if (t.empty() || t.rfind("//", 0) == 0) continue;
      if (t.rfind(".version", 0) == 0 || t.rfind(".target", 0) == 0 || t.rfind(".address_size", 0) == 0) {
        out.header += t + "\n";
        continue;
      }
      if (t[0] != '.') return false;
    }
    item += line + "\n";
    for (char c : line) depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    if (depth < 0) return false;
    if (depth != 0 || t.empty() || (t.back() != ';' && t.back() != '}')) continue;
    std::smatch m;
    if (std::regex_search(item, m, entryName)) {
      // Local names carry the function's index in the program: make them
      // the same wherever the kernel was compiled.
      static const std::regex label(R"(\$L__BB\d+_)"), depot(R"(__local_depot\d+)");
      std::string name = m[1];
      out.entries.push_back({name, std::regex_replace(std::regex_replace(item, label, "$$L__BB0_"), depot, "__local_depot0")});
    } else if (std::regex_search(item, m, funcName) || std::regex_search(item, m, varName)) {
      std::string name = m[1];
      auto it = out.items.find(name);
      // A declaration then a definition of one function: keep both.
      if (it != out.items.end()) it->second += item;
      else out.items[name] = item;
    } else {
      return false;
    }
    item.clear();
  }
  return item.empty() && depth == 0 && !out.header.empty();
}

bool mentions(const std::string& text, const std::string& name) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; };
  for (size_t p = text.find(name); p != std::string::npos; p = text.find(name, p + 1)) {
    bool startOk = p == 0 || !ident(text[p - 1]);
    bool endOk = p + name.size() >= text.size() || !ident(text[p + name.size()]);
    if (startOk && endOk) return true;
  }
  return false;
}

/// Per-kernel PTX (Note [PTX splitting]); false if the PTX is not understood.
bool splitPtx(const std::string& ptx, std::map<std::string, std::string>& perKernel) {
  PtxParts parts;
  if (!parsePtx(ptx, parts)) return false;
  for (auto& [name, entry] : parts.entries) {
    std::set<std::string> need;
    std::vector<const std::string*> todo{&entry};
    while (!todo.empty()) {
      const std::string* text = todo.back();
      todo.pop_back();
      for (auto& [iname, itext] : parts.items)
        if (!need.count(iname) && mentions(*text, iname)) {
          need.insert(iname);
          todo.push_back(&itext);
        }
    }
    std::string k = parts.header;
    for (const std::string& iname : need) k += parts.items.at(iname);
    perKernel[name] = k + entry;
  }
  return true;
}

/// A module's PTX from its kernels' PTX: header, items in name order, entries.
/// `text` with every whole identifier `from` replaced by `to`.
std::string renameIdent(const std::string& text, const std::string& from, const std::string& to) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; };
  std::string out;
  size_t last = 0;
  for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + 1)) {
    if ((p > 0 && ident(text[p - 1])) || (p + from.size() < text.size() && ident(text[p + from.size()]))) continue;
    out.append(text, last, p - last);
    out += to;
    last = p + from.size();
  }
  out.append(text, last, std::string::npos);
  return out;
}

/// Note [PTX function clones]: NVRTC specializes a program's internal
/// functions to their calls (CUDA's __internal_accurate_pow loses its
/// exponent parameter in a program whose every pow has a constant one), so
/// two kernels' PTX may hold different functions of one name.  A module
/// keeps the first; a later kernel whose item of that name differs has its
/// own renamed (name$N, N counting in the module), in its entry and in its
/// other items, until nothing it holds clashes.  The module's kernels come
/// in name order and each kernel's PTX is fixed (Note [Kernel cache]), so
/// the names are deterministic.
std::string assemblePtx(const std::vector<const std::string*>& kernelPtx) {
  std::string header;
  std::map<std::string, std::string> items;
  std::string entries;
  size_t clones = 0;
  for (const std::string* k : kernelPtx) {
    PtxParts parts;
    AOTC_CHECK(parsePtx(*k, parts), "cached kernel PTX does not parse");
    if (header.empty()) header = parts.header;
    for (bool clash = true; clash;) {
      clash = false;
      for (auto& [n, t] : parts.items) {
        auto it = items.find(n);
        if (it == items.end() || it->second == t) continue;
        const std::string fresh = cat(n, "$", ++clones);
        PtxParts renamed;
        renamed.header = parts.header;
        for (auto& [m, u] : parts.items) renamed.items[m == n ? fresh : m] = renameIdent(u, n, fresh);
        for (auto& [m, u] : parts.entries) renamed.entries.push_back({m, renameIdent(u, n, fresh)});
        parts = std::move(renamed);
        clash = true;
        break;
      }
    }
    for (auto& [n, t] : parts.items) items.emplace(n, t);
    for (auto& [n, t] : parts.entries) entries += t;
  }
  std::string out = header;
  for (auto& [n, t] : items) out += t;
  return out + entries;
}


/// PTX -> cubin for `arch` with nvJitLink (ptxas inside).
bool linkCubin(const std::string& ptx, const std::string& name, const std::string& arch, std::string& cubin, std::string& error) {
  nvJitLinkHandle h;
  std::string archOpt = "-arch=" + arch;
  const char* opts[] = {archOpt.c_str()};
  if (compilers().jlCreate(&h, 1, opts) != NVJITLINK_SUCCESS) {
    error = "nvJitLinkCreate failed";
    return false;
  }
  std::unique_ptr<nvJitLinkHandle, void (*)(nvJitLinkHandle*)> guard(&h, [](nvJitLinkHandle* p) { compilers().jlDestroy(p); });
  bool ok = compilers().jlAddData(h, NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(), name.c_str()) == NVJITLINK_SUCCESS &&
            compilers().jlComplete(h) == NVJITLINK_SUCCESS;
  if (!ok) {
    size_t n = 0;
    compilers().jlLogSize(h, &n);
    error.assign(n, '\0');
    if (n) compilers().jlLog(h, error.data());
    while (!error.empty() && (error.back() == '\0' || error.back() == '\n')) error.pop_back();
    error = "nvJitLink failed: " + error;
    return false;
  }
  size_t n = 0;
  compilers().jlCubinSize(h, &n);
  cubin.assign(n, '\0');
  compilers().jlCubin(h, cubin.data());
  return true;
}

/// "sm_90" -> "compute_90": NVRTC stops at PTX, nvJitLink makes the cubin
/// (none for a PTX-only arch, compute_90: a driver JIT-compiles its PTX).
std::string virtualArch(const std::string& arch) { return "compute_" + std::to_string(archNumber(arch)); }
}  // namespace

std::vector<std::vector<NvrtcOutput>> compileModules(const std::vector<KernelModule>& modules,
                                                     const std::map<std::string, KernelSource>& kernels,
                                                     const std::vector<std::string>& archs, unsigned jobs,
                                                     const std::string& cache_dir, KernelCacheStats* stats) {
  using clock = std::chrono::steady_clock;
  const bool cached = !cache_dir.empty();
  const std::string nvrtcKey = std::string(kNvrtcOptions) + "\n" + toolchainId();
  const std::string linkKey = "nvJitLink";  // the library is in toolchainId()
  auto entry = [&](const char* kind, const std::string& key) { return fs::path(cache_dir) / kind / key.substr(0, 2) / key; };
  auto store = [&](const fs::path& e, const std::string& data) {
    std::error_code ec;
    fs::create_directories(e.parent_path(), ec);
    writeAtomic(e, data);
  };
  if (cached) {
    // Note [No debris]: a compile killed while writing entries leaves
    // temporaries in whichever shard directories it was writing; sweep them
    // all (those of live processes stay), not only the shards this compile
    // writes, which may be others.
    std::error_code ec;
    for (const char* kind : {"ptx", "module", "toolchain"}) {
      const fs::path dir = fs::path(cache_dir) / kind;
      removeStaleTemporaries(dir, "", ".tmp.");
      for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_directory(ec)) removeStaleTemporaries(it->path(), "", ".tmp.");
    }
  }
  KernelCacheStats st;
  std::mutex mu;  // guards st and the error list

  // 0. Whole modules (the same model compiled again): PTX and cubin.
  std::vector<std::vector<NvrtcOutput>> out(modules.size(), std::vector<NvrtcOutput>(archs.size()));
  std::vector<std::vector<char>> moduleHit(modules.size(), std::vector<char>(archs.size(), 0));
  // Note [One PTX]: every kernel is compiled to PTX once, for the lowest arch
  // asked for; PTX is forward-compatible, so it serves every arch: each
  // arch's cubin is linked from it by nvJitLink (which optimizes for that
  // arch), and a driver JIT-compiles it for a GPU newer than all of them.
  // NVRTC's front end is most of a compile; this halves it for two archs.
  std::string ptxFrom;  // the lowest arch asked for, named in NVRTC's errors
  for (const std::string& a : archs)
    if (ptxFrom.empty() || archNumber(a) < archNumber(ptxFrom)) ptxFrom = a;
  const std::string ptxArch = ptxFrom.empty() ? "" : virtualArch(ptxFrom);
  auto moduleKey = [&](size_t m, size_t a) {
    return sha256Hex(modules[m].source + "\n" + nvrtcKey + "\n" + linkKey + "\n" + archs[a] + "\n" + ptxArch);
  };
  std::set<std::string> needed;  // kernels of the modules that missed
  for (size_t m = 0; m < modules.size(); ++m)
    for (size_t a = 0; a < archs.size(); ++a) {
      bool ok = cached;
      fs::path e = entry("module", moduleKey(m, a));
      std::string p = cached ? readFileOr(e.string() + ".ptx", ok) : "";
      std::string c = ok && !ptxOnlyArch(archs[a]) ? readFileOr(e.string() + ".cubin", ok) : "";
      if (ok && !p.empty() && (ptxOnlyArch(archs[a]) || !c.empty())) {
        out[m][a] = NvrtcOutput{std::move(p), std::move(c), ""};
        moduleHit[m][a] = 1;
        ++st.module_hits;
      } else {
        needed.insert(modules[m].kernels.begin(), modules[m].kernels.end());
      }
    }

  // Whatever missed needs NVRTC (Note [Lazy NVRTC]): check the archs now.
  if (!needed.empty())
    for (const std::string& a : archs) requireArch(a);

  // 1. The PTX of every kernel those need: from the cache, else from NVRTC.
  std::map<std::string, std::string> ptx;  // kernel -> PTX (for ptxArch)
  std::vector<std::string> missing;
  for (const std::string& name : needed) {
    const KernelSource& k = kernels.at(name);
    std::string key = sha256Hex(k.source + "\n" + nvrtcKey + "\n" + ptxArch);
    bool ok = cached;
    std::string text = cached ? readFileOr(entry("ptx", key).string() + ".ptx", ok) : "";
    if (ok && !text.empty()) {
      ptx[name] = std::move(text);
      ++st.hits;
    } else {
      missing.push_back(name);
      ++st.misses;
    }
  }
  using Failure = std::tuple<std::string, std::string, std::string>;  // (kernel or module, arch, log)
  std::vector<Failure> errors;
  if (st.misses) {  // no threads for a compile that hits the cache
    boost::asio::thread_pool pool(std::max(1u, jobs));
    // At most kKernelsPerProgram kernels a program, and enough programs to
    // keep every thread busy (a program's fixed cost is small without the
    // half headers, Note [Half headers]); a kernel's PTX does not depend on
    // its program (Note [PTX splitting]).
    const size_t count = missing.size();
    const size_t groups = std::max((count + kKernelsPerProgram - 1) / kKernelsPerProgram, std::min<size_t>(std::max(1u, jobs), (count + 3) / 4));
    for (size_t g = 0, b = 0; g < groups; ++g) {
      const size_t e = b + (count - b) / (groups - g);
      std::vector<std::string> group(missing.begin() + static_cast<std::ptrdiff_t>(b), missing.begin() + static_cast<std::ptrdiff_t>(e));
      b = e;
      boost::asio::post(pool, [&, group] {
          auto t0 = clock::now();
          auto compileGroup = [&](const std::vector<std::string>& names, std::map<std::string, std::string>& got, std::string& err) {
            std::string src;
            for (const std::string& n : names) src += "// ---- " + n + "\n" + kernels.at(n).source;
            // Note [Half headers]: cuda_fp16.h and cuda_bf16.h only where a
            // kernel names a half type or intrinsic; a kernel's PTX is the
            // same either way (the headers' functions are static inline).
            if (src.find("half") == std::string::npos && src.find("bfloat16") == std::string::npos) src = "#define AOTC_NO_HALF 1\n" + src;
            NvrtcOutput o;
            if (!compileSource(src, names.size() == 1 ? names[0] + ".cu" : "group.cu", ptxArch, o, err)) return false;
            return splitPtx(o.ptx, got);
          };
          std::map<std::string, std::string> got;
          std::string err;
          size_t programs = 1;
          // Kernel `n` in a program of its own; false (the error recorded) if it fails.
          auto alone = [&](const std::string& n, std::string& text) {
            std::map<std::string, std::string> one;
            ++programs;
            if (!compileGroup({n}, one, err) || !one.count(n)) {
              std::lock_guard<std::mutex> lk(mu);
              errors.emplace_back(n, ptxFrom, err);
              return false;
            }
            text = one[n];
            return true;
          };
          if (!compileGroup(group, got, err) || got.size() != group.size()) {
            // Find the failing kernel, or PTX the splitter does not know:
            // one program per kernel.
            got.clear();
            for (const std::string& n : group)
              if (!alone(n, got[n])) return;
          }
          // A kernel that calls internal functions is compiled alone: what
          // NVRTC makes of them depends on the program's other kernels (Note
          // [PTX function clones]), and a kernel's PTX must not (Note
          // [Kernel cache]).  Few kernels call any (f64 pow, trigonometry).
          if (group.size() > 1)
            for (auto& [n, text] : got)
              if (text.find(".func") != std::string::npos && !alone(n, text)) return;
          double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
          if (cached)
            for (auto& [n, text] : got)
              store(entry("ptx", sha256Hex(kernels.at(n).source + "\n" + nvrtcKey + "\n" + ptxArch)).string() + ".ptx", text);
          std::lock_guard<std::mutex> lk(mu);
          for (auto& [n, text] : got) ptx[n] = std::move(text);
          st.nvrtc_ms += ms;
          st.nvrtc_programs += programs;
        });
      }
    pool.join();
  }
  if (!errors.empty()) {
    auto& [name, arch, log] = *std::min_element(errors.begin(), errors.end());
    throwKernelFailure(kernels.at(name), arch, log);
  }

  // 2. Each module that missed: its PTX assembled from its kernels', its
  //    cubin from nvJitLink.
  if (st.module_hits < modules.size() * archs.size()) {
    boost::asio::thread_pool pool(std::max(1u, jobs));
    for (size_t m = 0; m < modules.size(); ++m)
      for (size_t a = 0; a < archs.size(); ++a) {
        if (moduleHit[m][a]) continue;
        std::vector<const std::string*> parts;
        for (const std::string& k : modules[m].kernels) parts.push_back(&ptx.at(k));
        out[m][a].ptx = assemblePtx(parts);
        ++st.module_misses;
        boost::asio::post(pool, [&, m, a] {
          auto t0 = clock::now();
          std::string err;
          const bool ptxOnly = ptxOnlyArch(archs[a]);
          bool linked = ptxOnly || linkCubin(out[m][a].ptx, modules[m].name, archs[a], out[m][a].cubin, err);
          double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
          if (linked && cached) {
            fs::path e = entry("module", moduleKey(m, a));
            if (!ptxOnly) store(e.string() + ".cubin", out[m][a].cubin);
            store(e.string() + ".ptx", out[m][a].ptx);
          }
          std::lock_guard<std::mutex> lk(mu);
          st.link_ms += ms;
          if (!linked) errors.emplace_back(modules[m].name, archs[a], err);
        });
      }
    pool.join();
  }
  if (!errors.empty()) {
    auto& [module, arch, log] = *std::min_element(errors.begin(), errors.end());
    throw UserError(SourceLoc{module + ".ptx", "", "kernel module"}, module + " " + arch + ": " + log);
  }
  if (stats) *stats = st;
  return out;
}

namespace {
bool compileSource(const std::string& src, const std::string& file, const std::string& arch, NvrtcOutput& out,
                   std::string& error) {
  nvrtcProgram prog;
  const char* headers[] = {devicePrelude()};
  const char* headerNames[] = {"aotc_prelude.cuh"};
  const CudaCompilers& cc = compilers();
  AOTC_CHECK(cc.create(&prog, src.c_str(), file.c_str(), 1, headers, headerNames) == NVRTC_SUCCESS,
             "nvrtcCreateProgram failed");
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(&prog, [](nvrtcProgram* p) { compilers().destroy(p); });
  std::string archOpt = "--gpu-architecture=" + arch;
  // cuda_fp16.h / cuda_bf16.h for half types: the toolkit's headers.
  std::string inc = std::string("--include-path=") + AOTC_CUDA_INCLUDE_DIR;
  const char* opts[] = {archOpt.c_str(), "--std=c++17", "-default-device", inc.c_str(), "--minimal"};
  static_assert(sizeof(opts) / sizeof(opts[0]) == 5);
  nvrtcResult rc = cc.compile(prog, 5, opts);
  size_t n = 0;
  cc.logSize(prog, &n);
  out.log.resize(n);
  if (n) cc.log(prog, out.log.data());
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (rc != NVRTC_SUCCESS) {
    error = std::string(cc.errorString(rc)) + "; log: " + out.log;
    return false;
  }
  cc.ptxSize(prog, &n);
  out.ptx.resize(n);
  cc.ptx(prog, out.ptx.data());
  if (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  cc.cubinSize(prog, &n);
  out.cubin.resize(n);
  if (n) cc.cubin(prog, out.cubin.data());
  return true;
}
}  // namespace

}  // namespace aotc
