//===- codegen_test.cpp - Every op's CUDA compiles with NVRTC --------------===//
//
// Table-driven over the op samples: the loss graph of each op, differentiated
// and partitioned, is lowered to CUDA for float32, float16 and bfloat16
// (half types compute in float32), and every kernel of the forward and the
// backward must compile with NVRTC.  No GPU needed.
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <gtest/gtest.h>

#include "aotc/codegen/codegen.h"
#include "aotc/passes/passes.h"
#include "aotc/ops/rules.h"
#include "ops/op_samples.h"

namespace aotc {
namespace {

class CodegenCompiles : public ::testing::TestWithParam<DType> {};

/// Elementwise ops without gradients, which the loss samples do not reach:
/// compiled on their own by ForwardOnlyKernelsCompile, with every op row
/// without a gradient that runs a kernel (its row's samples).
const std::vector<OpKind> kForwardOnly = {OpKind::Le, OpKind::Ge, OpKind::Ne, OpKind::LogicalAnd, OpKind::LogicalOr,
                                          OpKind::LogicalNot, OpKind::IsNan, OpKind::IsInf,
                                          OpKind::BitwiseAnd, OpKind::BitwiseOr, OpKind::BitwiseXor, OpKind::BitwiseNot};

TEST_P(CodegenCompiles, EveryOpForwardAndBackward) {
  DType dt = GetParam();
  std::map<std::string, KernelSource> all;
  for (const Sample& s : samples()) {
    Graph g = buildLoss(s, dt);
    Partition p = partitionMinCut(autodiff(g));
    verifyGraph(p.forward);
    verifyGraph(p.backward);
    CodegenResult cg = generateCuda(p);
    for (auto& [name, k] : cg.kernels) all[name] = k;
  }
  EXPECT_GT(all.size(), 50u);
  std::vector<KernelModule> mods = groupKernels(all, 64);
  EXPECT_NO_THROW(compileModules(mods, all, {"sm_90"}, 2));
  // That every op that runs a kernel is in some sample's programs is
  // completeness_test's `cuda` column.
}

TEST(Codegen, ForwardOnlyKernelsCompile) {
  std::map<std::string, KernelSource> all;
  for (OpKind k : kForwardOnly) {
    Graph g;
    g.name = opName(k);
    int arity = opInfo(k).arity;
    bool bitwise = k == OpKind::BitwiseAnd || k == OpKind::BitwiseOr || k == OpKind::BitwiseXor || k == OpKind::BitwiseNot;
    std::vector<ValueId> ins;
    for (int i = 0; i < arity; ++i)
      ins.push_back(g.addInput("x" + std::to_string(i), TensorType::contiguous(bitwise ? DType::I64 : DType::F32, {3, 4}),
                               InputRole::UserInput, false));
    ValueId y = addOp(g, k, ins);
    g.outputs.push_back(GraphOutput{y, OutputRole::User, "", std::nullopt, {}});
    Partition p{g, Graph{}, {}};
    p.backward.name = "empty";
    for (auto& [name, ks] : generateCuda(p).kernels) all[name] = ks;
  }
  size_t rows = 0;
  for (const OpRule* r : opRules()) {
    if (opInfo(r->op).grad == GradKind::Diff || (r->cuda != Lowering::Element && r->cuda != Lowering::Fill)) continue;
    ASSERT_FALSE(r->samples.empty()) << opName(r->op) << " runs a kernel but its row has no sample";
    for (const OpSample& s : r->samples) {
      Graph g;
      g.name = opName(r->op);
      std::vector<ValueId> ins;
      for (size_t i = 0; i < s.inputs.size(); ++i)
        ins.push_back(g.addInput("x" + std::to_string(i), TensorType::contiguous(s.inputs[i].dtype == DType::F64 ? DType::F32 : s.inputs[i].dtype,
                                                                                  s.inputs[i].sizes),
                                 InputRole::UserInput, false));
      for (ValueId y : addNode(g, r->op, ins, s.attrs)) g.outputs.push_back(GraphOutput{y, OutputRole::User, "", std::nullopt, {}});
      Partition p{g, Graph{}, {}};
      p.backward.name = "empty";
      for (auto& [name, ks] : generateCuda(p).kernels) all[name] = ks;
      ++rows;
    }
  }
  EXPECT_GE(rows, 5u);  // argmax, constant, arange, rand_mask, rand_uniform
  ASSERT_EQ(all.size(), kForwardOnly.size() + rows);
  EXPECT_NO_THROW(compileModules(groupKernels(all, 64), all, {"sm_80"}, 2));
}

TEST(Codegen, NvrtcFailureNamesTheKernelNodes) {
  KernelSource k{"k_0000000000000000", "#include \"aotc_prelude.cuh\"\nextern \"C\" __global__ void k() { undefined_thing(); }\n",
                 {"relu_7"}};
  std::map<std::string, KernelSource> all{{k.name, k}};
  try {
    compileModules(groupKernels(all, 8), all, {"sm_90"}, 1);
    FAIL() << "expected an NVRTC error";
  } catch (const UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("k_0000000000000000.cu: node 'relu_7' (kernel): error: NVRTC failed for sm_90"), std::string::npos) << msg;
    EXPECT_NE(msg.find("undefined_thing"), std::string::npos) << msg;
    EXPECT_NE(msg.find("kernel source: #include"), std::string::npos) << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CodegenCompiles, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtypeName(info.param)); });

}  // namespace
}  // namespace aotc
