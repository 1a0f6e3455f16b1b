//===- manifest.cpp - The artifact's plan ----------------------------------===//
#include "aotc/codegen/manifest.h"

#include <set>

#include "aotc/ops/ops.h"

namespace aotc {

namespace {

plan::ViewChain viewChain(const std::vector<ViewStep>& chain) {
  plan::ViewChain r;
  for (const ViewStep& s : chain) r.push_back(plan::ViewOp{opName(s.op), s.attrs});
  return r;
}

}  // namespace

plan::Manifest buildManifest(const Graph& functional, const Partition& partition, const CodegenResult& cg, const std::vector<KernelModule>& modules,
                             const ManifestInfo& info) {
  const Graph& fn = functional;
  const Partition& p = partition;
  plan::Manifest m;
  m.nvrtc_version = info.nvrtc_version;
  m.flags = info.flags;
  m.model_name = info.model_name;
  m.model_source = info.source_file;
  m.arguments = info.arguments.empty() ? nlohmann::ordered_json() : info.arguments;  // null: not recorded
  m.archs = info.archs;
  m.weights = info.weights;
  m.precision = info.precision;
  m.loss_scaling = info.loss_scaling;

  // Mutation phase of every input, from the epilogue copies of both programs.
  std::map<std::string, plan::Mutation> phase;
  auto scan = [&](const Graph& g) {
    for (const Node& n : g.nodes) {
      if (n.op != OpKind::EpilogueCopy) continue;
      const std::string& name = g.values[n.inputs[0]].name;
      plan::Mutation ph = (n.tags & kMustBeInForward) ? plan::Mutation::Forward : plan::Mutation::Backward;
      auto it = phase.find(name);
      phase[name] = it != phase.end() && it->second != ph ? plan::Mutation::Both : ph;
    }
  };
  scan(p.forward);
  scan(p.backward);

  std::map<std::string, const GraphOutput*> meta;
  for (const GraphOutput& o : p.forward.outputs)
    if (o.role == OutputRole::InputMeta) meta[*o.alias_of] = &o;
  for (const GraphInput& gi : fn.inputs) {
    const Value& v = fn.values[gi.value];
    plan::InputSpec in;
    in.name = v.name;
    in.role = inputRoleName(gi.role);
    in.layout = plan::Layout{v.type.dtype, v.type.sizes, v.type.strides, 0};
    in.requires_grad = gi.requires_grad;
    in.mutation = phase.count(v.name) ? phase[v.name] : plan::Mutation::None;
    if (auto a = info.input_aliases.find(v.name); a != info.input_aliases.end()) in.aliases = a->second;
    in.zero_init = info.zero_inputs.count(v.name) > 0;
    if (meta.count(v.name)) {
      // The caller's tensor takes this metadata after the forward (after the
      // data epilogue, which writes through the original layout).
      const GraphOutput& o = *meta[v.name];
      const TensorType& t = p.forward.type(o.value);
      in.metadata_after_forward = plan::MetadataChange{t.sizes, t.strides, t.offset, viewChain(o.alias_chain)};
    }
    m.inputs.push_back(std::move(in));
  }

  // User outputs: the tangent each takes in the backward (the output's own
  // record, set by autodiff), and which alias an input.
  std::set<std::string> backwardTangents;
  for (const GraphInput& gi : p.backward.inputs)
    if (gi.role == InputRole::Tangent) backwardTangents.insert(p.backward.values[gi.value].name);
  size_t ui = 0;
  for (const GraphOutput& o : p.forward.outputs) {
    if (o.role != OutputRole::User) continue;
    const Value& v = p.forward.values[o.value];
    plan::OutputSpec out;
    out.index = ui;
    out.buffer = v.name;
    out.dtype = v.type.dtype;
    out.shape = v.type.sizes;
    if (!o.target.empty()) {
      AOTC_CHECK(backwardTangents.count(o.target), "output ", ui, " names tangent '", o.target, "', which the backward does not take");
      out.tangent = o.target;
    }
    if (o.alias_of) out.alias = plan::AliasRecipe{*o.alias_of, viewChain(o.alias_chain)};
    if (ui < info.output_paths.size()) out.path = info.output_paths[ui];
    m.outputs.push_back(std::move(out));
    ++ui;
  }
  AOTC_CHECK(info.output_paths.empty() || info.output_paths.size() == ui, "output paths for ", info.output_paths.size(),
             " outputs, the forward has ", ui);
  for (const GraphInput& gi : p.backward.inputs)
    if (gi.role == InputRole::Tangent) {
      bool owned = false;
      for (const plan::OutputSpec& o : m.outputs) owned = owned || o.tangent == p.backward.values[gi.value].name;
      AOTC_CHECK(owned, "backward tangent '", p.backward.values[gi.value].name, "' belongs to no output");
    }

  for (const GraphOutput& o : p.backward.outputs)
    if (o.role == OutputRole::Grad) m.grads.push_back(plan::GradSpec{o.target, p.backward.values[o.value].name});

  const std::vector<ValueId> savedIds = p.forward.valuesNamed(p.saved);
  for (size_t i = 0; i < p.saved.size(); ++i) {
    const TensorType& t = p.forward.type(savedIds[i]);
    m.saved.push_back(plan::SavedSpec{p.saved[i], plan::Layout{t.dtype, t.sizes, t.strides, t.offset}});
  }

  m.forward = cg.forward;
  m.backward = cg.backward;

  // Each kernel lives in a module (Note [Kernel modules]): one PTX/cubin file
  // per module and arch; a runtime loads the module and looks the kernel up.
  std::map<std::string, std::string> moduleOf;
  for (const KernelModule& km : modules) {
    plan::ModuleSpec ms;
    ms.name = km.name;
    ms.kernels = km.kernels;
    for (auto& a : info.archs) {
      ms.ptx[a] = "kernels/" + km.name + "." + a + ".ptx";
      if (!ptxOnlyArch(a)) ms.cubin[a] = "kernels/" + km.name + "." + a + ".cubin";
    }
    m.modules.push_back(std::move(ms));
    for (auto& k : km.kernels) moduleOf[k] = km.name;
  }
  for (auto& [name, k] : cg.kernels)
    m.kernels.push_back(plan::KernelSpec{name, "kernels/" + name + ".cu", moduleOf.at(name), k.nodes, kernelChecksIndices(k.source)});

  // Inputs that require grad and are mutated in the backward: a runtime must
  // refuse create_graph / higher-order gradients through them.
  for (size_t i = 0; i < m.inputs.size(); ++i)
    if (m.inputs[i].requires_grad && m.inputs[i].mutation != plan::Mutation::None && m.inputs[i].mutation != plan::Mutation::Forward)
      m.runtime_checks.no_create_graph_inputs.push_back(i);
  // Note [Vectorized access]: kernels read and write caller buffers with
  // 16-byte accesses; a runtime refuses an input whose data pointer is not
  // 16-byte aligned (aotc run allocates aligned buffers).
  m.runtime_checks.input_alignment_bytes = 16;
  return m;
}

}  // namespace aotc
