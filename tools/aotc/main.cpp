//===- main.cpp - The aotc command line: CLI11 -> driver -------------------===//
#include <CLI/CLI.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "aotc/driver/driver.h"
#include "aotc/driver/picture.h"
#include "aotc/driver/reduce.h"
#include "aotc/plan/plan.h"
#include "aotc/runtime/device.h"

namespace {

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> v;
  size_t b = 0;
  while (b <= s.size()) {
    size_t e = s.find(',', b);
    if (e == std::string::npos) e = s.size();
    if (e > b) v.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return v;
}

/// $XDG_CACHE_HOME/aotc/<what>, else ~/.cache/aotc/<what>, else none.
/// NAME=VALUE of --shape / --dim.
std::pair<std::string, std::string> keyValue(const std::string& spec, const char* flag) {
  auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    throw aotc::UserError(aotc::SourceLoc{}, std::string(flag) + " " + spec + ": expected NAME=VALUE");
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

/// 2x3x224x224 -> {2, 3, 224, 224}; each size 0 to 2^48.
aotc::Ints parseDims(const std::string& s, const std::string& what) {
  aotc::Ints r;
  size_t at = 0;
  while (true) {
    size_t x = s.find('x', at);
    std::string part = s.substr(at, x == std::string::npos ? std::string::npos : x - at);
    bool digits = !part.empty() && part.size() <= 15 && std::all_of(part.begin(), part.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    if (!digits || std::stoll(part) > aotc::kMaxExtent) throw aotc::UserError(aotc::SourceLoc{}, what + ": sizes must be non-negative integers separated by 'x'");
    r.push_back(std::stoll(part));
    if (x == std::string::npos) break;
    at = x + 1;
  }
  return r;
}

std::string userCacheDir(const char* what) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (xdg && *xdg) return std::string(xdg) + "/aotc/" + what;
  if (home && *home) return std::string(home) + "/.cache/aotc/" + what;
  return "";
}

/// A progress line on stderr (a terminal) while `aotc run` works: what it is
/// doing, how far, and the seconds so far, redrawn by a ticker thread; shown
/// only after half a second, cleared when done.
class TerminalProgress {
 public:
  TerminalProgress() : t0_(std::chrono::steady_clock::now()), ticker_([this] { loop(); }) {}
  ~TerminalProgress() { stop(); }
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;

  void update(const std::string& what, size_t done, size_t total) {
    std::lock_guard lock(mu_);
    what_ = what;
    done_ = done;
    total_ = total;
  }
  void stop() {
    {
      std::lock_guard lock(mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    cv_.notify_all();
    ticker_.join();
    if (drawn_) std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }

 private:
  void loop() {
    std::unique_lock lock(mu_);
    while (!stopped_) {
      cv_.wait_for(lock, std::chrono::milliseconds(200));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
      if (stopped_ || what_.empty() || s < 0.5) continue;
      std::string count = total_ ? " " + std::to_string(done_) + "/" + std::to_string(total_) : "";
      std::fprintf(stderr, "\r\033[K[%s]%s  %.1f s", what_.c_str(), count.c_str(), s);
      std::fflush(stderr);
      drawn_ = true;
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::string what_;
  size_t done_ = 0, total_ = 0;
  bool stopped_ = false, drawn_ = false;
  std::chrono::steady_clock::time_point t0_;
  std::thread ticker_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"aotc: ahead-of-time autograd compiler for deep-learning graphs"};
  app.set_version_flag("--version", std::string("aotc ") + aotc::plan::kCompilerVersion);
  app.require_subcommand(1);
  int verbose = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose, "more logging (-vv for debug)");
  app.add_flag("-q,--quiet", quiet, "errors only");
  // -v/-q are accepted after the subcommand too (`aotc compile m.json -q`):
  // subcommands created below inherit this and pass them up.
  app.fallthrough();

  aotc::CompileOptions copts;
  std::string arch = "sm_80,sm_90", printAfter, cacheDir, precision = "fp32";
  bool noCache = false, timings = false;
  std::vector<std::string> frozenList, shapeSpecs, dimSpecs;
  // The compile flags, shared by compile and batch.
  std::string partitioner = std::string(aotc::optionName(copts.partitioner)), lossScaling = std::string(aotc::optionName(copts.loss_scaling)),
              convLayout = std::string(aotc::optionName(copts.conv_layout));
  std::string optimizerName = "none";
  std::optional<double> optLr, optMomentum, optDampening, optWeightDecay, optEps;
  std::vector<double> optBetas;
  std::optional<double> optClip;
  std::optional<int64_t> optAccumulate;
  std::vector<std::string> optGroups;
  bool optNesterov = false, optAmsgrad = false, optMaximize = false, optKeepGrads = false;
  // Note [One Compilation]: the flags that decide the programs, shared by
  // compile, batch, graph and inspect (a picture or report of a model is of
  // what compile writes with the same flags).  Choices from Note [Option names].
  auto programFlags = [&](CLI::App* c) {
    c->add_option("--precision", precision,
                  "fp32 (as written), tf32 (float32 GEMMs and convolutions on TF32 tensor cores), bf16 or fp16 (the graph as "
                  "torch.autocast(\"cuda\", dtype) runs it; parameters and their gradients stay float32)")
        ->capture_default_str()
        ->check(CLI::IsMember(aotc::optionNames<aotc::Precision>()));
    c->add_option("--loss-scaling", lossScaling,
                  "dynamic loss scaling as torch.cuda.amp.GradScaler does it, on the device (scale 2^16, x2 after 2000 clean steps, "
                  "x0.5 after an overflow; the state is the inputs aotc.loss_scale, aotc.growth_tracker, aotc.found_inf): auto "
                  "(for --precision fp16 training), dynamic or none")
        ->capture_default_str()
        ->check(CLI::IsMember(aotc::optionNames<aotc::LossScalingMode>()));
    c->add_option("--conv-layout", convLayout,
                  "auto (float16/bfloat16 convolutions and the pointwise values between them stored channels-last, NHWC, as "
                  "cuDNN's tensor cores take them; Note [Channels last]) or nchw (every tensor as PyTorch lays it out)")
        ->capture_default_str()
        ->check(CLI::IsMember(aotc::optionNames<aotc::ConvLayout>()));
    c->add_option("--partitioner", partitioner, "min-cut (recompute cheap ops in the backward) or default (save what the backward reads)")
        ->capture_default_str()
        ->check(CLI::IsMember(aotc::optionNames<aotc::Partitioner>()));
    c->add_flag("--train", copts.frontend.train,
                "ONNX and .pt2: a training artifact (ONNX: floating-point initializers not frozen require grad; .pt2: "
                "parameters that require grad)");
    c->add_option("--model", copts.frontend.model, ".pt2: which program of an archive that holds several");
    c->add_option("--frozen", frozenList, "ONNX --train: initializers that stay constant (comma list)")->delimiter(',');
    c->add_option("--shape", shapeSpecs, "ONNX: an input's shape, INPUT=2x3x224x224 (repeatable)");
    c->add_option("--dim", dimSpecs, "ONNX: a symbolic dim's size, PARAM=8 (repeatable)");
    c->add_option("--constant-inputs", copts.frontend.constant_inputs,
                  "ONNX: safetensors with values of graph inputs needed when compiling (shapes, axes, K); they leave the artifact's inputs");
  };
  // Note [Optimizer step]: the optimizer in the artifact, torch.optim's
  // hyperparameters and defaults (AdamW's weight decay 1e-2).
  auto optimizerFlags = [&](CLI::App* c) {
    c->add_option("--optimizer", optimizerName,
                  "the training step's optimizer, as torch.optim's single-tensor formula, in the backward epilogue: none, sgd, adam or "
                  "adamw (parameters and optimizer state updated in the artifact; state inputs optim.<param>.<state>)")
        ->capture_default_str()
        ->check(CLI::IsMember(aotc::optionNames<aotc::OptimizerKind>()));
    c->add_option("--lr", optLr, "--optimizer: learning rate (default 1e-3)");
    c->add_option("--momentum", optMomentum, "--optimizer sgd: momentum (default 0)");
    c->add_option("--dampening", optDampening, "--optimizer sgd: dampening (default 0)");
    c->add_flag("--nesterov", optNesterov, "--optimizer sgd: Nesterov momentum");
    c->add_option("--weight-decay", optWeightDecay, "--optimizer: weight decay (default 0; adamw 1e-2)");
    c->add_option("--betas", optBetas, "--optimizer adam/adamw: B1,B2 (default 0.9,0.999)")->delimiter(',')->expected(2);
    c->add_option("--eps", optEps, "--optimizer adam/adamw: epsilon (default 1e-8)");
    c->add_flag("--amsgrad", optAmsgrad, "--optimizer adam/adamw: the AMSGrad variant");
    c->add_flag("--maximize", optMaximize, "--optimizer: maximize the objective");
    c->add_flag("--keep-grads", optKeepGrads, "--optimizer: the gradients stay results (grad.<name>)");
    c->add_option("--grad-clip-norm", optClip, "--optimizer: clip_grad_norm_ to this total 2-norm before the step");
    c->add_option("--accumulate", optAccumulate,
                  "--optimizer: accumulate the gradients of N micro-batches ((loss / N).backward() each) and update every N-th "
                  "training step (default 1)");
    c->add_option("--param-group", optGroups,
                  "--optimizer: a parameter group, PATTERN[|PATTERN...]:lr=X,weight_decay=Y (name globs; the first group a "
                  "parameter matches sets its lr and weight decay; repeatable)");
  };
  // The flags of the artifact's build, compile and batch only.
  auto compileFlags = [&](CLI::App* c) {
    c->add_option("--arch", arch, "comma-separated GPU architectures: sm_<n> (PTX and cubin) or compute_<n> (PTX only, JIT-compiled by the driver)")->capture_default_str();
    programFlags(c);
    optimizerFlags(c);
    c->add_option("--dump-dir", copts.dump_dir, "write the IR after every pass and the manifest here (batch: DIR/<model>)");
    c->add_option("--cache-dir", cacheDir, "kernel cache directory (default: $XDG_CACHE_HOME/aotc/kernels)");
    c->add_flag("--no-cache", noCache, "compile every kernel; neither read nor write the cache");
    c->add_flag("--timings", timings, "print stage timings and kernel cache hits/misses");
    c->add_option("--print-ir-after", printAfter, "print the IR after these passes (comma list, or all) to stderr");
    c->add_option("--sm-count", copts.sm_count,
                  "SMs the kernels' launches are shaped for (default: the largest part of the archs, e.g. 132 for sm_90's H100 SXM)")
        ->check(CLI::Range(1, 100000));
    c->add_flag("--check-launch-shapes", copts.check_launch_shapes,
                "refuse the artifact if a launch touching over 1 MiB has fewer blocks with work than the SMs or a thread "
                "looping over more than 1024 elements (static shapes)");
    c->add_flag("--wide-index", copts.wide_index,
                "dynamic shapes: 64-bit indices in every kernel, for sizes where a tensor spans 2^31 elements or more "
                "(default: 32-bit when the hints fit, sizes beyond refused at run time)");
  };
  auto* compile = app.add_subcommand("compile", "compile a model (FX JSON, ONNX or a torch.export .pt2) into an artifact directory");
  compile->add_option("model", copts.model, "model file (.json from tools/fx_export.py, .onnx, or .pt2 from torch.export.save)")->required();
  compile->add_option("-o,--output", copts.out_dir, "artifact directory to write")->required();
  compile->add_option("-j,--jobs", copts.jobs, "NVRTC threads (default: one per core)")->check(CLI::Range(1, 4096));
  std::string reproDir;
  compile->add_option("--repro-dir", reproDir,
                      "on an internal error, write the model (an FX JSON's weights too) and the command line here, a "
                      "directory that must not exist (Note [Reduce])");
  compileFlags(compile);

  aotc::BatchOptions bopts;
  std::string shard;
  auto* batch = app.add_subcommand("batch", "compile a model zoo, one artifact each, in parallel, going on past failures");
  batch->add_option("models", bopts.models, "model files (FX JSON, ONNX), directories (searched recursively) and @LIST files (one path per line)")
      ->required();
  batch->add_option("-o,--output", bopts.out_root, "directory for the artifacts (one per model, named after the file)")->required();
  batch->add_option("-j,--jobs", bopts.jobs, "threads in all: models compiled at once (default: one per core)")->check(CLI::Range(1, 4096));
  batch->add_option("--report", bopts.report, "write a JSON report (status, stage times, kernels, cache hits, artifact bytes, errors per model)");
  batch->add_option("--junit", bopts.junit, "write JUnit XML, one test case per model");
  batch->add_option("--shard", shard, "I/N: compile the I-th of N deterministic shards (1 <= I <= N)");
  compileFlags(batch);

  aotc::GraphRequest greq;
  std::string graphOut;
  auto* graph = app.add_subcommand("graph", "draw a model's or an artifact's programs (DOT, SVG, self-contained HTML) or print a stage's IR");
  graph->add_option("model", greq.path, "model file (FX JSON or ONNX) or artifact directory")->required();
  graph->add_option("--stage", greq.stage,
                    "program (forward and backward, with kernels), forward, backward, captured, functionalize, autodiff, "
                    "functionalize-joint, ... (an artifact: program, forward, backward, joint)")
      ->capture_default_str();
  graph->add_option("--format", greq.format, "dot, svg, html (one file: pan, zoom, search, click for details) or ir")
      ->capture_default_str()
      ->check(CLI::IsMember({"dot", "svg", "html", "ir"}));
  graph->add_option("--view", greq.view, "node (every node), kernel (one box per kernel or library call), auto (kernel above " +
                                             std::to_string(aotc::kAutoKernelView) + " nodes)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "node", "kernel"}));
  programFlags(graph);
  graph->add_option("-o,--output", graphOut, "file to write (default: standard output)");

  std::string inspectPath;
  auto* insp = app.add_subcommand("inspect", "summarize a model file or an artifact directory");
  insp->add_option("path", inspectPath, "model file or artifact directory")->required();
  bool roofline = false;
  aotc::RooflineRequest rreq;
  insp->add_flag("--roofline", roofline,
                 "an artifact's bytes, FLOPs and lower bound per launch and library call, per program and per training step");
  insp->add_option("--gpu", rreq.gpu, "with --roofline: h100-sxm, h100-pcie, h200, a100-40gb, a100-80gb, l4, l40s, rtx-4090 or a JSON file "
                                      "(default: from the artifact's arch)");
  insp->add_flag("--json", rreq.json, "with --roofline: JSON (every step, the largest bounds, the totals)");
  insp->add_flag("--all-steps", rreq.every_step, "with --roofline: list every step in the text report");
  programFlags(insp);

  std::string artifact, outFile;
  aotc::RunOptions ropts;
  auto* run = app.add_subcommand("run", "run an artifact: forward, epilogue copies, backward (--backend reference, emulate or cuda)");
  run->add_option("artifact", artifact, "artifact directory")->required();
  run->add_option("--inputs", ropts.input_files, "safetensors with inputs by name (repeatable)")->required();
  run->add_option("--grad-outputs", ropts.grad_outputs_file,
                  "safetensors with grad_output.<i>; a missing one counts as zeros (named on stderr), except that with none given "
                  "a program whose one differentiable output is a scalar gets 1, as loss.backward() does");
  run->add_flag("--forward-only", ropts.forward_only, "skip the backward");
  run->add_option("--backend", ropts.backend,
                   "reference (IR interpreter), emulate (the generated kernels, host-compiled), cuda (GPU 0) or cuda:<n> (GPU n)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& v) {
            return v == "reference" || v == "emulate" || aotc::cudaOrdinal(v) >= 0 ? std::string() : "not one of reference, emulate, cuda, cuda:<n>";
          },
          "BACKEND"));
  run->add_flag("--create-graph", ropts.create_graph, "refuse artifacts a higher-order backward cannot run through");
  run->add_option("--steps", ropts.steps,
                  "K training steps on the same inputs, each from the last one's mutated inputs (parameters and optimizer state "
                  "under --optimizer); prints each step's scalar outputs (the loss); --out holds the last step's results")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  run->add_option("--out", outFile, "results (safetensors)")->required();
  run->add_option("--trace", ropts.trace_file,
                  "emulate or cuda: also write every step's buffers after it ran (<phase>.<step>.<buffer>, safetensors; the "
                  "device synchronizes after each step, graphs off); scripts/compare_traces.py names the first step where "
                  "two devices' traces part");
  std::string runCacheDir;
  run->add_option("--cache-dir", runCacheDir, "where --backend emulate keeps host-compiled kernels (default: $XDG_CACHE_HOME/aotc/emulate)");

  // Note [Reduce]: aotc reduce.
  aotc::ReduceOptions redo;
  std::string mismatch;
  auto* reduce = app.add_subcommand("reduce", "shrink a model that fails a check (a crash, a backend mismatch, a wrong output, a "
                                             "command) to a minimal repro directory, by delta debugging over its nodes");
  reduce->add_option("model", redo.model, "model file (FX JSON, .pt2 or .onnx; an ONNX repro is an .onnx model)")->required();
  reduce->add_option("-o,--output", redo.out_dir, "repro directory to write (must not exist)")->required();
  reduce->add_option("--inputs", redo.inputs, "safetensors with the user inputs by name (default: drawn from a fixed seed)");
  reduce->add_option("--check", redo.check_cmd, "a shell command that exits 0 while the failure shows; {} is the candidate's model file");
  reduce->add_flag("--crash", redo.crash, "the failure: aotc compile exits with an internal error (3) or dies of a signal");
  reduce->add_option("--error-contains", redo.error_contains, "with --crash: and its output holds this text");
  reduce->add_option("--mismatch", mismatch, "the failure: results on backends A,B (e.g. reference,emulate) differ");
  auto* expectedOpt = reduce->add_option("--expected", redo.expected, "the failure: outputs differ from this safetensors file's output.<i>");
  reduce->add_option("--backend", redo.backend, "with --expected: the backend to run")->capture_default_str()->needs(expectedOpt);
  reduce->add_option("--atol", redo.atol, "absolute tolerance of --mismatch and --expected")->capture_default_str();
  reduce->add_option("--rtol", redo.rtol, "relative tolerance of --mismatch and --expected")->capture_default_str();
  reduce->add_flag("--forward-only", redo.forward_only, "run the forward only (aotc run --forward-only)");
  reduce->add_option("--compile-arg", redo.compile_args, "an argument for every aotc compile (repeatable: --compile-arg=--partitioner=default)");
  reduce->add_flag("--train", redo.frontend.train, ".pt2: parameters that require grad are trained");
  reduce->add_option("--model", redo.frontend.model, ".pt2: which program of an archive that holds several");
  reduce->add_option("--timeout", redo.timeout_s, "seconds each child process may take")->capture_default_str()->check(CLI::Range(1.0, 86400.0));

  // Exit status: 0 done, 1 bad input (one line per problem), 2 usage error,
  // 3 internal error (a bug in aotc).
  // An unknown subcommand is named as such (CLI11 would say "A subcommand is required").
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
      known = known || s->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + s->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "aotc: error: unknown subcommand '%s' (known: %s); see aotc --help\n", argv[1], names.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  auto log = spdlog::stderr_color_mt("aotc");
  log->set_pattern("aotc: %v");
  log->set_level(quiet ? spdlog::level::err : verbose >= 2 ? spdlog::level::debug : verbose ? spdlog::level::info : spdlog::level::warn);
  try {
    // The compile flags (shared by compile and batch), checked once.
    auto setCompileFlags = [&] {
      copts.archs = splitList(arch);
      copts.precision = *aotc::parseOption<aotc::Precision>(precision);
      copts.loss_scaling = *aotc::parseOption<aotc::LossScalingMode>(lossScaling);
      copts.conv_layout = *aotc::parseOption<aotc::ConvLayout>(convLayout);
      copts.partitioner = *aotc::parseOption<aotc::Partitioner>(partitioner);
      {
        aotc::OptimizerSpec& o = copts.optimizer;
        o.kind = *aotc::parseOption<aotc::OptimizerKind>(optimizerName);
        const bool sgd = o.kind == aotc::OptimizerKind::Sgd, adam = o.kind == aotc::OptimizerKind::Adam || o.kind == aotc::OptimizerKind::AdamW;
        auto only = [&](bool ok, bool given, const char* flag, const char* which) {
          if (given && !ok) throw aotc::UserError(aotc::SourceLoc{}, std::string(flag) + " goes with --optimizer " + which);
        };
        const bool any = o.kind != aotc::OptimizerKind::None;
        only(any, optLr.has_value(), "--lr", "sgd, adam or adamw");
        only(any, optWeightDecay.has_value(), "--weight-decay", "sgd, adam or adamw");
        only(any, optMaximize, "--maximize", "sgd, adam or adamw");
        only(any, optKeepGrads, "--keep-grads", "sgd, adam or adamw");
        only(sgd, optMomentum.has_value(), "--momentum", "sgd");
        only(sgd, optDampening.has_value(), "--dampening", "sgd");
        only(sgd, optNesterov, "--nesterov", "sgd");
        only(adam, !optBetas.empty(), "--betas", "adam or adamw");
        only(adam, optEps.has_value(), "--eps", "adam or adamw");
        only(adam, optAmsgrad, "--amsgrad", "adam or adamw");
        only(any, optClip.has_value(), "--grad-clip-norm", "sgd, adam or adamw");
        only(any, optAccumulate.has_value(), "--accumulate", "sgd, adam or adamw");
        o.accumulate = optAccumulate.value_or(1);
        only(any, !optGroups.empty(), "--param-group", "sgd, adam or adamw");
        o.clip_norm = optClip.value_or(0.0);
        for (const std::string& spec : optGroups) {
          aotc::OptimizerSpec::Group grp;
          const size_t colon = spec.rfind(':');
          if (colon == std::string::npos || colon == 0)
            throw aotc::UserError(aotc::SourceLoc{}, "--param-group " + spec + ": expected PATTERN[|PATTERN...]:lr=X,weight_decay=Y");
          for (size_t b = 0; b <= colon;) {
            size_t e = std::min(spec.find('|', b), colon);
            if (e > b) grp.patterns.push_back(spec.substr(b, e - b));
            b = e + 1;
          }
          std::string rest = spec.substr(colon + 1);
          for (size_t b = 0; b < rest.size();) {
            size_t e = rest.find(',', b);
            if (e == std::string::npos) e = rest.size();
            auto [key, value] = keyValue(rest.substr(b, e - b), "--param-group");
            char* end = nullptr;
            double v = std::strtod(value.c_str(), &end);
            if (value.empty() || *end) throw aotc::UserError(aotc::SourceLoc{}, "--param-group " + spec + ": '" + value + "' is not a number");
            if (key == "lr") grp.lr = v;
            else if (key == "weight_decay") grp.weight_decay = v;
            else throw aotc::UserError(aotc::SourceLoc{}, "--param-group " + spec + ": unknown setting '" + key + "' (lr, weight_decay)");
            b = e + 1;
          }
          o.groups.push_back(std::move(grp));
        }
        o.lr = optLr.value_or(1e-3);
        o.weight_decay = optWeightDecay.value_or(o.kind == aotc::OptimizerKind::AdamW ? 1e-2 : 0.0);
        o.momentum = optMomentum.value_or(0.0);
        o.dampening = optDampening.value_or(0.0);
        o.nesterov = optNesterov;
        if (!optBetas.empty()) o.beta1 = optBetas[0], o.beta2 = optBetas[1];
        o.eps = optEps.value_or(1e-8);
        o.amsgrad = optAmsgrad;
        o.maximize = optMaximize;
        o.keep_grads = optKeepGrads;
        if (std::string p = aotc::optimizerProblem(o); !p.empty()) throw aotc::UserError(aotc::SourceLoc{}, p);
      }
      copts.print_ir_after = splitList(printAfter);
      copts.frontend.frozen = frozenList;
      for (const std::string& spec : shapeSpecs) {
        auto [name, value] = keyValue(spec, "--shape");
        copts.frontend.shapes[name] = parseDims(value, "--shape " + spec);
      }
      for (const std::string& spec : dimSpecs) {
        auto [name, value] = keyValue(spec, "--dim");
        aotc::Ints d = parseDims(value, "--dim " + spec);
        if (d.size() != 1) throw aotc::UserError(aotc::SourceLoc{}, "--dim " + spec + ": give one size, PARAM=N");
        copts.frontend.dims[name] = d[0];
      }
      if (!noCache) copts.cache_dir = cacheDir.empty() ? userCacheDir("kernels") : cacheDir;
    };
    if (*compile) {
      setCompileFlags();
      // Note [Reduce]: an internal error (an exception, an abort, a
      // signal) leaves a repro behind: the compile runs in a child process.
      if (!reproDir.empty()) {
        if (std::error_code ec; std::filesystem::exists(reproDir, ec))
          throw aotc::UserError(aotc::SourceLoc{reproDir}, "--repro-dir: exists; give a directory that does not");
        return aotc::compileWithRepro(reproDir, copts.model, std::vector<std::string>(argv, argv + argc), [&]() -> int {
          try {
            auto summary = aotc::compileModel(copts, log);
            if (!quiet) std::printf("%s", summary.str().c_str());
            if (timings) std::printf("%s", summary.timings().c_str());
            std::fflush(stdout);
            return 0;
          } catch (const aotc::UserError& e) {
            for (auto& d : e.diagnostics()) std::fprintf(stderr, "aotc: %s\n", d.str().c_str());
            return 1;
          } catch (const std::exception& e) {
            std::fprintf(stderr, "aotc: internal error while processing %s: %s (please report this as a bug)\n", copts.model.c_str(), e.what());
            return 3;
          }
        });
      }
      auto summary = aotc::compileModel(copts, log);
      if (!quiet) std::printf("%s", summary.str().c_str());
      if (timings) std::printf("%s", summary.timings().c_str());
    } else if (*batch) {
      setCompileFlags();
      if (!shard.empty()) {
        unsigned i = 0, n = 0;
        char extra = 0;
        if (std::sscanf(shard.c_str(), "%u/%u%c", &i, &n, &extra) != 2 || n < 1 || i < 1 || i > n || n > 100000) {
          std::fprintf(stderr, "aotc: error: --shard %s: expected I/N with 1 <= I <= N\n", shard.c_str());
          return 2;
        }
        bopts.shard_index = i;
        bopts.shard_count = n;
      }
      bopts.base = copts;
      bopts.timings = timings;
      bopts.quiet = quiet;
      bopts.progress = !quiet && ::isatty(2);
      return aotc::batchCompile(bopts, log);
    } else if (*graph) {
      setCompileFlags();
      greq.compile = copts;
      std::string note;
      std::string text = aotc::graphOf(greq, &note);
      if (!note.empty()) log->warn("{}", note);
      if (graphOut.empty()) {
        std::fwrite(text.data(), 1, text.size(), stdout);
      } else {
        // Whole or not at all: a temporary beside the file, renamed into place.
        std::string tmp = graphOut + ".tmp-" + std::to_string(::getpid());
        std::FILE* f = std::fopen(tmp.c_str(), "wb");
        bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
        ok = f && std::fclose(f) == 0 && ok;
        if (!ok || std::rename(tmp.c_str(), graphOut.c_str()) != 0) {
          std::remove(tmp.c_str());
          throw aotc::UserError(aotc::SourceLoc{graphOut, "", ""}, "cannot write file");
        }
      }
    } else if (*insp) {
      if (!roofline && (!rreq.gpu.empty() || rreq.json || rreq.every_step))
        throw aotc::UserError(aotc::SourceLoc{inspectPath}, "--gpu, --json and --all-steps go with --roofline");
      setCompileFlags();
      const std::string text = roofline ? aotc::inspectRoofline(inspectPath, rreq) : aotc::inspect(inspectPath, copts);
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else if (*reduce) {
      if (!mismatch.empty()) redo.mismatch = splitList(mismatch);
      const aotc::ReduceResult r = aotc::reduceModel(redo, log);
      if (!quiet)
        std::printf("reduced %zu nodes to %zu (%zu output%s) in %zu checks: %s\n", r.nodes_before, r.nodes_after, r.outputs_after,
                    r.outputs_after == 1 ? "" : "s", r.checks, redo.out_dir.c_str());
    } else if (*run) {
      // The host-compiled kernels of `--backend emulate` are cached per user.
      ropts.emulate_cache_dir = runCacheDir.empty() ? userCacheDir("emulate") : runCacheDir;
      ropts.note = [](const std::string& what) { std::fprintf(stderr, "aotc: note: %s\n", what.c_str()); };
      // Long runs (a reference run of a big model, the emulator's first host
      // compile) show how far they are on a terminal.
      std::optional<TerminalProgress> progress;
      if (!quiet && ::isatty(2)) {
        progress.emplace();
        ropts.progress = [&progress](const std::string& what, size_t done, size_t total) { progress->update(what, done, total); };
      }
      if (ropts.steps > 1)
        ropts.on_step = [&progress](int64_t k, const std::map<std::string, aotc::HostTensor>& res) {
          if (progress) progress->stop();
          std::string line = "step " + std::to_string(k + 1) + ":";
          for (const auto& [name, t] : res)  // the scalar results: the loss
            if (name.rfind("output.", 0) == 0 && t.data.size() == 1) {
              char buf[64];
              std::snprintf(buf, sizeof buf, " %s %.9g", name.c_str(), t.data[0]);
              line += buf;
            }
          std::printf("%s\n", line.c_str());
          std::fflush(stdout);
        };
      aotc::runAndWrite(artifact, ropts, outFile, log);
      if (progress) progress->stop();
    }
  } catch (const aotc::UserError& e) {
    for (auto& d : e.diagnostics()) std::fprintf(stderr, "aotc: %s\n", d.str().c_str());
    return 1;
  } catch (const std::exception& e) {
    // Anything but a UserError is a bug: say so, and what we were working on.
    std::string on = *compile ? copts.model : *reduce ? redo.model : *run ? artifact : *insp ? inspectPath : *graph ? greq.path : "";
    std::fprintf(stderr, "aotc: internal error%s%s: %s (please report this as a bug)\n", on.empty() ? "" : " while processing ",
                 on.c_str(), e.what());
    return 3;
  }
  return 0;
}
