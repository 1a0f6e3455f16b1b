//===- pt2/translate.h - An exported program as an FX document ---*- C++ -*-===//
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "aotc/ir/ir.h"

namespace aotc::pt2 {

using json = nlohmann::json;

/// A graph input whose initial value the archive holds.
struct Held {
  std::string input;  ///< its name in the document (the state_dict name)
  bool constant;      ///< under data/constants/ (lifted constants, non-persistent buffers), else data/weights/
};

struct Program {
  json doc;                 ///< aotc.fx_graph, version 2, without "weights"
  std::vector<Held> held;   ///< the inputs whose values the archive holds
};

/// The serde dtype code's DType (torch/_export/serde/schema.py ScalarType), or
/// a UserError at `loc` naming a dtype aotc does not have.
DType scalarType(const json& code, const SourceLoc& loc);

/// A sympy srepr size (Note [pt2 dynamic sizes], sizes.cpp) in aotc's size
/// grammar, its symbols renamed by `names`; a UserError at `loc` naming what
/// aotc's sizes cannot express.
std::string sizeExpr(const std::string& srepr, const std::map<std::string, std::string>& names, const SourceLoc& loc);

/// The schema minor of schema.inc (the pinned PyTorch's).
int64_t pinnedSchemaMinor();

/// Note [pt2 schema minors] (schema.cpp): for a `minor` newer than the pinned
/// one, a UserError at `loc` naming the first key of `ep` outside `metadata`
/// that the pinned schema does not have.
void checkNewerMinorKeys(const json& ep, int64_t minor, const SourceLoc& loc);

/// Translates a serialized ExportedProgram (models/<name>.json, schema 8)
/// into the FX document the FX converter tables read (Note [pt2 front end]).
/// `train`: parameters (and user inputs) that require grad in the export do.
Program translate(const json& ep, const std::string& path, bool train);

}  // namespace aotc::pt2
