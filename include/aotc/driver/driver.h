//===- driver.h - Everything the aotc tool does, minus argument parsing -*- C++ -*-===//
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "aotc/frontend/frontend.h"
#include "aotc/runtime/reference_runtime.h"

namespace aotc {

struct CompileOptions {
  std::string model;
  std::string out_dir;
  std::vector<std::string> archs = {"sm_80", "sm_90"};
  std::string partitioner = "min-cut";
  std::string dump_dir;                  ///< NN-<pass>.ir files, if set
  std::vector<std::string> print_ir_after;  ///< pass names, or "all"
  unsigned jobs = 0;                        ///< NVRTC threads; 0 = one per core
  std::string cache_dir;                    ///< kernel cache; empty = no cache
  FrontendOptions frontend;                 ///< ONNX: --train, --frozen, --shape, --dim
  bool wide_index = false;                  ///< dynamic shapes: 64-bit indices (Note [Dynamic index width])
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

/// Compiles a model into an artifact directory, atomically: everything is
/// written to a temporary directory beside `out_dir` and renamed into place
/// only when complete.  Throws UserError on bad input.
CompileSummary compileModel(const CompileOptions& opts, const Logger& log);

/// `aotc batch`: compiles every model into out_root/<model file stem>, going
/// on past failures.  Prints one line per model; writes a JSON report if
/// `report` is set.  Returns the number of models that failed.
int batchCompile(const std::vector<std::string>& models, const std::string& out_root, const CompileOptions& base,
                 const std::string& report, const Logger& log);

/// `aotc graph`: the model's graph at `stage` (captured, functionalize,
/// autodiff, functionalize-joint, forward, backward) as DOT or IR text.
std::string graphOf(const std::string& model, const std::string& stage, const std::string& partitioner, bool dot);

/// A human-readable report of a model file or an artifact directory.
std::string inspect(const std::string& path);

/// `aotc run`: runs the artifact and writes the results to `out_file`.
void runAndWrite(const std::string& artifact, const RunOptions& opts, const std::string& out_file, const Logger& log);

}  // namespace aotc
