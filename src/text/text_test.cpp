#include <gtest/gtest.h>

#include "aotc/ops/ops.h"
#include "aotc/text/text.h"

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

}  // namespace
}  // namespace aotc
