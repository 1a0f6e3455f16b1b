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
#include "aotc/ir/unify.h"
#include "aotc/text/text.h"
#include "aotc/ops/ops.h"
#include "aotc/runtime/device.h"
#include "aotc/runtime/executor.h"

namespace aotc {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::map<std::string, HostTensor> runArtifactUnchecked(const std::string& dir, const RunOptions& opts);

std::vector<HostTensor> interpretGraph(const Graph& g, const std::vector<HostTensor>& inputs,
                                       const std::function<void(const std::string&, const HostTensor&)>& on_epilogue,
                                       const std::function<void(const std::string&, size_t, size_t)>& progress) {
  AOTC_CHECK(inputs.size() == g.inputs.size(), "program takes ", g.inputs.size(), " inputs, got ", inputs.size());
  std::vector<HostTensor> env(g.values.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[g.inputs[i].value] = inputs[i];
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (progress) progress(g.name, k, g.nodes.size());
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

}  // namespace

plan::Manifest loadManifest(const std::string& dir, int64_t maxElements) { return plan::readManifest(dir, maxElements); }

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

Graph loadArtifactGraph(const std::string& dir, const std::string& rel) {
  const fs::path file = fs::path(dir) / rel;
  Graph g = parseGraph(slurp(file), file.string());
  verifyGraph(g, rel);
  return g;
}

namespace {

/// The results a run reports, from the device through the executor.
std::map<std::string, HostTensor> runOnDevice(const plan::Manifest& m, const std::string& dir, Device& dev,
                                              const std::map<std::string, HostTensor>& caller,
                                              const std::map<size_t, HostTensor>& gradOutputs, const std::vector<std::string>& mutated,
                                              bool forwardOnly, const std::function<void(const std::string&, size_t, size_t)>& progress,
                                              std::map<std::string, HostTensor>* trace) {
  std::vector<DevicePtr> owned;
  struct Release {
    Device& d;
    std::vector<DevicePtr>& o;
    ~Release() {
      for (DevicePtr p : o) d.release(p);
    }
  } release{dev, owned};
  std::map<std::string, HostTensor> res;
  {
    // Note [Step trace]: <phase>.<step, 4 digits>.<buffer> after each step.
    SessionOptions so = SessionOptions::fromEnvironment();
    if (trace) {
      so.poison_arenas = true;  // what no step wrote reads as the poison (NaN in floats) on every device
      so.after_step = [trace](Session& s, plan::Phase ph, size_t i) {
        char step[16];
        std::snprintf(step, sizeof step, "%04zu", i);
        for (auto& [n, t] : s.stepBuffers(ph, i)) (*trace)[cat(plan::phaseName(ph), ".", step, ".", n)] = std::move(t);
      };
    }
    Session s(m, dir, dev, so);
    s.setProgress(progress);
    for (const plan::InputSpec& in : m.inputs) {
      auto it = caller.find(in.name);
      if (it == caller.end()) continue;  // from the artifact's weights
      DeviceTensor t = uploadTensor(dev, plan::Layout{in.layout.dtype, in.layout.shape, in.layout.strides, 0}, it->second, owned);
      s.bind(in.name, t);
    }
    s.forward();
    for (size_t i = 0; i < s.numOutputs(); ++i) res["output." + std::to_string(i)] = readDeviceTensor(dev, s.output(i));
    for (const std::string& n : mutated) res["after_forward." + n] = readDeviceTensor(dev, s.input(n));
    if (forwardOnly) return res;
    for (auto& [i, g] : gradOutputs) {
      const plan::Buffer* b = m.backward.buffer(*m.outputs[i].tangent);
      if (!b) continue;  // the backward does not read this output's gradient
      s.bindGradOutput(i, uploadTensor(dev, plan::Layout{b->layout.dtype, b->layout.shape, b->layout.strides, 0}, g, owned));
    }
    s.backward();
    for (const plan::GradSpec& g : m.grads) res["grad." + g.input] = readDeviceTensor(dev, s.grad(g.input));
    for (const std::string& n : mutated) res["after_backward." + n] = readDeviceTensor(dev, s.input(n));
  }
  return res;
}

}  // namespace

std::map<std::string, HostTensor> runArtifactUnchecked(const std::string& dir, const RunOptions& opts) {
  fs::path root(dir);
  plan::Manifest m = plan::readManifest(dir, kMaxRunElements);
  const std::string manifestFile = (root / "manifest.json").string();
  if (opts.create_graph) {
    std::vector<Diagnostic> d;
    for (size_t idx : m.runtime_checks.no_create_graph_inputs)
      d.push_back({SourceLoc{manifestFile, m.inputs[idx].name, "create_graph"},
                   cat("input ", idx, " requires grad and is mutated in the backward; "
                       "a backward with create_graph (higher-order gradients) through it is not supported")});
    if (!d.empty()) throw UserError(d);
  }
  if (opts.backend != "reference" && opts.backend != "emulate" && cudaOrdinal(opts.backend) < 0)
    throw UserError(SourceLoc{}, "unknown backend '" + opts.backend + "' (known: reference, emulate, cuda, cuda:<n>)");
  // The device first: without a GPU, --backend cuda fails before reading anything else.
  std::unique_ptr<Device> device;
  if (int ordinal = cudaOrdinal(opts.backend); ordinal >= 0) device = makeCudaDevice(ordinal);
  if (opts.backend == "emulate") device = makeEmulateDevice(EmulateOptions{opts.emulate_cache_dir, opts.host_compiler, opts.progress});

  // Every tensor given must be an input of the artifact, given once: a typo
  // or a stale file is an error, not an input silently left at its default.
  std::map<std::string, HostTensor> pool;
  std::map<std::string, std::string> from;
  std::set<std::string> known;
  for (const plan::InputSpec& in : m.inputs) {
    known.insert(in.name);
    known.insert(in.aliases.begin(), in.aliases.end());
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
  if (m.symbolic) {
    // Note [Symbolic manifest]: the sizes of the inputs given bind the
    // symbols; the manifest is read at that binding.
    std::map<std::string, Ints> shapes;
    for (const plan::InputSpec& in : m.inputs) {
      if (pool.count(in.name)) shapes[in.name] = pool.at(in.name).sizes;
      for (const std::string& a : in.aliases)
        if (pool.count(a)) shapes[in.name] = pool.at(a).sizes;
    }
    std::shared_ptr<const plan::SymbolicManifest> s = m.symbolic;
    m = plan::instantiateManifest(s, plan::bindSymbols(*s, shapes, manifestFile), manifestFile, kMaxRunElements);
  }
  // Inputs not given: the artifact's initial weights, buffers and constants.
  std::map<std::string, HostTensor> weights;
  if (!m.weights.empty()) weights = readSafetensors((root / m.weights).string());

  // The caller's buffers, which epilogue copies overwrite.
  std::map<std::string, HostTensor> caller;
  std::vector<std::string> mutated;
  for (const plan::InputSpec& in : m.inputs) {
    // A tied parameter may be given under any of its names, but only once.
    std::string given = in.name;
    for (const std::string& a : in.aliases) {
      if (!pool.count(a)) continue;
      if (pool.count(given)) throw UserError(SourceLoc{"", a, "input"}, "names the same tensor as '" + given + "' (tied); give it once");
      given = a;
    }
    if (!pool.count(given) && in.role != "user_input" && weights.count(in.name)) {
      caller[in.name] = checked(weights, in.name, in.layout.dtype, in.layout.shape, "weights", false);
    } else if (!pool.count(given) && in.zero_init) {
      caller[in.name] = HostTensor::zeros(in.layout.dtype, in.layout.shape);
    } else {
      caller[in.name] = checked(pool, given, in.layout.dtype, in.layout.shape, "input", false);
    }
    if (in.mutation != plan::Mutation::None || in.metadata_after_forward) mutated.push_back(in.name);
  }

  // Grad outputs: grad_output.<i> of a differentiable output; the file may
  // also hold the inputs (one file for both).
  std::map<std::string, HostTensor> gpool;
  if (!opts.grad_outputs_file.empty() && !opts.forward_only) gpool = readSafetensors(opts.grad_outputs_file);
  {
    std::set<std::string> wanted;
    for (const plan::OutputSpec& o : m.outputs)
      if (o.tangent) wanted.insert("grad_output." + std::to_string(o.index));
    for (auto& [k, v] : gpool)
      if (!wanted.count(k) && !known.count(k))
        throw UserError(SourceLoc{opts.grad_outputs_file, k, "grad output"},
                        k.rfind("grad_output.", 0) == 0 ? cat("no differentiable output has this index", plan::differentiableOutputsHint(m.outputs))
                                                         : "is neither grad_output.<i> of a differentiable output nor an input");
  }
  std::map<size_t, HostTensor> gradOutputs;
  for (const plan::OutputSpec& o : m.outputs)
    if (o.tangent) gradOutputs[o.index] = checked(gpool, "grad_output." + std::to_string(o.index), o.dtype, o.shape, "grad output", true);
  // Note [Seeded gradient]: run as `loss.backward()` is called. With no
  // grad outputs at all, a program whose one differentiable output is a
  // scalar (one element, as backward() requires) gets the gradient 1; in
  // every other case each output whose gradient defaults to zeros is named,
  // so all-zero parameter gradients never come without a word of why.
  if (!opts.forward_only) {
    std::vector<const plan::OutputSpec*> missing;
    size_t differentiable = 0;
    for (const plan::OutputSpec& o : m.outputs) {
      if (!o.tangent) continue;
      ++differentiable;
      if (!gpool.count("grad_output." + std::to_string(o.index))) missing.push_back(&o);
    }
    int64_t n1 = 1;
    if (differentiable == 1 && missing.size() == 1)
      for (int64_t d : missing[0]->shape) n1 *= d;
    const bool noneGiven = std::none_of(gpool.begin(), gpool.end(), [](const auto& kv) { return kv.first.rfind("grad_output.", 0) == 0; });
    if (differentiable == 1 && missing.size() == 1 && noneGiven && n1 == 1) {
      HostTensor& seed = gradOutputs[missing[0]->index];
      std::fill(seed.data.begin(), seed.data.end(), 1.0);
      if (opts.note) opts.note(cat("output.", missing[0]->index, " is the only differentiable output and a scalar: its gradient is 1, as loss.backward() seeds it"));
    } else if (opts.note) {
      for (const plan::OutputSpec* o : missing)
        opts.note(cat("grad_output.", o->index, " not given: output.", o->index, "'s incoming gradient is zeros (give it with --grad-outputs)"));
    }
  }

  if (!opts.trace_file.empty() && !device)
    throw UserError(SourceLoc{opts.trace_file}, "--trace records the manifest's steps on a device: give --backend emulate or cuda "
                                                "(the reference interprets the programs' IR, which has no steps)");
  std::map<std::string, HostTensor> trace;
  // One training step from `caller` (the inputs as they stand).
  auto once = [&](std::map<std::string, HostTensor> caller) -> std::map<std::string, HostTensor> {
    if (device) {
      trace.clear();  // the last step's
      return runOnDevice(m, dir, *device, caller, gradOutputs, mutated, opts.forward_only, opts.progress, opts.trace_file.empty() ? nullptr : &trace);
    }

    // The reference interpreter: the oracle, on the programs' IR.
    Graph fw = loadArtifactGraph(dir, m.forward.ir);
    Graph bw = loadArtifactGraph(dir, m.backward.ir);
    if (m.symbolic) {
      fw = instantiate(fw, m.binding);
      bw = instantiate(bw, m.binding);
    }
    std::vector<HostTensor> fin;
    for (const GraphInput& gi : fw.inputs) fin.push_back(caller.at(fw.values[gi.value].name));
    auto epilogue = [&](const std::string& name, const HostTensor& v) {
      HostTensor& dst = caller.at(name);
      AOTC_CHECK(dst.sizes == v.sizes, "epilogue copy shape mismatch for ", name);
      for (size_t i = 0; i < v.data.size(); ++i) dst.data[i] = roundTo(dst.dtype, v.data[i]);
    };
    auto phase = [&](const char* name) -> std::function<void(const std::string&, size_t, size_t)> {
      if (!opts.progress) return nullptr;
      return [&opts, name](const std::string&, size_t done, size_t total) { opts.progress(name, done, total); };
    };
    std::vector<HostTensor> fout = interpretGraph(fw, fin, epilogue, phase("forward"));
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
    for (auto& n : mutated) res["after_forward." + n] = callerView(n);
    if (opts.forward_only) return res;

    std::map<std::string, HostTensor> tangents;
    for (const plan::OutputSpec& o : m.outputs)
      if (o.tangent) tangents[*o.tangent] = gradOutputs.at(o.index);
    std::vector<HostTensor> bin;
    for (const GraphInput& gi : bw.inputs) {
      const std::string& n = bw.values[gi.value].name;
      if (gi.role == InputRole::Saved) bin.push_back(saved.at(n));
      else if (gi.role == InputRole::Tangent) bin.push_back(tangents.at(n));
      else bin.push_back(caller.at(n));  // the caller's buffer a backward epilogue writes
    }
    std::vector<HostTensor> bout = interpretGraph(bw, bin, epilogue, phase("backward"));
    for (size_t i = 0; i < bw.outputs.size(); ++i)
      if (bw.outputs[i].role == OutputRole::Grad) res["grad." + bw.outputs[i].target] = bout[i];
    for (auto& n : mutated) res["after_backward." + n] = callerView(n);
    return res;
  };
  if (opts.steps < 1) throw UserError(SourceLoc{}, cat("--steps ", opts.steps, ": give 1 or more"));
  if (opts.steps > 1)
    for (const plan::InputSpec& in : m.inputs)
      if (in.metadata_after_forward)
        throw UserError(SourceLoc{"", in.name, "input"}, "--steps: the program changes this input's shape or strides, so a step's "
                                                         "inputs are not the last one's results: run one step at a time");
  std::map<std::string, HostTensor> res;
  for (int64_t k = 0; k < opts.steps; ++k) {
    res = once(caller);
    // The next step starts from this one's mutated inputs (parameters and
    // optimizer state under --optimizer, running statistics, ...).
    for (const std::string& n : mutated) {
      auto it = res.find((opts.forward_only ? "after_forward." : "after_backward.") + n);
      if (it != res.end()) caller[n] = it->second;
    }
    if (opts.on_step) opts.on_step(k, res);
  }
  if (!opts.trace_file.empty()) writeSafetensors(opts.trace_file, trace);
  return res;
}

}  // namespace aotc
