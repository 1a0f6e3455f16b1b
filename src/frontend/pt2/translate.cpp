//===- pt2/translate.cpp - An exported program as an FX document ------------===//
//
// Note [pt2 front end]
// ~~~~~~~~~~~~~~~~~~~~
// torch.export.save (PyTorch 2.8+) writes an ExportedProgram as JSON
// (torch/_export/serde/schema.py, schema major 8) beside raw weight records.
// Its graph is an ATen-level FX graph, the same kind of graph
// tools/fx_export.py writes in aotc's own JSON, so this room does not convert
// ops: it translates the program into an aotc.fx_graph document and hands it
// to the FX loader (loadFxDocument), whose converter tables are the one table
// of ATen spellings both loaders read.  What the translation does:
//  * arguments: the one-key unions ({"as_tensor": {"name": "x"}}, "as_ints",
//    "as_scalar_type": 7, ...) become the FX document's values ({"node":
//    "x"}, lists, {"dtype": "float32"}); POSITIONAL arguments go to "args",
//    KEYWORD ones to "kwargs"; a kind aotc cannot honour is refused by name;
//  * targets: `torch.ops.aten.X.ov` is `aten.X.ov`; `_assert_tensor_metadata`
//    (a check export already made) is dropped; anything else keeps its
//    spelling, so the FX loader reports every unsupported target at once;
//  * a node with several outputs becomes the node and one getitem per
//    output, as an FX trace has it; each output's recorded dtype and shape
//    (tensor_values) is the node's "meta", which the FX loader checks;
//  * the signature: parameters and buffers are inputs named by their
//    state_dict names, lifted constants are constants, user inputs keep the
//    forward's argument names; a buffer_mutation or user_input_mutation
//    output (run_decompositions()'s Core ATen dialect) becomes a copy_ into
//    the input at the end of the graph, which functionalize turns into the
//    forward epilogue copy, as the training IR's in-place nodes (add_,
//    batch_norm's running statistics, Note [FX converter tables]) are;
//  * symbolic sizes become the document's symbols and {"sym": EXPR}
//    integers (Note [pt2 dynamic sizes], sizes.cpp);
//  * higher-order ops: wrap_with_set_grad_enabled and wrap_with_autocast
//    are inlined (Note [Inlined grad regions]), a surviving cond follows the
//    ONNX door's If (Note [pt2 cond]); any other is reported as an
//    unsupported target;
//  * tokens, custom objects, the joint graph's loss and gradient outputs
//    and other subgraph arguments are refused by name.
// Training follows the ONNX door, not the FX one (frontend.cpp): an exported
// program's parameters require grad whatever the user meant, so they do only
// under --train.
//===----------------------------------------------------------------------===//
#include "translate.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "aotc/support/diag.h"

namespace aotc::pt2 {

namespace {

/// The one key of a serde union, or a UserError.
std::string unionKey(const json& u, const SourceLoc& loc, const char* what) {
  if (!u.is_object() || u.size() != 1) throw UserError(loc, cat("malformed ", what, ": ", u.dump().substr(0, 120)));
  return u.begin().key();
}

const json& field(const json& j, const char* key, const SourceLoc& loc) {
  if (!j.is_object() || !j.contains(key)) throw UserError(loc, cat("malformed program: missing '", key, "'"));
  return j[key];
}

json floatValue(const json& v, const SourceLoc& loc) {
  if (v.is_number()) return v;
  if (v == "Infinity") return {{"float", "inf"}};
  if (v == "-Infinity") return {{"float", "-inf"}};
  if (v == "NaN") return {{"float", "nan"}};
  throw UserError(loc, "malformed float " + v.dump());
}

const char* memoryFormat(const json& v) {
  static const char* names[] = {nullptr, "contiguous_format", "channels_last", "channels_last_3d", "preserve_format"};
  return v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= 4 ? names[v.get<int64_t>()] : nullptr;
}

/// The leaves of a pytree spec (torch.utils._pytree's JSON) below `spec`,
/// named `prefix` plus their tuple/list indices and dict keys; false for a
/// node type it does not know (a namedtuple, a dataclass).
bool leafPaths(const json& spec, const std::string& prefix, std::vector<std::string>& out) {
  if (!spec.is_object()) return false;
  const json type = spec.value("type", json());
  const json children = spec.value("children_spec", json::array());
  if (type.is_null()) {
    out.push_back(prefix);
    return true;
  }
  if (!type.is_string() || !children.is_array()) return false;
  json keys = json::array();
  if (type == "builtins.dict") {
    if (!spec.contains("context") || !spec["context"].is_string()) return false;
    keys = json::parse(spec["context"].get<std::string>(), nullptr, false);
    if (!keys.is_array() || keys.size() != children.size()) return false;
  } else if (type != "builtins.tuple" && type != "builtins.list") {
    return false;
  }
  for (size_t i = 0; i < children.size(); ++i) {
    std::string key = keys.empty() ? std::to_string(i) : keys[i].is_string() ? keys[i].get<std::string>() : keys[i].dump();
    if (!leafPaths(children[i], prefix.empty() ? key : prefix + "." + key, out)) return false;
  }
  return true;
}

/// The user inputs' names by the forward's arguments (`x`, `d.a`, `pair.1`),
/// from module_call_graph[0]'s in_spec and forward_arg_names; empty when the
/// archive does not say or the spec holds a type this reader does not know
/// (the placeholders' names are used then).
std::vector<std::string> argumentPaths(const json& ep) {
  try {
    const json& sig = ep.at("graph_module").at("module_call_graph").at(0).at("signature");
    const json names = sig.at("forward_arg_names");
    const json spec = json::parse(sig.at("in_spec").get<std::string>());
    const json& root = spec.at(1);
    const json& args = root.at("children_spec").at(0);
    if (root.value("type", json()) != "builtins.tuple" || args.value("type", json()) != "builtins.tuple") return {};
    const json& children = args.at("children_spec");
    std::vector<std::string> out;
    for (size_t i = 0; i < children.size(); ++i)
      if (i >= names.size() || !leafPaths(children[i], names[i].get<std::string>(), out)) return {};
    if (!leafPaths(root.at("children_spec").at(1), "", out)) return {};
    return out;
  } catch (const json::exception&) {
    return {};
  }
}

class Translator {
 public:
  Translator(const json& ep, const std::string& path, bool train) : ep_(ep), path_(path), train_(train) {}
  Program run();

 private:
  json argument(const json& a, const SourceLoc& loc);
  json ref(const std::string& name, const SourceLoc&) {
    if (prefix_.empty() && literals_.count(name)) return literals_.at(name);
    auto it = rename_.find(prefix_ + name);
    return {{"node", it == rename_.end() ? prefix_ + name : it->second}};
  }
  /// A size: an integer, or {"sym": EXPR} (Note [pt2 dynamic sizes]).
  json symInt(const json& s, const SourceLoc& loc, const std::string& what) {
    const std::string k = unionKey(s, loc, "size");
    if (k == "as_int" && s[k].is_number_integer()) return s[k];
    if (k == "as_expr" && s[k].is_object() && s[k].contains("expr_str") && s[k]["expr_str"].is_string())
      return {{"sym", sizeExpr(s[k]["expr_str"].get<std::string>(), symbolNames_, SourceLoc(loc.file, what, loc.op))}};
    throw UserError(loc, cat(what, ": malformed size ", s.dump()));
  }
  /// {"dtype", "shape", "stride"} of a TensorMeta, as the FX document writes it.
  json tensorMeta(const json& m, const SourceLoc& loc, const std::string& what) {
    DType d = scalarType(field(m, "dtype", loc), SourceLoc(loc.file, what, loc.op));
    json shape = json::array(), stride = json::array();
    for (const json& s : field(m, "sizes", loc)) shape.push_back(symInt(s, loc, what));
    for (const json& s : field(m, "strides", loc)) stride.push_back(symInt(s, loc, what));
    if (m.contains("layout") && m["layout"] != 7) throw UserError(loc, cat(what, " is not a strided tensor (layout ", m["layout"].dump(), ")"));
    return {{"dtype", dtypeTorchName(d)}, {"shape", shape}, {"stride", stride}};
  }
  void declareSymbols(const json& specs);
  json meta(const std::string& name, const SourceLoc& loc) {
    if (!values_->contains(name)) throw UserError(loc, "'" + name + "' has no entry in tensor_values");
    return tensorMeta((*values_)[name], loc, name);
  }
  SourceLoc nodeLoc(const json& n, const std::string& name, const std::string& target) const;
  void inputs(const json& specs, const json& graphInputs, Program& p);
  void node(const json& n, json& nodes);
  void inlineRegion(const json& n, const SourceLoc& loc, json& nodes);
  void inlineCond(const json& n, const SourceLoc& loc, json& nodes);
  std::vector<json> inlineBody(const json& sub, const std::vector<std::string>& bound, const std::string& prefix, const SourceLoc& loc,
                               json& nodes);
  void bindResults(const json& n, const std::vector<json>& results, const SourceLoc& loc);
  void outputs(const json& specs, const json& graphOutputs, Program& p);
  std::string fresh(const std::string& stem) {
    std::string n = stem;
    for (int i = 1; used_.count(n); ++i) n = stem + "." + std::to_string(i);
    used_.insert(n);
    return n;
  }

  const json& ep_;
  std::string path_;
  bool train_;
  const json* values_ = nullptr;               // tensor_values
  std::map<std::string, std::string> rename_;  // placeholder -> input name
  std::map<std::string, json> literals_;       // constant_input placeholders -> their value
  std::set<std::string> used_;                 // names in the document
  std::map<std::string, std::string> symbolNames_;  // sympy symbol -> aotc symbol
  json symbols_ = json::array();               // the document's "symbols"
  // Note [Inlined grad regions]: the scope of the region being inlined.
  std::string prefix_;                         // its names' prefix ("" outside)
  bool grad_ = true;                           // grad mode inside it
  json autocast_;                              // its autocast: null (none), "bfloat16", "float16", false (disabled)
  bool autocastSeen_ = false;                  // an enabled autocast region began
};

/// Names each symbol after the first user-input dim that is exactly it
/// (Note [pt2 dynamic sizes]), with its hint and range.
void Translator::declareSymbols(const json& specs) {
  const SourceLoc fileLoc{path_, "", ""};
  const json ranges = ep_.value("range_constraints", json::object());
  for (const json& spec : specs) {
    if (!spec.contains("user_input")) continue;
    const json& a = field(spec["user_input"], "arg", fileLoc);
    if (!a.contains("as_tensor")) continue;
    const std::string input = field(a["as_tensor"], "name", fileLoc).get<std::string>();
    if (!values_->contains(input)) continue;
    const json& sizes = field((*values_)[input], "sizes", fileLoc);
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (!sizes[d].contains("as_expr")) continue;
      const json& e = sizes[d]["as_expr"];
      const std::string srepr = e.value("expr_str", std::string());
      if (srepr.rfind("Symbol(", 0) != 0) continue;
      const size_t q = srepr.find_first_of("'\""), q2 = q == std::string::npos ? q : srepr.find(srepr[q], q + 1);
      if (q2 == std::string::npos) continue;
      const std::string sym = srepr.substr(q + 1, q2 - q - 1);
      if (symbolNames_.count(sym)) continue;
      std::string name = input + "_" + std::to_string(d);
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      if (!std::isalpha(static_cast<unsigned char>(name[0]))) name = "d" + name;
      const SourceLoc loc{path_, input, "input"};
      const json hint = e.contains("hint") && e["hint"].is_object() ? e["hint"].value("as_int", json()) : json();
      if (!hint.is_number_integer()) throw UserError(loc, cat("dim ", d, " (", sym, ") has no integer hint"));
      const json r = ranges.value(sym, json::object());
      constexpr int64_t kMax = (int64_t{1} << 31) - 1;
      const int64_t lo = r.contains("min_val") && r["min_val"].is_number_integer() ? std::max<int64_t>(1, r["min_val"].get<int64_t>()) : 1;
      const int64_t hi = r.contains("max_val") && r["max_val"].is_number_integer() ? std::min(kMax, r["max_val"].get<int64_t>()) : kMax;
      symbolNames_[sym] = name;
      symbols_.push_back({{"name", name}, {"hint", hint}, {"min", lo}, {"max", hi}});
    }
  }
}

json Translator::argument(const json& a, const SourceLoc& loc) {
  const std::string k = unionKey(a, loc, "argument");
  const json& v = a[k];
  auto list = [&](auto&& each) {
    if (!v.is_array()) throw UserError(loc, "malformed " + k + " argument");
    json out = json::array();
    for (const json& x : v) out.push_back(each(x));
    return out;
  };
  auto tensorRef = [&](const json& t) { return ref(field(t, "name", loc).get<std::string>(), loc); };
  auto optional = [&](const json& x) -> json {
    const std::string ok = unionKey(x, loc, "optional tensor");
    if (ok == "as_none") return nullptr;
    if (ok == "as_tensor") return tensorRef(x[ok]);
    throw UserError(loc, "malformed optional tensor " + x.dump());
  };
  auto symbolic = [&](const json& x, auto&& literal) -> json {
    const std::string sk = unionKey(x, loc, k.c_str());
    if (sk == "as_name") return ref(x[sk].get<std::string>(), loc);
    return literal(x[sk]);
  };
  auto same = [](const json& x) { return x; };
  if (k == "as_none") return nullptr;
  if (k == "as_tensor") return tensorRef(v);
  if (k == "as_tensors") return list(tensorRef);
  if (k == "as_optional_tensor") return optional(v);
  if (k == "as_optional_tensors") return list(optional);
  if (k == "as_int" || k == "as_bool" || k == "as_string") return v;
  if (k == "as_ints" || k == "as_bools" || k == "as_strings" || k == "as_int_lists") return list(same);
  if (k == "as_float") return floatValue(v, loc);
  if (k == "as_floats") return list([&](const json& x) { return floatValue(x, loc); });
  if (k == "as_sym_int" || k == "as_sym_bool") return symbolic(v, same);
  if (k == "as_sym_ints" || k == "as_sym_bools") return list([&](const json& x) { return symbolic(x, same); });
  if (k == "as_sym_float") return symbolic(v, [&](const json& x) { return floatValue(x, loc); });
  if (k == "as_sym_floats") return list([&](const json& x) { return symbolic(x, [&](const json& y) { return floatValue(y, loc); }); });
  if (k == "as_scalar_type") return {{"dtype", dtypeTorchName(scalarType(v, loc))}};
  if (k == "as_memory_format") {
    const char* f = memoryFormat(v);
    if (!f) throw UserError(loc, "unknown memory format " + v.dump());
    return {{"memory_format", f}};
  }
  if (k == "as_layout") return {{"layout", v == 7 ? "strided" : "layout " + v.dump()}};
  if (k == "as_device") {
    std::string d = field(v, "type", loc).get<std::string>();
    if (v.contains("index") && v["index"].is_number_integer()) d += ":" + std::to_string(v["index"].get<int64_t>());
    return {{"device", d}};
  }
  static const std::map<std::string, std::string> refused = {
      {"as_graph", "a subgraph (a higher-order op's body)"}, {"as_custom_obj", "a custom (TorchBind) object"},
      {"as_operator", "an operator"}, {"as_complex", "a complex number"}, {"as_string_to_argument", "a dict"},
      {"as_nested_tensors", "a nested list of tensors"}, {"as_float_lists", "a list of float lists"}};
  auto it = refused.find(k);
  throw UserError(loc, cat("argument of kind ", k, it == refused.end() ? "" : " (" + it->second + ")", " is not supported"));
}

SourceLoc Translator::nodeLoc(const json& n, const std::string& name, const std::string& target) const {
  SourceLoc loc{path_, name, target};
  if (!n.contains("metadata") || !n["metadata"].is_object()) return loc;
  const json& md = n["metadata"];
  if (md.contains("stack_trace") && md["stack_trace"].is_string()) {
    // `File "/path/model.py", line 10, in forward`: the innermost frame
    // outside torch's own files is the user's line.
    const std::string st = md["stack_trace"].get<std::string>();
    size_t pos = 0;
    while ((pos = st.find("File \"", pos)) != std::string::npos) {
      const size_t q = st.find('"', pos + 6);
      const size_t l = st.find(", line ", q == std::string::npos ? pos : q);
      if (q == std::string::npos || l == std::string::npos) break;
      const std::string file = st.substr(pos + 6, q - pos - 6);
      const std::string line = st.substr(l + 7, st.find_first_not_of("0123456789", l + 7) - l - 7);
      if (file.find("/torch/") == std::string::npos && file.rfind("<", 0) != 0 && !line.empty())
        loc.source = file.substr(file.find_last_of('/') + 1) + ":" + line;
      pos = q;
    }
  }
  if (md.contains("nn_module_stack") && md["nn_module_stack"].is_string()) {
    // `key,path,type;key,path,type`: the innermost module's path.
    const std::string s = md["nn_module_stack"].get<std::string>();
    const std::string last = s.substr(s.find_last_of(';') == std::string::npos ? 0 : s.find_last_of(';') + 1);
    const size_t a = last.find(','), b = a == std::string::npos ? a : last.find(',', a + 1);
    if (b != std::string::npos) loc.scope = last.substr(a + 1, b - a - 1);
  }
  return loc;
}

void Translator::inputs(const json& specs, const json& graphInputs, Program& p) {
  const SourceLoc fileLoc{path_, "", ""};
  if (!specs.is_array() || !graphInputs.is_array() || specs.size() != graphInputs.size())
    throw UserError(fileLoc, "malformed program: the signature's input specs do not match the graph's inputs");
  json& docInputs = p.doc["inputs"];
  // User inputs by the forward's argument paths (argumentPaths) when
  // the spec gives one per user input.
  std::vector<std::string> paths = argumentPaths(ep_);
  size_t users = 0, user = 0;
  for (const json& spec : specs) users += spec.is_object() && spec.contains("user_input");
  if (paths.size() != users) paths.clear();
  for (const json& spec : specs) {
    const std::string kind = unionKey(spec, fileLoc, "input spec");
    const json& s = spec[kind];
    const size_t thisUser = user;
    user += kind == "user_input";
    if (kind == "constant_input") {
      const json& value = field(s, "value", fileLoc);
      const std::string vk = unionKey(value, fileLoc, "constant value");
      literals_[field(s, "name", fileLoc).get<std::string>()] = vk == "as_none" ? json(nullptr) : vk == "as_float" ? floatValue(value[vk], fileLoc) : value[vk];
      continue;
    }
    if (kind == "token" || kind == "custom_obj")
      throw UserError(fileLoc, cat("the program takes a ", kind == "token" ? "side-effect token (an effectful op)" : "custom (TorchBind) object",
                                   " input; aotc does not support it"));
    std::string placeholder, name, role;
    if (kind == "user_input") {
      const json& a = field(s, "arg", fileLoc);
      const std::string ak = unionKey(a, fileLoc, "user input");
      if (ak != "as_tensor")
        throw UserError(fileLoc, cat("user input of kind ", ak, " (", a.dump().substr(0, 80), "): aotc compiles tensor inputs only"));
      placeholder = name = field(a[ak], "name", fileLoc).get<std::string>();
      if (!paths.empty() && validName(paths[thisUser])) name = paths[thisUser];
      role = "user_input";
    } else if (kind == "parameter" || kind == "buffer" || kind == "tensor_constant") {
      placeholder = field(field(s, "arg", fileLoc), "name", fileLoc).get<std::string>();
      name = field(s, kind == "parameter" ? "parameter_name" : kind == "buffer" ? "buffer_name" : "tensor_constant_name", fileLoc).get<std::string>();
      role = kind == "tensor_constant" ? "constant" : kind;
      const bool constant = kind == "tensor_constant" || (kind == "buffer" && !s.value("persistent", true));
      p.held.push_back({name, constant});
    } else {
      throw UserError(fileLoc, "input spec of kind '" + kind + "' is not supported");
    }
    const SourceLoc loc{path_, name, "input"};
    if (!validName(name)) throw UserError(loc, "input name must be 1-256 characters of [A-Za-z0-9_.-]");
    if (!used_.insert(name).second)
      throw UserError(loc, "two inputs (a placeholder and a state_dict name) are both named '" + name + "'; rename one");
    rename_[placeholder] = name;
    json in = meta(placeholder, loc);
    in["name"] = name;
    in["role"] = role;
    const json& m = (*values_)[placeholder];
    in["requires_grad"] = train_ && role != "buffer" && role != "constant" && m.value("requires_grad", false);
    docInputs.push_back(std::move(in));
  }
}

void Translator::node(const json& n, json& nodes) {
  const SourceLoc fileLoc{path_, "", ""};
  std::string target = field(n, "target", fileLoc).get<std::string>();
  const std::string name = n.value("name", std::string());
  if (target.rfind("torch.ops.", 0) == 0) target = target.substr(10);
  SourceLoc loc = nodeLoc(n, name, target);
  // A check export already made on the example inputs (static shapes).
  if (target == "aten._assert_tensor_metadata.default") return;
  // A range or relation export checked on the symbols: the symbols' ranges
  // are declared, and every probe converts a static graph.
  if (target == "aten._assert_scalar.default") return;
  if (target == "higher_order.wrap_with_set_grad_enabled" || target == "higher_order.wrap_with_autocast")
    return inlineRegion(n, loc, nodes);
  if (target == "higher_order.cond") return inlineCond(n, loc, nodes);
  if (target.rfind("higher_order.", 0) == 0) {
    // Reported with every other unsupported target (its subgraphs unread).
    json hop = {{"name", prefix_ + (name.empty() ? target : name)}, {"target", target}, {"args", json::array()}};
    if (!loc.source.empty()) hop["source"] = loc.source;
    if (!loc.scope.empty()) hop["module"] = loc.scope;
    nodes.push_back(std::move(hop));
    return;
  }
  json args = json::array(), kwargs = json::object();
  for (const json& in : field(n, "inputs", loc)) {
    const std::string argName = field(in, "name", loc).get<std::string>();
    json v = argument(field(in, "arg", loc), loc);
    if (in.value("kind", json(1)) == 2) {
      kwargs[argName] = std::move(v);
    } else {
      if (!kwargs.empty()) throw UserError(loc, "positional argument '" + argName + "' after a keyword argument");
      args.push_back(std::move(v));
    }
  }
  // The outputs: one tensor names the node; several (or a list) make getitems.
  struct Out {
    std::string name;
    size_t index;
  };
  std::vector<Out> outs;
  json metas = json::array();
  std::string scalarName;  // a symbolic integer result (sym_size)
  const json& outputs = field(n, "outputs", loc);
  for (const json& o : outputs) {
    const std::string k = unionKey(o, loc, "output");
    if (k == "as_tensor") {
      const std::string raw = field(o[k], "name", loc).get<std::string>();
      outs.push_back({prefix_ + raw, metas.size()});
      metas.push_back(meta(raw, loc));
    } else if (k == "as_tensors" && outputs.size() == 1) {
      for (const json& t : o[k]) {
        const std::string raw = field(t, "name", loc).get<std::string>();
        outs.push_back({prefix_ + raw, metas.size()});
        metas.push_back(meta(raw, loc));
      }
    } else if (k == "as_none") {
      metas.push_back(nullptr);
    } else if ((k == "as_sym_int" || k == "as_sym_bool" || k == "as_sym_float") && outputs.size() == 1 && o[k].contains("as_name")) {
      scalarName = prefix_ + o[k]["as_name"].get<std::string>();
    } else {
      throw UserError(loc, "output of kind " + k + " is not supported");
    }
  }
  // Note [Autocast regions]: from an autocast region on, `x.to(dtype)` is a
  // cast even where the float32 program's x has that dtype already (the
  // region may have changed it: `.float()` after a bfloat16 block).
  if (autocastSeen_ && target == "aten.to.dtype" && args.size() >= 2 && !kwargs.contains("dtype")) {
    kwargs["dtype"] = args[1];
    args = json::array({args[0]});
    target = "aten._to_copy.default";
  }
  json fx = {{"target", target}, {"args", std::move(args)}};
  if (!kwargs.empty()) fx["kwargs"] = std::move(kwargs);
  if (!loc.source.empty()) fx["source"] = loc.source;
  if (!loc.scope.empty()) fx["module"] = loc.scope;
  if (!grad_) fx["grad_enabled"] = false;
  if (!autocast_.is_null()) fx["autocast"] = autocast_;
  const bool single = outputs.size() == 1 && outputs[0].begin().key() == "as_tensor";
  if (!scalarName.empty()) {
    fx["name"] = scalarName;
  } else if (single) {
    fx["name"] = outs[0].name;
    fx["meta"] = metas[0];
  } else {
    fx["name"] = name.empty() ? fresh("node") : prefix_ + name;
    if (!metas.empty()) fx["meta"] = metas;
  }
  const std::string fxName = fx["name"].get<std::string>();
  used_.insert(fxName);
  nodes.push_back(std::move(fx));
  if (single || !scalarName.empty()) return;
  for (const Out& o : outs) {
    used_.insert(o.name);
    nodes.push_back({{"name", o.name}, {"target", "getitem"}, {"args", json::array({json{{"node", fxName}}, o.index})}});
  }
}

// Note [Inlined grad regions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A `with torch.no_grad():` (or enable_grad) block in the forward is the
// higher-order op wrap_with_set_grad_enabled(enabled, subgraph, *args) in the
// training IR, a `with torch.autocast(device, dtype, enabled):` block
// wrap_with_autocast(device, dtype, enabled, cache_enabled, subgraph, *args).
// Its subgraph is inlined: its inputs bound to the op's arguments, its nodes
// translated with grad_enabled as the op says (the FX loader's per-node grad
// mode) or "autocast" as the block says (Note [Autocast regions],
// passes/autocast.cpp: the autocast pass casts them as CUDA autocast does),
// their names prefixed with the op's name and a dot (unique: an exported
// program's names have no dots), and the op's outputs bound to the
// subgraph's.  Autocast: a disabled block (enabled=False; also what export
// records for a "cuda" block on a machine without CUDA) is inlined as plain
// float32 code, marked so that --precision leaves it so too; an enabled
// "cuda" block with bfloat16 or float16 goes through the autocast pass; any
// other device ("cpu": CPU autocast's op lists differ from CUDA's and aotc
// does not have them) or dtype is refused by name.
void Translator::inlineRegion(const json& n, const SourceLoc& loc, json& nodes) {
  const json& ins = field(n, "inputs", loc);
  const bool autocast = loc.op == "higher_order.wrap_with_autocast";
  const size_t graphArg = autocast ? 4 : 1;
  auto has = [&](size_t i, const char* kind) { return ins.is_array() && i < ins.size() && field(ins[i], "arg", loc).contains(kind); };
  if (!has(graphArg, "as_graph") || !has(autocast ? 2 : 0, "as_bool") || (autocast && !has(0, "as_string")))
    throw UserError(loc, autocast ? "wrap_with_autocast takes a device type, a dtype, two bools, a subgraph and its arguments"
                                  : "wrap_with_set_grad_enabled takes a bool, a subgraph and its arguments");
  const bool enabled = ins[autocast ? 2 : 0]["arg"]["as_bool"].get<bool>();
  const json& sub = field(ins[graphArg]["arg"]["as_graph"], "graph", loc);
  const json& subIns = field(sub, "inputs", loc);
  if (!subIns.is_array() || subIns.size() + graphArg + 1 != ins.size()) throw UserError(loc, "the subgraph's inputs do not match the arguments");
  json regionAutocast = autocast_;
  if (autocast && !enabled) {
    regionAutocast = false;
  } else if (autocast) {
    SourceLoc at = loc;  // the op has no stack trace: its first node's line
    for (const json& sn : field(sub, "nodes", loc))
      if (at.source.empty()) at.source = nodeLoc(sn, "", "").source;
    const std::string device = ins[0]["arg"]["as_string"].get<std::string>();
    const json& d = field(ins[1], "arg", loc);
    // torch.autocast's default dtype for "cuda" is float16.
    const DType dtype = d.contains("as_none") ? DType::F16 : scalarType(d.contains("as_scalar_type") ? d["as_scalar_type"] : json(), loc);
    if (device != "cuda")
      throw UserError(at, "a torch.autocast(\"" + device + "\") region is not supported: aotc has CUDA autocast's op lists only "
                          "(use torch.autocast(\"cuda\", ...) or compile the float32 program with --precision bf16/fp16)");
    if (dtype != DType::BF16 && dtype != DType::F16)
      throw UserError(at, cat("a torch.autocast(\"cuda\") region with dtype ", dtypeName(dtype), " is not supported (bfloat16 or float16)"));
    regionAutocast = dtype == DType::BF16 ? "bfloat16" : "float16";
    autocastSeen_ = true;
  }
  std::vector<std::string> bound;
  for (size_t i = 0; i < subIns.size(); ++i) {
    json outer = argument(field(ins[i + graphArg + 1], "arg", loc), loc);
    if (!outer.is_object() || !outer.contains("node")) throw UserError(loc, "a subgraph argument that is not a tensor is not supported");
    bound.push_back(outer["node"].get<std::string>());
  }
  const bool savedGrad = grad_;
  const json savedAutocast = autocast_;
  if (!autocast) grad_ = enabled;
  autocast_ = regionAutocast;
  std::vector<json> results = inlineBody(sub, bound, prefix_ + n.value("name", std::string("region")) + ".", loc, nodes);
  grad_ = savedGrad;
  autocast_ = savedAutocast;
  bindResults(n, results, loc);
}

/// Translates subgraph `sub` into `nodes`, its inputs bound to the
/// document's nodes `bound` and its names prefixed with `prefix`; its
/// results, as references.
std::vector<json> Translator::inlineBody(const json& sub, const std::vector<std::string>& bound, const std::string& prefix,
                                         const SourceLoc& loc, json& nodes) {
  const json& subIns = field(sub, "inputs", loc);
  if (!subIns.is_array() || subIns.size() != bound.size()) throw UserError(loc, "the subgraph's inputs do not match the arguments");
  const std::string savedPrefix = prefix_;
  const json* savedValues = values_;
  for (size_t i = 0; i < subIns.size(); ++i)
    rename_[prefix + field(field(subIns[i], "as_tensor", loc), "name", loc).get<std::string>()] = bound[i];
  prefix_ = prefix;
  values_ = &field(sub, "tensor_values", loc);
  for (const json& sn : field(sub, "nodes", loc)) node(sn, nodes);
  std::vector<json> results;
  for (const json& o : field(sub, "outputs", loc)) results.push_back(argument(o, loc));
  prefix_ = savedPrefix;
  values_ = savedValues;
  return results;
}

/// Binds the op `n`'s outputs to `results`, its subgraph's.
void Translator::bindResults(const json& n, const std::vector<json>& results, const SourceLoc& loc) {
  const json& outs = field(n, "outputs", loc);
  if (!outs.is_array() || outs.size() != results.size()) throw UserError(loc, "the subgraph's outputs do not match the op's");
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].contains("as_none")) continue;
    if (!results[i].is_object() || !results[i].contains("node")) throw UserError(loc, "a subgraph result that is not a tensor is not supported");
    rename_[prefix_ + field(field(outs[i], "as_tensor", loc), "name", loc).get<std::string>()] = results[i]["node"].get<std::string>();
  }
}

// Note [pt2 cond]
// ~~~~~~~~~~~~~~~
// torch.cond(pred, true_fn, false_fn, operands) survives export only with a
// predicate computed from the data (export inlines the branch a known one
// takes).  It follows the ONNX door's If (Note [ONNX control flow]): a
// constant predicate inlines its branch; a computed one inlines both
// branches (names prefixed `<cond>.<branch graph>.`) and selects each output
// with where(pred, then, else) -- only for inference (with --train the
// gradient through the branch not taken could be NaN where that branch is
// undefined, and where's zero would not mask it) and only when no branch
// draws random numbers (both run); otherwise refused naming the node.
// torch.cond requires both branches' outputs to have one dtype and shape;
// the FX loader checks each where against the op's recorded output.
void Translator::inlineCond(const json& n, const SourceLoc& loc, json& nodes) {
  const json& ins = field(n, "inputs", loc);
  auto has = [&](size_t i, const char* kind) { return ins.is_array() && i < ins.size() && field(ins[i], "arg", loc).contains(kind); };
  if (ins.size() != 4 || !has(1, "as_graph") || !has(2, "as_graph") || !has(3, "as_tensors"))
    throw UserError(loc, "cond takes a predicate, two subgraphs and a list of operands");
  const json pred = argument(ins[0]["arg"], loc);
  std::vector<std::string> bound;
  for (const json& o : argument(ins[3]["arg"], loc)) bound.push_back(o.at("node").get<std::string>());
  const std::string name = n.value("name", std::string("cond"));
  auto branch = [&](size_t i) {
    const json& g = ins[i]["arg"]["as_graph"];
    return inlineBody(field(g, "graph", loc), bound, prefix_ + name + "." + g.value("name", i == 1 ? "true" : "false") + ".", loc, nodes);
  };
  if (pred.is_boolean()) return bindResults(n, branch(pred.get<bool>() ? 1 : 2), loc);
  if (!pred.is_object() || !pred.contains("node")) throw UserError(loc, "cond's predicate must be a tensor or a bool");
  const std::string runtime = "the predicate is computed at run time, so aotc computes both branches and selects their outputs";
  if (train_)
    throw UserError(loc, runtime + "; not with --train (the gradient through the branch not taken could be NaN where that branch is "
                                   "undefined): compile for inference, or make the predicate a constant");
  std::function<void(const json&)> refuseRandom = [&](const json& g) {
    for (const json& sn : field(g, "nodes", loc)) {
      std::string t = sn.value("target", std::string());
      if (t.rfind("torch.ops.", 0) == 0) t = t.substr(10);
      for (const char* r : {"rand", "dropout", "bernoulli", "normal", "uniform", "multinomial", "exponential", "geometric", "cauchy"})
        if (t.find(r) != std::string::npos)
          throw UserError(nodeLoc(sn, sn.value("name", std::string()), t), runtime + ", and this branch draws random numbers (" + t +
                                                                                 "), which would then be drawn whichever branch is taken");
      for (const json& i : field(sn, "inputs", loc))
        if (i.contains("arg") && i["arg"].contains("as_graph")) refuseRandom(field(i["arg"]["as_graph"], "graph", loc));
    }
  };
  refuseRandom(field(ins[1]["arg"]["as_graph"], "graph", loc));
  refuseRandom(field(ins[2]["arg"]["as_graph"], "graph", loc));
  const std::vector<json> yes = branch(1), no = branch(2);
  const json& outs = field(n, "outputs", loc);
  if (!outs.is_array() || outs.size() != yes.size() || yes.size() != no.size()) throw UserError(loc, "the branches' outputs do not match the op's");
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string raw = field(field(outs[i], "as_tensor", loc), "name", loc).get<std::string>();
    json w = {{"name", prefix_ + raw}, {"target", "aten.where.self"}, {"args", json::array({pred, yes[i], no[i]})}, {"meta", meta(raw, loc)}};
    if (!loc.source.empty()) w["source"] = loc.source;
    if (!loc.scope.empty()) w["module"] = loc.scope;
    if (!grad_) w["grad_enabled"] = false;
    if (!autocast_.is_null()) w["autocast"] = autocast_;
    used_.insert(prefix_ + raw);
    nodes.push_back(std::move(w));
  }
}

void Translator::outputs(const json& specs, const json& graphOutputs, Program& p) {
  const SourceLoc fileLoc{path_, "", ""};
  if (!specs.is_array() || !graphOutputs.is_array() || specs.size() != graphOutputs.size())
    throw UserError(fileLoc, "malformed program: the signature's output specs do not match the graph's outputs");
  json& nodes = p.doc["nodes"];
  std::vector<json> copies;
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string kind = unionKey(specs[i], fileLoc, "output spec");
    const json& s = specs[i][kind];
    const SourceLoc loc{path_, cat("output ", i), kind};
    if (kind == "user_output") {
      const json& a = field(s, "arg", loc);
      const std::string ak = unionKey(a, loc, "output");
      if (ak != "as_tensor") throw UserError(loc, "a user output of kind " + ak + " (not a tensor) is not supported");
      p.doc["outputs"].push_back(ref(field(a[ak], "name", loc).get<std::string>(), loc));
    } else if (kind == "buffer_mutation" || kind == "user_input_mutation" || kind == "parameter_mutation") {
      // The new value is copied into the input at the end of the graph.
      const char* key = kind == "buffer_mutation" ? "buffer_name" : kind == "user_input_mutation" ? "user_input_name" : "parameter_name";
      const std::string into = field(s, key, loc).get<std::string>();
      const std::string value = field(field(s, "arg", loc), "name", loc).get<std::string>();
      if (!used_.count(into)) throw UserError(loc, "mutates '" + into + "', which is not an input of the program");
      const std::string n = fresh("copy_into." + into);
      copies.push_back({{"name", n}, {"target", "aten.copy_.default"}, {"args", json::array({{{"node", into}}, ref(value, loc)})}});
    } else {
      static const std::map<std::string, std::string> why = {
          {"loss_output", "a loss output (a joint forward-backward graph from _export_forward_backward)"},
          {"gradient_to_parameter", "a gradient output (a joint forward-backward graph from _export_forward_backward)"},
          {"gradient_to_user_input", "a gradient output (a joint forward-backward graph from _export_forward_backward)"},
          {"token", "a side-effect token (an effectful op)"}};
      auto it = why.find(kind);
      throw UserError(loc, (it == why.end() ? "an output of kind '" + kind + "'" : it->second) +
                               " is not supported; aotc builds the backward itself: export the forward with torch.export.export");
    }
  }
  for (json& c : copies) nodes.push_back(std::move(c));
  // output.<i> in user-output order, each with its path in the forward's
  // result (`logits`, `1.a`), from out_spec, as the FX exporter records them.
  try {
    const json spec = json::parse(ep_.at("graph_module").at("module_call_graph").at(0).at("signature").at("out_spec").get<std::string>());
    std::vector<std::string> paths;
    if (leafPaths(spec.at(1), "", paths) && paths.size() == p.doc["outputs"].size() && !paths.empty()) p.doc["output_paths"] = paths;
  } catch (const json::exception&) {
  }
}

// Note [Core ATen and training]: ep.run_decompositions() gives PyTorch's
// inference IR.  It keeps what the forward computes but not all of what its
// gradient needs: a detach() becomes aten.alias, and a `with torch.no_grad()`
// block is inlined without its grad mode.  With --train, such a program is
// refused at the first node that shows either (an alias, or a node whose
// provenance metadata names a grad-mode or autocast region), naming the
// training IR as the door that keeps them; one with neither trains as the
// training IR does.
void refuseLostGradModes(const json& nodes, const std::function<SourceLoc(const json&)>& where) {
  for (const json& n : nodes) {
    const std::string target = n.value("target", std::string());
    std::string md;
    if (n.contains("metadata") && n["metadata"].is_object())
      for (const char* k : {"torch_fn", "from_node"})
        if (n["metadata"].contains(k) && n["metadata"][k].is_string()) md += n["metadata"][k].get<std::string>();
    const bool alias = target == "torch.ops.aten.alias.default";
    if (alias || md.find("set_grad_enabled") != std::string::npos || md.find("autocast") != std::string::npos)
      throw UserError(where(n), std::string("--train: this Core ATen program (run_decompositions(), PyTorch's inference IR) has lost ") +
                                    (alias ? "a detach() (now aten.alias)" : "a torch.no_grad / enable_grad / autocast region") +
                                    " here, so its gradients are unknown; compile the training IR torch.export.export returns");
  }
}

Program Translator::run() {
  const SourceLoc fileLoc{path_, "", ""};
  const json& gm = field(ep_, "graph_module", fileLoc);
  const json& g = field(gm, "graph", fileLoc);
  values_ = &field(g, "tensor_values", fileLoc);
  if (!values_->is_object()) throw UserError(fileLoc, "malformed program: tensor_values must be an object");
  const json& sig = field(gm, "signature", fileLoc);
  Program p;
  p.doc = {{"format", "aotc.fx_graph"}, {"version", 2}, {"name", "model"}, {"inputs", json::array()},
           {"nodes", json::array()}, {"outputs", json::array()}};
  declareSymbols(field(sig, "input_specs", fileLoc));
  inputs(field(sig, "input_specs", fileLoc), field(g, "inputs", fileLoc), p);
  const json& nodes = field(g, "nodes", fileLoc);
  if (!nodes.is_array()) throw UserError(fileLoc, "malformed program: nodes must be an array");
  const json verifiers = ep_.value("verifiers", json::array());
  if (train_ && verifiers.is_array() && std::find(verifiers.begin(), verifiers.end(), json("TRAINING")) == verifiers.end())
    refuseLostGradModes(nodes, [&](const json& n) {
      std::string t = n.value("target", std::string());
      return nodeLoc(n, n.value("name", std::string()), t.rfind("torch.ops.", 0) == 0 ? t.substr(10) : t);
    });
  for (const json& n : nodes) node(n, p.doc["nodes"]);
  outputs(field(sig, "output_specs", fileLoc), field(g, "outputs", fileLoc), p);
  if (!symbols_.empty()) {
    p.doc["version"] = 3;
    p.doc["symbols"] = symbols_;
  }
  return p;
}

}  // namespace

DType scalarType(const json& code, const SourceLoc& loc) {
  static const std::map<int64_t, DType> have = {
      {1, DType::U8}, {2, DType::I8}, {3, DType::I16}, {4, DType::I32}, {5, DType::I64}, {6, DType::F16}, {7, DType::F32},
      {8, DType::F64}, {12, DType::Bool}, {13, DType::BF16}, {28, DType::U16}, {34, DType::U32}, {35, DType::U64}};
  static const std::map<int64_t, const char*> refused = {
      {9, "complex32"}, {10, "complex64"}, {11, "complex128"}, {29, "float8_e4m3fn"}, {30, "float8_e5m2"},
      {31, "float8_e4m3fnuz"}, {32, "float8_e5m2fnuz"}, {33, "float8_e8m0fnu"}};
  const int64_t c = code.is_number_integer() ? code.get<int64_t>() : -1;
  if (auto it = have.find(c); it != have.end()) return it->second;
  if (auto it = refused.find(c); it != refused.end()) throw UserError(loc, cat("dtype ", it->second, " is not supported"));
  throw UserError(loc, "unknown dtype code " + code.dump());
}

Program translate(const json& ep, const std::string& path, bool train) {
  try {
    return Translator(ep, path, train).run();
  } catch (const json::exception& e) {
    throw UserError(SourceLoc{path, "", ""}, std::string("malformed program: ") + e.what());
  }
}

}  // namespace aotc::pt2
