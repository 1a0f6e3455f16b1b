//===- decompose_windows.cpp - Convolution in 1, 2 and 3 dims --------------===//
//
// Note [Decompositions] (decompose.h): ATen's convolution (1-D as 2-D over a
// unit height, 2-D as conv2d or its adjoint conv2d_backward_input for the
// transposed form, 3-D by conv3d and convTranspose3d, Note [3-D
// convolution]), with its arguments as C++ values.
//===----------------------------------------------------------------------===//
#include "aotc/ops/decompose.h"

namespace aotc::decomp {

namespace {

/// A 3-D convolution argument of 1 or 3 values as 3.
Ints triple(Builder& c, Ints v, const char* kw) {
  if (v.size() == 1) v = {v[0], v[0], v[0]};
  if (!v.empty() && v.size() != 3) c.fail(cat("convolution: ", kw, " must have 1 or 3 values"));
  return v;
}

ValueId convolution3d(Builder& c, ValueId x, ValueId w, ValueId bias, const Convolution& a) {
  Ints stride = triple(c, a.stride, "stride"), padding = triple(c, a.padding, "padding"), dilation = triple(c, a.dilation, "dilation");
  ValueId y;
  int64_t outChannels;
  if (a.transposed) {
    Ints op = triple(c, a.outputPadding, "output_padding");
    y = convTranspose3d(c, x, w, stride, dilation, op, a.groups);
    outChannels = c.type(y).sizes[1];
    for (int64_t k = 0; k < 3; ++k) {
      if (!padding[static_cast<size_t>(k)]) continue;
      const int64_t n = c.type(y).sizes[static_cast<size_t>(2 + k)], p = padding[static_cast<size_t>(k)];
      if (2 * p >= n) c.fail("transposed convolution: the padding crops the whole output");
      y = c.op(OpKind::Slice, {y}, Attrs{{"dim", 2 + k}, {"start", p}, {"end", n - p}, {"step", int64_t{1}}});
    }
  } else {
    y = conv3d(c, x, w, stride, padding, dilation, a.groups);
    outChannels = c.type(w).sizes[0];
  }
  if (bias != kNoValue) y = bin(c, OpKind::Add, {y, c.op(OpKind::View, {bias}, Attrs{{"size", Ints{1, outChannels, 1, 1, 1}}})});
  return y;
}

}  // namespace

ValueId convolution(Builder& c, ValueId x, ValueId w, ValueId bias, const Convolution& a) {
  int64_t rank = c.type(x).rank();
  if (rank != 5 && rank != 4 && rank != 3) c.fail("only 1-D, 2-D and 3-D convolution (3-D, 4-D or 5-D input) are supported");
  if (c.type(w).rank() != rank) c.fail("convolution: weight and input ranks differ");
  if (rank == 5) return convolution3d(c, x, w, bias, a);
  bool oneD = rank == 3;
  auto two = [&](Ints v, const char* kw) {
    if (v.size() == 1 && !oneD) v.push_back(v[0]);
    if (oneD) {
      if (v.size() != 1) c.fail(cat("convolution: ", kw, " must have 1 value for a 1-D convolution"));
      v.insert(v.begin(), kw[0] == 's' || kw[0] == 'd' ? 1 : 0);
    }
    if (v.size() != 2) c.fail(cat("convolution: ", kw, " must have 2 values"));
    return v;
  };
  Ints stride = two(a.stride, "stride"), padding = two(a.padding, "padding"), dilation = two(a.dilation, "dilation");
  const int64_t groups = a.groups;
  if (oneD) {
    x = c.op(OpKind::Unsqueeze, {x}, Attrs{{"dim", int64_t{2}}});
    w = c.op(OpKind::Unsqueeze, {w}, Attrs{{"dim", int64_t{2}}});
  }
  Attrs at{{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
  ValueId y;
  int64_t outChannels;
  if (a.transposed) {
    Ints op = two(a.outputPadding, "output_padding");
    const TensorType xt = c.type(x), wt = c.type(w);
    if (groups <= 0 || xt.sizes[1] != wt.sizes[0]) c.fail("transposed convolution: input channels do not match the weight");
    outChannels = wt.sizes[1] * groups;
    Ints in{xt.sizes[0], outChannels, 0, 0};
    for (size_t d = 0; d < 2; ++d) {
      if (op[d] < 0 || (op[d] >= stride[d] && op[d] >= dilation[d]))
        c.fail("transposed convolution: output_padding must be smaller than stride or dilation");
      in[2 + d] = addSize(addSize(mulSize(xt.sizes[2 + d] - 1, stride[d]), -2 * padding[d]),
                          addSize(mulSize(dilation[d], wt.sizes[2 + d] - 1), op[d] + 1));
      if (in[2 + d] <= 0) c.fail("transposed convolution: the output is empty");
    }
    at["input_size"] = in;
    ValueId xc = c.type(x).isContiguous() ? x : c.op(OpKind::Clone, {x});
    ValueId wc = c.type(w).isContiguous() ? w : c.op(OpKind::Clone, {w});
    y = c.op(OpKind::Conv2dBackwardInput, {xc, wc}, at);
  } else {
    y = c.op(OpKind::Conv2d, {x, w}, at);
    outChannels = c.type(w).sizes[0];
  }
  if (bias != kNoValue) {
    Ints bshape{1, outChannels, 1, 1};
    y = bin(c, OpKind::Add, {y, c.op(OpKind::View, {bias}, Attrs{{"size", bshape}})});
  }
  if (oneD) y = c.op(OpKind::Squeeze, {y}, Attrs{{"dim", Ints{2}}});
  return y;
}

}  // namespace aotc::decomp
