//===- fuzz_pt2.cpp - libFuzzer: .pt2 archive bytes -> front end -> engine ---===//
//
// Any bytes given as a .pt2 file: the archive reader (libzip, the format and
// byte order entries, the program's JSON, the weights config and records)
// and the translation onto the FX tables either refuse them with a
// UserError or return a graph, which the whole engine (functionalize,
// autodiff, partition) must then handle or refuse the same way.  Anything
// else (a crash, a sanitizer report, another exception) is a finding.  Seeds:
// testdata/pt2 (scripts/fuzz pt2).
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <string>

#include "aotc/frontend/pt2.h"
#include "fuzz_compile.h"
#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = aotc_fuzz::asFile(data, size, "fuzz.pt2");
  try {
    aotc::FrontendOptions opts;
    opts.train = size % 2 == 1;  // both artifact kinds
    aotc_fuzz::compileFile(path, opts);
  } catch (const aotc::UserError&) {
  }
  return 0;
}
