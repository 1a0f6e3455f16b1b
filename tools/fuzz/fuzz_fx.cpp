//===- fuzz_fx.cpp - libFuzzer: FX JSON -> front end -> engine ------------===//
//
// Any bytes given as an FX JSON file: the loader either refuses them with a
// UserError or returns a graph, which the whole engine (functionalize,
// autodiff, partition) must then handle or refuse the same way.  Anything
// else (a crash, a sanitizer report, another exception) is a finding.
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <string>

#include "aotc/frontend/fx.h"
#include "fuzz_compile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    aotc_fuzz::engineOf(aotc::loadFxGraphText(text, "/nonexistent-dir/fuzz.json"));
  } catch (const aotc::UserError&) {
  }
  return 0;
}
