//===- fx/random.cpp - Random numbers ---------------------------------------===//
//
// rand/randn (and _like), randperm, bernoulli_ and native_dropout: the IR's random
// ops with the graph's seed (Note [Random numbers] in the ops layer).
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

namespace {

/// Standard normal numbers by Box-Muller: sqrt(-2 log(1 - u1)) cos(2 pi u2),
/// computed in float32 (float64 for a float64 result).
ValueId randNormal(Converter& c, Ints shape, DType d) {
  DType w = d == DType::F64 ? DType::F64 : DType::F32;
  ValueId u1 = randUniform(c, shape, w);
  ValueId u2 = randUniform(c, shape, w);
  ValueId r = c.op(OpKind::Sqrt, {c.scaled(c.op(OpKind::Log, {bin(c, OpKind::Sub, {sc(c, 1.0, u1), u1})}), -2.0)});
  ValueId z = bin(c, OpKind::Mul, {r, c.op(OpKind::Cos, {c.scaled(u2, 6.283185307179586)})});
  return d == w ? z : c.op(OpKind::Cast, {z}, Attrs{{"dtype", std::string(dtypeName(d))}});
}

/// rand/randn(size, dtype?), rand_like/randn_like(self, dtype?).
V randomOp(Converter& c, bool normal, bool like) {
  tensorOptions(c);
  Ints shape;
  DType d;
  if (like) {
    ValueId x = c.tensor(0, "self");
    shape = c.type(x).sizes;
    d = dtypeArg(c, 1, "dtype", c.type(x).dtype);
  } else {
    shape = c.ints(0, "size");
    for (int64_t s : shape)
      if (s < 0) c.fail("negative size");
    d = dtypeArg(c, 1, "dtype", DType::F32);
  }
  if (c.has(SIZE_MAX, "generator")) c.fail("an explicit torch.Generator is not supported (the artifact's rng_seed input seeds every draw)");
  if (!isFloating(d)) c.fail("rand/randn need a floating-point dtype");
  return {normal ? randNormal(c, shape, d) : randUniform(c, shape, d)};
}

V dropout(Converter& c) {
  ValueId x = c.tensor(0, "input");
  double p = c.number(1, "p");
  bool train = c.boolean(2, "train", true);
  TensorType mt = TensorType::contiguous(DType::Bool, c.type(x).sizes);
  if (!train || p == 0) return {c.op(OpKind::Clone, {x}), constantLike(c, 1.0, mt)};
  ValueId keep = randMask(c, 1.0 - p, c.type(x).sizes);
  ValueId m = c.op(OpKind::Cast, {keep}, Attrs{{"dtype", std::string(dtypeName(c.type(x).dtype))}});
  ValueId scale = p >= 1 ? sc(c, 0.0, x) : sc(c, 1.0 / (1.0 - p), x);
  return {bin(c, OpKind::Mul, {bin(c, OpKind::Mul, {x, m}), scale}), keep};
}

}  // namespace

Entries randomConverters() {
  return {
    {"aten.native_dropout.default", dropout},
    {"aten.bernoulli_.float",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       ValueId m = randMask(c, c.number(1, "p", 0.5), c.type(x).sizes);
       return inplaceOf(c, c.op(OpKind::Cast, {m}, Attrs{{"dtype", std::string(dtypeName(c.type(x).dtype))}}));
     }},
    {"aten.rand.default", [](Converter& c) { return randomOp(c, false, false); }},
    {"aten.randn.default", [](Converter& c) { return randomOp(c, true, false); }},
    {"aten.rand_like.default", [](Converter& c) { return randomOp(c, false, true); }},
    {"aten.randn_like.default", [](Converter& c) { return randomOp(c, true, true); }},
    {"aten.randperm.default",
     [](Converter& c) -> V {
       tensorOptions(c);
       int64_t n = c.integer(0, "n");
       if (n < 0) c.fail("randperm: n must be non-negative");
       DType d = dtypeArg(c, 1, "dtype", DType::I64);
       if (n == 0) return {constantLike(c, 0.0, TensorType::contiguous(d, {0}))};
       // A uniformly random permutation: the order of n random keys of 48
       // bits (two 24-bit draws), so ties are negligible.
       ValueId hi = randUniform(c, {n}, DType::F64);
       ValueId lo = randUniform(c, {n}, DType::F64);
       ValueId key = bin(c, OpKind::Add, {hi, c.scaled(lo, 1.0 / 16777216.0)});
       V s = c.ops(OpKind::Sort, {key}, Attrs{{"dim", int64_t{0}}}, {});
       return {d == DType::I64 ? s[1] : c.op(OpKind::Cast, {s[1]}, Attrs{{"dtype", std::string(dtypeName(d))}})};
     }},
  };
}

}  // namespace aotc::fx
