//===- hash.cpp - SHA-256 through OpenSSL ----------------------------------===//
#include "aotc/support/hash.h"

#include <openssl/evp.h>

#include <memory>

#include "aotc/support/diag.h"

namespace aotc {

std::string sha256Hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  AOTC_CHECK(ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1 &&
                 EVP_DigestUpdate(ctx.get(), data.data(), data.size()) == 1 &&
                 EVP_DigestFinal_ex(ctx.get(), md, &len) == 1,
             "sha256 failed");
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len; ++i) {
    s += hex[md[i] >> 4];
    s += hex[md[i] & 15];
  }
  return s;
}

}  // namespace aotc
