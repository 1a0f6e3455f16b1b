//===- gradients.cpp - The gradient context; each rule is its op's row's ---===//
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
#include "aotc/ops/rules.h"

namespace aotc {

void GradCtx::inlineNode(const Graph& src, const Node& n, std::vector<ValueId>& map) {
  Node c = n;
  c.phase = Phase::Backward;
  c.tags = kTagNone;
  if (c.loc.node.empty()) c.loc = fwd_.loc;
  graph().copyNode(src, c, map);
}

ValueId GradCtx::savedValue(size_t k, ValueId dflt) { return saved_ ? saved_(fwd_, k, dflt) : dflt; }

GradRule gradRule(OpKind k) {
  if (opInfo(k).grad != GradKind::Diff) return nullptr;
  if (const PointwiseRule* p = pointwiseRule(k)) return p->grad;
  if (const ReductionRule* r = reductionRule(k)) return r->grad;
  const OpRule* r = opRule(k);
  return r ? r->grad : nullptr;
}

}  // namespace aotc
