//===- onnx/gathers.cpp - Indexing, gathers and scatters --------------------===//
//
// Gather, GatherElements, GatherND, Scatter/ScatterElements, ScatterND (with
// the add, mul, max and min reductions),
// ReverseSequence (negative indices wrapped, out-of-range ones refused).
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

/// Indices made non-negative: i + n where i < 0.
ValueId wrapNegative(Node& c, ValueId i, int64_t n) {
  ValueId neg = bin(c, OpKind::Lt, {i, c.scalar(0, DType::I64)});
  ValueId plus = c.add(i, c.scalar(static_cast<double>(n), DType::I64));
  return c.op(OpKind::Where, {neg, plus, i});
}

namespace {

/// Gather along `axis`: index_select at the flattened indices (known ones
/// range-checked when compiling), reshaped to data[:axis] + indices + data[axis+1:].
Outs gatherOp(Node& c) {
  ValueId x = c.in(0);
  const Ints s = c.type(x).sizes;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t a = c.axis(c.i("axis", 0), r);
  int64_t n = s[static_cast<size_t>(a)];
  ValueId flatIdx;
  Ints idxShape;
  if (c.isKnown(1)) {
    const HostTensor& k = c.known(1, "indices");
    Ints list;
    for (double v : k.data) {
      if (v < -static_cast<double>(n) || v >= static_cast<double>(n)) c.fail(cat("index ", v, " is out of range for a dim of size ", n));
      list.push_back(static_cast<int64_t>(v < 0 ? v + static_cast<double>(n) : v));
    }
    flatIdx = indexVector(c, list);
    idxShape = k.sizes;
  } else {
    ValueId idx = wrapNegative(c, c.cast(c.in(1), DType::I64), n);
    idxShape = c.type(idx).sizes;
    flatIdx = c.reshape(idx, {c.type(idx).numel()});
  }
  ValueId flat = c.op(OpKind::IndexSelect, {x, flatIdx}, Attrs{{"dim", a}});
  Ints out(s.begin(), s.begin() + a);
  out.insert(out.end(), idxShape.begin(), idxShape.end());
  out.insert(out.end(), s.begin() + a + 1, s.end());
  return {c.reshape(flat, out)};
}

/// GatherElements / ScatterElements index along one axis: negative indices wrap.
ValueId elementIndices(Node& c, size_t input, int64_t n) { return wrapNegative(c, c.cast(c.in(input), DType::I64), n); }

Outs gatherElementsOp(Node& c) {
  ValueId x = c.in(0);
  int64_t a = c.axis(c.i("axis", 0), c.type(x).rank());
  ValueId idx = elementIndices(c, 1, c.type(x).sizes[static_cast<size_t>(a)]);
  return {c.op(OpKind::Gather, {x, idx}, Attrs{{"dim", a}})};
}

/// Scatter with reduction max, min (18) or mul (ScatterND 16, ScatterElements
/// 16): table [P, rest...] updated at rows [M] by u [M, rest...], every
/// update to a row combined.  Written densely over [M, P, rest] (the IR has
/// no segmented reduction), so bounded: where no update hits a row the
/// combination leaves it as it was.
constexpr int64_t kMaxDenseScatter = int64_t{1} << 24;
ValueId scatterReduceRows(Node& c, ValueId table, ValueId rows, ValueId u, const std::string& red) {
  const Ints ts = c.type(table).sizes;
  int64_t P = ts[0], M = c.type(rows).numel(), R = 1;
  for (size_t k = 1; k < ts.size(); ++k) R = mulSize(R, ts[k]);
  if (M == 0 || P == 0 || R == 0) return table;
  if (mulSize(mulSize(M, P), R) > kMaxDenseScatter) c.fail(cat("reduction '", red, "' over ", M, " updates of ", P, " rows is too large (aotc writes it densely)"));
  ValueId t2 = c.reshape(table, {P, R});
  ValueId hit = bin(c, OpKind::Eq, {c.reshape(rows, {M, 1, 1}), c.reshape(iota(c, P), {1, P, 1})});  // [M, P, 1]
  ValueId u3 = c.reshape(u, {M, 1, R});
  ValueId y;
  if (red == "mul") {
    y = c.mul(t2, reduceOp(c, OpKind::Prod, c.op(OpKind::Where, {hit, u3, c.scalarLike(1, u3)}), {0}, false));
  } else {
    bool mx = red == "max";
    ValueId agg = reduceOp(c, mx ? OpKind::Amax : OpKind::Amin, c.op(OpKind::Where, {hit, u3, c.reshape(t2, {1, P, R})}), {0}, false);
    y = c.op(mx ? OpKind::Maximum : OpKind::Minimum, {t2, agg});
  }
  return c.reshape(y, ts);
}

Outs scatterElementsOp(Node& c) {
  ValueId x = c.in(0);
  int64_t a = c.axis(c.i("axis", 0), c.type(x).rank());
  ValueId idx = elementIndices(c, 1, c.type(x).sizes[static_cast<size_t>(a)]);
  ValueId upd = c.in(2);
  std::string red = c.s("reduction", "none");
  if (red == "none") return {c.op(OpKind::Scatter, {x, idx, upd}, Attrs{{"dim", a}})};
  if (red == "add") return {c.op(OpKind::ScatterAdd, {x, idx, upd}, Attrs{{"dim", a}})};
  if (red != "mul" && red != "max" && red != "min") c.fail(cat("ScatterElements: reduction '", red, "' is not supported"));
  // Each update's linear position in x: its own coordinates, idx on the axis.
  const Ints xs = c.type(x).sizes, us = c.type(upd).sizes;
  if (c.type(idx).sizes != us || us.size() != xs.size()) c.fail("ScatterElements: indices and updates must have data's rank and one shape");
  Ints strides = TensorType::contiguousStrides(xs);
  ValueId pos = kNoValue;
  for (size_t d = 0; d < us.size(); ++d) {
    Ints shape(us.size(), 1);
    shape[d] = us[d];
    ValueId coord = static_cast<int64_t>(d) == a ? idx : c.expand(c.reshape(iota(c, us[d]), shape), us);
    ValueId term = c.mul(coord, c.scalar(static_cast<double>(strides[d]), DType::I64));
    pos = pos == kNoValue ? term : c.add(pos, term);
  }
  int64_t P = c.type(x).numel(), M = c.type(upd).numel();
  ValueId xFlat = c.reshape(x, {P});
  ValueId posFlat = c.reshape(c.contiguous(pos), {M});
  ValueId updFlat = c.reshape(upd, {M});
  ValueId flat = scatterReduceRows(c, xFlat, posFlat, updFlat, red);
  return {c.reshape(flat, xs)};
}

/// GatherND / ScatterND address rows of `data` viewed as [prod(first dims), rest]:
/// the linear row of each index tuple (negative components wrapped), with
/// `batch` leading dims shared by data and indices.
struct NdRows {
  ValueId rows;    ///< int64 [M]: the row of each index tuple
  ValueId table;   ///< data as [B * prod(k dims), rest...]
  Ints lead;       ///< indices.shape[:-1]
  Ints rest;       ///< data.shape[batch + k:]
};

NdRows ndRows(Node& c, ValueId data, ValueId indices, int64_t batch) {
  const Ints ds = c.type(data).sizes, is = c.type(indices).sizes;
  int64_t ir = static_cast<int64_t>(is.size()), dr = static_cast<int64_t>(ds.size());
  if (ir < 1 || batch < 0 || batch >= ir || batch > dr) c.fail("bad batch_dims for these ranks");
  int64_t k = is.back();
  if (k < 1 || batch + k > dr) c.fail("the index tuples are longer than data has dims");
  for (int64_t b = 0; b < batch; ++b)
    if (ds[static_cast<size_t>(b)] != is[static_cast<size_t>(b)]) c.fail("data and indices differ in a batch dim");
  NdRows r;
  r.lead.assign(is.begin(), is.end() - 1);
  r.rest.assign(ds.begin() + batch + k, ds.end());
  int64_t M = 1, rowsPerBatch = 1, B = 1;
  for (int64_t d : r.lead) M = mulSize(M, d);
  for (int64_t j = 0; j < k; ++j) {
    if (ds[static_cast<size_t>(batch + j)] == 0) c.fail("an indexed dim of data has size 0: no index can be valid");
    rowsPerBatch = mulSize(rowsPerBatch, ds[static_cast<size_t>(batch + j)]);
  }
  for (int64_t b = 0; b < batch; ++b) B = mulSize(B, ds[static_cast<size_t>(b)]);
  ValueId idx = c.cast(indices, DType::I64);
  ValueId row = kNoValue;
  int64_t stride = rowsPerBatch;
  for (int64_t j = 0; j < k; ++j) {
    int64_t n = ds[static_cast<size_t>(batch + j)];
    stride /= n;
    ValueId comp = wrapNegative(c, c.op(OpKind::Select, {idx}, Attrs{{"dim", ir - 1}, {"index", j}}), n);
    ValueId term = stride == 1 ? comp : c.mul(comp, c.scalar(static_cast<double>(stride), DType::I64));
    row = row == kNoValue ? term : c.add(row, term);
  }
  if (batch > 0) {
    // Each tuple's batch element, as an offset into the flattened table.
    Ints bshape(r.lead.size(), 1);
    for (int64_t b = 0; b < batch; ++b) bshape[static_cast<size_t>(b)] = r.lead[static_cast<size_t>(b)];
    ValueId batchIndex = iota(c, B);
    ValueId bi = c.reshape(c.mul(batchIndex, c.scalar(static_cast<double>(rowsPerBatch), DType::I64)), bshape);
    row = c.add(row, bi);
  }
  r.rows = c.reshape(c.contiguous(row), {M});
  Ints tshape{mulSize(B, rowsPerBatch)};
  tshape.insert(tshape.end(), r.rest.begin(), r.rest.end());
  r.table = c.reshape(data, tshape);
  return r;
}

Outs gatherNdOp(Node& c) {
  ValueId data = c.in(0), indices = c.in(1);
  NdRows r = ndRows(c, data, indices, c.i("batch_dims", 0));
  ValueId g = c.op(OpKind::IndexSelect, {r.table, r.rows}, Attrs{{"dim", int64_t{0}}});
  Ints out = r.lead;
  out.insert(out.end(), r.rest.begin(), r.rest.end());
  return {c.reshape(g, out)};
}

Outs scatterNdOp(Node& c) {
  ValueId data = c.in(0), indices = c.in(1), updates = c.in(2);
  NdRows r = ndRows(c, data, indices, 0);
  int64_t M = c.type(r.rows).numel();
  Ints ushape{M};
  ushape.insert(ushape.end(), r.rest.begin(), r.rest.end());
  ValueId u = c.reshape(updates, ushape);
  Ints ishape(ushape.size(), 1);
  ishape[0] = M;
  ValueId idx = c.contiguous(c.expand(c.reshape(r.rows, ishape), ushape));
  std::string red = c.s("reduction", "none");
  if (red == "mul" || red == "max" || red == "min") return {c.reshape(scatterReduceRows(c, c.contiguous(r.table), r.rows, u, red), c.type(data).sizes)};
  OpKind k = red == "none" ? OpKind::Scatter : red == "add" ? OpKind::ScatterAdd : (c.fail("ScatterND: reduction '" + red + "' is not supported"), OpKind::Scatter);
  ValueId y = c.op(k, {c.contiguous(r.table), idx, u}, Attrs{{"dim", int64_t{0}}});
  return {c.reshape(y, c.type(data).sizes)};
}

Outs reverseSequenceOp(Node& c) {
  ValueId x = c.in(0);
  Ints lens = c.knownInts(1, "sequence_lens");
  int64_t r = c.type(x).rank();
  int64_t bAxis = c.axis(c.i("batch_axis", 1), r), tAxis = c.axis(c.i("time_axis", 0), r);
  if (r < 2 || bAxis == tAxis) c.fail("ReverseSequence: batch_axis and time_axis must be two different dims");
  const Ints s = c.type(x).sizes;
  int64_t B = s[static_cast<size_t>(bAxis)], T = s[static_cast<size_t>(tAxis)];
  if (static_cast<int64_t>(lens.size()) != B) c.fail("ReverseSequence: sequence_lens must have one entry per batch element");
  if (c.type(x).numel() > kMaxFoldElements) c.fail("ReverseSequence: the input is too large");
  // An index tensor of x's shape along the time axis: reversed within each length.
  HostTensor idx = HostTensor::zeros(DType::I64, s);
  Ints strides = TensorType::contiguousStrides(s);
  for (int64_t e = 0; e < idx.numel(); ++e) {
    int64_t t = (e / strides[static_cast<size_t>(tAxis)]) % T, b = (e / strides[static_cast<size_t>(bAxis)]) % B;
    int64_t len = std::clamp<int64_t>(lens[static_cast<size_t>(b)], 0, T);
    idx.data[static_cast<size_t>(e)] = static_cast<double>(t < len ? len - 1 - t : t);
  }
  return {c.op(OpKind::Gather, {x, c.constant(idx)}, Attrs{{"dim", tAxis}})};
}

}  // namespace

/// TensorScatter (24): present = past with update written along `axis` from
/// each batch row's write index (0 without write_indices; modulo the cache
/// length in "circular" mode).  Written as a gather: cache position p of
/// batch row b holds update[..., s, ...] with s = p - w[b] (mod L when
/// circular) where 0 <= s < S, and past[..., p, ...] elsewhere.  An index
/// that writes past the cache's end in "linear" mode is out of ONNX's domain
/// (those positions keep the past values).
Outs tensorScatterOp(Node& c) {
  ValueId past = c.in(0), update = c.in(1);
  const TensorType pt = c.type(past), ut = c.type(update);
  const int64_t r = pt.rank();
  if (r < 2 || ut.rank() != r) c.fail("TensorScatter: past_cache and update must have the same rank, at least 2");
  const int64_t a = c.axis(c.i("axis", -2), r);
  if (a == 0) c.fail("TensorScatter: axis must not be the batch dim 0");
  for (int64_t d = 0; d < r; ++d)
    if (d != a && pt.sizes[static_cast<size_t>(d)] != ut.sizes[static_cast<size_t>(d)])
      c.fail(cat("TensorScatter: update's dim ", d, " is ", ut.sizes[static_cast<size_t>(d)], ", past_cache's ", pt.sizes[static_cast<size_t>(d)]));
  if (pt.dtype != ut.dtype) c.fail("TensorScatter: past_cache and update differ in element type");
  const std::string mode = c.s("mode", "linear");
  if (mode != "linear" && mode != "circular") c.fail("TensorScatter: mode '" + mode + "' is not 'linear' or 'circular'");
  const int64_t L = pt.sizes[static_cast<size_t>(a)], S = ut.sizes[static_cast<size_t>(a)], B = pt.sizes[0];
  if (S > L) c.fail(cat("TensorScatter: the update's sequence length ", S, " exceeds the cache's ", L));
  if (S == 0 || pt.numel() == 0) return {past};
  Ints pshape(static_cast<size_t>(r), 1), bshape(static_cast<size_t>(r), 1);
  pshape[static_cast<size_t>(a)] = L;
  bshape[0] = B;
  ValueId positions = iota(c, L);
  ValueId p = c.reshape(positions, pshape);
  ValueId s = p;
  if (c.has(2)) {
    if (c.type(c.in(2)).numel() != B) c.fail(cat("TensorScatter: write_indices must hold one index per batch row (", B, ")"));
    ValueId w0 = c.cast(c.in(2), DType::I64);
    ValueId w = c.reshape(w0, bshape);
    s = c.op(OpKind::Sub, {p, w});
  }
  if (mode == "circular") {
    ValueId len = c.scalar(static_cast<double>(L), DType::I64);
    s = c.op(OpKind::Remainder, {s, len});  // Python's %: in [0, L)
  }
  ValueId zero = c.scalar(0.0, DType::I64);
  ValueId last = c.scalar(static_cast<double>(S - 1), DType::I64);
  ValueId lo = c.op(OpKind::Ge, {s, zero});
  ValueId hi = c.op(OpKind::Le, {s, last});
  ValueId inside = c.op(OpKind::LogicalAnd, {lo, hi});
  ValueId floor0 = c.op(OpKind::Maximum, {s, zero});
  ValueId clamped = c.op(OpKind::Minimum, {floor0, last});
  Ints full = ut.sizes;
  full[static_cast<size_t>(a)] = L;
  ValueId idx = c.contiguous(c.expand(clamped, full));
  ValueId taken = c.op(OpKind::Gather, {update, idx}, Attrs{{"dim", a}});
  ValueId mask = c.expand(inside, full);
  return {c.op(OpKind::Where, {mask, taken, past})};
}

Entries gathersConverters() {
  return {
    {"Gather", gatherOp},
    {"GatherElements", gatherElementsOp},
    {"GatherND", gatherNdOp},
    {"ReverseSequence", reverseSequenceOp},
    {"ScatterElements", scatterElementsOp},
    {"ScatterND", scatterNdOp},
    {"Scatter", scatterElementsOp},
    {"TensorScatter", tensorScatterOp},
  };
}

}  // namespace aotc::onnx_fe
