//===- nvrtc.cpp - NVRTC wrapper -------------------------------------------===//
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

#include "aotc/codegen/codegen.h"

namespace aotc {

std::string sha256Hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  AOTC_CHECK(ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1 &&
                 EVP_DigestUpdate(ctx.get(), data.data(), data.size()) == 1 &&
                 EVP_DigestFinal_ex(ctx.get(), md, &len) == 1,
             "sha256 failed");
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len; ++i) {
    s += hex[md[i] >> 4];
    s += hex[md[i] & 15];
  }
  return s;
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  ::nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

bool nvrtcSupportsArch(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return false;
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS) return false;
  std::vector<int> archs(static_cast<size_t>(n));
  nvrtcGetSupportedArchs(archs.data());
  try {
    int want = std::stoi(arch.substr(3));
    return std::find(archs.begin(), archs.end(), want) != archs.end();
  } catch (...) {
    return false;
  }
}

namespace {
/// The options besides --gpu-architecture, in the cache key.
constexpr const char* kNvrtcOptions = "--std=c++17 -default-device --include-path=" AOTC_CUDA_INCLUDE_DIR;

/// Compiles one translation unit; nullopt-like empty log on success.
bool compileSource(const std::string& src, const std::string& file, const std::string& arch, NvrtcOutput& out,
                   std::string& error);
}  // namespace

NvrtcOutput nvrtcCompile(const KernelSource& k, const std::string& arch) {
  NvrtcOutput out;
  std::string err;
  if (compileSource(k.source, k.name + ".cu", arch, out, err)) return out;
  std::string nodes;
  for (auto& s : k.nodes) nodes += (nodes.empty() ? "" : ", ") + s;
  std::vector<Diagnostic> d{{SourceLoc{k.name + ".cu", nodes, "kernel"}, cat("NVRTC failed for ", arch, ": ", err)}};
  d.push_back({SourceLoc{k.name + ".cu", "", ""}, "kernel source: " + k.source});
  throw UserError(d);
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
namespace fs = std::filesystem;

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

std::vector<std::vector<NvrtcOutput>> compileModules(const std::vector<KernelModule>& modules,
                                                     const std::map<std::string, KernelSource>& kernels,
                                                     const std::vector<std::string>& archs, unsigned jobs,
                                                     const std::string& cache_dir, KernelCacheStats* stats) {
  std::vector<std::vector<NvrtcOutput>> out(modules.size(), std::vector<NvrtcOutput>(archs.size()));
  std::vector<std::string> errors(modules.size() * archs.size());
  std::vector<char> hit(modules.size() * archs.size(), 0);
  std::vector<double> ms(modules.size() * archs.size(), 0.0);
  auto entry = [&](size_t m, size_t a) {
    std::string key = sha256Hex(modules[m].source + "\n" + kNvrtcOptions + "\n" + nvrtcVersion() + "\n" + archs[a]);
    return fs::path(cache_dir) / key.substr(0, 2) / key;
  };
  if (!cache_dir.empty())
    for (size_t m = 0; m < modules.size(); ++m)
      for (size_t a = 0; a < archs.size(); ++a) {
        fs::path e = entry(m, a);
        bool ok = true;
        std::string ptx = readFileOr(e.string() + ".ptx", ok), cubin = readFileOr(e.string() + ".cubin", ok);
        if (ok && !ptx.empty()) {
          out[m][a].ptx = std::move(ptx);
          out[m][a].cubin = std::move(cubin);
          hit[m * archs.size() + a] = 1;
        }
      }
  {
    boost::asio::thread_pool pool(std::max(1u, jobs));
    for (size_t m = 0; m < modules.size(); ++m)
      for (size_t a = 0; a < archs.size(); ++a) {
        if (hit[m * archs.size() + a]) continue;
        boost::asio::post(pool, [&, m, a] {
          auto t0 = std::chrono::steady_clock::now();
          std::string err;
          if (!compileSource(modules[m].source, modules[m].name + ".cu", archs[a], out[m][a], err)) {
            errors[m * archs.size() + a] = err.empty() ? "failed" : err;
          } else if (!cache_dir.empty()) {
            fs::path e = entry(m, a);
            std::error_code ec;
            fs::create_directories(e.parent_path(), ec);
            writeAtomic(e.string() + ".cubin", out[m][a].cubin);
            writeAtomic(e.string() + ".ptx", out[m][a].ptx);  // written last: its presence marks a whole entry
          }
          ms[m * archs.size() + a] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        });
      }
    pool.join();
  }
  if (stats) {
    for (size_t i = 0; i < hit.size(); ++i) {
      (hit[i] ? stats->hits : stats->misses)++;
      stats->nvrtc_ms += ms[i];
    }
  }
  for (size_t i = 0; i < errors.size(); ++i) {
    if (errors[i].empty()) continue;
    // Find the kernel to blame, for a diagnostic that names its nodes.
    for (const std::string& k : modules[i / archs.size()].kernels) nvrtcCompile(kernels.at(k), archs[i % archs.size()]);
    throw UserError(SourceLoc{modules[i / archs.size()].name + ".cu", "", "kernel module"},
                    "NVRTC failed for " + archs[i % archs.size()] + ": " + errors[i]);
  }
  return out;
}

namespace {
bool compileSource(const std::string& src, const std::string& file, const std::string& arch, NvrtcOutput& out,
                   std::string& error) {
  nvrtcProgram prog;
  const char* headers[] = {devicePrelude()};
  const char* headerNames[] = {"aotc_prelude.cuh"};
  AOTC_CHECK(nvrtcCreateProgram(&prog, src.c_str(), file.c_str(), 1, headers, headerNames) == NVRTC_SUCCESS,
             "nvrtcCreateProgram failed");
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(&prog, [](nvrtcProgram* p) { nvrtcDestroyProgram(p); });
  std::string archOpt = "--gpu-architecture=" + arch;
  // cuda_fp16.h / cuda_bf16.h for half types: the toolkit's headers.
  std::string inc = std::string("--include-path=") + AOTC_CUDA_INCLUDE_DIR;
  const char* opts[] = {archOpt.c_str(), "--std=c++17", "-default-device", inc.c_str()};
  static_assert(sizeof(opts) / sizeof(opts[0]) == 4);
  nvrtcResult rc = nvrtcCompileProgram(prog, 4, opts);
  size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  out.log.resize(n);
  if (n) nvrtcGetProgramLog(prog, out.log.data());
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (rc != NVRTC_SUCCESS) {
    error = std::string(nvrtcGetErrorString(rc)) + "; log: " + out.log;
    return false;
  }
  nvrtcGetPTXSize(prog, &n);
  out.ptx.resize(n);
  nvrtcGetPTX(prog, out.ptx.data());
  if (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  nvrtcGetCUBINSize(prog, &n);
  out.cubin.resize(n);
  if (n) nvrtcGetCUBIN(prog, out.cubin.data());
  return true;
}
}  // namespace

}  // namespace aotc
