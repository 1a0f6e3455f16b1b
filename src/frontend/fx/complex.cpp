//===- fx/complex.cpp - Complex tensors as (re, im) pairs -------------------===//
//
// The spellings that may read or make a complex tensor (Note [Complex
// values]): the FFTs, view_as_real/complex, real/imag/abs/angle, arithmetic,
// reductions and views over pairs.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

// Note [Complex values]
// ~~~~~~~~~~~~~~~~~~~~~
// A complex tensor is held as real (re, im) pairs (Note [Complex tensors as
// pairs] in aotc/ops/decompose.h); the Converter's complex set names the
// values that are pairs.  Only the rules below may read one: every other op
// given a complex tensor is refused naming it (treating its pairs as a real
// tensor would be a wrong answer), and a complex graph result is refused too
// (aotc's results are real: return torch.view_as_real(z)).  A rule's dims
// count the complex tensor's dims, so they are wrapped against its rank before
// they reach the pair tensor, whose extra dim is always last.  Meta records
// complex64 for f32 pairs and complex128 for f64 pairs.
namespace cplx {

struct Rule {
  bool always;  ///< applies to real arguments too (it makes a complex value)
  bool result;  ///< its results are complex pairs
  std::function<V(Converter&)> fn;
};

bool mentions(const json& a, const Converter& c) {
  if (a.is_object() && a.contains("node") && a["node"].is_string()) {
    auto it = c.env().find(a["node"].get<std::string>());
    if (it == c.env().end()) return false;
    for (ValueId v : it->second)
      if (v != kNoValue && c.isComplex(v)) return true;
    return false;
  }
  if (a.is_array() || a.is_object())
    for (const json& x : a)
      if (mentions(x, c)) return true;
  return false;
}

/// The complex tensor argument i.
ValueId complexArg(Converter& c, size_t i, const char* kw) {
  ValueId z = c.tensor(i, kw);
  if (!c.isComplex(z)) c.fail(cat("argument ", i, " must be a complex tensor here"));
  return z;
}
int64_t rankOf(Converter& c, ValueId z) { return c.type(z).rank() - (c.isComplex(z) ? 1 : 0); }

ValueId part(Converter& c, ValueId z, int64_t i) {
  return c.op(OpKind::Select, {z}, Attrs{{"dim", c.type(z).rank() - 1}, {"index", i}});
}
/// A real operand as pairs with a zero imaginary part.
ValueId asPairs(Converter& c, ValueId x) { return c.isComplex(x) ? x : pairOf(c, x, c.zeros(c.type(x))); }
/// A real operand shaped to multiply pairs elementwise.
ValueId perPair(Converter& c, ValueId x) { return c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", c.type(x).rank()}}); }

/// The same node with the complex dims in `dimArgs` wrapped to their
/// non-negative spelling, converted by the real rule: on pairs, a
/// non-negative dim names the same dim, and the pair dim stays last.
V wrappedDims(Converter& c, const std::string& target, std::vector<std::pair<size_t, const char*>> dimArgs, int64_t extra = 0) {
  ValueId z = complexArg(c, 0, "self");
  const int64_t r = rankOf(c, z) + extra;
  json node = c.node();
  for (auto [i, kw] : dimArgs) {
    json* a = i < node["args"].size() ? &node["args"][i]
              : (node.contains("kwargs") && node["kwargs"].contains(kw) ? &node["kwargs"][kw] : nullptr);
    if (!a || a->is_null()) continue;
    auto wrap = [&](json& d) {
      if (!d.is_number_integer()) c.fail(cat("argument ", i, " must be a dim, got ", d.dump()));
      d = wrapDim(c.checkedInt(d, i), std::max<int64_t>(r, 1));
    };
    if (a->is_array())
      for (json& d : *a) wrap(d);
    else
      wrap(*a);
  }
  Converter inner = c.sub(node);
  inner.setComplex(nullptr);  // the real rule sees the pairs as they are
  V out = converters().at(target)(inner);
  c.delegatedTo(inner, target);
  return out;
}

/// Complex dims for a reduction: the listed ones wrapped, or all of them.
Ints reductionDims(Converter& c, ValueId z) {
  const int64_t r = rankOf(c, z);
  Ints dims = c.ints(1, "dim", Ints{});
  if (dims.empty())
    for (int64_t d = 0; d < r; ++d) dims.push_back(d);
  for (int64_t& d : dims) d = wrapDim(d, std::max<int64_t>(r, 1));
  return dims;
}

/// fft's normalization enum: 0 none, 1 by 1/sqrt(n), 2 by 1/n, n the
/// product of the signal sizes.
ValueId normalized(Converter& c, ValueId v, int64_t mode, int64_t n) {
  if (mode < 0 || mode > 2) c.fail(cat("normalization must be 0, 1 or 2, got ", mode));
  if (mode == 0) return v;
  return c.scaled(v, mode == 1 ? 1.0 / std::sqrt(static_cast<double>(n)) : 1.0 / static_cast<double>(n));
}
Ints fftDims(Converter& c, int64_t rank) {
  Ints dims = c.ints(1, "dim");
  if (dims.empty()) c.fail("a Fourier transform over no dims");
  for (int64_t& d : dims) d = wrapDim(d, std::max<int64_t>(rank, 1));
  if (std::set<int64_t>(dims.begin(), dims.end()).size() != dims.size()) c.fail("a dim is listed twice");
  return dims;
}

V r2c(Converter& c) {
  ValueId x = c.tensor(0, "self");
  if (c.isComplex(x)) c.fail("_fft_r2c takes a real tensor; this one is complex");
  if (c.type(x).dtype != DType::F32 && c.type(x).dtype != DType::F64)
    c.fail(cat("_fft_r2c of ", dtypeName(c.type(x).dtype), ": aotc holds complex64 and complex128 only (f32 or f64 input)"));
  Ints dims = fftDims(c, c.type(x).rank());
  int64_t n = 1;
  for (int64_t d : dims) n = mulSize(n, c.type(x).sizes[static_cast<size_t>(d)]);
  // ATen: one-sided r2c over the last listed dim, then c2c over the others.
  ValueId z = dftRealToComplex(c, x, dims.back(), c.boolean(3, "onesided", true));
  for (size_t i = 0; i + 1 < dims.size(); ++i) z = dftComplexToComplex(c, z, dims[i], true);
  return {normalized(c, z, c.integer(2, "normalization"), n)};
}

V c2c(Converter& c) {
  ValueId z = complexArg(c, 0, "self");
  Ints dims = fftDims(c, rankOf(c, z));
  int64_t n = 1;
  for (int64_t d : dims) n = mulSize(n, c.type(z).sizes[static_cast<size_t>(d)]);
  bool forward = c.boolean(3, "forward", true);
  for (int64_t d : dims) z = dftComplexToComplex(c, z, d, forward);
  return {normalized(c, z, c.integer(2, "normalization"), n)};
}

V c2r(Converter& c) {
  ValueId z = complexArg(c, 0, "self");
  Ints dims = fftDims(c, rankOf(c, z));
  int64_t last = c.integer(3, "last_dim_size");
  if (last <= 0) c.fail(cat("last_dim_size must be positive, got ", last));
  int64_t n = last;
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    n = mulSize(n, c.type(z).sizes[static_cast<size_t>(dims[i])]);
    z = dftComplexToComplex(c, z, dims[i], false);
  }
  return {normalized(c, dftComplexToReal(c, z, dims.back(), last), c.integer(2, "normalization"), n)};
}

/// |z|, computed in f64 for narrower dtypes so re^2 + im^2 neither
/// overflows nor underflows where |z| does not; its gradient at 0 is 0, as
/// ATen's (grad * sgn(z)), not the NaN of sqrt'(0).
V absOf(Converter& c) {
  ValueId z = complexArg(c, 0, "self");
  const DType d = c.type(z).dtype, w = DType::F64;
  ValueId re = c.cast(part(c, z, 0), w), im = c.cast(part(c, z, 1), w);
  ValueId s = bin(c, OpKind::Add, {c.mul(re, re), c.mul(im, im)});
  ValueId zero = c.op(OpKind::Eq, {s, c.scalar(0.0, w)});
  ValueId safe = c.op(OpKind::Where, {zero, c.scalar(1.0, w), s});
  return {c.cast(c.op(OpKind::Where, {zero, c.scalar(0.0, w), c.op(OpKind::Sqrt, {safe})}), d)};
}

/// atan2(im, re), 0 at z = 0 with a zero gradient there (ATen's angle_backward).
V angleOf(Converter& c) {
  ValueId z = complexArg(c, 0, "self");
  ValueId re = part(c, z, 0), im = part(c, z, 1);
  ValueId zero = c.op(OpKind::LogicalAnd, {c.op(OpKind::Eq, {re, c.scalarLike(0.0, re)}), c.op(OpKind::Eq, {im, c.scalarLike(0.0, im)})});
  ValueId re1 = c.op(OpKind::Where, {zero, c.scalarLike(1.0, re), re});
  ValueId im0 = c.op(OpKind::Where, {zero, c.scalarLike(0.0, im), im});
  return {c.op(OpKind::Atan2, {im0, re1})};
}

/// The second operand of a binary op: a tensor, or a real Python number.
ValueId other(Converter& c, ValueId self) { return c.operand(1, "other", self); }

V mulOf(Converter& c) {
  ValueId a = c.tensor(0, "self"), b = other(c, a);
  if (!c.isComplex(a)) std::swap(a, b);
  if (!c.isComplex(b)) return {c.mul(a, perPair(c, b))};
  ValueId ar = part(c, a, 0), ai = part(c, a, 1), br = part(c, b, 0), bi = part(c, b, 1);
  ValueId re = bin(c, OpKind::Sub, {c.mul(ar, br), c.mul(ai, bi)});
  ValueId im = bin(c, OpKind::Add, {c.mul(ar, bi), c.mul(ai, br)});
  return {pairOf(c, re, im)};
}

V divOf(Converter& c) {
  if (c.has(2, "rounding_mode")) c.fail("div with a rounding mode is not defined for complex tensors");
  ValueId a = c.tensor(0, "self"), b = other(c, a);
  if (!c.isComplex(b)) return {c.div(a, perPair(c, b))};
  a = asPairs(c, a);
  // a / b = a conj(b) / |b|^2.
  ValueId ar = part(c, a, 0), ai = part(c, a, 1), br = part(c, b, 0), bi = part(c, b, 1);
  ValueId den = bin(c, OpKind::Add, {c.mul(br, br), c.mul(bi, bi)});
  ValueId re = c.div(bin(c, OpKind::Add, {c.mul(ar, br), c.mul(ai, bi)}), den);
  ValueId im = c.div(bin(c, OpKind::Sub, {c.mul(ai, br), c.mul(ar, bi)}), den);
  return {pairOf(c, re, im)};
}

V addOf(Converter& c, double sign) {
  ValueId a = asPairs(c, c.tensor(0, "self"));
  ValueId b = asPairs(c, other(c, a));  // a Python number too: (x, 0)
  return {c.add(a, c.scaled(b, sign * c.number(2, "alpha", 1.0)))};
}

V reduceOf(Converter& c, OpKind k) {
  ValueId z = complexArg(c, 0, "self");
  c.requireNone(3, "dtype", "dtype=");
  return {c.op(k, {z}, Attrs{{"dim", reductionDims(c, z)}, {"keepdim", c.boolean(2, "keepdim", false)}})};
}

V viewOf(Converter& c) {
  ValueId z = complexArg(c, 0, "self");
  Ints size = inferViewSize(c.has(1, "size") ? c.ints(1, "size") : c.ints(1, "shape"), c.type(z).numel() / 2);
  size.push_back(2);
  return {reshapeTo(c, z, size)};
}

V permuteOf(Converter& c) {
  ValueId z = complexArg(c, 0, "self");
  const int64_t r = rankOf(c, z);
  Ints dims = c.ints(1, "dims");
  for (int64_t& d : dims) d = wrapDim(d, std::max<int64_t>(r, 1));
  dims.push_back(r);
  return {c.op(OpKind::Permute, {z}, Attrs{{"dims", dims}})};
}

const std::map<std::string, Rule>& rules() {
  using P = std::vector<std::pair<size_t, const char*>>;
  auto dimsAt = [](std::string target, P dims, int64_t extra = 0) {
    return Rule{false, true, [target, dims, extra](Converter& c) { return wrappedDims(c, target, dims, extra); }};
  };
  static const std::map<std::string, Rule> table{
      {"aten._fft_r2c.default", {true, true, r2c}},
      {"aten._fft_c2c.default", {false, true, c2c}},
      {"aten._fft_c2r.default", {false, false, c2r}},
      {"aten.view_as_real.default",
       {false, false, [](Converter& c) -> V { ValueId z = complexArg(c, 0, "self"); return {c.op(OpKind::View, {z}, Attrs{{"size", c.type(z).sizes}})}; }}},
      {"aten.view_as_complex.default",
       {true, true,
        [](Converter& c) -> V {
          ValueId x = c.tensor(0, "self");
          const TensorType t = c.type(x);
          if (c.isComplex(x)) c.fail("view_as_complex takes a real tensor; this one is complex");
          if (t.dtype != DType::F32 && t.dtype != DType::F64)
            c.fail(cat("view_as_complex: aotc holds complex64 and complex128 only (f32 or f64 pairs), got ", dtypeName(t.dtype)));
          if (t.rank() == 0 || t.sizes.back() != 2) c.fail(cat("view_as_complex needs a last dim of size 2, got ", t.str()));
          return {c.op(OpKind::View, {x}, Attrs{{"size", t.sizes}})};
        }}},
      {"aten.real.default", {false, false, [](Converter& c) -> V { return {part(c, complexArg(c, 0, "self"), 0)}; }}},
      {"aten.imag.default", {false, false, [](Converter& c) -> V { return {part(c, complexArg(c, 0, "self"), 1)}; }}},
      {"aten.abs.default", {false, false, absOf}},
      {"aten.angle.default", {false, false, angleOf}},
      {"aten.mul.Tensor", {false, true, mulOf}},
      {"aten.mul.Scalar", {false, true, mulOf}},
      {"aten.div.Tensor", {false, true, divOf}},
      {"aten.div.Scalar", {false, true, divOf}},
      {"aten.add.Tensor", {false, true, [](Converter& c) { return addOf(c, 1.0); }}},
      {"aten.sub.Tensor", {false, true, [](Converter& c) { return addOf(c, -1.0); }}},
      {"aten.neg.default", {false, true, [](Converter& c) -> V { return {c.neg(complexArg(c, 0, "self"))}; }}},
      {"aten.sum.dim_IntList", {false, true, [](Converter& c) { return reduceOf(c, OpKind::Sum); }}},
      {"aten.mean.dim", {false, true, [](Converter& c) { return reduceOf(c, OpKind::Mean); }}},
      {"aten.view.default", {false, true, viewOf}},
      {"aten.reshape.default", {false, true, viewOf}},
      {"aten._unsafe_view.default", {false, true, viewOf}},
      {"aten.permute.default", {false, true, permuteOf}},
      {"aten.select.int", dimsAt("aten.select.int", P{{1, "dim"}})},
      {"aten.slice.Tensor", dimsAt("aten.slice.Tensor", P{{1, "dim"}})},
      {"aten.transpose.int", dimsAt("aten.transpose.int", P{{1, "dim0"}, {2, "dim1"}})},
      {"aten.transpose_.default", dimsAt("aten.transpose_.default", P{{1, "dim0"}, {2, "dim1"}})},
      {"aten.unsqueeze.default", dimsAt("aten.unsqueeze.default", P{{1, "dim"}}, 1)},
      {"aten.unsqueeze_.default", dimsAt("aten.unsqueeze_.default", P{{1, "dim"}}, 1)},
      {"aten.squeeze.default", dimsAt("aten.squeeze.default", P{})},
      {"aten.squeeze.dim", dimsAt("aten.squeeze.dim", P{{1, "dim"}})},
      {"aten.squeeze.dims", dimsAt("aten.squeeze.dims", P{{1, "dim"}})},
      {"aten.squeeze_.default", dimsAt("aten.squeeze_.default", P{})},
      {"aten.squeeze_.dim", dimsAt("aten.squeeze_.dim", P{{1, "dim"}})},
      {"aten.squeeze_.dims", dimsAt("aten.squeeze_.dims", P{{1, "dim"}})},
      {"aten.clone.default", dimsAt("aten.clone.default", P{})},
      {"aten.detach.default", dimsAt("aten.detach.default", P{})},
      {"aten.alias.default", dimsAt("aten.alias.default", P{})},
  };
  return table;
}

/// The ops that take complex tensors, for the refusal message.
std::string ruleList() {
  std::set<std::string> ops;
  for (const auto& [t, r] : rules()) {
    auto p = spelling::parse(t);
    ops.insert(p ? p->name.substr(5) : t);
  }
  std::string s;
  for (const std::string& o : ops) s += (s.empty() ? "" : ", ") + o;
  return s;
}

}  // namespace cplx

bool complexTarget(const std::string& target) { return cplx::rules().count(target) > 0; }

std::optional<V> convertComplex(Converter& c, const std::string& target) {
  auto it = cplx::rules().find(target);
  bool always = it != cplx::rules().end() && it->second.always;
  std::string reads;  // the first argument that is (or holds) a complex tensor
  if (c.complexValues() && !c.complexValues()->empty()) {
    for (size_t i = 0; i < c.node().at("args").size() && reads.empty(); ++i)
      if (cplx::mentions(c.node()["args"][i], c)) reads = cat("argument ", i);
    if (c.node().contains("kwargs"))
      for (const auto& [k, a] : c.node()["kwargs"].items())
        if (reads.empty() && cplx::mentions(a, c)) reads = "argument " + k;
  }
  if (reads.empty() && !always) return std::nullopt;
  if (it == cplx::rules().end())
    c.fail(cat(reads, " is a complex tensor, which aotc holds as real (re, im) pairs and reads only in: ", cplx::ruleList()));
  V out = it->second.fn(c);
  if (it->second.result) {
    if (!c.complexValues()) c.fail("complex values are not supported here");
    for (ValueId v : out) c.complexValues()->insert(v);
  }
  return out;
}

}  // namespace aotc::fx
