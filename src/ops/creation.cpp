//===- creation.cpp - Constants, arange, random bits ----------------------===//
//
// Note [Op rows] (rules.h) says what a row holds and who reads it.  Random
// ops draw Philox4x32-10 bits from (seed operand, offset attribute, element
// index): the reference (philoxUniform) and the device prelude
// (aotc_uniform) compute the same bits, so every backend draws the same
// dropout mask.
//===----------------------------------------------------------------------===//
#include <cmath>

#include "aotc/ops/kernel_text.h"
#include "rule_util.h"

namespace aotc::detail {

namespace {

using K = OpKind;
using TT = std::vector<TensorType>;
using ktext::literal;
using ktext::storageType;

// ---- shape rules

TT constantRule(const TT&, const Attrs& a) {
  DType d = DType::F32;
  if (hasAttr(a, "dtype")) {
    auto p = parseDType(attrString(a, "dtype"));
    if (!p) shapeError("constant: unknown dtype");
    d = *p;
  }
  Ints shape = hasAttr(a, "shape") ? attrInts(a, "shape") : Ints{};
  for (int64_t s : shape)
    if (s < 0) shapeError("constant: negative size in " + shapeStr(shape));
  attrFloat(a, "value");
  return one(TensorType::contiguous(d, shape));
}
TT arangeRule(const TT&, const Attrs& a) {
  double start = attrFloat(a, "start"), end = attrFloat(a, "end"), step = attrFloat(a, "step");
  double n = std::ceil((end - start) / step);
  if (!std::isfinite(start) || !std::isfinite(end) || step == 0 || !(n >= 0))
    shapeError("arange: bad start/end/step");
  if (n > static_cast<double>(kMaxExtent)) shapeError("arange: " + std::to_string(n) + " elements is more than 2^48");
  auto d = parseDType(attrString(a, "dtype"));
  if (!d) shapeError("arange: unknown dtype");
  return one(TensorType::contiguous(*d, {static_cast<int64_t>(n)}));
}
TT randMaskRule(const TT& in, const Attrs& a) {
  if (in[0].dtype != DType::I64 || in[0].numel() != 1) shapeError("rand_mask: the seed must be one int64");
  double p = attrFloat(a, "prob");
  if (!(p >= 0 && p <= 1)) shapeError("rand_mask: probability must be in [0, 1]");
  attrInt(a, "offset");
  return one(TensorType::contiguous(DType::Bool, attrInts(a, "shape")));
}
TT randUniformRule(const TT& in, const Attrs& a) {
  if (in[0].dtype != DType::I64 || in[0].numel() != 1) shapeError("rand_uniform: the seed must be one int64");
  DType d = *parseDType(attrString(a, "dtype"));
  if (!isFloating(d)) shapeError("rand_uniform: the dtype must be floating point");
  attrInt(a, "offset");
  return one(TensorType::contiguous(d, attrInts(a, "shape")));
}

// ---- reference kernels

Outs constantRef(const Ins&, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  std::fill(o.data.begin(), o.data.end(), roundTo(o.dtype, attrFloat(a, "value")));
  return {std::move(o)};
}
Outs arangeRef(const Ins&, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  for (size_t i = 0; i < o.data.size(); ++i)
    o.data[i] = roundTo(o.dtype, attrFloat(a, "start") + static_cast<double>(i) * attrFloat(a, "step"));
  return {o};
}
uint64_t seedOf(const HostTensor& t) { return static_cast<uint64_t>(static_cast<int64_t>(t.data[0])); }
Outs randMaskRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(DType::Bool, ot[0].sizes);
  uint64_t seed = seedOf(*in[0]), offset = static_cast<uint64_t>(attrInt(a, "offset"));
  double p = attrFloat(a, "prob");
  for (size_t i = 0; i < o.data.size(); ++i) o.data[i] = philoxUniform(seed, offset, i) < p ? 1.0 : 0.0;
  return {o};
}
Outs randUniformRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  uint64_t seed = seedOf(*in[0]), offset = static_cast<uint64_t>(attrInt(a, "offset"));
  for (size_t i = 0; i < o.data.size(); ++i) o.data[i] = roundTo(o.dtype, philoxUniform(seed, offset, i));
  return {o};
}

// ---- CUDA element kernel bodies

std::string arangeBody(const Graph& g, const Node& n) {
  const TensorType& ot = g.type(n.outputs[0]);
  return std::string("  out0[i] = (") + storageType(ot.dtype) + ")(" + literal(attrFloat(n.attrs, "start"), DType::F64) +
         " + (double)i * " + literal(attrFloat(n.attrs, "step"), DType::F64) + ");\n";
}
std::string uniformOf(const Node& n) {
  return "aotc_uniform((unsigned long long)in0[0], " + std::to_string(attrInt(n.attrs, "offset")) + "ull, (unsigned long long)i)";
}
std::string randUniformBody(const Graph& g, const Node& n) {
  return std::string("  out0[i] = (") + storageType(g.type(n.outputs[0]).dtype) + ")(" + uniformOf(n) + ");\n";
}
std::string randMaskBody(const Graph&, const Node& n) {
  return "  out0[i] = " + uniformOf(n) + " < " + literal(attrFloat(n.attrs, "prob"), DType::F32) + ";\n";
}

}  // namespace

std::span<const OpRule> creationRows() {
  const std::string kF32 = "f32";
  const SampleOperand kSeed{DType::I64, {1}, {7}};
  static const std::vector<OpRule> kRows = {
      row(K::Constant, constantRule, constantRef, nullptr, Lowering::Fill, {{{}, Attrs{{"value", 1.5}, {"dtype", kF32}, {"shape", Ints{2, 3}}}}}),
      elementRow(K::Arange, arangeRule, arangeRef, nullptr, arangeBody,
                 {{{}, Attrs{{"start", 1.0}, {"end", 7.0}, {"step", 2.0}, {"dtype", kF32}}}}),
      elementRow(K::RandMask, randMaskRule, randMaskRef, nullptr, randMaskBody,
                 {{{kSeed}, Attrs{{"prob", 0.25}, {"offset", int64_t{4}}, {"shape", Ints{2, 3}}}}}),
      elementRow(K::RandUniform, randUniformRule, randUniformRef, nullptr, randUniformBody,
                 {{{kSeed}, Attrs{{"offset", int64_t{4}}, {"shape", Ints{2, 3}}, {"dtype", kF32}}}}),
  };
  return kRows;
}

}  // namespace aotc::detail
