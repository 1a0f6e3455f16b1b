//===- pipeline.cpp - The engine pipeline, straight-line ------------------===//
//
// functionalize -> [autocast] -> dce -> autodiff -> strip-autograd-markers ->
// functionalize-joint -> dce -> [loss-scaling] or [optimizer] (Note [Loss
// scaling with an optimizer]) -> partition.
//  * functionalize first: autodiff rules are written for pure ops and the
//    epilogue copies must exist before partitioning places them;
//  * dce before autodiff so dead forward code (e.g. the detach() nodes make_fx
//    records for autograd's saved tensors) gets no gradient;
//  * strip-autograd-markers right after autodiff: keep_grad and custom_grad
//    only carry gradient rules;
//  * functionalize-joint after that: custom backwards may mutate what their
//    forward saved, and only the joint graph knows both phases;
//  * the verifier runs after every stage.
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <stdexcept>

#include "aotc/ir/unify.h"
#include "aotc/support/parallel.h"
#include "aotc/text/text.h"
#include "aotc/passes/passes.h"

namespace aotc {

GraphPass findPass(const std::string& name) {
#define PASS(n, fn) \
  if (name == n) return fn;
#include "aotc/passes/passes.def"
#undef PASS
  return nullptr;
}

std::vector<std::string> passNames() {
  return {
#define PASS(n, fn) n,
#include "aotc/passes/passes.def"
#undef PASS
  };
}

std::vector<std::string> pipelineStageNames() {
  return {"functionalize", "autocast", "dce", "autodiff", "strip-autograd-markers", "functionalize-joint", "dce-joint", "pool-offsets",
          "loss-scaling", "optimizer", "partition.forward", "partition.backward", "channels-last.forward", "channels-last.backward"};
}

std::vector<std::string> partitionerNames() { return optionNames<Partitioner>(); }

namespace {

/// Runs one pass.  An exception that is not a UserError is a bug in the pass:
/// it says which pass (aotc::addNode adds the node, the CLI the file).
template <class Fn>
auto guarded(const char* pass, Fn&& fn) {
  try {
    return fn();
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error(cat("in pass ", pass, ": ", e.what()));
  }
}

}  // namespace

namespace {

/// Note [Symbolic pipeline]: the engine on a symbolic graph is the engine on
/// the graph at every probe binding of its symbols, each result unified
/// into one symbolic graph per stage (Note [Probing and unifying]): every
/// pass stays written for integers, and what it computes from a size (a
/// gradient's expand, a partition's saved views) comes back as an
/// expression, or the stage is refused naming what changed with the size.
/// The min-cut partitioner's choice must be the same at every probe (its
/// weights scale with the sizes); where it is not, the unification says so.
///
/// runSymbolicAt runs it at the probes of `symbols` (the captured graph's,
/// at some degrees: Note [Probe degree]); a failure to unify throws
/// UnifyFailed with the error, which runSymbolic retries at full degree.
struct UnifyFailed {
  UserError error;
};

PipelineResult runSymbolicAt(const Graph& captured, const std::vector<SymbolDecl>& symbols, const PipelineOptions& opts) {
  // The probes' pipelines are independent: they run on opts.jobs threads.
  const std::vector<sym::Bindings> pts = probeBindings(symbols);
  std::vector<PipelineResult> runs(pts.size());
  // The stages the result holds are the probes' results themselves; every
  // stage is unified only when a caller looks at them (dumps,
  // --print-ir-after), since unifying costs like a pass and so does keeping
  // a copy of each probe's graph after each pass.
  const bool everyStage = static_cast<bool>(opts.after_pass);
  std::vector<std::vector<std::pair<std::string, Graph>>> perProbe(pts.size());
  parallelFor(pts.size(), opts.jobs, [&](size_t i) {
    PipelineOptions o = opts;
    o.channels_last = false;  // Note [Channels last]: static shapes only
    o.after_pass = nullptr;
    if (everyStage) o.after_pass = [&perProbe, i](const std::string& name, const Graph& g) { perProbe[i].emplace_back(name, g); };
    runs[i] = runPipeline(instantiate(captured, pts[i]), o);
  });
  std::vector<std::string> names;
  std::map<std::string, std::vector<const Graph*>> stages;
  if (everyStage) {
    for (size_t i = 0; i < pts.size(); ++i)
      for (auto& [name, g] : perProbe[i]) {
        if (i == 0) names.push_back(name);
        stages[name].push_back(&g);
      }
  } else {
    names = {"dce", "dce-joint", "partition.forward", "partition.backward"};
    for (PipelineResult& r : runs)
      for (auto [name, g] : {std::pair{"dce", &r.functional}, {"dce-joint", &r.joint}, {"partition.forward", &r.partition.forward},
                             {"partition.backward", &r.partition.backward}})
        stages[name].push_back(g);
  }
  // The stages unify independently of each other, on opts.jobs threads.
  std::vector<Graph> done(names.size());
  try {
    parallelFor(names.size(), opts.jobs, [&](size_t i) {
      const std::string& name = names[i];
      try {
        done[i] = unifyGraphs(stages.at(name), symbols, "after " + name);
      } catch (const UserError& e) {
        std::vector<Diagnostic> d = e.diagnostics();
        for (Diagnostic& x : d) x.message = "stage " + name + ": " + x.message;
        throw UserError(std::move(d));
      }
      for (const SizeGuard& gd : captured.guards) addGuard(done[i].guards, gd);
    });
  } catch (const UserError& e) {
    throw UnifyFailed{e};
  }
  std::map<std::string, Graph> unified;
  for (size_t i = 0; i < names.size(); ++i) {
    // Not verified again: each probe's pipeline verified its stage, and the
    // unified graph at every probe binding is that probe's graph (the fits
    // are exact there), which is what verifying it would check.
    if (opts.after_pass) opts.after_pass(names[i], done[i]);
    unified[names[i]] = std::move(done[i]);
  }
  for (const PipelineResult& r : runs)
    if (r.partition.saved != runs[0].partition.saved)
      throw UserError(SourceLoc{}, "the partition saves other values at another probe of the dynamic sizes (Note [Symbolic pipeline])");
  PipelineResult r;
  // The unified graphs declare `symbols`, degrees included: the code
  // generator probes them at the same points as `probes`.
  r.functional = std::move(unified.at("dce"));
  r.joint = std::move(unified.at("dce-joint"));
  r.partition.forward = std::move(unified.at("partition.forward"));
  r.partition.backward = std::move(unified.at("partition.backward"));
  r.partition.saved = runs[0].partition.saved;
  for (PipelineResult& run : runs) r.probes.push_back(ProbeResult{std::move(run.functional), std::move(run.partition)});
  return r;
}

PipelineResult runSymbolic(const Graph& captured, const PipelineOptions& opts) {
  std::vector<SymbolDecl> symbols = probeDegrees(captured);
  if (opts.probe_degree)
    for (SymbolDecl& s : symbols) s.degree = std::clamp(*opts.probe_degree, 0, kFitDegree);
  // Note [Probe degree]: where a fit fails, again at full degree, as if
  // never lowered; at full degree the error is the user's.
  for (;;) {
    try {
      return runSymbolicAt(captured, symbols, opts);
    } catch (const UnifyFailed& f) {
      if (!fullDegree(symbols)) throw f.error;
    }
  }
}

}  // namespace

PipelineResult runPipeline(const Graph& captured, const PipelineOptions& opts) {
  auto stage = [&](const char* name, auto&& pass) {
    Graph g = guarded(name, pass);
    verifyGraph(g, std::string("after ") + name);
    if (opts.after_pass) opts.after_pass(name, g);
    return g;
  };
  verifyGraph(captured, "captured graph");
  if (captured.isSymbolic()) return runSymbolic(captured, opts);
  PipelineResult r;
  r.functional = stage("functionalize", [&] { return functionalize(captured); });
  // autocast on the functional forward, before autodiff (its backward is
  // the autocast graph's, as eager AMP's is) and before dce (it leaves
  // nothing dead, but a no-op cast is never added either).
  // Note [Autocast regions]: also for a program's own autocast blocks.
  if (opts.precision == Precision::Bf16 || opts.precision == Precision::Fp16 || hasAutocastRegions(r.functional))
    r.functional = stage("autocast", [&] {
      return autocast(r.functional, opts.precision == Precision::Bf16   ? std::optional(DType::BF16)
                                    : opts.precision == Precision::Fp16 ? std::optional(DType::F16)
                                                                        : std::nullopt);
    });
  r.functional = stage("dce", [&] { return dce(r.functional); });
  r.joint = stage("autodiff", [&] { return autodiff(r.functional); });
  r.joint = stage("strip-autograd-markers", [&] { return stripAutogradMarkers(r.joint); });
  r.joint = stage("functionalize-joint", [&] { return functionalizeJoint(r.joint); });
  r.joint = stage("dce-joint", [&] { return dce(r.joint); });
  r.joint = stage("pool-offsets", [&] { return poolOffsets(r.joint); });
  // Note [Loss scaling with an optimizer]: with an optimizer, GradScaler's
  // step is the optimizer pass's (unscale, skip and update once per step).
  const bool optimizing = opts.optimizer.kind != OptimizerKind::None;
  if (opts.loss_scaling && !optimizing)
    r.joint = stage("loss-scaling", [&] { return lossScaling(r.joint, *opts.loss_scaling); });
  if (optimizing) r.joint = stage("optimizer", [&] { return optimizerStep(r.joint, opts.optimizer, opts.loss_scaling); });
  // The artifact's inputs are the functional graph's: the state too.
  if (opts.loss_scaling && r.joint.inputNamed(kLossScaleInput)) r.functional = withLossScalingInputs(r.functional);
  if (optimizing) r.functional = withOptimizerInputs(r.functional, r.joint);
  if (opts.partitioner == Partitioner::MinCut) r.partition = guarded("partition (min-cut)", [&] { return partitionMinCut(r.joint); });
  else if (opts.partitioner == Partitioner::Default) r.partition = guarded("partition (default)", [&] { return partitionDefault(r.joint); });
  else AOTC_CHECK(false, "a partitioner without a case in runPipeline");
  r.partition.forward = stage("partition.forward", [&] { return std::move(r.partition.forward); });
  r.partition.backward = stage("partition.backward", [&] { return std::move(r.partition.backward); });
  if (opts.channels_last) {
    Partition laid = guarded("channels-last", [&] { return channelsLast(r.partition); });
    r.partition.forward = stage("channels-last.forward", [&] { return std::move(laid.forward); });
    r.partition.backward = stage("channels-last.backward", [&] { return std::move(laid.backward); });
  }
  return r;
}

}  // namespace aotc
