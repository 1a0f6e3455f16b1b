//===- codegen_test.cpp - Every op's CUDA compiles with NVRTC --------------===//
//
// Table-driven over the op samples: the loss graph of each op, differentiated
// and partitioned, is lowered to CUDA for float32, float16 and bfloat16
// (half types compute in float32), and every kernel of the forward and the
// backward must compile with NVRTC.  No GPU needed.
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <filesystem>
#include <gtest/gtest.h>

#include "aotc/codegen/codegen.h"
#include "aotc/passes/passes.h"
#include "aotc/ops/rules.h"
#include "ops/op_samples.h"

namespace fs = std::filesystem;

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

// Note [PTX function clones]: NVRTC specializes CUDA's internal
// __internal_accurate_pow to a constant exponent in one kernel and not in
// the other; one module holds both (the second renamed), links for every
// arch, and is the same bytes whatever -j and whatever the cache held.
TEST(Codegen, InternalFunctionsSpecializedDifferentlyShareAModule) {
  auto kernel = [](const std::string& name, const std::string& body) {
    return KernelSource{name, "#include \"aotc_prelude.cuh\"\nextern \"C\" __global__ void " + name +
                                  "(double* o, const double* a, const double* b) { int i = threadIdx.x; " + body + " }\n",
                        {name}};
  };
  std::map<std::string, KernelSource> all;
  for (const KernelSource& k : {kernel("k_00000000000000a1", "o[i] = pow(a[i], 2.5);"),
                                kernel("k_00000000000000a2", "o[i] = pow(a[i], b[i]);"),
                                kernel("k_00000000000000a3", "o[i] = a[i] + b[i];")})
    all[k.name] = k;
  const std::vector<KernelModule> mods = groupKernels(all, 8);
  ASSERT_EQ(mods.size(), 1u);
  std::vector<std::vector<NvrtcOutput>> one, two, cachedOnce, cachedTwice;
  ASSERT_NO_THROW(one = compileModules(mods, all, {"sm_80", "sm_90"}, 1));
  ASSERT_NO_THROW(two = compileModules(mods, all, {"sm_80", "sm_90"}, 2));
  const std::string cache = (fs::path(::testing::TempDir()) / "aotc-clones-cache").string();
  fs::remove_all(cache);
  ASSERT_NO_THROW(cachedOnce = compileModules(mods, all, {"sm_80", "sm_90"}, 2, cache));
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(cache))  // the modules: rebuilt from kernel PTX
    if (e.path().string().find("/module/") != std::string::npos && e.is_regular_file()) fs::remove(e.path());
  ASSERT_NO_THROW(cachedTwice = compileModules(mods, all, {"sm_80", "sm_90"}, 2, cache));
  for (size_t a = 0; a < 2; ++a) {
    EXPECT_EQ(one[0][a].ptx, two[0][a].ptx);
    EXPECT_EQ(one[0][a].ptx, cachedOnce[0][a].ptx);
    EXPECT_EQ(one[0][a].ptx, cachedTwice[0][a].ptx);
    EXPECT_FALSE(one[0][a].cubin.empty());
  }
  EXPECT_NE(one[0][0].ptx.find("__internal_accurate_pow$1"), std::string::npos) << "the second specialization is a clone";
  fs::remove_all(cache);
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
