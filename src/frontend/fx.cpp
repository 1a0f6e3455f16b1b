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
#include <limits>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "aotc/ir/safetensors.h"
#include "aotc/ops/ops.h"

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
using ConvertFn = std::vector<ValueId> (*)(Converter&);
/// FX name -> the values it stands for (several for a multi-result node).
using Env = std::map<std::string, std::vector<ValueId>>;
Graph convertRegion(const json& region, const std::string& path, const std::string& name, bool backward,
                    const SourceLoc& loc, std::vector<std::string>* savedRefs,
                    const std::map<std::string, std::string>* names = nullptr);

/// One FX node being converted.
class Converter {
 public:
  Converter(Graph& g, const json& node, SourceLoc loc, const Env& env, bool noGrad)
      : g_(g), node_(node), loc_(std::move(loc)), env_(env), noGrad_(noGrad) {}

  [[noreturn]] void fail(const std::string& msg) const { throw UserError(loc_, msg); }

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
    DType d = g_.type(like).dtype;
    if (a->is_number_float() && !isFloating(d)) d = DType::F32;
    return scalar(v, d);
  }
  bool inBackward() const { return inBackward_; }
  void setInBackward(bool b) { inBackward_ = b; }
  /// The user-facing name of a value (a custom backward's saved input is
  /// named after the model value it stands for).
  std::string describe(const std::string& name) const {
    auto it = names_ ? names_->find(name) : std::map<std::string, std::string>::const_iterator{};
    return names_ && it != names_->end() ? it->second : name;
  }
  void setNames(const std::map<std::string, std::string>* n) { names_ = n; }
  ValueId scalar(double v, DType d) {
    return op(OpKind::Constant, {}, Attrs{{"value", v}, {"dtype", std::string(dtypeName(d))}});
  }
  ValueId op(OpKind k, std::vector<ValueId> ins, Attrs a = {}) {
    if (noGrad_) a["no_grad"] = true;
    return g_.add(k, std::move(ins), std::move(a), loc_);
  }
  std::vector<ValueId> ops(OpKind k, std::vector<ValueId> ins, Attrs a, std::vector<Graph> regions) {
    if (noGrad_) a["no_grad"] = true;
    return g_.addNode(k, std::move(ins), std::move(a), loc_, Phase::Forward, kTagNone, std::move(regions));
  }
  const json& node() const { return node_; }
  const SourceLoc& loc() const { return loc_; }
  const Env& env() const { return env_; }
  Graph& graph() { return g_; }
  /// Multiplies by `alpha` unless it is 1.
  ValueId scaled(ValueId v, double alpha) {
    return alpha == 1.0 ? v : op(OpKind::Mul, {v, scalar(alpha, g_.type(v).dtype)});
  }
  const TensorType& type(ValueId v) const { return g_.type(v); }

 private:
  Graph& g_;
  const json& node_;
  SourceLoc loc_;
  const Env& env_;
  bool noGrad_;
  bool inBackward_ = false;
  const std::map<std::string, std::string>* names_ = nullptr;
};

using V = std::vector<ValueId>;

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
    double n = static_cast<double>(xt.numel() / std::max<int64_t>(C, 1));
    auto update = [&](ValueId running, ValueId stat, double scale) {
      ValueId s = c.op(OpKind::Mul, {c.op(OpKind::Detach, {stat}), sc(momentum * scale)});
      ValueId keep = c.op(OpKind::Mul, {running, sc(1.0 - momentum)});
      c.op(OpKind::CopyInplace, {running, c.op(OpKind::Add, {keep, s})});
    };
    if (rm != kNoValue) update(rm, mean, 1.0);
    if (rv != kNoValue) update(rv, var, n > 1 ? n / (n - 1) : 1.0);
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

// ------------------------------------------------------------ decompositions
ValueId reshapeTo(Converter& c, ValueId x, Ints size) {
  if (!viewStrides(c.type(x).sizes, c.type(x).strides, inferViewSize(size, c.type(x).numel()))) x = c.op(OpKind::Clone, {x});
  return c.op(OpKind::View, {x}, Attrs{{"size", inferViewSize(size, c.type(x).numel())}});
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

ValueId reduceOp(Converter& c, OpKind k, ValueId x, Ints dims, bool keep) {
  return c.op(k, {x}, Attrs{{"dim", dims}, {"keepdim", keep}});
}
/// A binary op.  Its operands come as one braced list, evaluated left to
/// right (Note [Node order] in src/ops/gradients.cpp): `bin(c, k, {f(x), g(x)})`
/// creates f's nodes before g's whichever compiler built aotc.
ValueId bin(Converter& c, OpKind k, std::pair<ValueId, ValueId> ab) { return c.op(k, {ab.first, ab.second}); }
ValueId sc(Converter& c, double v, ValueId like) { return c.scalar(v, c.type(like).dtype); }
int64_t dimArg(Converter& c, size_t i, const char* kw, ValueId x, int64_t dflt = 0) {
  int64_t r = std::max<int64_t>(c.type(x).rank(), 1);
  return wrapDim(c.integer(i, kw, dflt), r);
}

/// softmax / log_softmax over `dim`, shifted by the (detached) max for range.
ValueId softmaxLike(Converter& c, ValueId x, int64_t dim, bool log) {
  ValueId m = c.op(OpKind::Detach, {reduceOp(c, OpKind::Amax, x, {dim}, true)});
  ValueId z = bin(c, OpKind::Sub, {x, m});
  ValueId s = reduceOp(c, OpKind::Sum, c.op(OpKind::Exp, {z}), {dim}, true);
  if (log) return bin(c, OpKind::Sub, {z, c.op(OpKind::Log, {s})});
  return bin(c, OpKind::Div, {c.op(OpKind::Exp, {z}), s});
}

/// var over dims with Bessel's correction `correction`.
ValueId variance(Converter& c, ValueId x, Ints dims, double correction, bool keep) {
  int64_t n = 1;
  Ints all = reductionDims(Attrs{{"dim", dims}}, c.type(x).rank());
  for (int64_t d : all) n = mulSize(n, c.type(x).sizes[static_cast<size_t>(d)]);
  ValueId mean = reduceOp(c, OpKind::Mean, x, all, true);
  ValueId dlt = bin(c, OpKind::Sub, {x, mean});
  ValueId ss = reduceOp(c, OpKind::Sum, bin(c, OpKind::Mul, {dlt, dlt}), all, keep);
  return bin(c, OpKind::Div, {ss, sc(c, std::max(static_cast<double>(n) - correction, 0.0), x)});
}

V layerNorm(Converter& c) {
  ValueId x = c.tensor(0, "input");
  Ints shape = c.ints(1, "normalized_shape");
  ValueId w = c.has(2, "weight") ? c.tensor(2, "weight") : kNoValue, b = c.has(3, "bias") ? c.tensor(3, "bias") : kNoValue;
  double eps = c.number(4, "eps", 1e-5);
  int64_t r = c.type(x).rank();
  Ints dims;
  for (int64_t d = r - static_cast<int64_t>(shape.size()); d < r; ++d) dims.push_back(d);
  ValueId mean = reduceOp(c, OpKind::Mean, x, dims, true);
  ValueId dlt = bin(c, OpKind::Sub, {x, mean});
  ValueId var = reduceOp(c, OpKind::Mean, bin(c, OpKind::Mul, {dlt, dlt}), dims, true);
  ValueId rstd = c.op(OpKind::Rsqrt, {bin(c, OpKind::Add, {var, sc(c, eps, x)})});
  ValueId out = bin(c, OpKind::Mul, {dlt, rstd});
  if (w != kNoValue) out = bin(c, OpKind::Mul, {out, w});
  if (b != kNoValue) out = bin(c, OpKind::Add, {out, b});
  return {out, mean, rstd};
}

V groupNorm(Converter& c) {
  ValueId x = c.tensor(0, "input");
  ValueId w = c.has(1, "weight") ? c.tensor(1, "weight") : kNoValue, b = c.has(2, "bias") ? c.tensor(2, "bias") : kNoValue;
  int64_t N = c.integer(3, "N"), C = c.integer(4, "C");
  int64_t G = c.integer(6, "group");
  double eps = c.number(7, "eps", 1e-5);
  if (G <= 0 || C % G) c.fail("group_norm: channels must divide into groups");
  Ints shape = c.type(x).sizes;
  ValueId xg = reshapeTo(c, x, {N, G, -1});
  ValueId mean = reduceOp(c, OpKind::Mean, xg, {2}, true);
  ValueId dlt = bin(c, OpKind::Sub, {xg, mean});
  ValueId var = reduceOp(c, OpKind::Mean, bin(c, OpKind::Mul, {dlt, dlt}), {2}, true);
  ValueId rstd = c.op(OpKind::Rsqrt, {bin(c, OpKind::Add, {var, sc(c, eps, x)})});
  ValueId out = c.op(OpKind::View, {bin(c, OpKind::Mul, {dlt, rstd})}, Attrs{{"size", shape}});
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

V convolution(Converter& c) {
  ValueId x = c.tensor(0, "input"), w = c.tensor(1, "weight");
  if (c.boolean(6, "transposed", false)) c.fail("transposed convolution is not supported yet");
  if (c.type(x).rank() != 4) c.fail("only 2-D convolution (4-D input) is supported");
  Attrs a{{"stride", c.ints(3, "stride")}, {"padding", c.ints(4, "padding")}, {"dilation", c.ints(5, "dilation")},
          {"groups", c.integer(8, "groups", 1)}};
  ValueId y = c.op(OpKind::Conv2d, {x, w}, a);
  if (c.has(2, "bias")) {
    int64_t O = c.type(w).sizes[0];
    y = bin(c, OpKind::Add, {y, c.op(OpKind::View, {c.tensor(2, "bias")}, Attrs{{"size", Ints{1, O, 1, 1}}})});
  }
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
  const Ints& s = c.type(x).sizes;
  if (s.size() != 4) c.fail("adaptive_avg_pool2d expects a 4-D input");
  if (out[0] == 1 && out[1] == 1) return {reduceOp(c, OpKind::Mean, x, {2, 3}, true)};
  if (s[2] % out[0] || s[3] % out[1]) return {c.op(OpKind::AdaptiveAvgPool2d, {x}, Attrs{{"output_size", out}})};
  Ints k{s[2] / out[0], s[3] / out[1]};
  return {c.op(OpKind::AvgPool2d, {x}, Attrs{{"kernel", k}, {"stride", k}, {"padding", Ints{0}}})};
}

V splitSizes(Converter& c, ValueId x, int64_t dim, const Ints& sizes) {
  V out;
  int64_t at = 0;
  for (int64_t n : sizes) {
    out.push_back(c.op(OpKind::Slice, {x}, Attrs{{"dim", dim}, {"start", at}, {"end", at + n}, {"step", int64_t{1}}}));
    at += n;
  }
  return out;
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

ValueId gelu(Converter& c, ValueId x, const std::string& approx) {
  ValueId half = bin(c, OpKind::Mul, {x, sc(c, 0.5, x)});
  if (approx == "tanh") {
    ValueId x3 = bin(c, OpKind::Mul, {bin(c, OpKind::Mul, {x, x}), x});
    ValueId inner = bin(c, OpKind::Mul, {bin(c, OpKind::Add, {x, bin(c, OpKind::Mul, {x3, sc(c, 0.044715, x)})}), sc(c, 0.7978845608028654, x)});
    return bin(c, OpKind::Mul, {half, bin(c, OpKind::Add, {c.op(OpKind::Tanh, {inner}), sc(c, 1.0, x)})});
  }
  ValueId e = c.op(OpKind::Erf, {bin(c, OpKind::Mul, {x, sc(c, 0.7071067811865476, x)})});
  return bin(c, OpKind::Mul, {half, bin(c, OpKind::Add, {e, sc(c, 1.0, x)})});
}

/// clamp with optional bounds; gradients pass where min <= x <= max.
ValueId clampOp(Converter& c, ValueId x, std::optional<double> lo, std::optional<double> hi) {
  ValueId y = x;
  if (lo) y = c.op(OpKind::Where, {bin(c, OpKind::Lt, {y, sc(c, *lo, x)}), sc(c, *lo, x), y});
  if (hi) y = c.op(OpKind::Where, {bin(c, OpKind::Gt, {y, sc(c, *hi, x)}), sc(c, *hi, x), y});
  return y;
}
std::optional<double> optNumber(Converter& c, size_t i, const char* kw) {
  return c.has(i, kw) ? std::optional<double>(c.number(i, kw)) : std::nullopt;
}

ValueId hardswish(Converter& c, ValueId x) {
  ValueId r6 = clampOp(c, bin(c, OpKind::Add, {x, sc(c, 3.0, x)}), 0.0, 6.0);
  return bin(c, OpKind::Div, {bin(c, OpKind::Mul, {x, r6}), sc(c, 6.0, x)});
}

/// hardsigmoid(x) = clamp(x / 6 + 1/2, 0, 1).
ValueId hardsigmoid(Converter& c, ValueId x) {
  return clampOp(c, bin(c, OpKind::Add, {bin(c, OpKind::Div, {x, sc(c, 6.0, x)}), sc(c, 0.5, x)}), 0.0, 1.0);
}

ValueId leakyRelu(Converter& c, ValueId x, double slope) {
  return c.op(OpKind::Where, {bin(c, OpKind::Gt, {x, sc(c, 0.0, x)}), x, bin(c, OpKind::Mul, {x, sc(c, slope, x)})});
}

ValueId silu(Converter& c, ValueId x) { return bin(c, OpKind::Mul, {x, c.op(OpKind::Sigmoid, {x})}); }

/// Note [Random numbers]: random ops draw from a counter-based generator
/// (Philox4x32-10) keyed by one int64 artifact input, `rng_seed`, that the
/// caller supplies on every call; each random node has its own counter offset.
/// Results are reproducible for a seed, on any backend, but are not
/// PyTorch's random stream.
ValueId randMask(Converter& c, double prob, Ints shape) {  // by value: adding the seed input grows the value table
  Graph& g = c.graph();
  ValueId seed = g.valueNamed("rng_seed");
  if (seed == kNoValue || !g.inputOf(seed))
    seed = g.addInput("rng_seed", TensorType::contiguous(DType::I64, {}), InputRole::UserInput, false);
  int64_t offset = 0;
  for (const Node& n : g.nodes) offset += n.op == OpKind::RandMask;
  return c.op(OpKind::RandMask, {seed}, Attrs{{"prob", prob}, {"offset", offset}, {"shape", shape}});
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
    ValueId rows = c.op(OpKind::View, {c.op(OpKind::Arange, {}, Attrs{{"start", 0.0}, {"end", static_cast<double>(L)}, {"step", 1.0}, {"dtype", std::string("i64")}})},
                        Attrs{{"size", Ints{L, 1}}});
    ValueId cols = c.op(OpKind::Arange, {}, Attrs{{"start", 0.0}, {"end", static_cast<double>(S)}, {"step", 1.0}, {"dtype", std::string("i64")}});
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
V asStrided(Converter& c) {
  ValueId x = c.tensor(0, "self");
  const TensorType t = c.type(x);
  Ints size = c.ints(1, "size"), stride = c.ints(2, "stride");
  int64_t offset = c.has(3, "storage_offset") ? c.integer(3, "storage_offset") : t.offset;
  bool same = size == t.sizes && stride.size() == t.strides.size() && offset == t.offset;
  for (size_t d = 0; same && d < size.size(); ++d) same = size[d] == 1 || stride[d] == t.strides[d];
  if (!same) c.fail("as_strided that moves elements is not supported (only restriding size-1 dims)");
  return {x};
}

const std::map<std::string, ConvertFn>& converters() {
  static const std::map<std::string, ConvertFn> table = {
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
      {"aten.mul.Tensor", [](Converter& c) { return binary(c, OpKind::Mul); }},
      {"aten.mul.Scalar", [](Converter& c) { return binary(c, OpKind::Mul); }},
      {"aten.mul_.Tensor", [](Converter& c) { return binary(c, OpKind::MulInplace); }},
      {"aten.mul_.Scalar", [](Converter& c) { return binary(c, OpKind::MulInplace); }},
      {"aten.div.Tensor", [](Converter& c) { return binary(c, OpKind::Div); }},
      {"aten.div.Scalar", [](Converter& c) { return binary(c, OpKind::Div); }},
      {"aten.neg.default", [](Converter& c) { return unary(c, OpKind::Neg); }},
      {"aten.relu.default", [](Converter& c) { return unary(c, OpKind::Relu); }},
      {"aten.exp.default", [](Converter& c) { return unary(c, OpKind::Exp); }},
      {"aten.log.default", [](Converter& c) { return unary(c, OpKind::Log); }},
      {"aten.tanh.default", [](Converter& c) { return unary(c, OpKind::Tanh); }},
      {"aten.sigmoid.default", [](Converter& c) { return unary(c, OpKind::Sigmoid); }},
      {"aten.gt.Tensor", [](Converter& c) { return binary(c, OpKind::Gt); }},
      {"aten.gt.Scalar", [](Converter& c) { return binary(c, OpKind::Gt); }},
      {"aten.where.self",
       [](Converter& c) -> V {
         return {c.op(OpKind::Where, {c.tensor(0, "condition"), c.tensor(1, "self"), c.tensor(2, "other")})};
       }},
      {"aten.sum.default", [](Converter& c) { return reduce(c, OpKind::Sum, false); }},
      {"aten.sum.dim_IntList", [](Converter& c) { return reduce(c, OpKind::Sum, true); }},
      {"aten.mean.default", [](Converter& c) { return reduce(c, OpKind::Mean, false); }},
      {"aten.mean.dim", [](Converter& c) { return reduce(c, OpKind::Mean, true); }},
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
      {"aten.clone.default", [](Converter& c) { return unary(c, OpKind::Clone); }},
      {"aten.detach.default", [](Converter& c) { return unary(c, OpKind::Detach); }},
      {"aten.sqrt.default", [](Converter& c) { return unary(c, OpKind::Sqrt); }},
      {"aten.rsqrt.default", [](Converter& c) { return unary(c, OpKind::Rsqrt); }},
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
      {"aten.lift_fresh_copy.default", [](Converter& c) { return unary(c, OpKind::Clone); }},
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
      {"aten.abs.default", [](Converter& c) { return unary(c, OpKind::Abs); }},
      {"aten.sin.default", [](Converter& c) { return unary(c, OpKind::Sin); }},
      {"aten.cos.default", [](Converter& c) { return unary(c, OpKind::Cos); }},
      {"aten.erf.default", [](Converter& c) { return unary(c, OpKind::Erf); }},
      {"aten.sign.default", [](Converter& c) { return unary(c, OpKind::Sign); }},
      {"aten.pow.Tensor_Scalar", [](Converter& c) { return binary(c, OpKind::Pow); }},
      {"aten.pow.Tensor_Tensor", [](Converter& c) { return binary(c, OpKind::Pow); }},
      {"aten.maximum.default", [](Converter& c) { return binary(c, OpKind::Maximum); }},
      {"aten.minimum.default", [](Converter& c) { return binary(c, OpKind::Minimum); }},
      {"aten.lt.Tensor", [](Converter& c) { return binary(c, OpKind::Lt); }},
      {"aten.lt.Scalar", [](Converter& c) { return binary(c, OpKind::Lt); }},
      {"aten.le.Tensor", [](Converter& c) { return binary(c, OpKind::Le); }},
      {"aten.le.Scalar", [](Converter& c) { return binary(c, OpKind::Le); }},
      {"aten.ge.Tensor", [](Converter& c) { return binary(c, OpKind::Ge); }},
      {"aten.ge.Scalar", [](Converter& c) { return binary(c, OpKind::Ge); }},
      {"aten.eq.Tensor", [](Converter& c) { return binary(c, OpKind::Eq); }},
      {"aten.eq.Scalar", [](Converter& c) { return binary(c, OpKind::Eq); }},
      {"aten.ne.Tensor", [](Converter& c) { return binary(c, OpKind::Ne); }},
      {"aten.ne.Scalar", [](Converter& c) { return binary(c, OpKind::Ne); }},
      {"aten.logical_and.default", [](Converter& c) { return binary(c, OpKind::LogicalAnd); }},
      {"aten.logical_or.default", [](Converter& c) { return binary(c, OpKind::LogicalOr); }},
      {"aten.logical_not.default", [](Converter& c) { return unary(c, OpKind::LogicalNot); }},
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
      {"aten.alias.default", [](Converter& c) { return unary(c, OpKind::Detach); }},
      {"aten.as_strided.default", asStrided},
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
      {"aten.arange.start_step",
       [](Converter& c) -> V {
         double start = c.number(0, "start"), end = c.number(1, "end"), step = c.number(2, "step", 1.0);
         const json* s0 = c.arg(0, "start");
         bool ints = s0 && s0->is_number_integer() && c.arg(1, "end")->is_number_integer();
         DType d = dtypeArg(c, 3, "dtype", ints ? DType::I64 : DType::F32);
         return {c.op(OpKind::Arange, {}, Attrs{{"start", start}, {"end", end}, {"step", step}, {"dtype", std::string(dtypeName(d))}})};
       }},
      {"aten.arange.default",
       [](Converter& c) -> V {
         double end = c.number(0, "end");
         DType d = dtypeArg(c, 1, "dtype", c.arg(0, "end")->is_number_integer() ? DType::I64 : DType::F32);
         return {c.op(OpKind::Arange, {}, Attrs{{"start", 0.0}, {"end", end}, {"step", 1.0}, {"dtype", std::string(dtypeName(d))}})};
       }},
      {"aten.copy_.default",
       [](Converter& c) -> V { return {c.op(OpKind::CopyInplace, {c.tensor(0, "self"), c.tensor(1, "src")})}; }},
  };
  return table;
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
    if (!converters().count(target)) unknown[target].push_back(nodeLoc(n, path));
    if (target == "aotc.autograd_function")
      for (const char* r : {"forward", "backward"})
        if (n.contains(r) && n[r].is_object() && n[r].contains("nodes") && n[r]["nodes"].is_array())
          collectUnknown(n[r]["nodes"], path, unknown);
  }
}

/// Converts FX nodes into `g`, binding their names in `env`.
void convertBody(Graph& g, const json& nodes, Env& env, const std::string& path, bool backward,
                 const std::map<std::string, std::string>* userNames = nullptr) {
  std::set<std::string> names;
  for (auto& [k, v] : env) names.insert(k);
  for (auto& n : nodes) {
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
      env[name] = {it->second[static_cast<size_t>(i)]};
      continue;
    }
    bool noGrad = n.contains("grad_enabled") && n["grad_enabled"].is_boolean() && !n["grad_enabled"].get<bool>();
    Converter c(g, n, loc, env, noGrad);
    c.setInBackward(backward);
    c.setNames(userNames);
    const size_t firstNew = g.values.size();
    std::vector<ValueId> outs;
    try {
      outs = converters().at(target)(c);
    } catch (const json::exception& e) {
      throw UserError(loc, std::string("malformed arguments: ") + e.what());
    } catch (const UserError& e) {
      // A shape helper the converter called directly knows no node: this one.
      std::vector<Diagnostic> d = e.diagnostics();
      for (Diagnostic& x : d)
        if (x.loc.file.empty() && x.loc.node.empty()) x.loc = loc;
      throw UserError(d);
    }
    if (n.contains("meta")) {
      const json& meta = n["meta"];
      std::vector<json> metas = meta.is_array() ? std::vector<json>(meta.begin(), meta.end()) : std::vector<json>{meta};
      if (metas.size() != outs.size()) throw UserError(loc, cat("meta lists ", metas.size(), " results, the op has ", outs.size()));
      for (size_t i = 0; i < outs.size(); ++i) {
        if (metas[i].is_null()) continue;
        TensorType want = parseTensorType(metas[i], loc, "meta");
        const TensorType& got = g.type(outs[i]);
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

std::vector<GraphOutput> convertOutputs(const json& outputs, const Env& env, const std::string& path, OutputRole role) {
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
  convertBody(g, region["nodes"], env, path, backward, names);
  g.outputs = convertOutputs(region["outputs"], env, path, backward ? OutputRole::Grad : OutputRole::User);
  return g;
}

}  // namespace

FxModel loadFxGraphUnchecked(const std::string& text, const std::string& path);

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

FxModel loadFxGraphText(const std::string& text, const std::string& path) {
  try {
    return loadFxGraphUnchecked(text, path);
  } catch (const json::exception& e) {
    throw UserError(SourceLoc{path, "", ""}, std::string("malformed FX graph: ") + e.what());
  }
}

FxModel loadFxGraphUnchecked(const std::string& text, const std::string& path) {
  const SourceLoc fileLoc{path, "", ""};
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    // nlohmann's message already holds the line and column.
    std::string msg = e.what();
    auto p = msg.find("parse error");
    throw UserError(SourceLoc{path, "", ""},
                    "malformed JSON: " + (p == std::string::npos ? msg : msg.substr(p)));
  }
  auto need = [&](const char* key, json::value_t t, const char* what) -> const json& {
    if (!doc.is_object() || !doc.contains(key) || doc[key].type() != t)
      throw UserError(fileLoc, cat("missing or malformed '", key, "' (expected ", what, ")"));
    return doc[key];
  };
  if (!doc.is_object() || doc.value("format", "") != "aotc.fx_graph")
    throw UserError(fileLoc, "not an aotc FX graph (\"format\" must be \"aotc.fx_graph\")");
  // Version 2 added source locations, tied-parameter aliases, specialized
  // arguments and output paths, all optional: version 1 files read as before.
  if (!doc.contains("version") || !doc["version"].is_number_integer() || doc["version"].get<int64_t>() < 1 ||
      doc["version"].get<int64_t>() > 2)
    throw UserError(fileLoc, "unsupported FX graph version " + (doc.contains("version") ? doc["version"].dump() : "(none)") +
                                 "; this aotc reads versions 1 and 2");
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
  convertBody(m.graph, nodes, env, path, false);
  m.graph.outputs = convertOutputs(outputs, env, path, OutputRole::User);
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
