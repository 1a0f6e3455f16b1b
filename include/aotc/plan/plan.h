//===- plan.h - The typed execution plan and its manifest form ---*- C++ -*-===//
//
// Note [Typed plan]: what an artifact asks a runtime to do is a value of
// these types.  The code generator and the memory planner produce them; this
// library alone writes them to manifest.json and reads them back
// (toJson / manifestFromJson), so every JSON key is spelled in plan.cpp and
// nowhere else; every runtime (reference, the executor's devices, the
// deployment library) works on the types.  Nothing recovers meaning by
// parsing a value's name: an output's tangent, an epilogue's input, a GEMM's
// operands are fields.
//
// The JSON form is schemas/manifest.schema.json, version kManifestVersion.
// manifestFromJson treats its input as untrusted (Note [Manifest is
// untrusted]): every field is checked for kind and range, every name a step
// uses is a declared buffer, every path stays inside the artifact; a problem
// is one UserError naming manifest.json and the field.
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "aotc/ir/ir.h"

namespace aotc::plan {

/// Version 3: the artifact carries its initial tensors (`weights`); outputs
/// name their tangent from the program's own record, never from a name.
inline constexpr int kManifestVersion = 10;  // 10: convolutions' filter format (Note [Channels last]); 4: the integer dtypes i8 i16 u8 u16 u32 u64; 6: kernels' index_checked (a step tag argument), launches' work (Note [Launch shape]); 8: loss_scaling (Note [Loss scaling])
inline constexpr const char* kCompilerVersion = "0.2.0";

/// A tensor's place in a buffer: sizes, strides and offset in elements.
struct Layout {
  DType dtype = DType::F32;
  Ints shape, strides;
  int64_t offset = 0;
  int64_t numel() const;
  /// Elements from the buffer start to one past the last element reached.
  int64_t span() const;
  bool operator==(const Layout&) const = default;
};

/// One view op (an aotc IR op name and its attributes): replaying a chain of
/// them on a base regenerates an alias.
struct ViewOp {
  std::string op;
  Attrs attrs;
  bool operator==(const ViewOp&) const = default;
};
using ViewChain = std::vector<ViewOp>;

enum class BufferKind { Input, Alloc, View };

struct Buffer {
  std::string name;
  BufferKind kind = BufferKind::Alloc;
  Layout layout;
  std::string role;           ///< Input: parameter, buffer, user_input, constant, tangent, saved
  std::string base;           ///< View: the buffer it views (its root's name)
  int64_t bytes = 0;          ///< Alloc: bytes it needs
  int64_t arena_offset = -1;  ///< Alloc: byte offset in the program's arena (-1 until planned)
  bool operator==(const Buffer&) const = default;
};

enum class Phase { Forward, Backward };
inline const char* phaseName(Phase p) { return p == Phase::Forward ? "forward" : "backward"; }

/// A launch that writes (part of) a caller's input: an epilogue copy.
struct Epilogue {
  std::string input;
  Phase phase = Phase::Forward;
  std::optional<ViewOp> region;  ///< only this view of the input is written
  bool operator==(const Epilogue&) const = default;
};

/// Note [Launch shape]: how a launch's work is spread over the machine, as
/// the code generator decided it; the launch-shape check
/// (aotc/codegen/launch_shape.h) reads it.  A runtime needs none of it.
struct LaunchWork {
  int64_t bytes = 0;   ///< bytes its outputs and operands span
  int64_t blocks = 0;  ///< blocks that have work (the idle blocks of a padded grid not counted)
  int64_t serial = 0;  ///< most elements one thread visits in its loops, one after another
  int64_t split = 1;   ///< a split reduction: partial results per output (1: not split)
  int64_t vector = 1;  ///< elements per access of a pointwise kernel (Note [Vectorized access]; 1: scalar)
  bool operator==(const LaunchWork&) const = default;
};

struct Launch {
  std::string kernel;
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  int64_t shared_bytes = 0;
  std::vector<std::string> args;  ///< root buffers: outputs first, then operands
  /// Integer arguments after the buffers: the values of the symbols the
  /// kernel's text uses (Note [Symbolic manifest]); empty in static artifacts.
  std::vector<int64_t> scalars;
  std::optional<Epilogue> epilogue;
  std::optional<LaunchWork> work;  ///< static artifacts: Note [Launch shape]
  bool operator==(const Launch&) const = default;
};

/// A GEMM operand in cuBLAS's column-major terms.
struct MatrixOperand {
  std::string buffer;
  int64_t offset = 0, ld = 1, stride = 0;  ///< stride: between matrices of a batch
  bool operator==(const MatrixOperand&) const = default;
};

enum class GemmCall { GemmEx, GemmStridedBatchedEx, LtMatmulBias };

/// C = alpha op(A) op(B) + beta C (+ bias along m for LtMatmulBias), column-major.
struct Gemm {
  GemmCall call = GemmCall::GemmEx;
  std::string node;
  bool transa = false, transb = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  double alpha = 1, beta = 0;
  MatrixOperand A, B, C;
  DType dtype = DType::F32;  ///< of A, B and C
  std::optional<MatrixOperand> bias;  ///< LtMatmulBias: buffer and offset (ld unused)
  /// LtMatmulBias: CUBLASLT_EPILOGUE_RELU_BIAS, relu(alpha A B + bias) as
  /// aotc_relu computes it (Note [GEMM relu epilogue]).
  bool relu = false;
  bool operator==(const Gemm&) const = default;
};

/// A tensor a convolution reads or writes: NCHW dims and strides over a buffer.
struct ConvTensor {
  std::string buffer;
  int64_t offset = 0;
  Ints dims, strides;
  bool operator==(const ConvTensor&) const = default;
};

enum class ConvCall { Forward, BackwardData, BackwardFilter };

/// Dense in NCHW order (`nhwc` false) or NHWC order: each dim of more
/// than one element has the stride that order gives it.
bool denseIn(const ConvTensor& t, bool nhwc);

/// A cuDNN 2-D cross-correlation.  Forward: (a=x, b=w) -> out=y; backward
/// data: (a=dy, b=w) -> out=dx; backward filter: (a=dy, b=x) -> out=dw.
struct Conv {
  ConvCall call = ConvCall::Forward;
  std::string node;
  Ints pad, stride, dilation;
  int64_t groups = 1;
  DType dtype = DType::F32;
  double alpha = 1, beta = 0;
  ConvTensor a, b, out;
  /// The filter's format (Note [Channels last]): NHWC (KRSC) when the
  /// convolution's tensors are stored channels-last; the filter's strides
  /// agree (the reader checks).
  bool nhwc = false;
  bool operator==(const Conv&) const = default;
};

using Step = std::variant<Launch, Gemm, Conv>;

/// The buffers a step reads or writes (root or view names, as spelled).
std::vector<std::string> stepBuffers(const Step& s);
/// The library function a call step makes: "cublasGemmEx", "cudnnConvolutionForward", ...
const char* gemmCallName(GemmCall c);
const char* convCallName(ConvCall c);
/// "launch k_…", "gemm (cublasGemmEx)", "conv (cudnnConvolutionForward)".
std::string stepLabel(const Step& s);

struct ProgramOutput {
  std::string role;  ///< user, grad, saved, input_meta
  std::string buffer;
  bool operator==(const ProgramOutput&) const = default;
};

struct Program {
  std::string ir;  ///< the program's IR file in the artifact
  std::vector<Buffer> buffers;
  std::vector<Step> steps;
  std::vector<ProgramOutput> outputs;
  int64_t arena_bytes = 0;
  int64_t alloc_bytes_unplanned = 0;
  const Buffer* buffer(const std::string& name) const;
  bool operator==(const Program&) const = default;
};

enum class Mutation { None, Forward, Backward, Both };
const char* mutationName(Mutation m);

struct MetadataChange {
  Ints shape, strides;
  int64_t offset = 0;
  ViewChain view_chain;
  bool operator==(const MetadataChange&) const = default;
};

struct InputSpec {
  std::string name;
  std::string role;  ///< parameter, buffer, user_input, constant
  Layout layout;     ///< offset 0
  bool requires_grad = false;
  Mutation mutation = Mutation::None;
  std::vector<std::string> aliases;  ///< a tied tensor's other names
  std::optional<MetadataChange> metadata_after_forward;
  /// Starts at zeros when the caller gives none ("initial": "zeros"): state
  /// the artifact does not store (Note [Optimizer step]'s moments).
  bool zero_init = false;
  bool operator==(const InputSpec&) const = default;
};

struct AliasRecipe {
  std::string input;
  ViewChain view_chain;
  bool operator==(const AliasRecipe&) const = default;
};

struct OutputSpec {
  size_t index = 0;
  std::string buffer;
  DType dtype = DType::F32;
  Ints shape;
  std::optional<std::string> tangent;  ///< the backward input that takes grad_output.<index>
  std::optional<AliasRecipe> alias;    ///< set: the output is a view of this input
  std::optional<std::string> path;
  bool operator==(const OutputSpec&) const = default;
};

/// For a refused grad_output.<i>: " (the differentiable outputs: 1, 2; an
/// output that no input requiring grad reaches takes no gradient)", or
/// " (no output is differentiable)".
std::string differentiableOutputsHint(const std::vector<OutputSpec>& outputs);

struct GradSpec {
  std::string input, buffer;
  bool operator==(const GradSpec&) const = default;
};

struct SavedSpec {
  std::string name;
  Layout layout;
  bool operator==(const SavedSpec&) const = default;
};

struct ModuleSpec {
  std::string name;
  std::vector<std::string> kernels;
  std::map<std::string, std::string> ptx, cubin;  ///< arch -> file
  bool operator==(const ModuleSpec&) const = default;
};

struct KernelSpec {
  std::string name, source, module;
  std::vector<std::string> nodes;
  /// The kernel checks indices (Note [Index errors]): it takes its step's tag
  /// (stepTag) as a last `long long aotc_step` argument, after the symbols.
  bool index_checked = false;
  bool operator==(const KernelSpec&) const = default;
};

struct RuntimeChecks {
  std::vector<size_t> no_create_graph_inputs;
  int64_t input_alignment_bytes = 16;
  bool operator==(const RuntimeChecks&) const = default;
};

struct SymbolicManifest;

/// Note [Loss scaling] (src/passes/loss_scaling.cpp): the artifact scales its
/// loss as torch.cuda.amp.GradScaler does.  The state is three inputs (role
/// buffer, written by the backward epilogue; their initial values are in the
/// artifact's weights); these are GradScaler's constants and their names.
struct LossScalingSpec {
  double init_scale = 65536.0, growth_factor = 2.0, backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  std::string scale, growth_tracker, found_inf;
  bool operator==(const LossScalingSpec&) const = default;
};

struct Manifest {
  std::string compiler_version = kCompilerVersion;
  std::string nvrtc_version;
  nlohmann::ordered_json flags = nlohmann::ordered_json::object();
  std::string model_name, model_source;
  nlohmann::ordered_json arguments;  ///< null: not recorded
  std::vector<std::string> archs;
  std::vector<InputSpec> inputs;
  std::vector<OutputSpec> outputs;
  std::vector<GradSpec> grads;
  std::vector<SavedSpec> saved;
  Program forward, backward;
  std::vector<ModuleSpec> modules;
  std::vector<KernelSpec> kernels;
  std::string prelude = "kernels/aotc_prelude.cuh";
  std::string weights;  ///< the initial tensors file ("" when the artifact has none)
  RuntimeChecks runtime_checks;
  /// `aotc compile --precision` (Note [Autocast pass]): "fp32", "tf32",
  /// "bf16" or "fp16".  Only tf32 asks anything of a runtime (float32 GEMMs
  /// and convolutions on TF32 tensor cores); bf16 and fp16 are in the
  /// programs' dtypes.  Written only when not fp32, so that fp32 artifacts
  /// are the bytes they were before the field existed.
  std::string precision = "fp32";
  /// Written only when the artifact scales its loss (--precision fp16 training).
  std::optional<LossScalingSpec> loss_scaling;
  /// A dynamic-shape artifact (Note [Symbolic manifest]): its template, and
  /// the symbol values this manifest was instantiated at.  Null: static.
  std::shared_ptr<const SymbolicManifest> symbolic;
  sym::Bindings binding;

  const InputSpec* input(const std::string& name) const;  ///< by name or alias
  const KernelSpec* kernel(const std::string& name) const;
  const Program& program(Phase p) const { return p == Phase::Forward ? forward : backward; }
  bool operator==(const Manifest&) const = default;
};

nlohmann::ordered_json toJson(const Manifest& m);

/// Parses and checks an untrusted manifest (Note [Manifest is untrusted]).
/// `file` names it in errors; tensors may hold at most `maxElements`.
Manifest manifestFromJson(const nlohmann::json& j, const std::string& file, int64_t maxElements);
/// Reads `dir`/manifest.json.
Manifest readManifest(const std::string& dir, int64_t maxElements);

/// Note [Symbolic manifest]: a dynamic-shape artifact's manifest.json is
/// version kSymbolicManifestVersion.  It declares its symbols
/// ({"name","hint","min","max"}) and guards ({"expr","divisible_by","where"}),
/// and wherever an integer depends on the sizes it holds {"sym": EXPR}, EXPR
/// in the grammar of Note [Symbolic sizes].  A runtime binds the symbols from
/// the shapes of the inputs it is given (bindSymbols: every dim written as a
/// bare symbol binds it; ranges and guards are checked, in one line naming
/// the input, the dim and the guard), then reads the manifest at that binding
/// (instantiateManifest) as an ordinary one: every expression evaluated, the
/// result checked like any untrusted manifest.  Arenas are planned then, for
/// the bound sizes (the memory planner is deterministic and cheap, and the
/// best placement of buffers depends on their sizes), so a template's
/// arena_offset fields are 0 and its arena_bytes an upper bound.
inline constexpr int kSymbolicManifestVersion = 11;  // the dynamic-shape form of version 10 (9: of 8, 7: of 6)
struct SymbolicManifest {
  nlohmann::ordered_json templ;
  std::vector<SymbolDecl> symbols;
  std::vector<SizeGuard> guards;
  /// Expressions the artifact divides by (a size scalar's denominator, Note
  /// [Size scalars]: BatchNorm's unbiased n / (n - 1)): each must not be 0.
  std::vector<std::pair<sym::Expr, std::string>> nonzero;
  /// Sizes the artifact's 32-bit indices must reach (Note [Dynamic index
  /// width]): each expression at most `at_most`.
  struct Limit {
    sym::Expr expr;
    int64_t at_most = 0;
    std::string where;
  };
  std::vector<Limit> limits;
  /// Every {"sym": EXPR} of the template, parsed once when it is read:
  /// instantiating evaluates each distinct expression once per binding.
  std::map<std::string, sym::Expr> exprs;
};
/// The place of a field in a manifest's JSON, built as a walk descends and
/// spelled (`inputs[0].shape`) only for a message.
struct JsonPath {
  const JsonPath* parent = nullptr;  ///< null: the document itself
  const std::string* key = nullptr;  ///< an object member, or
  size_t index = 0;                  ///< an array element
  std::string str() const;
};

/// Reads and checks a version-11 manifest's template and declarations
/// (every expression parsed; a malformed one names its field).
std::shared_ptr<const SymbolicManifest> symbolicManifestFromJson(const nlohmann::json& j, const std::string& file);
/// The symbols' values that `shapes` (input name -> its dims, for the inputs
/// the caller gives) imply; refuses a conflict, a symbol no input binds, a
/// value outside its range and a broken guard.  A symbol no given input
/// binds takes its value in `defaults` when given (an error otherwise).
sym::Bindings bindSymbols(const SymbolicManifest& s, const std::map<std::string, Ints>& shapes, const std::string& file,
                          const sym::Bindings* defaults = nullptr);
/// The manifest at binding `b`, checked, with its arenas planned.
Manifest instantiateManifest(const std::shared_ptr<const SymbolicManifest>& s, const sym::Bindings& b, const std::string& file,
                             int64_t maxElements);
/// The symbols' hints.
sym::Bindings hintBinding(const SymbolicManifest& s);

/// Note [Memory plan]: every owned buffer of a program lives in one arena;
/// fills each Alloc buffer's arena_offset and the program's arena_bytes.
void planArena(Program& prog);

/// A view chain applied to a layout (the runtimes' alias regeneration): each
/// op's shape rule gives the next sizes/strides/offset.
Layout applyViewChain(const Layout& base, const ViewChain& chain);

}  // namespace aotc::plan
