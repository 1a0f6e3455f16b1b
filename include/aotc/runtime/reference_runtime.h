//===- reference_runtime.h - Run an artifact on the CPU ----------*- C++ -*-===//
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "aotc/ir/ir.h"
#include "aotc/ops/reference.h"
#include "aotc/plan/plan.h"

namespace aotc {

/// Interprets a program op by op.  `inputs` are bound to the graph inputs in
/// order; `on_epilogue(input name, value)` is called for every epilogue copy.
/// Returns the value of every graph output, in order.
/// `progress`, if set, hears (g.name, nodes done, nodes).
std::vector<HostTensor> interpretGraph(const Graph& g, const std::vector<HostTensor>& inputs,
                                       const std::function<void(const std::string&, const HostTensor&)>& on_epilogue,
                                       const std::function<void(const std::string&, size_t, size_t)>& progress = nullptr);

struct RunOptions {
  std::string backend = "reference";  ///< reference | emulate | cuda
  std::string emulate_cache_dir;      ///< where emulate keeps host-compiled kernels
  std::string host_compiler = "c++";  ///< emulate: compiles the generated CUDA on the host
  std::vector<std::string> input_files;
  /// Grad outputs not in the file are zeros, except Note [Seeded gradient]:
  /// with none given, a program whose one differentiable output is a scalar
  /// gets 1, as loss.backward() does.
  std::string grad_outputs_file;
  /// Hears what the run decided for the caller (a seeded or zero gradient).
  std::function<void(const std::string&)> note;
  bool forward_only = false;
  bool create_graph = false;
  /// `aotc run --steps K`: K steps, each from the last one's mutated inputs
  /// (after_backward.<name>: parameters and state under --optimizer); the
  /// results are the last step's.  on_step hears each step's results.
  int64_t steps = 1;
  std::function<void(int64_t, const std::map<std::string, HostTensor>&)> on_step;
  /// Hears long work as it goes (what, done, total; total 0 when unknown):
  /// the program's nodes or steps, the emulator's host compile.
  std::function<void(const std::string&, size_t, size_t)> progress;
  /// Note [Step trace]: `aotc run --trace FILE` (emulate or cuda): every
  /// step's buffers after it ran, <phase>.<step>.<buffer>, in safetensors
  /// (the last step's, with --steps); the device synchronizes after each.
  std::string trace_file;
};

/// Runs forward then backward of the artifact in `dir`: on the reference
/// interpreter (the oracle), or through the executor (Note [One executor]) on
/// the emulate or cuda device.  Inputs not given come from the artifact's
/// weights.  Results are named output.<i>, grad.<input>, after_forward.<input>
/// and after_backward.<input> (every mutated input).
std::map<std::string, HostTensor> runArtifact(const std::string& dir, const RunOptions& opts);

/// The CPU runtimes hold every tensor as doubles: 2^31 elements (16 GiB) at most.
inline constexpr int64_t kMaxRunElements = int64_t{1} << 31;

/// Note [Manifest is untrusted]: reads and checks the manifest of the
/// artifact in `dir` before anything runs (tensors of at most `maxElements`);
/// throws UserError naming manifest.json and the field.
plan::Manifest loadManifest(const std::string& dir, int64_t maxElements = kMaxElements);

/// One of the artifact's IR programs (`rel`: the manifest's `ir`, or
/// joint.ir), parsed and verified: damaged IR is the user's error.
Graph loadArtifactGraph(const std::string& dir, const std::string& rel);

}  // namespace aotc
