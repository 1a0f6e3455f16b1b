//===- builder.h - The one IR builder ------------------------------*- C++ -*-===//
//
// Note [One builder]: every place that writes IR nodes (the FX and ONNX
// front ends, the gradient rules, the decompositions in decompose.h) goes
// through a Builder: it appends nodes to one graph, stamps each with the
// location of the user's node it came from and the phase it runs in, marks
// it no_grad where the user asked, and infers its types with the op's shape
// rule (addNode).  A diagnostic raised while building names the user's node.
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "aotc/ir/host_tensor.h"
#include "aotc/ops/ops.h"

namespace aotc {

class Builder {
 public:
  Builder(Graph& g, SourceLoc loc, Phase phase = Phase::Forward, bool noGrad = false)
      : g_(g), loc_(std::move(loc)), phase_(phase), noGrad_(noGrad) {}

  Graph& graph() { return g_; }
  const Graph& graph() const { return g_; }
  const SourceLoc& loc() const { return loc_; }
  Phase phase() const { return phase_; }
  bool noGrad() const { return noGrad_; }
  [[noreturn]] void fail(const std::string& msg) const { throw UserError(loc_, msg); }
  const TensorType& type(ValueId v) const { return g_.type(v); }
  /// v's sizes, copied: building nodes grows the value table `type` points into.
  Ints sizes(ValueId v) const { return g_.type(v).sizes; }

  ValueId op(OpKind k, std::vector<ValueId> ins, Attrs a = {});
  std::vector<ValueId> ops(OpKind k, std::vector<ValueId> ins, Attrs a, std::vector<Graph> regions = {});

  ValueId scalar(double v, DType d);  ///< 0-dim constant
  ValueId scalarLike(double v, ValueId like) { return scalar(v, type(like).dtype); }
  /// Note [Size scalars]: a 0-dim constant whose value is computed from sizes,
  /// scale * (num / den), as a constant with value = that product and the
  /// integers beside it (size_scale, size_num, size_den), so that a graph
  /// built at several sizes unifies (Note [Probing and unifying]): the
  /// integers become expressions and the value is recomputed from them.
  ValueId sizeScalar(double scale, int64_t num, int64_t den, DType d);
  ValueId full(double v, const TensorType& like);  ///< constant of like's dtype and sizes
  ValueId zeros(const TensorType& like) { return full(0.0, like); }
  ValueId add(ValueId a, ValueId b) { return op(OpKind::Add, {a, b}); }
  ValueId sub(ValueId a, ValueId b) { return op(OpKind::Sub, {a, b}); }
  ValueId mul(ValueId a, ValueId b) { return op(OpKind::Mul, {a, b}); }
  ValueId div(ValueId a, ValueId b) { return op(OpKind::Div, {a, b}); }
  ValueId neg(ValueId a) { return op(OpKind::Neg, {a}); }
  ValueId cast(ValueId v, DType d);  ///< v itself when already of dtype d
  /// Multiplies by `alpha` unless it is 1.
  ValueId scaled(ValueId v, double alpha);
  /// Reduces a broadcast gradient back to `sizes` (sum over broadcast dims).
  ValueId sumTo(ValueId v, Ints sizes);
  /// view() when the strides allow it, else clone() then view(); one -1 allowed.
  ValueId reshape(ValueId v, Ints sizes);
  ValueId expand(ValueId v, Ints sizes);
  ValueId contiguous(ValueId v);

  /// Note [Constant tables]: a tensor of values computed when compiling
  /// (resampling's tap indices and weights) becomes a constant graph input
  /// whose data the artifact stores with its weights: one value whatever its
  /// size, where building it from per-element constants takes a node per
  /// element.  The front end that owns the model's weights provides the
  /// sink; without one (a custom autograd.Function's region, a gradient
  /// rule) hasTables() is false and callers build the per-element form.
  /// The sink gets the values and a name hint (the user's node).
  using TableSink = std::function<ValueId(HostTensor, const std::string&)>;
  void setTables(const TableSink* s) { tables_ = s; }
  bool hasTables() const { return tables_ != nullptr && *tables_; }
  ValueId table(HostTensor t);

 private:
  Graph& g_;
  SourceLoc loc_;
  Phase phase_;
  bool noGrad_;
  const TableSink* tables_ = nullptr;
};

}  // namespace aotc
