//===- device.h - What the executor needs from a device -----------*- C++ -*-===//
//
// Note [One executor]: one executor (executor.h) runs every artifact on every
// device: it owns the buffer table, the arenas, the step loop and the
// bindings; a Device only allocates, copies, loads the artifact's kernels,
// launches, and makes the library calls a step spells out.  Two devices:
// `emulate` (the artifact's CUDA C++ compiled by the host compiler, GEMM and
// convolution as host loops; what CI runs) and `cuda` (the driver API, the
// artifact's cubin or PTX, cuBLAS/cuBLASLt and cuDNN, all loaded at run time
// so that binaries start on machines without a GPU).
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

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  /// `bytes` of zeroed device memory, 256-byte aligned.  Throws UserError when out of memory.
  virtual DevicePtr allocate(size_t bytes) = 0;
  virtual void release(DevicePtr p) = 0;
  virtual void copyToDevice(DevicePtr dst, const void* src, size_t bytes) = 0;
  virtual void copyToHost(void* dst, DevicePtr src, size_t bytes) = 0;
  /// Loads every kernel of the artifact in `dir`.
  virtual void loadKernels(const plan::Manifest& m, const std::string& dir) = 0;
  /// Runs one launch; throws UserError (message only: the executor adds the
  /// step, kernel and nodes) when the kernel reports an error.
  virtual void launch(const plan::Launch& l, const std::vector<DevicePtr>& args) = 0;
  /// The GEMM a step spells out; `bias` is 0 unless the step has one.
  virtual void gemm(const plan::Gemm& g, DevicePtr a, DevicePtr b, DevicePtr c, DevicePtr bias) = 0;
  /// The convolution a step spells out on root pointers (the tensors' offsets are in `c`).
  virtual void conv(const plan::Conv& c, DevicePtr a, DevicePtr b, DevicePtr out) = 0;
  virtual void synchronize() = 0;
};

/// Reports long work as it goes: (what, done, total); total 0 when unknown.
using ProgressFn = std::function<void(const std::string& what, size_t done, size_t total)>;

struct EmulateOptions {
  std::string cache_dir;              ///< host-compiled kernel libraries; "" = $TMPDIR/aotc-emulate
  std::string host_compiler = "c++";  ///< compiles the artifact's CUDA C++ against the shim
  ProgressFn progress;                ///< told before and after a host compile (seconds, once per artifact)
};

std::unique_ptr<Device> makeEmulateDevice(const EmulateOptions& opts);

/// The first CUDA device, through the driver API loaded at run time.  Without
/// a driver or a device, throws a UserError saying which.
std::unique_ptr<Device> makeCudaDevice(int ordinal = 0);

}  // namespace aotc
