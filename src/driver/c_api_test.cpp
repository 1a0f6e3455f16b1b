//===- c_api_test.cpp - The C ABI under misuse (Note [C ABI misuse]) ------===//
//
// Every function of aotc/runtime/c_api.h, called as a new user might on the
// emulate device through the shipped library (libaotc_runtime.so): out of
// order, with NULL arguments and handles, unknown names and indices, pointers
// the runtime did not allocate, tensors past the end of their allocation and
// a dynamic size outside its range.  Each misuse returns non-zero with one
// line naming the function, and leaves the runtime able to run: after all of
// them the results are the bytes of a clean run.
//===----------------------------------------------------------------------===//
#include "aotc/runtime/c_api.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "aotc/driver/driver.h"

namespace {

namespace fs = std::filesystem;

std::string compileOnce(const std::string& model, const std::string& name) {
  aotc::CompileOptions o;
  o.model = (fs::path(AOTC_SOURCE_DIR) / "testdata" / model).string();
  o.out_dir = (fs::path(AOTC_BINARY_DIR) / "c_api_test" / name).string();
  o.archs = {"sm_90"};
  fs::remove_all(o.out_dir);
  aotc::compileModel(o, std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>()));
  return o.out_dir;
}

/// The testdata/fx/mlp artifact (inputs x [4, 8] and target [4, 4], f32; the
/// parameters from its weights), opened on the emulate device per test.
class CApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { dir_ = compileOnce("fx/mlp.json", "mlp"); }
  void SetUp() override {
    char err[512] = "";
    ASSERT_EQ(aotc_open(dir_.c_str(), "emulate", &rt_, err, sizeof err), 0) << err;
  }
  void TearDown() override { aotc_close(rt_); }

  /// A zeroed allocation of `n` floats holding f(i).
  void* floats(size_t n, double scale) {
    void* p = nullptr;
    EXPECT_EQ(aotc_alloc(rt_, n * sizeof(float), &p), 0) << aotc_error(rt_);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(scale * static_cast<double>(i + 1)));
    EXPECT_EQ(aotc_copy_to_device(rt_, p, v.data(), n * sizeof(float)), 0) << aotc_error(rt_);
    return p;
  }
  /// Binds x and target to fresh allocations (kept in x_, target_).
  void bindInputs() {
    x_ = floats(32, 0.7);
    target_ = floats(16, 1.3);
    ASSERT_EQ(aotc_bind(rt_, "x", tensor(x_, xShape_)), 0) << aotc_error(rt_);
    ASSERT_EQ(aotc_bind(rt_, "target", tensor(target_, tShape_)), 0) << aotc_error(rt_);
  }
  const aotc_tensor* tensor(void* p, const int64_t* shape, aotc_dtype dt = AOTC_F32, int32_t ndim = 2) {
    t_ = aotc_tensor{p, dt, ndim, shape, nullptr};
    return &t_;
  }
  /// The call returned non-zero with one line that names `fn` and holds `what`.
  void refused(int rc, const char* fn, const std::string& what) {
    EXPECT_NE(rc, 0) << fn << " accepted: expected '" << what << "'";
    std::string e = aotc_error(rt_);
    EXPECT_EQ(e.rfind(std::string(fn) + ": ", 0), 0u) << e;
    EXPECT_NE(e.find(what), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_EQ(e.find("internal error"), std::string::npos) << e;
  }
  /// The bytes of output 0 (the forward must have run).
  std::vector<unsigned char> output0() {
    aotc_tensor_view v;
    EXPECT_EQ(aotc_output(rt_, 0, &v), 0) << aotc_error(rt_);
    int64_t n = 1;
    for (int32_t d = 0; d < v.ndim; ++d) n *= v.shape[d];
    std::vector<unsigned char> b(static_cast<size_t>(n) * 4);
    EXPECT_EQ(aotc_copy_to_host(rt_, b.data(), static_cast<char*>(v.data) + v.offset * 4, b.size()), 0) << aotc_error(rt_);
    return b;
  }

  static inline std::string dir_;
  aotc_runtime* rt_ = nullptr;
  aotc_tensor t_{};
  void* x_ = nullptr;
  void* target_ = nullptr;
  const int64_t xShape_[2] = {4, 8};
  const int64_t tShape_[2] = {4, 4};
};

TEST_F(CApi, Open) {
  char err[256] = "";
  aotc_runtime* rt = reinterpret_cast<aotc_runtime*>(this);
  EXPECT_EQ(aotc_open(nullptr, "emulate", &rt, err, sizeof err), 2);
  EXPECT_STREQ(err, "aotc_open: null argument");
  EXPECT_EQ(aotc_open(dir_.c_str(), "emulate", nullptr, err, sizeof err), 2);
  EXPECT_EQ(aotc_open(dir_.c_str(), "emulate", nullptr, nullptr, 0), 2);  // no room for the message: still no crash
  EXPECT_NE(aotc_open(dir_.c_str(), "tpu", &rt, err, sizeof err), 0);
  EXPECT_EQ(rt, nullptr);
  EXPECT_NE(std::string(err).find("unknown device 'tpu'"), std::string::npos) << err;
  EXPECT_NE(aotc_open("/nonexistent/artifact", "emulate", &rt, err, sizeof err), 0);
  EXPECT_EQ(rt, nullptr);
  EXPECT_NE(std::string(err).find("/nonexistent/artifact"), std::string::npos) << err;
  EXPECT_EQ(std::string(err).find('\n'), std::string::npos) << err;
  char tiny[8];
  EXPECT_NE(aotc_open("/nonexistent/artifact", "emulate", &rt, tiny, sizeof tiny), 0);
  EXPECT_EQ(std::strlen(tiny), sizeof tiny - 1);  // truncated, terminated
}

TEST_F(CApi, CloseAndNullHandles) {
  aotc_close(nullptr);  // does nothing
  EXPECT_NE(std::string(aotc_error(nullptr)).find("null runtime handle"), std::string::npos);
  EXPECT_STREQ(aotc_device_name(nullptr), "");
  EXPECT_EQ(aotc_num_inputs(nullptr), 0u);
  EXPECT_EQ(aotc_input_name(nullptr, 0), nullptr);
  EXPECT_EQ(aotc_num_outputs(nullptr), 0u);
  EXPECT_EQ(aotc_loss_scaling(nullptr), 0);
  aotc_tensor_view v;
  void* p = nullptr;
  float f = 0;
  EXPECT_EQ(aotc_bind(nullptr, "x", nullptr), 2);
  EXPECT_EQ(aotc_bind_grad_output(nullptr, 0, nullptr), 2);
  EXPECT_EQ(aotc_forward(nullptr), 2);
  EXPECT_EQ(aotc_backward(nullptr), 2);
  EXPECT_EQ(aotc_set_stream(nullptr, nullptr), 2);
  EXPECT_EQ(aotc_synchronize(nullptr), 2);
  EXPECT_EQ(aotc_set_graphs(nullptr, 0), 2);
  EXPECT_EQ(aotc_output(nullptr, 0, &v), 2);
  EXPECT_EQ(aotc_grad(nullptr, "x", &v), 2);
  EXPECT_EQ(aotc_input(nullptr, "x", &v), 2);
  EXPECT_EQ(aotc_loss_scale(nullptr, &f, nullptr), 2);
  EXPECT_EQ(aotc_alloc(nullptr, 4, &p), 2);
  EXPECT_EQ(aotc_free(nullptr, p), 2);
  EXPECT_EQ(aotc_copy_to_device(nullptr, p, &f, 4), 2);
  EXPECT_EQ(aotc_copy_to_host(nullptr, &f, p, 4), 2);
  // A runtime closed with memory still allocated and bound frees it (ASan's
  // leak check in the sanitized build).
  aotc_runtime* rt = nullptr;
  char err[256] = "";
  ASSERT_EQ(aotc_open(dir_.c_str(), "emulate", &rt, err, sizeof err), 0) << err;
  ASSERT_EQ(aotc_alloc(rt, 128, &p), 0);
  ASSERT_EQ(aotc_bind(rt, "x", tensor(p, xShape_)), 0) << aotc_error(rt);
  aotc_close(rt);
}

TEST_F(CApi, Introspection) {
  EXPECT_STREQ(aotc_device_name(rt_), "emulate");
  ASSERT_EQ(aotc_num_inputs(rt_), 6u);
  EXPECT_STREQ(aotc_input_name(rt_, 4), "x");
  EXPECT_EQ(aotc_input_name(rt_, 6), nullptr);
  EXPECT_EQ(aotc_input_name(rt_, static_cast<size_t>(-1)), nullptr);
  EXPECT_GE(aotc_num_outputs(rt_), 1u);
  EXPECT_EQ(aotc_loss_scaling(rt_), 0);
}

TEST_F(CApi, Bind) {
  void* x = floats(32, 0.7);
  refused(aotc_bind(rt_, nullptr, tensor(x, xShape_)), "aotc_bind", "null input name");
  refused(aotc_bind(rt_, "x", nullptr), "aotc_bind", "null tensor");
  refused(aotc_bind(rt_, "nope", tensor(x, xShape_)), "aotc_bind", "the artifact has no input of this name");
  refused(aotc_bind(rt_, "x", tensor(x, xShape_, static_cast<aotc_dtype>(13))), "aotc_bind", "unknown aotc_dtype 13");
  aotc_tensor bad{x, AOTC_F32, 2, xShape_, nullptr};
  const int code = 99;  // as a C caller may store it (no C++ enum holds 99)
  std::memcpy(&bad.dtype, &code, sizeof code);
  refused(aotc_bind(rt_, "x", &bad), "aotc_bind", "unknown aotc_dtype 99");
  refused(aotc_bind(rt_, "x", tensor(x, xShape_, AOTC_F32, -1)), "aotc_bind", "bad ndim or shape");
  refused(aotc_bind(rt_, "x", tensor(x, xShape_, AOTC_F32, AOTC_MAX_DIMS + 1)), "aotc_bind", "bad ndim or shape");
  refused(aotc_bind(rt_, "x", tensor(x, nullptr)), "aotc_bind", "bad ndim or shape");
  refused(aotc_bind(rt_, "x", tensor(x, tShape_)), "aotc_bind", "shape [4,4] does not match");
  refused(aotc_bind(rt_, "x", tensor(x, xShape_, AOTC_F64)), "aotc_bind", "dtype f64 does not match");
  refused(aotc_bind(rt_, "x", tensor(nullptr, xShape_)), "aotc_bind", "null data pointer");
  void* x2 = floats(64, 0.7);
  refused(aotc_bind(rt_, "x", tensor(static_cast<char*>(x2) + 4, xShape_)), "aotc_bind", "aligned");
  // 32 floats fit; an allocation of 31 does not.
  void* small = nullptr;
  ASSERT_EQ(aotc_alloc(rt_, 31 * sizeof(float), &small), 0);
  refused(aotc_bind(rt_, "x", tensor(small, xShape_)), "aotc_bind", "past the end of its aotc_alloc allocation");
  const int64_t huge[2] = {int64_t{1} << 62, 8};
  refused(aotc_bind(rt_, "x", tensor(x, huge)), "aotc_bind", "more elements than int64 holds");
  EXPECT_EQ(aotc_bind(rt_, "x", tensor(x, xShape_)), 0) << aotc_error(rt_);
  EXPECT_STREQ(aotc_error(rt_), "");  // a success clears the last error
}

TEST_F(CApi, BindGradOutput) {
  void* g = floats(16, 0.5);
  const int64_t scalar[1] = {1};
  refused(aotc_bind_grad_output(rt_, 99, tensor(g, scalar, AOTC_F32, 0)), "aotc_bind_grad_output", "no differentiable output has this index");
  refused(aotc_bind_grad_output(rt_, static_cast<size_t>(-1), tensor(g, scalar, AOTC_F32, 0)), "aotc_bind_grad_output",
          "no differentiable output has this index");
  refused(aotc_bind_grad_output(rt_, 0, nullptr), "aotc_bind_grad_output", "null tensor");
  refused(aotc_bind_grad_output(rt_, 0, tensor(g, tShape_)), "aotc_bind_grad_output", "does not match the output's");
}

TEST_F(CApi, ForwardAndBackwardOrder) {
  refused(aotc_backward(rt_), "aotc_backward", "run the forward first");
  refused(aotc_forward(rt_), "aotc_forward", "no tensor bound to this input");
  bindInputs();
  refused(aotc_backward(rt_), "aotc_backward", "run the forward first");
  ASSERT_EQ(aotc_forward(rt_), 0) << aotc_error(rt_);
  ASSERT_EQ(aotc_backward(rt_), 0) << aotc_error(rt_);
  ASSERT_EQ(aotc_backward(rt_), 0) << aotc_error(rt_);  // again: the forward's results still hold
  ASSERT_EQ(aotc_bind(rt_, "x", tensor(x_, xShape_)), 0);
  refused(aotc_backward(rt_), "aotc_backward", "run the forward first");
}

// The case: aotc_output before aotc_forward aborted the process.
TEST_F(CApi, Output) {
  aotc_tensor_view v;
  refused(aotc_output(rt_, 0, &v), "aotc_output", "run the forward first");
  refused(aotc_output(rt_, 99, &v), "aotc_output", "the artifact has");
  refused(aotc_output(rt_, 0, nullptr), "aotc_output", "null output view");
  bindInputs();
  refused(aotc_output(rt_, 0, &v), "aotc_output", "run the forward first");
  ASSERT_EQ(aotc_forward(rt_), 0) << aotc_error(rt_);
  EXPECT_EQ(aotc_output(rt_, 0, &v), 0) << aotc_error(rt_);
  refused(aotc_output(rt_, static_cast<size_t>(-1), &v), "aotc_output", "the artifact has");
  ASSERT_EQ(aotc_bind(rt_, "target", tensor(target_, tShape_)), 0);
  refused(aotc_output(rt_, 0, &v), "aotc_output", "run the forward first");  // stale after a bind
  ASSERT_EQ(aotc_forward(rt_), 0) << aotc_error(rt_);
  ASSERT_EQ(aotc_set_graphs(rt_, 0), 0) << aotc_error(rt_);
  refused(aotc_output(rt_, 0, &v), "aotc_output", "run the forward first");  // the plans were prepared again
}

// The other case: aotc_grad before aotc_backward aborted the process.
TEST_F(CApi, Grad) {
  aotc_tensor_view v;
  refused(aotc_grad(rt_, "fc1.weight", &v), "aotc_grad", "run the backward first");
  refused(aotc_grad(rt_, "nope", &v), "aotc_grad", "the artifact computes no gradient for this input");
  refused(aotc_grad(rt_, nullptr, &v), "aotc_grad", "null input name");
  refused(aotc_grad(rt_, "fc1.weight", nullptr), "aotc_grad", "null output view");
  bindInputs();
  ASSERT_EQ(aotc_forward(rt_), 0) << aotc_error(rt_);
  refused(aotc_grad(rt_, "fc1.weight", &v), "aotc_grad", "run the backward first");
  ASSERT_EQ(aotc_backward(rt_), 0) << aotc_error(rt_);
  ASSERT_EQ(aotc_grad(rt_, "fc1.weight", &v), 0) << aotc_error(rt_);
  EXPECT_EQ(v.ndim, 2);
  EXPECT_EQ(v.shape[0], 16);
  ASSERT_EQ(aotc_forward(rt_), 0) << aotc_error(rt_);
  refused(aotc_grad(rt_, "fc1.weight", &v), "aotc_grad", "run the backward first");  // stale after a forward
}

TEST_F(CApi, Input) {
  aotc_tensor_view v;
  refused(aotc_input(rt_, "nope", &v), "aotc_input", "the artifact has no input of this name");
  refused(aotc_input(rt_, nullptr, &v), "aotc_input", "null input name");
  refused(aotc_input(rt_, "x", nullptr), "aotc_input", "null output view");
  refused(aotc_input(rt_, "x", &v), "aotc_input", "no tensor bound to this input");
  bindInputs();
  ASSERT_EQ(aotc_input(rt_, "x", &v), 0) << aotc_error(rt_);
  EXPECT_EQ(v.data, x_);
}

TEST_F(CApi, StreamsSynchronizeAndGraphs) {
  // The emulate device ignores streams (c_api.h): any value is accepted.
  EXPECT_EQ(aotc_set_stream(rt_, reinterpret_cast<void*>(0x1234)), 0) << aotc_error(rt_);
  EXPECT_EQ(aotc_set_stream(rt_, nullptr), 0) << aotc_error(rt_);
  EXPECT_EQ(aotc_synchronize(rt_), 0) << aotc_error(rt_);  // nothing ran yet
  EXPECT_EQ(aotc_set_graphs(rt_, 1), 0) << aotc_error(rt_);
  EXPECT_EQ(aotc_set_graphs(rt_, 12345), 0) << aotc_error(rt_);
  bindInputs();
  ASSERT_EQ(aotc_forward(rt_), 0) << aotc_error(rt_);
  EXPECT_EQ(aotc_synchronize(rt_), 0) << aotc_error(rt_);
}

TEST_F(CApi, LossScale) {
  float scale = 0;
  int found = 0;
  refused(aotc_loss_scale(rt_, &scale, &found), "aotc_loss_scale", "does not scale its loss");
  refused(aotc_loss_scale(rt_, nullptr, nullptr), "aotc_loss_scale", "does not scale its loss");
}

TEST_F(CApi, AllocAndFree) {
  refused(aotc_alloc(rt_, 16, nullptr), "aotc_alloc", "null result pointer");
  void* p = reinterpret_cast<void*>(1);
  refused(aotc_alloc(rt_, static_cast<size_t>(-1), &p), "aotc_alloc", "cannot allocate");
  EXPECT_EQ(p, nullptr);
  ASSERT_EQ(aotc_alloc(rt_, 0, &p), 0) << aotc_error(rt_);
  EXPECT_EQ(aotc_free(rt_, p), 0) << aotc_error(rt_);
  int local = 0;
  refused(aotc_free(rt_, &local), "aotc_free", "not allocated by aotc_alloc on this runtime");
  refused(aotc_free(rt_, nullptr), "aotc_free", "null pointer");
  ASSERT_EQ(aotc_alloc(rt_, 64, &p), 0) << aotc_error(rt_);
  refused(aotc_free(rt_, static_cast<char*>(p) + 16), "aotc_free", "inside an aotc_alloc allocation, not its start");
  EXPECT_EQ(aotc_free(rt_, p), 0) << aotc_error(rt_);
  refused(aotc_free(rt_, p), "aotc_free", "or is already freed");  // double free
  // Freeing bound memory unbinds it: the results computed stay, the next
  // forward asks for the input rather than reading freed memory.
  bindInputs();
  ASSERT_EQ(aotc_forward(rt_), 0) << aotc_error(rt_);
  const std::vector<unsigned char> before = output0();
  EXPECT_EQ(aotc_free(rt_, x_), 0) << aotc_error(rt_);
  EXPECT_EQ(output0(), before);
  refused(aotc_forward(rt_), "aotc_forward", "node 'x' (input): error: no tensor bound to this input");
  aotc_tensor_view v;
  refused(aotc_input(rt_, "x", &v), "aotc_input", "no tensor bound to this input");
  void* x2 = floats(32, 0.7);  // the same values again
  ASSERT_EQ(aotc_bind(rt_, "x", tensor(x2, xShape_)), 0) << aotc_error(rt_);
  ASSERT_EQ(aotc_forward(rt_), 0) << aotc_error(rt_);
  EXPECT_EQ(output0(), before);
  // A bound parameter freed falls back to the artifact's weight.
  void* w = floats(128, 0.3);
  const int64_t wShape[2] = {16, 8};
  ASSERT_EQ(aotc_bind(rt_, "fc1.weight", tensor(w, wShape)), 0) << aotc_error(rt_);
  ASSERT_EQ(aotc_forward(rt_), 0) << aotc_error(rt_);
  EXPECT_NE(output0(), before);
  EXPECT_EQ(aotc_free(rt_, w), 0) << aotc_error(rt_);
  ASSERT_EQ(aotc_forward(rt_), 0) << aotc_error(rt_);
  EXPECT_EQ(output0(), before);
  // Another runtime's allocation is not this one's.
  aotc_runtime* other = nullptr;
  char err[256] = "";
  ASSERT_EQ(aotc_open(dir_.c_str(), "emulate", &other, err, sizeof err), 0) << err;
  void* q = nullptr;
  ASSERT_EQ(aotc_alloc(other, 8, &q), 0);
  refused(aotc_free(rt_, q), "aotc_free", "not allocated by aotc_alloc on this runtime");
  EXPECT_EQ(aotc_free(other, q), 0);
  aotc_close(other);
}

TEST_F(CApi, Copies) {
  void* p = nullptr;
  ASSERT_EQ(aotc_alloc(rt_, 64, &p), 0);
  char host[128] = {};
  refused(aotc_copy_to_device(rt_, nullptr, host, 4), "aotc_copy_to_device", "null pointer");
  refused(aotc_copy_to_device(rt_, p, nullptr, 4), "aotc_copy_to_device", "null pointer");
  refused(aotc_copy_to_host(rt_, nullptr, p, 4), "aotc_copy_to_host", "null pointer");
  refused(aotc_copy_to_host(rt_, host, nullptr, 4), "aotc_copy_to_host", "null pointer");
  EXPECT_EQ(aotc_copy_to_device(rt_, nullptr, nullptr, 0), 0) << aotc_error(rt_);  // 0 bytes: nothing to do
  EXPECT_EQ(aotc_copy_to_host(rt_, nullptr, nullptr, 0), 0) << aotc_error(rt_);
  refused(aotc_copy_to_device(rt_, p, host, 65), "aotc_copy_to_device", "past the end of its aotc_alloc allocation (64 bytes left)");
  refused(aotc_copy_to_host(rt_, host, static_cast<char*>(p) + 32, 33), "aotc_copy_to_host", "(32 bytes left)");
  for (int i = 0; i < 64; ++i) host[i] = static_cast<char>(i);
  ASSERT_EQ(aotc_copy_to_device(rt_, p, host, 64), 0) << aotc_error(rt_);
  char back[64] = {};
  ASSERT_EQ(aotc_copy_to_host(rt_, back, static_cast<char*>(p) + 32, 32), 0) << aotc_error(rt_);
  EXPECT_EQ(std::memcmp(back, host + 32, 32), 0);
}

/// After every misuse above, in one runtime, the results are a clean run's bytes.
TEST_F(CApi, MisuseLeavesTheRuntimeUsable) {
  bindInputs();
  ASSERT_EQ(aotc_forward(rt_), 0) << aotc_error(rt_);
  const std::vector<unsigned char> clean = output0();
  aotc_tensor_view v;
  int local = 0;
  aotc_output(rt_, 99, &v);
  aotc_grad(rt_, "fc1.weight", &v);
  aotc_backward(rt_);
  aotc_bind(rt_, "x", tensor(x_, tShape_));
  aotc_bind(rt_, "nope", tensor(x_, xShape_));
  aotc_free(rt_, &local);
  aotc_free(rt_, static_cast<char*>(x_) + 4);
  aotc_bind_grad_output(rt_, 7, nullptr);
  EXPECT_EQ(output0(), clean);  // a refused bind changes nothing, not even the forward's results
  ASSERT_EQ(aotc_forward(rt_), 0) << aotc_error(rt_);
  EXPECT_EQ(output0(), clean);
  ASSERT_EQ(aotc_backward(rt_), 0) << aotc_error(rt_);
}

/// A dynamic-shape artifact refuses a size outside its symbol's range or
/// guard in one line, and still runs at a size inside it.
TEST(CApiDynamic, BindingOutsideItsRange) {
  const std::string dir = compileOnce("symbolic/mlp_dynamic.json", "mlp_dynamic");
  aotc_runtime* rt = nullptr;
  char err[512] = "";
  ASSERT_EQ(aotc_open(dir.c_str(), "emulate", &rt, err, sizeof err), 0) << err;
  void* p = nullptr;
  ASSERT_EQ(aotc_alloc(rt, 2048 * 16 * sizeof(float), &p), 0);
  auto bind = [&](int64_t batch) {
    const int64_t shape[3] = {batch, 2, 8};
    aotc_tensor t{p, AOTC_F32, 3, shape, nullptr};
    return aotc_bind(rt, "x", &t);
  };
  for (int64_t bad : {int64_t{2048}, int64_t{5}, int64_t{0}, int64_t{-4}, int64_t{1} << 40}) {
    EXPECT_NE(bind(bad), 0) << bad;
    std::string e = aotc_error(rt);
    EXPECT_EQ(e.rfind("aotc_bind: ", 0), 0u) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_EQ(e.find("internal error"), std::string::npos) << e;
  }
  EXPECT_NE(std::string(aotc_error(rt)).find("past the end of its aotc_alloc allocation"), std::string::npos) << aotc_error(rt);
  EXPECT_NE(bind(2048), 0);
  EXPECT_NE(std::string(aotc_error(rt)).find("outside the range the artifact takes: [2, 1024]"), std::string::npos) << aotc_error(rt);
  ASSERT_EQ(bind(6), 0) << aotc_error(rt);
  ASSERT_EQ(aotc_forward(rt), 0) << aotc_error(rt);
  aotc_tensor_view v;
  ASSERT_EQ(aotc_output(rt, 0, &v), 0) << aotc_error(rt);
  ASSERT_EQ(bind(8), 0) << aotc_error(rt);
  EXPECT_NE(aotc_output(rt, 0, &v), 0);  // the sizes changed: the forward must run again
  ASSERT_EQ(aotc_forward(rt), 0) << aotc_error(rt);
  ASSERT_EQ(aotc_backward(rt), 0) << aotc_error(rt);
  aotc_close(rt);
}

// Note [Run-time scalars]: an --optimizer artifact's learning rate set
// between training steps through the C ABI.  Plain SGD moves each parameter
// by -lr * grad: with lr 0 a step leaves fc1.weight as it is, and a step at
// lr 0.2 moves it twice as far as a step at 0.1 from the same point (each
// step on a fresh runtime, the parameters from the artifact).
TEST(CApiScalars, LearningRateSetBetweenSteps) {
  aotc::CompileOptions o;
  o.model = (fs::path(AOTC_SOURCE_DIR) / "testdata" / "fx" / "mlp.json").string();
  o.out_dir = (fs::path(AOTC_BINARY_DIR) / "c_api_test" / "mlp_sgd").string();
  o.archs = {"sm_90"};
  o.optimizer.kind = aotc::OptimizerKind::Sgd;
  o.optimizer.lr = 0.1;
  fs::remove_all(o.out_dir);
  aotc::compileModel(o, std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>()));
  // Each step on a fresh runtime: every parameter from the artifact's weights.
  auto step = [&](double lr) {
    aotc_runtime* rt = nullptr;
    char err[512] = "";
    EXPECT_EQ(aotc_open(o.out_dir.c_str(), "emulate", &rt, err, sizeof err), 0) << err;
    auto upload = [&](const std::vector<float>& v) {
      void* p = nullptr;
      EXPECT_EQ(aotc_alloc(rt, v.size() * sizeof(float), &p), 0) << aotc_error(rt);
      EXPECT_EQ(aotc_copy_to_device(rt, p, v.data(), v.size() * sizeof(float)), 0) << aotc_error(rt);
      return p;
    };
    std::vector<float> xv(32), tv(16);
    for (size_t i = 0; i < 32; ++i) xv[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i + 1)));
    for (size_t i = 0; i < 16; ++i) tv[i] = static_cast<float>(std::sin(1.3 * static_cast<double>(i + 1)));
    const int64_t xs[2] = {4, 8}, ts[2] = {4, 4};
    aotc_tensor tx{upload(xv), AOTC_F32, 2, xs, nullptr}, tt{upload(tv), AOTC_F32, 2, ts, nullptr};
    aotc_tensor ts0{upload({1.0f}), AOTC_F32, 0, nullptr, nullptr};  // the loss's gradient, as loss.backward() seeds it
    EXPECT_EQ(aotc_bind(rt, "x", &tx), 0) << aotc_error(rt);
    EXPECT_EQ(aotc_bind(rt, "target", &tt), 0) << aotc_error(rt);
    EXPECT_EQ(aotc_bind_grad_output(rt, 0, &ts0), 0) << aotc_error(rt);
    EXPECT_EQ(aotc_set_scalar(rt, "optim.lr", lr), 0) << aotc_error(rt);  // before any phase: the weights are uploaded first
    EXPECT_EQ(aotc_forward(rt), 0) << aotc_error(rt);
    EXPECT_EQ(aotc_backward(rt), 0) << aotc_error(rt);
    aotc_tensor_view v;
    EXPECT_EQ(aotc_input(rt, "fc1.weight", &v), 0) << aotc_error(rt);
    std::vector<float> after(128);
    EXPECT_EQ(aotc_copy_to_host(rt, after.data(), v.data, sizeof(float) * 128), 0) << aotc_error(rt);
    aotc_close(rt);
    return after;
  };
  const std::vector<float> w0 = step(0.0), one = step(0.1), two = step(0.2);
  double moved = 0;
  for (size_t i = 0; i < 128; ++i) {
    const double d1 = static_cast<double>(one[i]) - w0[i], d2 = static_cast<double>(two[i]) - w0[i];
    EXPECT_NEAR(d2, 2 * d1, 1e-6 + 1e-4 * std::fabs(d1)) << i;
    moved += std::fabs(d1);
  }
  EXPECT_GT(moved, 1e-3);  // the step did move the parameters
  // Note [Training step]: aotc_train_step is that step (the loss's gradient
  // seeded with 1, no grad output bound).
  {
    aotc_runtime* rt = nullptr;
    char err[512] = "";
    ASSERT_EQ(aotc_open(o.out_dir.c_str(), "emulate", &rt, err, sizeof err), 0) << err;
    std::vector<float> xv(32), tv(16);
    for (size_t i = 0; i < 32; ++i) xv[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i + 1)));
    for (size_t i = 0; i < 16; ++i) tv[i] = static_cast<float>(std::sin(1.3 * static_cast<double>(i + 1)));
    void *px = nullptr, *pt = nullptr;
    ASSERT_EQ(aotc_alloc(rt, sizeof(float) * 32, &px), 0);
    ASSERT_EQ(aotc_alloc(rt, sizeof(float) * 16, &pt), 0);
    ASSERT_EQ(aotc_copy_to_device(rt, px, xv.data(), sizeof(float) * 32), 0);
    ASSERT_EQ(aotc_copy_to_device(rt, pt, tv.data(), sizeof(float) * 16), 0);
    const int64_t xs[2] = {4, 8}, ts[2] = {4, 4};
    aotc_tensor tx{px, AOTC_F32, 2, xs, nullptr}, tt{pt, AOTC_F32, 2, ts, nullptr};
    ASSERT_EQ(aotc_bind(rt, "x", &tx), 0) << aotc_error(rt);
    ASSERT_EQ(aotc_bind(rt, "target", &tt), 0) << aotc_error(rt);
    ASSERT_EQ(aotc_set_scalar(rt, "optim.lr", 0.1), 0) << aotc_error(rt);
    ASSERT_EQ(aotc_train_step(rt), 0) << aotc_error(rt);
    aotc_tensor_view v;
    ASSERT_EQ(aotc_input(rt, "fc1.weight", &v), 0) << aotc_error(rt);
    std::vector<float> after(128);
    ASSERT_EQ(aotc_copy_to_host(rt, after.data(), v.data, sizeof(float) * 128), 0);
    for (size_t i = 0; i < 128; ++i) EXPECT_EQ(after[i], one[i]) << i;
    ASSERT_EQ(aotc_output(rt, 0, &v), 0) << aotc_error(rt);  // the loss is there after a train step
    aotc_close(rt);
  }
  aotc_runtime* rt = nullptr;
  char err[512] = "";
  ASSERT_EQ(aotc_open(o.out_dir.c_str(), "emulate", &rt, err, sizeof err), 0) << err;
  // Refusals: not an input, not a scalar, a value the dtype cannot hold.
  EXPECT_NE(aotc_set_scalar(rt, "nope", 1.0), 0);
  EXPECT_NE(std::string(aotc_error(rt)).find("the artifact has no input of this name"), std::string::npos) << aotc_error(rt);
  EXPECT_NE(aotc_set_scalar(rt, "fc1.bias", 1.0), 0);
  EXPECT_NE(std::string(aotc_error(rt)).find("is not a scalar"), std::string::npos) << aotc_error(rt);
  EXPECT_NE(aotc_set_scalar(rt, nullptr, 1.0), 0);
  aotc_close(rt);
}

}  // namespace
