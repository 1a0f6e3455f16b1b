//===- reference_runtime.cpp - The CPU oracle -----------------------------===//
#include "aotc/runtime/reference_runtime.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <sstream>

#include "aotc/ir/safetensors.h"
#include "aotc/ir/text.h"
#include "aotc/ops/ops.h"
#include "aotc/runtime/manifest.h"

namespace aotc {

namespace fs = std::filesystem;
using json = nlohmann::json;

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
    auto outs = referenceEval(n.op, ins, n.attrs, ot);
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
  HostTensor t = it->second;
  if (t.dtype != d) {
    if (isFloating(t.dtype) != isFloating(d))
      throw UserError(SourceLoc{"", name, what}, cat("dtype ", dtypeName(t.dtype), " does not match the artifact's ", dtypeName(d)));
    for (double& x : t.data) x = roundTo(d, x);
    t.dtype = d;
  }
  return t;
}

}  // namespace

std::map<std::string, HostTensor> runArtifact(const std::string& dir, const RunOptions& opts) {
  fs::path root(dir);
  json m;
  try {
    m = json::parse(slurp(root / "manifest.json"));
  } catch (const json::exception& e) {
    throw UserError(SourceLoc{(root / "manifest.json").string(), "", ""}, std::string("malformed manifest: ") + e.what());
  }
  if (m.value("format", "") != "aotc.manifest" || m.value("version", 0) != kManifestVersion)
    throw UserError(SourceLoc{(root / "manifest.json").string(), "", ""},
                    cat("not an aotc manifest of version ", kManifestVersion));
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

  std::map<std::string, HostTensor> pool;
  for (const std::string& f : opts.input_files)
    for (auto& [k, v] : readSafetensors(f)) pool[k] = std::move(v);

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
