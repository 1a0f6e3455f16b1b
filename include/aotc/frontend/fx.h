//===- fx.h - FX JSON front end -----------------------------------*- C++ -*-===//
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "aotc/frontend/frontend.h"

namespace aotc {

/// What the FX front end returns: the front-end-neutral model (frontend.h).
using FxModel = Model;

/// Loads an FX JSON dump (schemas/fx_graph.schema.json) and checks it against
/// its weights file.  Every problem is a UserError naming the file and node;
/// unsupported ops are all reported together.
FxModel loadFxGraph(const std::string& path);
/// The same, from the file's text (`path` names it in diagnostics and
/// locates the weights file).
FxModel loadFxGraphText(const std::string& text, const std::string& path);

/// The same, from a document held in memory whose parameters', buffers' and
/// constants' initial values are `weights` (by input name) rather than a
/// safetensors file beside it: the .pt2 front end translates an exported
/// program into this form (Note [pt2 front end]).  The document needs no
/// "weights" field; every non-user input must be in `weights` with its
/// declared dtype and shape.
FxModel loadFxDocument(const nlohmann::json& doc, const std::string& path, std::map<std::string, HostTensor> weights);

/// The file's nodes as it has them, unsupported ones included.
SourceGraph fxSourceGraph(const std::string& path);

/// The ATen targets the front end understands (sorted), for `aotc inspect`.
std::vector<std::string> supportedFxTargets();
/// Whether the front end converts `target`: listed, or derived from a listed
/// functional op (in-place, out=, _foreach; Note [Generic spellings]).
bool isSupportedFxTarget(const std::string& target);

}  // namespace aotc
