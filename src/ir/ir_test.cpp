#include <gtest/gtest.h>

#include "aotc/ir/host_tensor.h"
#include "aotc/ir/ir.h"
#include "aotc/ir/safetensors.h"

namespace aotc {
namespace {

TEST(Ir, TypesAndGraphs) {
  // The IR on its own: types, values and nodes, with no op table.
  TensorType t = TensorType::contiguous(DType::F32, {2, 3, 4});
  EXPECT_EQ(t.strides, (Ints{12, 4, 1}));
  EXPECT_TRUE(t.isContiguous());
  EXPECT_EQ(t.str(), "f32[2,3,4]");
  TensorType tt{DType::F16, {4, 3}, {1, 4}, 2};
  EXPECT_FALSE(tt.isContiguous());
  EXPECT_EQ(tt.storageSpan(), 14);
  EXPECT_EQ(tt.str(), "f16[4,3]{1,4}+2");

  Graph g;
  ValueId x = g.addInput("x", t, InputRole::UserInput, true);
  ValueId y = g.newValue(g.uniqueName("x"), t);
  EXPECT_NE(g.values[y].name, "x");
  Node n;
  n.op = static_cast<OpKind>(0);
  n.inputs = {x};
  n.outputs = {y};
  EXPECT_EQ(g.appendNode(std::move(n)), 0);
  EXPECT_EQ(g.values[y].node, 0);
  GraphOutput out;
  out.value = y;
  g.outputs.push_back(out);
  UseInfo u = UseInfo::compute(g);
  EXPECT_EQ(u.users[x], (std::vector<int32_t>{0}));
  EXPECT_TRUE(u.is_output[y]);
  EXPECT_EQ(g.inputNamed("x")->value, x);
  EXPECT_EQ(g.valueNamed("nope"), kNoValue);
  EXPECT_TRUE(validName("fc.weight"));
  EXPECT_FALSE(validName("../etc"));
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
