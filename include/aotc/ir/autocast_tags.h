//===- autocast_tags.h - Node tags of a program's autocast regions -*- C++ -*-===//
#pragma once

#include <cstdint>

#include "aotc/ir/ir.h"

namespace aotc {

/// Note [Autocast regions] (passes/autocast.cpp): Node::tags bits beside
/// aotc::Tag's.  The node ran inside a torch.autocast("cuda", bfloat16 /
/// float16) region of the user's program, or inside one with enabled=False;
/// set by a front end, read and cleared by the autocast pass (no later pass
/// sees them).
inline constexpr uint32_t kAutocastBf16 = 1u << 3;
inline constexpr uint32_t kAutocastFp16 = 1u << 4;
inline constexpr uint32_t kAutocastOff = 1u << 5;
inline constexpr uint32_t kAutocastTags = kAutocastBf16 | kAutocastFp16 | kAutocastOff;
static_assert((kAutocastTags & (kMustSave | kMustBeInForward | kMustBeInBackward)) == 0, "autocast tags overlap aotc::Tag");

}  // namespace aotc
