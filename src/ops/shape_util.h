//===- shape_util.h - Helpers the ops library's rule files share -*- C++ -*-===//
// Private to src/ops.
#pragma once

#include <array>
#include <span>
#include <string>
#include <vector>

#include "aotc/ir/ir.h"
#include "aotc/ops/ops.h"

namespace aotc::detail {

/// A shape rule's error: UserError with the message only (the builder adds
/// the node's location).
[[noreturn]] void shapeError(const std::string& msg);
/// All operands broadcast together; the result has dtype `out`.
std::vector<TensorType> broadcastRule(const std::vector<TensorType>& in, DType out);
/// A reduction over attrs' `dim` (empty: all) with `keepdim`: floating
/// inputs keep their dtype, integers give int64; `mean` refuses integers.
std::vector<TensorType> reduceTypes(const std::vector<TensorType>& in, const Attrs& a, bool mean);

/// A family's rows (Notes [Pointwise rows], [Reduction rows]) looked up by
/// op.  Every row's op must have the family's category in ops.def, and no op
/// two rows: an internal error at first use otherwise.
template <class Row>
class RowIndex {
 public:
  RowIndex(std::span<const Row> rows, OpCategory category, const char* file) : rows_(rows) {
    index_.fill(-1);
    for (size_t i = 0; i < rows.size(); ++i) {
      const size_t k = static_cast<size_t>(rows[i].op);
      AOTC_CHECK(index_[k] < 0, file, ": two rows for ", opName(rows[i].op));
      AOTC_CHECK(opInfo(rows[i].op).category == category, file, ": ", opName(rows[i].op),
                 "'s ops.def category is not this family's");
      index_[k] = static_cast<int16_t>(i);
    }
  }
  const Row* find(OpKind k) const {
    const int16_t i = index_[static_cast<size_t>(k)];
    return i < 0 ? nullptr : &rows_[static_cast<size_t>(i)];
  }

 private:
  std::span<const Row> rows_;
  std::array<int16_t, kNumOps> index_;
};

}  // namespace aotc::detail
