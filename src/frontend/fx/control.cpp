//===- fx/control.cpp - Control flow and refusals ---------------------------===//
//
// aotc.autograd_function (a custom autograd.Function: forward and backward
// regions), and the spellings refused by design: data-dependent shapes
// (nonzero, masked_select, unique, item) and storage swaps (set_).
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

namespace {

V setStorage(Converter& c) {
  std::string who = c.describe(c.node().at("args").at(0).value("node", "?"));
  if (c.inBackward())
    c.fail("storage swap (set_) of '" + who + "' in a custom backward is not supported: a backward may only mutate data");
  c.fail("storage swap (set_) of '" + who + "' is not supported");
}

V autogradFunction(Converter& c) {
  const json& n = c.node();
  std::vector<ValueId> args;
  for (size_t i = 0; i < n.at("args").size(); ++i) args.push_back(c.tensor(i, nullptr));
  std::string fn = n.value("function", "autograd.Function");
  if (!n.contains("forward") || !n.contains("backward")) c.fail("autograd_function needs a forward and a backward region");
  // Diagnostics in the backward name the model's values: a saved input
  // "saved_arg1" that stands for forward input "arg1" is the call's arg 1.
  std::map<std::string, std::string> names;
  if (n["forward"].is_object() && n["forward"].contains("inputs") && n["backward"].is_object() && n["backward"].contains("inputs")) {
    std::map<std::string, std::string> fwName;
    for (auto& in : n["forward"]["inputs"])
      if (in.contains("index") && in["index"].is_number_integer()) {
        size_t k = in["index"].get<size_t>();
        if (k < n["args"].size() && n["args"][k].is_object()) fwName[in.value("name", "")] = n["args"][k].value("node", "");
      }
    for (auto& in : n["backward"]["inputs"])
      if (in.contains("saved") && in["saved"].is_string() && fwName.count(in["saved"].get<std::string>()))
        names[in.value("name", "")] = fwName[in["saved"].get<std::string>()];
  }
  std::vector<std::string> saved;
  Graph bw = convertRegion(n["backward"], c.loc().file, "backward", true, c.loc(), &saved, &names);
  Graph fw = convertRegion(n["forward"], c.loc().file, "forward", false, c.loc(), nullptr);
  for (const std::string& s : saved) {
    ValueId v = fw.valueNamed(s);
    if (v == kNoValue) c.fail("backward reads '" + s + "', which its forward does not define");
    fw.outputs.push_back(GraphOutput{v, OutputRole::Saved, "", std::nullopt, {}});
  }
  if (fw.inputs.size() != args.size())
    c.fail(cat("forward region takes ", fw.inputs.size(), " tensors, the call passes ", args.size()));
  std::vector<Graph> regions;
  regions.push_back(std::move(fw));
  regions.push_back(std::move(bw));
  return c.ops(OpKind::AutogradFunction, args, Attrs{{"name", fn}}, std::move(regions));
}

/// A node whose result shape depends on tensor data: refused by name.
V dataDependent(Converter& c) {
  c.fail("the result's shape (or value) depends on tensor data, which an ahead-of-time artifact cannot express; "
         "rewrite without it (torch.where instead of boolean masks, shapes from sizes)");
}

}  // namespace

Entries controlConverters() {
  return {
    {"aten.set_.source_Tensor", setStorage},
    {"aten.set_.source_Storage", setStorage},
    {"aten.set_.source_Storage_storage_offset", setStorage},
    {"aotc.autograd_function", autogradFunction},
    {"aten.nonzero.default", dataDependent},
    {"aten._local_scalar_dense.default", dataDependent},
    {"aten.masked_select.default", dataDependent},
    {"aten.unique.default", dataDependent},
    {"aten._unique2.default", dataDependent},
    {"aten.item.default", dataDependent},
  };
}

}  // namespace aotc::fx
