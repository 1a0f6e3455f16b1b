//===- symbolic.cpp - Integer size expressions (Note [Symbolic sizes]) ----===//
#include "aotc/ir/symbolic.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace aotc::sym {

struct Expr::Atom {
  enum Kind { Symbol, FloorDiv, Mod, Max, Min } kind;
  std::string name;  ///< Symbol
  Expr a, b;         ///< the operands of the others
  std::string text;
};

namespace {

using Atom = Expr::Atom;
using Monomial = Expr::Monomial;
using Poly = Expr::Poly;

[[noreturn]] void overflow() { throw std::domain_error("integer overflow in a size expression"); }
int64_t addChecked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}
int64_t mulChecked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}
int64_t floorDivInt(int64_t a, int64_t b) {
  if (b == 0) throw std::domain_error("division by zero in a size expression");
  if (a == INT64_MIN && b == -1) overflow();
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t modInt(int64_t a, int64_t b) {
  if (b == 0) throw std::domain_error("modulo by zero in a size expression");
  if (b == -1) return 0;
  int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

std::string monomialText(const Monomial& m) {
  std::string s;
  for (const auto& [text, ap] : m)
    for (int p = 0; p < ap.second; ++p) s += (s.empty() ? "" : "*") + text;
  return s;
}

std::string polyText(const Poly& p) {
  if (p.empty()) return "0";
  std::string s;
  auto term = [&](const std::string& mono, int64_t c) {
    const bool neg = c < 0;
    // |c| as text without negating INT64_MIN.
    std::string mag = std::to_string(c);
    if (neg) mag.erase(0, 1);
    std::string body = mono.empty() ? mag : (mag == "1" ? mono : mag + "*" + mono);
    if (s.empty()) s = (neg ? "-" : "") + body;
    else s += (neg ? " - " : " + ") + body;
  };
  for (const auto& [text, mc] : p)
    if (!text.empty()) term(text, mc.second);
  if (auto it = p.find(""); it != p.end()) term("", it->second.second);
  return s;
}

/// Whether `s` is one parenthesized group or one max(...)/min(...) call.
bool oneGroup(const std::string& s) {
  size_t open = s.rfind("max(", 0) == 0 || s.rfind("min(", 0) == 0 ? 3 : 0;
  if (s.size() < open + 2 || s[open] != '(' || s.back() != ')') return false;
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
    if (depth == 0 && i + 1 != s.size()) return false;
  }
  return true;
}

/// An operand of a composite atom: bare when it is one symbol, one atom or
/// a non-negative constant, parenthesized otherwise.
std::string operandText(const Expr& e) {
  if (auto c = e.constant(); c && *c >= 0) return e.str();
  if (e.symbolName() || oneGroup(e.str())) return e.str();
  return "(" + e.str() + ")";
}

void addTerm(Poly& p, const std::string& key, const Monomial& m, int64_t c) {
  if (c == 0) return;
  auto [it, fresh] = p.try_emplace(key, m, c);
  if (!fresh) {
    it->second.second = addChecked(it->second.second, c);
    if (it->second.second == 0) p.erase(it);
  }
}

}  // namespace

Expr::Expr(int64_t c) : Expr(Poly{}) {
  if (c != 0) {
    Poly p;
    p.emplace("", std::make_pair(Monomial{}, c));
    *this = Expr(std::move(p));
  }
}

Expr::Expr(Poly p) : poly_(std::make_shared<const Poly>(std::move(p))), text_(std::make_shared<const std::string>(polyText(*poly_))) {}

Expr Expr::atom(std::shared_ptr<const Atom> a) {
  Monomial m;
  std::string text = a->text;
  m.emplace(text, std::make_pair(std::move(a), 1));
  Poly p;
  p.emplace(text, std::make_pair(std::move(m), int64_t{1}));
  return Expr(std::move(p));
}

Expr Expr::symbol(std::string_view name) {
  bool ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char ch : name) ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
  if (!ok || name == "max" || name == "min") throw std::invalid_argument("'" + std::string(name) + "' is not a symbol name");
  auto a = std::make_shared<Atom>();
  a->kind = Atom::Symbol;
  a->name = std::string(name);
  a->text = a->name;
  return atom(std::move(a));
}

std::optional<int64_t> Expr::constant() const {
  if (poly().empty()) return int64_t{0};
  if (poly().size() == 1 && poly().begin()->first.empty()) return poly().begin()->second.second;
  return std::nullopt;
}

std::optional<std::string> Expr::symbolName() const {
  if (poly().size() != 1) return std::nullopt;
  const auto& [mono, c] = poly().begin()->second;
  if (c != 1 || mono.size() != 1) return std::nullopt;
  const auto& [atom, power] = mono.begin()->second;
  if (power != 1 || atom->kind != Atom::Symbol) return std::nullopt;
  return atom->name;
}

std::set<std::string> Expr::symbols() const {
  std::set<std::string> out;
  for (const auto& [_, mc] : poly())
    for (const auto& [__, ap] : mc.first) {
      const Atom& a = *ap.first;
      if (a.kind == Atom::Symbol) {
        out.insert(a.name);
      } else {
        out.merge(a.a.symbols());
        out.merge(a.b.symbols());
      }
    }
  return out;
}

int Expr::degree(std::string_view symbol) const {
  int best = 0;
  for (const auto& [_, mc] : poly()) {
    int d = 0;
    for (const auto& [__, ap] : mc.first) {
      const Atom& a = *ap.first;
      const int per = a.kind == Atom::Symbol ? (a.name == symbol ? 1 : 0) : std::max(a.a.degree(symbol), a.b.degree(symbol));
      d += per * ap.second;
    }
    best = std::max(best, d);
  }
  return best;
}

const std::string& Expr::str() const { return *text_; }

Expr operator+(const Expr& a, const Expr& b) {
  Poly p = a.poly();
  for (const auto& [key, mc] : b.poly()) addTerm(p, key, mc.first, mc.second);
  return Expr(std::move(p));
}

Expr operator-(const Expr& a) {
  Poly p;
  for (const auto& [key, mc] : a.poly()) p.emplace(key, std::make_pair(mc.first, mulChecked(mc.second, -1)));
  return Expr(std::move(p));
}

Expr operator-(const Expr& a, const Expr& b) { return a + (-b); }

Expr operator*(const Expr& a, const Expr& b) {
  Poly p;
  for (const auto& [ka, ma] : a.poly())
    for (const auto& [kb, mb] : b.poly()) {
      Monomial m = ma.first;
      for (const auto& [text, ap] : mb.first) {
        auto [it, fresh] = m.try_emplace(text, ap);
        if (!fresh) it->second.second += ap.second;
      }
      addTerm(p, monomialText(m), m, mulChecked(ma.second, mb.second));
    }
  return Expr(std::move(p));
}

Expr Expr::composite(int kind, const Expr& a, const Expr& b) {
  auto at = std::make_shared<Atom>();
  at->kind = static_cast<Atom::Kind>(kind);
  at->a = a;
  at->b = b;
  switch (at->kind) {
    case Atom::FloorDiv: at->text = "(" + operandText(a) + " // " + operandText(b) + ")"; break;
    case Atom::Mod: at->text = "(" + operandText(a) + " % " + operandText(b) + ")"; break;
    case Atom::Max: at->text = "max(" + a.str() + ", " + b.str() + ")"; break;
    case Atom::Min: at->text = "min(" + a.str() + ", " + b.str() + ")"; break;
    case Atom::Symbol: break;
  }
  return atom(std::move(at));
}

/// a = c*q + r with every coefficient of r in Python's [0, c) (or (c, 0]):
/// floor(a / c) = q + floor(r / c) and a % c = r % c for all integer values
/// of the symbols.
std::pair<Expr, Expr> Expr::splitBy(const Expr& a, int64_t c) {
  Poly q, r;
  for (const auto& [key, mc] : a.poly()) {
    addTerm(q, key, mc.first, floorDivInt(mc.second, c));
    addTerm(r, key, mc.first, modInt(mc.second, c));
  }
  return {Expr(std::move(q)), Expr(std::move(r))};
}

Expr floorDiv(const Expr& a, const Expr& b) {
  auto cb = b.constant();
  if (auto ca = a.constant(); ca && cb) return floorDivInt(*ca, *cb);
  if (cb) {
    if (*cb == 0) throw std::domain_error("division by zero in a size expression");
    auto [q, r] = Expr::splitBy(a, *cb);
    if (auto cr = r.constant()) return q + floorDivInt(*cr, *cb);
    return q + Expr::composite(Expr::Atom::FloorDiv, r, b);
  }
  if (a == b) return 1;  // a divisor is never 0 where the expression is evaluated
  return Expr::composite(Expr::Atom::FloorDiv, a, b);
}

Expr mod(const Expr& a, const Expr& b) {
  auto cb = b.constant();
  if (auto ca = a.constant(); ca && cb) return modInt(*ca, *cb);
  if (cb) {
    if (*cb == 0) throw std::domain_error("modulo by zero in a size expression");
    Expr r = Expr::splitBy(a, *cb).second;
    if (auto cr = r.constant()) return modInt(*cr, *cb);
    return Expr::composite(Expr::Atom::Mod, r, b);
  }
  if (a == b) return 0;
  return Expr::composite(Expr::Atom::Mod, a, b);
}

Expr ceilDiv(const Expr& a, const Expr& b) { return -floorDiv(-a, b); }

Expr max(const Expr& a, const Expr& b) {
  if (auto ca = a.constant(), cb = b.constant(); ca && cb) return std::max(*ca, *cb);
  if (a == b) return a;
  return a < b ? Expr::composite(Expr::Atom::Max, a, b) : Expr::composite(Expr::Atom::Max, b, a);
}

Expr min(const Expr& a, const Expr& b) {
  if (auto ca = a.constant(), cb = b.constant(); ca && cb) return std::min(*ca, *cb);
  if (a == b) return a;
  return a < b ? Expr::composite(Expr::Atom::Min, a, b) : Expr::composite(Expr::Atom::Min, b, a);
}

int64_t Expr::eval(const Bindings& bind) const {
  // Every symbol replaced by its value leaves a constant: the same checked
  // arithmetic and folding as the rewrites, so eval and simplify cannot disagree.
  std::map<std::string, Expr, std::less<>> values;
  for (const std::string& name : symbols()) {
    auto it = bind.find(name);
    if (it == bind.end()) throw std::out_of_range("symbol '" + name + "' has no value");
    values.emplace(name, Expr(it->second));
  }
  return *substitute(values).constant();
}

Expr Expr::substitute(const std::map<std::string, Expr, std::less<>>& s) const {
  Expr out = 0;
  for (const auto& [_, mc] : poly()) {
    Expr term = mc.second;
    for (const auto& [__, ap] : mc.first) {
      const Atom& at = *ap.first;
      Expr v = 0;
      switch (at.kind) {
        case Atom::Symbol: {
          auto it = s.find(at.name);
          v = it == s.end() ? symbol(at.name) : it->second;
          break;
        }
        case Atom::FloorDiv: v = floorDiv(at.a.substitute(s), at.b.substitute(s)); break;
        case Atom::Mod: v = mod(at.a.substitute(s), at.b.substitute(s)); break;
        case Atom::Max: v = max(at.a.substitute(s), at.b.substitute(s)); break;
        case Atom::Min: v = min(at.a.substitute(s), at.b.substitute(s)); break;
      }
      for (int p = 0; p < ap.second; ++p) term = term * v;
    }
    out = out + term;
  }
  return out;
}

namespace {

/// Recursive descent over the grammar in Note [Symbolic sizes].
class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}
  Expr all() {
    Expr e = expr();
    skip();
    if (i_ != t_.size()) fail("unexpected '" + std::string(1, t_[i_]) + "'");
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("size expression '" + std::string(t_) + "' at " + std::to_string(i_) + ": " + what);
  }
  void skip() {
    while (i_ < t_.size() && t_[i_] == ' ') ++i_;
  }
  bool eat(std::string_view tok) {
    skip();
    if (t_.substr(i_, tok.size()) != tok) return false;
    i_ += tok.size();
    return true;
  }
  Expr expr() {
    Expr e = term();
    for (;;) {
      if (eat("+")) e = e + term();
      else if (eat("-")) e = e - term();
      else return e;
    }
  }
  Expr term() {
    Expr e = unary();
    for (;;) {
      if (eat("*")) e = e * unary();
      else if (eat("//")) e = floorDiv(e, unary());
      else if (eat("%")) e = mod(e, unary());
      else return e;
    }
  }
  Expr unary() {
    if (++depth_ > 200) fail("nested too deeply");
    Expr e = eat("-") ? -unary() : atom();
    --depth_;
    return e;
  }
  Expr atom() {
    skip();
    if (i_ >= t_.size()) fail("expression ends early");
    if (eat("(")) {
      Expr e = expr();
      if (!eat(")")) fail("expected ')'");
      return e;
    }
    char ch = t_[i_];
    if (std::isdigit(static_cast<unsigned char>(ch))) {
      int64_t v = 0;
      while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_]))) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, t_[i_] - '0', &v)) fail("integer too large");
        ++i_;
      }
      return v;
    }
    if (std::isalpha(static_cast<unsigned char>(ch)) || ch == '_') {
      size_t s = i_;
      while (i_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[i_])) || t_[i_] == '_')) ++i_;
      std::string_view name = t_.substr(s, i_ - s);
      if (name == "max" || name == "min") {
        if (!eat("(")) fail("expected '(' after " + std::string(name));
        Expr a = expr();
        if (!eat(",")) fail("expected ','");
        Expr b = expr();
        if (!eat(")")) fail("expected ')'");
        return name == "max" ? max(a, b) : min(a, b);
      }
      return Expr::symbol(name);
    }
    fail("unexpected '" + std::string(1, ch) + "'");
  }

  std::string_view t_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

Expr Expr::parse(std::string_view text) { return Parser(text).all(); }

}  // namespace aotc::sym
