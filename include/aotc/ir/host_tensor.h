//===- host_tensor.h - Dense host tensors -------------------------*- C++ -*-===//
//
// A tensor's values on the host: what safetensors files hold and what the
// reference kernels compute on.  Elements are held as double, rounded to
// their dtype (roundTo) wherever a value is stored.
//===----------------------------------------------------------------------===//
#pragma once

#include <vector>

#include "aotc/ir/ir.h"

namespace aotc {

struct HostTensor {
  DType dtype = DType::F32;
  Ints sizes;
  std::vector<double> data;  ///< row-major, numel() elements

  int64_t numel() const;
  static HostTensor zeros(DType d, Ints sizes);
};

/// Rounds `x` to the nearest value representable in `d`.
double roundTo(DType d, double x);

}  // namespace aotc
