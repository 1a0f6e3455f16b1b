//===- optimizer.cpp - torch.optim's step as backward-epilogue mutations ---===//
//
// Note [Optimizer step]
// ~~~~~~~~~~~~~~~~~~~~~
// `aotc compile --train --optimizer sgd|adam|adamw` (issue 47) puts the
// optimizer step into the artifact.  In this compiler's own terms a step is
// a mutation of the parameters and of the optimizer's state performed in the
// backward: this pass, on the joint graph after autodiff (loss scaling
// included, Note [Loss scaling with an optimizer]), computes each update
// from the gradient and writes it with an epilogue copy tagged
// must_be_in_backward, exactly as a custom backward's mutation of a buffer
// is written (Note [Joint functionalization]).  The partitioner and the code
// generator then fuse the update with whatever else reads the gradient.
//
//  * Which parameters: every input of role parameter that requires grad and
//    whose gradient the loss reaches (the gradient depends on a tangent).
//    torch.optim skips a parameter whose .grad is None: no decay, no moment
//    update, no step; so does aotc for a parameter the loss does not reach.
//  * State, as inputs of role buffer named after the parameter:
//    optim.<p>.momentum_buffer (SGD with momentum), optim.<p>.exp_avg,
//    optim.<p>.exp_avg_sq, optim.<p>.max_exp_avg_sq (amsgrad), and one
//    step count for all, optim.step (float32 0-dim, as torch's step tensor;
//    torch keeps one per parameter, all equal in a static graph, so the
//    bias corrections are computed once; SGD keeps none in torch, aotc needs
//    it as the first-step flag of the momentum buffers).
//    Their initial values are zeros; the runtime keeps them from step to
//    step as it keeps every mutated input, and `aotc run` writes them as
//    after_backward.optim.<p>.<state>.
//  * The formulas are torch.optim's single-tensor, non-capturable ones
//    (torch/optim/sgd.py _single_tensor_sgd, adam.py _single_tensor_adam;
//    AdamW is Adam with decoupled weight decay, param * (1 - lr * wd) first).
//    Adam's bias corrections are taken in float64 from the step count, as
//    the plain formula takes them in Python floats, and the step size and
//    sqrt(bias_correction2) are then rounded to the parameter's dtype, as
//    ATen rounds a Python scalar operand.  The capturable formula (step size
//    folded into the denominator) rounds differently; aotc matches the plain
//    one, which is also the CPU baseline.
//  * The gradients are no longer outputs unless --keep-grads.
//
// Note [Gradient accumulation]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `--accumulate N` is eager's loop of N micro-batches, each
// `(loss / N).backward()`, then `opt.step(); opt.zero_grad()`:
//  * The tangents (the loss's incoming gradient) are divided by N before
//    the backward, as DivBackward divides the 1 that seeds it, so every
//    gradient rounds as eager's does (not the gradient times 1/N after).
//  * Each parameter the optimizer updates gets optim.<p>.grad_acc (the
//    gradient's dtype, zero-filled at run time like the other state) and
//    one counter for all, optim.micro_step (int32 0-dim, 0 .. N-1).  The
//    update reads acc + g (eager's p.grad += g; the first micro-batch's
//    0 + g is g exactly), clipped as clip_grad_norm_ clips before the step.
//  * Decided on the device with no host synchronization and no
//    re-capture: last = (micro_step == N-1), and every write the step makes
//    (parameters, momentum buffers, moments, optim.step) becomes
//    where(last, updated, old); grad_acc is written where(last, 0, acc + g)
//    and micro_step where(last, 0, micro_step + 1), last of all, since
//    every update reads them.  A parameter the loss does not reach, or one
//    that does not require grad, gets no accumulator and is not touched.
//  * Bytes: on the N-1 steps that do not update, this still moves what an
//    update moves, with the result its input: per updated parameter of
//    P elements in a dtype of B bytes, the parameter and each state tensor
//    read and written (SGD with momentum 2 * 2 * P * B, Adam 3 * 2 * P * B,
//    amsgrad 4 * 2 * P * B) on top of the accumulator's own read and write
//    (2 * P * B, which accumulation needs on every step).  A CUDA graph
//    conditional node (cudaGraphConditionalHandle set by a kernel from
//    micro_step) or a kernel that returns early when !last would skip those
//    bytes on N-1 of N steps, leaving the accumulator's 2 * P * B, and for
//    Adam the fused update's launch too; that is left for a session with a
//    GPU, as is timing it.  Measured by `aotc inspect --roofline --json`
//    on resnet18 (62 parameters, 44.7 MB float32) with AdamW: the backward's
//    optimizer launches move 357.8 MB in 190 launches without accumulation,
//    581.4 MB in 255 with --accumulate 4, on every micro-step (each
//    update's copy re-evaluates acc + g, so it reads the accumulator too,
//    and each accumulator is one more copy); what the N-1 steps need is
//    about 3 * 44.7 = 134 MB (accumulator read and written, gradient
//    read).
//
// Note [Loss scaling with an optimizer]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// With loss scaling (--precision fp16, or --loss-scaling dynamic) and an
// optimizer, the step is GradScaler's idiom, N micro-batches per step
// (N = 1 without --accumulate):
//     scaler.scale(loss / N).backward()           # each micro-batch
//     scaler.unscale_(opt); clip_grad_norm_(...)   # the N-th
//     scaler.step(opt); scaler.update(); opt.zero_grad()
// The loss-scaling pass (Note [Loss scaling]) unscales each gradient the
// backward returns; here the optimizer pass does GradScaler's part itself
// (the pipeline does not run that pass) and builds it from the same pieces
// (grad_scaler.h), so that the scale, the unscale and the update round as
// the loss-scaling pass's do:
//  * The tangents are times S first (scaler.scale), then divided by N
//    (DivBackward of loss / N runs after MulBackward of * S): S / N, as
//    eager seeds it.  S is only read during the N micro-steps, and written
//    once per N, so it is fixed across them.
//  * The accumulator holds the scaled sum, as p.grad does (the gradient's
//    dtype: float32 for float32 parameters; float16 gradients are refused
//    as the loss-scaling pass refuses them).  found_inf is checked once, at
//    the step, on acc + g, the accumulated still-scaled gradients of the
//    optimizer's parameters (unscale_(optimizer) checks those alone), and
//    each is then times 1/S (float32 of 1/S in float64, as inv_scale).  An
//    inf or NaN in any micro-batch's gradient leaves the sum non-finite
//    (inf + finite is inf, inf - inf and NaN + x are NaN), so this is the
//    OR of the micro-batches' flags and more: two finite scaled gradients
//    whose float32 sum overflows are found too, as eager finds them.
//  * Clipping (clip_grad_norm_) reads the unscaled gradients.
//  * The step applies when last && !found_inf: every write the optimizer
//    makes (parameters, moments, momentum buffers, optim.step) selects its
//    old value otherwise; scaler.step skips optimizer.step, the step count
//    with it.  The accumulators are cleared and the counter wraps on the
//    N-th micro-step whether the step applied or not (zero_grad).
//  * aotc.loss_scale and aotc.growth_tracker are updated as update() does,
//    on the N-th micro-step only; aotc.found_inf is written found_inf on the
//    N-th and 0 on the others: 1 exactly when this call skipped an update.
//    Their copies come after the optimizer's (which read S) and before the
//    accumulators' (which their update reads through found_inf).
//  * With --keep-grads, a parameter's gradient is what eager's p.grad holds
//    after the call: the scaled sum on the first N-1 micro-steps, unscaled
//    (and clipped) on the N-th.  A gradient that is not the optimizer's (an
//    input's) is unscaled, as the loss-scaling pass unscales it, and takes
//    no part in found_inf.
// No host synchronization: the skip is a select on the device.  Bytes,
// measured by `aotc inspect --roofline` on resnet18 (62 parameters, 44.7 MB
// float32) with AdamW and --accumulate 4: the backward moves 689 MB in 283
// launches without loss scaling, 779 MB in 314 with --loss-scaling dynamic,
// on every micro-step; the difference is mostly the found_inf reductions,
// which read each accumulated gradient (accumulator and gradient, 2 x 44.7
// MB) once more.  They are needed only on the N-th micro-step: the same
// conditional node or early return Note [Gradient accumulation] describes
// would skip them on the others.
//===----------------------------------------------------------------------===//
#include <fnmatch.h>

#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "aotc/ops/builder.h"
#include "aotc/passes/passes.h"
#include "grad_scaler.h"

namespace aotc {

std::string optimizerProblem(const OptimizerSpec& o) {
  auto bad = [](double v) { return !std::isfinite(v); };
  if (bad(o.lr) || o.lr < 0) return cat("--lr: invalid learning rate ", o.lr);
  if (bad(o.weight_decay) || o.weight_decay < 0) return cat("--weight-decay: invalid weight_decay value ", o.weight_decay);
  if (bad(o.clip_norm) || o.clip_norm < 0) return cat("--grad-clip-norm: invalid max norm ", o.clip_norm);
  if (o.accumulate < 1) return cat("--accumulate: the number of micro-batches must be at least 1, not ", o.accumulate);
  for (const OptimizerSpec::Group& grp : o.groups) {
    if (grp.patterns.empty()) return "--param-group: no name pattern";
    if (grp.lr && (bad(*grp.lr) || *grp.lr < 0)) return cat("--param-group: invalid learning rate ", *grp.lr);
    if (grp.weight_decay && (bad(*grp.weight_decay) || *grp.weight_decay < 0))
      return cat("--param-group: invalid weight_decay value ", *grp.weight_decay);
  }
  if (o.kind == OptimizerKind::Sgd) {
    if (bad(o.momentum) || o.momentum < 0) return cat("--momentum: invalid momentum value ", o.momentum);
    if (bad(o.dampening)) return cat("--dampening: invalid dampening value ", o.dampening);
    if (o.nesterov && (o.momentum <= 0 || o.dampening != 0)) return "--nesterov requires a momentum and zero dampening";
  } else if (o.kind != OptimizerKind::None) {
    if (bad(o.eps) || o.eps < 0) return cat("--eps: invalid epsilon value ", o.eps);
    if (bad(o.beta1) || o.beta1 < 0 || o.beta1 >= 1) return cat("--betas: invalid beta parameter at index 0: ", o.beta1);
    if (bad(o.beta2) || o.beta2 < 0 || o.beta2 >= 1) return cat("--betas: invalid beta parameter at index 1: ", o.beta2);
  }
  return "";
}

namespace {

TensorType scalarType(DType d) { return TensorType::contiguous(d, {}); }

/// The values that depend on a tangent (the incoming gradient).
std::vector<bool> reachedFromTangents(const Graph& g) {
  std::vector<bool> r(g.values.size(), false);
  for (const GraphInput& gi : g.inputs)
    if (gi.role == InputRole::Tangent) r[gi.value] = true;
  for (const Node& n : g.nodes) {
    bool any = false;
    for (ValueId v : n.inputs) any = any || (v != kNoValue && r[v]);
    if (any)
      for (ValueId v : n.outputs) r[v] = true;
  }
  return r;
}

/// torch's lerp with a scalar weight (ATen/native/Lerp.h): the weight in
/// the tensor's opmath type, self + w * (end - self) where |w| < 0.5, else
/// end - (end - self) * (1 - w), 1 - w computed in that type.  `w` is a
/// float64 0-dim value (a run-time input: Note [Run-time momentum]).
ValueId lerp(Builder& b, ValueId self, ValueId end, ValueId w64, DType d) {
  ValueId diff = b.sub(end, self);
  ValueId w = b.cast(w64, d);
  ValueId small = b.op(OpKind::Lt, {b.op(OpKind::Abs, {w}), b.scalar(0.5, d)});
  ValueId near = b.add(self, b.mul(w, diff));
  ValueId far = b.sub(end, b.mul(diff, b.sub(b.scalar(1.0, d), w)));
  return b.op(OpKind::Where, {small, near, far});
}

}  // namespace

Graph optimizerStep(const Graph& g, const OptimizerSpec& o, const std::optional<LossScaling>& ls) {
  if (o.kind == OptimizerKind::None) return g;
  if (std::string p = optimizerProblem(o); !p.empty()) throw UserError(SourceLoc{}, p);
  const std::string optName(optionName(o.kind));
  // The gradients of the parameters the loss reaches.
  const std::vector<bool> reached = reachedFromTangents(g);
  std::map<std::string, ValueId> grads;
  bool anyGrad = false;
  for (const GraphOutput& out : g.outputs) {
    if (out.role != OutputRole::Grad) continue;
    anyGrad = true;
    const GraphInput* in = g.inputNamed(out.target);
    if (in && in->role == InputRole::Parameter && in->requires_grad && reached[out.value]) grads[out.target] = out.value;
  }
  if (!anyGrad)
    throw UserError(SourceLoc{}, "--optimizer " + optName +
                                     ": the program computes no gradients (a training program: ONNX and .pt2 with --train; FX with "
                                     "parameters that require grad)");
  // Note [Loss scaling with an optimizer]: GradScaler's step is this pass's
  // own; a joint graph the loss-scaling pass already scaled would be scaled twice.
  if (g.inputNamed(kLossScaleInput))
    throw UserError(SourceLoc{"", kLossScaleInput, "input"},
                    "--optimizer " + optName + ": the joint graph is already loss-scaled; with an optimizer, the optimizer pass scales the loss");
  if (ls) grad_scaler::checkProgram(g);
  // A parameter the program itself mutates would be written twice.
  for (const Node& n : g.nodes)
    if (n.op == OpKind::EpilogueCopy && grads.count(g.values[n.inputs[0]].name))
      throw UserError(SourceLoc{"", g.values[n.inputs[0]].name, ""},
                      "--optimizer " + optName + ": the program mutates this parameter itself; the optimizer cannot also update it");
  for (const GraphInput& gi : g.inputs)
    if (g.values[gi.value].name.rfind(kOptimizerStatePrefix, 0) == 0)
      throw UserError(SourceLoc{"", g.values[gi.value].name, "input"},
                      std::string("the prefix '") + kOptimizerStatePrefix + "' is aotc's (the optimizer's state): rename the program's input");

  Graph out;
  out.name = g.name;
  out.symbols = g.symbols;
  out.guards = g.guards;
  std::vector<ValueId> vmap(g.values.size(), kNoValue);
  for (const GraphInput& gi : g.inputs)
    vmap[gi.value] = out.addInput(g.values[gi.value].name, g.type(gi.value), gi.role, gi.requires_grad);
  // Note [Loss scaling with an optimizer]: GradScaler's state first, where
  // the loss-scaling pass puts it.
  const std::optional<grad_scaler::State> scaler = ls ? std::optional(grad_scaler::addStateInputs(out)) : std::nullopt;
  // State inputs, in the order of the program's inputs.
  struct ParamState {
    std::string name;
    ValueId param, grad;
    ValueId buf = kNoValue, m = kNoValue, v = kNoValue, vmax = kNoValue;
    ValueId acc = kNoValue;  // --accumulate: the accumulated gradient
  };
  const bool accumulating = o.accumulate > 1;
  std::vector<ParamState> params;
  const bool sgd = o.kind == OptimizerKind::Sgd;
  for (const GraphInput& gi : g.inputs) {
    const std::string& name = g.values[gi.value].name;
    auto it = grads.find(name);
    if (it == grads.end()) continue;
    const TensorType t = g.type(gi.value);
    if (!isFloating(t.dtype))
      throw UserError(SourceLoc{"", name, "input"}, "--optimizer " + optName + ": the parameter is not floating point");
    ParamState ps{name, vmap[gi.value], kNoValue};
    const std::string pre = kOptimizerStatePrefix + name + ".";
    const TensorType dense = TensorType::contiguous(t.dtype, t.sizes);
    if (sgd) {
      if (o.momentum != 0) {
        ps.buf = out.addInput(pre + "momentum_buffer", dense, InputRole::Buffer, false);
      }
    } else {
      ps.m = out.addInput(pre + "exp_avg", dense, InputRole::Buffer, false);
      ps.v = out.addInput(pre + "exp_avg_sq", dense, InputRole::Buffer, false);
      if (o.amsgrad) ps.vmax = out.addInput(pre + "max_exp_avg_sq", dense, InputRole::Buffer, false);
    }
    if (accumulating)
      ps.acc = out.addInput(pre + "grad_acc", TensorType::contiguous(g.type(it->second).dtype, t.sizes), InputRole::Buffer, false);
    params.push_back(ps);
  }
  // One step count for every parameter (torch keeps one per parameter, and
  // in a static graph they are all equal): the first-step flag and the bias
  // corrections are computed once, not once per parameter.
  const ValueId stepIn = !params.empty() && (!sgd || o.momentum != 0)
                             ? out.addInput(kOptimizerStepInput, scalarType(DType::F32), InputRole::Buffer, false)
                             : kNoValue;
  const ValueId microIn =
      accumulating && !params.empty() ? out.addInput(kOptimizerMicroStepInput, scalarType(DType::I32), InputRole::Buffer, false) : kNoValue;
  // Note [Run-time momentum]: momentum (SGD) and beta1 (Adam, AdamW) are
  // float64 inputs as the learning rate is, so that OneCycleLR's
  // cycle_momentum sets them between steps (torch reads group['momentum']
  // and group['betas'][0] at every step): buf * momentum, nesterov's
  // grad + momentum * buf, exp_avg.lerp_(grad, 1 - beta1) and
  // 1 - beta1 ** step, each rounded as torch rounds its Python float.
  // Dampening, beta2, eps and weight decay stay compile-time constants.
  // An SGD artifact compiled without momentum has no buffer and no input.
  const ValueId momentumIn = sgd && o.momentum != 0 && !params.empty()
                                 ? out.addInput(kOptimizerMomentumInput, scalarType(DType::F64), InputRole::Buffer, false)
                                 : kNoValue;
  const ValueId beta1In =
      !sgd && !params.empty() ? out.addInput(kOptimizerBeta1Input, scalarType(DType::F64), InputRole::Buffer, false) : kNoValue;
  // optim.lr, and optim.param_group.<i>.lr for each --param-group with its own.
  std::vector<ValueId> lrInputs{out.addInput(kOptimizerLrInput, scalarType(DType::F64), InputRole::Buffer, false)};
  for (size_t gi = 0; gi < o.groups.size(); ++gi)
    lrInputs.push_back(o.groups[gi].lr ? out.addInput(optimizerGroupLrInput(gi + 1), scalarType(DType::F64), InputRole::Buffer, false)
                                       : kNoValue);
  const SourceLoc loc{"", "optimizer", "torch.optim." + std::string(sgd ? "SGD" : o.kind == OptimizerKind::Adam ? "Adam" : "AdamW")};
  Builder b(out, loc, Phase::Backward);
  const SourceLoc scalerLoc{"", "loss_scaling", "GradScaler"};
  Builder sb(out, scalerLoc, Phase::Backward);
  // Note [Loss scaling with an optimizer]: scaler.scale(loss / N), the
  // incoming gradient times S first, then divided by N below.
  if (scaler)
    for (const GraphInput& gi : g.inputs)
      if (gi.role == InputRole::Tangent && isFloating(g.type(gi.value).dtype))
        vmap[gi.value] = grad_scaler::scaleTangent(sb, vmap[gi.value], scaler->scale);
  // Note [Gradient accumulation]: (loss / N).backward(), the incoming
  // gradient divided by N as DivBackward divides it, before the backward.
  if (microIn != kNoValue)
    for (const GraphInput& gi : g.inputs) {
      if (gi.role != InputRole::Tangent || !isFloating(g.type(gi.value).dtype)) continue;
      const ValueId t = vmap[gi.value];
      vmap[gi.value] = b.div(t, b.scalar(static_cast<double>(o.accumulate), out.type(t).dtype));
    }
  for (const Node& n : g.nodes) out.copyNode(g, n, vmap);

  // The gradient each update reads: this micro-batch's added into the
  // accumulator (p.grad += g: the first micro-batch's 0 + g is g exactly).
  std::map<std::string, ValueId> gradOf;
  for (const ParamState& ps : params) {
    ValueId gv = vmap[grads.at(ps.name)];
    gradOf[ps.name] = ps.acc == kNoValue ? gv : b.add(ps.acc, gv);
  }
  // Note [Loss scaling with an optimizer]: unscale_ on what p.grad holds at
  // the step (the accumulated, still scaled, sum): found_inf over the
  // optimizer's gradients, each times 1/S; the step reads the unscaled ones.
  std::map<std::string, ValueId> stepGrad = gradOf;
  ValueId found = kNoValue;
  const ValueId inv = scaler ? grad_scaler::invScale(sb, scaler->scale) : kNoValue;
  if (scaler) {
    for (const ParamState& ps : params) {
      const ValueId v = gradOf.at(ps.name);
      ValueId bad = grad_scaler::nonFinite(sb, v);
      found = found == kNoValue ? bad : sb.op(OpKind::Maximum, {found, bad});
      stepGrad[ps.name] = sb.mul(v, sb.cast(inv, out.type(v).dtype));
    }
  }
  // clip_grad_norm_: the 2-norm of the gradients' 2-norms (float32 for
  // float32 gradients), each gradient times min(max / (norm + 1e-6), 1).
  std::map<std::string, ValueId> clipped;
  if (o.clip_norm > 0 && !params.empty()) {
    ValueId squares = kNoValue;
    for (const ParamState& ps : params) {
      ValueId gv = stepGrad.at(ps.name);
      ValueId g32 = b.cast(gv, DType::F32);
      ValueId norm = b.op(OpKind::Sqrt, {b.op(OpKind::Sum, {b.mul(g32, g32)}, Attrs{{"dim", Ints{}}, {"keepdim", false}})});
      ValueId sq = b.mul(norm, norm);
      squares = squares == kNoValue ? sq : b.add(squares, sq);
    }
    ValueId total = b.op(OpKind::Sqrt, {squares});
    ValueId maxNorm = b.scalar(o.clip_norm, DType::F32);
    ValueId eps6 = b.scalar(1e-6, DType::F32);
    ValueId coef = b.div(maxNorm, b.add(total, eps6));
    ValueId clamped = b.op(OpKind::Minimum, {coef, b.scalar(1.0, DType::F32)});
    for (const ParamState& ps : params) {
      ValueId gv = stepGrad.at(ps.name);
      clipped[ps.name] = b.mul(gv, b.cast(clamped, out.type(gv).dtype));
    }
  }
  // The copies go last, and in an order in which no copy reads what an
  // earlier one wrote: an update's expression is re-evaluated in each
  // kernel that reads it (Note [Epilogue after reads] in fusion.cpp), and
  // the parameter's reads every state, max_exp_avg_sq's reads exp_avg_sq,
  // and every Adam update reads the step.  So: parameters, max_exp_avg_sq,
  // exp_avg, exp_avg_sq, momentum_buffer, step.
  // Then GradScaler's state (its update reads the accumulators), then the
  // accumulators and the micro-step counter, which every write above reads.
  enum Order { kParam, kVmax, kM, kV, kBuf, kStep, kScaler, kAcc, kOrders };
  std::vector<std::pair<ValueId, ValueId>> writes[kOrders];
  auto write = [&](ValueId dst, ValueId src, Order o) { writes[o].emplace_back(dst, src); };
  // What every parameter shares, computed once: the step, the first-step
  // flag, the bias corrections, and per learning rate and dtype the step
  // size and sqrt(bias_correction2).
  ValueId first = kNoValue, step = kNoValue, bc1 = kNoValue, bc2 = kNoValue;
  if (stepIn != kNoValue) {
    step = b.add(stepIn, b.scalar(1.0, DType::F32));
    write(stepIn, step, kStep);
    if (sgd) {
      first = b.op(OpKind::Eq, {stepIn, b.scalar(0.0, DType::F32)});
    } else {
      // Bias corrections in float64 from the step count, as Python floats.
      ValueId step64 = b.cast(step, DType::F64);
      ValueId one64 = b.scalar(1.0, DType::F64);
      ValueId beta1Pow = b.op(OpKind::Pow, {beta1In, step64});
      bc1 = b.sub(one64, beta1Pow);
      ValueId beta2Pow = b.op(OpKind::Pow, {b.scalar(o.beta2, DType::F64), step64});
      bc2 = b.sub(one64, beta2Pow);
    }
  }
  std::map<std::pair<ValueId, DType>, std::pair<ValueId, ValueId>> adamScalars;  // (lr, dtype) -> (-step size, sqrt(bc2))
  std::map<std::pair<ValueId, DType>, ValueId> negLr;
  std::map<std::tuple<ValueId, double, DType>, ValueId> decay;
  std::map<DType, ValueId> momentumOf;  // the momentum in each parameter dtype
  const ValueId oneMinusBeta1 = beta1In == kNoValue ? kNoValue : b.sub(b.scalar(1.0, DType::F64), beta1In);
  for (ParamState& ps : params) {
    const ValueId P = ps.param;
    const DType d = out.type(P).dtype;
    auto s = [&](double x) { return b.scalar(x, d); };
    // torch.optim's parameter groups: this parameter's lr and weight decay.
    // The learning rate is an input (float64, as torch's Python float), so
    // that a schedule sets it between steps without a recompile.
    ValueId lrIn = lrInputs.at(0);
    double wd = o.weight_decay;
    for (size_t gi = 0; gi < o.groups.size(); ++gi) {
      const OptimizerSpec::Group& grp = o.groups[gi];
      bool match = false;
      for (const std::string& pat : grp.patterns) match = match || ::fnmatch(pat.c_str(), ps.name.c_str(), 0) == 0;
      if (!match) continue;
      if (grp.lr) lrIn = lrInputs.at(gi + 1);
      wd = grp.weight_decay.value_or(wd);
      break;
    }
    ValueId grad = clipped.count(ps.name) ? clipped.at(ps.name) : stepGrad.at(ps.name);
    if (o.maximize) grad = b.neg(grad);
    ValueId newP;
    if (sgd) {
      if (wd != 0) grad = b.add(grad, b.mul(s(wd), P));  // grad.add(param, alpha=wd)
      if (o.momentum != 0) {
        // buf = grad on the first step; else buf * momentum + (1 - dampening) * grad.
        auto [mit, mfresh] = momentumOf.try_emplace(d, kNoValue);
        if (mfresh) mit->second = b.cast(momentumIn, d);
        ValueId kept = b.mul(ps.buf, mit->second);
        ValueId fresh = b.mul(s(1.0 - o.dampening), grad);
        ValueId later = b.add(kept, fresh);
        ValueId nb = b.op(OpKind::Where, {first, grad, later});
        write(ps.buf, nb, kBuf);
        grad = o.nesterov ? b.add(grad, b.mul(mit->second, nb)) : nb;
      }
      auto [it, fresh] = negLr.try_emplace({lrIn, d}, kNoValue);
      if (fresh) it->second = b.cast(b.neg(lrIn), d);
      newP = b.add(P, b.mul(it->second, grad));  // param.add_(grad, alpha=-lr)
    } else {
      ValueId base = P;
      if (wd != 0) {
        if (o.kind == OptimizerKind::AdamW) {  // param.mul_(1 - lr * wd), the factor in float64
          auto [it, fresh] = decay.try_emplace({lrIn, wd, d}, kNoValue);
          if (fresh) {
            ValueId one64 = b.scalar(1.0, DType::F64);
            ValueId lrWd = b.mul(lrIn, b.scalar(wd, DType::F64));
            it->second = b.cast(b.sub(one64, lrWd), d);
          }
          base = b.mul(P, it->second);
        } else {
          grad = b.add(grad, b.mul(s(wd), P));
        }
      }
      ValueId m = lerp(b, ps.m, grad, oneMinusBeta1, d);  // exp_avg.lerp_(grad, 1 - beta1)
      // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
      ValueId vKept = b.mul(ps.v, s(o.beta2));
      ValueId oneMinusBeta2 = s(1.0 - o.beta2);
      ValueId g2 = b.mul(grad, grad);
      ValueId v = b.add(vKept, b.mul(oneMinusBeta2, g2));
      write(ps.m, m, kM);
      write(ps.v, v, kV);
      auto [it, fresh] = adamScalars.try_emplace({lrIn, d}, kNoValue, kNoValue);
      if (fresh) it->second = {b.cast(b.div(b.neg(lrIn), bc1), d), b.cast(b.op(OpKind::Sqrt, {bc2}), d)};
      const auto [negStepSize, bc2Sqrt] = it->second;
      ValueId second = v;
      if (o.amsgrad) {
        second = b.op(OpKind::Maximum, {ps.vmax, v});
        write(ps.vmax, second, kVmax);
      }
      ValueId scaled = b.div(b.op(OpKind::Sqrt, {second}), bc2Sqrt);
      ValueId denom = b.add(scaled, s(o.eps));
      newP = b.add(base, b.div(b.mul(negStepSize, m), denom));  // param.addcdiv_(exp_avg, denom, value=-step_size)
    }
    write(P, b.cast(newP, d), kParam);
  }
  // Note [Gradient accumulation]: every write selects the update on the
  // N-th micro-step and the old value on the others; the accumulators are
  // cleared on the N-th and the counter wraps, written last (they are read
  // by every update above).
  // Note [Loss scaling with an optimizer]: and only when no gradient
  // overflowed (scaler.step skips optimizer.step, step count included).
  ValueId last = kNoValue;
  if (microIn != kNoValue) last = b.op(OpKind::Eq, {microIn, b.scalar(static_cast<double>(o.accumulate - 1), DType::I32)});
  ValueId apply = last;
  if (scaler) {
    if (found == kNoValue) found = sb.scalar(0.0, DType::F32);
    ValueId clean = sb.op(OpKind::LogicalNot, {sb.op(OpKind::Gt, {found, sb.scalar(0.0, DType::F32)})});
    apply = last == kNoValue ? clean : sb.op(OpKind::LogicalAnd, {last, clean});
  }
  if (apply != kNoValue)
    for (auto& group : writes)
      for (auto& [dst, src] : group) src = b.op(OpKind::Where, {apply, src, dst});
  if (microIn != kNoValue) {
    for (const ParamState& ps : params) {
      ValueId zeros = b.zeros(out.type(ps.acc));
      writes[kAcc].emplace_back(ps.acc, b.op(OpKind::Where, {last, zeros, gradOf.at(ps.name)}));
    }
    ValueId next = b.add(microIn, b.scalar(1.0, DType::I32));
    writes[kAcc].emplace_back(microIn, b.op(OpKind::Where, {last, b.scalar(0.0, DType::I32), next}));
  }
  // scaler.update() once per N micro-steps; aotc.found_inf is 1 exactly
  // when this micro-step's update was skipped.
  if (scaler) {
    auto [newScale, newTracker] = grad_scaler::updateScale(sb, *ls, *scaler, found);
    ValueId shownFound = found;
    if (last != kNoValue) {
      newScale = sb.op(OpKind::Where, {last, newScale, scaler->scale});
      newTracker = sb.op(OpKind::Where, {last, newTracker, scaler->tracker});
      shownFound = sb.op(OpKind::Where, {last, found, sb.scalar(0.0, DType::F32)});
    }
    writes[kScaler] = {{scaler->scale, newScale}, {scaler->tracker, newTracker}, {scaler->found, shownFound}};
  }
  for (int group = 0; group < kOrders; ++group)
    for (auto [dst, src] : writes[group])
      addNode(out, OpKind::EpilogueCopy, {dst, src}, {}, group == kScaler ? scalerLoc : loc, Phase::Backward, kMustBeInBackward);
  for (GraphOutput r : g.outputs) {
    if (r.role == OutputRole::Grad && !o.keep_grads) continue;
    r.value = vmap[r.value];
    if (r.role == OutputRole::Grad && gradOf.count(r.target) && scaler) {
      // Scaled while it accumulates, unscaled (and clipped) by the step.
      const ValueId acc = gradOf.at(r.target);
      const ValueId shown = clipped.count(r.target) ? clipped.at(r.target) : stepGrad.at(r.target);
      r.value = last == kNoValue ? shown : b.op(OpKind::Where, {last, shown, acc});
    } else if (r.role == OutputRole::Grad && scaler && isFloating(out.type(r.value).dtype)) {
      r.value = sb.mul(r.value, sb.cast(inv, out.type(r.value).dtype));  // not the optimizer's: unscaled, as loss scaling alone does
    } else if (r.role == OutputRole::Grad && gradOf.count(r.target)) {
      // What eager's p.grad holds after this micro-step: the accumulated
      // gradient, clipped on the step that clips it.
      const ValueId acc = gradOf.at(r.target);
      if (clipped.count(r.target))
        r.value = last == kNoValue ? clipped.at(r.target) : b.op(OpKind::Where, {last, clipped.at(r.target), acc});
      else
        r.value = acc;
    }
    out.outputs.push_back(std::move(r));
  }
  return out;
}

Graph optimizerSgdGolden(const Graph& joint) {
  OptimizerSpec o;
  o.kind = OptimizerKind::Sgd;
  o.lr = 0.1;
  o.momentum = 0.9;
  o.weight_decay = 0.01;
  o.nesterov = true;
  return optimizerStep(joint, o);
}

Graph optimizerAdamWGolden(const Graph& joint) {
  OptimizerSpec o;
  o.kind = OptimizerKind::AdamW;
  o.weight_decay = 1e-2;
  o.amsgrad = true;
  return optimizerStep(joint, o);
}

namespace {
/// The accumulating golden passes' SGD: lr 0.1, momentum 0.9, N micro-batches.
OptimizerSpec accumulatingSgd(int64_t n) {
  OptimizerSpec o;
  o.kind = OptimizerKind::Sgd;
  o.lr = 0.1;
  o.momentum = 0.9;
  o.accumulate = n;
  return o;
}
}  // namespace

Graph optimizerSgdAccumulateGolden(const Graph& joint) { return optimizerStep(joint, accumulatingSgd(4)); }

Graph optimizerSgdAccumulateScaledGolden(const Graph& joint) {
  OptimizerSpec o = accumulatingSgd(2);
  o.clip_norm = 1.0;
  return optimizerStep(joint, o, LossScaling{});
}

Graph withOptimizerInputs(const Graph& functional, const Graph& joint) {
  Graph out = functional;
  for (const GraphInput& gi : joint.inputs) {
    const std::string& name = joint.values[gi.value].name;
    if (name.rfind(kOptimizerStatePrefix, 0) == 0 && !out.inputNamed(name)) out.addInput(name, joint.type(gi.value), gi.role, gi.requires_grad);
  }
  return out;
}

}  // namespace aotc
