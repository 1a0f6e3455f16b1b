//===- onnx/linalg.cpp - Matrix products ------------------------------------===//
//
// MatMul, Gemm and Einsum.
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

namespace {

Outs matmulOp(Node& c) {
  ValueId a = c.in(0), b = c.in(1);
  return {matmul(c, a, b)};
}

Outs gemmOp(Node& c) {
  ValueId a = c.in(0), b = c.in(1);
  if (c.type(a).rank() != 2 || c.type(b).rank() != 2) c.fail("Gemm: A and B must be 2-D");
  if (c.i("transA", 0)) a = c.op(OpKind::T, {a});
  if (c.i("transB", 0)) b = c.op(OpKind::T, {b});
  ValueId y = c.scaled(c.op(OpKind::Mm, {a, b}), c.f("alpha", 1.0));
  if (c.has(2)) {
    ValueId cc = c.scaled(c.in(2), c.f("beta", 1.0));
    y = c.add(y, cc);
  }
  return {y};
}

/// Einsum: decomp::einsum (Note [Einsum], src/ops/decompose_einsum.cpp).
Outs einsumOp(Node& c) {
  std::vector<ValueId> xs;
  for (size_t k = 0; k < c.numInputs(); ++k) xs.push_back(c.in(k));
  return {einsum(c, c.s("equation", ""), xs, "Einsum")};
}

}  // namespace

/// AffineGrid (20): the sampling grid of theta ([N, 2, 3] or [N, 3, 4]) over
/// `size`'s spatial dims: the normalized coordinates (x, y[, z], 1) of every
/// output point (pixel centres, or corners with align_corners) times theta^T.
Outs affineGridOp(Node& c) {
  ValueId theta = c.in(0);
  Ints size = c.knownInts(1, "size");
  const Ints ts = c.type(theta).sizes;
  DType dt = c.type(theta).dtype;
  if (!isFloating(dt)) c.fail("AffineGrid: theta must be floating-point");
  if (size.size() != 4 && size.size() != 5) c.fail("AffineGrid: size must be [N, C, H, W] or [N, C, D, H, W]");
  int64_t k = static_cast<int64_t>(size.size()) - 2;  // spatial dims
  if (ts != Ints{size[0], k, k + 1}) c.fail(cat("AffineGrid: theta must be [", size[0], ", ", k, ", ", k + 1, "]"));
  Ints spatial(size.begin() + 2, size.end());
  int64_t L = 1;
  for (int64_t n : spatial) {
    if (n <= 0) c.fail("AffineGrid: size must be positive");
    L *= n;
  }
  if (L * (k + 1) > kMaxFoldElements) c.fail("AffineGrid: the grid is too large");
  bool corners = c.i("align_corners", 0) != 0;
  auto coord = [&](int64_t i, int64_t n) {
    if (corners) return n == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1);
    return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n);
  };
  HostTensor base = HostTensor::zeros(dt, {L, k + 1});
  for (int64_t p = 0; p < L; ++p) {
    int64_t rest = p;
    for (int64_t d = k - 1; d >= 0; --d) {  // the last spatial dim (W) is x, column 0
      int64_t n = spatial[static_cast<size_t>(d)];
      base.data[static_cast<size_t>(p * (k + 1) + (k - 1 - d))] = roundTo(dt, coord(rest % n, n));
      rest /= n;
    }
    base.data[static_cast<size_t>(p * (k + 1) + k)] = 1.0;
  }
  ValueId b = c.expand(c.reshape(c.constant(std::move(base)), {1, L, k + 1}), {size[0], L, k + 1});
  ValueId tt = c.op(OpKind::Transpose, {theta}, Attrs{{"dim0", int64_t{1}}, {"dim1", int64_t{2}}});
  Ints out{size[0]};
  out.insert(out.end(), spatial.begin(), spatial.end());
  out.push_back(k);
  return {c.reshape(c.op(OpKind::Bmm, {b, c.contiguous(tt)}), out)};
}

Entries linalgConverters() {
  return {
    {"AffineGrid", affineGridOp},
    {"Einsum", einsumOp},
    {"Gemm", gemmOp},
    {"MatMul", matmulOp},
  };
}

}  // namespace aotc::onnx_fe
