#include <gtest/gtest.h>

#include "aotc/ir/safetensors.h"
#include "aotc/ir/text.h"
#include "aotc/ops/gradients.h"
#include "aotc/ops/ops.h"

namespace aotc {
namespace {

const char* kGraph = R"(graph @g {
  input %x : f32[4,8] user_input requires_grad
  input %fc.weight : f32[16,8] parameter requires_grad
  input %buf : f32[4] buffer
  %t : f32[8,16]{1,8} = t(%fc.weight) loc("t", "aten.t.default")
  %mm : f32[4,16] = mm(%x, %t)
  %c : f32[] = constant() {dtype="f32", value=0.5}
  %m : f32[4,16] = mul(%mm, %c) #must_save
  %s : f32[4] = sum(%m) {dim=[1], keepdim=false}
  %b2 : f32[4] = add(%buf, %s)
  %n : f32[4] = neg(%s) #bw
  epilogue_copy(%buf, %b2) #must_be_in_forward
  output %s user
  output %t user alias("fc.weight", [t])
}
)";

TEST(IrText, RoundTrip) {
  Graph g = parseGraph(kGraph, "g.ir");
  verifyGraph(g);
  EXPECT_EQ(printGraph(g), kGraph);
  Graph g2 = parseGraph(printGraph(g), "g2.ir");
  EXPECT_EQ(printGraph(g2), kGraph);
}

TEST(IrText, ParseErrorsNameTheLine) {
  try {
    parseGraph("graph @g {\n  %y : f32[2] = relu(%x)\n}\n", "bad.ir");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "bad.ir:2: error: use of undefined value %x");
  }
}

TEST(IrVerify, RejectsWrongType) {
  Graph g = parseGraph("graph @g {\n input %x : f32[2,3] user_input\n %y : f32[3,3] = relu(%x)\n output %y user\n}\n", "v.ir");
  try {
    verifyGraph(g, "v.ir");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("shape inference gives f32[2,3]"), std::string::npos) << e.what();
  }
}

TEST(Ops, ViewStridesMatchPyTorch) {
  // t() of a [4,6] tensor viewed as [6,2,2]: legal, strides {1,12,6}.
  auto st = viewStrides({6, 4}, {1, 6}, {6, 2, 2});
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(*st, (Ints{1, 12, 6}));
  EXPECT_FALSE(viewStrides({6, 4}, {1, 6}, {24}).has_value());
  EXPECT_EQ(*broadcastShapes({4, 1, 3}, {5, 1}), (Ints{4, 5, 3}));
  EXPECT_FALSE(broadcastShapes({4, 3}, {5}).has_value());
}

TEST(Ops, TablesAreComplete) {
  // Every row has a shape rule; every Diff row has a gradient rule; every op
  // that computes has a reference kernel.
  for (int i = 0; i < kNumOps; ++i) {
    OpKind k = static_cast<OpKind>(i);
    const OpInfo& info = opInfo(k);
    EXPECT_TRUE(hasShapeRule(k)) << info.name;
    if (info.grad == GradKind::Diff) {
      EXPECT_NE(gradRule(k), nullptr) << info.name;
    }
    // Ops that exist only before functionalize (mutations, captured custom
    // Functions) or are side effects (epilogue copies) have no kernel.
    bool computes = info.category != OpCategory::Mutation && info.category != OpCategory::MetaMutation &&
                    info.category != OpCategory::Epilogue && info.category != OpCategory::Custom;
    EXPECT_EQ(hasReferenceKernel(k), computes) << info.name;
    if ((info.category == OpCategory::Mutation || info.category == OpCategory::MetaMutation) && k != OpKind::CopyInplace) {
      EXPECT_TRUE(info.functional) << info.name;
    }
  }
}

TEST(Ops, AttributeSchemas) {
  // Every row's schema parses (a malformed one is an AOTC_CHECK abort) and
  // ends with the universal no_grad flag; a functional op and its in-place
  // form take the same attributes.
  for (int i = 0; i < kNumOps; ++i) {
    OpKind k = static_cast<OpKind>(i);
    const auto& s = attrSchema(k);
    ASSERT_FALSE(s.empty()) << opName(k);
    EXPECT_EQ(s.back().name, "no_grad") << opName(k);
    if (auto f = opInfo(k).functional) {
      EXPECT_STREQ(opInfo(k).attrs, opInfo(*f).attrs) << opName(k);
    }
  }
  auto error = [](OpKind k, const Attrs& a) {
    try {
      checkAttrs(k, a);
    } catch (const UserError& e) {
      return e.diagnostics().front().message;
    }
    return std::string("accepted");
  };
  EXPECT_EQ(error(OpKind::Sum, {{"dim", Ints{0}}, {"keepdim", true}}), "accepted");
  EXPECT_EQ(error(OpKind::Sum, {}), "accepted");
  EXPECT_EQ(error(OpKind::Constant, {{"value", int64_t{2}}}), "accepted");  // an integer is a number
  EXPECT_EQ(error(OpKind::Sum, {{"dim", int64_t{0}}}), "sum: attribute 'dim' must be a list of integers, got 0");
  EXPECT_EQ(error(OpKind::Slice, {{"dim", 0.5}}), "slice: attribute 'dim' must be an integer, got 0.5");
  EXPECT_EQ(error(OpKind::Select, {{"dim", int64_t{0}}}), "select: missing attribute 'index'");
  EXPECT_EQ(error(OpKind::Cast, {{"dtype", std::string("f33")}}), "cast: attribute 'dtype' must be a dtype name, got \"f33\"");
  EXPECT_EQ(error(OpKind::Relu, {{"inplace", true}}), "relu: unknown attribute 'inplace' (it takes no_grad)");
  EXPECT_EQ(error(OpKind::View, {{"size", Ints(100, 1)}}), "accepted");
  EXPECT_EQ(error(OpKind::Permute, {{"dims", std::string(100, 'x')}}).size(),
            std::string("permute: attribute 'dims' must be a list of integers, got ").size() + 40);
}

TEST(Safetensors, RoundTripEveryDtype) {
  std::map<std::string, HostTensor> m;
  for (DType d : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32, DType::Bool})
    m[dtypeName(d)] = HostTensor{d, {3}, {roundTo(d, 1.5), roundTo(d, -2.25), roundTo(d, 0.0)}};
  std::string p = ::testing::TempDir() + "/rt.safetensors";
  writeSafetensors(p, m);
  auto back = readSafetensors(p);
  ASSERT_EQ(back.size(), m.size());
  for (auto& [k, t] : m) {
    EXPECT_EQ(back[k].dtype, t.dtype) << k;
    EXPECT_EQ(back[k].sizes, t.sizes) << k;
    EXPECT_EQ(back[k].data, t.data) << k;
  }
}

}  // namespace
}  // namespace aotc
