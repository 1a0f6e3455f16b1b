//===- fx/table_test.cpp - Every FX spelling has a fixture line -------------===//
//
// Walks the converter tables (supportedFxTargets(): the family tables and the
// pointwise rows' ATen names, Note [FX converter tables]) and fails naming
// every spelling that no committed FX program uses: some JSON file under
// testdata/ must hold a node whose target is it, so the e2e suite runs it
// against eager (or testdata/errors checks its refusal).  kNoFixtureYet lists
// the spellings that had none when the tables were split (issue 35); the list
// only shrinks: a listed spelling that gains a fixture fails too, until it is
// taken off the list.
//===----------------------------------------------------------------------===//
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "aotc/frontend/fx.h"

namespace aotc {
namespace {

const std::set<std::string> kNoFixtureYet = {
    "aten._embedding_bag_forward_only.default", "aten._index_put_impl.default", "aten._local_scalar_dense.default",
    "aten._prelu_kernel.default", "aten._unique2.default", "aten.adaptive_avg_pool2d.default",
    "aten.adaptive_avg_pool3d.default", "aten.add_.Scalar", "aten.argsort.default", "aten.argsort.stable",
    "aten.baddbmm.default", "aten.bartlett_window.periodic", "aten.blackman_window.periodic", "aten.cdist.default",
    "aten.clamp_.default", "aten.clamp_max.Tensor", "aten.clamp_min.Tensor", "aten.div_.Tensor", "aten.fill.Tensor",
    "aten.fix.default", "aten.floor_divide.default", "aten.grid_sampler.default", "aten.hamming_window.default",
    "aten.hamming_window.periodic_alpha", "aten.hamming_window.periodic_alpha_beta", "aten.hann_window.periodic",
    "aten.hardsigmoid_.default", "aten.hardswish_.default", "aten.hardtanh_.default", "aten.index_add.default",
    "aten.item.default", "aten.leaky_relu_.default", "aten.lift_fresh_copy.default", "aten.masked_select.default",
    "aten.mul_.Scalar", "aten.narrow.default", "aten.new_empty.default", "aten.nonzero.default", "aten.pdist.default",
    "aten.relu_.default", "aten.reshape.default", "aten.set_.source_Storage",
    "aten.set_.source_Storage_storage_offset", "aten.silu_.default", "aten.squeeze.default", "aten.squeeze_.default",
    "aten.squeeze_.dims", "aten.sub_.Scalar", "aten.unique.default", "aten.unsafe_split_with_sizes.default",
    "aten.upsample_bilinear2d.default", "aten.upsample_nearest2d.default", "aten.var.default",
    "aten.where.ScalarOther",
};

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
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::filesystem::path(AOTC_SOURCE_DIR) / "testdata")) {
    if (e.path().extension() != ".json") continue;
    std::ifstream f(e.path());
    nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded()) targets(j, used);
  }
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

}  // namespace
}  // namespace aotc
