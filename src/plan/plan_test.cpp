//===- plan_test.cpp - The manifest's JSON form round-trips and refuses damage ===//
#include <gtest/gtest.h>

#include "aotc/plan/plan.h"
#include "aotc/support/diag.h"

namespace aotc::plan {
namespace {

Manifest sample() {
  Manifest m;
  m.nvrtc_version = "13.0";
  m.model_name = "toy";
  m.model_source = "toy.json";
  m.archs = {"sm_90"};
  m.weights = "weights.safetensors";
  InputSpec x{"x", "user_input", Layout{DType::F32, {2, 3}, {3, 1}, 0}, false, Mutation::Forward, {}, std::nullopt};
  InputSpec w{"w", "parameter", Layout{DType::F32, {3, 3}, {3, 1}, 0}, true, Mutation::None, {"w_tied"}, std::nullopt};
  x.metadata_after_forward = MetadataChange{{3, 2}, {1, 3}, 0, {ViewOp{"t", {}}}};
  m.inputs = {x, w};
  OutputSpec o;
  o.index = 0;
  o.buffer = "y";
  o.shape = {2, 3};
  o.tangent = "tangent_0";
  OutputSpec a;
  a.index = 1;
  a.buffer = "xv";
  a.shape = {3};
  a.alias = AliasRecipe{"x", {ViewOp{"select", {{"dim", int64_t{0}}, {"index", int64_t{1}}}}}};
  a.path = "aux";
  m.outputs = {o, a};
  m.grads = {GradSpec{"w", "gw"}};
  m.saved = {SavedSpec{"y", Layout{DType::F32, {2, 3}, {3, 1}, 0}}};
  Program& f = m.forward;
  f.ir = "forward.ir";
  f.buffers = {Buffer{"x", BufferKind::Input, Layout{DType::F32, {2, 3}, {3, 1}, 0}, "user_input", "", 0, -1},
               Buffer{"w", BufferKind::Input, Layout{DType::F32, {3, 3}, {3, 1}, 0}, "parameter", "", 0, -1},
               Buffer{"y", BufferKind::Alloc, Layout{DType::F32, {2, 3}, {3, 1}, 0}, "", "", 24, 0},
               Buffer{"yt", BufferKind::View, Layout{DType::F32, {3, 2}, {1, 3}, 0}, "", "y", 0, -1}};
  Gemm g;
  g.call = GemmCall::LtMatmulBias;
  g.node = "linear";
  g.transa = true;
  g.m = 3;
  g.n = 2;
  g.k = 3;
  g.A = {"w", 0, 3, 0};
  g.B = {"x", 0, 3, 0};
  g.C = {"y", 0, 3, 0};
  g.bias = MatrixOperand{"w", 0, 1, 0};
  Launch l;
  l.kernel = "k_0123456789abcdef";
  l.grid = {1, 1, 1};
  l.block = {256, 1, 1};
  l.args = {"x", "y"};
  l.epilogue = Epilogue{"x", Phase::Forward, ViewOp{"slice", {{"dim", int64_t{0}}, {"start", int64_t{0}}, {"end", int64_t{1}}, {"step", int64_t{1}}}}};
  Conv c;
  c.call = ConvCall::BackwardFilter;
  c.node = "conv";
  c.pad = {1, 1};
  c.stride = {1, 1};
  c.dilation = {1, 1};
  c.a = {"y", 0, {1, 1, 2, 3}, {6, 6, 3, 1}};
  c.b = {"x", 0, {1, 1, 2, 3}, {6, 6, 3, 1}};
  c.out = {"w", 0, {1, 1, 3, 3}, {9, 9, 3, 1}};
  f.steps = {g, l, c};
  f.outputs = {ProgramOutput{"user", "y"}, ProgramOutput{"saved", "y"}};
  f.arena_bytes = 256;
  f.alloc_bytes_unplanned = 24;
  Program& b = m.backward;
  b.ir = "backward.ir";
  b.buffers = {Buffer{"y", BufferKind::Input, Layout{DType::F32, {2, 3}, {3, 1}, 0}, "saved", "", 0, -1},
               Buffer{"gw", BufferKind::Alloc, Layout{DType::F32, {3, 3}, {3, 1}, 0}, "", "", 36, 0}};
  Gemm bg;
  bg.call = GemmCall::GemmStridedBatchedEx;
  bg.m = bg.n = bg.k = 1;
  bg.batch = 3;
  bg.A = {"y", 0, 1, 1};
  bg.B = {"y", 0, 1, 1};
  bg.C = {"gw", 0, 1, 1};
  bg.dtype = DType::F64;
  b.steps = {bg};
  b.outputs = {ProgramOutput{"grad", "gw"}};
  b.arena_bytes = 256;
  b.alloc_bytes_unplanned = 36;
  m.modules = {ModuleSpec{"m_0123456789abcdef", {"k_0123456789abcdef"}, {{"sm_90", "kernels/m.sm_90.ptx"}}, {{"sm_90", "kernels/m.sm_90.cubin"}}}};
  m.kernels = {KernelSpec{"k_0123456789abcdef", "kernels/k_0123456789abcdef.cu", "m_0123456789abcdef", {"linear", "relu"}}};
  m.runtime_checks.no_create_graph_inputs = {1};
  return m;
}

nlohmann::json asJson(const Manifest& m) { return nlohmann::json::parse(toJson(m).dump()); }

TEST(Plan, RoundTripsThroughJson) {
  const Manifest m = sample();
  const Manifest back = manifestFromJson(asJson(m), "manifest.json", int64_t{1} << 31);
  EXPECT_TRUE(back == m);
  EXPECT_EQ(toJson(back).dump(1), toJson(m).dump(1));  // and the text is stable
}

std::string refusal(nlohmann::json j) {
  try {
    manifestFromJson(j, "manifest.json", int64_t{1} << 31);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Plan, RefusesDamage) {
  nlohmann::json j = asJson(sample());
  {
    auto d = j;
    d["forward"]["steps"][1]["args"][1] = "nowhere";
    EXPECT_NE(refusal(d).find("forward.steps[1]': error: malformed manifest: uses buffer 'nowhere'"), std::string::npos) << refusal(d);
  }
  {
    auto d = j;
    d["forward"]["steps"][1]["kernel"] = "k_ffffffffffffffff";
    EXPECT_NE(refusal(d).find("is not a listed kernel"), std::string::npos) << refusal(d);
  }
  {
    auto d = j;
    d["weights"] = "../w.safetensors";
    EXPECT_NE(refusal(d).find("leaves the artifact directory"), std::string::npos) << refusal(d);
  }
  {
    auto d = j;
    d["forward"]["buffers"][2]["arena_offset"] = 250;
    EXPECT_NE(refusal(d).find("ends past the arena"), std::string::npos) << refusal(d);
  }
  {
    auto d = j;
    d["outputs"][1]["alias"]["view_chain"][0]["op"] = "add";
    EXPECT_NE(refusal(d).find("'add' is not a view op"), std::string::npos) << refusal(d);
  }
  {
    auto d = j;
    d["forward"]["steps"][0]["call"] = "cublasSgemm";
    EXPECT_NE(refusal(d).find("is not a GEMM call aotc makes"), std::string::npos) << refusal(d);
  }
  {
    auto d = j;
    d["version"] = 2;
    EXPECT_NE(refusal(d).find("this aotc runs manifests of versions 10 and 11"), std::string::npos) << refusal(d);
  }
  EXPECT_EQ(refusal(j), "");
}

TEST(Plan, ViewChainsFollowTheShapeRules) {
  Layout base{DType::F32, {2, 3}, {3, 1}, 0};
  Layout t = applyViewChain(base, {ViewOp{"t", {}}});
  EXPECT_EQ(t.shape, (Ints{3, 2}));
  EXPECT_EQ(t.strides, (Ints{1, 3}));
  Layout s = applyViewChain(base, {ViewOp{"select", {{"dim", int64_t{0}}, {"index", int64_t{1}}}}});
  EXPECT_EQ(s.shape, (Ints{3}));
  EXPECT_EQ(s.offset, 3);
}

}  // namespace
}  // namespace aotc::plan
