//===- onnx.h - ONNX front end ------------------------------------*- C++ -*-===//
#pragma once

#include <string>
#include <vector>

#include "aotc/frontend/frontend.h"

namespace aotc {

/// Loads an ONNX model (opsets up to 17, default domain): external data
/// beside the model, ONNX's checker and shape inference, every node mapped
/// onto the op table (Note [ONNX front end]).  Unsupported ops are reported
/// together; every problem is a UserError naming the file and node.
Model loadOnnx(const std::string& path, const FrontendOptions& opts);
/// The same, from the file's bytes (`path` names it in diagnostics and
/// locates external data).
Model loadOnnxBytes(const std::string& bytes, const std::string& path, const FrontendOptions& opts);

/// The model file's bytes (a regular file under protobuf's 2 GiB limit, else
/// a UserError naming it), as loadOnnx reads them.
std::string readOnnxBytes(const std::string& path);
/// The name a graph input or initializer of ONNX name `name` has in the
/// compiled artifact (and so in an inputs safetensors file).
std::string onnxInputName(const std::string& name);

/// The model's nodes as the file has them, unsupported ones included.
SourceGraph onnxSourceGraph(const std::string& path);

/// The ONNX op types the front end converts (sorted), for `aotc inspect`.
std::vector<std::string> supportedOnnxOps();

}  // namespace aotc
