//===- fuzz_artifact.h - A real artifact to damage ---------------*- C++ -*-===//
//
// The manifest and run-inputs targets run a real artifact (testdata/fx/mlp,
// compiled once per process with the kernel cache off) on the reference
// runtime, with one of its files replaced by the fuzz input.
//===----------------------------------------------------------------------===//
#pragma once

#include <filesystem>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <string>

#include "aotc/driver/driver.h"
#include "fuzz_file.h"

namespace aotc_fuzz {

struct Artifact {
  std::string dir, weights, inputs;
};

inline Artifact compileOnce() {
  namespace fs = std::filesystem;
  const fs::path fx = fs::path(AOTC_SOURCE_DIR) / "testdata" / "fx";
  Artifact a;
  a.dir = "/tmp/aotc-fuzz-" + std::to_string(::getpid()) + "-art";
  a.weights = (fx / "mlp.safetensors").string();
  a.inputs = (fx / "mlp.inputs.safetensors").string();
  aotc::CompileOptions o;
  o.model = (fx / "mlp.json").string();
  o.out_dir = a.dir;
  o.archs = {"sm_90"};
  aotc::compileModel(o, std::make_shared<spdlog::logger>("fuzz", std::make_shared<spdlog::sinks::null_sink_mt>()));
  return a;
}

}  // namespace aotc_fuzz
