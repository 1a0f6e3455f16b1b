//===- onnx/resize.cpp - Resize, Upsample, GridSample ----------------------===//
//
// Resize (opsets 10-19+) and Upsample: every coordinate transformation
// mode, nearest mode and the linear/cubic weights; from 18 `axes` and
// keep_aspect_ratio_policy (antialias is refused where it would change the
// result: linear or cubic downsampling).  GridSample (16, 20: N-D) gathers
// its taps as ONNX's reference fetches them.  A converter longer than
// a screen: it reads its attributes as it goes and stays in the front end
// until it is rewritten over the ops layer's builder.
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

namespace {

/// Resize (opsets 10-19+) and Upsample: per resized axis, each output element
/// is a weighted sum of input elements along that axis (ONNX's reference:
/// nearest, linear and cubic, every coordinate transformation mode).  The
/// taps and weights are computed when compiling, in double; out-of-range
/// taps take the edge element, as the reference's edge padding does.
Outs resizeOp(Node& c) {
  ValueId x = c.in(0);
  const Ints in = c.type(x).sizes;
  size_t r = in.size();
  bool upsample = c.proto().op_type() == "Upsample";
  std::string mode = c.s("mode", "nearest");
  std::string ctm = upsample || c.opset() < 11 ? "asymmetric" : c.s("coordinate_transformation_mode", "half_pixel");
  std::string nearest = upsample ? "floor" : c.s("nearest_mode", "round_prefer_floor");
  double A = c.f("cubic_coeff_a", -0.75), extrapolation = c.f("extrapolation_value", 0.0);
  bool exclude = c.i("exclude_outside", 0) != 0;
  std::vector<double> scales, roi;
  Ints sizes;
  if (upsample && c.opset() < 9) {
    scales = c.floats("scales");
  } else {
    size_t si = upsample || c.opset() < 11 ? 1 : 2;
    if (c.has(si) && c.known(si, "scales").numel() > 0) scales = c.known(si, "scales").data;
    if (!upsample && c.opset() >= 11 && c.has(3)) sizes = c.knownInts(3, "sizes");
    if (!upsample && c.opset() >= 11 && c.has(1) && ctm == "tf_crop_and_resize") roi = c.known(1, "roi").data;
  }
  if (mode != "nearest" && mode != "linear" && mode != "cubic" && mode != "bilinear") c.fail("mode '" + mode + "' is not supported");
  if (mode == "bilinear") mode = "linear";
  // Resize 18: scales, sizes and roi may name only `axes` (the others keep
  // their size); keep_aspect_ratio_policy scales the named axes alike.
  Ints axes;
  std::string policy = "stretch";
  if (!upsample && c.opset() >= 18) {
    for (int64_t a : c.ints("axes", Ints{})) axes.push_back(c.axis(a, static_cast<int64_t>(r)));
    if (std::set<int64_t>(axes.begin(), axes.end()).size() != axes.size()) c.fail("Resize: axes repeats a dim");
    policy = c.s("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller") c.fail("keep_aspect_ratio_policy '" + policy + "' is not supported");
  }
  if (!axes.empty()) {
    size_t na = axes.size();
    auto spread = [&](auto& v, auto fill, const char* what) {
      if (v.empty()) return;
      if (v.size() != na) c.fail(cat(what, " must have one value per axis of 'axes'"));
      auto full = fill;
      for (size_t k = 0; k < na; ++k) full[static_cast<size_t>(axes[k])] = v[k];
      v = full;
    };
    spread(scales, std::vector<double>(r, 1.0), "scales");
    Ints keep = in;
    spread(sizes, keep, "sizes");
    if (!roi.empty()) {
      if (roi.size() != 2 * na) c.fail("roi must have two values per axis of 'axes'");
      std::vector<double> full(r, 0.0);
      full.resize(2 * r, 1.0);
      for (size_t k = 0; k < na; ++k) {
        full[static_cast<size_t>(axes[k])] = roi[k];
        full[static_cast<size_t>(axes[k]) + r] = roi[na + k];
      }
      roi = full;
    }
  } else {
    for (size_t d = 0; d < r; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  Ints out(r);
  if (!sizes.empty()) {
    if (sizes.size() != r) c.fail("sizes must have one value per dim");
    out = sizes;
    scales.assign(r, 0);
    for (size_t d = 0; d < r; ++d) scales[d] = in[d] ? static_cast<double>(out[d]) / static_cast<double>(in[d]) : 1.0;
    if (policy != "stretch") {
      double sc = policy == "not_larger" ? HUGE_VAL : 0;
      for (int64_t a : axes) sc = policy == "not_larger" ? std::min(sc, scales[static_cast<size_t>(a)]) : std::max(sc, scales[static_cast<size_t>(a)]);
      for (int64_t a : axes) {
        scales[static_cast<size_t>(a)] = sc;
        double o = std::floor(sc * static_cast<double>(in[static_cast<size_t>(a)]) + 0.5);  // the reference rounds half up
        if (o > static_cast<double>(kMaxIndexMap)) c.fail("the resized dim is too large");
        out[static_cast<size_t>(a)] = static_cast<int64_t>(o);
      }
    }
  } else {
    if (scales.size() != r) c.fail("scales (or sizes) must have one value per dim");
    for (size_t d = 0; d < r; ++d) {
      if (!(scales[d] > 0)) c.fail("scales must be positive");
      double o = std::floor(static_cast<double>(in[d]) * scales[d]);
      if (o > static_cast<double>(kMaxIndexMap)) c.fail("the resized dim is too large");
      out[d] = static_cast<int64_t>(o);
    }
  }
  if (ctm == "tf_crop_and_resize" && roi.size() != 2 * r) c.fail("tf_crop_and_resize needs roi with 2 values per dim");
  if (!upsample && c.opset() >= 18 && c.i("antialias", 0) != 0 && mode != "nearest")
    for (size_t d = 0; d < r; ++d)
      if (scales[d] < 1.0) c.fail("Resize: antialias=1 when downsampling (a widened filter) is not supported");
  DType dt = c.type(x).dtype;
  for (size_t d = 0; d < r; ++d) {
    if (out[d] == in[d] && scales[d] == 1.0 && ctm != "tf_crop_and_resize") continue;
    if (out[d] <= 0 || in[d] <= 0) c.fail("resizing to or from an empty dim is not supported");
    int64_t n = in[d], m = out[d];
    double s = scales[d];
    // Taps per output element: (index, weight); index -1 = extrapolation.
    size_t taps = mode == "cubic" ? 4 : 2;
    std::vector<Ints> idx(taps, Ints(static_cast<size_t>(m)));
    std::vector<std::vector<double>> w(taps, std::vector<double>(static_cast<size_t>(m)));
    bool extrapolate = false;
    for (int64_t o = 0; o < m; ++o) {
      // The reference's resized length is in * scale, unrounded.
      double od = static_cast<double>(o), xo, L = static_cast<double>(n) * s;
      if (ctm == "half_pixel") xo = (od + 0.5) / s - 0.5;
      else if (ctm == "half_pixel_symmetric") {  // Resize 19: the ROI's center on the output's center
        double adj = static_cast<double>(m) / L, center = static_cast<double>(n) / 2;
        xo = center * (1 - adj) + (od + 0.5) / s - 0.5;
      }
      else if (ctm == "pytorch_half_pixel") xo = L > 1 ? (od + 0.5) / s - 0.5 : 0;
      else if (ctm == "align_corners") xo = L == 1 ? 0 : od * static_cast<double>(n - 1) / (L - 1);
      else if (ctm == "asymmetric") xo = od / s;
      else if (ctm == "tf_half_pixel_for_nn") xo = (od + 0.5) / s;
      else if (ctm == "tf_crop_and_resize") {
        double st = roi[d], en = roi[d + r];
        xo = L > 1 ? st * static_cast<double>(n - 1) + od * (en - st) * static_cast<double>(n - 1) / (L - 1)
                   : 0.5 * (st + en) * static_cast<double>(n - 1);
      } else c.fail("coordinate_transformation_mode '" + ctm + "' is not supported");
      bool outside = ctm == "tf_crop_and_resize" && (xo < 0 || xo > static_cast<double>(n - 1));
      double fl = std::floor(xo);
      int64_t i0 = static_cast<int64_t>(fl);
      double ratio = xo - fl;
      if (ratio == 0) {  // the reference prefers the pixel left of x
        ratio = 1;
        i0 -= 1;
      }
      std::vector<double> coeff;
      Ints at;
      if (mode == "nearest") {
        bool right = nearest == "round_prefer_floor" ? ratio > 0.5 : nearest == "round_prefer_ceil" ? ratio >= 0.5
                   : nearest == "floor" ? ratio == 1 : nearest == "ceil" ? true : (c.fail("nearest_mode '" + nearest + "' is not supported"), false);
        coeff = right ? std::vector<double>{0, 1} : std::vector<double>{1, 0};
        at = {i0, i0 + 1};
      } else if (mode == "linear") {
        coeff = {1 - ratio, ratio};
        at = {i0, i0 + 1};
      } else {
        std::array<double, 4> k = cubicCoefficients(ratio, A);
        coeff.assign(k.begin(), k.end());
        at = {i0 - 1, i0, i0 + 1, i0 + 2};
      }
      if (exclude) {
        double sum = 0;
        for (size_t k = 0; k < taps; ++k) {
          if (at[k] < 0 || at[k] >= n) coeff[k] = 0;
          sum += coeff[k];
        }
        if (sum != 0)
          for (double& v : coeff) v /= sum;
      }
      for (size_t k = 0; k < taps; ++k) {
        idx[k][static_cast<size_t>(o)] = outside ? -1 : std::clamp<int64_t>(at[k], 0, n - 1);
        w[k][static_cast<size_t>(o)] = outside ? 0 : coeff[k];
      }
      extrapolate = extrapolate || outside;
    }
    ValueId acc = kNoValue;
    Ints wshape(r, 1);
    wshape[d] = m;
    for (size_t k = 0; k < taps; ++k) {
      Ints safe = idx[k];
      for (int64_t& v : safe) v = std::max<int64_t>(v, 0);
      bool used = std::any_of(w[k].begin(), w[k].end(), [](double v) { return v != 0; });
      if (!used) continue;
      ValueId g = pickTable(c, x, static_cast<int64_t>(d), safe);  // Note [Constant tables]
      HostTensor wt = HostTensor::zeros(dt, wshape);
      for (size_t o = 0; o < w[k].size(); ++o) wt.data[o] = roundTo(dt, w[k][o]);
      bool ones = std::all_of(w[k].begin(), w[k].end(), [](double v) { return v == 1; });
      ValueId term = ones ? g : c.mul(g, c.constant(wt));
      acc = acc == kNoValue ? term : c.add(acc, term);
    }
    if (acc == kNoValue) {
      Ints shape = c.type(x).sizes;
      shape[d] = m;
      acc = c.full(0.0, TensorType::contiguous(dt, shape));
    }
    if (extrapolate) {
      HostTensor mask = HostTensor::zeros(DType::Bool, wshape);
      for (size_t o = 0; o < idx[0].size(); ++o) mask.data[o] = idx[0][o] < 0;
      acc = c.op(OpKind::Where, {c.constant(mask), sc(c, extrapolation, acc), acc});
    }
    x = acc;
  }
  return {x};
}

/// x reflected into [lo, hi] as ONNX's reference (_gs_reflect): by the near
/// border, n whole ranges dropped, even n from that border, odd n from the
/// other one.
ValueId reflectInto(Node& c, ValueId x, double lo, double hi) {
  DType d = c.type(x).dtype;
  ValueId rng = c.scalar(hi - lo, d), two = c.scalar(2, d), zero = c.scalar(0, d), vlo = c.scalar(lo, d), vhi = c.scalar(hi, d);
  auto side = [&](ValueId dx, ValueId nearB, ValueId farB, bool below) {
    ValueId n = c.op(OpKind::Trunc, {c.div(dx, rng)});
    ValueId r = c.sub(dx, c.mul(n, rng));
    ValueId even = bin(c, OpKind::Eq, {c.op(OpKind::Fmod, {n, two}), zero});
    ValueId fromNear = below ? c.add(nearB, r) : c.sub(nearB, r), fromFar = below ? c.sub(farB, r) : c.add(farB, r);
    return c.op(OpKind::Where, {even, fromNear, fromFar});
  };
  ValueId below = side(c.sub(vlo, x), vlo, vhi, true), above = side(c.sub(x, vhi), vhi, vlo, false);
  return c.op(OpKind::Where, {bin(c, OpKind::Lt, {x, vlo}), below, c.op(OpKind::Where, {bin(c, OpKind::Gt, {x, vhi}), above, x})});
}

/// GridSample (16, 20: N-D), as ONNX's reference: each output point's grid
/// coordinates denormalized (float32), rounded half to even for nearest,
/// moved inside by border or reflection padding; then the taps (1, 2 or 4 per
/// dim: nearest, linear, cubic with Keys' a = -0.75), each tap index fetched
/// by the padding rule (zeros: 0 outside; border: clamped; reflection:
/// reflected), gathered from X and summed with the product of the weights.
Outs gridSampleOp(Node& c) {
  ValueId x = c.in(0), grid = c.in(1);
  const Ints xs = c.type(x).sizes, gs = c.type(grid).sizes;
  int64_t rank = static_cast<int64_t>(xs.size()), k = rank - 2;
  if (rank < 3) c.fail("GridSample: the input needs at least 3 dims");
  if (c.opset() < 20 && rank != 4) c.fail("GridSample: a 4-D input before opset 20");
  DType dt = c.type(x).dtype;
  if (!isFloating(dt) || !isFloating(c.type(grid).dtype)) c.fail("GridSample: the input and the grid must be floating-point");
  if (static_cast<int64_t>(gs.size()) != rank || gs[0] != xs[0] || gs.back() != k)
    c.fail(cat("GridSample: the grid must be [", xs[0], ", ..., ", k, "]"));
  std::string mode = c.s("mode", c.opset() >= 20 ? "linear" : "bilinear"), pad = c.s("padding_mode", "zeros");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  if (mode != "linear" && mode != "nearest" && mode != "cubic") c.fail("GridSample: mode '" + mode + "' is not supported");
  if (pad != "zeros" && pad != "border" && pad != "reflection") c.fail("GridSample: padding_mode '" + pad + "' is not supported");
  bool corners = c.i("align_corners", 0) != 0;
  int64_t N = xs[0], C = xs[1], S = 1, P = 1;
  for (int64_t d = 0; d < k; ++d) {
    S *= xs[static_cast<size_t>(d + 2)];
    P *= gs[static_cast<size_t>(d + 1)];
  }
  if (S == 0 || P == 0) c.fail("GridSample: empty inputs are not supported");
  const DType f = DType::F32;  // the reference's coordinates
  ValueId g = c.reshape(c.cast(grid, f), {N, P, k});
  struct Tap {
    ValueId index, weight;  // [N, P] int64, [N, P] (0 where zeros padding drops it)
  };
  std::vector<std::vector<Tap>> taps(static_cast<size_t>(k));
  for (int64_t d = 0; d < k; ++d) {
    int64_t L = xs[static_cast<size_t>(d + 2)];
    double lo = corners ? 0.0 : -0.5, hi = corners ? static_cast<double>(L - 1) : static_cast<double>(L) - 0.5;
    if (pad == "reflection" && hi <= lo) c.fail("GridSample: reflection over a dim of 1 with align_corners is undefined");
    ValueId n = c.op(OpKind::Select, {g}, Attrs{{"dim", int64_t{2}}, {"index", k - 1 - d}});  // the grid lists (x, y, z)
    ValueId one = c.scalar(1, f);
    ValueId v = c.add(n, one);
    if (corners) {
      v = c.div(v, c.scalar(2, f));
      v = c.mul(v, c.scalar(static_cast<double>(L - 1), f));
    } else {
      v = c.mul(v, c.scalar(static_cast<double>(L), f));
      v = c.sub(v, one);
      v = c.div(v, c.scalar(2, f));
    }
    if (mode == "nearest") v = c.op(OpKind::Round, {v});
    ValueId outside = c.op(OpKind::LogicalOr, {bin(c, OpKind::Lt, {v, c.scalar(lo, f)}), bin(c, OpKind::Gt, {v, c.scalar(hi, f)})});
    if (pad == "border") {
      ValueId cl = c.op(OpKind::Where, {bin(c, OpKind::Lt, {v, c.scalar(0, f)}), c.scalar(0, f), v});
      cl = c.op(OpKind::Where, {bin(c, OpKind::Gt, {cl, c.scalar(static_cast<double>(L - 1), f)}), c.scalar(static_cast<double>(L - 1), f), cl});
      v = c.op(OpKind::Where, {outside, cl, v});
    } else if (pad == "reflection") {
      v = reflectInto(c, v, lo, hi);
    }
    // One tap at integer index i with weight w, by the padding rule.
    auto tap = [&](ValueId i, ValueId w) {
      ValueId idx = i;
      if (pad == "reflection") idx = c.op(OpKind::Trunc, {reflectInto(c, i, lo, hi)});
      ValueId valid = c.op(OpKind::LogicalAnd, {bin(c, OpKind::Ge, {idx, c.scalar(0, f)}), bin(c, OpKind::Le, {idx, c.scalar(static_cast<double>(L - 1), f)})});
      ValueId cl = c.op(OpKind::Where, {bin(c, OpKind::Lt, {idx, c.scalar(0, f)}), c.scalar(0, f), idx});
      cl = c.op(OpKind::Where, {bin(c, OpKind::Gt, {cl, c.scalar(static_cast<double>(L - 1), f)}), c.scalar(static_cast<double>(L - 1), f), cl});
      if (pad == "zeros") w = c.op(OpKind::Where, {valid, w, c.scalar(0, f)});
      return Tap{c.cast(cl, DType::I64), w};
    };
    auto& t = taps[static_cast<size_t>(d)];
    if (mode == "nearest") {
      ValueId at = c.op(OpKind::Trunc, {v});
      t.push_back(tap(at, c.full(1.0, c.type(v))));
      continue;
    }
    ValueId x0 = c.op(OpKind::Floor, {v});
    ValueId fr = c.sub(v, x0);
    if (mode == "linear") {
      t.push_back(tap(x0, c.sub(one, fr)));
      t.push_back(tap(c.add(x0, one), fr));
      continue;
    }
    // Keys' cubic convolution, a = -0.75, at distances 1 + t, t, 1 - t, 2 - t.
    const double a = -0.75;
    auto sc2 = [&](double v2) { return c.scalar(v2, f); };
    // One node per statement (Note [Sequenced operands], decompose_pointwise.cpp).
    auto outer = [&](ValueId z) {  // ((a z - 5a) z + 8a) z - 4a, for 1 <= z <= 2
      ValueId p = c.mul(sc2(a), z);
      p = c.sub(p, sc2(5 * a));
      p = c.mul(p, z);
      p = c.add(p, sc2(8 * a));
      p = c.mul(p, z);
      return c.sub(p, sc2(4 * a));
    };
    auto inner = [&](ValueId z) {  // ((a + 2) z - (a + 3)) z z + 1, for 0 <= z <= 1
      ValueId p = c.mul(sc2(a + 2), z);
      p = c.sub(p, sc2(a + 3));
      p = c.mul(p, z);
      p = c.mul(p, z);
      return c.add(p, one);
    };
    ValueId w0 = outer(c.add(fr, one)), w1 = inner(fr), w2 = inner(c.sub(one, fr)), w3 = outer(c.sub(sc2(2), fr));
    t.push_back(tap(c.sub(x0, one), w0));
    t.push_back(tap(x0, w1));
    t.push_back(tap(c.add(x0, one), w2));
    t.push_back(tap(c.add(x0, sc2(2)), w3));
  }
  ValueId xf = c.reshape(x, {N, C, S});
  ValueId acc = kNoValue;
  std::vector<size_t> pick(static_cast<size_t>(k), 0);
  while (true) {
    ValueId flat = kNoValue, w = kNoValue;
    int64_t stride = 1;
    for (int64_t d = k - 1; d >= 0; --d) {
      const Tap& tp = taps[static_cast<size_t>(d)][pick[static_cast<size_t>(d)]];
      ValueId term = stride == 1 ? tp.index : c.mul(tp.index, c.scalar(static_cast<double>(stride), DType::I64));
      flat = flat == kNoValue ? term : c.add(flat, term);
      w = w == kNoValue ? tp.weight : c.mul(w, tp.weight);
      stride *= xs[static_cast<size_t>(d + 2)];
    }
    ValueId idx = c.contiguous(c.expand(c.reshape(flat, {N, 1, P}), {N, C, P}));
    ValueId gathered = c.op(OpKind::Gather, {xf, idx}, Attrs{{"dim", int64_t{2}}});
    ValueId term = c.mul(gathered, c.reshape(c.cast(w, dt), {N, 1, P}));
    acc = acc == kNoValue ? term : c.add(acc, term);
    size_t d = static_cast<size_t>(k);
    while (d > 0 && ++pick[d - 1] == taps[d - 1].size()) pick[--d] = 0;
    if (d == 0) break;
  }
  Ints out{N, C};
  out.insert(out.end(), gs.begin() + 1, gs.end() - 1);
  return {c.reshape(acc, out)};
}

}  // namespace

Entries resizeConverters() {
  return {
    {"GridSample", gridSampleOp},
    {"Resize", resizeOp},
    {"Upsample", resizeOp},
  };
}

}  // namespace aotc::onnx_fe
