//===- dce.cpp - Dead code elimination ------------------------------------===//
// Keeps epilogue copies (they write caller buffers) and whatever they, the
// graph outputs and other live nodes read.  Never changes a live node.
//===----------------------------------------------------------------------===//
#include "aotc/ops/ops.h"
#include "aotc/passes/passes.h"

namespace aotc {

Graph dce(const Graph& g) {
  std::vector<bool> live(g.values.size(), false), keep(g.nodes.size(), false);
  for (const GraphOutput& o : g.outputs) live[o.value] = true;
  for (size_t k = g.nodes.size(); k-- > 0;) {
    const Node& n = g.nodes[k];
    bool used = n.op == OpKind::EpilogueCopy;
    for (ValueId v : n.outputs) used = used || live[v];
    if (!used) continue;
    keep[k] = true;
    for (ValueId v : n.inputs) live[v] = true;
  }
  Graph out;
  out.name = g.name;
  std::vector<ValueId> vmap(g.values.size(), kNoValue);
  for (const GraphInput& gi : g.inputs)
    vmap[gi.value] = out.addInput(g.values[gi.value].name, g.type(gi.value), gi.role, gi.requires_grad);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (keep[k]) out.copyNode(g, g.nodes[k], vmap);
  for (GraphOutput o : g.outputs) {
    o.value = vmap[o.value];
    out.outputs.push_back(std::move(o));
  }
  return out;
}

Graph stripAutogradMarkers(const Graph& g) {
  Graph out;
  out.name = g.name;
  std::vector<ValueId> vmap(g.values.size(), kNoValue);
  for (const GraphInput& gi : g.inputs)
    vmap[gi.value] = out.addInput(g.values[gi.value].name, g.type(gi.value), gi.role, gi.requires_grad);
  for (const Node& n : g.nodes) {
    if (n.op == OpKind::KeepGrad) {
      vmap[n.outputs[0]] = vmap[n.inputs[1]];
    } else if (n.op == OpKind::CustomGrad) {
      size_t na = static_cast<size_t>(attrInt(n.attrs, "num_args"));
      for (size_t i = 0; i < n.outputs.size(); ++i) vmap[n.outputs[i]] = vmap[n.inputs[na + i]];
    } else {
      out.copyNode(g, n, vmap);
    }
  }
  for (GraphOutput o : g.outputs) {
    o.value = vmap[o.value];
    out.outputs.push_back(std::move(o));
  }
  return out;
}

}  // namespace aotc
