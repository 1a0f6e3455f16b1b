//===- kernel_text.h - The CUDA C text op rows are written in -----*- C++ -*-===//
//
// The helpers an op row's device rules (Note [Op rows]: element kernel
// bodies, scatter regions; Note [Pointwise rows]: expressions) and the CUDA
// code generator share, so both spell types, literals and element offsets
// the same way.  Pure functions of IR types.
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "aotc/ir/ir.h"

namespace aotc::ktext {

/// The C type a buffer of dtype `d` holds.
const char* storageType(DType d);
/// The C type values of dtype `d` are computed in (16-bit floats: float).
const char* computeType(DType d);
/// The cast that gives a computed value its dtype's value (Note [Half
/// precision values] in codegen/cuda/kernels.cpp): for the 16-bit types a round trip
/// through the storage type, else the compute type.
std::string valueCast(DType d);
/// `v` as a C literal of dtype `d` (exact: 17 digits, inf and nan spelled).
std::string literal(double v, DType d);
/// Element `c[...]` of an operand with layout `t`: "(off + c0*s0 + ...)".
std::string at(const TensorType& t, const std::vector<std::string>& c);
/// {"c[0]", ..., "c[rank-1]"} (or `var`[...]).
std::vector<std::string> coords(size_t rank, const char* var = "c");

}  // namespace aotc::ktext
