//===- driver.h - Everything the aotc tool does, minus argument parsing -*- C++ -*-===//
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "aotc/codegen/codegen.h"
#include "aotc/codegen/manifest.h"
#include "aotc/frontend/frontend.h"
#include "aotc/passes/passes.h"
#include "aotc/runtime/reference_runtime.h"

namespace aotc {

struct CompileOptions {
  std::string model;
  std::string out_dir;
  std::vector<std::string> archs = {"sm_80", "sm_90"};
  Partitioner partitioner = Partitioner::MinCut;
  std::string dump_dir;                  ///< NN-<pass>.ir files, if set
  std::vector<std::string> print_ir_after;  ///< pass names, or "all"
  unsigned jobs = 0;                        ///< NVRTC threads; 0 = one per core
  std::string cache_dir;                    ///< kernel cache; empty = no cache
  FrontendOptions frontend;                 ///< ONNX: --train, --frozen, --shape, --dim
  bool wide_index = false;                  ///< dynamic shapes: 64-bit indices (Note [Dynamic index width])
  /// Note [Launch shape]: the SM count launches are shaped for (0: the
  /// largest part of the archs compiled), and whether a launch that breaks
  /// the rule refuses the compile.
  int64_t sm_count = 0;
  bool check_launch_shapes = false;
  /// Note [Option names]: the enums and their spellings (support/options.h).
  Precision precision = Precision::Fp32;
  LossScalingMode loss_scaling = LossScalingMode::Auto;
  ConvLayout conv_layout = ConvLayout::Auto;
  /// Note [Optimizer step]: --optimizer and its hyperparameters.
  OptimizerSpec optimizer;
};

struct CompileSummary {
  std::string model_name;
  size_t inputs = 0, parameters = 0, buffers = 0, user_inputs = 0;
  std::vector<std::string> mutated;  ///< "name (forward)"
  size_t forward_nodes = 0, backward_nodes = 0;
  size_t kernels = 0, forward_steps = 0, backward_steps = 0;
  size_t saved = 0;
  int64_t saved_bytes = 0;
  // --timings
  double load_ms = 0, engine_ms = 0, codegen_ms = 0, nvrtc_wall_ms = 0, nvrtc_cpu_ms = 0, write_ms = 0, total_ms = 0;
  size_t cache_hits = 0, cache_misses = 0, modules = 0;  ///< kernel PTX entries looked up (kernels x archs)
  size_t module_hits = 0, module_misses = 0, nvrtc_programs = 0;  ///< module entries (modules x archs)
  double link_cpu_ms = 0;
  std::string timings() const;
  std::string str() const;
};

/// The logger every stage writes to (a named spdlog logger owned by the tool).
using Logger = std::shared_ptr<spdlog::logger>;

/// Note [One Compilation]
/// ~~~~~~~~~~~~~~~~~~~~~~
/// One object holds a compile's options and its stages' results, each
/// computed once, in order, on first use: the model loaded, the engine's
/// pipeline (functionalize ... partition, channels-last), the generated code
/// and manifest, and the artifact written.  `aotc compile`, `batch`,
/// `graph`, the fuzz targets and the tests all go through it, so a picture
/// drawn by `aotc graph` with a compile's flags is of the programs that
/// compile writes (`--precision`, `--conv-layout` and `--loss-scaling`
/// included), and a new front end or option is wired in one place.
class Compilation {
 public:
  /// Checks the options that need no model (archs, --print-ir-after).
  Compilation(CompileOptions opts, Logger log);
  /// A model already loaded (fuzz targets, tests): model() returns it.
  Compilation(CompileOptions opts, Logger log, Model model);
  ~Compilation();
  Compilation(const Compilation&) = delete;
  Compilation& operator=(const Compilation&) = delete;

  const CompileOptions& options() const;
  /// Called with every stage's name and graph as the engine runs (`aotc
  /// graph`), after the dumps the options ask for; set before engine().
  void observe(std::function<void(const std::string&, const Graph&)> f);
  /// The pipeline's options these compile options make.
  PipelineOptions pipelineOptions() const;

  const Model& model();
  const PipelineResult& engine();
  struct Generated {
    CodegenResult cg;
    std::vector<KernelModule> modules;
    plan::Manifest manifest;  ///< a dynamic artifact's at its hints
    std::string manifest_text;
    /// The initial values of the state the passes add (Note [Loss scaling],
    /// Note [Optimizer step]), written into the artifact's weights.
    std::map<std::string, HostTensor> initial_state;
  };
  const Generated& generated();
  /// NVRTC, then the artifact, written atomically: everything goes to a
  /// temporary directory beside `out_dir`, renamed into place only when
  /// complete.  Throws UserError on bad input.
  CompileSummary write();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

/// Compilation(opts, log).write().
CompileSummary compileModel(const CompileOptions& opts, const Logger& log);

/// `aotc batch` (Note [Batch compiles], batch.cpp).
struct BatchOptions {
  std::vector<std::string> models;  ///< files, directories and @LIST files
  std::string out_root;             ///< one artifact directory per model under it
  CompileOptions base;              ///< every compile flag (model, out_dir and jobs are set per model)
  unsigned jobs = 0;                ///< threads in all; 0 = one per core
  std::string report, junit;        ///< JSON report and JUnit XML paths, if set
  unsigned shard_index = 1, shard_count = 1;
  bool timings = false;             ///< stage times under each model's line
  bool progress = false;            ///< a progress line on stderr (a terminal)
  bool quiet = false;               ///< failures only
};

/// The models `specs` names: files as given, directories' .onnx files and
/// aotc FX graphs (recursively, sorted), @LIST files' lines; each once.
std::vector<std::string> expandModels(const std::vector<std::string>& specs);
/// Each model's artifact name: its stem, with parent directories where
/// stems collide.
std::vector<std::string> artifactNames(const std::vector<std::string>& models);
/// Compiles the shard's models in parallel, going on past failures; prints a
/// line per model and a summary table, writes the report and JUnit XML.
/// Returns the exit status: 0, 1 (some model refused), 3 (an internal error).
int batchCompile(const BatchOptions& opts, const Logger& log);


/// A human-readable report of a model file or an artifact directory.
std::string inspect(const std::string& path, const CompileOptions& opts = {});

/// `aotc inspect ART --roofline` (Note [Roofline]): every launch's and
/// library call's bytes, FLOPs and bound on `gpu` (a table name or a JSON
/// file; empty: the artifact's arch decides), as text or JSON.
struct RooflineRequest {
  std::string gpu;
  bool json = false;
  bool every_step = false;
  size_t largest = 10;
};
std::string inspectRoofline(const std::string& artifact, const RooflineRequest& req);

/// `aotc run`: runs the artifact and writes the results to `out_file`.
void runAndWrite(const std::string& artifact, const RunOptions& opts, const std::string& out_file, const Logger& log);

}  // namespace aotc
