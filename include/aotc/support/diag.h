//===- diag.h - User diagnostics and internal checks -------------*- C++ -*-===//
//
// Two failure kinds, named differently (Halide user_assert / internal_assert):
//  * bad input is a UserError carrying one or more Diagnostics; every front end,
//    pass and tool reports through it and the driver turns it into one line per
//    diagnostic and a non-zero exit;
//  * a broken invariant is AOTC_CHECK, which aborts with "internal error" in
//    every build type.
//
// Note [Exceptions for user errors]: the house style suggests Expected<T>.  We
// use an exception type instead because a user error can surface deep inside
// shape inference called from a front end, a pass or the text parser, and
// unwinding to the one place (the driver) that reports it keeps every pass a
// plain function IR -> IR.  Nothing catches UserError except the driver, tests
// and the places that gather several errors to report them at once.
//===----------------------------------------------------------------------===//
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace aotc {

/// Where a diagnostic points in the user's model.
struct SourceLoc {
  SourceLoc() = default;
  SourceLoc(std::string file_, std::string node_ = {}, std::string op_ = {})
      : file(std::move(file_)), node(std::move(node_)), op(std::move(op_)) {}
  std::string file;  ///< model file (or artifact/IR file)
  std::string node;  ///< FX / ONNX node name, or IR value name
  std::string op;    ///< op spelling as the user's file has it
  std::string source;  ///< the user's source line that produced the node (`model.py:88`)
  std::string scope;   ///< the module path it ran in (`layer3.0.conv1`)
  bool empty() const { return file.empty() && node.empty() && op.empty() && source.empty() && scope.empty(); }
  /// ` at model.py:88 in layer3.0.conv1`, or what of it is known.
  std::string where() const;
};

struct Diagnostic {
  SourceLoc loc;
  std::string message;
  /// `file: node 'n' (op) at model.py:88 in blocks.2.attn: error: message` on one line.
  std::string str() const;
};

/// Bad input. Holds every problem found, so that callers can report all at once.
class UserError : public std::runtime_error {
 public:
  explicit UserError(std::vector<Diagnostic> diags);
  UserError(SourceLoc loc, const std::string& message);
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }

 private:
  std::vector<Diagnostic> diags_;
};

[[noreturn]] void internalError(const char* file, int line, const std::string& msg);

/// Stream-style message builder: `fail(loc) << "bad " << x;` is awkward with
/// [[noreturn]], so we offer `userError(loc, "fmt", args...)` via std::ostringstream.
template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

}  // namespace aotc

#define AOTC_CHECK(cond, ...)                                                  \
  do {                                                                         \
    if (!(cond)) ::aotc::internalError(__FILE__, __LINE__,                     \
                                       ::aotc::cat("check failed: " #cond " ", \
                                                   ##__VA_ARGS__));            \
  } while (0)
