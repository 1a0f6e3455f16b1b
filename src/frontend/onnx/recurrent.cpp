//===- onnx/recurrent.cpp - Recurrent layers ---------------------------------===//
//
// LSTM (opsets 7-22+; layout from 14), unrolled over the (static) sequence:
// per direction and step, the gates i, o, f, c from X_t W^T + H_{t-1} R^T +
// Wb + Rb, with the default activations (sigmoid, tanh, tanh).  PyTorch 2.x's
// exporter writes nn.LSTM as this op.  Refused by name: other activations,
// clip, input_forget, peepholes, and sequence_lens that are not all the full
// length (padding per batch element).
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

namespace {

constexpr int64_t kMaxUnrolledSteps = 4096;

ValueId sel(Node& c, ValueId x, int64_t dim, int64_t i) { return c.op(OpKind::Select, {x}, Attrs{{"dim", dim}, {"index", i}}); }
ValueId rows(Node& c, ValueId x, int64_t dim, int64_t b, int64_t e) {
  return c.op(OpKind::Slice, {x}, Attrs{{"dim", dim}, {"start", b}, {"end", e}, {"step", int64_t{1}}});
}
ValueId tr(Node& c, ValueId x) { return c.op(OpKind::Transpose, {x}, Attrs{{"dim0", int64_t{0}}, {"dim1", int64_t{1}}}); }

Outs lstmOp(Node& c) {
  std::string dir = c.s("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") c.fail("LSTM: direction '" + dir + "' is not supported");
  int64_t dirs = dir == "bidirectional" ? 2 : 1;
  if (c.hasAttr("clip")) c.fail("LSTM: clip is not supported");
  if (c.i("input_forget", 0) != 0) c.fail("LSTM: input_forget=1 is not supported");
  if (c.hasAttr("activations")) {
    const auto* a = c.attr("activations");
    for (int k = 0; k < a->strings_size(); ++k)
      if (a->strings(k) != (k % 3 == 0 ? "Sigmoid" : "Tanh")) c.fail("LSTM: activations other than Sigmoid, Tanh, Tanh are not supported");
  }
  if (c.has(7)) c.fail("LSTM: peepholes (input P) are not supported");
  bool batchFirst = c.opset() >= 14 && c.i("layout", 0) != 0;
  ValueId x = c.in(0), w = c.in(1), r = c.in(2);
  if (c.type(x).rank() != 3 || c.type(w).rank() != 3 || c.type(r).rank() != 3) c.fail("LSTM: X, W and R must have 3 dims");
  if (batchFirst) x = tr(c, x);  // [seq, batch, input]
  const Ints xs = c.type(x).sizes;
  int64_t T = xs[0], B = xs[1], H = c.i("hidden_size", c.type(r).sizes[2]);
  if (c.type(w).sizes != Ints{dirs, 4 * H, xs[2]} || c.type(r).sizes != Ints{dirs, 4 * H, H})
    c.fail(cat("LSTM: W must be [", dirs, ", ", 4 * H, ", ", xs[2], "] and R [", dirs, ", ", 4 * H, ", ", H, "]"));
  if (T < 1) c.fail("LSTM: an empty sequence is not supported");
  if (T > kMaxUnrolledSteps) c.fail(cat("LSTM: ", T, " steps are more than aotc unrolls (", kMaxUnrolledSteps, ")"));
  if (c.has(4)) {
    for (int64_t len : c.knownInts(4, "sequence_lens"))
      if (len != T) c.fail("LSTM: sequence_lens shorter than the sequence (per-element padding) are not supported");
  }
  DType dt = c.type(x).dtype;
  auto initial = [&](size_t i) -> ValueId {
    if (!c.has(i)) return kNoValue;
    ValueId v = c.in(i);
    return batchFirst ? tr(c, v) : v;  // [dirs, batch, hidden]
  };
  ValueId h0 = initial(5), c0 = initial(6);
  V ys, hs, cs;
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = dir == "reverse" || d == 1;
    ValueId wt = tr(c, sel(c, w, 0, d)), rt = tr(c, sel(c, r, 0, d));  // [input, 4H], [H, 4H]
    ValueId bias = kNoValue;
    if (c.has(3)) {
      ValueId b = sel(c, c.in(3), 0, d);
      bias = c.add(rows(c, b, 0, 0, 4 * H), rows(c, b, 0, 4 * H, 8 * H));
    }
    ValueId h = h0 != kNoValue ? sel(c, h0, 0, d) : c.full(0.0, TensorType::contiguous(dt, {B, H}));
    ValueId cell = c0 != kNoValue ? sel(c, c0, 0, d) : c.full(0.0, TensorType::contiguous(dt, {B, H}));
    // X W^T for every step at once: [T * B, 4H].
    ValueId xw = matmul(c, c.reshape(x, {T * B, xs[2]}), wt);
    if (bias != kNoValue) xw = c.add(xw, bias);
    V steps(static_cast<size_t>(T));
    for (int64_t k = 0; k < T; ++k) {
      int64_t t = reverse ? T - 1 - k : k;
      ValueId g = c.add(rows(c, xw, 0, t * B, (t + 1) * B), matmul(c, h, rt));  // [B, 4H]: i, o, f, c
      ValueId i = c.op(OpKind::Sigmoid, {rows(c, g, 1, 0, H)});
      ValueId o = c.op(OpKind::Sigmoid, {rows(c, g, 1, H, 2 * H)});
      ValueId f = c.op(OpKind::Sigmoid, {rows(c, g, 1, 2 * H, 3 * H)});
      ValueId z = c.op(OpKind::Tanh, {rows(c, g, 1, 3 * H, 4 * H)});
      cell = c.add(c.mul(f, cell), c.mul(i, z));
      h = c.mul(o, c.op(OpKind::Tanh, {cell}));
      steps[static_cast<size_t>(t)] = c.op(OpKind::Unsqueeze, {h}, Attrs{{"dim", int64_t{0}}});
    }
    ys.push_back(c.op(OpKind::Unsqueeze, {T == 1 ? steps[0] : c.op(OpKind::Cat, steps, Attrs{{"dim", int64_t{0}}})}, Attrs{{"dim", int64_t{1}}}));
    hs.push_back(c.op(OpKind::Unsqueeze, {h}, Attrs{{"dim", int64_t{0}}}));
    cs.push_back(c.op(OpKind::Unsqueeze, {cell}, Attrs{{"dim", int64_t{0}}}));
  }
  auto join = [&](const V& v, int64_t dim) { return v.size() == 1 ? v[0] : c.op(OpKind::Cat, v, Attrs{{"dim", dim}}); };
  ValueId y = join(ys, 1), yh = join(hs, 0), yc = join(cs, 0);  // [T, dirs, B, H], [dirs, B, H] x2
  if (batchFirst) {
    y = c.op(OpKind::Permute, {y}, Attrs{{"dims", Ints{2, 0, 1, 3}}});  // [B, T, dirs, H]
    yh = tr(c, yh);
    yc = tr(c, yc);
  }
  return {y, yh, yc};
}

}  // namespace

Entries recurrentConverters() {
  return {
    {"LSTM", lstmOp},
  };
}

}  // namespace aotc::onnx_fe
