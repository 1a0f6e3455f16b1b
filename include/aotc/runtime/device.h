//===- device.h - What the executor needs from a device -----------*- C++ -*-===//
//
// Note [One executor]: one executor (executor.h) runs every artifact on every
// device: it owns the buffer table, the arenas, the step loop and the
// bindings; a Device only allocates, copies, loads the artifact's kernels,
// prepares a phase's steps and enqueues them.  Two devices: `emulate` (the
// artifact's CUDA C++ compiled by the host compiler, GEMM and convolution as
// host loops; what CI runs) and `cuda` (the driver API, the artifact's cubin
// or PTX, cuBLASLt and cuDNN, all loaded at run time so that binaries start
// on machines without a GPU).
//
// Note [Prepared plan]: everything a step needs is built when a session is
// opened or a binding changes its sizes (Device::prepare: kernel handles and
// argument arrays, library descriptors, the algorithm of every GEMM and
// convolution, the library workspace), never inside a step.  A prepared
// phase reads its buffers' root pointers from a table the executor owns and
// keeps in place (PhaseArgs::roots): rebinding an input writes one entry of
// it, and a step enqueued afterwards reads the new pointer.  Per step the
// device only enqueues: a launch, a cuBLASLt matmul with its preset
// algorithm, a cuDNN call with its preset algorithm, or one graph launch
// (Note [Phase graphs]).
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aotc/plan/plan.h"

namespace aotc {

/// A device address (a host address on the emulate device).
using DevicePtr = uint64_t;

/// What a phase's steps read: `roots` (one entry per buffer of the program,
/// kept at one address while the prepared phase lives) and, per step, the
/// indices into it of the buffers it names, in the step's order: a launch's
/// arguments; a GEMM's A, B, C (and bias); a convolution's a, b, out.
struct PhaseArgs {
  const std::vector<DevicePtr>* roots = nullptr;
  std::vector<std::vector<uint32_t>> steps;
};

/// Note [Index errors]: a kernel that meets an index outside its dim records
/// its step's tag (phaseTag(phase) + step + 1) in its module's flag; the
/// device reads the flags when it synchronizes.
inline int64_t stepTag(plan::Phase p, size_t step) { return (p == plan::Phase::Backward ? (int64_t{1} << 24) : 0) + static_cast<int64_t>(step) + 1; }

/// The device half of a prepared phase (Note [Prepared plan]).
class PreparedPhase {
 public:
  virtual ~PreparedPhase() = default;
  /// Enqueues step `i` on the device's stream.  Throws UserError (message
  /// only: the executor adds the step, kernel and nodes) when it fails.
  virtual void enqueue(size_t i) = 0;
};

/// A captured phase (Note [Phase graphs]); destroyed by its deleter.
using GraphHandle = std::shared_ptr<void>;

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  /// `bytes` of zeroed device memory, 256-byte aligned.  Throws UserError when out of memory.
  /// Not for use inside a step: sessions allocate when they prepare.
  virtual DevicePtr allocate(size_t bytes) = 0;
  virtual void release(DevicePtr p) = 0;
  /// Synchronous copies, ordered after all work enqueued before them.
  virtual void copyToDevice(DevicePtr dst, const void* src, size_t bytes) = 0;
  virtual void copyToHost(void* dst, DevicePtr src, size_t bytes) = 0;
  /// Fills device memory with one byte value (a test's poison), ordered on the stream.
  virtual void fill(DevicePtr dst, unsigned char value, size_t bytes) = 0;
  /// A device-to-device copy enqueued on the stream.
  virtual void copyAsync(DevicePtr dst, DevicePtr src, size_t bytes) = 0;
  /// Writes `count` 32-bit words of `value` at dst, enqueued after the work
  /// already enqueued (the value travels with the call: no host memory to
  /// keep alive; Session::setScalar).
  virtual void fillWords(DevicePtr dst, uint32_t value, size_t count) = 0;
  /// Loads every kernel of the artifact in `dir`.
  virtual void loadKernels(const plan::Manifest& m, const std::string& dir) = 0;
  /// Prepares one phase of `m` (Note [Prepared plan]).  Library workspace is
  /// reserved here; the steps of every phase prepared on a device may run
  /// one after another on its stream.
  virtual std::unique_ptr<PreparedPhase> prepare(const plan::Manifest& m, plan::Phase phase, const PhaseArgs& args) = 0;

  /// The stream work is enqueued on: the caller's (a CUstream; the session
  /// joins it with events) or, given nullptr, the device's own.
  virtual void setStream(void* stream) { (void)stream; }
  /// Before a phase: the device's work waits for the caller's stream; after
  /// it: the caller's stream waits for the device's work.  Both enqueue only.
  virtual void beginPhase() {}
  virtual void endPhase() {}
  /// Waits for all enqueued work.  Returns 0, or the tag (stepTag) of the
  /// first step whose kernel met an index outside its dim since the last
  /// synchronize (Note [Index errors]).
  virtual int64_t synchronize() = 0;

  /// Note [Phase graphs]: a device that can capture records a phase's
  /// enqueued work once and replays it as one launch.
  virtual bool canCapture() const { return false; }
  virtual void beginCapture() {}
  virtual GraphHandle endCapture() { return nullptr; }
  virtual void launchGraph(const GraphHandle& g) { (void)g; }
};

/// Reports long work as it goes: (what, done, total); total 0 when unknown.
using ProgressFn = std::function<void(const std::string& what, size_t done, size_t total)>;

struct EmulateOptions {
  std::string cache_dir;              ///< host-compiled kernel libraries; "" = $TMPDIR/aotc-emulate
  std::string host_compiler = "c++";  ///< compiles the artifact's CUDA C++ against the shim
  ProgressFn progress;                ///< told before and after a host compile (seconds, once per artifact)
};

std::unique_ptr<Device> makeEmulateDevice(const EmulateOptions& opts);

/// CUDA device `ordinal` (cuda:<ordinal>), through the driver API loaded at
/// run time.  Without a driver or a device, throws a UserError saying which.
std::unique_ptr<Device> makeCudaDevice(int ordinal = 0);

/// "cuda" -> 0, "cuda:1" -> 1; anything else -> -1.
int cudaOrdinal(const std::string& device);

}  // namespace aotc
