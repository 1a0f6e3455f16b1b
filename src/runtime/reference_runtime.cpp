//===- reference_runtime.cpp - The CPU oracle -----------------------------===//
#include "aotc/runtime/reference_runtime.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

#include "aotc/ir/safetensors.h"
#include "aotc/text/text.h"
#include "aotc/ops/ops.h"
#include "aotc/runtime/manifest.h"

namespace aotc {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::map<std::string, HostTensor> runArtifactUnchecked(const std::string& dir, const RunOptions& opts);

std::vector<HostTensor> interpretGraph(const Graph& g, const std::vector<HostTensor>& inputs,
                                       const std::function<void(const std::string&, const HostTensor&)>& on_epilogue) {
  AOTC_CHECK(inputs.size() == g.inputs.size(), "program takes ", g.inputs.size(), " inputs, got ", inputs.size());
  std::vector<HostTensor> env(g.values.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[g.inputs[i].value] = inputs[i];
  for (const Node& n : g.nodes) {
    std::vector<const HostTensor*> ins;
    for (ValueId v : n.inputs) ins.push_back(&env[v]);
    if (n.op == OpKind::EpilogueCopy) {
      HostTensor t = env[n.inputs[1]];
      on_epilogue(g.values[n.inputs[0]].name, t);
      continue;
    }
    std::vector<TensorType> ot;
    for (ValueId v : n.outputs) ot.push_back(g.type(v));
    std::vector<HostTensor> outs;
    try {
      outs = referenceEval(n.op, ins, n.attrs, ot);
    } catch (const UserError& e) {
      // A data error (an index out of range): name the node it happened in.
      SourceLoc loc = n.loc;
      loc.file = g.name;
      if (loc.node.empty() && !n.outputs.empty()) loc.node = g.values[n.outputs[0]].name;
      if (loc.op.empty()) loc.op = opName(n.op);
      throw UserError(loc, e.diagnostics().front().message);
    }
    for (size_t i = 0; i < outs.size(); ++i) env[n.outputs[i]] = std::move(outs[i]);
  }
  std::vector<HostTensor> res;
  for (const GraphOutput& o : g.outputs) res.push_back(env[o.value]);
  return res;
}

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw UserError(SourceLoc{p.string(), "", ""}, "cannot read file (is this an aotc artifact directory?)");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

HostTensor checked(const std::map<std::string, HostTensor>& pool, const std::string& name, DType d, const Ints& shape,
                   const std::string& what, bool zeroIfMissing) {
  auto it = pool.find(name);
  if (it == pool.end()) {
    if (zeroIfMissing) return HostTensor::zeros(d, shape);
    throw UserError(SourceLoc{"", name, what}, "no tensor named '" + name + "' in the --inputs files");
  }
  if (it->second.sizes != shape)
    throw UserError(SourceLoc{"", name, what}, cat("shape ", TensorType::contiguous(d, it->second.sizes).str(),
                                                   " does not match the artifact's ", TensorType::contiguous(d, shape).str()));
  // No silent rounding: a float64 tensor given for a float32 input is a
  // mistake the caller should see.  Widening that loses nothing (f16, bf16
  // -> f32 -> f64; i32 -> i64) is done.
  HostTensor t = it->second;
  if (t.dtype != d) {
    auto width = [](DType x) {
      switch (x) {
        case DType::F16: case DType::BF16: return 1;
        case DType::F32: return 2;
        case DType::F64: return 3;
        default: return 0;
      }
    };
    bool widen = (width(t.dtype) && width(d) > width(t.dtype)) || (t.dtype == DType::I32 && d == DType::I64);
    if (!widen)
      throw UserError(SourceLoc{"", name, what},
                      cat("dtype ", dtypeName(t.dtype), " does not match the artifact's ", dtypeName(d), " (aotc does not round inputs)"));
    t.dtype = d;
  }
  return t;
}

/// Note [Manifest is untrusted]: a manifest is checked before anything runs:
/// every field the runtimes read has its kind, every dtype and name is valid,
/// every shape is bounded, every index is in range, and every path stays
/// inside the artifact directory.  A failure is one line naming
/// manifest.json and the field.  (The emulate backend's step records are
/// checked where they are read; a JSON type error anywhere is reported the
/// same way, never as an escaped exception.)
class ManifestCheck {
 public:
  ManifestCheck(const json& m, const fs::path& root, int64_t maxElements)
      : m_(m), file_((root / "manifest.json").string()), maxElements_(maxElements) {}

  void run() {
    if (!m_.is_object()) fail("", "not a JSON object");
    if (m_.value("format", "") != "aotc.manifest") fail("format", "not an aotc manifest");
    if (!m_.contains("version") || !m_["version"].is_number_integer() || m_["version"].get<int64_t>() != kManifestVersion)
      fail("version", cat("this aotc runs manifests of version ", kManifestVersion));
    if (!m_.contains("model") || !m_["model"].is_object() || !m_["model"].contains("name") || !m_["model"]["name"].is_string())
      fail("model.name", "missing or not a string");
    if (!m_.contains("compiler") || !m_["compiler"].is_object() || !m_["compiler"].contains("version") ||
        !m_["compiler"]["version"].is_string())
      fail("compiler.version", "missing or not a string");
    const json& ins = array(m_, "inputs");
    std::set<std::string> names;
    for (size_t i = 0; i < ins.size(); ++i) {
      std::string f = cat("inputs[", i, "]");
      std::string n = name(ins[i], f, "name");
      if (!names.insert(n).second) fail(f, "input '" + n + "' is listed twice");
      tensor(ins[i], f);
      oneOf(ins[i], f, "mutation", {"none", "forward", "backward", "both"});
      boolean(ins[i], f, "requires_grad");
      if (ins[i].contains("aliases"))
        for (auto& a : array(ins[i], "aliases", f)) {
          if (!a.is_string() || !validName(a.get<std::string>())) fail(f + ".aliases", "holds an invalid name " + a.dump());
          if (!names.insert(a.get<std::string>()).second) fail(f + ".aliases", "'" + a.get<std::string>() + "' names two inputs");
        }
    }
    const json& outs = array(m_, "outputs");
    for (size_t i = 0; i < outs.size(); ++i) {
      std::string f = cat("outputs[", i, "]");
      if (!outs[i].is_object() || !outs[i].contains("index") || !outs[i]["index"].is_number_integer() ||
          outs[i]["index"].get<int64_t>() != static_cast<int64_t>(i))
        fail(f + ".index", cat("must be ", i));
      tensor(outs[i], f);
      if (!outs[i].contains("tangent") || !(outs[i]["tangent"].is_null() || outs[i]["tangent"].is_string()))
        fail(f + ".tangent", "must be null or a name");
      if (outs[i].contains("alias") && !names.count(name(outs[i]["alias"], f + ".alias", "input")))
        fail(f + ".alias.input", "names no input");
    }
    for (auto& g : array(m_, "grads")) {
      if (!names.count(name(g, "grads", "input"))) fail("grads", "names no input: " + g.dump());
      name(g, "grads", "buffer");
    }
    for (auto& s : array(m_, "saved")) {
      name(s, "saved", "name");
      tensor(s, "saved");
    }
    for (const char* prog : {"forward", "backward"}) {
      if (!m_.contains(prog) || !m_[prog].is_object()) fail(prog, "missing or not an object");
      path(m_[prog], prog, "ir");
      array(m_[prog], "steps", prog);
      array(m_[prog], "buffers", prog);
    }
    for (auto& k : array(m_, "kernels")) {
      name(k, "kernels", "name");
      path(k, "kernels", "source");
    }
    for (auto& mod : array(m_, "modules"))
      for (const char* kind : {"ptx", "cubin"}) {
        if (!mod.is_object() || !mod.contains(kind) || !mod[kind].is_object()) fail(cat("modules.", kind), "must be an object");
        for (auto& [arch, p] : mod[kind].items()) path(mod[kind], cat("modules.", kind), arch.c_str());
      }
    path(m_, "", "prelude");
    if (!m_.contains("runtime_checks") || !m_["runtime_checks"].is_object()) fail("runtime_checks", "missing or not an object");
    for (auto& i : array(m_["runtime_checks"], "no_create_graph_inputs", "runtime_checks"))
      if (!i.is_number_unsigned() || i.get<uint64_t>() >= ins.size())
        fail("runtime_checks.no_create_graph_inputs", "holds " + i.dump() + ", not an input index");
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    throw UserError(SourceLoc{file_, field, ""}, "malformed manifest: " + msg);
  }
  const json& array(const json& obj, const char* key, const std::string& where = "") const {
    std::string f = where.empty() ? key : where + "." + key;
    if (!obj.is_object() || !obj.contains(key) || !obj[key].is_array()) fail(f, "missing or not an array");
    return obj[key];
  }
  std::string name(const json& obj, const std::string& where, const char* key) const {
    if (!obj.is_object() || !obj.contains(key) || !obj[key].is_string() || !validName(obj[key].get<std::string>()))
      fail(where + "." + key, "missing or not a valid name");
    return obj[key].get<std::string>();
  }
  void boolean(const json& obj, const std::string& where, const char* key) const {
    if (!obj.contains(key) || !obj[key].is_boolean()) fail(where + "." + key, "missing or not a boolean");
  }
  void oneOf(const json& obj, const std::string& where, const char* key, std::initializer_list<const char*> allowed) const {
    if (obj.contains(key) && obj[key].is_string())
      for (const char* a : allowed)
        if (obj[key] == a) return;
    fail(where + "." + key, "missing or not one of the known values");
  }
  void tensor(const json& obj, const std::string& where) const {
    if (!obj.is_object() || !obj.contains("dtype") || !obj["dtype"].is_string() || !parseDType(obj["dtype"].get<std::string>()))
      fail(where + ".dtype", "missing or not a dtype aotc knows");
    if (!obj.contains("shape") || !obj["shape"].is_array()) fail(where + ".shape", "missing or not an array");
    int64_t numel = 1;
    for (auto& d : obj["shape"]) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(maxElements_))
        fail(where + ".shape", "holds " + d.dump() + ", not a size");
      numel *= std::max<int64_t>(d.get<int64_t>(), 1);
      if (numel > maxElements_)
        fail(where + ".shape", cat(obj["shape"].dump(), " is larger than ",
                                   maxElements_ == kMaxRunElements ? "the CPU runtimes hold (2^31 elements)" : "aotc handles (2^40 elements)"));
    }
  }
  /// A file of the artifact: relative, no "..", no backslash or NUL.
  void path(const json& obj, const std::string& where, const char* key) const {
    std::string f = where.empty() ? key : where + "." + key;
    if (!obj.contains(key) || !obj[key].is_string()) fail(f, "missing or not a path");
    const std::string p = obj[key].get<std::string>();
    fs::path fp(p);
    bool ok = !p.empty() && fp.is_relative() && p.find('\\') == std::string::npos && p.find('\0') == std::string::npos;
    for (auto& part : fp) ok = ok && part != ".." && part != ".";
    if (!ok) fail(f, "path '" + p + "' leaves the artifact directory");
  }

  const json& m_;
  std::string file_;
  int64_t maxElements_;
};

}  // namespace

void checkManifest(const json& m, const std::string& dir, int64_t maxElements) {
  ManifestCheck(m, fs::path(dir), maxElements).run();
}

std::map<std::string, HostTensor> runArtifact(const std::string& dir, const RunOptions& opts) {
  const std::string file = (fs::path(dir) / "manifest.json").string();
  try {
    return runArtifactUnchecked(dir, opts);
  } catch (const json::exception& e) {
    throw UserError(SourceLoc{file, "", ""}, std::string("malformed manifest: ") + e.what());
  } catch (const std::out_of_range& e) {
    throw UserError(SourceLoc{file, "", ""}, std::string("malformed manifest: a name it uses is not defined (") + e.what() + ")");
  }
}

std::map<std::string, HostTensor> runArtifactUnchecked(const std::string& dir, const RunOptions& opts) {
  fs::path root(dir);
  json m;
  try {
    m = json::parse(slurp(root / "manifest.json"));
  } catch (const json::exception& e) {
    throw UserError(SourceLoc{(root / "manifest.json").string(), "", ""}, std::string("malformed manifest: ") + e.what());
  }
  checkManifest(m, dir, kMaxRunElements);
  if (opts.create_graph) {
    std::vector<Diagnostic> d;
    for (auto& idx : m["runtime_checks"]["no_create_graph_inputs"]) {
      const std::string name = m["inputs"][idx.get<size_t>()]["name"];
      d.push_back({SourceLoc{(root / "manifest.json").string(), name, "create_graph"},
                   cat("input ", idx.get<size_t>(), " requires grad and is mutated in the backward; "
                       "a backward with create_graph (higher-order gradients) through it is not supported")});
    }
    if (!d.empty()) throw UserError(d);
  }
  Graph fw = parseGraph(slurp(root / m["forward"]["ir"].get<std::string>()), (root / "forward.ir").string());
  Graph bw = parseGraph(slurp(root / m["backward"]["ir"].get<std::string>()), (root / "backward.ir").string());
  verifyGraph(fw, "forward.ir");
  verifyGraph(bw, "backward.ir");

  // Every tensor given must be an input of the artifact, given once: a typo
  // or a stale file is an error, not an input silently left at its default.
  std::map<std::string, HostTensor> pool;
  std::map<std::string, std::string> from;
  std::set<std::string> known;
  for (auto& in : m["inputs"]) {
    known.insert(in["name"].get<std::string>());
    for (auto& a : in.value("aliases", json::array())) known.insert(a.get<std::string>());
  }
  for (const std::string& f : opts.input_files)
    for (auto& [k, v] : readSafetensors(f)) {
      // One file may hold the inputs and the grad outputs when it is given
      // as both --inputs and --grad-outputs.
      if (k.rfind("grad_output.", 0) == 0 && !known.count(k)) {
        if (f == opts.grad_outputs_file || opts.forward_only) continue;
        throw UserError(SourceLoc{f, k, "input"}, "is a grad output: pass this file as --grad-outputs too");
      }
      if (!known.count(k)) {
        std::string names;
        for (const std::string& n : known) names += (names.empty() ? "" : ", ") + n;
        if (names.size() > 200) names = names.substr(0, 197) + "...";
        throw UserError(SourceLoc{f, k, "input"}, "the artifact has no input of this name (inputs: " + names + ")");
      }
      if (from.count(k)) throw UserError(SourceLoc{f, k, "input"}, "is also given in " + from[k] + "; give each input once");
      from[k] = f;
      pool[k] = std::move(v);
    }

  // The caller's buffers, which epilogue copies overwrite.
  std::map<std::string, HostTensor> caller;
  std::vector<std::string> mutated;
  std::vector<HostTensor> fin;
  for (auto& in : m["inputs"]) {
    std::string name = in["name"];
    auto d = parseDType(in["dtype"].get<std::string>());
    AOTC_CHECK(d, "bad dtype in manifest");
    // A tied parameter may be given under any of its names, but only once.
    std::string given = name;
    for (auto& a : in.value("aliases", json::array())) {
      if (!pool.count(a.get<std::string>())) continue;
      if (pool.count(given))
        throw UserError(SourceLoc{"", a.get<std::string>(), "input"},
                        "names the same tensor as '" + given + "' (tied); give it once");
      given = a.get<std::string>();
    }
    caller[name] = checked(pool, given, *d, in["shape"].get<Ints>(), "input", false);
    if (in["mutation"] != "none") mutated.push_back(name);
  }
  for (const GraphInput& gi : fw.inputs) fin.push_back(caller.at(fw.values[gi.value].name));
  auto epilogue = [&](const std::string& name, const HostTensor& v) {
    HostTensor& dst = caller.at(name);
    AOTC_CHECK(dst.sizes == v.sizes, "epilogue copy shape mismatch for ", name);
    for (size_t i = 0; i < v.data.size(); ++i) dst.data[i] = roundTo(dst.dtype, v.data[i]);
  };
  std::unique_ptr<ProgramBackend> backend;
  if (opts.backend == "emulate") backend = makeEmulateBackend(dir, m, opts);
  else if (opts.backend != "reference")
    throw UserError(SourceLoc{}, "unknown backend '" + opts.backend + "' (known: reference, emulate)");
  auto runProgram = [&](const std::string& name, const Graph& g, const std::vector<HostTensor>& in) {
    return backend ? backend->run(name, g, in, epilogue) : interpretGraph(g, in, epilogue);
  };
  std::vector<HostTensor> fout = runProgram("forward", fw, fin);
  // Metadata mutations: the caller's tensor becomes a view of its storage.
  std::map<std::string, std::vector<ViewStep>> metaChain;
  for (const GraphOutput& o : fw.outputs)
    if (o.role == OutputRole::InputMeta) metaChain[*o.alias_of] = o.alias_chain;
  auto callerView = [&](const std::string& name) {
    HostTensor v = caller.at(name);
    auto it = metaChain.find(name);
    if (it != metaChain.end())
      for (const ViewStep& s : it->second) v = applyView(v, s);
    return v;
  };

  std::map<std::string, HostTensor> res;
  std::map<std::string, HostTensor> saved;
  size_t ui = 0;
  for (size_t i = 0; i < fw.outputs.size(); ++i) {
    const GraphOutput& o = fw.outputs[i];
    if (o.role == OutputRole::Saved) {
      saved[fw.values[o.value].name] = fout[i];
      continue;
    }
    if (o.role == OutputRole::InputMeta) continue;
    HostTensor v = fout[i];
    if (o.alias_of) {
      // An alias of an input is regenerated from the caller's buffer, after
      // the epilogue, by replaying its view chain (runtimes return a view).
      v = caller.at(*o.alias_of);
      for (const ViewStep& s : o.alias_chain) v = applyView(v, s);
    }
    res["output." + std::to_string(ui++)] = std::move(v);
  }
  for (auto& [n, chain] : metaChain)
    if (std::find(mutated.begin(), mutated.end(), n) == mutated.end()) mutated.push_back(n);
  for (auto& n : mutated) res["after_forward." + n] = callerView(n);
  if (opts.forward_only) return res;

  std::map<std::string, HostTensor> gpool;
  if (!opts.grad_outputs_file.empty()) gpool = readSafetensors(opts.grad_outputs_file);
  // A grad output must name a differentiable output (grad_output.<i>); the
  // grad-outputs file may also hold the inputs (one file for both).
  {
    std::set<std::string> wanted;
    for (auto& o : m["outputs"])
      if (!o["tangent"].is_null()) wanted.insert("grad_output." + std::to_string(o["index"].get<size_t>()));
    for (auto& [k, v] : gpool)
      if (!wanted.count(k) && !known.count(k))
        throw UserError(SourceLoc{opts.grad_outputs_file, k, "grad output"},
                        k.rfind("grad_output.", 0) == 0 ? "no differentiable output has this index"
                                                         : "is neither grad_output.<i> of a differentiable output nor an input");
  }
  std::map<std::string, HostTensor> tangents;
  for (auto& o : m["outputs"]) {
    if (o["tangent"].is_null()) continue;
    auto d = parseDType(o["dtype"].get<std::string>());
    tangents[o["tangent"]] = checked(gpool, "grad_output." + std::to_string(o["index"].get<size_t>()), *d,
                                     o["shape"].get<Ints>(), "grad output", true);
  }
  std::vector<HostTensor> bin;
  for (const GraphInput& gi : bw.inputs) {
    const std::string& n = bw.values[gi.value].name;
    if (gi.role == InputRole::Saved) bin.push_back(saved.at(n));
    else if (gi.role == InputRole::Tangent) bin.push_back(tangents.at(n));
    else bin.push_back(caller.at(n));  // the caller's buffer a backward epilogue writes
  }
  std::vector<HostTensor> bout = runProgram("backward", bw, bin);
  for (size_t i = 0; i < bw.outputs.size(); ++i)
    if (bw.outputs[i].role == OutputRole::Grad) res["grad." + bw.outputs[i].target] = bout[i];
  for (auto& n : mutated) res["after_backward." + n] = callerView(n);
  return res;
}

}  // namespace aotc
