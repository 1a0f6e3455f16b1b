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

/// Einsum of one or two operands without repeated indices in an operand
/// (no diagonals) and without ellipses: sums, transposes, and one batched
/// matmul (batch, kept, contracted indices sorted into bmm's three dims).
Outs einsumOp(Node& c) {
  std::string eq;
  for (char ch : c.s("equation", "")) if (ch != ' ') eq += ch;
  auto arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), rhs;
  if (arrow != std::string::npos) {
    rhs = eq.substr(arrow + 2);
  } else {
    // Implicit output: the indices that appear once, in alphabetical order.
    std::map<char, int> count;
    for (char ch : lhs)
      if (ch != ',') ++count[ch];
    for (auto [ch, n] : count)
      if (n == 1) rhs += ch;
  }
  std::vector<std::string> terms;
  for (size_t at = 0;;) {
    size_t comma = lhs.find(',', at);
    terms.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (terms.size() != c.numInputs() || terms.size() > 2) c.fail("Einsum: one or two operands are supported");
  auto bad = [&](const std::string& t) {
    std::set<char> seen;
    for (char ch : t)
      if (!std::isalpha(static_cast<unsigned char>(ch)) || !seen.insert(ch).second) return true;
    return false;
  };
  for (const std::string& t : terms)
    if (bad(t)) c.fail("Einsum: ellipses and repeated indices (diagonals) are not supported");
  if (bad(rhs)) c.fail("Einsum: bad output indices");
  std::map<char, int64_t> size;
  std::vector<ValueId> xs;
  for (size_t k = 0; k < terms.size(); ++k) {
    ValueId x = c.in(k);
    if (c.type(x).rank() != static_cast<int64_t>(terms[k].size())) c.fail("Einsum: an operand's rank differs from its indices");
    for (size_t i = 0; i < terms[k].size(); ++i) {
      int64_t sz = c.type(x).sizes[i];
      auto [it, fresh] = size.emplace(terms[k][i], sz);
      if (!fresh && it->second != sz) c.fail(cat("Einsum: index '", terms[k][i], "' has sizes ", it->second, " and ", sz));
    }
    xs.push_back(x);
  }
  for (char ch : rhs)
    if (!size.count(ch)) c.fail("Einsum: an output index is in no operand");
  auto in = [](const std::string& s, char ch) { return s.find(ch) != std::string::npos; };
  // Sum away each operand's indices that appear nowhere else.
  for (size_t k = 0; k < terms.size(); ++k) {
    const std::string& other = terms.size() == 2 ? terms[1 - k] : std::string();
    Ints dims;
    std::string kept;
    for (size_t i = 0; i < terms[k].size(); ++i) {
      char ch = terms[k][i];
      if (!in(rhs, ch) && !in(other, ch)) dims.push_back(static_cast<int64_t>(i));
      else kept += ch;
    }
    if (!dims.empty()) xs[k] = reduceOp(c, OpKind::Sum, xs[k], dims, false);
    terms[k] = kept;
  }
  auto permuteTo = [&](ValueId x, const std::string& from, const std::string& to) {
    Ints perm;
    for (char ch : to) perm.push_back(static_cast<int64_t>(from.find(ch)));
    bool id = true;
    for (size_t i = 0; i < perm.size(); ++i) id = id && perm[i] == static_cast<int64_t>(i);
    return id ? x : c.op(OpKind::Permute, {x}, Attrs{{"dims", perm}});
  };
  if (terms.size() == 1) return {c.contiguous(permuteTo(xs[0], terms[0], rhs))};
  std::string batch, aonly, bonly, contracted;
  for (char ch : terms[0]) {
    if (in(terms[1], ch)) (in(rhs, ch) ? batch : contracted) += ch;
    else aonly += ch;
  }
  for (char ch : terms[1])
    if (!in(terms[0], ch)) bonly += ch;
  auto prod = [&](const std::string& s) {
    int64_t p = 1;
    for (char ch : s) p = mulSize(p, size[ch]);
    return p;
  };
  ValueId a = c.reshape(permuteTo(xs[0], terms[0], batch + aonly + contracted), {prod(batch), prod(aonly), prod(contracted)});
  ValueId b = c.reshape(permuteTo(xs[1], terms[1], batch + contracted + bonly), {prod(batch), prod(contracted), prod(bonly)});
  ValueId y = c.op(OpKind::Bmm, {a, b});
  std::string have = batch + aonly + bonly;
  Ints shape;
  for (char ch : have) shape.push_back(size[ch]);
  y = c.reshape(y, shape);
  return {c.contiguous(permuteTo(y, have, rhs))};
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
