//===- codegen.h - Programs -> CUDA kernels, extern calls, manifest --*- C++ -*-===//
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "aotc/passes/passes.h"

namespace aotc {

/// One generated kernel (deduplicated by source; the name is a content hash).
struct KernelSource {
  std::string name;    ///< k_<16 hex of SHA-256 of the source>
  std::string source;  ///< complete CUDA C++ translation unit
  std::vector<std::string> nodes;  ///< user node names it came from
};

struct CodegenResult {
  std::map<std::string, KernelSource> kernels;  ///< by name, ordered
  nlohmann::ordered_json forward;               ///< {buffers, steps}
  nlohmann::ordered_json backward;
};

/// Lowers both programs: one kernel per pointwise/reduction/creation node,
/// cuBLAS GEMM steps for mm, view steps for views, and copy kernels for the
/// epilogue.  Pure: the same programs give the same result, byte for byte.
CodegenResult generateCuda(const Partition& p);

/// The device prelude every kernel includes.
const char* devicePrelude();

/// Hex SHA-256 (OpenSSL EVP).
std::string sha256Hex(const std::string& data);

// ---- NVRTC

struct NvrtcOutput {
  std::string ptx;
  std::string cubin;
  std::string log;
};

/// Compiles `k` for `arch` ("sm_80") to PTX and cubin.  On failure throws a
/// UserError carrying the kernel's nodes, NVRTC's log and the source.
NvrtcOutput nvrtcCompile(const KernelSource& k, const std::string& arch);

/// Note [Kernel modules]: NVRTC's fixed cost per program (~19 ms here) dwarfs
/// the ~2 ms per kernel when many share one program, so kernels are compiled
/// in modules: fixed-size groups of kernels, sorted by name, one NVRTC
/// program per (module, arch).  A module's name is a hash of its sources and
/// options, so the grouping and the files are deterministic.
struct KernelModule {
  std::string name;                  ///< m_<16 hex>
  std::vector<std::string> kernels;  ///< kernel names, sorted
  std::string source;                ///< one translation unit
};
std::vector<KernelModule> groupKernels(const std::map<std::string, KernelSource>& kernels, size_t perModule);

/// Compiles every module for every arch on `jobs` threads.  Results are
/// indexed [module][arch] and do not depend on `jobs`.  A failing module is
/// recompiled kernel by kernel so the error names the failing kernel.
/// Note [Kernel cache]: content-addressed on disk.  An entry is keyed by the
/// SHA-256 of (module source, NVRTC options, NVRTC version, arch) and holds
/// the PTX and cubin; entries are written to a temporary name and renamed
/// into place, so concurrent aotc processes never see half an entry.
struct KernelCacheStats {
  size_t hits = 0, misses = 0;
  double nvrtc_ms = 0;  ///< summed over threads
};

std::vector<std::vector<NvrtcOutput>> compileModules(const std::vector<KernelModule>& modules,
                                                     const std::map<std::string, KernelSource>& kernels,
                                                     const std::vector<std::string>& archs, unsigned jobs,
                                                     const std::string& cache_dir = "", KernelCacheStats* stats = nullptr);
std::string nvrtcVersion();
/// Checks an --arch entry ("sm_80"): NVRTC must support it.
bool nvrtcSupportsArch(const std::string& arch);

}  // namespace aotc
