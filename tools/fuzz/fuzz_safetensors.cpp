//===- fuzz_safetensors.cpp - libFuzzer: the safetensors reader -----------===//
#include "aotc/ir/safetensors.h"
#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = aotc_fuzz::asFile(data, size, "t.safetensors");
  try {
    auto header = aotc::readSafetensorsHeader(path);
    auto tensors = aotc::readSafetensors(path);
    if (header.size() != tensors.size()) __builtin_trap();  // the two readers must agree
  } catch (const aotc::UserError&) {
  }
  return 0;
}
