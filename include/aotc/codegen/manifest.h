//===- manifest.h - The artifact's plan, from the engine and codegen -*- C++ -*-===//
#pragma once

#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "aotc/codegen/codegen.h"
#include "aotc/plan/plan.h"

namespace aotc {

struct ManifestInfo {
  std::string model_name;
  std::string source_file;  ///< base name of the model file
  std::vector<std::string> archs;
  nlohmann::ordered_json flags;  ///< the compile options that shape the artifact
  std::string nvrtc_version;     ///< NVRTC's version ("13.0")
  std::map<std::string, std::vector<std::string>> input_aliases;  ///< tied tensors' other names
  std::vector<std::string> output_paths;  ///< per user output, when the exporter recorded them
  nlohmann::ordered_json arguments = nlohmann::ordered_json::array();  ///< the exporter's record of the arguments
  std::string weights;  ///< the artifact's initial-tensors file, "" if none
  std::string precision = "fp32";  ///< aotc compile --precision (plan::Manifest::precision)
  std::optional<plan::LossScalingSpec> loss_scaling;  ///< Note [Loss scaling]
  std::set<std::string> zero_inputs;  ///< inputs that start at zeros, not stored (plan::InputSpec::zero_init)
};

/// Builds the artifact's plan (Note [Typed plan]): inputs (roles, layouts,
/// mutation phase), outputs (fresh or alias recipes, tangents), grads, saved
/// tensors, both programs' buffers and steps, kernels with their per-arch
/// PTX/cubin files, runtime checks.  plan::toJson writes it.
plan::Manifest buildManifest(const Graph& functional, const Partition& partition, const CodegenResult& cg, const std::vector<KernelModule>& modules,
                             const ManifestInfo& info);

/// A dynamic-shape artifact's code (Note [Dynamic codegen], dynamic.cpp):
/// the unified kernels and their modules, the version-11 manifest (Note
/// [Symbolic manifest]) and that manifest read at the hints.
struct DynamicCodegen {
  CodegenResult cg;  ///< unified kernels; the programs at the hints
  std::vector<KernelModule> modules;
  nlohmann::ordered_json manifest;
  plan::Manifest atHint;
};
/// Compiles a symbolic pipeline result (pr.functional.symbols non-empty),
/// the probes on `jobs` threads (the result does not depend on it).
/// `wideIndex`: 64-bit indices whatever the sizes (Note [Dynamic index width]).
DynamicCodegen generateDynamic(const PipelineResult& pr, const ManifestInfo& info, size_t perModule, unsigned jobs = 1,
                               bool wideIndex = false);

}  // namespace aotc
