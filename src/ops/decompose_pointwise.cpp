//===- decompose_pointwise.cpp - Elementwise composites (issue 36) ---------===//
//
// Note [Decompositions] (decompose.h).  Each is ATen's CPU kernel written in
// the op table's rows, with the same comparisons (so NaN goes where ATen's
// sends it) and the same rounding order; autodiff of the composite is the
// gradient tools/autograd/derivatives.yaml gives, up to rounding.
//===----------------------------------------------------------------------===//
#include <cfloat>
#include <cmath>

#include "aotc/ops/decompose.h"
#include "rule_util.h"

namespace aotc::decomp {

namespace {

// Note [Sequenced operands]: every node is built in its own statement, never
// inside another call's argument list, whose evaluation order C++ leaves to
// the compiler (GCC builds right to left, clang left to right): the graph's
// node order -- and so the artifact's bytes -- must not depend on which
// compiler built aotc (compare_compilers checks it).  Braced lists are
// sequenced left to right, so {x, c.op(...)} is safe.
ValueId where(Builder& c, ValueId cond, ValueId a, ValueId b) { return c.op(OpKind::Where, {cond, a, b}); }

/// The largest finite value of a floating dtype (torch.finfo(d).max).
double finiteMax(DType d) {
  switch (d) {
    case DType::F16: return 65504.0;
    case DType::BF16: return 3.3895313892515355e38;
    case DType::F32: return FLT_MAX;
    default: return DBL_MAX;
  }
}

}  // namespace

ValueId frac(Builder& c, ValueId x) {
  if (!isFloating(c.type(x).dtype)) c.fail("frac: integer tensors have no fractional part (eager refuses them too)");
  return bin(c, OpKind::Sub, {x, c.op(OpKind::Trunc, {x})});
}

ValueId hardshrink(Builder& c, ValueId x, double lambd) {
  ValueId inside = bin(c, OpKind::Le, {c.op(OpKind::Abs, {x}), sc(c, lambd, x)});
  ValueId zero = sc(c, 0.0, x);
  return where(c, inside, zero, x);
}

ValueId softshrink(Builder& c, ValueId x, double lambd) {
  if (!(lambd >= 0)) c.fail(cat("softshrink: lambda must be at least 0, got ", lambd));
  ValueId l = sc(c, lambd, x);
  ValueId small = hardshrink(c, x, lambd);  // 0 inside [-lambd, lambd], NaN kept
  ValueId isBelow = bin(c, OpKind::Lt, {x, c.op(OpKind::Neg, {l})});
  ValueId shiftedUp = bin(c, OpKind::Add, {x, l});
  ValueId below = where(c, isBelow, shiftedUp, small);
  ValueId isAbove = bin(c, OpKind::Gt, {x, l});
  ValueId shiftedDown = bin(c, OpKind::Sub, {x, l});
  return where(c, isAbove, shiftedDown, below);
}

ValueId threshold(Builder& c, ValueId x, double th, double value) {
  ValueId at = bin(c, OpKind::Le, {x, sc(c, th, x)});
  ValueId replaced = sc(c, value, x);
  return where(c, at, replaced, x);
}

ValueId thresholdBackward(Builder& c, ValueId g, ValueId x, double th) {
  ValueId at = bin(c, OpKind::Le, {x, sc(c, th, x)});
  ValueId zero = sc(c, 0.0, g);
  return where(c, at, zero, g);
}

ValueId shrinkBackward(Builder& c, ValueId g, ValueId x, double lambd) {
  ValueId aboveLow = bin(c, OpKind::Ge, {x, sc(c, -lambd, x)});
  ValueId belowHigh = bin(c, OpKind::Le, {x, sc(c, lambd, x)});
  ValueId inside = c.op(OpKind::LogicalAnd, {aboveLow, belowHigh});
  ValueId zero = sc(c, 0.0, g);
  return where(c, inside, zero, g);
}

ValueId logitBackward(Builder& c, ValueId g, ValueId x, std::optional<double> eps) {
  if (!isFloating(c.type(x).dtype)) c.fail("logit_backward: the input must be a floating-point tensor");
  ValueId one = sc(c, 1.0, x);
  ValueId rest = bin(c, OpKind::Sub, {one, x});
  ValueId den = bin(c, OpKind::Mul, {x, rest});
  ValueId d = bin(c, OpKind::Div, {g, den});
  // ATen: eps < 0 (or none) gives NaN outside [0, 1]; eps >= 0 gives 0 outside [eps, 1 - eps].
  const bool clamped = eps && *eps >= 0;
  ValueId lo = sc(c, clamped ? *eps : 0.0, x);
  ValueId hi = clamped ? bin(c, OpKind::Sub, {sc(c, 1.0, x), lo}) : sc(c, 1.0, x);
  ValueId below = bin(c, OpKind::Lt, {x, lo});
  ValueId above = bin(c, OpKind::Gt, {x, hi});
  ValueId outside = c.op(OpKind::LogicalOr, {below, above});
  ValueId fill = sc(c, clamped ? 0.0 : std::nan(""), d);
  return where(c, outside, fill, d);
}

ValueId lerp(Builder& c, ValueId a, ValueId b, ValueId w, std::optional<double> scalarWeight) {
  ValueId d = bin(c, OpKind::Sub, {b, a});
  auto small = [&] { return bin(c, OpKind::Add, {a, bin(c, OpKind::Mul, {w, d})}); };
  auto large = [&] { return bin(c, OpKind::Sub, {b, bin(c, OpKind::Mul, {d, bin(c, OpKind::Sub, {sc(c, 1.0, w), w})})}); };
  if (scalarWeight) return std::abs(*scalarWeight) < 0.5 ? small() : large();
  ValueId isSmall = bin(c, OpKind::Lt, {c.op(OpKind::Abs, {w}), sc(c, 0.5, w)});
  ValueId s = small();
  ValueId l = large();
  return where(c, isSmall, s, l);
}

ValueId nanToNum(Builder& c, ValueId x, std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf) {
  DType d = c.type(x).dtype;
  if (!isFloating(d)) return c.op(OpKind::Clone, {x});
  ValueId isNan = c.op(OpKind::IsNan, {x});
  ValueId nanValue = sc(c, nan.value_or(0.0), x);
  ValueId r = where(c, isNan, nanValue, x);
  ValueId isNegInf = bin(c, OpKind::Eq, {x, sc(c, -HUGE_VAL, x)});
  ValueId negValue = sc(c, neginf.value_or(-finiteMax(d)), x);
  r = where(c, isNegInf, negValue, r);
  ValueId isPosInf = bin(c, OpKind::Eq, {x, sc(c, HUGE_VAL, x)});
  ValueId posValue = sc(c, posinf.value_or(finiteMax(d)), x);
  return where(c, isPosInf, posValue, r);
}

ValueId logit(Builder& c, ValueId x, std::optional<double> eps) {
  if (!isFloating(c.type(x).dtype)) x = c.op(OpKind::Cast, {x}, Attrs{{"dtype", std::string("f32")}});
  if (eps && *eps >= 0) {
    // ATen's lo = eps and hi = 1 - eps in the tensor's dtype; where keeps NaN.
    ValueId lo = sc(c, *eps, x);
    ValueId hi = bin(c, OpKind::Sub, {sc(c, 1.0, x), lo});
    ValueId isAbove = bin(c, OpKind::Gt, {x, hi});
    ValueId above = where(c, isAbove, hi, x);
    ValueId isBelow = bin(c, OpKind::Lt, {x, lo});
    x = where(c, isBelow, lo, above);
  }
  return c.op(OpKind::Logit, {x});
}

namespace {
ValueId lossReduced(Builder& c, ValueId v, int64_t reduction, const char* what) {
  if (reduction == 0) return v;
  if (reduction != 1 && reduction != 2) c.fail(cat(what, ": reduction must be 0 (none), 1 (mean) or 2 (sum), got ", reduction));
  return reduceOp(c, reduction == 1 ? OpKind::Mean : OpKind::Sum, v, {}, false);
}
void requireBceShapes(Builder& c, ValueId x, ValueId t, ValueId w) {
  if (c.type(t).sizes != c.type(x).sizes) c.fail("binary_cross_entropy: the target must have the input's shape");
  if (!isFloating(c.type(x).dtype)) c.fail("binary_cross_entropy: the input must be a floating-point tensor");
  if (w == kNoValue) return;
  std::optional<Ints> b = broadcastShapes(c.type(w).sizes, c.type(x).sizes);
  if (!b || *b != c.type(x).sizes) c.fail("binary_cross_entropy: the weight must broadcast to the input's shape");
}
}  // namespace

ValueId binaryCrossEntropy(Builder& c, ValueId x, ValueId t, ValueId w, int64_t reduction) {
  requireBceShapes(c, x, t, w);
  ValueId l = c.op(OpKind::BinaryCrossEntropy, {x, t});
  if (w != kNoValue) l = bin(c, OpKind::Mul, {l, w});
  return lossReduced(c, l, reduction, "binary_cross_entropy");
}

ValueId binaryCrossEntropyBackward(Builder& c, ValueId g, ValueId x, ValueId t, ValueId w, int64_t reduction) {
  requireBceShapes(c, x, t, w);
  if (reduction != 0 && reduction != 1 && reduction != 2)
    c.fail(cat("binary_cross_entropy_backward: reduction must be 0, 1 or 2, got ", reduction));
  ValueId num = bin(c, OpKind::Mul, {g, bin(c, OpKind::Sub, {x, t})});
  ValueId den = bin(c, OpKind::Maximum, {bin(c, OpKind::Mul, {bin(c, OpKind::Sub, {sc(c, 1.0, x), x}), x}), sc(c, 1e-12, x)});
  ValueId r = bin(c, OpKind::Div, {num, den});
  if (w != kNoValue) r = bin(c, OpKind::Mul, {r, w});
  if (reduction == 1) r = bin(c, OpKind::Div, {r, c.sizeScalar(1.0, c.type(x).numel(), 1, c.type(r).dtype)});
  if (c.type(r).sizes != c.type(x).sizes) r = c.op(OpKind::Expand, {r}, Attrs{{"size", c.type(x).sizes}});
  return r;
}

}  // namespace aotc::decomp
