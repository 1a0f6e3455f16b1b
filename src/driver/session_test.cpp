//===- session_test.cpp - The executor's session on the emulate device ----===//
//
// The deployment API's contract, on a compiled MLP: binding checks (Note
// [Binding checks]) refuse wrong names, dtypes, shapes, strides, offsets and
// misaligned pointers with one line each; parameters not bound come from the
// artifact's weights; grad outputs not bound are zero; results equal the
// reference runtime's.
//===----------------------------------------------------------------------===//
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <cmath>
#include <filesystem>

#include "aotc/codegen/manifest.h"
#include "aotc/driver/driver.h"
#include "aotc/frontend/fx.h"
#include "aotc/ir/safetensors.h"
#include "aotc/passes/passes.h"
#include "aotc/runtime/executor.h"
#include "aotc/runtime/reference_runtime.h"
#include "aotc/text/text.h"
#include "driver/test_compare.h"

namespace aotc {
namespace {

namespace fs = std::filesystem;

const fs::path kFx = fs::path(AOTC_SOURCE_DIR) / "testdata" / "fx";

class SessionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    CompileOptions o;
    o.model = (kFx / "mlp.json").string();
    o.out_dir = (fs::path(AOTC_BINARY_DIR) / "session_test" / "mlp").string();
    o.archs = {"sm_90"};
    fs::remove_all(o.out_dir);
    compileModel(o, std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>()));
    dir_ = o.out_dir;
  }
  void SetUp() override {
    dev_ = makeEmulateDevice(EmulateOptions{(fs::path(AOTC_BINARY_DIR) / "session_test" / "emu").string(), "c++", nullptr});
    s_ = std::make_unique<Session>(loadManifest(dir_), dir_, *dev_);
  }
  void TearDown() override {
    s_.reset();
    for (DevicePtr p : owned_) dev_->release(p);
  }
  DeviceTensor upload(const std::string& input, const HostTensor& v) {
    const plan::InputSpec* in = s_->manifest().input(input);
    return uploadTensor(*dev_, plan::Layout{in->layout.dtype, in->layout.shape, in->layout.strides, 0}, v, owned_);
  }
  /// Binds every user input from the fixture's inputs file.
  void bindUserInputs(const std::map<std::string, HostTensor>& inputs) {
    for (const plan::InputSpec& in : s_->manifest().inputs)
      if (in.role == "user_input") s_->bind(in.name, upload(in.name, inputs.at(in.name)));
  }
  std::string refusal(const std::string& name, const DeviceTensor& t) {
    try {
      s_->bind(name, t);
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  }

  static inline std::string dir_;
  std::unique_ptr<Device> dev_;
  std::unique_ptr<Session> s_;
  std::vector<DevicePtr> owned_;
};

TEST_F(SessionTest, RefusesBadBindings) {
  auto inputs = readSafetensors((kFx / "mlp.inputs.safetensors").string());
  DeviceTensor x = upload("x", inputs.at("x"));
  EXPECT_EQ(refusal("x", x), "");
  EXPECT_NE(refusal("nope", x).find("the artifact has no input of this name"), std::string::npos);
  DeviceTensor t = x;
  t.dtype = DType::F64;
  EXPECT_NE(refusal("x", t).find("dtype f64 does not match the artifact's f32"), std::string::npos) << refusal("x", t);
  t = x;
  t.shape = {t.shape[1], t.shape[0]};
  EXPECT_NE(refusal("x", t).find("does not match the artifact's"), std::string::npos);
  t = x;
  t.strides = {1, t.shape[0]};
  EXPECT_NE(refusal("x", t).find("strides [1,"), std::string::npos) << refusal("x", t);
  t = x;
  t.offset = 1;
  EXPECT_NE(refusal("x", t).find("element offset"), std::string::npos);
  t = x;
  t.data += 4;
  EXPECT_NE(refusal("x", t).find("not 16-byte aligned"), std::string::npos);
  try {
    s_->bindGradOutput(7, x);
    ADD_FAILURE() << "grad_output.7 was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no differentiable output has this index (the differentiable outputs: 0;"), std::string::npos) << e.what();
  }
}

TEST_F(SessionTest, MatchesTheReferenceWithWeightsFromTheArtifact) {
  auto inputs = readSafetensors((kFx / "mlp.inputs.safetensors").string());
  const plan::OutputSpec& out = s_->manifest().outputs.at(0);
  ASSERT_TRUE(out.tangent);
  HostTensor ones = HostTensor::zeros(out.dtype, out.shape);
  for (double& v : ones.data) v = 1.0;
  // The reference, with the parameters given explicitly.
  const std::string file = (fs::path(AOTC_BINARY_DIR) / "session_test" / "x_and_grad.safetensors").string();
  std::map<std::string, HostTensor> given{{"grad_output.0", ones}};
  for (const plan::InputSpec& in : s_->manifest().inputs)
    if (in.role == "user_input") given[in.name] = inputs.at(in.name);
  writeSafetensors(file, given);
  RunOptions ro;
  ro.input_files = {(kFx / "mlp.safetensors").string(), file};
  ro.grad_outputs_file = file;
  auto want = runArtifact(dir_, ro);
  // The session: the user inputs and the grad output bound; parameters from weights.safetensors.
  bindUserInputs(inputs);
  s_->forward();
  DeviceTensor g = uploadTensor(*dev_, plan::Layout{out.dtype, out.shape, TensorType::contiguousStrides(out.shape), 0}, ones, owned_);
  s_->bindGradOutput(0, g);
  s_->backward();
  std::map<std::string, HostTensor> got{{"output.0", readDeviceTensor(*dev_, s_->output(0))}};
  for (const plan::GradSpec& gs : s_->manifest().grads) got["grad." + gs.input] = readDeviceTensor(*dev_, s_->grad(gs.input));
  ASSERT_EQ(got.size(), want.size());
  for (auto& [name, w] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    bool nonzero = false;
    for (size_t i = 0; i < w.data.size(); ++i) {
      EXPECT_LE(elementError(got.at(name).data[i], w.data[i]), 1e-6) << name << "[" << i << "]";
      nonzero = nonzero || w.data[i] != 0;
    }
    EXPECT_TRUE(nonzero) << name << " is all zeros: the comparison would prove nothing";
  }
}

TEST_F(SessionTest, GradOutputsNotBoundAreZero) {
  bindUserInputs(readSafetensors((kFx / "mlp.inputs.safetensors").string()));
  s_->forward();
  s_->backward();
  for (const plan::GradSpec& g : s_->manifest().grads)
    for (double v : readDeviceTensor(*dev_, s_->grad(g.input)).data) EXPECT_EQ(v, 0.0) << g.input;
}

/// Note [Symbolic manifest]: one session over a dynamic-shape artifact runs
/// at the size of whatever it is bound to, rebinding the symbols (and
/// replanning its arenas) when a bound input's shape changes; each size's
/// results equal the reference runtime's at that size, and sizes outside the
/// range or the guards are refused at bind time in one line.
TEST(DynamicSession, RebindsTheSymbolsAtEachSize) {
  CompileOptions o;
  o.model = (fs::path(AOTC_SOURCE_DIR) / "testdata" / "symbolic" / "mlp_dynamic.json").string();
  o.out_dir = (fs::path(AOTC_BINARY_DIR) / "session_test" / "mlp_dynamic").string();
  o.archs = {"sm_90"};
  fs::remove_all(o.out_dir);
  compileModel(o, std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>()));
  auto dev = makeEmulateDevice(EmulateOptions{(fs::path(AOTC_BINARY_DIR) / "session_test" / "emu").string(), "c++", nullptr});
  std::vector<DevicePtr> owned;
  {
    Session s(loadManifest(o.out_dir), o.out_dir, *dev);
    ASSERT_TRUE(s.manifest().symbolic);
    for (int64_t batch : {6, 2, 10}) {
      HostTensor x = HostTensor::zeros(DType::F32, {batch, 2, 8});
      for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = std::sin(0.37 * static_cast<double>(i) + static_cast<double>(batch));
      const plan::Layout lx{DType::F32, x.sizes, TensorType::contiguousStrides(x.sizes), 0};
      s.bind("x", uploadTensor(*dev, lx, x, owned));
      EXPECT_EQ(s.manifest().binding.at("batch"), batch);
      s.forward();
      const plan::OutputSpec& out = s.manifest().outputs.at(0);
      HostTensor g = HostTensor::zeros(out.dtype, out.shape);
      for (double& v : g.data) v = 0.5;
      s.bindGradOutput(0, uploadTensor(*dev, plan::Layout{out.dtype, out.shape, TensorType::contiguousStrides(out.shape), 0}, g, owned));
      s.backward();
      const std::string file = (fs::path(AOTC_BINARY_DIR) / "session_test" / "dyn_in.safetensors").string();
      writeSafetensors(file, {{"x", x}, {"grad_output.0", g}});
      RunOptions ro;
      ro.input_files = {file};
      ro.grad_outputs_file = file;
      auto want = runArtifact(o.out_dir, ro);
      std::map<std::string, HostTensor> got{{"output.0", readDeviceTensor(*dev, s.output(0))}};
      for (const plan::GradSpec& gs : s.manifest().grads) got["grad." + gs.input] = readDeviceTensor(*dev, s.grad(gs.input));
      ASSERT_EQ(got.size(), want.size());
      for (auto& [name, w] : want) {
        ASSERT_TRUE(got.count(name)) << name;
        ASSERT_EQ(got.at(name).sizes, w.sizes) << name;
        for (size_t i = 0; i < w.data.size(); ++i)
          EXPECT_LE(elementError(got.at(name).data[i], w.data[i]), 1e-6) << name << "[" << i << "] at batch " << batch;
      }
    }
    auto refusal = [&](int64_t batch) {
      HostTensor x = HostTensor::zeros(DType::F32, {batch, 2, 8});
      try {
        s.bind("x", uploadTensor(*dev, plan::Layout{DType::F32, x.sizes, TensorType::contiguousStrides(x.sizes), 0}, x, owned));
      } catch (const UserError& e) {
        return std::string(e.what());
      }
      return std::string();
    };
    EXPECT_NE(refusal(5).find("dim 0 is 5 (batch), which breaks the guard batch % 2 == 0"), std::string::npos) << refusal(5);
    EXPECT_NE(refusal(2048).find("outside the range the artifact takes: [2, 1024]"), std::string::npos) << refusal(2048);
  }
  for (DevicePtr p : owned) dev->release(p);
}

/// Note [Probe degree]: the engine and the code generator probe at the
/// degrees the captured graph's sizes have (the attention: batch linear,
/// seq squared); probing at degrees too low for the program (seq linear)
/// falls back to full degree in each, with exactly the result of never
/// lowering them.
TEST(DynamicCompile, TooLowProbeDegreesFallBackToFullDegree) {
  const FxModel m = loadFxGraph((fs::path(AOTC_SOURCE_DIR) / "testdata" / "symbolic" / "attention_dynamic.json").string());
  PipelineOptions po;
  const PipelineResult want = runPipeline(m.graph, po);
  ASSERT_EQ(want.functional.symbols.size(), 2u);
  EXPECT_EQ(want.functional.symbols[0].name, "batch");
  EXPECT_EQ(want.functional.symbols[0].degree, 1);
  EXPECT_EQ(want.functional.symbols[1].degree, 2);  // seq: [batch*heads, seq, seq] scores
  EXPECT_EQ(want.probes.size(), 7u);                // 2 x 3 + 1, not 3 x 3 + 1
  po.probe_degree = 1;
  const PipelineResult low = runPipeline(m.graph, po);
  EXPECT_EQ(low.probes.size(), 10u);  // the retry at full degree
  for (auto [a, b] : {std::pair{&want.functional, &low.functional}, {&want.joint, &low.joint},
                      {&want.partition.forward, &low.partition.forward}, {&want.partition.backward, &low.partition.backward}})
    EXPECT_EQ(printGraph(*a), printGraph(*b));

  ManifestInfo info;
  info.model_name = "attention_dynamic";
  info.archs = {"sm_90"};
  const DynamicCodegen ref = generateDynamic(want, info, 8);
  PipelineResult lowered = want;
  lowered.probes.clear();
  for (SymbolDecl& s : lowered.functional.symbols) s.degree = 1;
  const DynamicCodegen again = generateDynamic(lowered, info, 8);
  EXPECT_EQ(again.manifest.dump(), ref.manifest.dump());
  ASSERT_EQ(again.cg.kernels.size(), ref.cg.kernels.size());
  for (auto& [name, k] : ref.cg.kernels) EXPECT_EQ(again.cg.kernels.at(name).source, k.source) << name;
}

}  // namespace
}  // namespace aotc
