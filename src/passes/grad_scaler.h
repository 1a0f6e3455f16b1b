//===- grad_scaler.h - GradScaler's pieces, shared by two passes -*- C++ -*-===//
//
// Note [Loss scaling] (loss_scaling.cpp) builds GradScaler's scale, unscale_
// and update for a program that returns its gradients; Note [Loss scaling
// with an optimizer] (optimizer.cpp) builds the same pieces around the
// optimizer's step (skip on overflow, once per N micro-batches).  Both build
// them here, so that the two cannot round differently.
//===----------------------------------------------------------------------===//
#pragma once

#include <utility>

#include "aotc/ops/builder.h"
#include "aotc/passes/passes.h"

namespace aotc::grad_scaler {

/// The three state buffers: aotc.loss_scale, aotc.growth_tracker, aotc.found_inf.
struct State {
  ValueId scale, tracker, found;
};

/// Refuses a program whose values take the state's names, and a float16
/// gradient (GradScaler refuses to unscale one).  Whether it has gradients.
bool checkProgram(const Graph& g);
/// The three state buffers, appended to `g`'s inputs.
State addStateInputs(Graph& g);
/// scaler.scale(outputs): the tangent t times S, in float32 and rounded to
/// t's dtype (float64 in float64).
ValueId scaleTangent(Builder& b, ValueId t, ValueId scale);
/// unscale_'s inv_scale: the float32 of 1/S taken in float64.
ValueId invScale(Builder& b, ValueId scale);
/// f32[]: 1 when any element of v is inf or NaN, else 0.
ValueId nonFinite(Builder& b, ValueId v);
/// update(): _amp_update_scale_'s rule given found (f32[], > 0 when the step
/// overflowed): the new scale and growth tracker.
std::pair<ValueId, ValueId> updateScale(Builder& b, const LossScaling& ls, const State& st, ValueId found);

}  // namespace aotc::grad_scaler
