//===- onnx/attention.cpp - Attention (opsets 23 to 28) ----------------------===//
//
// Attention as ONNX's reference computes it: 3-D inputs split into heads by
// q_num_heads / kv_num_heads, grouped-query heads repeated, past key and value
// concatenated before the new ones (present_key / present_value), the scale
// applied as sqrt(scale) to both Q and K, softcap, a boolean or additive mask
// (padded to the key length), causal masking aligned to the bottom right (the
// past's length, or per batch nonpad_kv_seqlen minus the query length), the
// sliding window (left/right_window_size), nonpad_kv_seqlen's padding mask,
// and a softmax that gives 0 on fully masked rows.  qk_matmul_output_mode
// picks the fourth output.  RotaryEmbedding (23) rotates features by cos/sin
// caches.  CausalConvWithState and LinearAttention (27) are the reference's
// recurrences: a depthwise causal convolution after a carried state, and a
// linear attention state updated token by token (unrolled).
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

namespace {

ValueId heads(Node& c, ValueId x, int64_t n) {  // [B, S, n*D] -> [B, n, S, D]
  const Ints s = c.type(x).sizes;
  if (n <= 0 || s[2] % n) c.fail(cat("Attention: a hidden size of ", s[2], " does not split into ", n, " heads"));
  return c.op(OpKind::Transpose, {c.reshape(x, {s[0], s[1], n, s[2] / n})}, Attrs{{"dim0", int64_t{1}}, {"dim1", int64_t{2}}});
}

/// 0 where `allowed`, -inf elsewhere, in dtype d.
ValueId biasOf(Node& c, ValueId allowed, DType d) {
  return c.op(OpKind::Where, {allowed, c.scalar(0.0, d), c.scalar(-HUGE_VAL, d)});
}

Outs attentionOp(Node& c) {
  ValueId q = c.in(0), k = c.in(1), v = c.in(2);
  int64_t rank = c.type(q).rank();
  if (rank != 3 && rank != 4) c.fail("Attention: Q must have 3 or 4 dims");
  if (c.type(k).rank() != rank || c.type(v).rank() != rank) c.fail("Attention: Q, K and V must have one rank");
  DType dt = c.type(q).dtype;
  if (!isFloating(dt)) c.fail("Attention: Q must be floating-point");
  if (rank == 3) {
    q = heads(c, q, c.i("q_num_heads"));
    k = heads(c, k, c.i("kv_num_heads"));
    v = heads(c, v, c.i("kv_num_heads"));
  }
  if (c.has(4) != c.has(5)) c.fail("Attention: past_key and past_value must be given together");
  if (c.has(4)) {
    k = c.op(OpKind::Cat, {c.in(4), k}, Attrs{{"dim", int64_t{2}}});
    v = c.op(OpKind::Cat, {c.in(5), v}, Attrs{{"dim", int64_t{2}}});
  }
  ValueId presentK = k, presentV = v;
  const Ints qs = c.type(q).sizes, ks = c.type(k).sizes, vs = c.type(v).sizes;
  int64_t B = qs[0], hq = qs[1], S = qs[2], hk = ks[1], L = ks[2];
  if (ks[0] != B || vs[0] != B || vs[1] != hk || vs[2] != L || ks[3] != qs[3]) c.fail("Attention: Q, K and V disagree in their batch, heads, length or head size");
  if (hq != hk) {
    if (hk <= 0 || hq % hk) c.fail(cat("Attention: ", hq, " query heads do not group over ", hk, " key heads"));
    int64_t rep = hq / hk;  // np.repeat along the heads: each key head rep times in a row
    auto repeat = [&](ValueId x) {
      const Ints s = c.type(x).sizes;
      ValueId e = c.expand(c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{2}}}), {s[0], s[1], rep, s[2], s[3]});
      return c.reshape(c.contiguous(e), {s[0], s[1] * rep, s[2], s[3]});
    };
    k = repeat(k);
    v = repeat(v);
  }
  double scale = c.hasAttr("scale") ? c.f("scale", 0) : 1.0 / std::sqrt(static_cast<double>(qs[3]));
  double rs = roundTo(dt, std::sqrt(scale));
  ValueId kt = c.op(OpKind::Transpose, {c.mul(k, c.scalar(rs, dt))}, Attrs{{"dim0", int64_t{2}}, {"dim1", int64_t{3}}});
  ValueId qk = matmul(c, c.mul(q, c.scalar(rs, dt)), kt);  // [B, H, S, L]
  double softcap = c.f("softcap", 0.0);
  if (softcap > 0) {
    ValueId capped = c.op(OpKind::Tanh, {c.div(qk, c.scalar(softcap, dt))});
    qk = c.mul(capped, c.scalar(softcap, dt));
  }

  // The bias: mask, causal, window, padding.
  ValueId bias = kNoValue;
  auto addBias = [&](ValueId b) { bias = bias == kNoValue ? b : c.add(bias, b); };
  bool causal = c.i("is_causal", 0) != 0;
  int64_t left = c.i("left_window_size", -1), right = c.i("right_window_size", -1);
  if (c.has(3)) {
    ValueId m = c.in(3);
    Ints ms = c.type(m).sizes;
    if (ms.empty() || ms.back() > L) c.fail("Attention: attn_mask's last dim is longer than the keys");
    bool boolean = c.type(m).dtype == DType::Bool;
    if (ms.back() < L) {
      ValueId zero = boolean ? m : c.cast(m, dt);
      Ints p(2 * ms.size(), 0);
      p[1] = L - ms.back();  // the last dim's end (the IR's pad lists dims last first)
      m = c.op(OpKind::Pad, {boolean ? c.cast(zero, DType::U8) : zero}, Attrs{{"pad", p}, {"value", boolean ? 0.0 : -HUGE_VAL}});
      if (boolean) m = c.cast(m, DType::Bool);
    }
    addBias(boolean ? biasOf(c, m, dt) : c.cast(m, dt));
  }
  ValueId nonpad = c.has(6) ? c.cast(c.in(6), DType::I64) : kNoValue;
  if (nonpad != kNoValue && c.has(4)) c.fail("Attention: nonpad_kv_seqlen with past_key is not allowed");
  if (causal || left >= 0 || right >= 0) {
    // D[i, j] = i + offset - j: the offset is the past's length, or per batch nonpad - S.
    HostTensor d = HostTensor::zeros(DType::I64, {S, L});
    int64_t off = c.has(4) ? c.type(c.in(4)).sizes[2] : 0;
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < L; ++j) d.data[static_cast<size_t>(i * L + j)] = static_cast<double>(i + (nonpad != kNoValue ? 0 : off) - j);
    ValueId D = c.constant(d);
    if (nonpad != kNoValue) {
      ValueId d4 = c.reshape(D, {1, 1, S, L});
      ValueId shift = c.reshape(c.sub(nonpad, c.scalar(static_cast<double>(S), DType::I64)), {B, 1, 1, 1});
      D = c.add(d4, shift);
    }
    ValueId zero = c.scalar(0, DType::I64);
    if (causal) addBias(biasOf(c, bin(c, OpKind::Ge, {D, zero}), dt));
    if (left >= 0) addBias(biasOf(c, bin(c, OpKind::Le, {D, c.scalar(static_cast<double>(left), DType::I64)}), dt));
    if (right >= 0) addBias(biasOf(c, bin(c, OpKind::Ge, {D, c.scalar(static_cast<double>(-right), DType::I64)}), dt));
  }
  if (nonpad != kNoValue) {
    ValueId inside = bin(c, OpKind::Lt, {c.reshape(iota(c, L), {1, 1, 1, L}), c.reshape(nonpad, {B, 1, 1, 1})});
    addBias(biasOf(c, inside, dt));
  }
  ValueId withBias = bias == kNoValue ? qk : c.add(qk, bias);
  int64_t mode = c.i("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) c.fail(cat("Attention: qk_matmul_output_mode ", mode, " is not supported"));
  DType sp = dt;
  if (c.hasAttr("softmax_precision")) {
    auto d = dtypeOfOnnx(static_cast<int>(c.i("softmax_precision")));
    if (!d || !isFloating(*d)) c.fail("Attention: softmax_precision must be a floating-point type aotc has");
    sp = *d;
  }
  ValueId p = c.cast(safeSoftmax(c, c.cast(withBias, sp), 3), dt);
  ValueId y = matmul(c, p, v);  // [B, H, S, Dv]
  if (rank == 3) {
    const Ints ys = c.type(y).sizes;
    y = c.reshape(c.contiguous(c.op(OpKind::Transpose, {y}, Attrs{{"dim0", int64_t{1}}, {"dim1", int64_t{2}}})), {ys[0], ys[2], ys[1] * ys[3]});
  }
  ValueId qkOut = mode == 2 ? withBias : mode == 3 ? p : qk;
  return {y, presentK, presentV, qkOut};
}

}  // namespace

namespace {

/// RotaryEmbedding (23), as ONNX's reference: X [B, H, S, D] or [B, S, H*D]
/// (num_heads), its first rotary_embedding_dim features rotated by the cos
/// and sin caches ([B, S, d/2], or [P, d/2] rows picked by position_ids),
/// as halves or interleaved pairs; the other features kept.
Outs rotaryEmbeddingOp(Node& c) {
  ValueId x = c.in(0);
  const Ints in = c.type(x).sizes;
  int64_t rank = c.type(x).rank();
  if (rank != 3 && rank != 4) c.fail("RotaryEmbedding: the input must have 3 or 4 dims");
  if (!isFloating(c.type(x).dtype)) c.fail("RotaryEmbedding: the input must be floating-point");
  auto slice = [&](ValueId v, int64_t dim, int64_t b, int64_t e, int64_t st) {
    return c.op(OpKind::Slice, {v}, Attrs{{"dim", dim}, {"start", b}, {"end", e}, {"step", st}});
  };
  if (rank == 4) {
    x = c.op(OpKind::Transpose, {x}, Attrs{{"dim0", int64_t{1}}, {"dim1", int64_t{2}}});  // [B, S, H, D]
  } else {
    int64_t nh = c.i("num_heads", 0);
    if (nh <= 0 || in[2] % nh) c.fail(cat("RotaryEmbedding: a 3-D input needs num_heads dividing its hidden size ", in[2]));
    x = c.reshape(x, {in[0], in[1], nh, in[2] / nh});
  }
  const Ints s = c.type(x).sizes;
  int64_t B = s[0], S = s[1], D = s[3];
  int64_t rd = c.i("rotary_embedding_dim", 0);
  if (rd == 0) rd = D;
  if (rd < 0 || rd > D || rd % 2) c.fail(cat("RotaryEmbedding: rotary_embedding_dim ", rd, " must be even and at most the head size ", D));
  int64_t half = rd / 2;
  auto cache = [&](size_t i) {
    ValueId t = c.in(i);
    if (c.type(t).dtype != c.type(x).dtype) c.fail("RotaryEmbedding: the caches must have the input's dtype");
    const Ints cs = c.type(t).sizes;
    if (c.has(3)) {
      if (cs.size() != 2 || cs[1] != half) c.fail(cat("RotaryEmbedding: with position_ids a cache must be [positions, ", half, "]"));
      ValueId ids = c.cast(c.in(3), DType::I64);
      if (c.type(ids).sizes != Ints{B, S}) c.fail("RotaryEmbedding: position_ids must be [batch, sequence]");
      t = c.op(OpKind::IndexSelect, {t, wrapNegative(c, c.reshape(ids, {B * S}), cs[0])}, Attrs{{"dim", int64_t{0}}});
    } else if (cs != Ints{B, S, half}) {
      c.fail(cat("RotaryEmbedding: without position_ids a cache must be [", B, ", ", S, ", ", half, "]"));
    }
    return c.reshape(t, {B, S, 1, half});
  };
  ValueId cosv = cache(1), sinv = cache(2);
  ValueId xr = rd < D ? slice(x, 3, 0, rd, 1) : x;
  bool inter = c.i("interleaved", 0) != 0;
  ValueId x1 = inter ? slice(xr, 3, 0, rd, 2) : slice(xr, 3, 0, half, 1);
  ValueId x2 = inter ? slice(xr, 3, 1, rd, 2) : slice(xr, 3, half, rd, 1);
  ValueId cx1 = c.mul(cosv, x1);
  ValueId sx2 = c.mul(sinv, x2);
  ValueId re = c.sub(cx1, sx2);
  ValueId sx1 = c.mul(sinv, x1);
  ValueId cx2 = c.mul(cosv, x2);
  ValueId im = c.add(sx1, cx2);
  ValueId rot = inter ? c.reshape(c.op(OpKind::Cat, {c.op(OpKind::Unsqueeze, {re}, Attrs{{"dim", int64_t{4}}}),
                                                     c.op(OpKind::Unsqueeze, {im}, Attrs{{"dim", int64_t{4}}})},
                                       Attrs{{"dim", int64_t{4}}}),
                                 {B, S, s[2], rd})
                      : c.op(OpKind::Cat, {re, im}, Attrs{{"dim", int64_t{3}}});
  ValueId y = rd < D ? c.op(OpKind::Cat, {rot, slice(x, 3, rd, D, 1)}, Attrs{{"dim", int64_t{3}}}) : rot;
  if (rank == 4) return {c.op(OpKind::Transpose, {y}, Attrs{{"dim0", int64_t{1}}, {"dim1", int64_t{2}}})};
  return {c.reshape(y, in)};
}

/// CausalConvWithState (27), as ONNX's reference: the past state (zeros
/// without one) [B, C, k-1] before the input along the length, a depthwise
/// valid convolution with the weight [C, 1, k] (and the bias), SiLU on the
/// result when `activation` is silu or swish (computed in float32 from the
/// rounded convolution, as the reference); present_state is the last k-1
/// positions of the padded input.
Outs causalConvWithStateOp(Node& c) {
  ValueId x = c.in(0), w = c.in(1);
  const Ints xs = c.type(x).sizes, ws = c.type(w).sizes;
  const DType dt = c.type(x).dtype;
  if (!isFloating(dt)) c.fail("CausalConvWithState: the input must be floating-point");
  if (xs.size() != 3) c.fail("CausalConvWithState: the input must be rank 3 (batch, channels, length)");
  const int64_t B = xs[0], C = xs[1], L = xs[2];
  if (ws.size() != 3 || ws[0] != C || ws[1] != 1 || ws[2] < 1) c.fail(cat("CausalConvWithState: the weight must be [", C, ", 1, k]"));
  const int64_t k = ws[2];
  if (c.dtypeIn(1) != dt) c.fail("CausalConvWithState: the weight's type differs from the input's");
  std::string act = c.s("activation", "none");
  if (act != "none" && act != "silu" && act != "swish") c.fail(cat("CausalConvWithState: activation '", act, "' is not one of none, silu, swish"));
  ValueId past = kNoValue;
  if (c.has(3)) {
    past = c.in(3);
    if (c.type(past).sizes != Ints{B, C, k - 1}) c.fail(cat("CausalConvWithState: past_state must be [", B, ", ", C, ", ", k - 1, "]"));
    if (c.type(past).dtype != dt) c.fail("CausalConvWithState: past_state's type differs from the input's");
  } else {
    past = c.full(0.0, TensorType::contiguous(dt, {B, C, k - 1}));
  }
  ValueId padded = k > 1 ? c.op(OpKind::Cat, {past, x}, Attrs{{"dim", int64_t{2}}}) : x;
  // Depthwise: a 2-D convolution over a unit height, C groups.
  ValueId p4 = c.op(OpKind::Unsqueeze, {padded}, Attrs{{"dim", int64_t{2}}});
  ValueId w4 = c.op(OpKind::Unsqueeze, {w}, Attrs{{"dim", int64_t{2}}});
  ValueId y = c.op(OpKind::Conv2d, {p4, w4}, Attrs{{"stride", Ints{1, 1}}, {"padding", Ints{0, 0}}, {"dilation", Ints{1, 1}}, {"groups", C}});
  y = c.op(OpKind::Squeeze, {y}, Attrs{{"dim", Ints{2}}});
  if (c.has(2)) {
    if (c.type(c.in(2)).sizes != Ints{C}) c.fail(cat("CausalConvWithState: the bias must be [", C, "]"));
    ValueId b = c.reshape(c.in(2), {1, C, 1});
    y = c.add(y, b);
  }
  if (act != "none") {
    ValueId yf = c.cast(y, dt == DType::F64 ? DType::F64 : DType::F32);
    yf = silu(c, yf);
    y = c.cast(yf, dt);
  }
  ValueId present = c.op(OpKind::Slice, {padded}, Attrs{{"dim", int64_t{2}}, {"start", L}, {"end", L + k - 1}, {"step", int64_t{1}}});
  return {y, present};
}

/// LinearAttention (27), as ONNX's reference: the recurrence run token by
/// token (unrolled: the length is static) in float32 over the state S [B,
/// H_kv, d_k, d_v] -- decayed by exp(decay) (gated rules), the value
/// corrected by beta * (v - S^T k) (delta rules), S += k (x) v -- and each
/// token's output scale * q^T S, query head h reading KV head h / (H_q /
/// H_kv).  chunk_size is a tuning hint without effect.  The output is in the
/// query's type, present_state in past_state's (the query's without one).
Outs linearAttentionOp(Node& c) {
  ValueId q = c.in(0), k = c.in(1), v = c.in(2);
  const DType dt = c.type(q).dtype;
  if (!isFloating(dt) || dt == DType::F64) c.fail("LinearAttention: the query must be float16, bfloat16 or float32");
  for (size_t i = 0; i < 3; ++i)
    if (c.type(c.in(i)).rank() != 3) c.fail("LinearAttention: query, key and value must be rank 3 (B, T, H*D)");
  const std::string rule = c.s("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    c.fail(cat("LinearAttention: update_rule '", rule, "' is not one of linear, gated, delta, gated_delta"));
  const bool gating = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  if (!c.hasAttr("q_num_heads") || !c.hasAttr("kv_num_heads")) c.fail("LinearAttention: q_num_heads and kv_num_heads are required");
  const int64_t Hq = c.i("q_num_heads"), Hkv = c.i("kv_num_heads");
  if (Hq <= 0 || Hkv <= 0 || Hq % Hkv) c.fail(cat("LinearAttention: q_num_heads (", Hq, ") must be a positive multiple of kv_num_heads (", Hkv, ")"));
  if (gating != c.has(4)) c.fail(cat("LinearAttention: update_rule '", rule, "' ", gating ? "requires" : "forbids", " the decay input"));
  if (delta != c.has(5)) c.fail(cat("LinearAttention: update_rule '", rule, "' ", delta ? "requires" : "forbids", " the beta input"));
  const Ints qs = c.type(q).sizes, ks = c.type(k).sizes, vs = c.type(v).sizes;
  const int64_t B = qs[0], T = qs[1];
  if (ks[0] != B || ks[1] != T || vs[0] != B || vs[1] != T) c.fail("LinearAttention: query, key and value differ in batch or length");
  if (qs[2] % Hq || vs[2] % Hkv) c.fail("LinearAttention: the hidden sizes do not split into the heads");
  const int64_t dk = qs[2] / Hq, dv = vs[2] / Hkv, G = Hq / Hkv;
  if (ks[2] != Hkv * dk) c.fail(cat("LinearAttention: the key's hidden size must be kv_num_heads * d_k = ", Hkv * dk));
  if (T > 4096) c.fail(cat("LinearAttention: a length of ", T, " tokens is not supported (the recurrence is unrolled; at most 4096)"));
  const DType f = DType::F32;
  auto split = [&](ValueId x, int64_t n) {  // [B, T, n*D] -> [B, n, T, D] in float32
    ValueId y = c.cast(x, f);
    return heads(c, y, n);
  };
  ValueId q4 = split(q, Hq), k4 = split(k, Hkv), v4 = split(v, Hkv);
  ValueId decay = kNoValue, beta = kNoValue;  // exp(decay) [B, Hkv, T, 1 or dk]; beta [B, Hkv or 1, T, 1]
  if (gating) {
    ValueId g = c.in(4);
    const Ints gs = c.type(g).sizes;
    if (gs.size() != 3 || gs[0] != B || gs[1] != T || (gs[2] != Hkv && gs[2] != Hkv * dk))
      c.fail(cat("LinearAttention: decay must be [", B, ", ", T, ", ", Hkv, " or ", Hkv * dk, "]"));
    decay = gs[2] == Hkv ? c.reshape(g, {B, T, Hkv, 1}) : c.reshape(g, {B, T, Hkv, dk});
    decay = c.op(OpKind::Transpose, {decay}, Attrs{{"dim0", int64_t{1}}, {"dim1", int64_t{2}}});
    decay = c.cast(decay, f);
    decay = c.op(OpKind::Exp, {decay});
  }
  if (delta) {
    ValueId b = c.in(5);
    const Ints bs = c.type(b).sizes;
    if (bs.size() != 3 || bs[0] != B || bs[1] != T || (bs[2] != Hkv && bs[2] != 1))
      c.fail(cat("LinearAttention: beta must be [", B, ", ", T, ", ", Hkv, " or 1]"));
    beta = c.reshape(b, {B, T, bs[2], 1});
    beta = c.op(OpKind::Transpose, {beta}, Attrs{{"dim0", int64_t{1}}, {"dim1", int64_t{2}}});
    beta = c.cast(beta, f);
  }
  DType stateType = dt;
  ValueId S = kNoValue;
  if (c.has(3)) {
    if (c.type(c.in(3)).sizes != Ints{B, Hkv, dk, dv}) c.fail(cat("LinearAttention: past_state must be [", B, ", ", Hkv, ", ", dk, ", ", dv, "]"));
    stateType = c.dtypeIn(3);
    if (!isFloating(stateType) || stateType == DType::F64) c.fail("LinearAttention: past_state must be float16, bfloat16 or float32");
    S = c.cast(c.in(3), f);
  } else {
    S = c.full(0.0, TensorType::contiguous(f, {B, Hkv, dk, dv}));
  }
  double scale = c.f("scale", 0.0);
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(dk));
  auto at = [&](ValueId x, int64_t t) { return c.op(OpKind::Select, {x}, Attrs{{"dim", int64_t{2}}, {"index", t}}); };
  V outs;
  for (int64_t t = 0; t < T; ++t) {
    ValueId kt = at(k4, t), vt = at(v4, t);  // [B, Hkv, dk], [B, Hkv, dv]
    if (gating) {
      ValueId e = at(decay, t);  // [B, Hkv, 1 or dk]
      e = c.op(OpKind::Unsqueeze, {e}, Attrs{{"dim", int64_t{3}}});
      S = c.mul(S, e);
    }
    ValueId kcol = c.reshape(kt, {B, Hkv, dk, 1});
    if (delta) {
      ValueId krow = c.reshape(kt, {B, Hkv, 1, dk});
      ValueId got = matmul(c, krow, S);  // [B, Hkv, 1, dv]: S^T k
      got = c.reshape(got, {B, Hkv, dv});
      ValueId diff = c.sub(vt, got);
      ValueId bt = at(beta, t);  // [B, Hkv or 1, 1]
      vt = c.mul(bt, diff);
    }
    ValueId vrow = c.reshape(vt, {B, Hkv, 1, dv});
    ValueId outer = c.mul(kcol, vrow);
    S = c.add(S, outer);
    ValueId qt = at(q4, t);  // [B, Hq, dk]: query head h reads KV head h / G
    qt = c.reshape(qt, {B, Hkv, G, dk});
    ValueId o = matmul(c, qt, S);  // [B, Hkv, G, dv]
    o = c.reshape(o, {B, Hq, 1, dv});
    outs.push_back(o);
  }
  ValueId y = outs.size() == 1 ? outs[0] : c.op(OpKind::Cat, outs, Attrs{{"dim", int64_t{2}}});  // [B, Hq, T, dv]
  y = c.scaled(y, scale);
  y = c.op(OpKind::Transpose, {y}, Attrs{{"dim0", int64_t{1}}, {"dim1", int64_t{2}}});
  y = c.reshape(y, {B, T, Hq * dv});
  y = c.cast(y, dt);
  ValueId present = c.cast(S, stateType);
  return {y, present};
}

}  // namespace

Entries attentionConverters() {
  return {
    {"Attention", attentionOp},
    {"CausalConvWithState", causalConvWithStateOp},
    {"LinearAttention", linearAttentionOp},
    {"RotaryEmbedding", rotaryEmbeddingOp},
  };
}

}  // namespace aotc::onnx_fe
