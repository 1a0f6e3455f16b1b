//===- cuda_emit.cpp - Lower forward/backward programs to plan steps -------===//
//
// The walk of Note [Codegen stages] (lowering.h): plans fusion (stage 1),
// then visits the program's nodes in order and gives each the step its plan
// and its op say -- a kernel (stage 2), a library call (stage 3), a view
// (pointer arithmetic on a root buffer, no launch) or nothing (inlined into
// a consumer's kernel) -- and finally plans the arena (stage 4).
// Buffers: `input` (a caller or saved tensor), `alloc` (owned, dense) and
// `view` (root buffer + sizes/strides/offset from the IR type).
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cctype>
#include <set>

#include "aotc/codegen/codegen.h"
#include "aotc/codegen/prelude.h"
#include "aotc/ir/host_tensor.h"
#include "aotc/ops/ops.h"
#include "aotc/ops/reductions.h"
#include "aotc/ops/rules.h"
#include "lowering.h"

namespace aotc {

const char* devicePrelude() { return kDevicePrelude; }

namespace cudagen {

void ProgramBuilder::declare(ValueId v, plan::BufferKind kind, const std::string& roleOrBase) {
  const Value& val = g.values[v];
  plan::Buffer b{val.name, kind, layout(val.type), "", "", 0, -1};
  if (kind == plan::BufferKind::Input) b.role = roleOrBase;
  if (kind == plan::BufferKind::View) b.base = roleOrBase;
  if (kind == plan::BufferKind::Alloc) b.bytes = val.type.storageSpan() * dtypeSize(val.type.dtype);
  root[v] = kind == plan::BufferKind::View ? roleOrBase : val.name;
  buffers.push_back(std::move(b));
}

void ProgramBuilder::declareView(ValueId v, const std::string& base, const TensorType& t) {
  buffers.push_back(plan::Buffer{g.values[v].name, plan::BufferKind::View, layout(t), "", base, 0, -1});
  root[v] = base;
}

void ProgramBuilder::ensureView(ValueId v) {
  if (!root[v].empty()) return;
  int32_t d = g.values[v].node;
  AOTC_CHECK(d >= 0 && opInfo(g.nodes[static_cast<size_t>(d)].op).category == OpCategory::View, "a view whose source has no buffer");
  ValueId src = g.nodes[static_cast<size_t>(d)].inputs[0];
  ensureView(src);
  declare(v, plan::BufferKind::View, root[src]);
}

void ProgramBuilder::pushLaunch(const std::string& kernel, int64_t threads, int64_t per, int64_t block, std::vector<std::string> args,
                                const plan::LaunchWork& work) {
  plan::Launch l;
  l.kernel = kernel;
  l.grid = {std::max<int64_t>(1, (threads + per - 1) / per), 1, 1};
  l.block = {block, 1, 1};
  l.args = std::move(args);
  if (!dynamic()) l.work = work;
  grids.resize(steps.size());
  grids.push_back({threads, per});
  stepNodes.resize(steps.size());
  stepNodes.push_back(std::move(pendingNodes_));
  pendingNodes_.clear();
  steps.push_back(std::move(l));
}

int64_t ProgramBuilder::bytes(const std::vector<ValueId>& vs) const {
  int64_t b = 0;
  for (ValueId v : vs) b += g.type(v).numel() * static_cast<int64_t>(dtypeSize(g.type(v).dtype));
  return b;
}

// A launch that moves more than the rule's minimum halves its block until
// every SM has one, down to one warp (a kernel of few elements that reads
// many operands: 8192 units x 10 operands is over a MiB in 128 blocks of 64).
int64_t ProgramBuilder::unitBlock(int64_t threads, int64_t touched) const {
  int64_t block = kBlock;
  if (!dynamic() && rule.sms > 0 && touched > rule.minBytes)
    while (block > 32 && (threads + block - 1) / block < rule.sms) block /= 2;
  return block;
}

void ProgramBuilder::launch(const std::string& kernel, const std::vector<ValueId>& args, ValueId out, int64_t threads,
                            const std::string& outRoot, int64_t serial) {
  std::vector<std::string> a{outRoot.empty() ? root[out] : outRoot};
  for (ValueId v : args) a.push_back(root[v]);
  // Without an output value (a GEMM operand's dense copy): it writes what it reads.
  const int64_t by = out == kNoValue ? 2 * bytes(args) : bytes(args) + bytes({out}), block = unitBlock(threads, by);
  pushLaunch(kernel, threads, block, block, std::move(a), plan::LaunchWork{by, std::max<int64_t>(1, (threads + block - 1) / block), serial, 1});
}

// Note [Pointwise grids]: a static pointwise kernel loops over its units
// with a grid stride, and its grid is capped at twice the threads the
// target's SMs hold at once (132 x 2048 x 2 on an H100): enough blocks for
// every SM and the scheduler's tail, no more, and each thread then handles
// a few units, as PyTorch's elementwise kernels do.  The manifest records
// the vector width (elements per access) beside the launch's work.
// Dynamic-shape kernels keep one thread per unit (their grid is a rule of
// the sizes, Note [Dynamic codegen]).
void ProgramBuilder::launchPointwise(const std::string& kernel, const std::vector<ValueId>& args, ValueId out, int64_t threads,
                                     int64_t vector, bool strided, const std::string& outRoot) {
  std::vector<std::string> a{outRoot.empty() ? root[out] : outRoot};
  for (ValueId v : args) a.push_back(root[v]);
  const int64_t by = out == kNoValue ? 2 * bytes(args) : bytes(args) + bytes({out}), block = unitBlock(threads, by);
  const int64_t full = std::max<int64_t>(1, (threads + block - 1) / block);
  int64_t grid = full;
  if (strided && strideThreads() > 0) grid = std::min(grid, std::max<int64_t>(1, strideThreads() / block));
  const int64_t loops = std::max<int64_t>(1, (threads + grid * block - 1) / (grid * block));
  // An uncapped grid keeps its {threads, per} rule (Note [Dynamic codegen]).
  pushLaunch(kernel, grid < full ? grid * block : threads, block, block, std::move(a), plan::LaunchWork{by, grid, loops * vector, 1, vector});
}

void ProgramBuilder::launchAll(const std::string& kernel, const Node& n, int64_t threads, int64_t serial) {
  std::vector<std::string> a;
  for (ValueId o : n.outputs) a.push_back(root[o]);
  for (ValueId v : n.inputs) a.push_back(root[v]);
  std::vector<ValueId> touched = n.outputs;
  touched.insert(touched.end(), n.inputs.begin(), n.inputs.end());
  const int64_t by = bytes(touched), block = unitBlock(threads, by);
  pushLaunch(kernel, threads, block, block, std::move(a), plan::LaunchWork{by, std::max<int64_t>(1, (threads + block - 1) / block), serial, 1});
}

/// Note [Launch shape]: the longest loop an op row's element kernel runs per
/// thread, as its text spells it: the largest literal bound of a `for`
/// (`j < 4096`).  A bound that is a coordinate (cumsum's `j <= c[1]`) is
/// not seen: such loops are at most the dim's size, which the row knows.
int64_t textSerial(const std::string& src) {
  int64_t most = 1;
  for (size_t p = 0; (p = src.find("for (", p)) != std::string::npos; ++p) {
    size_t semi = src.find(';', p);
    if (semi == std::string::npos) break;
    size_t semi2 = src.find(';', semi + 1);
    if (semi2 == std::string::npos) break;
    std::string cond = src.substr(semi + 1, semi2 - semi - 1);
    size_t lt = cond.find('<');
    if (lt == std::string::npos) continue;
    size_t d = cond.find_first_not_of(" =", lt + 1);
    if (d == std::string::npos || !std::isdigit(static_cast<unsigned char>(cond[d]))) continue;
    size_t e = cond.find_first_not_of("0123456789", d);
    if (e != std::string::npos && cond.find_first_not_of(" )", e) != std::string::npos) continue;  // an expression, not a literal
    most = std::max<int64_t>(most, std::stoll(cond.substr(d, e == std::string::npos ? std::string::npos : e - d)));
  }
  return most;
}

/// Note [32-bit indexing]: when no value of the program spans 2^31
/// elements, every index, coordinate and offset of its kernels fits an int;
/// 64-bit integer arithmetic costs several instructions on a GPU.
bool ProgramBuilder::wideIndex() {
  if (!wide_) {
    bool w = false;
    for (const Value& v : g.values) w = w || v.type.numel() >= (int64_t{1} << 31) || v.type.storageSpan() >= (int64_t{1} << 31);
    wide_ = w;
  }
  return *wide_;
}

void ProgramBuilder::attributeSteps(int32_t idx) {
  stepNodes.resize(steps.size());
  for (auto& s : stepNodes)
    if (s.empty()) s.push_back(idx);
}

std::string ProgramBuilder::addKernel(std::string body, const std::vector<std::string>& who, const std::vector<int32_t>& ids) {
  pendingNodes_ = ids;
  if (!wideIndex())
    for (size_t p = 0; (p = body.find("aotc_i64", p)) != std::string::npos;) body.replace(p, 8, "int");
  if (kernelChecksIndices(body)) {
    // Note [Index errors]: the step's tag is the last argument (after a
    // dynamic-shape kernel's symbols, which Note [Dynamic codegen] inserts
    // before it).
    size_t sig = body.find("@KERNEL@(");
    AOTC_CHECK(sig != std::string::npos, "a kernel without its signature");
    body.insert(body.find(')', sig), ", long long aotc_step");
  }
  std::string src = std::string("#include \"aotc_prelude.cuh\"\n") + body;
  // The name is a hash of the whole text with a placeholder for the name.
  std::string name = "k_" + sha256Hex(src).substr(0, 16);
  size_t p;
  while ((p = src.find("@KERNEL@")) != std::string::npos) src.replace(p, 8, name);
  auto& k = kernels[name];
  k.name = name;
  k.source = src;
  auto& seen = kernelNodes_[name];  // a set beside the list: a kernel may serve 10^5 nodes
  for (const std::string& w : who)
    if (seen.insert(w).second) k.nodes.push_back(w);
  return name;
}

namespace {

/// The launches of a reduction kernel `k` writing `outs`: one kernel, or
/// (Note [Reduction schedules]) a split one writing `partials` partials per
/// output to a workspace -- an owned buffer live from the first kernel to
/// the second, which the memory plan places -- and the combine kernel that
/// reads them and writes `outs`.
void pushReduction(ProgramBuilder& b, const KernelEmitter::Kernel& k, const std::vector<ValueId>& outs, int64_t partials) {
  const Graph& g = b.g;
  std::vector<std::string> results, operands;
  for (ValueId o : outs) results.push_back(b.root[o]);
  for (ValueId v : k.leaves) operands.push_back(b.root[v]);
  const int64_t outBytes = b.bytes(outs);
  // Note [Reductions that store their input]: written by the first kernel,
  // parameters after its operands.
  const int64_t storeBytes = b.bytes(k.stores);
  for (ValueId v : k.stores) operands.push_back(b.root[v]);
  if (k.combine.empty()) {
    results.insert(results.end(), operands.begin(), operands.end());
    const int64_t blocks = std::max<int64_t>(1, (k.threads + k.per - 1) / k.per);
    b.pushLaunch(k.name, k.threads, k.per, k.block, std::move(results),
                 plan::LaunchWork{b.bytes(k.leaves) + storeBytes + outBytes, blocks, k.serial, 1});
    return;
  }
  const int64_t outputs = g.type(outs.at(0)).numel(), n = partials * k.split * outputs;
  plan::Buffer ws{g.values[outs[0]].name + ".partials", plan::BufferKind::Alloc, plan::Layout{k.workspace, {n}, {1}, 0}, "", "",
                  n * dtypeSize(k.workspace), -1};
  const int64_t wsBytes = ws.bytes;
  b.buffers.push_back(ws);
  operands.insert(operands.begin(), ws.name);
  b.pushLaunch(k.name, k.threads, k.per, k.block, std::move(operands),
               plan::LaunchWork{b.bytes(k.leaves) + storeBytes + wsBytes, k.threads, k.serial, k.split});
  results.push_back(ws.name);
  b.pushLaunch(k.combine, outputs, kBlock, kBlock, std::move(results),
               plan::LaunchWork{wsBytes + outBytes, (outputs + kBlock - 1) / kBlock, k.split, 1});
  b.stepNodes.back() = b.stepNodes[b.stepNodes.size() - 2];  // the combine computes the same nodes
}

/// Note [Cast groups]: launches each group's kernel before its node, and
/// declares the views of its results that the walk passed before it ran.
class CastGroups {
 public:
  CastGroups(ProgramBuilder& b, KernelEmitter& emit, const FusionPlan& plan) : b_(b), emit_(emit), plan_(plan) {}

  void launchAt(int32_t at) {
    if (b_.dynamic()) return;  // each member its own kernel, where it stands
    const Graph& g = b_.g;
    for (const FusionPlan::CastGroup& C : plan_.castGroups) {
      if (C.at != at) continue;
      std::vector<const Node*> ns;
      std::vector<ValueId> outs;
      for (int32_t m : C.members) {
        ns.push_back(&g.nodes[static_cast<size_t>(m)]);
        outs.push_back(ns.back()->outputs[0]);
        b_.declare(outs.back(), plan::BufferKind::Alloc);
        b_.ensureView(ns.back()->inputs[0]);
      }
      KernelEmitter::Kernel k = emit_.castGroup(ns);
      std::vector<std::string> a;
      for (ValueId o : outs) a.push_back(b_.root[o]);
      for (ValueId l : k.leaves) a.push_back(b_.root[l]);
      std::vector<ValueId> touched = outs;
      touched.insert(touched.end(), k.leaves.begin(), k.leaves.end());
      b_.pushLaunch(k.name, k.threads, kBlock, kBlock, std::move(a), plan::LaunchWork{b_.bytes(touched), k.threads / kBlock, 1, 1});
    }
    std::vector<ValueId> views = std::move(waiting_);
    waiting_.clear();
    for (ValueId v : views)
      if (!waiting(v)) b_.ensureView(v);  // else waiting again
  }

  /// Whether view `v` reads (through views) a group's result not computed
  /// yet; if so it is declared after the group's launch.
  bool waiting(ValueId v) {
    const Graph& g = b_.g;
    ValueId base = v;
    while (g.values[base].node >= 0 && isView(g.nodes[static_cast<size_t>(g.values[base].node)].op) && b_.root[base].empty())
      base = g.nodes[static_cast<size_t>(g.values[base].node)].inputs[0];
    const int32_t d = g.values[base].node;
    if (b_.dynamic() || !b_.root[base].empty() || d < 0 || plan_.castGroupOf[static_cast<size_t>(d)] < 0) return false;
    if (std::find(waiting_.begin(), waiting_.end(), v) == waiting_.end()) waiting_.push_back(v);
    return true;
  }

 private:
  ProgramBuilder& b_;
  KernelEmitter& emit_;
  const FusionPlan& plan_;
  std::vector<ValueId> waiting_;
};

/// Gives every node of `g` its step, in program order.
void lowerNodes(ProgramBuilder& b, const FusionPlan& plan) {
  const Graph& g = b.g;
  KernelEmitter emit(b, plan);
  for (const GraphInput& in : g.inputs) b.declare(in.value, plan::BufferKind::Input, inputRoleName(in.role));
  std::set<int32_t> momentsSecond;  // Note [Welford moments]: computed with their mean
  if (!b.dynamic()) {
    for (const auto& [a, v] : plan.moments) momentsSecond.insert(v);
    for (const auto& [a, more] : plan.siblings) momentsSecond.insert(more.begin(), more.end());  // Note [Sibling reductions]
  }
  std::set<int32_t> storedBy;  // Note [Reductions that store their input]: computed by a later reduction
  for (const auto& [r, p] : plan.storesInput)
    if (storedInputOf(plan, r, b.dynamic()) >= 0) storedBy.insert(p);
  CastGroups casts(b, emit, plan);
  for (size_t idx = 0; idx < g.nodes.size(); ++idx) {
    const Node& n = g.nodes[idx];
    casts.launchAt(static_cast<int32_t>(idx));
    if (plan.inlined[idx]) continue;  // computed inside its consumer's kernel
    if (int32_t gi = plan.groupOf[idx]; gi >= 0) {
      const RowGroup& G = plan.groups[static_cast<size_t>(gi)];
      if (static_cast<int32_t>(idx) == G.seed) {
        KernelEmitter::GroupKernel k = emit.rowGroup(G);
        for (ValueId o : k.outs) b.declare(o, plan::BufferKind::Alloc);
        std::vector<std::string> a;
        for (ValueId o : k.outs) a.push_back(b.root[o]);
        for (ValueId l : k.leaves) {
          b.ensureView(l);
          a.push_back(b.root[l]);
        }
        std::vector<ValueId> touched = k.outs;
        touched.insert(touched.end(), k.leaves.begin(), k.leaves.end());
        b.pushLaunch(k.name, k.threads, k.per, k.block, std::move(a), plan::LaunchWork{b.bytes(touched), k.blocks, k.serial, 1});
      }
      b.attributeSteps(static_cast<int32_t>(idx));
      if (!G.lowerViews.count(static_cast<int32_t>(idx))) continue;  // computed by the group's kernel
    }
    if (!b.dynamic() && plan.castGroupOf[idx] >= 0) continue;  // Note [Cast groups]: by its group's kernel
    const OpInfo& info = opInfo(n.op);
    if (n.op == OpKind::EpilogueCopy) {
      ValueId dst = n.inputs[0];
      Node c = n;
      c.inputs = {n.inputs[1]};
      TensorType target = g.type(dst);
      plan::Epilogue ep{g.values[dst].name, (n.tags & kMustBeInForward) ? plan::Phase::Forward : plan::Phase::Backward, {}};
      if (int32_t d = regionSource(g, n); d >= 0) {
        const Node& sc = g.nodes[static_cast<size_t>(d)];
        OpKind view = *opRule(sc.op)->scatters;
        target = inferTypes(view, {target}, sc.attrs)[0];  // the region, over the caller's buffer
        c.inputs = {sc.inputs[1]};
        ep.region = plan::ViewOp{opName(view), sc.attrs};
      }
      KernelEmitter::Kernel k = emit.pointwise(c, target);
      b.launchPointwise(k.name, k.leaves, dst, k.threads, k.vector, k.strided);
      std::get<plan::Launch>(b.steps.back()).epilogue = ep;
      b.attributeSteps(static_cast<int32_t>(idx));
      continue;
    }
    ValueId out = n.outputs.at(0);
    if (auto it = plan.biasAdds.find(static_cast<int32_t>(idx)); it != plan.biasAdds.end()) {
      // Computed by the GEMM's bias epilogue, in the GEMM's output buffer.
      ValueId prod = g.nodes[static_cast<size_t>(it->second.first)].outputs[0];
      b.declare(out, plan::BufferKind::View, b.root[prod]);
      for (auto& s : b.stepNodes)
        if (std::find(s.begin(), s.end(), it->second.first) != s.end()) s.push_back(static_cast<int32_t>(idx));
      continue;
    }
    // Note [GEMM relu epilogue], Note [GEMM scale], Note [GEMM into its
    // copy]: computed by a GEMM; the relu's and an unmoved scale's values
    // are the GEMM's buffer, the copy's was declared by the GEMM, and the
    // views between (and a scale written into the copy) are read by nothing.
    int32_t byGemm = -1;
    if (auto r = plan.reluEpilogues.find(static_cast<int32_t>(idx)); r != plan.reluEpilogues.end()) byGemm = r->second;
    else if (auto w = plan.writtenByGemm.find(static_cast<int32_t>(idx)); w != plan.writtenByGemm.end()) byGemm = w->second;
    else if (auto c = plan.scaleOf.find(static_cast<int32_t>(idx)); c != plan.scaleOf.end()) byGemm = c->second;
    if (byGemm >= 0) {
      if (!plan.writtenByGemm.count(static_cast<int32_t>(idx))) b.declare(out, plan::BufferKind::View, b.root[g.nodes[static_cast<size_t>(byGemm)].outputs[0]]);
      for (auto& s : b.stepNodes)
        if (std::find(s.begin(), s.end(), byGemm) != s.end()) s.push_back(static_cast<int32_t>(idx));
      continue;
    }
    if (info.category == OpCategory::View) {
      if (casts.waiting(out)) continue;  // declared when its cast group has run
      b.ensureView(out);  // pointer arithmetic on its root buffer (perhaps declared early for a row group)
      continue;
    }
    if (momentsSecond.count(static_cast<int32_t>(idx))) continue;
    if (storedBy.count(static_cast<int32_t>(idx))) {
      // Note [Reductions that store their input]: the reduction's kernel writes it.
      b.declare(out, plan::BufferKind::Alloc);
      continue;
    }
    const TensorType& ot = g.type(out);
    if (auto gi = plan.gemmInto.find(static_cast<int32_t>(idx)); gi != plan.gemmInto.end()) {
      // Note [GEMM into its copy]: the product lives in its copy's buffer.
      ValueId copy = g.nodes[static_cast<size_t>(gi->second.copy)].outputs[0];
      b.declare(copy, plan::BufferKind::Alloc);
      TensorType t = ot;
      t.strides = gi->second.strides;
      b.declareView(out, b.root[copy], t);
    } else {
      for (ValueId o : n.outputs) b.declare(o, plan::BufferKind::Alloc);
    }
    if (auto mo = plan.moments.find(static_cast<int32_t>(idx)); mo != plan.moments.end() && !b.dynamic()) {
      // Note [Welford moments]: the mean and the variance, x read once.
      ValueId var = g.nodes[static_cast<size_t>(mo->second)].outputs.at(0);
      b.declare(var, plan::BufferKind::Alloc);
      pushReduction(b, emit.moments(n, g.nodes[static_cast<size_t>(mo->second)]), {out, var}, 2);
      continue;
    }
    if (auto sib = plan.siblings.find(static_cast<int32_t>(idx)); sib != plan.siblings.end() && !b.dynamic()) {
      // Note [Sibling reductions]: every result at the first, operands read once.
      std::vector<const Node*> ns{&n};
      std::vector<ValueId> outs{out};
      for (int32_t m : sib->second) {
        ns.push_back(&g.nodes[static_cast<size_t>(m)]);
        outs.push_back(g.nodes[static_cast<size_t>(m)].outputs.at(0));
        b.declare(outs.back(), plan::BufferKind::Alloc);
      }
      pushReduction(b, emit.siblings(ns), outs, static_cast<int64_t>(ns.size()));
      continue;
    }
    if (info.category == OpCategory::Pointwise || isScatterExpr(n.op)) {  // Note [Scatter expressions]
      KernelEmitter::Kernel k = emit.pointwise(n, ot);
      b.launchPointwise(k.name, k.leaves, out, k.threads, k.vector, k.strided);
      continue;
    }
    if (reductionRule(n.op)) {
      pushReduction(b, emit.reduction(n), {out}, 1);
      continue;
    }
    // Every other op: as its row says (Note [Op rows]).
    const OpRule* row = opRule(n.op);
    AOTC_CHECK(row, "cannot lower ", info.name);
    switch (row->cuda) {
      case aotc::Lowering::Element: {
        const std::string kernel = emit.element(n, row->body(g, n));
        b.launchAll(kernel, n, ot.numel(), textSerial(b.kernels.at(kernel).source));
        break;
      }
      case aotc::Lowering::Fill: b.launch(emit.constant(n), {}, out, ot.numel()); break;
      case aotc::Lowering::Gemm: lowerGemm(b, emit, plan, n, ot.rank() == 3 ? 1 : 0); break;
      case aotc::Lowering::Conv: lowerConv(b, emit, plan, n); break;
      default: AOTC_CHECK(false, "cannot lower ", info.name);
    }
    b.attributeSteps(static_cast<int32_t>(idx));
  }
  casts.launchAt(static_cast<int32_t>(g.nodes.size()));
}


plan::Program lowerProgram(const Graph& g, std::map<std::string, KernelSource>& kernels, const std::string& ir, const Graph* decide,
                           bool wide, const LaunchShapeRule& rule, std::vector<std::pair<int64_t, int64_t>>& grids,
                           std::vector<std::vector<int32_t>>& stepNodes) {
  ProgramBuilder b(g, kernels);
  b.rule = rule;
  if (decide) b.rule.sms = 0;  // Note [Dynamic codegen]: the legacy shapes, the same at every size
  std::optional<FusionPlan> decidePlan;
  if (decide) {
    decidePlan = planFusion(*decide, b.rule);
    b.decide = decide;
    b.decidePlan = &*decidePlan;
    b.presetWide(wide);
  }
  lowerNodes(b, planFusion(g, b.rule));
  plan::Program prog;
  prog.ir = ir;
  prog.buffers = std::move(b.buffers);
  prog.steps = std::move(b.steps);
  for (auto& o : g.outputs) prog.outputs.push_back({outputRoleName(o.role), g.values[o.value].name});
  planArena(prog);
  grids = std::move(b.grids);
  grids.resize(prog.steps.size());
  stepNodes = std::move(b.stepNodes);
  stepNodes.resize(prog.steps.size());
  return prog;
}

}  // namespace
}  // namespace cudagen

CodegenResult generateCuda(const Partition& p, const CodegenOptions& opts) {
  CodegenResult r;
  r.forward = cudagen::lowerProgram(p.forward, r.kernels, "forward.ir", opts.decide ? &opts.decide->forward : nullptr, opts.wide,
                                    opts.launchShape, r.forwardGrids, r.forwardStepNodes);
  r.backward = cudagen::lowerProgram(p.backward, r.kernels, "backward.ir", opts.decide ? &opts.decide->backward : nullptr, opts.wide,
                                     opts.launchShape, r.backwardGrids, r.backwardStepNodes);
  return r;
}

}  // namespace aotc
