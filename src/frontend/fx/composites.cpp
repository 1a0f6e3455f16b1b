//===- fx/composites.cpp - Composite ATen ops torch.export keeps whole ------===//
//
// torch.export's training IR (the dialect `torch.export.export` returns, read
// by the .pt2 front end, Note [pt2 front end]) keeps composite ops whole that a
// dispatcher-level trace (tools/fx_export.py) never sees: linear, conv2d,
// batch_norm, layer_norm, dropout, matmul, einsum, softmax.int, flatten, ...  Each is
// written here over the spellings the tables already have, so one table of
// ATen spellings serves both loaders: a composite either builds its few ops
// directly or rewrites its node into the argument list of the spelling it
// stands for and converts that (delegate, checked by Note [No argument
// dropped] against the inner spelling's schema).
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

namespace {

/// Argument `i` / `kw` of the node as written, or `dflt` when not given.
json given(Converter& c, size_t i, const char* kw, json dflt) {
  const json* a = c.arg(i, kw);
  return a ? *a : dflt;
}

/// Converts the node as `spelling` with arguments `args` (each read from
/// this node through `given`, so every argument of it is accounted for).
V delegate(Converter& c, const std::string& spelling, json args) {
  json node = {{"name", c.node().value("name", "")}, {"target", spelling}, {"args", std::move(args)}};
  Converter inner = c.sub(node);
  V r = convertTarget(inner, spelling);
  c.delegatedTo(inner, spelling);
  return r;
}

/// As delegate, when the rewritten node also reads values this converter
/// made: `made` binds them to names the arguments refer to.
V delegateWith(Converter& c, const std::string& spelling, json args, const Env& made) {
  Env env = c.env();
  for (const auto& [name, v] : made) env[name] = v;
  json node = {{"name", c.node().value("name", "")}, {"target", spelling}, {"args", std::move(args)}};
  Converter inner(c.graph(), node, c.loc(), env, c.noGrad());
  inner.setInBackward(c.inBackward());
  inner.setNames(c.names());
  inner.setComplex(c.complexValues());
  V r = convertTarget(inner, spelling);
  c.delegatedTo(inner, spelling);
  return r;
}

/// cross_entropy_loss(self, target, weight=None, reduction=Mean,
/// ignore_index=-100, label_smoothing=0.0): nll_loss of log_softmax over the
/// class dim (1, or 0 for an unbatched input), class-index targets only.
V crossEntropy(Converter& c) {
  ValueId x = c.tensor(0, "self"), t = c.tensor(1, "target");
  if (isFloating(c.type(t).dtype)) c.fail("cross_entropy with class-probability targets is not supported");
  if (c.number(5, "label_smoothing", 0.0) != 0) c.fail("cross_entropy with label_smoothing is not supported");
  ValueId logp = softmaxLike(c, x, c.type(x).rank() >= 2 ? 1 : 0, true);
  const std::string tmp = "cross_entropy.log_softmax";
  V r = delegateWith(c, "aten.nll_loss_forward.default",
                     json::array({{{"node", tmp}}, given(c, 1, "target", nullptr), given(c, 2, "weight", nullptr),
                                  given(c, 3, "reduction", 1), given(c, 4, "ignore_index", -100)}),
                     Env{{tmp, {logp}}});
  return {r[0]};
}

/// pad(self, pad, mode="constant", value=None): constant_pad_nd, or the
/// reflection / replication padding of the padded dims' count.
V pad(Converter& c) {
  const std::string mode = c.arg(2, "mode") && c.arg(2, "mode")->is_string() ? c.arg(2, "mode")->get<std::string>() : "constant";
  const size_t n = c.ints(1, "pad").size();
  if (mode == "constant") {
    json value = given(c, 3, "value", nullptr);
    return delegate(c, "aten.constant_pad_nd.default",
                    json::array({given(c, 0, "self", nullptr), given(c, 1, "pad", nullptr), value.is_null() ? json(0) : value}));
  }
  if ((mode != "reflect" && mode != "replicate") || n % 2 || n < 2 || n > 6)
    c.fail("pad mode '" + mode + "' over " + std::to_string(n / 2) + " dims is not supported");
  if (c.has(3, "value")) c.fail("pad: a value is only for mode 'constant'");
  const std::string spelling = std::string("aten.") + (mode == "reflect" ? "reflection" : "replication") + "_pad" +
                               std::to_string(n / 2) + "d.default";
  return delegate(c, spelling, json::array({given(c, 0, "self", nullptr), given(c, 1, "pad", nullptr)}));
}

/// linear(input, weight, bias=None): input @ weight^T + bias.
V linear(Converter& c) {
  ValueId x = c.tensor(0, "input"), w = c.tensor(1, "weight");
  if (c.type(w).rank() != 2 && c.type(w).rank() != 1) c.fail("linear: weight must be 1-D or 2-D");
  ValueId y = matmul(c, x, c.type(w).rank() == 2 ? c.op(OpKind::T, {w}) : w);
  if (c.has(2, "bias")) y = bin(c, OpKind::Add, {y, c.tensor(2, "bias")});
  return {y};
}

/// conv1d/2d/3d(input, weight, bias=None, stride=1, padding=0, dilation=1,
/// groups=1): convolution, not transposed.
V convNd(Converter& c, int64_t spatial) {
  if (c.isTensor(4, "padding") || (c.arg(4, "padding") && c.arg(4, "padding")->is_string()))
    c.fail("convolution with a padding string is not supported");
  ValueId w = c.tensor(1, "weight");
  if (c.type(w).rank() != spatial + 2) c.fail(cat("conv", spatial, "d: weight must have ", spatial + 2, " dims"));
  return delegate(c, "aten.convolution.default",
                  json::array({given(c, 0, "input", nullptr), given(c, 1, "weight", nullptr), given(c, 2, "bias", nullptr),
                               given(c, 3, "stride", json::array({1})), given(c, 4, "padding", json::array({0})),
                               given(c, 5, "dilation", json::array({1})), false, json(Ints(static_cast<size_t>(spatial), 0)),
                               given(c, 6, "groups", 1)}));
}

/// conv_transpose1d/2d/3d.input(input, weight, bias=None, stride=1,
/// padding=0, output_padding=0, groups=1, dilation=1): the transposed
/// convolution.
V convTransposeNd(Converter& c, int64_t spatial) {
  ValueId w = c.tensor(1, "weight");
  if (c.type(w).rank() != spatial + 2) c.fail(cat("conv_transpose", spatial, "d: weight must have ", spatial + 2, " dims"));
  return delegate(c, "aten.convolution.default",
                  json::array({given(c, 0, "input", nullptr), given(c, 1, "weight", nullptr), given(c, 2, "bias", nullptr),
                               given(c, 3, "stride", json::array({1})), given(c, 4, "padding", json::array({0})),
                               given(c, 7, "dilation", json::array({1})), true, given(c, 5, "output_padding", json::array({0})),
                               given(c, 6, "groups", 1)}));
}

/// batch_norm(input, weight, bias, running_mean, running_var, training,
/// momentum, eps, cudnn_enabled): native_batch_norm's output.  In training
/// the running statistics are updated in place, as eager does although the
/// schema marks no mutation (native_batch_norm's copy_, functionalized into
/// forward epilogue copies).
V batchNorm(Converter& c) {
  c.ignore(8, "cudnn_enabled");  // which kernel eager picks: the same values
  V r = delegate(c, "aten.native_batch_norm.default",
                 json::array({given(c, 0, "input", nullptr), given(c, 1, "weight", nullptr), given(c, 2, "bias", nullptr),
                              given(c, 3, "running_mean", nullptr), given(c, 4, "running_var", nullptr),
                              given(c, 5, "training", nullptr), given(c, 6, "momentum", nullptr), given(c, 7, "eps", nullptr)}));
  return {r[0]};
}

/// layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5,
/// cudnn_enable=True): native_layer_norm's output.
V layerNorm(Converter& c) {
  c.ignore(5, "cudnn_enable");  // which kernel eager picks: the same values
  V r = delegate(c, "aten.native_layer_norm.default",
                 json::array({given(c, 0, "input", nullptr), given(c, 1, "normalized_shape", nullptr),
                              given(c, 2, "weight", nullptr), given(c, 3, "bias", nullptr), given(c, 4, "eps", 1e-5)}));
  return {r[0]};
}

/// group_norm(input, num_groups, weight=None, bias=None, eps=1e-5,
/// cudnn_enabled=True): native_group_norm over the input's N, C and HxW.
V groupNorm(Converter& c) {
  c.ignore(5, "cudnn_enabled");  // which kernel eager picks: the same values
  ValueId x = c.tensor(0, "input");
  const TensorType t = c.type(x);
  if (t.rank() < 2) c.fail("group_norm expects an input of at least 2 dims");
  int64_t hw = 1;
  for (int64_t d = 2; d < t.rank(); ++d) hw = mulSize(hw, t.sizes[static_cast<size_t>(d)]);
  V r = delegate(c, "aten.native_group_norm.default",
                 json::array({given(c, 0, "input", nullptr), given(c, 2, "weight", nullptr), given(c, 3, "bias", nullptr),
                              t.sizes[0], t.sizes[1], hw, given(c, 1, "num_groups", nullptr), given(c, 4, "eps", 1e-5)}));
  return {r[0]};
}

/// instance_norm(input, weight, bias, running_mean, running_var,
/// use_input_stats, momentum, eps, cudnn_enabled): each (sample, channel)
/// normalized over its spatial elements with a per-channel affine, which is
/// native_group_norm with one group per channel.  With running statistics
/// (track_running_stats=True) eager also updates or reads them: refused.
V instanceNorm(Converter& c) {
  c.ignore(8, "cudnn_enabled");  // which kernel eager picks: the same values
  ValueId x = c.tensor(0, "input");
  const TensorType t = c.type(x);
  if (t.rank() < 3) c.fail("instance_norm expects an input of at least 3 dims [N, C, *]");
  if (c.has(3, "running_mean") || c.has(4, "running_var") || !c.boolean(5, "use_input_stats", true))
    c.fail("instance_norm with running statistics (track_running_stats=True) is not supported");
  c.ignore(6, "momentum");  // only moves running statistics, and there are none
  int64_t hw = 1;
  for (int64_t d = 2; d < t.rank(); ++d) hw = mulSize(hw, t.sizes[static_cast<size_t>(d)]);
  V r = delegate(c, "aten.native_group_norm.default",
                 json::array({given(c, 0, "input", nullptr), given(c, 1, "weight", nullptr), given(c, 2, "bias", nullptr),
                              t.sizes[0], t.sizes[1], hw, t.sizes[1], given(c, 7, "eps", 1e-5)}));
  return {r[0]};
}

/// broadcast_tensors(tensors): each tensor expanded to the shape they all
/// broadcast to (one already of that shape is itself, as eager returns it).
V broadcastTensors(Converter& c) {
  const json* list = c.arg(0, "tensors");
  if (!list || !list->is_array() || list->empty()) c.fail("broadcast_tensors expects a non-empty list of tensors");
  std::vector<ValueId> xs;
  for (size_t i = 0; i < list->size(); ++i) xs.push_back(c.ref((*list)[i], i));
  Ints shape = c.type(xs[0]).sizes;
  for (ValueId x : xs) {
    std::optional<Ints> b = broadcastShapes(shape, c.type(x).sizes);
    if (!b) c.fail("broadcast_tensors: the shapes do not broadcast");
    shape = *b;
  }
  V r;
  for (ValueId x : xs) r.push_back(c.type(x).sizes == shape ? x : c.op(OpKind::Expand, {x}, Attrs{{"size", shape}}));
  return r;
}

/// dropout(input, p, train): the input itself when not training or p == 0
/// (as eager returns it), else native_dropout's output.
V dropout(Converter& c) {
  ValueId x = c.tensor(0, "input");
  if (!c.boolean(2, "train", true) || c.number(1, "p") == 0) return {x};
  return {delegate(c, "aten.native_dropout.default",
                   json::array({given(c, 0, "input", nullptr), given(c, 1, "p", nullptr), given(c, 2, "train", nullptr)}))[0]};
}

/// contiguous(self, memory_format=contiguous_format): self when its layout is
/// already contiguous (eager returns self), else a copy.  The memory format
/// is storage order only: aotc chooses layouts itself.
V contiguous(Converter& c) {
  ValueId x = c.tensor(0, "self");
  c.ignore(1, "memory_format");
  return {c.type(x).isContiguous() ? x : c.op(OpKind::Clone, {x})};
}

/// flatten.using_ints(self, start_dim=0, end_dim=-1).
V flatten(Converter& c) {
  ValueId x = c.tensor(0, "self");
  const Ints s = c.type(x).sizes;
  if (s.empty()) return {reshapeTo(c, x, {1})};
  int64_t a = dimArg(c, 1, "start_dim", x, 0), b = dimArg(c, 2, "end_dim", x, -1);
  if (a > b) c.fail("flatten: start_dim comes after end_dim");
  Ints out(s.begin(), s.begin() + a);
  int64_t n = 1;
  for (int64_t d = a; d <= b; ++d) n = mulSize(n, s[static_cast<size_t>(d)]);
  out.push_back(n);
  out.insert(out.end(), s.begin() + b + 1, s.end());
  return {reshapeTo(c, x, out)};
}

/// unflatten.int(self, dim, sizes): one dim split into `sizes` (one may be -1).
V unflatten(Converter& c) {
  ValueId x = c.tensor(0, "self");
  const Ints s = c.type(x).sizes;
  int64_t d = dimArg(c, 1, "dim", x);
  Ints parts = c.ints(2, "sizes");
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] == -1 && infer < 0) infer = static_cast<int64_t>(i);
    else if (parts[i] < 0) c.fail("unflatten: sizes may hold one -1 and non-negative sizes");
    else known = mulSize(known, parts[i]);
  }
  const int64_t n = s[static_cast<size_t>(d)];
  if (infer >= 0) {
    if (known == 0 || n % known) c.fail(cat("unflatten: ", json(parts).dump(), " cannot split a dim of size ", n));
    parts[static_cast<size_t>(infer)] = n / known;
  } else if (known != n) {
    c.fail(cat("unflatten: ", json(parts).dump(), " does not multiply to the dim's size ", n));
  }
  Ints out(s.begin(), s.begin() + d);
  out.insert(out.end(), parts.begin(), parts.end());
  out.insert(out.end(), s.begin() + d + 1, s.end());
  return {reshapeTo(c, x, out)};
}

/// softmax.int / log_softmax.int(self, dim, dtype=None).
V softmaxInt(Converter& c, bool log) {
  ValueId x = c.tensor(0, "self");
  int64_t dim = dimArg(c, 1, "dim", x);
  if (c.has(2, "dtype")) x = c.cast(x, dtypeArg(c, 2, "dtype", c.type(x).dtype));
  return {softmaxLike(c, x, dim, log)};
}

/// max_pool2d(self, kernel_size, stride=[], padding=0, dilation=1,
/// ceil_mode=False): max_pool2d_with_indices' values.
V maxPool2d(Converter& c) {
  return {delegate(c, "aten.max_pool2d_with_indices.default",
                   json::array({given(c, 0, "self", nullptr), given(c, 1, "kernel_size", nullptr),
                                given(c, 2, "stride", json::array()), given(c, 3, "padding", json::array({0})),
                                given(c, 4, "dilation", json::array({1})), given(c, 5, "ceil_mode", false)}))[0]};
}

/// max_pool1d(self, kernel_size, stride=[], padding=0, dilation=1,
/// ceil_mode=False): max_pool2d_with_indices over [N, C, 1, L] with a window
/// of height 1, the values squeezed back.
V maxPool1d(Converter& c) {
  ValueId x = c.tensor(0, "self");
  if (c.type(x).rank() != 3) c.fail("max_pool1d expects an input [N, C, L]");
  auto one = [&](size_t i, const char* kw, Ints dflt) {
    Ints v = c.has(i, kw) ? c.ints(i, kw) : dflt;
    if (v.size() > 1) c.fail(cat("max_pool1d: ", kw, " must have one value"));
    return v.empty() ? json::array() : json::array({i == 2 ? 1 : i == 3 ? 0 : 1, v[0]});
  };
  const std::string tmp = "max_pool1d.unsqueezed";
  ValueId x4 = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{2}}});
  V r = delegateWith(c, "aten.max_pool2d_with_indices.default",
                     json::array({{{"node", tmp}}, one(1, "kernel_size", {}), one(2, "stride", {}), one(3, "padding", {0}),
                                  one(4, "dilation", {1}), given(c, 5, "ceil_mode", false)}),
                     Env{{tmp, {x4}}});
  return {c.op(OpKind::Squeeze, {r[0]}, Attrs{{"dim", Ints{2}}})};
}

/// max_pool3d(self, kernel_size, stride=[], padding=0, dilation=1,
/// ceil_mode=False): max_pool3d_with_indices' values.
V maxPool3d(Converter& c) {
  return {delegate(c, "aten.max_pool3d_with_indices.default",
                   json::array({given(c, 0, "self", nullptr), given(c, 1, "kernel_size", nullptr),
                                given(c, 2, "stride", json::array()), given(c, 3, "padding", json::array({0})),
                                given(c, 4, "dilation", json::array({1})), given(c, 5, "ceil_mode", false)}))[0]};
}

/// chunk(self, chunks, dim=0): split.Tensor into pieces of ceil(n / chunks).
V chunk(Converter& c) {
  ValueId x = c.tensor(0, "self");
  int64_t chunks = c.integer(1, "chunks"), d = dimArg(c, 2, "dim", x);
  if (chunks <= 0) c.fail("chunk: chunks must be positive");
  const int64_t n = c.type(x).sizes[static_cast<size_t>(d)];
  const int64_t piece = std::max<int64_t>((n + chunks - 1) / chunks, n == 0 ? 0 : 1);
  return delegate(c, "aten.split.Tensor", json::array({given(c, 0, "self", nullptr), piece, d}));
}

/// tensor_split.indices(self, indices, dim=0): the pieces between
/// consecutive indices (clamped to the dim's size), as split_with_sizes.
V tensorSplit(Converter& c) {
  ValueId x = c.tensor(0, "self");
  const int64_t d = dimArg(c, 2, "dim", x, 0);
  const int64_t n = c.type(x).sizes[static_cast<size_t>(d)];
  Ints sizes;
  int64_t at = 0;
  for (int64_t i : c.ints(1, "indices")) {
    if (i < at) c.fail("tensor_split: indices must be non-negative and non-decreasing");
    i = std::min(i, n);
    sizes.push_back(i - at);
    at = i;
  }
  sizes.push_back(n - at);
  return delegate(c, "aten.split_with_sizes.default", json::array({given(c, 0, "self", nullptr), json(sizes), d}));
}

/// to.dtype(self, dtype, non_blocking=False, copy=False, memory_format=None):
/// self when nothing changes and no copy is asked for, else a cast copy.
V toDtype(Converter& c) {
  ValueId x = c.tensor(0, "self");
  DType d = dtypeArg(c, 1, "dtype", c.type(x).dtype);
  c.ignore(2, "non_blocking");   // a stream hint: the same values
  c.ignore(4, "memory_format");  // storage order only
  if (d == c.type(x).dtype) return {c.boolean(3, "copy", false) ? c.op(OpKind::Clone, {x}) : x};
  c.boolean(3, "copy", false);
  return {c.cast(x, d)};
}

/// einsum(equation, tensors, *, path=None): decomp::einsum (Note [Einsum]).
/// `path` (opt_einsum's contraction order) only reorders the same sums:
/// aotc contracts left to right whatever it says.
V einsumOp(Converter& c) {
  const json* eq = c.arg(0, "equation");
  if (!eq || !eq->is_string()) c.fail("einsum expects an equation string");
  const json* list = c.arg(1, "tensors");
  if (!list || !list->is_array() || list->empty()) c.fail("einsum expects a non-empty list of tensors");
  std::vector<ValueId> xs;
  for (size_t i = 0; i < list->size(); ++i) xs.push_back(c.ref((*list)[i], i));
  c.ignore(2, "path");
  return {einsum(c, eq->get<std::string>(), xs, "einsum")};
}

}  // namespace

Entries compositesConverters() {
  return {
    {"aten.linear.default", linear},
    {"aten.conv1d.default", [](Converter& c) { return convNd(c, 1); }},
    {"aten.conv2d.default", [](Converter& c) { return convNd(c, 2); }},
    {"aten.conv3d.default", [](Converter& c) { return convNd(c, 3); }},
    {"aten.batch_norm.default", batchNorm},
    {"aten._native_batch_norm_legit_functional.default", [](Converter& c) { return batchNormOf(c, true); }},
    {"aten.layer_norm.default", layerNorm},
    {"aten.group_norm.default", groupNorm},
    {"aten.instance_norm.default", instanceNorm},
    {"aten.conv_transpose1d.default", [](Converter& c) { return convTransposeNd(c, 1); }},
    {"aten.conv_transpose2d.input", [](Converter& c) { return convTransposeNd(c, 2); }},
    {"aten.conv_transpose3d.input", [](Converter& c) { return convTransposeNd(c, 3); }},
    {"aten.max_pool1d.default", maxPool1d},
    {"aten.max_pool3d.default", maxPool3d},
    {"aten.tensor_split.indices", tensorSplit},
    {"aten.swapaxes.default",
     [](Converter& c) -> V {
       return {c.op(OpKind::Transpose, {c.tensor(0, "self")}, Attrs{{"dim0", c.integer(1, "axis0")}, {"dim1", c.integer(2, "axis1")}})};
     }},
    {"aten.expand_as.default",
     [](Converter& c) -> V { return {c.op(OpKind::Expand, {c.tensor(0, "self")}, Attrs{{"size", c.type(c.tensor(1, "other")).sizes}})}; }},
    {"aten.broadcast_tensors.default", broadcastTensors},
    {"aten.dropout.default", dropout},
    {"aten.contiguous.default", contiguous},
    {"aten.flatten.using_ints", flatten},
    {"aten.unflatten.int", unflatten},
    {"aten.einsum.default", einsumOp},
    {"aten.matmul.default", [](Converter& c) -> V { return {matmul(c, c.tensor(0, "self"), c.tensor(1, "other"))}; }},
    {"aten.softmax.int", [](Converter& c) { return softmaxInt(c, false); }},
    {"aten.log_softmax.int", [](Converter& c) { return softmaxInt(c, true); }},
    {"aten.max_pool2d.default", maxPool2d},
    {"aten.chunk.default", chunk},
    {"aten.to.dtype", toDtype},
    {"aten.cross_entropy_loss.default", crossEntropy},
    {"aten.pad.default", pad},
    {"aten.type_as.default", [](Converter& c) -> V { return {c.cast(c.tensor(0, "self"), c.type(c.tensor(1, "other")).dtype)}; }},
  };
}

}  // namespace aotc::fx
