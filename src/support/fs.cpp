//===- fs.cpp - Files that survive a killed process -----------------------===//
#include "aotc/support/fs.h"

#include <cerrno>
#include <csignal>
#include <sys/types.h>

namespace aotc {

namespace fs = std::filesystem;

namespace {
bool processExists(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH); }
}  // namespace

void removeStaleTemporaries(const fs::path& dir, const std::string& prefix, const std::string& marker) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    size_t at = name.rfind(marker);  // the last: a model may be named x.tmp-5
    if (at == std::string::npos || at + marker.size() < prefix.size()) continue;
    size_t b = at + marker.size(), e = b;
    while (e < name.size() && e - b < 10 && std::isdigit(static_cast<unsigned char>(name[e]))) ++e;
    if (e == b) continue;
    if (!processExists(std::stol(name.substr(b, e - b)))) {
      std::error_code rec;
      fs::remove_all(it->path(), rec);
    }
  }
}

}  // namespace aotc
