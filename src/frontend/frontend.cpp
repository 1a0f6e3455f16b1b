//===- frontend.cpp - One entry for every front end (Note [Front ends]) ----===//
//
// A .pt2 archive follows the ONNX door for training, not the FX one: an
// exported program's parameters require grad whatever the user meant, so
// only `--train` makes a training artifact (Note [pt2 front end]).
//===----------------------------------------------------------------------===//
#include "aotc/frontend/frontend.h"

#include <filesystem>

#include "aotc/frontend/fx.h"
#include "aotc/frontend/onnx.h"
#include "aotc/frontend/pt2.h"

namespace aotc {

Model loadModel(const std::string& path, const FrontendOptions& opts) {
  const std::filesystem::path ext = std::filesystem::path(path).extension();
  if (ext == ".onnx") {
    if (!opts.model.empty()) throw UserError(SourceLoc{path}, "--model applies to .pt2 archives only");
    return loadOnnx(path, opts);
  }
  if (ext == ".pt2") {
    if (!opts.frozen.empty() || !opts.shapes.empty() || !opts.dims.empty() || !opts.constant_inputs.empty())
      throw UserError(SourceLoc{path}, "--frozen, --shape, --dim and --constant-inputs apply to ONNX models only");
    return loadPt2(path, opts);
  }
  if (opts.any())
    throw UserError(SourceLoc{path}, "--train, --frozen, --shape, --dim and --model apply to ONNX models and .pt2 archives only");
  return loadFxGraph(path);
}

SourceGraph readSourceGraph(const std::string& path) {
  const std::filesystem::path ext = std::filesystem::path(path).extension();
  if (ext == ".onnx") return onnxSourceGraph(path);
  if (ext == ".pt2") return pt2SourceGraph(path);
  return fxSourceGraph(path);
}

}  // namespace aotc
