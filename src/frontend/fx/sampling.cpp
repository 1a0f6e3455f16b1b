//===- fx/sampling.cpp - grid_sampler ---------------------------------------===//
//
// grid_sampler_2d and grid_sampler: the entries read the arguments and call
// the decomposition (Note [grid_sampler] in src/ops/decompose_gathers.cpp).
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

namespace {

/// grid_sampler_2d(input, grid, interpolation_mode, padding_mode,
/// align_corners): decomp::gridSampler2d.
V convertGridSampler(Converter& c) {
  ValueId x = c.tensor(0, "input"), grid = c.tensor(1, "grid");
  int64_t interp = c.integer(2, "interpolation_mode", 0), padding = c.integer(3, "padding_mode", 0);
  bool align = c.boolean(4, "align_corners", false);
  return {decomp::gridSampler2d(c, x, grid, interp, padding, align)};
}

}  // namespace

Entries samplingConverters() {
  return {
    {"aten.grid_sampler_2d.default", convertGridSampler},
    {"aten.grid_sampler.default", convertGridSampler},
  };
}

}  // namespace aotc::fx
