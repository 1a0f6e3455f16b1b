//===- executor.h - Run an artifact's plan on a Device -------------*- C++ -*-===//
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aotc/ir/host_tensor.h"
#include "aotc/runtime/device.h"

namespace aotc {

/// A tensor in device memory: a root pointer and a layout over it (offset
/// and strides in elements).
struct DeviceTensor {
  DevicePtr data = 0;
  DType dtype = DType::F32;
  Ints shape, strides;
  int64_t offset = 0;
  plan::Layout layout() const { return plan::Layout{dtype, shape, strides, offset}; }
};

/// Note [One executor].  A session binds the caller's tensors by signature
/// name, runs the forward (its epilogue writes mutated inputs in place), keeps
/// the forward's arena (the saved tensors live there) until the backward has
/// run, and runs the backward with the grad outputs.  Fresh outputs and grads
/// are views into the session's arenas, valid until the next run; an output
/// that aliases an input is a view of the caller's tensor.  Inputs the caller
/// does not bind come from the artifact's weights (parameters, buffers,
/// constants); grad outputs not bound are zeros.
class Session {
 public:
  Session(plan::Manifest manifest, std::string dir, Device& device);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const plan::Manifest& manifest() const { return m_; }
  Device& device() { return dev_; }

  /// Binds an input by name (or a tied tensor's other name).  Checked against
  /// the manifest: dtype, shape, strides, offset 0, alignment.
  void bind(const std::string& name, const DeviceTensor& t);
  /// Binds grad_output.<index> (a differentiable output's gradient).
  void bindGradOutput(size_t index, const DeviceTensor& t);

  void forward();
  void backward();
  /// Hears each step as it starts: ("forward"|"backward", step, steps).
  void setProgress(std::function<void(const std::string&, size_t, size_t)> f) { progress_ = std::move(f); }

  size_t numOutputs() const { return m_.outputs.size(); }
  DeviceTensor output(size_t index) const;
  /// The caller's tensor for input `name` as it is now (with the metadata the
  /// forward gave it, once the forward has run).
  DeviceTensor input(const std::string& name) const;
  DeviceTensor grad(const std::string& input) const;

 private:
  struct Arena;
  void run(plan::Phase phase, const std::map<std::string, DevicePtr>& roots);
  /// Uploads, from the artifact's weights, every parameter, buffer and
  /// constant the caller has not bound (the file is read once per call).
  void uploadWeights();
  /// The root pointer of an input: the caller's tensor, else its weight.
  DevicePtr root(const plan::InputSpec& in) const;

  plan::Manifest m_;
  std::string dir_;
  Device& dev_;
  std::function<void(const std::string&, size_t, size_t)> progress_;
  std::map<std::string, DeviceTensor> bound_;       ///< input name -> the caller's tensor
  std::map<size_t, DeviceTensor> gradOutputs_;
  std::map<std::string, DevicePtr> weights_;        ///< uploaded artifact weights
  std::map<std::string, DevicePtr> zeros_;          ///< zero grad outputs, per tangent
  std::vector<DevicePtr> owned_;                    ///< weights and zero grad outputs
  std::unique_ptr<Arena> fwd_, bwd_;
  bool forwardDone_ = false, backwardDone_ = false;
};

/// Host <-> device copies of a strided tensor (through a staging buffer of
/// its storage span).
HostTensor readDeviceTensor(Device& dev, const DeviceTensor& t);
void writeDeviceTensor(Device& dev, const DeviceTensor& t, const HostTensor& v);
/// A fresh device tensor with the given layout (offset 0), holding `v`.
DeviceTensor uploadTensor(Device& dev, const plan::Layout& layout, const HostTensor& v, std::vector<DevicePtr>& owned);

}  // namespace aotc
