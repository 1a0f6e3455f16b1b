//===- gathers.cpp - Ops that read or write along a dim --------------------===//
//
// Note [Op rows] (rules.h) says what a row holds and who reads it.  Gathers
// (index_select, gather), their adjoint scatters (index_add, scatter_add,
// scatter), cumsum, sort, cat, constant pad and argmax: each a dedicated
// element kernel with one thread per output element.  Index operands are
// checked (aotc_checked_index on the device, checkedIndex in the
// reference): an out-of-range index is an error naming the node, never a
// read outside a buffer.  Gradient rules follow Note [Node order].
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
using ktext::coords;

// ---- shape rules

TT indexSelectRule(const TT& in, const Attrs& a) {
  if (in[1].rank() > 1 || (in[1].dtype != DType::I64 && in[1].dtype != DType::I32))
    shapeError("index_select: index must be a 1-D integer tensor");
  Ints s = in[0].sizes;
  int64_t d = wrapDim(attrInt(a, "dim"), std::max<int64_t>(in[0].rank(), 1));
  if (!s.empty()) s[d] = in[1].numel();
  return one(TensorType::contiguous(in[0].dtype, s));
}
TT indexAddRule(const TT& in, const Attrs& a) {
  Ints want = indexSelectRule({in[0], in[1]}, a)[0].sizes;
  if (in[2].sizes != want) shapeError("index_add: source " + shapeStr(in[2].sizes) + " does not match " + shapeStr(want));
  return one(TensorType::contiguous(in[0].dtype, in[0].sizes));
}
TT gatherRule(const TT& in, const Attrs& a) {
  if (in[1].dtype != DType::I64 || in[1].rank() != in[0].rank()) shapeError("gather: index must be int64 with the input's rank");
  wrapDim(attrInt(a, "dim"), std::max<int64_t>(in[0].rank(), 1));
  return one(TensorType::contiguous(in[0].dtype, in[1].sizes));
}
TT scatterAddRule(const TT& in, const Attrs& a) {
  if (in[1].dtype != DType::I64 || in[1].sizes != in[2].sizes || in[1].rank() != in[0].rank())
    shapeError("scatter_add: index and source must have the same shape, with the input's rank");
  wrapDim(attrInt(a, "dim"), std::max<int64_t>(in[0].rank(), 1));
  return one(TensorType::contiguous(in[0].dtype, in[0].sizes));
}
TT scatterRule(const TT& in, const Attrs& a) {
  if (in[1].dtype != DType::I64 || in[1].rank() != in[0].rank() || in[2].rank() != in[0].rank())
    shapeError("scatter: index and source must be int64 and have the input's rank");
  for (int64_t d = 0; d < in[1].rank(); ++d)
    if (in[1].sizes[static_cast<size_t>(d)] > in[2].sizes[static_cast<size_t>(d)])
      shapeError("scatter: the index is larger than the source in dim " + std::to_string(d));
  if (in[2].dtype != in[0].dtype) shapeError("scatter: source and input dtypes differ");
  wrapDim(attrInt(a, "dim"), std::max<int64_t>(in[0].rank(), 1));
  return one(TensorType::contiguous(in[0].dtype, in[0].sizes));
}
TT cumsumRule(const TT& in, const Attrs& a) {
  wrapDim(attrInt(a, "dim"), std::max<int64_t>(in[0].rank(), 1));
  return one(TensorType::contiguous(isFloating(in[0].dtype) ? in[0].dtype : DType::I64, in[0].sizes));
}
TT sortRule(const TT& in, const Attrs& a) {
  wrapDim(attrInt(a, "dim"), std::max<int64_t>(in[0].rank(), 1));
  if (in[0].dtype == DType::Bool) shapeError("sort of a bool tensor is not supported");
  return {TensorType::contiguous(in[0].dtype, in[0].sizes), TensorType::contiguous(DType::I64, in[0].sizes)};
}
TT catRule(const TT& in, const Attrs& a) {
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
    dt = promoteTypes(dt, t.dtype);
  }
  return one(TensorType::contiguous(dt, s));
}
TT padRule(const TT& in, const Attrs& a) {
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
TT argmaxRule(const TT& in, const Attrs& a) {
  if (!hasAttr(a, "dim")) return one(TensorType::contiguous(DType::I64, {}));
  Attrs r{{"dim", Ints{attrInt(a, "dim")}}, {"keepdim", attrBool(a, "keepdim", false)}};
  TT t = reduceTypes(in, r, false);
  t[0].dtype = DType::I64;
  return t;
}

// ---- reference kernels

/// The dim attribute, wrapped for a tensor of these sizes.
int64_t dimOf(const Attrs& a, const Ints& sizes) {
  return wrapDim(attrInt(a, "dim"), std::max<int64_t>(static_cast<int64_t>(sizes.size()), 1));
}

Outs indexSelectRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  int64_t d = dimOf(a, o.sizes);
  forEach(o.sizes, [&](const Ints& c, int64_t e) {
    Ints k = c;
    k[static_cast<size_t>(d)] = checkedIndex(in[1]->data[static_cast<size_t>(c[static_cast<size_t>(d)])], in[0]->sizes[static_cast<size_t>(d)]);
    o.data[static_cast<size_t>(e)] = in[0]->data[static_cast<size_t>(flatIndex(k, in[0]->sizes))];
  });
  return {o};
}
Outs indexAddRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = *in[0];
  o.dtype = ot[0].dtype;
  int64_t d = dimOf(a, o.sizes);
  forEach(in[2]->sizes, [&](const Ints& c, int64_t e) {
    Ints k = c;
    k[static_cast<size_t>(d)] = checkedIndex(in[1]->data[static_cast<size_t>(c[static_cast<size_t>(d)])], o.sizes[static_cast<size_t>(d)]);
    o.data[static_cast<size_t>(flatIndex(k, o.sizes))] += in[2]->data[static_cast<size_t>(e)];
  });
  for (double& v : o.data) v = roundTo(o.dtype, v);
  return {o};
}
Outs gatherRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  int64_t d = dimOf(a, o.sizes);
  forEach(o.sizes, [&](const Ints& c, int64_t e) {
    Ints k = c;
    k[static_cast<size_t>(d)] = checkedIndex(in[1]->data[static_cast<size_t>(e)], in[0]->sizes[static_cast<size_t>(d)]);
    o.data[static_cast<size_t>(e)] = in[0]->data[static_cast<size_t>(flatIndex(k, in[0]->sizes))];
  });
  return {o};
}
/// scatter_add (add) and scatter: src's element at each index position goes
/// to self at that index along dim; a later duplicate wins for scatter.
template <bool Add>
Outs scatterIntoRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = *in[0];
  o.dtype = ot[0].dtype;
  int64_t d = dimOf(a, o.sizes);
  forEach(in[1]->sizes, [&](const Ints& c, int64_t e) {
    Ints k = c;
    k[static_cast<size_t>(d)] = checkedIndex(in[1]->data[static_cast<size_t>(e)], o.sizes[static_cast<size_t>(d)]);
    double& dst = o.data[static_cast<size_t>(flatIndex(k, o.sizes))];
    double src = in[2]->data[static_cast<size_t>(flatIndex(c, in[2]->sizes))];
    dst = Add ? dst + src : src;
  });
  for (double& v : o.data) v = roundTo(o.dtype, v);
  return {o};
}
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
Outs cumsumRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  int64_t d = dimOf(a, o.sizes);
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
Outs sortRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  HostTensor v = HostTensor::zeros(ot[0].dtype, ot[0].sizes), ix = HostTensor::zeros(DType::I64, ot[0].sizes);
  int64_t d = dimOf(a, v.sizes);
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
Outs catRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
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
Outs padRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
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
Outs argmaxRef(const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) {
  const HostTensor& x = *in[0];
  HostTensor o = HostTensor::zeros(DType::I64, ot[0].sizes);
  if (!hasAttr(a, "dim")) {
    size_t best = 0;
    for (size_t i = 1; i < x.data.size(); ++i)
      if (x.data[i] > x.data[best] || (std::isnan(x.data[i]) && !std::isnan(x.data[best]))) best = i;
    o.data[0] = static_cast<double>(best);
    return {o};
  }
  int64_t d = dimOf(a, x.sizes);
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

// ---- gradient rules

R indexSelectGrad(GradCtx& g) {
  return {g.op(K::IndexAdd, {g.zeros(g.type(g.I(0))), g.I(1), g.contiguous(g.GO(0))}, g.attrs()), kNoValue};
}
R indexAddGrad(GradCtx& g) { return {g.GO(0), kNoValue, g.op(K::IndexSelect, {g.GO(0), g.I(1)}, g.attrs())}; }
R gatherGrad(GradCtx& g) {
  return {g.op(K::ScatterAdd, {g.zeros(g.type(g.I(0))), g.I(1), g.contiguous(g.GO(0))}, g.attrs()), kNoValue};
}
R scatterAddGrad(GradCtx& g) { return {g.GO(0), kNoValue, g.op(K::Gather, {g.GO(0), g.I(1)}, g.attrs())}; }
/// self: grad with the scattered places zeroed; src: grad gathered at index.
R scatterGrad(GradCtx& g) {
  ValueId gs = g.op(K::Scatter, {g.contiguous(g.GO(0)), g.I(1), g.zeros(g.type(g.I(2)))}, g.attrs());
  Ints s = g.sizes(g.I(2));
  ValueId gsrc = g.op(K::Gather, {g.GO(0), g.I(1)}, g.attrs());
  // src may be larger than index: its other elements get no gradient.
  if (g.sizes(gsrc) != s) {
    Ints p;
    Ints is = g.sizes(g.I(1));
    for (size_t d = 0; d < s.size(); ++d) p.insert(p.begin(), {0, s[d] - is[d]});
    gsrc = g.op(K::Pad, {gsrc}, Attrs{{"pad", p}, {"value", 0.0}});
  }
  return {gs, kNoValue, gsrc};
}
R cumsumGrad(GradCtx& g) {
  Attrs a = g.attrs();
  a["reverse"] = !attrBool(a, "reverse", false);
  return {g.op(K::Cumsum, {g.GO(0)}, a)};
}
/// The sorted values' gradient goes back to where each came from.
R sortGrad(GradCtx& g) {
  Attrs a{{"dim", attrInt(g.attrs(), "dim")}};
  return {g.op(K::ScatterAdd, {g.zeros(g.type(g.I(0))), g.O(1), g.contiguous(g.GO(0))}, a)};
}
R catGrad(GradCtx& g) {
  R r;
  int64_t d = wrapDim(attrInt(g.attrs(), "dim"), static_cast<int64_t>(g.sizes(g.O(0)).size()));
  int64_t at = 0;
  for (size_t i = 0; i < g.node().inputs.size(); ++i) {
    int64_t n = g.sizes(g.I(static_cast<int>(i)))[static_cast<size_t>(d)];
    r.push_back(g.op(K::Slice, {g.GO(0)}, Attrs{{"dim", d}, {"start", at}, {"end", at + n}, {"step", int64_t{1}}}));
    at += n;
  }
  return r;
}
R padGrad(GradCtx& g) {
  Ints p = attrInts(g.attrs(), "pad");
  for (int64_t& v : p) v = -v;
  return {g.op(K::Pad, {g.contiguous(g.GO(0))}, Attrs{{"pad", p}, {"value", 0.0}})};
}

// ---- CUDA element kernel bodies

/// What every body of this family starts from: output 0's type, its
/// coordinates, and the dim the op works along (not Pad, which has none).
struct Along {
  const TensorType& ot;
  size_t r;
  const char* ct;
  std::vector<std::string> c;
  size_t d;
  Along(const Graph& g, const Node& n)
      : ot(g.type(n.outputs[0])), r(static_cast<size_t>(ot.rank())), ct(computeType(ot.dtype)), c(coords(r)),
        d(hasAttr(n.attrs, "dim") ? static_cast<size_t>(wrapDim(attrInt(n.attrs, "dim"), std::max<int64_t>(ot.rank(), 1))) : 0) {}
  /// The coordinates with dim d replaced by `v`.
  std::vector<std::string> with(const std::string& v) const {
    auto k = c;
    k[d] = v;
    return k;
  }
};

std::string indexSelectBody(const Graph& g, const Node& n) {
  Along A(g, n);
  std::ostringstream b;
  const TensorType &x = g.type(n.inputs[0]), &ix = g.type(n.inputs[1]);
  b << "  aotc_i64 k = in1[" << at(ix, ix.rank() ? std::vector<std::string>{A.c[A.d]} : std::vector<std::string>{}) << "];\n";
  b << "  k = aotc_checked_index(k, " << x.sizes[A.d] << ");\n";
  b << "  out0[i] = in0[" << at(x, A.with("k")) << "];\n";
  return b.str();
}
std::string indexAddBody(const Graph& g, const Node& n) {
  Along A(g, n);
  std::ostringstream b;
  const TensorType &base = g.type(n.inputs[0]), &ix = g.type(n.inputs[1]), &src = g.type(n.inputs[2]);
  b << "  " << A.ct << " acc = (" << A.ct << ")in0[" << at(base, A.c) << "];\n";
  b << "  for (aotc_i64 j = 0; j < " << ix.numel() << "; ++j) {\n";
  b << "    aotc_i64 k = in1[" << at(ix, ix.rank() ? std::vector<std::string>{"j"} : std::vector<std::string>{}) << "];\n";
  b << "    if (aotc_checked_index(k, " << base.sizes[A.d] << ") == " << A.c[A.d] << ") acc += (" << A.ct << ")in2["
    << at(src, A.with("j")) << "];\n  }\n";
  b << "  out0[i] = acc;\n";
  return b.str();
}
std::string gatherBody(const Graph& g, const Node& n) {
  Along A(g, n);
  std::ostringstream b;
  const TensorType &x = g.type(n.inputs[0]), &ix = g.type(n.inputs[1]);
  b << "  aotc_i64 k = aotc_checked_index(in1[" << at(ix, A.c) << "], " << x.sizes[A.d] << ");\n";
  b << "  out0[i] = in0[" << at(x, A.with("k")) << "];\n";
  return b.str();
}
/// scatter_add sums every source element whose index hits this element;
/// scatter keeps the last one along dim.
template <bool Add>
std::string scatterIntoBody(const Graph& g, const Node& n) {
  Along A(g, n);
  std::ostringstream b;
  const TensorType &base = g.type(n.inputs[0]), &ix = g.type(n.inputs[1]), &src = g.type(n.inputs[2]);
  const char* var = Add ? "acc" : "val";
  b << "  " << A.ct << " " << var << " = (" << A.ct << ")in0[" << at(base, A.c) << "];\n  bool inside = true;\n";
  for (size_t q = 0; q < A.r; ++q)
    if (q != A.d) b << "  inside = inside && " << A.c[q] << " < " << ix.sizes[q] << ";\n";
  b << "  if (inside) for (aotc_i64 j = 0; j < " << ix.sizes[A.d] << "; ++j) {\n";
  b << "    aotc_i64 k = in1[" << at(ix, A.with("j")) << "];\n";
  b << "    if (" << "aotc_checked_index(k, " << base.sizes[A.d] << ")" << " == " << A.c[A.d] << ") " << var << (Add ? " += (" : " = (")
    << A.ct << ")in2[" << at(src, A.with("j")) << "];\n  }\n";
  b << "  out0[i] = " << var << ";\n";
  return b.str();
}
std::string cumsumBody(const Graph& g, const Node& n) {
  Along A(g, n);
  std::ostringstream b;
  const TensorType& x = g.type(n.inputs[0]);
  bool rev = attrBool(n.attrs, "reverse", false);
  b << "  " << A.ct << " acc = 0;\n";
  b << "  for (aotc_i64 j = " << (rev ? A.c[A.d] : "0") << "; j " << (rev ? "< " + std::to_string(x.sizes[A.d]) : "<= " + A.c[A.d])
    << "; ++j) acc += (" << A.ct << ")in0[" << at(x, A.with("j")) << "];\n";
  b << "  out0[i] = acc;\n";
  return b.str();
}
/// This thread's element goes to its rank: the number of elements that
/// sort before it (ties by index: stable; NaN is the largest).
std::string sortBody(const Graph& g, const Node& n) {
  Along A(g, n);
  std::ostringstream b;
  const TensorType& x = g.type(n.inputs[0]);
  bool desc = attrBool(n.attrs, "descending", false);
  b << "  " << A.ct << " v = (" << A.ct << ")in0[" << at(x, A.c) << "];\n  aotc_i64 rank = 0;\n";
  b << "  for (aotc_i64 j = 0; j < " << x.sizes[A.d] << "; ++j) {\n";
  b << "    " << A.ct << " u = (" << A.ct << ")in0[" << at(x, A.with("j")) << "];\n";
  std::string before = desc ? "(u > v || (u != u && v == v))" : "(u < v || (v != v && u == u))";
  b << "    bool tie = (u == v) || (u != u && v != v);\n";
  b << "    if (" << before << " || (tie && j < " << A.c[A.d] << ")) ++rank;\n  }\n";
  b << "  out0[" << at(A.ot, A.with("rank")) << "] = in0[" << at(x, A.c) << "];\n";
  b << "  out1[" << at(A.ot, A.with("rank")) << "] = " << A.c[A.d] << ";\n";
  return b.str();
}
std::string catBody(const Graph& g, const Node& n) {
  Along A(g, n);
  std::ostringstream b;
  int64_t start = 0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const TensorType& t = g.type(n.inputs[k]);
    int64_t end = start + t.sizes[A.d];
    b << "  " << (k ? "else if" : "if") << " (" << A.c[A.d] << " < " << end << ") out0[i] = (" << A.ct << ")in" << k << "["
      << at(t, A.with(A.c[A.d] + " - " + std::to_string(start))) << "];\n";
    start = end;
  }
  return b.str();
}
std::string padBody(const Graph& g, const Node& n) {
  Along A(g, n);
  std::ostringstream b;
  const TensorType& x = g.type(n.inputs[0]);
  Ints p = attrInts(n.attrs, "pad");
  auto k = A.c;
  std::string inside = "true";
  for (size_t q = 0; q < p.size() / 2; ++q) {
    size_t d = A.r - 1 - q;
    k[d] = "(" + A.c[d] + " - " + std::to_string(p[2 * q]) + ")";
    inside += " && " + k[d] + " >= 0 && " + k[d] + " < " + std::to_string(x.sizes[d]);
  }
  b << "  out0[i] = (" << inside << ") ? (" << A.ct << ")in0[" << at(x, k) << "] : (" << A.ct << ")"
    << ktext::literal(attrFloat(n.attrs, "value"), A.ot.dtype) << ";\n";
  return b.str();
}
/// The first maximum (NaN wins) along dim, or over all elements.
std::string argmaxBody(const Graph& g, const Node& n) {
  const TensorType& it = g.type(n.inputs[0]);
  std::ostringstream b;
  const char* ct = computeType(it.dtype);
  if (!hasAttr(n.attrs, "dim")) {
    b << "  " << ct << " best = 0; aotc_i64 bi = -1;\n";
    b << "  for (aotc_i64 j = 0; j < " << it.numel() << "; ++j) {\n    aotc_i64 q = j, k[" << std::max<int64_t>(it.rank(), 1) << "];\n";
    for (int64_t d = it.rank(); d-- > 0;) b << "    k[" << d << "] = q % " << it.sizes[d] << "; q /= " << it.sizes[d] << ";\n";
    b << "    " << ct << " v = (" << ct << ")in0[" << at(it, coords(static_cast<size_t>(it.rank()), "k")) << "];\n";
    b << "    if (bi < 0 || v > best || (v != v && best == best)) { best = v; bi = j; }\n  }\n";
    b << "  out0[i] = bi;\n";
    return b.str();
  }
  int64_t d = wrapDim(attrInt(n.attrs, "dim"), std::max<int64_t>(it.rank(), 1));
  bool keep = attrBool(n.attrs, "keepdim", false);
  // Input coordinates from output coordinates.
  std::vector<std::string> k;
  for (int64_t q = 0, oc = 0; q < it.rank(); ++q) {
    if (q == d) {
      k.push_back("j");
      if (keep) ++oc;
    } else {
      k.push_back("c[" + std::to_string(oc++) + "]");
    }
  }
  b << "  " << ct << " best = 0; aotc_i64 bi = -1;\n";
  b << "  for (aotc_i64 j = 0; j < " << (it.rank() ? it.sizes[d] : 1) << "; ++j) {\n";
  b << "    " << ct << " v = (" << ct << ")in0[" << at(it, k) << "];\n";
  b << "    if (bi < 0 || v > best || (v != v && best == best)) { best = v; bi = j; }\n  }\n";
  b << "  out0[i] = bi;\n";
  return b.str();
}


}  // namespace

std::span<const OpRule> gatherRows() {
  static const std::vector<OpRule> kRows = {
      elementRow(K::IndexSelect, indexSelectRule, indexSelectRef, indexSelectGrad, indexSelectBody, {{{sampleF({4, 3}), sampleI({3}, {2, 0, 2})}, dimAttr(0)}}),
      elementRow(K::IndexAdd, indexAddRule, indexAddRef, indexAddGrad, indexAddBody, {{{sampleF({4, 3}), sampleI({2}, {1, 3}), sampleF({2, 3})}, dimAttr(0)}}),
      elementRow(K::Gather, gatherRule, gatherRef, gatherGrad, gatherBody, {{{sampleF({3, 4}), sampleI({3, 2}, {0, 3, 1, 1, 2, 0})}, dimAttr(1)}}),
      elementRow(K::ScatterAdd, scatterAddRule, scatterIntoRef<true>, scatterAddGrad, scatterIntoBody<true>,
                 {{{sampleF({3, 4}), sampleI({3, 2}, {0, 3, 1, 1, 2, 0}), sampleF({3, 2})}, dimAttr(1)}}),
      elementRow(K::Scatter, scatterRule, scatterIntoRef<false>, scatterGrad, scatterIntoBody<false>,
                 {{{sampleF({3, 4}), sampleI({3, 2}, {0, 3, 1, 2, 2, 0}), sampleF({3, 3})}, dimAttr(1)}}),
      elementRow(K::Cumsum, cumsumRule, cumsumRef, cumsumGrad, cumsumBody,
                 {{{sampleF({2, 4})}, dimAttr(1)}, {{sampleF({3, 2})}, Attrs{{"dim", int64_t{0}}, {"reverse", true}}}}),
      elementRow(K::Sort, sortRule, sortRef, sortGrad, sortBody,
                 {{{sampleF({2, 5})}, dimAttr(1)}, {{sampleF({4, 2})}, Attrs{{"dim", int64_t{0}}, {"descending", true}}}}),
      elementRow(K::Cat, catRule, catRef, catGrad, catBody, {{{sampleF({2, 3}), sampleF({2, 1})}, dimAttr(1)}}),
      elementRow(K::Pad, padRule, padRef, padGrad, padBody, {{{sampleF({2, 3})}, Attrs{{"pad", Ints{1, 2, 0, -1}}, {"value", 0.5}}}}),
      elementRow(K::ArgMax, argmaxRule, argmaxRef, nullptr, argmaxBody, {{{sampleF({2, 3})}, Attrs{{"dim", int64_t{1}}, {"keepdim", false}}}}),
  };
  return kRows;
}

}  // namespace aotc::detail
