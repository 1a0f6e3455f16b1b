//===- fusion.cpp - The fusion plan (codegen stage 1) ----------------------===//
//
// Decides, for each node of a program, whether it is computed inside its
// consumer's kernel, by a row group's kernel, by a GEMM's bias epilogue, or
// by a kernel or extern call of its own.  Reads types and uses only; writes
// no text.  Note [Codegen stages] in lowering.h.
//===----------------------------------------------------------------------===//
#include "aotc/codegen/fusion.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "aotc/ops/ops.h"
#include "aotc/ops/reductions.h"
#include "aotc/ops/rules.h"

namespace aotc {

bool isScatterExpr(OpKind k) {
  const OpRule* r = opRule(k);
  return r && r->cuda == aotc::Lowering::Expression;
}

/// Note [Reductions]: every reduction the kernels compute, with its
/// identity (floating and integer) and how two partial results combine
/// (empty: +), is its row (Note [Reduction rows]).  Inlining, row groups
/// and the reduction kernel all read it.
bool isReduction(OpKind k) { return reductionRule(k) != nullptr; }

/// Note [Region epilogues]: an input mutated only through one slice or
/// select (x[1:3].add_(...)) reaches its epilogue as
/// epilogue_copy(x, slice_scatter(x, v)).  The copy then writes v into that
/// region of the caller's buffer, and the full-size scatter is not computed
/// when nothing else reads it.
int32_t regionSource(const Graph& g, const Node& copy) {
  int32_t d = g.values[copy.inputs[1]].node;
  if (d < 0) return -1;
  const Node& sc = g.nodes[static_cast<size_t>(d)];
  if ((sc.op == OpKind::SliceScatter || sc.op == OpKind::SelectScatter) && sc.inputs[0] == copy.inputs[0]) return d;
  return -1;
}

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Threads per block of a reduction kernel that has them stride or tree.
constexpr int64_t kReduceBlock = 256;

}  // namespace

bool columnWise(const TensorType& in, const Ints& dims) {
  int64_t inner = in.rank() - 1;
  while (inner >= 0 && in.sizes[static_cast<size_t>(inner)] == 1) --inner;
  return inner >= 0 && !std::binary_search(dims.begin(), dims.end(), inner) && in.strides[static_cast<size_t>(inner)] == 1;
}

/// Reductions over at least this many elements get one block per output
/// (threads stride over the reduced elements, then a shared-memory tree);
/// smaller ones one thread per output.  Note [Column reductions]: when the
/// innermost dim is kept (a bias gradient's sum over rows), neighbouring
/// threads of a block would read elements a row apart; one thread per
/// output instead reads neighbouring columns at each step: coalesced.  (The
/// legacy choice: a large column reduction is scheduled as Column, Note
/// [Reduction schedules].)
bool blockPerOutput(const TensorType& in, const Ints& dims, int64_t nred, int64_t outputs) {
  constexpr int64_t kBlockReduceMin = 256, kColumnOutputsMin = 32;
  if (nred < kBlockReduceMin) return false;
  return !(columnWise(in, dims) && outputs >= kColumnOutputsMin);
}

ReductionSchedule scheduleReduction(int64_t nred, int64_t outputs, bool column, int64_t bytes, const LaunchShapeRule& rule) {
  ReductionSchedule s;
  if (rule.sms <= 0 || bytes <= rule.minBytes || nred < 1 || outputs < 1) return s;
  // Short rows and outputs enough to give every SM blocks of 64: a thread each.
  if (nred < 64 && ceilDiv(outputs, 64) >= rule.sms) {
    s.kind = ReductionSchedule::Thread;
    s.block = kReduceBlock;
    while (s.block > 64 && ceilDiv(outputs, s.block) < rule.sms) s.block /= 2;
    s.blocks = ceilDiv(outputs, s.block);
    s.serial = nred;
    s.chunk = nred;
    return s;
  }
  int64_t lanes = 0, blocks0 = 0;  // threads sharing one output's chunk; blocks before the split
  if (column && outputs >= 32) {
    s.kind = ReductionSchedule::Column;
    s.block = kReduceBlock;
    lanes = kReduceBlock / 32;
    blocks0 = ceilDiv(outputs, 32);
  } else {
    s.kind = ReductionSchedule::Row;
    s.block = 32;
    while (s.block < nred && s.block < kReduceBlock) s.block *= 2;
    // Few short rows (a large launch over many operands): smaller blocks,
    // so that the chunks of one element per thread still fill the machine.
    while (s.block > 32 && outputs * ceilDiv(nred, s.block) < rule.sms) s.block /= 2;
    lanes = s.block;
    blocks0 = outputs;
  }
  // Two waves of blocks when the outputs alone give fewer than one; chunks
  // short enough for the serial bound; every thread at least one element.
  int64_t split = blocks0 < rule.sms ? ceilDiv(2 * rule.sms, blocks0) : 1;
  split = std::max(split, ceilDiv(nred, lanes * rule.maxSerial));
  split = std::max<int64_t>(1, std::min(split, ceilDiv(nred, lanes)));
  s.chunk = ceilDiv(nred, split);
  s.split = ceilDiv(nred, s.chunk);  // no chunk without work
  s.blocks = blocks0 * s.split;
  s.serial = ceilDiv(s.chunk, lanes);
  return s;
}

// Note [Row kernels]: the launch of a row group's kernel (Note [Row groups]).
//  - Thread (rows shorter than a warp, and column sums, whose elements are a
//    row apart: neighbouring threads then read neighbouring columns):
//    one thread per row, serial, in order, no barriers.
//  - Warp (rows of 32 to 1024 elements: softmax over a sequence, LayerNorm
//    over a hidden size): one warp per row, 8 rows to a block of 256 (fewer
//    when a large launch would leave SMs without a block).  Lane l visits
//    elements l, l + 32, ...; the lanes' partial results combine through
//    __shfl_xor_sync, a butterfly of fixed offsets 16, 8, .., 1 (after it
//    every lane holds the row's result; max and min take lane 0's, since
//    aotc_max(+0, -0) and aotc_max(-0, +0) differ), no shared memory and no
//    barrier.
//  - Block (longer rows): one block per row; each warp's butterfly, then one
//    partial per warp in shared memory, which every warp reads and combines
//    by the same butterfly, so every thread holds the result without a
//    second trip through shared memory.
// Note [Row cache]: a Warp or Block kernel whose threads visit at most 16
// elements of a row keeps them in registers: the first pass that reads a
// row-varying operand (one whose elements differ between rows: x, not a
// LayerNorm's weight) stores what each thread loads in an array indexed by
// a fully unrolled loop counter, and later passes read the array instead of
// memory -- softmax and LayerNorm read their row once instead of three
// times.  A dynamic-shape kernel (row lengths known at run time) re-reads.
// Every order of combination is fixed by the text: the same bits on every
// run, and the emulator runs the shuffles exactly (emulate_shim.h).
RowGroupShape rowGroupShape(const Ints& shape, const Ints& dims, int64_t rows, int64_t nred, int passes, bool large,
                            const LaunchShapeRule& rule, bool cacheable) {
  constexpr int64_t kWarp = 32, kWarpRowMax = 1024, kRowCache = 16;
  RowGroupShape r;
  const bool column = columnWise(TensorType::contiguous(DType::F32, shape), dims) && rows >= 32;
  if (column || nred < kWarp) {
    r.kind = RowGroupShape::Thread;
    r.perThread = true;
    r.block = kReduceBlock;
    // Enough blocks for the machine (Note [Launch shape]); small ones keep theirs.
    if (large && rule.sms > 0)
      while (r.block > 64 && ceilDiv(rows, r.block) < rule.sms) r.block /= 2;
    r.blocks = ceilDiv(rows, r.block);
    r.serial = passes * nred;
    return r;
  }
  int64_t per = 0;
  if (nred <= kWarpRowMax) {
    r.kind = RowGroupShape::Warp;
    r.rowsPerBlock = kReduceBlock / kWarp;
    if (large && rule.sms > 0)
      while (r.rowsPerBlock > 1 && ceilDiv(rows, r.rowsPerBlock) < rule.sms) r.rowsPerBlock /= 2;
    r.block = kWarp * r.rowsPerBlock;
    r.blocks = ceilDiv(rows, r.rowsPerBlock);
    per = ceilDiv(nred, kWarp);
  } else {
    r.kind = RowGroupShape::Block;
    r.block = kReduceBlock;
    r.blocks = rows;
    per = ceilDiv(nred, r.block);
  }
  r.serial = passes * per;
  r.cache = cacheable && per <= kRowCache ? per : 0;
  return r;
}

namespace {

// Note [Fusion by inlining]: a pointwise value with exactly one consumer,
// a pointwise kernel or a reduction of the same shape, that no program
// output needs, is computed inside its consumer's kernel instead of
// through a buffer; 0-dim constants are inlined everywhere as literals.
// A kernel evaluates its expression tree per output element (reductions:
// per reduced element), loading each leaf buffer with its own strides,
// broadcast to the tree's shape.  Values with several consumers are
// materialized once rather than recomputed.
struct Planner {
  const Graph& g;
  const LaunchShapeRule rule;
  FusionPlan plan;
  std::vector<bool>& inlined = plan.inlined;

  Planner(const Graph& graph, const LaunchShapeRule& r) : g(graph), rule(r) {}

  /// Bytes of the buffers a kernel reads to compute `v` (through inlined
  /// nodes; a row group's own values are computed, not read): its leaves,
  /// as the kernel text will have them (Note [Launch shape]).
  int64_t leafBytes(ValueId v, const RowGroup* G, std::set<ValueId>& seen) const {
    if (!seen.insert(v).second) return 0;
    if (G && (G->rowLevel.count(v) || G->full.count(v))) return 0;
    int32_t d = g.values[v].node;
    if (d >= 0 && inlined[static_cast<size_t>(d)]) {
      const Node& n = g.nodes[static_cast<size_t>(d)];
      if (n.op == OpKind::Constant) return 0;
      int64_t b = 0;
      for (ValueId in : n.inputs) b += leafBytes(in, G, seen);
      return b;
    }
    const TensorType& t = g.type(v);
    return t.numel() * static_cast<int64_t>(dtypeSize(t.dtype));
  }

  /// Note [Reduction schedules]: every reduction with a kernel of its own.
  void planSchedules() {
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const Node& n = g.nodes[k];
      if (!isReduction(n.op) || inlined[k] || plan.groupOf[k] >= 0) continue;
      const TensorType& it = g.type(n.inputs[0]);
      const TensorType& ot = g.type(n.outputs[0]);
      Ints dims = reductionDims(n.attrs, it.rank());
      int64_t nred = 1;
      for (int64_t d : dims) nred *= it.sizes[static_cast<size_t>(d)];
      std::set<ValueId> seen;
      int64_t bytes = leafBytes(n.inputs[0], nullptr, seen) + ot.numel() * static_cast<int64_t>(dtypeSize(ot.dtype));
      ReductionSchedule s = scheduleReduction(nred, ot.numel(), columnWise(it, dims), bytes, rule);
      if (s.kind != ReductionSchedule::Legacy) plan.schedules[static_cast<int32_t>(k)] = s;
    }
  }

  /// Largest expression (in distinct nodes, Note [Expression size]) one
  /// inlined value may stand for: a value inlined into several consumers is
  /// recomputed by each.
  static constexpr int kMaxInlineTree = 24;

  /// Note [GEMM bias epilogue]: add(mm(a, b), bias) — a Linear layer — with
  /// the product used nowhere else and a contiguous bias broadcast over rows
  /// is one cublasLtMatmul with CUBLASLT_EPILOGUE_BIAS: the add writes no
  /// buffer of its own.  Maps the add's node to (mm node, bias value).  The
  /// product may reach the add through one reshape that keeps its rows (a
  /// Linear on a [seq, batch, features] input: mm on the flattened rows,
  /// viewed back, then the bias): the add's value is then the GEMM's buffer
  /// under the view's shape.
  void planBiasEpilogues(const UseInfo& u) {
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const Node& n = g.nodes[k];
      // Only adds that fusion leaves materialized: an inlined add already
      // costs no launch of its own -- unless the relu it is inlined into
      // can be the epilogue's too (Note [GEMM relu epilogue]).
      if (n.op != OpKind::Add || (inlined[k] && reluOver(u, n.outputs[0]) < 0)) continue;
      for (int side = 0; side < 2; ++side) {
        ValueId p = n.inputs[static_cast<size_t>(side)], bias = n.inputs[static_cast<size_t>(1 - side)];
        const ValueId shaped = p;  // the add's operand: the product, or its reshape
        int32_t d = g.values[p].node;
        if (d >= 0 && g.nodes[static_cast<size_t>(d)].op == OpKind::View) {
          // view(mm): contiguous on both sides, the same last dim, the
          // product read by nothing else.
          const Node& vn = g.nodes[static_cast<size_t>(d)];
          ValueId prod = vn.inputs[0];
          const TensorType &vt = g.type(p), &mt = g.type(prod);
          int32_t md = g.values[prod].node;
          if (md < 0 || g.nodes[static_cast<size_t>(md)].op != OpKind::Mm || u.users[prod].size() != 1 ||
              u.is_output[prod] || !vt.isContiguous() || !mt.isContiguous() || vt.offset != mt.offset ||
              vt.rank() < 2 || vt.sizes.back() != mt.sizes.back())
            continue;
          if (u.users[p].size() != 1 || u.is_output[p]) continue;
          p = prod;
          d = md;
        }
        if (d < 0 || g.nodes[static_cast<size_t>(d)].op != OpKind::Mm || plan.gemmBias.count(d)) continue;
        // The bias must be read from a buffer that exists before the GEMM
        // runs: a graph input, a value computed before the GEMM by a step
        // of its own (the bfloat16 cast of a bias under autocast), or a view
        // of one; an inlined value has no buffer of its own.
        const ValueId base = viewBase(bias);
        // Or a value a kernel of its own stores before the GEMM, or (Note
        // [Cast groups]) a stored cast of an input, which its group computes
        // before the GEMM.
        if (int32_t bd = g.values[base].node; bd >= 0) {
          const int32_t c = inputCastOf(base);
          const bool stored = !inlined[static_cast<size_t>(bd)] && bd < d;
          const bool grouped = c >= 0 && c <= d && !inlined[static_cast<size_t>(c)];
          if (!stored && !grouped) continue;
        }
        const TensorType &pt = g.type(p), &bt = g.type(bias), &ot = g.type(n.outputs[0]);
        bool rowBias = (bt.rank() == 1 && bt.sizes[0] == pt.sizes[1]) || (bt.rank() == 2 && bt.sizes[0] == 1 && bt.sizes[1] == pt.sizes[1]);
        if (u.users[p].size() != 1 || u.is_output[p] || !rowBias || bt.strides.back() != 1 || bt.dtype != pt.dtype ||
            ot.sizes != g.type(shaped).sizes || ot.dtype != pt.dtype || !ot.isContiguous())
          continue;
        plan.biasAdds[static_cast<int32_t>(k)] = {d, bias};
        plan.gemmBias[d] = bias;
        inlined[k] = false;
        break;
      }
    }
  }

  /// The relu that reads `y` -- directly, or through one view that keeps it
  /// contiguous -- as its only reader, materialized and no row's, writing a
  /// contiguous result of y's type where y stands; else -1 (Note [GEMM relu
  /// epilogue]).
  int32_t reluOver(const UseInfo& u, ValueId y) const {
    if (u.is_output[y] || u.users[y].size() != 1) return -1;
    int32_t r = u.users[y][0];
    ValueId x = y;
    const TensorType& yt = g.type(y);
    if (g.nodes[static_cast<size_t>(r)].op == OpKind::View) {
      x = g.nodes[static_cast<size_t>(r)].outputs[0];
      if (u.is_output[x] || u.users[x].size() != 1 || !g.type(x).isContiguous() || g.type(x).offset != yt.offset) return -1;
      r = u.users[x][0];
    }
    const Node& rn = g.nodes[static_cast<size_t>(r)];
    if (rn.op != OpKind::Relu || inlined[static_cast<size_t>(r)] || rn.inputs[0] != x) return -1;
    const TensorType& rt = g.type(rn.outputs[0]);
    if (!yt.isContiguous() || !rt.isContiguous() || rt.offset != yt.offset || rt.dtype != yt.dtype || rt.numel() != yt.numel()) return -1;
    return r;
  }

  /// Note [GEMM relu epilogue]: relu(add(mm(a, b), bias)) -- a Linear and
  /// its activation -- where the bias add is the GEMM's epilogue (Note [GEMM
  /// bias epilogue]) and the relu its only reader is one cublasLtMatmul with
  /// CUBLASLT_EPILOGUE_RELU_BIAS: relu(A B + bias) is written to the GEMM's
  /// buffer, which the relu's value then is, and the pre-activation is
  /// never stored.  Nothing else may read it: the backward's mask comes from
  /// the relu's result where x is a GEMM's output (Note [Relu's mask from
  /// its input], ops/pointwise.cpp), so the pre-activation is not saved.
  /// The epilogue computes relu as aotc_relu does (x < 0 ? 0 : x) on the
  /// float32 sum before it is rounded to the output type; rounding keeps the
  /// sign, so the bits are the kernel's.  (A NaN pre-activation: aotc's relu
  /// keeps it; cuBLASLt's epilogue is documented only as max(x, 0), so on a
  /// device it may come out 0 -- the emulate device keeps aotc's rule.)
  void planReluEpilogues(const UseInfo& u) {
    for (const auto& [add, mmBias] : plan.biasAdds) {
      int32_t r = reluOver(u, g.nodes[static_cast<size_t>(add)].outputs[0]);
      if (r < 0) continue;
      plan.reluEpilogues[r] = mmBias.first;
      plan.gemmRelu.insert(mmBias.first);
    }
  }

  void run() {
    UseInfo u = UseInfo::compute(g);
    inlined.assign(g.nodes.size(), false);
    for (const Node& n : g.nodes) {
      if (n.op != OpKind::EpilogueCopy) continue;
      int32_t d = regionSource(g, n);
      if (d >= 0 && u.users[g.nodes[static_cast<size_t>(d)].outputs[0]].size() == 1 &&
          !u.is_output[g.nodes[static_cast<size_t>(d)].outputs[0]])
        inlined[static_cast<size_t>(d)] = true;  // its only reader copies just the region
    }
    // Note [Expression size]: a kernel evaluates each node of its
    // expression once, however many of its nodes read it (the expression is
    // a DAG, emitted in node order), so an inlined value's size is the
    // number of distinct non-literal nodes it stands for.  (Counting a tree
    // counted a shared subexpression once per path: a ReLU6's gradient reads
    // the normalized value through both of its comparisons, and was
    // computed into a float32 buffer of its own instead.)
    std::vector<std::vector<int32_t>> exprNodes(g.nodes.size());
    auto consumesAsExpression = [&](int32_t user, ValueId v) {
      const Node& c = g.nodes[static_cast<size_t>(user)];
      const Ints& vs = g.type(v).sizes;
      if (c.op == OpKind::EpilogueCopy) return c.inputs[1] == v && g.type(c.inputs[0]).sizes == vs;
      if (opInfo(c.op).category == OpCategory::Pointwise) return g.type(c.outputs[0]).sizes == vs;
      if (isScatterExpr(c.op)) return c.inputs[1] == v || g.type(c.outputs[0]).sizes == vs;  // the source, or the base
      if (isReduction(c.op)) return c.inputs[0] == v;
      return false;
    };
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const Node& n = g.nodes[k];
      std::vector<int32_t>& expr = exprNodes[k];
      expr = {static_cast<int32_t>(k)};
      for (ValueId in : n.inputs) {
        int32_t d = g.values[in].node;
        if (d < 0 || !inlined[static_cast<size_t>(d)] || expr.size() > static_cast<size_t>(kMaxInlineTree)) continue;
        std::vector<int32_t> merged;
        std::set_union(expr.begin(), expr.end(), exprNodes[static_cast<size_t>(d)].begin(), exprNodes[static_cast<size_t>(d)].end(),
                       std::back_inserter(merged));
        expr = std::move(merged);
      }
      if (n.outputs.size() != 1 || u.is_output[n.outputs[0]]) continue;
      ValueId v = n.outputs[0];
      const auto& users = u.users[v];
      if (users.empty()) continue;
      if (n.op == OpKind::Constant) {
        // A literal: free in any consumer that broadcasts it.
        bool all = true;
        for (int32_t user : users) {
          const Node& c = g.nodes[static_cast<size_t>(user)];
          OpCategory cat = opInfo(c.op).category;
          all = all && (cat == OpCategory::Pointwise || (c.op == OpKind::EpilogueCopy && c.inputs[1] == v) ||
                        (isScatterExpr(c.op) && c.inputs[0] == v && g.type(c.outputs[0]).sizes == g.type(v).sizes) ||
                        (isReduction(c.op) && c.inputs[0] == v));
        }
        inlined[k] = all;
        expr.clear();
        continue;
      }
      // Note [Cast groups]: a value read by nothing but a narrowing cast
      // (autocast's bf16 copy of a BatchNorm gradient for the convolution's
      // backward) is computed by the cast's kernel whatever its size: the
      // kernel it would have had, storing the narrower dtype, nothing
      // recomputed.  (A widening cast's buffer would be the larger one.)
      const bool castOnly = users.size() == 1 && g.nodes[static_cast<size_t>(users[0])].op == OpKind::Cast &&
                            dtypeSize(g.type(g.nodes[static_cast<size_t>(users[0])].outputs[0]).dtype) <= dtypeSize(g.type(v).dtype);
      if ((opInfo(n.op).category != OpCategory::Pointwise && !isScatterExpr(n.op)) ||
          (expr.size() > static_cast<size_t>(kMaxInlineTree) && !castOnly))
        continue;
      bool all = true;
      for (int32_t user : users) all = all && consumesAsExpression(user, v);
      inlined[k] = all;
    }
    materializeBeforeEpilogues();
    plan.castGroupOf.assign(g.nodes.size(), -1);
    planBiasEpilogues(u);
    planReluEpilogues(u);
    planGemmOutputs(g, u, plan);
    planInputCasts();
    planRowGroups(u);
    planSchedules();
    planMoments();
    planSiblings();
    planComputedCasts(u);
    planStoredInputs(u);
  }

  // ------------------------------------------------------------ stored inputs
  // Note [Reductions that store their input]: a Linear's bias gradient is
  // the column sum of the gradient g reaching the Linear's output, and g is
  // stored anyway for the two GEMMs that read it (the data and weight
  // gradients).  When g is a pointwise kernel of its own (relu's masked
  // gradient where(out > 0, go, 0); the in-projection's gradient, the sum of
  // the q, k and v slices), its kernel wrote g and the reduction's kernel
  // read it back: the transformer's backward moved 16.8 MB (linear1) and
  // 12.6 MB (in_proj) per layer twice.  Instead the scheduled Row or Column
  // reduction evaluates g's expression (as if inlined) at each element it
  // visits, adds it to its sums and stores it into g's buffer: the two
  // schedules visit every element exactly once (chunks split the reduced
  // elements, lanes and rows split the chunks), so every element of g is
  // written once, by the same expression its own kernel evaluated -- the
  // same bits in the buffer and in the sums.  Taken when:
  //  - the reduction (not a sibling, not a Welford pair) reads g itself or
  //    a view of it that keeps the element order (both contiguous, at
  //    offset 0: the reduction's linear index is g's);
  //  - g's node is a materialized pointwise node (no scatter) computed by a
  //    kernel of its own: not inlined, in no row group or cast group, no
  //    GEMM's epilogue or operand rewrite, not a program output;
  //  - every other reader of g (and of the views) stands after the
  //    reduction, and no cast group reads it: nothing reads g's buffer
  //    before the reduction writes it;
  //  - no epilogue copy stands between g's node and the reduction: g's
  //    operands hold the values they held where g stood.
  // g's node then launches nothing (its buffer is declared where it stands,
  // for the views); the reduction's kernel takes it as one more output.
  // Dynamic-shape artifacts keep the two kernels (the emitter ignores it).
  /// Whether node r, a reader of a value, reads it only after node k's
  /// launch: r's work launches after k (a row group's member at its seed, a
  /// sibling or Welford partner at the first, a GEMM's epilogue at the GEMM),
  /// it is in no cast group, and an inlined r or a view is read only after k
  /// in turn.
  bool readsAfter(const UseInfo& u, int32_t r, int32_t k, int depth) const {
    const size_t rs = static_cast<size_t>(r);
    if (r <= k || plan.castGroupOf[rs] >= 0 || depth > kMaxInlineTree) return false;
    if (plan.groupOf[rs] >= 0 && plan.groups[static_cast<size_t>(plan.groupOf[rs])].seed <= k) return false;
    for (const auto& [a, more] : plan.siblings)
      if (a <= k && std::find(more.begin(), more.end(), r) != more.end()) return false;
    for (const auto& [a, b] : plan.moments)
      if (b == r && a <= k) return false;
    if (auto b = plan.biasAdds.find(r); b != plan.biasAdds.end() && b->second.first <= k) return false;
    if (auto e = plan.reluEpilogues.find(r); e != plan.reluEpilogues.end() && e->second <= k) return false;
    if (auto e = plan.scaleOf.find(r); e != plan.scaleOf.end() && e->second <= k) return false;
    if (auto e = plan.writtenByGemm.find(r); e != plan.writtenByGemm.end() && e->second <= k) return false;
    const Node& n = g.nodes[rs];
    if (inlined[rs] || isView(n.op)) {
      for (ValueId o : n.outputs) {
        if (u.is_output[o]) return false;
        for (int32_t r2 : u.users[o])
          if (!readsAfter(u, r2, k, depth + 1)) return false;
      }
    }
    return true;
  }

  void planStoredInputs(const UseInfo& u) {
    std::set<int32_t> taken;
    for (const auto& [a, b] : plan.moments) taken.insert({a, b});
    for (const auto& [a, more] : plan.siblings) {
      taken.insert(a);
      taken.insert(more.begin(), more.end());
    }
    std::set<int32_t> producers;
    for (const auto& [k, s] : plan.schedules) {
      if ((s.kind != ReductionSchedule::Row && s.kind != ReductionSchedule::Column) || taken.count(k)) continue;
      const Node& rn = g.nodes[static_cast<size_t>(k)];
      if (rn.inputs.size() != 1 || !isFloating(g.type(rn.outputs[0]).dtype)) continue;
      ValueId v = rn.inputs[0];
      const TensorType& it = g.type(v);
      if (!it.isContiguous() || it.offset != 0) continue;
      std::vector<ValueId> chain{v};  // the reduction's input, then the values it views
      while (g.values[v].node >= 0 && g.nodes[static_cast<size_t>(g.values[v].node)].op == OpKind::View) {
        v = g.nodes[static_cast<size_t>(g.values[v].node)].inputs[0];
        chain.push_back(v);
      }
      const int32_t d = g.values[v].node;
      if (d < 0 || producers.count(d)) continue;
      const Node& pn = g.nodes[static_cast<size_t>(d)];
      const TensorType& pt = g.type(v);
      if (opInfo(pn.op).category != OpCategory::Pointwise || isScatterExpr(pn.op) || pn.outputs.size() != 1 || inlined[static_cast<size_t>(d)] ||
          plan.groupOf[static_cast<size_t>(d)] >= 0 || plan.castGroupOf[static_cast<size_t>(d)] >= 0 || plan.biasAdds.count(d) ||
          plan.reluEpilogues.count(d) || plan.scaleOf.count(d) || plan.writtenByGemm.count(d) || plan.gemmInto.count(d) ||
          !pt.isContiguous() || pt.offset != 0 || pt.numel() != it.numel() || pt.dtype != it.dtype || copyBetween(d, k))
        continue;
      bool ok = true;
      for (size_t i = 0; i < chain.size() && ok; ++i) {
        const ValueId c = chain[i];
        if (u.is_output[c] || !g.type(c).isContiguous() || g.type(c).offset != 0) ok = false;
        for (int32_t r : u.users[c]) {
          const bool onChain = (i == 0 && r == k) || (i > 0 && g.nodes[static_cast<size_t>(r)].outputs.size() == 1 &&
                                                      g.nodes[static_cast<size_t>(r)].outputs[0] == chain[i - 1]);
          if (!onChain && !readsAfter(u, r, k, 0)) ok = false;
        }
      }
      if (!ok) continue;
      plan.storesInput[k] = d;
      producers.insert(d);
    }
  }

  // ------------------------------------------------------------ cast groups
  // Note [Cast groups]: under autocast every parameter a GEMM or convolution
  // reads is cast to bf16 once per step (Note [Autocast pass]), and every
  // weight gradient such a library call produces is cast back to float32:
  // casts that fusion cannot inline (their readers are library calls, or
  // they are program outputs) were each a launch of their own, 16 of the
  // transformer's forward kernels one weight's cast each.  A cast is
  // pointwise and needs no neighbour, so the plan gathers them per (source
  // dtype, destination dtype) into one multi-tensor kernel (the blocks
  // divided among the tensors, each tensor's block offset, sizes and strides
  // written into the text: KernelEmitter::castGroup):
  //  - casts of program inputs (through views: a Linear's t(weight)): every
  //    one at the first of them -- in the forward the parameters' bf16
  //    copies, all at once; the backward reads the copies the forward
  //    saved (Note [Materialized values]: a GEMM operand is never
  //    recomputed), so a parameter is cast once per step.  A cast after an
  //    epilogue copy into its input stays where it is (it reads the new
  //    value).
  //  - casts of computed values (a weight gradient cast back to float32):
  //    each may run anywhere from just after its operand's producer to its
  //    first reader -- the reader's launch, where that is earlier than where
  //    it stands (a row group's member at its seed, a sibling reduction at
  //    the first, an inlined value in its consumer's kernel); views are no
  //    launch (the emitter declares a view of a group's result once the
  //    group has run).  Buffers the plan computes are never written twice,
  //    so an operand holds its value until the group reads it.  The groups
  //    are the fewest points that every such window holds (the earliest
  //    first read among the casts left; every cast whose operand is ready by
  //    then joins): the weight gradients, read only by the caller, run after
  //    the backward's last node, or with a data gradient's cast that must
  //    run earlier.
  // A group of one stays a kernel of its own.  A Linear's bias under
  // autocast is cast(bias), stored (the add broadcasts it, so fusion never
  // inlines it) before the GEMM: Note [GEMM bias epilogue] takes it as it
  // takes a program input, and the add's launch, with its read and write of
  // the product, is gone (resnet18's and mobilenet_v2's classifier, the
  // transformer's feed-forward layers).  A value read by nothing but a
  // narrowing cast is computed by the cast's kernel whatever its expression's
  // size (the inlining rule above): the cast is then no launch of its own
  // either.  With Note [Cast before views] (autocast.cpp), a bf16 training
  // step at bench sizes (sm_90) went from 212 to 167 launches (resnet18; fp32
  // 162), 485 to 378 (mobilenet_v2; 373), 232 to 138 (the transformer; 124),
  // its bytes down 2.6%, 0.0% and 16.6% (testdata/codegen/roofline_figures.txt).
  // Dynamic-shape artifacts launch each member as before (the emitter ignores
  // the groups).

  /// The value `v` is a view of (itself, if not a view): a program input or a node's result.
  ValueId viewBase(ValueId v) const {
    while (g.values[v].node >= 0 && isView(g.nodes[static_cast<size_t>(g.values[v].node)].op))
      v = g.nodes[static_cast<size_t>(g.values[v].node)].inputs[0];
    return v;
  }

  /// The program input `v` views (itself, if an input), or kNoValue.
  ValueId inputRoot(ValueId v) const {
    v = viewBase(v);
    return g.values[v].node < 0 ? v : kNoValue;
  }

  /// The cast of a program input that `v` is (through views), or -1.
  int32_t inputCastOf(ValueId v) const {
    int32_t d = g.values[viewBase(v)].node;
    if (d < 0 || g.nodes[static_cast<size_t>(d)].op != OpKind::Cast) return -1;
    return inputRoot(g.nodes[static_cast<size_t>(d)].inputs[0]) == kNoValue ? -1 : d;
  }

  /// Whether node k is a cast the plan leaves to a kernel of its own.
  bool lonelyCast(size_t k) const {
    const Node& n = g.nodes[k];
    return n.op == OpKind::Cast && n.outputs.size() == 1 && !inlined[k] && (plan.groupOf.empty() || plan.groupOf[k] < 0) &&
           plan.castGroupOf[k] < 0 && g.type(n.inputs[0]).dtype != g.type(n.outputs[0]).dtype;
  }

  /// Drops the groups of one member (and renumbers the rest) from `from` on.
  void dropLoneCasts(size_t from) {
    std::vector<FusionPlan::CastGroup> kept(plan.castGroups.begin(), plan.castGroups.begin() + static_cast<std::ptrdiff_t>(from));
    for (size_t i = from; i < plan.castGroups.size(); ++i) {
      FusionPlan::CastGroup& C = plan.castGroups[i];
      for (int32_t m : C.members) plan.castGroupOf[static_cast<size_t>(m)] = C.members.size() > 1 ? static_cast<int32_t>(kept.size()) : -1;
      if (C.members.size() > 1) kept.push_back(std::move(C));
    }
    plan.castGroups = std::move(kept);
  }

  void planInputCasts() {
    std::map<ValueId, int32_t> firstCopy;  // input -> the first epilogue copy into it
    for (size_t k = 0; k < g.nodes.size(); ++k)
      if (g.nodes[k].op == OpKind::EpilogueCopy) firstCopy.emplace(g.nodes[k].inputs[0], static_cast<int32_t>(k));
    std::map<std::pair<DType, DType>, size_t> byType;
    const size_t from = plan.castGroups.size();
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const Node& n = g.nodes[k];
      if (!lonelyCast(k)) continue;
      ValueId root = inputRoot(n.inputs[0]);
      if (root == kNoValue) continue;
      if (auto c = firstCopy.find(root); c != firstCopy.end() && c->second < static_cast<int32_t>(k)) continue;
      auto [it, fresh] = byType.try_emplace({g.type(n.inputs[0]).dtype, g.type(n.outputs[0]).dtype}, plan.castGroups.size());
      if (fresh) plan.castGroups.push_back({static_cast<int32_t>(k), {}, true});
      plan.castGroups[it->second].members.push_back(static_cast<int32_t>(k));
      plan.castGroupOf[k] = static_cast<int32_t>(it->second);
    }
    dropLoneCasts(from);
  }

  void planComputedCasts(const UseInfo& u) {
    // Where each node's work is launched: a row group's members at its seed,
    // later siblings and Welford partners at the first, a bias add at its
    // GEMM, input casts at their group's; inlined values and views where
    // their earliest reader is (never: only the caller reads them).
    const int32_t end = static_cast<int32_t>(g.nodes.size());
    std::vector<int32_t> at(g.nodes.size());
    for (size_t k = 0; k < g.nodes.size(); ++k) at[k] = static_cast<int32_t>(k);
    for (size_t k = 0; k < g.nodes.size(); ++k)
      if (plan.groupOf[k] >= 0) at[k] = plan.groups[static_cast<size_t>(plan.groupOf[k])].seed;
    for (const auto& [a, more] : plan.siblings)
      for (int32_t m : more) at[static_cast<size_t>(m)] = a;
    for (const auto& [a, b] : plan.moments) at[static_cast<size_t>(b)] = a;
    for (const auto& [add, mb] : plan.biasAdds) at[static_cast<size_t>(add)] = std::min(at[static_cast<size_t>(add)], mb.first);
    for (const FusionPlan::CastGroup& C : plan.castGroups)
      for (int32_t m : C.members) at[static_cast<size_t>(m)] = C.at;
    auto firstRead = [&](ValueId v) {
      int32_t first = end;
      for (int32_t r : u.users[v]) first = std::min(first, at[static_cast<size_t>(r)]);
      return first;
    };
    for (size_t k = g.nodes.size(); k-- > 0;) {
      const Node& n = g.nodes[k];
      if (n.outputs.size() != 1 || plan.groupOf[k] >= 0) continue;
      if (isView(n.op)) at[k] = firstRead(n.outputs[0]);
      else if (inlined[k]) at[k] = std::min(at[k], firstRead(n.outputs[0]));
    }
    struct Window {
      int32_t k, ready, need;  // the cast, and the nodes before which it may launch: [ready, need]
    };
    std::map<std::pair<DType, DType>, std::vector<Window>> byType;
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const Node& n = g.nodes[k];
      if (!lonelyCast(k) || inputRoot(n.inputs[0]) != kNoValue) continue;
      // The operand is a buffer the plan computes (not an inlined
      // expression, not a row group's value it keeps in registers).
      const ValueId base = viewBase(n.inputs[0]);
      const int32_t d = g.values[base].node;
      if (inlined[static_cast<size_t>(d)]) continue;
      if (int32_t gi = plan.groupOf[static_cast<size_t>(d)]; gi >= 0 && !plan.groups[static_cast<size_t>(gi)].materialized.count(base))
        continue;
      byType[{g.type(n.inputs[0]).dtype, g.type(n.outputs[0]).dtype}].push_back({static_cast<int32_t>(k), d + 1, firstRead(n.outputs[0])});
    }
    const size_t from = plan.castGroups.size();
    for (auto& [key, ws] : byType) {
      std::stable_sort(ws.begin(), ws.end(), [](const Window& a, const Window& b) { return a.need < b.need; });
      std::vector<bool> taken(ws.size(), false);
      for (size_t i = 0; i < ws.size(); ++i) {
        if (taken[i]) continue;
        FusionPlan::CastGroup C{ws[i].need, {}, false};
        for (size_t j = i; j < ws.size(); ++j)
          if (!taken[j] && ws[j].ready <= C.at) {
            taken[j] = true;
            C.members.push_back(ws[j].k);
          }
        std::sort(C.members.begin(), C.members.end());
        for (int32_t m : C.members) plan.castGroupOf[static_cast<size_t>(m)] = static_cast<int32_t>(plan.castGroups.size());
        plan.castGroups.push_back(std::move(C));
      }
    }
    dropLoneCasts(from);
  }

  /// Note [Epilogue after reads]: an epilogue copy writes into an input's
  /// buffer where it stands in the node order, and an inlined expression is
  /// re-evaluated in every kernel that reads it: a node after the copy whose
  /// expression reads the input through inlined nodes would read the new
  /// value where the program means the old one (the optimizer's momentum
  /// buffer, read by the parameter's update and written by its own copy,
  /// both expressions of one inlined value).  Such an inlined value is
  /// computed into its own buffer instead, where it stands (before the
  /// copy); a node that reads the input itself after the copy is a pass's
  /// bug, refused here rather than computed wrong.
  void materializeBeforeEpilogues() {
    std::map<ValueId, int32_t> written;  // input -> its first epilogue copy
    for (size_t k = 0; k < g.nodes.size(); ++k)
      if (g.nodes[k].op == OpKind::EpilogueCopy) written.emplace(g.nodes[k].inputs[0], static_cast<int32_t>(k));
    if (written.empty()) return;
    // -1: v's expression does not read `input`; -2: v is `input`; else the
    // inlined node (v's own) whose expression reads it.
    std::function<int32_t(ValueId, ValueId, int)> reads = [&](ValueId v, ValueId input, int depth) -> int32_t {
      if (v == input) return -2;
      int32_t d = g.values[v].node;
      if (d < 0 || !inlined[static_cast<size_t>(d)]) return -1;
      if (depth > 4 * kMaxInlineTree) return d;  // deeper than any expression fusion builds: computed where it stands
      for (ValueId in : g.nodes[static_cast<size_t>(d)].inputs)
        if (reads(in, input, depth + 1) != -1) return d;
      return -1;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t k = 0; k < g.nodes.size(); ++k) {
        if (inlined[k]) continue;  // checked where it is evaluated
        const Node& n = g.nodes[k];
        for (auto [input, at] : written) {
          if (static_cast<int32_t>(k) <= at) continue;
          for (size_t i = n.op == OpKind::EpilogueCopy ? 1 : 0; i < n.inputs.size(); ++i) {
            int32_t r = reads(n.inputs[i], input, 0);
            AOTC_CHECK(r != -2, "node ", k, " (", opInfo(n.op).name, ") reads input '", g.values[input].name,
                       "' after the epilogue copy into it (node ", at, "): Note [Epilogue after reads]");
            if (r >= 0) {
              inlined[static_cast<size_t>(r)] = false;
              changed = true;
            }
          }
        }
      }
    }
  }

  /// Whether every buffer the expression of `v` reads (through inlined
  /// nodes) is computed before node `at` (or is a program input).
  /// Whether an epilogue copy (a write into an input's buffer) stands
  /// between nodes a and b: what b reads may then differ at a.
  bool copyBetween(int32_t a, int32_t b) const {
    for (int32_t k = a + 1; k < b; ++k)
      if (g.nodes[static_cast<size_t>(k)].op == OpKind::EpilogueCopy) return true;
    return false;
  }

  bool operandsBefore(ValueId v, int32_t at, int depth = 0) const {
    int32_t d = g.values[v].node;
    if (d < 0) return true;
    if (!inlined[static_cast<size_t>(d)]) return d < at;
    const Node& n = g.nodes[static_cast<size_t>(d)];
    if (n.op == OpKind::Constant) return true;
    if (depth > kMaxInlineTree || isScatterExpr(n.op)) return false;
    for (ValueId in : n.inputs)
      if (!operandsBefore(in, at, depth + 1)) return false;
    return true;
  }

  /// Note [Sibling reductions]: each scheduled Row or Column reduction not yet taken
  /// gathers the later ones (within the row-group window) of the same input
  /// shape, dims, output type and schedule whose operands exist at it.
  /// Each result is computed as its own kernel computed it -- the same
  /// threads, chunks and trees -- so the bits do not change; what changes is
  /// that the operands they share are read once.
  void planSiblings() {
    constexpr size_t kMaxSiblings = 8;
    std::set<int32_t> taken;
    for (const auto& [a, b] : plan.moments) taken.insert({a, b});
    for (const auto& [k, s] : plan.schedules) {
      if ((s.kind != ReductionSchedule::Row && s.kind != ReductionSchedule::Column) || taken.count(k)) continue;
      const Node& an = g.nodes[static_cast<size_t>(k)];
      const TensorType& it = g.type(an.inputs[0]);
      const TensorType& ot = g.type(an.outputs[0]);
      if (!isFloating(ot.dtype)) continue;
      const Ints dims = reductionDims(an.attrs, it.rank());
      std::vector<int32_t> more;
      for (auto j = plan.schedules.upper_bound(k); j != plan.schedules.end() && more.size() + 1 < kMaxSiblings; ++j) {
        if (static_cast<size_t>(j->first - k) > kRowGroupWindow || copyBetween(k, j->first)) break;
        const Node& bn = g.nodes[static_cast<size_t>(j->first)];
        if (taken.count(j->first) || j->second != s || g.type(bn.inputs[0]).sizes != it.sizes || g.type(bn.outputs[0]) != ot ||
            reductionDims(bn.attrs, it.rank()) != dims || !operandsBefore(bn.inputs[0], k))
          continue;
        more.push_back(j->first);
      }
      if (more.empty()) continue;
      taken.insert(k);
      for (int32_t m : more) taken.insert(m);
      plan.siblings[k] = std::move(more);
    }
  }

  // ------------------------------------------------------------ moments
  /// The inlined node that computes `v`, or nullptr.
  const Node* inlinedNode(ValueId v) const {
    int32_t d = g.values[v].node;
    return d >= 0 && inlined[static_cast<size_t>(d)] ? &g.nodes[static_cast<size_t>(d)] : nullptr;
  }

  /// Whether `s` is sub(x, view(a)) with the view a's keepdim shape:
  /// x minus the mean of its own row, at every element.
  /// `v` with the detaches it is made of looked through (Note [Detached centre]:
  /// a variance centres x on a detached mean, the same value).
  ValueId undetached(ValueId v) const {
    for (int32_t d = g.values[v].node; d >= 0 && g.nodes[static_cast<size_t>(d)].op == OpKind::Detach; d = g.values[v].node)
      v = g.nodes[static_cast<size_t>(d)].inputs[0];
    return v;
  }

  bool deviation(ValueId s, ValueId x, ValueId a, const Ints& keptSizes) const {
    const Node* n = inlinedNode(s);
    if (!n || n->op != OpKind::Sub || n->inputs.size() != 2 || n->inputs[0] != x) return false;
    const TensorType& at = g.type(a);
    const ValueId m = undetached(n->inputs[1]);
    if (m == a) return at.sizes == keptSizes && at.isContiguous() && at.offset == 0;  // a keepdim mean
    int32_t d = g.values[m].node;
    if (d < 0) return false;
    const Node& view = g.nodes[static_cast<size_t>(d)];
    const TensorType& vt = g.type(view.outputs[0]);
    return view.op == OpKind::View && undetached(view.inputs[0]) == a && vt.sizes == keptSizes && vt.isContiguous() && vt.offset == 0 &&
           g.type(a).isContiguous() && g.type(a).offset == 0;
  }

  /// Note [Welford moments]: pairs each scheduled Row mean A = mean(x) with
  /// a later B = mean(mul(s, s')) over the same dims, s and s' deviations
  /// x - view(A), when B has the same schedule and reads nothing else.
  /// Floating x of f32 (f16/bf16 accumulate in f32) or f64.
  void planMoments() {
    std::map<ValueId, std::vector<int32_t>> meansOf;  // x -> scheduled Row means of x
    for (const auto& [k, s] : plan.schedules) {
      const Node& n = g.nodes[static_cast<size_t>(k)];
      if (n.op == OpKind::Mean && s.kind == ReductionSchedule::Row && isFloating(g.type(n.outputs[0]).dtype)) meansOf[n.inputs[0]].push_back(k);
    }
    std::set<int32_t> paired;
    for (const auto& [k, s] : plan.schedules) {
      const Node& bn = g.nodes[static_cast<size_t>(k)];
      if (bn.op != OpKind::Mean || s.kind != ReductionSchedule::Row || paired.count(k)) continue;
      const Node* sq = inlinedNode(bn.inputs[0]);
      if (!sq || sq->op != OpKind::Mul || sq->inputs.size() != 2) continue;
      const Node* s0 = inlinedNode(sq->inputs[0]);
      if (!s0 || s0->op != OpKind::Sub || s0->inputs.size() != 2) continue;
      ValueId x = s0->inputs[0];
      auto it = meansOf.find(x);
      if (it == meansOf.end()) continue;
      for (int32_t a : it->second) {
        const Node& an = g.nodes[static_cast<size_t>(a)];
        if (a >= k || paired.count(a) || copyBetween(a, k) || an.attrs != bn.attrs || plan.schedules.at(a) != s || g.type(an.outputs[0]) != g.type(bn.outputs[0]))
          continue;
        const TensorType& xt = g.type(x);
        Ints kept = xt.sizes;
        for (int64_t d : reductionDims(an.attrs, xt.rank())) kept[static_cast<size_t>(d)] = 1;
        ValueId av = an.outputs[0];
        if (!deviation(sq->inputs[0], x, av, kept) || !deviation(sq->inputs[1], x, av, kept)) continue;
        plan.moments[a] = k;
        paired.insert(a);
        paired.insert(k);
        break;
      }
    }
  }

  // ------------------------------------------------------------ row groups
  /// Row groups look this many nodes past their first reduction.
  static constexpr size_t kRowGroupWindow = 256;


  /// A row-level shape: one element per row, in the rows' order -- the row
  /// shape itself ([2,10,1]) or a compact spelling of it ([3] for the rows of
  /// a batch norm over [2,3,4,4], from a keepdim=false reduction).
  static bool compactRow(const Ints& t, const RowGroup& G) {
    Ints a, b;
    for (int64_t s : t)
      if (s != 1) a.push_back(s);
    for (int64_t s : G.rowShape)
      if (s != 1) b.push_back(s);
    return a == b;
  }

  /// Whether a row-level value of shape `t`, broadcast (right-aligned) to
  /// the group's full shape, is the row's value: its non-1 dims land on kept
  /// dims of the same sizes.
  static bool rowBroadcasts(const Ints& t, const RowGroup& G) {
    if (t.size() > G.shape.size() || !compactRow(t, G)) return false;
    size_t lead = G.shape.size() - t.size();
    for (size_t d = 0; d < t.size(); ++d)
      if (t[d] != 1 && (G.rowShape[lead + d] != t[d])) return false;
    return true;
  }

  /// Whether `v` can be read by a member computed at shape `ctx` (the
  /// group's full shape, or a row-level shape); `touches` is set when it
  /// depends on the group.
  bool rowOperandOk(ValueId v, const RowGroup& G, const Ints& ctx, bool& touches, int depth = 0) const {
    const bool fullCtx = ctx == G.shape;
    if (G.rowLevel.count(v)) {
      touches = true;
      const Ints& vs = g.type(v).sizes;
      return fullCtx ? (vs == G.shape || rowBroadcasts(vs, G)) : vs == ctx;
    }
    if (G.full.count(v)) {
      touches = true;
      return fullCtx;
    }
    int32_t d = g.values[v].node;
    if (d < 0) return true;
    const Node& n = g.nodes[static_cast<size_t>(d)];
    if (inlined[static_cast<size_t>(d)]) {
      if (depth > kMaxInlineTree) return false;
      if (n.op == OpKind::Constant) return true;
      if (isScatterExpr(n.op)) {  // read at shifted coordinates: only values that exist already
        bool t = false;
        for (ValueId in : n.inputs)
          if (!rowOperandOk(in, G, ctx, t, depth + 1) || t) return false;
        return true;
      }
      for (ValueId in : n.inputs)
        if (!rowOperandOk(in, G, ctx, touches, depth + 1)) return false;
      return true;
    }
    if (opInfo(n.op).category == OpCategory::View && !G.memberSet.count(d)) {
      // A view (a bias reshaped to [1,C,1,1]) of something that exists by
      // then: the group's kernel declares it early (ensureView).
      bool t = false;
      return rowOperandOk(n.inputs[0], G, ctx, t, depth + 1) && !t;
    }
    return d < G.seed;
  }

  /// Declares the buffer of a view (and of the views it is a view of): at its
  /// place in the program, or ahead of it for a row group's kernel that
  bool joinRowGroup(int32_t k, RowGroup& G) {
    const Node& n = g.nodes[static_cast<size_t>(k)];
    if (plan.groupOf[static_cast<size_t>(k)] >= 0 || inlined[static_cast<size_t>(k)] || plan.biasAdds.count(k) || plan.reluEpilogues.count(k) ||
        plan.scaleOf.count(k) || plan.writtenByGemm.count(k) || n.outputs.size() != 1 || plan.castGroupOf[static_cast<size_t>(k)] >= 0)
      return false;
    ValueId out = n.outputs[0];
    const TensorType& ot = g.type(out);
    bool touches = false;
    if (isReduction(n.op)) {
      const TensorType& it = g.type(n.inputs[0]);
      if (it.sizes != G.shape || reductionDims(n.attrs, it.rank()) != G.dims || !isFloating(ot.dtype)) return false;
      if (!rowOperandOk(n.inputs[0], G, G.shape, touches)) return false;
      G.rowLevel.insert(out);
    } else if (opInfo(n.op).category == OpCategory::Pointwise) {
      bool fullSize = ot.sizes == G.shape;
      if (!fullSize && !compactRow(ot.sizes, G)) return false;
      for (ValueId in : n.inputs)
        if (!rowOperandOk(in, G, ot.sizes, touches)) return false;
      if (!touches) return false;  // unrelated work stays out of the row loop
      if (fullSize) {
        G.full.insert(out);
        G.exprNodes.insert(k);
      } else {
        if (!ot.isContiguous()) return false;
        G.rowLevel.insert(out);
      }
    } else if (opInfo(n.op).category == OpCategory::View) {
      ValueId in = n.inputs[0];
      const TensorType& inT = g.type(in);
      if (G.rowLevel.count(in) && (compactRow(ot.sizes, G) || (n.op == OpKind::Expand && rowBroadcasts(inT.sizes, G) && ot.sizes == G.shape))) {
        G.rowLevel.insert(out);
      } else if (G.full.count(in) && ot.sizes == inT.sizes && ot.strides == inT.strides && ot.offset == inT.offset) {
        G.full.insert(out);
      } else {
        return false;
      }
      G.aliases[out] = in;
    } else {
      return false;
    }
    G.members.push_back(k);
    G.memberSet.insert(k);
    return true;
  }

  /// Whether something outside the group reads `v` (through alias views).
  bool readOutsideGroup(ValueId v, const RowGroup& G, const UseInfo& u) const {
    if (u.is_output[v]) return true;
    for (int32_t user : u.users[v]) {
      if (!G.memberSet.count(user)) return true;
      const Node& c = g.nodes[static_cast<size_t>(user)];
      if (opInfo(c.op).category == OpCategory::View && readOutsideGroup(c.outputs[0], G, u)) return true;
    }
    return false;
  }

  void planRowGroups(const UseInfo& u) {
    plan.groupOf.assign(g.nodes.size(), -1);
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const Node& n = g.nodes[k];
      if (!isReduction(n.op) || plan.groupOf[k] >= 0 || !isFloating(g.type(n.outputs[0]).dtype)) continue;
      const TensorType& it = g.type(n.inputs[0]);
      RowGroup G;
      G.seed = static_cast<int32_t>(k);
      G.shape = it.sizes;
      G.dims = reductionDims(n.attrs, it.rank());
      G.rowShape = it.sizes;
      G.nred = 1;
      for (int64_t d : G.dims) {
        G.rowShape[static_cast<size_t>(d)] = 1;
        G.nred *= it.sizes[static_cast<size_t>(d)];
      }
      G.rows = it.numel() / std::max<int64_t>(G.nred, 1);
      if (G.nred < 2 || G.rows < 1 || it.rank() == 0) continue;
      if (!joinRowGroup(G.seed, G)) continue;
      for (size_t j = k + 1; j < std::min(g.nodes.size(), k + kRowGroupWindow); ++j) joinRowGroup(static_cast<int32_t>(j), G);
      int launches = 0;
      for (int32_t m : G.members) launches += opInfo(g.nodes[static_cast<size_t>(m)].op).category != OpCategory::View;
      if (launches < 2) continue;
      for (int32_t m : G.members) {
        const Node& mn = g.nodes[static_cast<size_t>(m)];
        ValueId v = mn.outputs[0];
        if (!readOutsideGroup(v, G, u)) continue;
        if (opInfo(mn.op).category == OpCategory::View) {
          G.lowerViews.insert(m);
        } else {
          G.materialized.insert(v);
        }
      }
      // Note [Launch shape]: a group whose one kernel cannot fill the machine
      // (a few long rows: batch-norm statistics of a large image batch, the
      // column sums of a LayerNorm's weight gradient) is not formed: its
      // reductions run scheduled (split, coalesced) and its pointwise work
      // as kernels of their own.  The group re-read its rows in every pass
      // anyway; what it saved, launches, matters less than 132 SMs.
      std::set<ValueId> seen;
      bool anyFull = false;
      G.passes = 0;
      G.bytes = 0;
      for (int32_t m : G.members) {
        const Node& mn = g.nodes[static_cast<size_t>(m)];
        G.passes += isReduction(mn.op);
        for (ValueId in : mn.inputs) G.bytes += leafBytes(in, &G, seen);
      }
      for (ValueId v : G.materialized) {
        anyFull = anyFull || G.full.count(v);
        G.bytes += g.type(v).numel() * static_cast<int64_t>(dtypeSize(g.type(v).dtype));
      }
      G.passes += anyFull;
      const bool large = rule.sms > 0 && G.bytes > rule.minBytes;
      RowGroupShape shape = rowGroupShape(G.shape, G.dims, G.rows, G.nred, G.passes, large, rule);
      if (large && !launchShapeOk(plan::LaunchWork{G.bytes, shape.blocks, shape.serial, 1}, rule)) {
        plan.unformedGroups.push_back(G.seed);
        continue;
      }
      for (int32_t m : G.members) plan.groupOf[static_cast<size_t>(m)] = static_cast<int32_t>(plan.groups.size());
      plan.groups.push_back(std::move(G));
    }
  }
};

}  // namespace

FusionPlan planFusion(const Graph& g, const LaunchShapeRule& rule) {
  Planner p(g, rule);
  p.run();
  return std::move(p.plan);
}

namespace {

std::string ints(const Ints& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

/// A node as the plan names it: its first result, or the input it writes.
std::string nodeLabel(const Graph& g, const Node& n) {
  if (n.outputs.empty()) return opName(n.op) + std::string(" %") + g.values[n.inputs.at(0)].name;
  return "%" + g.values[n.outputs[0]].name;
}

std::string valueList(const Graph& g, const std::vector<ValueId>& vs) {
  std::string s;
  for (size_t i = 0; i < vs.size(); ++i) s += (i ? ", %" : "%") + g.values[vs[i]].name;
  return s;
}

/// What runs a node the plan leaves to a kernel or call of its own: as its
/// category or its row says (Note [Op rows]).
std::string ownStep(const Node& n) {
  const OpInfo& info = opInfo(n.op);
  if (n.op == OpKind::EpilogueCopy) return "epilogue copy";
  if (info.category == OpCategory::View) return "view";
  if (info.category == OpCategory::Pointwise || isScatterExpr(n.op)) return "kernel pointwise";
  if (isReduction(n.op)) return "kernel reduction";
  const OpRule* r = opRule(n.op);
  switch (r ? r->cuda : aotc::Lowering::None) {
    case aotc::Lowering::Element: return "kernel element";
    case aotc::Lowering::Fill: return "kernel fill";
    case aotc::Lowering::Gemm: return "gemm";
    case aotc::Lowering::Conv: return "conv";
    default: return "unlowered";
  }
}

/// A scatter whose only reader is the epilogue copy that writes its region.
bool regionOnly(const Graph& g, int32_t node) {
  for (const Node& n : g.nodes)
    if (n.op == OpKind::EpilogueCopy && regionSource(g, n) == node) return true;
  return false;
}

}  // namespace

std::string printFusionPlan(const Graph& g, const FusionPlan& plan) {
  std::ostringstream os;
  os << "fusion @" << g.name << " {\n";
  auto name = [&](int32_t node) { return g.values[g.nodes[static_cast<size_t>(node)].outputs[0]].name; };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    const int32_t id = static_cast<int32_t>(k);
    if (n.outputs.empty()) os << "  " << opName(n.op) << " %" << g.values[n.inputs.at(0)].name << ": ";  // writes its first operand
    else os << "  " << valueList(g, n.outputs) << " = " << opName(n.op) << ": ";
    if (plan.inlined[k]) {
      os << (n.op == OpKind::Constant ? "literal" : regionOnly(g, id) ? "region of an epilogue copy" : "inline");
    } else if (int32_t gi = plan.groupOf[k]; gi >= 0) {
      const RowGroup& G = plan.groups[static_cast<size_t>(gi)];
      os << "group " << gi << (G.seed == id ? " seed" : "");
      if (G.lowerViews.count(id)) os << ", view read outside";
      else if (G.materialized.count(n.outputs[0])) os << ", stored";
    } else if (int32_t ci = plan.castGroupOf.empty() ? -1 : plan.castGroupOf[k]; ci >= 0) {
      os << "cast group " << ci;
    } else if (auto b = plan.biasAdds.find(id); b != plan.biasAdds.end()) {
      os << "bias epilogue of %" << g.values[g.nodes[static_cast<size_t>(b->second.first)].outputs[0]].name;
    } else if (auto r = plan.reluEpilogues.find(id); r != plan.reluEpilogues.end()) {
      os << "relu epilogue of %" << name(r->second);
    } else if (auto c = plan.scaleOf.find(id); c != plan.scaleOf.end()) {
      os << "alpha of %" << name(c->second);
      if (auto w = plan.writtenByGemm.find(id); w != plan.writtenByGemm.end()) os << ", written into its copy";
    } else if (auto w = plan.writtenByGemm.find(id); w != plan.writtenByGemm.end()) {
      os << (n.op == OpKind::Clone ? "written by %" : "layout of %") << name(w->second);
    } else if (auto sb = std::find_if(plan.storesInput.begin(), plan.storesInput.end(), [&](const auto& e) { return e.second == id; });
               sb != plan.storesInput.end()) {
      os << "stored by %" << name(sb->first);
    } else {
      os << ownStep(n);
      if (n.op == OpKind::EpilogueCopy)
        if (int32_t d = regionSource(g, n); d >= 0) os << ", the region %" << g.values[g.nodes[static_cast<size_t>(d)].outputs[0]].name;
      if (auto b = plan.gemmBias.find(id); b != plan.gemmBias.end()) os << " + bias %" << g.values[b->second].name;
      if (plan.gemmRelu.count(id)) os << " + relu";
      if (auto a = plan.gemmAlpha.find(id); a != plan.gemmAlpha.end()) os << ", alpha " << a->second;
      if (auto c = plan.gemmInto.find(id); c != plan.gemmInto.end())
        os << ", into %" << name(c->second.copy) << " strides " << ints(c->second.strides);
      for (const auto& [a, more] : plan.siblings)
        if (std::find(more.begin(), more.end(), id) != more.end())
          os << ", with %" << g.values[g.nodes[static_cast<size_t>(a)].outputs[0]].name << " (siblings)";
      for (const auto& [a, b] : plan.moments)
        if (b == id) os << ", with %" << g.values[g.nodes[static_cast<size_t>(a)].outputs[0]].name << " (Welford)";
      if (auto st = plan.storesInput.find(id); st != plan.storesInput.end()) os << ", stores %" << name(st->second);
      if (auto s = plan.schedules.find(id); s != plan.schedules.end()) {
        static constexpr const char* kKinds[] = {"legacy", "thread", "row", "column"};
        os << ", " << kKinds[s->second.kind] << " x" << s->second.block;
        if (s->second.split > 1) os << ", split " << s->second.split << " x " << s->second.chunk;
        os << ", " << s->second.blocks << " blocks, " << s->second.serial << " serial";
      }
    }
    os << "\n";
  }
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const RowGroup& G = plan.groups[gi];
    os << "  group " << gi << ": shape " << ints(G.shape) << " dims " << ints(G.dims) << " rows " << G.rows << " x " << G.nred
       << ", " << G.members.size() << " members\n";
  }
  for (size_t ci = 0; ci < plan.castGroups.size(); ++ci) {
    const FusionPlan::CastGroup& C = plan.castGroups[ci];
    const Node& first = g.nodes[static_cast<size_t>(C.members.front())];
    os << "  cast group " << ci << ": " << dtypeName(g.type(first.inputs[0]).dtype) << " -> " << dtypeName(g.type(first.outputs[0]).dtype)
       << ", " << C.members.size() << " tensors, " << (C.inputs ? "inputs" : "computed") << ", before ";
    if (static_cast<size_t>(C.at) == g.nodes.size()) os << "the end\n";
    else os << nodeLabel(g, g.nodes[static_cast<size_t>(C.at)]) << "\n";
  }
  for (int32_t seed : plan.unformedGroups)
    os << "  no group at %" << g.values[g.nodes[static_cast<size_t>(seed)].outputs[0]].name
       << ": its kernel would not fill the machine (Note [Launch shape])\n";
  os << "}\n";
  return os.str();
}

}  // namespace aotc
