//===- decompose_einsum.cpp - einsum as sums, permutes and bmm -------------===//
//
// Note [Decompositions] (decompose.h): einsum, shared by ONNX's Einsum and
// ATen's einsum.default (Note [Einsum]).
//===----------------------------------------------------------------------===//
#include <cctype>
#include <map>
#include <set>
#include <string>

#include "aotc/ops/decompose.h"

namespace aotc::decomp {

// Note [Einsum]
// ~~~~~~~~~~~~~
// An equation is parsed once; with '->' absent the output is the indices
// that appear once, in alphabetical (ASCII: upper case first) order, as in
// numpy and ATen.  Then:
//   1. an index repeated within one operand takes that operand's diagonal:
//      the two dims moved last, flattened, and index_selected at k*(n+1);
//   2. each operand's indices that appear in no other operand and not in
//      the output are summed away;
//   3. operands are contracted pairwise, left to right: of the indices the
//      two share, those still needed (by the output or a later operand) are
//      batch dims, the others are contracted; the two are permuted and
//      reshaped to [batch, kept, contracted] and [batch, contracted, kept]
//      and multiplied by one bmm (cuBLAS on the GPU), then reshaped back;
//   4. the result is permuted to the output's order and made contiguous.
// Gradients are autodiff's through these ops.  Ellipses ('...') are refused.
// With one or two operands and no diagonal this is, node for node, the
// lowering ONNX's Einsum always had (its artifacts unchanged).

ValueId einsum(Builder& c, const std::string& equation, const std::vector<ValueId>& operands, const std::string& name) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq += ch;
  if (eq.find('.') != std::string::npos) c.fail(cat(name, ": ellipses ('...') are not supported"));
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
  if (terms.size() != operands.size())
    c.fail(cat(name, ": the equation has ", terms.size(), " operands, the node ", operands.size()));
  auto alpha = [](char ch) { return std::isalpha(static_cast<unsigned char>(ch)) != 0; };
  for (const std::string& t : terms)
    for (char ch : t)
      if (!alpha(ch)) c.fail(cat(name, ": bad index '", ch, "' in '", equation, "'"));
  {
    std::set<char> seen;
    for (char ch : rhs)
      if (!alpha(ch) || !seen.insert(ch).second) c.fail(cat(name, ": bad output indices"));
  }
  auto in = [](const std::string& s, char ch) { return s.find(ch) != std::string::npos; };
  std::map<char, int64_t> size;
  std::vector<ValueId> xs;
  for (size_t k = 0; k < terms.size(); ++k) {
    ValueId x = operands[k];
    if (c.type(x).rank() != static_cast<int64_t>(terms[k].size())) c.fail(cat(name, ": an operand's rank differs from its indices"));
    for (size_t i = 0; i < terms[k].size(); ++i) {
      int64_t sz = c.type(x).sizes[i];
      auto [it, fresh] = size.emplace(terms[k][i], sz);
      if (!fresh && it->second != sz) c.fail(cat(name, ": index '", terms[k][i], "' has sizes ", it->second, " and ", sz));
    }
    // 1. Diagonals: an index twice in this operand.
    for (std::string& t = terms[k];;) {
      size_t p = 0, q = std::string::npos;
      for (; p < t.size() && q == std::string::npos; ++p) q = t.find(t[p], p + 1);
      if (q == std::string::npos) break;
      --p;
      const char ch = t[p];
      const int64_t n = size[ch];
      requireIndexMap(c, n, "einsum diagonal");
      Ints perm, shape;
      std::string rest;
      for (size_t i = 0; i < t.size(); ++i)
        if (i != p && i != q) {
          perm.push_back(static_cast<int64_t>(i));
          shape.push_back(c.type(x).sizes[i]);
          rest += t[i];
        }
      perm.push_back(static_cast<int64_t>(p));
      perm.push_back(static_cast<int64_t>(q));
      shape.push_back(mulSize(n, n));
      Ints idx;
      for (int64_t j = 0; j < n; ++j) idx.push_back(j * (n + 1));
      x = c.reshape(c.contiguous(c.op(OpKind::Permute, {x}, Attrs{{"dims", perm}})), shape);
      x = pick(c, x, static_cast<int64_t>(shape.size()) - 1, idx);
      t = rest + ch;
    }
    xs.push_back(x);
  }
  for (char ch : rhs)
    if (!size.count(ch)) c.fail(cat(name, ": an output index is in no operand"));
  // 2. Sum away each operand's indices that appear nowhere else.
  for (size_t k = 0; k < terms.size(); ++k) {
    Ints dims;
    std::string kept;
    for (size_t i = 0; i < terms[k].size(); ++i) {
      char ch = terms[k][i];
      bool elsewhere = in(rhs, ch);
      for (size_t j = 0; j < terms.size(); ++j) elsewhere = elsewhere || (j != k && in(terms[j], ch));
      if (!elsewhere) dims.push_back(static_cast<int64_t>(i));
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
  auto prod = [&](const std::string& s) {
    int64_t p = 1;
    for (char ch : s) p = mulSize(p, size[ch]);
    return p;
  };
  // 3. Pairwise, left to right.
  ValueId acc = xs[0];
  std::string have = terms[0];
  for (size_t k = 1; k < terms.size(); ++k) {
    std::string need = rhs;
    for (size_t j = k + 1; j < terms.size(); ++j) need += terms[j];
    const std::string& other = terms[k];
    std::string batch, aonly, bonly, contracted;
    for (char ch : have) {
      if (in(other, ch)) (in(need, ch) ? batch : contracted) += ch;
      else aonly += ch;
    }
    for (char ch : other)
      if (!in(have, ch)) bonly += ch;
    ValueId a = c.reshape(permuteTo(acc, have, batch + aonly + contracted), {prod(batch), prod(aonly), prod(contracted)});
    ValueId b = c.reshape(permuteTo(xs[k], other, batch + contracted + bonly), {prod(batch), prod(contracted), prod(bonly)});
    ValueId y = c.op(OpKind::Bmm, {a, b});
    have = batch + aonly + bonly;
    Ints shape;
    for (char ch : have) shape.push_back(size[ch]);
    acc = c.reshape(y, shape);
  }
  // 4. The output's order.
  return c.contiguous(permuteTo(acc, have, rhs));
}

}  // namespace aotc::decomp
