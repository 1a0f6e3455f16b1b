//===- options.h - The compile options' enums and their one name table -*- C++ -*-===//
//
// Note [Option names]: every compile option with a fixed set of values is an
// enum here with one table of its spellings.  The CLI checks a flag against
// optionNames<E>(), the driver writes optionName(v) into the manifest's
// flags, and the runtime reads the manifest's spelling back with
// parseOption<E>: the three can no longer disagree about a spelling (the
// runtime used to decide TF32 by comparing the manifest's string with
// "tf32").  Header-only, so the runtime library needs nothing else.
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace aotc {

/// `aotc compile --precision`: fp32 (float32 as written), tf32 (float32
/// GEMMs and convolutions on TF32 tensor cores: a runtime setting recorded in
/// the manifest), bf16 / fp16 (the autocast pass).
enum class Precision : uint8_t { Fp32, Tf32, Bf16, Fp16 };
/// `--loss-scaling`: auto (dynamic for an fp16 training program, else none),
/// dynamic or none (Note [Loss scaling]).
enum class LossScalingMode : uint8_t { Auto, Dynamic, None };
/// `--conv-layout`: auto (Note [Channels last]) or nchw (the pass off).
enum class ConvLayout : uint8_t { Auto, Nchw };
/// `--partitioner`: min-cut (recompute cheap ops in the backward) or default
/// (save what the backward reads).
enum class Partitioner : uint8_t { MinCut, Default };
/// `--optimizer`: none, or torch.optim's SGD, Adam, AdamW (Note [Optimizer step]).
enum class OptimizerKind : uint8_t { None, Sgd, Adam, AdamW };

/// The table of an option's spellings; the first entry is the default.
template <typename E>
struct OptionTable;

template <>
struct OptionTable<Precision> {
  static constexpr std::string_view flag = "--precision";
  static constexpr std::array<std::pair<Precision, std::string_view>, 4> names{
      {{Precision::Fp32, "fp32"}, {Precision::Tf32, "tf32"}, {Precision::Bf16, "bf16"}, {Precision::Fp16, "fp16"}}};
};
template <>
struct OptionTable<LossScalingMode> {
  static constexpr std::string_view flag = "--loss-scaling";
  static constexpr std::array<std::pair<LossScalingMode, std::string_view>, 3> names{
      {{LossScalingMode::Auto, "auto"}, {LossScalingMode::Dynamic, "dynamic"}, {LossScalingMode::None, "none"}}};
};
template <>
struct OptionTable<ConvLayout> {
  static constexpr std::string_view flag = "--conv-layout";
  static constexpr std::array<std::pair<ConvLayout, std::string_view>, 2> names{{{ConvLayout::Auto, "auto"}, {ConvLayout::Nchw, "nchw"}}};
};
template <>
struct OptionTable<Partitioner> {
  static constexpr std::string_view flag = "--partitioner";
  static constexpr std::array<std::pair<Partitioner, std::string_view>, 2> names{
      {{Partitioner::MinCut, "min-cut"}, {Partitioner::Default, "default"}}};
};

template <>
struct OptionTable<OptimizerKind> {
  static constexpr std::string_view flag = "--optimizer";
  static constexpr std::array<std::pair<OptimizerKind, std::string_view>, 4> names{
      {{OptimizerKind::None, "none"}, {OptimizerKind::Sgd, "sgd"}, {OptimizerKind::Adam, "adam"}, {OptimizerKind::AdamW, "adamw"}}};
};

/// The spelling of `v` (the CLI's, the manifest's).
template <typename E>
constexpr std::string_view optionName(E v) {
  for (const auto& [e, n] : OptionTable<E>::names)
    if (e == v) return n;
  return OptionTable<E>::names.front().second;  // unreachable for a valid enumerator
}

/// The value spelled `s`, or nullopt.
template <typename E>
std::optional<E> parseOption(std::string_view s) {
  for (const auto& [e, n] : OptionTable<E>::names)
    if (n == s) return e;
  return std::nullopt;
}

/// Every value, in the table's order.
template <typename E>
std::vector<E> optionValues() {
  std::vector<E> r;
  for (const auto& [e, n] : OptionTable<E>::names) r.push_back(e);
  return r;
}

/// Every spelling, in the table's order (the CLI's choices).
template <typename E>
std::vector<std::string> optionNames() {
  std::vector<std::string> r;
  for (const auto& [e, n] : OptionTable<E>::names) r.emplace_back(n);
  return r;
}

/// "a, b or c": the spellings for an error message.
template <typename E>
std::string optionChoices() {
  std::string r;
  const auto& t = OptionTable<E>::names;
  for (size_t i = 0; i < t.size(); ++i) r += (i == 0 ? "" : i + 1 == t.size() ? " or " : ", ") + std::string(t[i].second);
  return r;
}

}  // namespace aotc
