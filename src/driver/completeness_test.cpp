//===- completeness_test.cpp - Every op row has every rule -----------------===//
//
// One test walks the op table (ops.def) and lists, for each row, the rules it
// lacks:
//   spelling   a front end produces it: some committed FX fixture's captured
//              graph contains it, or an ONNX fixture's (testdata/onnx: mod,
//              ONNX's Mod, is no ATen op), or it is one of the few ops only
//              passes and gradient rules create, listed in kInternal with who
//              makes it
//   shape      a shape/dtype rule (every row)
//   reference  a reference kernel (every op that computes)
//   gradient   a gradient rule (grad column Diff)
//   sample     an op sample (op_samples.h), which gradcheck_test checks by
//              finite differences and codegen_test compiles through NVRTC
//              (every differentiable op that computes; ops without gradients
//              are compiled by codegen_test's forward-only list)
//   cuda       the CUDA code generator lowers it: its row names a lowering
//              (Note [Op rows]; elementwise ops and reductions are fused),
//              its sample's forward and backward programs generate kernels
//              and the op is in them, and an op without a gradient that
//              runs its own kernel has a sample codegen_test compiles
// and fails once, naming every gap, so a newcomer sees all that a new row
// still needs.
//===----------------------------------------------------------------------===//
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "aotc/codegen/codegen.h"
#include "aotc/frontend/frontend.h"
#include "aotc/frontend/fx.h"
#include "aotc/ops/gradients.h"
#include "aotc/ops/ops.h"
#include "aotc/ops/reference.h"
#include "aotc/ops/rules.h"
#include "aotc/passes/passes.h"
#include "aotc/text/text.h"
#include "ops/op_samples.h"

namespace aotc {
namespace {

/// Ops no front end spells: functionalize creates them, and the conformance
/// programs that make it (mutations under autograd, autograd.Function) test
/// them end to end against eager, so they need neither spelling nor sample.
const std::map<OpKind, const char*> kInternal = {
    {OpKind::EpilogueCopy, "the copy back into a mutated input"},
    {OpKind::KeepGrad, "a mutation autograd cannot see: the new value, gradient to the old"},
    {OpKind::CustomGrad, "an autograd.Function: its forward and backward regions"},
};

void collect(const Graph& g, std::set<OpKind>& seen) {
  for (const Node& n : g.nodes) {
    seen.insert(n.op);
    for (const Graph& r : n.regions) collect(r, seen);
  }
}

TEST(OpTable, EveryRowHasEveryRule) {
  // Front-end spellings: the captured graphs of every committed FX program.
  std::set<OpKind> spelled;
  size_t files = 0;
  for (const char* dir : {"testdata/ops", "testdata/fx", "testdata/conformance", "testdata/exporter", "testdata/random"}) {
    std::filesystem::path d = std::filesystem::path(AOTC_SOURCE_DIR) / dir;
    if (!std::filesystem::exists(d)) continue;
    for (const auto& e : std::filesystem::recursive_directory_iterator(d)) {
      if (e.path().extension() != ".json") continue;
      try {
        collect(loadFxGraph(e.path().string()).graph, spelled);
        ++files;
      } catch (const std::exception&) {
        // Error fixtures (malformed on purpose) spell nothing.
      }
    }
  }
  EXPECT_GT(files, 100u);
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(AOTC_SOURCE_DIR) / "testdata" / "onnx")) {
    if (e.path().extension() != ".onnx") continue;
    try {
      collect(loadModel(e.path().string()).graph, spelled);
    } catch (const std::exception&) {
      // Error fixtures (refused on purpose) spell nothing.
    }
  }

  // Samples, and what their lowered programs contain.
  std::set<OpKind> sampled, lowered;
  for (const Sample& s : samples()) {
    sampled.insert(s.op);
    Partition p = partitionMinCut(autodiff(buildLoss(s, DType::F32)));
    try {
      generateCuda(p);
      for (const Graph* prog : {&p.forward, &p.backward}) collect(*prog, lowered);
    } catch (const std::exception& e) {
      ADD_FAILURE() << opName(s.op) << ": the CUDA code generator fails on its sample: " << e.what();
    }
  }

  std::string gaps;
  for (int i = 0; i < kNumOps; ++i) {
    OpKind k = static_cast<OpKind>(i);
    const OpInfo& info = opInfo(k);
    bool computes = opComputes(k);
    std::vector<std::string> missing;
    if (!spelled.count(k) && !kInternal.count(k)) missing.push_back("spelling");
    if (!hasShapeRule(k)) missing.push_back("shape");
    if (computes && !hasReferenceKernel(k)) missing.push_back("reference");
    if (info.grad == GradKind::Diff && !gradRule(k)) missing.push_back("gradient");
    if (info.grad == GradKind::Diff && computes && !sampled.count(k) && !kInternal.count(k)) missing.push_back("sample");
    const OpRule* row = opRule(k);
    bool noLowering = row && computes && !kInternal.count(k) && row->cuda == Lowering::None;
    bool ownKernelUnsampled = row && info.grad != GradKind::Diff && (row->cuda == Lowering::Element || row->cuda == Lowering::Fill) &&
                              row->samples.empty();
    if ((opRunsKernel(k) && info.grad == GradKind::Diff && !lowered.count(k)) || noLowering || ownKernelUnsampled)
      missing.push_back("cuda");
    if (!missing.empty()) {
      gaps += std::string("\n  ") + info.name + " lacks:";
      for (const auto& m : missing) gaps += " " + m;
    }
  }
  EXPECT_TRUE(gaps.empty()) << "op rows without a rule:" << gaps;
}

}  // namespace
}  // namespace aotc
