//===- e2e_test.cpp - Every FX fixture through compile and run ------------===//
//
// For each testdata/fx/P.json: compile (every kernel through NVRTC for both
// default archs), validate the manifest against its schema, run forward and
// backward on the reference runtime, and compare every result with PyTorch
// eager's (P.expected.safetensors): outputs, gradients, mutated inputs after
// forward and after backward.  Also: the artifact is byte-identical when
// compiled twice.
//===----------------------------------------------------------------------===//
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "aotc/driver/driver.h"
#include "aotc/ir/safetensors.h"
#include "aotc/passes/passes.h"
#include "test_compare.h"

namespace aotc {
namespace {

namespace fs = std::filesystem;

const fs::path kFx = fs::path(AOTC_SOURCE_DIR) / "testdata" / "fx";
const fs::path kConformance = fs::path(AOTC_SOURCE_DIR) / "testdata" / "conformance";
const fs::path kExporter = fs::path(AOTC_SOURCE_DIR) / "testdata" / "exporter";
const fs::path kOps = fs::path(AOTC_SOURCE_DIR) / "testdata" / "ops";

Logger quietLogger() { return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>()); }

std::vector<std::string> fixtures(const fs::path& dir = kFx) {
  std::vector<std::string> v;
  for (auto& e : fs::directory_iterator(dir)) {
    std::string f = e.path().filename().string();
    const std::string suffix = ".expected.safetensors";
    if (f.size() > suffix.size() && f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0)
      v.push_back(f.substr(0, f.size() - suffix.size()));
  }
  std::sort(v.begin(), v.end());
  return v;
}

fs::path scratch(const std::string& name) {
  fs::path p = fs::path(AOTC_BINARY_DIR) / "e2e" / name;
  fs::remove_all(p);
  fs::create_directories(p.parent_path());
  return p;
}

std::string readAll(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

/// allclose with atol = rtol = tol.
void expectClose(const std::string& what, const HostTensor& got, const HostTensor& want, double tol) {
  ASSERT_EQ(dtypeName(got.dtype), std::string(dtypeName(want.dtype))) << what;
  ASSERT_EQ(got.sizes, want.sizes) << what;
  ASSERT_EQ(got.data.size(), want.data.size()) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.data.size(); ++i) {
    double e = elementError(got.data[i], want.data[i]);
    double err = std::isfinite(want.data[i]) ? e - tol * std::abs(want.data[i]) : e;
    if (err > worst) worst = err, at = i;
  }
  EXPECT_LE(worst, tol) << what << ": element " << at << " is " << got.data[at] << ", eager gives " << want.data[at];
}

// Note [Dtype tolerances]: float32 and float64 results must match eager to
// 1e-5 (atol = rtol).  Half-precision results are compared at about two
// units in the last place of their dtype near 1 (float16 2^-10, bfloat16
// 2^-7; PyTorch's own OpInfo tolerance for bfloat16 is rtol 1.6e-2): every
// value is rounded to its dtype as eager rounds it (Note [Half precision
// values] in codegen/cuda/kernels.cpp), but reductions and matrix products accumulate
// in another order and precision, and one ulp of difference in a saved value
// moves a gradient by an ulp or two more.  A wrong rule is off by far more.
double tolerance(DType d) {
  switch (d) {
    case DType::F16: return 2e-3;
    case DType::BF16: return 2e-2;
    case DType::F32: case DType::F64: return 1e-5;
    default: return 0;  // integers and bools are exact
  }
}

/// Compiles dir/name.json with `partitioner`, validates the manifest, runs it
/// and compares every result with eager's.
void compileRunCompare(const fs::path& dir, const std::string& name, const std::string& partitioner,
                       const std::vector<std::string>& archs) {
  const fs::path kFx = dir;
  CompileOptions o;
  o.model = (kFx / (name + ".json")).string();
  o.out_dir = scratch(name + "." + partitioner).string();
  o.partitioner = *parseOption<Partitioner>(partitioner);
  o.archs = archs;
  o.cache_dir = (fs::path(AOTC_TEST_CACHE_DIR) / "kernels").string();  // Note [Shared test cache] (CMakeLists.txt)
  CompileSummary s = compileModel(o, quietLogger());
  EXPECT_GT(s.kernels, 0u);

  // The manifest validates against schemas/manifest.schema.json.
  std::string cmd = "/usr/bin/python3 " + std::string(AOTC_SOURCE_DIR) + "/scripts/validate_json.py " +
                    AOTC_SOURCE_DIR + "/schemas/manifest.schema.json " + o.out_dir + "/manifest.json > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;

  RunOptions r;
  r.input_files = {(kFx / (name + ".safetensors")).string(), (kFx / (name + ".inputs.safetensors")).string()};
  r.grad_outputs_file = (kFx / (name + ".inputs.safetensors")).string();
  auto got = runArtifact(o.out_dir, r);
  auto want = readSafetensors((kFx / (name + ".expected.safetensors")).string());
  for (auto& [k, v] : want) {
    ASSERT_TRUE(got.count(k)) << "missing result " << k;
    expectClose(name + ": " + k, got[k], v, tolerance(v.dtype));
  }
  for (auto& [k, v] : got) EXPECT_TRUE(want.count(k)) << "result " << k << " has no eager reference";

  // The generated kernels and the manifest's steps, emulated on the CPU.
  r.backend = "emulate";
  r.emulate_cache_dir = (fs::path(AOTC_TEST_CACHE_DIR) / "emulate").string();
  auto emu = runArtifact(o.out_dir, r);
  for (auto& [k, v] : want) {
    ASSERT_TRUE(emu.count(k)) << "emulate: missing result " << k;
    expectClose(name + " (emulate): " + k, emu[k], v, tolerance(v.dtype));
  }
  EXPECT_EQ(emu.size(), want.size());
}

class FxFixture : public ::testing::TestWithParam<std::string> {};
TEST_P(FxFixture, CompileRunMatchesEager) { compileRunCompare(kFx, GetParam(), "default", {"sm_80", "sm_90"}); }
INSTANTIATE_TEST_SUITE_P(Fixtures, FxFixture, ::testing::ValuesIn(fixtures()),
                         [](const auto& info) { return info.param; });

/// Test names of (program, partitioner) parameters: `fw_buffer_add_min_cut`.
std::string programAndPartitioner(const ::testing::TestParamInfo<std::tuple<std::string, std::string>>& info) {
  std::string n = std::get<0>(info.param) + "_" + std::get<1>(info.param);
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

/// The mutation-semantics conformance suite, under every partitioner.
class Conformance : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};
TEST_P(Conformance, MatchesEager) {
  compileRunCompare(kConformance, std::get<0>(GetParam()), std::get<1>(GetParam()), {"sm_90"});
}
INSTANTIATE_TEST_SUITE_P(Scenarios, Conformance,
                         ::testing::Combine(::testing::ValuesIn(fixtures(kConformance)), ::testing::ValuesIn(partitionerNames())),
                         programAndPartitioner);

/// Programs as users write them (testdata/exporter/gen.py): mutated inputs
/// that require grad, state reached by identity, nested arguments and
/// outputs; under every partitioner, on both backends.
class Exporter : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};
TEST_P(Exporter, MatchesEager) { compileRunCompare(kExporter, std::get<0>(GetParam()), std::get<1>(GetParam()), {"sm_90"}); }
INSTANTIATE_TEST_SUITE_P(Programs, Exporter,
                         ::testing::Combine(::testing::ValuesIn(fixtures(kExporter)), ::testing::ValuesIn(partitionerNames())),
                         programAndPartitioner);

// Op conformance (issue 12): each op spelling's samples, exported from
// PyTorch with their eager outputs and gradients, through compile and run on
// the reference and emulate backends.
class OpConformance : public ::testing::TestWithParam<std::string> {};
TEST_P(OpConformance, MatchesEager) { compileRunCompare(kOps, GetParam(), "min-cut", {"sm_90"}); }
INSTANTIATE_TEST_SUITE_P(Ops, OpConformance, ::testing::ValuesIn(fixtures(kOps)),
                         [](const auto& info) { return info.param; });
TEST(E2E, OpSuiteIsThere) { EXPECT_GE(fixtures(kOps).size(), 40u); }

TEST(E2E, ExporterSuiteCoversEveryForm) {
  auto f = fixtures(kExporter);
  auto count = [&](const std::string& prefix) {
    return std::count_if(f.begin(), f.end(), [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
  };
  EXPECT_GE(count("mut_"), 15);
  EXPECT_GE(count("state_"), 5);
  EXPECT_GE(count("args_"), 3);
}

TEST(E2E, ConformanceSuiteIsLargeEnough) { EXPECT_GE(fixtures(kConformance).size(), 30u); }

TEST(E2E, FixturesAreThere) { EXPECT_GE(fixtures().size(), 6u); }

TEST(E2E, ForwardOnlySkipsBackward) {
  CompileOptions o;
  o.model = (kFx / "buffer_mutation.json").string();
  o.out_dir = scratch("fwd_only").string();
  compileModel(o, quietLogger());
  RunOptions r;
  r.input_files = {(kFx / "buffer_mutation.safetensors").string(), (kFx / "buffer_mutation.inputs.safetensors").string()};
  r.forward_only = true;
  auto got = runArtifact(o.out_dir, r);
  EXPECT_TRUE(got.count("output.0"));
  EXPECT_TRUE(got.count("after_forward.running"));
  EXPECT_FALSE(got.count("after_backward.running"));
  EXPECT_FALSE(got.count("grad.lin.weight"));
}

TEST(E2E, ArtifactsAreByteIdenticalForAnyJobs) {
  std::map<std::string, std::string> first;
  for (int round = 0; round < 3; ++round) {
    CompileOptions o;
    o.model = (kConformance / "batchnorm2d_train.json").string();
    o.out_dir = scratch("determinism").string();
    o.jobs = round == 0 ? 1 : 2;
    compileModel(o, quietLogger());
    std::map<std::string, std::string> files;
    for (auto& e : fs::recursive_directory_iterator(o.out_dir))
      if (e.is_regular_file()) files[fs::relative(e.path(), o.out_dir).string()] = readAll(e.path());
    if (round == 0) first = files;
    else EXPECT_EQ(files, first);
  }
  EXPECT_GT(first.size(), 5u);
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

/// Dropout in training (Note [Random numbers]): a seeded Philox stream, the
/// same on every backend; the distribution and the gradient are PyTorch's.
TEST(Random, DropoutIsSeededAndBackendsAgree) {
  const fs::path dir = fs::path(AOTC_SOURCE_DIR) / "testdata" / "random";
  CompileOptions o;
  o.model = (dir / "dropout.json").string();
  o.out_dir = scratch("dropout").string();
  compileModel(o, quietLogger());
  RunOptions r;
  r.input_files = {(dir / "dropout.inputs.safetensors").string()};
  r.grad_outputs_file = r.input_files[0];
  auto ref = runArtifact(o.out_dir, r);
  const HostTensor& y = ref.at("output.0");
  // y = dropout(dropout(x, 0.3) * 2, 0.5) with x = ones: 0 or 2 / (0.7 * 0.5).
  size_t zeros = 0;
  for (double v : y.data) {
    if (v == 0) ++zeros;
    else EXPECT_NEAR(v, 2.0 / 0.35, 1e-5);
  }
  double frac = static_cast<double>(zeros) / static_cast<double>(y.data.size());
  EXPECT_NEAR(frac, 0.65, 0.03) << "4096 draws: 4 standard deviations";
  EXPECT_EQ(ref.at("grad.x").data, y.data) << "with unit grad_output, d y / d x is the scaled mask";
  r.backend = "emulate";
  r.emulate_cache_dir = (fs::path(AOTC_TEST_CACHE_DIR) / "emulate").string();
  auto emu = runArtifact(o.out_dir, r);
  EXPECT_EQ(emu.at("output.0").data, y.data) << "emulate draws the same numbers as the reference";
  // Another seed, another mask.
  std::map<std::string, HostTensor> in = readSafetensors(r.input_files[0]);
  in["rng_seed"].data[0] = 8;
  std::string other = (fs::path(o.out_dir).parent_path() / "dropout_seed8.safetensors").string();
  writeSafetensors(other, in);
  r.backend = "reference";
  r.input_files = {other};
  r.grad_outputs_file = other;
  EXPECT_NE(runArtifact(o.out_dir, r).at("output.0").data, y.data);
}

TEST(Random, RandRandnRandpermAreSeededAndDistributed) {
  // noise(x) = rand(64,64), 2 randn(64,64) + 1, x + randn_like(x), rand_like(x, f64), randperm(100).
  const fs::path dir = fs::path(AOTC_SOURCE_DIR) / "testdata" / "random";
  CompileOptions o;
  o.model = (dir / "noise.json").string();
  o.out_dir = scratch("noise").string();
  compileModel(o, quietLogger());
  RunOptions r;
  r.input_files = {(dir / "noise.inputs.safetensors").string()};
  r.forward_only = true;
  auto ref = runArtifact(o.out_dir, r);
  auto moments = [](const HostTensor& t) {
    double m = 0, v = 0;
    for (double x : t.data) m += x;
    m /= static_cast<double>(t.data.size());
    for (double x : t.data) v += (x - m) * (x - m);
    return std::pair{m, std::sqrt(v / static_cast<double>(t.data.size() - 1))};
  };
  // 4096 draws each: bounds at about 4 standard errors.
  auto [um, us] = moments(ref.at("output.0"));
  EXPECT_NEAR(um, 0.5, 0.02);
  EXPECT_NEAR(us, std::sqrt(1.0 / 12), 0.01);
  for (double x : ref.at("output.0").data) EXPECT_TRUE(x >= 0 && x < 1);
  auto [nm, ns] = moments(ref.at("output.1"));
  EXPECT_NEAR(nm, 1.0, 0.13);
  EXPECT_NEAR(ns, 2.0, 0.1);
  auto [lm, ls] = moments(ref.at("output.2"));
  EXPECT_NEAR(lm, 0.0, 0.065);
  EXPECT_NEAR(ls, 1.0, 0.05);
  EXPECT_EQ(ref.at("output.3").dtype, DType::F64);
  std::vector<double> perm = ref.at("output.4").data;
  std::sort(perm.begin(), perm.end());
  for (size_t i = 0; i < perm.size(); ++i) EXPECT_EQ(perm[i], static_cast<double>(i)) << "randperm is a permutation";
  EXPECT_NE(ref.at("output.4").data, perm) << "and not the identity";
  // Every draw is its own stream: rand and randn_like do not repeat each other.
  EXPECT_NE(ref.at("output.0").data[0], ref.at("output.3").data[0]);
  r.backend = "emulate";
  r.emulate_cache_dir = (fs::path(AOTC_TEST_CACHE_DIR) / "emulate").string();
  auto emu = runArtifact(o.out_dir, r);
  for (int i : {0, 3, 4}) EXPECT_EQ(emu.at("output." + std::to_string(i)).data, ref.at("output." + std::to_string(i)).data) << i;
  for (int i : {1, 2}) expectClose("emulate randn", emu.at("output." + std::to_string(i)), ref.at("output." + std::to_string(i)), 1e-5);
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

/// Note [Kernel cache]: a second compile hits for every module and arch, and
/// the artifact is the same bytes as one compiled without the cache.
TEST(KernelCache, WarmCompileHitsAndChangesNoByte) {
  fs::path cache = scratch("kernel-cache");
  CompileOptions o;
  o.model = (kConformance / "batchnorm2d_train.json").string();
  o.out_dir = scratch("cache-cold").string();
  CompileSummary cold = compileModel(o, quietLogger());
  EXPECT_EQ(cold.cache_hits, 0u) << "no cache directory: every module is compiled";
  o.cache_dir = cache.string();
  o.out_dir = scratch("cache-a").string();
  CompileSummary first = compileModel(o, quietLogger());
  EXPECT_EQ(first.cache_hits, 0u);
  EXPECT_GT(first.cache_misses, 0u);
  o.out_dir = scratch("cache-b").string();
  CompileSummary second = compileModel(o, quietLogger());
  EXPECT_EQ(second.module_misses, 0u);
  EXPECT_EQ(second.module_hits, first.module_misses);
  EXPECT_EQ(second.cache_misses + second.cache_hits, 0u) << "whole modules hit: no kernel is looked up";
  for (const char* dir : {"cache-a", "cache-b"})
    for (auto& e : fs::recursive_directory_iterator(fs::path(AOTC_BINARY_DIR) / "e2e" / "cache-cold"))
      if (e.is_regular_file()) {
        fs::path rel = fs::relative(e.path(), fs::path(AOTC_BINARY_DIR) / "e2e" / "cache-cold");
        EXPECT_EQ(readAll(e.path()), readAll(fs::path(AOTC_BINARY_DIR) / "e2e" / dir / rel)) << dir << "/" << rel;
      }
}

/// Note [Kernel cache]: the cache is per kernel, so programs that emit some
/// of the same kernels share them; and a module assembled from cached and
/// fresh kernels is the same bytes as one compiled with no cache at all.
TEST(KernelCache, KernelsAreSharedAcrossModels) {
  fs::path cache = scratch("kernel-cache-zoo");
  CompileOptions o;
  o.archs = {"sm_90"};
  o.cache_dir = cache.string();
  for (const char* other : {"batchnorm2d_train", "batchnorm_eval"}) {
    o.model = (kConformance / (std::string(other) + ".json")).string();
    o.out_dir = scratch(std::string("zoo-") + other).string();
    compileModel(o, quietLogger());
  }
  o.model = (kConformance / "batchnorm_train.json").string();
  o.out_dir = scratch("zoo-warm").string();
  CompileSummary warm = compileModel(o, quietLogger());
  EXPECT_GT(warm.cache_hits, 0u) << "batchnorm_train shares kernels with the two programs before it";
  EXPECT_GT(warm.cache_misses, 0u);
  EXPECT_GT(warm.module_misses, 0u) << "its modules are new";
  o.cache_dir.clear();
  o.out_dir = scratch("zoo-cold").string();
  compileModel(o, quietLogger());
  size_t files = 0;
  for (auto& e : fs::recursive_directory_iterator(fs::path(AOTC_BINARY_DIR) / "e2e" / "zoo-cold"))
    if (e.is_regular_file()) {
      ++files;
      fs::path rel = fs::relative(e.path(), fs::path(AOTC_BINARY_DIR) / "e2e" / "zoo-cold");
      EXPECT_EQ(readAll(e.path()), readAll(fs::path(AOTC_BINARY_DIR) / "e2e" / "zoo-warm" / rel)) << rel;
    }
  EXPECT_GT(files, 3u);
}

}  // namespace
}  // namespace aotc
