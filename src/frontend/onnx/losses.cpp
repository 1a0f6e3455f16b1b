//===- onnx/losses.cpp - Losses ---------------------------------------------===//
//
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

namespace {

/// Negative log likelihood over class dim 1 of [N, C, d...] (or [N, C]),
/// with optional class weights, ignore_index and reduction (ONNX's rules:
/// mean divides by the sum of the picked weights).
ValueId nll(Node& c, ValueId logp, ValueId target, ValueId weight, std::optional<int64_t> ignore, const std::string& reduction) {
  ValueId t = c.cast(target, DType::I64);
  ValueId valid = kNoValue;
  if (ignore) {
    valid = bin(c, OpKind::Ne, {t, c.scalar(static_cast<double>(*ignore), DType::I64)});
    t = c.op(OpKind::Where, {valid, t, c.scalar(0, DType::I64)});
  }
  ValueId t1 = c.op(OpKind::Unsqueeze, {t}, Attrs{{"dim", int64_t{1}}});
  ValueId picked = c.op(OpKind::Squeeze, {c.op(OpKind::Gather, {logp, t1}, Attrs{{"dim", int64_t{1}}})}, Attrs{{"dim", Ints{1}}});
  ValueId w = kNoValue;
  if (weight != kNoValue) w = c.op(OpKind::IndexSelect, {weight, c.reshape(t, {c.type(t).numel()})}, Attrs{{"dim", int64_t{0}}});
  if (w != kNoValue) w = c.reshape(w, c.type(t).sizes);
  if (valid != kNoValue) {
    ValueId vf = c.cast(valid, c.type(logp).dtype);
    w = w == kNoValue ? vf : c.mul(w, vf);
  }
  ValueId loss = c.neg(picked);
  if (w != kNoValue) loss = c.mul(loss, w);
  if (reduction == "none") return loss;
  ValueId total = reduceOp(c, OpKind::Sum, loss, {}, false);
  if (reduction == "sum") return total;
  if (reduction != "mean") c.fail(cat("reduction '", reduction, "' is not supported"));
  if (w == kNoValue) return c.div(total, sc(c, static_cast<double>(c.type(loss).numel()), total));
  return c.div(total, reduceOp(c, OpKind::Sum, w, {}, false));
}

std::optional<int64_t> ignoreIndex(Node& c) {
  if (!c.hasAttr("ignore_index")) return std::nullopt;
  return c.i("ignore_index");
}

Outs nllLossOp(Node& c) {
  ValueId x = c.in(0), t = c.in(1);
  if (c.type(x).rank() < 2) c.fail("NegativeLogLikelihoodLoss: the input needs at least 2 dims");
  ValueId w = c.has(2) ? c.in(2) : kNoValue;
  return {nll(c, x, t, w, ignoreIndex(c), c.s("reduction", "mean"))};
}

Outs softmaxCrossEntropyOp(Node& c) {
  ValueId x = c.in(0), t = c.in(1);
  if (c.type(x).rank() < 2) c.fail("SoftmaxCrossEntropyLoss: the scores need at least 2 dims");
  ValueId logp = softmaxLike(c, x, 1, true);
  ValueId w = c.has(2) ? c.in(2) : kNoValue;
  ValueId loss = nll(c, logp, t, w, ignoreIndex(c), c.s("reduction", "mean"));
  return {loss, logp};
}

}  // namespace

Entries lossesConverters() {
  return {
    {"NegativeLogLikelihoodLoss", nllLossOp},
    {"SoftmaxCrossEntropyLoss", softmaxCrossEntropyOp},
  };
}

}  // namespace aotc::onnx_fe
