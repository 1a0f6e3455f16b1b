//===- source_graph.cpp - The model as written, for `aotc graph` ---------===//
//
// onnxSourceGraph: an ONNX model's nodes, inputs and initializers as the
// file holds them (before conversion), each with the reason the front end
// would refuse it, for `aotc graph` (Note [ONNX front end], loader.cpp).
//===----------------------------------------------------------------------===//
#include <map>
#include <set>

#include "aotc/frontend/onnx.h"
#include "node.h"

namespace aotc {

namespace {
std::string typeText(const onnx::TypeProto& t) {
  if (!t.has_tensor_type()) return "";
  std::string s = onnx::TensorProto_DataType_Name(t.tensor_type().elem_type()) + "[";
  const auto& dims = t.tensor_type().shape().dim();
  for (int i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + (dims[i].has_dim_value() ? std::to_string(dims[i].dim_value()) : dims[i].dim_param());
  return s + "]";
}
}  // namespace

SourceGraph onnxSourceGraph(const std::string& path) {
  onnx::ModelProto m;
  std::string bytes = onnx_fe::readModelBytes(path);
  if (!m.ParseFromString(bytes)) throw UserError(SourceLoc{path}, "not a valid ONNX model (malformed or truncated protobuf)");
  const onnx::GraphProto& g = m.graph();
  if (static_cast<size_t>(g.node_size()) > onnx_fe::kMaxNodes) throw UserError(SourceLoc{path}, cat("the graph has ", g.node_size(), " nodes, more than ", onnx_fe::kMaxNodes));
  const int opset = onnx_fe::importedOpset(m) > 0 ? onnx_fe::importedOpset(m) : onnx_fe::kCheckerOpset;
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
    sn.unsupported = onnx_fe::unsupportedReason(n, opset);
    sg.nodes.push_back(std::move(sn));
  }
  for (const auto& v : g.output())
    if (auto it = producer.find(v.name()); it != producer.end()) sg.outputs.push_back(it->second);
  return sg;
}

}  // namespace aotc
