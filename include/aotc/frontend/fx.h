//===- fx.h - FX JSON front end -----------------------------------*- C++ -*-===//
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "aotc/ir/ir.h"

namespace aotc {

struct FxModel {
  Graph graph;               ///< captured graph: in-place and view ops kept
  std::string weights_path;  ///< the safetensors file beside the JSON
  /// Inputs the caller passes as views of one storage (from the exporter).
  std::vector<std::vector<std::string>> storage_groups;
  /// A tied parameter or buffer (one tensor, several state_dict names): the
  /// input's other names.
  std::map<std::string, std::vector<std::string>> input_aliases;
  /// Each user output's path in the program's nested result (`logits`,
  /// `aux.1`); empty when the file does not say.
  std::vector<std::string> output_paths;
  /// The example arguments as the exporter recorded them: tensor leaves name
  /// their input, other values were specialized into the graph.
  nlohmann::json arguments = nlohmann::json::array();
};

/// Loads an FX JSON dump (schemas/fx_graph.schema.json) and checks it against
/// its weights file.  Every problem is a UserError naming the file and node;
/// unsupported ops are all reported together.
FxModel loadFxGraph(const std::string& path);
/// The same, from the file's text (`path` names it in diagnostics and
/// locates the weights file).
FxModel loadFxGraphText(const std::string& text, const std::string& path);

/// The ATen targets the front end understands (sorted), for `aotc inspect`.
std::vector<std::string> supportedFxTargets();
/// Whether the front end converts `target`: listed, or derived from a listed
/// functional op (in-place, out=, _foreach; Note [Generic spellings]).
bool isSupportedFxTarget(const std::string& target);

}  // namespace aotc
