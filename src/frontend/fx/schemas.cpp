//===- fx/schemas.cpp - The ATen schemas of the listed spellings ------------===//
//
// schemas.inc, written by scripts/fx_schemas.py from PyTorch's operator
// registry: each listed spelling's argument names, keyword-only marks and
// defaults, which the table driver reads (Note [No argument dropped]).
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

const Schema* atenSchema(const std::string& spelling) {
  static const std::map<std::string, Schema> table = [] {
    const std::vector<Schema> rows = {
#include "schemas.inc"
    };
    std::map<std::string, Schema> t;
    for (const Schema& s : rows) AOTC_CHECK(t.emplace(s.spelling, s).second, "fx: schema of ", s.spelling, " given twice");
    return t;
  }();
  auto it = table.find(spelling);
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace aotc::fx
