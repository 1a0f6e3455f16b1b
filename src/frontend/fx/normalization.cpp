//===- fx/normalization.cpp - Batch, layer and group norm -------------------===//
//
// The native_* normalization spellings, decomposed into primitive ops so their
// gradients are autodiff's.
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

/// native_batch_norm(input, weight?, bias?, running_mean?, running_var?,
/// training, momentum, eps) -> (out, save_mean, save_invstd), decomposed
/// into primitive ops so its gradient is autodiff's; in training the running
/// statistics are updated in place (copy_), which functionalize turns into
/// forward epilogue copies.  Statistics use the biased variance for
/// normalization and the unbiased one for running_var, as ATen does.
/// `functional` (_native_batch_norm_legit_functional, torch.export's Core
/// ATen): nothing is written; the new running statistics are results 3 and 4.
V batchNormOf(Converter& c, bool functional) {
  ValueId x = c.tensor(0, "input");
  TensorType xt = c.type(x);
  if (xt.rank() < 2) c.fail("batch_norm expects an input of at least 2 dims");
  auto opt = [&](size_t i, const char* kw) { return c.has(i, kw) ? c.tensor(i, kw) : kNoValue; };
  ValueId w = opt(1, "weight"), b = opt(2, "bias"), rm = opt(3, "running_mean"), rv = opt(4, "running_var");
  bool training = c.boolean(5, "training", false);
  double momentum = c.number(6, "momentum", 0.1), eps = c.number(7, "eps", 1e-5);
  int64_t C = xt.sizes[1];
  Ints dims{0}, bshape(static_cast<size_t>(xt.rank()), 1);
  for (int64_t d = 2; d < xt.rank(); ++d) dims.push_back(d);
  bshape[1] = C;
  // Note [Mixed batch norm]: a 16-bit input with float32 weights or
  // statistics (CUDA autocast, cuDNN's kernel) computes in float32 and
  // returns the input's dtype; the saved statistics are float32.
  const DType xdt = xt.dtype;
  bool mixed = false;
  for (ValueId v : {w, b, rm, rv}) mixed = mixed || (v != kNoValue && (xdt == DType::F16 || xdt == DType::BF16) && c.type(v).dtype == DType::F32);
  if (mixed) x = c.cast(x, DType::F32);
  DType dt = mixed ? DType::F32 : xt.dtype;
  auto bcast = [&](ValueId v) { return c.op(OpKind::View, {v}, Attrs{{"size", bshape}}); };
  auto sc = [&](double v) { return c.scalar(v, dt); };
  ValueId mean, var, invstd;
  if (training) {
    mean = c.op(OpKind::Mean, {x}, Attrs{{"dim", dims}, {"keepdim", false}});
    ValueId xc = centred(c, x, bcast(mean));  // Note [Detached centre]
    var = c.op(OpKind::Mean, {c.op(OpKind::Mul, {xc, xc})}, Attrs{{"dim", dims}, {"keepdim", false}});
  } else {
    if (rm == kNoValue || rv == kNoValue) c.fail("batch_norm in eval mode needs running_mean and running_var");
    mean = rm;
    var = rv;
  }
  invstd = c.op(OpKind::Rsqrt, {c.op(OpKind::Add, {var, sc(eps)})});
  ValueId out = c.op(OpKind::Mul, {c.op(OpKind::Sub, {x, bcast(mean)}), bcast(invstd)});
  if (w != kNoValue) out = c.op(OpKind::Mul, {out, bcast(w)});
  if (b != kNoValue) out = c.op(OpKind::Add, {out, bcast(b)});
  if (training) {
    const int64_t n = xt.numel() / std::max<int64_t>(C, 1);
    auto update = [&](ValueId running, ValueId stat, bool unbiased) -> ValueId {
      if (running == kNoValue) return kNoValue;
      // The unbiased variance scales by n / (n - 1): a size scalar (Note [Size scalars]).
      auto factor = [&] { return unbiased && n > 1 ? c.sizeScalar(momentum, n, n - 1, dt) : sc(momentum * 1.0); };
      ValueId s = c.op(OpKind::Mul, {c.op(OpKind::Detach, {stat}), factor()});
      ValueId keep = c.op(OpKind::Mul, {running, sc(1.0 - momentum)});
      ValueId updated = c.op(OpKind::Add, {keep, s});
      if (!functional) c.op(OpKind::CopyInplace, {running, updated});
      return updated;
    };
    ValueId newMean = update(rm, mean, false), newVar = update(rv, var, true);
    V r{mixed ? c.cast(out, xdt) : out, mean, invstd};
    if (functional) r.insert(r.end(), {newMean, newVar});
    return r;
  }
  TensorType empty = TensorType::contiguous(dt, {0});
  V r{mixed ? c.cast(out, xdt) : out, constantLike(c, 0.0, empty), constantLike(c, 0.0, empty)};
  if (functional) r.insert(r.end(), {rm, rv});  // eval: the statistics unchanged
  return r;
}

namespace {

V batchNorm(Converter& c) { return batchNormOf(c, false); }

V layerNorm(Converter& c) {
  ValueId x = c.tensor(0, "input");
  Ints shape = c.ints(1, "normalized_shape");
  ValueId w = c.has(2, "weight") ? c.tensor(2, "weight") : kNoValue, b = c.has(3, "bias") ? c.tensor(3, "bias") : kNoValue;
  double eps = c.number(4, "eps", 1e-5);
  int64_t r = c.type(x).rank();
  Ints dims;
  for (int64_t d = r - static_cast<int64_t>(shape.size()); d < r; ++d) dims.push_back(d);
  Normalized n = normalize(c, x, dims, eps);
  ValueId out = n.y;
  if (w != kNoValue) out = bin(c, OpKind::Mul, {out, w});
  if (b != kNoValue) out = bin(c, OpKind::Add, {out, b});
  return {out, n.mean, n.rstd};
}

V groupNorm(Converter& c) {
  ValueId x = c.tensor(0, "input");
  ValueId w = c.has(1, "weight") ? c.tensor(1, "weight") : kNoValue, b = c.has(2, "bias") ? c.tensor(2, "bias") : kNoValue;
  int64_t N = c.integer(3, "N"), C = c.integer(4, "C"), HxW = c.integer(5, "HxW");
  int64_t G = c.integer(6, "group");
  double eps = c.number(7, "eps", 1e-5);
  if (G <= 0 || C % G) c.fail("group_norm: channels must divide into groups");
  if (mulSize(mulSize(N, C), HxW) != c.type(x).numel()) c.fail("group_norm: N * C * HxW is not the input's number of elements");
  Ints shape = c.type(x).sizes;
  Normalized n = normalize(c, reshapeTo(c, x, {N, G, -1}), {2}, eps);
  ValueId mean = n.mean, rstd = n.rstd;
  ValueId out = c.op(OpKind::View, {n.y}, Attrs{{"size", shape}});
  Ints bshape(shape.size(), 1);
  bshape[1] = C;
  if (w != kNoValue) out = bin(c, OpKind::Mul, {out, c.op(OpKind::View, {w}, Attrs{{"size", bshape}})});
  if (b != kNoValue) out = bin(c, OpKind::Add, {out, c.op(OpKind::View, {b}, Attrs{{"size", bshape}})});
  return {out, c.op(OpKind::View, {mean}, Attrs{{"size", Ints{N, G}}}), c.op(OpKind::View, {rstd}, Attrs{{"size", Ints{N, G}}})};
}

/// _native_batch_norm_legit_no_training(input, weight, bias, running_mean,
/// running_var, momentum, eps) and _native_batch_norm_legit.no_stats(input,
/// weight, bias, training, momentum, eps): native_batch_norm's arguments
/// with the missing ones filled in.
V batchNormVariant(Converter& c, bool noStats) {
  json node = c.node();
  json& args = node["args"];
  if (!args.is_array()) c.fail("malformed arguments");
  if (noStats) {
    if (args.size() > 3) args.insert(args.begin() + 3, {json(nullptr), json(nullptr)});
    else node["kwargs"]["running_mean"] = nullptr;
  } else {
    if (args.size() >= 5) args.insert(args.begin() + 5, json(false));
    else node["kwargs"]["training"] = false;
  }
  Converter v(c.graph(), node, c.loc(), c.env(), c.noGrad());
  v.setInBackward(c.inBackward());
  v.setNames(c.names());
  V r = batchNorm(v);
  c.delegatedTo(v, "aten.native_batch_norm.default");
  return r;
}

}  // namespace

Entries normalizationConverters() {
  return {
    {"aten.native_batch_norm.default", batchNorm},
    {"aten._native_batch_norm_legit.default", batchNorm},
    {"aten.native_layer_norm.default", layerNorm},
    {"aten.native_group_norm.default", groupNorm},
    {"aten._native_batch_norm_legit_no_training.default", [](Converter& c) { return batchNormVariant(c, false); }},
    {"aten._native_batch_norm_legit.no_stats", [](Converter& c) { return batchNormVariant(c, true); }},
  };
}

}  // namespace aotc::fx
