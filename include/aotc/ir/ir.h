//===- ir.h - The aotc graph IR ----------------------------------*- C++ -*-===//
//
// One small SSA IR for every stage.  A Graph has typed inputs (with their
// signature role), nodes in topological order, and outputs (with theirs).  A
// Value is defined once, by a graph input or by one output slot of a node.
// Types are dtype, sizes, strides and storage offset; sizes may be symbolic
// (Note [Symbolic types]).
//
// Functional graphs (after `functionalize`) hold no Mutation ops.  Input
// mutations are trailing `epilogue_copy(%input, %value)` nodes tagged with the
// program that must run them (must_be_in_forward / must_be_in_backward).
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "aotc/ir/symbolic.h"
#include "aotc/support/diag.h"

namespace aotc {

/// Element types.  The integer types below I32 and the unsigned ones come
/// from ONNX and PyTorch's uint8/int8/int16; their arithmetic wraps modulo
/// 2^bits as in PyTorch and numpy (roundTo).  Values live in doubles on the
/// host (HostTensor), so 64-bit integers are exact up to 2^53 there.
enum class DType : uint8_t { F32, F64, F16, BF16, I64, I32, Bool, I8, I16, U8, U16, U32, U64 };

const char* dtypeName(DType d);            ///< IR spelling: f32, f64, ...
std::optional<DType> parseDType(const std::string& s);  ///< IR spelling
const char* dtypeTorchName(DType d);       ///< float32, float64, ...
std::optional<DType> dtypeFromTorchName(const std::string& s);
const char* dtypeSafetensorsName(DType d); ///< F32, F64, ...
std::optional<DType> dtypeFromSafetensorsName(const std::string& s);
int64_t dtypeSize(DType d);
bool isFloating(DType d);
bool isUnsigned(DType d);  ///< u8, u16, u32, u64

/// Note [Bounded sizes]: every tensor of a graph has at most 2^40 elements
/// and sizes, strides and offsets of at most 2^48 in magnitude (checked when
/// a node's types are inferred), and size arithmetic goes through mulSize /
/// addSize, which refuse results beyond 2^62: no size computation can wrap,
/// whatever numbers a hostile file holds.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;
inline constexpr int64_t kMaxExtent = int64_t{1} << 48;
int64_t mulSize(int64_t a, int64_t b);  ///< a * b; UserError beyond +-2^62
int64_t addSize(int64_t a, int64_t b);  ///< a + b; UserError beyond +-2^62

/// Note [Symbolic types]
/// ~~~~~~~~~~~~~~~~~~~~~~
/// A graph with dynamic dims declares its symbols (name, hint, range) and
/// the guards its sizes rely on.  A type's `sizes`, `strides` and `offset`
/// are then the values at the hints -- the graph read at its hints is an
/// ordinary static graph, which every pass and rule written for integers
/// handles -- and `sym`, when set, says how each of them depends on the
/// symbols (Note [Symbolic sizes]); an Ints attribute that depends on them
/// has its expressions in the node's `symAttrs`.  The verifier checks that
/// the expressions, evaluated at the hints, are the integers beside them.
/// A graph without symbols has no `sym` anywhere.
struct SymLayout {
  std::vector<sym::Expr> sizes, strides;
  sym::Expr offset;
  bool operator==(const SymLayout&) const = default;
};

/// A tensor type.  Strides are in elements, as in PyTorch.
struct TensorType {
  DType dtype = DType::F32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  /// Note [Symbolic types]: null for a static type.
  std::shared_ptr<const SymLayout> sym = nullptr;

  static TensorType contiguous(DType d, std::vector<int64_t> sizes);
  static std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& sizes);
  int64_t rank() const { return static_cast<int64_t>(sizes.size()); }
  int64_t numel() const;
  bool isContiguous() const;
  /// Number of elements the storage must hold to back this view.
  int64_t storageSpan() const;
  std::string str() const;  ///< f32[4,8], f32[8,4]{1,8}, f32[2]{1}+3, f32[batch,8]
  bool isSymbolic() const { return sym != nullptr; }
  /// The symbolic layout, or this type's integers as constant expressions.
  SymLayout symLayout() const;
  bool operator==(const TensorType& o) const;
};

/// Contiguous strides of symbolic sizes.
std::vector<sym::Expr> contiguousStrides(const std::vector<sym::Expr>& sizes);

/// The highest degree in one symbol that a dynamic size may have (Note
/// [Probing and unifying], aotc/ir/unify.h).
inline constexpr int kFitDegree = 2;

/// A dynamic dim's symbol (Note [Symbolic types]).  `degree`: the degree in
/// it that the probes fit (Note [Probe degree], aotc/ir/unify.h); a compile
/// detail, not part of the program (not printed, not in the manifest).
struct SymbolDecl {
  std::string name;
  int64_t hint = 0, min = 1, max = (int64_t{1} << 31) - 1;
  int degree = kFitDegree;
  /// The same declaration: the degree is not part of it.
  bool operator==(const SymbolDecl& o) const { return name == o.name && hint == o.hint && min == o.min && max == o.max; }
};

/// What a graph's sizes rely on: `expr` % `divisor` == 0 at every binding
/// the artifact accepts (a reshape that splits a dynamic dim).
struct SizeGuard {
  sym::Expr expr;
  int64_t divisor = 1;
  std::string where;  ///< what needed it, for messages
  bool operator==(const SizeGuard& o) const { return expr == o.expr && divisor == o.divisor; }
};
/// Adds `g` to `guards` unless an equal guard is there.
void addGuard(std::vector<SizeGuard>& guards, SizeGuard g);

using Ints = std::vector<int64_t>;
using AttrValue = std::variant<int64_t, double, bool, std::string, Ints>;
/// Ordered so that printing and hashing are deterministic.
using Attrs = std::map<std::string, AttrValue>;
std::string attrStr(const AttrValue& v);

/// Which op a node applies.  The IR stores, compares and hashes op kinds but
/// does not know the op table: the enumerators, and every rule about an op,
/// are declared by the ops library (aotc/ops/ops.h, from ops.def).
enum class OpKind : uint16_t;

enum class Phase : uint8_t { Forward, Backward };

/// Node tags; hard constraints for the partitioner.
enum Tag : uint32_t {
  kTagNone = 0,
  kMustSave = 1u << 0,          ///< value must be saved for backward, never recomputed
  kMustBeInForward = 1u << 1,   ///< node must run in the forward program
  kMustBeInBackward = 1u << 2,  ///< node must run in the backward program
};

/// Names of inputs, nodes and tensors in files aotc reads and writes: 1-256
/// characters of [A-Za-z0-9_.-].
bool validName(const std::string& s);

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

struct Value {
  std::string name;
  TensorType type;
  int32_t node = -1;  ///< defining node index, -1 for a graph input
  int32_t slot = 0;   ///< which output of the defining node
};

class Graph;

struct Node {
  OpKind op;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  Attrs attrs;
  SourceLoc loc;
  Phase phase = Phase::Forward;
  uint32_t tags = kTagNone;
  /// Nested graphs (autograd_function: forward, backward).
  std::vector<Graph> regions;
  /// Note [Symbolic types]: Ints (or int) attributes that depend on the
  /// graph's symbols, as expressions; their integers in `attrs` are the
  /// values at the hints.
  std::map<std::string, std::vector<sym::Expr>> symAttrs = {};
};

enum class InputRole : uint8_t { Parameter, Buffer, UserInput, Tangent, Saved, Constant };
const char* inputRoleName(InputRole r);
std::optional<InputRole> parseInputRole(const std::string& s);

struct GraphInput {
  ValueId value;
  InputRole role;
  bool requires_grad = false;
};

/// One step of a view chain: replaying the chain on a base regenerates an alias.
struct ViewStep {
  OpKind op;
  Attrs attrs;
  /// Note [Symbolic types]: attributes that depend on the symbols.
  std::map<std::string, std::vector<sym::Expr>> symAttrs = {};
  bool operator==(const ViewStep&) const = default;
};

/// InputMeta: after the forward, input `alias_of` has the metadata (sizes,
/// strides, offset) of `alias_chain` replayed on its original layout.
enum class OutputRole : uint8_t { User, Grad, Saved, InputMeta };
const char* outputRoleName(OutputRole r);

struct GraphOutput {
  ValueId value;
  OutputRole role = OutputRole::User;
  std::string target;  ///< Grad: the input it is the gradient of
  /// User output that aliases a graph input: the input, and the view chain
  /// from it (empty chain: the output is the input itself).
  std::optional<std::string> alias_of;
  std::vector<ViewStep> alias_chain;
};

class Graph {
 public:
  std::string name;
  std::vector<Value> values;
  std::vector<GraphInput> inputs;
  std::vector<Node> nodes;
  std::vector<GraphOutput> outputs;
  /// Note [Symbolic types]: the dynamic dims' symbols and what the sizes
  /// rely on; both empty for a static graph.
  std::vector<SymbolDecl> symbols;
  std::vector<SizeGuard> guards;

  bool isSymbolic() const { return !symbols.empty(); }
  /// Every symbol at its hint.
  sym::Bindings hints() const;

  ValueId addInput(std::string name, TensorType type, InputRole role, bool requires_grad);
  /// Appends a node whose output types are given (its outputs must be values
  /// of this graph).  Nodes whose types are inferred from their op are built
  /// with aotc::addNode (aotc/ops/ops.h), which knows the shape rules.
  int32_t appendNode(Node n);
  ValueId newValue(std::string name, TensorType type);
  /// Copies node `n` of `src` into this graph, mapping operands through
  /// `vmap` (src value -> this graph's value) and recording its results there.
  /// Result names are kept where free.
  int32_t copyNode(const Graph& src, const Node& n, std::vector<ValueId>& vmap);

  const TensorType& type(ValueId v) const { return values.at(v).type; }
  const GraphInput* inputOf(ValueId v) const;
  const GraphInput* inputNamed(const std::string& name) const;
  ValueId valueNamed(const std::string& name) const;  ///< kNoValue if none
  /// valueNamed of each name, in one pass over the values.
  std::vector<ValueId> valuesNamed(const std::vector<std::string>& names) const;
  /// Renames `v` to `name` if no value of this graph has had that name.
  bool tryRename(ValueId v, const std::string& name);
  /// A fresh value name derived from `hint`, unique in this graph.
  std::string uniqueName(const std::string& hint);

 private:
  // Hashed, never iterated: a graph of 10^4 values with long common
  // prefixes (batch_norm_17...) spent a tenth of the engine comparing them.
  std::unordered_map<std::string, int> name_counts_;
};

/// Users of each value (node indices, in order), and whether it is a graph output.
struct UseInfo {
  std::vector<std::vector<int32_t>> users;
  std::vector<bool> is_output;
  static UseInfo compute(const Graph& g);
};

}  // namespace aotc
