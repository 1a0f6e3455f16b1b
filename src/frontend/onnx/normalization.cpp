//===- onnx/normalization.cpp - Normalization -------------------------------===//
//
// BatchNormalization (inference and training mode), InstanceNormalization,
// LayerNormalization, GroupNormalization (18: per-group scale and bias; 21:
// per-channel), RMSNormalization (23), MeanVarianceNormalization and LRN.
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

namespace {

/// (x - mean) / sqrt(var + eps) over `dims` (decomp::normalize): the
/// normalized x and 1/sqrt(var + eps); the mean and variance (kept dims)
/// through `meanOut` / `varOut` when asked.
std::pair<ValueId, ValueId> normalizeX(Node& c, ValueId x, const Ints& dims, double eps, ValueId* meanOut = nullptr,
                                       ValueId* varOut = nullptr) {
  Normalized n = normalize(c, x, dims, eps);
  if (meanOut) *meanOut = n.mean;
  if (varOut) *varOut = n.var;
  return {n.y, n.rstd};
}

/// A per-channel [C] tensor shaped to broadcast over [N, C, ...].
ValueId perChannel(Node& c, ValueId v, int64_t rank) {
  Ints shape(static_cast<size_t>(rank), 1);
  shape[1] = c.type(v).numel();
  return c.reshape(v, shape);
}

Outs batchNormOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  if (r < 2) c.fail("BatchNormalization: the input needs at least 2 dims");
  double eps = c.f("epsilon", 1e-5), momentum = c.f("momentum", 0.9);
  bool training = c.opset() >= 14 && c.i("training_mode", 0) != 0;
  if (c.opset() < 14 && c.numOutputs() > 1) {
    for (size_t k = 1; k < c.numOutputs(); ++k)
      if (c.wantsOutput(k)) c.fail("BatchNormalization: the training outputs of opsets before 14 are not supported");
  }
  ValueId scale = perChannel(c, c.in(1), r), bias = perChannel(c, c.in(2), r);
  if (!training) {
    ValueId mean = perChannel(c, c.in(3), r), var = perChannel(c, c.in(4), r);
    ValueId rstd = c.op(OpKind::Rsqrt, {c.add(var, sc(c, eps, var))});
    ValueId y = c.add(c.mul(c.mul(c.sub(x, mean), rstd), scale), bias);
    return {y};
  }
  Ints dims{0};
  for (int64_t d = 2; d < r; ++d) dims.push_back(d);
  ValueId mean, var;
  ValueId xn = normalizeX(c, x, dims, eps, &mean, &var).first;
  ValueId y = c.add(c.mul(xn, scale), bias);
  // ONNX: running = input * momentum + current * (1 - momentum), with the
  // batch's (biased) variance.
  int64_t C = c.type(x).sizes[1];
  ValueId bm = c.reshape(mean, {C});
  ValueId bv = c.reshape(var, {C});
  ValueId inMean = c.in(3), inVar = c.in(4);
  ValueId oldMean = c.scaled(c.op(OpKind::Detach, {inMean}), momentum);
  ValueId newMean = c.scaled(c.op(OpKind::Detach, {bm}), 1 - momentum);
  ValueId runMean = c.add(oldMean, newMean);
  ValueId oldVar = c.scaled(c.op(OpKind::Detach, {inVar}), momentum);
  ValueId newVar = c.scaled(c.op(OpKind::Detach, {bv}), 1 - momentum);
  ValueId runVar = c.add(oldVar, newVar);
  // Running statistics held by initializers (buffers) are updated in place:
  // the forward epilogue writes them back (--train).
  for (auto [input, value] : {std::pair{inMean, runMean}, std::pair{inVar, runVar}}) {
    const GraphInput* gi = c.graph().inputOf(input);
    if (c.train() && gi && gi->role == InputRole::Buffer) c.op(OpKind::CopyInplace, {input, value});
  }
  return {y, runMean, runVar};
}

Outs instanceNormOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  if (r < 3) c.fail("InstanceNormalization: the input needs at least 3 dims");
  Ints dims;
  for (int64_t d = 2; d < r; ++d) dims.push_back(d);
  ValueId xn = normalizeX(c, x, dims, c.f("epsilon", 1e-5)).first;
  ValueId s = perChannel(c, c.in(1), r);
  ValueId b = perChannel(c, c.in(2), r);
  return {c.add(c.mul(xn, s), b)};
}

Outs layerNormOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  int64_t a = c.axis(c.i("axis", -1), r);
  Ints dims;
  for (int64_t d = a; d < r; ++d) dims.push_back(d);
  ValueId mean;
  auto [xn, rstd] = normalizeX(c, x, dims, c.f("epsilon", 1e-5), &mean);
  ValueId y = c.mul(xn, c.in(1));
  if (c.has(2)) y = c.add(y, c.in(2));
  return {y, mean, rstd};
}

/// stash_type 1 (the default): a 16-bit input is normalized in float32.
ValueId stashed(Node& c, ValueId x) {
  DType d = c.type(x).dtype;
  if (c.i("stash_type", 1) != 1) c.fail("stash_type other than 1 (float32) is not supported");
  return d == DType::F16 || d == DType::BF16 ? c.cast(x, DType::F32) : x;
}

Outs groupNormOp(Node& c) {
  ValueId x0 = c.in(0);
  const Ints s = c.type(x0).sizes;
  int64_t r = c.type(x0).rank(), g = c.i("num_groups");
  if (r < 2) c.fail("GroupNormalization: the input needs at least 2 dims");
  int64_t ch = s[1];
  if (g <= 0 || ch % g) c.fail(cat("GroupNormalization: ", ch, " channels do not split into ", g, " groups"));
  bool perGroup = c.opset() < 21;  // 18: scale and bias per group; 21: per channel
  int64_t want = perGroup ? g : ch;
  if (c.type(c.in(1)).numel() != want || c.type(c.in(2)).numel() != want)
    c.fail(cat("GroupNormalization ", perGroup ? 18 : 21, ": scale and bias must have ", want, " values"));
  ValueId x = perGroup ? x0 : stashed(c, x0);
  ValueId xg = c.reshape(x, {s[0], g, s[0] == 0 ? 0 : c.type(x).numel() / std::max<int64_t>(s[0] * g, 1)});
  ValueId y = normalizeX(c, xg, {2}, c.f("epsilon", 1e-5)).first;
  if (perGroup) {
    ValueId scaledY = c.mul(y, c.reshape(c.in(1), {1, g, 1}));
    y = c.add(scaledY, c.reshape(c.in(2), {1, g, 1}));
    return {c.reshape(y, s)};
  }
  y = c.cast(c.reshape(y, s), c.type(x0).dtype);
  ValueId scaledY = c.mul(y, perChannel(c, c.in(1), r));
  return {c.add(scaledY, perChannel(c, c.in(2), r))};
}

/// RMSNormalization (23): x / sqrt(mean(x^2 over axis..) + epsilon) * scale.
Outs rmsNormOp(Node& c) {
  ValueId x0 = c.in(0);
  int64_t r = c.type(x0).rank();
  int64_t a = c.axis(c.i("axis", -1), std::max<int64_t>(r, 1));
  ValueId x = stashed(c, x0);
  Ints dims;
  for (int64_t d = a; d < r; ++d) dims.push_back(d);
  ValueId ms = r == 0 ? c.mul(x, x) : reduceOp(c, OpKind::Mean, c.mul(x, x), dims, true);
  ValueId y = c.mul(x, c.op(OpKind::Rsqrt, {c.add(ms, sc(c, c.f("epsilon", 1e-5), ms))}));
  return {c.mul(c.cast(y, c.type(x0).dtype), c.in(1))};
}

Outs mvnOp(Node& c) {
  ValueId x = c.in(0);
  Ints axes = c.ints("axes", Ints{0, 2, 3});
  Ints dims;
  for (int64_t a : axes) dims.push_back(c.axis(a, c.type(x).rank()));
  ValueId mean = reduceOp(c, OpKind::Mean, x, dims, true);
  ValueId dlt = c.sub(x, mean);
  ValueId dv = centred(c, x, mean);  // Note [Detached centre]
  ValueId var = reduceOp(c, OpKind::Mean, c.mul(dv, dv), dims, true);
  ValueId sd = c.op(OpKind::Sqrt, {var});
  return {c.div(dlt, c.add(sd, sc(c, 1e-9, x)))};
}

Outs lrnOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  if (r != 4) c.fail("LRN: only 4-D inputs are supported");
  int64_t size = c.i("size");
  double alpha = c.f("alpha", 1e-4), beta = c.f("beta", 0.75), bias = c.f("bias", 1.0);
  if (size <= 0) c.fail("LRN: size must be positive");
  // Sum of squares over channels [c - floor((size-1)/2), c + ceil((size-1)/2)].
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  ValueId sq = c.mul(x, x);
  const Ints s = c.type(x).sizes;
  ValueId sq3 = c.reshape(sq, {s[0], 1, s[1], s[2] * s[3]});
  ValueId padded = padTo(c, sq3, {0, 0, lo, 0}, {0, 0, hi, 0}, "constant", 0.0);
  ValueId sum = c.op(OpKind::AvgPool2d, {padded}, Attrs{{"kernel", Ints{size, 1}}, {"stride", Ints{1, 1}}, {"padding", Ints{0, 0}},
                                                      {"count_include_pad", true}});
  sum = c.reshape(c.scaled(sum, static_cast<double>(size)), s);
  ValueId scaledSum = c.scaled(sum, alpha / static_cast<double>(size));
  ValueId base = c.add(scaledSum, sc(c, bias, x));
  return {c.div(x, c.op(OpKind::Pow, {base, sc(c, beta, x)}))};
}

}  // namespace

Entries normalizationConverters() {
  return {
    {"BatchNormalization", batchNormOp},
    {"GroupNormalization", groupNormOp},
    {"InstanceNormalization", instanceNormOp},
    {"LayerNormalization", layerNormOp},
    {"LRN", lrnOp},
    {"MeanVarianceNormalization", mvnOp},
    {"RMSNormalization", rmsNormOp},
  };
}

}  // namespace aotc::onnx_fe
