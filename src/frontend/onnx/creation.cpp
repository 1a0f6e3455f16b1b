//===- onnx/creation.cpp - Tensors made from attributes and shapes ----------===//
//
// Constant, ConstantOfShape, Range, EyeLike, OneHot.
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

namespace {

HostTensor fillValue(Node& c, const Ints& shape) {
  HostTensor v = HostTensor::zeros(DType::F32, {});
  if (const auto* t = c.tensorAttr("value")) {
    v = c.readAttrTensor(*t);
    if (v.data.size() != 1) c.fail("ConstantOfShape: value must hold one element");
  }
  for (int64_t d : shape)
    if (d < 0) c.fail("ConstantOfShape: negative dim");
  int64_t n = 1;
  for (int64_t d : shape) n = mulSize(n, d);
  if (n > kMaxElements) c.fail("ConstantOfShape: too many elements");
  HostTensor out = HostTensor::zeros(v.dtype, shape);
  std::fill(out.data.begin(), out.data.end(), v.data[0]);
  return out;
}

Outs constantOfShapeOp(Node& c) { return {fillValue(c, c.knownInts(0, "shape"))}; }

Outs constantOp(Node& c) {
  if (const auto* t = c.tensorAttr("value")) return {c.readAttrTensor(*t)};
  auto scalarOf = [&](double v, DType d) {
    HostTensor h = HostTensor::zeros(d, {});
    h.data[0] = roundTo(d, v);
    return h;
  };
  if (c.hasAttr("value_float")) return {scalarOf(c.f("value_float", 0), DType::F32)};
  // Integer constants are read as given, as integer initializers are: a
  // slice end of INT64_MAX (PyTorch 2.x writes them) saturates where it is
  // used, and a value beyond 2^53 used at run time is refused there.
  if (const auto* a = c.attr("value_int")) {
    if (a->type() != onnx::AttributeProto::INT) c.fail("attribute 'value_int' must be an int");
    return {scalarOf(static_cast<double>(a->i()), DType::I64)};
  }
  if (c.hasAttr("value_floats")) {
    auto fs = c.floats("value_floats");
    HostTensor h = HostTensor::zeros(DType::F32, {static_cast<int64_t>(fs.size())});
    for (size_t k = 0; k < fs.size(); ++k) h.data[k] = fs[k];
    return {h};
  }
  if (const auto* a = c.attr("value_ints")) {
    if (a->type() != onnx::AttributeProto::INTS) c.fail("attribute 'value_ints' must be a list of ints");
    HostTensor h = HostTensor::zeros(DType::I64, {static_cast<int64_t>(a->ints_size())});
    for (int k = 0; k < a->ints_size(); ++k) h.data[static_cast<size_t>(k)] = static_cast<double>(a->ints(k));
    return {h};
  }
  c.fail("Constant: only tensor, float and int values are supported (sparse and string constants are not)");
}

Outs rangeOp(Node& c) {
  double start = c.knownScalar(0, "start"), limit = c.knownScalar(1, "limit"), delta = c.knownScalar(2, "delta");
  DType d = c.dtypeIn(0);
  if (delta == 0) c.fail("Range: delta must not be 0");
  // Range 27 defines float16/bfloat16 accumulated in stash_type's precision
  // (float32, or float64 with 11), as the reference's numpy.arange in that
  // type: element 1 is start + delta rounded, the step their difference, and
  // element i >= 2 start + i * step, each operation rounded to the type.
  if (c.opset() >= 27 && (d == DType::F16 || d == DType::BF16)) {
    int64_t st = c.i("stash_type", 1);
    if (st != 1 && st != 11) c.fail(cat("Range: stash_type ", st, " is not float (1) or double (11)"));
    DType w = st == 1 ? DType::F32 : DType::F64;
    double s = roundTo(w, start);
    double cnt = std::ceil((limit - s) / delta);
    int64_t n = cnt > 0 ? static_cast<int64_t>(std::min(cnt, static_cast<double>(kMaxElements))) : 0;
    if (n >= kMaxFoldElements) c.fail("Range: too many elements");
    HostTensor t = HostTensor::zeros(d, {n});
    double b1 = roundTo(w, s + delta), step = roundTo(w, b1 - s);
    for (int64_t k = 0; k < n; ++k) {
      double v = k == 0 ? s : k == 1 ? b1 : roundTo(w, s + roundTo(w, roundTo(w, static_cast<double>(k)) * step));
      t.data[static_cast<size_t>(k)] = roundTo(d, v);
    }
    return {t};
  }
  double cnt = std::ceil((limit - start) / delta);
  int64_t n = cnt > 0 ? static_cast<int64_t>(std::min(cnt, static_cast<double>(kMaxElements))) : 0;
  if (n >= kMaxFoldElements) c.fail("Range: too many elements");
  HostTensor t = HostTensor::zeros(d, {n});
  for (int64_t k = 0; k < n; ++k) t.data[static_cast<size_t>(k)] = roundTo(d, start + static_cast<double>(k) * delta);
  return {t};
}

Outs eyeLikeOp(Node& c) {
  const TensorType t = c.typeIn(0);
  if (t.rank() != 2) c.fail("EyeLike: the input must be 2-D");
  DType d = t.dtype;
  if (c.hasAttr("dtype")) {
    auto dd = dtypeOfOnnx(static_cast<int>(c.i("dtype")));
    if (!dd) c.fail("EyeLike: unsupported dtype");
    d = *dd;
  }
  int64_t k = c.i("k", 0);
  HostTensor h = HostTensor::zeros(d, t.sizes);
  for (int64_t r = 0; r < t.sizes[0]; ++r)
    if (r + k >= 0 && r + k < t.sizes[1]) h.data[static_cast<size_t>(r * t.sizes[1] + r + k)] = 1;
  return {h};
}

Outs oneHotOp(Node& c) {
  ValueId idx = c.in(0);
  double depthV = c.knownScalar(1, "depth");
  if (!(depthV >= 1) || depthV > static_cast<double>(kMaxIndexMap)) c.fail("OneHot: depth must be at least 1");
  int64_t depth = static_cast<int64_t>(depthV);
  ValueId values = c.in(2);
  if (c.type(values).numel() != 2) c.fail("OneHot: values must hold [off, on]");
  int64_t outRank = c.type(idx).rank() + 1;
  int64_t a = c.axis(c.i("axis", -1), outRank);
  ValueId i = isFloating(c.type(idx).dtype) ? c.cast(c.op(OpKind::Trunc, {idx}), DType::I64) : c.cast(idx, DType::I64);
  i = wrapNegative(c, i, depth);
  i = c.op(OpKind::Unsqueeze, {i}, Attrs{{"dim", a}});
  Ints shape(static_cast<size_t>(outRank), 1);
  shape[static_cast<size_t>(a)] = depth;
  ValueId pos = c.reshape(iota(c, depth), shape);
  ValueId hot = bin(c, OpKind::Eq, {pos, i});
  ValueId flat = c.reshape(values, {2});
  ValueId off = c.op(OpKind::Select, {flat}, Attrs{{"dim", int64_t{0}}, {"index", int64_t{0}}});
  ValueId on = c.op(OpKind::Select, {flat}, Attrs{{"dim", int64_t{0}}, {"index", int64_t{1}}});
  return {c.op(OpKind::Where, {hot, on, off})};
}

}  // namespace

Entries creationConverters() {
  return {
    {"Constant", constantOp},
    {"ConstantOfShape", constantOfShapeOp},
    {"EyeLike", eyeLikeOp},
    {"OneHot", oneHotOp},
    {"Range", rangeOp},
  };
}

}  // namespace aotc::onnx_fe
