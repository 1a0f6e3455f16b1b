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
#include "shape_util.h"

namespace aotc {

namespace detail {

[[noreturn]] void shapeError(const std::string& msg) { throw UserError(SourceLoc{}, msg); }

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

std::string shapeStr(const Ints& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

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

std::vector<TensorType> one(TensorType t) { return {std::move(t)}; }

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

std::vector<TensorType> constantRule(const std::vector<TensorType>&, const Attrs& a) {
  DType d = DType::F32;
  if (hasAttr(a, "dtype")) {
    auto p = parseDType(attrString(a, "dtype"));
    if (!p) shapeError("constant: unknown dtype");
    d = *p;
  }
  Ints shape = hasAttr(a, "shape") ? attrInts(a, "shape") : Ints{};
  for (int64_t s : shape)
    if (s < 0) shapeError("constant: negative size in " + shapeStr(shape));
  attrFloat(a, "value");
  return one(TensorType::contiguous(d, shape));
}

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
  t.offset = addSize(t.offset, mulSize(b.start, t.strides[d]));
  t.sizes[d] = b.length;
  t.strides[d] = mulSize(t.strides[d], b.step);
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
  t.offset = addSize(t.offset, mulSize(i, t.strides[d]));
  t.sizes.erase(t.sizes.begin() + d);
  t.strides.erase(t.strides.begin() + d);
  return one(t);
}

/// diagonal(x, offset, dim1, dim2): the other dims, then the diagonal (a
/// view: stride s1 + s2; ATen leaves the offset alone when it is empty).
std::vector<TensorType> diagonalRule(const std::vector<TensorType>& in, const Attrs& a) {
  TensorType t = in[0];
  if (t.rank() < 2) shapeError("diagonal: the input must have at least 2 dims");
  int64_t d1 = wrapDim(hasAttr(a, "dim1") ? attrInt(a, "dim1") : 0, t.rank());
  int64_t d2 = wrapDim(hasAttr(a, "dim2") ? attrInt(a, "dim2") : 1, t.rank());
  if (d1 == d2) shapeError("diagonal: dim1 and dim2 cannot be the same dim");
  int64_t off = hasAttr(a, "offset") ? attrInt(a, "offset") : 0;
  const int64_t n1 = t.sizes[static_cast<size_t>(d1)], n2 = t.sizes[static_cast<size_t>(d2)];
  const int64_t s1 = t.strides[static_cast<size_t>(d1)], s2 = t.strides[static_cast<size_t>(d2)];
  if (off > n2 || -off > n1) off = off > 0 ? n2 : -n1;  // empty either way; keeps the arithmetic small
  int64_t len = std::max<int64_t>(off >= 0 ? std::min(n1, n2 - off) : std::min(n1 + off, n2), 0);
  if (len > 0) t.offset = addSize(t.offset, off >= 0 ? mulSize(off, s2) : mulSize(-off, s1));
  Ints sizes, strides;
  for (int64_t d = 0; d < t.rank(); ++d)
    if (d != d1 && d != d2) {
      sizes.push_back(t.sizes[static_cast<size_t>(d)]);
      strides.push_back(t.strides[static_cast<size_t>(d)]);
    }
  sizes.push_back(len);
  strides.push_back(addSize(s1, s2));
  t.sizes = sizes;
  t.strides = strides;
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



std::vector<TensorType> argmaxRule(const std::vector<TensorType>& in, const Attrs& a) {
  if (!hasAttr(a, "dim")) return one(TensorType::contiguous(DType::I64, {}));
  Attrs r{{"dim", Ints{attrInt(a, "dim")}}, {"keepdim", attrBool(a, "keepdim", false)}};
  std::vector<TensorType> t = reduceTypes(in, r, false);
  t[0].dtype = DType::I64;
  return t;
}

std::vector<TensorType> bmmRule(const std::vector<TensorType>& in, const Attrs&) {
  if (in[0].rank() != 3 || in[1].rank() != 3 || in[0].sizes[0] != in[1].sizes[0] || in[0].sizes[2] != in[1].sizes[1])
    shapeError("bmm: shapes " + shapeStr(in[0].sizes) + " and " + shapeStr(in[1].sizes) + " cannot be multiplied");
  if (in[0].dtype != in[1].dtype) shapeError("bmm: dtypes differ");
  return one(TensorType::contiguous(in[0].dtype, {in[0].sizes[0], in[0].sizes[1], in[1].sizes[2]}));
}

Ints pair(const Attrs& a, const char* k, int64_t dflt) {
  if (!hasAttr(a, k)) return {dflt, dflt};
  Ints v = attrInts(a, k);
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) shapeError(std::string(k) + " must have 1 or 2 values");
  return v;
}

Ints convOut(const Ints& x, const Ints& w, const Attrs& a) {
  Ints st = pair(a, "stride", 1), pd = pair(a, "padding", 0), dl = pair(a, "dilation", 1);
  int64_t g = hasAttr(a, "groups") ? attrInt(a, "groups") : 1;
  if (x.size() != 4 || w.size() != 4) shapeError("conv2d expects 4-D input and weight, got " + shapeStr(x) + " and " + shapeStr(w));
  if (g <= 0 || x[1] != w[1] * g || w[0] % g != 0)
    shapeError("conv2d: input " + shapeStr(x) + " and weight " + shapeStr(w) + " do not match for groups=" + std::to_string(g));
  int64_t ho = windowOut(x[2], w[2], st[0], pd[0], dl[0], false), wo = windowOut(x[3], w[3], st[1], pd[1], dl[1], false);
  if (ho <= 0 || wo <= 0) shapeError("conv2d: output size is empty for input " + shapeStr(x));
  return {x[0], w[0], ho, wo};
}

std::vector<TensorType> conv2dRule(const std::vector<TensorType>& in, const Attrs& a) {
  if (in[0].dtype != in[1].dtype) shapeError("conv2d: input and weight dtypes differ");
  return one(TensorType::contiguous(in[0].dtype, convOut(in[0].sizes, in[1].sizes, a)));
}
std::vector<TensorType> conv2dBackInputRule(const std::vector<TensorType>& in, const Attrs& a) {
  Ints x = attrInts(a, "input_size");
  if (convOut(x, in[1].sizes, a) != in[0].sizes) shapeError("conv2d_backward_input: grad does not match the convolution");
  return one(TensorType::contiguous(in[0].dtype, x));
}
std::vector<TensorType> conv2dBackWeightRule(const std::vector<TensorType>& in, const Attrs& a) {
  Ints w = attrInts(a, "weight_size");
  if (convOut(in[1].sizes, w, a) != in[0].sizes) shapeError("conv2d_backward_weight: grad does not match the convolution");
  return one(TensorType::contiguous(in[0].dtype, w));
}

Ints poolOut(const Ints& x, const Attrs& a) {
  if (x.size() != 4) shapeError("pooling expects a 4-D input, got " + shapeStr(x));
  Window2d w = window2d(a);
  int64_t ho = windowOut(x[2], w.kh, w.sh, w.ph, w.dh, w.ceil), wo = windowOut(x[3], w.kw, w.sw, w.pw, w.dw, w.ceil);
  if (w.ph * 2 > w.kh || w.pw * 2 > w.kw) shapeError("pad should be at most half of the kernel size");
  if (ho <= 0 || wo <= 0) shapeError("pooling output is empty for input " + shapeStr(x));
  return {x[0], x[1], ho, wo};
}
std::vector<TensorType> maxPoolRule(const std::vector<TensorType>& in, const Attrs& a) {
  Ints o = poolOut(in[0].sizes, a);
  return {TensorType::contiguous(in[0].dtype, o), TensorType::contiguous(DType::I64, o)};
}
std::vector<TensorType> maxPoolBackRule(const std::vector<TensorType>& in, const Attrs& a) {
  if (in[1].dtype != DType::I64 || in[0].sizes != in[1].sizes) shapeError("max_pool2d_backward: indices do not match the grad");
  return one(TensorType::contiguous(in[0].dtype, attrInts(a, "input_size")));
}
std::vector<TensorType> avgPoolRule(const std::vector<TensorType>& in, const Attrs& a) {
  return one(TensorType::contiguous(in[0].dtype, poolOut(in[0].sizes, a)));
}
std::vector<TensorType> avgPoolBackRule(const std::vector<TensorType>& in, const Attrs& a) {
  Ints x = attrInts(a, "input_size");
  if (poolOut(x, a) != in[0].sizes) shapeError("avg_pool2d_backward: grad does not match the pooling");
  return one(TensorType::contiguous(in[0].dtype, x));
}

std::vector<TensorType> adaptivePoolRule(const std::vector<TensorType>& in, const Attrs& a) {
  Ints o = attrInts(a, "output_size");
  if (in[0].rank() != 4 || o.size() != 2 || o[0] <= 0 || o[1] <= 0)
    shapeError("adaptive_avg_pool2d expects a 4-D input and a 2-value positive output size");
  return one(TensorType::contiguous(in[0].dtype, {in[0].sizes[0], in[0].sizes[1], o[0], o[1]}));
}
std::vector<TensorType> adaptivePoolBackRule(const std::vector<TensorType>& in, const Attrs& a) {
  Ints x = attrInts(a, "input_size");
  if (x.size() != 4 || in[0].rank() != 4 || in[0].sizes[0] != x[0] || in[0].sizes[1] != x[1])
    shapeError("adaptive_avg_pool2d_backward: grad does not match the input size");
  return one(TensorType::contiguous(in[0].dtype, x));
}

std::vector<TensorType> indexSelectRule(const std::vector<TensorType>& in, const Attrs& a) {
  if (in[1].rank() > 1 || (in[1].dtype != DType::I64 && in[1].dtype != DType::I32))
    shapeError("index_select: index must be a 1-D integer tensor");
  Ints s = in[0].sizes;
  int64_t d = wrapDim(attrInt(a, "dim"), std::max<int64_t>(in[0].rank(), 1));
  if (!s.empty()) s[d] = in[1].numel();
  return one(TensorType::contiguous(in[0].dtype, s));
}
std::vector<TensorType> indexAddRule(const std::vector<TensorType>& in, const Attrs& a) {
  Ints want = indexSelectRule({in[0], in[1]}, a)[0].sizes;
  if (in[2].sizes != want) shapeError("index_add: source " + shapeStr(in[2].sizes) + " does not match " + shapeStr(want));
  return one(TensorType::contiguous(in[0].dtype, in[0].sizes));
}
std::vector<TensorType> gatherRule(const std::vector<TensorType>& in, const Attrs& a) {
  if (in[1].dtype != DType::I64 || in[1].rank() != in[0].rank()) shapeError("gather: index must be int64 with the input's rank");
  wrapDim(attrInt(a, "dim"), std::max<int64_t>(in[0].rank(), 1));
  return one(TensorType::contiguous(in[0].dtype, in[1].sizes));
}
std::vector<TensorType> scatterAddRule(const std::vector<TensorType>& in, const Attrs& a) {
  if (in[1].dtype != DType::I64 || in[1].sizes != in[2].sizes || in[1].rank() != in[0].rank())
    shapeError("scatter_add: index and source must have the same shape, with the input's rank");
  wrapDim(attrInt(a, "dim"), std::max<int64_t>(in[0].rank(), 1));
  return one(TensorType::contiguous(in[0].dtype, in[0].sizes));
}
std::vector<TensorType> scatterRule2(const std::vector<TensorType>& in, const Attrs& a) {
  if (in[1].dtype != DType::I64 || in[1].rank() != in[0].rank() || in[2].rank() != in[0].rank())
    shapeError("scatter: index and source must be int64 and have the input's rank");
  for (int64_t d = 0; d < in[1].rank(); ++d)
    if (in[1].sizes[static_cast<size_t>(d)] > in[2].sizes[static_cast<size_t>(d)])
      shapeError("scatter: the index is larger than the source in dim " + std::to_string(d));
  if (in[2].dtype != in[0].dtype) shapeError("scatter: source and input dtypes differ");
  wrapDim(attrInt(a, "dim"), std::max<int64_t>(in[0].rank(), 1));
  return one(TensorType::contiguous(in[0].dtype, in[0].sizes));
}
std::vector<TensorType> cumsumRule(const std::vector<TensorType>& in, const Attrs& a) {
  wrapDim(attrInt(a, "dim"), std::max<int64_t>(in[0].rank(), 1));
  return one(TensorType::contiguous(isFloating(in[0].dtype) ? in[0].dtype : DType::I64, in[0].sizes));
}
std::vector<TensorType> sortRule(const std::vector<TensorType>& in, const Attrs& a) {
  wrapDim(attrInt(a, "dim"), std::max<int64_t>(in[0].rank(), 1));
  if (in[0].dtype == DType::Bool) shapeError("sort of a bool tensor is not supported");
  return {TensorType::contiguous(in[0].dtype, in[0].sizes), TensorType::contiguous(DType::I64, in[0].sizes)};
}
std::vector<TensorType> catRule(const std::vector<TensorType>& in, const Attrs& a) {
  if (in.empty()) shapeError("cat: expects at least one tensor");
  Ints s = in[0].sizes;
  if (s.empty()) shapeError("cat: zero-dimensional tensors cannot be concatenated");
  int64_t d = wrapDim(attrInt(a, "dim"), static_cast<int64_t>(s.size()));
  DType dt = in[0].dtype;
  s[d] = 0;
  for (auto& t : in) {
    if (t.rank() != static_cast<int64_t>(s.size())) shapeError("cat: tensors must have the same rank");
    for (size_t i = 0; i < s.size(); ++i)
      if (static_cast<int64_t>(i) != d && t.sizes[i] != in[0].sizes[i])
        shapeError("cat: sizes " + shapeStr(t.sizes) + " and " + shapeStr(in[0].sizes) + " differ outside dim " + std::to_string(d));
    s[d] += t.sizes[d];
    dt = promote(dt, t.dtype);
  }
  return one(TensorType::contiguous(dt, s));
}
std::vector<TensorType> padRule(const std::vector<TensorType>& in, const Attrs& a) {
  Ints p = attrInts(a, "pad");
  Ints s = in[0].sizes;
  if (p.size() % 2 || p.size() / 2 > s.size()) shapeError("pad: padding length must be even and at most twice the rank");
  for (size_t i = 0; i < p.size() / 2; ++i) {
    size_t d = s.size() - 1 - i;
    s[d] = addSize(s[d], addSize(p[2 * i], p[2 * i + 1]));
    if (s[d] < 0) shapeError("pad: resulting size is negative");
  }
  return one(TensorType::contiguous(in[0].dtype, s));
}
std::vector<TensorType> arangeRule(const std::vector<TensorType>&, const Attrs& a) {
  double start = attrFloat(a, "start"), end = attrFloat(a, "end"), step = attrFloat(a, "step");
  double n = std::ceil((end - start) / step);
  if (!std::isfinite(start) || !std::isfinite(end) || step == 0 || !(n >= 0))
    shapeError("arange: bad start/end/step");
  if (n > static_cast<double>(kMaxExtent)) shapeError("arange: " + std::to_string(n) + " elements is more than 2^48");
  auto d = parseDType(attrString(a, "dtype"));
  if (!d) shapeError("arange: unknown dtype");
  return one(TensorType::contiguous(*d, {static_cast<int64_t>(n)}));
}
std::vector<TensorType> permuteRule(const std::vector<TensorType>& in, const Attrs& a) {
  Ints p = attrInts(a, "dims");
  if (static_cast<int64_t>(p.size()) != in[0].rank()) shapeError("permute: dims must name every dim once");
  TensorType t = in[0];
  std::vector<bool> seen(p.size(), false);
  for (size_t i = 0; i < p.size(); ++i) {
    int64_t d = wrapDim(p[i], in[0].rank());
    if (seen[d]) shapeError("permute: repeated dim");
    seen[d] = true;
    t.sizes[i] = in[0].sizes[d];
    t.strides[i] = in[0].strides[d];
  }
  return one(t);
}

std::vector<TensorType> randMaskRule(const std::vector<TensorType>& in, const Attrs& a) {
  if (in[0].dtype != DType::I64 || in[0].numel() != 1) shapeError("rand_mask: the seed must be one int64");
  double p = attrFloat(a, "prob");
  if (!(p >= 0 && p <= 1)) shapeError("rand_mask: probability must be in [0, 1]");
  attrInt(a, "offset");
  return one(TensorType::contiguous(DType::Bool, attrInts(a, "shape")));
}

std::vector<TensorType> randUniformRule(const std::vector<TensorType>& in, const Attrs& a) {
  if (in[0].dtype != DType::I64 || in[0].numel() != 1) shapeError("rand_uniform: the seed must be one int64");
  DType d = *parseDType(attrString(a, "dtype"));
  if (!isFloating(d)) shapeError("rand_uniform: the dtype must be floating point");
  attrInt(a, "offset");
  return one(TensorType::contiguous(d, attrInts(a, "shape")));
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
  switch (k) {  // elementwise ops and reductions: their rows in pointwise.cpp, reductions.cpp
    case OpKind::Constant: return constantRule;
    case OpKind::Transpose: case OpKind::TransposeInplace: return transposeRule;
    case OpKind::Unsqueeze: case OpKind::UnsqueezeInplace: return unsqueezeRule;
    case OpKind::Squeeze: case OpKind::SqueezeInplace: return squeezeRule;
    case OpKind::Slice: return sliceRule;
    case OpKind::Select: return selectRule;
    case OpKind::SliceScatter: return scatterRule<sliceRule>;
    case OpKind::SelectScatter: return scatterRule<selectRule>;
    case OpKind::Diagonal: return diagonalRule;
    case OpKind::DiagonalScatter: return scatterRule<diagonalRule>;
    case OpKind::KeepGrad: return keepGradRule;
    case OpKind::CustomGrad: return customGradRule;
    case OpKind::AutogradFunction: return fromRegions;
    case OpKind::TInplace: return tRule;
    case OpKind::ArgMax: return argmaxRule;
    case OpKind::Bmm: return bmmRule;
    case OpKind::Conv2d: return conv2dRule;
    case OpKind::Conv2dBackwardInput: return conv2dBackInputRule;
    case OpKind::Conv2dBackwardWeight: return conv2dBackWeightRule;
    case OpKind::MaxPool2d: return maxPoolRule;
    case OpKind::MaxPool2dBackward: return maxPoolBackRule;
    case OpKind::AvgPool2d: return avgPoolRule;
    case OpKind::AvgPool2dBackward: return avgPoolBackRule;
    case OpKind::AdaptiveAvgPool2d: return adaptivePoolRule;
    case OpKind::AdaptiveAvgPool2dBackward: return adaptivePoolBackRule;
    case OpKind::IndexSelect: return indexSelectRule;
    case OpKind::IndexAdd: return indexAddRule;
    case OpKind::Gather: return gatherRule;
    case OpKind::ScatterAdd: return scatterAddRule;
    case OpKind::Cumsum: return cumsumRule;
    case OpKind::Scatter: return scatterRule2;
    case OpKind::Sort: return sortRule;
    case OpKind::Cat: return catRule;
    case OpKind::Pad: return padRule;
    case OpKind::Arange: return arangeRule;
    case OpKind::Permute: return permuteRule;
    case OpKind::RandMask: return randMaskRule;
    case OpKind::RandUniform: return randUniformRule;
    case OpKind::Mm: return mmRule;
    case OpKind::T: return tRule;
    case OpKind::View: return viewRule;
    case OpKind::Expand: return expandRule;
    case OpKind::Detach: return aliasRule;
    case OpKind::AddInplace: case OpKind::MulInplace: case OpKind::CopyInplace: return inplaceRule;
    case OpKind::EpilogueCopy: return epilogueRule;
    default: break;
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
/// The op's shape rule: its pointwise or reduction row's, or its case above.
ShapeRule shapeRuleOf(OpKind k) {
  if (const PointwiseRule* p = pointwiseRule(k)) return p->types;
  if (const ReductionRule* r = reductionRule(k)) return r->types;
  return ruleFor(k);
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


std::vector<TensorType> inferTypes(OpKind op, const std::vector<TensorType>& ins, const Attrs& attrs) {
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
  Ints k = pair(a, "kernel", 1);
  Ints st = hasAttr(a, "stride") && !attrInts(a, "stride").empty() ? pair(a, "stride", 1) : k;
  Ints pd = pair(a, "padding", 0), dl = pair(a, "dilation", 1);
  return Window2d{k[0], k[1], st[0], st[1], pd[0], pd[1], dl[0], dl[1], attrBool(a, "ceil_mode", false)};
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
