//===- onnx.cpp - ONNX -> captured IR ---------------------------------------===//
//
// Note [ONNX front end]: a model is read with the protobuf classes of ONNX
// 1.12 (libonnx-dev), checked by ONNX's checker, and its shapes inferred by
// ONNX's C++ shape inference once every symbolic dim is bound (--shape,
// --dim).  Each node is then converted by the converter of its op type, at the
// model's opset (attributes that became inputs, changed defaults), through the
// one Builder and the shared decompositions.
//
// Note [Compile-time values]: ONNX computes shapes with tensors (Shape ->
// Gather -> Concat -> Reshape), and several ops take shapes, axes, pads or
// scales as inputs.  aotc's shapes are static, so such values must be known
// when compiling.  A value is known when it is a Constant, an initializer
// read as a compile-time input, a Shape or Size, or the result of a node whose
// inputs are all known: that node is converted into a scratch graph and
// evaluated there by the reference kernels (the oracle), so folding has no
// semantics of its own.  A known value becomes IR only when some node uses it
// as a tensor (a splat as a constant node, anything else as a constant
// input).  An op that needs a known input and gets a runtime one is refused
// with a message naming the node and the input.  An initializer used both as
// a compile-time value and as a tensor is a constant of the artifact (never a
// parameter a caller could override and so desynchronize).
//
// After conversion every output shape aotc computed is compared with ONNX's
// shape inference where that is static: a disagreement is refused, never
// compiled.
//===----------------------------------------------------------------------===//
#include "aotc/frontend/onnx.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "aotc/ir/safetensors.h"
#include "aotc/ir/unify.h"
#include "aotc/ops/builder.h"
#include "aotc/ops/decompose.h"
#include "aotc/ops/ops.h"
#include "aotc/ops/reference.h"

namespace aotc {

namespace {

namespace fs = std::filesystem;
using namespace decomp;
using V = std::vector<ValueId>;

constexpr uint64_t kMaxFileBytes = uint64_t{2} << 30;  // protobuf's own limit
constexpr size_t kMaxNodes = 250000;
/// Known values up to this many elements are folded (Note [Compile-time values]).
constexpr int64_t kMaxFoldElements = int64_t{1} << 20;
constexpr int kMaxOpset = 17;

std::optional<DType> dtypeOfOnnx(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DType::F32;
    case onnx::TensorProto::DOUBLE: return DType::F64;
    case onnx::TensorProto::FLOAT16: return DType::F16;
    case onnx::TensorProto::BFLOAT16: return DType::BF16;
    case onnx::TensorProto::INT64: return DType::I64;
    case onnx::TensorProto::INT32: return DType::I32;
    case onnx::TensorProto::BOOL: return DType::Bool;
    case onnx::TensorProto::INT8: return DType::I8;
    case onnx::TensorProto::INT16: return DType::I16;
    case onnx::TensorProto::UINT8: return DType::U8;
    case onnx::TensorProto::UINT16: return DType::U16;
    case onnx::TensorProto::UINT32: return DType::U32;
    case onnx::TensorProto::UINT64: return DType::U64;
    default: return std::nullopt;
  }
}

std::string onnxTypeName(int t) {
  return onnx::TensorProto::DataType_IsValid(t) ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(t))
                                                : cat("type ", t);
}

/// A valid aotc name for an ONNX name: characters outside [A-Za-z0-9_.-]
/// become '_' (ONNX names such as `onnx::Conv_12` or `/l1/Relu_output_0`).
std::string sanitize(const std::string& s) {
  std::string r;
  for (char c : s) r += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ? c : '_';
  if (r.empty()) r = "v";
  if (r.size() > 200) r = r.substr(0, 200);
  return r;
}

// ------------------------------------------------------------------ tensors

/// External data must stay inside the model's directory: a relative path
/// without `..`.
bool safeExternalLocation(const std::string& location) {
  fs::path rel(location);
  bool safe = !location.empty() && rel.is_relative();
  for (const auto& part : rel) safe = safe && part != "..";
  return safe;
}

/// How many inline values a TensorProto holds in the field its dtype uses.
int64_t inlineValues(const onnx::TensorProto& t, DType dt) {
  switch (dt) {
    case DType::F32: return t.float_data_size();
    case DType::F64: return t.double_data_size();
    case DType::I64: return t.int64_data_size();
    case DType::U32: case DType::U64: return t.uint64_data_size();
    default: return t.int32_data_size();  // int32, bool, 8- and 16-bit ints, f16/bf16 bits
  }
}

/// Reads a TensorProto (inline or external data) into a HostTensor.
HostTensor readTensor(const onnx::TensorProto& t, const fs::path& dir, const SourceLoc& loc, const std::string& what) {
  auto dt = dtypeOfOnnx(t.data_type());
  if (!dt) throw UserError(loc, cat(what, " has element type ", onnxTypeName(t.data_type()), ", which aotc does not support"));
  HostTensor h;
  h.dtype = *dt;
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || d > kMaxExtent) throw UserError(loc, cat(what, " has a bad dim ", d));
    h.sizes.push_back(d);
    n = mulSize(n, d);
  }
  if (n > kMaxElements) throw UserError(loc, cat(what, " has ", n, " elements, beyond aotc's bound"));
  const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(dtypeSize(*dt));
  std::string raw;
  const std::string* data = nullptr;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset" || kv.key() == "length") {
        int64_t v = 0;
        try {
          size_t used = 0;
          v = std::stoll(kv.value(), &used);
          if (used != kv.value().size() || v < 0) throw std::invalid_argument("");
        } catch (const std::exception&) {
          throw UserError(loc, cat(what, ": external data ", kv.key(), " '", kv.value(), "' is not a non-negative integer"));
        }
        (kv.key() == "offset" ? offset : length) = v;
      }
    }
    if (!safeExternalLocation(location))
      throw UserError(loc, cat(what, ": external data location '", location, "' must be a relative path inside the model's directory"));
    fs::path file = dir / location;
    std::ifstream f(file, std::ios::binary);
    if (!f) throw UserError(loc, cat(what, ": cannot open external data file ", file.string()));
    std::error_code ec;
    uint64_t size = fs::file_size(file, ec);
    if (ec) throw UserError(loc, cat(what, ": cannot read external data file ", file.string()));
    uint64_t want = length >= 0 ? static_cast<uint64_t>(length) : bytes;
    if (want != bytes) throw UserError(loc, cat(what, ": external data length ", want, " does not match its ", bytes, " bytes"));
    if (static_cast<uint64_t>(offset) > size || size - static_cast<uint64_t>(offset) < want)
      throw UserError(loc, cat(what, ": external data file ", file.string(), " holds ", size, " bytes, too few for offset ", offset,
                               " and length ", want));
    raw.resize(want);
    f.seekg(offset);
    f.read(raw.data(), static_cast<std::streamsize>(want));
    if (!f) throw UserError(loc, cat(what, ": cannot read external data file ", file.string()));
    data = &raw;
  } else if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      throw UserError(loc, cat(what, ": raw data holds ", t.raw_data().size(), " bytes, its shape needs ", bytes));
    data = &t.raw_data();
  } else if (inlineValues(t, *dt) != n) {
    // Checked before anything is allocated: the dims alone promise nothing
    // (a fuzzed 5x5 tensor with mangled dims asked for 147 GB here).
    throw UserError(loc, cat(what, " holds ", inlineValues(t, *dt), " values, its shape needs ", n));
  }
  h.data.resize(static_cast<size_t>(n));
  if (data) {
    const auto* p = reinterpret_cast<const unsigned char*>(data->data());
    for (size_t i = 0; i < h.data.size(); ++i) h.data[i] = loadElement(*dt, p + i * static_cast<size_t>(dtypeSize(*dt)));
  } else {
    switch (*dt) {
      case DType::F32:
        for (int64_t i = 0; i < n; ++i) h.data[static_cast<size_t>(i)] = t.float_data(static_cast<int>(i));
        break;
      case DType::F64:
        for (int64_t i = 0; i < n; ++i) h.data[static_cast<size_t>(i)] = t.double_data(static_cast<int>(i));
        break;
      case DType::I64:
        for (int64_t i = 0; i < n; ++i) h.data[static_cast<size_t>(i)] = static_cast<double>(t.int64_data(static_cast<int>(i)));
        break;
      case DType::I32:
      case DType::Bool:
      case DType::I8:
      case DType::I16:
      case DType::U8:
      case DType::U16:
        for (int64_t i = 0; i < n; ++i) h.data[static_cast<size_t>(i)] = roundTo(*dt, t.int32_data(static_cast<int>(i)));
        break;
      case DType::U32:
      case DType::U64:
        for (int64_t i = 0; i < n; ++i) h.data[static_cast<size_t>(i)] = roundTo(*dt, static_cast<double>(t.uint64_data(static_cast<int>(i))));
        break;
      case DType::F16:
      case DType::BF16:
        for (int64_t i = 0; i < n; ++i) {
          uint16_t bits = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
          unsigned char b[2] = {static_cast<unsigned char>(bits & 0xff), static_cast<unsigned char>(bits >> 8)};
          h.data[static_cast<size_t>(i)] = loadElement(*dt, b);
        }
        break;
    }
  }
  // Note [Exact integers]: aotc's CPU runtimes hold elements as doubles, so
  // an int64 beyond 2^53 cannot be held exactly.  Such values (INT64_MAX as
  // "to the end" of a Slice) are saturated to +-2^62 here; compile-time uses
  // saturate them anyway, and a tensor holding one is refused where it would
  // reach a runtime (materialize).
  if (*dt == DType::I64)
    for (double& v : h.data) v = std::clamp(v, -0x1p62, 0x1p62);
  return h;
}


// ---------------------------------------------------------------- converter

bool isSplat(const HostTensor& t) {
  for (double v : t.data)
    if (!(v == t.data[0] || (v != v && t.data[0] != t.data[0]))) return false;
  return true;
}


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

class Loader;

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
  HostTensor readAttrTensor(const onnx::TensorProto& t) const { return readTensor(t, fs::path(), loc(), "attribute tensor"); }

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

using Convert = Outs (*)(Node&);

// ------------------------------------------------------------ converters

Outs unary(Node& c, OpKind k) { return {c.op(k, {c.in(0)})}; }
Outs binary(Node& c, OpKind k) {
  ValueId a = c.in(0);
  ValueId b = c.in(1);
  return {c.op(k, {a, b})};
}

/// Integer division and modulo must not meet a zero divisor in a kernel: the
/// divisor is made 1 there and the result 0 (what numpy, ONNX's reference,
/// gives).
ValueId safeIntBinary(Node& c, OpKind k, ValueId a, ValueId b) {
  ValueId zero = c.scalarLike(0, b);
  ValueId isZero = bin(c, OpKind::Eq, {b, zero});
  ValueId one = c.scalarLike(1, b);
  ValueId safe = c.op(OpKind::Where, {isZero, one, b});
  ValueId r = c.op(k, {a, safe});
  return c.op(OpKind::Where, {isZero, c.scalarLike(0, r), r});
}

Outs divOp(Node& c) {
  ValueId a = c.in(0), b = c.in(1);
  DType d = c.type(a).dtype;
  if (isFloating(d)) return {c.op(OpKind::Div, {a, b})};
  // ONNX integer division truncates toward zero (C, numpy's trunc for the reference).
  ValueId q = safeIntBinary(c, OpKind::Div, c.cast(a, DType::F64), c.cast(b, DType::F64));
  return {c.cast(c.op(OpKind::Trunc, {q}), d)};
}

Outs modOp(Node& c) {
  ValueId a = c.in(0), b = c.in(1);
  bool fmod = c.i("fmod", 0) != 0;
  if (isFloating(c.type(a).dtype)) {
    if (!fmod) c.fail("Mod of floating-point inputs requires fmod=1");
    return {c.op(OpKind::Fmod, {a, b})};
  }
  return {safeIntBinary(c, fmod ? OpKind::Fmod : OpKind::Remainder, a, b)};
}

Outs powOp(Node& c) {
  ValueId a = c.in(0);
  ValueId b = c.cast(c.in(1), c.type(a).dtype);
  return {c.op(OpKind::Pow, {a, b})};
}

/// BitShift (unsigned types): x * 2^y or x / 2^y, and 0 where y reaches the
/// type's width (numpy's and C's rule for unsigned operands; 2^y itself
/// would wrap there).
Outs bitShiftOp(Node& c) {
  ValueId x = c.in(0), y = c.in(1);
  DType d = c.type(x).dtype;
  if (!isUnsigned(d) || c.type(y).dtype != d) c.fail(cat("BitShift takes two tensors of one unsigned type, got ", dtypeName(d), " and ", dtypeName(c.type(y).dtype)));
  std::string dir = c.s("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") c.fail(cat("BitShift: direction must be LEFT or RIGHT, got '", dir, "'"));
  ValueId big = bin(c, OpKind::Ge, {y, c.scalarLike(static_cast<double>(dtypeSize(d) * 8), y)});
  ValueId zero = c.scalarLike(0, y);
  ValueId p = c.op(OpKind::Pow, {c.scalarLike(2, y), c.op(OpKind::Where, {big, zero, y})});
  ValueId r = dir == "LEFT" ? c.op(OpKind::Mul, {x, p})
                            : c.cast(c.op(OpKind::Trunc, {c.op(OpKind::Div, {c.cast(x, DType::F64), c.cast(p, DType::F64)})}), d);
  return {c.op(OpKind::Where, {big, c.scalarLike(0, r), r})};
}

/// Sum / Mean / Max / Min over any number of broadcasting inputs.
Outs variadic(Node& c, OpKind k, bool mean) {
  ValueId r = c.in(0);
  for (size_t i = 1; i < c.numInputs(); ++i) {
    ValueId x = c.in(i);
    r = c.op(k, {r, x});
  }
  if (mean) r = c.div(r, c.scalarLike(static_cast<double>(c.numInputs()), r));
  return {r};
}

Outs castOp(Node& c) {
  auto d = dtypeOfOnnx(static_cast<int>(c.i("to")));
  if (!d) c.fail(cat("Cast to ", onnxTypeName(static_cast<int>(c.i("to"))), " is not supported"));
  return {c.cast(c.in(0), *d)};
}

Outs clipOp(Node& c) {
  ValueId y = c.in(0);
  if (c.opset() < 11) {
    std::optional<double> lo, hi;
    if (c.hasAttr("min")) lo = c.f("min", 0);
    if (c.hasAttr("max")) hi = c.f("max", 0);
    return {clampOp(c, y, lo, hi)};
  }
  if (c.has(1)) {
    ValueId lo = c.in(1);
    y = c.op(OpKind::Where, {bin(c, OpKind::Lt, {y, lo}), lo, y});
  }
  if (c.has(2)) {
    ValueId hi = c.in(2);
    y = c.op(OpKind::Where, {bin(c, OpKind::Gt, {y, hi}), hi, y});
  }
  return {y};
}

Outs eluOp(Node& c) { return {elu(c, c.in(0), c.f("alpha", 1.0), 1.0, 1.0)}; }
Outs seluOp(Node& c) {
  return {elu(c, c.in(0), c.f("alpha", 1.67326319217681884765625), c.f("gamma", 1.05070102214813232421875), 1.0)};
}
// Not relu(x) + min(0, alpha * expm1(x / alpha)): at 0 its pieces' gradients
// (0, and half of a tie) give 1/2 where celu's derivative is 1.
Outs celuOp(Node& c) { return {celu(c, c.in(0), c.f("alpha", 1.0))}; }
Outs hardSigmoidOp(Node& c) {
  ValueId x = c.in(0);
  ValueId lin = c.add(c.scaled(x, c.f("alpha", 0.2)), sc(c, c.f("beta", 0.5), x));
  return {clampOp(c, lin, 0.0, 1.0)};
}
Outs hardSwishOp(Node& c) {
  ValueId x = c.in(0);
  ValueId lin = c.add(c.scaled(x, 1.0 / 6.0), sc(c, 0.5, x));
  return {c.mul(x, clampOp(c, lin, 0.0, 1.0))};
}
Outs softplusOp(Node& c) {
  // log(exp(x) + 1) as ATen's softplus: log1p(exp(x)), and x past 20 (where
  // the two differ by less than exp(-20)).  Not max(x, 0) + log1p(exp(-|x|)):
  // its pieces' subgradients at 0 give the gradient 0 there, not 1/2 (found
  // by scripts/onnx_gradcheck on test_softplus_example).
  return {softplus(c, c.in(0), 1.0, 20.0)};
}
Outs softsignOp(Node& c) {
  ValueId x = c.in(0);
  return {c.div(x, c.add(c.op(OpKind::Abs, {x}), sc(c, 1.0, x)))};
}
Outs thresholdedReluOp(Node& c) {
  ValueId x = c.in(0);
  ValueId keep = bin(c, OpKind::Gt, {x, sc(c, c.f("alpha", 1.0), x)});
  return {c.op(OpKind::Where, {keep, x, sc(c, 0.0, x)})};
}
Outs shrinkOp(Node& c) {
  ValueId x = c.in(0);
  double l = c.f("lambd", 0.5), b = c.f("bias", 0.0);
  ValueId lo = bin(c, OpKind::Lt, {x, sc(c, -l, x)});
  ValueId hi = bin(c, OpKind::Gt, {x, sc(c, l, x)});
  ValueId plus = c.add(x, sc(c, b, x));
  ValueId minus = c.sub(x, sc(c, b, x));
  ValueId mid = c.op(OpKind::Where, {hi, minus, sc(c, 0.0, x)});
  return {c.op(OpKind::Where, {lo, plus, mid})};
}
Outs preluOp(Node& c) {
  ValueId x = c.in(0), slope = c.in(1);
  const Ints xs = c.type(x).sizes;
  if (c.type(slope).rank() == 1 && xs.size() >= 2 && c.type(slope).sizes[0] == xs[1] && xs.back() != xs[1]) {
    // Before opset 7 (and as exporters still write it) a [C] slope is per
    // channel: shaped [C, 1, ...] to broadcast over dim 1.
    Ints shape(xs.size() - 1, 1);
    shape[0] = xs[1];
    slope = c.reshape(slope, shape);
  }
  ValueId neg = c.mul(x, slope);
  if (c.type(neg).sizes != c.type(x).sizes) c.fail("PRelu: the slope does not broadcast to the input's shape");
  return {c.op(OpKind::Where, {bin(c, OpKind::Lt, {x, sc(c, 0.0, x)}), neg, x})};
}
Outs leakyReluOp(Node& c) { return {leakyRelu(c, c.in(0), c.f("alpha", 0.01))}; }
Outs isInfOp(Node& c) {
  ValueId x = c.in(0);
  bool neg = c.i("detect_negative", 1) != 0, pos = c.i("detect_positive", 1) != 0;
  ValueId inf = c.op(OpKind::IsInf, {x});
  if (neg && pos) return {inf};
  ValueId sign = bin(c, pos ? OpKind::Gt : OpKind::Lt, {x, sc(c, 0.0, x)});
  if (!neg && !pos) return {bin(c, OpKind::LogicalAnd, {inf, c.op(OpKind::LogicalNot, {inf})})};
  return {bin(c, OpKind::LogicalAnd, {inf, sign})};
}
Outs xorOp(Node& c) { return binary(c, OpKind::Ne); }

// ------------------------------------------------------------ shapes, views

Outs shapeOp(Node& c) {
  Ints s = c.typeIn(0).sizes;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t start = c.i("start", 0), end = c.i("end", r);
  start = std::clamp(start < 0 ? start + r : start, int64_t{0}, r);
  end = std::clamp(end < 0 ? end + r : end, int64_t{0}, r);
  HostTensor t = HostTensor::zeros(DType::I64, {std::max<int64_t>(end - start, 0)});
  for (int64_t k = start; k < end; ++k) t.data[static_cast<size_t>(k - start)] = static_cast<double>(s[static_cast<size_t>(k)]);
  return {t};
}
Outs sizeOp(Node& c) {
  HostTensor t = HostTensor::zeros(DType::I64, {});
  t.data[0] = static_cast<double>(c.typeIn(0).numel());
  return {t};
}

Outs reshapeOp(Node& c) {
  ValueId x = c.in(0);
  Ints shape = c.knownInts(1, "shape");
  const Ints in = c.type(x).sizes;
  bool allowZero = c.i("allowzero", 0) != 0;
  for (size_t k = 0; k < shape.size(); ++k)
    if (shape[k] == 0 && !allowZero) {
      if (k >= in.size()) c.fail("Reshape: a 0 in the shape copies a dim the input does not have");
      shape[k] = in[k];
    }
  return {c.reshape(x, shape)};
}

Outs flattenOp(Node& c) {
  ValueId x = c.in(0);
  const Ints s = c.type(x).sizes;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t a = c.i("axis", 1);
  if (a < -r || a > r) c.fail(cat("Flatten: axis ", a, " is out of range"));
  if (a < 0) a += r;
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < r; ++k) (k < a ? outer : inner) = mulSize(k < a ? outer : inner, s[static_cast<size_t>(k)]);
  return {c.reshape(x, {outer, inner})};
}

Outs transposeOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  Ints perm;
  for (int64_t k = r - 1; k >= 0; --k) perm.push_back(k);
  perm = c.ints("perm", perm);
  return {c.op(OpKind::Permute, {x}, Attrs{{"dims", perm}})};
}

Ints axesOf(Node& c, size_t input, const char* attrName, bool fromInput) {
  if (fromInput) return c.has(input) ? c.knownInts(input, "axes") : Ints{};
  return c.ints(attrName, Ints{});
}

Outs squeezeOp(Node& c) {
  ValueId x = c.in(0);
  Ints axes = axesOf(c, 1, "axes", c.opset() >= 13);
  int64_t r = c.type(x).rank();
  Ints dims;
  if (axes.empty()) {
    for (int64_t k = 0; k < r; ++k)
      if (c.type(x).sizes[static_cast<size_t>(k)] == 1) dims.push_back(k);
  } else {
    for (int64_t a : axes) {
      int64_t d = c.axis(a, r);
      if (c.type(x).sizes[static_cast<size_t>(d)] != 1) c.fail(cat("Squeeze: dim ", d, " has size ", c.type(x).sizes[static_cast<size_t>(d)], ", not 1"));
      dims.push_back(d);
    }
  }
  if (dims.empty()) return {x};
  return {c.op(OpKind::Squeeze, {x}, Attrs{{"dim", dims}})};
}

Outs unsqueezeOp(Node& c) {
  ValueId x = c.in(0);
  Ints axes = axesOf(c, 1, "axes", c.opset() >= 13);
  if (axes.empty()) c.fail("Unsqueeze: axes are required");
  int64_t outRank = c.type(x).rank() + static_cast<int64_t>(axes.size());
  Ints norm;
  for (int64_t a : axes) norm.push_back(c.axis(a, outRank));
  std::sort(norm.begin(), norm.end());
  if (std::adjacent_find(norm.begin(), norm.end()) != norm.end()) c.fail("Unsqueeze: repeated axis");
  for (int64_t d : norm) x = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", d}});
  return {x};
}

Outs concatOp(Node& c) {
  V xs;
  for (size_t k = 0; k < c.numInputs(); ++k) xs.push_back(c.in(k));
  int64_t r = c.type(xs[0]).rank();
  return {c.op(OpKind::Cat, xs, Attrs{{"dim", c.axis(c.i("axis"), r)}})};
}

Outs splitOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  int64_t a = c.axis(c.i("axis", 0), r);
  int64_t n = c.type(x).sizes[static_cast<size_t>(a)];
  Ints sizes = c.opset() >= 13 ? (c.has(1) ? c.knownInts(1, "split") : Ints{}) : c.ints("split", Ints{});
  size_t outs = c.numOutputs();
  if (sizes.empty()) {
    if (outs == 0 || n % static_cast<int64_t>(outs)) c.fail(cat("Split: dim ", a, " of size ", n, " does not split into ", outs, " equal parts"));
    sizes.assign(outs, n / static_cast<int64_t>(outs));
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) c.fail("Split: negative split size");
    total += s;
  }
  if (total != n || sizes.size() != outs) c.fail(cat("Split: sizes do not add up to dim ", a, " (", n, ") or do not match the ", outs, " outputs"));
  V parts = splitSizes(c, x, a, sizes);
  return Outs(parts.begin(), parts.end());
}

Outs sliceOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  Ints starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.ints("starts", std::nullopt, true);
    ends = c.ints("ends", std::nullopt, true);
    axes = c.ints("axes", Ints{});
  } else {
    starts = c.knownInts(1, "starts", true);
    ends = c.knownInts(2, "ends", true);
    if (c.has(3)) axes = c.knownInts(3, "axes");
    if (c.has(4)) steps = c.knownInts(4, "steps");
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("Slice: starts, ends, axes and steps must have the same length");
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t d = c.axis(axes[k], r);
    if (steps[k] == 0) c.fail("Slice: step must not be 0");
    int64_t n = c.type(x).sizes[static_cast<size_t>(d)];
    int64_t st = steps[k];
    // ONNX's clamping: [0, n] for a positive step; for a negative one the
    // start is clamped to [0, n-1] and the end to [-1, n-1].
    auto clampIdx = [&](int64_t v, bool isEnd) {
      if (v < 0) v += n;
      if (st > 0) return std::clamp<int64_t>(v, 0, n);
      return std::clamp<int64_t>(v, isEnd ? -1 : 0, n - 1);
    };
    int64_t s = clampIdx(std::clamp(starts[k], -kMaxExtent, kMaxExtent), false);
    int64_t e = clampIdx(std::clamp(ends[k], -kMaxExtent, kMaxExtent), true);
    if (st > 0) {
      x = c.op(OpKind::Slice, {x}, Attrs{{"dim", d}, {"start", s}, {"end", std::max(e, s)}, {"step", st}});
    } else {
      // A negative step: the elements s, s+st, ... while > e, picked by index.
      Ints idx;
      for (int64_t v = s; v > e; v += st) idx.push_back(v);
      if (static_cast<int64_t>(idx.size()) > kMaxIndexMap) c.fail("Slice: too many elements for a negative step");
      x = idx.empty() ? c.op(OpKind::Slice, {x}, Attrs{{"dim", d}, {"start", int64_t{0}}, {"end", int64_t{0}}, {"step", int64_t{1}}})
                      : pick(c, x, d, idx);
    }
  }
  return {x};
}

Outs expandOp(Node& c) {
  ValueId x = c.in(0);
  Ints shape = c.knownInts(1, "shape");
  auto out = broadcastShapes(c.type(x).sizes, shape);
  if (!out) c.fail("Expand: the shape does not broadcast with the input's");
  if (*out == c.type(x).sizes) return {x};
  return {c.op(OpKind::Expand, {x}, Attrs{{"size", *out}})};
}

Outs tileOp(Node& c) {
  ValueId x = c.in(0);
  Ints reps = c.knownInts(1, "repeats");
  if (static_cast<int64_t>(reps.size()) != c.type(x).rank()) c.fail("Tile: repeats must have one entry per dim");
  return {repeatOp(c, x, reps)};
}

HostTensor fillValue(Node& c, const Ints& shape) {
  HostTensor v = HostTensor::zeros(DType::F32, {});
  if (const auto* t = c.tensorAttr("value")) {
    v = c.readAttrTensor(*t);
    if (v.data.size() != 1) c.fail("ConstantOfShape: value must hold one element");
  }
  for (int64_t d : shape)
    if (d < 0) c.fail("ConstantOfShape: negative dim");
  int64_t n = 1;
  for (int64_t d : shape) n = mulSize(n, d);
  if (n > kMaxElements) c.fail("ConstantOfShape: too many elements");
  HostTensor out = HostTensor::zeros(v.dtype, shape);
  std::fill(out.data.begin(), out.data.end(), v.data[0]);
  return out;
}
Outs constantOfShapeOp(Node& c) { return {fillValue(c, c.knownInts(0, "shape"))}; }

Outs constantOp(Node& c) {
  if (const auto* t = c.tensorAttr("value")) return {c.readAttrTensor(*t)};
  auto scalarOf = [&](double v, DType d) {
    HostTensor h = HostTensor::zeros(d, {});
    h.data[0] = roundTo(d, v);
    return h;
  };
  if (c.hasAttr("value_float")) return {scalarOf(c.f("value_float", 0), DType::F32)};
  if (c.hasAttr("value_int")) return {scalarOf(static_cast<double>(c.i("value_int")), DType::I64)};
  if (c.hasAttr("value_floats")) {
    auto fs = c.floats("value_floats");
    HostTensor h = HostTensor::zeros(DType::F32, {static_cast<int64_t>(fs.size())});
    for (size_t k = 0; k < fs.size(); ++k) h.data[k] = fs[k];
    return {h};
  }
  if (c.hasAttr("value_ints")) {
    Ints is = c.ints("value_ints");
    HostTensor h = HostTensor::zeros(DType::I64, {static_cast<int64_t>(is.size())});
    for (size_t k = 0; k < is.size(); ++k) h.data[k] = static_cast<double>(is[k]);
    return {h};
  }
  c.fail("Constant: only tensor, float and int values are supported (sparse and string constants are not)");
}

Outs rangeOp(Node& c) {
  double start = c.knownScalar(0, "start"), limit = c.knownScalar(1, "limit"), delta = c.knownScalar(2, "delta");
  DType d = c.dtypeIn(0);
  if (delta == 0) c.fail("Range: delta must not be 0");
  double cnt = std::ceil((limit - start) / delta);
  int64_t n = cnt > 0 ? static_cast<int64_t>(std::min(cnt, static_cast<double>(kMaxElements))) : 0;
  if (n >= kMaxFoldElements) c.fail("Range: too many elements");
  HostTensor t = HostTensor::zeros(d, {n});
  for (int64_t k = 0; k < n; ++k) t.data[static_cast<size_t>(k)] = roundTo(d, start + static_cast<double>(k) * delta);
  return {t};
}

Outs eyeLikeOp(Node& c) {
  const TensorType t = c.typeIn(0);
  if (t.rank() != 2) c.fail("EyeLike: the input must be 2-D");
  DType d = t.dtype;
  if (c.hasAttr("dtype")) {
    auto dd = dtypeOfOnnx(static_cast<int>(c.i("dtype")));
    if (!dd) c.fail("EyeLike: unsupported dtype");
    d = *dd;
  }
  int64_t k = c.i("k", 0);
  HostTensor h = HostTensor::zeros(d, t.sizes);
  for (int64_t r = 0; r < t.sizes[0]; ++r)
    if (r + k >= 0 && r + k < t.sizes[1]) h.data[static_cast<size_t>(r * t.sizes[1] + r + k)] = 1;
  return {h};
}

Outs depthToSpaceOp(Node& c) {
  ValueId x = c.in(0);
  const Ints s = c.type(x).sizes;
  if (s.size() != 4) c.fail("DepthToSpace: the input must be 4-D");
  int64_t b = c.i("blocksize");
  if (b <= 0 || s[1] % (b * b)) c.fail("DepthToSpace: channels must divide by blocksize^2");
  int64_t N = s[0], C = s[1], H = s[2], W = s[3], Co = C / (b * b);
  bool crd = c.s("mode", "DCR") == "CRD";
  ValueId t = crd ? c.reshape(x, {N, Co, b, b, H, W}) : c.reshape(x, {N, b, b, Co, H, W});
  Ints perm = crd ? Ints{0, 1, 4, 2, 5, 3} : Ints{0, 3, 4, 1, 5, 2};
  t = c.op(OpKind::Permute, {t}, Attrs{{"dims", perm}});
  return {c.reshape(t, {N, Co, H * b, W * b})};
}
Outs spaceToDepthOp(Node& c) {
  ValueId x = c.in(0);
  const Ints s = c.type(x).sizes;
  if (s.size() != 4) c.fail("SpaceToDepth: the input must be 4-D");
  int64_t b = c.i("blocksize");
  if (b <= 0 || s[2] % b || s[3] % b) c.fail("SpaceToDepth: height and width must divide by blocksize");
  int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  ValueId t = c.reshape(x, {N, C, H / b, b, W / b, b});
  t = c.op(OpKind::Permute, {t}, Attrs{{"dims", Ints{0, 3, 5, 1, 2, 4}}});
  return {c.reshape(t, {N, C * b * b, H / b, W / b})};
}

Outs identityOp(Node& c) { return {c.in(0)}; }

/// Hann, Hamming and Blackman windows (opset 17): known at compile time.
template <int Kind>
Outs windowOp(Node& c) {
  double size = c.knownScalar(0, "size");
  if (!(size >= 0) || size > static_cast<double>(kMaxFoldElements)) c.fail("the window size must be between 0 and 2^20");
  auto d = dtypeOfOnnx(static_cast<int>(c.i("output_datatype", onnx::TensorProto::FLOAT)));
  if (!d) c.fail("unsupported output_datatype");
  int64_t n = static_cast<int64_t>(size);
  double N = c.i("periodic", 1) ? size : size - 1;
  HostTensor t = HostTensor::zeros(*d, {n});
  const double pi = 3.14159265358979323846;
  for (int64_t k = 0; k < n; ++k) {
    double x = 2 * pi * static_cast<double>(k) / N;
    double v = Kind == 0 ? 0.5 - 0.5 * std::cos(x) : Kind == 1 ? 25.0 / 46.0 - (21.0 / 46.0) * std::cos(x)
                                                               : 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2 * x);
    t.data[static_cast<size_t>(k)] = roundTo(*d, v);
  }
  return {t};
}

// ------------------------------------------------------------ Fourier transforms
// ONNX spells a complex tensor as aotc holds one: a trailing dim of 2 (re,
// im), or of 1 for a real signal (Note [Complex tensors as pairs]).

/// The signal without its component dim, and whether it is complex.
std::pair<ValueId, bool> signalOf(Node& c, ValueId x, const char* what) {
  const TensorType t = c.type(x);
  if (t.rank() < 2 || (t.sizes.back() != 1 && t.sizes.back() != 2))
    c.fail(cat(what, ": the input's last dim must be 1 (real) or 2 (complex), got ", t.str()));
  if (!isFloating(t.dtype)) c.fail(cat(what, ": the input must be floating, got ", dtypeName(t.dtype)));
  if (t.sizes.back() == 2) return {x, true};
  return {c.reshape(x, Ints(t.sizes.begin(), t.sizes.end() - 1)), false};
}

/// DFT (opset 17): along `axis`, forward or inverse (scaled by 1/n), the
/// whole spectrum or (onesided, real input) its first n/2+1 bins;
/// dft_length pads the signal with zeros or truncates it.
Outs dftOp(Node& c) {
  ValueId x = c.in(0);
  const int64_t rank = c.type(x).rank();
  int64_t axis = c.axis(c.i("axis", 1), rank);
  if (axis == rank - 1) c.fail("DFT: axis names the last dim, which holds the components");
  bool inverse = c.i("inverse", 0) != 0, onesided = c.i("onesided", 0) != 0;
  int64_t n = c.type(x).sizes[static_cast<size_t>(axis)];
  if (c.has(1)) {
    int64_t len = static_cast<int64_t>(c.knownScalar(1, "dft_length"));
    if (len <= 0) c.fail(cat("DFT: dft_length must be positive, got ", len));
    if (len < n) {
      x = c.op(OpKind::Slice, {x}, Attrs{{"dim", axis}, {"start", int64_t{0}}, {"end", len}, {"step", int64_t{1}}});
    } else if (len > n) {
      TensorType z = c.type(x);
      z.sizes[static_cast<size_t>(axis)] = len - n;
      x = c.op(OpKind::Cat, {x, c.zeros(TensorType::contiguous(z.dtype, z.sizes))}, Attrs{{"dim", axis}});
    }
    n = len;
  }
  auto [sig, complex] = signalOf(c, x, "DFT");
  if (onesided && (complex || inverse)) c.fail("DFT: onesided takes a real input and a forward transform");
  ValueId y;
  if (!complex && !inverse) {
    y = dftRealToComplex(c, sig, axis, onesided);
  } else {
    if (!complex) sig = pairOf(c, sig, c.zeros(c.type(sig)));
    y = dftComplexToComplex(c, sig, axis, !inverse);
    if (inverse) y = c.scaled(y, 1.0 / static_cast<double>(n));
  }
  return {y};
}

/// STFT (opset 17): frames of frame_length every frame_step samples of a
/// [batch, length, 1|2] signal, times the window when given, each
/// transformed (onesided by default for a real signal): [batch, frames, bins, 2].
Outs stftOp(Node& c) {
  ValueId x = c.in(0);
  const TensorType t = c.type(x);
  if (t.rank() != 3) c.fail(cat("STFT: the signal must be [batch, length, 1 or 2], got ", t.str()));
  int64_t step = static_cast<int64_t>(c.knownScalar(1, "frame_step"));
  if (step <= 0) c.fail(cat("STFT: frame_step must be positive, got ", step));
  std::optional<ValueId> window;
  int64_t len = -1;
  if (c.has(2)) {
    window = c.in(2);
    if (c.type(*window).rank() != 1) c.fail("STFT: the window must be 1-D");
    len = c.type(*window).sizes[0];
  }
  if (c.has(3)) {
    int64_t fl = static_cast<int64_t>(c.knownScalar(3, "frame_length"));
    if (len >= 0 && fl != len) c.fail(cat("STFT: frame_length ", fl, " differs from the window's length ", len));
    len = fl;
  }
  if (len <= 0 || len > t.sizes[1]) c.fail(cat("STFT: the frame length must be between 1 and the signal's ", t.sizes[1], ", got ", len));
  const int64_t frames = (t.sizes[1] - len) / step + 1, comps = t.sizes[2];
  ValueId f = c.reshape(c.op(OpKind::IndexSelect, {x, c.reshape(frameIndex(c, frames, len, step), {frames * len})},
                             Attrs{{"dim", int64_t{1}}}),
                        {t.sizes[0], frames, len, comps});
  if (window) f = c.mul(f, c.reshape(*window, {1, 1, len, 1}));
  auto [sig, complex] = signalOf(c, f, "STFT");
  bool onesided = c.i("onesided", 1) != 0;
  if (complex && onesided) c.fail("STFT: onesided takes a real signal (set onesided=0)");
  return {complex ? dftComplexToComplex(c, sig, 2, true) : dftRealToComplex(c, sig, 2, onesided)};
}

// ------------------------------------------------------------ reductions

/// Axes of a Reduce* node (an attribute, or from ReduceSum 13 an input) and
/// keepdims; empty axes reduce everything unless noop_with_empty_axes.
struct ReduceSpec {
  Ints dims;
  bool keep;
  bool noop;
};
ReduceSpec reduceSpec(Node& c, int64_t rank, bool axesInput) {
  Ints axes = axesInput ? (c.has(1) ? c.knownInts(1, "axes") : Ints{}) : c.ints("axes", Ints{});
  ReduceSpec r{{}, c.i("keepdims", 1) != 0, false};
  if (axes.empty()) {
    if (c.i("noop_with_empty_axes", 0)) r.noop = true;
    for (int64_t k = 0; k < rank; ++k) r.dims.push_back(k);
  } else {
    for (int64_t a : axes) r.dims.push_back(c.axis(a, std::max<int64_t>(rank, 1)));
    std::sort(r.dims.begin(), r.dims.end());
    r.dims.erase(std::unique(r.dims.begin(), r.dims.end()), r.dims.end());
  }
  return r;
}

enum class Red { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };
template <Red R>
Outs reduceOnnx(Node& c) {
  ValueId x = c.in(0);
  int64_t rank = c.type(x).rank();
  ReduceSpec sp = reduceSpec(c, rank, R == Red::Sum && c.opset() >= 13);
  if (sp.noop) return {x};
  if (rank == 0) sp.dims.clear();
  auto red = [&](OpKind k, ValueId v) {
    if (c.type(v).rank() == 0) return v;
    return reduceOp(c, k, v, sp.dims, sp.keep);
  };
  switch (R) {
    case Red::Sum: return {red(OpKind::Sum, x)};
    case Red::Mean: return {red(OpKind::Mean, x)};
    case Red::Max: return {red(OpKind::Amax, x)};
    case Red::Min: return {red(OpKind::Amin, x)};
    case Red::Prod: return {red(OpKind::Prod, x)};
    case Red::L1: return {red(OpKind::Sum, c.op(OpKind::Abs, {x}))};
    case Red::L2: return {c.op(OpKind::Sqrt, {red(OpKind::Sum, c.mul(x, x))})};
    case Red::SumSquare: return {red(OpKind::Sum, c.mul(x, x))};
    case Red::LogSum: return {c.op(OpKind::Log, {red(OpKind::Sum, x)})};
    case Red::LogSumExp: {
      if (c.type(x).rank() == 0) return {x};
      ValueId m = c.op(OpKind::Detach, {reduceOp(c, OpKind::Amax, x, sp.dims, true)});
      // An infinite max would make x - m NaN: shift by 0 there.
      ValueId finite = c.op(OpKind::LogicalNot, {c.op(OpKind::IsInf, {m})});
      ValueId shift = c.op(OpKind::Where, {finite, m, sc(c, 0.0, m)});
      ValueId s = reduceOp(c, OpKind::Sum, c.op(OpKind::Exp, {c.sub(x, shift)}), sp.dims, sp.keep);
      ValueId back = sp.keep ? shift : c.op(OpKind::Squeeze, {shift}, Attrs{{"dim", sp.dims}});
      return {c.add(c.op(OpKind::Log, {s}), back)};
    }
  }
  return {};
}

/// ArgMax / ArgMin: argmax of an order-reversing map for the minimum; the
/// last index on ties when select_last_index (by flipping the axis).
template <bool Max>
Outs argOnnx(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  int64_t a = c.axis(c.i("axis", 0), std::max<int64_t>(r, 1));
  bool keep = c.i("keepdims", 1) != 0, last = c.i("select_last_index", 0) != 0;
  DType d = c.type(x).dtype;
  ValueId key = x;
  if (!Max) key = d == DType::Bool ? c.op(OpKind::LogicalNot, {x}) : isFloating(d) ? c.neg(x) : c.op(OpKind::BitwiseNot, {x});
  int64_t n = r == 0 ? 1 : c.type(x).sizes[static_cast<size_t>(a)];
  if (last && r > 0) key = flipOp(c, key, {a});
  ValueId idx = r == 0 ? c.scalar(0, DType::I64) : c.op(OpKind::ArgMax, {key}, Attrs{{"dim", a}, {"keepdim", keep}});
  if (last && r > 0) idx = c.sub(c.scalar(static_cast<double>(n - 1), DType::I64), idx);
  return {idx};
}

Outs softmaxOnnx(Node& c, bool log, bool hard) {
  ValueId x = c.in(0);
  const Ints s = c.type(x).sizes;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t a = c.axis(c.i("axis", c.opset() >= 13 ? -1 : 1), std::max<int64_t>(r, 1));
  auto apply = [&](ValueId v, int64_t dim) -> ValueId {
    if (!hard) return softmaxLike(c, v, dim, log);
    // Hardmax: 1 at the first maximum along dim, 0 elsewhere.
    ValueId idx = c.op(OpKind::ArgMax, {v}, Attrs{{"dim", dim}, {"keepdim", true}});
    int64_t n = c.type(v).sizes[static_cast<size_t>(dim)];
    Ints shape(static_cast<size_t>(c.type(v).rank()), 1);
    shape[static_cast<size_t>(dim)] = n;
    ValueId pos = c.reshape(iota(c, n), shape);
    return c.cast(bin(c, OpKind::Eq, {pos, idx}), c.type(v).dtype);
  };
  if (r == 0) return {log && !hard ? c.sub(x, x) : c.full(1.0, c.type(x))};  // one element: 1, or log 1 (NaN kept)
  if (c.opset() >= 13) return {apply(x, a)};
  // Before opset 13 the input is coerced to 2-D at `axis`.
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < r; ++k) (k < a ? outer : inner) = mulSize(k < a ? outer : inner, s[static_cast<size_t>(k)]);
  ValueId y = apply(c.reshape(x, {outer, inner}), 1);
  return {c.reshape(y, s)};
}

// ------------------------------------------------------------ indexing

/// Indices made non-negative: i + n where i < 0.
ValueId wrapNegative(Node& c, ValueId i, int64_t n) {
  ValueId neg = bin(c, OpKind::Lt, {i, c.scalar(0, DType::I64)});
  ValueId plus = c.add(i, c.scalar(static_cast<double>(n), DType::I64));
  return c.op(OpKind::Where, {neg, plus, i});
}

/// Gather along `axis`: index_select at the flattened indices (known ones
/// range-checked when compiling), reshaped to data[:axis] + indices + data[axis+1:].
Outs gatherOp(Node& c) {
  ValueId x = c.in(0);
  const Ints s = c.type(x).sizes;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t a = c.axis(c.i("axis", 0), r);
  int64_t n = s[static_cast<size_t>(a)];
  ValueId flatIdx;
  Ints idxShape;
  if (c.isKnown(1)) {
    const HostTensor& k = c.known(1, "indices");
    Ints list;
    for (double v : k.data) {
      if (v < -static_cast<double>(n) || v >= static_cast<double>(n)) c.fail(cat("index ", v, " is out of range for a dim of size ", n));
      list.push_back(static_cast<int64_t>(v < 0 ? v + static_cast<double>(n) : v));
    }
    flatIdx = indexVector(c, list);
    idxShape = k.sizes;
  } else {
    ValueId idx = wrapNegative(c, c.cast(c.in(1), DType::I64), n);
    idxShape = c.type(idx).sizes;
    flatIdx = c.reshape(idx, {c.type(idx).numel()});
  }
  ValueId flat = c.op(OpKind::IndexSelect, {x, flatIdx}, Attrs{{"dim", a}});
  Ints out(s.begin(), s.begin() + a);
  out.insert(out.end(), idxShape.begin(), idxShape.end());
  out.insert(out.end(), s.begin() + a + 1, s.end());
  return {c.reshape(flat, out)};
}

/// GatherElements / ScatterElements index along one axis: negative indices wrap.
ValueId elementIndices(Node& c, size_t input, int64_t n) { return wrapNegative(c, c.cast(c.in(input), DType::I64), n); }

Outs gatherElementsOp(Node& c) {
  ValueId x = c.in(0);
  int64_t a = c.axis(c.i("axis", 0), c.type(x).rank());
  ValueId idx = elementIndices(c, 1, c.type(x).sizes[static_cast<size_t>(a)]);
  return {c.op(OpKind::Gather, {x, idx}, Attrs{{"dim", a}})};
}

Outs scatterElementsOp(Node& c) {
  ValueId x = c.in(0);
  int64_t a = c.axis(c.i("axis", 0), c.type(x).rank());
  ValueId idx = elementIndices(c, 1, c.type(x).sizes[static_cast<size_t>(a)]);
  ValueId upd = c.in(2);
  std::string red = c.s("reduction", "none");
  if (red == "none") return {c.op(OpKind::Scatter, {x, idx, upd}, Attrs{{"dim", a}})};
  if (red == "add") return {c.op(OpKind::ScatterAdd, {x, idx, upd}, Attrs{{"dim", a}})};
  c.fail(cat("ScatterElements: reduction '", red, "' is not supported"));
}


/// GatherND / ScatterND address rows of `data` viewed as [prod(first dims), rest]:
/// the linear row of each index tuple (negative components wrapped), with
/// `batch` leading dims shared by data and indices.
struct NdRows {
  ValueId rows;    ///< int64 [M]: the row of each index tuple
  ValueId table;   ///< data as [B * prod(k dims), rest...]
  Ints lead;       ///< indices.shape[:-1]
  Ints rest;       ///< data.shape[batch + k:]
};
NdRows ndRows(Node& c, ValueId data, ValueId indices, int64_t batch) {
  const Ints ds = c.type(data).sizes, is = c.type(indices).sizes;
  int64_t ir = static_cast<int64_t>(is.size()), dr = static_cast<int64_t>(ds.size());
  if (ir < 1 || batch < 0 || batch >= ir || batch > dr) c.fail("bad batch_dims for these ranks");
  int64_t k = is.back();
  if (k < 1 || batch + k > dr) c.fail("the index tuples are longer than data has dims");
  for (int64_t b = 0; b < batch; ++b)
    if (ds[static_cast<size_t>(b)] != is[static_cast<size_t>(b)]) c.fail("data and indices differ in a batch dim");
  NdRows r;
  r.lead.assign(is.begin(), is.end() - 1);
  r.rest.assign(ds.begin() + batch + k, ds.end());
  int64_t M = 1, rowsPerBatch = 1, B = 1;
  for (int64_t d : r.lead) M = mulSize(M, d);
  for (int64_t j = 0; j < k; ++j) {
    if (ds[static_cast<size_t>(batch + j)] == 0) c.fail("an indexed dim of data has size 0: no index can be valid");
    rowsPerBatch = mulSize(rowsPerBatch, ds[static_cast<size_t>(batch + j)]);
  }
  for (int64_t b = 0; b < batch; ++b) B = mulSize(B, ds[static_cast<size_t>(b)]);
  ValueId idx = c.cast(indices, DType::I64);
  ValueId row = kNoValue;
  int64_t stride = rowsPerBatch;
  for (int64_t j = 0; j < k; ++j) {
    int64_t n = ds[static_cast<size_t>(batch + j)];
    stride /= n;
    ValueId comp = wrapNegative(c, c.op(OpKind::Select, {idx}, Attrs{{"dim", ir - 1}, {"index", j}}), n);
    ValueId term = stride == 1 ? comp : c.mul(comp, c.scalar(static_cast<double>(stride), DType::I64));
    row = row == kNoValue ? term : c.add(row, term);
  }
  if (batch > 0) {
    // Each tuple's batch element, as an offset into the flattened table.
    Ints bshape(r.lead.size(), 1);
    for (int64_t b = 0; b < batch; ++b) bshape[static_cast<size_t>(b)] = r.lead[static_cast<size_t>(b)];
    ValueId bi = c.reshape(c.mul(iota(c, B), c.scalar(static_cast<double>(rowsPerBatch), DType::I64)), bshape);
    row = c.add(row, bi);
  }
  r.rows = c.reshape(c.contiguous(row), {M});
  Ints tshape{mulSize(B, rowsPerBatch)};
  tshape.insert(tshape.end(), r.rest.begin(), r.rest.end());
  r.table = c.reshape(data, tshape);
  return r;
}

Outs gatherNdOp(Node& c) {
  ValueId data = c.in(0), indices = c.in(1);
  NdRows r = ndRows(c, data, indices, c.i("batch_dims", 0));
  ValueId g = c.op(OpKind::IndexSelect, {r.table, r.rows}, Attrs{{"dim", int64_t{0}}});
  Ints out = r.lead;
  out.insert(out.end(), r.rest.begin(), r.rest.end());
  return {c.reshape(g, out)};
}

Outs scatterNdOp(Node& c) {
  ValueId data = c.in(0), indices = c.in(1), updates = c.in(2);
  NdRows r = ndRows(c, data, indices, 0);
  int64_t M = c.type(r.rows).numel();
  Ints ushape{M};
  ushape.insert(ushape.end(), r.rest.begin(), r.rest.end());
  ValueId u = c.reshape(updates, ushape);
  Ints ishape(ushape.size(), 1);
  ishape[0] = M;
  ValueId idx = c.contiguous(c.expand(c.reshape(r.rows, ishape), ushape));
  std::string red = c.s("reduction", "none");
  OpKind k = red == "none" ? OpKind::Scatter : red == "add" ? OpKind::ScatterAdd : (c.fail("ScatterND: reduction '" + red + "' is not supported"), OpKind::Scatter);
  ValueId y = c.op(k, {c.contiguous(r.table), idx, u}, Attrs{{"dim", int64_t{0}}});
  return {c.reshape(y, c.type(data).sizes)};
}

Outs whereOp(Node& c) {
  ValueId cond = c.in(0), a = c.in(1), b = c.in(2);
  return {c.op(OpKind::Where, {cond, a, b})};
}

Outs cumsumOp(Node& c) {
  ValueId x = c.in(0);
  int64_t a = c.axis(static_cast<int64_t>(c.knownScalar(1, "axis")), c.type(x).rank());
  bool reverse = c.i("reverse", 0) != 0, exclusive = c.i("exclusive", 0) != 0;
  ValueId s = c.op(OpKind::Cumsum, {x}, Attrs{{"dim", a}, {"reverse", reverse}});
  if (exclusive) s = c.sub(s, x);
  return {s};
}

Outs triluOp(Node& c) {
  ValueId x = c.in(0);
  int64_t k = c.has(1) ? static_cast<int64_t>(c.knownScalar(1, "k")) : 0;
  return {triangle(c, x, k, c.i("upper", 1) != 0)};
}

Outs oneHotOp(Node& c) {
  ValueId idx = c.in(0);
  double depthV = c.knownScalar(1, "depth");
  if (!(depthV >= 1) || depthV > static_cast<double>(kMaxIndexMap)) c.fail("OneHot: depth must be at least 1");
  int64_t depth = static_cast<int64_t>(depthV);
  ValueId values = c.in(2);
  if (c.type(values).numel() != 2) c.fail("OneHot: values must hold [off, on]");
  int64_t outRank = c.type(idx).rank() + 1;
  int64_t a = c.axis(c.i("axis", -1), outRank);
  ValueId i = isFloating(c.type(idx).dtype) ? c.cast(c.op(OpKind::Trunc, {idx}), DType::I64) : c.cast(idx, DType::I64);
  i = wrapNegative(c, i, depth);
  i = c.op(OpKind::Unsqueeze, {i}, Attrs{{"dim", a}});
  Ints shape(static_cast<size_t>(outRank), 1);
  shape[static_cast<size_t>(a)] = depth;
  ValueId pos = c.reshape(iota(c, depth), shape);
  ValueId hot = bin(c, OpKind::Eq, {pos, i});
  ValueId flat = c.reshape(values, {2});
  ValueId off = c.op(OpKind::Select, {flat}, Attrs{{"dim", int64_t{0}}, {"index", int64_t{0}}});
  ValueId on = c.op(OpKind::Select, {flat}, Attrs{{"dim", int64_t{0}}, {"index", int64_t{1}}});
  return {c.op(OpKind::Where, {hot, on, off})};
}

Outs topkOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  int64_t a = c.axis(c.i("axis", -1), r);
  Ints kk = c.opset() >= 10 ? c.knownInts(1, "K") : Ints{c.i("k")};
  if (kk.size() != 1) c.fail("TopK: K must hold one value");
  int64_t k = kk[0], n = c.type(x).sizes[static_cast<size_t>(a)];
  if (k < 0 || k > n) c.fail(cat("TopK: K = ", k, " is out of range for a dim of size ", n));
  bool largest = c.i("largest", 1) != 0;  // sorted=0 allows any order: aotc's is sorted
  V sorted = c.ops(OpKind::Sort, {x}, Attrs{{"dim", a}, {"descending", largest}});
  Attrs sl{{"dim", a}, {"start", int64_t{0}}, {"end", k}, {"step", int64_t{1}}};
  return {c.op(OpKind::Slice, {sorted[0]}, sl), c.op(OpKind::Slice, {sorted[1]}, sl)};
}

// ------------------------------------------------------------ padding

/// Pads `x` by `begin`/`end` per dim: constant, reflect or edge.
ValueId padTo(Node& c, ValueId x, const Ints& begin, const Ints& end, const std::string& mode, double value) {
  int64_t r = c.type(x).rank();
  if (mode == "constant") {
    Ints p;
    for (int64_t d = r - 1; d >= 0; --d) p.insert(p.end(), {begin[static_cast<size_t>(d)], end[static_cast<size_t>(d)]});
    bool any = false;
    for (int64_t v : p) any = any || v != 0;
    if (!any) return x;
    return c.op(OpKind::Pad, {x}, Attrs{{"pad", p}, {"value", value}});
  }
  if (mode != "reflect" && mode != "edge") c.fail(cat("Pad: mode '", mode, "' is not supported"));
  for (int64_t d = 0; d < r; ++d) {
    int64_t b = begin[static_cast<size_t>(d)], e = end[static_cast<size_t>(d)];
    if (b == 0 && e == 0) continue;
    int64_t n = c.type(x).sizes[static_cast<size_t>(d)];
    if (n == 0) c.fail("Pad: cannot reflect or extend an empty dim");
    if (mode == "reflect" && (b >= n || e >= n)) c.fail("Pad: reflect padding must be smaller than the dim");
    if (n + b + e > kMaxIndexMap) c.fail("Pad: the padded dim is too large");
    Ints idx;
    for (int64_t o = -b; o < n + e; ++o) {
      int64_t i = o;
      if (mode == "edge") i = std::clamp<int64_t>(o, 0, n - 1);
      else {
        if (i < 0) i = -i;
        if (i >= n) i = 2 * (n - 1) - i;
      }
      idx.push_back(i);
    }
    x = pick(c, x, d, idx);
  }
  return x;
}

Outs padOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  Ints pads = c.opset() >= 11 ? c.knownInts(1, "pads") : c.ints(c.opset() >= 2 ? "pads" : "paddings");
  double value = c.opset() >= 11 ? (c.has(2) ? c.knownScalar(2, "constant_value") : 0.0) : c.f("value", 0.0);
  if (static_cast<int64_t>(pads.size()) != 2 * r) c.fail(cat("Pad: pads must have ", 2 * r, " values"));
  Ints begin(pads.begin(), pads.begin() + r), end(pads.begin() + r, pads.end());
  return {padTo(c, x, begin, end, c.s("mode", "constant"), value)};
}

// ------------------------------------------------------------ linear algebra

Outs matmulOp(Node& c) {
  ValueId a = c.in(0), b = c.in(1);
  return {matmul(c, a, b)};
}

Outs gemmOp(Node& c) {
  ValueId a = c.in(0), b = c.in(1);
  if (c.type(a).rank() != 2 || c.type(b).rank() != 2) c.fail("Gemm: A and B must be 2-D");
  if (c.i("transA", 0)) a = c.op(OpKind::T, {a});
  if (c.i("transB", 0)) b = c.op(OpKind::T, {b});
  ValueId y = c.scaled(c.op(OpKind::Mm, {a, b}), c.f("alpha", 1.0));
  if (c.has(2)) {
    ValueId cc = c.scaled(c.in(2), c.f("beta", 1.0));
    y = c.add(y, cc);
  }
  return {y};
}

/// Begin/end padding of each spatial dim from auto_pad / pads (ONNX's rules).
std::pair<Ints, Ints> spatialPads(Node& c, const Ints& in, const Ints& kernel, const Ints& stride, const Ints& dil) {
  size_t n = in.size();
  Ints begin(n, 0), end(n, 0);
  std::string ap = c.s("auto_pad", "NOTSET");
  if (ap == "NOTSET") {
    Ints p = c.ints("pads", Ints(2 * n, 0));
    if (p.size() != 2 * n) c.fail(cat("pads must have ", 2 * n, " values"));
    for (size_t k = 0; k < n; ++k) {
      begin[k] = p[k];
      end[k] = p[k + n];
      if (begin[k] < 0 || end[k] < 0) c.fail("negative pads are not supported");
    }
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t k = 0; k < n; ++k) {
      int64_t out = (in[k] + stride[k] - 1) / stride[k];
      int64_t total = std::max<int64_t>((out - 1) * stride[k] + (kernel[k] - 1) * dil[k] + 1 - in[k], 0);
      begin[k] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[k] = total - begin[k];
    }
  } else if (ap != "VALID") {
    c.fail(cat("auto_pad '", ap, "' is not supported"));
  }
  return {begin, end};
}

struct ConvGeom {
  Ints kernel, stride, dil, begin, end;
};
ConvGeom convGeom(Node& c, const Ints& spatialIn, const Ints& kernelFromWeight) {
  size_t n = spatialIn.size();
  ConvGeom g;
  g.kernel = c.ints("kernel_shape", kernelFromWeight);
  g.stride = c.ints("strides", Ints(n, 1));
  g.dil = c.ints("dilations", Ints(n, 1));
  if (g.kernel.size() != n || g.stride.size() != n || g.dil.size() != n) c.fail("kernel_shape, strides and dilations must have one value per spatial dim");
  for (size_t k = 0; k < n; ++k)
    if (g.kernel[k] <= 0 || g.stride[k] <= 0 || g.dil[k] <= 0) c.fail("kernel_shape, strides and dilations must be positive");
  std::tie(g.begin, g.end) = spatialPads(c, spatialIn, g.kernel, g.stride, g.dil);
  return g;
}

/// 1-D, 2-D and 3-D: a 1-D op runs as 2-D over a unit height, a 3-D one
/// through the decompositions (Notes [3-D convolution], [3-D pooling]).
void requireSpatial(Node& c, int64_t rank, const char* what) {
  if (rank != 3 && rank != 4 && rank != 5) c.fail(cat(what, ": only 1-D, 2-D and 3-D (3-D, 4-D or 5-D inputs) are supported"));
}

/// Zero (or `value`) padding of the spatial dims of [N, C, ...] by begin / end.
ValueId padSpatial(Node& c, ValueId x, const Ints& begin, const Ints& end, double value) {
  Ints b{0, 0}, e{0, 0};
  b.insert(b.end(), begin.begin(), begin.end());
  e.insert(e.end(), end.begin(), end.end());
  return padTo(c, x, b, e, "constant", value);
}

/// A 1-D op runs as 2-D over a unit height: x and the geometry gain dim 2.
ValueId liftOneD(Node& c, ValueId x, ConvGeom& g) {
  for (Ints* v : {&g.kernel, &g.stride, &g.dil}) v->insert(v->begin(), 1);
  g.begin.insert(g.begin.begin(), 0);
  g.end.insert(g.end.begin(), 0);
  return c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{2}}});
}

/// Symmetric pads go to the op; others are explicit (`fill`), and the op
/// gets none.  Returns the padded input and the op's padding.
std::pair<ValueId, Ints> spatialPadding(Node& c, ValueId x, const ConvGeom& g, bool symmetric, double fill) {
  if (symmetric) return {x, g.begin};
  return {padSpatial(c, x, g.begin, g.end, fill), Ints(g.begin.size(), 0)};
}

Outs convOp(Node& c) {
  ValueId x = c.in(0), w = c.in(1);
  int64_t rank = c.type(x).rank();
  requireSpatial(c, rank, "Conv");
  if (c.type(w).rank() != rank) c.fail("Conv: the weight's rank differs from the input's");
  Ints sin(c.type(x).sizes.begin() + 2, c.type(x).sizes.end());
  Ints kw(c.type(w).sizes.begin() + 2, c.type(w).sizes.end());
  ConvGeom g = convGeom(c, sin, kw);
  if (g.kernel != kw) c.fail("Conv: kernel_shape differs from the weight's");
  bool oneD = rank == 3;
  if (oneD) {
    x = liftOneD(c, x, g);
    w = c.op(OpKind::Unsqueeze, {w}, Attrs{{"dim", int64_t{2}}});
  }
  auto [xp, pad] = spatialPadding(c, x, g, g.begin == g.end, 0.0);
  int64_t groups = c.i("group", 1);
  ValueId y = rank == 5 ? conv3d(c, xp, w, g.stride, pad, g.dil, groups)
                        : c.op(OpKind::Conv2d, {xp, w}, Attrs{{"stride", g.stride}, {"padding", pad}, {"dilation", g.dil}, {"groups", groups}});
  if (c.has(2)) {
    Ints bshape(static_cast<size_t>(c.type(y).rank()), 1);
    bshape[1] = c.type(w).sizes[0];
    y = c.add(y, c.reshape(c.in(2), bshape));
  }
  if (oneD) y = c.op(OpKind::Squeeze, {y}, Attrs{{"dim", Ints{2}}});
  return {y};
}

Outs convTransposeOp(Node& c) {
  ValueId x = c.in(0), w = c.in(1);
  int64_t rank = c.type(x).rank();
  requireSpatial(c, rank, "ConvTranspose");
  if (c.type(w).rank() != rank) c.fail("ConvTranspose: the weight's rank differs from the input's");
  size_t n = static_cast<size_t>(rank - 2);
  const Ints xs = c.type(x).sizes, ws = c.type(w).sizes;
  Ints kernel = c.ints("kernel_shape", Ints(ws.begin() + 2, ws.end()));
  Ints stride = c.ints("strides", Ints(n, 1)), dil = c.ints("dilations", Ints(n, 1));
  Ints outPad = c.ints("output_padding", Ints(n, 0));
  int64_t groups = c.i("group", 1);
  if (kernel.size() != n || stride.size() != n || dil.size() != n || outPad.size() != n) c.fail("ConvTranspose: attributes must have one value per spatial dim");
  if (groups <= 0 || xs[1] != ws[0]) c.fail("ConvTranspose: input channels do not match the weight");
  // Full output size (no padding), then the pads ONNX asks for.
  Ints full(n), begin(n, 0), end(n, 0);
  for (size_t k = 0; k < n; ++k) {
    if (stride[k] <= 0 || dil[k] <= 0) c.fail("ConvTranspose: strides and dilations must be positive");
    full[k] = stride[k] * (xs[2 + k] - 1) + outPad[k] + (kernel[k] - 1) * dil[k] + 1;
  }
  std::string ap = c.s("auto_pad", "NOTSET");
  if (c.hasAttr("output_shape")) {
    Ints os = c.ints("output_shape");
    if (os.size() == n + 2) os.erase(os.begin(), os.begin() + 2);
    if (os.size() != n) c.fail("ConvTranspose: output_shape must have one value per spatial dim");
    for (size_t k = 0; k < n; ++k) {
      int64_t total = full[k] - os[k];  // negative: the output extends past the full one, with zeros
      begin[k] = ap == "SAME_UPPER" || ap == "NOTSET" ? total / 2 : total - total / 2;
      end[k] = total - begin[k];
    }
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t k = 0; k < n; ++k) {
      int64_t total = std::max<int64_t>(full[k] - xs[2 + k] * stride[k], 0);
      begin[k] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[k] = total - begin[k];
    }
  } else if (ap == "NOTSET") {
    Ints p = c.ints("pads", Ints(2 * n, 0));
    if (p.size() != 2 * n) c.fail("ConvTranspose: pads must have 2 values per spatial dim");
    for (size_t k = 0; k < n; ++k) {
      begin[k] = p[k];
      end[k] = p[k + n];
    }
  } else if (ap != "VALID") {
    c.fail(cat("ConvTranspose: auto_pad '", ap, "' is not supported"));
  }
  bool oneD = rank == 3;
  if (oneD) {
    x = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{2}}});
    w = c.op(OpKind::Unsqueeze, {w}, Attrs{{"dim", int64_t{2}}});
    for (Ints* v : {&stride, &dil, &full, &begin, &end, &outPad}) v->insert(v->begin(), (v == &stride || v == &dil) ? 1 : 0);
    full[0] = 1;
  }
  // conv2d_backward_input at padding 0 gives the full output; the pads crop it.
  const size_t ns = full.size();
  int64_t outC = c.type(w).sizes[1] * groups;
  ValueId y;
  if (ns == 3) {
    y = convTranspose3d(c, x, w, stride, dil, outPad, groups);
  } else {
    Ints inSize{c.type(x).sizes[0], outC, full[0], full[1]};
    ValueId xc = c.contiguous(x), wc = c.contiguous(w);
    y = c.op(OpKind::Conv2dBackwardInput, {xc, wc},
             Attrs{{"input_size", inSize}, {"stride", stride}, {"padding", Ints{0, 0}}, {"dilation", dil}, {"groups", groups}});
  }
  for (size_t k = 0; k < ns; ++k) {
    int64_t d = static_cast<int64_t>(2 + k);
    int64_t b = std::max<int64_t>(begin[k], 0), e = std::max<int64_t>(end[k], 0);
    if (b || e) {
      if (b + e >= full[k]) c.fail("ConvTranspose: pads crop the whole output");
      y = c.op(OpKind::Slice, {y}, Attrs{{"dim", d}, {"start", b}, {"end", full[k] - e}, {"step", int64_t{1}}});
    }
    if (begin[k] < 0 || end[k] < 0) {
      Ints pb(ns + 2, 0), pe(ns + 2, 0);
      pb[static_cast<size_t>(d)] = std::max<int64_t>(-begin[k], 0);
      pe[static_cast<size_t>(d)] = std::max<int64_t>(-end[k], 0);
      y = padTo(c, y, pb, pe, "constant", 0.0);
    }
  }
  Ints bshape(ns + 2, 1);
  bshape[1] = outC;
  if (c.has(2)) y = c.add(y, c.reshape(c.in(2), bshape));
  if (oneD) y = c.op(OpKind::Squeeze, {y}, Attrs{{"dim", Ints{2}}});
  return {y};
}

/// MaxPool / AveragePool: pads that are symmetric and at most half the
/// window go to the pool; others are explicit (-inf for max; for an average
/// without count_include_pad, the padded sum over the padded count of ones,
/// both as window means).
template <bool Max>
Outs poolOp(Node& c) {
  ValueId x = c.in(0);
  int64_t rank = c.type(x).rank();
  requireSpatial(c, rank, Max ? "MaxPool" : "AveragePool");
  if (Max && c.wantsOutput(1)) c.fail("MaxPool: the Indices output is not supported");
  Ints sin(c.type(x).sizes.begin() + 2, c.type(x).sizes.end());
  ConvGeom g = convGeom(c, sin, c.ints("kernel_shape"));
  bool ceil = c.i("ceil_mode", 0) != 0;
  bool includePad = !Max && c.i("count_include_pad", 0) != 0;
  if (Max && c.i("storage_order", 0) != 0) c.fail("MaxPool: storage_order=1 is not supported");
  if (!Max && g.dil != Ints(g.dil.size(), 1)) c.fail("AveragePool: dilations are not supported");
  bool oneD = rank == 3;
  if (oneD) x = liftOneD(c, x, g);
  auto pool = [&](ValueId in, const Ints& pad, bool countPad) -> ValueId {
    if (rank == 5) {
      decomp::Pool3d p{g.kernel, g.stride, pad, g.dil, ceil, countPad, std::nullopt};
      return Max ? decomp::maxPool3d(c, in, p).first : decomp::avgPool3d(c, in, p);
    }
    if (Max)
      return c.ops(OpKind::MaxPool2d, {in}, Attrs{{"kernel", g.kernel}, {"stride", g.stride}, {"padding", pad}, {"dilation", g.dil}, {"ceil_mode", ceil}})[0];
    return c.op(OpKind::AvgPool2d, {in}, Attrs{{"kernel", g.kernel}, {"stride", g.stride}, {"padding", pad}, {"ceil_mode", ceil}, {"count_include_pad", countPad}});
  };
  bool sym = g.begin == g.end;
  for (size_t k = 0; k < g.begin.size() && sym; ++k) sym = g.begin[k] * 2 <= g.kernel[k];
  if (!sym && ceil) c.fail("pooling with asymmetric pads and ceil_mode is not supported");
  auto [xp, pad] = spatialPadding(c, x, g, sym, Max ? -HUGE_VAL : 0.0);
  ValueId y = pool(xp, pad, includePad || !sym);
  if (!sym && !Max && !includePad) {
    ValueId ones = c.full(1.0, TensorType::contiguous(c.type(x).dtype, c.type(x).sizes));
    y = c.div(y, pool(padSpatial(c, ones, g.begin, g.end, 0.0), pad, true));
  }
  if (oneD) y = c.op(OpKind::Squeeze, {y}, Attrs{{"dim", Ints{2}}});
  return {y};
}

template <bool Max>
Outs globalPoolOp(Node& c) {
  ValueId x = c.in(0);
  Ints dims;
  for (int64_t d = 2; d < c.type(x).rank(); ++d) dims.push_back(d);
  if (dims.empty()) return {x};
  return {reduceOp(c, Max ? OpKind::Amax : OpKind::Mean, x, dims, true)};
}

// ------------------------------------------------------------ normalization

/// (x - mean) / sqrt(var + eps) over `dims` (decomp::normalize): the
/// normalized x and 1/sqrt(var + eps); the mean and variance (kept dims)
/// through `meanOut` / `varOut` when asked.
std::pair<ValueId, ValueId> normalizeX(Node& c, ValueId x, const Ints& dims, double eps, ValueId* meanOut = nullptr,
                                       ValueId* varOut = nullptr) {
  Normalized n = normalize(c, x, dims, eps);
  if (meanOut) *meanOut = n.mean;
  if (varOut) *varOut = n.var;
  return {n.y, n.rstd};
}

/// A per-channel [C] tensor shaped to broadcast over [N, C, ...].
ValueId perChannel(Node& c, ValueId v, int64_t rank) {
  Ints shape(static_cast<size_t>(rank), 1);
  shape[1] = c.type(v).numel();
  return c.reshape(v, shape);
}

Outs batchNormOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  if (r < 2) c.fail("BatchNormalization: the input needs at least 2 dims");
  double eps = c.f("epsilon", 1e-5), momentum = c.f("momentum", 0.9);
  bool training = c.opset() >= 14 && c.i("training_mode", 0) != 0;
  if (c.opset() < 14 && c.numOutputs() > 1) {
    for (size_t k = 1; k < c.numOutputs(); ++k)
      if (c.wantsOutput(k)) c.fail("BatchNormalization: the training outputs of opsets before 14 are not supported");
  }
  ValueId scale = perChannel(c, c.in(1), r), bias = perChannel(c, c.in(2), r);
  if (!training) {
    ValueId mean = perChannel(c, c.in(3), r), var = perChannel(c, c.in(4), r);
    ValueId rstd = c.op(OpKind::Rsqrt, {c.add(var, sc(c, eps, var))});
    ValueId y = c.add(c.mul(c.mul(c.sub(x, mean), rstd), scale), bias);
    return {y};
  }
  Ints dims{0};
  for (int64_t d = 2; d < r; ++d) dims.push_back(d);
  ValueId mean, var;
  ValueId xn = normalizeX(c, x, dims, eps, &mean, &var).first;
  ValueId y = c.add(c.mul(xn, scale), bias);
  // ONNX: running = input * momentum + current * (1 - momentum), with the
  // batch's (biased) variance.
  int64_t C = c.type(x).sizes[1];
  ValueId bm = c.reshape(mean, {C});
  ValueId bv = c.reshape(var, {C});
  ValueId inMean = c.in(3), inVar = c.in(4);
  ValueId runMean = c.add(c.scaled(c.op(OpKind::Detach, {inMean}), momentum), c.scaled(c.op(OpKind::Detach, {bm}), 1 - momentum));
  ValueId runVar = c.add(c.scaled(c.op(OpKind::Detach, {inVar}), momentum), c.scaled(c.op(OpKind::Detach, {bv}), 1 - momentum));
  // Running statistics held by initializers (buffers) are updated in place:
  // the forward epilogue writes them back (--train).
  for (auto [input, value] : {std::pair{inMean, runMean}, std::pair{inVar, runVar}}) {
    const GraphInput* gi = c.graph().inputOf(input);
    if (c.train() && gi && gi->role == InputRole::Buffer) c.op(OpKind::CopyInplace, {input, value});
  }
  return {y, runMean, runVar};
}

Outs instanceNormOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  if (r < 3) c.fail("InstanceNormalization: the input needs at least 3 dims");
  Ints dims;
  for (int64_t d = 2; d < r; ++d) dims.push_back(d);
  ValueId xn = normalizeX(c, x, dims, c.f("epsilon", 1e-5)).first;
  ValueId s = perChannel(c, c.in(1), r);
  ValueId b = perChannel(c, c.in(2), r);
  return {c.add(c.mul(xn, s), b)};
}

Outs layerNormOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  int64_t a = c.axis(c.i("axis", -1), r);
  Ints dims;
  for (int64_t d = a; d < r; ++d) dims.push_back(d);
  ValueId mean;
  auto [xn, rstd] = normalizeX(c, x, dims, c.f("epsilon", 1e-5), &mean);
  ValueId y = c.mul(xn, c.in(1));
  if (c.has(2)) y = c.add(y, c.in(2));
  return {y, mean, rstd};
}

Outs mvnOp(Node& c) {
  ValueId x = c.in(0);
  Ints axes = c.ints("axes", Ints{0, 2, 3});
  Ints dims;
  for (int64_t a : axes) dims.push_back(c.axis(a, c.type(x).rank()));
  ValueId mean = reduceOp(c, OpKind::Mean, x, dims, true);
  ValueId dlt = c.sub(x, mean);
  ValueId var = reduceOp(c, OpKind::Mean, c.mul(dlt, dlt), dims, true);
  return {c.div(dlt, c.add(c.op(OpKind::Sqrt, {var}), sc(c, 1e-9, x)))};
}

Outs lrnOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  if (r != 4) c.fail("LRN: only 4-D inputs are supported");
  int64_t size = c.i("size");
  double alpha = c.f("alpha", 1e-4), beta = c.f("beta", 0.75), bias = c.f("bias", 1.0);
  if (size <= 0) c.fail("LRN: size must be positive");
  // Sum of squares over channels [c - floor((size-1)/2), c + ceil((size-1)/2)].
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  ValueId sq = c.mul(x, x);
  const Ints s = c.type(x).sizes;
  ValueId sq3 = c.reshape(sq, {s[0], 1, s[1], s[2] * s[3]});
  ValueId padded = padTo(c, sq3, {0, 0, lo, 0}, {0, 0, hi, 0}, "constant", 0.0);
  ValueId sum = c.op(OpKind::AvgPool2d, {padded}, Attrs{{"kernel", Ints{size, 1}}, {"stride", Ints{1, 1}}, {"padding", Ints{0, 0}},
                                                      {"count_include_pad", true}});
  sum = c.reshape(c.scaled(sum, static_cast<double>(size)), s);
  ValueId base = c.add(c.scaled(sum, alpha / static_cast<double>(size)), sc(c, bias, x));
  return {c.div(x, c.op(OpKind::Pow, {base, sc(c, beta, x)}))};
}

// ------------------------------------------------------------ losses

/// Negative log likelihood over class dim 1 of [N, C, d...] (or [N, C]),
/// with optional class weights, ignore_index and reduction (ONNX's rules:
/// mean divides by the sum of the picked weights).
ValueId nll(Node& c, ValueId logp, ValueId target, ValueId weight, std::optional<int64_t> ignore, const std::string& reduction) {
  ValueId t = c.cast(target, DType::I64);
  ValueId valid = kNoValue;
  if (ignore) {
    valid = bin(c, OpKind::Ne, {t, c.scalar(static_cast<double>(*ignore), DType::I64)});
    t = c.op(OpKind::Where, {valid, t, c.scalar(0, DType::I64)});
  }
  ValueId t1 = c.op(OpKind::Unsqueeze, {t}, Attrs{{"dim", int64_t{1}}});
  ValueId picked = c.op(OpKind::Squeeze, {c.op(OpKind::Gather, {logp, t1}, Attrs{{"dim", int64_t{1}}})}, Attrs{{"dim", Ints{1}}});
  ValueId w = kNoValue;
  if (weight != kNoValue) w = c.op(OpKind::IndexSelect, {weight, c.reshape(t, {c.type(t).numel()})}, Attrs{{"dim", int64_t{0}}});
  if (w != kNoValue) w = c.reshape(w, c.type(t).sizes);
  if (valid != kNoValue) {
    ValueId vf = c.cast(valid, c.type(logp).dtype);
    w = w == kNoValue ? vf : c.mul(w, vf);
  }
  ValueId loss = c.neg(picked);
  if (w != kNoValue) loss = c.mul(loss, w);
  if (reduction == "none") return loss;
  ValueId total = reduceOp(c, OpKind::Sum, loss, {}, false);
  if (reduction == "sum") return total;
  if (reduction != "mean") c.fail(cat("reduction '", reduction, "' is not supported"));
  if (w == kNoValue) return c.div(total, sc(c, static_cast<double>(c.type(loss).numel()), total));
  return c.div(total, reduceOp(c, OpKind::Sum, w, {}, false));
}

std::optional<int64_t> ignoreIndex(Node& c) {
  if (!c.hasAttr("ignore_index")) return std::nullopt;
  return c.i("ignore_index");
}

Outs nllLossOp(Node& c) {
  ValueId x = c.in(0), t = c.in(1);
  if (c.type(x).rank() < 2) c.fail("NegativeLogLikelihoodLoss: the input needs at least 2 dims");
  ValueId w = c.has(2) ? c.in(2) : kNoValue;
  return {nll(c, x, t, w, ignoreIndex(c), c.s("reduction", "mean"))};
}

Outs softmaxCrossEntropyOp(Node& c) {
  ValueId x = c.in(0), t = c.in(1);
  if (c.type(x).rank() < 2) c.fail("SoftmaxCrossEntropyLoss: the scores need at least 2 dims");
  ValueId logp = softmaxLike(c, x, 1, true);
  ValueId w = c.has(2) ? c.in(2) : kNoValue;
  ValueId loss = nll(c, logp, t, w, ignoreIndex(c), c.s("reduction", "mean"));
  return {loss, logp};
}

Outs dropoutOp(Node& c) {
  ValueId x = c.in(0);
  // Before opset 12 Dropout has no training mode: an identity when running a model.
  bool training = c.opset() >= 12 && c.has(2) && c.knownScalar(2, "training_mode") != 0;
  double ratio = c.opset() >= 12 ? (c.has(1) ? c.knownScalar(1, "ratio") : 0.5) : c.f("ratio", 0.5);
  if (!training || ratio == 0) {
    Outs r{x};
    if (c.wantsOutput(1)) r.push_back(c.full(1.0, TensorType::contiguous(DType::Bool, c.type(x).sizes)));
    return r;
  }
  // Training: a mask from aotc's seeded generator (Note [Random numbers]);
  // ONNX does not specify the random stream, so no two runtimes agree here.
  if (ratio < 0 || ratio >= 1) c.fail("Dropout: ratio must be in [0, 1)");
  Ints shape = c.type(x).sizes;
  ValueId keep = randMask(c, 1.0 - ratio, shape);
  ValueId m = c.cast(keep, c.type(x).dtype);
  Outs r{c.mul(c.mul(x, m), sc(c, 1.0 / (1.0 - ratio), x))};
  if (c.wantsOutput(1)) r.push_back(keep);
  return r;
}


// ------------------------------------------------------------ resize

/// Resize (opsets 10-17) and Upsample: per resized axis, each output element
/// is a weighted sum of input elements along that axis (ONNX's reference:
/// nearest, linear and cubic, every coordinate transformation mode).  The
/// taps and weights are computed when compiling, in double; out-of-range
/// taps take the edge element, as the reference's edge padding does.
Outs resizeOp(Node& c) {
  ValueId x = c.in(0);
  const Ints in = c.type(x).sizes;
  size_t r = in.size();
  bool upsample = c.proto().op_type() == "Upsample";
  std::string mode = c.s("mode", "nearest");
  std::string ctm = upsample || c.opset() < 11 ? "asymmetric" : c.s("coordinate_transformation_mode", "half_pixel");
  std::string nearest = upsample ? "floor" : c.s("nearest_mode", "round_prefer_floor");
  double A = c.f("cubic_coeff_a", -0.75), extrapolation = c.f("extrapolation_value", 0.0);
  bool exclude = c.i("exclude_outside", 0) != 0;
  std::vector<double> scales, roi;
  Ints sizes;
  if (upsample && c.opset() < 9) {
    scales = c.floats("scales");
  } else {
    size_t si = upsample || c.opset() < 11 ? 1 : 2;
    if (c.has(si) && c.known(si, "scales").numel() > 0) scales = c.known(si, "scales").data;
    if (!upsample && c.opset() >= 11 && c.has(3)) sizes = c.knownInts(3, "sizes");
    if (!upsample && c.opset() >= 11 && c.has(1) && ctm == "tf_crop_and_resize") roi = c.known(1, "roi").data;
  }
  if (mode != "nearest" && mode != "linear" && mode != "cubic" && mode != "bilinear") c.fail("mode '" + mode + "' is not supported");
  if (mode == "bilinear") mode = "linear";
  Ints out(r);
  if (!sizes.empty()) {
    if (sizes.size() != r) c.fail("sizes must have one value per dim");
    out = sizes;
    scales.assign(r, 0);
    for (size_t d = 0; d < r; ++d) scales[d] = in[d] ? static_cast<double>(out[d]) / static_cast<double>(in[d]) : 1.0;
  } else {
    if (scales.size() != r) c.fail("scales (or sizes) must have one value per dim");
    for (size_t d = 0; d < r; ++d) {
      if (!(scales[d] > 0)) c.fail("scales must be positive");
      double o = std::floor(static_cast<double>(in[d]) * scales[d]);
      if (o > static_cast<double>(kMaxIndexMap)) c.fail("the resized dim is too large");
      out[d] = static_cast<int64_t>(o);
    }
  }
  if (ctm == "tf_crop_and_resize" && roi.size() != 2 * r) c.fail("tf_crop_and_resize needs roi with 2 values per dim");
  DType dt = c.type(x).dtype;
  for (size_t d = 0; d < r; ++d) {
    if (out[d] == in[d] && scales[d] == 1.0 && ctm != "tf_crop_and_resize") continue;
    if (out[d] <= 0 || in[d] <= 0) c.fail("resizing to or from an empty dim is not supported");
    int64_t n = in[d], m = out[d];
    double s = scales[d];
    // Taps per output element: (index, weight); index -1 = extrapolation.
    size_t taps = mode == "cubic" ? 4 : 2;
    std::vector<Ints> idx(taps, Ints(static_cast<size_t>(m)));
    std::vector<std::vector<double>> w(taps, std::vector<double>(static_cast<size_t>(m)));
    bool extrapolate = false;
    for (int64_t o = 0; o < m; ++o) {
      // The reference's resized length is in * scale, unrounded.
      double od = static_cast<double>(o), xo, L = static_cast<double>(n) * s;
      if (ctm == "half_pixel") xo = (od + 0.5) / s - 0.5;
      else if (ctm == "pytorch_half_pixel") xo = L > 1 ? (od + 0.5) / s - 0.5 : 0;
      else if (ctm == "align_corners") xo = L == 1 ? 0 : od * static_cast<double>(n - 1) / (L - 1);
      else if (ctm == "asymmetric") xo = od / s;
      else if (ctm == "tf_half_pixel_for_nn") xo = (od + 0.5) / s;
      else if (ctm == "tf_crop_and_resize") {
        double st = roi[d], en = roi[d + r];
        xo = L > 1 ? st * static_cast<double>(n - 1) + od * (en - st) * static_cast<double>(n - 1) / (L - 1)
                   : 0.5 * (st + en) * static_cast<double>(n - 1);
      } else c.fail("coordinate_transformation_mode '" + ctm + "' is not supported");
      bool outside = ctm == "tf_crop_and_resize" && (xo < 0 || xo > static_cast<double>(n - 1));
      double fl = std::floor(xo);
      int64_t i0 = static_cast<int64_t>(fl);
      double ratio = xo - fl;
      if (ratio == 0) {  // the reference prefers the pixel left of x
        ratio = 1;
        i0 -= 1;
      }
      std::vector<double> coeff;
      Ints at;
      if (mode == "nearest") {
        bool right = nearest == "round_prefer_floor" ? ratio > 0.5 : nearest == "round_prefer_ceil" ? ratio >= 0.5
                   : nearest == "floor" ? ratio == 1 : nearest == "ceil" ? true : (c.fail("nearest_mode '" + nearest + "' is not supported"), false);
        coeff = right ? std::vector<double>{0, 1} : std::vector<double>{1, 0};
        at = {i0, i0 + 1};
      } else if (mode == "linear") {
        coeff = {1 - ratio, ratio};
        at = {i0, i0 + 1};
      } else {
        double t = ratio, u = 1 - ratio;
        coeff = {((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A, ((A + 2) * t - (A + 3)) * t * t + 1,
                 ((A + 2) * u - (A + 3)) * u * u + 1, ((A * (u + 1) - 5 * A) * (u + 1) + 8 * A) * (u + 1) - 4 * A};
        at = {i0 - 1, i0, i0 + 1, i0 + 2};
      }
      if (exclude) {
        double sum = 0;
        for (size_t k = 0; k < taps; ++k) {
          if (at[k] < 0 || at[k] >= n) coeff[k] = 0;
          sum += coeff[k];
        }
        if (sum != 0)
          for (double& v : coeff) v /= sum;
      }
      for (size_t k = 0; k < taps; ++k) {
        idx[k][static_cast<size_t>(o)] = outside ? -1 : std::clamp<int64_t>(at[k], 0, n - 1);
        w[k][static_cast<size_t>(o)] = outside ? 0 : coeff[k];
      }
      extrapolate = extrapolate || outside;
    }
    ValueId acc = kNoValue;
    Ints wshape(r, 1);
    wshape[d] = m;
    for (size_t k = 0; k < taps; ++k) {
      Ints safe = idx[k];
      for (int64_t& v : safe) v = std::max<int64_t>(v, 0);
      bool used = std::any_of(w[k].begin(), w[k].end(), [](double v) { return v != 0; });
      if (!used) continue;
      ValueId g = pick(c, x, static_cast<int64_t>(d), safe);
      HostTensor wt = HostTensor::zeros(dt, wshape);
      for (size_t o = 0; o < w[k].size(); ++o) wt.data[o] = roundTo(dt, w[k][o]);
      bool ones = std::all_of(w[k].begin(), w[k].end(), [](double v) { return v == 1; });
      ValueId term = ones ? g : c.mul(g, c.constant(wt));
      acc = acc == kNoValue ? term : c.add(acc, term);
    }
    if (acc == kNoValue) {
      Ints shape = c.type(x).sizes;
      shape[d] = m;
      acc = c.full(0.0, TensorType::contiguous(dt, shape));
    }
    if (extrapolate) {
      HostTensor mask = HostTensor::zeros(DType::Bool, wshape);
      for (size_t o = 0; o < idx[0].size(); ++o) mask.data[o] = idx[0][o] < 0;
      acc = c.op(OpKind::Where, {c.constant(mask), sc(c, extrapolation, acc), acc});
    }
    x = acc;
  }
  return {x};
}


// ------------------------------------------------------------ training ops

/// ai.onnx.preview.training's optimizers (Adagrad, Momentum, Adam): one
/// update of every (X, G, state...) group, as ONNX's reference writes it.
/// Inputs: R (learning rate), T (update count), then the groups by kind.
template <int Kind>  // 0 Adagrad, 1 Momentum, 2 Adam
Outs optimizerOp(Node& c) {
  size_t states = Kind == 2 ? 2 : 1;
  size_t per = 2 + states;
  if (c.numInputs() < 2 + per || (c.numInputs() - 2) % per) c.fail("the inputs must be R, T and groups of X, G and the optimizer's state");
  size_t n = (c.numInputs() - 2) / per;
  Outs outs(n * (1 + states));
  for (size_t k = 0; k < n; ++k) {
    ValueId X = c.in(2 + k), G = c.in(2 + n + k);
    DType d = c.type(X).dtype;
    ValueId R = c.cast(c.in(0), d), T = c.cast(c.in(1), d);
    ValueId Greg = c.add(c.scaled(X, c.f("norm_coefficient", 0.0)), G);
    if (Kind == 0) {
      ValueId H = c.in(2 + 2 * n + k);
      ValueId r = c.div(R, c.add(sc(c, 1.0, T), c.scaled(T, c.f("decay_factor", 0.0))));
      ValueId Hn = c.add(H, c.mul(Greg, Greg));
      ValueId Ha = c.add(c.op(OpKind::Sqrt, {Hn}), sc(c, c.f("epsilon", 0.0), Hn));
      outs[k] = c.sub(X, c.mul(r, c.div(Greg, Ha)));
      outs[n + k] = Hn;
    } else if (Kind == 1) {
      ValueId V = c.in(2 + 2 * n + k);
      double alpha = c.f("alpha", 0), beta = c.f("beta", 0);
      ValueId first = bin(c, OpKind::Eq, {T, sc(c, 0.0, T)});
      ValueId betaAdj = c.op(OpKind::Where, {first, sc(c, 1.0, T), sc(c, beta, T)});
      ValueId Vn = c.add(c.scaled(V, alpha), c.mul(betaAdj, Greg));
      std::string mode = c.s("mode", "standard");
      if (mode == "standard") outs[k] = c.sub(X, c.mul(R, Vn));
      else if (mode == "nesterov") outs[k] = c.sub(X, c.mul(R, c.add(Greg, c.scaled(Vn, alpha))));
      else c.fail("Momentum: mode '" + mode + "' is not supported");
      outs[n + k] = Vn;
    } else {
      ValueId V = c.in(2 + 2 * n + k), H = c.in(2 + 3 * n + k);
      double alpha = c.f("alpha", 0.9), beta = c.f("beta", 0.999), eps = c.f("epsilon", 1e-6);
      ValueId Vn = c.add(c.scaled(V, alpha), c.scaled(Greg, 1 - alpha));
      ValueId Hn = c.add(c.scaled(H, beta), c.scaled(c.mul(Greg, Greg), 1 - beta));
      ValueId Hs = c.add(c.op(OpKind::Sqrt, {Hn}), sc(c, eps, Hn));
      ValueId powA = c.op(OpKind::Pow, {sc(c, alpha, T), T});
      ValueId powB = c.op(OpKind::Pow, {sc(c, beta, T), T});
      ValueId adj = c.div(c.mul(R, c.op(OpKind::Sqrt, {c.sub(sc(c, 1.0, T), powB)})), c.sub(sc(c, 1.0, T), powA));
      ValueId positive = bin(c, OpKind::Gt, {T, sc(c, 0.0, T)});
      ValueId Radj = c.op(OpKind::Where, {positive, adj, R});
      ValueId Xn = c.sub(X, c.mul(Radj, c.div(Vn, Hs)));
      outs[k] = c.scaled(Xn, 1 - c.f("norm_coefficient_post", 0.0));
      outs[n + k] = Vn;
      outs[2 * n + k] = Hn;
    }
  }
  return outs;
}

// ------------------------------------------------------------ einsum

/// Einsum of one or two operands without repeated indices in an operand
/// (no diagonals) and without ellipses: sums, transposes, and one batched
/// matmul (batch, kept, contracted indices sorted into bmm's three dims).
Outs einsumOp(Node& c) {
  std::string eq;
  for (char ch : c.s("equation", "")) if (ch != ' ') eq += ch;
  auto arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), rhs;
  if (arrow != std::string::npos) {
    rhs = eq.substr(arrow + 2);
  } else {
    // Implicit output: the indices that appear once, in alphabetical order.
    std::map<char, int> count;
    for (char ch : lhs)
      if (ch != ',') ++count[ch];
    for (auto [ch, n] : count)
      if (n == 1) rhs += ch;
  }
  std::vector<std::string> terms;
  for (size_t at = 0;;) {
    size_t comma = lhs.find(',', at);
    terms.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (terms.size() != c.numInputs() || terms.size() > 2) c.fail("Einsum: one or two operands are supported");
  auto bad = [&](const std::string& t) {
    std::set<char> seen;
    for (char ch : t)
      if (!std::isalpha(static_cast<unsigned char>(ch)) || !seen.insert(ch).second) return true;
    return false;
  };
  for (const std::string& t : terms)
    if (bad(t)) c.fail("Einsum: ellipses and repeated indices (diagonals) are not supported");
  if (bad(rhs)) c.fail("Einsum: bad output indices");
  std::map<char, int64_t> size;
  std::vector<ValueId> xs;
  for (size_t k = 0; k < terms.size(); ++k) {
    ValueId x = c.in(k);
    if (c.type(x).rank() != static_cast<int64_t>(terms[k].size())) c.fail("Einsum: an operand's rank differs from its indices");
    for (size_t i = 0; i < terms[k].size(); ++i) {
      int64_t sz = c.type(x).sizes[i];
      auto [it, fresh] = size.emplace(terms[k][i], sz);
      if (!fresh && it->second != sz) c.fail(cat("Einsum: index '", terms[k][i], "' has sizes ", it->second, " and ", sz));
    }
    xs.push_back(x);
  }
  for (char ch : rhs)
    if (!size.count(ch)) c.fail("Einsum: an output index is in no operand");
  auto in = [](const std::string& s, char ch) { return s.find(ch) != std::string::npos; };
  // Sum away each operand's indices that appear nowhere else.
  for (size_t k = 0; k < terms.size(); ++k) {
    const std::string& other = terms.size() == 2 ? terms[1 - k] : std::string();
    Ints dims;
    std::string kept;
    for (size_t i = 0; i < terms[k].size(); ++i) {
      char ch = terms[k][i];
      if (!in(rhs, ch) && !in(other, ch)) dims.push_back(static_cast<int64_t>(i));
      else kept += ch;
    }
    if (!dims.empty()) xs[k] = reduceOp(c, OpKind::Sum, xs[k], dims, false);
    terms[k] = kept;
  }
  auto permuteTo = [&](ValueId x, const std::string& from, const std::string& to) {
    Ints perm;
    for (char ch : to) perm.push_back(static_cast<int64_t>(from.find(ch)));
    bool id = true;
    for (size_t i = 0; i < perm.size(); ++i) id = id && perm[i] == static_cast<int64_t>(i);
    return id ? x : c.op(OpKind::Permute, {x}, Attrs{{"dims", perm}});
  };
  if (terms.size() == 1) return {c.contiguous(permuteTo(xs[0], terms[0], rhs))};
  std::string batch, aonly, bonly, contracted;
  for (char ch : terms[0]) {
    if (in(terms[1], ch)) (in(rhs, ch) ? batch : contracted) += ch;
    else aonly += ch;
  }
  for (char ch : terms[1])
    if (!in(terms[0], ch)) bonly += ch;
  auto prod = [&](const std::string& s) {
    int64_t p = 1;
    for (char ch : s) p = mulSize(p, size[ch]);
    return p;
  };
  ValueId a = c.reshape(permuteTo(xs[0], terms[0], batch + aonly + contracted), {prod(batch), prod(aonly), prod(contracted)});
  ValueId b = c.reshape(permuteTo(xs[1], terms[1], batch + contracted + bonly), {prod(batch), prod(contracted), prod(bonly)});
  ValueId y = c.op(OpKind::Bmm, {a, b});
  std::string have = batch + aonly + bonly;
  Ints shape;
  for (char ch : have) shape.push_back(size[ch]);
  y = c.reshape(y, shape);
  return {c.contiguous(permuteTo(y, have, rhs))};
}

Outs reverseSequenceOp(Node& c) {
  ValueId x = c.in(0);
  Ints lens = c.knownInts(1, "sequence_lens");
  int64_t r = c.type(x).rank();
  int64_t bAxis = c.axis(c.i("batch_axis", 1), r), tAxis = c.axis(c.i("time_axis", 0), r);
  if (r < 2 || bAxis == tAxis) c.fail("ReverseSequence: batch_axis and time_axis must be two different dims");
  const Ints s = c.type(x).sizes;
  int64_t B = s[static_cast<size_t>(bAxis)], T = s[static_cast<size_t>(tAxis)];
  if (static_cast<int64_t>(lens.size()) != B) c.fail("ReverseSequence: sequence_lens must have one entry per batch element");
  if (c.type(x).numel() > kMaxFoldElements) c.fail("ReverseSequence: the input is too large");
  // An index tensor of x's shape along the time axis: reversed within each length.
  HostTensor idx = HostTensor::zeros(DType::I64, s);
  Ints strides = TensorType::contiguousStrides(s);
  for (int64_t e = 0; e < idx.numel(); ++e) {
    int64_t t = (e / strides[static_cast<size_t>(tAxis)]) % T, b = (e / strides[static_cast<size_t>(bAxis)]) % B;
    int64_t len = std::clamp<int64_t>(lens[static_cast<size_t>(b)], 0, T);
    idx.data[static_cast<size_t>(e)] = static_cast<double>(t < len ? len - 1 - t : t);
  }
  return {c.op(OpKind::Gather, {x, c.constant(idx)}, Attrs{{"dim", tAxis}})};
}

// ------------------------------------------------------------ the op table

const std::map<std::string, Convert>& converters() {
  static const std::map<std::string, Convert> table = {
      {"Abs", [](Node& c) { return unary(c, OpKind::Abs); }},
      {"Adagrad", optimizerOp<0>},
      {"Adam", optimizerOp<2>},
      {"Acos", [](Node& c) { return unary(c, OpKind::Acos); }},
      {"Acosh", [](Node& c) { return unary(c, OpKind::Acosh); }},
      {"Add", [](Node& c) { return binary(c, OpKind::Add); }},
      {"And", [](Node& c) { return binary(c, OpKind::LogicalAnd); }},
      {"ArgMax", argOnnx<true>},
      {"ArgMin", argOnnx<false>},
      {"Asin", [](Node& c) { return unary(c, OpKind::Asin); }},
      {"Asinh", [](Node& c) { return unary(c, OpKind::Asinh); }},
      {"Atan", [](Node& c) { return unary(c, OpKind::Atan); }},
      {"Atanh", [](Node& c) { return unary(c, OpKind::Atanh); }},
      {"AveragePool", poolOp<false>},
      {"BatchNormalization", batchNormOp},
      {"Cast", castOp},
      {"CastLike", [](Node& c) -> Outs { return {c.cast(c.in(0), c.dtypeIn(1))}; }},
      {"Ceil", [](Node& c) { return unary(c, OpKind::Ceil); }},
      {"Celu", celuOp},
      {"Clip", clipOp},
      {"Concat", concatOp},
      {"Constant", constantOp},
      {"ConstantOfShape", constantOfShapeOp},
      {"Conv", convOp},
      {"ConvTranspose", convTransposeOp},
      {"Cos", [](Node& c) { return unary(c, OpKind::Cos); }},
      {"Cosh", [](Node& c) { return unary(c, OpKind::Cosh); }},
      {"CumSum", cumsumOp},
      {"DepthToSpace", depthToSpaceOp},
      {"Div", divOp},
      {"Dropout", dropoutOp},
      {"Einsum", einsumOp},
      {"Elu", eluOp},
      {"Equal", [](Node& c) { return binary(c, OpKind::Eq); }},
      {"Erf", [](Node& c) { return unary(c, OpKind::Erf); }},
      {"Exp", [](Node& c) { return unary(c, OpKind::Exp); }},
      {"Expand", expandOp},
      {"EyeLike", eyeLikeOp},
      {"Flatten", flattenOp},
      {"Floor", [](Node& c) { return unary(c, OpKind::Floor); }},
      {"BlackmanWindow", windowOp<2>},
      {"Gather", gatherOp},
      {"DFT", dftOp},
      {"STFT", stftOp},
      {"GatherElements", gatherElementsOp},
      {"GatherND", gatherNdOp},
      {"Gemm", gemmOp},
      {"GlobalAveragePool", globalPoolOp<false>},
      {"GlobalMaxPool", globalPoolOp<true>},
      {"Greater", [](Node& c) { return binary(c, OpKind::Gt); }},
      {"GreaterOrEqual", [](Node& c) { return binary(c, OpKind::Ge); }},
      {"Hardmax", [](Node& c) { return softmaxOnnx(c, false, true); }},
      {"HammingWindow", windowOp<1>},
      {"HannWindow", windowOp<0>},
      {"HardSigmoid", hardSigmoidOp},
      {"HardSwish", hardSwishOp},
      {"Identity", identityOp},
      {"InstanceNormalization", instanceNormOp},
      {"IsInf", isInfOp},
      {"IsNaN", [](Node& c) { return unary(c, OpKind::IsNan); }},
      {"LayerNormalization", layerNormOp},
      {"LeakyRelu", leakyReluOp},
      {"Less", [](Node& c) { return binary(c, OpKind::Lt); }},
      {"LessOrEqual", [](Node& c) { return binary(c, OpKind::Le); }},
      {"Log", [](Node& c) { return unary(c, OpKind::Log); }},
      {"LogSoftmax", [](Node& c) { return softmaxOnnx(c, true, false); }},
      {"LRN", lrnOp},
      {"MatMul", matmulOp},
      {"Max", [](Node& c) { return variadic(c, OpKind::Maximum, false); }},
      {"MaxPool", poolOp<true>},
      {"Mean", [](Node& c) { return variadic(c, OpKind::Add, true); }},
      {"MeanVarianceNormalization", mvnOp},
      {"Min", [](Node& c) { return variadic(c, OpKind::Minimum, false); }},
      {"Mod", modOp},
      {"Momentum", optimizerOp<1>},
      {"Mul", [](Node& c) { return binary(c, OpKind::Mul); }},
      {"Neg", [](Node& c) { return unary(c, OpKind::Neg); }},
      {"NegativeLogLikelihoodLoss", nllLossOp},
      {"Not", [](Node& c) { return unary(c, OpKind::LogicalNot); }},
      {"OneHot", oneHotOp},
      {"Or", [](Node& c) { return binary(c, OpKind::LogicalOr); }},
      {"Pad", padOp},
      {"Pow", powOp},
      {"PRelu", preluOp},
      {"Range", rangeOp},
      {"Reciprocal", [](Node& c) { return unary(c, OpKind::Reciprocal); }},
      {"ReduceL1", reduceOnnx<Red::L1>},
      {"ReduceL2", reduceOnnx<Red::L2>},
      {"ReduceLogSum", reduceOnnx<Red::LogSum>},
      {"ReduceLogSumExp", reduceOnnx<Red::LogSumExp>},
      {"ReduceMax", reduceOnnx<Red::Max>},
      {"ReduceMean", reduceOnnx<Red::Mean>},
      {"ReduceMin", reduceOnnx<Red::Min>},
      {"ReduceProd", reduceOnnx<Red::Prod>},
      {"ReduceSum", reduceOnnx<Red::Sum>},
      {"ReduceSumSquare", reduceOnnx<Red::SumSquare>},
      {"Relu", [](Node& c) { return unary(c, OpKind::Relu); }},
      {"Reshape", reshapeOp},
      {"Resize", resizeOp},
      {"ReverseSequence", reverseSequenceOp},
      {"Round", [](Node& c) { return unary(c, OpKind::Round); }},
      {"ScatterElements", scatterElementsOp},
      {"ScatterND", scatterNdOp},
      {"Scatter", scatterElementsOp},
      {"Selu", seluOp},
      {"Shape", shapeOp},
      {"Shrink", shrinkOp},
      {"Sigmoid", [](Node& c) { return unary(c, OpKind::Sigmoid); }},
      {"Sign", [](Node& c) { return unary(c, OpKind::Sign); }},
      {"Sin", [](Node& c) { return unary(c, OpKind::Sin); }},
      {"Sinh", [](Node& c) { return unary(c, OpKind::Sinh); }},
      {"Size", sizeOp},
      {"Slice", sliceOp},
      {"Softmax", [](Node& c) { return softmaxOnnx(c, false, false); }},
      {"SoftmaxCrossEntropyLoss", softmaxCrossEntropyOp},
      {"Softplus", softplusOp},
      {"Softsign", softsignOp},
      {"SpaceToDepth", spaceToDepthOp},
      {"Split", splitOp},
      {"Sqrt", [](Node& c) { return unary(c, OpKind::Sqrt); }},
      {"Squeeze", squeezeOp},
      {"Sub", [](Node& c) { return binary(c, OpKind::Sub); }},
      {"Sum", [](Node& c) { return variadic(c, OpKind::Add, false); }},
      {"Tan", [](Node& c) { return unary(c, OpKind::Tan); }},
      {"Tanh", [](Node& c) { return unary(c, OpKind::Tanh); }},
      {"ThresholdedRelu", thresholdedReluOp},
      {"Tile", tileOp},
      {"TopK", topkOp},
      {"Transpose", transposeOp},
      {"Trilu", triluOp},
      {"Unsqueeze", unsqueezeOp},
      {"Upsample", resizeOp},
      {"Where", whereOp},
      {"Xor", xorOp},
      {"BitShift", bitShiftOp},
  };
  return table;
}

/// Ops whose output shape depends on the data: refused with their own line.
const std::set<std::string>& dataDependentOps() {
  static const std::set<std::string> s = {"NonZero", "Compress", "Unique", "NonMaxSuppression"};
  return s;
}

// ------------------------------------------------------------ the loader

class Loader {
 public:
  Loader(std::string path, const FrontendOptions& opts) : path_(std::move(path)), opts_(opts), dir_(fs::path(path_).parent_path()) {}

  Model load(const std::string& bytes);

 private:
  [[noreturn]] void fail(const std::string& msg, const std::string& node = "", const std::string& op = "") const {
    throw UserError(SourceLoc{path_, node, op}, msg);
  }
  void bindDims(onnx::GraphProto& g);
  void check(onnx::ModelProto& m);
  void inferAndCompare(onnx::ModelProto& m);
  Model convert(const onnx::ModelProto& m, const std::set<std::string>& forcedConst, std::set<std::string>& baked,
                std::set<std::string>& wanted);
  ValueId materialize(Model& model, OValue& v, const std::string& name);

  std::string path_;
  const FrontendOptions& opts_;
  fs::path dir_;
  int opset_ = 0;
  /// Every node output aotc typed, where it came from (compared with ONNX's
  /// shape inference once the conversion succeeded).
  std::map<std::string, std::pair<TensorType, SourceLoc>> produced_;
  std::map<std::string, HostTensor> constantValues_;  ///< --constant-inputs
  std::set<std::string> constantInputs_;              ///< the graph inputs taken from it
};

void Loader::bindDims(onnx::GraphProto& g) {
  std::set<std::string> inits;
  for (const auto& t : g.initializer()) inits.insert(t.name());
  std::set<std::string> shapeUsed, dimUsed, unbound;
  for (auto& in : *g.mutable_input()) {
    if (inits.count(in.name())) continue;
    if (!in.type().has_tensor_type()) fail("graph input is not a tensor (sequence, map and optional inputs are not supported)", in.name());
    auto* tt = in.mutable_type()->mutable_tensor_type();
    auto it = opts_.shapes.find(in.name());
    if (it != opts_.shapes.end()) {
      shapeUsed.insert(in.name());
      if (tt->has_shape() && tt->shape().dim_size() != static_cast<int>(it->second.size()))
        fail(cat("--shape gives ", it->second.size(), " dims but the input has ", tt->shape().dim_size()), in.name());
      tt->mutable_shape()->clear_dim();
      for (int64_t d : it->second) tt->mutable_shape()->add_dim()->set_dim_value(d);
      continue;
    }
    if (!tt->has_shape()) fail("graph input has no shape; give it with --shape " + in.name() + "=...", in.name());
    for (auto& d : *tt->mutable_shape()->mutable_dim()) {
      if (d.has_dim_value()) {
        if (d.dim_value() < 0 || d.dim_value() > kMaxExtent) fail(cat("graph input has a bad dim ", d.dim_value()), in.name());
        continue;
      }
      if (d.has_dim_param() && opts_.dims.count(d.dim_param())) {
        dimUsed.insert(d.dim_param());
        d.set_dim_value(opts_.dims.at(d.dim_param()));
        continue;
      }
      unbound.insert(d.has_dim_param() && !d.dim_param().empty() ? d.dim_param() : "input " + in.name() + " (an unnamed dim)");
    }
  }
  for (auto& [k, v] : opts_.shapes)
    if (!shapeUsed.count(k)) fail("--shape names '" + k + "', which is not a graph input of this model");
  for (auto& [k, v] : opts_.dims)
    if (!dimUsed.count(k)) fail("--dim names '" + k + "', which no graph input has as a symbolic dim");
  if (!unbound.empty()) {
    std::string list;
    for (const std::string& u : unbound) list += (list.empty() ? "" : ", ") + u;
    fail("symbolic dims are not bound: " + list + "; bind them with --dim PARAM=N or --shape INPUT=AxBx...");
  }
}

/// One line of an ONNX exception's text.
std::string oneLine(const char* what) {
  std::string msg;
  for (const char* p = what; *p && msg.size() < 400; ++p) {
    char ch = *p == '\n' || *p == '\r' || *p == '\t' ? ' ' : *p;
    if (!(ch == ' ' && (msg.empty() || msg.back() == ' '))) msg += ch;
  }
  while (!msg.empty() && msg.back() == ' ') msg.pop_back();
  return msg;
}

void Loader::check(onnx::ModelProto& m) {
  // External data must stay inside the model's directory; only then may the
  // checker look for it there (its path form resolves it beside the model).
  bool external = false;
  for (const auto& t : m.graph().initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    external = true;
    for (const auto& kv : t.external_data()) {
      if (kv.key() != "location") continue;
      if (!safeExternalLocation(kv.value())) fail("external data location '" + kv.value() + "' must be a relative path inside the model's directory", t.name(), "initializer");
    }
  }
  try {
    if (external && !path_.empty()) onnx::checker::check_model(path_);
    else onnx::checker::check_model(m);
  } catch (const std::exception& e) {
    fail("ONNX checker: " + oneLine(e.what()));
  }
}

/// ONNX's shape inference runs only on a model aotc converted: its C++
/// rules trust their inputs (ONNX 1.12's ConvTranspose rule reads past a
/// weight of too few dims, found by fuzzing), and aotc's converters have
/// checked every rank and attribute by then.  A static shape or dtype it
/// infers that differs from aotc's is refused, never compiled.
void Loader::inferAndCompare(onnx::ModelProto& m) {
  try {
    onnx::shape_inference::InferShapes(m);
  } catch (const std::exception& e) {
    fail("ONNX shape inference: " + oneLine(e.what()));
  }
  auto record = [&](const onnx::ValueInfoProto& vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    const auto& tt = vi.type().tensor_type();
    auto d = dtypeOfOnnx(tt.elem_type());
    if (!d) return;
    Ints sizes;
    for (const auto& dim : tt.shape().dim()) {
      if (!dim.has_dim_value()) return;
      sizes.push_back(dim.dim_value());
    }
    TensorType inferred = TensorType::contiguous(*d, sizes);
    auto it = produced_.find(vi.name());
    if (it == produced_.end()) return;
    const TensorType& ours = it->second.first;
    if (inferred.sizes != ours.sizes || inferred.dtype != ours.dtype)
      throw UserError(it->second.second, cat("output '", vi.name(), "': aotc computes ", TensorType::contiguous(ours.dtype, ours.sizes).str(),
                                             " but ONNX shape inference gives ", inferred.str()));
  };
  for (const auto& vi : m.graph().value_info()) record(vi);
  for (const auto& vi : m.graph().output()) record(vi);
}

ValueId Loader::materialize(Model& model, OValue& v, const std::string& name) {
  if (v.id != kNoValue) return v.id;
  AOTC_CHECK(v.known.has_value(), "an ONNX value with neither an IR value nor a known one: ", name);
  Graph& g = model.graph;
  const HostTensor& t = *v.known;
  if (t.dtype == DType::I64 || t.dtype == DType::U64)
    for (double x : t.data)
      if (std::fabs(x) > 0x1p53)
        throw UserError(SourceLoc{path_, name, "constant"}, cat("an ", dtypeTorchName(t.dtype), " tensor holding values beyond 2^53 is used at run time; aotc cannot hold them exactly"));
  if (v.initializer.empty() && (t.data.empty() || isSplat(t))) {
    Builder b(g, SourceLoc{path_, name, "constant"});
    v.id = b.full(t.data.empty() ? 0.0 : t.data[0], TensorType::contiguous(t.dtype, t.sizes));
    return v.id;
  }
  std::string nm = g.uniqueName(sanitize(v.initializer.empty() ? name : v.initializer));
  v.id = g.addInput(nm, TensorType::contiguous(t.dtype, t.sizes), InputRole::Constant, false);
  model.weights[nm] = t;
  return v.id;
}

/// Runs the nodes of a scratch graph on the reference kernels.
std::vector<HostTensor> evalScratch(const Graph& g, const std::vector<HostTensor>& inputs) {
  std::vector<std::optional<HostTensor>> vals(g.values.size());
  for (size_t k = 0; k < g.inputs.size(); ++k) vals[static_cast<size_t>(g.inputs[k].value)] = inputs[k];
  for (const aotc::Node& n : g.nodes) {
    std::vector<const HostTensor*> ins;
    for (ValueId v : n.inputs) ins.push_back(&*vals[static_cast<size_t>(v)]);
    std::vector<TensorType> ot;
    for (ValueId v : n.outputs) ot.push_back(g.type(v));
    std::vector<HostTensor> outs = referenceEval(n.op, ins, n.attrs, ot);
    for (size_t k = 0; k < n.outputs.size(); ++k) vals[static_cast<size_t>(n.outputs[k])] = std::move(outs[k]);
  }
  std::vector<HostTensor> r;
  for (const auto& v : vals) r.push_back(v ? *v : HostTensor{});
  return r;
}

Model Loader::convert(const onnx::ModelProto& m, const std::set<std::string>& forcedConst, std::set<std::string>& baked,
                      std::set<std::string>& wanted) {
  const onnx::GraphProto& gp = m.graph();
  Model model;
  model.format = "onnx";
  model.graph.name = validName(gp.name()) ? gp.name() : sanitize(gp.name().empty() ? fs::path(path_).stem().string() : gp.name());
  Graph& g = model.graph;
  std::map<std::string, OValue> env;
  produced_.clear();

  // Initializers: which ones feed only BatchNormalization's statistics.
  std::map<std::string, const onnx::TensorProto*> inits;
  for (const auto& t : gp.initializer()) {
    if (t.name().empty()) fail("an initializer has no name");
    if (!inits.emplace(t.name(), &t).second) fail("initializer is defined twice", t.name());
  }
  std::set<std::string> frozen(opts_.frozen.begin(), opts_.frozen.end());
  for (const std::string& f : frozen)
    if (!inits.count(f)) fail("--frozen names '" + f + "', which is not an initializer of this model");
  std::map<std::string, bool> onlyStats;  // initializer -> every use is BN input 3 or 4
  for (const auto& n : gp.node())
    for (int k = 0; k < n.input_size(); ++k) {
      if (!inits.count(n.input(k))) continue;
      bool stat = n.op_type() == "BatchNormalization" && (k == 3 || k == 4);
      auto [it, fresh] = onlyStats.emplace(n.input(k), stat);
      if (!fresh) it->second = it->second && stat;
    }

  // Graph inputs (an input that is also an initializer is the initializer).
  std::set<std::string> seen;
  for (const auto& in : gp.input()) {
    if (inits.count(in.name())) continue;
    if (!seen.insert(in.name()).second) fail("graph input is listed twice", in.name());
    const auto& tt = in.type().tensor_type();
    auto d = dtypeOfOnnx(tt.elem_type());
    if (!d) fail(cat("graph input has element type ", onnxTypeName(tt.elem_type()), ", which aotc does not support"), in.name());
    Ints sizes;
    for (const auto& dim : tt.shape().dim()) sizes.push_back(dim.dim_value());
    std::string nm = sanitize(in.name());
    if (g.valueNamed(nm) != kNoValue) fail("two graph inputs have the same aotc name '" + nm + "'", in.name());
    OValue v;
    v.type = TensorType::contiguous(*d, sizes);
    v.graphInput = in.name();
    v.dependsOn = {in.name()};
    if (constantInputs_.count(in.name())) {
      // Needed at compile time and given by --constant-inputs: a constant.
      const HostTensor& t = constantValues_.at(in.name());
      if (t.dtype != v.type.dtype || t.sizes != v.type.sizes)
        fail(cat("--constant-inputs gives ", TensorType::contiguous(t.dtype, t.sizes).str(), " but the input is ", v.type.str()), in.name());
      v.known = t;
      env[in.name()] = std::move(v);
      continue;
    }
    v.id = g.addInput(nm, v.type, InputRole::UserInput, false);
    env[in.name()] = std::move(v);
  }
  // Initializers: floating-point ones are parameters (requiring grad with
  // --train unless frozen; BatchNormalization statistics are buffers), the
  // others compile-time constants.
  for (const auto& t : gp.initializer()) {
    if (env.count(t.name())) fail("initializer has the name of a graph input", t.name());
    OValue v;
    v.known = readTensor(t, dir_, SourceLoc{path_, t.name(), "initializer"}, "initializer");
    v.type = TensorType::contiguous(v.known->dtype, v.known->sizes);
    v.initializer = t.name();
    if (isFloating(v.known->dtype) && !forcedConst.count(t.name())) {
      std::string nm = sanitize(t.name());
      if (g.valueNamed(nm) != kNoValue) fail("two inputs have the same aotc name '" + nm + "'", t.name());
      bool stats = onlyStats.count(t.name()) && onlyStats[t.name()];
      InputRole role = stats ? InputRole::Buffer : InputRole::Parameter;
      bool grad = opts_.train && !stats && !frozen.count(t.name());
      v.id = g.addInput(nm, v.type, role, grad);
      model.weights[nm] = *v.known;
      v.known.reset();  // a parameter: its value is the caller's
    }
    env[t.name()] = std::move(v);
  }

  // Nodes, in the file's (topological) order.
  const auto& table = converters();
  int index = 0;
  for (const auto& n : gp.node()) {
    std::string nodeName = n.name().empty() ? cat("#", index) : n.name();
    ++index;
    SourceLoc loc{path_, nodeName, n.op_type()};
    std::vector<const OValue*> ins;
    for (const std::string& name : n.input()) {
      if (name.empty()) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = env.find(name);
      if (it == env.end()) throw UserError(loc, "input '" + name + "' is not defined before this node (an undefined name or a cycle)");
      ins.push_back(&it->second);
    }
    Convert fn = table.at(n.op_type());
    Outs outs;
    // Note [Compile-time values]: fold a node whose inputs are all known.
    bool foldable = true;
    int64_t inElems = 0;
    for (const OValue* v : ins) {
      if (v && !v->known) foldable = false;
      if (v && v->known) inElems += v->known->numel();
    }
    if (inElems > kMaxFoldElements) foldable = false;
    if (foldable) {
      Graph scratch;
      std::vector<HostTensor> vals;
      std::vector<ValueId> ids;
      for (const OValue* v : ins) {
        if (!v) {
          ids.push_back(kNoValue);
          continue;
        }
        ids.push_back(scratch.addInput(cat("k", vals.size()), v->type, InputRole::Constant, false));
        vals.push_back(*v->known);
      }
      Node c(scratch, loc, n, opset_, ins, [&](size_t k) { return ids[k]; }, opts_.train, &baked, &wanted);
      c.setMakeConstant([&](HostTensor t) {
        ValueId id = scratch.addInput(cat("k", vals.size()), TensorType::contiguous(t.dtype, t.sizes), InputRole::Constant, false);
        vals.push_back(std::move(t));
        return id;
      });
      Outs r = fn(c);
      bool ok = std::all_of(scratch.nodes.begin(), scratch.nodes.end(), [](const aotc::Node& x) {
        return opComputes(x.op) && opInfo(x.op).category != OpCategory::Random;
      });
      for (const Out& o : r)
        if (o.id != kNoValue && scratch.type(o.id).numel() > kMaxFoldElements) ok = false;
      if (ok) {
        std::vector<HostTensor> all = evalScratch(scratch, vals);
        for (Out& o : r)
          if (o.id != kNoValue) {
            HostTensor h = all[static_cast<size_t>(o.id)];
            o = Out(std::move(h));
          }
        outs = std::move(r);
      } else {
        foldable = false;
      }
    }
    if (!foldable) {
      Node c(g, loc, n, opset_, ins,
             [&](size_t k) { return materialize(model, const_cast<OValue&>(*ins[k]), n.input(static_cast<int>(k))); }, opts_.train, &baked, &wanted);
      c.setMakeConstant([&](HostTensor t) {
        OValue v;
        v.known = std::move(t);
        return materialize(model, v, sanitize(nodeName) + ".constant");
      });
      outs = fn(c);
    }
    std::set<std::string> deps;
    for (const OValue* v : ins)
      if (v) deps.insert(v->dependsOn.begin(), v->dependsOn.end());
    for (int k = 0; k < n.output_size(); ++k) {
      const std::string& name = n.output(k);
      if (name.empty()) continue;
      if (static_cast<size_t>(k) >= outs.size() || (outs[k].id == kNoValue && !outs[k].known))
        throw UserError(loc, cat("output ", k, " ('", name, "') is not supported"));
      if (env.count(name)) throw UserError(loc, "output '" + name + "' is defined twice");
      OValue v;
      v.dependsOn = deps;
      if (outs[k].known) {
        v.known = std::move(outs[k].known);
        v.type = TensorType::contiguous(v.known->dtype, v.known->sizes);
      } else {
        v.id = outs[k].id;
        v.type = g.type(v.id);
        if (!g.inputOf(v.id) && g.values[v.id].node >= 0) g.tryRename(v.id, sanitize(name));
      }
      produced_[name] = {v.type, loc};
      env[name] = std::move(v);
    }
  }

  // Graph outputs.
  for (const auto& out : gp.output()) {
    auto it = env.find(out.name());
    if (it == env.end()) fail("graph output is not computed by any node", out.name());
    ValueId v = materialize(model, it->second, out.name());
    g.outputs.push_back(GraphOutput{v, OutputRole::User, "", std::nullopt, {}});
  }
  return model;
}

/// The default domain's opset the model imports (0 when it imports none).
int importedOpset(const onnx::ModelProto& m) {
  int opset = 0;
  for (const auto& os : m.opset_import())
    if (os.domain().empty() || os.domain() == "ai.onnx") opset = static_cast<int>(os.version());
  return opset;
}

/// Why the front end cannot convert node `n` ("" when it can).
std::string unsupportedReason(const onnx::NodeProto& n, int opset) {
  bool defaultDomain = n.domain().empty() || n.domain() == "ai.onnx" ||
                       (n.domain() == "ai.onnx.preview.training" && (n.op_type() == "Adagrad" || n.op_type() == "Momentum" || n.op_type() == "Adam"));
  if (!defaultDomain) return cat("op ", n.domain(), "::", n.op_type(), " is not supported (only the default ONNX domain is)");
  if (dataDependentOps().count(n.op_type()))
    return cat("op ", n.op_type(), " (opset ", opset, ") has an output shape that depends on the data, which aotc's static shapes cannot hold");
  if (!converters().count(n.op_type())) return cat("op ", n.op_type(), " (opset ", opset, ") is not supported");
  return "";
}

Model Loader::load(const std::string& bytes) {
  onnx::ModelProto m;
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) fail("the file is larger than protobuf's 2 GiB limit");
  if (!m.ParseFromString(bytes)) fail("not a valid ONNX model (malformed or truncated protobuf)");
  if (!m.has_graph()) fail("the model has no graph");
  opset_ = importedOpset(m);
  if (opset_ > kMaxOpset) fail(cat("the model uses opset ", opset_, "; aotc reads opsets up to ", kMaxOpset, " (ONNX 1.12)"));
  if (static_cast<size_t>(m.graph().node_size()) > kMaxNodes) fail(cat("the graph has ", m.graph().node_size(), " nodes, more than ", kMaxNodes));

  // Every unsupported op of the model, at once.
  std::vector<Diagnostic> unsupported;
  int index = 0;
  for (const auto& n : m.graph().node()) {
    std::string nodeName = n.name().empty() ? cat("#", index) : n.name();
    ++index;
    if (std::string why = unsupportedReason(n, opset_); !why.empty()) unsupported.push_back({SourceLoc{path_, nodeName, n.op_type()}, why});
  }
  if (!unsupported.empty()) throw UserError(unsupported);
  if (opset_ <= 0) opset_ = kMaxOpset;  // only ai.onnx.preview.training: the default domain's newest semantics

  bindDims(*m.mutable_graph());
  check(m);
  if (!opts_.constant_inputs.empty()) constantValues_ = readSafetensors(opts_.constant_inputs);
  std::set<std::string> forced;
  int bakedRetries = 0;
  for (int attempt = 0;; ++attempt) {
    std::set<std::string> baked, wanted;
    Model model;
    try {
      model = convert(m, forced, baked, wanted);
    } catch (const UserError&) {
      // A graph input needed at compile time and given by --constant-inputs:
      // convert again with it as a constant.
      bool more = false;
      for (const std::string& w : wanted)
        if (constantValues_.count(w) && constantInputs_.insert(w).second) more = true;
      if (!more || attempt > 64) throw;
      continue;
    }
    // An initializer used as a compile-time value must not also be a
    // parameter a caller could override (Note [Compile-time values]).
    bool again = false;
    for (const std::string& b : baked) {
      auto t = std::find_if(m.graph().initializer().begin(), m.graph().initializer().end(), [&](const auto& x) { return x.name() == b; });
      if (t != m.graph().initializer().end() && dtypeOfOnnx(t->data_type()) && isFloating(*dtypeOfOnnx(t->data_type())) && !forced.count(b)) {
        forced.insert(b);
        again = true;
      }
    }
    if (!again || bakedRetries++ > 0) {
      inferAndCompare(m);
      return model;
    }
  }
}

}  // namespace

namespace {

/// Note [Dynamic ONNX dims]: a graph input's dim_param that neither --dim nor
/// --shape binds is a symbol (issue 15): the model is converted at every
/// probe binding of its symbols (Note [Probing and unifying]) and the graphs
/// unified, exactly as the FX front end does for an exporter's dynamic dims
/// (Note [Dynamic FX graphs]).  ONNX records no example size, so the hint is
/// kOnnxHint and the range 1 to 2^31-1; a model whose conversion fails at a
/// probe says so and how to bind the dim instead.  A dim_param that is not an
/// identifier, and a dim with neither value nor name, stay unbound errors.
constexpr int64_t kOnnxHint = 2;

std::vector<SymbolDecl> onnxSymbols(const std::string& bytes, const std::string& path, const FrontendOptions& opts) {
  onnx::ModelProto m;
  if (bytes.size() > static_cast<size_t>(INT_MAX) || !m.ParseFromString(bytes)) return {};  // the loader reports it
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  std::vector<SymbolDecl> symbols;
  for (const auto& in : m.graph().input()) {
    if (inits.count(in.name()) || opts.shapes.count(in.name()) || !in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) continue;
    for (const auto& d : in.type().tensor_type().shape().dim()) {
      if (d.has_dim_value() || !d.has_dim_param() || opts.dims.count(d.dim_param())) continue;
      const std::string& p = d.dim_param();
      bool ident = !p.empty() && p.size() <= 64 && (std::isalpha(static_cast<unsigned char>(p[0])) || p[0] == '_') && p != "max" && p != "min";
      for (char c : p) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
      if (!ident || std::any_of(symbols.begin(), symbols.end(), [&](const SymbolDecl& s) { return s.name == p; })) continue;
      symbols.push_back(SymbolDecl{p, kOnnxHint, 1, (int64_t{1} << 31) - 1});
    }
  }
  if (symbols.size() > kMaxSymbols) {
    std::string list;
    for (const SymbolDecl& s : symbols) list += (list.empty() ? "" : ", ") + s.name;
    throw UserError(SourceLoc{path}, cat("the graph inputs have ", symbols.size(), " symbolic dims (", list, "); aotc takes at most ", kMaxSymbols,
                                         " dynamic ones: bind the others with --dim PARAM=N"));
  }
  return symbols;
}

}  // namespace

Model loadOnnxBytes(const std::string& bytes, const std::string& path, const FrontendOptions& opts) {
  std::vector<SymbolDecl> symbols = onnxSymbols(bytes, path, opts);
  if (symbols.empty()) return Loader(path, opts).load(bytes);
  // Note [Dynamic ONNX dims].
  std::vector<Graph> graphs;
  std::optional<Model> first;
  for (const sym::Bindings& b : probeBindings(symbols)) {
    FrontendOptions o = opts;
    for (const auto& [name, value] : b) o.dims[name] = value;
    Model m;
    try {
      m = Loader(path, o).load(bytes);
    } catch (const UserError& e) {
      std::vector<Diagnostic> d = e.diagnostics();
      for (Diagnostic& x : d)
        x.message += " (converting at " + bindingText(b) + ", a probe of the model's symbolic dims; --dim PARAM=N gives a static artifact)";
      throw UserError(std::move(d));
    }
    graphs.push_back(m.graph);
    if (!first) first = std::move(m);
  }
  Model out = std::move(*first);
  out.graph = unifyGraphs(graphs, symbols, path);
  return out;
}

namespace {
std::string readModelBytes(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw UserError(SourceLoc{path}, "cannot open the model file");
  uint64_t size = fs::file_size(path, ec);
  if (ec) throw UserError(SourceLoc{path}, "cannot read the model file");
  if (size > kMaxFileBytes) throw UserError(SourceLoc{path}, "the file is larger than protobuf's 2 GiB limit");
  std::ifstream f(path, std::ios::binary);
  std::string bytes(static_cast<size_t>(size), '\0');
  f.read(bytes.data(), static_cast<std::streamsize>(size));
  if (!f) throw UserError(SourceLoc{path}, "cannot read the model file");
  return bytes;
}

std::string typeText(const onnx::TypeProto& t) {
  if (!t.has_tensor_type()) return "";
  std::string s = onnx::TensorProto_DataType_Name(t.tensor_type().elem_type()) + "[";
  const auto& dims = t.tensor_type().shape().dim();
  for (int i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + (dims[i].has_dim_value() ? std::to_string(dims[i].dim_value()) : dims[i].dim_param());
  return s + "]";
}
}  // namespace

Model loadOnnx(const std::string& path, const FrontendOptions& opts) { return loadOnnxBytes(readModelBytes(path), path, opts); }

SourceGraph onnxSourceGraph(const std::string& path) {
  onnx::ModelProto m;
  std::string bytes = readModelBytes(path);
  if (!m.ParseFromString(bytes)) throw UserError(SourceLoc{path}, "not a valid ONNX model (malformed or truncated protobuf)");
  const onnx::GraphProto& g = m.graph();
  if (static_cast<size_t>(g.node_size()) > kMaxNodes) throw UserError(SourceLoc{path}, cat("the graph has ", g.node_size(), " nodes, more than ", kMaxNodes));
  const int opset = importedOpset(m) > 0 ? importedOpset(m) : kMaxOpset;
  SourceGraph sg;
  sg.name = g.name().empty() ? "model" : g.name();
  std::map<std::string, std::string> types, producer;
  for (const auto& v : g.value_info()) types[v.name()] = typeText(v.type());
  for (const auto& v : g.output()) types[v.name()] = typeText(v.type());
  std::set<std::string> initializers;
  for (const auto& t : g.initializer()) initializers.insert(t.name());
  for (const auto& v : g.input()) {
    SourceNode in;
    in.name = v.name();
    in.op = initializers.count(v.name()) ? "initializer" : "input";
    in.type = typeText(v.type());
    in.is_input = true;
    in.loc = SourceLoc{path, v.name(), "input"};
    producer[v.name()] = v.name();
    sg.nodes.push_back(std::move(in));
  }
  for (const auto& t : g.initializer()) {
    if (producer.count(t.name())) continue;
    SourceNode in;
    in.name = t.name();
    in.op = "initializer";
    in.is_input = true;
    std::string dims;
    for (int i = 0; i < t.dims_size(); ++i) dims += (i ? ", " : "") + std::to_string(t.dims(i));
    in.type = onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t.data_type())) + "[" + dims + "]";
    in.loc = SourceLoc{path, t.name(), "initializer"};
    producer[t.name()] = t.name();
    sg.nodes.push_back(std::move(in));
  }
  int index = 0;
  for (const auto& n : g.node()) {
    SourceNode sn;
    sn.name = n.name().empty() ? cat("#", index) : n.name();
    ++index;
    sn.op = n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type() : n.domain() + "::" + n.op_type();
    for (const auto& i : n.input())
      if (auto it = producer.find(i); it != producer.end()) sn.inputs.push_back(it->second);
    for (int o = 0; o < n.output_size(); ++o) {
      producer[n.output(o)] = sn.name;
      if (auto it = types.find(n.output(o)); it != types.end() && !it->second.empty())
        sn.type += (sn.type.empty() ? "" : ", ") + it->second;
    }
    sn.loc = SourceLoc{path, sn.name, n.op_type()};
    sn.unsupported = unsupportedReason(n, opset);
    sg.nodes.push_back(std::move(sn));
  }
  for (const auto& v : g.output())
    if (auto it = producer.find(v.name()); it != producer.end()) sg.outputs.push_back(it->second);
  return sg;
}

std::vector<std::string> supportedOnnxOps() {
  std::vector<std::string> r;
  for (const auto& [k, v] : converters()) r.push_back(k);
  return r;
}

}  // namespace aotc
