//===- arena.cpp - A program's memory plan (Note [Memory plan]) -------------===//
#include <algorithm>
#include <map>
#include <set>

#include "aotc/plan/plan.h"
#include "aotc/support/diag.h"

namespace aotc::plan {

/// Note [Memory plan]: every owned buffer of a program lives in one arena.
/// A buffer is live from the first step that touches it to the last (to the
/// end of the program if it is a program output: the forward's saved tensors
/// stay in the forward arena until the backward has run).  Offsets are
/// assigned largest-first at the lowest address that no buffer with an
/// overlapping lifetime occupies; alignment is 256 bytes.
void planArena(Program& prog) {
  std::map<std::string, std::pair<size_t, size_t>> live;  // alloc name -> [first, last] step
  std::map<std::string, std::string> rootOf;
  for (const Buffer& b : prog.buffers) rootOf[b.name] = b.kind == BufferKind::View ? b.base : b.name;
  auto touch = [&](const std::string& buf, size_t step) {
    std::string r = rootOf.count(buf) ? rootOf[buf] : buf;
    auto it = live.find(r);
    if (it == live.end()) live[r] = {step, step};
    else it->second.second = std::max(it->second.second, step);
  };
  for (size_t i = 0; i < prog.steps.size(); ++i)
    for (const std::string& b : stepBuffers(prog.steps[i])) touch(b, i);
  for (const ProgramOutput& o : prog.outputs) touch(o.buffer, prog.steps.size());
  struct Item {
    std::string name;
    int64_t bytes;
    size_t first, last;
  };
  std::vector<Item> items;
  for (const Buffer& b : prog.buffers)
    if (b.kind == BufferKind::Alloc) {
      auto it = live.find(b.name);
      auto range = it == live.end() ? std::pair<size_t, size_t>{0, 0} : it->second;
      items.push_back({b.name, std::max<int64_t>(b.bytes, 1), range.first, range.second});
    }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.bytes > b.bytes; });
  constexpr int64_t kAlign = 256;
  std::vector<std::pair<const Item*, int64_t>> placed;
  std::map<std::string, int64_t> offset;
  int64_t arena = 0;
  for (const Item& it : items) {
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (auto& [other, off] : placed)
      if (!(other->last < it.first || it.last < other->first)) busy.push_back({off, off + other->bytes});
    std::sort(busy.begin(), busy.end());
    int64_t at = 0;
    for (auto& [b, e] : busy) {
      if (at + it.bytes <= b) break;
      at = std::max(at, (e + kAlign - 1) / kAlign * kAlign);
    }
    placed.push_back({&it, at});
    offset[it.name] = at;
    arena = std::max(arena, at + it.bytes);
  }
  for (Buffer& b : prog.buffers)
    if (b.kind == BufferKind::Alloc) b.arena_offset = offset[b.name];
  prog.arena_bytes = (arena + kAlign - 1) / kAlign * kAlign;
  int64_t total = 0;
  for (const Item& it : items) total += it.bytes;
  prog.alloc_bytes_unplanned = total;
}

}  // namespace aotc::plan
