//===- fs.h - Files that survive a killed process ----------------*- C++ -*-===//
//
// Note [No debris]: every temporary aotc writes is named after its process
// (`.NAME.tmp-PID-N` beside an artifact, `KEY.tmp.PID.TID` in the kernel
// cache).  A process killed with SIGKILL cannot remove its own, so whoever
// next writes into the same place removes the temporaries whose process no
// longer exists.
//===----------------------------------------------------------------------===//
#pragma once

#include <filesystem>
#include <string>

namespace aotc {

/// Removes the entries of `dir` whose name starts with `prefix` and holds
/// `marker` followed by the id of a process that no longer exists.  Never
/// throws: a temporary that cannot be removed is left for later.
void removeStaleTemporaries(const std::filesystem::path& dir, const std::string& prefix, const std::string& marker);

}  // namespace aotc
