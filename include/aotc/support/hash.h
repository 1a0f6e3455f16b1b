//===- hash.h - Content hashes ------------------------------------*- C++ -*-===//
#pragma once

#include <string>

namespace aotc {

/// Hex SHA-256 (OpenSSL EVP): kernel names, cache keys, module names.
std::string sha256Hex(const std::string& data);

}  // namespace aotc
