//===- onnx/windows.cpp - Convolution, pooling and padding ------------------===//
//
// Conv, ConvTranspose, DeformConv, MaxPool/AveragePool (with dilations)
// and their global forms, LpPool, Col2Im, Pad; auto_pad and explicit pads as
// ONNX defines them.
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

/// Pads `x` by `begin`/`end` per dim: constant, reflect or edge.
ValueId padTo(Node& c, ValueId x, const Ints& begin, const Ints& end, const std::string& mode, double value) {
  int64_t r = c.type(x).rank();
  if (mode == "constant") {
    Ints p;
    for (int64_t d = r - 1; d >= 0; --d) p.insert(p.end(), {begin[static_cast<size_t>(d)], end[static_cast<size_t>(d)]});
    bool any = false;
    for (int64_t v : p) any = any || v != 0;
    if (!any) return x;
    return c.op(OpKind::Pad, {x}, Attrs{{"pad", p}, {"value", value}});
  }
  if (mode != "reflect" && mode != "edge" && mode != "wrap") c.fail(cat("Pad: mode '", mode, "' is not supported"));
  for (int64_t d = 0; d < r; ++d) {
    int64_t b = begin[static_cast<size_t>(d)], e = end[static_cast<size_t>(d)];
    if (b == 0 && e == 0) continue;
    int64_t n = c.type(x).sizes[static_cast<size_t>(d)];
    if (n == 0) c.fail("Pad: cannot reflect or extend an empty dim");
    if (mode == "reflect" && (b >= n || e >= n)) c.fail("Pad: reflect padding must be smaller than the dim");
    if (n + b + e > kMaxIndexMap) c.fail("Pad: the padded dim is too large");
    Ints idx;
    for (int64_t o = -b; o < n + e; ++o) {
      int64_t i = o;
      if (mode == "edge") i = std::clamp<int64_t>(o, 0, n - 1);
      else if (mode == "wrap") i = ((o % n) + n) % n;  // Pad 19
      else {
        if (i < 0) i = -i;
        if (i >= n) i = 2 * (n - 1) - i;
      }
      idx.push_back(i);
    }
    x = pick(c, x, d, idx);
  }
  return x;
}

namespace {

Outs padOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  Ints pads = c.opset() >= 11 ? c.knownInts(1, "pads") : c.ints(c.opset() >= 2 ? "pads" : "paddings");
  double value = c.opset() >= 11 ? (c.has(2) ? c.knownScalar(2, "constant_value") : 0.0) : c.f("value", 0.0);
  // Pad 18: `axes` names the dims the pads are for (the others get none).
  Ints axes;
  if (c.opset() >= 18 && c.has(3)) {
    for (int64_t a : c.knownInts(3, "axes")) axes.push_back(c.axis(a, r));
    if (std::set<int64_t>(axes.begin(), axes.end()).size() != axes.size()) c.fail("Pad: axes repeats a dim");
  } else {
    for (int64_t k = 0; k < r; ++k) axes.push_back(k);
  }
  int64_t na = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads.size()) != 2 * na) c.fail(cat("Pad: pads must have ", 2 * na, " values"));
  Ints begin(static_cast<size_t>(r), 0), end(static_cast<size_t>(r), 0);
  for (int64_t k = 0; k < na; ++k) {
    begin[static_cast<size_t>(axes[static_cast<size_t>(k)])] = pads[static_cast<size_t>(k)];
    end[static_cast<size_t>(axes[static_cast<size_t>(k)])] = pads[static_cast<size_t>(k + na)];
  }
  return {padTo(c, x, begin, end, c.s("mode", "constant"), value)};
}

/// CenterCropPad (18): each dim of `axes` cropped or zero-padded to its size
/// in `shape`, centred (the odd element at the end), as ONNX's reference.
Outs centerCropPadOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  Ints shape = c.knownInts(1, "shape"), axes;
  if (c.hasAttr("axes")) {
    for (int64_t a : c.ints("axes")) axes.push_back(c.axis(a, r));
    if (std::set<int64_t>(axes.begin(), axes.end()).size() != axes.size()) c.fail("CenterCropPad: axes repeats a dim");
  } else {
    for (int64_t k = 0; k < r; ++k) axes.push_back(k);
  }
  if (shape.size() != axes.size()) c.fail(cat("CenterCropPad: shape has ", shape.size(), " values for ", axes.size(), " axes"));
  Ints begin(static_cast<size_t>(r), 0), end(static_cast<size_t>(r), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t a = axes[k], dim = c.type(x).sizes[static_cast<size_t>(a)], want = shape[k];
    if (want < 0) c.fail(cat("CenterCropPad: shape holds ", want));
    if (want < dim) {
      int64_t s = (dim - want) / 2;
      x = c.op(OpKind::Slice, {x}, Attrs{{"dim", a}, {"start", s}, {"end", s + want}, {"step", int64_t{1}}});
    } else if (want > dim) {
      begin[static_cast<size_t>(a)] = (want - dim) / 2;
      end[static_cast<size_t>(a)] = want - dim - (want - dim) / 2;
    }
  }
  return {padTo(c, x, begin, end, "constant", 0.0)};
}

/// Begin/end padding of each spatial dim from auto_pad / pads (ONNX's rules).
std::pair<Ints, Ints> spatialPads(Node& c, const Ints& in, const Ints& kernel, const Ints& stride, const Ints& dil) {
  size_t n = in.size();
  Ints begin(n, 0), end(n, 0);
  std::string ap = c.s("auto_pad", "NOTSET");
  if (ap == "NOTSET") {
    Ints p = c.ints("pads", Ints(2 * n, 0));
    if (p.size() != 2 * n) c.fail(cat("pads must have ", 2 * n, " values"));
    for (size_t k = 0; k < n; ++k) {
      begin[k] = p[k];
      end[k] = p[k + n];
      if (begin[k] < 0 || end[k] < 0) c.fail("negative pads are not supported");
    }
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t k = 0; k < n; ++k) {
      int64_t out = (in[k] + stride[k] - 1) / stride[k];
      int64_t total = std::max<int64_t>((out - 1) * stride[k] + (kernel[k] - 1) * dil[k] + 1 - in[k], 0);
      begin[k] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[k] = total - begin[k];
    }
  } else if (ap != "VALID") {
    c.fail(cat("auto_pad '", ap, "' is not supported"));
  }
  return {begin, end};
}

struct ConvGeom {
  Ints kernel, stride, dil, begin, end;
};

ConvGeom convGeom(Node& c, const Ints& spatialIn, const Ints& kernelFromWeight) {
  size_t n = spatialIn.size();
  ConvGeom g;
  g.kernel = c.ints("kernel_shape", kernelFromWeight);
  g.stride = c.ints("strides", Ints(n, 1));
  g.dil = c.ints("dilations", Ints(n, 1));
  if (g.kernel.size() != n || g.stride.size() != n || g.dil.size() != n) c.fail("kernel_shape, strides and dilations must have one value per spatial dim");
  for (size_t k = 0; k < n; ++k)
    if (g.kernel[k] <= 0 || g.stride[k] <= 0 || g.dil[k] <= 0) c.fail("kernel_shape, strides and dilations must be positive");
  std::tie(g.begin, g.end) = spatialPads(c, spatialIn, g.kernel, g.stride, g.dil);
  return g;
}

/// 1-D, 2-D and 3-D: a 1-D op runs as 2-D over a unit height, a 3-D one
/// through the decompositions (Notes [3-D convolution], [3-D pooling]).
void requireSpatial(Node& c, int64_t rank, const char* what) {
  if (rank != 3 && rank != 4 && rank != 5) c.fail(cat(what, ": only 1-D, 2-D and 3-D (3-D, 4-D or 5-D inputs) are supported"));
}

/// Zero (or `value`) padding of the spatial dims of [N, C, ...] by begin / end.
ValueId padSpatial(Node& c, ValueId x, const Ints& begin, const Ints& end, double value) {
  Ints b{0, 0}, e{0, 0};
  b.insert(b.end(), begin.begin(), begin.end());
  e.insert(e.end(), end.begin(), end.end());
  return padTo(c, x, b, e, "constant", value);
}

/// A 1-D op runs as 2-D over a unit height: x and the geometry gain dim 2.
ValueId liftOneD(Node& c, ValueId x, ConvGeom& g) {
  for (Ints* v : {&g.kernel, &g.stride, &g.dil}) v->insert(v->begin(), 1);
  g.begin.insert(g.begin.begin(), 0);
  g.end.insert(g.end.begin(), 0);
  return c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{2}}});
}

/// Symmetric pads go to the op; others are explicit (`fill`), and the op
/// gets none.  Returns the padded input and the op's padding.
std::pair<ValueId, Ints> spatialPadding(Node& c, ValueId x, const ConvGeom& g, bool symmetric, double fill) {
  if (symmetric) return {x, g.begin};
  return {padSpatial(c, x, g.begin, g.end, fill), Ints(g.begin.size(), 0)};
}

Outs convOp(Node& c) {
  ValueId x = c.in(0), w = c.in(1);
  int64_t rank = c.type(x).rank();
  requireSpatial(c, rank, "Conv");
  if (c.type(w).rank() != rank) c.fail("Conv: the weight's rank differs from the input's");
  Ints sin(c.type(x).sizes.begin() + 2, c.type(x).sizes.end());
  Ints kw(c.type(w).sizes.begin() + 2, c.type(w).sizes.end());
  ConvGeom g = convGeom(c, sin, kw);
  if (g.kernel != kw) c.fail("Conv: kernel_shape differs from the weight's");
  bool oneD = rank == 3;
  if (oneD) {
    x = liftOneD(c, x, g);
    w = c.op(OpKind::Unsqueeze, {w}, Attrs{{"dim", int64_t{2}}});
  }
  auto [xp, pad] = spatialPadding(c, x, g, g.begin == g.end, 0.0);
  int64_t groups = c.i("group", 1);
  ValueId y = rank == 5 ? conv3d(c, xp, w, g.stride, pad, g.dil, groups)
                        : c.op(OpKind::Conv2d, {xp, w}, Attrs{{"stride", g.stride}, {"padding", pad}, {"dilation", g.dil}, {"groups", groups}});
  if (c.has(2)) {
    Ints bshape(static_cast<size_t>(c.type(y).rank()), 1);
    bshape[1] = c.type(w).sizes[0];
    y = c.add(y, c.reshape(c.in(2), bshape));
  }
  if (oneD) y = c.op(OpKind::Squeeze, {y}, Attrs{{"dim", Ints{2}}});
  return {y};
}

Outs convTransposeOp(Node& c) {
  ValueId x = c.in(0), w = c.in(1);
  int64_t rank = c.type(x).rank();
  requireSpatial(c, rank, "ConvTranspose");
  if (c.type(w).rank() != rank) c.fail("ConvTranspose: the weight's rank differs from the input's");
  size_t n = static_cast<size_t>(rank - 2);
  const Ints xs = c.type(x).sizes, ws = c.type(w).sizes;
  Ints kernel = c.ints("kernel_shape", Ints(ws.begin() + 2, ws.end()));
  Ints stride = c.ints("strides", Ints(n, 1)), dil = c.ints("dilations", Ints(n, 1));
  Ints outPad = c.ints("output_padding", Ints(n, 0));
  int64_t groups = c.i("group", 1);
  if (kernel.size() != n || stride.size() != n || dil.size() != n || outPad.size() != n) c.fail("ConvTranspose: attributes must have one value per spatial dim");
  if (groups <= 0 || xs[1] != ws[0]) c.fail("ConvTranspose: input channels do not match the weight");
  // Full output size (no padding), then the pads ONNX asks for.
  Ints full(n), begin(n, 0), end(n, 0);
  for (size_t k = 0; k < n; ++k) {
    if (stride[k] <= 0 || dil[k] <= 0) c.fail("ConvTranspose: strides and dilations must be positive");
    full[k] = stride[k] * (xs[2 + k] - 1) + outPad[k] + (kernel[k] - 1) * dil[k] + 1;
  }
  std::string ap = c.s("auto_pad", "NOTSET");
  if (c.hasAttr("output_shape")) {
    Ints os = c.ints("output_shape");
    if (os.size() == n + 2) os.erase(os.begin(), os.begin() + 2);
    if (os.size() != n) c.fail("ConvTranspose: output_shape must have one value per spatial dim");
    for (size_t k = 0; k < n; ++k) {
      int64_t total = full[k] - os[k];  // negative: the output extends past the full one, with zeros
      begin[k] = ap == "SAME_UPPER" || ap == "NOTSET" ? total / 2 : total - total / 2;
      end[k] = total - begin[k];
    }
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t k = 0; k < n; ++k) {
      int64_t total = std::max<int64_t>(full[k] - xs[2 + k] * stride[k], 0);
      begin[k] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[k] = total - begin[k];
    }
  } else if (ap == "NOTSET") {
    Ints p = c.ints("pads", Ints(2 * n, 0));
    if (p.size() != 2 * n) c.fail("ConvTranspose: pads must have 2 values per spatial dim");
    for (size_t k = 0; k < n; ++k) {
      begin[k] = p[k];
      end[k] = p[k + n];
    }
  } else if (ap != "VALID") {
    c.fail(cat("ConvTranspose: auto_pad '", ap, "' is not supported"));
  }
  bool oneD = rank == 3;
  if (oneD) {
    x = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{2}}});
    w = c.op(OpKind::Unsqueeze, {w}, Attrs{{"dim", int64_t{2}}});
    for (Ints* v : {&stride, &dil, &full, &begin, &end, &outPad}) v->insert(v->begin(), (v == &stride || v == &dil) ? 1 : 0);
    full[0] = 1;
  }
  // conv2d_backward_input at padding 0 gives the full output; the pads crop it.
  const size_t ns = full.size();
  int64_t outC = c.type(w).sizes[1] * groups;
  ValueId y;
  if (ns == 3) {
    y = convTranspose3d(c, x, w, stride, dil, outPad, groups);
  } else {
    Ints inSize{c.type(x).sizes[0], outC, full[0], full[1]};
    ValueId xc = c.contiguous(x), wc = c.contiguous(w);
    y = c.op(OpKind::Conv2dBackwardInput, {xc, wc},
             Attrs{{"input_size", inSize}, {"stride", stride}, {"padding", Ints{0, 0}}, {"dilation", dil}, {"groups", groups}});
  }
  for (size_t k = 0; k < ns; ++k) {
    int64_t d = static_cast<int64_t>(2 + k);
    int64_t b = std::max<int64_t>(begin[k], 0), e = std::max<int64_t>(end[k], 0);
    if (b || e) {
      if (b + e >= full[k]) c.fail("ConvTranspose: pads crop the whole output");
      y = c.op(OpKind::Slice, {y}, Attrs{{"dim", d}, {"start", b}, {"end", full[k] - e}, {"step", int64_t{1}}});
    }
    if (begin[k] < 0 || end[k] < 0) {
      Ints pb(ns + 2, 0), pe(ns + 2, 0);
      pb[static_cast<size_t>(d)] = std::max<int64_t>(-begin[k], 0);
      pe[static_cast<size_t>(d)] = std::max<int64_t>(-end[k], 0);
      y = padTo(c, y, pb, pe, "constant", 0.0);
    }
  }
  Ints bshape(ns + 2, 1);
  bshape[1] = outC;
  if (c.has(2)) y = c.add(y, c.reshape(c.in(2), bshape));
  if (oneD) y = c.op(OpKind::Squeeze, {y}, Attrs{{"dim", Ints{2}}});
  return {y};
}

/// AveragePool with dilations (19): the window sums are a depthwise
/// convolution of the zero-padded input with ones (the dilations Conv's),
/// divided by each window's count of the elements it averages, computed at
/// compile time: the input's (count_include_pad=0) or the padded input's
/// (count_include_pad=1), never the part of a ceil_mode window past the end
/// padding (ONNX's reference and PyTorch alike).  A window's count is the
/// product of its counts per dim, so the divisor is an outer product of one
/// constant vector per dim.  `g` is the geometry of the un-lifted input.
ValueId dilatedAvgPool(Node& c, ValueId x, ConvGeom g, bool ceil, bool includePad) {
  const Ints xs = c.type(x).sizes;
  DType dt = c.type(x).dtype;
  if (!isFloating(dt)) c.fail("AveragePool: the input must be floating-point");
  const size_t n = g.kernel.size();
  const int64_t rank = c.type(x).rank(), C = xs[1];
  Ints out(n), extra(n);
  std::vector<Ints> counts(n);
  for (size_t k = 0; k < n; ++k) {
    int64_t in = xs[2 + k], b = g.begin[k], e = g.end[k], s = g.stride[k], d = g.dil[k];
    int64_t span = in + b + e - d * (g.kernel[k] - 1) - 1;
    if (span < 0) c.fail("AveragePool: the dilated window is larger than the padded input");
    int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (o - 1) * s >= in + b) --o;  // the last window starts inside the input or the begin padding
    out[k] = o;
    // The padded length the convolution reads: the windows' end, past or short of in + b + e.
    extra[k] = (o - 1) * s + d * (g.kernel[k] - 1) + 1 - (in + b);
    int64_t lo = includePad ? -b : 0, hi = includePad ? in + e : in;
    for (int64_t i = 0; i < o; ++i) {
      int64_t cnt = 0;
      for (int64_t j = 0; j < g.kernel[k]; ++j) {
        int64_t pos = i * s - b + j * d;
        cnt += pos >= lo && pos < hi;
      }
      counts[k].push_back(cnt);
    }
  }
  // Zero padding to the windows' extent: begin pads, and at the end what the
  // last window reads (a shorter input is cut).
  for (size_t k = 0; k < n; ++k)
    if (extra[k] < 0)
      x = c.op(OpKind::Slice, {x}, Attrs{{"dim", static_cast<int64_t>(2 + k)}, {"start", int64_t{0}}, {"end", xs[2 + k] + extra[k]}, {"step", int64_t{1}}});
  Ints endPad(n);
  for (size_t k = 0; k < n; ++k) endPad[k] = std::max<int64_t>(extra[k], 0);
  ValueId xp = padSpatial(c, x, g.begin, endPad, 0.0);
  Ints wshape{C, 1};
  wshape.insert(wshape.end(), g.kernel.begin(), g.kernel.end());
  ValueId w = c.full(1.0, TensorType::contiguous(dt, wshape));
  bool oneD = rank == 3;
  Ints stride = g.stride, dil = g.dil;
  if (oneD) {
    xp = c.op(OpKind::Unsqueeze, {xp}, Attrs{{"dim", int64_t{2}}});
    w = c.op(OpKind::Unsqueeze, {w}, Attrs{{"dim", int64_t{2}}});
    stride.insert(stride.begin(), 1);
    dil.insert(dil.begin(), 1);
  }
  ValueId sum = rank == 5 ? conv3d(c, xp, w, stride, Ints(3, 0), dil, C)
                          : c.op(OpKind::Conv2d, {xp, w}, Attrs{{"stride", stride}, {"padding", Ints(2, 0)}, {"dilation", dil}, {"groups", C}});
  if (oneD) sum = c.op(OpKind::Squeeze, {sum}, Attrs{{"dim", Ints{2}}});
  const Ints ss = c.type(sum).sizes;
  for (size_t k = 0; k < n; ++k)
    if (ss[2 + k] != out[k]) c.fail(cat("AveragePool: internal error: the window sums have ", ss[2 + k], " positions along spatial dim ", k, ", not ", out[k]));
  ValueId divisor = kNoValue;
  for (size_t k = 0; k < n; ++k) {
    Ints shape(static_cast<size_t>(rank), 1);
    shape[2 + k] = out[k];
    HostTensor t = HostTensor::zeros(dt, shape);
    for (int64_t i = 0; i < out[k]; ++i) t.data[static_cast<size_t>(i)] = static_cast<double>(counts[k][static_cast<size_t>(i)]);
    ValueId v = c.constant(std::move(t));
    divisor = divisor == kNoValue ? v : c.mul(divisor, v);
  }
  return c.div(sum, divisor);
}

/// MaxPool / AveragePool: pads that are symmetric and at most half the
/// window go to the pool; others are explicit (-inf for max; for an average
/// without count_include_pad, the padded sum over the padded count of ones,
/// both as window means).
template <bool Max>
Outs poolOp(Node& c) {
  ValueId x = c.in(0);
  int64_t rank = c.type(x).rank();
  requireSpatial(c, rank, Max ? "MaxPool" : "AveragePool");
  if (Max && c.wantsOutput(1)) c.fail("MaxPool: the Indices output is not supported");
  Ints sin(c.type(x).sizes.begin() + 2, c.type(x).sizes.end());
  ConvGeom g = convGeom(c, sin, c.ints("kernel_shape"));
  bool ceil = c.i("ceil_mode", 0) != 0;
  bool includePad = !Max && c.i("count_include_pad", 0) != 0;
  if (Max && c.i("storage_order", 0) != 0) c.fail("MaxPool: storage_order=1 is not supported");
  if (!Max && g.dil != Ints(g.dil.size(), 1)) return {dilatedAvgPool(c, x, g, ceil, includePad)};
  bool oneD = rank == 3;
  if (oneD) x = liftOneD(c, x, g);
  auto pool = [&](ValueId in, const Ints& pad, bool countPad) -> ValueId {
    if (rank == 5) {
      decomp::Pool3d p{g.kernel, g.stride, pad, g.dil, ceil, countPad, std::nullopt};
      return Max ? decomp::maxPool3d(c, in, p).first : decomp::avgPool3d(c, in, p);
    }
    if (Max)
      return c.ops(OpKind::MaxPool2d, {in}, Attrs{{"kernel", g.kernel}, {"stride", g.stride}, {"padding", pad}, {"dilation", g.dil}, {"ceil_mode", ceil}})[0];
    return c.op(OpKind::AvgPool2d, {in}, Attrs{{"kernel", g.kernel}, {"stride", g.stride}, {"padding", pad}, {"ceil_mode", ceil}, {"count_include_pad", countPad}});
  };
  bool sym = g.begin == g.end;
  for (size_t k = 0; k < g.begin.size() && sym; ++k) sym = g.begin[k] * 2 <= g.kernel[k];
  if (!sym && ceil) c.fail("pooling with asymmetric pads and ceil_mode is not supported");
  auto [xp, pad] = spatialPadding(c, x, g, sym, Max ? -HUGE_VAL : 0.0);
  ValueId y = pool(xp, pad, includePad || !sym);
  if (!sym && !Max && !includePad) {
    ValueId ones = c.full(1.0, TensorType::contiguous(c.type(x).dtype, c.type(x).sizes));
    y = c.div(y, pool(padSpatial(c, ones, g.begin, g.end, 0.0), pad, true));
  }
  if (oneD) y = c.op(OpKind::Squeeze, {y}, Attrs{{"dim", Ints{2}}});
  return {y};
}

/// LpPool: (sum over each window of |x|^p)^(1/p), the window sums a
/// depthwise convolution with ones (dilations and pads as Conv's).
Outs lpPoolOp(Node& c) {
  ValueId x = c.in(0);
  int64_t rank = c.type(x).rank();
  requireSpatial(c, rank, "LpPool");
  DType dt = c.type(x).dtype;
  if (!isFloating(dt)) c.fail("LpPool: the input must be floating-point");
  double p = c.opset() >= 2 ? static_cast<double>(c.i("p", 2)) : c.f("p", 2.0);
  if (p <= 0) c.fail(cat("LpPool: p = ", p, " must be positive"));
  if (c.i("ceil_mode", 0) != 0) c.fail("LpPool: ceil_mode=1 is not supported");
  Ints sin(c.type(x).sizes.begin() + 2, c.type(x).sizes.end());
  ConvGeom g = convGeom(c, sin, c.ints("kernel_shape"));
  int64_t C = c.type(x).sizes[1];
  ValueId v = c.op(OpKind::Pow, {c.op(OpKind::Abs, {x}), c.scalar(p, dt)});
  Ints wshape{C, 1};
  wshape.insert(wshape.end(), g.kernel.begin(), g.kernel.end());
  ValueId w = c.full(1.0, TensorType::contiguous(dt, wshape));
  bool oneD = rank == 3;
  if (oneD) {
    v = liftOneD(c, v, g);
    w = c.op(OpKind::Unsqueeze, {w}, Attrs{{"dim", int64_t{2}}});
  }
  auto [vp, pad] = spatialPadding(c, v, g, g.begin == g.end, 0.0);
  ValueId sum = rank == 5 ? conv3d(c, vp, w, g.stride, pad, g.dil, C)
                          : c.op(OpKind::Conv2d, {vp, w}, Attrs{{"stride", g.stride}, {"padding", pad}, {"dilation", g.dil}, {"groups", C}});
  if (oneD) sum = c.op(OpKind::Squeeze, {sum}, Attrs{{"dim", Ints{2}}});
  return {c.op(OpKind::Pow, {sum, c.scalar(1.0 / p, dt)})};
}

/// Col2Im (18): the columns [N, C * prod(block), L] summed back into the
/// image (PyTorch's fold): each column element scatter-added at its padded
/// image position (block position * stride + kernel offset * dilation, a
/// compile-time index map), the pads cut off.
Outs col2ImOp(Node& c) {
  ValueId x = c.in(0);
  Ints img = c.knownInts(1, "image_shape"), blk = c.knownInts(2, "block_shape");
  size_t k = img.size();
  if (k == 0 || blk.size() != k) c.fail("Col2Im: image_shape and block_shape must have one value per spatial dim");
  Ints stride = c.ints("strides", Ints(k, 1)), dil = c.ints("dilations", Ints(k, 1)), pads = c.ints("pads", Ints(2 * k, 0));
  if (stride.size() != k || dil.size() != k || pads.size() != 2 * k) c.fail("Col2Im: strides, dilations and pads must match the spatial dims");
  const Ints xs = c.type(x).sizes;
  if (xs.size() != 3) c.fail("Col2Im: the input must be [N, C * prod(block_shape), L]");
  int64_t K = 1, L = 1, P = 1;
  Ints padded(k), blocks(k);
  for (size_t d = 0; d < k; ++d) {
    if (img[d] <= 0 || blk[d] <= 0 || stride[d] <= 0 || dil[d] <= 0 || pads[d] < 0 || pads[d + k] < 0) c.fail("Col2Im: sizes must be positive and pads not negative");
    padded[d] = img[d] + pads[d] + pads[d + k];
    int64_t span = dil[d] * (blk[d] - 1) + 1;
    if (span > padded[d]) c.fail("Col2Im: the block is larger than the padded image");
    blocks[d] = (padded[d] - span) / stride[d] + 1;
    K *= blk[d];
    L *= blocks[d];
    P *= padded[d];
  }
  if (xs[1] % K || xs[2] != L) c.fail(cat("Col2Im: the input must be [N, C * ", K, ", ", L, "]"));
  if (K * L > kMaxFoldElements) c.fail("Col2Im: the index map is too large");
  int64_t N = xs[0], C = xs[1] / K;
  HostTensor map = HostTensor::zeros(DType::I64, {K * L});
  for (int64_t kk = 0; kk < K; ++kk)
    for (int64_t l = 0; l < L; ++l) {
      int64_t kr = kk, lr = l, pos = 0, scale = 1;
      for (size_t d = k; d-- > 0;) {
        int64_t off = kr % blk[d], b = lr % blocks[d];
        kr /= blk[d];
        lr /= blocks[d];
        pos += (b * stride[d] + off * dil[d]) * scale;
        scale *= padded[d];
      }
      map.data[static_cast<size_t>(kk * L + l)] = static_cast<double>(pos);
    }
  ValueId idx = c.contiguous(c.expand(c.reshape(c.constant(std::move(map)), {1, 1, K * L}), {N, C, K * L}));
  ValueId zero = c.full(0.0, TensorType::contiguous(c.type(x).dtype, {N, C, P}));
  ValueId y = c.op(OpKind::ScatterAdd, {zero, idx, c.reshape(x, {N, C, K * L})}, Attrs{{"dim", int64_t{2}}});
  Ints shape{N, C};
  shape.insert(shape.end(), padded.begin(), padded.end());
  y = c.reshape(y, shape);
  for (size_t d = 0; d < k; ++d)
    if (pads[d] || pads[d + k])
      y = c.op(OpKind::Slice, {y}, Attrs{{"dim", static_cast<int64_t>(d + 2)}, {"start", pads[d]}, {"end", pads[d] + img[d]}, {"step", int64_t{1}}});
  return {y};
}

/// DeformConv (19, 22), 2-D as ONNX's reference (which defines no other
/// rank): the kernel tap (a, b) of output (i, j) reads the input at
/// (i * stride - pad + a * dilation + offset_y, j * stride - pad + b *
/// dilation + offset_x), the offsets of its offset group's channels,
/// bilinearly (the reference's GridSample with align_corners, zeros padding:
/// a tap outside the input reads 0), times the mask's value; the samples
/// [N, C * K, P] then meet the weight as a grouped matrix product.
/// Coordinates are computed in float32 (float64 for a float64 input).
Outs deformConvOp(Node& c) {
  ValueId x = c.in(0), w = c.in(1), off = c.in(2);
  const Ints xs = c.type(x).sizes, ws = c.type(w).sizes, os = c.type(off).sizes;
  if (xs.size() != 4) c.fail("DeformConv: only 2-D convolution (a 4-D input) is supported; ONNX's reference defines no other");
  const DType dt = c.type(x).dtype;
  if (!isFloating(dt)) c.fail("DeformConv: the input must be floating-point");
  if (ws.size() != 4 || os.size() != 4) c.fail("DeformConv: the weight and the offsets must be 4-D");
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], OC = ws[0], kh = ws[2], kw = ws[3], K = kh * kw;
  if (c.ints("kernel_shape", Ints{kh, kw}) != Ints{kh, kw}) c.fail("DeformConv: kernel_shape differs from the weight's");
  const Ints stride = c.ints("strides", Ints{1, 1}), dil = c.ints("dilations", Ints{1, 1}), pads = c.ints("pads", Ints{0, 0, 0, 0});
  if (stride.size() != 2 || dil.size() != 2 || pads.size() != 4) c.fail("DeformConv: strides, dilations and pads must match the 2 spatial dims");
  for (size_t k = 0; k < 2; ++k)
    if (stride[k] <= 0 || dil[k] <= 0) c.fail("DeformConv: strides and dilations must be positive");
  for (int64_t p : pads)
    if (p < 0) c.fail("DeformConv: negative pads are not supported");
  const int64_t G = c.i("group", 1), OG = c.i("offset_group", 1);
  if (G <= 0 || OG <= 0) c.fail("DeformConv: group and offset_group must be positive");
  if (C != ws[1] * G || OC % G != 0) c.fail(cat("DeformConv: the weight [", OC, ", ", ws[1], ", ...] does not fit ", C, " input channels in ", G, " groups"));
  if (C % OG != 0) c.fail(cat("DeformConv: ", C, " input channels do not divide into ", OG, " offset groups"));
  const int64_t oh = os[2], ow = os[3], P = oh * ow, Cg = C / OG, Cig = C / G, OCg = OC / G;
  if (os[0] != N || os[1] != OG * K * 2) c.fail(cat("DeformConv: the offsets must be [", N, ", ", OG * K * 2, ", oH, oW]"));
  for (size_t k = 0; k < 2; ++k) {
    int64_t span = xs[2 + k] + pads[k] + pads[k + 2] - ((ws[2 + k] - 1) * dil[k] + 1);
    if (span < 0 || span / stride[k] + 1 != os[2 + k]) c.fail("DeformConv: the offsets' spatial sizes differ from the convolution's output");
  }
  // The reference normalizes coordinates by (size - 1) for its GridSample.
  if (H == 1 || W == 1) c.fail("DeformConv: an input of height or width 1 is not supported (ONNX's reference divides by size - 1 there)");
  if (c.has(4) && c.type(c.in(4)).sizes != Ints{N, OG * K, oh, ow}) c.fail(cat("DeformConv: the mask must be [", N, ", ", OG * K, ", ", oh, ", ", ow, "]"));
  if (c.has(3) && c.type(c.in(3)).sizes != Ints{OC}) c.fail(cat("DeformConv: the bias must be [", OC, "]"));
  if (K * P > kMaxFoldElements) c.fail("DeformConv: the sampling grid is too large");
  const DType f = dt == DType::F64 ? DType::F64 : DType::F32;
  // Each tap's position before its offset, [1, 1, K, P] per dim.
  HostTensor baseY = HostTensor::zeros(f, {1, 1, K, P}), baseX = HostTensor::zeros(f, {1, 1, K, P});
  for (int64_t a = 0; a < kh; ++a)
    for (int64_t b = 0; b < kw; ++b)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          size_t e = static_cast<size_t>(((a * kw + b) * oh + i) * ow + j);
          baseY.data[e] = static_cast<double>(i * stride[0] - pads[0] + a * dil[0]);
          baseX.data[e] = static_cast<double>(j * stride[1] - pads[1] + b * dil[1]);
        }
  ValueId o5 = c.cast(off, f);
  o5 = c.reshape(o5, {N, OG, K, 2, P});
  ValueId mask = kNoValue;
  if (c.has(4)) {
    mask = c.cast(c.in(4), f);
    mask = c.reshape(mask, {N, OG, K, P});
  }
  // The two taps of one dim: [N, OG, K, P] indices (0 where outside) and
  // weights (0 where outside), and whether each is inside.
  struct Tap {
    ValueId index, weight, inside;
  };
  auto taps = [&](int64_t dim, HostTensor base, int64_t L) {
    ValueId o = c.op(OpKind::Select, {o5}, Attrs{{"dim", int64_t{3}}, {"index", dim}});
    ValueId b = c.constant(std::move(base));
    ValueId v = c.add(o, b);
    ValueId lo = c.op(OpKind::Floor, {v});
    ValueId fr = c.sub(v, lo);
    ValueId one = c.scalar(1, f);
    ValueId hi = c.add(lo, one);
    ValueId wlo = c.sub(one, fr);
    std::vector<Tap> t;
    for (auto [at, wt] : {std::pair{lo, wlo}, std::pair{hi, fr}}) {
      ValueId ge = c.op(OpKind::Ge, {at, c.scalar(0, f)});
      ValueId le = c.op(OpKind::Le, {at, c.scalar(static_cast<double>(L - 1), f)});
      ValueId inside = c.op(OpKind::LogicalAnd, {ge, le});
      ValueId zero = c.scalar(0, f);
      ValueId idx = c.op(OpKind::Where, {inside, at, zero});
      idx = c.cast(idx, DType::I64);
      ValueId weight = c.op(OpKind::Where, {inside, wt, zero});
      t.push_back(Tap{idx, weight, inside});
    }
    return t;
  };
  std::vector<Tap> ty = taps(0, std::move(baseY), H), tx = taps(1, std::move(baseX), W);
  ValueId xg = c.reshape(x, {N, OG, Cg, H * W});
  ValueId sampled = kNoValue;
  for (const Tap& a : ty)
    for (const Tap& b : tx) {
      ValueId row = c.mul(a.index, c.scalar(static_cast<double>(W), DType::I64));
      ValueId flat = c.add(row, b.index);
      flat = c.reshape(flat, {N, OG, 1, K * P});
      flat = c.expand(flat, {N, OG, Cg, K * P});
      flat = c.contiguous(flat);
      ValueId got = c.op(OpKind::Gather, {xg, flat}, Attrs{{"dim", int64_t{3}}});
      // A tap outside reads 0, whatever the clamped element holds (inf, NaN).
      ValueId inside = c.op(OpKind::LogicalAnd, {a.inside, b.inside});
      inside = c.reshape(inside, {N, OG, 1, K * P});
      ValueId zero = c.scalar(0, dt);
      got = c.op(OpKind::Where, {inside, got, zero});
      ValueId wt = c.mul(a.weight, b.weight);
      if (mask != kNoValue) wt = c.mul(wt, mask);
      wt = c.cast(wt, dt);
      wt = c.reshape(wt, {N, OG, 1, K * P});
      ValueId term = c.mul(got, wt);
      sampled = sampled == kNoValue ? term : c.add(sampled, term);
    }
  // [N, OG, Cg, K * P] is [N, C, K, P]: per group, rows (channel, tap).
  ValueId cols = c.reshape(sampled, {N, G, Cig * K, P});
  ValueId wm = c.reshape(w, {1, G, OCg, Cig * K});
  ValueId y = matmul(c, wm, cols);
  y = c.reshape(y, {N, OC, oh, ow});
  if (c.has(3)) {
    ValueId bias = c.reshape(c.in(3), {1, OC, 1, 1});
    y = c.add(y, bias);
  }
  return {y};
}

template <bool Max>
Outs globalPoolOp(Node& c) {
  ValueId x = c.in(0);
  Ints dims;
  for (int64_t d = 2; d < c.type(x).rank(); ++d) dims.push_back(d);
  if (dims.empty()) return {x};
  return {reduceOp(c, Max ? OpKind::Amax : OpKind::Mean, x, dims, true)};
}

}  // namespace

Entries windowsConverters() {
  return {
    {"AveragePool", poolOp<false>},
    {"CenterCropPad", centerCropPadOp},
    {"Col2Im", col2ImOp},
    {"Conv", convOp},
    {"ConvTranspose", convTransposeOp},
    {"DeformConv", deformConvOp},
    {"GlobalAveragePool", globalPoolOp<false>},
    {"GlobalMaxPool", globalPoolOp<true>},
    {"LpPool", lpPoolOp},
    {"MaxPool", poolOp<true>},
    {"Pad", padOp},
  };
}

}  // namespace aotc::onnx_fe
