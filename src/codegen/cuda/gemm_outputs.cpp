//===- gemm_outputs.cpp - Where and how a GEMM writes its product (stage 1) -===//
//
// Two fusion-plan rules that let a cuBLAS call do the work of the pointwise
// kernel after it: scaling its product by a power of two (Note [GEMM
// scale]) and writing it straight into the buffer of the contiguous copy
// made of it (Note [GEMM into its copy]).  Reads types and uses only, like
// the rest of the plan (Note [Codegen stages] in lowering.h).
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <optional>

#include "aotc/codegen/fusion.h"
#include "aotc/ops/ops.h"
#include "aotc/support/diag.h"

namespace aotc {

namespace {

bool isGemm(OpKind k) { return k == OpKind::Mm || k == OpKind::Bmm; }

/// The node that reads `v`, when exactly one does and `v` is no program
/// output; else -1.
int32_t onlyUser(const UseInfo& u, ValueId v) {
  if (u.is_output[v] || u.users[v].size() != 1) return -1;
  return u.users[v][0];
}

/// A 0-dim literal's value that is a power of two (2^-126 .. 2^126), or
/// nullopt.  Size scalars (Note [Size scalars]) vary with the sizes of a
/// dynamic artifact and are never taken.
std::optional<double> powerOfTwoLiteral(const Graph& g, ValueId v) {
  int32_t d = g.values[v].node;
  if (d < 0) return std::nullopt;
  const Node& c = g.nodes[static_cast<size_t>(d)];
  if (c.op != OpKind::Constant || g.type(v).rank() != 0 || !hasAttr(c.attrs, "value") || hasAttr(c.attrs, "size_num") ||
      !isFloating(g.type(v).dtype))
    return std::nullopt;
  double x = attrFloat(c.attrs, "value");
  if (!std::isfinite(x) || x == 0) return std::nullopt;
  int e = 0;
  double m = std::frexp(std::fabs(x), &e);
  if (m != 0.5 || e < -125 || e > 127) return std::nullopt;
  return x;
}

/// The input layout (strides) a view node must have for its output to have
/// `out` strides, or nullopt: each view op's inverse applied to `out`, then
/// checked by running the op's own shape rule forward.
std::optional<Ints> stridesBefore(const Graph& g, const Node& v, const Ints& out) {
  const TensorType& in = g.type(v.inputs[0]);
  const TensorType& ot = g.type(v.outputs[0]);
  Ints s;
  switch (v.op) {
    case OpKind::Detach: s = out; break;
    case OpKind::T:
      s = out;
      if (s.size() == 2) std::swap(s[0], s[1]);
      break;
    case OpKind::Transpose: {
      s = out;
      const int64_t r = static_cast<int64_t>(s.size());
      if (r == 0) break;
      std::swap(s[static_cast<size_t>(wrapDim(attrInt(v.attrs, "dim0"), r))], s[static_cast<size_t>(wrapDim(attrInt(v.attrs, "dim1"), r))]);
      break;
    }
    case OpKind::Permute: {
      const Ints& p = attrInts(v.attrs, "dims");
      if (p.size() != out.size()) return std::nullopt;
      s.assign(out.size(), 0);
      for (size_t i = 0; i < p.size(); ++i) s[static_cast<size_t>(wrapDim(p[i], static_cast<int64_t>(p.size())))] = out[i];
      break;
    }
    case OpKind::View: {
      auto st = viewStrides(ot.sizes, out, in.sizes);
      if (!st) return std::nullopt;
      s = *st;
      break;
    }
    default: return std::nullopt;
  }
  TensorType probe = in;
  probe.strides = s;
  probe.offset = 0;
  try {
    std::vector<TensorType> r = inferTypes(v.op, {probe}, v.attrs);
    if (r.size() != 1 || r[0].sizes != ot.sizes || r[0].strides != out || r[0].offset != 0) return std::nullopt;
  } catch (const UserError&) {
    return std::nullopt;
  }
  return s;
}

/// Whether cuBLAS can write a product of these sizes with these strides:
/// one unit-stride dim among the last two, the other its leading dimension
/// (Note [GEMM into its copy]).
bool gemmWritable(const Ints& sizes, const Ints& strides) {
  const size_t d = sizes.size() == 3 ? 1 : 0;
  if (sizes.size() != d + 2) return false;
  const int64_t rows = sizes[d], cols = sizes[d + 1], sr = strides[d], sc = strides[d + 1];
  return (sc == 1 && sr >= std::max<int64_t>(1, cols)) || (sr == 1 && sc >= std::max<int64_t>(1, rows));
}

}  // namespace

// Note [GEMM scale]: div(P, c) or mul(P, c) of a GEMM's product P by a
// 0-dim literal power of two c (q / sqrt(d) in attention, d = 64), where
// the scaling is P's only reader, is the GEMM's alpha (1/c or c): cuBLAS
// writes alpha * (A B) and the scaling writes no buffer of its own.
// Scaling by a power of two is exact, so rounding the product once after it
// gives the bits rounding it before it did (outside the subnormal range,
// where the kernel's two roundings could differ by one unit in the last
// place); any other c would round differently and is left a kernel.  A
// product with a bias epilogue is not scaled (its add reads it, not the
// scaling).
//
// Note [GEMM into its copy]: clone(V(P)) -- a contiguous copy of views V
// (transpose, t, permute, view, detach) of a GEMM's product P, or of its
// scaled product (Note [GEMM scale]) -- where P and each view have no other
// reader and are no program output: the GEMM writes P straight into the
// copy's buffer, under the strides that put each element where the copy
// holds it (each view's inverse applied to the copy's contiguous strides,
// then checked by the view's own shape rule).  That layout must be one
// cuBLAS writes: one of the matrix dims of unit stride, the other the
// leading dimension, and for bmm one batch stride (multi-head attention's
// bmm(attn, v) of [B*H, L, d], transposed to [L, B*H, d] and copied: batch
// stride d, leading dimension B*H*d).  A product whose rows are unit-stride
// is written by computing C = A B column-major instead of C^T = B^T A^T
// (extern_calls.cpp).  The copy, the views and the scaling write nothing
// then; the copy is still a value of its own, contiguous, so every reader
// of it -- the backward, when it is saved -- reads what it read.
void planGemmOutputs(const Graph& g, const UseInfo& u, FusionPlan& plan) {
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if ((n.op != OpKind::Div && n.op != OpKind::Mul) || plan.inlined[k] || n.outputs.size() != 1) continue;
    for (size_t side = 0; side < (n.op == OpKind::Mul ? 2u : 1u); ++side) {
      ValueId p = n.inputs[side], c = n.inputs[1 - side];
      int32_t d = g.values[p].node;
      auto lit = powerOfTwoLiteral(g, c);
      if (d < 0 || !lit || !isGemm(g.nodes[static_cast<size_t>(d)].op) || onlyUser(u, p) != static_cast<int32_t>(k) ||
          plan.gemmBias.count(d) || plan.gemmAlpha.count(d))
        continue;
      const TensorType &pt = g.type(p), &ot = g.type(n.outputs[0]);
      if (ot.dtype != pt.dtype || ot.sizes != pt.sizes || !ot.isContiguous() || ot.offset != 0) continue;
      plan.scaleOf[static_cast<int32_t>(k)] = d;
      plan.gemmAlpha[d] = n.op == OpKind::Div ? 1.0 / *lit : *lit;
      break;
    }
  }
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (n.op != OpKind::Clone || plan.inlined[k] || n.outputs.size() != 1) continue;
    const TensorType& ct = g.type(n.outputs[0]);
    if (!ct.isContiguous() || ct.offset != 0 || ct.dtype != g.type(n.inputs[0]).dtype) continue;
    std::vector<int32_t> chain;  // the views, from the copy back
    Ints strides = ct.strides;
    ValueId v = n.inputs[0];
    int32_t next = static_cast<int32_t>(k), gemm = -1;
    bool ok = true;
    while (ok) {
      int32_t d = g.values[v].node;
      ok = d >= 0 && onlyUser(u, v) == next;
      if (!ok) break;
      const Node& p = g.nodes[static_cast<size_t>(d)];
      if (isGemm(p.op)) {
        gemm = d;
        break;
      }
      if (auto s = plan.scaleOf.find(d); s != plan.scaleOf.end()) {
        chain.push_back(d);
        gemm = s->second;
        break;
      }
      auto before = opInfo(p.op).category == OpCategory::View ? stridesBefore(g, p, strides) : std::nullopt;
      ok = before.has_value();
      if (!ok) break;
      strides = *before;
      chain.push_back(d);
      next = d;
      v = p.inputs[0];
    }
    if (!ok || gemm < 0 || plan.gemmBias.count(gemm) || plan.gemmInto.count(gemm)) continue;
    const TensorType& pt = g.type(g.nodes[static_cast<size_t>(gemm)].outputs[0]);
    if (!pt.isContiguous() || pt.offset != 0 || !gemmWritable(pt.sizes, strides)) continue;
    plan.gemmInto[gemm] = FusionPlan::CopyTarget{static_cast<int32_t>(k), strides};
    plan.writtenByGemm[static_cast<int32_t>(k)] = gemm;
    for (int32_t c : chain) plan.writtenByGemm[c] = gemm;
  }
}

}  // namespace aotc
