//===- nvrtc.cpp - NVRTC wrapper -------------------------------------------===//
#include <nvrtc.h>
#include <openssl/evp.h>

#include <algorithm>
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

NvrtcOutput nvrtcCompile(const KernelSource& k, const std::string& arch) {
  nvrtcProgram prog;
  std::string file = k.name + ".cu";
  const char* headers[] = {devicePrelude()};
  const char* headerNames[] = {"aotc_prelude.cuh"};
  AOTC_CHECK(nvrtcCreateProgram(&prog, k.source.c_str(), file.c_str(), 1, headers, headerNames) == NVRTC_SUCCESS,
             "nvrtcCreateProgram failed");
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(&prog, [](nvrtcProgram* p) { nvrtcDestroyProgram(p); });
  std::string archOpt = "--gpu-architecture=" + arch;
  // cuda_fp16.h / cuda_bf16.h for half types: the toolkit's headers.
  std::string inc = std::string("--include-path=") + AOTC_CUDA_INCLUDE_DIR;
  const char* opts[] = {archOpt.c_str(), "--std=c++17", "-default-device", inc.c_str()};
  nvrtcResult rc = nvrtcCompileProgram(prog, 4, opts);
  NvrtcOutput out;
  size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  out.log.resize(n);
  if (n) nvrtcGetProgramLog(prog, out.log.data());
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (rc != NVRTC_SUCCESS) {
    std::string nodes;
    for (auto& s : k.nodes) nodes += (nodes.empty() ? "" : ", ") + s;
    std::vector<Diagnostic> d{{SourceLoc{file, nodes, "kernel"},
                               cat("NVRTC failed for ", arch, ": ", nvrtcGetErrorString(rc), "; log: ", out.log)}};
    d.push_back({SourceLoc{file, "", ""}, "kernel source: " + k.source});
    throw UserError(d);
  }
  nvrtcGetPTXSize(prog, &n);
  out.ptx.resize(n);
  nvrtcGetPTX(prog, out.ptx.data());
  if (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  nvrtcGetCUBINSize(prog, &n);
  out.cubin.resize(n);
  if (n) nvrtcGetCUBIN(prog, out.cubin.data());
  return out;
}

}  // namespace aotc
