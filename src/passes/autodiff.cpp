//===- autodiff.cpp - Functional graph -> joint forward+backward graph ----===//
//
// Assumes a verified functional graph.  Produces the joint graph
//   (primals..., tangent_<i>...) -> (user outputs..., grad(<input>)...)
// where tangent_<i> is the incoming gradient of user output i (only for
// outputs that require grad), forward nodes keep their tags, and every node
// the gradient rules emit is Phase::Backward with the forward node's location.
// An input that requires grad but receives none gets an explicit zero grad.
//===----------------------------------------------------------------------===//
#include <map>

#include "aotc/ops/gradients.h"
#include "aotc/ops/ops.h"
#include "aotc/passes/passes.h"

namespace aotc {

Graph autodiff(const Graph& fwd) {
  Graph j;
  j.name = fwd.name;
  std::vector<ValueId> vmap(fwd.values.size(), kNoValue);
  std::vector<bool> rg(fwd.values.size(), false);
  for (const GraphInput& gi : fwd.inputs) {
    vmap[gi.value] = j.addInput(fwd.values[gi.value].name, fwd.type(gi.value), gi.role, gi.requires_grad);
    rg[gi.value] = gi.requires_grad;
  }
  for (const Node& n : fwd.nodes) {
    // Which operands can carry a gradient into this node.
    size_t diffOperands = n.inputs.size();
    if (n.op == OpKind::CustomGrad) diffOperands = static_cast<size_t>(attrInt(n.attrs, "num_args"));
    if (n.op == OpKind::KeepGrad) diffOperands = 1;
    bool any = false;
    for (size_t i = 0; i < diffOperands; ++i) any = any || rg[n.inputs[i]];
    bool noGrad = attrBool(n.attrs, "no_grad", false) || opInfo(n.op).grad == GradKind::NoGrad;
    for (ValueId v : n.outputs) rg[v] = any && !noGrad && isFloating(fwd.type(v).dtype);
    j.copyNode(fwd, n, vmap);
  }
  // A custom backward's saved graph input is read as it is when the backward
  // runs: the forward epilogue's source if the forward mutates it.
  std::map<ValueId, ValueId> afterForward;
  for (const Node& n : fwd.nodes)
    if (n.op == OpKind::EpilogueCopy) afterForward[n.inputs[0]] = n.inputs[1];
  GradCtx::SavedBinder binder = [&](const Node& node, size_t k, ValueId dflt) -> ValueId {
    const Ints& si = attrInts(node.attrs, "saved_input");
    if (k >= si.size() || si[k] < 0) return dflt;
    ValueId primal = fwd.inputs.at(static_cast<size_t>(si[k])).value;
    auto it = afterForward.find(primal);
    return vmap[it == afterForward.end() ? primal : it->second];
  };

  // Which nodes lie between a requires-grad input and a differentiable output:
  // those are the ones that need a gradient rule.
  std::vector<bool> needed(fwd.values.size(), false);
  std::vector<ValueId> tangents(fwd.outputs.size(), kNoValue);
  for (size_t i = 0; i < fwd.outputs.size(); ++i) {
    ValueId v = fwd.outputs[i].value;
    if (fwd.outputs[i].role != OutputRole::User || !rg[v]) continue;
    needed[v] = true;
    tangents[i] = j.addInput(j.uniqueName("tangent_" + std::to_string(i)),
                             TensorType::contiguous(fwd.type(v).dtype, fwd.type(v).sizes), InputRole::Tangent, false);
  }
  std::vector<Diagnostic> missing;
  std::map<std::string, int> missingCount;
  for (size_t k = fwd.nodes.size(); k-- > 0;) {
    const Node& n = fwd.nodes[k];
    bool out_needed = false;
    for (ValueId v : n.outputs) out_needed = out_needed || (needed[v] && rg[v]);
    if (!out_needed) continue;
    size_t diffOperands = n.op == OpKind::CustomGrad ? static_cast<size_t>(attrInt(n.attrs, "num_args"))
                          : n.op == OpKind::KeepGrad ? 1 : n.inputs.size();
    for (size_t i = 0; i < diffOperands; ++i) needed[n.inputs[i]] = needed[n.inputs[i]] || rg[n.inputs[i]];
    if (opInfo(n.op).grad == GradKind::Diff) continue;
    if (opInfo(n.op).grad == GradKind::NeverDiff || !gradRule(n.op)) {
      if (missingCount[opName(n.op)]++ == 0)
        missing.push_back({n.loc, cat("no gradient rule for op '", opName(n.op), "'")});
    }
  }
  if (!missing.empty()) throw UserError(missing);

  std::map<ValueId, ValueId> grads;  // joint value -> accumulated gradient
  auto accumulate = [&](ValueId jv, ValueId g, const SourceLoc& loc) {
    auto it = grads.find(jv);
    if (it == grads.end()) grads[jv] = g;
    else it->second = addOp(j, OpKind::Add, {it->second, g}, {}, loc, Phase::Backward);
  };
  for (size_t i = 0; i < fwd.outputs.size(); ++i)
    if (tangents[i] != kNoValue) accumulate(vmap[fwd.outputs[i].value], tangents[i], SourceLoc{});

  for (size_t k = fwd.nodes.size(); k-- > 0;) {
    const Node n = j.nodes[k];  // a copy: rules append to j.nodes
    if (opInfo(n.op).grad != GradKind::Diff || attrBool(n.attrs, "no_grad", false)) continue;
    std::vector<ValueId> gos;
    bool any = false;
    for (ValueId v : n.outputs) {
      auto it = grads.find(v);
      gos.push_back(it == grads.end() ? kNoValue : it->second);
      any = any || it != grads.end();
    }
    if (!any) continue;
    bool inputNeeds = false;
    for (ValueId v : fwd.nodes[k].inputs) inputNeeds = inputNeeds || rg[v];
    if (!inputNeeds) continue;
    GradCtx ctx(j, n, gos, binder);
    std::vector<ValueId> gi = gradRule(n.op)(ctx);
    AOTC_CHECK(gi.size() == n.inputs.size(), "gradient rule of ", opName(n.op), " returned ", gi.size(), " grads");
    for (size_t i = 0; i < gi.size(); ++i)
      if (gi[i] != kNoValue && rg[fwd.nodes[k].inputs[i]]) {
        // A custom backward may return a gradient of another shape or a view:
        // it is the caller's, so only broadcast-reduce when shapes differ.
        ValueId gv = gi[i];
        if (j.type(gv).sizes != j.type(n.inputs[i]).sizes) gv = ctx.sumTo(gv, j.type(n.inputs[i]).sizes);
        // As PyTorch's engine does (validate_outputs): a gradient reaching an
        // input of another floating dtype (a bf16 value added to a float32
        // one) is cast to the input's dtype.
        if (DType want = j.type(n.inputs[i]).dtype; j.type(gv).dtype != want && isFloating(want) && isFloating(j.type(gv).dtype))
          gv = addOp(j, OpKind::Cast, {gv}, Attrs{{"dtype", std::string(dtypeName(want))}}, n.loc, Phase::Backward);
        accumulate(n.inputs[i], gv, n.loc);
      }
  }

  // A user output that takes a tangent names it (its `target`): runtimes pair
  // grad_output.<i> with the tangent through this record, never by parsing
  // the tangent's name (a user input may be called tangent_0).
  for (size_t i = 0; i < fwd.outputs.size(); ++i) {
    GraphOutput r = fwd.outputs[i];
    r.value = vmap[r.value];
    if (tangents[i] != kNoValue) r.target = j.values[tangents[i]].name;
    j.outputs.push_back(std::move(r));
  }
  for (const GraphInput& gi : fwd.inputs) {
    if (!gi.requires_grad) continue;
    const std::string& name = fwd.values[gi.value].name;
    ValueId jv = vmap[gi.value];
    auto it = grads.find(jv);
    ValueId g;
    if (it != grads.end()) {
      g = it->second;
    } else {
      const TensorType& t = fwd.type(gi.value);
      g = addOp(j, OpKind::Constant, {},
                Attrs{{"value", 0.0}, {"dtype", std::string(dtypeName(t.dtype))}, {"shape", t.sizes}},
                SourceLoc{"", name, "zero grad"}, Phase::Backward);
    }
    j.outputs.push_back(GraphOutput{g, OutputRole::Grad, name, std::nullopt, {}});
  }
  return j;
}

}  // namespace aotc
