//===- fx/pointwise.cpp - Elementwise ATen spellings ------------------------===//
//
// Arithmetic with alpha scaling, in-place forms, clamps, activations with
// parameters, integer division and modulo with their zero checks.  The plain
// unary and binary spellings are not here: the pointwise op rows carry their
// ATen names (Note [Pointwise rows]) and table.cpp adds them.
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

namespace {

V addLike(Converter& c, OpKind k, double sign) {
  if (k == OpKind::Add || k == OpKind::Sub) {
    // A Python number as `self` (Core ATen's sub.Tensor(1.0, t), Note in
    // binary(), readers.cpp): a wrapped number of `other`'s dtype.
    if (!c.isTensor(0, "self") && c.isTensor(1, "other")) {
      ValueId b = c.tensor(1, "other");
      ValueId a = c.operand(0, "self", b);
      ValueId bs = c.scaled(b, sign * c.number(2, "alpha", 1.0));
      return {c.op(k, {a, bs})};
    }
  }
  ValueId a = c.tensor(0, "self");
  ValueId b = c.scaled(c.operand(1, "other", a), sign * c.number(2, "alpha", 1.0));
  return {c.op(k, {a, b})};
}

// Core ATen breadth (issue 12).
// Each converter below builds its op from IR ops whose rules (shape,
// reference, CUDA, gradient) exist; a decomposition is used only where it is
// exact (issue 12: numerics within eager's tolerances, same NaN/inf/tie
// behaviour).

/// An integer fmod/remainder/floor-division needs a divisor the compiler can
/// see is non-zero: a kernel cannot raise ZeroDivisionError as eager does.
void requireSafeIntDivisor(Converter& c, ValueId a, size_t i, const char* kw, const char* op) {
  if (isFloating(c.type(a).dtype)) return;
  if (c.isTensor(i, kw) || c.number(i, kw) == 0)
    c.fail(cat("integer ", op, " needs a non-zero Python number as the divisor (a kernel cannot raise ZeroDivisionError)"));
}

V binaryChecked(Converter& c, OpKind k, const char* what) {
  ValueId a = c.tensor(0, "self");
  ValueId b = c.operand(1, "other", a);
  if (!isFloating(c.type(a).dtype) || !isFloating(c.type(b).dtype)) {
    if (isFloating(promoteTypes(c.type(a).dtype, c.type(b).dtype))) return {c.op(k, {a, b})};
    requireSafeIntDivisor(c, a, 1, "other", what);
  }
  return {c.op(k, {a, b})};
}

/// pow(Scalar self, Tensor exponent).
V powScalarBase(Converter& c) {
  ValueId e = c.tensor(1, "exponent");
  const json* s = c.arg(0, "self");
  DType d = c.type(e).dtype;
  if (s && s->is_number_float() && !isFloating(d)) d = DType::F32;
  ValueId base = c.scalar(c.number(0, "self"), d);
  return {c.op(OpKind::Pow, {base, e})};
}

/// div(a, b, rounding_mode): None is true division; "trunc" is trunc(a / b)
/// (ATen's formula for floating types); "floor" is div_floor.
V divMode(Converter& c) {
  ValueId a = c.tensor(0, "self");
  ValueId b = c.operand(1, "other", a);
  const json* m = c.arg(2, "rounding_mode");
  std::string mode = m && m->is_string() ? m->get<std::string>() : "";
  if (mode.empty()) return {c.op(OpKind::Div, {a, b})};
  if (mode != "trunc" && mode != "floor") c.fail("div: rounding_mode must be 'trunc' or 'floor', got " + m->dump());
  DType d = promoteTypes(c.type(a).dtype, c.type(b).dtype);
  if (!isFloating(d)) {
    requireSafeIntDivisor(c, a, 1, "other", "division with rounding_mode");
    if (mode == "floor") return {c.op(OpKind::DivFloor, {a, b})};
    // Integer truncating division: C++'s, through the remainder.  a - r is a
    // multiple of b, so its floor division is exact (a true division would
    // go through float32 and lose integers past 2^24).
    ValueId r = c.op(OpKind::Fmod, {a, b});
    ValueId q = c.op(OpKind::DivFloor, {bin(c, OpKind::Sub, {a, r}), b});
    if (c.type(q).dtype == d) return {q};
    return {c.op(OpKind::Cast, {q}, Attrs{{"dtype", std::string(dtypeName(d))}})};
  }
  if (mode == "floor") return {c.op(OpKind::DivFloor, {a, b})};
  return {c.op(OpKind::Trunc, {c.op(OpKind::Div, {a, b})})};
}

/// y clamped to a tensor bound (`beyond` Lt for a min, Gt for a max): the
/// bound where y is beyond it or the bound is NaN.  ATen's clamp with tensor
/// bounds propagates a NaN of any operand (torch.clamp(1., min=nan) is nan,
/// in 1.13 and 2.x); y's own NaN stays.  For floats the test is "y not
/// within the bound, and y a number" (a NaN bound fails every comparison),
/// which reads the bound only through the broadcast comparison: an isnan of
/// a smaller bound would be a kernel of its own.
ValueId clampTo(Converter& c, ValueId y, ValueId bound, OpKind beyond) {
  ValueId out;
  if (isFloating(promoteTypes(c.type(y).dtype, c.type(bound).dtype))) {
    ValueId within = bin(c, beyond == OpKind::Lt ? OpKind::Ge : OpKind::Le, {y, bound});
    ValueId number = c.op(OpKind::LogicalNot, {c.op(OpKind::IsNan, {y})});
    out = c.op(OpKind::LogicalAnd, {c.op(OpKind::LogicalNot, {within}), number});
  } else {
    out = bin(c, beyond, {y, bound});
  }
  return c.op(OpKind::Where, {out, bound, y});
}

/// clamp(self, min: Tensor?, max: Tensor?): max(min(...)) as ATen, NaN kept.
V clampTensor(Converter& c) {
  ValueId y = c.tensor(0, "self");
  if (c.has(1, "min")) {
    ValueId lo = c.operand(1, "min", y);
    y = clampTo(c, y, lo, OpKind::Lt);
  }
  if (c.has(2, "max")) {
    ValueId hi = c.operand(2, "max", y);
    y = clampTo(c, y, hi, OpKind::Gt);
  }
  return {y};
}

ValueId maskedFill(Converter& c) {
  ValueId x = c.tensor(0, "self"), mask = c.tensor(1, "mask");
  if (c.type(mask).dtype != DType::Bool) c.fail("masked_fill: the mask must be a bool tensor");
  ValueId v = c.operand(2, "value", x);
  if (c.type(v).rank() != 0) c.fail("masked_fill: the value must be a 0-dim tensor or a number");
  if (c.type(v).dtype != c.type(x).dtype) v = c.op(OpKind::Cast, {v}, Attrs{{"dtype", std::string(dtypeName(c.type(x).dtype))}});
  // Out of place, self and mask broadcast together (x of [1, 1] with a
  // [B, 7] mask is [B, 7], as eager gives); masked_fill_ reaches here as
  // masked_fill and a copy_ into self, which refuses the larger result as
  // eager does.
  return c.op(OpKind::Where, {mask, v, x});
}

/// addcmul / addcdiv(self, tensor1, tensor2, value): self + value * t1 * t2
/// (or / t2), in ATen's order; integer division is refused, as eager does.
V addcOp(Converter& c, OpKind k) {
  ValueId x = c.tensor(0, "self"), t1 = c.tensor(1, "tensor1"), t2 = c.tensor(2, "tensor2");
  if (k == OpKind::Div && !isFloating(c.type(t1).dtype) && !isFloating(c.type(t2).dtype))
    c.fail("addcdiv: integer division is not supported (eager refuses it too)");
  double v = c.number(3, "value", 1.0);
  ValueId vt1 = v == 1.0 ? t1 : bin(c, OpKind::Mul, {c.operand(3, "value", t1), t1});
  return {bin(c, OpKind::Add, {x, bin(c, k, {vt1, t2})})};
}

/// polygamma(n, x): digamma and trigamma (n = 0, 1); higher orders refused.
V polygamma(Converter& c) {
  int64_t n = c.integer(0, "n");
  ValueId x = c.tensor(1, "self");
  if (n == 0) return {c.op(OpKind::Digamma, {x})};
  if (n == 1) return {c.op(OpKind::Trigamma, {x})};
  c.fail(cat("polygamma of order ", n, " is not supported (orders 0 and 1 are)"));
}

}  // namespace

Entries pointwiseConverters() {
  return {
    {"aten.add.Tensor", [](Converter& c) { return addLike(c, OpKind::Add, 1); }},
    {"aten.add.Scalar", [](Converter& c) { return addLike(c, OpKind::Add, 1); }},
    {"aten.add_.Tensor", [](Converter& c) { return addLike(c, OpKind::AddInplace, 1); }},
    {"aten.add_.Scalar", [](Converter& c) { return addLike(c, OpKind::AddInplace, 1); }},
    {"aten.sub.Tensor", [](Converter& c) { return addLike(c, OpKind::Sub, 1); }},
    {"aten.sub.Scalar", [](Converter& c) { return addLike(c, OpKind::Sub, 1); }},
    {"aten.sub_.Tensor", [](Converter& c) { return addLike(c, OpKind::AddInplace, -1); }},
    {"aten.sub_.Scalar", [](Converter& c) { return addLike(c, OpKind::AddInplace, -1); }},
    {"aten.rsub.Scalar",
     [](Converter& c) -> V {
       ValueId a = c.tensor(0, "self");
       return {c.op(OpKind::Sub, {c.operand(1, "other", a), c.scaled(a, c.number(2, "alpha", 1.0))})};
     }},
    {"aten.mul_.Tensor", [](Converter& c) { return binary(c, OpKind::MulInplace); }},
    {"aten.mul_.Scalar", [](Converter& c) { return binary(c, OpKind::MulInplace); }},
    {"aten.where.self",
     [](Converter& c) -> V {
       return {c.op(OpKind::Where, {c.tensor(0, "condition"), c.tensor(1, "self"), c.tensor(2, "other")})};
     }},
    {"aten.relu_.default", [](Converter& c) { return inplaceOf(c, c.op(OpKind::Relu, {c.tensor(0, "self")})); }},
    {"aten.sigmoid_.default", [](Converter& c) { return inplaceOf(c, c.op(OpKind::Sigmoid, {c.tensor(0, "self")})); }},
    {"aten.tanh_.default", [](Converter& c) { return inplaceOf(c, c.op(OpKind::Tanh, {c.tensor(0, "self")})); }},
    {"aten.div_.Tensor", [](Converter& c) { ValueId x = c.tensor(0, "self"); return inplaceOf(c, bin(c, OpKind::Div, {x, c.operand(1, "other", x)})); }},
    {"aten.div_.Scalar", [](Converter& c) { ValueId x = c.tensor(0, "self"); return inplaceOf(c, bin(c, OpKind::Div, {x, c.operand(1, "other", x)})); }},
    {"aten.gelu.default",
     [](Converter& c) -> V {
       const json* a = c.arg(1, "approximate");
       return {gelu(c, c.tensor(0, "self"), a && a->is_string() ? a->get<std::string>() : "none")};
     }},
    {"aten.silu.default", [](Converter& c) -> V { return {silu(c, c.tensor(0, "self"))}; }},
    {"aten.silu_.default", [](Converter& c) { return inplaceOf(c, silu(c, c.tensor(0, "self"))); }},
    {"aten.leaky_relu.default", [](Converter& c) -> V { return {leakyRelu(c, c.tensor(0, "self"), c.number(1, "negative_slope", 0.01))}; }},
    {"aten.leaky_relu_.default", [](Converter& c) { return inplaceOf(c, leakyRelu(c, c.tensor(0, "self"), c.number(1, "negative_slope", 0.01))); }},
    {"aten.hardtanh.default", [](Converter& c) -> V { return {clampOp(c, c.tensor(0, "self"), c.number(1, "min_val", -1), c.number(2, "max_val", 1))}; }},
    {"aten.hardtanh_.default", [](Converter& c) { return inplaceOf(c, clampOp(c, c.tensor(0, "self"), c.number(1, "min_val", -1), c.number(2, "max_val", 1))); }},
    {"aten.hardswish.default", [](Converter& c) -> V { return {hardswish(c, c.tensor(0, "self"))}; }},
    {"aten.hardsigmoid.default", [](Converter& c) -> V { return {hardsigmoid(c, c.tensor(0, "self"))}; }},
    {"aten.hardsigmoid_.default", [](Converter& c) { return inplaceOf(c, hardsigmoid(c, c.tensor(0, "self"))); }},
    {"aten.hardswish_.default", [](Converter& c) { return inplaceOf(c, hardswish(c, c.tensor(0, "self"))); }},
    {"aten.clamp.default", [](Converter& c) -> V { return {clampOp(c, c.tensor(0, "self"), optNumber(c, 1, "min"), optNumber(c, 2, "max"))}; }},
    {"aten.clamp_.default", [](Converter& c) { return inplaceOf(c, clampOp(c, c.tensor(0, "self"), optNumber(c, 1, "min"), optNumber(c, 2, "max"))); }},
    {"aten.where.ScalarOther",
     [](Converter& c) -> V { ValueId a = c.tensor(1, "self"); return {c.op(OpKind::Where, {c.tensor(0, "condition"), a, c.operand(2, "other", a)})}; }},
    {"aten.fmod.Tensor", [](Converter& c) { return binaryChecked(c, OpKind::Fmod, "fmod"); }},
    {"aten.fmod.Scalar", [](Converter& c) { return binaryChecked(c, OpKind::Fmod, "fmod"); }},
    {"aten.remainder.Tensor", [](Converter& c) { return binaryChecked(c, OpKind::Remainder, "remainder"); }},
    {"aten.remainder.Scalar", [](Converter& c) { return binaryChecked(c, OpKind::Remainder, "remainder"); }},
    {"aten.floor_divide.default", [](Converter& c) { return binaryChecked(c, OpKind::DivFloor, "floor division"); }},
    {"aten.div.Tensor_mode", divMode},
    {"aten.div.Scalar_mode", divMode},
    {"aten.bitwise_not.default",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       return {c.op(c.type(x).dtype == DType::Bool ? OpKind::LogicalNot : OpKind::BitwiseNot, {x})};
     }},
    {"aten.logical_xor.default",
     [](Converter& c) -> V {
       ValueId a = c.tensor(0, "self"), b = c.tensor(1, "other");
       ValueId na = c.type(a).dtype == DType::Bool ? a : bin(c, OpKind::Ne, {a, sc(c, 0.0, a)});
       ValueId nb = c.type(b).dtype == DType::Bool ? b : bin(c, OpKind::Ne, {b, sc(c, 0.0, b)});
       return {bin(c, OpKind::Ne, {na, nb})};
     }},
    {"aten.pow.Scalar", powScalarBase},
    {"aten.clamp.Tensor", clampTensor},
    {"aten.clamp_min.default", [](Converter& c) -> V { return {clampOp(c, c.tensor(0, "self"), c.number(1, "min"), std::nullopt)}; }},
    {"aten.clamp_max.default", [](Converter& c) -> V { return {clampOp(c, c.tensor(0, "self"), std::nullopt, c.number(1, "max"))}; }},
    {"aten.clamp_min.Tensor", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {clampTo(c, x, c.tensor(1, "min"), OpKind::Lt)}; }},
    {"aten.clamp_max.Tensor", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {clampTo(c, x, c.tensor(1, "max"), OpKind::Gt)}; }},
    {"aten.masked_fill.Scalar", [](Converter& c) -> V { return {maskedFill(c)}; }},
    {"aten.masked_fill.Tensor", [](Converter& c) -> V { return {maskedFill(c)}; }},
    {"aten.elu.default",
     [](Converter& c) -> V {
       return {elu(c, c.tensor(0, "self"), c.number(1, "alpha", 1.0), c.number(2, "scale", 1.0), c.number(3, "input_scale", 1.0))};
     }},
    {"aten.celu.default", [](Converter& c) -> V { return {celu(c, c.tensor(0, "self"), c.number(1, "alpha", 1.0))}; }},
    {"aten.softplus.default",
     [](Converter& c) -> V { return {softplus(c, c.tensor(0, "self"), c.number(1, "beta", 1.0), c.number(2, "threshold", 20.0))}; }},
    {"aten.mish.default",
     [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {bin(c, OpKind::Mul, {x, c.op(OpKind::Tanh, {softplus(c, x, 1.0, 20.0)})})}; }},
    {"aten.log_sigmoid_forward.default",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       // (output, buffer): the buffer only feeds log_sigmoid_backward.
       return {logSigmoid(c, x), constantLike(c, 0.0, c.type(x))};
     }},
    {"aten.logaddexp.default", [](Converter& c) -> V { return {logaddexp(c, c.tensor(0, "self"), c.tensor(1, "other"))}; }},
    {"aten.xlogy.Tensor", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {xlogy(c, x, c.operand(1, "other", x))}; }},
    {"aten.xlogy.Scalar_Other", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {xlogy(c, x, c.operand(1, "other", x))}; }},
    {"aten.prelu.default", [](Converter& c) -> V { return {prelu(c, c.tensor(0, "self"), c.tensor(1, "weight"))}; }},
    {"aten._prelu_kernel.default", [](Converter& c) -> V { return {prelu(c, c.tensor(0, "self"), c.tensor(1, "weight"))}; }},
    {"aten.frac.default", [](Converter& c) -> V { return {frac(c, c.tensor(0, "self"))}; }},
    {"aten.hardshrink.default", [](Converter& c) -> V { return {hardshrink(c, c.tensor(0, "self"), c.number(1, "lambd", 0.5))}; }},
    {"aten.softshrink.default", [](Converter& c) -> V { return {softshrink(c, c.tensor(0, "self"), c.number(1, "lambd", 0.5))}; }},
    {"aten.threshold.default",
     [](Converter& c) -> V { return {threshold(c, c.tensor(0, "self"), c.number(1, "threshold"), c.number(2, "value"))}; }},
    {"aten.lerp.Scalar",
     [](Converter& c) -> V {
       ValueId a = c.tensor(0, "self");
       double w = c.number(2, "weight");
       return {lerp(c, a, c.tensor(1, "end"), c.operand(2, "weight", a), w)};
     }},
    {"aten.lerp.Tensor", [](Converter& c) -> V { return {lerp(c, c.tensor(0, "self"), c.tensor(1, "end"), c.tensor(2, "weight"), std::nullopt)}; }},
    {"aten.nan_to_num.default",
     [](Converter& c) -> V {
       return {nanToNum(c, c.tensor(0, "self"), optNumber(c, 1, "nan"), optNumber(c, 2, "posinf"), optNumber(c, 3, "neginf"))};
     }},
    {"aten.logit.default", [](Converter& c) -> V { return {logit(c, c.tensor(0, "self"), optNumber(c, 1, "eps"))}; }},
    {"aten.addcmul.default", [](Converter& c) { return addcOp(c, OpKind::Mul); }},
    {"aten.addcdiv.default", [](Converter& c) { return addcOp(c, OpKind::Div); }},
    {"aten.polygamma.default", polygamma},
  };
}

}  // namespace aotc::fx
