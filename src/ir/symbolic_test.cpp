//===- symbolic_test.cpp - Size expressions (Note [Symbolic sizes]) -------===//
#include "aotc/ir/symbolic.h"

#include <gtest/gtest.h>

#include <random>

namespace aotc::sym {
namespace {

const Expr B = Expr::symbol("batch"), T = Expr::symbol("seq"), H = Expr::symbol("h");

/// Python's // and % on int64 (the reference the rewrites must match).
int64_t pyDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t pyMod(int64_t a, int64_t b) { return a - b * pyDiv(a, b); }

TEST(Symbolic, CanonicalForms) {
  EXPECT_EQ((B * T).str(), "batch*seq");
  EXPECT_EQ((T * B).str(), "batch*seq");  // one form however spelled
  EXPECT_EQ((B + 1 + B).str(), "2*batch + 1");
  EXPECT_EQ((B - B).str(), "0");
  EXPECT_EQ((B * 2 - 3).str(), "2*batch - 3");
  EXPECT_EQ((-B).str(), "-batch");
  EXPECT_EQ(((B + 1) * (B - 1)).str(), "batch*batch - 1");
  EXPECT_EQ(Expr(7).str(), "7");
  EXPECT_EQ(Expr(-7).str(), "-7");
  EXPECT_EQ(*(Expr(6) * 7).constant(), 42);
  EXPECT_EQ(B.symbolName(), std::optional<std::string>("batch"));
  EXPECT_FALSE((B * 2).symbolName());
  EXPECT_EQ((B * T + H).symbols(), (std::set<std::string>{"batch", "h", "seq"}));
}

TEST(Symbolic, DivisionAndModulo) {
  // Exact divisions resolve, as reshape(B*T, D) then size(0) // T needs.
  EXPECT_EQ(floorDiv(B * T, T).str(), "((batch*seq) // seq)");  // not assumed: seq could be 0
  EXPECT_EQ(floorDiv(B * 4 + 6, 2).str(), "2*batch + 3");
  EXPECT_EQ(floorDiv(B * 4 + 7, 2).str(), "2*batch + 3");
  EXPECT_EQ(mod(B * 4 + 7, 2).str(), "1");
  EXPECT_EQ(floorDiv(B, 1), B);
  EXPECT_EQ(mod(B, 1).str(), "0");
  EXPECT_EQ(floorDiv(B, B).str(), "1");
  EXPECT_EQ(mod(B, B).str(), "0");
  // The conv output size stays a floor division.
  Expr ho = floorDiv(H + 2 * 1 - 1 * (3 - 1) - 1, 2) + 1;
  EXPECT_EQ(ho.str(), "((h + 1) // 2)");  // (h - 1) // 2 + 1, the constants folded in
  EXPECT_EQ(ceilDiv(B, 4).str(), "-((3*batch) // 4) + batch");
  EXPECT_THROW(floorDiv(B, 0), std::domain_error);
  EXPECT_THROW(mod(Expr(3), 0), std::domain_error);
  EXPECT_EQ(*floorDiv(Expr(-7), 2).constant(), -4);
  EXPECT_EQ(*mod(Expr(-7), 2).constant(), 1);
  EXPECT_EQ(*mod(Expr(7), -2).constant(), -1);
  EXPECT_EQ(max(B, B), B);
  EXPECT_EQ(max(B, T), max(T, B));
  EXPECT_EQ(*min(Expr(3), Expr(-2)).constant(), -2);
}

TEST(Symbolic, RewritesAgreeWithPythonSemantics) {
  // Random expressions over two symbols: the simplified form, its printed
  // and re-parsed form, and a direct evaluation of the same operations on
  // integers agree at many points, negative values included.
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> pick(0, 7), small(-9, 9);
  int opaque = 0, folded = 0;
  for (int trial = 0; trial < 400; ++trial) {
    struct Term {
      Expr e;
      std::function<int64_t(int64_t, int64_t)> f;
    };
    Term t{B, [](int64_t b, int64_t) { return b; }};
    for (int step = 0; step < 4; ++step) {
      int64_t c = small(rng);
      Term u = pick(rng) % 2 ? Term{T, [](int64_t, int64_t s) { return s; }} : Term{Expr(c), [c](int64_t, int64_t) { return c; }};
      auto f = t.f, g = u.f;
      switch (pick(rng)) {
        case 0: t = {t.e + u.e, [f, g](int64_t b, int64_t s) { return f(b, s) + g(b, s); }}; break;
        case 1: t = {t.e - u.e, [f, g](int64_t b, int64_t s) { return f(b, s) - g(b, s); }}; break;
        case 2: t = {t.e * u.e, [f, g](int64_t b, int64_t s) { return f(b, s) * g(b, s); }}; break;
        case 3:
          if (c == 0) continue;
          t = {floorDiv(t.e, c), [f, c](int64_t b, int64_t s) { return pyDiv(f(b, s), c); }};
          break;
        case 4:
          if (c == 0) continue;
          t = {mod(t.e, c), [f, c](int64_t b, int64_t s) { return pyMod(f(b, s), c); }};
          break;
        case 5: t = {max(t.e, u.e), [f, g](int64_t b, int64_t s) { return std::max(f(b, s), g(b, s)); }}; break;
        case 6: t = {min(t.e, u.e), [f, g](int64_t b, int64_t s) { return std::min(f(b, s), g(b, s)); }}; break;
        default: t = {-t.e, [f](int64_t b, int64_t s) { return -f(b, s); }}; break;
      }
    }
    const std::string& text = t.e.str();
    opaque += text.find("//") != std::string::npos || text.find('%') != std::string::npos || text.find("max(") != std::string::npos;
    folded += t.e.isConstant();
    Expr back = Expr::parse(text);
    ASSERT_EQ(back, t.e) << t.e.str() << " printed and parsed gives " << back.str();
    for (int64_t b = -6; b <= 6; ++b)
      for (int64_t s : {-5, -1, 1, 3, 8}) {
        Bindings at{{"batch", b}, {"seq", s}};
        ASSERT_EQ(t.e.eval(at), t.f(b, s)) << t.e.str() << " at batch=" << b << " seq=" << s;
        ASSERT_EQ(back.eval(at), t.f(b, s)) << back.str();
      }
  }
  // Both kinds of result occur: opaque atoms kept, and expressions folded away.
  EXPECT_GT(opaque, 50);
  EXPECT_GT(folded, 10);
}

TEST(Symbolic, SubstituteAndEval) {
  Expr e = floorDiv(B * T + 3, 2) + mod(H, 4);
  Expr s = e.substitute({{"seq", Expr(2)}});
  EXPECT_EQ(s.str(), "(h % 4) + batch + 1");
  EXPECT_EQ(s.eval({{"batch", 5}, {"h", 7}}), 9);
  EXPECT_EQ(e.substitute({{"batch", T}}).symbols(), (std::set<std::string>{"h", "seq"}));
  EXPECT_THROW(e.eval({{"batch", 1}}), std::out_of_range);
  EXPECT_THROW((B * B).eval({{"batch", int64_t{1} << 40}}), std::domain_error);
}

TEST(Symbolic, ParseErrorsNameThePosition) {
  EXPECT_EQ(Expr::parse("batch*seq + 2"), B * T + 2);
  EXPECT_EQ(Expr::parse(" -(batch - 1) // 2 "), floorDiv(-(B - 1), 2));
  EXPECT_EQ(Expr::parse("max(batch, 1)"), max(B, 1));
  for (const char* bad : {"", "batch +", "(batch", "batch $ 2", "max(batch)", "99999999999999999999", "1 // 0", "max"}) {
    EXPECT_ANY_THROW(Expr::parse(bad)) << bad;
  }
  try {
    Expr::parse("batch $ 2");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at 6"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Expr::symbol("2x"), std::invalid_argument);
  std::string deep(1000, '(');
  EXPECT_THROW(Expr::parse(deep + "1"), std::invalid_argument);
}

TEST(Symbolic, DegreeInASymbol) {
  const Expr e = Expr::parse("3*batch*seq*seq + 2*seq - 7");
  EXPECT_EQ(e.degree("batch"), 1);
  EXPECT_EQ(e.degree("seq"), 2);
  EXPECT_EQ(e.degree("other"), 0);
  EXPECT_EQ(Expr(5).degree("seq"), 0);
  // An opaque atom counts its operands' highest degree, times its power.
  const Expr d = Expr::parse("((seq*seq + 1) // 3) * ((seq*seq + 1) // 3) + max(batch, seq)");
  EXPECT_EQ(d.degree("seq"), 4);
  EXPECT_EQ(d.degree("batch"), 1);
}

}  // namespace
}  // namespace aotc::sym
