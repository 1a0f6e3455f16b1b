//===- ops.cpp - The op table and shape rules -----------------------------===//
//
// Shape rules follow ATen's: broadcasting, type promotion (a simplified
// lattice: bool < int32 < int64 < float16/bfloat16 < float32 < float64), and
// view stride computation (computeStride in aten/src/ATen/TensorUtils.cpp).
//===----------------------------------------------------------------------===//
#include "aotc/ops/ops.h"

#include <algorithm>
#include <array>

namespace aotc {

namespace {

enum class NoFn { None };
constexpr std::optional<OpKind> fnOf(NoFn) { return std::nullopt; }
constexpr std::optional<OpKind> fnOf(OpKind k) { return k; }

const std::array<OpInfo, kNumOps> kOps = {{
#define OP(Kind, name, arity, cat, grad, fn)                                              \
  OpInfo{OpKind::Kind, name, arity, OpCategory::cat, GradKind::grad, fnOf([] {            \
           using enum OpKind;                                                             \
           [[maybe_unused]] constexpr NoFn None = NoFn::None;                             \
           return fn;                                                                     \
         }())},
#include "aotc/ops/ops.def"
#undef OP
}};

[[noreturn]] void shapeError(const std::string& msg) { throw UserError(SourceLoc{}, msg); }

std::string shapeStr(const Ints& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

int rank(DType d) {
  switch (d) {
    case DType::Bool: return 0;
    case DType::I32: return 1;
    case DType::I64: return 2;
    case DType::F16: return 3;
    case DType::BF16: return 3;
    case DType::F32: return 4;
    case DType::F64: return 5;
  }
  return 0;
}

DType promote(DType a, DType b) {
  if (a == b) return a;
  if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16)) return DType::F32;
  return rank(a) >= rank(b) ? a : b;
}

using ShapeRule = std::vector<TensorType> (*)(const std::vector<TensorType>&, const Attrs&);

std::vector<TensorType> one(TensorType t) { return {std::move(t)}; }

std::vector<TensorType> broadcastRule(const std::vector<TensorType>& in, DType out) {
  Ints s = in[0].sizes;
  for (size_t i = 1; i < in.size(); ++i) {
    auto b = broadcastShapes(s, in[i].sizes);
    if (!b) shapeError("shapes " + shapeStr(s) + " and " + shapeStr(in[i].sizes) + " cannot be broadcast");
    s = *b;
  }
  return one(TensorType::contiguous(out, s));
}

std::vector<TensorType> binary(const std::vector<TensorType>& in, const Attrs&) {
  return broadcastRule(in, promote(in[0].dtype, in[1].dtype));
}
std::vector<TensorType> divRule(const std::vector<TensorType>& in, const Attrs&) {
  DType d = promote(in[0].dtype, in[1].dtype);
  return broadcastRule(in, isFloating(d) ? d : DType::F32);
}
std::vector<TensorType> compare(const std::vector<TensorType>& in, const Attrs&) {
  return broadcastRule(in, DType::Bool);
}
std::vector<TensorType> whereRule(const std::vector<TensorType>& in, const Attrs&) {
  if (in[0].dtype != DType::Bool) shapeError("where: condition must be bool, got " + std::string(dtypeName(in[0].dtype)));
  return broadcastRule(in, promote(in[1].dtype, in[2].dtype));
}
std::vector<TensorType> unary(const std::vector<TensorType>& in, const Attrs&) {
  return one(TensorType::contiguous(in[0].dtype, in[0].sizes));
}
std::vector<TensorType> unaryFloat(const std::vector<TensorType>& in, const Attrs&) {
  return one(TensorType::contiguous(isFloating(in[0].dtype) ? in[0].dtype : DType::F32, in[0].sizes));
}

std::vector<TensorType> constantRule(const std::vector<TensorType>&, const Attrs& a) {
  DType d = DType::F32;
  if (hasAttr(a, "dtype")) {
    auto p = parseDType(std::get<std::string>(a.at("dtype")));
    if (!p) shapeError("constant: unknown dtype");
    d = *p;
  }
  Ints shape = hasAttr(a, "shape") ? attrInts(a, "shape") : Ints{};
  for (int64_t s : shape)
    if (s < 0) shapeError("constant: negative size in " + shapeStr(shape));
  attrFloat(a, "value");
  return one(TensorType::contiguous(d, shape));
}

std::vector<TensorType> reduceRule(const std::vector<TensorType>& in, const Attrs& a, bool mean) {
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
  return one(TensorType::contiguous(d, out));
}
std::vector<TensorType> sumRule(const std::vector<TensorType>& in, const Attrs& a) { return reduceRule(in, a, false); }
std::vector<TensorType> meanRule(const std::vector<TensorType>& in, const Attrs& a) { return reduceRule(in, a, true); }

std::vector<TensorType> mmRule(const std::vector<TensorType>& in, const Attrs&) {
  if (in[0].rank() != 2 || in[1].rank() != 2)
    shapeError("mm: both operands must be 2-D, got " + shapeStr(in[0].sizes) + " and " + shapeStr(in[1].sizes));
  if (in[0].sizes[1] != in[1].sizes[0])
    shapeError("mm: shapes " + shapeStr(in[0].sizes) + " and " + shapeStr(in[1].sizes) + " cannot be multiplied");
  if (in[0].dtype != in[1].dtype)
    shapeError("mm: dtypes differ: " + std::string(dtypeName(in[0].dtype)) + " and " + dtypeName(in[1].dtype));
  return one(TensorType::contiguous(in[0].dtype, {in[0].sizes[0], in[1].sizes[1]}));
}

std::vector<TensorType> tRule(const std::vector<TensorType>& in, const Attrs&) {
  TensorType t = in[0];
  if (t.rank() > 2) shapeError("t: expects a tensor of at most 2 dims, got " + shapeStr(t.sizes));
  if (t.rank() == 2) {
    std::swap(t.sizes[0], t.sizes[1]);
    std::swap(t.strides[0], t.strides[1]);
  }
  return one(t);
}

std::vector<TensorType> viewRule(const std::vector<TensorType>& in, const Attrs& a) {
  Ints size = inferViewSize(attrInts(a, "size"), in[0].numel());
  auto st = viewStrides(in[0].sizes, in[0].strides, size);
  if (!st) shapeError("view size " + shapeStr(size) + " is not compatible with input size " + shapeStr(in[0].sizes) +
                      " and strides; use reshape");
  TensorType t = in[0];
  t.sizes = size;
  t.strides = *st;
  return one(t);
}

std::vector<TensorType> expandRule(const std::vector<TensorType>& in, const Attrs& a) {
  const Ints& size = attrInts(a, "size");
  const TensorType& x = in[0];
  if (size.size() < x.sizes.size())
    shapeError("expand: target " + shapeStr(size) + " has fewer dims than input " + shapeStr(x.sizes));
  TensorType t = x;
  size_t lead = size.size() - x.sizes.size();
  t.sizes.assign(size.size(), 0);
  t.strides.assign(size.size(), 0);
  for (size_t i = 0; i < size.size(); ++i) {
    if (i < lead) {
      if (size[i] < 0) shapeError("expand: -1 is not allowed in a new leading dim");
      t.sizes[i] = size[i];
      continue;
    }
    int64_t xs = x.sizes[i - lead], want = size[i] == -1 ? xs : size[i];
    if (xs != want && xs != 1)
      shapeError("expand: cannot expand " + shapeStr(x.sizes) + " to " + shapeStr(size));
    t.sizes[i] = want;
    t.strides[i] = (xs == want) ? x.strides[i - lead] : 0;
  }
  return one(t);
}

std::vector<TensorType> aliasRule(const std::vector<TensorType>& in, const Attrs&) { return one(in[0]); }

std::vector<TensorType> transposeRule(const std::vector<TensorType>& in, const Attrs& a) {
  TensorType t = in[0];
  int64_t r = std::max<int64_t>(t.rank(), 1);
  int64_t d0 = wrapDim(attrInt(a, "dim0"), r), d1 = wrapDim(attrInt(a, "dim1"), r);
  if (t.rank() == 0) return one(t);
  std::swap(t.sizes[d0], t.sizes[d1]);
  std::swap(t.strides[d0], t.strides[d1]);
  return one(t);
}

std::vector<TensorType> unsqueezeRule(const std::vector<TensorType>& in, const Attrs& a) {
  TensorType t = in[0];
  int64_t d = wrapDim(attrInt(a, "dim"), t.rank() + 1);
  int64_t st = d < t.rank() ? t.sizes[d] * t.strides[d] : 1;
  t.sizes.insert(t.sizes.begin() + d, 1);
  t.strides.insert(t.strides.begin() + d, st);
  return one(t);
}

std::vector<TensorType> squeezeRule(const std::vector<TensorType>& in, const Attrs& a) {
  TensorType t = in[0];
  Ints dims = hasAttr(a, "dim") ? attrInts(a, "dim") : Ints{};
  std::vector<bool> drop(t.sizes.size(), false);
  if (dims.empty()) {
    for (size_t i = 0; i < t.sizes.size(); ++i) drop[i] = t.sizes[i] == 1;
  } else {
    for (int64_t d : dims) {
      int64_t w = wrapDim(d, std::max<int64_t>(t.rank(), 1));
      if (t.rank() > 0 && t.sizes[w] == 1) drop[w] = true;
    }
  }
  TensorType o = t;
  o.sizes.clear();
  o.strides.clear();
  for (size_t i = 0; i < t.sizes.size(); ++i)
    if (!drop[i]) {
      o.sizes.push_back(t.sizes[i]);
      o.strides.push_back(t.strides[i]);
    }
  return one(o);
}

std::vector<TensorType> sliceRule(const std::vector<TensorType>& in, const Attrs& a) {
  TensorType t = in[0];
  if (t.rank() == 0) shapeError("slice() cannot be applied to a 0-dim tensor");
  int64_t d = wrapDim(attrInt(a, "dim"), t.rank());
  SliceBounds b = sliceBounds(a, t.sizes[d]);
  t.offset += b.start * t.strides[d];
  t.sizes[d] = b.length;
  t.strides[d] *= b.step;
  return one(t);
}

std::vector<TensorType> selectRule(const std::vector<TensorType>& in, const Attrs& a) {
  TensorType t = in[0];
  if (t.rank() == 0) shapeError("select() cannot be applied to a 0-dim tensor");
  int64_t d = wrapDim(attrInt(a, "dim"), t.rank());
  int64_t i = attrInt(a, "index");
  if (i < -t.sizes[d] || i >= t.sizes[d])
    shapeError("select: index " + std::to_string(i) + " out of range for dim of size " + std::to_string(t.sizes[d]));
  if (i < 0) i += t.sizes[d];
  t.offset += i * t.strides[d];
  t.sizes.erase(t.sizes.begin() + d);
  t.strides.erase(t.strides.begin() + d);
  return one(t);
}

template <ShapeRule ViewRule>
std::vector<TensorType> scatterRule(const std::vector<TensorType>& in, const Attrs& a) {
  TensorType base = TensorType::contiguous(in[0].dtype, in[0].sizes);
  TensorType v = ViewRule({base}, a)[0];
  if (v.sizes != in[1].sizes)
    shapeError("scatter: source " + shapeStr(in[1].sizes) + " does not match the region " + shapeStr(v.sizes));
  if (in[0].dtype != in[1].dtype) shapeError("scatter: dtypes differ");
  return one(base);
}

std::vector<TensorType> keepGradRule(const std::vector<TensorType>& in, const Attrs&) {
  if (in[0].sizes != in[1].sizes || in[0].dtype != in[1].dtype)
    shapeError("keep_grad: " + in[0].str() + " and " + in[1].str() + " differ");
  return one(in[1]);
}

std::vector<TensorType> customGradRule(const std::vector<TensorType>& in, const Attrs& a) {
  int64_t na = attrInt(a, "num_args"), no = attrInt(a, "num_outputs");
  if (na < 0 || no < 0 || na + no > static_cast<int64_t>(in.size())) shapeError("custom_grad: bad operand counts");
  return std::vector<TensorType>(in.begin() + na, in.begin() + na + no);
}

std::vector<TensorType> fromRegions(const std::vector<TensorType>&, const Attrs&) {
  shapeError("autograd_function: result types come from its forward region");
}

std::vector<TensorType> inplaceRule(const std::vector<TensorType>& in, const Attrs&) {
  auto b = broadcastShapes(in[0].sizes, in[1].sizes);
  if (!b || *b != in[0].sizes)
    shapeError("in-place: source " + shapeStr(in[1].sizes) + " does not broadcast to destination " + shapeStr(in[0].sizes));
  return one(in[0]);
}

std::vector<TensorType> epilogueRule(const std::vector<TensorType>& in, const Attrs&) {
  if (in[0].sizes != in[1].sizes || in[0].dtype != in[1].dtype)
    shapeError("epilogue_copy: value " + in[1].str() + " does not match input " + in[0].str());
  return {};
}

constexpr ShapeRule ruleFor(OpKind k) {
  switch (k) {
    case OpKind::Constant: return constantRule;
    case OpKind::Add: case OpKind::Sub: case OpKind::Mul: return binary;
    case OpKind::Div: return divRule;
    case OpKind::Neg: case OpKind::Relu: case OpKind::Clone: return unary;
    case OpKind::Exp: case OpKind::Log: case OpKind::Tanh: case OpKind::Sigmoid: return unaryFloat;
    case OpKind::Sqrt: case OpKind::Rsqrt: return unaryFloat;
    case OpKind::Transpose: case OpKind::TransposeInplace: return transposeRule;
    case OpKind::Unsqueeze: case OpKind::UnsqueezeInplace: return unsqueezeRule;
    case OpKind::Squeeze: return squeezeRule;
    case OpKind::Slice: return sliceRule;
    case OpKind::Select: return selectRule;
    case OpKind::SliceScatter: return scatterRule<sliceRule>;
    case OpKind::SelectScatter: return scatterRule<selectRule>;
    case OpKind::KeepGrad: return keepGradRule;
    case OpKind::CustomGrad: return customGradRule;
    case OpKind::AutogradFunction: return fromRegions;
    case OpKind::TInplace: return tRule;
    case OpKind::Gt: return compare;
    case OpKind::Where: return whereRule;
    case OpKind::Sum: return sumRule;
    case OpKind::Mean: return meanRule;
    case OpKind::Mm: return mmRule;
    case OpKind::T: return tRule;
    case OpKind::View: return viewRule;
    case OpKind::Expand: return expandRule;
    case OpKind::Detach: return aliasRule;
    case OpKind::AddInplace: case OpKind::MulInplace: case OpKind::CopyInplace: return inplaceRule;
    case OpKind::EpilogueCopy: return epilogueRule;
  }
  return nullptr;
}

}  // namespace

const OpInfo& opInfo(OpKind k) { return kOps[static_cast<size_t>(k)]; }
const char* opName(OpKind k) { return opInfo(k).name; }
std::optional<OpKind> opFromName(const std::string& name) {
  for (auto& o : kOps)
    if (name == o.name) return o.kind;
  return std::nullopt;
}
bool hasShapeRule(OpKind k) { return ruleFor(k) != nullptr; }

std::vector<TensorType> inferTypes(OpKind op, const std::vector<TensorType>& ins, const Attrs& attrs) {
  const OpInfo& info = opInfo(op);
  if (info.arity >= 0 && static_cast<int>(ins.size()) != info.arity)
    shapeError(std::string(info.name) + " expects " + std::to_string(info.arity) + " tensor operand(s), got " +
               std::to_string(ins.size()));
  ShapeRule r = ruleFor(op);
  AOTC_CHECK(r, "no shape rule for ", info.name);
  return r(ins, attrs);
}

std::vector<TensorType> inferNodeTypes(OpKind op, const std::vector<TensorType>& ins, const Attrs& attrs,
                                       const std::vector<Graph>& regions) {
  if (op != OpKind::AutogradFunction) return inferTypes(op, ins, attrs);
  if (regions.size() != 2) shapeError("autograd_function needs a forward and a backward region");
  const Graph& fw = regions[0];
  if (fw.inputs.size() != ins.size())
    shapeError("autograd_function: forward region takes " + std::to_string(fw.inputs.size()) + " tensors, got " +
               std::to_string(ins.size()));
  std::vector<TensorType> out;
  for (const GraphOutput& o : fw.outputs)
    if (o.role == OutputRole::User) out.push_back(fw.type(o.value));
  return out;
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
      known *= size[i];
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
  for (int64_t s : oldshape) numel *= s;
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
    tensor_numel *= oldshape[tensor_d];
    if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 && oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel *= newshape[view_d];
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
const Ints& attrInts(const Attrs& a, const std::string& key) {
  auto it = a.find(key);
  if (it == a.end()) shapeError("missing attribute '" + key + "'");
  if (auto* p = std::get_if<Ints>(&it->second)) return *p;
  shapeError("attribute '" + key + "' must be a list of integers");
}

}  // namespace aotc
