//===- pt2/sizes.cpp - Symbolic sizes: sympy srepr -> aotc expressions ------===//
//
// Note [pt2 dynamic sizes]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// An archive exported with dynamic_shapes stores every symbolic size as a
// sympy srepr string (`Mul(Integer(2), Symbol('s77', positive=True,
// integer=True))`) with its value at the example inputs (the hint), and each
// symbol's range under range_constraints.  The user's Dim name is not
// stored, so each symbol is named after the first user-input dim that is
// exactly it: `x_0` for dim 0 of input `x` (aotc's symbol names have no
// dots).  The srepr is read by a small recursive parser into aotc's size
// grammar (Note [Symbolic sizes]): Integer, Symbol, Add, Mul, FloorDiv,
// PythonMod / Mod, Max, Min and Pow with a small constant exponent; any
// other function (CeilToInt, a Rational, ...) and a symbol that is no input
// dim (an unbacked u0 from data-dependent code) are refused by name.  The
// document then becomes an FX version 3 document, converted once per probe
// binding and unified (Note [Dynamic FX graphs], fx/loader.cpp), so the
// shape computations (sym_size, _operator.mul) need nothing of their own.
//===----------------------------------------------------------------------===//
#include <cctype>

#include "translate.h"

namespace aotc::pt2 {

namespace {

class Srepr {
 public:
  Srepr(const std::string& s, const std::map<std::string, std::string>& names, const SourceLoc& loc)
      : s_(s), names_(names), loc_(loc) {}
  std::string expr() {
    std::string r = term();
    skip();
    if (i_ != s_.size()) fail("trailing text");
    return r;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw UserError(loc_, cat("size expression ", s_.substr(0, 120), ": ", why));
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  std::string word() {
    skip();
    size_t b = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_' || s_[i_] == '-')) ++i_;
    if (b == i_) fail("expected a name or a number");
    return s_.substr(b, i_ - b);
  }
  std::string quoted() {
    skip();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) fail("expected a quoted symbol name");
    const char q = s_[i_++];
    size_t e = s_.find(q, i_);
    if (e == std::string::npos) fail("unterminated string");
    std::string r = s_.substr(i_, e - i_);
    i_ = e + 1;
    return r;
  }
  /// A function's arguments: expressions, keyword flags (positive=True) skipped.
  std::vector<std::string> args() {
    std::vector<std::string> out;
    if (eat(')')) return out;
    do {
      skip();
      size_t save = i_;
      word();
      if (eat('=')) {
        word();  // an assumption such as positive=True
        continue;
      }
      i_ = save;
      out.push_back(term());
    } while (eat(','));
    if (!eat(')')) fail("expected ')'");
    return out;
  }
  std::string term() {
    std::string f = word();
    if (!std::isalpha(static_cast<unsigned char>(f[0]))) fail("unexpected '" + f + "'");
    if (!eat('(')) fail("expected '(' after " + f);
    if (f == "Symbol") {
      std::string name = quoted();
      while (eat(',')) {
        word();
        if (eat('=')) word();
      }
      if (!eat(')')) fail("expected ')'");
      auto it = names_.find(name);
      if (it == names_.end())
        fail(name.rfind("u", 0) == 0 ? "symbol " + name + " is unbacked (a data-dependent size), which aotc does not support"
                                      : "symbol " + name + " is no dim of a user input");
      return it->second;
    }
    if (f == "Integer") {
      std::string n = word();
      if (!eat(')')) fail("expected ')'");
      if (n.find_first_not_of("-0123456789") != std::string::npos) fail("Integer(" + n + ") is not an integer");
      return "(" + n + ")";
    }
    std::vector<std::string> a = args();
    auto join = [&](const char* op) {
      if (a.empty()) fail(f + " of nothing");
      std::string r = "(" + a[0];
      for (size_t k = 1; k < a.size(); ++k) r += std::string(" ") + op + " " + a[k];
      return r + ")";
    };
    if (f == "Add") return join("+");
    if (f == "Mul") return join("*");
    if ((f == "FloorDiv" || f == "PythonMod" || f == "Mod") && a.size() == 2) return join(f == "FloorDiv" ? "//" : "%");
    if ((f == "Max" || f == "Min") && !a.empty()) {
      std::string r = a[0];
      for (size_t k = 1; k < a.size(); ++k) r = std::string(f == "Max" ? "max(" : "min(") + r + ", " + a[k] + ")";
      return r;
    }
    if (f == "Pow" && a.size() == 2 && a[1].size() >= 3 && a[1].find_first_not_of("()0123456789") == std::string::npos) {
      const int k = std::stoi(a[1].substr(1, a[1].size() - 2));
      if (k >= 1 && k <= 8) {
        std::string r = "(" + a[0];
        for (int n = 1; n < k; ++n) r += " * " + a[0];
        return r + ")";
      }
    }
    fail("aotc's sizes have no " + f + " (of " + std::to_string(a.size()) + " arguments)");
  }

  const std::string& s_;
  const std::map<std::string, std::string>& names_;
  const SourceLoc& loc_;
  size_t i_ = 0;
};

}  // namespace

std::string sizeExpr(const std::string& srepr, const std::map<std::string, std::string>& names, const SourceLoc& loc) {
  return Srepr(srepr, names, loc).expr();
}

}  // namespace aotc::pt2
