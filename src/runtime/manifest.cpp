//===- manifest.cpp - Manifest v1 writer -----------------------------------===//
#include "aotc/runtime/manifest.h"

#include "aotc/ops/ops.h"

namespace aotc {

using ojson = nlohmann::ordered_json;

namespace {

ojson viewChain(const std::vector<ViewStep>& chain) {
  ojson a = ojson::array();
  for (const ViewStep& s : chain) {
    ojson st{{"op", opName(s.op)}};
    for (auto& [k, v] : s.attrs) std::visit([&](auto&& x) { st[k] = x; }, v);
    a.push_back(st);
  }
  return a;
}

}  // namespace

ojson buildManifest(const PipelineResult& pr, const CodegenResult& cg, const std::vector<KernelModule>& modules,
                    const ManifestInfo& info) {
  const Graph& fn = pr.functional;
  const Partition& p = pr.partition;
  ojson m;
  m["format"] = "aotc.manifest";
  m["version"] = kManifestVersion;
  m["compiler"] = {{"name", "aotc"}, {"version", kCompilerVersion}, {"nvrtc", info.nvrtc_version}, {"flags", info.flags}};
  m["model"] = {{"name", info.model_name}, {"source", info.source_file}};
  if (!info.arguments.empty()) m["model"]["arguments"] = info.arguments;
  m["archs"] = info.archs;

  // Mutation phase of every input, from the epilogue copies of both programs.
  std::map<std::string, std::string> phase;
  auto scan = [&](const Graph& g) {
    for (const Node& n : g.nodes) {
      if (n.op != OpKind::EpilogueCopy) continue;
      const std::string& name = g.values[n.inputs[0]].name;
      std::string ph = (n.tags & kMustBeInForward) ? "forward" : "backward";
      phase[name] = phase.count(name) && phase[name] != ph ? "both" : ph;
    }
  };
  scan(p.forward);
  scan(p.backward);

  std::map<std::string, const GraphOutput*> meta;
  for (const GraphOutput& o : p.forward.outputs)
    if (o.role == OutputRole::InputMeta) meta[*o.alias_of] = &o;
  ojson inputs = ojson::array();
  for (const GraphInput& gi : fn.inputs) {
    const Value& v = fn.values[gi.value];
    ojson e{{"name", v.name},
            {"role", inputRoleName(gi.role)},
            {"dtype", dtypeName(v.type.dtype)},
            {"shape", v.type.sizes},
            {"strides", v.type.strides},
            {"requires_grad", gi.requires_grad},
            {"mutation", phase.count(v.name) ? phase[v.name] : "none"}};
    if (auto a = info.input_aliases.find(v.name); a != info.input_aliases.end()) e["aliases"] = a->second;
    if (meta.count(v.name)) {
      // The caller's tensor takes this metadata after the forward (after the
      // data epilogue, which writes through the original layout).
      const GraphOutput& o = *meta[v.name];
      const TensorType& t = p.forward.type(o.value);
      e["metadata_after_forward"] = {{"shape", t.sizes}, {"strides", t.strides}, {"offset", t.offset},
                                     {"view_chain", viewChain(o.alias_chain)}};
    }
    inputs.push_back(e);
  }
  m["inputs"] = inputs;

  // User outputs: which get a tangent in backward, and which alias an input.
  std::map<size_t, std::string> tangentOf;
  for (const GraphInput& gi : pr.joint.inputs)
    if (gi.role == InputRole::Tangent) {
      const std::string& n = pr.joint.values[gi.value].name;
      tangentOf[std::stoul(n.substr(n.rfind('_') + 1))] = n;
    }
  ojson outputs = ojson::array();
  size_t ui = 0;
  for (const GraphOutput& o : p.forward.outputs) {
    if (o.role != OutputRole::User) continue;
    const Value& v = p.forward.values[o.value];
    ojson e{{"index", ui},
            {"buffer", v.name},
            {"dtype", dtypeName(v.type.dtype)},
            {"shape", v.type.sizes},
            {"kind", o.alias_of ? "alias_of_input" : "fresh"},
            {"tangent", tangentOf.count(ui) ? ojson(tangentOf[ui]) : ojson(nullptr)}};
    if (o.alias_of) e["alias"] = {{"input", *o.alias_of}, {"view_chain", viewChain(o.alias_chain)}};
    if (ui < info.output_paths.size()) e["path"] = info.output_paths[ui];
    outputs.push_back(e);
    ++ui;
  }
  AOTC_CHECK(info.output_paths.empty() || info.output_paths.size() == ui, "output paths for ", info.output_paths.size(),
             " outputs, the forward has ", ui);
  m["outputs"] = outputs;

  ojson grads = ojson::array();
  for (const GraphOutput& o : p.backward.outputs)
    if (o.role == OutputRole::Grad) grads.push_back({{"input", o.target}, {"buffer", p.backward.values[o.value].name}});
  m["grads"] = grads;

  ojson saved = ojson::array();
  for (const std::string& s : p.saved) {
    const TensorType& t = p.forward.type(p.forward.valueNamed(s));
    saved.push_back({{"name", s}, {"dtype", dtypeName(t.dtype)}, {"shape", t.sizes}, {"strides", t.strides}, {"offset", t.offset}});
  }
  m["saved"] = saved;

  m["forward"] = cg.forward;
  m["forward"]["ir"] = "forward.ir";
  m["backward"] = cg.backward;
  m["backward"]["ir"] = "backward.ir";

  // Each kernel lives in a module (Note [Kernel modules]): one PTX/cubin file
  // per module and arch; a runtime loads the module and looks the kernel up.
  std::map<std::string, std::string> moduleOf;
  ojson mods = ojson::array();
  for (const KernelModule& km : modules) {
    ojson ptx = ojson::object(), cubin = ojson::object();
    for (auto& a : info.archs) {
      ptx[a] = "kernels/" + km.name + "." + a + ".ptx";
      cubin[a] = "kernels/" + km.name + "." + a + ".cubin";
    }
    mods.push_back({{"name", km.name}, {"kernels", km.kernels}, {"ptx", ptx}, {"cubin", cubin}});
    for (auto& k : km.kernels) moduleOf[k] = km.name;
  }
  m["modules"] = mods;
  ojson kernels = ojson::array();
  for (auto& [name, k] : cg.kernels)
    kernels.push_back({{"name", name}, {"source", "kernels/" + name + ".cu"}, {"module", moduleOf.at(name)}, {"nodes", k.nodes}});
  m["kernels"] = kernels;
  m["prelude"] = "kernels/aotc_prelude.cuh";

  // Inputs that require grad and are mutated in the backward: a runtime must
  // refuse create_graph / higher-order gradients through them.
  ojson checks = ojson::array();
  for (size_t i = 0; i < fn.inputs.size(); ++i) {
    const std::string& n = fn.values[fn.inputs[i].value].name;
    if (fn.inputs[i].requires_grad && phase.count(n) && phase[n] != "forward") checks.push_back(i);
  }
  // Note [Vectorized access]: kernels read and write caller buffers with
  // 16-byte accesses; a runtime copies an input whose data pointer is not
  // 16-byte aligned into one that is (and mutations back) or refuses it.
  m["runtime_checks"] = {{"no_create_graph_inputs", checks}, {"input_alignment_bytes", 16}};
  return m;
}

}  // namespace aotc
