//===- autocast.cpp - Mixed precision as torch.autocast("cuda") runs it --===//
//
// Note [Autocast pass]
// ~~~~~~~~~~~~~~~~~~~~
// `aotc compile --precision bf16|fp16` runs this pass on the functional
// forward graph, before autodiff, so that autodiff, partitioning and codegen
// see an ordinary typed graph (the backward of a bf16 matmul is a bf16
// matmul, the gradient of a cast is the cast back: parameter gradients come
// back float32, as eager AMP gives them with backward() outside autocast).
// It rewrites the float32 graph as torch.autocast("cuda", dtype) would run
// the model, op by op, with PyTorch's own lists (Note [Autocast table],
// aotc/ops/autocast.def).
//
// The unit is the user's op: the nodes a front end built for one FX or ONNX
// node carry its location (name and ATen/ONNX spelling), and a run of
// consecutive nodes with the same location is one group, treated as the
// ATen op ran under autocast:
//  * Lower: the group's floating inputs (not float64) are cast to the
//    autocast dtype and its nodes rebuilt on them (types inferred again,
//    floating constants in the new dtype): the GEMM or convolution runs in
//    bf16/fp16 and returns it.
//  * Fp32: low-precision inputs are cast back to float32; the group is
//    copied as it was (its result float32).
//  * everything else follows its inputs, as an ATen kernel does: where no
//    input changed dtype, the group is copied unchanged.  Otherwise an op
//    that only moves or selects values (views, cat, relu, max pooling, where,
//    comparisons: `exact` below) is rebuilt on the new inputs; any other
//    computes as ATen's CUDA kernels do for a low-precision tensor (opmath:
//    float32 inside, one rounding of the result): its inputs are cast back to
//    float32, its nodes copied, and its results cast to the dtype ATen's
//    promotion gives the new inputs (tensors with dims before 0-dim ones).
//    Promote takes the widest input instead; BatchNorm returns the input's
//    dtype for the normalized result and keeps the statistics float32 (the
//    running-statistics updates stay float32 too).
// Casts are shared (one per value and dtype: each parameter is cast once per
// step), float64 is never touched, and a graph whose groups see no dtype
// change comes out as it came in.  custom_grad/keep_grad see the dtypes
// their user-written backward was traced with.
//
// Note [Autocast regions]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A program may hold its own `with torch.autocast("cuda", dtype):` blocks
// (the .pt2 door's wrap_with_autocast regions, pt2/translate.cpp): the front
// end tags the nodes built inside one kAutocastBf16 / kAutocastFp16, and
// those inside an enabled=False block kAutocastOff.  The pass then takes
// each group's autocast dtype from its tags (`--precision`'s for an untagged
// group; none for kAutocastOff, or untagged at fp32): a group without one
// runs as ATen runs it outside autocast, following its inputs (Follow,
// whatever the table says), so a bfloat16 result that leaves a region
// promotes or stays bfloat16 downstream as it does in eager.  The pass
// clears the tags; the pipeline runs it when --precision asks or a node
// carries one.
//===----------------------------------------------------------------------===//
#include <map>
#include <string_view>

#include "aotc/ir/autocast_tags.h"
#include "aotc/ops/ops.h"
#include "aotc/passes/passes.h"

namespace aotc {

const char* precisionName(Precision p) { return optionName(p).data(); }  // the table's literals end in NUL

std::optional<Precision> parsePrecision(const std::string& s) { return parseOption<Precision>(s); }

namespace {

enum class Policy { Follow, Lower, Fp32, Promote, BatchNorm };

/// The table key of a node's spelling: `aten.sum.dim_IntList` -> `sum`; an
/// ONNX op type as it is.
std::string_view baseName(std::string_view op) {
  if (op.substr(0, 5) == "aten.") op.remove_prefix(5);
  else if (op.substr(0, 6) == "aten::") op.remove_prefix(6);
  else return op;
  if (size_t dot = op.find('.'); dot != std::string_view::npos) op = op.substr(0, dot);
  return op;
}

Policy policyOf(const SourceLoc& loc) {
  static constexpr std::pair<std::string_view, Policy> kTable[] = {
#define AUTOCAST(name, policy) {name, Policy::policy},
#include "aotc/ops/autocast.def"
#undef AUTOCAST
  };
  std::string_view key = baseName(loc.op);
  for (const auto& [name, p] : kTable)
    if (name == key) return p;
  return Policy::Follow;
}

/// Ops that only move, select or compare values: rebuilt in a low-precision
/// dtype they give what float32 then rounding would.
bool exact(OpKind k) {
  switch (opInfo(k).category) {
    case OpCategory::View: case OpCategory::Alias: return true;
    default: break;
  }
  switch (k) {
    case OpKind::Constant: case OpKind::Clone: case OpKind::Relu: case OpKind::Neg: case OpKind::Abs:
    case OpKind::Maximum: case OpKind::Minimum: case OpKind::Where: case OpKind::Cat: case OpKind::Pad:
    case OpKind::Gather: case OpKind::IndexSelect: case OpKind::SliceScatter: case OpKind::SelectScatter:
    case OpKind::DiagonalScatter: case OpKind::Scatter: case OpKind::MaxPool2d: case OpKind::Amax: case OpKind::Amin:
    case OpKind::ArgMax: case OpKind::Sort: case OpKind::Gt: case OpKind::Lt: case OpKind::Le: case OpKind::Ge:
    case OpKind::Eq: case OpKind::Ne: case OpKind::Sign: case OpKind::Floor: case OpKind::Ceil: case OpKind::Round:
    case OpKind::Trunc: case OpKind::IsNan: case OpKind::IsInf:
      return true;
    default: return false;
  }
}

/// Float32 or a 16-bit float: what autocast may recast (never float64).
bool castable(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }

class Autocast {
 public:
  Autocast(const Graph& g, std::optional<DType> low) : g_(g), low_(low), uses_(UseInfo::compute(g)) {
    out_.name = g.name;
    seen_.assign(g.values.size(), kNoValue);
  }

  Graph run() {
    for (const GraphInput& gi : g_.inputs)
      seen_[gi.value] = out_.addInput(g_.values[gi.value].name, g_.type(gi.value), gi.role, gi.requires_grad);
    groupOf_.assign(g_.nodes.size(), 0);
    for (size_t b = 0, id = 0; b < g_.nodes.size(); ++id) {
      size_t e = b + 1;
      while (e < g_.nodes.size() && sameGroup(g_.nodes[b], g_.nodes[e])) ++e;
      for (size_t k = b; k < e; ++k) groupOf_[k] = static_cast<int32_t>(id);
      b = e;
    }
    for (size_t b = 0; b < g_.nodes.size();) {
      size_t e = b + 1;
      while (e < g_.nodes.size() && groupOf_[e] == groupOf_[b]) ++e;
      group(b, e);
      b = e;
    }
    for (GraphOutput o : g_.outputs) {
      o.value = seen_[o.value];
      out_.outputs.push_back(std::move(o));
    }
    return std::move(out_);
  }

 private:
  static bool sameGroup(const Node& a, const Node& b) {
    if (a.loc.node.empty() || a.loc.op.empty()) return false;
    if (a.op == OpKind::EpilogueCopy || b.op == OpKind::EpilogueCopy) return false;
    return a.loc.node == b.loc.node && a.loc.op == b.loc.op && a.loc.file == b.loc.file;
  }

  /// `v` (of out_) as dtype `d`: one cast per value and dtype.
  ValueId castTo(ValueId v, DType d, const SourceLoc& at) {
    if (out_.type(v).dtype == d) return v;
    auto [it, fresh] = casts_.try_emplace({v, d}, kNoValue);
    if (!fresh) return it->second;
    SourceLoc loc{at.file, at.node, "autocast"};
    ValueId c = addOp(out_, OpKind::Cast, {v}, Attrs{{"dtype", std::string(dtypeName(d))}}, loc);
    out_.tryRename(c, out_.values[v].name + "_" + dtypeName(d));
    return it->second = c;
  }

  /// Note [Cast before views]: a lowered op's operand that is a reshape,
  /// transpose, permute, (un)squeeze or expand of x is that view of x's cast
  /// (the same values): the cast then reads x itself, shaped as x's producer
  /// wrote it, so fusion can compute it in that producer's kernel -- a
  /// LayerNorm's row group stores the bf16 copy beside its float32 result,
  /// a transpose's contiguous copy is made in bf16 -- instead of a launch
  /// that reads x back (the transformer's forward: one per Linear input and
  /// attention operand).  The backward then casts the gradient in the
  /// producer's shape, where the consuming kernel reads it as an expression.
  /// A parameter's t() becomes t(cast(weight)): one cast per parameter, read
  /// transposed by the GEMM as the float32 program reads the weight.  Slices
  /// and selects keep the cast after them (it reads fewer elements).
  ValueId lowOperand(ValueId v, DType low, const SourceLoc& at) {
    const int32_t d = out_.values[v].node;
    if (d < 0 || out_.type(v).dtype == low) return castTo(v, low, at);
    const Node n = out_.nodes[static_cast<size_t>(d)];  // a copy: adding nodes moves them
    switch (n.op) {
      case OpKind::View: case OpKind::T: case OpKind::Transpose: case OpKind::Permute: case OpKind::Unsqueeze:
      case OpKind::Squeeze: case OpKind::Expand:
        break;
      default: return castTo(v, low, at);
    }
    if (auto it = casts_.find({v, low}); it != casts_.end()) return it->second;
    const ValueId src = lowOperand(n.inputs[0], low, at);
    SourceLoc loc{at.file, at.node, "autocast"};
    ValueId c = kNoValue;
    try {
      c = addOp(out_, n.op, {src}, n.attrs, loc);
    } catch (const UserError&) {
      return castTo(v, low, at);  // not a view of the cast's layout: cast the view
    }
    if (out_.type(c).sizes != out_.type(v).sizes) return castTo(v, low, at);
    out_.tryRename(c, out_.values[v].name + "_" + dtypeName(low));
    return casts_[{v, low}] = c;
  }

  /// Nodes [b, e) of g_: one user op.
  void group(size_t b, size_t e) {
    const Node& first = g_.nodes[b];
    std::vector<bool> inGroup(g_.values.size(), false);
    for (size_t k = b; k < e; ++k)
      for (ValueId v : g_.nodes[k].outputs) inGroup[v] = true;
    // The group's floating operands from outside, in order of first use.
    std::vector<ValueId> ext;
    std::vector<bool> listed(g_.values.size(), false);
    for (size_t k = b; k < e; ++k)
      for (ValueId v : g_.nodes[k].inputs)
        if (!inGroup[v] && !listed[v] && isFloating(g_.type(v).dtype)) listed[v] = true, ext.push_back(v);
    // Note [Autocast regions]: the group's autocast dtype, if any.
    const bool lowering = (first.tags & (kAutocastBf16 | kAutocastFp16)) || (!(first.tags & kAutocastOff) && low_);
    const DType low = first.tags & kAutocastBf16 ? DType::BF16 : first.tags & kAutocastFp16 ? DType::F16 : low_.value_or(DType::F32);
    Policy p = lowering ? policyOf(first.loc) : Policy::Follow;
    if (first.op == OpKind::CustomGrad || first.op == OpKind::KeepGrad || first.op == OpKind::AutogradFunction ||
        first.op == OpKind::EpilogueCopy)
      p = Policy::Fp32;  // as traced: their dtypes are the user's
    bool changed = false;
    for (ValueId v : ext) changed = changed || out_.type(seen_[v]).dtype != g_.type(v).dtype;
    std::vector<ValueId> raw(g_.values.size(), kNoValue);
    // A cast's result has its dtype whatever its operand's (`.float()` after
    // a region): rebuilt on the new operand.  Only where the program's own
    // regions are cast (a whole --precision graph keeps its rule).
    if (first.op == OpKind::Cast && e == b + 1 && (!low_ || (first.tags & kAutocastTags))) {
      rebuild(b, e, raw, inGroup, low);
      return publish(b, e, raw, std::nullopt, kNoValue);
    }
    auto original = [&](ValueId v) { return castTo(seen_[v], g_.type(v).dtype, first.loc); };
    if (p == Policy::Lower) {
      bool any = false;
      for (ValueId v : ext) any = any || castable(g_.type(v).dtype);
      if (any) {
        for (ValueId v : ext)
          if (castable(g_.type(v).dtype)) raw[v] = lowOperand(seen_[v], low, first.loc);
        rebuild(b, e, raw, inGroup, low);
        publish(b, e, raw, std::nullopt, kNoValue);
        return;
      }
    }
    if (!changed || p == Policy::Lower) return copy(b, e, raw, inGroup, [&](ValueId v) { return seen_[v]; });
    if (p == Policy::Fp32) return copy(b, e, raw, inGroup, original);
    // Follow, Promote, BatchNorm: the dtype ATen's kernel returns for the new
    // operands, where the group computed in float32.
    DType before = DType::Bool, after = DType::Bool;
    bool dims = false;
    for (ValueId v : ext) dims = dims || g_.type(v).rank() > 0;
    for (ValueId v : ext) {
      if (p != Policy::Promote && dims && g_.type(v).rank() == 0) continue;
      before = before == DType::Bool ? g_.type(v).dtype : promoteTypes(before, g_.type(v).dtype);
      DType now = out_.type(seen_[v]).dtype;
      after = after == DType::Bool ? now : promoteTypes(after, now);
    }
    if (before != DType::F32) return copy(b, e, raw, inGroup, original);
    if (p == Policy::BatchNorm) {
      // The input is the operand of highest rank (the statistics are 1-D).
      ValueId x = ext[0];
      for (ValueId v : ext)
        if (g_.type(v).rank() > g_.type(x).rank()) x = v;
      copy(b, e, raw, inGroup, original);
      return publish(b, e, raw, out_.type(seen_[x]).dtype, x);
    }
    bool allExact = true;
    for (size_t k = b; k < e; ++k) allExact = allExact && exact(g_.nodes[k].op);
    if (allExact && p == Policy::Follow) {
      for (ValueId v : ext) raw[v] = seen_[v];
      rebuild(b, e, raw, inGroup, after);
      return publish(b, e, raw, std::nullopt, kNoValue);
    }
    copy(b, e, raw, inGroup, original);
    publish(b, e, raw, after, kNoValue);
  }

  /// Copies nodes [b, e), reading outside operands through `outside`.
  template <class F>
  void copy(size_t b, size_t e, std::vector<ValueId>& raw, const std::vector<bool>& inGroup, F&& outside) {
    for (size_t k = b; k < e; ++k) {
      const Node& n = g_.nodes[k];
      for (ValueId v : n.inputs)
        if (!inGroup[v] && raw[v] == kNoValue) raw[v] = outside(v);
      out_.copyNode(g_, n, raw);
      out_.nodes.back().tags &= ~kAutocastTags;
    }
    publish(b, e, raw, std::nullopt, kNoValue);
  }

  /// Rebuilds nodes [b, e) on `raw` (outside operands already there), types
  /// inferred again; floating float32 constants become `dtype`.
  void rebuild(size_t b, size_t e, std::vector<ValueId>& raw, const std::vector<bool>& inGroup, DType dtype) {
    for (size_t k = b; k < e; ++k) {
      const Node& n = g_.nodes[k];
      std::vector<ValueId> ins;
      for (ValueId v : n.inputs) {
        if (!inGroup[v] && raw[v] == kNoValue) raw[v] = seen_[v];
        ins.push_back(raw[v]);
      }
      Attrs a = n.attrs;
      if (n.op == OpKind::Constant && g_.type(n.outputs[0]).dtype == DType::F32) a["dtype"] = std::string(dtypeName(dtype));
      // Built under a scratch name, then given the original's (addNode
      // names results after the location, which would take those names).
      SourceLoc scratch = n.loc;
      scratch.node = "autocast.tmp";
      std::vector<ValueId> outs;
      try {
        outs = addNode(out_, n.op, ins, a, scratch, n.phase, n.tags & ~kAutocastTags, n.regions);
      } catch (const UserError& e) {
        throw UserError(n.loc, "autocast: " + e.diagnostics().front().message);
      }
      out_.nodes.back().loc = n.loc;
      for (size_t i = 0; i < outs.size(); ++i) {
        out_.tryRename(outs[i], g_.values[n.outputs[i]].name);
        raw[n.outputs[i]] = outs[i];
      }
    }
  }

  /// What later groups see of the results of [b, e): `raw`, or, with `to`,
  /// float32 results cast to it (only those shaped like `like`, if given).
  void publish(size_t b, size_t e, const std::vector<ValueId>& raw, std::optional<DType> to, ValueId like) {
    for (size_t k = b; k < e; ++k)
      for (ValueId v : g_.nodes[k].outputs) {
        ValueId r = raw[v];
        if (to && g_.type(v).dtype == DType::F32 && (like == kNoValue || g_.type(v).sizes == g_.type(like).sizes) &&
            usedOutside(v, b, e))
          r = castTo(r, *to, g_.nodes[k].loc);
        seen_[v] = r;
      }
  }

  bool usedOutside(ValueId v, size_t b, size_t e) const {
    if (uses_.is_output[v]) return true;
    for (int32_t u : uses_.users[v])
      if (static_cast<size_t>(u) < b || static_cast<size_t>(u) >= e) return true;
    return false;
  }

  const Graph& g_;
  std::optional<DType> low_;  ///< --precision's, for untagged groups
  UseInfo uses_;
  Graph out_;
  std::vector<ValueId> seen_;  ///< g_ value -> out_ value other groups read
  std::vector<int32_t> groupOf_;
  std::map<std::pair<ValueId, DType>, ValueId> casts_;
};

}  // namespace

Graph autocast(const Graph& g, std::optional<DType> low) {
  AOTC_CHECK(!low || *low == DType::BF16 || *low == DType::F16, "autocast to ", dtypeName(*low));
  return Autocast(g, low).run();
}

bool hasAutocastRegions(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.tags & kAutocastTags) return true;
  return false;
}

Graph autocastBf16(const Graph& g) { return autocast(g, DType::BF16); }
Graph autocastFp16(const Graph& g) { return autocast(g, DType::F16); }

}  // namespace aotc
