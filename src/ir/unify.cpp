//===- unify.cpp - Symbolic graphs from graphs at probe sizes -------------===//
//
// Note [Probing and unifying] in aotc/ir/unify.h.
//===----------------------------------------------------------------------===//
#include "aotc/ir/unify.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace aotc {

namespace fitdetail {

__extension__ typedef __int128 Wide;

/// An exact rational with a 128-bit numerator and denominator; throws
/// std::overflow_error rather than wrap (a fit that overflows fails).
struct Q {
  Wide n = 0, d = 1;
  static Wide gcd(Wide a, Wide b) {
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) {
      Wide t = a % b;
      a = b;
      b = t;
    }
    return a;
  }
  static Wide mul(Wide a, Wide b) {
    Wide r;
    if (__builtin_mul_overflow(a, b, &r)) throw std::overflow_error("size fit overflows");
    return r;
  }
  static Wide add(Wide a, Wide b) {
    Wide r;
    if (__builtin_add_overflow(a, b, &r)) throw std::overflow_error("size fit overflows");
    return r;
  }
  static Q make(Wide n, Wide d) {
    if (d < 0) {
      n = -n;
      d = -d;
    }
    Wide g = gcd(n, d);
    if (g > 1) {
      n /= g;
      d /= g;
    }
    return Q{n, d};
  }
  friend Q operator+(const Q& a, const Q& b) {
    Wide g = gcd(a.d, b.d);
    return make(add(mul(a.n, b.d / g), mul(b.n, a.d / g)), mul(a.d / g, b.d));
  }
  friend Q operator*(const Q& a, const Q& b) { return make(mul(a.n, b.n), mul(a.d, b.d)); }
  bool zero() const { return n == 0; }
};

/// A polynomial: monomial (symbol names with repeats, sorted) -> coefficient.
using QPoly = std::map<std::vector<std::string>, Q>;

QPoly polyMul(const QPoly& a, const QPoly& b) {
  QPoly out;
  for (const auto& [ma, ca] : a)
    for (const auto& [mb, cb] : b) {
      std::vector<std::string> m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      std::sort(m.begin(), m.end());
      auto [it, fresh] = out.try_emplace(m, ca * cb);
      if (!fresh) it->second = it->second + ca * cb;
    }
  std::erase_if(out, [](const auto& kv) { return kv.second.zero(); });
  return out;
}

Q evalPoly(const QPoly& p, const sym::Bindings& b) {
  Q total;
  for (const auto& [m, c] : p) {
    Q t = c;
    for (const std::string& s : m) t = t * Q{b.find(s)->second, 1};
    total = total + t;
  }
  return total;
}

}  // namespace fitdetail

using namespace fitdetail;

std::string bindingText(const sym::Bindings& b) {
  std::string s;
  for (const auto& [k, v] : b) s += (s.empty() ? "" : ", ") + k + "=" + std::to_string(v);
  return s;
}

std::string declareSymbol(std::vector<SymbolDecl>& symbols, SymbolDecl d) {
  try {
    (void)sym::Expr::symbol(d.name);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  if (!(1 <= d.min && d.min <= d.hint && d.hint <= d.max && d.max <= (int64_t{1} << 31) - 1 && d.hint >= 2))
    return "symbol " + d.name + ": needs 1 <= min <= hint <= max < 2^31 and a hint of at least 2";
  for (const SymbolDecl& o : symbols)
    if (o.name == d.name) return "symbol " + d.name + " is declared twice";
  if (symbols.size() >= kMaxSymbols) return "a graph declares at most " + std::to_string(kMaxSymbols) + " symbols";
  symbols.push_back(std::move(d));
  return {};
}

std::vector<sym::Bindings> probeBindings(const std::vector<SymbolDecl>& symbols) {
  std::vector<SymbolDecl> syms = symbols;
  std::sort(syms.begin(), syms.end(), [](const SymbolDecl& a, const SymbolDecl& b) { return a.name < b.name; });
  std::vector<sym::Bindings> pts{sym::Bindings{}};
  for (const SymbolDecl& s : syms) {
    std::vector<sym::Bindings> next;
    for (const sym::Bindings& p : pts)
      for (int j = 0; j <= s.degree; ++j) {
        sym::Bindings q = p;
        q[s.name] = s.hint * (j + 1);
        next.push_back(std::move(q));
      }
    pts = std::move(next);
  }
  sym::Bindings check;
  for (const SymbolDecl& s : syms) check[s.name] = s.hint * (kFitDegree + 2);
  pts.push_back(std::move(check));
  return pts;
}

std::vector<SymbolDecl> probeDegrees(const Graph& g) {
  std::vector<SymbolDecl> out = g.symbols;
  std::vector<int> deg(out.size(), 1);
  // A product's degree is the sum of its factors', a sum's at most the
  // highest: an element count and a span from their dims, never multiplied
  // out.
  auto see = [&](const sym::Expr& e) {
    for (size_t k = 0; k < out.size(); ++k) deg[k] = std::max(deg[k], e.degree(out[k].name));
  };
  auto walk = [&](const Graph& x, const auto& self) -> void {
    for (const Value& v : x.values) {
      if (!v.type.sym) continue;
      const SymLayout& l = *v.type.sym;
      for (size_t k = 0; k < out.size(); ++k) {
        const std::string& s = out[k].name;
        int numel = 0, span = l.offset.degree(s);
        for (size_t i = 0; i < l.sizes.size(); ++i) {
          numel += l.sizes[i].degree(s);
          span = std::max(span, l.sizes[i].degree(s) + l.strides[i].degree(s));
        }
        deg[k] = std::max({deg[k], numel, span});
      }
    }
    for (const Node& n : x.nodes) {
      for (const auto& [_, es] : n.symAttrs)
        for (const sym::Expr& e : es) see(e);
      for (const Graph& r : n.regions) self(r, self);
    }
    for (const GraphOutput& o : x.outputs)
      for (const ViewStep& v : o.alias_chain)
        for (const auto& [_, es] : v.symAttrs)
          for (const sym::Expr& e : es) see(e);
  };
  walk(g, walk);
  for (size_t k = 0; k < out.size(); ++k) out[k].degree = std::min(deg[k], kFitDegree);
  return out;
}

bool fullDegree(std::vector<SymbolDecl>& symbols) {
  bool lowered = false;
  for (SymbolDecl& s : symbols) {
    lowered = lowered || s.degree < kFitDegree;
    s.degree = kFitDegree;
  }
  return lowered;
}

/// Note [Probing and unifying]: the Lagrange basis of the probe grid, one
/// polynomial per grid point, computed once; a fit is then the values'
/// weighted sum of the basis, checked at the check point.
struct SizeFitter::Impl {
  std::vector<SymbolDecl> symbols;
  std::vector<sym::Bindings> pts;
  std::vector<QPoly> basis;
};

SizeFitter::SizeFitter(const std::vector<SymbolDecl>& symbols) {
  auto impl = std::make_shared<Impl>();
  impl->symbols = symbols;
  impl->pts = probeBindings(symbols);
  for (size_t i = 0; i + 1 < impl->pts.size(); ++i) {
    QPoly term{{{}, Q{1, 1}}};
    for (const SymbolDecl& s : symbols) {
      const int64_t x = impl->pts[i].at(s.name);
      for (int j = 0; j <= s.degree; ++j) {
        const int64_t node = s.hint * (j + 1);
        if (node == x) continue;  // (s - node) / (x - node)
        term = polyMul(term, QPoly{{{s.name}, Q::make(1, x - node)}, {{}, Q::make(-node, x - node)}});
      }
    }
    impl->basis.push_back(std::move(term));
  }
  impl_ = std::move(impl);
}

const std::vector<sym::Bindings>& SizeFitter::points() const { return impl_->pts; }

std::optional<SizeFit> SizeFitter::fit(const std::vector<int64_t>& values) const {
  const std::vector<sym::Bindings>& pts = impl_->pts;
  AOTC_CHECK(values.size() == pts.size(), "fitSize: ", values.size(), " values for ", pts.size(), " probes");
  if (std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values[0]; }))
    return SizeFit{sym::Expr(values[0]), sym::Expr(values[0]), 1};
  try {
    QPoly poly;
    for (size_t i = 0; i + 1 < pts.size(); ++i) {
      if (values[i] == 0) continue;
      const Q w{values[i], 1};
      for (const auto& [m, c] : impl_->basis[i]) {
        auto [it, fresh] = poly.try_emplace(m, c * w);
        if (!fresh) it->second = it->second + c * w;
      }
    }
    std::erase_if(poly, [](const auto& kv) { return kv.second.zero(); });
    Q at = evalPoly(poly, pts.back());
    if (at.d != 1 || at.n != values.back()) return std::nullopt;
    // p(s) / d with integer p.
    Wide d = 1;
    for (const auto& [m, c] : poly) d = Q::mul(d / Q::gcd(d, c.d), c.d);
    if (d > (Wide{1} << 40)) return std::nullopt;
    sym::Expr num = 0;
    for (const auto& [m, c] : poly) {
      Wide k = Q::mul(c.n, d / c.d);
      if (k > (Wide{1} << 62) || k < -(Wide{1} << 62)) return std::nullopt;
      sym::Expr t = static_cast<int64_t>(k);
      for (const std::string& s : m) t = t * sym::Expr::symbol(s);
      num = num + t;
    }
    SizeFit f{num, num, static_cast<int64_t>(d)};
    if (d != 1) f.expr = floorDiv(num, sym::Expr(static_cast<int64_t>(d)));
    return f;
  } catch (const std::overflow_error&) {
    return std::nullopt;
  }
}

std::optional<SizeFit> fitSize(const std::vector<SymbolDecl>& symbols, const std::vector<int64_t>& values) {
  return SizeFitter(symbols).fit(values);
}

namespace {

struct Unifier {
  Unifier(const std::vector<SymbolDecl>& s, std::string f) : symbols(s), file(std::move(f)), pts(probeBindings(s)), fitter(s) {}
  Unifier(const Unifier&) = delete;  // memo refers to fitter and guards

  const std::vector<SymbolDecl>& symbols;
  std::string file;
  std::vector<sym::Bindings> pts;
  std::vector<SizeGuard> guards;
  SizeFitter fitter;
  MemoFitter memo{fitter, guards};

  [[noreturn]] void fail(const SourceLoc& at, const std::string& msg) const {
    SourceLoc l = at;
    l.file = file;
    throw UserError(l, msg);
  }

  /// The expression of one integer position, or nullopt when it is the
  /// same at every probe.  `what()` names it (spelled only when needed).
  template <class What>
  std::optional<sym::Expr> fit(const std::vector<int64_t>& v, const SourceLoc& at, const What& what) {
    if (std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == v[0]; })) return std::nullopt;
    const std::optional<SizeFit>& f = memo.fit(v, what);
    if (!f) {
      std::string seen;
      for (size_t i = 0; i < v.size(); ++i) seen += (i ? "; " : "") + std::to_string(v[i]) + " at " + bindingText(pts[i]);
      fail(at, what() + " is not a polynomial of degree at most " + std::to_string(kFitDegree) + " in each symbol (" + seen +
                   "): it cannot be a dynamic size (Note [Probing and unifying])");
    }
    return f->expr;
  }

  /// One vector of integer positions; every element's expression (constants
  /// where they do not vary), or nullopt when none varies.
  template <class What>
  std::optional<std::vector<sym::Expr>> fitAll(const std::vector<const Ints*>& v, const SourceLoc& at, const What& what) {
    for (const Ints* x : v)
      if (x->size() != v[0]->size()) fail(at, what() + " changes length with the dynamic sizes");
    std::vector<sym::Expr> out;
    bool any = false;
    std::vector<int64_t> col(v.size());
    for (size_t i = 0; i < v[0]->size(); ++i) {
      for (size_t k = 0; k < v.size(); ++k) col[k] = (*v[k])[i];
      std::optional<sym::Expr> e = fit(col, at, [&] { return what() + "[" + std::to_string(i) + "]"; });
      any = any || e.has_value();
      out.push_back(e ? *e : sym::Expr((*v[0])[i]));
    }
    if (!any) return std::nullopt;
    return out;
  }

  template <class What>
  TensorType type(const std::vector<const TensorType*>& t, const SourceLoc& at, const What& what) {
    for (const TensorType* x : t)
      if (x->dtype != t[0]->dtype || x->sizes.size() != t[0]->sizes.size())
        fail(at, what() + " changes dtype or rank with the dynamic sizes (" + t[0]->str() + " vs " + x->str() + ")");
    std::vector<const Ints*> sz, st;
    std::vector<int64_t> off;
    for (const TensorType* x : t) {
      sz.push_back(&x->sizes);
      st.push_back(&x->strides);
      off.push_back(x->offset);
    }
    auto s = fitAll(sz, at, [&] { return what() + " size"; });
    auto r = fitAll(st, at, [&] { return what() + " stride"; });
    auto o = fit(off, at, [&] { return what() + " offset"; });
    TensorType out = *t[0];
    out.sym = nullptr;
    if (s || r || o) {
      SymLayout l = t[0]->symLayout();
      if (s) l.sizes = *s;
      if (r) l.strides = *r;
      if (o) l.offset = *o;
      out.sym = std::make_shared<const SymLayout>(std::move(l));
    }
    return out;
  }

  /// Whether two probes' attribute values are the same: a NaN is the same NaN
  /// at every probe (a masked_fill or scalar_tensor of NaN; NaN != NaN).
  static bool sameAttr(const AttrValue& a, const AttrValue& b) {
    const double* x = std::get_if<double>(&a);
    const double* y = std::get_if<double>(&b);
    if (x && y && std::isnan(*x) && std::isnan(*y)) return true;
    return a == b;
  }

  /// The symbolic attributes of one node (or view step) from its attributes
  /// at every probe.
  std::map<std::string, std::vector<sym::Expr>> attrs(const std::vector<const Attrs*>& as, const SourceLoc& at) {
    std::map<std::string, std::vector<sym::Expr>> out;
    const Attrs& a0 = *as[0];
    for (const Attrs* a : as)
      if (a->size() != a0.size()) fail(at, "the attributes change with the dynamic sizes");
    for (const auto& [key, v0] : a0) {
      std::vector<const AttrValue*> vs;
      for (const Attrs* a : as) {
        auto it = a->find(key);
        if (it == a->end() || it->second.index() != v0.index()) fail(at, "attribute '" + key + "' changes kind with the dynamic sizes");
        vs.push_back(&it->second);
      }
      if (std::holds_alternative<int64_t>(v0)) {
        std::vector<int64_t> col;
        for (const AttrValue* v : vs) col.push_back(std::get<int64_t>(*v));
        if (auto e = fit(col, at, [&] { return "attribute '" + key + "'"; })) out[key] = {*e};
      } else if (std::holds_alternative<Ints>(v0)) {
        std::vector<const Ints*> cols;
        for (const AttrValue* v : vs) cols.push_back(&std::get<Ints>(*v));
        if (auto e = fitAll(cols, at, [&] { return "attribute '" + key + "'"; })) out[key] = *e;
      } else if (key == "value" && a0.count("size_num") && a0.count("size_den")) {
        // Note [Size scalars]: the value follows from the size integers.
      } else {
        for (const AttrValue* v : vs)
          if (!sameAttr(*v, v0))
            fail(at, "attribute '" + key + "' is " + attrStr(v0) + " at the hints and " + attrStr(*v) +
                         " at another probe: only integers can depend on a dynamic size");
      }
    }
    return out;
  }

  Graph graph(const std::vector<const Graph*>& p) {
    const Graph& g0 = *p[0];
    SourceLoc top;
    for (const Graph* g : p)
      if (g->name != g0.name || g->values.size() != g0.values.size() || g->inputs.size() != g0.inputs.size() ||
          g->nodes.size() != g0.nodes.size() || g->outputs.size() != g0.outputs.size())
        fail(top, "the program's structure changes with the dynamic sizes (" + std::to_string(g0.nodes.size()) + " nodes at the hints, " +
                      std::to_string(g->nodes.size()) + " at another probe)");
    Graph out = g0;
    out.symbols.clear();
    out.guards.clear();
    for (size_t v = 0; v < g0.values.size(); ++v) {
      std::vector<const TensorType*> t;
      for (const Graph* g : p) {
        if (g->values[v].name != g0.values[v].name || g->values[v].node != g0.values[v].node)
          fail(SourceLoc("", g0.values[v].name), "the program's values change with the dynamic sizes");
        t.push_back(&g->values[v].type);
      }
      SourceLoc at("", g0.values[v].name);
      if (int32_t d = g0.values[v].node; d >= 0) at = g0.nodes[static_cast<size_t>(d)].loc;
      out.values[v].type = type(t, at, [&] { return "the type of %" + g0.values[v].name; });
    }
    for (size_t i = 0; i < g0.inputs.size(); ++i)
      for (const Graph* g : p)
        if (g->inputs[i].value != g0.inputs[i].value || g->inputs[i].role != g0.inputs[i].role ||
            g->inputs[i].requires_grad != g0.inputs[i].requires_grad)
          fail(SourceLoc("", g0.values[g0.inputs[i].value].name), "the program's inputs change with the dynamic sizes");
    for (size_t k = 0; k < g0.nodes.size(); ++k) {
      const Node& n0 = g0.nodes[k];
      Node& n = out.nodes[k];
      for (const Graph* g : p) {
        const Node& x = g->nodes[k];
        if (x.op != n0.op || x.inputs != n0.inputs || x.outputs != n0.outputs || x.phase != n0.phase || x.tags != n0.tags ||
            x.regions.size() != n0.regions.size())
          fail(n0.loc, "the program's nodes change with the dynamic sizes (control flow on a size?)");
      }
      std::vector<const Attrs*> as;
      for (const Graph* g : p) as.push_back(&g->nodes[k].attrs);
      n.symAttrs = attrs(as, n0.loc);
      for (size_t r = 0; r < n0.regions.size(); ++r) {
        std::vector<const Graph*> rs;
        for (const Graph* g : p) rs.push_back(&g->nodes[k].regions[r]);
        n.regions[r] = graph(rs);
      }
    }
    for (size_t i = 0; i < g0.outputs.size(); ++i) {
      const GraphOutput& o0 = g0.outputs[i];
      const SourceLoc at("", g0.values[o0.value].name);
      for (const Graph* g : p) {
        const GraphOutput& o = g->outputs[i];
        if (o.value != o0.value || o.role != o0.role || o.target != o0.target || o.alias_of != o0.alias_of ||
            o.alias_chain.size() != o0.alias_chain.size())
          fail(at, "the program's outputs change with the dynamic sizes");
        for (size_t s = 0; s < o0.alias_chain.size(); ++s)
          if (o.alias_chain[s].op != o0.alias_chain[s].op) fail(at, "an output's view chain changes with the dynamic sizes");
      }
      // An output that is a view of an input: its view chain's sizes.
      for (size_t s = 0; s < o0.alias_chain.size(); ++s) {
        std::vector<const Attrs*> as;
        for (const Graph* g : p) as.push_back(&g->outputs[i].alias_chain[s].attrs);
        out.outputs[i].alias_chain[s].symAttrs = attrs(as, at);
      }
    }
    return out;
  }
};

}  // namespace

namespace {

void instantiateInto(Graph& g, const sym::Bindings& b) {
  // `what()` names the position, spelled only for an error.
  auto at = [&](const sym::Expr& e, const auto& what) {
    try {
      return e.eval(b);
    } catch (const std::exception& x) {
      throw UserError(SourceLoc{}, what() + ": " + e.str() + " at " + bindingText(b) + ": " + x.what());
    }
  };
  for (Value& v : g.values) {
    if (!v.type.sym) continue;
    const auto keep = std::move(v.type.sym);  // the layout, not copied
    const SymLayout& l = *keep;
    for (size_t i = 0; i < l.sizes.size(); ++i) {
      v.type.sizes[i] = at(l.sizes[i], [&] { return "the size of %" + v.name; });
      v.type.strides[i] = at(l.strides[i], [&] { return "the stride of %" + v.name; });
      if (v.type.sizes[i] < 0) throw UserError(SourceLoc{}, "%" + v.name + " has a negative size at " + bindingText(b));
    }
    v.type.offset = at(l.offset, [&] { return "the offset of %" + v.name; });
  }
  auto attrs = [&](Attrs& as, std::map<std::string, std::vector<sym::Expr>>& sa, const SourceLoc& loc) {
    for (auto& [key, es] : sa) {
      AttrValue& a = as.at(key);
      if (std::holds_alternative<int64_t>(a)) {
        a = at(es.at(0), [&] { return "attribute '" + key + "'"; });
      } else {
        Ints& iv = std::get<Ints>(a);
        for (size_t i = 0; i < iv.size() && i < es.size(); ++i) iv[i] = at(es[i], [&] { return "attribute '" + key + "'"; });
      }
    }
    if (!sa.empty() && as.count("size_num") && as.count("size_den")) {
      // Note [Size scalars] (aotc/ops/builder.h): value = scale * (num / den).
      int64_t num = std::get<int64_t>(as.at("size_num")), den = std::get<int64_t>(as.at("size_den"));
      if (den == 0)
        throw UserError(loc, "a size scalar divides by zero at " + bindingText(b) + " (eager refuses this size too)");
      as["value"] = std::get<double>(as.at("size_scale")) * (static_cast<double>(num) / static_cast<double>(den));
    }
    sa.clear();
  };
  for (Node& n : g.nodes) {
    attrs(n.attrs, n.symAttrs, n.loc);
    for (Graph& r : n.regions) instantiateInto(r, b);
  }
  for (GraphOutput& o : g.outputs)
    for (ViewStep& s : o.alias_chain) attrs(s.attrs, s.symAttrs, SourceLoc{});
}

}  // namespace

Graph instantiate(const Graph& g, const sym::Bindings& b) {
  for (const SizeGuard& gd : g.guards) {
    int64_t v = gd.expr.eval(b);
    if (v % gd.divisor != 0)
      throw UserError(SourceLoc{}, "guard " + gd.expr.str() + " % " + std::to_string(gd.divisor) + " == 0 fails at " + bindingText(b) +
                                       (gd.where.empty() ? "" : " (needed by " + gd.where + ")"));
  }
  Graph out = g;
  out.symbols.clear();
  out.guards.clear();
  instantiateInto(out, b);
  return out;
}

Graph unifyGraphs(const std::vector<Graph>& probes, const std::vector<SymbolDecl>& symbols, const std::string& where) {
  std::vector<const Graph*> p;
  for (const Graph& g : probes) p.push_back(&g);
  return unifyGraphs(p, symbols, where);
}

Graph unifyGraphs(const std::vector<const Graph*>& probes, const std::vector<SymbolDecl>& symbols, const std::string& where) {
  Unifier u(symbols, where);
  AOTC_CHECK(probes.size() == u.pts.size(), "unifyGraphs: ", probes.size(), " graphs for ", u.pts.size(), " probes");
  Graph out = u.graph(probes);
  out.symbols = symbols;
  std::sort(out.symbols.begin(), out.symbols.end(), [](const SymbolDecl& a, const SymbolDecl& b) { return a.name < b.name; });
  out.guards = std::move(u.guards);
  return out;
}

}  // namespace aotc
