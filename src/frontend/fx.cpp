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

/// One FX node being converted.
class Converter {
 public:
  Converter(Graph& g, const json& node, SourceLoc loc, const std::map<std::string, ValueId>& env)
      : g_(g), node_(node), loc_(std::move(loc)), env_(env) {}

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
    return it->second;
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
  ValueId scalar(double v, DType d) {
    return op(OpKind::Constant, {}, Attrs{{"value", v}, {"dtype", std::string(dtypeName(d))}});
  }
  ValueId op(OpKind k, std::vector<ValueId> ins, Attrs a = {}) { return g_.add(k, std::move(ins), std::move(a), loc_); }
  /// Multiplies by `alpha` unless it is 1.
  ValueId scaled(ValueId v, double alpha) {
    return alpha == 1.0 ? v : op(OpKind::Mul, {v, scalar(alpha, g_.type(v).dtype)});
  }
  const TensorType& type(ValueId v) const { return g_.type(v); }

 private:
  Graph& g_;
  const json& node_;
  SourceLoc loc_;
  const std::map<std::string, ValueId>& env_;
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

  std::map<std::string, ValueId> env;
  bool needWeights = false;
  for (auto& in : inputs) {
    std::string name = in.is_object() && in.contains("name") && in["name"].is_string() ? in["name"].get<std::string>() : "";
    SourceLoc loc{path, name, "input"};
    if (!validName(name)) throw UserError(loc, "input name must be 1-256 characters of [A-Za-z0-9_.]");
    if (env.count(name)) throw UserError(loc, "input name is not unique");
    auto role = parseInputRole(in.value("role", ""));
    if (!role || *role == InputRole::Tangent || *role == InputRole::Saved)
      throw UserError(loc, "role must be parameter, buffer or user_input");
    if (!in.contains("requires_grad") || !in["requires_grad"].is_boolean()) throw UserError(loc, "missing requires_grad");
    TensorType t = parseTensorType(in, loc, "input");
    bool rg = in["requires_grad"].get<bool>();
    if (rg && !isFloating(t.dtype)) throw UserError(loc, "only floating-point inputs can require grad");
    env[name] = m.graph.addInput(name, t, *role, rg);
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
  std::set<std::string> nodeNames;
  for (auto& n : nodes) {
    if (!n.is_object() || !n.contains("name") || !n["name"].is_string() || !n.contains("target") ||
        !n["target"].is_string() || !n.contains("args") || !n["args"].is_array())
      throw UserError(fileLoc, "malformed node " + n.dump().substr(0, 120) + " (needs name, target, args)");
    std::string name = n["name"].get<std::string>();
    if (!validName(name)) throw UserError(SourceLoc{path, name, ""}, "node name must be 1-256 characters of [A-Za-z0-9_.]");
    if (!nodeNames.insert(name).second || env.count(name))
      throw UserError(SourceLoc{path, name, n["target"].get<std::string>()}, "node name is not unique");
    if (n.contains("kwargs") && !n["kwargs"].is_object())
      throw UserError(SourceLoc{path, name, n["target"].get<std::string>()}, "kwargs must be an object");
    if (!converters().count(n["target"].get<std::string>())) unknown[n["target"].get<std::string>()].push_back(name);
  }
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

  for (auto& n : nodes) {
    std::string name = n["name"].get<std::string>(), target = n["target"].get<std::string>();
    SourceLoc loc{path, name, target};
    Converter c(m.graph, n, loc, env);
    const size_t firstNew = m.graph.values.size();
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
        TensorType want = parseTensorType(metas[i], loc, "meta");
        const TensorType& got = m.graph.type(outs[i]);
        if (want.sizes != got.sizes || want.dtype != got.dtype)
          throw UserError(loc, cat("shape mismatch: the graph records ", want.str(), ", the op gives ",
                                   TensorType::contiguous(got.dtype, got.sizes).str()));
      }
    }
    AOTC_CHECK(outs.size() == 1, "multi-result FX nodes are not converted yet");
    // The node's result takes the FX node's name, so IR dumps read like the
    // user's graph; a helper value the converter made first gives it up.
    if (m.graph.values[outs[0]].name != name)
      for (size_t v = firstNew; v < m.graph.values.size(); ++v)
        if (m.graph.values[v].name == name) std::swap(m.graph.values[v].name, m.graph.values[outs[0]].name);
    env[name] = outs[0];
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const json& o = outputs[i];
    if (!o.is_object() || !o.contains("node") || !o["node"].is_string())
      throw UserError(SourceLoc{path, cat("output ", i), ""}, "outputs must be {\"node\": name} references to tensors");
    auto it = env.find(o["node"].get<std::string>());
    if (it == env.end())
      throw UserError(SourceLoc{path, cat("output ", i), ""}, "refers to undefined node '" + o["node"].get<std::string>() + "'");
    m.graph.outputs.push_back(GraphOutput{it->second, OutputRole::User, "", std::nullopt, {}});
  }
  return m;
}

}  // namespace aotc
