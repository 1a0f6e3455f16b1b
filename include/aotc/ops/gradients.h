//===- gradients.h - Gradient rules, written in forward ops ------*- C++ -*-===//
#pragma once

#include <functional>
#include <vector>

#include "aotc/ops/builder.h"
#include "aotc/ops/ops.h"

namespace aotc {

/// What a gradient rule sees: the forward node (its inputs I(i) and outputs
/// O(i) are values of the graph being built), the incoming gradients GO(i)
/// (kNoValue where no gradient flows), and builders that emit backward nodes.
class GradCtx : public Builder {
 public:
  /// How a custom backward's k-th saved tensor is bound (default: `dflt`,
  /// the node's saved operand).  autodiff binds a saved graph input to its
  /// value at the start of the backward.
  using SavedBinder = std::function<ValueId(const Node&, size_t k, ValueId dflt)>;

  /// Builds Phase::Backward nodes located at the forward node (Note [One builder]).
  GradCtx(Graph& g, const Node& fwd, std::vector<ValueId> grad_outputs, SavedBinder saved = nullptr)
      : Builder(g, fwd.loc, Phase::Backward), fwd_(fwd), go_(std::move(grad_outputs)), saved_(std::move(saved)) {}

  const Node& node() const { return fwd_; }
  /// Copies node `n` of `src` into the backward (custom backward regions).
  void inlineNode(const Graph& src, const Node& n, std::vector<ValueId>& map);
  ValueId savedValue(size_t k, ValueId dflt);

  ValueId I(int i) const { return fwd_.inputs.at(i); }
  ValueId O(int i) const { return fwd_.outputs.at(i); }
  ValueId GO(int i) const { return go_.at(i); }
  const Attrs& attrs() const { return fwd_.attrs; }

 private:
  const Node& fwd_;
  std::vector<ValueId> go_;
  SavedBinder saved_;
};

/// Gradients of the forward node's inputs (kNoValue: no gradient).
using GradRule = std::vector<ValueId> (*)(GradCtx&);
/// nullptr for ops whose row says NoGrad / NeverDiff.
GradRule gradRule(OpKind k);

}  // namespace aotc
