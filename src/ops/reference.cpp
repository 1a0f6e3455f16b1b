//===- reference.cpp - CPU reference kernels ------------------------------===//
#include "aotc/ops/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "aotc/ops/ops.h"

namespace aotc {

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

HostTensor HostTensor::zeros(DType d, Ints sizes) {
  HostTensor t{d, std::move(sizes), {}};
  t.data.assign(static_cast<size_t>(t.numel()), 0.0);
  return t;
}

namespace {
float bf16Round(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return f;  // NaN
  u += 0x7fff + ((u >> 16) & 1);                 // round to nearest even
  u &= 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

double roundTo(DType d, double x) {
  switch (d) {
    case DType::F64: return x;
    case DType::F32: return static_cast<float>(x);
    case DType::F16: return static_cast<double>(static_cast<_Float16>(static_cast<float>(x)));
    case DType::BF16: return bf16Round(static_cast<float>(x));
    case DType::I64: return static_cast<double>(static_cast<int64_t>(x));
    case DType::I32: return static_cast<double>(static_cast<int32_t>(x));
    case DType::Bool: return x != 0.0 ? 1.0 : 0.0;
  }
  return x;
}

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

#define PW(expr) \
  [](const Ins& in, const Attrs&, const std::vector<TensorType>& ot) -> Outs { \
    return pointwise(in, ot, [](const double* a) { return (expr); });          \
  }

Outs reduce(const Ins& in, const Attrs& attrs, const std::vector<TensorType>& ot, bool mean) {
  const HostTensor& x = *in[0];
  Ints dims = reductionDims(attrs, static_cast<int64_t>(x.sizes.size()));
  HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
  // Output coordinate of each input element: reduced dims collapse to 0.
  Ints kept = x.sizes;
  for (int64_t d : dims) kept[d] = 1;
  Ints kstr = TensorType::contiguousStrides(kept);
  Ints coord(x.sizes.size(), 0);
  std::vector<double> acc(o.data.size(), 0.0);
  for (int64_t e = 0; e < x.numel(); ++e) {
    int64_t off = 0;
    for (size_t d = 0; d < x.sizes.size(); ++d)
      if (kept[d] != 1) off += coord[d] * kstr[d];
    acc[static_cast<size_t>(off)] += x.data[static_cast<size_t>(e)];
    for (size_t d = x.sizes.size(); d-- > 0;) {
      if (++coord[d] < x.sizes[d]) break;
      coord[d] = 0;
    }
  }
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(x.sizes[d]);
  for (size_t i = 0; i < acc.size(); ++i) o.data[i] = roundTo(o.dtype, mean ? acc[i] / n : acc[i]);
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

HostTensor expandTo(const HostTensor& x, const Ints& sizes) {
  HostTensor o = HostTensor::zeros(x.dtype, sizes);
  auto idx = broadcastIndex(x.sizes, sizes);
  for (size_t e = 0; e < o.data.size(); ++e) o.data[e] = x.data[static_cast<size_t>(idx[e])];
  return o;
}

constexpr Kernel kernelFor(OpKind k) {
  switch (k) {
    case OpKind::Constant:
      return [](const Ins&, const Attrs& a, const std::vector<TensorType>& ot) -> Outs {
        HostTensor o = HostTensor::zeros(ot[0].dtype, ot[0].sizes);
        std::fill(o.data.begin(), o.data.end(), roundTo(o.dtype, attrFloat(a, "value")));
        return {std::move(o)};
      };
    case OpKind::Add: return PW(a[0] + a[1]);
    case OpKind::Sub: return PW(a[0] - a[1]);
    case OpKind::Mul: return PW(a[0] * a[1]);
    case OpKind::Div: return PW(a[0] / a[1]);
    case OpKind::Neg: return PW(-a[0]);
    case OpKind::Relu: return PW(a[0] > 0 ? a[0] : 0.0);
    case OpKind::Exp: return PW(std::exp(a[0]));
    case OpKind::Log: return PW(std::log(a[0]));
    case OpKind::Tanh: return PW(std::tanh(a[0]));
    case OpKind::Sigmoid: return PW(1.0 / (1.0 + std::exp(-a[0])));
    case OpKind::Gt: return PW(a[0] > a[1] ? 1.0 : 0.0);
    case OpKind::Where: return PW(a[0] != 0 ? a[1] : a[2]);
    case OpKind::Clone: return PW(a[0]);
    case OpKind::Sqrt: return PW(std::sqrt(a[0]));
    case OpKind::Rsqrt: return PW(1.0 / std::sqrt(a[0]));
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
    case OpKind::SelectScatter:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>&) { return scatterKernel(OpKind::Select, in, a); };
    case OpKind::KeepGrad:
      return [](const Ins& in, const Attrs&, const std::vector<TensorType>&) -> Outs { return {*in[1]}; };
    case OpKind::CustomGrad:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>&) -> Outs {
        Outs o;
        for (int64_t i = 0; i < attrInt(a, "num_outputs"); ++i) o.push_back(*in[static_cast<size_t>(attrInt(a, "num_args") + i)]);
        return o;
      };
    case OpKind::Sum:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) { return reduce(in, a, ot, false); };
    case OpKind::Mean:
      return [](const Ins& in, const Attrs& a, const std::vector<TensorType>& ot) { return reduce(in, a, ot, true); };
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

#undef PW

}  // namespace

bool hasReferenceKernel(OpKind k) { return kernelFor(k) != nullptr; }

std::vector<HostTensor> referenceEval(OpKind op, const std::vector<const HostTensor*>& ins, const Attrs& attrs,
                                      const std::vector<TensorType>& out_types) {
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
