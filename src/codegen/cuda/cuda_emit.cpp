//===- cuda_emit.cpp - Lower forward/backward programs to steps -----------===//
//
// One step per node (fusion comes later):
//   kernel  pointwise, reduction, constant, clone, and epilogue copies: a
//           CUDA kernel with every size, stride and offset baked in;
//   gemm    mm as one cublasGemmEx call, spelled out in cuBLAS's column-major
//           terms (operands whose layout cuBLAS cannot take are first copied
//           by a kernel);
//   view    a view op: pointer arithmetic on its root buffer, no launch.
// Buffers: `input` (a caller or saved tensor), `alloc` (owned, dense) and
// `view` (root buffer + sizes/strides/offset from the IR type).
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include "aotc/codegen/codegen.h"
#include "aotc/codegen/prelude.h"
#include "aotc/ir/host_tensor.h"
#include "aotc/ops/kernel_text.h"
#include "aotc/ops/ops.h"
#include "aotc/ops/pointwise.h"
#include "aotc/ops/reductions.h"
#include "aotc/ops/rules.h"

namespace aotc {

const char* devicePrelude() { return kDevicePrelude; }

namespace {

using ktext::at;
using ktext::computeType;
using ktext::coords;
using ktext::literal;
using ktext::storageType;
using ktext::valueCast;

constexpr int kBlock = 256;

// Note [Half precision values]: float16 and bfloat16 values are computed in
// float, but every value a node defines is rounded to its dtype where it is
// computed, inlined or not, as eager rounds after every op.  Without this an
// inlined copy of a value (full float precision) and its stored copy (rounded)
// differ, and rules that compare values break: amax's gradient compares x
// with max(x), found no tie in a bfloat16 program, and divided 0 by 0.
// valueCast (kernel_text.h) is that rounding.

/// The expression an elementwise op computes from its operand expressions:
/// its row's (Note [Pointwise rows]); an epilogue copy is the value itself.
std::string pointwiseExpr(OpKind k, const std::vector<std::string>& a) {
  if (k == OpKind::EpilogueCopy) return a[0];
  const PointwiseRule* r = pointwiseRule(k);
  AOTC_CHECK(r, "no pointwise emit rule for ", opName(k));
  return pointwiseCuda(*r, a);
}

/// Strides of `in` seen from an output of shape `out` (broadcast dims get 0).
Ints broadcastStrides(const TensorType& in, const Ints& out) {
  Ints st(out.size(), 0);
  size_t lead = out.size() - in.sizes.size();
  for (size_t d = lead; d < out.size(); ++d)
    if (in.sizes[d - lead] != 1) st[d] = in.strides[d - lead];
  return st;
}

/// Note [Kernel text]: a kernel's text names ops, never user node names (those
/// are in the manifest's kernel entries), so the same work in two layers or
/// two models is the same kernel: one compile, one cache entry.
std::string banner(const Node& n, const Graph& g) {
  std::string s = "// aotc kernel: " + std::string(opName(n.op)) + ": ";
  for (size_t i = 0; i < n.inputs.size(); ++i) s += (i ? ", " : "") + g.type(n.inputs[i]).str();
  return s + "\n";
}

struct Lowering {
  const Graph& g;
  std::map<std::string, KernelSource>& kernels;
  std::map<std::string, std::set<std::string>> kernelNodes_;  // kernel -> the nodes it serves, for dedup
  std::vector<plan::Buffer> buffers;
  std::vector<plan::Step> steps;
  std::vector<std::string> bufName;  // per value
  std::vector<std::string> root;     // root buffer per value

  Lowering(const Graph& graph, std::map<std::string, KernelSource>& k)
      : g(graph), kernels(k), bufName(graph.values.size()), root(graph.values.size()) {}

  static plan::Layout layout(const TensorType& t) { return plan::Layout{t.dtype, t.sizes, t.strides, t.offset}; }

  /// Declares value `v`'s buffer: an input (its role), a view of `base`, or
  /// an allocation of its storage span.
  void declare(ValueId v, plan::BufferKind kind, const std::string& roleOrBase = "") {
    const Value& val = g.values[v];
    bufName[v] = val.name;
    plan::Buffer b{val.name, kind, layout(val.type), "", "", 0, -1};
    if (kind == plan::BufferKind::Input) b.role = roleOrBase;
    if (kind == plan::BufferKind::View) b.base = roleOrBase;
    if (kind == plan::BufferKind::Alloc) b.bytes = val.type.storageSpan() * dtypeSize(val.type.dtype);
    buffers.push_back(std::move(b));
  }

  void pushLaunch(const std::string& kernel, int64_t grid, int64_t block, std::vector<std::string> args) {
    plan::Launch l;
    l.kernel = kernel;
    l.grid = {grid, 1, 1};
    l.block = {block, 1, 1};
    l.args = std::move(args);
    steps.push_back(std::move(l));
  }

  std::string addKernel(std::string body, const Node& n) { return addKernel(std::move(body), n, {nodeName(n)}); }

  /// Note [32-bit indexing]: when no value of the program spans 2^31
  /// elements, every index, coordinate and offset of its kernels fits an int;
  /// 64-bit integer arithmetic costs several instructions on a GPU.
  bool wideIndex() {
    if (!wide_) {
      bool w = false;
      for (const Value& v : g.values) w = w || v.type.numel() >= (int64_t{1} << 31) || v.type.storageSpan() >= (int64_t{1} << 31);
      wide_ = w;
    }
    return *wide_;
  }
  std::optional<bool> wide_;

  std::string addKernel(std::string body, const Node& n, const std::vector<std::string>& who) {
    if (!wideIndex())
      for (size_t p = 0; (p = body.find("aotc_i64", p)) != std::string::npos;) body.replace(p, 8, "int");
    std::string src = std::string("#include \"aotc_prelude.cuh\"\n") + body;
    // The name is a hash of the whole text with a placeholder for the name.
    std::string name = "k_" + sha256Hex(src).substr(0, 16);
    size_t p;
    while ((p = src.find("@KERNEL@")) != std::string::npos) src.replace(p, 8, name);
    (void)n;
    auto& k = kernels[name];
    k.name = name;
    k.source = src;
    auto& seen = kernelNodes_[name];  // a set beside the list: a kernel may serve 10^5 nodes
    for (const std::string& w : who)
      if (seen.insert(w).second) k.nodes.push_back(w);
    return name;
  }

  void launch(const std::string& kernel, const std::vector<ValueId>& args, ValueId out, int64_t threads,
              const std::string& outRoot = "") {
    std::vector<std::string> a{outRoot.empty() ? root[out] : outRoot};
    for (ValueId v : args) a.push_back(root[v]);
    pushLaunch(kernel, std::max<int64_t>(1, (threads + kBlock - 1) / kBlock), kBlock, std::move(a));
  }

  /// Launch with every output then every input as arguments.
  void launchAll(const std::string& kernel, const Node& n, int64_t threads) {
    std::vector<std::string> a;
    for (ValueId o : n.outputs) a.push_back(root[o]);
    for (ValueId v : n.inputs) a.push_back(root[v]);
    pushLaunch(kernel, std::max<int64_t>(1, (threads + kBlock - 1) / kBlock), kBlock, std::move(a));
  }

  // ---------------------------------------------------------------- fusion
  // Note [Fusion by inlining]: a pointwise value with exactly one consumer,
  // a pointwise kernel or a reduction of the same shape, that no program
  // output needs, is computed inside its consumer's kernel instead of
  // through a buffer; 0-dim constants are inlined everywhere as literals.
  // A kernel evaluates its expression tree per output element (reductions:
  // per reduced element), loading each leaf buffer with its own strides,
  // broadcast to the tree's shape.  Values with several consumers are
  // materialized once rather than recomputed.

  std::vector<bool> inlined;          ///< per node: computed inside its consumer

  static bool isScatterExpr(OpKind k) {
    const OpRule* r = opRule(k);
    return r && r->cuda == aotc::Lowering::Expression;
  }

  /// Note [Reductions]: every reduction the kernels compute, with its
  /// identity (floating and integer) and how two partial results combine
  /// (empty: +), is its row (Note [Reduction rows]).  Inlining, row groups
  /// and the reduction kernel all read it.
  static bool isReduction(OpKind k) { return reductionRule(k) != nullptr; }

  static bool inlinableConstant(const Node& n) {
    return n.op == OpKind::Constant && (!hasAttr(n.attrs, "shape") || attrInts(n.attrs, "shape").empty());
  }

  /// Largest expression tree (in nodes) one inlined value may stand for:
  /// a value inlined into several consumers is recomputed by each.
  static constexpr int kMaxInlineTree = 24;

  /// Note [Region epilogues]: an input mutated only through one slice or
  /// select (x[1:3].add_(...)) reaches its epilogue as
  /// epilogue_copy(x, slice_scatter(x, v)).  The copy then writes v into that
  /// region of the caller's buffer, and the full-size scatter is not computed
  /// when nothing else reads it.  Returns the scatter node, or -1.
  int32_t regionSource(const Node& copy) const {
    int32_t d = g.values[copy.inputs[1]].node;
    if (d < 0) return -1;
    const Node& sc = g.nodes[static_cast<size_t>(d)];
    if ((sc.op == OpKind::SliceScatter || sc.op == OpKind::SelectScatter) && sc.inputs[0] == copy.inputs[0]) return d;
    return -1;
  }

  /// Note [GEMM bias epilogue]: add(mm(a, b), bias) — a Linear layer — with
  /// the product used nowhere else and a contiguous bias broadcast over rows
  /// is one cublasLtMatmul with CUBLASLT_EPILOGUE_BIAS: the add writes no
  /// buffer of its own.  Maps the add's node to (mm node, bias value).
  std::map<int32_t, std::pair<int32_t, ValueId>> biasAdds;
  std::map<int32_t, ValueId> gemmBias;  ///< mm node -> bias value

  void planBiasEpilogues(const UseInfo& u) {
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const Node& n = g.nodes[k];
      // Only adds that fusion leaves materialized: an inlined add already
      // costs no launch of its own.
      if (n.op != OpKind::Add || inlined[k]) continue;
      for (int side = 0; side < 2; ++side) {
        ValueId p = n.inputs[static_cast<size_t>(side)], bias = n.inputs[static_cast<size_t>(1 - side)];
        int32_t d = g.values[p].node;
        if (d < 0 || g.nodes[static_cast<size_t>(d)].op != OpKind::Mm || gemmBias.count(d)) continue;
        // The bias must be read from a buffer that exists before the GEMM
        // runs: a graph input or a view of one (a value computed by a fused
        // kernel may have no buffer of its own).
        ValueId base = bias;
        while (g.values[base].node >= 0 && isView(g.nodes[static_cast<size_t>(g.values[base].node)].op))
          base = g.nodes[static_cast<size_t>(g.values[base].node)].inputs[0];
        if (g.values[base].node >= 0) continue;
        const TensorType &pt = g.type(p), &bt = g.type(bias), &ot = g.type(n.outputs[0]);
        bool rowBias = (bt.rank() == 1 && bt.sizes[0] == pt.sizes[1]) || (bt.rank() == 2 && bt.sizes[0] == 1 && bt.sizes[1] == pt.sizes[1]);
        if (u.users[p].size() != 1 || u.is_output[p] || !rowBias || bt.strides.back() != 1 || bt.dtype != pt.dtype ||
            ot.sizes != pt.sizes || ot.dtype != pt.dtype)
          continue;
        biasAdds[static_cast<int32_t>(k)] = {d, bias};
        gemmBias[d] = bias;
        break;
      }
    }
  }

  void planFusion() {
    UseInfo u = UseInfo::compute(g);
    inlined.assign(g.nodes.size(), false);
    for (const Node& n : g.nodes) {
      if (n.op != OpKind::EpilogueCopy) continue;
      int32_t d = regionSource(n);
      if (d >= 0 && u.users[g.nodes[static_cast<size_t>(d)].outputs[0]].size() == 1 &&
          !u.is_output[g.nodes[static_cast<size_t>(d)].outputs[0]])
        inlined[static_cast<size_t>(d)] = true;  // its only reader copies just the region
    }
    std::vector<int> treeSize(g.nodes.size(), 1);
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
      for (ValueId in : n.inputs) {
        int32_t d = g.values[in].node;
        if (d >= 0 && inlined[static_cast<size_t>(d)]) treeSize[k] += treeSize[static_cast<size_t>(d)];
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
        treeSize[k] = 0;
        continue;
      }
      if ((opInfo(n.op).category != OpCategory::Pointwise && !isScatterExpr(n.op)) || treeSize[k] > kMaxInlineTree) continue;
      bool all = true;
      for (int32_t user : users) all = all && consumesAsExpression(user, v);
      inlined[k] = all;
    }
    planBiasEpilogues(u);
    planRowGroups(u);
  }

  // ------------------------------------------------------------ row groups
  // Note [Row groups]: a reduction, the reductions over the same dims of the
  // same shape that follow it, and the pointwise work around them -- softmax,
  // log_softmax, layer norm and its backward, batch-norm statistics and
  // normalization -- run as one kernel with one block per row (a row is one
  // coordinate of the kept dims).  The block computes each reduction in turn
  // (a deterministic shared-memory tree, accumulated in double), keeps row
  // results in registers, and writes only the values something outside the
  // group reads.  Full-size values of the group are expressions, recomputed
  // in each pass over the row instead of going through memory.
  // The kernel runs where the first reduction stood, so a node joins only
  // if everything it reads from outside the group exists by then.

  struct RowGroup {
    int32_t seed = -1;
    Ints shape, dims, rowShape;
    int64_t rows = 0, nred = 0;
    std::vector<int32_t> members;  ///< program order, alias views included
    std::set<int32_t> memberSet;
    std::set<int32_t> exprNodes;   ///< full-size pointwise members
    std::set<ValueId> rowLevel;    ///< one value per row: registers
    std::set<ValueId> full;        ///< full-size values: expressions
    std::map<ValueId, ValueId> aliases;  ///< alias view value -> the value it aliases
    std::set<ValueId> materialized;
    std::set<int32_t> lowerViews;  ///< alias views something outside reads
  };
  std::vector<RowGroup> groups;
  std::vector<int32_t> groupOf;  ///< per node, -1 when in none

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
  /// reads it.
  void ensureView(ValueId v) {
    if (!root[v].empty()) return;
    int32_t d = g.values[v].node;
    AOTC_CHECK(d >= 0 && opInfo(g.nodes[static_cast<size_t>(d)].op).category == OpCategory::View, "a view whose source has no buffer");
    ValueId src = g.nodes[static_cast<size_t>(d)].inputs[0];
    ensureView(src);
    declare(v, plan::BufferKind::View, root[src]);
    root[v] = root[src];
  }

  bool joinRowGroup(int32_t k, RowGroup& G) {
    const Node& n = g.nodes[static_cast<size_t>(k)];
    if (groupOf[static_cast<size_t>(k)] >= 0 || inlined[static_cast<size_t>(k)] || biasAdds.count(k) || n.outputs.size() != 1) return false;
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
    groupOf.assign(g.nodes.size(), -1);
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const Node& n = g.nodes[k];
      if (!isReduction(n.op) || groupOf[k] >= 0 || !isFloating(g.type(n.outputs[0]).dtype)) continue;
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
      for (int32_t m : G.members) groupOf[static_cast<size_t>(m)] = static_cast<int32_t>(groups.size());
      groups.push_back(std::move(G));
    }
  }

  /// The head of a loop over a reduction's `nred` elements: strided over the
  /// block's threads, or serial in one thread (not unrolled when asked).
  static std::string reduceLoopHead(bool blockStrided, int64_t nred, bool noUnroll = false) {
    if (blockStrided) return "  for (aotc_i64 j = threadIdx.x; j < " + std::to_string(nred) + "; j += blockDim.x) {\n    aotc_i64 q = j;\n";
    return std::string(noUnroll ? "  #pragma unroll 1\n" : "") + "  for (aotc_i64 j = 0; j < " + std::to_string(nred) + "; ++j) {\n    aotc_i64 q = j;\n";
  }

  /// Combines the block's partial results `acc` in `part` with a fixed tree
  /// (deterministic); `combine` is aotc_max/aotc_min, or empty for a sum.
  static std::string blockTree(int64_t block, const std::string& combine) {
    std::string both = combine.empty() ? "part[threadIdx.x] + part[threadIdx.x + s]" : combine + "(part[threadIdx.x], part[threadIdx.x + s])";
    return "  part[threadIdx.x] = acc;\n  __syncthreads();\n  for (unsigned s = " + std::to_string(block / 2) +
           "; s > 0; s >>= 1) {\n    if (threadIdx.x < s) part[threadIdx.x] = " + both + ";\n    __syncthreads();\n  }\n";
  }

  /// The kernel of a row group (Note [Row groups]), launched at its seed.
  void emitRowGroup(const RowGroup& G) {
    std::vector<ValueId> outs;
    for (int32_t m : G.members) {
      ValueId v = g.nodes[static_cast<size_t>(m)].outputs[0];
      if (!G.materialized.count(v)) continue;
      declare(v, plan::BufferKind::Alloc);
      root[v] = bufName[v];
      outs.push_back(v);
    }
    const int64_t rank = static_cast<int64_t>(G.shape.size());
    // Note [Row groups]: short rows, and rows whose elements are a row apart
    // in memory (the innermost dim kept: column sums), are one thread per
    // row -- serial, in order, no barriers -- like plain reductions.
    const bool perThread = !blockReduction(TensorType::contiguous(DType::F32, G.shape), G.dims, G.nred, G.rows);
    int64_t block = 32;
    while (block < G.nred && block < kBlock) block *= 2;
    if (perThread) block = kBlock;
    ExprCtx x;
    x.exprNodes = &G.exprNodes;
    x.aliases = &G.aliases;
    std::vector<std::string> c = coords(static_cast<size_t>(rank));
    std::ostringstream body;
    if (perThread) body << "  aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= " << G.rows << ") return;\n";
    else body << "  aotc_i64 i = blockIdx.x;\n  if (i >= " << G.rows << ") return;\n";
    body << "  aotc_i64 c[" << rank << "];\n  { aotc_i64 r = i;\n";
    for (int64_t d = rank; d-- > 0;)
      if (G.rowShape[static_cast<size_t>(d)] != 1) body << "    c[" << d << "] = r % " << G.rowShape[static_cast<size_t>(d)] << "; r /= " << G.rowShape[static_cast<size_t>(d)] << ";\n";
      else body << "    c[" << d << "] = 0;\n";
    body << "  }\n";
    if (!perThread) body << "  __shared__ double part[" << block << "];\n";
    auto rowLoop = [&]() {
      std::ostringstream l;
      // Not unrolled: a row group's passes are long, and unrolling them
      // multiplies NVRTC's time for little gain on short rows.
      l << reduceLoopHead(!perThread, G.nred, true);
      for (size_t k = G.dims.size(); k-- > 0;) {
        int64_t d = G.dims[k];
        l << "    c[" << d << "] = q % " << G.shape[static_cast<size_t>(d)] << "; q /= " << G.shape[static_cast<size_t>(d)] << ";\n";
      }
      return l.str();
    };
    auto takeCode = [&]() {
      std::string code = x.code.str();
      x.code.str("");
      x.memo.clear();
      return code;
    };
    int reg = 0;
    for (int32_t m : G.members) {
      const Node& n = g.nodes[static_cast<size_t>(m)];
      ValueId v = n.outputs[0];
      noteNode(x, n);
      const char* ct = computeType(g.type(v).dtype);
      std::string r = "r" + std::to_string(reg++);
      if (isReduction(n.op)) {
        const ReductionRule& rs = *reductionRule(n.op);
        x.indent = "    ";
        std::string e = emitValue(n.inputs[0], G.shape, c, x);
        body << "  " << ct << " " << r << ";\n  {\n  double acc = " << rs.cudaInit << ";\n";
        body << rowLoop() << takeCode();
        const std::string combine = rs.cudaCombine;
        if (combine.empty()) body << "    acc += (double)" << e << ";\n  }\n";
        else body << "    acc = " << combine << "((double)" << e << ", acc);\n  }\n";
        if (perThread) {
          body << "  " << r << " = " << valueCast(g.type(v).dtype) << (rs.mean ? "(acc / " + std::to_string(G.nred) + ".0)" : "acc") << ";\n  }\n";
          x.registers[v] = r;
          continue;
        }
        body << blockTree(block, combine);
        body << "  " << r << " = " << valueCast(g.type(v).dtype) << (rs.mean ? "(part[0] / " + std::to_string(G.nred) + ".0)" : "part[0]")
             << ";\n  __syncthreads();\n  }\n";
        x.registers[v] = r;
      } else if (G.rowLevel.count(v) && opInfo(n.op).category == OpCategory::Pointwise) {
        x.indent = "  ";
        std::vector<std::string> args;
        // Coordinates in the member's own (compact) shape: its non-1 dims
        // are the kept dims, in order.
        const Ints& ts = g.type(v).sizes;
        std::vector<std::string> rc;
        for (size_t d = 0, k = 0; d < ts.size(); ++d) {
          while (ts[d] != 1 && k < G.rowShape.size() && G.rowShape[k] == 1) ++k;
          rc.push_back(ts[d] == 1 ? std::string("0") : c[k++]);
        }
        for (ValueId in : n.inputs) args.push_back(emitValue(in, ts, rc, x));
        body << takeCode() << "  const " << ct << " " << r << " = " << valueCast(g.type(v).dtype) << pointwiseExpr(n.op, args) << ";\n";
        x.registers[v] = r;
      }
    }
    // The full-size values something outside reads, then the row-level ones.
    std::ostringstream stores;
    x.memo.clear();
    x.indent = "    ";
    bool anyFull = false;
    for (size_t o = 0; o < outs.size(); ++o) {
      if (!G.full.count(outs[o])) continue;
      anyFull = true;
      const TensorType& t = g.type(outs[o]);
      std::string e = emitValue(outs[o], G.shape, c, x);
      stores << x.code.str() << "    out" << o << "[" << at(t, c) << "] = (" << storageType(t.dtype) << ")" << e << ";\n";
      x.code.str("");
    }
    if (anyFull) body << rowLoop() << stores.str() << "  }\n";
    x.memo.clear();
    for (size_t o = 0; o < outs.size(); ++o) {
      if (G.full.count(outs[o])) continue;
      const TensorType& t = g.type(outs[o]);
      body << (perThread ? "  " : "  if (threadIdx.x == 0) ") << "out" << o << "[" << t.offset << " + i] = (" << storageType(t.dtype) << ")" << x.registers.at(outs[o]) << ";\n";
    }
    std::ostringstream os;
    os << "// aotc kernel:";
    for (size_t k = 0; k < x.ops.size(); ++k) os << (k ? ", " : " ") << x.ops[k];
    os << "\nextern \"C\" __global__ void @KERNEL@(";
    for (size_t o = 0; o < outs.size(); ++o) os << (o ? ", " : "") << storageType(g.type(outs[o]).dtype) << "* __restrict__ out" << o;
    for (size_t l = 0; l < x.leaves.size(); ++l) os << ", const " << storageType(g.type(x.leaves[l]).dtype) << "* __restrict__ in" << l;
    os << ") {\n" << body.str() << "}\n";
    const Node& seed = g.nodes[static_cast<size_t>(G.seed)];
    std::string kernel = addKernel(os.str(), seed, x.nodes);
    std::vector<std::string> a;
    for (ValueId o : outs) a.push_back(root[o]);
    for (ValueId l : x.leaves) {
      ensureView(l);
      a.push_back(root[l]);
    }
    pushLaunch(kernel, perThread ? (G.rows + block - 1) / block : G.rows, block, std::move(a));
  }

  /// Builds the expression tree of a kernel: leaves become parameters.
  struct ExprCtx {
    std::vector<ValueId> leaves;
    /// (value, coordinates) -> variable: a value read at several coordinate
    /// sets (a scatter's source) is computed once per set.
    std::map<std::pair<ValueId, std::string>, std::string> memo;
    std::ostringstream code;
    int tmp = 0;
    std::vector<std::string> nodes;
    std::vector<std::string> ops;  ///< op names, for the kernel's banner
    std::string indent = "  ";
    /// Row groups: nodes computed as expressions besides the inlined ones,
    /// values held in registers (row-level results), and views that alias
    /// another value of the group.
    const std::set<int32_t>* exprNodes = nullptr;
    std::map<ValueId, std::string> registers;
    const std::map<ValueId, ValueId>* aliases = nullptr;
    /// Vectorized kernels: the coordinates of each lane (Note [Vectorized access]).
    std::vector<std::vector<std::string>> lanes;
  };

  static std::string joinCoords(const std::vector<std::string>& c) {
    std::string k;
    for (const std::string& s : c) k += s + ",";
    return k;
  }

  bool computedInline(int32_t node, const ExprCtx& x) const {
    return node >= 0 && (inlined[static_cast<size_t>(node)] || (x.exprNodes && x.exprNodes->count(node)));
  }

  /// The variable holding `v` at coordinates `c` of a tensor of shape `shape`.
  std::string emitValue(ValueId v, const Ints& shape, const std::vector<std::string>& c, ExprCtx& x) {
    if (x.aliases)
      for (auto it = x.aliases->find(v); it != x.aliases->end(); it = x.aliases->find(v)) v = it->second;
    if (auto r = x.registers.find(v); r != x.registers.end()) return r->second;
    const std::pair<ValueId, std::string> key{v, joinCoords(c)};
    auto it = x.memo.find(key);
    if (it != x.memo.end()) return it->second;
    const Value& val = g.values[v];
    std::string var;
    const char* ct = computeType(val.type.dtype);
    if (computedInline(val.node, x)) {
      const Node& n = g.nodes[static_cast<size_t>(val.node)];
      if (n.op != OpKind::Constant) noteNode(x, n);
      if (n.op == OpKind::Constant) {
        var = literal(attrFloat(n.attrs, "value"), val.type.dtype);
        var = "((" + std::string(ct) + ")" + var + ")";
      } else if (isScatterExpr(n.op)) {
        var = scatterExpr(n, shape, c, x);
      } else {
        std::vector<std::string> args;
        for (ValueId in : n.inputs) args.push_back(emitValue(in, shape, c, x));
        var = "t" + std::to_string(x.tmp++);
        x.code << x.indent << ct << " " << var << " = " << valueCast(val.type.dtype) << pointwiseExpr(n.op, args) << ";\n";
      }
    } else {
      size_t p = std::find(x.leaves.begin(), x.leaves.end(), v) - x.leaves.begin();
      if (p == x.leaves.size()) x.leaves.push_back(v);
      TensorType b = val.type;
      b.strides = broadcastStrides(val.type, shape);
      b.sizes = shape;
      int lane = -1;
      for (size_t k = 0; k < x.lanes.size(); ++k)
        if (x.lanes[k] == c) lane = static_cast<int>(k);
      if (lane >= 0 && vectorLoadable(b)) {
        // One 16-byte load serves the four lanes.
        const std::pair<ValueId, std::string> vkey{v, "#vec"};
        auto vit = x.memo.find(vkey);
        if (vit == x.memo.end()) {
          std::string vv = "v" + std::to_string(x.tmp++);
          x.code << x.indent << "float4 " << vv << " = aotc_ld4(in" << p << " + " << at(b, x.lanes[0]) << ");\n";
          vit = x.memo.emplace(vkey, vv).first;
        }
        var = vit->second + "." + "xyzw"[lane];
      } else {
        // Lanes that read the same element (a broadcast dim) share the load.
        std::string idx = at(b, c);
        const std::pair<ValueId, std::string> ikey{v, "@" + idx};
        auto iit = x.memo.find(ikey);
        if (iit != x.memo.end()) {
          var = iit->second;
        } else {
          var = "t" + std::to_string(x.tmp++);
          x.code << x.indent << ct << " " << var << " = (" << ct << ")in" << p << "[" << idx << "];\n";
          x.memo[ikey] = var;
        }
      }
    }
    x.memo[key] = var;
    return var;
  }

  /// Note [Scatter expressions]: slice_scatter / select_scatter computed
  /// inside their consumer: an element inside the region reads the source,
  /// any other the base.  The source's coordinates are clamped to 0 outside
  /// the region, so both loads stay in bounds and the choice is a select.
  std::string scatterExpr(const Node& n, const Ints& shape, const std::vector<std::string>& c, ExprCtx& x) {
    const TensorType& ot = g.type(n.outputs[0]);
    std::string base = emitValue(n.inputs[0], shape, c, x);
    std::string inside = "q" + std::to_string(x.tmp++);
    ScatterRegion region = opRule(n.op)->region(g, n, c, inside);
    x.code << x.indent << "bool " << inside << " = " << region.inside << ";\n";
    std::string src = emitValue(n.inputs[1], g.type(n.inputs[1]).sizes, region.source, x);
    const char* ct = computeType(ot.dtype);
    std::string var = "t" + std::to_string(x.tmp++);
    x.code << x.indent << ct << " " << var << " = " << inside << " ? (" << ct << ")" << src << " : (" << ct << ")" << base << ";\n";
    return var;
  }

  /// Records that a kernel computes `n`: its user name for the manifest,
  /// its op for the kernel's banner (Note [Kernel text]); each once.
  void noteNode(ExprCtx& x, const Node& n) {
    std::string who = nodeName(n), op = opName(n.op);
    if (std::find(x.nodes.begin(), x.nodes.end(), who) == x.nodes.end()) x.nodes.push_back(who);
    if (std::find(x.ops.begin(), x.ops.end(), op) == x.ops.end()) x.ops.push_back(op);
  }

  std::string kernelHeader(const std::vector<std::string>& ops, DType outType, const std::vector<ValueId>& leaves) {
    std::ostringstream os;
    os << "// aotc kernel:";
    for (size_t i = 0; i < ops.size(); ++i) os << (i ? ", " : " ") << ops[i];
    os << "\nextern \"C\" __global__ void @KERNEL@(" << storageType(outType) << "* __restrict__ out";
    for (size_t i = 0; i < leaves.size(); ++i)
      os << ", const " << storageType(g.type(leaves[i]).dtype) << "* __restrict__ in" << i;
    os << ") {\n";
    return os.str();
  }

  std::string nodeName(const Node& n) { return n.loc.node.empty() ? std::string(opName(n.op)) : n.loc.node; }

  /// Note [Vectorized access]: a float32 elementwise kernel whose output is
  /// dense, starts at a multiple of four elements and whose innermost size is
  /// a multiple of four computes four consecutive elements per thread and
  /// stores them with one 16-byte store.  An operand whose four elements are
  /// consecutive and 16-byte aligned (innermost stride 1, every other stride
  /// and the offset multiples of four; buffers start 256-byte aligned) is
  /// read with one 16-byte load; a broadcast operand with one load; any
  /// other with four.
  static constexpr int64_t kVec = 4;
  static bool vectorStore(const TensorType& ot) {
    return ot.dtype == DType::F32 && ot.rank() >= 1 && ot.isContiguous() && ot.offset % kVec == 0 && ot.sizes.back() % kVec == 0 &&
           ot.numel() >= kVec;
  }
  static bool vectorLoadable(const TensorType& b) {
    if (b.dtype != DType::F32 || b.strides.back() != 1 || b.offset % kVec != 0) return false;
    for (size_t d = 0; d + 1 < b.sizes.size(); ++d)
      if (b.sizes[d] != 1 && b.strides[d] % kVec != 0) return false;
    return true;
  }

  /// A (fused) elementwise kernel: out, with its own layout, = root's value.
  /// Returns the kernel name; `leaves` are its operands after `out`;
  /// `threads` the threads to launch.
  std::string pointwiseKernel(const Node& root, const TensorType& ot, std::vector<ValueId>& leaves, int64_t& threads) {
    ExprCtx x;
    noteNode(x, root);
    const size_t rank = static_cast<size_t>(ot.rank());
    std::vector<std::string> c = coords(rank);
    const bool vec = vectorStore(ot);
    if (vec)
      for (int64_t k = 0; k < kVec; ++k) {
        std::vector<std::string> l = c;
        if (k) l.back() = "(" + c.back() + " + " + std::to_string(k) + ")";
        x.lanes.push_back(l);
      }
    auto value = [&](const std::vector<std::string>& at) {
      if (isScatterExpr(root.op)) return scatterExpr(root, ot.sizes, at, x);
      std::vector<std::string> args;
      for (ValueId in : root.inputs) args.push_back(emitValue(in, ot.sizes, at, x));
      return pointwiseExpr(root.op == OpKind::EpilogueCopy ? OpKind::Clone : root.op, args);
    };
    std::vector<std::string> e;
    if (vec)
      for (auto& l : x.lanes) e.push_back(value(l));
    else
      e.push_back(value(c));
    threads = vec ? ot.numel() / kVec : ot.numel();
    std::ostringstream os;
    os << kernelHeader(x.ops, ot.dtype, x.leaves);
    os << "  aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
    os << "  if (i >= " << threads << ") return;\n";
    os << "  aotc_i64 r = i" << (vec ? " * " + std::to_string(kVec) : std::string()) << ", c[" << std::max<size_t>(rank, 1) << "];\n";
    for (int64_t d = ot.rank(); d-- > 0;) os << "  c[" << d << "] = r % " << ot.sizes[d] << "; r /= " << ot.sizes[d] << ";\n";
    os << x.code.str();
    if (vec) {
      os << "  aotc_st4(out + " << at(ot, c) << ", make_float4(";
      for (size_t k = 0; k < e.size(); ++k) os << (k ? ", " : "") << "(float)" << e[k];
      os << "));\n}\n";
    } else {
      os << "  out[" << at(ot, c) << "] = (" << storageType(ot.dtype) << ")(" << computeType(ot.dtype) << ")" << e[0] << ";\n}\n";
    }
    leaves = x.leaves;
    return addKernel(os.str(), root, x.nodes);
  }

  /// Reductions over at least this many elements get one block per output
  /// (threads stride over the reduced elements, then a shared-memory tree);
  /// smaller ones one thread per output.  Note [Column reductions]: when the
  /// innermost dim is kept (a bias gradient's sum over rows), neighbouring
  /// threads of a block would read elements a row apart; one thread per
  /// output instead reads neighbouring columns at each step: coalesced.
  static constexpr int64_t kBlockReduceMin = 256;
  static constexpr int64_t kColumnOutputsMin = 32;

  static bool blockReduction(const TensorType& in, const Ints& dims, int64_t nred, int64_t outputs) {
    if (nred < kBlockReduceMin) return false;
    int64_t inner = in.rank() - 1;
    while (inner >= 0 && in.sizes[static_cast<size_t>(inner)] == 1) --inner;
    bool columnWise = inner >= 0 && !std::binary_search(dims.begin(), dims.end(), inner) && in.strides[static_cast<size_t>(inner)] == 1;
    return !(columnWise && outputs >= kColumnOutputsMin);
  }

  /// Threads to launch for a reduction node (grid x block).
  static int64_t reductionThreads(const TensorType& in, const Node& n, const TensorType& out) {
    Ints dims = reductionDims(n.attrs, in.rank());
    int64_t nred = 1;
    for (int64_t d : dims) nred *= in.sizes[d];
    return blockReduction(in, dims, nred, out.numel()) ? out.numel() * kBlock : out.numel();
  }

  /// A reduction over `dim`, with its input's expression computed in the loop.
  std::string reductionKernel(const Node& n, std::vector<ValueId>& leaves) {
    const TensorType& it = g.type(n.inputs[0]);
    const TensorType& ot = g.type(n.outputs[0]);
    Ints dims = reductionDims(n.attrs, it.rank());
    Ints keptSizes = it.sizes, redDims;
    int64_t nred = 1;
    for (int64_t d = 0; d < it.rank(); ++d)
      if (std::binary_search(dims.begin(), dims.end(), d)) {
        keptSizes[d] = 1;
        redDims.push_back(d);
        nred *= it.sizes[d];
      }
    // Note [Reduction precision]: floating reductions accumulate in double:
    // BatchNorm statistics over few elements feed ill-conditioned backwards.
    const char* acc = isFloating(ot.dtype) ? "double" : "long long";
    const ReductionRule& rs = *reductionRule(n.op);
    ExprCtx x;
    noteNode(x, n);
    x.indent = "    ";
    std::vector<std::string> c = coords(static_cast<size_t>(it.rank()));
    std::string v = emitValue(n.inputs[0], it.sizes, c, x);
    const bool blockReduce = blockReduction(it, dims, nred, ot.numel());
    std::ostringstream os;
    os << kernelHeader(x.ops, ot.dtype, x.leaves);
    if (blockReduce) {
      // One block per output: the early return is uniform in the block.
      os << "  aotc_i64 i = blockIdx.x;\n";
    } else {
      os << "  aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
    }
    os << "  if (i >= " << ot.numel() << ") return;\n";
    os << "  aotc_i64 c[" << std::max<int64_t>(it.rank(), 1) << "];\n";
    os << "  { aotc_i64 r = i;\n";
    for (int64_t d = it.rank(); d-- > 0;)
      if (keptSizes[d] != 1) os << "    c[" << d << "] = r % " << keptSizes[d] << "; r /= " << keptSizes[d] << ";\n";
      else if (!std::binary_search(dims.begin(), dims.end(), d)) os << "    c[" << d << "] = 0;\n";
    os << "  }\n";
    os << "  " << acc << " acc = " << (isFloating(ot.dtype) ? rs.cudaInit : rs.cudaInitInt) << ";\n";
    os << reduceLoopHead(blockReduce, nred);
    for (size_t k = redDims.size(); k-- > 0;)
      os << "    c[" << redDims[k] << "] = q % " << it.sizes[redDims[k]] << "; q /= " << it.sizes[redDims[k]] << ";\n";
    os << x.code.str();
    const std::string combine = rs.cudaCombine;
    if (!combine.empty()) os << "    acc = " << combine << "((" << acc << ")" << v << ", acc);\n  }\n";
    else os << "    acc += (" << acc << ")" << v << ";\n  }\n";
    if (blockReduce) {
      // A fixed tree over the block's partial results: deterministic.
      os << "  __shared__ " << acc << " part[" << kBlock << "];\n" << blockTree(kBlock, combine);
      os << "  if (threadIdx.x != 0) return;\n  acc = part[0];\n";
    }
    if (rs.mean) os << "  acc = acc / (" << acc << ")" << nred << ";\n";
    os << "  out[" << (ot.offset ? std::to_string(ot.offset) + " + " : std::string()) << "i] = (" << storageType(ot.dtype) << ")acc;\n}\n";
    leaves = x.leaves;
    return addKernel(os.str(), n, x.nodes);
  }

  /// A kernel with one thread per element of output 0 (dense): the header
  /// declares out0..outK, in0..inN, the index i and its coordinates c[].
  std::string elementKernel(const Node& n, const std::string& body, int64_t threads = -1) {
    const TensorType& ot = g.type(n.outputs[0]);
    std::ostringstream os;
    os << banner(n, g);
    os << "extern \"C\" __global__ void @KERNEL@(";
    for (size_t k = 0; k < n.outputs.size(); ++k)
      os << (k ? ", " : "") << storageType(g.type(n.outputs[k]).dtype) << "* __restrict__ out" << k;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      os << ", const " << storageType(g.type(n.inputs[i]).dtype) << "* __restrict__ in" << i;
    os << ") {\n";
    os << "  aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
    os << "  if (i >= " << (threads < 0 ? ot.numel() : threads) << ") return;\n";
    os << "  aotc_i64 r = i, c[" << std::max<int64_t>(ot.rank(), 1) << "];\n";
    for (int64_t d = ot.rank(); d-- > 0;) os << "  c[" << d << "] = r % " << ot.sizes[d] << "; r /= " << ot.sizes[d] << ";\n";
    os << body << "}\n";
    return addKernel(os.str(), n);
  }

  /// A GEMM operand's cuBLAS layout: transposed or not, and buffer, offset,
  /// leading dimension and batch stride; a dense copy when cuBLAS cannot
  /// address it.  `d` is the first of its two matrix dims; the batch stride
  /// is the stride of dim 0 when d is 1.
  struct GemmOperand {
    bool trans = false;
    plan::MatrixOperand m;
  };
  GemmOperand gemmOperand(ValueId v, const Node& n, size_t d) {
    const TensorType& t = g.type(v);
    const int64_t rows = t.sizes[d], cols = t.sizes[d + 1], sr = t.strides[d], sc = t.strides[d + 1];
    GemmOperand o{false, {root[v], t.offset, 0, d ? t.strides[0] : 0}};
    if (sc == 1 && sr >= std::max<int64_t>(1, cols)) {
      o.m.ld = sr;
    } else if (sr == 1 && sc >= std::max<int64_t>(1, rows)) {
      o.trans = true;
      o.m.ld = sc;
    } else {
      denseCopy(v, n);
      o = GemmOperand{false, {dense_[v], 0, std::max<int64_t>(1, cols), d ? rows * cols : 0}};
    }
    return o;
  }

  plan::ConvTensor tensorDesc(ValueId v) {
    const TensorType& t = g.type(v);
    return plan::ConvTensor{root[v], t.offset, t.sizes, t.strides};
  }

  void conv(const Node& n) {
    Window2d w = window2d(Attrs{{"kernel", Ints{1}},
                                {"stride", hasAttr(n.attrs, "stride") ? attrInts(n.attrs, "stride") : Ints{1}},
                                {"padding", hasAttr(n.attrs, "padding") ? attrInts(n.attrs, "padding") : Ints{0}},
                                {"dilation", hasAttr(n.attrs, "dilation") ? attrInts(n.attrs, "dilation") : Ints{1}}});
    const TensorType& ot = g.type(n.outputs[0]);
    plan::Conv st;
    st.node = n.loc.node;
    st.pad = {w.ph, w.pw};
    st.stride = {w.sh, w.sw};
    st.dilation = {w.dh, w.dw};
    st.groups = hasAttr(n.attrs, "groups") ? attrInt(n.attrs, "groups") : 1;
    st.dtype = ot.dtype;
    auto filter = [&](ValueId v) {  // cuDNN filters are packed NCHW
      if (!g.type(v).isContiguous()) {
        denseCopy(v, n);
        const TensorType& t = g.type(v);
        return plan::ConvTensor{dense_[v], 0, t.sizes, TensorType::contiguousStrides(t.sizes)};
      }
      return tensorDesc(v);
    };
    ValueId out = n.outputs[0];
    st.out = plan::ConvTensor{root[out], ot.offset, ot.sizes, ot.strides};
    if (n.op == OpKind::Conv2d) {
      st.call = plan::ConvCall::Forward;
      st.a = tensorDesc(n.inputs[0]);
      st.b = filter(n.inputs[1]);
    } else if (n.op == OpKind::Conv2dBackwardInput) {
      st.call = plan::ConvCall::BackwardData;
      st.a = tensorDesc(n.inputs[0]);
      st.b = filter(n.inputs[1]);
    } else {
      st.call = plan::ConvCall::BackwardFilter;
      st.a = tensorDesc(n.inputs[0]);
      st.b = tensorDesc(n.inputs[1]);
    }
    steps.push_back(st);
  }

  std::string constantKernel(const Node& n) {
    const TensorType& ot = g.type(n.outputs[0]);
    std::ostringstream os;
    os << banner(n, g);
    os << "extern \"C\" __global__ void @KERNEL@(" << storageType(ot.dtype) << "* __restrict__ out) {\n";
    os << "  aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
    os << "  if (i >= " << ot.numel() << ") return;\n";
    os << "  out[i] = (" << storageType(ot.dtype) << ")" << literal(attrFloat(n.attrs, "value"), ot.dtype) << ";\n}\n";
    return addKernel(os.str(), n);
  }

  /// A dense copy of `v` (for GEMM operands cuBLAS cannot address).
  ValueId denseCopy(ValueId v, const Node& n) {
    Node c{OpKind::Clone, {v}, {}, {}, n.loc, n.phase, 0, {}};
    TensorType t = TensorType::contiguous(g.type(v).dtype, g.type(v).sizes);
    std::string name = g.values[v].name + ".dense";
    buffers.push_back(plan::Buffer{name, plan::BufferKind::Alloc, layout(t), "", "", t.numel() * dtypeSize(t.dtype), -1});
    std::vector<ValueId> leaves;
    int64_t threads = 0;
    std::string k = pointwiseKernel(c, t, leaves, threads);
    launch(k, leaves, kNoValue, threads, name);
    dense_[v] = name;
    return v;
  }

  /// mm (d = 0) and bmm (d = 1, dim 0 the batch).  Row-major C = A B is
  /// column-major C^T = B^T A^T: cuBLAS's A is our B and its B our A.
  void gemm(const Node& n, size_t d) {
    ValueId A = n.inputs[0], B = n.inputs[1];
    const TensorType &ta = g.type(A), &tc = g.type(n.outputs[0]);
    const GemmOperand a = gemmOperand(A, n, d), b = gemmOperand(B, n, d);
    plan::Gemm st;
    st.call = d ? plan::GemmCall::GemmStridedBatchedEx : plan::GemmCall::GemmEx;
    st.node = n.loc.node;
    st.transa = b.trans;
    st.transb = a.trans;
    st.m = tc.sizes[d + 1];
    st.n = tc.sizes[d];
    st.k = ta.sizes[d + 1];
    st.batch = d ? tc.sizes[0] : 1;
    st.A = b.m;
    st.B = a.m;
    st.C = {root[n.outputs[0]], tc.offset, std::max<int64_t>(1, tc.sizes[d + 1]), d ? tc.sizes[1] * tc.sizes[2] : 0};
    st.dtype = tc.dtype;
    if (auto it = gemmBias.find(g.values[n.outputs[0]].node); it != gemmBias.end()) {
      AOTC_CHECK(!d, "a bias epilogue on a batched GEMM");
      // cuBLASLt in column-major terms: the bias runs along the m dimension.
      st.call = plan::GemmCall::LtMatmulBias;
      st.bias = plan::MatrixOperand{root[it->second], g.type(it->second).offset, 1, 0};
    }
    steps.push_back(st);
  }

  void run() {
    for (const GraphInput& in : g.inputs) {
      declare(in.value, plan::BufferKind::Input, inputRoleName(in.role));
      root[in.value] = bufName[in.value];
    }
    planFusion();
    for (size_t idx = 0; idx < g.nodes.size(); ++idx) {
      const Node& n = g.nodes[idx];
      if (inlined[idx]) continue;  // computed inside its consumer's kernel
      if (int32_t gi = groupOf[idx]; gi >= 0) {
        const RowGroup& G = groups[static_cast<size_t>(gi)];
        if (static_cast<int32_t>(idx) == G.seed) emitRowGroup(G);
        if (!G.lowerViews.count(static_cast<int32_t>(idx))) continue;  // computed by the group's kernel
      }
      const OpInfo& info = opInfo(n.op);
      if (n.op == OpKind::EpilogueCopy) {
        ValueId dst = n.inputs[0];
        Node c = n;
        c.inputs = {n.inputs[1]};
        TensorType target = g.type(dst);
        plan::Epilogue ep{g.values[dst].name, (n.tags & kMustBeInForward) ? plan::Phase::Forward : plan::Phase::Backward, {}};
        if (int32_t d = regionSource(n); d >= 0) {
          const Node& sc = g.nodes[static_cast<size_t>(d)];
          OpKind view = *opRule(sc.op)->scatters;
          target = inferTypes(view, {target}, sc.attrs)[0];  // the region, over the caller's buffer
          c.inputs = {sc.inputs[1]};
          ep.region = plan::ViewOp{opName(view), sc.attrs};
        }
        std::vector<ValueId> leaves;
        int64_t threads = 0;
        std::string k = pointwiseKernel(c, target, leaves, threads);
        launch(k, leaves, dst, threads);
        std::get<plan::Launch>(steps.back()).epilogue = ep;
        continue;
      }
      ValueId out = n.outputs.at(0);
      if (auto it = biasAdds.find(static_cast<int32_t>(idx)); it != biasAdds.end()) {
        // Computed by the GEMM's bias epilogue, in the GEMM's output buffer.
        ValueId prod = g.nodes[static_cast<size_t>(it->second.first)].outputs[0];
        declare(out, plan::BufferKind::View, root[prod]);
        root[out] = root[prod];
        continue;
      }
      if (info.category == OpCategory::View) {
        ensureView(out);  // pointer arithmetic on its root buffer (perhaps declared early for a row group)
        continue;
      }
      const TensorType& ot = g.type(out);
      for (ValueId o : n.outputs) {
        declare(o, plan::BufferKind::Alloc);
        root[o] = bufName[o];
      }
      if (info.category == OpCategory::Pointwise || isScatterExpr(n.op)) {  // Note [Scatter expressions]
        std::vector<ValueId> leaves;
        int64_t threads = 0;
        std::string k = pointwiseKernel(n, ot, leaves, threads);
        launch(k, leaves, out, threads);
        continue;
      }
      if (reductionRule(n.op)) {
        std::vector<ValueId> leaves = n.inputs;
        std::string k = reductionKernel(n, leaves);
        launch(k, leaves, out, reductionThreads(g.type(n.inputs[0]), n, ot));
        continue;
      }
      // Every other op: as its row says (Note [Op rows]).
      const OpRule* row = opRule(n.op);
      AOTC_CHECK(row, "cannot lower ", info.name);
      switch (row->cuda) {
        case aotc::Lowering::Element: launchAll(elementKernel(n, row->body(g, n)), n, ot.numel()); break;
        case aotc::Lowering::Fill: launch(constantKernel(n), {}, out, ot.numel()); break;
        case aotc::Lowering::Gemm: gemm(n, ot.rank() == 3 ? 1 : 0); break;
        case aotc::Lowering::Conv: conv(n); break;
        default: AOTC_CHECK(false, "cannot lower ", info.name);
      }
    }
  }

  std::map<ValueId, std::string> dense_;
};

/// Note [Memory plan]: every owned buffer of a program lives in one arena.
/// A buffer is live from the first step that touches it to the last (to the
/// end of the program if it is a program output: the forward's saved tensors
/// stay in the forward arena until the backward has run).  Offsets are
/// assigned largest-first at the lowest address that no buffer with an
/// overlapping lifetime occupies; alignment is 256 bytes.
void planArena(plan::Program& prog) {
  std::map<std::string, std::pair<size_t, size_t>> live;  // alloc name -> [first, last] step
  std::map<std::string, std::string> rootOf;
  for (const plan::Buffer& b : prog.buffers) rootOf[b.name] = b.kind == plan::BufferKind::View ? b.base : b.name;
  auto touch = [&](const std::string& buf, size_t step) {
    std::string r = rootOf.count(buf) ? rootOf[buf] : buf;
    auto it = live.find(r);
    if (it == live.end()) live[r] = {step, step};
    else it->second.second = std::max(it->second.second, step);
  };
  for (size_t i = 0; i < prog.steps.size(); ++i)
    for (const std::string& b : plan::stepBuffers(prog.steps[i])) touch(b, i);
  for (const plan::ProgramOutput& o : prog.outputs) touch(o.buffer, prog.steps.size());
  struct Item {
    std::string name;
    int64_t bytes;
    size_t first, last;
  };
  std::vector<Item> items;
  for (const plan::Buffer& b : prog.buffers)
    if (b.kind == plan::BufferKind::Alloc) {
      auto it = live.find(b.name);
      auto range = it == live.end() ? std::pair<size_t, size_t>{0, 0} : it->second;
      items.push_back({b.name, std::max<int64_t>(b.bytes, 1), range.first, range.second});
    }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.bytes > b.bytes; });
  constexpr int64_t kAlign = 256;
  std::vector<std::pair<const Item*, int64_t>> placed;
  std::map<std::string, int64_t> offset;
  int64_t arena = 0;
  for (const Item& it : items) {
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (auto& [other, off] : placed)
      if (!(other->last < it.first || it.last < other->first)) busy.push_back({off, off + other->bytes});
    std::sort(busy.begin(), busy.end());
    int64_t at = 0;
    for (auto& [b, e] : busy) {
      if (at + it.bytes <= b) break;
      at = std::max(at, (e + kAlign - 1) / kAlign * kAlign);
    }
    placed.push_back({&it, at});
    offset[it.name] = at;
    arena = std::max(arena, at + it.bytes);
  }
  for (plan::Buffer& b : prog.buffers)
    if (b.kind == plan::BufferKind::Alloc) b.arena_offset = offset[b.name];
  prog.arena_bytes = (arena + kAlign - 1) / kAlign * kAlign;
  int64_t total = 0;
  for (const Item& it : items) total += it.bytes;
  prog.alloc_bytes_unplanned = total;
}

plan::Program lowerProgram(const Graph& g, std::map<std::string, KernelSource>& kernels, const std::string& ir) {
  Lowering l(g, kernels);
  l.run();
  plan::Program prog;
  prog.ir = ir;
  prog.buffers = std::move(l.buffers);
  prog.steps = std::move(l.steps);
  for (auto& o : g.outputs) prog.outputs.push_back({outputRoleName(o.role), g.values[o.value].name});
  planArena(prog);
  return prog;
}

}  // namespace

CodegenResult generateCuda(const Partition& p) {
  CodegenResult r;
  r.forward = lowerProgram(p.forward, r.kernels, "forward.ir");
  r.backward = lowerProgram(p.backward, r.kernels, "backward.ir");
  return r;
}

}  // namespace aotc
