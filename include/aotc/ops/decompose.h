//===- decompose.h - Decompositions into the op table's primitives -*- C++ -*-===//
//
// Note [Decompositions]: composite ops that the op table does not keep as
// rows (softmax, layer norm, gelu, clamp, flip, ...) are spelled here once in
// the table's primitives, so their gradients are autodiff's and codegen sees
// few distinct ops.  Every front end (FX, ONNX) and rule uses these; none
// spells its own.  Each takes the Builder of the node being converted, so
// what it creates carries that node's location (Note [One builder]).
//
// Note [Node order] (src/ops/gradients.cpp) applies: operands that create
// nodes are named first, so the IR does not depend on the C++ compiler.
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "aotc/ops/builder.h"

namespace aotc::decomp {

/// Constant index maps (flip, roll, padding, nearest upsampling) are built in
/// memory: bounded so hostile sizes cannot exhaust it (Note [Bounded sizes]).
inline constexpr int64_t kMaxIndexMap = int64_t{1} << 24;


ValueId reshapeTo(Builder& c, ValueId x, Ints size);

/// arange(n) as int64: 0, 1, ..., n-1.
ValueId iota(Builder& c, int64_t n);

ValueId reduceOp(Builder& c, OpKind k, ValueId x, Ints dims, bool keep);

/// A binary op.  Its operands come as one braced list, evaluated left to
/// right (Note [Node order] in src/ops/gradients.cpp): `bin(c, k, {f(x), g(x)})`
/// creates f's nodes before g's whichever compiler built aotc.
ValueId bin(Builder& c, OpKind k, std::pair<ValueId, ValueId> ab);

ValueId sc(Builder& c, double v, ValueId like);

/// softmax / log_softmax over `dim`, shifted by the (detached) max for range.
ValueId softmaxLike(Builder& c, ValueId x, int64_t dim, bool log);

/// var over dims with Bessel's correction `correction`.
ValueId variance(Builder& c, ValueId x, Ints dims, double correction, bool keep);
/// x - detach(mean): what a variance squares (Note [Detached centre], src/ops/decompose.cpp).
ValueId centred(Builder& c, ValueId x, ValueId mean);

ValueId gelu(Builder& c, ValueId x, const std::string& approx);

/// clamp with optional bounds; gradients pass where min <= x <= max.
ValueId clampOp(Builder& c, ValueId x, std::optional<double> lo, std::optional<double> hi);

ValueId hardswish(Builder& c, ValueId x);

/// hardsigmoid(x) = clamp(x / 6 + 1/2, 0, 1).
ValueId hardsigmoid(Builder& c, ValueId x);

ValueId leakyRelu(Builder& c, ValueId x, double slope);

ValueId silu(Builder& c, ValueId x);

/// softplus(x, beta, threshold) = x * beta > threshold ? x : log1p(exp(x * beta)) / beta.
ValueId softplus(Builder& c, ValueId x, double beta, double threshold);

/// log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|)) (ATen's stable form).
ValueId logSigmoid(Builder& c, ValueId x);

/// logaddexp(a, b) = max + log1p(exp(-|a - b|)); a when a == b is infinite.
ValueId logaddexp(Builder& c, ValueId a, ValueId b);

/// xlogy(x, y) = 0 where x == 0 (unless y is NaN), else x * log(y).
ValueId xlogy(Builder& c, ValueId x, ValueId y);

/// prelu(x, w): w has 1 or C (= x.size(1)) entries.
ValueId prelu(Builder& c, ValueId x, ValueId w);

/// any(x, dims) = sum(x != 0) > 0.
ValueId anyOf(Builder& c, ValueId x, Ints dims, bool keep);

/// repeat(x, reps): x viewed with a size-1 dim before each dim, expanded, copied, flattened.
ValueId repeatOp(Builder& c, ValueId x, const Ints& reps);

void requireIndexMap(Builder& c, int64_t n, const char* what);

/// A constant int64 index vector.
ValueId indexVector(Builder& c, const Ints& idx);

/// x gathered along `dim` at constant indices: index_select (its gradient is index_add).
ValueId pick(Builder& c, ValueId x, int64_t dim, const Ints& idx);
/// pick with the indices as one constant table where the builder has a sink
/// (Note [Constant tables], aotc/ops/builder.h), else pick.
ValueId pickTable(Builder& c, ValueId x, int64_t dim, const Ints& idx);

ValueId flipOp(Builder& c, ValueId x, const Ints& dims);

ValueId rollOp(Builder& c, ValueId x, const Ints& shifts, const Ints& dims);

/// triu/tril: where(col - row >= k (triu) / <= k (tril), x, 0) over the last two dims.
ValueId triangle(Builder& c, ValueId x, int64_t k, bool upper);

/// adaptive average pooling of a 4-D [N, C, H, W] to `out` (2 values).
ValueId adaptiveAvg2d(Builder& c, ValueId x, const Ints& out);

std::vector<ValueId> splitSizes(Builder& c, ValueId x, int64_t dim, const Ints& sizes);

}  // namespace aotc::decomp

namespace aotc::decomp {
/// numpy's matmul (1-D operands, broadcast batch dims) as mm or bmm.
ValueId matmul(Builder& c, ValueId a, ValueId b);
/// einsum(equation, operands) (Note [Einsum], src/ops/decompose_einsum.cpp):
/// diagonals, sums, permutes and one bmm per pair of operands, left to
/// right; ellipses refused.  `name` starts its errors ("Einsum", "einsum").
ValueId einsum(Builder& c, const std::string& equation, const std::vector<ValueId>& operands, const std::string& name);
}  // namespace aotc::decomp

namespace aotc::decomp {
/// A bool mask, true with probability `prob`, from the graph's `rng_seed`
/// input (Note [Random numbers] in decompose.cpp).
ValueId randMask(Builder& c, double prob, Ints shape);
/// Uniform [0, 1) numbers from the graph's seed, on their own Philox offset.
ValueId randUniform(Builder& c, Ints shape, DType d);

/// elu(x) = x > 0 ? scale * x : scale * alpha * expm1(x * input_scale); at 0
/// the negative branch, as ATen's (so the gradient there is alpha * scale *
/// input_scale).  selu is elu with its constants.
ValueId elu(Builder& c, ValueId x, double alpha, double scale, double inputScale);
/// celu(x) = x > 0 ? x : alpha * expm1(x / alpha) (gradient 1 at 0).
ValueId celu(Builder& c, ValueId x, double alpha);
/// (x - mean) * rstd over `dims` with the biased variance, rstd =
/// 1 / sqrt(var + eps); the mean and rstd keep their dims.
struct Normalized {
  ValueId y, mean, rstd, var;
};
Normalized normalize(Builder& c, ValueId x, const Ints& dims, double eps);

/// 3-D convolution of x [N, C, D, H, W] by w [Co, C/groups, KD, KH, KW]
/// (Note [3-D convolution]); stride, padding (both sides) and dilation have
/// 3 values.  No bias.
ValueId conv3d(Builder& c, ValueId x, ValueId w, const Ints& stride, const Ints& padding, const Ints& dilation, int64_t groups);
/// Transposed 3-D convolution of x [N, Ci, D, H, W] by w [Ci, Co/groups, KD,
/// KH, KW] at padding 0: the full output, output_padding included at the
/// end of each dim (callers crop their padding).  No bias.
ValueId convTranspose3d(Builder& c, ValueId x, ValueId w, const Ints& stride, const Ints& dilation, const Ints& outputPadding,
                        int64_t groups);

/// 3-D pooling of x [N, C, D, H, W] (Note [3-D pooling]): 3 values each;
/// an empty stride is the kernel.
struct Pool3d {
  Ints kernel, stride, padding{0, 0, 0}, dilation{1, 1, 1};
  bool ceil = false;
  bool countIncludePad = true;
  std::optional<int64_t> divisor;  ///< avg_pool3d's divisor_override
};
ValueId avgPool3d(Builder& c, ValueId x, Pool3d p);
/// The maxima and ATen's indices (d*H*W + h*W + w of the first maximum).
std::pair<ValueId, ValueId> maxPool3d(Builder& c, ValueId x, Pool3d p);
/// adaptive_avg_pool3d to `out` (3 values).
ValueId adaptiveAvg3d(Builder& c, ValueId x, const Ints& out);
}  // namespace aotc::decomp

namespace aotc::decomp {
// Note [Complex tensors as pairs]: aotc's dtypes are real.  A complex tensor
// (what _fft_r2c returns) is held as its real view, view_as_real's layout: a
// real tensor of the complex tensor's sizes plus a trailing dim of 2 (real,
// imaginary), complex64 as f32 pairs and complex128 as f64 pairs.  The FX
// front end tracks which values are pairs and lets only the ops that have a
// pair rule touch them (src/frontend/fx/complex.cpp, Note [Complex values]).  A
// discrete Fourier transform along one dim is a real linear map on pairs, so
// it is a matrix product with its basis, cos and sin of 2*pi*((j*k) mod n)/n
// computed in f64 from integer products (exact angles) and rounded to the
// dtype once: O(n^2) per transform instead of an FFT's O(n log n), but exact
// to the dtype's rounding, differentiable by the matmul's own gradient, and
// lowered to cuBLAS.  `dim` counts the complex (or real) tensor's dims.

/// (re, im) stacked along a new last dim: a complex tensor's pairs.
ValueId pairOf(Builder& c, ValueId re, ValueId im);
/// The [frames, len] int64 index w * step + i of `frames` windows of `len`
/// elements every `step` (unfold's and stft's overlapping frames).
ValueId frameIndex(Builder& c, int64_t frames, int64_t len, int64_t step);

/// Real x -> pairs: X[k] = sum_j x[j] e^{-2 pi i jk/n} along `dim`, for
/// k < n/2+1 when `onesided`, else k < n.
ValueId dftRealToComplex(Builder& c, ValueId x, int64_t dim, bool onesided);
/// Pairs -> pairs: X[k] = sum_j z[j] e^{-+2 pi i jk/n} (forward: minus).
ValueId dftComplexToComplex(Builder& c, ValueId z, int64_t dim, bool forward);
/// Pairs -> real: the inverse transform of a one-sided Hermitian signal,
/// x[j] = sum_k w_k (Re Z[k] cos - Im Z[k] sin)(2 pi jk/n) with w_0 = 1,
/// w_{n/2} = 1 for even n, 2 otherwise; rows past n/2 are not read, and the
/// imaginary parts of Z[0] (and Z[n/2]) drop out, as in ATen's c2r.
ValueId dftComplexToReal(Builder& c, ValueId z, int64_t dim, int64_t n);
}  // namespace aotc::decomp

namespace aotc::decomp {
// Note [Norms, scans, adaptive max pooling and attention] (decompose.cpp).

/// linalg_vector_norm(x, ord, dims, keepdim) of a floating-point x, every
/// order (0, +-inf, fractional, negative) with eager's gradients.
ValueId vectorNorm(Builder& c, ValueId x, double ord, const Ints& dims, bool keep);
/// cumprod along `dim` as a log-depth product scan: its gradient is exact
/// where inputs are zero.
ValueId cumprod(Builder& c, ValueId x, int64_t dim);
/// softmax over `dim` that gives 0 on a row of all -inf (ATen's _safe_softmax).
ValueId safeSoftmax(Builder& c, ValueId x, int64_t dim);
/// adaptive_max_pool2d of [N, C, H, W] to `out` (2 values): the maxima and
/// ATen's indices (h * W + w of the first maximum of each window).
std::pair<ValueId, ValueId> adaptiveMax2d(Builder& c, ValueId x, const Ints& out);
/// Scaled dot-product attention of q [..., Hq, L, E], k [..., Hk, S, E],
/// v [..., Hk, S, Ev] (Hq a multiple of Hk: grouped-query heads), an optional
/// boolean (true = keep) or additive mask broadcast to [..., L, S], the
/// causal (top-left) mask, and scale (default 1/sqrt(E)).  Returns the output
/// [..., Hq, L, Ev] and the row logsumexp of the scaled, masked scores
/// [..., Hq, L] (0 on a fully masked row, whose output is 0).
struct Attention {
  ValueId out, logsumexp;
};
Attention attention(Builder& c, ValueId q, ValueId k, ValueId v, std::optional<ValueId> mask, bool causal,
                    std::optional<double> scale);

// The gathers family's composites (src/ops/decompose_gathers.cpp).  Index
// lists hold one entry per leading dim of x, kNoValue for None.

/// x[indices]: advanced indexing with integer index tensors on consecutive
/// dims (leading Nones allowed, trailing ones ignored): the dims are
/// flattened and index_selected at the linear index, so the gradient is
/// index_add's.
ValueId indexTensor(Builder& c, ValueId x, const std::vector<ValueId>& indices);

/// index_put(x, indices, values, accumulate): integer indices as in
/// indexTensor, written through index_add on the flattened indexed dims.
/// Without accumulate, later duplicates win (eager's CPU behaviour): a
/// value is dropped when a later index equals its own, found with a
/// pairwise comparison, so at most 4096 indices (the values' gradient is
/// still grad[indices] for each, as eager's).  A bool mask with one value
/// is where(mask, value, x).
ValueId indexPut(Builder& c, ValueId x, const std::vector<ValueId>& indices, ValueId values, bool accumulate);

/// _embedding_bag's arguments that shape its result (ATen's encoding).
struct EmbeddingBagArgs {
  int64_t mode = 0;  ///< 0 sum, 1 mean (2, max, is refused)
  bool includeLastOffset = false;
  int64_t paddingIdx = -1;  ///< -1: none
  ValueId perSampleWeights = kNoValue;
};
/// _embedding_bag's first result: each index's bag is the number of offsets
/// at or before its position, less one (a [L, B] comparison: static shapes
/// whatever the offsets hold); rows are summed into their bags with
/// index_add (mean divides by the bag's count, an empty bag gives 0 as in
/// eager).  Indices before the first offset, after include_last_offset's
/// end, or equal to padding_idx take no part.
ValueId embeddingBag(Builder& c, ValueId weight, ValueId indices, ValueId offsets, const EmbeddingBagArgs& a);

/// grid_sampler_2d(x, grid, interpolation (0 bilinear, 1 nearest), padding
/// (0 zeros, 1 border, 2 reflection), align_corners) (Note [grid_sampler]).
ValueId gridSampler2d(Builder& c, ValueId x, ValueId grid, int64_t interpolation, int64_t padding, bool alignCorners);
}  // namespace aotc::decomp

namespace aotc::decomp {
// Note [Separable resampling] (src/ops/decompose_windows.cpp).

/// Keys' cubic convolution weights, in T's arithmetic, of the four taps at
/// distances 1 + t, t, 1 - t and 2 - t from a point (0 <= t <= 1): ATen's
/// get_cubic_upsample_coefficients and ONNX Resize's cubic mode (a = -0.75
/// in ATen, ONNX's default cubic_coeff_a).
template <class T>
std::array<T, 4> cubicCoefficients(T t, T a) {
  auto inner = [a](T x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };      // 0 <= x <= 1
  auto outer = [a](T x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 <= x <= 2
  const T u = 1 - t;
  return {outer(t + 1), inner(t), inner(u), outer(u + 1)};
}

/// One dim of a separable resampling: output element o along the dim is
/// the sum over taps k of x[index[k][o]] * weight[k][o], summed in k's order.
struct Taps {
  std::vector<Ints> index;
  std::vector<std::vector<double>> weight;
};
ValueId resampleDim(Builder& c, ValueId x, int64_t dim, const Taps& taps);

/// ATen's upsample_bilinear2d taps along one dim resized from `in` to `out`
/// elements (`scale`: the call's scale factor, if it gave one).
Taps bilinearTaps(int64_t in, int64_t out, bool alignCorners, std::optional<double> scale);
/// ATen's upsample_bicubic2d taps along one dim, in the opmath of `dtype`
/// (double for float64, float otherwise).
Taps bicubicTaps(int64_t in, int64_t out, bool alignCorners, std::optional<double> scale, DType dtype);
}  // namespace aotc::decomp

namespace aotc::decomp {
/// ATen convolution's arguments as given (1 value or one per spatial dim).
struct Convolution {
  Ints stride{1}, padding{0}, dilation{1};
  bool transposed = false;
  Ints outputPadding{0};
  int64_t groups = 1;
};
/// convolution(x, w, bias?, ...) of a 3-D, 4-D or 5-D x: 1-D as 2-D over a
/// unit height; 2-D as conv2d, transposed as conv2d_backward_input (the
/// adjoint of conv2d); 3-D by conv3d / convTranspose3d, cropping a transposed
/// convolution's padding (src/ops/decompose_windows.cpp).  bias is kNoValue
/// when there is none.
ValueId convolution(Builder& c, ValueId x, ValueId w, ValueId bias, const Convolution& a);
}  // namespace aotc::decomp

namespace aotc::decomp {
// Elementwise composites (src/ops/decompose_pointwise.cpp, issue 36): ATen's
// CPU kernels in the table's rows, NaN and ties where ATen puts them.

/// frac(x) = x - trunc(x) (floating x only, as eager).
ValueId frac(Builder& c, ValueId x);
/// hardshrink(x) = 0 where -lambd <= x <= lambd, else x.
ValueId hardshrink(Builder& c, ValueId x, double lambd);
/// softshrink(x) = x - lambd above lambd, x + lambd below -lambd, else 0;
/// NaN stays NaN (PyTorch 2.x; 1.13's kernel gave 0).
ValueId softshrink(Builder& c, ValueId x, double lambd);
/// threshold(x) = value where x <= th, else x.
ValueId threshold(Builder& c, ValueId x, double th, double value);
/// threshold_backward(g, x) = 0 where x <= th, else g.
ValueId thresholdBackward(Builder& c, ValueId g, ValueId x, double th);
/// hardshrink_backward and softshrink_backward (one formula in ATen):
/// 0 where -lambd <= x <= lambd, else g (NaN x passes g).
ValueId shrinkBackward(Builder& c, ValueId g, ValueId x, double lambd);
/// logit_backward(g, x, eps): g / (x (1 - x)); outside [eps, 1 - eps] 0
/// with eps, NaN outside [0, 1] without (ATen's logit_backward).
ValueId logitBackward(Builder& c, ValueId g, ValueId x, std::optional<double> eps);
/// lerp(a, b, w) = a + w (b - a) where |w| < 0.5, else b - (b - a)(1 - w)
/// (ATen's lerp); `scalarWeight`: w is that number (w its 0-dim constant).
ValueId lerp(Builder& c, ValueId a, ValueId b, ValueId w, std::optional<double> scalarWeight);
/// nan_to_num: NaN, +inf and -inf replaced (defaults 0 and the dtype's
/// largest finite values); integer tensors are copied.
ValueId nanToNum(Builder& c, ValueId x, std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf);
/// logit(x, eps): x clamped to [eps, 1 - eps] first when eps >= 0.
ValueId logit(Builder& c, ValueId x, std::optional<double> eps);
/// binary_cross_entropy(x, t, weight?, reduction) (ATen's reduction enum:
/// 0 none, 1 mean, 2 sum); w is kNoValue without a weight.
ValueId binaryCrossEntropy(Builder& c, ValueId x, ValueId t, ValueId w, int64_t reduction);
/// binary_cross_entropy_backward: g (x - t) / max((1 - x) x, 1e-12), times
/// the weight, over numel for mean.
ValueId binaryCrossEntropyBackward(Builder& c, ValueId g, ValueId x, ValueId t, ValueId w, int64_t reduction);
}  // namespace aotc::decomp
