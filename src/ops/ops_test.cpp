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

}  // namespace
}  // namespace aotc
