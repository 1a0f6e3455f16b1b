//===- reductions.cpp - One row per reduction, every rule in it -----------===//
//
// Note [Reduction rows] (reductions.h) says what a row holds and who reads
// it.  Gradient rules follow Note [Node order] (gradients.cpp).
//===----------------------------------------------------------------------===//
#include "aotc/ops/reductions.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "rule_util.h"

namespace aotc {

namespace {

using detail::reduceTypes;
using detail::shapeError;
using K = OpKind;
using R = std::vector<ValueId>;

/// Shape of a reduction's output with keepdim=true.
Ints keptShape(GradCtx& g) {
  Ints s = g.sizes(g.I(0));
  for (int64_t d : reductionDims(g.attrs(), static_cast<int64_t>(s.size()))) s[d] = 1;
  return s;
}

// ---- dtype rules: sum and prod of integers are int64 (ATen); mean needs a
// floating input; amax/amin keep the dtype and need an element.
std::vector<TensorType> sumTypes(const std::vector<TensorType>& in, const Attrs& a) { return reduceTypes(in, a, false); }
std::vector<TensorType> meanTypes(const std::vector<TensorType>& in, const Attrs& a) { return reduceTypes(in, a, true); }
std::vector<TensorType> extremumTypes(const std::vector<TensorType>& in, const Attrs& a) {
  if (in[0].numel() == 0) shapeError("amax/amin of an empty tensor");
  std::vector<TensorType> t = reduceTypes(in, a, false);
  t[0].dtype = in[0].dtype;
  return t;
}

double plus(double a, double v) { return a + v; }

/// amax/amin: the gradient goes to every element equal to the result, split evenly.
R extremumGrad(GradCtx& g) {
  Ints in = g.sizes(g.I(0));
  ValueId out = g.expand(g.reshape(g.O(0), keptShape(g)), in);
  ValueId mask = g.op(OpKind::Eq, {g.I(0), out});
  ValueId m = g.op(OpKind::Cast, {mask}, Attrs{{"dtype", std::string(dtypeName(g.type(g.GO(0)).dtype))}});
  Attrs red{{"dim", reductionDims(g.attrs(), static_cast<int64_t>(in.size()))}, {"keepdim", true}};
  ValueId count = g.op(OpKind::Sum, {m}, red);
  ValueId go = g.expand(g.reshape(g.GO(0), keptShape(g)), in);
  ValueId num = g.mul(go, m);
  return {g.div(num, g.expand(count, in))};
}

const std::vector<ReductionRule>& rows() {
  // clang-format off
  static const std::vector<ReductionRule> kRows = {
    {K::Sum, sumTypes, 0.0, plus, false, "0", "0", "",
     [](GradCtx& g) -> R { return {g.expand(g.reshape(g.GO(0), keptShape(g)), g.sizes(g.I(0)))}; },
     {{2, 3}, {1}, false}},
    {K::Mean, meanTypes, 0.0, plus, true, "0", "0", "",
     [](GradCtx& g) -> R {
       // n = numel(in) / numel(out), a size scalar (Note [Size scalars]).
       int64_t num = std::max<int64_t>(g.type(g.I(0)).numel(), 1), den = std::max<int64_t>(g.type(g.O(0)).numel(), 1);
       ValueId e = g.expand(g.reshape(g.GO(0), keptShape(g)), g.sizes(g.I(0)));
       return {g.div(e, g.sizeScalar(1.0, num, den, g.type(g.GO(0)).dtype))};
     },
     {{2, 3, 2}, {0, 2}, true}},
    {K::Prod, sumTypes, 1.0, [](double a, double v) { return a * v; }, false, "1", "1", "aotc_mul",
     [](GradCtx& g) -> R {
       // d prod / d x_i is the product of the other elements.  With no zero
       // in the group that is result / x_i (ATen's formula); with one zero,
       // the product of the non-zeros at the zero and 0 elsewhere; with
       // two or more, 0 everywhere.  x_i = 0 never divides (the divisor is
       // x with its zeros replaced by 1), so no NaN reaches a second order.
       if (!isFloating(g.type(g.I(0)).dtype)) return {kNoValue};
       Ints in = g.sizes(g.I(0));
       const std::string dt(dtypeName(g.type(g.GO(0)).dtype));
       Attrs red{{"dim", reductionDims(g.attrs(), static_cast<int64_t>(in.size()))}, {"keepdim", true}};
       ValueId zero = g.scalarLike(0.0, g.I(0));
       ValueId isZero = g.op(OpKind::Eq, {g.I(0), zero});
       ValueId nonZero = g.op(OpKind::Where, {isZero, g.scalarLike(1.0, g.I(0)), g.I(0)});
       ValueId zeros = g.expand(g.op(OpKind::Sum, {g.op(OpKind::Cast, {isZero}, Attrs{{"dtype", dt}})}, red), in);
       ValueId others = g.expand(g.op(OpKind::Prod, {nonZero}, red), in);
       ValueId go = g.expand(g.reshape(g.GO(0), keptShape(g)), in);
       ValueId result = g.expand(g.reshape(g.O(0), keptShape(g)), in);
       ValueId none = g.mul(go, g.div(result, nonZero));
       ValueId one = g.op(OpKind::Where, {isZero, g.mul(go, others), g.scalarLike(0.0, go)});
       ValueId noZeros = g.op(OpKind::Eq, {zeros, g.scalarLike(0.0, zeros)});
       ValueId oneZero = g.op(OpKind::Eq, {zeros, g.scalarLike(1.0, zeros)});
       ValueId rest = g.op(OpKind::Where, {oneZero, one, g.scalarLike(0.0, go)});
       return {g.op(OpKind::Where, {noZeros, none, rest})};
     },
     {{3, 4}, {1}, false}},
    // NaN wins (ATen's amax/amin propagate it).
    {K::Amax, extremumTypes, -INFINITY, [](double a, double v) { return (std::isnan(v) || v > a) ? v : a; }, false,
     "-AOTC_INF", "(-9223372036854775807LL - 1)", "aotc_max", extremumGrad, {{3, 4}, {1}, false}},
    {K::Amin, extremumTypes, INFINITY, [](double a, double v) { return (std::isnan(v) || v < a) ? v : a; }, false,
     "AOTC_INF", "9223372036854775807LL", "aotc_min", extremumGrad, {{3, 4}, {0}, true}},
  };
  // clang-format on
  return kRows;
}

}  // namespace

std::span<const ReductionRule> reductionRules() { return rows(); }

const ReductionRule* reductionRule(OpKind k) {
  static const detail::RowIndex<ReductionRule> index(rows(), OpCategory::Reduction, "reductions.cpp");
  return index.find(k);
}

}  // namespace aotc
