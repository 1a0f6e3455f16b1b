//===- reference.h - CPU reference kernels, one per op ------------*- C++ -*-===//
//
// The oracle every other backend is checked against.  Tensors are dense and
// row-major (views are materialized); elements are held as double and rounded
// to their dtype after every op, so float32 programs round as a float32
// device would at each op boundary.
//===----------------------------------------------------------------------===//
#pragma once

#include <vector>

#include "aotc/ir/host_tensor.h"
#include "aotc/ops/ops.h"

namespace aotc {

/// Runs one op.  `out_types` are the node's result types (from the IR).
std::vector<HostTensor> referenceEval(OpKind op, const std::vector<const HostTensor*>& ins, const Attrs& attrs,
                                      const std::vector<TensorType>& out_types);
bool hasReferenceKernel(OpKind k);

/// Replays a view chain on a dense tensor (used for alias regeneration).
HostTensor applyView(const HostTensor& base, const ViewStep& step);

}  // namespace aotc
