//===- onnx/reductions.cpp - Reductions, scans and sorts --------------------===//
//
// Reduce* (axes as attribute or input by opset: ReduceSum from 13, the
// others from 18), ArgMax/ArgMin,
// Softmax/LogSoftmax/Hardmax, CumSum, CumProd, LpNormalization, TopK.
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

namespace {

/// Axes of a Reduce* node (an attribute, or an input from ReduceSum 13 and
/// the other Reduce* 18) and
/// keepdims; empty axes reduce everything unless noop_with_empty_axes.
struct ReduceSpec {
  Ints dims;
  bool keep;
  bool noop;
};

ReduceSpec reduceSpec(Node& c, int64_t rank, bool axesInput) {
  Ints axes = axesInput ? (c.has(1) ? c.knownInts(1, "axes") : Ints{}) : c.ints("axes", Ints{});
  ReduceSpec r{{}, c.i("keepdims", 1) != 0, false};
  if (axes.empty()) {
    if (c.i("noop_with_empty_axes", 0)) r.noop = true;
    for (int64_t k = 0; k < rank; ++k) r.dims.push_back(k);
  } else {
    for (int64_t a : axes) r.dims.push_back(c.axis(a, std::max<int64_t>(rank, 1)));
    std::sort(r.dims.begin(), r.dims.end());
    r.dims.erase(std::unique(r.dims.begin(), r.dims.end()), r.dims.end());
  }
  return r;
}

enum class Red { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

template <Red R>
Outs reduceOnnx(Node& c) {
  ValueId x = c.in(0);
  int64_t rank = c.type(x).rank();
  ReduceSpec sp = reduceSpec(c, rank, c.opset() >= (R == Red::Sum ? 13 : 18));
  if (sp.noop) return {x};
  if (rank == 0) sp.dims.clear();
  // Over an empty set (a reduced dim of extent 0) Max, Min and LogSumExp give
  // their identity (18: the type's lowest / highest value, -inf / +inf,
  // False / True); the sums give 0 and LogSum log(0) on their own.
  if (R == Red::Max || R == Red::Min || R == Red::LogSumExp) {
    const TensorType& t = c.type(x);
    Ints out;
    bool empty = false;
    for (int64_t k = 0; k < rank; ++k) {
      bool reduced = std::binary_search(sp.dims.begin(), sp.dims.end(), k);
      empty = empty || (reduced && t.sizes[static_cast<size_t>(k)] == 0);
      if (!reduced || sp.keep) out.push_back(reduced ? 1 : t.sizes[static_cast<size_t>(k)]);
    }
    if (empty) {
      bool low = R != Red::Min;
      double v = low ? -HUGE_VAL : HUGE_VAL;
      if (t.dtype == DType::Bool) {
        v = low ? 0.0 : 1.0;
      } else if (!isFloating(t.dtype)) {
        int bits = static_cast<int>(dtypeSize(t.dtype) * 8);
        if (bits > 32) c.fail("the identity of a 64-bit integer Max/Min over an empty set is beyond what aotc holds exactly");
        bool u = isUnsigned(t.dtype);
        v = low ? (u ? 0.0 : -std::ldexp(1.0, bits - 1)) : std::ldexp(1.0, u ? bits : bits - 1) - 1;
      }
      return {c.full(v, TensorType::contiguous(t.dtype, out))};
    }
  }
  auto red = [&](OpKind k, ValueId v) {
    if (c.type(v).rank() == 0) return v;
    return reduceOp(c, k, v, sp.dims, sp.keep);
  };
  switch (R) {
    case Red::Sum: return {red(OpKind::Sum, x)};
    case Red::Mean: return {red(OpKind::Mean, x)};
    case Red::Max: return {red(OpKind::Amax, x)};
    case Red::Min: return {red(OpKind::Amin, x)};
    case Red::Prod: return {red(OpKind::Prod, x)};
    case Red::L1: return {red(OpKind::Sum, c.op(OpKind::Abs, {x}))};
    case Red::L2: return {c.op(OpKind::Sqrt, {red(OpKind::Sum, c.mul(x, x))})};
    case Red::SumSquare: return {red(OpKind::Sum, c.mul(x, x))};
    case Red::LogSum: return {c.op(OpKind::Log, {red(OpKind::Sum, x)})};
    case Red::LogSumExp: {
      if (c.type(x).rank() == 0) return {x};
      ValueId m = c.op(OpKind::Detach, {reduceOp(c, OpKind::Amax, x, sp.dims, true)});
      // An infinite max would make x - m NaN: shift by 0 there.
      ValueId finite = c.op(OpKind::LogicalNot, {c.op(OpKind::IsInf, {m})});
      ValueId shift = c.op(OpKind::Where, {finite, m, sc(c, 0.0, m)});
      ValueId s = reduceOp(c, OpKind::Sum, c.op(OpKind::Exp, {c.sub(x, shift)}), sp.dims, sp.keep);
      ValueId back = sp.keep ? shift : c.op(OpKind::Squeeze, {shift}, Attrs{{"dim", sp.dims}});
      return {c.add(c.op(OpKind::Log, {s}), back)};
    }
  }
  return {};
}

/// ArgMax / ArgMin: argmax of an order-reversing map for the minimum; the
/// last index on ties when select_last_index (by flipping the axis).
template <bool Max>
Outs argOnnx(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  int64_t a = c.axis(c.i("axis", 0), std::max<int64_t>(r, 1));
  bool keep = c.i("keepdims", 1) != 0, last = c.i("select_last_index", 0) != 0;
  DType d = c.type(x).dtype;
  ValueId key = x;
  if (!Max) key = d == DType::Bool ? c.op(OpKind::LogicalNot, {x}) : isFloating(d) ? c.neg(x) : c.op(OpKind::BitwiseNot, {x});
  int64_t n = r == 0 ? 1 : c.type(x).sizes[static_cast<size_t>(a)];
  if (last && r > 0) key = flipOp(c, key, {a});
  ValueId idx = r == 0 ? c.scalar(0, DType::I64) : c.op(OpKind::ArgMax, {key}, Attrs{{"dim", a}, {"keepdim", keep}});
  if (last && r > 0) idx = c.sub(c.scalar(static_cast<double>(n - 1), DType::I64), idx);
  return {idx};
}

Outs softmaxOnnx(Node& c, bool log, bool hard) {
  ValueId x = c.in(0);
  const Ints s = c.type(x).sizes;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t a = c.axis(c.i("axis", c.opset() >= 13 ? -1 : 1), std::max<int64_t>(r, 1));
  auto apply = [&](ValueId v, int64_t dim) -> ValueId {
    if (!hard) return softmaxLike(c, v, dim, log);
    // Hardmax: 1 at the first maximum along dim, 0 elsewhere.
    ValueId idx = c.op(OpKind::ArgMax, {v}, Attrs{{"dim", dim}, {"keepdim", true}});
    int64_t n = c.type(v).sizes[static_cast<size_t>(dim)];
    Ints shape(static_cast<size_t>(c.type(v).rank()), 1);
    shape[static_cast<size_t>(dim)] = n;
    ValueId pos = c.reshape(iota(c, n), shape);
    return c.cast(bin(c, OpKind::Eq, {pos, idx}), c.type(v).dtype);
  };
  if (r == 0) return {log && !hard ? c.sub(x, x) : c.full(1.0, c.type(x))};  // one element: 1, or log 1 (NaN kept)
  if (c.opset() >= 13) return {apply(x, a)};
  // Before opset 13 the input is coerced to 2-D at `axis`.
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < r; ++k) (k < a ? outer : inner) = mulSize(k < a ? outer : inner, s[static_cast<size_t>(k)]);
  ValueId y = apply(c.reshape(x, {outer, inner}), 1);
  return {c.reshape(y, s)};
}

Outs cumsumOp(Node& c) {
  ValueId x = c.in(0);
  int64_t a = c.axis(static_cast<int64_t>(c.knownScalar(1, "axis")), c.type(x).rank());
  bool reverse = c.i("reverse", 0) != 0, exclusive = c.i("exclusive", 0) != 0;
  // The IR's cumsum of integers is int64 (PyTorch's); ONNX keeps the type.
  ValueId s = c.cast(c.op(OpKind::Cumsum, {x}, Attrs{{"dim", a}, {"reverse", reverse}}), c.type(x).dtype);
  if (exclusive) s = c.sub(s, x);
  return {s};
}

/// CumProd (26): exclusive shifts in a 1; reverse runs from the end.
Outs cumprodOp(Node& c) {
  ValueId x = c.in(0);
  int64_t a = c.axis(static_cast<int64_t>(c.knownScalar(1, "axis")), std::max<int64_t>(c.type(x).rank(), 1));
  if (c.type(x).rank() == 0 || c.type(x).sizes[static_cast<size_t>(a)] == 0) return {x};
  bool reverse = c.i("reverse", 0) != 0, exclusive = c.i("exclusive", 0) != 0;
  int64_t n = c.type(x).sizes[static_cast<size_t>(a)];
  ValueId y = reverse ? flipOp(c, x, {a}) : x;
  ValueId p = cumprod(c, y, a);
  if (exclusive) {
    Ints one = c.type(x).sizes;
    one[static_cast<size_t>(a)] = 1;
    ValueId head = c.full(1.0, TensorType::contiguous(c.type(x).dtype, one));
    p = n == 1 ? head
               : c.op(OpKind::Cat, {head, c.op(OpKind::Slice, {p}, Attrs{{"dim", a}, {"start", int64_t{0}}, {"end", n - 1}, {"step", int64_t{1}}})},
                      Attrs{{"dim", a}});
  }
  return {reverse ? flipOp(c, p, {a}) : p};
}

/// LpNormalization: x / ||x||_p along axis (p 1 or 2), 0 where the norm is 0.
Outs lpNormOp(Node& c) {
  ValueId x = c.in(0);
  int64_t a = c.axis(c.i("axis", -1), c.type(x).rank());
  int64_t p = c.i("p", 2);
  if (p != 1 && p != 2) c.fail(cat("LpNormalization: p = ", p, " (only 1 and 2 are defined)"));
  ValueId norm = p == 1 ? reduceOp(c, OpKind::Sum, c.op(OpKind::Abs, {x}), {a}, true) : c.op(OpKind::Sqrt, {reduceOp(c, OpKind::Sum, c.mul(x, x), {a}, true)});
  // A zero norm gives 0, not 0/0 (ONNX's reference and onnxruntime).
  ValueId zero = bin(c, OpKind::Eq, {norm, sc(c, 0.0, norm)});
  return {c.op(OpKind::Where, {zero, sc(c, 0.0, x), c.div(x, c.op(OpKind::Where, {zero, sc(c, 1.0, norm), norm}))})};
}

Outs topkOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  int64_t a = c.axis(c.i("axis", -1), r);
  Ints kk = c.opset() >= 10 ? c.knownInts(1, "K") : Ints{c.i("k")};
  if (kk.size() != 1) c.fail("TopK: K must hold one value");
  int64_t k = kk[0], n = c.type(x).sizes[static_cast<size_t>(a)];
  if (k < 0 || k > n) c.fail(cat("TopK: K = ", k, " is out of range for a dim of size ", n));
  bool largest = c.i("largest", 1) != 0;  // sorted=0 allows any order: aotc's is sorted
  V sorted = c.ops(OpKind::Sort, {x}, Attrs{{"dim", a}, {"descending", largest}});
  Attrs sl{{"dim", a}, {"start", int64_t{0}}, {"end", k}, {"step", int64_t{1}}};
  return {c.op(OpKind::Slice, {sorted[0]}, sl), c.op(OpKind::Slice, {sorted[1]}, sl)};
}

}  // namespace

Entries reductionsConverters() {
  return {
    {"ArgMax", argOnnx<true>},
    {"ArgMin", argOnnx<false>},
    {"CumProd", cumprodOp},
    {"CumSum", cumsumOp},
    {"LpNormalization", lpNormOp},
    {"Hardmax", [](Node& c) { return softmaxOnnx(c, false, true); }},
    {"LogSoftmax", [](Node& c) { return softmaxOnnx(c, true, false); }},
    {"ReduceL1", reduceOnnx<Red::L1>},
    {"ReduceL2", reduceOnnx<Red::L2>},
    {"ReduceLogSum", reduceOnnx<Red::LogSum>},
    {"ReduceLogSumExp", reduceOnnx<Red::LogSumExp>},
    {"ReduceMax", reduceOnnx<Red::Max>},
    {"ReduceMean", reduceOnnx<Red::Mean>},
    {"ReduceMin", reduceOnnx<Red::Min>},
    {"ReduceProd", reduceOnnx<Red::Prod>},
    {"ReduceSum", reduceOnnx<Red::Sum>},
    {"ReduceSumSquare", reduceOnnx<Red::SumSquare>},
    {"Softmax", [](Node& c) { return softmaxOnnx(c, false, false); }},
    {"TopK", topkOp},
  };
}

}  // namespace aotc::onnx_fe
