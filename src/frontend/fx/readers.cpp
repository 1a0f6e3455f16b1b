//===- fx/readers.cpp - Argument helpers every family uses ------------------===//
//
// The few converter helpers that several families share: a tensor operand and
// a Python scalar as one (binary, unary), constants shaped like a tensor, the
// dtype= and dim arguments.  The Converter class (converter.h) reads single
// arguments; these read argument patterns.
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

V binary(Converter& c, OpKind k) {
  // Core ATen (run_decompositions) passes a Python number as `self` where
  // the decomposition wrote `2.0 - t` (sub.Tensor(2.0, t)): a wrapped number
  // of the tensor's dtype, as eager takes it.  Never for a mutation.
  if (!opInfo(k).functional && !c.isTensor(0, "self") && c.isTensor(1, "other")) {
    ValueId b = c.tensor(1, "other");
    ValueId a = c.operand(0, "self", b);
    return {c.op(k, {a, b})};
  }
  ValueId a = c.tensor(0, "self");
  return {c.op(k, {a, c.operand(1, "other", a)})};
}

V unary(Converter& c, OpKind k) {
  if (k == OpKind::Clone) tensorOptions(c);  // clone(self, *, memory_format)
  return {c.op(k, {c.tensor(0, "self")})};
}

void tensorOptions(Converter& c) {
  const json* layout = c.arg(SIZE_MAX, "layout");
  if (layout && !layout->is_null() && !(layout->is_object() && layout->value("layout", "") == "strided"))
    c.fail("layout " + layout->dump() + " is not supported (only strided tensors are)");
  // Where eager puts the tensor, never its values: the artifact runs on its
  // own device.
  c.ignore(SIZE_MAX, "device");
  c.ignore(SIZE_MAX, "pin_memory");
  c.ignore(SIZE_MAX, "non_blocking");
  // Strides, never values: aotc's values do not depend on the layout, and a
  // layout the graph records (meta.stride) is kept where it differs from
  // the IR's (convertBody).
  c.ignore(SIZE_MAX, "memory_format");
}

ValueId constantLike(Converter& c, double v, const TensorType& t) {
  return c.op(OpKind::Constant, {}, Attrs{{"value", v}, {"dtype", std::string(dtypeName(t.dtype))}, {"shape", t.sizes}});
}

DType dtypeArg(Converter& c, size_t i, const char* kw, DType dflt) {
  if (!c.has(i, kw)) return dflt;
  const json* d = c.arg(i, kw);
  auto p = d->is_object() && d->contains("dtype") ? dtypeFromTorchName((*d)["dtype"].get<std::string>()) : std::nullopt;
  if (!p) c.fail("unsupported dtype argument " + d->dump());
  return *p;
}

int64_t dimArg(Converter& c, size_t i, const char* kw, ValueId x, int64_t dflt) {
  int64_t r = std::max<int64_t>(c.type(x).rank(), 1);
  return wrapDim(c.integer(i, kw, dflt), r);
}

/// An in-place op `op_(self, ...)`: the functional op, then copy_ into self.
V inplaceOf(Converter& c, ValueId v) { return {c.op(OpKind::CopyInplace, {c.tensor(0, "self"), v})}; }

std::optional<double> optNumber(Converter& c, size_t i, const char* kw) {
  return c.has(i, kw) ? std::optional<double>(c.number(i, kw)) : std::nullopt;
}

}  // namespace aotc::fx
