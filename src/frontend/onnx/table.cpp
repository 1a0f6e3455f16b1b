//===- onnx/table.cpp - The ONNX op types, joined ---------------------------===//
//
// converters() joins the family tables (Note [ONNX converter tables]) into one
// map, checking that no op type is given twice.
//
// When onnx.cpp (2,787 lines) became these files (issue 35), the artifacts
// were checked byte for byte against the build before
// (scripts/compare_builds.py --onnx-conformance): testdata/onnx 6 identical
// and 18 refused with the same message, ONNX's backend suite 934 identical
// and 138 refused alike, 0 differ; scripts/onnx_conformance's count
// unchanged (1,072 cases: 924 pass, 2 wrong, 146 rejected, 0 crash).  The
// largest file of the room is loader.cpp (659 lines).
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

const Table& converters() {
  static const Table table = [] {
    Table t;
    for (Entries (*family)() : {&pointwiseConverters, &quantizeConverters, &reductionsConverters, &viewsConverters, &creationConverters, &gathersConverters, &windowsConverters, &resizeConverters, &linalgConverters, &normalizationConverters, &lossesConverters, &randomConverters, &recurrentConverters, &attentionConverters, &controlFlowConverters, &spectralConverters, &trainingConverters})
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

/// Ops aotc refuses by design, with why (issue 38): what cannot be compiled
/// right is refused by name, never approximated.
const std::map<std::string, std::string>& refusedOps() {
  static const std::map<std::string, std::string> m = [] {
    std::map<std::string, std::string> r;
    for (const char* op : {"SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert", "SequenceLength", "SequenceMap",
                           "SplitToSequence", "ConcatFromSequence"})
      r[op] = "works on sequence values, which aotc's IR (tensors only) cannot hold";
    for (const char* op : {"Optional", "OptionalGetElement", "OptionalHasElement"})
      r[op] = "works on optional values, which aotc's IR (tensors only) cannot hold";
    for (const char* op : {"StringConcat", "StringSplit", "StringNormalizer", "RegexFullMatch", "TfIdfVectorizer"})
      r[op] = "works on strings; aotc has no string dtype";
    r["ImageDecoder"] = "decodes image files (JPEG, PNG, ...), which aotc cannot compile";
    return r;
  }();
  return m;
}

}  // namespace aotc::onnx_fe
