//===- decompose.cpp - Decompositions (Note [Decompositions]) --------------===//
#include "aotc/ops/decompose.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "rule_util.h"

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

// Note [Detached centre]
// ~~~~~~~~~~~~~~~~~~~~~~
// var(x) = sum((x - mean(x))^2) / (n - c).  Its gradient through mean(x) is
// g * sum(-2 (x - mean)) / (n (n - c)) broadcast back over x: zero, since the
// deviations sum to zero.  Autodiff does not know that and computes it: one
// more reduction over x, after the first reduction of the backward (it
// needs its result), so one more full read of x per normalization in every
// backward (resnet18 at batch 32: 20 batch norms).  The variance therefore
// centres x on a *detached* mean: the same value, exactly the gradient
// PyTorch's own formulas (var_backward, native_batch_norm_backward,
// native_layer_norm_backward) give, without the zero term.  A normalization
// keeps the undetached mean where it subtracts it from x for its result,
// whose gradient through the mean is not zero.  (aotc differentiates a
// program once; a double backward through the variance would need the
// term, and is not what a detached centre changes: aotc's artifacts run
// first-order backwards.)
ValueId centred(Builder& c, ValueId x, ValueId mean) { return bin(c, OpKind::Sub, {x, c.op(OpKind::Detach, {mean})}); }

/// var over dims with Bessel's correction `correction`.
ValueId variance(Builder& c, ValueId x, Ints dims, double correction, bool keep) {
  int64_t n = 1;
  Ints all = reductionDims(Attrs{{"dim", dims}}, c.type(x).rank());
  for (int64_t d : all) n = mulSize(n, c.type(x).sizes[static_cast<size_t>(d)]);
  ValueId mean = reduceOp(c, OpKind::Mean, x, all, true);
  ValueId dlt = centred(c, x, mean);  // Note [Detached centre]
  ValueId ss = reduceOp(c, OpKind::Sum, bin(c, OpKind::Mul, {dlt, dlt}), all, keep);
  // Correction 0 or 1 (every use in practice: unbiased=False/True) divides
  // by the integer n - c, a size scalar (Note [Size scalars]) so that it
  // follows a dynamic n; the same double at a static n.  n - c >= 0 at every
  // size then (a dynamic dim is at least 1), as torch's max(n - c, 0) is.  A
  // larger correction could make n - c negative at a small run-time size, so
  // it stays a plain constant (and a dynamic n is refused by unify).
  if ((correction == 0.0 || correction == 1.0) && static_cast<double>(n) - correction >= 1.0)
    return bin(c, OpKind::Div, {ss, c.sizeScalar(1.0, n - static_cast<int64_t>(correction), 1, c.type(x).dtype)});
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

ValueId pickTable(Builder& c, ValueId x, int64_t dim, const Ints& idx) {
  if (!c.hasTables()) return pick(c, x, dim, idx);
  bool identity = static_cast<int64_t>(idx.size()) == c.type(x).sizes[static_cast<size_t>(dim)];
  for (size_t i = 0; identity && i < idx.size(); ++i) identity = idx[i] == static_cast<int64_t>(i);
  if (identity) return x;
  HostTensor t{DType::I64, Ints{static_cast<int64_t>(idx.size())}, std::vector<double>(idx.begin(), idx.end())};
  return c.op(OpKind::IndexSelect, {x, c.table(std::move(t))}, Attrs{{"dim", dim}});
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

ValueId elu(Builder& c, ValueId x, double alpha, double scale, double inputScale) {
  ValueId pos = c.scaled(x, scale);
  ValueId neg = c.scaled(c.op(OpKind::Expm1, {c.scaled(x, inputScale)}), alpha * scale);
  return c.op(OpKind::Where, {bin(c, OpKind::Gt, {x, sc(c, 0.0, x)}), pos, neg});
}

ValueId celu(Builder& c, ValueId x, double alpha) {
  if (alpha == 0) c.fail("celu: alpha must not be 0");
  ValueId neg = c.scaled(c.op(OpKind::Expm1, {c.scaled(x, 1.0 / alpha)}), alpha);
  return c.op(OpKind::Where, {bin(c, OpKind::Gt, {x, sc(c, 0.0, x)}), x, neg});
}

Normalized normalize(Builder& c, ValueId x, const Ints& dims, double eps) {
  ValueId mean = reduceOp(c, OpKind::Mean, x, dims, true);
  // Not centred on a detached mean (Note [Detached centre]): a layer norm's
  // rows are one row kernel's, forward and backward, so the zero term costs
  // no pass of its own there, and one shared deviation keeps the partitioner
  // saving the normalized input rather than recomputing it from its sources.
  ValueId dlt = bin(c, OpKind::Sub, {x, mean});
  ValueId var = reduceOp(c, OpKind::Mean, bin(c, OpKind::Mul, {dlt, dlt}), dims, true);
  ValueId rstd = c.op(OpKind::Rsqrt, {bin(c, OpKind::Add, {var, sc(c, eps, x)})});
  return {bin(c, OpKind::Mul, {dlt, rstd}), mean, rstd, var};
}

// Note [3-D convolution]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A 3-D convolution is the sum over its depth taps kd of 2-D convolutions:
// output depth od reads input depth od*sd + kd*dd (after padding), so the
// depth slices a tap reads (a strided slice) are stacked into the batch
// ([N*Do, C, H, W]) and convolved by w[:, :, kd] with the (H, W) stride,
// padding, dilation and groups; the KD results are summed.  The transposed
// one is its adjoint: each tap's conv2d_backward_input of every input depth
// slice, added at depths id*sd + kd*dd of the full output.  Both are exact up
// to the order of the sum, and their gradients are autodiff's through ops
// whose rules (shape, reference, CUDA, gradient) exist.  The result is
// contiguous, as eager's.

namespace {
/// The depth taps are unrolled: a bound keeps a hostile weight shape from
/// building millions of nodes.
constexpr int64_t kMaxDepthTaps = 1024;
void requireTaps(Builder& c, const char* what, int64_t taps) {
  if (taps > kMaxDepthTaps) c.fail(cat(what, ": a kernel depth of ", taps, " is beyond the ", kMaxDepthTaps, " taps this decomposition unrolls"));
}
void require3(Builder& c, const char* what, const Ints& v, const char* kw, int64_t lo) {
  if (v.size() != 3) c.fail(cat(what, ": ", kw, " must have 3 values"));
  for (int64_t x : v)
    if (x < lo) c.fail(cat(what, ": ", kw, " must be at least ", lo));
}
/// [N, C, D, H, W] -> [N*D, C, H, W].
ValueId depthIntoBatch(Builder& c, ValueId x) {
  const Ints s = c.type(x).sizes;
  return reshapeTo(c, c.op(OpKind::Permute, {x}, Attrs{{"dims", Ints{0, 2, 1, 3, 4}}}), {s[0] * s[2], s[1], s[3], s[4]});
}
/// [N*D, C, H, W] -> [N, C, D, H, W].
ValueId batchIntoDepth(Builder& c, ValueId y, int64_t n, int64_t d) {
  const Ints s = c.type(y).sizes;
  return c.op(OpKind::Permute, {reshapeTo(c, y, {n, d, s[1], s[2], s[3]})}, Attrs{{"dims", Ints{0, 2, 1, 3, 4}}});
}
}  // namespace

ValueId conv3d(Builder& c, ValueId x, ValueId w, const Ints& stride, const Ints& padding, const Ints& dilation, int64_t groups) {
  const TensorType xt = c.type(x), wt = c.type(w);
  if (xt.rank() != 5 || wt.rank() != 5) c.fail("conv3d: the input and the weight must be 5-D");
  require3(c, "conv3d", stride, "stride", 1);
  require3(c, "conv3d", padding, "padding", 0);
  require3(c, "conv3d", dilation, "dilation", 1);
  if (groups <= 0 || xt.sizes[1] != mulSize(wt.sizes[1], groups) || wt.sizes[0] % groups)
    c.fail("conv3d: the input's channels do not match the weight and groups");
  const int64_t n = xt.sizes[0], kd = wt.sizes[2];
  const int64_t span = addSize(mulSize(dilation[0], kd - 1), 1), padded = addSize(xt.sizes[2], 2 * padding[0]);
  if (kd <= 0 || padded < span) c.fail("conv3d: the kernel is deeper than the padded input");
  requireTaps(c, "conv3d", kd);
  const int64_t dout = (padded - span) / stride[0] + 1;
  if (padding[0]) x = c.op(OpKind::Pad, {x}, Attrs{{"pad", Ints{0, 0, 0, 0, padding[0], padding[0]}}, {"value", 0.0}});
  Attrs a{{"stride", Ints{stride[1], stride[2]}}, {"padding", Ints{padding[1], padding[2]}}, {"dilation", Ints{dilation[1], dilation[2]}}, {"groups", groups}};
  ValueId sum = kNoValue;
  for (int64_t k = 0; k < kd; ++k) {
    const int64_t start = k * dilation[0];
    ValueId xs = c.op(OpKind::Slice, {x}, Attrs{{"dim", int64_t{2}}, {"start", start}, {"end", start + stride[0] * (dout - 1) + 1}, {"step", stride[0]}});
    ValueId in = depthIntoBatch(c, xs);
    ValueId wk = c.contiguous(c.op(OpKind::Select, {w}, Attrs{{"dim", int64_t{2}}, {"index", k}}));
    ValueId y = c.op(OpKind::Conv2d, {in, wk}, a);
    sum = sum == kNoValue ? y : c.add(sum, y);
  }
  // Contiguous, as eager's convolution output: a permuted view here made a
  // later view that is valid in eager (MViT's x.reshape(B, N, C, -1) after its
  // pooling conv) fail.
  return c.contiguous(batchIntoDepth(c, sum, n, dout));
}

ValueId convTranspose3d(Builder& c, ValueId x, ValueId w, const Ints& stride, const Ints& dilation, const Ints& outputPadding,
                        int64_t groups) {
  const TensorType xt = c.type(x), wt = c.type(w);
  if (xt.rank() != 5 || wt.rank() != 5) c.fail("conv_transpose3d: the input and the weight must be 5-D");
  require3(c, "conv_transpose3d", stride, "stride", 1);
  require3(c, "conv_transpose3d", dilation, "dilation", 1);
  require3(c, "conv_transpose3d", outputPadding, "output_padding", 0);
  if (groups <= 0 || xt.sizes[1] != wt.sizes[0] || wt.sizes[0] % groups)
    c.fail("conv_transpose3d: the input's channels do not match the weight and groups");
  Ints full(3);
  for (size_t k = 0; k < 3; ++k) {
    if (outputPadding[k] >= stride[k] && outputPadding[k] >= dilation[k])
      c.fail("conv_transpose3d: output_padding must be smaller than stride or dilation");
    full[k] = addSize(addSize(mulSize(stride[k], xt.sizes[2 + k] - 1), mulSize(dilation[k], wt.sizes[2 + k] - 1)), 1 + outputPadding[k]);
    if (full[k] <= 0 || wt.sizes[2 + k] <= 0) c.fail("conv_transpose3d: the output is empty");
  }
  requireTaps(c, "conv_transpose3d", wt.sizes[2]);
  const int64_t n = xt.sizes[0], din = xt.sizes[2], outC = mulSize(wt.sizes[1], groups);
  ValueId in = c.contiguous(depthIntoBatch(c, x));
  Attrs a{{"input_size", Ints{mulSize(n, din), outC, full[1], full[2]}}, {"stride", Ints{stride[1], stride[2]}}, {"padding", Ints{0, 0}},
          {"dilation", Ints{dilation[1], dilation[2]}}, {"groups", groups}};
  ValueId acc = c.zeros(TensorType::contiguous(xt.dtype, {n, outC, full[0], full[1], full[2]}));
  for (int64_t k = 0; k < wt.sizes[2]; ++k) {
    ValueId wk = c.contiguous(c.op(OpKind::Select, {w}, Attrs{{"dim", int64_t{2}}, {"index", k}}));
    ValueId z = batchIntoDepth(c, c.op(OpKind::Conv2dBackwardInput, {in, wk}, a), n, din);
    const int64_t start = k * dilation[0];
    Attrs at{{"dim", int64_t{2}}, {"start", start}, {"end", start + stride[0] * (din - 1) + 1}, {"step", stride[0]}};
    ValueId cur = c.op(OpKind::Slice, {acc}, at);
    ValueId upd = c.add(cur, z);
    acc = c.op(OpKind::SliceScatter, {acc, upd}, at);
  }
  return acc;
}

// Note [3-D pooling]
// ~~~~~~~~~~~~~~~~~~
// A 3-D window is a depth window times a (height, width) window, and what the
// pools compute factors over the two: the max over the box is the max over
// depth of the maxima over (H, W); the sum likewise; ATen's divisors (the
// window clipped to the padded input with count_include_pad, to the input
// without it, ceil_mode's last windows) are products of per-dim extents; and
// adaptive windows are per-dim ranges.  So each 3-D pool is a 2-D pool over
// (H, W) of every depth slice ([N, C*D, H, W]) followed by a 2-D pool over
// (D, 1) of [N*C, 1, D, Ho*Wo], whose rules (shape, reference, CUDA,
// gradient) exist.  max_pool3d's index is the flat d*H*W + h*W + w of the
// first maximum in (d, h, w) order, as ATen's: the depth stage picks the
// first depth holding the maximum, the (H, W) stage the first (h, w) in it
// (and both take the last NaN, as ATen's scan does).  A divisor_override
// divides once, after two sums.  Every stage computes a new tensor, never a
// view of the input (an in-place update of the result must not reach it).

namespace {
Ints pool5(Builder& c, ValueId x, const char* what) {
  if (c.type(x).rank() != 5) c.fail(cat(what, ": expects a 5-D (N, C, D, H, W) input"));
  return c.type(x).sizes;
}
void checkPool3d(Builder& c, Pool3d& p, const char* what) {
  if (p.stride.empty()) p.stride = p.kernel;
  require3(c, what, p.kernel, "kernel_size", 1);
  require3(c, what, p.stride, "stride", 1);
  require3(c, what, p.padding, "padding", 0);
  require3(c, what, p.dilation, "dilation", 1);
}
/// [N, C, D, H, W] -> [N, C*D, H, W].
ValueId planes(Builder& c, ValueId x, const Ints& n5) { return reshapeTo(c, x, {n5[0], n5[1] * n5[2], n5[3], n5[4]}); }
/// [N, C*D, Ho, Wo] -> [N*C, 1, D, Ho*Wo], for the depth stage.
ValueId depthMajor(Builder& c, ValueId y, const Ints& n5) {
  const Ints t = c.type(y).sizes;
  return reshapeTo(c, y, {n5[0] * n5[1], 1, n5[2], t[2] * t[3]});
}
/// The depth stage's result (any shape holding [N*C, Do, Ho*Wo] in order) as
/// [N, C, Do, Ho, Wo].
ValueId pool3dOutput(Builder& c, ValueId z, const Ints& n5, int64_t d, int64_t ho, int64_t wo) {
  return reshapeTo(c, z, {n5[0], n5[1], d, ho, wo});
}
}  // namespace

ValueId avgPool3d(Builder& c, ValueId x, Pool3d p) {
  const Ints n5 = pool5(c, x, "avg_pool3d");
  checkPool3d(c, p, "avg_pool3d");
  if (p.dilation != Ints{1, 1, 1}) c.fail("avg_pool3d: dilation is not supported");
  const Ints &k = p.kernel, &st = p.stride, &pad = p.padding;
  Attrs a1{{"kernel", Ints{k[1], k[2]}}, {"stride", Ints{st[1], st[2]}}, {"padding", Ints{pad[1], pad[2]}}, {"ceil_mode", p.ceil}, {"count_include_pad", p.countIncludePad}};
  Attrs a2{{"kernel", Ints{k[0], 1}}, {"stride", Ints{st[0], 1}}, {"padding", Ints{pad[0], 0}}, {"ceil_mode", p.ceil}, {"count_include_pad", p.countIncludePad}};
  if (p.divisor) {
    if (*p.divisor == 0) c.fail("avg_pool3d: divisor must be not zero");
    a1["divisor"] = int64_t{1};
    a2["divisor"] = *p.divisor;
  }
  ValueId y = c.op(OpKind::AvgPool2d, {planes(c, x, n5)}, a1);
  const Ints hw = c.type(y).sizes;
  ValueId z = c.op(OpKind::AvgPool2d, {depthMajor(c, y, n5)}, a2);
  return pool3dOutput(c, z, n5, c.type(z).sizes[2], hw[2], hw[3]);
}

std::pair<ValueId, ValueId> maxPool3d(Builder& c, ValueId x, Pool3d p) {
  const Ints n5 = pool5(c, x, "max_pool3d");
  checkPool3d(c, p, "max_pool3d");
  const Ints &k = p.kernel, &st = p.stride, &pad = p.padding, &dil = p.dilation;
  Attrs a1{{"kernel", Ints{k[1], k[2]}}, {"stride", Ints{st[1], st[2]}}, {"padding", Ints{pad[1], pad[2]}}, {"dilation", Ints{dil[1], dil[2]}}, {"ceil_mode", p.ceil}};
  Attrs a2{{"kernel", Ints{k[0], 1}}, {"stride", Ints{st[0], 1}}, {"padding", Ints{pad[0], 0}}, {"dilation", Ints{dil[0], 1}}, {"ceil_mode", p.ceil}};
  std::vector<ValueId> s1 = c.ops(OpKind::MaxPool2d, {planes(c, x, n5)}, a1, {});
  const Ints hw = c.type(s1[0]).sizes;
  const int64_t plane = hw[2] * hw[3];
  std::vector<ValueId> s2 = c.ops(OpKind::MaxPool2d, {depthMajor(c, s1[0], n5)}, a2, {});
  // The depth stage's index is d * plane + p: its depth, and the (H, W)
  // stage's index there.
  const int64_t nc = n5[0] * n5[1], dout = c.type(s2[0]).sizes[2];
  ValueId i2 = reshapeTo(c, s2[1], {nc, dout, plane});
  ValueId d = c.op(OpKind::DivFloor, {i2, c.scalar(static_cast<double>(plane), DType::I64)});
  ValueId i1 = reshapeTo(c, s1[1], {nc, n5[2], plane});
  ValueId hwIdx = c.op(OpKind::Gather, {i1, d}, Attrs{{"dim", int64_t{1}}});
  ValueId dOff = c.op(OpKind::Mul, {d, c.scalar(static_cast<double>(n5[3] * n5[4]), DType::I64)});
  ValueId idx = c.op(OpKind::Add, {dOff, hwIdx});
  return {pool3dOutput(c, s2[0], n5, dout, hw[2], hw[3]), pool3dOutput(c, idx, n5, dout, hw[2], hw[3])};
}

ValueId adaptiveAvg3d(Builder& c, ValueId x, const Ints& out) {
  const Ints n5 = pool5(c, x, "adaptive_avg_pool3d");
  if (out.size() != 3) c.fail("adaptive_avg_pool3d: output_size must have 3 values");
  ValueId y = adaptiveAvg2d(c, planes(c, x, n5), {out[1], out[2]});
  ValueId z = adaptiveAvg2d(c, depthMajor(c, y, n5), {out[0], out[1] * out[2]});
  return pool3dOutput(c, z, n5, out[0], out[1], out[2]);
}

}  // namespace aotc::decomp

namespace aotc::decomp {

// Note [Complex tensors as pairs] (decompose.h).
namespace {
/// x with dim `from` moved to position `to`.
ValueId moveDim(Builder& c, ValueId x, int64_t from, int64_t to) {
  if (from == to) return x;
  Ints perm;
  for (int64_t i = 0; i < c.type(x).rank(); ++i)
    if (i != from) perm.push_back(i);
  perm.insert(perm.begin() + to, from);
  return c.op(OpKind::Permute, {x}, Attrs{{"dims", perm}});
}

/// [a, b] stacked along a new dim `dim`.
ValueId stack2(Builder& c, ValueId a, ValueId b, int64_t dim) {
  return c.op(OpKind::Cat, {c.op(OpKind::Unsqueeze, {a}, Attrs{{"dim", dim}}), c.op(OpKind::Unsqueeze, {b}, Attrs{{"dim", dim}})},
              Attrs{{"dim", dim}});
}

/// The angles 2*pi*((j*k) mod n)/n, j < rows, k < cols, as f64 [rows, cols]:
/// the product is taken in int64 and reduced mod n first, so the angle is
/// exact however large j*k grows.
ValueId dftAngles(Builder& c, int64_t rows, int64_t cols, int64_t n, const char* what) {
  if (n <= 0) c.fail(cat(what, ": a transform over ", n, " points"));
  if (mulSize(rows, cols) > kMaxIndexMap / 4)
    c.fail(cat(what, ": a transform over ", n, " points needs a ", rows, " x ", cols,
               " basis; aotc computes Fourier transforms as matrix products (Note [Complex tensors as pairs]) and "
               "takes bases of up to 2^22 entries"));
  ValueId j = c.reshape(iota(c, rows), {rows, 1});
  ValueId k = c.reshape(iota(c, cols), {1, cols});
  ValueId m = c.op(OpKind::Remainder, {c.op(OpKind::Mul, {j, k}), c.scalar(static_cast<double>(n), DType::I64)});
  return c.scaled(c.cast(m, DType::F64), 2.0 * std::numbers::pi / static_cast<double>(n));
}

/// The linear map `basis` (f64) applied along dim `dim` of x (its complex
/// dim when `pairsIn`): that dim is moved last and, for pairs, flattened
/// with the components as (j, re), (j, im), so a basis of rows x (outLen
/// times 2 when `pairsOut`) maps it; the result's dim goes back in place.
ValueId alongDim(Builder& c, ValueId x, int64_t dim, bool pairsIn, ValueId basis, int64_t outLen, bool pairsOut) {
  const TensorType t = c.type(x);
  const int64_t r = t.rank() - (pairsIn ? 1 : 0);
  ValueId w = c.cast(basis, t.dtype);
  ValueId xm = moveDim(c, x, dim, r - 1);
  Ints flat = c.type(xm).sizes;
  if (pairsIn) {
    flat.pop_back();
    flat.back() *= 2;
  }
  ValueId lhs = c.reshape(xm, flat);
  ValueId y = matmul(c, lhs, w);
  Ints ys = c.type(y).sizes;
  ys.back() = outLen;
  if (pairsOut) ys.push_back(2);
  return moveDim(c, c.reshape(y, ys), r - 1, dim);
}

void requireFloating(Builder& c, ValueId x, const char* what) {
  if (!isFloating(c.type(x).dtype)) c.fail(cat(what, " needs a floating tensor, got ", dtypeName(c.type(x).dtype)));
}
}  // namespace

ValueId pairOf(Builder& c, ValueId re, ValueId im) { return stack2(c, re, im, c.type(re).rank()); }

ValueId frameIndex(Builder& c, int64_t frames, int64_t len, int64_t step) {
  return bin(c, OpKind::Add, {c.scaled(c.reshape(iota(c, frames), {frames, 1}), static_cast<double>(step)),
                              c.reshape(iota(c, len), {1, len})});
}

ValueId dftRealToComplex(Builder& c, ValueId x, int64_t dim, bool onesided) {
  requireFloating(c, x, "_fft_r2c");
  const int64_t n = c.type(x).sizes[static_cast<size_t>(dim)], k = onesided ? n / 2 + 1 : n;
  ValueId a = dftAngles(c, n, k, n, "_fft_r2c");
  // W[j, k] = (cos, -sin): x @ W gives (Re, Im) of X[k] side by side.
  ValueId cs = c.op(OpKind::Cos, {a});
  ValueId sn = c.neg(c.op(OpKind::Sin, {a}));
  return alongDim(c, x, dim, false, c.reshape(pairOf(c, cs, sn), {n, 2 * k}), k, true);
}

ValueId dftComplexToComplex(Builder& c, ValueId z, int64_t dim, bool forward) {
  const int64_t n = c.type(z).sizes[static_cast<size_t>(dim)];
  ValueId a = dftAngles(c, n, n, n, "_fft_c2c");
  // (re + i im)(cos + i s sin), s = -1 forward: a [2n, 2n] real map whose
  // row (j, re) is (cos, s sin) and row (j, im) is (-s sin, cos), per k.
  ValueId cs = c.op(OpKind::Cos, {a}), sn = c.scaled(c.op(OpKind::Sin, {a}), forward ? -1.0 : 1.0);
  ValueId fromRe = pairOf(c, cs, sn), fromIm = pairOf(c, c.neg(sn), cs);  // [n, n, 2] each
  ValueId m = stack2(c, fromRe, fromIm, 1);                                // [n, 2, n, 2]
  return alongDim(c, z, dim, true, c.reshape(m, {2 * n, 2 * n}), n, true);
}

ValueId dftComplexToReal(Builder& c, ValueId z, int64_t dim, int64_t n) {
  const int64_t size = c.type(z).sizes[static_cast<size_t>(dim)], k = std::min(size, n / 2 + 1);
  if (k < size) z = c.op(OpKind::Slice, {z}, Attrs{{"dim", dim}, {"start", int64_t{0}}, {"end", k}, {"step", int64_t{1}}});
  ValueId a = dftAngles(c, k, n, n, "_fft_c2r");
  // w_k: 1 for k = 0 and k = n/2 (even n), 2 for the bins that stand for
  // their conjugate twin too.
  ValueId kk = c.reshape(iota(c, k), {k, 1});
  ValueId once = c.op(OpKind::LogicalOr, {c.op(OpKind::Eq, {kk, c.scalar(0, DType::I64)}),
                                          c.op(OpKind::Eq, {c.scaled(kk, 2.0), c.scalar(static_cast<double>(n), DType::I64)})});
  ValueId w = c.op(OpKind::Where, {once, c.scalar(1.0, DType::F64), c.scalar(2.0, DType::F64)});
  ValueId fromRe = c.mul(w, c.op(OpKind::Cos, {a})), fromIm = c.neg(c.mul(w, c.op(OpKind::Sin, {a})));  // [k, n]
  ValueId m = stack2(c, fromRe, fromIm, 1);                                                             // [k, 2, n]
  return alongDim(c, z, dim, true, c.reshape(m, {2 * k, n}), n, false);
}

}  // namespace aotc::decomp

namespace aotc::decomp {

// Note [Norms, scans, adaptive max pooling and attention]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// What PyTorch 2.x traces as single ATen ops (issue 36), spelled in the
// table's primitives so their gradients are autodiff's:
//  - vector norms: each order as the reduction it is (0: a count, 1: sum of
//    |x|, +-inf: amax/amin of |x|, whose gradient is split evenly over ties
//    as eager's norm_backward does), else (sum |x|^p)^(1/p).  Where eager's
//    norm_backward masks a division by zero (a zero norm, a zero element
//    under p < 1) the forward goes through `where` on a safe operand, so the
//    gradient there is 0 as eager's, never 0 * inf;
//  - cumprod: a Hillis-Steele scan, ceil(log2 n) multiplications by the
//    result shifted by 1, 2, 4, ... (padded with ones): the chain rule
//    through products needs no division, so the gradient is exact where
//    inputs are zero (eager's cumprod_backward takes a special path there);
//  - adaptive max pooling: window i along a dim of size n covers
//    [floor(i n / o), ceil((i + 1) n / o)); the rows and columns of every
//    window are gathered (windows shorter than the longest repeat their last
//    row or column, which changes neither the maximum nor its first
//    position) into a plane that a max_pool2d with kernel = stride = the
//    window's size reduces, and its indices are mapped back through the
//    gathers to h * W + w;
//  - attention: bmm, scale, mask, softmax, bmm -- the pattern the code
//    generator can fuse -- with ATen's safe softmax (a fully masked row gives
//    0, as 2.x's fused kernels and math path do).
namespace {
/// A 0-dim bool: whether each row of x (over `dim`) is all -inf.
ValueId allMinusInf(Builder& c, ValueId x, int64_t dim) {
  return bin(c, OpKind::Eq, {reduceOp(c, OpKind::Amax, c.op(OpKind::Detach, {x}), {dim}, true), sc(c, -INFINITY, x)});
}
}  // namespace

ValueId vectorNorm(Builder& c, ValueId x, double ord, const Ints& dims, bool keep) {
  const TensorType t = c.type(x);
  if (!isFloating(t.dtype)) c.fail("vector norm expects a floating-point input");
  if (std::isnan(ord)) c.fail("vector norm: the order must not be NaN");
  ValueId a = c.op(OpKind::Abs, {x});
  if (ord == 0.0) {
    // The count of non-zeros, differentiable with gradient 0 as eager's:
    // through sign, whose gradient is 0 (a NaN counts, as x != 0).
    ValueId nz = c.op(OpKind::Where, {bin(c, OpKind::Ne, {x, sc(c, 0.0, x)}), sc(c, 1.0, x), bin(c, OpKind::Mul, {c.op(OpKind::Sign, {x}), sc(c, 0.0, x)})});
    return reduceOp(c, OpKind::Sum, nz, dims, keep);
  }
  if (std::isinf(ord)) return reduceOp(c, ord > 0 ? OpKind::Amax : OpKind::Amin, a, dims, keep);
  if (ord == 1.0) return reduceOp(c, OpKind::Sum, a, dims, keep);
  ValueId s;
  if (ord == 2.0) {
    s = reduceOp(c, OpKind::Sum, bin(c, OpKind::Mul, {x, x}), dims, keep);
  } else {
    // |x|^p with a zero element kept out of pow's gradient (p < 1: eager
    // masks it; p < 0: |0|^p is +inf, and the norm is 0).
    ValueId zero = bin(c, OpKind::Eq, {a, sc(c, 0.0, x)});
    ValueId safe = c.op(OpKind::Where, {zero, sc(c, 1.0, x), a});
    ValueId ap = c.op(OpKind::Where, {zero, sc(c, ord < 0 ? INFINITY : 0.0, x), bin(c, OpKind::Pow, {safe, sc(c, ord, x)})});
    s = reduceOp(c, OpKind::Sum, ap, dims, keep);
  }
  if (ord < 0) return bin(c, OpKind::Pow, {s, sc(c, 1.0 / ord, s)});
  // A zero norm: value 0 and gradient 0 (eager's masked_fill(norm == 0, 0)).
  ValueId zero = bin(c, OpKind::Eq, {s, sc(c, 0.0, s)});
  ValueId safe = c.op(OpKind::Where, {zero, sc(c, 1.0, s), s});
  ValueId r = ord == 2.0 ? c.op(OpKind::Sqrt, {safe}) : bin(c, OpKind::Pow, {safe, sc(c, 1.0 / ord, s)});
  return c.op(OpKind::Where, {zero, sc(c, 0.0, s), r});
}

ValueId cumprod(Builder& c, ValueId x, int64_t dim) {
  const TensorType t = c.type(x);
  if (t.rank() == 0) return c.op(OpKind::Clone, {x});
  dim = wrapDim(dim, t.rank());
  const int64_t n = t.sizes[static_cast<size_t>(dim)];
  if (n <= 1) return c.op(OpKind::Clone, {x});
  ValueId y = x;
  for (int64_t k = 1; k < n; k *= 2) {
    Ints head = t.sizes;
    head[static_cast<size_t>(dim)] = k;
    ValueId ones = c.full(1.0, TensorType::contiguous(t.dtype, head));
    ValueId rest = c.op(OpKind::Slice, {y}, Attrs{{"dim", dim}, {"start", int64_t{0}}, {"end", n - k}, {"step", int64_t{1}}});
    ValueId shifted = c.op(OpKind::Cat, {ones, rest}, Attrs{{"dim", dim}});
    y = c.mul(y, shifted);
  }
  return y;
}

ValueId safeSoftmax(Builder& c, ValueId x, int64_t dim) {
  ValueId full = allMinusInf(c, x, dim);
  ValueId zero = sc(c, 0.0, x);
  ValueId p = softmaxLike(c, c.op(OpKind::Where, {full, zero, x}), dim, false);
  return c.op(OpKind::Where, {full, zero, p});
}

std::pair<ValueId, ValueId> adaptiveMax2d(Builder& c, ValueId x, const Ints& out) {
  const Ints s = c.type(x).sizes;
  if (s.size() != 4) c.fail("adaptive_max_pool2d: expects a 4-D (N, C, H, W) input");
  if (out.size() != 2 || out[0] <= 0 || out[1] <= 0) c.fail("adaptive_max_pool2d: output_size must be two positive values");
  const int64_t H = s[2], W = s[3];
  if (H <= 0 || W <= 0) c.fail("adaptive_max_pool2d: the input's height and width must be positive");
  if (H % out[0] == 0 && W % out[1] == 0) {
    Ints k{H / out[0], W / out[1]};
    V r = c.ops(OpKind::MaxPool2d, {x}, Attrs{{"kernel", k}, {"stride", k}, {"padding", Ints{0, 0}}, {"dilation", Ints{1, 1}}, {"ceil_mode", false}}, {});
    return {r[0], r[1]};
  }
  // The window rows (or columns) of each output position, the last one
  // repeated up to the longest window's length K.
  auto windows = [&](int64_t n, int64_t o, int64_t& K) {
    K = 0;
    for (int64_t i = 0; i < o; ++i) K = std::max(K, ((i + 1) * n + o - 1) / o - i * n / o);
    requireIndexMap(c, o * K, "adaptive_max_pool2d");
    Ints idx;
    for (int64_t i = 0; i < o; ++i)
      for (int64_t k = 0; k < K; ++k) idx.push_back(std::min(i * n / o + k, ((i + 1) * n + o - 1) / o - 1));
    return idx;
  };
  int64_t KH = 0, KW = 0;
  const Ints rows = windows(H, out[0], KH), cols = windows(W, out[1], KW);
  ValueId g = pick(c, pick(c, x, 2, rows), 3, cols);
  Ints k{KH, KW};
  V r = c.ops(OpKind::MaxPool2d, {g}, Attrs{{"kernel", k}, {"stride", k}, {"padding", Ints{0, 0}}, {"dilation", Ints{1, 1}}, {"ceil_mode", false}}, {});
  // r[1] indexes the gathered plane (rows * cols): map it back.
  const Ints is = c.type(r[1]).sizes;
  ValueId flat = reshapeTo(c, r[1], {-1});
  ValueId width = c.scalar(static_cast<double>(out[1] * KW), DType::I64);
  ValueId gr = bin(c, OpKind::DivFloor, {flat, width});
  ValueId gc = bin(c, OpKind::Sub, {flat, bin(c, OpKind::Mul, {gr, width})});
  ValueId h = c.op(OpKind::IndexSelect, {indexVector(c, rows), gr}, Attrs{{"dim", int64_t{0}}});
  ValueId w = c.op(OpKind::IndexSelect, {indexVector(c, cols), gc}, Attrs{{"dim", int64_t{0}}});
  ValueId idx = bin(c, OpKind::Add, {bin(c, OpKind::Mul, {h, c.scalar(static_cast<double>(W), DType::I64)}), w});
  return {r[0], reshapeTo(c, idx, is)};
}

Attention attention(Builder& c, ValueId q, ValueId k, ValueId v, std::optional<ValueId> mask, bool causal,
                    std::optional<double> scale) {
  const Ints qs = c.type(q).sizes, ks = c.type(k).sizes, vs = c.type(v).sizes;
  const size_t r = qs.size();
  if (r < 2 || ks.size() != r || vs.size() != r) c.fail("attention: query, key and value must have the same rank, at least 2");
  const int64_t L = qs[r - 2], E = qs[r - 1], S = ks[r - 2], Ev = vs[r - 1];
  if (ks[r - 1] != E || vs[r - 2] != S)
    c.fail(cat("attention: key ", detail::shapeStr(ks), " and value ", detail::shapeStr(vs), " do not match query ", detail::shapeStr(qs)));
  // Grouped-query heads: key/value head j serves query heads j*g .. j*g+g-1.
  auto heads = [&](ValueId t) {
    Ints ts = c.type(t).sizes;
    if (r < 3 || ts[r - 3] == qs[r - 3]) return t;
    const int64_t hk = ts[r - 3], hq = qs[r - 3];
    if (hk <= 0 || hq % hk) c.fail(cat("attention: ", hq, " query heads are not a multiple of ", hk, " key/value heads"));
    Ints wide = ts;
    wide.insert(wide.begin() + static_cast<std::ptrdiff_t>(r - 2), hq / hk);
    ValueId u = c.op(OpKind::Unsqueeze, {t}, Attrs{{"dim", static_cast<int64_t>(r - 2)}});
    ts[r - 3] = hq;
    return reshapeTo(c, c.expand(u, wide), ts);
  };
  k = heads(k);
  v = heads(v);
  Ints batch(qs.begin(), qs.end() - 2);
  auto flat = [&](ValueId t, int64_t rows, int64_t cols) {
    Ints full = batch;
    full.push_back(rows);
    full.push_back(cols);
    return reshapeTo(c, c.expand(t, full), {-1, rows, cols});
  };
  ValueId q3 = reshapeTo(c, q, {-1, L, E}), k3 = flat(k, S, E), v3 = flat(v, S, Ev);
  const double sc0 = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(E));
  ValueId scores = bin(c, OpKind::Mul, {c.op(OpKind::Bmm, {q3, c.op(OpKind::Transpose, {k3}, Attrs{{"dim0", int64_t{1}}, {"dim1", int64_t{2}}})}), sc(c, sc0, q)});
  ValueId ninf = sc(c, -INFINITY, q);
  if (causal) {
    ValueId rowsIdx = c.op(OpKind::View, {iota(c, L)}, Attrs{{"size", Ints{L, 1}}});
    scores = c.op(OpKind::Where, {bin(c, OpKind::Ge, {rowsIdx, iota(c, S)}), scores, ninf});
  }
  if (mask) {
    ValueId m = *mask;
    if (c.type(m).rank() > 2) m = flat(m, L, S);
    scores = c.type(m).dtype == DType::Bool ? c.op(OpKind::Where, {m, scores, ninf}) : bin(c, OpKind::Add, {scores, m});
  }
  // Safe softmax and logsumexp on rows that are not fully masked.
  ValueId full = allMinusInf(c, scores, 2);
  ValueId zero = sc(c, 0.0, scores);
  ValueId safe = c.op(OpKind::Where, {full, zero, scores});
  ValueId p = c.op(OpKind::Where, {full, zero, softmaxLike(c, safe, 2, false)});
  ValueId m = c.op(OpKind::Detach, {reduceOp(c, OpKind::Amax, safe, {2}, true)});
  ValueId sum = reduceOp(c, OpKind::Sum, c.op(OpKind::Exp, {bin(c, OpKind::Sub, {safe, m})}), {2}, true);
  ValueId lse = c.op(OpKind::Where, {full, zero, bin(c, OpKind::Add, {c.op(OpKind::Log, {sum}), m})});
  Ints outSize(qs.begin(), qs.end() - 1);
  Ints lseSize = outSize;
  outSize.push_back(Ev);
  return {reshapeTo(c, c.op(OpKind::Bmm, {p, v3}), outSize), reshapeTo(c, lse, lseSize)};
}

}  // namespace aotc::decomp
