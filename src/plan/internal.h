//===- internal.h - What the plan library's files share ------------*- C++ -*-===//
#pragma once

#include <nlohmann/json.hpp>

#include "aotc/plan/plan.h"

namespace aotc::plan {

/// The checking reader of a static (version 10) manifest's JSON (plan.cpp),
/// which an instantiated symbolic manifest is read with too.
Manifest readStaticManifest(const nlohmann::json& j, const std::string& file, int64_t maxElements);

}  // namespace aotc::plan
