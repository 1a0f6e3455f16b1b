//===- onnx/readers.cpp - Helpers the families share ------------------------===//
//
// One input to one op, two inputs to one op (with ONNX's broadcasting done by the op).
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

Outs unary(Node& c, OpKind k) { return {c.op(k, {c.in(0)})}; }

Outs binary(Node& c, OpKind k) {
  ValueId a = c.in(0);
  ValueId b = c.in(1);
  return {c.op(k, {a, b})};
}

}  // namespace aotc::onnx_fe
