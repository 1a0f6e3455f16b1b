//===- codegen_test.cpp - Every op's CUDA compiles with NVRTC --------------===//
//
// Table-driven over the op samples: the loss graph of each op, differentiated
// and partitioned, is lowered to CUDA for float32, float16 and bfloat16
// (half types compute in float32), and every kernel of the forward and the
// backward must compile with NVRTC.  No GPU needed.
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <functional>
#include <filesystem>
#include <gtest/gtest.h>

#include "aotc/codegen/codegen.h"
#include "aotc/codegen/fusion.h"
#include "aotc/codegen/launch_shape.h"
#include "aotc/passes/passes.h"
#include "aotc/ops/rules.h"
#include "aotc/text/text.h"
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


// ---- Note [Launch shape] and Note [Reduction schedules]

/// A forward-only program: `body` builds it from one float32 input of `shape`.
Partition forwardOnly(const Ints& shape, const std::function<ValueId(Graph&, ValueId)>& body) {
  Graph g;
  g.name = "shapes";
  ValueId x = g.addInput("x", TensorType::contiguous(DType::F32, shape), InputRole::UserInput, false);
  ValueId y = body(g, x);
  g.outputs.push_back(GraphOutput{y, OutputRole::User, "", std::nullopt, {}});
  Partition p{g, Graph{}, {}};
  p.backward.name = "empty";
  return p;
}

std::vector<plan::LaunchWork> works(const plan::Program& p) {
  std::vector<plan::LaunchWork> w;
  for (const plan::Step& s : p.steps)
    if (const plan::Launch* l = std::get_if<plan::Launch>(&s)) {
      EXPECT_TRUE(l->work.has_value()) << l->kernel;
      if (l->work) w.push_back(*l->work);
    }
  return w;
}

TEST(LaunchShape, RuleFlagsFewBlocksAndLongLoopsOfLargeLaunchesOnly) {
  plan::Program p;
  auto add = [&](plan::LaunchWork w) {
    plan::Launch l;
    l.kernel = "k_000000000000000" + std::to_string(p.steps.size());
    l.work = w;
    p.steps.push_back(l);
  };
  const int64_t MiB = 1 << 20;
  add({4 * MiB, 1, 4096, 1});    // the LayerNorm weight gradient of issue 34: grid 1, 4096 rows per thread
  add({4 * MiB, 264, 16, 33});   // split: fine
  add({4 * MiB, 264, 4096, 1});  // enough blocks, a long loop
  add({4 * MiB, 64, 16, 1});     // one block per channel
  add({MiB, 1, 100000, 1});      // small: exempt
  p.steps.push_back(plan::Launch{});  // no work recorded
  LaunchShapeRule r;
  std::vector<std::string> problems = launchShapeProblems(p, "forward", r);
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_NE(problems[0].find("forward step 0 "), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("4.0 MiB in 1 block with work (need 132)"), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("step 2 "), std::string::npos);
  EXPECT_NE(problems[2].find("step 3 "), std::string::npos);
  EXPECT_NE(problems[3].find("records no work"), std::string::npos);
  EXPECT_EQ(archSmCount("sm_90"), 132);
  EXPECT_EQ(launchShapeRuleFor({"sm_80", "sm_90"}).sms, 132);
  EXPECT_EQ(launchShapeRuleFor({"sm_80"}).sms, 108);
  EXPECT_EQ(launchShapeRuleFor({"sm_90"}, 16).sms, 16);
}

/// The bias gradient of a Linear layer over 4096 rows (x: [4096, 256]):
/// today's kernel (the legacy schedule) is one block of 256 threads each
/// looping over 4096 rows; scheduled, a coalesced column reduction split
/// over 33 chunks and a combine kernel.
TEST(LaunchShape, ColumnSumIsSplitAndCoalesced) {
  Partition p = forwardOnly({4096, 256}, [](Graph& g, ValueId x) { return addOp(g, OpKind::Sum, {x}, {{"dim", Ints{0}}, {"keepdim", false}}); });
  CodegenOptions legacy;
  legacy.launchShape.sms = 0;
  CodegenResult before = generateCuda(p, legacy);
  std::vector<plan::LaunchWork> wb = works(before.forward);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].blocks, 1);
  EXPECT_EQ(wb[0].serial, 4096);
  EXPECT_EQ(launchShapeProblems(before.forward, "forward", LaunchShapeRule{}).size(), 1u) << "the check fails on the legacy kernel";

  CodegenResult cg = generateCuda(p);
  EXPECT_TRUE(launchShapeProblems(cg.forward, "forward", LaunchShapeRule{}).empty());
  std::vector<plan::LaunchWork> w = works(cg.forward);
  ASSERT_EQ(w.size(), 2u) << "partials, then their combination";
  EXPECT_EQ(w[0].split, 33);
  EXPECT_EQ(w[0].blocks, 8 * 33);  // 256 outputs / 32 lanes, x 33 chunks of 125 rows
  EXPECT_EQ(w[0].serial, 16);      // 125 rows over a block's 8 warps
  EXPECT_EQ(w[1].serial, 33);      // the combine kernel: one output's 33 partials, in order
  const plan::Launch& first = std::get<plan::Launch>(cg.forward.steps[0]);
  EXPECT_EQ(first.grid[0], 264);
  EXPECT_NE(cg.kernels.at(first.kernel).source.find("threadIdx.x % 32u"), std::string::npos) << "lanes take consecutive outputs";
  EXPECT_NE(printFusionPlan(p.forward, planFusion(p.forward)).find("kernel reduction, column x256, split 33 x 125, 264 blocks, 16 serial"),
            std::string::npos)
      << printFusionPlan(p.forward, planFusion(p.forward));
  std::vector<KernelModule> mods = groupKernels(cg.kernels, 64);
  EXPECT_NO_THROW(compileModules(mods, cg.kernels, {"sm_90"}, 2));
}

/// Batch-norm statistics of resnet18's first layer (32 x 64 x 112 x 112):
/// one block per channel (64 blocks of 401,408 elements) before; split rows
/// now, and the row group that held mean and variance is not formed.
TEST(LaunchShape, ChannelStatisticsAreSplit) {
  Partition p = forwardOnly({32, 64, 112, 112}, [](Graph& g, ValueId x) {
    Attrs red{{"dim", Ints{0, 2, 3}}, {"keepdim", true}};
    ValueId mean = addOp(g, OpKind::Mean, {x}, red);
    ValueId d = addOp(g, OpKind::Sub, {x, mean});
    ValueId var = addOp(g, OpKind::Mean, {addOp(g, OpKind::Mul, {d, d})}, red);
    return addOp(g, OpKind::Mul, {d, addOp(g, OpKind::Rsqrt, {var})});
  });
  CodegenOptions legacy;
  legacy.launchShape.sms = 0;
  EXPECT_FALSE(launchShapeProblems(generateCuda(p, legacy).forward, "forward", LaunchShapeRule{}).empty());
  FusionPlan plan = planFusion(p.forward);
  EXPECT_TRUE(plan.groups.empty());
  EXPECT_FALSE(plan.unformedGroups.empty());
  CodegenResult cg = generateCuda(p);
  EXPECT_TRUE(launchShapeProblems(cg.forward, "forward", LaunchShapeRule{}).empty());
  int splits = 0;
  for (const plan::LaunchWork& w : works(cg.forward)) {
    if (w.split > 1) {
      ++splits;
      EXPECT_GE(w.blocks, 132);
    }
  }
  EXPECT_EQ(splits, 1);  // mean and variance, x read once (Note [Welford moments])
  EXPECT_EQ(plan.moments.size(), 1u);
  EXPECT_NE(printFusionPlan(p.forward, plan).find("(Welford)"), std::string::npos) << printFusionPlan(p.forward, plan);
  int64_t partials = 0;
  for (const plan::Buffer& b : cg.forward.buffers)
    if (b.name.find(".partials") != std::string::npos) {
      ++partials;
      EXPECT_EQ(b.layout.shape, (Ints{2 * 5 * 64})) << "a (mean, M2) pair per chunk and channel";
      EXPECT_GE(b.arena_offset, 0) << "the memory plan places the workspace";
    }
  EXPECT_EQ(partials, 1);
  std::vector<KernelModule> mods = groupKernels(cg.kernels, 64);
  EXPECT_NO_THROW(compileModules(mods, cg.kernels, {"sm_90"}, 2));
}

/// Note [Sibling reductions]: two sums over the same large x (a batch norm's
/// backward has four) are one split kernel that reads x once, its workspace a
/// partial of each per (chunk, channel), and one combine writing both.
TEST(LaunchShape, SiblingReductionsReadTheirOperandOnce) {
  Partition p = forwardOnly({32, 64, 112, 112}, [](Graph& g, ValueId x) {
    Attrs red{{"dim", Ints{0, 2, 3}}, {"keepdim", false}};
    ValueId s1 = addOp(g, OpKind::Sum, {x}, red);
    ValueId s2 = addOp(g, OpKind::Sum, {addOp(g, OpKind::Mul, {x, x})}, red);
    return addOp(g, OpKind::Add, {s1, s2});
  });
  FusionPlan plan = planFusion(p.forward);
  ASSERT_EQ(plan.siblings.size(), 1u) << printFusionPlan(p.forward, plan);
  EXPECT_EQ(plan.siblings.begin()->second.size(), 1u);
  EXPECT_NE(printFusionPlan(p.forward, plan).find("(siblings)"), std::string::npos) << printFusionPlan(p.forward, plan);
  CodegenResult cg = generateCuda(p);
  EXPECT_TRUE(launchShapeProblems(cg.forward, "forward", LaunchShapeRule{}).empty());
  int splits = 0;
  for (const plan::LaunchWork& w : works(cg.forward)) splits += w.split > 1;
  EXPECT_EQ(splits, 1);
  int partials = 0;
  for (const plan::Buffer& b : cg.forward.buffers)
    if (b.name.find(".partials") != std::string::npos) {
      ++partials;
      EXPECT_EQ(b.layout.shape, (Ints{2 * 5 * 64}));
    }
  EXPECT_EQ(partials, 1);
  std::vector<KernelModule> mods = groupKernels(cg.kernels, 64);
  EXPECT_NO_THROW(compileModules(mods, cg.kernels, {"sm_90"}, 2));
}

/// The single launch of a forward-only program, with its kernel's text.
struct OneLaunch {
  plan::Launch launch;
  std::string source;
};
std::vector<OneLaunch> launches(const CodegenResult& cg) {
  std::vector<OneLaunch> r;
  for (const plan::Step& s : cg.forward.steps)
    if (const plan::Launch* l = std::get_if<plan::Launch>(&s)) r.push_back({*l, cg.kernels.at(l->kernel).source});
  return r;
}

/// softmax(x) over rows of `n`, decomposed as the planner sees it.
ValueId softmaxRows(Graph& g, ValueId x) {
  Attrs red{{"dim", Ints{-1}}, {"keepdim", true}};
  ValueId m = addOp(g, OpKind::Amax, {x}, red);
  ValueId e = addOp(g, OpKind::Exp, {addOp(g, OpKind::Sub, {x, m})});
  return addOp(g, OpKind::Div, {e, addOp(g, OpKind::Sum, {e}, red)});
}

/// Note [Row kernels], [Row cache], [Row vectors]: the attention softmax of
/// the TransformerEncoder (32 x 4 heads x 128 x 128) was one thread per row
/// of 128 (256 blocks of 64, 384 elements serial, rows read three times);
/// now one warp per row, 8 rows to a block, each lane's four elements read
/// once with one 16-byte load and kept in registers, lanes combined by shuffles.
/// Note [GEMM into its copy], Note [GEMM scale], Note [GEMM relu epilogue]:
/// the plan steps.  bmm(p, v) transposed to [L, B*H, d] and copied writes
/// the copy with ld B*H*d and batch stride d; a product whose rows are
/// unit-stride in its copy is C = A B column-major (operands in our order,
/// each transposed from the row-major reading); the 1/8 is alpha; the relu
/// is the Linear's epilogue.  No kernel copies, scales or applies relu.
TEST(GemmOutputs, ProductsAreWrittenWhereTheirReadersWantThem) {
  Graph g = parseGraph(R"(graph @t {
  input %p : f32[8,5,5] user_input
  input %v : f32[8,5,4] user_input
  input %a : f32[8,4,5] user_input
  input %b : f32[8,5,6] user_input
  input %x : f32[6,3] user_input
  input %w : f32[3,4] parameter
  input %bias : f32[4] parameter
  %o : f32[8,5,4] = bmm(%p, %v)
  %s : f32[] = constant() {dtype="f32", value=8.0}
  %d : f32[8,5,4] = div(%o, %s)
  %t : f32[5,8,4]{4,20,1} = transpose(%d) {dim0=0, dim1=1}
  %c : f32[5,8,4] = clone(%t)
  %g2 : f32[8,4,6] = bmm(%a, %b)
  %t2 : f32[8,6,4]{24,1,6} = transpose(%g2) {dim0=1, dim1=2}
  %u2 : f32[6,8,4]{1,24,6} = transpose(%t2) {dim0=0, dim1=1}
  %c2 : f32[6,8,4] = clone(%u2)
  %m : f32[6,4] = mm(%x, %w)
  %y : f32[6,4] = add(%m, %bias)
  %r : f32[6,4] = relu(%y)
  output %c user
  output %c2 user
  output %r user
})", "t.ir");
  Partition p{g, Graph{}, {}};
  p.backward.name = "empty";
  CodegenResult cg = generateCuda(p);
  std::vector<plan::Gemm> gemms;
  for (const plan::Step& st : cg.forward.steps) {
    EXPECT_FALSE(std::holds_alternative<plan::Launch>(st)) << "no kernel: the GEMMs do all the work";
    if (auto* gm = std::get_if<plan::Gemm>(&st)) gemms.push_back(*gm);
  }
  ASSERT_EQ(gemms.size(), 3u);
  // o: row-major C^T = B^T A^T as before, written into c with its layout there.
  EXPECT_EQ(gemms[0].C.buffer, "c");
  EXPECT_EQ(gemms[0].C.ld, 32);
  EXPECT_EQ(gemms[0].C.stride, 4);
  EXPECT_EQ(gemms[0].alpha, 0.125);
  EXPECT_EQ(gemms[0].m, 4);
  EXPECT_EQ(gemms[0].n, 5);
  EXPECT_EQ(gemms[0].A.buffer, "v");
  EXPECT_FALSE(gemms[0].transa);
  EXPECT_FALSE(gemms[0].transb);
  // g2: unit-stride rows in c2: C = A B column-major, m = rows of the product.
  EXPECT_EQ(gemms[1].C.buffer, "c2");
  EXPECT_EQ(gemms[1].C.ld, 32);
  EXPECT_EQ(gemms[1].C.stride, 4);
  EXPECT_EQ(gemms[1].m, 4);
  EXPECT_EQ(gemms[1].n, 6);
  EXPECT_EQ(gemms[1].k, 5);
  EXPECT_EQ(gemms[1].A.buffer, "a");
  EXPECT_EQ(gemms[1].B.buffer, "b");
  EXPECT_TRUE(gemms[1].transa);
  EXPECT_TRUE(gemms[1].transb);
  EXPECT_EQ(gemms[1].alpha, 1.0);
  // m: bias and relu in cuBLASLt's epilogue.
  EXPECT_EQ(gemms[2].call, plan::GemmCall::LtMatmulBias);
  EXPECT_TRUE(gemms[2].relu);
  bool rView = false;
  for (const plan::Buffer& b : cg.forward.buffers)
    if (b.name == "r") rView = b.kind == plan::BufferKind::View && b.base == "m";
  EXPECT_TRUE(rView) << "the relu's value is the GEMM's buffer";
}

TEST(RowKernels, SoftmaxRowsAreWarpsReadOnce) {
  Partition p = forwardOnly({32, 4, 128, 128}, softmaxRows);
  CodegenResult cg = generateCuda(p);
  EXPECT_TRUE(launchShapeProblems(cg.forward, "forward", LaunchShapeRule{}).empty());
  std::vector<OneLaunch> ls = launches(cg);
  ASSERT_EQ(ls.size(), 1u) << "one row-group kernel";
  EXPECT_EQ(ls[0].launch.grid[0], 32 * 4 * 128 / 8);
  EXPECT_EQ(ls[0].launch.block[0], 256);
  const std::string& k = ls[0].source;
  EXPECT_NE(k.find("__shfl_xor_sync(0xffffffffu, acc, m)"), std::string::npos) << k;
  EXPECT_EQ(k.find("__syncthreads"), std::string::npos) << "a warp per row needs no barrier\n" << k;
  EXPECT_NE(k.find("float4 rc0[1];"), std::string::npos) << k;
  // One load of the row (the first pass), one 16-byte store of the output.
  size_t loads = 0;
  for (size_t q = 0; (q = k.find("aotc_ld4(", q)) != std::string::npos; ++q) ++loads;
  EXPECT_EQ(loads, 1u) << k;
  EXPECT_NE(k.find("aotc_st4(out"), std::string::npos) << k;
  std::vector<KernelModule> mods = groupKernels(cg.kernels, 64);
  EXPECT_NO_THROW(compileModules(mods, cg.kernels, {"sm_90"}, 2));
}

/// Rows longer than a warp's 1024: a block per row, each thread's 16
/// elements (4 x float4) in registers, warps combined through shared memory
/// one partial per warp; rows of 4002 (not a multiple of 4) keep the cache
/// but read scalars and skip the slots past the row's end; rows longer than
/// 16 x 256 re-read (no cache), their max and sum of exponentials taken in
/// one online pass whose (max, sum) pairs combine through shared memory
/// (Note [Online softmax]).
TEST(RowKernels, LongRowsAreBlocks) {
  for (int64_t n : {4096, 4002, 8192}) {
    Partition p = forwardOnly({512, n}, softmaxRows);
    CodegenResult cg = generateCuda(p);
    EXPECT_TRUE(launchShapeProblems(cg.forward, "forward", LaunchShapeRule{}).empty()) << n;
    std::vector<OneLaunch> ls = launches(cg);
    ASSERT_EQ(ls.size(), 1u) << n;
    EXPECT_EQ(ls[0].launch.grid[0], 512) << n;
    const std::string& k = ls[0].source;
    EXPECT_NE(k.find(n == 8192 ? "om = opm[lane & 7]; os = ops[lane & 7];" : "part[lane & 7]"), std::string::npos) << k;
    if (n == 8192) {
      EXPECT_EQ(k.find("part[lane & 7]"), std::string::npos) << "one pass, no second reduction: " << k;
    }
    if (n == 4096) {
      EXPECT_NE(k.find("float4 rc0[4];"), std::string::npos) << k;
    } else if (n == 4002) {
      EXPECT_NE(k.find("float rc0[16];"), std::string::npos) << k;
      EXPECT_NE(k.find("if (j >= 4002) continue;"), std::string::npos) << k;
    } else {
      EXPECT_EQ(k.find("rc0"), std::string::npos) << k;
    }
    std::vector<KernelModule> mods = groupKernels(cg.kernels, 64);
    EXPECT_NO_THROW(compileModules(mods, cg.kernels, {"sm_90"}, 2)) << n;
  }
}

/// Note [Pointwise grids]: a pointwise kernel over 64 Mi floats strides over
/// a grid of twice the threads 132 SMs hold (2 x 132 x 2048), four
/// elements per access, the width recorded; a small one keeps one
/// thread per unit.
TEST(PointwiseGrids, LargeKernelsStrideOverAMachineSizedGrid) {
  Partition p = forwardOnly({64, 1024, 1024}, [](Graph& g, ValueId x) { return addOp(g, OpKind::Relu, {x}); });
  CodegenResult cg = generateCuda(p);
  EXPECT_TRUE(launchShapeProblems(cg.forward, "forward", LaunchShapeRule{}).empty());
  std::vector<OneLaunch> ls = launches(cg);
  ASSERT_EQ(ls.size(), 1u);
  EXPECT_EQ(ls[0].launch.grid[0] * ls[0].launch.block[0], 2 * 132 * 2048);
  ASSERT_TRUE(ls[0].launch.work);
  EXPECT_EQ(ls[0].launch.work->vector, 4);
  EXPECT_EQ(ls[0].launch.work->blocks, ls[0].launch.grid[0]);
  EXPECT_EQ(ls[0].launch.work->serial, 4 * ((64 * 1024 * 1024 / 4 + 2 * 132 * 2048 - 1) / (2 * 132 * 2048)));
  EXPECT_NE(ls[0].source.find("i += (int)gridDim.x * blockDim.x"), std::string::npos) << ls[0].source;
  Partition small = forwardOnly({6, 5}, [](Graph& g, ValueId x) { return addOp(g, OpKind::Relu, {x}); });
  std::vector<OneLaunch> sl = launches(generateCuda(small));
  ASSERT_EQ(sl.size(), 1u);
  EXPECT_EQ(sl[0].launch.grid[0], 1);
  EXPECT_EQ(sl[0].launch.work->vector, 1);
  std::vector<KernelModule> mods = groupKernels(cg.kernels, 64);
  EXPECT_NO_THROW(compileModules(mods, cg.kernels, {"sm_90"}, 2));
}

/// Note [Vectorized access] for float16 and bfloat16: four elements per
/// thread, read and written as two __half2 / __nv_bfloat162 (one 8-byte
/// access), widened to float; a float32 operand of the same kernel is read
/// with one 16-byte load, a broadcast row with one load, and an operand
/// that starts at an odd offset with four scalar loads.  NVRTC compiles it.
TEST(PointwiseGrids, HalfTypesAreReadAndWrittenFourAtATime) {
  for (DType dt : {DType::F16, DType::BF16}) {
    Graph g;
    g.name = "halves";
    ValueId x = g.addInput("x", TensorType::contiguous(dt, {64, 256}), InputRole::UserInput, false);
    ValueId b = g.addInput("b", TensorType::contiguous(dt, {256}), InputRole::UserInput, false);
    ValueId f = g.addInput("f", TensorType::contiguous(DType::F32, {64, 256}), InputRole::UserInput, false);
    ValueId s = g.addInput("s", TensorType::contiguous(dt, {64, 257}), InputRole::UserInput, false);
    ValueId odd = addOp(g, OpKind::Slice, {s}, Attrs{{"dim", int64_t{1}}, {"start", int64_t{1}}, {"end", int64_t{257}}, {"step", int64_t{1}}});
    ValueId fc = addOp(g, OpKind::Cast, {f}, Attrs{{"dtype", std::string(dtypeName(dt))}});
    ValueId r = addOp(g, OpKind::Relu, {x});
    ValueId m = addOp(g, OpKind::Mul, {r, b});
    ValueId a = addOp(g, OpKind::Add, {m, fc});
    ValueId y = addOp(g, OpKind::Add, {a, odd});
    g.outputs.push_back(GraphOutput{y, OutputRole::User, "", std::nullopt, {}});
    Partition p{g, Graph{}, {}};
    p.backward.name = "empty";
    CodegenResult cg = generateCuda(p);
    std::vector<OneLaunch> ls = launches(cg);
    ASSERT_EQ(ls.size(), 1u) << dtypeName(dt);
    ASSERT_TRUE(ls[0].launch.work);
    EXPECT_EQ(ls[0].launch.work->vector, 4) << dtypeName(dt);
    const std::string& k = ls[0].source;
    size_t loads = 0;
    for (size_t q = 0; (q = k.find("= aotc_ld4(in", q)) != std::string::npos; ++q) ++loads;
    EXPECT_EQ(loads, 3u) << "x, b and f four at a time; s (odd offset) element by element\n" << k;
    EXPECT_NE(k.find("aotc_st4(out"), std::string::npos) << k;
    EXPECT_NE(k.find(dt == DType::F16 ? "__half* __restrict__ out" : "__nv_bfloat16* __restrict__ out"), std::string::npos) << k;
    std::vector<KernelModule> mods = groupKernels(cg.kernels, 64);
    EXPECT_NO_THROW(compileModules(mods, cg.kernels, {"sm_80", "sm_90"}, 2)) << dtypeName(dt);
  }
}

// Note [Channels last], Note [Channels-last kernels]: bf16 conv -> scale ->
// conv over 16 channels.  Both convolutions take NHWC tensors and a packed
// NHWC (KRSC) filter; the kernel between them visits its elements channel
// fastest and reads the first convolution's result four channels at a time.
TEST(ChannelsLast, ConvolutionsTakeNhwcAndKernelsVisitMemoryOrder) {
  Graph g;
  g.name = "nhwc";
  ValueId x = g.addInput("x", TensorType::contiguous(DType::BF16, {2, 16, 8, 8}), InputRole::UserInput, false);
  ValueId w = g.addInput("w", TensorType::contiguous(DType::F32, {16, 16, 3, 3}), InputRole::Parameter, false);
  ValueId s = g.addInput("s", TensorType::contiguous(DType::F32, {1, 16, 1, 1}), InputRole::Parameter, false);
  const Attrs bf16{{"dtype", std::string("bf16")}}, f32{{"dtype", std::string("f32")}}, pad{{"padding", Ints{1, 1}}};
  ValueId wb = addOp(g, OpKind::Cast, {w}, bf16);
  ValueId y = addOp(g, OpKind::Conv2d, {addOp(g, OpKind::Relu, {x}), wb}, pad);
  ValueId mb = addOp(g, OpKind::Cast, {addOp(g, OpKind::Mul, {addOp(g, OpKind::Cast, {y}, f32), s})}, bf16);
  ValueId z = addOp(g, OpKind::Conv2d, {mb, wb}, pad);
  g.outputs.push_back(GraphOutput{addOp(g, OpKind::Sum, {z}, Attrs{{"dim", Ints{2, 3}}, {"keepdim", false}}), OutputRole::User, "", std::nullopt, {}});
  Partition p{g, Graph{}, {}};
  p.backward.name = "empty";
  p = channelsLast(p);
  verifyGraph(p.forward, "nhwc");
  EXPECT_EQ(p.forward.type(p.forward.valueNamed(g.values[mb].name)).strides, (Ints{1024, 1, 128, 16}));
  CodegenResult cg = generateCuda(p);
  int convs = 0;
  for (const plan::Step& st : cg.forward.steps)
    if (const plan::Conv* c = std::get_if<plan::Conv>(&st)) {
      ++convs;
      EXPECT_TRUE(c->nhwc);
      EXPECT_EQ(c->b.strides, (Ints{144, 1, 48, 16})) << "the filter, KRSC";
      EXPECT_EQ(c->a.strides, (Ints{1024, 1, 128, 16}));
      EXPECT_EQ(c->out.strides, (Ints{1024, 1, 128, 16}));
    }
  EXPECT_EQ(convs, 2);
  bool between = false;
  for (const OneLaunch& l : launches(cg)) {
    const std::string& k = l.source;
    if (l.launch.args.at(0) != g.values[mb].name) continue;
    between = true;  // cast(mul(cast(y), s)), written NHWC four channels at a time
    EXPECT_NE(k.find("aotc_st4(out"), std::string::npos) << k;
    const size_t c1 = k.find("c[1] = r % 16; r /= 16;"), c3 = k.find("c[3] = r % 8;"), c0 = k.find("c[0] = r % 2;");
    EXPECT_TRUE(c1 != std::string::npos && c3 != std::string::npos && c0 != std::string::npos && c1 < c3 && c3 < c0) << k;
    EXPECT_NE(k.find("= aotc_ld4(in"), std::string::npos) << "y four channels at a time\n" << k;
    EXPECT_EQ(l.launch.work->vector, 4);
  }
  EXPECT_TRUE(between);
  std::vector<KernelModule> mods = groupKernels(cg.kernels, 64);
  EXPECT_NO_THROW(compileModules(mods, cg.kernels, {"sm_80", "sm_90"}, 2));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CodegenCompiles, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtypeName(info.param)); });

}  // namespace
}  // namespace aotc
