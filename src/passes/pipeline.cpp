//===- pipeline.cpp - The engine pipeline, straight-line ------------------===//
//
// functionalize -> dce -> autodiff -> strip-autograd-markers ->
// functionalize-joint -> dce -> partition.
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
#include <stdexcept>

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
  return {"functionalize", "dce", "autodiff", "strip-autograd-markers", "functionalize-joint", "dce-joint",
          "partition.forward", "partition.backward"};
}

std::vector<std::string> partitionerNames() { return {"min-cut", "default"}; }

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

std::string symbolicNotCompiled(const Graph& g) {
  std::string names;
  for (const SymbolDecl& s : g.symbols) names += (names.empty() ? "" : ", ") + s.name;
  return "dynamic dims (symbols " + names + ") are captured (aotc graph --stage captured shows them) but not compiled yet: "
         "the passes after capture do not handle symbolic sizes (issue 15); export without dynamic= for an artifact at the "
         "example sizes";
}

PipelineResult runPipeline(const Graph& captured, const PipelineOptions& opts) {
  auto stage = [&](const char* name, auto&& pass) {
    Graph g = guarded(name, pass);
    verifyGraph(g, std::string("after ") + name);
    if (opts.after_pass) opts.after_pass(name, g);
    return g;
  };
  verifyGraph(captured, "captured graph");
  if (captured.isSymbolic()) throw UserError(SourceLoc{}, symbolicNotCompiled(captured));
  PipelineResult r;
  r.functional = stage("functionalize", [&] { return functionalize(captured); });
  r.functional = stage("dce", [&] { return dce(r.functional); });
  r.joint = stage("autodiff", [&] { return autodiff(r.functional); });
  r.joint = stage("strip-autograd-markers", [&] { return stripAutogradMarkers(r.joint); });
  r.joint = stage("functionalize-joint", [&] { return functionalizeJoint(r.joint); });
  r.joint = stage("dce-joint", [&] { return dce(r.joint); });
  if (opts.partitioner == "min-cut") r.partition = guarded("partition (min-cut)", [&] { return partitionMinCut(r.joint); });
  else if (opts.partitioner == "default") r.partition = guarded("partition (default)", [&] { return partitionDefault(r.joint); });
  else throw UserError(SourceLoc{}, "unknown partitioner '" + opts.partitioner + "' (known: min-cut, default)");
  r.partition.forward = stage("partition.forward", [&] { return std::move(r.partition.forward); });
  r.partition.backward = stage("partition.backward", [&] { return std::move(r.partition.backward); });
  return r;
}

}  // namespace aotc
