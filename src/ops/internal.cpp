//===- internal.cpp - Ops only the engine makes or removes ----------------===//
//
// Note [Op rows] (rules.h) says what a row holds and who reads it.  In-place
// ops exist until functionalize replaces them (ops.def's fn column names
// their functional op); autograd_function holds a captured
// torch.autograd.Function until functionalize turns it into custom_grad,
// whose gradient is the user's backward region; keep_grad gives a mutation
// autograd cannot see its gradient (the new value's gradient goes to the
// old one); dce removes both after autodiff.  epilogue_copy writes a
// mutated input back (Note [Functionalization by storage] in functionalize.cpp,
// and the forward/backward placement in aot-semantics.md); the code generator lowers it
// as a copy kernel into the caller's buffer.
//===----------------------------------------------------------------------===//
#include "rule_util.h"

namespace aotc::detail {

namespace {

using K = OpKind;
using R = std::vector<ValueId>;
using TT = std::vector<TensorType>;

// ---- shape rules

TT keepGradRule(const TT& in, const Attrs&) {
  if (in[0].sizes != in[1].sizes || in[0].dtype != in[1].dtype)
    shapeError("keep_grad: " + in[0].str() + " and " + in[1].str() + " differ");
  return one(in[1]);
}
TT customGradRule(const TT& in, const Attrs& a) {
  int64_t na = attrInt(a, "num_args"), no = attrInt(a, "num_outputs");
  if (na < 0 || no < 0 || na + no > static_cast<int64_t>(in.size())) shapeError("custom_grad: bad operand counts");
  return TT(in.begin() + na, in.begin() + na + no);
}
TT fromRegions(const TT&, const Attrs&) { shapeError("autograd_function: result types come from its forward region"); }
TT inplaceRule(const TT& in, const Attrs&) {
  auto b = broadcastShapes(in[0].sizes, in[1].sizes);
  if (!b || *b != in[0].sizes)
    shapeError("in-place: source " + shapeStr(in[1].sizes) + " does not broadcast to destination " + shapeStr(in[0].sizes));
  return one(in[0]);
}
TT epilogueRule(const TT& in, const Attrs&) {
  if (in[0].sizes != in[1].sizes || in[0].dtype != in[1].dtype)
    shapeError("epilogue_copy: value " + in[1].str() + " does not match input " + in[0].str());
  return {};
}

// ---- reference kernels

Outs keepGradRef(const Ins& in, const Attrs&, const std::vector<TensorType>&) { return {*in[1]}; }
Outs customGradRef(const Ins& in, const Attrs& a, const std::vector<TensorType>&) {
  Outs o;
  for (int64_t i = 0; i < attrInt(a, "num_outputs"); ++i) o.push_back(*in[static_cast<size_t>(attrInt(a, "num_args") + i)]);
  return o;
}

// ---- gradient rules

R keepGradGrad(GradCtx& g) { return {g.GO(0), kNoValue}; }

/// The user's backward (regions[0] of custom_grad), inlined: its saved
/// inputs bind to the node's saved operands, its tangents to GO (zeros where
/// no gradient flows).  Its nodes may mutate what they read; the joint
/// functionalization that follows autodiff turns those into pure ops and
/// backward epilogue copies.
R customGradGrad(GradCtx& g) {
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

}  // namespace

std::span<const OpRule> internalRows() {
  static const std::vector<OpRule> kRows = {
      row(K::KeepGrad, keepGradRule, keepGradRef, keepGradGrad, Lowering::None),
      row(K::CustomGrad, customGradRule, customGradRef, customGradGrad, Lowering::None),
      row(K::AutogradFunction, fromRegions, nullptr, nullptr, Lowering::None),
      row(K::AddInplace, inplaceRule, nullptr, nullptr, Lowering::None),
      row(K::MulInplace, inplaceRule, nullptr, nullptr, Lowering::None),
      row(K::CopyInplace, inplaceRule, nullptr, nullptr, Lowering::None),
      row(K::EpilogueCopy, epilogueRule, nullptr, nullptr, Lowering::Epilogue),
  };
  return kRows;
}

}  // namespace aotc::detail
