//===- gradients.cpp - One gradient rule per differentiable op ------------===//
//
// Rules are written in forward ops (tinygrad pm_gradient, ORT GO/GI/I/O) and
// emit Phase::Backward nodes that carry the forward node's location, so a
// diagnostic or a kernel comment in the backward still names the user's node.
//
// Note [Node order]: C++ leaves the evaluation order of function arguments
// unspecified (GCC and clang differ), so no call here has two arguments that
// both create nodes: such values are named first, in statements, and braced
// lists (evaluated left to right) hold the rest.  Otherwise the IR, and the
// artifacts, would depend on the compiler that built aotc.
//===----------------------------------------------------------------------===//
#include "aotc/ops/gradients.h"

#include <algorithm>

#include "aotc/ops/ops.h"
#include "aotc/ops/pointwise.h"
#include "aotc/ops/reductions.h"

namespace aotc {

void GradCtx::inlineNode(const Graph& src, const Node& n, std::vector<ValueId>& map) {
  Node c = n;
  c.phase = Phase::Backward;
  c.tags = kTagNone;
  if (c.loc.node.empty()) c.loc = fwd_.loc;
  graph().copyNode(src, c, map);
}

ValueId GradCtx::savedValue(size_t k, ValueId dflt) { return saved_ ? saved_(fwd_, k, dflt) : dflt; }

namespace {

using R = std::vector<ValueId>;

/// The user's backward (regions[0] of custom_grad), inlined: its saved
/// inputs bind to the node's saved operands, its tangents to GO (zeros where
/// no gradient flows).  Its nodes may mutate what they read; the joint
/// functionalization that follows autodiff turns those into pure ops and
/// backward epilogue copies.
std::vector<ValueId> customGradRule(GradCtx& g) {
  const Node& n = g.node();
  const Graph& bw = n.regions.at(0);
  int64_t na = attrInt(n.attrs, "num_args"), no = attrInt(n.attrs, "num_outputs");
  std::vector<ValueId> map(bw.values.size(), kNoValue);
  size_t saved = 0, tangent = 0;
  for (const GraphInput& gi : bw.inputs) {
    if (gi.role == InputRole::Saved) {
      map[gi.value] = g.savedValue(saved, n.inputs.at(static_cast<size_t>(na + no) + saved));
      ++saved;
    } else {
      ValueId go = g.GO(static_cast<int>(tangent));
      map[gi.value] = go != kNoValue ? go : g.zeros(g.type(g.O(static_cast<int>(tangent))));
      ++tangent;
    }
  }
  for (const Node& bn : bw.nodes) g.inlineNode(bw, bn, map);
  std::vector<ValueId> grads(n.inputs.size(), kNoValue);
  for (const GraphOutput& o : bw.outputs) {
    // The region comes from a file (FX JSON or IR text): a bad index is the
    // input's fault, not a broken invariant (libFuzzer finding, fuzz_ir).
    size_t idx = o.target.empty() || o.target.size() > 9 || o.target.find_first_not_of("0123456789") != std::string::npos
                     ? SIZE_MAX : std::stoul(o.target);
    if (idx >= static_cast<size_t>(na))
      throw UserError(n.loc, cat("custom backward returns a gradient for argument '", o.target, "' of a function with ", na,
                                 " arguments"));
    grads[idx] = map[o.value];
  }
  return grads;
}

constexpr GradRule ruleFor(OpKind k) {
  switch (k) {  // elementwise ops and reductions: their rows in pointwise.cpp, reductions.cpp
    case OpKind::Mm:
      return [](GradCtx& g) -> R {
        return {g.op(OpKind::Mm, {g.GO(0), g.op(OpKind::T, {g.I(1)})}),
                g.op(OpKind::Mm, {g.op(OpKind::T, {g.I(0)}), g.GO(0)})};
      };
    case OpKind::T: return [](GradCtx& g) -> R { return {g.op(OpKind::T, {g.GO(0)})}; };
    case OpKind::View: return [](GradCtx& g) -> R { return {g.reshape(g.GO(0), g.sizes(g.I(0)))}; };
    case OpKind::Expand: return [](GradCtx& g) -> R { return {g.sumTo(g.GO(0), g.sizes(g.I(0)))}; };
    case OpKind::Transpose: return [](GradCtx& g) -> R { return {g.op(OpKind::Transpose, {g.GO(0)}, g.attrs())}; };
    case OpKind::Unsqueeze: case OpKind::Squeeze:
      return [](GradCtx& g) -> R { return {g.reshape(g.GO(0), g.sizes(g.I(0)))}; };
    case OpKind::Slice:
      return [](GradCtx& g) -> R {
        return {g.op(OpKind::SliceScatter, {g.zeros(g.type(g.I(0))), g.contiguous(g.GO(0))}, g.attrs())};
      };
    case OpKind::Select:
      return [](GradCtx& g) -> R {
        return {g.op(OpKind::SelectScatter, {g.zeros(g.type(g.I(0))), g.contiguous(g.GO(0))}, g.attrs())};
      };
    case OpKind::Diagonal:
      return [](GradCtx& g) -> R {
        return {g.op(OpKind::DiagonalScatter, {g.zeros(g.type(g.I(0))), g.contiguous(g.GO(0))}, g.attrs())};
      };
    case OpKind::SliceScatter: case OpKind::SelectScatter: case OpKind::DiagonalScatter:
      return [](GradCtx& g) -> R {
        OpKind k = g.node().op;
        OpKind view = k == OpKind::SliceScatter ? OpKind::Slice : k == OpKind::SelectScatter ? OpKind::Select : OpKind::Diagonal;
        ValueId gb = g.op(g.node().op, {g.contiguous(g.GO(0)), g.zeros(g.type(g.I(1)))}, g.attrs());
        return {gb, g.op(view, {g.GO(0)}, g.attrs())};
      };
    case OpKind::KeepGrad: return [](GradCtx& g) -> R { return {g.GO(0), kNoValue}; };
    case OpKind::Bmm:
      return [](GradCtx& g) -> R {
        Attrs tr{{"dim0", int64_t{1}}, {"dim1", int64_t{2}}};
        return {g.op(OpKind::Bmm, {g.GO(0), g.op(OpKind::Transpose, {g.I(1)}, tr)}),
                g.op(OpKind::Bmm, {g.op(OpKind::Transpose, {g.I(0)}, tr), g.GO(0)})};
      };
    case OpKind::Conv2d:
      return [](GradCtx& g) -> R {
        Attrs ai = g.attrs(), aw = g.attrs();
        ai["input_size"] = g.sizes(g.I(0));
        aw["weight_size"] = g.sizes(g.I(1));
        ValueId go = g.contiguous(g.GO(0));
        return {g.op(OpKind::Conv2dBackwardInput, {go, g.contiguous(g.I(1))}, ai),
                g.op(OpKind::Conv2dBackwardWeight, {go, g.contiguous(g.I(0))}, aw)};
      };
    // z = conv2d_backward_input(g, w) is linear in each operand:
    // <z, GO> = <conv2d(GO, w), g> = <w, conv2d_backward_weight(g, GO)>.
    case OpKind::Conv2dBackwardInput:
      return [](GradCtx& g) -> R {
        Attrs ac = g.attrs(), aw = g.attrs();
        ac.erase("input_size");
        aw.erase("input_size");
        aw["weight_size"] = g.sizes(g.I(1));
        ValueId go = g.contiguous(g.GO(0));
        return {g.op(OpKind::Conv2d, {go, g.contiguous(g.I(1))}, ac),
                g.op(OpKind::Conv2dBackwardWeight, {g.contiguous(g.I(0)), go}, aw)};
      };
    case OpKind::MaxPool2d:
      return [](GradCtx& g) -> R {
        Attrs a = g.attrs();
        a["input_size"] = g.sizes(g.I(0));
        return {g.op(OpKind::MaxPool2dBackward, {g.contiguous(g.GO(0)), g.O(1)}, a)};
      };
    case OpKind::AvgPool2d:
      return [](GradCtx& g) -> R {
        Attrs a = g.attrs();
        a["input_size"] = g.sizes(g.I(0));
        return {g.op(OpKind::AvgPool2dBackward, {g.contiguous(g.GO(0))}, a)};
      };
    case OpKind::AdaptiveAvgPool2d:
      return [](GradCtx& g) -> R {
        return {g.op(OpKind::AdaptiveAvgPool2dBackward, {g.contiguous(g.GO(0))}, Attrs{{"input_size", g.sizes(g.I(0))}})};
      };
    // z = conv2d_backward_weight(g, x): <z, GO> = <conv2d(x, GO), g> = <x, conv2d_backward_input(g, GO)>.
    case OpKind::Conv2dBackwardWeight:
      return [](GradCtx& g) -> R {
        Attrs ac = g.attrs(), ai = g.attrs();
        ac.erase("weight_size");
        ai.erase("weight_size");
        ai["input_size"] = g.sizes(g.I(1));
        ValueId go = g.contiguous(g.GO(0));
        return {g.op(OpKind::Conv2d, {g.contiguous(g.I(1)), go}, ac),
                g.op(OpKind::Conv2dBackwardInput, {g.contiguous(g.I(0)), go}, ai)};
      };
    // Pool backwards are linear in the incoming gradient; their adjoints are
    // the pools (max: GO gathered at the saved indices, ATen's
    // max_pool_double_backward).  No gradient flows to the indices.
    case OpKind::AvgPool2dBackward:
      return [](GradCtx& g) -> R {
        Attrs a = g.attrs();
        a.erase("input_size");
        return {g.op(OpKind::AvgPool2d, {g.contiguous(g.GO(0))}, a)};
      };
    case OpKind::AdaptiveAvgPool2dBackward:
      return [](GradCtx& g) -> R {
        Ints o = g.sizes(g.I(0));
        return {g.op(OpKind::AdaptiveAvgPool2d, {g.contiguous(g.GO(0))}, Attrs{{"output_size", Ints{o[2], o[3]}}})};
      };
    case OpKind::MaxPool2dBackward:
      return [](GradCtx& g) -> R {
        Ints o = g.sizes(g.I(0)), in = g.sizes(g.O(0));
        ValueId flatGo = g.reshape(g.contiguous(g.GO(0)), {in[0], in[1], in[2] * in[3]});
        ValueId flatIdx = g.reshape(g.contiguous(g.I(1)), {o[0], o[1], o[2] * o[3]});
        ValueId picked = g.op(OpKind::Gather, {flatGo, flatIdx}, Attrs{{"dim", int64_t{2}}});
        return {g.reshape(picked, o), kNoValue};
      };
    case OpKind::IndexSelect:
      return [](GradCtx& g) -> R {
        return {g.op(OpKind::IndexAdd, {g.zeros(g.type(g.I(0))), g.I(1), g.contiguous(g.GO(0))}, g.attrs()), kNoValue};
      };
    case OpKind::IndexAdd:
      return [](GradCtx& g) -> R { return {g.GO(0), kNoValue, g.op(OpKind::IndexSelect, {g.GO(0), g.I(1)}, g.attrs())}; };
    case OpKind::Gather:
      return [](GradCtx& g) -> R {
        return {g.op(OpKind::ScatterAdd, {g.zeros(g.type(g.I(0))), g.I(1), g.contiguous(g.GO(0))}, g.attrs()), kNoValue};
      };
    // self: grad with the scattered places zeroed; src: grad gathered at index.
    case OpKind::Scatter:
      return [](GradCtx& g) -> R {
        ValueId gs = g.op(OpKind::Scatter, {g.contiguous(g.GO(0)), g.I(1), g.zeros(g.type(g.I(2)))}, g.attrs());
        Ints s = g.sizes(g.I(2));
        ValueId gsrc = g.op(OpKind::Gather, {g.GO(0), g.I(1)}, g.attrs());
        // src may be larger than index: its other elements get no gradient.
        if (g.sizes(gsrc) != s) {
          Ints p;
          Ints is = g.sizes(g.I(1));
          for (size_t d = 0; d < s.size(); ++d) p.insert(p.begin(), {0, s[d] - is[d]});
          gsrc = g.op(OpKind::Pad, {gsrc}, Attrs{{"pad", p}, {"value", 0.0}});
        }
        return {gs, kNoValue, gsrc};
      };
    case OpKind::Cumsum:
      return [](GradCtx& g) -> R {
        Attrs a = g.attrs();
        a["reverse"] = !attrBool(a, "reverse", false);
        return {g.op(OpKind::Cumsum, {g.GO(0)}, a)};
      };
    // The sorted values' gradient goes back to where each came from.
    case OpKind::Sort:
      return [](GradCtx& g) -> R {
        Attrs a{{"dim", attrInt(g.attrs(), "dim")}};
        return {g.op(OpKind::ScatterAdd, {g.zeros(g.type(g.I(0))), g.O(1), g.contiguous(g.GO(0))}, a)};
      };
    case OpKind::ScatterAdd:
      return [](GradCtx& g) -> R { return {g.GO(0), kNoValue, g.op(OpKind::Gather, {g.GO(0), g.I(1)}, g.attrs())}; };
    case OpKind::Cat:
      return [](GradCtx& g) -> R {
        R r;
        int64_t d = wrapDim(attrInt(g.attrs(), "dim"), static_cast<int64_t>(g.sizes(g.O(0)).size()));
        int64_t at = 0;
        for (size_t i = 0; i < g.node().inputs.size(); ++i) {
          int64_t n = g.sizes(g.I(static_cast<int>(i)))[static_cast<size_t>(d)];
          r.push_back(g.op(OpKind::Slice, {g.GO(0)}, Attrs{{"dim", d}, {"start", at}, {"end", at + n}, {"step", int64_t{1}}}));
          at += n;
        }
        return r;
      };
    case OpKind::Pad:
      return [](GradCtx& g) -> R {
        Ints p = attrInts(g.attrs(), "pad");
        for (int64_t& v : p) v = -v;
        return {g.op(OpKind::Pad, {g.contiguous(g.GO(0))}, Attrs{{"pad", p}, {"value", 0.0}})};
      };
    case OpKind::Permute:
      return [](GradCtx& g) -> R {
        Ints p = attrInts(g.attrs(), "dims"), inv(p.size());
        for (size_t i = 0; i < p.size(); ++i) inv[static_cast<size_t>(wrapDim(p[i], static_cast<int64_t>(p.size())))] = static_cast<int64_t>(i);
        return {g.op(OpKind::Permute, {g.GO(0)}, Attrs{{"dims", inv}})};
      };
    case OpKind::CustomGrad: return customGradRule;
    default: return nullptr;
  }
}

}  // namespace

GradRule gradRule(OpKind k) {
  if (opInfo(k).grad != GradKind::Diff) return nullptr;
  if (const PointwiseRule* p = pointwiseRule(k)) return p->grad;
  if (const ReductionRule* r = reductionRule(k)) return r->grad;
  return ruleFor(k);
}

}  // namespace aotc
