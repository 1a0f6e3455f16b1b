//===- onnx/random.cpp - Random numbers -------------------------------------===//
//
// Dropout (identity in inference, the IR's random mask in training).
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

namespace {

Outs dropoutOp(Node& c) {
  ValueId x = c.in(0);
  // Before opset 12 Dropout has no training mode: an identity when running a model.
  bool training = c.opset() >= 12 && c.has(2) && c.knownScalar(2, "training_mode") != 0;
  double ratio = c.opset() >= 12 ? (c.has(1) ? c.knownScalar(1, "ratio") : 0.5) : c.f("ratio", 0.5);
  if (!training || ratio == 0) {
    Outs r{x};
    if (c.wantsOutput(1)) r.push_back(c.full(1.0, TensorType::contiguous(DType::Bool, c.type(x).sizes)));
    return r;
  }
  // Training: a mask from aotc's seeded generator (Note [Random numbers]);
  // ONNX does not specify the random stream, so no two runtimes agree here.
  if (ratio < 0 || ratio >= 1) c.fail("Dropout: ratio must be in [0, 1)");
  Ints shape = c.type(x).sizes;
  ValueId keep = randMask(c, 1.0 - ratio, shape);
  ValueId m = c.cast(keep, c.type(x).dtype);
  ValueId xm = c.mul(x, m);
  Outs r{c.mul(xm, sc(c, 1.0 / (1.0 - ratio), x))};
  if (c.wantsOutput(1)) r.push_back(keep);
  return r;
}

}  // namespace

Entries randomConverters() {
  return {
    {"Dropout", dropoutOp},
  };
}

}  // namespace aotc::onnx_fe
