//===- nvrtc.cpp - NVRTC wrapper -------------------------------------------===//
#include <nvrtc.h>
#include <openssl/evp.h>

#include <algorithm>
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

std::vector<std::vector<NvrtcOutput>> compileModules(const std::vector<KernelModule>& modules,
                                                     const std::map<std::string, KernelSource>& kernels,
                                                     const std::vector<std::string>& archs, unsigned jobs) {
  std::vector<std::vector<NvrtcOutput>> out(modules.size(), std::vector<NvrtcOutput>(archs.size()));
  std::vector<std::string> errors(modules.size() * archs.size());
  {
    boost::asio::thread_pool pool(std::max(1u, jobs));
    for (size_t m = 0; m < modules.size(); ++m)
      for (size_t a = 0; a < archs.size(); ++a)
        boost::asio::post(pool, [&, m, a] {
          std::string err;
          if (!compileSource(modules[m].source, modules[m].name + ".cu", archs[a], out[m][a], err))
            errors[m * archs.size() + a] = err.empty() ? "failed" : err;
        });
    pool.join();
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
