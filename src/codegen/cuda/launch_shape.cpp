//===- launch_shape.cpp - The launch-shape rule (Note [Launch shape]) -----===//
#include "aotc/codegen/launch_shape.h"

#include <algorithm>
#include <cstdio>
#include <variant>

namespace aotc {

int64_t archSmCount(const std::string& arch) {
  // The largest part of each arch the default and common --arch values name.
  static constexpr struct {
    int number;
    int64_t sms;
  } kTable[] = {
      {70, 80},   // V100
      {75, 72},   // Quadro RTX 8000 / T4 (40)
      {80, 108},  // A100
      {86, 84},   // A40 / RTX 3090 (82)
      {87, 16},   // Jetson AGX Orin
      {89, 142},  // L40S (RTX 4090: 128)
      {90, 132},  // H100 SXM (PCIe: 114)
      {100, 148}, // B200
      {120, 188}, // RTX PRO 6000 Blackwell
  };
  size_t u = arch.find('_');
  if (u == std::string::npos) return 0;
  int n = 0;
  for (size_t i = u + 1; i < arch.size(); ++i) {
    if (arch[i] < '0' || arch[i] > '9') break;
    n = n * 10 + (arch[i] - '0');
  }
  for (const auto& e : kTable)
    if (e.number == n) return e.sms;
  return 0;
}

LaunchShapeRule launchShapeRuleFor(const std::vector<std::string>& archs, int64_t smOverride) {
  LaunchShapeRule r;
  if (smOverride > 0) {
    r.sms = smOverride;
    return r;
  }
  int64_t most = 0;
  for (const std::string& a : archs) most = std::max(most, archSmCount(a));
  if (most > 0) r.sms = most;
  return r;
}

bool launchShapeOk(const plan::LaunchWork& w, const LaunchShapeRule& r) {
  if (w.bytes <= r.minBytes) return true;
  return w.blocks >= r.sms && w.serial <= r.maxSerial;
}

std::vector<std::string> launchShapeProblems(const plan::Program& p, const std::string& program, const LaunchShapeRule& r) {
  std::vector<std::string> out;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const plan::Launch* l = std::get_if<plan::Launch>(&p.steps[i]);
    if (!l) continue;
    char head[160];
    std::snprintf(head, sizeof head, "%s step %zu %s (grid %lld x %lld threads): ", program.c_str(), i, l->kernel.c_str(),
                  static_cast<long long>(l->grid[0]), static_cast<long long>(l->block[0]));
    if (!l->work) {
      out.push_back(std::string(head) + "records no work (Note [Launch shape])");
      continue;
    }
    const plan::LaunchWork& w = *l->work;
    if (launchShapeOk(w, r)) continue;
    char what[240];
    std::snprintf(what, sizeof what, "%.1f MiB in %lld block%s with work (need %lld), a thread loops over %lld elements (at most %lld)",
                  static_cast<double>(w.bytes) / (1 << 20), static_cast<long long>(w.blocks), w.blocks == 1 ? "" : "s",
                  static_cast<long long>(r.sms), static_cast<long long>(w.serial), static_cast<long long>(r.maxSerial));
    out.push_back(std::string(head) + what);
  }
  return out;
}

}  // namespace aotc
