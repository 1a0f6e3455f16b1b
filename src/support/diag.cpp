#include "aotc/support/diag.h"

#include <cstdio>
#include <cstdlib>

namespace aotc {

std::string SourceLoc::where() const {
  std::string s;
  if (!source.empty()) s += " at " + source;
  if (!scope.empty()) s += " in " + scope;
  return s;
}

std::string Diagnostic::str() const {
  std::string s;
  if (!loc.file.empty()) s += loc.file + ": ";
  if (!loc.node.empty()) {
    s += "node '" + loc.node + "'";
    if (!loc.op.empty()) s += " (" + loc.op + ")";
    s += loc.where() + ": ";
  } else if (!loc.where().empty()) {
    s += loc.where().substr(1) + ": ";
  }
  s += "error: " + message;
  // One line per diagnostic, whatever the message held.
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

static std::string joinDiags(const std::vector<Diagnostic>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "\n" : "") + d[i].str();
  return s;
}

UserError::UserError(std::vector<Diagnostic> diags)
    : std::runtime_error(joinDiags(diags)), diags_(std::move(diags)) {}

UserError::UserError(SourceLoc loc, const std::string& message)
    : UserError(std::vector<Diagnostic>{Diagnostic{std::move(loc), message}}) {}

void internalError(const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "aotc: internal error at %s:%d: %s\n", file, line, msg.c_str());
  std::abort();
}

}  // namespace aotc
