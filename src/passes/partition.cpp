//===- partition.cpp - Joint graph -> forward and backward programs -------===//
//
// Both partitioners choose the set of forward values to save; one routine
// builds the two programs from that choice:
//   forward  = every forward node needed for the user outputs, the forward
//              epilogue and the saved values;
//   backward = the backward nodes, plus the forward nodes it recomputes from
//              saved values (min-cut only), plus the caller's buffers its
//              epilogue writes.
//
// Note [Saving mutated primals]: the forward epilogue overwrites the caller's
// buffer of every input it mutates.  A runtime hands saved tensors from the
// forward to the backward by reference, so saving such a primal as itself
// would make the backward read the *new* value (PyTorch #185876), and so
// would recomputing in the backward from it (#197039).  A saved value that
// shares storage with a primal the forward mutates (the primal itself, or a
// view of it) is therefore a clone taken before the epilogue, tagged
// must_save; recomputation reads that clone.  (The emulate backend, which
// hands buffers over by reference as a GPU runtime does, caught the view
// case; the reference runtime copies values and cannot see it.)
//
// Note [Min-cut rematerialization]: as functorch's
// min_cut_rematerialization_partition.  Every forward value v is an edge
// v_in -> v_out whose capacity is its size in bytes; data edges are infinite;
// the source feeds the primals and every value that must not be recomputed
// (matmul, reductions, custom/extern ops, must_save values); values the
// backward reads feed the sink.  A minimum cut is a cheapest set of values
// to save such that the backward can recompute everything else it needs from
// them with cheap ops (pointwise, views, constants).
//
// Note [Materialized values]: recomputation is free only where the code
// generator fuses it into its consumer.  Two of functorch's rules
// (partitioners.py: is_materialized_backwards, get_node_weight) account for
// the rest, and aotc follows both:
//  - a value some backward op reads from a buffer (a GEMM or convolution
//    operand, a window or gather op: anything that does not take it as an
//    expression, Note [Fusion by inlining]) would be recomputed into a buffer
//    of its own -- a read of its sources and a write per training step, to
//    save memory only.  Such a value is never recomputed: the backward reads
//    the one the forward wrote.  (resnet18: relu(batch_norm(y)), the next
//    convolution's input, was recomputed for its weight gradient; the
//    transformer: every head's contiguous copy and softmax, for the bmm's
//    gradients.)
//  - a value the forward computes into a buffer anyway (an input, a forward
//    output, an operand of a non-fusible forward op) costs one read to save;
//    one the forward would otherwise compute inside a consumer's kernel costs
//    a write and a read: its capacity counts double, so the cut prefers the
//    values that exist anyway.
//===----------------------------------------------------------------------===//
// Boost.Graph's edge iterators trip GCC 12's -Wmaybe-uninitialized when
// inlined here (a false positive in boost/graph/detail/adj_list_edge_iterator).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>
#include <deque>
#include <limits>
#include <set>

#include "aotc/ops/ops.h"
#include "aotc/passes/passes.h"

namespace aotc {

namespace {

bool isForwardValue(const Graph& j, ValueId v) {
  const Value& val = j.values[v];
  if (val.node < 0) {
    const GraphInput* gi = j.inputOf(v);
    return gi && gi->role != InputRole::Tangent;
  }
  return j.nodes[static_cast<size_t>(val.node)].phase == Phase::Forward;
}

/// Forward values the backward reads directly (epilogue destinations are the
/// caller's buffers, not reads).
std::vector<bool> readByBackward(const Graph& j) {
  std::vector<bool> r(j.values.size(), false);
  for (const Node& n : j.nodes)
    if (n.phase == Phase::Backward)
      for (size_t i = n.op == OpKind::EpilogueCopy ? 1 : 0; i < n.inputs.size(); ++i)
        if (isForwardValue(j, n.inputs[i])) r[n.inputs[i]] = true;
  for (const GraphOutput& o : j.outputs)
    if (o.role == OutputRole::Grad && isForwardValue(j, o.value)) r[o.value] = true;
  return r;
}

/// The value whose storage `v` views (v itself if it is no view).
ValueId viewRoot(const Graph& j, ValueId v) {
  while (j.values[v].node >= 0 && isView(j.nodes[static_cast<size_t>(j.values[v].node)].op))
    v = j.nodes[static_cast<size_t>(j.values[v].node)].inputs[0];
  return v;
}

Partition buildPrograms(const Graph& j, const std::vector<bool>& isSaved) {
  std::vector<ValueId> saved;
  for (size_t v = 0; v < j.values.size(); ++v)
    if (isSaved[v]) saved.push_back(static_cast<ValueId>(v));
  std::set<ValueId> fwMutated;
  for (const Node& n : j.nodes)
    if (n.op == OpKind::EpilogueCopy && n.phase == Phase::Forward) fwMutated.insert(n.inputs[0]);

  // The forward has no tangents: a forward node that reads one cannot be
  // placed (libFuzzer finding, fuzz_ir seed 28: an internal check fired in
  // copyNode).  Autodiff marks every node that reads a tangent `#bw`; a
  // hand-written joint graph must too.
  for (const Node& n : j.nodes)
    if (n.phase == Phase::Forward)
      for (ValueId v : n.inputs)
        if (const GraphInput* gi = j.inputOf(v); gi && gi->role == InputRole::Tangent) {
          SourceLoc loc = n.loc;
          if (loc.node.empty() && !n.outputs.empty()) loc.node = j.values[n.outputs[0]].name;
          if (loc.op.empty()) loc.op = opName(n.op);
          throw UserError(loc, "partition: a forward node reads tangent %" + j.values[v].name +
                                   " (nodes that read tangents belong to the backward: mark them #bw)");
        }

  Partition p;
  // ---- forward program
  Graph& F = p.forward;
  F.name = j.name + ".forward";
  std::vector<ValueId> fmap(j.values.size(), kNoValue);
  for (const GraphInput& gi : j.inputs)
    if (gi.role != InputRole::Tangent)
      fmap[gi.value] = F.addInput(j.values[gi.value].name, j.type(gi.value), gi.role, gi.requires_grad);
  std::vector<ValueId> savedF(saved.size(), kNoValue);
  // A saved value that shares storage with a mutated primal (the primal, or
  // a view of it) would be overwritten too: snapshot it.
  auto storageRoot = [&](ValueId v) { return viewRoot(j, v); };
  auto snapshotMutatedPrimals = [&] {
    for (size_t i = 0; i < saved.size(); ++i) {
      if (!fwMutated.count(storageRoot(saved[i]))) continue;
      SourceLoc loc{"", j.values[saved[i]].name, "saved before epilogue"};
      savedF[i] = addOp(F, OpKind::Clone, {fmap[saved[i]]}, {}, loc, Phase::Forward, kMustSave);
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
  const std::vector<ValueId> savedInF = F.valuesNamed(p.saved);
  for (size_t i = 0; i < saved.size(); ++i) bmap[saved[i]] = B.addInput(p.saved[i], F.type(savedInF[i]), InputRole::Saved, false);
  for (const GraphInput& gi : j.inputs)
    if (gi.role == InputRole::Tangent)
      bmap[gi.value] = B.addInput(j.values[gi.value].name, j.type(gi.value), gi.role, false);
  // Inputs the backward epilogue writes: the caller's buffers, by name.
  for (const Node& n : j.nodes)
    if (n.phase == Phase::Backward && n.op == OpKind::EpilogueCopy && bmap[n.inputs[0]] == kNoValue) {
      const GraphInput* gi = j.inputOf(n.inputs[0]);
      bmap[n.inputs[0]] = B.addInput(j.values[n.inputs[0]].name, j.type(n.inputs[0]), gi->role, gi->requires_grad);
    }
  // Forward nodes the backward recomputes: those it reaches from its reads
  // without passing a saved value.
  std::vector<bool> recompute(j.nodes.size(), false);
  std::deque<ValueId> work;
  std::vector<bool> reads = readByBackward(j);
  for (size_t v = 0; v < reads.size(); ++v)
    if (reads[v] && !isSaved[v]) work.push_back(static_cast<ValueId>(v));
  while (!work.empty()) {
    ValueId v = work.front();
    work.pop_front();
    int32_t d = j.values[v].node;
    AOTC_CHECK(d >= 0, "the backward needs %", j.values[v].name, ", a primal that was not saved");
    if (recompute[static_cast<size_t>(d)]) continue;
    recompute[static_cast<size_t>(d)] = true;
    for (ValueId u : j.nodes[static_cast<size_t>(d)].inputs)
      if (!isSaved[u]) work.push_back(u);
  }
  for (size_t k = 0; k < j.nodes.size(); ++k)
    if (recompute[k] || j.nodes[k].phase == Phase::Backward) B.copyNode(j, j.nodes[k], bmap);
  for (const GraphOutput& o : j.outputs) {
    if (o.role != OutputRole::Grad) continue;
    GraphOutput r = o;
    r.value = bmap[o.value];
    B.outputs.push_back(std::move(r));
  }
  B = dce(B);
  return p;
}

/// Whether `reader` takes its operand `v` as an expression the code
/// generator can compute in the reader's own kernel (Note [Fusion by
/// inlining]: a pointwise op of v's shape, a reduction of v, an epilogue
/// copy or scatter of it); otherwise v must be in a buffer (a GEMM or
/// convolution operand, a window or gather op's, a per-channel value a
/// larger pointwise op broadcasts).  Views are followed by the caller.
bool fusesOperand(const Graph& j, const Node& reader, ValueId v) {
  const Ints& vs = j.type(v).sizes;
  switch (opInfo(reader.op).category) {
    case OpCategory::Pointwise: return j.type(reader.outputs[0]).sizes == vs;
    case OpCategory::Reduction: return reader.inputs[0] == v;
    case OpCategory::Epilogue: return reader.inputs.size() > 1 && reader.inputs[1] == v;
    case OpCategory::Scatter: case OpCategory::View: return true;
    default: return false;
  }
}

/// Note [Materialized values]: per value, whether a node of `phase` reads it
/// (directly or through views) from a buffer.  Forward outputs count as
/// materialized in the forward.
std::vector<bool> materializedIn(const Graph& j, const UseInfo& uses, Phase phase) {
  std::vector<bool> m(j.values.size(), false);
  if (phase == Phase::Forward) {
    for (const GraphOutput& o : j.outputs)
      if (o.role != OutputRole::Grad) m[o.value] = true;
    for (const GraphInput& gi : j.inputs) m[gi.value] = true;
  }
  // Views are visited before the values they view are decided: walk values
  // from the last down, so a view's flag is final when its source reads it.
  for (size_t v = j.values.size(); v-- > 0;) {
    // A 0-dim constant is a literal in every kernel that reads it.
    int32_t d = j.values[v].node;
    if (d >= 0 && j.nodes[static_cast<size_t>(d)].op == OpKind::Constant) continue;
    for (int32_t user : uses.users[v]) {
      const Node& n = j.nodes[static_cast<size_t>(user)];
      // A view passes on its readers' needs whatever its phase (a forward
      // view the backward's GEMM reads through).
      if (isView(n.op)) {
        for (ValueId w : n.outputs) m[v] = m[v] || m[w];
      } else if (n.phase == phase && !fusesOperand(j, n, static_cast<ValueId>(v))) {
        m[v] = true;
      }
    }
  }
  return m;
}

/// Ops the backward may recompute instead of saving their result.
bool recomputable(const Node& n) {
  if (n.tags & kMustSave) return false;
  switch (opInfo(n.op).category) {
    case OpCategory::Pointwise: case OpCategory::View: case OpCategory::Creation: case OpCategory::Scatter:
      return true;
    default:
      return false;  // reductions, matmul, custom, epilogue
  }
}

}  // namespace

Partition partitionDefault(const Graph& j) { return buildPrograms(j, readByBackward(j)); }

Partition partitionMinCut(const Graph& j) {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using G = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS,
      boost::property<boost::vertex_index_t, long,
                      boost::property<boost::vertex_color_t, boost::default_color_type,
                                      boost::property<boost::vertex_distance_t, long,
                                                      boost::property<boost::vertex_predecessor_t, Traits::edge_descriptor>>>>,
      boost::property<boost::edge_capacity_t, double,
                      boost::property<boost::edge_residual_capacity_t, double,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const double inf = std::numeric_limits<double>::infinity();
  const size_t nv = j.values.size();
  // Vertices: 2 per value (in, out), then source and sink.
  G g(2 * nv + 2);
  const long source = static_cast<long>(2 * nv), sink = source + 1;
  auto cap = boost::get(boost::edge_capacity, g);
  auto rev = boost::get(boost::edge_reverse, g);
  auto res = boost::get(boost::edge_residual_capacity, g);
  auto addEdge = [&](long u, long v, double c) {
    auto e = boost::add_edge(static_cast<size_t>(u), static_cast<size_t>(v), g).first;
    auto r = boost::add_edge(static_cast<size_t>(v), static_cast<size_t>(u), g).first;
    cap[e] = c;
    cap[r] = 0;
    rev[e] = r;
    rev[r] = e;
  };
  auto in = [](size_t v) { return static_cast<long>(2 * v); };
  auto out = [](size_t v) { return static_cast<long>(2 * v + 1); };

  std::vector<bool> reads = readByBackward(j);
  std::set<ValueId> fwMutated;
  for (const Node& n : j.nodes)
    if (n.op == OpKind::EpilogueCopy && n.phase == Phase::Forward) fwMutated.insert(n.inputs[0]);
  std::vector<bool> fw(nv, false);
  for (size_t v = 0; v < nv; ++v) fw[v] = isForwardValue(j, static_cast<ValueId>(v));
  const UseInfo uses = UseInfo::compute(j);
  const std::vector<bool> inForward = materializedIn(j, uses, Phase::Forward),
                          inBackward = materializedIn(j, uses, Phase::Backward);
  for (size_t v = 0; v < nv; ++v) {
    if (!fw[v]) continue;
    const TensorType& t = j.type(static_cast<ValueId>(v));
    double bytes = static_cast<double>(std::max<int64_t>(t.numel(), 1) * dtypeSize(t.dtype));
    int32_t d = j.values[v].node;
    bool isViewValue = d >= 0 && isView(j.nodes[static_cast<size_t>(d)].op);
    // Note [Materialized values]: in traffic, saving a value the forward
    // writes anyway costs the backward's read; one it would not write, a
    // write and a read; a primal the epilogue overwrites, a clone's read and
    // write and the backward's read.
    if (fwMutated.count(viewRoot(j, static_cast<ValueId>(v)))) bytes *= 3;
    else if (!inForward[v] && !isViewValue) bytes *= 2;
    addEdge(in(v), out(v), bytes);
    if (d < 0 || !recomputable(j.nodes[static_cast<size_t>(d)]) || (inBackward[v] && !isViewValue)) addEdge(source, in(v), inf);
    if (reads[v]) addEdge(out(v), sink, inf);
  }
  for (const Node& n : j.nodes) {
    if (n.phase != Phase::Forward || n.op == OpKind::EpilogueCopy) continue;
    for (ValueId u : n.inputs)
      for (ValueId w : n.outputs) addEdge(out(static_cast<size_t>(u)), in(static_cast<size_t>(w)), inf);
  }
  boost::boykov_kolmogorov_max_flow(g, static_cast<size_t>(source), static_cast<size_t>(sink));
  // The source side of the minimum cut: reachable through unsaturated edges.
  std::vector<bool> S(boost::num_vertices(g), false);
  std::deque<size_t> work{static_cast<size_t>(source)};
  S[static_cast<size_t>(source)] = true;
  while (!work.empty()) {
    size_t u = work.front();
    work.pop_front();
    for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) {
      size_t v = boost::target(*e, g);
      if (!S[v] && res[*e] > 1e-9) {
        S[v] = true;
        work.push_back(v);
      }
    }
  }
  std::vector<bool> isSaved(nv, false);
  for (size_t v = 0; v < nv; ++v)
    if (fw[v] && S[static_cast<size_t>(in(v))] && !S[static_cast<size_t>(out(v))]) isSaved[v] = true;
  return buildPrograms(j, isSaved);
}

}  // namespace aotc
