//===- onnx/functions.cpp - Model-local functions, inlined ------------------===//
//
// Note [ONNX model-local functions]: a model may define functions
// (ModelProto.functions, FunctionProto) and call them as nodes of their
// (domain, name); PyTorch 2.x's exporter writes them.  Before anything else
// reads the graph, every call is replaced by the function's body: the body's
// inputs and outputs become the call's, its inner values get names no other
// value has, and an attribute that refers to one of the function's
// (ref_attr_name) takes the call's value, or else the function's default
// (FunctionProto.attribute_proto, field 11, which ONNX 1.12's classes keep as
// an unknown field: it is read from there).  Calls inside bodies are inlined
// the same way, to a bounded depth (a recursive function is refused).  A body
// must import the model's opset of the default domain: its nodes are then
// converted at the model's opset like any other.
//===----------------------------------------------------------------------===//
#include <google/protobuf/unknown_field_set.h>

#include "node.h"

namespace aotc::onnx_fe {

namespace {

constexpr int kMaxInlineDepth = 32;
constexpr size_t kMaxInlinedNodes = 250000;

/// The attribute defaults of a FunctionProto (field 11, attribute_proto),
/// read from the unknown fields ONNX 1.12's classes keep.
std::map<std::string, onnx::AttributeProto> attributeDefaults(const onnx::FunctionProto& f, const SourceLoc& loc) {
  std::map<std::string, onnx::AttributeProto> r;
  const google::protobuf::UnknownFieldSet& u = f.unknown_fields();
  for (int k = 0; k < u.field_count(); ++k) {
    const google::protobuf::UnknownField& x = u.field(k);
    if (x.number() != 11 || x.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) continue;
    onnx::AttributeProto a;
    if (!a.ParseFromString(x.length_delimited())) throw UserError(loc, "function '" + f.name() + "' has a malformed attribute default");
    r[a.name()] = a;
  }
  return r;
}

struct Inliner {
  std::string path;
  int opset = 0;
  std::map<std::pair<std::string, std::string>, const onnx::FunctionProto*> fns;
  std::map<const onnx::FunctionProto*, std::map<std::string, onnx::AttributeProto>> defaults;
  std::set<std::string> taken;  ///< every value name in use
  int64_t counter = 0;

  const onnx::FunctionProto* callee(const onnx::NodeProto& n) const {
    std::string dom = n.domain() == "ai.onnx" ? "" : n.domain();
    auto it = fns.find({dom, n.op_type()});
    return it == fns.end() ? nullptr : it->second;
  }

  std::string fresh(const std::string& base) {
    std::string s;
    do s = cat(base, "__", counter++);
    while (taken.count(s));
    taken.insert(s);
    return s;
  }

  void expand(const onnx::NodeProto& call, const std::string& callName, int depth, std::vector<onnx::NodeProto>& out) {
    const onnx::FunctionProto* f = callee(call);
    if (!f) {
      out.push_back(call);
      return;
    }
    SourceLoc loc{path, callName, call.op_type()};
    if (depth >= kMaxInlineDepth) throw UserError(loc, cat("function '", f->name(), "' calls functions more than ", kMaxInlineDepth, " deep (recursion?)"));
    if (call.input_size() > f->input_size() || call.output_size() > f->output_size())
      throw UserError(loc, cat("the call has ", call.input_size(), " inputs and ", call.output_size(), " outputs but function '", f->name(), "' takes ",
                               f->input_size(), " and gives ", f->output_size()));
    std::map<std::string, std::string> rename;  // formal / inner name -> outer name
    for (int k = 0; k < f->input_size(); ++k) rename[f->input(k)] = k < call.input_size() ? call.input(k) : "";
    for (int k = 0; k < f->output_size(); ++k)  // an output the call does not use still needs a name of its own
      rename[f->output(k)] = k < call.output_size() && !call.output(k).empty() ? call.output(k) : fresh(callName + "/" + f->output(k));
    std::map<std::string, const onnx::AttributeProto*> given;
    for (const auto& a : call.attribute()) given[a.name()] = &a;
    const auto& dflt = defaults.at(f);
    auto outer = [&](const std::string& inner) -> std::string {
      if (inner.empty()) return "";
      auto it = rename.find(inner);
      if (it != rename.end()) return it->second;
      return rename[inner] = fresh(callName + "/" + inner);
    };
    for (const auto& body : f->node()) {
      onnx::NodeProto n = body;
      for (auto& i : *n.mutable_input()) i = outer(i);
      for (auto& o : *n.mutable_output()) o = outer(o);
      n.clear_attribute();
      for (const auto& a : body.attribute()) {
        if (a.has_g() || a.graphs_size()) throw UserError(loc, cat("function '", f->name(), "' has a node with a subgraph, which aotc does not inline"));
        if (a.ref_attr_name().empty()) {
          *n.add_attribute() = a;
          continue;
        }
        const onnx::AttributeProto* v = nullptr;
        if (auto it = given.find(a.ref_attr_name()); it != given.end()) v = it->second;
        else if (auto d = dflt.find(a.ref_attr_name()); d != dflt.end()) v = &d->second;
        if (!v) continue;  // neither given nor defaulted: the inner op's own default
        onnx::AttributeProto copy = *v;
        copy.set_name(a.name());
        *n.add_attribute() = copy;
      }
      std::string name = n.name().empty() ? callName + "/" + n.op_type() : callName + "/" + n.name();
      n.set_name(name);
      expand(n, name, depth + 1, out);
      if (out.size() > kMaxInlinedNodes) throw UserError(loc, cat("inlining the model's functions gives more than ", kMaxInlinedNodes, " nodes"));
    }
  }
};

}  // namespace

void inlineFunctions(onnx::ModelProto& m, const std::string& path) {
  if (m.functions_size() == 0) return;
  Inliner in;
  in.path = path;
  for (const auto& os : m.opset_import())
    if (os.domain().empty() || os.domain() == "ai.onnx") in.opset = static_cast<int>(os.version());
  for (const auto& f : m.functions()) {
    SourceLoc loc{path, f.name(), "function"};
    std::string dom = f.domain() == "ai.onnx" ? "" : f.domain();
    if (!in.fns.emplace(std::make_pair(dom, f.name()), &f).second)
      throw UserError(loc, "function '" + dom + "::" + f.name() + "' is defined twice (overloads are not supported)");
    for (const auto& os : f.opset_import())
      if ((os.domain().empty() || os.domain() == "ai.onnx") && os.version() != in.opset)
        throw UserError(loc, cat("function '", f.name(), "' imports opset ", os.version(), " of the default domain but the model imports ", in.opset,
                                 "; aotc converts every node at the model's opset"));
    in.defaults[&f] = attributeDefaults(f, loc);
  }
  onnx::GraphProto& g = *m.mutable_graph();
  for (const auto& i : g.input()) in.taken.insert(i.name());
  for (const auto& t : g.initializer()) in.taken.insert(t.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) in.taken.insert(o);
  std::vector<onnx::NodeProto> out;
  int index = 0;
  for (const auto& n : g.node()) {
    std::string name = n.name().empty() ? cat("#", index) : n.name();
    ++index;
    in.expand(n, name, 0, out);
  }
  g.clear_node();
  for (auto& n : out) *g.add_node() = std::move(n);
  m.clear_functions();
}

}  // namespace aotc::onnx_fe
