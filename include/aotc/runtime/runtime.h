//===- aotc/runtime/runtime.h - The aotc deployment runtime, C++ API -*- C++ -*-===//
//
// A thin C++ layer over the C ABI (c_api.h), header-only, so that a program
// built with another compiler or standard library links only C symbols.
// Errors are thrown as aotc::deploy::Error (one line, naming the step, the
// kernel and the graph nodes where a run fails).
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "aotc/runtime/c_api.h"

namespace aotc::deploy {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A tensor the runtime returns (see aotc_tensor_view).
struct View {
  void* data = nullptr;
  aotc_dtype dtype = AOTC_F32;
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
};

class Runtime {
 public:
  /// device: "cuda", "cuda:<n>", "emulate" or "auto".
  explicit Runtime(const std::string& artifactDir, const std::string& device = "auto") {
    char err[1024] = {0};
    if (aotc_open(artifactDir.c_str(), device.c_str(), &rt_, err, sizeof err)) throw Error(err);
  }
  ~Runtime() { aotc_close(rt_); }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  std::string device() const { return aotc_device_name(rt_); }
  std::vector<std::string> inputs() const {
    std::vector<std::string> r;
    for (size_t i = 0; i < aotc_num_inputs(rt_); ++i) r.push_back(aotc_input_name(rt_, i));
    return r;
  }
  size_t numOutputs() const { return aotc_num_outputs(rt_); }

  void bind(const std::string& name, void* data, aotc_dtype dtype, const std::vector<int64_t>& shape,
            const std::vector<int64_t>& strides = {}) {
    aotc_tensor t{data, dtype, static_cast<int32_t>(shape.size()), shape.data(), strides.empty() ? nullptr : strides.data()};
    check(aotc_bind(rt_, name.c_str(), &t));
  }
  void bindGradOutput(size_t index, void* data, aotc_dtype dtype, const std::vector<int64_t>& shape) {
    aotc_tensor t{data, dtype, static_cast<int32_t>(shape.size()), shape.data(), nullptr};
    check(aotc_bind_grad_output(rt_, index, &t));
  }
  /// A one-element input set between steps (the learning rate "optim.lr"): aotc_set_scalar.
  void setScalar(const std::string& name, double value) { check(aotc_set_scalar(rt_, name.c_str(), value)); }
  void forward() { check(aotc_forward(rt_)); }
  void backward() { check(aotc_backward(rt_)); }
  /// forward, backward seeded with 1 and the optimizer's update: aotc_train_step.
  void trainStep() { check(aotc_train_step(rt_)); }
  /// The caller's CUstream for later phases (they enqueue and return); nullptr: the runtime's own, synchronous.
  void setStream(void* stream) { check(aotc_set_stream(rt_, stream)); }
  void synchronize() { check(aotc_synchronize(rt_)); }
  void setGraphs(bool enabled) { check(aotc_set_graphs(rt_, enabled ? 1 : 0)); }
  View output(size_t index) { return view([&](aotc_tensor_view* v) { return aotc_output(rt_, index, v); }); }
  View grad(const std::string& input) { return view([&](aotc_tensor_view* v) { return aotc_grad(rt_, input.c_str(), v); }); }
  View input(const std::string& name) { return view([&](aotc_tensor_view* v) { return aotc_input(rt_, name.c_str(), v); }); }

  void* allocate(size_t bytes) {
    void* p = nullptr;
    check(aotc_alloc(rt_, bytes, &p));
    return p;
  }
  void release(void* p) { check(aotc_free(rt_, p)); }
  void copyToDevice(void* dst, const void* src, size_t bytes) { check(aotc_copy_to_device(rt_, dst, src, bytes)); }
  void copyToHost(void* dst, const void* src, size_t bytes) { check(aotc_copy_to_host(rt_, dst, src, bytes)); }

 private:
  void check(int rc) const {
    if (rc) throw Error(aotc_error(rt_));
  }
  template <typename F>
  View view(F f) {
    aotc_tensor_view v{};
    check(f(&v));
    View r;
    r.data = v.data;
    r.dtype = v.dtype;
    r.shape.assign(v.shape, v.shape + v.ndim);
    r.strides.assign(v.strides, v.strides + v.ndim);
    r.offset = v.offset;
    return r;
  }
  aotc_runtime* rt_ = nullptr;
};

}  // namespace aotc::deploy
