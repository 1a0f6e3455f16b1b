//===- dynamic.cpp - One artifact for every size (Note [Dynamic codegen]) ---===//
//
// A symbolic pair of programs is compiled at every probe binding of its
// symbols (probeBindings: the grid {h, ..., (degree+1)h} per symbol and a
// check point; the degrees the pipeline found, Note [Probe degree]),
// each probe with the hints deciding what sizes decide (codegen.h).  The
// probes' results are then unified, exactly as the engine's graphs are (Note
// [Probing and unifying]):
//   - kernels: the probes' kernels at the same step are one kernel; their
//     texts must agree token for token except integer literals, and each
//     literal that varies is fitted as an expression over the symbols and
//     written as C over kernel parameters (`long long aotc_sym_<name>`, the
//     symbols it uses, sorted), which launches pass as scalars;
//   - the manifest: every integer of the probes' manifests is fitted the same
//     way and written {"sym": EXPR} where it varies (Note [Symbolic
//     manifest]); grids are max(1, ceil(threads / per)) of the fitted
//     thread count (a ceiling is not a polynomial); arenas are planned by the
//     runtime at the sizes it binds.
// A fit that needs a division adds a divisibility guard; anything that does
// not unify (texts that differ beyond integers, an integer no polynomial of
// degree <= 2 per symbol gives, a float that varies) is refused with one
// line naming the kernel or the manifest field.  The template is then read
// back as a runtime reads it and compared with the manifests at the hints
// and at the check point.
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

#include "aotc/codegen/manifest.h"
#include "aotc/ir/unify.h"
#include "aotc/ops/ops.h"
#include "aotc/support/hash.h"
#include "aotc/support/parallel.h"

namespace aotc {

namespace {

using ojson = nlohmann::ordered_json;

// ------------------------------------------------------------ C expressions

/// An Expr's text form (Note [Symbolic sizes]) as C over the kernel's symbol
/// parameters, with Python's floor division and modulo; in `int` when the
/// program's indices are 32-bit (Note [32-bit indexing]: every size, stride
/// and offset then fits), else in long long.
class CRender {
 public:
  CRender(const std::string& s, bool wide) : s_(s), wide_(wide) {}
  std::string run() {
    std::string r = expr();
    AOTC_CHECK(pos_ == s_.size(), "CRender: trailing text in ", s_);
    return r;
  }
  bool usesHelpers = false;

 private:
  void skip() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  bool eat(const char* t) {
    skip();
    size_t n = std::char_traits<char>::length(t);
    if (s_.compare(pos_, n, t) != 0) return false;
    pos_ += n;
    return true;
  }
  std::string expr() {
    std::string r = term();
    for (;;) {
      if (eat("+")) r = "(" + r + " + " + term() + ")";
      else if (eat("-")) r = "(" + r + " - " + term() + ")";
      else return r;
    }
  }
  std::string term() {
    std::string r = unary();
    for (;;) {
      if (eat("//")) {
        usesHelpers = true;
        r = "aotc_floordiv(" + r + ", " + unary() + ")";
      } else if (eat("*")) {
        r = "(" + r + " * " + unary() + ")";
      } else if (eat("%")) {
        usesHelpers = true;
        r = "aotc_floormod(" + r + ", " + unary() + ")";
      } else {
        return r;
      }
    }
  }
  std::string unary() {
    if (eat("-")) return "(-" + unary() + ")";
    return atom();
  }
  std::string atom() {
    skip();
    AOTC_CHECK(pos_ < s_.size(), "CRender: unexpected end of ", s_);
    if (eat("(")) {
      std::string r = expr();
      AOTC_CHECK(eat(")"), "CRender: ')' expected in ", s_);
      return r;
    }
    if (std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      size_t b = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      return s_.substr(b, pos_ - b) + (wide_ ? "LL" : "");
    }
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    std::string name = s_.substr(b, pos_ - b);
    AOTC_CHECK(!name.empty(), "CRender: a name expected in ", s_);
    if ((name == "max" || name == "min") && eat("(")) {
      usesHelpers = true;
      std::string a = expr();
      AOTC_CHECK(eat(","), "CRender: ',' expected in ", s_);
      std::string c = expr();
      AOTC_CHECK(eat(")"), "CRender: ')' expected in ", s_);
      return "aotc_sym" + name + "(" + a + ", " + c + ")";
    }
    return wide_ ? "aotc_sym_" + name : "((int)aotc_sym_" + name + ")";
  }
  const std::string& s_;
  const bool wide_;
  size_t pos_ = 0;
};

constexpr const char* kSymHelpers =
    "#ifndef AOTC_SYM_HELPERS\n"
    "#define AOTC_SYM_HELPERS\n"
    "__device__ __forceinline__ long long aotc_floordiv(long long a, long long b) { long long q = a / b; "
    "return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }\n"
    "__device__ __forceinline__ long long aotc_floormod(long long a, long long b) { long long r = a % b; "
    "return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }\n"
    "__device__ __forceinline__ long long aotc_symmax(long long a, long long b) { return a > b ? a : b; }\n"
    "__device__ __forceinline__ long long aotc_symmin(long long a, long long b) { return a < b ? a : b; }\n"
    "__device__ __forceinline__ int aotc_floordiv(int a, int b) { int q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }\n"
    "__device__ __forceinline__ int aotc_floormod(int a, int b) { int r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }\n"
    "__device__ __forceinline__ int aotc_symmax(int a, int b) { return a > b ? a : b; }\n"
    "__device__ __forceinline__ int aotc_symmin(int a, int b) { return a < b ? a : b; }\n"
    "#endif\n";

// ------------------------------------------------------------ fitting

struct Fitter {
  MemoFitter memo;
  const std::vector<sym::Bindings>& pts;  ///< the probes

  /// The expression giving `values` at the probes (a constant where they do
  /// not vary); nullopt when none does.  `where()` names what needs a guard.
  template <class Where>
  std::optional<sym::Expr> fit(const std::vector<int64_t>& values, const Where& where) {
    if (std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values[0]; })) return sym::Expr(values[0]);
    const std::optional<SizeFit>& f = memo.fit(values, where);
    if (!f) return std::nullopt;
    return f->expr;
  }
};

/// Where in the manifest a unification is, spelled only for a message.
using plan::JsonPath;

std::string valuesText(const std::vector<sym::Bindings>& pts, const std::vector<std::string>& vals) {
  std::string s;
  for (size_t i = 0; i < pts.size() && i < 4; ++i) s += (i ? ", " : "") + vals[i] + " at " + bindingText(pts[i]);
  return s;
}

// ------------------------------------------------------------ kernel text

struct Token {
  std::string text;
  bool integer = false;
};

std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> r;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t j = i + 1;
    bool integer = false;
    if (std::isalpha(c) || c == '_') {
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
    } else if (std::isdigit(c)) {
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      integer = true;
      // A float literal or a suffixed one is one (non-integer) token: 1.5e-05f, 2ULL.
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.' || s[j] == '_' ||
                              ((s[j] == '-' || s[j] == '+') && (s[j - 1] == 'e' || s[j - 1] == 'E')))) {
        integer = false;
        ++j;
      }
    }
    r.push_back({s.substr(i, j - i), integer});
    i = j;
  }
  return r;
}

struct UnifiedKernel {
  std::string text;                  ///< with @KERNEL@ for its name
  std::vector<std::string> symbols;  ///< its parameters, sorted
};

/// The kernel the probes' texts are (Note [Dynamic codegen]).
UnifiedKernel unifyKernelText(const std::vector<std::string>& texts, Fitter& fitter, const std::string& who, bool wide) {
  std::vector<std::vector<Token>> toks;
  for (const std::string& t : texts) toks.push_back(tokenize(t));
  auto refuse = [&](const std::string& why) {
    throw UserError(SourceLoc{"", who, "dynamic shapes"}, "the kernel computing this node " + why);
  };
  for (size_t p = 1; p < toks.size(); ++p)
    if (toks[p].size() != toks[0].size()) refuse("has a different structure at " + bindingText(fitter.pts[p]) + " than at " + bindingText(fitter.pts[0]));
  std::string out;
  std::set<std::string> used;
  bool helpers = false;
  for (size_t i = 0; i < toks[0].size(); ++i) {
    const Token& t0 = toks[0][i];
    bool same = true;
    for (size_t p = 1; p < toks.size(); ++p) same = same && toks[p][i].text == t0.text;
    if (same) {
      out += t0.text;
      continue;
    }
    std::vector<std::string> shown;
    for (auto& tk : toks) shown.push_back("'" + tk[i].text + "'");
    bool ints = true;
    for (auto& tk : toks) ints = ints && tk[i].integer;
    if (!ints) refuse("differs between sizes beyond its integers (" + valuesText(fitter.pts, shown) + ")");
    std::vector<int64_t> vals;
    for (auto& tk : toks) {
      try {
        vals.push_back(std::stoll(tk[i].text));
      } catch (const std::exception&) {
        refuse("holds an integer literal out of range: " + tk[i].text);
      }
    }
    std::optional<sym::Expr> e = fitter.fit(vals, [&] { return "kernel for " + who; });
    if (!e) refuse("holds an integer that is no polynomial of the symbols (" + valuesText(fitter.pts, shown) + ")");
    for (const std::string& s : e->symbols()) used.insert(s);
    CRender r(e->str(), wide);
    out += "(" + r.run() + ")";
    helpers = helpers || r.usesHelpers;
  }
  UnifiedKernel k;
  k.symbols.assign(used.begin(), used.end());
  if (!k.symbols.empty()) {
    // The symbols become parameters after the buffers.
    size_t sig = out.find("@KERNEL@(");
    AOTC_CHECK(sig != std::string::npos, "a kernel without its signature");
    size_t close = out.find(')', sig);
    if (size_t step = out.find(", long long aotc_step", sig); step < close) close = step;  // Note [Index errors]: the tag stays last
    std::string params;
    for (const std::string& s : k.symbols) params += ", long long aotc_sym_" + s;
    out.insert(close, params);
  }
  if (helpers) {
    const std::string inc = "#include \"aotc_prelude.cuh\"\n";
    AOTC_CHECK(out.rfind(inc, 0) == 0, "a kernel that does not start with the prelude's include");
    out.insert(inc.size(), kSymHelpers);
  }
  k.text = std::move(out);
  return k;
}

// ------------------------------------------------------------ manifests

/// The manifests' JSON, unified (Note [Symbolic manifest]).  A launch's
/// grid[0] arrives as {"threads", "per"}.
ojson unifyJson(const std::vector<const ojson*>& js, Fitter& fitter, const JsonPath& path) {
  const ojson& a = *js[0];
  auto where = [&] { return path.str(); };
  auto refuse = [&](const std::string& why) {
    throw UserError(SourceLoc{"manifest.json", where(), "dynamic shapes"}, why);
  };
  for (const ojson* j : js)
    if (j->type() != a.type() && !(j->is_number_integer() && a.is_number_integer()))
      refuse("differs between sizes: " + a.dump() + " at " + bindingText(fitter.pts[0]) + ", " + j->dump());
  if (a.is_object()) {
    if (a.size() == 2 && a.contains("threads") && a.contains("per") && !path.key && path.index == 0 && path.parent &&
        path.parent->key && *path.parent->key == "grid") {
      std::vector<int64_t> t, per;
      for (const ojson* j : js) {
        t.push_back((*j)["threads"].get<int64_t>());
        per.push_back((*j)["per"].get<int64_t>());
      }
      std::optional<sym::Expr> te = fitter.fit(t, where);
      std::optional<sym::Expr> pe = fitter.fit(per, where);
      if (!te || !pe || !pe->isConstant()) refuse("a launch's thread count is no polynomial of the symbols");
      sym::Expr grid = max(sym::Expr(1), ceilDiv(*te, *pe));
      if (auto c = grid.constant()) return *c;
      return ojson{{"sym", grid.str()}};
    }
    ojson r = ojson::object();
    std::vector<const ojson*> sub(js.size());
    for (auto it = a.begin(); it != a.end(); ++it) {
      for (size_t k = 0; k < js.size(); ++k) {
        const ojson* j = js[k];
        if (j->size() != a.size()) refuse("has different fields at different sizes");
        auto f = k == 0 ? it : j->find(it.key());
        if (f == j->end()) refuse("has different fields at different sizes");
        sub[k] = &*f;
      }
      r[it.key()] = unifyJson(sub, fitter, JsonPath{&path, &it.key(), 0});
    }
    return r;
  }
  if (a.is_array()) {
    ojson r = ojson::array();
    for (const ojson* j : js)
      if (j->size() != a.size()) refuse(cat("has ", a.size(), " entries at ", bindingText(fitter.pts[0]), " and ", j->size(), " at another size"));
    std::vector<const ojson*> sub(js.size());
    for (size_t i = 0; i < a.size(); ++i) {
      for (size_t k = 0; k < js.size(); ++k) sub[k] = &(*js[k])[i];
      r.push_back(unifyJson(sub, fitter, JsonPath{&path, nullptr, i}));
    }
    return r;
  }
  if (a.is_number_integer()) {
    std::vector<int64_t> v;
    for (const ojson* j : js) v.push_back(j->get<int64_t>());
    if (std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == v[0]; })) return a;
    std::optional<sym::Expr> e = fitter.fit(v, where);
    if (!e) {
      std::vector<std::string> shown;
      for (int64_t x : v) shown.push_back(std::to_string(x));
      refuse("an integer that is no polynomial of the symbols (" + valuesText(fitter.pts, shown) + ")");
    }
    if (auto c = e->constant()) return *c;
    return ojson{{"sym", e->str()}};
  }
  for (const ojson* j : js)
    if (*j != a) refuse("differs between sizes: " + a.dump() + " at " + bindingText(fitter.pts[0]) + ", " + j->dump() + " at another");
  return a;
}

/// Note [Dynamic index width]: a dynamic program's kernels index in 32
/// bits when every value fits 2^31 elements at the hints, as a static
/// program's do at its sizes (Note [32-bit indexing]); 64-bit index math
/// costs both run time and compile time (ptxas spends twice as long on the
/// divisions by run-time sizes).  Where a value could outgrow 32 bits at a
/// size the symbols' ranges allow, its element count and storage span become
/// limits in the manifest, checked when the symbols are bound: a size beyond
/// them is refused in one line naming the input and the value, and says to
/// compile with --wide-index, which makes every index 64-bit.  This is
/// PyTorch Inductor's rule too (32-bit indexing when the hints fit, with
/// guards on the sizes).  A value that spans 2^31 elements at the hints
/// makes the program 64-bit.
struct IndexWidth {
  bool wide = false;
  std::vector<plan::SymbolicManifest::Limit> limits;
};

IndexWidth chooseIndexWidth(const Partition& p, const std::vector<SymbolDecl>& symbols, bool forceWide) {
  if (forceWide) return {true, {}};
  sym::Bindings top;
  for (const SymbolDecl& s : symbols) top[s.name] = s.max;
  constexpr int64_t kLimit = int64_t{1} << 31;
  IndexWidth r;
  std::set<std::string> seen;
  for (int prog = 0; prog < 2; ++prog) {
    const Graph& g = prog ? p.backward : p.forward;
    for (const Value& v : g.values) {
      const TensorType& t = v.type;
      if (t.numel() >= kLimit || t.storageSpan() >= kLimit) return {true, {}};  // at the hints
      if (!t.sym) continue;
      const SymLayout& l = *t.sym;
      // The element count and span at the maxima, from the dims' values in
      // checked 128-bit arithmetic (an overflow is not within); their
      // expressions are built only for a limit.
      bool numelWithin = true, spanWithin = true;
      try {
        __extension__ typedef __int128 Wide;
        Wide numel = 1, span = l.offset.eval(top) + 1;
        for (size_t d = 0; d < l.sizes.size(); ++d) {
          const Wide n = l.sizes[d].eval(top), st = l.strides[d].eval(top);
          Wide step;
          if (__builtin_mul_overflow(numel, n, &numel) || __builtin_mul_overflow(n - 1, st, &step) ||
              __builtin_add_overflow(span, step, &span))
            throw std::overflow_error("");
        }
        numelWithin = numel < kLimit;
        spanWithin = span < kLimit;
      } catch (const std::exception&) {  // overflows at the maxima
        numelWithin = spanWithin = false;
      }
      if (numelWithin && spanWithin) continue;
      sym::Expr span = l.offset + 1, numel = 1;
      for (size_t d = 0; d < l.sizes.size(); ++d) {
        numel = numel * l.sizes[d];
        span = span + (l.sizes[d] - 1) * l.strides[d];
      }
      for (auto [e, within] : {std::pair{&numel, numelWithin}, {&span, spanWithin}})
        if (!within && !e->isConstant() && seen.insert(e->str()).second)
          r.limits.push_back({*e, kLimit - 1, cat("%", v.name, " of the ", prog ? "backward" : "forward")});
    }
  }
  return r;
}

/// generateDynamic at the probes of `symbols`; `kept`: the pipeline's
/// graphs at exactly these probes, or null to instantiate pr's there.
DynamicCodegen generateAt(const PipelineResult& pr, const std::vector<SymbolDecl>& symbols, const std::vector<ProbeResult>* kept,
                          const ManifestInfo& info, size_t perModule, unsigned jobs, bool wideIndex) {
  std::vector<SizeGuard> guards;
  for (const Graph* g : {&pr.functional, &pr.partition.forward, &pr.partition.backward})
    for (const SizeGuard& s : g->guards) addGuard(guards, s);
  const SizeFitter sizes(symbols);
  const std::vector<sym::Bindings>& pts = sizes.points();
  Fitter fitter{MemoFitter(sizes, guards), pts};

  CodegenOptions co;
  co.decide = &pr.partition;
  const IndexWidth width = chooseIndexWidth(pr.partition, symbols, wideIndex);
  co.wide = width.wide;
  // The probes are independent: code for each on `jobs` threads, from the
  // pipeline's own graphs at the probes where it kept them (the unified
  // graphs instantiated there are the same graphs).
  std::vector<ProbeResult> made(kept ? 0 : pts.size());
  const std::vector<ProbeResult>& probes = kept ? *kept : made;
  std::vector<CodegenResult> cgs(pts.size());
  parallelFor(pts.size(), jobs, [&](size_t i) {
    if (!kept) {
      made[i].functional = instantiate(pr.functional, pts[i]);
      made[i].partition = Partition{instantiate(pr.partition.forward, pts[i]), instantiate(pr.partition.backward, pts[i]), pr.partition.saved};
    }
    cgs[i] = generateCuda(probes[i].partition, co);
  });

  // Kernels: the probes' kernels at one step are one kernel.
  DynamicCodegen r;
  std::map<std::vector<std::string>, std::pair<std::string, std::vector<std::string>>> unified;  // probe names -> name, symbols
  for (int prog = 0; prog < 2; ++prog) {
    auto steps = [&](CodegenResult& c) -> std::vector<plan::Step>& { return prog ? c.backward.steps : c.forward.steps; };
    const std::string which = prog ? "backward" : "forward";
    for (size_t p = 1; p < cgs.size(); ++p)
      if (steps(cgs[p]).size() != steps(cgs[0]).size())
        throw UserError(SourceLoc{"", which, "dynamic shapes"}, cat("the ", which, " has ", steps(cgs[0]).size(), " steps at ", bindingText(pts[0]), " and ",
                                                                   steps(cgs[p]).size(), " at ", bindingText(pts[p])));
    for (size_t i = 0; i < steps(cgs[0]).size(); ++i) {
      if (!std::holds_alternative<plan::Launch>(steps(cgs[0])[i])) continue;
      std::vector<std::string> key;
      for (CodegenResult& c : cgs) {
        const plan::Launch* l = std::get_if<plan::Launch>(&steps(c)[i]);
        if (!l) throw UserError(SourceLoc{"", which, "dynamic shapes"}, cat("step ", i, " of the ", which, " is a launch at some sizes only"));
        key.push_back(l->kernel);
      }
      auto it = unified.find(key);
      if (it == unified.end()) {
        std::vector<std::string> texts;
        for (size_t p = 0; p < cgs.size(); ++p) {
          std::string t = cgs[p].kernels.at(key[p]).source;
          for (size_t q; (q = t.find(key[p])) != std::string::npos;) t.replace(q, key[p].size(), "@KERNEL@");
          texts.push_back(std::move(t));
        }
        const KernelSource& k0 = cgs[0].kernels.at(key[0]);
        std::string who;
        for (size_t n = 0; n < k0.nodes.size() && n < 3; ++n) who += (n ? ", " : "") + k0.nodes[n];
        UnifiedKernel uk = unifyKernelText(texts, fitter, who, co.wide);
        std::string name = "k_" + sha256Hex(uk.text).substr(0, 16);
        for (size_t q; (q = uk.text.find("@KERNEL@")) != std::string::npos;) uk.text.replace(q, 8, name);
        KernelSource& ks = r.cg.kernels[name];
        ks.name = name;
        ks.source = uk.text;
        for (const std::string& n : k0.nodes)
          if (std::find(ks.nodes.begin(), ks.nodes.end(), n) == ks.nodes.end()) ks.nodes.push_back(n);
        it = unified.emplace(key, std::make_pair(name, uk.symbols)).first;
      }
      for (size_t p = 0; p < cgs.size(); ++p) {
        plan::Launch& l = std::get<plan::Launch>(steps(cgs[p])[i]);
        l.kernel = it->second.first;
        l.scalars.clear();
        for (const std::string& s : it->second.second) l.scalars.push_back(pts[p].at(s));
      }
    }
  }
  for (CodegenResult& c : cgs) c.kernels = r.cg.kernels;
  r.modules = groupKernels(r.cg.kernels, perModule);

  // The manifests at the probes, unified.
  std::vector<plan::Manifest> ms(pts.size());
  std::vector<ojson> js(pts.size());
  parallelFor(pts.size(), jobs, [&](size_t p) {
    ms[p] = buildManifest(probes[p].functional, probes[p].partition, cgs[p], r.modules, info);
    ojson j = plan::toJson(ms[p]);
    for (int prog = 0; prog < 2; ++prog) {
      ojson& pj = j[prog ? "backward" : "forward"];
      const auto& grids = prog ? cgs[p].backwardGrids : cgs[p].forwardGrids;
      for (size_t i = 0; i < pj["steps"].size(); ++i)
        if (pj["steps"][i]["op"] == "launch") pj["steps"][i]["grid"][0] = ojson{{"threads", grids.at(i).first}, {"per", grids.at(i).second}};
      // Arenas are planned where the sizes are bound (Note [Symbolic manifest]).
      pj["arena_bytes"] = pj["alloc_bytes_unplanned"];
      for (ojson& b : pj["buffers"])
        if (b["kind"] == "alloc") b["arena_offset"] = 0;
    }
    js[p] = std::move(j);
  });
  std::vector<const ojson*> jp;
  for (const ojson& j : js) jp.push_back(&j);
  ojson body = unifyJson(jp, fitter, JsonPath{});
  ojson t = ojson::object();
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (it.key() == "version") {
      t["version"] = plan::kSymbolicManifestVersion;
      ojson syms = ojson::array();
      for (const SymbolDecl& s : symbols) syms.push_back({{"name", s.name}, {"hint", s.hint}, {"min", s.min}, {"max", s.max}});
      t["symbols"] = syms;
      ojson gs = ojson::array();
      for (const SizeGuard& g : guards) gs.push_back({{"expr", g.expr.str()}, {"divisible_by", g.divisor}, {"where", g.where}});
      t["guards"] = gs;
      // Size scalars' denominators (Note [Size scalars]) must not be zero.
      ojson nz = ojson::array();
      std::set<std::string> seen;
      for (const Graph* g : {&pr.partition.forward, &pr.partition.backward})
        for (const Node& n : g->nodes) {
          auto it = n.symAttrs.find("size_den");
          if (n.op != OpKind::Constant || it == n.symAttrs.end() || it->second.empty() || it->second[0].isConstant()) continue;
          if (seen.insert(it->second[0].str()).second)
            nz.push_back({{"expr", it->second[0].str()}, {"where", "the size scalar of " + (n.loc.node.empty() ? std::string("a constant") : n.loc.node)}});
        }
      if (!nz.empty()) t["nonzero"] = nz;
      if (!width.limits.empty()) {
        ojson ls = ojson::array();
        for (const plan::SymbolicManifest::Limit& l : width.limits)
          ls.push_back({{"expr", l.expr.str()}, {"at_most", l.at_most}, {"where", l.where}});
        t["limits"] = ls;
      }
      continue;
    }
    t[it.key()] = it.value();
  }
  r.manifest = std::move(t);

  // The template, read back as a runtime reads it, reproduces the manifests
  // at the hints and at the check point: every integer was fitted exactly at
  // every probe by construction; this checks what is not (the grids'
  // formula, arenas planned by the runtime, the reader) at two bindings
  // rather than all of them (a third of the dynamic codegen's time).
  const std::shared_ptr<const plan::SymbolicManifest> parsed = plan::symbolicManifestFromJson(nlohmann::json::parse(r.manifest.dump()), "manifest.json");
  const std::vector<size_t> checked{0, pts.size() - 1};
  parallelFor(checked.size(), jobs, [&](size_t c) {
    const size_t p = checked[c];
    plan::Manifest back = plan::instantiateManifest(parsed, pts[p], "manifest.json", int64_t{1} << 40);
    plan::Manifest want = ms[p];
    back.symbolic = nullptr;
    back.binding.clear();
    back.flags = want.flags;
    back.arguments = want.arguments;
    AOTC_CHECK(back == want, "the dynamic manifest does not reproduce the probe at ", bindingText(pts[p]));
  });
  r.atHint = std::move(ms[0]);
  r.cg.forward = r.atHint.forward;
  r.cg.backward = r.atHint.backward;
  return r;
}

}  // namespace

DynamicCodegen generateDynamic(const PipelineResult& pr, const ManifestInfo& info, size_t perModule, unsigned jobs, bool wideIndex) {
  std::vector<SymbolDecl> symbols = pr.functional.symbols;
  AOTC_CHECK(!symbols.empty(), "generateDynamic on a static program");
  // Note [Probe degree]: at the pipeline's probes (the degrees it found),
  // and where anything fails again at full degree, as if never lowered.
  const std::vector<ProbeResult>* kept = pr.probes.size() == probeBindings(symbols).size() ? &pr.probes : nullptr;
  for (;;) {
    try {
      return generateAt(pr, symbols, kept, info, perModule, jobs, wideIndex);
    } catch (const UserError&) {
      if (!fullDegree(symbols)) throw;
      kept = nullptr;
    }
  }
}

}  // namespace aotc
