//===- onnx/spectral.cpp - Signal processing --------------------------------===//
//
// The Hann/Hamming/Blackman windows, DFT and STFT over real (re, im) pairs.
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

namespace {

/// Hann, Hamming and Blackman windows (opset 17): known at compile time.
template <int Kind>
Outs windowOp(Node& c) {
  double size = c.knownScalar(0, "size");
  if (!(size >= 0) || size > static_cast<double>(kMaxFoldElements)) c.fail("the window size must be between 0 and 2^20");
  auto d = dtypeOfOnnx(static_cast<int>(c.i("output_datatype", onnx::TensorProto::FLOAT)));
  if (!d) c.fail("unsupported output_datatype");
  int64_t n = static_cast<int64_t>(size);
  double N = c.i("periodic", 1) ? size : size - 1;
  HostTensor t = HostTensor::zeros(*d, {n});
  const double pi = 3.14159265358979323846;
  for (int64_t k = 0; k < n; ++k) {
    double x = 2 * pi * static_cast<double>(k) / N;
    double v = Kind == 0 ? 0.5 - 0.5 * std::cos(x) : Kind == 1 ? 25.0 / 46.0 - (21.0 / 46.0) * std::cos(x)
                                                               : 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2 * x);
    t.data[static_cast<size_t>(k)] = roundTo(*d, v);
  }
  return {t};
}

// Fourier transforms.
// ONNX spells a complex tensor as aotc holds one: a trailing dim of 2 (re,
// im), or of 1 for a real signal (Note [Complex tensors as pairs]).

/// The signal without its component dim, and whether it is complex.
std::pair<ValueId, bool> signalOf(Node& c, ValueId x, const char* what) {
  const TensorType t = c.type(x);
  if (t.rank() < 2 || (t.sizes.back() != 1 && t.sizes.back() != 2))
    c.fail(cat(what, ": the input's last dim must be 1 (real) or 2 (complex), got ", t.str()));
  if (!isFloating(t.dtype)) c.fail(cat(what, ": the input must be floating, got ", dtypeName(t.dtype)));
  if (t.sizes.back() == 2) return {x, true};
  return {c.reshape(x, Ints(t.sizes.begin(), t.sizes.end() - 1)), false};
}

/// DFT (opsets 17 and 20): along `axis`, forward or inverse (scaled by 1/n), the
/// whole spectrum or (onesided, real input) its first n/2+1 bins;
/// dft_length pads the signal with zeros or truncates it.
Outs dftOp(Node& c) {
  ValueId x = c.in(0);
  const int64_t rank = c.type(x).rank();
  // DFT 20: the axis is an input (default -2), no longer an attribute.
  int64_t axis = c.axis(c.opset() >= 20 ? (c.has(2) ? static_cast<int64_t>(c.knownScalar(2, "axis")) : -2) : c.i("axis", 1), rank);
  if (axis == rank - 1) c.fail("DFT: axis names the last dim, which holds the components");
  bool inverse = c.i("inverse", 0) != 0, onesided = c.i("onesided", 0) != 0;
  int64_t n = c.type(x).sizes[static_cast<size_t>(axis)];
  if (c.has(1)) {
    int64_t len = static_cast<int64_t>(c.knownScalar(1, "dft_length"));
    if (len <= 0) c.fail(cat("DFT: dft_length must be positive, got ", len));
    if (len < n) {
      x = c.op(OpKind::Slice, {x}, Attrs{{"dim", axis}, {"start", int64_t{0}}, {"end", len}, {"step", int64_t{1}}});
    } else if (len > n) {
      TensorType z = c.type(x);
      z.sizes[static_cast<size_t>(axis)] = len - n;
      x = c.op(OpKind::Cat, {x, c.zeros(TensorType::contiguous(z.dtype, z.sizes))}, Attrs{{"dim", axis}});
    }
    n = len;
  }
  auto [sig, complex] = signalOf(c, x, "DFT");
  if (onesided && (complex || inverse)) c.fail("DFT: onesided takes a real input and a forward transform");
  ValueId y;
  if (!complex && !inverse) {
    y = dftRealToComplex(c, sig, axis, onesided);
  } else {
    if (!complex) sig = pairOf(c, sig, c.zeros(c.type(sig)));
    y = dftComplexToComplex(c, sig, axis, !inverse);
    if (inverse) y = c.scaled(y, 1.0 / static_cast<double>(n));
  }
  return {y};
}

/// STFT (opset 17): frames of frame_length every frame_step samples of a
/// [batch, length, 1|2] signal, times the window when given, each
/// transformed (onesided by default for a real signal): [batch, frames, bins, 2].
Outs stftOp(Node& c) {
  ValueId x = c.in(0);
  const TensorType t = c.type(x);
  if (t.rank() != 3) c.fail(cat("STFT: the signal must be [batch, length, 1 or 2], got ", t.str()));
  int64_t step = static_cast<int64_t>(c.knownScalar(1, "frame_step"));
  if (step <= 0) c.fail(cat("STFT: frame_step must be positive, got ", step));
  std::optional<ValueId> window;
  int64_t len = -1;
  if (c.has(2)) {
    window = c.in(2);
    if (c.type(*window).rank() != 1) c.fail("STFT: the window must be 1-D");
    len = c.type(*window).sizes[0];
  }
  if (c.has(3)) {
    int64_t fl = static_cast<int64_t>(c.knownScalar(3, "frame_length"));
    if (len >= 0 && fl != len) c.fail(cat("STFT: frame_length ", fl, " differs from the window's length ", len));
    len = fl;
  }
  if (len <= 0 || len > t.sizes[1]) c.fail(cat("STFT: the frame length must be between 1 and the signal's ", t.sizes[1], ", got ", len));
  const int64_t frames = (t.sizes[1] - len) / step + 1, comps = t.sizes[2];
  ValueId f = c.reshape(c.op(OpKind::IndexSelect, {x, c.reshape(frameIndex(c, frames, len, step), {frames * len})},
                             Attrs{{"dim", int64_t{1}}}),
                        {t.sizes[0], frames, len, comps});
  if (window) f = c.mul(f, c.reshape(*window, {1, 1, len, 1}));
  auto [sig, complex] = signalOf(c, f, "STFT");
  bool onesided = c.i("onesided", 1) != 0;
  if (complex && onesided) c.fail("STFT: onesided takes a real signal (set onesided=0)");
  return {complex ? dftComplexToComplex(c, sig, 2, true) : dftRealToComplex(c, sig, 2, onesided)};
}

}  // namespace

Entries spectralConverters() {
  return {
    {"BlackmanWindow", windowOp<2>},
    {"DFT", dftOp},
    {"STFT", stftOp},
    {"HammingWindow", windowOp<1>},
    {"HannWindow", windowOp<0>},
  };
}

}  // namespace aotc::onnx_fe
