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

Entries linalgConverters() {
  return {
    {"Einsum", einsumOp},
    {"Gemm", gemmOp},
    {"MatMul", matmulOp},
  };
}

}  // namespace aotc::onnx_fe
