//===- pt2/schema.cpp - A newer schema minor's keys -----------------------===//
//
// Note [pt2 schema minors]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// The program JSON carries schema_version {major, minor}; the reader takes
// major 8 only (loader.cpp).  PyTorch's rule for a minor bump is that it adds
// fields a reader of an older minor may not know; what it means by them,
// this reader cannot tell.  So:
//  * a minor up to the pinned one (schema.inc, generated from the pinned
//    PyTorch's schema.yaml by scripts/pt2_schema.py): read as it is; keys
//    this reader does not use are ignored (an older minor's retired fields
//    among them);
//  * a newer minor: every key of every object is checked against the pinned
//    schema's types, walked from ExportedProgram: a key the pinned schema
//    does not have is refused in one line naming the archive and the key's
//    JSON path, except anywhere under a `metadata` field (provenance:
//    stack traces, module paths; nothing aotc computes with) -- those are
//    ignored.  The keys of Dict fields (tensor names, symbols) are data, not
//    fields, and are not checked.
//===----------------------------------------------------------------------===//
#include <map>
#include <string_view>

#include "translate.h"

#include "aotc/support/diag.h"

namespace aotc::pt2 {

namespace {

struct Type {
  std::string_view kind;  // struct, union, enum
  std::map<std::string_view, std::string_view> fields;
};

#define PT2_SCHEMA_VERSION(ma, mi) constexpr int64_t kPinnedMinor = mi;
#define PT2_TYPE(name, kind)
#define PT2_FIELD(type, field, fieldType)
#include "schema.inc"
#undef PT2_SCHEMA_VERSION
#undef PT2_TYPE
#undef PT2_FIELD

const std::map<std::string_view, Type>& schemaTypes() {
  static const std::map<std::string_view, Type> types = [] {
    std::map<std::string_view, Type> t;
#define PT2_SCHEMA_VERSION(ma, mi)
#define PT2_TYPE(name, k) t[name].kind = #k;
#define PT2_FIELD(type, field, fieldType) t[type].fields[field] = fieldType;
#include "schema.inc"
#undef PT2_SCHEMA_VERSION
#undef PT2_TYPE
#undef PT2_FIELD
    return t;
  }();
  return types;
}

/// `type` with `prefix` and the closing bracket removed, if it has them.
bool unwrap(std::string_view& type, std::string_view prefix) {
  if (type.substr(0, prefix.size()) != prefix || type.empty() || type.back() != ']') return false;
  type = type.substr(prefix.size(), type.size() - prefix.size() - 1);
  return true;
}

class KeyCheck {
 public:
  KeyCheck(const SourceLoc& loc, int64_t minor) : loc_(loc), minor_(minor) {}

  void walk(const json& v, std::string_view type, const std::string& path) const {
    if (unwrap(type, "Optional[")) {
      if (!v.is_null()) walk(v, type, path);
      return;
    }
    if (unwrap(type, "List[")) {
      if (v.is_array())
        for (size_t i = 0; i < v.size(); ++i) walk(v[i], type, cat(path, "[", i, "]"));
      return;
    }
    if (unwrap(type, "Dict[str, ")) {
      if (v.is_object())
        for (auto& [k, x] : v.items()) walk(x, type, cat(path, "[\"", k, "\"]"));
      return;
    }
    auto it = schemaTypes().find(type);
    if (it == schemaTypes().end() || it->second.kind == "enum" || !v.is_object()) return;  // a scalar
    for (auto& [k, x] : v.items()) {
      const std::string at = path.empty() ? k : path + "." + k;
      auto f = it->second.fields.find(k);
      if (f == it->second.fields.end())
        throw UserError(loc_, cat("schema version 8.", minor_, " is newer than the 8.", kPinnedMinor, " aotc reads, and its key '", at,
                                  "' is not in 8.", kPinnedMinor, "'s ", it->first, ": aotc cannot tell what it means (new keys are "
                                  "ignored only under metadata)"));
      if (k != "metadata") walk(x, f->second, at);
    }
  }

 private:
  const SourceLoc& loc_;
  int64_t minor_;
};

}  // namespace

int64_t pinnedSchemaMinor() { return kPinnedMinor; }

void checkNewerMinorKeys(const json& ep, int64_t minor, const SourceLoc& loc) {
  if (minor > kPinnedMinor) KeyCheck(loc, minor).walk(ep, "ExportedProgram", "");
}

}  // namespace aotc::pt2
