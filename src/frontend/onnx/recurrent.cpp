//===- onnx/recurrent.cpp - Recurrent layers ---------------------------------===//
//
// RNN, GRU and LSTM (opsets 7-22+; layout from 14), unrolled over the
// (static) sequence: per direction and step, the gates from X_t W^T +
// H_{t-1} R^T + Wb + Rb (GRU's h gate with the reset gate applied before or,
// linear_before_reset, after R), with the default activations (RNN tanh;
// GRU sigmoid, tanh; LSTM sigmoid, tanh, tanh).  PyTorch 2.x's exporter
// writes nn.LSTM as LSTM.  LSTM's peepholes (P) are read.  Refused by name: other activations,
// clip, LSTM's input_forget, and sequence_lens that are not all the full
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

enum class Cell { RNN, GRU, LSTM };

/// RNN, GRU and LSTM: one unrolled loop per direction.  Gates (W's rows):
/// RNN i; GRU z, r, h; LSTM i, o, f, c.
template <Cell K>
Outs recurrentOp(Node& c) {
  const char* name = K == Cell::RNN ? "RNN" : K == Cell::GRU ? "GRU" : "LSTM";
  constexpr int64_t G = K == Cell::RNN ? 1 : K == Cell::GRU ? 3 : 4;
  std::string dir = c.s("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") c.fail(cat(name, ": direction '", dir, "' is not supported"));
  int64_t dirs = dir == "bidirectional" ? 2 : 1;
  if (c.hasAttr("clip")) c.fail(cat(name, ": clip is not supported"));
  if (K == Cell::LSTM && c.i("input_forget", 0) != 0) c.fail("LSTM: input_forget=1 is not supported");
  if (c.hasAttr("activations")) {
    const auto* a = c.attr("activations");
    const std::vector<std::string> dflt = K == Cell::RNN ? std::vector<std::string>{"Tanh"}
                                          : K == Cell::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                           : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    for (int k = 0; k < a->strings_size(); ++k)
      if (a->strings(k) != dflt[static_cast<size_t>(k) % dflt.size()])
        c.fail(cat(name, ": activations other than the defaults are not supported"));
  }
  bool batchFirst = c.opset() >= 14 && c.i("layout", 0) != 0;
  bool beforeReset = K == Cell::GRU && c.i("linear_before_reset", 0) != 0;
  ValueId x = c.in(0), w = c.in(1), r = c.in(2);
  if (c.type(x).rank() != 3 || c.type(w).rank() != 3 || c.type(r).rank() != 3) c.fail(cat(name, ": X, W and R must have 3 dims"));
  if (batchFirst) x = tr(c, x);  // [seq, batch, input]
  const Ints xs = c.type(x).sizes;
  int64_t T = xs[0], B = xs[1], H = c.i("hidden_size", c.type(r).sizes[2]);
  if (c.type(w).sizes != Ints{dirs, G * H, xs[2]} || c.type(r).sizes != Ints{dirs, G * H, H})
    c.fail(cat(name, ": W must be [", dirs, ", ", G * H, ", ", xs[2], "] and R [", dirs, ", ", G * H, ", ", H, "]"));
  if (T < 1) c.fail(cat(name, ": an empty sequence is not supported"));
  if (T > kMaxUnrolledSteps) c.fail(cat(name, ": ", T, " steps are more than aotc unrolls (", kMaxUnrolledSteps, ")"));
  if (c.has(4)) {
    for (int64_t len : c.knownInts(4, "sequence_lens"))
      if (len != T) c.fail(cat(name, ": sequence_lens shorter than the sequence (per-element padding) are not supported"));
  }
  DType dt = c.type(x).dtype;
  auto initial = [&](size_t i) -> ValueId {
    if (!c.has(i)) return kNoValue;
    ValueId v = c.in(i);
    return batchFirst ? tr(c, v) : v;  // [dirs, batch, hidden]
  };
  ValueId h0 = initial(5), c0 = K == Cell::LSTM ? initial(6) : kNoValue;
  V ys, hs, cs;
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = dir == "reverse" || d == 1;
    ValueId wt = tr(c, sel(c, w, 0, d)), rt = tr(c, sel(c, r, 0, d));  // [input, G*H], [H, G*H]
    ValueId wb = kNoValue, rb = kNoValue;
    if (c.has(3)) {
      ValueId b = sel(c, c.in(3), 0, d);
      wb = rows(c, b, 0, 0, G * H);
      rb = rows(c, b, 0, G * H, 2 * G * H);
    }
    ValueId h = h0 != kNoValue ? sel(c, h0, 0, d) : c.full(0.0, TensorType::contiguous(dt, {B, H}));
    ValueId cell = c0 != kNoValue ? sel(c, c0, 0, d) : c.full(0.0, TensorType::contiguous(dt, {B, H}));
    ValueId peeps = K == Cell::LSTM && c.has(7) ? sel(c, c.in(7), 0, d) : kNoValue;  // [3H]
    if (peeps != kNoValue && c.type(peeps).sizes != Ints{3 * H}) c.fail(cat("LSTM: P must be [", dirs, ", ", 3 * H, "]"));
    // X W^T (+ Wb) for every step at once: [T * B, G*H]; R's bias joins it
    // except GRU's h gate, whose R part is reset first.
    ValueId xw = matmul(c, c.reshape(x, {T * B, xs[2]}), wt);
    if (wb != kNoValue) xw = c.add(xw, K == Cell::GRU ? wb : c.add(wb, rb));
    if (wb != kNoValue && K == Cell::GRU) xw = c.add(xw, c.op(OpKind::Cat, {rows(c, rb, 0, 0, 2 * H), c.full(0.0, TensorType::contiguous(dt, {H}))},
                                                         Attrs{{"dim", int64_t{0}}}));
    V steps(static_cast<size_t>(T));
    for (int64_t k = 0; k < T; ++k) {
      int64_t t = reverse ? T - 1 - k : k;
      ValueId xt = rows(c, xw, 0, t * B, (t + 1) * B);  // [B, G*H]
      if (K == Cell::RNN) {
        h = c.op(OpKind::Tanh, {c.add(xt, matmul(c, h, rt))});
      } else if (K == Cell::GRU) {
        ValueId xzr = rows(c, xt, 1, 0, 2 * H);
        ValueId hzr = matmul(c, h, rows(c, rt, 1, 0, 2 * H));
        ValueId zr = c.op(OpKind::Sigmoid, {c.add(xzr, hzr)});
        ValueId z = rows(c, zr, 1, 0, H), rg = rows(c, zr, 1, H, 2 * H);
        ValueId rh = rows(c, rt, 1, 2 * H, 3 * H), rbh = rb != kNoValue ? rows(c, rb, 0, 2 * H, 3 * H) : kNoValue;
        ValueId hr;
        if (beforeReset) {
          hr = matmul(c, h, rh);
          if (rbh != kNoValue) hr = c.add(hr, rbh);
          hr = c.mul(rg, hr);
        } else {
          hr = matmul(c, c.mul(rg, h), rh);
          if (rbh != kNoValue) hr = c.add(hr, rbh);
        }
        ValueId ht = c.op(OpKind::Tanh, {c.add(rows(c, xt, 1, 2 * H, 3 * H), hr)});
        ValueId fresh = c.mul(c.sub(c.scalarLike(1.0, z), z), ht);
        h = c.add(fresh, c.mul(z, h));
      } else {
        ValueId g = c.add(xt, matmul(c, h, rt));  // [B, 4H]: i, o, f, c
        // Peepholes P = [Pi, Po, Pf]: i and f see C_{t-1}, o sees C_t.
        auto peep = [&](ValueId pre, int64_t k, ValueId cl) { return peeps != kNoValue ? c.add(pre, c.mul(rows(c, peeps, 0, k * H, (k + 1) * H), cl)) : pre; };
        ValueId i = c.op(OpKind::Sigmoid, {peep(rows(c, g, 1, 0, H), 0, cell)});
        ValueId f = c.op(OpKind::Sigmoid, {peep(rows(c, g, 1, 2 * H, 3 * H), 2, cell)});
        ValueId z = c.op(OpKind::Tanh, {rows(c, g, 1, 3 * H, 4 * H)});
        ValueId kept = c.mul(f, cell);
        cell = c.add(kept, c.mul(i, z));
        ValueId o = c.op(OpKind::Sigmoid, {peep(rows(c, g, 1, H, 2 * H), 1, cell)});
        h = c.mul(o, c.op(OpKind::Tanh, {cell}));
      }
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
  if (K != Cell::LSTM) return {y, yh};
  return {y, yh, yc};
}

}  // namespace

Entries recurrentConverters() {
  return {
    {"GRU", recurrentOp<Cell::GRU>},
    {"LSTM", recurrentOp<Cell::LSTM>},
    {"RNN", recurrentOp<Cell::RNN>},
  };
}

}  // namespace aotc::onnx_fe
