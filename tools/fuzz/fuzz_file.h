//===- fuzz_file.h - Fuzz inputs for readers that take a path ----*- C++ -*-===//
#pragma once

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace aotc_fuzz {

/// Writes the input to a file of this process (the readers take paths).
inline std::string asFile(const uint8_t* data, size_t size, const std::string& name) {
  std::string path = "/tmp/aotc-fuzz-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace aotc_fuzz
