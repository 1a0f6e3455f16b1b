//===- shape_util.h - Helpers the ops library's rule files share -*- C++ -*-===//
// Private to src/ops.
#pragma once

#include <string>
#include <vector>

#include "aotc/ir/ir.h"

namespace aotc::detail {

/// A shape rule's error: UserError with the message only (the builder adds
/// the node's location).
[[noreturn]] void shapeError(const std::string& msg);
/// All operands broadcast together; the result has dtype `out`.
std::vector<TensorType> broadcastRule(const std::vector<TensorType>& in, DType out);
/// A reduction over attrs' `dim` (empty: all) with `keepdim`: floating
/// inputs keep their dtype, integers give int64; `mean` refuses integers.
std::vector<TensorType> reduceTypes(const std::vector<TensorType>& in, const Attrs& a, bool mean);

}  // namespace aotc::detail
