#include <gtest/gtest.h>

#include "aotc/ops/gradients.h"
#include "aotc/ops/ops.h"
#include "aotc/ops/reference.h"

namespace aotc {
namespace {

TEST(Ops, ViewStridesMatchPyTorch) {
  // t() of a [4,6] tensor viewed as [6,2,2]: legal, strides {1,12,6}.
  auto st = viewStrides({6, 4}, {1, 6}, {6, 2, 2});
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(*st, (Ints{1, 12, 6}));
  EXPECT_FALSE(viewStrides({6, 4}, {1, 6}, {24}).has_value());
  EXPECT_EQ(*broadcastShapes({4, 1, 3}, {5, 1}), (Ints{4, 5, 3}));
  EXPECT_FALSE(broadcastShapes({4, 3}, {5}).has_value());
}

TEST(Ops, RowsAreConsistent) {
  // completeness_test (src/driver) checks that every row has each rule it
  // needs; here, that no row has one it must not: an op that does not compute
  // has no reference kernel, and a mutation names its functional op.
  for (int i = 0; i < kNumOps; ++i) {
    OpKind k = static_cast<OpKind>(i);
    const OpInfo& info = opInfo(k);
    EXPECT_EQ(hasReferenceKernel(k), opComputes(k)) << info.name;
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

// Note [Cast after expand]: a backward's expand of a widening 16-bit cast is
// built as the cast of the expand; not in a forward (expand's gradient would
// change), nor for a narrowing cast or one to float64, and the first cast
// stays for its other reader.
TEST(Ops, CastAfterExpand) {
  struct Case {
    Phase phase;
    DType from, to;
    bool moved;
  };
  for (const Case& k : {Case{Phase::Backward, DType::BF16, DType::F32, true}, Case{Phase::Backward, DType::F16, DType::F32, true},
                        Case{Phase::Forward, DType::BF16, DType::F32, false}, Case{Phase::Forward, DType::F16, DType::F32, false},
                        Case{Phase::Backward, DType::F32, DType::BF16, false}, Case{Phase::Backward, DType::BF16, DType::F64, false}}) {
    const std::string what = cat(dtypeName(k.from), " -> ", dtypeName(k.to), k.phase == Phase::Backward ? " (backward)" : " (forward)");
    Graph g;
    const ValueId x = g.addInput("x", TensorType::contiguous(k.from, {2, 1}), InputRole::UserInput, false);
    Builder b(g, SourceLoc("cast_after_expand.ir"), k.phase);
    const ValueId c = b.cast(x, k.to);
    const ValueId other = b.neg(c);
    const ValueId e = b.expand(c, {2, 3});
    EXPECT_EQ(g.type(e).dtype, k.to) << what;
    EXPECT_EQ(g.type(e).sizes, (Ints{2, 3})) << what;
    const Node& n = g.nodes[static_cast<size_t>(g.values[e].node)];
    if (k.moved) {
      ASSERT_EQ(n.op, OpKind::Cast) << what;
      const Node& inner = g.nodes[static_cast<size_t>(g.values[n.inputs[0]].node)];
      EXPECT_EQ(inner.op, OpKind::Expand) << what;
      EXPECT_EQ(inner.inputs, (std::vector<ValueId>{x})) << what;
      EXPECT_EQ(g.nodes[static_cast<size_t>(g.values[e].node)].phase, Phase::Backward) << what;
    } else {
      EXPECT_EQ(n.op, OpKind::Expand) << what;
      EXPECT_EQ(n.inputs, (std::vector<ValueId>{c})) << what;
    }
    // The first cast and its other reader are untouched.
    EXPECT_EQ(g.nodes[static_cast<size_t>(g.values[c].node)].inputs, (std::vector<ValueId>{x})) << what;
    EXPECT_EQ(g.nodes[static_cast<size_t>(g.values[other].node)].inputs, (std::vector<ValueId>{c})) << what;
  }
}

}  // namespace
}  // namespace aotc
