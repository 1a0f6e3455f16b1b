//===- aotc-opt - run named passes on text IR (golden tests) ---------------===//
//
//   aotc-opt FILE --passes=functionalize,dce [--split-input-file]
//   aotc-opt FILE --partition=default     prints the forward then the backward
//                 [--channels-last]       (after Note [Channels last] on both)
//   aotc-opt FILE --roundtrip             prints parse(FILE) unchanged
//   aotc-opt FILE --fusion-plan           prints the code generator's fusion
//                                         plan (after --passes; with
//                                         --partition, of both programs)
//   aotc-opt --fx-targets < NAMES         prints `NAME supported|unsupported`
//                                         per ATen target (scripts/op_coverage)
//   aotc-opt --fx-lowering < FILES        loads each FX JSON file and prints,
//                                         per ATen target met, the IR ops it
//                                         became: `TARGET OP CATEGORY GRAD`
// Errors print as `FILE:LINE: error: ...` or `FILE: node 'n' (op): error: ...`.
//===----------------------------------------------------------------------===//
#include <cstdio>
#include <cstring>
#include <iostream>
#include <fstream>
#include <sstream>

#include <set>
#include <tuple>

#include "aotc/codegen/fusion.h"
#include "aotc/frontend/fx.h"
#include "aotc/ops/ops.h"
#include "aotc/passes/passes.h"
#include "aotc/text/text.h"

namespace {

const char* categoryName(aotc::OpCategory c) {
  using aotc::OpCategory;
  switch (c) {
    case OpCategory::Creation: return "creation";
    case OpCategory::Pointwise: return "pointwise";
    case OpCategory::Reduction: return "reduction";
    case OpCategory::View: return "view";
    case OpCategory::Extern: return "extern";
    case OpCategory::Mutation: return "mutation";
    case OpCategory::MetaMutation: return "meta_mutation";
    case OpCategory::Epilogue: return "epilogue";
    case OpCategory::Scatter: return "scatter";
    case OpCategory::Alias: return "alias";
    case OpCategory::Custom: return "custom";
    case OpCategory::Window: return "window";
    case OpCategory::Gather: return "gather";
    case OpCategory::Random: return "random";
  }
  return "?";
}

void lowering(const aotc::Graph& g, std::set<std::tuple<std::string, std::string, std::string, std::string>>& rows) {
  for (const aotc::Node& n : g.nodes) {
    const aotc::OpInfo& info = aotc::opInfo(n.op);
    // A mutation op is its functional op plus a copy: report the functional one.
    const aotc::OpInfo& f = info.functional ? aotc::opInfo(*info.functional) : info;
    if (!n.loc.op.empty())
      rows.emplace(n.loc.op, f.name, categoryName(f.category), f.grad == aotc::GradKind::Diff ? "grad" : "no_grad");
    for (const aotc::Graph& r : n.regions) lowering(r, rows);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string file, passes, partition;
  bool split = false, roundtrip = false, fusion = false, channelsLast = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--passes=", 0) == 0) passes = a.substr(9);
    else if (a.rfind("--partition=", 0) == 0) partition = a.substr(12);
    else if (a == "--split-input-file") split = true;
    else if (a == "--roundtrip") roundtrip = true;
    else if (a == "--fusion-plan") fusion = true;
    else if (a == "--channels-last") channelsLast = true;
    else if (a == "--fx-targets") {
      std::string t;
      while (std::cin >> t) std::printf("%s %s\n", t.c_str(), aotc::isSupportedFxTarget(t) ? "supported" : "unsupported");
      return 0;
    }
    else if (a == "--fx-lowering") {
      std::set<std::tuple<std::string, std::string, std::string, std::string>> rows;
      std::string path;
      int rc = 0;
      while (std::cin >> path) {
        try {
          lowering(aotc::loadFxGraph(path).graph, rows);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "%s\n", e.what());
          rc = 1;
        }
      }
      for (const auto& [t, op, cat, grad] : rows) std::printf("%s %s %s %s\n", t.c_str(), op.c_str(), cat.c_str(), grad.c_str());
      return rc;
    }
    else if (a[0] != '-' || a == "-") file = a;
    else {
      std::fprintf(stderr, "aotc-opt: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  std::ostringstream ss;
  if (file.empty() || file == "-") {
    ss << std::cin.rdbuf();
    file = "<stdin>";
  } else {
    std::ifstream f(file);
    if (!f) {
      std::fprintf(stderr, "aotc-opt: %s: error: cannot open file\n", file.c_str());
      return 1;
    }
    ss << f.rdbuf();
  }
  std::vector<std::string> chunks = split ? aotc::splitInputFile(ss.str()) : std::vector<std::string>{ss.str()};
  int rc = 0;
  for (size_t c = 0; c < chunks.size(); ++c) {
    if (c) std::printf("// -----\n");
    try {
      aotc::Graph g = aotc::parseGraph(chunks[c], file);
      aotc::verifyGraph(g, file);
      if (!roundtrip) {
        size_t b = 0;
        while (b < passes.size()) {
          size_t e = passes.find(',', b);
          if (e == std::string::npos) e = passes.size();
          std::string name = passes.substr(b, e - b);
          b = e + 1;
          auto pass = aotc::findPass(name);
          if (!pass) throw aotc::UserError(aotc::SourceLoc{file, "", ""}, "unknown pass '" + name + "'");
          g = pass(g);
          aotc::verifyGraph(g, file + " after " + name);
        }
      }
      if (!partition.empty()) {
        if (partition != "default" && partition != "min-cut")
          throw aotc::UserError(aotc::SourceLoc{file, "", ""}, "unknown partitioner '" + partition + "'");
        aotc::Partition p = partition == "min-cut" ? aotc::partitionMinCut(g) : aotc::partitionDefault(g);
        aotc::verifyGraph(p.forward, file + " forward");
        aotc::verifyGraph(p.backward, file + " backward");
        if (channelsLast) {
          p = aotc::channelsLast(p);
          aotc::verifyGraph(p.forward, file + " forward after channels-last");
          aotc::verifyGraph(p.backward, file + " backward after channels-last");
        }
        if (fusion)
          std::printf("%s%s", aotc::printFusionPlan(p.forward, aotc::planFusion(p.forward)).c_str(),
                      aotc::printFusionPlan(p.backward, aotc::planFusion(p.backward)).c_str());
        else
          std::printf("%s%s", aotc::printGraph(p.forward).c_str(), aotc::printGraph(p.backward).c_str());
      } else if (fusion) {
        std::printf("%s", aotc::printFusionPlan(g, aotc::planFusion(g)).c_str());
      } else {
        std::printf("%s", aotc::printGraph(g).c_str());
      }
    } catch (const aotc::UserError& e) {
      for (auto& d : e.diagnostics()) std::fprintf(stderr, "%s\n", d.str().c_str());
      rc = 1;
    }
  }
  return rc;
}
