//===- driver.cpp - compile, inspect, run ----------------------------------===//
#include "aotc/driver/driver.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <chrono>
#include <cmath>
#include <thread>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <random>
#include <sstream>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "aotc/codegen/codegen.h"
#include "aotc/frontend/fx.h"
#include "aotc/ir/safetensors.h"
#include "aotc/text/text.h"
#include "aotc/ops/ops.h"
#include "aotc/codegen/manifest.h"
#include "aotc/plan/roofline.h"
#include "aotc/support/fs.h"

namespace aotc {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

void writeFile(const fs::path& p, const std::string& data) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!f) throw UserError(SourceLoc{p.string(), "", ""}, "cannot write file");
}

/// A temporary directory beside `target` that is removed unless committed
/// (Note [No debris]); commit() puts it in place atomically: the target
/// directory is the old artifact or the new one, never neither.
class StagingDir {
 public:
  explicit StagingDir(fs::path target) {
    // `-o out/` names `out`.
    while (!target.empty() && target.filename().empty()) target = target.parent_path();
    target_ = target;
    const std::string base = target.filename().string();
    if (base.empty() || base == "." || base == "..")
      throw UserError(SourceLoc{target.string(), "", ""}, "is not a usable artifact directory name");
    fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::error_code ec;
    // Remember which ancestors this compile creates, to remove them on failure.
    for (fs::path p = parent; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
      created_.push_back(p);
      if (!p.has_parent_path() || p.parent_path() == p) break;
    }
    fs::create_directories(parent, ec);
    if (!fs::is_directory(parent, ec))
      throw UserError(SourceLoc{target.string(), "", ""}, "cannot create the output's parent directory");
    removeStaleTemporaries(parent, "." + base + ".tmp-", ".tmp-");
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string name = "." + base + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(attempt);
      path_ = parent / name;
      if (fs::create_directory(path_, ec)) return;
    }
    throw UserError(SourceLoc{target.string(), "", ""}, "cannot create a temporary directory beside the output");
  }
  ~StagingDir() {
    if (committed_) return;
    std::error_code ec;
    fs::remove_all(path_, ec);
    for (const fs::path& p : created_) fs::remove(p, ec);  // only if empty
  }
  const fs::path& path() const { return path_; }
  const fs::path& target() const { return target_; }
  void commit() {
    std::error_code ec;
    if (fs::exists(target_, ec)) {
      if (!fs::is_directory(target_, ec) || !fs::exists(target_ / "manifest.json", ec))
        throw UserError(SourceLoc{target_.string(), "", ""}, "exists and is not an aotc artifact; refusing to replace it");
      // One atomic exchange; the old artifact is then where the staging
      // directory was, and is removed (by us, or by the next compile).
      if (::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) != 0) {
        if (errno != EINVAL && errno != ENOSYS)
          throw UserError(SourceLoc{target_.string(), "", ""}, std::string("cannot replace the artifact: ") + std::strerror(errno));
        // A file system without RENAME_EXCHANGE: two renames.
        fs::path old = path_.string() + ".old";
        fs::rename(target_, old);
        fs::rename(path_, target_);
        fs::remove_all(old, ec);
        committed_ = true;
        return;
      }
      fs::remove_all(path_, ec);
    } else {
      fs::rename(path_, target_);
    }
    committed_ = true;
  }

 private:
  fs::path target_, path_;
  std::vector<fs::path> created_;
  bool committed_ = false;
};

/// Kernels per NVRTC program (Note [Kernel modules]): large enough to amortize
/// NVRTC's fixed cost, small enough to keep both cores busy on small models.
constexpr size_t kKernelsPerModule = 48;

int64_t bytesOf(const TensorType& t) { return t.numel() * dtypeSize(t.dtype); }

/// Inputs the caller passes as views of one storage: a mutation of one is
/// visible through the others, which the compiled programs do not model
/// (AOTAutograd builds a "synthetic base"; we refuse, clearly, instead).
/// Reading aliased inputs is fine.
void checkStorageGroups(const FxModel& fx, const PipelineResult& pr, const std::string& file) {
  std::set<std::string> mutated;
  for (const Graph* g : {&pr.partition.forward, &pr.partition.backward})
    for (const Node& n : g->nodes)
      if (n.op == OpKind::EpilogueCopy) mutated.insert(g->values[n.inputs[0]].name);
  std::vector<Diagnostic> d;
  for (const auto& group : fx.storage_groups)
    for (const std::string& name : group)
      if (mutated.count(name)) {
        std::string others;
        for (const std::string& o : group)
          if (o != name) others += (others.empty() ? "'" : ", '") + o + "'";
        d.push_back({SourceLoc{file, name, "input"},
                     "is mutated, and shares storage with input " + others +
                         " in the caller; aotc does not model aliasing between inputs: pass distinct tensors"});
      }
  if (!d.empty()) throw UserError(d);
}

}  // namespace

std::string CompileSummary::str() const {
  std::ostringstream os;
  os << "model " << model_name << ": " << inputs << " inputs (" << parameters << " parameters, " << buffers
     << " buffers, " << user_inputs << " user inputs)\n";
  os << "  mutated inputs: ";
  if (mutated.empty()) os << "none";
  for (size_t i = 0; i < mutated.size(); ++i) os << (i ? ", " : "") << mutated[i];
  os << "\n  forward: " << forward_nodes << " nodes, " << forward_steps << " steps\n";
  os << "  backward: " << backward_nodes << " nodes, " << backward_steps << " steps\n";
  os << "  kernels: " << kernels << "\n";
  os << "  saved for backward: " << saved << " tensors, " << saved_bytes << " bytes\n";
  return os.str();
}

std::string CompileSummary::timings() const {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "timings: load %.1f ms, engine %.1f ms, codegen %.1f ms, nvrtc %.1f ms (%.1f ms on all threads), write %.1f ms, "
                "total %.1f ms\nmodule cache: %zu hits, %zu misses (%zu modules, each per arch; nvJitLink %.1f ms on all threads)\n"
                "kernel cache: %zu hits, %zu misses (PTX of the kernels of the modules that missed, one for all archs; %zu NVRTC programs)\n",
                load_ms, engine_ms, codegen_ms, nvrtc_wall_ms, nvrtc_cpu_ms, write_ms, total_ms, module_hits, module_misses, modules,
                link_cpu_ms, cache_hits, cache_misses, nvrtc_programs);
  return buf;
}

struct Compilation::State {
  CompileOptions opts;
  Logger log;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  std::function<void(const std::string&, const Graph&)> observer;
  int dumpIndex = 0;
  std::optional<Model> model;
  std::optional<PipelineResult> engine;
  std::optional<Generated> generated;
  double tLoad = 0, tEngine = 0, tCodegen = 0;
  double ms() const { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(); }
  /// --print-ir-after, --dump-dir, then the observer.
  void dump(const std::string& name, const Graph& g) {
    bool all = std::find(opts.print_ir_after.begin(), opts.print_ir_after.end(), "all") != opts.print_ir_after.end();
    if (all || std::find(opts.print_ir_after.begin(), opts.print_ir_after.end(), name) != opts.print_ir_after.end())
      std::fprintf(stderr, "// ----- IR after %s\n%s", name.c_str(), printGraph(g).c_str());
    if (!opts.dump_dir.empty()) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%02d-", dumpIndex++);
      writeFile(fs::path(opts.dump_dir) / (buf + name + ".ir"), printGraph(g));
    }
    if (observer) observer(name, g);
  }
  unsigned jobs() const { return opts.jobs ? opts.jobs : std::max(1u, std::thread::hardware_concurrency()); }
};

Compilation::Compilation(CompileOptions opts, Logger log) : s_(std::make_unique<State>()) {
  s_->opts = std::move(opts);
  s_->log = log ? std::move(log) : spdlog::default_logger();
  // A misspelled arch is refused now; whether NVRTC supports the archs when
  // code is generated (Note [Lazy NVRTC]: the earlier stages need no NVRTC).
  for (auto& a : s_->opts.archs)
    if (!archSpelling(a)) requireArch(a);
  std::vector<std::string> stages = pipelineStageNames();
  stages.insert(stages.begin(), "captured");
  for (const std::string& p : s_->opts.print_ir_after)
    if (p != "all" && std::find(stages.begin(), stages.end(), p) == stages.end()) {
      std::string known = "all";
      for (const std::string& st : stages) known += ", " + st;
      throw UserError(SourceLoc{}, "--print-ir-after: unknown pass '" + p + "' (known: " + known + ")");
    }
}

Compilation::Compilation(CompileOptions opts, Logger log, Model model) : Compilation(std::move(opts), std::move(log)) {
  s_->model = std::move(model);
}

Compilation::~Compilation() = default;

const CompileOptions& Compilation::options() const { return s_->opts; }

void Compilation::observe(std::function<void(const std::string&, const Graph&)> f) { s_->observer = std::move(f); }

PipelineOptions Compilation::pipelineOptions() const {
  const CompileOptions& opts = s_->opts;
  PipelineOptions po;
  po.partitioner = opts.partitioner;
  po.precision = opts.precision;
  po.channels_last = opts.conv_layout == ConvLayout::Auto;
  if (opts.loss_scaling == LossScalingMode::Dynamic || (opts.loss_scaling == LossScalingMode::Auto && opts.precision == Precision::Fp16))
    po.loss_scaling = LossScaling{};
  po.optimizer = opts.optimizer;
  po.jobs = s_->jobs();
  return po;
}

const Model& Compilation::model() {
  State& st = *s_;
  if (!st.model) {
    st.model = loadModel(st.opts.model, st.opts.frontend);
    st.log->info("loaded {} ({} inputs, {} nodes) in {:.1f} ms", st.opts.model, st.model->graph.inputs.size(), st.model->graph.nodes.size(),
                 st.ms());
    st.tLoad = st.ms();
  }
  return *st.model;
}

const PipelineResult& Compilation::engine() {
  State& st = *s_;
  if (st.engine) return *st.engine;
  const Model& fx = model();
  if (!st.opts.dump_dir.empty()) fs::create_directories(st.opts.dump_dir);
  st.dump("captured", fx.graph);
  PipelineOptions po = pipelineOptions();
  if (!st.opts.print_ir_after.empty() || !st.opts.dump_dir.empty() || st.observer)
    po.after_pass = [&st](const std::string& name, const Graph& g) { st.dump(name, g); };
  PipelineResult pr = runPipeline(fx.graph, po);
  st.log->info("engine passes done at {:.1f} ms", st.ms());
  checkStorageGroups(fx, pr, st.opts.model);
  st.engine = std::move(pr);
  st.tEngine = st.ms();
  return *st.engine;
}

const Compilation::Generated& Compilation::generated() {
  State& st = *s_;
  if (st.generated) return *st.generated;
  const PipelineResult& pr = engine();
  const Model& fx = model();
  const CompileOptions& opts = st.opts;
  if (opts.cache_dir.empty())
    for (auto& a : opts.archs) requireArch(a);
  const PipelineOptions po = pipelineOptions();
  Generated gen;
  ManifestInfo mi;
  mi.model_name = fx.graph.name;
  mi.source_file = fs::path(opts.model).filename().string();
  mi.archs = opts.archs;
  mi.flags = {{"partitioner", std::string(optionName(opts.partitioner))}, {"archs", opts.archs}};
  if (opts.sm_count > 0) mi.flags["sm_count"] = opts.sm_count;
  // Recorded only when not fp32: fp32 artifacts stay the bytes they were.
  if (opts.precision != Precision::Fp32) mi.flags["precision"] = precisionName(opts.precision);
  if (opts.conv_layout != ConvLayout::Auto) mi.flags["conv_layout"] = std::string(optionName(opts.conv_layout));
  mi.precision = precisionName(opts.precision);
  // Note [Loss scaling]: the pass adds its state only to a program with gradients.
  if (po.loss_scaling && pr.functional.inputNamed(kLossScaleInput)) {
    const LossScaling& ls = *po.loss_scaling;
    mi.flags["loss_scaling"] = std::string(optionName(LossScalingMode::Dynamic));
    mi.loss_scaling = plan::LossScalingSpec{ls.init_scale, ls.growth_factor, ls.backoff_factor, ls.growth_interval,
                                            kLossScaleInput, kGrowthTrackerInput, kFoundInfInput};
    auto scalar = [](DType d, double v) {
      HostTensor t;
      t.dtype = d;
      t.data = {v};
      return t;
    };
    gen.initial_state = {{kLossScaleInput, scalar(DType::F32, ls.init_scale)},
                              {kGrowthTrackerInput, scalar(DType::I32, 0)},
                              {kFoundInfInput, scalar(DType::F32, 0)}};
  }
  if (opts.optimizer.kind != OptimizerKind::None) {
    // Note [Optimizer step]: the hyperparameters, and the state's zeros.
    const OptimizerSpec& o = opts.optimizer;
    nlohmann::json f{{"kind", std::string(optionName(o.kind))}, {"lr", o.lr}, {"weight_decay", o.weight_decay}, {"maximize", o.maximize}};
    if (o.kind == OptimizerKind::Sgd) {
      f["momentum"] = o.momentum;
      f["dampening"] = o.dampening;
      f["nesterov"] = o.nesterov;
    } else {
      f["betas"] = {o.beta1, o.beta2};
      f["eps"] = o.eps;
      f["amsgrad"] = o.amsgrad;
    }
    if (o.keep_grads) f["keep_grads"] = true;
    if (o.accumulate > 1) f["accumulate"] = o.accumulate;
    mi.flags["optimizer"] = f;
    for (const GraphInput& gi : pr.functional.inputs) {
      const std::string& name = pr.functional.values[gi.value].name;
      if (name.rfind(kOptimizerStatePrefix, 0) != 0) continue;
      const TensorType& t = pr.functional.type(gi.value);
      HostTensor z;
      z.dtype = t.dtype;
      z.sizes = t.sizes;
      double init = 0.0;  // the state starts at zero; a learning rate at its flag's value
      if (name == kOptimizerLrInput) init = o.lr;
      if (name == kOptimizerMomentumInput) init = o.momentum;  // Note [Run-time momentum]
      if (name == kOptimizerBeta1Input) init = o.beta1;
      for (size_t i = 0; i < o.groups.size(); ++i)
        if (o.groups[i].lr && name == optimizerGroupLrInput(i + 1)) init = *o.groups[i].lr;
      if (init == 0.0 && !pr.functional.isSymbolic()) {
        mi.zero_inputs.insert(name);  // zeros at run time, not stored (an AdamW artifact's weights would triple)
        continue;
      }
      z.data.assign(static_cast<size_t>(t.numel()), init);
      gen.initial_state[name] = std::move(z);
    }
  }
  const LaunchShapeRule shapeRule = launchShapeRuleFor(opts.archs, opts.sm_count);
  mi.nvrtc_version = nvrtcVersionCached(opts.cache_dir);
  mi.input_aliases = fx.input_aliases;
  mi.output_paths = fx.output_paths;
  mi.arguments = fx.arguments;
  mi.weights = "weights.safetensors";
  if (pr.functional.isSymbolic()) {
    // Note [Dynamic codegen]: one artifact for every size the symbols allow.
    DynamicCodegen d = generateDynamic(pr, mi, kKernelsPerModule, st.jobs(), opts.wide_index);
    gen.cg = std::move(d.cg);
    gen.modules = std::move(d.modules);
    gen.manifest = std::move(d.atHint);
    gen.manifest_text = d.manifest.dump(1) + "\n";
  } else {
    CodegenOptions co;
    co.launchShape = shapeRule;
    gen.cg = generateCuda(pr.partition, co);
    if (opts.check_launch_shapes) {
      // Note [Launch shape]: refused, naming every launch that breaks the rule.
      std::vector<std::string> problems = launchShapeProblems(gen.cg.forward, "forward", shapeRule);
      for (std::string& p : launchShapeProblems(gen.cg.backward, "backward", shapeRule)) problems.push_back(std::move(p));
      if (!problems.empty()) {
        std::string msg = std::to_string(problems.size()) + " launch(es) break the launch-shape rule (" + std::to_string(shapeRule.sms) +
                          " SMs; Note [Launch shape]):";
        for (const std::string& p : problems) msg += "\n  " + p;
        throw UserError(SourceLoc{opts.model, "", ""}, msg);
      }
    }
    gen.modules = groupKernels(gen.cg.kernels, kKernelsPerModule);
    gen.manifest = buildManifest(pr.functional, pr.partition, gen.cg, gen.modules, mi);
    gen.manifest_text = plan::toJson(gen.manifest).dump(1) + "\n";
    // Note [Typed plan]: what is written reads back as the same plan.
    // A manifest its own reader refuses is the code generator's fault, never
    // the model's: reported as an internal error (exit 3), not as bad input.
    plan::Manifest back;
    try {
      back = plan::manifestFromJson(nlohmann::json::parse(gen.manifest_text), "manifest.json", kMaxElements);
    } catch (const UserError& e) {
      internalError(__FILE__, __LINE__, "the code generator wrote a manifest its own reader refuses: " + e.diagnostics().front().str());
    }
    AOTC_CHECK(nlohmann::json(back.flags) == nlohmann::json(gen.manifest.flags) &&
                   nlohmann::json(back.arguments) == nlohmann::json(gen.manifest.arguments),
               "the manifest's free-form fields do not read back");
    back.flags = gen.manifest.flags;
    back.arguments = gen.manifest.arguments;
    AOTC_CHECK(back == gen.manifest, "the manifest does not read back as the plan that was written");
  }
  st.generated = std::move(gen);
  st.tCodegen = st.ms();
  return *st.generated;
}

CompileSummary Compilation::write() {
  State& st = *s_;
  const Generated& gen = generated();
  const PipelineResult& pr = engine();
  const Model& fx = model();
  const CompileOptions& opts = st.opts;
  const Logger& log = st.log;
  const CodegenResult& cg = gen.cg;
  const std::vector<KernelModule>& modules = gen.modules;
  const plan::Manifest& manifest = gen.manifest;
  const std::string& manifestText = gen.manifest_text;
  const std::map<std::string, HostTensor>& lossScalingState = gen.initial_state;
  const double tLoad = st.tLoad, tEngine = st.tEngine, tCodegen = st.tCodegen;
  auto ms = [&] { return st.ms(); };
  const unsigned jobs = st.jobs();
  StagingDir stage(opts.out_dir);
  fs::create_directories(stage.path() / "kernels");
  writeFile(stage.path() / "kernels" / "aotc_prelude.cuh", devicePrelude());
  for (auto& [name, k] : cg.kernels) writeFile(stage.path() / "kernels" / (name + ".cu"), k.source);
  KernelCacheStats cstats;
  double tNvrtc0 = ms();
  auto compiled = compileModules(modules, cg.kernels, opts.archs, jobs, opts.cache_dir, &cstats);
  double tNvrtc = ms() - tNvrtc0;
  for (size_t m = 0; m < modules.size(); ++m)
    for (size_t a = 0; a < opts.archs.size(); ++a) {
      writeFile(stage.path() / "kernels" / (modules[m].name + "." + opts.archs[a] + ".ptx"), compiled[m][a].ptx);
      if (!ptxOnlyArch(opts.archs[a]))
        writeFile(stage.path() / "kernels" / (modules[m].name + "." + opts.archs[a] + ".cubin"), compiled[m][a].cubin);
    }
  log->info("NVRTC compiled {} kernels for {} archs at {:.1f} ms", cg.kernels.size(), opts.archs.size(), ms());
  writeFile(stage.path() / "forward.ir", printGraph(pr.partition.forward));
  writeFile(stage.path() / "backward.ir", printGraph(pr.partition.backward));
  writeFile(stage.path() / "joint.ir", printGraph(pr.joint));
  // Note [Artifact weights]: the artifact carries the initial value of every
  // parameter, buffer and constant it takes, so a deployment needs only the
  // directory; the caller may override any of them.
  {
    std::map<std::string, std::string> initial;  // input name -> its name in the model's weights
    const bool takesState = std::any_of(manifest.inputs.begin(), manifest.inputs.end(),
                                        [](const plan::InputSpec& in) { return in.role != "user_input"; });
    if (takesState && !fx.weights_path.empty()) {
      const std::map<std::string, TensorInfo> held = readSafetensorsHeader(fx.weights_path);
      for (const plan::InputSpec& in : manifest.inputs) {
        if (in.role == "user_input" || fx.weights.count(in.name)) continue;
        std::vector<std::string> names{in.name};
        names.insert(names.end(), in.aliases.begin(), in.aliases.end());
        for (const std::string& n : names)
          if (held.count(n) && !initial.count(in.name)) initial[in.name] = n;
      }
    }
    // In-memory initial values: ONNX initializers and constants, a .pt2's
    // weights, the front ends' constant tables (Note [Constant tables]).
    std::map<std::string, HostTensor> extra = lossScalingState;
    for (const plan::InputSpec& in : manifest.inputs)
      if (in.role != "user_input" && fx.weights.count(in.name)) extra[in.name] = fx.weights.at(in.name);
    if (initial.empty()) writeSafetensors((stage.path() / "weights.safetensors").string(), extra);
    else copySafetensors(fx.weights_path, (stage.path() / "weights.safetensors").string(), initial, extra);
  }
  writeFile(stage.path() / "manifest.json", manifestText);
  if (!opts.dump_dir.empty()) writeFile(fs::path(opts.dump_dir) / "manifest.json", manifestText);
  stage.commit();

  CompileSummary s;
  s.model_name = fx.graph.name;
  s.load_ms = tLoad;
  s.engine_ms = tEngine - tLoad;
  s.codegen_ms = tCodegen - tEngine;
  s.nvrtc_wall_ms = tNvrtc;
  s.nvrtc_cpu_ms = cstats.nvrtc_ms;
  s.cache_hits = cstats.hits;
  s.cache_misses = cstats.misses;
  s.module_hits = cstats.module_hits;
  s.module_misses = cstats.module_misses;
  s.nvrtc_programs = cstats.nvrtc_programs;
  s.link_cpu_ms = cstats.link_ms;
  s.modules = modules.size();
  for (auto& gi : pr.functional.inputs) {
    ++s.inputs;
    s.parameters += gi.role == InputRole::Parameter;
    s.buffers += gi.role == InputRole::Buffer;
    s.user_inputs += gi.role == InputRole::UserInput;
  }
  for (const plan::InputSpec& in : manifest.inputs)
    if (in.mutation != plan::Mutation::None) s.mutated.push_back(in.name + " (" + plan::mutationName(in.mutation) + ")");
  s.forward_nodes = pr.partition.forward.nodes.size();
  s.backward_nodes = pr.partition.backward.nodes.size();
  s.kernels = cg.kernels.size();
  s.forward_steps = manifest.forward.steps.size();
  s.backward_steps = manifest.backward.steps.size();
  s.saved = pr.partition.saved.size();
  for (ValueId v : pr.partition.forward.valuesNamed(pr.partition.saved)) s.saved_bytes += bytesOf(pr.partition.forward.type(v));
  s.total_ms = ms();
  s.write_ms = s.total_ms - tCodegen - tNvrtc;
  log->info("wrote {} in {:.1f} ms", opts.out_dir, ms());
  return s;
}

CompileSummary compileModel(const CompileOptions& opts, const Logger& log) { return Compilation(opts, log).write(); }

/// The exporter's record of one argument (schemas/fx_graph.schema.json
/// #/$defs/argument) as text: `{a: <opts.a>, b: None}`.
template <typename J>
std::string argumentText(const J& a) {
  if (a.contains("input")) return "<" + a["input"].template get<std::string>() + ">";
  if (a.contains("value")) return a["value"].dump();
  std::string open = a.contains("dict") ? "{" : a.contains("list") ? "[" : "(", s = open;
  const J& items = a.contains("dict") ? a["dict"] : a.contains("list") ? a["list"] : a["tuple"];
  size_t i = 0;
  for (auto it = items.begin(); it != items.end(); ++it, ++i)
    s += (i ? ", " : "") + (a.contains("dict") ? it.key() + ": " : std::string()) + argumentText(*it);
  return s + (open == "{" ? "}" : open == "[" ? "]" : ")");
}

/// The arguments that were specialized into the graph (those holding a
/// non-tensor value), one line each.
template <typename J>
std::string specializedArguments(const J& args) {
  std::string s;
  try {
    for (auto& a : args)
      if (a.at("value").dump().find("\"value\"") != std::string::npos)
        s += "  argument " + a.at("name").template get<std::string>() + " = " + argumentText(a["value"]) + " (specialized)\n";
  } catch (const nlohmann::json::exception&) {
    return "  arguments: (not in the exporter's form)\n";  // informational only; the compile never reads them
  }
  return s;
}

std::string inspect(const std::string& path, const CompileOptions& base) {
  std::ostringstream os;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (!fs::exists(fs::path(path) / "manifest.json", ec)) throw UserError(SourceLoc{path, "", ""}, "not an aotc artifact (no manifest.json)");
    const plan::Manifest m = loadManifest(path);
    os << "artifact " << path << " (manifest v" << (m.symbolic ? plan::kSymbolicManifestVersion : plan::kManifestVersion) << ", model "
       << m.model_name << ", aotc " << m.compiler_version << ")\n";
    auto dims = [](const Ints& v) { return nlohmann::json(v).dump(); };
    // A dynamic-shape artifact (Note [Symbolic manifest]): its symbols and
    // guards, and its inputs' and outputs' dims as expressions.
    auto symDims = [&](const char* list, size_t i, const Ints& fallback) {
      if (!m.symbolic) return dims(fallback);
      std::string r = "[";
      const nlohmann::ordered_json& sh = m.symbolic->templ.at(list).at(i).at("shape");
      for (size_t d = 0; d < sh.size(); ++d) r += (d ? "," : "") + (sh[d].is_object() ? sh[d]["sym"].get<std::string>() : sh[d].dump());
      return r + "]";
    };
    if (m.symbolic) {
      os << "  symbols:";
      for (const SymbolDecl& d : m.symbolic->symbols) os << " " << d.name << " in [" << d.min << ", " << d.max << "] (hint " << d.hint << ")";
      os << "\n";
      for (const SizeGuard& g : m.symbolic->guards)
        os << "  guard: " << g.expr.str() << " % " << g.divisor << " == 0" << (g.where.empty() ? "" : " (needed by " + g.where + ")") << "\n";
      for (const auto& [e, why] : m.symbolic->nonzero) os << "  guard: " << e.str() << " != 0" << (why.empty() ? "" : " (" + why + ")") << "\n";
      for (const plan::SymbolicManifest::Limit& l : m.symbolic->limits)
        os << "  limit: " << l.expr.str() << " <= " << l.at_most << (l.where.empty() ? "" : " (32-bit indices of " + l.where + ")") << "\n";
      os << "  (sizes below are at the hints; a runtime plans the arenas for the sizes it binds)\n";
    }
    os << "  inputs:\n";
    for (size_t i = 0; i < m.inputs.size(); ++i) {
      const plan::InputSpec& in = m.inputs[i];
      os << "    " << in.name << " " << in.role << " " << dtypeName(in.layout.dtype) << symDims("inputs", i, in.layout.shape)
         << (in.requires_grad ? " requires_grad" : "")
         << (in.mutation != plan::Mutation::None ? std::string(" mutated:") + plan::mutationName(in.mutation) : "")
         << (in.aliases.empty() ? "" : " aliases:" + nlohmann::json(in.aliases).dump()) << (in.zero_init ? " starts:zeros" : "") << "\n";
    }
    os << "  outputs: " << m.outputs.size() << ", grads: " << m.grads.size() << "\n";
    for (size_t i = 0; i < m.outputs.size(); ++i) {
      const plan::OutputSpec& o = m.outputs[i];
      os << "    output." << o.index << (!o.path || o.path->empty() ? "" : " '" + *o.path + "'") << " " << dtypeName(o.dtype)
         << symDims("outputs", i, o.shape) << (o.alias ? " (aliases an input)" : "") << "\n";
    }
    if (!m.arguments.is_null() && !m.arguments.empty()) os << specializedArguments(m.arguments);
    int64_t savedBytes = 0;
    for (const plan::SavedSpec& s : m.saved) savedBytes += s.layout.numel() * dtypeSize(s.layout.dtype);
    os << "  saved for backward: " << m.saved.size() << " tensors, " << savedBytes << " bytes\n";
    os << "  forward steps: " << m.forward.steps.size() << ", backward steps: " << m.backward.steps.size() << ", kernels: " << m.kernels.size()
       << "\n";
    for (const plan::Program* prog : {&m.forward, &m.backward})
      os << "  " << (prog == &m.forward ? "forward" : "backward") << " arena: " << prog->arena_bytes << " bytes for " << prog->alloc_bytes_unplanned
         << " bytes of intermediates (buffers reuse memory when their lifetimes do not overlap; each starts 256-byte aligned)\n";
    if (!m.weights.empty()) os << "  initial tensors: " << m.weights << "\n";
    if (m.flags.contains("optimizer") && m.flags["optimizer"].is_object()) {
      // Note [Optimizer step]: the hyperparameters compiled in; the state and
      // learning rates are the optim.* inputs above.
      const auto& f = m.flags["optimizer"];
      os << "  optimizer: " << f.value("kind", std::string("?"));
      for (auto it = f.begin(); it != f.end(); ++it)
        if (it.key() != "kind") os << " " << it.key() << "=" << it.value().dump();
      os << " (the state and learning rates are the optim.* inputs; after_backward.optim.* after a step)\n";
    }
    if (m.loss_scaling)
      os << "  loss scaling: dynamic, as GradScaler (scale " << m.loss_scaling->init_scale << " at first, x" << m.loss_scaling->growth_factor
         << " after " << m.loss_scaling->growth_interval << " clean steps, x" << m.loss_scaling->backoff_factor
         << " after an overflow); state " << m.loss_scaling->scale << ", " << m.loss_scaling->growth_tracker << ", "
         << m.loss_scaling->found_inf << "\n";
    return os.str();
  }
  // Note [One Compilation]: the model as compile loads it, its programs as
  // compile (with the same flags) partitions them, under each partitioner.
  CompileOptions opts = base;
  opts.model = path;
  const Logger quiet = std::make_shared<spdlog::logger>("aotc-inspect", std::make_shared<spdlog::sinks::null_sink_mt>());
  Compilation loaded(opts, quiet);
  const Model& fx = loaded.model();
  // Count the model's nodes (one FX node may lower to several IR nodes).
  std::map<std::string, int> ops;
  std::set<std::pair<std::string, std::string>> seen;
  for (auto& n : fx.graph.nodes)
    if (seen.insert({n.loc.node, n.loc.op}).second) ops[n.loc.op]++;
  os << "model " << fx.graph.name << " (" << path << ")\n  inputs:\n";
  for (auto& gi : fx.graph.inputs) {
    const std::string& name = fx.graph.values[gi.value].name;
    os << "    " << name << " " << inputRoleName(gi.role) << " " << fx.graph.type(gi.value).str()
       << (gi.requires_grad ? " requires_grad" : "");
    if (auto a = fx.input_aliases.find(name); a != fx.input_aliases.end())
      for (auto& n : a->second) os << " alias:" << n;
    os << "\n";
  }
  os << "  outputs:\n";
  for (size_t i = 0; i < fx.graph.outputs.size(); ++i)
    os << "    output." << i << (i < fx.output_paths.size() && !fx.output_paths[i].empty() ? " '" + fx.output_paths[i] + "'" : "") << " "
       << fx.graph.type(fx.graph.outputs[i].value).str() << "\n";
  os << specializedArguments(fx.arguments);
  os << "  ops by count:\n";
  for (auto& [op, n] : ops) os << "    " << n << " " << op << "\n";
  int64_t params = 0, paramBytes = 0;
  for (auto& gi : fx.graph.inputs)
    if (gi.role == InputRole::Parameter) {
      ++params;
      paramBytes += bytesOf(fx.graph.type(gi.value));
    }
  os << "  parameters: " << params << " tensors, " << paramBytes << " bytes\n";
  // The engine's view: what the compiled programs mutate and save.
  std::string savedLines;
  for (Partitioner partitioner : optionValues<Partitioner>()) {
    CompileOptions o = opts;
    o.partitioner = partitioner;
    Compilation c(o, quiet, fx);
    const PipelineResult& pr = c.engine();
    if (partitioner == opts.partitioner) {  // the mutations (the same under every partitioner) as this compile places them
      std::vector<std::string> mutated;
      for (const Graph* g : {&pr.partition.forward, &pr.partition.backward})
        for (const Node& n : g->nodes)
          if (n.op == OpKind::EpilogueCopy)
            mutated.push_back(g->values[n.inputs[0]].name + (n.tags & kMustBeInForward ? " (forward)" : " (backward)"));
      os << "  mutated inputs: " << mutated.size() << (mutated.empty() ? "" : ":") << "\n";
      for (auto& m : mutated) os << "    " << m << "\n";
    }
    int64_t saved = 0;
    for (ValueId v : pr.partition.forward.valuesNamed(pr.partition.saved)) saved += bytesOf(pr.partition.forward.type(v));
    savedLines += cat("  saved for backward (", optionName(partitioner), "): ", pr.partition.saved.size(), " tensors, ", saved, " bytes\n");
  }
  os << savedLines;
  return os.str();
}

std::string inspectRoofline(const std::string& artifact, const RooflineRequest& req) {
  std::error_code ec;
  if (!fs::is_directory(artifact, ec) || !fs::exists(fs::path(artifact) / "manifest.json", ec))
    throw UserError(SourceLoc{artifact}, "--roofline reads an artifact directory (aotc compile the model first)");
  const plan::Manifest m = loadManifest(artifact);
  std::optional<plan::GpuSpec> gpu;
  if (!req.gpu.empty()) {
    gpu = plan::gpuByNameOrFile(req.gpu);
  } else {
    gpu = plan::defaultGpu(m.archs);
    if (!gpu) {
      std::string names;
      for (const plan::GpuSpec& g : plan::knownGpus()) names += (names.empty() ? "" : ", ") + g.name;
      throw UserError(SourceLoc{artifact}, "its archs (" + nlohmann::json(m.archs).dump() +
                                               ") name no default GPU (sm_90: H100 SXM, sm_89: L40S, sm_80: A100 80GB): give --gpu (one of " +
                                               names + ", or a JSON file)");
    }
  }
  const plan::Roofline r = plan::roofline(m, *gpu);
  if (req.json) return plan::toJson(r, req.largest).dump(1) + "\n";
  return "artifact " + artifact + " (model " + m.model_name + ", precision " + m.precision + ")\n" + plan::roofText(r, req.largest, req.every_step);
}

void runAndWrite(const std::string& artifact, const RunOptions& opts, const std::string& out_file, const Logger& log) {
  auto res = runArtifact(artifact, opts);
  writeSafetensors(out_file, res);
  // Note [Loss scaling]: whether the step overflowed, and the scale the next
  // step starts from (pass the after_backward.aotc.* results back as inputs).
  if (!opts.forward_only && opts.note) {
    const plan::Manifest m = plan::readManifest(artifact, kMaxRunElements);
    if (m.loss_scaling) {
      auto at = [&](const std::string& name) {
        auto it = res.find("after_backward." + name);
        return it == res.end() || it->second.data.empty() ? std::nan("") : it->second.data[0];
      };
      const double found = at(m.loss_scaling->found_inf), scale = at(m.loss_scaling->scale);
      const double tracker = at(m.loss_scaling->growth_tracker);
      // Note [Loss scaling with an optimizer]: the artifact's optimizer skips the step itself.
      const bool optimizer = m.flags.contains("optimizer");
      opts.note(found > 0 ? cat("loss scaling: the gradients overflowed (inf or NaN; ", m.loss_scaling->found_inf, " = 1): ",
                                optimizer ? "the optimizer step was skipped" : "skip this optimizer step",
                                ", as GradScaler does; the scale backs off to ", scale)
                          : cat("loss scaling: no overflow; ", optimizer ? "" : "the gradients are unscaled; ",
                                "the next step's scale is ", scale, " (", tracker, " of ", m.loss_scaling->growth_interval,
                                " clean steps before it grows)"));
    }
  }
  log->info("wrote {} tensors to {}", res.size(), out_file);
}

}  // namespace aotc
