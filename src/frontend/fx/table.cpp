//===- fx/table.cpp - The FX spellings, joined and derived ------------------===//
//
// converters() joins the family tables (Note [FX converter tables]) and the
// pointwise rows' ATen names into one map, checking that no spelling is given
// twice; convertTarget looks a node's target up in it, or derives the
// in-place, out=, *_copy and _foreach forms (Note [Generic spellings]).
//
// When fx.cpp (3,584 lines) became these files (issue 35), the artifacts were
// checked byte for byte against the build before (scripts/compare_builds.py):
// 170 FX fixtures identical, 0 differ; scripts/op_coverage's table unchanged
// (190/192 accepted, 2 refused by design).  The largest file of the room is
// loader.cpp (699 lines); scripts/check_layering.py keeps each under 800.
// When the long decompositions (index_put, embedding_bag, grid_sampler,
// advanced indexing, convolution) moved to src/ops/decompose_{gathers,
// windows}.cpp and the driver began to refuse unread arguments (Note [No
// argument dropped]), compare_builds.py again found 174 FX fixtures identical
// and 0 differ, ONNX 6 identical and 18 refused alike; op_coverage unchanged.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

namespace {

/// The table below plus the spellings the elementwise ops' rows give (Note
/// [Pointwise rows]): `self` for a unary op, `self, other` for a binary one.
std::map<std::string, ConvertFn> withPointwiseRows(std::map<std::string, ConvertFn> table) {
  for (const PointwiseRule& r : pointwiseRules())
    for (const char* spelling : r.aten) {
      if (!spelling) continue;
      OpKind k = r.op;
      ConvertFn f = opInfo(k).arity == 1 ? ConvertFn([k](Converter& c) { return unary(c, k); })
                                         : ConvertFn([k](Converter& c) { return binary(c, k); });
      AOTC_CHECK(table.emplace(spelling, std::move(f)).second, "fx: ", spelling, " is spelled twice");
    }
  return table;
}

}  // namespace

const Table& converters() {
  static const Table table = [] {
    Table t;
    for (Entries (*family)() : {&pointwiseConverters, &reductionsConverters, &viewsConverters, &creationConverters, &gathersConverters, &windowsConverters, &linalgConverters, &normalizationConverters, &attentionConverters, &lossesConverters, &randomConverters, &samplingConverters, &controlConverters, &trainingConverters, &compositesConverters})
      for (auto& [spelling, fn] : family())
        AOTC_CHECK(t.emplace(spelling, std::move(fn)).second, "fx: ", spelling, " is spelled twice");
    return withPointwiseRows(std::move(t));
  }();
  return table;
}

// Note [Generic spellings]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Three families of ATen spellings are derived from the functional op rather
// than listed one by one (issue 12):
//  * in-place `aten.op_.ov` is `aten.op.ov` plus copy_ into self (with ATen's
//    in-place casting rule: a floating result cannot go into an integer self,
//    and the result must have self's shape);
//  * `out=` overloads (`aten.op.out`, `aten.op.ov_out`) are the functional
//    form plus copy_ into `out` (out must already have the result's shape:
//    resizing `out` is refused);
//  * `aten.view_op_copy.ov` (functionalized traces: view_copy, expand_copy,
//    permute_copy, ...) is the view op followed by a copy (clone);
//  * `aten._foreach_op[_].ov` unrolls into the per-tensor op, element by
//    element of its list arguments (`List` -> `.Tensor`, `Scalar`/`ScalarList`
//    -> `.Scalar`).
// An op with its own entry in the table (t_, squeeze_, copy_, ...) is never
// derived.
namespace spelling {

std::optional<Parsed> parse(const std::string& target) {
  size_t dot = target.rfind('.');
  if (target.rfind("aten.", 0) != 0 || dot == std::string::npos || dot <= 5) return std::nullopt;
  return Parsed{target.substr(0, dot), target.substr(dot + 1)};
}
bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
/// The functional spelling an in-place target derives from, if any.
std::optional<std::string> inplaceBase(const std::string& target) {
  auto p = parse(target);
  if (!p || !endsWith(p->name, "_") || p->name.rfind("aten._foreach_", 0) == 0) return std::nullopt;
  std::string f = p->name.substr(0, p->name.size() - 1) + "." + p->overload;
  if (converters().count(f)) return f;
  return std::nullopt;
}
/// The functional spelling an out= target derives from, if any.
std::optional<std::string> outBase(const std::string& target) {
  auto p = parse(target);
  if (!p) return std::nullopt;
  std::vector<std::string> cands;
  if (p->overload == "out") cands = {p->name + ".default", p->name + ".Tensor"};
  else if (endsWith(p->overload, "_out")) cands = {p->name + "." + p->overload.substr(0, p->overload.size() - 4)};
  for (const std::string& f : cands)
    if (converters().count(f)) return f;
  return std::nullopt;
}
/// The view op a `*_copy` target copies, if any.
std::optional<std::string> copyBase(const std::string& target) {
  auto p = parse(target);
  if (!p || !endsWith(p->name, "_copy")) return std::nullopt;
  std::string f = p->name.substr(0, p->name.size() - 5) + "." + p->overload;
  if (converters().count(f)) return f;
  return std::nullopt;
}
/// The per-element spellings of a _foreach target (first that converts wins).
std::vector<std::string> foreachElement(const std::string& target) {
  auto p = parse(target);
  if (!p || p->name.rfind("aten._foreach_", 0) != 0) return {};
  std::string op = "aten." + p->name.substr(std::string("aten._foreach_").size());
  if (p->overload == "List") return {op + ".Tensor"};
  if (p->overload == "Scalar" || p->overload == "ScalarList") return {op + ".Scalar", op + ".Tensor"};
  if (p->overload == "Tensor") return {op + ".Tensor"};
  return {op + "." + p->overload};
}

}  // namespace spelling

// Note [Shape computations]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// `aten.sym_size.int`, `sym_stride.int`, `sym_numel`, `sym_storage_offset`
// and `sym_is_contiguous` (and Python integer arithmetic on their results,
// `_operator.add` ...) compute a number, not a tensor.  With static shapes
// each is known when the graph is read: convertBody evaluates it and puts the
// literal in place of every later reference to it, so `view(x, [s0, -1])`
// reads `view(x, [4, -1])`.  Strides, storage offset and contiguity are
// PyTorch's as the graph recorded them (`meta.stride`) when it did, else the
// IR's layout of the value.
bool isShapeComputation(const std::string& target) {
  static const std::set<std::string> k{"aten.sym_size.int", "aten.sym_stride.int", "aten.sym_numel.default",
                                       "aten.sym_storage_offset.default", "aten.sym_is_contiguous.default",
                                       "_operator.add", "_operator.sub", "_operator.mul", "_operator.floordiv",
                                       "_operator.mod", "_operator.neg", "_operator.eq", "_operator.ne",
                                       "_operator.lt", "_operator.le", "_operator.gt", "_operator.ge"};
  return k.count(target) > 0;
}

bool knownTarget(const std::string& target, int depth) {
  if (converters().count(target) || isShapeComputation(target) || complexTarget(target)) return true;
  if (depth > 2) return false;
  if (spelling::inplaceBase(target) || spelling::outBase(target) || spelling::copyBase(target)) return true;
  for (const std::string& e : spelling::foreachElement(target))
    if (knownTarget(e, depth + 1)) return true;
  return false;
}

/// copy_ of `result` into `dst` for a derived in-place or out= spelling.
V copyInto(Converter& c, ValueId dst, ValueId result, const char* what) {
  const TensorType d = c.type(dst);
  const TensorType r = c.type(result);
  if (r.sizes != d.sizes)
    c.fail(cat(what, ": the result ", TensorType::contiguous(r.dtype, r.sizes).str(), " does not have the shape of ",
               TensorType::contiguous(d.dtype, d.sizes).str(), what[0] == 'o' ? " (resizing out= is not supported)" : ""));
  if (r.dtype != d.dtype) {
    if (isFloating(r.dtype) && !isFloating(d.dtype))
      c.fail(cat(what, ": result type ", dtypeName(r.dtype), " can't be cast to the desired output type ", dtypeName(d.dtype)));
    result = c.op(OpKind::Cast, {result}, Attrs{{"dtype", std::string(dtypeName(d.dtype))}});
  }
  return {c.op(OpKind::CopyInplace, {dst, result})};
}

// Note [No argument dropped]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A converter computes as if every argument it does not read were at its
// default, so an argument it skips that is not at its default would be a
// wrong answer without an error (_softmax's half_to_float, embedding's
// padding_idx, ...).  The Converter records every argument its readers touch
// (Converter::arg; Converter::ignore declares one that cannot change what
// aotc computes), and after the converter returns, the table driver
// (convertTarget, for listed, complex and derived spellings alike) looks at
// each argument the node gives: one neither read nor ignored passes only if
// it is None or equal to its default in the spelling's ATen schema
// (schemas.inc, scripts/fx_schemas.py), and is otherwise refused by name:
//   node 'e' (aten.embedding.default): error: argument 'padding_idx' (0) is
//   not at its default (-1), and aotc's converter does not read it
// The check is the driver's, not the converter's: a converter cannot skip it,
// and one that reads its node directly (not through arg()) has its arguments
// refused until it reads them properly.  A converter that converts a
// rewritten copy of its node hands the check to the copy (delegatedTo).
// frontend_completeness_test checks that every spelling has a schema.
namespace {

bool sameValue(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!sameValue(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

}  // namespace

void checkArgumentsRead(const Converter& c, const std::string& spelling) {
  if (c.allRead()) return;
  const Schema* schema = atenSchema(spelling);
  auto check = [&](const SchemaArg* a, const std::string& name, const json& v) {
    json dflt = a && a->dflt ? json::parse(a->dflt) : json();
    if (v.is_null() && (!a || !a->dflt || dflt.is_null())) return;  // None: not given
    if (a && a->dflt && sameValue(v, dflt)) return;
    std::string what = cat("argument '", name, "' (", v.dump(), ")");
    if (!schema) c.fail(cat(what, " is not read by aotc's converter (no ATen schema is known for ", spelling, ")"));
    if (!a) c.fail(cat(what, " is not an argument of ", spelling, " (PyTorch ", schema->torch, ")"));
    if (!a->dflt) c.fail(cat(what, " is not read by aotc's converter"));
    c.fail(cat(what, " is not at its default (", dflt.dump(), "), and aotc's converter does not read it"));
  };
  const json& args = c.node().at("args");
  for (size_t i = 0; i < args.size(); ++i) {
    if (c.readPositions().count(i)) continue;
    const SchemaArg* a = schema && i < schema->args.size() ? &schema->args[i] : nullptr;
    check(a, a ? std::string(a->name) : cat("#", i), args[i]);
  }
  if (!c.node().contains("kwargs")) return;
  for (const auto& [k, v] : c.node()["kwargs"].items()) {
    if (c.readKeywords().count(k)) continue;
    const SchemaArg* a = nullptr;
    if (schema)
      for (const SchemaArg& x : schema->args)
        if (k == x.name) a = &x;
    check(a, k, v);
  }
}

void Converter::delegatedTo(const Converter& inner, const std::string& spelling) const {
  checkArgumentsRead(inner, spelling);
  allRead_ = true;
}

V convertTarget(Converter& c, const std::string& target, int depth) {
  if (std::optional<V> r = convertComplex(c, target)) {
    checkArgumentsRead(c, target);
    return *r;
  }
  auto it = converters().find(target);
  if (it != converters().end()) {
    V r = it->second(c);
    checkArgumentsRead(c, target);
    return r;
  }
  if (auto f = spelling::inplaceBase(target)) {
    V r = converters().at(*f)(c);
    if (r.size() != 1) c.fail("in-place form of a multi-result op");
    V out = copyInto(c, c.tensor(0, "self"), r[0], "in-place op");
    checkArgumentsRead(c, *f);
    return out;
  }
  if (auto f = spelling::copyBase(target)) {
    V r = converters().at(*f)(c);
    for (ValueId& v : r) v = c.op(OpKind::Clone, {v});
    checkArgumentsRead(c, *f);
    return r;
  }
  if (auto f = spelling::outBase(target)) {
    V r = converters().at(*f)(c);
    if (r.size() != 1) c.fail("out= form of a multi-result op is not supported");
    if (!c.isTensor(SIZE_MAX, "out")) c.fail("out= overload without an `out` tensor");
    V out = copyInto(c, c.tensor(SIZE_MAX, "out"), r[0], "out=");
    checkArgumentsRead(c, *f);
    return out;
  }
  std::vector<std::string> elems = spelling::foreachElement(target);
  if (!elems.empty() && depth < 2) {
    const json& node = c.node();
    size_t n = SIZE_MAX;
    auto scan = [&](const json& a) {
      if (a.is_array() && (n == SIZE_MAX || a.size() == n)) n = a.size();
      else if (a.is_array()) c.fail("_foreach: list arguments have different lengths");
    };
    for (const json& a : node["args"]) scan(a);
    if (node.contains("kwargs"))
      for (const auto& [k, a] : node["kwargs"].items()) scan(a);
    if (n == SIZE_MAX) c.fail("_foreach op without a list argument");
    std::string elem;
    for (const std::string& e : elems)
      if (knownTarget(e, depth + 1)) {
        elem = e;
        break;
      }
    if (elem.empty()) c.fail("no per-tensor op for " + target);
    bool inplace = spelling::parse(target)->name.back() == '_';
    V out;
    for (size_t i = 0; i < n; ++i) {
      json e = node;
      e["target"] = elem;
      for (json& a : e["args"])
        if (a.is_array()) a = json(a[i]);
      if (e.contains("kwargs"))
        for (auto& [k, a] : e["kwargs"].items())
          if (a.is_array()) a = json(a[i]);
      Converter ce = c.sub(e);
      V r = convertTarget(ce, elem, depth + 1);
      if (!inplace) out.insert(out.end(), r.begin(), r.end());
    }
    return out;
  }
  c.fail("unsupported op " + target);
}

}  // namespace aotc::fx
