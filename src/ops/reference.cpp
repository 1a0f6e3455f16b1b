//===- reference.cpp - CPU reference kernels ------------------------------===//
//
// The dispatch: an op's reference kernel is its row's (Notes [Pointwise
// rows], [Reduction rows], [Op rows]); the helpers the rows share.
//===----------------------------------------------------------------------===//
#include "aotc/ops/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "aotc/ops/ops.h"
#include "aotc/ops/pointwise.h"
#include "aotc/ops/reductions.h"
#include "aotc/ops/rules.h"
#include "rule_util.h"

namespace aotc {

namespace detail {

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

HostTensor gatherView(const HostTensor& x, const TensorType& view) {
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

Outs viewKernel(OpKind op, const Ins& in, const Attrs& a) {
  TensorType base = TensorType::contiguous(in[0]->dtype, in[0]->sizes);
  return {gatherView(*in[0], inferTypes(op, {base}, a)[0])};
}

Outs scatterRegionKernel(OpKind viewOp, const Ins& in, const Attrs& a) {
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

int64_t checkedIndex(double v, int64_t size) {
  int64_t i = static_cast<int64_t>(v);
  if (i < 0) i += size;
  if (i < 0 || i >= size) throw UserError(SourceLoc{}, cat("index ", static_cast<int64_t>(v), " is out of bounds for size ", size));
  return i;
}

}  // namespace detail

namespace {

using detail::Ins;
using detail::Outs;
using detail::broadcastIndex;

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

}  // namespace

bool hasReferenceKernel(OpKind k) {
  const OpRule* r = opRule(k);
  return pointwiseRule(k) || reductionRule(k) || (r && r->reference);
}

std::vector<HostTensor> referenceEval(OpKind op, const std::vector<const HostTensor*>& ins, const Attrs& attrs,
                                      const std::vector<TensorType>& out_types) {
  if (const PointwiseRule* p = pointwiseRule(op)) return pointwise(ins, out_types, p->reference);
  if (const ReductionRule* r = reductionRule(op)) return reduce(ins, attrs, out_types, *r);
  const OpRule* r = opRule(op);
  AOTC_CHECK(r && r->reference, "no reference kernel for ", opName(op));
  return r->reference(ins, attrs, out_types);
}

HostTensor applyView(const HostTensor& base, const ViewStep& step) {
  TensorType bt = TensorType::contiguous(base.dtype, base.sizes);
  auto ot = inferTypes(step.op, {bt}, step.attrs);
  return referenceEval(step.op, {&base}, step.attrs, ot)[0];
}

}  // namespace aotc
