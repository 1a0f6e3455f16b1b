//===- fx.h - FX JSON front end -----------------------------------*- C++ -*-===//
#pragma once

#include <string>

#include "aotc/ir/ir.h"

namespace aotc {

struct FxModel {
  Graph graph;               ///< captured graph: in-place and view ops kept
  std::string weights_path;  ///< the safetensors file beside the JSON
  /// Inputs the caller passes as views of one storage (from the exporter).
  std::vector<std::vector<std::string>> storage_groups;
};

/// Loads an FX JSON dump (schemas/fx_graph.schema.json) and checks it against
/// its weights file.  Every problem is a UserError naming the file and node;
/// unsupported ops are all reported together.
FxModel loadFxGraph(const std::string& path);

/// The ATen targets the front end understands (sorted), for `aotc inspect`.
std::vector<std::string> supportedFxTargets();

}  // namespace aotc
