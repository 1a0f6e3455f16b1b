//===- passes.h - Engine passes: pure functions IR -> IR ---------*- C++ -*-===//
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "aotc/ir/ir.h"
#include "aotc/support/options.h"

namespace aotc {

/// Removes in-place ops and views of graph inputs.  Result: a functional graph
/// whose input mutations are trailing `epilogue_copy` nodes tagged
/// must_be_in_forward, and whose user outputs that alias an input carry the
/// input's name and the view chain that regenerates them.
Graph functionalize(const Graph& captured);

/// Reverse-mode differentiation of a functional graph into the joint graph
/// (primals, tangents) -> (user outputs, grads).  Backward nodes are tagged
/// #bw.  Every op that needs a gradient and has none is reported at once.
Graph autodiff(const Graph& functional);

/// After autodiff: replaces keep_grad and custom_grad (autograd-only
/// markers) by the values they stand for.
Graph stripAutogradMarkers(const Graph& joint);

/// Joint-graph functionalization: backward mutations (from custom
/// backwards) become pure ops and epilogue copies tagged must_be_in_backward;
/// a forward copy's source is must_save when the same input has both.
Graph functionalizeJoint(const Graph& joint);

/// Precision and its spellings: Note [Option names] (support/options.h).
const char* precisionName(Precision p);
std::optional<Precision> parsePrecision(const std::string& s);

/// Note [Autocast pass] (autocast.cpp): the functional forward graph as
/// torch.autocast("cuda", low) runs it; `low` is bf16 or f16, or none for
/// a graph whose autocast is its own regions' (Note [Autocast regions]).
Graph autocast(const Graph& functional, std::optional<DType> low);
/// Whether a node carries an autocast region's tag (Note [Autocast regions]).
bool hasAutocastRegions(const Graph& g);
Graph autocastBf16(const Graph& functional);
Graph autocastFp16(const Graph& functional);

/// Note [Loss scaling] (loss_scaling.cpp): torch.cuda.amp.GradScaler's
/// constants, and the names of the three state buffers the pass adds.
struct LossScaling {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool operator==(const LossScaling&) const = default;
};
/// Note [Optimizer step]: torch.optim's hyperparameters, their defaults
/// those of torch.optim (AdamW's weight decay 1e-2 is set by the CLI).
struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::None;
  double lr = 1e-3;
  double momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool amsgrad = false, maximize = false;
  bool keep_grads = false;  ///< the gradients stay outputs (grad.<name>)
  /// --grad-clip-norm: clip_grad_norm_ over every gradient the optimizer
  /// updates with (0: none).
  double clip_norm = 0;
  /// --accumulate N: gradient accumulation over N micro-batches, each
  /// step's gradients added into optim.<param>.grad_acc scaled by 1/N, the
  /// update applied every N-th step (Note [Gradient accumulation]).  1: none.
  int64_t accumulate = 1;
  /// --param-group: parameters whose names match one of `patterns` (globs,
  /// fnmatch) take this group's lr and weight decay; the first group that
  /// matches wins, the others are the default group (torch.optim's groups).
  struct Group {
    std::vector<std::string> patterns;
    std::optional<double> lr, weight_decay;
    bool operator==(const Group&) const = default;
  };
  std::vector<Group> groups;
  bool operator==(const OptimizerSpec&) const = default;
};
/// The prefix of the optimizer's state inputs: optim.<param>.<state>.
inline constexpr const char* kOptimizerStatePrefix = "optim.";
/// The learning rates, float64 0-dim inputs a schedule sets between steps:
/// the default group's, and the i-th --param-group's (from 1) when it has one.
inline constexpr const char* kOptimizerLrInput = "optim.lr";
/// The momentum (SGD with momentum) and beta1 (Adam, AdamW): float64 0-dim
/// inputs, as the learning rate, for schedules that cycle them (OneCycleLR's
/// cycle_momentum); every parameter group shares them.
inline constexpr const char* kOptimizerMomentumInput = "optim.momentum";
inline constexpr const char* kOptimizerBeta1Input = "optim.beta1";
/// The step count every parameter shares (float32 0-dim, as torch's).
inline constexpr const char* kOptimizerStepInput = "optim.step";
/// --accumulate: the micro-step counter (int32 0-dim, 0 .. N-1).
inline constexpr const char* kOptimizerMicroStepInput = "optim.micro_step";
inline std::string optimizerGroupLrInput(size_t i) { return "optim.param_group." + std::to_string(i) + ".lr"; }
/// The joint graph with an optimizer step in the backward epilogue: every
/// parameter the loss reaches updated as torch.optim's single-tensor
/// formula does, its state inputs added and updated.  Refuses a program
/// without gradients.  With `ls`, GradScaler's loss scaling around the step
/// (Note [Loss scaling with an optimizer]): the loss-scaling pass is not run.
Graph optimizerStep(const Graph& joint, const OptimizerSpec& spec, const std::optional<LossScaling>& ls = std::nullopt);
/// The functional graph with the optimizer's state inputs the joint has.
Graph withOptimizerInputs(const Graph& functional, const Graph& joint);
/// For golden tests (aotc-opt): SGD with lr 0.1, momentum 0.9, weight decay
/// 0.01, nesterov; AdamW with torch's defaults and amsgrad.
Graph optimizerSgdGolden(const Graph& joint);
Graph optimizerAdamWGolden(const Graph& joint);
/// SGD with momentum 0.9 (lr 0.1) accumulating over 4 micro-batches.
Graph optimizerSgdAccumulateGolden(const Graph& joint);
/// SGD with momentum 0.9 (lr 0.1), --accumulate 2, --grad-clip-norm 1 and
/// GradScaler's loss scaling.
Graph optimizerSgdAccumulateScaledGolden(const Graph& joint);
/// torch.optim's argument checks: the first problem, or empty.
std::string optimizerProblem(const OptimizerSpec& spec);

inline constexpr const char* kLossScaleInput = "aotc.loss_scale";          ///< f32[]: the scale S
inline constexpr const char* kGrowthTrackerInput = "aotc.growth_tracker";  ///< i32[]: clean steps in a row
inline constexpr const char* kFoundInfInput = "aotc.found_inf";            ///< f32[]: 1 when the step overflowed
/// The joint graph with dynamic loss scaling: tangents times S, every
/// gradient checked for inf/NaN and times 1/S, S updated in the backward
/// epilogue.  A graph without gradients comes back unchanged.
Graph lossScaling(const Graph& joint, const LossScaling& ls);
Graph lossScalingGradScaler(const Graph& joint);  ///< GradScaler's defaults
/// The functional graph with the three state inputs appended (unread there).
Graph withLossScalingInputs(const Graph& functional);

/// Removes nodes whose results nothing uses (epilogue copies are kept).
Graph dce(const Graph& g);
/// Note [Window offsets]: max-pool indices read only by max-pool backwards
/// become each window's offset of its maximum, in the narrowest integer.
Graph poolOffsets(const Graph& joint);

/// Forward and backward programs of a joint graph.
struct Partition {
  Graph forward;   ///< primals -> user outputs, then saved values (role saved)
  Graph backward;  ///< saved values, tangents -> grads
  std::vector<std::string> saved;  ///< names of the saved values, in order
};

/// `default`: the forward saves every forward value the backward reads.  A
/// saved primal that the forward epilogue overwrites is saved as a clone taken
/// before the epilogue (see Note [Saving mutated primals]).
Partition partitionDefault(const Graph& joint);

/// `min-cut`: max-flow/min-cut over the forward values (functorch's
/// min_cut_rematerialization_partition): save the cheapest set of values from
/// which the backward recomputes the rest with pointwise ops and views;
/// matmul, reductions and custom ops are never recomputed; must_save values
/// are saved; tags are hard constraints.
Partition partitionMinCut(const Graph& joint);

/// Note [Channels last] (src/passes/layout.cpp): stores the operands and
/// results of float16/bfloat16 convolutions, and the pointwise values
/// between them, channels-last, the same in both programs for a saved value.
Partition channelsLast(const Partition& p);
/// The same on one program (no backward: its saved outputs keep NCHW).
Graph channelsLast(const Graph& g);

/// Graph -> Graph passes by CLI name (aotc-opt --passes=...), from passes.def.
using GraphPass = Graph (*)(const Graph&);
GraphPass findPass(const std::string& name);
std::vector<std::string> passNames();

/// The whole engine pipeline, with a verifier after every stage.
struct PipelineOptions {
  Partitioner partitioner = Partitioner::MinCut;
  /// bf16 / fp16 run the autocast pass after functionalize.
  Precision precision = Precision::Fp32;
  /// Note [Loss scaling]: set, the joint graph scales its loss (after autodiff).
  std::optional<LossScaling> loss_scaling;
  /// Called after every stage with its name and result (dumps, --print-ir-after).
  std::function<void(const std::string&, const Graph&)> after_pass;
  /// Threads for the probes of a symbolic graph (Note [Symbolic pipeline]);
  /// the result does not depend on it.
  unsigned jobs = 1;
  /// Every symbol's probe degree, instead of the degrees the captured
  /// graph's sizes have (Note [Probe degree]); for tests of the retry at
  /// full degree.  The result does not depend on it.
  std::optional<int> probe_degree;
  /// Note [Channels last]: after partitioning a static graph.
  bool channels_last = true;
  /// Note [Optimizer step]: after autodiff (and loss scaling).
  OptimizerSpec optimizer;
};

/// The pipeline's graphs at one probe binding of a symbolic graph's symbols
/// (Note [Symbolic pipeline]).
struct ProbeResult {
  Graph functional;
  Partition partition;
};

struct PipelineResult {
  Graph functional;
  Graph joint;
  Partition partition;
  /// A symbolic graph's: the static graphs the unified ones were made from,
  /// one per probe binding (probeBindings order).  The code generator codes
  /// these rather than instantiating the unified graphs at the probes again;
  /// they are the same graphs (the fits are exact at the probes).  Empty for
  /// a static graph.
  std::vector<ProbeResult> probes;
};

PipelineResult runPipeline(const Graph& captured, const PipelineOptions& opts);
std::vector<std::string> partitionerNames();
/// The stages runPipeline reports to `after_pass`, in order.
std::vector<std::string> pipelineStageNames();

}  // namespace aotc
