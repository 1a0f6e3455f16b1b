//===- lowering.h - The CUDA code generator's stages, inside codegen -*- C++ -*-===//
//
// Note [Codegen stages]: a program becomes a typed plan (Note [Typed plan])
// in four stages, each in its own file, each reading the ones before:
//   1. fusion plan   (fusion.cpp, aotc/codegen/fusion.h): which node runs in
//                    which kernel; prints as text, tested from text IR;
//   2. kernel text   (kernels.cpp, KernelEmitter): the CUDA C++ of fused
//                    pointwise kernels, reductions, row groups, fills and the
//                    element kernels whose bodies are op rows' (Note [Op rows]);
//   3. extern calls  (extern_calls.cpp): cuBLAS GEMMs and cuDNN convolutions,
//                    with the dense copies of operands they cannot address;
//   4. memory plan   (plan::planArena in src/plan/plan.cpp, shared with the
//                    runtimes, which plan a dynamic-shape artifact's arenas
//                    at the sizes they bind): arena offsets from lifetimes.
// cuda_emit.cpp walks the program once in order and asks stages 2 and 3 for
// each node's step; ProgramBuilder holds what the walk accumulates (buffers,
// steps, the kernel table).  Every size a kernel's text contains is written
// by stage 2 or by an op row's body; extern calls and the memory plan carry
// sizes as plan fields.
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "aotc/codegen/codegen.h"
#include "aotc/codegen/fusion.h"

namespace aotc::cudagen {

constexpr int kBlock = 256;

/// The buffers and steps of one program as the walk builds them, and the
/// kernel table they share with the other program.
struct ProgramBuilder {
  const Graph& g;
  std::map<std::string, KernelSource>& kernels;
  std::vector<plan::Buffer> buffers;
  std::vector<plan::Step> steps;
  std::vector<std::string> root;          ///< root buffer per value ("" until declared)
  std::map<ValueId, std::string> dense;   ///< value -> its dense copy's buffer
  std::map<ValueId, std::string> nhwc;    ///< value -> its NHWC-packed copy's buffer (a convolution's filter)
  /// Note [Dynamic codegen]: the program whose sizes decide (null: `g`'s own)
  /// and its fusion plan; per step, a launch's {threads, per} grid rule.
  const Graph* decide = nullptr;
  const FusionPlan* decidePlan = nullptr;
  std::vector<std::pair<int64_t, int64_t>> grids;
  /// Per step: the nodes it computes (CodegenResult::forwardStepNodes).
  std::vector<std::vector<int32_t>> stepNodes;
  /// Note [Launch shape]: the machine launches are shaped for (sms 0 in
  /// a dynamic-shape artifact: the legacy shapes, no work recorded).
  LaunchShapeRule rule;

  ProgramBuilder(const Graph& graph, std::map<std::string, KernelSource>& k)
      : g(graph), kernels(k), root(graph.values.size()) {}
  bool dynamic() const { return decide != nullptr; }
  void presetWide(bool w) { wide_ = w; }

  static plan::Layout layout(const TensorType& t) { return plan::Layout{t.dtype, t.sizes, t.strides, t.offset}; }

  /// Declares value `v`'s buffer: an input (its role), a view of `base`, or
  /// an allocation of its storage span; an input or allocation is its own root.
  void declare(ValueId v, plan::BufferKind kind, const std::string& roleOrBase = "");
  /// Declares value `v` as a view of root buffer `base` with layout `t`
  /// rather than its IR type's (Note [GEMM into its copy]).
  void declareView(ValueId v, const std::string& base, const TensorType& t);
  /// Declares the buffer of a view (and of the views it is a view of): at its
  /// place in the program, or ahead of it for a row group's kernel that
  /// reads it.
  void ensureView(ValueId v);

  /// A launch of max(1, ceil(threads / per)) blocks of `block` threads;
  /// `work` recorded in a static artifact (Note [Launch shape]).
  void pushLaunch(const std::string& kernel, int64_t threads, int64_t per, int64_t block, std::vector<std::string> args,
                  const plan::LaunchWork& work);
  /// One thread per unit of `threads` (each visiting at most `serial`
  /// elements): out (or `outRoot`), then `args`.  Blocks of 256 threads, or
  /// fewer when a large launch would otherwise leave SMs without one.
  void launch(const std::string& kernel, const std::vector<ValueId>& args, ValueId out, int64_t threads,
              const std::string& outRoot = "", int64_t serial = 1);
  /// Note [Pointwise grids]: a pointwise kernel of `threads` threads, each
  /// `vector` elements wide; `strided`: its text strides over the grid, which
  /// is then capped at strideThreads() threads.
  void launchPointwise(const std::string& kernel, const std::vector<ValueId>& args, ValueId out, int64_t threads, int64_t vector,
                       bool strided, const std::string& outRoot = "");
  /// The threads of a grid-stride pointwise launch: twice what the target's
  /// SMs hold at once (0 without a machine: one thread per unit).
  int64_t strideThreads() const { return dynamic() || rule.sms <= 0 ? 0 : rule.sms * kResidentThreads * 2; }
  static constexpr int64_t kResidentThreads = 2048;  ///< threads an SM holds (sm_70 to sm_90)
  /// Launch with every output then every input as arguments.
  void launchAll(const std::string& kernel, const Node& n, int64_t threads, int64_t serial = 1);
  /// Bytes of values' tensors (Note [Launch shape]).
  int64_t bytes(const std::vector<ValueId>& vs) const;
  /// Threads per block for `threads` threads of one unit each, touching `bytes`.
  int64_t unitBlock(int64_t threads, int64_t bytes) const;

  /// Adds a kernel's text to the table (Note [Kernel text]); returns its name.
  /// `ids`: the nodes of `g` it computes, given to the next launch.
  std::string addKernel(std::string body, const std::vector<std::string>& who, const std::vector<int32_t>& ids = {});
  /// Gives steps pushed since the last call without nodes the node `idx`.
  void attributeSteps(int32_t idx);
  /// Note [32-bit indexing].
  bool wideIndex();

 private:
  std::map<std::string, std::set<std::string>> kernelNodes_;  // kernel -> the nodes it serves, for dedup
  std::optional<bool> wide_;
  std::vector<int32_t> pendingNodes_;  // addKernel's ids, for the next pushLaunch
};

/// The user's name for a node (its op when it has none).
std::string nodeName(const Node& n);
/// Note [Reductions that store their input] (fusion.cpp): the node whose
/// value reduction `r`'s kernel computes and stores, or -1.  Static artifacts'
/// Row and Column schedules only; the emitter, which then skips that node's
/// own launch, and the reduction's kernel, which writes it, both ask here.
int32_t storedInputOf(const FusionPlan& plan, int32_t r, bool dynamic);

/// A reduction of a tensor over some dims: the kept sizes (reduced dims 1),
/// the reduced dims in order, and the elements each output reduces.
struct Reduced {
  Ints kept, dims;
  int64_t n = 1;
};

/// Stage 2: kernel text.
class KernelEmitter {
 public:
  KernelEmitter(ProgramBuilder& b, const FusionPlan& plan) : b_(b), g(b.g), plan_(plan) {}

  struct Kernel {
    std::string name;
    std::vector<ValueId> leaves;  ///< its operands after the output
    int64_t threads = 0;          ///< threads to launch
    int64_t per = kBlock, block = kBlock;  ///< grid = ceil(threads / per) blocks of `block`
    int64_t serial = 1;           ///< Note [Launch shape]
    int64_t split = 1;
    int64_t vector = 1;    ///< elements per thread and access (Note [Vectorized access])
    bool strided = false;  ///< a grid-stride loop (Note [Pointwise grids])
    /// A split reduction (Note [Reduction schedules]): the first kernel
    /// writes partials of type `workspace` (split x outputs) to a buffer of
    /// their own; `combine`, one thread per output, reads them and writes out.
    std::string combine;
    DType workspace = DType::F64;
    /// Note [Reductions that store their input]: values the (first) kernel
    /// also writes, parameters after the operands.
    std::vector<ValueId> stores;
  };
  /// A (fused) elementwise kernel: out, with layout `ot`, = root's value.
  Kernel pointwise(const Node& root, const TensorType& ot);
  /// A reduction, its input's expression computed in the loop.
  Kernel reduction(const Node& n);
  /// Note [Welford moments]: the mean `a` and the variance `b` of one x,
  /// read once (FusionPlan::moments).
  Kernel moments(const Node& a, const Node& b);
  /// Note [Sibling reductions]: the reductions `ns` (FusionPlan::siblings)
  /// in one kernel; `outputs` results, a split one's workspace holding
  /// ns.size() partials per (chunk, output).
  Kernel siblings(const std::vector<const Node*>& ns);
  /// Note [Cast groups]: the casts `ns` (FusionPlan::castGroups) in one
  /// kernel: outputs out0.., then operands in0..; each tensor its own run of
  /// blocks, one element per thread.  `threads`: blocks x block.
  Kernel castGroup(const std::vector<const Node*>& ns);
  /// A row group's kernel (Note [Row groups]), launched at its seed.
  struct GroupKernel {
    std::string name;
    std::vector<ValueId> outs, leaves;
    int64_t threads = 0, per = 1, block = 0;  ///< grid = ceil(threads / per)
    int64_t blocks = 0, serial = 0;           ///< Note [Launch shape]
  };
  GroupKernel rowGroup(const RowGroup& G);
  /// A kernel with one thread per element of output 0 (dense), around an op
  /// row's body.
  std::string element(const Node& n, const std::string& body, int64_t threads = -1);
  /// A fill of output 0 with the node's `value`.
  std::string constant(const Node& n);

 private:
  struct ExprCtx;
  Kernel scheduledReduction(const Node& n, const ReductionSchedule& s, ExprCtx& x, const std::string& v, const Reduced& r);
  Kernel scheduledKernel(const std::string& text, const ExprCtx& x, const ReductionSchedule& s);
  std::string emitValue(ValueId v, const Ints& shape, const std::vector<std::string>& c, ExprCtx& x);
  std::string scatterExpr(const Node& n, const Ints& shape, const std::vector<std::string>& c, ExprCtx& x);
  bool computedInline(int32_t node, const ExprCtx& x) const;
  void noteNode(ExprCtx& x, const Node& n);
  std::string kernelHeader(const std::vector<std::string>& ops, DType outType, const std::vector<ValueId>& leaves,
                           const std::vector<ValueId>& stores = {});
  std::string storedInput(const Node& n, int32_t producer, const std::vector<std::string>& c, ExprCtx& x);

  ProgramBuilder& b_;
  const Graph& g;
  const FusionPlan& plan_;
};

/// Stage 3: mm (d = 0) and bmm (d = 1) as cuBLAS calls; a bias epilogue
/// when the fusion plan gave the mm one.
void lowerGemm(ProgramBuilder& b, KernelEmitter& k, const FusionPlan& plan, const Node& n, size_t d);
/// Stage 3: conv2d and its two backward kinds as cuDNN calls.
void lowerConv(ProgramBuilder& b, KernelEmitter& k, const FusionPlan& plan, const Node& n);

/// Stage 4 (Note [Memory plan]).
using plan::planArena;

}  // namespace aotc::cudagen
