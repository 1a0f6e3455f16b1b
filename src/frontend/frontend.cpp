//===- frontend.cpp - One entry for every front end (Note [Front ends]) ----===//
#include "aotc/frontend/frontend.h"

#include <filesystem>

#include "aotc/frontend/fx.h"
#include "aotc/frontend/onnx.h"

namespace aotc {

Model loadModel(const std::string& path, const FrontendOptions& opts) {
  if (std::filesystem::path(path).extension() == ".onnx") return loadOnnx(path, opts);
  if (opts.any()) throw UserError(SourceLoc{path}, "--train, --frozen, --shape and --dim apply to ONNX models only");
  return loadFxGraph(path);
}

SourceGraph readSourceGraph(const std::string& path) {
  return std::filesystem::path(path).extension() == ".onnx" ? onnxSourceGraph(path) : fxSourceGraph(path);
}

}  // namespace aotc
