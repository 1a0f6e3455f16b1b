//===- reference.cpp - CPU reference kernels ------------------------------===//
#include "aotc/ops/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "aotc/ops/ops.h"
#include "aotc/ops/pointwise.h"
#include "aotc/ops/reductions.h"

namespace aotc {

namespace {

using Ins = std::vector<const HostTensor*>;
using Outs = std::vector<HostTensor>;
using Kernel = Outs (*)(const Ins&, const Attrs&, const std::vector<TensorType>&);

/// Index of each output element in a (broadcast) input, row-major.
std::vector<int64_t> broadcastIndex(const Ints& in, const Ints& out) {
  int64_t n = 1;
  for (int64_t s : out) n *= s;
  std::vector<int64_t> idx(static_cast<size_t>(n));
  Ints instr = TensorType::contiguousStrides(in);
  size_t lead = out.size() - in.size();
  Ints coord(out.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (size_t d = lead; d < out.size(); ++d)
      if (in[d - lead] != 1) off += coord[d] * instr[d - lead];
    idx[static_cast<size_t>(e)] = off;
    for (size_t d = out.size(); d-- > 0;) {
      if (++coord[d] < out[d]) break;
      coord[d] = 0;
    }
  }
  return idx;
}

template <typename F>
Outs pointwise(const Ins& in, const std::vector<TensorType>& ot, F f) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  std::vector<std::vector<int64_t>> idx;
  for (auto* t : in) idx.push_back(broadcastIndex(t->sizes, o.sizes));
  double args[3] = {0, 0, 0};
  for (size_t e = 0; e < o.data.size(); ++e) {
    for (size_t i = 0; i < in.size(); ++i) args[i] = in[i]->data[static_cast<size_t>(idx[i][e])];
    o.data[e] = roundTo(o.dtype, f(args));
  }
  return {std::move(o)};
}

/// A reduction row's reference (Note [Reduction rows]).
Outs reduce(const Ins& in, const Attrs& attrs, const std::vector<TensorType>& ot, const ReductionRule& r) {
  const HostTensor& x = *in[0];
  Ints dims = reductionDims(attrs, static_cast<int64_t>(x.sizes.size()));
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  // Output coordinate of each input element: reduced dims collapse to 0.
  Ints kept = x.sizes;
  for (int64_t d : dims) kept[d] = 1;
  Ints kstr = TensorType::contiguousStrides(kept);
  Ints coord(x.sizes.size(), 0);
  std::vector<double> acc(o.data.size(), r.init);
  for (int64_t e = 0; e < x.numel(); ++e) {
    int64_t off = 0;
    for (size_t d = 0; d < x.sizes.size(); ++d)
      if (kept[d] != 1) off += coord[d] * kstr[d];
    double& a = acc[static_cast<size_t>(off)];
    a = r.combine(a, x.data[static_cast<size_t>(e)]);
    for (size_t d = x.sizes.size(); d-- > 0;) {
      if (++coord[d] < x.sizes[d]) break;
      coord[d] = 0;
    }
  }
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(x.sizes[d]);
  for (size_t i = 0; i < acc.size(); ++i) o.data[i] = roundTo(o.dtype, r.mean ? acc[i] / n : acc[i]);
  return {std::move(o)};
}

Outs mm(const Ins& in, const Attrs&, const std::vector<TensorType>& ot) {
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

HostTensor transpose2d(const HostTensor& x) {
  if (x.sizes.size() < 2) return x;
  HostTensor o = HostTensor::zeros(x.dtype, {x.sizes[1], x.sizes[0]});
  for (int64_t i = 0; i < x.sizes[0]; ++i)
    for (int64_t j = 0; j < x.sizes[1]; ++j)
      o.data[static_cast<size_t>(j * x.sizes[0] + i)] = x.data[static_cast<size_t>(i * x.sizes[1] + j)];
  return o;
}

/// Elements of `x` (dense) seen through `view` (a layout over x's storage).
HostTensor gather(const HostTensor& x, const TensorType& view) {
  HostTensor o = HostTensor::zeros(x.dtype, view.sizes);
  Ints coord(view.sizes.size(), 0);
  for (size_t e = 0; e < o.data.size(); ++e) {
    int64_t off = view.offset;
    for (size_t d = 0; d < coord.size(); ++d) off += coord[d] * view.strides[d];
    o.data[e] = x.data[static_cast<size_t>(off)];
    for (size_t d = coord.size(); d-- > 0;) {
      if (++coord[d] < view.sizes[d]) break;
      coord[d] = 0;
    }
  }
  return o;
}

/// Any view op: its layout over a dense input, then a gather.
Outs viewKernel(OpKind op, const Ins& in, const Attrs& a) {
  TensorType base = TensorType::contiguous(in[0]->dtype, in[0]->sizes);
  return {gather(*in[0], inferTypes(op, {base}, a)[0])};
}

/// base with the region `viewOp(base)` replaced by src.
Outs scatterKernel(OpKind viewOp, const Ins& in, const Attrs& a) {
  HostTensor o = *in[0];
  TensorType region = inferTypes(viewOp, {TensorType::contiguous(o.dtype, o.sizes)}, a)[0];
  Ints coord(region.sizes.size(), 0);
  for (size_t e = 0; e < in[1]->data.size(); ++e) {
    int64_t off = region.offset;
    for (size_t d = 0; d < coord.size(); ++d) off += coord[d] * region.strides[d];
    o.data[static_cast<size_t>(off)] = in[1]->data[e];
    for (size_t d = coord.size(); d-- > 0;) {
      if (++coord[d] < region.sizes[d]) break;
      coord[d] = 0;
    }
  }
  return {std::move(o)};
}

/// Calls f(coord) for every coordinate of `sizes`, row-major.
template <typename F>
void forEach(const Ints& sizes, F f) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  Ints c(sizes.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    f(c, e);
    for (size_t d = c.size(); d-- > 0;) {
      if (++c[d] < sizes[d]) break;
      c[d] = 0;
    }
  }
}

int64_t flatIndex(const Ints& c, const Ints& sizes) {
  int64_t off = 0;
  for (size_t d = 0; d < sizes.size(); ++d) off = off * sizes[d] + c[d];
  return off;
}

Outs argmaxKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  const HostTensor& x = *in[0];
  HostTensor o = HostTensor::zeros(DType::I64, ot[0].sizes);
  if (!hasAttr(a, "dim")) {
    size_t best = 0;
    for (size_t i = 1; i < x.data.size(); ++i)
      if (x.data[i] > x.data[best] || (std::isnan(x.data[i]) && !std::isnan(x.data[best]))) best = i;
    o.data[0] = static_cast<double>(best);
    return {o};
  }
  int64_t d = wrapDim(attrInt(a, "dim"), std::max<int64_t>(static_cast<int64_t>(x.sizes.size()), 1));
  Ints outer = x.sizes;
  outer[static_cast<size_t>(d)] = 1;
  std::vector<double> best(static_cast<size_t>(HostTensor::zeros(DType::F64, outer).numel()), -INFINITY);
  std::vector<double> idx(best.size(), 0);
  forEach(x.sizes, [&](const Ints& c, int64_t e) {
    Ints k = c;
    int64_t pos = k[static_cast<size_t>(d)];
    k[static_cast<size_t>(d)] = 0;
    size_t slot = static_cast<size_t>(flatIndex(k, outer));
    double v = x.data[static_cast<size_t>(e)];
    if (v > best[slot] || (pos == 0 && std::isnan(best[slot])) || (std::isnan(v) && !std::isnan(best[slot]))) {
      best[slot] = v;
      idx[slot] = static_cast<double>(pos);
    }
  });
  o.data = idx;
  return {o};
}

Outs bmmKernel(const Ins& in, const Attrs&, const std::vector<TensorType>& ot) {
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

Outs conv2dKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  std::vector<double> acc(o.data.size(), 0.0);
  convTerms(convGeom(in[0]->sizes, in[1]->sizes, o.sizes, a),
            [&](int64_t xi, int64_t wi, int64_t oi) { acc[static_cast<size_t>(oi)] += in[0]->data[static_cast<size_t>(xi)] * in[1]->data[static_cast<size_t>(wi)]; });
  for (size_t i = 0; i < acc.size(); ++i) o.data[i] = roundTo(o.dtype, acc[i]);
  return {o};
}
Outs conv2dBackInputKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  std::vector<double> acc(o.data.size(), 0.0);
  convTerms(convGeom(o.sizes, in[1]->sizes, in[0]->sizes, a),
            [&](int64_t xi, int64_t wi, int64_t oi) { acc[static_cast<size_t>(xi)] += in[0]->data[static_cast<size_t>(oi)] * in[1]->data[static_cast<size_t>(wi)]; });
  for (size_t i = 0; i < acc.size(); ++i) o.data[i] = roundTo(o.dtype, acc[i]);
  return {o};
}
Outs conv2dBackWeightKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  std::vector<double> acc(o.data.size(), 0.0);
  convTerms(convGeom(in[1]->sizes, o.sizes, in[0]->sizes, a),
            [&](int64_t xi, int64_t wi, int64_t oi) { acc[static_cast<size_t>(wi)] += in[0]->data[static_cast<size_t>(oi)] * in[1]->data[static_cast<size_t>(xi)]; });
  for (size_t i = 0; i < acc.size(); ++i) o.data[i] = roundTo(o.dtype, acc[i]);
  return {o};
}

/// Visits every output element of a 2-D pooling window with its input
/// window bounds (padding excluded) and the padded window size.
template <typename F>
void poolWindows(const Ints& x, const Ints& out, const Window2d& w, F f) {
  for (int64_t nc = 0; nc < x[0] * x[1]; ++nc)
    for (int64_t y = 0; y < out[2]; ++y)
      for (int64_t xx = 0; xx < out[3]; ++xx) {
        int64_t hs = y * w.sh - w.ph, ws = xx * w.sw - w.pw;
        int64_t he = std::min(hs + (w.kh - 1) * w.dh + 1, x[2] + w.ph), we = std::min(ws + (w.kw - 1) * w.dw + 1, x[3] + w.pw);
        int64_t padded = (he - hs) * (we - ws);
        f(nc, (nc * out[2] + y) * out[3] + xx, hs, ws, padded);
      }
}

Outs maxPoolKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  const HostTensor& x = *in[0];
  HostTensor v = HostTensor::zeros(ot[0].dtype, ot[0].sizes), ix = HostTensor::zeros(DType::I64, ot[1].sizes);
  Window2d w = window2d(a);
  poolWindows(x.sizes, v.sizes, w, [&](int64_t nc, int64_t oi, int64_t hs, int64_t ws, int64_t) {
    double best = -INFINITY;
    int64_t bi = -1;
    for (int64_t i = 0; i < w.kh; ++i)
      for (int64_t j = 0; j < w.kw; ++j) {
        int64_t iy = hs + i * w.dh, jx = ws + j * w.dw;
        if (iy < 0 || iy >= x.sizes[2] || jx < 0 || jx >= x.sizes[3]) continue;
        double val = x.data[static_cast<size_t>((nc * x.sizes[2] + iy) * x.sizes[3] + jx)];
        if (bi < 0 || val > best || std::isnan(val)) {
          best = val;
          bi = iy * x.sizes[3] + jx;
          if (std::isnan(val)) goto done;
        }
      }
  done:
    v.data[static_cast<size_t>(oi)] = best;
    ix.data[static_cast<size_t>(oi)] = static_cast<double>(bi);
  });
  return {v, ix};
}
Outs maxPoolBackKernel(const Ins& in, const Attrs&, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  int64_t plane = o.sizes[2] * o.sizes[3], oplane = in[0]->sizes[2] * in[0]->sizes[3];
  std::vector<double> acc(o.data.size(), 0.0);
  for (size_t e = 0; e < in[0]->data.size(); ++e) {
    int64_t nc = static_cast<int64_t>(e) / oplane;
    acc[static_cast<size_t>(nc * plane + static_cast<int64_t>(in[1]->data[e]))] += in[0]->data[e];
  }
  for (size_t i = 0; i < acc.size(); ++i) o.data[i] = roundTo(o.dtype, acc[i]);
  return {o};
}

/// ATen's avg_pool2d divisor for one window.
double avgDivisor(const Attrs& a, int64_t hs, int64_t ws, int64_t he, int64_t we, int64_t padded) {
  if (hasAttr(a, "divisor") && attrInt(a, "divisor") != 0) return static_cast<double>(attrInt(a, "divisor"));
  if (attrBool(a, "count_include_pad", true)) return static_cast<double>(padded);
  return static_cast<double>((he - hs) * (we - ws));
}

template <typename F>
void avgWindows(const Ints& x, const Ints& out, const Attrs& a, F f) {
  Window2d w = window2d(a);
  poolWindows(x, out, w, [&](int64_t nc, int64_t oi, int64_t hs0, int64_t ws0, int64_t padded) {
    int64_t he = std::min(hs0 + w.kh, x[2]), we = std::min(ws0 + w.kw, x[3]);
    int64_t hs = std::max<int64_t>(hs0, 0), ws = std::max<int64_t>(ws0, 0);
    f(nc, oi, hs, ws, he, we, avgDivisor(a, hs, ws, he, we, padded));
  });
}

Outs avgPoolKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  const HostTensor& x = *in[0];
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  avgWindows(x.sizes, o.sizes, a, [&](int64_t nc, int64_t oi, int64_t hs, int64_t ws, int64_t he, int64_t we, double div) {
    double s = 0;
    for (int64_t i = hs; i < he; ++i)
      for (int64_t j = ws; j < we; ++j) s += x.data[static_cast<size_t>((nc * x.sizes[2] + i) * x.sizes[3] + j)];
    o.data[static_cast<size_t>(oi)] = roundTo(o.dtype, s / div);
  });
  return {o};
}
Outs avgPoolBackKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  std::vector<double> acc(o.data.size(), 0.0);
  avgWindows(o.sizes, in[0]->sizes, a, [&](int64_t nc, int64_t oi, int64_t hs, int64_t ws, int64_t he, int64_t we, double div) {
    for (int64_t i = hs; i < he; ++i)
      for (int64_t j = ws; j < we; ++j)
        acc[static_cast<size_t>((nc * o.sizes[2] + i) * o.sizes[3] + j)] += in[0]->data[static_cast<size_t>(oi)] / div;
  });
  for (size_t i = 0; i < acc.size(); ++i) o.data[i] = roundTo(o.dtype, acc[i]);
  return {o};
}

/// Visits (plane, output index, window) of adaptive average pooling.
template <typename F>
void adaptiveWindows(const Ints& x, const Ints& out, F f) {
  for (int64_t nc = 0; nc < x[0] * x[1]; ++nc)
    for (int64_t y = 0; y < out[2]; ++y)
      for (int64_t xx = 0; xx < out[3]; ++xx)
        f(nc, (nc * out[2] + y) * out[3] + xx, adaptiveStart(y, out[2], x[2]), adaptiveEnd(y, out[2], x[2]),
          adaptiveStart(xx, out[3], x[3]), adaptiveEnd(xx, out[3], x[3]));
}

Outs adaptivePoolKernel(const Ins& in, const Attrs&, const std::vector<TensorType>& ot) {
  const HostTensor& x = *in[0];
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  adaptiveWindows(x.sizes, o.sizes, [&](int64_t nc, int64_t oi, int64_t hs, int64_t he, int64_t ws, int64_t we) {
    double s = 0;
    for (int64_t i = hs; i < he; ++i)
      for (int64_t j = ws; j < we; ++j) s += x.data[static_cast<size_t>((nc * x.sizes[2] + i) * x.sizes[3] + j)];
    o.data[static_cast<size_t>(oi)] = roundTo(o.dtype, s / static_cast<double>((he - hs) * (we - ws)));
  });
  return {o};
}
Outs adaptivePoolBackKernel(const Ins& in, const Attrs&, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  std::vector<double> acc(o.data.size(), 0.0);
  adaptiveWindows(o.sizes, in[0]->sizes, [&](int64_t nc, int64_t oi, int64_t hs, int64_t he, int64_t ws, int64_t we) {
    double g = in[0]->data[static_cast<size_t>(oi)] / static_cast<double>((he - hs) * (we - ws));
    for (int64_t i = hs; i < he; ++i)
      for (int64_t j = ws; j < we; ++j) acc[static_cast<size_t>((nc * o.sizes[2] + i) * o.sizes[3] + j)] += g;
  });
  for (size_t i = 0; i < acc.size(); ++i) o.data[i] = roundTo(o.dtype, acc[i]);
  return {o};
}

int64_t checkedIndex(double v, int64_t size) {
  int64_t i = static_cast<int64_t>(v);
  if (i < 0) i += size;
  if (i < 0 || i >= size) throw UserError(SourceLoc{}, cat("index ", static_cast<int64_t>(v), " is out of bounds for size ", size));
  return i;
}

Outs indexSelectKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  int64_t d = wrapDim(attrInt(a, "dim"), std::max<int64_t>(static_cast<int64_t>(o.sizes.size()), 1));
  forEach(o.sizes, [&](const Ints& c, int64_t e) {
    Ints k = c;
    k[static_cast<size_t>(d)] = checkedIndex(in[1]->data[static_cast<size_t>(c[static_cast<size_t>(d)])], in[0]->sizes[static_cast<size_t>(d)]);
    o.data[static_cast<size_t>(e)] = in[0]->data[static_cast<size_t>(flatIndex(k, in[0]->sizes))];
  });
  return {o};
}
Outs indexAddKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = *in[0];
  o.dtype = ot[0].dtype;
  int64_t d = wrapDim(attrInt(a, "dim"), std::max<int64_t>(static_cast<int64_t>(o.sizes.size()), 1));
  forEach(in[2]->sizes, [&](const Ints& c, int64_t e) {
    Ints k = c;
    k[static_cast<size_t>(d)] = checkedIndex(in[1]->data[static_cast<size_t>(c[static_cast<size_t>(d)])], o.sizes[static_cast<size_t>(d)]);
    o.data[static_cast<size_t>(flatIndex(k, o.sizes))] += in[2]->data[static_cast<size_t>(e)];
  });
  for (double& v : o.data) v = roundTo(o.dtype, v);
  return {o};
}
Outs gatherKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  int64_t d = wrapDim(attrInt(a, "dim"), std::max<int64_t>(static_cast<int64_t>(o.sizes.size()), 1));
  forEach(o.sizes, [&](const Ints& c, int64_t e) {
    Ints k = c;
    k[static_cast<size_t>(d)] = checkedIndex(in[1]->data[static_cast<size_t>(e)], in[0]->sizes[static_cast<size_t>(d)]);
    o.data[static_cast<size_t>(e)] = in[0]->data[static_cast<size_t>(flatIndex(k, in[0]->sizes))];
  });
  return {o};
}
/// scatter_add (add) and scatter: src's element at each index position goes
/// to self at that index along dim; a later duplicate wins for scatter.
Outs scatterInto(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot, bool add) {
  HostTensor o = *in[0];
  o.dtype = ot[0].dtype;
  int64_t d = wrapDim(attrInt(a, "dim"), std::max<int64_t>(static_cast<int64_t>(o.sizes.size()), 1));
  forEach(in[1]->sizes, [&](const Ints& c, int64_t e) {
    Ints k = c;
    k[static_cast<size_t>(d)] = checkedIndex(in[1]->data[static_cast<size_t>(e)], o.sizes[static_cast<size_t>(d)]);
    double& dst = o.data[static_cast<size_t>(flatIndex(k, o.sizes))];
    double src = in[2]->data[static_cast<size_t>(flatIndex(c, in[2]->sizes))];
    dst = add ? dst + src : src;
  });
  for (double& v : o.data) v = roundTo(o.dtype, v);
  return {o};
}
Outs scatterAddKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) { return scatterInto(in, a, ot, true); }
Outs scatterKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) { return scatterInto(in, a, ot, false); }
/// Calls f(base flat index of a line along dim d, stride of d, length) for every line.
template <typename F>
void forEachLine(const Ints& sizes, int64_t d, F f) {
  Ints outer = sizes;
  int64_t n = sizes.empty() ? 1 : sizes[static_cast<size_t>(d)];
  if (!outer.empty()) outer[static_cast<size_t>(d)] = 1;
  int64_t stride = 1;
  for (size_t q = sizes.size(); q-- > static_cast<size_t>(d) + 1;) stride *= sizes[q];
  forEach(outer, [&](const Ints& c, int64_t) { f(sizes.empty() ? 0 : flatIndex(c, sizes), stride, n); });
}
Outs cumsumKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  int64_t d = wrapDim(attrInt(a, "dim"), std::max<int64_t>(static_cast<int64_t>(o.sizes.size()), 1));
  bool rev = attrBool(a, "reverse", false);
  forEachLine(o.sizes, d, [&](int64_t base, int64_t stride, int64_t n) {
    double acc = 0;
    for (int64_t k = 0; k < n; ++k) {
      size_t e = static_cast<size_t>(base + (rev ? n - 1 - k : k) * stride);
      acc = roundTo(o.dtype, acc + in[0]->data[e]);
      o.data[e] = acc;
    }
  });
  return {o};
}
Outs sortKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor v = HostTensor::zeros(ot[0].dtype, ot[0].sizes), ix = HostTensor::zeros(DType::I64, ot[0].sizes);
  int64_t d = wrapDim(attrInt(a, "dim"), std::max<int64_t>(static_cast<int64_t>(v.sizes.size()), 1));
  bool desc = attrBool(a, "descending", false);
  forEachLine(v.sizes, d, [&](int64_t base, int64_t stride, int64_t n) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) order[static_cast<size_t>(k)] = k;
    auto val = [&](int64_t k) { return in[0]->data[static_cast<size_t>(base + k * stride)]; };
    // NaN is the largest value.
    auto less = [](double x, double y) { return (x < y) || (std::isnan(y) && !std::isnan(x)); };
    std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) { return desc ? less(val(q), val(p)) : less(val(p), val(q)); });
    for (int64_t k = 0; k < n; ++k) {
      size_t e = static_cast<size_t>(base + k * stride);
      v.data[e] = val(order[static_cast<size_t>(k)]);
      ix.data[e] = static_cast<double>(order[static_cast<size_t>(k)]);
    }
  });
  return {v, ix};
}
Outs catKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  int64_t d = wrapDim(attrInt(a, "dim"), static_cast<int64_t>(o.sizes.size()));
  int64_t at = 0;
  for (const HostTensor* t : in) {
    forEach(t->sizes, [&](const Ints& c, int64_t e) {
      Ints k = c;
      k[static_cast<size_t>(d)] += at;
      o.data[static_cast<size_t>(flatIndex(k, o.sizes))] = roundTo(o.dtype, t->data[static_cast<size_t>(e)]);
    });
    at += t->sizes[static_cast<size_t>(d)];
  }
  return {o};
}
Outs padKernel(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  Ints p = attrInts(a, "pad");
  double value = attrFloat(a, "value");
  size_t r = o.sizes.size();
  forEach(o.sizes, [&](const Ints& c, int64_t e) {
    Ints k = c;
    bool inside = true;
    for (size_t i = 0; i < p.size() / 2; ++i) {
      size_t dd = r - 1 - i;
      k[dd] = c[dd] - p[2 * i];
      inside = inside && k[dd] >= 0 && k[dd] < in[0]->sizes[dd];
    }
    o.data[static_cast<size_t>(e)] = inside ? in[0]->data[static_cast<size_t>(flatIndex(k, in[0]->sizes))] : roundTo(o.dtype, value);
  });
  return {o};
}

HostTensor expandTo(const HostTensor& x, const Ints& sizes) {
  HostTensor o = HostTensor::zeros(x.dtype, sizes);
  auto idx = broadcastIndex(x.sizes, sizes);
  for (size_t e = 0; e < o.data.size(); ++e) o.data[e] = x.data[static_cast<size_t>(idx[e])];
  return o;
}

constexpr Kernel kernelFor(OpKind k) {
  switch (k) {  // elementwise ops and reductions: their rows in pointwise.cpp, reductions.cpp
    case OpKind::Constant:
      return [](const Ins&, const Attrs& a, const std::vector<TensorType>& ot) -> Outs {
        HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
        std::fill(o.data.begin(), o.data.end(), roundTo(o.dtype, attrFloat(a, "value")));
        return {std::move(o)};
      };
    case OpKind::Transpose:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>&) { return viewKernel(OpKind::Transpose, in, a); };
    case OpKind::Unsqueeze:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>&) { return viewKernel(OpKind::Unsqueeze, in, a); };
    case OpKind::Squeeze:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>&) { return viewKernel(OpKind::Squeeze, in, a); };
    case OpKind::Slice:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>&) { return viewKernel(OpKind::Slice, in, a); };
    case OpKind::Select:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>&) { return viewKernel(OpKind::Select, in, a); };
    case OpKind::SliceScatter:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>&) { return scatterKernel(OpKind::Slice, in, a); };
    case OpKind::Diagonal:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>&) { return viewKernel(OpKind::Diagonal, in, a); };
    case OpKind::DiagonalScatter:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>&) { return scatterKernel(OpKind::Diagonal, in, a); };
    case OpKind::SelectScatter:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>&) { return scatterKernel(OpKind::Select, in, a); };
    case OpKind::ArgMax: return argmaxKernel;
    case OpKind::Bmm: return bmmKernel;
    case OpKind::Conv2d: return conv2dKernel;
    case OpKind::Conv2dBackwardInput: return conv2dBackInputKernel;
    case OpKind::Conv2dBackwardWeight: return conv2dBackWeightKernel;
    case OpKind::MaxPool2d: return maxPoolKernel;
    case OpKind::MaxPool2dBackward: return maxPoolBackKernel;
    case OpKind::AvgPool2d: return avgPoolKernel;
    case OpKind::AvgPool2dBackward: return avgPoolBackKernel;
    case OpKind::AdaptiveAvgPool2d: return adaptivePoolKernel;
    case OpKind::AdaptiveAvgPool2dBackward: return adaptivePoolBackKernel;
    case OpKind::IndexSelect: return indexSelectKernel;
    case OpKind::IndexAdd: return indexAddKernel;
    case OpKind::Gather: return gatherKernel;
    case OpKind::ScatterAdd: return scatterAddKernel;
    case OpKind::Cumsum: return cumsumKernel;
    case OpKind::Scatter: return scatterKernel;
    case OpKind::Sort: return sortKernel;
    case OpKind::Cat: return catKernel;
    case OpKind::Pad: return padKernel;
    case OpKind::Arange:
      return [](const Ins&, const Attrs& a, const std::vector<TensorType>& ot) -> Outs {
        HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
        for (size_t i = 0; i < o.data.size(); ++i)
          o.data[i] = roundTo(o.dtype, attrFloat(a, "start") + static_cast<double>(i) * attrFloat(a, "step"));
        return {o};
      };
    case OpKind::Permute:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>&) { return viewKernel(OpKind::Permute, in, a); };
    case OpKind::RandMask:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) -> Outs {
        HostTensor o = HostTensor::zeros(DType::Bool, ot[0].sizes);
        uint64_t seed = static_cast<uint64_t>(static_cast<int64_t>(in[0]->data[0]));
        uint64_t offset = static_cast<uint64_t>(attrInt(a, "offset"));
        double p = attrFloat(a, "prob");
        for (size_t i = 0; i < o.data.size(); ++i) o.data[i] = philoxUniform(seed, offset, i) < p ? 1.0 : 0.0;
        return {o};
      };
    case OpKind::RandUniform:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) -> Outs {
        HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
        uint64_t seed = static_cast<uint64_t>(static_cast<int64_t>(in[0]->data[0]));
        uint64_t offset = static_cast<uint64_t>(attrInt(a, "offset"));
        for (size_t i = 0; i < o.data.size(); ++i) o.data[i] = roundTo(o.dtype, philoxUniform(seed, offset, i));
        return {o};
      };
    case OpKind::KeepGrad:
      return [](const Ins& in, const Attrs&, const std::vector<TensorType>&) -> Outs { return {*in[1]}; };
    case OpKind::CustomGrad:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>&) -> Outs {
        Outs o;
        for (int64_t i = 0; i < attrInt(a, "num_outputs"); ++i) o.push_back(*in[static_cast<size_t>(attrInt(a, "num_args") + i)]);
        return o;
      };
    case OpKind::Mm: return mm;
    case OpKind::T:
      return [](const Ins& in, const Attrs&, const std::vector<TensorType>&) -> Outs { return {transpose2d(*in[0])}; };
    case OpKind::View:
      return [](const Ins& in, const Attrs&, const std::vector<TensorType>& ot) -> Outs {
        HostTensor o = *in[0];
        o.sizes = ot[0].sizes;
        return {std::move(o)};
      };
    case OpKind::Expand:
      return [](const Ins& in, const Attrs&, const std::vector<TensorType>& ot) -> Outs {
        return {expandTo(*in[0], ot[0].sizes)};
      };
    case OpKind::Detach:
      return [](const Ins& in, const Attrs&, const std::vector<TensorType>&) -> Outs { return {*in[0]}; };
    default: return nullptr;  // mutation and epilogue ops are not kernels
  }
}

}  // namespace

bool hasReferenceKernel(OpKind k) { return pointwiseRule(k) || reductionRule(k) || kernelFor(k) != nullptr; }

std::vector<HostTensor> referenceEval(OpKind op, const std::vector<const HostTensor*>& ins, const Attrs& attrs,
                                      const std::vector<TensorType>& out_types) {
  if (const PointwiseRule* p = pointwiseRule(op)) return pointwise(ins, out_types, p->reference);
  if (const ReductionRule* r = reductionRule(op)) return reduce(ins, attrs, out_types, *r);
  Kernel k = kernelFor(op);
  AOTC_CHECK(k, "no reference kernel for ", opName(op));
  return k(ins, attrs, out_types);
}

HostTensor applyView(const HostTensor& base, const ViewStep& step) {
  TensorType bt = TensorType::contiguous(base.dtype, base.sizes);
  auto ot = inferTypes(step.op, {bt}, step.attrs);
  return referenceEval(step.op, {&base}, step.attrs, ot)[0];
}

}  // namespace aotc
