//===- pointwise.h - The elementwise ops: every rule in one row ---*- C++ -*-===//
//
// Note [Pointwise rows]
// ~~~~~~~~~~~~~~~~~~~~~
// An elementwise op is its ops.def row (name, arity, category, gradient kind,
// attributes) plus one row of src/ops/pointwise.cpp holding everything else:
//   types      the result type (operands broadcast; the dtype rule)
//   reference  the value on doubles (the reference runtime rounds it to the
//              result dtype)
//   cuda       the device expression the fused kernels inline, {0} {1} {2}
//              standing for the operands (device functions are the prelude's
//              aotc_* math, host-compiled unchanged by the emulator)
//   grad       the gradient rule, in forward ops (nullptr: no gradient flows)
//   aten       the FX spellings that are nothing but this op (a unary op's
//              `self`, a binary op's `self, other` with a Python scalar
//              allowed for `other`); the FX front end adds them to its table
//   sample     the operand range of the op's sample, which the gradient check
//              (finite differences) and the NVRTC codegen test run
// So adding an elementwise op is one ops.def row and one row here; the
// shape, reference, gradient and CUDA tables, the FX converter table and the
// samples all read these rows, and the completeness test checks every rule.
//===----------------------------------------------------------------------===//
#pragma once

#include <span>
#include <string>
#include <vector>

#include "aotc/ops/gradients.h"
#include "aotc/ops/ops.h"

namespace aotc {

/// Where an op's sample draws its operands (finite differences need a range
/// without kinks; `awayFromZero` keeps |x| off the kink at 0).  Binary ops'
/// second operand is broadcast: shape {3} against {2, 3}, or as `rhs` says.
struct SampleRange {
  double lo = -2, hi = 2;
  bool awayFromZero = false;
  enum Rhs : uint8_t { Row, Column, Full } rhs = Row;  ///< {3}, {2, 1} or {2, 3}
};

struct PointwiseRule {
  OpKind op;
  ShapeRule types;
  double (*reference)(const double* a);
  const char* cuda;
  GradRule grad;
  const char* aten[2];
  SampleRange sample;
};

/// Every pointwise row, in ops.def order.
std::span<const PointwiseRule> pointwiseRules();
/// The op's row, or nullptr for an op that is not elementwise.
const PointwiseRule* pointwiseRule(OpKind k);
/// The row's CUDA expression with `operands` substituted.
std::string pointwiseCuda(const PointwiseRule& r, const std::vector<std::string>& operands);

}  // namespace aotc
