//===- pointwise.cpp - One row per elementwise op, every rule in it -------===//
//
// Note [Pointwise rows] (pointwise.h) says what a row holds and who reads it.
// Gradient rules follow Note [Node order] (gradients.cpp): no call has two
// arguments that both create nodes.
//===----------------------------------------------------------------------===//
#include "aotc/ops/pointwise.h"

#include <cmath>
#include <cstdint>
#include <numbers>

#include "rule_util.h"

namespace aotc {

namespace {

using detail::broadcastRule;
using detail::shapeError;
using K = OpKind;
using R = std::vector<ValueId>;
using Rhs = SampleRange;

// ---- dtype rules (ATen's): the result of broadcasting every operand.
std::vector<TensorType> same(const std::vector<TensorType>& in, const Attrs&) {
  return {TensorType::contiguous(in[0].dtype, in[0].sizes)};
}
/// Promoted operands (bool < integers < half types < f32 < f64).
std::vector<TensorType> promoted(const std::vector<TensorType>& in, const Attrs&) {
  return broadcastRule(in, promoteTypes(in[0].dtype, in[1].dtype));
}
/// Float math: integer operands give float32 (true division, exp of an int).
std::vector<TensorType> floating(const std::vector<TensorType>& in, const Attrs&) {
  DType d = in.size() == 1 ? in[0].dtype : promoteTypes(in[0].dtype, in[1].dtype);
  return broadcastRule(in, isFloating(d) ? d : DType::F32);
}
std::vector<TensorType> boolean(const std::vector<TensorType>& in, const Attrs&) { return broadcastRule(in, DType::Bool); }
std::vector<TensorType> whereTypes(const std::vector<TensorType>& in, const Attrs&) {
  if (in[0].dtype != DType::Bool) shapeError("where: condition must be bool, got " + std::string(dtypeName(in[0].dtype)));
  return broadcastRule(in, promoteTypes(in[1].dtype, in[2].dtype));
}
std::vector<TensorType> castTypes(const std::vector<TensorType>& in, const Attrs& a) {
  auto d = parseDType(attrString(a, "dtype"));
  if (!d) shapeError("cast: unknown dtype");
  return {TensorType::contiguous(*d, in[0].sizes)};
}
std::vector<TensorType> integral(const std::vector<TensorType>& in, const Attrs& a) {
  for (const TensorType& t : in)
    if (isFloating(t.dtype)) shapeError("bitwise ops take integer or bool tensors, got " + std::string(dtypeName(t.dtype)));
  if (in.size() == 1 && in[0].dtype == DType::Bool) shapeError("bitwise_not of a bool tensor is logical_not");
  return in.size() == 1 ? same(in, a) : promoted(in, a);
}

// ---- reference helpers
/// Python's %: the remainder takes the divisor's sign (ATen's remainder).
double remainderOf(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((b < 0) != (m < 0))) m += b;
  return m;
}
/// Note [Signed zero of mod]: numpy's npy_divmod and CPython's float %
/// give a zero remainder the divisor's sign (0.0 % -2.0 == -0.0), and ONNX's
/// Mod with fmod=0 is numpy's mod; ATen's remainder leaves fmod's zero, the
/// dividend's sign (torch.remainder(0., -2.) == 0.0, in 1.13 and 2.x alike),
/// so the two are distinct ops.  A divisor of zero or NaN makes fmod NaN,
/// never a zero, so copysign only meets a finite or infinite divisor.
double modOf(double a, double b) {
  double m = remainderOf(a, b);
  return m == 0 ? std::copysign(0.0, b) : m;
}
/// ATen's div_floor_floating (c10/util/generic_math.h).
double divFloorOf(double a, double b) {
  if (b == 0) return a / b;
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  double fl;
  if (div != 0) {
    fl = std::floor(div);
    if (div - fl > 0.5) fl += 1.0;
  } else {
    fl = std::copysign(0.0, a / b);
  }
  return fl;
}
int64_t asInt(double v) { return static_cast<int64_t>(v); }

// Special functions in double, as PyTorch's (ATen/native/Math.h, from
// Cephes): the reference runtime's values (the prelude has the kernels').
double digammaOf(double x) {
  if (x == 0) return std::copysign(HUGE_VAL, -x);
  if (x < 0) {
    if (x == std::trunc(x)) return std::nan("");
    double q;
    double r = std::modf(x, &q);
    return digammaOf(1 - x) - std::numbers::pi / std::tan(std::numbers::pi * r);
  }
  double result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  if (x == 10) return result + 2.25175258906672110764;
  static constexpr double A[] = {8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
                                 -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
                                 8.33333333333333333333E-2};
  double y = 0;
  if (x < 1.0e17) {
    double z = 1.0 / (x * x), p = 0;
    for (double a : A) p = p * z + a;
    y = z * p;
  }
  return result + std::log(x) - (0.5 / x) - y;
}
double trigammaOf(double x) {
  double sign = 1, result = 0;
  if (x < 0.5) {
    sign = -1;
    const double s = std::sin(std::numbers::pi * x);
    result -= (std::numbers::pi * std::numbers::pi) / (s * s);
    x = 1 - x;
  }
  for (int i = 0; i < 6; ++i) {
    result += 1 / (x * x);
    x += 1;
  }
  const double ixx = 1 / (x * x);
  result += (1 + 1 / (2 * x) + ixx * (1. / 6 - ixx * (1. / 30 - ixx * (1. / 42)))) / x;
  return sign * result;
}
/// calc_erfinv: a rational start, two Newton steps.
double erfinvOf(double y) {
  static constexpr double a[4] = {0.886226899, -1.645349621, 0.914624893, -0.140543331};
  static constexpr double b[4] = {-2.118377725, 1.442710462, -0.329097515, 0.012229801};
  static constexpr double c[4] = {-1.970840454, -1.624906493, 3.429567803, 1.641345311};
  static constexpr double d[2] = {3.543889200, 1.637067800};
  const double ya = std::abs(y);
  if (ya > 1.0) return std::nan("");
  if (ya == 1.0) return std::copysign(HUGE_VAL, y);
  double x;
  if (ya <= 0.7) {
    const double z = y * y;
    x = y * (((a[3] * z + a[2]) * z + a[1]) * z + a[0]) / ((((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + 1.0);
  } else {
    const double z = std::sqrt(-std::log((1.0 - ya) / 2.0));
    x = std::copysign(((c[3] * z + c[2]) * z + c[1]) * z + c[0], y) / ((d[1] * z + d[0]) * z + 1.0);
  }
  const double k = 2.0 * 0.564189583547756286948079451560772586;  // 2 / sqrt(pi)
  x = x - (std::erf(x) - y) / (k * std::exp(-x * x));
  x = x - (std::erf(x) - y) / (k * std::exp(-x * x));
  return x;
}
/// ATen's logaddexp2 and per-element binary_cross_entropy (std::max's NaN order).
double logaddexp2Of(double a, double b) {
  if (std::isinf(a) && a == b) return a;
  const double m = a < b ? b : a;
  return m + std::log1p(std::exp2(-std::abs(a - b))) * (1.0 / std::numbers::ln2);
}
double bceOf(double x, double t) {
  double l1 = std::log1p(-x), l0 = std::log(x);
  l1 = l1 < -100 ? -100 : l1;
  l0 = l0 < -100 ? -100 : l0;
  return (t - 1) * l1 - t * l0;
}
/// Floating operands only (ATen has no integer kernel: hypot, logaddexp2).
std::vector<TensorType> floatOnly(const std::vector<TensorType>& in, const Attrs& a) {
  for (const TensorType& t : in)
    if (!isFloating(t.dtype)) shapeError("this op takes floating-point tensors, got " + std::string(dtypeName(t.dtype)));
  return promoted(in, a);
}

// ---- gradient helpers
/// A binary op's gradients, each summed back to its operand's shape.
R toOperands(GradCtx& g, ValueId ga, ValueId gb) { return {g.sumTo(ga, g.sizes(g.I(0))), g.sumTo(gb, g.sizes(g.I(1)))}; }
/// Piecewise-constant ops: zero gradient (ATen: zeros_like(grad)).
R zeroGrad(GradCtx& g) { return {g.zeros(g.type(g.I(0)))}; }
/// maximum/minimum: the winner takes the gradient; ties split it equally
/// (ATen's max/min backward).
R pickGrad(GradCtx& g, OpKind wins) {
  ValueId zero = g.scalarLike(0.0, g.GO(0));
  ValueId half = g.mul(g.GO(0), g.scalarLike(0.5, g.GO(0)));
  ValueId tie = g.op(OpKind::Eq, {g.I(0), g.I(1)});
  ValueId ga = g.op(OpKind::Where, {tie, half, g.op(OpKind::Where, {g.op(wins, {g.I(0), g.I(1)}), g.GO(0), zero})});
  ValueId gb = g.op(OpKind::Where, {tie, half, g.op(OpKind::Where, {g.op(wins, {g.I(1), g.I(0)}), g.GO(0), zero})});
  return toOperands(g, ga, gb);
}
/// d/da of fmod/remainder is 1; d/db is -q, q the rounded quotient.
R remainderGrad(GradCtx& g, ValueId q) {
  ValueId gb = g.neg(g.mul(g.GO(0), q));
  return toOperands(g, g.GO(0), gb);
}
/// g / (x * ln(base)): log2, log10.
R logBaseGrad(GradCtx& g, double ln) {
  ValueId d = g.mul(g.I(0), g.scalarLike(ln, g.O(0)));
  return {g.div(g.GO(0), d)};
}
/// asin: g * rsqrt(1 - x^2) (acos: its negation).
ValueId asinGrad(GradCtx& g) {
  ValueId xx = g.mul(g.I(0), g.I(0));
  ValueId one = g.scalarLike(1.0, g.O(0));
  ValueId r = g.op(OpKind::Rsqrt, {g.sub(one, xx)});
  return g.mul(g.GO(0), r);
}
/// asinh: g * rsqrt(x^2 + 1); acosh: g * rsqrt(x^2 - 1).
R ainvHyperbolicGrad(GradCtx& g, bool plus) {
  ValueId xx = g.mul(g.I(0), g.I(0));
  ValueId one = g.scalarLike(1.0, g.O(0));
  ValueId d = plus ? g.add(xx, one) : g.sub(xx, one);
  return {g.mul(g.GO(0), g.op(OpKind::Rsqrt, {d}))};
}

constexpr GradRule kNoGrad = nullptr;

// clang-format off
const PointwiseRule kRows[] = {
  // Arithmetic.  add/sub carry `alpha` and mul/div have in-place and
  // rounding-mode forms: the FX front end spells those itself.
  {K::Add, promoted, [](const double* a) { return a[0] + a[1]; }, "({0} + {1})",
   [](GradCtx& g) -> R { return {g.sumTo(g.GO(0), g.sizes(g.I(0))), g.sumTo(g.GO(0), g.sizes(g.I(1)))}; }, {}, {}},
  {K::Sub, promoted, [](const double* a) { return a[0] - a[1]; }, "({0} - {1})",
   [](GradCtx& g) -> R { return {g.sumTo(g.GO(0), g.sizes(g.I(0))), g.sumTo(g.neg(g.GO(0)), g.sizes(g.I(1)))}; }, {}, {}},
  {K::Mul, promoted, [](const double* a) { return a[0] * a[1]; }, "({0} * {1})",
   [](GradCtx& g) -> R {
     return {g.sumTo(g.mul(g.GO(0), g.I(1)), g.sizes(g.I(0))), g.sumTo(g.mul(g.GO(0), g.I(0)), g.sizes(g.I(1)))};
   }, {"aten.mul.Tensor", "aten.mul.Scalar"}, {-2, 2, false, Rhs::Column}},
  {K::Div, floating, [](const double* a) { return a[0] / a[1]; }, "({0} / {1})",
   [](GradCtx& g) -> R {
     ValueId ga = g.div(g.GO(0), g.I(1));
     return {g.sumTo(ga, g.sizes(g.I(0))), g.sumTo(g.neg(g.mul(ga, g.O(0))), g.sizes(g.I(1)))};
   }, {"aten.div.Tensor", "aten.div.Scalar"}, {0.5, 2}},
  {K::Neg, same, [](const double* a) { return -a[0]; }, "(-{0})",
   [](GradCtx& g) -> R { return {g.neg(g.GO(0))}; }, {"aten.neg.default"}, {}},
  {K::Pow, promoted, [](const double* a) { return std::pow(a[0], a[1]); }, "aotc_pow({0}, {1})",
   [](GradCtx& g) -> R {
     ValueId bm1 = g.sub(g.I(1), g.scalarLike(1.0, g.I(1)));
     ValueId gi1 = g.mul(g.GO(0), g.I(1));
     ValueId ga = g.mul(gi1, g.op(OpKind::Pow, {g.I(0), bm1}));
     ValueId go0 = g.mul(g.GO(0), g.O(0));
     return toOperands(g, ga, g.mul(go0, g.op(OpKind::Log, {g.I(0)})));
   }, {"aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor"}, {0.5, 2}},
  {K::Maximum, promoted, [](const double* a) { return std::isnan(a[0]) || a[0] > a[1] ? a[0] : a[1]; }, "aotc_max({0}, {1})",
   [](GradCtx& g) -> R { return pickGrad(g, OpKind::Gt); }, {"aten.maximum.default"}, {-2, 2, false, Rhs::Full}},
  {K::Minimum, promoted, [](const double* a) { return std::isnan(a[0]) || a[0] < a[1] ? a[0] : a[1]; }, "aotc_min({0}, {1})",
   [](GradCtx& g) -> R { return pickGrad(g, OpKind::Lt); }, {"aten.minimum.default"}, {}},
  // fmod: the remainder with the dividend's sign (C fmod); remainder: with
  // the divisor's (Python %); div_floor: ATen's div_floor_floating.  d/db
  // fmod(a, b) = -trunc(a / b); d/db remainder(a, b) = -floor(a / b).  The
  // FX spellings check an integer divisor first (fx/pointwise.cpp's binaryChecked).
  {K::Fmod, promoted, [](const double* a) { return std::fmod(a[0], a[1]); }, "aotc_fmod({0}, {1})",
   [](GradCtx& g) -> R { return remainderGrad(g, g.op(OpKind::Trunc, {g.div(g.I(0), g.I(1))})); }, {}, {0.5, 2}},
  {K::Remainder, promoted, [](const double* a) { return remainderOf(a[0], a[1]); }, "aotc_remainder({0}, {1})",
   [](GradCtx& g) -> R { return remainderGrad(g, g.op(OpKind::DivFloor, {g.I(0), g.I(1)})); }, {}, {0.5, 2, false, Rhs::Column}},
  // mod: remainder with a zero of the divisor's sign (Note [Signed zero of
  // mod]); remainder's gradient.
  {K::Mod, floatOnly, [](const double* a) { return modOf(a[0], a[1]); }, "aotc_mod({0}, {1})",
   [](GradCtx& g) -> R { return remainderGrad(g, g.op(OpKind::DivFloor, {g.I(0), g.I(1)})); }, {}, {-2, 2, true, Rhs::Column}},
  {K::DivFloor, promoted, [](const double* a) { return divFloorOf(a[0], a[1]); }, "aotc_div_floor({0}, {1})",
   [](GradCtx& g) -> R {
     ValueId za = g.zeros(g.type(g.I(0)));
     return {za, g.zeros(g.type(g.I(1)))};
   }, {}, {0.5, 2}},
  {K::Atan2, floating, [](const double* a) { return std::atan2(a[0], a[1]); }, "aotc_atan2({0}, {1})",
   [](GradCtx& g) -> R {
     ValueId aa = g.mul(g.I(0), g.I(0));
     ValueId bb = g.mul(g.I(1), g.I(1));
     ValueId s = g.add(aa, bb);
     ValueId ga = g.div(g.mul(g.GO(0), g.I(1)), s);
     return toOperands(g, ga, g.neg(g.div(g.mul(g.GO(0), g.I(0)), s)));
   }, {"aten.atan2.default"}, {-2, 2, true}},

  // Elementwise math.  x = I(0), y = O(0).
  // relu: ATen's clamp_min(x, 0), x itself unless below zero, so NaN stays NaN
  // and -0 stays -0 (relu(nan) was 0 here, hiding a NaN eager shows).
  // Note [Relu's mask from its input]: the gradient passes where x > 0,
  // which is where relu(x) > 0 for every x (NaN and -0 included).  ATen's
  // formula reads the result (so relu_ may overwrite x); after
  // functionalization x is still there.  Where x is a pointwise value of
  // pointwise values (a train-mode BatchNorm's output), reading x lets the
  // backward recompute the mask inside the kernels that already read x's
  // sources (the BatchNorm's input and statistics) instead of reading the
  // saved result once more per kernel.  Where x is or reads a buffer the
  // backward would not otherwise keep (a GEMM's output, or its bias add),
  // the result is read, as ATen does, so the backward keeps one tensor, not
  // two.
  {K::Relu, same, [](const double* a) { return a[0] < 0 ? 0.0 : a[0]; }, "aotc_relu({0})",
   [](GradCtx& g) -> R {
     const Graph& graph = g.graph();
     auto producer = [&](ValueId v) -> const Node* {
       int32_t d = graph.values[v].node;
       return d < 0 ? nullptr : &graph.nodes[static_cast<size_t>(d)];
     };
     const Node* p = producer(g.I(0));
     bool expression = p && opInfo(p->op).category == OpCategory::Pointwise;
     for (size_t i = 0; expression && i < p->inputs.size(); ++i) {
       const Node* q = producer(p->inputs[i]);
       while (q && isView(q->op)) q = producer(q->inputs[0]);
       expression = !q || opInfo(q->op).category != OpCategory::Extern;
     }
     ValueId ref = expression ? g.I(0) : g.O(0);
     ValueId zero = g.scalarLike(0.0, ref);
     return {g.op(OpKind::Where, {g.op(OpKind::Gt, {ref, zero}), g.GO(0), zero})};
   }, {"aten.relu.default"}, {-2, 2, true}},
  {K::Exp, floating, [](const double* a) { return std::exp(a[0]); }, "aotc_exp({0})",
   [](GradCtx& g) -> R { return {g.mul(g.GO(0), g.O(0))}; }, {"aten.exp.default"}, {}},
  {K::Expm1, floating, [](const double* a) { return std::expm1(a[0]); }, "aotc_expm1({0})",
   [](GradCtx& g) -> R {
     ValueId t = g.add(g.O(0), g.scalarLike(1.0, g.O(0)));
     return {g.mul(g.GO(0), t)};
   }, {"aten.expm1.default"}, {}},
  {K::Log, floating, [](const double* a) { return std::log(a[0]); }, "aotc_log({0})",
   [](GradCtx& g) -> R { return {g.div(g.GO(0), g.I(0))}; }, {"aten.log.default"}, {0.5, 2}},
  {K::Log1p, floating, [](const double* a) { return std::log1p(a[0]); }, "aotc_log1p({0})",
   [](GradCtx& g) -> R {
     ValueId d = g.add(g.I(0), g.scalarLike(1.0, g.I(0)));
     return {g.div(g.GO(0), d)};
   }, {"aten.log1p.default"}, {-0.5, 2}},
  {K::Log2, floating, [](const double* a) { return std::log2(a[0]); }, "aotc_log2({0})",
   [](GradCtx& g) -> R { return logBaseGrad(g, 0.69314718055994531); }, {"aten.log2.default"}, {0.5, 2}},
  {K::Log10, floating, [](const double* a) { return std::log10(a[0]); }, "aotc_log10({0})",
   [](GradCtx& g) -> R { return logBaseGrad(g, 2.3025850929940457); }, {"aten.log10.default"}, {0.5, 2}},
  {K::Sqrt, floating, [](const double* a) { return std::sqrt(a[0]); }, "aotc_sqrt({0})",
   [](GradCtx& g) -> R { return {g.div(g.mul(g.GO(0), g.scalarLike(0.5, g.O(0))), g.O(0))}; }, {"aten.sqrt.default"}, {0.5, 2}},
  {K::Rsqrt, floating, [](const double* a) { return 1.0 / std::sqrt(a[0]); }, "aotc_rsqrt({0})",
   [](GradCtx& g) -> R {
     ValueId o3 = g.mul(g.mul(g.O(0), g.O(0)), g.O(0));
     return {g.mul(g.mul(g.GO(0), g.scalarLike(-0.5, g.O(0))), o3)};
   }, {"aten.rsqrt.default"}, {0.5, 2}},
  {K::Reciprocal, floating, [](const double* a) { return 1.0 / a[0]; }, "aotc_reciprocal({0})",
   [](GradCtx& g) -> R {
     ValueId yy = g.mul(g.O(0), g.O(0));
     ValueId m = g.mul(g.GO(0), yy);
     return {g.neg(m)};
   }, {"aten.reciprocal.default"}, {0.5, 2}},
  {K::Abs, same, [](const double* a) { return std::abs(a[0]); }, "aotc_abs({0})",
   [](GradCtx& g) -> R { return {g.mul(g.GO(0), g.op(OpKind::Sign, {g.I(0)}))}; }, {"aten.abs.default"}, {-2, 2, true}},
  {K::Sign, same, [](const double* a) { return a[0] > 0 ? 1.0 : (a[0] < 0 ? -1.0 : 0.0); }, "aotc_sign({0})",
   zeroGrad, {"aten.sign.default"}, {}},
  {K::Erf, floating, [](const double* a) { return std::erf(a[0]); }, "aotc_erf({0})",
   [](GradCtx& g) -> R {
     ValueId e = g.op(OpKind::Exp, {g.neg(g.mul(g.I(0), g.I(0)))});
     return {g.mul(g.mul(g.GO(0), g.scalarLike(1.1283791670955126, g.O(0))), e)};  // 2/sqrt(pi)
   }, {"aten.erf.default"}, {}},
  {K::Sigmoid, floating, [](const double* a) { return 1.0 / (1.0 + std::exp(-a[0])); }, "aotc_sigmoid({0})",
   [](GradCtx& g) -> R {
     ValueId a = g.mul(g.GO(0), g.O(0));
     ValueId b = g.sub(g.scalarLike(1.0, g.O(0)), g.O(0));
     return {g.mul(a, b)};
   }, {"aten.sigmoid.default"}, {}},
  {K::Tanh, floating, [](const double* a) { return std::tanh(a[0]); }, "aotc_tanh({0})",
   [](GradCtx& g) -> R {
     ValueId one = g.scalarLike(1.0, g.O(0));
     ValueId sq = g.mul(g.O(0), g.O(0));
     return {g.mul(g.GO(0), g.sub(one, sq))};
   }, {"aten.tanh.default"}, {}},

  // Trigonometric and hyperbolic.
  {K::Sin, floating, [](const double* a) { return std::sin(a[0]); }, "aotc_sin({0})",
   [](GradCtx& g) -> R { return {g.mul(g.GO(0), g.op(OpKind::Cos, {g.I(0)}))}; }, {"aten.sin.default"}, {}},
  {K::Cos, floating, [](const double* a) { return std::cos(a[0]); }, "aotc_cos({0})",
   [](GradCtx& g) -> R { return {g.neg(g.mul(g.GO(0), g.op(OpKind::Sin, {g.I(0)})))}; }, {"aten.cos.default"}, {}},
  {K::Tan, floating, [](const double* a) { return std::tan(a[0]); }, "aotc_tan({0})",
   [](GradCtx& g) -> R {
     ValueId yy = g.mul(g.O(0), g.O(0));
     ValueId t = g.add(yy, g.scalarLike(1.0, g.O(0)));
     return {g.mul(g.GO(0), t)};
   }, {"aten.tan.default"}, {-1.2, 1.2}},
  {K::Asin, floating, [](const double* a) { return std::asin(a[0]); }, "aotc_asin({0})",
   [](GradCtx& g) -> R { return {asinGrad(g)}; }, {"aten.asin.default"}, {-0.9, 0.9}},
  {K::Acos, floating, [](const double* a) { return std::acos(a[0]); }, "aotc_acos({0})",
   [](GradCtx& g) -> R { return {g.neg(asinGrad(g))}; }, {"aten.acos.default"}, {-0.9, 0.9}},
  {K::Atan, floating, [](const double* a) { return std::atan(a[0]); }, "aotc_atan({0})",
   [](GradCtx& g) -> R {
     ValueId xx = g.mul(g.I(0), g.I(0));
     ValueId d = g.add(xx, g.scalarLike(1.0, g.O(0)));
     return {g.div(g.GO(0), d)};
   }, {"aten.atan.default"}, {}},
  {K::Sinh, floating, [](const double* a) { return std::sinh(a[0]); }, "aotc_sinh({0})",
   [](GradCtx& g) -> R { return {g.mul(g.GO(0), g.op(OpKind::Cosh, {g.I(0)}))}; }, {"aten.sinh.default"}, {}},
  {K::Cosh, floating, [](const double* a) { return std::cosh(a[0]); }, "aotc_cosh({0})",
   [](GradCtx& g) -> R { return {g.mul(g.GO(0), g.op(OpKind::Sinh, {g.I(0)}))}; }, {"aten.cosh.default"}, {}},
  {K::Asinh, floating, [](const double* a) { return std::asinh(a[0]); }, "aotc_asinh({0})",
   [](GradCtx& g) -> R { return ainvHyperbolicGrad(g, true); }, {"aten.asinh.default"}, {}},
  {K::Acosh, floating, [](const double* a) { return std::acosh(a[0]); }, "aotc_acosh({0})",
   [](GradCtx& g) -> R { return ainvHyperbolicGrad(g, false); }, {"aten.acosh.default"}, {1.2, 3}},
  {K::Atanh, floating, [](const double* a) { return std::atanh(a[0]); }, "aotc_atanh({0})",
   [](GradCtx& g) -> R {
     ValueId xx = g.mul(g.I(0), g.I(0));
     ValueId d = g.sub(g.scalarLike(1.0, g.O(0)), xx);
     return {g.div(g.GO(0), d)};
   }, {"aten.atanh.default"}, {-0.9, 0.9}},

  // Special functions (issue 36): gradients as tools/autograd/derivatives.yaml.
  {K::Erfc, floating, [](const double* a) { return std::erfc(a[0]); }, "aotc_erfc({0})",
   [](GradCtx& g) -> R {
     ValueId e = g.op(OpKind::Exp, {g.neg(g.mul(g.I(0), g.I(0)))});
     return {g.mul(g.mul(g.scalarLike(-1.1283791670955126, g.O(0)), e), g.GO(0))};  // -2/sqrt(pi)
   }, {"aten.erfc.default"}, {}},
  {K::Exp2, floating, [](const double* a) { return std::exp2(a[0]); }, "aotc_exp2({0})",
   [](GradCtx& g) -> R {
     ValueId d = g.mul(g.GO(0), g.O(0));  // Note [Sequenced operands] (decompose_pointwise.cpp)
     return {g.mul(d, g.scalarLike(std::numbers::ln2, g.O(0)))};
   },
   {"aten.exp2.default"}, {}},
  {K::Lgamma, floating, [](const double* a) { return std::lgamma(a[0]); }, "aotc_lgamma({0})",
   [](GradCtx& g) -> R { return {g.mul(g.GO(0), g.op(OpKind::Digamma, {g.I(0)}))}; }, {"aten.lgamma.default"},
   {0.3, 4}},
  {K::Digamma, floating, [](const double* a) { return digammaOf(a[0]); }, "aotc_digamma({0})",
   [](GradCtx& g) -> R { return {g.mul(g.GO(0), g.op(OpKind::Trigamma, {g.I(0)}))}; },
   {"aten.digamma.default"}, {0.3, 4}},
  // polygamma(1, x); its own gradient (polygamma(2, x)) is not a row, so a
  // third derivative of lgamma is refused (ops.def: NeverDiff).
  {K::Trigamma, floating, [](const double* a) { return trigammaOf(a[0]); }, "aotc_trigamma({0})", kNoGrad, {}, {0.3, 4}},
  // At +-1 the gradient is inf (NaN where the incoming gradient is 0), as eager's.
  {K::Erfinv, floating, [](const double* a) { return erfinvOf(a[0]); }, "aotc_erfinv({0})",
   [](GradCtx& g) -> R {
     ValueId e = g.op(OpKind::Exp, {g.mul(g.O(0), g.O(0))});
     return {g.mul(g.mul(g.scalarLike(0.88622692545275801, g.O(0)), e), g.GO(0))};  // sqrt(pi)/2
   }, {"aten.erfinv.default"}, {-0.9, 0.9}},
  // logit without eps (the FX converter clamps for eps): ATen's logit_backward,
  // NaN outside [0, 1].
  {K::Logit, floating, [](const double* a) { return std::log(a[0] / (1 - a[0])); }, "aotc_logit({0})",
   [](GradCtx& g) -> R {
     ValueId one = g.scalarLike(1.0, g.I(0));
     ValueId out = g.op(OpKind::LogicalOr, {g.op(OpKind::Lt, {g.I(0), g.scalarLike(0.0, g.I(0))}), g.op(OpKind::Gt, {g.I(0), one})});
     ValueId d = g.div(g.GO(0), g.mul(g.I(0), g.sub(one, g.I(0))));
     return {g.op(OpKind::Where, {out, g.scalarLike(std::nan(""), d), d})};
   }, {}, {0.1, 0.9}},
  // copysign: d/da = result / a, 0 where a == 0 (copysign_tensor_self_backward); none for b.
  {K::Copysign, floating, [](const double* a) { return std::copysign(a[0], a[1]); }, "aotc_copysign({0}, {1})",
   [](GradCtx& g) -> R {
     ValueId zero = g.scalarLike(0.0, g.O(0));
     ValueId ratio = g.op(OpKind::Where, {g.op(OpKind::Eq, {g.I(0), zero}), zero, g.div(g.O(0), g.I(0))});
     ValueId gb = g.zeros(g.type(g.I(1)));
     return {g.sumTo(g.mul(g.GO(0), ratio), g.sizes(g.I(0))), gb};
   }, {"aten.copysign.Tensor", "aten.copysign.Scalar"}, {-2, 2, true, Rhs::Full}},
  {K::Hypot, floatOnly, [](const double* a) { return std::hypot(a[0], a[1]); }, "aotc_hypot({0}, {1})",
   [](GradCtx& g) -> R {
     ValueId ga = g.div(g.mul(g.GO(0), g.I(0)), g.O(0));
     return toOperands(g, ga, g.div(g.mul(g.GO(0), g.I(1)), g.O(0)));
   }, {"aten.hypot.default"}, {-2, 2, true}},
  // d/da = g / (1 + 2^(b - a)) (derivatives.yaml; NaN where a == b is infinite).
  {K::LogAddExp2, floatOnly, [](const double* a) { return logaddexp2Of(a[0], a[1]); }, "aotc_logaddexp2({0}, {1})",
   [](GradCtx& g) -> R {
     ValueId one = g.scalarLike(1.0, g.O(0));
     ValueId ga = g.div(g.GO(0), g.add(one, g.op(OpKind::Exp2, {g.sub(g.I(1), g.I(0))})));
     ValueId gb = g.div(g.GO(0), g.add(one, g.op(OpKind::Exp2, {g.sub(g.I(0), g.I(1))})));
     return toOperands(g, ga, gb);
   }, {"aten.logaddexp2.default"}, {-2, 2, false, Rhs::Full}},
  // binary_cross_entropy(x, t) per element; weight and reduction are the FX
  // converter's.  d/dx = g (x - t) / max((1 - x) x, 1e-12) (ATen's
  // binary_cross_entropy_backward), d/dt = -g logit(x).
  {K::BinaryCrossEntropy, promoted, [](const double* a) { return bceOf(a[0], a[1]); }, "aotc_bce({0}, {1})",
   [](GradCtx& g) -> R {
     ValueId num = g.mul(g.GO(0), g.sub(g.I(0), g.I(1)));
     ValueId den = g.op(OpKind::Maximum, {g.mul(g.sub(g.scalarLike(1.0, g.I(0)), g.I(0)), g.I(0)), g.scalarLike(1e-12, g.I(0))});
     ValueId ga = g.div(num, den);
     return toOperands(g, ga, g.neg(g.mul(g.GO(0), g.op(OpKind::Logit, {g.I(0)}))));
   }, {}, {0.1, 0.9, false, Rhs::Full}},

  // Rounding keeps integer dtypes (integers are already whole); round is half
  // to even.  Piecewise constant: zero gradient.
  {K::Floor, same, [](const double* a) { return std::floor(a[0]); }, "aotc_floor({0})", zeroGrad, {"aten.floor.default"}, {}},
  {K::Ceil, same, [](const double* a) { return std::ceil(a[0]); }, "aotc_ceil({0})", zeroGrad, {"aten.ceil.default"}, {}},
  {K::Round, same, [](const double* a) { return std::nearbyint(a[0]); }, "aotc_round({0})", zeroGrad, {"aten.round.default"}, {}},
  {K::Trunc, same, [](const double* a) { return std::trunc(a[0]); }, "aotc_trunc({0})", zeroGrad,
   {"aten.trunc.default", "aten.fix.default"}, {}},

  // Comparisons and logic: bool results, no gradient.
  {K::Gt, boolean, [](const double* a) { return a[0] > a[1] ? 1.0 : 0.0; }, "({0} > {1})", kNoGrad, {"aten.gt.Tensor", "aten.gt.Scalar"}, {}},
  {K::Lt, boolean, [](const double* a) { return a[0] < a[1] ? 1.0 : 0.0; }, "({0} < {1})", kNoGrad, {"aten.lt.Tensor", "aten.lt.Scalar"}, {}},
  {K::Le, boolean, [](const double* a) { return a[0] <= a[1] ? 1.0 : 0.0; }, "({0} <= {1})", kNoGrad, {"aten.le.Tensor", "aten.le.Scalar"}, {}},
  {K::Ge, boolean, [](const double* a) { return a[0] >= a[1] ? 1.0 : 0.0; }, "({0} >= {1})", kNoGrad, {"aten.ge.Tensor", "aten.ge.Scalar"}, {}},
  {K::Eq, boolean, [](const double* a) { return a[0] == a[1] ? 1.0 : 0.0; }, "({0} == {1})", kNoGrad, {"aten.eq.Tensor", "aten.eq.Scalar"}, {}},
  {K::Ne, boolean, [](const double* a) { return a[0] != a[1] ? 1.0 : 0.0; }, "({0} != {1})", kNoGrad, {"aten.ne.Tensor", "aten.ne.Scalar"}, {}},
  {K::IsNan, boolean, [](const double* a) { return std::isnan(a[0]) ? 1.0 : 0.0; }, "aotc_isnan({0})", kNoGrad, {"aten.isnan.default"}, {}},
  {K::IsInf, boolean, [](const double* a) { return std::isinf(a[0]) ? 1.0 : 0.0; }, "aotc_isinf({0})", kNoGrad, {"aten.isinf.default"}, {}},
  {K::LogicalAnd, boolean, [](const double* a) { return a[0] != 0 && a[1] != 0 ? 1.0 : 0.0; }, "({0} != 0 && {1} != 0)", kNoGrad,
   {"aten.logical_and.default"}, {}},
  {K::LogicalOr, boolean, [](const double* a) { return a[0] != 0 || a[1] != 0 ? 1.0 : 0.0; }, "({0} != 0 || {1} != 0)", kNoGrad,
   {"aten.logical_or.default"}, {}},
  {K::LogicalNot, boolean, [](const double* a) { return a[0] == 0 ? 1.0 : 0.0; }, "({0} == 0)", kNoGrad, {"aten.logical_not.default"}, {}},
  // Bitwise: integer and bool operands (bitwise_not of bool is spelled
  // logical_not by the front end).
  {K::BitwiseAnd, integral, [](const double* a) { return static_cast<double>(asInt(a[0]) & asInt(a[1])); }, "({0} & {1})", kNoGrad,
   {"aten.bitwise_and.Tensor", "aten.bitwise_and.Scalar"}, {}},
  {K::BitwiseOr, integral, [](const double* a) { return static_cast<double>(asInt(a[0]) | asInt(a[1])); }, "({0} | {1})", kNoGrad,
   {"aten.bitwise_or.Tensor", "aten.bitwise_or.Scalar"}, {}},
  {K::BitwiseXor, integral, [](const double* a) { return static_cast<double>(asInt(a[0]) ^ asInt(a[1])); }, "({0} ^ {1})", kNoGrad,
   {"aten.bitwise_xor.Tensor", "aten.bitwise_xor.Scalar"}, {}},
  {K::BitwiseNot, integral, [](const double* a) { return static_cast<double>(~asInt(a[0])); }, "(~{0})", kNoGrad, {}, {}},

  // Selection, copies and casts.
  {K::Where, whereTypes, [](const double* a) { return a[0] != 0 ? a[1] : a[2]; }, "({0} ? {1} : {2})",
   [](GradCtx& g) -> R {
     ValueId zero = g.scalarLike(0.0, g.GO(0));
     return {kNoValue, g.sumTo(g.op(OpKind::Where, {g.I(0), g.GO(0), zero}), g.sizes(g.I(1))),
             g.sumTo(g.op(OpKind::Where, {g.I(0), zero, g.GO(0)}), g.sizes(g.I(2)))};
   }, {}, {}},
  {K::Clone, same, [](const double* a) { return a[0]; }, "{0}",
   [](GradCtx& g) -> R { return {g.GO(0)}; }, {"aten.clone.default", "aten.lift_fresh_copy.default"}, {}},
  // The value conversion itself is the kernel's store cast (Note [Integer wrap]).
  {K::Cast, castTypes, [](const double* a) { return a[0]; }, "{0}",
   [](GradCtx& g) -> R {
     DType d = g.type(g.I(0)).dtype;
     if (!isFloating(d)) return {kNoValue};
     return {g.op(OpKind::Cast, {g.GO(0)}, Attrs{{"dtype", std::string(dtypeName(d))}})};
   }, {}, {}},
};
// clang-format on

}  // namespace

std::span<const PointwiseRule> pointwiseRules() { return kRows; }

const PointwiseRule* pointwiseRule(OpKind k) {
  static const detail::RowIndex<PointwiseRule> index(kRows, OpCategory::Pointwise, "pointwise.cpp");
  return index.find(k);
}

std::string pointwiseCuda(const PointwiseRule& r, const std::vector<std::string>& operands) {
  std::string out;
  for (const char* p = r.cuda; *p; ++p) {
    if (p[0] == '{' && p[1] >= '0' && p[1] <= '9' && p[2] == '}') {
      out += operands.at(static_cast<size_t>(p[1] - '0'));
      p += 2;
    } else {
      out += *p;
    }
  }
  return out;
}

}  // namespace aotc
