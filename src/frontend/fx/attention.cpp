//===- fx/attention.cpp - Attention -----------------------------------------===//
//
// scaled_dot_product_attention as matmul, softmax and masks.  (FX graphs from
// aot_autograd carry no RNN ops: they arrive decomposed.)
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

namespace {

/// scaled_dot_product_attention, math form: softmax(q k^T * scale + mask) v,
/// with the leading dims flattened into one batch dim for bmm.
V sdpa(Converter& c) {
  ValueId q = c.tensor(0, "query"), k = c.tensor(1, "key"), v = c.tensor(2, "value");
  const Ints qs = c.type(q).sizes, ks = c.type(k).sizes, vs = c.type(v).sizes;
  if (qs.size() < 3 || ks.size() != qs.size() || vs.size() != qs.size()) c.fail("scaled_dot_product_attention expects q, k, v of the same rank >= 3");
  bool isCausal = c.boolean(5, "is_causal", false);
  if (c.has(4, "dropout_p") && c.number(4, "dropout_p") != 0.0) c.fail("scaled_dot_product_attention with dropout_p > 0 is not supported yet");
  int64_t L = qs[qs.size() - 2], E = qs.back(), S = ks[ks.size() - 2], Ev = vs.back();
  double scale = c.has(6, "scale") ? c.number(6, "scale") : 1.0 / std::sqrt(static_cast<double>(E));
  ValueId q3 = reshapeTo(c, q, {-1, L, E}), k3 = reshapeTo(c, k, {-1, S, E}), v3 = reshapeTo(c, v, {-1, S, Ev});
  ValueId scores = bin(c, OpKind::Mul, {c.op(OpKind::Bmm, {q3, c.op(OpKind::Transpose, {k3}, Attrs{{"dim0", int64_t{1}}, {"dim1", int64_t{2}}})}), sc(c, scale, q)});
  ValueId ninf = sc(c, -INFINITY, q);
  if (isCausal) {
    ValueId rows = c.op(OpKind::View, {iota(c, L)},
                        Attrs{{"size", Ints{L, 1}}});
    ValueId cols = iota(c, S);
    scores = c.op(OpKind::Where, {bin(c, OpKind::Ge, {rows, cols}), scores, ninf});
  }
  if (c.has(3, "attn_mask")) {
    ValueId m = c.tensor(3, "attn_mask");
    Ints ms = c.type(m).sizes;
    // Broadcast the mask over the flattened batch: keep its last two dims.
    if (ms.size() > 2) m = reshapeTo(c, c.op(OpKind::Expand, {m}, Attrs{{"size", Ints(qs.begin(), qs.end() - 1)}}), {-1, L, S});
    scores = c.type(m).dtype == DType::Bool ? c.op(OpKind::Where, {m, scores, ninf}) : bin(c, OpKind::Add, {scores, m});
  }
  ValueId attn = softmaxLike(c, scores, 2, false);
  Ints out(qs.begin(), qs.end() - 1);
  out.push_back(Ev);
  return {reshapeTo(c, c.op(OpKind::Bmm, {attn, v3}), out)};
}

}  // namespace

Entries attentionConverters() {
  return {
    {"aten.scaled_dot_product_attention.default", sdpa},
  };
}

}  // namespace aotc::fx
