//===- linalg.cpp - GEMMs and convolutions: library calls -----------------===//
//
// Note [Op rows] (rules.h) says what a row holds and who reads it.  These
// ops run as cuBLAS GEMMs and cuDNN convolutions (Lowering::Gemm/Conv: the
// code generator spells the call, its operand layouts and workspaces); the
// reference kernels accumulate in double.  Convolution's two backwards are
// ops of their own, each linear in both operands, so second derivatives
// are these three ops again.  Gradient rules follow Note [Node order].
//===----------------------------------------------------------------------===//
#include "rule_util.h"

namespace aotc::detail {

namespace {

using K = OpKind;
using R = std::vector<ValueId>;
using TT = std::vector<TensorType>;

// ---- shape rules

TT mmRule(const TT& in, const Attrs&) {
  if (in[0].rank() != 2 || in[1].rank() != 2)
    shapeError("mm: both operands must be 2-D, got " + shapeStr(in[0].sizes) + " and " + shapeStr(in[1].sizes));
  if (in[0].sizes[1] != in[1].sizes[0])
    shapeError("mm: shapes " + shapeStr(in[0].sizes) + " and " + shapeStr(in[1].sizes) + " cannot be multiplied");
  if (in[0].dtype != in[1].dtype)
    shapeError("mm: dtypes differ: " + std::string(dtypeName(in[0].dtype)) + " and " + dtypeName(in[1].dtype));
  return one(TensorType::contiguous(in[0].dtype, {in[0].sizes[0], in[1].sizes[1]}));
}
TT bmmRule(const TT& in, const Attrs&) {
  if (in[0].rank() != 3 || in[1].rank() != 3 || in[0].sizes[0] != in[1].sizes[0] || in[0].sizes[2] != in[1].sizes[1])
    shapeError("bmm: shapes " + shapeStr(in[0].sizes) + " and " + shapeStr(in[1].sizes) + " cannot be multiplied");
  if (in[0].dtype != in[1].dtype) shapeError("bmm: dtypes differ");
  return one(TensorType::contiguous(in[0].dtype, {in[0].sizes[0], in[0].sizes[1], in[1].sizes[2]}));
}
Ints convOut(const Ints& x, const Ints& w, const Attrs& a) {
  Ints st = attrPair(a, "stride", 1), pd = attrPair(a, "padding", 0), dl = attrPair(a, "dilation", 1);
  int64_t g = hasAttr(a, "groups") ? attrInt(a, "groups") : 1;
  if (x.size() != 4 || w.size() != 4) shapeError("conv2d expects 4-D input and weight, got " + shapeStr(x) + " and " + shapeStr(w));
  if (g <= 0 || x[1] != w[1] * g || w[0] % g != 0)
    shapeError("conv2d: input " + shapeStr(x) + " and weight " + shapeStr(w) + " do not match for groups=" + std::to_string(g));
  int64_t ho = windowOut(x[2], w[2], st[0], pd[0], dl[0], false), wo = windowOut(x[3], w[3], st[1], pd[1], dl[1], false);
  if (ho <= 0 || wo <= 0) shapeError("conv2d: output size is empty for input " + shapeStr(x));
  return {x[0], w[0], ho, wo};
}
TT conv2dRule(const TT& in, const Attrs& a) {
  if (in[0].dtype != in[1].dtype) shapeError("conv2d: input and weight dtypes differ");
  return one(TensorType::contiguous(in[0].dtype, convOut(in[0].sizes, in[1].sizes, a)));
}
TT conv2dBackInputRule(const TT& in, const Attrs& a) {
  Ints x = attrInts(a, "input_size");
  if (convOut(x, in[1].sizes, a) != in[0].sizes) shapeError("conv2d_backward_input: grad does not match the convolution");
  return one(TensorType::contiguous(in[0].dtype, x));
}
TT conv2dBackWeightRule(const TT& in, const Attrs& a) {
  Ints w = attrInts(a, "weight_size");
  if (convOut(in[1].sizes, w, a) != in[0].sizes) shapeError("conv2d_backward_weight: grad does not match the convolution");
  return one(TensorType::contiguous(in[0].dtype, w));
}

// ---- reference kernels

Outs mmRef(const Ins& in, const Attrs&, const std::vector<TensorType>& ot) {
  const HostTensor &a = *in[0], &b = *in[1];
  int64_t n = a.sizes[0], k = a.sizes[1], m = b.sizes[1];
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += a.data[static_cast<size_t>(i * k + p)] * b.data[static_cast<size_t>(p * m + j)];
      o.data[static_cast<size_t>(i * m + j)] = roundTo(o.dtype, s);
    }
  return {std::move(o)};
}
Outs bmmRef(const Ins& in, const Attrs&, const std::vector<TensorType>& ot) {
  const HostTensor &a = *in[0], &b = *in[1];
  int64_t B = a.sizes[0], n = a.sizes[1], k = a.sizes[2], m = b.sizes[2];
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  for (int64_t z = 0; z < B; ++z)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += a.data[static_cast<size_t>((z * n + i) * k + p)] * b.data[static_cast<size_t>((z * k + p) * m + j)];
        o.data[static_cast<size_t>((z * n + i) * m + j)] = roundTo(o.dtype, s);
      }
  return {o};
}

struct ConvGeom {
  int64_t N, C, H, W, O, kh, kw, Ho, Wo, sh, sw, ph, pw, dh, dw, g;
};

ConvGeom convGeom(const Ints& x, const Ints& w, const Ints& out, const Attrs& a) {
  Window2d win = window2d(Attrs{{"kernel", Ints{w[2], w[3]}},
                                {"stride", hasAttr(a, "stride") ? attrInts(a, "stride") : Ints{1}},
                                {"padding", hasAttr(a, "padding") ? attrInts(a, "padding") : Ints{0}},
                                {"dilation", hasAttr(a, "dilation") ? attrInts(a, "dilation") : Ints{1}}});
  return ConvGeom{x[0], x[1], x[2], x[3], w[0], w[2], w[3], out[2], out[3], win.sh, win.sw, win.ph, win.pw, win.dh, win.dw,
                  hasAttr(a, "groups") ? attrInt(a, "groups") : 1};
}

/// Visits every (n, o, y, x, c, i, j) term of a 2-D convolution with the
/// flat offsets of its input, weight and output elements.
template <typename F>
void convTerms(const ConvGeom& g, F f) {
  int64_t cpg = g.C / g.g, opg = g.O / g.g;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t o = 0; o < g.O; ++o) {
      int64_t grp = o / opg;
      for (int64_t y = 0; y < g.Ho; ++y)
        for (int64_t x = 0; x < g.Wo; ++x) {
          int64_t oo = ((n * g.O + o) * g.Ho + y) * g.Wo + x;
          for (int64_t c = 0; c < cpg; ++c)
            for (int64_t i = 0; i < g.kh; ++i) {
              int64_t iy = y * g.sh - g.ph + i * g.dh;
              if (iy < 0 || iy >= g.H) continue;
              for (int64_t j = 0; j < g.kw; ++j) {
                int64_t ix = x * g.sw - g.pw + j * g.dw;
                if (ix < 0 || ix >= g.W) continue;
                int64_t xi = ((n * g.C + grp * cpg + c) * g.H + iy) * g.W + ix;
                int64_t wi = ((o * cpg + c) * g.kh + i) * g.kw + j;
                f(xi, wi, oo);
              }
            }
        }
    }
}

/// One convolution term at a time: out[at(xi, wi, oi)] += lhs[..] * rhs[..]
/// in double, rounded once.  Each of the three ops accumulates into a
/// different one of input, weight and output, from the other two.
template <typename Term>
Outs convAccumulate(const TensorType& ot, const ConvGeom& geom, Term term) {
  HostTensor o = HostTensor::zeros(ot.dtype, ot.sizes);
  std::vector<double> acc(o.data.size(), 0.0);
  convTerms(geom, [&](int64_t xi, int64_t wi, int64_t oi) { term(acc, static_cast<size_t>(xi), static_cast<size_t>(wi), static_cast<size_t>(oi)); });
  for (size_t i = 0; i < acc.size(); ++i) o.data[i] = roundTo(o.dtype, acc[i]);
  return {o};
}

Outs conv2dRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  const auto &x = in[0]->data, &w = in[1]->data;
  return convAccumulate(ot[0], convGeom(in[0]->sizes, in[1]->sizes, ot[0].sizes, a),
                        [&](std::vector<double>& acc, size_t xi, size_t wi, size_t oi) { acc[oi] += x[xi] * w[wi]; });
}
Outs conv2dBackInputRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  const auto &go = in[0]->data, &w = in[1]->data;
  return convAccumulate(ot[0], convGeom(ot[0].sizes, in[1]->sizes, in[0]->sizes, a),
                        [&](std::vector<double>& acc, size_t xi, size_t wi, size_t oi) { acc[xi] += go[oi] * w[wi]; });
}
Outs conv2dBackWeightRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  const auto &go = in[0]->data, &x = in[1]->data;
  return convAccumulate(ot[0], convGeom(in[1]->sizes, ot[0].sizes, in[0]->sizes, a),
                        [&](std::vector<double>& acc, size_t xi, size_t wi, size_t oi) { acc[wi] += go[oi] * x[xi]; });
}

// ---- gradient rules

R mmGrad(GradCtx& g) {
  return {g.op(K::Mm, {g.GO(0), g.op(K::T, {g.I(1)})}), g.op(K::Mm, {g.op(K::T, {g.I(0)}), g.GO(0)})};
}
R bmmGrad(GradCtx& g) {
  Attrs tr{{"dim0", int64_t{1}}, {"dim1", int64_t{2}}};
  return {g.op(K::Bmm, {g.GO(0), g.op(K::Transpose, {g.I(1)}, tr)}), g.op(K::Bmm, {g.op(K::Transpose, {g.I(0)}, tr), g.GO(0)})};
}
R conv2dGrad(GradCtx& g) {
  Attrs ai = g.attrs(), aw = g.attrs();
  ai["input_size"] = g.sizes(g.I(0));
  aw["weight_size"] = g.sizes(g.I(1));
  ValueId go = g.contiguous(g.GO(0));
  return {g.op(K::Conv2dBackwardInput, {go, g.contiguous(g.I(1))}, ai), g.op(K::Conv2dBackwardWeight, {go, g.contiguous(g.I(0))}, aw)};
}
// z = conv2d_backward_input(g, w) is linear in each operand:
// <z, GO> = <conv2d(GO, w), g> = <w, conv2d_backward_weight(g, GO)>.
R conv2dBackInputGrad(GradCtx& g) {
  Attrs ac = g.attrs(), aw = g.attrs();
  ac.erase("input_size");
  aw.erase("input_size");
  aw["weight_size"] = g.sizes(g.I(1));
  ValueId go = g.contiguous(g.GO(0));
  return {g.op(K::Conv2d, {go, g.contiguous(g.I(1))}, ac), g.op(K::Conv2dBackwardWeight, {g.contiguous(g.I(0)), go}, aw)};
}
// z = conv2d_backward_weight(g, x): <z, GO> = <conv2d(x, GO), g> = <x, conv2d_backward_input(g, GO)>.
R conv2dBackWeightGrad(GradCtx& g) {
  Attrs ac = g.attrs(), ai = g.attrs();
  ac.erase("weight_size");
  ai.erase("weight_size");
  ai["input_size"] = g.sizes(g.I(1));
  ValueId go = g.contiguous(g.GO(0));
  return {g.op(K::Conv2d, {g.contiguous(g.I(1)), go}, ac), g.op(K::Conv2dBackwardInput, {g.contiguous(g.I(0)), go}, ai)};
}


/// The convolution samples' attributes: grouped, strided and padded, plus
/// a backward's size attribute.
Attrs convSample(const char* sizeKey = nullptr, Ints size = {}) {
  Attrs a{{"stride", Ints{2}}, {"padding", Ints{1}}, {"dilation", Ints{1}}, {"groups", int64_t{2}}};
  if (sizeKey) a[sizeKey] = std::move(size);
  return a;
}

}  // namespace

std::span<const OpRule> linalgRows() {
  static const std::vector<OpRule> kRows = {
      row(K::Mm, mmRule, mmRef, mmGrad, Lowering::Gemm, {{{sampleF({2, 3}), sampleF({3, 4})}, {}}}),
      row(K::Bmm, bmmRule, bmmRef, bmmGrad, Lowering::Gemm, {{{sampleF({2, 2, 3}), sampleF({2, 3, 2})}, {}}}),
      row(K::Conv2d, conv2dRule, conv2dRef, conv2dGrad, Lowering::Conv, {{{sampleF({1, 4, 5, 5}), sampleF({2, 2, 3, 3})}, convSample()}}),
      row(K::Conv2dBackwardInput, conv2dBackInputRule, conv2dBackInputRef, conv2dBackInputGrad, Lowering::Conv,
          {{{sampleF({1, 4, 3, 3}), sampleF({4, 1, 3, 3})}, convSample("input_size", {1, 2, 6, 5})}}),
      row(K::Conv2dBackwardWeight, conv2dBackWeightRule, conv2dBackWeightRef, conv2dBackWeightGrad, Lowering::Conv,
          {{{sampleF({1, 4, 3, 3}), sampleF({1, 2, 6, 5})}, convSample("weight_size", {4, 1, 3, 3})}}),
  };
  return kRows;
}

}  // namespace aotc::detail
