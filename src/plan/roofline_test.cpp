//===- roofline_test.cpp - Bytes, FLOPs and bounds counted by hand ---------===//
#include "aotc/plan/roofline.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "aotc/support/diag.h"

namespace aotc::plan {
namespace {

// A training step of y = relu(conv(x, w)) @ v + b, counted by hand:
//   forward:  conv 2x8x10x10 (*) 16x8x3x3, pad 1 -> 2x16x10x10 (bf16);
//             a relu launch whose work record says 20,000 bytes (its bias
//             counted as broadcast) over buffers spanning 12,864;
//             a launch whose work record (40 bytes) is below its buffers' spans;
//             a GEMM m=32 n=4 k=100, beta 0, with a bias of 32 (float32);
//   backward: the filter gradient (a=dy 2x16x10x10, b=x, out=dw 16x8x3x3, beta 1),
//             a depthwise data gradient (groups 16, filter 16x1x3x3),
//             a batched GEMM of 3 (m=4 n=5 k=6, float32) and a launch
//             with no work record over two buffers (a 6x7 float32 view at
//             offset 2 of a 50-element buffer, and a 10-element double).
Manifest handCounted() {
  Manifest m;
  m.archs = {"sm_80", "sm_90"};
  m.precision = "tf32";
  Conv fwd;
  fwd.call = ConvCall::Forward;
  fwd.node = "conv";
  fwd.groups = 1;
  fwd.dtype = DType::BF16;
  fwd.a.dims = {2, 8, 10, 10};
  fwd.b.dims = {16, 8, 3, 3};
  fwd.out.dims = {2, 16, 10, 10};
  fwd.out.buffer = "cy";
  Launch relu;
  relu.kernel = "k_relu";
  relu.work = LaunchWork{20000, 10, 4, 1, 1};  // counts the broadcast bias at 3200 elements
  relu.args = {"ry", "cy", "bias"};
  Launch slice;  // writes 10 elements of a 3200-element buffer: its work record is the smaller bound
  slice.kernel = "k_slice";
  slice.work = LaunchWork{40, 1, 10, 1, 1};
  slice.args = {"ry", "bias"};
  Gemm g;
  g.call = GemmCall::LtMatmulBias;
  g.node = "mm";
  g.m = 32, g.n = 4, g.k = 100;
  g.bias = MatrixOperand{"b", 0, 1, 0};
  m.forward.buffers = {Buffer{"cy", BufferKind::Alloc, Layout{DType::BF16, {2, 16, 10, 10}, {1600, 100, 10, 1}, 0}, "", "", 6400, 0},
                       Buffer{"ry", BufferKind::Alloc, Layout{DType::BF16, {2, 16, 10, 10}, {1600, 100, 10, 1}, 0}, "", "", 6400, 6400},
                       Buffer{"bias", BufferKind::Input, Layout{DType::F32, {16}, {1}, 0}, "parameter", "", 0, -1}};
  m.forward.steps = {fwd, relu, g, slice};
  Conv dw = fwd;
  dw.call = ConvCall::BackwardFilter;
  dw.beta = 1;
  dw.a.dims = {2, 16, 10, 10};
  dw.b.dims = {2, 8, 10, 10};
  dw.out.dims = {16, 8, 3, 3};
  Conv dx;
  dx.call = ConvCall::BackwardData;
  dx.node = "dwconv";
  dx.groups = 16;
  dx.dtype = DType::F16;
  dx.a.dims = {2, 16, 10, 10};
  dx.b.dims = {16, 1, 3, 3};
  dx.out.dims = {2, 16, 10, 10};
  Gemm bg;
  bg.call = GemmCall::GemmStridedBatchedEx;
  bg.node = "bmm";
  bg.m = 4, bg.n = 5, bg.k = 6, bg.batch = 3;
  Launch plain;
  plain.kernel = "k_plain";
  plain.args = {"v", "d", "v"};
  m.backward.buffers = {Buffer{"base", BufferKind::Alloc, Layout{DType::F32, {50}, {1}, 0}, "", "", 200, 0},
                        Buffer{"v", BufferKind::View, Layout{DType::F32, {6, 7}, {7, 1}, 2}, "", "base", 0, -1},
                        Buffer{"d", BufferKind::Alloc, Layout{DType::F64, {10}, {1}, 0}, "", "", 80, 256}};
  m.backward.steps = {dw, dx, bg, plain};
  return m;
}

GpuSpec unitGpu() { return GpuSpec{"unit", 1e9, {{"fp32", 1e9}, {"tf32", 2e9}, {"bf16", 4e9}, {"fp16", 8e9}, {"fp64", 5e8}}, "test"}; }

TEST(Roofline, CountsBytesAndFlopsByHand) {
  const Roofline r = roofline(handCounted(), unitGpu());
  ASSERT_EQ(r.forward.steps.size(), 4u);
  ASSERT_EQ(r.backward.steps.size(), 4u);
  const StepCost& conv = r.forward.steps[0];
  // x 1600 + w 1152 + y 3200 elements, 2 bytes each; 2 * 3200 * (8*3*3) FLOPs.
  EXPECT_EQ(conv.bytes, (1600 + 1152 + 3200) * 2);
  EXPECT_DOUBLE_EQ(conv.flops, 2.0 * 3200 * 72);
  EXPECT_EQ(conv.math, "bf16");
  EXPECT_DOUBLE_EQ(conv.bound_s, std::max(11904 / 1e9, 460800 / 4e9));
  EXPECT_EQ(conv.call, "cudnnConvolutionForward");
  EXPECT_EQ(r.forward.steps[1].bytes, 6400 + 6400 + 64);
  EXPECT_EQ(r.forward.steps[1].math, "memory");
  EXPECT_DOUBLE_EQ(r.forward.steps[1].bound_s, 12864 / 1e9);
  EXPECT_EQ(r.forward.steps[3].bytes, 40);
  const StepCost& gemm = r.forward.steps[2];
  // A 32x100, B 100x4, C 32x4 (beta 0: written only), bias 32; float32 in tf32 precision.
  EXPECT_EQ(gemm.bytes, (3200 + 400 + 128 + 32) * 4);
  EXPECT_DOUBLE_EQ(gemm.flops, 2.0 * 32 * 4 * 100);
  EXPECT_EQ(gemm.math, "tf32");
  EXPECT_EQ(gemm.call, "cublasLtMatmul");
  // The filter gradient: dy 3200 + x 1600 + dw 1152 read and written (beta 1); FLOPs as the forward's.
  const StepCost& fg = r.backward.steps[0];
  EXPECT_EQ(fg.bytes, (3200 + 1600 + 2 * 1152) * 2);
  EXPECT_DOUBLE_EQ(fg.flops, 2.0 * 3200 * 72);
  EXPECT_EQ(fg.call, "cudnnConvolutionBackwardFilter");
  // Depthwise data gradient: 2 * |dy| * (1 * 3 * 3).
  const StepCost& dx = r.backward.steps[1];
  EXPECT_EQ(dx.bytes, (3200 + 144 + 3200) * 2);
  EXPECT_DOUBLE_EQ(dx.flops, 2.0 * 3200 * 9);
  EXPECT_EQ(dx.math, "fp16");
  const StepCost& bmm = r.backward.steps[2];
  EXPECT_EQ(bmm.bytes, (24 + 30 + 20) * 3 * 4);
  EXPECT_DOUBLE_EQ(bmm.flops, 2.0 * 4 * 5 * 6 * 3);
  // No work record: the view's span (offset 2 + 42 elements) and the double buffer, each once.
  EXPECT_EQ(r.backward.steps[3].bytes, 44 * 4 + 10 * 8);
  EXPECT_EQ(r.step.launches, 3);
  EXPECT_EQ(r.step.library_calls, 5);
  int64_t bytes = 0;
  double bound = 0;
  for (const ProgramCost* p : {&r.forward, &r.backward})
    for (const StepCost& c : p->steps) bytes += c.bytes, bound += c.bound_s;
  EXPECT_EQ(r.step.bytes, bytes);
  EXPECT_DOUBLE_EQ(r.step.bound_s, bound);
  const nlohmann::ordered_json j = toJson(r, 3);
  ASSERT_EQ(j["largest"].size(), 3u);
  EXPECT_GE(j["largest"][0]["bound_s"].get<double>(), j["largest"][1]["bound_s"].get<double>());
  EXPECT_EQ(j["programs"]["backward"]["steps"].size(), 4u);
  EXPECT_EQ(j["step"]["library_calls"], 5);
}

TEST(Roofline, EstimatesConvolutionFusions) {
  // cy (the convolution's 6,400-byte result) has one reader, the relu that
  // writes ry beside a small bias: an epilogue fusion saves its write and read.
  Manifest m = handCounted();
  Roofline r = roofline(m, unitGpu());
  ASSERT_EQ(r.fusions.size(), 1u);
  EXPECT_EQ(r.fusions[0].kind, "epilogue");
  EXPECT_EQ(r.fusions[0].bytes_saved, 2 * 6400);
  EXPECT_EQ(r.fusions[0].launch, 1u);
  // A statistics launch reading cy alone: GenStats saves its read; cy now has
  // two readers, so no epilogue fusion.
  m.forward.buffers.push_back(Buffer{"stats", BufferKind::Alloc, Layout{DType::F32, {16}, {1}, 0}, "", "", 64, 12800});
  Launch stats;
  stats.kernel = "k_stats";
  stats.args = {"stats", "cy"};
  m.forward.steps.insert(m.forward.steps.begin() + 1, stats);
  r = roofline(m, unitGpu());
  ASSERT_EQ(r.fusions.size(), 1u);
  EXPECT_EQ(r.fusions[0].kind, "genstats");
  EXPECT_EQ(r.fusions[0].bytes_saved, 6400);
  EXPECT_EQ(r.fusions[0].launch, 1u);
  // Kept for the backward (a program output): no epilogue fusion either way.
  m = handCounted();
  m.forward.outputs = {ProgramOutput{"saved", "cy"}};
  EXPECT_TRUE(roofline(m, unitGpu()).fusions.empty());
  EXPECT_EQ(toJson(roofline(handCounted(), unitGpu()))["fusion_estimates"][0]["bytes_saved"], 12800);
}

TEST(Roofline, GpusByArchNameAndFile) {
  EXPECT_EQ(defaultGpu({"sm_80", "sm_90"})->name, "H100 SXM");
  EXPECT_EQ(defaultGpu({"compute_80"})->name, "A100 80GB");
  EXPECT_FALSE(defaultGpu({"sm_75"}).has_value());
  EXPECT_EQ(gpuByNameOrFile("rtx-4090").name, "RTX 4090");
  EXPECT_DOUBLE_EQ(gpuByNameOrFile("H200").bandwidth, 4.8e12);
  EXPECT_EQ(knownGpus().size(), 8u);
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/gpu_good.json", bad = dir + "/gpu_bad.json";
  std::ofstream(good) << R"({"name": "mine", "bandwidth_Bps": 1e12, "peak_flops": {"fp32": 1e13, "tf32": 2e13, "bf16": 4e13, "fp16": 4e13, "fp64": 1e12}})";
  std::ofstream(bad) << R"({"name": "mine", "bandwidth_Bps": 1e12, "peak_flops": {"fp32": 1e13, "int8": 5}})";
  EXPECT_DOUBLE_EQ(gpuByNameOrFile(good).peak.at("bf16"), 4e13);
  try {
    gpuByNameOrFile(bad);
    FAIL() << "a bad GPU file was taken";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("peak_flops.int8"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gpuByNameOrFile("v100"), UserError);
}

}  // namespace
}  // namespace aotc::plan
