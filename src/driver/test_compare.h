//===- test_compare.h - Comparing results with eager's ---------*- C++ -*-===//
#pragma once

#include <cmath>

namespace aotc {

/// |got - want| for finite values; for the rest, 0 when they match (NaN and
/// NaN, an infinity and the same infinity) and infinity when they do not.
/// The tests must not compute an error from a NaN: every comparison with NaN
/// is false, so `err > worst` or std::max would let it match anything.
inline double elementError(double got, double want) {
  if (std::isfinite(got) && std::isfinite(want)) return std::abs(got - want);
  return (std::isnan(got) && std::isnan(want)) || got == want ? 0.0 : HUGE_VAL;
}

}  // namespace aotc
