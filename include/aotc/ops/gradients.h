//===- gradients.h - Gradient rules, written in forward ops ------*- C++ -*-===//
#pragma once

#include <functional>
#include <vector>

#include "aotc/ops/ops.h"

namespace aotc {

/// What a gradient rule sees: the forward node (its inputs I(i) and outputs
/// O(i) are values of the graph being built), the incoming gradients GO(i)
/// (kNoValue where no gradient flows), and builders that emit backward nodes.
class GradCtx {
 public:
  /// How a custom backward's k-th saved tensor is bound (default: `dflt`,
  /// the node's saved operand).  autodiff binds a saved graph input to its
  /// value at the start of the backward.
  using SavedBinder = std::function<ValueId(const Node&, size_t k, ValueId dflt)>;

  GradCtx(Graph& g, const Node& fwd, std::vector<ValueId> grad_outputs, SavedBinder saved = nullptr)
      : g_(g), fwd_(fwd), go_(std::move(grad_outputs)), saved_(std::move(saved)) {}

  const Node& node() const { return fwd_; }
  ValueId contiguous(ValueId v);
  /// Copies node `n` of `src` into the backward (custom backward regions).
  void inlineNode(const Graph& src, const Node& n, std::vector<ValueId>& map);
  ValueId savedValue(size_t k, ValueId dflt);

  ValueId I(int i) const { return fwd_.inputs.at(i); }
  ValueId O(int i) const { return fwd_.outputs.at(i); }
  ValueId GO(int i) const { return go_.at(i); }
  const Attrs& attrs() const { return fwd_.attrs; }
  const TensorType& type(ValueId v) const { return g_.type(v); }

  ValueId op(OpKind k, std::vector<ValueId> ins, Attrs a = {});
  ValueId scalar(double v, DType d);                 ///< 0-dim constant
  ValueId scalarLike(double v, ValueId like) { return scalar(v, type(like).dtype); }
  ValueId zeros(TensorType like);
  ValueId add(ValueId a, ValueId b) { return op(OpKind::Add, {a, b}); }
  ValueId sub(ValueId a, ValueId b) { return op(OpKind::Sub, {a, b}); }
  ValueId mul(ValueId a, ValueId b) { return op(OpKind::Mul, {a, b}); }
  ValueId div(ValueId a, ValueId b) { return op(OpKind::Div, {a, b}); }
  ValueId neg(ValueId a) { return op(OpKind::Neg, {a}); }
  /// Reduces a broadcast gradient back to `sizes` (sum over broadcast dims).
  ValueId sumTo(ValueId v, Ints sizes);
  /// view() when the strides allow it, else clone() then view().
  ValueId reshape(ValueId v, Ints sizes);
  ValueId expand(ValueId v, Ints sizes);

 private:
  Graph& g_;
  const Node& fwd_;
  std::vector<ValueId> go_;
  SavedBinder saved_;
};

/// Gradients of the forward node's inputs (kNoValue: no gradient).
using GradRule = std::vector<ValueId> (*)(GradCtx&);
/// nullptr for ops whose row says NoGrad / NeverDiff.
GradRule gradRule(OpKind k);

}  // namespace aotc
