//===- manifest.h - The runtime manifest (schemas/manifest.schema.json) -*- C++ -*-===//
#pragma once

#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "aotc/codegen/codegen.h"

namespace aotc {

/// Version 2: inputs list a tied tensor's other names (`aliases`), outputs
/// their path in the program's nested result (`path`), the model its
/// specialized arguments (`model.arguments`).
inline constexpr int kManifestVersion = 2;
inline constexpr const char* kCompilerVersion = "0.1.0";

struct ManifestInfo {
  std::string model_name;
  std::string source_file;  ///< base name of the model file
  std::vector<std::string> archs;
  nlohmann::ordered_json flags;  ///< the compile options that shape the artifact
  std::string nvrtc_version;     ///< NVRTC's version ("13.0")
  std::map<std::string, std::vector<std::string>> input_aliases;  ///< tied tensors' other names
  std::vector<std::string> output_paths;  ///< per user output, when the exporter recorded them
  nlohmann::ordered_json arguments = nlohmann::ordered_json::array();  ///< the exporter's record of the arguments
};

/// Builds the manifest: inputs (roles, layouts, mutation phase), outputs
/// (fresh or alias recipes), grads, saved tensors, both programs' buffers and
/// steps, kernels with their per-arch PTX/cubin files, runtime checks.
nlohmann::ordered_json buildManifest(const PipelineResult& pr, const CodegenResult& cg,
                                     const std::vector<KernelModule>& modules, const ManifestInfo& info);

}  // namespace aotc
