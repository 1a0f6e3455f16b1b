//===- fusion.h - Which nodes share a kernel: the fusion plan ------*- C++ -*-===//
//
// The first stage of the CUDA code generator (Note [Codegen stages] in
// codegen/cuda/lowering.h): a pure function from a program to the decisions that say
// which node runs in which kernel.  The later stages (kernel text, extern
// calls, memory plan) read the plan; none of them decides fusion.  The plan
// prints as text, so it is tested from text IR like a pass
// (`aotc-opt FILE --fusion-plan`, testdata/fusion/).
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "aotc/codegen/launch_shape.h"
#include "aotc/ir/ir.h"

namespace aotc {

/// Note [Row groups]: a reduction, the reductions over the same dims of the
/// same shape that follow it, and the pointwise work around them -- softmax,
/// log_softmax, layer norm and its backward, batch-norm statistics and
/// normalization -- run as one kernel with a thread, a warp or a block per
/// row (a row is one coordinate of the kept dims; Note [Row kernels] in
/// fusion.cpp).  It computes each reduction in turn (a deterministic order
/// fixed by the text; Note [Reduction precision]), keeps row results in
/// registers, and writes only the values something outside the group reads.
/// Full-size values of the group are expressions, recomputed in each pass
/// over the row instead of going through memory; the row's own elements are
/// read once where they fit in registers (Note [Row cache]).
/// The kernel runs where the first reduction stood, so a node joins only
/// if everything it reads from outside the group exists by then.
struct RowGroup {
  int32_t seed = -1;
  Ints shape, dims, rowShape;
  int64_t rows = 0, nred = 0;
  std::vector<int32_t> members;  ///< program order, alias views included
  std::set<int32_t> memberSet;
  std::set<int32_t> exprNodes;   ///< full-size pointwise members
  std::set<ValueId> rowLevel;    ///< one value per row: registers
  std::set<ValueId> full;        ///< full-size values: expressions
  std::map<ValueId, ValueId> aliases;  ///< alias view value -> the value it aliases
  std::set<ValueId> materialized;
  std::set<int32_t> lowerViews;  ///< alias views something outside reads
  int64_t bytes = 0;             ///< what its kernel reads and writes (Note [Launch shape])
  int passes = 0;                ///< passes over a row: reductions, then the full-size stores
};

/// Note [Reduction schedules]: how a reduction kernel spreads its work.
/// Small reductions (fewer than sms x 256 elements in all, or no machine in
/// the rule: dynamic codegen) keep the legacy choice: one block per output
/// when rows are long, else one thread per output.  Larger ones are
/// scheduled for the machine (LaunchShapeRule) so that the launch keeps
/// Note [Launch shape]:
///  - Thread: one thread per output, serial over its (short) row;
///  - Row: one block per output (and split), threads stride over the row,
///    a shared-memory tree combines them;
///  - Column: the innermost dim is kept and contiguous: the 32 lanes of a
///    warp take 32 consecutive outputs, the block's 8 warps take every 8th
///    row of the block's chunk, and a shared-memory tree over the 8 combines
///    them (Note [Column reductions]).
/// `split` > 1 cuts the reduced extent into `split` chunks of `chunk`
/// elements: the first kernel writes one partial result per (chunk, output)
/// to a workspace the memory plan places, a second kernel combines each
/// output's partials in chunk order.  Fixed trees and a fixed order: the
/// same bits on every run, no atomics.
struct ReductionSchedule {
  enum Kind { Legacy, Thread, Row, Column } kind = Legacy;
  int64_t block = 256;  ///< threads per block
  int64_t split = 1;    ///< chunks of the reduced extent
  int64_t chunk = 0;    ///< elements per chunk (split > 1)
  int64_t blocks = 0;   ///< blocks with work of the first kernel
  int64_t serial = 0;   ///< most elements one thread visits
  bool operator==(const ReductionSchedule&) const = default;
};

/// The schedule of a reduction over `nred` elements for each of `outputs`
/// outputs; `column` when the innermost dim is kept and contiguous; `bytes`
/// what its kernel touches (at most rule.minBytes: Legacy).
ReductionSchedule scheduleReduction(int64_t nred, int64_t outputs, bool column, int64_t bytes, const LaunchShapeRule& rule);

/// The legacy choice: one block per output (else one thread per output),
/// Note [Column reductions] in kernels.cpp.
bool blockPerOutput(const TensorType& in, const Ints& dims, int64_t nred, int64_t outputs);
/// Whether the innermost non-1 dim of `in` is kept and contiguous.
bool columnWise(const TensorType& in, const Ints& dims);

/// How a row group's kernel is launched (Note [Row kernels] in fusion.cpp):
///  - Thread: one thread per row (short rows, and rows whose elements are a
///    row apart in memory: column sums), serial and in order;
///  - Warp: one warp per row, `rowsPerBlock` rows to a block, lanes combined
///    by warp shuffles;
///  - Block: one block per row, warps combined by shuffles and a shared
///    array of one partial per warp.
/// `cache` > 0: each thread keeps the `cache` elements of the row it visits
/// in registers, so the row is read from memory once (Warp and Block of a
/// static artifact, rows short enough); 0: every pass reads the row again.
struct RowGroupShape {
  enum Kind { Thread, Warp, Block } kind = Thread;
  bool perThread = false;  ///< kind == Thread
  int64_t block = 0, blocks = 0, serial = 0;
  int64_t rowsPerBlock = 1;  ///< Warp: rows per block (block / 32)
  int64_t cache = 0;         ///< elements of the row each thread keeps in registers
};
/// `cacheable`: the kernel may keep rows in registers (not in a dynamic-shape
/// artifact, whose row lengths are run-time values).
RowGroupShape rowGroupShape(const Ints& shape, const Ints& dims, int64_t rows, int64_t nred, int passes, bool large,
                            const LaunchShapeRule& rule, bool cacheable = true);

/// Every fusion decision for one program, indexed by node.
struct FusionPlan {
  /// Per node: computed inside its consumer's kernel (Note [Fusion by
  /// inlining]), or, for a slice/select scatter, not computed at all because
  /// its only reader is a region epilogue (Note [Region epilogues]).
  std::vector<bool> inlined;
  /// Note [GEMM bias epilogue]: add node -> (mm node, bias value), and the
  /// same pairs by mm node.
  std::map<int32_t, std::pair<int32_t, ValueId>> biasAdds;
  std::map<int32_t, ValueId> gemmBias;
  /// Note [GEMM relu epilogue]: relu node -> the mm whose bias epilogue
  /// also applies it, and those mm nodes.
  std::map<int32_t, int32_t> reluEpilogues;
  std::set<int32_t> gemmRelu;
  /// Note [GEMM scale]: a div or mul of a GEMM's product by a power of two
  /// -> the GEMM (mm or bmm) whose alpha it becomes; and the GEMM -> alpha.
  std::map<int32_t, int32_t> scaleOf;
  std::map<int32_t, double> gemmAlpha;
  /// Note [GEMM into its copy]: a GEMM -> the clone whose buffer it writes
  /// and the strides its product (or its scaled product) has there; and
  /// every node that write stands for (the clone, the views between, a
  /// scale) -> the GEMM.
  struct CopyTarget {
    int32_t copy = -1;
    Ints strides;
  };
  std::map<int32_t, CopyTarget> gemmInto;
  std::map<int32_t, int32_t> writtenByGemm;
  std::vector<RowGroup> groups;
  std::vector<int32_t> groupOf;  ///< per node, -1 when in none
  /// Note [Reduction schedules]: per reduction with a kernel of its own.
  std::map<int32_t, ReductionSchedule> schedules;
  /// Row groups left unformed because their kernel would break Note
  /// [Launch shape] (a few long rows: batch-norm statistics on large
  /// images, column sums): their members run as scheduled reductions and
  /// pointwise kernels.  The seed's node, for the printed plan.
  std::vector<int32_t> unformedGroups;
  /// Note [Welford moments]: a scheduled mean A and the mean B of the
  /// squared deviations from it, (x - A)^2 over the same dims of the same x
  /// (batch-norm statistics too large for a row group): one kernel reads x
  /// once and writes both.  A's node -> B's node.
  std::map<int32_t, int32_t> moments;
  /// Note [Sibling reductions]: scheduled Row or Column reductions of the same shape,
  /// dims and schedule whose operands all exist at the first of them (the
  /// sums of a batch norm's backward): one kernel at the first reads the
  /// operands once and writes every result.  First node -> the later ones.
  std::map<int32_t, std::vector<int32_t>> siblings;
  /// Note [Reductions that store their input]: a pointwise value stored
  /// for later readers and read by a scheduled Row or Column reduction (a
  /// Linear's bias gradient, the column sum of relu's masked gradient) is
  /// computed by the reduction's kernel, which stores it as it visits each
  /// element: its own kernel's write and the reduction's read of it are one
  /// pass.  The reduction's node -> the value's node.
  std::map<int32_t, int32_t> storesInput;
  /// Note [Cast groups]: casts that would each be a launch of their own,
  /// written by one multi-tensor kernel per (source dtype, destination
  /// dtype), launched before node `at`'s step (the node count: after the
  /// last).  Members in program order; castGroupOf: per node, the group's
  /// index or -1.
  struct CastGroup {
    int32_t at = -1;
    std::vector<int32_t> members;
    bool inputs = false;  ///< the operands are program inputs (through views)
  };
  std::vector<CastGroup> castGroups;
  std::vector<int32_t> castGroupOf;
};

/// `rule`: the machine reductions are scheduled for (Note [Reduction
/// schedules]); sms 0 keeps every reduction's legacy kernel.
FusionPlan planFusion(const Graph& g, const LaunchShapeRule& rule = {});

/// The plan as text, one line per node in program order and one per row
/// group: stable, for golden tests and `aotc-opt --fusion-plan`.
std::string printFusionPlan(const Graph& g, const FusionPlan& plan);

// Questions the stages share.

/// A slice/select scatter computed inside its consumer (Note [Scatter
/// expressions]).
bool isScatterExpr(OpKind k);
/// An op with a reduction row (Note [Reduction rows]).
bool isReduction(OpKind k);
/// Note [GEMM scale] and Note [GEMM into its copy] (gemm_outputs.cpp): adds
/// both to `plan`, after the bias and relu epilogues and before row groups.
void planGemmOutputs(const Graph& g, const UseInfo& u, FusionPlan& plan);

/// Note [Region epilogues]: the slice/select scatter an epilogue copy writes
/// only a region of, or -1.
int32_t regionSource(const Graph& g, const Node& copy);

}  // namespace aotc
