//===- decompose.cpp - Decompositions (Note [Decompositions]) --------------===//
#include "aotc/ops/decompose.h"

#include <algorithm>

namespace aotc::decomp {

using V = std::vector<ValueId>;

// ------------------------------------------------------------ decompositions
ValueId reshapeTo(Builder& c, ValueId x, Ints size) {
  if (!viewStrides(c.type(x).sizes, c.type(x).strides, inferViewSize(size, c.type(x).numel()))) x = c.op(OpKind::Clone, {x});
  return c.op(OpKind::View, {x}, Attrs{{"size", inferViewSize(size, c.type(x).numel())}});
}

/// arange(n) as int64: 0, 1, ..., n-1.
ValueId iota(Builder& c, int64_t n) {
  return c.op(OpKind::Arange, {}, Attrs{{"start", 0.0}, {"end", static_cast<double>(n)}, {"step", 1.0}, {"dtype", std::string("i64")}});
}

ValueId reduceOp(Builder& c, OpKind k, ValueId x, Ints dims, bool keep) {
  return c.op(k, {x}, Attrs{{"dim", dims}, {"keepdim", keep}});
}

/// A binary op.  Its operands come as one braced list, evaluated left to
/// right (Note [Node order] in src/ops/gradients.cpp): `bin(c, k, {f(x), g(x)})`
/// creates f's nodes before g's whichever compiler built aotc.
ValueId bin(Builder& c, OpKind k, std::pair<ValueId, ValueId> ab) { return c.op(k, {ab.first, ab.second}); }

ValueId sc(Builder& c, double v, ValueId like) { return c.scalar(v, c.type(like).dtype); }

/// softmax / log_softmax over `dim`, shifted by the (detached) max for range.
ValueId softmaxLike(Builder& c, ValueId x, int64_t dim, bool log) {
  ValueId m = c.op(OpKind::Detach, {reduceOp(c, OpKind::Amax, x, {dim}, true)});
  ValueId z = bin(c, OpKind::Sub, {x, m});
  ValueId s = reduceOp(c, OpKind::Sum, c.op(OpKind::Exp, {z}), {dim}, true);
  if (log) return bin(c, OpKind::Sub, {z, c.op(OpKind::Log, {s})});
  return bin(c, OpKind::Div, {c.op(OpKind::Exp, {z}), s});
}

/// var over dims with Bessel's correction `correction`.
ValueId variance(Builder& c, ValueId x, Ints dims, double correction, bool keep) {
  int64_t n = 1;
  Ints all = reductionDims(Attrs{{"dim", dims}}, c.type(x).rank());
  for (int64_t d : all) n = mulSize(n, c.type(x).sizes[static_cast<size_t>(d)]);
  ValueId mean = reduceOp(c, OpKind::Mean, x, all, true);
  ValueId dlt = bin(c, OpKind::Sub, {x, mean});
  ValueId ss = reduceOp(c, OpKind::Sum, bin(c, OpKind::Mul, {dlt, dlt}), all, keep);
  return bin(c, OpKind::Div, {ss, sc(c, std::max(static_cast<double>(n) - correction, 0.0), x)});
}

ValueId gelu(Builder& c, ValueId x, const std::string& approx) {
  ValueId half = bin(c, OpKind::Mul, {x, sc(c, 0.5, x)});
  if (approx == "tanh") {
    ValueId x3 = bin(c, OpKind::Mul, {bin(c, OpKind::Mul, {x, x}), x});
    ValueId inner = bin(c, OpKind::Mul, {bin(c, OpKind::Add, {x, bin(c, OpKind::Mul, {x3, sc(c, 0.044715, x)})}), sc(c, 0.7978845608028654, x)});
    return bin(c, OpKind::Mul, {half, bin(c, OpKind::Add, {c.op(OpKind::Tanh, {inner}), sc(c, 1.0, x)})});
  }
  ValueId e = c.op(OpKind::Erf, {bin(c, OpKind::Mul, {x, sc(c, 0.7071067811865476, x)})});
  return bin(c, OpKind::Mul, {half, bin(c, OpKind::Add, {e, sc(c, 1.0, x)})});
}

/// clamp with optional bounds; gradients pass where min <= x <= max.
ValueId clampOp(Builder& c, ValueId x, std::optional<double> lo, std::optional<double> hi) {
  ValueId y = x;
  if (lo) y = c.op(OpKind::Where, {bin(c, OpKind::Lt, {y, sc(c, *lo, x)}), sc(c, *lo, x), y});
  if (hi) y = c.op(OpKind::Where, {bin(c, OpKind::Gt, {y, sc(c, *hi, x)}), sc(c, *hi, x), y});
  return y;
}

ValueId hardswish(Builder& c, ValueId x) {
  ValueId r6 = clampOp(c, bin(c, OpKind::Add, {x, sc(c, 3.0, x)}), 0.0, 6.0);
  return bin(c, OpKind::Div, {bin(c, OpKind::Mul, {x, r6}), sc(c, 6.0, x)});
}

/// hardsigmoid(x) = clamp(x / 6 + 1/2, 0, 1).
ValueId hardsigmoid(Builder& c, ValueId x) {
  return clampOp(c, bin(c, OpKind::Add, {bin(c, OpKind::Div, {x, sc(c, 6.0, x)}), sc(c, 0.5, x)}), 0.0, 1.0);
}

ValueId leakyRelu(Builder& c, ValueId x, double slope) {
  return c.op(OpKind::Where, {bin(c, OpKind::Gt, {x, sc(c, 0.0, x)}), x, bin(c, OpKind::Mul, {x, sc(c, slope, x)})});
}

ValueId silu(Builder& c, ValueId x) { return bin(c, OpKind::Mul, {x, c.op(OpKind::Sigmoid, {x})}); }

/// softplus(x, beta, threshold) = x * beta > threshold ? x : log1p(exp(x * beta)) / beta.
ValueId softplus(Builder& c, ValueId x, double beta, double threshold) {
  ValueId bx = c.scaled(x, beta);
  ValueId soft = c.op(OpKind::Log1p, {c.op(OpKind::Exp, {bx})});
  if (beta != 1.0) soft = bin(c, OpKind::Div, {soft, sc(c, beta, x)});
  return c.op(OpKind::Where, {bin(c, OpKind::Gt, {bx, sc(c, threshold, x)}), x, soft});
}

/// log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|)) (ATen's stable form).
ValueId logSigmoid(Builder& c, ValueId x) {
  ValueId m = c.op(OpKind::Minimum, {x, sc(c, 0.0, x)});
  ValueId t = c.op(OpKind::Log1p, {c.op(OpKind::Exp, {c.op(OpKind::Neg, {c.op(OpKind::Abs, {x})})})});
  return bin(c, OpKind::Sub, {m, t});
}

/// logaddexp(a, b) = max + log1p(exp(-|a - b|)); a when a == b is infinite.
ValueId logaddexp(Builder& c, ValueId a, ValueId b) {
  ValueId mx = c.op(OpKind::Maximum, {a, b});
  ValueId d = c.op(OpKind::Abs, {bin(c, OpKind::Sub, {a, b})});
  ValueId r = bin(c, OpKind::Add, {mx, c.op(OpKind::Log1p, {c.op(OpKind::Exp, {c.op(OpKind::Neg, {d})})})});
  ValueId same = bin(c, OpKind::LogicalAnd, {c.op(OpKind::IsInf, {a}), bin(c, OpKind::Eq, {a, b})});
  return c.op(OpKind::Where, {same, a, r});
}

/// xlogy(x, y) = 0 where x == 0 (unless y is NaN), else x * log(y).
ValueId xlogy(Builder& c, ValueId x, ValueId y) {
  ValueId r = bin(c, OpKind::Mul, {x, c.op(OpKind::Log, {y})});
  ValueId zero = c.op(OpKind::Where, {bin(c, OpKind::Eq, {x, sc(c, 0.0, x)}), sc(c, 0.0, r), r});
  return c.op(OpKind::Where, {c.op(OpKind::IsNan, {y}), y, zero});
}

/// prelu(x, w): w has 1 or C (= x.size(1)) entries.
ValueId prelu(Builder& c, ValueId x, ValueId w) {
  const TensorType xt = c.type(x);  // a copy: building nodes grows the value table
  int64_t n = c.type(w).numel();
  if (n != 1 && (xt.rank() < 2 || xt.sizes[1] != n)) c.fail("prelu: the weight must have 1 or x.size(1) elements");
  Ints shape(static_cast<size_t>(std::max<int64_t>(xt.rank(), 1)), 1);
  if (n != 1) shape[1] = n;
  ValueId wb = reshapeTo(c, w, xt.rank() == 0 ? Ints{} : shape);
  return c.op(OpKind::Where, {bin(c, OpKind::Gt, {x, sc(c, 0.0, x)}), x, bin(c, OpKind::Mul, {wb, x})});
}

/// any(x, dims) = sum(x != 0) > 0.
ValueId anyOf(Builder& c, ValueId x, Ints dims, bool keep) {
  ValueId nz = c.type(x).dtype == DType::Bool ? x : bin(c, OpKind::Ne, {x, sc(c, 0.0, x)});
  ValueId n = reduceOp(c, OpKind::Sum, c.op(OpKind::Cast, {nz}, Attrs{{"dtype", std::string("i64")}}), dims, keep);
  return bin(c, OpKind::Gt, {n, c.scalar(0, DType::I64)});
}

/// repeat(x, reps): x viewed with a size-1 dim before each dim, expanded, copied, flattened.
ValueId repeatOp(Builder& c, ValueId x, const Ints& reps) {
  const TensorType t = c.type(x);
  if (static_cast<int64_t>(reps.size()) < t.rank()) c.fail("repeat: fewer repeats than the tensor has dims");
  Ints padded(reps.size() - static_cast<size_t>(t.rank()), 1);
  padded.insert(padded.end(), t.sizes.begin(), t.sizes.end());
  Ints split, expanded, out;
  for (size_t i = 0; i < reps.size(); ++i) {
    if (reps[i] < 0) c.fail("repeat: negative repeat count");
    split.insert(split.end(), {1, padded[i]});
    expanded.insert(expanded.end(), {reps[i], padded[i]});
    out.push_back(mulSize(reps[i], padded[i]));
  }
  ValueId v = reshapeTo(c, x, split);
  ValueId e = c.op(OpKind::Expand, {v}, Attrs{{"size", expanded}});
  return c.op(OpKind::View, {c.op(OpKind::Clone, {e})}, Attrs{{"size", out}});
}

void requireIndexMap(Builder& c, int64_t n, const char* what) {
  if (n > kMaxIndexMap) c.fail(cat(what, ": a dim of ", n, " elements is beyond the ", kMaxIndexMap, " this op handles"));
}

/// A constant int64 index vector.
ValueId indexVector(Builder& c, const Ints& idx) {
  // arange + gather would do; a small table is one constant per element,
  // so build it from arange pieces: start + step * i runs.
  V parts;
  size_t i = 0;
  while (i < idx.size()) {
    size_t j = i + 1;
    int64_t step = j < idx.size() ? idx[j] - idx[i] : 1;
    while (j < idx.size() && idx[j] - idx[j - 1] == step) ++j;
    if (step == 0) {
      parts.push_back(c.op(OpKind::Constant, {}, Attrs{{"value", static_cast<double>(idx[i])}, {"dtype", std::string("i64")},
                                                        {"shape", Ints{static_cast<int64_t>(j - i)}}}));
    } else {
      double s = static_cast<double>(idx[i]), st = static_cast<double>(step);
      parts.push_back(c.op(OpKind::Arange, {}, Attrs{{"start", s}, {"end", s + st * static_cast<double>(j - i - 1) + st / 2},
                                                     {"step", st}, {"dtype", std::string("i64")}}));
    }
    i = j;
  }
  if (parts.empty()) return c.op(OpKind::Constant, {}, Attrs{{"value", 0.0}, {"dtype", std::string("i64")}, {"shape", Ints{0}}});
  return parts.size() == 1 ? parts[0] : c.op(OpKind::Cat, parts, Attrs{{"dim", int64_t{0}}});
}

/// x gathered along `dim` at constant indices: index_select (its gradient is index_add).
ValueId pick(Builder& c, ValueId x, int64_t dim, const Ints& idx) {
  bool identity = static_cast<int64_t>(idx.size()) == c.type(x).sizes[static_cast<size_t>(dim)];
  for (size_t i = 0; identity && i < idx.size(); ++i) identity = idx[i] == static_cast<int64_t>(i);
  if (identity) return x;
  return c.op(OpKind::IndexSelect, {x, indexVector(c, idx)}, Attrs{{"dim", dim}});
}

ValueId flipOp(Builder& c, ValueId x, const Ints& dims) {
  for (int64_t d0 : dims) {
    int64_t d = wrapDim(d0, std::max<int64_t>(c.type(x).rank(), 1));
    if (c.type(x).rank() == 0) break;
    int64_t n = c.type(x).sizes[static_cast<size_t>(d)];
    requireIndexMap(c, n, "flip");
    Ints idx;
    for (int64_t i = n - 1; i >= 0; --i) idx.push_back(i);
    x = pick(c, x, d, idx);
  }
  return x;
}

ValueId rollOp(Builder& c, ValueId x, const Ints& shifts, const Ints& dims) {
  if (dims.empty()) {
    if (shifts.size() != 1) c.fail("roll: without dims, give one shift");
    TensorType t = c.type(x);
    ValueId flat = reshapeTo(c, x, {t.numel()});
    return reshapeTo(c, rollOp(c, flat, shifts, {0}), t.sizes);
  }
  if (shifts.size() != dims.size()) c.fail("roll: shifts and dims must have the same length");
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t d = wrapDim(dims[k], std::max<int64_t>(c.type(x).rank(), 1));
    int64_t n = c.type(x).sizes[static_cast<size_t>(d)];
    if (n == 0) continue;
    requireIndexMap(c, n, "roll");
    int64_t s = ((shifts[k] % n) + n) % n;
    Ints idx;
    for (int64_t i = 0; i < n; ++i) idx.push_back((i - s + n) % n);
    x = pick(c, x, d, idx);
  }
  return x;
}

/// triu/tril: where(col - row >= k (triu) / <= k (tril), x, 0) over the last two dims.
ValueId triangle(Builder& c, ValueId x, int64_t k, bool upper) {
  const TensorType t = c.type(x);
  if (t.rank() < 2) c.fail(cat(upper ? "triu" : "tril", ": the input must have at least 2 dims"));
  int64_t R = t.sizes[t.sizes.size() - 2], C = t.sizes.back();
  ValueId rows = c.op(OpKind::View, {iota(c, R)}, Attrs{{"size", Ints{R, 1}}});
  ValueId cols = iota(c, C);
  ValueId diff = bin(c, OpKind::Sub, {cols, rows});
  ValueId keep = bin(c, upper ? OpKind::Ge : OpKind::Le, {diff, c.scalar(static_cast<double>(k), DType::I64)});
  ValueId zero = c.op(OpKind::Constant, {}, Attrs{{"value", 0.0}, {"dtype", std::string(dtypeName(t.dtype))}});
  return c.op(OpKind::Where, {keep, x, zero});
}

/// adaptive average pooling of a 4-D [N, C, H, W] to `out` (2 values).
ValueId adaptiveAvg2d(Builder& c, ValueId x, const Ints& out) {
  const Ints s = c.type(x).sizes;
  if (out.size() != 2 || out[0] <= 0 || out[1] <= 0) c.fail("adaptive_avg_pool: output_size must be positive");
  if (out[0] == 1 && out[1] == 1) return reduceOp(c, OpKind::Mean, x, {2, 3}, true);
  if (s[2] % out[0] || s[3] % out[1]) return c.op(OpKind::AdaptiveAvgPool2d, {x}, Attrs{{"output_size", out}});
  Ints k{s[2] / out[0], s[3] / out[1]};
  return c.op(OpKind::AvgPool2d, {x}, Attrs{{"kernel", k}, {"stride", k}, {"padding", Ints{0}}});
}

std::vector<ValueId> splitSizes(Builder& c, ValueId x, int64_t dim, const Ints& sizes) {
  V out;
  int64_t at = 0;
  for (int64_t n : sizes) {
    out.push_back(c.op(OpKind::Slice, {x}, Attrs{{"dim", dim}, {"start", at}, {"end", at + n}, {"step", int64_t{1}}}));
    at += n;
  }
  return out;
}

}  // namespace aotc::decomp

namespace aotc::decomp {

ValueId matmul(Builder& c, ValueId a, ValueId b) {
  const TensorType ta = c.type(a), tb = c.type(b);
  if (ta.rank() == 0 || tb.rank() == 0) c.fail("matmul: both operands need at least one dim");
  bool aVec = ta.rank() == 1, bVec = tb.rank() == 1;
  Ints as = aVec ? Ints{1, ta.sizes[0]} : ta.sizes;
  Ints bs = bVec ? Ints{tb.sizes[0], 1} : tb.sizes;
  int64_t M = as[as.size() - 2], K = as.back(), K2 = bs[bs.size() - 2], N = bs.back();
  if (K != K2) c.fail(cat("matmul: inner dims differ (", K, " and ", K2, ")"));
  Ints aBatch(as.begin(), as.end() - 2), bBatch(bs.begin(), bs.end() - 2);
  Ints out;
  ValueId y;
  if (bBatch.empty()) {
    // [..., M, K] @ [K, N]: one mm over the flattened rows.
    int64_t rows = M;
    for (int64_t d : aBatch) rows = mulSize(rows, d);
    ValueId a2 = c.reshape(a, {rows, K});
    ValueId b2 = c.reshape(b, {K, N});
    y = c.op(OpKind::Mm, {a2, b2});
    out = aBatch;
  } else {
    auto batch = broadcastShapes(aBatch, bBatch);
    if (!batch) c.fail("matmul: batch dims do not broadcast");
    int64_t B = 1;
    for (int64_t d : *batch) B = mulSize(B, d);
    Ints ae = *batch, be = *batch;
    ae.insert(ae.end(), {M, K});
    be.insert(be.end(), {K, N});
    ValueId a3 = c.reshape(c.expand(c.reshape(a, as), ae), {B, M, K});
    ValueId b3 = c.reshape(c.expand(c.reshape(b, bs), be), {B, K, N});
    y = c.op(OpKind::Bmm, {a3, b3});
    out = *batch;
  }
  if (!aVec) out.push_back(M);
  if (!bVec) out.push_back(N);
  return c.reshape(y, out);
}

}  // namespace aotc::decomp

namespace aotc::decomp {

/// Note [Random numbers]: random ops draw from a counter-based generator
/// (Philox4x32-10) keyed by one int64 artifact input, `rng_seed`, that the
/// caller supplies on every call; each random node has its own counter offset.
/// Results are reproducible for a seed, on any backend, but are not
/// PyTorch's random stream.
namespace {
/// The graph's `rng_seed` input (added on first use) and the next random
/// node's counter offset.
std::pair<ValueId, int64_t> seedAndOffset(Builder& c) {
  Graph& g = c.graph();
  ValueId seed = g.valueNamed("rng_seed");
  if (seed == kNoValue || !g.inputOf(seed))
    seed = g.addInput("rng_seed", TensorType::contiguous(DType::I64, {}), InputRole::UserInput, false);
  int64_t offset = 0;
  for (const Node& n : g.nodes) offset += n.op == OpKind::RandMask || n.op == OpKind::RandUniform;
  return {seed, offset};
}
}  // namespace

ValueId randMask(Builder& c, double prob, Ints shape) {  // by value: adding the seed input grows the value table
  auto [seed, offset] = seedAndOffset(c);
  return c.op(OpKind::RandMask, {seed}, Attrs{{"prob", prob}, {"offset", offset}, {"shape", shape}});
}

/// Uniform [0, 1) numbers from the graph's seed, on their own Philox offset.
ValueId randUniform(Builder& c, Ints shape, DType d) {
  auto [seed, offset] = seedAndOffset(c);
  return c.op(OpKind::RandUniform, {seed}, Attrs{{"offset", offset}, {"shape", shape}, {"dtype", std::string(dtypeName(d))}});
}

}  // namespace aotc::decomp
