//===- builder.cpp - The one IR builder (Note [One builder]) ---------------===//
#include "aotc/ops/builder.h"

namespace aotc {

ValueId Builder::op(OpKind k, std::vector<ValueId> ins, Attrs a) {
  if (noGrad_) a["no_grad"] = true;
  return addOp(g_, k, std::move(ins), std::move(a), loc_, phase_);
}

std::vector<ValueId> Builder::ops(OpKind k, std::vector<ValueId> ins, Attrs a, std::vector<Graph> regions) {
  if (noGrad_) a["no_grad"] = true;
  return addNode(g_, k, std::move(ins), std::move(a), loc_, phase_, kTagNone, std::move(regions));
}

ValueId Builder::scalar(double v, DType d) {
  return op(OpKind::Constant, {}, Attrs{{"value", v}, {"dtype", std::string(dtypeName(d))}});
}

ValueId Builder::sizeScalar(double scale, int64_t num, int64_t den, DType d) {
  AOTC_CHECK(den != 0, "sizeScalar: a zero denominator");
  return op(OpKind::Constant, {}, Attrs{{"value", scale * (static_cast<double>(num) / static_cast<double>(den))},
                                        {"dtype", std::string(dtypeName(d))},
                                        {"size_scale", scale},
                                        {"size_num", num},
                                        {"size_den", den}});
}

ValueId Builder::full(double v, const TensorType& like) {
  return op(OpKind::Constant, {}, Attrs{{"value", v}, {"dtype", std::string(dtypeName(like.dtype))}, {"shape", like.sizes}});
}

ValueId Builder::cast(ValueId v, DType d) {
  return type(v).dtype == d ? v : op(OpKind::Cast, {v}, Attrs{{"dtype", std::string(dtypeName(d))}});
}

ValueId Builder::scaled(ValueId v, double alpha) { return alpha == 1.0 ? v : mul(v, scalar(alpha, type(v).dtype)); }

ValueId Builder::sumTo(ValueId v, Ints sizes) {
  const Ints have = type(v).sizes;
  if (have == sizes) return v;
  size_t lead = have.size() - sizes.size();
  Ints dims;
  for (size_t i = 0; i < have.size(); ++i)
    if (i < lead || (sizes[i - lead] == 1 && have[i] != 1)) dims.push_back(static_cast<int64_t>(i));
  ValueId r = v;
  if (!dims.empty()) r = op(OpKind::Sum, {v}, Attrs{{"dim", dims}, {"keepdim", true}});
  return type(r).sizes == sizes ? r : reshape(r, sizes);
}

ValueId Builder::reshape(ValueId v, Ints sizes) {
  try {
    sizes = inferViewSize(sizes, type(v).numel());
  } catch (const UserError& e) {
    fail(e.diagnostics().empty() ? std::string(e.what()) : e.diagnostics()[0].message);
  }
  if (type(v).sizes == sizes) return v;
  if (!viewStrides(type(v).sizes, type(v).strides, sizes)) v = op(OpKind::Clone, {v});
  return op(OpKind::View, {v}, Attrs{{"size", sizes}});
}

ValueId Builder::expand(ValueId v, Ints sizes) {
  if (type(v).sizes == sizes) return v;
  return op(OpKind::Expand, {v}, Attrs{{"size", sizes}});
}

ValueId Builder::contiguous(ValueId v) { return type(v).isContiguous() ? v : op(OpKind::Clone, {v}); }

}  // namespace aotc
