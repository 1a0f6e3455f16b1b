//===- symbolic.h - Integer size expressions over named symbols ---*- C++ -*-===//
//
// Note [Symbolic sizes]
// ~~~~~~~~~~~~~~~~~~~~~
// A dynamic dim is a symbol (`batch`, `seq`); a size the program computes
// from it is an expression: batch*seq, (h + 2 - 3) // 2 + 1, batch % 2.  An
// Expr is held in one canonical form, so two expressions that are equal as
// polynomials print the same and compare equal, and the compiler's output
// does not depend on how a size was spelled:
//   - a polynomial with int64 coefficients over atoms, a sum of monomials,
//     each a coefficient times a product of atoms with positive powers;
//   - an atom is a symbol, or a floor division / modulo of two expressions
//     that could not be simplified (Python's semantics: the quotient rounds
//     toward -inf, the remainder takes the divisor's sign), or a max/min;
//   - monomials are ordered by their atoms' text, atoms by their text, so
//     printing is deterministic (no hash order, no pointer order).
// Simplification is exact and local: constants fold, like terms merge,
// x // c and x % c with every coefficient of x divisible by c resolve, and
// x // 1, x % 1, x // x fold.  Nothing is assumed about a symbol's sign or
// range here; facts the compiler needs (a range, divisibility) are guards,
// checked where the symbols are bound.
//
// Why not GiNaC (packaged in Debian): sizes are integers with floor
// division and modulo, which GiNaC's rational-field algebra models only as
// opaque functions, its printed term order follows hash values, and it
// brings CLN along; this small library does the few rewrites sizes need,
// prints deterministically and costs microseconds.
//
// Text form (the manifest's grammar):
//   expr   := term (('+' | '-') term)*
//   term   := unary (('*' | '//' | '%') unary)*
//   unary  := '-' unary | atom
//   atom   := INT | NAME | '(' expr ')' | ('max' | 'min') '(' expr ',' expr ')'
//   NAME   := [A-Za-z_][A-Za-z0-9_]*
// str() writes this grammar and parse(str()) gives the same Expr.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace aotc::sym {

class Expr;
/// Symbol values, by name.
using Bindings = std::map<std::string, int64_t, std::less<>>;

class Expr {
 public:
  Expr() : Expr(int64_t{0}) {}
  Expr(int64_t c);  // NOLINT: a constant is an expression
  static Expr symbol(std::string_view name);
  /// Parses the text form; throws std::invalid_argument naming the position.
  static Expr parse(std::string_view text);

  /// The value when the expression is a constant.
  std::optional<int64_t> constant() const;
  bool isConstant() const { return constant().has_value(); }
  /// The symbol's name when the expression is one symbol.
  std::optional<std::string> symbolName() const;
  /// Every symbol it mentions, sorted.
  std::set<std::string> symbols() const;
  /// Its value with every symbol bound; throws std::out_of_range naming an
  /// unbound symbol, std::domain_error on a division by zero or an int64
  /// overflow.
  int64_t eval(const Bindings& b) const;
  /// An upper bound on its degree in `symbol`: a monomial's is the sum of
  /// its atoms' powers times their degrees; a floor division, modulo, max or
  /// min atom counts its operands' highest.
  int degree(std::string_view symbol) const;
  /// Replaces symbols by expressions.
  Expr substitute(const std::map<std::string, Expr, std::less<>>& s) const;
  /// The canonical text form.
  const std::string& str() const;

  friend Expr operator+(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a, const Expr& b);
  friend Expr operator*(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a);
  /// Python's a // b and a % b.
  friend Expr floorDiv(const Expr& a, const Expr& b);
  friend Expr mod(const Expr& a, const Expr& b);
  /// -((-a) // b): ceil(a / b).
  friend Expr ceilDiv(const Expr& a, const Expr& b);
  friend Expr max(const Expr& a, const Expr& b);
  friend Expr min(const Expr& a, const Expr& b);
  /// Equal canonical forms (so equal polynomials); says nothing about
  /// expressions equal only for some values of their symbols.
  friend bool operator==(const Expr& a, const Expr& b) { return a.str() == b.str(); }
  friend bool operator<(const Expr& a, const Expr& b) { return a.str() < b.str(); }

  struct Atom;
  /// A monomial: atoms (by their text) with positive powers.
  using Monomial = std::map<std::string, std::pair<std::shared_ptr<const Atom>, int>>;
  /// A polynomial: monomials (by their text) with non-zero coefficients.
  using Poly = std::map<std::string, std::pair<Monomial, int64_t>>;

 private:
  explicit Expr(Poly p);
  static Expr atom(std::shared_ptr<const Atom> a);
  /// An opaque floor division, modulo, max or min atom (Atom::Kind).
  static Expr composite(int kind, const Expr& a, const Expr& b);
  /// {q, r} with a = c*q + r, r's coefficients reduced modulo c.
  static std::pair<Expr, Expr> splitBy(const Expr& a, int64_t c);
  const Poly& poly() const { return *poly_; }

  std::shared_ptr<const Poly> poly_;
  std::shared_ptr<const std::string> text_;
};

}  // namespace aotc::sym
