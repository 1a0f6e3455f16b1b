//===- ops.cpp - The op table and shape rules -----------------------------===//
//
// Shape rules follow ATen's: broadcasting, type promotion (a simplified
// lattice: bool < integers (the narrowest holding both) < float16/bfloat16 < float32 < float64), and
// view stride computation (computeStride in aten/src/ATen/TensorUtils.cpp).
//===----------------------------------------------------------------------===//
#include "aotc/ops/ops.h"

#include <algorithm>
#include <cctype>
#include <array>
#include <cmath>
#include <string_view>

#include "aotc/ops/pointwise.h"
#include "aotc/ops/reductions.h"
#include "aotc/ops/rules.h"
#include "rule_util.h"

namespace aotc {

namespace detail {

[[noreturn]] void shapeError(const std::string& msg) { throw UserError(SourceLoc{}, msg); }

std::string shapeStr(const Ints& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

Ints attrPair(const Attrs& a, const char* k, int64_t dflt) {
  if (!hasAttr(a, k)) return {dflt, dflt};
  Ints v = attrInts(a, k);
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) shapeError(std::string(k) + " must have 1 or 2 values");
  return v;
}

}  // namespace detail

namespace {

enum class NoFn { None };
constexpr std::optional<OpKind> fnOf(NoFn) { return std::nullopt; }
constexpr std::optional<OpKind> fnOf(OpKind k) { return k; }

const std::array<OpInfo, kNumOps> kOps = {{
#define OP(Kind, name, arity, cat, grad, fn, attrs)                                       \
  OpInfo{OpKind::Kind, name, arity, OpCategory::cat, GradKind::grad, fnOf([] {            \
           using enum OpKind;                                                             \
           [[maybe_unused]] constexpr NoFn None = NoFn::None;                             \
           return fn;                                                                     \
         }()), attrs},
#include "aotc/ops/ops.def"
#undef OP
}};

using detail::shapeError;
using detail::shapeStr;


int rank(DType d) {
  switch (d) {
    case DType::Bool: return 0;
    case DType::I8: case DType::I16: case DType::I32: case DType::I64:
    case DType::U8: case DType::U16: case DType::U32: case DType::U64: return 1;
    case DType::F16: return 3;
    case DType::BF16: return 3;
    case DType::F32: return 4;
    case DType::F64: return 5;
  }
  return 0;
}

/// Two integer types: the narrowest type holding both ranges (ATen's rule
/// for uint8 with int8: int16).  uint64 with a signed type has none.
DType promoteIntegers(DType a, DType b) {
  int64_t wa = dtypeSize(a) * 8, wb = dtypeSize(b) * 8;
  if (isUnsigned(a) == isUnsigned(b)) return wa >= wb ? a : b;
  if (isUnsigned(a)) std::swap(a, b), std::swap(wa, wb);  // a signed, b unsigned
  if (wa > wb) return a;
  switch (wb) {
    case 8: return DType::I16;
    case 16: return DType::I32;
    case 32: return DType::I64;
    default: shapeError(std::string("no integer type holds both ") + dtypeName(a) + " and " + dtypeName(b));
  }
  return a;
}

DType promote(DType a, DType b) {
  if (a == b) return a;
  if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16)) return DType::F32;
  if (rank(a) == 1 && rank(b) == 1) return promoteIntegers(a, b);
  return rank(a) >= rank(b) ? a : b;
}

}  // namespace

std::vector<TensorType> detail::broadcastRule(const std::vector<TensorType>& in, DType out) {
  Ints s = in[0].sizes;
  for (size_t i = 1; i < in.size(); ++i) {
    auto b = broadcastShapes(s, in[i].sizes);
    if (!b) shapeError("shapes " + shapeStr(s) + " and " + shapeStr(in[i].sizes) + " cannot be broadcast");
    s = *b;
  }
  return {TensorType::contiguous(out, s)};
}

std::vector<TensorType> detail::reduceTypes(const std::vector<TensorType>& in, const Attrs& a, bool mean) {
  Ints dims = reductionDims(a, in[0].rank());
  bool keep = attrBool(a, "keepdim", false);
  Ints out;
  for (int64_t i = 0; i < in[0].rank(); ++i) {
    bool red = std::binary_search(dims.begin(), dims.end(), i);
    if (!red) out.push_back(in[0].sizes[i]);
    else if (keep) out.push_back(1);
  }
  DType d = in[0].dtype;
  if (mean && !isFloating(d)) shapeError("mean: input dtype must be floating point, got " + std::string(dtypeName(d)));
  if (!mean && !isFloating(d)) d = DType::I64;
  return {TensorType::contiguous(d, out)};
}

namespace {

using detail::broadcastRule;
using detail::reduceTypes;

}  // namespace

const OpInfo& opInfo(OpKind k) { return kOps[static_cast<size_t>(k)]; }
const char* opName(OpKind k) { return opInfo(k).name; }
std::optional<OpKind> opFromName(const std::string& name) {
  for (auto& o : kOps)
    if (name == o.name) return o.kind;
  return std::nullopt;
}
std::span<const OpRule* const> opRules() {
  static const std::vector<const OpRule*> kAll = [] {
    std::vector<const OpRule*> v;
    for (auto family : {detail::viewRows, detail::windowRows, detail::gatherRows, detail::linalgRows, detail::creationRows,
                        detail::internalRows})
      for (const OpRule& r : family()) v.push_back(&r);
    return v;
  }();
  return kAll;
}

const OpRule* opRule(OpKind k) {
  static const std::array<const OpRule*, kNumOps> kIndex = [] {
    std::array<const OpRule*, kNumOps> index{};
    for (const OpRule* r : opRules()) {
      AOTC_CHECK(!index[static_cast<size_t>(r->op)] && !pointwiseRule(r->op) && !reductionRule(r->op), "two rows for ",
                 opName(r->op));
      AOTC_CHECK((r->cuda == Lowering::Element) == (r->body != nullptr) && (r->cuda == Lowering::Expression) == (r->region != nullptr),
                 opName(r->op), "'s row: its CUDA lowering and its text disagree");
      index[static_cast<size_t>(r->op)] = r;
    }
    return index;
  }();
  return kIndex[static_cast<size_t>(k)];
}

/// The op's shape rule: its row's (Note [Op rows]).
ShapeRule shapeRuleOf(OpKind k) {
  if (const PointwiseRule* p = pointwiseRule(k)) return p->types;
  if (const ReductionRule* r = reductionRule(k)) return r->types;
  const OpRule* r = opRule(k);
  return r ? r->types : nullptr;
}

bool hasShapeRule(OpKind k) { return shapeRuleOf(k) != nullptr; }

// Note [Typed attributes]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Every op's row in ops.def spells its attributes with their kinds.  Every
// node is checked against it when it is built (Graph::addNode) and when a
// graph is verified, so a shape rule, reference kernel, gradient rule or CUDA
// lowering only ever meets the attributes its row declares, of the declared
// kind: an IR file or front end that says `constant() {dtype=3}` is refused
// with "attribute 'dtype' must be a dtype name" instead of reaching a
// std::get.  Unknown attributes are refused too (a misspelt `keep_dim` would
// otherwise be silently ignored).
namespace {

std::vector<AttrSpec> parseSchema(const OpInfo& info) {
  std::vector<AttrSpec> out;
  std::string_view s = info.attrs;
  while (!s.empty()) {
    size_t sp = s.find(' ');
    std::string_view item = s.substr(0, sp);
    s = sp == std::string_view::npos ? std::string_view{} : s.substr(sp + 1);
    if (item.empty()) continue;
    size_t colon = item.find(':');
    AOTC_CHECK(colon != std::string_view::npos, "ops.def: bad attribute '", std::string(item), "' of ", info.name);
    std::string_view kind = item.substr(colon + 1);
    bool required = true;
    if (kind.ends_with('?')) {
      required = false;
      kind.remove_suffix(1);
    }
    static constexpr std::pair<std::string_view, AttrKind> kKinds[] = {
        {"int", AttrKind::Int}, {"float", AttrKind::Float}, {"bool", AttrKind::Bool},
        {"str", AttrKind::Str}, {"dtype", AttrKind::DType}, {"ints", AttrKind::Ints}};
    auto k = std::find_if(std::begin(kKinds), std::end(kKinds), [&](const auto& e) { return e.first == kind; });
    AOTC_CHECK(k != std::end(kKinds), "ops.def: unknown attribute kind '", std::string(kind), "' of ", info.name);
    out.push_back(AttrSpec{std::string(item.substr(0, colon)), k->second, required});
  }
  out.push_back(AttrSpec{"no_grad", AttrKind::Bool, false});
  return out;
}

const char* kindName(AttrKind k) {
  switch (k) {
    case AttrKind::Int: return "an integer";
    case AttrKind::Float: return "a number";
    case AttrKind::Bool: return "a bool";
    case AttrKind::Str: return "a string";
    case AttrKind::DType: return "a dtype name";
    case AttrKind::Ints: return "a list of integers";
  }
  return "?";
}

bool hasKind(const AttrValue& v, AttrKind k) {
  switch (k) {
    case AttrKind::Int: return std::holds_alternative<int64_t>(v);
    case AttrKind::Float: return std::holds_alternative<double>(v) || std::holds_alternative<int64_t>(v);
    case AttrKind::Bool: return std::holds_alternative<bool>(v);
    case AttrKind::Str: return std::holds_alternative<std::string>(v);
    case AttrKind::DType: return std::holds_alternative<std::string>(v) && parseDType(std::get<std::string>(v));
    case AttrKind::Ints: return std::holds_alternative<Ints>(v);
  }
  return false;
}

}  // namespace

const std::vector<AttrSpec>& attrSchema(OpKind k) {
  // Built once, immutable afterwards.
  static const std::vector<std::vector<AttrSpec>> kSchemas = [] {
    std::vector<std::vector<AttrSpec>> all;
    for (const OpInfo& o : kOps) all.push_back(parseSchema(o));
    return all;
  }();
  return kSchemas[static_cast<size_t>(k)];
}

void checkAttrs(OpKind k, const Attrs& attrs) {
  const std::vector<AttrSpec>& schema = attrSchema(k);
  const char* op = opName(k);
  for (const auto& [name, value] : attrs) {
    auto s = std::find_if(schema.begin(), schema.end(), [&](const AttrSpec& a) { return a.name == name; });
    if (s == schema.end()) {
      std::string known;
      for (const AttrSpec& a : schema) known += (known.empty() ? "" : ", ") + a.name;
      shapeError(std::string(op) + ": unknown attribute '" + name + "' (it takes " + known + ")");
    }
    if (!hasKind(value, s->kind))
    {
      std::string got = attrStr(value);
      if (got.size() > 40) got = got.substr(0, 37) + "...";
      shapeError(std::string(op) + ": attribute '" + name + "' must be " + kindName(s->kind) + ", got " + got);
    }
  }
  for (const AttrSpec& a : schema)
    if (a.required && !attrs.count(a.name)) shapeError(std::string(op) + ": missing attribute '" + a.name + "'");
}


bool channelsLastWritable(OpKind k) {
  return opInfo(k).category == OpCategory::Pointwise || k == OpKind::Conv2d || k == OpKind::Conv2dBackwardInput ||
         k == OpKind::Conv2dBackwardWeight;
}

Ints channelsLastStrides(const Ints& s) {
  AOTC_CHECK(s.size() == 4, "channels-last strides of a rank-", s.size(), " tensor");
  return {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
}

bool isChannelsLast(const TensorType& t) {
  return t.rank() == 4 && !t.isSymbolic() && t.offset == 0 && t.strides == channelsLastStrides(t.sizes) && !t.isContiguous();
}

std::vector<TensorType> inferTypes(OpKind op, const std::vector<TensorType>& ins, const Attrs& attrs) {
  if (auto cl = attrs.find(kChannelsLast); cl != attrs.end()) {
    // Note [Channels last]
    const OpInfo& info = opInfo(op);
    if (!channelsLastWritable(op)) shapeError(std::string(info.name) + ": cannot store its result channels-last");
    if (!std::holds_alternative<bool>(cl->second) || !std::get<bool>(cl->second))
      shapeError(std::string(info.name) + ": attribute 'channels_last' must be true");
    Attrs rest = attrs;
    rest.erase(kChannelsLast);
    std::vector<TensorType> out = inferTypes(op, ins, rest);
    if (out.empty() || out[0].rank() != 4 || out[0].isSymbolic() || !out[0].isContiguous())
      shapeError(std::string(info.name) + ": only a dense 4-D result can be stored channels-last");
    out[0].strides = channelsLastStrides(out[0].sizes);
    return out;
  }
  const OpInfo& info = opInfo(op);
  if (info.arity >= 0 && static_cast<int>(ins.size()) != info.arity)
    shapeError(std::string(info.name) + " expects " + std::to_string(info.arity) + " tensor operand(s), got " +
               std::to_string(ins.size()));
  checkAttrs(op, attrs);
  ShapeRule r = shapeRuleOf(op);
  AOTC_CHECK(r, "no shape rule for ", info.name);
  return r(ins, attrs);
}

std::vector<TensorType> inferNodeTypes(OpKind op, const std::vector<TensorType>& ins, const Attrs& attrs,
                                       const std::vector<Graph>& regions) {
  // A custom backward's inputs are the tangents of the user outputs and the
  // saved values, in that order of roles (libFuzzer finding, fuzz_ir: a
  // backward reading more saved values than the forward saves indexed past
  // the node's operands in the gradient rule).
  auto checkBackward = [](const Graph& bw, const std::vector<TensorType>& outs, const std::vector<TensorType>& saved) {
    size_t t = 0, s = 0;
    for (const GraphInput& gi : bw.inputs) {
      bool isSaved = gi.role == InputRole::Saved;
      const std::vector<TensorType>& want = isSaved ? saved : outs;
      size_t& k = isSaved ? s : t;
      if (k >= want.size())
        shapeError(std::string("custom backward reads ") + (isSaved ? "more saved values" : "more grad outputs") + " than the forward " +
                   (isSaved ? "saves (" : "has outputs (") + std::to_string(want.size()) + ")");
      if (bw.type(gi.value).sizes != want[k].sizes || bw.type(gi.value).dtype != want[k].dtype)
        shapeError("custom backward input %" + bw.values[gi.value].name + " is " + bw.type(gi.value).str() + ", the forward gives " +
                   want[k].str());
      ++k;
    }
  };
  if (op == OpKind::CustomGrad) {
    std::vector<TensorType> out = inferTypes(op, ins, attrs);
    if (regions.size() != 1) shapeError("custom_grad needs its backward region");
    int64_t na = attrInt(attrs, "num_args"), no = attrInt(attrs, "num_outputs");
    checkBackward(regions[0], out, std::vector<TensorType>(ins.begin() + na + no, ins.end()));
    return out;
  }
  if (op != OpKind::AutogradFunction) return inferTypes(op, ins, attrs);
  checkAttrs(op, attrs);
  if (regions.size() != 2) shapeError("autograd_function needs a forward and a backward region");
  const Graph& fw = regions[0];
  if (fw.inputs.size() != ins.size())
    shapeError("autograd_function: forward region takes " + std::to_string(fw.inputs.size()) + " tensors, got " +
               std::to_string(ins.size()));
  std::vector<TensorType> out, saved;
  for (const GraphOutput& o : fw.outputs) {
    if (o.role == OutputRole::User) out.push_back(fw.type(o.value));
    else if (o.role == OutputRole::Saved) saved.push_back(fw.type(o.value));
  }
  checkBackward(regions[1], out, saved);
  return out;
}

int64_t windowOut(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil) {
  if (stride <= 0 || kernel <= 0 || dilation <= 0) shapeError("kernel, stride and dilation must be positive");
  int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (ceil ? (span + stride - 1) / stride : span / stride) + 1;
  // PyTorch: the last window must start inside the input (or left padding).
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

Window2d window2d(const Attrs& a) {
  Ints k = detail::attrPair(a, "kernel", 1);
  Ints st = hasAttr(a, "stride") && !attrInts(a, "stride").empty() ? detail::attrPair(a, "stride", 1) : k;
  Ints pd = detail::attrPair(a, "padding", 0), dl = detail::attrPair(a, "dilation", 1);
  return Window2d{k[0], k[1], st[0], st[1], pd[0], pd[1], dl[0], dl[1], attrBool(a, "ceil_mode", false)};
}

DType windowOffsetDType(const Attrs& a) {
  if (!attrBool(a, "window_offsets", false)) return DType::I64;
  Window2d w = window2d(a);
  int64_t n = w.kh * w.kw;
  return n <= 128 ? DType::I8 : n <= 32768 ? DType::I16 : n <= (int64_t{1} << 31) ? DType::I32 : DType::I64;
}

DType promoteTypes(DType a, DType b) { return promote(a, b); }

double philoxUniform(uint64_t seed, uint64_t offset, uint64_t index) {
  uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32);
  uint32_t c2 = static_cast<uint32_t>(offset), c3 = static_cast<uint32_t>(offset >> 32);
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0, p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0, n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return static_cast<double>(c0 >> 8) * (1.0 / 16777216.0);
}

int64_t wrapDim(int64_t dim, int64_t rank) {
  if (dim < -rank || dim >= rank)
    shapeError("dim " + std::to_string(dim) + " out of range for a tensor of rank " + std::to_string(rank));
  return dim < 0 ? dim + rank : dim;
}

SliceBounds sliceBounds(const Attrs& a, int64_t size) {
  int64_t step = hasAttr(a, "step") ? attrInt(a, "step") : 1;
  if (step <= 0) shapeError("slice step must be positive");
  int64_t start = hasAttr(a, "start") ? attrInt(a, "start") : 0;
  int64_t end = hasAttr(a, "end") ? attrInt(a, "end") : size;
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  return SliceBounds{start, end, step, (end - start + step - 1) / step};
}

std::optional<Ints> broadcastShapes(const Ints& a, const Ints& b) {
  size_t n = std::max(a.size(), b.size());
  Ints out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Ints inferViewSize(const Ints& size, int64_t numel) {
  Ints out = size;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] == -1) {
      if (infer >= 0) shapeError("view: only one dimension can be inferred");
      infer = static_cast<int64_t>(i);
    } else if (size[i] < 0) {
      shapeError("view: invalid size " + shapeStr(size));
    } else {
      known = mulSize(known, size[i]);
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0) shapeError("view: shape " + shapeStr(size) + " is invalid for input of size " + std::to_string(numel));
    out[infer] = numel / known;
  } else if (known != numel) {
    shapeError("view: shape " + shapeStr(size) + " is invalid for input of size " + std::to_string(numel));
  }
  return out;
}

std::optional<Ints> viewStrides(const Ints& oldshape, const Ints& oldstride, const Ints& newshape) {
  // Port of at::detail::computeStride.
  int64_t numel = 1;
  for (int64_t s : oldshape) numel = mulSize(numel, s);
  Ints newstride(newshape.size(), 0);
  if (oldshape.empty()) return Ints(newshape.size(), 1);  // a 0-dim tensor views as any all-ones shape
  if (numel == 0) {
    if (oldshape == newshape) return oldstride;
    return TensorType::contiguousStrides(newshape);
  }
  int64_t view_d = static_cast<int64_t>(newshape.size()) - 1;
  int64_t chunk_base_stride = oldstride.empty() ? 1 : oldstride.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(oldshape.size()) - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel = mulSize(tensor_numel, oldshape[tensor_d]);
    if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 && oldstride[tensor_d - 1] != mulSize(tensor_numel, chunk_base_stride))) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = mulSize(view_numel, chunk_base_stride);
        view_numel = mulSize(view_numel, newshape[view_d]);
        view_d--;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return newstride;
}

Ints reductionDims(const Attrs& a, int64_t rank) {
  Ints dims = hasAttr(a, "dim") ? attrInts(a, "dim") : Ints{};
  if (dims.empty())
    for (int64_t i = 0; i < rank; ++i) dims.push_back(i);
  for (int64_t& d : dims) {
    int64_t r = std::max<int64_t>(rank, 1);
    if (d < -r || d >= r) shapeError("dim " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
    if (d < 0) d += r;
  }
  std::sort(dims.begin(), dims.end());
  if (std::adjacent_find(dims.begin(), dims.end()) != dims.end()) shapeError("repeated reduction dim");
  if (rank == 0) dims.clear();
  return dims;
}

bool hasAttr(const Attrs& a, const std::string& key) { return a.count(key) != 0; }

int64_t attrInt(const Attrs& a, const std::string& key) {
  auto it = a.find(key);
  if (it == a.end()) shapeError("missing attribute '" + key + "'");
  if (auto* p = std::get_if<int64_t>(&it->second)) return *p;
  if (auto* b = std::get_if<bool>(&it->second)) return *b;
  shapeError("attribute '" + key + "' must be an integer");
}
double attrFloat(const Attrs& a, const std::string& key) {
  auto it = a.find(key);
  if (it == a.end()) shapeError("missing attribute '" + key + "'");
  if (auto* p = std::get_if<double>(&it->second)) return *p;
  if (auto* p = std::get_if<int64_t>(&it->second)) return static_cast<double>(*p);
  if (auto* b = std::get_if<bool>(&it->second)) return *b;
  shapeError("attribute '" + key + "' must be a number");
}
bool attrBool(const Attrs& a, const std::string& key, bool dflt) {
  auto it = a.find(key);
  if (it == a.end()) return dflt;
  if (auto* b = std::get_if<bool>(&it->second)) return *b;
  if (auto* p = std::get_if<int64_t>(&it->second)) return *p != 0;
  shapeError("attribute '" + key + "' must be a bool");
}
const std::string& attrString(const Attrs& a, const std::string& key) {
  auto it = a.find(key);
  if (it == a.end()) shapeError("missing attribute '" + key + "'");
  if (auto* p = std::get_if<std::string>(&it->second)) return *p;
  shapeError("attribute '" + key + "' must be a string");
}
const Ints& attrInts(const Attrs& a, const std::string& key) {
  auto it = a.find(key);
  if (it == a.end()) shapeError("missing attribute '" + key + "'");
  if (auto* p = std::get_if<Ints>(&it->second)) return *p;
  shapeError("attribute '" + key + "' must be a list of integers");
}

//===----------------------------------------------------------------------===//
// The builder
//===----------------------------------------------------------------------===//

namespace {
void checkBounded(const TensorType& t) {
  // Note [Bounded sizes].
  auto bad = [&](const std::string& what) { throw UserError(SourceLoc{}, "result " + t.str() + " " + what); };
  for (int64_t s : t.sizes)
    if (s < 0 || s > kMaxExtent) bad("has a size outside [0, 2^48]");
  for (int64_t s : t.strides)
    if (s < -kMaxExtent || s > kMaxExtent) bad("has a stride beyond 2^48");
  if (t.offset < 0 || t.offset > kMaxExtent) bad("has a storage offset outside [0, 2^48]");
  if (t.numel() > kMaxElements) bad(cat("has ", t.numel(), " elements; aotc handles tensors of at most 2^40"));
}

}  // namespace

std::vector<ValueId> addNode(Graph& g, OpKind op, std::vector<ValueId> ins, Attrs attrs, SourceLoc loc, Phase phase,
                             uint32_t tags, std::vector<Graph> regions) {
  std::vector<TensorType> tys;
  for (ValueId v : ins) tys.push_back(g.type(v));
  std::vector<TensorType> outs;
  try {
    outs = inferNodeTypes(op, tys, attrs, regions);
    for (const TensorType& t : outs) checkBounded(t);
  } catch (const UserError& e) {
    SourceLoc l = loc;
    if (l.op.empty()) l.op = opName(op);
    throw UserError(l, e.diagnostics().front().message);
  } catch (const std::exception& e) {
    // Not a user error: a bug in a rule.  Name the node it was building.
    throw std::runtime_error(cat("node '", loc.node.empty() ? "?" : loc.node, "' (", opName(op), "): ", e.what()));
  }
  Node n{op, std::move(ins), {}, std::move(attrs), loc, phase, tags, std::move(regions)};
  std::string hint = loc.node.empty() ? opName(op) : loc.node;
  for (char& c : hint)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) c = '_';
  for (auto& t : outs) n.outputs.push_back(g.newValue(g.uniqueName(hint), t));
  g.appendNode(std::move(n));
  return g.nodes.back().outputs;
}

ValueId addOp(Graph& g, OpKind op, std::vector<ValueId> ins, Attrs attrs, SourceLoc loc, Phase phase,
              uint32_t tags) {
  auto outs = addNode(g, op, std::move(ins), std::move(attrs), std::move(loc), phase, tags);
  AOTC_CHECK(outs.size() == 1, opName(op), " has ", outs.size(), " outputs");
  return outs[0];
}

}  // namespace aotc
