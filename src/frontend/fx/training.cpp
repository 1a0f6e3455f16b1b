//===- fx/training.cpp - Backward ops ---------------------------------------===//
//
// The *_backward spellings that appear in graphs traced with their backward
// (aot_autograd joint graphs): pooling, convolution, losses, embedding and
// normalization backward, written as the forward ops' adjoints.
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

namespace {

/// native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd,
/// weight?, bias?, output_mask): ATen's formulas.
V layerNormBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_out"), x = c.tensor(1, "input");
  Ints shape = c.ints(2, "normalized_shape");
  ValueId mean = c.tensor(3, "mean"), rstd = c.tensor(4, "rstd");
  ValueId w = c.has(5, "weight") ? c.tensor(5, "weight") : kNoValue;
  const TensorType t = c.type(x);
  int64_t r = t.rank(), k = static_cast<int64_t>(shape.size());
  Ints inner, outer;
  double N = 1;
  for (int64_t d = 0; d < r; ++d) (d >= r - k ? inner : outer).push_back(d);
  for (int64_t d : inner) N *= static_cast<double>(t.sizes[static_cast<size_t>(d)]);
  ValueId xhat = bin(c, OpKind::Mul, {bin(c, OpKind::Sub, {x, mean}), rstd});
  ValueId gw = w == kNoValue ? go : bin(c, OpKind::Mul, {go, w});
  ValueId s1 = reduceOp(c, OpKind::Sum, gw, inner, true);
  ValueId s2 = reduceOp(c, OpKind::Sum, bin(c, OpKind::Mul, {gw, xhat}), inner, true);
  ValueId t1 = bin(c, OpKind::Sub, {c.scaled(gw, N), s1});
  ValueId t2 = bin(c, OpKind::Sub, {t1, bin(c, OpKind::Mul, {xhat, s2})});
  ValueId gx = bin(c, OpKind::Mul, {t2, bin(c, OpKind::Div, {rstd, sc(c, N, rstd)})});
  const json* mask = c.arg(7, "output_mask");
  auto want = [&](size_t i) { return !mask || !mask->is_array() || i >= mask->size() || !(*mask)[i].is_boolean() || (*mask)[i].get<bool>(); };
  V out{want(0) ? gx : constantLike(c, 0.0, t)};
  Ints ws(t.sizes.end() - k, t.sizes.end());
  if (w != kNoValue && want(1)) out.push_back(reduceOp(c, OpKind::Sum, bin(c, OpKind::Mul, {go, xhat}), outer, false));
  else out.push_back(constantLike(c, 0.0, TensorType::contiguous(t.dtype, ws)));
  if (c.has(6, "bias") && want(2)) out.push_back(reduceOp(c, OpKind::Sum, go, outer, false));
  else out.push_back(constantLike(c, 0.0, TensorType::contiguous(t.dtype, ws)));
  return out;
}

/// native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C,
/// HxW, group, output_mask): layer norm's backward formula per (sample,
/// group), over [N, G, C/G, HxW].
V groupNormBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_out"), x = c.tensor(1, "input");
  ValueId mean = c.tensor(2, "mean"), rstd = c.tensor(3, "rstd");
  ValueId w = c.has(4, "weight") ? c.tensor(4, "weight") : kNoValue;
  int64_t N = c.integer(5, "N"), C = c.integer(6, "C"), HW = c.integer(7, "HxW"), G = c.integer(8, "group");
  const TensorType t = c.type(x);
  if (G <= 0 || C % G) c.fail("native_group_norm_backward: channels must divide into groups");
  if (t.numel() != N * C * HW || c.type(go).sizes != t.sizes)
    c.fail("native_group_norm_backward: grad_out and input must be [N, C, *] with N*C*HxW elements");
  if (c.type(mean).numel() != N * G || c.type(rstd).numel() != N * G) c.fail("native_group_norm_backward: mean and rstd must have N*group elements");
  const Ints g4{N, G, C / G, HW};
  ValueId xg = reshapeTo(c, x, g4), gog = reshapeTo(c, go, g4);
  ValueId mg = reshapeTo(c, mean, {N, G, 1, 1}), rg = reshapeTo(c, rstd, {N, G, 1, 1});
  ValueId xhat = bin(c, OpKind::Mul, {bin(c, OpKind::Sub, {xg, mg}), rg});
  ValueId gw = w == kNoValue ? gog : bin(c, OpKind::Mul, {gog, reshapeTo(c, w, {1, G, C / G, 1})});
  const double K = static_cast<double>((C / G) * HW);
  ValueId s1 = reduceOp(c, OpKind::Sum, gw, {2, 3}, true);
  ValueId s2 = reduceOp(c, OpKind::Sum, bin(c, OpKind::Mul, {gw, xhat}), {2, 3}, true);
  ValueId t1 = bin(c, OpKind::Sub, {c.scaled(gw, K), s1});
  ValueId t2 = bin(c, OpKind::Sub, {t1, bin(c, OpKind::Mul, {xhat, s2})});
  ValueId gx = reshapeTo(c, bin(c, OpKind::Mul, {t2, bin(c, OpKind::Div, {rg, sc(c, K, rg)})}), t.sizes);
  const json* mask = c.arg(9, "output_mask");
  auto want = [&](size_t i) { return !mask || !mask->is_array() || i >= mask->size() || !(*mask)[i].is_boolean() || (*mask)[i].get<bool>(); };
  const TensorType perChannel = TensorType::contiguous(t.dtype, {C});
  V out{want(0) ? gx : constantLike(c, 0.0, t)};
  if (want(1)) out.push_back(reshapeTo(c, reduceOp(c, OpKind::Sum, bin(c, OpKind::Mul, {gog, xhat}), {0, 3}, false), {C}));
  else out.push_back(constantLike(c, 0.0, perChannel));
  if (want(2)) out.push_back(reshapeTo(c, reduceOp(c, OpKind::Sum, gog, {0, 3}, false), {C}));
  else out.push_back(constantLike(c, 0.0, perChannel));
  return out;
}

/// The *_backward ops a forward can contain (torch.autograd.grad inside the
/// program): each is the op aotc's own gradient rules emit.
V avgPoolBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_output"), x = c.tensor(1, "self");
  Attrs a{{"kernel", c.ints(2, "kernel_size")}, {"stride", c.ints(3, "stride", Ints{})}, {"padding", c.ints(4, "padding", Ints{0})},
          {"ceil_mode", c.boolean(5, "ceil_mode", false)}, {"count_include_pad", c.boolean(6, "count_include_pad", true)},
          {"input_size", c.type(x).sizes}};
  if (c.has(7, "divisor_override")) a["divisor"] = c.integer(7, "divisor_override");
  return {c.op(OpKind::AvgPool2dBackward, {c.type(go).isContiguous() ? go : c.op(OpKind::Clone, {go})}, a)};
}

V maxPoolBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_output"), x = c.tensor(1, "self"), idx = c.tensor(7, "indices");
  Attrs a{{"kernel", c.ints(2, "kernel_size")}, {"stride", c.ints(3, "stride", Ints{})}, {"padding", c.ints(4, "padding", Ints{0})},
          {"dilation", c.ints(5, "dilation", Ints{1})}, {"ceil_mode", c.boolean(6, "ceil_mode", false)}, {"input_size", c.type(x).sizes}};
  ValueId goc = c.type(go).isContiguous() ? go : c.op(OpKind::Clone, {go});
  return {c.op(OpKind::MaxPool2dBackward, {goc, idx}, a)};
}

/// adaptive_max_pool2d_backward(grad_output, self, indices): each gradient
/// added at its window's maximum (indices into H * W, as the forward's).
V adaptiveMaxPoolBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_output"), x = c.tensor(1, "self"), idx = c.tensor(2, "indices");
  const Ints xs = c.type(x).sizes, gs = c.type(go).sizes;
  if ((xs.size() != 3 && xs.size() != 4) || gs.size() != xs.size() || c.type(idx).sizes != gs)
    c.fail("adaptive_max_pool2d_backward: expects a 3-D or 4-D input and grad_output and indices of one shape");
  const size_t r = xs.size();
  Ints lead(xs.begin(), xs.end() - 2);
  Ints flatIn = lead, flatOut = lead;
  flatIn.push_back(xs[r - 2] * xs[r - 1]);
  flatOut.push_back(gs[r - 2] * gs[r - 1]);
  ValueId zeros = constantLike(c, 0.0, TensorType::contiguous(c.type(go).dtype, flatIn));
  ValueId sum = c.op(OpKind::ScatterAdd, {zeros, reshapeTo(c, idx, flatOut), reshapeTo(c, go, flatOut)},
                     Attrs{{"dim", static_cast<int64_t>(r - 2)}});
  return {reshapeTo(c, sum, xs)};
}

V adaptiveAvgPoolBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_output"), x = c.tensor(1, "self");
  ValueId goc = c.type(go).isContiguous() ? go : c.op(OpKind::Clone, {go});
  return {c.op(OpKind::AdaptiveAvgPool2dBackward, {goc}, Attrs{{"input_size", c.type(x).sizes}})};
}

/// convolution_backward(grad_output, input, weight, bias_sizes, stride,
/// padding, dilation, transposed, output_padding, groups, output_mask).
V convolutionBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_output"), x = c.tensor(1, "input"), w = c.tensor(2, "weight");
  if (c.boolean(7, "transposed", false)) c.fail("convolution_backward of a transposed convolution is not supported yet");
  c.ignore(8, "output_padding");  // ATen reads it only for a transposed convolution, refused above
  if (c.type(x).rank() != 4) c.fail("convolution_backward: only 2-D convolution is supported");
  Attrs a{{"stride", c.ints(4, "stride")}, {"padding", c.ints(5, "padding")}, {"dilation", c.ints(6, "dilation")},
          {"groups", c.integer(9, "groups", 1)}};
  const json* mask = c.arg(10, "output_mask");
  auto want = [&](size_t i) { return !mask || !mask->is_array() || i >= mask->size() || !(*mask)[i].is_boolean() || (*mask)[i].get<bool>(); };
  ValueId goc = c.type(go).isContiguous() ? go : c.op(OpKind::Clone, {go});
  V out;
  Attrs ai = a, aw = a;
  ai["input_size"] = c.type(x).sizes;
  aw["weight_size"] = c.type(w).sizes;
  ValueId wc = c.type(w).isContiguous() ? w : c.op(OpKind::Clone, {w});
  ValueId xc = c.type(x).isContiguous() ? x : c.op(OpKind::Clone, {x});
  out.push_back(want(0) ? c.op(OpKind::Conv2dBackwardInput, {goc, wc}, ai) : constantLike(c, 0.0, c.type(x)));
  out.push_back(want(1) ? c.op(OpKind::Conv2dBackwardWeight, {goc, xc}, aw) : constantLike(c, 0.0, c.type(w)));
  Ints bias = c.has(3, "bias_sizes") ? c.ints(3, "bias_sizes") : Ints{c.type(w).sizes[0]};
  out.push_back(want(2) ? reduceOp(c, OpKind::Sum, goc, {0, 2, 3}, false)
                        : constantLike(c, 0.0, TensorType::contiguous(c.type(go).dtype, bias)));
  return out;
}

/// mse_loss_backward(grad_output, self, target, reduction) = 2 (x - t) go [/ n].
V mseLossBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_output"), x = c.tensor(1, "self"), t = c.tensor(2, "target");
  int64_t red = c.integer(3, "reduction", 1);
  double k = red == 1 ? 2.0 / static_cast<double>(std::max<int64_t>(c.type(x).numel(), 1)) : 2.0;
  ValueId d = bin(c, OpKind::Sub, {x, t});
  ValueId r = bin(c, OpKind::Mul, {c.scaled(d, k), go});
  if (c.type(r).sizes != c.type(x).sizes) r = c.op(OpKind::Expand, {r}, Attrs{{"size", c.type(x).sizes}});
  return {r};
}

/// embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq).
V embeddingBackward(Converter& c) {
  ValueId go = c.tensor(0, "grad_output"), idx = c.tensor(1, "indices");
  int64_t n = c.integer(2, "num_weights"), pad = c.integer(3, "padding_idx", -1);
  if (c.boolean(4, "scale_grad_by_freq", false)) c.fail("embedding backward with scale_grad_by_freq is not supported yet");
  const TensorType gt = c.type(go);
  int64_t D = gt.sizes.empty() ? 1 : gt.sizes.back(), m = c.type(idx).numel();
  ValueId flatIdx = reshapeTo(c, idx, {m});
  if (c.type(flatIdx).dtype != DType::I64) flatIdx = c.op(OpKind::Cast, {flatIdx}, Attrs{{"dtype", std::string("i64")}});
  ValueId g2 = reshapeTo(c, go, {m, D});
  if (pad >= 0) {
    ValueId keep = bin(c, OpKind::Ne, {flatIdx, c.scalar(static_cast<double>(pad), DType::I64)});
    ValueId k2 = c.op(OpKind::View, {keep}, Attrs{{"size", Ints{m, 1}}});
    g2 = c.op(OpKind::Where, {k2, g2, sc(c, 0.0, g2)});
  }
  ValueId zeros = constantLike(c, 0.0, TensorType::contiguous(gt.dtype, {n, D}));
  return {c.op(OpKind::IndexAdd, {zeros, flatIdx, g2}, Attrs{{"dim", int64_t{0}}})};
}

}  // namespace

Entries trainingConverters() {
  return {
    {"aten.avg_pool2d_backward.default", avgPoolBackward},
    {"aten.max_pool2d_with_indices_backward.default", maxPoolBackward},
    {"aten._adaptive_avg_pool2d_backward.default", adaptiveAvgPoolBackward},
    {"aten.adaptive_max_pool2d_backward.default", adaptiveMaxPoolBackward},
    {"aten.convolution_backward.default", convolutionBackward},
    {"aten.mse_loss_backward.default", mseLossBackward},
    {"aten.binary_cross_entropy_backward.default",
     [](Converter& c) -> V {
       ValueId w = c.has(3, "weight") ? c.tensor(3, "weight") : kNoValue;
       return {binaryCrossEntropyBackward(c, c.tensor(0, "grad_output"), c.tensor(1, "self"), c.tensor(2, "target"), w,
                                          c.integer(4, "reduction", 1))};
     }},
    {"aten.threshold_backward.default",
     [](Converter& c) -> V { return {thresholdBackward(c, c.tensor(0, "grad_output"), c.tensor(1, "self"), c.number(2, "threshold"))}; }},
    {"aten.hardshrink_backward.default",
     [](Converter& c) -> V { return {shrinkBackward(c, c.tensor(0, "grad_out"), c.tensor(1, "self"), c.number(2, "lambd"))}; }},
    {"aten.softshrink_backward.default",
     [](Converter& c) -> V { return {shrinkBackward(c, c.tensor(0, "grad_output"), c.tensor(1, "self"), c.number(2, "lambd"))}; }},
    {"aten.logit_backward.default",
     [](Converter& c) -> V { return {logitBackward(c, c.tensor(0, "grad_output"), c.tensor(1, "self"), optNumber(c, 2, "eps"))}; }},
    {"aten.embedding_dense_backward.default", embeddingBackward},
    {"aten.native_layer_norm_backward.default", layerNormBackward},
    {"aten.native_group_norm_backward.default", groupNormBackward},
  };
}

}  // namespace aotc::fx
