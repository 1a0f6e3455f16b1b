//===- fuzz_ir.cpp - libFuzzer: IR text -> parser -> verifier -> passes ---===//
//
// aotc-opt's input: the text parser and the verifier must refuse anything
// malformed with a UserError; a graph they accept goes through the engine.
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <string>

#include "aotc/text/text.h"
#include "aotc/passes/passes.h"
#include "fuzz_compile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    aotc::Graph g = aotc::parseGraph(text, "fuzz.ir");
    aotc::verifyGraph(g, "fuzz.ir");
    aotc::Model m;
    m.graph = std::move(g);
    aotc_fuzz::engineOf(std::move(m));
  } catch (const aotc::UserError&) {
  }
  return 0;
}
