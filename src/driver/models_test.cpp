//===- models_test.cpp - Real models: compile, run, compare with eager ----===//
//
// resnet18 and mobilenet_v2 (train mode), a 2-layer TransformerEncoder and an
// MLP with cross_entropy, exported by testdata/models/gen_models.py into the
// build directory (the `models` CTest fixture).  Each compiles under every
// partitioner and runs on the reference runtime; outputs, every parameter
// gradient and the BatchNorm running statistics after forward must match
// eager (float64) within 1e-4 relative.
//
// Relative to what: a tensor's own max-abs value, floored at 1e-3 of the
// largest value of its kind (gradients, or everything else), because some
// tensors are zero up to rounding (the gradient of a bias followed by a
// BatchNorm, the running mean after a mean-free layer) and a relative error
// of rounding noise means nothing.
//===----------------------------------------------------------------------===//
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <spdlog/sinks/null_sink.h>

#include "aotc/driver/driver.h"
#include "aotc/ir/safetensors.h"
#include "aotc/passes/passes.h"
#include "test_compare.h"

namespace aotc {
namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(AOTC_BINARY_DIR) / "models";

/// Worst per-tensor error of `got` against `want` (see the file comment);
/// `gradTol` applies to gradients, `tol` to everything else.
void expectMatches(const std::string& what, std::map<std::string, HostTensor>& got, const std::map<std::string, HostTensor>& want,
                   double tol, double gradTol) {
  std::map<bool, double> scale;
  for (auto& [k, v] : want)
    for (double x : v.data) scale[k.rfind("grad.", 0) == 0] = std::max(scale[k.rfind("grad.", 0) == 0], std::abs(x));
  for (auto& [k, v] : want) {
    ASSERT_TRUE(got.count(k)) << what << ": missing result " << k;
    ASSERT_EQ(got[k].sizes, v.sizes) << k;
    bool isGrad = k.rfind("grad.", 0) == 0;
    double ref = 0, err = 0;
    for (size_t i = 0; i < v.data.size(); ++i) {
      ref = std::max(ref, std::abs(v.data[i]));
      err = std::max(err, elementError(got[k].data[i], v.data[i]));
    }
    double denom = std::max(ref, 1e-3 * scale[isGrad]);
    EXPECT_LE(err, (isGrad ? gradTol : tol) * denom) << what << " " << k << ": max abs error " << err << " at scale " << ref;
  }
  for (auto& [k, v] : got) EXPECT_TRUE(want.count(k)) << what << ": result " << k << " has no eager reference";
}

class Model : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(Model, MatchesEager) {
  auto [name, partitioner] = GetParam();
  ASSERT_TRUE(fs::exists(kModels / (name + ".json"))) << "run the `models` fixture (testdata/models/gen_models.py) first";
  CompileOptions o;
  o.model = (kModels / (name + ".json")).string();
  o.out_dir = (fs::path(AOTC_BINARY_DIR) / "e2e" / (name + "." + partitioner)).string();
  o.partitioner = *parseOption<Partitioner>(partitioner);
  o.archs = {"sm_90"};
  o.cache_dir = (fs::path(AOTC_TEST_CACHE_DIR) / "kernels").string();  // Note [Shared test cache] (CMakeLists.txt)
  auto log = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
  CompileSummary s = compileModel(o, log);
  EXPECT_GT(s.saved_bytes, 0);
  std::string cmd = "/usr/bin/python3 " + std::string(AOTC_SOURCE_DIR) + "/scripts/validate_json.py " + AOTC_SOURCE_DIR +
                    "/schemas/manifest.schema.json " + o.out_dir + "/manifest.json > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  RunOptions r;
  r.input_files = {(kModels / (name + ".safetensors")).string(), (kModels / (name + ".inputs.safetensors")).string()};
  r.grad_outputs_file = (kModels / (name + ".inputs.safetensors")).string();
  auto want = readSafetensors((kModels / (name + ".expected.safetensors")).string());
  size_t grads = 0, stats = 0;
  for (auto& [k, v] : want) {
    grads += k.rfind("grad.", 0) == 0;
    stats += k.find("running_") != std::string::npos;
  }
  EXPECT_GT(grads, 0u);
  if (name == "resnet18" || name == "mobilenet_v2") {
    EXPECT_GT(stats, 0u);
  }
  // The reference runtime (double arithmetic, rounded to float32 per op)
  // against eager in float64.
  auto got = runArtifact(o.out_dir, r);
  expectMatches(name + " (reference)", got, want, 1e-4, 1e-4);
  // The generated kernels (float32 arithmetic, as on a GPU) against eager in
  // float32.  Note [Ill-conditioned backwards]: these train-mode models
  // normalize over 8 values in their last BatchNorms, so float32 rounding is
  // amplified in the gradients: eager float32 itself is 2e-2 (mobilenet_v2)
  // and 4e-1 (resnet18's layer4) off float64.  Evaluation-order differences
  // alone put mobilenet_v2's gradients about 2e-4 from eager float32 (measured),
  // so its gradients are held to 1e-3; outputs and statistics to 1e-4.
  r.backend = "emulate";
  r.emulate_cache_dir = (fs::path(AOTC_TEST_CACHE_DIR) / "emulate").string();
  auto emu = runArtifact(o.out_dir, r);
  auto want32 = readSafetensors((kModels / (name + ".f32.expected.safetensors")).string());
  if (name == "resnet18") {
    // Note [Reduction precision]: the kernels accumulate float32 in float
    // (issue 34), CPU eager accumulates batch-norm statistics in double.
    // Through layer4's conditioning that moves resnet18's gradients 0.43
    // (relative) from eager float32 -- and to 4.9e-6 from eager float64,
    // where accumulating in double left them 0.43 off float64 and 2.9e-5
    // from eager float32 (measured).  A model that moves is held to the
    // float64 reference; the tolerances are the same.
    expectMatches(name + " (emulate)", emu, want, 1e-4, 1e-4);
  } else if (name == "mobilenet_v2") {
    // Float32 kernels against the float64 reference is the conditioning
    // above; their float64 twins (Model64) hold the kernels to the reference.
    expectMatches(name + " (emulate)", emu, want32, 1e-4, 1e-3);
  } else {
    expectMatches(name + " (emulate)", emu, want32, 1e-4, 1e-4);
    expectMatches(name + " (emulate vs reference)", emu, got, 1e-4, 1e-4);
  }
}

/// The BatchNorm CNNs exported in float64: the generated kernels compute in
/// double, so the conditioning that separates float32 from float64 is gone
/// and the emulate backend must match the reference runtime (and eager in
/// float64) within 1e-4 relative -- every output, gradient and statistic.
class Model64 : public ::testing::TestWithParam<std::string> {};

TEST_P(Model64, EmulateMatchesReference) {
  const std::string name = GetParam();
  ASSERT_TRUE(fs::exists(kModels / (name + ".json"))) << "run the `models` fixture (testdata/models/gen_models.py) first";
  CompileOptions o;
  o.model = (kModels / (name + ".json")).string();
  o.out_dir = (fs::path(AOTC_BINARY_DIR) / "e2e" / name).string();
  o.archs = {"sm_90"};
  o.cache_dir = (fs::path(AOTC_TEST_CACHE_DIR) / "kernels").string();  // Note [Shared test cache] (CMakeLists.txt)
  auto log = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
  compileModel(o, log);
  RunOptions r;
  r.input_files = {(kModels / (name + ".safetensors")).string(), (kModels / (name + ".inputs.safetensors")).string()};
  r.grad_outputs_file = (kModels / (name + ".inputs.safetensors")).string();
  auto want = readSafetensors((kModels / (name + ".expected.safetensors")).string());
  auto ref = runArtifact(o.out_dir, r);
  r.backend = "emulate";
  r.emulate_cache_dir = (fs::path(AOTC_TEST_CACHE_DIR) / "emulate").string();
  auto emu = runArtifact(o.out_dir, r);
  EXPECT_EQ(emu.size(), want.size());
  expectMatches(name + " (emulate vs reference)", emu, ref, 1e-4, 1e-4);
  expectMatches(name + " (emulate vs eager)", emu, want, 1e-4, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Real, Model64, ::testing::Values("resnet18_f64", "mobilenet_v2_f64"));

INSTANTIATE_TEST_SUITE_P(Real, Model,
                         ::testing::Combine(::testing::Values("resnet18", "mobilenet_v2", "transformer", "mlp_cross_entropy"),
                                            ::testing::ValuesIn(partitionerNames())),
                         [](const auto& info) {
                           std::string n = std::get<0>(info.param) + "_" + std::get<1>(info.param);
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace aotc
