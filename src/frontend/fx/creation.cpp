//===- fx/creation.cpp - Tensors made from nothing --------------------------===//
//
// zeros/ones/full/empty and their _like and new_ forms, fill, arange and the
// signal windows (hann, hamming, blackman, bartlett).
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

namespace {

ValueId likeConstant(Converter& c, double v) {
  tensorOptions(c);
  TensorType t = c.type(c.tensor(0, "self"));
  if (c.has(1, "dtype")) {
    const json* d = c.arg(1, "dtype");
    auto dt = d->is_object() && d->contains("dtype") ? dtypeFromTorchName((*d)["dtype"].get<std::string>()) : std::nullopt;
    if (!dt) c.fail("unsupported dtype argument " + d->dump());
    t.dtype = *dt;
  }
  return constantLike(c, v, t);
}

}  // namespace

/// zeros/ones/full(size, [fill_value,] *, dtype=None, ...): dtype defaults
/// to float32 (PyTorch's default dtype).
ValueId filled(Converter& c, double v, size_t dtypeArg) {
  tensorOptions(c);
  Ints size = c.ints(0, "size");
  for (int64_t d : size)
    if (d < 0) c.fail("negative size in " + c.node().at("args").at(0).dump());
  DType dt = DType::F32;
  if (c.has(dtypeArg, "dtype")) {
    const json* d = c.arg(dtypeArg, "dtype");
    auto p = d->is_object() && d->contains("dtype") ? dtypeFromTorchName((*d)["dtype"].get<std::string>()) : std::nullopt;
    if (!p) c.fail("unsupported dtype argument " + d->dump());
    dt = *p;
  }
  return constantLike(c, v, TensorType::contiguous(dt, size));
}

namespace {

V fillInplace(Converter& c, double v) {
  ValueId x = c.tensor(0, "self");
  TensorType t = c.type(x);
  return {c.op(OpKind::CopyInplace, {x, constantLike(c, v, t)})};
}

/// The cosine-sum windows (hann, hamming, blackman) and bartlett, as
/// torch.signal computes them: w[n] = sum_i a_i cos(2 pi i n / N) with N = L
/// when periodic (the default), L - 1 otherwise; a window of length 1 is [1].
/// `nargs` counts the positional arguments before the keyword-only dtype.
V window(Converter& c, std::vector<double> coef, bool bartlett, size_t nargs) {
  tensorOptions(c);
  int64_t len = c.integer(0, "window_length");
  if (len < 0) c.fail(cat("window_length must be non-negative, got ", len));
  bool periodic = nargs > 1 ? c.boolean(1, "periodic", true) : true;
  if (nargs > 2) coef[0] = c.number(2, "alpha");
  if (nargs > 3) coef[1] = -c.number(3, "beta");
  DType d = dtypeArg(c, nargs, "dtype", DType::F32);
  if (!isFloating(d)) c.fail(cat("a window of dtype ", dtypeName(d), " (it must be floating)"));
  if (len <= 1) return {constantLike(c, 1.0, TensorType::contiguous(d, {len}))};
  const double n = static_cast<double>(periodic ? len : len - 1);
  ValueId i = c.cast(iota(c, len), DType::F64);
  ValueId w;
  if (bartlett) {
    w = bin(c, OpKind::Sub, {c.scalar(1.0, DType::F64),
                             c.op(OpKind::Abs, {bin(c, OpKind::Sub, {c.scaled(i, 2.0 / n), c.scalar(1.0, DType::F64)})})});
  } else {
    w = c.scalar(coef[0], DType::F64);
    for (size_t k = 1; k < coef.size(); ++k)
      w = c.add(w, c.scaled(c.op(OpKind::Cos, {c.scaled(i, 2.0 * std::numbers::pi * static_cast<double>(k) / n)}), coef[k]));
  }
  return {c.cast(w, d)};
}

/// aten.arange's overloads: `n_bounds` positional numbers (end; start, end;
/// start, end, step), then dtype.
V arange(Converter& c, size_t n_bounds) {
  tensorOptions(c);
  static constexpr const char* kNames[3][3] = {{"end"}, {"start", "end"}, {"start", "end", "step"}};
  const char* const* names = kNames[n_bounds - 1];
  double b[3] = {0.0, 0.0, 1.0};
  bool ints = true;
  for (size_t i = 0; i < n_bounds; ++i) {
    if (i == 2 && !c.has(i, names[i])) break;  // step defaults to 1
    b[n_bounds == 1 ? 1 : i] = c.number(i, names[i]);
    ints = ints && c.arg(i, names[i])->is_number_integer();
  }
  DType d = dtypeArg(c, n_bounds, "dtype", ints ? DType::I64 : DType::F32);
  return {c.op(OpKind::Arange, {}, Attrs{{"start", b[0]}, {"end", b[1]}, {"step", b[2]}, {"dtype", std::string(dtypeName(d))}})};
}

/// new_zeros/new_ones/new_empty(self, size, dtype?) and new_full(self, size, value, dtype?).
ValueId newFilled(Converter& c, double v, size_t dtypeIdx) {
  tensorOptions(c);
  ValueId x = c.tensor(0, "self");
  Ints size = c.ints(1, "size");
  for (int64_t d : size)
    if (d < 0) c.fail("negative size");
  return constantLike(c, v, TensorType::contiguous(dtypeArg(c, dtypeIdx, "dtype", c.type(x).dtype), size));
}

}  // namespace

Entries creationConverters() {
  return {
    {"aten.lift_fresh.default", [](Converter& c) { return unary(c, OpKind::Detach); }},
    {"aten.zero_.default", [](Converter& c) -> V { return fillInplace(c, 0.0); }},
    {"aten.fill_.Scalar", [](Converter& c) -> V { return fillInplace(c, c.number(1, "value")); }},
    {"aten.zeros_like.default", [](Converter& c) -> V { return {likeConstant(c, 0.0)}; }},
    {"aten.zeros.default", [](Converter& c) -> V { return {filled(c, 0.0, 1)}; }},
    {"aten.ones.default", [](Converter& c) -> V { return {filled(c, 1.0, 1)}; }},
    {"aten.full.default", [](Converter& c) -> V { return {filled(c, c.number(1, "fill_value"), 2)}; }},
    {"aten.ones_like.default", [](Converter& c) -> V { return {likeConstant(c, 1.0)}; }},
    {"aten.empty_like.default", [](Converter& c) -> V { return {likeConstant(c, 0.0)}; }},
    {"aten.empty.memory_format", [](Converter& c) -> V { return {filled(c, 0.0, 1)}; }},
    {"aten.full_like.default",
     [](Converter& c) -> V {
       tensorOptions(c);
       ValueId x = c.tensor(0, "self");
       TensorType t = c.type(x);
       t.dtype = dtypeArg(c, 2, "dtype", t.dtype);
       return {constantLike(c, c.number(1, "fill_value"), t)};
     }},
    {"aten.scalar_tensor.default",
     [](Converter& c) -> V {
       tensorOptions(c);
       return {constantLike(c, c.number(0, "s"), TensorType::contiguous(dtypeArg(c, 1, "dtype", DType::F32), {}))};
     }},
    // arange(end), arange(start, end), arange(start, end, step): the
    // result is int64 when every bound given is an integer, else the
    // default float dtype (ATen's rule), unless dtype= says otherwise.
    {"aten.arange.start_step", [](Converter& c) { return arange(c, 3); }},
    {"aten.arange.start", [](Converter& c) { return arange(c, 2); }},
    {"aten.hann_window.default", [](Converter& c) { return window(c, {0.5, -0.5}, false, 1); }},
    {"aten.hann_window.periodic", [](Converter& c) { return window(c, {0.5, -0.5}, false, 2); }},
    {"aten.hamming_window.default", [](Converter& c) { return window(c, {0.54, -0.46}, false, 1); }},
    {"aten.hamming_window.periodic", [](Converter& c) { return window(c, {0.54, -0.46}, false, 2); }},
    {"aten.hamming_window.periodic_alpha", [](Converter& c) { return window(c, {0.54, -0.46}, false, 3); }},
    {"aten.hamming_window.periodic_alpha_beta", [](Converter& c) { return window(c, {0.54, -0.46}, false, 4); }},
    {"aten.blackman_window.default", [](Converter& c) { return window(c, {0.42, -0.5, 0.08}, false, 1); }},
    {"aten.blackman_window.periodic", [](Converter& c) { return window(c, {0.42, -0.5, 0.08}, false, 2); }},
    {"aten.bartlett_window.default", [](Converter& c) { return window(c, {}, true, 1); }},
    {"aten.bartlett_window.periodic", [](Converter& c) { return window(c, {}, true, 2); }},
    {"aten.arange.default", [](Converter& c) { return arange(c, 1); }},
    {"aten.new_zeros.default", [](Converter& c) -> V { return {newFilled(c, 0.0, 2)}; }},
    {"aten.new_ones.default", [](Converter& c) -> V { return {newFilled(c, 1.0, 2)}; }},
    {"aten.new_empty.default", [](Converter& c) -> V { return {newFilled(c, 0.0, 2)}; }},
    {"aten.new_full.default", [](Converter& c) -> V { return {newFilled(c, c.number(2, "fill_value"), 3)}; }},
    {"aten.empty_strided.default",
     [](Converter& c) -> V {
       // Strides, never values (as memory_format in tensorOptions).
       c.ignore(1, "stride");
       return {filled(c, 0.0, 2)};
     }},
    // new_empty_strided(self, size, stride, *, dtype, layout, device,
    // pin_memory): uninitialized memory, given zeros as new_empty's; the
    // strides only place those values (aotc's tensors are contiguous).
    {"aten.new_empty_strided.default",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       Ints size = c.ints(1, "size"), stride = c.ints(2, "stride");
       tensorOptions(c);  // layout, device, pin_memory
       if (stride.size() != size.size()) c.fail("new_empty_strided: size and stride must have the same length");
       for (int64_t d : size)
         if (d < 0) c.fail("negative size");
       return {constantLike(c, 0.0, TensorType::contiguous(dtypeArg(c, 3, "dtype", c.type(x).dtype), size))};
     }},
    {"aten.fill.Scalar", [](Converter& c) -> V { return {constantLike(c, c.number(1, "value"), c.type(c.tensor(0, "self")))}; }},
    {"aten.fill.Tensor",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self"), v = c.tensor(1, "value");
       if (c.type(v).rank() != 0) c.fail("fill: the value must be a 0-dim tensor");
       if (c.type(v).dtype != c.type(x).dtype) v = c.op(OpKind::Cast, {v}, Attrs{{"dtype", std::string(dtypeName(c.type(x).dtype))}});
       return {c.op(OpKind::Expand, {v}, Attrs{{"size", c.type(x).sizes}})};
     }},
  };
}

}  // namespace aotc::fx
