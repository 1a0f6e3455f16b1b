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

class Session;

/// How a session runs (Note [Prepared plan], Note [Phase graphs]).
struct SessionOptions {
  /// Capture each phase once per size binding and replay it as one launch,
  /// on a device that can (cuda).  Off: every step is enqueued each run.
  bool graphs = true;
  /// Copy user inputs and grad outputs into the phase's arena at its start
  /// (Note [Staged inputs]); always on when graphs are.  Tests force it on
  /// the emulate device, which does not capture, to check the copies.
  bool stage_inputs = false;
  /// Synchronize and check index errors after every step (like
  /// CUDA_LAUNCH_BLOCKING; also AOTC_SYNC_STEPS=1).  Turns graphs off.
  bool sync_steps = false;
  /// Tests: fill each phase's arena with 0xFF before the phase runs, so a
  /// kernel that read memory it did not write would change a result.
  bool poison_arenas = false;
  /// Note [Step trace]: hears each step after it ran, the device
  /// synchronized (it implies sync_steps); Session::stepBuffers reads what
  /// the step names.
  std::function<void(Session&, plan::Phase, size_t)> after_step;
  /// The defaults with the environment's switches applied (AOTC_SYNC_STEPS=1,
  /// AOTC_CUDA_GRAPHS=0; for tests AOTC_POISON_ARENAS=1, AOTC_STAGE_INPUTS=1).
  static SessionOptions fromEnvironment();
};

/// Note [One executor].  A session binds the caller's tensors by signature
/// name, runs the forward (its epilogue writes mutated inputs in place), keeps
/// the forward's arena (the saved tensors live there) until the backward has
/// run, and runs the backward with the grad outputs.  Fresh outputs and grads
/// are views into the session's arenas, valid until the next run; an output
/// that aliases an input is a view of the caller's tensor.  Inputs the caller
/// does not bind come from the artifact's weights (parameters, buffers,
/// constants); grad outputs not bound are zeros.
///
/// Each phase is prepared once (Note [Prepared plan]): its arena allocated,
/// its steps' descriptors, algorithms and argument arrays built; again only
/// when a binding of a dynamic-shape artifact changes the sizes.  With a
/// caller's stream (setStream) forward and backward enqueue and return, and
/// synchronize() waits; without one they return when their results are
/// ready.  A session is used by one thread at a time (any thread).
class Session {
 public:
  Session(plan::Manifest manifest, std::string dir, Device& device, SessionOptions options = SessionOptions::fromEnvironment());
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const plan::Manifest& manifest() const { return m_; }
  Device& device() { return dev_; }
  const SessionOptions& options() const { return opts_; }

  /// Binds an input by name (or a tied tensor's other name).  Checked against
  /// the manifest: dtype, shape, strides, offset 0, alignment.
  void bind(const std::string& name, const DeviceTensor& t);
  /// Binds grad_output.<index> (a differentiable output's gradient).
  void bindGradOutput(size_t index, const DeviceTensor& t);

  /// Note [Run-time scalars]: sets a one-element input (a learning rate,
  /// optim.lr) to `value` in its dtype, enqueued after the work already
  /// enqueued and before the next phase, with no host synchronization and no
  /// new capture (a graph reads the input's memory, which stays where it is).
  void setScalar(const std::string& name, double value);
  /// Enqueues the caller's stream (a CUstream) for every later phase; nullptr
  /// restores the session's own stream and synchronous phases.
  void setStream(void* stream);
  void forward();
  void backward();
  /// Note [Training step]: forward and backward of an artifact whose one
  /// differentiable output is a scalar loss, its gradient seeded with 1 (as
  /// loss.backward() does; a grad output bound before is replaced), with the
  /// optimizer's update when the artifact has one: under CUDA graphs one
  /// graph launch for the whole step.
  void trainStep();
  /// Waits for the session's work; reports an index error of any step since.
  void synchronize();
  /// Turns phase graphs on or off (Note [Phase graphs]); the plans are prepared again.
  void setGraphs(bool on);
  /// Hears each step as it starts: ("forward"|"backward", step, steps).
  void setProgress(std::function<void(const std::string&, size_t, size_t)> f) { progress_ = std::move(f); }

  size_t numOutputs() const { return m_.outputs.size(); }
  DeviceTensor output(size_t index) const;
  /// The caller's tensor for input `name` as it is now (with the metadata the
  /// forward gave it, once the forward has run).
  DeviceTensor input(const std::string& name) const;
  DeviceTensor grad(const std::string& input) const;
  /// Note [Step trace]: the buffers step `step` of `phase` names (a launch's
  /// arguments, outputs first; a GEMM's A, B, C and bias; a convolution's a,
  /// b and out), each read whole with its layout, as they are now.  Call it
  /// from SessionOptions::after_step.
  std::vector<std::pair<std::string, HostTensor>> stepBuffers(plan::Phase phase, size_t step);
  /// Forgets every binding (an input, or grad_output.<i>) whose data pointer
  /// lies in [lo, hi): memory the caller frees (the C ABI's aotc_free).  An
  /// input falls back to the artifact's weight, else must be bound again
  /// before the next forward; results already computed stay.
  void unbindWithin(DevicePtr lo, DevicePtr hi);

  /// Phases captured so far (Note [Phase graphs]): one per phase and size
  /// binding while the parameters stay where they are.
  size_t captures() const { return captures_; }

 private:
  struct PhasePlan;
  /// Builds both phases' plans for the current sizes (Note [Prepared plan]).
  void prepare();
  void runPhase(PhasePlan& p);
  /// This run's pointers into p's table; the staged inputs' copies (from, slot, bytes).
  struct StagedCopy {
    DevicePtr from, slot;
    size_t bytes;
  };
  std::vector<StagedCopy> bindPhase(PhasePlan& p);
  /// Throws the error of the step `tag` names (Note [Index errors]).
  [[noreturn]] void stepError(plan::Phase phase, size_t step, const std::string& message) const;
  void checkSynchronized(int64_t tag) const;
  /// Uploads, from the artifact's weights, every parameter, buffer and
  /// constant the caller has not bound (the file is read once per call).
  void uploadWeights();
  /// The root pointer of an input: the caller's tensor, else its weight.
  DevicePtr root(const plan::InputSpec& in) const;
  DevicePtr root(size_t inputIndex) const;
  void invalidate();

  plan::Manifest m_;
  std::string dir_;
  Device& dev_;
  SessionOptions opts_;
  std::function<void(const std::string&, size_t, size_t)> progress_;
  std::vector<DevicePtr> inputRoots_;               ///< per manifest input: the caller's tensor, its weight, or 0
  std::map<std::string, DeviceTensor> bound_;       ///< input name -> the caller's tensor
  std::map<size_t, DeviceTensor> gradOutputs_;
  std::map<std::string, DevicePtr> weights_;        ///< uploaded artifact weights
  std::map<std::string, DevicePtr> zeros_;          ///< zero grad outputs, per tangent
  std::vector<DevicePtr> owned_;                    ///< weights and zero grad outputs
  DevicePtr seed_ = 0;                              ///< trainStep's loss gradient, 1
  std::unique_ptr<PhasePlan> fwd_, bwd_;
  bool external_ = false;                           ///< a caller's stream is set
  bool forwardDone_ = false, backwardDone_ = false;
  size_t captures_ = 0;
};

/// Host <-> device copies of a strided tensor (through a staging buffer of
/// its storage span).
HostTensor readDeviceTensor(Device& dev, const DeviceTensor& t);
void writeDeviceTensor(Device& dev, const DeviceTensor& t, const HostTensor& v);
/// A fresh device tensor with the given layout (offset 0), holding `v`.
DeviceTensor uploadTensor(Device& dev, const plan::Layout& layout, const HostTensor& v, std::vector<DevicePtr>& owned);

}  // namespace aotc
