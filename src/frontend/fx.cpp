//===- fx.cpp - FX JSON (v1) -> captured IR --------------------------------===//
//
// Each ATen overload has one converter that maps its schema (positional args,
// kwargs, defaults) to IR ops.  ATen decompositions that the IR does not keep
// as ops (addmm, rsub, alpha scaling, reshape-as-copy) are spelled out here,
// so the IR op table stays small.  Converters see the FX node's location, so
// every diagnostic and every IR node they create names the user's node.
//===----------------------------------------------------------------------===//
#include "aotc/frontend/fx.h"

#include <filesystem>
#include <functional>
#include <limits>
#include <fstream>
#include <map>
#include <thread>
#include <numbers>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "aotc/ir/safetensors.h"
#include "aotc/ir/unify.h"
#include "aotc/support/parallel.h"
#include "aotc/ops/builder.h"
#include "aotc/ops/decompose.h"
#include "aotc/ops/ops.h"
#include "aotc/ops/pointwise.h"

namespace aotc {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr uint64_t kMaxFileBytes = 1ull << 30;
/// Bounded work on hostile input: the largest real models export a few tens
/// of thousands of ATen nodes.
constexpr size_t kMaxNodes = 250000;
/// Integer arguments (dims, sizes, indices, offsets) beyond 2^48 in
/// magnitude are refused: no tensor can have such a size, and products and
/// sums of a few of them stay far from int64's range.
constexpr int64_t kMaxIntArg = int64_t{1} << 48;


class Converter;
using ConvertFn = std::function<std::vector<ValueId>(Converter&)>;
/// FX name -> the values it stands for (several for a multi-result node).
using Env = std::map<std::string, std::vector<ValueId>>;
Graph convertRegion(const json& region, const std::string& path, const std::string& name, bool backward,
                    const SourceLoc& loc, std::vector<std::string>* savedRefs,
                    const std::map<std::string, std::string>* names = nullptr);

/// One FX node being converted.
class Converter : public Builder {
 public:
  Converter(Graph& g, const json& node, SourceLoc loc, const Env& env, bool noGrad)
      : Builder(g, std::move(loc), Phase::Forward, noGrad), node_(node), env_(env) {}

  /// Argument `i` (positional) or keyword `kw`; null if neither is given.
  const json* arg(size_t i, const char* kw) const {
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
  const json& node_;
  const Env& env_;
  bool inBackward_ = false;
  const std::map<std::string, std::string>* names_ = nullptr;
  std::set<ValueId>* complex_ = nullptr;
  std::set<ValueId>* snapshots_ = nullptr;
  const std::map<ValueId, Ints>* layout_ = nullptr;
};

using V = std::vector<ValueId>;
using namespace decomp;

V binary(Converter& c, OpKind k) {
  ValueId a = c.tensor(0, "self");
  return {c.op(k, {a, c.operand(1, "other", a)})};
}
V addLike(Converter& c, OpKind k, double sign) {
  ValueId a = c.tensor(0, "self");
  ValueId b = c.scaled(c.operand(1, "other", a), sign * c.number(2, "alpha", 1.0));
  return {c.op(k, {a, b})};
}
V unary(Converter& c, OpKind k) { return {c.op(k, {c.tensor(0, "self")})}; }
V reduce(Converter& c, OpKind k, bool with_dims) {
  ValueId x = c.tensor(0, "self");
  Attrs a;
  if (with_dims) {
    a["dim"] = c.ints(1, "dim", Ints{});
    a["keepdim"] = c.boolean(2, "keepdim", false);
    c.requireNone(3, "dtype", "dtype=");
  } else {
    a["dim"] = Ints{};
    a["keepdim"] = false;
    c.requireNone(1, "dtype", "dtype=");
  }
  return {c.op(k, {x}, a)};
}
V reshape(Converter& c) {
  ValueId x = c.tensor(0, "self");
  Ints size = inferViewSize(c.ints(1, "shape"), c.type(x).numel());
  if (!viewStrides(c.type(x).sizes, c.type(x).strides, size)) x = c.op(OpKind::Clone, {x});
  return {c.op(OpKind::View, {x}, Attrs{{"size", size}})};
}

V transpose(Converter& c, OpKind k) {
  return {c.op(k, {c.tensor(0, "self")}, Attrs{{"dim0", c.integer(1, "dim0")},
                                                {"dim1", c.integer(2, "dim1")}})};
}

ValueId constantLike(Converter& c, double v, const TensorType& t) {
  return c.op(OpKind::Constant, {}, Attrs{{"value", v}, {"dtype", std::string(dtypeName(t.dtype))}, {"shape", t.sizes}});
}

ValueId likeConstant(Converter& c, double v) {
  TensorType t = c.type(c.tensor(0, "self"));
  if (c.has(1, "dtype")) {
    const json* d = c.arg(1, "dtype");
    auto dt = d->is_object() && d->contains("dtype") ? dtypeFromTorchName((*d)["dtype"].get<std::string>()) : std::nullopt;
    if (!dt) c.fail("unsupported dtype argument " + d->dump());
    t.dtype = *dt;
  }
  return constantLike(c, v, t);
}

/// zeros/ones/full(size, [fill_value,] *, dtype=None, ...): dtype defaults
/// to float32 (PyTorch's default dtype).
ValueId filled(Converter& c, double v, size_t dtypeArg) {
  Ints size = c.ints(0, "size");
  for (int64_t d : size)
    if (d < 0) c.fail("negative size in " + c.node().at("args").at(0).dump());
  DType dt = DType::F32;
  if (c.has(dtypeArg, "dtype")) {
    const json* d = c.arg(dtypeArg, "dtype");
    auto p = d->is_object() && d->contains("dtype") ? dtypeFromTorchName((*d)["dtype"].get<std::string>()) : std::nullopt;
    if (!p) c.fail("unsupported dtype argument " + d->dump());
    dt = *p;
  }
  return constantLike(c, v, TensorType::contiguous(dt, size));
}

V fillInplace(Converter& c, double v) {
  ValueId x = c.tensor(0, "self");
  TensorType t = c.type(x);
  return {c.op(OpKind::CopyInplace, {x, constantLike(c, v, t)})};
}

/// native_batch_norm(input, weight?, bias?, running_mean?, running_var?,
/// training, momentum, eps) -> (out, save_mean, save_invstd), decomposed
/// into primitive ops so its gradient is autodiff's; in training the running
/// statistics are updated in place (copy_), which functionalize turns into
/// forward epilogue copies.  Statistics use the biased variance for
/// normalization and the unbiased one for running_var, as ATen does.
V batchNorm(Converter& c) {
  ValueId x = c.tensor(0, "input");
  TensorType xt = c.type(x);
  if (xt.rank() < 2) c.fail("batch_norm expects an input of at least 2 dims");
  auto opt = [&](size_t i, const char* kw) { return c.has(i, kw) ? c.tensor(i, kw) : kNoValue; };
  ValueId w = opt(1, "weight"), b = opt(2, "bias"), rm = opt(3, "running_mean"), rv = opt(4, "running_var");
  bool training = c.boolean(5, "training", false);
  double momentum = c.number(6, "momentum", 0.1), eps = c.number(7, "eps", 1e-5);
  int64_t C = xt.sizes[1];
  Ints dims{0}, bshape(static_cast<size_t>(xt.rank()), 1);
  for (int64_t d = 2; d < xt.rank(); ++d) dims.push_back(d);
  bshape[1] = C;
  DType dt = xt.dtype;
  auto bcast = [&](ValueId v) { return c.op(OpKind::View, {v}, Attrs{{"size", bshape}}); };
  auto sc = [&](double v) { return c.scalar(v, dt); };
  ValueId mean, var, invstd;
  if (training) {
    mean = c.op(OpKind::Mean, {x}, Attrs{{"dim", dims}, {"keepdim", false}});
    ValueId xc = c.op(OpKind::Sub, {x, bcast(mean)});
    var = c.op(OpKind::Mean, {c.op(OpKind::Mul, {xc, xc})}, Attrs{{"dim", dims}, {"keepdim", false}});
  } else {
    if (rm == kNoValue || rv == kNoValue) c.fail("batch_norm in eval mode needs running_mean and running_var");
    mean = rm;
    var = rv;
  }
  invstd = c.op(OpKind::Rsqrt, {c.op(OpKind::Add, {var, sc(eps)})});
  ValueId out = c.op(OpKind::Mul, {c.op(OpKind::Sub, {x, bcast(mean)}), bcast(invstd)});
  if (w != kNoValue) out = c.op(OpKind::Mul, {out, bcast(w)});
  if (b != kNoValue) out = c.op(OpKind::Add, {out, bcast(b)});
  if (training) {
    const int64_t n = xt.numel() / std::max<int64_t>(C, 1);
    auto update = [&](ValueId running, ValueId stat, bool unbiased) {
      // The unbiased variance scales by n / (n - 1): a size scalar (Note [Size scalars]).
      auto factor = [&] { return unbiased && n > 1 ? c.sizeScalar(momentum, n, n - 1, dt) : sc(momentum * 1.0); };
      ValueId s = c.op(OpKind::Mul, {c.op(OpKind::Detach, {stat}), factor()});
      ValueId keep = c.op(OpKind::Mul, {running, sc(1.0 - momentum)});
      c.op(OpKind::CopyInplace, {running, c.op(OpKind::Add, {keep, s})});
    };
    if (rm != kNoValue) update(rm, mean, false);
    if (rv != kNoValue) update(rv, var, true);
    return {out, mean, invstd};
  }
  TensorType empty = TensorType::contiguous(dt, {0});
  return {out, constantLike(c, 0.0, empty), constantLike(c, 0.0, empty)};
}

V setStorage(Converter& c) {
  std::string who = c.describe(c.node().at("args").at(0).value("node", "?"));
  if (c.inBackward())
    c.fail("storage swap (set_) of '" + who + "' in a custom backward is not supported: a backward may only mutate data");
  c.fail("storage swap (set_) of '" + who + "' is not supported");
}

V autogradFunction(Converter& c) {
  const json& n = c.node();
  std::vector<ValueId> args;
  for (size_t i = 0; i < n.at("args").size(); ++i) args.push_back(c.tensor(i, nullptr));
  std::string fn = n.value("function", "autograd.Function");
  if (!n.contains("forward") || !n.contains("backward")) c.fail("autograd_function needs a forward and a backward region");
  // Diagnostics in the backward name the model's values: a saved input
  // "saved_arg1" that stands for forward input "arg1" is the call's arg 1.
  std::map<std::string, std::string> names;
  if (n["forward"].is_object() && n["forward"].contains("inputs") && n["backward"].is_object() && n["backward"].contains("inputs")) {
    std::map<std::string, std::string> fwName;
    for (auto& in : n["forward"]["inputs"])
      if (in.contains("index") && in["index"].is_number_integer()) {
        size_t k = in["index"].get<size_t>();
        if (k < n["args"].size() && n["args"][k].is_object()) fwName[in.value("name", "")] = n["args"][k].value("node", "");
      }
    for (auto& in : n["backward"]["inputs"])
      if (in.contains("saved") && in["saved"].is_string() && fwName.count(in["saved"].get<std::string>()))
        names[in.value("name", "")] = fwName[in["saved"].get<std::string>()];
  }
  std::vector<std::string> saved;
  Graph bw = convertRegion(n["backward"], c.loc().file, "backward", true, c.loc(), &saved, &names);
  Graph fw = convertRegion(n["forward"], c.loc().file, "forward", false, c.loc(), nullptr);
  for (const std::string& s : saved) {
    ValueId v = fw.valueNamed(s);
    if (v == kNoValue) c.fail("backward reads '" + s + "', which its forward does not define");
    fw.outputs.push_back(GraphOutput{v, OutputRole::Saved, "", std::nullopt, {}});
  }
  if (fw.inputs.size() != args.size())
    c.fail(cat("forward region takes ", fw.inputs.size(), " tensors, the call passes ", args.size()));
  std::vector<Graph> regions;
  regions.push_back(std::move(fw));
  regions.push_back(std::move(bw));
  return c.ops(OpKind::AutogradFunction, args, Attrs{{"name", fn}}, std::move(regions));
}



// Composite ATen ops become the IR's primitives here, so their gradients are
// autodiff's and codegen sees few distinct ops.

DType dtypeArg(Converter& c, size_t i, const char* kw, DType dflt) {
  if (!c.has(i, kw)) return dflt;
  const json* d = c.arg(i, kw);
  auto p = d->is_object() && d->contains("dtype") ? dtypeFromTorchName((*d)["dtype"].get<std::string>()) : std::nullopt;
  if (!p) c.fail("unsupported dtype argument " + d->dump());
  return *p;
}

/// The cosine-sum windows (hann, hamming, blackman) and bartlett, as
/// torch.signal computes them: w[n] = sum_i a_i cos(2 pi i n / N) with N = L
/// when periodic (the default), L - 1 otherwise; a window of length 1 is [1].
/// `nargs` counts the positional arguments before the keyword-only dtype.
V window(Converter& c, std::vector<double> coef, bool bartlett, size_t nargs) {
  int64_t len = c.integer(0, "window_length");
  if (len < 0) c.fail(cat("window_length must be non-negative, got ", len));
  bool periodic = nargs > 1 ? c.boolean(1, "periodic", true) : true;
  if (nargs > 2) coef[0] = c.number(2, "alpha");
  if (nargs > 3) coef[1] = -c.number(3, "beta");
  DType d = dtypeArg(c, nargs, "dtype", DType::F32);
  if (!isFloating(d)) c.fail(cat("a window of dtype ", dtypeName(d), " (it must be floating)"));
  if (len <= 1) return {constantLike(c, 1.0, TensorType::contiguous(d, {len}))};
  const double n = static_cast<double>(periodic ? len : len - 1);
  ValueId i = c.cast(iota(c, len), DType::F64);
  ValueId w;
  if (bartlett) {
    w = bin(c, OpKind::Sub, {c.scalar(1.0, DType::F64),
                             c.op(OpKind::Abs, {bin(c, OpKind::Sub, {c.scaled(i, 2.0 / n), c.scalar(1.0, DType::F64)})})});
  } else {
    w = c.scalar(coef[0], DType::F64);
    for (size_t k = 1; k < coef.size(); ++k)
      w = c.add(w, c.scaled(c.op(OpKind::Cos, {c.scaled(i, 2.0 * std::numbers::pi * static_cast<double>(k) / n)}), coef[k]));
  }
  return {c.cast(w, d)};
}

/// aten.arange's overloads: `n_bounds` positional numbers (end; start, end;
/// start, end, step), then dtype.
V arange(Converter& c, size_t n_bounds) {
  static constexpr const char* kNames[3][3] = {{"end"}, {"start", "end"}, {"start", "end", "step"}};
  const char* const* names = kNames[n_bounds - 1];
  double b[3] = {0.0, 0.0, 1.0};
  bool ints = true;
  for (size_t i = 0; i < n_bounds; ++i) {
    if (i == 2 && !c.has(i, names[i])) break;  // step defaults to 1
    b[n_bounds == 1 ? 1 : i] = c.number(i, names[i]);
    ints = ints && c.arg(i, names[i])->is_number_integer();
  }
  DType d = dtypeArg(c, n_bounds, "dtype", ints ? DType::I64 : DType::F32);
  return {c.op(OpKind::Arange, {}, Attrs{{"start", b[0]}, {"end", b[1]}, {"step", b[2]}, {"dtype", std::string(dtypeName(d))}})};
}

int64_t dimArg(Converter& c, size_t i, const char* kw, ValueId x, int64_t dflt = 0) {
  int64_t r = std::max<int64_t>(c.type(x).rank(), 1);
  return wrapDim(c.integer(i, kw, dflt), r);
}



V layerNorm(Converter& c) {
  ValueId x = c.tensor(0, "input");
  Ints shape = c.ints(1, "normalized_shape");
  ValueId w = c.has(2, "weight") ? c.tensor(2, "weight") : kNoValue, b = c.has(3, "bias") ? c.tensor(3, "bias") : kNoValue;
  double eps = c.number(4, "eps", 1e-5);
  int64_t r = c.type(x).rank();
  Ints dims;
  for (int64_t d = r - static_cast<int64_t>(shape.size()); d < r; ++d) dims.push_back(d);
  Normalized n = normalize(c, x, dims, eps);
  ValueId out = n.y;
  if (w != kNoValue) out = bin(c, OpKind::Mul, {out, w});
  if (b != kNoValue) out = bin(c, OpKind::Add, {out, b});
  return {out, n.mean, n.rstd};
}

V groupNorm(Converter& c) {
  ValueId x = c.tensor(0, "input");
  ValueId w = c.has(1, "weight") ? c.tensor(1, "weight") : kNoValue, b = c.has(2, "bias") ? c.tensor(2, "bias") : kNoValue;
  int64_t N = c.integer(3, "N"), C = c.integer(4, "C");
  int64_t G = c.integer(6, "group");
  double eps = c.number(7, "eps", 1e-5);
  if (G <= 0 || C % G) c.fail("group_norm: channels must divide into groups");
  Ints shape = c.type(x).sizes;
  Normalized n = normalize(c, reshapeTo(c, x, {N, G, -1}), {2}, eps);
  ValueId mean = n.mean, rstd = n.rstd;
  ValueId out = c.op(OpKind::View, {n.y}, Attrs{{"size", shape}});
  Ints bshape(shape.size(), 1);
  bshape[1] = C;
  if (w != kNoValue) out = bin(c, OpKind::Mul, {out, c.op(OpKind::View, {w}, Attrs{{"size", bshape}})});
  if (b != kNoValue) out = bin(c, OpKind::Add, {out, c.op(OpKind::View, {b}, Attrs{{"size", bshape}})});
  return {out, c.op(OpKind::View, {mean}, Attrs{{"size", Ints{N, G}}}), c.op(OpKind::View, {rstd}, Attrs{{"size", Ints{N, G}}})};
}

/// nll_loss(self [N,C] or [C], target, weight?, reduction, ignore_index) -> (loss, total_weight)
V nllLoss(Converter& c) {
  ValueId x = c.tensor(0, "self"), t = c.tensor(1, "target");
  if (c.has(2, "weight")) c.fail("nll_loss with class weights is not supported yet");
  int64_t reduction = c.integer(3, "reduction", 1);
  int64_t ignore = c.integer(4, "ignore_index", -100);
  bool batched = c.type(x).rank() == 2;
  ValueId t2 = batched ? c.op(OpKind::Unsqueeze, {t}, Attrs{{"dim", int64_t{1}}}) : c.op(OpKind::View, {t}, Attrs{{"size", Ints{1}}});
  ValueId valid = bin(c, OpKind::Ne, {t2, c.scalar(static_cast<double>(ignore), DType::I64)});
  ValueId safe = c.op(OpKind::Where, {valid, t2, c.scalar(0, DType::I64)});
  ValueId picked = c.op(OpKind::Gather, {x, safe}, Attrs{{"dim", int64_t{batched ? 1 : 0}}});
  ValueId zero = sc(c, 0.0, x);
  ValueId per = c.op(OpKind::Where, {valid, c.op(OpKind::Neg, {picked}), zero});
  per = batched ? c.op(OpKind::Squeeze, {per}, Attrs{{"dim", Ints{1}}}) : c.op(OpKind::View, {per}, Attrs{{"size", Ints{}}});
  ValueId count = reduceOp(c, OpKind::Sum, c.op(OpKind::Cast, {valid}, Attrs{{"dtype", std::string(dtypeName(c.type(x).dtype))}}), {}, false);
  if (reduction == 0) return {per, count};
  ValueId total = reduceOp(c, OpKind::Sum, per, {}, false);
  if (reduction == 2) return {total, count};
  return {bin(c, OpKind::Div, {total, count}), count};
}

/// A 3-D convolution or pooling argument of 1 or 3 values as 3 (empty stays empty).
Ints triple(Converter& c, size_t i, const char* kw, Ints dflt, const char* op) {
  Ints v = c.ints(i, kw, dflt);
  if (v.size() == 1) v = {v[0], v[0], v[0]};
  if (!v.empty() && v.size() != 3) c.fail(cat(op, ": ", kw, " must have 1 or 3 values"));
  return v;
}

/// convolution's 3-D form (Note [3-D convolution] in src/ops/decompose.cpp).
ValueId convolution3d(Converter& c, ValueId x, ValueId w) {
  auto three = [&](size_t i, const char* kw, int64_t dflt) { return triple(c, i, kw, Ints{dflt}, "convolution"); };
  Ints stride = three(3, "stride", 1), padding = three(4, "padding", 0), dilation = three(5, "dilation", 1);
  int64_t groups = c.integer(8, "groups", 1);
  ValueId y;
  int64_t outChannels;
  if (c.boolean(6, "transposed", false)) {
    Ints op = three(7, "output_padding", 0);
    y = convTranspose3d(c, x, w, stride, dilation, op, groups);
    outChannels = c.type(y).sizes[1];
    for (int64_t k = 0; k < 3; ++k) {
      if (!padding[static_cast<size_t>(k)]) continue;
      const int64_t n = c.type(y).sizes[static_cast<size_t>(2 + k)], p = padding[static_cast<size_t>(k)];
      if (2 * p >= n) c.fail("transposed convolution: the padding crops the whole output");
      y = c.op(OpKind::Slice, {y}, Attrs{{"dim", 2 + k}, {"start", p}, {"end", n - p}, {"step", int64_t{1}}});
    }
  } else {
    y = conv3d(c, x, w, stride, padding, dilation, groups);
    outChannels = c.type(w).sizes[0];
  }
  if (c.has(2, "bias")) y = bin(c, OpKind::Add, {y, c.op(OpKind::View, {c.tensor(2, "bias")}, Attrs{{"size", Ints{1, outChannels, 1, 1, 1}}})});
  return y;
}

/// convolution(input, weight, bias?, stride, padding, dilation, transposed,
/// output_padding, groups): 2-D, and 1-D as 2-D over a unit height; the
/// transposed one is conv2d_backward_input (the adjoint of conv2d); 3-D by
/// convolution3d.
V convolution(Converter& c) {
  ValueId x = c.tensor(0, "input"), w = c.tensor(1, "weight");
  int64_t rank = c.type(x).rank();
  if (rank != 5 && rank != 4 && rank != 3) c.fail("only 1-D, 2-D and 3-D convolution (3-D, 4-D or 5-D input) are supported");
  if (c.type(w).rank() != rank) c.fail("convolution: weight and input ranks differ");
  if (rank == 5) return {convolution3d(c, x, w)};
  bool oneD = rank == 3;
  auto two = [&](size_t i, const char* kw, int64_t dflt) {
    Ints v = c.ints(i, kw, Ints{dflt});
    if (v.size() == 1 && !oneD) v.push_back(v[0]);
    if (oneD) {
      if (v.size() != 1) c.fail(cat("convolution: ", kw, " must have 1 value for a 1-D convolution"));
      v.insert(v.begin(), kw[0] == 's' || kw[0] == 'd' ? 1 : 0);
    }
    if (v.size() != 2) c.fail(cat("convolution: ", kw, " must have 2 values"));
    return v;
  };
  Ints stride = two(3, "stride", 1), padding = two(4, "padding", 0), dilation = two(5, "dilation", 1);
  int64_t groups = c.integer(8, "groups", 1);
  if (oneD) {
    x = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{2}}});
    w = c.op(OpKind::Unsqueeze, {w}, Attrs{{"dim", int64_t{2}}});
  }
  Attrs a{{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
  ValueId y;
  int64_t outChannels;
  if (c.boolean(6, "transposed", false)) {
    Ints op = two(7, "output_padding", 0);
    const TensorType xt = c.type(x), wt = c.type(w);
    if (groups <= 0 || xt.sizes[1] != wt.sizes[0]) c.fail("transposed convolution: input channels do not match the weight");
    outChannels = wt.sizes[1] * groups;
    Ints in{xt.sizes[0], outChannels, 0, 0};
    for (size_t d = 0; d < 2; ++d) {
      if (op[d] < 0 || (op[d] >= stride[d] && op[d] >= dilation[d]))
        c.fail("transposed convolution: output_padding must be smaller than stride or dilation");
      in[2 + d] = addSize(addSize(mulSize(xt.sizes[2 + d] - 1, stride[d]), -2 * padding[d]),
                          addSize(mulSize(dilation[d], wt.sizes[2 + d] - 1), op[d] + 1));
      if (in[2 + d] <= 0) c.fail("transposed convolution: the output is empty");
    }
    a["input_size"] = in;
    ValueId xc = c.type(x).isContiguous() ? x : c.op(OpKind::Clone, {x});
    ValueId wc = c.type(w).isContiguous() ? w : c.op(OpKind::Clone, {w});
    y = c.op(OpKind::Conv2dBackwardInput, {xc, wc}, a);
  } else {
    y = c.op(OpKind::Conv2d, {x, w}, a);
    outChannels = c.type(w).sizes[0];
  }
  if (c.has(2, "bias")) {
    Ints bshape{1, outChannels, 1, 1};
    y = bin(c, OpKind::Add, {y, c.op(OpKind::View, {c.tensor(2, "bias")}, Attrs{{"size", bshape}})});
  }
  if (oneD) y = c.op(OpKind::Squeeze, {y}, Attrs{{"dim", Ints{2}}});
  return {y};
}

V maxPool(Converter& c) {
  Attrs a{{"kernel", c.ints(1, "kernel_size")}, {"stride", c.ints(2, "stride", Ints{})}, {"padding", c.ints(3, "padding", Ints{0})},
          {"dilation", c.ints(4, "dilation", Ints{1})}, {"ceil_mode", c.boolean(5, "ceil_mode", false)}};
  return c.ops(OpKind::MaxPool2d, {c.tensor(0, "self")}, a, {});
}

V avgPool(Converter& c) {
  Attrs a{{"kernel", c.ints(1, "kernel_size")}, {"stride", c.ints(2, "stride", Ints{})}, {"padding", c.ints(3, "padding", Ints{0})},
          {"ceil_mode", c.boolean(4, "ceil_mode", false)}, {"count_include_pad", c.boolean(5, "count_include_pad", true)}};
  if (c.has(6, "divisor_override")) a["divisor"] = c.integer(6, "divisor_override");
  return {c.op(OpKind::AvgPool2d, {c.tensor(0, "self")}, a)};
}


/// adaptive_avg_pool2d: a mean for 1x1, an avg_pool2d when the output size
/// divides the input, else its own op (windows of varying size).
V adaptiveAvgPool(Converter& c) {
  ValueId x = c.tensor(0, "self");
  Ints out = c.ints(1, "output_size");
  if (out.size() == 1) out.push_back(out[0]);
  if (c.type(x).rank() != 4) c.fail("adaptive_avg_pool2d expects a 4-D input");
  return {adaptiveAvg2d(c, x, out)};
}


V split(Converter& c) {
  ValueId x = c.tensor(0, "self");
  int64_t dim = dimArg(c, 2, "dim", x);
  int64_t size = c.type(x).sizes[static_cast<size_t>(dim)];
  int64_t chunk = c.integer(1, "split_size");
  if (chunk <= 0) c.fail("split size must be positive");
  Ints sizes;
  for (int64_t at = 0; at < size; at += chunk) sizes.push_back(std::min(chunk, size - at));
  if (sizes.empty()) sizes.push_back(0);
  return splitSizes(c, x, dim, sizes);
}

V catOp(Converter& c) {
  const json* list = c.arg(0, "tensors");
  if (!list || !list->is_array() || list->empty()) c.fail("cat expects a non-empty list of tensors");
  std::vector<ValueId> xs;
  for (size_t i = 0; i < list->size(); ++i) xs.push_back(c.ref((*list)[i], i));
  int64_t dim = c.integer(1, "dim", 0);
  return {c.op(OpKind::Cat, xs, Attrs{{"dim", dim}})};
}

V stack(Converter& c) {
  const json* list = c.arg(0, "tensors");
  if (!list || !list->is_array() || list->empty()) c.fail("stack expects a non-empty list of tensors");
  int64_t dim = c.integer(1, "dim", 0);
  std::vector<ValueId> xs;
  for (size_t i = 0; i < list->size(); ++i) xs.push_back(c.op(OpKind::Unsqueeze, {c.ref((*list)[i], i)}, Attrs{{"dim", dim}}));
  return {c.op(OpKind::Cat, xs, Attrs{{"dim", dim}})};
}

/// An in-place op `op_(self, ...)`: the functional op, then copy_ into self.
V inplaceOf(Converter& c, ValueId v) { return {c.op(OpKind::CopyInplace, {c.tensor(0, "self"), v})}; }


std::optional<double> optNumber(Converter& c, size_t i, const char* kw) {
  return c.has(i, kw) ? std::optional<double>(c.number(i, kw)) : std::nullopt;
}





/// Standard normal numbers by Box-Muller: sqrt(-2 log(1 - u1)) cos(2 pi u2),
/// computed in float32 (float64 for a float64 result).
ValueId randNormal(Converter& c, Ints shape, DType d) {
  DType w = d == DType::F64 ? DType::F64 : DType::F32;
  ValueId u1 = randUniform(c, shape, w);
  ValueId u2 = randUniform(c, shape, w);
  ValueId r = c.op(OpKind::Sqrt, {c.scaled(c.op(OpKind::Log, {bin(c, OpKind::Sub, {sc(c, 1.0, u1), u1})}), -2.0)});
  ValueId z = bin(c, OpKind::Mul, {r, c.op(OpKind::Cos, {c.scaled(u2, 6.283185307179586)})});
  return d == w ? z : c.op(OpKind::Cast, {z}, Attrs{{"dtype", std::string(dtypeName(d))}});
}
/// rand/randn(size, dtype?), rand_like/randn_like(self, dtype?).
V randomOp(Converter& c, bool normal, bool like) {
  Ints shape;
  DType d;
  if (like) {
    ValueId x = c.tensor(0, "self");
    shape = c.type(x).sizes;
    d = dtypeArg(c, 1, "dtype", c.type(x).dtype);
  } else {
    shape = c.ints(0, "size");
    for (int64_t s : shape)
      if (s < 0) c.fail("negative size");
    d = dtypeArg(c, 1, "dtype", DType::F32);
  }
  if (c.has(SIZE_MAX, "generator")) c.fail("an explicit torch.Generator is not supported (the artifact's rng_seed input seeds every draw)");
  if (!isFloating(d)) c.fail("rand/randn need a floating-point dtype");
  return {normal ? randNormal(c, shape, d) : randUniform(c, shape, d)};
}

V dropout(Converter& c) {
  ValueId x = c.tensor(0, "input");
  double p = c.number(1, "p");
  bool train = c.boolean(2, "train", true);
  TensorType mt = TensorType::contiguous(DType::Bool, c.type(x).sizes);
  if (!train || p == 0) return {c.op(OpKind::Clone, {x}), constantLike(c, 1.0, mt)};
  ValueId keep = randMask(c, 1.0 - p, c.type(x).sizes);
  ValueId m = c.op(OpKind::Cast, {keep}, Attrs{{"dtype", std::string(dtypeName(c.type(x).dtype))}});
  ValueId scale = p >= 1 ? sc(c, 0.0, x) : sc(c, 1.0 / (1.0 - p), x);
  return {bin(c, OpKind::Mul, {bin(c, OpKind::Mul, {x, m}), scale}), keep};
}

/// scaled_dot_product_attention, math form: softmax(q k^T * scale + mask) v,
/// with the leading dims flattened into one batch dim for bmm.
V sdpa(Converter& c) {
  ValueId q = c.tensor(0, "query"), k = c.tensor(1, "key"), v = c.tensor(2, "value");
  const Ints qs = c.type(q).sizes, ks = c.type(k).sizes, vs = c.type(v).sizes;
  if (qs.size() < 3 || ks.size() != qs.size() || vs.size() != qs.size()) c.fail("scaled_dot_product_attention expects q, k, v of the same rank >= 3");
  bool isCausal = c.boolean(5, "is_causal", false);
  if (c.has(4, "dropout_p") && c.number(4, "dropout_p") != 0.0) c.fail("scaled_dot_product_attention with dropout_p > 0 is not supported yet");
  int64_t L = qs[qs.size() - 2], E = qs.back(), S = ks[ks.size() - 2], Ev = vs.back();
  double scale = c.has(6, "scale") ? c.number(6, "scale") : 1.0 / std::sqrt(static_cast<double>(E));
  ValueId q3 = reshapeTo(c, q, {-1, L, E}), k3 = reshapeTo(c, k, {-1, S, E}), v3 = reshapeTo(c, v, {-1, S, Ev});
  ValueId scores = bin(c, OpKind::Mul, {c.op(OpKind::Bmm, {q3, c.op(OpKind::Transpose, {k3}, Attrs{{"dim0", int64_t{1}}, {"dim1", int64_t{2}}})}), sc(c, scale, q)});
  ValueId ninf = sc(c, -INFINITY, q);
  if (isCausal) {
    ValueId rows = c.op(OpKind::View, {iota(c, L)},
                        Attrs{{"size", Ints{L, 1}}});
    ValueId cols = iota(c, S);
    scores = c.op(OpKind::Where, {bin(c, OpKind::Ge, {rows, cols}), scores, ninf});
  }
  if (c.has(3, "attn_mask")) {
    ValueId m = c.tensor(3, "attn_mask");
    Ints ms = c.type(m).sizes;
    // Broadcast the mask over the flattened batch: keep its last two dims.
    if (ms.size() > 2) m = reshapeTo(c, c.op(OpKind::Expand, {m}, Attrs{{"size", Ints(qs.begin(), qs.end() - 1)}}), {-1, L, S});
    scores = c.type(m).dtype == DType::Bool ? c.op(OpKind::Where, {m, scores, ninf}) : bin(c, OpKind::Add, {scores, m});
  }
  ValueId attn = softmaxLike(c, scores, 2, false);
  Ints out(qs.begin(), qs.end() - 1);
  out.push_back(Ev);
  return {reshapeTo(c, c.op(OpKind::Bmm, {attn, v3}), out)};
}

/// as_strided(self, size, stride, offset?) when it changes nothing but the
/// strides of size-1 dims (a memory-format adjustment, as ATen's reductions
/// emit): every element keeps its place, so it is the value itself.  General
/// as_strided reinterprets storage, which the IR's value semantics cannot
/// express: refused.
/// The value whose storage `v` shares: up through views, aliases and
/// in-place ops (before functionalization an in-place result is its self).
ValueId storageRoot(const Graph& g, ValueId v) {
  for (;;) {
    int32_t n = g.values[static_cast<size_t>(v)].node;
    if (n < 0) return v;
    const Node& nd = g.nodes[static_cast<size_t>(n)];
    OpCategory k = opInfo(nd.op).category;
    if (nd.inputs.empty() ||
        (k != OpCategory::View && k != OpCategory::Alias && k != OpCategory::Mutation && k != OpCategory::MetaMutation))
      return v;
    v = nd.inputs[0];
  }
}

// Note [as_strided as a gather]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// as_strided that only restrides size-1 dims is the tensor itself.  One that
// moves elements (stft's and unfold's overlapping frames) reads storage
// offset + sum_d i_d * stride_d; when the source is contiguous in the IR and
// in the graph's recorded layout, storage index j is the source's element
// j - offset(source), so the result is index_select of the flattened source
// at a computed index, provided every index falls inside the source (else
// the read reaches storage aotc cannot see, and is refused).  The result is
// a copy where eager has a view, which differs only when the storage or the
// result is written afterwards: convertBody refuses any later data mutation
// of the source's storage or of the result (snapshot roots).
V asStrided(Converter& c) {
  ValueId x = c.tensor(0, "self");
  const TensorType t = c.type(x);
  Ints size = c.ints(1, "size"), stride = c.ints(2, "stride");
  int64_t offset = c.has(3, "storage_offset") ? c.integer(3, "storage_offset") : t.offset;
  bool same = size == t.sizes && stride.size() == t.strides.size() && offset == t.offset;
  for (size_t d = 0; same && d < size.size(); ++d) same = size[d] == 1 || stride[d] == t.strides[d];
  if (same) return {x};
  if (size.size() != stride.size()) c.fail("as_strided: size and stride have different lengths");
  if (c.node().at("target") == "aten.as_strided_.default")
    c.fail("as_strided_ that moves elements is not supported (it changes the tensor's own layout)");
  const char* why = nullptr;
  if (t.strides != TensorType::contiguous(t.dtype, t.sizes).strides) why = "its source is not contiguous";
  if (c.recordedLayout(x)) why = "its source's recorded layout is not the IR's";
  int64_t hi = offset, numel = 1;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] < 0 || stride[d] < 0) c.fail("as_strided: negative size or stride");
    numel = mulSize(numel, size[d]);
    if (size[d] > 0) hi = addSize(hi, mulSize(size[d] - 1, stride[d]));
  }
  if (numel > 0 && (offset < t.offset || hi >= t.offset + t.numel())) why = "it reads storage outside its source";
  if (why)
    c.fail(cat("as_strided that moves elements is supported as a gather from a contiguous source; here ", why));
  if (numel == 0) return {constantLike(c, 0.0, TensorType::contiguous(t.dtype, size))};
  // index = (offset - offset(source)) + sum_d iota(size_d) * stride_d, broadcast.
  const int64_t r = static_cast<int64_t>(size.size());
  ValueId idx = c.scalar(static_cast<double>(offset - t.offset), DType::I64);
  for (int64_t d = 0; d < r; ++d) {
    Ints shape(static_cast<size_t>(r), 1);
    shape[static_cast<size_t>(d)] = size[static_cast<size_t>(d)];
    idx = c.add(idx, c.scaled(c.reshape(iota(c, size[static_cast<size_t>(d)]), shape), static_cast<double>(stride[static_cast<size_t>(d)])));
  }
  ValueId flat = c.reshape(x, {t.numel()});
  ValueId y = c.reshape(c.op(OpKind::IndexSelect, {flat, c.reshape(idx, {numel})}, Attrs{{"dim", int64_t{0}}}), size);
  c.markSnapshot(storageRoot(c.graph(), x));
  c.markSnapshot(y);
  return {y};
}

/// unfold(dim, size, step): windows w of `size` elements at w * step along
/// `dim`, as a new last dim.  A view in eager: a gather here, guarded as
/// as_strided's (Note [as_strided as a gather]).
V unfoldOp(Converter& c) {
  ValueId x = c.tensor(0, "self");
  const TensorType t = c.type(x);
  const int64_t r = t.rank();
  int64_t dim = wrapDim(c.integer(1, "dimension"), std::max<int64_t>(r, 1));
  int64_t size = c.integer(2, "size"), step = c.integer(3, "step");
  int64_t len = r == 0 ? 1 : t.sizes[static_cast<size_t>(dim)];
  if (size < 0 || size > len) c.fail(cat("unfold: size ", size, " exceeds the dim's ", len));
  if (step <= 0) c.fail(cat("unfold: step must be positive, got ", step));
  if (r == 0) return {c.reshape(x, {size})};
  const int64_t windows = (len - size) / step + 1;
  ValueId g = c.op(OpKind::IndexSelect, {x, c.reshape(frameIndex(c, windows, size, step), {windows * size})}, Attrs{{"dim", dim}});
  Ints shape = t.sizes;
  shape[static_cast<size_t>(dim)] = windows;
  shape.insert(shape.begin() + dim + 1, size);
  ValueId y = c.reshape(g, shape);
  if (dim + 1 != r) {
    Ints perm;
    for (int64_t d = 0; d <= r; ++d)
      if (d != dim + 1) perm.push_back(d);
    perm.push_back(dim + 1);
    y = c.op(OpKind::Permute, {y}, Attrs{{"dims", perm}});
  }
  c.markSnapshot(storageRoot(c.graph(), x));
  c.markSnapshot(storageRoot(c.graph(), y));
  return {y};
}

// ---------------------------------------------------------------- Core ATen breadth
// Each converter below builds its op from IR ops whose rules (shape,
// reference, CUDA, gradient) exist; a decomposition is used only where it is
// exact (issue 12: numerics within eager's tolerances, same NaN/inf/tie
// behaviour).

/// An integer fmod/remainder/floor-division needs a divisor the compiler can
/// see is non-zero: a kernel cannot raise ZeroDivisionError as eager does.
void requireSafeIntDivisor(Converter& c, ValueId a, size_t i, const char* kw, const char* op) {
  if (isFloating(c.type(a).dtype)) return;
  if (c.isTensor(i, kw) || c.number(i, kw) == 0)
    c.fail(cat("integer ", op, " needs a non-zero Python number as the divisor (a kernel cannot raise ZeroDivisionError)"));
}
V binaryChecked(Converter& c, OpKind k, const char* what) {
  ValueId a = c.tensor(0, "self");
  ValueId b = c.operand(1, "other", a);
  if (!isFloating(c.type(a).dtype) || !isFloating(c.type(b).dtype)) {
    if (isFloating(promoteTypes(c.type(a).dtype, c.type(b).dtype))) return {c.op(k, {a, b})};
    requireSafeIntDivisor(c, a, 1, "other", what);
  }
  return {c.op(k, {a, b})};
}
/// pow(Scalar self, Tensor exponent).
V powScalarBase(Converter& c) {
  ValueId e = c.tensor(1, "exponent");
  const json* s = c.arg(0, "self");
  DType d = c.type(e).dtype;
  if (s && s->is_number_float() && !isFloating(d)) d = DType::F32;
  ValueId base = c.scalar(c.number(0, "self"), d);
  return {c.op(OpKind::Pow, {base, e})};
}
/// div(a, b, rounding_mode): None is true division; "trunc" is trunc(a / b)
/// (ATen's formula for floating types); "floor" is div_floor.
V divMode(Converter& c) {
  ValueId a = c.tensor(0, "self");
  ValueId b = c.operand(1, "other", a);
  const json* m = c.arg(2, "rounding_mode");
  std::string mode = m && m->is_string() ? m->get<std::string>() : "";
  if (mode.empty()) return {c.op(OpKind::Div, {a, b})};
  if (mode != "trunc" && mode != "floor") c.fail("div: rounding_mode must be 'trunc' or 'floor', got " + m->dump());
  DType d = promoteTypes(c.type(a).dtype, c.type(b).dtype);
  if (!isFloating(d)) {
    requireSafeIntDivisor(c, a, 1, "other", "division with rounding_mode");
    if (mode == "floor") return {c.op(OpKind::DivFloor, {a, b})};
    // Integer truncating division: C++'s, through the remainder.
    ValueId r = c.op(OpKind::Fmod, {a, b});
    ValueId q = bin(c, OpKind::Div, {bin(c, OpKind::Sub, {a, r}), b});
    return {c.op(OpKind::Cast, {q}, Attrs{{"dtype", std::string(dtypeName(d))}})};
  }
  if (mode == "floor") return {c.op(OpKind::DivFloor, {a, b})};
  return {c.op(OpKind::Trunc, {c.op(OpKind::Div, {a, b})})};
}
/// clamp(self, min: Tensor?, max: Tensor?): max(min(...)) as ATen, NaN kept.
V clampTensor(Converter& c) {
  ValueId y = c.tensor(0, "self");
  if (c.has(1, "min")) {
    ValueId lo = c.operand(1, "min", y);
    y = c.op(OpKind::Where, {bin(c, OpKind::Lt, {y, lo}), lo, y});
  }
  if (c.has(2, "max")) {
    ValueId hi = c.operand(2, "max", y);
    y = c.op(OpKind::Where, {bin(c, OpKind::Gt, {y, hi}), hi, y});
  }
  return {y};
}
ValueId maskedFill(Converter& c) {
  ValueId x = c.tensor(0, "self"), mask = c.tensor(1, "mask");
  if (c.type(mask).dtype != DType::Bool) c.fail("masked_fill: the mask must be a bool tensor");
  ValueId v = c.operand(2, "value", x);
  if (c.type(v).rank() != 0) c.fail("masked_fill: the value must be a 0-dim tensor or a number");
  if (c.type(v).dtype != c.type(x).dtype) v = c.op(OpKind::Cast, {v}, Attrs{{"dtype", std::string(dtypeName(c.type(x).dtype))}});
  ValueId r = c.op(OpKind::Where, {mask, v, x});
  if (c.type(r).sizes != c.type(x).sizes) c.fail("masked_fill: the mask does not broadcast to the input's shape");
  return r;
}
/// max.dim / min.dim -> (values, indices): the values are gathered at the
/// index, so the gradient goes to that element only, as eager's does.
V maxMinDim(Converter& c, bool isMax) {
  ValueId x = c.tensor(0, "self");
  int64_t dim = dimArg(c, 1, "dim", x);
  bool keep = c.boolean(2, "keepdim", false);
  if (c.type(x).rank() == 0) return {x, c.scalar(0, DType::I64)};
  ValueId key = x;
  if (!isMax) key = c.type(x).dtype == DType::Bool ? c.op(OpKind::LogicalNot, {x})
                   : isFloating(c.type(x).dtype) ? c.op(OpKind::Neg, {x}) : c.op(OpKind::BitwiseNot, {x});
  ValueId idx = c.op(OpKind::ArgMax, {key}, Attrs{{"dim", dim}, {"keepdim", true}});
  ValueId vals = c.op(OpKind::Gather, {x, idx}, Attrs{{"dim", dim}});
  if (!keep) {
    vals = c.op(OpKind::Squeeze, {vals}, Attrs{{"dim", Ints{dim}}});
    idx = c.op(OpKind::Squeeze, {idx}, Attrs{{"dim", Ints{dim}}});
  }
  return {vals, idx};
}
/// argmin = argmax of an order-reversing map (exact: neg for floats, ~ for
/// integers, not for bools; ties and NaN pick the same element).
V argmin(Converter& c) {
  ValueId x = c.tensor(0, "self");
  DType d = c.type(x).dtype;
  ValueId key = d == DType::Bool ? c.op(OpKind::LogicalNot, {x}) : isFloating(d) ? c.op(OpKind::Neg, {x}) : c.op(OpKind::BitwiseNot, {x});
  Attrs a{{"keepdim", c.boolean(2, "keepdim", false)}};
  if (c.has(1, "dim")) a["dim"] = c.integer(1, "dim");
  return {c.op(OpKind::ArgMax, {key}, a)};
}
/// Source indices of nearest upsampling (ATen: min(floor(dst * scale), in - 1)
/// with scale in float).
Ints nearestIndices(int64_t in, int64_t out, std::optional<double> scaleFactor) {
  float scale = scaleFactor && *scaleFactor > 0 ? static_cast<float>(1.0 / *scaleFactor)
                                                 : static_cast<float>(in) / static_cast<float>(out);
  Ints idx;
  for (int64_t i = 0; i < out; ++i)
    idx.push_back(std::min(static_cast<int64_t>(std::floor(static_cast<float>(i) * scale)), in - 1));
  return idx;
}
/// Output sizes and scale factors of an upsample node: the .vec overloads
/// take (input, output_size?, [align_corners,] scale_factors?), the others
/// (self, output_size, [align_corners,] scales_h?, scales_w?).
std::pair<Ints, std::vector<std::optional<double>>> upsampleSizes(Converter& c, ValueId x, bool vec, size_t scaleIdx) {
  const TensorType t = c.type(x);
  if (t.rank() != 4) c.fail("upsampling expects a 4-D (N, C, H, W) input");
  std::vector<std::optional<double>> scales(2);
  Ints out;
  if (c.has(1, "output_size")) {
    out = c.ints(1, "output_size");
    if (out.size() != 2) c.fail("upsampling: output_size must have 2 values");
  }
  if (vec && c.has(scaleIdx, "scale_factors")) {
    const json* s = c.arg(scaleIdx, "scale_factors");
    if (!s->is_array() || s->size() != 2) c.fail("upsampling: scale_factors must have 2 values");
    for (size_t i = 0; i < 2; ++i) {
      if (!(*s)[i].is_number()) c.fail("upsampling: scale_factors must be numbers");
      scales[i] = (*s)[i].get<double>();
    }
    if (out.empty())
      for (size_t i = 0; i < 2; ++i) {
        double o = std::floor(static_cast<double>(t.sizes[2 + i]) * *scales[i]);
        if (!(o >= 1 && o <= static_cast<double>(kMaxIntArg))) c.fail("upsampling: the scale factor gives an empty or huge output");
        out.push_back(static_cast<int64_t>(o));
      }
  } else if (!vec) {
    scales[0] = optNumber(c, scaleIdx, "scales_h");
    scales[1] = optNumber(c, scaleIdx + 1, "scales_w");
  }
  if (out.empty()) c.fail("upsampling needs output_size or scale_factors");
  for (int64_t o : out) {
    if (o <= 0) c.fail("upsampling: output size must be positive");
    // Bilinear weights are one constant per output row and column.
    if (o > 16384) c.fail(cat("upsampling: an output size of ", o, " is beyond the 16384 this op handles"));
  }
  return {out, scales};
}
template <bool Vec>
V upsampleNearest(Converter& c) {
  ValueId x = c.tensor(0, Vec ? "input" : "self");
  auto [out, scales] = upsampleSizes(c, x, Vec, 2);
  const TensorType t = c.type(x);
  ValueId h = pick(c, x, 2, nearestIndices(t.sizes[2], out[0], scales[0]));
  return {pick(c, h, 3, nearestIndices(t.sizes[3], out[1], scales[1]))};
}
/// upsample_bilinear2d: ATen's CPU kernel, with its float source-index
/// arithmetic; the two taps per dim are index_selects, the weights constants.
template <bool Vec>
V upsampleBilinear(Converter& c) {
  ValueId x = c.tensor(0, Vec ? "input" : "self");
  bool align = c.boolean(2, "align_corners", false);
  auto [out, scales] = upsampleSizes(c, x, Vec, 3);
  const TensorType t = c.type(x);
  DType dt = t.dtype;
  if (!isFloating(dt)) c.fail("upsample_bilinear2d expects a floating-point input");
  V res;
  ValueId cur = x;
  for (int d = 0; d < 2; ++d) {
    int64_t in = t.sizes[2 + static_cast<size_t>(d)], o = out[static_cast<size_t>(d)];
    float scale;
    if (align) scale = o > 1 ? static_cast<float>(in - 1) / static_cast<float>(o - 1) : 0.0f;
    else scale = scales[static_cast<size_t>(d)] && *scales[static_cast<size_t>(d)] > 0 ? static_cast<float>(1.0 / *scales[static_cast<size_t>(d)])
                                                                                      : static_cast<float>(in) / static_cast<float>(o);
    Ints i0, i1;
    std::vector<double> l0, l1;
    for (int64_t i = 0; i < o; ++i) {
      float src = align ? scale * static_cast<float>(i) : std::max(scale * (static_cast<float>(i) + 0.5f) - 0.5f, 0.0f);
      int64_t a = static_cast<int64_t>(src);
      int64_t step = a < in - 1 ? 1 : 0;
      float lambda1 = src - static_cast<float>(a), lambda0 = 1.0f - lambda1;
      i0.push_back(a);
      i1.push_back(a + step);
      l0.push_back(lambda0);
      l1.push_back(lambda1);
    }
    int64_t dim = 2 + d;
    Ints wshape = d == 0 ? Ints{o, 1} : Ints{o};
    auto weights = [&](const std::vector<double>& w) {
      // One constant per distinct run is too many; weights are data: stack
      // scalars through cat (small: one entry per output row or column).
      V parts;
      for (double v : w) parts.push_back(c.op(OpKind::Constant, {}, Attrs{{"value", v}, {"dtype", std::string(dtypeName(dt))}, {"shape", Ints{1}}}));
      ValueId vec = parts.size() == 1 ? parts[0] : c.op(OpKind::Cat, parts, Attrs{{"dim", int64_t{0}}});
      return c.op(OpKind::View, {vec}, Attrs{{"size", wshape}});
    };
    ValueId a0 = pick(c, cur, dim, i0), a1 = pick(c, cur, dim, i1);
    ValueId w0 = weights(l0);
    ValueId w1 = weights(l1);
    ValueId p0 = bin(c, OpKind::Mul, {a0, w0});
    ValueId p1 = bin(c, OpKind::Mul, {a1, w1});
    cur = bin(c, OpKind::Add, {p0, p1});
  }
  return {cur};
}
/// reflection/replication padding of the last dims: constant index maps.
V indexPad(Converter& c, bool reflect, size_t ndims) {
  ValueId x = c.tensor(0, "self");
  Ints pad = c.ints(1, "padding");
  if (pad.size() != 2 * ndims) c.fail(cat("padding must have ", 2 * ndims, " values"));
  const TensorType t = c.type(x);
  if (t.rank() < static_cast<int64_t>(ndims)) c.fail("padding: the input has too few dims");
  for (size_t k = 0; k < ndims; ++k) {
    int64_t dim = t.rank() - 1 - static_cast<int64_t>(k);
    int64_t n = t.sizes[static_cast<size_t>(dim)], lo = pad[2 * k], hi = pad[2 * k + 1];
    if (reflect && (lo >= n || hi >= n)) c.fail("reflection padding must be smaller than the input dim");
    if (n == 0 || lo + n + hi < 0) c.fail("padding: bad padding for an input dim of size " + std::to_string(n));
    requireIndexMap(c, lo + n + hi, "padding");
    Ints idx;
    for (int64_t i = -lo; i < n + hi; ++i) {
      int64_t j = i;
      if (reflect) {
        if (j < 0) j = -j;
        if (j >= n) j = 2 * (n - 1) - j;
      } else {
        j = std::clamp<int64_t>(j, 0, n - 1);
      }
      idx.push_back(j);
    }
    x = pick(c, x, dim, idx);
  }
  return {x};
}
/// The linear index of integer index tensors `idx` over dims of sizes `dims`,
/// negative indices wrapped as Python does.  Where any index is outside its
/// dim the result is prod(dims), itself out of range, so the indexing op's
/// bounds check reports it (Note [Index errors]) instead of another element
/// being read.
ValueId linearIndex(Converter& c, const std::vector<ValueId>& idx, const Ints& dims) {
  ValueId lin = kNoValue, bad = kNoValue;
  int64_t total = 1;
  for (size_t j = 0; j < idx.size(); ++j) {
    int64_t n = dims[j];
    total = mulSize(total, n);
    ValueId v = idx[j];
    if (c.type(v).dtype != DType::I64) v = c.op(OpKind::Cast, {v}, Attrs{{"dtype", std::string("i64")}});
    ValueId neg = bin(c, OpKind::Lt, {v, c.scalar(0, DType::I64)});
    ValueId plus = bin(c, OpKind::Add, {v, c.scalar(static_cast<double>(n), DType::I64)});
    ValueId wrapped = c.op(OpKind::Where, {neg, plus, v});
    ValueId low = bin(c, OpKind::Lt, {wrapped, c.scalar(0, DType::I64)});
    ValueId high = bin(c, OpKind::Ge, {wrapped, c.scalar(static_cast<double>(n), DType::I64)});
    ValueId out = bin(c, OpKind::LogicalOr, {low, high});
    bad = bad == kNoValue ? out : bin(c, OpKind::LogicalOr, {bad, out});
    lin = lin == kNoValue ? wrapped : bin(c, OpKind::Add, {bin(c, OpKind::Mul, {lin, c.scalar(static_cast<double>(n), DType::I64)}), wrapped});
  }
  return c.op(OpKind::Where, {bad, c.scalar(static_cast<double>(total), DType::I64), lin});
}
/// Integer index tensors `idx` on dims [first, first + k) of a tensor of type
/// `t`, broadcast together and linearized (linearIndex): the flat index of
/// `bn` elements into the `mid` elements of the flattened indexed dims.
struct FlatIndex {
  Ints bshape;          ///< the index tensors' broadcast shape
  int64_t bn = 1, mid = 1;
  ValueId flat = kNoValue;  ///< i64[bn]
};
FlatIndex flatIndex(Converter& c, const TensorType& t, const std::vector<ValueId>& idx, size_t first, const char* what) {
  size_t k = idx.size();
  if (first + k > static_cast<size_t>(t.rank())) c.fail(cat(what, ": too many indices for the tensor"));
  FlatIndex f;
  f.bshape = c.type(idx[0]).sizes;
  for (ValueId v : idx) {
    auto b = broadcastShapes(f.bshape, c.type(v).sizes);
    if (!b) c.fail(cat(what, ": index tensors do not broadcast together"));
    f.bshape = *b;
  }
  Ints dims(t.sizes.begin() + static_cast<int64_t>(first), t.sizes.begin() + static_cast<int64_t>(first + k));
  for (int64_t s : f.bshape) f.bn = mulSize(f.bn, s);
  for (int64_t s : dims) f.mid = mulSize(f.mid, s);
  ValueId lin = linearIndex(c, idx, dims);
  f.flat = reshapeTo(c, c.op(OpKind::Expand, {lin}, Attrs{{"size", f.bshape}}), {f.bn});
  return f;
}
/// x[indices]: advanced indexing with integer index tensors on consecutive
/// dims (leading Nones allowed): the dims are flattened and index_selected
/// at the linear index, so the gradient is index_add's.
V indexTensor(Converter& c) {
  ValueId x = c.tensor(0, "self");
  const json* list = c.arg(1, "indices");
  if (!list || !list->is_array()) c.fail("index: indices must be a list");
  const TensorType t = c.type(x);
  size_t first = 0;
  while (first < list->size() && (*list)[first].is_null()) ++first;
  std::vector<ValueId> idx;
  for (size_t i = first; i < list->size(); ++i) {
    if ((*list)[i].is_null()) {
      bool trailing = true;
      for (size_t j = i; j < list->size(); ++j) trailing = trailing && (*list)[j].is_null();
      if (!trailing) c.fail("index: index tensors separated by None are not supported");
      break;
    }
    ValueId v = c.ref((*list)[i], 1);
    DType d = c.type(v).dtype;
    if (d == DType::Bool)
      c.fail("index with a bool mask has a data-dependent output shape, which aotc cannot compile (use torch.where)");
    if (isFloating(d)) c.fail("index: index tensors must be integers");
    idx.push_back(v);
  }
  if (idx.empty()) return {x};
  size_t k = idx.size();
  FlatIndex f = flatIndex(c, t, idx, first, "index");
  Ints flat(t.sizes.begin(), t.sizes.begin() + static_cast<int64_t>(first));
  flat.push_back(f.mid);
  flat.insert(flat.end(), t.sizes.begin() + static_cast<int64_t>(first + k), t.sizes.end());
  ValueId xs = reshapeTo(c, x, flat);
  ValueId sel = c.op(OpKind::IndexSelect, {xs, f.flat}, Attrs{{"dim", static_cast<int64_t>(first)}});
  Ints out(t.sizes.begin(), t.sizes.begin() + static_cast<int64_t>(first));
  out.insert(out.end(), f.bshape.begin(), f.bshape.end());
  out.insert(out.end(), t.sizes.begin() + static_cast<int64_t>(first + k), t.sizes.end());
  return {reshapeTo(c, sel, out)};
}
/// new_zeros/new_ones/new_empty(self, size, dtype?) and new_full(self, size, value, dtype?).
ValueId newFilled(Converter& c, double v, size_t dtypeIdx) {
  ValueId x = c.tensor(0, "self");
  Ints size = c.ints(1, "size");
  for (int64_t d : size)
    if (d < 0) c.fail("negative size");
  return constantLike(c, v, TensorType::contiguous(dtypeArg(c, dtypeIdx, "dtype", c.type(x).dtype), size));
}
/// pixel_shuffle(x, r): (N, C*r*r, H, W) -> (N, C, H*r, W*r).
ValueId pixelShuffle(Converter& c, ValueId x, int64_t r, bool inverse) {
  const TensorType t = c.type(x);
  if (t.rank() < 3 || r <= 0 || r > (int64_t{1} << 20)) c.fail("pixel_shuffle expects an input of at least 3 dims and a factor in [1, 2^20]");
  Ints lead(t.sizes.begin(), t.sizes.end() - 3);
  int64_t C = t.sizes[t.sizes.size() - 3], H = t.sizes[t.sizes.size() - 2], W = t.sizes.back();
  int64_t L = static_cast<int64_t>(lead.size());
  auto with = [&](Ints tail) { Ints s = lead; s.insert(s.end(), tail.begin(), tail.end()); return s; };
  Ints perm;
  for (int64_t i = 0; i < L; ++i) perm.push_back(i);
  if (!inverse) {
    if (C % (r * r)) c.fail("pixel_shuffle: channels must be divisible by the factor squared");
    ValueId v = reshapeTo(c, x, with({C / (r * r), r, r, H, W}));
    for (int64_t p : {0, 3, 1, 4, 2}) perm.push_back(L + p);
    ValueId p = c.op(OpKind::Permute, {v}, Attrs{{"dims", perm}});
    return reshapeTo(c, p, with({C / (r * r), mulSize(H, r), mulSize(W, r)}));
  }
  if (H % r || W % r) c.fail("pixel_unshuffle: height and width must be divisible by the factor");
  ValueId v = reshapeTo(c, x, with({C, H / r, r, W / r, r}));
  for (int64_t p : {0, 2, 4, 1, 3}) perm.push_back(L + p);
  ValueId p = c.op(OpKind::Permute, {v}, Attrs{{"dims", perm}});
  return reshapeTo(c, p, with({mulSize(C, r * r), H / r, W / r}));
}
/// Loss reductions: 0 none, 1 mean, 2 sum.
ValueId reduced(Converter& c, ValueId v, int64_t red) {
  if (red == 0) return v;
  if (red != 1 && red != 2) c.fail("reduction must be 0 (none), 1 (mean) or 2 (sum)");
  return reduceOp(c, red == 1 ? OpKind::Mean : OpKind::Sum, v, {}, false);
}
/// binary_cross_entropy_with_logits(x, t, weight?, pos_weight?, reduction),
/// ATen's formula: (1 - t) * x + (1 + (pw - 1) * t) * (log1p(exp(-|x|)) + max(-x, 0)).
V bceWithLogits(Converter& c) {
  ValueId x = c.tensor(0, "self"), t = c.tensor(1, "target");
  ValueId sp = bin(c, OpKind::Add, {c.op(OpKind::Log1p, {c.op(OpKind::Exp, {c.op(OpKind::Neg, {c.op(OpKind::Abs, {x})})})}),
                                    c.op(OpKind::Maximum, {c.op(OpKind::Neg, {x}), sc(c, 0.0, x)})});
  ValueId oneMinusT = bin(c, OpKind::Sub, {sc(c, 1.0, t), t});
  ValueId loss;
  if (c.has(3, "pos_weight")) {
    ValueId pw = c.tensor(3, "pos_weight");
    ValueId lw = bin(c, OpKind::Add, {sc(c, 1.0, t), bin(c, OpKind::Mul, {bin(c, OpKind::Sub, {pw, sc(c, 1.0, pw)}), t})});
    loss = bin(c, OpKind::Add, {bin(c, OpKind::Mul, {oneMinusT, x}), bin(c, OpKind::Mul, {lw, sp})});
  } else {
    loss = bin(c, OpKind::Add, {bin(c, OpKind::Mul, {oneMinusT, x}), sp});
  }
  if (c.has(2, "weight")) loss = bin(c, OpKind::Mul, {loss, c.tensor(2, "weight")});
  return {reduced(c, loss, c.integer(4, "reduction", 1))};
}
/// smooth_l1 (beta) and huber (delta) losses.
V smoothL1(Converter& c, bool huber) {
  ValueId x = c.tensor(0, "self"), t = c.tensor(1, "target");
  double b = c.number(3, huber ? "delta" : "beta", 1.0);
  ValueId d = c.op(OpKind::Abs, {bin(c, OpKind::Sub, {x, t})});
  ValueId sq = bin(c, OpKind::Mul, {bin(c, OpKind::Mul, {d, d}), sc(c, huber ? 0.5 : 0.5 / (b == 0 ? 1.0 : b), d)});
  ValueId lin = huber ? bin(c, OpKind::Mul, {bin(c, OpKind::Sub, {d, sc(c, 0.5 * b, d)}), sc(c, b, d)})
                      : bin(c, OpKind::Sub, {d, sc(c, 0.5 * b, d)});
  ValueId loss = (!huber && b == 0) ? d : c.op(OpKind::Where, {bin(c, OpKind::Lt, {d, sc(c, b, d)}), sq, lin});
  return {reduced(c, loss, c.integer(2, "reduction", 1))};
}
V cumsum(Converter& c) {
  ValueId x = c.tensor(0, "self");
  int64_t dim = dimArg(c, 1, "dim", x);
  if (c.has(2, "dtype")) x = c.op(OpKind::Cast, {x}, Attrs{{"dtype", std::string(dtypeName(dtypeArg(c, 2, "dtype", c.type(x).dtype)))}});
  if (c.type(x).rank() == 0) return {c.op(OpKind::Clone, {x})};
  return {c.op(OpKind::Cumsum, {x}, Attrs{{"dim", dim}})};
}
/// sort(self, dim=-1, descending=False) and sort.stable(self, *, stable, dim, descending).
V sortOp(Converter& c, size_t dimIdx, size_t descIdx) {
  ValueId x = c.tensor(0, "self");
  int64_t dim = dimArg(c, dimIdx, "dim", x, -1);
  bool desc = c.boolean(descIdx, "descending", false);
  if (c.type(x).rank() == 0) return {x, c.scalar(0, DType::I64)};
  return c.ops(OpKind::Sort, {x}, Attrs{{"dim", dim}, {"descending", desc}}, {});
}
/// topk(self, k, dim=-1, largest=True, sorted=True): the first k of a sort
/// (ties keep index order; with sorted=False eager's order is unspecified).
V topk(Converter& c) {
  ValueId x = c.tensor(0, "self");
  int64_t k = c.integer(1, "k"), dim = dimArg(c, 2, "dim", x, -1);
  bool largest = c.boolean(3, "largest", true);
  int64_t n = c.type(x).rank() == 0 ? 1 : c.type(x).sizes[static_cast<size_t>(dim)];
  if (k < 0 || k > n) c.fail(cat("topk: k (", k, ") is out of range for a dim of size ", n));
  if (c.type(x).rank() == 0) return {x, c.scalar(0, DType::I64)};
  V s = c.ops(OpKind::Sort, {x}, Attrs{{"dim", dim}, {"descending", largest}}, {});
  Attrs a{{"dim", dim}, {"start", int64_t{0}}, {"end", k}, {"step", int64_t{1}}};
  ValueId v = c.op(OpKind::Slice, {s[0]}, a);
  return {v, c.op(OpKind::Slice, {s[1]}, a)};
}
/// _native_batch_norm_legit_no_training(input, weight, bias, running_mean,
/// running_var, momentum, eps) and _native_batch_norm_legit.no_stats(input,
/// weight, bias, training, momentum, eps): native_batch_norm's arguments
/// with the missing ones filled in.
V batchNormVariant(Converter& c, bool noStats) {
  json node = c.node();
  json& args = node["args"];
  if (!args.is_array()) c.fail("malformed arguments");
  if (noStats) {
    if (args.size() > 3) args.insert(args.begin() + 3, {json(nullptr), json(nullptr)});
    else node["kwargs"]["running_mean"] = nullptr;
  } else {
    if (args.size() >= 5) args.insert(args.begin() + 5, json(false));
    else node["kwargs"]["training"] = false;
  }
  Converter v(c.graph(), node, c.loc(), c.env(), c.noGrad());
  v.setInBackward(c.inBackward());
  v.setNames(c.names());
  return batchNorm(v);
}
/// scatter(self, dim, index, src | value).
V scatterOp(Converter& c, bool value) {
  ValueId x = c.tensor(0, "self"), idx = c.tensor(2, "index");
  ValueId src;
  if (value) {
    ValueId v = c.operand(3, "value", x);
    if (c.type(v).dtype != c.type(x).dtype) v = c.op(OpKind::Cast, {v}, Attrs{{"dtype", std::string(dtypeName(c.type(x).dtype))}});
    src = c.op(OpKind::Expand, {reshapeTo(c, v, {})}, Attrs{{"size", c.type(idx).sizes}});
  } else {
    src = c.tensor(3, "src");
  }
  if (c.has(4, "reduce")) c.fail("scatter with reduce= is not supported (use scatter_add or scatter_reduce)");
  return {c.op(OpKind::Scatter, {x, idx, src}, Attrs{{"dim", dimArg(c, 1, "dim", x)}})};
}
/// scatter_reduce(self, dim, index, src, reduce, include_self=True): "sum"
/// and "mean" (ATen's mean counts self when included).
V scatterReduce(Converter& c) {
  ValueId x = c.tensor(0, "self"), idx = c.tensor(2, "index"), src = c.tensor(3, "src");
  const json* r = c.arg(4, "reduce");
  std::string red = r && r->is_string() ? r->get<std::string>() : "";
  bool self = c.boolean(5, "include_self", true);
  Attrs a{{"dim", dimArg(c, 1, "dim", x)}};
  if (red != "sum" && red != "mean") c.fail("scatter_reduce: reduce='" + red + "' is not supported yet (sum, mean are)");
  if (c.type(idx).sizes != c.type(src).sizes) c.fail("scatter_reduce: index and src must have the same shape");
  ValueId base = x;
  if (!self) base = c.op(OpKind::Scatter, {x, idx, constantLike(c, 0.0, c.type(src))}, a);
  ValueId sum = c.op(OpKind::ScatterAdd, {base, idx, src}, a);
  if (red == "sum") return {sum};
  ValueId ones = constantLike(c, 1.0, c.type(src));
  ValueId start = constantLike(c, self ? 1.0 : 0.0, c.type(x));
  ValueId count = c.op(OpKind::ScatterAdd, {start, idx, ones}, a);
  count = c.op(OpKind::Maximum, {count, sc(c, 1.0, count)});
  if (isFloating(c.type(x).dtype)) return {bin(c, OpKind::Div, {sum, count})};
  return {c.op(OpKind::DivFloor, {sum, count})};
}
/// masked_scatter(self, mask, source): the i-th True place takes source's
/// i-th element: gathered at cumsum(mask) - 1.  Eager refuses a source with
/// fewer elements than True places; here the index is clamped to stay in
/// bounds.
V maskedScatter(Converter& c) {
  ValueId x = c.tensor(0, "self"), m = c.tensor(1, "mask"), s = c.tensor(2, "source");
  if (c.type(m).dtype != DType::Bool) c.fail("masked_scatter: the mask must be bool");
  const TensorType t = c.type(x);
  ValueId mb = c.type(m).sizes == t.sizes ? m : c.op(OpKind::Expand, {m}, Attrs{{"size", t.sizes}});
  int64_t n = t.numel(), sn = c.type(s).numel();
  if (sn == 0) return {x};
  ValueId flatMask = reshapeTo(c, c.op(OpKind::Cast, {mb}, Attrs{{"dtype", std::string("i64")}}), {n});
  ValueId pos = bin(c, OpKind::Sub, {c.op(OpKind::Cumsum, {flatMask}, Attrs{{"dim", int64_t{0}}}), c.scalar(1, DType::I64)});
  ValueId lo = c.op(OpKind::Maximum, {pos, c.scalar(0, DType::I64)});
  ValueId clamped = c.op(OpKind::Minimum, {lo, c.scalar(static_cast<double>(sn - 1), DType::I64)});
  ValueId picked = c.op(OpKind::IndexSelect, {reshapeTo(c, s, {sn}), clamped}, Attrs{{"dim", int64_t{0}}});
  return {c.op(OpKind::Where, {mb, reshapeTo(c, picked, t.sizes), x})};
}
/// native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd,
/// weight?, bias?, output_mask): ATen's formulas.
V layerNormBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_out"), x = c.tensor(1, "input");
  Ints shape = c.ints(2, "normalized_shape");
  ValueId mean = c.tensor(3, "mean"), rstd = c.tensor(4, "rstd");
  ValueId w = c.has(5, "weight") ? c.tensor(5, "weight") : kNoValue;
  const TensorType t = c.type(x);
  int64_t r = t.rank(), k = static_cast<int64_t>(shape.size());
  Ints inner, outer;
  double N = 1;
  for (int64_t d = 0; d < r; ++d) (d >= r - k ? inner : outer).push_back(d);
  for (int64_t d : inner) N *= static_cast<double>(t.sizes[static_cast<size_t>(d)]);
  ValueId xhat = bin(c, OpKind::Mul, {bin(c, OpKind::Sub, {x, mean}), rstd});
  ValueId gw = w == kNoValue ? go : bin(c, OpKind::Mul, {go, w});
  ValueId s1 = reduceOp(c, OpKind::Sum, gw, inner, true);
  ValueId s2 = reduceOp(c, OpKind::Sum, bin(c, OpKind::Mul, {gw, xhat}), inner, true);
  ValueId t1 = bin(c, OpKind::Sub, {c.scaled(gw, N), s1});
  ValueId t2 = bin(c, OpKind::Sub, {t1, bin(c, OpKind::Mul, {xhat, s2})});
  ValueId gx = bin(c, OpKind::Mul, {t2, bin(c, OpKind::Div, {rstd, sc(c, N, rstd)})});
  const json* mask = c.arg(7, "output_mask");
  auto want = [&](size_t i) { return !mask || !mask->is_array() || i >= mask->size() || !(*mask)[i].is_boolean() || (*mask)[i].get<bool>(); };
  V out{want(0) ? gx : constantLike(c, 0.0, t)};
  Ints ws(t.sizes.end() - k, t.sizes.end());
  if (w != kNoValue && want(1)) out.push_back(reduceOp(c, OpKind::Sum, bin(c, OpKind::Mul, {go, xhat}), outer, false));
  else out.push_back(constantLike(c, 0.0, TensorType::contiguous(t.dtype, ws)));
  if (c.has(6, "bias") && want(2)) out.push_back(reduceOp(c, OpKind::Sum, go, outer, false));
  else out.push_back(constantLike(c, 0.0, TensorType::contiguous(t.dtype, ws)));
  return out;
}
/// native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C,
/// HxW, group, output_mask): layer norm's backward formula per (sample,
/// group), over [N, G, C/G, HxW].
V groupNormBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_out"), x = c.tensor(1, "input");
  ValueId mean = c.tensor(2, "mean"), rstd = c.tensor(3, "rstd");
  ValueId w = c.has(4, "weight") ? c.tensor(4, "weight") : kNoValue;
  int64_t N = c.integer(5, "N"), C = c.integer(6, "C"), HW = c.integer(7, "HxW"), G = c.integer(8, "group");
  const TensorType t = c.type(x);
  if (G <= 0 || C % G) c.fail("native_group_norm_backward: channels must divide into groups");
  if (t.numel() != N * C * HW || c.type(go).sizes != t.sizes)
    c.fail("native_group_norm_backward: grad_out and input must be [N, C, *] with N*C*HxW elements");
  if (c.type(mean).numel() != N * G || c.type(rstd).numel() != N * G) c.fail("native_group_norm_backward: mean and rstd must have N*group elements");
  const Ints g4{N, G, C / G, HW};
  ValueId xg = reshapeTo(c, x, g4), gog = reshapeTo(c, go, g4);
  ValueId mg = reshapeTo(c, mean, {N, G, 1, 1}), rg = reshapeTo(c, rstd, {N, G, 1, 1});
  ValueId xhat = bin(c, OpKind::Mul, {bin(c, OpKind::Sub, {xg, mg}), rg});
  ValueId gw = w == kNoValue ? gog : bin(c, OpKind::Mul, {gog, reshapeTo(c, w, {1, G, C / G, 1})});
  const double K = static_cast<double>((C / G) * HW);
  ValueId s1 = reduceOp(c, OpKind::Sum, gw, {2, 3}, true);
  ValueId s2 = reduceOp(c, OpKind::Sum, bin(c, OpKind::Mul, {gw, xhat}), {2, 3}, true);
  ValueId t1 = bin(c, OpKind::Sub, {c.scaled(gw, K), s1});
  ValueId t2 = bin(c, OpKind::Sub, {t1, bin(c, OpKind::Mul, {xhat, s2})});
  ValueId gx = reshapeTo(c, bin(c, OpKind::Mul, {t2, bin(c, OpKind::Div, {rg, sc(c, K, rg)})}), t.sizes);
  const json* mask = c.arg(9, "output_mask");
  auto want = [&](size_t i) { return !mask || !mask->is_array() || i >= mask->size() || !(*mask)[i].is_boolean() || (*mask)[i].get<bool>(); };
  const TensorType perChannel = TensorType::contiguous(t.dtype, {C});
  V out{want(0) ? gx : constantLike(c, 0.0, t)};
  if (want(1)) out.push_back(reshapeTo(c, reduceOp(c, OpKind::Sum, bin(c, OpKind::Mul, {gog, xhat}), {0, 3}, false), {C}));
  else out.push_back(constantLike(c, 0.0, perChannel));
  if (want(2)) out.push_back(reshapeTo(c, reduceOp(c, OpKind::Sum, gog, {0, 3}, false), {C}));
  else out.push_back(constantLike(c, 0.0, perChannel));
  return out;
}
// Note [Distances]: cdist and pdist compute each p-norm directly on the
// differences (ATen's direct path; for p = 2 ATen switches to a
// matrix-product formula past 25 rows, which is less accurate, so results
// agree within float tolerance rather than bit for bit).  Gradients are
// ATen's: 0 where a distance is 0 (the square root and the 1/p power are
// taken of a sum with its zeros replaced by 1, then masked), sign(diff) for
// p = 1, and for p = inf the full gradient to every difference tied with
// the maximum.
/// The p-norm over the last dim of `d`, keeping it.
ValueId pNormLast(Converter& c, ValueId d, double p) {
  const int64_t last = c.type(d).rank() - 1;
  ValueId a = c.op(OpKind::Abs, {d});
  if (p == 0) {
    // A count: eager's gradient is zero, and the result still takes one
    // (so `grad_output` is accepted for it): a where that never picks d.
    ValueId nz = c.op(OpKind::Cast, {bin(c, OpKind::Ne, {d, sc(c, 0.0, d)})}, Attrs{{"dtype", std::string(dtypeName(c.type(d).dtype))}});
    ValueId never = c.op(OpKind::Where, {c.scalar(0.0, DType::Bool), d, sc(c, 0.0, d)});
    return reduceOp(c, OpKind::Sum, bin(c, OpKind::Add, {nz, never}), {last}, true);
  }
  if (std::isinf(p)) {
    ValueId m = c.op(OpKind::Detach, {reduceOp(c, OpKind::Amax, a, {last}, true)});
    ValueId tie = bin(c, OpKind::Eq, {a, m});
    ValueId diff = bin(c, OpKind::Sub, {a, m});
    ValueId onTies = c.op(OpKind::Where, {tie, diff, sc(c, 0.0, a)});
    return bin(c, OpKind::Add, {m, reduceOp(c, OpKind::Sum, onTies, {last}, true)});
  }
  if (p == 1) return reduceOp(c, OpKind::Sum, a, {last}, true);
  ValueId powed = p == 2 ? bin(c, OpKind::Mul, {d, d}) : bin(c, OpKind::Pow, {a, sc(c, p, a)});
  ValueId s = reduceOp(c, OpKind::Sum, powed, {last}, true);
  ValueId zero = bin(c, OpKind::Eq, {s, sc(c, 0.0, s)});
  ValueId safe = c.op(OpKind::Where, {zero, sc(c, 1.0, s), s});
  ValueId root = p == 2 ? c.op(OpKind::Sqrt, {safe}) : bin(c, OpKind::Pow, {safe, sc(c, 1.0 / p, safe)});
  return c.op(OpKind::Where, {zero, sc(c, 0.0, root), root});
}

V cdist(Converter& c) {
  ValueId x1 = c.tensor(0, "x1"), x2 = c.tensor(1, "x2");
  double p = c.number(2, "p", 2.0);
  if (p < 0 || std::isnan(p)) c.fail("cdist only supports non-negative p values");
  const TensorType a = c.type(x1), b = c.type(x2);
  if (a.rank() < 2 || b.rank() < 2 || a.sizes.back() != b.sizes.back())
    c.fail(cat("cdist: X1 ", TensorType::contiguous(a.dtype, a.sizes).str(), " and X2 ", TensorType::contiguous(b.dtype, b.sizes).str(), " must be [*, P, M] and [*, R, M]"));
  if (!isFloating(a.dtype) || a.dtype != b.dtype) c.fail("cdist: both inputs must have the same floating dtype");
  ValueId u = c.op(OpKind::Unsqueeze, {x1}, Attrs{{"dim", int64_t{-2}}});
  ValueId v = c.op(OpKind::Unsqueeze, {x2}, Attrs{{"dim", int64_t{-3}}});
  ValueId r = pNormLast(c, bin(c, OpKind::Sub, {u, v}), p);
  return {c.op(OpKind::Squeeze, {r}, Attrs{{"dim", Ints{-1}}})};
}

/// pdist(x [N, M], p): the distances of rows i < j, row-major: the full
/// [N, N] distances, scattered into N(N-1)/2 slots (pairs i >= j go to one
/// extra slot that is dropped).
V pdist(Converter& c) {
  ValueId x = c.tensor(0, "self");
  double p = c.number(1, "p", 2.0);
  if (p < 0 || std::isnan(p)) c.fail("pdist only supports non-negative p values");
  const TensorType t = c.type(x);
  if (t.rank() != 2 || !isFloating(t.dtype)) c.fail("pdist: the input must be a 2-D floating tensor");
  const int64_t n = t.sizes[0], pairs = n * (n - 1) / 2;
  if (n < 2) return {constantLike(c, 0.0, TensorType::contiguous(t.dtype, {0}))};
  ValueId u = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{1}}});
  ValueId v = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{0}}});
  ValueId full = reshapeTo(c, pNormLast(c, bin(c, OpKind::Sub, {u, v}), p), {n * n});
  ValueId rows = reshapeTo(c, iota(c, n), {n, 1});
  ValueId cols = reshapeTo(c, iota(c, n), {1, n});
  ValueId upper = reshapeTo(c, bin(c, OpKind::Gt, {cols, rows}), {n * n});
  ValueId pos = c.op(OpKind::Cumsum, {c.op(OpKind::Cast, {upper}, Attrs{{"dtype", std::string("i64")}})}, Attrs{{"dim", int64_t{0}}});
  ValueId slot = c.op(OpKind::Where, {upper, bin(c, OpKind::Sub, {pos, c.scalar(1, DType::I64)}), c.scalar(static_cast<double>(pairs), DType::I64)});
  ValueId into = constantLike(c, 0.0, TensorType::contiguous(t.dtype, {pairs + 1}));
  ValueId out = c.op(OpKind::Scatter, {into, slot, full}, Attrs{{"dim", int64_t{0}}});
  return {c.op(OpKind::Slice, {out}, Attrs{{"dim", int64_t{0}}, {"start", int64_t{0}}, {"end", pairs}, {"step", int64_t{1}}})};
}

// Note [im2col and col2im]: both are kh*kw strided slices.  im2col (unfold)
// pads the input and takes, for each kernel offset (i, j), the rows
// i*dh + sh*a and columns j*dw + sw*b, stacked as [N, C*kh*kw, Lh*Lw];
// col2im (fold) is its adjoint: each offset's block is written into those
// rows and columns of a zero padded image (two slice_scatters), the kh*kw
// images are summed and the padding sliced off.  Gradients follow from the
// slices' own.
struct Unfold {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};
Unfold unfoldArgs(Converter& c, size_t first, const char* op) {
  auto two = [&](size_t i, const char* kw) {
    Ints v = c.ints(i, kw);
    if (v.size() == 1) v.push_back(v[0]);
    if (v.size() != 2) c.fail(cat(op, ": ", kw, " must have 2 values"));
    return v;
  };
  Ints k = two(first, "kernel_size"), d = two(first + 1, "dilation"), p = two(first + 2, "padding"), s = two(first + 3, "stride");
  if (k[0] <= 0 || k[1] <= 0 || d[0] <= 0 || d[1] <= 0 || s[0] <= 0 || s[1] <= 0 || p[0] < 0 || p[1] < 0)
    c.fail(cat(op, ": kernel_size, dilation and stride must be positive and padding non-negative"));
  return {k[0], k[1], d[0], d[1], p[0], p[1], s[0], s[1]};
}
/// Blocks along one dim of padded size `n`.
int64_t unfoldBlocks(Converter& c, int64_t n, int64_t k, int64_t d, int64_t s, const char* op) {
  int64_t span = d * (k - 1) + 1;
  if (n < span) c.fail(cat(op, ": the kernel (", span, " with dilation) does not fit the padded input (", n, ")"));
  return (n - span) / s + 1;
}
Attrs stridedSlice(int64_t dim, int64_t start, int64_t count, int64_t step) {
  return Attrs{{"dim", dim}, {"start", start}, {"end", start + step * (count - 1) + 1}, {"step", step}};
}

V im2col(Converter& c) {
  ValueId x = c.tensor(0, "self");
  Unfold u = unfoldArgs(c, 1, "im2col");
  const TensorType t = c.type(x);
  const bool batched = t.rank() == 4;
  if (t.rank() != 3 && !batched) c.fail("im2col expects a 3-D (C, H, W) or 4-D (N, C, H, W) input");
  ValueId x4 = batched ? x : c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{0}}});
  const Ints s = c.type(x4).sizes;
  ValueId xp = (u.ph || u.pw) ? c.op(OpKind::Pad, {x4}, Attrs{{"pad", Ints{u.pw, u.pw, u.ph, u.ph}}, {"value", 0.0}}) : x4;
  const int64_t lh = unfoldBlocks(c, s[2] + 2 * u.ph, u.kh, u.dh, u.sh, "im2col"), lw = unfoldBlocks(c, s[3] + 2 * u.pw, u.kw, u.dw, u.sw, "im2col");
  std::vector<ValueId> parts;
  for (int64_t i = 0; i < u.kh; ++i)
    for (int64_t j = 0; j < u.kw; ++j) {
      ValueId r = c.op(OpKind::Slice, {xp}, stridedSlice(2, i * u.dh, lh, u.sh));
      ValueId b = c.op(OpKind::Slice, {r}, stridedSlice(3, j * u.dw, lw, u.sw));
      parts.push_back(c.op(OpKind::Unsqueeze, {b}, Attrs{{"dim", int64_t{2}}}));
    }
  ValueId st = parts.size() == 1 ? parts[0] : c.op(OpKind::Cat, parts, Attrs{{"dim", int64_t{2}}});
  Ints out{s[0], s[1] * u.kh * u.kw, lh * lw};
  if (!batched) out.erase(out.begin());
  return {reshapeTo(c, st, out)};
}

V col2im(Converter& c) {
  ValueId x = c.tensor(0, "self");
  Ints size = c.ints(1, "output_size");
  if (size.size() == 1) size.push_back(size[0]);
  if (size.size() != 2 || size[0] <= 0 || size[1] <= 0) c.fail("col2im: output_size must be 2 positive values");
  Unfold u = unfoldArgs(c, 2, "col2im");
  const TensorType t = c.type(x);
  const bool batched = t.rank() == 3;
  if (t.rank() != 2 && !batched) c.fail("col2im expects a 2-D (C*kh*kw, L) or 3-D (N, C*kh*kw, L) input");
  const int64_t n = batched ? t.sizes[0] : 1, ck = t.sizes[batched ? 1 : 0], l = t.sizes[batched ? 2 : 1];
  const int64_t hp = size[0] + 2 * u.ph, wp = size[1] + 2 * u.pw;
  const int64_t lh = unfoldBlocks(c, hp, u.kh, u.dh, u.sh, "col2im"), lw = unfoldBlocks(c, wp, u.kw, u.dw, u.sw, "col2im");
  if (ck % (u.kh * u.kw)) c.fail(cat("col2im: dim ", batched ? 1 : 0, " (", ck, ") must be divisible by the kernel size ", u.kh * u.kw));
  if (l != lh * lw) c.fail(cat("col2im: the input has ", l, " blocks, the sizes give ", lh, " x ", lw, " = ", lh * lw));
  const int64_t ch = ck / (u.kh * u.kw);
  ValueId cols = reshapeTo(c, x, {n, ch, u.kh, u.kw, lh, lw});
  ValueId acc = kNoValue;
  for (int64_t i = 0; i < u.kh; ++i)
    for (int64_t j = 0; j < u.kw; ++j) {
      ValueId bi = c.op(OpKind::Select, {cols}, Attrs{{"dim", int64_t{2}}, {"index", i}});
      ValueId b = c.op(OpKind::Clone, {c.op(OpKind::Select, {bi}, Attrs{{"dim", int64_t{2}}, {"index", j}})});
      ValueId rowsZero = constantLike(c, 0.0, TensorType::contiguous(t.dtype, {n, ch, hp, lw}));
      ValueId rows = c.op(OpKind::SliceScatter, {rowsZero, b}, stridedSlice(2, i * u.dh, lh, u.sh));
      ValueId imgZero = constantLike(c, 0.0, TensorType::contiguous(t.dtype, {n, ch, hp, wp}));
      ValueId img = c.op(OpKind::SliceScatter, {imgZero, rows}, stridedSlice(3, j * u.dw, lw, u.sw));
      acc = acc == kNoValue ? img : bin(c, OpKind::Add, {acc, img});
    }
  ValueId r = c.op(OpKind::Slice, {acc}, Attrs{{"dim", int64_t{2}}, {"start", u.ph}, {"end", u.ph + size[0]}, {"step", int64_t{1}}});
  ValueId o = c.op(OpKind::Slice, {r}, Attrs{{"dim", int64_t{3}}, {"start", u.pw}, {"end", u.pw + size[1]}, {"step", int64_t{1}}});
  return {batched ? o : c.op(OpKind::Squeeze, {o}, Attrs{{"dim", Ints{0}}})};
}

/// _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode,
/// sparse, per_sample_weights, include_last_offset, padding_idx): each
/// index's bag is the number of offsets at or before its position, less one
/// (a [L, B] comparison: static shapes whatever the offsets hold); rows are
/// summed into their bags with index_add (mean divides by the bag's count,
/// an empty bag gives 0 as in eager).  Indices before the first offset,
/// after include_last_offset's end, or equal to padding_idx take no part.
/// Only the first result is computed: the other three are eager's internal
/// buffers for its backward, and reading one is an error.
V embeddingBag(Converter& c) {
  ValueId w = c.tensor(0, "weight"), idx = c.tensor(1, "indices"), offs = c.tensor(2, "offsets");
  if (c.boolean(3, "scale_grad_by_freq", false)) c.fail("_embedding_bag: scale_grad_by_freq is not supported");
  int64_t mode = c.integer(4, "mode", 0);
  if (mode == 2) c.fail("_embedding_bag: mode='max' is not supported (sum and mean are)");
  if (mode != 0 && mode != 1) c.fail(cat("_embedding_bag: unknown mode ", mode));
  bool last = c.boolean(7, "include_last_offset", false);
  int64_t pad = c.has(8, "padding_idx") ? c.integer(8, "padding_idx") : -1;
  const TensorType wt = c.type(w), it = c.type(idx), ot = c.type(offs);
  if (wt.rank() != 2 || it.rank() != 1 || ot.rank() != 1) c.fail("_embedding_bag: weight must be 2-D, indices and offsets 1-D");
  if (isFloating(it.dtype) || isFloating(ot.dtype)) c.fail("_embedding_bag: indices and offsets must be integers");
  const int64_t L = it.sizes[0], D = wt.sizes[1], B = ot.sizes[0] - (last ? 1 : 0);
  if (B < 0) c.fail("_embedding_bag: include_last_offset needs at least one offset");
  if (pad < 0 && pad != -1) pad += wt.sizes[0];
  auto i64 = [&](ValueId v) { return c.type(v).dtype == DType::I64 ? v : c.op(OpKind::Cast, {v}, Attrs{{"dtype", std::string("i64")}}); };
  ValueId index = i64(idx), off = i64(offs);
  ValueId posL = iota(c, L);
  ValueId pos = reshapeTo(c, posL, {L, 1});
  ValueId starts = last ? c.op(OpKind::Slice, {off}, Attrs{{"dim", int64_t{0}}, {"start", int64_t{0}}, {"end", B}, {"step", int64_t{1}}}) : off;
  ValueId before = c.op(OpKind::Cast, {bin(c, OpKind::Le, {reshapeTo(c, starts, {1, B}), pos})}, Attrs{{"dtype", std::string("i64")}});
  ValueId bag = bin(c, OpKind::Sub, {reduceOp(c, OpKind::Sum, before, {1}, false), c.scalar(1, DType::I64)});
  ValueId valid = bin(c, OpKind::Ge, {bag, c.scalar(0, DType::I64)});
  if (last) {
    ValueId end = c.op(OpKind::Select, {off}, Attrs{{"dim", int64_t{0}}, {"index", B}});
    valid = bin(c, OpKind::LogicalAnd, {valid, bin(c, OpKind::Lt, {posL, end})});
  }
  if (pad >= 0) valid = bin(c, OpKind::LogicalAnd, {valid, bin(c, OpKind::Ne, {index, c.scalar(static_cast<double>(pad), DType::I64)})});
  ValueId safeBag = c.op(OpKind::Where, {valid, bag, c.scalar(0, DType::I64)});
  ValueId rows = c.op(OpKind::IndexSelect, {w, index}, Attrs{{"dim", int64_t{0}}});
  if (c.has(6, "per_sample_weights")) {
    if (mode != 0) c.fail("_embedding_bag: per_sample_weights needs mode='sum'");
    ValueId psw = c.tensor(6, "per_sample_weights");
    rows = bin(c, OpKind::Mul, {rows, reshapeTo(c, psw, {L, 1})});
  }
  ValueId kept = c.op(OpKind::Where, {reshapeTo(c, valid, {L, 1}), rows, sc(c, 0.0, rows)});
  ValueId zeros = constantLike(c, 0.0, TensorType::contiguous(wt.dtype, {B, D}));
  ValueId out = c.op(OpKind::IndexAdd, {zeros, safeBag, kept}, Attrs{{"dim", int64_t{0}}});
  if (mode == 1) {
    ValueId ones = c.op(OpKind::Cast, {valid}, Attrs{{"dtype", std::string(dtypeName(wt.dtype))}});
    ValueId count = c.op(OpKind::IndexAdd, {constantLike(c, 0.0, TensorType::contiguous(wt.dtype, {B})), safeBag, ones}, Attrs{{"dim", int64_t{0}}});
    ValueId denom = c.op(OpKind::Maximum, {count, sc(c, 1.0, count)});
    out = bin(c, OpKind::Div, {out, reshapeTo(c, denom, {B, 1})});
  }
  return {out, kNoValue, kNoValue, kNoValue};
}

// Note [grid_sampler]: ATen's grid_sampler_2d, op for op in the input's
// dtype: each grid coordinate is unnormalized (align_corners or not),
// clipped (border) or reflected (reflection) as grid_sampler_compute_source_index
// does, then bilinear takes the four neighbours (floor, +1) weighted by the
// opposite areas and nearest the neighbour at nearbyint; a neighbour outside
// the input reads 0.  Reads are one gather per neighbour from [N, C, H*W].
// The gradient with respect to the input flows through the gathers, with
// respect to the grid through the weights (floor and round have none, and
// clipping none outside the range), as in ATen's backward.
ValueId gridSourceIndex(Converter& c, ValueId coord, int64_t size, int64_t padding, bool align) {
  const double n = static_cast<double>(size);
  ValueId one = sc(c, 1.0, coord);
  ValueId x = align ? bin(c, OpKind::Mul, {bin(c, OpKind::Div, {bin(c, OpKind::Add, {coord, one}), sc(c, 2.0, coord)}), sc(c, n - 1, coord)})
                    : bin(c, OpKind::Div, {bin(c, OpKind::Sub, {bin(c, OpKind::Mul, {bin(c, OpKind::Add, {coord, one}), sc(c, n, coord)}), one}),
                                           sc(c, 2.0, coord)});
  if (padding == 1) return clampOp(c, x, 0.0, n - 1);
  if (padding == 2) {
    // reflect_coordinates(x, twice_low, twice_high), then clip.
    const double lo2 = align ? 0.0 : -1.0, hi2 = align ? 2.0 * (n - 1) : 2.0 * n - 1;
    if (lo2 == hi2) return sc(c, 0.0, coord);
    const double mn = lo2 / 2, span = (hi2 - lo2) / 2;
    ValueId in = c.op(OpKind::Abs, {bin(c, OpKind::Sub, {x, sc(c, mn, x)})});
    ValueId extra = bin(c, OpKind::Fmod, {in, sc(c, span, in)});
    ValueId flips = c.op(OpKind::Floor, {bin(c, OpKind::Div, {in, sc(c, span, in)})});
    ValueId even = bin(c, OpKind::Eq, {bin(c, OpKind::Fmod, {flips, sc(c, 2.0, flips)}), sc(c, 0.0, flips)});
    ValueId up = bin(c, OpKind::Add, {extra, sc(c, mn, extra)});
    ValueId down = bin(c, OpKind::Add, {bin(c, OpKind::Sub, {sc(c, span, extra), extra}), sc(c, mn, extra)});
    return clampOp(c, c.op(OpKind::Where, {even, up, down}), 0.0, n - 1);
  }
  return x;
}

V gridSampler2d(Converter& c) {
  ValueId x = c.tensor(0, "input"), grid = c.tensor(1, "grid");
  int64_t interp = c.integer(2, "interpolation_mode", 0), padding = c.integer(3, "padding_mode", 0);
  bool align = c.boolean(4, "align_corners", false);
  if (interp == 2) c.fail("grid_sampler_2d: bicubic interpolation is not supported (bilinear and nearest are)");
  if (interp != 0 && interp != 1) c.fail(cat("grid_sampler_2d: unknown interpolation mode ", interp));
  if (padding < 0 || padding > 2) c.fail(cat("grid_sampler_2d: unknown padding mode ", padding));
  const TensorType t = c.type(x), gt = c.type(grid);
  if (t.rank() != 4 || gt.rank() != 4 || gt.sizes[3] != 2 || gt.sizes[0] != t.sizes[0])
    c.fail("grid_sampler_2d: input must be [N, C, H, W] and grid [N, Ho, Wo, 2]");
  if (!isFloating(t.dtype) || gt.dtype != t.dtype) c.fail("grid_sampler_2d: input and grid must have the same floating dtype");
  const int64_t N = t.sizes[0], C = t.sizes[1], H = t.sizes[2], W = t.sizes[3], P = gt.sizes[1] * gt.sizes[2];
  ValueId flat = reshapeTo(c, x, {N, C, H * W});
  ValueId gx = reshapeTo(c, c.op(OpKind::Select, {grid}, Attrs{{"dim", int64_t{3}}, {"index", int64_t{0}}}), {N, 1, P});
  ValueId gy = reshapeTo(c, c.op(OpKind::Select, {grid}, Attrs{{"dim", int64_t{3}}, {"index", int64_t{1}}}), {N, 1, P});
  ValueId ix = gridSourceIndex(c, gx, W, padding, align);
  ValueId iy = gridSourceIndex(c, gy, H, padding, align);
  // One neighbour: x[n, c, y, x] where (y, x) is inside, else 0.
  auto tap = [&](ValueId fy, ValueId fx) {
    ValueId inX = bin(c, OpKind::LogicalAnd, {bin(c, OpKind::Ge, {fx, sc(c, 0.0, fx)}), bin(c, OpKind::Le, {fx, sc(c, static_cast<double>(W - 1), fx)})});
    ValueId inY = bin(c, OpKind::LogicalAnd, {bin(c, OpKind::Ge, {fy, sc(c, 0.0, fy)}), bin(c, OpKind::Le, {fy, sc(c, static_cast<double>(H - 1), fy)})});
    ValueId inside = bin(c, OpKind::LogicalAnd, {inX, inY});
    ValueId lin = bin(c, OpKind::Add, {bin(c, OpKind::Mul, {fy, sc(c, static_cast<double>(W), fy)}), fx});
    ValueId safe = c.op(OpKind::Where, {inside, lin, sc(c, 0.0, lin)});
    ValueId idx = c.op(OpKind::Cast, {safe}, Attrs{{"dtype", std::string("i64")}});
    ValueId full = c.op(OpKind::Clone, {c.op(OpKind::Expand, {idx}, Attrs{{"size", Ints{N, C, P}}})});
    ValueId v = c.op(OpKind::Gather, {flat, full}, Attrs{{"dim", int64_t{2}}});
    return c.op(OpKind::Where, {inside, v, sc(c, 0.0, v)});
  };
  ValueId out;
  if (interp == 1) {
    ValueId rx = c.op(OpKind::Round, {ix});
    ValueId ry = c.op(OpKind::Round, {iy});
    out = tap(ry, rx);
  } else {
    ValueId x0 = c.op(OpKind::Floor, {ix});
    ValueId y0 = c.op(OpKind::Floor, {iy});
    ValueId x1 = bin(c, OpKind::Add, {x0, sc(c, 1.0, x0)});
    ValueId y1 = bin(c, OpKind::Add, {y0, sc(c, 1.0, y0)});
    ValueId wx1 = bin(c, OpKind::Sub, {ix, x0}), wx0 = bin(c, OpKind::Sub, {x1, ix});
    ValueId wy1 = bin(c, OpKind::Sub, {iy, y0}), wy0 = bin(c, OpKind::Sub, {y1, iy});
    ValueId nw = bin(c, OpKind::Mul, {tap(y0, x0), bin(c, OpKind::Mul, {wx0, wy0})});
    ValueId ne = bin(c, OpKind::Mul, {tap(y0, x1), bin(c, OpKind::Mul, {wx1, wy0})});
    ValueId sw = bin(c, OpKind::Mul, {tap(y1, x0), bin(c, OpKind::Mul, {wx0, wy1})});
    ValueId se = bin(c, OpKind::Mul, {tap(y1, x1), bin(c, OpKind::Mul, {wx1, wy1})});
    out = bin(c, OpKind::Add, {bin(c, OpKind::Add, {bin(c, OpKind::Add, {nw, ne}), sw}), se});
  }
  return {reshapeTo(c, out, {N, C, gt.sizes[1], gt.sizes[2]})};
}

/// A node whose result shape depends on tensor data: refused by name.
V dataDependent(Converter& c) {
  c.fail("the result's shape (or value) depends on tensor data, which an ahead-of-time artifact cannot express; "
         "rewrite without it (torch.where instead of boolean masks, shapes from sizes)");
}

/// The *_backward ops a forward can contain (torch.autograd.grad inside the
/// program): each is the op aotc's own gradient rules emit.
V avgPoolBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_output"), x = c.tensor(1, "self");
  Attrs a{{"kernel", c.ints(2, "kernel_size")}, {"stride", c.ints(3, "stride", Ints{})}, {"padding", c.ints(4, "padding", Ints{0})},
          {"ceil_mode", c.boolean(5, "ceil_mode", false)}, {"count_include_pad", c.boolean(6, "count_include_pad", true)},
          {"input_size", c.type(x).sizes}};
  if (c.has(7, "divisor_override")) a["divisor"] = c.integer(7, "divisor_override");
  return {c.op(OpKind::AvgPool2dBackward, {c.type(go).isContiguous() ? go : c.op(OpKind::Clone, {go})}, a)};
}
V maxPoolBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_output"), x = c.tensor(1, "self"), idx = c.tensor(7, "indices");
  Attrs a{{"kernel", c.ints(2, "kernel_size")}, {"stride", c.ints(3, "stride", Ints{})}, {"padding", c.ints(4, "padding", Ints{0})},
          {"dilation", c.ints(5, "dilation", Ints{1})}, {"ceil_mode", c.boolean(6, "ceil_mode", false)}, {"input_size", c.type(x).sizes}};
  ValueId goc = c.type(go).isContiguous() ? go : c.op(OpKind::Clone, {go});
  return {c.op(OpKind::MaxPool2dBackward, {goc, idx}, a)};
}
V adaptiveAvgPoolBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_output"), x = c.tensor(1, "self");
  ValueId goc = c.type(go).isContiguous() ? go : c.op(OpKind::Clone, {go});
  return {c.op(OpKind::AdaptiveAvgPool2dBackward, {goc}, Attrs{{"input_size", c.type(x).sizes}})};
}
/// convolution_backward(grad_output, input, weight, bias_sizes, stride,
/// padding, dilation, transposed, output_padding, groups, output_mask).
V convolutionBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_output"), x = c.tensor(1, "input"), w = c.tensor(2, "weight");
  if (c.boolean(7, "transposed", false)) c.fail("convolution_backward of a transposed convolution is not supported yet");
  if (c.type(x).rank() != 4) c.fail("convolution_backward: only 2-D convolution is supported");
  Attrs a{{"stride", c.ints(4, "stride")}, {"padding", c.ints(5, "padding")}, {"dilation", c.ints(6, "dilation")},
          {"groups", c.integer(9, "groups", 1)}};
  const json* mask = c.arg(10, "output_mask");
  auto want = [&](size_t i) { return !mask || !mask->is_array() || i >= mask->size() || !(*mask)[i].is_boolean() || (*mask)[i].get<bool>(); };
  ValueId goc = c.type(go).isContiguous() ? go : c.op(OpKind::Clone, {go});
  V out;
  Attrs ai = a, aw = a;
  ai["input_size"] = c.type(x).sizes;
  aw["weight_size"] = c.type(w).sizes;
  ValueId wc = c.type(w).isContiguous() ? w : c.op(OpKind::Clone, {w});
  ValueId xc = c.type(x).isContiguous() ? x : c.op(OpKind::Clone, {x});
  out.push_back(want(0) ? c.op(OpKind::Conv2dBackwardInput, {goc, wc}, ai) : constantLike(c, 0.0, c.type(x)));
  out.push_back(want(1) ? c.op(OpKind::Conv2dBackwardWeight, {goc, xc}, aw) : constantLike(c, 0.0, c.type(w)));
  Ints bias = c.has(3, "bias_sizes") ? c.ints(3, "bias_sizes") : Ints{c.type(w).sizes[0]};
  out.push_back(want(2) ? reduceOp(c, OpKind::Sum, goc, {0, 2, 3}, false)
                        : constantLike(c, 0.0, TensorType::contiguous(c.type(go).dtype, bias)));
  return out;
}
/// mse_loss_backward(grad_output, self, target, reduction) = 2 (x - t) go [/ n].
V mseLossBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_output"), x = c.tensor(1, "self"), t = c.tensor(2, "target");
  int64_t red = c.integer(3, "reduction", 1);
  double k = red == 1 ? 2.0 / static_cast<double>(std::max<int64_t>(c.type(x).numel(), 1)) : 2.0;
  ValueId d = bin(c, OpKind::Sub, {x, t});
  ValueId r = bin(c, OpKind::Mul, {c.scaled(d, k), go});
  if (c.type(r).sizes != c.type(x).sizes) r = c.op(OpKind::Expand, {r}, Attrs{{"size", c.type(x).sizes}});
  return {r};
}
/// embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq).
V embeddingBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_output"), idx = c.tensor(1, "indices");
  int64_t n = c.integer(2, "num_weights"), pad = c.integer(3, "padding_idx", -1);
  if (c.boolean(4, "scale_grad_by_freq", false)) c.fail("embedding backward with scale_grad_by_freq is not supported yet");
  const TensorType gt = c.type(go);
  int64_t D = gt.sizes.empty() ? 1 : gt.sizes.back(), m = c.type(idx).numel();
  ValueId flatIdx = reshapeTo(c, idx, {m});
  if (c.type(flatIdx).dtype != DType::I64) flatIdx = c.op(OpKind::Cast, {flatIdx}, Attrs{{"dtype", std::string("i64")}});
  ValueId g2 = reshapeTo(c, go, {m, D});
  if (pad >= 0) {
    ValueId keep = bin(c, OpKind::Ne, {flatIdx, c.scalar(static_cast<double>(pad), DType::I64)});
    ValueId k2 = c.op(OpKind::View, {keep}, Attrs{{"size", Ints{m, 1}}});
    g2 = c.op(OpKind::Where, {k2, g2, sc(c, 0.0, g2)});
  }
  ValueId zeros = constantLike(c, 0.0, TensorType::contiguous(gt.dtype, {n, D}));
  return {c.op(OpKind::IndexAdd, {zeros, flatIdx, g2}, Attrs{{"dim", int64_t{0}}})};
}
/// 1-D pooling as 2-D over a unit height.
V pool1d(Converter& c, bool adaptive) {
  ValueId x = c.tensor(0, "self");
  if (c.type(x).rank() != 3) c.fail("1-D pooling expects a 3-D (N, C, L) input");
  ValueId x4 = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{2}}});
  ValueId y;
  if (adaptive) {
    Ints o = c.ints(1, "output_size");
    if (o.size() != 1 || o[0] <= 0) c.fail("adaptive_avg_pool1d: output_size must be one positive value");
    y = c.op(OpKind::AdaptiveAvgPool2d, {x4}, Attrs{{"output_size", Ints{1, o[0]}}});
  } else {
    auto one = [&](size_t i, const char* kw, Ints dflt, int64_t lead) {
      Ints v = c.ints(i, kw, dflt);
      if (v.empty()) return v;
      if (v.size() != 1) c.fail(cat("avg_pool1d: ", kw, " must have 1 value"));
      return Ints{lead, v[0]};
    };
    Attrs a{{"kernel", one(1, "kernel_size", {}, 1)}, {"stride", one(2, "stride", Ints{}, 1)}, {"padding", one(3, "padding", Ints{0}, 0)},
            {"ceil_mode", c.boolean(4, "ceil_mode", false)}, {"count_include_pad", c.boolean(5, "count_include_pad", true)}};
    if (std::get<Ints>(a["stride"]).empty()) a["stride"] = std::get<Ints>(a["kernel"]);
    y = c.op(OpKind::AvgPool2d, {x4}, a);
  }
  return {c.op(OpKind::Squeeze, {y}, Attrs{{"dim", Ints{2}}})};
}
// 3-D pooling: Note [3-D pooling] in src/ops/decompose.cpp.

/// The input as 5-D (an unbatched 4-D one gains N = 1), and whether it was 4-D.
std::pair<ValueId, bool> pool3dInput(Converter& c, const char* op) {
  ValueId x = c.tensor(0, "self");
  const int64_t r = c.type(x).rank();
  if (r != 4 && r != 5) c.fail(cat(op, " expects a 4-D (C, D, H, W) or 5-D (N, C, D, H, W) input"));
  if (r == 4) x = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{0}}});
  return {x, r == 4};
}
ValueId pool3dResult(Converter& c, ValueId y, bool unbatched) {
  return unbatched ? c.op(OpKind::Squeeze, {y}, Attrs{{"dim", Ints{0}}}) : y;
}

V avgPool3d(Converter& c) {
  const char* op = "avg_pool3d";
  decomp::Pool3d p;
  p.kernel = triple(c, 1, "kernel_size", {}, op);
  p.stride = triple(c, 2, "stride", Ints{}, op);
  p.padding = triple(c, 3, "padding", Ints{0}, op);
  if (p.kernel.empty()) c.fail("avg_pool3d: kernel_size is required");
  p.ceil = c.boolean(4, "ceil_mode", false);
  p.countIncludePad = c.boolean(5, "count_include_pad", true);
  if (c.has(6, "divisor_override")) p.divisor = c.integer(6, "divisor_override");
  auto [x, unbatched] = pool3dInput(c, op);
  return {pool3dResult(c, decomp::avgPool3d(c, x, p), unbatched)};
}

V maxPool3d(Converter& c) {
  const char* op = "max_pool3d";
  decomp::Pool3d p;
  p.kernel = triple(c, 1, "kernel_size", {}, op);
  p.stride = triple(c, 2, "stride", Ints{}, op);
  p.padding = triple(c, 3, "padding", Ints{0}, op);
  p.dilation = triple(c, 4, "dilation", Ints{1}, op);
  if (p.kernel.empty()) c.fail("max_pool3d: kernel_size is required");
  p.ceil = c.boolean(5, "ceil_mode", false);
  auto [x, unbatched] = pool3dInput(c, op);
  auto [y, idx] = decomp::maxPool3d(c, x, p);
  return {pool3dResult(c, y, unbatched), pool3dResult(c, idx, unbatched)};
}

V adaptiveAvgPool3d(Converter& c) {
  Ints o = triple(c, 1, "output_size", {}, "adaptive_avg_pool3d");
  if (o.empty()) c.fail("adaptive_avg_pool3d: output_size is required");
  auto [x, unbatched] = pool3dInput(c, "adaptive_avg_pool3d");
  return {pool3dResult(c, decomp::adaptiveAvg3d(c, x, o), unbatched)};
}

/// index_put(self, indices, values, accumulate): integer indices as in
/// indexTensor, written through index_add on the flattened indexed dims.
/// Without accumulate, later duplicates win (eager's CPU behaviour): a
/// value is dropped when a later index equals its own, found with a
/// pairwise comparison, so at most 4096 indices (the values' gradient is
/// still grad[indices] for each, as eager's).  A bool mask with one value
/// is where(mask, value, self).
V indexPut(Converter& c) {
  ValueId x = c.tensor(0, "self");
  const json* list = c.arg(1, "indices");
  if (!list || !list->is_array()) c.fail("index_put: indices must be a list");
  ValueId v = c.tensor(2, "values");
  bool acc = c.boolean(3, "accumulate", false);
  const TensorType t = c.type(x);
  if (c.type(v).dtype != t.dtype) v = c.op(OpKind::Cast, {v}, Attrs{{"dtype", std::string(dtypeName(t.dtype))}});
  // x[mask] = scalar.
  if (list->size() == 1 && !(*list)[0].is_null() && c.type(c.ref((*list)[0], 1)).dtype == DType::Bool) {
    ValueId m = c.ref((*list)[0], 1);
    if (c.type(v).numel() != 1 || acc)
      c.fail("index_put with a bool mask needs a single value and no accumulate (otherwise its shape depends on the data)");
    const TensorType mt = c.type(m);
    if (mt.rank() > t.rank()) c.fail("index_put: the mask has more dims than the tensor");
    for (int64_t d = 0; d < mt.rank(); ++d)
      if (mt.sizes[static_cast<size_t>(d)] != t.sizes[static_cast<size_t>(d)]) c.fail("index_put: the mask's shape does not match the tensor's leading dims");
    Ints ms = mt.sizes;
    ms.resize(static_cast<size_t>(t.rank()), 1);
    ValueId mm = reshapeTo(c, m, ms);
    ValueId v0 = reshapeTo(c, v, {});
    return {c.op(OpKind::Where, {mm, v0, x})};
  }
  size_t first = 0;
  while (first < list->size() && (*list)[first].is_null()) ++first;
  std::vector<ValueId> idx;
  for (size_t i = first; i < list->size(); ++i) {
    if ((*list)[i].is_null()) c.fail("index_put: index tensors separated by None are not supported");
    ValueId iv = c.ref((*list)[i], 1);
    if (c.type(iv).dtype == DType::Bool || isFloating(c.type(iv).dtype)) c.fail("index_put: index tensors must be integers (or one bool mask)");
    idx.push_back(iv);
  }
  if (idx.empty()) c.fail("index_put without index tensors");
  size_t k = idx.size();
  FlatIndex f = flatIndex(c, t, idx, first, "index_put");
  const Ints& bshape = f.bshape;
  const int64_t bn = f.bn, mid = f.mid;
  ValueId flatIdx = f.flat;
  Ints pre(t.sizes.begin(), t.sizes.begin() + static_cast<int64_t>(first));
  Ints post(t.sizes.begin() + static_cast<int64_t>(first + k), t.sizes.end());
  Ints flat = pre, vshape = pre, vflat = pre;
  flat.push_back(mid);
  vflat.push_back(bn);
  flat.insert(flat.end(), post.begin(), post.end());
  vflat.insert(vflat.end(), post.begin(), post.end());
  vshape.insert(vshape.end(), bshape.begin(), bshape.end());
  vshape.insert(vshape.end(), post.begin(), post.end());
  if (!broadcastShapes(vshape, c.type(v).sizes) || *broadcastShapes(vshape, c.type(v).sizes) != vshape)
    c.fail("index_put: values do not broadcast to the indexed shape " + TensorType::contiguous(t.dtype, vshape).str());
  ValueId vs = reshapeTo(c, c.op(OpKind::Clone, {c.op(OpKind::Expand, {v}, Attrs{{"size", vshape}})}), vflat);
  ValueId xs = reshapeTo(c, x, flat);
  int64_t dim = static_cast<int64_t>(first);
  ValueId res;
  if (acc) {
    res = c.op(OpKind::IndexAdd, {xs, flatIdx, vs}, Attrs{{"dim", dim}});
  } else {
    if (bn > 4096) c.fail("index_put without accumulate takes at most 4096 indices (duplicates are resolved pairwise)");
    // last[i]: no later j has the same index.
    ValueId col = c.op(OpKind::View, {flatIdx}, Attrs{{"size", Ints{bn, 1}}});
    ValueId same = bin(c, OpKind::Eq, {col, flatIdx});
    ValueId later = triangle(c, c.op(OpKind::Cast, {same}, Attrs{{"dtype", std::string("i64")}}), 1, true);
    ValueId dupLater = bin(c, OpKind::Gt, {reduceOp(c, OpKind::Sum, later, {1}, false), c.scalar(0, DType::I64)});
    Ints mshape(flat.size(), 1);
    mshape[first] = bn;
    ValueId keep = c.op(OpKind::View, {c.op(OpKind::LogicalNot, {dupLater})}, Attrs{{"size", mshape}});
    // Eager's gradient of the values is grad[indices] for every value, an
    // overwritten duplicate included: keep_grad gives the masked values
    // the gradient identity of all of them.
    ValueId vk = c.op(OpKind::KeepGrad, {vs, c.op(OpKind::Where, {keep, vs, sc(c, 0.0, vs)})});
    ValueId ones = c.op(OpKind::Cast, {keep}, Attrs{{"dtype", std::string("i64")}});
    Ints hitShape(flat.size(), 1);
    hitShape[first] = mid;
    ValueId zeroHits = constantLike(c, 0.0, TensorType::contiguous(DType::I64, hitShape));
    ValueId hits = c.op(OpKind::IndexAdd, {zeroHits, flatIdx, ones}, Attrs{{"dim", dim}});
    ValueId written = c.op(OpKind::IndexAdd, {constantLike(c, 0.0, c.type(xs)), flatIdx, vk}, Attrs{{"dim", dim}});
    res = c.op(OpKind::Where, {bin(c, OpKind::Gt, {hits, c.scalar(0, DType::I64)}), written, xs});
  }
  return {reshapeTo(c, res, t.sizes)};
}

/// The table below plus the spellings the elementwise ops' rows give (Note
/// [Pointwise rows]): `self` for a unary op, `self, other` for a binary one.
std::map<std::string, ConvertFn> withPointwiseRows(std::map<std::string, ConvertFn> table) {
  for (const PointwiseRule& r : pointwiseRules())
    for (const char* spelling : r.aten) {
      if (!spelling) continue;
      OpKind k = r.op;
      ConvertFn f = opInfo(k).arity == 1 ? ConvertFn([k](Converter& c) { return unary(c, k); })
                                         : ConvertFn([k](Converter& c) { return binary(c, k); });
      AOTC_CHECK(table.emplace(spelling, std::move(f)).second, "fx.cpp: ", spelling, " is spelled twice");
    }
  return table;
}

const std::map<std::string, ConvertFn>& converters() {
  static const std::map<std::string, ConvertFn> table = withPointwiseRows({
      {"aten.add.Tensor", [](Converter& c) { return addLike(c, OpKind::Add, 1); }},
      {"aten.add.Scalar", [](Converter& c) { return addLike(c, OpKind::Add, 1); }},
      {"aten.add_.Tensor", [](Converter& c) { return addLike(c, OpKind::AddInplace, 1); }},
      {"aten.add_.Scalar", [](Converter& c) { return addLike(c, OpKind::AddInplace, 1); }},
      {"aten.sub.Tensor", [](Converter& c) { return addLike(c, OpKind::Sub, 1); }},
      {"aten.sub.Scalar", [](Converter& c) { return addLike(c, OpKind::Sub, 1); }},
      {"aten.sub_.Tensor", [](Converter& c) { return addLike(c, OpKind::AddInplace, -1); }},
      {"aten.sub_.Scalar", [](Converter& c) { return addLike(c, OpKind::AddInplace, -1); }},
      {"aten.rsub.Scalar",
       [](Converter& c) -> V {
         ValueId a = c.tensor(0, "self");
         return {c.op(OpKind::Sub, {c.operand(1, "other", a), c.scaled(a, c.number(2, "alpha", 1.0))})};
       }},
      {"aten.mul_.Tensor", [](Converter& c) { return binary(c, OpKind::MulInplace); }},
      {"aten.mul_.Scalar", [](Converter& c) { return binary(c, OpKind::MulInplace); }},
      {"aten.where.self",
       [](Converter& c) -> V {
         return {c.op(OpKind::Where, {c.tensor(0, "condition"), c.tensor(1, "self"), c.tensor(2, "other")})};
       }},
      {"aten.sum.default", [](Converter& c) { return reduce(c, OpKind::Sum, false); }},
      {"aten.sum.dim_IntList", [](Converter& c) { return reduce(c, OpKind::Sum, true); }},
      {"aten.mean.default", [](Converter& c) { return reduce(c, OpKind::Mean, false); }},
      {"aten.mean.dim", [](Converter& c) { return reduce(c, OpKind::Mean, true); }},
      {"aten.prod.default", [](Converter& c) { return reduce(c, OpKind::Prod, false); }},
      {"aten.prod.dim_int",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         c.requireNone(3, "dtype", "dtype=");
         return {c.op(OpKind::Prod, {x}, Attrs{{"dim", Ints{dimArg(c, 1, "dim", x)}}, {"keepdim", c.boolean(2, "keepdim", false)}})};
       }},
      {"aten.mm.default", [](Converter& c) -> V { return {c.op(OpKind::Mm, {c.tensor(0, "self"), c.tensor(1, "mat2")})}; }},
      {"aten.addmm.default",
       [](Converter& c) -> V {
         ValueId bias = c.tensor(0, "self");
         ValueId prod = c.scaled(c.op(OpKind::Mm, {c.tensor(1, "mat1"), c.tensor(2, "mat2")}), c.number(4, "alpha", 1.0));
         return {c.op(OpKind::Add, {c.scaled(bias, c.number(3, "beta", 1.0)), prod})};
       }},
      {"aten.t.default", [](Converter& c) { return unary(c, OpKind::T); }},
      {"aten.view.default",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         return {c.op(OpKind::View, {x}, Attrs{{"size", inferViewSize(c.ints(1, "size"), c.type(x).numel())}})};
       }},
      {"aten._unsafe_view.default", reshape},
      {"aten.reshape.default", reshape},
      {"aten.expand.default",
       [](Converter& c) -> V { return {c.op(OpKind::Expand, {c.tensor(0, "self")}, Attrs{{"size", c.ints(1, "size")}})}; }},
      {"aten.detach.default", [](Converter& c) { return unary(c, OpKind::Detach); }},
      {"aten.t_.default", [](Converter& c) { return unary(c, OpKind::TInplace); }},
      {"aten.transpose.int", [](Converter& c) { return transpose(c, OpKind::Transpose); }},
      {"aten.transpose_.default", [](Converter& c) { return transpose(c, OpKind::TransposeInplace); }},
      {"aten.unsqueeze.default",
       [](Converter& c) -> V { return {c.op(OpKind::Unsqueeze, {c.tensor(0, "self")}, Attrs{{"dim", c.ints(1, "dim")[0]}})}; }},
      {"aten.unsqueeze_.default",
       [](Converter& c) -> V { return {c.op(OpKind::UnsqueezeInplace, {c.tensor(0, "self")}, Attrs{{"dim", c.ints(1, "dim")[0]}})}; }},
      {"aten.squeeze.default", [](Converter& c) -> V { return {c.op(OpKind::Squeeze, {c.tensor(0, "self")}, Attrs{{"dim", Ints{}}})}; }},
      {"aten.squeeze.dim", [](Converter& c) -> V { return {c.op(OpKind::Squeeze, {c.tensor(0, "self")}, Attrs{{"dim", c.ints(1, "dim")}})}; }},
      {"aten.squeeze.dims", [](Converter& c) -> V { return {c.op(OpKind::Squeeze, {c.tensor(0, "self")}, Attrs{{"dim", c.ints(1, "dim")}})}; }},
      {"aten.squeeze_.default", [](Converter& c) -> V { return {c.op(OpKind::SqueezeInplace, {c.tensor(0, "self")}, Attrs{{"dim", Ints{}}})}; }},
      {"aten.squeeze_.dim", [](Converter& c) -> V { return {c.op(OpKind::SqueezeInplace, {c.tensor(0, "self")}, Attrs{{"dim", c.ints(1, "dim")}})}; }},
      {"aten.squeeze_.dims", [](Converter& c) -> V { return {c.op(OpKind::SqueezeInplace, {c.tensor(0, "self")}, Attrs{{"dim", c.ints(1, "dim")}})}; }},
      {"aten.slice.Tensor",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         // Python clamps slice bounds to the dim (x[1:] passes end=2^63-1).
         Attrs a{{"dim", c.integer(1, "dim", 0)},
                 {"start", c.clampedInteger(2, "start", 0)},
                 {"end", c.clampedInteger(3, "end", kMaxIntArg)},
                 {"step", c.integer(4, "step", 1)}};
         return {c.op(OpKind::Slice, {x}, a)};
       }},
      {"aten.select.int",
       [](Converter& c) -> V {
         return {c.op(OpKind::Select, {c.tensor(0, "self")},
                      Attrs{{"dim", c.integer(1, "dim")}, {"index", c.integer(2, "index")}})};
       }},
      {"aten.lift_fresh.default", [](Converter& c) { return unary(c, OpKind::Detach); }},
      {"aten.zero_.default", [](Converter& c) -> V { return fillInplace(c, 0.0); }},
      {"aten.fill_.Scalar", [](Converter& c) -> V { return fillInplace(c, c.number(1, "value")); }},
      {"aten.zeros_like.default", [](Converter& c) -> V { return {likeConstant(c, 0.0)}; }},
      {"aten.zeros.default", [](Converter& c) -> V { return {filled(c, 0.0, 1)}; }},
      {"aten.ones.default", [](Converter& c) -> V { return {filled(c, 1.0, 1)}; }},
      {"aten.full.default", [](Converter& c) -> V { return {filled(c, c.number(1, "fill_value"), 2)}; }},
      {"aten.ones_like.default", [](Converter& c) -> V { return {likeConstant(c, 1.0)}; }},
      {"aten.native_batch_norm.default", batchNorm},
      {"aten._native_batch_norm_legit.default", batchNorm},
      {"aten.set_.source_Tensor", setStorage},
      {"aten.set_.source_Storage", setStorage},
      {"aten.set_.source_Storage_storage_offset", setStorage},
      {"aotc.autograd_function", autogradFunction},
      // pointwise
      {"aten._to_copy.default",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         DType d = dtypeArg(c, 1, "dtype", c.type(x).dtype);
         return {c.op(OpKind::Cast, {x}, Attrs{{"dtype", std::string(dtypeName(d))}})};
       }},
      {"aten.relu_.default", [](Converter& c) { return inplaceOf(c, c.op(OpKind::Relu, {c.tensor(0, "self")})); }},
      {"aten.sigmoid_.default", [](Converter& c) { return inplaceOf(c, c.op(OpKind::Sigmoid, {c.tensor(0, "self")})); }},
      {"aten.tanh_.default", [](Converter& c) { return inplaceOf(c, c.op(OpKind::Tanh, {c.tensor(0, "self")})); }},
      {"aten.div_.Tensor", [](Converter& c) { ValueId x = c.tensor(0, "self"); return inplaceOf(c, bin(c, OpKind::Div, {x, c.operand(1, "other", x)})); }},
      {"aten.div_.Scalar", [](Converter& c) { ValueId x = c.tensor(0, "self"); return inplaceOf(c, bin(c, OpKind::Div, {x, c.operand(1, "other", x)})); }},
      {"aten.gelu.default",
       [](Converter& c) -> V {
         const json* a = c.arg(1, "approximate");
         return {gelu(c, c.tensor(0, "self"), a && a->is_string() ? a->get<std::string>() : "none")};
       }},
      {"aten.silu.default", [](Converter& c) -> V { return {silu(c, c.tensor(0, "self"))}; }},
      {"aten.silu_.default", [](Converter& c) { return inplaceOf(c, silu(c, c.tensor(0, "self"))); }},
      {"aten.leaky_relu.default", [](Converter& c) -> V { return {leakyRelu(c, c.tensor(0, "self"), c.number(1, "negative_slope", 0.01))}; }},
      {"aten.leaky_relu_.default", [](Converter& c) { return inplaceOf(c, leakyRelu(c, c.tensor(0, "self"), c.number(1, "negative_slope", 0.01))); }},
      {"aten.hardtanh.default", [](Converter& c) -> V { return {clampOp(c, c.tensor(0, "self"), c.number(1, "min_val", -1), c.number(2, "max_val", 1))}; }},
      {"aten.hardtanh_.default", [](Converter& c) { return inplaceOf(c, clampOp(c, c.tensor(0, "self"), c.number(1, "min_val", -1), c.number(2, "max_val", 1))); }},
      {"aten.hardswish.default", [](Converter& c) -> V { return {hardswish(c, c.tensor(0, "self"))}; }},
      {"aten.hardsigmoid.default", [](Converter& c) -> V { return {hardsigmoid(c, c.tensor(0, "self"))}; }},
      {"aten.hardsigmoid_.default", [](Converter& c) { return inplaceOf(c, hardsigmoid(c, c.tensor(0, "self"))); }},
      {"aten.hardswish_.default", [](Converter& c) { return inplaceOf(c, hardswish(c, c.tensor(0, "self"))); }},
      {"aten.clamp.default", [](Converter& c) -> V { return {clampOp(c, c.tensor(0, "self"), optNumber(c, 1, "min"), optNumber(c, 2, "max"))}; }},
      {"aten.clamp_.default", [](Converter& c) { return inplaceOf(c, clampOp(c, c.tensor(0, "self"), optNumber(c, 1, "min"), optNumber(c, 2, "max"))); }},
      {"aten.where.ScalarOther",
       [](Converter& c) -> V { ValueId a = c.tensor(1, "self"); return {c.op(OpKind::Where, {c.tensor(0, "condition"), a, c.operand(2, "other", a)})}; }},
      // reductions
      {"aten.amax.default", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {reduceOp(c, OpKind::Amax, x, c.ints(1, "dim", Ints{}), c.boolean(2, "keepdim", false))}; }},
      {"aten.amin.default", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {reduceOp(c, OpKind::Amin, x, c.ints(1, "dim", Ints{}), c.boolean(2, "keepdim", false))}; }},
      {"aten.argmax.default",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         Attrs a{{"keepdim", c.boolean(2, "keepdim", false)}};
         if (c.has(1, "dim")) a["dim"] = c.integer(1, "dim");
         return {c.op(OpKind::ArgMax, {x}, a)};
       }},
      {"aten.var.correction",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         return {variance(c, x, c.ints(1, "dim", Ints{}), c.number(2, "correction", 1.0), c.boolean(3, "keepdim", false))};
       }},
      {"aten.std.correction",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         return {c.op(OpKind::Sqrt, {variance(c, x, c.ints(1, "dim", Ints{}), c.number(2, "correction", 1.0), c.boolean(3, "keepdim", false))})};
       }},
      {"aten._softmax.default", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {softmaxLike(c, x, dimArg(c, 1, "dim", x), false)}; }},
      {"aten._log_softmax.default", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {softmaxLike(c, x, dimArg(c, 1, "dim", x), true)}; }},
      {"aten.logsumexp.default",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         Ints dims = c.ints(1, "dim");
         bool keep = c.boolean(2, "keepdim", false);
         ValueId m = c.op(OpKind::Detach, {reduceOp(c, OpKind::Amax, x, dims, true)});
         ValueId s = reduceOp(c, OpKind::Sum, c.op(OpKind::Exp, {bin(c, OpKind::Sub, {x, m})}), dims, true);
         ValueId r = bin(c, OpKind::Add, {c.op(OpKind::Log, {s}), m});
         return {keep ? r : reduceOp(c, OpKind::Sum, r, dims, false)};
       }},
      // matmul family, convolution, pooling, normalization, losses
      {"aten.bmm.default", [](Converter& c) -> V { return {c.op(OpKind::Bmm, {c.tensor(0, "self"), c.tensor(1, "mat2")})}; }},
      {"aten.baddbmm.default",
       [](Converter& c) -> V {
         ValueId in = c.tensor(0, "self");
         ValueId p = c.scaled(c.op(OpKind::Bmm, {c.tensor(1, "batch1"), c.tensor(2, "batch2")}), c.number(4, "alpha", 1.0));
         return {bin(c, OpKind::Add, {c.scaled(in, c.number(3, "beta", 1.0)), p})};
       }},
      {"aten.convolution.default", convolution},
      {"aten.scaled_dot_product_attention.default", sdpa},
      {"aten.max_pool2d_with_indices.default", maxPool},
      {"aten.avg_pool2d.default", avgPool},
      {"aten._adaptive_avg_pool2d.default", adaptiveAvgPool},
      {"aten.adaptive_avg_pool2d.default", adaptiveAvgPool},
      {"aten.native_layer_norm.default", layerNorm},
      {"aten.native_group_norm.default", groupNorm},
      {"aten.nll_loss_forward.default", nllLoss},
      {"aten.mse_loss.default",
       [](Converter& c) -> V {
         ValueId d = bin(c, OpKind::Sub, {c.tensor(0, "self"), c.tensor(1, "target")});
         ValueId sq = bin(c, OpKind::Mul, {d, d});
         int64_t red = c.integer(2, "reduction", 1);
         if (red == 0) return {sq};
         return {reduceOp(c, red == 1 ? OpKind::Mean : OpKind::Sum, sq, {}, false)};
       }},
      {"aten.native_dropout.default", dropout},
      {"aten.bernoulli_.float",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         ValueId m = randMask(c, c.number(1, "p", 0.5), c.type(x).sizes);
         return inplaceOf(c, c.op(OpKind::Cast, {m}, Attrs{{"dtype", std::string(dtypeName(c.type(x).dtype))}}));
       }},
      {"aten.embedding.default",
       [](Converter& c) -> V {
         ValueId w = c.tensor(0, "weight"), idx = c.tensor(1, "indices");
         Ints out = c.type(idx).sizes;
         out.push_back(c.type(w).sizes[1]);
         ValueId flat = c.op(OpKind::View, {c.type(idx).isContiguous() ? idx : c.op(OpKind::Clone, {idx})}, Attrs{{"size", Ints{-1}}});
         flat = c.op(OpKind::View, {flat}, Attrs{{"size", Ints{c.type(idx).numel()}}});
         return {c.op(OpKind::View, {c.op(OpKind::IndexSelect, {w, flat}, Attrs{{"dim", int64_t{0}}})}, Attrs{{"size", out}})};
       }},
      // shape ops
      {"aten.index_select.default",
       [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {c.op(OpKind::IndexSelect, {x, c.tensor(2, "index")}, Attrs{{"dim", dimArg(c, 1, "dim", x)}})}; }},
      {"aten.gather.default",
       [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {c.op(OpKind::Gather, {x, c.tensor(2, "index")}, Attrs{{"dim", dimArg(c, 1, "dim", x)}})}; }},
      {"aten.scatter_add.default",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         return {c.op(OpKind::ScatterAdd, {x, c.tensor(2, "index"), c.tensor(3, "src")}, Attrs{{"dim", dimArg(c, 1, "dim", x)}})};
       }},
      {"aten.index_add.default",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         ValueId src = c.scaled(c.tensor(3, "source"), c.number(4, "alpha", 1.0));
         return {c.op(OpKind::IndexAdd, {x, c.tensor(2, "index"), src}, Attrs{{"dim", dimArg(c, 1, "dim", x)}})};
       }},
      {"aten.cat.default", catOp},
      {"aten.stack.default", stack},
      {"aten.split.Tensor", split},
      {"aten.split_with_sizes.default",
       [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return splitSizes(c, x, dimArg(c, 2, "dim", x), c.ints(1, "split_sizes")); }},
      {"aten.unbind.int",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         int64_t dim = dimArg(c, 1, "dim", x);
         V out;
         for (int64_t i = 0; i < c.type(x).sizes[static_cast<size_t>(dim)]; ++i)
           out.push_back(c.op(OpKind::Select, {x}, Attrs{{"dim", dim}, {"index", i}}));
         return out;
       }},
      {"aten.narrow.default",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         int64_t s = c.integer(2, "start"), n = c.integer(3, "length");
         return {c.op(OpKind::Slice, {x}, Attrs{{"dim", dimArg(c, 1, "dim", x)}, {"start", s}, {"end", s + n}, {"step", int64_t{1}}})};
       }},
      {"aten.permute.default", [](Converter& c) -> V { return {c.op(OpKind::Permute, {c.tensor(0, "self")}, Attrs{{"dims", c.ints(1, "dims")}})}; }},
      {"aten._reshape_alias.default", reshape},
      {"aten.constant_pad_nd.default",
       [](Converter& c) -> V { return {c.op(OpKind::Pad, {c.tensor(0, "self")}, Attrs{{"pad", c.ints(1, "pad")}, {"value", c.number(2, "value", 0.0)}})}; }},
      // alias is a view that keeps the gradient (not detach).
      {"aten.alias.default",
       [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {c.op(OpKind::View, {x}, Attrs{{"size", c.type(x).sizes}})}; }},
      {"aten.as_strided.default", asStrided},
      {"aten.unfold.default", unfoldOp},
      {"aten.as_strided_.default", asStrided},
      {"aten.empty_like.default", [](Converter& c) -> V { return {likeConstant(c, 0.0)}; }},
      {"aten.empty.memory_format", [](Converter& c) -> V { return {filled(c, 0.0, 1)}; }},
      {"aten.full_like.default",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         TensorType t = c.type(x);
         t.dtype = dtypeArg(c, 2, "dtype", t.dtype);
         return {constantLike(c, c.number(1, "fill_value"), t)};
       }},
      {"aten.scalar_tensor.default",
       [](Converter& c) -> V { return {constantLike(c, c.number(0, "s"), TensorType::contiguous(dtypeArg(c, 1, "dtype", DType::F32), {}))}; }},
      // arange(end), arange(start, end), arange(start, end, step): the
      // result is int64 when every bound given is an integer, else the
      // default float dtype (ATen's rule), unless dtype= says otherwise.
      {"aten.arange.start_step", [](Converter& c) { return arange(c, 3); }},
      {"aten.arange.start", [](Converter& c) { return arange(c, 2); }},
      {"aten.hann_window.default", [](Converter& c) { return window(c, {0.5, -0.5}, false, 1); }},
      {"aten.hann_window.periodic", [](Converter& c) { return window(c, {0.5, -0.5}, false, 2); }},
      {"aten.hamming_window.default", [](Converter& c) { return window(c, {0.54, -0.46}, false, 1); }},
      {"aten.hamming_window.periodic", [](Converter& c) { return window(c, {0.54, -0.46}, false, 2); }},
      {"aten.hamming_window.periodic_alpha", [](Converter& c) { return window(c, {0.54, -0.46}, false, 3); }},
      {"aten.hamming_window.periodic_alpha_beta", [](Converter& c) { return window(c, {0.54, -0.46}, false, 4); }},
      {"aten.blackman_window.default", [](Converter& c) { return window(c, {0.42, -0.5, 0.08}, false, 1); }},
      {"aten.blackman_window.periodic", [](Converter& c) { return window(c, {0.42, -0.5, 0.08}, false, 2); }},
      {"aten.bartlett_window.default", [](Converter& c) { return window(c, {}, true, 1); }},
      {"aten.bartlett_window.periodic", [](Converter& c) { return window(c, {}, true, 2); }},
      {"aten.arange.default", [](Converter& c) { return arange(c, 1); }},
      {"aten.copy_.default",
       [](Converter& c) -> V { return {c.op(OpKind::CopyInplace, {c.tensor(0, "self"), c.tensor(1, "src")})}; }},
      // ---- Core ATen breadth (issue 12)
      {"aten.fmod.Tensor", [](Converter& c) { return binaryChecked(c, OpKind::Fmod, "fmod"); }},
      {"aten.fmod.Scalar", [](Converter& c) { return binaryChecked(c, OpKind::Fmod, "fmod"); }},
      {"aten.remainder.Tensor", [](Converter& c) { return binaryChecked(c, OpKind::Remainder, "remainder"); }},
      {"aten.remainder.Scalar", [](Converter& c) { return binaryChecked(c, OpKind::Remainder, "remainder"); }},
      {"aten.floor_divide.default", [](Converter& c) { return binaryChecked(c, OpKind::DivFloor, "floor division"); }},
      {"aten.div.Tensor_mode", divMode},
      {"aten.div.Scalar_mode", divMode},
      {"aten.bitwise_not.default",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         return {c.op(c.type(x).dtype == DType::Bool ? OpKind::LogicalNot : OpKind::BitwiseNot, {x})};
       }},
      {"aten.logical_xor.default",
       [](Converter& c) -> V {
         ValueId a = c.tensor(0, "self"), b = c.tensor(1, "other");
         ValueId na = c.type(a).dtype == DType::Bool ? a : bin(c, OpKind::Ne, {a, sc(c, 0.0, a)});
         ValueId nb = c.type(b).dtype == DType::Bool ? b : bin(c, OpKind::Ne, {b, sc(c, 0.0, b)});
         return {bin(c, OpKind::Ne, {na, nb})};
       }},
      {"aten.pow.Scalar", powScalarBase},
      {"aten.clamp.Tensor", clampTensor},
      {"aten.clamp_min.default", [](Converter& c) -> V { return {clampOp(c, c.tensor(0, "self"), c.number(1, "min"), std::nullopt)}; }},
      {"aten.clamp_max.default", [](Converter& c) -> V { return {clampOp(c, c.tensor(0, "self"), std::nullopt, c.number(1, "max"))}; }},
      {"aten.clamp_min.Tensor", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); ValueId lo = c.tensor(1, "min"); return {c.op(OpKind::Where, {bin(c, OpKind::Lt, {x, lo}), lo, x})}; }},
      {"aten.clamp_max.Tensor", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); ValueId hi = c.tensor(1, "max"); return {c.op(OpKind::Where, {bin(c, OpKind::Gt, {x, hi}), hi, x})}; }},
      {"aten.masked_fill.Scalar", [](Converter& c) -> V { return {maskedFill(c)}; }},
      {"aten.masked_fill.Tensor", [](Converter& c) -> V { return {maskedFill(c)}; }},
      {"aten.elu.default",
       [](Converter& c) -> V {
         return {elu(c, c.tensor(0, "self"), c.number(1, "alpha", 1.0), c.number(2, "scale", 1.0), c.number(3, "input_scale", 1.0))};
       }},
      {"aten.celu.default", [](Converter& c) -> V { return {celu(c, c.tensor(0, "self"), c.number(1, "alpha", 1.0))}; }},
      {"aten.softplus.default",
       [](Converter& c) -> V { return {softplus(c, c.tensor(0, "self"), c.number(1, "beta", 1.0), c.number(2, "threshold", 20.0))}; }},
      {"aten.mish.default",
       [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {bin(c, OpKind::Mul, {x, c.op(OpKind::Tanh, {softplus(c, x, 1.0, 20.0)})})}; }},
      {"aten.log_sigmoid_forward.default",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         // (output, buffer): the buffer only feeds log_sigmoid_backward.
         return {logSigmoid(c, x), constantLike(c, 0.0, c.type(x))};
       }},
      {"aten.logaddexp.default", [](Converter& c) -> V { return {logaddexp(c, c.tensor(0, "self"), c.tensor(1, "other"))}; }},
      {"aten.xlogy.Tensor", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {xlogy(c, x, c.operand(1, "other", x))}; }},
      {"aten.xlogy.Scalar_Other", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {xlogy(c, x, c.operand(1, "other", x))}; }},
      {"aten.prelu.default", [](Converter& c) -> V { return {prelu(c, c.tensor(0, "self"), c.tensor(1, "weight"))}; }},
      {"aten._prelu_kernel.default", [](Converter& c) -> V { return {prelu(c, c.tensor(0, "self"), c.tensor(1, "weight"))}; }},
      {"aten.max.dim", [](Converter& c) { return maxMinDim(c, true); }},
      {"aten.min.dim", [](Converter& c) { return maxMinDim(c, false); }},
      {"aten.max.default", [](Converter& c) -> V { return {reduceOp(c, OpKind::Amax, c.tensor(0, "self"), {}, false)}; }},
      {"aten.min.default", [](Converter& c) -> V { return {reduceOp(c, OpKind::Amin, c.tensor(0, "self"), {}, false)}; }},
      {"aten.argmin.default", argmin},
      {"aten.any.default", [](Converter& c) -> V { return {anyOf(c, c.tensor(0, "self"), {}, false)}; }},
      {"aten.any.dim", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {anyOf(c, x, {dimArg(c, 1, "dim", x)}, c.boolean(2, "keepdim", false))}; }},
      {"aten.any.dims", [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {anyOf(c, x, c.ints(1, "dim", Ints{}), c.boolean(2, "keepdim", false))}; }},
      {"aten.var.dim",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         return {variance(c, x, c.ints(1, "dim", Ints{}), c.boolean(2, "unbiased", true) ? 1.0 : 0.0, c.boolean(3, "keepdim", false))};
       }},
      {"aten.var.default",
       [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {variance(c, x, {}, c.boolean(1, "unbiased", true) ? 1.0 : 0.0, false)}; }},
      {"aten.repeat.default", [](Converter& c) -> V { return {repeatOp(c, c.tensor(0, "self"), c.ints(1, "repeats"))}; }},
      {"aten.flip.default", [](Converter& c) -> V { return {flipOp(c, c.tensor(0, "self"), c.ints(1, "dims"))}; }},
      {"aten.roll.default", [](Converter& c) -> V { return {rollOp(c, c.tensor(0, "self"), c.ints(1, "shifts"), c.ints(2, "dims", Ints{}))}; }},
      {"aten.triu.default", [](Converter& c) -> V { return {triangle(c, c.tensor(0, "self"), c.integer(1, "diagonal", 0), true)}; }},
      {"aten.tril.default", [](Converter& c) -> V { return {triangle(c, c.tensor(0, "self"), c.integer(1, "diagonal", 0), false)}; }},
      {"aten.new_zeros.default", [](Converter& c) -> V { return {newFilled(c, 0.0, 2)}; }},
      {"aten.new_ones.default", [](Converter& c) -> V { return {newFilled(c, 1.0, 2)}; }},
      {"aten.new_empty.default", [](Converter& c) -> V { return {newFilled(c, 0.0, 2)}; }},
      {"aten.new_full.default", [](Converter& c) -> V { return {newFilled(c, c.number(2, "fill_value"), 3)}; }},
      {"aten.empty_strided.default", [](Converter& c) -> V { return {filled(c, 0.0, 2)}; }},
      {"aten.fill.Scalar", [](Converter& c) -> V { return {constantLike(c, c.number(1, "value"), c.type(c.tensor(0, "self")))}; }},
      {"aten.fill.Tensor",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self"), v = c.tensor(1, "value");
         if (c.type(v).rank() != 0) c.fail("fill: the value must be a 0-dim tensor");
         if (c.type(v).dtype != c.type(x).dtype) v = c.op(OpKind::Cast, {v}, Attrs{{"dtype", std::string(dtypeName(c.type(x).dtype))}});
         return {c.op(OpKind::Expand, {v}, Attrs{{"size", c.type(x).sizes}})};
       }},
      {"aten.copy.default",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self"), src = c.tensor(1, "src");
         if (c.type(src).dtype != c.type(x).dtype) src = c.op(OpKind::Cast, {src}, Attrs{{"dtype", std::string(dtypeName(c.type(x).dtype))}});
         if (c.type(src).sizes != c.type(x).sizes) src = c.op(OpKind::Expand, {src}, Attrs{{"size", c.type(x).sizes}});
         return {c.op(OpKind::Clone, {src})};
       }},
      {"aten.slice_scatter.default",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         Attrs a{{"dim", dimArg(c, 2, "dim", x)}, {"start", c.clampedInteger(3, "start", 0)},
                 {"end", c.clampedInteger(4, "end", kMaxIntArg)}, {"step", c.integer(5, "step", 1)}};
         return {c.op(OpKind::SliceScatter, {x, c.tensor(1, "src")}, a)};
       }},
      {"aten.select_scatter.default",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         return {c.op(OpKind::SelectScatter, {x, c.tensor(1, "src")}, Attrs{{"dim", dimArg(c, 2, "dim", x)}, {"index", c.integer(3, "index")}})};
       }},
      {"aten.unsafe_split.Tensor", split},
      {"aten.unsafe_split_with_sizes.default",
       [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return splitSizes(c, x, dimArg(c, 2, "dim", x), c.ints(1, "split_sizes")); }},
      {"aten.index.Tensor", indexTensor},
      {"aten.diagonal.default",
       [](Converter& c) -> V {
         Attrs a{{"offset", c.integer(1, "offset", 0)}, {"dim1", c.integer(2, "dim1", 0)}, {"dim2", c.integer(3, "dim2", 1)}};
         return {c.op(OpKind::Diagonal, {c.tensor(0, "self")}, a)};
       }},
      {"aten.diagonal_scatter.default",
       [](Converter& c) -> V {
         Attrs a{{"offset", c.integer(2, "offset", 0)}, {"dim1", c.integer(3, "dim1", 0)}, {"dim2", c.integer(4, "dim2", 1)}};
         ValueId x = c.tensor(0, "self");
         ValueId src = c.tensor(1, "src");
         if (!c.type(x).isContiguous()) x = c.op(OpKind::Clone, {x});
         if (!c.type(src).isContiguous()) src = c.op(OpKind::Clone, {src});
         return {c.op(OpKind::DiagonalScatter, {x, src}, a)};
       }},
      {"aten.diag.default",
       [](Converter& c) -> V {
         // 2-D: a copy of the diagonal; 1-D: a square matrix holding it.
         ValueId x = c.tensor(0, "self");
         int64_t k = c.integer(1, "diagonal", 0);
         const TensorType t = c.type(x);
         if (t.rank() == 2) return {c.op(OpKind::Clone, {c.op(OpKind::Diagonal, {x}, Attrs{{"offset", k}})})};
         if (t.rank() != 1) c.fail("diag: the input must be 1-D or 2-D");
         const int64_t n = t.sizes[0] + (k < 0 ? -k : k);
         ValueId z = constantLike(c, 0.0, TensorType::contiguous(t.dtype, {n, n}));
         return {c.op(OpKind::DiagonalScatter, {z, t.isContiguous() ? x : c.op(OpKind::Clone, {x})}, Attrs{{"offset", k}})};
       }},
      {"aten.upsample_nearest2d.vec", upsampleNearest<true>},
      {"aten.upsample_nearest2d.default", upsampleNearest<false>},
      {"aten.upsample_bilinear2d.vec", upsampleBilinear<true>},
      {"aten.upsample_bilinear2d.default", upsampleBilinear<false>},
      {"aten.reflection_pad1d.default", [](Converter& c) { return indexPad(c, true, 1); }},
      {"aten.reflection_pad2d.default", [](Converter& c) { return indexPad(c, true, 2); }},
      {"aten.reflection_pad3d.default", [](Converter& c) { return indexPad(c, true, 3); }},
      {"aten.replication_pad1d.default", [](Converter& c) { return indexPad(c, false, 1); }},
      {"aten.replication_pad2d.default", [](Converter& c) { return indexPad(c, false, 2); }},
      {"aten.replication_pad3d.default", [](Converter& c) { return indexPad(c, false, 3); }},
      {"aten.pixel_shuffle.default", [](Converter& c) -> V { return {pixelShuffle(c, c.tensor(0, "self"), c.integer(1, "upscale_factor"), false)}; }},
      {"aten.pixel_unshuffle.default", [](Converter& c) -> V { return {pixelShuffle(c, c.tensor(0, "self"), c.integer(1, "downscale_factor"), true)}; }},
      {"aten.binary_cross_entropy_with_logits.default", bceWithLogits},
      {"aten.smooth_l1_loss.default", [](Converter& c) { return smoothL1(c, false); }},
      {"aten.huber_loss.default", [](Converter& c) { return smoothL1(c, true); }},
      {"aten.avg_pool2d_backward.default", avgPoolBackward},
      {"aten.max_pool2d_with_indices_backward.default", maxPoolBackward},
      {"aten._adaptive_avg_pool2d_backward.default", adaptiveAvgPoolBackward},
      {"aten.convolution_backward.default", convolutionBackward},
      {"aten.mse_loss_backward.default", mseLossBackward},
      {"aten.embedding_dense_backward.default", embeddingBackward},
      {"aten.avg_pool1d.default", [](Converter& c) { return pool1d(c, false); }},
      {"aten.avg_pool3d.default", avgPool3d},
      {"aten.max_pool3d_with_indices.default", maxPool3d},
      {"aten._adaptive_avg_pool3d.default", adaptiveAvgPool3d},
      {"aten.adaptive_avg_pool3d.default", adaptiveAvgPool3d},
      {"aten.adaptive_avg_pool1d.default", [](Converter& c) { return pool1d(c, true); }},
      {"aten.index_put.default", indexPut},
      {"aten._index_put_impl.default", indexPut},
      {"aten.cumsum.default", cumsum},
      {"aten.rand.default", [](Converter& c) { return randomOp(c, false, false); }},
      {"aten.randn.default", [](Converter& c) { return randomOp(c, true, false); }},
      {"aten.rand_like.default", [](Converter& c) { return randomOp(c, false, true); }},
      {"aten.randn_like.default", [](Converter& c) { return randomOp(c, true, true); }},
      {"aten.randperm.default",
       [](Converter& c) -> V {
         int64_t n = c.integer(0, "n");
         if (n < 0) c.fail("randperm: n must be non-negative");
         DType d = dtypeArg(c, 1, "dtype", DType::I64);
         if (n == 0) return {constantLike(c, 0.0, TensorType::contiguous(d, {0}))};
         // A uniformly random permutation: the order of n random keys of 48
         // bits (two 24-bit draws), so ties are negligible.
         ValueId hi = randUniform(c, {n}, DType::F64);
         ValueId lo = randUniform(c, {n}, DType::F64);
         ValueId key = bin(c, OpKind::Add, {hi, c.scaled(lo, 1.0 / 16777216.0)});
         V s = c.ops(OpKind::Sort, {key}, Attrs{{"dim", int64_t{0}}}, {});
         return {d == DType::I64 ? s[1] : c.op(OpKind::Cast, {s[1]}, Attrs{{"dtype", std::string(dtypeName(d))}})};
       }},
      {"aten.scatter.src", [](Converter& c) { return scatterOp(c, false); }},
      {"aten.scatter.value", [](Converter& c) { return scatterOp(c, true); }},
      {"aten.scatter_reduce.two", scatterReduce},
      {"aten.masked_scatter.default", maskedScatter},
      {"aten.native_layer_norm_backward.default", layerNormBackward},
      {"aten.native_group_norm_backward.default", groupNormBackward},
      {"aten._cdist_forward.default", cdist},
      {"aten.grid_sampler_2d.default", gridSampler2d},
      {"aten.grid_sampler.default", gridSampler2d},
      {"aten._embedding_bag.default", embeddingBag},
      {"aten._embedding_bag_forward_only.default", embeddingBag},
      {"aten.im2col.default", im2col},
      {"aten.col2im.default", col2im},
      {"aten.cdist.default", cdist},
      {"aten._pdist_forward.default", pdist},
      {"aten.pdist.default", pdist},
      {"aten._native_batch_norm_legit_no_training.default", [](Converter& c) { return batchNormVariant(c, false); }},
      {"aten._native_batch_norm_legit.no_stats", [](Converter& c) { return batchNormVariant(c, true); }},
      {"aten.sort.default", [](Converter& c) { return sortOp(c, 1, 2); }},
      {"aten.sort.stable", [](Converter& c) { return sortOp(c, 2, 3); }},
      {"aten.topk.default", topk},
      {"aten.argsort.default", [](Converter& c) -> V { return {sortOp(c, 1, 2)[1]}; }},
      {"aten.argsort.stable", [](Converter& c) -> V { return {sortOp(c, 2, 3)[1]}; }},
      {"aten.nonzero.default", dataDependent},
      {"aten.resize_.default",
       [](Converter& c) -> V {
         // A resize to the tensor's own shape (what out= wrappers do) is a
         // no-op; any other changes its storage: a larger one exposes
         // uninitialized memory, a smaller one reinterprets it.
         ValueId x = c.tensor(0, "self");
         Ints size = c.ints(1, "size");
         if (size != c.type(x).sizes)
           c.fail(cat("resize_ from ", TensorType::contiguous(c.type(x).dtype, c.type(x).sizes).str(), " to ", json(size).dump(),
                      " changes the tensor's storage, which aotc does not support (only a resize to the tensor's own shape); "
                      "use reshape, or a new tensor (new_zeros)"));
         if (c.has(2, "memory_format")) c.fail("resize_: memory_format is not supported");
         return {x};
       }},
      {"aten._local_scalar_dense.default", dataDependent},
      {"aten.masked_select.default", dataDependent},
      {"aten.unique.default", dataDependent},
      {"aten._unique2.default", dataDependent},
      {"aten.item.default", dataDependent},
  });
  return table;
}

// Note [Generic spellings]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Three families of ATen spellings are derived from the functional op rather
// than listed one by one (issue 12):
//  * in-place `aten.op_.ov` is `aten.op.ov` plus copy_ into self (with ATen's
//    in-place casting rule: a floating result cannot go into an integer self,
//    and the result must have self's shape);
//  * `out=` overloads (`aten.op.out`, `aten.op.ov_out`) are the functional
//    form plus copy_ into `out` (out must already have the result's shape:
//    resizing `out` is refused);
//  * `aten.view_op_copy.ov` (functionalized traces: view_copy, expand_copy,
//    permute_copy, ...) is the view op followed by a copy (clone);
//  * `aten._foreach_op[_].ov` unrolls into the per-tensor op, element by
//    element of its list arguments (`List` -> `.Tensor`, `Scalar`/`ScalarList`
//    -> `.Scalar`).
// An op with its own entry in the table (t_, squeeze_, copy_, ...) is never
// derived.
namespace spelling {

struct Parsed {
  std::string name, overload;  ///< "aten.add_", "Tensor"
};
std::optional<Parsed> parse(const std::string& target) {
  size_t dot = target.rfind('.');
  if (target.rfind("aten.", 0) != 0 || dot == std::string::npos || dot <= 5) return std::nullopt;
  return Parsed{target.substr(0, dot), target.substr(dot + 1)};
}
bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
/// The functional spelling an in-place target derives from, if any.
std::optional<std::string> inplaceBase(const std::string& target) {
  auto p = parse(target);
  if (!p || !endsWith(p->name, "_") || p->name.rfind("aten._foreach_", 0) == 0) return std::nullopt;
  std::string f = p->name.substr(0, p->name.size() - 1) + "." + p->overload;
  if (converters().count(f)) return f;
  return std::nullopt;
}
/// The functional spelling an out= target derives from, if any.
std::optional<std::string> outBase(const std::string& target) {
  auto p = parse(target);
  if (!p) return std::nullopt;
  std::vector<std::string> cands;
  if (p->overload == "out") cands = {p->name + ".default", p->name + ".Tensor"};
  else if (endsWith(p->overload, "_out")) cands = {p->name + "." + p->overload.substr(0, p->overload.size() - 4)};
  for (const std::string& f : cands)
    if (converters().count(f)) return f;
  return std::nullopt;
}
/// The view op a `*_copy` target copies, if any.
std::optional<std::string> copyBase(const std::string& target) {
  auto p = parse(target);
  if (!p || !endsWith(p->name, "_copy")) return std::nullopt;
  std::string f = p->name.substr(0, p->name.size() - 5) + "." + p->overload;
  if (converters().count(f)) return f;
  return std::nullopt;
}
/// The per-element spellings of a _foreach target (first that converts wins).
std::vector<std::string> foreachElement(const std::string& target) {
  auto p = parse(target);
  if (!p || p->name.rfind("aten._foreach_", 0) != 0) return {};
  std::string op = "aten." + p->name.substr(std::string("aten._foreach_").size());
  if (p->overload == "List") return {op + ".Tensor"};
  if (p->overload == "Scalar" || p->overload == "ScalarList") return {op + ".Scalar", op + ".Tensor"};
  if (p->overload == "Tensor") return {op + ".Tensor"};
  return {op + "." + p->overload};
}

}  // namespace spelling

// Note [Shape computations]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// `aten.sym_size.int`, `sym_stride.int`, `sym_numel`, `sym_storage_offset`
// and `sym_is_contiguous` (and Python integer arithmetic on their results,
// `_operator.add` ...) compute a number, not a tensor.  With static shapes
// each is known when the graph is read: convertBody evaluates it and puts the
// literal in place of every later reference to it, so `view(x, [s0, -1])`
// reads `view(x, [4, -1])`.  Strides, storage offset and contiguity are
// PyTorch's as the graph recorded them (`meta.stride`) when it did, else the
// IR's layout of the value.
bool isShapeComputation(const std::string& target) {
  static const std::set<std::string> k{"aten.sym_size.int", "aten.sym_stride.int", "aten.sym_numel.default",
                                       "aten.sym_storage_offset.default", "aten.sym_is_contiguous.default",
                                       "_operator.add", "_operator.sub", "_operator.mul", "_operator.floordiv",
                                       "_operator.mod", "_operator.neg", "_operator.eq", "_operator.ne",
                                       "_operator.lt", "_operator.le", "_operator.gt", "_operator.ge"};
  return k.count(target) > 0;
}

bool complexTarget(const std::string& target);

bool knownTarget(const std::string& target, int depth = 0) {
  if (converters().count(target) || isShapeComputation(target) || complexTarget(target)) return true;
  if (depth > 2) return false;
  if (spelling::inplaceBase(target) || spelling::outBase(target) || spelling::copyBase(target)) return true;
  for (const std::string& e : spelling::foreachElement(target))
    if (knownTarget(e, depth + 1)) return true;
  return false;
}

/// copy_ of `result` into `dst` for a derived in-place or out= spelling.
V copyInto(Converter& c, ValueId dst, ValueId result, const char* what) {
  const TensorType d = c.type(dst);
  const TensorType r = c.type(result);
  if (r.sizes != d.sizes)
    c.fail(cat(what, ": the result ", TensorType::contiguous(r.dtype, r.sizes).str(), " does not have the shape of ",
               TensorType::contiguous(d.dtype, d.sizes).str(), what[0] == 'o' ? " (resizing out= is not supported)" : ""));
  if (r.dtype != d.dtype) {
    if (isFloating(r.dtype) && !isFloating(d.dtype))
      c.fail(cat(what, ": result type ", dtypeName(r.dtype), " can't be cast to the desired output type ", dtypeName(d.dtype)));
    result = c.op(OpKind::Cast, {result}, Attrs{{"dtype", std::string(dtypeName(d.dtype))}});
  }
  return {c.op(OpKind::CopyInplace, {dst, result})};
}

std::optional<V> convertComplex(Converter& c, const std::string& target);

V convertTarget(Converter& c, const std::string& target, int depth = 0) {
  if (std::optional<V> r = convertComplex(c, target)) return *r;
  auto it = converters().find(target);
  if (it != converters().end()) return it->second(c);
  if (auto f = spelling::inplaceBase(target)) {
    V r = converters().at(*f)(c);
    if (r.size() != 1) c.fail("in-place form of a multi-result op");
    return copyInto(c, c.tensor(0, "self"), r[0], "in-place op");
  }
  if (auto f = spelling::copyBase(target)) {
    V r = converters().at(*f)(c);
    for (ValueId& v : r) v = c.op(OpKind::Clone, {v});
    return r;
  }
  if (auto f = spelling::outBase(target)) {
    V r = converters().at(*f)(c);
    if (r.size() != 1) c.fail("out= form of a multi-result op is not supported");
    if (!c.isTensor(SIZE_MAX, "out")) c.fail("out= overload without an `out` tensor");
    return copyInto(c, c.tensor(SIZE_MAX, "out"), r[0], "out=");
  }
  std::vector<std::string> elems = spelling::foreachElement(target);
  if (!elems.empty() && depth < 2) {
    const json& node = c.node();
    size_t n = SIZE_MAX;
    auto scan = [&](const json& a) {
      if (a.is_array() && (n == SIZE_MAX || a.size() == n)) n = a.size();
      else if (a.is_array()) c.fail("_foreach: list arguments have different lengths");
    };
    for (const json& a : node["args"]) scan(a);
    if (node.contains("kwargs"))
      for (const auto& [k, a] : node["kwargs"].items()) scan(a);
    if (n == SIZE_MAX) c.fail("_foreach op without a list argument");
    std::string elem;
    for (const std::string& e : elems)
      if (knownTarget(e, depth + 1)) {
        elem = e;
        break;
      }
    if (elem.empty()) c.fail("no per-tensor op for " + target);
    bool inplace = spelling::parse(target)->name.back() == '_';
    V out;
    for (size_t i = 0; i < n; ++i) {
      json e = node;
      e["target"] = elem;
      for (json& a : e["args"])
        if (a.is_array()) a = json(a[i]);
      if (e.contains("kwargs"))
        for (auto& [k, a] : e["kwargs"].items())
          if (a.is_array()) a = json(a[i]);
      Converter ce = c.sub(e);
      V r = convertTarget(ce, elem, depth + 1);
      if (!inplace) out.insert(out.end(), r.begin(), r.end());
    }
    return out;
  }
  c.fail("unsupported op " + target);
}

// Note [Complex values]
// ~~~~~~~~~~~~~~~~~~~~~
// A complex tensor is held as real (re, im) pairs (Note [Complex tensors as
// pairs] in aotc/ops/decompose.h); the Converter's complex set names the
// values that are pairs.  Only the rules below may read one: every other op
// given a complex tensor is refused naming it (treating its pairs as a real
// tensor would be a wrong answer), and a complex graph result is refused too
// (aotc's results are real: return torch.view_as_real(z)).  A rule's dims
// count the complex tensor's dims, so they are wrapped against its rank before
// they reach the pair tensor, whose extra dim is always last.  Meta records
// complex64 for f32 pairs and complex128 for f64 pairs.
namespace cplx {

struct Rule {
  bool always;  ///< applies to real arguments too (it makes a complex value)
  bool result;  ///< its results are complex pairs
  std::function<V(Converter&)> fn;
};

bool mentions(const json& a, const Converter& c) {
  if (a.is_object() && a.contains("node") && a["node"].is_string()) {
    auto it = c.env().find(a["node"].get<std::string>());
    if (it == c.env().end()) return false;
    for (ValueId v : it->second)
      if (v != kNoValue && c.isComplex(v)) return true;
    return false;
  }
  if (a.is_array() || a.is_object())
    for (const json& x : a)
      if (mentions(x, c)) return true;
  return false;
}

/// The complex tensor argument i.
ValueId complexArg(Converter& c, size_t i, const char* kw) {
  ValueId z = c.tensor(i, kw);
  if (!c.isComplex(z)) c.fail(cat("argument ", i, " must be a complex tensor here"));
  return z;
}
int64_t rankOf(Converter& c, ValueId z) { return c.type(z).rank() - (c.isComplex(z) ? 1 : 0); }

ValueId part(Converter& c, ValueId z, int64_t i) {
  return c.op(OpKind::Select, {z}, Attrs{{"dim", c.type(z).rank() - 1}, {"index", i}});
}
/// A real operand as pairs with a zero imaginary part.
ValueId asPairs(Converter& c, ValueId x) { return c.isComplex(x) ? x : pairOf(c, x, c.zeros(c.type(x))); }
/// A real operand shaped to multiply pairs elementwise.
ValueId perPair(Converter& c, ValueId x) { return c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", c.type(x).rank()}}); }

/// The same node with the complex dims in `dimArgs` wrapped to their
/// non-negative spelling, converted by the real rule: on pairs, a
/// non-negative dim names the same dim, and the pair dim stays last.
V wrappedDims(Converter& c, const std::string& target, std::vector<std::pair<size_t, const char*>> dimArgs, int64_t extra = 0) {
  ValueId z = complexArg(c, 0, "self");
  const int64_t r = rankOf(c, z) + extra;
  json node = c.node();
  for (auto [i, kw] : dimArgs) {
    json* a = i < node["args"].size() ? &node["args"][i]
              : (node.contains("kwargs") && node["kwargs"].contains(kw) ? &node["kwargs"][kw] : nullptr);
    if (!a || a->is_null()) continue;
    auto wrap = [&](json& d) {
      if (!d.is_number_integer()) c.fail(cat("argument ", i, " must be a dim, got ", d.dump()));
      d = wrapDim(c.checkedInt(d, i), std::max<int64_t>(r, 1));
    };
    if (a->is_array())
      for (json& d : *a) wrap(d);
    else
      wrap(*a);
  }
  Converter inner = c.sub(node);
  inner.setComplex(nullptr);  // the real rule sees the pairs as they are
  return converters().at(target)(inner);
}

/// Complex dims for a reduction: the listed ones wrapped, or all of them.
Ints reductionDims(Converter& c, ValueId z) {
  const int64_t r = rankOf(c, z);
  Ints dims = c.ints(1, "dim", Ints{});
  if (dims.empty())
    for (int64_t d = 0; d < r; ++d) dims.push_back(d);
  for (int64_t& d : dims) d = wrapDim(d, std::max<int64_t>(r, 1));
  return dims;
}

/// fft's normalization enum: 0 none, 1 by 1/sqrt(n), 2 by 1/n, n the
/// product of the signal sizes.
ValueId normalized(Converter& c, ValueId v, int64_t mode, int64_t n) {
  if (mode < 0 || mode > 2) c.fail(cat("normalization must be 0, 1 or 2, got ", mode));
  if (mode == 0) return v;
  return c.scaled(v, mode == 1 ? 1.0 / std::sqrt(static_cast<double>(n)) : 1.0 / static_cast<double>(n));
}
Ints fftDims(Converter& c, int64_t rank) {
  Ints dims = c.ints(1, "dim");
  if (dims.empty()) c.fail("a Fourier transform over no dims");
  for (int64_t& d : dims) d = wrapDim(d, std::max<int64_t>(rank, 1));
  if (std::set<int64_t>(dims.begin(), dims.end()).size() != dims.size()) c.fail("a dim is listed twice");
  return dims;
}

V r2c(Converter& c) {
  ValueId x = c.tensor(0, "self");
  if (c.isComplex(x)) c.fail("_fft_r2c takes a real tensor; this one is complex");
  if (c.type(x).dtype != DType::F32 && c.type(x).dtype != DType::F64)
    c.fail(cat("_fft_r2c of ", dtypeName(c.type(x).dtype), ": aotc holds complex64 and complex128 only (f32 or f64 input)"));
  Ints dims = fftDims(c, c.type(x).rank());
  int64_t n = 1;
  for (int64_t d : dims) n = mulSize(n, c.type(x).sizes[static_cast<size_t>(d)]);
  // ATen: one-sided r2c over the last listed dim, then c2c over the others.
  ValueId z = dftRealToComplex(c, x, dims.back(), c.boolean(3, "onesided", true));
  for (size_t i = 0; i + 1 < dims.size(); ++i) z = dftComplexToComplex(c, z, dims[i], true);
  return {normalized(c, z, c.integer(2, "normalization"), n)};
}

V c2c(Converter& c) {
  ValueId z = complexArg(c, 0, "self");
  Ints dims = fftDims(c, rankOf(c, z));
  int64_t n = 1;
  for (int64_t d : dims) n = mulSize(n, c.type(z).sizes[static_cast<size_t>(d)]);
  bool forward = c.boolean(3, "forward", true);
  for (int64_t d : dims) z = dftComplexToComplex(c, z, d, forward);
  return {normalized(c, z, c.integer(2, "normalization"), n)};
}

V c2r(Converter& c) {
  ValueId z = complexArg(c, 0, "self");
  Ints dims = fftDims(c, rankOf(c, z));
  int64_t last = c.integer(3, "last_dim_size");
  if (last <= 0) c.fail(cat("last_dim_size must be positive, got ", last));
  int64_t n = last;
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    n = mulSize(n, c.type(z).sizes[static_cast<size_t>(dims[i])]);
    z = dftComplexToComplex(c, z, dims[i], false);
  }
  return {normalized(c, dftComplexToReal(c, z, dims.back(), last), c.integer(2, "normalization"), n)};
}

/// |z|, computed in f64 for narrower dtypes so re^2 + im^2 neither
/// overflows nor underflows where |z| does not; its gradient at 0 is 0, as
/// ATen's (grad * sgn(z)), not the NaN of sqrt'(0).
V absOf(Converter& c) {
  ValueId z = complexArg(c, 0, "self");
  const DType d = c.type(z).dtype, w = DType::F64;
  ValueId re = c.cast(part(c, z, 0), w), im = c.cast(part(c, z, 1), w);
  ValueId s = bin(c, OpKind::Add, {c.mul(re, re), c.mul(im, im)});
  ValueId zero = c.op(OpKind::Eq, {s, c.scalar(0.0, w)});
  ValueId safe = c.op(OpKind::Where, {zero, c.scalar(1.0, w), s});
  return {c.cast(c.op(OpKind::Where, {zero, c.scalar(0.0, w), c.op(OpKind::Sqrt, {safe})}), d)};
}

/// atan2(im, re), 0 at z = 0 with a zero gradient there (ATen's angle_backward).
V angleOf(Converter& c) {
  ValueId z = complexArg(c, 0, "self");
  ValueId re = part(c, z, 0), im = part(c, z, 1);
  ValueId zero = c.op(OpKind::LogicalAnd, {c.op(OpKind::Eq, {re, c.scalarLike(0.0, re)}), c.op(OpKind::Eq, {im, c.scalarLike(0.0, im)})});
  ValueId re1 = c.op(OpKind::Where, {zero, c.scalarLike(1.0, re), re});
  ValueId im0 = c.op(OpKind::Where, {zero, c.scalarLike(0.0, im), im});
  return {c.op(OpKind::Atan2, {im0, re1})};
}

/// The second operand of a binary op: a tensor, or a real Python number.
ValueId other(Converter& c, ValueId self) { return c.operand(1, "other", self); }

V mulOf(Converter& c) {
  ValueId a = c.tensor(0, "self"), b = other(c, a);
  if (!c.isComplex(a)) std::swap(a, b);
  if (!c.isComplex(b)) return {c.mul(a, perPair(c, b))};
  ValueId ar = part(c, a, 0), ai = part(c, a, 1), br = part(c, b, 0), bi = part(c, b, 1);
  ValueId re = bin(c, OpKind::Sub, {c.mul(ar, br), c.mul(ai, bi)});
  ValueId im = bin(c, OpKind::Add, {c.mul(ar, bi), c.mul(ai, br)});
  return {pairOf(c, re, im)};
}

V divOf(Converter& c) {
  if (c.has(2, "rounding_mode")) c.fail("div with a rounding mode is not defined for complex tensors");
  ValueId a = c.tensor(0, "self"), b = other(c, a);
  if (!c.isComplex(b)) return {c.div(a, perPair(c, b))};
  a = asPairs(c, a);
  // a / b = a conj(b) / |b|^2.
  ValueId ar = part(c, a, 0), ai = part(c, a, 1), br = part(c, b, 0), bi = part(c, b, 1);
  ValueId den = bin(c, OpKind::Add, {c.mul(br, br), c.mul(bi, bi)});
  ValueId re = c.div(bin(c, OpKind::Add, {c.mul(ar, br), c.mul(ai, bi)}), den);
  ValueId im = c.div(bin(c, OpKind::Sub, {c.mul(ai, br), c.mul(ar, bi)}), den);
  return {pairOf(c, re, im)};
}

V addOf(Converter& c, double sign) {
  ValueId a = asPairs(c, c.tensor(0, "self"));
  ValueId b = asPairs(c, other(c, a));  // a Python number too: (x, 0)
  return {c.add(a, c.scaled(b, sign * c.number(2, "alpha", 1.0)))};
}

V reduceOf(Converter& c, OpKind k) {
  ValueId z = complexArg(c, 0, "self");
  c.requireNone(3, "dtype", "dtype=");
  return {c.op(k, {z}, Attrs{{"dim", reductionDims(c, z)}, {"keepdim", c.boolean(2, "keepdim", false)}})};
}

V viewOf(Converter& c) {
  ValueId z = complexArg(c, 0, "self");
  Ints size = inferViewSize(c.has(1, "size") ? c.ints(1, "size") : c.ints(1, "shape"), c.type(z).numel() / 2);
  size.push_back(2);
  return {reshapeTo(c, z, size)};
}

V permuteOf(Converter& c) {
  ValueId z = complexArg(c, 0, "self");
  const int64_t r = rankOf(c, z);
  Ints dims = c.ints(1, "dims");
  for (int64_t& d : dims) d = wrapDim(d, std::max<int64_t>(r, 1));
  dims.push_back(r);
  return {c.op(OpKind::Permute, {z}, Attrs{{"dims", dims}})};
}

const std::map<std::string, Rule>& rules() {
  using P = std::vector<std::pair<size_t, const char*>>;
  auto dimsAt = [](std::string target, P dims, int64_t extra = 0) {
    return Rule{false, true, [target, dims, extra](Converter& c) { return wrappedDims(c, target, dims, extra); }};
  };
  static const std::map<std::string, Rule> table{
      {"aten._fft_r2c.default", {true, true, r2c}},
      {"aten._fft_c2c.default", {false, true, c2c}},
      {"aten._fft_c2r.default", {false, false, c2r}},
      {"aten.view_as_real.default",
       {false, false, [](Converter& c) -> V { ValueId z = complexArg(c, 0, "self"); return {c.op(OpKind::View, {z}, Attrs{{"size", c.type(z).sizes}})}; }}},
      {"aten.view_as_complex.default",
       {true, true,
        [](Converter& c) -> V {
          ValueId x = c.tensor(0, "self");
          const TensorType t = c.type(x);
          if (c.isComplex(x)) c.fail("view_as_complex takes a real tensor; this one is complex");
          if (t.dtype != DType::F32 && t.dtype != DType::F64)
            c.fail(cat("view_as_complex: aotc holds complex64 and complex128 only (f32 or f64 pairs), got ", dtypeName(t.dtype)));
          if (t.rank() == 0 || t.sizes.back() != 2) c.fail(cat("view_as_complex needs a last dim of size 2, got ", t.str()));
          return {c.op(OpKind::View, {x}, Attrs{{"size", t.sizes}})};
        }}},
      {"aten.real.default", {false, false, [](Converter& c) -> V { return {part(c, complexArg(c, 0, "self"), 0)}; }}},
      {"aten.imag.default", {false, false, [](Converter& c) -> V { return {part(c, complexArg(c, 0, "self"), 1)}; }}},
      {"aten.abs.default", {false, false, absOf}},
      {"aten.angle.default", {false, false, angleOf}},
      {"aten.mul.Tensor", {false, true, mulOf}},
      {"aten.mul.Scalar", {false, true, mulOf}},
      {"aten.div.Tensor", {false, true, divOf}},
      {"aten.div.Scalar", {false, true, divOf}},
      {"aten.add.Tensor", {false, true, [](Converter& c) { return addOf(c, 1.0); }}},
      {"aten.sub.Tensor", {false, true, [](Converter& c) { return addOf(c, -1.0); }}},
      {"aten.neg.default", {false, true, [](Converter& c) -> V { return {c.neg(complexArg(c, 0, "self"))}; }}},
      {"aten.sum.dim_IntList", {false, true, [](Converter& c) { return reduceOf(c, OpKind::Sum); }}},
      {"aten.mean.dim", {false, true, [](Converter& c) { return reduceOf(c, OpKind::Mean); }}},
      {"aten.view.default", {false, true, viewOf}},
      {"aten.reshape.default", {false, true, viewOf}},
      {"aten._unsafe_view.default", {false, true, viewOf}},
      {"aten.permute.default", {false, true, permuteOf}},
      {"aten.select.int", dimsAt("aten.select.int", P{{1, "dim"}})},
      {"aten.slice.Tensor", dimsAt("aten.slice.Tensor", P{{1, "dim"}})},
      {"aten.transpose.int", dimsAt("aten.transpose.int", P{{1, "dim0"}, {2, "dim1"}})},
      {"aten.transpose_.default", dimsAt("aten.transpose_.default", P{{1, "dim0"}, {2, "dim1"}})},
      {"aten.unsqueeze.default", dimsAt("aten.unsqueeze.default", P{{1, "dim"}}, 1)},
      {"aten.unsqueeze_.default", dimsAt("aten.unsqueeze_.default", P{{1, "dim"}}, 1)},
      {"aten.squeeze.default", dimsAt("aten.squeeze.default", P{})},
      {"aten.squeeze.dim", dimsAt("aten.squeeze.dim", P{{1, "dim"}})},
      {"aten.squeeze.dims", dimsAt("aten.squeeze.dims", P{{1, "dim"}})},
      {"aten.squeeze_.default", dimsAt("aten.squeeze_.default", P{})},
      {"aten.squeeze_.dim", dimsAt("aten.squeeze_.dim", P{{1, "dim"}})},
      {"aten.squeeze_.dims", dimsAt("aten.squeeze_.dims", P{{1, "dim"}})},
      {"aten.clone.default", dimsAt("aten.clone.default", P{})},
      {"aten.detach.default", dimsAt("aten.detach.default", P{})},
      {"aten.alias.default", dimsAt("aten.alias.default", P{})},
  };
  return table;
}

/// The ops that take complex tensors, for the refusal message.
std::string ruleList() {
  std::set<std::string> ops;
  for (const auto& [t, r] : rules()) {
    auto p = spelling::parse(t);
    ops.insert(p ? p->name.substr(5) : t);
  }
  std::string s;
  for (const std::string& o : ops) s += (s.empty() ? "" : ", ") + o;
  return s;
}

}  // namespace cplx

bool complexTarget(const std::string& target) { return cplx::rules().count(target) > 0; }

std::optional<V> convertComplex(Converter& c, const std::string& target) {
  auto it = cplx::rules().find(target);
  bool always = it != cplx::rules().end() && it->second.always;
  std::string reads;  // the first argument that is (or holds) a complex tensor
  if (c.complexValues() && !c.complexValues()->empty()) {
    for (size_t i = 0; i < c.node().at("args").size() && reads.empty(); ++i)
      if (cplx::mentions(c.node()["args"][i], c)) reads = cat("argument ", i);
    if (c.node().contains("kwargs"))
      for (const auto& [k, a] : c.node()["kwargs"].items())
        if (reads.empty() && cplx::mentions(a, c)) reads = "argument " + k;
  }
  if (reads.empty() && !always) return std::nullopt;
  if (it == cplx::rules().end())
    c.fail(cat(reads, " is a complex tensor, which aotc holds as real (re, im) pairs and reads only in: ", cplx::ruleList()));
  V out = it->second.fn(c);
  if (it->second.result) {
    if (!c.complexValues()) c.fail("complex values are not supported here");
    for (ValueId v : out) c.complexValues()->insert(v);
  }
  return out;
}

std::string readFile(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UserError(SourceLoc{path, "", ""}, "file does not exist");
  if (fs::is_directory(path, ec)) throw UserError(SourceLoc{path, "", ""}, "is a directory, expected a file");
  auto size = fs::file_size(path, ec);
  if (ec || size > kMaxFileBytes) throw UserError(SourceLoc{path, "", ""}, "file is unreadable or too large");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError(SourceLoc{path, "", ""}, "cannot open file");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TensorType parseTensorType(const json& j, const SourceLoc& loc, const char* what) {
  auto fail = [&](const std::string& m) -> UserError { return UserError(loc, cat(what, ": ", m)); };
  if (!j.is_object()) throw fail("must be an object");
  if (!j.contains("dtype") || !j["dtype"].is_string()) throw fail("missing dtype");
  auto d = dtypeFromTorchName(j["dtype"].get<std::string>());
  if (!d) throw fail("unsupported dtype '" + j["dtype"].get<std::string>() + "'");
  if (!j.contains("shape") || !j["shape"].is_array()) throw fail("missing shape");
  Ints shape;
  int64_t numel = 1;
  for (auto& s : j["shape"]) {
    if (!s.is_number_integer() || s.get<int64_t>() < 0) throw fail("shape must hold non-negative integers, got " + j["shape"].dump());
    int64_t v = s.get<int64_t>();
    if (v > 0 && numel > kMaxElements / v) throw fail("shape " + j["shape"].dump() + " is too large");
    numel *= v;
    shape.push_back(v);
  }
  TensorType t = TensorType::contiguous(*d, shape);
  if (j.contains("stride")) {
    if (!j["stride"].is_array() || j["stride"].size() != shape.size()) throw fail("stride must have one entry per dim");
    Ints st;
    for (auto& s : j["stride"]) {
      if (!s.is_number_integer() || s.get<int64_t>() < 0 || s.get<int64_t>() > kMaxExtent)
        throw fail("stride must hold integers in [0, 2^48], got " + j["stride"].dump());
      st.push_back(s.get<int64_t>());
    }
    t.strides = st;
  }
  return t;
}

/// Where FX node `n` came from: its name, target, and the user's source line
/// and module path the exporter recorded.
SourceLoc nodeLoc(const json& n, const std::string& path) {
  SourceLoc loc{path, n["name"].get<std::string>(), n["target"].get<std::string>()};
  auto str = [&](const char* key) {
    if (!n.contains(key)) return std::string();
    if (!n[key].is_string()) throw UserError(loc, cat("'", key, "' must be a string"));
    return n[key].get<std::string>();
  };
  loc.source = str("source");
  loc.scope = str("module");
  return loc;
}

void collectUnknown(const json& nodes, const std::string& path, std::map<std::string, std::vector<SourceLoc>>& unknown) {
  for (auto& n : nodes) {
    if (!n.is_object() || !n.contains("name") || !n["name"].is_string() || !n.contains("target") ||
        !n["target"].is_string() || !n.contains("args") || !n["args"].is_array())
      throw UserError(SourceLoc{path, "", ""}, "malformed node " + n.dump().substr(0, 120) + " (needs name, target, args)");
    const std::string target = n["target"].get<std::string>();
    if (target == "getitem") continue;
    if (!knownTarget(target)) unknown[target].push_back(nodeLoc(n, path));
    if (target == "aotc.autograd_function")
      for (const char* r : {"forward", "backward"})
        if (n.contains(r) && n[r].is_object() && n[r].contains("nodes") && n[r]["nodes"].is_array())
          collectUnknown(n[r]["nodes"], path, unknown);
  }
}

/// Whether `a` refers to a shape computation anywhere.
bool mentionsScalar(const json& a, const std::map<std::string, json>& scalars) {
  if (a.is_object() && a.contains("node") && a["node"].is_string()) return scalars.count(a["node"].get<std::string>()) > 0;
  if (a.is_array() || a.is_object())
    for (const auto& x : a)
      if (mentionsScalar(x, scalars)) return true;
  return false;
}

/// A copy of `a` with every reference to a shape computation replaced by
/// its number (Note [Shape computations]).
json substituteScalars(const json& a, const std::map<std::string, json>& scalars) {
  if (a.is_object() && a.contains("node") && a["node"].is_string()) {
    auto it = scalars.find(a["node"].get<std::string>());
    return it == scalars.end() ? a : it->second;
  }
  if (a.is_array() || a.is_object()) {
    json r = a;
    for (auto& x : r) x = substituteScalars(x, scalars);
    return r;
  }
  return a;
}

/// Evaluates one shape computation; `layout` holds the strides the graph
/// recorded for a node, when it did.
json evalShapeComputation(Converter& c, const std::string& target, const std::map<ValueId, Ints>& layout) {
  if (target.rfind("_operator.", 0) == 0) {
    std::string op = target.substr(std::string("_operator.").size());
    auto num = [&](size_t i) {
      const json* a = c.arg(i, nullptr);
      if (!a || !(a->is_number_integer() || a->is_boolean()))
        c.fail(cat(op, ": argument ", i, " must be an integer (a shape computation), got ", a ? a->dump() : "nothing"));
      return c.integer(i, nullptr);
    };
    int64_t x = num(0);
    if (op == "neg") return -x;
    int64_t y = num(1);
    if (op == "add" || op == "sub" || op == "mul") {
      int64_t r = 0;
      bool overflow = op == "add" ? __builtin_add_overflow(x, y, &r)
                      : op == "sub" ? __builtin_sub_overflow(x, y, &r) : __builtin_mul_overflow(x, y, &r);
      if (overflow || r > kMaxIntArg || r < -kMaxIntArg) c.fail(cat(op, ": ", x, " and ", y, " give a result out of range"));
      return r;
    }
    if (op == "eq") return x == y;
    if (op == "ne") return x != y;
    if (op == "lt") return x < y;
    if (op == "le") return x <= y;
    if (op == "gt") return x > y;
    if (op == "ge") return x >= y;
    if (y == 0) c.fail(cat(op, ": division by zero"));
    int64_t q = x / y, m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) {  // Python's floor semantics
      --q;
      m += y;
    }
    return op == "floordiv" ? q : m;
  }
  ValueId v = c.tensor(0, "self");
  TensorType t = c.type(v);
  Ints strides = t.strides;
  if (auto it = layout.find(v); it != layout.end() && it->second.size() == t.sizes.size()) strides = it->second;
  if (c.isComplex(v)) {  // Note [Complex values]: sizes and strides in complex elements
    t.sizes.pop_back();
    strides.pop_back();
    for (int64_t& s : strides) s /= 2;
    t.offset /= 2;
  }
  if (target == "aten.sym_numel.default") return t.numel();
  if (target == "aten.sym_storage_offset.default") return t.offset;
  if (target == "aten.sym_is_contiguous.default") {
    if (c.has(1, "memory_format")) c.fail("sym_is_contiguous: only the default memory format is supported");
    int64_t expect = 1;
    for (size_t d = t.sizes.size(); d-- > 0;) {
      if (t.sizes[d] != 1 && strides[d] != expect) return false;
      expect *= t.sizes[d];
    }
    return true;
  }
  if (t.rank() == 0) c.fail(cat(target, ": a 0-dim tensor has no dims"));
  int64_t d = c.integer(1, "dim");
  if (d < -t.rank() || d >= t.rank()) c.fail(cat(target, ": dim ", d, " out of range for a ", t.rank(), "-dim tensor"));
  if (d < 0) d += t.rank();
  return target == "aten.sym_size.int" ? t.sizes[static_cast<size_t>(d)] : strides[static_cast<size_t>(d)];
}

/// A complex result's meta against its pairs: complex64 is f32 pairs,
/// complex128 f64 pairs, and the sizes are the pairs' without the last dim.
void checkComplexMeta(const json& meta, const TensorType& pairs, const SourceLoc& loc) {
  std::string dt = meta.is_object() && meta.contains("dtype") && meta["dtype"].is_string() ? meta["dtype"].get<std::string>() : "";
  const DType want = dt == "complex64" ? DType::F32 : dt == "complex128" ? DType::F64 : DType::Bool;
  Ints sizes(pairs.sizes.begin(), pairs.sizes.end() - 1);
  if (want == DType::Bool || want != pairs.dtype || !meta.contains("shape") || meta["shape"] != json(sizes))
    throw UserError(loc, cat("shape mismatch: the graph records ", meta.dump(), ", the op gives a ",
                             pairs.dtype == DType::F64 ? "complex128" : "complex64", json(sizes).dump(), " tensor"));
}

/// Converts FX nodes into `g`, binding their names in `env`.
void convertBody(Graph& g, const json& nodes, Env& env, const std::string& path, bool backward,
                 std::set<ValueId>& complex, const std::map<std::string, std::string>* userNames = nullptr) {
  std::set<std::string> names;
  for (auto& [k, v] : env) names.insert(k);
  std::map<std::string, json> scalars;  // Note [Shape computations]
  std::map<ValueId, Ints> layout;       // strides the graph recorded
  std::set<ValueId> snapshots;          // Note [as_strided as a gather]
  json substituted;
  for (auto& node : nodes) {
    const json* np = &node;
    // Only a node that reads a shape computation is copied.
    if (!scalars.empty() && (mentionsScalar(node["args"], scalars) || (node.contains("kwargs") && mentionsScalar(node["kwargs"], scalars)))) {
      substituted = node;
      substituted["args"] = substituteScalars(node["args"], scalars);
      if (node.contains("kwargs")) substituted["kwargs"] = substituteScalars(node["kwargs"], scalars);
      np = &substituted;
    }
    const json& n = *np;
    std::string name = n["name"].get<std::string>(), target = n["target"].get<std::string>();
    SourceLoc loc = nodeLoc(n, path);
    if (!validName(name)) throw UserError(loc, "node name must be 1-256 characters of [A-Za-z0-9_.-]");
    if (!names.insert(name).second) throw UserError(loc, "node name is not unique");
    if (n.contains("kwargs") && !n["kwargs"].is_object()) throw UserError(loc, "kwargs must be an object");
    if (target == "getitem") {
      const json& args = n["args"];
      if (args.size() != 2 || !args[0].is_object() || !args[0].contains("node") || !args[1].is_number_integer())
        throw UserError(loc, "getitem takes a node reference and an index");
      auto it = env.find(args[0]["node"].get<std::string>());
      if (it == env.end())
        throw UserError(loc, "argument 0 refers to '" + args[0]["node"].get<std::string>() +
                                 "', which is not defined before this node (undefined name or a cycle)");
      int64_t i = args[1].get<int64_t>();
      if (i < 0 || i >= static_cast<int64_t>(it->second.size()))
        throw UserError(loc, cat("getitem index ", i, " out of range for a node with ", it->second.size(), " results"));
      if (it->second[static_cast<size_t>(i)] == kNoValue)
        throw UserError(loc, cat("result ", i, " of '", args[0]["node"].get<std::string>(),
                                 "' is an internal buffer of eager's backward, which aotc does not compute"));
      env[name] = {it->second[static_cast<size_t>(i)]};
      continue;
    }
    bool noGrad = n.contains("grad_enabled") && n["grad_enabled"].is_boolean() && !n["grad_enabled"].get<bool>();
    if (isShapeComputation(target)) {
      Converter c(g, n, loc, env, noGrad);
      c.setComplex(&complex);
      try {
        scalars[name] = evalShapeComputation(c, target, layout);
      } catch (const json::exception& e) {
        throw UserError(loc, std::string("malformed arguments: ") + e.what());
      }
      continue;
    }
    Converter c(g, n, loc, env, noGrad);
    c.setInBackward(backward);
    c.setNames(userNames);
    c.setComplex(&complex);
    c.setSnapshots(&snapshots);
    c.setLayout(&layout);
    const size_t firstNew = g.values.size(), firstNode = g.nodes.size();
    std::vector<ValueId> outs;
    try {
      outs = convertTarget(c, target);
    } catch (const json::exception& e) {
      throw UserError(loc, std::string("malformed arguments: ") + e.what());
    } catch (const UserError& e) {
      // A shape helper the converter called directly knows no node: this one.
      std::vector<Diagnostic> d = e.diagnostics();
      for (Diagnostic& x : d)
        if (x.loc.file.empty() && x.loc.node.empty()) x.loc = loc;
      throw UserError(d);
    }
    // Note [as_strided as a gather]: what a gather copied is not written later.
    if (!snapshots.empty())
      for (size_t k = firstNode; k < g.nodes.size(); ++k) {
        const Node& nd = g.nodes[k];
        OpCategory cat = opInfo(nd.op).category;
        if (cat != OpCategory::Mutation && cat != OpCategory::Custom) continue;
        for (size_t i = 0; i < nd.inputs.size() && (i == 0 || cat == OpCategory::Custom); ++i)
          if (snapshots.count(storageRoot(g, nd.inputs[i])))
            throw UserError(loc, "writes a tensor that an earlier as_strided read as a gather (a copy, where eager has a view "
                                 "that would see this write); aotc does not support that (Note [as_strided as a gather])");
      }
    if (n.contains("meta")) {
      const json& meta = n["meta"];
      std::vector<json> metas = meta.is_array() ? std::vector<json>(meta.begin(), meta.end()) : std::vector<json>{meta};
      if (metas.size() != outs.size()) throw UserError(loc, cat("meta lists ", metas.size(), " results, the op has ", outs.size()));
      for (size_t i = 0; i < outs.size(); ++i) {
        if (metas[i].is_null() || outs[i] == kNoValue) continue;
        if (complex.count(outs[i])) {  // Note [Complex values]
          checkComplexMeta(metas[i], g.type(outs[i]), loc);
          continue;
        }
        TensorType want = parseTensorType(metas[i], loc, "meta");
        const TensorType& got = g.type(outs[i]);
        // Only a layout that differs from the IR's needs keeping.
        if (metas[i].contains("stride") && want.strides != got.strides) layout[outs[i]] = want.strides;
        if (want.sizes != got.sizes || want.dtype != got.dtype)
          throw UserError(loc, cat("shape mismatch: the graph records ", want.str(), ", the op gives ",
                                   TensorType::contiguous(got.dtype, got.sizes).str()));
      }
    }
    // The node's (first) result takes the FX node's name, so IR dumps read
    // like the user's graph; a helper value the converter made first gives it up.
    if (!outs.empty() && g.values[outs[0]].name != name)
      for (size_t v = firstNew; v < g.values.size(); ++v)
        if (g.values[v].name == name) std::swap(g.values[v].name, g.values[outs[0]].name);
    env[name] = outs;
  }
}

std::vector<GraphOutput> convertOutputs(const json& outputs, const Env& env, const std::string& path, OutputRole role,
                                        const std::set<ValueId>& complex) {
  std::vector<GraphOutput> res;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const json& o = outputs[i];
    if (role == OutputRole::Grad && o.is_null()) continue;
    if (!o.is_object() || !o.contains("node") || !o["node"].is_string())
      throw UserError(SourceLoc{path, cat("output ", i), ""}, "outputs must be {\"node\": name} references to tensors");
    auto it = env.find(o["node"].get<std::string>());
    if (it == env.end() || it->second.size() != 1)
      throw UserError(SourceLoc{path, cat("output ", i), ""},
                      "refers to '" + o["node"].get<std::string>() + "', which is undefined or has several results");
    if (complex.count(it->second[0]))
      throw UserError(SourceLoc{path, cat("output ", i), ""},
                      "'" + o["node"].get<std::string>() + "' is a complex tensor; aotc's results are real "
                      "(return torch.view_as_real of it)");
    res.push_back(GraphOutput{it->second[0], role, role == OutputRole::Grad ? std::to_string(i) : "", std::nullopt, {}});
  }
  return res;
}

Graph convertRegion(const json& region, const std::string& path, const std::string& name, bool backward,
                    const SourceLoc& loc, std::vector<std::string>* savedRefs,
                    const std::map<std::string, std::string>* names) {
  if (!region.is_object() || !region.contains("inputs") || !region.contains("nodes") || !region.contains("outputs") ||
      !region["inputs"].is_array() || !region["nodes"].is_array() || !region["outputs"].is_array())
    throw UserError(loc, name + " region needs inputs, nodes and outputs");
  Graph g;
  g.name = name;
  Env env;
  for (auto& in : region["inputs"]) {
    std::string n = in.value("name", "");
    if (!validName(n) || env.count(n)) throw UserError(loc, name + " region: bad or repeated input name '" + n + "'");
    InputRole role = InputRole::UserInput;
    if (backward) {
      if (in.contains("saved") && in["saved"].is_string()) {
        role = InputRole::Saved;
        savedRefs->push_back(in["saved"].get<std::string>());
      } else if (in.contains("grad_output")) {
        role = InputRole::Tangent;
      } else {
        throw UserError(loc, "backward region input '" + n + "' is neither saved nor a grad_output");
      }
    }
    env[n] = {g.addInput(n, parseTensorType(in, loc, "region input"), role, false)};
  }
  std::set<ValueId> complex;
  convertBody(g, region["nodes"], env, path, backward, complex, names);
  g.outputs = convertOutputs(region["outputs"], env, path, backward ? OutputRole::Grad : OutputRole::User, complex);
  return g;
}

}  // namespace

FxModel loadFxGraphUnchecked(const std::string& text, const std::string& path);

bool isSupportedFxTarget(const std::string& target) { return knownTarget(target); }

std::vector<std::string> supportedFxTargets() {
  std::vector<std::string> v;
  for (auto& [k, f] : converters()) v.push_back(k);
  return v;
}

FxModel loadFxGraph(const std::string& path) {
  // Type errors anywhere in a malformed document are the user's: name the file.
  try {
    return loadFxGraphUnchecked(readFile(path), path);
  } catch (const json::exception& e) {
    throw UserError(SourceLoc{path, "", ""}, std::string("malformed FX graph: ") + e.what());
  }
}

namespace {
/// The file's JSON; a syntax error is the user's, named with its place.
json parseFxJson(const std::string& text, const std::string& path) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // nlohmann's message already holds the line and column.
    std::string msg = e.what();
    auto p = msg.find("parse error");
    throw UserError(SourceLoc{path, "", ""}, "malformed JSON: " + (p == std::string::npos ? msg : msg.substr(p)));
  }
}

/// The node names an argument refers to (`{"node": NAME}` anywhere in it).
void nodeRefs(const json& a, std::vector<std::string>& out) {
  if (a.is_object() && a.contains("node") && a["node"].is_string()) {
    std::string n = a["node"].get<std::string>();
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    return;
  }
  if (a.is_array() || a.is_object())
    for (const auto& x : a) nodeRefs(x, out);
}

std::string metaType(const json& m) {
  if (!m.is_object() || !m.contains("dtype") || !m["dtype"].is_string()) return "";
  std::string s = m["dtype"].get<std::string>() + "[";
  if (m.contains("shape") && m["shape"].is_array())
    for (size_t i = 0; i < m["shape"].size(); ++i) s += (i ? ", " : "") + m["shape"][i].dump();
  return s + "]";
}
}  // namespace

SourceGraph fxSourceGraph(const std::string& path) {
  const SourceLoc fileLoc{path, "", ""};
  try {
    const json doc = parseFxJson(readFile(path), path);
    if (!doc.is_object() || doc.value("format", "") != "aotc.fx_graph")
      throw UserError(fileLoc, "not an aotc FX graph (\"format\" must be \"aotc.fx_graph\")");
    for (const char* key : {"inputs", "nodes", "outputs"})
      if (!doc.contains(key) || !doc[key].is_array()) throw UserError(fileLoc, cat("missing or malformed '", key, "' (expected an array)"));
    if (doc["nodes"].size() > kMaxNodes)
      throw UserError(fileLoc, cat("graph has ", doc["nodes"].size(), " nodes; aotc compiles graphs of at most ", kMaxNodes));
    SourceGraph sg;
    sg.name = doc.value("name", "model");
    for (const json& in : doc["inputs"]) {
      SourceNode n;
      n.name = in.at("name").get<std::string>();
      n.op = in.value("role", "input");
      n.type = metaType(in);
      n.is_input = true;
      n.loc = SourceLoc{path, n.name, "input"};
      sg.nodes.push_back(std::move(n));
    }
    for (const json& j : doc["nodes"]) {
      if (!j.is_object() || !j.contains("name") || !j["name"].is_string() || !j.contains("target") || !j["target"].is_string())
        throw UserError(fileLoc, "malformed node " + j.dump().substr(0, 120) + " (needs name, target, args)");
      SourceNode n;
      n.name = j["name"].get<std::string>();
      n.op = j["target"].get<std::string>();
      n.loc = nodeLoc(j, path);
      nodeRefs(j.value("args", json::array()), n.inputs);
      nodeRefs(j.value("kwargs", json::object()), n.inputs);
      if (j.contains("meta")) n.type = metaType(j["meta"]);
      if (n.op != "getitem" && !knownTarget(n.op)) n.unsupported = "unsupported op";
      sg.nodes.push_back(std::move(n));
    }
    nodeRefs(doc["outputs"], sg.outputs);
    return sg;
  } catch (const json::exception& e) {
    throw UserError(fileLoc, std::string("malformed FX graph: ") + e.what());
  }
}

FxModel loadFxGraphText(const std::string& text, const std::string& path) {
  try {
    return loadFxGraphUnchecked(text, path);
  } catch (const json::exception& e) {
    throw UserError(SourceLoc{path, "", ""}, std::string("malformed FX graph: ") + e.what());
  }
}

FxModel convertFxDocument(const json& doc, const std::string& path);

/// Note [Dynamic FX graphs]: a version 3 document with symbols (Note
/// [Dynamic export] in tools/fx_export.py) is converted once per probe
/// binding of its symbols -- every {"sym": EXPR} replaced by its value --
/// by the same converter as any static document, and the graphs are unified
/// into one symbolic graph (Note [Probing and unifying]): a size that an op's
/// conversion computes from a dynamic dim becomes an expression however the
/// converter computed it.  The exporter's guards are kept.
static std::vector<SymbolDecl> fxSymbols(const json& doc, const SourceLoc& fileLoc) {
  std::vector<SymbolDecl> out;
  if (!doc.contains("symbols")) return out;
  const json& syms = doc["symbols"];
  if (!syms.is_array()) throw UserError(fileLoc, "'symbols' must be an array");
  for (const json& j : syms) {
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string() || !j.contains("hint") || !j["hint"].is_number_integer() ||
        !j.contains("min") || !j["min"].is_number_integer() || !j.contains("max") || !j["max"].is_number_integer())
      throw UserError(fileLoc, "a symbol needs a name and integer hint, min and max");
    SymbolDecl d{j["name"].get<std::string>(), j["hint"].get<int64_t>(), j["min"].get<int64_t>(), j["max"].get<int64_t>()};
    if (std::string why = declareSymbol(out, std::move(d)); !why.empty()) throw UserError(fileLoc, why);
  }
  return out;
}

/// `j` with every {"sym": EXPR} replaced by its value at `b`.
static json atBinding(const json& j, const sym::Bindings& b, const SourceLoc& fileLoc) {
  if (j.is_object()) {
    if (j.size() == 1 && j.contains("sym")) {
      if (!j["sym"].is_string()) throw UserError(fileLoc, "a {\"sym\": ...} integer must hold an expression string");
      try {
        return sym::Expr::parse(j["sym"].get<std::string>()).eval(b);
      } catch (const std::exception& e) {
        throw UserError(fileLoc, "bad size expression '" + j["sym"].get<std::string>() + "': " + e.what());
      }
    }
    json o = json::object();
    for (auto it = j.begin(); it != j.end(); ++it) o[it.key()] = atBinding(it.value(), b, fileLoc);
    return o;
  }
  if (j.is_array()) {
    json a = json::array();
    for (const json& x : j) a.push_back(atBinding(x, b, fileLoc));
    return a;
  }
  return j;
}

FxModel loadFxGraphUnchecked(const std::string& text, const std::string& path) {
  const SourceLoc fileLoc{path, "", ""};
  json doc = parseFxJson(text, path);
  std::vector<SymbolDecl> symbols = doc.is_object() ? fxSymbols(doc, fileLoc) : std::vector<SymbolDecl>{};
  if (symbols.empty()) return convertFxDocument(doc, path);
  // Note [Dynamic FX graphs].
  // The probes convert independently, on one thread per core (the first
  // failing probe's error is the one reported, as a serial loop would).
  const std::vector<sym::Bindings> probes = probeBindings(symbols);
  std::vector<FxModel> models(probes.size());
  parallelFor(probes.size(), std::max(1u, std::thread::hardware_concurrency()), [&](size_t i) {
    try {
      models[i] = convertFxDocument(atBinding(doc, probes[i], fileLoc), path);
    } catch (const UserError& e) {
      std::vector<Diagnostic> d = e.diagnostics();
      for (Diagnostic& x : d) x.message += " (converting at " + bindingText(probes[i]) + ", a probe of the dynamic sizes)";
      throw UserError(std::move(d));
    }
  });
  std::vector<Graph> graphs;
  for (FxModel& m : models) graphs.push_back(std::move(m.graph));
  FxModel out = std::move(models[0]);
  out.graph = unifyGraphs(graphs, symbols, path);
  if (doc.contains("guards")) {
    if (!doc["guards"].is_array()) throw UserError(fileLoc, "'guards' must be an array");
    for (const json& j : doc["guards"]) {
      if (!j.is_object() || !j.contains("expr") || !j["expr"].is_string() || !j.contains("divisible_by") ||
          !j["divisible_by"].is_number_integer() || j["divisible_by"].get<int64_t>() < 2)
        throw UserError(fileLoc, "a guard needs an expression and a divisor of at least 2");
      SizeGuard g;
      try {
        g.expr = sym::Expr::parse(j["expr"].get<std::string>());
      } catch (const std::exception& e) {
        throw UserError(fileLoc, "bad guard '" + j["expr"].get<std::string>() + "': " + e.what());
      }
      g.divisor = j["divisible_by"].get<int64_t>();
      g.where = j.value("where", std::string());
      addGuard(out.graph.guards, std::move(g));
    }
  }
  return out;
}

FxModel convertFxDocument(const json& doc, const std::string& path) {
  const SourceLoc fileLoc{path, "", ""};
  auto need = [&](const char* key, json::value_t t, const char* what) -> const json& {
    if (!doc.is_object() || !doc.contains(key) || doc[key].type() != t)
      throw UserError(fileLoc, cat("missing or malformed '", key, "' (expected ", what, ")"));
    return doc[key];
  };
  if (!doc.is_object() || doc.value("format", "") != "aotc.fx_graph")
    throw UserError(fileLoc, "not an aotc FX graph (\"format\" must be \"aotc.fx_graph\")");
  // Version 2 added source locations, tied-parameter aliases, specialized
  // arguments and output paths, all optional: version 1 files read as before.
  // Version 3 adds dynamic dims (symbols, guards, integers as expressions;
  // Note [Dynamic export] in tools/fx_export.py).
  if (!doc.contains("version") || !doc["version"].is_number_integer() || doc["version"].get<int64_t>() < 1 ||
      doc["version"].get<int64_t>() > 3)
    throw UserError(fileLoc, "unsupported FX graph version " + (doc.contains("version") ? doc["version"].dump() : "(none)") +
                                 "; this aotc reads versions 1 to 3");

  const json& inputs = need("inputs", json::value_t::array, "an array");
  const json& nodes = need("nodes", json::value_t::array, "an array");
  if (nodes.size() > kMaxNodes)
    throw UserError(fileLoc, cat("graph has ", nodes.size(), " nodes; aotc compiles graphs of at most ", kMaxNodes));
  const json& outputs = need("outputs", json::value_t::array, "an array");
  std::string weights = need("weights", json::value_t::string, "a file name").get<std::string>();
  // Path tricks: the weights file is a plain name resolved beside the JSON.
  if (weights.empty() || weights.find('/') != std::string::npos || weights.find('\\') != std::string::npos ||
      weights == "." || weights == "..")
    throw UserError(fileLoc, "'weights' must be a plain file name beside the model, got '" + weights + "'");

  FxModel m;
  m.graph.name = doc.value("name", "model");
  if (!validName(m.graph.name)) m.graph.name = "model";
  m.weights_path = (fs::path(path).parent_path() / weights).string();

  Env env;
  bool needWeights = false;
  for (auto& in : inputs) {
    std::string name = in.is_object() && in.contains("name") && in["name"].is_string() ? in["name"].get<std::string>() : "";
    SourceLoc loc{path, name, "input"};
    if (!validName(name)) throw UserError(loc, "input name must be 1-256 characters of [A-Za-z0-9_.-]");
    if (env.count(name)) throw UserError(loc, "input name is not unique");
    auto role = parseInputRole(in.value("role", ""));
    if (!role || *role == InputRole::Tangent || *role == InputRole::Saved)
      throw UserError(loc, "role must be parameter, buffer, user_input or constant");
    if (!in.contains("requires_grad") || !in["requires_grad"].is_boolean()) throw UserError(loc, "missing requires_grad");
    TensorType t = parseTensorType(in, loc, "input");
    bool rg = in["requires_grad"].get<bool>();
    if (rg && !isFloating(t.dtype)) throw UserError(loc, "only floating-point inputs can require grad");
    env[name] = {m.graph.addInput(name, t, *role, rg)};
    needWeights |= *role != InputRole::UserInput;
    if (in.contains("aliases")) {
      // A tied parameter or buffer: its other state_dict names.
      if (!in["aliases"].is_array()) throw UserError(loc, "aliases must be an array of names");
      for (auto& a : in["aliases"]) {
        if (!a.is_string() || !validName(a.get<std::string>())) throw UserError(loc, "alias " + a.dump() + " is not a valid name");
        if (*role == InputRole::UserInput) throw UserError(loc, "only parameters and buffers have aliases");
        m.input_aliases[name].push_back(a.get<std::string>());
      }
    }
  }
  if (needWeights) {
    // A renamed or moved weights file: say which field names it.
    std::error_code ec;
    if (!fs::exists(m.weights_path, ec))
      throw UserError(SourceLoc{path, "weights", ""},
                      "the weights file '" + weights + "' is not beside the model (" + m.weights_path +
                          " does not exist); put it there or set the JSON's \"weights\" field to its name");
    auto header = readSafetensorsHeader(m.weights_path);
    for (auto& gi : m.graph.inputs) {
      if (gi.role == InputRole::UserInput) continue;
      const std::string& n = m.graph.values[gi.value].name;
      SourceLoc loc{path, n, "input"};
      auto it = header.find(n);
      if (it == header.end()) throw UserError(loc, cat(inputRoleName(gi.role), " has no tensor in ", m.weights_path));
      const TensorType& t = m.graph.type(gi.value);
      if (it->second.dtype != t.dtype || it->second.shape != t.sizes)
        throw UserError(loc, cat("weights file holds ", dtypeName(it->second.dtype), " ",
                                 TensorType::contiguous(it->second.dtype, it->second.shape).str(), ", the graph declares ", t.str()));
    }
  }

  // Report every unsupported op at once, with counts, before converting anything.
  std::map<std::string, std::vector<SourceLoc>> unknown;
  collectUnknown(nodes, path, unknown);
  if (!unknown.empty()) {
    std::vector<Diagnostic> diags;
    for (auto& [op, locs] : unknown) {
      std::string list;
      for (size_t i = 0; i < locs.size() && i < 5; ++i) list += (i ? ", " : "") + locs[i].node + locs[i].where();
      if (locs.size() > 5) list += ", ...";
      diags.push_back({locs.front(),
                       cat("unsupported op (", locs.size(), " node", locs.size() > 1 ? "s" : "", ": ", list, ")")});
    }
    throw UserError(diags);
  }
  {
    // An alias may not name another input, nor two inputs.
    std::set<std::string> names;
    for (auto& gi : m.graph.inputs) names.insert(m.graph.values[gi.value].name);
    for (auto& [input, aliases] : m.input_aliases)
      for (auto& a : aliases)
        if (!names.insert(a).second) throw UserError(SourceLoc{path, input, "input"}, "alias '" + a + "' names another input");
  }
  std::set<ValueId> complex;
  convertBody(m.graph, nodes, env, path, false, complex);
  m.graph.outputs = convertOutputs(outputs, env, path, OutputRole::User, complex);
  if (doc.contains("output_paths")) {
    const json& p = doc["output_paths"];
    if (!p.is_array() || p.size() != outputs.size())
      throw UserError(fileLoc, cat("output_paths must list one path per output (", outputs.size(), ")"));
    for (auto& s : p) {
      if (!s.is_string()) throw UserError(fileLoc, "output_paths must hold strings");
      m.output_paths.push_back(s.get<std::string>());
    }
  }
  if (doc.contains("arguments")) {
    if (!doc["arguments"].is_array()) throw UserError(fileLoc, "arguments must be an array");
    m.arguments = doc["arguments"];
  }

  if (doc.contains("storage_groups")) {
    for (auto& grp : doc["storage_groups"]) {
      std::vector<std::string> names;
      for (auto& n : grp) {
        if (!n.is_string() || !env.count(n.get<std::string>()))
          throw UserError(fileLoc, "storage_groups names an unknown input " + n.dump());
        names.push_back(n.get<std::string>());
      }
      if (names.size() > 1) m.storage_groups.push_back(names);
    }
  }
  return m;
}

}  // namespace aotc
