//===- onnx/versions_test.cpp - The op-version guard ------------------------===//
//
// Note [ONNX op versions] (versions.cpp): a node whose op's definition at the
// model's opset is newer than its converter's reviewed version is refused,
// naming both versions; an op its opset does not define yet is refused; the
// reviewed table is consistent with op_versions.inc and the converters.
//===----------------------------------------------------------------------===//
#include <gtest/gtest.h>

#include "node.h"

namespace aotc::onnx_fe {
namespace {

TEST(OnnxVersions, EffectiveVersionIsTheNewestDefinitionAtTheOpset) {
  EXPECT_EQ(effectiveVersion("Cast", 13), 13);
  EXPECT_EQ(effectiveVersion("Cast", 18), 13);
  EXPECT_EQ(effectiveVersion("Cast", 19), 19);
  EXPECT_EQ(effectiveVersion("Cast", 22), 21);
  EXPECT_EQ(effectiveVersion("Gelu", 19), 0);
  EXPECT_EQ(effectiveVersion("NoSuchOp", 19), -1);
}

TEST(OnnxVersions, ANewerDefinitionThanReviewedIsRefused) {
  const std::map<std::string, int> reviewed = {{"Cast", 13}, {"Gelu", 20}};
  EXPECT_EQ(versionRefusal("Cast", 17, reviewed), "");
  EXPECT_EQ(versionRefusal("Cast", 18, reviewed), "");
  std::string why = versionRefusal("Cast", 21, reviewed);
  EXPECT_NE(why.find("Cast at opset 21 is its version 21"), std::string::npos) << why;
  EXPECT_NE(why.find("up to version 13"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  EXPECT_EQ(versionRefusal("Gelu", 18, reviewed), "op Gelu is not defined at opset 18 (ONNX defines it from opset 20)");
  EXPECT_EQ(versionRefusal("Gelu", 28, reviewed), "");
  EXPECT_EQ(versionRefusal("Relu", 28, reviewed), "");  // not in the table: no converter, refused elsewhere
}

TEST(OnnxVersions, EveryConverterHasAReviewedVersion) {
  const std::map<std::string, int>& r = reviewedVersions();  // checks op_versions.inc against the converters
  for (const auto& [op, fn] : converters()) {
    if (effectiveVersion(op, 28) < 0) continue;  // ai.onnx.preview.training
    ASSERT_TRUE(r.count(op)) << op;
    EXPECT_GE(r.at(op), effectiveVersion(op, 17)) << op;
  }
  EXPECT_EQ(r.at("Relu"), 14);   // unchanged since opset 14
  EXPECT_EQ(r.at("Range"), 27);  // float16/bfloat16 with stash_type
}

}  // namespace
}  // namespace aotc::onnx_fe
