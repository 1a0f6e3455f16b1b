//===- onnx/views.cpp - Shape ops -------------------------------------------===//
//
// Shape, Size, Reshape, Flatten, Transpose, (Un)Squeeze, Concat, Split, Slice,
// Expand, Tile, DepthToSpace/SpaceToDepth, Trilu, Identity; axes and sizes
// given as inputs must be known (Note [Compile-time values]).
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

namespace {

Outs shapeOp(Node& c) {
  Ints s = c.typeIn(0).sizes;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t start = c.i("start", 0), end = c.i("end", r);
  start = std::clamp(start < 0 ? start + r : start, int64_t{0}, r);
  end = std::clamp(end < 0 ? end + r : end, int64_t{0}, r);
  HostTensor t = HostTensor::zeros(DType::I64, {std::max<int64_t>(end - start, 0)});
  for (int64_t k = start; k < end; ++k) t.data[static_cast<size_t>(k - start)] = static_cast<double>(s[static_cast<size_t>(k)]);
  return {t};
}

Outs sizeOp(Node& c) {
  HostTensor t = HostTensor::zeros(DType::I64, {});
  t.data[0] = static_cast<double>(c.typeIn(0).numel());
  return {t};
}

Outs reshapeOp(Node& c) {
  ValueId x = c.in(0);
  Ints shape = c.knownInts(1, "shape");
  const Ints in = c.type(x).sizes;
  bool allowZero = c.i("allowzero", 0) != 0;
  for (size_t k = 0; k < shape.size(); ++k)
    if (shape[k] == 0 && !allowZero) {
      if (k >= in.size()) c.fail("Reshape: a 0 in the shape copies a dim the input does not have");
      shape[k] = in[k];
    }
  return {c.reshape(x, shape)};
}

Outs flattenOp(Node& c) {
  ValueId x = c.in(0);
  const Ints s = c.type(x).sizes;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t a = c.i("axis", 1);
  if (a < -r || a > r) c.fail(cat("Flatten: axis ", a, " is out of range"));
  if (a < 0) a += r;
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < r; ++k) (k < a ? outer : inner) = mulSize(k < a ? outer : inner, s[static_cast<size_t>(k)]);
  return {c.reshape(x, {outer, inner})};
}

Outs transposeOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  Ints perm;
  for (int64_t k = r - 1; k >= 0; --k) perm.push_back(k);
  perm = c.ints("perm", perm);
  return {c.op(OpKind::Permute, {x}, Attrs{{"dims", perm}})};
}

Ints axesOf(Node& c, size_t input, const char* attrName, bool fromInput) {
  if (fromInput) return c.has(input) ? c.knownInts(input, "axes") : Ints{};
  return c.ints(attrName, Ints{});
}

Outs squeezeOp(Node& c) {
  ValueId x = c.in(0);
  Ints axes = axesOf(c, 1, "axes", c.opset() >= 13);
  int64_t r = c.type(x).rank();
  Ints dims;
  if (axes.empty()) {
    for (int64_t k = 0; k < r; ++k)
      if (c.type(x).sizes[static_cast<size_t>(k)] == 1) dims.push_back(k);
  } else {
    for (int64_t a : axes) {
      int64_t d = c.axis(a, r);
      if (c.type(x).sizes[static_cast<size_t>(d)] != 1) c.fail(cat("Squeeze: dim ", d, " has size ", c.type(x).sizes[static_cast<size_t>(d)], ", not 1"));
      dims.push_back(d);
    }
  }
  if (dims.empty()) return {x};
  return {c.op(OpKind::Squeeze, {x}, Attrs{{"dim", dims}})};
}

Outs unsqueezeOp(Node& c) {
  ValueId x = c.in(0);
  Ints axes = axesOf(c, 1, "axes", c.opset() >= 13);
  if (axes.empty()) c.fail("Unsqueeze: axes are required");
  int64_t outRank = c.type(x).rank() + static_cast<int64_t>(axes.size());
  Ints norm;
  for (int64_t a : axes) norm.push_back(c.axis(a, outRank));
  std::sort(norm.begin(), norm.end());
  if (std::adjacent_find(norm.begin(), norm.end()) != norm.end()) c.fail("Unsqueeze: repeated axis");
  for (int64_t d : norm) x = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", d}});
  return {x};
}

Outs concatOp(Node& c) {
  V xs;
  for (size_t k = 0; k < c.numInputs(); ++k) xs.push_back(c.in(k));
  int64_t r = c.type(xs[0]).rank();
  return {c.op(OpKind::Cat, xs, Attrs{{"dim", c.axis(c.i("axis"), r)}})};
}

Outs splitOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  int64_t a = c.axis(c.i("axis", 0), r);
  int64_t n = c.type(x).sizes[static_cast<size_t>(a)];
  Ints sizes = c.opset() >= 13 ? (c.has(1) ? c.knownInts(1, "split") : Ints{}) : c.ints("split", Ints{});
  size_t outs = c.numOutputs();
  if (c.opset() >= 18 && c.hasAttr("num_outputs")) {
    // Split 18: chunks of ceil(n / num_outputs), the last one smaller.
    int64_t k = c.i("num_outputs");
    if (!sizes.empty()) c.fail("Split: 'split' and 'num_outputs' are both given");
    if (k < 1 || static_cast<size_t>(k) != outs) c.fail(cat("Split: num_outputs = ", k, " but the node has ", outs, " outputs"));
    int64_t chunk = (n + k - 1) / k;
    for (int64_t left = n; static_cast<int64_t>(sizes.size()) < k; left -= std::min(chunk, left)) sizes.push_back(std::min(chunk, left));
  }
  if (sizes.empty()) {
    if (outs == 0 || n % static_cast<int64_t>(outs)) c.fail(cat("Split: dim ", a, " of size ", n, " does not split into ", outs, " equal parts"));
    sizes.assign(outs, n / static_cast<int64_t>(outs));
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) c.fail("Split: negative split size");
    total += s;
  }
  if (total != n || sizes.size() != outs) c.fail(cat("Split: sizes do not add up to dim ", a, " (", n, ") or do not match the ", outs, " outputs"));
  V parts = splitSizes(c, x, a, sizes);
  return Outs(parts.begin(), parts.end());
}

Outs sliceOp(Node& c) {
  ValueId x = c.in(0);
  int64_t r = c.type(x).rank();
  Ints starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.ints("starts", std::nullopt, true);
    ends = c.ints("ends", std::nullopt, true);
    axes = c.ints("axes", Ints{});
  } else {
    starts = c.knownInts(1, "starts", true);
    ends = c.knownInts(2, "ends", true);
    if (c.has(3)) axes = c.knownInts(3, "axes");
    if (c.has(4)) steps = c.knownInts(4, "steps");
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("Slice: starts, ends, axes and steps must have the same length");
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t d = c.axis(axes[k], r);
    if (steps[k] == 0) c.fail("Slice: step must not be 0");
    int64_t n = c.type(x).sizes[static_cast<size_t>(d)];
    int64_t st = steps[k];
    // ONNX's clamping: [0, n] for a positive step; for a negative one the
    // start is clamped to [0, n-1] and the end to [-1, n-1].
    auto clampIdx = [&](int64_t v, bool isEnd) {
      if (v < 0) v += n;
      if (st > 0) return std::clamp<int64_t>(v, 0, n);
      return std::clamp<int64_t>(v, isEnd ? -1 : 0, n - 1);
    };
    int64_t s = clampIdx(std::clamp(starts[k], -kMaxExtent, kMaxExtent), false);
    int64_t e = clampIdx(std::clamp(ends[k], -kMaxExtent, kMaxExtent), true);
    if (st > 0) {
      x = c.op(OpKind::Slice, {x}, Attrs{{"dim", d}, {"start", s}, {"end", std::max(e, s)}, {"step", st}});
    } else {
      // A negative step: the elements s, s+st, ... while > e, picked by index.
      Ints idx;
      for (int64_t v = s; v > e; v += st) idx.push_back(v);
      if (static_cast<int64_t>(idx.size()) > kMaxIndexMap) c.fail("Slice: too many elements for a negative step");
      x = idx.empty() ? c.op(OpKind::Slice, {x}, Attrs{{"dim", d}, {"start", int64_t{0}}, {"end", int64_t{0}}, {"step", int64_t{1}}})
                      : pick(c, x, d, idx);
    }
  }
  return {x};
}

Outs expandOp(Node& c) {
  ValueId x = c.in(0);
  Ints shape = c.knownInts(1, "shape");
  auto out = broadcastShapes(c.type(x).sizes, shape);
  if (!out) c.fail("Expand: the shape does not broadcast with the input's");
  if (*out == c.type(x).sizes) return {x};
  return {c.op(OpKind::Expand, {x}, Attrs{{"size", *out}})};
}

Outs tileOp(Node& c) {
  ValueId x = c.in(0);
  Ints reps = c.knownInts(1, "repeats");
  if (static_cast<int64_t>(reps.size()) != c.type(x).rank()) c.fail("Tile: repeats must have one entry per dim");
  return {repeatOp(c, x, reps)};
}

Outs depthToSpaceOp(Node& c) {
  ValueId x = c.in(0);
  const Ints s = c.type(x).sizes;
  if (s.size() != 4) c.fail("DepthToSpace: the input must be 4-D");
  int64_t b = c.i("blocksize");
  if (b <= 0 || s[1] % (b * b)) c.fail("DepthToSpace: channels must divide by blocksize^2");
  int64_t N = s[0], C = s[1], H = s[2], W = s[3], Co = C / (b * b);
  bool crd = c.s("mode", "DCR") == "CRD";
  ValueId t = crd ? c.reshape(x, {N, Co, b, b, H, W}) : c.reshape(x, {N, b, b, Co, H, W});
  Ints perm = crd ? Ints{0, 1, 4, 2, 5, 3} : Ints{0, 3, 4, 1, 5, 2};
  t = c.op(OpKind::Permute, {t}, Attrs{{"dims", perm}});
  return {c.reshape(t, {N, Co, H * b, W * b})};
}

Outs spaceToDepthOp(Node& c) {
  ValueId x = c.in(0);
  const Ints s = c.type(x).sizes;
  if (s.size() != 4) c.fail("SpaceToDepth: the input must be 4-D");
  int64_t b = c.i("blocksize");
  if (b <= 0 || s[2] % b || s[3] % b) c.fail("SpaceToDepth: height and width must divide by blocksize");
  int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  std::string mode = c.opset() >= 28 ? c.s("mode", "DCR") : "DCR";  // SpaceToDepth 28: CRD puts each channel's block together
  if (mode != "DCR" && mode != "CRD") c.fail("SpaceToDepth: mode '" + mode + "' is not supported");
  ValueId t = c.reshape(x, {N, C, H / b, b, W / b, b});
  t = c.op(OpKind::Permute, {t}, Attrs{{"dims", mode == "CRD" ? Ints{0, 1, 3, 5, 2, 4} : Ints{0, 3, 5, 1, 2, 4}}});
  return {c.reshape(t, {N, C * b * b, H / b, W / b})};
}

Outs identityOp(Node& c) { return {c.in(0)}; }

Outs triluOp(Node& c) {
  ValueId x = c.in(0);
  int64_t k = c.has(1) ? static_cast<int64_t>(c.knownScalar(1, "k")) : 0;
  return {triangle(c, x, k, c.i("upper", 1) != 0)};
}

}  // namespace

Entries viewsConverters() {
  return {
    {"Concat", concatOp},
    {"DepthToSpace", depthToSpaceOp},
    {"Expand", expandOp},
    {"Flatten", flattenOp},
    {"Identity", identityOp},
    {"Reshape", reshapeOp},
    {"Shape", shapeOp},
    {"Size", sizeOp},
    {"Slice", sliceOp},
    {"SpaceToDepth", spaceToDepthOp},
    {"Split", splitOp},
    {"Squeeze", squeezeOp},
    {"Tile", tileOp},
    {"Transpose", transposeOp},
    {"Trilu", triluOp},
    {"Unsqueeze", unsqueezeOp},
  };
}

}  // namespace aotc::onnx_fe
