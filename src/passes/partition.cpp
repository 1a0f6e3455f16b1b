//===- partition.cpp - Joint graph -> forward and backward programs -------===//
//
// Note [Saving mutated primals]: the forward epilogue overwrites the caller's
// buffer of every input it mutates.  A runtime hands saved tensors from the
// forward to the backward by reference, so saving such a primal as itself
// would make the backward read the *new* value (PyTorch #185876).  The
// partitioner therefore saves a clone taken before the epilogue, tagged
// must_save, and the backward reads that clone.
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <set>

#include "aotc/ops/ops.h"
#include "aotc/passes/passes.h"

namespace aotc {

Partition partitionDefault(const Graph& j) {
  // Forward values the backward reads, in order of first use.
  std::vector<ValueId> saved;
  std::set<ValueId> seen;
  auto isFwValue = [&](ValueId v) {
    const Value& val = j.values[v];
    if (val.node < 0) {
      const GraphInput* gi = j.inputOf(v);
      return gi && gi->role != InputRole::Tangent;
    }
    return j.nodes[static_cast<size_t>(val.node)].phase == Phase::Forward;
  };
  auto need = [&](ValueId v) {
    if (isFwValue(v) && seen.insert(v).second) saved.push_back(v);
  };
  // An epilogue copy's destination is the caller's buffer, not a value the
  // backward reads: the backward program takes it as an input of its own.
  for (const Node& n : j.nodes)
    if (n.phase == Phase::Backward)
      for (size_t i = n.op == OpKind::EpilogueCopy ? 1 : 0; i < n.inputs.size(); ++i) need(n.inputs[i]);
  for (const GraphOutput& o : j.outputs)
    if (o.role == OutputRole::Grad) need(o.value);

  std::set<ValueId> fwMutated;
  for (const Node& n : j.nodes)
    if (n.op == OpKind::EpilogueCopy && n.phase == Phase::Forward) fwMutated.insert(n.inputs[0]);

  Partition p;
  // ---- forward program
  Graph& F = p.forward;
  F.name = j.name + ".forward";
  std::vector<ValueId> fmap(j.values.size(), kNoValue);
  for (const GraphInput& gi : j.inputs)
    if (gi.role != InputRole::Tangent)
      fmap[gi.value] = F.addInput(j.values[gi.value].name, j.type(gi.value), gi.role, gi.requires_grad);
  std::vector<ValueId> savedF(saved.size(), kNoValue);
  auto snapshotMutatedPrimals = [&] {
    for (size_t i = 0; i < saved.size(); ++i) {
      if (!fwMutated.count(saved[i])) continue;
      SourceLoc loc{"", j.values[saved[i]].name, "saved before epilogue"};
      savedF[i] = F.add(OpKind::Clone, {fmap[saved[i]]}, {}, loc, Phase::Forward, kMustSave);
      F.tryRename(savedF[i], j.values[saved[i]].name + ".saved");
    }
  };
  bool snapshotted = false;
  for (const Node& n : j.nodes) {
    if (n.phase != Phase::Forward) continue;
    if (n.op == OpKind::EpilogueCopy && !snapshotted) {
      snapshotMutatedPrimals();
      snapshotted = true;
    }
    F.copyNode(j, n, fmap);
  }
  if (!snapshotted) snapshotMutatedPrimals();
  for (const GraphOutput& o : j.outputs) {
    if (o.role != OutputRole::User && o.role != OutputRole::InputMeta) continue;
    GraphOutput r = o;
    r.value = fmap[o.value];
    F.outputs.push_back(std::move(r));
  }
  for (size_t i = 0; i < saved.size(); ++i) {
    if (savedF[i] == kNoValue) savedF[i] = fmap[saved[i]];
    F.outputs.push_back(GraphOutput{savedF[i], OutputRole::Saved, "", std::nullopt, {}});
    p.saved.push_back(F.values[savedF[i]].name);
  }
  F = dce(F);

  // ---- backward program
  Graph& B = p.backward;
  B.name = j.name + ".backward";
  std::vector<ValueId> bmap(j.values.size(), kNoValue);
  for (size_t i = 0; i < saved.size(); ++i)
    bmap[saved[i]] = B.addInput(p.saved[i], F.type(F.valueNamed(p.saved[i])), InputRole::Saved, false);
  for (const GraphInput& gi : j.inputs)
    if (gi.role == InputRole::Tangent)
      bmap[gi.value] = B.addInput(j.values[gi.value].name, j.type(gi.value), gi.role, false);
  // Inputs the backward epilogue writes: the caller's buffers, by name.
  for (const Node& n : j.nodes)
    if (n.phase == Phase::Backward && n.op == OpKind::EpilogueCopy && bmap[n.inputs[0]] == kNoValue) {
      const GraphInput* gi = j.inputOf(n.inputs[0]);
      bmap[n.inputs[0]] = B.addInput(j.values[n.inputs[0]].name, j.type(n.inputs[0]), gi->role, gi->requires_grad);
    }
  for (const Node& n : j.nodes)
    if (n.phase == Phase::Backward) B.copyNode(j, n, bmap);
  for (const GraphOutput& o : j.outputs) {
    if (o.role != OutputRole::Grad) continue;
    GraphOutput r = o;
    r.value = bmap[o.value];
    B.outputs.push_back(std::move(r));
  }
  B = dce(B);
  return p;
}

}  // namespace aotc
