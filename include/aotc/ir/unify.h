//===- unify.h - Symbolic graphs from graphs at probe sizes --------*- C++ -*-===//
//
// Note [Probing and unifying]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A symbolic graph (Note [Symbolic types]) is made from static ones: the
// same program built at probe bindings of its symbols -- the grid
// {h, 2h, ..., (kFitDegree+1)h} per symbol (h its hint), then one check
// point at (kFitDegree+2)h for all of them -- must agree on everything but
// integers (ops, operands, dtypes, ranks, names, flags, non-integer
// attributes), and every integer position (a size, a stride, an offset, an
// Ints attribute's element) is fitted exactly, in rational arithmetic, by
// the polynomial of degree at most kFitDegree in each symbol through the
// grid; the check point must match the fit.  A fit with fractional
// coefficients p(s)/d becomes p // d with the guard p % d == 0 (probes are
// multiples of the hint, so they keep the hint's divisibility).  This is the
// method of Note [Dynamic export] (tools/fx_export.py), here over IR: the
// rules that build a graph stay written once, for integers, and whatever
// they compute from a size is recovered as an expression -- or refused,
// naming the value or node, when it is not a low-degree polynomial or the
// structure changes with the size.
//
// Note [Probe degree]
// ~~~~~~~~~~~~~~~~~~~
// The grid's cost is its size: a compile runs the engine and the code
// generator once per probe.  A symbol's SymbolDecl::degree sets its grid
// {h, ..., (degree+1)h}; the loaders probe at kFitDegree, knowing nothing
// yet.  Once a graph is captured, probeDegrees takes, for each symbol, the
// highest degree in it of any value's element count, span, offset or
// symbolic attribute (at least 1): what the engine and the code generator
// compute from sizes are sizes, strides, element counts and sums of them,
// of no higher degree than the tensors they describe.  That is a bound
// observed, not proved, so it is checked: a fit at a lowered degree still
// has to match the check point, off the grid, and where any fit fails the
// stage is run again at kFitDegree, whose result and errors are exactly
// those of a compile that never lowered it.  The batch-only models probe at
// 2 + 1 points instead of 3 + 1; the transformer (batch linear, sequence
// squared in attention) at 2 * 3 + 1 instead of 3 * 3 + 1.
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "aotc/ir/ir.h"

namespace aotc {

/// A graph declares at most this many symbols: at most 3^k + 1 probes.
inline constexpr size_t kMaxSymbols = 3;

/// Adds `d` to `symbols` if it is a valid declaration: a symbol name, not
/// declared yet, 1 <= min <= hint <= max < 2^31 with a hint of at least 2
/// (probes go up to (kFitDegree + 2) * hint; a size of 1 broadcasts), at most
/// kMaxSymbols in all.  Returns the one-line reason otherwise, adding nothing.
std::string declareSymbol(std::vector<SymbolDecl>& symbols, SymbolDecl d);

/// `batch=4, seq=3`: a binding in messages.
std::string bindingText(const sym::Bindings& b);

/// The probe bindings: the grid, of each symbol's degree (first: every
/// symbol at its hint), then the check point.  Symbols in name order.
std::vector<sym::Bindings> probeBindings(const std::vector<SymbolDecl>& symbols);

/// `g.symbols`, each with the degree g's sizes have in it (Note [Probe
/// degree]): between 1 and kFitDegree.
std::vector<SymbolDecl> probeDegrees(const Graph& g);
/// `symbols` at degree kFitDegree; whether any was lower.
bool fullDegree(std::vector<SymbolDecl>& symbols);

/// A fitted integer: `expr`, which is `numerator // divisor` (divisor 1: no
/// guard needed; else the guard numerator % divisor == 0).
struct SizeFit {
  sym::Expr expr, numerator;
  int64_t divisor = 1;
};
/// The fit of `values` (one per probeBindings point); nullopt when no
/// polynomial of at most each symbol's degree passes through the grid and
/// the check point.
std::optional<SizeFit> fitSize(const std::vector<SymbolDecl>& symbols, const std::vector<int64_t>& values);
/// fitSize for many integers at one set of symbols: the probe grid's
/// interpolation basis is computed once, so a fit is a weighted sum; an
/// integer equal at every probe is its own fit.
class SizeFitter {
 public:
  explicit SizeFitter(const std::vector<SymbolDecl>& symbols);
  std::optional<SizeFit> fit(const std::vector<int64_t>& values) const;
  /// probeBindings(symbols).
  const std::vector<sym::Bindings>& points() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

/// A SizeFitter whose fits are memoized by their values (a program and its
/// manifest repeat their sizes); each fit's divisibility guard is added to
/// `guards` the first time, named by `where()`, which is called only then.
class MemoFitter {
 public:
  MemoFitter(const SizeFitter& sizes, std::vector<SizeGuard>& guards) : sizes_(sizes), guards_(guards) {}
  template <class Where>
  const std::optional<SizeFit>& fit(const std::vector<int64_t>& values, const Where& where) {
    auto [it, fresh] = memo_.try_emplace(values);
    if (fresh) {
      it->second = sizes_.fit(values);
      if (it->second && it->second->divisor != 1) addGuard(guards_, SizeGuard{it->second->numerator, it->second->divisor, where()});
    }
    return it->second;
  }

 private:
  const SizeFitter& sizes_;
  std::vector<SizeGuard>& guards_;
  std::map<std::vector<int64_t>, std::optional<SizeFit>> memo_;
};

/// One symbolic graph from `probes` (probes[i] built at probeBindings()[i]),
/// declaring `symbols` and the guards the fits need.  Throws UserError at
/// `where` naming the value, node or attribute that does not unify.
Graph unifyGraphs(const std::vector<Graph>& probes, const std::vector<SymbolDecl>& symbols, const std::string& where);
Graph unifyGraphs(const std::vector<const Graph*>& probes, const std::vector<SymbolDecl>& symbols, const std::string& where);

/// `g` at binding `b`: every symbolic type and attribute evaluated, a static
/// graph.  Throws UserError naming the guard or the value when `b` breaks a
/// guard or makes a size negative.
Graph instantiate(const Graph& g, const sym::Bindings& b);

}  // namespace aotc
