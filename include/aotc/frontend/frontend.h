//===- frontend.h - The front-end-neutral model and its one entry -*- C++ -*-===//
//
// Note [Front ends]: every front end (FX JSON, ONNX, .pt2) produces a Model: a
// captured graph built through the one Builder (aotc/ops/builder.h) with the
// decompositions kept beside the ops (aotc/ops/decompose.h), plus where the
// initial values of its parameters, buffers and constants come from.
// loadModel chooses the front end by the file's extension.
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "aotc/ir/host_tensor.h"
#include "aotc/ir/ir.h"

namespace aotc {

struct Model {
  Graph graph;               ///< captured graph: in-place and view ops kept
  std::string weights_path;  ///< a safetensors file holding initial values (FX: beside the JSON)
  /// Initial values held in memory (ONNX initializers and constants), by
  /// input name; written to the artifact's weights.safetensors.
  std::map<std::string, HostTensor> weights;
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
  std::string format = "fx";  ///< fx | onnx | pt2
};

/// Options only some front ends read (ONNX's, and --train and --model for a
/// .pt2; a file with one its front end does not read is refused rather than
/// silently ignoring it).
struct FrontendOptions {
  bool train = false;                     ///< ONNX: float initializers become parameters
  std::vector<std::string> frozen;        ///< ONNX --train: initializers that stay constant
  std::map<std::string, Ints> shapes;     ///< ONNX: --shape INPUT=2x3x224x224
  std::map<std::string, int64_t> dims;    ///< ONNX: --dim PARAM=8
  /// ONNX --constant-inputs: a safetensors file with values of graph inputs
  /// the compiler needs as compile-time values (a Reshape's shape, a TopK's
  /// K); only those are taken, and they leave the artifact's inputs.
  std::string constant_inputs;
  /// .pt2 --model: which program of an archive that holds several.
  std::string model;
  bool any() const { return train || !frozen.empty() || !shapes.empty() || !dims.empty() || !constant_inputs.empty() || !model.empty(); }
};

/// A model's graph as its file has it, before conversion: what `aotc graph
/// --stage captured` draws when the model has ops aotc cannot convert (the
/// IR cannot hold them).  Nodes in file order, graph inputs first.
struct SourceNode {
  std::string name, op;              ///< op: the file's spelling (aten.relu.default, Relu)
  std::string type;                  ///< as recorded ("float32[2, 4]"); "" when not
  std::vector<std::string> inputs;   ///< the nodes (or graph inputs) it reads
  SourceLoc loc;                     ///< the user's source line and module, when recorded
  bool is_input = false;
  std::string unsupported;           ///< why aotc cannot convert it ("" when it can)
};
struct SourceGraph {
  std::string name;
  std::vector<SourceNode> nodes;
  std::vector<std::string> outputs;  ///< nodes whose values the graph returns
};
/// By extension, like loadModel.  Throws UserError on a malformed file.
SourceGraph readSourceGraph(const std::string& path);

/// Loads a model: `.onnx` through the ONNX front end, `.pt2` through the
/// torch.export archive reader, anything else as an FX JSON dump.  Throws UserError naming the file and node.
Model loadModel(const std::string& path, const FrontendOptions& opts = {});

}  // namespace aotc
