//===- fuzz_compile.h - The fuzz targets' engine: one Compilation -----------===//
//
// Note [One Compilation]: a fuzz target runs a model through the same object
// `aotc compile` does, up to the engine's result (functionalize ... partition,
// and the storage-group check), so a finding is one `aotc compile` has too.
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <utility>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "aotc/driver/driver.h"

namespace aotc_fuzz {

inline aotc::Logger quietLogger() { return std::make_shared<spdlog::logger>("aotc-fuzz", std::make_shared<spdlog::sinks::null_sink_mt>()); }

/// The engine's stages over a model already loaded.
inline void engineOf(aotc::Model m) {
  aotc::Compilation c(aotc::CompileOptions{}, quietLogger(), std::move(m));
  c.engine();
}

/// The front end named by the file's extension, then the engine.
inline void compileFile(const std::string& path, const aotc::FrontendOptions& frontend) {
  aotc::CompileOptions o;
  o.model = path;
  o.frontend = frontend;
  aotc::Compilation c(o, quietLogger());
  c.engine();
}

}  // namespace aotc_fuzz
