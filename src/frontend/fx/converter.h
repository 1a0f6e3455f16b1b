//===- fx/converter.h - One FX node's converter and the family tables -*- C++ -*-===//
//
// The FX front end's inside, shared by its files: the Converter (one FX node:
// its argument readers over positional args, kwargs and defaults, on top of
// the one IR builder), the helpers several families use, and one table of
// spellings per op family.  loader.cpp reads the document; table.cpp joins the
// family tables and derives the generic spellings (Note [Generic spellings]).
//
// Note [FX converter tables]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Each ATen overload has one entry, `{"aten.op.overload", converter}`, in the
// table of its op family (the families of src/ops/*.cpp: pointwise,
// reductions, views, gathers, windows, creation, linalg, plus normalization,
// attention, losses, random, sampling, control flow and refusals, training
// ops), returned by that file's `<family>Converters()`.  To add a spelling:
//   1. add its entry to the family's table (a spelling already given by an op
//      row's ATen names, Note [Pointwise rows], needs none; in-place, out=,
//      *_copy and _foreach forms of a listed op are derived, Note [Generic
//      spellings]);
//   2. read every argument of its schema through the Converter's readers, by
//      position and keyword; refuse one it cannot honour by name
//      (c.requireNone, c.fail), and mark one that cannot change the result
//      with c.ignore.  The table driver refuses any argument left unread
//      that is not at its default (Note [No argument dropped], table.cpp);
//      run scripts/fx_schemas.py so schemas.inc has the spelling's schema;
//   3. add a fixture line that uses it (a program in testdata/ops/gen.py,
//      testdata/fx or testdata/conformance; regenerate only the new files),
//      so the e2e suite runs it against eager.
// frontend_completeness_test checks 2 and 3 for every spelling.  A converter
// longer than a screen is a decomposition: it lives in src/ops (decompose.cpp,
// decompose_gathers.cpp), written over the IR builder (Builder,
// aotc/ops/decompose.h) with its arguments as C++ values, and the entry only
// reads the arguments and calls it.  A spelling given twice is an internal
// error when the table is built.
//===----------------------------------------------------------------------===//
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "aotc/ops/builder.h"
#include "aotc/ops/decompose.h"
#include "aotc/ops/ops.h"
#include "aotc/ops/pointwise.h"

namespace aotc::fx {

using json = nlohmann::json;

/// Integer arguments (dims, sizes, indices, offsets) beyond 2^48 in
/// magnitude are refused: no tensor can have such a size, and products and
/// sums of a few of them stay far from int64's range.
inline constexpr int64_t kMaxIntArg = int64_t{1} << 48;

class Converter;
using ConvertFn = std::function<std::vector<ValueId>(Converter&)>;
/// FX name -> the values it stands for (several for a multi-result node).
using Env = std::map<std::string, std::vector<ValueId>>;
/// Converts a region (a custom autograd.Function's forward or backward) into
/// its own graph (loader.cpp).
Graph convertRegion(const json& region, const std::string& path, const std::string& name, bool backward,
                    const SourceLoc& loc, std::vector<std::string>* savedRefs,
                    const std::map<std::string, std::string>* names = nullptr);

/// One FX node being converted.
class Converter : public Builder {
 public:
  Converter(Graph& g, const json& node, SourceLoc loc, const Env& env, bool noGrad)
      : Builder(g, std::move(loc), Phase::Forward, noGrad), node_(node), env_(env) {}

  /// Argument `i` (positional) or keyword `kw`; null if neither is given.
  /// Every reader goes through here, and so accounts for the argument (Note
  /// [No argument dropped]).
  const json* arg(size_t i, const char* kw) const {
    note(i, kw);
    const json& args = node_.at("args");
    if (i < args.size()) return &args[i];
    if (node_.contains("kwargs") && kw && node_["kwargs"].contains(kw)) return &node_["kwargs"][kw];
    return nullptr;
  }
  bool has(size_t i, const char* kw) const {
    const json* a = arg(i, kw);
    return a && !a->is_null();
  }
  ValueId tensor(size_t i, const char* kw) const {
    const json* a = arg(i, kw);
    if (!a) fail(cat("missing tensor argument ", i, kw ? cat(" (", kw, ")") : ""));
    return ref(*a, i);
  }
  ValueId ref(const json& a, size_t i) const {
    if (!a.is_object() || !a.contains("node") || !a["node"].is_string())
      fail(cat("argument ", i, " must be a tensor (a {\"node\": name} reference), got ", a.dump()));
    auto it = env_.find(a["node"].get<std::string>());
    if (it == env_.end())
      fail(cat("argument ", i, " refers to '", a["node"].get<std::string>(),
               "', which is not defined before this node (undefined name or a cycle)"));
    if (it->second.size() != 1)
      fail(cat("argument ", i, " refers to '", a["node"].get<std::string>(), "', which has ", it->second.size(),
               " results; use getitem"));
    return it->second[0];
  }
  bool isTensor(size_t i, const char* kw) const {
    const json* a = arg(i, kw);
    return a && a->is_object() && a->contains("node");
  }
  double number(size_t i, const char* kw, std::optional<double> dflt = std::nullopt) const {
    const json* a = arg(i, kw);
    if (!a || a->is_null()) {
      if (dflt) return *dflt;
      fail(cat("missing number argument ", i));
    }
    if (a->is_number()) return a->get<double>();
    if (a->is_boolean()) return a->get<bool>();
    if (a->is_object() && a->contains("float")) {
      std::string s = (*a)["float"].get<std::string>();
      return s == "nan" ? std::nan("") : (s == "inf" ? HUGE_VAL : -HUGE_VAL);
    }
    fail(cat("argument ", i, " must be a number, got ", a->dump()));
  }
  /// An integer argument, read as an integer (never through a double) and
  /// range-checked, so no later arithmetic on it can overflow.
  int64_t integer(size_t i, const char* kw, std::optional<int64_t> dflt = std::nullopt) const {
    const json* a = arg(i, kw);
    if (!a || a->is_null()) {
      if (dflt) return *dflt;
      fail(cat("missing integer argument ", i));
    }
    if (a->is_boolean()) return a->get<bool>();
    if (!a->is_number_integer()) fail(cat("argument ", i, " must be an integer, got ", a->dump()));
    return checkedInt(*a, i);
  }
  /// An integer whose meaning saturates (a slice bound): any int64 is
  /// accepted and clamped to +-2^48.
  int64_t clampedInteger(size_t i, const char* kw, int64_t dflt) const {
    const json* a = arg(i, kw);
    if (!a || a->is_null()) return dflt;
    if (!a->is_number_integer()) fail(cat("argument ", i, " must be an integer, got ", a->dump()));
    if (a->is_number_unsigned()) return a->get<uint64_t>() > static_cast<uint64_t>(kMaxIntArg) ? kMaxIntArg : a->get<int64_t>();
    return std::clamp(a->get<int64_t>(), -kMaxIntArg, kMaxIntArg);
  }
  int64_t checkedInt(const json& x, size_t i) const {
    if (x.is_number_unsigned() && x.get<uint64_t>() > static_cast<uint64_t>(kMaxIntArg))
      fail(cat("argument ", i, " is out of range: ", x.dump()));
    int64_t v = x.get<int64_t>();
    if (v > kMaxIntArg || v < -kMaxIntArg) fail(cat("argument ", i, " is out of range: ", x.dump()));
    return v;
  }
  bool boolean(size_t i, const char* kw, bool dflt) const {
    const json* a = arg(i, kw);
    if (!a || a->is_null()) return dflt;
    if (!a->is_boolean()) fail(cat("argument ", i, " must be a bool, got ", a->dump()));
    return a->get<bool>();
  }
  Ints ints(size_t i, const char* kw, std::optional<Ints> dflt = std::nullopt) const {
    const json* a = arg(i, kw);
    if (!a || a->is_null()) {
      if (dflt) return *dflt;
      fail(cat("missing int-list argument ", i));
    }
    if (a->is_number_integer()) return {checkedInt(*a, i)};
    if (!a->is_array()) fail(cat("argument ", i, " must be a list of ints, got ", a->dump()));
    Ints v;
    for (auto& x : *a) {
      if (!x.is_number_integer()) fail(cat("argument ", i, " must be a list of ints, got ", a->dump()));
      v.push_back(checkedInt(x, i));
    }
    return v;
  }
  void requireNone(size_t i, const char* kw, const char* what) const {
    if (has(i, kw)) fail(cat(what, " is not supported (got ", arg(i, kw)->dump(), ")"));
  }
  /// Declares argument `i` / `kw` read without reading it: only for an
  /// argument that cannot change any value or gradient aotc computes (a
  /// device, pin_memory, a sparse-gradient layout); say why at the call.
  void ignore(size_t i, const char* kw) const { note(i, kw); }
  /// `inner` converted a rewritten copy of this node (arguments moved,
  /// filled in or wrapped): its arguments are checked against `spelling`'s
  /// schema (checkArgumentsRead), which accounts for all of this node's.
  void delegatedTo(const Converter& inner, const std::string& spelling) const;
  /// The positional indices and keywords read or ignored so far.
  const std::set<size_t>& readPositions() const { return readPos_; }
  const std::set<std::string>& readKeywords() const { return readKw_; }
  bool allRead() const { return allRead_; }

  /// A tensor operand, or a Python scalar turned into a 0-dim constant whose
  /// dtype follows `like` (ATen's wrapped-number promotion).
  ValueId operand(size_t i, const char* kw, ValueId like) {
    if (isTensor(i, kw)) return tensor(i, kw);
    double v = number(i, kw);
    const json* a = arg(i, kw);
    DType d = type(like).dtype;
    if (a->is_number_float() && !isFloating(d)) d = DType::F32;
    return scalar(v, d);
  }
  bool inBackward() const { return inBackward_; }
  const std::map<std::string, std::string>* names() const { return names_; }
  void setInBackward(bool b) { inBackward_ = b; }
  /// The user-facing name of a value (a custom backward's saved input is
  /// named after the model value it stands for).
  std::string describe(const std::string& name) const {
    auto it = names_ ? names_->find(name) : std::map<std::string, std::string>::const_iterator{};
    return names_ && it != names_->end() ? it->second : name;
  }
  void setNames(const std::map<std::string, std::string>* n) { names_ = n; }
  /// The values held as complex (re, im) pairs (Note [Complex values]).
  void setComplex(std::set<ValueId>* s) { complex_ = s; }
  /// Storage that an as_strided gather copied (Note [as_strided as a gather]).
  void setSnapshots(std::set<ValueId>* s) { snapshots_ = s; }
  /// Whether the graph recorded a layout for `v` other than the IR's.
  void setLayout(const std::map<ValueId, Ints>* l) { layout_ = l; }
  bool recordedLayout(ValueId v) const { return layout_ && layout_->count(v); }
  void markSnapshot(ValueId v) {
    if (!snapshots_) fail("as_strided that moves elements is not supported here");
    snapshots_->insert(v);
  }
  std::set<ValueId>* complexValues() const { return complex_; }
  bool isComplex(ValueId v) const { return complex_ && complex_->count(v); }
  /// A converter for `node` (which must outlive it) that shares this one's
  /// graph, location, environment and per-body state.
  Converter sub(const json& node) {
    Converter s(graph(), node, loc(), env_, noGrad());
    s.inBackward_ = inBackward_;
    s.names_ = names_;
    s.complex_ = complex_;
    s.snapshots_ = snapshots_;
    s.layout_ = layout_;
    return s;
  }
  const json& node() const { return node_; }
  const Env& env() const { return env_; }

 private:
  void note(size_t i, const char* kw) const {
    if (i != SIZE_MAX) readPos_.insert(i);
    if (kw) readKw_.insert(kw);
  }

  const json& node_;
  const Env& env_;
  // Note [No argument dropped]: what the converter read, per node.
  mutable std::set<size_t> readPos_;
  mutable std::set<std::string> readKw_;
  mutable bool allRead_ = false;
  bool inBackward_ = false;
  const std::map<std::string, std::string>* names_ = nullptr;
  std::set<ValueId>* complex_ = nullptr;
  std::set<ValueId>* snapshots_ = nullptr;
  const std::map<ValueId, Ints>* layout_ = nullptr;
};

using V = std::vector<ValueId>;
using namespace decomp;

/// Spelling -> converter (Note [FX converter tables]).
using Table = std::map<std::string, ConvertFn>;
/// One family's entries.
using Entries = std::vector<std::pair<std::string, ConvertFn>>;

// creation.cpp
ValueId filled(Converter& c, double v, size_t dtypeArg);
// readers.cpp
V binary(Converter& c, OpKind k);
V unary(Converter& c, OpKind k);
/// Accounts for the keyword-only tensor options (layout: strided only;
/// device, pin_memory, non_blocking, memory_format: cannot change a value)
/// (Note [No argument dropped]).
void tensorOptions(Converter& c);
ValueId constantLike(Converter& c, double v, const TensorType& t);
DType dtypeArg(Converter& c, size_t i, const char* kw, DType dflt);
int64_t dimArg(Converter& c, size_t i, const char* kw, ValueId x, int64_t dflt = 0);
V inplaceOf(Converter& c, ValueId v);
std::optional<double> optNumber(Converter& c, size_t i, const char* kw);
// normalization.cpp
V batchNormOf(Converter& c, bool functional);
// reductions.cpp
V reduce(Converter& c, OpKind k, bool with_dims);
V cumsum(Converter& c);
// views.cpp
V reshape(Converter& c);
V transpose(Converter& c, OpKind k);
V stack(Converter& c);
ValueId storageRoot(const Graph& g, ValueId v);
// windows.cpp
V convolution(Converter& c);

Entries attentionConverters();
Entries compositesConverters();
Entries controlConverters();
Entries creationConverters();
Entries gathersConverters();
Entries linalgConverters();
Entries lossesConverters();
Entries normalizationConverters();
Entries pointwiseConverters();
Entries randomConverters();
Entries reductionsConverters();
Entries samplingConverters();
Entries trainingConverters();
Entries viewsConverters();
Entries windowsConverters();

/// Every listed spelling: the family tables and the pointwise rows (table.cpp).
const Table& converters();
/// The spelling split at its last dot (Note [Generic spellings]).
namespace spelling {
struct Parsed {
  std::string name, overload;  ///< "aten.add_", "Tensor"
};
std::optional<Parsed> parse(const std::string& target);
}  // namespace spelling
/// Note [Shape computations].
bool isShapeComputation(const std::string& target);
/// Whether `target` converts: listed, complex, a shape computation or derived.
bool knownTarget(const std::string& target, int depth = 0);
/// Converts the node under `target` (listed, complex or derived).
V convertTarget(Converter& c, const std::string& target, int depth = 0);

/// Note [No argument dropped] (table.cpp): refuses, naming it, an argument of
/// `c`'s node that its converter neither read nor ignored and that is not at
/// its default in `spelling`'s ATen schema.
void checkArgumentsRead(const Converter& c, const std::string& spelling);
/// One argument of an ATen schema (schemas.inc, scripts/fx_schemas.py).
struct SchemaArg {
  const char* name;
  bool keywordOnly;
  const char* dflt;  ///< the default as JSON text; nullptr: required
};
struct Schema {
  const char* spelling;
  const char* torch;  ///< the PyTorch version it was read from
  std::vector<SchemaArg> args;
};
/// The ATen schema of a listed spelling, or null (schemas.cpp).
const Schema* atenSchema(const std::string& spelling);

/// Note [Complex values] (complex.cpp).
bool complexTarget(const std::string& target);
std::optional<V> convertComplex(Converter& c, const std::string& target);

}  // namespace aotc::fx
