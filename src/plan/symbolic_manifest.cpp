//===- symbolic_manifest.cpp - A dynamic-shape manifest, bound and instantiated ===//
//
// Note [Symbolic manifest] (plan.h): a version-11 manifest's declarations
// (symbols, guards, nonzero expressions, limits) are read and checked here;
// binding the symbols from input shapes, and instantiating the template at a
// binding (every {"sym": EXPR} evaluated, then read by the static reader of
// plan.cpp and its arenas planned, arena.cpp), are the runtime's half.
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "aotc/ir/unify.h"
#include "aotc/plan/plan.h"
#include "aotc/support/diag.h"
#include "plan/internal.h"

namespace aotc::plan {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

namespace {

/// The symbolic manifest's declarations, checked (Note [Symbolic manifest]).
std::shared_ptr<SymbolicManifest> symbolicFromJson(const json& j, const std::string& file) {
  auto fail = [&](const std::string& field, const std::string& msg) {
    throw UserError(SourceLoc{file, field, ""}, "malformed manifest: " + msg);
  };
  auto s = std::make_shared<SymbolicManifest>();
  s->templ = ojson::parse(j.dump());
  if (!j.contains("symbols") || !j["symbols"].is_array() || j["symbols"].empty()) fail("symbols", "a dynamic-shape manifest (version 11) declares its symbols");
  for (size_t i = 0; i < j["symbols"].size(); ++i) {
    const json& d = j["symbols"][i];
    const std::string f = cat("symbols[", i, "]");
    auto num = [&](const char* k) {
      if (!d.is_object() || !d.contains(k) || !d[k].is_number_integer() || d[k].get<int64_t>() < 0) fail(f + "." + k, "missing or not a size");
      return d[k].get<int64_t>();
    };
    if (!d.is_object() || !d.contains("name") || !d["name"].is_string()) fail(f + ".name", "missing or not a string");
    SymbolDecl sd{d["name"].get<std::string>(), num("hint"), num("min"), num("max")};
    if (std::string e = declareSymbol(s->symbols, sd); !e.empty()) fail(f, e);
  }
  // A guard's or nonzero entry's "expr", parsed.
  auto expr = [&](const json& g, const std::string& f) {
    if (!g.is_object() || !g.contains("expr") || !g["expr"].is_string()) fail(f + ".expr", "missing or not a string");
    try {
      return sym::Expr::parse(g["expr"].get<std::string>());
    } catch (const std::exception& e) {
      fail(f + ".expr", e.what());
    }
    return sym::Expr();
  };
  if (j.contains("guards")) {
    if (!j["guards"].is_array()) fail("guards", "not an array");
    for (size_t i = 0; i < j["guards"].size(); ++i) {
      const json& g = j["guards"][i];
      const std::string f = cat("guards[", i, "]");
      SizeGuard sg;
      sg.expr = expr(g, f);
      if (!g.contains("divisible_by") || !g["divisible_by"].is_number_integer() || g["divisible_by"].get<int64_t>() < 1)
        fail(f + ".divisible_by", "missing or not a positive integer");
      sg.divisor = g["divisible_by"].get<int64_t>();
      if (g.contains("where") && g["where"].is_string()) sg.where = g["where"].get<std::string>();
      s->guards.push_back(std::move(sg));
    }
  }
  if (j.contains("nonzero")) {
    if (!j["nonzero"].is_array()) fail("nonzero", "not an array");
    for (size_t i = 0; i < j["nonzero"].size(); ++i) {
      const json& g = j["nonzero"][i];
      const std::string f = cat("nonzero[", i, "]");
      s->nonzero.push_back({expr(g, f), g.value("where", std::string())});
    }
  }
  if (j.contains("limits")) {
    if (!j["limits"].is_array()) fail("limits", "not an array");
    for (size_t i = 0; i < j["limits"].size(); ++i) {
      const json& g = j["limits"][i];
      const std::string f = cat("limits[", i, "]");
      SymbolicManifest::Limit l;
      l.expr = expr(g, f);
      if (!g.contains("at_most") || !g["at_most"].is_number_integer() || g["at_most"].get<int64_t>() < 1)
        fail(f + ".at_most", "missing or not a positive integer");
      l.at_most = g["at_most"].get<int64_t>();
      l.where = g.value("where", std::string());
      s->limits.push_back(std::move(l));
    }
  }
  // Every {"sym": EXPR}, parsed once; a malformed one names its field.
  std::function<void(const ojson&, const JsonPath&)> collect = [&](const ojson& t, const JsonPath& at) {
    if (t.is_object()) {
      if (t.size() == 1 && t.contains("sym")) {
        if (!t["sym"].is_string()) fail(at.str(), "a sym entry is not a string");
        const std::string& text = t["sym"].get_ref<const std::string&>();
        if (s->exprs.count(text)) return;
        try {
          s->exprs.emplace(text, sym::Expr::parse(text));
        } catch (const std::exception& x) {
          fail(at.str(), x.what());
        }
        return;
      }
      for (auto it = t.begin(); it != t.end(); ++it) collect(it.value(), JsonPath{&at, &it.key(), 0});
    } else if (t.is_array()) {
      for (size_t i = 0; i < t.size(); ++i) collect(t[i], JsonPath{&at, nullptr, i});
    }
  };
  collect(s->templ, JsonPath{});
  return s;
}

/// Whether a limit holds at `b` (an expression that overflows does not).
bool withinLimit(const SymbolicManifest::Limit& l, const sym::Bindings& b) {
  try {
    return l.expr.eval(b) <= l.at_most;
  } catch (const std::exception&) {
    return false;
  }
}

/// `t` with every {"sym": EXPR} replaced by its value in `values` (each
/// distinct expression of the template evaluated once per binding).
json substitute(const ojson& t, const std::map<std::string, int64_t>& values) {
  if (t.is_object()) {
    if (t.size() == 1 && t.contains("sym")) {
      // As the JSON parser stores it: a non-negative integer is unsigned.
      const int64_t v = values.at(t["sym"].get_ref<const std::string&>());
      return v >= 0 ? json(static_cast<uint64_t>(v)) : json(v);
    }
    json r = json::object();
    for (auto it = t.begin(); it != t.end(); ++it) r[it.key()] = substitute(it.value(), values);
    return r;
  }
  if (t.is_array()) {
    json r = json::array();
    for (const ojson& x : t) r.push_back(substitute(x, values));
    return r;
  }
  return json(t);
}

/// The value of each of the template's expressions at `b`.
std::map<std::string, int64_t> evaluateAll(const SymbolicManifest& s, const sym::Bindings& b, const std::string& file) {
  std::map<std::string, int64_t> values;
  for (const auto& [text, e] : s.exprs) {
    try {
      values.emplace_hint(values.end(), text, e.eval(b));
    } catch (const std::exception& x) {
      throw UserError(SourceLoc{file, "", ""}, "cannot evaluate " + text + " at " + bindingText(b) + ": " + x.what());
    }
  }
  return values;
}

}  // namespace

sym::Bindings hintBinding(const SymbolicManifest& s) {
  sym::Bindings b;
  for (const SymbolDecl& d : s.symbols) b[d.name] = d.hint;
  return b;
}

sym::Bindings bindSymbols(const SymbolicManifest& s, const std::map<std::string, Ints>& shapes, const std::string& file,
                          const sym::Bindings* defaults) {
  sym::Bindings b;
  std::map<std::string, std::pair<std::string, size_t>> from;  // symbol -> the input and dim that bound it
  const ojson& inputs = s.templ.at("inputs");
  for (const ojson& in : inputs) {
    const std::string name = in.at("name").get<std::string>();
    auto it = shapes.find(name);
    if (it == shapes.end()) continue;
    const ojson& dims = in.at("shape");
    if (dims.size() != it->second.size()) continue;  // the shape check names it
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!dims[d].is_object()) continue;
      std::optional<std::string> sname = s.exprs.at(dims[d].at("sym").get<std::string>()).symbolName();
      if (!sname) continue;
      const int64_t v = it->second[d];
      auto bt = b.find(*sname);
      if (bt != b.end() && bt->second != v)
        throw UserError(SourceLoc{file, name, "input"}, cat("dim ", d, " is ", v, ", but ", *sname, " = ", bt->second, " from input '",
                                                         from[*sname].first, "' dim ", from[*sname].second));
      b[*sname] = v;
      from[*sname] = {name, d};
    }
  }
  auto where = [&](const std::string& symbol) {
    auto f = from.find(symbol);
    return f == from.end() ? std::string() : f->second.first;
  };
  auto dimText = [&](const std::string& symbol) {
    auto f = from.find(symbol);
    if (f == from.end()) return cat(symbol, " = ", b[symbol]);
    return cat("dim ", f->second.second, " is ", b[symbol], " (", symbol, ")");
  };
  for (const SymbolDecl& d : s.symbols) {
    auto it = b.find(d.name);
    if (it == b.end() && defaults && defaults->count(d.name)) it = b.emplace(d.name, defaults->at(d.name)).first;
    if (it == b.end())
      throw UserError(SourceLoc{file, d.name, "symbol"}, "no input given binds this dynamic dim (give the inputs whose shapes use it)");
    if (it->second < d.min || it->second > d.max)
      throw UserError(SourceLoc{file, where(d.name), "input"}, cat(dimText(d.name), ", outside the range the artifact takes: [", d.min, ", ", d.max, "]"));
  }
  // A broken guard names the input and dim that bound each of its symbols.
  auto refuse = [&](const sym::Expr& e, const std::string& what) {
    std::string who, node;
    for (const std::string& n : e.symbols()) {
      if (node.empty()) node = where(n);
      who += (who.empty() ? "" : ", ") + (where(n) == node ? dimText(n) : "input '" + where(n) + "' " + dimText(n));
    }
    throw UserError(SourceLoc{file, node, "input"}, who + ", which " + what);
  };
  for (const SizeGuard& g : s.guards)
    if (g.expr.eval(b) % g.divisor != 0)
      refuse(g.expr, cat("breaks the guard ", g.expr.str(), " % ", g.divisor, " == 0 the artifact was compiled under",
                         g.where.empty() ? "" : " (needed by " + g.where + ")"));
  for (const auto& [e, why] : s.nonzero)
    if (e.eval(b) == 0) refuse(e, cat("makes ", e.str(), " zero, and the artifact divides by it", why.empty() ? "" : " (" + why + ")"));
  for (const SymbolicManifest::Limit& l : s.limits)
    if (!withinLimit(l, b))
      refuse(l.expr, cat("makes ", l.where.empty() ? l.expr.str() : l.where, " span more than ", l.at_most,
                         " elements, beyond what this artifact's 32-bit indices reach (", l.expr.str(), " <= ", l.at_most,
                         "; compile with --wide-index for 64-bit indices)"));
  // Every dim of every given input is now known: compare (only the given
  // inputs' dims are evaluated here; instantiateManifest evaluates the rest).
  for (const ojson& in : inputs) {
    const std::string name = in.at("name").get<std::string>();
    auto it = shapes.find(name);
    if (it == shapes.end()) continue;
    const ojson& dims = in.at("shape");
    if (dims.size() != it->second.size()) continue;
    for (size_t d = 0; d < dims.size(); ++d) {
      const bool symbolic = dims[d].is_object();
      const int64_t want = symbolic ? s.exprs.at(dims[d].at("sym").get<std::string>()).eval(b) : dims[d].get<int64_t>();
      if (want != it->second[d])
        throw UserError(SourceLoc{file, name, "input"}, cat("dim ", d, " is ", it->second[d], ", expected ",
                                                         symbolic ? dims[d]["sym"].get<std::string>() + " = " : "", want, " at ", bindingText(b)));
    }
  }
  return b;
}

Manifest instantiateManifest(const std::shared_ptr<const SymbolicManifest>& s, const sym::Bindings& b, const std::string& file,
                             int64_t maxElements) {
  for (const SizeGuard& g : s->guards)
    if (g.expr.eval(b) % g.divisor != 0)
      throw UserError(SourceLoc{file, "", ""}, cat("guard ", g.expr.str(), " % ", g.divisor, " == 0 fails at ", bindingText(b)));
  for (const auto& [e, why] : s->nonzero)
    if (e.eval(b) == 0) throw UserError(SourceLoc{file, "", ""}, cat(e.str(), " is zero at ", bindingText(b), " and the artifact divides by it"));
  for (const SymbolicManifest::Limit& l : s->limits)
    if (!withinLimit(l, b)) throw UserError(SourceLoc{file, "", ""}, cat(l.expr.str(), " exceeds ", l.at_most, " at ", bindingText(b), " (", l.where, ")"));
  json j = substitute(s->templ, evaluateAll(*s, b, file));
  j["version"] = kManifestVersion;
  j.erase("symbols");
  j.erase("guards");
  j.erase("nonzero");
  j.erase("limits");
  Manifest m;
  try {
    m = readStaticManifest(j, file, maxElements);
  } catch (const json::exception& e) {
    throw UserError(SourceLoc{file, "", ""}, std::string("malformed manifest: ") + e.what());
  }
  planArena(m.forward);
  planArena(m.backward);
  m.symbolic = s;
  m.binding = b;
  return m;
}

std::shared_ptr<const SymbolicManifest> symbolicManifestFromJson(const json& j, const std::string& file) {
  try {
    return symbolicFromJson(j, file);
  } catch (const json::exception& e) {
    throw UserError(SourceLoc{file, "", ""}, std::string("malformed manifest: ") + e.what());
  }
}

}  // namespace aotc::plan
