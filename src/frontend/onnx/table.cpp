//===- onnx/table.cpp - The ONNX op types, joined ---------------------------===//
//
// converters() joins the family tables (Note [ONNX converter tables]) into one
// map, checking that no op type is given twice.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

const Table& converters() {
  static const Table table = [] {
    Table t;
    for (Entries (*family)() : {&pointwiseConverters, &reductionsConverters, &viewsConverters, &creationConverters, &gathersConverters, &windowsConverters, &resizeConverters, &linalgConverters, &normalizationConverters, &lossesConverters, &randomConverters, &spectralConverters, &trainingConverters})
      for (const auto& [op, fn] : family()) AOTC_CHECK(t.emplace(op, fn).second, "onnx: ", op, " is given twice");
    return t;
  }();
  return table;
}

/// Ops whose output shape depends on the data: refused with their own line.
const std::set<std::string>& dataDependentOps() {
  static const std::set<std::string> s = {"NonZero", "Compress", "Unique", "NonMaxSuppression"};
  return s;
}

}  // namespace aotc::onnx_fe
