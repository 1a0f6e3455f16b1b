//===- fx/attention.cpp - Attention and recurrent cells ----------------------===//
//
// scaled_dot_product_attention and the fused kernels PyTorch 2.x routes it
// to (the CPU flash kernel a CPU trace records; the flash, memory-efficient
// and cuDNN kernels of a GPU trace), all as one decomposition: matmul,
// scale, masks, safe softmax, matmul (decomp::attention, Note [Norms, scans,
// adaptive max pooling and attention] in src/ops/decompose.cpp), the
// pattern the code generator can fuse.  Dropout inside a fused kernel is
// refused by name (2.x's math path spells training dropout as bernoulli_,
// which converts); the kernels' RNG state and debug results are internal
// buffers of their backward (kNoValue: reading one is refused).  Recurrent
// layers arrive as cells: the exporter traces with PyTorch's composite
// kernels (Note [Composite kernels while tracing] in tools/fx_export.py),
// which on a GPU still fuse each cell's pointwise part
// (_thnn_fused_lstm_cell, _thnn_fused_gru_cell): those are pointwise here.
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include <algorithm>

#include "converter.h"

namespace aotc::fx {

namespace {

std::optional<double> optScale(Converter& c, size_t i) {
  if (!c.has(i, "scale")) return std::nullopt;
  return c.number(i, "scale");
}

void noDropout(Converter& c, size_t i, const char* op) {
  if (c.number(i, "dropout_p", 0.0) != 0.0)
    c.fail(cat(op, " with dropout_p > 0 is not supported (the fused kernel's random stream cannot be reproduced)"));
}

std::optional<ValueId> optMask(Converter& c, size_t i, const char* kw) {
  if (!c.has(i, kw)) return std::nullopt;
  return c.tensor(i, kw);
}

/// is_causal of a GPU kernel whose causal alignment (top-left as
/// scaled_dot_product_attention's, or flash-attn's bottom-right) differs when
/// L != S: PyTorch routes only square causal attention to it; refused otherwise.
bool causalSquare(Converter& c, size_t i, ValueId q, ValueId k) {
  if (!c.boolean(i, "is_causal", false)) return false;
  const Ints qs = c.type(q).sizes, ks = c.type(k).sizes;
  if (qs.size() < 2 || ks.size() < 2 || qs[qs.size() - 2] != ks[ks.size() - 2])
    c.fail("is_causal with query and key of different lengths is not supported for this kernel (its causal alignment differs)");
  return true;
}

/// Result `i` of a fused kernel in the dim order the graph recorded for it:
/// the kernels write their output in the query's order (a permuted layout
/// when the query is a transposed view, as in nn.MultiheadAttention), and
/// the program's later views rely on those strides.  x is contiguous; the
/// result is the permutation of a contiguous tensor that has them.
ValueId recordedOrder(Converter& c, ValueId x, size_t i) {
  const json& n = c.node();
  if (!n.contains("meta") || !n["meta"].is_array() || n["meta"].size() <= i) return x;
  const json& m = n["meta"][i];
  if (!m.is_object() || !m.contains("stride") || !m["stride"].is_array()) return x;
  Ints want;
  for (const json& v : m["stride"]) {
    if (!v.is_number_integer()) return x;
    want.push_back(v.get<int64_t>());
  }
  const Ints sizes = c.type(x).sizes;
  if (want.size() != sizes.size()) return x;
  Ints perm(sizes.size());
  for (size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<int64_t>(d);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return want[static_cast<size_t>(a)] > want[static_cast<size_t>(b)]; });
  bool identity = true;
  for (size_t d = 0; d < perm.size(); ++d) identity = identity && perm[d] == static_cast<int64_t>(d);
  if (identity) return x;
  Ints inverse(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) inverse[static_cast<size_t>(perm[d])] = static_cast<int64_t>(d);
  ValueId dense = c.op(OpKind::Clone, {c.op(OpKind::Permute, {x}, Attrs{{"dims", perm}})});
  return c.op(OpKind::Permute, {dense}, Attrs{{"dims", inverse}});
}

/// scaled_dot_product_attention(query, key, value, attn_mask=None,
/// dropout_p=0., is_causal=False, *, scale=None, enable_gqa=False).
V sdpa(Converter& c) {
  ValueId q = c.tensor(0, "query"), k = c.tensor(1, "key"), v = c.tensor(2, "value");
  noDropout(c, 4, "scaled_dot_product_attention");
  const Ints qs = c.type(q).sizes, ks = c.type(k).sizes;
  if (!c.boolean(7, "enable_gqa", false) && qs.size() >= 3 && ks.size() == qs.size() && ks[ks.size() - 3] != qs[qs.size() - 3] &&
      ks[ks.size() - 3] != 1)
    c.fail("scaled_dot_product_attention: key/value heads differ from query heads without enable_gqa=True");
  return {attention(c, q, k, v, optMask(c, 3, "attn_mask"), c.boolean(5, "is_causal", false), optScale(c, 6)).out};
}

/// _scaled_dot_product_flash_attention_for_cpu(query, key, value,
/// dropout_p=0., is_causal=False, *, attn_mask=None, scale=None)
/// -> (output, logsumexp); the CPU kernel takes grouped-query heads as they are.
V flashCpu(Converter& c) {
  ValueId q = c.tensor(0, "query"), k = c.tensor(1, "key"), v = c.tensor(2, "value");
  noDropout(c, 3, "_scaled_dot_product_flash_attention_for_cpu");
  Attention a = attention(c, q, k, v, optMask(c, 5, "attn_mask"), c.boolean(4, "is_causal", false), optScale(c, 6));
  return {recordedOrder(c, a.out, 0), recordedOrder(c, a.logsumexp, 1)};
}

/// The GPU kernels: only the output is computed; the rest (logsumexp in the
/// kernel's own padded layout, sequence offsets, RNG state, debug mask) are
/// buffers of their backward.
/// _scaled_dot_product_flash_attention(query, key, value, dropout_p=0.,
/// is_causal=False, return_debug_mask=False, *, scale=None) -> 9 results.
V flashCuda(Converter& c) {
  ValueId q = c.tensor(0, "query"), k = c.tensor(1, "key"), v = c.tensor(2, "value");
  noDropout(c, 3, "_scaled_dot_product_flash_attention");
  c.boolean(5, "return_debug_mask", false);  // a debug buffer either way
  ValueId out = attention(c, q, k, v, std::nullopt, causalSquare(c, 4, q, k), optScale(c, 6)).out;
  return {recordedOrder(c, out, 0), kNoValue, kNoValue, kNoValue, kNoValue, kNoValue, kNoValue, kNoValue, kNoValue};
}

/// _scaled_dot_product_efficient_attention(query, key, value, attn_bias,
/// compute_log_sumexp, dropout_p=0., is_causal=False, *, scale=None) -> 4
/// results, and _scaled_dot_product_cudnn_attention(..., is_causal=False,
/// return_debug_mask=False, *, scale=None) -> 9.
V biasedCuda(Converter& c, bool cudnn) {
  ValueId q = c.tensor(0, "query"), k = c.tensor(1, "key"), v = c.tensor(2, "value");
  noDropout(c, 5, cudnn ? "_scaled_dot_product_cudnn_attention" : "_scaled_dot_product_efficient_attention");
  c.boolean(4, "compute_log_sumexp", false);  // a buffer of the backward either way
  if (cudnn) c.boolean(7, "return_debug_mask", false);
  bool causal = cudnn ? causalSquare(c, 6, q, k) : c.boolean(6, "is_causal", false);
  ValueId out = attention(c, q, k, v, optMask(c, 3, "attn_bias"), causal, optScale(c, cudnn ? 8 : 7)).out;
  V r(cudnn ? 9 : 4, kNoValue);
  r[0] = recordedOrder(c, out, 0);
  return r;
}

/// One side's gates of a fused cell (input or hidden, plus its bias when
/// given) split into `n` chunks along dim 1; the cells add the two sides
/// (the GRU's candidate gate scales the hidden side first).
V cellGates(Converter& c, ValueId gates, size_t biasArg, const char* kw, int64_t n) {
  if (c.has(biasArg, kw)) gates = bin(c, OpKind::Add, {gates, c.tensor(biasArg, kw)});
  const Ints s = c.type(gates).sizes;
  if (s.size() != 2 || s[1] % n) c.fail(cat("fused RNN cell: gates must be 2-D [batch, ", n, " * hidden]"));
  return splitSizes(c, gates, 1, Ints(static_cast<size_t>(n), s[1] / n));
}

/// _thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None,
/// hidden_bias=None) -> (hy, cy, workspace): gates i, f, g, o.
V fusedLstmCell(Converter& c) {
  ValueId ig = c.tensor(0, "input_gates"), hg = c.tensor(1, "hidden_gates"), cx = c.tensor(2, "cx");
  V a = cellGates(c, ig, 3, "input_bias", 4), b = cellGates(c, hg, 4, "hidden_bias", 4);
  auto gate = [&](size_t i) { return bin(c, OpKind::Add, {a[i], b[i]}); };
  ValueId i = c.op(OpKind::Sigmoid, {gate(0)}), f = c.op(OpKind::Sigmoid, {gate(1)});
  ValueId g = c.op(OpKind::Tanh, {gate(2)}), o = c.op(OpKind::Sigmoid, {gate(3)});
  ValueId cy = bin(c, OpKind::Add, {bin(c, OpKind::Mul, {f, cx}), bin(c, OpKind::Mul, {i, g})});
  ValueId hy = bin(c, OpKind::Mul, {o, c.op(OpKind::Tanh, {cy})});
  return {hy, cy, kNoValue};
}

/// _thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None,
/// hidden_bias=None) -> (hy, workspace): r = sigmoid(i_r + h_r),
/// z = sigmoid(i_z + h_z), n = tanh(i_n + r * h_n), hy = n + z * (hx - n).
V fusedGruCell(Converter& c) {
  ValueId ig = c.tensor(0, "input_gates"), hg = c.tensor(1, "hidden_gates"), hx = c.tensor(2, "hx");
  V a = cellGates(c, ig, 3, "input_bias", 3), b = cellGates(c, hg, 4, "hidden_bias", 3);
  ValueId r = c.op(OpKind::Sigmoid, {bin(c, OpKind::Add, {a[0], b[0]})});
  ValueId z = c.op(OpKind::Sigmoid, {bin(c, OpKind::Add, {a[1], b[1]})});
  ValueId n = c.op(OpKind::Tanh, {bin(c, OpKind::Add, {a[2], bin(c, OpKind::Mul, {r, b[2]})})});
  ValueId hy = bin(c, OpKind::Add, {n, bin(c, OpKind::Mul, {z, bin(c, OpKind::Sub, {hx, n})})});
  return {hy, kNoValue};
}

}  // namespace

Entries attentionConverters() {
  return {
    {"aten.scaled_dot_product_attention.default", sdpa},
    {"aten._scaled_dot_product_flash_attention_for_cpu.default", flashCpu},
    {"aten._scaled_dot_product_flash_attention.default", flashCuda},
    {"aten._scaled_dot_product_efficient_attention.default", [](Converter& c) { return biasedCuda(c, false); }},
    {"aten._scaled_dot_product_cudnn_attention.default", [](Converter& c) { return biasedCuda(c, true); }},
    {"aten._thnn_fused_lstm_cell.default", fusedLstmCell},
    {"aten._thnn_fused_gru_cell.default", fusedGruCell},
  };
}

}  // namespace aotc::fx
