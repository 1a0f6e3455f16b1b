//===- kernels.cpp - Kernel text (codegen stage 2) -------------------------===//
//
// The CUDA C++ of every kernel the code generator writes itself: fused
// elementwise kernels (Note [Fusion by inlining]), reductions, row groups
// (Note [Row groups]), fills, and the element kernels around op rows' bodies
// (Note [Op rows]).  Reads the fusion plan; adds each text to the kernel
// table and returns its name.  Note [Codegen stages] in lowering.h.
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <functional>
#include <sstream>

#include "aotc/codegen/fusion.h"

#include "aotc/ir/host_tensor.h"
#include "aotc/ops/kernel_text.h"
#include "aotc/ops/ops.h"
#include "aotc/ops/pointwise.h"
#include "aotc/ops/reductions.h"
#include "aotc/ops/rules.h"
#include "lowering.h"

namespace aotc::cudagen {

using ktext::at;
using ktext::computeType;
using ktext::coords;
using ktext::literal;
using ktext::storageType;
using ktext::valueCast;

namespace {

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

/// Note [Float math on integers]: an op whose result is floating computes in
/// the result's type, as ATen does (true division, exp of an int, atan2 of a
/// float and a double): an operand of another compute type is converted
/// first.  Without it `x / 3` over int64 was C++'s integer division (a wrong
/// answer, no error) and exp of an int matched no one prelude overload.
/// Where's condition stays bool.
std::string pointwiseExpr(const Graph& g, const Node& n, std::vector<std::string> a) {
  // A cast is that conversion itself.
  if (n.op == OpKind::EpilogueCopy || n.op == OpKind::Cast || n.outputs.empty()) return pointwiseExpr(n.op, a);
  const DType out = g.type(n.outputs[0]).dtype;
  if (isFloating(out)) {
    const std::string ct = computeType(out);
    for (size_t i = 0; i < a.size() && i < n.inputs.size(); ++i) {
      if (n.op == OpKind::Where && i == 0) continue;
      if (computeType(g.type(n.inputs[i]).dtype) != ct) a[i] = "((" + ct + ")" + a[i] + ")";
    }
  }
  return pointwiseExpr(n.op, a);
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

/// The head of a loop over a reduction's `nred` elements: strided over the
/// block's threads, or serial in one thread (not unrolled when asked).
std::string reduceLoopHead(bool blockStrided, int64_t nred, bool noUnroll = false) {
  if (blockStrided) return "  for (aotc_i64 j = threadIdx.x; j < " + std::to_string(nred) + "; j += blockDim.x) {\n    aotc_i64 q = j;\n";
  return std::string(noUnroll ? "  #pragma unroll 1\n" : "") + "  for (aotc_i64 j = 0; j < " + std::to_string(nred) + "; ++j) {\n    aotc_i64 q = j;\n";
}

/// Combines the block's partial results `acc` in `part` with a fixed tree
/// (deterministic); `combine` is aotc_max/aotc_min, or empty for a sum.
std::string blockTree(int64_t block, const std::string& combine) {
  std::string both = combine.empty() ? "part[threadIdx.x] + part[threadIdx.x + s]" : combine + "(part[threadIdx.x], part[threadIdx.x + s])";
  return "  part[threadIdx.x] = acc;\n  __syncthreads();\n  for (unsigned s = " + std::to_string(block / 2) +
         "; s > 0; s >>= 1) {\n    if (threadIdx.x < s) part[threadIdx.x] = " + both + ";\n    __syncthreads();\n  }\n";
}

/// One step of decomposing a linear index `r` (< the product of the sizes
/// still to come) into coordinates: `c[d] = r % size; r /= size;`.  Note
/// [Dynamic codegen]: in a dynamic-shape kernel the outermost coordinate is
/// `r` itself, sparing a division by a run-time size (static kernels keep
/// their text, which the static_plans test holds).
std::string coordStep(const std::string& indent, const char* c, int64_t d, const char* r, int64_t size, bool outermost, bool dynamic) {
  const std::string cd = std::string(c) + "[" + std::to_string(d) + "]";
  if (outermost && dynamic) return indent + cd + " = " + r + ";\n";
  return indent + cd + " = " + r + " % " + std::to_string(size) + "; " + r + " /= " + std::to_string(size) + ";\n";
}

Reduced reduced(const TensorType& it, const Ints& dims) {
  Reduced r{it.sizes, {}, 1};
  for (int64_t d = 0; d < it.rank(); ++d)
    if (std::binary_search(dims.begin(), dims.end(), d)) {
      r.kept[static_cast<size_t>(d)] = 1;
      r.dims.push_back(d);
      r.n *= it.sizes[static_cast<size_t>(d)];
    }
  return r;
}

/// A kernel's first line: "// aotc kernel: " and the ops it computes.
std::string opsBanner(const std::vector<std::string>& ops) {
  std::string b = "// aotc kernel:";
  for (size_t k = 0; k < ops.size(); ++k) b += (k ? ", " : " ") + ops[k];
  return b;
}

/// Note [Reduction schedules]: in a scheduled kernel (output i, chunk sp),
/// the coordinates c[] of output i's kept dims, then the loop over the
/// chunk's elements j (a block's threads, or a Column block's rows, apart)
/// with c[] of the reduced dims, for the loop's body to follow.
std::string scheduledLoopHead(const TensorType& it, const Reduced& r, const ReductionSchedule& s) {
  const bool column = s.kind == ReductionSchedule::Column;
  std::ostringstream os;
  os << "    aotc_i64 c[" << std::max<int64_t>(it.rank(), 1) << "];\n    { aotc_i64 r = i;\n";
  int64_t outerKept = 0;
  while (outerKept < it.rank() && r.kept[static_cast<size_t>(outerKept)] == 1) ++outerKept;
  for (int64_t d = it.rank(); d-- > 0;)
    if (r.kept[static_cast<size_t>(d)] != 1) os << coordStep("      ", "c", d, "r", r.kept[static_cast<size_t>(d)], d == outerKept, false);
    else if (!std::binary_search(r.dims.begin(), r.dims.end(), d)) os << "      c[" << d << "] = 0;\n";
  os << "    }\n";
  os << "    aotc_i64 j1 = sp * " << s.chunk << " + " << s.chunk << ";\n    if (j1 > " << r.n << ") j1 = " << r.n << ";\n";
  os << "    for (aotc_i64 j = sp * " << s.chunk << " + " << (column ? "row" : "threadIdx.x") << "; j < j1; j += "
     << (column ? s.block / 32 : s.block) << ") {\n";
  os << "    aotc_i64 q = j;\n";
  for (size_t k = r.dims.size(); k-- > 0;)
    os << coordStep("    ", "c", r.dims[k], "q", it.sizes[static_cast<size_t>(r.dims[k])], k == 0, false);
  return os.str();
}

/// Note [Row cache]: whether an operand with strides `st` (broadcast to a
/// row group's shape) differs between rows and along them: the rows' data,
/// not a weight broadcast over the rows nor a per-row statistic.
bool rowVarying(const Ints& st, const Ints& rowShape, const Ints& dims) {
  bool alongRow = false, acrossRows = false;
  for (size_t d = 0; d < st.size(); ++d) {
    if (st[d] == 0) continue;
    if (std::binary_search(dims.begin(), dims.end(), static_cast<int64_t>(d))) alongRow = true;
    else if (rowShape[d] != 1) acrossRows = true;
  }
  return alongRow && acrossRows;
}

std::string joinCoords(const std::vector<std::string>& c) {
  std::string k;
  for (const std::string& s : c) k += s + ",";
  return k;
}

/// Note [Vectorized access]: an elementwise kernel whose output is float32,
/// float16 or bfloat16, dense, starts at a multiple of four elements and
/// whose innermost size is a multiple of four computes four consecutive
/// elements per thread and stores them with one store: 16 bytes (float4)
/// for float32, 8 bytes (two __half2 / __nv_bfloat162) for the 16-bit types.
/// An operand of those dtypes whose four elements are consecutive and
/// aligned (innermost stride 1, every other stride and the offset multiples
/// of four; buffers start 256-byte aligned) is read with one such load,
/// widened to float4; a broadcast operand with one load; any other with
/// four.  The kernels compute in float either way (Note [Half precision
/// values]), and a store rounds to nearest even as the scalar store does, so
/// the vector path and the scalar path compute the same bits.
constexpr int64_t kVec = 4;
bool vectorDtype(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }
bool vectorStore(const TensorType& ot) {
  return vectorDtype(ot.dtype) && ot.rank() >= 1 && ot.isContiguous() && ot.offset % kVec == 0 && ot.sizes.back() % kVec == 0 &&
         ot.numel() >= kVec;
}
/// Lanes along dim `lane` (the last when -1; Note [Channels-last kernels]).
bool vectorLoadable(const TensorType& b, int64_t lane = -1) {
  const size_t l = lane < 0 ? b.sizes.size() - 1 : static_cast<size_t>(lane);
  if (!vectorDtype(b.dtype) || b.strides[l] != 1 || b.offset % kVec != 0) return false;
  for (size_t d = 0; d < b.sizes.size(); ++d)
    if (d != l && b.sizes[d] != 1 && b.strides[d] % kVec != 0) return false;
  return true;
}

// Note [Channels-last kernels]: a pointwise kernel whose result is stored
// channels-last (Note [Channels last]) visits its elements in the order
// they lie in memory -- c[1] (the channel) fastest, then c[3], c[2], c[0]
// -- so consecutive threads write consecutive addresses, and its four
// lanes are four consecutive channels: one 16-byte (float32) or 8-byte
// (16-bit) store, and one load of each operand stored the same way.  An
// operand stored NCHW is read through its strides, which is the transpose
// at an island's border, paid once where the value is written.
bool channelsLastStore(const TensorType& ot) {
  return isChannelsLast(ot) && vectorDtype(ot.dtype) && ot.sizes[1] % kVec == 0;
}

/// Note [Reduction precision]: as PyTorch's kernels on a GPU, floating
/// reductions accumulate in float (float32, float16, bfloat16) or double
/// (float64), integers in 64 bits.  The order is a tree (threads' strided
/// partial sums, then a fixed shared-memory tree, then chunks in order),
/// which keeps float32's error to about log2(n) roundings instead of n.
/// (Until issue 34 float32 accumulated in double; FP64 runs at 1/32 to 1/64
/// of FP32 on GPUs other than the H100 class.)
const char* accumType(DType d) { return !isFloating(d) ? "long long" : d == DType::F64 ? "double" : "float"; }

/// Note [Size scalars] in a kernel of a dynamic-shape artifact (Note
/// [Dynamic codegen]): the value from its integers, as Builder::sizeScalar
/// computes it, so that the integers can become expressions.
std::string sizeScalarText(const Node& n, DType d) {
  char scale[40];
  std::snprintf(scale, sizeof scale, "%.17g", attrFloat(n.attrs, "size_scale"));
  return std::string("((") + computeType(d) + ")(" + scale + " * ((double)" + std::to_string(attrInt(n.attrs, "size_num")) + " / (double)" +
         std::to_string(attrInt(n.attrs, "size_den")) + ")))";
}

/// Whether the constant `n` (node of `g`) is a size scalar that varies with
/// the sizes (Note [Size scalars]); only in a dynamic program, whose
/// `decide` graph holds the expressions at n's place.  One whose integers
/// are proportional (2048*batch / 512*batch) is the same double at every
/// size, and is written as the static literal (a division by a run-time
/// double costs ptxas a long inline sequence).
bool sizeScalarVaries(const Graph* decide, const Graph& g, const Node& n) {
  if (!decide || !n.attrs.count("size_num")) return false;
  const Node& dn = decide->nodes.at(static_cast<size_t>(&n - g.nodes.data()));
  auto expr = [&](const char* key) {
    auto it = dn.symAttrs.find(key);
    return it != dn.symAttrs.end() && !it->second.empty() ? it->second[0] : sym::Expr(attrInt(dn.attrs, key));
  };
  // num / den = n0 / d0 (their values at the hints) at every size.
  return !(expr("size_num") * attrInt(dn.attrs, "size_den") == expr("size_den") * attrInt(dn.attrs, "size_num"));
}

}  // namespace

std::string nodeName(const Node& n) { return n.loc.node.empty() ? std::string(opName(n.op)) : n.loc.node; }

/// Builds the expression tree of a kernel: leaves become parameters.
struct KernelEmitter::ExprCtx {
  std::vector<ValueId> leaves;
  /// (value, coordinates) -> variable: a value read at several coordinate
  /// sets (a scatter's source) is computed once per set.
  std::map<std::pair<ValueId, std::string>, std::string> memo;
  std::ostringstream code;
  int tmp = 0;
  std::vector<std::string> nodes;
  std::vector<int32_t> ids;      ///< the nodes of the program it computes
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
  int64_t laneDim = -1;  ///< the dim the lanes step along (-1: the last)
  /// Note [Row cache]: in a row group's kernel that keeps its rows in
  /// registers, the group's shape, row coordinates, kept and reduced dims
  /// and the elements per thread (0: no cache); per operand its array, the
  /// operands the passes written so far loaded, and those the current one loads.
  const Ints* cacheShape = nullptr;
  const std::vector<std::string>* cacheCoords = nullptr;
  const Ints* cacheRows = nullptr;
  const Ints* cacheDims = nullptr;
  int64_t cacheLen = 0;
  std::map<ValueId, std::string> cacheArrays;
  std::set<ValueId> cacheFilled, cacheFilling;
  /// Note [Reductions that store their input]: values the kernel writes
  /// besides its output (parameters st0, st1, ... after the operands).
  std::vector<ValueId> stores;
  std::string cacheDecls;
};

bool KernelEmitter::computedInline(int32_t node, const ExprCtx& x) const {
  return node >= 0 && (plan_.inlined[static_cast<size_t>(node)] || (x.exprNodes && x.exprNodes->count(node)));
}

/// The variable holding `v` at coordinates `c` of a tensor of shape `shape`.
std::string KernelEmitter::emitValue(ValueId v, const Ints& shape, const std::vector<std::string>& c, ExprCtx& x) {
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
    if (n.op == OpKind::Constant && sizeScalarVaries(b_.decide, g, n)) {
      var = sizeScalarText(n, val.type.dtype);
    } else if (n.op == OpKind::Constant) {
      var = literal(attrFloat(n.attrs, "value"), val.type.dtype);
      var = "((" + std::string(ct) + ")" + var + ")";
    } else if (isScatterExpr(n.op)) {
      var = scatterExpr(n, shape, c, x);
    } else {
      std::vector<std::string> args;
      for (ValueId in : n.inputs) args.push_back(emitValue(in, shape, c, x));
      var = "t" + std::to_string(x.tmp++);
      x.code << x.indent << ct << " " << var << " = " << valueCast(val.type.dtype) << pointwiseExpr(g, n, args) << ";\n";
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
    // Note [Row cache]: a row group's operand kept in registers.
    const bool cached = x.cacheLen > 0 && shape == *x.cacheShape && (x.lanes.empty() ? c == *x.cacheCoords : lane >= 0) &&
                        rowVarying(b.strides, *x.cacheRows, *x.cacheDims);
    if (lane >= 0 && vectorLoadable(b, x.laneDim)) {
      // One 16-byte load serves the four lanes.
      const std::pair<ValueId, std::string> vkey{v, "#vec"};
      auto vit = x.memo.find(vkey);
      if (vit == x.memo.end()) {
        std::string vv = "v" + std::to_string(x.tmp++);
        if (cached) {
          auto [a, fresh] = x.cacheArrays.emplace(v, "rc" + std::to_string(x.cacheArrays.size()));
          if (fresh) x.cacheDecls += cat("  float4 ", a->second, "[", x.cacheLen, "];\n");
          if (x.cacheFilled.count(v)) {
            vv = a->second + "[u]";
          } else {
            x.code << x.indent << "float4 " << vv << " = aotc_ld4(in" << p << " + " << at(b, x.lanes[0]) << ");\n";
            x.code << x.indent << a->second << "[u] = " << vv << ";\n";
            x.cacheFilling.insert(v);
          }
        } else {
          x.code << x.indent << "float4 " << vv << " = aotc_ld4(in" << p << " + " << at(b, x.lanes[0]) << ");\n";
        }
        vit = x.memo.emplace(vkey, vv).first;
      }
      var = vit->second + "." + "xyzw"[lane];
    } else if (cached) {
      // Loaded by the first pass that reads it, kept (a slot per lane).
      auto [a, fresh] = x.cacheArrays.emplace(v, "rc" + std::to_string(x.cacheArrays.size()));
      const int64_t width = std::max<int64_t>(1, static_cast<int64_t>(x.lanes.size()));
      if (fresh) x.cacheDecls += cat("  ", ct, " ", a->second, "[", x.cacheLen * width, "];\n");
      const std::string slot = a->second + (width > 1 ? cat("[u * ", width, " + ", lane, "]") : std::string("[u]"));
      if (x.cacheFilled.count(v)) {
        var = slot;
      } else {
        var = "t" + std::to_string(x.tmp++);
        x.code << x.indent << ct << " " << var << " = (" << ct << ")in" << p << "[" << at(b, c) << "];\n";
        x.code << x.indent << slot << " = " << var << ";\n";
        x.cacheFilling.insert(v);
      }
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
std::string KernelEmitter::scatterExpr(const Node& n, const Ints& shape, const std::vector<std::string>& c, ExprCtx& x) {
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
void KernelEmitter::noteNode(ExprCtx& x, const Node& n) {
  std::string who = nodeName(n), op = opName(n.op);
  if (std::find(x.nodes.begin(), x.nodes.end(), who) == x.nodes.end()) x.nodes.push_back(who);
  if (&n >= g.nodes.data() && &n < g.nodes.data() + g.nodes.size()) {  // not a node made up for the kernel
    auto id = static_cast<int32_t>(&n - g.nodes.data());
    if (std::find(x.ids.begin(), x.ids.end(), id) == x.ids.end()) x.ids.push_back(id);
  }
  if (std::find(x.ops.begin(), x.ops.end(), op) == x.ops.end()) x.ops.push_back(op);
}

std::string KernelEmitter::kernelHeader(const std::vector<std::string>& ops, DType outType, const std::vector<ValueId>& leaves,
                                        const std::vector<ValueId>& stores) {
  std::ostringstream os;
  os << opsBanner(ops) << "\nextern \"C\" __global__ void @KERNEL@(" << storageType(outType) << "* __restrict__ out";
  for (size_t i = 0; i < leaves.size(); ++i)
    os << ", const " << storageType(g.type(leaves[i]).dtype) << "* __restrict__ in" << i;
  for (size_t i = 0; i < stores.size(); ++i) os << ", " << storageType(g.type(stores[i]).dtype) << "* __restrict__ st" << i;
  os << ") {\n";
  return os.str();
}

KernelEmitter::Kernel KernelEmitter::pointwise(const Node& root, const TensorType& ot) {
  ExprCtx x;
  noteNode(x, root);
  const size_t rank = static_cast<size_t>(ot.rank());
  std::vector<std::string> c = coords(rank);
  // Note [Channels-last kernels]: the dims from fastest to slowest.
  const bool nhwc = !b_.dynamic() && isChannelsLast(ot);
  Ints order;
  for (int64_t d = ot.rank(); d-- > 0;) order.push_back(d);
  if (nhwc) order = {1, 3, 2, 0};
  const bool vec = !b_.dynamic() && (nhwc ? channelsLastStore(ot) : vectorStore(ot));  // Note [Dynamic codegen]
  x.laneDim = nhwc ? 1 : -1;
  if (vec)
    for (int64_t k = 0; k < kVec; ++k) {
      std::vector<std::string> l = c;
      std::string& step = nhwc ? l[1] : l.back();
      if (k) step = "(" + step + " + " + std::to_string(k) + ")";
      x.lanes.push_back(l);
    }
  auto value = [&](const std::vector<std::string>& at) {
    if (isScatterExpr(root.op)) return scatterExpr(root, ot.sizes, at, x);
    std::vector<std::string> args;
    for (ValueId in : root.inputs) args.push_back(emitValue(in, ot.sizes, at, x));
    if (root.op == OpKind::EpilogueCopy) return pointwiseExpr(OpKind::Clone, args);
    return pointwiseExpr(g, root, args);
  };
  std::vector<std::string> e;
  if (vec)
    for (auto& l : x.lanes) e.push_back(value(l));
  else
    e.push_back(value(c));
  const int64_t threads = vec ? ot.numel() / kVec : ot.numel();
  // Note [Pointwise grids]: a static kernel strides over its elements with
  // a grid sized for the machine (ProgramBuilder::launchPointwise); the
  // stride must not overflow a 32-bit index (Note [32-bit indexing]).
  const int64_t stride = b_.strideThreads() > 0 ? b_.strideThreads() : threads;
  const bool strided = !b_.dynamic() && (b_.wideIndex() || threads + stride < (int64_t{1} << 31));
  std::ostringstream os;
  os << kernelHeader(x.ops, ot.dtype, x.leaves);
  std::string in = "  ";
  if (strided) {
    os << "  for (aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x; i < " << threads
       << "; i += (aotc_i64)gridDim.x * blockDim.x) {\n";
    in = "    ";
  } else {
    os << "  aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
    os << "  if (i >= " << threads << ") return;\n";
  }
  os << in << "aotc_i64 r = i" << (vec ? " * " + std::to_string(kVec) : std::string()) << ", c[" << std::max<size_t>(rank, 1) << "];\n";
  for (int64_t d : order) os << coordStep(in, "c", d, "r", ot.sizes[static_cast<size_t>(d)], d == order.back(), b_.dynamic());
  std::string code = x.code.str();
  if (strided)  // the expression's lines, one level in
    for (size_t p = 0; p < code.size(); p = code.find('\n', p) + 1) {
      code.insert(p, "  ");
      if (code.find('\n', p) == std::string::npos) break;
    }
  os << code;
  if (vec) {
    os << in << "aotc_st4(out + " << at(ot, c) << ", make_float4(";
    for (size_t k = 0; k < e.size(); ++k) os << (k ? ", " : "") << "(float)" << e[k];
    os << "));\n";
  } else {
    os << in << "out[" << at(ot, c) << "] = (" << storageType(ot.dtype) << ")(" << computeType(ot.dtype) << ")" << e[0] << ";\n";
  }
  os << (strided ? "  }\n}\n" : "}\n");
  Kernel k;
  k.name = b_.addKernel(os.str(), x.nodes, x.ids);
  k.leaves = x.leaves;
  k.threads = threads;
  k.vector = vec ? kVec : 1;
  k.strided = strided;
  return k;
}

KernelEmitter::Kernel KernelEmitter::castGroup(const std::vector<const Node*>& ns) {
  ExprCtx x;
  for (const Node* n : ns) noteNode(x, *n);
  std::ostringstream os;
  os << opsBanner(x.ops) << " (" << ns.size() << " tensors)\nextern \"C\" __global__ void @KERNEL@(";
  for (size_t i = 0; i < ns.size(); ++i)
    os << (i ? ", " : "") << storageType(g.type(ns[i]->outputs[0]).dtype) << "* __restrict__ out" << i;
  for (size_t i = 0; i < ns.size(); ++i) os << ", const " << storageType(g.type(ns[i]->inputs[0]).dtype) << "* __restrict__ in" << i;
  os << ") {\n";
  int64_t first = 0;
  for (size_t i = 0; i < ns.size(); ++i) {
    const TensorType &it = g.type(ns[i]->inputs[0]), &ot = g.type(ns[i]->outputs[0]);
    const int64_t blocks = std::max<int64_t>(1, (ot.numel() + kBlock - 1) / kBlock);
    const std::string load = std::string("(") + computeType(it.dtype) + ")in" + std::to_string(i);
    const std::string store = std::string("(") + storageType(ot.dtype) + ")(" + computeType(ot.dtype) + ")";
    os << "  if (blockIdx.x < " << first + blocks << ") {\n";
    os << "    aotc_i64 i = (aotc_i64)(blockIdx.x - " << first << ") * blockDim.x + threadIdx.x;\n";
    os << "    if (i >= " << ot.numel() << ") return;\n";
    if (it.strides == ot.strides && ot.storageSpan() == ot.numel()) {
      // The same dense layout on both sides: element i of the storage order.
      os << "    out" << i << "[i + " << ot.offset << "] = " << store << load << "[i + " << it.offset << "];\n";
    } else {
      const size_t rank = static_cast<size_t>(ot.rank());
      std::vector<std::string> c = coords(rank);
      os << "    aotc_i64 r = i, c[" << std::max<size_t>(rank, 1) << "];\n";
      for (int64_t d = ot.rank(); d-- > 0;) os << coordStep("    ", "c", d, "r", ot.sizes[static_cast<size_t>(d)], d == 0, false);
      os << "    out" << i << "[" << at(ot, c) << "] = " << store << load << "[" << at(it, c) << "];\n";
    }
    os << "    return;\n  }\n";
    first += blocks;
  }
  os << "}\n";
  Kernel k;
  k.name = b_.addKernel(os.str(), x.nodes, x.ids);
  for (const Node* n : ns) k.leaves.push_back(n->inputs[0]);
  k.threads = first * kBlock;
  return k;
}

/// A reduction over `dim`, with its input's expression computed in the loop.
KernelEmitter::Kernel KernelEmitter::reduction(const Node& n) {
  const TensorType& it = g.type(n.inputs[0]);
  const TensorType& ot = g.type(n.outputs[0]);
  Ints dims = reductionDims(n.attrs, it.rank());
  const Reduced red = reduced(it, dims);
  const Ints& keptSizes = red.kept;
  const Ints& redDims = red.dims;
  const int64_t nred = red.n;
  const char* acc = accumType(ot.dtype);
  const ReductionRule& rs = *reductionRule(n.op);
  ExprCtx x;
  noteNode(x, n);
  x.indent = "    ";
  std::vector<std::string> c = coords(static_cast<size_t>(it.rank()));
  const auto sched = plan_.schedules.find(static_cast<int32_t>(&n - g.nodes.data()));
  const int32_t stored = storedInputOf(plan_, static_cast<int32_t>(&n - g.nodes.data()), b_.dynamic());
  std::string v = stored >= 0 ? storedInput(n, stored, c, x) : emitValue(n.inputs[0], it.sizes, c, x);
  if (!b_.dynamic() && sched != plan_.schedules.end() && sched->second.kind != ReductionSchedule::Thread)
    return scheduledReduction(n, sched->second, x, v, red);
  bool blockReduce = blockPerOutput(it, dims, nred, ot.numel());
  if (b_.dynamic()) {
    // Note [Dynamic codegen]: decided at the hints, the same at every probe.
    const size_t idx = static_cast<size_t>(&n - g.nodes.data());
    const Node& dn = b_.decide->nodes.at(idx);
    const TensorType& dt = b_.decide->type(dn.inputs[0]);
    int64_t dred = 1;
    for (int64_t d : dims) dred *= dt.sizes[static_cast<size_t>(d)];
    blockReduce = blockPerOutput(dt, dims, dred, b_.decide->type(dn.outputs[0]).numel());
  }
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
  int64_t outerKept = 0;
  while (outerKept < it.rank() && keptSizes[outerKept] == 1) ++outerKept;
  for (int64_t d = it.rank(); d-- > 0;)
    if (keptSizes[d] != 1) os << coordStep("    ", "c", d, "r", keptSizes[d], d == outerKept, b_.dynamic());
    else if (!std::binary_search(dims.begin(), dims.end(), d)) os << "    c[" << d << "] = 0;\n";
  os << "  }\n";
  os << "  " << acc << " acc = " << (isFloating(ot.dtype) ? rs.cudaInit : rs.cudaInitInt) << ";\n";
  os << reduceLoopHead(blockReduce, nred);
  for (size_t k = redDims.size(); k-- > 0;)
    os << coordStep("    ", "c", redDims[k], "q", it.sizes[redDims[k]], k == 0, b_.dynamic());
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
  Kernel k;
  k.name = b_.addKernel(os.str(), x.nodes, x.ids);
  k.leaves = x.leaves;
  k.threads = blockReduce ? ot.numel() * kBlock : ot.numel();
  if (!b_.dynamic() && sched != plan_.schedules.end()) {  // Thread: the legacy text, blocks for the machine
    k.per = k.block = sched->second.block;
    k.serial = sched->second.serial;
  } else {
    k.serial = blockReduce ? (nred + kBlock - 1) / kBlock : nred;
  }
  return k;
}

int32_t storedInputOf(const FusionPlan& plan, int32_t r, bool dynamic) {
  const auto st = plan.storesInput.find(r);
  const auto s = plan.schedules.find(r);
  if (dynamic || st == plan.storesInput.end() || s == plan.schedules.end()) return -1;
  return s->second.kind == ReductionSchedule::Row || s->second.kind == ReductionSchedule::Column ? st->second : -1;
}

/// Note [Reductions that store their input] (fusion.cpp): the producer's
/// value at the element the reduction visits (its coordinates c[] of the
/// reduction's input, a view of the value that keeps the element order),
/// computed as its own kernel computed it, stored into its buffer, and read
/// back as its buffer would have been: the variable holding it.
std::string KernelEmitter::storedInput(const Node& n, int32_t producer, const std::vector<std::string>& c, ExprCtx& x) {
  const TensorType& it = g.type(n.inputs[0]);
  const ValueId pv = g.nodes[static_cast<size_t>(producer)].outputs.at(0);
  const TensorType& pt = g.type(pv);
  AOTC_CHECK(it.isContiguous() && pt.isContiguous() && it.offset == 0 && pt.offset == 0 && it.numel() == pt.numel() && it.dtype == pt.dtype,
             "a reduction stores its input only through an order-keeping view (Note [Reductions that store their input])");
  std::vector<std::string> cp = c;
  if (pt.sizes != it.sizes) {  // the same linear index, in the value's own coordinates
    cp = coords(static_cast<size_t>(pt.rank()), "sc");
    x.code << x.indent << "aotc_i64 sc[" << std::max<int64_t>(pt.rank(), 1) << "];\n" << x.indent << "{ aotc_i64 sr = " << at(it, c) << ";\n";
    for (int64_t d = pt.rank(); d-- > 0;) x.code << coordStep(x.indent + "  ", "sc", d, "sr", pt.sizes[static_cast<size_t>(d)], d == 0, false);
    x.code << x.indent << "}\n";
  }
  const std::set<int32_t> own{producer};
  const std::set<int32_t>* before = x.exprNodes;
  x.exprNodes = &own;
  const std::string e = emitValue(pv, pt.sizes, cp, x);
  x.exprNodes = before;
  const char* ct = computeType(pt.dtype);
  const std::string sv = "t" + std::to_string(x.tmp++), rv = "t" + std::to_string(x.tmp++);
  x.code << x.indent << storageType(pt.dtype) << " " << sv << " = (" << storageType(pt.dtype) << ")(" << ct << ")" << e << ";\n";
  x.code << x.indent << "st" << x.stores.size() << "[" << at(pt, cp) << "] = " << sv << ";\n";
  x.code << x.indent << ct << " " << rv << " = (" << ct << ")" << sv << ";\n";
  x.stores.push_back(pv);
  return rv;
}

/// The first (or only) kernel of a scheduled reduction (Note [Reduction
/// schedules]): a block per (output or column of outputs, chunk).
KernelEmitter::Kernel KernelEmitter::scheduledKernel(const std::string& text, const ExprCtx& x, const ReductionSchedule& s) {
  Kernel k;
  k.name = b_.addKernel(text, x.nodes, x.ids);
  k.leaves = x.leaves;
  k.stores = x.stores;
  k.threads = s.blocks;
  k.per = 1;
  k.block = s.block;
  k.serial = s.serial;
  k.split = s.split;
  return k;
}

/// Note [Reduction schedules]: a Row or Column reduction, split or not.
/// `x` holds the input's expression (`v`) at coordinates c[], for the loop.
KernelEmitter::Kernel KernelEmitter::scheduledReduction(const Node& n, const ReductionSchedule& s, ExprCtx& x, const std::string& v,
                                                        const Reduced& r) {
  const TensorType& it = g.type(n.inputs[0]);
  const TensorType& ot = g.type(n.outputs[0]);
  const ReductionRule& rs = *reductionRule(n.op);
  const bool floating = isFloating(ot.dtype);
  const char* acc = accumType(ot.dtype);
  const DType accType = !floating ? DType::I64 : ot.dtype == DType::F64 ? DType::F64 : DType::F32;
  const std::string combine = rs.cudaCombine;
  const int64_t K = ot.numel(), nred = r.n;
  const bool split = s.split > 1;
  const bool column = s.kind == ReductionSchedule::Column;
  const int64_t KB = (K + 31) / 32, lanes = column ? s.block / 32 : s.block;  // Column: blocks across the outputs
  auto both = [&](const std::string& a, const std::string& b) { return combine.empty() ? a + " + " + b : combine + "(" + a + ", " + b + ")"; };
  std::ostringstream os;
  os << kernelHeader(x.ops, split ? accType : ot.dtype, x.leaves, x.stores);
  if (column) {
    os << "  const unsigned lane = threadIdx.x % 32u, row = threadIdx.x / 32u;\n";
    os << "  aotc_i64 i = (aotc_i64)(blockIdx.x % " << KB << "u) * 32 + lane;\n";
    os << "  aotc_i64 sp = blockIdx.x / " << KB << "u;\n";
  } else {
    os << "  aotc_i64 i = blockIdx.x % " << K << "u;\n";
    os << "  aotc_i64 sp = blockIdx.x / " << K << "u;\n";
  }
  os << "  " << acc << " acc = " << (floating ? rs.cudaInit : rs.cudaInitInt) << ";\n";
  os << "  if (i < " << K << ") {\n" << scheduledLoopHead(it, r, s) << x.code.str();
  if (!combine.empty()) os << "    acc = " << combine << "((" << acc << ")" << v << ", acc);\n    }\n  }\n";
  else os << "    acc += (" << acc << ")" << v << ";\n    }\n  }\n";
  // A fixed tree over the block's partial results (deterministic).
  os << "  __shared__ " << acc << " part[" << s.block << "];\n";
  std::string result;
  if (column) {
    // Note [Column reductions]: the 8 rows of partial results, halved in a
    // fixed order; lane l of row 0 ends with output i's.
    os << "  part[threadIdx.x] = acc;\n  __syncthreads();\n";
    os << "  for (unsigned h = " << lanes / 2 << "; h > 0; h >>= 1) {\n";
    os << "    if (row < h) part[threadIdx.x] = " << both("part[threadIdx.x]", "part[threadIdx.x + h * 32u]") << ";\n";
    os << "    __syncthreads();\n  }\n";
    os << "  if (row != 0 || i >= " << K << ") return;\n";
    result = "part[lane]";
  } else {
    os << blockTree(s.block, combine);
    os << "  if (threadIdx.x != 0) return;\n";
    result = "part[0]";
  }
  std::string outOffset = ot.offset ? std::to_string(ot.offset) + " + " : std::string();
  if (split) {
    os << "  out[sp * " << K << " + i] = " << result << ";\n}\n";
  } else {
    os << "  acc = " << result << ";\n";
    if (rs.mean) os << "  acc = acc / (" << acc << ")" << nred << ";\n";
    os << "  out[" << outOffset << "i] = (" << storageType(ot.dtype) << ")acc;\n}\n";
  }
  Kernel k = scheduledKernel(os.str(), x, s);
  if (!split) return k;
  // The second kernel: each output's partials, combined in chunk order.
  std::ostringstream cs;
  cs << opsBanner(x.ops);
  cs << " (combine " << s.split << " partials)\n";
  cs << "extern \"C\" __global__ void @KERNEL@(" << storageType(ot.dtype) << "* __restrict__ out, const " << acc
     << "* __restrict__ in0) {\n";
  cs << "  aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
  cs << "  if (i >= " << K << ") return;\n";
  cs << "  " << acc << " acc = in0[i];\n";
  cs << "  for (aotc_i64 sp = 1; sp < " << s.split << "; ++sp) acc = " << both("acc", "in0[sp * " + std::to_string(K) + " + i]") << ";\n";
  if (rs.mean) cs << "  acc = acc / (" << acc << ")" << nred << ";\n";
  cs << "  out[" << outOffset << "i] = (" << storageType(ot.dtype) << ")acc;\n}\n";
  k.combine = b_.addKernel(cs.str(), x.nodes, x.ids);
  k.workspace = accType;
  return k;
}

/// Note [Welford moments]: batch-norm statistics too large for a row group
/// were two scheduled reductions, the mean of x and then the mean of
/// (x - mean)^2, each reading x.  One kernel reads x once: each thread keeps
/// Welford's running (count, mean, M2) over the elements it visits (the
/// variance accumulates in float32 for float32 and lower, in double for
/// float64, as PyTorch's CUDA batch norm does), the block combines its
/// threads' triples in a fixed tree by Chan's formula, and a split
/// schedule's second kernel combines the chunks' (mean, M2) in chunk order,
/// each chunk's count known from the schedule.  Fixed orders: the same bits
/// on every run.  M2 / n is the variance around the exact mean rather than
/// around the rounded one; the two differ by (mean - rounded mean)^2.
KernelEmitter::Kernel KernelEmitter::moments(const Node& a, const Node& bn) {
  const TensorType& it = g.type(a.inputs[0]);
  const TensorType& ot = g.type(a.outputs[0]);
  const TensorType& bt = g.type(bn.outputs[0]);
  const ReductionSchedule& s = plan_.schedules.at(static_cast<int32_t>(&a - g.nodes.data()));
  AOTC_CHECK(s.kind == ReductionSchedule::Row && !b_.dynamic(), "Welford moments need a static Row schedule");
  const Ints dims = reductionDims(a.attrs, it.rank());
  const Reduced r = reduced(it, dims);
  const int64_t nred = r.n;
  const char* acc = accumType(ot.dtype);
  const DType accType = ot.dtype == DType::F64 ? DType::F64 : DType::F32;
  ExprCtx x;
  noteNode(x, a);
  noteNode(x, bn);
  x.indent = "    ";
  std::vector<std::string> c = coords(static_cast<size_t>(it.rank()));
  const std::string v = emitValue(a.inputs[0], it.sizes, c, x);
  const int64_t K = ot.numel();
  const bool split = s.split > 1;
  auto offset = [](const TensorType& t) { return t.offset ? std::to_string(t.offset) + " + " : std::string(); };
  std::ostringstream os;
  os << opsBanner(x.ops);
  os << " (Welford moments)\nextern \"C\" __global__ void @KERNEL@(";
  if (split) os << acc << "* __restrict__ out";
  else os << storageType(ot.dtype) << "* __restrict__ out, " << storageType(bt.dtype) << "* __restrict__ out1";
  for (size_t l = 0; l < x.leaves.size(); ++l) os << ", const " << storageType(g.type(x.leaves[l]).dtype) << "* __restrict__ in" << l;
  os << ") {\n";
  os << "  aotc_i64 i = blockIdx.x % " << K << "u;\n  aotc_i64 sp = blockIdx.x / " << K << "u;\n";
  os << "  " << acc << " wn = 0, wm = 0, wq = 0;\n";
  os << "  {\n" << scheduledLoopHead(it, r, s) << x.code.str();
  os << "    " << acc << " e = (" << acc << ")" << v << ";\n";
  os << "    wn += 1; " << acc << " d = e - wm; wm += d / wn; wq += d * (e - wm);\n    }\n  }\n";
  // The block's triples, halved in a fixed order (Chan et al.).
  os << "  __shared__ " << acc << " pn[" << s.block << "], pm[" << s.block << "], pq[" << s.block << "];\n";
  os << "  pn[threadIdx.x] = wn; pm[threadIdx.x] = wm; pq[threadIdx.x] = wq;\n  __syncthreads();\n";
  os << "  for (unsigned h = " << s.block / 2 << "; h > 0; h >>= 1) {\n";
  os << "    if (threadIdx.x < h && pn[threadIdx.x + h] > 0) {\n";
  os << "      " << acc << " na = pn[threadIdx.x], nb = pn[threadIdx.x + h], nn = na + nb, d = pm[threadIdx.x + h] - pm[threadIdx.x];\n";
  os << "      pm[threadIdx.x] += d * (nb / nn);\n      pq[threadIdx.x] += pq[threadIdx.x + h] + d * d * (na * nb / nn);\n";
  os << "      pn[threadIdx.x] = nn;\n    }\n    __syncthreads();\n  }\n";
  os << "  if (threadIdx.x != 0) return;\n";
  if (split) {
    os << "  out[(sp * " << K << " + i) * 2] = pm[0];\n  out[(sp * " << K << " + i) * 2 + 1] = pq[0];\n}\n";
  } else {
    os << "  out[" << offset(ot) << "i] = (" << storageType(ot.dtype) << ")pm[0];\n";
    os << "  out1[" << offset(bt) << "i] = (" << storageType(bt.dtype) << ")(pq[0] / (" << acc << ")" << nred << ");\n}\n";
  }
  Kernel k = scheduledKernel(os.str(), x, s);
  if (!split) return k;
  // The chunks' (mean, M2), combined in chunk order; every chunk has work.
  std::ostringstream cs;
  cs << opsBanner(x.ops);
  cs << " (combine " << s.split << " Welford partials)\n";
  cs << "extern \"C\" __global__ void @KERNEL@(" << storageType(ot.dtype) << "* __restrict__ out, " << storageType(bt.dtype)
     << "* __restrict__ out1, const " << acc << "* __restrict__ in0) {\n";
  cs << "  aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
  cs << "  if (i >= " << K << ") return;\n";
  cs << "  " << acc << " n = 0, m = 0, q = 0;\n";
  cs << "  for (aotc_i64 sp = 0; sp < " << s.split << "; ++sp) {\n";
  cs << "    aotc_i64 len = " << nred << " - sp * " << s.chunk << ";\n    if (len > " << s.chunk << ") len = " << s.chunk << ";\n";
  cs << "    " << acc << " nb = (" << acc << ")len, nn = n + nb, d = in0[(sp * " << K << " + i) * 2] - m;\n";
  cs << "    m += d * (nb / nn);\n    q += in0[(sp * " << K << " + i) * 2 + 1] + d * d * (n * nb / nn);\n    n = nn;\n  }\n";
  cs << "  out[" << offset(ot) << "i] = (" << storageType(ot.dtype) << ")m;\n";
  cs << "  out1[" << offset(bt) << "i] = (" << storageType(bt.dtype) << ")(q / (" << acc << ")" << nred << ");\n}\n";
  k.combine = b_.addKernel(cs.str(), x.nodes, x.ids);
  k.workspace = accType;
  return k;
}

/// Note [Sibling reductions]: the loop, trees and combine of
/// scheduledReduction's Row or Column kind, once, with an accumulator per reduction;
/// loads of an operand the expressions share are made once (the memo).
KernelEmitter::Kernel KernelEmitter::siblings(const std::vector<const Node*>& ns) {
  const Node& a = *ns.front();
  const TensorType& it = g.type(a.inputs[0]);
  const TensorType& ot = g.type(a.outputs[0]);
  const ReductionSchedule& s = plan_.schedules.at(static_cast<int32_t>(&a - g.nodes.data()));
  AOTC_CHECK((s.kind == ReductionSchedule::Row || s.kind == ReductionSchedule::Column) && !b_.dynamic(),
             "sibling reductions need a static Row or Column schedule");
  const bool column = s.kind == ReductionSchedule::Column;
  const Ints dims = reductionDims(a.attrs, it.rank());
  const Reduced r = reduced(it, dims);
  const int64_t nred = r.n;
  const char* acc = accumType(ot.dtype);
  const DType accType = ot.dtype == DType::F64 ? DType::F64 : DType::F32;
  const size_t P = ns.size();
  ExprCtx x;
  for (const Node* n : ns) noteNode(x, *n);
  x.indent = "    ";
  std::vector<std::string> c = coords(static_cast<size_t>(it.rank()));
  std::vector<std::string> vs;
  for (const Node* n : ns) vs.push_back(emitValue(n->inputs[0], it.sizes, c, x));
  const int64_t K = ot.numel();
  const bool split = s.split > 1;
  auto both = [&](size_t p, const std::string& l, const std::string& r) {
    const std::string combine = reductionRule(ns[p]->op)->cudaCombine;
    return combine.empty() ? l + " + " + r : combine + "(" + l + ", " + r + ")";
  };
  std::ostringstream os;
  os << opsBanner(x.ops);
  os << " (" << P << " sibling reductions)\nextern \"C\" __global__ void @KERNEL@(";
  if (split) {
    os << acc << "* __restrict__ out";
  } else {
    for (size_t p = 0; p < P; ++p) os << (p ? ", " : "") << storageType(g.type(ns[p]->outputs[0]).dtype) << "* __restrict__ out" << p;
  }
  for (size_t l = 0; l < x.leaves.size(); ++l) os << ", const " << storageType(g.type(x.leaves[l]).dtype) << "* __restrict__ in" << l;
  os << ") {\n";
  const int64_t KB = (K + 31) / 32, lanes = column ? s.block / 32 : s.block;  // Column: blocks across the outputs
  if (column) {
    os << "  const unsigned lane = threadIdx.x % 32u, row = threadIdx.x / 32u;\n";
    os << "  aotc_i64 i = (aotc_i64)(blockIdx.x % " << KB << "u) * 32 + lane;\n  aotc_i64 sp = blockIdx.x / " << KB << "u;\n";
  } else {
    os << "  aotc_i64 i = blockIdx.x % " << K << "u;\n  aotc_i64 sp = blockIdx.x / " << K << "u;\n";
  }
  for (size_t p = 0; p < P; ++p) os << "  " << acc << " acc" << p << " = " << reductionRule(ns[p]->op)->cudaInit << ";\n";
  os << "  if (i < " << K << ") {\n" << scheduledLoopHead(it, r, s) << x.code.str();
  for (size_t p = 0; p < P; ++p) {
    const std::string combine = reductionRule(ns[p]->op)->cudaCombine;
    if (combine.empty()) os << "    acc" << p << " += (" << acc << ")" << vs[p] << ";\n";
    else os << "    acc" << p << " = " << combine << "((" << acc << ")" << vs[p] << ", acc" << p << ");\n";
  }
  os << "    }\n  }\n";
  // Each accumulator's fixed tree, as blockTree (Row) or Note [Column
  // reductions] (Column: the rows of partials halved) lays it out.
  for (size_t p = 0; p < P; ++p) os << "  __shared__ " << acc << " part" << p << "[" << s.block << "];\n  part" << p << "[threadIdx.x] = acc" << p << ";\n";
  os << "  __syncthreads();\n  for (unsigned h = " << (column ? lanes / 2 : s.block / 2) << "; h > 0; h >>= 1) {\n    if ("
     << (column ? "row" : "threadIdx.x") << " < h) {\n";
  for (size_t p = 0; p < P; ++p) {
    const std::string pp = "part" + std::to_string(p);
    os << "      " << pp << "[threadIdx.x] = " << both(p, pp + "[threadIdx.x]", pp + (column ? "[threadIdx.x + h * 32u]" : "[threadIdx.x + h]")) << ";\n";
  }
  os << "    }\n    __syncthreads();\n  }\n";
  os << (column ? "  if (row != 0 || i >= " + std::to_string(K) + ") return;\n" : std::string("  if (threadIdx.x != 0) return;\n"));
  const std::string first = column ? "[lane]" : "[0]";
  for (size_t p = 0; p < P; ++p) {
    const TensorType& pt = g.type(ns[p]->outputs[0]);
    if (split) {
      os << "  out[(sp * " << K << " + i) * " << P << " + " << p << "] = part" << p << first << ";\n";
    } else {
      std::string r = "part" + std::to_string(p) + first;
      if (reductionRule(ns[p]->op)->mean) r = "(" + r + " / (" + acc + ")" + std::to_string(nred) + ")";
      os << "  out" << p << "[" << (pt.offset ? std::to_string(pt.offset) + " + " : std::string()) << "i] = (" << storageType(pt.dtype) << ")" << r << ";\n";
    }
  }
  os << "}\n";
  Kernel k = scheduledKernel(os.str(), x, s);
  if (!split) return k;
  // Each output's partials, combined in chunk order.
  std::ostringstream cs;
  cs << opsBanner(x.ops);
  cs << " (combine " << s.split << " partials of " << P << " sibling reductions)\nextern \"C\" __global__ void @KERNEL@(";
  for (size_t p = 0; p < P; ++p) cs << storageType(g.type(ns[p]->outputs[0]).dtype) << "* __restrict__ out" << p << ", ";
  cs << "const " << acc << "* __restrict__ in0) {\n";
  cs << "  aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
  cs << "  if (i >= " << K << ") return;\n";
  for (size_t p = 0; p < P; ++p) {
    const TensorType& pt = g.type(ns[p]->outputs[0]);
    const std::string at = "in0[(sp * " + std::to_string(K) + " + i) * " + std::to_string(P) + " + " + std::to_string(p) + "]";
    cs << "  {\n    " << acc << " acc = in0[i * " << P << " + " << p << "];\n";
    cs << "    for (aotc_i64 sp = 1; sp < " << s.split << "; ++sp) acc = " << both(p, "acc", at) << ";\n";
    if (reductionRule(ns[p]->op)->mean) cs << "    acc = acc / (" << acc << ")" << nred << ";\n";
    cs << "    out" << p << "[" << (pt.offset ? std::to_string(pt.offset) + " + " : std::string()) << "i] = (" << storageType(pt.dtype) << ")acc;\n  }\n";
  }
  cs << "}\n";
  k.combine = b_.addKernel(cs.str(), x.nodes, x.ids);
  k.workspace = accType;
  return k;
}

/// Note [Online softmax]: a row group's max A = amax(y) followed, as the
/// group's next reduction, by B = sum(exp(y - A)) -- softmax's and
/// log_softmax's statistics -- over rows too long for the row cache were two
/// passes over y.  One pass keeps a running max m and the sum s of
/// exp(y - m), rescaling s by exp(m_old - m_new) when m grows (Milakov and
/// Gimelshein's online normalizer), and the threads combine their (m, s)
/// pairs the same way.  Terms are 0 while the max is -inf; a row whose max is
/// -inf gets the NaN the two passes give (exp(-inf - -inf)), and a NaN or a
/// +inf propagates as it does there.  Each term is rounded once more than in
/// the two passes (the rescale).  Returns B's member index, or -1.
int onlinePartner(const Graph& g, const RowGroup& G, size_t a, const std::set<int32_t>& inlined) {
  const Node& an = g.nodes[static_cast<size_t>(G.members[a])];
  if (an.op != OpKind::Amax) return -1;
  const ValueId av = an.outputs[0];
  auto base = [&](ValueId v) {
    for (auto it = G.aliases.find(v); it != G.aliases.end(); it = G.aliases.find(v)) v = it->second;
    return v;
  };
  auto expr = [&](ValueId v) -> const Node* {
    const int32_t d = g.values[v].node;
    return d >= 0 && (G.exprNodes.count(d) || inlined.count(d)) ? &g.nodes[static_cast<size_t>(d)] : nullptr;
  };
  // Whether y's expression reads A (then it is not y's max that A holds).
  std::function<bool(ValueId, int)> readsA = [&](ValueId v, int depth) {
    v = base(v);
    if (v == av) return true;
    const Node* n = expr(v);
    if (!n) return false;
    if (depth > 64) return true;
    for (ValueId in : n->inputs)
      if (readsA(in, depth + 1)) return true;
    return false;
  };
  for (size_t b = a + 1; b < G.members.size(); ++b) {
    const Node& bn = g.nodes[static_cast<size_t>(G.members[b])];
    if (!isReduction(bn.op)) continue;
    if (bn.op != OpKind::Sum || g.type(bn.outputs[0]).dtype != g.type(av).dtype) return -1;
    const Node* e = expr(bn.inputs[0]);
    if (!e || e->op != OpKind::Exp) return -1;
    const Node* d = expr(e->inputs[0]);
    if (!d || d->op != OpKind::Sub || base(d->inputs[1]) != av || base(d->inputs[0]) != base(an.inputs[0])) return -1;
    if (readsA(an.inputs[0], 0)) return -1;
    return static_cast<int>(b);
  }
  return -1;
}

/// The kernel of a row group (Note [Row groups]), launched at its seed.
KernelEmitter::GroupKernel KernelEmitter::rowGroup(const RowGroup& G) {
  std::vector<ValueId> outs;
  for (int32_t m : G.members) {
    ValueId v = g.nodes[static_cast<size_t>(m)].outputs[0];
    if (!G.materialized.count(v)) continue;
    outs.push_back(v);
  }
  const int64_t rank = static_cast<int64_t>(G.shape.size());
  // Note [Row kernels] (fusion.cpp): a thread, a warp or a block per row.
  // Note [Dynamic codegen]: the kind and block size are decided at the hints.
  const RowGroup& D = b_.dynamic() ? b_.decidePlan->groups.at(static_cast<size_t>(&G - plan_.groups.data())) : G;
  if (D.members != G.members || D.dims != G.dims)
    throw UserError(SourceLoc{}, "the fusion plan differs between sizes at a row group (Note [Dynamic codegen])");
  // Note [Launch shape]: a large group's kernel takes blocks small enough to
  // give every SM one (the planner formed only groups whose shape keeps the rule).
  const RowGroupShape shape =
      rowGroupShape(D.shape, D.dims, D.rows, D.nred, D.passes, !b_.dynamic() && D.bytes > b_.rule.minBytes, b_.rule, !b_.dynamic());
  const bool perThread = shape.kind == RowGroupShape::Thread, warp = shape.kind == RowGroupShape::Warp;
  // `warps`: the warps that share a row (a Block kernel's; a Warp kernel's
  // warps each have their own).
  const int64_t block = shape.block, lanes = warp ? 32 : block, warps = warp ? 1 : block / 32;
  ExprCtx x;
  x.exprNodes = &G.exprNodes;
  x.aliases = &G.aliases;
  std::vector<std::string> c = coords(static_cast<size_t>(rank));
  std::ostringstream body;
  if (perThread) {
    body << "  aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= " << G.rows << ") return;\n";
  } else {
    body << "  const int lane = (int)(threadIdx.x & 31u);\n";
    if (warp) body << "  aotc_i64 i = (aotc_i64)blockIdx.x * " << shape.rowsPerBlock << " + (aotc_i64)(threadIdx.x >> 5);\n";
    else body << "  aotc_i64 i = blockIdx.x;\n";
    body << "  if (i >= " << G.rows << ") return;\n";  // uniform in the warp (Warp) or the block (Block)
  }
  body << "  aotc_i64 c[" << rank << "];\n  { aotc_i64 r = i;\n";
  int64_t outerRow = 0;
  while (outerRow < rank && G.rowShape[static_cast<size_t>(outerRow)] == 1) ++outerRow;
  for (int64_t d = rank; d-- > 0;)
    if (G.rowShape[static_cast<size_t>(d)] != 1) body << coordStep("    ", "c", d, "r", G.rowShape[static_cast<size_t>(d)], d == outerRow, b_.dynamic());
    else body << "    c[" << d << "] = 0;\n";
  body << "  }\n";
  // Note [Reduction precision]: the group's accumulators.
  bool anyDouble = false;
  for (int32_t m : G.members)
    anyDouble = anyDouble || (isReduction(g.nodes[static_cast<size_t>(m)].op) && g.type(g.nodes[static_cast<size_t>(m)].outputs[0]).dtype == DType::F64);
  const std::string acct = anyDouble ? "double" : "float";
  if (!perThread && warps > 1) body << "  __shared__ " << acct << " part[" << warps << "];\n";
  // Note [Row cache]: the arrays are declared here, once the passes are written.
  body << "@ROWCACHE@";
  // Note [Row vectors]: a cached row (float32, float16 or bfloat16) whose
  // reduced dims end with the innermost dim, of a size that is a multiple of
  // four, is visited four consecutive elements at a time: each operand whose
  // four elements are consecutive and aligned is read with one load (Note
  // [Vectorized access]), any other with four; a reduction adds the four
  // in order, then the threads combine as in Note [Row kernels].
  const bool vec4 = shape.cache > 0 && G.dims.back() == rank - 1 && G.shape.back() % kVec == 0 &&
                    vectorDtype(g.type(g.nodes[static_cast<size_t>(G.seed)].inputs[0]).dtype);
  const int64_t width = vec4 ? kVec : 1, unroll = (G.nred + lanes * width - 1) / (lanes * width);
  if (vec4)
    for (int64_t k = 0; k < kVec; ++k) {
      std::vector<std::string> l = c;
      if (k) l.back() = "(" + c.back() + " + " + std::to_string(k) + ")";
      x.lanes.push_back(l);
    }
  if (shape.cache > 0) {
    x.cacheShape = &G.shape;
    x.cacheCoords = &c;
    x.cacheRows = &G.rowShape;
    x.cacheDims = &G.dims;
    x.cacheLen = unroll;
  }
  // The coordinates a pass visits: the four lanes, or c itself.
  const std::vector<std::vector<std::string>> visits = vec4 ? x.lanes : std::vector<std::vector<std::string>>{c};
  auto rowLoop = [&]() {
    std::ostringstream l;
    if (perThread) {
      // Not unrolled: a row group's passes are long, and unrolling them
      // multiplies NVRTC's time for little gain on short rows.
      l << reduceLoopHead(false, G.nred, true);
    } else if (shape.cache > 0) {
      // Fully unrolled: the cache's index is a constant in each copy.
      l << "  #pragma unroll\n  for (int u = 0; u < " << unroll << "; ++u) {\n";
      l << "    aotc_i64 j = " << (vec4 ? "(" : "") << "(aotc_i64)" << (warp ? "lane" : "threadIdx.x") << " + (aotc_i64)u * " << lanes
        << (vec4 ? ") * 4" : "") << ";\n";
      if (G.nred % (lanes * width) != 0) l << "    if (j >= " << G.nred << ") continue;\n";
      l << "    aotc_i64 q = j;\n";
    } else {
      l << "  #pragma unroll 1\n  for (aotc_i64 j = " << (warp ? "lane" : "threadIdx.x") << "; j < " << G.nred << "; j += " << lanes
        << ") {\n    aotc_i64 q = j;\n";
    }
    for (size_t k = G.dims.size(); k-- > 0;) {
      int64_t d = G.dims[k];
      l << coordStep("    ", "c", d, "q", G.shape[static_cast<size_t>(d)], k == 0, b_.dynamic());
    }
    return l.str();
  };
  auto takeCode = [&]() {
    std::string code = x.code.str();
    x.code.str("");
    x.memo.clear();
    x.cacheFilled.insert(x.cacheFilling.begin(), x.cacheFilling.end());
    x.cacheFilling.clear();
    return code;
  };
  // A row's element count as a double (an integer token where it may vary: Note [Dynamic codegen]).
  const std::string nredText = b_.dynamic() || !anyDouble ? "(" + acct + ")" + std::to_string(G.nred) : std::to_string(G.nred) + ".0";
  int reg = 0;
  std::set<int32_t> inlinedNodes;
  for (size_t k = 0; k < plan_.inlined.size(); ++k)
    if (plan_.inlined[k]) inlinedNodes.insert(static_cast<int32_t>(k));
  std::set<size_t> doneOnline;  // Note [Online softmax]: sums computed with their max
  for (size_t mi = 0; mi < G.members.size(); ++mi) {
    const int32_t m = G.members[mi];
    const Node& n = g.nodes[static_cast<size_t>(m)];
    ValueId v = n.outputs[0];
    noteNode(x, n);
    const char* ct = computeType(g.type(v).dtype);
    std::string r = "r" + std::to_string(reg++);
    if (doneOnline.count(mi)) continue;
    if (const int ob = !perThread && shape.cache == 0 && !b_.dynamic() ? onlinePartner(g, G, mi, inlinedNodes) : -1; ob >= 0) {
      // Note [Online softmax]: A and B in one pass.
      const Node& bn = g.nodes[static_cast<size_t>(G.members[static_cast<size_t>(ob)])];
      noteNode(x, bn);
      const std::string rb = "r" + std::to_string(reg++);
      x.indent = "    ";
      const std::string e = emitValue(n.inputs[0], G.shape, c, x);
      auto ex = [&](const std::string& arg) { return pointwiseExpr(OpKind::Exp, {"(" + acct + ")(" + arg + ")"}); };
      const DType accType = anyDouble ? DType::F64 : DType::F32;
      body << "  " << ct << " " << r << ", " << rb << ";\n  {\n  const " << acct << " om0 = " << literal(-INFINITY, accType) << ";\n  " << acct << " om = " << literal(-INFINITY, accType) << ", os = 0;\n";
      body << rowLoop() << takeCode();
      body << "    const " << acct << " oe = (" << acct << ")" << e << ", on = aotc_max(oe, om);\n";
      body << "    if (on != om0) os = os * " << ex("om - on") << " + " << ex("oe - on") << ";\n    om = on;\n  }\n";
      // The (m, s) pairs, combined by the same rule in the butterflies.
      auto pair = [&](int64_t from) {
        body << "  for (int k = " << from << "; k > 0; k >>= 1) {\n";
        body << "    const " << acct << " pm = __shfl_xor_sync(0xffffffffu, om, k), ps = __shfl_xor_sync(0xffffffffu, os, k), on = aotc_max(om, pm);\n";
        body << "    os = on == om0 ? os : os * " << ex("om - on") << " + ps * " << ex("pm - on") << ";\n    om = on;\n  }\n";
      };
      pair(16);
      if (warps > 1) {
        body << "  __shared__ " << acct << " opm[" << warps << "], ops[" << warps << "];\n";
        body << "  if (lane == 0) { opm[threadIdx.x >> 5] = om; ops[threadIdx.x >> 5] = os; }\n  __syncthreads();\n";
        body << "  om = opm[lane & " << warps - 1 << "]; os = ops[lane & " << warps - 1 << "];\n";
        pair(warps / 2);
      }
      body << "  om = __shfl_sync(0xffffffffu, om, 0); os = __shfl_sync(0xffffffffu, os, 0);\n";
      body << "  " << r << " = " << valueCast(g.type(v).dtype) << "om;\n";
      body << "  " << rb << " = " << valueCast(g.type(bn.outputs[0]).dtype) << "(om == om0 ? " << literal(NAN, accType) << " : os);\n";
      if (warps > 1) body << "  __syncthreads();\n";
      body << "  }\n";
      x.registers[v] = r;
      x.registers[bn.outputs[0]] = rb;
      doneOnline.insert(static_cast<size_t>(ob));
      continue;
    }
    if (isReduction(n.op)) {
      const ReductionRule& rs = *reductionRule(n.op);
      x.indent = "    ";
      std::vector<std::string> es;
      for (const auto& vc : visits) es.push_back(emitValue(n.inputs[0], G.shape, vc, x));
      body << "  " << ct << " " << r << ";\n  {\n  " << acct << " acc = " << rs.cudaInit << ";\n";
      body << rowLoop() << takeCode();
      const std::string combine = rs.cudaCombine;
      for (const std::string& e : es)
        if (combine.empty()) body << "    acc += (" << acct << ")" << e << ";\n";
        else body << "    acc = " << combine << "((" << acct << ")" << e << ", acc);\n";
      body << "  }\n";
      if (perThread) {
        body << "  " << r << " = " << valueCast(g.type(v).dtype) << (rs.mean ? "(acc / " + nredText + ")" : "acc") << ";\n  }\n";
        x.registers[v] = r;
        continue;
      }
      // Note [Row kernels]: butterflies of fixed offsets; every thread ends
      // with the row's result.
      auto butterfly = [&](int64_t from) {
        const std::string other = "__shfl_xor_sync(0xffffffffu, acc, m)";
        body << "  for (int m = " << from << "; m > 0; m >>= 1) acc = " << (combine.empty() ? "acc + " + other : combine + "(acc, " + other + ")")
             << ";\n";
      };
      butterfly(16);
      if (warps > 1) {
        body << "  if (lane == 0) part[threadIdx.x >> 5] = acc;\n  __syncthreads();\n  acc = part[lane & " << warps - 1 << "];\n";
        butterfly(warps / 2);
      }
      if (!combine.empty()) body << "  acc = __shfl_sync(0xffffffffu, acc, 0);\n";
      body << "  " << r << " = " << valueCast(g.type(v).dtype) << (rs.mean ? "(acc / " + nredText + ")" : "acc") << ";\n";
      if (warps > 1) body << "  __syncthreads();\n";  // part is the next reduction's
      body << "  }\n";
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
      body << takeCode() << "  const " << ct << " " << r << " = " << valueCast(g.type(v).dtype) << pointwiseExpr(g, n, args) << ";\n";
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
    std::vector<std::string> es;
    for (const auto& vc : visits) es.push_back(emitValue(outs[o], G.shape, vc, x));
    stores << x.code.str();
    x.code.str("");
    if (vec4 && vectorStore(t)) {
      stores << "    aotc_st4(out" << o << " + " << at(t, c) << ", make_float4(";
      for (size_t k = 0; k < es.size(); ++k) stores << (k ? ", " : "") << "(float)" << es[k];
      stores << "));\n";
    } else {
      for (size_t k = 0; k < es.size(); ++k)
        stores << "    out" << o << "[" << at(t, visits[k]) << "] = (" << storageType(t.dtype) << ")" << es[k] << ";\n";
    }
  }
  if (anyFull) body << rowLoop() << stores.str() << "  }\n";
  x.memo.clear();
  for (size_t o = 0; o < outs.size(); ++o) {
    if (G.full.count(outs[o])) continue;
    const TensorType& t = g.type(outs[o]);
    body << (perThread ? "  " : warp ? "  if (lane == 0) " : "  if (threadIdx.x == 0) ") << "out" << o << "[" << t.offset << " + i] = ("
         << storageType(t.dtype) << ")" << x.registers.at(outs[o]) << ";\n";
  }
  std::string text = body.str();
  text.replace(text.find("@ROWCACHE@"), 10, x.cacheDecls);
  std::ostringstream os;
  os << opsBanner(x.ops);
  os << "\nextern \"C\" __global__ void @KERNEL@(";
  for (size_t o = 0; o < outs.size(); ++o) os << (o ? ", " : "") << storageType(g.type(outs[o]).dtype) << "* __restrict__ out" << o;
  for (size_t l = 0; l < x.leaves.size(); ++l) os << ", const " << storageType(g.type(x.leaves[l]).dtype) << "* __restrict__ in" << l;
  os << ") {\n" << text << "}\n";
  const int64_t per = perThread ? block : warp ? shape.rowsPerBlock : 1;
  return GroupKernel{b_.addKernel(os.str(), x.nodes, x.ids), outs, x.leaves, G.rows, per, block, shape.blocks, shape.serial};
}

/// A kernel with one thread per element of output 0 (dense): the header
/// declares out0..outK, in0..inN, the index i and its coordinates c[].
std::string KernelEmitter::element(const Node& n, const std::string& body, int64_t threads) {
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
  for (int64_t d = ot.rank(); d-- > 0;) os << coordStep("  ", "c", d, "r", ot.sizes[d], d == 0 && threads < 0, b_.dynamic());
  os << body << "}\n";
  return b_.addKernel(os.str(), {nodeName(n)});
}

std::string KernelEmitter::constant(const Node& n) {
  const TensorType& ot = g.type(n.outputs[0]);
  std::ostringstream os;
  os << banner(n, g);
  os << "extern \"C\" __global__ void @KERNEL@(" << storageType(ot.dtype) << "* __restrict__ out) {\n";
  os << "  aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
  os << "  if (i >= " << ot.numel() << ") return;\n";
  os << "  out[i] = (" << storageType(ot.dtype) << ")"
     << (sizeScalarVaries(b_.decide, g, n) ? sizeScalarText(n, ot.dtype) : literal(attrFloat(n.attrs, "value"), ot.dtype)) << ";\n}\n";
  return b_.addKernel(os.str(), {nodeName(n)});
}

}  // namespace aotc::cudagen
