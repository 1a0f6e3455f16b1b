//===- fx/gathers.cpp - Indexing, gathers and scatters ----------------------===//
//
// embedding, index_select, gather, index.Tensor (advanced indexing), index_put,
// scatter/scatter_add/scatter_reduce, masked_scatter and embedding_bag.  index_put
// and embedding_bag are decompositions that read their FX arguments as they go
// (a screen or more each); they stay here until they are rewritten over the ops
// layer's builder with their arguments read first.
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

namespace {

/// The linear index of integer index tensors `idx` over dims of sizes `dims`,
/// negative indices wrapped as Python does.  Where any index is outside its
/// dim the result is prod(dims), itself out of range, so the indexing op's
/// bounds check reports it (Note [Index errors]) instead of another element
/// being read.
ValueId linearIndex(Converter& c, const std::vector<ValueId>& idx, const Ints& dims) {
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
  Ints bshape;          ///< the index tensors' broadcast shape
  int64_t bn = 1, mid = 1;
  ValueId flat = kNoValue;  ///< i64[bn]
};

FlatIndex flatIndex(Converter& c, const TensorType& t, const std::vector<ValueId>& idx, size_t first, const char* what) {
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

/// x[indices]: advanced indexing with integer index tensors on consecutive
/// dims (leading Nones allowed): the dims are flattened and index_selected
/// at the linear index, so the gradient is index_add's.
V indexTensor(Converter& c) {
  ValueId x = c.tensor(0, "self");
  const json* list = c.arg(1, "indices");
  if (!list || !list->is_array()) c.fail("index: indices must be a list");
  const TensorType t = c.type(x);
  size_t first = 0;
  while (first < list->size() && (*list)[first].is_null()) ++first;
  std::vector<ValueId> idx;
  for (size_t i = first; i < list->size(); ++i) {
    if ((*list)[i].is_null()) {
      bool trailing = true;
      for (size_t j = i; j < list->size(); ++j) trailing = trailing && (*list)[j].is_null();
      if (!trailing) c.fail("index: index tensors separated by None are not supported");
      break;
    }
    ValueId v = c.ref((*list)[i], 1);
    DType d = c.type(v).dtype;
    if (d == DType::Bool)
      c.fail("index with a bool mask has a data-dependent output shape, which aotc cannot compile (use torch.where)");
    if (isFloating(d)) c.fail("index: index tensors must be integers");
    idx.push_back(v);
  }
  if (idx.empty()) return {x};
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
  return {reshapeTo(c, sel, out)};
}

/// scatter(self, dim, index, src | value).
V scatterOp(Converter& c, bool value) {
  ValueId x = c.tensor(0, "self"), idx = c.tensor(2, "index");
  ValueId src;
  if (value) {
    ValueId v = c.operand(3, "value", x);
    if (c.type(v).dtype != c.type(x).dtype) v = c.op(OpKind::Cast, {v}, Attrs{{"dtype", std::string(dtypeName(c.type(x).dtype))}});
    src = c.op(OpKind::Expand, {reshapeTo(c, v, {})}, Attrs{{"size", c.type(idx).sizes}});
  } else {
    src = c.tensor(3, "src");
  }
  if (c.has(4, "reduce")) c.fail("scatter with reduce= is not supported (use scatter_add or scatter_reduce)");
  return {c.op(OpKind::Scatter, {x, idx, src}, Attrs{{"dim", dimArg(c, 1, "dim", x)}})};
}

/// scatter_reduce(self, dim, index, src, reduce, include_self=True): "sum"
/// and "mean" (ATen's mean counts self when included).
V scatterReduce(Converter& c) {
  ValueId x = c.tensor(0, "self"), idx = c.tensor(2, "index"), src = c.tensor(3, "src");
  const json* r = c.arg(4, "reduce");
  std::string red = r && r->is_string() ? r->get<std::string>() : "";
  bool self = c.boolean(5, "include_self", true);
  Attrs a{{"dim", dimArg(c, 1, "dim", x)}};
  if (red != "sum" && red != "mean") c.fail("scatter_reduce: reduce='" + red + "' is not supported yet (sum, mean are)");
  if (c.type(idx).sizes != c.type(src).sizes) c.fail("scatter_reduce: index and src must have the same shape");
  ValueId base = x;
  if (!self) base = c.op(OpKind::Scatter, {x, idx, constantLike(c, 0.0, c.type(src))}, a);
  ValueId sum = c.op(OpKind::ScatterAdd, {base, idx, src}, a);
  if (red == "sum") return {sum};
  ValueId ones = constantLike(c, 1.0, c.type(src));
  ValueId start = constantLike(c, self ? 1.0 : 0.0, c.type(x));
  ValueId count = c.op(OpKind::ScatterAdd, {start, idx, ones}, a);
  count = c.op(OpKind::Maximum, {count, sc(c, 1.0, count)});
  if (isFloating(c.type(x).dtype)) return {bin(c, OpKind::Div, {sum, count})};
  return {c.op(OpKind::DivFloor, {sum, count})};
}

/// masked_scatter(self, mask, source): the i-th True place takes source's
/// i-th element: gathered at cumsum(mask) - 1.  Eager refuses a source with
/// fewer elements than True places; here the index is clamped to stay in
/// bounds.
V maskedScatter(Converter& c) {
  ValueId x = c.tensor(0, "self"), m = c.tensor(1, "mask"), s = c.tensor(2, "source");
  if (c.type(m).dtype != DType::Bool) c.fail("masked_scatter: the mask must be bool");
  const TensorType t = c.type(x);
  ValueId mb = c.type(m).sizes == t.sizes ? m : c.op(OpKind::Expand, {m}, Attrs{{"size", t.sizes}});
  int64_t n = t.numel(), sn = c.type(s).numel();
  if (sn == 0) return {x};
  ValueId flatMask = reshapeTo(c, c.op(OpKind::Cast, {mb}, Attrs{{"dtype", std::string("i64")}}), {n});
  ValueId pos = bin(c, OpKind::Sub, {c.op(OpKind::Cumsum, {flatMask}, Attrs{{"dim", int64_t{0}}}), c.scalar(1, DType::I64)});
  ValueId lo = c.op(OpKind::Maximum, {pos, c.scalar(0, DType::I64)});
  ValueId clamped = c.op(OpKind::Minimum, {lo, c.scalar(static_cast<double>(sn - 1), DType::I64)});
  ValueId picked = c.op(OpKind::IndexSelect, {reshapeTo(c, s, {sn}), clamped}, Attrs{{"dim", int64_t{0}}});
  return {c.op(OpKind::Where, {mb, reshapeTo(c, picked, t.sizes), x})};
}

/// _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode,
/// sparse, per_sample_weights, include_last_offset, padding_idx): each
/// index's bag is the number of offsets at or before its position, less one
/// (a [L, B] comparison: static shapes whatever the offsets hold); rows are
/// summed into their bags with index_add (mean divides by the bag's count,
/// an empty bag gives 0 as in eager).  Indices before the first offset,
/// after include_last_offset's end, or equal to padding_idx take no part.
/// Only the first result is computed: the other three are eager's internal
/// buffers for its backward, and reading one is an error.
V embeddingBag(Converter& c) {
  ValueId w = c.tensor(0, "weight"), idx = c.tensor(1, "indices"), offs = c.tensor(2, "offsets");
  if (c.boolean(3, "scale_grad_by_freq", false)) c.fail("_embedding_bag: scale_grad_by_freq is not supported");
  int64_t mode = c.integer(4, "mode", 0);
  if (mode == 2) c.fail("_embedding_bag: mode='max' is not supported (sum and mean are)");
  if (mode != 0 && mode != 1) c.fail(cat("_embedding_bag: unknown mode ", mode));
  bool last = c.boolean(7, "include_last_offset", false);
  int64_t pad = c.has(8, "padding_idx") ? c.integer(8, "padding_idx") : -1;
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
  if (c.has(6, "per_sample_weights")) {
    if (mode != 0) c.fail("_embedding_bag: per_sample_weights needs mode='sum'");
    ValueId psw = c.tensor(6, "per_sample_weights");
    rows = bin(c, OpKind::Mul, {rows, reshapeTo(c, psw, {L, 1})});
  }
  ValueId kept = c.op(OpKind::Where, {reshapeTo(c, valid, {L, 1}), rows, sc(c, 0.0, rows)});
  ValueId zeros = constantLike(c, 0.0, TensorType::contiguous(wt.dtype, {B, D}));
  ValueId out = c.op(OpKind::IndexAdd, {zeros, safeBag, kept}, Attrs{{"dim", int64_t{0}}});
  if (mode == 1) {
    ValueId ones = c.op(OpKind::Cast, {valid}, Attrs{{"dtype", std::string(dtypeName(wt.dtype))}});
    ValueId count = c.op(OpKind::IndexAdd, {constantLike(c, 0.0, TensorType::contiguous(wt.dtype, {B})), safeBag, ones}, Attrs{{"dim", int64_t{0}}});
    ValueId denom = c.op(OpKind::Maximum, {count, sc(c, 1.0, count)});
    out = bin(c, OpKind::Div, {out, reshapeTo(c, denom, {B, 1})});
  }
  return {out, kNoValue, kNoValue, kNoValue};
}

/// index_put(self, indices, values, accumulate): integer indices as in
/// indexTensor, written through index_add on the flattened indexed dims.
/// Without accumulate, later duplicates win (eager's CPU behaviour): a
/// value is dropped when a later index equals its own, found with a
/// pairwise comparison, so at most 4096 indices (the values' gradient is
/// still grad[indices] for each, as eager's).  A bool mask with one value
/// is where(mask, value, self).
V indexPut(Converter& c) {
  ValueId x = c.tensor(0, "self");
  const json* list = c.arg(1, "indices");
  if (!list || !list->is_array()) c.fail("index_put: indices must be a list");
  ValueId v = c.tensor(2, "values");
  bool acc = c.boolean(3, "accumulate", false);
  const TensorType t = c.type(x);
  if (c.type(v).dtype != t.dtype) v = c.op(OpKind::Cast, {v}, Attrs{{"dtype", std::string(dtypeName(t.dtype))}});
  // x[mask] = scalar.
  if (list->size() == 1 && !(*list)[0].is_null() && c.type(c.ref((*list)[0], 1)).dtype == DType::Bool) {
    ValueId m = c.ref((*list)[0], 1);
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
    return {c.op(OpKind::Where, {mm, v0, x})};
  }
  size_t first = 0;
  while (first < list->size() && (*list)[first].is_null()) ++first;
  std::vector<ValueId> idx;
  for (size_t i = first; i < list->size(); ++i) {
    if ((*list)[i].is_null()) c.fail("index_put: index tensors separated by None are not supported");
    ValueId iv = c.ref((*list)[i], 1);
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
    ValueId zeroHits = constantLike(c, 0.0, TensorType::contiguous(DType::I64, hitShape));
    ValueId hits = c.op(OpKind::IndexAdd, {zeroHits, flatIdx, ones}, Attrs{{"dim", dim}});
    ValueId written = c.op(OpKind::IndexAdd, {constantLike(c, 0.0, c.type(xs)), flatIdx, vk}, Attrs{{"dim", dim}});
    res = c.op(OpKind::Where, {bin(c, OpKind::Gt, {hits, c.scalar(0, DType::I64)}), written, xs});
  }
  return {reshapeTo(c, res, t.sizes)};
}

}  // namespace

Entries gathersConverters() {
  return {
    {"aten.embedding.default",
     [](Converter& c) -> V {
       ValueId w = c.tensor(0, "weight"), idx = c.tensor(1, "indices");
       Ints out = c.type(idx).sizes;
       out.push_back(c.type(w).sizes[1]);
       ValueId flat = c.op(OpKind::View, {c.type(idx).isContiguous() ? idx : c.op(OpKind::Clone, {idx})}, Attrs{{"size", Ints{-1}}});
       flat = c.op(OpKind::View, {flat}, Attrs{{"size", Ints{c.type(idx).numel()}}});
       return {c.op(OpKind::View, {c.op(OpKind::IndexSelect, {w, flat}, Attrs{{"dim", int64_t{0}}})}, Attrs{{"size", out}})};
     }},
    {"aten.index_select.default",
     [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {c.op(OpKind::IndexSelect, {x, c.tensor(2, "index")}, Attrs{{"dim", dimArg(c, 1, "dim", x)}})}; }},
    {"aten.gather.default",
     [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {c.op(OpKind::Gather, {x, c.tensor(2, "index")}, Attrs{{"dim", dimArg(c, 1, "dim", x)}})}; }},
    {"aten.scatter_add.default",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       return {c.op(OpKind::ScatterAdd, {x, c.tensor(2, "index"), c.tensor(3, "src")}, Attrs{{"dim", dimArg(c, 1, "dim", x)}})};
     }},
    {"aten.index_add.default",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       ValueId src = c.scaled(c.tensor(3, "source"), c.number(4, "alpha", 1.0));
       return {c.op(OpKind::IndexAdd, {x, c.tensor(2, "index"), src}, Attrs{{"dim", dimArg(c, 1, "dim", x)}})};
     }},
    {"aten.index.Tensor", indexTensor},
    {"aten.index_put.default", indexPut},
    {"aten._index_put_impl.default", indexPut},
    {"aten.scatter.src", [](Converter& c) { return scatterOp(c, false); }},
    {"aten.scatter.value", [](Converter& c) { return scatterOp(c, true); }},
    {"aten.scatter_reduce.two", scatterReduce},
    {"aten.masked_scatter.default", maskedScatter},
    {"aten._embedding_bag.default", embeddingBag},
    {"aten._embedding_bag_forward_only.default", embeddingBag},
  };
}

}  // namespace aotc::fx
