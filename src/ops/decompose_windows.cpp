//===- decompose_windows.cpp - Convolution and separable resampling --------===//
//
// Note [Decompositions] (decompose.h): ATen's convolution (1-D as 2-D over a
// unit height, 2-D as conv2d or its adjoint conv2d_backward_input for the
// transposed form, 3-D by conv3d and convTranspose3d, Note [3-D
// convolution]), with its arguments as C++ values; bilinear and bicubic
// upsampling's taps (Note [Separable resampling]).
//===----------------------------------------------------------------------===//
#include <cmath>

#include "aotc/ir/host_tensor.h"
#include "aotc/ops/decompose.h"

namespace aotc::decomp {

namespace {

/// A 3-D convolution argument of 1 or 3 values as 3.
Ints triple(Builder& c, Ints v, const char* kw) {
  if (v.size() == 1) v = {v[0], v[0], v[0]};
  if (!v.empty() && v.size() != 3) c.fail(cat("convolution: ", kw, " must have 1 or 3 values"));
  return v;
}

ValueId convolution3d(Builder& c, ValueId x, ValueId w, ValueId bias, const Convolution& a) {
  Ints stride = triple(c, a.stride, "stride"), padding = triple(c, a.padding, "padding"), dilation = triple(c, a.dilation, "dilation");
  ValueId y;
  int64_t outChannels;
  if (a.transposed) {
    Ints op = triple(c, a.outputPadding, "output_padding");
    y = convTranspose3d(c, x, w, stride, dilation, op, a.groups);
    outChannels = c.type(y).sizes[1];
    for (int64_t k = 0; k < 3; ++k) {
      if (!padding[static_cast<size_t>(k)]) continue;
      const int64_t n = c.type(y).sizes[static_cast<size_t>(2 + k)], p = padding[static_cast<size_t>(k)];
      if (2 * p >= n) c.fail("transposed convolution: the padding crops the whole output");
      y = c.op(OpKind::Slice, {y}, Attrs{{"dim", 2 + k}, {"start", p}, {"end", n - p}, {"step", int64_t{1}}});
    }
  } else {
    y = conv3d(c, x, w, stride, padding, dilation, a.groups);
    outChannels = c.type(w).sizes[0];
  }
  if (bias != kNoValue) y = bin(c, OpKind::Add, {y, c.op(OpKind::View, {bias}, Attrs{{"size", Ints{1, outChannels, 1, 1, 1}}})});
  return y;
}

}  // namespace

ValueId convolution(Builder& c, ValueId x, ValueId w, ValueId bias, const Convolution& a) {
  int64_t rank = c.type(x).rank();
  if (rank != 5 && rank != 4 && rank != 3) c.fail("only 1-D, 2-D and 3-D convolution (3-D, 4-D or 5-D input) are supported");
  if (c.type(w).rank() != rank) c.fail("convolution: weight and input ranks differ");
  if (rank == 5) return convolution3d(c, x, w, bias, a);
  bool oneD = rank == 3;
  auto two = [&](Ints v, const char* kw) {
    if (v.size() == 1 && !oneD) v.push_back(v[0]);
    if (oneD) {
      if (v.size() != 1) c.fail(cat("convolution: ", kw, " must have 1 value for a 1-D convolution"));
      v.insert(v.begin(), kw[0] == 's' || kw[0] == 'd' ? 1 : 0);
    }
    if (v.size() != 2) c.fail(cat("convolution: ", kw, " must have 2 values"));
    return v;
  };
  Ints stride = two(a.stride, "stride"), padding = two(a.padding, "padding"), dilation = two(a.dilation, "dilation");
  const int64_t groups = a.groups;
  if (oneD) {
    x = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{2}}});
    w = c.op(OpKind::Unsqueeze, {w}, Attrs{{"dim", int64_t{2}}});
  }
  Attrs at{{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
  ValueId y;
  int64_t outChannels;
  if (a.transposed) {
    Ints op = two(a.outputPadding, "output_padding");
    const TensorType xt = c.type(x), wt = c.type(w);
    if (groups <= 0 || xt.sizes[1] != wt.sizes[0]) c.fail("transposed convolution: input channels do not match the weight");
    outChannels = wt.sizes[1] * groups;
    Ints in{xt.sizes[0], outChannels, 0, 0};
    for (size_t d = 0; d < 2; ++d) {
      if (op[d] < 0 || (op[d] >= stride[d] && op[d] >= dilation[d]))
        c.fail("transposed convolution: output_padding must be smaller than stride or dilation");
      in[2 + d] = addSize(addSize(mulSize(xt.sizes[2 + d] - 1, stride[d]), -2 * padding[d]),
                          addSize(mulSize(dilation[d], wt.sizes[2 + d] - 1), op[d] + 1));
      if (in[2 + d] <= 0) c.fail("transposed convolution: the output is empty");
    }
    at["input_size"] = in;
    ValueId xc = c.type(x).isContiguous() ? x : c.op(OpKind::Clone, {x});
    ValueId wc = c.type(w).isContiguous() ? w : c.op(OpKind::Clone, {w});
    y = c.op(OpKind::Conv2dBackwardInput, {xc, wc}, at);
  } else {
    y = c.op(OpKind::Conv2d, {x, w}, at);
    outChannels = c.type(w).sizes[0];
  }
  if (bias != kNoValue) {
    Ints bshape{1, outChannels, 1, 1};
    y = bin(c, OpKind::Add, {y, c.op(OpKind::View, {bias}, Attrs{{"size", bshape}})});
  }
  if (oneD) y = c.op(OpKind::Squeeze, {y}, Attrs{{"dim", Ints{2}}});
  return y;
}

// Note [Separable resampling]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// ATen's upsample_bilinear2d and upsample_bicubic2d are separable: each
// output element is a weighted sum of input elements along H, of weighted
// sums along W.  The taps (indices) and weights depend only on the sizes,
// align_corners and the scale factors, so they are computed here, when
// compiling, with ATen's own arithmetic (area_pixel_compute_scale and
// area_pixel_compute_source_index in the kernel's opmath type); each dim is
// then one index_select per tap, times a constant weight per output row or
// column, summed in the taps' order (resampleDim).  The gradient is
// autodiff's: index_select's is index_add, the scatter ATen's backward
// kernels do.
//
// Bicubic (Keys' cubic convolution, a = -0.75) differs from bilinear in
// three ways that matter: the source index is not clamped at 0 when
// align_corners is false (the taps at -1..2 around a negative index give
// other weights), the four taps are clamped to the border (replicated edge
// pixels, upsample_get_value_bounded), and there is no copy when a dim keeps
// its size (the weights at t = 0 are 0, 1, 0, 0, so the sum is the input
// unless a scale factor moves the points).  ATen's kernel nests W inside H
// (the inner sum along W first): the converter resamples W first, so that
// float32 rounds where ATen's does.  The taps follow PyTorch 2.x, which
// clamps the index to in - 1 and the fraction to [0, 1]
// (guard_index_and_lambda); 1.13 does not, and differs only where floorf
// rounds a float64 source index up to the next integer (a fraction below
// 2^-24 that 1.13 keeps negative): the index itself stays below in - 1/2.
// For float16 and bfloat16, PyTorch 2.x computes the taps in float, rounds
// the weights to the input's dtype and sums in float, rounding once at the
// end: the converter resamples a float32 copy with the rounded weights.
//
// Where the front end provides constant tables (Note [Constant tables],
// aotc/ops/builder.h), each tap's indices and weights are one constant
// input each, holding exactly the values above: a dim is taps index_selects,
// multiplies and adds whatever its size (a 1x3x224x224 -> 448 bicubic was
// 5,418 nodes of per-element constants).  The arithmetic and its order are
// unchanged, so the results are bit-identical to the per-element form.

ValueId resampleDim(Builder& c, ValueId x, int64_t dim, const Taps& taps) {
  const int64_t rank = c.type(x).rank();
  const DType dt = c.type(x).dtype;
  const int64_t n = static_cast<int64_t>(taps.index.at(0).size());
  Ints wshape{n};
  for (int64_t d = dim + 1; d < rank; ++d) wshape.push_back(1);
  const bool tables = c.hasTables();  // Note [Constant tables]
  auto weights = [&](const std::vector<double>& w) {
    if (tables) return c.table(HostTensor{dt, wshape, w});
    // One scalar constant per output row or column, stacked by cat (a dim
    // of at most 16384 elements, checked by the callers).
    std::vector<ValueId> parts;
    for (double v : w) parts.push_back(c.op(OpKind::Constant, {}, Attrs{{"value", v}, {"dtype", std::string(dtypeName(dt))}, {"shape", Ints{1}}}));
    ValueId vec = parts.size() == 1 ? parts[0] : c.op(OpKind::Cat, parts, Attrs{{"dim", int64_t{0}}});
    return c.op(OpKind::View, {vec}, Attrs{{"size", wshape}});
  };
  std::vector<ValueId> picked, weighted, terms;
  for (const Ints& idx : taps.index) picked.push_back(pickTable(c, x, dim, idx));
  for (const std::vector<double>& w : taps.weight) weighted.push_back(weights(w));
  for (size_t k = 0; k < picked.size(); ++k) terms.push_back(bin(c, OpKind::Mul, {picked[k], weighted[k]}));
  ValueId acc = terms.at(0);
  for (size_t k = 1; k < terms.size(); ++k) acc = bin(c, OpKind::Add, {acc, terms[k]});
  return acc;
}

Taps bilinearTaps(int64_t in, int64_t out, bool align, std::optional<double> scaleFactor) {
  // In float whatever the dtype (what the converter has always done).
  float scale;
  if (align) scale = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
  else scale = scaleFactor && *scaleFactor > 0 ? static_cast<float>(1.0 / *scaleFactor) : static_cast<float>(in) / static_cast<float>(out);
  Taps t{std::vector<Ints>(2), std::vector<std::vector<double>>(2)};
  for (int64_t i = 0; i < out; ++i) {
    float src = align ? scale * static_cast<float>(i) : std::max(scale * (static_cast<float>(i) + 0.5f) - 0.5f, 0.0f);
    int64_t a = static_cast<int64_t>(src);
    int64_t step = a < in - 1 ? 1 : 0;
    float lambda1 = src - static_cast<float>(a), lambda0 = 1.0f - lambda1;
    t.index[0].push_back(a);
    t.index[1].push_back(a + step);
    t.weight[0].push_back(lambda0);
    t.weight[1].push_back(lambda1);
  }
  return t;
}

namespace {

/// upsample_bicubic2d's HelperInterpCubic::compute_indices_weights in T.
template <class T>
Taps bicubicTapsIn(int64_t in, int64_t out, bool align, std::optional<double> scaleFactor) {
  T scale;
  if (align) scale = out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  else scale = scaleFactor && *scaleFactor > 0 ? static_cast<T>(1.0 / *scaleFactor) : static_cast<T>(in) / static_cast<T>(out);
  Taps t{std::vector<Ints>(4), std::vector<std::vector<double>>(4)};
  for (int64_t i = 0; i < out; ++i) {
    const T src = align ? scale * static_cast<T>(i) : scale * (static_cast<T>(i) + T(0.5)) - T(0.5);  // not clamped at 0
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(static_cast<float>(src))), in - 1);  // ATen's floorf
    const T lambda = std::min(std::max(src - static_cast<T>(i0), T(0)), T(1));
    const std::array<T, 4> w = cubicCoefficients<T>(lambda, T(-0.75));
    for (size_t k = 0; k < 4; ++k) {
      t.index[k].push_back(std::clamp<int64_t>(i0 + static_cast<int64_t>(k) - 1, 0, in - 1));
      t.weight[k].push_back(static_cast<double>(w[k]));
    }
  }
  return t;
}

}  // namespace

Taps bicubicTaps(int64_t in, int64_t out, bool align, std::optional<double> scale, DType dtype) {
  Taps t = dtype == DType::F64 ? bicubicTapsIn<double>(in, out, align, scale) : bicubicTapsIn<float>(in, out, align, scale);
  // ATen stores the weights in the input's dtype (float16 and bfloat16 too).
  for (std::vector<double>& w : t.weight)
    for (double& v : w) v = roundTo(dtype, v);
  return t;
}

}  // namespace aotc::decomp
