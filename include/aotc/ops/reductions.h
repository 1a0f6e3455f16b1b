//===- reductions.h - The reductions: every rule in one row -------*- C++ -*-===//
//
// Note [Reduction rows]
// ~~~~~~~~~~~~~~~~~~~~~
// As Note [Pointwise rows] for the ops the fused kernels reduce with (sum,
// mean, prod, amax, amin): one row of src/ops/reductions.cpp holds, besides
// the op's ops.def row,
//   types      the result type (reduced dims dropped or kept as 1)
//   init, combine, mean
//              the reference: the accumulator starts at `init`, takes each
//              element through `combine`, and is divided by the group size
//              when `mean`
//   cudaInit, cudaInitInt, cudaCombine
//              the same for the kernels: the identity for floating and for
//              integer accumulators, and the device function combining two
//              partial results (empty: +); inlining, row groups and the
//              reduction kernel all read it (Note [Reductions] in codegen/cuda/fusion.cpp)
//   grad       the gradient rule, in forward ops
//   sample     the operand shape and reduced dims of its sample
//===----------------------------------------------------------------------===//
#pragma once

#include <span>

#include "aotc/ops/gradients.h"
#include "aotc/ops/ops.h"

namespace aotc {

struct ReductionRule {
  OpKind op;
  ShapeRule types;
  double init;
  double (*combine)(double acc, double v);
  bool mean;
  const char* cudaInit;
  const char* cudaInitInt;
  const char* cudaCombine;
  GradRule grad;
  struct {
    Ints shape, dims;
    bool keepdim;
  } sample;
};

/// Every reduction row, in ops.def order.
std::span<const ReductionRule> reductionRules();
/// The op's row, or nullptr for an op that is not a reduction.
const ReductionRule* reductionRule(OpKind k);

}  // namespace aotc
