//===- roofline.h - What an artifact asks of a GPU, and its lower bound -*- C++ -*-===//
//
// Note [Roofline]: a plan says, for every launch and library call, what it
// reads and writes and (for GEMMs and convolutions) how much arithmetic it
// does.  Against a GPU's datasheet figures (its memory bandwidth, and its
// peak FLOP/s in the math each call runs in) each step has a lower bound,
//
//     bound = max(bytes / bandwidth, FLOPs / peak(math)),
//
// and a program's bound is the sum of its steps' (they run one after
// another on one stream).  A measured time divided into the bound is the
// step's efficiency; the bytes are what a traffic cut lowers.
//
// What is counted (roofline(), in src/plan/roofline.cpp):
//  - a launch: the smaller of two upper bounds on the bytes it touches: its
//    `work.bytes` (the sizes of the operand views and outputs its kernel
//    reads and writes, Note [Launch shape]: a per-channel vector broadcast
//    over an image counts at the image's size there, a value read through
//    two views counts twice) and the spans of the buffers it names, each
//    once (a launch that writes a slice of a buffer is charged the whole
//    buffer there); the spans alone where the plan has no work record (a
//    dynamic artifact instantiated at its hints); no FLOPs (aotc's kernels are pointwise, reductions and gathers: a few
//    operations per element, far below any GPU's ridge point);
//  - a GEMM: A, B and C once each (C read as well when beta != 0), the bias;
//    2*m*n*k*batch FLOPs;
//  - a convolution (forward, data gradient, filter gradient; grouped and
//    depthwise): its three tensors once each (the output read as well when
//    beta != 0); 2 * |y| * (C/groups) * R * S FLOPs, y the output-activation
//    side (the forward's result, the gradient's dy).
// The math: float32 GEMMs and convolutions run in TF32 when the artifact's
// precision is tf32, float16/bfloat16 ones on tensor cores, float64 in fp64.
//
// The limits, said once: cuBLAS and cuDNN reach 60-90% of peak, not 100%;
// without CUDA graphs each launch costs 2-5 us of host latency no bound
// shows; a launch that reads a strided view is charged the view's whole
// span (an overcount).
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "aotc/plan/plan.h"

namespace aotc::plan {

/// A GPU's datasheet figures: bytes per second, FLOP/s per math.
struct GpuSpec {
  std::string name;
  double bandwidth = 0;              ///< bytes/s
  std::map<std::string, double> peak;  ///< "fp32", "tf32", "bf16", "fp16", "fp64" -> FLOP/s (dense)
  std::string source;                ///< where the figures come from
};

/// The built-in table (H100 SXM and PCIe, H200, A100 40/80 GB, L4, L40S, RTX 4090).
const std::vector<GpuSpec>& knownGpus();
/// A GPU by table name (case-insensitive, e.g. "h100-sxm", "a100-80gb") or a
/// JSON file {"name", "bandwidth_Bps", "peak_flops": {"fp32": ...}}; a
/// UserError otherwise, naming the choices.
GpuSpec gpuByNameOrFile(const std::string& nameOrFile);
/// The GPU an artifact's arch list means (sm_90 -> H100 SXM, sm_80 -> A100
/// 80 GB, sm_89 -> L40S); nullopt when no arch has a default.
std::optional<GpuSpec> defaultGpu(const std::vector<std::string>& archs);

struct StepCost {
  size_t index = 0;       ///< in its program's steps
  std::string kind;       ///< launch, gemm, conv
  std::string name;       ///< the kernel, or the library call's node
  std::string call;       ///< launch, cublasGemmEx, cudnnConvolutionBackwardFilter, ...
  std::string math;       ///< memory, fp32, tf32, bf16, fp16, fp64
  std::vector<std::string> nodes;  ///< the graph nodes it computes (a kernel's, distinct, in order)
  int64_t bytes = 0;
  double flops = 0;
  double bound_s = 0;
};

struct ProgramCost {
  std::vector<StepCost> steps;
  int64_t bytes = 0;
  double flops = 0;
  double bound_s = 0;
  int64_t launches = 0, library_calls = 0;
};

/// Note [Roofline] (fusion estimates): bytes cuDNN's graph API could save by
/// fusing a convolution with the launch that reads its result (not built:
/// what the report says is on the table).
///  - "genstats": a launch that reduces the convolution's output y alone to
///    per-channel values (BatchNorm's statistics) rides in the forward
///    convolution's epilogue (cuDNN's conv + GenStats, sm_80+): its read of
///    y goes, |y| bytes;
///  - "epilogue": a pointwise launch that is y's only reader, y not kept
///    (a bias, scale, activation after an inference convolution) runs in
///    the convolution's epilogue (cuDNN runtime fusion): y is neither
///    written nor read, 2 |y| bytes.
struct FusionEstimate {
  std::string program, kind;  ///< kind: genstats, epilogue
  size_t conv = 0, launch = 0;  ///< step indices
  std::string node;             ///< the convolution's node
  int64_t bytes_saved = 0;
};

struct Roofline {
  GpuSpec gpu;
  std::vector<FusionEstimate> fusions;
  bool dynamic_at_hints = false;
  ProgramCost forward, backward;
  ProgramCost step;  ///< forward + backward (its `steps` empty)
};

/// The cost of every step of `m` on `gpu` (Note [Roofline]).
Roofline roofline(const Manifest& m, const GpuSpec& gpu);
/// One step's bytes and FLOPs (bound_s left 0), `precision` the manifest's.
StepCost stepCost(const Program& prog, const Step& s, const std::string& precision);

nlohmann::ordered_json toJson(const Roofline& r, size_t largest = 10);
/// The report as text: totals per program and per training step, by math,
/// the `largest` largest bounds, every step when `everyStep`.
std::string roofText(const Roofline& r, size_t largest = 10, bool everyStep = false);

}  // namespace aotc::plan
