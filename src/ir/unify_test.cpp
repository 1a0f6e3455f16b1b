//===- unify_test.cpp - Note [Probing and unifying] ------------------------===//
#include "aotc/ir/unify.h"

#include <gtest/gtest.h>

#include <cmath>

namespace aotc {
namespace {

const std::vector<SymbolDecl> kBatch{{"batch", 4, 1, 4096}};
const std::vector<SymbolDecl> kTwo{{"batch", 2, 1, 64}, {"seq", 5, 1, 512}};

/// f at every probe binding.
template <typename F>
std::vector<int64_t> sample(const std::vector<SymbolDecl>& s, F f) {
  std::vector<int64_t> v;
  for (const sym::Bindings& b : probeBindings(s)) v.push_back(f(b));
  return v;
}

TEST(Unify, ProbesAreTheGridThenTheCheckPoint) {
  std::vector<sym::Bindings> p = probeBindings(kTwo);
  ASSERT_EQ(p.size(), 10u);  // 3 x 3 grid, then one check point
  EXPECT_EQ(p.front(), (sym::Bindings{{"batch", 2}, {"seq", 5}}));  // the hints first
  EXPECT_EQ(p.back(), (sym::Bindings{{"batch", 8}, {"seq", 20}}));
}

TEST(Unify, FitsPolynomialsExactly) {
  auto fit = [](const std::vector<SymbolDecl>& s, auto f) { return fitSize(s, sample(s, f)); };
  auto bs = [](const sym::Bindings& b) { return b.at("batch") * b.at("seq"); };
  EXPECT_EQ(fit(kTwo, bs)->expr.str(), "batch*seq");
  EXPECT_EQ(fit(kTwo, [](const sym::Bindings& b) { return 8 * b.at("seq") * b.at("seq") + 3; })->expr.str(), "8*seq*seq + 3");
  EXPECT_EQ(fit(kTwo, [](const sym::Bindings& b) { return 48 * b.at("batch") - b.at("seq") + 7; })->expr.str(),
            "48*batch - seq + 7");
  EXPECT_EQ(fit(kBatch, [](const sym::Bindings&) { return 9; })->expr.str(), "9");
  // A fraction: the fit and the guard that makes it exact.
  std::optional<SizeFit> half = fit(kBatch, [](const sym::Bindings& b) { return b.at("batch") / 2; });
  ASSERT_TRUE(half);
  EXPECT_EQ(half->divisor, 2);
  EXPECT_EQ(half->numerator.str(), "batch");
  EXPECT_EQ(half->expr, floorDiv(sym::Expr::symbol("batch"), 2));
}

TEST(Unify, RefusesWhatIsNoLowDegreePolynomial) {
  // batch^3, max(batch, 8) and a step: each fits the grid or not, but never
  // the check point too.
  for (auto f : {+[](int64_t b) { return b * b * b; }, +[](int64_t b) { return std::max<int64_t>(b, 8); },
                 +[](int64_t b) { return b < 14 ? 2 * b : 3 * b; }}) {
    EXPECT_FALSE(fitSize(kBatch, sample(kBatch, [&](const sym::Bindings& b) { return f(b.at("batch")); })));
  }
  // A huge value inside the grid: coefficients beyond int64 give no fit
  // (checked 128-bit arithmetic), never a wrapped expression.
  EXPECT_FALSE(fitSize(kBatch, sample(kBatch, [](const sym::Bindings& b) { return b.at("batch") == 8 ? INT64_MAX : 1; })));
}

Graph linear(int64_t batch) {
  Graph g;
  g.name = "lin";
  ValueId x = g.addInput("x", TensorType::contiguous(DType::F32, {batch, 8}), InputRole::UserInput, false);
  ValueId y = g.newValue("y", TensorType::contiguous(DType::F32, {2 * batch, 4}));
  Node n{static_cast<OpKind>(0), {x}, {y}, {{"size", Ints{2 * batch, 4}}, {"dim", int64_t{1}}, {"alpha", 0.5}}, {}, Phase::Forward, 0, {}};
  g.appendNode(std::move(n));
  g.outputs.push_back(GraphOutput{y, OutputRole::User, "", std::nullopt, {}});
  return g;
}

TEST(Unify, GraphsBecomeOneSymbolicGraph) {
  std::vector<Graph> probes;
  for (const sym::Bindings& b : probeBindings(kBatch)) probes.push_back(linear(b.at("batch")));
  Graph g = unifyGraphs(probes, kBatch, "lin.json");
  EXPECT_EQ(g.symbols, kBatch);
  EXPECT_EQ(g.type(0).str(), "f32[batch,8]");
  EXPECT_EQ(g.type(1).str(), "f32[2*batch,4]");
  ASSERT_EQ(g.nodes[0].symAttrs.count("size"), 1u);
  EXPECT_EQ(g.nodes[0].symAttrs.at("size")[0].str(), "2*batch");
  EXPECT_EQ(g.nodes[0].symAttrs.count("dim"), 0u);  // the same at every probe
  // The graph at its hints is probe 0; at any binding, the graph built there.
  EXPECT_EQ(instantiate(g, {{"batch", 4}}).type(1), probes[0].type(1));
  Graph at7 = instantiate(g, {{"batch", 7}});
  EXPECT_EQ(at7.type(1), linear(7).type(1));
  EXPECT_EQ(std::get<Ints>(at7.nodes[0].attrs.at("size")), (Ints{14, 4}));
}

TEST(Unify, NanIsTheSameNanAtEveryProbe) {
  // A scalar_tensor or masked_fill of NaN (KL divergence's xlogy in Core
  // ATen) has the same attribute at every size, although NaN != NaN.
  std::vector<Graph> probes;
  for (const sym::Bindings& b : probeBindings(kBatch)) probes.push_back(linear(b.at("batch")));
  for (Graph& g : probes) g.nodes[0].attrs["alpha"] = std::nan("");
  EXPECT_NO_THROW(unifyGraphs(probes, kBatch, "lin.json"));
}

TEST(Unify, RefusesWhatChangesWithTheSize) {
  std::vector<Graph> probes;
  for (const sym::Bindings& b : probeBindings(kBatch)) probes.push_back(linear(b.at("batch")));
  std::vector<Graph> floats = probes;
  floats[2].nodes[0].attrs["alpha"] = 0.25;  // a float computed from a size
  try {
    unifyGraphs(floats, kBatch, "lin.json");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(e.diagnostics()[0].message.find("attribute 'alpha' is 0.5 at the hints and 0.25 at another probe"), std::string::npos)
        << e.diagnostics()[0].message;
  }
  std::vector<Graph> cubes = probes;
  for (size_t i = 0; i < cubes.size(); ++i) {
    int64_t b = probeBindings(kBatch)[i].at("batch");
    cubes[i].values[1].type = TensorType::contiguous(DType::F32, {b * b * b, 4});
  }
  EXPECT_THROW(unifyGraphs(cubes, kBatch, "lin.json"), UserError);
  std::vector<Graph> shorter = probes;
  shorter[3].nodes.clear();
  EXPECT_THROW(unifyGraphs(shorter, kBatch, "lin.json"), UserError);
}

TEST(Unify, FractionalFitsBecomeGuards) {
  std::vector<Graph> probes;
  for (const sym::Bindings& b : probeBindings(kBatch)) {
    Graph g = linear(b.at("batch"));
    g.values[1].type = TensorType::contiguous(DType::F32, {b.at("batch") / 2, 16});
    probes.push_back(std::move(g));
  }
  Graph g = unifyGraphs(probes, kBatch, "lin.json");
  ASSERT_EQ(g.guards.size(), 1u);
  EXPECT_EQ(g.guards[0].expr.str(), "batch");
  EXPECT_EQ(g.guards[0].divisor, 2);
  try {
    instantiate(g, {{"batch", 5}});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(e.diagnostics()[0].message.find("guard batch % 2 == 0 fails at batch=5"), std::string::npos) << e.diagnostics()[0].message;
  }
  EXPECT_EQ(instantiate(g, {{"batch", 6}}).type(1).sizes, (Ints{3, 16}));
}

/// Note [Probe degree]: a lowered degree shrinks its symbol's grid.
TEST(Unify, ProbeDegreesSetTheGrid) {
  std::vector<SymbolDecl> s = kTwo;
  s[0].degree = 1;  // batch
  EXPECT_EQ(s, kTwo);  // the same declarations: the degree is a compile detail
  std::vector<sym::Bindings> p = probeBindings(s);
  ASSERT_EQ(p.size(), 7u);  // 2 x 3 grid, then the same check point
  EXPECT_EQ(p.front(), (sym::Bindings{{"batch", 2}, {"seq", 5}}));
  EXPECT_EQ(p.back(), (sym::Bindings{{"batch", 8}, {"seq", 20}}));
  // Within the degrees: exact fits.
  EXPECT_EQ(fitSize(s, sample(s, [](const sym::Bindings& b) { return 3 * b.at("batch") * b.at("seq") * b.at("seq"); }))->expr.str(),
            "3*batch*seq*seq");
  // Beyond them: the grid is fitted, the check point is not.
  EXPECT_FALSE(fitSize(s, sample(s, [](const sym::Bindings& b) { return b.at("batch") * b.at("batch"); })));
  EXPECT_FALSE(fitSize(s, sample(s, [](const sym::Bindings& b) { return b.at("batch") * b.at("batch") * b.at("seq") + 1; })));
  EXPECT_TRUE(fullDegree(s));
  EXPECT_EQ(probeBindings(s).size(), 10u);
  EXPECT_FALSE(fullDegree(s));
}

TEST(Unify, ProbeDegreesAreTheSizesDegrees) {
  std::vector<Graph> probes;
  for (const sym::Bindings& b : probeBindings(kBatch)) probes.push_back(linear(b.at("batch")));
  Graph g = unifyGraphs(probes, kBatch, "lin.json");
  EXPECT_EQ(probeDegrees(g).at(0).degree, 1);  // [batch, 8], [2*batch, 4], size=[2*batch, 4]
  // A value of batch x batch elements, or an attribute of degree 2.
  Graph sq = g;
  sq.newValue("z", TensorType::contiguous(DType::F32, {4, 4}));
  sq.values.back().type.sym = std::make_shared<SymLayout>(
      SymLayout{{sym::Expr::symbol("batch"), sym::Expr::symbol("batch")}, {sym::Expr::symbol("batch"), 1}, 0});
  EXPECT_EQ(probeDegrees(sq).at(0).degree, 2);
  Graph attr = g;
  attr.nodes[0].symAttrs["size"] = {sym::Expr::symbol("batch") * sym::Expr::symbol("batch") * sym::Expr::symbol("batch"), 4};
  EXPECT_EQ(probeDegrees(attr).at(0).degree, kFitDegree);  // at most kFitDegree
}

}  // namespace
}  // namespace aotc
