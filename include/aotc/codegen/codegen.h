//===- codegen.h - Programs -> CUDA kernels, extern calls, manifest --*- C++ -*-===//
#pragma once

#include "aotc/codegen/launch_shape.h"

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "aotc/passes/passes.h"
#include "aotc/plan/plan.h"
#include "aotc/support/hash.h"

namespace aotc {

/// One generated kernel (deduplicated by source; the name is a content hash).
struct KernelSource {
  std::string name;    ///< k_<16 hex of SHA-256 of the source>
  std::string source;  ///< complete CUDA C++ translation unit
  std::vector<std::string> nodes;  ///< user node names it came from
};

/// Whether a kernel's text checks indices (Note [Index errors]): such a
/// kernel takes its step's tag as a last `long long aotc_step` argument.
inline bool kernelChecksIndices(const std::string& source) { return source.find("aotc_checked_index(") != std::string::npos; }

struct CodegenResult {
  std::map<std::string, KernelSource> kernels;  ///< by name, ordered
  plan::Program forward;                        ///< buffers, steps, outputs, arena
  plan::Program backward;
  /// Per step of each program: a launch's grid is max(1, ceil(threads / per))
  /// for its {threads, per} here ({0, 0}: not a launch).  The grid of a
  /// dynamic-shape artifact is that expression (Note [Dynamic codegen]).
  std::vector<std::pair<int64_t, int64_t>> forwardGrids, backwardGrids;
  /// Per step of each program: the indices of the program's nodes it
  /// computes (a launch: its fused nodes; a GEMM: the mm and its bias add;
  /// an epilogue copy: the copy), for pictures (`aotc graph`).
  std::vector<std::vector<int32_t>> forwardStepNodes, backwardStepNodes;
};

/// Note [Dynamic codegen]: a symbolic pair of programs is compiled by
/// generating code for each probe binding of its symbols (Note [Probing and
/// unifying]) and unifying the results (dynamic.cpp): every integer of the
/// plan, and every integer literal of a kernel's text, fitted as an
/// expression over the symbols.  A probe's code must therefore not make
/// decisions from sizes that hold at the probes but not at every size the
/// symbols' ranges allow.  With `decide` set (the symbolic programs, whose
/// integers are the hints):
///  - vectorized access (Note [Vectorized access]: sizes and offsets
///    divisible by four) is off;
///  - a reduction's kind (one block or one thread per output) and a row
///    group's block size are chosen from `decide`'s sizes, the same at every
///    probe (both kinds are correct at every size);
///  - index width (Note [32-bit indexing]) is `wide`, decided by the caller
///    (Note [Dynamic index width]);
///  - a size scalar (Note [Size scalars]) is computed in the kernel from its
///    integers, not written as one float literal.
/// Anything else that differs between probes makes the unifier refuse,
/// naming the kernel or step; it never guesses.
struct CodegenOptions {
  const Partition* decide = nullptr;
  bool wide = false;
  /// Note [Launch shape]: the machine large launches are shaped for.
  LaunchShapeRule launchShape;
};

/// Lowers both programs: one kernel per pointwise/reduction/creation node,
/// cuBLAS GEMM steps for mm, view steps for views, and copy kernels for the
/// epilogue.  Pure: the same programs give the same result, byte for byte.
CodegenResult generateCuda(const Partition& p, const CodegenOptions& opts = {});

/// The device prelude every kernel includes.
const char* devicePrelude();


// ---- NVRTC

struct NvrtcOutput {
  std::string ptx;
  std::string cubin;
  std::string log;
};

/// Compiles `k` for `arch` ("sm_80") to PTX and cubin.  On failure throws a
/// UserError carrying the kernel's nodes, NVRTC's log and the source.
NvrtcOutput nvrtcCompile(const KernelSource& k, const std::string& arch);

/// Note [Kernel modules]: an artifact ships its kernels in modules:
/// fixed-size groups of kernels, sorted by name, one PTX and one cubin per
/// (module, arch), so a runtime loads a few modules rather than one per
/// kernel.  A module's name is a hash of its sources, so the grouping and the
/// files are deterministic.  (NVRTC's fixed cost per program -- ~19 ms here,
/// against ~2 ms per kernel when many share one -- is why kernels that miss
/// the cache are also compiled many to a program: Note [Kernel cache].)
struct KernelModule {
  std::string name;                  ///< m_<16 hex>
  std::vector<std::string> kernels;  ///< kernel names, sorted
  std::string source;                ///< one translation unit
};
std::vector<KernelModule> groupKernels(const std::map<std::string, KernelSource>& kernels, size_t perModule);

/// Kernels that miss the cache are compiled this many to an NVRTC program.
constexpr size_t kKernelsPerProgram = 48;

/// Compiles every module for every arch on `jobs` threads.  Results are
/// indexed [module][arch] and do not depend on `jobs` or on the cache.
/// Note [Kernel cache]: content-addressed on disk, in two levels.
///  * module/: one entry per module and arch, keyed by the SHA-256 of (module
///    source, NVRTC options and version, nvJitLink version, arch), holding
///    the module's PTX and cubin.  Compiling a model again hits here only.
///  * ptx/: one entry per kernel, keyed by the SHA-256 of (kernel source,
///    NVRTC options, NVRTC version, the virtual arch of the lowest arch asked
///    for: Note [One PTX], nvrtc.cpp), holding the kernel's PTX (Note [PTX
///    splitting]); every arch's module is linked from the same PTX.  NVRTC's front end is most of the
///    cost, and kernel texts name ops, not layers (Note [Kernel text]), so
///    this level is shared by every layer and every model that emits the
///    same kernel: a model zoo compiled into one cache compiles each distinct
///    kernel once.  Kernels that miss are compiled in NVRTC programs of at
///    most kKernelsPerProgram, at least one per thread; a module that missed
///    is assembled from its kernels' PTX and linked to cubin per arch by
///    nvJitLink.
/// A module's PTX is assembled from its kernels' PTX, so the artifact is the
/// same bytes whatever the cache held.  Entries are written to a temporary
/// name and renamed into place (a module's PTX last: its presence marks a
/// whole entry), so concurrent aotc processes never see half an entry.
struct KernelCacheStats {
  size_t hits = 0, misses = 0;            ///< kernel PTX entries (of the modules that missed), once for all archs
  size_t module_hits = 0, module_misses = 0;  ///< module entries, per arch
  size_t nvrtc_programs = 0;
  double nvrtc_ms = 0, link_ms = 0;       ///< summed over threads
};

std::vector<std::vector<NvrtcOutput>> compileModules(const std::vector<KernelModule>& modules,
                                                     const std::map<std::string, KernelSource>& kernels,
                                                     const std::vector<std::string>& archs, unsigned jobs,
                                                     const std::string& cache_dir = "", KernelCacheStats* stats = nullptr);
/// NVRTC's version ("13.0"); loads NVRTC (Note [Lazy NVRTC]).
std::string nvrtcVersion();
/// The same, remembered in the cache per toolchain so that a compile that
/// hits the cache does not load NVRTC.
std::string nvrtcVersionCached(const std::string& cache_dir);
/// Checks an --arch entry ("sm_80", "compute_80"): NVRTC must support it.  Loads NVRTC.
bool nvrtcSupportsArch(const std::string& arch);
/// Whether an --arch entry is spelled sm_<digits> (PTX and cubin) or
/// compute_<digits> (PTX only, for a driver to JIT) (no NVRTC needed).
bool archSpelling(const std::string& arch);
/// compute_<digits>: the artifact carries PTX and no cubin for it.
bool ptxOnlyArch(const std::string& arch);
/// Refuses (UserError) an --arch entry NVRTC cannot compile for.  Loads NVRTC.
void requireArch(const std::string& arch);

}  // namespace aotc
