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

ValueId Builder::table(HostTensor t) {
  AOTC_CHECK(hasTables(), "Builder::table without a sink");
  for (double& v : t.data) v = roundTo(t.dtype, v);
  return (*tables_)(std::move(t), loc_.node.empty() ? std::string("table") : loc_.node + "_table");
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

// Note [Cast after expand]: in a gradient rule, the expansion of a float32
// copy of a 16-bit value (a mean's or sum's gradient under autocast: the
// classifier's bf16 data gradient widened for the average pool's backward)
// is built as cast(expand(x)) rather than expand(cast(x)).  The values are
// the same bit for bit -- a bf16 or f16 to float32 cast is exact and the
// expand only repeats elements -- but the cast is then pointwise at the
// broadcast shape, which fusion inlines into the expansion's readers,
// instead of a launch of its own storing the small float32 copy for them to
// read (resnet18 bf16: its cast group before the average pool's backward;
// testdata/fusion/cast_after_expand.ir).  The original cast stays for its
// other readers, if any.  Backward nodes only: autodiff never differentiates
// them, whereas in a forward graph the rewrite would change the gradient --
// expand's gradient would sum 16-bit copies of the incoming float32 terms
// instead of summing them in float32 and rounding once, as eager does.
ValueId Builder::expand(ValueId v, Ints sizes) {
  if (type(v).sizes == sizes) return v;
  const int32_t d = g_.values[v].node;
  if (phase_ == Phase::Backward && d >= 0 && g_.nodes[static_cast<size_t>(d)].op == OpKind::Cast) {
    const ValueId x = g_.nodes[static_cast<size_t>(d)].inputs[0];
    const DType from = type(x).dtype;
    if ((from == DType::BF16 || from == DType::F16) && type(v).dtype == DType::F32) {
      const ValueId e = op(OpKind::Expand, {x}, Attrs{{"size", sizes}});
      return cast(e, DType::F32);
    }
  }
  return op(OpKind::Expand, {v}, Attrs{{"size", sizes}});
}

ValueId Builder::contiguous(ValueId v) { return type(v).isContiguous() ? v : op(OpKind::Clone, {v}); }

}  // namespace aotc
