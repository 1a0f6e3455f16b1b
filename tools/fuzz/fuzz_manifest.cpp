//===- fuzz_manifest.cpp - libFuzzer: manifest reader -> runtime ----------===//
//
// The fuzz input replaces a real artifact's manifest.json; `aotc run`'s
// reference runtime must run it or refuse it with a UserError.
//===----------------------------------------------------------------------===//
#include <filesystem>
#include <fstream>

#include "fuzz_artifact.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const aotc_fuzz::Artifact art = aotc_fuzz::compileOnce();
  static const std::string original = [] {
    std::ifstream f(art.dir + "/manifest.json");
    return std::string(std::istreambuf_iterator<char>(f), {});
  }();
  std::ofstream(art.dir + "/manifest.json", std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  try {
    aotc::RunOptions r;
    r.input_files = {art.weights, art.inputs};
    r.grad_outputs_file = art.inputs;
    aotc::runArtifact(art.dir, r);
  } catch (const aotc::UserError&) {
  }
  std::ofstream(art.dir + "/manifest.json", std::ios::binary | std::ios::trunc) << original;
  return 0;
}
