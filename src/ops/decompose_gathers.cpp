//===- decompose_gathers.cpp - Indexing, bags and sampling as gathers ------===//
//
// Note [Decompositions] (decompose.h): the gathers family's composites,
// written once over the op table's index_select, index_add, gather and where:
// advanced indexing (x[indices]), index_put, embedding_bag and
// grid_sampler_2d.  Each takes its arguments as C++ values: the front end's
// converter reads them (Note [FX converter tables]) and calls one of these.
//===----------------------------------------------------------------------===//
#include "aotc/ops/decompose.h"

namespace aotc::decomp {

namespace {

/// The linear index of integer index tensors `idx` over dims of sizes `dims`,
/// negative indices wrapped as Python does.  Where any index is outside its
/// dim the result is prod(dims), itself out of range, so the indexing op's
/// bounds check reports it (Note [Index errors]) instead of another element
/// being read.
ValueId linearIndex(Builder& c, const std::vector<ValueId>& idx, const Ints& dims) {
  ValueId lin = kNoValue, bad = kNoValue;
  int64_t total = 1;
  for (size_t j = 0; j < idx.size(); ++j) {
    int64_t n = dims[j];
    total = mulSize(total, n);
    ValueId v = idx[j];
    if (c.type(v).dtype != DType::I64) v = c.op(OpKind::Cast, {v}, Attrs{{"dtype", std::string("i64")}});
    ValueId neg = bin(c, OpKind::Lt, {v, c.scalar(0, DType::I64)});
    ValueId plus = bin(c, OpKind::Add, {v, c.scalar(static_cast<double>(n), DType::I64)});
    ValueId wrapped = c.op(OpKind::Where, {neg, plus, v});
    ValueId low = bin(c, OpKind::Lt, {wrapped, c.scalar(0, DType::I64)});
    ValueId high = bin(c, OpKind::Ge, {wrapped, c.scalar(static_cast<double>(n), DType::I64)});
    ValueId out = bin(c, OpKind::LogicalOr, {low, high});
    bad = bad == kNoValue ? out : bin(c, OpKind::LogicalOr, {bad, out});
    lin = lin == kNoValue ? wrapped : bin(c, OpKind::Add, {bin(c, OpKind::Mul, {lin, c.scalar(static_cast<double>(n), DType::I64)}), wrapped});
  }
  return c.op(OpKind::Where, {bad, c.scalar(static_cast<double>(total), DType::I64), lin});
}

/// Integer index tensors `idx` on dims [first, first + k) of a tensor of type
/// `t`, broadcast together and linearized (linearIndex): the flat index of
/// `bn` elements into the `mid` elements of the flattened indexed dims.
struct FlatIndex {
  Ints bshape;  ///< the index tensors' broadcast shape
  int64_t bn = 1, mid = 1;
  ValueId flat = kNoValue;  ///< i64[bn]
};

FlatIndex flatIndex(Builder& c, const TensorType& t, const std::vector<ValueId>& idx, size_t first, const char* what) {
  size_t k = idx.size();
  if (first + k > static_cast<size_t>(t.rank())) c.fail(cat(what, ": too many indices for the tensor"));
  FlatIndex f;
  f.bshape = c.type(idx[0]).sizes;
  for (ValueId v : idx) {
    auto b = broadcastShapes(f.bshape, c.type(v).sizes);
    if (!b) c.fail(cat(what, ": index tensors do not broadcast together"));
    f.bshape = *b;
  }
  Ints dims(t.sizes.begin() + static_cast<int64_t>(first), t.sizes.begin() + static_cast<int64_t>(first + k));
  for (int64_t s : f.bshape) f.bn = mulSize(f.bn, s);
  for (int64_t s : dims) f.mid = mulSize(f.mid, s);
  ValueId lin = linearIndex(c, idx, dims);
  f.flat = reshapeTo(c, c.op(OpKind::Expand, {lin}, Attrs{{"size", f.bshape}}), {f.bn});
  return f;
}

}  // namespace

ValueId indexTensor(Builder& c, ValueId x, const std::vector<ValueId>& indices) {
  const TensorType t = c.type(x);
  size_t first = 0;
  while (first < indices.size() && indices[first] == kNoValue) ++first;
  std::vector<ValueId> idx;
  for (size_t i = first; i < indices.size(); ++i) {
    if (indices[i] == kNoValue) {
      bool trailing = true;
      for (size_t j = i; j < indices.size(); ++j) trailing = trailing && indices[j] == kNoValue;
      if (!trailing) c.fail("index: index tensors separated by None are not supported");
      break;
    }
    ValueId v = indices[i];
    DType d = c.type(v).dtype;
    if (d == DType::Bool)
      c.fail("index with a bool mask has a data-dependent output shape, which aotc cannot compile (use torch.where)");
    if (isFloating(d)) c.fail("index: index tensors must be integers");
    idx.push_back(v);
  }
  if (idx.empty()) return x;
  size_t k = idx.size();
  FlatIndex f = flatIndex(c, t, idx, first, "index");
  Ints flat(t.sizes.begin(), t.sizes.begin() + static_cast<int64_t>(first));
  flat.push_back(f.mid);
  flat.insert(flat.end(), t.sizes.begin() + static_cast<int64_t>(first + k), t.sizes.end());
  ValueId xs = reshapeTo(c, x, flat);
  ValueId sel = c.op(OpKind::IndexSelect, {xs, f.flat}, Attrs{{"dim", static_cast<int64_t>(first)}});
  Ints out(t.sizes.begin(), t.sizes.begin() + static_cast<int64_t>(first));
  out.insert(out.end(), f.bshape.begin(), f.bshape.end());
  out.insert(out.end(), t.sizes.begin() + static_cast<int64_t>(first + k), t.sizes.end());
  return reshapeTo(c, sel, out);
}

ValueId indexPut(Builder& c, ValueId x, const std::vector<ValueId>& indices, ValueId v, bool acc) {
  const TensorType t = c.type(x);
  if (c.type(v).dtype != t.dtype) v = c.op(OpKind::Cast, {v}, Attrs{{"dtype", std::string(dtypeName(t.dtype))}});
  // x[mask] = scalar.
  if (indices.size() == 1 && indices[0] != kNoValue && c.type(indices[0]).dtype == DType::Bool) {
    ValueId m = indices[0];
    if (c.type(v).numel() != 1 || acc)
      c.fail("index_put with a bool mask needs a single value and no accumulate (otherwise its shape depends on the data)");
    const TensorType mt = c.type(m);
    if (mt.rank() > t.rank()) c.fail("index_put: the mask has more dims than the tensor");
    for (int64_t d = 0; d < mt.rank(); ++d)
      if (mt.sizes[static_cast<size_t>(d)] != t.sizes[static_cast<size_t>(d)]) c.fail("index_put: the mask's shape does not match the tensor's leading dims");
    Ints ms = mt.sizes;
    ms.resize(static_cast<size_t>(t.rank()), 1);
    ValueId mm = reshapeTo(c, m, ms);
    ValueId v0 = reshapeTo(c, v, {});
    return c.op(OpKind::Where, {mm, v0, x});
  }
  size_t first = 0;
  while (first < indices.size() && indices[first] == kNoValue) ++first;
  std::vector<ValueId> idx;
  for (size_t i = first; i < indices.size(); ++i) {
    if (indices[i] == kNoValue) c.fail("index_put: index tensors separated by None are not supported");
    ValueId iv = indices[i];
    if (c.type(iv).dtype == DType::Bool || isFloating(c.type(iv).dtype)) c.fail("index_put: index tensors must be integers (or one bool mask)");
    idx.push_back(iv);
  }
  if (idx.empty()) c.fail("index_put without index tensors");
  size_t k = idx.size();
  FlatIndex f = flatIndex(c, t, idx, first, "index_put");
  const Ints& bshape = f.bshape;
  const int64_t bn = f.bn, mid = f.mid;
  ValueId flatIdx = f.flat;
  Ints pre(t.sizes.begin(), t.sizes.begin() + static_cast<int64_t>(first));
  Ints post(t.sizes.begin() + static_cast<int64_t>(first + k), t.sizes.end());
  Ints flat = pre, vshape = pre, vflat = pre;
  flat.push_back(mid);
  vflat.push_back(bn);
  flat.insert(flat.end(), post.begin(), post.end());
  vflat.insert(vflat.end(), post.begin(), post.end());
  vshape.insert(vshape.end(), bshape.begin(), bshape.end());
  vshape.insert(vshape.end(), post.begin(), post.end());
  if (!broadcastShapes(vshape, c.type(v).sizes) || *broadcastShapes(vshape, c.type(v).sizes) != vshape)
    c.fail("index_put: values do not broadcast to the indexed shape " + TensorType::contiguous(t.dtype, vshape).str());
  ValueId vs = reshapeTo(c, c.op(OpKind::Clone, {c.op(OpKind::Expand, {v}, Attrs{{"size", vshape}})}), vflat);
  ValueId xs = reshapeTo(c, x, flat);
  int64_t dim = static_cast<int64_t>(first);
  ValueId res;
  if (acc) {
    res = c.op(OpKind::IndexAdd, {xs, flatIdx, vs}, Attrs{{"dim", dim}});
  } else {
    if (bn > 4096) c.fail("index_put without accumulate takes at most 4096 indices (duplicates are resolved pairwise)");
    // last[i]: no later j has the same index.
    ValueId col = c.op(OpKind::View, {flatIdx}, Attrs{{"size", Ints{bn, 1}}});
    ValueId same = bin(c, OpKind::Eq, {col, flatIdx});
    ValueId later = triangle(c, c.op(OpKind::Cast, {same}, Attrs{{"dtype", std::string("i64")}}), 1, true);
    ValueId dupLater = bin(c, OpKind::Gt, {reduceOp(c, OpKind::Sum, later, {1}, false), c.scalar(0, DType::I64)});
    Ints mshape(flat.size(), 1);
    mshape[first] = bn;
    ValueId keep = c.op(OpKind::View, {c.op(OpKind::LogicalNot, {dupLater})}, Attrs{{"size", mshape}});
    // Eager's gradient of the values is grad[indices] for every value, an
    // overwritten duplicate included: keep_grad gives the masked values
    // the gradient identity of all of them.
    ValueId vk = c.op(OpKind::KeepGrad, {vs, c.op(OpKind::Where, {keep, vs, sc(c, 0.0, vs)})});
    ValueId ones = c.op(OpKind::Cast, {keep}, Attrs{{"dtype", std::string("i64")}});
    Ints hitShape(flat.size(), 1);
    hitShape[first] = mid;
    ValueId zeroHits = c.full(0.0, TensorType::contiguous(DType::I64, hitShape));
    ValueId hits = c.op(OpKind::IndexAdd, {zeroHits, flatIdx, ones}, Attrs{{"dim", dim}});
    ValueId written = c.op(OpKind::IndexAdd, {c.full(0.0, c.type(xs)), flatIdx, vk}, Attrs{{"dim", dim}});
    res = c.op(OpKind::Where, {bin(c, OpKind::Gt, {hits, c.scalar(0, DType::I64)}), written, xs});
  }
  return reshapeTo(c, res, t.sizes);
}

ValueId embeddingBag(Builder& c, ValueId w, ValueId idx, ValueId offs, const EmbeddingBagArgs& a) {
  const int64_t mode = a.mode;
  const bool last = a.includeLastOffset;
  int64_t pad = a.paddingIdx;
  if (mode == 2) c.fail("_embedding_bag: mode='max' is not supported (sum and mean are)");
  if (mode != 0 && mode != 1) c.fail(cat("_embedding_bag: unknown mode ", mode));
  const TensorType wt = c.type(w), it = c.type(idx), ot = c.type(offs);
  if (wt.rank() != 2 || it.rank() != 1 || ot.rank() != 1) c.fail("_embedding_bag: weight must be 2-D, indices and offsets 1-D");
  if (isFloating(it.dtype) || isFloating(ot.dtype)) c.fail("_embedding_bag: indices and offsets must be integers");
  const int64_t L = it.sizes[0], D = wt.sizes[1], B = ot.sizes[0] - (last ? 1 : 0);
  if (B < 0) c.fail("_embedding_bag: include_last_offset needs at least one offset");
  if (pad < 0 && pad != -1) pad += wt.sizes[0];
  auto i64 = [&](ValueId v) { return c.type(v).dtype == DType::I64 ? v : c.op(OpKind::Cast, {v}, Attrs{{"dtype", std::string("i64")}}); };
  ValueId index = i64(idx), off = i64(offs);
  ValueId posL = iota(c, L);
  ValueId pos = reshapeTo(c, posL, {L, 1});
  ValueId starts = last ? c.op(OpKind::Slice, {off}, Attrs{{"dim", int64_t{0}}, {"start", int64_t{0}}, {"end", B}, {"step", int64_t{1}}}) : off;
  ValueId before = c.op(OpKind::Cast, {bin(c, OpKind::Le, {reshapeTo(c, starts, {1, B}), pos})}, Attrs{{"dtype", std::string("i64")}});
  ValueId bag = bin(c, OpKind::Sub, {reduceOp(c, OpKind::Sum, before, {1}, false), c.scalar(1, DType::I64)});
  ValueId valid = bin(c, OpKind::Ge, {bag, c.scalar(0, DType::I64)});
  if (last) {
    ValueId end = c.op(OpKind::Select, {off}, Attrs{{"dim", int64_t{0}}, {"index", B}});
    valid = bin(c, OpKind::LogicalAnd, {valid, bin(c, OpKind::Lt, {posL, end})});
  }
  if (pad >= 0) valid = bin(c, OpKind::LogicalAnd, {valid, bin(c, OpKind::Ne, {index, c.scalar(static_cast<double>(pad), DType::I64)})});
  ValueId safeBag = c.op(OpKind::Where, {valid, bag, c.scalar(0, DType::I64)});
  ValueId rows = c.op(OpKind::IndexSelect, {w, index}, Attrs{{"dim", int64_t{0}}});
  if (a.perSampleWeights != kNoValue) {
    if (mode != 0) c.fail("_embedding_bag: per_sample_weights needs mode='sum'");
    rows = bin(c, OpKind::Mul, {rows, reshapeTo(c, a.perSampleWeights, {L, 1})});
  }
  ValueId kept = c.op(OpKind::Where, {reshapeTo(c, valid, {L, 1}), rows, sc(c, 0.0, rows)});
  ValueId zeros = c.full(0.0, TensorType::contiguous(wt.dtype, {B, D}));
  ValueId out = c.op(OpKind::IndexAdd, {zeros, safeBag, kept}, Attrs{{"dim", int64_t{0}}});
  if (mode == 1) {
    ValueId ones = c.op(OpKind::Cast, {valid}, Attrs{{"dtype", std::string(dtypeName(wt.dtype))}});
    ValueId count = c.op(OpKind::IndexAdd, {c.full(0.0, TensorType::contiguous(wt.dtype, {B})), safeBag, ones}, Attrs{{"dim", int64_t{0}}});
    ValueId denom = c.op(OpKind::Maximum, {count, sc(c, 1.0, count)});
    out = bin(c, OpKind::Div, {out, reshapeTo(c, denom, {B, 1})});
  }
  return out;
}

namespace {

// Note [grid_sampler]: ATen's grid_sampler_2d, op for op in the input's
// dtype: each grid coordinate is unnormalized (align_corners or not),
// clipped (border) or reflected (reflection) as grid_sampler_compute_source_index
// does, then bilinear takes the four neighbours (floor, +1) weighted by the
// opposite areas and nearest the neighbour at nearbyint; a neighbour outside
// the input reads 0.  Reads are one gather per neighbour from [N, C, H*W].
// The gradient with respect to the input flows through the gathers, with
// respect to the grid through the weights (floor and round have none, and
// clipping none outside the range), as in ATen's backward.
ValueId gridSourceIndex(Builder& c, ValueId coord, int64_t size, int64_t padding, bool align) {
  const double n = static_cast<double>(size);
  ValueId one = sc(c, 1.0, coord);
  ValueId x = align ? bin(c, OpKind::Mul, {bin(c, OpKind::Div, {bin(c, OpKind::Add, {coord, one}), sc(c, 2.0, coord)}), sc(c, n - 1, coord)})
                    : bin(c, OpKind::Div, {bin(c, OpKind::Sub, {bin(c, OpKind::Mul, {bin(c, OpKind::Add, {coord, one}), sc(c, n, coord)}), one}),
                                           sc(c, 2.0, coord)});
  if (padding == 1) return clampOp(c, x, 0.0, n - 1);
  if (padding == 2) {
    // reflect_coordinates(x, twice_low, twice_high), then clip.
    const double lo2 = align ? 0.0 : -1.0, hi2 = align ? 2.0 * (n - 1) : 2.0 * n - 1;
    if (lo2 == hi2) return sc(c, 0.0, coord);
    const double mn = lo2 / 2, span = (hi2 - lo2) / 2;
    ValueId in = c.op(OpKind::Abs, {bin(c, OpKind::Sub, {x, sc(c, mn, x)})});
    ValueId extra = bin(c, OpKind::Fmod, {in, sc(c, span, in)});
    ValueId flips = c.op(OpKind::Floor, {bin(c, OpKind::Div, {in, sc(c, span, in)})});
    ValueId even = bin(c, OpKind::Eq, {bin(c, OpKind::Fmod, {flips, sc(c, 2.0, flips)}), sc(c, 0.0, flips)});
    ValueId up = bin(c, OpKind::Add, {extra, sc(c, mn, extra)});
    ValueId down = bin(c, OpKind::Add, {bin(c, OpKind::Sub, {sc(c, span, extra), extra}), sc(c, mn, extra)});
    return clampOp(c, c.op(OpKind::Where, {even, up, down}), 0.0, n - 1);
  }
  return x;
}

}  // namespace

ValueId gridSampler2d(Builder& c, ValueId x, ValueId grid, int64_t interp, int64_t padding, bool align) {
  if (interp == 2) c.fail("grid_sampler_2d: bicubic interpolation is not supported (bilinear and nearest are)");
  if (interp != 0 && interp != 1) c.fail(cat("grid_sampler_2d: unknown interpolation mode ", interp));
  if (padding < 0 || padding > 2) c.fail(cat("grid_sampler_2d: unknown padding mode ", padding));
  const TensorType t = c.type(x), gt = c.type(grid);
  if (t.rank() != 4 || gt.rank() != 4 || gt.sizes[3] != 2 || gt.sizes[0] != t.sizes[0])
    c.fail("grid_sampler_2d: input must be [N, C, H, W] and grid [N, Ho, Wo, 2]");
  if (!isFloating(t.dtype) || gt.dtype != t.dtype) c.fail("grid_sampler_2d: input and grid must have the same floating dtype");
  const int64_t N = t.sizes[0], C = t.sizes[1], H = t.sizes[2], W = t.sizes[3], P = gt.sizes[1] * gt.sizes[2];
  ValueId flat = reshapeTo(c, x, {N, C, H * W});
  ValueId gx = reshapeTo(c, c.op(OpKind::Select, {grid}, Attrs{{"dim", int64_t{3}}, {"index", int64_t{0}}}), {N, 1, P});
  ValueId gy = reshapeTo(c, c.op(OpKind::Select, {grid}, Attrs{{"dim", int64_t{3}}, {"index", int64_t{1}}}), {N, 1, P});
  ValueId ix = gridSourceIndex(c, gx, W, padding, align);
  ValueId iy = gridSourceIndex(c, gy, H, padding, align);
  // One neighbour: x[n, c, y, x] where (y, x) is inside, else 0.
  auto tap = [&](ValueId fy, ValueId fx) {
    ValueId inX = bin(c, OpKind::LogicalAnd, {bin(c, OpKind::Ge, {fx, sc(c, 0.0, fx)}), bin(c, OpKind::Le, {fx, sc(c, static_cast<double>(W - 1), fx)})});
    ValueId inY = bin(c, OpKind::LogicalAnd, {bin(c, OpKind::Ge, {fy, sc(c, 0.0, fy)}), bin(c, OpKind::Le, {fy, sc(c, static_cast<double>(H - 1), fy)})});
    ValueId inside = bin(c, OpKind::LogicalAnd, {inX, inY});
    ValueId lin = bin(c, OpKind::Add, {bin(c, OpKind::Mul, {fy, sc(c, static_cast<double>(W), fy)}), fx});
    ValueId safe = c.op(OpKind::Where, {inside, lin, sc(c, 0.0, lin)});
    ValueId idx = c.op(OpKind::Cast, {safe}, Attrs{{"dtype", std::string("i64")}});
    ValueId full = c.op(OpKind::Clone, {c.op(OpKind::Expand, {idx}, Attrs{{"size", Ints{N, C, P}}})});
    ValueId v = c.op(OpKind::Gather, {flat, full}, Attrs{{"dim", int64_t{2}}});
    return c.op(OpKind::Where, {inside, v, sc(c, 0.0, v)});
  };
  ValueId out;
  if (interp == 1) {
    ValueId rx = c.op(OpKind::Round, {ix});
    ValueId ry = c.op(OpKind::Round, {iy});
    out = tap(ry, rx);
  } else {
    ValueId x0 = c.op(OpKind::Floor, {ix});
    ValueId y0 = c.op(OpKind::Floor, {iy});
    ValueId x1 = bin(c, OpKind::Add, {x0, sc(c, 1.0, x0)});
    ValueId y1 = bin(c, OpKind::Add, {y0, sc(c, 1.0, y0)});
    ValueId wx1 = bin(c, OpKind::Sub, {ix, x0}), wx0 = bin(c, OpKind::Sub, {x1, ix});
    ValueId wy1 = bin(c, OpKind::Sub, {iy, y0}), wy0 = bin(c, OpKind::Sub, {y1, iy});
    ValueId nw = bin(c, OpKind::Mul, {tap(y0, x0), bin(c, OpKind::Mul, {wx0, wy0})});
    ValueId ne = bin(c, OpKind::Mul, {tap(y0, x1), bin(c, OpKind::Mul, {wx1, wy0})});
    ValueId sw = bin(c, OpKind::Mul, {tap(y1, x0), bin(c, OpKind::Mul, {wx0, wy1})});
    ValueId se = bin(c, OpKind::Mul, {tap(y1, x1), bin(c, OpKind::Mul, {wx1, wy1})});
    out = bin(c, OpKind::Add, {bin(c, OpKind::Add, {bin(c, OpKind::Add, {nw, ne}), sw}), se});
  }
  return reshapeTo(c, out, {N, C, gt.sizes[1], gt.sizes[2]});
}

}  // namespace aotc::decomp
