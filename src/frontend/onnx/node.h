//===- onnx/node.h - One ONNX node's converter and the family tables -*- C++ -*-===//
//
// The ONNX front end's inside, shared by its files: an ONNX value (OValue:
// its IR value and its compile-time value, Note [Compile-time values]), the
// Node a converter reads (inputs, known inputs, attributes with their
// defaults, on top of the one IR builder), the tensor readers, and one table
// of op types per op family.  loader.cpp reads the model; table.cpp joins the
// family tables.
//
// Note [ONNX converter tables]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Each ONNX op type has one entry, `{"OpType", converter}`, in the table of
// its op family (the families of src/ops/*.cpp: pointwise, reductions, views,
// gathers, windows, creation, linalg, plus normalization, losses, random,
// spectral, resize, training), returned by that file's `<family>Converters()`.
// To add an op:
//   1. add its entry to the family's table; a converter reads the node at the
//      model's opset (c.opset(): attributes that became inputs, changed
//      defaults);
//   2. read every attribute and input of its schema, or refuse one by name
//      when it is not at its default; an input that sets a shape, axes or
//      pads must be known (c.known, Note [Compile-time values]);
//   3. add a test model (testdata/onnx/gen.py) or check that ONNX's backend
//      suite has cases for it (scripts/onnx_conformance), and add the passing
//      cases to testdata/onnx/pass_list.txt.
// An op whose output shape depends on the data goes in dataDependentOps()
// (table.cpp) and is refused with its own line.  A converter longer than a
// screen is a decomposition: write it over the IR builder (Builder,
// aotc/ops/decompose.h).  An op type given twice is an internal error when
// the table is built.
//===----------------------------------------------------------------------===//
#pragma once

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "aotc/ir/safetensors.h"
#include "aotc/ops/builder.h"
#include "aotc/ops/decompose.h"
#include "aotc/ops/ops.h"
#include "aotc/ops/reference.h"

namespace aotc::onnx_fe {

using namespace decomp;
using V = std::vector<ValueId>;

/// Known values up to this many elements are folded (Note [Compile-time values]).
inline constexpr int64_t kMaxFoldElements = int64_t{1} << 20;

// functions.cpp
/// Inlines every call of a model-local function (Note [ONNX model-local functions]).
void inlineFunctions(onnx::ModelProto& m, const std::string& path);

// tensors.cpp
std::optional<DType> dtypeOfOnnx(int t);
std::string onnxTypeName(int t);
/// Whether a declared tensor type (value_info, a graph's input or output)
/// agrees with aotc's: the element type when set, the rank and every static
/// dim when a shape is given.
bool declaredAgrees(const onnx::TypeProto::Tensor& declared, const TensorType& t);
/// A declared tensor type as text: FLOAT[2, batch, ?].
std::string declaredText(const onnx::TypeProto::Tensor& declared);
/// External data must stay inside the model's directory.
bool safeExternalLocation(const std::string& location);
/// Reads a TensorProto (inline or external data, under `dir`) into a HostTensor.
HostTensor readTensor(const onnx::TensorProto& t, const std::filesystem::path& dir, const SourceLoc& loc, const std::string& what);
/// Whether every element equals the first (NaNs equal).
bool isSplat(const HostTensor& t);

/// One ONNX value: its IR value once it has one, and its value when it is
/// known at compile time (Note [Compile-time values]).
struct OValue {
  ValueId id = kNoValue;
  std::optional<HostTensor> known;
  TensorType type;
  std::string initializer;  ///< the initializer it is, if any
  std::string graphInput;   ///< the graph input it is, if any
  std::set<std::string> dependsOn;  ///< graph inputs it is computed from
};

/// What a converter returns for one output: an IR value or a known tensor.
struct Out {
  ValueId id = kNoValue;
  std::optional<HostTensor> known;
  Out() = default;
  Out(ValueId v) : id(v) {}  // NOLINT: converters return values
  Out(HostTensor t) : known(std::move(t)) {}  // NOLINT
};
using Outs = std::vector<Out>;

/// One ONNX node being converted (into the model's graph, or into a scratch
/// graph when its inputs are all known).
class Node : public Builder {
 public:
  using Resolve = std::function<ValueId(size_t)>;
  Node(Graph& g, SourceLoc loc, const onnx::NodeProto& n, int opset, const std::vector<const OValue*>& ins, Resolve resolve,
       bool train, std::set<std::string>* bakedInits, std::set<std::string>* wantedInputs)
      : Builder(g, std::move(loc)), n_(n), opset_(opset), ins_(ins), resolve_(std::move(resolve)), train_(train), baked_(bakedInits),
        wanted_(wantedInputs) {}

  /// A constant tensor the converter computed (interpolation weights): a
  /// constant of the graph (Note [Compile-time values]).
  using MakeConstant = std::function<ValueId(HostTensor)>;
  void setMakeConstant(MakeConstant f) { constant_ = std::move(f); }
  ValueId constant(HostTensor t) {
    if (!t.data.empty() && isSplat(t)) return full(t.data[0], TensorType::contiguous(t.dtype, t.sizes));
    return constant_(std::move(t));
  }
  const onnx::NodeProto& proto() const { return n_; }
  int opset() const { return opset_; }
  bool train() const { return train_; }
  size_t numInputs() const { return ins_.size(); }
  size_t numOutputs() const { return static_cast<size_t>(n_.output_size()); }
  bool wantsOutput(size_t i) const { return i < numOutputs() && !n_.output(static_cast<int>(i)).empty(); }
  bool has(size_t i) const { return i < ins_.size() && ins_[i] != nullptr; }
  /// Input i as an IR value.
  ValueId in(size_t i) {
    if (!has(i)) fail(cat("input ", i, " is required"));
    return resolve_(i);
  }
  const TensorType& typeIn(size_t i) const {
    if (!has(i)) fail(cat("input ", i, " is required"));
    return ins_[i]->type;
  }
  DType dtypeIn(size_t i) const { return typeIn(i).dtype; }
  bool isKnown(size_t i) const { return has(i) && ins_[i]->known.has_value(); }
  /// Input i's value, which must be known when compiling.
  const HostTensor& known(size_t i, const char* what) {
    if (!has(i)) fail(cat("input ", i, " (", what, ") is required"));
    if (!ins_[i]->known) {
      // The graph inputs it is computed from could make it known (--constant-inputs).
      if (wanted_) wanted_->insert(ins_[i]->dependsOn.begin(), ins_[i]->dependsOn.end());
      fail(cat("input ", i, " (", what, ", '", n_.input(static_cast<int>(i)), "') must be known when compiling (a constant, an initializer, "
               "computed from shapes", ins_[i]->dependsOn.empty() ? "" : ", or computed from graph inputs given with --constant-inputs",
               "): aotc's shapes are static"));
    }
    if (baked_ && !ins_[i]->initializer.empty()) baked_->insert(ins_[i]->initializer);
    return *ins_[i]->known;
  }
  /// With `saturate`, values beyond +-2^48 (slice bounds) become +-2^48.
  Ints knownInts(size_t i, const char* what, bool saturate = false) {
    const HostTensor& t = known(i, what);
    if (isFloating(t.dtype)) fail(cat("input ", i, " (", what, ") must hold integers"));
    Ints r;
    for (double v : t.data) {
      if (saturate) v = std::clamp(v, -static_cast<double>(kMaxExtent), static_cast<double>(kMaxExtent));
      if (std::fabs(v) > static_cast<double>(kMaxExtent)) fail(cat("input ", i, " (", what, ") holds ", v, ", out of range"));
      r.push_back(static_cast<int64_t>(v));
    }
    return r;
  }
  double knownScalar(size_t i, const char* what) {
    const HostTensor& t = known(i, what);
    if (t.data.size() != 1) fail(cat("input ", i, " (", what, ") must hold one value"));
    return t.data[0];
  }

  // Attributes.
  const onnx::AttributeProto* attr(const std::string& name) const {
    for (const auto& a : n_.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  bool hasAttr(const std::string& name) const { return attr(name) != nullptr; }
  int64_t i(const std::string& name, std::optional<int64_t> dflt = std::nullopt) const {
    const auto* a = attr(name);
    if (!a) {
      if (dflt) return *dflt;
      fail(cat("attribute '", name, "' is required"));
    }
    if (a->type() != onnx::AttributeProto::INT) fail(cat("attribute '", name, "' must be an int"));
    if (std::llabs(a->i()) > kMaxExtent) fail(cat("attribute '", name, "' = ", a->i(), " is out of range"));
    return a->i();
  }
  double f(const std::string& name, double dflt) const {
    const auto* a = attr(name);
    if (!a) return dflt;
    if (a->type() != onnx::AttributeProto::FLOAT) fail(cat("attribute '", name, "' must be a float"));
    return a->f();
  }
  Ints ints(const std::string& name, std::optional<Ints> dflt = std::nullopt, bool saturate = false) const {
    const auto* a = attr(name);
    if (!a) {
      if (dflt) return *dflt;
      fail(cat("attribute '", name, "' is required"));
    }
    if (a->type() != onnx::AttributeProto::INTS) fail(cat("attribute '", name, "' must be a list of ints"));
    Ints r;
    for (int64_t v : a->ints()) {
      if (saturate) v = std::clamp(v, -kMaxExtent, kMaxExtent);
      if (std::llabs(v) > kMaxExtent) fail(cat("attribute '", name, "' holds ", v, ", out of range"));
      r.push_back(v);
    }
    return r;
  }
  std::vector<double> floats(const std::string& name) const {
    const auto* a = attr(name);
    if (!a) return {};
    if (a->type() != onnx::AttributeProto::FLOATS) fail(cat("attribute '", name, "' must be a list of floats"));
    return {a->floats().begin(), a->floats().end()};
  }
  std::string s(const std::string& name, const std::string& dflt) const {
    const auto* a = attr(name);
    if (!a) return dflt;
    if (a->type() != onnx::AttributeProto::STRING) fail(cat("attribute '", name, "' must be a string"));
    return a->s();
  }
  const onnx::TensorProto* tensorAttr(const std::string& name) const {
    const auto* a = attr(name);
    if (!a) return nullptr;
    if (a->type() != onnx::AttributeProto::TENSOR) fail(cat("attribute '", name, "' must be a tensor"));
    return &a->t();
  }
  HostTensor readAttrTensor(const onnx::TensorProto& t) const { return readTensor(t, std::filesystem::path(), loc(), "attribute tensor"); }

  /// A dim of a tensor of `rank` (negative counts from the end).  A rank-0
  /// tensor has no dim: ops that accept scalars (ArgMax, Softmax, Reduce*)
  /// pass max(rank, 1) and handle the scalar themselves.
  int64_t axis(int64_t a, int64_t rank) const {
    if (a < -rank || a >= rank) fail(cat("axis ", a, " is out of range for rank ", rank));
    return a < 0 ? a + rank : a;
  }

 private:
  const onnx::NodeProto& n_;
  int opset_;
  const std::vector<const OValue*>& ins_;
  Resolve resolve_;
  MakeConstant constant_;
  bool train_;
  std::set<std::string>* baked_;
  std::set<std::string>* wanted_;
};

/// What the control-flow ops need from the loader (Note [ONNX control
/// flow], controlflow.cpp): converting a subgraph in a scope of its own, and
/// building glue over ONNX values (folded when they are all known).
class Subgraphs {
 public:
  virtual ~Subgraphs() = default;
  /// Converts `body` with its inputs bound, in order, to `inputs`; names it
  /// does not define resolve to the enclosing graphs' values.  Its nodes are
  /// named `prefix` + their own names.  Returns its outputs, in order.
  virtual std::vector<OValue> convertBody(const onnx::GraphProto& body, std::vector<OValue> inputs, const std::string& prefix,
                                          const SourceLoc& loc) = 0;
  /// Builds `fn` over `ins` (kNoValue for a null one): evaluated at compile
  /// time when every input is known (Note [Compile-time values]), else into
  /// the model's graph.
  virtual std::vector<OValue> apply(const SourceLoc& loc, const std::vector<const OValue*>& ins, const std::function<V(Builder&, const V&)>& fn) = 0;
  /// `v` had to be known: the graph inputs it is computed from could make it
  /// known (--constant-inputs).
  virtual void want(const OValue& v) = 0;
  virtual bool train() const = 0;
  /// The model's graph being built.
  virtual const Graph& graph() const = 0;
};

// controlflow.cpp (Note [ONNX control flow])
/// Whether `op` is a control-flow op (If, Loop, Scan), converted by
/// convertControlFlow rather than by a converter of the table.
bool isControlFlow(const std::string& op);
/// Converts an If, Loop or Scan node by inlining or unrolling its subgraphs,
/// or refuses it; returns one ONNX value per output of the node.
std::vector<OValue> convertControlFlow(const onnx::NodeProto& n, const SourceLoc& loc, int opset, const std::vector<const OValue*>& ins,
                                       Subgraphs& s);
/// Why a value of this type cannot be a subgraph's input or output ("" when it can).
std::string nonTensorType(const onnx::TypeProto& t);
/// How `t` differs from a declared type's element type or static dims ("" when it does not).
std::string declaredMismatch(const onnx::TypeProto& declared, const TensorType& t);

using Convert = Outs (*)(Node&);
/// Op type -> converter (Note [ONNX converter tables]).
using Table = std::map<std::string, Convert>;
/// One family's entries.
using Entries = std::vector<std::pair<std::string, Convert>>;

// loader.cpp
/// The most nodes a model may hold, or convert to (unrolled bodies counted
/// once per iteration).
inline constexpr size_t kMaxNodes = 250000;
/// The newest opset Debian's ONNX 1.12 C++ library (checker, shape
/// inference) knows (Note [Newer opsets]).
inline constexpr int kCheckerOpset = 17;
/// The model file's bytes (a one-line error naming the file otherwise).
std::string readModelBytes(const std::string& path);
/// The default domain's opset the model imports (0 when it imports none).
int importedOpset(const onnx::ModelProto& m);
/// Why the front end cannot convert node `n` ("" when it can).
std::string unsupportedReason(const onnx::NodeProto& n, int opset);
// gathers.cpp
ValueId wrapNegative(Node& c, ValueId i, int64_t n);
// readers.cpp
Outs unary(Node& c, OpKind k);
Outs binary(Node& c, OpKind k);
// windows.cpp
ValueId padTo(Node& c, ValueId x, const Ints& begin, const Ints& end, const std::string& mode, double value);

Entries attentionConverters();
Entries controlFlowConverters();
Entries creationConverters();
Entries gathersConverters();
Entries linalgConverters();
Entries lossesConverters();
Entries normalizationConverters();
Entries pointwiseConverters();
Entries quantizeConverters();
Entries randomConverters();
Entries recurrentConverters();
Entries reductionsConverters();
Entries resizeConverters();
Entries spectralConverters();
Entries trainingConverters();
Entries viewsConverters();
Entries windowsConverters();

/// Every op type the front end converts (table.cpp).
const Table& converters();
/// Ops whose output shape depends on the data: refused with their own line.
const std::set<std::string>& dataDependentOps();
/// Ops refused by design -> why (table.cpp).
const std::map<std::string, std::string>& refusedOps();

// versions.cpp (Note [ONNX op versions])
/// The since_version of default-domain op `op` in effect at `opset`: 0 when
/// that opset does not define it yet, -1 when ONNX has no such op.
int effectiveVersion(const std::string& op, int opset);
/// Converted op type -> the newest version its converter handles.
const std::map<std::string, int>& reviewedVersions();
/// Why a default-domain node of `op` at `opset` is refused by its version
/// ("" when it is not), given the reviewed versions.
std::string versionRefusal(const std::string& op, int opset, const std::map<std::string, int>& reviewed);

}  // namespace aotc::onnx_fe
