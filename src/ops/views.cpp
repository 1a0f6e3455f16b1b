//===- views.cpp - Views, their in-place forms, and the scatters into them ===//
//
// Note [Op rows] (rules.h) says what a row holds and who reads it.  A view's
// shape rule computes its layout over the source (sizes, strides, offset:
// ATen's), which is all the code generator needs (Lowering::View); a scatter
// is the functional form of writing a view's region, computed inside its
// consumer (Note [Scatter expressions] in codegen/cuda/kernels.cpp).  Gradient rules
// follow Note [Node order] (gradients.cpp).
//===----------------------------------------------------------------------===//
#include <algorithm>

#include "aotc/ops/kernel_text.h"
#include "rule_util.h"

namespace aotc::detail {

namespace {

using K = OpKind;
using R = std::vector<ValueId>;
using TT = std::vector<TensorType>;

// ---- shape rules (layouts over the source)

TT tRule(const TT& in, const Attrs&) {
  TensorType t = in[0];
  if (t.rank() > 2) shapeError("t: expects a tensor of at most 2 dims, got " + shapeStr(t.sizes));
  if (t.rank() == 2) {
    std::swap(t.sizes[0], t.sizes[1]);
    std::swap(t.strides[0], t.strides[1]);
  }
  return one(t);
}

TT viewRule(const TT& in, const Attrs& a) {
  Ints size = inferViewSize(attrInts(a, "size"), in[0].numel());
  auto st = viewStrides(in[0].sizes, in[0].strides, size);
  if (!st) shapeError("view size " + shapeStr(size) + " is not compatible with input size " + shapeStr(in[0].sizes) +
                      " and strides; use reshape");
  TensorType t = in[0];
  t.sizes = size;
  t.strides = *st;
  return one(t);
}

TT expandRule(const TT& in, const Attrs& a) {
  const Ints& size = attrInts(a, "size");
  const TensorType& x = in[0];
  if (size.size() < x.sizes.size())
    shapeError("expand: target " + shapeStr(size) + " has fewer dims than input " + shapeStr(x.sizes));
  TensorType t = x;
  size_t lead = size.size() - x.sizes.size();
  t.sizes.assign(size.size(), 0);
  t.strides.assign(size.size(), 0);
  for (size_t i = 0; i < size.size(); ++i) {
    if (i < lead) {
      if (size[i] < 0) shapeError("expand: -1 is not allowed in a new leading dim");
      t.sizes[i] = size[i];
      continue;
    }
    int64_t xs = x.sizes[i - lead], want = size[i] == -1 ? xs : size[i];
    if (xs != want && xs != 1)
      shapeError("expand: cannot expand " + shapeStr(x.sizes) + " to " + shapeStr(size));
    t.sizes[i] = want;
    t.strides[i] = (xs == want) ? x.strides[i - lead] : 0;
  }
  return one(t);
}

TT aliasRule(const TT& in, const Attrs&) { return one(in[0]); }

TT transposeRule(const TT& in, const Attrs& a) {
  TensorType t = in[0];
  int64_t r = std::max<int64_t>(t.rank(), 1);
  int64_t d0 = wrapDim(attrInt(a, "dim0"), r), d1 = wrapDim(attrInt(a, "dim1"), r);
  if (t.rank() == 0) return one(t);
  std::swap(t.sizes[d0], t.sizes[d1]);
  std::swap(t.strides[d0], t.strides[d1]);
  return one(t);
}

TT unsqueezeRule(const TT& in, const Attrs& a) {
  TensorType t = in[0];
  int64_t d = wrapDim(attrInt(a, "dim"), t.rank() + 1);
  int64_t st = d < t.rank() ? t.sizes[d] * t.strides[d] : 1;
  t.sizes.insert(t.sizes.begin() + d, 1);
  t.strides.insert(t.strides.begin() + d, st);
  return one(t);
}

TT squeezeRule(const TT& in, const Attrs& a) {
  TensorType t = in[0];
  Ints dims = hasAttr(a, "dim") ? attrInts(a, "dim") : Ints{};
  std::vector<bool> drop(t.sizes.size(), false);
  if (dims.empty()) {
    for (size_t i = 0; i < t.sizes.size(); ++i) drop[i] = t.sizes[i] == 1;
  } else {
    for (int64_t d : dims) {
      int64_t w = wrapDim(d, std::max<int64_t>(t.rank(), 1));
      if (t.rank() > 0 && t.sizes[w] == 1) drop[w] = true;
    }
  }
  TensorType o = t;
  o.sizes.clear();
  o.strides.clear();
  for (size_t i = 0; i < t.sizes.size(); ++i)
    if (!drop[i]) {
      o.sizes.push_back(t.sizes[i]);
      o.strides.push_back(t.strides[i]);
    }
  return one(o);
}

TT sliceRule(const TT& in, const Attrs& a) {
  TensorType t = in[0];
  if (t.rank() == 0) shapeError("slice() cannot be applied to a 0-dim tensor");
  int64_t d = wrapDim(attrInt(a, "dim"), t.rank());
  SliceBounds b = sliceBounds(a, t.sizes[d]);
  t.offset = addSize(t.offset, mulSize(b.start, t.strides[d]));
  t.sizes[d] = b.length;
  t.strides[d] = mulSize(t.strides[d], b.step);
  return one(t);
}

TT selectRule(const TT& in, const Attrs& a) {
  TensorType t = in[0];
  if (t.rank() == 0) shapeError("select() cannot be applied to a 0-dim tensor");
  int64_t d = wrapDim(attrInt(a, "dim"), t.rank());
  int64_t i = attrInt(a, "index");
  if (i < -t.sizes[d] || i >= t.sizes[d])
    shapeError("select: index " + std::to_string(i) + " out of range for dim of size " + std::to_string(t.sizes[d]));
  if (i < 0) i += t.sizes[d];
  t.offset = addSize(t.offset, mulSize(i, t.strides[d]));
  t.sizes.erase(t.sizes.begin() + d);
  t.strides.erase(t.strides.begin() + d);
  return one(t);
}

/// diagonal(x, offset, dim1, dim2): the other dims, then the diagonal (a
/// view: stride s1 + s2; ATen leaves the offset alone when it is empty).
TT diagonalRule(const TT& in, const Attrs& a) {
  TensorType t = in[0];
  if (t.rank() < 2) shapeError("diagonal: the input must have at least 2 dims");
  int64_t d1 = wrapDim(hasAttr(a, "dim1") ? attrInt(a, "dim1") : 0, t.rank());
  int64_t d2 = wrapDim(hasAttr(a, "dim2") ? attrInt(a, "dim2") : 1, t.rank());
  if (d1 == d2) shapeError("diagonal: dim1 and dim2 cannot be the same dim");
  int64_t off = hasAttr(a, "offset") ? attrInt(a, "offset") : 0;
  const int64_t n1 = t.sizes[static_cast<size_t>(d1)], n2 = t.sizes[static_cast<size_t>(d2)];
  const int64_t s1 = t.strides[static_cast<size_t>(d1)], s2 = t.strides[static_cast<size_t>(d2)];
  if (off > n2 || -off > n1) off = off > 0 ? n2 : -n1;  // empty either way; keeps the arithmetic small
  int64_t len = std::max<int64_t>(off >= 0 ? std::min(n1, n2 - off) : std::min(n1 + off, n2), 0);
  if (len > 0) t.offset = addSize(t.offset, off >= 0 ? mulSize(off, s2) : mulSize(-off, s1));
  Ints sizes, strides;
  for (int64_t d = 0; d < t.rank(); ++d)
    if (d != d1 && d != d2) {
      sizes.push_back(t.sizes[static_cast<size_t>(d)]);
      strides.push_back(t.strides[static_cast<size_t>(d)]);
    }
  sizes.push_back(len);
  strides.push_back(addSize(s1, s2));
  t.sizes = sizes;
  t.strides = strides;
  return one(t);
}

TT permuteRule(const TT& in, const Attrs& a) {
  Ints p = attrInts(a, "dims");
  if (static_cast<int64_t>(p.size()) != in[0].rank()) shapeError("permute: dims must name every dim once");
  TensorType t = in[0];
  std::vector<bool> seen(p.size(), false);
  for (size_t i = 0; i < p.size(); ++i) {
    int64_t d = wrapDim(p[i], in[0].rank());
    if (seen[d]) shapeError("permute: repeated dim");
    seen[d] = true;
    t.sizes[i] = in[0].sizes[d];
    t.strides[i] = in[0].strides[d];
  }
  return one(t);
}

/// A scatter: a dense base whose region `ViewRule(base)` is the source.
template <ShapeRule ViewRule>
TT scatterRule(const TT& in, const Attrs& a) {
  TensorType base = TensorType::contiguous(in[0].dtype, in[0].sizes);
  TensorType v = ViewRule({base}, a)[0];
  if (v.sizes != in[1].sizes)
    shapeError("scatter: source " + shapeStr(in[1].sizes) + " does not match the region " + shapeStr(v.sizes));
  if (in[0].dtype != in[1].dtype) shapeError("scatter: dtypes differ");
  return one(base);
}

// ---- reference kernels

/// The kernel of view op K: its layout over the dense operand, gathered.
template <OpKind V>
Outs viewRef(const Ins& in, const Attrs& a, const std::vector<TensorType>&) { return viewKernel(V, in, a); }
/// The kernel of the scatter into view V's region.
template <OpKind V>
Outs scatterRef(const Ins& in, const Attrs& a, const std::vector<TensorType>&) { return scatterRegionKernel(V, in, a); }

Outs tRef(const Ins& in, const Attrs&, const std::vector<TensorType>&) {
  const HostTensor& x = *in[0];
  if (x.sizes.size() < 2) return {x};
  HostTensor o = HostTensor::zeros(x.dtype, {x.sizes[1], x.sizes[0]});
  for (int64_t i = 0; i < x.sizes[0]; ++i)
    for (int64_t j = 0; j < x.sizes[1]; ++j)
      o.data[static_cast<size_t>(j * x.sizes[0] + i)] = x.data[static_cast<size_t>(i * x.sizes[1] + j)];
  return {std::move(o)};
}
Outs viewSizesRef(const Ins& in, const Attrs&, const std::vector<TensorType>& ot) {
  HostTensor o = *in[0];
  o.sizes = ot[0].sizes;
  return {std::move(o)};
}
Outs expandRef(const Ins& in, const Attrs&, const std::vector<TensorType>& ot) {
  const HostTensor& x = *in[0];
  HostTensor o = HostTensor::zeros(x.dtype, ot[0].sizes);
  auto idx = broadcastIndex(x.sizes, ot[0].sizes);
  for (size_t e = 0; e < o.data.size(); ++e) o.data[e] = x.data[static_cast<size_t>(idx[e])];
  return {std::move(o)};
}
Outs identityRef(const Ins& in, const Attrs&, const std::vector<TensorType>&) { return {*in[0]}; }

// ---- gradient rules

R tGrad(GradCtx& g) { return {g.op(K::T, {g.GO(0)})}; }
R reshapeGrad(GradCtx& g) { return {g.reshape(g.GO(0), g.sizes(g.I(0)))}; }
R expandGrad(GradCtx& g) { return {g.sumTo(g.GO(0), g.sizes(g.I(0)))}; }
R transposeGrad(GradCtx& g) { return {g.op(K::Transpose, {g.GO(0)}, g.attrs())}; }
Ints inversePermutation(const Ints& p) {
  Ints inv(p.size());
  for (size_t i = 0; i < p.size(); ++i) inv[static_cast<size_t>(wrapDim(p[i], static_cast<int64_t>(p.size())))] = static_cast<int64_t>(i);
  return inv;
}
R permuteGrad(GradCtx& g) { return {g.op(K::Permute, {g.GO(0)}, Attrs{{"dims", inversePermutation(attrInts(g.attrs(), "dims"))}})}; }
/// A region view's gradient: GO scattered into zeros (scatter op S).
template <OpKind S>
R regionGrad(GradCtx& g) {
  return {g.op(S, {g.zeros(g.type(g.I(0))), g.contiguous(g.GO(0))}, g.attrs())};
}
/// A scatter's: GO with the region zeroed for the base, the region for the source.
R scatterGrad(GradCtx& g) {
  OpKind view = *opRule(g.node().op)->scatters;
  ValueId gb = g.op(g.node().op, {g.contiguous(g.GO(0)), g.zeros(g.type(g.I(1)))}, g.attrs());
  return {gb, g.op(view, {g.GO(0)}, g.attrs())};
}

// ---- inverses (functionalize): the base's new value when the view holds v

ValueId tInverse(Builder& b, const Attrs&, ValueId, ValueId v) { return b.op(K::T, {v}); }
ValueId transposeInverse(Builder& b, const Attrs& a, ValueId, ValueId v) { return b.op(K::Transpose, {v}, a); }
ValueId reshapeInverse(Builder& b, const Attrs&, ValueId base, ValueId v) { return b.reshape(v, b.sizes(base)); }
ValueId detachInverse(Builder&, const Attrs&, ValueId, ValueId v) { return v; }
ValueId permuteInverse(Builder& b, const Attrs& a, ValueId, ValueId v) {
  return b.op(K::Permute, {v}, Attrs{{"dims", inversePermutation(attrInts(a, "dims"))}});
}
template <OpKind S>
ValueId regionInverse(Builder& b, const Attrs& a, ValueId base, ValueId v) {
  return b.op(S, {b.contiguous(base), b.contiguous(v)}, a);
}
ValueId expandInverse(Builder& b, const Attrs&, ValueId, ValueId) {
  b.fail("in-place update of an expanded view: several elements share one memory location "
         "(PyTorch rejects this too); clone() the expanded tensor first");
}

// ---- scatter expressions (Note [Scatter expressions] in codegen/cuda/kernels.cpp)

ScatterRegion sliceRegion(const Graph& g, const Node& n, const std::vector<std::string>& c, const std::string& q) {
  const TensorType& ot = g.type(n.outputs[0]);
  const size_t dim = static_cast<size_t>(wrapDim(attrInt(n.attrs, "dim"), std::max<int64_t>(ot.rank(), 1)));
  SliceBounds b = sliceBounds(n.attrs, ot.sizes[dim]);
  ScatterRegion r;
  r.inside = c[dim] + " >= " + std::to_string(b.start) + " && " + c[dim] + " < " + std::to_string(b.end) + " && (" + c[dim] +
             " - " + std::to_string(b.start) + ") % " + std::to_string(b.step) + " == 0";
  r.source = c;
  r.source[dim] = "(" + q + " ? (" + c[dim] + " - " + std::to_string(b.start) + ") / " + std::to_string(b.step) + " : 0)";
  return r;
}
ScatterRegion selectRegion(const Graph& g, const Node& n, const std::vector<std::string>& c, const std::string&) {
  const TensorType& ot = g.type(n.outputs[0]);
  const size_t dim = static_cast<size_t>(wrapDim(attrInt(n.attrs, "dim"), std::max<int64_t>(ot.rank(), 1)));
  int64_t idx = attrInt(n.attrs, "index");
  if (idx < 0) idx += ot.sizes[dim];
  ScatterRegion r;
  r.inside = c[dim] + " == " + std::to_string(idx);
  for (size_t d = 0; d < c.size(); ++d)
    if (d != dim) r.source.push_back(c[d]);
  return r;
}
/// Element (.., i, .., i + offset, ..) of the base is the source's (.., i)
/// (offset >= 0; (i - offset, i) otherwise).
ScatterRegion diagonalRegion(const Graph& g, const Node& n, const std::vector<std::string>& c, const std::string& q) {
  const int64_t rank = g.type(n.outputs[0]).rank();
  const size_t d1 = static_cast<size_t>(wrapDim(hasAttr(n.attrs, "dim1") ? attrInt(n.attrs, "dim1") : 0, rank));
  const size_t d2 = static_cast<size_t>(wrapDim(hasAttr(n.attrs, "dim2") ? attrInt(n.attrs, "dim2") : 1, rank));
  const int64_t off = hasAttr(n.attrs, "offset") ? attrInt(n.attrs, "offset") : 0;
  ScatterRegion r;
  r.inside = c[d2] + " - " + c[d1] + " == " + std::to_string(off);
  for (size_t d = 0; d < c.size(); ++d)
    if (d != d1 && d != d2) r.source.push_back(c[d]);
  r.source.push_back("(" + q + " ? " + c[off >= 0 ? d1 : d2] + " : 0)");
  return r;
}


OpRule viewRow(OpKind k, ShapeRule t, ReferenceKernel ref, GradRule grad, InverseRule inverse, std::vector<OpSample> s) {
  OpRule r = row(k, t, ref, grad, Lowering::View, std::move(s));
  r.inverse = inverse;
  return r;
}
OpRule scatterRow(OpKind k, OpKind of, ShapeRule t, ReferenceKernel ref, RegionRule region, OpSample s) {
  OpRule r = row(k, t, ref, scatterGrad, Lowering::Expression, {std::move(s)});
  r.region = region;
  r.scatters = of;
  return r;
}

}  // namespace

std::span<const OpRule> viewRows() {
  // Views, then the scatters into their regions, then the in-place forms
  // that change only a tensor's metadata (functionalize replays them as
  // their functional view: ops.def's fn column).
  static const std::vector<OpRule> kRows = {
      viewRow(K::T, tRule, tRef, tGrad, tInverse, {{{sampleF({2, 3})}, {}}}),
      viewRow(K::View, viewRule, viewSizesRef, reshapeGrad, reshapeInverse, {{{sampleF({2, 3})}, Attrs{{"size", Ints{3, 2}}}}}),
      viewRow(K::Expand, expandRule, expandRef, expandGrad, expandInverse, {{{sampleF({3, 1})}, Attrs{{"size", Ints{2, 3, 4}}}}}),
      viewRow(K::Detach, aliasRule, identityRef, nullptr, detachInverse, {}),
      viewRow(K::Permute, permuteRule, viewRef<K::Permute>, permuteGrad, permuteInverse,
              {{{sampleF({2, 3, 4})}, Attrs{{"dims", Ints{2, 0, 1}}}}}),
      viewRow(K::Transpose, transposeRule, viewRef<K::Transpose>, transposeGrad, transposeInverse,
              {{{sampleF({2, 3, 4})}, Attrs{{"dim0", int64_t{0}}, {"dim1", int64_t{2}}}}}),
      viewRow(K::Unsqueeze, unsqueezeRule, viewRef<K::Unsqueeze>, reshapeGrad, reshapeInverse, {{{sampleF({2, 3})}, dimAttr(1)}}),
      viewRow(K::Squeeze, squeezeRule, viewRef<K::Squeeze>, reshapeGrad, reshapeInverse,
              {{{sampleF({2, 1, 3})}, Attrs{{"dim", Ints{1}}}}}),
      viewRow(K::Slice, sliceRule, viewRef<K::Slice>, regionGrad<K::SliceScatter>, regionInverse<K::SliceScatter>,
              {{{sampleF({2, 5})}, Attrs{{"dim", int64_t{1}}, {"start", int64_t{1}}, {"end", int64_t{5}}, {"step", int64_t{2}}}}}),
      viewRow(K::Select, selectRule, viewRef<K::Select>, regionGrad<K::SelectScatter>, regionInverse<K::SelectScatter>,
              {{{sampleF({2, 4})}, Attrs{{"dim", int64_t{1}}, {"index", int64_t{-2}}}}}),
      viewRow(K::Diagonal, diagonalRule, viewRef<K::Diagonal>, regionGrad<K::DiagonalScatter>, regionInverse<K::DiagonalScatter>,
              {{{sampleF({3, 4})}, Attrs{{"offset", int64_t{1}}}}}),
      scatterRow(K::SliceScatter, K::Slice, scatterRule<sliceRule>, scatterRef<K::Slice>, sliceRegion,
                 {{sampleF({2, 4}), sampleF({2, 2})}, Attrs{{"dim", int64_t{1}}, {"start", int64_t{1}}, {"end", int64_t{4}}, {"step", int64_t{2}}}}),
      scatterRow(K::SelectScatter, K::Select, scatterRule<selectRule>, scatterRef<K::Select>, selectRegion,
                 {{sampleF({2, 4}), sampleF({2})}, Attrs{{"dim", int64_t{1}}, {"index", int64_t{1}}}}),
      scatterRow(K::DiagonalScatter, K::Diagonal, scatterRule<diagonalRule>, scatterRef<K::Diagonal>, diagonalRegion,
                 {{sampleF({2, 3, 4}), sampleF({2, 2})}, Attrs{{"offset", int64_t{-1}}, {"dim1", int64_t{1}}, {"dim2", int64_t{2}}}}),
      row(K::TInplace, tRule, nullptr, nullptr, Lowering::None),
      row(K::TransposeInplace, transposeRule, nullptr, nullptr, Lowering::None),
      row(K::UnsqueezeInplace, unsqueezeRule, nullptr, nullptr, Lowering::None),
      row(K::SqueezeInplace, squeezeRule, nullptr, nullptr, Lowering::None),
  };
  return kRows;
}

}  // namespace aotc::detail
