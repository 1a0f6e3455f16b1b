//===- loss_scaling.cpp - Dynamic loss scaling, as GradScaler does it -----===//
//
// Note [Loss scaling]
// ~~~~~~~~~~~~~~~~~~~
// float16's range ends at 65504 and its normal numbers at 6e-5: the small
// gradients of an fp16 backward underflow to zero.  torch.cuda.amp's
// GradScaler multiplies the loss by a scale S (2^16 at first), so that the
// backward runs on S-times larger values, divides the parameters' gradients
// by S before the optimizer step (unscale_), skips the step when any of them
// is inf or NaN (found_inf), and adapts S (update): x0.5 after an overflow,
// x2 after 2000 clean steps in a row.
//
// `aotc compile --precision fp16` of a training program (or --loss-scaling
// dynamic) runs this pass on the joint graph, after autodiff: the program
// does all of it on the device, with no host synchronization.
//  * Three buffers join the inputs: `aotc.loss_scale` (f32[], S),
//    `aotc.growth_tracker` (i32[], clean steps since the last change) and
//    `aotc.found_inf` (f32[], 1 when this step overflowed).  The manifest's
//    `loss_scaling` entry names them and holds GradScaler's constants; a
//    runtime that is not given them starts from the initial scale, 0 and 0
//    (their initial values), and keeps them from step to step.
//  * Every floating tangent (the incoming gradient, 1 for a loss) is
//    multiplied by S first, in float32 and rounded to the tangent's dtype
//    (scaler.scale(loss): outputs * S).
//  * Every gradient the program returns is checked (inf or NaN: found_inf)
//    and multiplied by 1/S, float32 reciprocal of S taken in float64 as
//    GradScaler's inv_scale is (_amp_foreach_non_finite_check_and_unscale_);
//    it checks the scaled value, before the multiply.  Every gradient is
//    unscaled: this pass runs only when the artifact has no optimizer
//    (with one, GradScaler's step is the optimizer pass's, Note [Loss
//    scaling with an optimizer] in optimizer.cpp).
//    A float16 gradient is refused, as GradScaler refuses to unscale one
//    (keep the parameters float32: --precision fp16 casts them per step).
//  * The backward epilogue writes S and the tracker updated as
//    _amp_update_scale_ does, and found_inf: after_backward.<name>.
// When found_inf is 1 the gradients hold infs or NaNs and the caller skips
// its optimizer step, as scaler.step() does.  bfloat16 needs none of this
// (float32's range), so --precision bf16 does not scale.
//===----------------------------------------------------------------------===//
#include "grad_scaler.h"

namespace aotc {

namespace grad_scaler {

namespace {
TensorType scalarType(DType d) { return TensorType::contiguous(d, {}); }
}  // namespace

bool checkProgram(const Graph& g) {
  for (const char* name : {kLossScaleInput, kGrowthTrackerInput, kFoundInfInput})
    if (g.valueNamed(name) != kNoValue)
      throw UserError(SourceLoc{"", name, ""}, std::string("the name '") + name + "' is aotc's (loss scaling): rename the program's value");
  bool grads = false;
  for (const GraphOutput& o : g.outputs) {
    if (o.role != OutputRole::Grad) continue;
    grads = true;
    if (g.type(o.value).dtype == DType::F16)
      throw UserError(SourceLoc{"", o.target, ""},
                      "loss scaling: the gradient of '" + o.target +
                          "' is float16, and GradScaler refuses to unscale float16 gradients: keep the parameters float32 "
                          "(--precision fp16 casts them to float16 once per step) or compile with --loss-scaling none");
  }
  return grads;
}

State addStateInputs(Graph& g) {
  return {g.addInput(kLossScaleInput, scalarType(DType::F32), InputRole::Buffer, false),
          g.addInput(kGrowthTrackerInput, scalarType(DType::I32), InputRole::Buffer, false),
          g.addInput(kFoundInfInput, scalarType(DType::F32), InputRole::Buffer, false)};
}

ValueId scaleTangent(Builder& b, ValueId t, ValueId scale) {
  const DType d = b.type(t).dtype;
  if (d == DType::F64) {
    ValueId s = b.cast(scale, DType::F64);
    return b.mul(t, s);
  }
  ValueId wide = b.cast(t, DType::F32);
  ValueId scaled = b.mul(wide, scale);
  return b.cast(scaled, d);
}

ValueId invScale(Builder& b, ValueId scale) {
  ValueId wideScale = b.cast(scale, DType::F64);
  ValueId invWide = b.op(OpKind::Reciprocal, {wideScale});
  return b.cast(invWide, DType::F32);
}

ValueId nonFinite(Builder& b, ValueId v) {
  ValueId nan = b.op(OpKind::IsNan, {v});
  ValueId inf = b.op(OpKind::IsInf, {v});
  ValueId bad = b.cast(b.op(OpKind::LogicalOr, {nan, inf}), DType::F32);
  if (b.type(bad).rank() > 0) bad = b.op(OpKind::Amax, {bad}, Attrs{{"dim", Ints{}}, {"keepdim", false}});
  return bad;
}

std::pair<ValueId, ValueId> updateScale(Builder& b, const LossScaling& ls, const State& st, ValueId found) {
  const ValueId scale = st.scale, tracker = st.tracker;
  ValueId overflowed = b.op(OpKind::Gt, {found, b.scalar(0.0, DType::F32)});
  ValueId successful = b.add(tracker, b.scalar(1.0, DType::I32));
  ValueId atInterval = b.op(OpKind::Eq, {successful, b.scalar(static_cast<double>(ls.growth_interval), DType::I32)});
  ValueId grown = b.mul(scale, b.scalar(ls.growth_factor, DType::F32));
  ValueId grownNan = b.op(OpKind::IsNan, {grown});
  ValueId grownInf = b.op(OpKind::IsInf, {grown});
  ValueId grownBad = b.op(OpKind::LogicalOr, {grownNan, grownInf});
  ValueId grow = b.op(OpKind::LogicalAnd, {atInterval, b.op(OpKind::LogicalNot, {grownBad})});
  ValueId kept = b.op(OpKind::Where, {grow, grown, scale});
  ValueId backedOff = b.mul(scale, b.scalar(ls.backoff_factor, DType::F32));
  ValueId newScale = b.op(OpKind::Where, {overflowed, backedOff, kept});
  ValueId zero = b.scalar(0.0, DType::I32);
  ValueId counted = b.op(OpKind::Where, {atInterval, zero, successful});
  ValueId newTracker = b.op(OpKind::Where, {overflowed, zero, counted});
  return {newScale, newTracker};
}

}  // namespace grad_scaler

Graph lossScaling(const Graph& g, const LossScaling& ls) {
  if (!grad_scaler::checkProgram(g)) return g;

  Graph out;
  out.name = g.name;
  out.symbols = g.symbols;
  out.guards = g.guards;
  std::vector<ValueId> vmap(g.values.size(), kNoValue);
  for (const GraphInput& gi : g.inputs)
    vmap[gi.value] = out.addInput(g.values[gi.value].name, g.type(gi.value), gi.role, gi.requires_grad);
  const grad_scaler::State st = grad_scaler::addStateInputs(out);

  const SourceLoc loc{"", "loss_scaling", "GradScaler"};
  Builder b(out, loc, Phase::Backward);
  // scaler.scale(outputs): the tangents, in float32, rounded to their dtype.
  for (const GraphInput& gi : g.inputs)
    if (gi.role == InputRole::Tangent && isFloating(g.type(gi.value).dtype)) vmap[gi.value] = grad_scaler::scaleTangent(b, vmap[gi.value], st.scale);
  for (const Node& n : g.nodes) out.copyNode(g, n, vmap);

  // unscale_: found_inf over every gradient, then each times 1/S.
  const ValueId inv = grad_scaler::invScale(b, st.scale);
  ValueId found = kNoValue;
  std::vector<GraphOutput> outputs;
  for (GraphOutput o : g.outputs) {
    o.value = vmap[o.value];
    if (o.role == OutputRole::Grad && isFloating(out.type(o.value).dtype)) {
      const ValueId v = o.value;
      ValueId bad = grad_scaler::nonFinite(b, v);
      found = found == kNoValue ? bad : b.op(OpKind::Maximum, {found, bad});
      ValueId factor = b.cast(inv, out.type(v).dtype);
      o.value = b.mul(v, factor);
    }
    outputs.push_back(std::move(o));
  }
  if (found == kNoValue) found = b.scalar(0.0, DType::F32);

  // update(): _amp_update_scale_'s rule.
  const auto [newScale, newTracker] = grad_scaler::updateScale(b, ls, st, found);
  addNode(out, OpKind::EpilogueCopy, {st.scale, newScale}, {}, loc, Phase::Backward, kMustBeInBackward);
  addNode(out, OpKind::EpilogueCopy, {st.tracker, newTracker}, {}, loc, Phase::Backward, kMustBeInBackward);
  addNode(out, OpKind::EpilogueCopy, {st.found, found}, {}, loc, Phase::Backward, kMustBeInBackward);
  out.outputs = std::move(outputs);
  return out;
}

Graph lossScalingGradScaler(const Graph& g) { return lossScaling(g, LossScaling{}); }

Graph withLossScalingInputs(const Graph& functional) {
  Graph out = functional;
  grad_scaler::addStateInputs(out);
  return out;
}

}  // namespace aotc
