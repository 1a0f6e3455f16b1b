//===- windows.cpp - Pooling windows and their backwards ------------------===//
//
// Note [Op rows] (rules.h) says what a row holds and who reads it.  Every
// window op is an element kernel (one thread per output element) whose
// windows follow ATen's rules: max (NaN wins, first maximum kept), average
// (count_include_pad, divisor_override) and adaptive ([floor(i*in/out),
// ceil((i+1)*in/out))).  Backwards are their own ops, differentiable again
// (their adjoints are the pools).
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <sstream>

#include "aotc/ops/kernel_text.h"
#include "rule_util.h"

namespace aotc::detail {

namespace {

using K = OpKind;
using R = std::vector<ValueId>;
using TT = std::vector<TensorType>;
using ktext::at;
using ktext::computeType;

// ---- shape rules

Ints poolOut(const Ints& x, const Attrs& a) {
  if (x.size() != 4) shapeError("pooling expects a 4-D input, got " + shapeStr(x));
  Window2d w = window2d(a);
  int64_t ho = windowOut(x[2], w.kh, w.sh, w.ph, w.dh, w.ceil), wo = windowOut(x[3], w.kw, w.sw, w.pw, w.dw, w.ceil);
  if (w.ph * 2 > w.kh || w.pw * 2 > w.kw) shapeError("pad should be at most half of the kernel size");
  if (ho <= 0 || wo <= 0) shapeError("pooling output is empty for input " + shapeStr(x));
  return {x[0], x[1], ho, wo};
}
TT maxPoolRule(const TT& in, const Attrs& a) {
  Ints o = poolOut(in[0].sizes, a);
  return {TensorType::contiguous(in[0].dtype, o), TensorType::contiguous(windowOffsetDType(a), o)};
}
TT maxPoolBackRule(const TT& in, const Attrs& a) {
  if (in[1].dtype != windowOffsetDType(a) || in[0].sizes != in[1].sizes) shapeError("max_pool2d_backward: indices do not match the grad");
  return one(TensorType::contiguous(in[0].dtype, attrInts(a, "input_size")));
}
TT avgPoolRule(const TT& in, const Attrs& a) { return one(TensorType::contiguous(in[0].dtype, poolOut(in[0].sizes, a))); }
TT avgPoolBackRule(const TT& in, const Attrs& a) {
  Ints x = attrInts(a, "input_size");
  if (poolOut(x, a) != in[0].sizes) shapeError("avg_pool2d_backward: grad does not match the pooling");
  return one(TensorType::contiguous(in[0].dtype, x));
}
TT adaptivePoolRule(const TT& in, const Attrs& a) {
  Ints o = attrInts(a, "output_size");
  if (in[0].rank() != 4 || o.size() != 2 || o[0] <= 0 || o[1] <= 0)
    shapeError("adaptive_avg_pool2d expects a 4-D input and a 2-value positive output size");
  return one(TensorType::contiguous(in[0].dtype, {in[0].sizes[0], in[0].sizes[1], o[0], o[1]}));
}
TT adaptivePoolBackRule(const TT& in, const Attrs& a) {
  Ints x = attrInts(a, "input_size");
  if (x.size() != 4 || in[0].rank() != 4 || in[0].sizes[0] != x[0] || in[0].sizes[1] != x[1])
    shapeError("adaptive_avg_pool2d_backward: grad does not match the input size");
  return one(TensorType::contiguous(in[0].dtype, x));
}

// ---- reference kernels

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

Outs maxPoolRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  const HostTensor& x = *in[0];
  HostTensor v = HostTensor::zeros(ot[0].dtype, ot[0].sizes), ix = HostTensor::zeros(ot[1].dtype, ot[1].sizes);
  Window2d w = window2d(a);
  const bool offsets = attrBool(a, "window_offsets", false);  // Note [Window offsets]
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
          bi = offsets ? i * w.kw + j : iy * x.sizes[3] + jx;
          if (std::isnan(val)) goto done;
        }
      }
  done:
    v.data[static_cast<size_t>(oi)] = best;
    ix.data[static_cast<size_t>(oi)] = static_cast<double>(bi);
  });
  return {v, ix};
}
Outs maxPoolBackRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  int64_t plane = o.sizes[2] * o.sizes[3], oplane = in[0]->sizes[2] * in[0]->sizes[3], wo = in[0]->sizes[3];
  const bool offsets = attrBool(a, "window_offsets", false);  // Note [Window offsets]
  Window2d w = window2d(a);
  std::vector<double> acc(o.data.size(), 0.0);
  for (size_t e = 0; e < in[0]->data.size(); ++e) {
    int64_t nc = static_cast<int64_t>(e) / oplane, ix = static_cast<int64_t>(in[1]->data[e]);
    if (offsets) {
      int64_t oi = static_cast<int64_t>(e) % oplane;
      int64_t y = (oi / wo) * w.sh - w.ph + (ix / w.kw) * w.dh, x = (oi % wo) * w.sw - w.pw + (ix % w.kw) * w.dw;
      ix = y * o.sizes[3] + x;
    }
    acc[static_cast<size_t>(nc * plane + ix)] += in[0]->data[e];
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

Outs avgPoolRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
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
Outs avgPoolBackRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
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

Outs adaptivePoolRef(const Ins& in, const Attrs&, const std::vector<TensorType>& ot) {
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
Outs adaptivePoolBackRef(const Ins& in, const Attrs&, const std::vector<TensorType>& ot) {
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

// ---- gradient rules

R maxPoolGrad(GradCtx& g) {
  Attrs a = g.attrs();
  a["input_size"] = g.sizes(g.I(0));
  return {g.op(K::MaxPool2dBackward, {g.contiguous(g.GO(0)), g.O(1)}, a)};
}
R avgPoolGrad(GradCtx& g) {
  Attrs a = g.attrs();
  a["input_size"] = g.sizes(g.I(0));
  return {g.op(K::AvgPool2dBackward, {g.contiguous(g.GO(0))}, a)};
}
R adaptivePoolGrad(GradCtx& g) {
  return {g.op(K::AdaptiveAvgPool2dBackward, {g.contiguous(g.GO(0))}, Attrs{{"input_size", g.sizes(g.I(0))}})};
}
// Pool backwards are linear in the incoming gradient; their adjoints are
// the pools (max: GO gathered at the saved indices, ATen's
// max_pool_double_backward).  No gradient flows to the indices.
R avgPoolBackGrad(GradCtx& g) {
  Attrs a = g.attrs();
  a.erase("input_size");
  return {g.op(K::AvgPool2d, {g.contiguous(g.GO(0))}, a)};
}
R adaptivePoolBackGrad(GradCtx& g) {
  Ints o = g.sizes(g.I(0));
  return {g.op(K::AdaptiveAvgPool2d, {g.contiguous(g.GO(0))}, Attrs{{"output_size", Ints{o[2], o[3]}}})};
}
R maxPoolBackGrad(GradCtx& g) {
  Ints o = g.sizes(g.I(0)), in = g.sizes(g.O(0));
  ValueId flatGo = g.reshape(g.contiguous(g.GO(0)), {in[0], in[1], in[2] * in[3]});
  ValueId idx = g.I(1);
  if (attrBool(g.attrs(), "window_offsets", false)) {
    // Note [Window offsets]: window (oy, ox)'s offset p * kw + q is input
    // element (oy * sh - ph + p * dh, ox * sw - pw + q * dw).
    Window2d w = window2d(g.attrs());
    auto k = [&](int64_t v) { return g.scalar(static_cast<double>(v), DType::I64); };
    auto iota = [&](int64_t n, Ints shape) {
      return g.reshape(g.op(K::Arange, {}, Attrs{{"start", 0.0}, {"end", static_cast<double>(n)}, {"step", 1.0}, {"dtype", std::string("i64")}}),
                       std::move(shape));
    };
    // One node per statement: the order is the program's (Note [Sequenced operands]).
    // start + iota * stride - pad + offset * dilation along one dim.
    auto along = [&](int64_t n, Ints shape, int64_t stride, int64_t pad, ValueId offset, int64_t dilation) {
      ValueId at = iota(n, std::move(shape));
      ValueId s = k(stride);
      at = g.mul(at, s);
      ValueId pd = k(-pad);
      at = g.add(at, pd);
      ValueId dl = k(dilation);
      ValueId step = g.mul(offset, dl);
      return g.add(at, step);
    };
    ValueId off = g.cast(idx, DType::I64);
    ValueId kw = k(w.kw);
    ValueId p = g.op(K::DivFloor, {off, kw});
    ValueId q = g.op(K::Remainder, {off, kw});
    ValueId y = along(o[2], {1, 1, o[2], 1}, w.sh, w.ph, p, w.dh);
    ValueId x = along(o[3], {1, 1, 1, o[3]}, w.sw, w.pw, q, w.dw);
    ValueId width = k(in[3]);
    ValueId row = g.mul(y, width);
    idx = g.add(row, x);
  }
  ValueId flatIdx = g.reshape(g.contiguous(idx), {o[0], o[1], o[2] * o[3]});
  ValueId picked = g.op(K::Gather, {flatGo, flatIdx}, Attrs{{"dim", int64_t{2}}});
  return {g.reshape(picked, o), kNoValue};
}

// ---- CUDA element kernel bodies

/// adaptive_avg_pool2d and its backward: ATen's windows [floor(i*in/out), ceil((i+1)*in/out)).
std::string adaptiveBody(const Graph& g, const Node& n) {
  std::ostringstream b;
  bool fw = n.op == K::AdaptiveAvgPool2d;
  const TensorType& x = fw ? g.type(n.inputs[0]) : g.type(n.outputs[0]);
  const TensorType& y = fw ? g.type(n.outputs[0]) : g.type(n.inputs[0]);
  const char* ct = computeType(g.type(n.outputs[0]).dtype);
  auto win = [&](const std::string& oy, const std::string& ox) {
    std::ostringstream d;
    d << "    aotc_i64 hs = (" << oy << " * " << x.sizes[2] << ") / " << y.sizes[2] << ", he = ((" << oy << " + 1) * " << x.sizes[2]
      << " + " << y.sizes[2] - 1 << ") / " << y.sizes[2] << ";\n";
    d << "    aotc_i64 ws = (" << ox << " * " << x.sizes[3] << ") / " << y.sizes[3] << ", we = ((" << ox << " + 1) * " << x.sizes[3]
      << " + " << y.sizes[3] - 1 << ") / " << y.sizes[3] << ";\n";
    return d.str();
  };
  if (fw) {
    b << "  {\n" << win("c[2]", "c[3]");
    b << "    " << ct << " acc = 0;\n    for (aotc_i64 p = hs; p < he; ++p) for (aotc_i64 q = ws; q < we; ++q) acc += (" << ct << ")in0["
      << at(x, {"c[0]", "c[1]", "p", "q"}) << "];\n";
    b << "    out0[i] = acc / (" << ct << ")((he - hs) * (we - ws));\n  }\n";
  } else {
    // Per input element: every output window that contains it.
    b << "  " << ct << " acc = 0;\n";
    b << "  for (aotc_i64 oy = 0; oy < " << y.sizes[2] << "; ++oy) for (aotc_i64 ox = 0; ox < " << y.sizes[3] << "; ++ox) {\n";
    b << win("oy", "ox");
    b << "    if (c[2] >= hs && c[2] < he && c[3] >= ws && c[3] < we) acc += (" << ct << ")in0[" << at(y, {"c[0]", "c[1]", "oy", "ox"})
      << "] / (" << ct << ")((he - hs) * (we - ws));\n  }\n";
    b << "  out0[i] = acc;\n";
  }
  return b.str();
}

std::string maxPoolBody(const Graph& g, const Node& n) {
  std::ostringstream b;
  Window2d w = window2d(n.attrs);
  const TensorType& x = g.type(n.inputs[0]);
  const char* ct = computeType(x.dtype);
  b << "  aotc_i64 hs = c[2] * " << w.sh << " - " << w.ph << ", ws = c[3] * " << w.sw << " - " << w.pw << ";\n";
  b << "  " << ct << " best = -AOTC_INF; aotc_i64 bi = -1;\n";
  b << "  for (int p = 0; p < " << w.kh << "; ++p) for (int q = 0; q < " << w.kw << "; ++q) {\n";
  b << "    aotc_i64 y = hs + p * " << w.dh << ", x = ws + q * " << w.dw << ";\n";
  b << "    if (y < 0 || y >= " << x.sizes[2] << " || x < 0 || x >= " << x.sizes[3] << ") continue;\n";
  b << "    " << ct << " v = (" << ct << ")in0[" << at(x, {"c[0]", "c[1]", "y", "x"}) << "];\n";
  // Note [Window offsets]: the window's own offset of its maximum, or the plane's flat index.
  std::string win = attrBool(n.attrs, "window_offsets", false) ? cat("p * ", w.kw, " + q") : cat("y * ", x.sizes[3], " + x");
  b << "    if (bi < 0 || v > best || v != v) { best = v; bi = " << win << "; if (v != v) goto done; }\n  }\n";
  b << "done:\n  out0[i] = best;\n  out1[i] = bi;\n";
  return b.str();
}

/// Per input element: the windows that can contain it, where it won.
std::string maxPoolBackBody(const Graph& g, const Node& n) {
  std::ostringstream b;
  Window2d w = window2d(n.attrs);
  const TensorType& go = g.type(n.inputs[0]);
  const TensorType& ix = g.type(n.inputs[1]);
  const TensorType& ot = g.type(n.outputs[0]);
  const char* ct = computeType(ot.dtype);
  b << "  " << ct << " acc = 0; aotc_i64 me = c[2] * " << ot.sizes[3] << " + c[3];\n";
  b << "  aotc_i64 y0 = c[2] + " << w.ph << " - " << (w.kh - 1) * w.dh << ", x0 = c[3] + " << w.pw << " - " << (w.kw - 1) * w.dw << ";\n";
  b << "  aotc_i64 oy0 = y0 <= 0 ? 0 : (y0 + " << w.sh - 1 << ") / " << w.sh << ", ox0 = x0 <= 0 ? 0 : (x0 + " << w.sw - 1 << ") / " << w.sw << ";\n";
  b << "  for (aotc_i64 oy = oy0; oy <= (c[2] + " << w.ph << ") / " << w.sh << " && oy < " << go.sizes[2] << "; ++oy)\n";
  b << "    for (aotc_i64 ox = ox0; ox <= (c[3] + " << w.pw << ") / " << w.sw << " && ox < " << go.sizes[3] << "; ++ox)\n";
  if (attrBool(n.attrs, "window_offsets", false)) {
    // Note [Window offsets]: this element's offset in window (oy, ox), if the dilation reaches it.
    b << "      { aotc_i64 dy = c[2] - (oy * " << w.sh << " - " << w.ph << "), dx = c[3] - (ox * " << w.sw << " - " << w.pw << ");\n";
    b << "        if (dy % " << w.dh << " == 0 && dx % " << w.dw << " == 0 && (aotc_i64)in1[" << at(ix, {"c[0]", "c[1]", "oy", "ox"}) << "] == dy / "
      << w.dh << " * " << w.kw << " + dx / " << w.dw << ") acc += (" << ct << ")in0[" << at(go, {"c[0]", "c[1]", "oy", "ox"}) << "]; }\n";
  } else {
    b << "      if (in1[" << at(ix, {"c[0]", "c[1]", "oy", "ox"}) << "] == me) acc += (" << ct << ")in0[" << at(go, {"c[0]", "c[1]", "oy", "ox"}) << "];\n";
  }
  b << "  out0[i] = acc;\n";
  return b.str();
}

/// avg_pool2d and its backward: ATen's divisor rules.
std::string avgPoolBody(const Graph& g, const Node& n) {
  std::ostringstream b;
  Window2d w = window2d(n.attrs);
  bool incl = attrBool(n.attrs, "count_include_pad", true);
  int64_t divisor = hasAttr(n.attrs, "divisor") ? attrInt(n.attrs, "divisor") : 0;
  const TensorType& ot = g.type(n.outputs[0]);
  const TensorType& xin = n.op == K::AvgPool2d ? g.type(n.inputs[0]) : ot;
  const char* ct = computeType(ot.dtype);
  auto windowDiv = [&](const std::string& oy, const std::string& ox) {
    std::ostringstream d;
    d << "    aotc_i64 hs = " << oy << " * " << w.sh << " - " << w.ph << ", ws = " << ox << " * " << w.sw << " - " << w.pw << ";\n";
    d << "    aotc_i64 he = min(hs + " << w.kh << ", (aotc_i64)" << xin.sizes[2] + w.ph << "), we = min(ws + " << w.kw
      << ", (aotc_i64)" << xin.sizes[3] + w.pw << ");\n";
    d << "    aotc_i64 padded = (he - hs) * (we - ws);\n";
    d << "    hs = max(hs, (aotc_i64)0); ws = max(ws, (aotc_i64)0); he = min(he, (aotc_i64)" << xin.sizes[2]
      << "); we = min(we, (aotc_i64)" << xin.sizes[3] << ");\n";
    d << "    " << ct << " div = " << (divisor ? std::to_string(divisor) : incl ? "padded" : "(he - hs) * (we - ws)") << ";\n";
    return d.str();
  };
  if (n.op == K::AvgPool2d) {
    b << "  {\n" << windowDiv("c[2]", "c[3]");
    b << "    " << ct << " acc = 0;\n    for (aotc_i64 y = hs; y < he; ++y) for (aotc_i64 x = ws; x < we; ++x) acc += (" << ct << ")in0["
      << at(xin, {"c[0]", "c[1]", "y", "x"}) << "];\n";
    b << "    out0[i] = acc / div;\n  }\n";
    return b.str();
  }
  const TensorType& go = g.type(n.inputs[0]);
  b << "  " << ct << " acc = 0;\n";
  b << "  aotc_i64 y0 = c[2] + " << w.ph << " - " << w.kh - 1 << ", x0 = c[3] + " << w.pw << " - " << w.kw - 1 << ";\n";
  b << "  aotc_i64 oy0 = y0 <= 0 ? 0 : (y0 + " << w.sh - 1 << ") / " << w.sh << ", ox0 = x0 <= 0 ? 0 : (x0 + " << w.sw - 1 << ") / " << w.sw << ";\n";
  b << "  for (aotc_i64 oy = oy0; oy <= (c[2] + " << w.ph << ") / " << w.sh << " && oy < " << go.sizes[2] << "; ++oy)\n";
  b << "  for (aotc_i64 ox = ox0; ox <= (c[3] + " << w.pw << ") / " << w.sw << " && ox < " << go.sizes[3] << "; ++ox) {\n";
  b << windowDiv("oy", "ox");
  b << "    if (c[2] >= hs && c[2] < he && c[3] >= ws && c[3] < we) acc += (" << ct << ")in0[" << at(go, {"c[0]", "c[1]", "oy", "ox"}) << "] / div;\n  }\n";
  b << "  out0[i] = acc;\n";
  return b.str();
}


}  // namespace

std::span<const OpRule> windowRows() {
  static const std::vector<OpRule> kRows = {
      elementRow(K::MaxPool2d, maxPoolRule, maxPoolRef, maxPoolGrad, maxPoolBody,
                 {{{sampleF({1, 2, 5, 5})}, Attrs{{"kernel", Ints{3}}, {"stride", Ints{2}}, {"padding", Ints{1}}}},
                  // Note [Window offsets], dilated.
                  {{sampleF({1, 2, 7, 7})},
                   Attrs{{"kernel", Ints{3}}, {"stride", Ints{2}}, {"padding", Ints{1}}, {"dilation", Ints{2}}, {"window_offsets", true}}}}),
      elementRow(K::MaxPool2dBackward, maxPoolBackRule, maxPoolBackRef, maxPoolBackGrad, maxPoolBackBody,
                 {{{sampleF({1, 1, 2, 2}), sampleI({1, 1, 2, 2}, {5, 3, 12, 15})},
                   Attrs{{"input_size", Ints{1, 1, 4, 4}}, {"kernel", Ints{2}}, {"stride", Ints{2}}}},
                  // Note [Window offsets]: overlapping windows (an element can win two), padding, dilation.
                  {{sampleF({1, 1, 3, 3}), SampleOperand{DType::I8, {1, 1, 3, 3}, {8, 3, 4, 1, 0, 0, 8, 5, 0}}},
                   Attrs{{"input_size", Ints{1, 1, 6, 6}}, {"kernel", Ints{3}}, {"stride", Ints{2}}, {"padding", Ints{1}},
                         {"dilation", Ints{1}}, {"window_offsets", true}}}}),
      elementRow(K::AvgPool2d, avgPoolRule, avgPoolRef, avgPoolGrad, avgPoolBody,
                 {{{sampleF({1, 2, 5, 5})}, Attrs{{"kernel", Ints{3}}, {"stride", Ints{2}}, {"padding", Ints{1}}, {"count_include_pad", false}}}}),
      elementRow(K::AvgPool2dBackward, avgPoolBackRule, avgPoolBackRef, avgPoolBackGrad, avgPoolBody,
                 {{{sampleF({1, 2, 3, 3})}, Attrs{{"input_size", Ints{1, 2, 5, 5}}, {"kernel", Ints{3}}, {"stride", Ints{2}}, {"padding", Ints{1}},
                                            {"count_include_pad", false}}}}),
      elementRow(K::AdaptiveAvgPool2d, adaptivePoolRule, adaptivePoolRef, adaptivePoolGrad, adaptiveBody,
                 {{{sampleF({1, 2, 5, 7})}, Attrs{{"output_size", Ints{3, 4}}}}}),
      elementRow(K::AdaptiveAvgPool2dBackward, adaptivePoolBackRule, adaptivePoolBackRef, adaptivePoolBackGrad, adaptiveBody,
                 {{{sampleF({1, 2, 3, 4})}, Attrs{{"input_size", Ints{1, 2, 5, 7}}}}}),
  };
  return kRows;
}

}  // namespace aotc::detail
