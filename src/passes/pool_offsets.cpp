//===- pool_offsets.cpp - Max-pool indices as window offsets --------------===//
//
// Note [Window offsets]: max_pool2d_with_indices returns, per output, the
// flat index (y * W + x) of its window's maximum in the input plane: an
// int64 that a training step writes in the forward, saves and reads again in
// the backward, only to find which input element of the window won.  When
// every reader of the indices is a MaxPool2dBackward of the same windows
// (the joint graph of a training step; not when the user sees the indices),
// the window's own offset of its maximum (p * kw + q, in [0, kh * kw))
// carries the same information in the narrowest signed integer that holds it
// (int8 for windows of up to 128 elements): resnet18's 3x3 pool writes and
// reads 1 byte per output instead of 8.  Both ops take `window_offsets=true`;
// the backward compares each candidate window's offset of its element with
// the saved one, so the values are those of the flat indices bit for bit
// (first maximum kept, NaN wins).  Runs on the joint graph, after autodiff:
// the max-pool backward of offsets has no gradient rule (nothing
// differentiates the joint graph again).
//===----------------------------------------------------------------------===//
#include "aotc/ops/ops.h"
#include "aotc/passes/passes.h"

namespace aotc {

namespace {
bool sameWindows(const Attrs& a, const Attrs& b) {
  Window2d x = window2d(a), y = window2d(b);
  return x.kh == y.kh && x.kw == y.kw && x.sh == y.sh && x.sw == y.sw && x.ph == y.ph && x.pw == y.pw && x.dh == y.dh && x.dw == y.dw &&
         x.ceil == y.ceil;
}
}  // namespace

Graph poolOffsets(const Graph& g) {
  UseInfo uses = UseInfo::compute(g);
  std::vector<bool> rewrite(g.nodes.size(), false);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (n.op != OpKind::MaxPool2d || attrBool(n.attrs, "window_offsets", false)) continue;
    ValueId idx = n.outputs[1];
    const std::vector<int32_t>& readers = uses.users[idx];
    if (uses.is_output[idx] || readers.empty()) continue;
    bool onlyBackwards = true;
    for (int32_t u : readers) {
      const Node& b = g.nodes[static_cast<size_t>(u)];
      onlyBackwards = onlyBackwards && b.op == OpKind::MaxPool2dBackward && b.inputs[1] == idx && sameWindows(b.attrs, n.attrs);
    }
    if (!onlyBackwards) continue;
    rewrite[k] = true;
    for (int32_t u : readers) rewrite[static_cast<size_t>(u)] = true;
  }
  Graph out = g;
  for (size_t k = 0; k < out.nodes.size(); ++k) {
    if (!rewrite[k]) continue;
    Node& n = out.nodes[k];
    n.attrs["window_offsets"] = true;
    if (n.op == OpKind::MaxPool2d) out.values[n.outputs[1]].type.dtype = windowOffsetDType(n.attrs);
  }
  return out;
}

}  // namespace aotc
