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
#include "aotc/ops/rules.h"

namespace aotc {

inline namespace samples_ns {

using In = SampleOperand;  ///< fixed: data for integer/bool inputs

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
      // The two elementwise rows whose sample is not their row default: a
      // bool condition, a dtype attribute.
      {K::Where, {B({2, 3}, {1, 0, 1, 0, 0, 1}), F({2, 3}), F({3})}, none},
      {K::Cast, {F({2, 3})}, Attrs{{"dtype", std::string("f64")}}},
  };
  // Every differentiable op's row gives its samples (Note [Op rows]).
  for (const OpRule* r : opRules())
    if (opInfo(r->op).grad == GradKind::Diff)
      for (const OpSample& s : r->samples) v.push_back(Sample{r->op, s.inputs, s.attrs});
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
