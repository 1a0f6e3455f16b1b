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
constexpr int64_t kMaxElements = int64_t{1} << 40;

bool validName(const std::string& s) {
  if (s.empty() || s.size() > 256) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

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
    if (a->is_number_integer()) return {a->get<int64_t>()};
    if (!a->is_array()) fail(cat("argument ", i, " must be a list of ints, got ", a->dump()));
    Ints v;
    for (auto& x : *a) {
      if (!x.is_number_integer()) fail(cat("argument ", i, " must be a list of ints, got ", a->dump()));
      v.push_back(x.get<int64_t>());
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
  return {c.op(k, {c.tensor(0, "self")}, Attrs{{"dim0", static_cast<int64_t>(c.number(1, "dim0"))},
                                                {"dim1", static_cast<int64_t>(c.number(2, "dim1"))}})};
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
      {"aten.slice.Tensor",
       [](Converter& c) -> V {
         ValueId x = c.tensor(0, "self");
         Attrs a{{"dim", static_cast<int64_t>(c.number(1, "dim", 0.0))},
                 {"start", static_cast<int64_t>(c.number(2, "start", 0.0))},
                 {"step", static_cast<int64_t>(c.number(4, "step", 1.0))}};
         const json* e = c.arg(3, "end");
         a["end"] = (!e || e->is_null()) ? std::numeric_limits<int64_t>::max() : e->get<int64_t>();
         return {c.op(OpKind::Slice, {x}, a)};
       }},
      {"aten.select.int",
       [](Converter& c) -> V {
         return {c.op(OpKind::Select, {c.tensor(0, "self")},
                      Attrs{{"dim", static_cast<int64_t>(c.number(1, "dim"))}, {"index", static_cast<int64_t>(c.number(2, "index"))}})};
       }},
      {"aten.lift_fresh_copy.default", [](Converter& c) { return unary(c, OpKind::Clone); }},
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
      if (!s.is_number_integer() || s.get<int64_t>() < 0) throw fail("stride must hold non-negative integers");
      st.push_back(s.get<int64_t>());
    }
    t.strides = st;
  }
  return t;
}

void collectUnknown(const json& nodes, const std::string& path, std::map<std::string, std::vector<std::string>>& unknown) {
  for (auto& n : nodes) {
    if (!n.is_object() || !n.contains("name") || !n["name"].is_string() || !n.contains("target") ||
        !n["target"].is_string() || !n.contains("args") || !n["args"].is_array())
      throw UserError(SourceLoc{path, "", ""}, "malformed node " + n.dump().substr(0, 120) + " (needs name, target, args)");
    const std::string target = n["target"].get<std::string>();
    if (target == "getitem") continue;
    if (!converters().count(target)) unknown[target].push_back(n["name"].get<std::string>());
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
    SourceLoc loc{path, name, target};
    if (!validName(name)) throw UserError(loc, "node name must be 1-256 characters of [A-Za-z0-9_.]");
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

std::vector<std::string> supportedFxTargets() {
  std::vector<std::string> v;
  for (auto& [k, f] : converters()) v.push_back(k);
  return v;
}

FxModel loadFxGraph(const std::string& path) {
  std::string text = readFile(path);
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
  if (!doc.contains("version") || !doc["version"].is_number_integer() || doc["version"].get<int>() != 1)
    throw UserError(fileLoc, "unsupported FX graph version " + (doc.contains("version") ? doc["version"].dump() : "(none)") +
                                 "; this aotc reads version 1");
  const json& inputs = need("inputs", json::value_t::array, "an array");
  const json& nodes = need("nodes", json::value_t::array, "an array");
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
    if (!validName(name)) throw UserError(loc, "input name must be 1-256 characters of [A-Za-z0-9_.]");
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
  std::map<std::string, std::vector<std::string>> unknown;
  collectUnknown(nodes, path, unknown);
  if (!unknown.empty()) {
    std::vector<Diagnostic> diags;
    for (auto& [op, names] : unknown) {
      std::string list;
      for (size_t i = 0; i < names.size() && i < 5; ++i) list += (i ? ", " : "") + names[i];
      if (names.size() > 5) list += ", ...";
      diags.push_back({SourceLoc{path, names.front(), op},
                       cat("unsupported op (", names.size(), " node", names.size() > 1 ? "s" : "", ": ", list, ")")});
    }
    throw UserError(diags);
  }
  convertBody(m.graph, nodes, env, path, false);
  m.graph.outputs = convertOutputs(outputs, env, path, OutputRole::User);

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
