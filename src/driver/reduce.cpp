//===- reduce.cpp - aotc reduce: delta debugging over FX documents ---------===//
//
// Note [Reduce] (include/aotc/driver/reduce.h) has the design: candidates
// are FX JSON documents keeping a subset of the original's nodes and
// outputs, judged by a check run in child processes, the kept set minimized
// by ddmin.
//===----------------------------------------------------------------------===//
#include "aotc/driver/reduce.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "aotc/frontend/onnx.h"
#include "aotc/frontend/pt2.h"
#include "aotc/ir/safetensors.h"
#include "aotc/support/diag.h"
#include "aotc/support/fs.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace aotc {
namespace {

std::string shellQuote(const std::string& s) {
  const bool plain = !s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.,/=:+@%") == std::string::npos;
  if (plain) return s;
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

std::string readText(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void writeText(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  if (!f.flush()) throw UserError(SourceLoc{p.string()}, "cannot write file");
}

/// How a child process ended.
struct Exit {
  int status = -1;        ///< exit status, when it exited
  int signal = 0;         ///< the signal that killed it, when one did
  bool timed_out = false;
  std::string log;        ///< its stdout and stderr
};

/// Runs argv (argv[0] looked up on PATH) with stdout and stderr into `log`,
/// in a process group of its own, killed (the group) after `timeout_s`.
Exit runChild(const std::vector<std::string>& argv, const fs::path& log, double timeout_s) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string logPath = log.string();
  const pid_t pid = ::fork();
  if (pid < 0) throw UserError(SourceLoc{}, "reduce: cannot start a child process");
  if (pid == 0) {
    ::setpgid(0, 0);
    const int fd = ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int nul = ::open("/dev/null", O_RDONLY);
    if (fd >= 0) ::dup2(fd, 1), ::dup2(fd, 2);
    if (nul >= 0) ::dup2(nul, 0);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // either side may win the race; both set the same group
  Exit e;
  const auto t0 = std::chrono::steady_clock::now();
  int st = 0;
  for (auto nap = std::chrono::milliseconds(2);; nap = std::min(nap * 2, std::chrono::milliseconds(50))) {
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &st, 0);
      e.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(nap);
  }
  if (!e.timed_out && WIFEXITED(st)) e.status = WEXITSTATUS(st);
  if (!e.timed_out && WIFSIGNALED(st)) e.signal = WTERMSIG(st);
  e.log = readText(log);
  return e;
}

/// A value the reducer can name by type: a tensor of a dtype an FX input can
/// have, with integer sizes.
struct TensorTy {
  std::string dtype;
  Ints shape;
  bool operator==(const TensorTy&) const = default;
};

std::optional<TensorTy> tensorType(const json& meta) {
  static const std::set<std::string> kInputDtypes = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "bool",
                                                     "int8",    "int16",   "uint8",   "uint16",   "uint32", "uint64"};
  if (!meta.is_object() || !meta.contains("dtype") || !meta.contains("shape")) return std::nullopt;
  if (!meta["dtype"].is_string() || !kInputDtypes.count(meta["dtype"].get<std::string>()) || !meta["shape"].is_array())
    return std::nullopt;
  TensorTy t{meta["dtype"].get<std::string>(), {}};
  for (const json& d : meta["shape"]) {
    if (!d.is_number_integer()) return std::nullopt;
    t.shape.push_back(d.get<int64_t>());
  }
  return t;
}

/// The references {"node": NAME} anywhere in an argument tree, in order.
void refsOf(const json& j, std::vector<std::string>& out) {
  if (j.is_object() && j.size() == 1 && j.contains("node") && j["node"].is_string()) {
    out.push_back(j["node"].get<std::string>());
  } else if (j.is_array() || j.is_object()) {
    for (const json& x : j) refsOf(x, out);
  }
}

/// Rewrites each reference through `f` (NAME -> NAME).
template <typename F>
void rewriteRefs(json& j, const F& f) {
  if (j.is_object() && j.size() == 1 && j.contains("node") && j["node"].is_string()) {
    j["node"] = f(j["node"].get<std::string>());
  } else if (j.is_array() || j.is_object()) {
    for (json& x : j) rewriteRefs(x, f);
  }
}

/// An in-place op (aten.add_.Tensor, aten.copy_.default): the values it
/// writes change after they are computed.
bool inPlace(const std::string& target) {
  const size_t a = target.find('.');
  if (a == std::string::npos) return false;
  const size_t b = target.find('.', a + 1);
  const std::string op = target.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
  return !op.empty() && op.back() == '_' && op.rfind("__", 0) != 0;
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Note [Reduce values]: a value drawn from a generator seeded by the name.
HostTensor drawn(const std::string& name, const TensorTy& t) {
  const DType d = *dtypeFromTorchName(t.dtype);
  HostTensor h = HostTensor::zeros(d, t.shape);
  uint64_t s = 1469598103934665603ull;
  for (unsigned char c : name) s = (s ^ c) * 1099511628211ull;
  const bool fp = t.dtype.find("float") != std::string::npos;
  for (double& x : h.data) {
    const uint64_t r = splitmix(s);
    x = t.dtype == "bool" ? double(r & 1) : fp ? roundTo(d, double(r >> 11) / double(1ull << 53) * 2.0 - 1.0) : double(r % 3);
  }
  return h;
}

/// The original model, read once.
struct Source {
  std::string path, name;
  json doc;                                     ///< without "weights"
  std::map<std::string, HostTensor> weights;    ///< parameters', buffers', constants' values
  std::map<std::string, HostTensor> user;       ///< user inputs' values
  std::vector<std::string> node_names;
  std::vector<std::vector<std::string>> operands;  ///< per node, in argument order
  std::map<std::string, std::optional<TensorTy>> types;  ///< inputs' and nodes'
  std::map<std::string, size_t> node_index;
  std::map<std::string, HostTensor> captured;   ///< Note [Reduce values]
  bool values = false;                          ///< captured, or drawn where allowed
  std::vector<std::string> computed;            ///< the values nodes compute, in node order
  // Note [Reduce ONNX]: an ONNX model (doc holds only its name and outputs,
  // {"node": NAME}; node_index maps every value a node computes).
  bool onnx = false;
  onnx::ModelProto model;                       ///< as read (types not inferred)
  std::vector<std::vector<std::string>> outer;  ///< per node, outer values its subgraphs read
};

/// A candidate: the document, its weights and inputs, and which original
/// output each of its outputs is.
struct Candidate {
  json doc;
  std::optional<onnx::ModelProto> onnx;  ///< an ONNX candidate (doc unused)
  std::map<std::string, HostTensor> weights, inputs;
  std::vector<size_t> outputs;
  size_t nodes = 0;
};

struct Kept {
  std::vector<bool> nodes, outputs;
  std::string key() const {
    std::string k;
    for (bool b : nodes) k += b ? '1' : '0';
    k += '|';
    for (bool b : outputs) k += b ? '1' : '0';
    return k;
  }
};

/// The substitutes for removed values in the candidate keeping `kept`
/// (Note [Reduce]): shared by the FX and ONNX writers.
struct Resolver {
  const Source& s;
  const Kept& kept;
  bool bypass;
  std::map<std::string, std::optional<std::string>> sub;  // removed value -> substitute
  std::vector<std::string> fresh;                         // new inputs, in order
  std::set<std::string> used;                             // every value read

  std::optional<TensorTy> typeOf(const std::string& n) const {
    auto it = s.types.find(n);
    return it == s.types.end() ? std::nullopt : it->second;
  }
  // The value a reader of `name` reads: a kept node's operand (bypass, else
  // a new input), a graph output (bypass to the first operand of any
  // tensor type that a node computes: an output need not keep its type,
  // only its value under --expected, which has no bypass), or a bypass's operand (bypass only: a
  // value copied in from an input shows nothing).
  enum class Reader { Use, Output, Bypass };
  std::optional<std::string> resolve(const std::string& name, Reader reader) {
    auto ni = s.node_index.find(name);
    if (ni == s.node_index.end() || kept.nodes[ni->second]) return name;
    std::optional<TensorTy> t = typeOf(name);
    if (bypass && t) {
      for (const std::string& o : s.operands[ni->second]) {
        std::optional<std::string> r = resolve(o, reader == Reader::Output ? Reader::Output : Reader::Bypass);
        if (r && (reader == Reader::Output ? typeOf(*r).has_value() && s.node_index.count(*r) : typeOf(*r) == t)) return r;
      }
    }
    if (reader != Reader::Use || !t || !s.values) return std::nullopt;
    if (!sub.count(name)) {
      sub[name] = name;
      fresh.push_back(name);
    }
    return sub[name];
  }
  /// resolve, the value (or `name`, when none) recorded as read.
  std::optional<std::string> read(const std::string& name, Reader reader) {
    std::optional<std::string> v = resolve(name, reader);
    used.insert(v.value_or(name));
    return v;
  }
};

std::optional<Candidate> buildOnnx(const Source& s, const Kept& kept, bool bypass);

/// The candidate keeping `kept`, or none when some kept node or output reads
/// a removed value that has no substitute.
std::optional<Candidate> build(const Source& s, const Kept& kept, bool bypass) {
  if (s.onnx) return buildOnnx(s, kept, bypass);
  const json& nodes = s.doc["nodes"];
  Resolver res{s, kept, bypass, {}, {}, {}};
  using Reader = Resolver::Reader;
  auto typeOf = [&](const std::string& n) { return res.typeOf(n); };
  std::vector<std::string>& fresh = res.fresh;
  std::set<std::string>& used = res.used;
  Candidate c;
  // Rewrites every reference in `j` as `reader` resolves it; false when one
  // has no value left.
  auto rewrite = [&](json& j, Reader reader) {
    bool ok = true;
    rewriteRefs(j, [&](const std::string& r) {
      std::optional<std::string> v = res.read(r, reader);
      if (!v) ok = false;
      return v.value_or(r);
    });
    return ok;
  };
  c.doc = s.doc;
  json outNodes = json::array();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!kept.nodes[i]) continue;
    json n = nodes[i];
    bool ok = true;
    for (const char* field : {"args", "kwargs"})
      if (n.contains(field)) ok = rewrite(n[field], Reader::Use) && ok;
    if (!ok) return std::nullopt;
    outNodes.push_back(std::move(n));
    ++c.nodes;
  }
  json outs = json::array();
  for (size_t i = 0; i < s.doc["outputs"].size(); ++i) {
    if (!kept.outputs[i]) continue;
    json o = s.doc["outputs"][i];
    if (!rewrite(o, Reader::Output)) return std::nullopt;
    outs.push_back(std::move(o));
    c.outputs.push_back(i);
  }
  if (outs.empty()) return std::nullopt;
  json ins = json::array();
  for (const json& in : s.doc["inputs"]) {
    const std::string name = in["name"].get<std::string>();
    if (!used.count(name)) continue;
    ins.push_back(in);
    if (auto w = s.weights.find(name); w != s.weights.end()) c.weights[name] = w->second;
    if (auto u = s.user.find(name); u != s.user.end()) c.inputs[name] = u->second;
  }
  for (const std::string& name : fresh) {
    const TensorTy t = *typeOf(name);
    json stride = json::array();
    int64_t st = 1;
    for (size_t d = t.shape.size(); d-- > 0;) {
      stride.insert(stride.begin(), st);
      st *= std::max<int64_t>(t.shape[d], 1);
    }
    ins.push_back({{"name", name}, {"role", "user_input"}, {"requires_grad", false}, {"dtype", t.dtype}, {"shape", t.shape}, {"stride", stride}});
    auto cap = s.captured.find(name);
    c.inputs[name] = cap != s.captured.end() ? cap->second : drawn(name, t);
  }
  c.doc["inputs"] = std::move(ins);
  c.doc["nodes"] = std::move(outNodes);
  c.doc["outputs"] = std::move(outs);
  c.doc.erase("arguments");
  c.doc.erase("output_paths");
  if (c.doc.contains("storage_groups")) {
    json groups = json::array();
    for (const json& g : c.doc["storage_groups"]) {
      json kg = json::array();
      for (const json& n : g)
        if (used.count(n.get<std::string>())) kg.push_back(n);
      if (kg.size() >= 2) groups.push_back(kg);
    }
    c.doc["storage_groups"] = groups;
  }
  return c;
}

/// ONNX element types and the dtype names of TensorTy (Note [Reduce ONNX]).
const std::vector<std::pair<int, std::string>>& onnxDtypes() {
  static const std::vector<std::pair<int, std::string>> k = {
      {onnx::TensorProto::FLOAT, "float32"},    {onnx::TensorProto::DOUBLE, "float64"}, {onnx::TensorProto::FLOAT16, "float16"},
      {onnx::TensorProto::BFLOAT16, "bfloat16"}, {onnx::TensorProto::INT64, "int64"},   {onnx::TensorProto::INT32, "int32"},
      {onnx::TensorProto::INT16, "int16"},      {onnx::TensorProto::INT8, "int8"},       {onnx::TensorProto::UINT8, "uint8"},
      {onnx::TensorProto::UINT16, "uint16"},    {onnx::TensorProto::UINT32, "uint32"},   {onnx::TensorProto::UINT64, "uint64"},
      {onnx::TensorProto::BOOL, "bool"}};
  return k;
}

std::optional<TensorTy> onnxTensorType(int elem, const std::vector<int64_t>& dims) {
  for (const auto& [e, name] : onnxDtypes())
    if (e == elem) return TensorTy{name, Ints(dims.begin(), dims.end())};
  return std::nullopt;
}

std::optional<TensorTy> onnxTensorType(const onnx::TypeProto& t) {
  if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : t.tensor_type().shape().dim()) {
    if (!d.has_dim_value()) return std::nullopt;
    dims.push_back(d.dim_value());
  }
  return onnxTensorType(t.tensor_type().elem_type(), dims);
}

onnx::ValueInfoProto onnxValueInfo(const std::string& name, const TensorTy& t) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  for (const auto& [e, n] : onnxDtypes())
    if (n == t.dtype) tt->set_elem_type(e);
  auto* shape = tt->mutable_shape();
  for (int64_t d : t.shape) shape->add_dim()->set_dim_value(d);
  return vi;
}

/// Every value name the subgraphs of `g` read, nested ones included.
void subgraphReads(const onnx::GraphProto& g, std::set<std::string>& out) {
  for (const auto& n : g.node()) {
    for (const std::string& in : n.input()) out.insert(in);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) subgraphReads(a.g(), out);
      for (const auto& sg : a.graphs()) subgraphReads(sg, out);
    }
  }
}

/// Renames the reads of outer values in `n`'s subgraphs (ONNX names are
/// unique across scopes: a subgraph cannot shadow an outer value).
void renameInSubgraphs(onnx::NodeProto& n, const std::map<std::string, std::string>& ren) {
  std::function<void(onnx::GraphProto&)> walk = [&](onnx::GraphProto& g) {
    for (auto& sn : *g.mutable_node()) {
      for (std::string& in : *sn.mutable_input())
        if (auto it = ren.find(in); it != ren.end()) in = it->second;
      for (auto& a : *sn.mutable_attribute()) {
        if (a.has_g()) walk(*a.mutable_g());
        for (auto& sg : *a.mutable_graphs()) walk(sg);
      }
    }
  };
  for (auto& a : *n.mutable_attribute()) {
    if (a.has_g()) walk(*a.mutable_g());
    for (auto& sg : *a.mutable_graphs()) walk(sg);
  }
}

/// Note [Reduce ONNX]: the ONNX candidate keeping `kept`: the kept nodes
/// (a node with subgraphs is one unit, its subgraphs whole), their reads
/// resolved as for FX (Resolver), the graph inputs and initializers they
/// read, and a new graph input for each value that became one; the opset
/// imports, functions and metadata as the original has them.
std::optional<Candidate> buildOnnx(const Source& s, const Kept& kept, bool bypass) {
  Resolver res{s, kept, bypass, {}, {}, {}};
  using Reader = Resolver::Reader;
  Candidate c;
  c.doc = s.doc;
  onnx::ModelProto m = s.model;
  const onnx::GraphProto& og = s.model.graph();
  onnx::GraphProto& g = *m.mutable_graph();
  g.clear_node();
  std::set<std::string> produced;
  for (int i = 0; i < og.node_size(); ++i) {
    if (!kept.nodes[size_t(i)]) continue;
    onnx::NodeProto n = og.node(i);
    for (std::string& in : *n.mutable_input()) {
      if (in.empty()) continue;
      std::optional<std::string> v = res.read(in, Reader::Use);
      if (!v) return std::nullopt;
      in = *v;
    }
    std::map<std::string, std::string> ren;
    for (const std::string& in : s.outer[size_t(i)]) {
      std::optional<std::string> v = res.read(in, Reader::Use);
      if (!v) return std::nullopt;
      if (*v != in) ren[in] = *v;
    }
    if (!ren.empty()) renameInSubgraphs(n, ren);
    for (const std::string& o : n.output()) produced.insert(o);
    *g.add_node() = std::move(n);
    ++c.nodes;
  }
  g.clear_output();
  std::set<std::string> outNames;
  for (int i = 0; i < og.output_size(); ++i) {
    if (!kept.outputs[size_t(i)]) continue;
    const std::string& name = og.output(i).name();
    std::optional<std::string> v = res.read(name, Reader::Output);
    // Two outputs of one value: not every consumer takes them.
    if (!v || !outNames.insert(*v).second) return std::nullopt;
    if (*v == name) *g.add_output() = og.output(i);
    else *g.add_output() = onnxValueInfo(*v, *res.typeOf(*v));
    c.outputs.push_back(size_t(i));
  }
  if (c.outputs.empty()) return std::nullopt;
  g.clear_input();
  for (const auto& in : og.input()) {
    if (!res.used.count(in.name())) continue;
    *g.add_input() = in;
    if (auto u = s.user.find(in.name()); u != s.user.end()) c.inputs[onnxInputName(in.name())] = u->second;
  }
  for (const std::string& name : res.fresh) {
    *g.add_input() = onnxValueInfo(name, *res.typeOf(name));
    auto cap = s.captured.find(name);
    c.inputs[onnxInputName(name)] = cap != s.captured.end() ? cap->second : drawn(name, *res.typeOf(name));
  }
  g.clear_initializer();
  for (const auto& t : og.initializer())
    if (res.used.count(t.name())) *g.add_initializer() = t;
  g.clear_sparse_initializer();
  for (const auto& t : og.sparse_initializer())
    if (res.used.count(t.values().name())) *g.add_sparse_initializer() = t;
  g.clear_value_info();
  for (const auto& vi : og.value_info())
    if (produced.count(vi.name())) *g.add_value_info() = vi;
  c.onnx = std::move(m);
  return c;
}

/// The model file of a candidate's directory.
std::string modelFile(const Source& s) { return s.onnx ? "repro.onnx" : "repro.json"; }

/// Writes a candidate as DIR/repro.json, repro.safetensors, inputs.safetensors
/// (an ONNX one as DIR/repro.onnx, its initializers inside, inputs.safetensors).
void writeCandidate(const Candidate& c, const fs::path& dir) {
  fs::create_directories(dir);
  if (c.onnx) {
    std::string bytes;
    if (!c.onnx->SerializeToString(&bytes)) throw UserError(SourceLoc{(dir / "repro.onnx").string()}, "reduce: cannot serialize the ONNX candidate");
    writeText(dir / "repro.onnx", bytes);
    writeSafetensors((dir / "inputs.safetensors").string(), c.inputs);
    return;
  }
  json doc = c.doc;
  doc["weights"] = "repro.safetensors";
  writeText(dir / "repro.json", doc.dump(1) + "\n");
  writeSafetensors((dir / "repro.safetensors").string(), c.weights);
  writeSafetensors((dir / "inputs.safetensors").string(), c.inputs);
}

/// Whether two result sets differ beyond the tolerances on a name in `pairs`
/// (a's name -> b's name); `why` says where.
bool differ(const std::map<std::string, HostTensor>& a, const std::map<std::string, HostTensor>& b,
            const std::vector<std::pair<std::string, std::string>>& pairs, double atol, double rtol, std::string* why) {
  for (const auto& [na, nb] : pairs) {
    auto ia = a.find(na), ib = b.find(nb);
    if (ia == a.end() || ib == b.end()) continue;
    const HostTensor &x = ia->second, &y = ib->second;
    if (x.sizes != y.sizes) {
      *why = na + ": shapes differ";
      return true;
    }
    for (size_t k = 0; k < x.data.size(); ++k) {
      const double p = x.data[k], q = y.data[k];
      const bool same = (std::isnan(p) && std::isnan(q)) || p == q || std::fabs(p - q) <= atol + rtol * std::fabs(q);
      if (!same) {
        std::ostringstream os;
        os << na << "[" << k << "]: " << p << " vs " << q;
        *why = os.str();
        return true;
      }
    }
  }
  return false;
}

class Reducer {
 public:
  Reducer(const ReduceOptions& o, const Logger& log, fs::path work) : o_(o), log_(log), work_(std::move(work)) {
    aotc_ = o.aotc;
    if (aotc_.empty()) {
      std::error_code ec;
      aotc_ = fs::read_symlink("/proc/self/exe", ec).string();
      if (ec) aotc_ = "aotc";
    }
  }

  /// Whether the model in `dir` (repro.json or repro.onnx ...) still fails
  /// the check; `why` says how it failed (or not).
  bool fails(const fs::path& dir, const std::vector<size_t>& outputs, std::string* why) {
    ++checks_;
    const std::string model = (dir / modelFile(src_)).string();
    if (!o_.check_cmd.empty()) {
      std::string cmd = o_.check_cmd;
      for (size_t at; (at = cmd.find("{}")) != std::string::npos;) cmd.replace(at, 2, shellQuote(model));
      Exit e = runChild({"/bin/sh", "-c", cmd}, dir / "check.log", o_.timeout_s);
      *why = e.timed_out ? "the check timed out" : "the check exited " + std::to_string(e.status);
      return !e.timed_out && e.status == 0;
    }
    std::vector<std::string> compile = {aotc_, "compile", model, "-o", (dir / "art").string(), "-q"};
    compile.insert(compile.end(), o_.compile_args.begin(), o_.compile_args.end());
    Exit c = runChild(compile, dir / "compile.log", o_.timeout_s);
    if (o_.crash) {
      const bool crashed = !c.timed_out && (c.status == 3 || c.signal != 0);
      *why = c.signal ? "compile died of signal " + std::to_string(c.signal) : "compile exited " + std::to_string(c.status);
      return crashed && c.log.find(o_.error_contains) != std::string::npos;
    }
    if (c.status != 0) {
      *why = "compile exited " + std::to_string(c.status) + ": " + firstLine(c.log);
      return false;
    }
    auto run = [&](const std::string& backend, const std::string& out) -> std::optional<std::map<std::string, HostTensor>> {
      std::vector<std::string> argv = {aotc_, "run", (dir / "art").string(), "--inputs", (dir / "inputs.safetensors").string(),
                                       "--backend", backend, "--out", (dir / out).string(), "-q"};
      if (o_.forward_only) argv.push_back("--forward-only");
      Exit r = runChild(argv, dir / (out + ".log"), o_.timeout_s);
      if (r.status != 0) {
        *why = "run on " + backend + " exited " + std::to_string(r.status) + ": " + firstLine(r.log);
        return std::nullopt;
      }
      return readSafetensors((dir / out).string());
    };
    if (!o_.mismatch.empty()) {
      auto a = run(o_.mismatch[0], "a.safetensors");
      if (!a) return false;
      auto b = run(o_.mismatch[1], "b.safetensors");
      if (!b) return false;
      std::vector<std::pair<std::string, std::string>> pairs;
      for (const auto& [name, t] : *a) pairs.emplace_back(name, name);
      *why = "the results agree within the tolerances";
      return differ(*a, *b, pairs, o_.atol, o_.rtol, why);
    }
    auto r = run(o_.backend, "r.safetensors");
    if (!r) return false;
    std::vector<std::pair<std::string, std::string>> pairs;
    for (size_t j = 0; j < outputs.size(); ++j) pairs.emplace_back("output." + std::to_string(j), "output." + std::to_string(outputs[j]));
    *why = "the outputs agree with the expected ones within the tolerances";
    return differ(*r, expected_, pairs, o_.atol, o_.rtol, why);
  }

  static std::string firstLine(const std::string& s) {
    const size_t nl = s.find('\n');
    return s.substr(0, nl);
  }

  ReduceResult run() {
    load();
    const size_t n = src_.node_names.size(), m = src_.doc["outputs"].size();
    Kept kept{std::vector<bool>(n, true), std::vector<bool>(m, true)};
    {
      std::optional<Candidate> all = build(src_, kept, false);
      if (!all) throw UserError(SourceLoc{o_.model}, src_.onnx ? "reduce: cannot write the model back as an ONNX model" : "reduce: cannot write the model back as an FX document");
      std::string why;
      const fs::path d = work_ / "original";
      writeCandidate(*all, d);
      if (!fails(d, all->outputs, &why))
        throw UserError(SourceLoc{o_.model}, "reduce: the model does not fail the check (" + why + "); nothing to reduce");
      log_->info("the original fails the check: {}", why);
      memo_[kept.key()] = true;
    }
    capture();
    // Units: the nodes, then the outputs; ddmin removes chunks of the live
    // ones, later units first, until a whole pass removes nothing.
    for (bool changed = true; changed;) {
      changed = false;
      std::vector<size_t> live;
      auto refresh = [&] {
        live.clear();
        for (size_t u = 0; u < n + m; ++u)
          if (u < n ? kept.nodes[u] : kept.outputs[u - n]) live.push_back(u);
      };
      refresh();
      size_t parts = 2;
      while (!live.empty()) {
        parts = std::min(parts, live.size());
        bool removed = false;
        for (size_t p = parts; p-- > 0;) {
          const size_t b = live.size() * p / parts, e = live.size() * (p + 1) / parts;
          Kept cand = kept;
          for (size_t k = b; k < e; ++k) (live[k] < n ? cand.nodes[live[k]] : cand.outputs[live[k] - n]) = false;
          if (test(cand)) {
            kept = cand;
            removed = changed = true;
            break;
          }
        }
        if (removed) {
          refresh();
          parts = std::max<size_t>(parts - 1, 2);
        } else if (parts >= live.size()) {
          break;
        } else {
          parts = std::min(parts * 2, live.size());
        }
      }
    }
    std::optional<Candidate> best = build(src_, kept, bypass());
    const fs::path stage = work_ / "repro";
    writeCandidate(*best, stage);
    if (!o_.expected.empty()) {
      std::map<std::string, HostTensor> exp;
      for (size_t j = 0; j < best->outputs.size(); ++j)
        if (auto it = expected_.find("output." + std::to_string(best->outputs[j])); it != expected_.end()) exp["output." + std::to_string(j)] = it->second;
      writeSafetensors((stage / "expected.safetensors").string(), exp);
    }
    writeText(stage / "README.md", readme(*best));
    commit(stage);
    return ReduceResult{n, best->nodes, best->outputs.size(), checks_};
  }

 private:
  bool bypass() const { return o_.expected.empty(); }

  bool test(const Kept& k) {
    const std::string key = k.key();
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    std::optional<Candidate> c = build(src_, k, bypass());
    bool f = false;
    if (c) {
      const fs::path d = work_ / ("c" + std::to_string(memo_.size()));
      writeCandidate(*c, d);
      std::string why;
      f = fails(d, c->outputs, &why);
      log_->debug("candidate of {} nodes: {} ({})", c->nodes, f ? "fails" : "passes", why);
      std::error_code ec;
      fs::remove_all(d, ec);
    } else {
      log_->debug("candidate {}: a removed value has no substitute", key);
    }
    memo_[key] = f;
    return f;
  }

  void load() {
    const std::string ext = fs::path(o_.model).extension().string();
    if (!o_.expected.empty()) expected_ = readSafetensors(o_.expected);
    if (ext == ".onnx") {
      loadOnnxSource();
      return;
    }
    src_.path = o_.model;
    if (ext == ".pt2") {
      src_.doc = pt2FxDocument(o_.model, o_.frontend);
      src_.weights = loadPt2(o_.model, o_.frontend).weights;
    } else {
      if (o_.frontend.any()) throw UserError(SourceLoc{o_.model}, "reduce: --train and --model go with a .pt2 archive");
      try {
        src_.doc = json::parse(readText(o_.model));
      } catch (const json::exception& e) {
        throw UserError(SourceLoc{o_.model}, std::string("not valid JSON: ") + e.what());
      }
      if (!src_.doc.is_object() || src_.doc.value("format", "") != "aotc.fx_graph" || !src_.doc["nodes"].is_array() ||
          !src_.doc["inputs"].is_array() || !src_.doc["outputs"].is_array() || !src_.doc["weights"].is_string())
        throw UserError(SourceLoc{o_.model}, "not an aotc FX graph (format aotc.fx_graph with inputs, nodes, outputs, weights)");
      const fs::path w = fs::path(o_.model).parent_path() / src_.doc["weights"].get<std::string>();
      src_.weights = readSafetensors(w.string());
    }
    src_.doc.erase("weights");
    std::map<std::string, HostTensor> given;
    if (!o_.inputs.empty()) given = readSafetensors(o_.inputs);
    for (const json& in : src_.doc["inputs"]) {
      const std::string name = in.value("name", "");
      src_.types[name] = tensorType(in);
      if (in.value("role", "") != "user_input") continue;
      if (auto g = given.find(name); g != given.end()) {
        src_.user[name] = g->second;
      } else if (!o_.inputs.empty() || !src_.types[name]) {
        throw UserError(SourceLoc{o_.inputs.empty() ? o_.model : o_.inputs, name},
                        o_.inputs.empty() ? "reduce: no value for the user input (its shape is not static, so none is drawn: give --inputs)"
                                          : "reduce: no value for the user input");
      } else {
        src_.user[name] = drawn(name, *src_.types[name]);
      }
    }
    for (const json& node : src_.doc["nodes"]) {
      const std::string name = node.value("name", "");
      src_.node_index[name] = src_.node_names.size();
      src_.node_names.push_back(name);
      src_.computed.push_back(name);
      src_.types[name] = node.contains("meta") ? tensorType(node["meta"]) : std::nullopt;
      std::vector<std::string> refs;
      for (const char* field : {"args", "kwargs"})
        if (node.contains(field)) refsOf(node[field], refs);
      src_.operands.push_back(refs);
    }
  }

  /// Note [Reduce ONNX]: the model read as the front end reads it, its
  /// values' types from ONNX shape inference.
  void loadOnnxSource() {
    if (o_.frontend.any()) throw UserError(SourceLoc{o_.model}, "reduce: --train and --model go with a .pt2 archive");
    src_.onnx = true;
    src_.path = o_.model;
    if (!src_.model.ParseFromString(readOnnxBytes(o_.model)))
      throw UserError(SourceLoc{o_.model}, "not a valid ONNX model (malformed or truncated protobuf)");
    if (!src_.model.has_graph()) throw UserError(SourceLoc{o_.model}, "the ONNX model has no graph");
    const onnx::GraphProto& g = src_.model.graph();
    std::set<std::string> top;
    for (const auto& t : g.initializer()) {
      if (t.data_location() == onnx::TensorProto::EXTERNAL)
        throw UserError(SourceLoc{o_.model, t.name(), "initializer"}, "reduce: an initializer with external data is not reduced (the repro is one file); save the model with its data inside");
      top.insert(t.name());
      src_.types[t.name()] = onnxTensorType(t.data_type(), std::vector<int64_t>(t.dims().begin(), t.dims().end()));
    }
    std::map<std::string, HostTensor> given;
    if (!o_.inputs.empty()) given = readSafetensors(o_.inputs);
    for (const auto& in : g.input()) {
      const std::string& name = in.name();
      top.insert(name);
      if (src_.types.count(name)) continue;  // an initializer listed as an input
      src_.types[name] = onnxTensorType(in.type());
      if (auto v = given.find(onnxInputName(name)); v != given.end()) {
        src_.user[name] = v->second;
      } else if (!o_.inputs.empty() || !src_.types[name]) {
        throw UserError(SourceLoc{o_.inputs.empty() ? o_.model : o_.inputs, onnxInputName(name)},
                        o_.inputs.empty() ? "reduce: no value for the user input (its shape is not static, so none is drawn: give --inputs)"
                                          : "reduce: no value for the user input");
      } else {
        src_.user[name] = drawn(name, *src_.types[name]);
      }
    }
    for (const auto& n : g.node())
      for (const std::string& o : n.output()) top.insert(o);
    const onnx::ModelProto inferred = inferredTypes();
    std::map<std::string, std::optional<TensorTy>> declared;
    for (const auto* list : {&inferred.graph().value_info(), &inferred.graph().output()})
      for (const auto& vi : *list) declared[vi.name()] = onnxTensorType(vi.type());
    json outs = json::array();
    for (const auto& o : g.output()) outs.push_back(json::object({{"node", o.name()}}));
    src_.doc = json::object({{"name", g.name().empty() ? fs::path(o_.model).stem().string() : g.name()}, {"outputs", outs}});
    for (int i = 0; i < g.node_size(); ++i) {
      const onnx::NodeProto& n = g.node(i);
      src_.node_names.push_back(n.name().empty() ? n.op_type() + "#" + std::to_string(i) : n.name());
      for (const std::string& o : n.output()) {
        if (o.empty()) continue;
        src_.node_index[o] = size_t(i);
        src_.computed.push_back(o);
        auto d = declared.find(o);
        src_.types[o] = d == declared.end() ? std::nullopt : d->second;
      }
      std::vector<std::string> ops;
      for (const std::string& in : n.input())
        if (!in.empty()) ops.push_back(in);
      std::set<std::string> reads;
      for (const auto& a : n.attribute()) {
        if (a.has_g()) subgraphReads(a.g(), reads);
        for (const auto& sg : a.graphs()) subgraphReads(sg, reads);
      }
      std::vector<std::string> outer;
      for (const std::string& r : reads)
        if (top.count(r)) outer.push_back(r);
      ops.insert(ops.end(), outer.begin(), outer.end());
      src_.operands.push_back(std::move(ops));
      src_.outer.push_back(std::move(outer));
    }
  }

  /// ONNX shape inference on a copy of the model, in a child process: its
  /// C++ rules trust their inputs (the front end runs them only on a model it
  /// converted, Loader::inferAndCompare), and a model reduced under --crash
  /// may be one they fail on.  When it fails, the types the model declares.
  onnx::ModelProto inferredTypes() {
    const fs::path file = work_ / "inferred.onnx";
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      int status = 1;
      try {
        onnx::ModelProto c = src_.model;
        onnx::shape_inference::InferShapes(c);
        std::string bytes;
        if (c.SerializeToString(&bytes)) {
          std::ofstream f(file, std::ios::binary);
          f << bytes;
          status = f.flush() ? 0 : 1;
        }
      } catch (...) {
      }
      ::_exit(status);
    }
    int st = 0;
    while (pid > 0 && ::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    onnx::ModelProto r;
    if (pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && r.ParseFromString(readText(file))) return r;
    log_->warn("reduce: ONNX shape inference failed on {}; the types the model declares are used", o_.model);
    return src_.model;
  }

  /// Note [Reduce values]: the original's values at every tensor node.
  void capture() {
    bool mutates = false;
    if (!src_.onnx)  // ONNX has no in-place ops
      for (const json& node : src_.doc["nodes"]) mutates = mutates || inPlace(node.value("target", ""));
    std::string why = "the graph has in-place ops";
    // Under --expected the captured values are taken as right; computed by
    // the backend under test, they would carry its error into the inputs.
    if (!o_.expected.empty() && o_.backend == "reference") {
      log_->info("--expected on the reference backend: only deletions (no new inputs)");
      return;
    }
    if (!mutates) {
      Kept all{std::vector<bool>(src_.node_names.size(), true), std::vector<bool>(src_.doc["outputs"].size(), true)};
      Candidate c = *build(src_, all, false);
      // Every tensor value a node computes, as an extra output (its index).
      std::vector<std::pair<std::string, size_t>> names;
      size_t next = src_.doc["outputs"].size();
      for (const std::string& n : src_.computed) {
        if (!src_.types[n]) continue;
        if (c.onnx) {
          // An ONNX graph output names its value: one already an output is read there.
          const auto& outs = c.onnx->graph().output();
          auto at = std::find_if(outs.begin(), outs.end(), [&](const onnx::ValueInfoProto& vi) { return vi.name() == n; });
          if (at != outs.end()) {
            names.emplace_back(n, size_t(at - outs.begin()));
            continue;
          }
          *c.onnx->mutable_graph()->add_output() = onnxValueInfo(n, *src_.types[n]);
        } else {
          c.doc["outputs"].push_back(json::object({{"node", n}}));
        }
        names.emplace_back(n, next++);
      }
      const fs::path d = work_ / "capture";
      writeCandidate(c, d);
      std::vector<std::string> compile = {aotc_, "compile", (d / modelFile(src_)).string(), "-o", (d / "art").string(), "-q"};
      compile.insert(compile.end(), o_.compile_args.begin(), o_.compile_args.end());
      Exit e = runChild(compile, d / "compile.log", o_.timeout_s);
      if (e.status == 0)
        e = runChild({aotc_, "run", (d / "art").string(), "--inputs", (d / "inputs.safetensors").string(), "--backend", "reference",
                      "--forward-only", "--out", (d / "values.safetensors").string(), "-q"},
                     d / "run.log", o_.timeout_s);
      if (e.status == 0) {
        std::map<std::string, HostTensor> res = readSafetensors((d / "values.safetensors").string());
        for (const auto& [name, index] : names)
          if (auto it = res.find("output." + std::to_string(index)); it != res.end()) src_.captured[name] = it->second;
        src_.values = true;
        return;
      }
      why = "computing them failed: " + firstLine(e.log);
    }
    src_.values = bypass();
    log_->warn("reduce: new inputs {} ({})", src_.values ? "hold drawn values, not the model's" : "are not made, only deletions", why);
  }

  std::string readme(const Candidate& c) const {
    std::ostringstream os;
    os << "# aotc reduce repro: " << src_.doc.value("name", "model") << "\n\n"
       << "Reduced from `" << o_.model << "` (" << src_.node_names.size() << " nodes) to " << c.nodes << " node"
       << (c.nodes == 1 ? "" : "s") << " and " << c.outputs.size() << " output" << (c.outputs.size() == 1 ? "" : "s") << " by `aotc reduce` ("
       << checks_ << " checks). Files: "
       << (src_.onnx ? "`repro.onnx` (the ONNX model, its initializers inside)" : "`repro.json` (FX JSON), `repro.safetensors` (its weights)")
       << ", `inputs.safetensors` (its user inputs"
       << (src_.captured.empty() ? "" : "; an input named after a removed node holds the value the original computed there") << ")"
       << (o_.expected.empty() ? "" : ", `expected.safetensors` (the expected outputs)") << ".\n\nTo reproduce, in this directory:\n\n```\n";
    std::string flags;
    for (const std::string& a : o_.compile_args) flags += " " + shellQuote(a);
    const std::string runFlags = o_.forward_only ? " --forward-only" : "";
    if (!o_.check_cmd.empty()) {
      std::string cmd = o_.check_cmd;
      for (size_t at; (at = cmd.find("{}")) != std::string::npos;) cmd.replace(at, 2, modelFile(src_));
      os << cmd << "   # exits 0: the failure shows\n";
    } else {
      os << "aotc compile " << modelFile(src_) << " -o repro.aotc" << flags << "\n";
      if (o_.crash) {
        os << "# fails: exit status 3 (internal error) or a signal" << (o_.error_contains.empty() ? "" : ", stderr holding: " + o_.error_contains) << "\n";
      } else if (!o_.mismatch.empty()) {
        for (const std::string& b : o_.mismatch)
          os << "aotc run repro.aotc --inputs inputs.safetensors --backend " << b << runFlags << " --out " << b << ".safetensors\n";
        os << "# fails: the two results differ beyond atol " << o_.atol << ", rtol " << o_.rtol << "\n";
      } else {
        os << "aotc run repro.aotc --inputs inputs.safetensors --backend " << o_.backend << runFlags << " --out out.safetensors\n"
           << "# fails: an output differs from expected.safetensors beyond atol " << o_.atol << ", rtol " << o_.rtol << "\n";
      }
    }
    os << "```\n";
    return os.str();
  }

  /// The repro directory, whole or not at all.
  void commit(const fs::path& stage) const {
    std::error_code ec;
    fs::rename(stage, o_.out_dir, ec);
    if (ec) throw UserError(SourceLoc{o_.out_dir}, "reduce: cannot move the repro into place: " + ec.message());
  }

  const ReduceOptions& o_;
  Logger log_;
  fs::path work_;
  std::string aotc_;
  Source src_;
  std::map<std::string, HostTensor> expected_;
  std::map<std::string, bool> memo_;
  size_t checks_ = 0;
};

/// A work directory beside `target` (`.NAME.tmp-PID`), removed on exit.
class WorkDir {
 public:
  explicit WorkDir(const fs::path& target) {
    const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::error_code ec;
    fs::create_directories(parent, ec);
    // Note [No debris]: a killed reducer's work directory goes now.
    removeStaleTemporaries(parent, "." + target.filename().string() + ".tmp-", ".tmp-");
    path_ = parent / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()));
    fs::remove_all(path_, ec);
    if (!fs::create_directory(path_, ec)) throw UserError(SourceLoc{target.string()}, "cannot create a work directory beside it");
  }
  ~WorkDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

ReduceResult reduceModel(const ReduceOptions& opts, const Logger& log) {
  const int checks = !opts.check_cmd.empty() + opts.crash + !opts.mismatch.empty() + !opts.expected.empty();
  if (checks != 1) throw UserError(SourceLoc{}, "reduce: give one check: --check CMD, --crash, --mismatch A,B or --expected FILE");
  if (!opts.mismatch.empty() && opts.mismatch.size() != 2) throw UserError(SourceLoc{}, "reduce: --mismatch takes two backends, A,B");
  if (!opts.error_contains.empty() && !opts.crash) throw UserError(SourceLoc{}, "reduce: --error-contains goes with --crash");
  std::error_code ec;
  if (fs::exists(opts.out_dir, ec)) throw UserError(SourceLoc{opts.out_dir}, "reduce: the repro directory exists; refusing to replace it");
  WorkDir work(opts.out_dir);
  Reducer r(opts, log, work.path());
  return r.run();
}

std::string writeCompileRepro(const std::string& dir, const std::string& model, const std::vector<std::string>& argv,
                              const std::string& error) {
  try {
    std::error_code ec;
    if (fs::exists(dir, ec)) return dir + ": exists; the repro was not written";
    WorkDir work(dir);
    const fs::path stage = work.path() / "repro";
    fs::create_directories(stage);
    const fs::path m(model);
    fs::copy_file(m, stage / m.filename());
    std::vector<std::string> copied = {m.filename().string()};
    if (m.extension() != ".onnx" && m.extension() != ".pt2") {
      // An FX JSON: its weights file, beside it.
      json doc = json::parse(readText(m), nullptr, false);
      if (doc.is_object() && doc.contains("weights") && doc["weights"].is_string()) {
        const std::string w = doc["weights"].get<std::string>();
        if (w.find('/') == std::string::npos && fs::exists(m.parent_path() / w, ec)) {
          fs::copy_file(m.parent_path() / w, stage / w);
          copied.push_back(w);
        }
      }
    }
    std::string cmd;
    for (size_t i = 0; i < argv.size(); ++i) {
      std::string a = argv[i];
      if (i == 0) a = "aotc";
      else if (a == model) a = m.filename().string();
      cmd += (i ? " " : "") + shellQuote(a);
    }
    std::ostringstream os;
    os << "# aotc compile repro\n\n`aotc compile` failed with an internal error:\n\n```\n" << error << "\n```\n\nFiles: ";
    for (size_t i = 0; i < copied.size(); ++i) os << (i ? ", " : "") << "`" << copied[i] << "`";
    os << ". The command, to run in this directory:\n\n```\n" << cmd << "\n```\n\nTo shrink it: `aotc reduce " << shellQuote(m.filename().string())
       << " --crash -o reduced` (Note [Reduce]).\n";
    writeText(stage / "README.md", os.str());
    fs::rename(stage, dir);
    return "";
  } catch (const std::exception& e) {
    return std::string("cannot write the repro: ") + e.what();
  }
}

int compileWithRepro(const std::string& dir, const std::string& model, const std::vector<std::string>& argv,
                     const std::function<int()>& compile) {
  std::fflush(stdout);
  std::fflush(stderr);
  int fds[2];
  if (::pipe(fds) != 0) throw UserError(SourceLoc{}, "--repro-dir: cannot make a pipe");
  const pid_t pid = ::fork();
  if (pid < 0) throw UserError(SourceLoc{}, "--repro-dir: cannot start a child process");
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], 2);
    ::close(fds[1]);
    const int status = compile();
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(status);
  }
  ::close(fds[1]);
  std::string err;
  char buf[4096];
  for (ssize_t k; (k = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (k < 0) {
      if (errno == EINTR) continue;
      break;
    }
    err.append(buf, size_t(k));
    if (::write(2, buf, size_t(k)) < 0) {
    }
  }
  ::close(fds[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  int status = WIFEXITED(st) ? WEXITSTATUS(st) : 3;
  if (WIFSIGNALED(st)) {
    const std::string line = "aotc: internal error: the compile died of signal " + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) + ")\n";
    std::fputs(line.c_str(), stderr);
    err += line;
  }
  if (status == 3) {
    const std::string problem = writeCompileRepro(dir, model, argv, err.size() > 4000 ? err.substr(err.size() - 4000) : err);
    std::fprintf(stderr, "aotc: note: %s\n", problem.empty() ? ("the repro is in " + dir).c_str() : problem.c_str());
  }
  return status;
}

}  // namespace aotc
