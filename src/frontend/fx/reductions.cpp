//===- fx/reductions.cpp - Reductions, scans and sorts ----------------------===//
//
// sum/mean/prod/amax/var/std/any/logsumexp/softmax, the dim-returning max/min,
// argmin, cumsum, sort, argsort and topk.
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

V reduce(Converter& c, OpKind k, bool with_dims) {
  ValueId x = c.tensor(0, "self");
  Attrs a;
  if (with_dims) {
    a["dim"] = c.ints(1, "dim", Ints{});
    a["keepdim"] = c.boolean(2, "keepdim", false);
    c.requireNone(3, "dtype", "dtype=");
  } else {
    a["dim"] = Ints{};
    a["keepdim"] = false;
    c.requireNone(1, "dtype", "dtype=");
  }
  return {c.op(k, {x}, a)};
}

namespace {

/// max.dim / min.dim -> (values, indices): the values are gathered at the
/// index, so the gradient goes to that element only, as eager's does.
V maxMinDim(Converter& c, bool isMax) {
  ValueId x = c.tensor(0, "self");
  int64_t dim = dimArg(c, 1, "dim", x);
  bool keep = c.boolean(2, "keepdim", false);
  if (c.type(x).rank() == 0) return {x, c.scalar(0, DType::I64)};
  ValueId key = x;
  if (!isMax) key = c.type(x).dtype == DType::Bool ? c.op(OpKind::LogicalNot, {x})
                   : isFloating(c.type(x).dtype) ? c.op(OpKind::Neg, {x}) : c.op(OpKind::BitwiseNot, {x});
  ValueId idx = c.op(OpKind::ArgMax, {key}, Attrs{{"dim", dim}, {"keepdim", true}});
  ValueId vals = c.op(OpKind::Gather, {x, idx}, Attrs{{"dim", dim}});
  if (!keep) {
    vals = c.op(OpKind::Squeeze, {vals}, Attrs{{"dim", Ints{dim}}});
    idx = c.op(OpKind::Squeeze, {idx}, Attrs{{"dim", Ints{dim}}});
  }
  return {vals, idx};
}

/// argmin = argmax of an order-reversing map (exact: neg for floats, ~ for
/// integers, not for bools; ties and NaN pick the same element).
V argmin(Converter& c) {
  ValueId x = c.tensor(0, "self");
  DType d = c.type(x).dtype;
  ValueId key = d == DType::Bool ? c.op(OpKind::LogicalNot, {x}) : isFloating(d) ? c.op(OpKind::Neg, {x}) : c.op(OpKind::BitwiseNot, {x});
  Attrs a{{"keepdim", c.boolean(2, "keepdim", false)}};
  if (c.has(1, "dim")) a["dim"] = c.integer(1, "dim");
  return {c.op(OpKind::ArgMax, {key}, a)};
}

}  // namespace

V cumsum(Converter& c) {
  ValueId x = c.tensor(0, "self");
  int64_t dim = dimArg(c, 1, "dim", x);
  if (c.has(2, "dtype")) x = c.op(OpKind::Cast, {x}, Attrs{{"dtype", std::string(dtypeName(dtypeArg(c, 2, "dtype", c.type(x).dtype)))}});
  if (c.type(x).rank() == 0) return {c.op(OpKind::Clone, {x})};
  return {c.op(OpKind::Cumsum, {x}, Attrs{{"dim", dim}})};
}

namespace {

/// sort(self, dim=-1, descending=False) and sort.stable(self, *, stable, dim, descending).
V sortOp(Converter& c, size_t dimIdx, size_t descIdx) {
  ValueId x = c.tensor(0, "self");
  // aotc's sort is stable (ties keep index order), which stable=False allows too.
  if (dimIdx == 2) c.boolean(1, "stable", false);
  int64_t dim = dimArg(c, dimIdx, "dim", x, -1);
  bool desc = c.boolean(descIdx, "descending", false);
  if (c.type(x).rank() == 0) return {x, c.scalar(0, DType::I64)};
  return c.ops(OpKind::Sort, {x}, Attrs{{"dim", dim}, {"descending", desc}}, {});
}

/// topk(self, k, dim=-1, largest=True, sorted=True): the first k of a sort
/// (ties keep index order; with sorted=False eager's order is unspecified).
V topk(Converter& c) {
  ValueId x = c.tensor(0, "self");
  int64_t k = c.integer(1, "k"), dim = dimArg(c, 2, "dim", x, -1);
  bool largest = c.boolean(3, "largest", true);
  int64_t n = c.type(x).rank() == 0 ? 1 : c.type(x).sizes[static_cast<size_t>(dim)];
  if (k < 0 || k > n) c.fail(cat("topk: k (", k, ") is out of range for a dim of size ", n));
  if (c.type(x).rank() == 0) return {x, c.scalar(0, DType::I64)};
  V s = c.ops(OpKind::Sort, {x}, Attrs{{"dim", dim}, {"descending", largest}}, {});
  Attrs a{{"dim", dim}, {"start", int64_t{0}}, {"end", k}, {"step", int64_t{1}}};
  ValueId v = c.op(OpKind::Slice, {s[0]}, a);
  return {v, c.op(OpKind::Slice, {s[1]}, a)};
}

}  // namespace

namespace {

/// _softmax / _log_softmax(self, dim, half_to_float): half_to_float asks for
/// a float32 result from a 16-bit input (the CUDA kernel's fused upcast, what
/// CUDA autocast records): computed on the input cast to float32.
V softmax(Converter& c, bool log) {
  ValueId x = c.tensor(0, "self");
  int64_t dim = dimArg(c, 1, "dim", x);
  if (c.boolean(2, "half_to_float", false)) {
    DType d = c.type(x).dtype;
    if (d != DType::F16 && d != DType::BF16)
      c.fail(cat(log ? "_log_softmax" : "_softmax", ": half_to_float=True needs a float16 or bfloat16 input, not ", dtypeName(d)));
    x = c.cast(x, DType::F32);
  }
  return {softmaxLike(c, x, dim, log)};
}

/// A `dtype=` keyword: x cast to it (the op computes in that dtype).
ValueId inDtype(Converter& c, ValueId x, size_t i) {
  if (!c.has(i, "dtype")) return x;
  return c.cast(x, dtypeArg(c, i, "dtype", c.type(x).dtype));
}

/// linalg_vector_norm(self, ord=2, dim=None, keepdim=False, *, dtype=None).
V vectorNormOp(Converter& c) {
  ValueId x = c.tensor(0, "self");
  if (c.isComplex(x)) c.fail("linalg_vector_norm of a complex tensor is not supported");
  x = inDtype(c, x, 4);
  return {vectorNorm(c, x, c.number(1, "ord", 2.0), c.ints(2, "dim", Ints{}), c.boolean(3, "keepdim", false))};
}

/// norm.Scalar(self, p=2), norm.ScalarOpt_dtype(self, p, *, dtype),
/// norm.ScalarOpt_dim(self, p, dim, keepdim=False) and
/// norm.ScalarOpt_dim_dtype(self, p, dim, keepdim, *, dtype): p None is 2.
V normOp(Converter& c, bool withDims, bool withDtype) {
  ValueId x = c.tensor(0, "self");
  if (c.isComplex(x)) c.fail("norm of a complex tensor is not supported");
  if (withDtype) x = inDtype(c, x, withDims ? 4 : 2);
  double p = c.number(1, "p", 2.0);
  if (!withDims) return {vectorNorm(c, x, p, {}, false)};
  return {vectorNorm(c, x, p, c.ints(2, "dim"), c.boolean(3, "keepdim", false))};
}

/// cumprod(self, dim, *, dtype=None): integers accumulate in int64, as eager.
V cumprodOp(Converter& c) {
  ValueId x = c.tensor(0, "self");
  int64_t dim = dimArg(c, 1, "dim", x);
  if (c.has(2, "dtype")) x = inDtype(c, x, 2);
  else if (!isFloating(c.type(x).dtype)) x = c.cast(x, DType::I64);
  return {cumprod(c, x, dim)};
}

}  // namespace

Entries reductionsConverters() {
  return {
    {"aten.sum.default", [](Converter& c) { return reduce(c, OpKind::Sum, false); }},
    {"aten.sum.dim_IntList", [](Converter& c) { return reduce(c, OpKind::Sum, true); }},
    {"aten.mean.default", [](Converter& c) { return reduce(c, OpKind::Mean, false); }},
    {"aten.mean.dim", [](Converter& c) { return reduce(c, OpKind::Mean, true); }},
    {"aten.prod.default", [](Converter& c) { return reduce(c, OpKind::Prod, false); }},
    {"aten.prod.dim_int",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       c.requireNone(3, "dtype", "dtype=");
       return {c.op(OpKind::Prod, {x}, Attrs{{"dim", Ints{dimArg(c, 1, "dim", x)}}, {"keepdim", c.boolean(2, "keepdim", false)}})};
     }},
    {"aten.amax.default", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {reduceOp(c, OpKind::Amax, x, c.ints(1, "dim", Ints{}), c.boolean(2, "keepdim", false))}; }},
    {"aten.amin.default", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {reduceOp(c, OpKind::Amin, x, c.ints(1, "dim", Ints{}), c.boolean(2, "keepdim", false))}; }},
    {"aten.argmax.default",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       Attrs a{{"keepdim", c.boolean(2, "keepdim", false)}};
       if (c.has(1, "dim")) a["dim"] = c.integer(1, "dim");
       return {c.op(OpKind::ArgMax, {x}, a)};
     }},
    {"aten.var.correction",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       return {variance(c, x, c.ints(1, "dim", Ints{}), c.number(2, "correction", 1.0), c.boolean(3, "keepdim", false))};
     }},
    {"aten.std.correction",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       return {c.op(OpKind::Sqrt, {variance(c, x, c.ints(1, "dim", Ints{}), c.number(2, "correction", 1.0), c.boolean(3, "keepdim", false))})};
     }},
    {"aten._softmax.default", [](Converter& c) { return softmax(c, false); }},
    {"aten._log_softmax.default", [](Converter& c) { return softmax(c, true); }},
    {"aten.logsumexp.default",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       Ints dims = c.ints(1, "dim");
       bool keep = c.boolean(2, "keepdim", false);
       ValueId m = c.op(OpKind::Detach, {reduceOp(c, OpKind::Amax, x, dims, true)});
       // ATen shifts by 0 where the max is infinite (masked_fill of |max| ==
       // inf): a row of +inf is +inf and of -inf is -inf, where x - max
       // would make them NaN.
       ValueId finite = c.op(OpKind::LogicalNot, {c.op(OpKind::IsInf, {m})});
       m = c.op(OpKind::Where, {finite, m, c.scalar(0.0, c.type(m).dtype)});
       ValueId s = reduceOp(c, OpKind::Sum, c.op(OpKind::Exp, {bin(c, OpKind::Sub, {x, m})}), dims, true);
       ValueId r = bin(c, OpKind::Add, {c.op(OpKind::Log, {s}), m});
       return {keep ? r : reduceOp(c, OpKind::Sum, r, dims, false)};
     }},
    {"aten.max.dim", [](Converter& c) { return maxMinDim(c, true); }},
    {"aten.min.dim", [](Converter& c) { return maxMinDim(c, false); }},
    {"aten.max.default", [](Converter& c) -> V { return {reduceOp(c, OpKind::Amax, c.tensor(0, "self"), {}, false)}; }},
    {"aten.min.default", [](Converter& c) -> V { return {reduceOp(c, OpKind::Amin, c.tensor(0, "self"), {}, false)}; }},
    {"aten.argmin.default", argmin},
    {"aten.any.default", [](Converter& c) -> V { return {anyOf(c, c.tensor(0, "self"), {}, false)}; }},
    {"aten.any.dim", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {anyOf(c, x, {dimArg(c, 1, "dim", x)}, c.boolean(2, "keepdim", false))}; }},
    {"aten.any.dims", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {anyOf(c, x, c.ints(1, "dim", Ints{}), c.boolean(2, "keepdim", false))}; }},
    {"aten.var.dim",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       return {variance(c, x, c.ints(1, "dim", Ints{}), c.boolean(2, "unbiased", true) ? 1.0 : 0.0, c.boolean(3, "keepdim", false))};
     }},
    {"aten.var.default",
     [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {variance(c, x, {}, c.boolean(1, "unbiased", true) ? 1.0 : 0.0, false)}; }},
    {"aten.cumsum.default", cumsum},
    {"aten.cumprod.default", cumprodOp},
    {"aten.linalg_vector_norm.default", vectorNormOp},
    {"aten.norm.Scalar", [](Converter& c) { return normOp(c, false, false); }},
    {"aten.norm.ScalarOpt_dtype", [](Converter& c) { return normOp(c, false, true); }},
    {"aten.norm.ScalarOpt_dim", [](Converter& c) { return normOp(c, true, false); }},
    {"aten.norm.ScalarOpt_dim_dtype", [](Converter& c) { return normOp(c, true, true); }},
    {"aten._safe_softmax.default",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       int64_t dim = dimArg(c, 1, "dim", x);
       return {safeSoftmax(c, inDtype(c, x, 2), dim)};
     }},
    {"aten.sort.default", [](Converter& c) { return sortOp(c, 1, 2); }},
    {"aten.sort.stable", [](Converter& c) { return sortOp(c, 2, 3); }},
    {"aten.topk.default", topk},
    {"aten.argsort.default", [](Converter& c) -> V { return {sortOp(c, 1, 2)[1]}; }},
    {"aten.argsort.stable", [](Converter& c) -> V { return {sortOp(c, 2, 3)[1]}; }},
  };
}

}  // namespace aotc::fx
