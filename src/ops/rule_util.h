//===- rule_util.h - Helpers the ops library's rule files share --*- C++ -*-===//
// Private to src/ops.
#pragma once

#include <array>
#include <span>
#include <string>
#include <vector>

#include "aotc/ir/host_tensor.h"
#include "aotc/ir/ir.h"
#include "aotc/ops/ops.h"
#include "aotc/ops/rules.h"

namespace aotc::detail {

// ---- shape rules
/// A shape rule's error: UserError with the message only (the builder adds
/// the node's location).
[[noreturn]] void shapeError(const std::string& msg);
/// "[2, 3]".
std::string shapeStr(const Ints& s);
inline std::vector<TensorType> one(TensorType t) { return {std::move(t)}; }
/// A 2-D window attribute (stride, padding, ...): one value for both dims
/// or two; `dflt` for both when absent.
Ints attrPair(const Attrs& a, const char* k, int64_t dflt);
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

// ---- reference kernels
using Ins = std::vector<const HostTensor*>;
using Outs = std::vector<HostTensor>;

/// Index of each output element in a (broadcast) input, row-major.
std::vector<int64_t> broadcastIndex(const Ints& in, const Ints& out);
/// Elements of `x` (dense) seen through `view` (a layout over x's storage).
HostTensor gatherView(const HostTensor& x, const TensorType& view);
/// Any view op: its layout over a dense input, then a gather.
Outs viewKernel(OpKind op, const Ins& in, const Attrs& a);
/// in[0] with the region `viewOp(in[0])` replaced by in[1].
Outs scatterRegionKernel(OpKind viewOp, const Ins& in, const Attrs& a);
/// An index operand's element `v` for a dim of `size` (negative counts from
/// the end); UserError when out of bounds.
int64_t checkedIndex(double v, int64_t size);

/// Calls f(coord, flat index) for every coordinate of `sizes`, row-major.
template <typename F>
void forEach(const Ints& sizes, F f) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  Ints c(sizes.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    f(c, e);
    for (size_t d = c.size(); d-- > 0;) {
      if (++c[d] < sizes[d]) break;
      c[d] = 0;
    }
  }
}

inline int64_t flatIndex(const Ints& c, const Ints& sizes) {
  int64_t off = 0;
  for (size_t d = 0; d < sizes.size(); ++d) off = off * sizes[d] + c[d];
  return off;
}

// ---- rows (Note [Op rows])
/// A row whose CUDA lowering needs no text of its own: a view's layout, a
/// library call, a fill, or an op the engine removes.
inline OpRule row(OpKind k, ShapeRule types, ReferenceKernel ref, GradRule grad, Lowering cuda, std::vector<OpSample> samples = {}) {
  return OpRule{k, types, ref, grad, cuda, nullptr, nullptr, std::nullopt, nullptr, std::move(samples)};
}
/// A row run as an element kernel whose body `body` writes.
inline OpRule elementRow(OpKind k, ShapeRule types, ReferenceKernel ref, GradRule grad, ElementBody body,
                         std::vector<OpSample> samples) {
  return OpRule{k, types, ref, grad, Lowering::Element, body, nullptr, std::nullopt, nullptr, std::move(samples)};
}
/// Sample operands: floating (drawn in the sample's range) and int64 with fixed data.
inline SampleOperand sampleF(Ints s) { return SampleOperand{DType::F64, std::move(s), {}}; }
inline SampleOperand sampleI(Ints s, std::vector<double> d) { return SampleOperand{DType::I64, std::move(s), std::move(d)}; }
inline Attrs dimAttr(int64_t d) { return Attrs{{"dim", d}}; }

// ---- the OpRule families, each in its file
std::span<const OpRule> viewRows();
std::span<const OpRule> windowRows();
std::span<const OpRule> gatherRows();
std::span<const OpRule> linalgRows();
std::span<const OpRule> creationRows();
std::span<const OpRule> internalRows();

}  // namespace aotc::detail
