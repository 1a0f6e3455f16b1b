//===- host_tensor.cpp - Dense host tensors -------------------------------===//
#include "aotc/ir/host_tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace aotc {

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

HostTensor HostTensor::zeros(DType d, Ints sizes) {
  HostTensor t{d, std::move(sizes), {}};
  t.data.assign(static_cast<size_t>(t.numel()), 0.0);
  return t;
}

namespace {
float bf16Round(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return f;  // NaN
  u += 0x7fff + ((u >> 16) & 1);                 // round to nearest even
  u &= 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

double roundTo(DType d, double x) {
  switch (d) {
    case DType::F64: return x;
    case DType::F32: return static_cast<float>(x);
    case DType::F16: return static_cast<double>(static_cast<_Float16>(static_cast<float>(x)));
    case DType::BF16: return bf16Round(static_cast<float>(x));
    // Integer casts saturate (and NaN is 0) rather than overflow: converting
    // an out-of-range double is undefined behaviour in C++.
    case DType::I64: return x != x ? 0.0 : x >= 0x1p63 ? 0x1p63 - 1024 : x < -0x1p63 ? -0x1p63 : std::trunc(x);
    case DType::I32: return x != x ? 0.0 : std::trunc(std::clamp(x, -2147483648.0, 2147483647.0));
    case DType::Bool: return x != 0.0 ? 1.0 : 0.0;
  }
  return x;
}

}  // namespace aotc
