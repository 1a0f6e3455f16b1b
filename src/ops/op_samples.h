//===- op_samples.h - One small sample per op, for table-driven tests --*- C++ -*-===//
// Test-only: shared by the finite-difference gradient check and the NVRTC
// codegen test.  A sample is an op, its operand shapes (fixed data for index
// and mask operands), its attributes and a value range that avoids kinks.
#pragma once

#include <algorithm>
#include <set>
#include <vector>

#include "aotc/text/text.h"
#include "aotc/ops/ops.h"
#include "aotc/ops/pointwise.h"
#include "aotc/ops/reductions.h"

namespace aotc {

inline namespace samples_ns {

struct In {
  DType dtype;
  Ints sizes;
  std::vector<double> fixed;  ///< data for integer/bool inputs
};

struct Sample {
  OpKind op;
  std::vector<In> inputs;
  Attrs attrs;
  double lo = -2, hi = 2;
  bool awayFromZero = false;
};

inline In F(Ints s) { return In{DType::F64, std::move(s), {}}; }
inline In I(Ints s, std::vector<double> d) { return In{DType::I64, std::move(s), std::move(d)}; }
inline In B(Ints s, std::vector<double> d) { return In{DType::Bool, std::move(s), std::move(d)}; }

inline std::vector<Sample> samples() {
  using K = OpKind;
  Attrs none;
  std::vector<Sample> v = {
      {K::Where, {B({2, 3}, {1, 0, 1, 0, 0, 1}), F({2, 3}), F({3})}, none},
      {K::Mm, {F({2, 3}), F({3, 4})}, none},
      {K::T, {F({2, 3})}, none},
      {K::View, {F({2, 3})}, Attrs{{"size", Ints{3, 2}}}},
      {K::Expand, {F({3, 1})}, Attrs{{"size", Ints{2, 3, 4}}}},
      {K::Transpose, {F({2, 3, 4})}, Attrs{{"dim0", int64_t{0}}, {"dim1", int64_t{2}}}},
      {K::Unsqueeze, {F({2, 3})}, Attrs{{"dim", int64_t{1}}}},
      {K::Squeeze, {F({2, 1, 3})}, Attrs{{"dim", Ints{1}}}},
      {K::Slice, {F({2, 5})}, Attrs{{"dim", int64_t{1}}, {"start", int64_t{1}}, {"end", int64_t{5}}, {"step", int64_t{2}}}},
      {K::Select, {F({2, 4})}, Attrs{{"dim", int64_t{1}}, {"index", int64_t{-2}}}},
      {K::SliceScatter, {F({2, 4}), F({2, 2})}, Attrs{{"dim", int64_t{1}}, {"start", int64_t{1}}, {"end", int64_t{4}}, {"step", int64_t{2}}}},
      {K::SelectScatter, {F({2, 4}), F({2})}, Attrs{{"dim", int64_t{1}}, {"index", int64_t{1}}}},
      {K::Diagonal, {F({3, 4})}, Attrs{{"offset", int64_t{1}}}},
      {K::DiagonalScatter, {F({2, 3, 4}), F({2, 2})}, Attrs{{"offset", int64_t{-1}}, {"dim1", int64_t{1}}, {"dim2", int64_t{2}}}},
      {K::Cast, {F({2, 3})}, Attrs{{"dtype", std::string("f64")}}},
      {K::Bmm, {F({2, 2, 3}), F({2, 3, 2})}, none},
      {K::Conv2d, {F({1, 4, 5, 5}), F({2, 2, 3, 3})},
       Attrs{{"stride", Ints{2}}, {"padding", Ints{1}}, {"dilation", Ints{1}}, {"groups", int64_t{2}}}},
      {K::Conv2dBackwardInput, {F({1, 4, 3, 3}), F({4, 1, 3, 3})},
       Attrs{{"input_size", Ints{1, 2, 6, 5}}, {"stride", Ints{2}}, {"padding", Ints{1}}, {"dilation", Ints{1}}, {"groups", int64_t{2}}}},
      {K::Conv2dBackwardWeight, {F({1, 4, 3, 3}), F({1, 2, 6, 5})},
       Attrs{{"weight_size", Ints{4, 1, 3, 3}}, {"stride", Ints{2}}, {"padding", Ints{1}}, {"dilation", Ints{1}}, {"groups", int64_t{2}}}},
      {K::MaxPool2dBackward, {F({1, 1, 2, 2}), I({1, 1, 2, 2}, {5, 3, 12, 15})},
       Attrs{{"input_size", Ints{1, 1, 4, 4}}, {"kernel", Ints{2}}, {"stride", Ints{2}}}},
      {K::AvgPool2dBackward, {F({1, 2, 3, 3})},
       Attrs{{"input_size", Ints{1, 2, 5, 5}}, {"kernel", Ints{3}}, {"stride", Ints{2}}, {"padding", Ints{1}}, {"count_include_pad", false}}},
      {K::AdaptiveAvgPool2dBackward, {F({1, 2, 3, 4})}, Attrs{{"input_size", Ints{1, 2, 5, 7}}}},
      {K::MaxPool2d, {F({1, 2, 5, 5})}, Attrs{{"kernel", Ints{3}}, {"stride", Ints{2}}, {"padding", Ints{1}}}},
      {K::AvgPool2d, {F({1, 2, 5, 5})},
       Attrs{{"kernel", Ints{3}}, {"stride", Ints{2}}, {"padding", Ints{1}}, {"count_include_pad", false}}},
      {K::AdaptiveAvgPool2d, {F({1, 2, 5, 7})}, Attrs{{"output_size", Ints{3, 4}}}},
      {K::IndexSelect, {F({4, 3}), I({3}, {2, 0, 2})}, Attrs{{"dim", int64_t{0}}}},
      {K::IndexAdd, {F({4, 3}), I({2}, {1, 3}), F({2, 3})}, Attrs{{"dim", int64_t{0}}}},
      {K::Gather, {F({3, 4}), I({3, 2}, {0, 3, 1, 1, 2, 0})}, Attrs{{"dim", int64_t{1}}}},
      {K::ScatterAdd, {F({3, 4}), I({3, 2}, {0, 3, 1, 1, 2, 0}), F({3, 2})}, Attrs{{"dim", int64_t{1}}}},
      {K::Scatter, {F({3, 4}), I({3, 2}, {0, 3, 1, 2, 2, 0}), F({3, 3})}, Attrs{{"dim", int64_t{1}}}},
      {K::Cumsum, {F({2, 4})}, Attrs{{"dim", int64_t{1}}}},
      {K::Cumsum, {F({3, 2})}, Attrs{{"dim", int64_t{0}}, {"reverse", true}}},
      {K::Sort, {F({2, 5})}, Attrs{{"dim", int64_t{1}}}},
      {K::Sort, {F({4, 2})}, Attrs{{"dim", int64_t{0}}, {"descending", true}}},
      {K::Cat, {F({2, 3}), F({2, 1})}, Attrs{{"dim", int64_t{1}}}},
      {K::Pad, {F({2, 3})}, Attrs{{"pad", Ints{1, 2, 0, -1}}, {"value", 0.5}}},
      {K::Permute, {F({2, 3, 4})}, Attrs{{"dims", Ints{2, 0, 1}}}},
  };
  // Every differentiable elementwise op's row gives its sample (Note
  // [Pointwise rows]) unless it is listed above.
  for (const PointwiseRule& r : pointwiseRules()) {
    if (!r.grad || std::any_of(v.begin(), v.end(), [&](const Sample& s) { return s.op == r.op; })) continue;
    std::vector<In> ins = {F({2, 3})};
    if (opInfo(r.op).arity == 2)
      ins.push_back(F(r.sample.rhs == SampleRange::Row ? Ints{3} : r.sample.rhs == SampleRange::Column ? Ints{2, 1} : Ints{2, 3}));
    v.push_back(Sample{r.op, std::move(ins), none, r.sample.lo, r.sample.hi, r.sample.awayFromZero});
  }
  // And every reduction's row (Note [Reduction rows]).
  for (const ReductionRule& r : reductionRules())
    v.push_back(Sample{r.op, {F(r.sample.shape)}, Attrs{{"dim", r.sample.dims}, {"keepdim", r.sample.keepdim}}});
  return v;
}

/// loss(inputs) for the sample, as a graph; `grads` adds the joint graph.
inline Graph buildLoss(const Sample& s, DType floatType = DType::F64) {
  Graph g;
  g.name = opName(s.op);
  std::vector<ValueId> ins;
  for (size_t i = 0; i < s.inputs.size(); ++i)
    ins.push_back(g.addInput("x" + std::to_string(i),
                             TensorType::contiguous(s.inputs[i].dtype == DType::F64 ? floatType : s.inputs[i].dtype, s.inputs[i].sizes),
                             InputRole::UserInput, isFloating(s.inputs[i].dtype)));
  auto outs = addNode(g, s.op, ins, s.attrs);
  ValueId loss = kNoValue;
  for (size_t k = 0; k < outs.size(); ++k) {
    const TensorType t = g.type(outs[k]);
    if (!isFloating(t.dtype)) continue;
    ValueId w = g.addInput("w" + std::to_string(k), TensorType::contiguous(t.dtype, t.sizes), InputRole::UserInput, false);
    ValueId term = addOp(g, OpKind::Sum, {addOp(g, OpKind::Mul, {outs[k], w})}, Attrs{{"dim", Ints{}}, {"keepdim", false}});
    loss = loss == kNoValue ? term : addOp(g, OpKind::Add, {loss, term});
  }
  g.outputs.push_back(GraphOutput{loss, OutputRole::User, "", std::nullopt, {}});
  verifyGraph(g);
  return g;
}

}  // namespace samples_ns
}  // namespace aotc
