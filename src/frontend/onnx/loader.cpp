//===- onnx/loader.cpp - ONNX -> captured IR: the model ---------------------===//
//
// Note [ONNX front end]: a model is read with the protobuf classes of ONNX
// 1.12 (libonnx-dev), its model-local functions inlined (functions.cpp),
// checked by ONNX's checker, and its shapes inferred by ONNX's C++ shape
// inference once every symbolic dim is bound (--shape, --dim); a model of an
// opset newer than ONNX 1.12 knows (18 to 28) is checked by aotc's own rules
// instead (Note [Newer opsets]).  Each node is then converted by the converter of its op type, at the
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
//
// The converters themselves are in this folder, one file per op family (Note
// [ONNX converter tables], node.h).
//===----------------------------------------------------------------------===//
#include "aotc/frontend/onnx.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <fstream>

#include "aotc/ir/safetensors.h"
#include "aotc/ir/unify.h"
#include "aotc/ops/reference.h"
#include "node.h"

namespace aotc {

namespace onnx_fe {

namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxFileBytes = uint64_t{2} << 30;  // protobuf's own limit
constexpr int kMaxSubgraphDepth = 16;
/// The newest default-domain opset aotc reads: the one ONNX 1.23.2 (the
/// pinned `onnx` of scripts/requirements/torch2.txt) defines.
constexpr int kMaxOpset = 28;

/// A valid aotc name for an ONNX name: characters outside [A-Za-z0-9_.-]
/// become '_' (ONNX names such as `onnx::Conv_12` or `/l1/Relu_output_0`).
std::string sanitize(const std::string& s) {
  std::string r;
  for (char c : s) r += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ? c : '_';
  if (r.empty()) r = "v";
  if (r.size() > 200) r = r.substr(0, 200);
  return r;
}

/// The ONNX values of one graph by name; a subgraph's scope sees its
/// enclosing graphs' values (Note [ONNX control flow]).
struct Scope {
  std::map<std::string, OValue> values;
  Scope* parent = nullptr;
  OValue* find(const std::string& name) {
    for (Scope* s = this; s; s = s->parent)
      if (auto it = s->values.find(name); it != s->values.end()) return &it->second;
    return nullptr;
  }
};

/// Builds a node's IR through a Builder over the given graph, resolving its
/// inputs and constants there (Note [Compile-time values]).
using Emit = std::function<Outs(Graph&, const Node::Resolve&, const Node::MakeConstant&)>;

class Loader : public Subgraphs {
 public:
  Loader(std::string path, const FrontendOptions& opts) : path_(std::move(path)), opts_(opts), dir_(fs::path(path_).parent_path()) {}

  Model load(const std::string& bytes);

  // Subgraphs (Note [ONNX control flow]).
  std::vector<OValue> convertBody(const onnx::GraphProto& body, std::vector<OValue> inputs, const std::string& prefix, const SourceLoc& loc) override;
  std::vector<OValue> apply(const SourceLoc& loc, const std::vector<const OValue*>& ins, const std::function<V(Builder&, const V&)>& fn) override;
  void want(const OValue& v) override { wanted_->insert(v.dependsOn.begin(), v.dependsOn.end()); }
  bool train() const override { return opts_.train; }
  const Graph& graph() const override { return model_->graph; }

 private:
  [[noreturn]] void fail(const std::string& msg, const std::string& node = "", const std::string& op = "") const {
    throw UserError(SourceLoc{path_, node, op}, msg);
  }
  void bindDims(onnx::GraphProto& g);
  void check(onnx::ModelProto& m);
  void inferAndCompare(onnx::ModelProto& m);
  void compareDeclared(const onnx::ModelProto& m);
  Model convert(const onnx::ModelProto& m, const std::set<std::string>& forcedConst, std::set<std::string>& baked,
                std::set<std::string>& wanted);
  ValueId materialize(Model& model, OValue& v, const std::string& name);
  void convertNodes(const onnx::GraphProto& gp, Scope& scope, const std::string& prefix);
  void convertNode(const onnx::NodeProto& n, const std::string& nodeName, Scope& scope);
  Outs emit(const std::vector<const OValue*>& ins, const std::vector<std::string>& names, const std::string& constName,
            const Emit& fn);

  std::string path_;
  const FrontendOptions& opts_;
  fs::path dir_;
  int opset_ = 0;
  /// Every node output aotc typed, where it came from (compared with ONNX's
  /// shape inference once the conversion succeeded).
  std::map<std::string, std::pair<TensorType, SourceLoc>> produced_;
  std::map<std::string, HostTensor> constantValues_;  ///< --constant-inputs
  std::set<std::string> constantInputs_;              ///< the graph inputs taken from it
  // While converting (convert()):
  Model* model_ = nullptr;
  std::set<std::string>* baked_ = nullptr;
  std::set<std::string>* wanted_ = nullptr;
  Scope* scope_ = nullptr;  ///< the scope of the node being converted
  size_t convertedNodes_ = 0;  ///< nodes converted, unrolled bodies counted per iteration
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
  if (opset_ > kCheckerOpset) return;  // Note [Newer opsets]
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
  if (opset_ > kCheckerOpset) {
    compareDeclared(m);
    return;
  }
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

/// Note [Newer opsets]: ONNX 1.12's checker and shape inference know opsets
/// up to 17; a newer model is checked by aotc itself instead.  Its converters
/// check every input's rank, dtype and attribute as they build the IR, and
/// the builder infers every shape by aotc's own rules; this compares those
/// shapes with what the model declares (value_info and graph outputs): a
/// declared element type or static dim that differs is refused, as ONNX's
/// shape inference refuses a declared shape that contradicts the ops.
void Loader::compareDeclared(const onnx::ModelProto& m) {
  auto check = [&](const onnx::ValueInfoProto& vi) {
    auto it = produced_.find(vi.name());
    if (it == produced_.end() || !vi.type().has_tensor_type()) return;
    const TensorType& ours = it->second.first;
    if (!declaredAgrees(vi.type().tensor_type(), ours))
      throw UserError(it->second.second, cat("output '", vi.name(), "': aotc computes ", TensorType::contiguous(ours.dtype, ours.sizes).str(),
                                             " but the model declares ", declaredText(vi.type().tensor_type())));
  };
  for (const auto& vi : m.graph().value_info()) check(vi);
  for (const auto& vi : m.graph().output()) check(vi);
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
  Scope top;
  for (auto& [name, v] : env) top.values[name] = std::move(v);
  model_ = &model;
  baked_ = &baked;
  wanted_ = &wanted;
  scope_ = &top;
  convertedNodes_ = 0;
  convertNodes(gp, top, "");
  // Graph outputs.
  for (const auto& out : gp.output()) {
    auto it = top.values.find(out.name());
    if (it == top.values.end()) fail("graph output is not computed by any node", out.name());
    ValueId v = materialize(model, it->second, out.name());
    g.outputs.push_back(GraphOutput{v, OutputRole::User, "", std::nullopt, {}});
  }
  return model;
}

/// Note [Compile-time values]: a node whose inputs are all known is built
/// into a scratch graph and evaluated there by the reference kernels; any
/// other into the model's graph.
Outs Loader::emit(const std::vector<const OValue*>& ins, const std::vector<std::string>& names, const std::string& constName,
                  const Emit& fn) {
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
    Outs r = fn(scratch, [&](size_t k) { return ids[k]; }, [&](HostTensor t) {
      ValueId id = scratch.addInput(cat("k", vals.size()), TensorType::contiguous(t.dtype, t.sizes), InputRole::Constant, false);
      vals.push_back(std::move(t));
      return id;
    });
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
      return r;
    }
  }
  return fn(model_->graph, [&](size_t k) { return materialize(*model_, const_cast<OValue&>(*ins[k]), names[k]); }, [&](HostTensor t) {
    OValue v;
    v.known = std::move(t);
    return materialize(*model_, v, constName);
  });
}

void Loader::convertNodes(const onnx::GraphProto& gp, Scope& scope, const std::string& prefix) {
  int index = 0;
  for (const auto& n : gp.node()) {
    std::string nodeName = prefix + (n.name().empty() ? cat("#", index) : n.name());
    ++index;
    convertNode(n, nodeName, scope);
  }
}

void Loader::convertNode(const onnx::NodeProto& n, const std::string& nodeName, Scope& scope) {
  SourceLoc loc{path_, nodeName, n.op_type()};
  if (++convertedNodes_ > kMaxNodes)
    throw UserError(loc, cat("the model converts to more than ", kMaxNodes, " nodes (unrolled loops and scans counted once per iteration)"));
  std::vector<const OValue*> ins;
  std::vector<std::string> names;
  for (const std::string& name : n.input()) {
    names.push_back(name);
    if (name.empty()) {
      ins.push_back(nullptr);
      continue;
    }
    const OValue* v = scope.find(name);
    if (!v) throw UserError(loc, "input '" + name + "' is not defined before this node (an undefined name or a cycle)");
    ins.push_back(v);
  }
  std::set<std::string> deps;
  for (const OValue* v : ins)
    if (v) deps.insert(v->dependsOn.begin(), v->dependsOn.end());
  std::vector<OValue> results;
  if (isControlFlow(n.op_type())) {
    // Note [ONNX control flow]: its subgraphs see this node's scope.
    Scope* saved = scope_;
    scope_ = &scope;
    try {
      results = convertControlFlow(n, loc, opset_, ins, *this);
    } catch (...) {
      scope_ = saved;
      throw;
    }
    scope_ = saved;
  } else {
    auto conv = converters().find(n.op_type());
    if (conv == converters().end()) throw UserError(loc, cat("op ", n.op_type(), " is not supported"));
    Convert fn = conv->second;
    Outs outs = emit(ins, names, sanitize(nodeName) + ".constant", [&](Graph& g, const Node::Resolve& resolve, const Node::MakeConstant& mk) {
      Node c(g, loc, n, opset_, ins, resolve, opts_.train, baked_, wanted_);
      c.setMakeConstant(mk);
      const Builder::TableSink tables = [&c](HostTensor t, const std::string&) { return c.constant(std::move(t)); };
      c.setTables(&tables);
      return fn(c);
    });
    for (Out& o : outs) {
      OValue v;
      if (o.known) {
        v.known = std::move(o.known);
        v.type = TensorType::contiguous(v.known->dtype, v.known->sizes);
      } else if (o.id != kNoValue) {
        v.id = o.id;
        v.type = model_->graph.type(v.id);
      }
      results.push_back(std::move(v));
    }
  }
  Graph& g = model_->graph;
  for (int k = 0; k < n.output_size(); ++k) {
    const std::string& name = n.output(k);
    if (name.empty()) continue;
    if (static_cast<size_t>(k) >= results.size() || (results[k].id == kNoValue && !results[k].known))
      throw UserError(loc, cat("output ", k, " ('", name, "') is not supported"));
    if (scope.values.count(name)) throw UserError(loc, "output '" + name + "' is defined twice");
    OValue v = std::move(results[k]);
    v.dependsOn.insert(deps.begin(), deps.end());
    v.initializer.clear();
    v.graphInput.clear();
    if (v.id != kNoValue && !v.known && !g.inputOf(v.id) && g.values[v.id].node >= 0) g.tryRename(v.id, sanitize(name));
    if (!scope.parent) produced_[name] = {v.type, loc};
    scope.values[name] = std::move(v);
  }
}

/// Note [ONNX control flow]: a subgraph is converted into a scope of its
/// own, its inputs bound to the given values, its initializers known values
/// (never parameters: a body's tensors are the model's constants), every
/// other name resolved in the enclosing scopes.
std::vector<OValue> Loader::convertBody(const onnx::GraphProto& body, std::vector<OValue> inputs, const std::string& prefix, const SourceLoc& loc) {
  if (body.input_size() != static_cast<int>(inputs.size()))
    throw UserError(loc, cat("subgraph '", body.name(), "' has ", body.input_size(), " inputs; the op binds ", inputs.size()));
  if (body.sparse_initializer_size() > 0) throw UserError(loc, cat("subgraph '", body.name(), "' has sparse initializers, which aotc does not read"));
  Scope scope;
  scope.parent = scope_;
  for (int k = 0; k < body.input_size(); ++k) {
    const auto& vi = body.input(k);
    if (std::string why = nonTensorType(vi.type()); !why.empty())
      throw UserError(loc, cat("subgraph '", body.name(), "' input '", vi.name(), "' ", why));
    if (std::string why = declaredMismatch(vi.type(), inputs[static_cast<size_t>(k)].type); !why.empty())
      throw UserError(loc, cat("subgraph '", body.name(), "' input '", vi.name(), "' ", why));
    if (!scope.values.emplace(vi.name(), std::move(inputs[static_cast<size_t>(k)])).second)
      throw UserError(loc, cat("subgraph '", body.name(), "' has two inputs named '", vi.name(), "'"));
  }
  for (const auto& t : body.initializer()) {
    OValue v;
    v.known = readTensor(t, dir_, loc, "subgraph initializer");
    v.type = TensorType::contiguous(v.known->dtype, v.known->sizes);
    if (!scope.values.emplace(t.name(), std::move(v)).second)
      throw UserError(loc, cat("subgraph '", body.name(), "' defines '", t.name(), "' twice"));
  }
  for (const auto& vi : body.output())
    if (std::string why = nonTensorType(vi.type()); !why.empty())
      throw UserError(loc, cat("subgraph '", body.name(), "' output '", vi.name(), "' ", why));
  convertNodes(body, scope, prefix);
  std::vector<OValue> outs;
  for (const auto& vi : body.output()) {
    const OValue* v = scope.find(vi.name());
    if (!v) throw UserError(loc, cat("subgraph '", body.name(), "' output '", vi.name(), "' is not computed by any node"));
    if (std::string why = declaredMismatch(vi.type(), v->type); !why.empty())
      throw UserError(loc, cat("subgraph '", body.name(), "' output '", vi.name(), "' ", why));
    outs.push_back(*v);
  }
  return outs;
}

std::vector<OValue> Loader::apply(const SourceLoc& loc, const std::vector<const OValue*>& ins, const std::function<V(Builder&, const V&)>& fn) {
  std::vector<std::string> names(ins.size(), sanitize(loc.node) + ".in");
  Outs outs = emit(ins, names, sanitize(loc.node) + ".constant", [&](Graph& g, const Node::Resolve& resolve, const Node::MakeConstant&) {
    Builder b(g, loc);
    V ids;
    for (size_t k = 0; k < ins.size(); ++k) ids.push_back(ins[k] ? resolve(k) : kNoValue);
    V out = fn(b, ids);
    return Outs(out.begin(), out.end());
  });
  std::set<std::string> deps;
  for (const OValue* v : ins)
    if (v) deps.insert(v->dependsOn.begin(), v->dependsOn.end());
  std::vector<OValue> r;
  for (Out& o : outs) {
    OValue v;
    v.dependsOn = deps;
    if (o.known) {
      v.known = std::move(o.known);
      v.type = TensorType::contiguous(v.known->dtype, v.known->sizes);
    } else {
      v.id = o.id;
      v.type = model_->graph.type(v.id);
    }
    r.push_back(std::move(v));
  }
  return r;
}

Model Loader::load(const std::string& bytes) {
  onnx::ModelProto m;
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) fail("the file is larger than protobuf's 2 GiB limit");
  if (!m.ParseFromString(bytes)) fail("not a valid ONNX model (malformed or truncated protobuf)");
  if (!m.has_graph()) fail("the model has no graph");
  opset_ = importedOpset(m);
  if (opset_ > kMaxOpset) fail(cat("the model uses opset ", opset_, "; aotc reads opsets up to ", kMaxOpset, " (ONNX 1.23)"));
  inlineFunctions(m, path_);
  if (static_cast<size_t>(m.graph().node_size()) > kMaxNodes) fail(cat("the graph has ", m.graph().node_size(), " nodes, more than ", kMaxNodes));

  // Every unsupported op of the model, subgraphs included, at once.
  std::vector<Diagnostic> unsupported;
  std::function<void(const onnx::GraphProto&, const std::string&, int)> scan = [&](const onnx::GraphProto& g, const std::string& prefix, int depth) {
    int index = 0;
    for (const auto& n : g.node()) {
      std::string nodeName = prefix + (n.name().empty() ? cat("#", index) : n.name());
      ++index;
      if (std::string why = unsupportedReason(n, opset_); !why.empty()) unsupported.push_back({SourceLoc{path_, nodeName, n.op_type()}, why});
      for (const auto& a : n.attribute()) {
        if (!a.has_g() && a.graphs_size() == 0) continue;
        if (depth >= kMaxSubgraphDepth) fail(cat("subgraphs are nested more than ", kMaxSubgraphDepth, " deep"), nodeName, n.op_type());
        if (a.has_g()) scan(a.g(), nodeName + "/" + a.name() + "/", depth + 1);
        for (const auto& sub : a.graphs()) scan(sub, nodeName + "/" + a.name() + "/", depth + 1);
      }
    }
  };
  scan(m.graph(), "", 0);
  if (!unsupported.empty()) throw UserError(unsupported);
  if (opset_ <= 0) opset_ = kCheckerOpset;  // only ai.onnx.preview.training: opset 17's semantics

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
  if (auto it = refusedOps().find(n.op_type()); it != refusedOps().end()) return cat("op ", n.op_type(), " (opset ", opset, ") ", it->second);
  if (dataDependentOps().count(n.op_type()))
    return cat("op ", n.op_type(), " (opset ", opset, ") has an output shape that depends on the data, which aotc's static shapes cannot hold");
  if (!converters().count(n.op_type())) return cat("op ", n.op_type(), " (opset ", opset, ") is not supported");
  if (n.domain() != "ai.onnx.preview.training") return versionRefusal(n.op_type(), opset > 0 ? opset : kCheckerOpset, reviewedVersions());
  return "";
}

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


}  // namespace onnx_fe

using namespace onnx_fe;

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
    // Note [Constant tables]: the artifact holds the first probe's values of
    // each constant; one computed from a dynamic size would be wrong at others.
    if (first)
      for (const auto& [name, t] : first->weights)
        if (auto it = m.weights.find(name); it == m.weights.end() || it->second.sizes != t.sizes || it->second.data != t.data)
          throw UserError(SourceLoc{path, name, "constant"},
                          "this constant's values (computed when compiling) depend on a dynamic size; give that dim a static size with --dim");
    graphs.push_back(m.graph);
    if (!first) first = std::move(m);
  }
  Model out = std::move(*first);
  out.graph = unifyGraphs(graphs, symbols, path);
  return out;
}


Model loadOnnx(const std::string& path, const FrontendOptions& opts) { return loadOnnxBytes(onnx_fe::readModelBytes(path), path, opts); }

std::string readOnnxBytes(const std::string& path) { return onnx_fe::readModelBytes(path); }

std::string onnxInputName(const std::string& name) { return onnx_fe::sanitize(name); }

std::vector<std::string> supportedOnnxOps() {
  std::vector<std::string> r;
  for (const auto& [k, v] : converters()) r.push_back(k);
  return r;
}

}  // namespace aotc
