//===- fuzz_run_inputs.cpp - libFuzzer: `aotc run`'s input binding --------===//
//
// The fuzz input is the --inputs safetensors file of a real artifact: any
// name, dtype, shape or damage must bind or be refused with a UserError.
//===----------------------------------------------------------------------===//
#include "fuzz_artifact.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const aotc_fuzz::Artifact art = aotc_fuzz::compileOnce();
  std::string inputs = aotc_fuzz::asFile(data, size, "inputs.safetensors");
  try {
    aotc::RunOptions r;
    r.input_files = {art.weights, inputs};
    r.grad_outputs_file = inputs;
    aotc::runArtifact(art.dir, r);
  } catch (const aotc::UserError&) {
  }
  return 0;
}
