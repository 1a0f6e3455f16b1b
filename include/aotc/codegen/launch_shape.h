//===- launch_shape.h - Every large launch fills the machine -----*- C++ -*-===//
//
// Note [Launch shape]: a rule of the code generator, checked without a GPU.
// Every launch that touches more than `minBytes` (1 MiB) must
//   - have at least the target's SM count of blocks *that have work* (a grid
//     padded with idle blocks does not pass: the plan records the blocks
//     with work, plan::LaunchWork), and
//   - keep every thread's serial loops to at most `maxSerial` elements.
// The code generator records each launch's work (bytes, blocks with work,
// longest serial loop, split) in the manifest, decides reductions' schedules
// so that the rule holds (Note [Reduction schedules], fusion.h), and
// `aotc compile --check-launch-shapes` refuses an artifact with a launch
// that breaks it (scripts/launch_shapes.py runs that over every fixture and
// the zoo models, at the suite's sizes and at a GPU's).
//
// Why 1024 elements per thread: an H100 keeps 132 SMs x 2048 = 270,336
// threads resident.  Spread over them, a tensor needs 270,336 x 1024 x 4 B
// = 1.1 GB before one thread has to visit 1024 float elements; the models
// here touch at most a few hundred MB per launch, so a longer loop means
// the work sits on fewer threads than the machine holds (the 3.3 ms LayerNorm
// weight gradient: 256 threads, 4096 rows each).  A loop of 1024 iterations
// at ~1 ns each is ~1 us, below a launch's own cost.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "aotc/plan/plan.h"

namespace aotc {

struct LaunchShapeRule {
  int64_t sms = 132;                    ///< blocks with work a large launch needs (0: no machine: nothing scheduled for one)
  int64_t maxSerial = 1024;             ///< most elements one thread may visit serially
  int64_t minBytes = int64_t{1} << 20;  ///< launches touching at most this many bytes are exempt
  bool operator==(const LaunchShapeRule&) const = default;
};

/// SMs of the largest part of an arch ("sm_90": H100 SXM, 132); 0 unknown.
int64_t archSmCount(const std::string& arch);

/// The rule for an artifact compiled for `archs`: the most SMs among them
/// (a grid that fills the largest part fills the smaller ones), or
/// `smOverride` when positive.
LaunchShapeRule launchShapeRuleFor(const std::vector<std::string>& archs, int64_t smOverride = 0);

/// Whether a launch of `w`'s shape keeps the rule.
bool launchShapeOk(const plan::LaunchWork& w, const LaunchShapeRule& r);

/// One line per launch of `p` that breaks the rule (or records no work):
/// "backward step 12 k_...: 4.0 MiB in 1 block with work (< 132)".
std::vector<std::string> launchShapeProblems(const plan::Program& p, const std::string& program, const LaunchShapeRule& r);

}  // namespace aotc
