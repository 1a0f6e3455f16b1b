//===- fx/linalg.cpp - Matrix products and distances ------------------------===//
//
// mm/addmm/bmm/baddbmm, cdist and pdist (Note [Distances]).
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

namespace {

// Note [Distances]: cdist and pdist compute each p-norm directly on the
// differences (ATen's direct path; for p = 2 ATen switches to a
// matrix-product formula past 25 rows, which is less accurate, so results
// agree within float tolerance rather than bit for bit).  Gradients are
// ATen's: 0 where a distance is 0 (the square root and the 1/p power are
// taken of a sum with its zeros replaced by 1, then masked), sign(diff) for
// p = 1, and for p = inf the full gradient to every difference tied with
// the maximum.
/// The p-norm over the last dim of `d`, keeping it.
ValueId pNormLast(Converter& c, ValueId d, double p) {
  const int64_t last = c.type(d).rank() - 1;
  ValueId a = c.op(OpKind::Abs, {d});
  if (p == 0) {
    // A count: eager's gradient is zero, and the result still takes one
    // (so `grad_output` is accepted for it): a where that never picks d.
    ValueId nz = c.op(OpKind::Cast, {bin(c, OpKind::Ne, {d, sc(c, 0.0, d)})}, Attrs{{"dtype", std::string(dtypeName(c.type(d).dtype))}});
    ValueId never = c.op(OpKind::Where, {c.scalar(0.0, DType::Bool), d, sc(c, 0.0, d)});
    return reduceOp(c, OpKind::Sum, bin(c, OpKind::Add, {nz, never}), {last}, true);
  }
  if (std::isinf(p)) {
    ValueId m = c.op(OpKind::Detach, {reduceOp(c, OpKind::Amax, a, {last}, true)});
    ValueId tie = bin(c, OpKind::Eq, {a, m});
    ValueId diff = bin(c, OpKind::Sub, {a, m});
    ValueId onTies = c.op(OpKind::Where, {tie, diff, sc(c, 0.0, a)});
    return bin(c, OpKind::Add, {m, reduceOp(c, OpKind::Sum, onTies, {last}, true)});
  }
  if (p == 1) return reduceOp(c, OpKind::Sum, a, {last}, true);
  ValueId powed = p == 2 ? bin(c, OpKind::Mul, {d, d}) : bin(c, OpKind::Pow, {a, sc(c, p, a)});
  ValueId s = reduceOp(c, OpKind::Sum, powed, {last}, true);
  ValueId zero = bin(c, OpKind::Eq, {s, sc(c, 0.0, s)});
  ValueId safe = c.op(OpKind::Where, {zero, sc(c, 1.0, s), s});
  ValueId root = p == 2 ? c.op(OpKind::Sqrt, {safe}) : bin(c, OpKind::Pow, {safe, sc(c, 1.0 / p, safe)});
  return c.op(OpKind::Where, {zero, sc(c, 0.0, root), root});
}

V cdist(Converter& c) {
  ValueId x1 = c.tensor(0, "x1"), x2 = c.tensor(1, "x2");
  double p = c.number(2, "p", 2.0);
  if (p < 0 || std::isnan(p)) c.fail("cdist only supports non-negative p values");
  const TensorType a = c.type(x1), b = c.type(x2);
  if (a.rank() < 2 || b.rank() < 2 || a.sizes.back() != b.sizes.back())
    c.fail(cat("cdist: X1 ", TensorType::contiguous(a.dtype, a.sizes).str(), " and X2 ", TensorType::contiguous(b.dtype, b.sizes).str(), " must be [*, P, M] and [*, R, M]"));
  if (!isFloating(a.dtype) || a.dtype != b.dtype) c.fail("cdist: both inputs must have the same floating dtype");
  ValueId u = c.op(OpKind::Unsqueeze, {x1}, Attrs{{"dim", int64_t{-2}}});
  ValueId v = c.op(OpKind::Unsqueeze, {x2}, Attrs{{"dim", int64_t{-3}}});
  ValueId r = pNormLast(c, bin(c, OpKind::Sub, {u, v}), p);
  return {c.op(OpKind::Squeeze, {r}, Attrs{{"dim", Ints{-1}}})};
}

/// pdist(x [N, M], p): the distances of rows i < j, row-major: the full
/// [N, N] distances, scattered into N(N-1)/2 slots (pairs i >= j go to one
/// extra slot that is dropped).
V pdist(Converter& c) {
  ValueId x = c.tensor(0, "self");
  double p = c.number(1, "p", 2.0);
  if (p < 0 || std::isnan(p)) c.fail("pdist only supports non-negative p values");
  const TensorType t = c.type(x);
  if (t.rank() != 2 || !isFloating(t.dtype)) c.fail("pdist: the input must be a 2-D floating tensor");
  const int64_t n = t.sizes[0], pairs = n * (n - 1) / 2;
  if (n < 2) return {constantLike(c, 0.0, TensorType::contiguous(t.dtype, {0}))};
  ValueId u = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{1}}});
  ValueId v = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{0}}});
  ValueId full = reshapeTo(c, pNormLast(c, bin(c, OpKind::Sub, {u, v}), p), {n * n});
  ValueId rows = reshapeTo(c, iota(c, n), {n, 1});
  ValueId cols = reshapeTo(c, iota(c, n), {1, n});
  ValueId upper = reshapeTo(c, bin(c, OpKind::Gt, {cols, rows}), {n * n});
  ValueId pos = c.op(OpKind::Cumsum, {c.op(OpKind::Cast, {upper}, Attrs{{"dtype", std::string("i64")}})}, Attrs{{"dim", int64_t{0}}});
  ValueId slot = c.op(OpKind::Where, {upper, bin(c, OpKind::Sub, {pos, c.scalar(1, DType::I64)}), c.scalar(static_cast<double>(pairs), DType::I64)});
  ValueId into = constantLike(c, 0.0, TensorType::contiguous(t.dtype, {pairs + 1}));
  ValueId out = c.op(OpKind::Scatter, {into, slot, full}, Attrs{{"dim", int64_t{0}}});
  return {c.op(OpKind::Slice, {out}, Attrs{{"dim", int64_t{0}}, {"start", int64_t{0}}, {"end", pairs}, {"step", int64_t{1}}})};
}

}  // namespace

Entries linalgConverters() {
  return {
    {"aten.mm.default", [](Converter& c) -> V { return {c.op(OpKind::Mm, {c.tensor(0, "self"), c.tensor(1, "mat2")})}; }},
    {"aten.addmm.default",
     [](Converter& c) -> V {
       ValueId bias = c.tensor(0, "self");
       ValueId prod = c.scaled(c.op(OpKind::Mm, {c.tensor(1, "mat1"), c.tensor(2, "mat2")}), c.number(4, "alpha", 1.0));
       return {c.op(OpKind::Add, {c.scaled(bias, c.number(3, "beta", 1.0)), prod})};
     }},
    {"aten.bmm.default", [](Converter& c) -> V { return {c.op(OpKind::Bmm, {c.tensor(0, "self"), c.tensor(1, "mat2")})}; }},
    {"aten.baddbmm.default",
     [](Converter& c) -> V {
       ValueId in = c.tensor(0, "self");
       ValueId p = c.scaled(c.op(OpKind::Bmm, {c.tensor(1, "batch1"), c.tensor(2, "batch2")}), c.number(4, "alpha", 1.0));
       return {bin(c, OpKind::Add, {c.scaled(in, c.number(3, "beta", 1.0)), p})};
     }},
    {"aten._cdist_forward.default", cdist},
    {"aten.cdist.default", cdist},
    {"aten._pdist_forward.default", pdist},
    {"aten.pdist.default", pdist},
  };
}

}  // namespace aotc::fx
