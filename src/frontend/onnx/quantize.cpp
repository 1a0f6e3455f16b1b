//===- onnx/quantize.cpp - Linear quantization ------------------------------===//
//
// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear to and from the
// 8- and 16-bit integer types, as ONNX's reference computes them: x / scale
// in the wider of the two float types (or `precision`), rounded half to even,
// plus the zero point, saturated to the type's range; (x - zero point) *
// scale in float32, cast to the output type.  Scales and zero points per
// tensor, per axis, or per block of block_size along the axis.  The
// float8/float4/int4/int2 types are refused by name (dtypeOfOnnx).
// MatMulInteger and QLinearMatMul: the 8-bit product exactly in float64.
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

namespace {

bool quantType(DType d) { return d == DType::I8 || d == DType::U8 || d == DType::I16 || d == DType::U16; }

std::pair<double, double> quantRange(DType d) {
  switch (d) {
    case DType::I8: return {-128, 127};
    case DType::U8: return {0, 255};
    case DType::I16: return {-32768, 32767};
    default: return {0, 65535};
  }
}

/// A scale or zero point broadcast against x: a scalar (or one element), a
/// vector along `axis`, or (block_size > 0) blocks along `axis` repeated
/// block_size times and cut to x's extent.
ValueId spread(Node& c, ValueId v, const Ints& xs, int64_t axis, int64_t block) {
  const Ints vs = c.type(v).sizes;
  int64_t rank = static_cast<int64_t>(xs.size());
  if (c.type(v).numel() == 1 && block == 0) return c.reshape(v, Ints(xs.size(), 1));
  axis = c.axis(axis, rank);  // only per-axis and blocked scales read it
  if (block == 0) {
    if (vs.size() != 1 || vs[0] != xs[static_cast<size_t>(axis)]) c.fail(cat("a per-axis scale or zero point must have ", xs[static_cast<size_t>(axis)], " elements"));
    Ints shape(xs.size(), 1);
    shape[static_cast<size_t>(axis)] = vs[0];
    return c.reshape(v, shape);
  }
  if (block < 0) c.fail("block_size must be positive");
  if (static_cast<int64_t>(vs.size()) != rank) c.fail("a blocked scale or zero point must have the input's rank");
  int64_t n = xs[static_cast<size_t>(axis)], nb = vs[static_cast<size_t>(axis)];
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && vs[static_cast<size_t>(d)] != xs[static_cast<size_t>(d)]) c.fail("a blocked scale or zero point must match the input outside the axis");
  if (nb != (n + block - 1) / block) c.fail(cat("a blocked scale or zero point must have ", (n + block - 1) / block, " blocks along the axis"));
  ValueId u = c.op(OpKind::Unsqueeze, {v}, Attrs{{"dim", axis + 1}});
  Ints ex = vs;
  ex.insert(ex.begin() + axis + 1, block);
  Ints merged = vs;
  merged[static_cast<size_t>(axis)] = nb * block;
  ValueId r = c.reshape(c.expand(u, ex), merged);
  if (nb * block != n) r = c.op(OpKind::Slice, {r}, Attrs{{"dim", axis}, {"start", int64_t{0}}, {"end", n}, {"step", int64_t{1}}});
  return r;
}

DType wider(DType a, DType b) {
  if (a == DType::F64 || b == DType::F64) return DType::F64;
  if (a == DType::F32 || b == DType::F32 || a != b) return DType::F32;
  return a;
}

/// round_half_even(x / scale) + zp, saturated to `out`'s range.
ValueId quantize(Node& c, ValueId x, ValueId scale, ValueId zp, DType out, DType precision) {
  ValueId xp = c.cast(x, precision);
  ValueId q = c.op(OpKind::Round, {c.div(xp, c.cast(scale, precision))});
  q = c.cast(q, DType::F64);
  if (zp != kNoValue) q = c.add(q, c.cast(zp, DType::F64));
  auto [lo, hi] = quantRange(out);
  q = c.op(OpKind::Where, {bin(c, OpKind::Lt, {q, c.scalar(lo, DType::F64)}), c.scalar(lo, DType::F64), q});
  q = c.op(OpKind::Where, {bin(c, OpKind::Gt, {q, c.scalar(hi, DType::F64)}), c.scalar(hi, DType::F64), q});
  return c.cast(q, out);
}

Outs quantizeLinearOp(Node& c) {
  ValueId x = c.in(0), scale = c.in(1);
  DType xd = c.type(x).dtype, sd = c.type(scale).dtype;
  if (!isFloating(xd)) c.fail(cat("QuantizeLinear of ", dtypeName(xd), " is not supported (a float input only)"));
  if (!isFloating(sd)) c.fail("QuantizeLinear: the scale must be floating-point");
  const Ints xs = c.type(x).sizes;
  int64_t axis = c.i("axis", 1), block = c.opset() >= 21 ? c.i("block_size", 0) : 0;
  DType out = DType::U8;
  if (c.hasAttr("output_dtype")) {
    auto d = dtypeOfOnnx(static_cast<int>(c.i("output_dtype")));
    if (!d) c.fail(cat("QuantizeLinear to ", onnxTypeName(static_cast<int>(c.i("output_dtype"))), " is not supported"));
    out = *d;
  }
  ValueId zp = kNoValue;
  if (c.has(2)) {
    zp = c.in(2);
    if (c.hasAttr("output_dtype") && c.type(zp).dtype != out) c.fail("QuantizeLinear: output_dtype differs from the zero point's type");
    out = c.type(zp).dtype;
  }
  if (!quantType(out)) c.fail(cat("QuantizeLinear to ", dtypeName(out), " is not supported (int8, uint8, int16, uint16)"));
  DType precision = wider(xd, sd);
  if (c.hasAttr("precision")) {
    auto d = dtypeOfOnnx(static_cast<int>(c.i("precision")));
    if (!d || !isFloating(*d)) c.fail("QuantizeLinear: precision must be a float type");
    precision = *d;
  }
  if (xs.empty()) {
    if (block) c.fail("QuantizeLinear: a scalar input cannot be blocked");
    ValueId s0 = c.reshape(scale, {});
    ValueId zp0 = zp == kNoValue ? zp : c.reshape(zp, {});
    return {quantize(c, x, s0, zp0, out, precision)};
  }
  ValueId s = spread(c, scale, xs, axis, block);
  if (zp != kNoValue) zp = spread(c, zp, xs, axis, block);
  return {quantize(c, x, s, zp, out, precision)};
}

Outs dequantizeLinearOp(Node& c) {
  ValueId x = c.in(0), scale = c.in(1);
  DType xd = c.type(x).dtype, sd = c.type(scale).dtype;
  if (!quantType(xd) && xd != DType::I32) c.fail(cat("DequantizeLinear of ", dtypeName(xd), " is not supported"));
  if (!isFloating(sd)) c.fail("DequantizeLinear: the scale must be floating-point");
  DType out = sd;
  if (c.hasAttr("output_dtype")) {
    auto d = dtypeOfOnnx(static_cast<int>(c.i("output_dtype")));
    if (!d || !isFloating(*d)) c.fail("DequantizeLinear: output_dtype must be a float type");
    out = *d;
  }
  const Ints xs = c.type(x).sizes;
  int64_t axis = c.i("axis", 1), block = c.opset() >= 21 ? c.i("block_size", 0) : 0;
  // float32 as the reference; int32 minus an int32 zero point in float64 (numpy's promotion).
  DType work = xd == DType::I32 && c.has(2) ? DType::F64 : DType::F32;
  auto place = [&](ValueId v) { return xs.empty() ? c.reshape(v, {}) : spread(c, v, xs, axis, block); };
  ValueId dx = c.cast(x, work);
  if (c.has(2)) {
    if (c.type(c.in(2)).dtype != xd) c.fail("DequantizeLinear: the zero point's type differs from the input's");
    dx = c.sub(dx, c.cast(place(c.in(2)), work));
  }
  ValueId s = place(scale);
  DType mulType = wider(work, sd);
  ValueId dxWide = c.cast(dx, mulType);
  return {c.cast(c.mul(dxWide, c.cast(s, mulType)), out)};
}

/// DynamicQuantizeLinear: uint8 with the scale and zero point of x's range
/// widened to include 0.
Outs dynamicQuantizeLinearOp(Node& c) {
  ValueId x = c.in(0);
  if (c.type(x).dtype != DType::F32) c.fail("DynamicQuantizeLinear takes float32");
  Ints all;
  for (int64_t d = 0; d < c.type(x).rank(); ++d) all.push_back(d);
  auto extreme = [&](OpKind k) { return all.empty() ? x : reduceOp(c, k, x, all, false); };
  ValueId zero = c.scalar(0, DType::F32);
  ValueId mx = c.op(OpKind::Maximum, {extreme(OpKind::Amax), zero}), mn = c.op(OpKind::Minimum, {extreme(OpKind::Amin), zero});
  ValueId range = c.sub(mx, mn);
  ValueId scale = c.div(range, c.scalar(255, DType::F32));
  ValueId zp = quantize(c, c.neg(mn), scale, kNoValue, DType::U8, DType::F32);  // saturate(round(-min / scale))
  return {quantize(c, x, scale, zp, DType::U8, DType::F32), scale, zp};
}

/// A per-row ([M], 'a') or per-column ([N], 'b') vector shaped to broadcast
/// over a [.., M, N] product; N-D ones are used as given.
ValueId rowOrColumn(Node& c, ValueId v, bool row) {
  if (c.type(v).rank() == 1 && row) return c.reshape(v, {c.type(v).sizes[0], 1});
  return v;
}

/// (a - a_zp) @ (b - b_zp) of 8-bit integers, exactly: in float64, where a
/// sum of K products below 2^16 each is exact; K must keep it inside int32
/// (the 32-bit accumulation ONNX allows to wrap is refused).
ValueId integerProduct(Node& c, size_t ia, size_t iazp, size_t ib, size_t ibzp, const char* name) {
  ValueId a = c.in(ia), b = c.in(ib);
  for (ValueId v : {a, b})
    if (c.type(v).dtype != DType::I8 && c.type(v).dtype != DType::U8) c.fail(cat(name, ": the inputs must be int8 or uint8"));
  if (c.type(a).rank() < 2 || c.type(b).rank() < 2) c.fail(cat(name, ": 1-D operands are not supported"));
  int64_t K = c.type(a).sizes.back();
  if (static_cast<double>(K) * 255.0 * 255.0 >= 0x1p31) c.fail(cat(name, ": ", K, " products could overflow int32's accumulation"));
  ValueId fa = c.cast(a, DType::F64), fb = c.cast(b, DType::F64);
  if (c.has(iazp)) fa = c.sub(fa, c.cast(rowOrColumn(c, c.in(iazp), true), DType::F64));
  if (c.has(ibzp)) fb = c.sub(fb, c.cast(rowOrColumn(c, c.in(ibzp), false), DType::F64));
  return matmul(c, fa, fb);
}

Outs matMulIntegerOp(Node& c) { return {c.cast(integerProduct(c, 0, 2, 1, 3, "MatMulInteger"), DType::I32)}; }

/// QLinearMatMul, as the reference: the int32 product times (a_scale *
/// b_scale / y_scale) (in the scales' type) in float64, plus y_zero_point,
/// rounded half to even and saturated.
Outs qlinearMatMulOp(Node& c) {
  ValueId prod = integerProduct(c, 0, 2, 3, 5, "QLinearMatMul");
  ValueId as = rowOrColumn(c, c.in(1), true), bs = rowOrColumn(c, c.in(4), false), ys = c.in(6);
  DType sd = c.type(as).dtype;
  if (!isFloating(sd) || c.type(bs).dtype != sd || c.type(ys).dtype != sd) c.fail("QLinearMatMul: the scales must share one float type");
  ValueId factor = c.div(c.mul(as, bs), ys);
  ValueId d = c.mul(prod, c.cast(factor, DType::F64));
  DType out = c.has(7) ? c.type(c.in(7)).dtype : c.type(c.in(0)).dtype;
  if (c.has(7)) d = c.add(d, c.cast(c.in(7), DType::F64));
  if (out != DType::I8 && out != DType::U8) c.fail("QLinearMatMul: the output must be int8 or uint8");
  auto [lo, hi] = quantRange(out);
  ValueId q = c.op(OpKind::Round, {d});
  q = c.op(OpKind::Where, {bin(c, OpKind::Lt, {q, c.scalar(lo, DType::F64)}), c.scalar(lo, DType::F64), q});
  q = c.op(OpKind::Where, {bin(c, OpKind::Gt, {q, c.scalar(hi, DType::F64)}), c.scalar(hi, DType::F64), q});
  return {c.cast(q, out)};
}

}  // namespace

Entries quantizeConverters() {
  return {
    {"DequantizeLinear", dequantizeLinearOp},
    {"DynamicQuantizeLinear", dynamicQuantizeLinearOp},
    {"MatMulInteger", matMulIntegerOp},
    {"QLinearMatMul", qlinearMatMulOp},
    {"QuantizeLinear", quantizeLinearOp},
  };
}

}  // namespace aotc::onnx_fe
