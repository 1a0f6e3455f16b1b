//===- fuzz_onnx.cpp - libFuzzer: ONNX bytes -> front end -> engine -------===//
//
// Any bytes given as an .onnx file: the loader (protobuf parsing, ONNX's
// checker and shape inference, the converters) either refuses them with a
// UserError or returns a graph, which the whole engine (functionalize,
// autodiff, partition) must then handle or refuse the same way.  Anything
// else (a crash, a sanitizer report, another exception) is a finding.
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <string>

#include "aotc/frontend/onnx.h"
#include "fuzz_compile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    aotc::FrontendOptions opts;
    opts.train = size % 2 == 1;  // both artifact kinds
    aotc_fuzz::engineOf(aotc::loadOnnxBytes(bytes, "/nonexistent-dir/fuzz.onnx", opts));
  } catch (const aotc::UserError&) {
  }
  return 0;
}
