//===- fx/gathers.cpp - Indexing, gathers and scatters ----------------------===//
//
// embedding, index_select, gather, index.Tensor (advanced indexing), index_put,
// scatter/scatter_add/scatter_reduce, masked_scatter and embedding_bag.  The
// long ones (advanced indexing, index_put, embedding_bag) are decompositions in
// src/ops/decompose_gathers.cpp: their entries read the arguments and call them.
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

namespace {

/// An index list argument (`Tensor?[] indices`): one value per entry,
/// kNoValue for None.
std::vector<ValueId> indexList(Converter& c, const char* op) {
  const json* list = c.arg(1, "indices");
  if (!list || !list->is_array()) c.fail(cat(op, ": indices must be a list"));
  std::vector<ValueId> v;
  for (const json& e : *list) v.push_back(e.is_null() ? kNoValue : c.ref(e, 1));
  return v;
}

/// index.Tensor(self, indices): decomp::indexTensor.
V convertIndex(Converter& c) {
  ValueId x = c.tensor(0, "self");
  return {decomp::indexTensor(c, x, indexList(c, "index"))};
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
/// sparse, per_sample_weights, include_last_offset, padding_idx):
/// decomp::embeddingBag.  Only the first result is computed: the other three
/// are eager's internal buffers for its backward, and reading one is an
/// error.
V convertEmbeddingBag(Converter& c) {
  ValueId w = c.tensor(0, "weight"), idx = c.tensor(1, "indices"), offs = c.tensor(2, "offsets");
  if (c.boolean(3, "scale_grad_by_freq", false)) c.fail("_embedding_bag: scale_grad_by_freq is not supported");
  decomp::EmbeddingBagArgs a;
  a.mode = c.integer(4, "mode", 0);
  a.includeLastOffset = c.boolean(7, "include_last_offset", false);
  a.paddingIdx = c.has(8, "padding_idx") ? c.integer(8, "padding_idx") : -1;
  if (c.has(6, "per_sample_weights")) a.perSampleWeights = c.tensor(6, "per_sample_weights");
  return {decomp::embeddingBag(c, w, idx, offs, a), kNoValue, kNoValue, kNoValue};
}

/// index_put(self, indices, values, accumulate): decomp::indexPut.
V convertIndexPut(Converter& c) {
  ValueId x = c.tensor(0, "self");
  std::vector<ValueId> indices = indexList(c, "index_put");
  ValueId v = c.tensor(2, "values");
  return {decomp::indexPut(c, x, indices, v, c.boolean(3, "accumulate", false))};
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
    {"aten.index.Tensor", convertIndex},
    {"aten.index_put.default", convertIndexPut},
    {"aten._index_put_impl.default",
     [](Converter& c) {
       c.ignore(4, "unsafe");  // skips eager's bounds checks; aotc's index_add always checks
       return convertIndexPut(c);
     }},
    {"aten.scatter.src", [](Converter& c) { return scatterOp(c, false); }},
    {"aten.scatter.value", [](Converter& c) { return scatterOp(c, true); }},
    {"aten.scatter_reduce.two", scatterReduce},
    {"aten.masked_scatter.default", maskedScatter},
    {"aten._embedding_bag.default", convertEmbeddingBag},
    {"aten._embedding_bag_forward_only.default", convertEmbeddingBag},
  };
}

}  // namespace aotc::fx
