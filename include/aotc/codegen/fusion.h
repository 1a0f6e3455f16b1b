//===- fusion.h - Which nodes share a kernel: the fusion plan ------*- C++ -*-===//
//
// The first stage of the CUDA code generator (Note [Codegen stages] in
// codegen/cuda/lowering.h): a pure function from a program to the decisions that say
// which node runs in which kernel.  The later stages (kernel text, extern
// calls, memory plan) read the plan; none of them decides fusion.  The plan
// prints as text, so it is tested from text IR like a pass
// (`aotc-opt FILE --fusion-plan`, testdata/fusion/).
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "aotc/ir/ir.h"

namespace aotc {

/// Note [Row groups]: a reduction, the reductions over the same dims of the
/// same shape that follow it, and the pointwise work around them -- softmax,
/// log_softmax, layer norm and its backward, batch-norm statistics and
/// normalization -- run as one kernel with one block per row (a row is one
/// coordinate of the kept dims).  The block computes each reduction in turn
/// (a deterministic shared-memory tree, accumulated in double), keeps row
/// results in registers, and writes only the values something outside the
/// group reads.  Full-size values of the group are expressions, recomputed
/// in each pass over the row instead of going through memory.
/// The kernel runs where the first reduction stood, so a node joins only
/// if everything it reads from outside the group exists by then.
struct RowGroup {
  int32_t seed = -1;
  Ints shape, dims, rowShape;
  int64_t rows = 0, nred = 0;
  std::vector<int32_t> members;  ///< program order, alias views included
  std::set<int32_t> memberSet;
  std::set<int32_t> exprNodes;   ///< full-size pointwise members
  std::set<ValueId> rowLevel;    ///< one value per row: registers
  std::set<ValueId> full;        ///< full-size values: expressions
  std::map<ValueId, ValueId> aliases;  ///< alias view value -> the value it aliases
  std::set<ValueId> materialized;
  std::set<int32_t> lowerViews;  ///< alias views something outside reads
};

/// Every fusion decision for one program, indexed by node.
struct FusionPlan {
  /// Per node: computed inside its consumer's kernel (Note [Fusion by
  /// inlining]), or, for a slice/select scatter, not computed at all because
  /// its only reader is a region epilogue (Note [Region epilogues]).
  std::vector<bool> inlined;
  /// Note [GEMM bias epilogue]: add node -> (mm node, bias value), and the
  /// same pairs by mm node.
  std::map<int32_t, std::pair<int32_t, ValueId>> biasAdds;
  std::map<int32_t, ValueId> gemmBias;
  std::vector<RowGroup> groups;
  std::vector<int32_t> groupOf;  ///< per node, -1 when in none
};

FusionPlan planFusion(const Graph& g);

/// The plan as text, one line per node in program order and one per row
/// group: stable, for golden tests and `aotc-opt --fusion-plan`.
std::string printFusionPlan(const Graph& g, const FusionPlan& plan);

// Questions the stages share.

/// A slice/select scatter computed inside its consumer (Note [Scatter
/// expressions]).
bool isScatterExpr(OpKind k);
/// An op with a reduction row (Note [Reduction rows]).
bool isReduction(OpKind k);
/// Note [Region epilogues]: the slice/select scatter an epilogue copy writes
/// only a region of, or -1.
int32_t regionSource(const Graph& g, const Node& copy);

}  // namespace aotc
