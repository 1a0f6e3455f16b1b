//===- fx/table_test.cpp - Every FX spelling has a fixture line -------------===//
//
// Walks the converter tables (supportedFxTargets(): the family tables and the
// pointwise rows' ATen names, Note [FX converter tables]) and fails naming
// every spelling that no committed FX program uses: some JSON file under
// testdata/ must hold a node whose target is it, so the e2e suite runs it
// against eager (or testdata/errors checks its refusal); a committed .pt2
// archive (testdata/pt2, read as the FX document the .pt2 front end makes of
// it, Note [pt2 front end]) counts too.  kNoFixtureYet lists
// the spellings that had none when the tables were split (issue 35); the list
// only shrinks: a listed spelling that gains a fixture fails too, until it is
// taken off the list.
//
// Every argument is accounted for (Note [No argument dropped], fx/table.cpp):
// the table driver refuses an argument a converter left unread unless it is
// at its default in the spelling's ATen schema, so every ATen spelling must
// have its schema in schemas.inc (scripts/fx_schemas.py), and the schemas
// must name every argument the committed fixtures pass (same positions, same
// keywords), or the driver would name or default-check the wrong argument.
//===----------------------------------------------------------------------===//
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <vector>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "aotc/frontend/fx.h"
#include "aotc/frontend/pt2.h"
#include "converter.h"

namespace aotc {
namespace {

const std::set<std::string> kNoFixtureYet = {
    "aten._embedding_bag_forward_only.default", "aten._index_put_impl.default", "aten._local_scalar_dense.default",
    "aten._prelu_kernel.default", "aten._unique2.default", "aten.adaptive_avg_pool2d.default",
    "aten.adaptive_avg_pool3d.default", "aten.add_.Scalar", "aten.argsort.default", "aten.cdist.default",
    "aten.fill.Tensor", "aten.fix.default", "aten.grid_sampler.default", "aten.item.default",
    "aten.lift_fresh_copy.default", "aten.masked_select.default", "aten.mul_.Scalar", "aten.narrow.default",
    "aten.new_empty.default", "aten.nonzero.default", "aten.pdist.default",
    "aten.set_.source_Storage", "aten.set_.source_Storage_storage_offset", "aten.squeeze_.dims", "aten.sub_.Scalar",
    "aten.unique.default", "aten.unsafe_split_with_sizes.default", "aten.upsample_bilinear2d.default",
    "aten.upsample_nearest2d.default", "aten.var.default", "aten.where.ScalarOther",
};

/// Spellings with no ATen schema, and why.
const std::map<std::string, std::string> kNoSchema = {
    {"aten.unique.default", "not an ATen overload (torch.unique traces as _unique2); refused as data-dependent"},
    {"aotc.autograd_function", "aotc's own node for a custom autograd.Function: every argument is read as a tensor"},
};

/// Every committed program: the FX JSON files and the .pt2 archives (as the
/// FX documents they translate to), but not the bad archives of pt2.test.
std::vector<std::pair<std::filesystem::path, nlohmann::json>> fixtures() {
  std::vector<std::pair<std::filesystem::path, nlohmann::json>> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::filesystem::path(AOTC_SOURCE_DIR) / "testdata")) {
    if (e.path().extension() == ".json") {
      std::ifstream f(e.path());
      nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
      if (!j.is_discarded()) out.emplace_back(e.path(), std::move(j));
    } else if (e.path().extension() == ".pt2" && e.path().filename().string().rfind("bad_", 0) != 0) {
      FrontendOptions o;
      if (e.path().filename() == "two_models.pt2") o.model = "first";
      out.emplace_back(e.path(), pt2FxDocument(e.path().string(), o));
    }
  }
  return out;
}

void targets(const nlohmann::json& j, std::set<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (k == "target" && v.is_string()) out.insert(v.get<std::string>());
      targets(v, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) targets(v, out);
  }
}

TEST(FxTables, EverySpellingHasAFixtureLine) {
  std::set<std::string> used;
  for (const auto& [path, j] : fixtures()) targets(j, used);
  std::string missing, stale;
  std::set<std::string> spellings;
  for (const std::string& s : supportedFxTargets()) {
    spellings.insert(s);
    bool has = used.count(s) > 0;
    if (!has && !kNoFixtureYet.count(s)) missing += "\n  " + s;
    if (has && kNoFixtureYet.count(s)) stale += "\n  " + s + " (has a fixture now: take it off kNoFixtureYet)";
  }
  for (const std::string& s : kNoFixtureYet)
    if (!spellings.count(s)) stale += "\n  " + s + " (not a spelling of the tables)";
  EXPECT_TRUE(missing.empty()) << "spellings without a fixture line (add one to testdata/fx, testdata/conformance or testdata/ops):"
                               << missing;
  EXPECT_TRUE(stale.empty()) << "kNoFixtureYet is out of date:" << stale;
}

/// Targets of testdata/pt2/exported_targets.txt the .pt2 door does not take
/// yet, and why; the list only shrinks.
const std::map<std::string, std::string> kPt2NotYet = {
    {"torch.ops.aten.lstm.input", "nn.LSTM kept whole by the training IR (its Core ATen form converts)"},
    {"torch.ops.aten.gru.input", "nn.GRU kept whole by the training IR (its Core ATen form converts)"},
};

/// Note [Exported targets]: every target torch.export wrote for the zoo and
/// the .pt2 test programs (testdata/pt2/exported_targets.txt, written by
/// scripts/pt2_targets.py) is one the .pt2 door converts.
TEST(Pt2Targets, EveryExportedTargetIsSupported) {
  std::ifstream f(std::filesystem::path(AOTC_SOURCE_DIR) / "testdata" / "pt2" / "exported_targets.txt");
  ASSERT_TRUE(f) << "testdata/pt2/exported_targets.txt is missing";
  std::string line, unsupported, stale;
  std::set<std::string> listed;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    listed.insert(line);
    const bool ok = isSupportedPt2Target(line);
    if (!ok && !kPt2NotYet.count(line)) unsupported += "\n  " + line;
    if (ok && kPt2NotYet.count(line)) stale += "\n  " + line + " (converts now: take it off kPt2NotYet)";
  }
  for (const auto& [t, why] : kPt2NotYet)
    if (!listed.count(t)) stale += "\n  " + t + " (not in the list)";
  EXPECT_GT(listed.size(), 50u) << "the list is too short to be torch.export's";
  EXPECT_TRUE(unsupported.empty()) << "targets torch.export writes for the zoo that the .pt2 door does not convert:" << unsupported;
  EXPECT_TRUE(stale.empty()) << "kPt2NotYet is out of date:" << stale;
}

TEST(Pt2Targets, TheQueryFollowsTheTranslation) {
  EXPECT_TRUE(isSupportedPt2Target("torch.ops.aten.conv2d.default"));
  EXPECT_TRUE(isSupportedPt2Target("torch.ops.aten.add_.Tensor"));
  EXPECT_TRUE(isSupportedPt2Target("torch.ops.aten._assert_tensor_metadata.default"));
  EXPECT_TRUE(isSupportedPt2Target("torch.ops.higher_order.wrap_with_set_grad_enabled"));
  EXPECT_TRUE(isSupportedPt2Target("torch.ops.higher_order.wrap_with_autocast"));  // Note [Autocast regions]
  EXPECT_TRUE(isSupportedPt2Target("torch.ops.higher_order.cond"));                // Note [pt2 cond]
  EXPECT_TRUE(isSupportedPt2Target("_operator.mul"));
  EXPECT_FALSE(isSupportedPt2Target("torch.ops.aten.special_bessel_j0.default"));
  EXPECT_FALSE(isSupportedPt2Target("torch.ops.higher_order.my_region"));
}

TEST(FxTables, EverySpellingHasItsSchema) {
  std::string missing, stale;
  std::set<std::string> spellings;
  for (const std::string& s : supportedFxTargets()) {
    spellings.insert(s);
    bool has = fx::atenSchema(s) != nullptr;
    if (!has && !kNoSchema.count(s)) missing += "\n  " + s;
    if (has && kNoSchema.count(s)) stale += "\n  " + s + " (has a schema now: take it off kNoSchema)";
  }
  for (const auto& [s, why] : kNoSchema)
    if (!spellings.count(s)) stale += "\n  " + s + " (not a spelling of the tables)";
  EXPECT_TRUE(missing.empty()) << "spellings without an ATen schema (run /usr/bin/python3 scripts/fx_schemas.py):" << missing;
  EXPECT_TRUE(stale.empty()) << "kNoSchema is out of date:" << stale;
}

/// Every node of the committed fixtures whose target is listed.
void listedNodes(const nlohmann::json& j, const std::set<std::string>& listed, std::vector<nlohmann::json>& out) {
  if (j.is_object()) {
    if (j.contains("target") && j["target"].is_string() && listed.count(j["target"].get<std::string>()) && j.contains("args"))
      out.push_back(j);
    for (const auto& [k, v] : j.items()) listedNodes(v, listed, out);
  } else if (j.is_array()) {
    for (const auto& v : j) listedNodes(v, listed, out);
  }
}

TEST(FxTables, SchemasNameEveryArgumentTheFixturesPass) {
  std::vector<std::string> all = supportedFxTargets();
  std::set<std::string> listed(all.begin(), all.end());
  std::vector<nlohmann::json> nodes;
  for (const auto& [path, j] : fixtures())
    // testdata/errors holds nodes that are wrong on purpose.
    if (path.string().find("/testdata/errors/") == std::string::npos) listedNodes(j, listed, nodes);
  EXPECT_GT(nodes.size(), 1000u);
  std::set<std::string> bad;
  for (const nlohmann::json& n : nodes) {
    const std::string t = n["target"].get<std::string>();
    const fx::Schema* s = fx::atenSchema(t);
    if (!s) continue;
    if (n["args"].size() > s->args.size())
      bad.insert(t + ": " + std::to_string(n["args"].size()) + " positional arguments, the schema has " + std::to_string(s->args.size()));
    for (size_t i = 0; i < n["args"].size() && i < s->args.size(); ++i)
      if (s->args[i].keywordOnly) bad.insert(t + ": argument " + std::to_string(i) + " given by position, keyword-only in the schema");
    if (n.contains("kwargs") && n["kwargs"].is_object())
      for (const auto& [k, v] : n["kwargs"].items()) {
        bool known = false;
        for (const fx::SchemaArg& a : s->args) known = known || k == a.name;
        if (!known) bad.insert(t + ": keyword '" + k + "' is not in the schema (PyTorch " + s->torch + ")");
      }
  }
  std::string msg;
  for (const std::string& b : bad) msg += "\n  " + b;
  EXPECT_TRUE(bad.empty()) << "fixture nodes that their spelling's schema does not describe:" << msg;
}

}  // namespace
}  // namespace aotc
