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
    bool any = false;
    for (ValueId v : n.inputs) any = any || rg[v];
    for (ValueId v : n.outputs) rg[v] = any && opInfo(n.op).grad != GradKind::NoGrad && isFloating(fwd.type(v).dtype);
    j.copyNode(fwd, n, vmap);
  }

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
    for (ValueId v : n.inputs) needed[v] = needed[v] || rg[v];
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
    else it->second = j.add(OpKind::Add, {it->second, g}, {}, loc, Phase::Backward);
  };
  for (size_t i = 0; i < fwd.outputs.size(); ++i)
    if (tangents[i] != kNoValue) accumulate(vmap[fwd.outputs[i].value], tangents[i], SourceLoc{});

  for (size_t k = fwd.nodes.size(); k-- > 0;) {
    const Node n = j.nodes[k];  // a copy: rules append to j.nodes
    if (opInfo(n.op).grad != GradKind::Diff) continue;
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
    GradCtx ctx(j, n, gos);
    std::vector<ValueId> gi = gradRule(n.op)(ctx);
    AOTC_CHECK(gi.size() == n.inputs.size(), "gradient rule of ", opName(n.op), " returned ", gi.size(), " grads");
    for (size_t i = 0; i < gi.size(); ++i)
      if (gi[i] != kNoValue && rg[fwd.nodes[k].inputs[i]]) accumulate(n.inputs[i], gi[i], n.loc);
  }

  for (const GraphOutput& o : fwd.outputs) {
    GraphOutput r = o;
    r.value = vmap[o.value];
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
      g = j.add(OpKind::Constant, {},
                Attrs{{"value", 0.0}, {"dtype", std::string(dtypeName(t.dtype))}, {"shape", t.sizes}},
                SourceLoc{"", name, "zero grad"}, Phase::Backward);
    }
    j.outputs.push_back(GraphOutput{g, OutputRole::Grad, name, std::nullopt, {}});
  }
  return j;
}

}  // namespace aotc
