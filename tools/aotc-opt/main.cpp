//===- aotc-opt - run named passes on text IR (golden tests) ---------------===//
//
//   aotc-opt FILE --passes=functionalize,dce [--split-input-file]
//   aotc-opt FILE --partition=default     prints the forward then the backward
//   aotc-opt FILE --roundtrip             prints parse(FILE) unchanged
//   aotc-opt --fx-targets < NAMES         prints `NAME supported|unsupported`
//                                         per ATen target (scripts/op_coverage)
// Errors print as `FILE:LINE: error: ...` or `FILE: node 'n' (op): error: ...`.
//===----------------------------------------------------------------------===//
#include <cstdio>
#include <cstring>
#include <iostream>
#include <fstream>
#include <sstream>

#include "aotc/frontend/fx.h"
#include "aotc/text/text.h"
#include "aotc/passes/passes.h"

int main(int argc, char** argv) {
  std::string file, passes, partition;
  bool split = false, roundtrip = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--passes=", 0) == 0) passes = a.substr(9);
    else if (a.rfind("--partition=", 0) == 0) partition = a.substr(12);
    else if (a == "--split-input-file") split = true;
    else if (a == "--roundtrip") roundtrip = true;
    else if (a == "--fx-targets") {
      std::string t;
      while (std::cin >> t) std::printf("%s %s\n", t.c_str(), aotc::isSupportedFxTarget(t) ? "supported" : "unsupported");
      return 0;
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
        std::printf("%s%s", aotc::printGraph(p.forward).c_str(), aotc::printGraph(p.backward).c_str());
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
