//===- picture.h - `aotc graph`: pictures of a model's programs ---*- C++ -*-===//
//
// Note [Pictures]: `aotc graph MODEL|ARTIFACT` draws one stage of the
// pipeline as Graphviz DOT, as SVG (laid out by Graphviz's library, libgvc)
// or as one self-contained HTML file (the SVG, the nodes' details and the
// kernels' sources inline; pan, zoom, search, click for details; no network).
//
// The default stage, `program`, is what the artifact runs: the forward and
// the backward program side by side, each node coloured by what it is
// (forward, backward, recomputed in the backward by the min-cut partitioner,
// epilogue copy, view), the saved tensors as the edges from one program to
// the other, and every kernel launch, GEMM and convolution as a cluster of
// the nodes it computes (from the code generator's own record of each step,
// CodegenResult::forwardStepNodes).  The kernel-level view draws one box
// per step instead, for graphs too big to lay out node by node; `--view
// auto` picks it above kAutoKernelView nodes.
//
// `--stage captured` on a model with ops aotc cannot convert draws the file's
// own graph (frontend.h SourceGraph), the unsupported nodes highlighted, so a
// user sees where they sit before any conversion.
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

#include "aotc/driver/driver.h"

namespace aotc {

struct GraphRequest {
  std::string path;                   ///< a model file or an artifact directory
  std::string stage = "program";      ///< captured, a pipeline stage, forward, backward, program
  std::string format = "dot";         ///< dot, svg, html, ir
  std::string view = "auto";          ///< node, kernel, auto
  /// Note [One Compilation]: the compile flags the programs are drawn under
  /// (a model file's; `model` and `out_dir` are not read).
  CompileOptions compile;
};

/// Above this many nodes `--view auto` draws the kernel-level view.
constexpr size_t kAutoKernelView = 1500;

/// The requested picture (or IR text).  Throws UserError on bad input.
/// `note` (may be null) receives one line about choices made (the view).
std::string graphOf(const GraphRequest& r, std::string* note = nullptr);

/// Lays DOT out with Graphviz's `dot` engine and renders SVG.  `what` names
/// the graph in errors.
std::string dotToSvg(const std::string& dot, const std::string& what);

}  // namespace aotc
