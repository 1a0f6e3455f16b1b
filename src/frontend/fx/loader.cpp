//===- fx/loader.cpp - FX JSON (v1) -> captured IR: the document ------------===//
//
// The FX front end's loader: reads the file, checks the document (format,
// signature, weights), walks its nodes and hands each to the converter of its
// target (table.cpp), evaluating shape computations as it goes (Note [Shape
// computations]); every problem is a UserError naming the file and the node.
// The converters themselves are in this folder, one file per op family (Note
// [FX converter tables], converter.h).
//===----------------------------------------------------------------------===//
#include "aotc/frontend/fx.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <tuple>
#include <thread>

#include "aotc/ir/autocast_tags.h"
#include "aotc/ir/safetensors.h"
#include "aotc/ir/unify.h"
#include "aotc/support/parallel.h"
#include "converter.h"

namespace aotc {

namespace fx {

namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxFileBytes = 1ull << 30;
/// Bounded work on hostile input: the largest real models export a few tens
/// of thousands of ATen nodes.
constexpr size_t kMaxNodes = 250000;

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
                 std::set<ValueId>& complex, const std::map<std::string, std::string>* userNames = nullptr,
                 const Builder::TableSink* tables = nullptr) {
  std::set<std::string> names;
  for (auto& [k, v] : env) names.insert(k);
  std::map<std::string, json> scalars;  // Note [Shape computations]
  std::map<ValueId, Ints> layout;       // strides the graph recorded
  std::set<ValueId> snapshots;          // Note [as_strided as a gather]
  bool autocastSeen = false;            // Note [Autocast regions]: a region ran before (or is running)
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
    // Note [Autocast regions]: "autocast": "bfloat16" / "float16" / false
    // tags the node's IR nodes for the autocast pass.
    uint32_t autocastTag = kTagNone;
    if (n.contains("autocast")) {
      const json& a = n["autocast"];
      autocastTag = a == "bfloat16" ? kAutocastBf16 : a == "float16" ? kAutocastFp16 : a == false ? kAutocastOff : ~0u;
      if (autocastTag == ~0u) throw UserError(loc, "autocast must be \"bfloat16\", \"float16\" or false");
      autocastSeen = autocastSeen || autocastTag != kAutocastOff;
    }
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
    c.setTables(tables);
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
    for (size_t k = firstNode; k < g.nodes.size(); ++k) g.nodes[k].tags |= autocastTag;
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
        // The dtypes autocast gives are the autocast pass's to make.
        if (want.sizes != got.sizes || (want.dtype != got.dtype && !autocastSeen))
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

}  // namespace

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

}  // namespace fx

using namespace fx;

FxModel loadFxGraphUnchecked(const std::string& text, const std::string& path);

bool isSupportedFxTarget(const std::string& target) { return knownTarget(target); }

std::vector<std::string> supportedFxTargets() {
  std::vector<std::string> v;
  for (auto& [k, f] : converters()) v.push_back(k);
  return v;
}

FxModel loadFxJson(const json& doc, const std::string& path, const std::map<std::string, HostTensor>* held);

FxModel loadFxDocument(const json& doc, const std::string& path, std::map<std::string, HostTensor> weights) {
  try {
    return loadFxJson(doc, path, &weights);
  } catch (const json::exception& e) {
    throw UserError(SourceLoc{path, "", ""}, std::string("malformed graph: ") + e.what());
  }
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

FxModel convertFxDocument(const json& doc, const std::string& path, const std::map<std::string, HostTensor>* held);

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
  return loadFxJson(parseFxJson(text, path), path, nullptr);
}

/// A parsed document; `held`: initial values in memory (loadFxDocument).
FxModel loadFxJson(const json& doc, const std::string& path, const std::map<std::string, HostTensor>* held) {
  const SourceLoc fileLoc{path, "", ""};
  std::vector<SymbolDecl> symbols = doc.is_object() ? fxSymbols(doc, fileLoc) : std::vector<SymbolDecl>{};
  if (symbols.empty()) return convertFxDocument(doc, path, held);
  // Note [Dynamic FX graphs].
  // The probes convert independently, on one thread per core (the first
  // failing probe's error is the one reported, as a serial loop would).
  const std::vector<sym::Bindings> probes = probeBindings(symbols);
  std::vector<FxModel> models(probes.size());
  parallelFor(probes.size(), std::max(1u, std::thread::hardware_concurrency()), [&](size_t i) {
    try {
      models[i] = convertFxDocument(atBinding(doc, probes[i], fileLoc), path, held);
    } catch (const UserError& e) {
      std::vector<Diagnostic> d = e.diagnostics();
      for (Diagnostic& x : d) x.message += " (converting at " + bindingText(probes[i]) + ", a probe of the dynamic sizes)";
      throw UserError(std::move(d));
    }
  });
  // Note [Constant tables]: the artifact stores one table's values, those of
  // the first probe; a table that differs between probes (upsampling a
  // dynamic dim) would be wrong at other sizes.
  for (const auto& [name, t] : models[0].weights) {
    if (held && held->count(name)) continue;
    for (size_t i = 1; i < models.size(); ++i) {
      auto it = models[i].weights.find(name);
      if (it == models[i].weights.end() || it->second.sizes != t.sizes || it->second.data != t.data)
        throw UserError(SourceLoc{path, name, "constant"},
                        "the values this op computes when compiling (its constant table) depend on a dynamic size; give that dim a static size");
    }
  }
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

FxModel convertFxDocument(const json& doc, const std::string& path, const std::map<std::string, HostTensor>* held) {
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
  std::string weights = held ? "" : need("weights", json::value_t::string, "a file name").get<std::string>();
  // Path tricks: the weights file is a plain name resolved beside the JSON.
  if (!held && (weights.empty() || weights.find('/') != std::string::npos || weights.find('\\') != std::string::npos ||
      weights == "." || weights == ".."))
    throw UserError(fileLoc, "'weights' must be a plain file name beside the model, got '" + weights + "'");

  FxModel m;
  m.graph.name = doc.value("name", "model");
  if (!validName(m.graph.name)) m.graph.name = "model";
  if (!held) m.weights_path = (fs::path(path).parent_path() / weights).string();

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
  if (needWeights && held) {
    for (auto& gi : m.graph.inputs) {
      if (gi.role == InputRole::UserInput) continue;
      const std::string& n = m.graph.values[gi.value].name;
      auto it = held->find(n);
      if (it == held->end()) throw UserError(SourceLoc{path, n, "input"}, cat(inputRoleName(gi.role), " has no initial value"));
      const TensorType& t = m.graph.type(gi.value);
      if (it->second.dtype != t.dtype || it->second.sizes != t.sizes)
        throw UserError(SourceLoc{path, n, "input"}, cat("initial value is ", dtypeName(it->second.dtype), " ",
                                 TensorType::contiguous(it->second.dtype, it->second.sizes).str(), ", the graph declares ", t.str()));
      m.weights[n] = it->second;
    }
  } else if (needWeights) {
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
  // Note [Constant tables]: a table the converters compute is a constant
  // input whose values the model holds in memory (the artifact's weights
  // take them beside the weights file's); equal tables share one input.
  std::map<std::tuple<DType, Ints, std::vector<double>>, ValueId> tableIds;
  const Builder::TableSink tables = [&](HostTensor t, const std::string& hint) {
    auto key = std::make_tuple(t.dtype, t.sizes, t.data);
    if (auto it = tableIds.find(key); it != tableIds.end()) return it->second;
    std::string name = m.graph.uniqueName(validName(hint) ? hint : "table");
    ValueId v = m.graph.addInput(name, TensorType::contiguous(t.dtype, t.sizes), InputRole::Constant, false);
    m.weights[name] = std::move(t);
    tableIds.emplace(std::move(key), v);
    return v;
  };
  convertBody(m.graph, nodes, env, path, false, complex, nullptr, &tables);
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
