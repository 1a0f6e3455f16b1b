//===- fx/windows.cpp - Convolution, pooling, padding and resampling --------===//
//
// convolution (1-3-D and transposed; the decomposition is in
// src/ops/decompose_windows.cpp), max/avg/adaptive pooling in 1-3 D,
// constant/reflection/replication padding, nearest, bilinear and bicubic
// upsampling, im2col and col2im (Note [im2col and col2im]).
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include <tuple>

#include "converter.h"

namespace aotc::fx {

namespace {

/// A 3-D convolution or pooling argument of 1 or 3 values as 3 (empty stays empty).
Ints triple(Converter& c, size_t i, const char* kw, Ints dflt, const char* op) {
  Ints v = c.ints(i, kw, dflt);
  if (v.size() == 1) v = {v[0], v[0], v[0]};
  if (!v.empty() && v.size() != 3) c.fail(cat(op, ": ", kw, " must have 1 or 3 values"));
  return v;
}

}  // namespace

/// convolution(input, weight, bias?, stride, padding, dilation, transposed,
/// output_padding, groups): decomp::convolution.
V convolution(Converter& c) {
  ValueId x = c.tensor(0, "input"), w = c.tensor(1, "weight");
  ValueId bias = c.has(2, "bias") ? c.tensor(2, "bias") : kNoValue;
  decomp::Convolution a;
  a.stride = c.ints(3, "stride", Ints{1});
  a.padding = c.ints(4, "padding", Ints{0});
  a.dilation = c.ints(5, "dilation", Ints{1});
  a.transposed = c.boolean(6, "transposed", false);
  a.outputPadding = c.ints(7, "output_padding", Ints{0});
  a.groups = c.integer(8, "groups", 1);
  return {decomp::convolution(c, x, w, bias, a)};
}

namespace {

V maxPool(Converter& c) {
  Attrs a{{"kernel", c.ints(1, "kernel_size")}, {"stride", c.ints(2, "stride", Ints{})}, {"padding", c.ints(3, "padding", Ints{0})},
          {"dilation", c.ints(4, "dilation", Ints{1})}, {"ceil_mode", c.boolean(5, "ceil_mode", false)}};
  return c.ops(OpKind::MaxPool2d, {c.tensor(0, "self")}, a, {});
}

V avgPool(Converter& c) {
  Attrs a{{"kernel", c.ints(1, "kernel_size")}, {"stride", c.ints(2, "stride", Ints{})}, {"padding", c.ints(3, "padding", Ints{0})},
          {"ceil_mode", c.boolean(4, "ceil_mode", false)}, {"count_include_pad", c.boolean(5, "count_include_pad", true)}};
  if (c.has(6, "divisor_override")) a["divisor"] = c.integer(6, "divisor_override");
  return {c.op(OpKind::AvgPool2d, {c.tensor(0, "self")}, a)};
}

/// adaptive_avg_pool2d: a mean for 1x1, an avg_pool2d when the output size
/// divides the input, else its own op (windows of varying size).
V adaptiveAvgPool(Converter& c) {
  ValueId x = c.tensor(0, "self");
  Ints out = c.ints(1, "output_size");
  if (out.size() == 1) out.push_back(out[0]);
  if (c.type(x).rank() != 4) c.fail("adaptive_avg_pool2d expects a 4-D input");
  return {adaptiveAvg2d(c, x, out)};
}

/// Source indices of nearest upsampling (ATen: min(floor(dst * scale), in - 1)
/// with scale in float).
Ints nearestIndices(int64_t in, int64_t out, std::optional<double> scaleFactor) {
  float scale = scaleFactor && *scaleFactor > 0 ? static_cast<float>(1.0 / *scaleFactor)
                                                 : static_cast<float>(in) / static_cast<float>(out);
  Ints idx;
  for (int64_t i = 0; i < out; ++i)
    idx.push_back(std::min(static_cast<int64_t>(std::floor(static_cast<float>(i) * scale)), in - 1));
  return idx;
}

/// Output sizes and scale factors of an upsample node: the .vec overloads
/// take (input, output_size?, [align_corners,] scale_factors?), the others
/// (self, output_size, [align_corners,] scales_h?, scales_w?).
std::pair<Ints, std::vector<std::optional<double>>> upsampleSizes(Converter& c, ValueId x, bool vec, size_t scaleIdx) {
  const TensorType t = c.type(x);
  if (t.rank() != 4) c.fail("upsampling expects a 4-D (N, C, H, W) input");
  std::vector<std::optional<double>> scales(2);
  Ints out;
  if (c.has(1, "output_size")) {
    out = c.ints(1, "output_size");
    if (out.size() != 2) c.fail("upsampling: output_size must have 2 values");
  }
  if (vec && c.has(scaleIdx, "scale_factors")) {
    const json* s = c.arg(scaleIdx, "scale_factors");
    if (!s->is_array() || s->size() != 2) c.fail("upsampling: scale_factors must have 2 values");
    for (size_t i = 0; i < 2; ++i) {
      if (!(*s)[i].is_number()) c.fail("upsampling: scale_factors must be numbers");
      scales[i] = (*s)[i].get<double>();
    }
    if (out.empty())
      for (size_t i = 0; i < 2; ++i) {
        double o = std::floor(static_cast<double>(t.sizes[2 + i]) * *scales[i]);
        if (!(o >= 1 && o <= static_cast<double>(kMaxIntArg))) c.fail("upsampling: the scale factor gives an empty or huge output");
        out.push_back(static_cast<int64_t>(o));
      }
  } else if (!vec) {
    scales[0] = optNumber(c, scaleIdx, "scales_h");
    scales[1] = optNumber(c, scaleIdx + 1, "scales_w");
  }
  if (out.empty()) c.fail("upsampling needs output_size or scale_factors");
  if (t.sizes[2] <= 0 || t.sizes[3] <= 0) c.fail("upsampling an empty input is not supported");
  for (int64_t o : out) {
    if (o <= 0) c.fail("upsampling: output size must be positive");
    // Bilinear and bicubic weights are one constant per output row and column.
    if (o > 16384) c.fail(cat("upsampling: an output size of ", o, " is beyond the 16384 this op handles"));
  }
  return {out, scales};
}

template <bool Vec>
V upsampleNearest(Converter& c) {
  ValueId x = c.tensor(0, Vec ? "input" : "self");
  auto [out, scales] = upsampleSizes(c, x, Vec, 2);
  const TensorType t = c.type(x);
  ValueId h = pick(c, x, 2, nearestIndices(t.sizes[2], out[0], scales[0]));
  return {pick(c, h, 3, nearestIndices(t.sizes[3], out[1], scales[1]))};
}

/// upsample_bilinear2d: ATen's CPU kernel, with its float source-index
/// arithmetic; the two taps per dim are index_selects, the weights constants
/// (Note [Separable resampling], src/ops/decompose_windows.cpp).
/// The operands both interpolating upsamples read: the input, align_corners,
/// the output sizes and scales; a floating-point input or a refusal.
struct Interpolation {
  ValueId x;
  bool align;
  Ints out;
  std::vector<std::optional<double>> scales;
  TensorType t;
};
template <bool Vec>
Interpolation interpolation(Converter& c, const char* op) {
  Interpolation r;
  r.x = c.tensor(0, Vec ? "input" : "self");
  r.align = c.boolean(2, "align_corners", false);
  std::tie(r.out, r.scales) = upsampleSizes(c, r.x, Vec, 3);
  r.t = c.type(r.x);
  if (!isFloating(r.t.dtype)) c.fail(std::string(op) + " expects a floating-point input");
  return r;
}

template <bool Vec>
V upsampleBilinear(Converter& c) {
  auto [x, align, out, scales, t] = interpolation<Vec>(c, "upsample_bilinear2d");
  ValueId cur = x;
  for (size_t d = 0; d < 2; ++d) cur = resampleDim(c, cur, 2 + static_cast<int64_t>(d), bilinearTaps(t.sizes[2 + d], out[d], align, scales[d]));
  return {cur};
}

/// upsample_bicubic2d: ATen's CPU kernel (Keys' cubic, a = -0.75, four
/// border-clamped taps per dim), W resampled first as ATen nests it (Note
/// [Separable resampling]).
template <bool Vec>
V upsampleBicubic(Converter& c) {
  auto [x, align, out, scales, t] = interpolation<Vec>(c, "upsample_bicubic2d");
  const bool low = t.dtype == DType::F16 || t.dtype == DType::BF16;  // summed in float, as ATen's opmath
  Taps tw = bicubicTaps(t.sizes[3], out[1], align, scales[1], t.dtype), th = bicubicTaps(t.sizes[2], out[0], align, scales[0], t.dtype);
  ValueId in = low ? c.cast(x, DType::F32) : x;
  ValueId w = resampleDim(c, in, 3, tw);
  ValueId y = resampleDim(c, w, 2, th);
  return {low ? c.cast(y, t.dtype) : y};
}

/// reflection/replication padding of the last dims: constant index maps.
V indexPad(Converter& c, bool reflect, size_t ndims) {
  ValueId x = c.tensor(0, "self");
  Ints pad = c.ints(1, "padding");
  if (pad.size() != 2 * ndims) c.fail(cat("padding must have ", 2 * ndims, " values"));
  const TensorType t = c.type(x);
  if (t.rank() < static_cast<int64_t>(ndims)) c.fail("padding: the input has too few dims");
  for (size_t k = 0; k < ndims; ++k) {
    int64_t dim = t.rank() - 1 - static_cast<int64_t>(k);
    int64_t n = t.sizes[static_cast<size_t>(dim)], lo = pad[2 * k], hi = pad[2 * k + 1];
    if (reflect && (lo >= n || hi >= n)) c.fail("reflection padding must be smaller than the input dim");
    if (n == 0 || lo + n + hi < 0) c.fail("padding: bad padding for an input dim of size " + std::to_string(n));
    requireIndexMap(c, lo + n + hi, "padding");
    Ints idx;
    for (int64_t i = -lo; i < n + hi; ++i) {
      int64_t j = i;
      if (reflect) {
        if (j < 0) j = -j;
        if (j >= n) j = 2 * (n - 1) - j;
      } else {
        j = std::clamp<int64_t>(j, 0, n - 1);
      }
      idx.push_back(j);
    }
    x = pick(c, x, dim, idx);
  }
  return {x};
}

// Note [im2col and col2im]: both are kh*kw strided slices.  im2col (unfold)
// pads the input and takes, for each kernel offset (i, j), the rows
// i*dh + sh*a and columns j*dw + sw*b, stacked as [N, C*kh*kw, Lh*Lw];
// col2im (fold) is its adjoint: each offset's block is written into those
// rows and columns of a zero padded image (two slice_scatters), the kh*kw
// images are summed and the padding sliced off.  Gradients follow from the
// slices' own.
struct Unfold {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};

Unfold unfoldArgs(Converter& c, size_t first, const char* op) {
  auto two = [&](size_t i, const char* kw) {
    Ints v = c.ints(i, kw);
    if (v.size() == 1) v.push_back(v[0]);
    if (v.size() != 2) c.fail(cat(op, ": ", kw, " must have 2 values"));
    return v;
  };
  Ints k = two(first, "kernel_size"), d = two(first + 1, "dilation"), p = two(first + 2, "padding"), s = two(first + 3, "stride");
  if (k[0] <= 0 || k[1] <= 0 || d[0] <= 0 || d[1] <= 0 || s[0] <= 0 || s[1] <= 0 || p[0] < 0 || p[1] < 0)
    c.fail(cat(op, ": kernel_size, dilation and stride must be positive and padding non-negative"));
  return {k[0], k[1], d[0], d[1], p[0], p[1], s[0], s[1]};
}

/// Blocks along one dim of padded size `n`.
int64_t unfoldBlocks(Converter& c, int64_t n, int64_t k, int64_t d, int64_t s, const char* op) {
  int64_t span = d * (k - 1) + 1;
  if (n < span) c.fail(cat(op, ": the kernel (", span, " with dilation) does not fit the padded input (", n, ")"));
  return (n - span) / s + 1;
}

Attrs stridedSlice(int64_t dim, int64_t start, int64_t count, int64_t step) {
  return Attrs{{"dim", dim}, {"start", start}, {"end", start + step * (count - 1) + 1}, {"step", step}};
}

V im2col(Converter& c) {
  ValueId x = c.tensor(0, "self");
  Unfold u = unfoldArgs(c, 1, "im2col");
  const TensorType t = c.type(x);
  const bool batched = t.rank() == 4;
  if (t.rank() != 3 && !batched) c.fail("im2col expects a 3-D (C, H, W) or 4-D (N, C, H, W) input");
  ValueId x4 = batched ? x : c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{0}}});
  const Ints s = c.type(x4).sizes;
  ValueId xp = (u.ph || u.pw) ? c.op(OpKind::Pad, {x4}, Attrs{{"pad", Ints{u.pw, u.pw, u.ph, u.ph}}, {"value", 0.0}}) : x4;
  const int64_t lh = unfoldBlocks(c, s[2] + 2 * u.ph, u.kh, u.dh, u.sh, "im2col"), lw = unfoldBlocks(c, s[3] + 2 * u.pw, u.kw, u.dw, u.sw, "im2col");
  std::vector<ValueId> parts;
  for (int64_t i = 0; i < u.kh; ++i)
    for (int64_t j = 0; j < u.kw; ++j) {
      ValueId r = c.op(OpKind::Slice, {xp}, stridedSlice(2, i * u.dh, lh, u.sh));
      ValueId b = c.op(OpKind::Slice, {r}, stridedSlice(3, j * u.dw, lw, u.sw));
      parts.push_back(c.op(OpKind::Unsqueeze, {b}, Attrs{{"dim", int64_t{2}}}));
    }
  ValueId st = parts.size() == 1 ? parts[0] : c.op(OpKind::Cat, parts, Attrs{{"dim", int64_t{2}}});
  Ints out{s[0], s[1] * u.kh * u.kw, lh * lw};
  if (!batched) out.erase(out.begin());
  return {reshapeTo(c, st, out)};
}

V col2im(Converter& c) {
  ValueId x = c.tensor(0, "self");
  Ints size = c.ints(1, "output_size");
  if (size.size() == 1) size.push_back(size[0]);
  if (size.size() != 2 || size[0] <= 0 || size[1] <= 0) c.fail("col2im: output_size must be 2 positive values");
  Unfold u = unfoldArgs(c, 2, "col2im");
  const TensorType t = c.type(x);
  const bool batched = t.rank() == 3;
  if (t.rank() != 2 && !batched) c.fail("col2im expects a 2-D (C*kh*kw, L) or 3-D (N, C*kh*kw, L) input");
  const int64_t n = batched ? t.sizes[0] : 1, ck = t.sizes[batched ? 1 : 0], l = t.sizes[batched ? 2 : 1];
  const int64_t hp = size[0] + 2 * u.ph, wp = size[1] + 2 * u.pw;
  const int64_t lh = unfoldBlocks(c, hp, u.kh, u.dh, u.sh, "col2im"), lw = unfoldBlocks(c, wp, u.kw, u.dw, u.sw, "col2im");
  if (ck % (u.kh * u.kw)) c.fail(cat("col2im: dim ", batched ? 1 : 0, " (", ck, ") must be divisible by the kernel size ", u.kh * u.kw));
  if (l != lh * lw) c.fail(cat("col2im: the input has ", l, " blocks, the sizes give ", lh, " x ", lw, " = ", lh * lw));
  const int64_t ch = ck / (u.kh * u.kw);
  ValueId cols = reshapeTo(c, x, {n, ch, u.kh, u.kw, lh, lw});
  ValueId acc = kNoValue;
  for (int64_t i = 0; i < u.kh; ++i)
    for (int64_t j = 0; j < u.kw; ++j) {
      ValueId bi = c.op(OpKind::Select, {cols}, Attrs{{"dim", int64_t{2}}, {"index", i}});
      ValueId b = c.op(OpKind::Clone, {c.op(OpKind::Select, {bi}, Attrs{{"dim", int64_t{2}}, {"index", j}})});
      ValueId rowsZero = constantLike(c, 0.0, TensorType::contiguous(t.dtype, {n, ch, hp, lw}));
      ValueId rows = c.op(OpKind::SliceScatter, {rowsZero, b}, stridedSlice(2, i * u.dh, lh, u.sh));
      ValueId imgZero = constantLike(c, 0.0, TensorType::contiguous(t.dtype, {n, ch, hp, wp}));
      ValueId img = c.op(OpKind::SliceScatter, {imgZero, rows}, stridedSlice(3, j * u.dw, lw, u.sw));
      acc = acc == kNoValue ? img : bin(c, OpKind::Add, {acc, img});
    }
  ValueId r = c.op(OpKind::Slice, {acc}, Attrs{{"dim", int64_t{2}}, {"start", u.ph}, {"end", u.ph + size[0]}, {"step", int64_t{1}}});
  ValueId o = c.op(OpKind::Slice, {r}, Attrs{{"dim", int64_t{3}}, {"start", u.pw}, {"end", u.pw + size[1]}, {"step", int64_t{1}}});
  return {batched ? o : c.op(OpKind::Squeeze, {o}, Attrs{{"dim", Ints{0}}})};
}

/// 1-D pooling as 2-D over a unit height.
V pool1d(Converter& c, bool adaptive) {
  ValueId x = c.tensor(0, "self");
  if (c.type(x).rank() != 3) c.fail("1-D pooling expects a 3-D (N, C, L) input");
  ValueId x4 = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{2}}});
  ValueId y;
  if (adaptive) {
    Ints o = c.ints(1, "output_size");
    if (o.size() != 1 || o[0] <= 0) c.fail("adaptive_avg_pool1d: output_size must be one positive value");
    y = c.op(OpKind::AdaptiveAvgPool2d, {x4}, Attrs{{"output_size", Ints{1, o[0]}}});
  } else {
    auto one = [&](size_t i, const char* kw, Ints dflt, int64_t lead) {
      Ints v = c.ints(i, kw, dflt);
      if (v.empty()) return v;
      if (v.size() != 1) c.fail(cat("avg_pool1d: ", kw, " must have 1 value"));
      return Ints{lead, v[0]};
    };
    Attrs a{{"kernel", one(1, "kernel_size", {}, 1)}, {"stride", one(2, "stride", Ints{}, 1)}, {"padding", one(3, "padding", Ints{0}, 0)},
            {"ceil_mode", c.boolean(4, "ceil_mode", false)}, {"count_include_pad", c.boolean(5, "count_include_pad", true)}};
    if (std::get<Ints>(a["stride"]).empty()) a["stride"] = std::get<Ints>(a["kernel"]);
    y = c.op(OpKind::AvgPool2d, {x4}, a);
  }
  return {c.op(OpKind::Squeeze, {y}, Attrs{{"dim", Ints{2}}})};
}

// 3-D pooling: Note [3-D pooling] in src/ops/decompose.cpp.

/// The input as 5-D (an unbatched 4-D one gains N = 1), and whether it was 4-D.
std::pair<ValueId, bool> pool3dInput(Converter& c, const char* op) {
  ValueId x = c.tensor(0, "self");
  const int64_t r = c.type(x).rank();
  if (r != 4 && r != 5) c.fail(cat(op, " expects a 4-D (C, D, H, W) or 5-D (N, C, D, H, W) input"));
  if (r == 4) x = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{0}}});
  return {x, r == 4};
}

ValueId pool3dResult(Converter& c, ValueId y, bool unbatched) {
  return unbatched ? c.op(OpKind::Squeeze, {y}, Attrs{{"dim", Ints{0}}}) : y;
}

V avgPool3d(Converter& c) {
  const char* op = "avg_pool3d";
  decomp::Pool3d p;
  p.kernel = triple(c, 1, "kernel_size", {}, op);
  p.stride = triple(c, 2, "stride", Ints{}, op);
  p.padding = triple(c, 3, "padding", Ints{0}, op);
  if (p.kernel.empty()) c.fail("avg_pool3d: kernel_size is required");
  p.ceil = c.boolean(4, "ceil_mode", false);
  p.countIncludePad = c.boolean(5, "count_include_pad", true);
  if (c.has(6, "divisor_override")) p.divisor = c.integer(6, "divisor_override");
  auto [x, unbatched] = pool3dInput(c, op);
  return {pool3dResult(c, decomp::avgPool3d(c, x, p), unbatched)};
}

V maxPool3d(Converter& c) {
  const char* op = "max_pool3d";
  decomp::Pool3d p;
  p.kernel = triple(c, 1, "kernel_size", {}, op);
  p.stride = triple(c, 2, "stride", Ints{}, op);
  p.padding = triple(c, 3, "padding", Ints{0}, op);
  p.dilation = triple(c, 4, "dilation", Ints{1}, op);
  if (p.kernel.empty()) c.fail("max_pool3d: kernel_size is required");
  p.ceil = c.boolean(5, "ceil_mode", false);
  auto [x, unbatched] = pool3dInput(c, op);
  auto [y, idx] = decomp::maxPool3d(c, x, p);
  return {pool3dResult(c, y, unbatched), pool3dResult(c, idx, unbatched)};
}

/// adaptive_max_pool2d(self, output_size) on [N, C, H, W] or [C, H, W]:
/// (maxima, indices into the input's spatial positions).  (ATen's
/// adaptive_max_pool1d is composite: traces record it as the 2-D op between
/// an unsqueeze and a squeeze; `spatial` 1 would take it as 2-D over a unit
/// height.)
V adaptiveMaxPool(Converter& c, int64_t spatial) {
  const char* op = spatial == 1 ? "adaptive_max_pool1d" : "adaptive_max_pool2d";
  ValueId x = c.tensor(0, "self");
  Ints o = c.ints(1, "output_size");
  if (static_cast<int64_t>(o.size()) != spatial) c.fail(cat(op, ": output_size must have ", spatial, " value(s)"));
  const int64_t r = c.type(x).rank();
  if (r != spatial + 1 && r != spatial + 2) c.fail(cat(op, " expects a ", spatial + 1, "-D or ", spatial + 2, "-D input"));
  const bool unbatched = r == spatial + 1;
  if (unbatched) x = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{0}}});
  if (spatial == 1) {
    x = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{2}}});
    o.insert(o.begin(), 1);
  }
  auto [y, idx] = decomp::adaptiveMax2d(c, x, o);
  for (ValueId* v : {&y, &idx}) {
    if (spatial == 1) *v = c.op(OpKind::Squeeze, {*v}, Attrs{{"dim", Ints{2}}});
    if (unbatched) *v = c.op(OpKind::Squeeze, {*v}, Attrs{{"dim", Ints{0}}});
  }
  return {y, idx};
}

V adaptiveAvgPool3d(Converter& c) {
  Ints o = triple(c, 1, "output_size", {}, "adaptive_avg_pool3d");
  if (o.empty()) c.fail("adaptive_avg_pool3d: output_size is required");
  auto [x, unbatched] = pool3dInput(c, "adaptive_avg_pool3d");
  return {pool3dResult(c, decomp::adaptiveAvg3d(c, x, o), unbatched)};
}

}  // namespace

Entries windowsConverters() {
  return {
    {"aten.convolution.default", convolution},
    {"aten.max_pool2d_with_indices.default", maxPool},
    {"aten.avg_pool2d.default", avgPool},
    {"aten._adaptive_avg_pool2d.default", adaptiveAvgPool},
    {"aten.adaptive_avg_pool2d.default", adaptiveAvgPool},
    {"aten.constant_pad_nd.default",
     [](Converter& c) -> V { return {c.op(OpKind::Pad, {c.tensor(0, "self")}, Attrs{{"pad", c.ints(1, "pad")}, {"value", c.number(2, "value", 0.0)}})}; }},
    {"aten.upsample_nearest2d.vec", upsampleNearest<true>},
    {"aten.upsample_nearest2d.default", upsampleNearest<false>},
    {"aten.upsample_bilinear2d.vec", upsampleBilinear<true>},
    {"aten.upsample_bilinear2d.default", upsampleBilinear<false>},
    {"aten.upsample_bicubic2d.vec", upsampleBicubic<true>},
    {"aten.upsample_bicubic2d.default", upsampleBicubic<false>},
    {"aten.reflection_pad1d.default", [](Converter& c) { return indexPad(c, true, 1); }},
    {"aten.reflection_pad2d.default", [](Converter& c) { return indexPad(c, true, 2); }},
    {"aten.reflection_pad3d.default", [](Converter& c) { return indexPad(c, true, 3); }},
    {"aten.replication_pad1d.default", [](Converter& c) { return indexPad(c, false, 1); }},
    {"aten.replication_pad2d.default", [](Converter& c) { return indexPad(c, false, 2); }},
    {"aten.replication_pad3d.default", [](Converter& c) { return indexPad(c, false, 3); }},
    {"aten.avg_pool1d.default", [](Converter& c) { return pool1d(c, false); }},
    {"aten.avg_pool3d.default", avgPool3d},
    {"aten.max_pool3d_with_indices.default", maxPool3d},
    {"aten._adaptive_avg_pool3d.default", adaptiveAvgPool3d},
    {"aten.adaptive_avg_pool3d.default", adaptiveAvgPool3d},
    {"aten.adaptive_avg_pool1d.default", [](Converter& c) { return pool1d(c, true); }},
    {"aten.adaptive_max_pool2d.default", [](Converter& c) { return adaptiveMaxPool(c, 2); }},
    {"aten.im2col.default", im2col},
    {"aten.col2im.default", col2im},
  };
}

}  // namespace aotc::fx
