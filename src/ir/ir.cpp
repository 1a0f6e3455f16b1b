//===- ir.cpp - Types, values and graphs ---------------------------------===//
#include "aotc/ir/ir.h"

#include <string_view>
#include <unordered_map>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstdio>


namespace aotc {

namespace {
struct DTypeNames {
  DType d;
  const char* ir;
  const char* torch;
  const char* st;
  int64_t size;
  bool floating;
};
constexpr std::array<DTypeNames, 13> kDTypes = {{
    {DType::F32, "f32", "float32", "F32", 4, true},
    {DType::F64, "f64", "float64", "F64", 8, true},
    {DType::F16, "f16", "float16", "F16", 2, true},
    {DType::BF16, "bf16", "bfloat16", "BF16", 2, true},
    {DType::I64, "i64", "int64", "I64", 8, false},
    {DType::I32, "i32", "int32", "I32", 4, false},
    {DType::Bool, "bool", "bool", "BOOL", 1, false},
    {DType::I8, "i8", "int8", "I8", 1, false},
    {DType::I16, "i16", "int16", "I16", 2, false},
    {DType::U8, "u8", "uint8", "U8", 1, false},
    {DType::U16, "u16", "uint16", "U16", 2, false},
    {DType::U32, "u32", "uint32", "U32", 4, false},
    {DType::U64, "u64", "uint64", "U64", 8, false},
}};
const DTypeNames& dt(DType d) { return kDTypes[static_cast<size_t>(d)]; }
}  // namespace

const char* dtypeName(DType d) { return dt(d).ir; }
const char* dtypeTorchName(DType d) { return dt(d).torch; }
const char* dtypeSafetensorsName(DType d) { return dt(d).st; }
int64_t dtypeSize(DType d) { return dt(d).size; }
bool isFloating(DType d) { return dt(d).floating; }
bool isUnsigned(DType d) { return d == DType::U8 || d == DType::U16 || d == DType::U32 || d == DType::U64; }

std::optional<DType> parseDType(const std::string& s) {
  for (auto& e : kDTypes)
    if (s == e.ir) return e.d;
  return std::nullopt;
}
std::optional<DType> dtypeFromTorchName(const std::string& s) {
  for (auto& e : kDTypes)
    if (s == e.torch) return e.d;
  return std::nullopt;
}
std::optional<DType> dtypeFromSafetensorsName(const std::string& s) {
  for (auto& e : kDTypes)
    if (s == e.st) return e.d;
  return std::nullopt;
}

bool validName(const std::string& s) {
  if (s.empty() || s.size() > 256) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) return false;
  return true;
}

int64_t mulSize(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || r > (int64_t{1} << 62) || r < -(int64_t{1} << 62))
    throw UserError(SourceLoc{}, cat("size arithmetic overflows: ", a, " * ", b));
  return r;
}

int64_t addSize(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r) || r > (int64_t{1} << 62) || r < -(int64_t{1} << 62))
    throw UserError(SourceLoc{}, cat("size arithmetic overflows: ", a, " + ", b));
  return r;
}

Ints TensorType::contiguousStrides(const Ints& sizes) {
  Ints st(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = s;
    s = mulSize(s, std::max<int64_t>(sizes[i], 1));
  }
  return st;
}

TensorType TensorType::contiguous(DType d, Ints sizes) {
  TensorType t;
  t.dtype = d;
  t.strides = contiguousStrides(sizes);
  t.sizes = std::move(sizes);
  return t;
}

int64_t TensorType::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n = mulSize(n, s);
  return n;
}

bool TensorType::isContiguous() const {
  if (offset != 0) return false;
  int64_t expect = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] != 1 && strides[i] != expect) return false;
    expect = mulSize(expect, sizes[i]);
  }
  return true;
}

int64_t TensorType::storageSpan() const {
  if (numel() == 0) return 0;
  int64_t hi = offset;
  for (size_t i = 0; i < sizes.size(); ++i) hi = addSize(hi, mulSize(sizes[i] - 1, strides[i]));
  return hi + 1;
}

std::vector<sym::Expr> contiguousStrides(const std::vector<sym::Expr>& sizes) {
  std::vector<sym::Expr> st(sizes.size());
  sym::Expr s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = s;
    s = s * (sizes[i].constant() ? sym::Expr(std::max<int64_t>(*sizes[i].constant(), 1)) : sizes[i]);
  }
  return st;
}

SymLayout TensorType::symLayout() const {
  if (sym) return *sym;
  SymLayout l;
  for (int64_t v : sizes) l.sizes.emplace_back(v);
  for (int64_t v : strides) l.strides.emplace_back(v);
  l.offset = offset;
  return l;
}

bool TensorType::operator==(const TensorType& o) const {
  if (dtype != o.dtype || sizes != o.sizes || strides != o.strides || offset != o.offset) return false;
  if (!sym || !o.sym) return !sym && !o.sym;
  return *sym == *o.sym;
}

void addGuard(std::vector<SizeGuard>& guards, SizeGuard g) {
  if (std::find(guards.begin(), guards.end(), g) == guards.end()) guards.push_back(std::move(g));
}

sym::Bindings Graph::hints() const {
  sym::Bindings b;
  for (const SymbolDecl& s : symbols) b[s.name] = s.hint;
  return b;
}

std::string TensorType::str() const {
  if (sym) {
    // Note [Symbolic types]: the expressions; the hints are the graph's.
    std::string s = std::string(dtypeName(dtype)) + "[";
    for (size_t i = 0; i < sym->sizes.size(); ++i) s += (i ? "," : "") + sym->sizes[i].str();
    s += "]";
    if (sym->strides != aotc::contiguousStrides(sym->sizes)) {
      s += "{";
      for (size_t i = 0; i < sym->strides.size(); ++i) s += (i ? "," : "") + sym->strides[i].str();
      s += "}";
    }
    if (auto c = sym->offset.constant()) {
      if (*c != 0) s += "+" + std::to_string(*c);
    } else {
      s += "+(" + sym->offset.str() + ")";
    }
    return s;
  }
  std::string s = std::string(dtypeName(dtype)) + "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? "," : "") + std::to_string(sizes[i]);
  s += "]";
  if (strides != contiguousStrides(sizes)) {
    s += "{";
    for (size_t i = 0; i < strides.size(); ++i) s += (i ? "," : "") + std::to_string(strides[i]);
    s += "}";
  }
  if (offset != 0) s += "+" + std::to_string(offset);
  return s;
}

std::string attrStr(const AttrValue& v) {
  struct V {
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
      if (std::isnan(d)) return "nan";
      char buf[64];
      // Shortest text that reads back to the same double, always with a '.' or
      // an exponent so the parser tells floats from ints.
      for (int prec = 1; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (std::strtod(buf, nullptr) == d) break;
      }
      std::string s = buf;
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return s;
    }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(const std::string& s) const {
      std::string o = "\"";
      for (char c : s) {
        if (c == '"' || c == '\\') o += '\\';
        o += c;
      }
      return o + "\"";
    }
    std::string operator()(const Ints& l) const {
      std::string s = "[";
      for (size_t i = 0; i < l.size(); ++i) s += (i ? "," : "") + std::to_string(l[i]);
      return s + "]";
    }
  };
  return std::visit(V{}, v);
}

const char* inputRoleName(InputRole r) {
  switch (r) {
    case InputRole::Parameter: return "parameter";
    case InputRole::Buffer: return "buffer";
    case InputRole::UserInput: return "user_input";
    case InputRole::Tangent: return "tangent";
    case InputRole::Saved: return "saved";
    case InputRole::Constant: return "constant";
  }
  return "?";
}

std::optional<InputRole> parseInputRole(const std::string& s) {
  for (InputRole r : {InputRole::Parameter, InputRole::Buffer, InputRole::UserInput,
                      InputRole::Tangent, InputRole::Saved, InputRole::Constant})
    if (s == inputRoleName(r)) return r;
  return std::nullopt;
}

const char* outputRoleName(OutputRole r) {
  switch (r) {
    case OutputRole::User: return "user";
    case OutputRole::Grad: return "grad";
    case OutputRole::Saved: return "saved";
    case OutputRole::InputMeta: return "input_meta";
  }
  return "?";
}

std::string Graph::uniqueName(const std::string& hint) {
  std::string base = hint.empty() ? "v" : hint;
  if (name_counts_.try_emplace(base, 1).second) return base;
  for (;;) {
    std::string n = base + "_" + std::to_string(name_counts_[base]++);
    if (name_counts_.try_emplace(n, 1).second) return n;
  }
}

bool Graph::tryRename(ValueId v, const std::string& name) {
  if (!name_counts_.try_emplace(name, 1).second) return false;
  values.at(v).name = name;
  return true;
}

ValueId Graph::newValue(std::string name, TensorType type) {
  name_counts_.try_emplace(name, 1);
  values.push_back(Value{std::move(name), std::move(type), -1, 0});
  return static_cast<ValueId>(values.size() - 1);
}

ValueId Graph::addInput(std::string name, TensorType type, InputRole role, bool requires_grad) {
  ValueId v = newValue(std::move(name), std::move(type));
  inputs.push_back(GraphInput{v, role, requires_grad});
  return v;
}

int32_t Graph::appendNode(Node n) {
  int32_t idx = static_cast<int32_t>(nodes.size());
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    values[n.outputs[i]].node = idx;
    values[n.outputs[i]].slot = static_cast<int32_t>(i);
  }
  nodes.push_back(std::move(n));
  return idx;
}

int32_t Graph::copyNode(const Graph& src, const Node& n, std::vector<ValueId>& vmap) {
  Node c = n;
  for (ValueId& v : c.inputs) {
    AOTC_CHECK(vmap.at(v) != kNoValue, "operand %", src.values[v].name, " was not mapped");
    v = vmap[v];
  }
  for (ValueId& v : c.outputs) {
    ValueId nv = newValue(uniqueName(src.values[v].name), src.values[v].type);
    vmap.at(v) = nv;
    v = nv;
  }
  return appendNode(std::move(c));
}

const GraphInput* Graph::inputOf(ValueId v) const {
  for (auto& i : inputs)
    if (i.value == v) return &i;
  return nullptr;
}

const GraphInput* Graph::inputNamed(const std::string& n) const {
  for (auto& i : inputs)
    if (values[i.value].name == n) return &i;
  return nullptr;
}

ValueId Graph::valueNamed(const std::string& n) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == n) return static_cast<ValueId>(i);
  return kNoValue;
}

std::vector<ValueId> Graph::valuesNamed(const std::vector<std::string>& names) const {
  std::unordered_map<std::string_view, size_t> want;
  for (size_t i = 0; i < names.size(); ++i) want.emplace(names[i], i);
  std::vector<ValueId> r(names.size(), kNoValue);
  for (size_t v = 0; v < values.size(); ++v)
    if (auto it = want.find(values[v].name); it != want.end() && r[it->second] == kNoValue) r[it->second] = static_cast<ValueId>(v);
  for (size_t i = 0; i < names.size(); ++i)  // a name given twice
    if (r[i] == kNoValue) r[i] = r[want.at(names[i])];
  return r;
}

UseInfo UseInfo::compute(const Graph& g) {
  UseInfo u;
  u.users.resize(g.values.size());
  u.is_output.assign(g.values.size(), false);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (ValueId v : g.nodes[n].inputs) u.users[v].push_back(static_cast<int32_t>(n));
  for (auto& o : g.outputs) u.is_output[o.value] = true;
  return u;
}

}  // namespace aotc
