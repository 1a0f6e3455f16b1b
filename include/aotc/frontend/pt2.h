//===- pt2.h - torch.export .pt2 archive front end ----------------*- C++ -*-===//
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "aotc/frontend/frontend.h"

namespace aotc {

/// Loads a program saved by torch.export.save (PyTorch 2.8+; Note [pt2 front
/// end]): the archive's exported program translated onto the FX converter
/// tables, its weights from the archive's raw records.  `opts.train` makes
/// parameters that require grad trainable (without it the model is
/// inference-only); `opts.model` picks one of several programs.  Every
/// problem is a UserError naming the archive (and node).
Model loadPt2(const std::string& path, const FrontendOptions& opts);

/// The archive's program as the FX document loadPt2 converts (no weights
/// read): what frontend_completeness_test scans the committed .pt2 fixtures
/// with.
nlohmann::json pt2FxDocument(const std::string& path, const FrontendOptions& opts = {});

/// Whether the .pt2 door converts a node target as the archive spells it
/// (`torch.ops.aten.conv2d.default`, `_operator.mul`; Note [Exported targets]).
bool isSupportedPt2Target(const std::string& spelling);

/// The program's nodes as the archive has them, unsupported ones included.
SourceGraph pt2SourceGraph(const std::string& path, const FrontendOptions& opts = {});

}  // namespace aotc
