//===- onnx_table_test.cpp - Every ONNX op type has a model that runs it ---===//
//
// (Here rather than in src/frontend/onnx/ while another branch reshapes that
// room; it belongs beside fx/table_test.cpp as onnx/table_test.cpp.)
//
// Walks the ONNX converter table (supportedOnnxOps(), Note [ONNX converter
// tables]) and fails naming every op type that no model exercises: a model
// under testdata/ (its graph or a subgraph) or a case of ONNX's backend test
// suite that aotc passes (testdata/onnx/pass_list.txt, run by the
// onnx_conformance test against the case's expected outputs) must hold a node
// of that type.  kNoModelYet lists the exceptions with the reason each has
// none; like FX's kNoFixtureYet the list only shrinks: a listed op type that
// gains a model fails until it is taken off.
//===----------------------------------------------------------------------===//
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "aotc/frontend/onnx.h"

namespace aotc {
namespace {

const char* kSuite = "/usr/share/libonnx-testdata/data";

/// Op types with no model that runs them, and why.
const std::map<std::string, std::string> kNoModelYet = {
};

/// Op types whose only models are cases of the pinned onnx wheel's suite
/// (defined or first passing after ONNX 1.12, issue 38): each must have a
/// case of that name prefix in pass_list_pinned.txt, which CTest
/// onnx_conformance_torch2 runs.  Op type -> case name prefix.
const std::map<std::string, std::string> kPinnedSuiteOnly = {
    {"AffineGrid", "test_affine_grid"},
    {"Attention", "test_attention"},
    {"BitCast", "test_bitcast"},
    {"BitwiseAnd", "test_bitwise_and"},
    {"BitwiseNot", "test_bitwise_not"},
    {"BitwiseOr", "test_bitwise_or"},
    {"BitwiseXor", "test_bitwise_xor"},
    {"CausalConvWithState", "test_causal_conv_with_state"},
    {"CenterCropPad", "test_center_crop_pad"},
    {"Col2Im", "test_col2im"},
    {"CumProd", "test_cumprod"},
    {"DeformConv", "test_deform_conv"},
    {"GroupNormalization", "test_group_normalization"},
    {"LinearAttention", "test_linear_attention"},
    {"LpNormalization", "test_lpnormalization"},
    {"LpPool", "test_lppool"},
    {"Mish", "test_mish"},
    {"RMSNormalization", "test_rms_normalization"},
    {"RotaryEmbedding", "test_rotary_embedding"},
    {"Swish", "test_swish"},
    {"SwiGLU", "test_swiglu"},
    {"TensorScatter", "test_tensorscatter"},
};

void opTypes(const onnx::GraphProto& g, std::set<std::string>& out) {
  for (const onnx::NodeProto& n : g.node()) {
    out.insert(n.op_type());
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.has_g()) opTypes(a.g(), out);
      for (const onnx::GraphProto& sg : a.graphs()) opTypes(sg, out);
    }
  }
}

bool readModel(const std::filesystem::path& p, std::set<std::string>& out) {
  std::ifstream f(p, std::ios::binary);
  onnx::ModelProto m;
  if (!f || !m.ParseFromIstream(&f)) return false;
  opTypes(m.graph(), out);
  for (const onnx::FunctionProto& fn : m.functions())
    for (const onnx::NodeProto& n : fn.node()) out.insert(n.op_type());
  return true;
}

TEST(OnnxTables, EveryOpTypeHasAModel) {
  std::set<std::string> used;
  const std::filesystem::path root(AOTC_SOURCE_DIR);
  for (const auto& e : std::filesystem::recursive_directory_iterator(root / "testdata"))
    if (e.path().extension() == ".onnx") readModel(e.path(), used);
  ASSERT_TRUE(std::filesystem::is_directory(kSuite)) << kSuite << " is missing (Debian's libonnx-testdata)";
  std::ifstream list(root / "testdata" / "onnx" / "pass_list.txt");
  ASSERT_TRUE(list) << "testdata/onnx/pass_list.txt is missing";
  size_t cases = 0;
  for (std::string line; std::getline(list, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++cases;
    EXPECT_TRUE(readModel(std::filesystem::path(kSuite) / line / "model.onnx", used)) << "cannot read the model of " << line;
  }
  EXPECT_GT(cases, 900u) << "pass_list.txt lists fewer cases than ONNX's suite passes";
  // The pinned suite's cases, by name (their data lives in a cache the
  // torch2 environment fills, so only the names are read here).
  std::set<std::string> pinned;
  {
    std::ifstream plist(root / "testdata" / "onnx" / "pass_list_pinned.txt");
    ASSERT_TRUE(plist) << "testdata/onnx/pass_list_pinned.txt is missing";
    std::vector<std::string> names;
    for (std::string line; std::getline(plist, line);)
      if (!line.empty() && line[0] != '#') names.push_back(line);
    for (const auto& [op, prefix] : kPinnedSuiteOnly)
      for (const std::string& n : names)
        if (n.find("/" + prefix) != std::string::npos) pinned.insert(op);
  }
  std::string missing, stale;
  std::set<std::string> ops;
  for (const std::string& op : supportedOnnxOps()) {
    ops.insert(op);
    bool has = used.count(op) > 0 || pinned.count(op) > 0;
    if (!has && !kNoModelYet.count(op)) missing += "\n  " + op;
    if (has && kNoModelYet.count(op)) stale += "\n  " + op + " (a model runs it now: take it off kNoModelYet)";
  }
  for (const auto& [op, why] : kNoModelYet)
    if (!ops.count(op)) stale += "\n  " + op + " (not an op type of the table)";
  for (const auto& [op, prefix] : kPinnedSuiteOnly) {
    if (!ops.count(op)) stale += "\n  " + op + " (kPinnedSuiteOnly: not an op type of the table)";
    if (!pinned.count(op)) stale += "\n  " + op + " (kPinnedSuiteOnly: no case " + prefix + "* in pass_list_pinned.txt)";
    if (used.count(op)) stale += "\n  " + op + " (a model of testdata or ONNX 1.12's suite runs it now: take it off kPinnedSuiteOnly)";
  }
  EXPECT_TRUE(missing.empty()) << "ONNX op types no model runs (add one to testdata/onnx/gen.py, or a passing case of the "
                                  "backend suite to pass_list.txt):" << missing;
  EXPECT_TRUE(stale.empty()) << "kNoModelYet is out of date:" << stale;
}

}  // namespace
}  // namespace aotc
