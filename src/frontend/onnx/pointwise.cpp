//===- onnx/pointwise.cpp - Elementwise ONNX ops ----------------------------===//
//
// Arithmetic (integer Div and Mod with their zero checks), Cast, Clip, the
// activations with attributes, Where.  An op that is one IR op is an entry
// with unary or binary.
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

namespace {

/// Integer division and modulo must not meet a zero divisor in a kernel: the
/// divisor is made 1 there and the result 0 (what numpy, ONNX's reference,
/// gives).
ValueId safeIntBinary(Node& c, OpKind k, ValueId a, ValueId b) {
  ValueId zero = c.scalarLike(0, b);
  ValueId isZero = bin(c, OpKind::Eq, {b, zero});
  ValueId one = c.scalarLike(1, b);
  ValueId safe = c.op(OpKind::Where, {isZero, one, b});
  ValueId r = c.op(k, {a, safe});
  return c.op(OpKind::Where, {isZero, c.scalarLike(0, r), r});
}

Outs divOp(Node& c) {
  ValueId a = c.in(0), b = c.in(1);
  DType d = c.type(a).dtype;
  if (isFloating(d)) return {c.op(OpKind::Div, {a, b})};
  // ONNX integer division truncates toward zero (C, numpy's trunc for the reference).
  // The casts in a fixed order: as function arguments GCC and clang would
  // evaluate them in opposite orders and write different (equivalent) IR.
  ValueId fb = c.cast(b, DType::F64);
  ValueId fa = c.cast(a, DType::F64);
  ValueId q = safeIntBinary(c, OpKind::Div, fa, fb);
  return {c.cast(c.op(OpKind::Trunc, {q}), d)};
}

Outs modOp(Node& c) {
  ValueId a = c.in(0), b = c.in(1);
  bool fmod = c.i("fmod", 0) != 0;
  if (isFloating(c.type(a).dtype)) {
    // Mod 28 defines fmod=0 for floats: A - floor(A / B) * B, the sign of B
    // (numpy's mod, Python's %), a zero included: mod, not torch.remainder
    // (Note [Signed zero of mod]).
    if (!fmod && c.opset() < 28) c.fail("Mod of floating-point inputs requires fmod=1 before opset 28");
    return {c.op(fmod ? OpKind::Fmod : OpKind::Mod, {a, b})};
  }
  return {safeIntBinary(c, fmod ? OpKind::Fmod : OpKind::Remainder, a, b)};
}

Outs powOp(Node& c) {
  ValueId a = c.in(0);
  ValueId b = c.cast(c.in(1), c.type(a).dtype);
  return {c.op(OpKind::Pow, {a, b})};
}

/// BitShift.  Unsigned types: x * 2^y or x / 2^y, and 0 where y reaches the
/// type's width (numpy's and C's rule for unsigned operands; 2^y itself
/// would wrap there).  Signed types (28): an arithmetic right shift,
/// floor(x / 2^y); a left shift keeping the low bits in two's complement;
/// a shift by a negative amount or by >= the width gives the sign fill (-1
/// for a right shift of a negative x, else 0).  8- to 32-bit ones are
/// computed in int64, where nothing wraps; int64's right shift divides in
/// int64 and its left shift (which wraps int64 itself) is refused.
Outs bitShiftOp(Node& c) {
  ValueId x = c.in(0), y = c.in(1);
  DType d = c.type(x).dtype;
  if (isFloating(d) || d == DType::Bool || c.type(y).dtype != d)
    c.fail(cat("BitShift takes two tensors of one integer type, got ", dtypeName(d), " and ", dtypeName(c.type(y).dtype)));
  std::string dir = c.s("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") c.fail(cat("BitShift: direction must be LEFT or RIGHT, got '", dir, "'"));
  int64_t width = dtypeSize(d) * 8;
  if (isUnsigned(d)) {
    ValueId big = bin(c, OpKind::Ge, {y, c.scalarLike(static_cast<double>(width), y)});
    ValueId zero = c.scalarLike(0, y);
    ValueId p = c.op(OpKind::Pow, {c.scalarLike(2, y), c.op(OpKind::Where, {big, zero, y})});
    ValueId r = dir == "LEFT" ? c.op(OpKind::Mul, {x, p})
                              : c.cast(c.op(OpKind::Trunc, {c.op(OpKind::Div, {c.cast(x, DType::F64), c.cast(p, DType::F64)})}), d);
    return {c.op(OpKind::Where, {big, c.scalarLike(0, r), r})};
  }
  if (width == 64 && dir == "LEFT") c.fail("BitShift: a left shift of int64 wraps int64 itself, which aotc's integer arithmetic does not define");
  ValueId x64 = c.cast(x, DType::I64), y64 = c.cast(y, DType::I64);
  // int64's right shift by 63 would need 2^63: it is the sign fill, as a shift out of range.
  int64_t limit = width == 64 ? 63 : width;
  ValueId bad = c.op(OpKind::LogicalOr, {bin(c, OpKind::Lt, {y64, c.scalar(0, DType::I64)}), bin(c, OpKind::Ge, {y64, c.scalar(static_cast<double>(limit), DType::I64)})});
  ValueId p = c.op(OpKind::Pow, {c.scalar(2, DType::I64), c.op(OpKind::Where, {bad, c.scalar(0, DType::I64), y64})});
  ValueId fill = dir == "LEFT" ? c.scalar(0, DType::I64)
                               : c.op(OpKind::Where, {bin(c, OpKind::Lt, {x64, c.scalar(0, DType::I64)}), c.scalar(-1, DType::I64), c.scalar(0, DType::I64)});
  ValueId r;
  if (dir == "RIGHT") {
    r = c.op(OpKind::DivFloor, {x64, p});
  } else {
    // The low `width` bits of x * 2^y (< 2^62), read as a signed number.
    double m = std::ldexp(1.0, static_cast<int>(width));
    ValueId u = c.op(OpKind::Remainder, {c.mul(x64, p), c.scalar(m, DType::I64)});
    ValueId neg = bin(c, OpKind::Ge, {u, c.scalar(m / 2, DType::I64)});
    r = c.op(OpKind::Where, {neg, c.sub(u, c.scalar(m, DType::I64)), u});
  }
  return {c.cast(c.op(OpKind::Where, {bad, fill, r}), d)};
}

/// Sum / Mean / Max / Min over any number of broadcasting inputs.
Outs variadic(Node& c, OpKind k, bool mean) {
  ValueId r = c.in(0);
  for (size_t i = 1; i < c.numInputs(); ++i) {
    ValueId x = c.in(i);
    r = c.op(k, {r, x});
  }
  if (mean) r = c.div(r, c.scalarLike(static_cast<double>(c.numInputs()), r));
  return {r};
}

Outs castOp(Node& c) {
  auto d = dtypeOfOnnx(static_cast<int>(c.i("to")));
  if (!d) c.fail(cat("Cast to ", onnxTypeName(static_cast<int>(c.i("to"))), " is not supported"));
  return {c.cast(c.in(0), *d)};
}

/// BitCast (26): the input's bits read as another element type of the same
/// width.  aotc's IR has no bit reinterpretation op, so only what its value
/// arithmetic gives exactly is compiled: between integer types (and from
/// bool) of at most 32 bits, where reinterpreting is adding or taking 2^bits
/// (two's complement), computed in int64 where every such value is exact.
/// Floating-point types are refused by name (no arithmetic gives a NaN's
/// payload), so are the 64-bit integers (the reference interpreter holds
/// values as doubles, inexact past 2^53) and bool as the target (a byte
/// other than 0 or 1 is no bool aotc can hold).
Outs bitCastOp(Node& c) {
  ValueId x = c.in(0);
  const DType from = c.dtypeIn(0);
  const int to = static_cast<int>(c.i("to"));
  auto d = dtypeOfOnnx(to);
  if (!d) c.fail(cat("BitCast to ", onnxTypeName(to), " is not supported"));
  if (dtypeSize(from) != dtypeSize(*d))
    c.fail(cat("BitCast: ", dtypeName(from), " (", 8 * dtypeSize(from), " bits) and ", dtypeName(*d), " (", 8 * dtypeSize(*d), " bits) differ in width"));
  if (from == *d) return {x};
  if (isFloating(from) || isFloating(*d))
    c.fail(cat("BitCast from ", dtypeName(from), " to ", dtypeName(*d), " is not supported: reinterpreting floating-point bits needs a bit "
               "reinterpretation op, which aotc's IR does not have (no arithmetic gives a NaN's payload)"));
  if (*d == DType::Bool) c.fail(cat("BitCast from ", dtypeName(from), " to bool is not supported: a byte other than 0 or 1 is no bool aotc can hold"));
  if (dtypeSize(from) > 4)
    c.fail(cat("BitCast from ", dtypeName(from), " to ", dtypeName(*d), " is not supported: aotc's reference interpreter holds 64-bit integers "
               "as doubles, inexact past 2^53"));
  const double span = std::ldexp(1.0, static_cast<int>(8 * dtypeSize(from)));
  ValueId v = c.cast(x, DType::I64);
  ValueId zero = c.scalar(0.0, DType::I64);
  if (!isUnsigned(from) && from != DType::Bool) {
    ValueId neg = c.op(OpKind::Lt, {v, zero});
    ValueId wrapped = c.add(v, c.scalar(span, DType::I64));
    v = c.op(OpKind::Where, {neg, wrapped, v});  // the unsigned value of the bits
  }
  if (!isUnsigned(*d)) {
    ValueId high = c.op(OpKind::Ge, {v, c.scalar(span / 2, DType::I64)});
    ValueId wrapped = c.sub(v, c.scalar(span, DType::I64));
    v = c.op(OpKind::Where, {high, wrapped, v});  // two's complement
  }
  return {c.cast(v, *d)};
}

/// Note [ONNX Clip's gradient]: ONNX defines Clip's value, not its
/// gradient, and at a bound either one-sided derivative is a subgradient.
/// aotc gives 0 there (a value at or beyond a bound takes the bound, whose
/// gradient goes to the min/max input): the rule of PyTorch's
/// hardtanh_backward (ReLU6 and Hardtanh, which both exporters write as
/// Clip) and of Relu at 0.  torch.clamp's backward passes the gradient at
/// the bounds instead; an exported clamp meets a value exactly at a bound
/// rarely, ReLU6 after a batch norm of an all-zero window always (a fresh
/// mobilenet_v2's late 1x1 feature maps: the dynamo export's gradients
/// differed from eager by up to 129% before this rule).  Values are the
/// same either way.
Outs clipOp(Node& c) {
  ValueId y = c.in(0);
  auto clipTo = [&](ValueId bound, OpKind beyond) { return c.op(OpKind::Where, {bin(c, beyond, {y, bound}), bound, y}); };
  if (c.opset() < 11) {
    if (c.hasAttr("min")) y = clipTo(sc(c, c.f("min", 0), y), OpKind::Le);
    if (c.hasAttr("max")) y = clipTo(sc(c, c.f("max", 0), y), OpKind::Ge);
    return {y};
  }
  if (c.has(1)) y = clipTo(c.in(1), OpKind::Le);
  if (c.has(2)) y = clipTo(c.in(2), OpKind::Ge);
  return {y};
}

Outs eluOp(Node& c) { return {elu(c, c.in(0), c.f("alpha", 1.0), 1.0, 1.0)}; }

Outs seluOp(Node& c) {
  return {elu(c, c.in(0), c.f("alpha", 1.67326319217681884765625), c.f("gamma", 1.05070102214813232421875), 1.0)};
}

// Not relu(x) + min(0, alpha * expm1(x / alpha)): at 0 its pieces' gradients
// (0, and half of a tie) give 1/2 where celu's derivative is 1.
Outs celuOp(Node& c) { return {celu(c, c.in(0), c.f("alpha", 1.0))}; }

Outs hardSigmoidOp(Node& c) {
  ValueId x = c.in(0);
  ValueId ax = c.scaled(x, c.f("alpha", 0.2));
  ValueId lin = c.add(ax, sc(c, c.f("beta", 0.5), x));
  return {clampOp(c, lin, 0.0, 1.0)};
}

Outs hardSwishOp(Node& c) {
  ValueId x = c.in(0);
  ValueId ax = c.scaled(x, 1.0 / 6.0);
  ValueId lin = c.add(ax, sc(c, 0.5, x));
  return {c.mul(x, clampOp(c, lin, 0.0, 1.0))};
}

Outs softplusOp(Node& c) {
  // log(exp(x) + 1) as ATen's softplus: log1p(exp(x)), and x past 20 (where
  // the two differ by less than exp(-20)).  Not max(x, 0) + log1p(exp(-|x|)):
  // its pieces' subgradients at 0 give the gradient 0 there, not 1/2 (found
  // by scripts/onnx_gradcheck on test_softplus_example).
  return {softplus(c, c.in(0), 1.0, 20.0)};
}

/// Mish (18): x * tanh(softplus(x)).
Outs mishOp(Node& c) {
  ValueId x = c.in(0);
  return {c.mul(x, c.op(OpKind::Tanh, {softplus(c, x, 1.0, 20.0)}))};
}

/// Gelu (20): approximate "none" (erf) or "tanh".
Outs geluOp(Node& c) {
  std::string a = c.s("approximate", "none");
  if (a != "none" && a != "tanh") c.fail("Gelu: approximate '" + a + "' is not supported");
  return {gelu(c, c.in(0), a)};
}

/// Swish (24): x * sigmoid(alpha * x).
Outs swishOp(Node& c) {
  ValueId x = c.in(0);
  double alpha = c.f("alpha", 1.0);
  return {c.mul(x, c.op(OpKind::Sigmoid, {alpha == 1.0 ? x : c.mul(x, sc(c, alpha, x))}))};
}

/// SwiGLU (28): Swish_alpha(A) * B, A and B of one shape (no broadcasting).
Outs swigluOp(Node& c) {
  ValueId a = c.in(0), b = c.in(1);
  if (c.type(a).sizes != c.type(b).sizes) c.fail("SwiGLU: A and B must have the same shape (ONNX broadcasts neither)");
  double alpha = c.f("alpha", 1.0);
  ValueId z = alpha == 1.0 ? a : c.mul(a, sc(c, alpha, a));
  ValueId gate = c.mul(a, c.op(OpKind::Sigmoid, {z}));
  return {c.mul(gate, b)};
}

Outs softsignOp(Node& c) {
  ValueId x = c.in(0);
  ValueId ax = c.op(OpKind::Abs, {x});
  return {c.div(x, c.add(ax, sc(c, 1.0, x)))};
}

Outs thresholdedReluOp(Node& c) {
  ValueId x = c.in(0);
  ValueId keep = bin(c, OpKind::Gt, {x, sc(c, c.f("alpha", 1.0), x)});
  return {c.op(OpKind::Where, {keep, x, sc(c, 0.0, x)})};
}

Outs shrinkOp(Node& c) {
  ValueId x = c.in(0);
  double l = c.f("lambd", 0.5), b = c.f("bias", 0.0);
  ValueId lo = bin(c, OpKind::Lt, {x, sc(c, -l, x)});
  ValueId hi = bin(c, OpKind::Gt, {x, sc(c, l, x)});
  ValueId plus = c.add(x, sc(c, b, x));
  ValueId minus = c.sub(x, sc(c, b, x));
  ValueId mid = c.op(OpKind::Where, {hi, minus, sc(c, 0.0, x)});
  return {c.op(OpKind::Where, {lo, plus, mid})};
}

Outs preluOp(Node& c) {
  ValueId x = c.in(0), slope = c.in(1);
  const Ints xs = c.type(x).sizes;
  if (c.type(slope).rank() == 1 && xs.size() >= 2 && c.type(slope).sizes[0] == xs[1] && xs.back() != xs[1]) {
    // Before opset 7 (and as exporters still write it) a [C] slope is per
    // channel: shaped [C, 1, ...] to broadcast over dim 1.
    Ints shape(xs.size() - 1, 1);
    shape[0] = xs[1];
    slope = c.reshape(slope, shape);
  }
  ValueId neg = c.mul(x, slope);
  if (c.type(neg).sizes != c.type(x).sizes) c.fail("PRelu: the slope does not broadcast to the input's shape");
  return {c.op(OpKind::Where, {bin(c, OpKind::Lt, {x, sc(c, 0.0, x)}), neg, x})};
}

Outs leakyReluOp(Node& c) { return {leakyRelu(c, c.in(0), c.f("alpha", 0.01))}; }

Outs isInfOp(Node& c) {
  ValueId x = c.in(0);
  bool neg = c.i("detect_negative", 1) != 0, pos = c.i("detect_positive", 1) != 0;
  ValueId inf = c.op(OpKind::IsInf, {x});
  if (neg && pos) return {inf};
  ValueId sign = bin(c, pos ? OpKind::Gt : OpKind::Lt, {x, sc(c, 0.0, x)});
  if (!neg && !pos) return {bin(c, OpKind::LogicalAnd, {inf, c.op(OpKind::LogicalNot, {inf})})};
  return {bin(c, OpKind::LogicalAnd, {inf, sign})};
}

Outs xorOp(Node& c) { return binary(c, OpKind::Ne); }

Outs whereOp(Node& c) {
  ValueId cond = c.in(0), a = c.in(1), b = c.in(2);
  return {c.op(OpKind::Where, {cond, a, b})};
}

}  // namespace

Entries pointwiseConverters() {
  return {
    {"Abs", [](Node& c) { return unary(c, OpKind::Abs); }},
    {"Acos", [](Node& c) { return unary(c, OpKind::Acos); }},
    {"Acosh", [](Node& c) { return unary(c, OpKind::Acosh); }},
    {"Add", [](Node& c) { return binary(c, OpKind::Add); }},
    {"And", [](Node& c) { return binary(c, OpKind::LogicalAnd); }},
    {"Asin", [](Node& c) { return unary(c, OpKind::Asin); }},
    {"Asinh", [](Node& c) { return unary(c, OpKind::Asinh); }},
    {"Atan", [](Node& c) { return unary(c, OpKind::Atan); }},
    {"Atanh", [](Node& c) { return unary(c, OpKind::Atanh); }},
    {"BitCast", bitCastOp},
    {"Cast", castOp},
    {"CastLike", [](Node& c) -> Outs { return {c.cast(c.in(0), c.dtypeIn(1))}; }},
    {"Ceil", [](Node& c) { return unary(c, OpKind::Ceil); }},
    {"Celu", celuOp},
    {"Clip", clipOp},
    {"Cos", [](Node& c) { return unary(c, OpKind::Cos); }},
    {"Cosh", [](Node& c) { return unary(c, OpKind::Cosh); }},
    {"Div", divOp},
    {"Elu", eluOp},
    {"Equal", [](Node& c) { return binary(c, OpKind::Eq); }},
    {"Erf", [](Node& c) { return unary(c, OpKind::Erf); }},
    {"Exp", [](Node& c) { return unary(c, OpKind::Exp); }},
    {"Floor", [](Node& c) { return unary(c, OpKind::Floor); }},
    {"Greater", [](Node& c) { return binary(c, OpKind::Gt); }},
    {"GreaterOrEqual", [](Node& c) { return binary(c, OpKind::Ge); }},
    {"HardSigmoid", hardSigmoidOp},
    {"HardSwish", hardSwishOp},
    {"IsInf", isInfOp},
    {"IsNaN", [](Node& c) { return unary(c, OpKind::IsNan); }},
    {"LeakyRelu", leakyReluOp},
    {"Less", [](Node& c) { return binary(c, OpKind::Lt); }},
    {"LessOrEqual", [](Node& c) { return binary(c, OpKind::Le); }},
    {"Log", [](Node& c) { return unary(c, OpKind::Log); }},
    {"Max", [](Node& c) { return variadic(c, OpKind::Maximum, false); }},
    {"Mean", [](Node& c) { return variadic(c, OpKind::Add, true); }},
    {"Min", [](Node& c) { return variadic(c, OpKind::Minimum, false); }},
    {"Mod", modOp},
    {"Mul", [](Node& c) { return binary(c, OpKind::Mul); }},
    {"Neg", [](Node& c) { return unary(c, OpKind::Neg); }},
    {"Not", [](Node& c) { return unary(c, OpKind::LogicalNot); }},
    {"Or", [](Node& c) { return binary(c, OpKind::LogicalOr); }},
    {"Pow", powOp},
    {"PRelu", preluOp},
    {"Reciprocal", [](Node& c) { return unary(c, OpKind::Reciprocal); }},
    {"Relu", [](Node& c) { return unary(c, OpKind::Relu); }},
    {"Round", [](Node& c) { return unary(c, OpKind::Round); }},
    {"Selu", seluOp},
    {"Shrink", shrinkOp},
    {"Sigmoid", [](Node& c) { return unary(c, OpKind::Sigmoid); }},
    {"Sign", [](Node& c) { return unary(c, OpKind::Sign); }},
    {"Sin", [](Node& c) { return unary(c, OpKind::Sin); }},
    {"Sinh", [](Node& c) { return unary(c, OpKind::Sinh); }},
    {"Softplus", softplusOp},
    {"Softsign", softsignOp},
    {"Sqrt", [](Node& c) { return unary(c, OpKind::Sqrt); }},
    {"Sub", [](Node& c) { return binary(c, OpKind::Sub); }},
    {"Sum", [](Node& c) { return variadic(c, OpKind::Add, false); }},
    {"Tan", [](Node& c) { return unary(c, OpKind::Tan); }},
    {"Tanh", [](Node& c) { return unary(c, OpKind::Tanh); }},
    {"ThresholdedRelu", thresholdedReluOp},
    {"Where", whereOp},
    {"Xor", xorOp},
    {"BitShift", bitShiftOp},
    {"BitwiseAnd", [](Node& c) { return binary(c, OpKind::BitwiseAnd); }},
    {"BitwiseNot", [](Node& c) { return unary(c, OpKind::BitwiseNot); }},
    {"BitwiseOr", [](Node& c) { return binary(c, OpKind::BitwiseOr); }},
    {"BitwiseXor", [](Node& c) { return binary(c, OpKind::BitwiseXor); }},
    {"Gelu", geluOp},
    {"Mish", mishOp},
    {"Swish", swishOp},
    {"SwiGLU", swigluOp},
  };
}

}  // namespace aotc::onnx_fe
